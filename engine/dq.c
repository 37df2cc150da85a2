/*
 * dq.c: the ΔQ type, its constructors, operators and queries (see dq.h for the grid
 * semantics and the CDF convention). Every operator works on copies of its operands
 * brought to one grid, so the operands are never modified, and builds its result in a
 * fresh ΔQ that is handed over only on success.
 *
 * Numerical notes (details in docs/engine.md):
 * - A continuous delay t goes to the bin (i·w, (i+1)·w] that holds it (delay 0 to bin 0);
 *   t ≤ horizon is kept, beyond is lost. Continuous distributions are integrated exactly
 *   over each bin.
 * - Sequence: the masses of two spread bins i and j land in bins i + j and i + j + 1, half
 *   each (the sum of two delays spread evenly over their bins lies in (i + j)·w …
 *   (i + j + 2)·w, half of it on either side of the middle edge); a point mass at its
 *   bin's right edge moves the other operand by exactly i + 1 bins. The estimate's mean
 *   is exact, and the lag (dq.h) grows by one per spread-by-spread step.
 * - Re-expression between widths is integer index arithmetic (powers of two apart):
 *   coarser sums whole bins (exact), finer spreads a bin evenly.
 * - Products of CDFs and differences back to masses can leave −1e−17 residues; masses
 *   are clamped at 0 and the tangible mass at 1.
 */
#include "dq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_conv.h"
#include "dq_internal.h"

/* Chains whose operands hold at most this many bins together are convolved in one
 * frequency-domain product; longer ones pair by pair (dq_sequence_cut). */
#define SEQ_ONE_SHOT_BINS DQ_MAX_BINS

/* ---- grid ------------------------------------------------------------------------ */

double dq_width_of(int k) {
    return ldexp(DQ_BASE_WIDTH, k);
}

int dq_check_grid(int k, int n) {
    if (k < DQ_MIN_K || k > DQ_MAX_K) {
        return dq_fail(DQ_ERANGE, "width exponent k = %d out of range [%d, %d]", k, DQ_MIN_K,
                       DQ_MAX_K);
    }
    if (n < DQ_MIN_BINS || n > DQ_MAX_BINS) {
        return dq_fail(DQ_ERANGE, "N = %d bins out of range [%d, %d]", n, DQ_MIN_BINS, DQ_MAX_BINS);
    }
    return DQ_OK;
}

