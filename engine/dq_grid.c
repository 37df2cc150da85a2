/*
 * dq_grid.c: default grids (dq.h, "default grids"; docs/engine.md): what a grid must
 * resolve about each delay of a model, combined along its operators, and the grid chosen
 * from it.
 *
 * The two things a grid trades are resolution and reach. On the step CDF of the convention
 * (read at the last edge before t), a bin of width w misses at most fmax·w of the CDF's
 * rise inside it, so fmax·w ≤ 0.004 keeps the Kolmogorov distance from the step itself
 * well under 1e-2, with room for the second-order error of sequences. The reach is hi, the
 * time by which about all the tangible mass is in. Both fit in DQ_MAX_BINS for most models;
 * when they do not, reach is given up before resolution, and the tail past the horizon is
 * reported as such (dq_past_horizon).
 */
#include "dq.h"

#include <math.h>

#define HINT_TAIL_LN 9.21034037197618 /* ln(1e4): an exponential's hi leaves 1e-4 out */
#define HINT_SIGMAS 8.0               /* a sum's hi: at most mean + 8σ */
#define HINT_NORMAL_PEAK 1.5          /* a sum's density: about 1.5× the normal's peak */
#define GRID_RISE 0.004               /* fmax·w the default grid aims at */
#define GRID_RISE_MAX 0.008           /* … and keeps when reach must be bought */
#define GRID_MIN_BINS 1024            /* bins over [0, hi] at least */
#define SQRT_2PI 2.50662827463100050242

/* The exponent of the widest grid whose edges include t > 0 (DQ_MIN_K − 1: none). */
static int align_k(double t) {
    if (!(t > 0.0)) {
        return DQ_MAX_K + 1;
    }
    for (int k = DQ_MAX_K; k >= DQ_MIN_K; k--) {
        double x = t / dq_width_of(k);
        if (fabs(x - floor(x + 0.5)) <= 1e-9 * (x > 1.0 ? x : 1.0)) {
            return k;
        }
    }
    return DQ_MIN_K - 1;
}

static void hint_clear(struct dq_hint *h) {
    h->lo = h->hi = h->mean = h->var = h->fmax = h->failed = h->res = 0.0;
    h->qk = DQ_MAX_K + 1;
}

void dq_hint_wait(double t, struct dq_hint *h) {
    hint_clear(h);
    t = t > 0.0 && isfinite(t) ? t : 0.0;
    h->lo = h->hi = h->mean = t;
    h->qk = align_k(t);
}

void dq_hint_uniform(double a, double b, struct dq_hint *h) {
    if (!(b > a)) {
        dq_hint_wait(a, h);
        return;
    }
    hint_clear(h);
    h->lo = a;
    h->hi = b;
    h->mean = 0.5 * (a + b);
    h->var = (b - a) * (b - a) / 12.0;
    h->fmax = 1.0 / (b - a);
}

void dq_hint_exponential(double rate, struct dq_hint *h) {
    hint_clear(h);
    if (!(rate > 0.0) || !isfinite(rate)) {
        return;
    }
    h->hi = HINT_TAIL_LN / rate;
    h->mean = 1.0 / rate;
    h->var = 1.0 / (rate * rate);
    h->fmax = rate;
}

void dq_hint_never(struct dq_hint *h) {
    hint_clear(h);
    h->failed = 1.0;
}

void dq_hint_dq(const struct dq *a, struct dq_hint *h) {
    hint_clear(h);
    if (!a || !a->pdf) {
        return;
    }
    int first = -1, last = -1;
    double peak = 0.0;
    for (int i = 0; i < a->n; i++) {
        if (a->pdf[i] > 0.0) {
            first = first < 0 ? i : first;
            last = i;
            peak = a->pdf[i] > peak ? a->pdf[i] : peak;
        }
    }
    h->failed = dq_lost(a);
    h->res = a->width;
    if (first < 0) {
        return;
    }
    h->lo = first * a->width;
    h->hi = (last + 1) * a->width;
    struct dq_moments m;
    if (dq_moments(a, &m) == DQ_OK) {
        h->mean = m.mean;
        h->var = m.variance;
    }
    if (a->atoms) {
        h->qk = a->k;
    } else {
        h->fmax = peak / a->width / dq_tangible(a);
    }
}

/* 1 when h is point masses only (no density). */
static int atoms_only(const struct dq_hint *h) {
    return !(h->fmax > 0.0) && h->qk <= DQ_MAX_K;
}

static int min_qk(const struct dq_hint *ops, size_t n) {
    int q = DQ_MAX_K + 1;
    for (size_t i = 0; i < n; i++) {
        q = ops[i].qk < q ? ops[i].qk : q;
    }
    return q;
}

