/*
 * search_attr.c: attribution of a problem at node X to X's children (docs/architecture.md §4
 * step 4), the dominance rule, the verdicts and their plain-English reasons.
 *
 * Everything is computed from per-node statistics (counts, exact moments) and, where
 * the operator needs distributions (all/first-to-finish criticality, QTA quantiles),
 * from observed ΔQs. Uncertainties are 95 % normal-approximation half-widths: at the
 * 30-instance minimum they are rough, which is why dominance asks for non-overlapping
 * intervals rather than a bare ordering.
 */
#include "dq_search.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dq_strbuf.h"
#include "search_internal.h"

#define CRIT_NORMAL_STEPS 2048 /* grid of the normal approximation of criticality */

/* ---- small helpers ------------------------------------------------------------------- */

void search__append(char *buf, size_t cap, const char *fmt, ...) {
    struct dq_strbuf b;
    dq_strbuf_resume(&b, buf, cap);
    va_list ap;
    va_start(ap, fmt);
    dq_strbuf_vprintf(&b, fmt, ap);
    va_end(ap);
}

const char *search__time_unit(double scale, double *factor) {
    return dq_duration_unit(scale, factor);
}

void search__fmt_pm(double v, double hw, double factor, const char *unit, const char *sq, char *buf,
                    size_t cap) {
    char a[48], b[48];
    dq_format_number(v * factor, 3, a, sizeof a);
    if (isnan(hw)) {
        snprintf(buf, cap, "%s %s%s", a, unit, sq);
        return;
    }
    dq_format_number(hw * factor, 2, b, sizeof b);
    snprintf(buf, cap, "%s %s%s ± %s %s%s", a, unit, sq, b, unit, sq);
}

const char *search__dur(double s, char *buf, size_t cap) {
    return dq_format_duration(s, buf, cap);
}

void search__child_name(const struct search_input *in, size_t i, char *buf, size_t cap) {
    const char *name = in->children[i].name;
    if (name && name[0]) {
        snprintf(buf, cap, "%s", name);
    } else {
        snprintf(buf, cap, "child %zu", i + 1);
    }
}

static const char *node_name(const struct search_input *in) {
    return in->name && in->name[0] ? in->name : "the node";
}

int search__enough(const struct search_stats *s, const struct search_params *p) {
    return s->present && search_stats_instances(s) >= p->min_instances &&
           s->windows >= p->min_windows;
}

/* 95 % half-width of a node's mean (batch means when its windows scatter more than
 * independent instances would). */
static double mean_hw(const struct search_stats *s, double z) {
    return z * search_stats_mean_se(s);
}

static double var_hw(double v, uint64_t n, double z) {
    return z * fabs(v) * sqrt(2.0 / (n > 1 ? (double)(n - 1) : 1.0));
}

/*
 * Half-width of a node's own variance: Var(s²) ≈ σ⁴(κ − 1)/n, with its kurtosis κ from
 * the observed ΔQ when there is one. Latencies are rarely normal (κ = 3, the 2/(n − 1) of
 * var_hw): κ is clamped to [3, 9], i.e. between normal and exponential tails, so
 * exponential siblings do not look different by chance, while a heavy-tailed (erratic)
 * node keeps an interval narrow enough for its variance to dominate.
 */
static double own_var_hw(const struct search_stats *s, double z) {
    double kappa = 3.0;
    struct dq_moments m;
    if (s->observed && dq_moments(s->observed, &m) == DQ_OK && isfinite(m.kurtosis)) {
        kappa = m.kurtosis < 3.0 ? 3.0 : (m.kurtosis > 9.0 ? 9.0 : m.kurtosis);
    }
    double n = s->n_ok > 1 ? (double)(s->n_ok - 1) : 1.0;
    return z * search_stats_variance_se(s, fabs(s->variance) * sqrt((kappa - 1.0) / n));
}

static double prop_hw(double q, uint64_t n, double z) {
    if (n == 0 || !(q >= 0.0)) {
        return 0.0;
    }
    double pq = q * (1.0 - q);
    return z * sqrt((pq > 0.0 ? pq : 0.0) / (double)n);
}

static double rss(double a, double b) {
    return sqrt(a * a + b * b);
}

/*
 * The instances of s as independent ones: its count shrunk by the design effect its mean
 * shows (the batch-means standard error squared over the independent one). A queue's
 * neighbouring delays move together; a quantile's interval from the raw count would be
 * as much too narrow as the mean's.
 */
double search_stats_effective_n(const struct search_stats *s) {
    double n = (double)search_stats_instances(s);
    if (s->n_ok < 2 || !(s->variance > 0.0)) {
        return n;
    }
    double iid = sqrt(s->variance / (double)s->n_ok), se = search_stats_mean_se(s);
    return se > iid ? n * (iid / se) * (iid / se) : n;
}

/* The p-quantile of a ΔQ; the horizon when its tangible mass never reaches p. */
static double quantile_or_horizon(const struct dq *d, double q) {
    double t;
    if (q <= 0.0) {
        return 0.0;
    }
    if (dq_quantile(d, q > 1.0 ? 1.0 : q, &t) == DQ_OK) {
        return t;
    }
    return dq_horizon(d);
}

