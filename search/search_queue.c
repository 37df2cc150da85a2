/*
 * search_queue.c: where a node saturates (dq_search.h, "queues"): the M/M/c formulas, one
 * stage's utilisation from what was measured of it, the bottleneck and co-bottlenecks, the
 * rate at which the root's QTA fails (a what-if over the stages' stretched ΔQs), the onset
 * of divergence, and the sentences. Everything here only computes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_search.h"
#include "search_internal.h"

/* ---- M/M/c ----------------------------------------------------------------------------- */

double search_erlang_c(int c, double a) {
    if (!(a > 0.0)) {
        return 0.0;
    }
    if (a >= (double)c) {
        return 1.0;
    }
    double term = 1.0, sum = 1.0; /* Σ_{k<c} a^k/k! */
    for (int k = 1; k < c; k++) {
        term *= a / (double)k;
        sum += term;
    }
    double last = term * a / (double)c; /* a^c/c! */
    double top = last * (double)c / ((double)c - a);
    return top / (sum + top);
}

double search_mmc_busy(int c, double rho) {
    if (rho >= 1.0) {
        return 1.0;
    }
    double a = (double)c * rho, term = 1.0, sum = 1.0;
    for (int k = 1; k < c; k++) {
        term *= a / (double)k;
        sum += term;
    }
    double last = term * a / (double)c / (1.0 - rho); /* a^c / (c! (1 − ρ)) */
    return 1.0 - 1.0 / (sum + last);
}

