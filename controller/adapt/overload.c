/*
 * overload.c: overload investigations (where does a node saturate?). The maths and the
 * rules are search/'s (dq_search.h, "queues"); here the loop measures each stage over its
 * windows (arrivals, busy fraction, completions, quiet windows, configured servers), lets
 * search estimate and weigh them, carries the stages of the levels above down a descent
 * (and back from the store after a restart), and records the step: wait, descend into a
 * lone bottleneck with finer probes, or the `overload` verdict with every stage's numbers.
 *
 * Everything here only decides: it changes the round's next state and adds effects.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* ---- measuring a stage --------------------------------------------------------------------- */

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
        /* a timed-out instance leaves too, later: its busy time counts (probes.c) */
        done += (double)(w->ok + w->fa + w->to);
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

/* What was measured of stage p over the windows from ≤ wid < pl->upto (s: its statistics
 * over those windows). */
static void stage_obs(struct plan *pl, const struct probe *p, int64_t from, double lambda_root,
                      const struct search_stats *s, struct search_stage_obs *o) {
    memset(o, 0, sizeof *o);
    o->window_s = (double)core_window_ns(pl->a->env.core) * 1e-9;
    rates_of(p, from, pl->upto, o->window_s, &o->lambda, &o->busy, &o->busy_se, &o->completions,
             &o->windows, &o->lambda_se);
    o->w = s->n_ok > 0 ? s->mean : NAN;
    o->w_se = search_stats_mean_se(s);
    quiet_of(p, &o->quiet_w, &o->quiet_se, &o->quiet_rate);
    o->servers = p->servers;
    o->lambda_root = lambda_root;
    double overtaken = 0.0, instances = 0.0;
    for (int i = 0; i < p->ring_len; i++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, i);
        if (w->wid < from) {
            break;
        }
        if (w->wid < pl->upto) {
            overtaken += (double)w->overtaken;
            instances += (double)(w->ok + w->fa);
        }
    }
    o->servers_observed = search_servers_observed(overtaken, instances, o->lambda, o->w, o->busy);
}

/* The root arrivals at which its QTA fails (search_qta_rate; NAN when unknown). */
static double qta_rate(struct plan *pl, const struct investigation *inv,
                       const struct search_overload *r, const struct dq_qta *qta) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int root = g ? dq_diagram_find(g, inv->node) : -1;
    if (root < 0 || !(r->lambda_root > 0) || !isfinite(r->saturation)) {
        return NAN;
    }
    struct dq_eval *ev = adapt__what_if_eval(pl->a, g);
    if (!ev) {
        return NAN;
    }
    double rate = search_qta_rate(ev, root, r, qta);
    dq_eval_destroy(ev);
    return rate;
}

/* The lowest arrival rate of p from which its windows' observed and calculated ΔQs mostly
 * diverge (KS D over 0.1 and p under alpha): search_divergence_onset of its windows. */
static double divergence_onset(struct plan *pl, const struct probe *p) {
    double window_s = (double)core_window_ns(pl->a->env.core) * 1e-9;
    double rate[256];
    int div[256], n = 0;
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
        n++;
    }
    return search_divergence_onset(rate, div, n);
}

/* ---- the stages above the focus ------------------------------------------------------------- */

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

/* The stages to carry down when inv descends into r's bottleneck: every stage of r but that
 * one, with copies of their ΔQs (a new reference; NULL on no memory). */
static struct overload_prev *overload_carry(const struct search_overload *r) {
    struct overload_prev *p = calloc(1, sizeof *p + (size_t)r->n * sizeof p->st[0]);
    if (!p) {
        return NULL;
    }
    p->refs = 1;
    for (int j = 0; j < r->n; j++) {
        if (j == r->bottleneck) {
            continue;
        }
        struct search_stage *st = &p->st[p->n++];
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

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *overload_json(const struct search_overload *r) {
    json_t *stages = json_array();
    json_t *co = json_array();
    for (int j = 0; j < r->n; j++) {
        const struct search_stage *st = &r->st[j];
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
    static const char *const sources[] = {"config", "inferred", "observed", "assumed"};
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
        struct search_stage *st = &p->st[p->n++];
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
        st->servers_from = known(json_string_value(json_object_get(o, "servers_from")), sources, 4);
    }
    return p;
}

/* ---- weighing ----------------------------------------------------------------------------------
 */

static void overload_release(struct search_overload *r) {
    free(r->st);
    r->st = NULL;
    r->n = 0;
}

/* Weighs inv's stages: its focus's children (whose statistics fi holds) and the stages of
 * the levels above. DQ_ESTATE when a child has no statistics yet or none has a ρ;
 * DQ_ENOMEM. */
static int weigh(struct plan *pl, const struct investigation *inv, const struct focus_input *fi,
                 struct search_overload *r) {
    memset(r, 0, sizeof *r);
    r->bottleneck = -1;
    r->qta_rate = r->onset = r->saturation = NAN;
    struct adapt *a = pl->a;
    const struct probe *root = adapt__probe(a, inv->node);
    double window_s = (double)core_window_ns(a->env.core) * 1e-9;
    double busy, busy_se, done, nw, lam_se;
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
            overload_release(r);
            return dq_fail(DQ_ESTATE, "%s has no statistics yet", fi->kids[j].name);
        }
        struct search_stage *st = &r->st[n_prev + j];
        snprintf(st->name, sizeof st->name, "%s", kp->name);
        snprintf(st->parent, sizeof st->parent, "%s", inv->focus);
        struct search_stage_obs o;
        stage_obs(pl, kp, inv->eval_from, r->lambda_root, &fi->kids[j].stats, &o);
        search_stage_estimate(&o, pl->a->params.z, st);
        st->to = pl->upto;
        st->has_children = fi->kids[j].has_children;
        st->obs = fi->kstats[j].obs;
    }
    if (search_overload_weigh(r, pl->a->params.z) != DQ_OK) {
        overload_release(r);
        return DQ_ESTATE;
    }
    if (root && root->has_qta) {
        r->qta_rate = qta_rate(pl, inv, r, &root->qta);
    }
    r->onset = divergence_onset(pl, root);
    return DQ_OK;
}