/* Standard normal CDF. */
static double phi(double x) {
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* A child's own observed-vs-calculated KS distance; NAN when it has none. */
static double child_ks(const struct search_stats *s, double *pv) {
    *pv = s->ks_p;
    if (isfinite(s->ks_d)) {
        return s->ks_d;
    }
    if (s->observed && s->calculated) {
        double d, p;
        if (dq_ks(s->observed, s->calculated, search_stats_instances(s), 0, &d, &p) == DQ_OK) {
            *pv = p;
            return d;
        }
    }
    return NAN;
}

/* ---- criticality of all/first-to-finish branches --------------------------------------- */

/*
 * E[max] of independent branches splits exactly into Σ_i ∫ t f_i(t) Π_{j≠i} F_j(t) dt:
 * branch i's share is how often it is the last to finish (∫ f_i Π F_j) times how late it
 * then is. E[min] splits the same way with Π (1 − F_j). We accumulate both integrals on
 * a grid: crit sums the probability, tsum the time-weighted probability.
 */
struct crit_acc {
    double c[SEARCH_MAX_CHILDREN];
    double tsum[SEARCH_MAX_CHILDREN];
};

/*
 * Adds one grid time t, given the branches' masses f[] there and their CDFs F[] just
 * before it. A tie within one grid step counts half each way, so two identical branches
 * get ½ each.
 */
static void crit_accumulate(size_t m, const double *f, const double *F, int first, double t,
                            struct crit_acc *acc) {
    double pre[SEARCH_MAX_CHILDREN + 1], suf[SEARCH_MAX_CHILDREN + 1];
    size_t any = 0;
    while (any < m && !(f[any] > 0.0)) {
        any++;
    }
    if (any == m) {
        return; /* no branch has mass here: nothing to add (most bins past the bulk) */
    }
    pre[0] = 1.0;
    for (size_t j = 0; j < m; j++) {
        double a = first ? 1.0 - F[j] - 0.5 * f[j] : F[j] + 0.5 * f[j];
        pre[j + 1] = pre[j] * (a > 0.0 ? a : 0.0);
    }
    suf[m] = 1.0;
    for (size_t j = m; j-- > 0;) {
        double a = first ? 1.0 - F[j] - 0.5 * f[j] : F[j] + 0.5 * f[j];
        suf[j] = suf[j + 1] * (a > 0.0 ? a : 0.0);
    }
    for (size_t j = 0; j < m; j++) {
        if (f[j] > 0.0) {
            double q = f[j] * pre[j] * suf[j + 1];
            acc->c[j] += q;
            acc->tsum[j] += q * t;
        }
    }
}

/* From the branches' observed ΔQs, each conditioned on success, bin by bin. */
static int crit_from_dq(const struct search_input *in, const size_t *idx, size_t m, int first,
                        struct crit_acc *acc) {
    struct dq *r[SEARCH_MAX_CHILDREN];
    double tang[SEARCH_MAX_CHILDREN], f[SEARCH_MAX_CHILDREN], F[SEARCH_MAX_CHILDREN];
    int kmax = DQ_MIN_K, nmax = 0, rc = DQ_OK;
    for (size_t j = 0; j < m; j++) {
        int k = in->children[idx[j]].stats.observed->k;
        kmax = k > kmax ? k : kmax;
    }
    size_t made = 0;
    for (; made < m; made++) {
        rc = dq_rebin(in->children[idx[made]].stats.observed, kmax, &r[made]);
        if (rc != DQ_OK) {
            goto out;
        }
        nmax = r[made]->n > nmax ? r[made]->n : nmax;
        tang[made] = dq_tangible(r[made]);
        F[made] = 0.0;
    }
    double w = dq_width_of(kmax);
    /* where a bin's mass sits (dq.h): its middle when spread, its right edge when every
     * branch is made of point masses (waits) */
    double off = 1.0;
    for (size_t j = 0; j < m; j++) {
        off = r[j]->atoms ? off : 0.5;
    }
    for (int t = 0; t < nmax; t++) {
        for (size_t j = 0; j < m; j++) {
            f[j] = t < r[j]->n && tang[j] > 0.0 ? r[j]->pdf[t] / tang[j] : 0.0;
        }
        crit_accumulate(m, f, F, first, w * (t + off), acc);
        for (size_t j = 0; j < m; j++) {
            F[j] += f[j];
        }
    }
out:
    for (size_t j = 0; j < made; j++) {
        dq_destroy(r[j]);
    }
    return rc;
}

/* From means and variances alone, each branch taken as normal (clipped at 0). */
static void crit_from_normal(const struct search_input *in, const size_t *idx, size_t m, int first,
                             struct crit_acc *acc) {
    double mu[SEARCH_MAX_CHILDREN], sd[SEARCH_MAX_CHILDREN];
    double f[SEARCH_MAX_CHILDREN], F[SEARCH_MAX_CHILDREN];
    double lo = INFINITY, hi = -INFINITY;
    for (size_t j = 0; j < m; j++) {
        const struct search_stats *s = &in->children[idx[j]].stats;
        mu[j] = s->n_ok > 0 ? s->mean : NAN;
        sd[j] = s->n_ok > 0 ? sqrt(s->variance) : 0.0;
        if (isfinite(mu[j])) {
            lo = fmin(lo, mu[j] - 6.0 * sd[j]);
            hi = fmax(hi, mu[j] + 6.0 * sd[j]);
        }
        F[j] = 0.0;
    }
    if (!isfinite(lo)) {
        return;
    }
    lo = lo > 0.0 ? lo : 0.0;
    hi = hi > lo ? hi : lo;
    double h = (hi - lo) / CRIT_NORMAL_STEPS;
    for (int k = 0; k <= CRIT_NORMAL_STEPS; k++) {
        double t = lo + h * k;
        for (size_t j = 0; j < m; j++) {
            double Fj = 0.0;
            if (isfinite(mu[j])) {
                Fj = sd[j] > 0.0 ? phi((t - mu[j]) / sd[j]) : (t >= mu[j] ? 1.0 : 0.0);
            }
            f[j] = Fj - F[j] > 0.0 ? Fj - F[j] : 0.0;
        }
        crit_accumulate(m, f, F, first, k > 0 ? t - 0.5 * h : t, acc);
        for (size_t j = 0; j < m; j++) {
            F[j] += f[j];
        }
    }
}

/*
 * For the included children of an all- or first-to-finish node: crit[i] = P(child i is
 * the last (first) to finish) and part[i] = its share of E[max] (E[min]) in seconds.
 * When only the winners of a first-to-finish report, *n_races becomes the number of
 * races the proportions come from.
 */
static int criticality(const struct search_input *in, const unsigned char *inc, int first,
                       double *crit, double *part, uint64_t *n_races) {
    size_t idx[SEARCH_MAX_CHILDREN], m = 0;
    struct crit_acc acc;
    int all_dq = 1;
    if (first && in->stats.present) {
        /* only winners report (losers cancelled): how often a branch finishes first is its
         * share of the finishes, and its observed ΔQ is the one of its wins */
        uint64_t sum = 0, x = search_stats_instances(&in->stats);
        for (size_t i = 0; i < in->n_children; i++) {
            sum += inc[i] ? in->children[i].stats.n_ok : 0;
        }
        if (sum > 0 && x > 0 && (double)sum <= 1.2 * (double)x) {
            *n_races = sum; /* the proportions are over every race, not one branch's */
            for (size_t i = 0; i < in->n_children; i++) {
                if (inc[i]) {
                    const struct search_stats *s = &in->children[i].stats;
                    crit[i] = (double)s->n_ok / (double)sum;
                    part[i] = s->n_ok > 0 ? crit[i] * s->mean : 0.0;
                }
            }
            return DQ_OK;
        }
    }
    for (size_t i = 0; i < in->n_children; i++) {
        if (inc[i]) {
            if (!in->children[i].stats.observed) {
                all_dq = 0;
            }
            acc.c[m] = 0.0;
            acc.tsum[m] = 0.0;
            idx[m++] = i;
        }
    }
    if (all_dq) {
        int rc = crit_from_dq(in, idx, m, first, &acc);
        if (rc != DQ_OK) {
            return rc;
        }
    } else {
        crit_from_normal(in, idx, m, first, &acc);
    }
    double sum = 0.0;
    for (size_t j = 0; j < m; j++) {
        sum += acc.c[j];
    }
    for (size_t j = 0; j < m; j++) {
        crit[idx[j]] = sum > 0.0 ? acc.c[j] / sum : 1.0 / (double)m;
        part[idx[j]] = sum > 0.0 ? acc.tsum[j] / sum : 0.0;
    }
    return DQ_OK;
}

/* ---- attribution ----------------------------------------------------------------------- */

static int baseline_ok(const struct search_stats *s, enum search_problem prob) {
    if (!s->has_baseline) {
        return 0;
    }
    switch (prob) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        return isfinite(s->base_mean) && isfinite(s->base_variance);
    case SEARCH_VARIANCE:
        return isfinite(s->base_variance);
    case SEARCH_LOST:
        return isfinite(s->base_lost);
    case SEARCH_DIVERGENCE:
        return 0;
    }
    return 0;
}

/* The child's own quantity for the problem (mean, variance, lost fraction) and its
 * half-width, as an excess over its baseline when `excess`. */