int dq_grid_for(double dmax, int *k, int *n) {
    if (!k || !n) {
        return dq_fail(DQ_EINVAL, "dq_grid_for needs output pointers");
    }
    if (!(dmax > 0.0) || !isfinite(dmax)) {
        return dq_fail(DQ_ERANGE, "dMax = %g s must be a positive finite time", dmax);
    }
    for (int kk = DQ_MIN_K; kk <= DQ_MAX_K; kk++) {
        double bins = ceil(dmax / dq_width_of(kk) - 1e-9);
        if (bins <= DQ_MAX_BINS) {
            *k = kk;
            *n = bins < 1 ? 1 : (int)bins;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_ERANGE, "dMax = %g s exceeds the largest horizon %g s", dmax,
                   DQ_MAX_BINS * dq_width_of(DQ_MAX_K));
}

/* Allocates a zeroed ΔQ on grid (k, n), which the caller has validated. */
static int dq_alloc(int k, int n, struct dq **out) {
    struct dq *a = calloc(1, sizeof *a);
    double *pdf = calloc((size_t)n, sizeof *pdf);
    if (!a || !pdf) {
        free(a);
        free(pdf);
        return dq_fail(DQ_ENOMEM, "no memory for a ΔQ of %d bins", n);
    }
    a->k = k;
    a->n = n;
    a->width = dq_width_of(k);
    a->pdf = pdf;
    *out = a;
    return DQ_OK;
}

static int new_dq(int k, int n, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = dq_check_grid(k, n);
    return rc ? rc : dq_alloc(k, n, out);
}

void dq_destroy(struct dq *a) {
    if (!a) {
        return;
    }
    free(a->pdf);
    free(a);
}

/* The bin of delay t ≥ 0 on (w, n): the i with t in (i·w, (i+1)·w], 0 for t = 0 (a time
 * within 1e−12 of an edge is on it), or −1 when t is beyond the horizon n·w. */
static int bin_of(double t, double w, int n) {
    if (!(t > 0.0)) {
        return 0;
    }
    double x = t / w;
    if (x > n * (1 + 1e-12)) {
        return -1;
    }
    double c = ceil(x * (1 - 1e-12));
    int i = (int)c - 1;
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/* 1 when t > 0 is a right edge of the grid of width w (within 1e−9 of one). */
static int on_edge(double t, double w) {
    double x = t / w;
    return fabs(x - floor(x + 0.5)) <= 1e-9 * (x > 1.0 ? x : 1.0);
}

static int check_time(const char *what, double t) {
    if (!isfinite(t) || t < 0.0) {
        return dq_fail(DQ_EINVAL, "%s = %g must be a finite time ≥ 0", what, t);
    }
    return DQ_OK;
}

static double clamp01(double x) {
    return x > 1.0 ? 1.0 : (x > 0.0 ? x : 0.0);
}

/* Keeps Σ pdf ≤ 1 after round-off, clears negative residues, and keeps `zero` within
 * pdf[0] and `failed` within the lost mass. */
static void normalise(struct dq *a) {
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        if (!(a->pdf[i] > 0.0)) {
            a->pdf[i] = 0.0;
        }
        sum += a->pdf[i];
    }
    if (sum > 1.0) {
        for (int i = 0; i < a->n; i++) {
            a->pdf[i] /= sum;
        }
        sum = 1.0;
    }
    a->zero = a->zero > a->pdf[0] ? a->pdf[0] : (a->zero > 0.0 ? a->zero : 0.0);
    double lost = sum > 1.0 - 1e-12 ? 0.0 : 1.0 - sum;
    a->failed = a->failed > lost ? lost : (a->failed > 0.0 ? a->failed : 0.0);
    a->lag = a->lag > 0 ? a->lag : 0;
}

static int check_dq(const char *what, const struct dq *a) {
    if (!a || !a->pdf) {
        return dq_fail(DQ_EINVAL, "%s is NULL", what);
    }
    return dq_check_grid(a->k, a->n);
}

/* ---- constructors ------------------------------------------------------------------ */

int dq_never(int k, int n, struct dq **out) {
    int rc = new_dq(k, n, out);
    if (rc == DQ_OK) {
        (*out)->failed = 1.0;
        (*out)->atoms = 1;
    }
    return rc;
}

int dq_wait(int k, int n, double t, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = check_time("wait time", t);
    struct dq *a = NULL;
    if (rc || (rc = new_dq(k, n, &a))) {
        return rc;
    }
    int i = bin_of(t, a->width, n);
    if (i >= 0) {
        a->pdf[i] = 1.0;
    }
    a->zero = t == 0.0 ? 1.0 : 0.0;
    /* on an edge (or at 0) it is a point mass there; inside a bin, a mass somewhere in it */
    a->atoms = i < 0 || t == 0.0 || on_edge(t, a->width);
    *out = a;
    return DQ_OK;
}

static double uniform_cdf(double t, double a, double b) {
    if (t <= a) {
        return 0.0;
    }
    return t >= b ? 1.0 : (t - a) / (b - a);
}

int dq_uniform(int k, int n, double a, double b, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = check_time("uniform lower bound", a);
    if (rc || (rc = check_time("uniform upper bound", b))) {
        return rc;
    }
    if (b < a) {
        return dq_fail(DQ_EINVAL, "uniform(%g, %g): the upper bound is below the lower", a, b);
    }
    if (a == b) {
        return dq_wait(k, n, a, out);
    }
    struct dq *d = NULL;
    if ((rc = new_dq(k, n, &d))) {
        return rc;
    }
    for (int i = 0; i < n; i++) {
        d->pdf[i] = uniform_cdf((i + 1) * d->width, a, b) - uniform_cdf(i * d->width, a, b);
    }
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_exponential(int k, int n, double rate, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (!isfinite(rate) || !(rate > 0.0)) {
        return dq_fail(DQ_EINVAL, "exponential rate = %g must be positive and finite", rate);
    }
    struct dq *d = NULL;
    int rc = new_dq(k, n, &d);
    if (rc) {
        return rc;
    }
    double step = -expm1(-rate * d->width);
    for (int i = 0; i < n; i++) {
        /* e^{-λ lo} − e^{-λ hi} = F(hi) − F(lo), computed without cancellation. */
        d->pdf[i] = exp(-rate * i * d->width) * step;
    }
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_from_samples(int k, int n, const double *durations, size_t count, uint64_t n_failed,
                    uint64_t n_timeout, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (count > 0 && !durations) {
        return dq_fail(DQ_EINVAL, "%zu durations announced but none given", count);
    }
    if (count > UINT64_MAX - n_failed || count + n_failed > UINT64_MAX - n_timeout) {
        return dq_fail(DQ_ERANGE, "instance counts overflow 64 bits");
    }
    uint64_t total = count + n_failed + n_timeout;
    if (total == 0) {
        return dq_fail(DQ_EINVAL, "no samples: a ΔQ needs at least one instance");
    }
    for (size_t s = 0; s < count; s++) {
        if (!isfinite(durations[s]) || durations[s] < 0.0) {
            return dq_fail(DQ_EINVAL, "sample %zu = %g is not a finite duration ≥ 0", s,
                           durations[s]);
        }
    }
    struct dq *d = NULL;
    int rc = new_dq(k, n, &d);
    if (rc) {
        return rc;
    }
    for (size_t s = 0; s < count; s++) {
        int i = bin_of(durations[s], d->width, n);
        if (i < 0) {
            d->n_out++;
        } else {
            d->pdf[i] += 1.0;
        }
    }
    for (int i = 0; i < n; i++) {
        d->pdf[i] /= (double)total;
    }
    d->n_ok = count - d->n_out;
    d->n_fa = n_failed;
    d->n_to = n_timeout;
    d->failed = (double)n_failed / (double)total;
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_from_counts(int k, int n, const uint64_t *counts, uint64_t n_failed, uint64_t n_timeout,
                   uint64_t n_out, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (!counts) {
        return dq_fail(DQ_EINVAL, "no counts given");
    }
    int rc = dq_check_grid(k, n);
    if (rc) {
        return rc;
    }
    uint64_t ok = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] > UINT64_MAX - ok) {
            return dq_fail(DQ_ERANGE, "instance counts overflow 64 bits");
        }
        ok += counts[i];
    }
    if (ok > UINT64_MAX - n_failed || ok + n_failed > UINT64_MAX - n_timeout ||
        ok + n_failed + n_timeout > UINT64_MAX - n_out) {
        return dq_fail(DQ_ERANGE, "instance counts overflow 64 bits");
    }
    uint64_t total = ok + n_failed + n_timeout + n_out;
    if (total == 0) {
        return dq_fail(DQ_EINVAL, "no instances: a ΔQ needs at least one");
    }
    struct dq *d = NULL;
    if ((rc = new_dq(k, n, &d))) {
        return rc;
    }
    for (int i = 0; i < n; i++) {
        d->pdf[i] = (double)counts[i] / (double)total;
    }
    d->n_ok = ok;
    d->n_fa = n_failed;
    d->n_to = n_timeout;
    d->n_out = n_out;
    d->failed = (double)n_failed / (double)total;
    normalise(d);
    *out = d;
    return DQ_OK;
}

/* The checks dq_from_pdf and dq_from_points share: an output pointer, masses, a valid
 * grid, count masses each finite and ≥ 0 (`where` names their index: "in bin", "at grid
 * time"), summing to at most 1. */
static int check_masses(int k, int n, const double *m, int count, const char *where,
                        struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (!m) {
        return dq_fail(DQ_EINVAL, "no masses given");
    }
    int rc = dq_check_grid(k, n);
    if (rc) {
        return rc;
    }
    double sum = 0.0;
    for (int i = 0; i < count; i++) {
        if (!isfinite(m[i]) || m[i] < 0.0) {
            return dq_fail(DQ_EINVAL, "mass %g %s %d is not a finite value ≥ 0", m[i], where, i);
        }
        sum += m[i];
    }
    if (sum > 1.0 + DQ_EPS) {
        return dq_fail(DQ_EINVAL, "masses sum to %.12g, more than 1", sum);
    }
    return DQ_OK;
}

int dq_from_pdf(int k, int n, const double *pdf, struct dq **out) {
    int rc = check_masses(k, n, pdf, n, "in bin", out);
    if (rc) {
        return rc;
    }
    struct dq *d = NULL;
    if ((rc = new_dq(k, n, &d))) {
        return rc;
    }
    memcpy(d->pdf, pdf, sizeof(double) * (size_t)n);
    d->failed = 1.0; /* clamped to the lost mass: what is missing is taken as failures */
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_from_points(int k, int n, const double *mass, struct dq **out) {
    int rc = check_masses(k, n, mass, n + 1, "at grid time", out);
    if (rc) {
        return rc;
    }
    struct dq *d = NULL;
    if ((rc = new_dq(k, n, &d))) {
        return rc;
    }
    d->zero = mass[0];
    d->pdf[0] = mass[0];
    for (int j = 1; j <= n; j++) {
        d->pdf[j - 1] += mass[j];
    }
    d->atoms = 1;
    d->failed = 1.0;
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_clone(const struct dq *a, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = check_dq("operand", a);
    struct dq *d = NULL;
    if (rc || (rc = new_dq(a->k, a->n, &d))) {
        return rc;
    }
    memcpy(d->pdf, a->pdf, sizeof(double) * (size_t)a->n);
    d->n_ok = a->n_ok;
    d->n_fa = a->n_fa;
    d->n_to = a->n_to;
    d->n_out = a->n_out;
    d->lag = a->lag;
    d->atoms = a->atoms;
    d->zero = a->zero;
    d->failed = a->failed;
    *out = d;
    return DQ_OK;
}

/* ---- queries (used by the operators below) ------------------------------------------ */

double dq_horizon(const struct dq *a) {
    return a ? a->n * a->width : 0.0;
}

/* Σ pdf[0..upto], clamped to [0, 1]. */
static double mass_upto(const struct dq *a, int upto) {
    double sum = 0.0;
    for (int i = 0; i <= upto && i < a->n; i++) {
        sum += a->pdf[i];
    }
    return clamp01(sum);
}

double dq_tangible(const struct dq *a) {
    if (!a || !a->pdf) {
        return 0.0;
    }
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        sum += a->pdf[i];
    }
    /* Round-off of the operators is ~1e−16: a tangible mass that close to 1 is 1, so a
     * ΔQ that loses nothing reports a lost mass of exactly 0. */
    return sum > 1.0 - 1e-12 ? 1.0 : (sum < 0.0 ? 0.0 : sum);
}

double dq_lost(const struct dq *a) {
    return 1.0 - dq_tangible(a);
}

double dq_lost_bound(const struct dq *a) {
    if (!a || !a->pdf) {
        return 1.0;
    }
    if (a->lag <= 0) {
        return dq_lost(a);
    }
    double t = a->n - 1 - a->lag >= 0 ? mass_upto(a, a->n - 1 - a->lag) : a->zero;
    return 1.0 - (t > 1.0 - 1e-12 ? 1.0 : t);
}

double dq_past_horizon(const struct dq *a) {
    if (!a || !a->pdf) {
        return 0.0;
    }
    double p = dq_lost(a) - a->failed;
    return p > 1e-12 ? p : 0.0;
}

int dq_last_bin(const struct dq *a) {
    int i = a && a->pdf ? a->n - 1 : -1;
    while (i >= 0 && !(a->pdf[i] > 0.0)) {
        i--;
    }
    return i;
}

/* The index of the last bin whose right edge is at or before t ≥ 0 (−1: none). */
static int last_edge_at(const struct dq *a, double t) {
    double last = floor(t / a->width + 1e-9) - 1.0;
    return last >= a->n - 1 ? a->n - 1 : (last < 0.0 ? -1 : (int)last);
}

double dq_cdf_at(const struct dq *a, double t) {
    if (!a || !a->pdf || !(t >= 0.0)) {
        return 0.0;
    }
    int j = last_edge_at(a, t);
    return j < 0 ? clamp01(a->zero) : mass_upto(a, j);
}

double dq_cdf_bound_at(const struct dq *a, double t) {
    if (!a || !a->pdf || !(t >= 0.0)) {
        return 0.0;
    }
    int j = last_edge_at(a, t);
    j = j < 0 ? -1 : j - (a->lag > 0 ? a->lag : 0);
    return j < 0 ? clamp01(a->zero) : mass_upto(a, j);
}

/* The smallest index i with cdf[i] ≥ p (−1: the atom at 0 reaches it; n: never). */
static int quantile_index(const struct dq *a, double p) {
    if (a->zero >= p - 1e-12) {
        return -1;
    }
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        sum += a->pdf[i];
        if (sum >= p - 1e-12) {
            return i;
        }
    }
    return a->n;
}

int dq_quantile(const struct dq *a, double p, double *t) {
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (!t || !(p > 0.0) || p > 1.0) {
        return dq_fail(DQ_EINVAL, "quantile p = %g must be in (0, 1]", p);
    }
    int i = quantile_index(a, p);
    if (i >= a->n) {
        return dq_fail(DQ_ENOTREACHED, "p = %g is above the tangible mass %.6g", p, dq_tangible(a));
    }
    *t = (i + 1) * a->width;
    return DQ_OK;
}

int dq_quantile_bound(const struct dq *a, double p, double *t) {
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (!t || !(p > 0.0) || p > 1.0) {
        return dq_fail(DQ_EINVAL, "quantile p = %g must be in (0, 1]", p);
    }
    int i = quantile_index(a, p);
    if (i >= a->n) {
        return dq_fail(DQ_ENOTREACHED, "p = %g is above the tangible mass %.6g", p, dq_tangible(a));
    }
    *t = i < 0 ? 0.0 : (i + 1 + (a->lag > 0 ? a->lag : 0)) * a->width;
    return DQ_OK;
}

int dq_moments(const struct dq *a, struct dq_moments *m) {
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (!m) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    /* Where a bin's mass sits, in bins: its middle when spread, its right edge when a point
     * mass; the atom at 0 at 0. */
    double off = a->atoms ? 1.0 : 0.5;
    double z = a->zero > 0.0 ? a->zero : 0.0;
    double mass = 0.0, s1 = 0.0;
    for (int i = 0; i < a->n; i++) {
        double p = i == 0 ? a->pdf[0] - z : a->pdf[i];
        mass += p;
        s1 += p * (i + off);
    }
    mass += z;
    if (!(mass > 0.0)) {
        return dq_fail(DQ_ENOTREACHED, "no tangible mass: moments conditioned on success are "
                                       "undefined");
    }
    double mean = s1 / mass; /* in bins */
    double c2 = z * mean * mean, c3 = -z * mean * mean * mean, c4 = z * mean * mean * mean * mean;
    for (int i = 0; i < a->n; i++) {
        double p = i == 0 ? a->pdf[0] - z : a->pdf[i];
        double d = i + off - mean, d2 = d * d;
        c2 += p * d2;
        c3 += p * d2 * d;
        c4 += p * d2 * d2;
    }
    c2 /= mass;
    c3 /= mass;
    c4 /= mass;
    double w = a->width;
    m->mass = mass > 1.0 ? 1.0 : mass;
    m->mean = mean * w;
    m->variance = c2 * w * w;
    m->skewness = c2 > 0.0 ? c3 / pow(c2, 1.5) : 0.0;
    m->kurtosis = c2 > 0.0 ? c4 / (c2 * c2) : 0.0;
    return DQ_OK;
}

/* ---- re-expression ----------------------------------------------------------------------- */

/*
 * Adds src (n_src bins on exponent k_src; point masses at right edges when `atoms`, its
 * atom at 0 `zero`) into dst (n_dst bins on k_dst, zeroed by the caller). Coarser: whole
 * bins are summed (a bin past the new horizon is lost). Finer: a bin's mass is spread
 * evenly over the finer bins it covers (a point mass goes to the one ending at its edge,
 * the atom at 0 stays in bin 0); those past the new horizon are lost. Returns the lost
 * mass; *lag and *atoms (when not NULL) receive the result's lag and point-mass flag.
 */
static double regrid_into(const double *src, int n_src, int k_src, int lag, int atoms, double zero,
                          double *dst, int n_dst, int k_dst, int *lag_out, int *atoms_out) {
    double lost = 0.0;
    int still_atoms = atoms;
    if (k_dst >= k_src) {
        int d = k_dst - k_src;
        long f = 1L << d;
        for (long i = 0; i < n_src; i++) {
            if (src[i] == 0.0) {
                continue;
            }
            long j = i >> d;
            if (j >= n_dst) {
                lost += src[i];
                continue;
            }
            dst[j] += src[i];
            /* a point mass stays one only when its edge is an edge of the coarser grid */
            double at_edge = i == 0 ? zero : 0.0;
            if (atoms && (i + 1) % f != 0 && src[i] - at_edge > 0.0) {
                still_atoms = 0;
            }
        }
        if (lag_out) {
            *lag_out = (int)((lag + f - 1) / f);
        }
    } else {
        long g = 1L << (k_src - k_dst);
        for (long i = 0; i < n_src; i++) {
            double m = src[i];
            if (m == 0.0) {
                continue;
            }
            long first = i * g;
            if (i == 0 && zero > 0.0) {
                dst[0] += zero;
                m -= zero;
            }
            if (atoms) {
                long j = first + g - 1;
                if (j < n_dst) {
                    dst[j] += m;
                } else {
                    lost += m;
                }
                continue;
            }
            double part = m / (double)g;
            for (long j = first; j < first + g; j++) {
                if (j < n_dst) {
                    dst[j] += part;
                } else {
                    lost += part;
                }
            }
        }
        if (lag_out) {
            *lag_out = (int)(lag * g + (atoms ? 0 : g - 1));
        }
    }
    if (atoms_out) {
        *atoms_out = still_atoms;
    }
    return lost;
}

int dq_reexpress(const struct dq *a, int k, int n, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = check_dq("operand", a);
    struct dq *d = NULL;
    if (rc || (rc = new_dq(k, n, &d))) {
        return rc;
    }
    regrid_into(a->pdf, a->n, a->k, a->lag, a->atoms, a->zero, d->pdf, n, k, &d->lag, &d->atoms);
    d->zero = a->zero;
    d->failed = a->failed;
    normalise(d);
    *out = d;
    return DQ_OK;
}

/* Bins needed at exponent k to keep the horizon of n bins at exponent k0 ≤ k. */
static int bins_at(int n, int k0, int k) {
    long f = 1L << (k - k0);
    long bins = (n + f - 1) / f;
    return bins > DQ_MAX_BINS ? DQ_MAX_BINS : (int)bins;
}

int dq_rebin(const struct dq *a, int k, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (k < a->k) {
        return dq_fail(DQ_EINVAL,
                       "rebin goes to a coarser width: k = %d is below the "
                       "operand's k = %d (use dq_reexpress to refine)",
                       k, a->k);
    }
    if ((rc = dq_check_grid(k, a->n))) {
        return rc;
    }
    return dq_reexpress(a, k, bins_at(a->n, a->k, k), out);
}

/*
 * Brings n operands onto one grid: the coarsest width and the largest horizon there.
 * Fills cdf (n rows of *bins values, the caller frees *cdf) with each operand's CDF at the
 * common right edges, and *lag / *atoms with the largest lag and whether every operand is
 * made of point masses there.
 */
static int common_cdfs(const struct dq *const *ops, size_t n, int *k_out, int *bins_out,
                       double **cdf, int *lag_out, int *atoms_out) {
    if (!ops || n < 1) {
        return dq_fail(DQ_EINVAL, "an operator needs at least one operand");
    }
    int k = DQ_MIN_K;
    for (size_t i = 0; i < n; i++) {
        int rc = check_dq("operand", ops[i]);
        if (rc) {
            return dq_fail(rc, "operand %zu: %s", i, dq_last_error());
        }
        k = ops[i]->k > k ? ops[i]->k : k;
    }
    int bins = 1;
    for (size_t i = 0; i < n; i++) {
        int b = bins_at(ops[i]->n, ops[i]->k, k);
        bins = b > bins ? b : bins;
    }
    double *rows = calloc(n * (size_t)bins, sizeof *rows);
    if (!rows) {
        return dq_fail(DQ_ENOMEM, "no memory for %zu operands of %d bins", n, bins);
    }
    int lag = 0, atoms = 1;
    for (size_t i = 0; i < n; i++) {
        /* Each operand keeps its own horizon on the common width (as dq_rebin and the
         * sequence operator do); past it, its CDF stays at its tangible mass. */
        const struct dq *a = ops[i];
        double *row = rows + i * (size_t)bins;
        int l = 0, at = 0;
        regrid_into(a->pdf, a->n, a->k, a->lag, a->atoms, a->zero, row, bins_at(a->n, a->k, k), k,
                    &l, &at);
        lag = l > lag ? l : lag;
        atoms = atoms && at;
        double sum = 0.0;
        for (int j = 0; j < bins; j++) {
            sum += row[j];
            row[j] = sum > 1.0 ? 1.0 : sum;
        }
    }
    *k_out = k;
    *bins_out = bins;
    *cdf = rows;
    if (lag_out) {
        *lag_out = lag;
    }
    if (atoms_out) {
        *atoms_out = atoms;
    }
    return DQ_OK;
}

/* Builds a ΔQ from a CDF on grid (k, n): masses are the clamped differences. */
static int from_cdf(int k, int n, const double *cdf, struct dq **out) {
    struct dq *d = NULL;
    int rc = new_dq(k, n, &d);
    if (rc) {
        return rc;
    }
    double prev = 0.0;
    for (int i = 0; i < n; i++) {
        double c = cdf[i] < prev ? prev : (cdf[i] > 1.0 ? 1.0 : cdf[i]);
        d->pdf[i] = c - prev;
        prev = c;
    }
    *out = d;
    return DQ_OK;
}

/* ---- sequence ------------------------------------------------------------------------------ */

/* One operand of a sequence brought to the common exponent: its masses without the atom
 * at 0 (`row`, len bins), that atom, its kind of mass, lag and failed mass. */
struct seq_row {
    const double *row; /* own, or the operand's pdf (borrowed) */
    double *own;       /* what to free */
    int len;
    double zero;
    int atoms;
    int lag;
    double failed;
};

/* Fills r from a on exponent k ≥ a->k: a's own masses when they are on k and it has no
 * atom at 0, else a copy (r->own; the caller frees it). */
static int seq_row_of(const struct dq *a, int k, struct seq_row *r) {
    r->failed = a->failed;
    r->own = NULL;
    if (a->k == k && !(a->zero > 0.0)) {
        r->row = a->pdf;
        r->len = a->n;
        r->lag = a->lag;
        r->atoms = a->atoms;
        r->zero = 0.0;
        return DQ_OK;
    }
    r->len = bins_at(a->n, a->k, k);
    r->own = calloc((size_t)r->len, sizeof *r->own);
    if (!r->own) {
        return dq_fail(DQ_ENOMEM, "no memory for an operand of %d bins", r->len);
    }
    regrid_into(a->pdf, a->n, a->k, a->lag, a->atoms, a->zero, r->own, r->len, k, &r->lag,
                &r->atoms);
    r->zero = a->zero > 0.0 ? (a->zero < r->own[0] ? a->zero : r->own[0]) : 0.0;
    r->own[0] -= r->zero;
    if (r->own[0] < 0.0) {
        r->own[0] = 0.0;
    }
    r->row = r->own;
    return DQ_OK;
}

/* One spread-by-spread step in place: x[0 … len−1] becomes x[0 … len], each value shared
 * by its bin and the next (x[len] must be writable). */
static void share_pass(double *x, long len) {
    x[len] = 0.5 * x[len - 1];
    for (long i = len - 1; i > 0; i--) {
        x[i] = 0.5 * (x[i] + x[i - 1]);
    }
    x[0] *= 0.5;
}

/*
 * The sequence of two rows into r (r->row gets a->len + b->len bins, then owned by r).
 * Point masses at right edges move the other operand by whole bins (index i + j + 1);
 * two spread masses share bins i + j and i + j + 1 equally. The atoms at 0 are the
 * identity: each adds the other operand where it is.
 */
static int seq_pair(const struct seq_row *a, const struct seq_row *b, struct seq_row *r) {
    long len = (long)a->len + b->len;
    double *out = malloc(sizeof(double) * (size_t)len);
    if (!out) {
        return dq_fail(DQ_ENOMEM, "no memory for a convolution of %ld bins", len);
    }
    int shift = a->atoms || b->atoms;
    /* the convolution (len − 1 values), then moved by a bin or shared between two */
    int rc = dq_conv_auto(a->row, a->len, b->row, b->len, shift ? out + 1 : out);
    if (rc) {
        free(out);
        return rc;
    }
    if (shift) {
        out[0] = 0.0;
    } else {
        share_pass(out, len - 1);
    }
    if (a->zero > 0.0) {
        for (int j = 0; j < b->len; j++) {
            out[j] += a->zero * b->row[j];
        }
    }
    if (b->zero > 0.0) {
        for (int i = 0; i < a->len; i++) {
            out[i] += b->zero * a->row[i];
        }
    }
    r->row = r->own = out;
    r->len = (int)len;
    r->zero = a->zero * b->zero;
    r->atoms = a->atoms && b->atoms;
    r->lag = a->lag + b->lag + (shift ? 0 : 1);
    r->failed = 1.0 - (1.0 - a->failed) * (1.0 - b->failed);
    return DQ_OK;
}

/* Bins of width 2^k ms that end at or after `horizon` seconds (uncapped). */
static long bins_to(double horizon, int k) {
    double b = ceil(horizon / dq_width_of(k) - 1e-9);
    return b < 1.0 ? 1 : (b > 1e15 ? (long)1e15 : (long)b);
}

/*
 * Makes the ΔQ of a sequence result r (on exponent k) cut at `horizon` seconds (INFINITY:
 * its whole length): at exponent k when the kept bins fit in DQ_MAX_BINS, otherwise at
 * the first coarser width where they do (whole bins summed; past the widest grid, lost).
 */
static int seq_finish(struct seq_row *r, int k, double horizon, struct dq **out) {
    long keep = r->len;
    if (isfinite(horizon) && bins_to(horizon, k) < keep) {
        keep = bins_to(horizon, k);
    }
    int kk = k;
    long bins = keep;
    while (bins > DQ_MAX_BINS && kk < DQ_MAX_K) {
        kk++;
        bins = (keep + (1L << (kk - k)) - 1) >> (kk - k);
    }
    if (bins > DQ_MAX_BINS) {
        bins = DQ_MAX_BINS;
    }
    struct dq *d = NULL;
    int rc = new_dq(kk, (int)bins, &d);
    if (rc) {
        return rc;
    }
    int lkeep = (int)(keep < r->len ? keep : r->len);
    regrid_into(r->row, lkeep, k, r->lag, r->atoms, 0.0, d->pdf, (int)bins, kk, &d->lag, &d->atoms);
    d->pdf[0] += r->zero; /* the rows hold everything but the atom at 0 */
    d->zero = r->zero;
    d->failed = r->failed;
    normalise(d);
    *out = d;
    return DQ_OK;
}

/* Pairwise, cutting the running result back to `horizon` after every step: delays only
 * add, so mass already past it never comes back. */
static int seq_fold(struct seq_row *rows, size_t n, int k, double horizon, struct dq **out) {
    struct seq_row acc = rows[0];
    acc.own = NULL;
    double *own = NULL;
    const struct seq_row *cur = &rows[0];
    long cut = isfinite(horizon) ? bins_to(horizon, k) : -1;
    for (size_t j = 1; j < n; j++) {
        struct seq_row next;
        int rc = seq_pair(cur, &rows[j], &next);
        free(own);
        own = NULL;
        if (rc) {
            return rc;
        }
        if (cut > 0 && next.len > cut) {
            next.len = (int)cut;
        }
        acc = next;
        own = acc.own;
        cur = &acc;
    }
    int rc = seq_finish(&acc, k, horizon, out);
    free(own);
    return rc;
}

/* The binomial kernel of m − 1 halvings (m ≥ 2 values): what m − 1 spread-by-spread
 * steps put on the bins in one product. */
static void binomial_kernel(double *kern, int m) {
    double lm = lgamma((double)m);
    for (int t = 0; t < m; t++) {
        kern[t] =
            exp(lm - lgamma(t + 1.0) - lgamma((double)(m - t)) - (m - 1) * 0.69314718055994530942);
    }
}

/* All at once: the spectra of every operand (and of the spread kernel) multiplied, one
 * inverse transform. Only for operands without an atom at 0. */
static int seq_one_shot(struct seq_row *rows, size_t n, int k, double horizon, struct dq **out) {
    size_t spread = 0;
    long total = 0;
    int lag = 0;
    double ok = 1.0;
    for (size_t j = 0; j < n; j++) {
        spread += !rows[j].atoms;
        total += rows[j].len;
        lag += rows[j].lag;
        ok *= 1.0 - rows[j].failed;
    }
    int shift = spread == 0 ? (int)n - 1 : (int)(n - spread);
    /* s − 1 spread-by-spread steps: one or two as passes over the result, more as the
     * binomial kernel in the product (one more forward transform: cheaper from three
     * passes on, measured with bench_engine) */
    int passes = spread >= 2 && spread <= 3 ? (int)spread - 1 : 0;
    int kern_len = spread > 3 ? (int)spread : 0;
    const double **arrays = calloc(n + 1, sizeof *arrays);
    int *lens = calloc(n + 1, sizeof *lens);
    double *kern = kern_len ? malloc(sizeof(double) * (size_t)kern_len) : NULL;
    double *raw = calloc((size_t)total, sizeof *raw);
    int rc = DQ_OK;
    if (!arrays || !lens || !raw || (kern_len && !kern)) {
        rc = dq_fail(DQ_ENOMEM, "no memory for a convolution of %ld bins", total);
        goto out;
    }
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        arrays[m] = rows[j].row;
        lens[m++] = rows[j].len;
    }
    if (kern_len) {
        binomial_kernel(kern, kern_len);
        arrays[m] = kern;
        lens[m++] = kern_len;
    }
    /* Σ lens − (m − 1) values, shifted by `shift`, then the passes: Σ len values in all */
    rc = dq_conv_fft_n(arrays, lens, m, raw + shift);
    long have = total - passes;
    for (int p = 0; !rc && p < passes; p++) {
        share_pass(raw + shift, have - shift);
        have++;
    }
    if (!rc) {
        struct seq_row r = {.row = raw,
                            .len = (int)total,
                            .zero = 0.0,
                            .atoms = spread == 0,
                            .lag = lag + (spread >= 1 ? (int)spread - 1 : 0),
                            .failed = 1.0 - ok};
        rc = seq_finish(&r, k, horizon, out);
    }
out:
    free(arrays);
    free(lens);
    free(kern);
    free(raw);
    return rc;
}

