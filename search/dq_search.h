/*
 * dq_search.h: attribution of a problem at a diagram node to its children, and the search
 * strategies that choose which child probes to enable next (docs/architecture.md §4 steps
 * 3-5; VAIF §2-§3). Pure functions over plain data and engine ΔQs: no I/O, no clock,
 * no store, so every decision can be unit-tested and replayed from logged statistics.
 *
 * The caller (the controller) describes the node X under investigation as a
 * struct search_input: X's kind, X's statistics aggregated over the evaluation windows,
 * and, per child, its name, whether it has finer probes, whether its probe is enabled
 * and its statistics when it has some. Once per window close per open hypothesis it
 * calls search_step(), which answers one of
 *   SEARCH_ENABLE   enable these children (indices) and come back later;
 *   SEARCH_WAIT     the enabled children do not have enough samples yet;
 *   SEARCH_DECIDED  a verdict: descend into child c, localized at leaf c, diffuse at X,
 *                   or inconclusive; with the attribution numbers and a one-sentence
 *                   reason in plain English (what `dqctl why` prints).
 * The search's progress at X lives in a small struct search_state owned by the caller
 * (plain numbers, easy to persist with the hypothesis).
 *
 * Attribution by problem kind (search_attribute):
 *   latency    each child's contribution to X's mean: sequence, the child's mean (its
 *              excess over its baseline when every child has a baseline); all-to-finish,
 *              ∫ t f_i(t) Π_{j≠i} F_j(t) dt = P(child is the last to finish) × its mean
 *              when it is last (these add up to E[max] exactly, independence assumed;
 *              with baselines: P(last) × excess); first-to-finish, the same with
 *              Π (1 − F_j) (the first to finish, adding up to E[min]); choice,
 *              weight × mean. Criticality comes from the children's observed ΔQs, or
 *              from a normal approximation of their moments when some have none.
 *   qta        as latency; on a sequence, when input.qta_p is set and the children have
 *              observed ΔQs, each child's qta_p-quantile instead of its mean.
 *   variance   each child's share of X's variance (variance-sum law): sequence, the
 *              child's variance; choice, w·(σ² + (μ − μ̄)²) (law of total variance);
 *              all/first-to-finish, criticality × variance (an approximation). On a
 *              sequence and a choice, X's observed variance minus the explained sum is
 *              reported as the covariance: a sign that the children are dependent.
 *   lost       each child's lost fraction (failed + timed out over its instances; on a
 *              choice weighted by w): in a sequence an instance is lost at exactly one
 *              stage, so the conditional rate is each stage's own failure probability.
 *   divergence each child's own observed-vs-calculated KS distance (leaves have none:
 *              contribution 0). When X diverges and no child does, the children interact.
 * Every contribution carries a 95 % half-width (z = params.z): mean z·sqrt(var/n),
 * variance z·var·sqrt(2/(n−1)), proportion z·sqrt(p(1−p)/n), KS distance z·0.5/sqrt(n)
 * (the widest standard error of an empirical CDF), a baseline excess the root-sum-square
 * of both sides.
 *
 * Dominance: the child with the largest contribution is dominant when its value
 * minus the runner-up's exceeds the sum of both half-widths (non-overlapping 95 %
 * intervals), its own interval lies above 0, and it is not a near-tie (it exceeds the
 * runner-up's value by more than params.min_lead of it). The share of X it holds is reported,
 * never required (a slow leaf among 27 holds far less than half of the mean).
 *
 * Verdicts (search_evaluate): any child without enough samples (params.min_instances,
 * params.min_windows) → SEARCH_NEED_SAMPLES, or SEARCH_INCONCLUSIVE when the caller is
 * out of samples or time (input.exhausted); a dominant child with finer probes →
 * SEARCH_DESCEND; a dominant leaf → SEARCH_LOCALIZED; no child dominates →
 * SEARCH_DIFFUSE, but only once every weighed child has params.diffuse_min_windows
 * windows (the intervals shrink as windows accumulate; until then SEARCH_NEED_SAMPLES,
 * "waiting for more windows"), and only when the leader's value lies within the
 * runner-up's interval: a leader further ahead that does not dominate is measured too
 * loosely to tell (SEARCH_NEED_SAMPLES; when exhausted, SEARCH_DIFFUSE: no child came to
 * dominate in the time allowed). A diffuse verdict
 * says "the children interact" (coupling) when X's observed ΔQ diverges significantly from its
 * calculated one (ks_p < alpha) while no child diverges on its own (divergence problem) or no child
 * deviates from its baseline (every child has one).
 *
 * Memory: nothing allocates except the criticality of all/first-to-finish nodes built
 * from ΔQs (rebinned copies, freed before return). Result structs are large (one entry
 * per child, up to SEARCH_MAX_CHILDREN); keep them off small stacks.
 */