static void own_quantity(const struct search_stats *s, enum search_problem prob, int excess,
                         double z, double *v, double *hw) {
    switch (prob) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        *v = s->n_ok > 0 ? s->mean : 0.0;
        *hw = mean_hw(s, z);
        if (excess) {
            *v -= s->base_mean;
            if (s->base_n > 0) {
                *hw = rss(*hw, z * sqrt(s->base_variance / (double)s->base_n));
            }
        }
        return;
    case SEARCH_VARIANCE:
        *v = s->n_ok > 0 ? s->variance : 0.0;
        *hw = s->n_ok > 0 ? own_var_hw(s, z) : 0.0;
        if (excess) {
            *v -= s->base_variance;
            if (s->base_n > 0) {
                *hw = rss(*hw, var_hw(s->base_variance, s->base_n, z));
            }
        }
        return;
    case SEARCH_LOST:
        *v = search_stats_lost(s);
        *hw = z * search_stats_lost_se(s);
        if (excess) {
            *v -= s->base_lost;
            if (s->base_n > 0) {
                *hw = rss(*hw, prop_hw(s->base_lost, s->base_n, z));
            }
        }
        return;
    case SEARCH_DIVERGENCE:
        *v = 0.0;
        *hw = 0.0;
        return;
    }
}

static int validate(const struct search_input *in, const struct search_params *p) {
    if (!in || !p) {
        return dq_fail(DQ_EINVAL, "missing input or parameters");
    }
    if (in->n_children == 0 || in->n_children > SEARCH_MAX_CHILDREN || !in->children) {
        return dq_fail(DQ_EINVAL, "a node under investigation needs 1 to %d children (has %zu)",
                       SEARCH_MAX_CHILDREN, in ? in->n_children : 0);
    }
    if ((unsigned)in->problem > SEARCH_SHAPE) {
        return dq_fail(DQ_EINVAL, "unknown problem kind %d", (int)in->problem);
    }
    switch (in->kind) {
    case DQ_NODE_SEQUENCE:
    case DQ_NODE_REFERENCE:
    case DQ_NODE_FIRST:
    case DQ_NODE_ALL:
    case DQ_NODE_CHOICE:
        break;
    default:
        return dq_fail(DQ_EINVAL, "node kind %d has no children to attribute to", (int)in->kind);
    }
    return DQ_OK;
}

/* One attribution under way: the input, which children are weighed and how. */
struct attr {
    const struct search_input *in;
    const struct search_params *p;
    struct search_attribution *out;
    unsigned char inc[SEARCH_MAX_CHILDREN];
    size_t m; /* children weighed */
    enum search_problem prob;
    enum dq_node_kind kind; /* a reference is a sequence */
    double z;
    int excess, quant; /* values are excesses over baselines / qta_p-quantiles */
    int shape;         /* shape_mode (struct search_attribution) */
    double shape_at;
    double crit[SEARCH_MAX_CHILDREN], part[SEARCH_MAX_CHILDREN];
    uint64_t n_crit;
    double mix_mean; /* choice: the weighted mean of the weighed branches */
    /* sums over the weighed children */
    double explained, explained_hw2, sum_abs, sum_v, sum_hw2;
};

/* The children weighed (include NULL = all), each with statistics. */
static int attr_include(struct attr *t, const unsigned char *include) {
    const struct search_input *in = t->in;
    t->m = 0;
    for (size_t i = 0; i < in->n_children; i++) {
        t->inc[i] = include ? (include[i] != 0) : 1;
        if (t->inc[i]) {
            if (!in->children[i].stats.present) {
                char name[64];
                search__child_name(in, i, name, sizeof name);
                return dq_fail(DQ_EINVAL, "child %s has no statistics to attribute with", name);
            }
            t->m++;
        }
    }
    if (t->m == 0) {
        return dq_fail(DQ_EINVAL, "no child included in the attribution");
    }
    return DQ_OK;
}

/* Child s's own one-sided KS distance D+ against its baseline ΔQ (how much of its mass
 * moved later) and its half-width; NAN when the two are not on one grid. */
static double own_shift(const struct search_stats *s, double z, double *hw) {
    *hw = 0.0;
    double nr = search_stats_effective_n(s), nb = s->base_n > 0 ? (double)s->base_n : nr;
    struct search_shift sh; /* the delays of what arrived, as the node check's */
    if (search_shift_of(s->observed, s->base_observed, nr, nb, &sh) != DQ_OK) {
        return NAN;
    }
    *hw = nr > 0 ? z * 0.5 * sqrt(1.0 / nr + 1.0 / nb) : 0.0;
    return sh.d;
}

/* The shape attribution's mode (struct search_attribution.shape_mode; mode 1 only when
 * allow_own); *at: mode 2's time. */
static int shape_mode(const struct attr *t, double *at, int allow_own) {
    const struct search_input *in = t->in;
    int own = allow_own;
    for (size_t i = 0; i < in->n_children && own; i++) {
        double hw;
        own = !t->inc[i] || isfinite(own_shift(&in->children[i].stats, t->z, &hw));
    }
    if (own) {
        return 1;
    }
    int tail =
        t->kind == DQ_NODE_CHOICE && in->qta_p > 0.0 && in->qta_p <= 1.0 && in->stats.observed;
    for (size_t i = 0; i < in->n_children && tail; i++) {
        tail = !t->inc[i] || in->children[i].stats.observed;
    }
    if (!tail) {
        return 0;
    }
    *at = quantile_or_horizon(in->stats.observed, in->qta_p);
    return 2;
}

/* Excesses only when every weighed child has a baseline (mixing excesses with raw values
 * would rank unlike quantities); quantiles of a violated QTA point on sequences, when every
 * child has a ΔQ. */
static void attr_modes(struct attr *t) {
    const struct search_input *in = t->in;
    t->excess = t->prob != SEARCH_DIVERGENCE;
    for (size_t i = 0; i < in->n_children; i++) {
        if (t->inc[i] && !baseline_ok(&in->children[i].stats, t->prob)) {
            t->excess = 0;
        }
    }
    /* shape; and a violated QTA point at a choice: which branch puts mass in its tail */
    t->shape = t->prob == SEARCH_SHAPE                              ? shape_mode(t, &t->shape_at, 1)
               : t->prob == SEARCH_QTA && t->kind == DQ_NODE_CHOICE ? shape_mode(t, &t->shape_at, 0)
                                                                    : 0;
    if (t->shape) {
        t->excess = 0;
    }
    t->quant = (t->prob == SEARCH_QTA || (t->prob == SEARCH_SHAPE && !t->shape)) &&
               t->kind == DQ_NODE_SEQUENCE && in->qta_p > 0.0 && in->qta_p <= 1.0;
    for (size_t i = 0; t->quant && i < in->n_children; i++) {
        if (t->inc[i] && !in->children[i].stats.observed) {
            t->quant = 0;
        }
    }
    if (t->quant) {
        t->excess = 0;
    }
    t->out->baseline_mode = t->excess;
    t->out->quantile_mode = t->quant;
    t->out->shape_mode = t->shape;
    t->out->shape_at = t->shape ? t->shape_at : NAN;
}

