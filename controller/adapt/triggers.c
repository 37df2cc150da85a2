/*
 * triggers.c: per-probe conditions with hysteresis, evaluated on every closed window. A
 * trigger fires after fire_after bad windows in a row and clears after clear_after good
 * ones; a window without data for its condition changes nothing. A firing stores a
 * snapshot and opens an investigation at the probe when it has finer probes; when another
 * investigation searches there, the trigger waits for its verdict (run_waiting).
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

static const char *const trigger_names[TRIG_KIND_COUNT] = {"qta", "load", "lost", "divergence",
                                                           "cv"};
/* Default thresholds: QTA any hazard; load 1000 instances/window; lost 5 %; divergence
 * KS D over 0.1 (and p < alpha); CV over 1. */
static const double trigger_defaults[TRIG_KIND_COUNT] = {0.0, 1000.0, 0.05, 0.1, 1.0};

const char *adapt__trigger_kind_name(enum trigger_kind k) {
    return k < TRIG_KIND_COUNT ? trigger_names[k] : "?";
}

int adapt__trigger_kind_parse(const char *s, enum trigger_kind *k) {
    for (int i = 0; i < TRIG_KIND_COUNT; i++) {
        if (s && strcmp(s, trigger_names[i]) == 0) {
            *k = (enum trigger_kind)i;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_EINVAL, "unknown trigger kind \"%s\" (qta, load, lost, divergence, cv)",
                   s ? s : "");
}

int adapt_trigger_kind_check(const char *kind) {
    enum trigger_kind k;
    return adapt__trigger_kind_parse(kind, &k);
}

static struct trigger *trigger_find(struct adapt_state *st, const char *probe,
                                    enum trigger_kind k) {
    for (int i = 0; i < st->n_triggers; i++) {
        if (st->triggers[i].kind == k && strcmp(st->triggers[i].probe, probe) == 0) {
            return &st->triggers[i];
        }
    }
    return NULL;
}

/* A new zeroed trigger at the end of st's array in *out. DQ_EFULL, DQ_ENOMEM. */
static int trigger_append(struct adapt_state *st, struct trigger **out) {
    if (st->n_triggers >= ADAPT_MAX_TRIGGERS) {
        return dq_fail(DQ_EFULL, "at most %d triggers", ADAPT_MAX_TRIGGERS);
    }
    if (st->n_triggers == st->cap_triggers) {
        int cap = st->cap_triggers ? st->cap_triggers * 2 : 8;
        struct trigger *grown = realloc(st->triggers, (size_t)cap * sizeof *grown);
        if (!grown) {
            return dq_fail(DQ_ENOMEM, "no memory for a trigger");
        }
        st->triggers = grown;
        st->cap_triggers = cap;
    }
    struct trigger *t = &st->triggers[st->n_triggers++];
    memset(t, 0, sizeof *t);
    t->last_wid = -1;
    *out = t;
    return DQ_OK;
}

int adapt__trigger_load(struct adapt_state *st, const struct store_trigger *row) {
    enum trigger_kind k;
    if (adapt__trigger_kind_parse(row->kind, &k) != DQ_OK) {
        return DQ_OK; /* a kind this dqd does not know: left alone */
    }
    struct trigger *t = NULL;
    int rc = trigger_append(st, &t);
    if (rc) {
        return rc == DQ_EFULL ? DQ_OK : rc; /* beyond the limit: left in the store only */
    }
    t->id = row->id;
    snprintf(t->probe, sizeof t->probe, "%s", row->probe);
    t->kind = k;
    t->threshold = row->threshold;
    t->fire_after = row->fire_after;
    t->clear_after = row->clear_after;
    t->enabled = row->enabled;
    t->fired = row->fired;
    t->bad = row->bad;
    t->good = row->good;
    return DQ_OK;
}

int adapt_set_trigger(struct adapt *a, const char *probe, const char *kind, double threshold,
                      int fire_after, int clear_after, int enabled) {
    enum trigger_kind k;
    int rc = adapt__trigger_kind_parse(kind, &k);
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
    if ((rc = probes_get(core_probes(a->env.core), probe, strlen(probe), &p))) {
        return rc;
    }
    struct trigger *t = trigger_find(&a->st, probe, k);
    if (!t && a->st.n_triggers >= ADAPT_MAX_TRIGGERS) {
        return dq_fail(DQ_EFULL, "at most %d triggers", ADAPT_MAX_TRIGGERS);
    }
    /* the store first: a trigger that is not recorded does not exist */
    core_save_probe(a->env.core, p); /* the trigger row references the probe row */
    struct store_trigger row = {.probe = probe,
                                .kind = kind,
                                .threshold = threshold,
                                .fire_after = fire_after,
                                .clear_after = clear_after,
                                .enabled = enabled};
    int64_t id = 0;
    if (store_trigger_upsert(a->env.store, &row, &id) != DQ_OK) {
        core_count_store_error(a->env.core);
        return dq_fail(DQ_ESTORE, "storing the trigger: %s", dq_last_error());
    }
    int clears = t && !enabled && (t->fired || t->bad || t->good);
    if (clears && store_trigger_set_state(a->env.store, id, false, 0, 0) != DQ_OK) {
        core_count_store_error(a->env.core);
    }
    if (!t) {
        if ((rc = trigger_append(&a->st, &t))) {
            return rc;
        }
        snprintf(t->probe, sizeof t->probe, "%s", probe);
        t->kind = k;
    }
    t->id = id;
    t->threshold = threshold;
    t->fire_after = fire_after;
    t->clear_after = clear_after;
    t->enabled = enabled;
    if (clears) {
        /* a disabled trigger holds nothing open: its investigation may de-escalate */
        t->fired = t->bad = t->good = 0;
    }
    return DQ_OK;
}

int adapt_trigger_get(const struct adapt *a, const char *probe, const char *kind,
                      struct adapt_trigger_info *out) {
    enum trigger_kind k;
    int rc = adapt__trigger_kind_parse(kind, &k);
    if (rc) {
        return rc;
    }
    for (int i = 0; i < a->st.n_triggers; i++) {
        const struct trigger *t = &a->st.triggers[i];
        if (t->kind == k && strcmp(t->probe, probe) == 0) {
            out->threshold = t->threshold;
            out->fire_after = t->fire_after;
            out->clear_after = t->clear_after;
            out->enabled = t->enabled;
            out->fired = t->fired;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_ENOTFOUND, "no %s trigger on %s", kind, probe);
}

/* 1 bad, 0 good, −1 no opinion (no data) for trigger t on window w of p. */
static int trigger_bad(const struct adapt *a, const struct trigger *t, const struct probe *p,
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
        return dd > th && pv < a->params.alpha;
    }
    default:
        return -1;
    }
}

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

