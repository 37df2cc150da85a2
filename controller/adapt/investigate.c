/*
 * investigate.c: investigations, from the opening to the verdict.
 *
 * A person's investigation first *observes* its node: a node without recent statistics
 * is enabled (with its children when the budget allows) and the problem kind is decided
 * from data once the node has the minimum samples (the node check, stats.c): the most
 * significant problem is followed and the others are listed with the verdict. Nothing
 * abnormal against a QTA or a baseline → *healthy*, and what the investigation enabled
 * is released at once. No reference at all (no QTA, no baseline yet) → the search
 * follows the largest contributor to the node's time or spread, and balanced children
 * are healthy too. A trigger's investigation knows its problem from the trigger.
 *
 * Then it *searches*: every window it gathers the focus's and its children's statistics
 * since the last expansion and asks the strategy what to do: enable children (an
 * "expand" hypothesis with its commands), wait for samples, or decide (descend into a
 * child, localized, diffuse, inconclusive, healthy). A verdict is acted on only once the
 * same verdict held ADAPT_CONFIRM evaluations in a row, so near-ties do not flip from run
 * to run. A budget of enabled probes and of instances per second pauses expansions
 * (logged once).
 *
 * Everything here only decides: it changes the round's next state and adds effects.
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* Verdicts beyond search's own: healthy (nothing abnormal, or balanced without a
 * reference). */
#define VERDICT_HEALTHY 100
#define VERDICT_OVERLOAD 101
#define OVERLOAD_PRECISION 0.07 /* the bottleneck's ρ half-width an overload verdict needs */
#define OVERLOAD_MIN_WINDOWS 6  /* … and the windows each stage is measured over at least */

int adapt__load_shaped(int problem) {
    return problem == SEARCH_LATENCY || problem == SEARCH_QTA || problem == SEARCH_VARIANCE;
}

const char *adapt__problem_name(const struct investigation *inv) {
    return inv->characterised ? search_problem_name(inv->problem) : "unknown";
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
    inv->pending_count = 0;
}