/* Criticality on all/first-to-finish nodes (1 elsewhere), and a choice's weighted mean. */
static int attr_weights(struct attr *t) {
    const struct search_input *in = t->in;
    t->n_crit = UINT64_MAX;
    for (size_t i = 0; i < in->n_children; i++) {
        t->crit[i] = 1.0;
        t->part[i] = NAN;
        if (t->inc[i] && in->children[i].stats.n_ok < t->n_crit) {
            t->n_crit = in->children[i].stats.n_ok;
        }
    }
    if ((t->kind == DQ_NODE_ALL || t->kind == DQ_NODE_FIRST) && t->prob != SEARCH_LOST &&
        t->prob != SEARCH_DIVERGENCE) {
        int rc = criticality(in, t->inc, t->kind == DQ_NODE_FIRST, t->crit, t->part, &t->n_crit);
        if (rc != DQ_OK) {
            return rc;
        }
    }
    double mix_mean = 0.0, wsum = 0.0;
    if (t->kind == DQ_NODE_CHOICE) {
        for (size_t i = 0; i < in->n_children; i++) {
            const struct search_stats *s = &in->children[i].stats;
            if (t->inc[i] && s->n_ok > 0) {
                mix_mean += in->children[i].weight * s->mean;
                wsum += in->children[i].weight;
            }
        }
        mix_mean = wsum > 0.0 ? mix_mean / wsum : 0.0;
    }
    t->mix_mean = mix_mean;
    return DQ_OK;
}

/* Child i's own quantity weighed by its node's operator: a choice's weight (with the
 * spread between branches), all/first-to-finish criticality. */
static void attr_operator(const struct attr *t, size_t i, double *v, double *hw) {
    const struct search_child *ch = &t->in->children[i];
    const struct search_stats *s = &ch->stats;
    if (t->kind == DQ_NODE_CHOICE) {
        double w = ch->weight;
        if (t->prob == SEARCH_VARIANCE && !t->excess && s->n_ok > 0 && !t->in->own_spread) {
            double dm = s->mean - t->mix_mean;
            *hw = w * rss(*hw, 2.0 * fabs(dm) * mean_hw(s, t->z));
            *v = w * (*v + dm * dm);
        } else {
            *v *= w;
            *hw *= w;
        }
    } else if ((t->kind == DQ_NODE_ALL || t->kind == DQ_NODE_FIRST) && t->prob != SEARCH_LOST) {
        /* Latency (not excess): the branch's exact share of E[max] / E[min], i.e.
         * criticality × its mean when critical; otherwise criticality × value. */
        double hc = prop_hw(t->crit[i], t->n_crit, t->z);
        double when = t->prob != SEARCH_VARIANCE && !t->excess && t->crit[i] > 0.0
                          ? t->part[i] / t->crit[i]
                          : *v;
        *hw = rss(t->crit[i] * *hw, when * hc);
        *v = t->crit[i] * when;
    }
}

/* Child i's contribution and its half-width, added to the sums. */
static void attr_child(struct attr *t, size_t i) {
    const struct search_child *ch = &t->in->children[i];
    const struct search_stats *s = &ch->stats;
    struct search_contribution *c = &t->out->c[i];
    const double z = t->z;
    c->included = 1;
    double v = 0.0, hw = 0.0;
    if (t->shape == 1) {
        v = own_shift(s, z, &hw);
    } else if (t->shape == 2) {
        /* the branch's mass beyond the node's level, weighted by the choice */
        double n = search_stats_effective_n(s);
        double beyond = 1.0 - dq_cdf_at(s->observed, t->shape_at);
        v = ch->weight * beyond;
        hw = n > 0 ? ch->weight * z * sqrt(beyond * (1.0 - beyond) / n) : 0.0;
    } else if (t->prob == SEARCH_DIVERGENCE) {
        double pv;
        double d = ch->has_children ? child_ks(s, &pv) : NAN;
        v = isfinite(d) ? d : 0.0;
        uint64_t n = search_stats_instances(s);
        hw = isfinite(d) && n > 0 ? z * 0.5 / sqrt((double)n) : 0.0;
    } else if (t->quant) {
        double n = search_stats_effective_n(s);
        double q = t->in->qta_p, dlt = n > 0 ? z * sqrt(q * (1.0 - q) / n) : 0.0;
        v = quantile_or_horizon(s->observed, q);
        double a = quantile_or_horizon(s->observed, q - dlt > 0.0 ? q - dlt : 1e-12);
        double b = quantile_or_horizon(s->observed, q + dlt < 1.0 ? q + dlt : 1.0);
        hw = 0.5 * (b - a);
    } else {
        own_quantity(s, t->prob, t->excess, z, &v, &hw);
        if (t->excess) {
            c->deviates = v - hw > 0.0;
        }
        attr_operator(t, i, &v, &hw);
    }
    c->value = v;
    c->half_width = hw;
    t->sum_abs += fabs(v);
    t->sum_v += v;
    t->sum_hw2 += hw * hw;
    if (t->prob == SEARCH_VARIANCE) {
        /* The covariance compares raw variances, whatever the ranking used. */
        double raw = s->n_ok > 0 ? s->variance : 0.0, rhw = var_hw(raw, s->n_ok, z);
        if (t->kind == DQ_NODE_CHOICE && s->n_ok > 0) {
            double dm = s->mean - t->mix_mean;
            raw = ch->weight * (raw + dm * dm);
            rhw *= ch->weight;
        }
        t->explained += raw;
        t->explained_hw2 += rhw * rhw;
    }
}

/* X's own quantity (the shares are of what the children account for). */
static void attr_total(struct attr *t) {
    const struct search_stats *x = &t->in->stats;
    struct search_attribution *out = t->out;
    int x_ok = x->present && x->n_ok > 0;
    if (t->shape == 2 && x->observed) {
        out->total = 1.0 - dq_cdf_at(x->observed, t->shape_at);
        return;
    }
    if (t->shape == 1) {
        double hw;
        out->total = own_shift(x, t->z, &hw);
        out->total_half_width = hw;
        return;
    }
    switch (t->prob) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        if (t->quant && x->present && x->observed) {
            out->total = quantile_or_horizon(x->observed, t->in->qta_p);
        } else if (x_ok && !t->quant) {
            out->total = x->mean;
            out->total_half_width = mean_hw(x, t->z);
            if (t->excess) {
                out->total = baseline_ok(x, t->prob) ? x->mean - x->base_mean : NAN;
            }
        }
        break;
    case SEARCH_VARIANCE:
        if (x_ok) {
            out->total = x->variance;
            out->total_half_width = var_hw(x->variance, x->n_ok, t->z);
            if (t->kind == DQ_NODE_SEQUENCE || t->kind == DQ_NODE_CHOICE) {
                out->covariance = x->variance - t->explained;
                out->covariance_half_width =
                    sqrt(out->total_half_width * out->total_half_width + t->explained_hw2);
            }
            if (t->excess) {
                out->total = baseline_ok(x, t->prob) ? x->variance - x->base_variance : NAN;
            }
        }
        break;
    case SEARCH_LOST:
    case SEARCH_DIVERGENCE:
        out->total = t->sum_abs; /* shares of the children's failures / divergences */
        break;
    }
}

/* Shares are of what the children account for, so they add up to 100 %; what X holds
 * beyond that is the remainder (for latency: its own time, or dependence). */
