/*
 * store_history.c: what the dashboard reads beyond the in-memory ring (schema version 6):
 * the windows' observed ΔQs as sparse counts (window_dqs, for the heatmap), the exemplars of
 * each window (exemplars), and the marks of a time range (events, investigations and their
 * steps, read together).
 *
 * A window ΔQ's counts are a JSON object {"bin": count} holding only the bins with
 * instances, so that a row costs what the distribution occupies and the sqlite3 shell reads
 * it with json_each (key, value). Reading parses that text here, with a parser for exactly
 * what is written (a heatmap of a day reads tens of thousands of rows).
 */
#include "store.h"
#include "store_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "65535":18446744073709551615, : the longest entry, with its separator */
#define COUNT_TEXT_MAX 32

/* ---- window ΔQs ------------------------------------------------------------------------ */

/* Runs a bound write; on a foreign-key failure (a probe the store has not seen) registers
 * the probe and runs it again (reset keeps the bindings). */
static int write_for_probe(struct store *st, sqlite3_stmt *s, const char *probe, const char *what) {
    int rc = DQ_OK;
    int step = sqlite3_step(s);
    if (step != SQLITE_DONE && sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_FOREIGNKEY) {
        sqlite3_reset(s);
        rc = store_probe_ensure(st, probe);
        step = rc == DQ_OK ? sqlite3_step(s) : SQLITE_DONE;
    }
    if (rc == DQ_OK && step != SQLITE_DONE) {
        rc = store__fail(st, what);
    }
    store__done(s);
    return rc;
}

/* The counts of q (masses × instances, rounded) on at most STORE_DQ_MAX_BINS bins: *k and
 * *bins say the coarsened grid. */
static void coarse_counts(const struct dq *q, uint64_t total, uint64_t *out, int *k, int *bins) {
    int j = 0;
    while (((q->n + (1 << j) - 1) >> j) > STORE_DQ_MAX_BINS) {
        j++;
    }
    *k = q->k + j;
    *bins = (q->n + (1 << j) - 1) >> j;
    memset(out, 0, sizeof out[0] * (size_t)*bins);
    for (int i = 0; i < q->n; i++) {
        double c = q->pdf[i] * (double)total;
        out[i >> j] += c > 0.5 ? (uint64_t)llround(c) : 0;
    }
}

int store_window_dq_put(struct store *st, const char *probe, int64_t start_ns, int64_t end_ns,
                        const struct dq *q) {
    int rc = store__check_name(probe);
    if (rc) {
        return rc;
    }
    if (!q || dq_check_grid(q->k, q->n) != DQ_OK || end_ns < start_ns) {
        return dq_fail(DQ_EINVAL, "window ΔQ of %s: no ΔQ, a bad grid, or end before start", probe);
    }
    uint64_t total = q->n_ok + q->n_fa + q->n_to + q->n_out;
    uint64_t counts[STORE_DQ_MAX_BINS];
    int k, bins;
    coarse_counts(q, total, counts, &k, &bins);
    char text[STORE_DQ_MAX_BINS * COUNT_TEXT_MAX + 4];
    size_t len = 0;
    text[len++] = '{';
    for (int i = 0; i < bins; i++) {
        if (counts[i]) {
            len += (size_t)snprintf(text + len, sizeof text - len, "%s\"%d\":%llu",
                                    len > 1 ? "," : "", i, (unsigned long long)counts[i]);
        }
    }
    text[len++] = '}';
    text[len] = '\0';
    double lost = dq_lost(q);
    sqlite3_stmt *s;
    rc = store__prepare(st, STORE__WDQ_PUT,
                        "INSERT INTO window_dqs (probe, start_ns, end_ns, k, bins, n, lost, counts)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (probe, start_ns)"
                        " DO UPDATE SET end_ns = excluded.end_ns, k = excluded.k,"
                        " bins = excluded.bins, n = excluded.n, lost = excluded.lost,"
                        " counts = excluded.counts",
                        &s, "tlliildt", probe, start_ns, end_ns, k, bins, (int64_t)total,
                        lost < 0   ? 0.0
                        : lost > 1 ? 1.0
                                   : lost,
                        text);
    if (rc) {
        return rc;
    }
    char what[320];
    snprintf(what, sizeof what, "window ΔQ of %s at %lld", probe, (long long)start_ns);
    return write_for_probe(st, s, probe, what);
}

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') {
        p++;
    }
    return p;
}

