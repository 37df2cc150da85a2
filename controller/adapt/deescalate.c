/*
 * deescalate.c: what happens to an investigation after its verdict.
 *
 * A closed investigation keeps the probes it enabled while its problem is there: for a
 * trigger's, while the trigger is fired; for a person's localized one, while the
 * localized child's contribution stays above the midpoint between what it was at the
 * verdict and what the runner-up had then. Once the problem stayed away for
 * deescalate_windows windows (a person's variance problem: 20), the probes are released
 * ("disable"). A trigger that stays
 * fired while the localized child is back to normal is a cause that moved: a new
 * investigation opens at the trigger's probe, linked to the old one, and takes over its
 * probes ("handover"). Healthy and aborted investigations release at once.
 *
 * Everything here only decides: it changes the round's next state and adds effects.
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

static const struct trigger *trigger_of(const struct plan *pl, const struct investigation *inv) {
    for (int i = 0; inv->trigger_id && i < pl->next.n_triggers; i++) {
        if (pl->next.triggers[i].id == inv->trigger_id) {
            return &pl->next.triggers[i];
        }
    }
    return NULL;
}

/* The culprit's value at the verdict as the re-checks weigh it: the low end of its 95 %
 * interval, not below the runner-up's. An erratic part's spread, measured over the few
 * slow passes of one range, comes with a wide interval, and the largest of several draws
 * (the one that won the search) tends to lie high in it: a midpoint taken from it would
 * call the part normal while it still spreads a hundred times more than its siblings. A
 * spread's low end is taken on the log scale (search_log_low, as the search decides
 * with out of time): a variance's uncertainty is a factor, and its symmetric
 * interval, reaching below 0, would clamp the midpoint to the runner-up's value, which a
 * culprit back among its siblings never falls clearly under. */
static double verdict_low(const struct investigation *inv) {
    double v = inv->verdict_value;
    double hw = isfinite(inv->verdict_hw) && inv->verdict_hw > 0.0 ? inv->verdict_hw : 0.0;
    double low = inv->problem == SEARCH_VARIANCE ? search_log_low(v, hw) : v - hw;
    return fmax(low, inv->runner_value);
}

/*
 * 1 when the localized child of a closed investigation still holds the problem: its
 * contribution over the last SEARCH_RECENT_WINDOWS windows (four times as many for a
 * variance problem) stays above the midpoint between
 * its value at the verdict and the runner-up's then, or still stands out from every sibling
 * now (search_stands_out: a verdict's value can be a spike); 0 when neither; −1 when that cannot be
 * told (another verdict, a restart without those numbers), −2 when it had too few instances.
 */
