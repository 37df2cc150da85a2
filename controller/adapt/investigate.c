/*
 * investigate.c: investigations, from the opening to a step's outcome.
 *
 * A person's investigation first *observes* its node (mode OBSERVE): a node without recent
 * statistics is enabled (with its children when the budget allows) and, once the node has
 * the minimum samples, the node check (search_check) decides what it follows
 * (search_followed): the most significant problem, an overload, the largest contributor
 * when there is nothing to judge against, or nothing (*healthy*, and what it enabled is
 * released at once). A trigger's investigation knows its problem from the trigger.
 *
 * Then it *searches*: every window it gathers the focus's and its children's statistics
 * since the last expansion and asks the strategy what to do: enable children (an "expand"
 * hypothesis with its commands), wait for samples, or decide. A verdict is acted on only
 * once search confirms it (search_confirm_step) and, for the `children` strategy, the
 * windows since it was first seen say the same on their own (search_fresh_judge). A budget
 * of enabled probes and of instances per second pauses expansions (logged once).
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

const char *adapt__problem_name(const struct investigation *inv) {
    return inv->mode != SEARCH_MODE_OBSERVE ? search_problem_name(inv->problem) : "unknown";
}

int64_t adapt__hypothesis(struct plan *pl, const struct investigation *inv, int64_t parent,
                          const char *node, const char *action, json_t *probes, json_t *stats,
                          const char *verdict) {
    return adapt__fx_hyp(pl, inv->id, parent, node, adapt__problem_name(inv), action, probes, stats,
                         verdict);
}

/* ---- opening ---------------------------------------------------------------------------- */

struct investigation *adapt__investigation_at(struct adapt_state *st, const char *node) {
    for (int i = 0; i < st->n_inv; i++) {
        struct investigation *inv = st->inv[i];
        if (inv->state == INV_SEARCHING && strcmp(inv->node, node) == 0) {
            return inv;
        }
    }
    return NULL;
}

void adapt__focus_on(struct adapt *a, struct investigation *inv, const char *node, int64_t hyp,
                     int64_t upto) {
    if (node != inv->focus) { /* resuming passes inv->focus itself */
        snprintf(inv->focus, sizeof inv->focus, "%s", node);
    }
    const struct dq_diagram *g = core_diagram(a->env.core);
    int i = g ? dq_diagram_find(g, node) : -1;
    size_t n = i >= 0 ? dq_diagram_probe_children(g, i, NULL, 0) : 0;
    search_state_init(&inv->st, inv->strategy, n ? n : 1);
    inv->hyp_id = hyp;
    inv->eval_from = upto;
    inv->windows_waited = 0;
    search_confirm_reset(&inv->confirm);
}

/* "variance, divergence": the problems the check saw besides the one followed. */
static void set_also(struct investigation *inv, const struct search_check *c) {
    inv->also[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < c->n; i++) {
        const char *name = search_problem_name(c->p[i].kind);
        if (inv->mode != SEARCH_MODE_OBSERVE && c->p[i].kind == inv->problem) {
            continue;
        }
        if (strstr(inv->also, name)) {
            continue;
        }
        int w = snprintf(inv->also + len, sizeof inv->also - len, "%s%s", len ? ", " : "", name);
        if (w < 0 || (size_t)w >= sizeof inv->also - len) {
            break;
        }
        len += (size_t)w;
    }
}

/* The root hypothesis's statistics of a new investigation. */
static json_t *opening_stats(struct plan *pl, struct investigation *inv, const struct adapt_open *o,
                             const struct probe *p, const struct search_check *c) {
    /* a trigger's: the node over the windows that fired it (its QTA hazard among them) */
    int64_t bad_from = o->trigger_id ? adapt__episode_from(&pl->next, o->trigger_id, 0) : -1;
    struct node_stats fired;
    adapt__gather(bad_from >= 0 ? p : NULL, bad_from, pl->upto, &fired);
    json_t *node = adapt__stats_json(o->node, fired.s.present ? &fired.s : &c->recent);
    adapt__node_stats_release(&fired);
    json_t *stats =
        json_pack("{s:o,s:s,s:s,s:o}", "node", node, "origin", o->trigger_id ? "trigger" : "person",
                  "problem", adapt__problem_name(inv), "check", adapt__check_json(o->node, c));
    if (o->who) {
        json_object_set_new(stats, "requested_by", json_string(o->who));
    }
    if (o->problem_why) {
        json_object_set_new(stats, "problem_why", json_string(o->problem_why));
    }
    /* overload: asked for, or a trigger's delay problem that rises with the arrivals */
    char load_why[200] = "";
    if (!inv->overload_asked && o->trigger_id && o->problem >= 0 &&
        search_load_shaped((enum search_problem)o->problem) &&
        adapt__load_rose(pl, p, c, 3, load_why, sizeof load_why)) {
        inv->overload_asked = 1;
        json_object_set_new(stats, "overload_why", json_string(load_why));
    }
    if (inv->overload_asked) {
        json_object_set_new(stats, "overload", json_true());
        if (inv->mode != SEARCH_MODE_OBSERVE) {
            inv->mode = SEARCH_MODE_OVERLOAD;
        }
    }
    if (o->follows) {
        json_object_set_new(stats, "follows", json_integer(o->follows));
        json_object_set_new(stats, "reason", json_string(o->why ? o->why : ""));
    }
    return stats;
}