int dq_sequence_cut(const struct dq *const *ops, size_t n, double horizon, struct dq **out) {
    if (!ops || n < 1) {
        return dq_fail(DQ_EINVAL, "a sequence needs at least one operand");
    }
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (isnan(horizon) || !(horizon > 0.0)) {
        return dq_fail(DQ_EINVAL, "a sequence's horizon must be a time > 0 (or INFINITY), not %g",
                       horizon);
    }
    int k = DQ_MIN_K;
    for (size_t i = 0; i < n; i++) {
        int rc = check_dq("operand", ops[i]);
        if (rc) {
            return dq_fail(rc, "operand %zu: %s", i, dq_last_error());
        }
        k = ops[i]->k > k ? ops[i]->k : k;
    }
    struct seq_row *rows = calloc(n, sizeof *rows);
    if (!rows) {
        return dq_fail(DQ_ENOMEM, "no memory for %zu operands", n);
    }
    int rc = DQ_OK;
    long total = 0;
    int any_zero = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = seq_row_of(ops[i], k, &rows[i]);
        total += rows[i].len;
        any_zero |= rows[i].zero > 0.0;
    }
    if (!rc) {
        if (n == 1) {
            rc = seq_finish(&rows[0], k, horizon, out);
        } else if (any_zero || total > SEQ_ONE_SHOT_BINS) {
            rc = seq_fold(rows, n, k, horizon, out);
        } else {
            rc = seq_one_shot(rows, n, k, horizon, out);
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(rows[i].own);
    }
    free(rows);
    return rc;
}

