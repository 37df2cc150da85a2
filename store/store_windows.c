/*
 * store_windows.c: per-window summaries (windows), the event log (events) and the
 * retention that keeps both bounded.
 *
 * The daemon writes one windows row per probe and kind at every window close, inside one
 * store_begin/store_commit, so this file's insert is the store's hottest path: a cached
 * statement, no allocation, an upsert on the (probe, start_ns, kind) unique index.
 */
#include "store.h"
#include "store_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define WINDOW_COLUMNS                                                                             \
    "probe, kind, start_ns, end_ns, n, n_ok, n_fa, n_to, mean, p50, p95, p99, lost, partial, "     \
    "run_ns"

const char *store_kind_name(enum store_kind kind) {
    switch (kind) {
    case STORE_OBSERVED:
        return "observed";
    case STORE_CALCULATED:
        return "calculated";
    }
    return NULL;
}

static int check_count(uint64_t v, const char *what) {
    if (v > (uint64_t)INT64_MAX) {
        return dq_fail(DQ_ERANGE, "window %s count %llu too large", what, (unsigned long long)v);
    }
    return DQ_OK;
}

int store_window_put(struct store *st, const struct store_window *w) {
    if (!w) {
        return dq_fail(DQ_EINVAL, "store_window_put: NULL window");
    }
    const char *kind = store_kind_name(w->kind);
    int rc = store__check_name(w->probe);
    if (rc) {
        return rc;
    }
    if (!kind || w->end_ns < w->start_ns) {
        return dq_fail(DQ_EINVAL, "window of %s: bad kind %d or end %lld before start %lld",
                       w->probe, (int)w->kind, (long long)w->end_ns, (long long)w->start_ns);
    }
    if ((rc = check_count(w->n, "n")) || (rc = check_count(w->n_ok, "ok")) ||
        (rc = check_count(w->n_fa, "fa")) || (rc = check_count(w->n_to, "to"))) {
        return rc;
    }
    sqlite3_stmt *s;
    rc = store__prepare(
        st, STORE__WINDOW_PUT,
        "INSERT INTO windows (" WINDOW_COLUMNS ") VALUES"
        " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
        " ON CONFLICT (probe, start_ns, kind, run_ns) DO UPDATE SET end_ns = excluded.end_ns,"
        " n = excluded.n, n_ok = excluded.n_ok, n_fa = excluded.n_fa,"
        " n_to = excluded.n_to, mean = excluded.mean, p50 = excluded.p50,"
        " p95 = excluded.p95, p99 = excluded.p99, lost = excluded.lost,"
        " partial = excluded.partial",
        &s,
        "ttllllllddddd"
        "bL",
        w->probe, kind, w->start_ns, w->end_ns, (int64_t)w->n, (int64_t)w->n_ok, (int64_t)w->n_fa,
        (int64_t)w->n_to, w->mean, w->p50, w->p95, w->p99, w->lost, (int)w->partial, w->run_ns);
    if (rc) {
        return rc;
    }
    int step = sqlite3_step(s);
    if (step != SQLITE_DONE && sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_FOREIGNKEY) {
        /* The store's first sight of this probe (the daemon registers probes on first sight
           too): add it with default settings and write again. reset keeps the bindings. */
        sqlite3_reset(s);
        rc = store_probe_ensure(st, w->probe);
        step = rc == DQ_OK ? sqlite3_step(s) : SQLITE_DONE;
    }
    if (rc == DQ_OK && step != SQLITE_DONE) {
        char what[320];
        snprintf(what, sizeof what, "window of %s at %lld", w->probe, (long long)w->start_ns);
        rc = store__fail(st, what);
    }
    store__done(s);
    return rc;
}