struct investigation *adapt__open(struct plan *pl, const struct adapt_open *o) {
    struct adapt_state *st = &pl->next;
    if (st->n_inv >= ADAPT_MAX_INVESTIGATIONS) {
        dq_fail(DQ_EFULL, "%d investigations are open already", ADAPT_MAX_INVESTIGATIONS);
        return NULL;
    }
    struct investigation *inv = adapt__inv_new();
    if (!inv) {
        dq_fail(DQ_ENOMEM, "no memory for an investigation");
        return NULL;
    }
    snprintf(inv->node, sizeof inv->node, "%s", o->node);
    inv->mode = o->problem >= 0 ? SEARCH_MODE_PROBLEM : SEARCH_MODE_OBSERVE;
    inv->problem = o->problem >= 0 ? (enum search_problem)o->problem : SEARCH_LATENCY;
    inv->overload_asked = o->overload;
    inv->strategy = o->strategy;
    inv->trigger_id = o->trigger_id;
    struct store_investigation row = {.node = o->node,
                                      .problem = adapt__problem_name(inv),
                                      .strategy = search_strategy_name(o->strategy),
                                      .origin = o->trigger_id ? "trigger" : "person",
                                      .trigger_id = o->trigger_id,
                                      .requested_by = o->who};
    inv->id = adapt__fx_inv_open(pl, &row);
    if (!inv->id) {
        adapt__inv_free(inv);
        dq_fail(DQ_ENOMEM, "no memory for an investigation");
        return NULL;
    }
    struct probe *p = adapt__probe(pl->a, o->node);
    struct search_check c;
    adapt__check_node(pl, p, 0, &c, NULL);
    set_also(inv, &c);
    json_t *stats = opening_stats(pl, inv, o, p, &c);
    int64_t hyp = adapt__hypothesis(pl, inv, 0, o->node, "root", NULL, stats, NULL);
    adapt__focus_on(pl->a, inv, o->node, hyp, pl->upto);
    st->inv[st->n_inv++] = inv;
    adapt__fx_log(pl, LOG_INFO, inv->id, " opened at %s (%s, %s, %s)", o->node,
                  adapt__problem_name(inv), search_strategy_name(o->strategy),
                  o->trigger_id ? "trigger" : "person");
    return inv;
}

/* ---- enabling ----------------------------------------------------------------------------- */

/*
 * Enables `name` for inv (dMax from its own settings, else the focus's) and adds it to
 * `names`; a probe enabled already is left alone, or shared when another investigation
 * enabled it (so neither disables it under the other).
 */
static void enable_for(struct plan *pl, struct investigation *inv, const char *name,
                       const struct probe *focus, int64_t hyp, json_t *names) {
    struct probe *p = adapt__probe(pl->a, name);
    if (!p) {
        return;
    }
    if (adapt__plan_enabled(pl, p)) {
        struct adapt_state *st = &pl->next;
        for (int i = 0; i < st->n_inv; i++) {
            struct investigation *o = st->inv[i];
            if (o != inv && adapt__owns(o, name)) {
                adapt__own(inv, name);
                break;
            }
        }
        return;
    }
    double dmax = 0.0;
    int bins = 0;
    if (!p->dmax_set && focus && focus != p) {
        dmax = focus->dmax_ms;
        bins = focus->n;
    }
    adapt__own(inv, name);
    if (names) {
        json_array_append_new(names, json_string(name));
    }
    adapt__fx_change(pl, CORE_ENABLE, p, dmax, bins, hyp);
}

/* 1 when the budget lets `more` probes be enabled now. */
static int budget_allows(struct plan *pl, size_t more) {
    int max = pl->a->opt.max_enabled_probes;
    return !pl->next.congested && (max <= 0 || adapt__plan_enabled_count(pl) + more <= (size_t)max);
}

