/*
 * store_probes.c: the probes table, one row per probe with its settings (dMax, bins,
 * enabled, always-on, QTA). The daemon writes it when settings change and reads it all
 * back at start (store_probes_each) to restore the enabled set.
 */
#include "store.h"
#include "store_internal.h"

#include <math.h>
#include <stdio.h>

#define PROBE_COLUMNS "name, dmax_ms, bins, enabled, always_on, qta, created_ns, updated_ns"

static int check_range(const char *name, double dmax_ms, int bins) {
    if (!isnan(dmax_ms) && !(dmax_ms > 0 && isfinite(dmax_ms))) {
        return dq_fail(DQ_ERANGE, "probe %s: dmax_ms %g must be > 0 (or NAN for unset)", name,
                       dmax_ms);
    }
    if (bins != 0 && (bins < DQ_MIN_BINS || bins > DQ_MAX_BINS)) {
        return dq_fail(DQ_ERANGE, "probe %s: bins %d not in [%d, %d] (or 0 for unset)", name, bins,
                       DQ_MIN_BINS, DQ_MAX_BINS);
    }
    return DQ_OK;
}

static void bind_bins(sqlite3_stmt *s, int i, int bins) {
    if (bins == 0) {
        sqlite3_bind_null(s, i);
    } else {
        sqlite3_bind_int(s, i, bins);
    }
}

/* Runs a write statement already bound; `what` names it in the message. */
static int step_write(struct store *st, sqlite3_stmt *s, const char *what, const char *name) {
    int rc = DQ_OK;
    if (sqlite3_step(s) != SQLITE_DONE) {
        char buf[320];
        snprintf(buf, sizeof buf, "%s %s", what, name);
        rc = store__fail(st, buf);
    }
    store__done(s);
    return rc;
}

int store_probe_upsert(struct store *st, const struct store_probe *p) {
    if (!p) {
        return dq_fail(DQ_EINVAL, "store_probe_upsert: NULL probe");
    }
    int rc = store__check_name(p->name);
    if (rc || (rc = check_range(p->name, p->dmax_ms, p->bins))) {
        return rc;
    }
    sqlite3_stmt *s;
    rc =
        store__stmt(st, STORE__PROBE_UPSERT,
                    "INSERT INTO probes (" PROBE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)"
                    " ON CONFLICT (name) DO UPDATE SET dmax_ms = excluded.dmax_ms,"
                    " bins = excluded.bins, enabled = excluded.enabled,"
                    " always_on = excluded.always_on, qta = excluded.qta,"
                    " updated_ns = excluded.updated_ns",
                    &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, p->name);
    store__bind_double(s, 2, p->dmax_ms);
    bind_bins(s, 3, p->bins);
    sqlite3_bind_int(s, 4, p->enabled ? 1 : 0);
    sqlite3_bind_int(s, 5, p->always_on ? 1 : 0);
    store__bind_text(s, 6, p->qta_json);
    sqlite3_bind_int64(s, 7, store__now(st));
    return step_write(st, s, "probe upsert", p->name);
}

