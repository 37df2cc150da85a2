/*
 * stats.c: a probe's statistics over a range of its closed windows, and the node check:
 * what is abnormal at a node, judged against its references.
 *
 * A node's references are its QTA and its baseline (its own earlier windows, once there
 * are enough of them); its calculated ΔQ (from its children) is checked too, but it is
 * not a reference by itself: a part can be slow since the start and the whole still add
 * up. The check lists every problem it finds with a z-score, most significant first:
 *
 *   qta         the observed ΔQ crosses the QTA (a hazard), or loses more than it allows
 *   lost        the lost fraction rose against the baseline, or, with no baseline, lies
 *               significantly above params.lost_threshold
 *   latency     the mean rose against the baseline, significantly (the pooled means, or the
 *               windows' own means ranked against the baseline's) and by at least half
 *               a baseline standard deviation
 *   variance    the spread within windows grew against the baseline by half or more,
 *               significantly (a level shift inside the range does not count)
 *   divergence  observed and calculated differ (KS D over 0.1, p under params.alpha), or
 *               the time the node spends beyond what its children account for (observed
 *               mean minus calculated mean) grew against the baseline, significantly
 *               and by half a baseline standard deviation
 *
 * Standard errors are batch-means aware (search_stats_mean_se and friends): under load
 * the instances of one window are correlated and σ/√n would be far too optimistic.
 *
 * A z-score of ADAPT_Z (3) is "significant": about one false alarm in 700 per kind.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a probe's windows -------------------------------------------------------------------- */

void adapt__node_stats_release(struct node_stats *ns) {
    dq_destroy(ns->obs);
    dq_destroy(ns->calc);
    ns->obs = ns->calc = NULL;
}

/* Adds w·src into *acc (created on first use on src's grid; other grids are skipped). */
static void mix_into(struct dq **acc, const struct dq *src, double w) {
    if (!src || w <= 0.0) {
        return;
    }
    if (!*acc) {
        if (dq_never(src->k, src->n, acc) != DQ_OK) {
            return;
        }
    }
    if ((*acc)->k != src->k || (*acc)->n != src->n) {
        return;
    }
    for (int i = 0; i < src->n; i++) {
        (*acc)->pdf[i] += w * src->pdf[i];
    }
}

/* Divides a mixture built with raw weights by their total. */
static void mix_normalise(struct dq *acc, double total) {
    for (int i = 0; acc && total > 0.0 && i < acc->n; i++) {
        acc->pdf[i] /= total;
    }
}

