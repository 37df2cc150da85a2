/*
 * dq.c: the ΔQ type, its constructors, operators and queries (see dq.h for the grid
 * semantics). Every operator works on copies of its operands brought to one grid, so
 * the operands are never modified, and builds its result in a fresh ΔQ that is handed
 * over only on success.
 *
 * Numerical notes (details in docs/engine.md):
 * - A continuous delay t goes to grid index round(t / w); t ≤ horizon is kept, beyond is
 *   lost. Continuous distributions are integrated exactly over each bin's interval.
 * - Re-expression between grids uses integer index arithmetic (widths are powers of two
 *   apart), so it is exact up to the rounding of grid times.
 * - Products of CDFs and differences back to masses can leave −1e−17 residues; masses
 *   are clamped at 0 and the tangible mass at 1.
 */
#include "dq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_conv.h"
#include "dq_internal.h"

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

/* Grid index of delay t ≥ 0 on (w, n), or −1 when t is beyond the horizon n·w. */
static int index_of(double t, double w, int n) {
    if (t > n * w * (1 + 1e-12)) {
        return -1;
    }
    double i = floor(t / w + 0.5);
    return i >= n ? n - 1 : (int)i;
}

static int check_time(const char *what, double t) {
    if (!isfinite(t) || t < 0.0) {
        return dq_fail(DQ_EINVAL, "%s = %g must be a finite time ≥ 0", what, t);
    }
    return DQ_OK;
}

/* Keeps Σ pdf ≤ 1 after round-off and clears negative residues. */
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
    }
}

static int check_dq(const char *what, const struct dq *a) {
    if (!a || !a->pdf) {
        return dq_fail(DQ_EINVAL, "%s is NULL", what);
    }
    return dq_check_grid(a->k, a->n);
}

/* ---- constructors ------------------------------------------------------------------ */

int dq_never(int k, int n, struct dq **out) {
    return new_dq(k, n, out);
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
    int i = index_of(t, a->width, n);
    if (i >= 0) {
        a->pdf[i] = 1.0;
    }
    *out = a;
    return DQ_OK;
}

/* Bin i of a grid collects [(i−½)w, (i+½)w), bin 0 from 0, the last bin up to n·w. */
static double bin_lo(int i, double w) {
    return i == 0 ? 0.0 : (i - 0.5) * w;
}

static double bin_hi(int i, double w, int n) {
    return i == n - 1 ? n * w : (i + 0.5) * w;
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
        d->pdf[i] =
            uniform_cdf(bin_hi(i, d->width, n), a, b) - uniform_cdf(bin_lo(i, d->width), a, b);
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
    for (int i = 0; i < n; i++) {
        /* e^{-λ lo} − e^{-λ hi} = F(hi) − F(lo), computed without cancellation. */
        double lo = bin_lo(i, d->width), hi = bin_hi(i, d->width, n);
        d->pdf[i] = exp(-rate * lo) * -expm1(-rate * (hi - lo));
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
        int i = index_of(durations[s], d->width, n);
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
    *out = d;
    return DQ_OK;
}

int dq_from_pdf(int k, int n, const double *pdf, struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    if (!pdf) {
        return dq_fail(DQ_EINVAL, "no masses given");
    }
    int rc = dq_check_grid(k, n);
    if (rc) {
        return rc;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(pdf[i]) || pdf[i] < 0.0) {
            return dq_fail(DQ_EINVAL, "mass %g in bin %d is not a finite value ≥ 0", pdf[i], i);
        }
        sum += pdf[i];
    }
    if (sum > 1.0 + DQ_EPS) {
        return dq_fail(DQ_EINVAL, "masses sum to %.12g, more than 1", sum);
    }
    struct dq *d = NULL;
    if ((rc = new_dq(k, n, &d))) {
        return rc;
    }
    memcpy(d->pdf, pdf, sizeof(double) * (size_t)n);
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
    *out = d;
    return DQ_OK;
}

/* ---- queries (used by the operators below) ------------------------------------------ */