/* The node and (budget allowing) its children that are not enabled yet, as a JSON list. */
static json_t *to_observe(struct plan *pl, struct investigation *inv, const struct probe *p,
                          int *with_children) {
    struct adapt *a = pl->a;
    const struct dq_diagram *g = core_diagram(a->env.core);
    int node = g ? dq_diagram_find(g, inv->node) : -1;
    int kids[SEARCH_MAX_CHILDREN];
    size_t n = node >= 0 ? dq_diagram_probe_children(g, node, kids, SEARCH_MAX_CHILDREN) : 0;
    size_t more = (p && !adapt__plan_enabled(pl, p)) + n;
    *with_children = n > 0 && budget_allows(pl, more);
    json_t *names = json_array();
    if (p && !adapt__plan_enabled(pl, p)) {
        json_array_append_new(names, json_string(inv->node));
    }
    for (size_t j = 0; *with_children && j < n && j < SEARCH_MAX_CHILDREN; j++) {
        struct probe *kp = adapt__probe(a, dq_diagram_node(g, kids[j])->name);
        if (kp && !adapt__plan_enabled(pl, kp)) {
            json_array_append_new(names, json_string(kp->name));
        }
    }
    return names;
}

int adapt__observe_start(struct plan *pl, struct investigation *inv) {
    struct adapt *a = pl->a;
    struct probe *p = adapt__probe(a, inv->node);
    struct search_check c;
    adapt__check_node(pl, p, 0, &c, NULL);
    if (p && adapt__plan_enabled(pl, p) && adapt__check_enough(pl, &c.recent)) {
        inv->eval_from = 0; /* the check picks its windows from the node's history */
        return 1;           /* the node has data: it can be characterised now */
    }
    /* no recent statistics: enable the node, and its children when the budget allows, so
     * that they report over the same windows */
    int with_children;
    json_t *names = to_observe(pl, inv, p, &with_children);
    int64_t hyp = adapt__hypothesis(
        pl, inv, inv->hyp_id, inv->node, "enable", json_incref(names),
        json_pack("{s:s}", "reason",
                  with_children ? "no recent statistics at the node: it and its children are "
                                  "enabled, and the problem is decided from their data"
                                : "no recent statistics at the node: it is enabled, and the "
                                  "problem is decided from its data"),
        NULL);
    size_t k;
    json_t *v;
    json_array_foreach(names, k, v) {
        enable_for(pl, inv, json_string_value(v), p, hyp, NULL);
    }
    json_decref(names);
    inv->eval_from = core_window_of(a->env.core, clock_now(a->env.clock)) + 1;
    inv->windows_waited = 0;
    return 0;
}

/*
 * Children another investigation enabled are shared: inv owns them too (logged as a
 * "share" hypothesis, which a restart replays), so neither investigation's de-escalation
 * disables them while the other still needs them.
 */
static void share_children(struct plan *pl, struct investigation *inv,
                           const struct focus_input *fi) {
    const struct adapt_state *st = &pl->next;
    json_t *names = NULL;
    for (size_t j = 0; j < fi->in.n_children; j++) {
        const char *name = fi->kids[j].name;
        if (!fi->kids[j].enabled || adapt__owns(inv, name)) {
            continue;
        }
        for (int i = 0; i < st->n_inv; i++) {
            if (st->inv[i] != inv && adapt__owns(st->inv[i], name)) {
                if (adapt__own(inv, name) == DQ_OK) {
                    names = names ? names : json_array();
                    json_array_append_new(names, json_string(name));
                }
                break;
            }
        }
    }
    if (names) {
        adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "share", names,
                          json_pack("{s:s}", "reason",
                                    "children another investigation enabled: kept while "
                                    "either needs them"),
                          NULL);
    }
}

void adapt__expand(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                   const struct search_step *step) {
    struct adapt *a = pl->a;
    struct adapt_state *st = &pl->next;
    int max = a->opt.max_enabled_probes;
    if (!budget_allows(pl, step->n_enable)) {
        if (!inv->paused) {
            inv->paused = 1;
            json_t *why =
                json_pack("{s:s,s:f,s:f,s:i,s:i}", "reason",
                          st->congested ? "ingest above 50 % of the instance budget"
                                        : "enabling would exceed the probe budget",
                          "rate", st->rate, "max_rate", a->opt.max_instances_per_second, "enabled",
                          (int)adapt__plan_enabled_count(pl), "max_enabled", max);
            adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "pause", NULL, why, NULL);
            adapt__fx_log(pl, LOG_WARN, inv->id, ": expansion paused (%s)",
                          st->congested ? "congestion" : "probe budget");
        }
        return; /* a pause uses up the step's time: a budget that never frees ends it */
    }
    inv->paused = 0;
    json_t *names = json_array();
    for (size_t j = 0; j < step->n_enable; j++) {
        json_array_append_new(names, json_string(fi->kids[step->enable[j]].name));
    }
    json_t *stats =
        json_pack("{s:s,s:s,s:o}", "strategy", search_strategy_name(inv->strategy), "reason",
                  step->result.reason, "focus", adapt__stats_json(inv->focus, &fi->in.stats));
    int64_t hyp = adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "expand", names, stats, NULL);
    const struct probe *focus = adapt__probe(a, inv->focus);
    for (size_t j = 0; j < step->n_enable; j++) {
        enable_for(pl, inv, fi->kids[step->enable[j]].name, focus, hyp, NULL);
    }
    inv->hyp_id = hyp ? hyp : inv->hyp_id;
    /* fresh windows for every compared node: the first that starts after the commands */
    inv->eval_from = core_window_of(a->env.core, clock_now(a->env.clock)) + 1;
    inv->windows_waited = 0;
    search_confirm_reset(&inv->confirm);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": enabled %zu probe(s) under %s", step->n_enable,
                  inv->focus);
}

