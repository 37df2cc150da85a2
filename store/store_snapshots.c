/*
 * store_snapshots.c: snapshots, the ΔQs of a probe and its diagram neighbours for the W
 * windows before and after a trigger fired (issue 6), kept for `dqctl snapshot`.
 *
 * A ΔQ is stored as its grid (k, bins), its counts, and its masses as a JSON array
 * written with %.17g, so every double reads back bit for bit and the sqlite3 shell can
 * take it apart with json_each. Trailing empty bins are not written (a 4096-bin ΔQ of a
 * fast probe is mostly zeros); reading pads them back. This assumes the C locale for
 * numbers, which dqd never changes.
 */
#include "store.h"
#include "store_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest %.17g of a double ("-1.2345678901234567e-308") plus a separator. */
#define MASS_TEXT_MAX 26

/* ---- masses as JSON text -------------------------------------------------------------- */

static int format_masses(struct store *st, const double *pdf, int n, const char **text) {
    size_t need = (size_t)n * MASS_TEXT_MAX + 3;
    if (st->text_cap < need) {
        char *t = realloc(st->text, need);
        if (!t) {
            return dq_fail(DQ_ENOMEM, "snapshot: no memory for %d masses", n);
        }
        st->text = t;
        st->text_cap = need;
    }
    int last = n - 1;
    while (last >= 0 && pdf[last] == 0.0) {
        last--;
    }
    size_t len = 0;
    st->text[len++] = '[';
    for (int i = 0; i <= last; i++) {
        int w = snprintf(st->text + len, st->text_cap - len, i ? ",%.17g" : "%.17g", pdf[i]);
        if (w < 0 || (size_t)w >= st->text_cap - len) {
            return dq_fail(DQ_ERANGE, "snapshot: mass %d does not fit its text buffer", i);
        }
        len += (size_t)w;
    }
    st->text[len++] = ']';
    st->text[len] = '\0';
    *text = st->text;
    return DQ_OK;
}

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') {
        p++;
    }
    return p;
}

/* Parses a JSON array of at most n finite masses ≥ 0 into out[0..n), padding with 0. */
static int parse_masses(const char *text, double *out, int n) {
    const char *p = text ? skip_space(text) : NULL;
    if (!p || *p != '[') {
        return dq_fail(DQ_EPARSE, "snapshot masses: not a JSON array");
    }
    p = skip_space(p + 1);
    int count = 0;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            if (count >= n) {
                return dq_fail(DQ_EPARSE, "snapshot masses: more than %d values", n);
            }
            char *end = NULL;
            errno = 0;
            double v = strtod(p, &end);
            if (end == p || errno == ERANGE || !isfinite(v) || v < 0) {
                return dq_fail(DQ_EPARSE, "snapshot masses: bad value at index %d", count);
            }
            out[count++] = v;
            p = skip_space(end);
            if (*p == ',') {
                p = skip_space(p + 1);
            } else if (*p == ']') {
                p++;
                break;
            } else {
                return dq_fail(DQ_EPARSE, "snapshot masses: expected , or ] after index %d",
                               count - 1);
            }
        }
    }
    if (*skip_space(p) != '\0') {
        return dq_fail(DQ_EPARSE, "snapshot masses: text after the array");
    }
    for (int i = count; i < n; i++) {
        out[i] = 0.0;
    }
    return DQ_OK;
}

/* ---- snapshots ------------------------------------------------------------------------ */

#define SNAPSHOT_COLUMNS                                                                           \
    "s.id, s.trigger_id, s.investigation, s.probe, s.reason, s.time_ns, s.windows, s.state,"       \
    " s.created_ns, s.completed_ns,"                                                               \
    " (SELECT count(*) FROM snapshot_dqs d WHERE d.snapshot = s.id)"

static int snapshot_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    if (!it->cb.snapshot) {
        return 0;
    }
    const char *state = store__column_text(s, 7);
    struct store_snapshot snap = {
        .id = sqlite3_column_int64(s, 0),
        .trigger_id = sqlite3_column_int64(s, 1),
        .investigation = sqlite3_column_int64(s, 2),
        .probe = store__column_text(s, 3),
        .reason = store__column_text(s, 4),
        .time_ns = sqlite3_column_int64(s, 5),
        .windows = sqlite3_column_int(s, 6),
        .complete = state && strcmp(state, "complete") == 0,
        .created_ns = sqlite3_column_int64(s, 8),
        .completed_ns = sqlite3_column_int64(s, 9),
        .dq_count = sqlite3_column_int(s, 10),
    };
    return it->cb.snapshot(it->ctx, &snap);
}

