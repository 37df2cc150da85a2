/*
 * test_store_history.c: schema version 7 on real SQLite files: the upgrades from versions 5
 * and 6 with data, the window ΔQs (sparse counts, coarsened grids, rewrites, a damaged row), the
 * exemplars (slowest and failed, limits, refusals), the marks of a time range, and the
 * retention of both.
 */
#include "store.h"

#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "store_test_util.h"

#define SEC INT64_C(1000000000)
#define T0 (INT64_C(1700000000) * SEC)

static struct store *open_at(const char *path, int version) {
    struct store *st = NULL;
    struct store_options o = {.target_version = version};
    int rc = store_open_ex(path, &o, &st);
    CHECK_MSG(rc == DQ_OK && st, "store_open_ex(%s, %d) = %s: %s", path, version, dq_err_name(rc),
              dq_last_error());
    return st;
}

/* Runs SQL on the file behind the store's back (what a person with the shell could do). */
static void shell(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    CHECK_MSG(rc == SQLITE_OK, "%s: %s", sql, err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
}

/* ---- the ΔQs ------------------------------------------------------------------------------ */

struct dq_rows {
    int n;
    int64_t start[8];
    int k[8], bins[8];
    uint64_t total[8], sum[8], first_bin[8], first_count[8];
    double lost[8];
};

static int collect_dq(void *ctx, const struct store_window_dq *d) {
    struct dq_rows *r = ctx;
    if (r->n >= 8) {
        return DQ_EFULL;
    }
    int i = r->n++;
    r->start[i] = d->start_ns;
    r->k[i] = d->k;
    r->bins[i] = d->bins;
    r->total[i] = d->n;
    r->lost[i] = d->lost;
    r->sum[i] = 0;
    r->first_bin[i] = UINT64_MAX;
    for (int b = 0; b < d->bins; b++) {
        r->sum[i] += d->counts[b];
        if (d->counts[b] && r->first_bin[i] == UINT64_MAX) {
            r->first_bin[i] = (uint64_t)b;
            r->first_count[i] = d->counts[b];
        }
    }
    return 0;
}

/* 1000 bins of 2^-2 ms: 40 instances in bins 10 … 13, 20 in bin 999, 5 failed, 2 past dMax. */
static struct dq *sample_dq(void) {
    uint64_t counts[1000] = {0};
    counts[10] = counts[11] = counts[12] = counts[13] = 10;
    counts[999] = 20;
    struct dq *q = NULL;
    CHECK_INT(dq_from_counts(-2, 1000, counts, 5, 0, 2, &q), DQ_OK);
    return q;
}

static void test_window_dqs(void) {
    char path[512];
    tmp_path(path, sizeof path, "dqs.db");
    struct store *st = open_at(path, 0);
    struct dq *q = sample_dq();
    CHECK_INT(store_window_dq_put(st, "api", T0, T0 + SEC, q), DQ_OK);
    CHECK_INT(store_window_dq_put(st, "api", T0 + SEC, T0 + 2 * SEC, q), DQ_OK);
    struct dq_rows r = {0};
    CHECK_INT(store_window_dqs_each(st, "api", T0, T0 + 10 * SEC, collect_dq, &r), DQ_OK);
    CHECK_INT(r.n, 2);
    /* 1000 bins become 250 bins of 2^0 ms: four merged into one, exactly */
    CHECK_INT(r.k[0], 0);
    CHECK_INT(r.bins[0], 250);
    CHECK_INT(r.total[0], 67);
    CHECK_INT(r.sum[0], 60); /* the tangible instances; 7 are lost */
    CHECK_INT(r.first_bin[0], 2);
    CHECK_INT(r.first_count[0], 20); /* bins 10, 11 → 2; 12, 13 → 3 */
    CHECK_NEAR(r.lost[0], 7.0 / 67.0, 1e-12);
    CHECK_INT(r.start[1], T0 + SEC);
    /* a range is [from, to) and oldest first */
    memset(&r, 0, sizeof r);
    CHECK_INT(store_window_dqs_each(st, "api", T0 + SEC, T0 + 2 * SEC, collect_dq, &r), DQ_OK);
    CHECK_INT(r.n, 1);
    /* a rewrite replaces */
    uint64_t few[8] = {0, 3};
    struct dq *small = NULL;
    CHECK_INT(dq_from_counts(0, 8, few, 0, 0, 0, &small), DQ_OK);
    CHECK_INT(store_window_dq_put(st, "api", T0, T0 + SEC, small), DQ_OK);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_window_dqs_each(st, "api", T0, T0 + SEC, collect_dq, &r), DQ_OK);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.bins[0], 8);
    CHECK_INT(r.first_bin[0], 1);
    CHECK_INT(r.first_count[0], 3);
    /* refusals */
    CHECK_INT(store_window_dq_put(st, "bad name", T0, T0 + SEC, q), DQ_EINVAL);
    CHECK_INT(store_window_dq_put(st, "api", T0 + SEC, T0, q), DQ_EINVAL);
    CHECK_INT(store_window_dq_put(st, "api", T0, T0 + SEC, NULL), DQ_EINVAL);
    CHECK_INT(store_window_dqs_each(st, "api", T0, T0 + SEC, NULL, NULL), DQ_EINVAL);
    store_close(st);
    /* a row damaged by hand is an error naming it, not a crash */
    shell(path,
          "UPDATE window_dqs SET counts = '{\"300\":1}' WHERE start_ns = 1700000000000000000");
    st = open_at(path, 0);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_window_dqs_each(st, "api", T0, T0 + 10 * SEC, collect_dq, &r), DQ_EPARSE);
    CHECK(strstr(dq_last_error(), "window ΔQ of api") != NULL);
    store_close(st);
    dq_destroy(q);
    dq_destroy(small);
}

