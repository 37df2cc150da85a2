/*
 * investigate.c: investigations. Each holds a focus node and a search state (search/);
 * every window it gathers the focus's and its children's statistics since the last
 * expansion and asks the strategy what to do: enable children (an "expand" hypothesis
 * with its commands), wait for samples, or decide (descend into a child, localized,
 * diffuse, inconclusive). Once closed, and once its problem stayed away for
 * deescalate_windows windows, the probes it enabled are disabled again. A budget of
 * enabled probes and of instances per second pauses expansions (logged once).
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

/* A hypothesis of inv (its problem kind). */
static int64_t hypothesis(struct plan *pl, const struct investigation *inv, int64_t parent,
                          const char *node, const char *action, json_t *probes, json_t *stats,
                          const char *verdict) {
    return adapt__fx_hyp(pl, inv->id, parent, node, search_problem_name(inv->problem), action,
                         probes, stats, verdict);
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
}

struct investigation *adapt__open(struct plan *pl, const char *node, enum search_problem problem,
                                  enum search_strategy_id strategy, int64_t trigger_id,
                                  const char *who) {
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
    snprintf(inv->node, sizeof inv->node, "%s", node);
    inv->problem = problem;
    inv->strategy = strategy;
    inv->trigger_id = trigger_id;
    struct store_investigation row = {.node = node,
                                      .problem = search_problem_name(problem),
                                      .strategy = search_strategy_name(strategy),
                                      .origin = trigger_id ? "trigger" : "person",
                                      .trigger_id = trigger_id,
                                      .requested_by = who};
    inv->id = adapt__fx_inv_open(pl, &row);
    if (!inv->id) {
        adapt__inv_free(inv);
        dq_fail(DQ_ENOMEM, "no memory for an investigation");
        return NULL;
    }
    struct node_stats ns;
    adapt__gather(adapt__probe(pl->a, node), pl->upto - 3, pl->upto, &ns);
    json_t *stats =
        json_pack("{s:o,s:s,s:s}", "node", adapt__stats_json(node, &ns.s), "origin",
                  trigger_id ? "trigger" : "person", "problem", search_problem_name(problem));
    if (who) {
        json_object_set_new(stats, "requested_by", json_string(who));
    }
    adapt__node_stats_release(&ns);
    int64_t hyp = hypothesis(pl, inv, 0, node, "root", NULL, stats, NULL);
    adapt__focus_on(pl->a, inv, node, hyp, pl->upto);
    st->inv[st->n_inv++] = inv;
    adapt__fx_log(pl, LOG_INFO, inv->id, " opened at %s (%s, %s, %s)", node,
                  search_problem_name(problem), search_strategy_name(strategy),
                  trigger_id ? "trigger" : "person");
    return inv;
}

/* ---- one step ---------------------------------------------------------------------------- */

