/*
 * dq.h: the ΔQ type and its algebra (docs/engine.md).
 *
 * A ΔQ is an improper CDF of a delay: the probability of completing by time t, whose
 * limit is the tangible mass 1 − lost. We hold it binned on a grid of width
 * w = Δt_base·2^k (Δt_base = 1 ms, k ∈ [−10, 10]) with N ∈ [1, 4096] bins.
 *
 * The convention (docs/engine.md, "The CDF convention"; every output follows it):
 *
 *   pdf[i]  mass of the delays in bin i = (i·w, (i+1)·w] (bin 0 also holds delay 0).
 *   cdf[i]  Σ_{j≤i} pdf[j], the CDF at the bin's RIGHT edge: P(delay ≤ (i+1)·w). Exact
 *           for observed ΔQs, the constructors, and first-to-finish, all-to-finish and
 *           choice of those; for a sequence it is a second-order estimate (each operand's
 *           mass taken as spread evenly over its bin), and cdf[i − lag] (0 below index 0,
 *           `zero` at index −1) is a guaranteed lower bound: QTAs are checked on it, so a
 *           QTA never passes on rounding. Between edges the CDF is read at the last edge
 *           at or before t (dq_cdf_at): never ahead of time.
 *   horizon H = N·w, the right edge of the last bin (the caller's dMax). A delay ≤ H is in
 *           a bin; beyond H it is lost (it would have timed out). No bin straddles H.
 *   lost    1 − Σ pdf: failures (`failed`) and delays past the horizon. Observed ΔQs also
 *           keep the counts of ok / failed / timed-out instances they were built from.
 *
 * Re-expression to a coarser grid (widths are powers of two apart) sums whole bins and
 * is exact; to a finer one a bin's mass is spread evenly over the finer bins it covers
 * (a point mass stays at its edge). Sequence keeps the estimate's mean exact and the
 * lost mass at the horizon independent of how a chain is grouped.
 *
 * Memory: every ΔQ is heap-allocated by a constructor or an operator and released with
 * dq_destroy (which accepts NULL). Operators never modify their operands. On failure an
 * operator returns a negative dq_error code, leaves *out untouched and sets
 * dq_last_error(); nothing aborts on bad input. A NULL output pointer is DQ_EINVAL.
 *
 * Mixed widths: every operator brings its operands to the coarsest width the same way
 * (dq_rebin: each keeps its own horizon, rounded up to whole coarse bins); n-way
 * operators then extend the shorter ones with a flat CDF up to the longest horizon.
 *
 * Thread safety: the FFT plan cache is shared; use the engine from one thread at a time
 * (dqd runs it on its loop thread).
 */
#ifndef DQ_H
#define DQ_H

#include <stddef.h>
#include <stdint.h>

#include "dq_error.h"

#define DQ_BASE_WIDTH 0.001 /* Δt_base in seconds */
#define DQ_MIN_K (-10)
#define DQ_MAX_K 10
#define DQ_MIN_BINS 1
#define DQ_MAX_BINS 4096
#define DQ_QTA_MAX_POINTS 16
#define DQ_EPS 1e-9 /* tolerance for masses and weights */

struct dq {
    int k;          /* width exponent: width = DQ_BASE_WIDTH · 2^k */
    int n;          /* number of bins */
    double width;   /* bin width in seconds (derived from k, kept for convenience) */
    double *pdf;    /* n masses, each in [0, 1], Σ ≤ 1 */
    uint64_t n_ok;  /* observed: successful instances (0 for calculated ΔQs) */
    uint64_t n_fa;  /* observed: failed instances */
    uint64_t n_to;  /* observed: timed-out instances */
    uint64_t n_out; /* observed: successes beyond the horizon (counted as lost) */
    int lag;        /* bins: cdf[i − lag] is a lower bound of P(delay ≤ (i+1)·w); 0 when
                       cdf[i] is exact (observed ΔQs, constructors) */
    int atoms;      /* 1: every bin's mass is a point mass at the bin's right edge (waits
                       and what is built from them only); 0: spread over the bin */
    double zero;    /* mass at delay exactly 0 (included in pdf[0]) */
    double failed;  /* the part of the lost mass that never completes (failures, `never`);
                       the rest, lost − failed, is delay past the horizon */
};