/* ---- searching ------------------------------------------------------------------------------ */

int adapt__window_counts(struct plan *pl, struct investigation *inv, const struct focus_input *fi) {
    /* a window went by (a person's action adds none); one in which the focus or a child had
     * no data (its source disconnected or went silent) is not counted either: the search
     * waits for the data to come back */
    int silent = adapt__no_data(pl, inv->focus);
    for (size_t j = 0; j < fi->in.n_children && !silent; j++) {
        silent = fi->kids[j].enabled && adapt__no_data(pl, fi->kids[j].name);
    }
    if (pl->wid >= 0 && !silent) {
        inv->windows_waited++;
    }
    if (silent) {
        search_confirm_reset(&inv->confirm);
    }
    return !silent;
}

/*
 * The verdict of the windows since the pending verdict was first seen (inv->confirm.from)
 * alone, evaluated as the cumulative one was; its child in *child. SEARCH_NEED_SAMPLES
 * while those windows are too few.
 */
static int fresh_verdict(struct plan *pl, struct investigation *inv,
                         const struct search_params *params, int *child) {
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_result *r = calloc(1, sizeof *r), *out = calloc(1, sizeof *out);
    int verdict = SEARCH_NEED_SAMPLES;
    *child = -1;
    struct search_params fp;
    search_fresh_params(params, &fp);
    if (fi && r && out && adapt__build_input(pl, inv, inv->confirm.from, fi) == DQ_OK) {
        adapt__culprits_adjust(pl, inv, fi);
        fi->in.exhausted = 0;
        if (inv->mode == SEARCH_MODE_CONTRIBUTOR) {
            fi->in.problem = SEARCH_LATENCY;
        }
        if (search_evaluate(&fi->in, &fp, r) == DQ_OK) {
            verdict = r->verdict;
            *out = *r;
            if (inv->mode == SEARCH_MODE_CONTRIBUTOR) {
                enum search_problem followed;
                verdict = search_contributor(&fi->in, &fp, r, out, &followed);
            }
            *child = out->child;
        }
    }
    if (fi) {
        adapt__focus_input_release(fi);
    } else {
        pl->failed = 1;
    }
    free(fi);
    free(r);
    free(out);
    return verdict;
}

/* A latency-shaped problem whose latency turns out to rise with the arrivals becomes an
 * overload investigation. A look is taken at every window of the search: they share the
 * false alarm rate among the windows a step may wait, or among the looks taken so far once
 * the search has taken more (a search of 176 windows through a rare branch had found a
 * chance correlation at z 4.2, where 60 looks count from 4.2). */
static void maybe_overload(struct plan *pl, struct investigation *inv) {
    char why[200];
    if (inv->mode != SEARCH_MODE_PROBLEM || !search_load_shaped(inv->problem)) {
        return;
    }
    int looks = ++inv->load_looks;
    if (looks < pl->a->opt.investigation_windows) {
        looks = pl->a->opt.investigation_windows;
    }
    if (!adapt__load_rose(pl, adapt__probe(pl->a, inv->node), NULL, looks, why, sizeof why)) {
        return;
    }
    char reason[300];
    snprintf(reason, sizeof reason,
             "%s: an overload investigation from here on (where does it saturate?)", why);
    inv->mode = SEARCH_MODE_OVERLOAD;
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "check", NULL,
                      json_pack("{s:s,s:s,s:s}", "problem", search_problem_name(inv->problem),
                                "mode", "overload", "reason", reason),
                      NULL);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": %s", reason);
}

/* The strategy's step at the focus, and its verdict through the policy: confirmation, the
 * no-reference fallback, the fresh windows. */