/* ---- exemplars ------------------------------------------------------------------------------ */

struct ex_rows {
    int n;
    double duration[16];
    char status[16][4];
    char trace[16][72];
    int64_t start[16];
    int rank[16];
    int attrs[16];
};

static int collect_ex(void *ctx, const struct store_exemplar *e) {
    struct ex_rows *r = ctx;
    if (r->n >= 16) {
        return DQ_EFULL;
    }
    int i = r->n++;
    r->duration[i] = e->duration;
    snprintf(r->status[i], sizeof r->status[i], "%s", e->status);
    snprintf(r->trace[i], sizeof r->trace[i], "%s", e->trace_id ? e->trace_id : "");
    r->start[i] = e->start_ns;
    r->rank[i] = e->rank;
    r->attrs[i] = e->attrs_json != NULL;
    return 0;
}

/* An exemplar of probe "api" (rank 0 has attributes). */
static struct store_exemplar ex(int rank, const char *status, double d, const char *trace,
                                int64_t end) {
    return (struct store_exemplar){.status = status,
                                   .duration = d,
                                   .end_ns = end,
                                   .trace_id = trace,
                                   .instance_id = "9f2c",
                                   .node = rank == 1 ? "a \"quoted\" node\n" : "shop@host1",
                                   .attrs_json = rank == 0 ? "{\"region\":\"eu\"}" : NULL};
}

/* One window of "api" with one exemplar (for the retention and upgrade cases). */
static void put_ex(struct store *st, int64_t start, int rank, const char *status, double d,
                   const char *trace) {
    struct store_exemplar e = ex(rank, status, d, trace, start + SEC / 2);
    CHECK_INT(store_exemplars_put(st, "api", start, &e, 1), DQ_OK);
}