/* ---- grid -------------------------------------------------------------------- */

/* Bin width in seconds for exponent k (no range check). */
double dq_width_of(int k);

/* Validates (k, n): DQ_OK, or DQ_ERANGE with a message. */
int dq_check_grid(int k, int n);

/*
 * Finds the grid for a deadline: the smallest k in range such that dmax / width(k)
 * ≤ DQ_MAX_BINS, and n = ceil(dmax / width). Returns DQ_ERANGE when dmax ≤ 0, is NaN,
 * or exceeds DQ_MAX_BINS · width(DQ_MAX_K).
 */
int dq_grid_for(double dmax, int *k, int *n);

/* ---- constructors (each returns a new ΔQ in *out) -------------------------------- */

/* All mass lost (and failed): the ΔQ of an outcome that never completes. */
int dq_never(int k, int n, struct dq **out);

/* Point mass at delay t ≥ 0 (lost when t > horizon), in the bin holding t: a point mass
 * at its right edge when t is a multiple of the width (then sequences of waits are exact),
 * otherwise a mass somewhere in that bin (spread, as a measured one); wait(0) is the atom
 * at 0, the identity of sequence. */
int dq_wait(int k, int n, double t, struct dq **out);

/* Uniform on [a, b], 0 ≤ a ≤ b (a == b is a wait): each bin gets the exact probability
 * of its interval. Mass beyond the horizon is lost (past the horizon, not failed). */
int dq_uniform(int k, int n, double a, double b, struct dq **out);

/* Exponential with rate > 0 (per second). Mass beyond the horizon is lost. */
int dq_exponential(int k, int n, double rate, struct dq **out);

/*
 * From samples: `durations` are successful delays in seconds (each ≥ 0 and finite;
 * NaN or negative is DQ_EINVAL), `n_failed` and `n_timeout` further instances that were
 * lost. Masses are counts / total; a duration t is in the bin (i·w, (i+1)·w] holding it
 * (0 in bin 0). Successes beyond the horizon are lost and counted in n_out. `failed` is
 * n_failed / total (time-outs and n_out are past the horizon). total == 0 is DQ_EINVAL.
 */
int dq_from_samples(int k, int n, const double *durations, size_t count, uint64_t n_failed,
                    uint64_t n_timeout, struct dq **out);

/*
 * From a histogram of counts per bin (as dqd's window builder keeps them):
 * counts[i] successes in bin i, plus failed, timed-out and beyond-horizon counts.
 */
int dq_from_counts(int k, int n, const uint64_t *counts, uint64_t n_failed, uint64_t n_timeout,
                   uint64_t n_out, struct dq **out);

/* From masses: pdf[i] ≥ 0, Σ ≤ 1 + DQ_EPS, each spread over its bin. Copies the array.
 * The missing mass counts as failed. */
int dq_from_pdf(int k, int n, const double *pdf, struct dq **out);

/*
 * From point masses at the grid times j·w, j = 0 … n (n + 1 values, the way the DeltaQ
 * library and a QTA write a ΔQ): mass[0] is the atom at 0 (in bin 0), mass[j] a point mass
 * at the right edge of bin j − 1. Each ≥ 0, Σ ≤ 1 + DQ_EPS; the missing mass is failed.
 */
int dq_from_points(int k, int n, const double *mass, struct dq **out);

/* A deep copy. */
int dq_clone(const struct dq *a, struct dq **out);

/* Releases a ΔQ; NULL is a no-op. */
void dq_destroy(struct dq *a);

/* ---- QTA ------------------------------------------------------------------------ */

/*
 * A quantitative timeliness agreement: the step function "P(delay ≤ t[j]) ≥ p[j]" for
 * j = 0 … n−1, with t strictly increasing, p non-decreasing in (0, 1], plus the largest
 * acceptable lost mass.
 */
struct dq_qta {
    int n;
    double t[DQ_QTA_MAX_POINTS];
    double p[DQ_QTA_MAX_POINTS];
    double max_lost;
};