int dq_sequence(const struct dq *a, const struct dq *b, struct dq **out) {
    int rc = check_dq("first operand", a);
    if (rc || (rc = check_dq("second operand", b))) {
        return rc;
    }
    const struct dq *ops[2] = {a, b};
    return dq_sequence_cut(ops, 2, INFINITY, out);
}

int dq_sequence_n(const struct dq *const *ops, size_t n, struct dq **out) {
    return dq_sequence_cut(ops, n, INFINITY, out);
}

/* ---- first-to-finish, all-to-finish, choice ------------------------------------------------- */

enum combine { COMBINE_FIRST, COMBINE_ALL, COMBINE_CHOICE };

static int combine(const struct dq *const *ops, const double *weights, size_t n, enum combine how,
                   struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k, bins, lag, atoms;
    double *cdf = NULL;
    int rc = common_cdfs(ops, n, &k, &bins, &cdf, &lag, &atoms);
    if (rc) {
        return rc;
    }
    double *res = calloc((size_t)bins, sizeof *res);
    if (!res) {
        free(cdf);
        return dq_fail(DQ_ENOMEM, "no memory for %d bins", bins);
    }
    for (int j = 0; j < bins; j++) {
        double acc = how == COMBINE_ALL ? 1.0 : 0.0;
        double miss = 1.0; /* Π (1 − F_i): every branch still running */
        for (size_t i = 0; i < n; i++) {
            double f = cdf[i * (size_t)bins + (size_t)j];
            switch (how) {
            case COMBINE_FIRST:
                miss *= 1.0 - f;
                break;
            case COMBINE_ALL:
                acc *= f;
                break;
            case COMBINE_CHOICE:
                acc += weights[i] * f;
                break;
            }
        }
        res[j] = how == COMBINE_FIRST ? 1.0 - miss : acc;
    }
    /* the same laws at delay 0 (the atoms) and for the failures (at t = ∞) */
    double z = how == COMBINE_ALL ? 1.0 : 0.0, zmiss = 1.0;
    double f = how == COMBINE_CHOICE ? 0.0 : 1.0, fok = 1.0;
    for (size_t i = 0; i < n; i++) {
        switch (how) {
        case COMBINE_FIRST:
            zmiss *= 1.0 - ops[i]->zero;
            f *= ops[i]->failed;
            break;
        case COMBINE_ALL:
            z *= ops[i]->zero;
            fok *= 1.0 - ops[i]->failed;
            break;
        case COMBINE_CHOICE:
            z += weights[i] * ops[i]->zero;
            f += weights[i] * ops[i]->failed;
            break;
        }
    }
    rc = from_cdf(k, bins, res, out);
    if (!rc) {
        (*out)->lag = lag;
        (*out)->atoms = atoms;
        (*out)->zero = how == COMBINE_FIRST ? 1.0 - zmiss : z;
        (*out)->failed = how == COMBINE_ALL ? 1.0 - fok : f;
        normalise(*out);
    }
    free(res);
    free(cdf);
    return rc;
}