/* Parses {"bin": count, …} into out[0 … bins), zeroed first. */
static int parse_counts(const char *text, uint64_t *out, int bins) {
    memset(out, 0, sizeof out[0] * (size_t)bins);
    const char *p = text ? skip_space(text) : NULL;
    if (!p || *p != '{') {
        return dq_fail(DQ_EPARSE, "window ΔQ counts: not a JSON object");
    }
    p = skip_space(p + 1);
    if (*p == '}') {
        return *skip_space(p + 1) ? dq_fail(DQ_EPARSE, "window ΔQ counts: text after the object")
                                  : DQ_OK;
    }
    for (;;) {
        char *end = NULL;
        if (*p++ != '"') {
            return dq_fail(DQ_EPARSE, "window ΔQ counts: a key is not a quoted bin");
        }
        errno = 0;
        long bin = strtol(p, &end, 10);
        if (end == p || *end != '"' || bin < 0 || bin >= bins || errno) {
            return dq_fail(DQ_EPARSE, "window ΔQ counts: bin \"%.12s\" is not in 0 … %d", p,
                           bins - 1);
        }
        p = skip_space(end + 1);
        if (*p++ != ':') {
            return dq_fail(DQ_EPARSE, "window ΔQ counts: no ':' after bin %ld", bin);
        }
        p = skip_space(p);
        errno = 0;
        unsigned long long c = strtoull(p, &end, 10);
        if (end == p || *p == '-' || errno) {
            return dq_fail(DQ_EPARSE, "window ΔQ counts: bin %ld's count is not a count", bin);
        }
        out[bin] = c;
        p = skip_space(end);
        if (*p == ',') {
            p = skip_space(p + 1);
        } else if (*p == '}') {
            break;
        } else {
            return dq_fail(DQ_EPARSE, "window ΔQ counts: expected , or } after bin %ld", bin);
        }
    }
    return *skip_space(p + 1) ? dq_fail(DQ_EPARSE, "window ΔQ counts: text after the object")
                              : DQ_OK;
}

static int window_dq_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    uint64_t counts[STORE_DQ_MAX_BINS];
    struct store_window_dq d = {.probe = it->probe,
                                .start_ns = sqlite3_column_int64(s, 0),
                                .end_ns = sqlite3_column_int64(s, 1),
                                .k = sqlite3_column_int(s, 2),
                                .bins = sqlite3_column_int(s, 3),
                                .n = (uint64_t)sqlite3_column_int64(s, 4),
                                .lost = store__column_double(s, 5),
                                .counts = counts};
    if (d.bins < 1 || d.bins > STORE_DQ_MAX_BINS) {
        return dq_fail(DQ_EPARSE, "window ΔQ of %s at %lld: %d bins", it->probe,
                       (long long)d.start_ns, d.bins);
    }
    int rc = parse_counts(store__column_text(s, 6), counts, d.bins);
    if (rc) {
        return dq_fail(rc, "window ΔQ of %s at %lld: %s", it->probe, (long long)d.start_ns,
                       dq_last_error());
    }
    return it->cb.window_dq(it->ctx, &d);
}