static void attr_shares(struct attr *t) {
    struct search_attribution *out = t->out;
    enum search_problem prob = t->prob;
    out->explained =
        prob == SEARCH_LOST || prob == SEARCH_DIVERGENCE || t->shape ? t->sum_abs : t->sum_v;
    out->remainder = NAN;
    out->remainder_half_width = NAN;
    if ((prob == SEARCH_LATENCY || prob == SEARCH_QTA || prob == SEARCH_SHAPE) && !t->shape &&
        !t->quant && isfinite(out->total) && t->m == t->in->n_children) {
        out->remainder = out->total - t->sum_v;
        double th = isfinite(out->total_half_width) ? out->total_half_width : 0.0;
        out->remainder_half_width = sqrt(th * th + t->sum_hw2);
    } else if (prob == SEARCH_VARIANCE && isfinite(out->covariance)) {
        out->remainder = out->covariance;
        out->remainder_half_width = out->covariance_half_width;
    }
    /* shares of a positive whole: an excess below its baseline holds none of the rise, so
     * every share lies in [0, 1] and they add up to 100 % (or all are 0: nothing rose) */
    double denom = 0.0;
    for (size_t i = 0; i < t->in->n_children; i++) {
        denom += out->c[i].included && out->c[i].value > 0.0 ? out->c[i].value : 0.0;
    }
    if (t->excess) {
        out->explained = denom;
    }
    for (size_t i = 0; i < t->in->n_children; i++) {
        struct search_contribution *c = &out->c[i];
        c->share = c->included && denom > 0.0 && c->value > 0.0 ? c->value / denom : 0.0;
    }
}

/* Dominance: the largest against the runner-up, with non-overlapping intervals. */
static void attr_dominance(struct attr *t) {
    struct search_attribution *out = t->out;
    for (size_t i = 0; i < t->in->n_children; i++) {
        if (!out->c[i].included) {
            continue;
        }
        if (out->best < 0 || out->c[i].value > out->c[out->best].value) {
            out->runner_up = out->best;
            out->best = (int)i;
        } else if (out->runner_up < 0 || out->c[i].value > out->c[out->runner_up].value) {
            out->runner_up = (int)i;
        }
    }
    const struct search_contribution *b = &out->c[out->best];
    int above_zero = b->value - b->half_width > 0.0;
    if (out->runner_up < 0) {
        /* a sole child holds whatever its parent's children hold, by construction */
        out->dominant = above_zero || (t->in->n_children == 1 && t->prob != SEARCH_DIVERGENCE);
    } else {
        const struct search_contribution *r = &out->c[out->runner_up];
        /* clear of the runner-up's interval, and not a near-tie: close shares (the leader
         * within min_lead of the runner-up) are diffuse however many samples say so */
        int clear = b->value - r->value > b->half_width + r->half_width;
        int close = r->value > 0.0 && b->value < (1.0 + t->p->min_lead) * r->value;
        out->dominant = above_zero && clear && !close;
    }
}

int search_attribute(const struct search_input *in, const struct search_params *p,
                     const unsigned char *include, struct search_attribution *out) {
    int rc = validate(in, p);
    if (rc != DQ_OK) {
        return rc;
    }
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing attribution output");
    }
    struct attr attr = {0}, *t = &attr;
    t->in = in;
    t->p = p;
    t->out = out;
    rc = attr_include(t, include);
    if (rc == DQ_OK) {
        t->prob = in->problem;
        t->z = p->z;
        t->kind = in->kind == DQ_NODE_REFERENCE ? DQ_NODE_SEQUENCE : in->kind;
        memset(out, 0, sizeof *out);
        out->problem = t->prob;
        out->n = in->n_children;
        out->total = out->total_half_width = NAN;
        out->covariance = out->covariance_half_width = NAN;
        out->best = out->runner_up = -1;
        attr_modes(t);
        rc = attr_weights(t);
    }
    if (rc == DQ_OK) {
        for (size_t i = 0; i < in->n_children; i++) {
            out->c[i].criticality = t->crit[i];
            out->c[i].deviates = -1;
            if (t->inc[i]) {
                attr_child(t, i);
            }
        }
        attr_total(t);
        attr_shares(t);
        attr_dominance(t);
    }
    return rc;
}

/* ---- reasons --------------------------------------------------------------------------- */

struct fmt {
    enum search_problem prob;
    int shape; /* the attribution's shape_mode */
    double shape_at;
    double factor; /* seconds → display unit */
    const char *unit;
};

static void fmt_init(struct fmt *f, const struct search_attribution *a) {
    f->prob = a->problem;
    f->shape = a->shape_mode;
    f->shape_at = a->shape_at;
    f->factor = 1.0;
    f->unit = "";
    double scale = 0.0;
    if (a->best >= 0) {
        scale = fabs(a->c[a->best].value);
    }
    if (isfinite(a->total) && a->total > scale) {
        scale = a->total;
    }
    if (f->prob == SEARCH_VARIANCE) {
        f->unit = search__time_unit(sqrt(scale), &f->factor);
    } else if (f->prob == SEARCH_LATENCY || f->prob == SEARCH_QTA ||
               (f->prob == SEARCH_SHAPE && !f->shape)) {
        f->unit = search__time_unit(scale, &f->factor);
    }
}

/* "12.3 ms ± 0.8", "4.10 ms² ± 0.62", "8.0 % ± 1.2", "D = 0.31 ± 0.05". */
static void fmt_amount(const struct fmt *f, double v, double hw, char *buf, size_t cap) {
    if (f->shape) {
        snprintf(buf, cap, "%.3g %% ± %.2g", 100.0 * v, 100.0 * hw);
        return;
    }
    switch (f->prob) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        search__fmt_pm(v, hw, f->factor, f->unit, "", buf, cap);
        return;
    case SEARCH_VARIANCE:
        search__fmt_pm(v, hw, f->factor * f->factor, f->unit, "²", buf, cap);
        return;
    case SEARCH_LOST:
        snprintf(buf, cap, "%.3g %% ± %.2g of its instances failed or timed out", 100.0 * v,
                 100.0 * hw);
        return;
    case SEARCH_DIVERGENCE:
        snprintf(buf, cap, "KS D = %.3g ± %.2g", v, hw);
        return;
    }
    snprintf(buf, cap, "%g ± %g", v, hw);
}

static void fmt_total(const struct fmt *f, double v, char *buf, size_t cap) {
    if (f->shape) {
        snprintf(buf, cap, "%.3g %%", 100.0 * v);
        return;
    }
    switch (f->prob) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        search__fmt_pm(v, NAN, f->factor, f->unit, "", buf, cap);
        return;
    case SEARCH_VARIANCE:
        search__fmt_pm(v, NAN, f->factor * f->factor, f->unit, "²", buf, cap);
        return;
    default:
        snprintf(buf, cap, "%.3g", v);
        return;
    }
}

