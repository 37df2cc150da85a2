/*
 * dqd_adapt.c: the adaptive loop of ARCHITECTURE.md §5, run once per window close.
 *
 *   triggers        per-probe conditions with hysteresis; a firing stores a snapshot
 *                   (the probe's and its diagram neighbours' ΔQs, W windows before and
 *                   W after) and opens an investigation at the probe;
 *   investigations  each holds a focus node and a search state (search/); every window
 *                   it gathers the focus's and its children's statistics since the last
 *                   expansion and asks the strategy what to do: enable children (logged
 *                   as an "expand" hypothesis with its commands), wait for samples, or
 *                   decide (descend into a child, localized, diffuse, inconclusive);
 *   de-escalation   once an investigation is closed and its problem stays away for m
 *                   windows, the probes it enabled are disabled again (logged too);
 *   budget          a maximum of enabled probes and of instances per second; above 50 %
 *                   of the rate expansions pause (logged).
 *
 * Everything the loop decides is written to the store (investigations, hypotheses,
 * commands, triggers, snapshots) so that `dqctl why` can explain it and a restarted dqd
 * can resume: open investigations come back with their focus (the newest hypothesis)
 * and the probes they own.
 */
#include "dqd_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const trigger_names[TRIG_KIND_COUNT] = {"qta", "load", "lost", "divergence",
                                                           "cv"};
/* Default thresholds: QTA any hazard; load 1000 instances/window; lost 5 %; divergence
 * KS D over 0.1 (and p < alpha); CV over 1. */
static const double trigger_defaults[TRIG_KIND_COUNT] = {0.0, 1000.0, 0.05, 0.1, 1.0};

const char *dqd__trigger_kind_name(enum trigger_kind k) {
    return k < TRIG_KIND_COUNT ? trigger_names[k] : "?";
}

int dqd__trigger_kind_parse(const char *s, enum trigger_kind *k) {
    for (int i = 0; i < TRIG_KIND_COUNT; i++) {
        if (s && strcmp(s, trigger_names[i]) == 0) {
            *k = (enum trigger_kind)i;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_EINVAL, "unknown trigger kind \"%s\" (qta, load, lost, divergence, cv)",
                   s ? s : "");
}

/* ---- statistics of a probe over windows ------------------------------------------------ */

struct node_stats {
    struct search_stats s;
    struct dq *obs;  /* aggregated observed ΔQ (owned) */
    struct dq *calc; /* aggregated calculated ΔQ (owned) */
};

static void node_stats_release(struct node_stats *ns) {
    dq_destroy(ns->obs);
    dq_destroy(ns->calc);
    ns->obs = ns->calc = NULL;
}

/* Adds w·src into *acc (created on first use on src's grid; other grids are skipped). */
static void mix_into(struct dq **acc, const struct dq *src, double w) {
    if (!src || w <= 0.0) {
        return;
    }
    if (!*acc) {
        if (dq_never(src->k, src->n, acc) != DQ_OK) {
            return;
        }
    }
    if ((*acc)->k != src->k || (*acc)->n != src->n) {
        return;
    }
    for (int i = 0; i < src->n; i++) {
        (*acc)->pdf[i] += w * src->pdf[i];
    }
}

/* Divides a mixture built with raw weights by their total. */
static void mix_normalise(struct dq *acc, double total) {
    for (int i = 0; acc && total > 0.0 && i < acc->n; i++) {
        acc->pdf[i] /= total;
    }
}

/*
 * Statistics of probe p over its closed windows with from ≤ wid < to: the moments pool
 * every window; the ΔQs are instance-weighted mixtures on the newest grid only (windows
 * from before a dMax change would add their mass as lost). The calculated ΔQ, and the KS
 * distance, use only windows that have both ΔQs, with the same weights on both sides (a
 * window without its calculated ΔQ would shift one mixture and not the other).
 */
static void gather_range(struct probe *p, int64_t from, int64_t to, struct node_stats *ns) {
    memset(ns, 0, sizeof *ns);
    search_stats_init(&ns->s);
    if (!p) {
        return;
    }
    double total_n = 0.0, total_pair = 0.0;
    struct dq *obs_pair = NULL;
    for (int b = 0; b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (w->wid < from) {
            break;
        }
        uint64_t n = w->ok + w->fa + w->to + w->out;
        if (w->wid >= to || n == 0) {
            continue;
        }
        search_stats_add_window(&ns->s, w->ok, w->fa, w->to + w->out, w->mean, w->variance);
        if (!w->observed || w->observed->k != p->k || w->observed->n != p->n) {
            continue;
        }
        total_n += (double)n;
        mix_into(&ns->obs, w->observed, (double)n);
        if (w->calculated) {
            total_pair += (double)n;
            mix_into(&ns->calc, w->calculated, (double)n);
            mix_into(&obs_pair, w->observed, (double)n);
        }
    }
    mix_normalise(ns->obs, total_n);
    mix_normalise(ns->calc, total_pair);
    mix_normalise(obs_pair, total_pair);
    ns->s.observed = ns->obs;
    ns->s.calculated = ns->calc;
    if (obs_pair && ns->calc) {
        double dd, pv;
        if (dq_ks(obs_pair, ns->calc, (uint64_t)total_pair, 0, &dd, &pv) == DQ_OK) {
            ns->s.ks_d = dd;
            ns->s.ks_p = pv;
        }
    }
    dq_destroy(obs_pair);
    if (ns->obs && p->has_qta) {
        struct dq_qta_result r;
        if (dq_qta_eval(ns->obs, &p->qta, &r) == DQ_OK) {
            ns->s.qta_hazard = r.hazard;
        }
    }
}

/* Statistics of probe p over its closed windows with wid ≥ from. */
static void gather(struct probe *p, int64_t from, struct node_stats *ns) {
    gather_range(p, from, INT64_MAX, ns);
}

/* Mean and within-window variance (ok-weighted mean of the windows' own variances) of p
 * over windows from ≤ wid < to: a level shift inside the range does not count as spread. */
static void within(struct probe *p, int64_t from, int64_t to, double *mean, double *var,
                   double *n) {
    double sw = 0, sm = 0, sv = 0;
    for (int b = 0; p && b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (w->wid < from) {
            break;
        }
        if (w->wid < to && w->ok > 0) {
            sw += (double)w->ok;
            sm += (double)w->ok * w->mean;
            sv += (double)w->ok * w->variance;
        }
    }
    *n = sw;
    *mean = sw > 0 ? sm / sw : NAN;
    *var = sw > 0 ? sv / sw : NAN;
}

/*
 * The problem kind of a push-button diagnosis at p: what changed between the last five
 * windows and up to twenty before them (the node has usually been enabled for a while):
 * a QTA hazard; else a significant rise of the lost fraction; else a mean that rose
 * significantly by at least half a baseline σ (slower); else a spread within windows up
 * by half while the mean barely moved (erratic); else a significant rise of the mean.
 * Without such a history: search_infer_problem's absolute thresholds.
 */
static enum search_problem infer_problem(struct dqd *d, struct probe *p) {
    struct node_stats rec, base;
    int64_t nc = d->probes.next_close;
    gather_range(p, nc - 5, INT64_MAX, &rec);
    gather_range(p, nc - 25, nc - 5, &base);
    enum search_problem kind = SEARCH_LATENCY;
    const struct search_stats *r = &rec.s, *b = &base.s;
    double nr = (double)search_stats_instances(r), nb = (double)search_stats_instances(b);
    double mr, vr, okr, mb, vb, okb;
    within(p, nc - 5, INT64_MAX, &mr, &vr, &okr);
    within(p, nc - 25, nc - 5, &mb, &vb, &okb);
    if (!r->present) {
        kind = SEARCH_LATENCY;
    } else if (isfinite(r->qta_hazard) && r->qta_hazard > 0) {
        kind = SEARCH_QTA;
    } else if (b->present && nb >= 60 && nr >= 30 && okr > 10 && okb > 10 && vb > 0) {
        double lr = search_stats_lost(r), lb = search_stats_lost(b);
        double se_l = sqrt(lr * (1 - lr) / nr + lb * (1 - lb) / nb);
        double shift = mr - mb, se_m = sqrt(vr / okr + vb / okb);
        int slower = se_m > 0 && shift / se_m > 3;
        if (lr - lb > 0.01 && lr - lb > 3 * se_l) {
            kind = SEARCH_LOST;
        } else if (slower && shift > 0.5 * sqrt(vb)) {
            kind = SEARCH_LATENCY;
        } else if (vr > 1.5 * vb) {
            kind = SEARCH_VARIANCE;
        } else if (slower) {
            kind = SEARCH_LATENCY;
        } else {
            kind = search_infer_problem(r, &d->adapt.params);
        }
    } else {
        kind = search_infer_problem(r, &d->adapt.params);
    }
    node_stats_release(&rec);
    node_stats_release(&base);
    return kind;
}

static json_t *stats_json(const char *name, const struct search_stats *s) {
    if (!s->present) {
        return json_pack("{s:s,s:b}", "node", name, "present", 0);
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:i,s:f}", "node", name, "ok", (json_int_t)s->n_ok,
                          "fa", (json_int_t)s->n_fa, "to", (json_int_t)s->n_to, "windows",
                          (int)s->windows, "lost", search_stats_lost(s));
    if (isfinite(s->mean)) {
        json_object_set_new(o, "mean", json_real(s->mean));
        json_object_set_new(o, "sd", json_real(sqrt(s->variance > 0 ? s->variance : 0)));
    }
    if (isfinite(s->ks_d)) {
        json_object_set_new(o, "ks_d", json_real(s->ks_d));
        json_object_set_new(o, "ks_p", json_real(s->ks_p));
    }
    if (isfinite(s->qta_hazard)) {
        json_object_set_new(o, "qta_hazard", json_real(s->qta_hazard));
    }
    return o;
}

