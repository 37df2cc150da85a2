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
 *   shape      when every weighed child has a baseline ΔQ: each child's own one-sided KS
 *              distance D+ against it (how much of its mass moved later), unweighted, so
 *              that a rarely taken branch whose whole ΔQ moved stands out; otherwise, on a
 *              sequence, each child's qta_p-quantile (qta_p: the level at which X's mass
 *              moved); on a choice, each branch's weight × its mass beyond X's
 *              qta_p-quantile now (the branch that puts mass where X's moved); elsewhere as
 *              latency.
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
 * dominate in the time allowed), and so is one where (raw times or spreads, not excesses
 * over baselines) the leader's or the runner-up's interval spans more than its value. A
 * diffuse verdict
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
    SEARCH_SHAPE = 5, /* the whole ΔQ moved against its baseline (the node check's test) */
};

enum search_verdict {
    SEARCH_NEED_SAMPLES = 0, /* no decision yet: some child has too few samples */
    SEARCH_DESCEND = 1,      /* the dominant child has finer probes: investigate it */
    SEARCH_LOCALIZED = 2,    /* the dominant child is a leaf: found */
    SEARCH_DIFFUSE = 3,      /* no child dominates, or the children interact */
    SEARCH_INCONCLUSIVE = 4, /* out of samples or time before a decision */
    SEARCH_HEALTHY = 5,      /* nothing abnormal, or balanced with nothing to judge against */
    SEARCH_OVERLOAD = 6,     /* the traffic is the cause: the stages' utilisation */
};

/*
 * What an investigation is doing (one state, docs/diagnosis.md "The decision table"):
 *   OBSERVE      a person's investigation decides its problem from the node's data (the
 *                node check) before it searches;
 *   PROBLEM      it follows a known problem kind down the diagram (a trigger's, or the
 *                node check's most significant);
 *   CONTRIBUTOR  nothing to judge the node against (no QTA, no baseline): it follows the
 *                largest contributor to the time or the spread, balanced is healthy;
 *   OVERLOAD     it weighs the stages' utilisation: where does the node saturate?
 */
enum search_mode {
    SEARCH_MODE_OBSERVE = 0,
    SEARCH_MODE_PROBLEM = 1,
    SEARCH_MODE_CONTRIBUTOR = 2,
    SEARCH_MODE_OVERLOAD = 3,
};

enum search_strategy_id {
    SEARCH_CHILDREN = 0, /* enable every child of X at once */
    SEARCH_BISECT = 1,   /* halve a long sequence, inferring the unobserved half */
};

/* "latency", "qta", "variance", "lost", "divergence", "shape"; "?" out of range. */
const char *search_problem_name(enum search_problem p);

/* Parses a name above into *p; DQ_EINVAL for anything else (message says which). */
int search_problem_parse(const char *name, enum search_problem *p);

/* "need_samples", "descend", "localized", "diffuse", "inconclusive", "healthy",
 * "overload"; "?" otherwise. */
const char *search_verdict_name(enum search_verdict v);

/* "observe", "problem", "contributor", "overload"; "?" otherwise. */
const char *search_mode_name(enum search_mode m);

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
    uint64_t n_ok, n_fa, n_to;      /* instances by status (successes past dMax count in n_to) */
    uint32_t windows;               /* windows aggregated */
    double mean;                    /* exact mean of successful durations, seconds */
    double variance;                /* exact variance of successful durations (÷ n_ok), s² */
    const struct dq *observed;      /* optional: the aggregated observed ΔQ (borrowed) */
    const struct dq *calculated;    /* optional: X's calculated ΔQ from its children */
    const struct dq *base_observed; /* optional: the baseline's aggregated ΔQ (shape) */
    double ks_d, ks_p;              /* optional: KS of observed vs calculated (NAN: unknown) */
    double qta_hazard;              /* optional: size of the QTA hazard, 0 = none (NAN) */
    int has_baseline;               /* 1 when the base_* fields hold quiet-time figures */
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

/* The instances of s as independent ones: its count shrunk by the design effect its mean
 * shows (the batch-means standard error squared over the independent one). */
