/*
 * engine_test_util.h: helpers shared by the engine test executables: a seeded PRNG so
 * every run sees the same "random" inputs, and reference computations written from the
 * contract in dq.h (bin i = (i·w, (i+1)·w], cdf[i] at its right edge, sequence sharing
 * two spread masses between two bins, whole-bin re-expression) and NOT from the engine's
 * code, so the tests are a second, independent reading.
 *
 * Everything here is static inline: each test executable is one translation unit that
 * includes check.h first.
 */
#ifndef ENGINE_TEST_UTIL_H
#define ENGINE_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dq.h"

/* splitmix64: tiny, good enough for test inputs, identical on every platform. */
struct trng {
    uint64_t s;
};

static inline uint64_t trng_next(struct trng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double trng_unit(struct trng *r) {
    return (double)(trng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [lo, hi]. */
static inline int trng_int(struct trng *r, int lo, int hi) {
    return lo + (int)(trng_next(r) % (uint64_t)(hi - lo + 1));
}

/*
 * Fills pdf[0..n-1] with random masses summing to `total`. About a `sparse` fraction of
 * the bins stay empty so results have holes (which FFT round-off would otherwise fill).
 */
static inline void trng_pdf(struct trng *r, double *pdf, int n, double total, double sparse) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        pdf[i] = trng_unit(r) < sparse ? 0.0 : trng_unit(r);
        sum += pdf[i];
    }
    if (sum == 0.0) {
        pdf[n / 2] = 1.0;
        sum = 1.0;
    }
    for (int i = 0; i < n; i++)
        pdf[i] *= total / sum;
}

/* A random ΔQ on (k, n) with the given tangible mass; NULL when the engine refuses. */
static inline struct dq *trng_dq(struct trng *r, int k, int n, double total, double sparse) {
    double *pdf = malloc((size_t)n * sizeof *pdf);
    struct dq *a = NULL;
    if (!pdf)
        return NULL;
    trng_pdf(r, pdf, n, total, sparse);
    if (dq_from_pdf(k, n, pdf, &a) != DQ_OK)
        a = NULL;
    free(pdf);
    return a;
}

/* Σ pdf, computed here rather than trusting dq_tangible. */
static inline double ref_mass(const struct dq *a) {
    double s = 0.0;
    for (int i = 0; i < a->n; i++)
        s += a->pdf[i];
    return s;
}

/* Reference direct convolution (out holds na + nb − 1 values). */
static inline void ref_conv(const double *a, int na, const double *b, int nb, double *out) {
    for (int i = 0; i < na + nb - 1; i++)
        out[i] = 0.0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            out[i + j] += a[i] * b[j];
}

/*
 * pdf of a (spread masses, no atom at 0) re-expressed on (k2, n2) by the contract of
 * dq_reexpress: to a coarser width whole bins are summed (fine bin i goes to coarse bin
 * i >> d); to a finer one each bin's mass is spread evenly over the 2^d finer bins it
 * covers; what lands at or past n2 is lost. out holds n2 values.
 */
static inline void ref_regrid(const struct dq *a, int k2, int n2, double *out) {
    for (int j = 0; j < n2; j++)
        out[j] = 0.0;
    for (int i = 0; i < a->n; i++) {
        if (k2 >= a->k) {
            long long j = (long long)i >> (k2 - a->k);
            if (j < n2)
                out[j] += a->pdf[i];
        } else {
            long long g = 1LL << (a->k - k2);
            for (long long j = (long long)i * g; j < ((long long)i + 1) * g; j++)
                if (j < n2)
                    out[j] += a->pdf[i] / (double)g;
        }
    }
}

/*
 * The sequence of two spread operands by the contract of dq_sequence: the direct
 * convolution c (na + nb − 1 values), each c[s] shared equally by bins s and s + 1.
 * out holds na + nb values.
 */
static inline void ref_seq_spread(const double *a, int na, const double *b, int nb, double *out) {
    for (int s = 0; s < na + nb; s++)
        out[s] = 0.0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            out[i + j] += 0.5 * a[i] * b[j];
            out[i + j + 1] += 0.5 * a[i] * b[j];
        }
}

/* The bin count dq_rebin must produce: ceil(n / 2^(k2 − k)). */
static inline int ref_rebin_n(int n, int k, int k2) {
    int d = k2 - k;
    return (int)(((long long)n + (1LL << d) - 1) >> d);
}

/* In-place prefix sum: pdf -> CDF at the right edges. */
static inline void ref_cumsum(double *v, int n) {
    for (int i = 1; i < n; i++)
        v[i] += v[i - 1];
}

/* max_i |a[i] − b[i]|. */
static inline double ref_maxdiff(const double *a, const double *b, int n) {
    double m = 0.0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (d > m || d != d)
            m = d != d ? INFINITY : d;
    }
    return m;
}

/* A ΔQ that must exist for the test to go on: CHECKs the constructor's return. */
#define MUST(call)                                                                                 \
    do {                                                                                           \
        int must_rc_ = (call);                                                                     \
        CHECK_MSG(must_rc_ == DQ_OK, "%s returned %d (%s)", #call, must_rc_, dq_last_error());     \
    } while (0)

#endif /* ENGINE_TEST_UTIL_H */