/* Validates a QTA (ranges, ordering, p[n−1] ≤ 1 − max_lost is not required). */
int dq_qta_check(const struct dq_qta *q);

/* The QTA's own ΔQ: masses p[0] at t[0], p[j]−p[j−1] at t[j] in the bins holding them
 * (point masses when every t[j] is an edge, as dq_wait), the rest lost. */
int dq_from_qta(int k, int n, const struct dq_qta *q, struct dq **out);

/*
 * Checks a ΔQ against a QTA, on the lower bound of its CDF (dq_cdf_bound_at, and
 * dq_lost_bound for the lost mass), so that a QTA never passes on rounding: margin = the
 * smallest of F_lo(t[j]) − p[j] over the points and of max_lost − lost_hi (|margin| ≤
 * DQ_EPS counts as 0: round-off never makes a hazard); slack = max(margin, 0); hazard =
 * max(−margin, 0).
 * worst = index of the point with the smallest margin, or −1 when the lost mass is.
 */
struct dq_qta_result {
    int ok; /* 1 when margin ≥ 0 */
    double margin;
    double slack;
    double hazard;
    int worst;
};
int dq_qta_eval(const struct dq *a, const struct dq_qta *q, struct dq_qta_result *res);

/* ---- operators ----------------------------------------------------------------------- */

/*
 * Sequence (convolution): the delay of a then b. Operands of different widths are
 * rebinned to the coarser one. The result has N = na + nb bins: its horizon is the sum of
 * the operands' horizons; when that exceeds DQ_MAX_BINS the width doubles until it fits
 * (whole bins summed; mass past the widest grid is lost). Two spread masses in bins i and
 * j share bins i + j and i + j + 1 equally (the lag grows by one); a point mass at the
 * right edge of bin i moves the other operand by i + 1 bins exactly; the atom at 0 is the
 * identity. Lost mass is 1 − Π(1 − lost_i); failed 1 − Π(1 − failed_i). Direct
 * convolution below the measured crossover, FFTW r2c/c2r with cached plans above.
 */
int dq_sequence(const struct dq *a, const struct dq *b, struct dq **out);

/*
 * Sequence of n ≥ 1 operands in one go: all spectra multiplied, one inverse transform.
 * Same result as folding dq_sequence in any grouping (within 1e-9) as long as no partial
 * result outgrows DQ_MAX_BINS.
 */
int dq_sequence_n(const struct dq *const *ops, size_t n, struct dq **out);

/*
 * The sequence of n ≥ 1 operands with mass past `horizon` seconds lost (INFINITY: no
 * cut): on the operands' common width with ceil(horizon / w) bins when that fits in
 * DQ_MAX_BINS, otherwise at the first coarser width where it does. Cutting commutes with
 * sequence (mass only moves later), so the result below the horizon, and the lost mass at
 * the horizon, do not depend on how a chain is grouped or cut on the way. DQ_EINVAL for a
 * horizon ≤ 0 or NaN.
 */
int dq_sequence_cut(const struct dq *const *ops, size_t n, double horizon, struct dq **out);

/* First-to-finish of n ≥ 1 branches: F = 1 − Π(1 − F_i) at every right edge, on the
 * coarsest width and the largest horizon (exact at the edges for exact operands; the
 * lag is the largest of the operands'). Lost mass is Π lost_i. */
int dq_first_to_finish(const struct dq *const *ops, size_t n, struct dq **out);

/* All-to-finish of n ≥ 1 branches: F = Π F_i. Lost mass is 1 − Π(1 − lost_i). */
int dq_all_to_finish(const struct dq *const *ops, size_t n, struct dq **out);

/* Probabilistic choice: F = Σ w_i F_i; weights in [0, 1] summing to 1 within DQ_EPS. */
int dq_choice(const struct dq *const *ops, const double *weights, size_t n, struct dq **out);

/* Rebins to a coarser (or equal) width exponent k ≥ a->k by summing whole bins (exact);
 * keeps the horizon when it can (N' = ceil(N / 2^(k − a->k))). */