static int verdict_holds(struct plan *pl, const struct investigation *inv, double *now,
                         int *by_rivals) {
    if (strcmp(inv->verdict, "localized") != 0 || !inv->verdict_node[0] ||
        !core_diagram(pl->a->env.core) || !isfinite(inv->verdict_value) ||
        !isfinite(inv->runner_value)) {
        return -1;
    }
    struct investigation probe_inv = *inv;
    probe_inv.windows_waited = 0;
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_attribution *attr = calloc(1, sizeof *attr);
    unsigned char *include = calloc(SEARCH_MAX_CHILDREN, 1);
    int holds = -1;
    int c = -1;
    /* a spread (an erratic part: a few slow passes) over as many windows as the node check
     * looks at; five can hold none of its rare passes */
    int64_t horizon =
        inv->problem == SEARCH_VARIANCE ? 4 * SEARCH_RECENT_WINDOWS : SEARCH_RECENT_WINDOWS;
    /* a verdict weighed on one node alone against the others is weighed so again */
    if (fi && attr && include &&
        adapt__build_input(pl, &probe_inv, pl->upto - horizon, fi) == DQ_OK &&
        (!inv->verdict_on[0] ||
         adapt__scope_to_node(pl, fi, inv->verdict_on, pl->upto - horizon))) {
        for (size_t j = 0; j < fi->in.n_children; j++) {
            const struct search_stats *s = &fi->kids[j].stats;
            int enough = s->present && search_stats_instances(s) >= 10;
            include[j] = (unsigned char)enough;
            if (strcmp(fi->kids[j].name, inv->verdict_node) == 0) {
                c = (int)j;
                holds = enough ? -1 : -2; /* too few instances: cannot tell */
            }
        }
    }
    if (c >= 0 && include[c] && search_attribute(&fi->in, &pl->a->params, include, attr) == DQ_OK) {
        /* the rivals' reach now: the largest of their values plus half-widths */
        double rival = -INFINITY;
        for (size_t j = 0; j < fi->in.n_children; j++) {
            if ((int)j != c && attr->c[j].included) {
                rival = fmax(rival, attr->c[j].value + attr->c[j].half_width);
            }
        }
        *now = attr->c[c].value;
        /* back to normal only when clearly below the midpoint (the upper end of its 95 % interval):
         * five short windows of a 20 % failure rate can dip to 7 % by chance */
        holds = search_still_holds(attr->c[c].value + attr->c[c].half_width, verdict_low(inv),
                                   inv->runner_value);
        *by_rivals = !holds && search_stands_out(attr->c[c].value, attr->c[c].half_width, rival);
        holds |= *by_rivals;
    }
    if (fi) {
        adapt__focus_input_release(fi);
    } else {
        pl->failed = 1;
    }
    free(fi);
    free(attr);
    free(include);
    return holds;
}

/* "12 ms" (the unit of the problem an attribution value is in). */
static void value_words(enum search_problem p, double v, char *buf, size_t cap) {
    if (p == SEARCH_LOST) {
        snprintf(buf, cap, "%.2g %% lost", 100.0 * v);
    } else if (p == SEARCH_VARIANCE) {
        char n[40];
        snprintf(buf, cap, "%s ms²", dq_format_number(v * 1e6, 3, n, sizeof n));
    } else if (p == SEARCH_DIVERGENCE) {
        snprintf(buf, cap, "KS D %.2g", v);
    } else {
        dq_format_duration(v, buf, cap);
    }
}

/* What a re-check went by (recheck's rule): the node against its past, or the culprit (its
 * midpoint or its rivals alike: those two can alternate from window to window). */
enum { BY_NODE = 1, BY_CULPRIT = 2, BY_TAIL = 3 };

/* A re-check's hypothesis and log line. */
static void say_recheck(struct plan *pl, struct investigation *inv, int holds, const char *why) {
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->verdict_node[0] ? inv->verdict_node : inv->node,
                      "recheck", NULL, json_pack("{s:s,s:b}", "reason", why, "holds", holds), NULL);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": re-checked: %s", why);
}

/*
 * Records that a closed investigation's verdict was re-checked (a "recheck" hypothesis and
 * a log line): when the verdict first holds (or stops holding) after it was given, or first
 * holds by the other rule (the node, or the culprit), and then
 * every investigation_windows windows while that stays so. why: what was checked.
 */
static void recheck(struct plan *pl, struct investigation *inv, int holds, int rule,
                    const char *why) {
    /* a rule it holds by for the first time is said once (not every time the node's check
     * and the culprit's take turns, as they do with a rare, erratic fault) */
    int changed = inv->recheck_wid == 0 || inv->recheck_holds != holds ||
                  (holds && !(inv->recheck_rules & (1 << rule)));
    if (!changed && pl->upto - inv->recheck_wid < pl->a->opt.investigation_windows) {
        return;
    }
    inv->recheck_wid = pl->upto;
    inv->recheck_holds = holds;
    inv->recheck_rules |= holds ? 1 << rule : 0;
    say_recheck(pl, inv, holds, why);
}

/* The re-check of a localized verdict: its culprit against what it had at the verdict.
 * midpoint_only: only the midpoint between its value and the runner-up's then counts (not
 * standing out from the siblings now, which the largest part of a node always does). */