int store_window_dqs_each(struct store *st, const char *probe, int64_t from_ns, int64_t to_ns,
                          store_window_dq_cb cb, void *ctx) {
    if (!probe || !cb) {
        return dq_fail(DQ_EINVAL, "store_window_dqs_each: NULL probe or callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.window_dq = cb, .probe = probe};
    return store__query(st, STORE__WDQ_RANGE,
                        "SELECT start_ns, end_ns, k, bins, n, lost, counts FROM window_dqs"
                        " WHERE probe = ?1 AND start_ns >= ?2 AND start_ns < ?3"
                        " ORDER BY start_ns",
                        window_dq_row, &it, "reading window ΔQs", NULL, "tll", probe, from_ns,
                        to_ns);
}

/* ---- exemplars ------------------------------------------------------------------------------- */

/* Appends s as a JSON string (quoted, escaped); 0, or −1 when buf is full. */
static int append_string(char *buf, size_t cap, size_t *len, const char *s) {
    size_t o = *len;
    if (o + 2 >= cap) {
        return -1;
    }
    buf[o++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (o + 7 >= cap) {
            return -1;
        }
        if (*c == '"' || *c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)*c;
        } else if (*c < 0x20) {
            o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", *c);
        } else {
            buf[o++] = (char)*c;
        }
    }
    buf[o++] = '"';
    *len = o;
    return 0;
}

/* Appends one exemplar as a JSON object; 0, or −1 when buf is full. */
static int append_exemplar(char *buf, size_t cap, size_t *len, const struct store_exemplar *e) {
    int n =
        snprintf(buf + *len, cap - *len, "%s{\"status\":\"%s\",\"duration\":%.9g,\"end_ns\":%lld",
                 *len > 1 ? "," : "", e->status, e->duration, (long long)e->end_ns);
    if (n < 0 || (size_t)n >= cap - *len) {
        return -1;
    }
    *len += (size_t)n;
    const char *keys[] = {"trace_id", "instance_id", "node"};
    const char *vals[] = {e->trace_id, e->instance_id, e->node};
    for (int k = 0; k < 3; k++) {
        if (vals[k]) {
            n = snprintf(buf + *len, cap - *len, ",\"%s\":", keys[k]);
            if (n < 0 || (size_t)n >= cap - *len) {
                return -1;
            }
            *len += (size_t)n;
            if (append_string(buf, cap, len, vals[k]) != 0) {
                return -1;
            }
        }
    }
    n = snprintf(buf + *len, cap - *len, "%s%s}", e->attrs_json ? ",\"attrs\":" : "",
                 e->attrs_json ? e->attrs_json : "");
    if (n < 0 || (size_t)n >= cap - *len) {
        return -1;
    }
    *len += (size_t)n;
    return 0;
}

static int exemplar_ok(const char *probe, const struct store_exemplar *e) {
    const char *a = e->attrs_json;
    while (a && (*a == ' ' || *a == '\n' || *a == '\t' || *a == '\r')) {
        a++;
    }
    if (!e->status ||
        (strcmp(e->status, "ok") && strcmp(e->status, "fa") && strcmp(e->status, "to")) ||
        !(e->duration >= 0) || !isfinite(e->duration) || (a && *a != '{')) {
        return dq_fail(DQ_EINVAL,
                       "exemplar of %s: status must be one of " STORE_EXEMPLAR_STATUSES
                       ", the duration a number ≥ 0, the attributes a JSON object",
                       probe);
    }
    return DQ_OK;
}

int store_exemplars_put(struct store *st, const char *probe, int64_t start_ns,
                        const struct store_exemplar *e, int n) {
    int rc = store__check_name(probe);
    if (rc) {
        return rc;
    }
    if (!e || n < 1 || n > STORE_EXEMPLARS_MAX) {
        return dq_fail(DQ_EINVAL, "exemplars of %s: 1 … %d of them, not %d", probe,
                       STORE_EXEMPLARS_MAX, n);
    }
    if (st->text_cap < STORE__EXEMPLAR_TEXT_MAX) { /* the store's scratch text, kept */
        char *t = realloc(st->text, STORE__EXEMPLAR_TEXT_MAX);
        if (!t) {
            return dq_fail(DQ_ENOMEM, "no memory for the exemplars of %s", probe);
        }
        st->text = t;
        st->text_cap = STORE__EXEMPLAR_TEXT_MAX;
    }
    char *items = st->text;
    size_t len = 0;
    items[len++] = '[';
    double slowest = NAN;
    int failed = 0;
    for (int i = 0; i < n && rc == DQ_OK; i++) {
        rc = exemplar_ok(probe, &e[i]);
        if (rc == DQ_OK && append_exemplar(items, STORE__EXEMPLAR_TEXT_MAX - 2, &len, &e[i]) != 0) {
            rc = dq_fail(DQ_ERANGE, "the exemplars of %s at %lld do not fit %d bytes", probe,
                         (long long)start_ns, STORE__EXEMPLAR_TEXT_MAX);
        }
        failed += strcmp(e[i].status, "ok") != 0;
        if (strcmp(e[i].status, "ok") == 0 && !(e[i].duration <= slowest)) {
            slowest = e[i].duration;
        }
    }
    items[len++] = ']';
    items[len] = '\0';
    sqlite3_stmt *s = NULL;
    if (rc == DQ_OK) {
        rc = store__prepare(st, STORE__EX_PUT,
                            "INSERT INTO exemplars (probe, start_ns, slowest, failed, items)"
                            " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (probe, start_ns) DO UPDATE"
                            " SET slowest = excluded.slowest, failed = excluded.failed,"
                            " items = excluded.items",
                            &s, "tldit", probe, start_ns, slowest, failed, items);
    }
    if (rc == DQ_OK) {
        char what[320];
        snprintf(what, sizeof what, "exemplars of %s at %lld", probe, (long long)start_ns);
        rc = write_for_probe(st, s, probe, what);
    }
    return rc;
}

static int exemplar_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_exemplar e = {.probe = it->probe,
                               .start_ns = sqlite3_column_int64(s, 0),
                               .rank = sqlite3_column_int(s, 1),
                               .status = store__column_text(s, 2),
                               .duration = sqlite3_column_double(s, 3),
                               .end_ns = sqlite3_column_int64(s, 4),
                               .trace_id = store__column_text(s, 5),
                               .instance_id = store__column_text(s, 6),
                               .node = store__column_text(s, 7),
                               .attrs_json = store__column_text(s, 8)};
    if (!e.status) {
        return dq_fail(DQ_EPARSE, "exemplars of %s at %lld: an item without a status", it->probe,
                       (long long)e.start_ns);
    }
    return it->cb.exemplar(it->ctx, &e);
}

