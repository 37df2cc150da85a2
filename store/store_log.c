/*
 * store_log.c: the adaptive loop's log (schema version 2): triggers with their hysteresis
 * state, investigations, the hypothesis forest, and the commands sent to wrappers.
 *
 * Every decision of the loop lands here so that `dqctl why` and `dqctl log` can answer
 * from the database alone, after a restart too. The volume is small (a few rows per
 * investigation step, one trigger update per window), so the queries favour clarity; the
 * hypothesis lookups by probe scan the JSON lists of probes with json_each.
 */
#include "store.h"
#include "store_internal.h"

#include <math.h>
#include <stdio.h>

/* ---- triggers --------------------------------------------------------------------- */

#define TRIGGER_COLUMNS                                                                            \
    "id, probe, kind, threshold, fire_after, clear_after, params, enabled, state, bad, good,"      \
    " fired_ns, cleared_ns, created_ns, updated_ns"

static int trigger_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    const char *state = store__column_text(s, 8);
    struct store_trigger t = {
        .id = sqlite3_column_int64(s, 0),
        .probe = store__column_text(s, 1),
        .kind = store__column_text(s, 2),
        .threshold = store__column_double(s, 3),
        .fire_after = sqlite3_column_int(s, 4),
        .clear_after = sqlite3_column_int(s, 5),
        .params_json = store__column_text(s, 6),
        .enabled = sqlite3_column_int(s, 7) != 0,
        .fired = state && state[0] == 'f',
        .bad = sqlite3_column_int(s, 9),
        .good = sqlite3_column_int(s, 10),
        .fired_ns = sqlite3_column_int64(s, 11),
        .cleared_ns = sqlite3_column_int64(s, 12),
        .created_ns = sqlite3_column_int64(s, 13),
        .updated_ns = sqlite3_column_int64(s, 14),
    };
    return it->cb.trigger(it->ctx, &t);
}

int store_trigger_upsert(struct store *st, const struct store_trigger *t, int64_t *id) {
    if (!t || !t->probe || !t->kind) {
        return dq_fail(DQ_EINVAL, "store_trigger_upsert: NULL trigger, probe or kind");
    }
    if (t->fire_after < 1 || t->clear_after < 1) {
        return dq_fail(DQ_ERANGE, "trigger %s/%s: fire_after %d and clear_after %d must be ≥ 1",
                       t->probe, t->kind, t->fire_after, t->clear_after);
    }
    sqlite3_stmt *s;
    int rc =
        store__prepare(st, STORE__TRIGGER_UPSERT,
                       "INSERT INTO triggers (probe, kind, threshold, fire_after, clear_after,"
                       " params, enabled, created_ns, updated_ns)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)"
                       " ON CONFLICT (probe, kind) DO UPDATE SET threshold = excluded.threshold,"
                       " fire_after = excluded.fire_after, clear_after = excluded.clear_after,"
                       " params = excluded.params, enabled = excluded.enabled,"
                       " updated_ns = excluded.updated_ns RETURNING id",
                       &s, "ttdiitbl", t->probe, t->kind, t->threshold, t->fire_after,
                       t->clear_after, t->params_json, t->enabled, store__now(st));
    if (rc) {
        return rc;
    }
    if (sqlite3_step(s) != SQLITE_ROW) {
        char what[128];
        snprintf(what, sizeof what, "trigger %.64s/%.32s", t->probe, t->kind);
        rc = store__fail(st, what);
    } else if (id) {
        *id = sqlite3_column_int64(s, 0);
    }
    /* Step to the end so that the statement's write is complete before the reset. */
    if (rc == DQ_OK && sqlite3_step(s) != SQLITE_DONE) {
        rc = store__fail(st, "trigger upsert");
    }
    store__done(s);
    return rc;
}