#ifndef DQ_SEARCH_H
#define DQ_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "diagram.h"
#include "dq.h"

#define SEARCH_MAX_CHILDREN 256 /* children of one node the search can weigh */
#define SEARCH_REASON_MAX 1024  /* bytes of a reason sentence, NUL included (2 names fit) */

/* ---- names ------------------------------------------------------------------------ */

enum search_problem {
    SEARCH_LATENCY = 0,
    SEARCH_QTA = 1,
    SEARCH_VARIANCE = 2,
    SEARCH_LOST = 3,
    SEARCH_DIVERGENCE = 4,
};

enum search_verdict {
    SEARCH_NEED_SAMPLES = 0, /* no decision yet: some child has too few samples */
    SEARCH_DESCEND = 1,      /* the dominant child has finer probes: investigate it */
    SEARCH_LOCALIZED = 2,    /* the dominant child is a leaf: found */
    SEARCH_DIFFUSE = 3,      /* no child dominates, or the children interact */
    SEARCH_INCONCLUSIVE = 4, /* out of samples or time before a decision */
};

enum search_strategy_id {
    SEARCH_CHILDREN = 0, /* enable every child of X at once */
    SEARCH_BISECT = 1,   /* halve a long sequence, inferring the unobserved half */
};

/* "latency", "qta", "variance", "lost", "divergence"; "?" out of range. */
const char *search_problem_name(enum search_problem p);

/* Parses a name above into *p; DQ_EINVAL for anything else (message says which). */
int search_problem_parse(const char *name, enum search_problem *p);

/* "need_samples", "descend", "localized", "diffuse", "inconclusive"; "?" otherwise. */
const char *search_verdict_name(enum search_verdict v);

/* "children", "bisect"; "?" otherwise. */
const char *search_strategy_name(enum search_strategy_id s);

/* Parses "children" or "bisect"; DQ_EINVAL otherwise. */
int search_strategy_parse(const char *name, enum search_strategy_id *s);

/* ---- parameters ------------------------------------------------------------------- */

struct search_params {
    uint64_t min_instances;       /* instances (ok + fa + to) a child needs: 30 */
    uint32_t min_windows;         /* windows a child needs: 2 */
    double z;                     /* two-sided normal quantile of the intervals: 1.96 */
    double alpha;                 /* significance of a KS divergence (p < alpha): 0.01 */
    double lost_threshold;        /* push-button: lost fraction over this is "lost": 0.01 */
    double cv_threshold;          /* push-button: σ/μ over this is "variance": 0.5 */
    size_t bisect_min_children;   /* bisect halves sequences with at least this many: 4 */
    uint32_t diffuse_min_windows; /* "no child dominates" becomes diffuse only when every
                                     weighed child has this many windows (intervals
                                     shrink with samples; before: need samples): 4 */
    double min_lead;              /* close shares: a leader within this fraction of the
                                     runner-up's contribution does not dominate, however
                                     many samples tell them apart (a near-tie is diffuse,
                                     with the shares): 0.10 */
};

