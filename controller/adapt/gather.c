/*
 * gather.c: what the adaptive loop reads from the core's windows for search/ to decide
 * on: a probe's statistics over a range of its closed windows (moments and aggregated
 * ΔQs), the node check's ranges (now and the baseline before), the windows' rates and
 * means for the load test, the search input of an investigation's focus (its children,
 * their baselines, a choice's weights) and the per-node statistics of the node split.
 * Nothing here decides.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* ---- a probe's windows -------------------------------------------------------------------- */

void adapt__node_stats_release(struct node_stats *ns) {
    dq_destroy(ns->obs);
    dq_destroy(ns->calc);
    dq_destroy(ns->base);
    ns->obs = ns->calc = ns->base = NULL;
}

/* Adds w·src into *acc (created on first use on src's grid; other grids are skipped): its
 * masses, its failed and zero parts, its counts; point masses only when every part has
 * them, and the largest lag. */
static void mix_into(struct dq **acc, const struct dq *src, double w) {
    if (!src || w <= 0.0) {
        return;
    }
    if (!*acc) {
        if (dq_never(src->k, src->n, acc) != DQ_OK) {
            return;
        }
        (*acc)->failed = 0.0; /* an empty sum, not `never` */
        (*acc)->atoms = src->atoms;
    }
    struct dq *a = *acc;
    if (a->k != src->k || a->n != src->n) {
        return;
    }
    for (int i = 0; i < src->n; i++) {
        a->pdf[i] += w * src->pdf[i];
    }
    a->failed += w * src->failed;
    a->zero += w * src->zero;
    a->atoms = a->atoms && src->atoms;
    a->lag = a->lag > src->lag ? a->lag : src->lag;
    a->n_ok += src->n_ok;
    a->n_fa += src->n_fa;
    a->n_to += src->n_to;
    a->n_out += src->n_out;
}

/* Divides a mixture built with raw weights by their total. */
static void mix_normalise(struct dq *acc, double total) {
    if (!acc || !(total > 0.0)) {
        return;
    }
    double sum = 0.0;
    for (int i = 0; i < acc->n; i++) {
        acc->pdf[i] /= total;
        sum += acc->pdf[i];
    }
    /* round-off: failed within the lost mass, zero within the first bin */
    double lost = sum < 1.0 ? 1.0 - sum : 0.0;
    acc->failed = fmin(acc->failed / total, lost);
    acc->zero = fmin(acc->zero / total, acc->n > 0 ? acc->pdf[0] : 0.0);
}

/* The KS distance of the paired windows' observed and calculated ΔQs, and the QTA hazard
 * of the observed one, into ns->s. */
static void gather_tests(const struct probe *p, struct node_stats *ns, struct dq *obs_pair,
                         double total_pair) {
    if (obs_pair && ns->calc) {
        double dd, pv;
        if (dq_ks(obs_pair, ns->calc, (uint64_t)total_pair, 0, &dd, &pv) == DQ_OK) {
            ns->s.ks_d = dd;
            ns->s.ks_p = pv;
        }
    }
    if (ns->obs && p->has_qta) {
        struct dq_qta_result r;
        if (dq_qta_eval(ns->obs, &p->qta, &r) == DQ_OK) {
            ns->s.qta_hazard = r.hazard;
        }
    }
}

void adapt__gather(const struct probe *p, int64_t from, int64_t to, struct node_stats *ns) {
    adapt__gather_where(p, from, to, NULL, NULL, ns);
}

void adapt__gather_where(const struct probe *p, int64_t from, int64_t to,
                         int (*skip)(void *ctx, int64_t wid), void *ctx, struct node_stats *ns) {
    memset(ns, 0, sizeof *ns);
    search_stats_init(&ns->s);
    if (!p) {
        return;
    }
    double total_n = 0.0, total_pair = 0.0;
    struct dq *obs_pair = NULL;
    for (int b = 0; b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get((struct probe *)p, b);
        if (w->wid < from) {
            break;
        }
        uint64_t n = w->ok + w->fa + w->to + w->out;
        if (w->wid >= to || n == 0 || (skip && skip(ctx, w->wid))) {
            continue;
        }
        search_stats_add_window(&ns->s, w->ok, w->fa, w->to + w->out, w->mean, w->variance);
        if (!w->observed || w->observed->k != p->k || w->observed->n != p->n) {
            continue;
        }
        total_n += (double)n;
        mix_into(&ns->obs, w->observed, (double)n);
        if (w->calculated) {
            total_pair += (double)n;
            mix_into(&ns->calc, w->calculated, (double)n);
            mix_into(&obs_pair, w->observed, (double)n);
        }
    }
    mix_normalise(ns->obs, total_n);
    mix_normalise(ns->calc, total_pair);
    mix_normalise(obs_pair, total_pair);
    ns->s.observed = ns->obs;
    ns->s.calculated = ns->calc;
    gather_tests(p, ns, obs_pair, total_pair);
    dq_destroy(obs_pair);
}