static void test_exemplars(void) {
    char path[512];
    tmp_path(path, sizeof path, "ex.db");
    struct store *st = open_at(path, 0);
    /* as the core keeps them: the successful ones slowest first, then the failed ones */
    struct store_exemplar w0[] = {ex(0, "ok", 0.090, "aa01", T0 + SEC / 2),
                                  ex(1, "ok", 0.050, "aa02", T0 + SEC / 3),
                                  ex(2, "fa", 0.010, "aa03", T0 + SEC / 4)};
    struct store_exemplar w1[] = {ex(0, "ok", 0.120, "bb01", T0 + SEC + 1),
                                  ex(1, "to", 0.500, "bb02", T0 + SEC + 2)};
    struct store_exemplar w2[] = {ex(2, "fa", 0.020, "cc01", T0 + 2 * SEC + 1)}; /* none ok */
    CHECK_INT(store_exemplars_put(st, "api", T0, w0, 3), DQ_OK);
    CHECK_INT(store_exemplars_put(st, "api", T0 + SEC, w1, 2), DQ_OK);
    CHECK_INT(store_exemplars_put(st, "api", T0 + 2 * SEC, w2, 1), DQ_OK);
    struct ex_rows r = {0};
    CHECK_INT(store_exemplars_each(st, "api", T0, T0 + 5 * SEC, 0, 0, collect_ex, &r), DQ_OK);
    CHECK_INT(r.n, 3); /* the successful ones, slowest first */
    CHECK(strcmp(r.trace[0], "bb01") == 0 && strcmp(r.trace[1], "aa01") == 0 &&
          strcmp(r.trace[2], "aa02") == 0);
    CHECK(r.attrs[1] && !r.attrs[2]);
    CHECK(r.start[0] == T0 + SEC && r.rank[0] == 0 && r.rank[2] == 1);
    /* the limit: the slowest ones, found from the windows' slowest */
    for (int lim = 1; lim <= 3; lim++) {
        memset(&r, 0, sizeof r);
        CHECK_INT(store_exemplars_each(st, "api", T0, T0 + 5 * SEC, 0, lim, collect_ex, &r), DQ_OK);
        CHECK_INT(r.n, lim);
        CHECK(strcmp(r.trace[lim - 1], lim == 1 ? "bb01" : lim == 2 ? "aa01" : "aa02") == 0);
    }
    memset(&r, 0, sizeof r);
    CHECK_INT(store_exemplars_each(st, "api", T0, T0 + 5 * SEC, 1, 0, collect_ex, &r), DQ_OK);
    CHECK_INT(r.n, 3); /* failed and timed out, newest first */
    CHECK(strcmp(r.trace[0], "cc01") == 0 && strcmp(r.status[1], "to") == 0 &&
          strcmp(r.status[2], "fa") == 0);
    /* [from, to): the second window only */
    memset(&r, 0, sizeof r);
    CHECK_INT(store_exemplars_each(st, "api", T0 + SEC, T0 + 2 * SEC, 0, 0, collect_ex, &r), DQ_OK);
    CHECK_INT(r.n, 1);
    /* a rewrite of a window replaces its exemplars */
    CHECK_INT(store_exemplars_put(st, "api", T0, w2, 1), DQ_OK);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_exemplars_each(st, "api", T0, T0 + SEC, 0, 0, collect_ex, &r), DQ_OK);
    CHECK_INT(r.n, 0);
    int64_t newest = 0;
    CHECK_INT(store_exemplars_newest(st, "api", &newest), DQ_OK);
    CHECK_INT(newest, T0 + 2 * SEC);
    CHECK_INT(store_exemplars_newest(st, "other", &newest), DQ_ENOTFOUND);
    /* refusals */
    struct store_exemplar bad = ex(3, "slow", 1, NULL, T0);
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, 1), DQ_EINVAL);
    bad.status = "ok";
    bad.duration = -1;
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, 1), DQ_EINVAL);
    bad.duration = 1;
    bad.attrs_json = "[1, 2]"; /* attributes are an object */
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, 1), DQ_EINVAL);
    bad.attrs_json = "{\"a\": "; /* not JSON */
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, 1), DQ_EINVAL);
    bad.attrs_json = NULL;
    CHECK_INT(store_exemplars_put(st, "no such probe!", T0, &bad, 1), DQ_EINVAL);
    CHECK_INT(store_exemplars_put(st, "api", T0, NULL, 1), DQ_EINVAL);
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, 0), DQ_EINVAL);
    CHECK_INT(store_exemplars_put(st, "api", T0, &bad, STORE_EXEMPLARS_MAX + 1), DQ_EINVAL);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_exemplars_each(st, "api", T0, T0 + SEC, 1, 0, collect_ex, &r), DQ_OK);
    CHECK_INT(r.n, 1); /* what the refusals did not replace */
    store_close(st);
}