int store_probe_ensure(struct store *st, const char *name) {
    int rc = store__check_name(name);
    if (rc) {
        return rc;
    }
    sqlite3_stmt *s;
    rc = store__stmt(st, STORE__PROBE_ENSURE,
                     "INSERT INTO probes (name, created_ns, updated_ns) VALUES (?1, ?2, ?2)"
                     " ON CONFLICT (name) DO NOTHING",
                     &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    sqlite3_bind_int64(s, 2, store__now(st));
    return step_write(st, s, "probe ensure", name);
}

struct probe_iter {
    store_probe_cb cb;
    void *ctx;
};

/* One row of a SELECT of PROBE_COLUMNS to the caller's callback. */
static int probe_row(sqlite3_stmt *s, void *arg) {
    struct probe_iter *it = arg;
    struct store_probe p = {
        .name = store__column_text(s, 0),
        .dmax_ms = store__column_double(s, 1),
        .bins = sqlite3_column_int(s, 2),
        .enabled = sqlite3_column_int(s, 3) != 0,
        .always_on = sqlite3_column_int(s, 4) != 0,
        .qta_json = store__column_text(s, 5),
        .created_ns = sqlite3_column_int64(s, 6),
        .updated_ns = sqlite3_column_int64(s, 7),
    };
    return it->cb(it->ctx, &p);
}

int store_probe_get(struct store *st, const char *name, store_probe_cb cb, void *ctx) {
    if (!name || !cb) {
        return dq_fail(DQ_EINVAL, "store_probe_get: NULL argument");
    }
    sqlite3_stmt *s;
    int rc = store__stmt(st, STORE__PROBE_GET,
                         "SELECT " PROBE_COLUMNS " FROM probes WHERE name = ?1", &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    int rows = 0;
    struct probe_iter it = {cb, ctx};
    rc = store__each(st, s, probe_row, &it, &rows, "reading probe");
    if (rc == DQ_OK && rows == 0) {
        return dq_fail(DQ_ENOTFOUND, "probe %.255s not in the store", name);
    }
    return rc;
}

int store_probes_each(struct store *st, store_probe_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_probes_each: NULL callback");
    }
    sqlite3_stmt *s;
    int rc =
        store__stmt(st, STORE__PROBE_ALL, "SELECT " PROBE_COLUMNS " FROM probes ORDER BY name", &s);
    if (rc) {
        return rc;
    }
    struct probe_iter it = {cb, ctx};
    return store__each(st, s, probe_row, &it, NULL, "reading probes");
}

/* Runs an UPDATE/DELETE of one probe bound by the caller; DQ_ENOTFOUND when no row. */
static int step_one_probe(struct store *st, sqlite3_stmt *s, const char *what, const char *name) {
    int rc = step_write(st, s, what, name);
    if (rc == DQ_OK && sqlite3_changes(st->db) == 0) {
        rc = dq_fail(DQ_ENOTFOUND, "%s: probe %.255s not in the store", what, name);
    }
    return rc;
}

static int set_flag(struct store *st, enum store__stmt_id id, const char *sql, const char *what,
                    const char *name, bool value) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "%s: NULL name", what);
    }
    sqlite3_stmt *s;
    int rc = store__stmt(st, id, sql, &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    sqlite3_bind_int(s, 2, value ? 1 : 0);
    sqlite3_bind_int64(s, 3, store__now(st));
    return step_one_probe(st, s, what, name);
}

int store_probe_set_enabled(struct store *st, const char *name, bool enabled) {
    return set_flag(st, STORE__PROBE_SET_ENABLED,
                    "UPDATE probes SET enabled = ?2, updated_ns = ?3 WHERE name = ?1",
                    "probe set enabled", name, enabled);
}

int store_probe_set_always_on(struct store *st, const char *name, bool always_on) {
    return set_flag(st, STORE__PROBE_SET_ALWAYS_ON,
                    "UPDATE probes SET always_on = ?2, updated_ns = ?3 WHERE name = ?1",
                    "probe set always_on", name, always_on);
}

int store_probe_set_range(struct store *st, const char *name, double dmax_ms, int bins) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_range: NULL name");
    }
    int rc = check_range(name, dmax_ms, bins);
    if (rc) {
        return rc;
    }
    sqlite3_stmt *s;
    rc = store__stmt(st, STORE__PROBE_SET_RANGE,
                     "UPDATE probes SET dmax_ms = ?2, bins = ?3, updated_ns = ?4 WHERE name = ?1",
                     &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    store__bind_double(s, 2, dmax_ms);
    bind_bins(s, 3, bins);
    sqlite3_bind_int64(s, 4, store__now(st));
    return step_one_probe(st, s, "probe set range", name);
}

int store_probe_set_qta(struct store *st, const char *name, const char *qta_json) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_qta: NULL name");
    }
    sqlite3_stmt *s;
    int rc = store__stmt(st, STORE__PROBE_SET_QTA,
                         "UPDATE probes SET qta = ?2, updated_ns = ?3 WHERE name = ?1", &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    store__bind_text(s, 2, qta_json);
    sqlite3_bind_int64(s, 3, store__now(st));
    return step_one_probe(st, s, "probe set qta", name);
}

int store_probe_delete(struct store *st, const char *name) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_delete: NULL name");
    }
    sqlite3_stmt *s;
    int rc = store__stmt(st, STORE__PROBE_DELETE, "DELETE FROM probes WHERE name = ?1", &s);
    if (rc) {
        return rc;
    }
    store__bind_text(s, 1, name);
    return step_one_probe(st, s, "probe delete", name);
}