double dq_horizon(const struct dq *a) {
    return a ? a->n * a->width : 0.0;
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

double dq_cdf_at(const struct dq *a, double t) {
    if (!a || !a->pdf || !(t >= 0.0)) {
        return 0.0;
    }
    double last = floor(t / a->width + 1e-9);
    int upto = last >= a->n - 1 ? a->n - 1 : (int)last;
    double sum = 0.0;
    for (int i = 0; i <= upto; i++) {
        sum += a->pdf[i];
    }
    return sum > 1.0 ? 1.0 : sum;
}

int dq_quantile(const struct dq *a, double p, double *t) {
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (!t || !(p > 0.0) || p > 1.0) {
        return dq_fail(DQ_EINVAL, "quantile p = %g must be in (0, 1]", p);
    }
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        sum += a->pdf[i];
        if (sum >= p - 1e-12) {
            *t = i * a->width;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_ENOTREACHED, "p = %g is above the tangible mass %.6g", p, sum);
}

int dq_moments(const struct dq *a, struct dq_moments *m) {
    int rc = check_dq("operand", a);
    if (rc) {
        return rc;
    }
    if (!m) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    double mass = 0.0, s1 = 0.0;
    for (int i = 0; i < a->n; i++) {
        mass += a->pdf[i];
        s1 += a->pdf[i] * i;
    }
    if (!(mass > 0.0)) {
        return dq_fail(DQ_ENOTREACHED, "no tangible mass: moments conditioned on success are "
                                       "undefined");
    }
    double mean = s1 / mass; /* in bins */
    double c2 = 0.0, c3 = 0.0, c4 = 0.0;
    for (int i = 0; i < a->n; i++) {
        double d = i - mean, d2 = d * d;
        c2 += a->pdf[i] * d2;
        c3 += a->pdf[i] * d2 * d;
        c4 += a->pdf[i] * d2 * d2;
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
 * Adds the masses of src (grid k_src) into dst (grid k_dst, n_dst bins; zeroed by the
 * caller), moving each to the nearest grid time of dst. Returns the mass that fell
 * beyond dst's horizon.
 */
static double reexpress_into(const double *src, int n_src, int k_src, double *dst, int n_dst,
                             int k_dst) {
    double lost = 0.0;
    if (k_dst >= k_src) {
        long f = 1L << (k_dst - k_src);
        for (long i = 0; i < n_src; i++) {
            if (src[i] == 0.0) {
                continue;
            }
            if (i > (long)n_dst * f) {
                lost += src[i];
                continue;
            }
            long j = i;
            if (f > 1) {
                /* nearest coarse time; an exact tie goes to the even one, so that rebinning
                 * many operands does not drift later by half a fine bin each */
                j = i / f;
                long r = i % f;
                if (r > f / 2 || (r == f / 2 && (j & 1))) {
                    j++;
                }
            }
            dst[j >= n_dst ? n_dst - 1 : j] += src[i];
        }
    } else {
        long g = 1L << (k_src - k_dst);
        for (long i = 0; i < n_src; i++) {
            if (src[i] == 0.0) {
                continue;
            }
            long j = i * g;
            if (j > n_dst) {
                lost += src[i];
                continue;
            }
            dst[j >= n_dst ? n_dst - 1 : j] += src[i];
        }
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
    reexpress_into(a->pdf, a->n, a->k, d->pdf, n, k);
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
 * common grid times.
 */
static int common_cdfs(const struct dq *const *ops, size_t n, int *k_out, int *bins_out,
                       double **cdf) {
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
    for (size_t i = 0; i < n; i++) {
        /* Each operand keeps its own horizon on the common width (as dq_rebin and the
         * sequence operator do); past it, its CDF stays at its tangible mass. */
        double *row = rows + i * (size_t)bins;
        reexpress_into(ops[i]->pdf, ops[i]->n, ops[i]->k, row, bins_at(ops[i]->n, ops[i]->k, k), k);
        double sum = 0.0;
        for (int j = 0; j < bins; j++) {
            sum += row[j];
            row[j] = sum > 1.0 ? 1.0 : sum;
        }
    }
    *k_out = k;
    *bins_out = bins;
    *cdf = rows;
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
    normalise(d);
    *out = d;
    return DQ_OK;
}

/* ---- operators ---------------------------------------------------------------------------- */

/*
 * Turns a raw convolution (len masses on exponent k) into a ΔQ, coarsening the width until
 * the result fits in DQ_MAX_BINS; past the widest grid the mass is lost.
 */
static int from_raw(const double *raw, long len, int k, struct dq **out) {
    int kk = k;
    long bins = len;
    while (bins > DQ_MAX_BINS && kk < DQ_MAX_K) {
        kk++;
        bins = (len + (1L << (kk - k)) - 1) >> (kk - k);
    }
    if (bins > DQ_MAX_BINS) {
        bins = DQ_MAX_BINS;
    }
    struct dq *d = NULL;
    int rc = new_dq(kk, (int)bins, &d);
    if (rc) {
        return rc;
    }
    reexpress_into(raw, (int)len, k, d->pdf, (int)bins, kk);
    normalise(d);
    *out = d;
    return DQ_OK;
}

/* Copies each operand's masses onto exponent k (coarsest), keeping its horizon. */
static int masses_at(const struct dq *const *ops, size_t n, int k, double **rows, int *lens) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        lens[i] = bins_at(ops[i]->n, ops[i]->k, k);
        total += (size_t)lens[i];
    }
    double *buf = calloc(total, sizeof *buf);
    if (!buf) {
        return dq_fail(DQ_ENOMEM, "no memory for %zu operands", n);
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        rows[i] = buf + off;
        reexpress_into(ops[i]->pdf, ops[i]->n, ops[i]->k, rows[i], lens[i], k);
        off += (size_t)lens[i];
    }
    return DQ_OK;
}

int dq_sequence(const struct dq *a, const struct dq *b, struct dq **out) {
    const struct dq *ops[2] = {a, b};
    int rc = check_dq("first operand", a);
    if (rc || (rc = check_dq("second operand", b))) {
        return rc;
    }
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k = a->k > b->k ? a->k : b->k;
    double *rows[2];
    int lens[2];
    if ((rc = masses_at(ops, 2, k, rows, lens))) {
        return rc;
    }
    long len = (long)lens[0] + lens[1] - 1;
    double *raw = malloc(sizeof(double) * (size_t)len);
    if (!raw) {
        free(rows[0]);
        return dq_fail(DQ_ENOMEM, "no memory for a convolution of %ld bins", len);
    }
    rc = dq_conv_auto(rows[0], lens[0], rows[1], lens[1], raw);
    if (!rc) {
        rc = from_raw(raw, len, k, out);
    }
    free(raw);
    free(rows[0]);
    return rc;
}

int dq_sequence_n(const struct dq *const *ops, size_t n, struct dq **out) {
    if (!ops || n < 1) {
        return dq_fail(DQ_EINVAL, "a sequence needs at least one operand");
    }
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k = DQ_MIN_K;
    for (size_t i = 0; i < n; i++) {
        int rc = check_dq("operand", ops[i]);
        if (rc) {
            return dq_fail(rc, "operand %zu: %s", i, dq_last_error());
        }
        k = ops[i]->k > k ? ops[i]->k : k;
    }
    if (n == 1) {
        return dq_clone(ops[0], out);
    }
    double **rows = calloc(n, sizeof *rows);
    int *lens = calloc(n, sizeof *lens);
    double *raw = NULL;
    int rc = (rows && lens) ? DQ_OK : dq_fail(DQ_ENOMEM, "no memory for %zu operands", n);
    if (!rc) {
        rc = masses_at(ops, n, k, rows, lens);
    }
    if (rc) {
        free(rows);
        free(lens);
        return rc;
    }
    long len = 1;
    for (size_t i = 0; i < n; i++) {
        len += lens[i] - 1;
    }
    raw = malloc(sizeof(double) * (size_t)len);
    if (!raw) {
        rc = dq_fail(DQ_ENOMEM, "no memory for a convolution of %ld bins", len);
    } else {
        rc = dq_conv_fft_n((const double *const *)rows, lens, n, raw);
    }
    if (!rc) {
        rc = from_raw(raw, len, k, out);
    }
    free(raw);
    free(rows[0]);
    free(rows);
    free(lens);
    return rc;
}

enum combine { COMBINE_FIRST, COMBINE_ALL, COMBINE_CHOICE };

static int combine(const struct dq *const *ops, const double *weights, size_t n, enum combine how,
                   struct dq **out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing output pointer");
    }
    int k, bins;
    double *cdf = NULL;
    int rc = common_cdfs(ops, n, &k, &bins, &cdf);
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
    rc = from_cdf(k, bins, res, out);
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
    for (int j = 0; j < q->n; j++) {
        int i = index_of(q->t[j], d->width, n);
        if (i >= 0) {
            d->pdf[i] += q->p[j] - prev;
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
    double margin = q->max_lost - dq_lost(a);
    int worst = -1;
    for (int j = 0; j < q->n; j++) {
        double m = dq_cdf_at(a, q->t[j]) - q->p[j];
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
    return common_cdfs(ops, 2, k, bins, cdf);
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
    double sup = 0.0;
    for (int j = 0; j < bins; j++) {
        double diff = fabs(cdf[j] - cdf[(size_t)bins + (size_t)j]);
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
    double sum = 0.0;
    for (int j = 0; j < bins; j++) {
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