/* ---- marks -------------------------------------------------------------------------------------
 */

struct mark_rows {
    int n;
    char kind[16][32];
    char probe[16][32];
    int64_t time[16], inv[16], hyp[16];
    int detail[16];
    char verdict_detail[256]; /* the detail of the newest verdict mark */
};

static int collect_mark(void *ctx, const struct store_mark *m) {
    struct mark_rows *r = ctx;
    if (r->n >= 16) {
        return DQ_EFULL;
    }
    int i = r->n++;
    snprintf(r->kind[i], sizeof r->kind[i], "%s", m->kind);
    snprintf(r->probe[i], sizeof r->probe[i], "%s", m->probe ? m->probe : "");
    r->time[i] = m->time_ns;
    r->inv[i] = m->investigation;
    r->hyp[i] = m->hypothesis;
    r->detail[i] = m->detail_json != NULL;
    if (strcmp(m->kind, "verdict") == 0 && !r->verdict_detail[0] && m->detail_json) {
        snprintf(r->verdict_detail, sizeof r->verdict_detail, "%s", m->detail_json);
    }
    return 0;
}

static void test_marks(void) {
    char path[512];
    tmp_path(path, sizeof path, "marks.db");
    struct store *st = open_at(path, 0);
    struct fake_clock clk = {T0};
    store_set_clock(st, fake_now, &clk);
    struct store_event e1 = {.time_ns = T0 + 1 * SEC, .kind = "dqd_started"};
    struct store_event e2 = {.time_ns = T0 + 2 * SEC,
                             .kind = "trigger_fired",
                             .probe = "root",
                             .detail_json = "{\"kind\":\"qta\"}"};
    /* an older event that names its probe in its detail only */
    struct store_event e3 = {
        .time_ns = T0 + 3 * SEC, .kind = "probe_silent", .detail_json = "{\"probe\":\"db\"}"};
    CHECK_INT(store_event_add(st, &e1, NULL), DQ_OK);
    CHECK_INT(store_event_add(st, &e2, NULL), DQ_OK);
    CHECK_INT(store_event_add(st, &e3, NULL), DQ_OK);
    struct store_investigation inv = {.node = "root",
                                      .problem = "latency",
                                      .strategy = "children",
                                      .origin = "person",
                                      .opened_ns = T0 + 4 * SEC};
    int64_t id = 0, h1 = 0, h2 = 0, h3 = 0;
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_OK);
    struct store_hypothesis h = {.investigation = id,
                                 .node = "root",
                                 .kind = "latency",
                                 .action = "root",
                                 .created_ns = T0 + 4 * SEC};
    CHECK_INT(store_hypothesis_insert(st, &h, &h1), DQ_OK);
    h.parent = h1;
    h.action = "expand";
    h.probes_json = "[\"a\",\"b\"]";
    h.stats_json = "{\"reason\":\"a and b\"}";
    h.created_ns = T0 + 5 * SEC;
    CHECK_INT(store_hypothesis_insert(st, &h, &h2), DQ_OK);
    h.action = "verdict";
    h.node = "b";
    h.probes_json = NULL;
    h.stats_json = NULL;
    h.created_ns = T0 + 6 * SEC;
    CHECK_INT(store_hypothesis_insert(st, &h, &h3), DQ_OK);
    clk.now = T0 + 6 * SEC;
    /* a verdict that names two culprits (issue 24): its mark has them */
    CHECK_INT(store_investigation_close(
                  st, id, "localized", "b",
                  "{\"verdict\":\"localized\",\"node\":\"b\",\"evidence\":{\"culprits\":[{"
                  "\"probe\":\"b\",\"share\":0.6},{\"probe\":\"a\",\"share\":0.3}]}}"),
              DQ_OK);
    struct mark_rows r = {0};
    CHECK_INT(store_marks_each(st, T0, T0 + 10 * SEC, 0, collect_mark, &r), DQ_OK);
    /* newest first: the verdict, the expand step (root and verdict steps are the
     * investigation's own marks), the opening, then the three events */
    static const char *const want[] = {"verdict",      "step",          "investigation_opened",
                                       "probe_silent", "trigger_fired", "dqd_started"};
    CHECK_INT(r.n, 6);
    for (int i = 0; i < r.n && i < 6; i++) {
        CHECK_MSG(strcmp(r.kind[i], want[i]) == 0, "mark %d is %s, not %s", i, r.kind[i], want[i]);
    }
    CHECK_INT(r.time[0], T0 + 6 * SEC);
    CHECK_MSG(strstr(r.verdict_detail, "\"culprits\":[{\"probe\":\"b\",\"share\":0.6},{"
                                       "\"probe\":\"a\",\"share\":0.3}]") != NULL,
              "the verdict mark's culprits: %s", r.verdict_detail);
    CHECK_INT(r.inv[0], id);
    CHECK_INT(r.hyp[1], h2);
    CHECK(strcmp(r.probe[1], "root") == 0 && r.detail[1]);
    CHECK(strcmp(r.probe[3], "db") == 0);
    CHECK(strcmp(r.probe[4], "root") == 0);
    CHECK(r.probe[5][0] == '\0');
    /* a range and a limit */
    memset(&r, 0, sizeof r);
    CHECK_INT(store_marks_each(st, T0 + 2 * SEC, T0 + 4 * SEC, 0, collect_mark, &r), DQ_OK);
    CHECK_INT(r.n, 2);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_marks_each(st, T0, T0 + 10 * SEC, 2, collect_mark, &r), DQ_OK);
    CHECK_INT(r.n, 2);
    CHECK(strcmp(r.kind[1], "step") == 0);
    CHECK_INT(store_marks_each(st, T0, T0 + SEC, 0, NULL, NULL), DQ_EINVAL);
    store_close(st);
}

