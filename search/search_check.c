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

double search_z_shared(double zt, int looks) {
    return search_z_of_p(0.5 * erfc(zt / sqrt(2.0)) / (looks > 1 ? looks : 1));
}

double search_z_looks(int looks) {
    return search_z_shared(SEARCH_Z, looks);
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

/* P(X ≥ k) for X ~ Poisson(lambda), continued to a real k > 0 as the regularized lower
 * incomplete gamma function P(k, lambda) (the same value at whole k; a count scaled by a
 * design effect is no longer whole): its series, which converges fast for lambda below k,
 * the only case asked (at or past the mean, 1: not a surprise, whatever the exact figure). */
static double poisson_tail(double k, double lambda) {
    if (!(k > 0.0)) {
        return 1.0;
    }
    if (!(lambda > 0.0)) {
        return 0.0;
    }
    if (lambda >= k) {
        return 1.0;
    }
    double term = 1.0 / k, sum = term;
    for (int n = 1; n < 500; n++) {
        term *= lambda / (k + n);
        sum += term;
        if (term < 1e-17 * sum) {
            break;
        }
    }
    double p = exp(k * log(lambda) - lambda - lgamma(k)) * sum;
    return p < 1.0 ? p : 1.0;
}

/*
 * The far tail, beyond what the baseline ever showed (dq_search.h, "variance"; docs/
 * diagnosis.md, "The far tail"). The fit is the baseline's alone (far_fit_of), so that
 * the look counts only when there is a fit to look with.
 */
#define SEARCH_FAR_MIN_EXCESS 30 /* excesses over the 99 % point (effective) to fit */
#define SEARCH_FAR_GATE_Z 1.5    /* the count beyond the baseline's largest must say as much */
#define SEARCH_FAR_MIN_COUNT 2.0 /* the least count, scaled by the design effect, weighed */
static const int far_counts[] = {1, 2, 3, 5, 8}; /* the first two only in a suggestive check */
#define N_FAR_COUNTS ((int)(sizeof far_counts / sizeof far_counts[0]))

struct far_fit {
    double u, p_u, xi, sigma; /* the fitted law beyond u: p_u·(1 + ξ·y/σ)^(−1/ξ) */
    double largest;           /* the baseline's largest instance (a bin's right edge) */
    double f;                 /* its effective share of instances (≤ 1) */
    double median;
};

/* The right edge of the last occupied bin: a ΔQ's largest instance, to a bin. */
static double dq_largest(const struct dq *d) {
    return (dq_last_bin(d) + 1) * d->width;
}

/* The baseline's excesses over its 99 % point u fitted with a generalized Pareto law by
 * their moments (bins' midpoints), taken cautiously: shape ξ̂ = ½(1 − m²/s²) clipped at 0
 * and raised by 2/√m′ (two of its standard errors at ξ = 0, m′ the excesses counted with
 * the baseline's correction for correlated instances), scale ½·m·(1 + m²/s²) raised in the
 * same proportion. 0 when there is no fit: u at 0 (the mass at zero reaches 99 %), fewer
 * than SEARCH_FAR_MIN_EXCESS excesses, or ξ so raised reaching ½ (a tail that heavy says
 * little about farther points). */
static int far_fit_of(const struct search_stats *b, struct far_fit *fit) {
    const struct dq *bo = b->observed;
    double tb = dq_tangible(bo), nb = (double)b->n_ok, u;
    double f = nb > 0 ? search_stats_effective_n(b) / (double)search_stats_instances(b) : 0.0;
    if (!(tb > 0.0) || !(f > 0.0) || dq_quantile(bo, 0.99 * tb, &u) != DQ_OK || !(u > 0.0) ||
        dq_quantile(bo, 0.5 * tb, &fit->median) != DQ_OK) {
        return 0;
    }
    fit->f = f < 1.0 ? f : 1.0;
    int iu = (int)lround(u / bo->width) - 1; /* u is the right edge of bin iu */
    double pu = 0.0, m1 = 0.0, m2 = 0.0;
    for (int i = iu + 1; i < bo->n; i++) {
        double y = (i + 0.5) * bo->width - u, w = bo->pdf[i];
        pu += w, m1 += w * y, m2 += w * y * y;
    }
    double excess = pu / tb * nb * fit->f;
    if (!(excess >= SEARCH_FAR_MIN_EXCESS) || !(m1 > 0.0)) {
        return 0;
    }
    m1 /= pu, m2 /= pu;
    double s2 = m2 - m1 * m1, ratio = s2 > 0.0 ? m1 * m1 / s2 : 0.0;
    if (!(ratio > 0.0)) {
        return 0;
    }
    double cau = 2.0 / sqrt(excess);
    fit->xi = fmax(0.5 * (1.0 - ratio), 0.0) + cau;
    fit->sigma = 0.5 * m1 * (1.0 + ratio) * (1.0 + cau);
    fit->u = u;
    fit->p_u = pu / tb;
    fit->largest = dq_largest(bo);
    return fit->xi < 0.5;
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : (x < y ? 1 : 0);
}

/*
 * The far level's z: for the k-th largest recent pass (k = 3, 5, 8, and in a suggestive
 * check, whose problem only starts a watch, also 1 and 2, with no least count; each a look) beyond
 * the baseline's largest once moved back with the median (as a shift or a change of scale,
 * whichever moves it more, as the other levels), the chance under the fitted law of k or
 * more recent passes that far (Poisson). With the recent windows' largest passes
 * (in->recent_max), the k are k windows: a burst of slow passes in one window counts once;
 * the windows holding a far pass are never more than the passes, so the passes the law
 * expects bound what it expects of them (windows taken as independent: a slow spell over
 * neighbouring windows counts in each). Else k instances of the recent ΔQ, the count and
 * the recent instances scaled by the baseline's correction for correlated instances (the
 * question is whether the recent ones could come from the baseline's process), and no
 * count weighed below SEARCH_FAR_MIN_COUNT. *k_out, *at, *expect: the passes beyond the
 * point found (all of them, not only k), the point, and what the law expects there.
 */
static double far_tail_z(const struct search_check_input *in, const struct far_fit *fit, int *k_out,
                         double *at_out, double *expect_out) {
    const struct search_stats *r = in->recent;
    const struct dq *ro = r->observed;
    double tr = dq_tangible(ro), nr = (double)r->n_ok, mr;
    if (!(tr > 0.0) || dq_quantile(ro, 0.5 * tr, &mr) != DQ_OK) {
        return 0.0;
    }
    double dm = mr > fit->median ? mr - fit->median : 0.0;
    double scale = mr > fit->median && fit->median > 0.0 ? fit->median / mr : 1.0;
    double maxes[SEARCH_MAX_WINDOW_MEANS];
    int nw = in->recent_max ? in->n_recent_max : 0;
    nw = nw > SEARCH_MAX_WINDOW_MEANS ? SEARCH_MAX_WINDOW_MEANS : nw;
    if (nw > 0) {
        memcpy(maxes, in->recent_max, (size_t)nw * sizeof maxes[0]);
        qsort(maxes, (size_t)nw, sizeof maxes[0], cmp_desc);
    }
    double best = 0.0;
    int first = in->suggest ? 0 : 2, counts = N_FAR_COUNTS - first;
    for (int c = first; c < N_FAR_COUNTS; c++) {
        int k = far_counts[c];
        /* the point: the k-th window's (each of the k windows has a pass beyond it), or
         * the left edge of the k-th largest instance's bin */
        double at = NAN;
        if (nw > 0) {
            at = k <= nw ? maxes[k - 1] : NAN;
        } else {
            double seen = 0.0;
            for (int j = ro->n - 1; j >= 0 && isnan(at); j--) {
                seen += ro->pdf[j] / tr * nr;
                at = seen >= k - 1e-6 ? j * ro->width : NAN;
            }
        }
        double back = isnan(at) ? 0.0 : fmin(at - dm, at * scale), y = back - fit->u;
        if (isnan(at) || back < fit->largest) {
            continue;
        }
        double tail = fit->p_u * pow(1.0 + fit->xi * y / fit->sigma, -1.0 / fit->xi);
        double expect = nr * tail, f = nw > 0 ? 1.0 : fit->f;
        if (k * f < SEARCH_FAR_MIN_COUNT && !in->suggest) {
            continue; /* a burst of correlated passes weighs as fewer than a few */
        }
        double z = search_z_of_p(poisson_tail(k * f, expect * f) * counts);
        if (z > best) {
            best = z;
            *at_out = at;
            *expect_out = expect;
            *k_out = (int)floor((tr - dq_cdf_at(ro, at)) / tr * nr + 0.5);
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
static void check_tail(const struct search_check_input *in, struct search_check *c) {
    const struct search_stats *r = in->recent, *b = in->baseline;
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
    /* the far tail, when the baseline's own tail can be fitted: one more look */
    struct far_fit fit;
    int far = b->n_ok >= 1000 && far_fit_of(b, &fit);
    int looks = n_levels + far;
    double zt = search_z_shared(c->zt, looks);
    double best = 0.0, bpr = 0, bpb = 0, bat = 0, bmoved = 0, bq = 0, gate = 0.0, largest = 0.0;
    for (int k = 0; k < n_levels; k++) {
        double pr = 0, pb = 0, at = 0, moved = 0;
        double z = tail_z(r, b, levels[k], &pr, &pb, &at, &moved);
        if (z > best) {
            best = z, bpr = pr, bpb = pb, bat = at, bmoved = moved, bq = levels[k];
        }
        if (levels[k] > 1.0 - 1e-6) {
            gate = z;
            largest = at; /* the point beyond the baseline's largest (moved with the median) */
        }
    }
    /* only when no level counted (the far tail finds what they cannot), and when the count
     * beyond the baseline's largest, which assumes nothing about the law, says as much (a
     * rare slow mode that the baseline happened to miss breaks the fit's assumption) */
    int fk = 0;
    double fat = 0.0, fexpect = 0.0;
    double fz = far && best < zt && (gate >= SEARCH_FAR_GATE_Z || in->suggest)
                    ? far_tail_z(in, &fit, &fk, &fat, &fexpect)
                    : 0.0;
    if (fz >= zt) {
        char t[DQ_DURATION_TEXT], t2[DQ_DURATION_TEXT];
        struct search_found *fp =
            add_problem(c, SEARCH_VARIANCE, fz,
                        "%d instances beyond %s, where the baseline's own tail (its largest %s, of "
                        "%.0f; fitted beyond its 99 %% point) expects %.2g: rare, very slow passes",
                        fk, search__dur(fat, t, sizeof t), search__dur(fit.largest, t2, sizeof t2),
                        (double)b->n_ok, fexpect);
        if (fp) {
            fp->far = 1;
            fp->looks = looks;
            fp->beyond = largest;
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
            fp->looks = looks;
            /* the point only when the problem lies beyond the baseline's largest: at the
             * 99.9 % point the node's own passes go beyond it every few windows */
            fp->beyond = bq > 1.0 - 1e-6 ? largest : 0.0;
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* The median of v[0 … n), n > 0 (v is sorted in place). */
static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
        check_tail(in, c);
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

/* A stall's run of search_load_of (dq_search.h): what it held back, and what of that the
 * windows marked so far took. */
struct stall_run {
    int open;
    double budget, excess;
};

static void stall_open(struct stall_run *r, double held_back) {
    if (!r->open) {
        *r = (struct stall_run){.open = 1};
    }
    r->budget += held_back;
}

/* The backlog marks of search_load_of (dq_search.h) into backlog[0 … n). */
static void backlog_of(const struct search_load_window *w, int n, unsigned char *backlog) {
    double v[2 * SEARCH_MAX_RATE_WINDOWS];
    int m = 0;
    if (n <= 0) {
        return;
    }
    for (int i = 0; i < n && m < 2 * SEARCH_MAX_RATE_WINDOWS; i++) {
        if (w[i].ok >= SEARCH_LOAD_MIN_OK) {
            v[m++] = w[i].n;
        }
    }
    memset(backlog, 0, (size_t)n);
    if (m == 0) {
        return;
    }
    double med = median_of(v, m);
    double lo = med - 3.0 * sqrt(med), hi = med + 3.0 * sqrt(med);
    struct stall_run run = {0};
    double short_by = 0.0; /* what the windows below the median right before this one lacked */
    for (int i = n - 1; i >= 0; i--) { /* oldest first */
        if (w[i].silent_before > 0) {
            /* a stall that began before its silence held those windows' shortfall back too */
            stall_open(&run, (w[i].silent_before + 1) * med + short_by);
        }
        short_by = w[i].silent_before > 0 || w[i].n >= med ? 0.0 : short_by + (med - w[i].n);
        short_by = short_by < med ? short_by : med; /* a lull's long run is not all held back */
        int thin = w[i].ok < SEARCH_LOAD_MIN_OK;
        int over = w[i].n > hi, under = w[i].n < lo;
        int fits = run.open && run.excess + (w[i].n - med) <= run.budget;
        backlog[i] = over && (thin || fits);
        if (backlog[i] && run.open) {
            run.excess += w[i].n - med;
        }
        run.open = run.open && (backlog[i] || under);
        if (thin && !over) {
            stall_open(&run, med);
        }
    }
}

void search_load_of(const struct search_load_window *w, int n, double window_s, int recent_windows,
                    struct search_load *out) {
    unsigned char backlog[2 * SEARCH_MAX_RATE_WINDOWS];
    double rate[SEARCH_MAX_RATE_WINDOWS], mean[SEARCH_MAX_RATE_WINDOWS];
    memset(out, 0, sizeof *out);
    n = n > 2 * SEARCH_MAX_RATE_WINDOWS ? 2 * SEARCH_MAX_RATE_WINDOWS : n;
    backlog_of(w, n, backlog);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (backlog[i] && i < recent_windows) {
            out->backlog_n += w[i].n;
            out->backlog_windows++;
        }
        if (!backlog[i] && w[i].ok >= SEARCH_LOAD_MIN_OK && k < SEARCH_MAX_RATE_WINDOWS) {
            rate[k] = w[i].n / window_s;
            mean[k] = w[i].mean;
            k++;
        }
    }
    out->rz = search_rate_latency_z(rate, mean, k);
    /* the older windows' instances: a median above the mean says some were thinned */
    double older[2 * SEARCH_MAX_RATE_WINDOWS], sum = 0.0;
    int no = 0;
    for (int i = recent_windows > 0 ? recent_windows : 0; i < n; i++) {
        if (!backlog[i] && w[i].n > 0) {
            older[no++] = w[i].n;
            sum += w[i].n;
        }
    }
    out->older_thinned = 1.0;
    if (no >= 10) {
        double med = median_of(older, no);
        double avg = sum / no;
        out->older_thinned = med > avg ? med / avg : 1.0;
    }
}

int search_load_rose(const struct search_load *l, const struct search_check *c, int looks,
                     char *why, size_t cap) {
    double zt = search_z_looks(looks);
    if (l->rz >= zt) {
        snprintf(why, cap, "its latency rises with its arrivals (Spearman z %.1f over its windows)",
                 l->rz);
        return 1;
    }
    /* against its baseline: more arrivals per window now, significantly and by a fifth (a
     * stall's backlog is no arrivals) */
    if (c && c->has_baseline && (int)c->recent.windows > l->backlog_windows &&
        c->baseline.windows > 0) {
        double wr = c->recent.windows - l->backlog_windows, wb = c->baseline.windows;
        double r = ((double)search_stats_instances(&c->recent) - l->backlog_n) / wr;
        double thinned = l->older_thinned > 1.0 ? l->older_thinned : 1.0;
        double b = thinned * (double)search_stats_instances(&c->baseline) / wb;
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

/* Failures and the rest beyond the QTA's clause `worst` (−1: the lost bound) in obs,
 * whose instances s counts: the failures at most obs's lost mass (counts and ΔQ can differ
 * when a window on another grid was left out of the ΔQ), rounding residues taken as 0. */
static void qta_beyond(const struct search_stats *s, const struct dq *obs, const struct dq_qta *qta,
                       int worst, double *failed, double *beyond) {
    uint64_t n = s->n_ok + s->n_fa + s->n_to;
    double lost = dq_lost(obs);
    *failed = n > 0 ? (double)s->n_fa / (double)n : 0.0;
    *failed = *failed < lost ? *failed : lost;
    double b = worst < 0 ? lost - *failed : 1.0 - *failed - dq_cdf_at(obs, qta->t[worst]);
    *beyond = b > 1e-9 ? b : 0.0;
}

int search_qta_lost(const struct search_stats *s, const struct search_stats *base,
                    const struct dq_qta *qta, char *why, size_t cap) {
    if (cap > 0) {
        why[0] = '\0';
    }
    const struct dq *obs = s ? s->observed : NULL;
    struct dq_qta_result q;
    uint64_t n = obs ? s->n_ok + s->n_fa + s->n_to : 0;
    if (n == 0 || !qta || dq_qta_eval(obs, qta, &q) != DQ_OK || q.ok) {
        return 0;
    }
    /* failures, which never complete, against the rest of what lies beyond the clause:
     * successes slower than its point, or, for the lost bound, instances past dMax (an
     * overload's timeouts are a delay, which the QTA's own attribution weighs) */
    double failed, beyond, bf = 0.0, bb = 0.0;
    qta_beyond(s, obs, qta, q.worst, &failed, &beyond);
    int with_base =
        base && base->present && base->observed && base->n_ok + base->n_fa + base->n_to > 0;
    if (with_base) {
        qta_beyond(base, base->observed, qta, q.worst, &bf, &bb);
    }
    double rise_f = failed - bf, rise_b = beyond - bb;
    if (!(rise_f > 1e-9) || rise_f < rise_b) {
        return 0;
    }
    char before[120] = "";
    if (with_base) {
        snprintf(before, sizeof before, " (%.3g %% and %.3g %% in its baseline)", 100.0 * bf,
                 100.0 * bb);
    }
    if (q.worst < 0) {
        snprintf(why, cap, "the QTA allows %.2g %% lost and %.3g %% failed%s",
                 100.0 * qta->max_lost, 100.0 * failed, before);
        return 1;
    }
    char d[DQ_DURATION_TEXT];
    snprintf(why, cap,
             "the QTA wants %.0f %% within %s: %.3g %% failed, %.3g %% took longer%s; the "
             "failures break it",
             100.0 * qta->p[q.worst], search__dur(qta->t[q.worst], d, sizeof d), 100.0 * failed,
             100.0 * beyond, before);
    return 1;
}