double search_stats_effective_n(const struct search_stats *s);
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
     * lost bound: the problem is "lost" when failures break it, search_qta_lost; timeouts
     * are a delay, weighed by means); shape: the level at which the mass moved
     * (search_found.level) */
    double qta_p;
    struct search_stats stats;           /* X's own statistics (may be absent: totals are summed) */
    const struct search_child *children; /* in written order (a sequence's order) */
    size_t n_children;                   /* 1 … SEARCH_MAX_CHILDREN */
    int exhausted;                       /* caller: out of samples, budget or time: decide now */
    int own_spread; /* variance at a choice: each branch's own spread w·σ² only (the spread
                       between the branches' means is left to the latency attribution) */
    /* variance found beyond the baseline's largest (search_found.beyond): tail_at > 0, that
     * point, and tail_passes, how many passes of the node the investigation began at
     * (tail_node) lay beyond it over the windows weighed. Rare slow passes may miss the
     * windows a step weighs: with none there, no child can dominate and "diffuse" would
     * judge windows that never showed the problem, so a variance attribution (not one over
     * baselines) waits for one (SEARCH_NEED_SAMPLES) while its children have fewer than
     * SEARCH_TAIL_WAIT_WINDOWS windows, unless exhausted. tail_at 0: not such a problem. */
    double tail_at;
    int tail_passes;
    const char *tail_node;
};

/* ---- attribution ---------------------------------------------------------------------- */

struct search_contribution {
    int included;       /* 0 when the child was not weighed (no stats, or not asked) */
    double value;       /* in the problem's unit: s, s², fraction, KS D */
    double half_width;  /* 95 % sampling uncertainty of value */
    double share;       /* max(value, 0) / Σ of the included children's positive values: in
                           [0, 1], 0 for all when no value is positive */
    double criticality; /* all/first-to-finish: P(last)/P(first); 1 otherwise */
    int deviates;       /* baseline mode: 1 when value − half_width > 0, else 0; −1 n/a */
};

