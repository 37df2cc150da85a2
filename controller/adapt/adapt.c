/*
 * adapt.c: the rounds of the adaptive loop (see adapt.h): a window's decisions, or a
 * person's diagnose, decided on a copy of the state, persisted in one transaction, and
 * acted on only once the transaction committed.
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

int adapt_create(const struct adapt_env *env, const struct adapt_options *o, struct adapt **out) {
    if (!env || !env->core || !env->store || !env->clock || !o || !out) {
        return dq_fail(DQ_EINVAL, "adapt_create: NULL environment, options or output");
    }
    if (o->min_instances < 0 || o->min_windows < 0 || o->max_enabled_probes < 0 ||
        !(o->max_instances_per_second >= 0) || o->deescalate_windows < 1 ||
        o->investigation_windows < 1 || o->snapshot_windows < 1) {
        return dq_fail(DQ_EINVAL, "adaptive loop: an option is out of range");
    }
    struct adapt *a = calloc(1, sizeof *a);
    if (!a) {
        return dq_fail(DQ_ENOMEM, "no memory for the adaptive loop");
    }
    a->env = *env;
    a->opt = *o;
    a->pending_wid = -1;
    if (o->search) {
        a->params = *o->search;
    } else {
        search_params_init(&a->params);
    }
    a->params.min_instances = (uint64_t)o->min_instances;
    a->params.min_windows = (uint32_t)o->min_windows;
    int rc = adapt__resume(a);
    if (rc) {
        adapt_destroy(a);
        return rc;
    }
    *out = a;
    return DQ_OK;
}

void adapt_destroy(struct adapt *a) {
    if (a) {
        adapt__state_release(&a->st);
        free(a);
    }
}

int adapt_probe_in_use(void *ctx, const struct probe *p) {
    const struct adapt *a = ctx;
    if (!a || !p) {
        return 0;
    }
    const struct dq_diagram *d = core_diagram(a->env.core);
    for (int i = 0; i < a->st.n_inv; i++) {
        const struct investigation *inv = a->st.inv[i];
        if (inv->released) {
            continue;
        }
        if (strcmp(inv->node, p->name) == 0 || strcmp(inv->focus, p->name) == 0 ||
            adapt__owns(inv, p->name)) {
            return 1;
        }
        int f = d ? dq_diagram_find(d, inv->focus) : -1;
        int kids[64];
        size_t n = f >= 0 ? dq_diagram_probe_children(d, f, kids, 64) : 0;
        for (size_t j = 0; j < n && j < 64; j++) {
            if (strcmp(dq_diagram_node(d, kids[j])->name, p->name) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

void adapt_get_stats(const struct adapt *a, struct adapt_stats *st) {
    st->rounds = a->rounds;
    st->rounds_failed = a->rounds_failed;
    st->windows_skipped = a->windows_skipped;
    st->pending_wid = a->pending_wid;
    st->investigations = a->st.n_inv;
}

/* Budget: instances per second over the last window, and the congestion flag. */
static void run_budget(struct plan *pl) {
    struct adapt *a = pl->a;
    struct adapt_state *st = &pl->next;
    struct core_stats cs;
    core_get_stats(a->env.core, &cs);
    uint64_t delta = cs.instances_total - st->last_instances;
    st->last_instances = cs.instances_total;
    st->rate = (double)delta * 1e9 / (double)core_window_ns(a->env.core);
    int was = st->congested;
    double max = a->opt.max_instances_per_second;
    st->congested = max > 0 && st->rate > 0.5 * max;
    if (st->congested != was) {
        adapt__fx_log(pl, LOG_WARN, 0,
                      "ingest %.0f instances/s is %s 50 %% of the budget (%.0f/s): expansions %s",
                      st->rate, st->congested ? "above" : "back below", max,
                      st->congested ? "pause" : "resume");
        char detail[160];
        snprintf(detail, sizeof detail, "{\"rate\":%.0f,\"max_rate\":%.0f,\"congested\":%s}",
                 st->rate, max, st->congested ? "true" : "false");
        adapt__fx_event(pl, "congestion", NULL, detail);
    }
}

/*
 * Silent sources: an enabled probe whose window had no data while the one before had
 * (its source disconnected or went silent) is announced once: a log line, an event in
 * the store and a "probe_silent" webhook naming the connection; when data comes back,
 * "probe_data_returned".
 */