void dq_hint_sequence(const struct dq_hint *ops, size_t n, struct dq_hint *out) {
    struct dq_hint r;
    hint_clear(&r);
    double ok = 1.0, fmin = INFINITY;
    size_t spread = 0, atoms = 0;
    for (size_t i = 0; i < n; i++) {
        r.lo += ops[i].lo;
        r.hi += ops[i].hi;
        r.mean += ops[i].mean;
        r.var += ops[i].var;
        ok *= 1.0 - ops[i].failed;
        r.res = ops[i].res > r.res ? ops[i].res : r.res;
        if (ops[i].fmax > 0.0) {
            fmin = ops[i].fmax < fmin ? ops[i].fmax : fmin;
        }
        spread += ops[i].var > 0.0;
        atoms += atoms_only(&ops[i]);
    }
    r.failed = 1.0 - ok;
    if (spread >= 2) {
        double sd = sqrt(r.var);
        double cap = r.mean + HINT_SIGMAS * sd;
        r.hi = cap < r.hi ? cap : r.hi;
        double peak = HINT_NORMAL_PEAK / (sd * SQRT_2PI);
        fmin = peak < fmin ? peak : fmin;
    }
    r.hi = r.hi > r.lo ? r.hi : r.lo;
    r.fmax = isfinite(fmin) ? fmin : 0.0;
    /* a sum keeps point masses only when every operand is made of them */
    r.qk = atoms == n ? min_qk(ops, n) : DQ_MAX_K + 1;
    *out = r;
}

void dq_hint_first(const struct dq_hint *ops, size_t n, struct dq_hint *out) {
    struct dq_hint r;
    hint_clear(&r);
    double fail = 1.0, live_hi = INFINITY, hi = 0.0, best_mean = INFINITY;
    r.lo = INFINITY;
    for (size_t i = 0; i < n; i++) {
        r.lo = ops[i].lo < r.lo ? ops[i].lo : r.lo;
        hi = ops[i].hi > hi ? ops[i].hi : hi;
        if (ops[i].failed <= 1e-12 && ops[i].hi < live_hi) {
            live_hi = ops[i].hi; /* the race is over by the time this branch is */
        }
        if (ops[i].failed < 1.0 && ops[i].mean < best_mean) {
            best_mean = ops[i].mean;
            r.var = ops[i].var;
        }
        fail *= ops[i].failed;
        r.fmax += ops[i].fmax;
        r.res = ops[i].res > r.res ? ops[i].res : r.res;
    }
    r.lo = isfinite(r.lo) ? r.lo : 0.0;
    r.hi = isfinite(live_hi) ? live_hi : hi;
    r.mean = isfinite(best_mean) ? best_mean : 0.0;
    r.failed = fail;
    r.qk = min_qk(ops, n);
    *out = r;
}

void dq_hint_all(const struct dq_hint *ops, size_t n, struct dq_hint *out) {
    struct dq_hint r;
    hint_clear(&r);
    double ok = 1.0;
    for (size_t i = 0; i < n; i++) {
        r.lo = ops[i].lo > r.lo ? ops[i].lo : r.lo;
        r.hi = ops[i].hi > r.hi ? ops[i].hi : r.hi;
        r.mean = ops[i].mean > r.mean ? ops[i].mean : r.mean;
        r.var = ops[i].var > r.var ? ops[i].var : r.var;
        r.fmax += ops[i].fmax;
        r.res = ops[i].res > r.res ? ops[i].res : r.res;
        ok *= 1.0 - ops[i].failed;
    }
    r.failed = 1.0 - ok;
    r.qk = min_qk(ops, n);
    *out = r;
}

void dq_hint_choice(const struct dq_hint *ops, const double *weights, size_t n,
                    struct dq_hint *out) {
    struct dq_hint r;
    hint_clear(&r);
    double total = 0.0, m2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        total += weights && weights[i] > 0.0 ? weights[i] : (weights ? 0.0 : 1.0);
    }
    r.lo = INFINITY;
    for (size_t i = 0; i < n; i++) {
        double w = weights ? weights[i] : 1.0;
        if (!(w > 0.0) || !(total > 0.0)) {
            continue;
        }
        w /= total;
        r.lo = ops[i].lo < r.lo ? ops[i].lo : r.lo;
        r.hi = ops[i].hi > r.hi ? ops[i].hi : r.hi;
        r.mean += w * ops[i].mean;
        m2 += w * (ops[i].var + ops[i].mean * ops[i].mean);
        r.fmax += w * ops[i].fmax;
        r.failed += w * ops[i].failed;
        r.res = ops[i].res > r.res ? ops[i].res : r.res;
        r.qk = ops[i].qk < r.qk ? ops[i].qk : r.qk;
    }
    r.lo = isfinite(r.lo) ? r.lo : 0.0;
    r.var = m2 - r.mean * r.mean > 0.0 ? m2 - r.mean * r.mean : 0.0;
    *out = r;
}