/* Fills *p with the defaults above. */
void search_params_init(struct search_params *p);

/* ---- statistics ------------------------------------------------------------------- */

/*
 * One node's statistics over the evaluation windows. `present` = 0 means none (the
 * probe is not enabled yet, or no window closed since): every other field is ignored.
 * Fields that are unknown are NAN (doubles) or NULL (ΔQs); search_stats_init sets them so.
 */
struct search_stats {
    int present;
    uint64_t n_ok, n_fa, n_to;   /* instances by status (successes past dMax count in n_to) */
    uint32_t windows;            /* windows aggregated */
    double mean;                 /* exact mean of successful durations, seconds */
    double variance;             /* exact variance of successful durations (÷ n_ok), s² */
    const struct dq *observed;   /* optional: the aggregated observed ΔQ (borrowed) */
    const struct dq *calculated; /* optional: X's calculated ΔQ from its children */
    double ks_d, ks_p;           /* optional: KS of observed vs calculated (NAN: unknown) */
    double qta_hazard;           /* optional: size of the QTA hazard, 0 = none (NAN) */
    int has_baseline;            /* 1 when the base_* fields hold quiet-time figures */
    double base_mean, base_variance, base_lost;
    uint64_t base_n; /* instances behind the baseline; 0 = treat it as exact */
    /* Between-window dispersion (batch means), kept by search_stats_add_window: instances
     * of one window are often correlated (a queue slow for a second slows all of them),
     * so the standard errors below take the larger of the independent-instances value
     * and the one the windows' own scatter gives. Per window i with weight n_i and value
     * x_i (d_i = x_i minus the first window's value, for precision): Σ n_i, Σ n_i·d_i,
     * Σ n_i², Σ n_i²·d_i, Σ n_i²·d_i², for the windows' means (weights: ok), lost
     * fractions (weights: instances) and variances (weights: ok). */
    struct search_batch {
        double ref, w, wd, w2, w2d, w2d2;
        uint32_t windows;
        /* neighbouring windows' values (unweighted), for their lag-1 autocorrelation */
        double prev, s1, s2, lag, pair;
        uint32_t pairs;
    } b_mean, b_lost, b_var;
};

/* Empties *s: not present, counts 0, every optional field unknown. */
void search_stats_init(struct search_stats *s);

/*
 * Adds one closed window (counts by status, and the exact mean and ÷n variance of its
 * ok durations, as controller/core/probes.c computes them) to *s, pooling the moments exactly
 * (Chan et al.). Sets present. DQ_EINVAL for NaN or negative moments.
 */
int search_stats_add_window(struct search_stats *s, uint64_t ok, uint64_t fa, uint64_t to,
                            double mean, double variance);

/* All instances: n_ok + n_fa + n_to. */
uint64_t search_stats_instances(const struct search_stats *s);

/* Lost fraction (n_fa + n_to) / instances; 0 when there is none. */
double search_stats_lost(const struct search_stats *s);

/*
 * Standard errors of a node's mean latency, lost fraction and (within-window) variance:
 * the value for independent instances (σ/√n, √(p(1−p)/N); for the variance the caller's
 * own formula, passed as iid_se), unless the windows' own figures scatter significantly
 * more than that allows (a χ² test at 95 % with W − 1 degrees of freedom: the instances
 * of a window are correlated, as in a queue). Then the batch-means value, Var ≈
 * W/(W−1)·Σ n_i²(x_i − x̄)² / (Σ n_i)², times (1 + r)/(1 − r) when neighbouring windows
 * are correlated too (r their lag-1 autocorrelation, when positive, at most 0.8), widened
 * by Student's t over the normal for W − 1 degrees of freedom (a scatter of few windows
 * is itself uncertain). 0 when there is nothing to measure.
 */