/* ---- log helpers -------------------------------------------------------------------------- */

static char *dump_and_free(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(j);
    return s;
}

static int64_t log_hypothesis(struct dqd *d, struct investigation *inv, int64_t parent,
                              const char *node, const char *action, json_t *probes, json_t *stats,
                              const char *verdict) {
    char *pj = dump_and_free(probes ? probes : json_array());
    char *sj = stats ? dump_and_free(stats) : NULL;
    struct store_hypothesis h = {.investigation = inv->id,
                                 .parent = parent,
                                 .node = node,
                                 .kind = search_problem_name(inv->problem),
                                 .action = action,
                                 .probes_json = pj,
                                 .stats_json = sj,
                                 .verdict = verdict};
    int64_t id = 0;
    if (store_hypothesis_insert(d->store, &h, &id) != DQ_OK) {
        d->store_errors++;
        LOG(LOG_ERROR, "store: hypothesis of investigation %" PRId64 ": %s", inv->id,
            dq_last_error());
    }
    free(pj);
    free(sj);
    return id;
}

static struct probe *probe_named(struct dqd *d, const char *name) {
    return probes_find(&d->probes, name, strlen(name));
}

static int owns(const struct investigation *inv, const char *name) {
    for (int i = 0; i < inv->n_owned; i++) {
        if (strcmp(inv->owned[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

static size_t enabled_count(struct dqd *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->probes.count; i++) {
        n += d->probes.probes[i]->enabled != 0;
    }
    return n;
}

/* Enables `name` for an investigation: dMax from its settings, else the focus's. */
static int enable_for(struct dqd *d, struct investigation *inv, const char *name,
                      const struct probe *focus, int64_t hyp) {
    struct probe *p = NULL;
    int rc = probes_get(&d->probes, name, strlen(name), &p);
    if (rc) {
        return rc;
    }
    if (p->enabled) {
        /* enabled by another investigation: share it, so neither disables it under the
         * other; enabled by a person or the configuration: leave it theirs */
        for (int i = 0; i < d->adapt.n_inv; i++) {
            struct investigation *o = d->adapt.inv[i];
            if (o != inv && owns(o, name) && inv->n_owned < ADAPT_MAX_OWNED && !owns(inv, name)) {
                snprintf(inv->owned[inv->n_owned++], PROBES_NAME_MAX + 1, "%s", name);
                break;
            }
        }
        return DQ_OK;
    }
    if (!p->dmax_set && focus) {
        probes_set_dmax(&d->probes, p, focus->dmax_ms, focus->n);
        if (d->eval) {
            int i = dq_diagram_find(d->diagram, p->name);
            if (i >= 0) {
                dq_eval_set_grid(d->eval, i, p->k, p->n);
            }
        }
    }
    if (inv->n_owned < ADAPT_MAX_OWNED && !owns(inv, name)) {
        snprintf(inv->owned[inv->n_owned++], PROBES_NAME_MAX + 1, "%s", name);
    }
    return dqd__set_enabled(d, p, 1, hyp);
}

/* ---- triggers ------------------------------------------------------------------------------ */

static struct trigger *trigger_find(struct adapt *a, const char *probe, enum trigger_kind k) {
    for (int i = 0; i < a->n_triggers; i++) {
        if (a->triggers[i].kind == k && strcmp(a->triggers[i].probe, probe) == 0) {
            return &a->triggers[i];
        }
    }
    return NULL;
}

int dqd__adapt_set_trigger(struct dqd *d, const char *probe, const char *kind, double threshold,
                           int fire_after, int clear_after, int enabled) {
    struct adapt *a = &d->adapt;
    enum trigger_kind k;
    int rc = dqd__trigger_kind_parse(kind, &k);
    if (rc) {
        return rc;
    }
    if (fire_after < 1 || clear_after < 1 || fire_after > 1000 || clear_after > 1000) {
        return dq_fail(DQ_ERANGE, "fire_after and clear_after must be in [1, 1000]");
    }
    if (!isnan(threshold) && (!isfinite(threshold) || threshold < 0)) {
        return dq_fail(DQ_ERANGE, "threshold %g must be a finite number ≥ 0", threshold);
    }
    struct probe *p = NULL;
    if ((rc = probes_get(&d->probes, probe, strlen(probe), &p))) {
        return rc;
    }
    struct trigger *t = trigger_find(a, probe, k);
    if (!t) {
        if (a->n_triggers >= ADAPT_MAX_TRIGGERS) {
            return dq_fail(DQ_EFULL, "at most %d triggers", ADAPT_MAX_TRIGGERS);
        }
        t = &a->triggers[a->n_triggers++];
        memset(t, 0, sizeof *t);
        snprintf(t->probe, sizeof t->probe, "%s", probe);
        t->kind = k;
        t->last_wid = -1;
    }
    t->threshold = threshold;
    t->fire_after = fire_after;
    t->clear_after = clear_after;
    t->enabled = enabled;
    if (!enabled && (t->fired || t->bad || t->good)) {
        /* a disabled trigger holds nothing open: its investigation may de-escalate */
        t->fired = t->bad = t->good = 0;
        if (t->id && store_trigger_set_state(d->store, t->id, false, 0, 0) != DQ_OK) {
            d->store_errors++;
        }
    }
    dqd__save_probe(d, p); /* the trigger row references the probe row */
    struct store_trigger st = {.probe = probe,
                               .kind = kind,
                               .threshold = threshold,
                               .fire_after = fire_after,
                               .clear_after = clear_after,
                               .enabled = enabled};
    if (store_trigger_upsert(d->store, &st, &t->id) != DQ_OK) {
        d->store_errors++;
        return dq_fail(DQ_ESTORE, "storing the trigger: %s", dq_last_error());
    }
    return DQ_OK;
}

/* 1 bad, 0 good, −1 no opinion (no data) for trigger t on window w of p. */
static int trigger_bad(struct dqd *d, struct trigger *t, struct probe *p,
                       const struct probe_window *w) {
    double th = isnan(t->threshold) ? trigger_defaults[t->kind] : t->threshold;
    uint64_t n = w->ok + w->fa + w->to + w->out;
    switch (t->kind) {
    case TRIG_LOAD:
        return (double)n > th;
    case TRIG_QTA: {
        if (!p->has_qta || !w->observed || n < 10) {
            return -1;
        }
        struct dq_qta_result r;
        if (dq_qta_eval(w->observed, &p->qta, &r) != DQ_OK) {
            return -1;
        }
        return r.hazard > th;
    }
    case TRIG_LOST:
        if (n < 10 || !w->observed) {
            return -1;
        }
        return dq_lost(w->observed) > th;
    case TRIG_CV:
        if (w->ok < 10 || !(w->mean > 0)) {
            return -1;
        }
        return sqrt(w->variance) / w->mean > th;
    case TRIG_DIVERGENCE: {
        if (!w->observed || !w->calculated || n < 30) {
            return -1;
        }
        double dd, pv;
        if (dq_ks(w->observed, w->calculated, n, 0, &dd, &pv) != DQ_OK) {
            return -1;
        }
        return dd > th && pv < d->adapt.params.alpha;
    }
    default:
        return -1;
    }
}

static void webhook(struct dqd *d, const char *event, json_t *payload) {
    dqd__webhook_emit(d, event, payload);
}

static void snapshot_start(struct dqd *d, struct trigger *t, int64_t wid, int64_t inv_id);
static struct investigation *open_investigation(struct dqd *d, const char *node,
                                                enum search_problem problem,
                                                enum search_strategy_id strategy,
                                                int64_t trigger_id, const char *who);

static enum search_problem trigger_problem(enum trigger_kind k) {
    switch (k) {
    case TRIG_QTA:
        return SEARCH_QTA;
    case TRIG_LOST:
        return SEARCH_LOST;
    case TRIG_CV:
        return SEARCH_VARIANCE;
    case TRIG_DIVERGENCE:
        return SEARCH_DIVERGENCE;
    default:
        return SEARCH_LATENCY;
    }
}

static struct investigation *investigation_at(struct dqd *d, const char *node) {
    for (int i = 0; i < d->adapt.n_inv; i++) {
        struct investigation *inv = d->adapt.inv[i];
        if (inv->state == INV_SEARCHING && strcmp(inv->node, node) == 0) {
            return inv;
        }
    }
    return NULL;
}

static void run_triggers(struct dqd *d, int64_t wid) {
    struct adapt *a = &d->adapt;
    for (int i = 0; i < a->n_triggers; i++) {
        struct trigger *t = &a->triggers[i];
        struct probe *p = probe_named(d, t->probe);
        if (!t->enabled || !p || !probes_has_window(p, wid)) {
            continue;
        }
        int bad = trigger_bad(d, t, p, probes_ring_get(p, 0));
        if (bad < 0) {
            continue;
        }
        t->last_wid = wid;
        int was = t->fired;
        if (bad) {
            t->bad++;
            t->good = 0;
            if (!t->fired && t->bad >= t->fire_after) {
                t->fired = 1;
            }
        } else {
            t->good++;
            t->bad = 0;
            if (t->fired && t->good >= t->clear_after) {
                t->fired = 0;
            }
        }
        if (store_trigger_set_state(d->store, t->id, t->fired, t->bad, t->good) != DQ_OK) {
            d->store_errors++;
        }
        if (t->fired && !was) {
            LOG(LOG_WARN, "trigger %s on %s fired after %d bad windows", trigger_names[t->kind],
                t->probe, t->bad);
            struct investigation *inv = NULL;
            int node = d->diagram ? dq_diagram_find(d->diagram, t->probe) : -1;
            if (node >= 0 && dq_diagram_probe_children(d->diagram, node, NULL, 0) > 0 &&
                !investigation_at(d, t->probe)) {
                inv = open_investigation(d, t->probe, trigger_problem(t->kind), SEARCH_CHILDREN,
                                         t->id, NULL);
            }
            snapshot_start(d, t, wid, inv ? inv->id : 0);
            webhook(d, "trigger_fired",
                    json_pack("{s:s,s:s,s:I,s:o}", "probe", t->probe, "kind",
                              trigger_names[t->kind], "trigger", (json_int_t)t->id, "investigation",
                              inv ? json_integer(inv->id) : json_null()));
        } else if (!t->fired && was) {
            LOG(LOG_INFO, "trigger %s on %s cleared after %d good windows", trigger_names[t->kind],
                t->probe, t->good);
            webhook(d, "trigger_cleared",
                    json_pack("{s:s,s:s,s:I}", "probe", t->probe, "kind", trigger_names[t->kind],
                              "trigger", (json_int_t)t->id));
        }
    }
}

/* ---- snapshots ------------------------------------------------------------------------------ */

static void snapshot_add_window(struct dqd *d, struct snapshot *s, struct probe *p,
                                const struct probe_window *w) {
    int64_t start = w->wid * d->probes.window_ns, end = start + d->probes.window_ns;
    if (w->observed) {
        store_snapshot_add_dq(d->store, s->id, p->name, STORE_OBSERVED, start, end, w->observed);
    }
    if (w->calculated) {
        store_snapshot_add_dq(d->store, s->id, p->name, STORE_CALCULATED, start, end,
                              w->calculated);
    }
}

static void snapshot_start(struct dqd *d, struct trigger *t, int64_t wid, int64_t inv_id) {
    struct adapt *a = &d->adapt;
    if (a->n_snaps >= ADAPT_MAX_SNAPSHOTS) {
        LOG(LOG_WARN, "snapshot of %s skipped: %d snapshots are being collected", t->probe,
            ADAPT_MAX_SNAPSHOTS);
        return;
    }
    struct snapshot *s = &a->snaps[a->n_snaps];
    memset(s, 0, sizeof *s);
    char reason[128];
    snprintf(reason, sizeof reason, "trigger %s fired", trigger_names[t->kind]);
    struct store_snapshot row = {.trigger_id = t->id,
                                 .investigation = inv_id,
                                 .probe = t->probe,
                                 .reason = reason,
                                 .time_ns = (wid + 1) * d->probes.window_ns,
                                 .windows = a->snapshot_windows};
    if (store_snapshot_insert(d->store, &row, &s->id) != DQ_OK) {
        d->store_errors++;
        return;
    }
    /* the probe, its nearest named parent and its children */
    snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s", t->probe);
    if (d->diagram) {
        int i = dq_diagram_find(d->diagram, t->probe);
        int kids[15];
        size_t n = i >= 0 ? dq_diagram_probe_children(d->diagram, i, kids, 15) : 0;
        for (size_t j = 0; j < n && j < 15 && s->n_probes < 16; j++) {
            snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s",
                     dq_diagram_node(d->diagram, kids[j])->name);
        }
        const struct dq_diagram_node *node = i >= 0 ? dq_diagram_node(d->diagram, i) : NULL;
        for (int guard = 0; node && node->n_parents > 0 && guard < 1000; guard++) {
            node = dq_diagram_node(d->diagram, node->parents[0]);
            if (node && node->name && node->kind != DQ_NODE_REFERENCE) {
                if (s->n_probes < 16) {
                    snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s", node->name);
                }
                break;
            }
        }
    }
    for (int j = 0; j < s->n_probes; j++) {
        struct probe *p = probe_named(d, s->probes[j]);
        for (int b = 0; p && b < p->ring_len && b < a->snapshot_windows; b++) {
            snapshot_add_window(d, s, p, probes_ring_get(p, b));
        }
    }
    s->fire_wid = wid;
    s->after_left = a->snapshot_windows;
    a->n_snaps++;
}

static void run_snapshots(struct dqd *d, int64_t wid) {
    struct adapt *a = &d->adapt;
    for (int i = 0; i < a->n_snaps;) {
        struct snapshot *s = &a->snaps[i];
        if (s->fire_wid == wid) {
            i++; /* started this window, with it among the windows before */
            continue;
        }
        for (int j = 0; j < s->n_probes; j++) {
            struct probe *p = probe_named(d, s->probes[j]);
            if (p && probes_has_window(p, wid)) {
                snapshot_add_window(d, s, p, probes_ring_get(p, 0));
            }
        }
        if (--s->after_left <= 0) {
            store_snapshot_complete(d->store, s->id);
            a->snaps[i] = a->snaps[--a->n_snaps];
            continue;
        }
        i++;
    }
}

/* ---- investigations ---------------------------------------------------------------------------
 */

static struct investigation *inv_new(void) {
    struct investigation *inv = calloc(1, sizeof *inv);
    if (inv) {
        inv->verdict_value = inv->runner_value = NAN;
        inv->owned = calloc(ADAPT_MAX_OWNED, sizeof *inv->owned);
        if (!inv->owned) {
            free(inv);
            inv = NULL;
        }
    }
    return inv;
}

static void inv_free(struct investigation *inv) {
    if (inv) {
        free(inv->owned);
        free(inv);
    }
}

static void inv_remove(struct adapt *a, int i) {
    inv_free(a->inv[i]);
    a->inv[i] = a->inv[--a->n_inv];
}

/* Sets the focus of an investigation and starts its search there. */
static void focus_on(struct dqd *d, struct investigation *inv, const char *node, int64_t hyp) {
    if (node != inv->focus) { /* resuming passes inv->focus itself */
        snprintf(inv->focus, sizeof inv->focus, "%s", node);
    }
    int i = d->diagram ? dq_diagram_find(d->diagram, node) : -1;
    size_t n = i >= 0 ? dq_diagram_probe_children(d->diagram, i, NULL, 0) : 0;
    search_state_init(&inv->st, inv->strategy, n ? n : 1);
    inv->hyp_id = hyp;
    inv->eval_from = d->probes.next_close;
    inv->windows_waited = 0;
}

static struct investigation *open_investigation(struct dqd *d, const char *node,
                                                enum search_problem problem,
                                                enum search_strategy_id strategy,
                                                int64_t trigger_id, const char *who) {
    struct adapt *a = &d->adapt;
    if (a->n_inv >= ADAPT_MAX_INVESTIGATIONS) {
        dq_fail(DQ_EFULL, "%d investigations are open already", ADAPT_MAX_INVESTIGATIONS);
        return NULL;
    }
    struct investigation *inv = inv_new();
    if (!inv) {
        dq_fail(DQ_ENOMEM, "no memory for an investigation");
        return NULL;
    }
    snprintf(inv->node, sizeof inv->node, "%s", node);
    inv->problem = problem;
    inv->strategy = strategy;
    inv->trigger_id = trigger_id;
    struct store_investigation row = {.node = node,
                                      .problem = search_problem_name(problem),
                                      .strategy = search_strategy_name(strategy),
                                      .origin = trigger_id ? "trigger" : "person",
                                      .trigger_id = trigger_id,
                                      .requested_by = who};
    if (store_investigation_open(d->store, &row, &inv->id) != DQ_OK) {
        d->store_errors++;
        LOG(LOG_ERROR, "store: opening an investigation: %s", dq_last_error());
        inv_free(inv);
        return NULL;
    }
    struct node_stats ns;
    gather(probe_named(d, node), d->probes.next_close - 3, &ns);
    json_t *stats =
        json_pack("{s:o,s:s,s:s}", "node", stats_json(node, &ns.s), "origin",
                  trigger_id ? "trigger" : "person", "problem", search_problem_name(problem));
    if (who) {
        json_object_set_new(stats, "requested_by", json_string(who));
    }
    node_stats_release(&ns);
    int64_t hyp = log_hypothesis(d, inv, 0, node, "root", NULL, stats, NULL);
    focus_on(d, inv, node, hyp);
    a->inv[a->n_inv++] = inv;
    LOG(LOG_INFO, "investigation %" PRId64 " opened at %s (%s, %s, %s)", inv->id, node,
        search_problem_name(problem), search_strategy_name(strategy),
        trigger_id ? "trigger" : "person");
    return inv;
}

int dqd__adapt_diagnose(struct dqd *d, const char *node, const char *strategy, const char *who,
                        int64_t *id) {
    if (!d->diagram) {
        return dq_fail(DQ_ESTATE, "no diagram is loaded: load one with --diagram or PUT "
                                  "/api/v1/diagram");
    }
    if (!node || !*node) {
        if (dq_diagram_root_count(d->diagram) == 0) {
            return dq_fail(DQ_ESTATE, "the diagram has no root");
        }
        node = dq_diagram_node(d->diagram, dq_diagram_root(d->diagram, 0))->name;
    }
    int i = dq_diagram_find(d->diagram, node);
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "no node named \"%s\" in the diagram", node);
    }
    if (dq_diagram_probe_children(d->diagram, i, NULL, 0) == 0) {
        return dq_fail(DQ_EINVAL, "%s is a leaf: there is nothing finer to enable", node);
    }
    enum search_strategy_id sid = SEARCH_CHILDREN;
    if (strategy && *strategy && search_strategy_parse(strategy, &sid) != DQ_OK) {
        return dq_fail(DQ_EINVAL, "strategy must be children or bisect, not \"%s\"", strategy);
    }
    struct investigation *open = investigation_at(d, node);
    if (open) {
        *id = open->id;
        return DQ_EEXIST;
    }
    /* the problem kind from the node's recent windows */
    struct probe *p = probe_named(d, node);
    enum search_problem problem = infer_problem(d, p);
    int enabled_node = 0;
    if (p && !p->enabled) {
        /* the node itself must report, or nothing can be attributed */
        dqd__set_enabled(d, p, 1, 0);
        enabled_node = 1;
    }
    struct investigation *inv = open_investigation(d, node, problem, sid, 0, who);
    if (!inv) {
        return dq_fail(DQ_EFULL, "%s", dq_last_error());
    }
    if (enabled_node && inv->n_owned < ADAPT_MAX_OWNED) {
        snprintf(inv->owned[inv->n_owned++], PROBES_NAME_MAX + 1, "%s", node);
    }
    *id = inv->id;
    return DQ_OK;
}

static json_t *attribution_json(const struct search_input *in, const struct search_result *r) {
    json_t *kids = json_array();
    for (size_t i = 0; i < in->n_children; i++) {
        const struct search_contribution *c = &r->attr.c[i];
        json_t *o = stats_json(in->children[i].name, &in->children[i].stats);
        if (c->included) {
            json_object_set_new(o, "contribution", json_real(c->value));
            json_object_set_new(o, "half_width", json_real(c->half_width));
            json_object_set_new(o, "share", json_real(c->share));
        }
        json_array_append_new(kids, o);
    }
    json_t *o = json_pack("{s:s,s:s,s:o,s:o}", "verdict", search_verdict_name(r->verdict), "reason",
                          r->reason, "focus", stats_json(in->name, &in->stats), "children", kids);
    if (r->attr.best >= 0 && r->attr.best < (int)in->n_children) {
        json_object_set_new(o, "best", json_string(in->children[r->attr.best].name));
        json_object_set_new(o, "dominant", json_boolean(r->attr.dominant));
    }
    if (isfinite(r->attr.covariance)) {
        json_object_set_new(o, "covariance", json_real(r->attr.covariance));
    }
    return o;
}

static void close_investigation(struct dqd *d, struct investigation *inv, const char *verdict,
                                const char *node, json_t *evidence) {
    char *ev = dump_and_free(json_pack("{s:s,s:s,s:o}", "verdict", verdict, "node",
                                       node ? node : inv->focus, "evidence",
                                       evidence ? evidence : json_null()));
    if (store_investigation_close(d->store, inv->id, verdict, node, ev) != DQ_OK) {
        d->store_errors++;
    }
    inv->state = INV_CLOSED;
    inv->quiet = 0;
    snprintf(inv->verdict_node, sizeof inv->verdict_node, "%s", node ? node : "");
    LOG(LOG_WARN, "investigation %" PRId64 " at %s: %s%s%s", inv->id, inv->node, verdict,
        node ? " at " : "", node ? node : "");
    json_error_t jerr;
    json_t *payload = json_loads(ev ? ev : "null", 0, &jerr);
    json_t *wh =
        json_pack("{s:I,s:s,s:s,s:o}", "investigation", (json_int_t)inv->id, "node", inv->node,
                  "verdict", verdict, "summary", payload ? payload : json_null());
    webhook(d, "verdict", wh);
    free(ev);
}

/* Builds the search input for the focus of inv; returns the number of children. */
struct focus_input {
    struct search_input in;
    struct search_child kids[SEARCH_MAX_CHILDREN];
    struct node_stats kstats[SEARCH_MAX_CHILDREN];
    struct node_stats xstats;
    int kid_nodes[SEARCH_MAX_CHILDREN];
};

static void focus_input_release(struct focus_input *fi) {
    node_stats_release(&fi->xstats);
    for (size_t i = 0; i < fi->in.n_children; i++) {
        node_stats_release(&fi->kstats[i]);
    }
}

static int build_input(struct dqd *d, struct investigation *inv, struct focus_input *fi) {
    memset(&fi->in, 0, sizeof fi->in);
    int i = dq_diagram_find(d->diagram, inv->focus);
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "%s is no longer in the diagram", inv->focus);
    }
    const struct dq_diagram_node *node = dq_diagram_node(d->diagram, i);
    size_t n = dq_diagram_probe_children(d->diagram, i, fi->kid_nodes, SEARCH_MAX_CHILDREN);
    if (n == 0 || n > SEARCH_MAX_CHILDREN) {
        return dq_fail(DQ_EINVAL, "%s has %zu children", inv->focus, n);
    }
    gather(probe_named(d, inv->focus), inv->eval_from, &fi->xstats);
    for (size_t j = 0; j < n; j++) {
        const struct dq_diagram_node *kid = dq_diagram_node(d->diagram, fi->kid_nodes[j]);
        struct probe *kp = probe_named(d, kid->name);
        struct search_child *c = &fi->kids[j];
        memset(c, 0, sizeof *c);
        c->name = kid->name;
        c->has_children = dq_diagram_probe_children(d->diagram, fi->kid_nodes[j], NULL, 0) > 0;
        c->enabled = kp && kp->enabled;
        c->weight = 0.0;
        gather(c->enabled ? kp : NULL, inv->eval_from, &fi->kstats[j]);
        c->stats = fi->kstats[j].s;
    }
    if (node->kind == DQ_NODE_CHOICE && node->weights) {
        /* a branch's weight goes to every probe on that branch (a chain branch has several) */
        for (size_t b = 0; b < node->n_children; b++) {
            int br = node->children[b];
            int on[SEARCH_MAX_CHILDREN];
            size_t non = 0;
            const struct dq_diagram_node *bn = dq_diagram_node(d->diagram, br);
            if (bn && bn->name && bn->kind != DQ_NODE_REFERENCE) {
                on[non++] = br;
            } else {
                non = dq_diagram_probe_children(d->diagram, br, on, SEARCH_MAX_CHILDREN);
                if (bn && bn->kind == DQ_NODE_REFERENCE) {
                    on[0] = bn->target;
                    non = 1;
                }
            }
            for (size_t k = 0; k < non && k < SEARCH_MAX_CHILDREN; k++) {
                for (size_t j = 0; j < n; j++) {
                    if (fi->kid_nodes[j] == on[k]) {
                        fi->kids[j].weight = node->weights[b];
                    }
                }
            }
        }
    }
    fi->in.name = inv->focus;
    fi->in.kind = node->kind == DQ_NODE_REFERENCE ? DQ_NODE_SEQUENCE : node->kind;
    fi->in.problem = inv->problem;
    fi->in.stats = fi->xstats.s;
    fi->in.children = fi->kids;
    fi->in.n_children = n;
    fi->in.exhausted = inv->windows_waited >= d->adapt.max_windows;
    return DQ_OK;
}