static void run_silence(struct plan *pl) {
    struct probe_table *t = core_probes(pl->a->env.core);
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        if (!p->enabled) {
            continue;
        }
        int now = probes_no_data(p, pl->wid), before = probes_no_data(p, pl->wid - 1);
        if (now == before) {
            continue;
        }
        struct probe_silence sil;
        memset(&sil, 0, sizeof sil);
        int silent = probes_silence(t, p, &sil) == 1;
        const char *label = silent && sil.origin.label ? sil.origin.label : "";
        const char *node = silent && sil.origin.node ? sil.origin.node : "";
        json_t *detail = json_pack("{s:s,s:s,s:s,s:b}", "probe", p->name, "connection", label,
                                   "node", node, "connected", silent && sil.origin.connected);
        /* the silence can end with a live connection that has not sent this probe an
         * instance (yet): said so, not "has data again". An instance of this window or a
         * later one (still open) is data again. */
        int arrived = p->last_end_ns > 0 && p->last_end_ns >= pl->wid * t->window_ns;
        if (now) {
            json_object_set_new(detail, "since_ns", json_integer(sil.since_ns));
            if (label[0]) {
                adapt__fx_log(pl, LOG_WARN, 0,
                              "probe %s is silent: no data since its source %s%s%s went %s",
                              p->name, label, node[0] ? " " : "", node,
                              sil.origin.connected ? "quiet" : "away");
            } else {
                /* enabled, and no connection has sent it an instance (since dqd started) */
                adapt__fx_log(pl, LOG_WARN, 0,
                              "probe %s is silent: no data, and no connection has sent it any "
                              "yet (is it instrumented?)",
                              p->name);
            }
        } else {
            json_object_set_new(detail, "instances", json_boolean(arrived));
            adapt__fx_log(pl, LOG_INFO, 0,
                          arrived ? "probe %s has data again"
                                  : "probe %s is no longer silent: a connection is live, though "
                                    "none has sent it an instance yet",
                          p->name);
        }
        char *text = json_dumps(detail, JSON_COMPACT);
        adapt__fx_event(pl, now ? "probe_silent" : "probe_data_returned", p->name,
                        text ? text : "{}");
        free(text);
        adapt__fx_webhook(pl, now ? "probe_silent" : "probe_data_returned", detail, 0, 0);
    }
}

/* Decides window wid: budget, silent sources, triggers, snapshots, investigations. */
static void decide_window(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    run_budget(pl);
    run_silence(pl);
    adapt__run_triggers(pl);
    adapt__run_snapshots(pl);
    for (int i = 0; i < st->n_inv; i++) {
        struct investigation *inv = st->inv[i];
        if (inv->released) {
            continue;
        }
        if (inv->state == INV_SEARCHING) {
            adapt__step(pl, inv);
        } else {
            adapt__deescalate(pl, inv);
        }
    }
    adapt__episodes_settle(pl);
    adapt__sweep(st);
    adapt__episodes_sweep(pl);
    adapt__refs_take(pl);
}

/*
 * Persists a decided round in one transaction (with the summaries of window wid when
 * wid ≥ 0) and acts on it. Returns DQ_OK, or the error that dropped the round (nothing
 * was sent, the state is unchanged).
 */
static int commit_round(struct plan *pl, int64_t wid) {
    struct adapt *a = pl->a;
    struct store *st = a->env.store;
    int rc = pl->failed ? dq_fail(DQ_ENOMEM, "no memory for the adaptive loop's decisions")
                        : store_begin(st);
    if (rc == DQ_OK) {
        if (wid >= 0) {
            core_persist_window(a->env.core, wid); /* failures counted by the core */
        }
        rc = adapt__plan_persist(pl);
        if (rc == DQ_ENOMEM) {
            store_rollback(st);
        } else {
            rc = store_commit(st); /* a statement that failed was counted and logged */
        }
    }
    if (rc) {
        a->rounds_failed++;
        if (rc != DQ_ENOMEM) {
            core_count_store_error(a->env.core);
        }
        LOG(LOG_ERROR,
            "store: window %lld and its decisions not recorded (%s): nothing was sent; the "
            "window is decided again",
            (long long)wid, dq_last_error());
        adapt__plan_drop(pl);
        return rc;
    }
    adapt__plan_act(pl);
    return DQ_OK;
}

