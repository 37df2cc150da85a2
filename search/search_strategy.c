/*
 * search_strategy.c: the strategies that choose which children of X to enable next
 * (docs/architecture.md §4 step 3), behind one interface (struct search_strategy).
 *
 * `children` enables everything below X at once: one round of waiting, most probes.
 * `bisect` (VAIF's binary search over a sequence) enables half of the suspected range
 * and infers the other half from X minus every measured child, so a fault in one of n
 * stages is found with about n/2 + n/4 + … probes instead of n. It relies on the moment
 * algebra of a sequence (means and variances add; survival probabilities multiply),
 * which is why it only runs on sequences and only for problems with such a law.
 *
 * Invariant kept by "enable the first half": either the whole range is measured, or
 * every child outside it is. So the unmeasured children, when any, always form the
 * second half of the current range, and X minus everything measured is exactly them.
 */
#include "dq_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search_internal.h"

static void step_reset(struct search_step *out) {
    out->action = SEARCH_WAIT;
    out->n_enable = 0;
    out->result.verdict = SEARCH_NEED_SAMPLES;
    out->result.child = -1;
    out->result.reason[0] = '\0';
    memset(&out->result.attr, 0, sizeof out->result.attr);
    out->result.attr.best = out->result.attr.runner_up = -1;
    out->result.attr.total = out->result.attr.covariance = NAN;
}

/* Lists the children in [lo, hi) whose probes are not enabled; returns how many. */
static size_t list_disabled(const struct search_input *in, size_t lo, size_t hi,
                            struct search_step *out) {
    out->n_enable = 0;
    for (size_t i = lo; i < hi; i++) {
        if (!in->children[i].enabled) {
            out->enable[out->n_enable++] = i;
        }
    }
    return out->n_enable;
}

static void reason_enable(const struct search_input *in, struct search_step *out, const char *why) {
    char name[DQ_DIAGRAM_MAX_NAME + 1];
    search__child_name(in, out->enable[0], name, sizeof name);
    snprintf(out->result.reason, sizeof out->result.reason, "enable %zu child%s of %s (%s%s): %s",
             out->n_enable, out->n_enable == 1 ? "" : "ren",
             in->name && in->name[0] ? in->name : "the node", name, out->n_enable > 1 ? ", …" : "",
             why);
}

/* A decision becomes the step's answer (need samples stays a wait). */
static void finish(struct search_step *out) {
    out->action = out->result.verdict == SEARCH_NEED_SAMPLES ? SEARCH_WAIT : SEARCH_DECIDED;
}

/* ---- children ------------------------------------------------------------------------- */

static int children_step(const struct search_input *in, const struct search_params *p,
                         struct search_state *st, struct search_step *out) {
    if (list_disabled(in, 0, in->n_children, out) > 0) {
        if (in->exhausted) {
            out->n_enable = 0;
            out->action = SEARCH_DECIDED;
            out->result.verdict = SEARCH_INCONCLUSIVE;
            snprintf(out->result.reason, sizeof out->result.reason,
                     "inconclusive at %s: out of budget or time before its children could be "
                     "enabled",
                     in->name && in->name[0] ? in->name : "the node");
            return DQ_OK;
        }
        out->action = SEARCH_ENABLE;
        st->steps++;
        reason_enable(in, out, "the strategy `children` weighs every child at once");
        return DQ_OK;
    }
    int rc = search_evaluate(in, p, &out->result);
    if (rc == DQ_OK) {
        finish(out);
    }
    return rc;
}

/* ---- bisect ----------------------------------------------------------------------------- */

/* 1 when the problem has an additive law over a sequence's stages. */
static int bisectable(const struct search_input *in, const struct search_params *p) {
    int seq = in->kind == DQ_NODE_SEQUENCE || in->kind == DQ_NODE_REFERENCE;
    return seq && in->n_children >= p->bisect_min_children && in->problem != SEARCH_DIVERGENCE;
}

/* One stage's additive quantity: mean, variance, or −log(1 − lost); and its half-width. */
static void additive(const struct search_stats *s, enum search_problem prob, double z, double *v,
                     double *hw) {
    switch (prob) {
    case SEARCH_VARIANCE: {
        *v = s->n_ok > 0 ? s->variance : 0.0;
        double n = s->n_ok > 1 ? (double)(s->n_ok - 1) : 1.0;
        *hw = z * *v * sqrt(2.0 / n);
        return;
    }
    case SEARCH_LOST: {
        double q = search_stats_lost(s);
        uint64_t n = search_stats_instances(s);
        q = q < 1.0 - 1e-12 ? q : 1.0 - 1e-12;
        *v = -log1p(-q);
        *hw = n > 0 ? z * sqrt(q * (1.0 - q) / (double)n) / (1.0 - q) : 0.0;
        return;
    }
    default:
        *v = s->n_ok > 0 ? s->mean : 0.0;
        *hw = s->n_ok > 0 ? z * sqrt(s->variance / (double)s->n_ok) : 0.0;
        return;
    }
}