static void read_window(sqlite3_stmt *s, struct store_window *w) {
    w->start_ns = sqlite3_column_int64(s, 0);
    w->end_ns = sqlite3_column_int64(s, 1);
    w->n = (uint64_t)sqlite3_column_int64(s, 2);
    w->n_ok = (uint64_t)sqlite3_column_int64(s, 3);
    w->n_fa = (uint64_t)sqlite3_column_int64(s, 4);
    w->n_to = (uint64_t)sqlite3_column_int64(s, 5);
    w->mean = store__column_double(s, 6);
    w->p50 = store__column_double(s, 7);
    w->p95 = store__column_double(s, 8);
    w->p99 = store__column_double(s, 9);
    w->lost = store__column_double(s, 10);
    w->partial = sqlite3_column_int(s, 11) != 0;
    w->run_ns = sqlite3_column_int64(s, 12);
}

static int window_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_window w = {.probe = it->probe, .kind = it->kind};
    read_window(s, &w);
    return it->cb.window(it->ctx, &w);
}

int store_windows_each(struct store *st, const char *probe, enum store_kind kind, int64_t from_ns,
                       int64_t to_ns, int limit, store_window_cb cb, void *ctx) {
    const char *kname = store_kind_name(kind);
    if (!probe || !cb || !kname) {
        return dq_fail(DQ_EINVAL, "store_windows_each: NULL argument or bad kind");
    }
    struct store__iter it = {.ctx = ctx, .cb.window = cb, .probe = probe, .kind = kind};
    /* a negative LIMIT is no limit */
    return store__query(st, STORE__WINDOW_RANGE,
                        "SELECT start_ns, end_ns, n, n_ok, n_fa, n_to, mean, p50, p95, p99, lost,"
                        " partial, run_ns FROM windows WHERE probe = ?1 AND kind = ?2"
                        " AND start_ns >= ?3 AND start_ns < ?4 ORDER BY start_ns DESC,"
                        " end_ns DESC LIMIT ?5",
                        window_row, &it, "reading windows", NULL, "ttlli", probe, kname, from_ns,
                        to_ns, limit > 0 ? limit : -1);
}

static int copy_window(void *ctx, const struct store_window *w) {
    *(struct store_window *)ctx = *w;
    return 1;
}

int store_window_latest(struct store *st, const char *probe, enum store_kind kind,
                        struct store_window *out) {
    if (!out) {
        return dq_fail(DQ_EINVAL, "store_window_latest: NULL out");
    }
    struct store_window w = {.probe = NULL};
    int rc = store_windows_each(st, probe, kind, INT64_MIN, INT64_MAX, 1, copy_window, &w);
    if (rc) {
        return rc;
    }
    if (!w.probe) {
        return dq_fail(DQ_ENOTFOUND, "no %s window of probe %.255s", store_kind_name(kind), probe);
    }
    *out = w;
    return DQ_OK;
}

/* ---- events ------------------------------------------------------------------------ */

int store_event_add(struct store *st, const struct store_event *ev, int64_t *id) {
    if (!ev || !ev->kind) {
        return dq_fail(DQ_EINVAL, "store_event_add: NULL event or kind");
    }
    char what[128];
    snprintf(what, sizeof what, "event %.64s", ev->kind);
    int rc = store__write(
        st, STORE__EVENT_ADD,
        "INSERT INTO events (time_ns, kind, probe, detail) VALUES (?1, ?2, ?3, ?4)", what, false,
        "lttt", ev->time_ns ? ev->time_ns : store__now(st), ev->kind, ev->probe, ev->detail_json);
    if (rc == DQ_OK && id) {
        *id = sqlite3_last_insert_rowid(st->db);
    }
    return rc;
}

static int event_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_event ev = {
        .id = sqlite3_column_int64(s, 0),
        .time_ns = sqlite3_column_int64(s, 1),
        .kind = store__column_text(s, 2),
        .probe = store__column_text(s, 3),
        .detail_json = store__column_text(s, 4),
    };
    return it->cb.event(it->ctx, &ev);
}

