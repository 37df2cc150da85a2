/*
 * dq_conv.c: convolution kernels for the sequence operator.
 *
 * Workload: dqd convolves ΔQs of up to 4096 bins at every window close, tens to
 * hundreds of times per second. FFTW's planner is the expensive part of a small
 * transform, so plans are made once per power-of-two size and kept for the life of the
 * process (FFTW_ESTIMATE, so results do not depend on timing measurements and are
 * reproducible run to run); buffers are made once with the plans and reused through
 * FFTW's new-array execute functions. Direct convolution wins below a crossover size
 * measured by the engine benchmark; operands are first trimmed to their non-zero
 * support, so a wait (one non-zero bin) always goes the direct way.
 */
#include "dq_conv.h"

#include <fftw3.h>
#include <string.h>

#include "dq_error.h"
#include "dq_internal.h"

/* Measured with bench_engine (docs/PERFORMANCE.md): below this support size direct wins. */
#define CONV_CROSSOVER 32
#define CONV_MAX_LOG2 24
/* FFT round-off leaves about ±1e−17 in bins whose exact value is 0; values below this
 * floor are taken as 0 so that empty bins stay empty (the mass given up is < 1e−11). */
#define FFT_NOISE 1e-15
#ifndef PLAN_FLAGS
#define PLAN_FLAGS FFTW_ESTIMATE
#endif /* transform sizes up to 2^24 points */

struct conv_plan {
    int size;           /* transform length m (power of two); 0 when not made yet */
    double *in;         /* m reals: forward input; entries past `dirty` are zero */
    double *real;       /* m reals: inverse output */
    int dirty;          /* in[dirty … m−1] are known to be zero */
    fftw_complex *spec; /* m/2 + 1 complex */
    fftw_complex *acc;  /* m/2 + 1 complex: the running product of spectra */
    fftw_plan fwd;
    fftw_plan inv;
};

static struct conv_plan plans[CONV_MAX_LOG2 + 1];

static int log2_ceil(long n) {
    int l = 0;
    while ((1L << l) < n) {
        l++;
    }
    return l;
}

/* Frees what a (possibly half-made) plan entry holds and empties it. */
static void plan_release(struct conv_plan *p) {
    if (p->fwd) {
        fftw_destroy_plan(p->fwd);
    }
    if (p->inv) {
        fftw_destroy_plan(p->inv);
    }
    fftw_free(p->in);
    fftw_free(p->real);
    fftw_free(p->spec);
    fftw_free(p->acc);
    memset(p, 0, sizeof *p);
}

static struct conv_plan *plan_get(long len) {
    int l = log2_ceil(len);
    if (l > CONV_MAX_LOG2) {
        return NULL;
    }
    struct conv_plan *p = &plans[l];
    if (p->size) {
        return p;
    }
    int m = 1 << l;
    p->in = fftw_alloc_real((size_t)m);
    p->real = fftw_alloc_real((size_t)m);
    p->spec = fftw_alloc_complex((size_t)m / 2 + 1);
    p->acc = fftw_alloc_complex((size_t)m / 2 + 1);
    if (!p->in || !p->real || !p->spec || !p->acc) {
        goto fail;
    }
    p->fwd = fftw_plan_dft_r2c_1d(m, p->in, p->spec, PLAN_FLAGS);
    p->inv = fftw_plan_dft_c2r_1d(m, p->spec, p->real, PLAN_FLAGS);
    if (!p->fwd || !p->inv) {
        goto fail;
    }
    memset(p->in, 0, sizeof(double) * (size_t)m);
    p->dirty = 0;
    p->size = m;
    return p;
fail:
    plan_release(p);
    return NULL;
}

void dq_conv__cleanup(void) {
    for (int l = 0; l <= CONV_MAX_LOG2; l++) {
        struct conv_plan *p = &plans[l];
        if (p->size) {
            plan_release(p);
        }
    }
    fftw_cleanup();
}