/* One window: decide, persist, act. DQ_OK or the error that dropped it. */
static int window_round(struct adapt *a, int64_t wid) {
    struct plan pl;
    int rc = adapt__plan_begin(a, &pl, wid, wid + 1);
    if (rc) {
        a->rounds_failed++;
        return rc;
    }
    decide_window(&pl);
    return commit_round(&pl, wid);
}

void adapt_window(void *ctx, int64_t wid) {
    struct adapt *a = ctx;
    int64_t from = a->pending_wid >= 0 ? a->pending_wid : wid;
    /* windows a failed round left behind, oldest first, while the rings still hold them */
    int ring = core_probes(a->env.core)->ring_cap;
    if (wid - from >= ring) {
        int64_t skip = wid - ring + 1 - from;
        a->windows_skipped += (uint64_t)skip;
        LOG(LOG_ERROR,
            "adaptive loop: windows %" PRId64 " to %" PRId64 " were never decided (the store "
            "failed for longer than the %d windows dqd keeps) and are skipped",
            from, from + skip - 1, ring);
        from += skip;
    }
    for (int64_t w = from; w <= wid; w++) {
        int rc = window_round(a, w);
        if (rc) {
            if (a->pending_wid < 0 || a->rounds_failed % 60 == 1) {
                LOG(LOG_ERROR,
                    "adaptive loop: window %" PRId64 " not decided (%s); it is tried again "
                    "with the next window, and nothing it decided was sent",
                    w, dq_last_error());
            }
            a->pending_wid = w;
            return;
        }
        if (a->pending_wid >= 0 && w == a->pending_wid) {
            LOG(LOG_INFO, "adaptive loop: window %" PRId64 " decided on a retry", w);
        }
        a->pending_wid = -1;
    }
}

/* ---- a person's diagnose ------------------------------------------------------------------- */

int adapt_diagnose(struct adapt *a, const char *node, const char *strategy, const char *who,
                   int overload, int64_t *id) {
    const struct dq_diagram *g = core_diagram(a->env.core);
    if (!g) {
        return dq_fail(DQ_ESTATE, "no diagram is loaded: load one with --diagram or PUT "
                                  "/api/v1/diagram");
    }
    if (!node || !*node) {
        if (dq_diagram_root_count(g) == 0) {
            return dq_fail(DQ_ESTATE, "the diagram has no root");
        }
        node = dq_diagram_node(g, dq_diagram_root(g, 0))->name;
    }
    int i = dq_diagram_find(g, node);
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "no node named \"%s\" in the diagram", node);
    }
    if (dq_diagram_probe_children(g, i, NULL, 0) == 0) {
        return dq_fail(DQ_EINVAL, "%s is a leaf: there is nothing finer to enable", node);
    }
    enum search_strategy_id sid = SEARCH_CHILDREN;
    if (strategy && *strategy && search_strategy_parse(strategy, &sid) != DQ_OK) {
        return dq_fail(DQ_EINVAL, "strategy must be children or bisect, not \"%s\"", strategy);
    }
    struct investigation *open = adapt__investigation_at(&a->st, node);
    if (open) {
        *id = open->id;
        return DQ_EEXIST;
    }
    struct plan pl;
    int rc = adapt__plan_begin(a, &pl, -1, core_next_close(a->env.core));
    if (rc) {
        return rc;
    }
    /* the problem kind is decided from the node's data, now or once it has some */
    struct adapt_open o = {
        .node = node, .problem = -1, .strategy = sid, .who = who, .overload = overload != 0};
    struct investigation *inv = adapt__open(&pl, &o);
    if (!inv) {
        rc = dq_fail(DQ_EFULL, "%s", dq_last_error());
        adapt__plan_drop(&pl);
        return rc;
    }
    if (adapt__observe_start(&pl, inv)) {
        adapt__step(&pl, inv); /* it has data: characterised (and maybe healthy) at once */
    }
    pl.track = inv->id;
    adapt__sweep(&pl.next);
    rc = commit_round(&pl, -1);
    if (rc) {
        return dq_fail(DQ_ESTORE, "the store could not record the investigation: %s",
                       dq_last_error());
    }
    *id = a->tracked;
    return *id > 0 ? DQ_OK : dq_fail(DQ_ESTORE, "the investigation was not recorded");
}

/* ---- a person's abort ---------------------------------------------------------------------- */

static int store_has(void *ctx, const struct store_investigation *row) {
    (void)row;
    *(int *)ctx = 1;
    return 0;
}