#define EXEMPLAR_COLUMNS                                                                           \
    "e.start_ns, j.key, json_extract(j.value, '$.status'),"                                        \
    " json_extract(j.value, '$.duration'), json_extract(j.value, '$.end_ns'),"                     \
    " json_extract(j.value, '$.trace_id'), json_extract(j.value, '$.instance_id'),"                \
    " json_extract(j.value, '$.node'), json_extract(j.value, '$.attrs')"

int store_exemplars_each(struct store *st, const char *probe, int64_t from_ns, int64_t to_ns,
                         int failed, int limit, store_exemplar_cb cb, void *ctx) {
    if (!probe || !cb) {
        return dq_fail(DQ_EINVAL, "store_exemplars_each: NULL probe or callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.exemplar = cb, .probe = probe};
    int lim = limit > 0 ? limit : INT32_MAX;
    if (failed) {
        return store__query(st, STORE__EX_FAILED,
                            "SELECT " EXEMPLAR_COLUMNS " FROM exemplars e, json_each(e.items) j"
                            " WHERE e.probe = ?1 AND e.start_ns >= ?2 AND e.start_ns < ?3"
                            " AND e.failed > 0 AND json_extract(j.value, '$.status') <> 'ok'"
                            " ORDER BY e.start_ns DESC, j.key LIMIT ?4",
                            exemplar_row, &it, "reading exemplars", NULL, "tlli", probe, from_ns,
                            to_ns, lim);
    }
    /* The limit-th largest of the windows' slowest bounds the limit-th slowest exemplar from
     * below (those windows hold that many exemplars at least as slow): only windows whose
     * slowest reaches it are read. */
    return store__query(
        st, STORE__EX_SLOWEST,
        "SELECT " EXEMPLAR_COLUMNS " FROM exemplars e, json_each(e.items) j"
        " WHERE e.probe = ?1 AND e.start_ns >= ?2 AND e.start_ns < ?3 AND e.slowest >="
        " coalesce((SELECT slowest FROM exemplars WHERE probe = ?1 AND start_ns >= ?2"
        " AND start_ns < ?3 AND slowest IS NOT NULL ORDER BY slowest DESC LIMIT 1"
        " OFFSET ?4 - 1), 0) AND json_extract(j.value, '$.status') = 'ok'"
        " ORDER BY 4 DESC, 1 DESC LIMIT ?4",
        exemplar_row, &it, "reading exemplars", NULL, "tlli", probe, from_ns, to_ns, lim);
}

/* ---- marks ---------------------------------------------------------------------------------- */

static int mark_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_mark m = {.time_ns = sqlite3_column_int64(s, 0),
                           .kind = store__column_text(s, 1),
                           .probe = store__column_text(s, 2),
                           .investigation = sqlite3_column_int64(s, 3),
                           .hypothesis = sqlite3_column_int64(s, 4),
                           .detail_json = store__column_text(s, 5)};
    return it->cb.mark(it->ctx, &m);
}

int store_marks_each(struct store *st, int64_t from_ns, int64_t to_ns, int limit, store_mark_cb cb,
                     void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_marks_each: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.mark = cb};
    return store__query(
        st, STORE__MARKS,
        "SELECT time_ns, kind, coalesce(probe, CASE WHEN json_valid(detail) THEN"
        " json_extract(detail, '$.probe') END), 0, 0, detail FROM events"
        " WHERE time_ns >= ?1 AND time_ns < ?2"
        " UNION ALL SELECT opened_ns, 'investigation_opened', node, id, 0,"
        " json_object('problem', problem, 'origin', origin, 'requested_by', requested_by,"
        " 'strategy', strategy) FROM investigations WHERE opened_ns >= ?1 AND opened_ns < ?2"
        " UNION ALL SELECT closed_ns, 'verdict', node, id, 0, json_object('verdict', verdict,"
        " 'verdict_node', verdict_node, 'culprits', CASE WHEN json_valid(summary) THEN"
        " json(json_extract(summary, '$.evidence.culprits')) END) FROM investigations"
        " WHERE closed_ns >= ?1 AND closed_ns < ?2"
        " UNION ALL SELECT created_ns, 'step', node, investigation, id, json_object('action',"
        " action, 'kind', kind, 'probes', json(probes), 'reason', CASE WHEN json_valid(stats)"
        " THEN json_extract(stats, '$.reason') END) FROM hypotheses"
        " WHERE created_ns >= ?1 AND created_ns < ?2 AND action NOT IN ('root', 'verdict')"
        " ORDER BY 1 DESC, 4 DESC, 5 DESC LIMIT ?3",
        mark_row, &it, "reading marks", NULL, "lli", from_ns, to_ns, limit > 0 ? limit : -1);
}