static void search_focus(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                         struct search_step *step, struct search_result *res) {
    struct search_params params = pl->a->params;
    if (inv->mode == SEARCH_MODE_CONTRIBUTOR) {
        fi->in.problem = SEARCH_LATENCY;
    } else if (inv->problem == SEARCH_VARIANCE && params.min_windows < 4) {
        /* spread shows in rare outliers: give every child enough windows to show them */
        params.min_windows = 4;
    }
    if (search_step(&fi->in, &params, &inv->st, step)) {
        adapt__aborted_on_error(pl, inv);
        return;
    }
    if (step->action == SEARCH_ENABLE) {
        adapt__expand(pl, inv, fi, step);
        return;
    }
    if (step->action != SEARCH_DECIDED) {
        search_confirm_reset(&inv->confirm);
        return;
    }
    int verdict = step->result.verdict;
    *res = step->result;
    if (inv->mode == SEARCH_MODE_CONTRIBUTOR) {
        verdict = search_contributor(&fi->in, &params, &step->result, res, &inv->problem);
    }
    if (verdict == SEARCH_NEED_SAMPLES) {
        search_confirm_reset(&inv->confirm);
        return;
    }
    if (!search_confirm_step(&inv->confirm, verdict, res->child, pl->wid >= 0, pl->upto)) {
        return; /* the same verdict must hold at the next evaluation too */
    }
    if (search_fresh_needed(verdict, inv->strategy, fi->in.exhausted)) {
        int fresh_child;
        int fresh = fresh_verdict(pl, inv, &params, &fresh_child);
        enum search_fresh judged = search_fresh_judge(verdict, res->child, fresh, fresh_child);
        if (judged == SEARCH_FRESH_WAIT) {
            return;
        }
        if (judged == SEARCH_FRESH_DISAGREES) {
            search_confirm_reset(&inv->confirm); /* not borne out: start over */
            return;
        }
    }
    if (verdict == SEARCH_HEALTHY) {
        adapt__healthy(pl, inv, res->reason, adapt__attribution_json(&fi->in, res));
    } else {
        adapt__decided(pl, inv, fi, res);
    }
}

/* One step of an investigation that searches. */
static void search(struct plan *pl, struct investigation *inv) {
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_step *step = calloc(1, sizeof *step);
    struct search_result *res = calloc(1, sizeof *res);
    if (!fi || !step || !res) {
        pl->failed = 1;
    } else if (adapt__build_input(pl, inv, inv->eval_from, fi)) {
        adapt__aborted_on_error(pl, inv);
    } else {
        share_children(pl, inv, fi);
        adapt__culprits_adjust(pl, inv, fi);
        if (adapt__window_counts(pl, inv, fi)) {
            fi->in.exhausted = inv->windows_waited >= pl->a->opt.investigation_windows;
            maybe_overload(pl, inv);
            if (inv->mode == SEARCH_MODE_OVERLOAD) {
                adapt__overload_step(pl, inv, fi);
            } else {
                search_focus(pl, inv, fi, step, res);
            }
        }
    }
    if (fi) {
        adapt__focus_input_release(fi);
    }
    free(fi);
    free(step);
    free(res);
}

/* ---- observing: the problem from data ---------------------------------------------------- */

int adapt__check_enough(const struct plan *pl, const struct search_stats *s) {
    return s->present && search_stats_instances(s) >= pl->a->params.min_instances &&
           s->windows >= pl->a->params.min_windows;
}

/* "nothing abnormal against its QTA (met), its baseline (mean 12 ms against 12.1 ms
 * before, …) and its calculated ΔQ (…)". */
static void healthy_reason(const struct investigation *inv, const struct search_check *c, char *buf,
                           size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "healthy at %s: nothing abnormal against", inv->node);
    int parts = 0;
    if (c->has_qta && len < cap) {
        len += (size_t)snprintf(buf + len, cap - len, " its QTA (met over %llu instances)",
                                (unsigned long long)search_stats_instances(&c->recent));
        parts++;
    }
    if (c->has_baseline && len < cap) {
        char m1[DQ_DURATION_TEXT], m2[DQ_DURATION_TEXT];
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s its baseline (mean %s against %s before, %.2g %% lost against %.2g %%)",
            parts ? (c->has_calculated ? "," : " and") : "",
            dq_format_duration(c->recent.mean, m1, sizeof m1),
            dq_format_duration(c->baseline.mean, m2, sizeof m2),
            100.0 * search_stats_lost(&c->recent), 100.0 * search_stats_lost(&c->baseline));
        parts++;
    }
    if (c->has_calculated && len < cap) {
        if (isfinite(c->recent.ks_d)) {
            len +=
                (size_t)snprintf(buf + len, cap - len, "%s its calculated ΔQ (KS D %.3g, p %.2g)",
                                 parts ? " and" : "", c->recent.ks_d, c->recent.ks_p);
        } else {
            len +=
                (size_t)snprintf(buf + len, cap - len, "%s its calculated ΔQ", parts ? " and" : "");
        }
    }
    if (inv->watch_done && len < cap) {
        snprintf(buf + len, cap - len,
                 "; watched %d windows more (when asked, within reach: %s), and nothing became "
                 "significant",
                 SEARCH_WATCH_WINDOWS, inv->watch_why);
    }
}