static int check_args(const double *a, int na, const double *b, int nb, const double *out) {
    if (!a || !b || !out || na < 1 || nb < 1) {
        return dq_fail(DQ_EINVAL, "convolution needs two non-empty arrays and an output");
    }
    return DQ_OK;
}

/* The direct loop; restrict lets the compiler vectorise the inner product. */
static void conv_direct(const double *restrict a, int na, const double *restrict b, int nb,
                        double *restrict out) {
    memset(out, 0, sizeof(double) * (size_t)(na + nb - 1));
    for (int i = 0; i < na; i++) {
        double ai = a[i];
        if (ai == 0.0) {
            continue;
        }
        double *restrict o = out + i;
        for (int j = 0; j < nb; j++) {
            o[j] += ai * b[j];
        }
    }
}

int dq_conv_direct(const double *a, int na, const double *b, int nb, double *out) {
    int rc = check_args(a, na, b, nb, out);
    if (rc) {
        return rc;
    }
    if ((out < a + na && a < out + na + nb - 1) || (out < b + nb && b < out + na + nb - 1)) {
        return dq_fail(DQ_EINVAL, "convolution output overlaps an operand");
    }
    conv_direct(a, na, b, nb, out);
    return DQ_OK;
}

/* Transforms x (len values, zero-padded to p->size) into spec. */
static void forward(struct conv_plan *p, const double *x, int len, fftw_complex *spec) {
    memcpy(p->in, x, sizeof(double) * (size_t)len);
    if (p->dirty > len) {
        memset(p->in + len, 0, sizeof(double) * (size_t)(p->dirty - len));
    }
    p->dirty = len;
    fftw_execute_dft_r2c(p->fwd, p->in, spec);
}

/* acc ·= spec · scale, element-wise complex product over m/2 + 1 bins. */
static void multiply_into(double *restrict acc, const double *restrict spec, int bins,
                          double scale) {
    for (int i = 0; i < 2 * bins; i += 2) {
        double re = acc[i] * spec[i] - acc[i + 1] * spec[i + 1];
        double im = acc[i] * spec[i + 1] + acc[i + 1] * spec[i];
        acc[i] = re * scale;
        acc[i + 1] = im * scale;
    }
}

/* Inverse-transforms p->acc into out[0 … len−1], clamped at 0 (the 1/m scale was applied
 * to the spectrum). */
static void inverse(struct conv_plan *p, double *out, int len) {
    fftw_execute_dft_c2r(p->inv, p->acc, p->real);
    for (int i = 0; i < len; i++) {
        double v = p->real[i];
        out[i] = v > FFT_NOISE ? v : 0.0;
    }
}

int dq_conv_fft(const double *a, int na, const double *b, int nb, double *out) {
    const double *arrays[2] = {a, b};
    int lens[2] = {na, nb};
    return dq_conv_fft_n(arrays, lens, 2, out);
}

int dq_conv_fft_n(const double *const *arrays, const int *lens, size_t n, double *out) {
    if (!arrays || !lens || !out || n < 1) {
        return dq_fail(DQ_EINVAL, "n-way convolution needs at least one operand");
    }
    long total = 1;
    for (size_t i = 0; i < n; i++) {
        if (!arrays[i] || lens[i] < 1) {
            return dq_fail(DQ_EINVAL, "operand %zu of the convolution is empty", i);
        }
        total += lens[i] - 1;
    }
    struct conv_plan *p = plan_get(total);
    if (!p) {
        return dq_fail(DQ_ENOMEM, "no FFT plan for a transform of %ld points", total);
    }
    int bins = p->size / 2 + 1;
    double scale = 1.0 / p->size;
    forward(p, arrays[0], lens[0], p->acc);
    if (n == 1) {
        double *acc = (double *)p->acc;
        for (int i = 0; i < 2 * bins; i++) {
            acc[i] *= scale;
        }
    }
    for (size_t i = 1; i < n; i++) {
        forward(p, arrays[i], lens[i], p->spec);
        multiply_into((double *)p->acc, (const double *)p->spec, bins, i + 1 == n ? scale : 1.0);
    }
    inverse(p, out, (int)total);
    return DQ_OK;
}