int dq_first_to_finish(const struct dq *const *ops, size_t n, struct dq **out) {
    return combine(ops, NULL, n, COMBINE_FIRST, out);
}

int dq_all_to_finish(const struct dq *const *ops, size_t n, struct dq **out) {
    return combine(ops, NULL, n, COMBINE_ALL, out);
}

int dq_choice(const struct dq *const *ops, const double *weights, size_t n, struct dq **out) {
    if (!weights || n < 1) {
        return dq_fail(DQ_EINVAL, "a choice needs at least one operand and its weight");
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(weights[i]) || weights[i] < 0.0 || weights[i] > 1.0) {
            return dq_fail(DQ_EINVAL, "weight %zu = %g must be in [0, 1]", i, weights[i]);
        }
        sum += weights[i];
    }
    if (fabs(sum - 1.0) > DQ_EPS) {
        return dq_fail(DQ_EINVAL, "choice weights sum to %.12g, not 1", sum);
    }
    return combine(ops, weights, n, COMBINE_CHOICE, out);
}

/* ---- QTA --------------------------------------------------------------------------------- */

int dq_qta_check(const struct dq_qta *q) {
    if (!q) {
        return dq_fail(DQ_EINVAL, "QTA is NULL");
    }
    if (q->n < 1 || q->n > DQ_QTA_MAX_POINTS) {
        return dq_fail(DQ_ERANGE, "a QTA has 1 to %d points, not %d", DQ_QTA_MAX_POINTS, q->n);
    }
    for (int j = 0; j < q->n; j++) {
        if (!isfinite(q->t[j]) || q->t[j] < 0.0) {
            return dq_fail(DQ_EINVAL, "QTA point %d: time %g must be a finite time ≥ 0", j,
                           q->t[j]);
        }
        if (!isfinite(q->p[j]) || !(q->p[j] > 0.0) || q->p[j] > 1.0) {
            return dq_fail(DQ_EINVAL, "QTA point %d: probability %g must be in (0, 1]", j, q->p[j]);
        }
        if (j > 0 && !(q->t[j] > q->t[j - 1])) {
            return dq_fail(DQ_EINVAL, "QTA point %d: times must increase (%g after %g)", j, q->t[j],
                           q->t[j - 1]);
        }
        if (j > 0 && q->p[j] < q->p[j - 1]) {
            return dq_fail(DQ_EINVAL,
                           "QTA point %d: probabilities must not decrease (%g after "
                           "%g)",
                           j, q->p[j], q->p[j - 1]);
        }
    }
    if (!isfinite(q->max_lost) || q->max_lost < 0.0 || q->max_lost > 1.0) {
        return dq_fail(DQ_EINVAL, "QTA maximum lost mass %g must be in [0, 1]", q->max_lost);
    }
    return DQ_OK;
}