/* Enables `name` for an investigation: dMax from its settings, else the focus's. */
static void enable_for(struct plan *pl, struct investigation *inv, const char *name,
                       const struct probe *focus, int64_t hyp) {
    struct probe *p = adapt__probe(pl->a, name);
    if (!p) {
        return;
    }
    if (adapt__plan_enabled(pl, p)) {
        /* enabled by another investigation: share it, so neither disables it under the
         * other; enabled by a person or the configuration: leave it theirs */
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
    if (!p->dmax_set && focus) {
        dmax = focus->dmax_ms;
        bins = focus->n;
    }
    adapt__own(inv, name);
    adapt__fx_change(pl, CORE_ENABLE, p, dmax, bins, hyp);
}

static json_t *attribution_json(const struct search_input *in, const struct search_result *r) {
    json_t *kids = json_array();
    for (size_t i = 0; i < in->n_children; i++) {
        const struct search_contribution *c = &r->attr.c[i];
        json_t *o = adapt__stats_json(in->children[i].name, &in->children[i].stats);
        if (c->included) {
            json_object_set_new(o, "contribution", json_real(c->value));
            json_object_set_new(o, "half_width", json_real(c->half_width));
            json_object_set_new(o, "share", json_real(c->share));
        }
        json_array_append_new(kids, o);
    }
    json_t *o =
        json_pack("{s:s,s:s,s:o,s:o}", "verdict", search_verdict_name(r->verdict), "reason",
                  r->reason, "focus", adapt__stats_json(in->name, &in->stats), "children", kids);
    if (r->attr.best >= 0 && r->attr.best < (int)in->n_children) {
        json_object_set_new(o, "best", json_string(in->children[r->attr.best].name));
        json_object_set_new(o, "dominant", json_boolean(r->attr.dominant));
    }
    if (isfinite(r->attr.covariance)) {
        json_object_set_new(o, "covariance", json_real(r->attr.covariance));
    }
    return o;
}

static void close_investigation(struct plan *pl, struct investigation *inv, const char *verdict,
                                const char *node, json_t *evidence) {
    json_t *summary =
        json_pack("{s:s,s:s,s:o}", "verdict", verdict, "node", node ? node : inv->focus, "evidence",
                  evidence ? evidence : json_null());
    /* the webhook carries the summary as stored (same rounding), not the live object */
    char *text = summary ? json_dumps(summary, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_error_t jerr;
    json_t *stored = text ? json_loads(text, 0, &jerr) : NULL;
    free(text);
    json_t *wh = json_pack("{s:s,s:s,s:o}", "node", inv->node, "verdict", verdict, "summary",
                           stored ? stored : json_null());
    adapt__fx_inv_close(pl, inv->id, verdict, node, summary);
    inv->state = INV_CLOSED;
    inv->quiet = 0;
    snprintf(inv->verdict_node, sizeof inv->verdict_node, "%s", node ? node : "");
    adapt__fx_log(pl, LOG_WARN, inv->id, " at %s: %s%s%s", inv->node, verdict, node ? " at " : "",
                  node ? node : "");
    adapt__fx_webhook(pl, "verdict", wh, 1, inv->id);
}

/* The search input for the focus of inv. */
struct focus_input {
    struct search_input in;
    struct search_child kids[SEARCH_MAX_CHILDREN];
    struct node_stats kstats[SEARCH_MAX_CHILDREN];
    struct node_stats xstats;
    int kid_nodes[SEARCH_MAX_CHILDREN];
};

static void focus_input_release(struct focus_input *fi) {
    adapt__node_stats_release(&fi->xstats);
    for (size_t i = 0; i < fi->in.n_children; i++) {
        adapt__node_stats_release(&fi->kstats[i]);
    }
}

/* A choice's weights: a branch's weight goes to every probe on that branch (a chain
 * branch has several). */
static void choice_weights(const struct dq_diagram *g, const struct dq_diagram_node *node,
                           struct focus_input *fi, size_t n) {
    for (size_t b = 0; b < node->n_children; b++) {
        int br = node->children[b];
        int on[SEARCH_MAX_CHILDREN];
        size_t non = 0;
        const struct dq_diagram_node *bn = dq_diagram_node(g, br);
        if (bn && bn->name && bn->kind != DQ_NODE_REFERENCE) {
            on[non++] = br;
        } else {
            non = dq_diagram_probe_children(g, br, on, SEARCH_MAX_CHILDREN);
            if (bn && bn->kind == DQ_NODE_REFERENCE) {
                on[0] = bn->target;
                non = 1;
            }
        }
        for (size_t k = 0; k < non && k < SEARCH_MAX_CHILDREN; k++) {
            for (size_t j = 0; j < n; j++) {
                if (fi->kid_nodes[j] == on[k]) {
                    fi->kids[j].weight = node->weights[b];
                }
            }
        }
    }
}

static int build_input(struct plan *pl, const struct investigation *inv, struct focus_input *fi) {
    struct adapt *a = pl->a;
    const struct dq_diagram *g = core_diagram(a->env.core);
    memset(&fi->in, 0, sizeof fi->in);
    int i = g ? dq_diagram_find(g, inv->focus) : -1;
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "%s is no longer in the diagram", inv->focus);
    }
    const struct dq_diagram_node *node = dq_diagram_node(g, i);
    size_t n = dq_diagram_probe_children(g, i, fi->kid_nodes, SEARCH_MAX_CHILDREN);
    if (n == 0 || n > SEARCH_MAX_CHILDREN) {
        return dq_fail(DQ_EINVAL, "%s has %zu children", inv->focus, n);
    }
    adapt__gather(adapt__probe(a, inv->focus), inv->eval_from, pl->upto, &fi->xstats);
    for (size_t j = 0; j < n; j++) {
        const struct dq_diagram_node *kid = dq_diagram_node(g, fi->kid_nodes[j]);
        struct probe *kp = adapt__probe(a, kid->name);
        struct search_child *c = &fi->kids[j];
        memset(c, 0, sizeof *c);
        c->name = kid->name;
        c->has_children = dq_diagram_probe_children(g, fi->kid_nodes[j], NULL, 0) > 0;
        c->enabled = kp && adapt__plan_enabled(pl, kp);
        c->weight = 0.0;
        adapt__gather(c->enabled ? kp : NULL, inv->eval_from, pl->upto, &fi->kstats[j]);
        c->stats = fi->kstats[j].s;
    }
    if (node->kind == DQ_NODE_CHOICE && node->weights) {
        choice_weights(g, node, fi, n);
    }
    fi->in.name = inv->focus;
    fi->in.kind = node->kind == DQ_NODE_REFERENCE ? DQ_NODE_SEQUENCE : node->kind;
    fi->in.problem = inv->problem;
    fi->in.stats = fi->xstats.s;
    fi->in.children = fi->kids;
    fi->in.n_children = n;
    fi->in.exhausted = inv->windows_waited >= a->opt.investigation_windows;
    return DQ_OK;
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
        hypothesis(pl, inv, inv->hyp_id, inv->focus, "share", names,
                   json_pack("{s:s}", "reason",
                             "children another investigation enabled: kept while either needs "
                             "them"),
                   NULL);
    }
}