static void moments_of(const struct search_stats *s, struct dq_moments *m) {
    memset(m, 0, sizeof *m);
    m->mass = 1.0;
    m->mean = s->n_ok > 0 ? s->mean : 0.0;
    m->variance = s->n_ok > 0 ? s->variance : 0.0;
}

/*
 * The total of the children in [lo, hi) with its half-width: summed when all are
 * measured, else inferred as X minus every child outside the block.
 */
static int block_total(const struct search_input *in, const struct search_params *p,
                       const unsigned char *measured, size_t lo, size_t hi, double *total,
                       double *hw, int *inferred) {
    double hw2 = 0.0, v, h;
    int all = 1;
    for (size_t i = lo; i < hi; i++) {
        all &= measured[i];
    }
    *inferred = !all;
    if (all) {
        *total = 0.0;
        for (size_t i = lo; i < hi; i++) {
            additive(&in->children[i].stats, in->problem, p->z, &v, &h);
            *total += v;
            hw2 += h * h;
        }
        *hw = sqrt(hw2);
        return DQ_OK;
    }
    /* Inference: X minus the children outside [lo, hi), which the caller made sure are
     * all measured. */
    additive(&in->stats, in->problem, p->z, &v, &h);
    hw2 = h * h;
    if (in->problem == SEARCH_LOST) {
        double t = v;
        for (size_t i = 0; i < in->n_children; i++) {
            if (i < lo || i >= hi) {
                additive(&in->children[i].stats, in->problem, p->z, &v, &h);
                t -= v;
                hw2 += h * h;
            }
        }
        *total = t > 0.0 ? t : 0.0;
        *hw = sqrt(hw2);
        return DQ_OK;
    }
    struct dq_moments parent, obs[SEARCH_MAX_CHILDREN];
    size_t m = 0;
    moments_of(&in->stats, &parent);
    for (size_t i = 0; i < in->n_children; i++) {
        if (i < lo || i >= hi) {
            moments_of(&in->children[i].stats, &obs[m++]);
            additive(&in->children[i].stats, in->problem, p->z, &v, &h);
            hw2 += h * h;
        }
    }
    double mean, var, cov;
    int rc = dq_infer_unobserved(&parent, obs, m, &mean, &var, &cov);
    if (rc != DQ_OK) {
        return rc;
    }
    *total = in->problem == SEARCH_VARIANCE ? var : mean;
    *hw = sqrt(hw2);
    return DQ_OK;
}

static void fmt_avg(const struct search_input *in, double v, double hw, char *buf, size_t cap) {
    double f;
    const char *u;
    switch (in->problem) {
    case SEARCH_VARIANCE:
        u = search__time_unit(sqrt(fabs(v)), &f);
        search__fmt_pm(v, hw, f * f, u, "²", buf, cap);
        return;
    case SEARCH_LOST:
        /* Small rates: −log(1 − q) ≈ q, shown as a percentage. */
        snprintf(buf, cap, "%.3g %% ± %.2g lost", 100.0 * -expm1(-v), 100.0 * hw);
        return;
    default:
        u = search__time_unit(v, &f);
        search__fmt_pm(v, hw, f, u, "", buf, cap);
        return;
    }
}

static void range_name(const struct search_input *in, size_t lo, size_t hi, char *buf, size_t cap) {
    char a[DQ_DIAGRAM_MAX_NAME + 1], b[DQ_DIAGRAM_MAX_NAME + 1];
    search__child_name(in, lo, a, sizeof a);
    if (hi - lo == 1) {
        snprintf(buf, cap, "%s", a);
        return;
    }
    search__child_name(in, hi - 1, b, sizeof b);
    snprintf(buf, cap, "%s … %s", a, b);
}

/* What one turn of bisect_step's loop came to: return (out is set; *rc says what to
 * return), out of budget or time (inconclusive), or narrowed (go on). */
enum bis { BIS_RETURN, BIS_OUT, BIS_NARROWED };

/* One suspect left: measure it, then decide among the measured children. */
static enum bis bisect_last(const struct search_input *in, const struct search_params *p,
                            struct search_state *st, const unsigned char *measured,
                            struct search_step *out, int *rc) {
    size_t lo = st->lo;
    *rc = DQ_OK;
    if (!in->children[lo].enabled) {
        if (in->exhausted) {
            return BIS_OUT;
        }
        out->enable[0] = lo;
        out->n_enable = 1;
        out->action = SEARCH_ENABLE;
        st->steps++;
        reason_enable(in, out,
                      "bisection narrowed the problem to it; confirm it with its own numbers");
        return BIS_RETURN;
    }
    if (!measured[lo]) {
        unsigned char only[SEARCH_MAX_CHILDREN] = {0};
        only[lo] = 1;
        search__check_samples(in, p, only, &out->result);
        finish(out);
        return BIS_RETURN;
    }
    *rc = search__decide(in, p, measured, &out->result);
    if (*rc == DQ_OK) {
        finish(out);
    }
    return BIS_RETURN;
}