int store_trigger_set_state(struct store *st, int64_t id, bool fired, int bad, int good) {
    if (bad < 0 || good < 0) {
        return dq_fail(DQ_ERANGE, "trigger %lld: negative counters %d / %d", (long long)id, bad,
                       good);
    }
    /* The right-hand sides all read the row as it was, so the CASEs see the old state. */
    return store__write(
        st, STORE__TRIGGER_SET_STATE,
        "UPDATE triggers SET"
        " fired_ns = CASE WHEN ?2 AND state = 'clear' THEN ?5 ELSE fired_ns END,"
        " cleared_ns = CASE WHEN NOT ?2 AND state = 'fired' THEN ?5 ELSE cleared_ns END,"
        " state = CASE WHEN ?2 THEN 'fired' ELSE 'clear' END,"
        " bad = ?3, good = ?4, updated_ns = ?5 WHERE id = ?1",
        "trigger set state", true, "lbiil", id, fired, bad, good, store__now(st));
}

int store_trigger_get(struct store *st, int64_t id, store_trigger_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_trigger_get: NULL callback");
    }
    char missing[64];
    snprintf(missing, sizeof missing, "no trigger %lld", (long long)id);
    struct store__iter it = {.ctx = ctx, .cb.trigger = cb};
    return store__query(st, STORE__TRIGGER_GET,
                        "SELECT " TRIGGER_COLUMNS " FROM triggers WHERE id = ?1", trigger_row, &it,
                        "reading trigger", missing, "l", id);
}

int store_triggers_each(struct store *st, const char *probe, store_trigger_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_triggers_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.trigger = cb};
    return store__query(st, STORE__TRIGGER_EACH,
                        "SELECT " TRIGGER_COLUMNS " FROM triggers WHERE ?1 IS NULL OR probe = ?1"
                        " ORDER BY probe, kind",
                        trigger_row, &it, "reading triggers", NULL, "t", probe);
}

int store_trigger_delete(struct store *st, int64_t id) {
    return store__write(st, STORE__TRIGGER_DELETE, "DELETE FROM triggers WHERE id = ?1",
                        "trigger delete", true, "l", id);
}

/* ---- investigations ------------------------------------------------------------------ */

#define INVESTIGATION_COLUMNS                                                                      \
    "id, node, problem, strategy, origin, trigger_id, requested_by, state, verdict,"               \
    " verdict_node, summary, opened_ns, closed_ns"

static int investigation_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    const char *state = store__column_text(s, 7);
    struct store_investigation inv = {
        .id = sqlite3_column_int64(s, 0),
        .node = store__column_text(s, 1),
        .problem = store__column_text(s, 2),
        .strategy = store__column_text(s, 3),
        .origin = store__column_text(s, 4),
        .trigger_id = sqlite3_column_int64(s, 5),
        .requested_by = store__column_text(s, 6),
        .open = state && state[0] == 'o',
        .verdict = store__column_text(s, 8),
        .verdict_node = store__column_text(s, 9),
        .summary_json = store__column_text(s, 10),
        .opened_ns = sqlite3_column_int64(s, 11),
        .closed_ns = sqlite3_column_int64(s, 12),
    };
    return it->cb.investigation(it->ctx, &inv);
}

int store_investigation_open(struct store *st, const struct store_investigation *inv, int64_t *id) {
    if (!inv || !inv->node || !inv->problem || !inv->strategy || !inv->origin || !id) {
        return dq_fail(DQ_EINVAL,
                       "store_investigation_open: NULL investigation, field (node, problem, "
                       "strategy, origin) or id");
    }
    int rc = store__write(
        st, STORE__INV_OPEN,
        "INSERT INTO investigations (node, problem, strategy, origin,"
        " trigger_id, requested_by, opened_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        "investigation open", false, "ttttLtl", inv->node, inv->problem, inv->strategy, inv->origin,
        inv->trigger_id, inv->requested_by, inv->opened_ns ? inv->opened_ns : store__now(st));
    if (rc == DQ_OK) {
        *id = sqlite3_last_insert_rowid(st->db);
    }
    return rc;
}