int store_snapshot_insert(struct store *st, const struct store_snapshot *snap, int64_t *id) {
    if (!snap || !snap->probe || !id) {
        return dq_fail(DQ_EINVAL, "store_snapshot_insert: NULL snapshot, probe or id");
    }
    if (snap->windows < 1) {
        return dq_fail(DQ_ERANGE, "snapshot of %.64s: windows %d must be ≥ 1", snap->probe,
                       snap->windows);
    }
    int64_t now = store__now(st);
    int rc = store__write(st, STORE__SNAP_INSERT,
                          "INSERT INTO snapshots (trigger_id, investigation, probe, reason,"
                          " time_ns, windows, created_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                          "snapshot insert", false, "LLttlil", snap->trigger_id,
                          snap->investigation, snap->probe, snap->reason,
                          snap->time_ns ? snap->time_ns : now, snap->windows, now);
    if (rc == DQ_OK) {
        *id = sqlite3_last_insert_rowid(st->db);
    }
    return rc;
}

/* DQ_OK when snapshot `id` exists and is still collecting. */
static int check_collecting(struct store *st, int64_t id) {
    sqlite3_stmt *s;
    int rc = store__prepare(st, STORE__SNAP_STATE, "SELECT state FROM snapshots WHERE id = ?1", &s,
                            "l", id);
    if (rc) {
        return rc;
    }
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        const char *state = store__column_text(s, 0);
        if (!state || strcmp(state, "collecting") != 0) {
            rc = dq_fail(DQ_ESTATE, "snapshot %lld is complete", (long long)id);
        }
    } else if (step == SQLITE_DONE) {
        rc = dq_fail(DQ_ENOTFOUND, "no snapshot %lld", (long long)id);
    } else {
        rc = store__fail(st, "reading snapshot state");
    }
    store__done(s);
    return rc;
}

static int check_u64(uint64_t v) {
    if (v > (uint64_t)INT64_MAX) {
        return dq_fail(DQ_ERANGE, "snapshot: count %llu too large", (unsigned long long)v);
    }
    return DQ_OK;
}

int store_snapshot_add_dq(struct store *st, int64_t snapshot, const char *probe,
                          enum store_kind kind, int64_t start_ns, int64_t end_ns,
                          const struct dq *dq) {
    const char *kname = store_kind_name(kind);
    if (!probe || !dq || !dq->pdf || !kname || end_ns < start_ns) {
        return dq_fail(DQ_EINVAL, "store_snapshot_add_dq: NULL probe or ΔQ, bad kind, or end "
                                  "before start");
    }
    int rc = dq_check_grid(dq->k, dq->n);
    if (rc) {
        return rc;
    }
    for (int i = 0; i < dq->n; i++) {
        if (!isfinite(dq->pdf[i]) || dq->pdf[i] < 0) {
            return dq_fail(DQ_EINVAL, "snapshot ΔQ of %.64s: mass %g in bin %d", probe, dq->pdf[i],
                           i);
        }
    }
    if ((rc = check_u64(dq->n_ok)) || (rc = check_u64(dq->n_fa)) || (rc = check_u64(dq->n_to)) ||
        (rc = check_u64(dq->n_out)) || (rc = check_collecting(st, snapshot))) {
        return rc;
    }
    const char *masses = NULL;
    if ((rc = format_masses(st, dq->pdf, dq->n, &masses))) {
        return rc;
    }
    return store__write(st, STORE__SNAP_ADD_DQ,
                        "INSERT INTO snapshot_dqs (snapshot, probe, kind, start_ns, end_ns, k,"
                        " bins, n_ok, n_fa, n_to, n_out, pdf) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                        " ?8, ?9, ?10, ?11, ?12) ON CONFLICT (snapshot, probe, kind, start_ns) DO"
                        " UPDATE SET end_ns = excluded.end_ns, k = excluded.k,"
                        " bins = excluded.bins, n_ok = excluded.n_ok, n_fa = excluded.n_fa,"
                        " n_to = excluded.n_to, n_out = excluded.n_out, pdf = excluded.pdf",
                        "snapshot ΔQ", false, "lttlliillllt", snapshot, probe, kname, start_ns,
                        end_ns, dq->k, dq->n, (int64_t)dq->n_ok, (int64_t)dq->n_fa,
                        (int64_t)dq->n_to, (int64_t)dq->n_out, masses);
}