struct search_attribution {
    enum search_problem problem;
    int baseline_mode; /* 1 when values are excesses over the children's baselines */
    int quantile_mode; /* 1 when values are qta_p-quantiles */
    /* shape: 1 when values are each child's own D+ against its baseline ΔQ (every weighed
     * child has one); 2 when they are the mass of each branch beyond the node's qta_p-
     * quantile, weighted by the choice (a choice, no such baselines); 0 otherwise (a sequence
     * in quantile_mode, or means as for latency) */
    int shape_mode;
    double shape_at; /* shape_mode 2: the node's qta_p-quantile now, s */
    double total;    /* X's own quantity (its mean, variance; NAN when unknown) */
    double total_half_width;
    /* What the children account for: Σ of the included contributions (in baseline mode Σ
     * of the positive excesses: what rose). Shares are of the positive part, so they lie in
     * [0, 1] and add up to 100 % when any is positive; remainder = total − Σ contributions
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

/* ---- the node check ------------------------------------------------------------------- */

/*
 * What is abnormal at a node, judged against its references (docs/diagnosis.md, "The
 * decision table"). A node's references are its QTA and its baseline (its own earlier
 * windows, once there are SEARCH_BASELINE_WINDOWS of them); its calculated ΔQ (from its
 * children) is checked too, but it is not a reference by itself: a part can be slow since
 * the start and the whole still add up. The check lists every problem it finds with a
 * z-score, most significant first (a broken QTA first of all):
 *
 *   qta         the observed ΔQ crosses the QTA (a hazard, significant as a binomial
 *               proportion at the worst point), or loses more than it allows
 *   lost        the lost fraction rose against the baseline (by more than
 *               params.lost_threshold), or, with no baseline, lies significantly above
 *               params.lost_threshold
 *   latency     the mean rose against the baseline, significantly (the pooled means, or the
 *               windows' own means ranked against the baseline's: Mann-Whitney) and by at
 *               least half a baseline standard deviation
 *   variance    the spread within windows grew by half or more beyond what the mean's
 *               growth explains, significantly; or rare, very slow instances pile up beyond
 *               the baseline's 99.9 % point (and, with 10,000 baseline instances, its
 *               99.99 % point; with 1,000, its largest instance) moved with the median (an
 *               exact binomial test); or, when none of the tail's levels counts and the
 *               count beyond the largest is at z 1.5 at least, a few recent windows hold
 *               passes where
 *               the baseline's own tail, fitted beyond its 99 % point with a generalized
 *               Pareto law taken cautiously, expects almost none (a Poisson test;
 *               found.far, ranked after every other problem: its z says how surely such
 *               passes are new, not how much they weigh). Each point is a look
 *               (found.looks; the far one only when the baseline can be fitted)
 *   divergence  observed and calculated differ (KS D over 0.1, p under params.alpha), or
 *               the time the node spends beyond what its children account for grew
 *               against the baseline, significantly and by half a baseline sd
 *   shape       the whole ΔQ moved later against the baseline's: the one-sided two-sample
 *               KS distance D+ = max_t (F_base(t) − F_now(t)) between the delays of the
 *               instances that arrived (each CDF over its tangible mass: lost mass has its
 *               own test) is significant with each side's effective size (its instances
 *               over the batch-means inflation of its mean's variance: correlated
 *               instances count as fewer), and practically large: at least
 *               SEARCH_SHAPE_MASS of the mass moved (D+), by SEARCH_SHAPE_TIME of the
 *               baseline's median (and two bins) on average (W1+ / D+, where W1+ = ∫
 *               (F_base − F_now)+ dt is the delay added in all, mass × time). Found is the
 *               level where most mass moved (search_found.level): the search follows that
 *               part of the distribution down.
 *
 * Standard errors are batch-means aware (search_stats_mean_se and friends). A z-score of
 * SEARCH_Z (3) is "significant" for one look (about one false alarm in 700 per kind); a
 * caller that looks several times shares that rate among the looks (search_z_looks).
 */
#define SEARCH_Z 3.0               /* a change this many standard errors away is significant */
#define SEARCH_RECENT_WINDOWS 5    /* what a node looks like now */
#define SEARCH_BASELINE_WINDOWS 30 /* windows with data a baseline needs, before those */
#define SEARCH_BASELINE_SPAN 60    /* ... looked for among this many */
#define SEARCH_MAX_PROBLEMS 5
#define SEARCH_MAX_WINDOW_MEANS (SEARCH_BASELINE_SPAN + 64) /* per side of the rank test */
#define SEARCH_MAX_RATE_WINDOWS 128 /* windows the rate-latency correlation weighs */
#define SEARCH_SHAPE_MASS 0.05      /* shape: the least mass that moved … */
#define SEARCH_SHAPE_TIME 0.10      /* … by at least this share of the baseline's median */

/* The z-score of a one-sided p-value (p = P(Z > z)); 40 for p = 0, 0 for p ≥ 0.5. */
double search_z_of_p(double p);
/* How far a ΔQ's delays moved later than a reference's (the `shape` test's measure, above):
 * over the delays of the instances that arrived (each CDF over its tangible mass), d = D+,
 * w1 = W1+ (seconds), moved = W1+ / D+ (seconds), median = the reference's median (NAN
 * when its mass never reaches half), level = the CDF level where D+ is, z = D+'s one-sided
 * KS z with effective sizes n_now and n_ref. */
struct search_shift {
    double d, w1, moved, median, level, z;
};

/* Fills *out for now against ref; DQ_EINVAL (*out zeroed) when they are not on one grid
 * or either has no tangible mass. */
int search_shift_of(const struct dq *now, const struct dq *ref, double n_now, double n_ref,
                    struct search_shift *out);

/* The shift of now against ref moved later by lag_s seconds (to the nearest whole bin; the
 * median stays ref's own): the mass of now later than that. lag_s 0: search_shift_of. */
int search_shift_lagged(const struct dq *now, const struct dq *ref, double lag_s, double n_now,
                        double n_ref, struct search_shift *out);

/* The low end of a spread (a variance) v ± hw taken on the log scale, v·exp(−hw/v): a
 * variance's uncertainty is a factor, not a term, and its symmetric interval reaches below
 * 0 when a few very slow passes make it (133 ms² ± 137). v − hw when v ≤ 0. */
double search_log_low(double v, double hw);

/* 1 when shift s (on a grid of bins `width` seconds wide) is practically large: at least
 * SEARCH_SHAPE_MASS of the mass moved, by at least SEARCH_SHAPE_TIME of the reference's
 * median and two bins on average. */
int search_shift_material(const struct search_shift *s, double width);

/* The z from which a change counts when a caller looks `looks` (≥ 1) times: SEARCH_Z's
 * one-sided false alarm rate shared among the looks (Bonferroni). */
double search_z_looks(int looks);
/* The same from a threshold zt for one look: zt's one-sided rate shared among `looks`. */
double search_z_shared(double zt, int looks);

struct search_found {
    enum search_problem kind;
    double z;      /* how significant */
    double level;  /* shape: the probability level at which most mass moved (0: n/a) */
    int far;       /* variance: found by the far tail's level alone (ranks last) */
    double beyond; /* variance found beyond the baseline's largest instance (the far tail or
                      the tail's farthest level): that point (s; moved with the median as
                      the level's); 0: another problem */
    int looks;     /* the looks this test shares the check's rate among (the tail's levels;
                      0 or 1: one), so it counts from search_z_of_p(P(Z > zt) / looks) */
    char why[200]; /* the sentence ("mean 12 ms against 8 ms before") */
};

/*
 * The statistics the check judges: the node now and its baseline, each pooled over its
 * windows with the aggregated ΔQs (observed, calculated; borrowed), and the windows' own
 * means (windows with successes; any order) for the rank test.
 */
struct search_check_input {
    const struct search_stats *recent;
    const struct search_stats *baseline; /* not present: none */
    const struct dq_qta *qta;            /* NULL: the node has none */
    const double *recent_means;
    int n_recent_means; /* at most SEARCH_MAX_WINDOW_MEANS */
    const double *base_means;
    int n_base_means; /* at most SEARCH_MAX_WINDOW_MEANS */
    /* optional: for each recent window on the recent ΔQ's grid, a point its largest pass
     * lies beyond (any order), for the far tail's count of windows (NULL: counted by
     * instances) */
    const double *recent_max;
    int n_recent_max; /* at most SEARCH_MAX_WINDOW_MEANS */
    double zt;        /* the z a problem needs (search_z_looks) */
    /* 1: a suggestive check (search_watch_wanted), whose problem starts a watch and is never
     * a verdict: the far tail also weighs the recent windows' 2nd largest pass, and without
     * the gate on the count beyond the baseline's largest (docs/diagnosis.md, "The far
     * tail") */
    int suggest;
};

struct search_check {
    int has_qta, has_baseline, has_calculated;
    double zt;
    struct search_stats recent;   /* the node now (ΔQs not kept) */
    struct search_stats baseline; /* … and before (ΔQs not kept) */
    int n;
    struct search_found p[SEARCH_MAX_PROBLEMS]; /* most significant first */
};

/* Runs the tests above; the baseline counts when it has SEARCH_BASELINE_WINDOWS windows. */
void search_check(const struct search_check_input *in, const struct search_params *params,
                  struct search_check *out);

/*
 * Load. search_rate_latency_z: how clearly latency rises with the arrivals over n windows
 * (rate[i], mean[i]; the first SEARCH_MAX_RATE_WINDOWS count): Spearman's rank correlation
 * as a z (ρ·√(n−1)); 0 with fewer than 10 windows. Values within a relative 1e-6 are ties.
 * search_load_of: the load evidence of a node's windows w[0 … n), newest first as in a
 * probe's ring (w[i + 1] is the one before w[i]). Two kinds of window cannot weigh a rate:
 *   - fewer than SEARCH_LOAD_MIN_OK ok instances (no latency to rank);
 *   - a stall's backlog. The range of an ordinary window is the median m of the windows'
 *     instances (those with SEARCH_LOAD_MIN_OK ok) ± 3 √m (Poisson's spread). A stall
 *     opens a run: silence right before a window (w[i].silent_before windows of no data
 *     while the probe was enabled and its source had gone quiet; they hold back about
 *     m each, and so does the window it began in; so do the windows below m right before
 *     the silence, what they lacked of m, up to m in all: a stall that began before it), or
 *     a window of
 *     fewer than SEARCH_LOAD_MIN_OK ok within the range or below it (the instances timed
 *     out while the source stalled: one window held back). The windows of the run above the range
 *     are backlog, what piled up in the stall, not arrivals, as long as their excess over m
 *     adds up to no more than what the stall held back; the run ends at the first window
 *     within the range or above it beyond that. A window of fewer than SEARCH_LOAD_MIN_OK
 *     ok above the range is backlog anywhere (a pile of timeouts). A gap in the ids alone
 *     (a probe disabled, then enabled again) is no stall.
 *   rz: search_rate_latency_z over the other windows (window_s each; the newest
 *   SEARCH_MAX_RATE_WINDOWS); backlog_n, backlog_windows: the backlog among the newest
 *   recent_windows windows (those of a check's recent, which search_load_rose leaves out).
 * search_load_rose: 1 when the latency went up with the load: l->rz ≥ search_z_looks(looks),
 * or (c with a baseline; c may be NULL) the arrivals per window of c's recent windows
 * without their backlog rose by a fifth or more against the baseline, at that z; the
 * baseline's arrivals per window are first scaled by l->older_thinned (windows of a few
 * instances in it, a stall's, are no lower arrival rate). why: the sentence ("" when 0).
 * search_load_shaped: a problem a load can cause (latency, QTA, variance), which becomes an
 * overload investigation when the latency rises with the arrivals.
 */
#define SEARCH_LOAD_MIN_OK 10
struct search_load_window {
    int64_t wid;
    double n;          /* instances: ok, failed, timed out */
    double ok;         /* of which ok */
    double mean;       /* their mean latency */
    int silent_before; /* no-data windows right before it (0: none) */
};
struct search_load {
    double rz;
    double backlog_n;
    int backlog_windows;
    /* the windows before the recent ones (not a backlog): their instances' median over
     * their mean, when at least 10 and the median is the larger (a stall's thin windows
     * pull the mean down); else 1 */
    double older_thinned;
};
double search_rate_latency_z(const double *rate, const double *mean, int n);
void search_load_of(const struct search_load_window *w, int n, double window_s, int recent_windows,
                    struct search_load *out);
int search_load_rose(const struct search_load *l, const struct search_check *c, int looks,
                     char *why, size_t cap);
int search_load_shaped(enum search_problem p);

/*
 * A QTA broken by failures. s: the node's statistics over the windows that broke it (its
 * observed ΔQ and counts by status); base: its baseline's, from before the problem (NULL,
 * absent or without an observed ΔQ: none; the callers pass one of SEARCH_BASELINE_WINDOWS
 * windows or none, and there is none for a probe enabled after its problem began or in an
 * episode resumed after a restart: then the levels are compared); qta: its QTA. 1 when the QTA is
 * broken (dq_qta_eval on s->observed) and the failures (n_fa of all instances: what never
 * completes, at most the ΔQ's lost mass) are what breaks it: at its worst clause's point t
 * they are at least the mass of everything else beyond t (successes slower than t,
 * timeouts), or, when the worst clause is the lost bound, at least the timeouts' mass (an
 * overload's timeouts are a delay, not failures). With a baseline, what is compared is what
 * changed: the failures' rise (it must be above 0) against the rise of the rest beyond t,
 * so a node that always failed a little and now is slower is not followed as lost. A QTA
 * trigger's investigation then follows the lost mass, as a lost trigger's would
 * (attributing the QTA weighs the children's latencies, which a fault that fails a part's
 * passes barely moves); 0 otherwise, and when s has no observed ΔQ or qta is NULL.
 * why (cap bytes): the sentence when 1, "" otherwise.
 */
int search_qta_lost(const struct search_stats *s, const struct search_stats *base,
                    const struct dq_qta *qta, char *why, size_t cap);

/* ---- the policy ------------------------------------------------------------------------ */

/*
 * Confirmation: a verdict is acted on once the same verdict (and child) held
 * SEARCH_CONFIRM evaluations in a row. An inconclusive verdict needs none (time is up);
 * an evaluation without a new window (a person's action) confirms nothing. `from` is the
 * first window after the evaluation that first saw the pending verdict: the windows from
 * there on must say the same on their own (search_fresh_judge).
 */
#define SEARCH_CONFIRM 2

struct search_confirm {
    int verdict, child, count;
    int64_t from;
};

/* Forgets the pending verdict. */
void search_confirm_reset(struct search_confirm *c);

/* Counts this evaluation (has_window: it came with a new window; upto: the first window
 * not closed yet); 1 when the verdict is confirmed. */
int search_confirm_step(struct search_confirm *c, int verdict, int child, int has_window,
                        int64_t upto);

/*
 * The fresh-window check of a confirmed verdict (the `children` strategy, not yet out of
 * time): the verdict of the windows since it was first seen, evaluated alone with
 * search_fresh_params, must be the same verdict at the same child, or the evidence of the
 * whole range was one burst (a queue). WAIT: those windows are too few yet.
 */
enum search_fresh { SEARCH_FRESH_WAIT = 0, SEARCH_FRESH_AGREES = 1, SEARCH_FRESH_DISAGREES = 2 };
void search_fresh_params(const struct search_params *p, struct search_params *out);
enum search_fresh search_fresh_judge(int verdict, int child, int fresh_verdict, int fresh_child);
/* 1 when a confirmed verdict needs the fresh-window check. */
int search_fresh_needed(int verdict, enum search_strategy_id strategy, int exhausted);

/*
 * The no-reference fallback (mode CONTRIBUTOR): follow where the focus's time goes. `lat`
 * is the latency evaluation of `in` (problem latency). The largest contributor to its mean,
 * or, when the focus lost instances, to its lost mass (whichever is the more concentrated
 * in one child: the leader over the runner-up), every child with at least 4 windows; only
 * when the time is balanced does the spread speak (each branch's own spread on a choice);
 * balanced in all → SEARCH_HEALTHY with "where the time goes". Returns the verdict, with
 * the result to act on in *out and the problem it followed in *followed. DQ errors of the
 * evaluations leave the latency verdict.
 */
int search_contributor(const struct search_input *in, const struct search_params *p,
                       const struct search_result *lat, struct search_result *out,
                       enum search_problem *followed);

/* "a 34 %, b 33 %, c 33 %": where a node's time goes, largest first (at most 6). */
void search_where_it_goes(const struct search_input *in, const struct search_attribution *a,
                          char *buf, size_t cap);

/*
 * What a person's investigation follows once the node check ran (c) — the mode it
 * searches in, or SEARCH_MODE_OBSERVE for "healthy, nothing to search":
 *   a problem found: PROBLEM, or OVERLOAD when asked for or when it is load-shaped and
 *     load_rose_with_c (search_load_rose with c);
 *   nothing found: OVERLOAD when asked for or load_rose (without c: more traffic alone is
 *     no overload), else healthy when there is a reference (QTA or baseline), else
 *     CONTRIBUTOR.
 * The caller computes only the load flag the case reads (search_followed_needs says which).
 */
enum search_mode search_followed(const struct search_check *c, int overload_asked, int load_rose);
/* 1: load_rose is search_load_rose with c; 0: without c; −1: not read. */
int search_followed_needs(const struct search_check *c, int overload_asked);

/* 1 when an observing investigation can decide its problem now: the node has the
 * samples (enough) and shows a problem, has SEARCH_RECENT_WINDOWS windows, or is out of
 * time. */
int search_observe_ready(int enough, const struct search_check *c, int exhausted);

/*
 * A person's diagnosis that finds nothing significant where a test is within reach of it
 * (z ≥ SEARCH_Z_SUGGESTIVE at one of the check's horizons: a rare branch's erratic step
 * gives the root a handful of slow passes in 20 s, at z ≈ 3.1 where 3.3 counts) is not
 * called healthy at once: it watches SEARCH_WATCH_WINDOWS windows more (not checked one by
 * one: each check would be one more look), then looks once over the longest horizon and
 * the windows watched, at the threshold of a fourth look (search_z_looks(4)), and that
 * look's answer is the check's. The false alarms stay within 1.25 times the check's: the
 * suggestive check alarms nothing, and the fourth look spends a quarter of the rate more,
 * whatever the first three saw. search_watch_wanted: 1 when an investigation should start that
 * watch (person: a person started it; has_reference: a QTA or a baseline, without which it is not
 * healthy but follows its contributors; suggestive: the check at SEARCH_Z_SUGGESTIVE found
 * something).
 */
#define SEARCH_Z_SUGGESTIVE 2.5
#define SEARCH_WATCH_WINDOWS 20
/* the most quiet windows a person's problem found in the tail waits before its probes go
 * (deescalate.c): with the 20 windows its node check may still see the passes for, within a
 * minute of 1-s windows after the fault ends */
#define SEARCH_TAIL_QUIET_MAX 30
/* the most windows a step waits for a problem found in the tail to show (search_input) */
#define SEARCH_TAIL_WAIT_WINDOWS 20
#define SEARCH_WATCH_LOOKS 4
int search_watch_wanted(int person, int overload_asked, int has_reference, int suggestive);

/* 1 when a localized culprit still holds the problem: its value now above the midpoint
 * between its value at the verdict and the runner-up's then. */
int search_still_holds(double now, double at_verdict, double runner_at_verdict);

/* 1 when a culprit still stands out from its siblings now: its value less its half-width
 * above `rival`, the largest of theirs plus their half-widths (−INFINITY: it has none). A
 * culprit back to normal fails both this and search_still_holds. */
int search_stands_out(double value, double half_width, double rival);

/* ---- queues: where a node saturates ------------------------------------------------------ */

/*
 * Each child of an overload investigation's focus is a *stage*: a station with an arrival
 * rate λ (its instances per second), a mean sojourn W (waiting and service), c servers and
 * a service time S. Its utilisation ρ = λ·S / c comes from, in this order of preference:
 *
 *   busy      one server (configured, or assumed when nothing says otherwise): the
 *             fraction of the time it had a request in progress. A single FIFO server is
 *             busy exactly then, whatever its service law; S = busy time / completions.
 *   baseline  several servers and quiet windows (its lowest-rate windows) at under half
 *             today's rate: S = their mean sojourn (at low load there is hardly any wait).
 *   mmc       several servers and no such baseline: the M/M/c model read twice, from the
 *             busy fraction (1 − P0(c, ρ)) and from the mean number in it (Little's law,
 *             L = λ·W = cρ + C(c, cρ)·ρ/(1 − ρ), Erlang's C the probability of waiting),
 *             each solved for ρ; the mean of the two, the interval from the mean's error
 *             and half their disagreement.
 *
 * The servers come from the configuration; without, a quiet baseline infers a pool when
 * λ·S clearly exceeds the busy fraction: c ≥ λ·S / busy, a lower bound; else instances that
 * overtake one another show concurrency (search_servers_observed). Else one server is
 * assumed, and said. A stage saturates at c/S arrivals per second; the investigation's node
 * saturates when its arrivals, of which the stage sees the share λ/λ_root, bring the
 * stage there. The bottleneck is the stage with the highest ρ; stages whose ρ is not
 * clearly below it (by SEARCH_Z standard errors of the difference) are co-bottlenecks.
 */
#define SEARCH_NAME_MAX 255            /* bytes of a probe name (core's PROBES_NAME_MAX) */
#define SEARCH_OVERLOAD_PRECISION 0.07 /* the bottleneck's ρ half-width a verdict needs */
#define SEARCH_OVERLOAD_MIN_WINDOWS 6  /* … and the windows each stage is measured over */

/* Erlang's C: the probability that an arrival waits at c servers with offered load a = λS
 * (a < c; 1 at or beyond). */
double search_erlang_c(int c, double a);
/* The probability that an M/M/c station at utilisation rho holds any request. */
double search_mmc_busy(int c, double rho);
/* The M/M/c utilisation at which the station holds a request a fraction `busy` of the time. */
double search_mmc_rho_of_busy(int c, double busy);
/* The mean number in an M/M/c station at utilisation rho (INFINITY at 1). */
double search_mmc_l(int c, double rho);
/* The M/M/c utilisation whose mean number in the station is l. */
double search_mmc_rho_of_l(int c, double l);
/* The M/M/c queueing factor of the wait: Wq = S·g(c, ρ), g = C(c, cρ) / (c (1 − ρ)). */
double search_mmc_wait_factor(int c, double rho);

/* What was measured of one stage over its windows. */
struct search_stage_obs {
    double window_s;                      /* a window's length, s */
    double lambda, lambda_se;             /* arrivals per second, its standard error */
    double busy, busy_se;                 /* mean busy fraction over the windows, its se */
    double completions;                   /* ok + failed instances */
    double windows;                       /* windows counted (an empty one was idle) */
    double w, w_se;                       /* mean sojourn (NAN: none), its standard error */
    double quiet_w, quiet_se, quiet_rate; /* quiet windows' sojourn, se, rate (NAN: none) */
    int servers;                          /* configured servers, 0: none */
    int servers_observed; /* concurrency the instances show (search_servers_observed), 0 none */
    double lambda_root;   /* the investigation node's arrivals per second */
};

/*
 * Concurrency from a stage's own instances: a single FIFO server never lets a later arrival
 * leave first, so instances overtaken (begun before one that ended earlier) show several
 * servers (at least 3 of them, 1 % of the instances or more). Their number is then at least
 * 2, and at least the mean number in the station while it is busy, λ·W / busy (rounded).
 * 0 when the instances show none.
 */
int search_servers_observed(double overtaken, double instances, double lambda, double w,
                            double busy);

struct search_stage {
    char name[SEARCH_NAME_MAX + 1];
    char parent[SEARCH_NAME_MAX + 1]; /* the node whose child it is */
    int64_t to;                       /* first window after those it was measured over */
    double lambda;                    /* its arrivals per second over those windows */
    double share;                     /* λ / the investigation node's λ */
    double w;                         /* its mean sojourn, s */
    double service;                   /* S, s */
    int servers;                      /* c */
    const char *servers_from;         /* "config", "inferred" (quiet windows: a lower bound),
                                         "observed" (overtaking: search_servers_observed), "assumed" */
    double rho, rho_lo, rho_hi;
    double rho_busy, rho_little; /* mmc: its two readings (NAN otherwise) */
    double sat;                  /* c/S: the arrivals per second that saturate it */
    double sat_root;             /* … in arrivals of the investigation's node: sat / share */
    const char *method;          /* "busy", "baseline", "mmc" */
    int has_children;            /* it has finer probes */
    int co;                      /* a co-bottleneck: its ρ not clearly below the bottleneck's */
    struct dq *obs;              /* its observed ΔQ over those windows (the caller's) */
};

/* Estimates a stage's ρ, interval, service time, servers and saturation (z: the
 * intervals' normal quantile). Leaves name, parent, to, has_children, co and obs alone. */
void search_stage_estimate(const struct search_stage_obs *o, double z, struct search_stage *st);

/* The stages an overload step weighs: the earlier levels' first, then the focus's. */
struct search_overload {
    int n;
    int first_current;       /* index of the first of the focus's children */
    struct search_stage *st; /* n entries (the caller's) */
    int bottleneck, n_co;    /* set by search_overload_weigh */
    double lambda_root;      /* the investigation node's arrivals per second */
    double saturation;       /* … at which the first (co-)bottleneck saturates */
    double qta_rate;         /* … at which its QTA fails; NAN when unknown */
    double onset;            /* … from which its observed and calculated diverge; NAN */
};

/* Names the bottleneck (highest finite ρ) and the co-bottlenecks, and the saturation rate.
 * DQ_ESTATE when no stage has a ρ. */
int search_overload_weigh(struct search_overload *r, double z);

/* How much a stage's mean sojourn grows when its utilisation goes from ρ now to rho_then:
 * its measured wait scaled by the M/M/c wait factor; INFINITY at saturation. */
double search_sojourn_growth(const struct search_stage *st, double rho_then);

/* ΔQ d with every delay stretched by k (mass at grid time t moves to k·t; past the horizon
 * it is lost). DQ_ENOMEM. */
int search_stretch(const struct dq *d, double k, struct dq **out);

/*
 * The root arrivals at which the root's QTA fails (NAN: it holds up to saturation, or
 * cannot be told): every stage's observed ΔQ stretched as its model says its sojourn grows
 * at that rate, composed by `ev` (an evaluator of the diagram, every probe on its own grid)
 * up to node `root`; bisection between today's rate and the saturation rate.
 */
double search_qta_rate(struct dq_eval *ev, int root, const struct search_overload *r,
                       const struct dq_qta *qta);

/* The lowest arrival rate from which windows mostly diverge: rate[i] and div[i] (1: its
 * observed and calculated differ) of n windows, sorted in place by rate; the first
 * diverging one from which at least half do. NAN when fewer than three diverge. */
double search_divergence_onset(double *rate, int *div, int n);

/* Where an overload verdict sits: the bottleneck; co-bottlenecks, at the focus when they
 * are all its children, else at the investigation's node. */
const char *search_overload_at(const char *node, const char *focus,
                               const struct search_overload *r);

/* "worker_2: ρ 0.81 (0.74 – 0.88; busy time, 1 server assumed), service 4.05 ms, 198/s". */
void search_stage_words(const struct search_stage *st, char *buf, size_t cap);

/* The sentence of an overload verdict or descent at investigation node `node`. */
void search_overload_reason(const char *node, const char *focus, const struct search_overload *r,
                            char *buf, size_t cap);

/*
 * What an overload step does once every stage has its samples and r is weighed: WAIT while
 * the bottleneck's ρ is not known to ±SEARCH_OVERLOAD_PRECISION (unless exhausted: out of
 * time); DESCEND into a lone bottleneck of the focus's children that has finer probes;
 * else VERDICT (overload at search_overload_at). The confirmation child is the bottleneck's
 * index among the focus's children (r->bottleneck − r->first_current).
 */
enum search_overload_next { SEARCH_OV_WAIT = 0, SEARCH_OV_DESCEND = 1, SEARCH_OV_VERDICT = 2 };
enum search_overload_next search_overload_next(const struct search_overload *r, int exhausted);

#endif /* DQ_SEARCH_H */
