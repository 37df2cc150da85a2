/*
 * resume.c: the loop's state rebuilt from the store when dqd starts. Triggers come back
 * with their hysteresis counters; an open investigation comes back with its focus (the
 * newest root or descend hypothesis) and the probes its expand hypotheses enabled or its
 * share hypotheses took over, minus those its disable hypotheses released; a closed one that still
 * owns enabled probes comes back to be de-escalated.
 */
#include "adapt_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dq_error.h"

static int load_trigger(void *ctx, const struct store_trigger *row) {
    struct adapt *a = ctx;
    int rc = adapt__trigger_load(&a->st, row);
    struct trigger *t = a->st.n_triggers > 0 ? &a->st.triggers[a->st.n_triggers - 1] : NULL;
    if (rc == DQ_OK && t && t->id == row->id && row->fired && row->fired_ns > 0) {
        /* still fired: its problem goes on, from its first bad window */
        t->bad_from = core_window_of(a->env.core, row->fired_ns) - (t->fire_after - 1);
        adapt__episode_resume(&a->st, t->probe, t->bad_from, t->id, 0);
    }
    return rc;
}

/* Adds (add = 1) or removes the probes named in a hypothesis's JSON list. */
static void owned_from_json(struct investigation *inv, const char *probes_json, int add) {
    json_error_t err;
    json_t *list = probes_json ? json_loads(probes_json, 0, &err) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const char *name = json_string_value(v);
        if (!name) {
            continue;
        }
        if (add) {
            adapt__own(inv, name);
        } else {
            adapt__disown(inv, name);
        }
    }
    json_decref(list);
}

/* The culprits found so far, from a `culprit` hypothesis (its evidence lists them, each
 * with the reference it was put back to: verdict.c name_culprits); the search goes on
 * from the node, and the first culprit's parent is where the focus was then. */
static void culprits_from_json(struct investigation *inv, const struct store_hypothesis *h) {
    json_error_t err;
    json_t *st = h->stats_json ? json_loads(h->stats_json, 0, &err) : NULL;
    const json_t *list = json_object_get(json_object_get(st, "evidence"), "culprits");
    if (json_is_array(list) && json_array_size(list) > 0) {
        if (inv->n_culprits == 0) {
            snprintf(inv->culprit_parent, sizeof inv->culprit_parent, "%s", inv->focus);
            /* the first culprit's numbers, as verdict.c localized() kept them */
            const char *p0 = json_string_value(json_object_get(json_array_get(list, 0), "probe"));
            const char *r0 =
                json_string_value(json_object_get(json_array_get(list, 0), "reference"));
            const json_t *kids = json_object_get(json_object_get(st, "evidence"), "children");
            size_t j;
            const json_t *kid;
            inv->runner_value = 0.0;
            json_array_foreach(kids, j, kid) {
                const char *n = json_string_value(json_object_get(kid, "node"));
                if (n && p0 && strcmp(n, p0) == 0) {
                    inv->verdict_value = json_number_value(json_object_get(kid, "contribution"));
                    inv->verdict_hw = json_number_value(json_object_get(kid, "half_width"));
                } else if (n && r0 && strcmp(n, r0) == 0) {
                    inv->runner_value = json_number_value(json_object_get(kid, "contribution"));
                }
            }
        }
        inv->n_culprits = 0;
        size_t i;
        const json_t *c;
        json_array_foreach(list, i, c) {
            const char *probe = json_string_value(json_object_get(c, "probe"));
            const char *ref = json_string_value(json_object_get(c, "reference"));
            if (probe && inv->n_culprits < ADAPT_MAX_CULPRITS) {
                int k = inv->n_culprits++;
                snprintf(inv->culprits[k], sizeof inv->culprits[k], "%s", probe);
                snprintf(inv->culprit_ref[k], sizeof inv->culprit_ref[k], "%s",
                         ref && strcmp(ref, "its baseline") != 0 ? ref : "");
            }
        }
        snprintf(inv->focus, sizeof inv->focus, "%s", inv->node);
        inv->hyp_id = h->id;
    }
    json_decref(st);
}

