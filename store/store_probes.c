/*
 * store_probes.c: the probes table, one row per probe with its settings (dMax, bins,
 * enabled, always-on, QTA). The daemon writes it when settings change and reads it all
 * back at start (store_probes_each) to restore the enabled set.
 */
#include "store.h"
#include "store_internal.h"

#include <math.h>
#include <stdio.h>

#define PROBE_COLUMNS                                                                              \
    "name, dmax_ms, bins, enabled, always_on, qta, created_ns, updated_ns, servers, quiet, "       \
    "last_instance_ns, last_origin"

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

int store_probe_upsert(struct store *st, const struct store_probe *p) {
    if (!p) {
        return dq_fail(DQ_EINVAL, "store_probe_upsert: NULL probe");
    }
    int rc = store__check_name(p->name);
    if (rc || (rc = check_range(p->name, p->dmax_ms, p->bins))) {
        return rc;
    }
    char what[320];
    snprintf(what, sizeof what, "probe upsert %s", p->name);
    return store__write(st, STORE__PROBE_UPSERT,
                        "INSERT INTO probes (name, dmax_ms, bins, enabled, always_on, qta,"
                        " created_ns, updated_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)"
                        " ON CONFLICT (name) DO UPDATE SET dmax_ms = excluded.dmax_ms,"
                        " bins = excluded.bins, enabled = excluded.enabled,"
                        " always_on = excluded.always_on, qta = excluded.qta,"
                        " updated_ns = excluded.updated_ns",
                        what, false, "tdNbbtl", p->name, p->dmax_ms, p->bins, p->enabled,
                        p->always_on, p->qta_json, store__now(st));
}

int store_probe_ensure(struct store *st, const char *name) {
    int rc = store__check_name(name);
    if (rc) {
        return rc;
    }
    char what[320];
    snprintf(what, sizeof what, "probe ensure %s", name);
    return store__write(st, STORE__PROBE_ENSURE,
                        "INSERT INTO probes (name, created_ns, updated_ns) VALUES (?1, ?2, ?2)"
                        " ON CONFLICT (name) DO NOTHING",
                        what, false, "tl", name, store__now(st));
}

/* One row of a SELECT of PROBE_COLUMNS to the caller's callback. */
static int probe_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_probe p = {
        .name = store__column_text(s, 0),
        .dmax_ms = store__column_double(s, 1),
        .bins = sqlite3_column_int(s, 2),
        .enabled = sqlite3_column_int(s, 3) != 0,
        .always_on = sqlite3_column_int(s, 4) != 0,
        .qta_json = store__column_text(s, 5),
        .created_ns = sqlite3_column_int64(s, 6),
        .updated_ns = sqlite3_column_int64(s, 7),
        .servers = sqlite3_column_int(s, 8),
        .quiet_json = store__column_text(s, 9),
        .last_instance_ns = sqlite3_column_int64(s, 10),
        .last_origin = store__column_text(s, 11),
    };
    return it->cb.probe(it->ctx, &p);
}

int store_probe_get(struct store *st, const char *name, store_probe_cb cb, void *ctx) {
    if (!name || !cb) {
        return dq_fail(DQ_EINVAL, "store_probe_get: NULL argument");
    }
    char missing[320];
    snprintf(missing, sizeof missing, "probe %.255s not in the store", name);
    struct store__iter it = {.ctx = ctx, .cb.probe = cb};
    return store__query(st, STORE__PROBE_GET,
                        "SELECT " PROBE_COLUMNS " FROM probes WHERE name = ?1", probe_row, &it,
                        "reading probe", missing, "t", name);
}

int store_probes_each(struct store *st, store_probe_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_probes_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.probe = cb};
    return store__query(st, STORE__PROBE_ALL, "SELECT " PROBE_COLUMNS " FROM probes ORDER BY name",
                        probe_row, &it, "reading probes", NULL, "");
}

/* The message of a change to one probe that found no row. */
static int not_in_store(int rc, const char *what, const char *name) {
    if (rc == DQ_ENOTFOUND) {
        rc = dq_fail(DQ_ENOTFOUND, "%s: probe %.255s not in the store", what, name);
    }
    return rc;
}

static int set_flag(struct store *st, enum store__stmt_id id, const char *sql, const char *what,
                    const char *name, bool value) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "%s: NULL name", what);
    }
    return not_in_store(store__write(st, id, sql, what, true, "tbl", name, value, store__now(st)),
                        what, name);
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
    rc = store__write(st, STORE__PROBE_SET_RANGE,
                      "UPDATE probes SET dmax_ms = ?2, bins = ?3, updated_ns = ?4 WHERE name = ?1",
                      "probe set range", true, "tdNl", name, dmax_ms, bins, store__now(st));
    return not_in_store(rc, "probe set range", name);
}

int store_probe_set_qta(struct store *st, const char *name, const char *qta_json) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_qta: NULL name");
    }
    int rc = store__write(st, STORE__PROBE_SET_QTA,
                          "UPDATE probes SET qta = ?2, updated_ns = ?3 WHERE name = ?1",
                          "probe set qta", true, "ttl", name, qta_json, store__now(st));
    return not_in_store(rc, "probe set qta", name);
}

int store_probe_set_servers(struct store *st, const char *name, int servers) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_servers: NULL name");
    }
    if (servers < 0 || servers > 100000) {
        return dq_fail(DQ_ERANGE, "probe %s: servers %d not in [1, 100000] (or 0 for unset)", name,
                       servers);
    }
    int rc = store__write(st, STORE__PROBE_SET_SERVERS,
                          "UPDATE probes SET servers = ?2, updated_ns = ?3 WHERE name = ?1",
                          "probe set servers", true, "tNl", name, servers, store__now(st));
    return not_in_store(rc, "probe set servers", name);
}

int store_probe_set_quiet(struct store *st, const char *name, const char *quiet_json) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_quiet: NULL name");
    }
    int rc =
        store__write(st, STORE__PROBE_SET_QUIET, "UPDATE probes SET quiet = ?2 WHERE name = ?1",
                     "probe set quiet", true, "tt", name, quiet_json);
    return not_in_store(rc, "probe set quiet", name);
}

int store_probe_set_last(struct store *st, const char *name, int64_t last_instance_ns,
                         const char *last_origin_json) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_set_last: NULL name");
    }
    /* NULL binds as NULL: coalesce keeps what the row has */
    int rc = store__write(st, STORE__PROBE_SET_LAST,
                          "UPDATE probes SET last_instance_ns = coalesce(?2, last_instance_ns),"
                          " last_origin = coalesce(?3, last_origin) WHERE name = ?1",
                          "probe set last", true, "tLt", name, last_instance_ns, last_origin_json);
    return not_in_store(rc, "probe set last", name);
}

int store_probe_delete(struct store *st, const char *name) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "store_probe_delete: NULL name");
    }
    int rc = store__write(st, STORE__PROBE_DELETE, "DELETE FROM probes WHERE name = ?1",
                          "probe delete", true, "t", name);
    return not_in_store(rc, "probe delete", name);
}