int dq_from_qta(int k, int n, const struct dq_qta *q, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int rc = dq_qta_check(q);
    struct dq *d = NULL;
    if (rc || (rc = new_dq(k, n, &d))) {
        return rc;
    }
    double prev = 0.0;
    d->atoms = 1;
    for (int j = 0; j < q->n; j++) {
        int i = bin_of(q->t[j], d->width, n);
        d->atoms &= i < 0 || q->t[j] == 0.0 || on_edge(q->t[j], d->width);
        if (i >= 0) {
            d->pdf[i] += q->p[j] - prev;
        }
        if (q->t[j] == 0.0) {
            d->zero += q->p[j] - prev;
        }
        prev = q->p[j];
    }
    normalise(d);
    *out = d;
    return DQ_OK;
}

int dq_qta_eval(const struct dq *a, const struct dq_qta *q, struct dq_qta_result *res) {
    int rc = check_dq("operand", a);
    if (rc || (rc = dq_qta_check(q))) {
        return rc;
    }
    if (!res) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    /* on the lower bound of the CDF (dq.h): a QTA never passes on rounding */
    double margin = q->max_lost - dq_lost_bound(a);
    int worst = -1;
    for (int j = 0; j < q->n; j++) {
        double m = dq_cdf_bound_at(a, q->t[j]) - q->p[j];
        if (m < margin) {
            margin = m;
            worst = j;
        }
    }
    if (fabs(margin) <= DQ_EPS) {
        margin = 0.0; /* round-off: a ΔQ exactly on its QTA meets it */
    }
    res->margin = margin;
    res->ok = margin >= 0.0;
    res->slack = margin > 0.0 ? margin : 0.0;
    res->hazard = margin < 0.0 ? -margin : 0.0;
    res->worst = worst;
    return DQ_OK;
}