static int recheck_culprit(struct plan *pl, struct investigation *inv, const char *keep, int record,
                           int midpoint_only) {
    double now = NAN;
    int by_rivals = 0;
    int holds = verdict_holds(pl, inv, &now, &by_rivals);
    if (holds == 1 && by_rivals && midpoint_only) {
        holds = 0;
    }
    if (holds < 0 || !record) {
        return holds;
    }
    char v[48], at[48], mid[48], why[PROBES_NAME_MAX * 2 + 400];
    value_words(inv->problem, now, v, sizeof v);
    value_words(inv->problem, holds && by_rivals ? verdict_low(inv) : inv->verdict_value, at,
                sizeof at);
    value_words(inv->problem, 0.5 * (verdict_low(inv) + inv->runner_value), mid, sizeof mid);
    snprintf(why, sizeof why,
             holds && by_rivals
                 ? "%s still stands out from its siblings (%s now, above every sibling's "
                   "reach, though below %s, midway between %s (the low end of its 95 %% "
                   "interval at the verdict) and the runner-up's then): %s"
             : holds ? "%s still holds the problem (%s now, %s at the verdict; it would be back "
                       "to normal below %s, midway from the low end of its 95 %% interval then "
                       "to the runner-up's): %s"
                     : "%s is back to normal (%s now, %s at the verdict, below %s, midway from "
                       "the low end of its 95 %% interval then to the runner-up's)%s",
             inv->verdict_node, v, holds && by_rivals ? mid : at, holds && by_rivals ? at : mid,
             holds ? keep : "");
    recheck(pl, inv, holds, BY_CULPRIT, why);
    return holds;
}

/* A problem the node check found that compares the node with its own past (not with a QTA
 * or with its calculated ΔQ, which a trigger that cleared or the diagram's model may hold
 * whatever the fault does): its index in c->p, or -1. */
static int against_past(const struct search_check *c) {
    for (int i = 0; c->has_baseline && i < c->n; i++) {
        enum search_problem k = c->p[i].kind;
        if (k != SEARCH_QTA && k != SEARCH_DIVERGENCE) {
            return i;
        }
    }
    return -1;
}

/* Is node (a closed investigation's, or a problem's) still abnormal against its baseline
 * from before the problem? 1 yes, 0 no (with the check's sentence in why), −1 when it has
 * nothing to tell by (no such baseline, as after a restart: the rings are empty). past_only
 * (a trigger's verdict after the trigger cleared): only a problem against that baseline
 * counts; otherwise (a person's investigation whose node had a reference) any, a QTA's
 * too. */
static int node_still_abnormal(struct plan *pl, const char *name, int past_only, char *why,
                               size_t cap, int *by_qta) {
    struct search_check c;
    /* at every horizon the check looks at (a rare, erratic fault shows over tens of windows,
     * not in every five; and five short windows' scatter can hide even a large rise) */
    const struct probe *node = adapt__probe(pl->a, name);
    adapt__check_node(pl, node, pl->upto - 4 * SEARCH_RECENT_WINDOWS, &c, NULL);
    if (!c.has_baseline && !past_only) { /* against a QTA alone: the recent windows */
        adapt__check_node(pl, node, pl->upto - SEARCH_RECENT_WINDOWS, &c, NULL);
    }
    int k = past_only ? against_past(&c) : (c.n > 0 ? 0 : -1);
    if (by_qta) {
        *by_qta = !c.has_baseline;
    }
    if (k >= 0) {
        snprintf(why, cap,
                 c.has_baseline ? "%s is still abnormal against its baseline from before the "
                                  "problem (%s: %s): the investigation keeps its probes"
                                : "%s is still abnormal against its QTA (%s: %s; it has no "
                                  "baseline from before the problem): the investigation keeps "
                                  "its probes",
                 name, search_problem_name(c.p[k].kind), c.p[k].why);
        return 1;
    }
    if (!c.has_baseline && (past_only || !c.has_qta)) {
        snprintf(why, cap, "%s has no baseline from before the problem to judge it against", name);
        return -1;
    }
    char m1[DQ_DURATION_TEXT], m2[DQ_DURATION_TEXT];
    if (!c.has_baseline) {
        snprintf(why, cap,
                 "%s no longer clearly breaks its QTA (mean %s, %.2g %% lost; it has no "
                 "baseline from before the problem)",
                 name, dq_format_duration(c.recent.mean, m1, sizeof m1),
                 100.0 * search_stats_lost(&c.recent));
        return 0;
    }
    snprintf(why, cap,
             "%s is back to normal against its baseline from before the problem "
             "(mean %s against %s before, %.2g %% lost against %.2g %%)",
             name, dq_format_duration(c.recent.mean, m1, sizeof m1),
             dq_format_duration(c.baseline.mean, m2, sizeof m2),
             100.0 * search_stats_lost(&c.recent), 100.0 * search_stats_lost(&c.baseline));
    return 0;
}