/* ---- the upgrade and retention ------------------------------------------------------------ */

static int count_dq(void *ctx, const struct store_window_dq *d) {
    (void)d;
    ++*(int *)ctx;
    return 0;
}
static int count_ex(void *ctx, const struct store_exemplar *e) {
    (void)e;
    ++*(int *)ctx;
    return 0;
}
static int count_window(void *ctx, const struct store_window *w) {
    (void)w;
    ++*(int *)ctx;
    return 0;
}

/* A store of version `from` with a window in it, opened again: migrated to the latest
 * (version 6's columns, then version 7's tables, in order), its row kept, its history
 * written and read. */
static void upgrade_from(int from) {
    char path[512], name[32];
    snprintf(name, sizeof name, "v%d.db", from);
    tmp_path(path, sizeof path, name);
    struct store *st = open_at(path, from);
    int v = 0;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, from);
    CHECK_INT(store_probe_ensure(st, "api"), DQ_OK);
    store_close(st);
    /* a window as that version wrote it (this version's store_window_put writes version
       6's columns) */
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db,
                           from >= 6 ? "INSERT INTO windows (probe, kind, start_ns, end_ns, n, "
                                       "n_ok, mean, p50, p95, lost, partial, run_ns) VALUES ('api',"
                                       " 'observed', 1700000000000000000, 1700000001000000000, 3,"
                                       " 3, 0.01, 0.01, 0.02, 0, 1, 1700000000000000000)"
                                     : "INSERT INTO windows (probe, kind, start_ns, end_ns, n, "
                                       "n_ok, mean, p50, p95, lost) VALUES ('api', 'observed', "
                                       "1700000000000000000, 1700000001000000000, 3, 3, 0.01, "
                                       "0.01, 0.02, 0)",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    st = open_at(path, from);
    struct dq *q = sample_dq();
    CHECK(store_window_dq_put(st, "api", T0, T0 + SEC, q) != DQ_OK); /* no such table yet */
    store_close(st);
    st = open_at(path, 0);
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, 7);
    CHECK_INT(v, store_schema_latest());
    int n = 0;
    CHECK_INT(
        store_windows_each(st, "api", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0, count_window, &n),
        DQ_OK);
    CHECK_INT(n, 1); /* the older version's row is kept */
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *stmt = NULL;
    CHECK_INT(sqlite3_prepare_v2(db, "SELECT partial, run_ns FROM windows", -1, &stmt, NULL),
              SQLITE_OK);
    CHECK_INT(sqlite3_step(stmt), SQLITE_ROW);
    CHECK_INT(sqlite3_column_int(stmt, 0), from >= 6);
    CHECK_INT(sqlite3_column_type(stmt, 1), from >= 6 ? SQLITE_INTEGER : SQLITE_NULL);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    CHECK_INT(store_window_dq_put(st, "api", T0, T0 + SEC, q), DQ_OK);
    n = 0;
    CHECK_INT(store_window_dqs_each(st, "api", INT64_MIN, INT64_MAX, count_dq, &n), DQ_OK);
    CHECK_INT(n, 1);
    /* deleting the probe deletes its history */
    put_ex(st, T0, 0, "ok", 0.1, "ab");
    CHECK_INT(store_probe_delete(st, "api"), DQ_OK);
    n = 0;
    CHECK_INT(store_window_dqs_each(st, "api", INT64_MIN, INT64_MAX, count_dq, &n), DQ_OK);
    CHECK_INT(store_exemplars_each(st, "api", INT64_MIN, INT64_MAX, 0, 0, count_ex, &n), DQ_OK);
    CHECK_INT(n, 0);
    store_close(st);
    dq_destroy(q);
}