/* The check hypothesis of a characterisation. */
static int64_t check_hypothesis(struct plan *pl, struct investigation *inv, json_t *stats) {
    return adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "check", NULL, stats, NULL);
}

/* The search from the node, once characterised (hyp: its check hypothesis). */
static void start_search(struct plan *pl, struct investigation *inv, int64_t hyp) {
    int64_t from = inv->eval_from;
    adapt__focus_on(pl->a, inv, inv->node, hyp ? hyp : inv->hyp_id, pl->upto);
    /* children enabled with the node count from then on; with a node that had data,
     * children enabled already are compared over the recent windows */
    inv->eval_from = from ? from : pl->upto - SEARCH_RECENT_WINDOWS;
    search(pl, inv);
}

/* A problem found: followed (or weighed as an overload). */
static void follow_problem(struct plan *pl, struct investigation *inv, const struct search_check *c,
                           enum search_mode mode, const char *load_why, json_t *check,
                           int64_t rfrom, const char *older) {
    /* a broken QTA that the failures break, over the windows the check found it in, is
     * followed as lost mass (search_qta_lost) */
    const struct probe *p = adapt__probe(pl->a, inv->node);
    char lost_why[300] = "", first[1000];
    int by_lost = 0;
    if (c->p[0].kind == SEARCH_QTA) {
        by_lost = adapt__qta_lost(pl, p, rfrom, lost_why, sizeof lost_why);
    }
    snprintf(first, sizeof first, "%s%s%s%s", by_lost ? lost_why : "", by_lost ? " (" : "",
             c->p[0].why, by_lost ? ")" : "");
    inv->problem = by_lost ? SEARCH_LOST : c->p[0].kind;
    if (by_lost && mode == SEARCH_MODE_OVERLOAD && !inv->overload_asked) {
        mode = SEARCH_MODE_PROBLEM; /* lost mass is no load's shape: as a trigger's (triggers.c) */
    }
    inv->shape_level = c->p[0].level;
    inv->tail_at = c->p[0].kind == SEARCH_VARIANCE ? c->p[0].beyond : 0.0;
    int asked = inv->overload_asked;
    inv->mode = mode;
    set_also(inv, c);
    int overload = mode == SEARCH_MODE_OVERLOAD;
    char reason[2400], watched[400] = "";
    if (inv->watch_from) {
        snprintf(watched, sizeof watched,
                 " (significant %d windows after it was asked, when it was within reach: %s)",
                 (int)(pl->upto - inv->watch_from), inv->watch_why);
    }
    snprintf(reason, sizeof reason, "%s: %s%s%s%s%s%s%s%s", search_problem_name(inv->problem),
             first, older ? older : "", watched, inv->also[0] ? "; also seen: " : "", inv->also,
             overload ? "; " : "",
             !overload                 ? ""
             : (!asked && load_why[0]) ? load_why
                                       : "an overload was asked for",
             overload ? ": an overload investigation (where does it saturate?)" : "");
    adapt__fx_inv_problem(pl, inv->id, search_problem_name(inv->problem));
    int64_t hyp = check_hypothesis(
        pl, inv,
        json_pack("{s:s,s:s,s:o,s:s?,s:s?}", "problem", search_problem_name(inv->problem), "reason",
                  reason, "check", check, "also", inv->also[0] ? inv->also : NULL, "mode",
                  overload ? "overload" : NULL));
    adapt__fx_log(pl, LOG_INFO, inv->id, ": a %s problem at %s (%s)",
                  search_problem_name(inv->problem), inv->node, c->p[0].why);
    start_search(pl, inv, hyp);
}

/* A person's diagnosis that would say healthy now (c: nothing significant against a QTA
 * or a baseline, and no overload to weigh): 1 when it starts watching its node instead
 * (search_watch_wanted, dq_search.h): a `watch` hypothesis, and the node's baselines frozen
 * as they were before the range the check looked at (an episode of the investigation: the
 * last look weighs every window since against them, where a ring of 60 windows would leave
 * it too few of its own). */
static int watch_start(struct plan *pl, struct investigation *inv, const struct search_check *c) {
    struct search_found f;
    int person = inv->trigger_id == 0;
    const struct probe *p = adapt__probe(pl->a, inv->node);
    if (inv->watch_from ||
        !search_watch_wanted(person, inv->overload_asked, c->has_qta || c->has_baseline,
                             person && adapt__check_suggestive(pl, p, inv->eval_from, &f))) {
        return 0;
    }
    inv->watch_from = pl->upto;
    int64_t from = pl->upto - 4 * SEARCH_RECENT_WINDOWS;
    adapt__episode_open(pl, inv->node, from > inv->eval_from ? from : inv->eval_from, 0, inv->id);
    /* the threshold the test itself counts from (a tail level shares the check's rate) */
    double need = search_z_shared(c->zt, f.looks);
    snprintf(inv->watch_why, sizeof inv->watch_why, "%s at z %.1f where %.1f counts: %s",
             search_problem_name(f.kind), f.z, need, f.why);
    char why[600];
    snprintf(why, sizeof why,
             "nothing significant at %s yet, but within reach (%s): it is watched %d windows "
             "more before a verdict",
             inv->node, inv->watch_why, SEARCH_WATCH_WINDOWS);
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "watch", NULL,
                      json_pack("{s:s,s:s,s:f,s:i}", "reason", why, "problem",
                                search_problem_name(f.kind), "z", f.z, "windows",
                                SEARCH_WATCH_WINDOWS),
                      NULL);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": %s", why);
    return 1;
}