static void step_investigation(struct dqd *d, struct investigation *inv) {
    struct adapt *a = &d->adapt;
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_step *step = calloc(1, sizeof *step);
    if (!fi || !step) {
        free(fi);
        free(step);
        return;
    }
    int rc = build_input(d, inv, fi);
    if (rc) {
        close_investigation(d, inv, "aborted", NULL, json_pack("{s:s}", "error", dq_last_error()));
        goto out;
    }
    inv->windows_waited++;
    struct search_params params = a->params;
    if (inv->problem == SEARCH_VARIANCE && params.min_windows < 4) {
        /* spread shows in rare outliers: give every child enough windows to show them */
        params.min_windows = 4;
    }
    rc = search_step(&fi->in, &params, &inv->st, step);
    if (rc) {
        close_investigation(d, inv, "aborted", NULL, json_pack("{s:s}", "error", dq_last_error()));
        goto out;
    }
    struct probe *focus = probe_named(d, inv->focus);
    if (step->action == SEARCH_ENABLE) {
        size_t after = enabled_count(d) + step->n_enable;
        if (a->congested || (a->max_enabled > 0 && after > (size_t)a->max_enabled)) {
            if (!inv->paused) {
                inv->paused = 1;
                json_t *why = json_pack("{s:s,s:f,s:f,s:i,s:i}", "reason",
                                        a->congested ? "ingest above 50 % of the instance budget"
                                                     : "enabling would exceed the probe budget",
                                        "rate", a->rate, "max_rate", a->max_rate, "enabled",
                                        (int)enabled_count(d), "max_enabled", a->max_enabled);
                log_hypothesis(d, inv, inv->hyp_id, inv->focus, "pause", NULL, why, NULL);
                LOG(LOG_WARN, "investigation %" PRId64 ": expansion paused (%s)", inv->id,
                    a->congested ? "congestion" : "probe budget");
            }
            goto out; /* a pause uses up the step's time: a budget that never frees ends it */
        }
        inv->paused = 0;
        json_t *names = json_array();
        for (size_t j = 0; j < step->n_enable; j++) {
            json_array_append_new(names, json_string(fi->kids[step->enable[j]].name));
        }
        json_t *stats =
            json_pack("{s:s,s:s,s:o}", "strategy", search_strategy_name(inv->strategy), "reason",
                      step->result.reason, "focus", stats_json(inv->focus, &fi->in.stats));
        int64_t hyp = log_hypothesis(d, inv, inv->hyp_id, inv->focus, "expand", names, stats, NULL);
        for (size_t j = 0; j < step->n_enable; j++) {
            enable_for(d, inv, fi->kids[step->enable[j]].name, focus, hyp);
        }
        inv->hyp_id = hyp ? hyp : inv->hyp_id;
        /* fresh windows for every compared node: the first that starts after the commands */
        inv->eval_from = probes_window_of(&d->probes, dqd__now_ns()) + 1;
        inv->windows_waited = 0;
        LOG(LOG_INFO, "investigation %" PRId64 ": enabled %zu probe(s) under %s", inv->id,
            step->n_enable, inv->focus);
        goto out;
    }
    if (step->action == SEARCH_WAIT) {
        goto out;
    }
    const struct search_result *r = &step->result;
    json_t *ev = attribution_json(&fi->in, r);
    int child = r->child;
    const char *child_name = child >= 0 ? fi->kids[child].name : NULL;
    switch (r->verdict) {
    case SEARCH_DESCEND: {
        store_hypothesis_set_verdict(d->store, inv->hyp_id, "confirmed", NULL);
        json_t *names = json_array();
        int64_t hyp =
            log_hypothesis(d, inv, inv->hyp_id, child_name, "descend", names,
                           json_pack("{s:s,s:o}", "reason", r->reason, "evidence", ev), NULL);
        focus_on(d, inv, child_name, hyp ? hyp : inv->hyp_id);
        LOG(LOG_INFO, "investigation %" PRId64 ": descending into %s", inv->id, child_name);
        break;
    }
    case SEARCH_LOCALIZED:
        inv->verdict_value = r->attr.c[child].value;
        inv->runner_value = r->attr.runner_up >= 0 ? r->attr.c[r->attr.runner_up].value : 0.0;
        store_hypothesis_set_verdict(d->store, inv->hyp_id, "localized", NULL);
        log_hypothesis(d, inv, inv->hyp_id, child_name, "verdict", NULL,
                       json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "localized");
        close_investigation(d, inv, "localized", child_name, ev);
        break;
    case SEARCH_DIFFUSE:
        store_hypothesis_set_verdict(d->store, inv->hyp_id, "diffuse", NULL);
        log_hypothesis(d, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                       json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "diffuse");
        close_investigation(d, inv, "diffuse", inv->focus, ev);
        break;
    default:
        store_hypothesis_set_verdict(d->store, inv->hyp_id, "inconclusive", NULL);
        log_hypothesis(d, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                       json_pack("{s:s,s:O}", "reason", r->reason, "evidence", ev), "inconclusive");
        close_investigation(d, inv, "inconclusive", inv->focus, ev);
        break;
    }
out:
    focus_input_release(fi);
    free(fi);
    free(step);
}