static int read_open(void *ctx, const struct store_investigation *inv) {
    *(bool *)ctx = inv->open;
    return 0;
}

int store_investigation_close(struct store *st, int64_t id, const char *verdict,
                              const char *verdict_node, const char *summary_json) {
    if (!verdict) {
        return dq_fail(DQ_EINVAL, "investigation %lld: a verdict (%s) is required", (long long)id,
                       STORE_VERDICTS);
    }
    int rc = store__write(st, STORE__INV_CLOSE,
                          "UPDATE investigations SET state = 'closed', verdict = ?2,"
                          " verdict_node = ?3, summary = ?4, closed_ns = ?5"
                          " WHERE id = ?1 AND state = 'open'",
                          "investigation close", true, "ltttl", id, verdict, verdict_node,
                          summary_json, store__now(st));
    if (rc == DQ_ENOTFOUND) {
        /* No open row: tell "unknown" from "already closed". */
        bool open = false;
        rc = store_investigation_get(st, id, read_open, &open);
        if (rc == DQ_OK) {
            rc = dq_fail(DQ_ESTATE, "investigation %lld is already closed", (long long)id);
        }
    }
    return rc;
}

int store_investigation_set_problem(struct store *st, int64_t id, const char *problem) {
    if (!problem) {
        return dq_fail(DQ_EINVAL, "investigation %lld: NULL problem", (long long)id);
    }
    return store__write(st, STORE__INV_SET_PROBLEM,
                        "UPDATE investigations SET problem = ?2 WHERE id = ?1",
                        "investigation problem", true, "lt", id, problem);
}

int store_investigation_get(struct store *st, int64_t id, store_investigation_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_investigation_get: NULL callback");
    }
    char missing[64];
    snprintf(missing, sizeof missing, "no investigation %lld", (long long)id);
    struct store__iter it = {.ctx = ctx, .cb.investigation = cb};
    return store__query(st, STORE__INV_GET,
                        "SELECT " INVESTIGATION_COLUMNS " FROM investigations WHERE id = ?1",
                        investigation_row, &it, "reading investigation", missing, "l", id);
}

int store_investigations_each(struct store *st, bool open_only, int limit,
                              store_investigation_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_investigations_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.investigation = cb};
    return store__query(st, STORE__INV_EACH,
                        "SELECT " INVESTIGATION_COLUMNS " FROM investigations"
                        " WHERE NOT ?1 OR state = 'open' ORDER BY id DESC LIMIT ?2",
                        investigation_row, &it, "reading investigations", NULL, "bi", open_only,
                        limit > 0 ? limit : -1);
}

/* ---- hypotheses ---------------------------------------------------------------------- */

#define HYPOTHESIS_COLUMNS                                                                         \
    "h.id, h.investigation, h.parent, h.node, h.kind, h.action, h.probes, h.stats, h.verdict,"     \
    " h.created_ns, h.updated_ns"

static int hypothesis_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_hypothesis h = {
        .id = sqlite3_column_int64(s, 0),
        .investigation = sqlite3_column_int64(s, 1),
        .parent = sqlite3_column_int64(s, 2),
        .node = store__column_text(s, 3),
        .kind = store__column_text(s, 4),
        .action = store__column_text(s, 5),
        .probes_json = store__column_text(s, 6),
        .stats_json = store__column_text(s, 7),
        .verdict = store__column_text(s, 8),
        .created_ns = sqlite3_column_int64(s, 9),
        .updated_ns = sqlite3_column_int64(s, 10),
    };
    return it->cb.hypothesis(it->ctx, &h);
}