void adapt__gather(const struct probe *p, int64_t from, int64_t to, struct node_stats *ns) {
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
        if (w->wid >= to || n == 0) {
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
    if (obs_pair && ns->calc) {
        double dd, pv;
        if (dq_ks(obs_pair, ns->calc, (uint64_t)total_pair, 0, &dd, &pv) == DQ_OK) {
            ns->s.ks_d = dd;
            ns->s.ks_p = pv;
        }
    }
    dq_destroy(obs_pair);
    if (ns->obs && p->has_qta) {
        struct dq_qta_result r;
        if (dq_qta_eval(ns->obs, &p->qta, &r) == DQ_OK) {
            ns->s.qta_hazard = r.hazard;
        }
    }
}

void adapt__within(const struct probe *p, int64_t from, int64_t to, double *mean, double *var,
                   double *n) {
    double sw = 0, sm = 0, sv = 0;
    for (int b = 0; p && b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get((struct probe *)p, b);
        if (w->wid < from) {
            break;
        }
        if (w->wid < to && w->ok > 0) {
            sw += (double)w->ok;
            sm += (double)w->ok * w->mean;
            sv += (double)w->ok * w->variance;
        }
    }
    *n = sw;
    *mean = sw > 0 ? sm / sw : NAN;
    *var = sw > 0 ? sv / sw : NAN;
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

/* The z-score of a one-sided p-value (p = P(Z > z)), 40 for p = 0. */
static double z_of_p(double p) {
    if (!(p > 0.0)) {
        return 40.0;
    }
    if (p >= 0.5) {
        return 0.0;
    }
    double lo = 0.0, hi = 40.0; /* 0.5·erfc(z/√2) falls from 0.5 to 0: bisect */
    for (int i = 0; i < 80; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(mid / sqrt(2.0)) > p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

static void add_problem(struct adapt_check *c, enum search_problem kind, double z, const char *fmt,
                        ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* P(X ≥ k) for X ~ Binomial(n, q), summed in logs. */
static double binomial_tail(int n, int k, double q) {
    if (k <= 0) {
        return 1.0;
    }
    if (k > n || !(q > 0.0)) {
        return 0.0;
    }
    if (!(q < 1.0)) {
        return 1.0;
    }
    double sum = 0.0;
    for (int i = k; i <= n; i++) {
        double lt = lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) + i * log(q) +
                    (n - i) * log1p(-q);
        sum += exp(lt);
    }
    return sum < 1.0 ? sum : 1.0;
}

/*
 * The tail against the baseline: the successful instances beyond the baseline's 99.9 %
 * point (moved with the median) now and in the baseline. Given how many there are in
 * all, the count now is binomial with the share of instances now: an exact test that
 * also carries the baseline's own uncertainty about its tail.
 */
/* One level of the tail check: the share of instances beyond the baseline's q point
 * (moved with the median), now against before, as a binomial z; 0 when it cannot tell.
 * *pr, *pb, *at: the shares and the point (s), for the sentence. */
static double tail_z(const struct node_stats *r, const struct node_stats *b, double q, double *pr,
                     double *pb, double *at, double *moved) {
    double tb = dq_tangible(b->obs), tr = dq_tangible(r->obs);
    double t, mb, mr;
    if (!(tb > 0.0) || !(tr > 0.0) || dq_quantile(b->obs, q * tb, &t) != DQ_OK ||
        dq_quantile(b->obs, 0.5 * tb, &mb) != DQ_OK ||
        dq_quantile(r->obs, 0.5 * tr, &mr) != DQ_OK) {
        return 0.0;
    }
    /* the point moved with the median, as a shift or as a change of scale, whichever moves
     * it more: a node slower as a whole (a shift) or stretched (a queue) is not a tail
     * problem */
    double shift = mr > mb ? mr - mb : 0.0;
    double scaled = mb > 0.0 && mr > mb ? t * (mr / mb) - t : 0.0;
    shift = scaled > shift ? scaled : shift;
    double nb = (double)b->s.n_ok, nr = (double)r->s.n_ok;
    *pb = (tb - dq_cdf_at(b->obs, t)) / tb;
    *pr = (tr - dq_cdf_at(r->obs, t + shift)) / tr;
    *at = t + shift;
    *moved = shift;
    int kb = (int)floor(*pb * nb + 0.5), kr = (int)floor(*pr * nr + 0.5);
    if (kr < 1 || !(*pr > 2.0 * *pb) || kb + kr > 1000000) {
        return 0.0;
    }
    return z_of_p(binomial_tail(kb + kr, kr, nr / (nr + nb)));
}

/*
 * The tail: rare, very slow instances, counted beyond two points of the baseline, its
 * 99.9 % and (when the baseline holds ten thousand instances or more, so that the point
 * rests on a few of them) its 99.99 % point. A rare pass ten or a hundred times slower
 * than usual shows beyond both, but beyond the farther one against almost nothing: in
 * the diagnosis matrix, an erratic step on the choice's miss path (one request in about
 * 500 slowed) put 0.17–0.25 % of the root's instances beyond its 99.99 % point against
 * 0.008 % before, while the 99.9 % point alone missed it in 4 of 40 runs. Two levels are
 * two looks: each at the threshold that keeps their joint false alarms at one's.
 */
static void check_tail(const struct node_stats *r, const struct node_stats *b,
                       struct adapt_check *c) {
    static const double levels[] = {0.999, 0.9999};
    const int n_levels = b->s.n_ok >= 10000 ? 2 : 1;
    double zt = z_of_p(0.5 * erfc(c->zt / sqrt(2.0)) / n_levels);
    double best = 0.0, bpr = 0, bpb = 0, bat = 0, bmoved = 0, bq = 0;
    for (int k = 0; k < n_levels; k++) {
        double pr = 0, pb = 0, at = 0, moved = 0;
        double z = tail_z(r, b, levels[k], &pr, &pb, &at, &moved);
        if (z > best) {
            best = z, bpr = pr, bpb = pb, bat = at, bmoved = moved, bq = levels[k];
        }
    }
    if (best >= zt) {
        add_problem(c, SEARCH_VARIANCE, best,
                    "%.2g %% of instances beyond %.3g ms (the baseline's %.4g %% point%s) "
                    "against %.2g %% before: rare, very slow passes",
                    100.0 * bpr, bat * 1e3, 100.0 * bq, bmoved > 0 ? ", moved with the median" : "",
                    100.0 * bpb);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * The windows' own means, now (from ≤ wid < to) against before (bfrom ≤ wid < from):
 * the Mann-Whitney z that now's windows are slower (ties count half). It sees a shift
 * that a queue's bursts hide from a test of the pooled means: every window slower than
 * nearly every window before is telling, however much each one scatters. 0 with fewer
 * than 5 windows on a side.
 */
static double window_rank_z(const struct probe *p, int64_t bfrom, int64_t from, int64_t to) {
    double a[ADAPT_BASELINE_SPAN + 64], b[ADAPT_BASELINE_SPAN + 64];
    int na = 0, nb = 0;
    for (int k = 0; p && k < p->ring_len; k++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, k);
        if (w->wid < bfrom) {
            break;
        }
        if (w->ok == 0 || w->wid >= to) {
            continue;
        }
        if (w->wid >= from && na < (int)(sizeof a / sizeof a[0])) {
            a[na++] = w->mean;
        } else if (w->wid < from && nb < (int)(sizeof b / sizeof b[0])) {
            b[nb++] = w->mean;
        }
    }
    if (na < 5 || nb < 5) {
        return 0.0;
    }
    qsort(b, (size_t)nb, sizeof b[0], cmp_double);
    double u = 0.0; /* pairs (now, before) with now slower */
    for (int i = 0; i < na; i++) {
        int lo = 0, hi = nb; /* how many before are below a[i], and equal */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (b[mid] < a[i]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        int below = lo, eq = 0;
        while (below + eq < nb && b[below + eq] == a[i]) {
            eq++;
        }
        u += below + 0.5 * eq;
    }
    double n1 = na, n2 = nb;
    double sd = sqrt(n1 * n2 * (n1 + n2 + 1.0) / 12.0);
    return sd > 0 ? (u - n1 * n2 / 2.0) / sd : 0.0;
}

/* 1 when a node's variance is known and positive. */
static int vb_ok(const struct search_stats *s) {
    return s->n_ok > 1 && s->variance > 0.0;
}

/* ---- the node check ------------------------------------------------------------------------ */

static void add_problem(struct adapt_check *c, enum search_problem kind, double z, const char *fmt,
                        ...) {
    if (c->n >= ADAPT_MAX_PROBLEMS) {
        return;
    }
    struct adapt_problem *p = &c->p[c->n++];
    p->kind = kind;
    p->z = z;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
}

static int cmp_problem(const void *a, const void *b) {
    const struct adapt_problem *x = a, *y = b;
    if (x->kind == SEARCH_QTA || y->kind == SEARCH_QTA) { /* a broken requirement first */
        return (y->kind == SEARCH_QTA) - (x->kind == SEARCH_QTA);
    }
    return x->z < y->z ? 1 : (x->z > y->z ? -1 : 0);
}

/* The QTA: a hazard, significant at the worst point (a binomial proportion). */
static void check_qta(const struct probe *p, const struct node_stats *r, struct adapt_check *c) {
    struct dq_qta_result q;
    if (!p->has_qta || !r->obs || dq_qta_eval(r->obs, &p->qta, &q) != DQ_OK || q.ok) {
        return;
    }
    double n = (double)search_stats_instances(&r->s);
    double target = q.worst >= 0 ? p->qta.p[q.worst] : 1.0 - p->qta.max_lost;
    double se = sqrt(target * (1.0 - target) / (n > 0 ? n : 1.0));
    double z = se > 0 ? q.hazard / se : 40.0;
    if (z < c->zt) {
        return; /* a crossing within the sampling noise */
    }
    if (q.worst >= 0) {
        add_problem(c, SEARCH_QTA, z,
                    "the QTA wants %.0f %% within %.3g ms; %.1f points short over %.0f instances",
                    100.0 * p->qta.p[q.worst], p->qta.t[q.worst] * 1e3, 100.0 * q.hazard, n);
    } else {
        add_problem(c, SEARCH_QTA, z, "the QTA allows %.2g %% lost; %.2g %% more were lost",
                    100.0 * p->qta.max_lost, 100.0 * q.hazard);
    }
}

/* Mean of a ΔQ's successes, NAN when it has none. */
static double dq_mean_or_nan(const struct dq *q) {
    struct dq_moments m;
    return q && dq_moments(q, &m) == DQ_OK ? m.mean : NAN;
}

/* Within-window variance (the ok-weighted mean of the windows' own variances) and its
 * standard error (batch means, else Var(s²) ≈ 2σ⁴/n). */
static void within_variance(const struct search_stats *s, double *v, double *se) {
    const struct search_batch *b = &s->b_var;
    *v = b->w > 0.0 ? b->ref + b->wd / b->w : NAN;
    double n = (double)s->n_ok;
    double iid = isfinite(*v) && n > 1.0 ? *v * sqrt(2.0 / (n - 1.0)) : NAN;
    *se = search_stats_variance_se(s, iid);
}

/* The check over the last `horizon` windows (since `from`) against the baseline before
 * them, with z threshold zt. */
static void check_range(struct plan *pl, const struct probe *p, int64_t from, int horizon,
                        double zt, struct adapt_check *c) {
    const struct search_params *params = &pl->a->params;
    memset(c, 0, sizeof *c);
    c->zt = zt;
    int64_t upto = pl->upto;
    int64_t rfrom = from > upto - horizon ? from : upto - horizon;
    struct node_stats r, b;
    adapt__gather(p, rfrom - ADAPT_BASELINE_SPAN, rfrom, &b);
    if (!(b.s.present && b.s.windows >= ADAPT_BASELINE_WINDOWS)) {
        /* no baseline to split the history from: all of it (since `from`, at most
         * ADAPT_BASELINE_WINDOWS windows) is "now", which gives the absolute tests (lost
         * mass, QTA) the most samples */
        adapt__node_stats_release(&b);
        int64_t longest = upto - ADAPT_BASELINE_WINDOWS;
        rfrom = from > longest ? from : longest;
        adapt__gather(p, rfrom - ADAPT_BASELINE_SPAN, rfrom, &b);
    }
    adapt__gather(p, rfrom, upto, &r);
    c->recent = r.s;
    c->recent.observed = c->recent.calculated = NULL;
    c->baseline = b.s;
    c->baseline.observed = c->baseline.calculated = NULL;
    c->has_qta = p && p->has_qta;
    c->has_baseline = b.s.present && b.s.windows >= ADAPT_BASELINE_WINDOWS;
    c->has_calculated = r.calc != NULL;
    if (!r.s.present) {
        goto out;
    }
    double lr = search_stats_lost(&r.s), lb = search_stats_lost(&b.s);
    if (c->has_qta) {
        check_qta(p, &r, c);
    }
    /* lost mass: against the baseline, else against the threshold */
    if (c->has_baseline) {
        double se = hypot(search_stats_lost_se(&r.s), search_stats_lost_se(&b.s));
        double z = se > 0 ? (lr - lb) / se : (lr > lb ? 40.0 : 0.0);
        if (lr - lb > params->lost_threshold && z >= c->zt) {
            add_problem(c, SEARCH_LOST, z, "%.2g %% lost against %.2g %% before", 100.0 * lr,
                        100.0 * lb);
        }
    } else if (lr > params->lost_threshold) {
        double se = search_stats_lost_se(&r.s);
        double z = se > 0 ? (lr - params->lost_threshold) / se : 40.0;
        if (z >= c->zt) {
            add_problem(c, SEARCH_LOST, z, "%.2g %% lost (more than %.2g %%)", 100.0 * lr,
                        100.0 * params->lost_threshold);
        }
    }
    /* latency and spread against the baseline; the spread is the within-window variance,
     * so that a level shift inside a range does not count as spread */
    if (c->has_baseline && r.s.n_ok > 10 && b.s.n_ok > 10) {
        double vr, ser, vb, seb;
        within_variance(&r.s, &vr, &ser);
        within_variance(&b.s, &vb, &seb);
        double shift = r.s.mean - b.s.mean;
        double se = hypot(search_stats_mean_se(&r.s), search_stats_mean_se(&b.s));
        double z = se > 0 ? shift / se : 0.0;
        double zw = window_rank_z(p, rfrom - ADAPT_BASELINE_SPAN, rfrom, upto);
        z = zw > z ? zw : z;
        if (z >= c->zt && vb > 0 && shift > 0.5 * sqrt(vb)) {
            add_problem(c, SEARCH_LATENCY, z, "mean %.3g ms against %.3g ms before", r.s.mean * 1e3,
                        b.s.mean * 1e3);
        }
        if (vb > 0 && vr > 0 && isfinite(ser) && isfinite(seb) && r.s.mean > 0 && b.s.mean > 0) {
            /* the spread beyond what the mean explains: a node whose delays grew in scale
             * (a queue) keeps its relative spread and is a latency problem; an erratic
             * one spreads while its mean stays */
            double scale = (r.s.mean / b.s.mean) * (r.s.mean / b.s.mean);
            double ratio = vr / vb / (scale > 1.0 ? scale : 1.0);
            double sl = hypot(ser / vr, seb / vb); /* se of log(ratio) */
            double zv = sl > 0 ? log(ratio) / sl : 0.0;
            if (ratio >= 1.5 && zv >= c->zt) {
                add_problem(c, SEARCH_VARIANCE, zv,
                            "spread (sd) %.3g ms against %.3g ms before (%.2g against %.2g of "
                            "the mean)",
                            sqrt(vr) * 1e3, sqrt(vb) * 1e3, sqrt(vr) / r.s.mean,
                            sqrt(vb) / b.s.mean);
            }
        }
    }
    /* the tail: rare, very slow instances (an erratic part) barely move a variance
     * estimated over a few windows, but they pile up beyond the baseline's 99.9 % point */
    if (c->has_baseline && r.obs && b.obs) {
        check_tail(&r, &b, c);
    }
    /* observed against calculated: the distributions differ, or the time the node spends
     * beyond what its children account for grew against the baseline */
    if (isfinite(r.s.ks_d) && r.s.ks_d > 0.1 && r.s.ks_p < params->alpha) {
        add_problem(c, SEARCH_DIVERGENCE, z_of_p(r.s.ks_p),
                    "observed and calculated differ (KS D %.3g, p %.2g)", r.s.ks_d, r.s.ks_p);
    }
    double gr = dq_mean_or_nan(r.obs) - dq_mean_or_nan(r.calc);
    double gb = dq_mean_or_nan(b.obs) - dq_mean_or_nan(b.calc);
    if (c->has_baseline && isfinite(gr) && isfinite(gb)) {
        /* each gap has the uncertainty of an observed mean on both sides */
        double se = sqrt(2.0) * hypot(search_stats_mean_se(&r.s), search_stats_mean_se(&b.s));
        double z = se > 0 ? (gr - gb) / se : 0.0;
        if (z >= c->zt && vb_ok(&b.s) && gr - gb > 0.5 * sqrt(b.s.variance)) {
            add_problem(c, SEARCH_DIVERGENCE, z,
                        "%.3g ms more than its children account for, against %.3g ms before",
                        gr * 1e3, gb * 1e3);
        }
    }
    qsort(c->p, (size_t)c->n, sizeof c->p[0], cmp_problem);
out:
    adapt__node_stats_release(&r);
    adapt__node_stats_release(&b);
}

void adapt__check_node(struct plan *pl, const struct probe *p, int64_t from,
                       struct adapt_check *c) {
    /* "now" at three horizons (a change of a few windows ago, or of a few tens), each
     * against the baseline before it; the first that shows a problem is kept. Three looks:
     * each at the threshold that keeps their joint false alarms at one look's. */
    static const int horizons[] = {ADAPT_RECENT_WINDOWS, 2 * ADAPT_RECENT_WINDOWS,
                                   4 * ADAPT_RECENT_WINDOWS};
    const int looks = (int)(sizeof horizons / sizeof horizons[0]);
    double zt = z_of_p(0.5 * erfc(ADAPT_Z / sqrt(2.0)) / looks);
    struct adapt_check *longer = malloc(sizeof *longer);
    check_range(pl, p, from, horizons[0], zt, c);
    for (int k = 1;
         longer && k < looks && c->n == 0 && c->has_baseline && from <= pl->upto - horizons[k];
         k++) {
        check_range(pl, p, from, horizons[k], zt, longer);
        if (longer->n > 0 && longer->has_baseline) {
            *c = *longer;
        }
    }
    free(longer);
}

/* Ranks of x[0 … n) into r (ties share their mean rank; values within a relative 1e-6
 * are ties: the same durations, rounded to nanoseconds or summed in another order, differ
 * in their last digits, and no measurement is finer than that). */
static void ranks_of(const double *x, int n, double *r) {
    for (int i = 0; i < n; i++) {
        int less = 0, eq = 0;
        for (int j = 0; j < n; j++) {
            double tol = 1e-6 * fmax(fabs(x[i]), fabs(x[j]));
            int same = fabs(x[j] - x[i]) <= tol;
            less += !same && x[j] < x[i];
            eq += same;
        }
        r[i] = less + 0.5 * (eq + 1);
    }
}

double adapt__rate_latency_z(struct plan *pl, const struct probe *p) {
    double rate[128], mean[128], rr[128], rm[128];
    int n = 0;
    double window_s = (double)core_window_ns(pl->a->env.core) * 1e-9;
    for (int i = 0; p && i < p->ring_len && n < 128; i++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, i);
        if (w->wid >= pl->upto || w->ok < 10) {
            continue;
        }
        rate[n] = (double)(w->ok + w->fa + w->to + w->out) / window_s;
        mean[n] = w->mean;
        n++;
    }
    if (n < 10) {
        return 0.0;
    }
    ranks_of(rate, n, rr);
    ranks_of(mean, n, rm);
    double mr = 0.5 * (n + 1.0), sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sxy += (rr[i] - mr) * (rm[i] - mr);
        sxx += (rr[i] - mr) * (rr[i] - mr);
        syy += (rm[i] - mr) * (rm[i] - mr);
    }
    double rho = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0.0;
    return rho * sqrt(n - 1.0); /* Spearman's ρ against no correlation */
}

double adapt__rate_latency_zt(int looks) {
    return z_of_p(0.5 * erfc(ADAPT_Z / sqrt(2.0)) / (looks > 1 ? looks : 1));
}

int adapt__load_rose(struct plan *pl, const struct probe *p, const struct adapt_check *c, int looks,
                     char *why, size_t cap) {
    double zt = adapt__rate_latency_zt(looks);
    double rz = adapt__rate_latency_z(pl, p);
    if (rz >= zt) {
        snprintf(why, cap, "its latency rises with its arrivals (Spearman z %.1f over its windows)",
                 rz);
        return 1;
    }
    /* against its baseline: more arrivals per window now, significantly and by a fifth */
    if (c && c->has_baseline && c->recent.windows > 0 && c->baseline.windows > 0) {
        double wr = c->recent.windows, wb = c->baseline.windows;
        double r = (double)search_stats_instances(&c->recent) / wr;
        double b = (double)search_stats_instances(&c->baseline) / wb;
        double se = sqrt(r / wr + b / wb);
        double z = se > 0 ? (r - b) / se : 0.0;
        if (b > 0 && r >= 1.2 * b && z >= zt) {
            snprintf(why, cap,
                     "its arrivals rose %.2f× against its baseline (%.0f against %.0f a window, "
                     "z %.1f) with its latency",
                     r / b, r, b, z);
            return 1;
        }
    }
    if (cap > 0) {
        why[0] = '\0';
    }
    return 0;
}

json_t *adapt__check_json(const char *node, const struct adapt_check *c) {
    json_t *problems = json_array();
    for (int i = 0; i < c->n; i++) {
        json_array_append_new(problems,
                              json_pack("{s:s,s:f,s:s}", "kind", search_problem_name(c->p[i].kind),
                                        "z", c->p[i].z, "why", c->p[i].why));
    }
    json_t *o = json_pack("{s:o,s:{s:b,s:b,s:b},s:o}", "node", adapt__stats_json(node, &c->recent),
                          "references", "qta", c->has_qta, "baseline", c->has_baseline,
                          "calculated", c->has_calculated, "problems", problems);
    if (c->baseline.present) {
        json_object_set_new(o, "baseline", adapt__stats_json(node, &c->baseline));
    }
    return o;
}