double search_stats_mean_se(const struct search_stats *s);
double search_stats_lost_se(const struct search_stats *s);
double search_stats_variance_se(const struct search_stats *s, double iid_se);

/*
 * The standard error of the mean of n window values x[0 … n) (a busy fraction, a rate
 * per window): their scatter over √n, widened by Student's t for n − 1 degrees of freedom
 * as search_stats_mean_se's (a scatter of few windows is itself uncertain). No allowance
 * for neighbouring windows' correlation: over a ramp, the trend would pass for it. 0 with
 * fewer than 2 values or none scattered.
 */
double search_series_se(const double *x, int n);

/*
 * The problem kind of a push-button diagnosis, inferred from X's statistics in the
 * order of docs/architecture.md §4 step 2: QTA hazard > 0, else lost fraction over
 * params.lost_threshold, else coefficient of variation over params.cv_threshold, else
 * a significant KS divergence (ks_p < params.alpha), else latency.
 */
enum search_problem search_infer_problem(const struct search_stats *x,
                                         const struct search_params *p);

/* ---- the node under investigation ----------------------------------------------------- */

struct search_child {
    const char *name; /* probe name (borrowed; NULL prints as "child N") */
    int has_children; /* 1 when it has finer probes to descend into */
    int enabled;      /* 1 when its probe is enabled (stats may still be absent) */
    double weight;    /* choice: its probability; ignored otherwise */
    struct search_stats stats;
};

struct search_input {
    const char *name;       /* X's probe name (borrowed) */
    enum dq_node_kind kind; /* SEQUENCE, FIRST, ALL, CHOICE (REFERENCE = sequence) */
    enum search_problem problem;
    /* QTA: p[worst] of dq_qta_eval's worst point, 0 = use means (when worst = −1, the
     * lost mass is what violates the QTA: pass problem "lost" instead) */
    double qta_p;
    struct search_stats stats;           /* X's own statistics (may be absent: totals are summed) */
    const struct search_child *children; /* in written order (a sequence's order) */
    size_t n_children;                   /* 1 … SEARCH_MAX_CHILDREN */
    int exhausted;                       /* caller: out of samples, budget or time: decide now */
    int own_spread; /* variance at a choice: each branch's own spread w·σ² only (the spread
                       between the branches' means is left to the latency attribution) */
};

/* ---- attribution ---------------------------------------------------------------------- */

struct search_contribution {
    int included;       /* 0 when the child was not weighed (no stats, or not asked) */
    double value;       /* in the problem's unit: s, s², fraction, KS D */
    double half_width;  /* 95 % sampling uncertainty of value */
    double share;       /* value / Σ values of the included children */
    double criticality; /* all/first-to-finish: P(last)/P(first); 1 otherwise */
    int deviates;       /* baseline mode: 1 when value − half_width > 0, else 0; −1 n/a */
};

struct search_attribution {
    enum search_problem problem;
    int baseline_mode; /* 1 when values are excesses over the children's baselines */
    int quantile_mode; /* 1 when values are qta_p-quantiles */
    double total;      /* X's own quantity (its mean, variance; NAN when unknown) */
    double total_half_width;
    /* What the children account for: Σ of the included contributions. Shares are of
     * this sum, so they add up to 100 % by construction; remainder = total − explained
     * (latency: X's own time outside its children, or dependence between them; NAN when
     * not meaningful), with its half-width. */
    double explained;
    double remainder, remainder_half_width;
    double covariance; /* variance: X's variance − explained sum; NAN otherwise */
    double covariance_half_width;
    int best;      /* index of the largest contribution, −1 when none */
    int runner_up; /* index of the second largest, −1 when none */
    int dominant;  /* 1 when best is dominant (rule above) */
    size_t n;      /* = input.n_children */
    struct search_contribution c[SEARCH_MAX_CHILDREN];
};