int dq_rebin(const struct dq *a, int k, struct dq **out);

/*
 * Re-expresses a at a receiving probe's grid (k, n), coarser or finer: coarser sums whole
 * bins (exact); finer spreads each bin's mass evenly over the finer bins it covers (a
 * point mass stays at its edge, the atom at 0 in bin 0; the lag grows to cover the
 * spreading); mass beyond the new horizon is lost.
 */
int dq_reexpress(const struct dq *a, int k, int n, struct dq **out);

/* ---- queries --------------------------------------------------------------------------- */

/* Horizon N·w in seconds. */
double dq_horizon(const struct dq *a);

/* Tangible mass Σ pdf, clamped to [0, 1]; within 1e−12 of 1 it is 1 (round-off). */
double dq_tangible(const struct dq *a);

/* Lost mass 1 − tangible. */
double dq_lost(const struct dq *a);

/* An upper bound of the lost mass at the horizon: 1 − cdf[N − 1 − lag] (= dq_lost when
 * the lag is 0). */
double dq_lost_bound(const struct dq *a);

/* The part of the lost mass that is delay past the horizon, not failure: lost − failed
 * (what a longer horizon would turn into late successes). */
double dq_past_horizon(const struct dq *a);

/* The index of the last bin holding mass (its right edge bounds the largest delay that
 * completed), −1 when none does or a is NULL. */
int dq_last_bin(const struct dq *a);

/* P(delay ≤ t) read at the last right edge at or before t: cdf[i] for the largest i with
 * (i+1)·w ≤ t, `zero` for 0 ≤ t < w, 0 for t < 0 (never ahead of time). */
double dq_cdf_at(const struct dq *a, double t);

/* The guaranteed lower bound of P(delay ≤ t): as dq_cdf_at, lag bins earlier. */
double dq_cdf_bound_at(const struct dq *a, double t);

/*
 * The p-quantile for p in (0, 1]: the smallest right edge (i+1)·w with cdf[i] ≥ p (0 when
 * the atom at 0 reaches p). Returns DQ_ENOTREACHED (and leaves *t) when p exceeds the
 * tangible mass.
 */
int dq_quantile(const struct dq *a, double p, double *t);

/* An upper bound of the true p-quantile: dq_quantile plus lag bins. */
int dq_quantile_bound(const struct dq *a, double p, double *t);

/* Moments of the delay conditioned on success (over the tangible mass): a spread bin's
 * mass at its middle (i+½)·w, a point mass at its edge, the atom at 0 at 0. */
struct dq_moments {
    double mass;     /* tangible mass the moments are conditioned on */
    double mean;     /* seconds */
    double variance; /* seconds² */
    double skewness; /* 0 when variance is 0 */
    double kurtosis; /* non-excess (3 for a normal); 0 when variance is 0 */
};
/* DQ_ENOTREACHED when the tangible mass is 0 (no success to condition on). */
int dq_moments(const struct dq *a, struct dq_moments *m);

enum dq_order {
    DQ_CMP_EQUAL = 0,        /* same CDF within tolerance */
    DQ_CMP_BETTER = 1,       /* a ≤ b: F_a ≥ F_b everywhere, strictly somewhere */
    DQ_CMP_WORSE = 2,        /* a ≥ b: F_a ≤ F_b everywhere, strictly somewhere */
    DQ_CMP_INCOMPARABLE = 3, /* the CDFs cross */
};
/* Compares CDFs at every right edge of the common (coarser) grid, and the tangible mass,
 * with tolerance tol ≥ 0. */
int dq_compare(const struct dq *a, const struct dq *b, double tol, enum dq_order *order);

/* ---- distances -------------------------------------------------------------------- */

/*
 * Kolmogorov–Smirnov: D = sup |F_a − F_b| over the common grid and at infinity
 * (tangible masses); a ΔQ with a lag (a calculated one) counts as its band cdf[i ± lag],
 * so D is the distance to that band (0 when the other CDF lies within it). Significance: two-sample
 * when na, nb > 0 (effective size na·nb/(na+nb)), one-sample against b as the reference when nb ==
 * 0. p_value is the asymptotic Kolmogorov tail with Stephens' small-sample correction; *p_value = 1
 * when na == 0.
 */
