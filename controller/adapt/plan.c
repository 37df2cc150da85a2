/*
 * plan.c: one round of the adaptive loop as data: the next state (a deep copy of the
 * current one that the decisions change) and the ordered list of effects that make it
 * real. Rows a round creates (investigations, hypotheses, snapshots) get provisional ids
 * (−1, −2, …) that later effects may refer to; persisting replaces them with the store's
 * ids, in the effects and in the next state, before the state is kept.
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* ---- state ------------------------------------------------------------------------------ */

void adapt__turns_clear(struct investigation *inv) {
    inv->alt[0] = '\0';
    inv->alt_tried = 0;
    inv->alt_inconclusive = 0;
    inv->rest_alt[0] = inv->rest_from[0] = '\0';
    inv->rest_tried = 0;
}

struct investigation *adapt__inv_new(void) {
    struct investigation *inv = calloc(1, sizeof *inv);
    if (inv) {
        inv->verdict_value = inv->runner_value = 0.0 / 0.0;
        inv->verdict_hw = 0.0;
    }
    return inv;
}

void adapt__inv_free(struct investigation *inv) {
    if (inv) {
        adapt__overload_prev_unref(inv->ov_prev);
        free(inv->owned);
        free(inv);
    }
}

void adapt__inv_remove(struct adapt_state *st, int i) {
    adapt__inv_free(st->inv[i]);
    st->inv[i] = st->inv[--st->n_inv];
}