static void aborted(struct plan *pl, struct investigation *inv) {
    close_investigation(pl, inv, "aborted", NULL, json_pack("{s:s}", "error", dq_last_error()));
}

/* SEARCH_ENABLE: expand the focus, unless the budget says pause. */
static void expand(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                   const struct search_step *step) {
    struct adapt *a = pl->a;
    struct adapt_state *st = &pl->next;
    size_t after = adapt__plan_enabled_count(pl) + step->n_enable;
    int max = a->opt.max_enabled_probes;
    if (st->congested || (max > 0 && after > (size_t)max)) {
        if (!inv->paused) {
            inv->paused = 1;
            json_t *why =
                json_pack("{s:s,s:f,s:f,s:i,s:i}", "reason",
                          st->congested ? "ingest above 50 % of the instance budget"
                                        : "enabling would exceed the probe budget",
                          "rate", st->rate, "max_rate", a->opt.max_instances_per_second, "enabled",
                          (int)adapt__plan_enabled_count(pl), "max_enabled", max);
            hypothesis(pl, inv, inv->hyp_id, inv->focus, "pause", NULL, why, NULL);
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
    int64_t hyp = hypothesis(pl, inv, inv->hyp_id, inv->focus, "expand", names, stats, NULL);
    const struct probe *focus = adapt__probe(a, inv->focus);
    for (size_t j = 0; j < step->n_enable; j++) {
        enable_for(pl, inv, fi->kids[step->enable[j]].name, focus, hyp);
    }
    inv->hyp_id = hyp ? hyp : inv->hyp_id;
    /* fresh windows for every compared node: the first that starts after the commands */
    inv->eval_from = core_window_of(a->env.core, clock_now(a->env.clock)) + 1;
    inv->windows_waited = 0;
    adapt__fx_log(pl, LOG_INFO, inv->id, ": enabled %zu probe(s) under %s", step->n_enable,
                  inv->focus);
}

/* SEARCH_DECIDED: descend, or close with a verdict. */
static void decided(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                    const struct search_result *r) {
    json_t *ev = attribution_json(&fi->in, r);
    int child = r->child;
    const char *child_name = child >= 0 ? fi->kids[child].name : NULL;
    switch (r->verdict) {
    case SEARCH_DESCEND: {
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
        int64_t hyp = hypothesis(pl, inv, inv->hyp_id, child_name, "descend", json_array(),
                                 json_pack("{s:s,s:o}", "reason", r->reason, "evidence", ev), NULL);
        adapt__focus_on(pl->a, inv, child_name, hyp ? hyp : inv->hyp_id, pl->upto);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": descending into %s", child_name);
        break;
    }
    case SEARCH_LOCALIZED:
        inv->verdict_value = r->attr.c[child].value;
        inv->runner_value = r->attr.runner_up >= 0 ? r->attr.c[r->attr.runner_up].value : 0.0;
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "localized");
        hypothesis(pl, inv, inv->hyp_id, child_name, "verdict", NULL,
                   json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "localized");
        close_investigation(pl, inv, "localized", child_name, ev);
        break;
    case SEARCH_DIFFUSE:
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "diffuse");
        hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                   json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "diffuse");
        close_investigation(pl, inv, "diffuse", inv->focus, ev);
        break;
    default:
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "inconclusive");
        hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                   json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "inconclusive");
        close_investigation(pl, inv, "inconclusive", inv->focus, ev);
        break;
    }
}

