/*
 * overload.c: where a node saturates. Each child of an overload investigation's focus is
 * a *stage*: a station with an arrival rate λ (its instances per second), a mean sojourn
 * W (waiting and service), c servers and a service time S. Its utilisation ρ = λ·S / c
 * comes from, in this order of preference:
 *
 *   busy      one server (configured, or assumed when nothing says otherwise): the
 *             fraction of the time it had a request in progress (the union of its
 *             instances' intervals, kept per window by the core). A single FIFO server is
 *             busy exactly then, whatever its service law; S = busy time / completions.
 *   baseline  several servers and quiet windows (its lowest-rate windows, kept across
 *             restarts) at under half today's rate: S = their mean sojourn (at low load
 *             there is hardly any wait).
 *   mmc       several servers and no such baseline: the M/M/c model read twice, from
 *             the busy fraction (the time the station holds any request: 1 − P0(c, ρ))
 *             and from the mean number in it (Little's law, L = λ·W = cρ + C(c, cρ)·ρ/
 *             (1 − ρ), Erlang's C the probability of waiting), each solved for ρ; the
 *             mean of the two, the interval from the mean's error and half their
 *             disagreement. It assumes Poisson arrivals and exponential service; their
 *             departures pull the two readings apart in opposite directions.
 *
 * The servers come from the configuration; without, a quiet baseline infers a pool when
 * λ·S (servers in service on average) clearly exceeds the busy fraction (the time any is
 * in service): c ≥ λ·S / busy, a lower bound. Else one server is assumed, and said.
 *
 * A stage saturates at c/S arrivals per second; the investigation's node (the root)
 * saturates when its arrivals, of which the stage sees the share λ_stage/λ_root, bring
 * the stage there. The bottleneck is the stage with the highest ρ, over the focus's
 * children and the stages of the levels above it (an investigation descends into a lone
 * bottleneck that has finer probes); stages whose ρ is not clearly below the bottleneck's
 * (by ADAPT_Z standard errors of the difference) are co-bottlenecks. With a QTA on the root, the
 * rate at which it will fail is found by evaluating the diagram over the stages' observed ΔQs, each
 * stretched as its queueing model says its sojourn grows at that rate (a what-if on live data). The
 * onset of divergence is the lowest rate from which the root's observed and calculated ΔQs mostly
 * differ, when its windows show it.
 *
 * Everything here only computes: no effect, no I/O.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* Erlang's C: the probability that an arrival waits at c servers with offered load a =
 * λS (a < c). */