/* The store's event of a trigger's firing or clearing (its mark on the dashboard). */
static void trigger_event(struct plan *pl, const char *kind, const struct trigger *t) {
    char detail[160];
    snprintf(detail, sizeof detail,
             "{\"kind\":\"%s\",\"trigger\":%" PRId64 ",\"bad\":%d,\"good\":%d}",
             trigger_names[t->kind], t->id, t->bad, t->good);
    adapt__fx_event(pl, kind, t->probe, detail);
}

/* A QTA trigger's windows (from its first bad one) where the failures break the QTA
 * (search_qta_lost, against its baseline before them when it has one): its investigation
 * follows the lost mass, as a lost trigger's would. A
 * lost trigger on the same probe may fire a window later, or not at all (its threshold). */
static int qta_lost(struct plan *pl, const struct trigger *t, char *why, size_t cap) {
    return adapt__qta_lost(pl, adapt__probe(pl->a, t->probe), t->bad_from, why, cap);
}

/* An investigation at the fired trigger t's probe when it has children, no earlier verdict
 * holds its problem and none searches there; when one does, t waits for it (waits_for). */
static struct investigation *open_for(struct plan *pl, struct trigger *t, int64_t follows,
                                      const char *why) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int node = g ? dq_diagram_find(g, t->probe) : -1;
    if (node < 0 || dq_diagram_probe_children(g, node, NULL, 0) == 0) {
        return NULL;
    }
    if (adapt__trigger_held(&pl->next, t->id)) {
        /* its problem never ended: the verdict that holds it is re-checked (deescalate.c) */
        adapt__fx_log(pl, LOG_INFO, 0,
                      "trigger %s on %s: its earlier verdict still holds the problem, no new "
                      "investigation",
                      trigger_names[t->kind], t->probe);
        return NULL;
    }
    const struct investigation *busy = adapt__investigation_at(&pl->next, t->probe);
    if (busy && busy->trigger_id == t->id) {
        return NULL; /* its own, from a firing before this one: still on it */
    }
    if (busy) {
        /* the problem may be the one that investigation follows: its verdict first */
        t->waits_for = busy->id;
        adapt__fx_log(pl, LOG_INFO, busy->id,
                      " searches at %s already: trigger %s on %s waits for it, and opens its "
                      "own investigation if it is still fired once that one is over",
                      t->probe, trigger_names[t->kind], t->probe);
        return NULL;
    }
    char lost_why[300] = "";
    enum search_problem problem = trigger_problem(t->kind);
    if (t->kind == TRIG_QTA && qta_lost(pl, t, lost_why, sizeof lost_why)) {
        problem = SEARCH_LOST;
    }
    struct adapt_open o = {.node = t->probe,
                           .problem = (int)problem,
                           .strategy = SEARCH_CHILDREN,
                           .trigger_id = t->id,
                           .overload = t->kind == TRIG_LOAD,
                           .problem_why = lost_why[0] ? lost_why : NULL,
                           .follows = follows,
                           .why = why};
    return adapt__open(pl, &o);
}