int dq_ks(const struct dq *a, const struct dq *b, uint64_t na, uint64_t nb, double *d,
          double *p_value);

/* Wasserstein-1 ∫|F_a − F_b| dt over [0, H] with the step CDFs of dq_cdf_at, lost mass
 * placed at the common horizon H. */
int dq_wasserstein1(const struct dq *a, const struct dq *b, double *w1);

/*
 * Confidence band over the last W ΔQs (all on one grid): per bin, the mean CDF and
 * mean ± z·σ/√W clamped to [0, 1]. Arrays of n values, owned by the band.
 */
struct dq_band {
    int k;
    int n;
    double *mean;
    double *lo;
    double *hi;
};
int dq_band_compute(const struct dq *const *ring, size_t w, double z, struct dq_band **out);
void dq_band_destroy(struct dq_band *b);

/* ---- moment algebra ----------------------------------------------------------------- */

/*
 * Infers the mean and variance of the unobserved part U of a sequence
 * parent = o_1 -> … -> o_m -> U from the parent's and the observed parts' moments,
 * assuming independence (means and variances add). A negative inferred variance is
 * reported as 0 with *covariance_hint set to the (negative) residual: a sign that the
 * parts are not independent. A negative inferred mean (observed parts slower than the
 * parent, by sampling noise) is reported as 0.
 */
int dq_infer_unobserved(const struct dq_moments *parent, const struct dq_moments *observed,
                        size_t m, double *mean, double *variance, double *covariance_hint);

/* ---- default grids ------------------------------------------------------------------- */

/*
 * What a grid must resolve about a delay, for choosing one before anything is computed
 * (dqctl model; docs/engine.md, "Default grids"): built for the leaves of a model and
 * combined along its operators.
 */
struct dq_hint {
    double lo, hi;    /* the tangible delay lies in [lo, hi] (seconds); for a tail, hi is
                         where at most about 1e-4 of the mass is still to come */
    double mean, var; /* of the tangible delay (seconds, seconds²) */
    double fmax;      /* a bound (or, for sums, an estimate) of its density, per second;
                         0 when it has none (point masses only, or unknown) */
    int qk;           /* its point masses sit on the edges of width 2^qk ms; DQ_MAX_K + 1
                         when it has none, DQ_MIN_K − 1 when they fit no grid */
    double failed;    /* failed mass */
    double res;       /* the finest width that means anything (a measured ΔQ's bins), 0 */
};

/* Leaves: wait(t), uniform(a, b), exponential(rate), never, a ΔQ already binned. */
void dq_hint_wait(double t, struct dq_hint *h);
void dq_hint_uniform(double a, double b, struct dq_hint *h);
void dq_hint_exponential(double rate, struct dq_hint *h);
void dq_hint_never(struct dq_hint *h);
void dq_hint_dq(const struct dq *a, struct dq_hint *h);

/*
 * Operators. Sequence: bounds and moments add, the density is at most the smallest of the
 * continuous operands' (and about 1.5/(σ·√(2π)) for a sum of several), hi at most
 * mean + 8σ. First-to-finish: hi is the smallest hi of the branches that never fail (the
 * race is over by then), the density at most the sum. All-to-finish: the largest hi, the
 * density at most the sum. Choice: the mixture (weights need not be normalised). Then
 * scale by k ≥ 0 and shift by s (clamped at 0).
 */
void dq_hint_sequence(const struct dq_hint *ops, size_t n, struct dq_hint *out);
void dq_hint_first(const struct dq_hint *ops, size_t n, struct dq_hint *out);
void dq_hint_all(const struct dq_hint *ops, size_t n, struct dq_hint *out);
void dq_hint_choice(const struct dq_hint *ops, const double *weights, size_t n,
                    struct dq_hint *out);
void dq_hint_scale(struct dq_hint *h, double k);
void dq_hint_shift(struct dq_hint *h, double s);