int store_snapshot_complete(struct store *st, int64_t id) {
    int rc = check_collecting(st, id);
    if (rc) {
        return rc;
    }
    return store__write(st, STORE__SNAP_COMPLETE,
                        "UPDATE snapshots SET state = 'complete', completed_ns = ?2 WHERE id = ?1",
                        "snapshot complete", true, "ll", id, store__now(st));
}

static int snapshot_dq_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    const char *kind = store__column_text(s, 1);
    struct dq view = {
        .k = sqlite3_column_int(s, 4),
        .n = sqlite3_column_int(s, 5),
        .n_ok = (uint64_t)sqlite3_column_int64(s, 6),
        .n_fa = (uint64_t)sqlite3_column_int64(s, 7),
        .n_to = (uint64_t)sqlite3_column_int64(s, 8),
        .n_out = (uint64_t)sqlite3_column_int64(s, 9),
    };
    /* The schema's CHECKs hold the grid in range; a hand-edited row still gets checked
       before its masses are written into the fixed-size buffer. */
    int rc = dq_check_grid(view.k, view.n);
    if (rc) {
        return dq_fail(DQ_EPARSE, "snapshot ΔQ: %s", dq_last_error());
    }
    if ((rc = parse_masses(store__column_text(s, 10), it->store->masses, view.n))) {
        return rc;
    }
    view.width = dq_width_of(view.k);
    view.pdf = it->store->masses;
    struct store_snapshot_dq d = {
        .probe = store__column_text(s, 0),
        .kind = kind && strcmp(kind, "calculated") == 0 ? STORE_CALCULATED : STORE_OBSERVED,
        .start_ns = sqlite3_column_int64(s, 2),
        .end_ns = sqlite3_column_int64(s, 3),
        .dq = &view,
    };
    return it->cb.snapshot_dq(it->ctx, &d);
}

int store_snapshot_get(struct store *st, int64_t id, store_snapshot_cb snapshot_cb,
                       store_snapshot_dq_cb dq_cb, void *ctx) {
    char missing[64];
    snprintf(missing, sizeof missing, "no snapshot %lld", (long long)id);
    struct store__iter sit = {.ctx = ctx, .cb.snapshot = snapshot_cb};
    int rc = store__query(st, STORE__SNAP_GET,
                          "SELECT " SNAPSHOT_COLUMNS " FROM snapshots s WHERE s.id = ?1",
                          snapshot_row, &sit, "reading snapshot", missing, "l", id);
    if (rc || !dq_cb) {
        return rc;
    }
    if (!st->masses) {
        st->masses = malloc(sizeof(double) * DQ_MAX_BINS);
        if (!st->masses) {
            return dq_fail(DQ_ENOMEM, "snapshot: no memory for masses");
        }
    }
    struct store__iter dit = {.ctx = ctx, .cb.snapshot_dq = dq_cb, .store = st};
    return store__query(st, STORE__SNAP_DQS,
                        "SELECT probe, kind, start_ns, end_ns, k, bins, n_ok, n_fa, n_to, n_out,"
                        " pdf FROM snapshot_dqs WHERE snapshot = ?1 ORDER BY probe, kind, start_ns",
                        snapshot_dq_row, &dit, "reading snapshot ΔQs", NULL, "l", id);
}

int store_snapshots_each(struct store *st, int limit, store_snapshot_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_snapshots_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.snapshot = cb};
    return store__query(st, STORE__SNAP_EACH,
                        "SELECT " SNAPSHOT_COLUMNS " FROM snapshots s ORDER BY s.id DESC LIMIT ?1",
                        snapshot_row, &it, "reading snapshots", NULL, "i", limit > 0 ? limit : -1);
}