int adapt__inv_may_explain(const struct investigation *o) {
    return !o->released && (o->state == INV_SEARCHING || strcmp(o->verdict, "localized") == 0 ||
                            strcmp(o->verdict, "overload") == 0);
}

int adapt__trigger_held(const struct adapt_state *st, int64_t trigger_id) {
    for (int i = 0; i < st->n_inv; i++) {
        const struct investigation *o = st->inv[i];
        if (!o->released && o->trigger_id == trigger_id && o->state != INV_SEARCHING &&
            strcmp(o->verdict, "localized") == 0) {
            return 1;
        }
    }
    return 0;
}

/* A trigger's localized verdict after the trigger cleared (not disabled): 1 while the node
 * is still abnormal against its baseline from before the problem (kept frozen for it), or
 * its culprit still holds the problem (above the midpoint between its value at the verdict
 * and the runner-up's then: on a loaded machine the node's check over scattered windows can
 * lose sight of a rise its culprit still shows plainly), said as a re-check; 0 when neither
 * (the investigation goes quiet, as before the trigger cleared). Without such a baseline the
 * trigger's clearing alone does not say the cause went (thin windows pass a QTA now and
 * then): only the culprit tells. */
static int trigger_verdict_holds(struct plan *pl, struct investigation *inv,
                                 const struct trigger *t) {
    if (!t || !t->enabled || strcmp(inv->verdict, "localized") != 0 ||
        adapt__episode_from(&pl->next, inv->trigger_id, 0) < 0) {
        return 0;
    }
    char why[PROBES_NAME_MAX + 600];
    int abnormal = node_still_abnormal(pl, inv->node, 1, why, sizeof why, NULL);
    if (abnormal == 1) {
        recheck(pl, inv, 1, BY_NODE, why);
        return 1;
    }
    char keep[PROBES_NAME_MAX + 300];
    snprintf(keep, sizeof keep,
             "the trigger cleared and %s %s, but its culprit tells: the investigation keeps "
             "its probes",
             inv->node,
             abnormal < 0 ? "has no baseline from before the problem"
                          : "no longer differs clearly from its baseline from before it");
    return recheck_culprit(pl, inv, keep, 1, 1) == 1;
}

void adapt__episodes_settle(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    for (int i = 0; i < st->n_episodes; i++) {
        struct episode *e = &st->episodes[i];
        if (e->to != INT64_MAX || !e->trigger_id) {
            continue;
        }
        const struct trigger *t = NULL;
        for (int k = 0; k < st->n_triggers; k++) {
            t = st->triggers[k].id == e->trigger_id ? &st->triggers[k] : t;
        }
        if (t && t->enabled && t->fired) {
            continue;
        }
        int over = !t || !t->enabled || t->good >= EPISODE_CLEAR_WINDOWS;
        if (!over && !adapt__trigger_held(st, e->trigger_id)) {
            /* no verdict holds it: over once its node is no longer abnormal against the
             * baseline from before it */
            char why[PROBES_NAME_MAX + 600];
            over = node_still_abnormal(pl, e->node, 1, why, sizeof why, NULL) <= 0;
        }
        if (over) {
            adapt__episode_close(pl, e->trigger_id, 0);
        }
    }
}