json_t *adapt__stats_json(const char *name, const struct search_stats *s) {
    if (!s->present) {
        return json_pack("{s:s,s:b}", "node", name, "present", 0);
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:i,s:f}", "node", name, "ok", (json_int_t)s->n_ok,
                          "fa", (json_int_t)s->n_fa, "to", (json_int_t)s->n_to, "windows",
                          (int)s->windows, "lost", search_stats_lost(s));
    if (isfinite(s->mean)) {
        json_object_set_new(o, "mean", json_real(s->mean));
        json_object_set_new(o, "sd", json_real(sqrt(s->variance > 0 ? s->variance : 0)));
    }
    if (isfinite(s->ks_d)) {
        json_object_set_new(o, "ks_d", json_real(s->ks_d));
        json_object_set_new(o, "ks_p", json_real(s->ks_p));
    }
    if (isfinite(s->qta_hazard)) {
        json_object_set_new(o, "qta_hazard", json_real(s->qta_hazard));
    }
    return o;
}

/* ---- the node check ------------------------------------------------------------------------ */

/* The windows' own means (windows with successes) over from ≤ wid < to, newest first, at
 * most SEARCH_MAX_WINDOW_MEANS; and into maxima (*n_max of them), for those on the probe's
 * grid (the windows the recent ΔQ is mixed from), a point each one's largest pass lies
 * beyond: the left edge of its last occupied bin, less the bins of its lag (a window
 * re-expressed to a finer grid spreads a coarse bin's mass up to the coarse edge). The
 * far tail counts windows by them. */
static int recent_windows(const struct probe *p, int64_t from, int64_t to, double *now,
                          double *maxima, int *n_max) {
    int na = 0;
    *n_max = 0;
    for (int k = 0; p && k < p->ring_len && na < SEARCH_MAX_WINDOW_MEANS; k++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, k);
        if (w->wid < from) {
            break;
        }
        if (w->ok == 0 || w->wid >= to) {
            continue;
        }
        now[na++] = w->mean;
        const struct dq *o = w->observed;
        if (!o || o->k != p->k || o->n != p->n) {
            continue;
        }
        int last = dq_last_bin(o);
        if (last >= 0) {
            maxima[(*n_max)++] = (last - o->lag > 0 ? last - o->lag : 0) * o->width;
        }
    }
    return na;
}

/* search_check of p's windows [rfrom, upto) against the baseline b (its windows' means:
 * before, n_before of them), with z threshold zt. */
static void check_against(struct plan *pl, const struct probe *p, int64_t rfrom,
                          const struct node_stats *b, const double *before, int n_before, double zt,
                          int suggest, struct search_check *c) {
    struct node_stats r;
    double now[SEARCH_MAX_WINDOW_MEANS], maxima[SEARCH_MAX_WINDOW_MEANS];
    struct search_check_input in = {.recent = &r.s,
                                    .baseline = &b->s,
                                    .qta = p && p->has_qta ? &p->qta : NULL,
                                    .recent_means = now,
                                    .base_means = before,
                                    .n_base_means = n_before,
                                    .recent_max = maxima,
                                    .zt = zt,
                                    .suggest = suggest};
    adapt__gather(p, rfrom, pl->upto, &r);
    in.n_recent_means = recent_windows(p, rfrom, pl->upto, now, maxima, &in.n_recent_max);
    search_check(&in, &pl->a->params, c);
    adapt__node_stats_release(&r);
}

/* The check over the last `horizon` windows (since `from`) against the baseline before
 * them, with z threshold zt. */