/* The ρ in [0, 1] at which f(c, ρ) reaches target, f increasing (bisection). */
static double rho_where(double (*f)(int, double), int c, double target) {
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        if (f(c, mid) < target) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

double search_mmc_rho_of_busy(int c, double busy) {
    if (!(busy > 0.0)) {
        return 0.0;
    }
    if (busy >= 1.0) {
        return 1.0;
    }
    return rho_where(search_mmc_busy, c, busy);
}

double search_mmc_l(int c, double rho) {
    if (rho >= 1.0) {
        return INFINITY;
    }
    return (double)c * rho + search_erlang_c(c, (double)c * rho) * rho / (1.0 - rho);
}

double search_mmc_rho_of_l(int c, double l) {
    if (!(l > 0.0)) {
        return 0.0;
    }
    return rho_where(search_mmc_l, c, l);
}

double search_mmc_wait_factor(int c, double rho) {
    if (rho >= 1.0) {
        return INFINITY;
    }
    return search_erlang_c(c, (double)c * rho) / ((double)c * (1.0 - rho));
}

/* ---- one stage ---------------------------------------------------------------------------- */

/* Two readings of the M/M/c model: the time the station holds any request (its busy
 * fraction) is 1 − P0(c, ρ), and the mean number in it (Little's law, L = λW) is cρ +
 * C(c, cρ)·ρ/(1 − ρ). Arrivals more regular than Poisson leave the station empty less
 * often (the first reads high) and queue less (the second reads low); a queue's length also
 * wanders for seconds near saturation, so its mean over a few windows is noisy. The
 * estimate is their mean; its half-width adds the mean's own error and half their
 * disagreement (as the model's), in quadrature. */
static void estimate_mmc(const struct search_stage_obs *o, double z, struct search_stage *st) {
    st->method = "mmc";
    double rb = search_mmc_rho_of_busy(st->servers, o->busy);
    double rl = search_mmc_rho_of_l(st->servers, st->lambda * st->w);
    double lb = search_mmc_rho_of_busy(st->servers, o->busy - z * o->busy_se);
    double hb = search_mmc_rho_of_busy(st->servers, o->busy + z * o->busy_se);
    double ll = search_mmc_rho_of_l(st->servers, st->lambda * (st->w - z * o->w_se));
    double hl = search_mmc_rho_of_l(st->servers, st->lambda * (st->w + z * o->w_se));
    st->rho = 0.5 * (rb + rl);
    st->rho_busy = rb;
    st->rho_little = rl;
    double se_b = (hb - lb) / (2.0 * z), se_l = (hl - ll) / (2.0 * z);
    double hw = hypot(z * 0.5 * hypot(se_b, se_l), 0.5 * (rb - rl));
    st->rho_lo = st->rho - hw;
    st->rho_hi = st->rho + hw > 1.0 ? 1.0 : st->rho + hw;
    st->service = st->lambda > 0 ? st->rho * st->servers / st->lambda : NAN;
}

int search_servers_observed(double overtaken, double instances, double lambda, double w,
                            double busy) {
    if (!(overtaken >= 3) || !(instances > 0) || overtaken < 0.01 * instances) {
        return 0;
    }
    double in_station = busy > 0 && lambda > 0 && w > 0 ? lambda * w / busy : 0.0;
    int c = (int)floor(in_station + 0.5);
    return c > 2 ? c : 2;
}

void search_stage_estimate(const struct search_stage_obs *o, double z, struct search_stage *st) {
    st->lambda = o->lambda;
    st->rho_busy = st->rho_little = NAN;
    st->w = o->w;
    st->share = o->lambda_root > 0 ? st->lambda / o->lambda_root : NAN;
    /* the quiet windows are a low-load baseline only when their load was well below now's */
    double wq = o->quiet_w;
    int quiet = isfinite(wq) && o->quiet_rate <= 0.5 * st->lambda;
    st->servers = o->servers > 0 ? o->servers : 1;
    st->servers_from = o->servers > 0 ? "config" : "assumed";
    if (o->servers <= 0 && quiet && o->busy > 0.05) {
        /* servers in service on average (λ·S) over the time any is busy: no fewer than
         * that many servers; clearly above one, it is a pool */
        double ratio = st->lambda * wq / o->busy;
        if (ratio >= 1.5) {
            st->servers = (int)ceil(ratio - 0.1);
            st->servers_from = "inferred";
        }
    }
    if (o->servers <= 0 && st->servers == 1 && o->servers_observed >= 2) {
        st->servers = o->servers_observed;
        st->servers_from = "observed";
    }
    if (st->servers == 1) {
        /* one FIFO server is busy exactly while a request is in the station */
        st->method = "busy";
        st->rho = o->busy;
        double hw = z * o->busy_se; /* the windows' own scatter: a queue's load comes in bursts */
        st->rho_lo = o->busy - hw;
        st->rho_hi = o->busy + hw;
        st->service =
            o->completions > 0 ? o->busy * o->windows * o->window_s / o->completions : NAN;
    } else if (quiet) {
        st->method = "baseline";
        st->service = wq;
        st->rho = st->lambda * wq / st->servers;
        double rel =
            hypot(wq > 0 ? o->quiet_se / wq : 0, st->lambda > 0 ? o->lambda_se / st->lambda : 0);
        st->rho_lo = st->rho * (1 - z * rel);
        st->rho_hi = st->rho * (1 + z * rel);
    } else {
        estimate_mmc(o, z, st);
    }
    st->rho_lo = st->rho_lo > 0 ? st->rho_lo : 0;
    st->sat = st->service > 0 ? st->servers / st->service : NAN;
    st->sat_root = st->share > 0 ? st->sat / st->share : NAN;
}

/* ---- the bottleneck ------------------------------------------------------------------------ */

/*
 * 1 when stage j's ρ is clearly below the bottleneck b's: their difference beyond SEARCH_Z
 * standard errors of it (each stage's from its interval, z standard errors a side). A lone
 * bottleneck is a culprit named: it takes the adaptive loop's evidence for any claim, not
 * only intervals that miss each other.
 */
static int clearly_below(const struct search_stage *j, const struct search_stage *b, double z) {
    double sj = (j->rho_hi - j->rho_lo) / (2.0 * z), sb = (b->rho_hi - b->rho_lo) / (2.0 * z);
    if (!isfinite(sj) || !isfinite(sb)) {
        return j->rho_hi < b->rho_lo;
    }
    return b->rho - j->rho > SEARCH_Z * hypot(sj, sb);
}

int search_overload_weigh(struct search_overload *r, double z) {
    r->bottleneck = -1;
    r->n_co = 0;
    for (int j = 0; j < r->n; j++) {
        if (isfinite(r->st[j].rho) &&
            (r->bottleneck < 0 || r->st[j].rho > r->st[r->bottleneck].rho)) {
            r->bottleneck = j;
        }
    }
    if (r->bottleneck < 0) {
        return dq_fail(DQ_ESTATE, "no stage to weigh");
    }
    const struct search_stage *b = &r->st[r->bottleneck];
    r->saturation = b->sat_root;
    for (int j = 0; j < r->n; j++) {
        struct search_stage *st = &r->st[j];
        st->co = j != r->bottleneck && !clearly_below(st, b, z);
        r->n_co += st->co;
        if (st->co && st->sat_root < r->saturation) {
            r->saturation = st->sat_root;
        }
    }
    return DQ_OK;
}

enum search_overload_next search_overload_next(const struct search_overload *r, int exhausted) {
    const struct search_stage *b = &r->st[r->bottleneck];
    /* precise enough to name a bottleneck: its utilisation known to ±precision (a queue near
     * saturation needs seconds of busy periods for that), or out of time */
    if (!exhausted && b->rho_hi - b->rho_lo > 2.0 * SEARCH_OVERLOAD_PRECISION) {
        return SEARCH_OV_WAIT;
    }
    return r->n_co == 0 && r->bottleneck >= r->first_current && b->has_children ? SEARCH_OV_DESCEND
                                                                                : SEARCH_OV_VERDICT;
}

/* ---- what-ifs -------------------------------------------------------------------------------- */

double search_sojourn_growth(const struct search_stage *st, double rho_then) {
    if (rho_then >= 1.0) {
        return INFINITY;
    }
    double now = st->rho < 0.999 ? st->rho : 0.999;
    double wait = st->w - st->service;
    double g_now = search_mmc_wait_factor(st->servers, now);
    double g_then = search_mmc_wait_factor(st->servers, rho_then);
    double then;
    if (wait > 0 && g_now > 0) {
        then = st->service + wait * g_then / g_now;
    } else {
        then = st->service * (1.0 + g_then);
    }
    return st->w > 0 ? then / st->w : 1.0;
}

int search_stretch(const struct dq *d, double k, struct dq **out) {
    int rc = dq_never(d->k, d->n, out);
    if (rc) {
        return rc;
    }
    for (int i = 0; i < d->n; i++) {
        double j = floor((double)i * k + 0.5);
        if (j < (double)d->n) {
            (*out)->pdf[(int)j] += d->pdf[i];
        }
    }
    return DQ_OK;
}

/* 1 when the root's QTA fails at root arrivals lambda, 0 when it holds, −1 when it cannot
 * be told. */
static int qta_fails_at(struct dq_eval *ev, int root, const struct search_overload *r,
                        const struct dq_qta *qta, double lambda) {
    struct dq **made = calloc((size_t)r->n, sizeof *made);
    if (!made) {
        return -1;
    }
    int fails = -1;
    dq_eval_clear_observed(ev);
    for (int j = 0; j < r->n; j++) {
        const struct search_stage *st = &r->st[j];
        if (!st->obs || !(st->service > 0) || !isfinite(st->rho)) {
            goto out;
        }
        double k = search_sojourn_growth(st, st->rho * lambda / r->lambda_root);
        int rc = isfinite(k) ? search_stretch(st->obs, k, &made[j])
                             : dq_never(st->obs->k, st->obs->n, &made[j]);
        if (rc || dq_eval_set_observed_by_name(ev, st->name, made[j]) != DQ_OK) {
            goto out;
        }
    }
    if (dq_eval_run(ev) == DQ_OK) {
        const struct dq *d = dq_eval_calculated(ev, root);
        struct dq_qta_result q;
        if (d && dq_qta_eval(d, qta, &q) == DQ_OK) {
            fails = !q.ok;
        }
    }
out:
    dq_eval_clear_observed(ev);
    for (int j = 0; j < r->n; j++) {
        dq_destroy(made[j]);
    }
    free(made);
    return fails;
}

double search_qta_rate(struct dq_eval *ev, int root, const struct search_overload *r,
                       const struct dq_qta *qta) {
    if (!ev || root < 0 || !(r->lambda_root > 0) || !isfinite(r->saturation)) {
        return NAN;
    }
    double rate = NAN;
    int now = qta_fails_at(ev, root, r, qta, r->lambda_root);
    if (now == 1) {
        rate = r->lambda_root; /* failing already */
    } else if (now == 0 && qta_fails_at(ev, root, r, qta, r->saturation * 0.999) == 1) {
        double lo = r->lambda_root, hi = r->saturation * 0.999;
        for (int i = 0; i < 30 && hi - lo > 1e-3 * hi; i++) {
            double mid = 0.5 * (lo + hi);
            if (qta_fails_at(ev, root, r, qta, mid) == 1) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        rate = hi;
    }
    return rate;
}

double search_divergence_onset(double *rate, int *div, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        total += div[i];
    }
    if (total < 3) {
        return NAN;
    }
    for (int i = 1; i < n; i++) { /* by rate (insertion: at most a ring) */
        double r = rate[i];
        int v = div[i], j = i - 1;
        while (j >= 0 && rate[j] > r) {
            rate[j + 1] = rate[j];
            div[j + 1] = div[j];
            j--;
        }
        rate[j + 1] = r;
        div[j + 1] = v;
    }
    int above = 0, diverging = 0; /* from the top down: the lowest start of a mostly-diverging
                                     tail */
    double onset = NAN;
    for (int i = n - 1; i >= 0; i--) {
        above++;
        diverging += div[i];
        if (div[i] && 2 * diverging >= above) {
            onset = rate[i];
        }
    }
    return onset;
}

/* ---- sentences ------------------------------------------------------------------------------- */

const char *search_overload_at(const char *node, const char *focus,
                               const struct search_overload *r) {
    if (r->n_co == 0) {
        return r->st[r->bottleneck].name;
    }
    int all_here = r->bottleneck >= r->first_current;
    for (int j = 0; j < r->first_current; j++) {
        all_here &= !r->st[j].co;
    }
    return all_here ? focus : node;
}

void search_stage_words(const struct search_stage *st, char *buf, size_t cap) {
    char svc[DQ_DURATION_TEXT];
    snprintf(buf, cap, "%s: ρ %.2f (%.2f – %.2f; %s, %d server%s%s), service %s, %.0f/s", st->name,
             st->rho, st->rho_lo, st->rho_hi,
             strcmp(st->method, "busy") == 0       ? "busy time"
             : strcmp(st->method, "baseline") == 0 ? "quiet-window service time"
                                                   : "M/M/c from Little's law",
             st->servers, st->servers == 1 ? "" : "s",
             strcmp(st->servers_from, "config") == 0     ? ""
             : strcmp(st->servers_from, "inferred") == 0 ? " inferred"
             : strcmp(st->servers_from, "observed") == 0 ? " observed"
                                                         : " assumed",
             search__dur(st->service, svc, sizeof svc), st->lambda);
}

void search_overload_reason(const char *node, const char *focus, const struct search_overload *r,
                            char *buf, size_t cap) {
    const struct search_stage *b = &r->st[r->bottleneck];
    char words[400];
    search_stage_words(b, words, sizeof words);
    buf[0] = '\0';
    if (r->n_co > 0) {
        search__append(buf, cap, "overload at %s: co-bottlenecks %s",
                       search_overload_at(node, focus, r), b->name);
        for (int j = 0; j < r->n; j++) {
            if (r->st[j].co) {
                search__append(buf, cap, ", %s (ρ %.2f)", r->st[j].name, r->st[j].rho);
            }
        }
        search__append(buf, cap, " (their ρ not clearly below the bottleneck's); %s", words);
    } else {
        search__append(buf, cap, "overload at %s: the bottleneck is %s", node, words);
    }
    if (isfinite(r->saturation) && r->lambda_root > 0) {
        search__append(buf, cap, "; %s takes %.0f/s and saturates at %.0f/s (%.2f× today)", node,
                       r->lambda_root, r->saturation, r->saturation / r->lambda_root);
    }
    if (isfinite(r->qta_rate)) {
        search__append(buf, cap, "; its QTA fails %s %.0f/s",
                       r->qta_rate <= r->lambda_root ? "already, at" : "from", r->qta_rate);
    }
    if (isfinite(r->onset)) {
        search__append(buf, cap, "; observed and calculated parted from %.0f/s", r->onset);
    }
}