static void quantity(const struct search_input *in, const struct search_attribution *a, char *buf,
                     size_t cap) {
    const char *ex = a->baseline_mode ? "excess " : "";
    if (a->problem == SEARCH_SHAPE && a->shape_mode == 1) {
        snprintf(buf, cap, "mass moved later, each against its own baseline,");
        return;
    }
    if (a->shape_mode == 2) {
        char at[DQ_DURATION_TEXT];
        snprintf(buf, cap, "mass beyond %s (%s's %.3g %%-quantile now)",
                 search__dur(a->shape_at, at, sizeof at), in->name ? in->name : "the node",
                 100.0 * in->qta_p);
        return;
    }
    switch (a->problem) {
    case SEARCH_LATENCY:
    case SEARCH_QTA:
    case SEARCH_SHAPE:
        if (a->quantile_mode) {
            snprintf(buf, cap, "%.3g %%-quantile latency", 100.0 * in->qta_p);
        } else {
            snprintf(buf, cap, "%smean latency%s", ex,
                     a->baseline_mode ? " over the baselines" : "");
        }
        return;
    case SEARCH_VARIANCE:
        snprintf(buf, cap, "%slatency variance%s", ex,
                 a->baseline_mode ? " over the baselines" : "");
        return;
    case SEARCH_LOST:
        snprintf(buf, cap, "%slost instances", ex);
        return;
    case SEARCH_DIVERGENCE:
        snprintf(buf, cap, "divergence between observed and calculated ΔQs");
        return;
    }
}

/* "worker_2 holds 41 % of pipeline's mean latency (12.3 ms ± 0.8 of 30.1 ms)". */
static void describe_child(const struct search_input *in, const struct search_attribution *a,
                           const struct fmt *f, size_t i, int with_total, char *buf, size_t cap) {
    char name[DQ_DIAGRAM_MAX_NAME + 1], amount[96], total[48], what[96];
    const struct search_contribution *c = &a->c[i];
    search__child_name(in, i, name, sizeof name);
    fmt_amount(f, c->value, c->half_width, amount, sizeof amount);
    buf[0] = '\0';
    if (f->shape == 1) { /* each child against its own past: no shares of a whole */
        search__append(buf, cap,
                       "%s of %s's mass moved later against its own baseline (one-sided "
                       "KS D)",
                       amount, name);
        return;
    }
    if (with_total) {
        quantity(in, a, what, sizeof what);
        search__append(buf, cap, "%s holds %.0f %% of the %s of %s's children (%s", name,
                       100.0 * c->share, what, node_name(in), amount);
        if (isfinite(a->explained) && a->problem != SEARCH_LOST &&
            a->problem != SEARCH_DIVERGENCE && !f->shape) {
            fmt_total(f, a->explained, total, sizeof total);
            search__append(buf, cap, " of %s", total);
        }
    } else {
        search__append(buf, cap, "%s holds %.0f %% (%s", name, 100.0 * c->share, amount);
    }
    if ((in->kind == DQ_NODE_ALL || in->kind == DQ_NODE_FIRST) && a->problem != SEARCH_LOST &&
        a->problem != SEARCH_DIVERGENCE && !f->shape) {
        search__append(buf, cap, ", %s to finish in %.0f %% of instances",
                       in->kind == DQ_NODE_ALL ? "last" : "first", 100.0 * c->criticality);
    }
    search__append(buf, cap, ")");
}

static void append_covariance(const struct search_input *in, const struct search_attribution *a,
                              const struct fmt *f, char *buf, size_t cap) {
    if (a->problem != SEARCH_VARIANCE || !isfinite(a->covariance)) {
        return;
    }
    char cov[96];
    search__fmt_pm(a->covariance, a->covariance_half_width, f->factor * f->factor, f->unit, "²",
                   cov, sizeof cov);
    search__append(buf, cap, "; covariance %s (%s's variance minus its children's)", cov,
                   node_name(in));
    if (fabs(a->covariance) > a->covariance_half_width) {
        search__append(buf, cap, ", a sign that the children are dependent");
    }
}

/* X's own divergence: D and p from its statistics or its ΔQs; 0 when unknown. */
static int x_diverges(const struct search_input *in, const struct search_params *p, double *d,
                      double *pv) {
    *d = NAN;
    *pv = NAN;
    if (!in->stats.present) {
        return 0;
    }
    *d = child_ks(&in->stats, pv);
    return isfinite(*pv) && *pv < p->alpha;
}

int search__check_samples(const struct search_input *in, const struct search_params *p,
                          const unsigned char *include, struct search_result *out) {
    size_t lacking = 0, first = 0;
    for (size_t i = 0; i < in->n_children; i++) {
        if ((include && !include[i]) || search__enough(&in->children[i].stats, p)) {
            continue;
        }
        if (lacking++ == 0) {
            first = i;
        }
    }
    if (lacking == 0) {
        return 0;
    }
    memset(&out->attr, 0, sizeof out->attr);
    out->attr.problem = in->problem;
    out->attr.best = out->attr.runner_up = -1;
    out->attr.total = out->attr.covariance = NAN;
    out->child = -1;
    out->verdict = in->exhausted ? SEARCH_INCONCLUSIVE : SEARCH_NEED_SAMPLES;
    char name[DQ_DIAGRAM_MAX_NAME + 1];
    const struct search_stats *s = &in->children[first].stats;
    search__child_name(in, first, name, sizeof name);
    out->reason[0] = '\0';
    if (in->exhausted) {
        search__append(out->reason, sizeof out->reason,
                       "inconclusive at %s: out of samples or time while ", node_name(in));
    } else {
        search__append(out->reason, sizeof out->reason,
                       "waiting for samples at %s: ", node_name(in));
    }
    if (!s->present) {
        search__append(out->reason, sizeof out->reason, "%s has no statistics yet", name);
    } else {
        search__append(out->reason, sizeof out->reason,
                       "%s has %llu instances in %u window%s (needs %llu in %u)", name,
                       (unsigned long long)search_stats_instances(s), s->windows,
                       s->windows == 1 ? "" : "s", (unsigned long long)p->min_instances,
                       p->min_windows);
    }
    if (lacking > 1) {
        search__append(out->reason, sizeof out->reason, ", and %zu other child%s too", lacking - 1,
                       lacking == 2 ? "" : "ren");
    }
    return 1;
}

/* "; root's own mean latency is 66.2 ms, 1.3 ms ± 0.9 more than its children account for
 * (…)", when the remainder is significant. */
static void append_remainder(const struct search_input *in, const struct search_attribution *a,
                             const struct fmt *f, char *buf, size_t cap) {
    if ((a->problem != SEARCH_LATENCY && a->problem != SEARCH_QTA) || !isfinite(a->remainder) ||
        !(fabs(a->remainder) > a->remainder_half_width)) {
        return;
    }
    char total[48], rest[96];
    fmt_total(f, a->total, total, sizeof total);
    search__fmt_pm(fabs(a->remainder), a->remainder_half_width, f->factor, f->unit, "", rest,
                   sizeof rest);
    search__append(buf, cap, "; %s's own %s is %s, %s %s than its children account for (%s)",
                   node_name(in), a->baseline_mode ? "excess mean latency" : "mean latency", total,
                   rest, a->remainder > 0 ? "more" : "less",
                   a->remainder > 0 ? "time outside them, or dependence between them"
                                    : "they overlap, or were measured over other instances");
}

/* "the runner-up s1 holds 21 % (8.95 ms ± 0.48)", or "no other child holds any" when the
 * runner-up's contribution is exactly 0 (a leaf's divergence). */