static void check_range(struct plan *pl, const struct probe *p, int64_t from, int horizon,
                        double zt, int suggest, struct search_check *c, int64_t *rfrom_out) {
    int64_t upto = pl->upto;
    int64_t rfrom = from > upto - horizon ? from : upto - horizon;
    struct node_stats b;
    double before[SEARCH_MAX_WINDOW_MEANS];
    int n_before = 0;
    adapt__baseline(pl, p, rfrom, &b, before, &n_before);
    check_against(pl, p, rfrom, &b, before, n_before, zt, suggest, c);
    int64_t longest = upto - SEARCH_BASELINE_WINDOWS;
    if (!(b.s.present && b.s.windows >= SEARCH_BASELINE_WINDOWS) && c->n == 0 && from < rfrom &&
        longest < rfrom) {
        /* no baseline to split the history from, and the absolute tests (lost mass, QTA)
         * found nothing in the horizon's windows: all of the history (since `from`, at most
         * SEARCH_BASELINE_WINDOWS windows) is "now", which gives them the most samples. The
         * horizon goes first: a QTA broken for its few windows is not diluted by the
         * windows before (a baseline lost to a problem over a stall, in a stress run of
         * docs_tutorial: over 30 windows, 10 of them before the fault, the QTA was met) */
        adapt__node_stats_release(&b);
        rfrom = from > longest ? from : longest;
        adapt__baseline(pl, p, rfrom, &b, before, &n_before);
        check_against(pl, p, rfrom, &b, before, n_before, zt, suggest, c);
    }
    if (rfrom_out) {
        *rfrom_out = rfrom;
    }
    adapt__node_stats_release(&b);
}

/* The node check's horizons: "now" as a change of a few windows ago, or of a few tens */
static const int horizons[] = {SEARCH_RECENT_WINDOWS, 2 * SEARCH_RECENT_WINDOWS,
                               4 * SEARCH_RECENT_WINDOWS};
#define N_HORIZONS ((int)(sizeof horizons / sizeof horizons[0]))

/* How a check's first problem ranks across horizons: a broken requirement or lost mass,
 * then the rest (delays). */
static int horizon_rank(const struct search_check *c) {
    if (c->n == 0) {
        return -1;
    }
    return c->p[0].kind == SEARCH_QTA || c->p[0].kind == SEARCH_LOST;
}

void adapt__check_node(struct plan *pl, const struct probe *p, int64_t from, struct search_check *c,
                       int64_t *rfrom) {
    /* each horizon against the baseline before it; of those that show a problem, the one
     * whose problem ranks first is kept (a fault that began two horizons ago is in the
     * shorter horizons' baselines, where it weighs less or shows as another kind).
     * Three looks: each at the threshold that keeps their joint false alarms at one look's. */
    const int looks = N_HORIZONS;
    double zt = search_z_looks(looks);
    struct search_check *longer = malloc(sizeof *longer);
    check_range(pl, p, from, horizons[0], zt, 0, c, rfrom);
    int k = 1, kept = 0;
    for (; longer && k < looks && c->has_baseline && from <= pl->upto - horizons[k]; k++) {
        int64_t longer_from = 0;
        check_range(pl, p, from, horizons[k], zt, 0, longer, &longer_from);
        if (longer->n > 0 && longer->has_baseline && horizon_rank(longer) > horizon_rank(c)) {
            *c = *longer;
            kept = k;
            if (rfrom) {
                *rfrom = longer_from;
            }
        }
    }
    /* where the problem began (the problem's first window, rfrom): the longest horizon that
     * still shows it against a baseline before it, so that a baseline taken then holds no
     * window of it; the check's answer stays the kept horizon's */
    for (k = kept + 1; rfrom && longer && c->n > 0 && k < looks && from <= pl->upto - horizons[k];
         k++) {
        int64_t longer_from = 0;
        check_range(pl, p, from, horizons[k], zt, 0, longer, &longer_from);
        if (!(longer->n > 0 && longer->has_baseline && longer->p[0].kind == c->p[0].kind)) {
            break;
        }
        *rfrom = longer_from;
    }
    free(longer);
}

int adapt__check_suggestive(struct plan *pl, const struct probe *p, int64_t from,
                            struct search_found *found) {
    struct search_check *s = malloc(sizeof *s);
    int hit = 0;
    for (int k = 0; s && !hit && k < N_HORIZONS; k++) {
        if (k > 0 && from > pl->upto - horizons[k]) {
            break;
        }
        check_range(pl, p, from, horizons[k], SEARCH_Z_SUGGESTIVE, 1, s, NULL);
        if (s->n > 0) {
            *found = s->p[0];
            hit = 1;
        }
    }
    free(s);
    return hit;
}

void adapt__check_watched(struct plan *pl, const struct probe *p, int64_t from, int horizon,
                          struct search_check *c, int64_t *rfrom) {
    check_range(pl, p, from, horizon, search_z_looks(SEARCH_WATCH_LOOKS), 0, c, rfrom);
}