void dq_hint_scale(struct dq_hint *h, double k) {
    if (!(k >= 0.0) || !isfinite(k)) {
        return;
    }
    h->lo *= k;
    h->hi *= k;
    h->mean *= k;
    h->var *= k * k;
    h->res *= k;
    if (k == 0.0) {
        h->fmax = 0.0;
        h->qk = DQ_MAX_K + 1; /* everything at 0 */
        return;
    }
    h->fmax /= k;
    if (h->qk >= DQ_MIN_K && h->qk <= DQ_MAX_K) {
        int e = (int)lround(log2(k));
        h->qk = fabs(ldexp(1.0, e) - k) <= 1e-12 * k ? h->qk + e : DQ_MIN_K - 1;
        h->qk = h->qk > DQ_MAX_K ? DQ_MAX_K : (h->qk < DQ_MIN_K ? DQ_MIN_K - 1 : h->qk);
    }
}

void dq_hint_shift(struct dq_hint *h, double s) {
    if (!isfinite(s)) {
        return;
    }
    h->lo = h->lo + s > 0.0 ? h->lo + s : 0.0;
    h->hi = h->hi + s > 0.0 ? h->hi + s : 0.0;
    h->mean = h->mean + s > 0.0 ? h->mean + s : 0.0;
    if (h->qk <= DQ_MAX_K) {
        int q = align_k(fabs(s));
        h->qk = q < h->qk ? q : h->qk;
    }
}

/* The largest k in range with width(k) ≤ w (DQ_MIN_K when none). */
static int k_at_most(double w) {
    int k = DQ_MIN_K;
    while (k < DQ_MAX_K && dq_width_of(k + 1) <= w * (1.0 + 1e-12)) {
        k++;
    }
    return k;
}

/* Bins of width 2^k ms that reach h. */
static double bins_for(double h, int k) {
    double b = ceil(h / dq_width_of(k) - 1e-9);
    return b < 1.0 ? 1.0 : b;
}

int dq_grid_choose(const struct dq_hint *h, int bins, int *k, int *n, int *covered) {
    if (!h || !k || !n || !covered) {
        return dq_fail(DQ_EINVAL, "dq_grid_choose needs a hint and outputs");
    }
    if (bins < 0 || bins > DQ_MAX_BINS) {
        return dq_fail(DQ_ERANGE, "N = %d bins out of range [1, %d]", bins, DQ_MAX_BINS);
    }
    double H = h->hi > 0.0 && isfinite(h->hi) ? h->hi : 0.001;
    int k_res = DQ_MIN_K; /* no finer than a measured ΔQ's bins */
    while (h->res > 0.0 && k_res < DQ_MAX_K && dq_width_of(k_res) < h->res * (1.0 - 1e-9)) {
        k_res++;
    }
    int kk;
    if (bins > 0) {
        kk = DQ_MIN_K;
        while (kk < DQ_MAX_K && dq_width_of(kk) * bins < H * (1.0 - 1e-12)) {
            kk++;
        }
        kk = kk > k_res ? kk : k_res;
        *k = kk;
        *n = bins;
        *covered = dq_width_of(kk) * bins >= H * (1.0 - 1e-12);
        return DQ_OK;
    }
    double fmax = h->fmax > 0.0 && isfinite(h->fmax) ? h->fmax : 0.0;
    int k_fine = fmax > 0.0 ? k_at_most(GRID_RISE / fmax) : DQ_MAX_K;
    int k_span = k_at_most(H / GRID_MIN_BINS);
    int k0 = k_fine < k_span ? k_fine : k_span;
    int k_al = h->qk >= DQ_MIN_K && h->qk < k0 ? h->qk : k0;
    k0 = k0 > k_res ? k0 : k_res;
    k_al = k_al > k_res ? k_al : k_res;
    int k_fit = DQ_MIN_K;
    while (k_fit < DQ_MAX_K && bins_for(H, k_fit) > DQ_MAX_BINS) {
        k_fit++;
    }
    if (k_al >= k_fit) {
        kk = k_al; /* the grid of the point masses too */
    } else if (k0 >= k_fit) {
        kk = k0;
    } else if (fmax * dq_width_of(k_fit) <= GRID_RISE_MAX) {
        kk = k_fit; /* reach everything, still fine enough */
    } else {
        /* resolution first: the widest grid that keeps the rise, DQ_MAX_BINS of it */
        kk = k_at_most(GRID_RISE_MAX / fmax);
        kk = kk > k0 ? kk : k0;
    }
    double b = bins_for(H, kk);
    *k = kk;
    *n = b > DQ_MAX_BINS ? DQ_MAX_BINS : (int)b;
    *covered = dq_width_of(kk) * *n >= H * (1.0 - 1e-12);
    return DQ_OK;
}