/*
 * 1 when the problem of a closed investigation is still there. Trigger-started: while
 * its trigger is fired. Localized by a person: while the localized child's contribution
 * over the last windows stays above the midpoint between what it was at the verdict and
 * what the runner-up had then (a fault that goes away brings it back below). Otherwise
 * (diffuse, inconclusive, or resumed after a restart without those numbers): never.
 */
static int problem_persists(struct dqd *d, struct investigation *inv) {
    if (inv->trigger_id) {
        for (int i = 0; i < d->adapt.n_triggers; i++) {
            if (d->adapt.triggers[i].id == inv->trigger_id) {
                return d->adapt.triggers[i].fired;
            }
        }
        return 0;
    }
    if (!inv->verdict_node[0] || !d->diagram || !isfinite(inv->verdict_value) ||
        !isfinite(inv->runner_value)) {
        return 0;
    }
    struct investigation probe_inv = *inv;
    probe_inv.eval_from = d->probes.next_close - 3;
    probe_inv.windows_waited = 0;
    struct focus_input *fi = calloc(1, sizeof *fi);
    struct search_attribution *attr = calloc(1, sizeof *attr);
    unsigned char *include = calloc(SEARCH_MAX_CHILDREN, 1);
    int persists = 0;
    if (fi && attr && include && build_input(d, &probe_inv, fi) == DQ_OK) {
        for (size_t j = 0; j < fi->in.n_children; j++) {
            if (strcmp(fi->kids[j].name, inv->verdict_node) != 0) {
                continue;
            }
            const struct search_stats *st = &fi->kids[j].stats;
            if (!st->present || search_stats_instances(st) < 10) {
                break; /* no evidence left: the problem is not shown to be there */
            }
            include[j] = 1;
            if (search_attribute(&fi->in, &d->adapt.params, include, attr) == DQ_OK &&
                attr->c[j].included) {
                double mid = 0.5 * (inv->verdict_value + inv->runner_value);
                persists = attr->c[j].value > mid;
            }
            break;
        }
    }
    if (fi) {
        focus_input_release(fi);
    }
    free(fi);
    free(attr);
    free(include);
    return persists;
}

