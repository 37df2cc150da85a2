/*
 * dq_conv.h: raw convolution kernels behind dq_sequence, exposed for tests and the
 * engine benchmark. Arrays are plain masses; out must hold na + nb − 1 doubles.
 *
 * Three ways to the same numbers (agreeing within 1e-12 per bin for masses in [0, 1]):
 *   direct      O(na·nb) loop; fastest for small sizes.
 *   fft         FFTW r2c/c2r on a power-of-two size ≥ na + nb − 1, plans created once per
 *               size and reused (the engine's way above the crossover).
 *   fft_fresh   the same transform with plans created and destroyed on every call
 *               (FFTW_ESTIMATE, the ΔQ Oscilloscope's way): a baseline for benchmarks.
 * FFT results below 1e-15 are set to 0 (round-off leaves about ±1e-17 in empty bins).
 */
#ifndef DQ_CONV_H
#define DQ_CONV_H

#include <stddef.h>

/* Direct convolution. Returns DQ_OK or DQ_EINVAL (NULL array or size < 1). */
int dq_conv_direct(const double *a, int na, const double *b, int nb, double *out);

/* FFT convolution with cached plans. DQ_ENOMEM when a plan or buffer cannot be made. */
int dq_conv_fft(const double *a, int na, const double *b, int nb, double *out);

/* FFT convolution with a fresh plan per call (baseline). */
int dq_conv_fft_fresh(const double *a, int na, const double *b, int nb, double *out);

/*
 * n-way convolution in the frequency domain: every operand transformed once, the spectra
 * multiplied, one inverse transform. out must hold Σ len_i − (n − 1) doubles.
 */
int dq_conv_fft_n(const double *const *arrays, const int *lens, size_t n, double *out);

/* Chooses direct or cached-plan FFT by the crossover below. */
int dq_conv_auto(const double *a, int na, const double *b, int nb, double *out);

/*
 * The crossover: direct convolution is used when min(na, nb) ≤ this value or
 * na·nb ≤ its square. Measured with `make bench` (docs/PERFORMANCE.md).
 */
int dq_conv_crossover(void);

#endif /* DQ_CONV_H */