/* Inferring the second half [mid, hi) needs X and every child outside it measured; those
 * outside the range normally are (see the invariant above), unless a probe was disabled
 * meanwhile. BIS_NARROWED when they are (nothing to do), else what to do first. */
static enum bis bisect_others(const struct search_input *in, const struct search_params *p,
                              struct search_state *st, const unsigned char *measured,
                              struct search_step *out, const char *xname) {
    unsigned char need[SEARCH_MAX_CHILDREN] = {0};
    size_t k = 0, n_need = 0;
    for (size_t i = 0; i < in->n_children; i++) {
        if ((i < st->lo || i >= st->hi) && !measured[i]) {
            need[i] = 1;
            n_need++;
            if (!in->children[i].enabled) {
                out->enable[k++] = i;
            }
        }
    }
    if (k > 0 && !in->exhausted) {
        out->n_enable = k;
        out->action = SEARCH_ENABLE;
        st->steps++;
        reason_enable(in, out,
                      "bisection infers the suspects from the others, which must all be "
                      "measured");
        return BIS_RETURN;
    }
    if (n_need > 0) {
        search__check_samples(in, p, need, &out->result);
        finish(out);
        return BIS_RETURN;
    }
    if (!search__enough(&in->stats, p)) {
        out->result.verdict = in->exhausted ? SEARCH_INCONCLUSIVE : SEARCH_NEED_SAMPLES;
        snprintf(out->result.reason, sizeof out->result.reason,
                 "%s at %s: it has too few samples itself to infer the unmeasured half",
                 in->exhausted ? "inconclusive" : "waiting for samples", xname);
        finish(out);
        return BIS_RETURN;
    }
    return BIS_NARROWED;
}

/* The halves [lo, mid) and [mid, hi) compared by their per-child averages (so that the
 * halves of an odd range compare fairly): the range moves to the worse one, or a tie is
 * diffuse at X (waiting for more windows first). */
static enum bis bisect_compare(const struct search_input *in, const struct search_params *p,
                               struct search_state *st, const unsigned char *measured,
                               struct search_step *out, const char *xname, int *rc) {
    size_t lo = st->lo, hi = st->hi, mid = lo + (hi - lo) / 2;
    double ta, ha, tb, hb;
    int ia, ib;
    *rc = block_total(in, p, measured, lo, mid, &ta, &ha, &ia);
    if (*rc == DQ_OK) {
        *rc = block_total(in, p, measured, mid, hi, &tb, &hb, &ib);
    }
    if (*rc != DQ_OK) {
        return BIS_RETURN;
    }
    double na = (double)(mid - lo), nb = (double)(hi - mid);
    double aa = ta / na, ab = tb / nb, haa = ha / na, hab = hb / nb;
    if (aa - ab > haa + hab) {
        st->hi = mid;
        return BIS_NARROWED;
    }
    if (ab - aa > haa + hab) {
        st->lo = mid;
        return BIS_NARROWED;
    }
    uint32_t w = in->stats.windows;
    for (size_t i = lo; i < mid; i++) {
        w = in->children[i].stats.windows < w ? in->children[i].stats.windows : w;
    }
    char ra[2 * DQ_DIAGRAM_MAX_NAME + 8], rb[2 * DQ_DIAGRAM_MAX_NAME + 8];
    char va[96], vb[96];
    range_name(in, lo, mid, ra, sizeof ra);
    range_name(in, mid, hi, rb, sizeof rb);
    fmt_avg(in, aa, haa, va, sizeof va);
    fmt_avg(in, ab, hab, vb, sizeof vb);
    int wait = !in->exhausted && w < p->diffuse_min_windows;
    out->result.verdict = wait ? SEARCH_NEED_SAMPLES : SEARCH_DIFFUSE;
    out->result.reason[0] = '\0';
    search__append(out->result.reason, sizeof out->result.reason,
                   "%s at %s: neither half dominates its %s: %s average %s per child%s, %s "
                   "average %s per child%s; their 95 %% intervals overlap",
                   wait ? "waiting for more windows" : "diffuse", xname,
                   search_problem_name(in->problem), ra, va, ia ? " (inferred)" : "", rb, vb,
                   ib ? " (inferred)" : "");
    finish(out);
    return BIS_RETURN;
}