/* Disables the probes a closed investigation enabled, once its problem stayed away. */
static int deescalate(struct dqd *d, struct investigation *inv) {
    if (problem_persists(d, inv)) {
        inv->quiet = 0;
        return 0;
    }
    if (++inv->quiet < d->adapt.deescalate_windows) {
        return 0;
    }
    json_t *names = json_array();
    int64_t hyp = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < inv->n_owned; i++) {
            struct probe *p = probe_named(d, inv->owned[i]);
            int shared = 0;
            for (int j = 0; j < d->adapt.n_inv; j++) {
                struct investigation *o = d->adapt.inv[j];
                shared |= o != inv && owns(o, inv->owned[i]) &&
                          (o->state == INV_SEARCHING || problem_persists(d, o));
            }
            if (!p || !p->enabled || p->always_on || shared) {
                continue;
            }
            if (pass == 0) {
                json_array_append_new(names, json_string(p->name));
            } else {
                dqd__set_enabled(d, p, 0, hyp);
            }
        }
        if (pass == 0) {
            json_t *stats = json_pack("{s:s,s:i}", "reason",
                                      "the problem stayed away; disabling what the investigation "
                                      "enabled",
                                      "quiet_windows", inv->quiet);
            hyp = log_hypothesis(d, inv, inv->hyp_id, inv->node, "disable", json_copy(names), stats,
                                 NULL);
        }
    }
    LOG(LOG_INFO, "investigation %" PRId64 ": de-escalated (%zu probe(s) disabled)", inv->id,
        json_array_size(names));
    json_decref(names);
    return 1;
}