/* 1 for a person's problem found beyond its baseline's largest and localized: its rare
 * passes keep the culprit's path (tail_pass_now, tail_quiet) */
static int tail_localized(const struct investigation *inv) {
    return !inv->trigger_id && inv->tail_at > 0.0 && strcmp(inv->verdict, "localized") == 0;
}

static int tail_pass_now(struct plan *pl, const struct investigation *inv);

/* 1 when the problem of closed investigation inv is still there (see the top); record: say
 * so (recheck). */
static int problem_persists(struct plan *pl, struct investigation *inv, int record) {
    if (inv->trigger_id) {
        const struct trigger *t = trigger_of(pl, inv);
        return t && t->fired;
    }
    if (strcmp(inv->verdict, "localized") == 0 && adapt__episode_from(&pl->next, 0, inv->id) >= 0) {
        /* localized, and its node had a reference: the culprit's path is kept until the
         * node is back to normal */
        char why[PROBES_NAME_MAX + 600];
        int by_qta = 0;
        int abnormal = node_still_abnormal(pl, inv->node, 0, why, sizeof why, &by_qta);
        if (abnormal == 1) {
            if (record) {
                recheck(pl, inv, abnormal, BY_NODE, why);
            }
            return abnormal;
        }
        if (abnormal == 0) {
            /* the node's check over scattered windows can lose sight of a rare, erratic
             * fault (a few slow passes in twenty windows) that its culprit still shows
             * plainly: the culprit tells too, by the midpoint only (as after a trigger
             * cleared) */
            char keep[PROBES_NAME_MAX + 300];
            snprintf(keep, sizeof keep,
                     by_qta ? "%s no longer clearly breaks its QTA (it has no baseline from "
                              "before the problem), but its culprit tells: the investigation "
                              "keeps its probes"
                            : "%s no longer differs clearly from its baseline from before the "
                              "problem, but its culprit tells: the investigation keeps its "
                              "probes",
                     inv->node);
            int holds = recheck_culprit(pl, inv, keep, 0, 1);
            if (holds == 1) {
                if (record) {
                    recheck_culprit(pl, inv, keep, 1, 1);
                }
                return 1;
            }
            if (holds == -2) { /* too few of the culprit's instances to tell: as below */
                return record ? ++inv->untold < pl->a->opt.investigation_windows
                              : inv->untold < pl->a->opt.investigation_windows;
            }
            if (record) {
                inv->untold = 0;
                if (!tail_pass_now(pl, inv)) {
                    /* with a rare, very slow pass in the last window the probes stay
                     * (adapt__deescalate says so): "back to normal" is not said then */
                    recheck(pl, inv, 0, BY_NODE, why);
                }
            }
            return 0;
        }
        /* nothing to tell by (no baseline, as after a restart): the culprit, as below */
    }
    int holds = recheck_culprit(pl, inv, "the investigation keeps its probes", record, 0);
    if (holds != -2 || !record) {
        inv->untold = record ? 0 : inv->untold;
        return holds == 1;
    }
    /* too few of the culprit's instances to tell (a loaded machine's thin windows): not
     * quiet, for as long as a step may wait for samples; then the problem is taken as gone */
    return ++inv->untold < pl->a->opt.investigation_windows;
}

/* Owned probe i of inv when it may be disabled now (enabled, not always on, not held by
 * another investigation that still needs it), else NULL. */
static struct probe *releasable(struct plan *pl, const struct investigation *inv, int i) {
    const struct adapt_state *st = &pl->next;
    struct probe *p = adapt__probe(pl->a, inv->owned[i]);
    int shared = 0;
    for (int j = 0; j < st->n_inv; j++) {
        struct investigation *o = st->inv[j];
        shared |= o != inv && !o->released && adapt__owns(o, inv->owned[i]) &&
                  (o->state == INV_SEARCHING || problem_persists(pl, o, 0) || tail_pass_now(pl, o));
    }
    return !p || !adapt__plan_enabled(pl, p) || p->always_on || shared ? NULL : p;
}