/* "variance, divergence": the problems the check saw besides the one followed. */
static void set_also(struct investigation *inv, const struct adapt_check *c) {
    inv->also[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < c->n; i++) {
        const char *name = search_problem_name(c->p[i].kind);
        if (inv->characterised && c->p[i].kind == inv->problem) {
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
    inv->characterised = o->problem >= 0;
    inv->problem = o->problem >= 0 ? (enum search_problem)o->problem : SEARCH_LATENCY;
    inv->phase = inv->characterised ? PHASE_SEARCH : PHASE_OBSERVE;
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
    struct adapt_check c;
    adapt__check_node(pl, p, 0, &c);
    set_also(inv, &c);
    json_t *stats = json_pack("{s:o,s:s,s:s,s:o}", "node", adapt__stats_json(o->node, &c.recent),
                              "origin", o->trigger_id ? "trigger" : "person", "problem",
                              adapt__problem_name(inv), "check", adapt__check_json(o->node, &c));
    if (o->who) {
        json_object_set_new(stats, "requested_by", json_string(o->who));
    }
    /* overload: asked for, or a trigger's delay problem that rises with the arrivals */
    inv->overload = o->overload;
    char load_why[200] = "";
    if (!inv->overload && o->trigger_id && adapt__load_shaped(o->problem) &&
        adapt__load_rose(pl, p, &c, 3, load_why, sizeof load_why)) {
        inv->overload = 1;
        json_object_set_new(stats, "overload_why", json_string(load_why));
    }
    if (inv->overload) {
        json_object_set_new(stats, "overload", json_true());
    }
    if (o->follows) {
        json_object_set_new(stats, "follows", json_integer(o->follows));
        json_object_set_new(stats, "reason", json_string(o->why ? o->why : ""));
    }
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

int adapt__observe_start(struct plan *pl, struct investigation *inv) {
    struct adapt *a = pl->a;
    struct probe *p = adapt__probe(a, inv->node);
    struct adapt_check c;
    adapt__check_node(pl, p, 0, &c);
    if (p && adapt__plan_enabled(pl, p) && adapt__check_enough(pl, &c.recent)) {
        inv->eval_from = 0; /* the check picks its windows from the node's history */
        return 1;           /* the node has data: it can be characterised now */
    }
    /* no recent statistics: enable the node, and its children when the budget allows, so
     * that they report over the same windows */
    const struct dq_diagram *g = core_diagram(a->env.core);
    int node = g ? dq_diagram_find(g, inv->node) : -1;
    int kids[SEARCH_MAX_CHILDREN];
    size_t n = node >= 0 ? dq_diagram_probe_children(g, node, kids, SEARCH_MAX_CHILDREN) : 0;
    size_t more = (p && !adapt__plan_enabled(pl, p)) + n;
    int with_children = n > 0 && budget_allows(pl, more);
    json_t *names = json_array();
    if (p && !adapt__plan_enabled(pl, p)) {
        json_array_append_new(names, json_string(inv->node));
    }
    for (size_t j = 0; with_children && j < n && j < SEARCH_MAX_CHILDREN; j++) {
        struct probe *kp = adapt__probe(a, dq_diagram_node(g, kids[j])->name);
        if (kp && !adapt__plan_enabled(pl, kp)) {
            json_array_append_new(names, json_string(kp->name));
        }
    }
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

/* ---- the search input -------------------------------------------------------------------- */

void adapt__focus_input_release(struct focus_input *fi) {
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

/*
 * A node's baseline for the attribution: its own windows before `from` (up to
 * ADAPT_BASELINE_SPAN of them), when there are ADAPT_BASELINE_WINDOWS with data. When
 * every child has one, the search weighs each child's excess over it.
 */
static void set_baseline(const struct probe *p, int64_t from, struct search_stats *s) {
    struct node_stats b;
    adapt__gather(p, from - ADAPT_BASELINE_SPAN, from, &b);
    if (b.s.present && b.s.windows >= ADAPT_BASELINE_WINDOWS && b.s.n_ok > 1) {
        s->has_baseline = 1;
        s->base_mean = b.s.mean;
        s->base_variance = b.s.variance;
        s->base_lost = search_stats_lost(&b.s);
        s->base_n = b.s.n_ok;
    }
    adapt__node_stats_release(&b);
}

int adapt__build_input(struct plan *pl, const struct investigation *inv, int64_t from,
                       struct focus_input *fi) {
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
    struct probe *fp = adapt__probe(a, inv->focus);
    adapt__gather(fp, from, pl->upto, &fi->xstats);
    set_baseline(fp, from, &fi->xstats.s);
    for (size_t j = 0; j < n; j++) {
        const struct dq_diagram_node *kid = dq_diagram_node(g, fi->kid_nodes[j]);
        struct probe *kp = adapt__probe(a, kid->name);
        struct search_child *c = &fi->kids[j];
        memset(c, 0, sizeof *c);
        c->name = kid->name;
        c->has_children = dq_diagram_probe_children(g, fi->kid_nodes[j], NULL, 0) > 0;
        c->enabled = kp && adapt__plan_enabled(pl, kp);
        c->weight = 0.0;
        adapt__gather(c->enabled ? kp : NULL, from, pl->upto, &fi->kstats[j]);
        if (c->enabled) {
            set_baseline(kp, from, &fi->kstats[j].s);
        }
        c->stats = fi->kstats[j].s;
    }
    /* a QTA problem: attribute the violated quantile (sequences) */
    if (inv->problem == SEARCH_QTA && fp && fp->has_qta && fi->xstats.obs) {
        struct dq_qta_result q;
        if (dq_qta_eval(fi->xstats.obs, &fp->qta, &q) == DQ_OK && !q.ok && q.worst >= 0) {
            fi->in.qta_p = fp->qta.p[q.worst];
        }
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
        adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "share", names,
                          json_pack("{s:s}", "reason",
                                    "children another investigation enabled: kept while "
                                    "either needs them"),
                          NULL);
    }
}

/* ---- verdicts ------------------------------------------------------------------------------ */

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
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o}", "verdict", search_verdict_name(r->verdict),
                          "problem", search_problem_name(r->attr.problem), "reason", r->reason,
                          "focus", adapt__stats_json(in->name, &in->stats), "children", kids);
    if (r->attr.best >= 0 && r->attr.best < (int)in->n_children) {
        json_object_set_new(o, "best", json_string(in->children[r->attr.best].name));
        json_object_set_new(o, "dominant", json_boolean(r->attr.dominant));
    }
    if (isfinite(r->attr.explained)) {
        json_object_set_new(o, "explained", json_real(r->attr.explained));
    }
    if (isfinite(r->attr.remainder)) {
        json_object_set_new(o, "remainder", json_real(r->attr.remainder));
        json_object_set_new(o, "remainder_half_width", json_real(r->attr.remainder_half_width));
    }
    if (isfinite(r->attr.covariance)) {
        json_object_set_new(o, "covariance", json_real(r->attr.covariance));
    }
    return o;
}

void adapt__close(struct plan *pl, struct investigation *inv, const char *verdict, const char *node,
                  json_t *evidence) {
    json_t *summary =
        json_pack("{s:s,s:s,s:o}", "verdict", verdict, "node", node ? node : inv->focus, "evidence",
                  evidence ? evidence : json_null());
    if (inv->also[0]) {
        json_object_set_new(summary, "also", json_string(inv->also));
    }
    if (inv->contributor) {
        json_object_set_new(summary, "mode", json_string("contributor"));
    }
    const char *on =
        json_string_value(json_object_get(json_object_get(evidence, "node_split"), "node"));
    if (on) {
        json_object_set_new(summary, "on_node", json_string(on));
    }
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
    snprintf(inv->verdict, sizeof inv->verdict, "%s", verdict);
    adapt__fx_log(pl, LOG_WARN, inv->id, " at %s: %s%s%s", inv->node, verdict, node ? " at " : "",
                  node ? node : "");
    adapt__fx_webhook(pl, "verdict", wh, 1, inv->id);
}

static void aborted_on_error(struct plan *pl, struct investigation *inv) {
    adapt__close(pl, inv, "aborted", NULL, json_pack("{s:s}", "error", dq_last_error()));
    adapt__release(pl, inv, "aborted on an error: releasing what it enabled");
}

/* Closes inv healthy (reason: one sentence) and releases what it enabled at once. */
static void healthy(struct plan *pl, struct investigation *inv, const char *reason,
                    json_t *evidence) {
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "healthy");
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                      json_pack("{s:s,s:O}", "reason", reason, "evidence", evidence), "healthy");
    json_object_set_new(evidence, "reason", json_string(reason));
    adapt__close(pl, inv, "healthy", inv->focus, evidence);
    adapt__release(pl, inv, "the verdict is healthy: releasing what the investigation enabled");
}

/* SEARCH_ENABLE: expand the focus, unless the budget says pause. */
static void expand(struct plan *pl, struct investigation *inv, struct focus_input *fi,
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
    inv->pending_count = 0;
    adapt__fx_log(pl, LOG_INFO, inv->id, ": enabled %zu probe(s) under %s", step->n_enable,
                  inv->focus);
}

/* ---- several nodes, one probe ---------------------------------------------------------- */

#define MAX_SPLIT PROBES_MAX_NODES + 1

/*
 * When several nodes (Erlang nodes, hosts) report probe `name`, its problem split by node
 * over windows ≥ from: each node's own mean, spread or lost fraction, compared by the
 * dominance rule. Returns the per-node numbers as JSON (NULL when the probe is not split)
 * and, when one node dominates, its name in `sick` and a sentence in `why`.
 */