void dqd__adapt_window(struct dqd *d, int64_t wid) {
    struct adapt *a = &d->adapt;
    /* budget: instances per second over the last window */
    uint64_t delta = d->instances_total - a->last_instances;
    a->last_instances = d->instances_total;
    a->rate = (double)delta * 1e9 / (double)d->probes.window_ns;
    int was = a->congested;
    a->congested = a->max_rate > 0 && a->rate > 0.5 * a->max_rate;
    if (a->congested != was) {
        LOG(LOG_WARN, "ingest %.0f instances/s is %s 50 %% of the budget (%.0f/s): expansions %s",
            a->rate, a->congested ? "above" : "back below", a->max_rate,
            a->congested ? "pause" : "resume");
        char detail[160];
        snprintf(detail, sizeof detail, "{\"rate\":%.0f,\"max_rate\":%.0f,\"congested\":%s}",
                 a->rate, a->max_rate, a->congested ? "true" : "false");
        struct store_event ev = {.kind = "congestion", .detail_json = detail};
        store_event_add(d->store, &ev, NULL);
    }
    run_triggers(d, wid);
    run_snapshots(d, wid);
    for (int i = 0; i < a->n_inv;) {
        struct investigation *inv = a->inv[i];
        if (inv->state == INV_SEARCHING) {
            step_investigation(d, inv);
        } else if (deescalate(d, inv)) {
            inv_remove(a, i);
            continue;
        }
        i++;
    }
}