/* A trigger fired: an investigation at its probe (open_for), a snapshot, a webhook. */
static void fired(struct plan *pl, struct trigger *t) {
    adapt__fx_log(pl, LOG_WARN, 0, "trigger %s on %s fired after %d bad windows",
                  trigger_names[t->kind], t->probe, t->bad);
    t->waits_for = 0;
    struct investigation *inv = open_for(pl, t, 0, NULL);
    adapt__snapshot_start(pl, t, inv ? inv->id : 0);
    trigger_event(pl, "trigger_fired", t);
    adapt__fx_webhook(pl, "trigger_fired",
                      json_pack("{s:s,s:s,s:I}", "probe", t->probe, "kind", trigger_names[t->kind],
                                "trigger", (json_int_t)t->id),
                      1, inv ? inv->id : 0);
}

/* A trigger that waits for another investigation (open_for): while that one searches, or
 * has found where the time goes (localized, overload) and keeps its probes, its verdict may
 * explain this problem too. Once it ended otherwise (diffuse, healthy, inconclusive,
 * aborted by a person: about its own problem, not this one) or let its probes go, and t
 * is still fired, nothing follows t's problem, and an investigation opens for it (sharing
 * the probes the other still holds), or t waits for the next one searching there. */
static void run_waiting(struct plan *pl, struct trigger *t) {
    if (!t->waits_for) {
        return;
    }
    if (!t->fired || !t->enabled) {
        t->waits_for = 0;
        return;
    }
    const struct adapt_state *st = &pl->next;
    const struct investigation *o = NULL;
    for (int i = 0; i < st->n_inv && !o; i++) {
        o = st->inv[i]->id == t->waits_for ? st->inv[i] : NULL;
    }
    if (o && adapt__inv_may_explain(o)) {
        return;
    }
    int64_t was = t->waits_for;
    char ended[64] = "it let its probes go";
    if (o) {
        snprintf(ended, sizeof ended, "%s%s", o->verdict,
                 o->released ? ", and it let its probes go" : "");
    }
    t->waits_for = 0;
    char why[PROBES_NAME_MAX * 2 + 260];
    snprintf(why, sizeof why,
             "the %s trigger on %s fired while investigation %" PRId64
             " searched there; that one is over, and no verdict of it holds this problem "
             "(%s): the trigger is still fired",
             trigger_names[t->kind], t->probe, was, ended);
    if (open_for(pl, t, was, why)) {
        adapt__fx_log(pl, LOG_WARN, 0, "%s: an investigation opens for it", why);
    } else if (!t->waits_for && !adapt__trigger_held(st, t->id) &&
               !adapt__investigation_at(&pl->next, t->probe)) {
        t->waits_for = was; /* none could open (the table is full): again next window */
    }
}

/* A trigger whose state changed this round: said, and its problem opened or ended. */
static void changed(struct plan *pl, struct trigger *t) {
    if (t->fired) {
        /* the problem began with the first bad window: baselines end there */
        adapt__episode_open(pl, t->probe, t->bad_from, t->id, 0);
        /* opening an investigation may not move the array: t stays valid */
        fired(pl, t);
        return;
    }
    /* the problem ends when its node is back to normal (adapt__episodes_settle): a trigger
     * that flaps around its threshold is not the fault going away */
    adapt__fx_log(pl, LOG_INFO, 0, "trigger %s on %s cleared after %d good windows",
                  trigger_names[t->kind], t->probe, t->good);
    trigger_event(pl, "trigger_cleared", t);
    adapt__fx_webhook(pl, "trigger_cleared",
                      json_pack("{s:s,s:s,s:I}", "probe", t->probe, "kind", trigger_names[t->kind],
                                "trigger", (json_int_t)t->id),
                      0, 0);
}

void adapt__run_triggers(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    unsigned char moved[ADAPT_MAX_TRIGGERS] = {0};
    for (int i = 0; i < st->n_triggers; i++) {
        struct trigger *t = &st->triggers[i];
        struct probe *p = adapt__probe(pl->a, t->probe);
        const struct probe_window *w = t->enabled && p ? probes_ring_find(p, pl->wid) : NULL;
        if (!w) {
            continue;
        }
        int bad = trigger_bad(pl->a, t, p, w);
        if (bad < 0) {
            continue;
        }
        t->last_wid = pl->wid;
        int was = t->fired;
        if (bad) {
            if (t->bad == 0) {
                t->bad_from = pl->wid;
            }
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
        adapt__fx_trigger_state(pl, t);
        moved[i] = (unsigned char)(t->fired != was);
    }
    /* the changes after every state is known: a lost trigger that fires in the same window
     * as another on its probe opens the investigation first (failures break a QTA too,
     * and the lost mass says more precisely what is wrong), then the rest in their order */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < st->n_triggers; i++) {
            struct trigger *t = &st->triggers[i];
            if (moved[i] && (pass == 0) == (t->fired && t->kind == TRIG_LOST)) {
                changed(pl, t);
            }
        }
    }
    for (int i = 0; i < st->n_triggers; i++) {
        if (!moved[i]) {
            run_waiting(pl, &st->triggers[i]);
        }
    }
}