static json_t *node_split(struct plan *pl, const char *name, enum search_problem prob, int64_t from,
                          char *sick, size_t sick_cap, char *why, size_t why_cap) {
    sick[0] = why[0] = '\0';
    struct probe_table *t = core_probes(pl->a->env.core);
    struct probe *p = adapt__probe(pl->a, name);
    int n = p ? probes_node_count(p) : 0;
    if (n < 2) {
        return NULL;
    }
    n = n > MAX_SPLIT ? MAX_SPLIT : n;
    struct search_child kids[MAX_SPLIT];
    memset(kids, 0, sizeof kids);
    for (int i = 0; i < n; i++) {
        kids[i].name = probes_node_name(t, p, i);
        kids[i].enabled = 1;
        search_stats_init(&kids[i].stats);
        for (int64_t w = from; w < pl->upto; w++) {
            struct probe_node_moments m;
            if (probes_node_moments(p, i, w, &m) == DQ_OK && m.ok + m.fa + m.to + m.out > 0) {
                search_stats_add_window(&kids[i].stats, m.ok, m.fa, m.to + m.out, m.mean,
                                        m.variance);
            }
        }
    }
    /* each node's own quantity; for a spread, each node's part of the pooled variance
     * (a choice among the nodes, weighted by their instances: w·(σ² + (μ − μ̄)²)), so a
     * node that is slower, not more erratic, still stands out */
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        total += (double)search_stats_instances(&kids[i].stats);
    }
    for (int i = 0; i < n; i++) {
        kids[i].weight = total > 0 ? (double)search_stats_instances(&kids[i].stats) / total : 0.0;
    }
    struct search_input in = {
        .name = name,
        .kind = prob == SEARCH_VARIANCE ? DQ_NODE_CHOICE : DQ_NODE_SEQUENCE,
        .problem = prob == SEARCH_QTA || prob == SEARCH_DIVERGENCE ? SEARCH_LATENCY : prob,
        .children = kids,
        .n_children = (size_t)n};
    search_stats_init(&in.stats);
    unsigned char include[MAX_SPLIT];
    int weighed = 0;
    for (int i = 0; i < n; i++) {
        include[i] = kids[i].stats.present &&
                     search_stats_instances(&kids[i].stats) >= pl->a->params.min_instances;
        weighed += include[i];
    }
    json_t *nodes = json_array();
    struct search_attribution *a = weighed >= 2 ? calloc(1, sizeof *a) : NULL;
    if (a && search_attribute(&in, &pl->a->params, include, a) == DQ_OK && a->dominant) {
        const struct search_contribution *b = &a->c[a->best];
        snprintf(sick, sick_cap, "%s", kids[a->best].name);
        double f = in.problem == SEARCH_LOST ? 100.0 : (in.problem == SEARCH_VARIANCE ? 1e6 : 1e3);
        const char *unit =
            in.problem == SEARCH_LOST ? "%" : (in.problem == SEARCH_VARIANCE ? "ms²" : "ms");
        const char *what = in.problem == SEARCH_LOST ? "lost"
                           : in.problem == SEARCH_VARIANCE
                               ? "part of the spread (w·(σ² + (μ − μ̄)²))"
                               : "mean latency";
        if (a->runner_up >= 0) {
            const struct search_contribution *r = &a->c[a->runner_up];
            snprintf(why, why_cap,
                     "on node %s: %s's %s there is %.3g %s ± %.2g, against %.3g %s ± %.2g on %s "
                     "(the next node)",
                     sick, name, what, b->value * f, unit, b->half_width * f, r->value * f, unit,
                     r->half_width * f, kids[a->runner_up].name);
        }
    }
    for (int i = 0; i < n; i++) {
        json_t *o = adapt__stats_json(kids[i].name, &kids[i].stats);
        if (a && a->c[i].included) {
            json_object_set_new(o, "contribution", json_real(a->c[i].value));
            json_object_set_new(o, "half_width", json_real(a->c[i].half_width));
        }
        json_array_append_new(nodes, o);
    }
    free(a);
    return nodes;
}

/* Adds the node split of `probe` to a verdict's evidence (and its sentence to reason). */
static void add_node_split(struct plan *pl, struct investigation *inv, const char *probe,
                           json_t *ev, char *reason, size_t cap, char *sick, size_t sick_cap) {
    char why[600];
    json_t *nodes =
        node_split(pl, probe, inv->problem, inv->eval_from, sick, sick_cap, why, sizeof why);
    if (!nodes) {
        return;
    }
    json_t *o = json_pack("{s:s,s:o}", "probe", probe, "nodes", nodes);
    if (sick[0]) {
        json_object_set_new(o, "node", json_string(sick));
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len, "; %s", why);
    }
    json_object_set_new(ev, "node_split", o);
}

/* 1 when dqd knows `name` but no instance of it arrived since it started (or it is not
 * even a probe dqd knows). */
static int never_reported(struct plan *pl, const char *name) {
    const struct probe *p = adapt__probe(pl->a, name);
    return !p || p->total_ok + p->total_fa + p->total_to + p->late == 0;
}

/*
 * "b never reported any instance: is it instrumented? " in front of an inconclusive reason,
 * for the children of the focus (or the node itself when names is NULL) that never
 * reported: an outcome of the diagram that no wrapper measures can never give statistics,
 * and waiting for them is not the problem to report.
 */
static void say_never_reported(struct plan *pl, const struct focus_input *fi, const char *node,
                               char *reason, size_t cap) {
    char names[600] = "";
    size_t len = 0, n = 0;
    if (fi) {
        for (size_t i = 0; i < fi->in.n_children; i++) {
            if (fi->kids[i].name && never_reported(pl, fi->kids[i].name)) {
                int w = snprintf(names + len, sizeof names - len, "%s%s", n ? ", " : "",
                                 fi->kids[i].name);
                len = w > 0 && len + (size_t)w < sizeof names ? len + (size_t)w : len;
                n++;
            }
        }
    } else if (never_reported(pl, node)) {
        snprintf(names, sizeof names, "%s", node);
        n = 1;
    }
    if (n == 0) {
        return;
    }
    char *old = strdup(reason);
    if (!old) {
        return;
    }
    snprintf(reason, cap,
             "%s never reported any instance since dqd started: %s instrumented? (a node of the "
             "diagram that no wrapper reports can give no statistics) %s",
             names, n == 1 ? "is it" : "are they", old);
    free(old);
}