/* ---- comparison and distances --------------------------------------------------------- */

/* The CDFs of a and b on their common grid (rows 0 and 1 of *cdf). */
static int pair_cdfs(const struct dq *a, const struct dq *b, int *k, int *bins, double **cdf) {
    const struct dq *ops[2] = {a, b};
    int rc = check_dq("first operand", a);
    if (rc || (rc = check_dq("second operand", b))) {
        return rc;
    }
    return common_cdfs(ops, 2, k, bins, cdf, NULL, NULL);
}

int dq_compare(const struct dq *a, const struct dq *b, double tol, enum dq_order *order) {
    if (!order || !isfinite(tol) || tol < 0.0) {
        return dq_fail(DQ_EINVAL, "compare needs an output and a tolerance ≥ 0");
    }
    int k, bins;
    double *cdf = NULL;
    int rc = pair_cdfs(a, b, &k, &bins, &cdf);
    if (rc) {
        return rc;
    }
    int a_above = 0, b_above = 0;
    for (int j = 0; j < bins; j++) {
        double d = cdf[j] - cdf[(size_t)bins + (size_t)j];
        a_above |= d > tol;
        b_above |= -d > tol;
    }
    free(cdf);
    *order = a_above && b_above ? DQ_CMP_INCOMPARABLE
             : a_above          ? DQ_CMP_BETTER
             : b_above          ? DQ_CMP_WORSE
                                : DQ_CMP_EQUAL;
    return DQ_OK;
}