/* A watching investigation's window: 1 while the windows are watched (their own checks do
 * not count: each would be one more look, and the false alarms would grow with the windows
 * watched); then 0 with *c and *rfrom the last look's, over every window since the frozen
 * baselines, at the threshold of a fourth look: that look's answer is the check's. */
static int watch_go_on(struct plan *pl, struct investigation *inv, const struct probe *p,
                       struct search_check *c, int64_t *rfrom) {
    int watched = (int)(pl->upto - inv->watch_from);
    if (watched < SEARCH_WATCH_WINDOWS) {
        return 1;
    }
    inv->watch_done = 1;
    struct search_check *x = malloc(sizeof *x);
    int64_t xfrom = 0;
    if (x) {
        /* from the window after the frozen baselines' end: a range from a problem's first
         * window on is judged against the ring (adapt__baseline), which no longer holds
         * enough windows before it */
        int64_t since = adapt__episode_from(&pl->next, 0, inv->id);
        int horizon =
            since >= 0 ? (int)(pl->upto - since - 1) : 4 * SEARCH_RECENT_WINDOWS + watched;
        adapt__check_watched(pl, p, inv->eval_from, horizon, c, rfrom);
        int recent = watched + SEARCH_RECENT_WINDOWS;
        if (c->n == 0 && !c->has_baseline && recent < horizon) {
            /* no baseline, so only the absolute tests (QTA, lost mass) judged that range,
             * and its windows from before the problem diluted it: the windows since the
             * check's own recent ones are looked at too (docs_tutorial under stress: a
             * QTA broken for the 25 windows since the fault, met over 40) */
            adapt__check_watched(pl, p, inv->eval_from, recent, x, &xfrom);
            if (x->n > 0) {
                *c = *x;
                *rfrom = xfrom;
            }
        }
    }
    free(x);
    return 0;
}

/* A person's diagnosis that found nothing against the ring's baseline: its node's last
 * windows against the oldest baseline kept (ADAPT_REFS, one every ADAPT_REF_EVERY windows),
 * for a problem that began before the ring's baseline and is in it. 1 when that look finds
 * one: the problem is followed as any other, from that baseline's window (the episode's
 * baselines are those kept then; a probe enabled since has none and is judged against its
 * siblings); check is consumed. */
static int older_problem(struct plan *pl, struct investigation *inv, const struct search_check *c,
                         json_t *check) {
    const struct probe *p = adapt__probe(pl->a, inv->node);
    /* a person's only; once (a watch that began after it found nothing does not look again:
     * its false alarms stay those of a fourth look); and only when the ring had a baseline
     * to say nothing against */
    if (inv->trigger_id != 0 || inv->watch_from || !c->has_baseline || !p) {
        return 0;
    }
    struct search_check *x = malloc(sizeof *x);
    int64_t xfrom = 0, wid = 0;
    struct base_set *bases = NULL;
    if (!x || !adapt__check_older(pl, p, inv->eval_from, x, &xfrom, &wid, &bases) || x->n == 0) {
        free(x);
        return 0;
    }
    /* the load question as characterise asks it, of this look's problem */
    char load_why[200] = "";
    int needs = search_followed_needs(x, inv->overload_asked);
    int rose =
        needs >= 0 && adapt__load_rose(pl, p, needs ? x : NULL, 3, load_why, sizeof load_why);
    enum search_mode mode = search_followed(x, inv->overload_asked, rose);
    if (mode != SEARCH_MODE_PROBLEM && mode != SEARCH_MODE_OVERLOAD) {
        free(x);
        return 0;
    }
    char older[240];
    snprintf(older, sizeof older,
             " (against its baseline as it was %d windows ago: the problem is older than the "
             "baseline the ring holds now, which says nothing abnormal)",
             (int)(pl->upto - wid));
    json_decref(check);
    json_t *xcheck = adapt__check_json(inv->node, x);
    json_object_set_new(
        xcheck, "older_baseline",
        json_pack("{s:I,s:i}", "window", (json_int_t)wid, "windows_ago", (int)(pl->upto - wid)));
    adapt__episode_open_ref(pl, inv->node, wid, inv->id, bases);
    follow_problem(pl, inv, x, mode, load_why, xcheck, xfrom, older);
    free(x);
    return 1;
}