static void describe_runner(const struct search_input *in, const struct search_attribution *a,
                            const struct fmt *f, char *buf, size_t cap) {
    buf[0] = '\0';
    if (a->runner_up < 0) {
        return;
    }
    const struct search_contribution *r = &a->c[a->runner_up];
    if (r->value == 0.0 && r->half_width == 0.0) {
        snprintf(buf, cap, "no other child holds any%s",
                 a->problem == SEARCH_DIVERGENCE ? " (a leaf has no calculated ΔQ to diverge from)"
                                                 : "");
        return;
    }
    char rname[DQ_DIAGRAM_MAX_NAME + 1], amount[96];
    search__child_name(in, (size_t)a->runner_up, rname, sizeof rname);
    fmt_amount(f, r->value, r->half_width, amount, sizeof amount);
    if (f->shape == 1) {
        snprintf(buf, cap, "the runner-up %s: %s of its mass", rname, amount);
        return;
    }
    snprintf(buf, cap, "the runner-up %s holds %.0f %% (%s)", rname, 100.0 * r->share, amount);
}

/* The largest child the answer: "localized at X: …" (a leaf) or "descend into X: …", with
 * the runner-up, into out. */
static void name_best(const struct search_input *in, const struct search_attribution *a,
                      const char *best, const char *runner, struct search_result *out) {
    int leaf = !in->children[a->best].has_children;
    char name[DQ_DIAGRAM_MAX_NAME + 1];
    search__child_name(in, (size_t)a->best, name, sizeof name);
    out->verdict = leaf ? SEARCH_LOCALIZED : SEARCH_DESCEND;
    out->child = a->best;
    search__append(out->reason, sizeof out->reason, "%s %s: %s",
                   leaf ? "localized at" : "descend into", name, best);
    if (runner[0]) {
        search__append(out->reason, sizeof out->reason, "; %s", runner);
    }
}

/* Whether the largest contribution b, a spread (variance problem, against no baseline),
 * is clear of the runner-up ru with its interval taken on the log scale: b·exp(−hw/b)
 * above ru's upper end, and not a near-tie. The symmetric interval of a few very slow
 * passes' variance reaches below 0 (133 ms² ± 137 against 1 ms² ± 0.09). */
static int spread_clear(const struct search_params *p, const struct search_attribution *a,
                        const struct search_contribution *b, const struct search_contribution *ru) {
    if (a->problem != SEARCH_VARIANCE || a->baseline_mode || !ru || !(b->value > 0.0) ||
        !(b->half_width >= 0.0)) {
        return 0;
    }
    int close = ru->value > 0.0 && b->value < (1.0 + p->min_lead) * ru->value;
    return !close && search_log_low(b->value, b->half_width) > ru->value + ru->half_width;
}

/* No child dominates: 1 when that is not yet a balance (wait for more windows) or was
 * measured too loosely to be one (diffuse, out of time), with out filled; 0 for a plain
 * diffuse verdict. */
static int undecided(const struct search_input *in, const struct search_params *p,
                     const struct search_attribution *a, const struct fmt *fp, uint32_t min_windows,
                     const char *best, const char *runner, struct search_result *out) {
    struct fmt f = *fp;
    char *r = out->reason;
    const size_t cap = sizeof out->reason;
    /* No child dominates. With few windows the intervals are still wide: wait. */
    /* (Contributions known exactly, e.g. leaves' zero divergence, will not narrow.) */
    const struct search_contribution *b = &a->c[a->best];
    int narrowing =
        b->half_width > 0.0 || (a->runner_up >= 0 && a->c[a->runner_up].half_width > 0.0);
    /* "None dominates" also needs the leader within the runner-up's interval: a leader
     * further ahead that does not dominate is only measured too loosely (heavy tails,
     * rare failures) to tell either way. */
    const struct search_contribution *ru = a->runner_up >= 0 ? &a->c[a->runner_up] : NULL;
    int imprecise = narrowing && ru && b->value - ru->value > ru->half_width;
    /* Nor can an interval wider than the largest raw time or spread itself show a balance:
     * on a starved machine a tail quantile's interval spans more than its value. (Excesses
     * over baselines, own shifts and divergences all near 0 inside their intervals are a
     * finding: none deviates.) */
    /* The runner-up's too: its interval reaching past the leader is no balance when it
     * spans more than its own value (front 11 ms ± 18 against back 23.2 ms ± 5.1 on a
     * starved machine, where back was the answer). */
    const struct search_contribution *loose =
        ru && ru->half_width / fmax(fabs(ru->value), 1e-300) >
                    b->half_width / fmax(fabs(b->value), 1e-300)
            ? ru
            : b;
    int vague = !imprecise && !a->baseline_mode && a->shape_mode != 1 &&
                (a->problem == SEARCH_LATENCY || a->problem == SEARCH_QTA ||
                 a->problem == SEARCH_SHAPE || a->problem == SEARCH_VARIANCE) &&
                narrowing && loose->half_width >= fabs(loose->value);
    if (!in->exhausted && in->tail_at > 0.0 && in->tail_passes == 0 &&
        a->problem == SEARCH_VARIANCE && !a->baseline_mode &&
        min_windows < SEARCH_TAIL_WAIT_WINDOWS) {
        /* rare slow passes that missed every window weighed: nothing here showed them */
        char t[DQ_DURATION_TEXT];
        out->verdict = SEARCH_NEED_SAMPLES;
        search__append(r, cap,
                       "waiting for the rare slow passes at %s: none of %s's passes lay beyond "
                       "%s in the %u window%s weighed, so no child could show them: %s",
                       node_name(in), in->tail_node ? in->tail_node : "the node",
                       search__dur(in->tail_at, t, sizeof t), min_windows,
                       min_windows == 1 ? "" : "s", best);
        return 1;
    }
    if (!in->exhausted && narrowing && min_windows < p->diffuse_min_windows) {
        out->verdict = SEARCH_NEED_SAMPLES;
        search__append(r, cap,
                       "waiting for more windows at %s: no child dominates yet after %u "
                       "window%s (diffuse needs %u): %s",
                       node_name(in), min_windows, min_windows == 1 ? "" : "s",
                       p->diffuse_min_windows, best);
        if (runner[0]) {
            search__append(r, cap, "; %s", runner);
        }
        append_covariance(in, a, &f, r, cap);
        return 1;
    }
    if (imprecise && !in->exhausted) {
        /* "none dominates" needs the leader measured well enough to have shown it */
        out->verdict = SEARCH_NEED_SAMPLES;
        search__append(r, cap,
                       "waiting for more windows at %s: the largest contribution is ahead of "
                       "the runner-up's interval but not clear of its own (± %.0f %%): %s",
                       node_name(in),
                       b->value != 0.0 ? 100.0 * b->half_width / fabs(b->value) : 100.0, best);
        if (runner[0]) {
            search__append(r, cap, "; %s", runner);
        }
        return 1;
    }
    if (vague && !in->exhausted) {
        out->verdict = SEARCH_NEED_SAMPLES;
        search__append(r, cap,
                       "waiting for more windows at %s: the %s contribution is measured "
                       "too loosely to tell a balance (± %.0f %% of it): %s",
                       node_name(in), loose == b ? "largest" : "runner-up's",
                       loose->value != 0.0 ? 100.0 * loose->half_width / fabs(loose->value) : 100.0,
                       best);
        if (runner[0]) {
            search__append(r, cap, "; %s", runner);
        }
        return 1;
    }
    if (imprecise && spread_clear(p, a, b, ru)) {
        /* out of time, a spread: its interval on the log scale (a variance's uncertainty is
         * a factor, not a term) is clear of the runner-up's */
        char low[96];
        fmt_amount(&f, search_log_low(b->value, b->half_width), NAN, low, sizeof low);
        name_best(in, a, best, runner, out);
        search__append(r, cap,
                       " (out of time; a spread's interval is a factor, not a term: on the log "
                       "scale its lower end, %s, is clear of the runner-up's)",
                       low);
        return 1;
    }
    if (imprecise || vague) {
        /* out of time: no child came to dominate, which is what diffuse says */
        out->verdict = SEARCH_DIFFUSE;
        char what[96];
        quantity(in, a, what, sizeof what);
        search__append(r, cap,
                       "diffuse at %s: no child came to dominate the %s of its children in the "
                       "time allowed (%s): %s",
                       node_name(in), what,
                       vague ? (loose == b ? "measured too loosely to tell: the largest "
                                             "contribution's interval spans more than its value"
                                           : "measured too loosely to tell: the runner-up's "
                                             "interval spans more than its value")
                             : "the largest stayed ahead of the runner-up's interval, not "
                               "clear of its own",
                       best);
        if (runner[0]) {
            search__append(r, cap, "; %s", runner);
        }
        append_remainder(in, a, &f, r, cap);
        return 1;
    }

    return 0;
}