int adapt_abort(struct adapt *a, int64_t id, const char *who) {
    struct investigation *inv = NULL;
    for (int i = 0; i < a->st.n_inv; i++) {
        if (a->st.inv[i]->id == id) {
            inv = a->st.inv[i];
        }
    }
    if (!inv) {
        int found = 0;
        store_investigation_get(a->env.store, id, store_has, &found);
        if (found) {
            return dq_fail(DQ_ESTATE,
                           "investigation %" PRId64 " is closed and holds no probes any more", id);
        }
        return dq_fail(DQ_ENOTFOUND, "no investigation %" PRId64, id);
    }
    struct plan pl;
    int rc = adapt__plan_begin(a, &pl, -1, core_next_close(a->env.core));
    if (rc) {
        return rc;
    }
    for (int i = 0; i < pl.next.n_inv; i++) {
        if (pl.next.inv[i]->id == id) {
            inv = pl.next.inv[i];
        }
    }
    char reason[400];
    snprintf(reason, sizeof reason, "aborted by %.200s: releasing what the investigation enabled",
             who && *who ? who : "a person");
    if (inv->state == INV_SEARCHING) {
        adapt__fx_hyp_verdict(&pl, inv->hyp_id, "aborted");
        adapt__close(&pl, inv, "aborted", NULL,
                     json_pack("{s:s,s:s}", "reason", reason, "requested_by", who ? who : ""));
    }
    adapt__release(&pl, inv, reason);
    adapt__sweep(&pl.next);
    rc = commit_round(&pl, -1);
    if (rc) {
        return dq_fail(DQ_ESTORE, "the store could not record the abort: %s", dq_last_error());
    }
    return DQ_OK;
}

/* ---- probes a person deletes ----------------------------------------------------------- */

int64_t adapt_probe_holder(const struct adapt *a, const char *probe) {
    for (int i = 0; i < a->st.n_inv; i++) {
        const struct investigation *inv = a->st.inv[i];
        if (!inv || inv->released) {
            continue;
        }
        if (inv->state == INV_SEARCHING &&
            (strcmp(inv->node, probe) == 0 || strcmp(inv->focus, probe) == 0)) {
            return inv->id;
        }
        for (int j = 0; j < inv->n_owned; j++) {
            if (strcmp(inv->owned[j], probe) == 0) {
                return inv->id;
            }
        }
    }
    return 0;
}

int adapt_forget_probe(struct adapt *a, const char *probe) {
    int n = 0, kept = 0;
    for (int i = 0; i < a->st.n_triggers; i++) {
        if (strcmp(a->st.triggers[i].probe, probe) == 0) {
            n++;
        } else {
            a->st.triggers[kept++] = a->st.triggers[i];
        }
    }
    a->st.n_triggers = kept;
    return n;
}

/* ---- what /metrics reads ------------------------------------------------------------------ */

const char *const adapt_verdict_names[ADAPT_VERDICT_KINDS] = {
    "localized", "diffuse", "overload", "inconclusive", "healthy", "aborted", "other"};

void adapt__count_verdict(struct adapt *a, const char *verdict) {
    int k = ADAPT_VERDICT_KINDS - 1;
    for (int i = 0; verdict && i < ADAPT_VERDICT_KINDS - 1; i++) {
        if (strcmp(verdict, adapt_verdict_names[i]) == 0) {
            k = i;
        }
    }
    a->verdicts[k]++;
}

void adapt_verdict_counts(const struct adapt *a, uint64_t counts[ADAPT_VERDICT_KINDS]) {
    memcpy(counts, a->verdicts, sizeof a->verdicts);
}

int adapt_open_investigations(const struct adapt *a) {
    int n = 0;
    for (int i = 0; i < a->st.n_inv; i++) {
        n += a->st.inv[i] && a->st.inv[i]->state == INV_SEARCHING;
    }
    return n;
}

void adapt_min_sample(const struct adapt *a, uint64_t *instances, uint32_t *windows) {
    *instances = a->params.min_instances;
    *windows = a->params.min_windows;
}

void adapt_triggers_each(const struct adapt *a,
                         void (*fn)(void *ctx, const struct adapt_trigger_view *t), void *ctx) {
    for (int i = 0; i < a->st.n_triggers; i++) {
        const struct trigger *t = &a->st.triggers[i];
        struct adapt_trigger_view v = {t->probe, adapt__trigger_kind_name(t->kind), t->enabled,
                                       t->fired};
        fn(ctx, &v);
    }
}