int dq_conv_fft_fresh(const double *a, int na, const double *b, int nb, double *out) {
    int rc = check_args(a, na, b, nb, out);
    if (rc) {
        return rc;
    }
    int len = na + nb - 1;
    int m = 1 << log2_ceil(len);
    int bins = m / 2 + 1;
    double *real = fftw_alloc_real((size_t)m);
    fftw_complex *sa = fftw_alloc_complex((size_t)bins);
    fftw_complex *sb = fftw_alloc_complex((size_t)bins);
    fftw_plan pa = NULL, pb = NULL, pi = NULL;
    rc = DQ_OK;
    if (!real || !sa || !sb) {
        rc = dq_fail(DQ_ENOMEM, "no memory for a %d-point transform", m);
        goto out;
    }
    pa = fftw_plan_dft_r2c_1d(m, real, sa, FFTW_ESTIMATE);
    pb = fftw_plan_dft_r2c_1d(m, real, sb, FFTW_ESTIMATE);
    pi = fftw_plan_dft_c2r_1d(m, sa, real, FFTW_ESTIMATE);
    if (!pa || !pb || !pi) {
        rc = dq_fail(DQ_ENOMEM, "no FFT plan for a %d-point transform", m);
        goto out;
    }
    memcpy(real, a, sizeof(double) * (size_t)na);
    memset(real + na, 0, sizeof(double) * (size_t)(m - na));
    fftw_execute(pa);
    memcpy(real, b, sizeof(double) * (size_t)nb);
    memset(real + nb, 0, sizeof(double) * (size_t)(m - nb));
    fftw_execute(pb);
    multiply_into((double *)sa, (const double *)sb, bins, 1.0);
    fftw_execute(pi);
    for (int i = 0; i < len; i++) {
        double v = real[i] / m;
        out[i] = v > FFT_NOISE ? v : 0.0;
    }
out:
    if (pa) {
        fftw_destroy_plan(pa);
    }
    if (pb) {
        fftw_destroy_plan(pb);
    }
    if (pi) {
        fftw_destroy_plan(pi);
    }
    fftw_free(real);
    fftw_free(sa);
    fftw_free(sb);
    return rc;
}

/* First and one-past-last non-zero index of x; lo == hi when x is all zero. */
static void support(const double *x, int n, int *lo, int *hi) {
    int l = 0, h = n;
    while (l < n && x[l] == 0.0) {
        l++;
    }
    while (h > l && x[h - 1] == 0.0) {
        h--;
    }
    *lo = l;
    *hi = h;
}

int dq_conv_auto(const double *a, int na, const double *b, int nb, double *out) {
    int rc = check_args(a, na, b, nb, out);
    if (rc) {
        return rc;
    }
    int alo, ahi, blo, bhi;
    support(a, na, &alo, &ahi);
    support(b, nb, &blo, &bhi);
    int len = na + nb - 1;
    if (alo == ahi || blo == bhi) {
        memset(out, 0, sizeof(double) * (size_t)len);
        return DQ_OK;
    }
    int sa = ahi - alo, sb = bhi - blo;
    int small = sa < sb ? sa : sb;
    /* The trimmed product lands at offset alo + blo; everything else stays zero. */
    memset(out, 0, sizeof(double) * (size_t)len);
    double *dst = out + alo + blo;
    if (small <= CONV_CROSSOVER || (long)sa * sb <= (long)CONV_CROSSOVER * CONV_CROSSOVER) {
        return dq_conv_direct(a + alo, sa, b + blo, sb, dst);
    }
    return dq_conv_fft(a + alo, sa, b + blo, sb, dst);
}

int dq_conv_crossover(void) {
    return CONV_CROSSOVER;
}
