/*
 * search_check.c: the node check (what is abnormal at a node against its QTA, its
 * baseline and its calculated ΔQ) and the load tests (does latency rise with the
 * arrivals?). Pure functions of statistics: the caller picks the windows.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_search.h"
#include "search_internal.h"

double search_z_of_p(double p) {
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

double search_z_looks(int looks) {
    return search_z_of_p(0.5 * erfc(SEARCH_Z / sqrt(2.0)) / (looks > 1 ? looks : 1));
}

/* The problem added, NULL when the check holds SEARCH_MAX_PROBLEMS already. */
static struct search_found *add_problem(struct search_check *c, enum search_problem kind, double z,
                                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static struct search_found *add_problem(struct search_check *c, enum search_problem kind, double z,
                                        const char *fmt, ...) {
    if (c->n >= SEARCH_MAX_PROBLEMS) {
        return NULL;
    }
    struct search_found *p = &c->p[c->n++];
    p->kind = kind;
    p->z = z;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    return p;
}

static int cmp_problem(const void *a, const void *b) {
    const struct search_found *x = a, *y = b;
    if (x->kind == SEARCH_QTA || y->kind == SEARCH_QTA) { /* a broken requirement first */
        return (y->kind == SEARCH_QTA) - (x->kind == SEARCH_QTA);
    }
    /* the far tail's z says how surely such passes are new, not how much they weigh: a
     * handful of them gives a z in the tens; any other problem comes first */
    if (x->far != y->far) {
        return x->far - y->far;
    }
    return x->z < y->z ? 1 : (x->z > y->z ? -1 : 0);
}

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

/* One level of the tail check: the share of instances beyond the baseline's q point
 * (moved with the median), now against before, as a binomial z (the count now, given how
 * many there are in all, is binomial with the share of instances now: an exact test that
 * also carries the baseline's own uncertainty about its tail); 0 when it cannot tell.
 * *pr, *pb, *at, *moved: the shares, the point and its move (s), for the sentence. */
static double tail_z(const struct search_stats *r, const struct search_stats *b, double q,
                     double *pr, double *pb, double *at, double *moved) {
    double tb = dq_tangible(b->observed), tr = dq_tangible(r->observed);
    double t, mb, mr;
    if (!(tb > 0.0) || !(tr > 0.0) || dq_quantile(b->observed, q * tb, &t) != DQ_OK ||
        dq_quantile(b->observed, 0.5 * tb, &mb) != DQ_OK ||
        dq_quantile(r->observed, 0.5 * tr, &mr) != DQ_OK) {
        return 0.0;
    }
    /* the point moved with the median, as a shift or as a change of scale, whichever moves
     * it more: a node slower as a whole (a shift) or stretched (a queue) is not a tail
     * problem */
    double shift = mr > mb ? mr - mb : 0.0;
    double scaled = mb > 0.0 && mr > mb ? t * (mr / mb) - t : 0.0;
    shift = scaled > shift ? scaled : shift;
    double nb = (double)b->n_ok, nr = (double)r->n_ok;
    *pb = (tb - dq_cdf_at(b->observed, t)) / tb;
    *pr = (tr - dq_cdf_at(r->observed, t + shift)) / tr;
    *at = t + shift;
    *moved = shift;
    int kb = (int)floor(*pb * nb + 0.5), kr = (int)floor(*pr * nr + 0.5);
    if (kr < 1 || !(*pr > 2.0 * *pb) || kb + kr > 1000000) {
        return 0.0;
    }
    return search_z_of_p(binomial_tail(kb + kr, kr, nr / (nr + nb)));
}

/* P(X ≥ k) for X ~ Poisson(lambda), summed in logs from k up (the terms fall fast once
 * past the mean; the far tail's lambda is far below k). */
static double poisson_tail(int k, double lambda) {
    if (k <= 0) {
        return 1.0;
    }
    if (!(lambda > 0.0)) {
        return 0.0;
    }
    if (lambda >= k) {
        return 1.0; /* at or past the mean: not a surprise, whatever the exact figure */
    }
    double sum = 0.0;
    for (int i = k; i < k + 200; i++) {
        double t = exp(-lambda + i * log(lambda) - lgamma(i + 1.0));
        sum += t;
        if (t < 1e-18 * sum) {
            break;
        }
    }
    return sum < 1.0 ? sum : 1.0;
}

/*
 * The far tail, beyond what the baseline ever showed: the baseline's own tail fitted
 * beyond its 99 % point u with a generalized Pareto law (the law of the excesses over a
 * high point, whatever the distribution: Pickands–Balkema–de Haan), by its moments
 * (shape ξ = ½(1 − m²/s²), scale σ = ½·m·(1 + m²/s²), m and s² the excesses' mean and
 * variance, from the bins' midpoints), then taken cautiously: ξ raised by two of its
 * standard errors (1/√m' at ξ = 0, m' the excesses counted, corrected for correlated
 * instances as the mean's standard error is) and at least 0 (never a lighter tail than
 * an exponential one), σ by as much; no extrapolation when ξ so raised reaches ½ (a tail
 * that heavy says little about farther points). Then for the k-th largest recent
 * instance (k = 3, 5, 8; each a look), beyond the baseline's largest after the median's
 * move: the chance that k or more of the recent instances fall that far under the fitted
 * law (Poisson, with the recent effective count). A handful of passes ten times slower
 * than anything in the baseline is then telling even against a baseline no longer than
 * the recent range, where the count beyond the baseline's largest alone needs seven or
 * more. 0 when it cannot tell (fewer than SEARCH_FAR_MIN_EXCESS excesses, or too heavy
 * a tail); *k, *at, *expect: the count, its point and the count the fitted law expects.
 */
#define SEARCH_FAR_MIN_EXCESS 30

/* The right edge of the baseline's last occupied bin: its largest instance, to a bin. */
static double far_largest(const struct search_stats *b) {
    for (int i = b->observed->n - 1; i >= 0; i--) {
        if (b->observed->pdf[i] > 0.0) {
            return (i + 1) * b->observed->width;
        }
    }
    return 0.0;
}
static const int far_counts[] = {3, 5, 8};
#define N_FAR_COUNTS ((int)(sizeof far_counts / sizeof far_counts[0]))

static double far_tail_z(const struct search_stats *r, const struct search_stats *b, int *k_out,
                         double *at_out, double *expect_out) {
    const struct dq *bo = b->observed, *ro = r->observed;
    double tb = dq_tangible(bo), tr = dq_tangible(ro), u, mb, mr;
    double nb = (double)b->n_ok, nr = (double)r->n_ok;
    /* correlated instances count for fewer: the baseline's factor for both sides (the
     * question is whether the recent instances could come from the baseline's process) */
    double f = nb > 0 ? search_stats_effective_n(b) / (double)search_stats_instances(b) : 0.0;
    if (!(tb > 0.0) || !(tr > 0.0) || !(f > 0.0) || dq_quantile(bo, 0.99 * tb, &u) != DQ_OK ||
        dq_quantile(bo, 0.5 * tb, &mb) != DQ_OK || dq_quantile(ro, 0.5 * tr, &mr) != DQ_OK) {
        return 0.0;
    }
    f = f < 1.0 ? f : 1.0;
    /* a recent point's place in the baseline: moved back with the median, as a shift or a
     * change of scale, whichever moves it more (as the other levels) */
    double dm = mr > mb ? mr - mb : 0.0, scale = mr > mb && mb > 0.0 ? mb / mr : 1.0;
    int iu = (int)lround(u / bo->width) - 1; /* u is the right edge of bin iu */
    double pu = 0.0, m1 = 0.0, m2 = 0.0, largest = far_largest(b);
    for (int i = iu + 1; i < bo->n; i++) {
        double y = (i + 0.5) * bo->width - u, w = bo->pdf[i];
        pu += w, m1 += w * y, m2 += w * y * y;
    }
    double excess = pu / tb * nb * f;
    if (!(excess >= SEARCH_FAR_MIN_EXCESS) || !(m1 > 0.0)) {
        return 0.0;
    }
    m1 /= pu, m2 /= pu;
    double s2 = m2 - m1 * m1, ratio = s2 > 0.0 ? m1 * m1 / s2 : 0.0;
    if (!(ratio > 0.0)) {
        return 0.0;
    }
    double cau = 2.0 / sqrt(excess);
    double xi = fmax(0.5 * (1.0 - ratio), 0.0) + cau;
    double sigma = 0.5 * m1 * (1.0 + ratio) * (1.0 + cau);
    if (xi >= 0.5) {
        return 0.0;
    }
    double p_u = pu / tb, best = 0.0;
    for (int c = 0; c < N_FAR_COUNTS; c++) {
        /* the k-th largest recent instance: the left edge of its bin (its instances are all
         * beyond it) */
        double seen = 0.0, at = NAN;
        for (int j = ro->n - 1; j >= 0 && isnan(at); j--) {
            seen += ro->pdf[j] / tr * nr;
            if (seen >= far_counts[c] - 1e-6) {
                at = j * ro->width;
            }
        }
        double back = isnan(at) ? 0.0 : fmin(at - dm, at * scale), y = back - u;
        int k = (int)floor(far_counts[c] * f + 1e-9);
        if (isnan(at) || back < largest || k < 3) {
            continue;
        }
        double tail = p_u * pow(1.0 + xi * y / sigma, -1.0 / xi);
        double expect = nr * f * tail;
        double z = search_z_of_p(poisson_tail(k, expect) * N_FAR_COUNTS);
        if (z > best) {
            best = z, *k_out = k, *at_out = at, *expect_out = expect;
        }
    }
    return best;
}

/*
 * The tail: rare, very slow instances, counted beyond points of the baseline: its 99.9 %
 * point; (when the baseline holds ten thousand instances or more, so that the point rests
 * on a few of them) its 99.99 % point; and (with a thousand or more) its largest instance.
 * A rare pass ten or a hundred times slower than usual shows beyond all, but beyond the
 * farther ones against almost nothing: a handful of the recent instances beyond every
 * baseline instance is telling (with none before, the chance that the k largest of both
 * sides all fall on the recent side is about its share to the k-th power). Each level is a
 * look: each at the threshold that keeps their joint false alarms at one's.
 */
static void check_tail(const struct search_stats *r, const struct search_stats *b,
                       struct search_check *c) {
    /* the largest: the last occupied bin (a level just under 1, which rounding in the CDF
     * cannot push above the tangible mass) */
    double levels[3] = {0.999};
    int n_levels = 1;
    if (b->n_ok >= 10000) {
        levels[n_levels++] = 0.9999;
    }
    if (b->n_ok >= 1000) {
        levels[n_levels++] = 1.0 - 1e-9;
    }
    /* the far tail, fitted, when the baseline has the excesses to fit it: one more look */
    int far = b->n_ok >= 100 * SEARCH_FAR_MIN_EXCESS;
    double zt = search_z_of_p(0.5 * erfc(c->zt / sqrt(2.0)) / (n_levels + far));
    double best = 0.0, bpr = 0, bpb = 0, bat = 0, bmoved = 0, bq = 0;
    for (int k = 0; k < n_levels; k++) {
        double pr = 0, pb = 0, at = 0, moved = 0;
        double z = tail_z(r, b, levels[k], &pr, &pb, &at, &moved);
        if (z > best) {
            best = z, bpr = pr, bpb = pb, bat = at, bmoved = moved, bq = levels[k];
        }
    }
    int fk = 0;
    double fat = 0.0, fexpect = 0.0;
    double fz = far ? far_tail_z(r, b, &fk, &fat, &fexpect) : 0.0;
    if (fz >= zt && fz > best) {
        char t[DQ_DURATION_TEXT], t2[DQ_DURATION_TEXT];
        struct search_found *fp =
            add_problem(c, SEARCH_VARIANCE, fz,
                        "%d instances beyond %s, where the baseline's own tail (its largest %s, of "
                        "%.0f; fitted beyond its 99 %% point) expects %.2g: rare, very slow passes",
                        fk, search__dur(fat, t, sizeof t),
                        search__dur(far_largest(b), t2, sizeof t2), (double)b->n_ok, fexpect);
        if (fp) {
            fp->far = 1;
            fp->looks = n_levels + far;
        }
        return;
    }
    if (best >= zt) {
        char t[DQ_DURATION_TEXT], point[64];
        if (bq < 1.0 - 1e-6) {
            snprintf(point, sizeof point, "the baseline's %.4g %% point", 100.0 * bq);
        } else {
            snprintf(point, sizeof point, "the baseline's largest, of %.0f", (double)b->n_ok);
        }
        struct search_found *fp =
            add_problem(c, SEARCH_VARIANCE, best,
                        "%.2g %% of instances beyond %s (%s%s) against %.2g %% before: rare, very "
                        "slow passes",
                        100.0 * bpr, search__dur(bat, t, sizeof t), point,
                        bmoved > 0 ? ", moved with the median" : "",
                        bpb < 1e-9 ? 0.0 : 100.0 * bpb); /* rounding in the CDF: none */
        if (fp) {
            fp->looks = n_levels + far;
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * The windows' own means, now against before: the Mann-Whitney z that now's windows are
 * slower (ties count half). It sees a shift that a queue's bursts hide from a test of the
 * pooled means: every window slower than nearly every window before is telling, however
 * much each one scatters. 0 with fewer than 5 windows on a side.
 */
static double window_rank_z(const double *now, int na, const double *before, int nb) {
    if (na < 5 || nb < 5) {
        return 0.0;
    }
    double b[SEARCH_MAX_WINDOW_MEANS];
    nb = nb > SEARCH_MAX_WINDOW_MEANS ? SEARCH_MAX_WINDOW_MEANS : nb;
    na = na > SEARCH_MAX_WINDOW_MEANS ? SEARCH_MAX_WINDOW_MEANS : na;
    memcpy(b, before, (size_t)nb * sizeof b[0]);
    qsort(b, (size_t)nb, sizeof b[0], cmp_double);
    double u = 0.0; /* pairs (now, before) with now slower */
    for (int i = 0; i < na; i++) {
        int lo = 0, hi = nb; /* how many before are below now[i], and equal */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (b[mid] < now[i]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        int below = lo, eq = 0;
        while (below + eq < nb && b[below + eq] == now[i]) {
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

/* The QTA: a hazard, significant at the worst point (a binomial proportion). */
static void check_qta(const struct dq_qta *qta, const struct search_stats *r,
                      struct search_check *c) {
    struct dq_qta_result q;
    if (!r->observed || dq_qta_eval(r->observed, qta, &q) != DQ_OK || q.ok) {
        return;
    }
    double n = (double)search_stats_instances(r);
    double target = q.worst >= 0 ? qta->p[q.worst] : 1.0 - qta->max_lost;
    double se = sqrt(target * (1.0 - target) / (n > 0 ? n : 1.0));
    double z = se > 0 ? q.hazard / se : 40.0;
    if (z < c->zt) {
        return; /* a crossing within the sampling noise */
    }
    if (q.worst >= 0) {
        char t[DQ_DURATION_TEXT];
        add_problem(c, SEARCH_QTA, z,
                    "the QTA wants %.0f %% within %s; %.1f points short over %.0f instances",
                    100.0 * qta->p[q.worst], search__dur(qta->t[q.worst], t, sizeof t),
                    100.0 * q.hazard, n);
    } else {
        add_problem(c, SEARCH_QTA, z, "the QTA allows %.2g %% lost; %.2g %% more were lost",
                    100.0 * qta->max_lost, 100.0 * q.hazard);
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

/* Lost mass: against the baseline, else against the threshold. */
static void check_lost(const struct search_stats *r, const struct search_stats *b,
                       const struct search_params *params, struct search_check *c) {
    double lr = search_stats_lost(r), lb = search_stats_lost(b);
    if (c->has_baseline) {
        double se = hypot(search_stats_lost_se(r), search_stats_lost_se(b));
        double z = se > 0 ? (lr - lb) / se : (lr > lb ? 40.0 : 0.0);
        if (lr - lb > params->lost_threshold && z >= c->zt) {
            add_problem(c, SEARCH_LOST, z, "%.2g %% lost against %.2g %% before", 100.0 * lr,
                        100.0 * lb);
        }
    } else if (lr > params->lost_threshold) {
        double se = search_stats_lost_se(r);
        double z = se > 0 ? (lr - params->lost_threshold) / se : 40.0;
        if (z >= c->zt) {
            add_problem(c, SEARCH_LOST, z, "%.2g %% lost (more than %.2g %%)", 100.0 * lr,
                        100.0 * params->lost_threshold);
        }
    }
}

/* Latency and spread against the baseline; the spread is the within-window variance, so
 * that a level shift inside a range does not count as spread. */
static void check_moments(const struct search_check_input *in, struct search_check *c) {
    const struct search_stats *r = in->recent, *b = in->baseline;
    double vr, ser, vb, seb;
    within_variance(r, &vr, &ser);
    within_variance(b, &vb, &seb);
    double shift = r->mean - b->mean;
    double se = hypot(search_stats_mean_se(r), search_stats_mean_se(b));
    double z = se > 0 ? shift / se : 0.0;
    double zw =
        window_rank_z(in->recent_means, in->n_recent_means, in->base_means, in->n_base_means);
    z = zw > z ? zw : z;
    if (z >= c->zt && vb > 0 && shift > 0.5 * sqrt(vb)) {
        char m1[DQ_DURATION_TEXT], m2[DQ_DURATION_TEXT];
        add_problem(c, SEARCH_LATENCY, z, "mean %s against %s before",
                    search__dur(r->mean, m1, sizeof m1), search__dur(b->mean, m2, sizeof m2));
    }
    if (vb > 0 && vr > 0 && isfinite(ser) && isfinite(seb) && r->mean > 0 && b->mean > 0) {
        /* the spread beyond what the mean explains: a node whose delays grew in scale (a
         * queue) keeps its relative spread and is a latency problem; an erratic one
         * spreads while its mean stays */
        double scale = (r->mean / b->mean) * (r->mean / b->mean);
        double ratio = vr / vb / (scale > 1.0 ? scale : 1.0);
        double sl = hypot(ser / vr, seb / vb); /* se of log(ratio) */
        double zv = sl > 0 ? log(ratio) / sl : 0.0;
        if (ratio >= 1.5 && zv >= c->zt) {
            char s1[DQ_DURATION_TEXT], s2[DQ_DURATION_TEXT];
            add_problem(c, SEARCH_VARIANCE, zv,
                        "spread (sd) %s against %s before (%.2g against %.2g of the mean)",
                        search__dur(sqrt(vr), s1, sizeof s1), search__dur(sqrt(vb), s2, sizeof s2),
                        sqrt(vr) / r->mean, sqrt(vb) / b->mean);
        }
    }
}

/* Observed against calculated: the distributions differ, or the time the node spends
 * beyond what its children account for grew against the baseline. */
static void check_divergence(const struct search_stats *r, const struct search_stats *b,
                             const struct search_params *params, struct search_check *c) {
    if (isfinite(r->ks_d) && r->ks_d > 0.1 && r->ks_p < params->alpha) {
        add_problem(c, SEARCH_DIVERGENCE, search_z_of_p(r->ks_p),
                    "observed and calculated differ (KS D %.3g, p %.2g)", r->ks_d, r->ks_p);
    }
    double gr = dq_mean_or_nan(r->observed) - dq_mean_or_nan(r->calculated);
    double gb = dq_mean_or_nan(b->observed) - dq_mean_or_nan(b->calculated);
    if (c->has_baseline && isfinite(gr) && isfinite(gb)) {
        /* each gap has the uncertainty of an observed mean on both sides */
        double se = sqrt(2.0) * hypot(search_stats_mean_se(r), search_stats_mean_se(b));
        double z = se > 0 ? (gr - gb) / se : 0.0;
        if (z >= c->zt && vb_ok(b) && gr - gb > 0.5 * sqrt(b->variance)) {
            char g1[DQ_DURATION_TEXT], g2[DQ_DURATION_TEXT];
            add_problem(c, SEARCH_DIVERGENCE, z,
                        "%s more than its children account for, against %s before",
                        search__dur(gr, g1, sizeof g1), search__dur(gb, g2, sizeof g2));
        }
    }
}

int search_shift_lagged(const struct dq *now, const struct dq *ref, double lag_s, double n_now,
                        double n_ref, struct search_shift *out) {
    memset(out, 0, sizeof *out);
    if (!now || !ref || now->k != ref->k || now->n != ref->n || !(lag_s >= 0.0)) {
        return DQ_EINVAL; /* another grid (a dMax change in between): not comparable */
    }
    /* the delays of the instances that arrived: lost mass has a test of its own */
    double tb = dq_tangible(ref), tr = dq_tangible(now);
    if (!(tb > 0) || !(tr > 0)) {
        return DQ_EINVAL;
    }
    out->median = NAN;
    /* the reference moved later by lag_s, in whole bins: fb is its CDF lag bins back, f0
     * its own (for its median) */
    int lag = (int)fmin(lround(lag_s / now->width), now->n);
    double f0 = 0, fb = 0, fr = 0, at_b = 0, at_r = 0;
    for (int i = 0; i < now->n; i++) {
        f0 += ref->pdf[i] / tb;
        if (isnan(out->median) && f0 >= 0.5) {
            out->median = (i + 1) * now->width;
        }
        fb += i >= lag ? ref->pdf[i - lag] / tb : 0.0;
        fr += now->pdf[i] / tr;
        double gap = fb - fr;
        if (gap > out->d) {
            out->d = gap, at_b = fb, at_r = fr;
        }
        out->w1 += gap > 0 ? gap * now->width : 0.0;
    }
    out->moved = out->d > 0 ? out->w1 / out->d : 0.0;
    out->level = 0.5 * (at_b + at_r);
    double m = n_now > 0 && n_ref > 0 ? n_now * n_ref / (n_now + n_ref) : 0.0;
    out->z = m > 0 ? search_z_of_p(exp(-2.0 * m * out->d * out->d)) : 0.0; /* one-sided KS */
    return DQ_OK;
}

int search_shift_of(const struct dq *now, const struct dq *ref, double n_now, double n_ref,
                    struct search_shift *out) {
    return search_shift_lagged(now, ref, 0.0, n_now, n_ref, out);
}

double search_log_low(double v, double hw) {
    return v > 0.0 ? v * exp(-(hw > 0.0 ? hw : 0.0) / v) : v - hw;
}

int search_shift_material(const struct search_shift *s, double width) {
    double need = fmax(2.0 * width, SEARCH_SHAPE_TIME * (isnan(s->median) ? 0.0 : s->median));
    return s->d >= SEARCH_SHAPE_MASS && s->moved >= need;
}

/* The whole ΔQ: how far mass moved later against the baseline (dq_search.h, "shape"). */
static void check_shape(const struct search_stats *r, const struct search_stats *b,
                        struct search_check *c) {
    double nr = search_stats_effective_n(r), nb = search_stats_effective_n(b);
    struct search_shift sh;
    if (!(nr > 0) || !(nb > 0) || search_shift_of(r->observed, b->observed, nr, nb, &sh) != DQ_OK ||
        !(sh.d >= SEARCH_SHAPE_MASS)) {
        return;
    }
    if (sh.z < c->zt || !search_shift_material(&sh, r->observed->width)) {
        return;
    }
    char t1[DQ_DURATION_TEXT], t2[DQ_DURATION_TEXT], t3[DQ_DURATION_TEXT];
    struct search_found *fp = add_problem(
        c, SEARCH_SHAPE, sh.z,
        "%.2g %% of its mass moved later (one-sided KS D %.3g over %.0f and %.0f effective "
        "instances), %s of delay in all (W1+: that mass later by %s on average; its "
        "median before %s)",
        100.0 * sh.d, sh.d, nr, nb, search__dur(sh.w1, t1, sizeof t1),
        search__dur(sh.moved, t2, sizeof t2),
        search__dur(isnan(sh.median) ? 0.0 : sh.median, t3, sizeof t3));
    if (fp) {
        fp->level = sh.level;
    }
}

void search_check(const struct search_check_input *in, const struct search_params *params,
                  struct search_check *c) {
    memset(c, 0, sizeof *c);
    c->zt = in->zt;
    const struct search_stats *r = in->recent, *b = in->baseline;
    c->recent = *r;
    c->recent.observed = c->recent.calculated = NULL;
    c->baseline = *b;
    c->baseline.observed = c->baseline.calculated = NULL;
    c->has_qta = in->qta != NULL;
    c->has_baseline = b->present && b->windows >= SEARCH_BASELINE_WINDOWS;
    c->has_calculated = r->calculated != NULL;
    if (!r->present) {
        return;
    }
    if (c->has_qta) {
        check_qta(in->qta, r, c);
    }
    check_lost(r, b, params, c);
    if (c->has_baseline && r->n_ok > 10 && b->n_ok > 10) {
        check_moments(in, c);
    }
    /* the tail: rare, very slow instances (an erratic part) barely move a variance
     * estimated over a few windows, but they pile up beyond the baseline's 99.9 % point */
    if (c->has_baseline && r->observed && b->observed) {
        check_tail(r, b, c);
    }
    check_divergence(r, b, params, c);
    if (c->has_baseline) {
        check_shape(r, b, c);
    }
    /* most significant first, a QTA before all; equal ones in the order found (stable) */
    for (int i = 1; i < c->n; i++) {
        struct search_found x = c->p[i];
        int j = i - 1;
        while (j >= 0 && cmp_problem(&c->p[j], &x) > 0) {
            c->p[j + 1] = c->p[j];
            j--;
        }
        c->p[j + 1] = x;
    }
}

/* ---- load --------------------------------------------------------------------------------- */

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

double search_rate_latency_z(const double *rate, const double *mean, int n) {
    if (n < 10) {
        return 0.0;
    }
    n = n > SEARCH_MAX_RATE_WINDOWS ? SEARCH_MAX_RATE_WINDOWS : n;
    double rr[SEARCH_MAX_RATE_WINDOWS], rm[SEARCH_MAX_RATE_WINDOWS];
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

int search_load_rose(double rz, const struct search_check *c, int looks, char *why, size_t cap) {
    double zt = search_z_looks(looks);
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

int search_load_shaped(enum search_problem p) {
    return p == SEARCH_LATENCY || p == SEARCH_QTA || p == SEARCH_VARIANCE;
}