int search__decide(const struct search_input *in, const struct search_params *p,
                   const unsigned char *include, struct search_result *out) {
    int rc = search_attribute(in, p, include, &out->attr);
    if (rc != DQ_OK) {
        return rc;
    }
    const struct search_attribution *a = &out->attr;
    struct fmt f;
    fmt_init(&f, a);
    char *r = out->reason;
    const size_t cap = sizeof out->reason;
    char best[2 * DQ_DIAGRAM_MAX_NAME + 256], runner[2 * DQ_DIAGRAM_MAX_NAME + 128];
    describe_child(in, a, &f, (size_t)a->best, 1, best, sizeof best);
    describe_runner(in, a, &f, runner, sizeof runner);
    r[0] = '\0';
    out->child = -1;

    uint32_t min_windows = UINT32_MAX;
    int any_deviates = 0;
    for (size_t i = 0; i < in->n_children; i++) {
        if (a->c[i].included) {
            uint32_t w = in->children[i].stats.windows;
            min_windows = w < min_windows ? w : min_windows;
            any_deviates |= a->c[i].deviates == 1;
        }
    }

    if (a->dominant) {
        name_best(in, a, best, runner, out);
        append_covariance(in, a, &f, r, cap);
        append_remainder(in, a, &f, r, cap);
        return DQ_OK;
    }

    if (undecided(in, p, a, &f, min_windows, best, runner, out)) {
        return DQ_OK;
    }
    out->verdict = SEARCH_DIFFUSE;
    double d, pv;
    int diverges = x_diverges(in, p, &d, &pv);
    if (diverges && (a->problem == SEARCH_DIVERGENCE || (a->baseline_mode && !any_deviates))) {
        char means[160] = "";
        struct dq_moments mo, mc;
        if (in->stats.observed && in->stats.calculated &&
            dq_moments(in->stats.observed, &mo) == DQ_OK &&
            dq_moments(in->stats.calculated, &mc) == DQ_OK) {
            double fct;
            const char *u = search__time_unit(fmax(mo.mean, mc.mean), &fct);
            char a1[48], a2[48];
            search__fmt_pm(mo.mean, NAN, fct, u, "", a1, sizeof a1);
            search__fmt_pm(mc.mean, NAN, fct, u, "", a2, sizeof a2);
            snprintf(means, sizeof means, "mean %s against %s calculated, ", a1, a2);
        }
        search__append(r, cap,
                       "diffuse at %s: its observed ΔQ diverges from the calculated one "
                       "(%sKS D = %.3g, p = %.2g) while %s: what changed is outside its "
                       "children (%s's own time, or the children interacting: load or shared "
                       "resources)",
                       node_name(in), means, d, pv,
                       a->problem == SEARCH_DIVERGENCE ? "no child diverges on its own"
                                                       : "no child deviates from its baseline",
                       node_name(in));
        append_remainder(in, a, &f, r, cap);
        return DQ_OK;
    }
    if (a->baseline_mode && !(a->explained > 0.0)) {
        /* nothing rose: no share to give; say so rather than "0 % of 0 ms" */
        search__append(r, cap,
                       "diffuse at %s: none of its children is above its baseline (the largest, "
                       "%s: %s)",
                       node_name(in), in->children[a->best].name ? in->children[a->best].name : "?",
                       best);
        return DQ_OK;
    }
    char what[96];
    quantity(in, a, what, sizeof what);
    search__append(r, cap, "diffuse at %s: no child dominates the %s of its children: %s",
                   node_name(in), what, best);
    if (runner[0] && strncmp(runner, "the ", 4) == 0) {
        search__append(r, cap, " and %s; their 95 %% intervals overlap", runner + 4);
    } else if (runner[0]) {
        search__append(r, cap, "; %s", runner);
    } else {
        search__append(r, cap, ", not clearly above 0");
    }
    append_covariance(in, a, &f, r, cap);
    append_remainder(in, a, &f, r, cap);
    return DQ_OK;
}

/*
 * First-to-finish whose losers are cancelled (only winners report, so the children's
 * counts add up to about the node's): a child that seldom finishes first has few
 * instances however long one waits. Once the node itself has the samples, such a child
 * does not hold the decision up: it is weighed with what it has (its criticality from
 * the counts), or left out when it never reported. Fills include and returns 1 when that
 * applies.
 */
static int rarely_first(const struct search_input *in, const struct search_params *p,
                        unsigned char *include) {
    if (in->kind != DQ_NODE_FIRST || !search__enough(&in->stats, p)) {
        return 0;
    }
    uint64_t sum = 0, x = search_stats_instances(&in->stats);
    for (size_t i = 0; i < in->n_children; i++) {
        sum += in->children[i].stats.present ? search_stats_instances(&in->children[i].stats) : 0;
    }
    if ((double)sum > 1.2 * (double)x) {
        return 0; /* losers report too: every child has the samples in time */
    }
    int any = 0;
    for (size_t i = 0; i < in->n_children; i++) {
        const struct search_stats *s = &in->children[i].stats;
        uint64_t n = s->present ? search_stats_instances(s) : 0;
        int rare = (double)n < (double)x / (2.0 * (double)in->n_children);
        include[i] = s->present && (n > 0) && (rare || search__enough(s, p));
        if (!include[i] && !rare) {
            return 0; /* a child that should have the samples does not yet */
        }
        any |= include[i] && !rare;
    }
    return any;
}

int search_evaluate(const struct search_input *in, const struct search_params *p,
                    struct search_result *out) {
    int rc = validate(in, p);
    if (rc != DQ_OK) {
        return rc;
    }
    if (!out) {
        return dq_fail(DQ_EINVAL, "missing result output");
    }
    unsigned char include[SEARCH_MAX_CHILDREN];
    if (rarely_first(in, p, include)) {
        return search__decide(in, p, include, out);
    }
    if (search__check_samples(in, p, NULL, out)) {
        return DQ_OK;
    }
    return search__decide(in, p, NULL, out);
}