int adapt__owns(const struct investigation *inv, const char *name) {
    for (int i = 0; i < inv->n_owned; i++) {
        if (strcmp(inv->owned[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

int adapt__own(struct investigation *inv, const char *name) {
    if (adapt__owns(inv, name)) {
        return DQ_OK;
    }
    if (inv->n_owned >= ADAPT_MAX_OWNED) {
        return DQ_EFULL;
    }
    if (inv->n_owned == inv->cap_owned) {
        int cap = inv->cap_owned ? inv->cap_owned * 2 : 16;
        void *grown = realloc(inv->owned, (size_t)cap * sizeof *inv->owned);
        if (!grown) {
            return DQ_ENOMEM;
        }
        inv->owned = grown;
        inv->cap_owned = cap;
    }
    snprintf(inv->owned[inv->n_owned++], PROBES_NAME_MAX + 1, "%s", name);
    return DQ_OK;
}

void adapt__disown(struct investigation *inv, const char *name) {
    for (int j = 0; j < inv->n_owned; j++) {
        if (strcmp(inv->owned[j], name) == 0) {
            memcpy(inv->owned[j], inv->owned[--inv->n_owned], PROBES_NAME_MAX + 1);
            return;
        }
    }
}

static struct investigation *inv_copy(const struct investigation *src) {
    struct investigation *inv = malloc(sizeof *inv);
    if (!inv) {
        return NULL;
    }
    *inv = *src;
    adapt__overload_prev_ref(inv->ov_prev);
    inv->owned = NULL;
    inv->cap_owned = 0;
    if (src->n_owned > 0) {
        inv->owned = malloc((size_t)src->n_owned * sizeof *inv->owned);
        if (!inv->owned) {
            adapt__overload_prev_unref(inv->ov_prev);
            free(inv);
            return NULL;
        }
        memcpy(inv->owned, src->owned, (size_t)src->n_owned * sizeof *inv->owned);
        inv->cap_owned = src->n_owned;
    }
    return inv;
}

void adapt__state_release(struct adapt_state *s) {
    adapt__episodes_release(s);
    free(s->triggers);
    for (int i = 0; i < s->n_inv; i++) {
        adapt__inv_free(s->inv[i]);
    }
    memset(s, 0, sizeof *s);
}

int adapt__state_copy(struct adapt_state *dst, const struct adapt_state *src) {
    *dst = *src;
    adapt__episodes_ref(dst);
    dst->triggers = NULL;
    dst->cap_triggers = 0;
    dst->n_inv = 0;
    if (src->n_triggers > 0) {
        dst->triggers = malloc((size_t)src->n_triggers * sizeof *dst->triggers);
        if (!dst->triggers) {
            adapt__state_release(dst);
            return dq_fail(DQ_ENOMEM, "no memory for the adaptive loop's state");
        }
        memcpy(dst->triggers, src->triggers, (size_t)src->n_triggers * sizeof *dst->triggers);
        dst->cap_triggers = src->n_triggers;
    }
    for (int i = 0; i < src->n_inv; i++) {
        dst->inv[i] = inv_copy(src->inv[i]);
        if (!dst->inv[i]) {
            adapt__state_release(dst);
            return dq_fail(DQ_ENOMEM, "no memory for the adaptive loop's state");
        }
        dst->n_inv = i + 1;
    }
    return DQ_OK;
}

struct probe *adapt__probe(struct adapt *a, const char *name) {
    return probes_find(core_probes(a->env.core), name, strlen(name));
}

int adapt__no_data(const struct plan *pl, const char *name) {
    const struct probe *p = pl->wid >= 0 ? adapt__probe(pl->a, name) : NULL;
    return p && p->enabled && probes_no_data(p, pl->wid);
}

/* ---- the round ---------------------------------------------------------------------------- */

int adapt__plan_begin(struct adapt *a, struct plan *pl, int64_t wid, int64_t upto) {
    memset(pl, 0, sizeof *pl);
    pl->a = a;
    pl->wid = wid;
    pl->upto = upto;
    return adapt__state_copy(&pl->next, &a->st);
}

static void effect_release(struct effect *e) {
    for (int i = 0; i < FX_STRINGS; i++) {
        free(e->s[i]);
    }
    json_decref(e->payload);
    core_change_release(&e->change);
}

void adapt__plan_drop(struct plan *pl) {
    for (size_t i = 0; i < pl->n_fx; i++) {
        effect_release(&pl->fx[i]);
    }
    free(pl->fx);
    free(pl->real);
    adapt__state_release(&pl->next);
    memset(pl, 0, sizeof *pl);
}

/* A new effect of `kind` at the end of the list, or NULL (the round is then failed). */
static struct effect *fx_add(struct plan *pl, enum effect_kind kind) {
    if (pl->failed) {
        return NULL;
    }
    if (pl->n_fx == pl->cap_fx) {
        size_t cap = pl->cap_fx ? pl->cap_fx * 2 : 32;
        struct effect *grown = realloc(pl->fx, cap * sizeof *grown);
        if (!grown) {
            pl->failed = 1;
            return NULL;
        }
        pl->fx = grown;
        pl->cap_fx = cap;
    }
    struct effect *e = &pl->fx[pl->n_fx++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    return e;
}

/* Copies the strings into e->s (NULL stays NULL); marks the round failed on no memory. */
static void fx_strings(struct plan *pl, struct effect *e, int n, const char *const *v) {
    for (int i = 0; i < n && i < FX_STRINGS; i++) {
        if (v[i]) {
            size_t len = strlen(v[i]);
            e->s[i] = malloc(len + 1);
            if (!e->s[i]) {
                pl->failed = 1;
                return;
            }
            memcpy(e->s[i], v[i], len + 1);
        }
    }
}

/* Dumps and frees a JSON value into an owned string (NULL for NULL). */
static char *dump_json(struct plan *pl, json_t *j) {
    if (!j) {
        return NULL;
    }
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6) | JSON_ENCODE_ANY);
    json_decref(j);
    if (!s) {
        pl->failed = 1;
    }
    return s;
}

static int64_t prov(struct plan *pl) {
    return -(++pl->n_prov);
}

void adapt__fx_trigger_state(struct plan *pl, const struct trigger *t) {
    struct effect *e = fx_add(pl, FX_TRIGGER_STATE);
    if (e) {
        e->id = t->id;
        e->n1 = t->fired;
        e->n2 = t->bad;
        e->n3 = t->good;
    }
}

int64_t adapt__fx_inv_open(struct plan *pl, const struct store_investigation *row) {
    struct effect *e = fx_add(pl, FX_INV_OPEN);
    if (!e) {
        return 0;
    }
    const char *v[] = {row->node, row->problem, row->strategy, row->origin, row->requested_by};
    fx_strings(pl, e, 5, v);
    e->ref = row->trigger_id;
    e->id = prov(pl);
    return e->id;
}

void adapt__fx_inv_close(struct plan *pl, int64_t inv, const char *verdict, const char *node,
                         json_t *summary) {
    struct effect *e = fx_add(pl, FX_INV_CLOSE);
    if (!e) {
        json_decref(summary);
        return;
    }
    const char *v[] = {verdict, node};
    fx_strings(pl, e, 2, v);
    e->s[2] = dump_json(pl, summary);
    e->id = inv;
}

void adapt__fx_inv_problem(struct plan *pl, int64_t inv, const char *problem) {
    struct effect *e = fx_add(pl, FX_INV_PROBLEM);
    if (e) {
        const char *v[] = {problem};
        fx_strings(pl, e, 1, v);
        e->id = inv;
    }
}

int64_t adapt__fx_hyp(struct plan *pl, int64_t inv, int64_t parent, const char *node,
                      const char *kind, const char *action, json_t *probes, json_t *stats,
                      const char *verdict) {
    struct effect *e = fx_add(pl, FX_HYP);
    if (!e) {
        json_decref(probes);
        json_decref(stats);
        return 0;
    }
    const char *v[] = {node, kind, action};
    fx_strings(pl, e, 3, v);
    e->s[3] = dump_json(pl, probes ? probes : json_array());
    e->s[4] = dump_json(pl, stats);
    const char *vv[] = {verdict};
    if (verdict) {
        e->s[5] = NULL;
        struct effect tmp = {0};
        fx_strings(pl, &tmp, 1, vv);
        e->s[5] = tmp.s[0];
    }
    e->ref = inv;
    e->ref2 = parent;
    e->id = prov(pl);
    return e->id;
}

void adapt__fx_hyp_to(struct plan *pl, int64_t hyp, int64_t inv) {
    for (size_t i = 0; i < pl->n_fx; i++) {
        if (pl->fx[i].kind == FX_HYP && pl->fx[i].id == hyp) {
            pl->fx[i].n1 = inv;
        }
    }
}

void adapt__fx_hyp_verdict(struct plan *pl, int64_t hyp, const char *verdict) {
    struct effect *e = fx_add(pl, FX_HYP_VERDICT);
    if (e) {
        const char *v[] = {verdict};
        fx_strings(pl, e, 1, v);
        e->id = hyp;
    }
}

int64_t adapt__fx_snap_open(struct plan *pl, const struct store_snapshot *row) {
    struct effect *e = fx_add(pl, FX_SNAP_OPEN);
    if (!e) {
        return 0;
    }
    const char *v[] = {row->probe, row->reason};
    fx_strings(pl, e, 2, v);
    e->ref = row->trigger_id;
    e->ref2 = row->investigation;
    e->n1 = row->time_ns;
    e->n2 = row->windows;
    e->id = prov(pl);
    return e->id;
}

void adapt__fx_snap_dq(struct plan *pl, int64_t snap, const char *probe, enum store_kind kind,
                       int64_t start_ns, int64_t end_ns, const struct dq *q) {
    struct effect *e = fx_add(pl, FX_SNAP_DQ);
    if (e) {
        const char *v[] = {probe};
        fx_strings(pl, e, 1, v);
        e->id = snap;
        e->n1 = kind;
        e->n2 = start_ns;
        e->n3 = end_ns;
        e->dq = q;
    }
}

void adapt__fx_snap_complete(struct plan *pl, int64_t snap) {
    struct effect *e = fx_add(pl, FX_SNAP_COMPLETE);
    if (e) {
        e->id = snap;
    }
}

void adapt__fx_event(struct plan *pl, const char *kind, const char *probe,
                     const char *detail_json) {
    struct effect *e = fx_add(pl, FX_EVENT);
    if (e) {
        const char *v[] = {kind, detail_json, probe};
        fx_strings(pl, e, 3, v);
    }
}

void adapt__fx_change(struct plan *pl, enum core_change_kind kind, struct probe *p, double dmax_ms,
                      int bins, int64_t hyp) {
    int on = kind == CORE_ENABLE;
    if ((kind == CORE_ENABLE || kind == CORE_DISABLE) && adapt__plan_enabled(pl, p) == on) {
        return; /* nothing to change (an earlier decision of this round did it) */
    }
    struct effect *e = fx_add(pl, FX_CHANGE);
    if (!e) {
        return;
    }
    e->change.kind = kind;
    e->change.probe = p;
    e->change.dmax_ms = dmax_ms;
    e->change.bins = bins;
    e->ref = hyp;
    for (int i = 0; i < pl->n_over; i++) {
        if (pl->over[i].p == p) {
            pl->over[i].enabled = on;
            return;
        }
    }
    if (pl->n_over < (int)(sizeof pl->over / sizeof pl->over[0])) {
        pl->over[pl->n_over].p = p;
        pl->over[pl->n_over].enabled = on;
        pl->n_over++;
    } else {
        pl->failed = 1; /* more changes than one round can track: try again next window */
    }
}

void adapt__fx_webhook(struct plan *pl, const char *event, json_t *payload, int with_inv,
                       int64_t inv) {
    struct effect *e = fx_add(pl, FX_WEBHOOK);
    if (!e) {
        json_decref(payload);
        return;
    }
    const char *v[] = {event};
    fx_strings(pl, e, 1, v);
    e->payload = payload;
    e->n1 = with_inv;
    e->ref = inv;
}

void adapt__fx_log(struct plan *pl, int level, int64_t inv, const char *fmt, ...) {
    if (level > log_current_level) {
        return;
    }
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct effect *e = fx_add(pl, FX_LOG);
    if (e) {
        const char *v[] = {text};
        fx_strings(pl, e, 1, v);
        e->n1 = level;
        e->ref = inv;
    }
}

int adapt__plan_enabled(const struct plan *pl, const struct probe *p) {
    for (int i = 0; i < pl->n_over; i++) {
        if (pl->over[i].p == p) {
            return pl->over[i].enabled;
        }
    }
    return p->enabled;
}

size_t adapt__plan_enabled_count(const struct plan *pl) {
    struct probe_table *t = core_probes(pl->a->env.core);
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++) {
        /* a passive probe (OTLP) is observed whatever the loop does: it costs nothing */
        n += !t->probes[i]->passive && adapt__plan_enabled(pl, t->probes[i]) != 0;
    }
    return n;
}

/* ---- persist ---------------------------------------------------------------------------- */

/* The real id of a provisional one (after persist), or id itself. */
static int64_t resolve(const struct plan *pl, int64_t id) {
    if (id >= 0) {
        return id;
    }
    int64_t k = -id - 1;
    return pl->real && k < pl->n_prov ? pl->real[k] : 0;
}

static void set_real(struct plan *pl, int64_t prov_id, int64_t real) {
    if (prov_id < 0 && -prov_id - 1 < pl->n_prov) {
        pl->real[-prov_id - 1] = real;
    }
}

static int persist_one(struct plan *pl, struct effect *e) {
    struct adapt *a = pl->a;
    struct store *st = a->env.store;
    int64_t id = 0;
    int rc = DQ_OK;
    switch (e->kind) {
    case FX_TRIGGER_STATE:
        rc = store_trigger_set_state(st, e->id, e->n1 != 0, (int)e->n2, (int)e->n3);
        break;
    case FX_INV_OPEN: {
        struct store_investigation row = {.node = e->s[0],
                                          .problem = e->s[1],
                                          .strategy = e->s[2],
                                          .origin = e->s[3],
                                          .requested_by = e->s[4],
                                          .trigger_id = resolve(pl, e->ref)};
        rc = store_investigation_open(st, &row, &id);
        set_real(pl, e->id, rc ? 0 : id);
        break;
    }
    case FX_INV_CLOSE:
        rc = store_investigation_close(st, resolve(pl, e->id), e->s[0], e->s[1], e->s[2]);
        break;
    case FX_INV_PROBLEM:
        rc = store_investigation_set_problem(st, resolve(pl, e->id), e->s[0]);
        break;
    case FX_HYP: {
        char *linked = NULL; /* the stats with "to" as the real id (adapt__fx_hyp_to) */
        if (e->n1) {
            json_error_t jerr;
            json_t *stats = json_loads(e->s[4] ? e->s[4] : "{}", 0, &jerr);
            if (json_is_object(stats)) {
                json_object_set_new(stats, "to", json_integer(resolve(pl, e->n1)));
                linked = json_dumps(stats, JSON_COMPACT | JSON_REAL_PRECISION(6));
            }
            json_decref(stats);
        }
        struct store_hypothesis h = {.investigation = resolve(pl, e->ref),
                                     .parent = resolve(pl, e->ref2),
                                     .node = e->s[0],
                                     .kind = e->s[1],
                                     .action = e->s[2],
                                     .probes_json = e->s[3],
                                     .stats_json = linked ? linked : e->s[4],
                                     .verdict = e->s[5]};
        rc = store_hypothesis_insert(st, &h, &id);
        free(linked);
        set_real(pl, e->id, rc ? 0 : id);
        break;
    }
    case FX_HYP_VERDICT:
        if (resolve(pl, e->id) > 0) {
            rc = store_hypothesis_set_verdict(st, resolve(pl, e->id), e->s[0], NULL);
        }
        break;
    case FX_SNAP_OPEN: {
        struct store_snapshot row = {.trigger_id = resolve(pl, e->ref),
                                     .investigation = resolve(pl, e->ref2),
                                     .probe = e->s[0],
                                     .reason = e->s[1],
                                     .time_ns = e->n1,
                                     .windows = (int)e->n2};
        rc = store_snapshot_insert(st, &row, &id);
        set_real(pl, e->id, rc ? 0 : id);
        break;
    }
    case FX_SNAP_DQ:
        if (resolve(pl, e->id) > 0) {
            rc = store_snapshot_add_dq(st, resolve(pl, e->id), e->s[0], (enum store_kind)e->n1,
                                       e->n2, e->n3, e->dq);
        }
        break;
    case FX_SNAP_COMPLETE:
        if (resolve(pl, e->id) > 0) {
            rc = store_snapshot_complete(st, resolve(pl, e->id));
        }
        break;
    case FX_EVENT: {
        struct store_event ev = {.kind = e->s[0], .probe = e->s[2], .detail_json = e->s[1]};
        rc = store_event_add(st, &ev, NULL);
        break;
    }
    case FX_CHANGE:
        e->change.hypothesis = resolve(pl, e->ref);
        rc = core_change_record(a->env.core, &e->change);
        if (rc == DQ_ESTORE || rc == DQ_ENOTFOUND || rc == DQ_EINVAL) {
            rc = DQ_OK; /* counted by the core; the change itself can still be made */
        }
        return rc;
    case FX_WEBHOOK:
    case FX_LOG:
        break;
    }
    if (rc) {
        core_count_store_error(a->env.core);
        LOG(LOG_ERROR, "store: adaptive loop: %s", dq_last_error());
    }
    return rc;
}

int adapt__plan_persist(struct plan *pl) {
    if (pl->failed) {
        return dq_fail(DQ_ENOMEM, "no memory for the adaptive loop's decisions");
    }
    if (pl->n_prov > 0) {
        pl->real = calloc((size_t)pl->n_prov, sizeof *pl->real);
        if (!pl->real) {
            return dq_fail(DQ_ENOMEM, "no memory for the adaptive loop's decisions");
        }
    }
    int result = DQ_OK;
    for (size_t i = 0; i < pl->n_fx; i++) {
        int rc = persist_one(pl, &pl->fx[i]);
        if (rc == DQ_ENOMEM) {
            return rc;
        }
        result = result ? result : rc;
    }
    return result;
}

/* ---- act ---------------------------------------------------------------------------------- */

/* Provisional ids in the next state become the store's. */
static void patch_state(struct plan *pl) {
    struct adapt_state *s = &pl->next;
    for (int i = 0; i < s->n_inv; i++) {
        s->inv[i]->id = resolve(pl, s->inv[i]->id);
        s->inv[i]->hyp_id = resolve(pl, s->inv[i]->hyp_id);
        s->inv[i]->trigger_id = resolve(pl, s->inv[i]->trigger_id);
    }
    for (int i = 0; i < s->n_triggers; i++) {
        s->triggers[i].waits_for = resolve(pl, s->triggers[i].waits_for);
    }
    for (int i = 0; i < s->n_snaps; i++) {
        s->snaps[i].id = resolve(pl, s->snaps[i].id);
    }
    for (int i = 0; i < s->n_episodes; i++) {
        s->episodes[i].inv_id = resolve(pl, s->episodes[i].inv_id);
        s->episodes[i].trigger_id = resolve(pl, s->episodes[i].trigger_id);
    }
}

/* A recorded hypothesis as an event: its ids, node, action, probes and reason. */
static json_t *hyp_event(struct plan *pl, const struct effect *e) {
    json_error_t err;
    json_t *probes = e->s[3] ? json_loads(e->s[3], 0, &err) : NULL;
    json_t *stats = e->s[4] ? json_loads(e->s[4], 0, &err) : NULL;
    json_t *reason = json_object_get(stats, "reason");
    int64_t parent = resolve(pl, e->ref2);
    json_t *ev = json_pack("{s:I,s:I,s:o,s:s?,s:s?,s:s?,s:o,s:O?,s:s?}", "investigation",
                           (json_int_t)resolve(pl, e->ref), "id", (json_int_t)resolve(pl, e->id),
                           "parent", parent > 0 ? json_integer(parent) : json_null(), "node",
                           e->s[0], "kind", e->s[1], "action", e->s[2], "probes",
                           json_is_array(probes) ? json_incref(probes) : json_array(), "reason",
                           json_is_string(reason) ? reason : NULL, "verdict", e->s[5]);
    json_decref(probes);
    json_decref(stats);
    return ev;
}

void adapt__plan_act(struct plan *pl) {
    struct adapt *a = pl->a;
    a->tracked = pl->track ? resolve(pl, pl->track) : 0;
    patch_state(pl);
    adapt__state_release(&a->st);
    a->st = pl->next;
    memset(&pl->next, 0, sizeof pl->next);
    a->rounds++;
    for (size_t i = 0; i < pl->n_fx; i++) {
        struct effect *e = &pl->fx[i];
        switch (e->kind) {
        case FX_CHANGE:
            if (e->change.recorded) {
                core_change_apply(a->env.core, &e->change);
            }
            break;
        case FX_WEBHOOK:
            if (e->n1) {
                int64_t inv = resolve(pl, e->ref);
                json_object_set_new(e->payload, "investigation",
                                    inv ? json_integer(inv) : json_null());
            }
            if (a->env.emit) {
                a->env.emit(a->env.emit_ctx, e->s[0], e->payload);
            } else {
                json_decref(e->payload);
            }
            e->payload = NULL;
            break;
        case FX_HYP:
            if (a->env.emit) {
                a->env.emit(a->env.emit_ctx, "hypothesis", hyp_event(pl, e));
            }
            break;
        case FX_INV_CLOSE:
            adapt__count_verdict(a, e->s[0]);
            break;
        case FX_LOG:
            if (e->ref) {
                LOG((int)e->n1, "investigation %" PRId64 "%s", resolve(pl, e->ref), e->s[0]);
            } else {
                LOG((int)e->n1, "%s", e->s[0]);
            }
            break;
        default:
            break;
        }
    }
    adapt__plan_drop(pl);
}