void adapt__release(struct plan *pl, struct investigation *inv, const char *reason) {
    struct probe *release[ADAPT_MAX_OWNED];
    int n = 0;
    json_t *names = json_array();
    for (int i = 0; i < inv->n_owned; i++) {
        struct probe *p = releasable(pl, inv, i);
        if (p) {
            json_array_append_new(names, json_string(p->name));
            release[n++] = p;
        }
    }
    inv->released = 1;
    if (inv->mode == SEARCH_MODE_OBSERVE) {
        /* still observing: no problem was decided, and a watch's frozen baselines go (its
         * windows were no problem's) */
        adapt__episode_drop(pl, 0, inv->id);
    } else {
        adapt__episode_close(pl, 0, inv->id);
    }
    if (inv->n_owned == 0) { /* it never enabled anything: nothing to say */
        json_decref(names);
        return;
    }
    json_t *stats = json_pack("{s:s,s:i}", "reason", reason, "quiet_windows", inv->quiet);
    int64_t hyp = adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "disable", names, stats, NULL);
    for (int i = 0; i < n; i++) {
        adapt__fx_change(pl, CORE_DISABLE, release[i], 0.0, 0, hyp);
    }
    adapt__fx_log(pl, LOG_INFO, inv->id, ": released (%d probe(s) disabled)", n);
}

/* 1 when probe `name` is one of inv's culprits found so far, lies above one, or is the
 * sibling one is judged against: what the verdict and its re-checks read. */
static int keeps_culprit(const struct dq_diagram *g, const struct investigation *inv,
                         const char *name) {
    int i = dq_diagram_find(g, name);
    for (int k = 0; k < inv->n_culprits; k++) {
        if (strcmp(inv->culprit_ref[k], name) == 0) {
            return 1;
        }
    }
    return i >= 0 && adapt__on_culprit_path(g, inv, i);
}

void adapt__release_below(struct plan *pl, struct investigation *inv, const char *node,
                          int64_t hyp_parent, const char *reason) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int top = g ? dq_diagram_find(g, node) : -1;
    if (top < 0) {
        return;
    }
    struct probe *release[ADAPT_MAX_OWNED];
    int n = 0;
    json_t *names = json_array();
    for (int i = 0; i < inv->n_owned;) {
        int under = strcmp(inv->owned[i], node) != 0 && adapt__below(g, top, inv->owned[i]) &&
                    !keeps_culprit(g, inv, inv->owned[i]);
        struct probe *p = under ? releasable(pl, inv, i) : NULL;
        if (!p) {
            i++;
            continue;
        }
        json_array_append_new(names, json_string(p->name));
        release[n++] = p;
        char name[PROBES_NAME_MAX + 1];
        memcpy(name, inv->owned[i], sizeof name);
        adapt__disown(inv, name); /* the last one moves into slot i */
    }
    if (n == 0) {
        json_decref(names);
        return;
    }
    json_t *stats = json_pack("{s:s}", "reason", reason);
    int64_t hyp = adapt__hypothesis(pl, inv, hyp_parent, node, "disable", names, stats, NULL);
    for (int i = 0; i < n; i++) {
        adapt__fx_change(pl, CORE_DISABLE, release[i], 0.0, 0, hyp);
    }
    adapt__fx_log(pl, LOG_INFO, inv->id, ": %d probe(s) below %s disabled", n, node);
}

/*
 * The trigger of inv is still fired but its localized child is back to normal: the
 * cause moved. A new investigation opens at the trigger's probe, linked to inv, and takes
 * over inv's probes; inv is done.
 */