/* ---- windows in bins ---------------------------------------------------------------------- */

static int window_bin_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_window w = {.probe = it->probe,
                             .kind = it->kind,
                             .start_ns = sqlite3_column_int64(s, 0),
                             .end_ns = sqlite3_column_int64(s, 1),
                             .n = (uint64_t)sqlite3_column_int64(s, 2),
                             .n_ok = (uint64_t)sqlite3_column_int64(s, 3),
                             .n_fa = (uint64_t)sqlite3_column_int64(s, 4),
                             .n_to = (uint64_t)sqlite3_column_int64(s, 5),
                             .mean = store__column_double(s, 6),
                             .p50 = store__column_double(s, 7),
                             .p95 = store__column_double(s, 8),
                             .p99 = store__column_double(s, 9),
                             .lost = store__column_double(s, 10)};
    return it->cb.window_bin(it->ctx, &w, sqlite3_column_int(s, 11));
}

int store_windows_binned(struct store *st, const char *probe, enum store_kind kind, int64_t from_ns,
                         int64_t to_ns, int64_t step_ns, store_window_bin_cb cb, void *ctx) {
    const char *kname = store_kind_name(kind);
    if (!probe || !cb || !kname || step_ns <= 0) {
        return dq_fail(DQ_EINVAL, "store_windows_binned: NULL argument, bad kind or step");
    }
    struct store__iter it = {.ctx = ctx, .cb.window_bin = cb, .probe = probe, .kind = kind};
    /* a weighted mean over the rows that have the value (NULL when none has) */
    return store__query(
        st, STORE__WINDOW_BINNED,
        "SELECT min(start_ns), max(end_ns), sum(n), sum(n_ok), sum(n_fa), sum(n_to),"
        " sum(mean * n_ok) / sum(CASE WHEN mean IS NOT NULL THEN n_ok END),"
        " sum(p50 * max(n, 1)) / sum(CASE WHEN p50 IS NOT NULL THEN max(n, 1) END),"
        " max(p95), max(p99),"
        " sum(lost * max(n, 1)) / sum(CASE WHEN lost IS NOT NULL THEN max(n, 1) END), count(*)"
        " FROM windows WHERE probe = ?1 AND kind = ?2 AND start_ns >= ?3 AND start_ns < ?4"
        " GROUP BY (start_ns - ?3) / ?5 ORDER BY 1",
        window_bin_row, &it, "reading windows", NULL, "ttlll", probe, kname, from_ns, to_ns,
        step_ns);
}

static int newest_row(sqlite3_stmt *s, void *arg) {
    if (sqlite3_column_type(s, 0) == SQLITE_NULL) {
        return 1;
    }
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 1;
}

int store_exemplars_newest(struct store *st, const char *probe, int64_t *start_ns) {
    int64_t v = INT64_MIN;
    int rc =
        store__query(st, STORE__EX_NEWEST, "SELECT max(start_ns) FROM exemplars WHERE probe = ?1",
                     newest_row, &v, "reading exemplars", NULL, "t", probe);
    if (rc) {
        return rc;
    }
    if (v == INT64_MIN) {
        return dq_fail(DQ_ENOTFOUND, "%s has no exemplar", probe);
    }
    *start_ns = v;
    return DQ_OK;
}