int store_hypothesis_insert(struct store *st, const struct store_hypothesis *h, int64_t *id) {
    if (!h || !h->node || !h->kind || !h->action || !id) {
        return dq_fail(DQ_EINVAL,
                       "store_hypothesis_insert: NULL hypothesis, node, kind, action or id");
    }
    char what[128];
    snprintf(what, sizeof what, "hypothesis on %.64s (investigation %lld)", h->node,
             (long long)h->investigation);
    int rc = store__write(st, STORE__HYP_INSERT,
                          "INSERT INTO hypotheses (investigation, parent, node, kind, action,"
                          " probes, stats, verdict, created_ns, updated_ns) VALUES (?1, ?2, ?3,"
                          " ?4, ?5, coalesce(?6, '[]'), ?7, coalesce(?8, 'pending'), ?9, ?9)",
                          what, false, "lLttttttl", h->investigation, h->parent, h->node, h->kind,
                          h->action, h->probes_json, h->stats_json, h->verdict,
                          h->created_ns ? h->created_ns : store__now(st));
    if (rc == DQ_OK) {
        *id = sqlite3_last_insert_rowid(st->db);
    }
    return rc;
}

int store_hypothesis_set_verdict(struct store *st, int64_t id, const char *verdict,
                                 const char *stats_json) {
    if (!verdict) {
        return dq_fail(DQ_EINVAL, "hypothesis %lld: NULL verdict", (long long)id);
    }
    return store__write(st, STORE__HYP_SET_VERDICT,
                        "UPDATE hypotheses SET verdict = ?2, stats = coalesce(?3, stats),"
                        " updated_ns = ?4 WHERE id = ?1",
                        "hypothesis verdict", true, "lttl", id, verdict, stats_json,
                        store__now(st));
}

/* Runs a hypothesis SELECT bound to one key: an int64 (types "l") or a text ("t"). With
 * `one`, no row is DQ_ENOTFOUND. */
static int hypotheses_query(struct store *st, enum store__stmt_id sid, const char *sql,
                            const char *types, int64_t key, const char *text_key, bool one,
                            store_hypothesis_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "hypotheses: NULL callback");
    }
    char missing[64];
    snprintf(missing, sizeof missing, "no hypothesis %lld", (long long)key);
    struct store__iter it = {.ctx = ctx, .cb.hypothesis = cb};
    return text_key ? store__query(st, sid, sql, hypothesis_row, &it, "reading hypotheses",
                                   one ? missing : NULL, types, text_key)
                    : store__query(st, sid, sql, hypothesis_row, &it, "reading hypotheses",
                                   one ? missing : NULL, types, key);
}

int store_hypothesis_get(struct store *st, int64_t id, store_hypothesis_cb cb, void *ctx) {
    return hypotheses_query(st, STORE__HYP_GET,
                            "SELECT " HYPOTHESIS_COLUMNS " FROM hypotheses h WHERE h.id = ?1", "l",
                            id, NULL, true, cb, ctx);
}

int store_hypotheses_of_investigation(struct store *st, int64_t investigation,
                                      store_hypothesis_cb cb, void *ctx) {
    return hypotheses_query(st, STORE__HYP_OF_INV,
                            "SELECT " HYPOTHESIS_COLUMNS " FROM hypotheses h"
                            " WHERE h.investigation = ?1 ORDER BY h.id",
                            "l", investigation, NULL, false, cb, ctx);
}

int store_hypotheses_of_probe(struct store *st, const char *probe, store_hypothesis_cb cb,
                              void *ctx) {
    if (!probe) {
        return dq_fail(DQ_EINVAL, "store_hypotheses_of_probe: NULL probe");
    }
    return hypotheses_query(st, STORE__HYP_OF_PROBE,
                            "SELECT " HYPOTHESIS_COLUMNS " FROM hypotheses h WHERE EXISTS"
                            " (SELECT 1 FROM json_each(h.probes) WHERE value = ?1)"
                            " ORDER BY h.id DESC",
                            "t", 0, probe, false, cb, ctx);
}