/* SEARCH_DECIDED: descend, or close with a verdict. */
static void decided(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                    const struct search_result *r) {
    json_t *ev = attribution_json(&fi->in, r);
    int child = r->child;
    const char *child_name = child >= 0 ? fi->kids[child].name : NULL;
    char reason[SEARCH_REASON_MAX + 900];
    snprintf(reason, sizeof reason, "%s%s",
             inv->contributor && r->verdict == SEARCH_LOCALIZED
                 ? "the largest contributor, nothing to judge it against (no QTA, no baseline "
                   "yet): "
                 : "",
             r->reason);
    json_object_set_new(ev, "reason", json_string(reason));
    switch (r->verdict) {
    case SEARCH_DESCEND: {
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
        int64_t hyp =
            adapt__hypothesis(pl, inv, inv->hyp_id, child_name, "descend", json_array(),
                              json_pack("{s:s,s:o}", "reason", reason, "evidence", ev), NULL);
        adapt__focus_on(pl->a, inv, child_name, hyp ? hyp : inv->hyp_id, pl->upto);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": descending into %s", child_name);
        break;
    }
    case SEARCH_LOCALIZED: {
        inv->verdict_value = r->attr.c[child].value;
        inv->runner_value = r->attr.runner_up >= 0 ? r->attr.c[r->attr.runner_up].value : 0.0;
        char sick[PROBES_LABEL_MAX];
        add_node_split(pl, inv, child_name, ev, reason, sizeof reason, sick, sizeof sick);
        json_object_set_new(ev, "reason", json_string(reason));
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "localized");
        adapt__hypothesis(pl, inv, inv->hyp_id, child_name, "verdict", NULL,
                          json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), "localized");
        adapt__close(pl, inv, "localized", child_name, ev);
        break;
    }
    case SEARCH_DIFFUSE: {
        /* spread over the children, but maybe held by one node: then it is that node's */
        char sick[PROBES_LABEL_MAX];
        char *diffuse = malloc(sizeof reason);
        if (diffuse) {
            snprintf(diffuse, sizeof reason, "%s", reason);
        }
        add_node_split(pl, inv, inv->focus, ev, reason, sizeof reason, sick, sizeof sick);
        if (sick[0] && diffuse) {
            const char *on = strstr(reason, "; on node ");
            const char *rest = strstr(diffuse, ": ");
            snprintf(reason, sizeof reason, "localized at %s, on node %s; over all nodes, %s",
                     inv->focus, on ? on + 10 : sick, rest ? rest + 2 : diffuse);
        }
        free(diffuse);
        json_object_set_new(ev, "reason", json_string(reason));
        const char *verdict = sick[0] ? "localized" : "diffuse";
        adapt__fx_hyp_verdict(pl, inv->hyp_id, verdict);
        adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                          json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), verdict);
        adapt__close(pl, inv, verdict, inv->focus, ev);
        break;
    }
    default:
        say_never_reported(pl, fi, inv->focus, reason, sizeof reason);
        json_object_set_new(ev, "reason", json_string(reason));
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "inconclusive");
        adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                          json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), "inconclusive");
        adapt__close(pl, inv, "inconclusive", inv->focus, ev);
        break;
    }
}

/*
 * 1 when `verdict` (and child) held for ADAPT_CONFIRM evaluations in a row, counting this
 * one. An inconclusive verdict needs no confirmation: time is up.
 */
static int confirmed(const struct plan *pl, struct investigation *inv, int verdict, int child) {
    if (verdict == SEARCH_INCONCLUSIVE) {
        return 1;
    }
    if (pl->wid < 0) {
        return 0; /* a person's action brings no new window: nothing to confirm with */
    }
    if (inv->pending_count > 0 && inv->pending_verdict == verdict && inv->pending_child == child) {
        inv->pending_count++;
    } else {
        inv->pending_verdict = verdict;
        inv->pending_child = child;
        inv->pending_count = 1;
        inv->pending_from = pl->upto; /* fresh windows start after this evaluation */
    }
    return inv->pending_count >= ADAPT_CONFIRM;
}

/* How concentrated a dominant attribution is: the leader's contribution over the
 * runner-up's (a stage that holds nine times its sibling's spread says more than one
 * that holds three times its mean). */
static double concentration(const struct search_attribution *a) {
    if (a->best < 0) {
        return 0.0;
    }
    const struct search_contribution *b = &a->c[a->best];
    if (a->runner_up < 0 || !(a->c[a->runner_up].value > 0.0)) {
        return 1e9;
    }
    return b->value / a->c[a->runner_up].value;
}

/* "a 34 %, b 33 %, c 33 %": where a node's time goes, largest first (at most 6). */
static void where_it_goes(const struct search_input *in, const struct search_attribution *a,
                          char *buf, size_t cap) {
    unsigned char used[SEARCH_MAX_CHILDREN] = {0};
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < 6; k++) {
        int best = -1;
        for (size_t i = 0; i < in->n_children; i++) {
            if (a->c[i].included && !used[i] &&
                (best < 0 || a->c[i].value > a->c[(size_t)best].value)) {
                best = (int)i;
            }
        }
        if (best < 0) {
            break;
        }
        used[best] = 1;
        int w = snprintf(buf + len, cap - len, "%s%s %.0f %%", len ? ", " : "",
                         in->children[best].name ? in->children[best].name : "?",
                         100.0 * a->c[best].share);
        if (w < 0 || (size_t)w >= cap - len) {
            break;
        }
        len += (size_t)w;
    }
}

/* 1 when a verdict names a child (descend or localized). */
static int names_child(int verdict) {
    return verdict == SEARCH_DESCEND || verdict == SEARCH_LOCALIZED;
}

