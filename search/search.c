/*
 * search.c: the small, shared parts of search/: names of problems, verdicts and
 * strategies, default parameters, pooling of per-window statistics, and the inference
 * of a push-button diagnosis's problem kind. Attribution lives in search_attr.c, the
 * strategies in search_strategy.c.
 */
#include "dq_search.h"

#include <math.h>
#include <string.h>

#include "search_internal.h"

/* Adds one window's value x with weight n to a batch (see struct search_batch). */
static void batch_add(struct search_batch *b, double n, double x) {
    if (!(n > 0.0) || !isfinite(x)) {
        return;
    }
    if (b->windows == 0) {
        b->ref = x;
    }
    double d = x - b->ref;
    b->w += n;
    b->wd += n * d;
    b->w2 += n * n;
    b->w2d += n * n * d;
    b->w2d2 += n * n * d * d;
    b->s1 += d;
    b->s2 += d * d;
    if (b->windows > 0) {
        b->lag += d * b->prev;
        b->pair += d + b->prev;
        b->pairs++;
    }
    b->prev = d;
    b->windows++;
}

/* Lag-1 autocorrelation of the windows' values, clamped to [0, 0.8]; 0 with fewer than
 * four windows. */
static double batch_autocorr(const struct search_batch *b) {
    if (b->windows < 4 || b->pairs == 0) {
        return 0.0;
    }
    double w = (double)b->windows, m = b->s1 / w;
    double var = b->s2 / w - m * m;
    if (!(var > 0.0)) {
        return 0.0;
    }
    double cov = (b->lag - m * b->pair) / (double)b->pairs + m * m;
    double r = cov / var;
    return r < 0.0 ? 0.0 : (r > 0.8 ? 0.8 : r);
}

static const char *const problem_names[] = {"latency", "qta",        "variance",
                                            "lost",    "divergence", "shape"};
static const char *const verdict_names[] = {"need_samples", "descend", "localized", "diffuse",
                                            "inconclusive", "healthy", "overload"};