/*
 * Attributes X's problem (in->problem) to the children whose `include[i]` is non-zero
 * (include NULL = all), each of which must have statistics (stats.present with at least
 * one success for latency/variance, one instance for lost). Fills *out; other children
 * get included = 0. Does not apply the sample minimums (search_evaluate does).
 * DQ_EINVAL for bad arguments (no child, too many, unknown kind, a weighed child without
 * statistics), DQ_ENOMEM.
 */
int search_attribute(const struct search_input *in, const struct search_params *p,
                     const unsigned char *include, struct search_attribution *out);

/* ---- verdicts ------------------------------------------------------------------------- */

struct search_result {
    enum search_verdict verdict;
    int child; /* DESCEND / LOCALIZED: the dominant child's index; −1 otherwise */
    struct search_attribution attr; /* valid unless verdict is NEED_SAMPLES/INCONCLUSIVE
                                       without data (then attr.best = −1) */
    char reason[SEARCH_REASON_MAX]; /* one plain-English sentence with the numbers */
};

/*
 * Evaluates X with every child weighed (the `children` strategy's decision,
 * docs/architecture.md §4 steps 4-5): applies the sample minimums, attributes, applies the
 * dominance rule and the coupling rule, and writes the verdict and its reason. DQ_EINVAL /
 * DQ_ENOMEM as search_attribute (a verdict is not an error).
 */
int search_evaluate(const struct search_input *in, const struct search_params *p,
                    struct search_result *out);

/* ---- strategies ----------------------------------------------------------------------- */

/*
 * The search's progress at one node, owned by the caller and updated by search_step.
 * Bisect keeps the contiguous range [lo, hi) of children still suspected; `steps`
 * counts calls that changed something (a narrowing or an enable).
 */
struct search_state {
    enum search_strategy_id strategy;
    size_t lo, hi;
    unsigned steps;
};

/* Starts a search at a node with n_children children (range = all of them). */
void search_state_init(struct search_state *st, enum search_strategy_id strategy,
                       size_t n_children);

enum search_action {
    SEARCH_ENABLE = 0,  /* enable the children listed in enable[] */
    SEARCH_WAIT = 1,    /* wait for samples (result.reason says which child lacks them) */
    SEARCH_DECIDED = 2, /* result holds the verdict */
};

struct search_step {
    enum search_action action;
    size_t n_enable;
    size_t enable[SEARCH_MAX_CHILDREN]; /* child indices, ascending */
    struct search_result result;        /* DECIDED: verdict; otherwise reason only */
};

/*
 * A strategy: one function that looks at X and the state and says what to do next.
 * step returns DQ_OK or DQ_EINVAL/DQ_ENOMEM as search_attribute.
 */
struct search_strategy {
    enum search_strategy_id id;
    const char *name;
    int (*step)(const struct search_input *in, const struct search_params *p,
                struct search_state *st, struct search_step *out);
};

/* The strategy for an id, or NULL when out of range. */
const struct search_strategy *search_strategy_get(enum search_strategy_id id);

/*
 * One step of st->strategy at X (dispatches through search_strategy_get):
 *   children  enable every child that is not enabled; then wait until each has the
 *             minimum samples; then search_evaluate.
 *   bisect    on a sequence with ≥ params.bisect_min_children children and a latency,
 *             qta, variance or lost problem (otherwise as children): keep the range
 *             [lo, hi) of children holding the problem; enable the first half of it;
 *             infer the other half's total from X minus every measured child
 *             (dq_infer_unobserved for means and variances, log-survival for lost);
 *             compare the halves' per-child averages with their uncertainty and move
 *             the range to the worse half; a tie → diffuse at X. A range of one child:
 *             enable it if needed, then decide on its own numbers against the other
 *             measured children (dominance rule), as children would.
 * DQ_EINVAL when st's range does not fit in->n_children.
 */
int search_step(const struct search_input *in, const struct search_params *p,
                struct search_state *st, struct search_step *out);

#endif /* DQ_SEARCH_H */