void adapt__step(struct plan *pl, struct investigation *inv) {
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_step *step = calloc(1, sizeof *step);
    if (!fi || !step) {
        free(fi);
        free(step);
        pl->failed = 1;
        return;
    }
    int rc = build_input(pl, inv, fi);
    if (rc) {
        aborted(pl, inv);
        goto out;
    }
    share_children(pl, inv, fi);
    inv->windows_waited++;
    struct search_params params = pl->a->params;
    if (inv->problem == SEARCH_VARIANCE && params.min_windows < 4) {
        /* spread shows in rare outliers: give every child enough windows to show them */
        params.min_windows = 4;
    }
    rc = search_step(&fi->in, &params, &inv->st, step);
    if (rc) {
        aborted(pl, inv);
        goto out;
    }
    if (step->action == SEARCH_ENABLE) {
        expand(pl, inv, fi, step);
    } else if (step->action == SEARCH_DECIDED) {
        decided(pl, inv, fi, &step->result);
    }
out:
    focus_input_release(fi);
    free(fi);
    free(step);
}

/* ---- de-escalation ---------------------------------------------------------------------- */

/*
 * 1 when the problem of a closed investigation is still there. Trigger-started: while
 * its trigger is fired. Localized by a person: while the localized child's contribution
 * over the last windows stays above the midpoint between what it was at the verdict and
 * what the runner-up had then (a fault that goes away brings it back below). Otherwise
 * (diffuse, inconclusive, or resumed after a restart without those numbers): never.
 */
static int problem_persists(struct plan *pl, const struct investigation *inv) {
    const struct adapt_state *st = &pl->next;
    if (inv->trigger_id) {
        for (int i = 0; i < st->n_triggers; i++) {
            if (st->triggers[i].id == inv->trigger_id) {
                return st->triggers[i].fired;
            }
        }
        return 0;
    }
    if (!inv->verdict_node[0] || !core_diagram(pl->a->env.core) || !isfinite(inv->verdict_value) ||
        !isfinite(inv->runner_value)) {
        return 0;
    }
    struct investigation probe_inv = *inv;
    probe_inv.eval_from = pl->upto - 3;
    probe_inv.windows_waited = 0;
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_attribution *attr = calloc(1, sizeof *attr);
    unsigned char *include = calloc(SEARCH_MAX_CHILDREN, 1);
    int persists = 0;
    if (fi && attr && include && build_input(pl, &probe_inv, fi) == DQ_OK) {
        for (size_t j = 0; j < fi->in.n_children; j++) {
            if (strcmp(fi->kids[j].name, inv->verdict_node) != 0) {
                continue;
            }
            const struct search_stats *s = &fi->kids[j].stats;
            if (!s->present || search_stats_instances(s) < 10) {
                break; /* no evidence left: the problem is not shown to be there */
            }
            include[j] = 1;
            if (search_attribute(&fi->in, &pl->a->params, include, attr) == DQ_OK &&
                attr->c[j].included) {
                double mid = 0.5 * (inv->verdict_value + inv->runner_value);
                persists = attr->c[j].value > mid;
            }
            break;
        }
    }
    if (fi) {
        focus_input_release(fi);
    } else {
        pl->failed = 1;
    }
    free(fi);
    free(attr);
    free(include);
    return persists;
}

int adapt__deescalate(struct plan *pl, struct investigation *inv) {
    if (problem_persists(pl, inv)) {
        inv->quiet = 0;
        return 0;
    }
    if (++inv->quiet < pl->a->opt.deescalate_windows) {
        return 0;
    }
    struct adapt_state *st = &pl->next;
    struct probe *release[ADAPT_MAX_OWNED];
    int n = 0;
    json_t *names = json_array();
    for (int i = 0; i < inv->n_owned; i++) {
        struct probe *p = adapt__probe(pl->a, inv->owned[i]);
        int shared = 0;
        for (int j = 0; j < st->n_inv; j++) {
            struct investigation *o = st->inv[j];
            shared |= o != inv && adapt__owns(o, inv->owned[i]) &&
                      (o->state == INV_SEARCHING || problem_persists(pl, o));
        }
        if (!p || !adapt__plan_enabled(pl, p) || p->always_on || shared) {
            continue;
        }
        json_array_append_new(names, json_string(p->name));
        release[n++] = p;
    }
    json_t *stats = json_pack("{s:s,s:i}", "reason",
                              "the problem stayed away; disabling what the investigation enabled",
                              "quiet_windows", inv->quiet);
    int64_t hyp = hypothesis(pl, inv, inv->hyp_id, inv->node, "disable", names, stats, NULL);
    for (int i = 0; i < n; i++) {
        adapt__fx_change(pl, CORE_DISABLE, release[i], 0.0, 0, hyp);
    }
    adapt__fx_log(pl, LOG_INFO, inv->id, ": de-escalated (%d probe(s) disabled)", n);
    return 1;
}