int adapt__check_older(struct plan *pl, const struct probe *p, int64_t from, struct search_check *c,
                       int64_t *rfrom, int64_t *wid, struct base_set **bases) {
    struct node_stats b;
    double before[SEARCH_MAX_WINDOW_MEANS];
    int n_before = 0;
    if (!adapt__ref_baseline(pl, p, &b, before, &n_before, wid, bases)) {
        return 0;
    }
    int64_t longest = pl->upto - 4 * SEARCH_RECENT_WINDOWS;
    *rfrom = from > longest ? from : longest;
    check_against(pl, p, *rfrom, &b, before, n_before, search_z_looks(N_HORIZONS + 1), 0, c);
    adapt__node_stats_release(&b);
    return 1;
}

json_t *adapt__check_json(const char *node, const struct search_check *c) {
    json_t *problems = json_array();
    for (int i = 0; i < c->n; i++) {
        json_t *o = json_pack("{s:s,s:f,s:s}", "kind", search_problem_name(c->p[i].kind), "z",
                              c->p[i].z, "why", c->p[i].why);
        if (c->p[i].level > 0) {
            json_object_set_new(o, "level", json_real(c->p[i].level));
        }
        if (c->p[i].beyond > 0) { /* the point a tail problem lies beyond (resume.c) */
            json_object_set_new(o, "beyond", json_real(c->p[i].beyond));
        }
        json_array_append_new(problems, o);
    }
    json_t *o = json_pack("{s:o,s:{s:b,s:b,s:b},s:o}", "node", adapt__stats_json(node, &c->recent),
                          "references", "qta", c->has_qta, "baseline", c->has_baseline,
                          "calculated", c->has_calculated, "problems", problems);
    if (c->baseline.present) {
        json_object_set_new(o, "baseline", adapt__stats_json(node, &c->baseline));
    }
    return o;
}

/* ---- load ----------------------------------------------------------------------------------- */

int adapt__load_rose(struct plan *pl, const struct probe *p, const struct search_check *c,
                     int looks, char *why, size_t cap) {
    struct search_load_window w[2 * SEARCH_MAX_RATE_WINDOWS];
    int n = 0;
    for (int i = 0; p && i < p->ring_len && n < 2 * SEARCH_MAX_RATE_WINDOWS; i++) {
        const struct probe_window *pw = probes_ring_get((struct probe *)p, i);
        uint64_t count = pw->ok + pw->fa + pw->to + pw->out;
        /* the windows of the check's recent (adapt__gather): the newest with instances */
        if (pw->wid >= pl->upto || count == 0) {
            continue;
        }
        int silent = 0;
        while (silent < PROBES_NODATA_WINDOWS && probes_no_data(p, pw->wid - 1 - silent)) {
            silent++;
        }
        w[n++] = (struct search_load_window){.wid = pw->wid,
                                             .n = (double)count,
                                             .ok = (double)pw->ok,
                                             .mean = pw->mean,
                                             .silent_before = silent};
    }
    struct search_load l;
    search_load_of(w, n, (double)core_window_ns(pl->a->env.core) * 1e-9,
                   c ? (int)c->recent.windows : 0, &l);
    return search_load_rose(&l, c, looks, why, cap);
}

/* ---- the search input ------------------------------------------------------------------------ */

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
 * SEARCH_BASELINE_SPAN of them), when there are SEARCH_BASELINE_WINDOWS with data. When
 * every child has one, the search weighs each child's excess over it.
 */
static void set_baseline(struct plan *pl, const struct probe *p, int64_t from,
                         struct node_stats *ns) {
    struct node_stats b;
    adapt__baseline(pl, p, from, &b, NULL, NULL);
    struct search_stats *s = &ns->s;
    if (b.s.present && b.s.windows >= SEARCH_BASELINE_WINDOWS && b.s.n_ok > 1) {
        s->has_baseline = 1;
        s->base_mean = b.s.mean;
        s->base_variance = b.s.variance;
        s->base_lost = search_stats_lost(&b.s);
        s->base_n = b.s.n_ok;
        ns->base = b.obs; /* its ΔQ, for the shape of the distribution */
        b.obs = NULL;
        s->base_observed = ns->base;
    }
    adapt__node_stats_release(&b);
}