static void test_upgrade_from_5(void) {
    upgrade_from(5);
}

static void test_upgrade_from_6(void) {
    upgrade_from(6);
}

static void test_history_retention(void) {
    char path[512];
    tmp_path(path, sizeof path, "hret.db");
    struct store *st = open_at(path, 0);
    struct fake_clock clk = {T0 + 100 * SEC};
    store_set_clock(st, fake_now, &clk);
    struct dq *q = sample_dq();
    CHECK_INT(store_begin(st), DQ_OK);
    for (int i = 0; i < 100; i++) {
        CHECK_INT(store_window_dq_put(st, "api", T0 + i * SEC, T0 + (i + 1) * SEC, q), DQ_OK);
        put_ex(st, T0 + i * SEC, 0, "ok", 0.1, "ab");
    }
    CHECK_INT(store_commit(st), DQ_OK);
    struct store_retention def;
    store_retention_default(&def);
    CHECK_INT(def.dq_max_age_ns, 24 * 3600 * SEC);
    /* ΔQs older than 30 s, exemplars (with the windows) older than 60 s */
    struct store_retention r = {.window_max_age_ns = 60 * SEC, .dq_max_age_ns = 30 * SEC};
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    int64_t deleted = 0;
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 70 + 40);
    int n = 0;
    CHECK_INT(store_window_dqs_each(st, "api", INT64_MIN, INT64_MAX, count_dq, &n), DQ_OK);
    CHECK_INT(n, 30);
    n = 0;
    CHECK_INT(store_exemplars_each(st, "api", INT64_MIN, INT64_MAX, 0, 0, count_ex, &n), DQ_OK);
    CHECK_INT(n, 60);
    /* only a ΔQ limit: the summaries' age limit 0 keeps the exemplars */
    r = (struct store_retention){.dq_max_age_ns = 10 * SEC};
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 20);
    r.dq_max_age_ns = -1;
    CHECK_INT(store_set_retention(st, &r), DQ_EINVAL);
    store_close(st);
    dq_destroy(q);
}

/* ---- a window close at scale, with and without the history ------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * Times the daemon's per-window write for 1000 probes: the two summary rows each (as
 * before version 6), then the same plus the window's ΔQ and 5 exemplars each (what dqd
 * writes now when every probe's instances carry ids), alternating, on the same file so
 * that both see the same moments of a shared machine. Printed, not asserted: the machine
 * is shared (docs/PERFORMANCE.md, "Store").
 */