/* The node has the samples: decide what it follows, or that it is healthy. */
static void characterise(struct plan *pl, struct investigation *inv, const struct search_check *c,
                         int64_t rfrom) {
    json_t *check = adapt__check_json(inv->node, c);
    if (inv->watch_from) {
        json_object_set_new(check, "watched",
                            json_pack("{s:i,s:s}", "windows", (int)(pl->upto - inv->watch_from),
                                      "when_asked", inv->watch_why));
    }
    if (inv->watch_done && c->n == 0) {
        adapt__episode_drop(pl, 0, inv->id); /* the watch found no problem */
    }
    char load_why[200] = "";
    int needs = search_followed_needs(c, inv->overload_asked);
    int rose = needs >= 0 && adapt__load_rose(pl, adapt__probe(pl->a, inv->node), needs ? c : NULL,
                                              3, load_why, sizeof load_why);
    enum search_mode mode = search_followed(c, inv->overload_asked, rose);
    if (c->n > 0) {
        /* the problem began with the range the check found it in: baselines end there */
        adapt__episode_open(pl, inv->node, rfrom, 0, inv->id);
        follow_problem(pl, inv, c, mode, load_why, check, rfrom, NULL);
    } else if (mode == SEARCH_MODE_OVERLOAD) {
        /* asked for, or latency rising with the arrivals: weigh the stages even though
         * nothing is abnormal yet (the headroom is the question) */
        char reason[600];
        snprintf(reason, sizeof reason,
                 "%s: an overload investigation with nothing abnormal yet (where does %s "
                 "saturate, and how far is that?)",
                 inv->overload_asked ? "asked for" : load_why, inv->node);
        inv->mode = SEARCH_MODE_OVERLOAD;
        inv->problem = SEARCH_LATENCY;
        adapt__fx_inv_problem(pl, inv->id, "latency");
        start_search(pl, inv,
                     check_hypothesis(pl, inv,
                                      json_pack("{s:s,s:s,s:s,s:o}", "problem", "latency", "mode",
                                                "overload", "reason", reason, "check", check)));
    } else if (mode == SEARCH_MODE_CONTRIBUTOR) {
        /* no reference: follow where the time and the spread go */
        inv->mode = SEARCH_MODE_CONTRIBUTOR;
        inv->problem = SEARCH_LATENCY;
        adapt__fx_inv_problem(pl, inv->id, "latency");
        start_search(
            pl, inv,
            check_hypothesis(
                pl, inv,
                json_pack("{s:s,s:s,s:s,s:o}", "problem", "latency", "mode", "contributor",
                          "reason",
                          "nothing to judge it against (no QTA, no baseline yet, and nothing "
                          "abnormal against its calculated ΔQ): the search follows the largest "
                          "contributor to its time or its spread, and balanced children are "
                          "healthy",
                          "check", check)));
    } else if (older_problem(pl, inv, c, check)) {
        /* a problem older than the ring's baseline: followed */
    } else if (watch_start(pl, inv, c)) {
        json_decref(check); /* within reach: watched before a verdict */
    } else {
        char reason[1100];
        healthy_reason(inv, c, reason, sizeof reason);
        inv->mode = SEARCH_MODE_PROBLEM;
        adapt__fx_inv_problem(pl, inv->id, "none");
        snprintf(inv->focus, sizeof inv->focus, "%s", inv->node);
        adapt__healthy(pl, inv, reason, json_pack("{s:o}", "check", check));
    }
}

/* One window of an investigation that observes its node. */
static void observe(struct plan *pl, struct investigation *inv) {
    struct probe *p = adapt__probe(pl->a, inv->node);
    struct search_check c;
    int64_t rfrom = pl->upto;
    adapt__check_node(pl, p, inv->eval_from, &c, &rfrom);
    int exhausted = inv->windows_waited + 1 >= pl->a->opt.investigation_windows;
    if (search_observe_ready(adapt__check_enough(pl, &c.recent), &c, exhausted)) {
        if (inv->watch_from && !inv->watch_done && watch_go_on(pl, inv, p, &c, &rfrom)) {
            return;
        }
        characterise(pl, inv, &c, rfrom);
        return;
    }
    if (adapt__no_data(pl, inv->node)) {
        return; /* its source is silent: wait for data rather than run out of time */
    }
    if (++inv->windows_waited < pl->a->opt.investigation_windows) {
        return;
    }
    adapt__inconclusive_no_data(pl, inv, &c);
}

void adapt__step(struct plan *pl, struct investigation *inv) {
    if (inv->mode == SEARCH_MODE_OBSERVE) {
        observe(pl, inv);
    } else {
        search(pl, inv);
    }
}