/* ---- start and restart ------------------------------------------------------------------- */

static int load_trigger(void *ctx, const struct store_trigger *st) {
    struct dqd *d = ctx;
    struct adapt *a = &d->adapt;
    enum trigger_kind k;
    if (dqd__trigger_kind_parse(st->kind, &k) != DQ_OK || a->n_triggers >= ADAPT_MAX_TRIGGERS) {
        return 0;
    }
    struct trigger *t = &a->triggers[a->n_triggers++];
    memset(t, 0, sizeof *t);
    t->id = st->id;
    snprintf(t->probe, sizeof t->probe, "%s", st->probe);
    t->kind = k;
    t->threshold = st->threshold;
    t->fire_after = st->fire_after;
    t->clear_after = st->clear_after;
    t->enabled = st->enabled;
    t->fired = st->fired;
    t->bad = st->bad;
    t->good = st->good;
    t->last_wid = -1;
    return 0;
}

struct resume_ctx {
    struct dqd *d;
    struct investigation *inv;
};

static void owned_from_json(struct investigation *inv, const char *probes_json, int add) {
    json_error_t err;
    json_t *a = probes_json ? json_loads(probes_json, 0, &err) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        const char *name = json_string_value(v);
        if (!name) {
            continue;
        }
        if (add && !owns(inv, name) && inv->n_owned < ADAPT_MAX_OWNED) {
            snprintf(inv->owned[inv->n_owned++], PROBES_NAME_MAX + 1, "%s", name);
        } else if (!add) {
            for (int j = 0; j < inv->n_owned; j++) {
                if (strcmp(inv->owned[j], name) == 0) {
                    memcpy(inv->owned[j], inv->owned[--inv->n_owned], PROBES_NAME_MAX + 1);
                    break;
                }
            }
        }
    }
    json_decref(a);
}