static void test_window_close_history(void) {
    char path[512];
    tmp_path(path, sizeof path, "hbatch.db");
    struct store *st = open_at(path, 0);
    enum { PROBES = 1000, ROUNDS = 11, EXEMPLARS = 5 };
    static char names[PROBES][24];
    struct dq *q = sample_dq();
    CHECK_INT(store_begin(st), DQ_OK);
    for (int i = 0; i < PROBES; i++) {
        snprintf(names[i], sizeof names[i], "probe_%d", i);
        struct store_probe sp = {.name = names[i], .dmax_ms = 100, .bins = 100, .enabled = true};
        CHECK_INT(store_probe_upsert(st, &sp), DQ_OK);
    }
    CHECK_INT(store_commit(st), DQ_OK);
    double plain[ROUNDS], full[ROUNDS];
    int failures = 0;
    for (int k = 0; k < 2 * ROUNDS; k++) {
        int with = k % 2;
        int64_t start = T0 + k * SEC;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        failures += store_begin(st) != DQ_OK;
        for (int i = 0; i < PROBES; i++) {
            struct store_window w = {.probe = names[i],
                                     .kind = STORE_OBSERVED,
                                     .start_ns = start,
                                     .end_ns = start + SEC,
                                     .n = 67,
                                     .n_ok = 60,
                                     .n_fa = 5,
                                     .n_to = 2,
                                     .mean = 0.01,
                                     .p50 = 0.003,
                                     .p95 = 0.25,
                                     .p99 = NAN,
                                     .lost = 7.0 / 67.0};
            failures += store_window_put(st, &w) != DQ_OK;
            w.kind = STORE_CALCULATED;
            failures += store_window_put(st, &w) != DQ_OK;
            if (with) {
                failures += store_window_dq_put(st, names[i], start, start + SEC, q) != DQ_OK;
                struct store_exemplar e[EXEMPLARS];
                for (int r = 0; r < EXEMPLARS; r++) {
                    e[r] = (struct store_exemplar){.status = "ok",
                                                   .duration = 0.25 - r * 0.01,
                                                   .end_ns = start + SEC / 2,
                                                   .trace_id = "5b8aa5a2d2c872e8",
                                                   .instance_id = "9f2c41aa07d3e1b0",
                                                   .node = "shop@host1",
                                                   .attrs_json = "{\"request\":\"4711\"}"};
                }
                failures += store_exemplars_put(st, names[i], start, e, EXEMPLARS) != DQ_OK;
            }
        }
        failures += store_commit(st) != DQ_OK;
        (with ? full : plain)[k / 2] = seconds_since(&t0);
    }
    CHECK_INT(failures, 0);
    int n = 0;
    CHECK_INT(store_window_dqs_each(st, "probe_999", INT64_MIN, INT64_MAX, count_dq, &n), DQ_OK);
    CHECK_INT(n, ROUNDS);
    qsort(plain, ROUNDS, sizeof plain[0], cmp_double);
    qsort(full, ROUNDS, sizeof full[0], cmp_double);
    printf("window close, %d probes, %d transactions each, alternating: summaries only median "
           "%.2f ms; with the ΔQ and %d exemplars each median %.2f ms (x%.2f)\n",
           PROBES, ROUNDS, plain[ROUNDS / 2] * 1e3, EXEMPLARS, full[ROUNDS / 2] * 1e3,
           full[ROUNDS / 2] / plain[ROUNDS / 2]);
    store_close(st);
    dq_destroy(q);
}

static int setup(void) {
    return tmp_setup("storehist");
}

static void teardown(void) {
    if (getenv("DQD_KEEP_TMP")) {
        printf("kept %s\n", tmp_dir);
    } else {
        tmp_cleanup();
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(window_dqs),           CHECK_CASE(exemplars),      CHECK_CASE(marks),
    CHECK_CASE(upgrade_from_5),       CHECK_CASE(upgrade_from_6), CHECK_CASE(history_retention),
    CHECK_CASE(window_close_history),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