/*
 * The default grid for a model whose reported delays are described by h (the hints of
 * every reported node merged by dq_hint_all): the width fine enough that the CDF rises by
 * at most 0.004 within a bin (fmax·w ≤ 0.004), with at least 1024 bins over [0, hi], on
 * the grid of its point masses when that is affordable, and no finer than h->res; the
 * bins to reach hi. When that takes more than DQ_MAX_BINS: the width that reaches hi in
 * DQ_MAX_BINS if it still keeps fmax·w ≤ 0.008, else the widest that does, with
 * DQ_MAX_BINS bins and the tail past that horizon left as lost past the horizon
 * (*covered = 0). bins > 0 fixes N (the width is then the finest reaching hi). DQ_EINVAL
 * for a NULL argument.
 */
int dq_grid_choose(const struct dq_hint *h, int bins, int *k, int *n, int *covered);

/* ---- FFT plans ------------------------------------------------------------------------ */

/* Releases every cached FFTW plan and scratch buffer (call at shutdown; later operators
 * re-create what they need). */
void dq_engine_cleanup(void);

/* ---- durations written by people ------------------------------------------------------ */

/*
 * Parses a duration: a decimal number (digits with at most one point, an optional exponent;
 * no hex, inf or nan) and an optional unit right after it: ns, us (or µs), ms, s, m or min.
 * A bare number is in units of bare_unit_s seconds (1e-3 where a bare number means
 * milliseconds, 1 where it means seconds). A sign is accepted in front; a negative result
 * only when allow_negative. Returns DQ_OK with *out_s in seconds, or DQ_EINVAL with a
 * message naming what is wrong (*out_s untouched). len bytes of s are read, no NUL needed.
 */
int dq_parse_duration(const char *s, size_t len, double bare_unit_s, int allow_negative,
                      double *out_s);

/* ---- durations for people ------------------------------------------------------------- */

#define DQ_DURATION_TEXT 48 /* room for any text of dq_format_duration and _pm */

/*
 * The one style every output of dqd and dqctl writes a duration in: a number, a space and
 * a unit (ns, µs, ms or s): "30.6 µs", "250 ms", "1024 ms", "1.5 s". The unit is the
 * largest in which the value is at least 1, except that a whole number of milliseconds
 * below 10 s that three digits of seconds would round stays in milliseconds (a dMax of
 * 1024 ms is "1024 ms", not "1.02 s"). Three
 * significant digits, never fewer digits than the integer part has and never an exponent
 * (dq_format_number). 0 is "0 ms"; NaN and ±inf are "-". Writes at most cap bytes (cut
 * there, NUL-terminated when cap > 0) and returns buf.
 */
const char *dq_format_duration(double s, char *buf, size_t cap);

/* The same style with `sig` significant digits (1 … 15) instead of three, for a result
 * whose digits matter (dqctl model's quantiles: "3.554 s", "37.0326 ms"); a whole number of
 * milliseconds stays in them only when sig digits of seconds would round it. */
const char *dq_format_duration_sig(double s, int sig, char *buf, size_t cap);

/*
 * A duration with its uncertainty, "30.6 µs ± 1.2 µs", "33.3 ms ± 0.68 ms": the value as
 * dq_format_duration writes it, the half width hw in the value's unit with two significant
 * digits, or in its own unit when it is under a hundredth of the value's ("2.5 s ± 40 µs").
 * A NaN hw writes the value alone. Returns buf.
 */
const char *dq_format_duration_pm(double s, double hw, char *buf, size_t cap);

/*
 * The unit dq_format_duration writes s in ("ns", "µs", "ms", "s") and the factor from
 * seconds to it (1e9, 1e6, 1e3, 1): for a sentence whose numbers share one unit.
 */
const char *dq_duration_unit(double s, double *factor);

/*
 * A number people read, never with an exponent: `sig` significant digits (1 … 15), but
 * every digit of the integer part (1234.56 with 3 → "1235"), trailing zeros after the
 * point dropped ("2.5", "10"); a magnitude under 1e-12 is "0". Returns buf.
 */
const char *dq_format_number(double v, int sig, char *buf, size_t cap);

#endif /* DQ_H */