static void supersede(struct plan *pl, struct investigation *inv, const struct trigger *t) {
    if (adapt__investigation_at(&pl->next, inv->node)) {
        return; /* one is searching there already: it will find the cause */
    }
    char why[1400];
    snprintf(why, sizeof why,
             "the verdict of investigation %" PRId64 " (localized at %s) no longer explains "
             "the %s trigger on %s: %s is back to normal while the trigger stays fired",
             inv->id, inv->verdict_node, adapt__trigger_kind_name(t->kind), t->probe,
             inv->verdict_node);
    enum search_problem problem = inv->problem;
    int64_t old = inv->id;
    char node[PROBES_NAME_MAX + 1];
    snprintf(node, sizeof node, "%s", inv->node);
    struct adapt_open o = {.node = node,
                           .problem = (int)problem,
                           .strategy = inv->strategy,
                           .trigger_id = inv->trigger_id,
                           .follows = old,
                           .why = why};
    /* adapt__open may not move the array of investigations: inv stays valid */
    struct investigation *next = adapt__open(pl, &o);
    if (!next) {
        return;
    }
    json_t *names = json_array();
    for (int i = 0; i < inv->n_owned; i++) {
        if (adapt__own(next, inv->owned[i]) == DQ_OK) {
            json_array_append_new(names, json_string(inv->owned[i]));
        }
    }
    char taken[120];
    snprintf(taken, sizeof taken, "taken over from investigation %" PRId64, old);
    adapt__hypothesis(pl, next, next->hyp_id, next->node, "share", json_incref(names),
                      json_pack("{s:s,s:I}", "reason", taken, "from", (json_int_t)old), NULL);
    int64_t handover =
        adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "handover", names,
                          json_pack("{s:s,s:I}", "reason", why, "to", (json_int_t)next->id), NULL);
    adapt__fx_hyp_to(pl, handover, next->id); /* provisional until the round is stored */
    adapt__fx_log(pl, LOG_WARN, old,
                  ": its verdict no longer explains the trigger on %s: a new "
                  "investigation takes over",
                  t->probe);
    inv->released = 1;
}

/* 1 when a probe the closed investigation's judgement rests on (its node, its trigger's
 * probe, its localized child) had no data in this window: the window says nothing about
 * whether the problem is still there, so nothing is counted either way. */
static int judged_blind(const struct plan *pl, const struct investigation *inv) {
    const struct trigger *t = trigger_of(pl, inv);
    return adapt__no_data(pl, inv->node) || (t && adapt__no_data(pl, t->probe)) ||
           (inv->verdict_node[0] && adapt__no_data(pl, inv->verdict_node));
}

/* A person's problem found in the tail: quiet windows (none with a pass beyond twice its
 * baseline's largest: tail_pass_now) long enough that its rare passes, at the rate its node
 * showed them from the problem's first window (the frozen baselines' end, else the start of
 * the search's last step) to the verdict, would have come with 99 % (4.6 of them expected), at most
 * SEARCH_TAIL_QUIET_MAX: a step that sent one such pass every ten windows is not over after
 * twenty quiet ones, and the probes still go within a minute of the fault's end. */
static int tail_quiet(struct plan *pl, struct investigation *inv) {
    if (inv->tail_quiet == 0) {
        int windows = 0;
        int64_t from = adapt__episode_from(&pl->next, 0, inv->id);
        int n = adapt__passes_beyond(pl, inv->node, from >= 0 ? from : inv->eval_from,
                                     2.0 * inv->tail_at, &windows);
        double need = n > 0 && windows > 0 ? ceil(4.6 * windows / n) : SEARCH_TAIL_QUIET_MAX;
        need = need < 4 * SEARCH_RECENT_WINDOWS ? 4 * SEARCH_RECENT_WINDOWS : need;
        inv->tail_quiet = need > SEARCH_TAIL_QUIET_MAX ? SEARCH_TAIL_QUIET_MAX : (int)need;
    }
    return inv->tail_quiet;
}