int store_events_each(struct store *st, const char *probe, const char *kind, int64_t after_id,
                      int limit, store_event_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_events_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.event = cb};
    return store__query(st, STORE__EVENT_EACH,
                        "SELECT id, time_ns, kind, probe, detail FROM events WHERE id > ?1"
                        " AND (?2 IS NULL OR probe = ?2) AND (?3 IS NULL OR kind = ?3)"
                        " ORDER BY id LIMIT ?4",
                        event_row, &it, "reading events", NULL, "ltti", after_id, probe, kind,
                        limit > 0 ? limit : -1);
}

static int event_last_row(sqlite3_stmt *s, void *arg) {
    int64_t *out = arg;
    out[0] = sqlite3_column_int64(s, 0);
    out[1] = sqlite3_column_int64(s, 1);
    return 0;
}

int store_event_last(struct store *st, const char *kind, int64_t *id, int64_t *time_ns) {
    if (!kind) {
        return dq_fail(DQ_EINVAL, "store_event_last: NULL kind");
    }
    int64_t got[2] = {0, 0};
    char missing[128];
    snprintf(missing, sizeof missing, "no %.64s event", kind);
    int rc = store__query(st, STORE__EVENT_LAST,
                          "SELECT id, time_ns FROM events WHERE kind = ?1 ORDER BY id DESC LIMIT 1",
                          event_last_row, got, "reading events", missing, "t", kind);
    if (rc == DQ_OK) {
        if (id) {
            *id = got[0];
        }
        if (time_ns) {
            *time_ns = got[1];
        }
    }
    return rc;
}

static int one_int64(sqlite3_stmt *s, void *arg) {
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 0;
}

int store_last_record_ns(struct store *st, int64_t *ns) {
    if (!ns) {
        return dq_fail(DQ_EINVAL, "store_last_record_ns: NULL out");
    }
    *ns = 0;
    return store__query(st, STORE__LAST_RECORD,
                        "SELECT max(coalesce((SELECT max(end_ns) FROM windows), 0),"
                        " coalesce((SELECT max(time_ns) FROM events), 0),"
                        " coalesce((SELECT max(time_ns) FROM commands), 0))",
                        one_int64, ns, "reading the last record", NULL, "");
}

/* ---- retention ------------------------------------------------------------------- */

void store_retention_default(struct store_retention *r) {
    r->window_max_age_ns = INT64_C(7) * 24 * 3600 * 1000000000;
    r->window_max_rows = 0;
    r->event_max_age_ns = 0;
    r->dq_max_age_ns = INT64_C(24) * 3600 * 1000000000;
}

int store_set_retention(struct store *st, const struct store_retention *r) {
    if (!r || r->window_max_age_ns < 0 || r->window_max_rows < 0 || r->event_max_age_ns < 0 ||
        r->dq_max_age_ns < 0) {
        return dq_fail(DQ_EINVAL, "store_set_retention: NULL or negative limit");
    }
    st->retention = *r;
    return DQ_OK;
}

/* Runs a bound DELETE and adds its changes to *deleted. */
static int step_delete(struct store *st, sqlite3_stmt *s, const char *what, int64_t *deleted) {
    int rc = DQ_OK;
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = store__fail(st, what);
    } else {
        *deleted += sqlite3_changes64(st->db);
    }
    store__done(s);
    return rc;
}