/* ---- one step ----------------------------------------------------------------------------------
 */

/* 1 when every stage (child of the focus) has the samples an overload step needs. */
static int stages_ready(const struct focus_input *fi, const struct search_params *params) {
    int ready = fi->in.n_children > 0;
    for (size_t j = 0; j < fi->in.n_children && ready; j++) {
        const struct search_stats *ks = &fi->kids[j].stats;
        ready = ks->present && search_stats_instances(ks) >= params->min_instances &&
                ks->windows >= (uint32_t)params->min_windows;
    }
    return ready;
}

/* Descends into r's bottleneck (the reason and the stages, ov, as the descent's evidence). */
static void descend(struct plan *pl, struct investigation *inv, const struct search_overload *r,
                    const char *reason, json_t *ov) {
    struct overload_prev *carry = overload_carry(r);
    if (!carry) {
        json_decref(ov);
        pl->failed = 1;
        return;
    }
    adapt__overload_prev_unref(inv->ov_prev);
    inv->ov_prev = carry;
    char bname[PROBES_NAME_MAX + 1];
    snprintf(bname, sizeof bname, "%s", r->st[r->bottleneck].name);
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
    int64_t hyp = adapt__hypothesis(pl, inv, inv->hyp_id, bname, "descend", json_array(),
                                    json_pack("{s:s,s:o}", "reason", reason, "overload", ov), NULL);
    adapt__focus_on(pl->a, inv, bname, hyp ? hyp : inv->hyp_id, pl->upto);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": descending into the bottleneck %s", bname);
}

/* The weighed stages' outcome: wait, or (once confirmed) descend or the overload verdict. */
static void act_on(struct plan *pl, struct investigation *inv, const struct search_overload *r,
                   int exhausted) {
    enum search_overload_next next = search_overload_next(r, exhausted);
    if (next == SEARCH_OV_WAIT ||
        !search_confirm_step(&inv->confirm,
                             next == SEARCH_OV_DESCEND ? SEARCH_DESCEND : SEARCH_OVERLOAD,
                             r->bottleneck - r->first_current, pl->wid >= 0, pl->upto)) {
        return;
    }
    char reason[SEARCH_REASON_MAX + 600];
    search_overload_reason(inv->node, inv->focus, r, reason, sizeof reason);
    json_t *ov = overload_json(r);
    if (next == SEARCH_OV_DESCEND) {
        descend(pl, inv, r, reason, ov);
        return;
    }
    const char *at = search_overload_at(inv->node, inv->focus, r);
    json_t *ev =
        json_pack("{s:s,s:s,s:O}", "verdict", "overload", "reason", reason, "overload", ov);
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "overload");
    adapt__hypothesis(pl, inv, inv->hyp_id, at, "verdict", NULL,
                      json_pack("{s:s,s:o}", "reason", reason, "overload", ov), "overload");
    adapt__close(pl, inv, "overload", at, ev);
}

void adapt__overload_step(struct plan *pl, struct investigation *inv, struct focus_input *fi) {
    struct search_step *step = calloc(1, sizeof *step);
    if (!step) {
        pl->failed = 1;
        return;
    }
    struct search_params params = pl->a->params;
    params.min_windows = params.min_windows < SEARCH_OVERLOAD_MIN_WINDOWS
                             ? SEARCH_OVERLOAD_MIN_WINDOWS
                             : params.min_windows;
    struct search_state st = inv->st;
    st.strategy = SEARCH_CHILDREN;
    fi->in.problem = SEARCH_LATENCY;
    if (search_step(&fi->in, &params, &st, step) != DQ_OK) {
        adapt__aborted_on_error(pl, inv);
        free(step);
        return;
    }
    inv->st = st;
    struct search_overload r;
    if (step->action == SEARCH_ENABLE) {
        adapt__expand(pl, inv, fi, step);
    } else if (!stages_ready(fi, &params)) {
        /* the stages are weighed once each has its samples, whatever the search would make
         * of their shares (two identical stages never dominate one another) */
        if (fi->in.exhausted && step->action == SEARCH_DECIDED) {
            adapt__decided(pl, inv, fi, &step->result);
        }
    } else if (weigh(pl, inv, fi, &r) != DQ_OK) {
        if (fi->in.exhausted) {
            adapt__decided(pl, inv, fi, &step->result);
        }
    } else {
        act_on(pl, inv, &r, fi->in.exhausted);
        overload_release(&r);
    }
    free(step);
}