/* 1 when a person's problem found in the tail showed in the last window: a pass of its node
 * beyond twice its baseline's largest (a window with one is not quiet, whatever the node's
 * check says over the 20 windows it weighs). Twice: beyond the largest alone, a baseline of
 * 40 windows sees one pass in 40 windows under no fault, which would hold the probes long
 * after the fault ended. */
static int tail_pass_now(struct plan *pl, const struct investigation *inv) {
    int windows = 0;
    return tail_localized(inv) &&
           adapt__passes_beyond(pl, inv->node, pl->upto - 1, 2.0 * inv->tail_at, &windows) > 0;
}

/* Windows in a row without the problem before inv's probes go: deescalate_windows; for a
 * person's variance problem at least the horizon its node and its culprit are judged over
 * (an erratic part's few slow passes come and go from one 20-window span to the next: one
 * span without them is not the problem gone while the next may hold them again). */
static int quiet_needed(struct plan *pl, struct investigation *inv) {
    int need = pl->a->opt.deescalate_windows;
    if (!inv->trigger_id && inv->problem == SEARCH_VARIANCE && need < 4 * SEARCH_RECENT_WINDOWS) {
        need = 4 * SEARCH_RECENT_WINDOWS;
    }
    if (tail_localized(inv)) {
        need = need > tail_quiet(pl, inv) ? need : tail_quiet(pl, inv);
    }
    return need;
}

void adapt__deescalate(struct plan *pl, struct investigation *inv) {
    if (inv->released) {
        return;
    }
    if (tail_localized(inv)) {
        tail_quiet(pl, inv); /* reckoned at the verdict, over the windows of the problem */
    }
    if (judged_blind(pl, inv)) {
        return; /* no data is not quiet: de-escalation waits for the data to come back */
    }
    if (inv->trigger_id) {
        const struct trigger *t = trigger_of(pl, inv);
        if (t && t->fired) {
            inv->quiet = 0;
            /* still explained by the verdict? (−1: cannot tell, assume so). Only while the
             * trigger's condition is still bad: a trigger on its way to clearing is not a
             * cause that moved. */
            char keep[PROBES_NAME_MAX + 128];
            snprintf(keep, sizeof keep,
                     "the %s trigger on %s stays fired and the verdict stands: no new "
                     "investigation",
                     adapt__trigger_kind_name(t->kind), t->probe);
            if (recheck_culprit(pl, inv, keep, 1, 0) == 0 && t->bad > 0) {
                if (++inv->unexplained >= SEARCH_CONFIRM) {
                    supersede(pl, inv, t);
                }
            } else {
                inv->unexplained = 0;
            }
            return;
        }
        if (trigger_verdict_holds(pl, inv, t)) {
            inv->quiet = 0;
            return;
        }
    } else if (problem_persists(pl, inv, 1)) {
        inv->quiet = 0;
        return;
    } else if (tail_pass_now(pl, inv)) {
        char why[PROBES_NAME_MAX + 200], t[DQ_DURATION_TEXT];
        snprintf(why, sizeof why,
                 "%s had a pass beyond %s (twice its baseline's largest) in the last window: "
                 "its rare, very slow passes go on, and the investigation keeps its probes",
                 inv->node, dq_format_duration(2.0 * inv->tail_at, t, sizeof t));
        if (!(inv->recheck_rules & (1 << BY_TAIL))) {
            /* said once: the node's own re-check, which a few passes do not move, goes on
             * saying what it says, and the two would take turns every few windows */
            inv->recheck_rules |= 1 << BY_TAIL;
            say_recheck(pl, inv, 1, why);
        }
        inv->quiet = 0;
        return;
    }
    if (++inv->quiet < quiet_needed(pl, inv)) {
        return;
    }
    adapt__release(pl, inv, "the problem stayed away; disabling what the investigation enabled");
}

void adapt__sweep(struct adapt_state *st) {
    for (int i = 0; i < st->n_inv;) {
        if (st->inv[i]->released) {
            adapt__inv_remove(st, i);
            continue;
        }
        i++;
    }
}