/* Child j of the focus: its name, finer probes, whether enabled, statistics since from. */
static void gather_child(struct plan *pl, const struct dq_diagram *g, struct focus_input *fi,
                         size_t j, int64_t from) {
    const struct dq_diagram_node *kid = dq_diagram_node(g, fi->kid_nodes[j]);
    struct probe *kp = adapt__probe(pl->a, kid->name);
    struct search_child *c = &fi->kids[j];
    memset(c, 0, sizeof *c);
    c->name = kid->name;
    c->has_children = dq_diagram_probe_children(g, fi->kid_nodes[j], NULL, 0) > 0;
    c->enabled = kp && adapt__plan_enabled(pl, kp);
    c->weight = 0.0;
    adapt__gather(c->enabled ? kp : NULL, from, pl->upto, &fi->kstats[j]);
    if (c->enabled) {
        set_baseline(pl, kp, from, &fi->kstats[j]);
    }
    c->stats = fi->kstats[j].s;
}

/* The probability of the QTA point p violates over [from, pl->upto) (obs: its observed ΔQ
 * there when at hand); 0 when it has no QTA, or none is violated (or it is the lost mass). */
static double qta_level(struct plan *pl, const struct probe *p, int64_t from,
                        const struct dq *obs) {
    if (!p || !p->has_qta) {
        return 0.0;
    }
    struct node_stats ns = {0};
    if (!obs) {
        adapt__gather(p, from, pl->upto, &ns);
        obs = ns.obs;
    }
    struct dq_qta_result q;
    double level = 0.0;
    if (obs && dq_qta_eval(obs, &p->qta, &q) == DQ_OK && !q.ok && q.worst >= 0) {
        level = p->qta.p[q.worst];
    }
    adapt__node_stats_release(&ns);
    return level;
}

int adapt__passes_beyond(struct plan *pl, const char *probe, int64_t from, double at,
                         int *windows) {
    struct node_stats ns = {0};
    adapt__gather(adapt__probe(pl->a, probe), from, pl->upto, &ns);
    double t = ns.obs ? dq_tangible(ns.obs) : 0.0;
    int n = -1;
    if (t > 0.0 && ns.s.n_ok > 0) {
        /* a pass past dMax (a timeout) lies beyond any point a success can */
        n = (int)floor((t - dq_cdf_at(ns.obs, at)) / t * (double)ns.s.n_ok + 0.5) + (int)ns.s.n_to;
        *windows = (int)ns.s.windows;
    }
    adapt__node_stats_release(&ns);
    return n;
}

/* A problem found in the tail: how many of the investigated node's passes over windows ≥ from
 * lay beyond its point (search_input.tail_at; nothing set when its probe has no data: the step
 * decides as it would). */
static void tail_passes(struct plan *pl, const struct investigation *inv, int64_t from,
                        struct search_input *in) {
    int windows = 0;
    int n =
        inv->tail_at > 0.0 ? adapt__passes_beyond(pl, inv->node, from, inv->tail_at, &windows) : -1;
    if (n >= 0) {
        in->tail_at = inv->tail_at;
        in->tail_node = inv->node;
        in->tail_passes = n;
    }
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
    set_baseline(pl, fp, from, &fi->xstats);
    for (size_t j = 0; j < n; j++) {
        gather_child(pl, g, fi, j, from);
    }
    /* a QTA problem: attribute the violated quantile (a sequence's children's quantiles, a
     * choice's branches' mass beyond it); below the node that has the QTA, the level that
     * node violates */
    if (inv->problem == SEARCH_QTA) {
        fi->in.qta_p = qta_level(pl, fp && fp->has_qta ? fp : adapt__probe(a, inv->node), from,
                                 fp && fp->has_qta ? fi->xstats.obs : NULL);
    }
    if (inv->problem == SEARCH_SHAPE) {
        fi->in.qta_p = inv->shape_level; /* the part of the distribution that moved */
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
    tail_passes(pl, inv, from, &fi->in);
    return DQ_OK;
}

/* ---- several nodes, one probe ---------------------------------------------------------- */

int adapt__gather_nodes(struct plan *pl, const char *name, int64_t from, struct search_child *kids,
                        unsigned char *include, int *weighed) {
    struct probe_table *t = core_probes(pl->a->env.core);
    struct probe *p = adapt__probe(pl->a, name);
    int n = p ? probes_node_count(p) : 0;
    if (n < 2) {
        return 0;
    }
    n = n > ADAPT_MAX_SPLIT ? ADAPT_MAX_SPLIT : n;
    memset(kids, 0, (size_t)n * sizeof *kids);
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
    /* weights by instances: for a spread, each node's part of the pooled variance (a choice
     * among the nodes: w·(σ² + (μ − μ̄)²)), so a node that is slower, not more erratic,
     * still stands out */
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        total += (double)search_stats_instances(&kids[i].stats);
    }
    *weighed = 0;
    for (int i = 0; i < n; i++) {
        kids[i].weight = total > 0 ? (double)search_stats_instances(&kids[i].stats) / total : 0.0;
        include[i] = kids[i].stats.present &&
                     search_stats_instances(&kids[i].stats) >= pl->a->params.min_instances;
        *weighed += include[i];
    }
    return n;
}