int store_hypothesis_chain(struct store *st, int64_t id, store_hypothesis_cb cb, void *ctx) {
    /* The depth cap only matters for a cycle made by hand in the shell: parents are
       inserted before their children, so the store itself cannot make one. */
    return hypotheses_query(st, STORE__HYP_CHAIN,
                            "WITH RECURSIVE chain (id, depth) AS (SELECT ?1, 0"
                            " UNION ALL SELECT p.parent, c.depth + 1 FROM chain c"
                            " JOIN hypotheses p ON p.id = c.id"
                            " WHERE p.parent IS NOT NULL AND c.depth < 10000)"
                            " SELECT " HYPOTHESIS_COLUMNS " FROM chain"
                            " JOIN hypotheses h ON h.id = chain.id ORDER BY chain.depth",
                            "l", id, NULL, true, cb, ctx);
}

/* ---- commands ---------------------------------------------------------------------- */

static int command_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_command c = {
        .id = sqlite3_column_int64(s, 0),
        .time_ns = sqlite3_column_int64(s, 1),
        .wrapper = store__column_text(s, 2),
        .command = store__column_text(s, 3),
        .probe = store__column_text(s, 4),
        .args_json = store__column_text(s, 5),
        .hypothesis = sqlite3_column_int64(s, 6),
        .status = store__column_text(s, 7),
        .status_ns = sqlite3_column_int64(s, 8),
        .detail = store__column_text(s, 9),
    };
    return it->cb.command(it->ctx, &c);
}

int store_command_insert(struct store *st, const struct store_command *c, int64_t *id) {
    if (!c || !c->wrapper || !c->command) {
        return dq_fail(DQ_EINVAL, "store_command_insert: NULL command, wrapper or command name");
    }
    char what[96];
    snprintf(what, sizeof what, "command %.32s", c->command);
    int rc =
        store__write(st, STORE__CMD_INSERT,
                     "INSERT INTO commands (time_ns, wrapper, command, probe, args,"
                     " hypothesis, status, status_ns, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
                     " coalesce(?7, 'sent'), CASE WHEN ?7 IS NULL THEN NULL ELSE ?1 END, ?8)",
                     what, false, "lttttLtt", c->time_ns ? c->time_ns : store__now(st), c->wrapper,
                     c->command, c->probe, c->args_json, c->hypothesis, c->status, c->detail);
    if (rc == DQ_OK && id) {
        *id = sqlite3_last_insert_rowid(st->db);
    }
    return rc;
}

int store_command_set_status(struct store *st, int64_t id, const char *status, const char *detail) {
    if (!status) {
        return dq_fail(DQ_EINVAL, "command %lld: NULL status", (long long)id);
    }
    return store__write(st, STORE__CMD_SET_STATUS,
                        "UPDATE commands SET status = ?2, detail = coalesce(?3, detail),"
                        " status_ns = ?4 WHERE id = ?1",
                        "command status", true, "lttl", id, status, detail, store__now(st));
}

int store_command_ack(struct store *st, int64_t id) {
    return store_command_set_status(st, id, "acked", NULL);
}

int store_commands_each(struct store *st, const struct store_command_filter *f, store_command_cb cb,
                        void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_commands_each: NULL callback");
    }
    struct store_command_filter all = {0};
    if (!f) {
        f = &all;
    }
    struct store__iter it = {.ctx = ctx, .cb.command = cb};
    return store__query(st, STORE__CMD_EACH,
                        "SELECT id, time_ns, wrapper, command, probe, args, hypothesis, status,"
                        " status_ns, detail FROM commands WHERE id > ?1"
                        " AND (?2 IS NULL OR hypothesis = ?2) AND (?3 IS NULL OR wrapper = ?3)"
                        " AND (?4 IS NULL OR status = ?4) AND (?6 IS NULL OR probe = ?6)"
                        " ORDER BY id LIMIT ?5",
                        command_row, &it, "reading commands", NULL, "lLttit", f->after_id,
                        f->hypothesis, f->wrapper, f->status, f->limit > 0 ? f->limit : -1,
                        f->probe);
}