/* Replays an investigation's hypotheses: the newest root/descend sets the focus. */
static int replay_hypothesis(void *ctx, const struct store_hypothesis *h) {
    struct investigation *inv = ctx;
    if (strcmp(h->action, "root") == 0 || strcmp(h->action, "descend") == 0) {
        snprintf(inv->focus, sizeof inv->focus, "%s", h->node);
        inv->hyp_id = h->id;
        json_error_t err;
        json_t *st = h->stats_json ? json_loads(h->stats_json, 0, &err) : NULL;
        if (strcmp(h->action, "root") == 0 && json_is_true(json_object_get(st, "overload"))) {
            /* opened as an overload investigation: one that knew its problem weighs stages */
            inv->overload_asked = 1;
            inv->mode =
                inv->mode == SEARCH_MODE_OBSERVE ? SEARCH_MODE_OBSERVE : SEARCH_MODE_OVERLOAD;
        }
        /* a choice weighed without baselines: its runner-up branch, and whether this
         * descent is the runner-up's turn (verdict.c) */
        const json_t *alt = json_object_get(st, "alternative");
        const char *runner = json_string_value(json_object_get(alt, "runner_up"));
        const char *branch = json_string_value(json_object_get(alt, "branch"));
        const char *of = json_string_value(json_object_get(st, "alternative_of"));
        if (runner && branch) { /* a new turn: verdict.c keep_alternative */
            snprintf(inv->alt, sizeof inv->alt, "%s", runner);
            snprintf(inv->alt_from, sizeof inv->alt_from, "%s", branch);
            inv->alt_kind = adapt__alt_kind(json_string_value(json_object_get(alt, "kind")));
            inv->alt_tried = 0;
            inv->alt_inconclusive = 0;
        } else if (of) {
            snprintf(inv->alt_from, sizeof inv->alt_from, "%s", of);
            inv->alt[0] = '\0';
            inv->alt_tried = 1;
            inv->alt_inconclusive =
                json_is_true(json_object_get(st, "alternative_of_inconclusive"));
        }
        /* after a culprit: the node's runner-up kept for the rest of its change */
        const json_t *rest = json_object_get(st, "rest_alternative");
        const char *rest_runner = json_string_value(json_object_get(rest, "runner_up"));
        const char *rest_branch = json_string_value(json_object_get(rest, "branch"));
        const char *rest_of = json_string_value(json_object_get(st, "rest_alternative_of"));
        if (rest_runner && rest_branch) {
            snprintf(inv->rest_alt, sizeof inv->rest_alt, "%s", rest_runner);
            snprintf(inv->rest_from, sizeof inv->rest_from, "%s", rest_branch);
            inv->rest_tried = 0;
        } else if (rest_of) {
            snprintf(inv->rest_from, sizeof inv->rest_from, "%s", rest_of);
            inv->rest_tried = 1;
            inv->alt[0] = '\0';
        }
        const json_t *ov = json_object_get(st, "overload");
        if (json_is_object(ov)) { /* an overload descent: the stages weighed above */
            struct overload_prev *prev = adapt__overload_prev_from_json(ov, h->node);
            if (prev) {
                adapt__overload_prev_unref(inv->ov_prev);
                inv->ov_prev = prev;
            }
        }
        json_decref(st);
    } else if (strcmp(h->action, "check") == 0) {
        /* the problem was decided here: the search starts from this hypothesis */
        inv->hyp_id = h->id;
        json_error_t err;
        json_t *st = h->stats_json ? json_loads(h->stats_json, 0, &err) : NULL;
        const char *mode = json_string_value(json_object_get(st, "mode"));
        /* the part of the distribution that moved, and the point a tail problem lies
         * beyond: as follow_problem took them from the check's first problem */
        const json_t *first =
            json_array_get(json_object_get(json_object_get(st, "check"), "problems"), 0);
        inv->shape_level = json_number_value(json_object_get(first, "level"));
        inv->tail_at = inv->problem == SEARCH_VARIANCE
                           ? json_number_value(json_object_get(first, "beyond"))
                           : 0.0;
        if (mode && strcmp(mode, "contributor") == 0) {
            inv->mode = SEARCH_MODE_CONTRIBUTOR;
        } else if ((mode && strcmp(mode, "overload") == 0) || inv->overload_asked) {
            inv->mode = SEARCH_MODE_OVERLOAD;
        } else {
            inv->mode = SEARCH_MODE_PROBLEM;
        }
        json_decref(st);
    } else if (strcmp(h->action, "culprit") == 0) {
        adapt__turns_clear(inv); /* the search went on afresh from the node */
        culprits_from_json(inv, h);
    } else if (strcmp(h->action, "expand") == 0) {
        owned_from_json(inv, h->probes_json, 1);
        inv->hyp_id = h->id;
    } else if (strcmp(h->action, "enable") == 0 || strcmp(h->action, "share") == 0) {
        owned_from_json(inv, h->probes_json, 1);
    } else if (strcmp(h->action, "disable") == 0 || strcmp(h->action, "handover") == 0) {
        owned_from_json(inv, h->probes_json, 0);
        inv->released |= strcmp(h->action, "handover") == 0;
    }
    return 0;
}