/* Prunes the windows of one probe (both kinds) by age and by count. */
static int prune_probe(struct store *st, const char *probe, int64_t now, int64_t *deleted) {
    const struct store_retention *r = &st->retention;
    sqlite3_stmt *s;
    int rc;
    if (r->window_max_age_ns > 0) {
        /* now − age cannot overflow in practice, but a huge age must mean "keep all". */
        rc = store__prepare(
            st, STORE__WINDOW_PRUNE_AGE, "DELETE FROM windows WHERE probe = ?1 AND start_ns < ?2",
            &s, "tl", probe, r->window_max_age_ns < now ? now - r->window_max_age_ns : INT64_MIN);
        if (rc || (rc = step_delete(st, s, "pruning windows by age", deleted))) {
            return rc;
        }
        rc = store__prepare(
            st, STORE__EX_PRUNE_AGE, "DELETE FROM exemplars WHERE probe = ?1 AND start_ns < ?2", &s,
            "tl", probe, r->window_max_age_ns < now ? now - r->window_max_age_ns : INT64_MIN);
        if (rc || (rc = step_delete(st, s, "pruning exemplars by age", deleted))) {
            return rc;
        }
    }
    if (r->dq_max_age_ns > 0) {
        rc = store__prepare(st, STORE__WDQ_PRUNE_AGE,
                            "DELETE FROM window_dqs WHERE probe = ?1 AND start_ns < ?2", &s, "tl",
                            probe, r->dq_max_age_ns < now ? now - r->dq_max_age_ns : INT64_MIN);
        if (rc || (rc = step_delete(st, s, "pruning window ΔQs by age", deleted))) {
            return rc;
        }
    }
    if (r->window_max_rows > 0) {
        for (int k = STORE_OBSERVED; k <= STORE_CALCULATED; k++) {
            /* The newest max_rows rows survive: delete from the (max_rows+1)-th newest
               start on (two runs' rows of one window share a start: both go, or stay). */
            rc = store__prepare(st, STORE__WINDOW_PRUNE_ROWS,
                                "DELETE FROM windows WHERE probe = ?1 AND kind = ?2 AND start_ns"
                                " <= (SELECT start_ns FROM windows WHERE probe = ?1 AND kind = ?2"
                                " ORDER BY start_ns DESC LIMIT 1 OFFSET ?3)",
                                &s, "ttl", probe, store_kind_name((enum store_kind)k),
                                r->window_max_rows);
            if (rc || (rc = step_delete(st, s, "pruning windows by count", deleted))) {
                return rc;
            }
        }
    }
    return DQ_OK;
}

static int prune_all(struct store *st, int64_t now, int64_t *deleted) {
    const struct store_retention *r = &st->retention;
    sqlite3_stmt *names;
    int rc = DQ_OK, step;
    if (r->window_max_age_ns > 0 || r->window_max_rows > 0 || r->dq_max_age_ns > 0) {
        /* Per probe, so that each DELETE walks the (probe, start_ns) index instead of
           scanning the whole table. */
        if ((rc = store__stmt(st, STORE__PROBE_NAMES, "SELECT name FROM probes", &names))) {
            return rc;
        }
        while ((step = sqlite3_step(names)) == SQLITE_ROW) {
            const char *probe = (const char *)sqlite3_column_text(names, 0);
            if ((rc = prune_probe(st, probe, now, deleted))) {
                break;
            }
        }
        if (rc == DQ_OK && step != SQLITE_DONE) {
            rc = store__fail(st, "pruning: reading probes");
        }
        store__done(names);
        if (rc) {
            return rc;
        }
    }
    if (r->event_max_age_ns > 0 && r->event_max_age_ns < now) {
        sqlite3_stmt *s;
        rc = store__prepare(st, STORE__EVENT_PRUNE_AGE, "DELETE FROM events WHERE time_ns < ?1", &s,
                            "l", now - r->event_max_age_ns);
        if (rc == DQ_OK) {
            rc = step_delete(st, s, "pruning events", deleted);
        }
    }
    return rc;
}

int store_prune(struct store *st, int64_t *deleted) {
    int64_t count = 0;
    /* A savepoint nests inside the caller's transaction or makes its own. */
    int rc = store__exec(st, "SAVEPOINT store_prune");
    if (rc) {
        return rc;
    }
    rc = prune_all(st, store__now(st), &count);
    if (rc == DQ_OK) {
        rc = store__exec(st, "RELEASE store_prune");
    }
    if (rc != DQ_OK) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", dq_last_error());
        store__exec(st, "ROLLBACK TO store_prune");
        store__exec(st, "RELEASE store_prune");
        dq_fail(rc, "%s", keep);
        count = 0;
    }
    if (deleted) {
        *deleted = count;
    }
    return rc;
}