/*
 * No reference to judge the focus against: follow where its time goes. The largest
 * contributor to its mean latency, or, when the focus itself lost instances, to its lost
 * mass (whichever is the more concentrated in one child: the leader over the runner-up).
 * Only when the time is balanced does the spread speak: a child that holds the spread of
 * its siblings (each branch's own spread, on a choice) is followed. Balanced in all →
 * healthy. `lat` is the latency evaluation the strategy made. Returns the verdict
 * (search's, or VERDICT_HEALTHY) with the result to act on in *out.
 */
static int contributor_decide(struct investigation *inv, struct focus_input *fi,
                              const struct search_params *params, const struct search_result *lat,
                              struct search_result *out) {
    *out = *lat;
    inv->problem = SEARCH_LATENCY;
    struct search_result *alt = calloc(1, sizeof *alt);
    if (!alt) {
        return SEARCH_NEED_SAMPLES;
    }
    /* failures and spread show in rare events: every child needs enough windows */
    struct search_params slow = *params;
    slow.min_windows = slow.min_windows < 4 ? 4 : slow.min_windows;
    int verdict = lat->verdict;
    if (search_stats_lost(&fi->in.stats) > 0.0) {
        fi->in.problem = SEARCH_LOST;
        int rc = search_evaluate(&fi->in, &slow, alt);
        fi->in.problem = SEARCH_LATENCY;
        if (rc == DQ_OK && alt->verdict == SEARCH_NEED_SAMPLES && !fi->in.exhausted) {
            free(alt);
            return SEARCH_NEED_SAMPLES; /* both weighed over the same windows */
        }
        if (rc == DQ_OK && names_child(alt->verdict) &&
            (!names_child(verdict) || concentration(&alt->attr) > concentration(&lat->attr))) {
            *out = *alt;
            inv->problem = SEARCH_LOST;
            verdict = alt->verdict;
        }
    }
    if (names_child(verdict) || verdict == SEARCH_NEED_SAMPLES) {
        free(alt);
        return verdict;
    }
    /* the time is balanced (or the search is out of time): the spread */
    fi->in.problem = SEARCH_VARIANCE;
    fi->in.own_spread = 1;
    int rc = search_evaluate(&fi->in, &slow, alt);
    fi->in.problem = SEARCH_LATENCY;
    fi->in.own_spread = 0;
    if (rc == DQ_OK && (names_child(alt->verdict) || alt->verdict == SEARCH_NEED_SAMPLES)) {
        if (names_child(alt->verdict)) {
            *out = *alt;
            inv->problem = SEARCH_VARIANCE;
        }
        verdict = alt->verdict;
        free(alt);
        return verdict;
    }
    free(alt);
    if (verdict == SEARCH_INCONCLUSIVE) {
        return verdict;
    }
    char where[400];
    where_it_goes(&fi->in, &lat->attr, where, sizeof where);
    snprintf(out->reason, sizeof out->reason,
             "healthy at %s: nothing to judge it against (no QTA, no baseline yet) and no child "
             "dominates its time or its spread; where the time goes: %s",
             fi->in.name, where);
    return VERDICT_HEALTHY;
}

/* "worker_2: ρ 0.81 (0.74 – 0.88; busy time, 1 server assumed), service 4.05 ms, 198/s":
 * one stage in words. */
static void stage_words(const struct overload_stage *st, char *buf, size_t cap) {
    snprintf(buf, cap, "%s: ρ %.2f (%.2f – %.2f; %s, %d server%s%s), service %.3g ms, %.0f/s",
             st->name, st->rho, st->rho_lo, st->rho_hi,
             strcmp(st->method, "busy") == 0       ? "busy time"
             : strcmp(st->method, "baseline") == 0 ? "quiet-window service time"
                                                   : "M/M/c from Little's law",
             st->servers, st->servers == 1 ? "" : "s",
             strcmp(st->servers_from, "config") == 0     ? ""
             : strcmp(st->servers_from, "inferred") == 0 ? " inferred"
                                                         : " assumed",
             st->service * 1e3, st->lambda);
}