/* An investigation as its row and its hypotheses describe it (NULL: no memory). */
static struct investigation *rebuild(struct adapt *a, const struct store_investigation *row) {
    struct investigation *inv = adapt__inv_new();
    if (!inv) {
        return NULL;
    }
    inv->id = row->id;
    snprintf(inv->node, sizeof inv->node, "%s", row->node);
    /* "unknown": a person's investigation still deciding its problem; "none": healthy */
    int decided = search_problem_parse(row->problem, &inv->problem) == DQ_OK ||
                  strcmp(row->problem, "none") == 0;
    inv->mode = decided ? SEARCH_MODE_PROBLEM : SEARCH_MODE_OBSERVE;
    search_strategy_parse(row->strategy, &inv->strategy);
    inv->trigger_id = row->trigger_id;
    store_hypotheses_of_investigation(a->env.store, inv->id, replay_hypothesis, inv);
    if (!row->open && row->verdict) {
        snprintf(inv->verdict, sizeof inv->verdict, "%s", row->verdict);
    }
    return inv;
}

static int resume_one(void *ctx, const struct store_investigation *row) {
    struct adapt *a = ctx;
    struct adapt_state *st = &a->st;
    if (st->n_inv >= ADAPT_MAX_INVESTIGATIONS) {
        return 0;
    }
    struct investigation *inv = rebuild(a, row);
    if (!inv) {
        return 0;
    }
    if (inv->released) { /* handed over to another investigation */
        adapt__inv_free(inv);
        return 0;
    }
    if (row->open) {
        if (!inv->focus[0]) {
            snprintf(inv->focus, sizeof inv->focus, "%s", inv->node);
        }
        adapt__focus_on(a, inv, inv->focus, inv->hyp_id, core_next_close(a->env.core));
        LOG(LOG_INFO, "investigation %" PRId64 " resumed at %s (%d probe(s) owned)", inv->id,
            inv->focus, inv->n_owned);
    } else {
        int still = 0;
        for (int i = 0; i < inv->n_owned; i++) {
            struct probe *p = adapt__probe(a, inv->owned[i]);
            still |= p && p->enabled;
        }
        if (!still) {
            adapt__inv_free(inv);
            return 0;
        }
        inv->state = INV_CLOSED;
        snprintf(inv->verdict_node, sizeof inv->verdict_node, "%s",
                 row->verdict_node ? row->verdict_node : "");
        LOG(LOG_INFO,
            "investigation %" PRId64 " (closed) still owns %d probe(s): de-escalation resumes",
            inv->id, inv->n_owned);
    }
    enum search_problem prob;
    if (!inv->trigger_id && search_problem_parse(row->problem, &prob) == DQ_OK &&
        (row->open || strcmp(inv->verdict, "localized") == 0)) {
        /* a person's problem goes on: the windows from its start are never baseline, so
         * the probes the search enabled do not learn the fault as their normal */
        adapt__episode_resume(st, inv->node, core_window_of(a->env.core, row->opened_ns), 0,
                              inv->id);
    }
    st->inv[st->n_inv++] = inv;
    return 0;
}

/* The closed ones only (open ones were resumed by the first pass). */
static int resume_closed(void *ctx, const struct store_investigation *row) {
    return row->open ? 0 : resume_one(ctx, row);
}

/* waits_for is not stored (triggers.c run_waiting): a fired trigger whose own
 * investigation is not searching and holds no localized verdict waits again for the one
 * searching at its probe, else for the newest one there whose localized or overload
 * verdict keeps its probes. */
static void resume_waiting(struct adapt_state *st) {
    for (int i = 0; i < st->n_triggers; i++) {
        struct trigger *t = &st->triggers[i];
        int own = 0;
        const struct investigation *busy = NULL, *held = NULL;
        for (int k = 0; t->fired && k < st->n_inv; k++) {
            const struct investigation *o = st->inv[k];
            int searching = o->state == INV_SEARCHING;
            if (o->trigger_id == t->id) {
                own |= searching || strcmp(o->verdict, "localized") == 0;
            } else if (strcmp(o->node, t->probe) == 0 && adapt__inv_may_explain(o)) {
                busy = searching ? o : busy;
                held = !searching && (!held || o->id > held->id) ? o : held;
            }
        }
        busy = busy ? busy : held;
        t->waits_for = t->fired && !own && busy ? busy->id : 0;
    }
}

int adapt__resume(struct adapt *a) {
    int rc = store_triggers_each(a->env.store, NULL, load_trigger, a);
    if (!rc) {
        rc = store_investigations_each(a->env.store, true, 0, resume_one, a);
    }
    if (!rc) {
        rc = store_investigations_each(a->env.store, false, 200, resume_closed, a);
    }
    if (!rc) {
        resume_waiting(&a->st);
    }
    return rc;
}