static const char *const mode_names[] = {"observe", "problem", "contributor", "overload"};
static const char *const strategy_names[] = {"children", "bisect"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *search_problem_name(enum search_problem p) {
    return (unsigned)p < COUNT_OF(problem_names) ? problem_names[p] : "?";
}

int search_problem_parse(const char *name, enum search_problem *p) {
    if (!name || !p) {
        return dq_fail(DQ_EINVAL, "missing problem name or output");
    }
    for (size_t i = 0; i < COUNT_OF(problem_names); i++) {
        if (strcmp(name, problem_names[i]) == 0) {
            *p = (enum search_problem)i;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_EINVAL,
                   "unknown problem kind \"%.64s\" (latency, qta, variance, lost, divergence, "
                   "shape)",
                   name);
}

const char *search_verdict_name(enum search_verdict v) {
    return (unsigned)v < COUNT_OF(verdict_names) ? verdict_names[v] : "?";
}

const char *search_mode_name(enum search_mode m) {
    return (unsigned)m < COUNT_OF(mode_names) ? mode_names[m] : "?";
}

const char *search_strategy_name(enum search_strategy_id s) {
    return (unsigned)s < COUNT_OF(strategy_names) ? strategy_names[s] : "?";
}

int search_strategy_parse(const char *name, enum search_strategy_id *s) {
    if (!name || !s) {
        return dq_fail(DQ_EINVAL, "missing strategy name or output");
    }
    for (size_t i = 0; i < COUNT_OF(strategy_names); i++) {
        if (strcmp(name, strategy_names[i]) == 0) {
            *s = (enum search_strategy_id)i;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_EINVAL, "unknown strategy \"%.64s\" (children, bisect)", name);
}

void search_params_init(struct search_params *p) {
    if (!p) {
        return;
    }
    p->min_instances = 30;
    p->min_windows = 2;
    p->z = 1.96;
    p->alpha = 0.01;
    p->lost_threshold = 0.01;
    p->cv_threshold = 0.5;
    p->bisect_min_children = 4;
    p->diffuse_min_windows = 4;
    p->min_lead = 0.10;
}

void search_stats_init(struct search_stats *s) {
    if (!s) {
        return;
    }
    memset(s, 0, sizeof *s);
    s->mean = NAN;
    s->variance = NAN;
    s->ks_d = NAN;
    s->ks_p = NAN;
    s->qta_hazard = NAN;
    s->base_mean = NAN;
    s->base_variance = NAN;
    s->base_lost = NAN;
}

int search_stats_add_window(struct search_stats *s, uint64_t ok, uint64_t fa, uint64_t to,
                            double mean, double variance) {
    if (!s) {
        return dq_fail(DQ_EINVAL, "missing statistics");
    }
    if (ok > 0 &&
        (!(mean >= 0.0) || !(variance >= 0.0) || !isfinite(mean) || !isfinite(variance))) {
        return dq_fail(DQ_EINVAL, "window moments must be finite and ≥ 0 (mean %g, var %g)", mean,
                       variance);
    }
    if (!s->present) {
        /* Counts and moments start afresh; the optional fields the caller set stay. */
        s->n_ok = s->n_fa = s->n_to = 0;
        s->windows = 0;
        s->mean = NAN;
        s->variance = NAN;
        memset(&s->b_mean, 0, sizeof s->b_mean);
        memset(&s->b_lost, 0, sizeof s->b_lost);
        memset(&s->b_var, 0, sizeof s->b_var);
        s->present = 1;
    }
    if (ok > 0) {
        if (s->n_ok == 0) {
            s->mean = mean;
            s->variance = variance;
        } else {
            /* Pool the two groups' (n, mean, n·var) exactly (Chan, Golub, LeVeque). */
            double na = (double)s->n_ok, nb = (double)ok, n = na + nb;
            double delta = mean - s->mean;
            double m2 = s->variance * na + variance * nb + delta * delta * na * nb / n;
            s->mean += delta * nb / n;
            s->variance = m2 / n;
        }
    }
    if (ok > 0) {
        batch_add(&s->b_mean, (double)ok, mean);
        batch_add(&s->b_var, (double)ok, variance);
    }
    if (ok + fa + to > 0) {
        batch_add(&s->b_lost, (double)(ok + fa + to), (double)(fa + to) / (double)(ok + fa + to));
    }
    s->n_ok += ok;
    s->n_fa += fa;
    s->n_to += to;
    s->windows++;
    return DQ_OK;
}

/* Batch-means variance of the weighted mean of the windows' values; 0 with fewer than two
 * windows. */
static double batch_var(const struct search_batch *b) {
    if (b->windows < 2 || !(b->w > 0.0)) {
        return 0.0;
    }
    double d = b->wd / b->w;                                /* the weighted mean, minus ref */
    double ss = b->w2d2 - 2.0 * d * b->w2d + d * d * b->w2; /* Σ n_i²(x_i − x̄)² */
    if (!(ss > 0.0)) {
        return 0.0;
    }
    double w = (double)b->windows;
    return w / (w - 1.0) * ss / (b->w * b->w);
}

/*
 * A batch-means standard error rests on the windows' own scatter, which is itself an
 * estimate with windows − 1 degrees of freedom: intervals built on it widen as Student's
 * t widens the normal's (the ratio of their 97.5 % points: 6.5 with 2 windows, 1.6 with 4,
 * 1.1 with 20).
 */
static double t_factor(uint32_t windows) {
    static const double t975[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                  2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                  2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                  2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    uint32_t df = windows > 0 ? windows - 1 : 0;
    if (df == 0) {
        return 1.0;
    }
    double t = df < sizeof t975 / sizeof t975[0] ? t975[df] : 1.96 + 2.4 / (double)df;
    return t / 1.96;
}

/* The 95 % point of χ² with df degrees of freedom, over df. */
static double chi2_95_per_df(uint32_t df) {
    static const double q[] = {0,     3.841, 5.991, 7.815, 9.488, 11.07, 12.59, 14.07,
                               15.51, 16.92, 18.31, 19.68, 21.03, 22.36, 23.68, 25.00,
                               26.30, 27.59, 28.87, 30.14, 31.41, 32.67, 33.92, 35.17,
                               36.42, 37.65, 38.89, 40.11, 41.34, 42.56, 43.77};
    double x = df < sizeof q / sizeof q[0] ? q[df] : df + 1.645 * sqrt(2.0 * df);
    return df > 0 ? x / (double)df : INFINITY;
}

/*
 * The standard error: the independent-instances value, unless the windows scatter
 * significantly more than it allows (their batch-means variance beyond the 95 % point of
 * what independent instances would give): then the batch-means value, widened by t.
 */
static double se_of(double iid_var, const struct search_batch *b) {
    double r = batch_autocorr(b);
    double bv = batch_var(b) * (1.0 + r) / (1.0 - r);
    iid_var = iid_var > 0.0 ? iid_var : 0.0;
    uint32_t df = b->windows > 0 ? b->windows - 1 : 0;
    if (df > 0 && bv > iid_var * chi2_95_per_df(df)) {
        return sqrt(bv) * t_factor(b->windows);
    }
    return sqrt(iid_var);
}

double search_stats_mean_se(const struct search_stats *s) {
    if (!s || !s->present || s->n_ok == 0) {
        return 0.0;
    }
    double iid = s->variance > 0.0 ? s->variance / (double)s->n_ok : 0.0;
    return se_of(iid, &s->b_mean);
}

double search_stats_lost_se(const struct search_stats *s) {
    uint64_t n = search_stats_instances(s);
    if (n == 0) {
        return 0.0;
    }
    double p = search_stats_lost(s);
    return se_of(p * (1.0 - p) / (double)n, &s->b_lost);
}

double search_stats_variance_se(const struct search_stats *s, double iid_se) {
    if (!s) {
        return iid_se;
    }
    return se_of(iid_se * iid_se, &s->b_var);
}

double search_series_se(const double *x, int n) {
    if (!x || n < 2) {
        return 0.0;
    }
    double m = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) {
        m += x[i];
    }
    m /= n;
    for (int i = 0; i < n; i++) {
        ss += (x[i] - m) * (x[i] - m);
    }
    return ss > 0.0 ? sqrt(ss / (n - 1.0) / n) * t_factor((uint32_t)n) : 0.0;
}

uint64_t search_stats_instances(const struct search_stats *s) {
    return s ? s->n_ok + s->n_fa + s->n_to : 0;
}

double search_stats_lost(const struct search_stats *s) {
    uint64_t n = search_stats_instances(s);
    return n > 0 ? (double)(s->n_fa + s->n_to) / (double)n : 0.0;
}

enum search_problem search_infer_problem(const struct search_stats *x,
                                         const struct search_params *p) {
    struct search_params defaults;
    if (!p) {
        search_params_init(&defaults);
        p = &defaults;
    }
    if (!x || !x->present) {
        return SEARCH_LATENCY;
    }
    if (x->qta_hazard > 0.0) {
        return SEARCH_QTA;
    }
    if (search_stats_instances(x) > 0 && search_stats_lost(x) > p->lost_threshold) {
        return SEARCH_LOST;
    }
    if (x->n_ok > 0 && x->mean > 0.0 && x->variance >= 0.0 &&
        sqrt(x->variance) / x->mean > p->cv_threshold) {
        return SEARCH_VARIANCE;
    }
    if (x->ks_p < p->alpha) {
        return SEARCH_DIVERGENCE;
    }
    return SEARCH_LATENCY;
}