/* Kolmogorov distribution tail Q(λ) = 2 Σ (−1)^{j−1} e^{−2 j² λ²}. */
static double kolmogorov_q(double lambda) {
    if (lambda < 0.2) {
        return 1.0;
    }
    double sum = 0.0, sign = 1.0;
    for (int j = 1; j <= 100; j++) {
        double term = exp(-2.0 * j * j * lambda * lambda);
        sum += sign * term;
        if (term < 1e-12) {
            break;
        }
        sign = -sign;
    }
    double q = 2.0 * sum;
    return q < 0.0 ? 0.0 : (q > 1.0 ? 1.0 : q);
}

int dq_ks(const struct dq *a, const struct dq *b, uint64_t na, uint64_t nb, double *d,
          double *p_value) {
    if (!d || !p_value) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k, bins;
    double *cdf = NULL;
    int rc = pair_cdfs(a, b, &k, &bins, &cdf);
    if (rc) {
        return rc;
    }
    /* each CDF is known to lie within ± its lag (in common bins): the distance is to that
     * band, so that a calculated ΔQ is not told apart from an observed one by the bins its
     * sequence steps spread over (for lags 0 it is the usual sup |F_a − F_b|) */
    long fa = 1L << (k - a->k), fb = 1L << (k - b->k);
    int la = (int)((a->lag + fa - 1) / fa), lb = (int)((b->lag + fb - 1) / fb);
    const double *ca = cdf, *cb = cdf + bins;
    double sup = 0.0;
    for (int j = 0; j < bins; j++) {
        double a_lo = j - la >= 0 ? ca[j - la] : 0.0, a_hi = ca[j + la < bins ? j + la : bins - 1];
        double b_lo = j - lb >= 0 ? cb[j - lb] : 0.0, b_hi = cb[j + lb < bins ? j + lb : bins - 1];
        double diff = a_lo - b_hi > b_lo - a_hi ? a_lo - b_hi : b_lo - a_hi;
        sup = diff > sup ? diff : sup;
    }
    free(cdf);
    *d = sup;
    if (na == 0) {
        *p_value = 1.0;
        return DQ_OK;
    }
    double ne = nb == 0 ? (double)na : (double)na * (double)nb / ((double)na + (double)nb);
    double sq = sqrt(ne);
    *p_value = kolmogorov_q((sq + 0.12 + 0.11 / sq) * sup);
    return DQ_OK;
}

int dq_wasserstein1(const struct dq *a, const struct dq *b, double *w1) {
    if (!w1) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k, bins;
    double *cdf = NULL;
    int rc = pair_cdfs(a, b, &k, &bins, &cdf);
    if (rc) {
        return rc;
    }
    /* the step CDFs: the atoms at 0 on [0, w), cdf[j] on [(j+1)·w, (j+2)·w), up to H */
    double sum = fabs(a->zero - b->zero);
    for (int j = 0; j + 1 < bins; j++) {
        sum += fabs(cdf[j] - cdf[(size_t)bins + (size_t)j]);
    }
    free(cdf);
    *w1 = sum * dq_width_of(k);
    return DQ_OK;
}

void dq_band_destroy(struct dq_band *b) {
    if (!b) {
        return;
    }
    free(b->mean);
    free(b->lo);
    free(b->hi);
    free(b);
}

int dq_band_compute(const struct dq *const *ring, size_t w, double z, struct dq_band **out) {
    if (!ring || w < 1 || !out) {
        return dq_fail(DQ_EINVAL, "a band needs at least one ΔQ and an output");
    }
    if (!isfinite(z) || z < 0.0) {
        return dq_fail(DQ_EINVAL, "band width z = %g must be finite and ≥ 0", z);
    }
    for (size_t i = 0; i < w; i++) {
        int rc = check_dq("ring entry", ring[i]);
        if (rc) {
            return dq_fail(rc, "ring entry %zu: %s", i, dq_last_error());
        }
        if (ring[i]->k != ring[0]->k || ring[i]->n != ring[0]->n) {
            return dq_fail(DQ_EMISMATCH,
                           "ring entry %zu is on grid (k %d, N %d), entry 0 on "
                           "(k %d, N %d)",
                           i, ring[i]->k, ring[i]->n, ring[0]->k, ring[0]->n);
        }
    }
    int n = ring[0]->n;
    struct dq_band *b = calloc(1, sizeof *b);
    if (b) {
        b->mean = calloc((size_t)n, sizeof(double));
        b->lo = calloc((size_t)n, sizeof(double));
        b->hi = calloc((size_t)n, sizeof(double));
    }
    if (!b || !b->mean || !b->lo || !b->hi) {
        dq_band_destroy(b);
        return dq_fail(DQ_ENOMEM, "no memory for a band of %d bins", n);
    }
    b->k = ring[0]->k;
    b->n = n;
    /* Running CDFs column by column: Σ F and Σ F² per bin over the ring. */
    double *cum = calloc(w, sizeof *cum);
    if (!cum) {
        dq_band_destroy(b);
        return dq_fail(DQ_ENOMEM, "no memory for a band of %zu windows", w);
    }
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (size_t i = 0; i < w; i++) {
            cum[i] += ring[i]->pdf[j];
            s += cum[i];
        }
        double mean = s / (double)w, ss = 0.0;
        for (size_t i = 0; i < w; i++) {
            ss += (cum[i] - mean) * (cum[i] - mean); /* two passes: no cancellation */
        }
        double var = w > 1 ? ss / (double)(w - 1) : 0.0;
        double half = z * sqrt(var > 0.0 ? var : 0.0) / sqrt((double)w);
        b->mean[j] = mean;
        b->lo[j] = mean - half < 0.0 ? 0.0 : mean - half;
        b->hi[j] = mean + half > 1.0 ? 1.0 : mean + half;
    }
    free(cum);
    *out = b;
    return DQ_OK;
}

/* ---- moment algebra ------------------------------------------------------------------------- */

int dq_infer_unobserved(const struct dq_moments *parent, const struct dq_moments *observed,
                        size_t m, double *mean, double *variance, double *covariance_hint) {
    if (!parent || (m > 0 && !observed) || !mean || !variance || !covariance_hint) {
        return dq_fail(DQ_EINVAL, "moment inference needs the parent, the observed parts and "
                                  "outputs");
    }
    double mu = parent->mean, var = parent->variance;
    for (size_t i = 0; i < m; i++) {
        mu -= observed[i].mean;
        var -= observed[i].variance;
    }
    *mean = mu > 0.0 ? mu : 0.0;
    *covariance_hint = var < 0.0 ? var : 0.0;
    *variance = var > 0.0 ? var : 0.0;
    return DQ_OK;
}

void dq_engine_cleanup(void) {
    dq_conv__cleanup();
}