/* Probe `name` on node `on` over windows ≥ from, against the same probe on the other nodes
 * as its baseline: their successes' moments pooled (nodes with successes), their lost
 * fraction over all their instances; 0 when `on` does not report it or no other node has a
 * success. */
static int on_node_stats(struct plan *pl, const char *name, const char *on, int64_t from,
                         struct search_stats *out) {
    struct search_child kids[ADAPT_MAX_SPLIT];
    unsigned char include[ADAPT_MAX_SPLIT];
    int weighed = 0, at = -1;
    int n = adapt__gather_nodes(pl, name, from, kids, include, &weighed);
    double n_ok = 0.0, n_all = 0.0, n_lost = 0.0, sum = 0.0, sumsq = 0.0;
    for (int i = 0; i < n; i++) {
        const struct search_stats *k = &kids[i].stats;
        if (strcmp(kids[i].name, on) == 0) {
            at = i;
        } else if (k->present) {
            n_all += (double)search_stats_instances(k);
            n_lost += (double)(k->n_fa + k->n_to);
            if (k->n_ok > 0) { /* a node of failures only has no mean */
                double ok = (double)k->n_ok;
                n_ok += ok;
                sum += ok * k->mean;
                sumsq += ok * (k->variance + k->mean * k->mean);
            }
        }
    }
    if (at < 0 || !kids[at].stats.present || !(n_ok > 1)) {
        return 0;
    }
    *out = kids[at].stats;
    out->has_baseline = 1;
    out->base_mean = sum / n_ok;
    out->base_variance = fmax(sumsq / n_ok - out->base_mean * out->base_mean, 0.0);
    out->base_lost = n_lost / n_all;
    out->base_n = (uint64_t)n_ok; /* as a baseline's: its successes */
    return 1;
}

int adapt__scope_to_node(struct plan *pl, struct focus_input *fi, const char *on, int64_t from) {
    struct search_stats x, kid[SEARCH_MAX_CHILDREN];
    if (!on_node_stats(pl, fi->in.name, on, from, &x)) {
        return 0;
    }
    for (size_t j = 0; j < fi->in.n_children; j++) {
        if (!fi->kids[j].name || !on_node_stats(pl, fi->kids[j].name, on, from, &kid[j])) {
            return 0;
        }
    }
    for (size_t j = 0; j < fi->in.n_children; j++) {
        fi->kids[j].stats = kid[j]; /* fi->kstats keep what they own */
    }
    enum search_problem p = fi->in.problem;
    fi->in.stats = x;
    fi->in.problem = p == SEARCH_LOST || p == SEARCH_VARIANCE ? p : SEARCH_LATENCY;
    fi->in.qta_p = 0.0;
    fi->in.tail_at = 0.0;
    fi->in.tail_passes = 0;
    fi->in.tail_node = NULL;
    return 1;
}

/* ---- what-ifs ---------------------------------------------------------------------------- */

/* An evaluator of the diagram with every probe on its own grid. */
struct dq_eval *adapt__what_if_eval(struct adapt *a, const struct dq_diagram *g) {
    struct dq_eval *ev = NULL;
    const struct probe *any = NULL;
    size_t nn = dq_diagram_node_count(g);
    for (size_t i = 0; i < nn && !any; i++) {
        const char *name = dq_diagram_node(g, (int)i)->name;
        any = name ? adapt__probe(a, name) : NULL; /* anonymous nodes have no probe */
    }
    if (!any || dq_eval_create(g, any->k, any->n, &ev) != DQ_OK) {
        return NULL;
    }
    for (size_t i = 0; i < nn; i++) {
        const char *name = dq_diagram_node(g, (int)i)->name;
        const struct probe *p = name ? adapt__probe(a, name) : NULL;
        if (p) {
            dq_eval_set_grid(ev, (int)i, p->k, p->n);
        }
    }
    return ev;
}