/* Replays an open investigation's hypotheses: the newest root/descend sets the focus. */
static int resume_hypothesis(void *ctx, const struct store_hypothesis *h) {
    struct resume_ctx *rc = ctx;
    struct investigation *inv = rc->inv;
    if (strcmp(h->action, "root") == 0 || strcmp(h->action, "descend") == 0) {
        snprintf(inv->focus, sizeof inv->focus, "%s", h->node);
        inv->hyp_id = h->id;
    } else if (strcmp(h->action, "expand") == 0) {
        owned_from_json(inv, h->probes_json, 1);
        inv->hyp_id = h->id;
    } else if (strcmp(h->action, "disable") == 0) {
        owned_from_json(inv, h->probes_json, 0);
    }
    return 0;
}

static int resume_investigation(void *ctx, const struct store_investigation *row) {
    struct dqd *d = ctx;
    struct adapt *a = &d->adapt;
    if (a->n_inv >= ADAPT_MAX_INVESTIGATIONS) {
        return 0;
    }
    struct investigation *inv = inv_new();
    if (!inv) {
        return 0;
    }
    inv->id = row->id;
    snprintf(inv->node, sizeof inv->node, "%s", row->node);
    search_problem_parse(row->problem, &inv->problem);
    search_strategy_parse(row->strategy, &inv->strategy);
    inv->trigger_id = row->trigger_id;
    struct resume_ctx rc = {d, inv};
    store_hypotheses_of_investigation(d->store, inv->id, resume_hypothesis, &rc);
    if (!inv->focus[0]) {
        snprintf(inv->focus, sizeof inv->focus, "%s", inv->node);
    }
    int64_t hyp = inv->hyp_id;
    focus_on(d, inv, inv->focus, hyp);
    a->inv[a->n_inv++] = inv;
    LOG(LOG_INFO, "investigation %" PRId64 " resumed at %s (%d probe(s) owned)", inv->id,
        inv->focus, inv->n_owned);
    return 0;
}

/* A closed investigation whose probes were not disabled yet comes back for de-escalation. */
static int resume_closed(void *ctx, const struct store_investigation *row) {
    struct dqd *d = ctx;
    struct adapt *a = &d->adapt;
    if (row->open || a->n_inv >= ADAPT_MAX_INVESTIGATIONS) {
        return 0;
    }
    struct investigation *inv = inv_new();
    if (!inv) {
        return 0;
    }
    inv->id = row->id;
    snprintf(inv->node, sizeof inv->node, "%s", row->node);
    search_problem_parse(row->problem, &inv->problem);
    inv->trigger_id = row->trigger_id;
    struct resume_ctx rc = {d, inv};
    store_hypotheses_of_investigation(d->store, inv->id, resume_hypothesis, &rc);
    int still = 0;
    for (int i = 0; i < inv->n_owned; i++) {
        struct probe *p = probe_named(d, inv->owned[i]);
        still |= p && p->enabled;
    }
    if (!still) {
        inv_free(inv);
        return 0;
    }
    inv->state = INV_CLOSED;
    snprintf(inv->verdict_node, sizeof inv->verdict_node, "%s",
             row->verdict_node ? row->verdict_node : "");
    a->inv[a->n_inv++] = inv;
    LOG(LOG_INFO,
        "investigation %" PRId64 " (closed) still owns %d probe(s): de-escalation "
        "resumes",
        inv->id, inv->n_owned);
    return 0;
}

int dqd__adapt_init(struct dqd *d) {
    struct adapt *a = &d->adapt;
    search_params_init(&a->params);
    a->params.min_instances = (uint64_t)d->opt.min_instances;
    a->params.min_windows = (uint32_t)d->opt.min_windows;
    a->max_enabled = d->opt.max_enabled_probes;
    a->max_rate = d->opt.max_instances_per_second;
    a->deescalate_windows = d->opt.deescalate_windows;
    a->max_windows = d->opt.investigation_windows;
    a->snapshot_windows = d->opt.snapshot_windows;
    a->last_instances = 0;
    int rc = store_triggers_each(d->store, NULL, load_trigger, d);
    for (int i = 0; !rc && i < d->opt.n_triggers; i++) {
        const struct dqd_trigger_config *t = &d->opt.triggers[i];
        rc = dqd__adapt_set_trigger(d, t->probe, t->kind, t->threshold, t->fire_after,
                                    t->clear_after, 1);
        if (rc) {
            rc = dq_fail(rc, "trigger %s on %s: %s", t->kind, t->probe, dq_last_error());
        }
    }
    if (!rc) {
        rc = store_investigations_each(d->store, true, 0, resume_investigation, d);
    }
    if (!rc) {
        rc = store_investigations_each(d->store, false, 200, resume_closed, d);
    }
    return rc;
}

void dqd__adapt_release(struct dqd *d) {
    struct adapt *a = &d->adapt;
    for (int i = 0; i < a->n_inv; i++) {
        inv_free(a->inv[i]);
    }
    a->n_inv = 0;
}