/* Appends printf-style text to buf (cap bytes), truncating safely. */
static void app(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void app(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strnlen(buf, cap);
    if (len + 1 >= cap) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Where an overload verdict sits: the bottleneck; co-bottlenecks, at the focus when they
 * are all its children, else at the investigation's node. */
static const char *overload_at(const struct investigation *inv, const struct overload_result *r) {
    if (r->n_co == 0) {
        return r->st[r->bottleneck].name;
    }
    int all_here = r->bottleneck >= r->first_current;
    for (int j = 0; j < r->first_current; j++) {
        all_here &= !r->st[j].co;
    }
    return all_here ? inv->focus : inv->node;
}

/* The sentence of an overload verdict or descent. */
static void overload_reason(const struct investigation *inv, const struct overload_result *r,
                            char *buf, size_t cap) {
    const struct overload_stage *b = &r->st[r->bottleneck];
    char words[400];
    stage_words(b, words, sizeof words);
    buf[0] = '\0';
    if (r->n_co > 0) {
        app(buf, cap, "overload at %s: co-bottlenecks %s", overload_at(inv, r), b->name);
        for (int j = 0; j < r->n; j++) {
            if (r->st[j].co) {
                app(buf, cap, ", %s (ρ %.2f)", r->st[j].name, r->st[j].rho);
            }
        }
        app(buf, cap, " (their ρ not clearly below the bottleneck's); %s", words);
    } else {
        app(buf, cap, "overload at %s: the bottleneck is %s", inv->node, words);
    }
    if (isfinite(r->saturation) && r->lambda_root > 0) {
        app(buf, cap, "; %s takes %.0f/s and saturates at %.0f/s (%.2f× today)", inv->node,
            r->lambda_root, r->saturation, r->saturation / r->lambda_root);
    }
    if (isfinite(r->qta_rate)) {
        app(buf, cap, "; its QTA fails %s %.0f/s",
            r->qta_rate <= r->lambda_root ? "already, at" : "from", r->qta_rate);
    }
    if (isfinite(r->onset)) {
        app(buf, cap, "; observed and calculated parted from %.0f/s", r->onset);
    }
}

/*
 * One step of an overload investigation: the focus's children (enabled as the `children`
 * strategy does, with 4 windows each) are its stages; the bottleneck is the stage with the
 * highest utilisation. A single bottleneck with finer probes is descended into; otherwise
 * the verdict is `overload`, with every stage's numbers.
 */
static void overload_step(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                          struct search_step *step, struct search_result *res) {
    struct search_params params = pl->a->params;
    params.min_windows =
        params.min_windows < OVERLOAD_MIN_WINDOWS ? OVERLOAD_MIN_WINDOWS : params.min_windows;
    struct search_state st = inv->st;
    st.strategy = SEARCH_CHILDREN;
    fi->in.problem = SEARCH_LATENCY;
    if (search_step(&fi->in, &params, &st, step) != DQ_OK) {
        aborted_on_error(pl, inv);
        return;
    }
    inv->st = st;
    if (step->action == SEARCH_ENABLE) {
        expand(pl, inv, fi, step);
        return;
    }
    /* the stages are weighed once each has its samples, whatever the search would make of
     * their shares (two identical stages never dominate one another) */
    int ready = fi->in.n_children > 0;
    for (size_t j = 0; j < fi->in.n_children && ready; j++) {
        const struct search_stats *ks = &fi->kids[j].stats;
        ready = ks->present && search_stats_instances(ks) >= params.min_instances &&
                ks->windows >= (uint32_t)params.min_windows;
    }
    if (!ready) {
        if (fi->in.exhausted && step->action == SEARCH_DECIDED) {
            *res = step->result;
            decided(pl, inv, fi, res);
        }
        return;
    }
    struct overload_result r;
    if (adapt__overload(pl, inv, fi, &r) != DQ_OK) {
        if (fi->in.exhausted) {
            *res = step->result;
            decided(pl, inv, fi, res);
        }
        return;
    }
    const struct overload_stage *b = &r.st[r.bottleneck];
    /* precise enough to name a bottleneck: its utilisation known to ±OVERLOAD_PRECISION
     * (a queue near saturation needs seconds of busy periods for that), or out of time */
    if (!fi->in.exhausted && b->rho_hi - b->rho_lo > 2.0 * OVERLOAD_PRECISION) {
        adapt__overload_result_release(&r);
        return;
    }
    int descend = r.n_co == 0 && r.bottleneck >= r.first_current && b->has_children;
    if (!confirmed(pl, inv, descend ? SEARCH_DESCEND : VERDICT_OVERLOAD,
                   r.bottleneck - r.first_current)) {
        adapt__overload_result_release(&r);
        return;
    }
    char reason[SEARCH_REASON_MAX + 600];
    overload_reason(inv, &r, reason, sizeof reason);
    json_t *ov = adapt__overload_json(&r);
    if (descend) {
        struct overload_prev *carry = adapt__overload_carry(&r);
        if (!carry) {
            json_decref(ov);
            adapt__overload_result_release(&r);
            pl->failed = 1;
            return;
        }
        adapt__overload_prev_unref(inv->ov_prev);
        inv->ov_prev = carry;
        char bname[PROBES_NAME_MAX + 1];
        snprintf(bname, sizeof bname, "%s", b->name);
        adapt__overload_result_release(&r);
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
        int64_t hyp =
            adapt__hypothesis(pl, inv, inv->hyp_id, bname, "descend", json_array(),
                              json_pack("{s:s,s:o}", "reason", reason, "overload", ov), NULL);
        adapt__focus_on(pl->a, inv, bname, hyp ? hyp : inv->hyp_id, pl->upto);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": descending into the bottleneck %s", bname);
        return;
    }
    const char *at = overload_at(inv, &r);
    json_t *ev =
        json_pack("{s:s,s:s,s:O}", "verdict", "overload", "reason", reason, "overload", ov);
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "overload");
    adapt__hypothesis(pl, inv, inv->hyp_id, at, "verdict", NULL,
                      json_pack("{s:s,s:o}", "reason", reason, "overload", ov), "overload");
    adapt__close(pl, inv, "overload", at, ev);
    adapt__overload_result_release(&r);
}

/*
 * The verdict of the windows since the pending verdict was first seen (inv->pending_from)
 * alone, evaluated as the cumulative one was; its child in inv->fresh_child.
 * SEARCH_NEED_SAMPLES while those windows are too few.
 */