static double erlang_c(int c, double a) {
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

/* The probability that an M/M/c station at utilisation rho holds any request. */
static double mmc_busy(int c, double rho) {
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

/* The M/M/c utilisation at which the station holds a request a fraction `busy` of the
 * time (bisection). */
static double mmc_rho_of_busy(int c, double busy) {
    if (!(busy > 0.0)) {
        return 0.0;
    }
    if (busy >= 1.0) {
        return 1.0;
    }
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        if (mmc_busy(c, mid) < busy) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

/* The mean number in an M/M/c station at utilisation rho. */
static double mmc_l(int c, double rho) {
    if (rho >= 1.0) {
        return INFINITY;
    }
    return (double)c * rho + erlang_c(c, (double)c * rho) * rho / (1.0 - rho);
}

/* The M/M/c utilisation whose mean number in the station is l (bisection). */
static double mmc_rho_of_l(int c, double l) {
    if (!(l > 0.0)) {
        return 0.0;
    }
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        if (mmc_l(c, mid) < l) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

/* The M/M/c queueing factor of the wait: Wq = S·g(c, ρ), g = C(c, cρ) / (c (1 − ρ)). */
static double wait_factor(int c, double rho) {
    if (rho >= 1.0) {
        return INFINITY;
    }
    return erlang_c(c, (double)c * rho) / ((double)c * (1.0 - rho));
}

/* Arrivals over windows from ≤ wid < to (every window of the range counts, empty or not),
 * and the busy fraction's mean and standard error over those windows. */
static void rates_of(const struct probe *p, int64_t from, int64_t to, double window_s,
                     double *lambda, double *busy, double *busy_se, double *completions,
                     double *windows, double *lambda_se) {
    double n = 0.0, n2 = 0.0, b = 0.0, done = 0.0;
    double f_of[1024]; /* the newest 1,024 windows: their scatter */
    int nf = 0;
    if (p && p->ring_len > 0 && p->ring_len == p->ring_cap) {
        /* a full ring has let older windows go: count from the oldest it still holds */
        int64_t oldest = probes_ring_get((struct probe *)p, p->ring_len - 1)->wid;
        from = oldest > from ? oldest : from;
    }
    for (int i = 0; p && i < p->ring_len; i++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, i);
        if (w->wid < from) {
            break;
        }
        if (w->wid >= to) {
            continue;
        }
        double cnt = (double)(w->ok + w->fa + w->to + w->out);
        n += cnt;
        n2 += cnt * cnt;
        done += (double)(w->ok + w->fa);
        double f = w->busy / window_s;
        b += f;
        if (nf < (int)(sizeof f_of / sizeof f_of[0])) {
            f_of[nf++] = f;
        }
    }
    double k = (double)(to - from); /* a window without data was idle */
    while (nf < k && nf < (int)(sizeof f_of / sizeof f_of[0])) {
        f_of[nf++] = 0.0;
    }
    *windows = k;
    *lambda = k > 0 ? n / (k * window_s) : 0.0;
    *completions = done;
    *busy = k > 0 ? b / k : 0.0;
    /* the windows' scatter, widened for the few windows it rests on (search_series_se) */
    *busy_se = search_series_se(f_of, nf);
    double mc = k > 0 ? n / k : 0.0; /* the windows' counts: their own scatter */
    double vc = k > 1 ? (n2 / k - mc * mc) * k / (k - 1.0) : 0.0;
    *lambda_se = k > 1 && vc > 0 ? sqrt(vc / k) / window_s : 0.0;
}

/* The quiet windows' pooled mean sojourn, its standard error and their mean rate; NAN
 * when there are fewer than three. */
static void quiet_of(const struct probe *p, double *w, double *se, double *rate) {
    double n = 0.0, sum = 0.0, r = 0.0;
    for (int i = 0; i < p->n_quiet; i++) {
        n += (double)p->quiet[i].n;
        sum += (double)p->quiet[i].n * p->quiet[i].mean;
        r += p->quiet[i].rate;
    }
    if (p->n_quiet < 3 || !(n > 0)) {
        *w = *se = *rate = NAN;
        return;
    }
    *w = sum / n;
    double ss = 0.0;
    for (int i = 0; i < p->n_quiet; i++) {
        double d = p->quiet[i].mean - *w;
        ss += d * d;
    }
    *se = sqrt(ss / (p->n_quiet - 1.0) / p->n_quiet);
    *rate = r / p->n_quiet;
}

/* One stage's estimate over the windows from ≤ wid < pl->upto. */
static void stage_of(struct plan *pl, const struct probe *p, int64_t from, double lambda_root,
                     const struct search_stats *s, struct overload_stage *st) {
    double window_s = (double)core_window_ns(pl->a->env.core) * 1e-9;
    double z = pl->a->params.z;
    double busy, busy_se, done;
    double nw, lam_se;
    rates_of(p, from, pl->upto, window_s, &st->lambda, &busy, &busy_se, &done, &nw, &lam_se);
    st->to = pl->upto;
    st->rho_busy = st->rho_little = NAN;
    st->w = s->n_ok > 0 ? s->mean : NAN;
    st->share = lambda_root > 0 ? st->lambda / lambda_root : NAN;
    /* the quiet windows are a low-load baseline only when their load was well below now's */
    double wq, wq_se, qrate;
    quiet_of(p, &wq, &wq_se, &qrate);
    int quiet = isfinite(wq) && qrate <= 0.5 * st->lambda;
    st->servers = p->servers > 0 ? p->servers : 1;
    st->servers_from = p->servers > 0 ? "config" : "assumed";
    if (p->servers <= 0 && quiet && busy > 0.05) {
        /* servers in service on average (λ·S) over the time any is busy: no fewer than
         * that many servers; clearly above one, it is a pool */
        double ratio = st->lambda * wq / busy;
        if (ratio >= 1.5) {
            st->servers = (int)ceil(ratio - 0.1);
            st->servers_from = "inferred";
        }
    }
    if (st->servers == 1) {
        /* one FIFO server is busy exactly while a request is in the station */
        st->method = "busy";
        st->rho = busy;
        double hw = z * busy_se; /* the windows' own scatter: a queue's load comes in bursts */
        st->rho_lo = busy - hw;
        st->rho_hi = busy + hw;
        st->service = done > 0 ? busy * nw * window_s / done : NAN;
    } else if (quiet) {
        st->method = "baseline";
        st->service = wq;
        st->rho = st->lambda * wq / st->servers;
        double rel = hypot(wq > 0 ? wq_se / wq : 0, st->lambda > 0 ? lam_se / st->lambda : 0);
        st->rho_lo = st->rho * (1 - z * rel);
        st->rho_hi = st->rho * (1 + z * rel);
    } else {
        /* two readings of the M/M/c model: the time the station holds any request (its
         * busy fraction) is 1 − P0(c, ρ), and the mean number in it (Little's law, L =
         * λW) is cρ + C(c, cρ)·ρ/(1 − ρ). Arrivals more regular than Poisson leave the
         * station empty less often (the first reads high) and queue less (the second reads
         * low); a queue's length also wanders for seconds near saturation, so its mean
         * over a few windows is noisy. The estimate is their mean; its half-width adds the
         * mean's own error and half their disagreement (as the model's), in quadrature. */
        st->method = "mmc";
        double w_se = search_stats_mean_se(s);
        double rb = mmc_rho_of_busy(st->servers, busy);
        double rl = mmc_rho_of_l(st->servers, st->lambda * st->w);
        double lb = mmc_rho_of_busy(st->servers, busy - z * busy_se);
        double hb = mmc_rho_of_busy(st->servers, busy + z * busy_se);
        double ll = mmc_rho_of_l(st->servers, st->lambda * (st->w - z * w_se));
        double hl = mmc_rho_of_l(st->servers, st->lambda * (st->w + z * w_se));
        st->rho = 0.5 * (rb + rl);
        st->rho_busy = rb;
        st->rho_little = rl;
        /* the mean's own error, and the readings' disagreement as the model's */
        double se_b = (hb - lb) / (2.0 * z), se_l = (hl - ll) / (2.0 * z);
        double hw = hypot(z * 0.5 * hypot(se_b, se_l), 0.5 * (rb - rl));
        st->rho_lo = st->rho - hw;
        st->rho_hi = st->rho + hw > 1.0 ? 1.0 : st->rho + hw;
        st->service = st->lambda > 0 ? st->rho * st->servers / st->lambda : NAN;
    }
    st->rho_lo = st->rho_lo > 0 ? st->rho_lo : 0;
    st->sat = st->service > 0 ? st->servers / st->service : NAN;
    st->sat_root = st->share > 0 ? st->sat / st->share : NAN;
}

/* ΔQ d with every delay stretched by k (mass at grid time t moves to k·t; past the
 * horizon it is lost). */
static int stretch(const struct dq *d, double k, struct dq **out) {
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

/* How much a stage's mean sojourn grows when its utilisation goes from ρ now to ρ then:
 * its measured wait (sojourn − service) scaled by the M/M/c wait factor (for one server,
 * the Pollaczek–Khinchine ratio, whatever the service law); INFINITY at saturation. */
static double sojourn_growth(const struct overload_stage *st, double rho_then) {
    if (rho_then >= 1.0) {
        return INFINITY;
    }
    double now = st->rho < 0.999 ? st->rho : 0.999;
    double wait = st->w - st->service;
    double g_now = wait_factor(st->servers, now), g_then = wait_factor(st->servers, rho_then);
    double then;
    if (wait > 0 && g_now > 0) {
        then = st->service + wait * g_then / g_now;
    } else {
        then = st->service * (1.0 + g_then);
    }
    return st->w > 0 ? then / st->w : 1.0;
}

/* An evaluator of the diagram with every probe on its own grid. */
static struct dq_eval *what_if_eval(struct adapt *a, const struct dq_diagram *g) {
    struct dq_eval *ev = NULL;
    const struct probe *any = NULL;
    size_t nn = dq_diagram_node_count(g);
    for (size_t i = 0; i < nn && !any; i++) {
        any = adapt__probe(a, dq_diagram_node(g, (int)i)->name);
    }
    if (!any || dq_eval_create(g, any->k, any->n, &ev) != DQ_OK) {
        return NULL;
    }
    for (size_t i = 0; i < nn; i++) {
        const struct probe *p = adapt__probe(a, dq_diagram_node(g, (int)i)->name);
        if (p) {
            dq_eval_set_grid(ev, (int)i, p->k, p->n);
        }
    }
    return ev;
}

/*
 * 1 when the root's QTA fails at root arrivals lambda, 0 when it holds, −1 when it cannot
 * be told: every stage's observed ΔQ is stretched as its model says its sojourn grows at
 * that rate, and the diagram composes them up to the root.
 */
static int qta_fails_at(struct dq_eval *ev, int root, const struct overload_result *r,
                        const struct dq_qta *qta, double lambda) {
    struct dq **made = calloc((size_t)r->n, sizeof *made);
    if (!made) {
        return -1;
    }
    int fails = -1;
    dq_eval_clear_observed(ev);
    for (int j = 0; j < r->n; j++) {
        const struct overload_stage *st = &r->st[j];
        if (!st->obs || !(st->service > 0) || !isfinite(st->rho)) {
            goto out;
        }
        double k = sojourn_growth(st, st->rho * lambda / r->lambda_root);
        int rc = isfinite(k) ? stretch(st->obs, k, &made[j])
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

/* The root arrivals at which its QTA fails (NAN: it holds up to saturation, or cannot be
 * told): bisection between today's rate and the saturation rate. */
static double qta_rate(struct plan *pl, const struct investigation *inv,
                       const struct overload_result *r, const struct dq_qta *qta) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int root = g ? dq_diagram_find(g, inv->node) : -1;
    if (root < 0 || !(r->lambda_root > 0) || !isfinite(r->saturation)) {
        return NAN;
    }
    struct dq_eval *ev = what_if_eval(pl->a, g);
    if (!ev) {
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
    dq_eval_destroy(ev);
    return rate;
}

/*
 * The lowest arrival rate of p from which its windows' observed and calculated ΔQs mostly
 * diverge (KS D over 0.1 and p under alpha): windows sorted by rate, the first diverging
 * one from which at least half do. NAN when fewer than three diverge.
 */
static double divergence_onset(struct plan *pl, const struct probe *p) {
    double window_s = (double)core_window_ns(pl->a->env.core) * 1e-9;
    double rate[256];
    int div[256], n = 0, total = 0;
    for (int i = 0; p && i < p->ring_len && n < 256; i++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, i);
        uint64_t cnt = w->ok + w->fa + w->to + w->out;
        if (w->wid >= pl->upto || !w->observed || !w->calculated || cnt < 30) {
            continue;
        }
        double d, pv;
        if (dq_ks(w->observed, w->calculated, cnt, 0, &d, &pv) != DQ_OK) {
            continue;
        }
        rate[n] = (double)cnt / window_s;
        div[n] = d > 0.1 && pv < pl->a->params.alpha;
        total += div[n];
        n++;
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
    int above = 0,
        diverging = 0; /* from the top down: the lowest start of a mostly-diverging tail */
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

struct overload_prev *adapt__overload_prev_ref(struct overload_prev *p) {
    if (p) {
        p->refs++;
    }
    return p;
}

void adapt__overload_prev_unref(struct overload_prev *p) {
    if (p && --p->refs == 0) {
        for (int i = 0; i < p->n; i++) {
            dq_destroy(p->st[i].obs);
        }
        free(p);
    }
}

void adapt__overload_result_release(struct overload_result *r) {
    free(r->st);
    r->st = NULL;
    r->n = 0;
}

struct overload_prev *adapt__overload_carry(const struct overload_result *r) {
    struct overload_prev *p = calloc(1, sizeof *p + (size_t)r->n * sizeof p->st[0]);
    if (!p) {
        return NULL;
    }
    p->refs = 1;
    for (int j = 0; j < r->n; j++) {
        if (j == r->bottleneck) {
            continue;
        }
        struct overload_stage *st = &p->st[p->n++];
        *st = r->st[j];
        st->co = 0;
        st->obs = NULL;
        if (r->st[j].obs && dq_clone(r->st[j].obs, &st->obs) != DQ_OK) {
            adapt__overload_prev_unref(p);
            return NULL;
        }
    }
    return p;
}

/*
 * 1 when stage j's ρ is clearly below the bottleneck b's: their difference beyond ADAPT_Z
 * standard errors of it (each stage's from its interval, z standard errors a side). A
 * lone bottleneck is a culprit named: it takes the adaptive loop's evidence for any claim,
 * not only intervals that miss each other (two identical M/M/1/K stations at ρ 0.8, whose
 * busy fractions over 7 windows differed by 0.11 — about 3.2 standard errors of the difference, as
 * the service times drawn happened to fall — were once told apart that way).
 */
static int clearly_below(const struct overload_stage *j, const struct overload_stage *b, double z) {
    double sj = (j->rho_hi - j->rho_lo) / (2.0 * z), sb = (b->rho_hi - b->rho_lo) / (2.0 * z);
    if (!isfinite(sj) || !isfinite(sb)) {
        return j->rho_hi < b->rho_lo;
    }
    return b->rho - j->rho > ADAPT_Z * hypot(sj, sb);
}

int adapt__overload(struct plan *pl, const struct investigation *inv, const struct focus_input *fi,
                    struct overload_result *r) {
    memset(r, 0, sizeof *r);
    r->bottleneck = -1;
    r->qta_rate = r->onset = r->saturation = NAN;
    struct adapt *a = pl->a;
    const struct probe *root = adapt__probe(a, inv->node);
    double window_s = (double)core_window_ns(a->env.core) * 1e-9;
    double busy, busy_se, done;
    double nw, lam_se;
    rates_of(root, inv->eval_from, pl->upto, window_s, &r->lambda_root, &busy, &busy_se, &done, &nw,
             &lam_se);
    int n_prev = inv->ov_prev ? inv->ov_prev->n : 0;
    int n_kids = (int)fi->in.n_children;
    r->st = calloc((size_t)(n_prev + n_kids), sizeof *r->st);
    if (!r->st) {
        return dq_fail(DQ_ENOMEM, "no memory for the stages");
    }
    for (int j = 0; j < n_prev; j++) {
        r->st[j] = inv->ov_prev->st[j];
    }
    r->first_current = n_prev;
    r->n = n_prev + n_kids;
    for (int j = 0; j < n_kids; j++) {
        const struct probe *kp = adapt__probe(a, fi->kids[j].name);
        if (!kp || !fi->kids[j].stats.present) {
            adapt__overload_result_release(r);
            return dq_fail(DQ_ESTATE, "%s has no statistics yet", fi->kids[j].name);
        }
        struct overload_stage *st = &r->st[n_prev + j];
        snprintf(st->name, sizeof st->name, "%s", kp->name);
        snprintf(st->parent, sizeof st->parent, "%s", inv->focus);
        stage_of(pl, kp, inv->eval_from, r->lambda_root, &fi->kids[j].stats, st);
        st->has_children = fi->kids[j].has_children;
        st->obs = fi->kstats[j].obs;
    }
    for (int j = 0; j < r->n; j++) {
        if (isfinite(r->st[j].rho) &&
            (r->bottleneck < 0 || r->st[j].rho > r->st[r->bottleneck].rho)) {
            r->bottleneck = j;
        }
    }
    if (r->bottleneck < 0) {
        adapt__overload_result_release(r);
        return dq_fail(DQ_ESTATE, "no stage to weigh");
    }
    const struct overload_stage *b = &r->st[r->bottleneck];
    r->saturation = b->sat_root;
    for (int j = 0; j < r->n; j++) {
        struct overload_stage *st = &r->st[j];
        st->co = j != r->bottleneck && !clearly_below(st, b, pl->a->params.z);
        r->n_co += st->co;
        if (st->co && st->sat_root < r->saturation) {
            r->saturation = st->sat_root;
        }
    }
    if (root && root->has_qta) {
        r->qta_rate = qta_rate(pl, inv, r, &root->qta);
    }
    r->onset = divergence_onset(pl, root);
    return DQ_OK;
}

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *adapt__overload_json(const struct overload_result *r) {
    json_t *stages = json_array();
    json_t *co = json_array();
    for (int j = 0; j < r->n; j++) {
        const struct overload_stage *st = &r->st[j];
        json_t *o =
            json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:i,s:s,s:o,s:o,s:s,s:o}", "probe", st->name,
                      "parent", st->parent, "rho", num_or_null(st->rho), "rho_low",
                      num_or_null(st->rho_lo), "rho_high", num_or_null(st->rho_hi), "service_ms",
                      num_or_null(st->service * 1e3), "arrivals_per_s", num_or_null(st->lambda),
                      "servers", st->servers, "servers_from", st->servers_from, "saturation_per_s",
                      num_or_null(st->sat), "root_saturation_per_s", num_or_null(st->sat_root),
                      "method", st->method, "sojourn_ms", num_or_null(st->w * 1e3));
        if (isfinite(st->rho_busy)) {
            json_object_set_new(o, "readings",
                                json_pack("{s:o,s:o}", "busy", num_or_null(st->rho_busy), "little",
                                          num_or_null(st->rho_little)));
        }
        json_array_append_new(stages, o);
        if (st->co) {
            json_array_append_new(co, json_string(st->name));
        }
    }
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "bottleneck",
                     r->bottleneck >= 0 ? r->st[r->bottleneck].name : "", "co_bottlenecks", co,
                     "arrivals_per_s", num_or_null(r->lambda_root), "saturation_per_s",
                     num_or_null(r->saturation), "qta_violation_per_s", num_or_null(r->qta_rate),
                     "divergence_onset_per_s", num_or_null(r->onset), "stages", stages);
}

/* One of the static names a stage's method or servers source points at. */
static const char *known(const char *s, const char *const *names, size_t n) {
    for (size_t i = 0; s && i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            return names[i];
        }
    }
    return names[n - 1];
}

static double num_or_nan(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

struct overload_prev *adapt__overload_prev_from_json(const json_t *overload,
                                                     const char *descended) {
    static const char *const methods[] = {"busy", "baseline", "mmc"};
    static const char *const sources[] = {"config", "inferred", "assumed"};
    const json_t *stages = json_object_get(overload, "stages");
    size_t n = json_array_size(stages);
    struct overload_prev *p = calloc(1, sizeof *p + (n ? n : 1) * sizeof p->st[0]);
    if (!p) {
        return NULL;
    }
    p->refs = 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(stages, i);
        const char *name = json_string_value(json_object_get(o, "probe"));
        if (!name || strcmp(name, descended) == 0) {
            continue;
        }
        struct overload_stage *st = &p->st[p->n++];
        snprintf(st->name, sizeof st->name, "%s", name);
        const char *parent = json_string_value(json_object_get(o, "parent"));
        snprintf(st->parent, sizeof st->parent, "%s", parent ? parent : "");
        st->rho = num_or_nan(o, "rho");
        st->rho_lo = num_or_nan(o, "rho_low");
        st->rho_hi = num_or_nan(o, "rho_high");
        st->service = num_or_nan(o, "service_ms") * 1e-3;
        st->w = num_or_nan(o, "sojourn_ms") * 1e-3;
        st->lambda = num_or_nan(o, "arrivals_per_s");
        st->servers = (int)json_integer_value(json_object_get(o, "servers"));
        st->servers = st->servers > 0 ? st->servers : 1;
        st->sat = num_or_nan(o, "saturation_per_s");
        st->sat_root = num_or_nan(o, "root_saturation_per_s");
        st->share = st->sat > 0 && st->sat_root > 0 ? st->sat / st->sat_root : NAN;
        st->method = known(json_string_value(json_object_get(o, "method")), methods, 3);
        st->servers_from = known(json_string_value(json_object_get(o, "servers_from")), sources, 3);
    }
    return p;
}