/* One turn: the range [lo, hi) with more than one suspect. */
static enum bis bisect_turn(const struct search_input *in, const struct search_params *p,
                            struct search_state *st, const unsigned char *measured,
                            struct search_step *out, const char *xname, int *rc) {
    size_t lo = st->lo, hi = st->hi, mid = lo + (hi - lo) / 2;
    *rc = DQ_OK;
    /* The first half must be measured directly. */
    if (list_disabled(in, lo, mid, out) > 0) {
        if (in->exhausted) {
            return BIS_OUT;
        }
        out->action = SEARCH_ENABLE;
        st->steps++;
        char r[2 * DQ_DIAGRAM_MAX_NAME + 8], why[2 * DQ_DIAGRAM_MAX_NAME + 96];
        range_name(in, mid, hi, r, sizeof r);
        why[0] = '\0';
        search__append(why, sizeof why,
                       "bisection: the first half of the suspects; %s is inferred from %s "
                       "minus the measured children",
                       r, xname);
        reason_enable(in, out, why);
        return BIS_RETURN;
    }
    unsigned char need[SEARCH_MAX_CHILDREN] = {0};
    size_t n_need = 0;
    for (size_t i = lo; i < mid; i++) {
        need[i] = 1;
        n_need += !measured[i];
    }
    if (n_need > 0) {
        search__check_samples(in, p, need, &out->result);
        finish(out);
        return BIS_RETURN;
    }
    int second_all = 1;
    for (size_t i = mid; i < hi; i++) {
        second_all &= measured[i];
    }
    if (!second_all) {
        enum bis b = bisect_others(in, p, st, measured, out, xname);
        if (b != BIS_NARROWED) {
            return b;
        }
    }
    return bisect_compare(in, p, st, measured, out, xname, rc);
}

static int bisect_step(const struct search_input *in, const struct search_params *p,
                       struct search_state *st, struct search_step *out) {
    if (!bisectable(in, p)) {
        return children_step(in, p, st, out);
    }
    const char *xname = in->name && in->name[0] ? in->name : "the node";
    unsigned char measured[SEARCH_MAX_CHILDREN];
    for (size_t i = 0; i < in->n_children; i++) {
        measured[i] = (unsigned char)search__enough(&in->children[i].stats, p);
    }
    for (;;) {
        int rc = DQ_OK;
        enum bis b = st->hi - st->lo == 1 ? bisect_last(in, p, st, measured, out, &rc)
                                          : bisect_turn(in, p, st, measured, out, xname, &rc);
        if (b == BIS_RETURN) {
            return rc;
        }
        if (b == BIS_OUT) {
            break;
        }
        st->steps++;
    }
    out->action = SEARCH_DECIDED;
    out->n_enable = 0; /* what it would have enabled next is moot */
    out->result.verdict = SEARCH_INCONCLUSIVE;
    snprintf(out->result.reason, sizeof out->result.reason,
             "inconclusive at %s: out of budget or time while bisecting (suspects narrowed to "
             "%zu of %zu children)",
             xname, st->hi - st->lo, in->n_children);
    return DQ_OK;
}

/* ---- the interface ----------------------------------------------------------------------- */

static const struct search_strategy strategies[] = {
    {SEARCH_CHILDREN, "children", children_step},
    {SEARCH_BISECT, "bisect", bisect_step},
};

const struct search_strategy *search_strategy_get(enum search_strategy_id id) {
    return (unsigned)id < sizeof strategies / sizeof strategies[0] ? &strategies[id] : NULL;
}

void search_state_init(struct search_state *st, enum search_strategy_id strategy,
                       size_t n_children) {
    if (!st) {
        return;
    }
    st->strategy = strategy;
    st->lo = 0;
    st->hi = n_children;
    st->steps = 0;
}

int search_step(const struct search_input *in, const struct search_params *p,
                struct search_state *st, struct search_step *out) {
    if (!in || !p || !st || !out) {
        return dq_fail(DQ_EINVAL, "search_step needs input, parameters, state and output");
    }
    if (in->n_children == 0 || in->n_children > SEARCH_MAX_CHILDREN || !in->children) {
        return dq_fail(DQ_EINVAL, "a node under investigation needs 1 to %d children (has %zu)",
                       SEARCH_MAX_CHILDREN, in->n_children);
    }
    if (st->lo >= st->hi || st->hi > in->n_children) {
        return dq_fail(DQ_EINVAL, "search range [%zu, %zu) does not fit %zu children", st->lo,
                       st->hi, in->n_children);
    }
    const struct search_strategy *s = search_strategy_get(st->strategy);
    if (!s) {
        return dq_fail(DQ_EINVAL, "unknown strategy %d", (int)st->strategy);
    }
    step_reset(out);
    return s->step(in, p, st, out);
}