static int fresh_verdict(struct plan *pl, struct investigation *inv,
                         const struct search_params *params) {
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_result *r = calloc(1, sizeof *r), *out = calloc(1, sizeof *out);
    int verdict = SEARCH_NEED_SAMPLES;
    inv->fresh_child = -1;
    /* fresh evidence of its own: as many windows as a diffuse verdict needs */
    struct search_params fp = *params;
    fp.min_windows =
        fp.min_windows < fp.diffuse_min_windows ? fp.diffuse_min_windows : fp.min_windows;
    params = &fp;
    if (fi && r && out && adapt__build_input(pl, inv, inv->pending_from, fi) == DQ_OK) {
        fi->in.exhausted = 0;
        if (inv->contributor) {
            fi->in.problem = SEARCH_LATENCY;
        }
        if (search_evaluate(&fi->in, params, r) == DQ_OK) {
            verdict = r->verdict;
            *out = *r;
            if (inv->contributor) {
                enum search_problem keep = inv->problem;
                verdict = contributor_decide(inv, fi, params, r, out);
                inv->problem = keep;
            }
            inv->fresh_child = out->child;
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

/* One step of an investigation that searches. */
static void search(struct plan *pl, struct investigation *inv) {
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_step *step = calloc(1, sizeof *step);
    struct search_result *res = calloc(1, sizeof *res);
    if (!fi || !step || !res) {
        free(fi);
        free(step);
        free(res);
        pl->failed = 1;
        return;
    }
    int rc = adapt__build_input(pl, inv, inv->eval_from, fi);
    if (rc) {
        aborted_on_error(pl, inv);
        goto out;
    }
    share_children(pl, inv, fi);
    /* a window went by (a person's action adds none); one in which the focus or a child
     * had no data (its source disconnected or went silent) is not counted either: the
     * search waits for the data to come back */
    int silent = adapt__no_data(pl, inv->focus);
    for (size_t j = 0; j < fi->in.n_children && !silent; j++) {
        silent = fi->kids[j].enabled && adapt__no_data(pl, fi->kids[j].name);
    }
    if (pl->wid >= 0 && !silent) {
        inv->windows_waited++;
    }
    if (silent) {
        inv->pending_count = 0;
        goto out;
    }
    fi->in.exhausted = inv->windows_waited >= pl->a->opt.investigation_windows;
    struct search_params params = pl->a->params;
    if (!inv->overload && !inv->contributor && adapt__load_shaped((int)inv->problem)) {
        /* a latency problem that turns out to rise with the arrivals is an overload (not a
         * search that follows the largest contributor: with nothing to judge against, a
         * look at every window would in the end find a correlation by chance; and a look
         * taken at every window a step waits shares the false alarm rate among them: 1 of
         * 480 matrix runs (fanout, erratic, after) became an overload at the one-look
         * threshold) */
        char why[200];
        if (adapt__load_rose(pl, adapt__probe(pl->a, inv->node), NULL,
                             pl->a->opt.investigation_windows, why, sizeof why)) {
            char reason[300];
            snprintf(reason, sizeof reason,
                     "%s: an overload investigation from here on (where does it saturate?)", why);
            inv->overload = 1;
            adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "check", NULL,
                              json_pack("{s:s,s:s,s:s}", "problem",
                                        search_problem_name(inv->problem), "mode", "overload",
                                        "reason", reason),
                              NULL);
            adapt__fx_log(pl, LOG_INFO, inv->id, ": %s", reason);
        }
    }
    if (inv->overload) {
        overload_step(pl, inv, fi, step, res);
        goto out;
    }
    if (inv->contributor) {
        fi->in.problem = SEARCH_LATENCY;
    } else if (inv->problem == SEARCH_VARIANCE && params.min_windows < 4) {
        /* spread shows in rare outliers: give every child enough windows to show them */
        params.min_windows = 4;
    }
    rc = search_step(&fi->in, &params, &inv->st, step);
    if (rc) {
        aborted_on_error(pl, inv);
        goto out;
    }
    if (step->action == SEARCH_ENABLE) {
        expand(pl, inv, fi, step);
        goto out;
    }
    if (step->action != SEARCH_DECIDED) {
        inv->pending_count = 0;
        goto out;
    }
    int verdict = step->result.verdict;
    *res = step->result;
    if (inv->contributor) {
        verdict = contributor_decide(inv, fi, &params, &step->result, res);
    }
    if (verdict == SEARCH_NEED_SAMPLES) {
        inv->pending_count = 0;
        goto out;
    }
    if (!confirmed(pl, inv, verdict, res->child)) {
        goto out; /* the same verdict must hold at the next evaluation too */
    }
    if (verdict != SEARCH_INCONCLUSIVE && inv->strategy == SEARCH_CHILDREN && !fi->in.exhausted) {
        /* … and on fresh windows: the windows since it was first seen must say the same
         * on their own, or the evidence of the whole range was one burst (a queue) */
        int fresh = fresh_verdict(pl, inv, &params);
        if (fresh == SEARCH_NEED_SAMPLES) {
            goto out;
        }
        if (fresh != verdict || inv->fresh_child != res->child) {
            inv->pending_count = 0; /* not borne out: start over */
            goto out;
        }
    }
    if (verdict == VERDICT_HEALTHY) {
        healthy(pl, inv, res->reason, attribution_json(&fi->in, res));
    } else {
        decided(pl, inv, fi, res);
    }
out:
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
static void healthy_reason(const struct investigation *inv, const struct adapt_check *c, char *buf,
                           size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "healthy at %s: nothing abnormal against", inv->node);
    int parts = 0;
    if (c->has_qta && len < cap) {
        len += (size_t)snprintf(buf + len, cap - len, " its QTA (met over %llu instances)",
                                (unsigned long long)search_stats_instances(&c->recent));
        parts++;
    }
    if (c->has_baseline && len < cap) {
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s its baseline (mean %.3g ms against %.3g ms before, %.2g %% lost against "
            "%.2g %%)",
            parts ? (c->has_calculated ? "," : " and") : "", c->recent.mean * 1e3,
            c->baseline.mean * 1e3, 100.0 * search_stats_lost(&c->recent),
            100.0 * search_stats_lost(&c->baseline));
        parts++;
    }
    if (c->has_calculated && len < cap) {
        if (isfinite(c->recent.ks_d)) {
            snprintf(buf + len, cap - len, "%s its calculated ΔQ (KS D %.3g, p %.2g)",
                     parts ? " and" : "", c->recent.ks_d, c->recent.ks_p);
        } else {
            snprintf(buf + len, cap - len, "%s its calculated ΔQ", parts ? " and" : "");
        }
    }
}

/* The node has the samples: decide its problem, or that it is healthy. */
static void characterise(struct plan *pl, struct investigation *inv, const struct adapt_check *c) {
    json_t *check = adapt__check_json(inv->node, c);
    if (c->n > 0) {
        inv->problem = c->p[0].kind;
        inv->characterised = 1;
        set_also(inv, c);
        char load_why[200] = "";
        if (!inv->overload && adapt__load_shaped((int)inv->problem) &&
            adapt__load_rose(pl, adapt__probe(pl->a, inv->node), c, 3, load_why, sizeof load_why)) {
            inv->overload = 1; /* its latency rose with its load: where does it saturate? */
        }
        char reason[900];
        snprintf(reason, sizeof reason, "%s: %s%s%s%s%s%s", search_problem_name(inv->problem),
                 c->p[0].why, inv->also[0] ? "; also seen: " : "", inv->also,
                 inv->overload ? "; " : "",
                 !inv->overload ? ""
                 : load_why[0]  ? load_why
                                : "an overload was asked for",
                 inv->overload ? ": an overload investigation (where does it saturate?)" : "");
        adapt__fx_inv_problem(pl, inv->id, search_problem_name(inv->problem));
        int64_t hyp = adapt__hypothesis(
            pl, inv, inv->hyp_id, inv->node, "check", NULL,
            json_pack("{s:s,s:s,s:o,s:s?,s:s?}", "problem", search_problem_name(inv->problem),
                      "reason", reason, "check", check, "also", inv->also[0] ? inv->also : NULL,
                      "mode", inv->overload ? "overload" : NULL),
            NULL);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": a %s problem at %s (%s)",
                      search_problem_name(inv->problem), inv->node, c->p[0].why);
        inv->phase = PHASE_SEARCH;
        int64_t from = inv->eval_from;
        adapt__focus_on(pl->a, inv, inv->node, hyp ? hyp : inv->hyp_id, pl->upto);
        /* children enabled with the node count from then on; with a node that had data,
         * children enabled already are compared over the recent windows */
        inv->eval_from = from ? from : pl->upto - ADAPT_RECENT_WINDOWS;
        search(pl, inv);
        return;
    }
    char load_why[200] = "";
    if (inv->overload || /* nothing abnormal: more traffic alone is no overload */
        adapt__load_rose(pl, adapt__probe(pl->a, inv->node), NULL, 3, load_why, sizeof load_why)) {
        /* asked for, or latency rising with the arrivals: weigh the stages even though
         * nothing is abnormal yet (the headroom is the question) */
        int asked = inv->overload;
        inv->overload = 1;
        inv->problem = SEARCH_LATENCY;
        inv->characterised = 1;
        adapt__fx_inv_problem(pl, inv->id, "latency");
        char why[200], reason[600];
        snprintf(why, sizeof why, "%s", asked ? "asked for" : load_why);
        snprintf(reason, sizeof reason,
                 "%s: an overload investigation with nothing abnormal yet (where does %s "
                 "saturate, and how far is that?)",
                 why, inv->node);
        int64_t hyp = adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "check", NULL,
                                        json_pack("{s:s,s:s,s:s,s:o}", "problem", "latency", "mode",
                                                  "overload", "reason", reason, "check", check),
                                        NULL);
        inv->phase = PHASE_SEARCH;
        int64_t from = inv->eval_from;
        adapt__focus_on(pl->a, inv, inv->node, hyp ? hyp : inv->hyp_id, pl->upto);
        inv->eval_from = from ? from : pl->upto - ADAPT_RECENT_WINDOWS;
        search(pl, inv);
        return;
    }
    if (c->has_qta || c->has_baseline) {
        char reason[600];
        healthy_reason(inv, c, reason, sizeof reason);
        inv->characterised = 1;
        adapt__fx_inv_problem(pl, inv->id, "none");
        json_t *ev = json_pack("{s:o}", "check", check);
        snprintf(inv->focus, sizeof inv->focus, "%s", inv->node);
        healthy(pl, inv, reason, ev);
        return;
    }
    /* no reference: follow where the time and the spread go */
    inv->problem = SEARCH_LATENCY;
    inv->characterised = 1;
    inv->contributor = 1;
    adapt__fx_inv_problem(pl, inv->id, "latency");
    int64_t hyp = adapt__hypothesis(
        pl, inv, inv->hyp_id, inv->node, "check", NULL,
        json_pack("{s:s,s:s,s:s,s:o}", "problem", "latency", "mode", "contributor", "reason",
                  "nothing to judge it against (no QTA, no baseline yet, and nothing abnormal "
                  "against its calculated ΔQ): the search follows the largest contributor to "
                  "its time or its spread, and balanced children are healthy",
                  "check", check),
        NULL);
    inv->phase = PHASE_SEARCH;
    int64_t from = inv->eval_from;
    adapt__focus_on(pl->a, inv, inv->node, hyp ? hyp : inv->hyp_id, pl->upto);
    inv->eval_from = from ? from : pl->upto - ADAPT_RECENT_WINDOWS;
    search(pl, inv);
}

/* One window of an investigation that observes its node. */
static void observe(struct plan *pl, struct investigation *inv) {
    struct probe *p = adapt__probe(pl->a, inv->node);
    struct adapt_check c;
    adapt__check_node(pl, p, inv->eval_from, &c);
    int exhausted = inv->windows_waited + 1 >= pl->a->opt.investigation_windows;
    /* a problem is decided as soon as it shows; "nothing abnormal" needs the recent
     * windows in full (few samples say little either way) */
    if (adapt__check_enough(pl, &c.recent) &&
        (c.n > 0 || c.recent.windows >= ADAPT_RECENT_WINDOWS || exhausted)) {
        characterise(pl, inv, &c);
        return;
    }
    if (adapt__no_data(pl, inv->node)) {
        return; /* its source is silent: wait for data rather than run out of time */
    }
    if (++inv->windows_waited < pl->a->opt.investigation_windows) {
        return;
    }
    char reason[1400];
    snprintf(reason, sizeof reason,
             "inconclusive at %s: it has %llu instances in %u window%s after %d windows "
             "(needs %llu in %u); no data to decide its problem from",
             inv->node, (unsigned long long)search_stats_instances(&c.recent), c.recent.windows,
             c.recent.windows == 1 ? "" : "s", inv->windows_waited,
             (unsigned long long)pl->a->params.min_instances, pl->a->params.min_windows);
    say_never_reported(pl, NULL, inv->node, reason, sizeof reason);
    json_t *ev =
        json_pack("{s:s,s:o}", "reason", reason, "check", adapt__check_json(inv->node, &c));
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "inconclusive");
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "verdict", NULL,
                      json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), "inconclusive");
    adapt__close(pl, inv, "inconclusive", inv->node, ev);
    adapt__release(pl, inv, "inconclusive without data: releasing what it enabled");
}

void adapt__step(struct plan *pl, struct investigation *inv) {
    if (inv->phase == PHASE_OBSERVE) {
        observe(pl, inv);
    } else {
        search(pl, inv);
    }
}
