/*
 * fuzz_store.c: libFuzzer target that hands the store arbitrary database files.
 *
 * The input is the whole file. The seed (tests/corpus/store/) is a small dqd database
 * with a row in every table, so mutations land in record contents (names, JSON, the
 * snapshot masses the store parses itself) as well as in SQLite's own structures. For
 * each input the target opens the file and, when the store accepts it, reads every table
 * back through the API and prunes: whatever the bytes, the store must answer with an
 * error code, never crash, leak or trip a sanitizer.
 *
 * Seeds: empty.sqlite3 (a new file: the store creates the schema) and
 * dqd_v2_small_pages.sqlite3, the database test_store_log builds (DQD_KEEP_TMP=1 keeps it),
 * rewritten with `sqlite3 F 'PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM'`
 * so that it is 30 KB instead of 110 KB; dqd_v7_history_small_pages.sqlite3, the store of
 * test_history (two runs of dqd with dqsim --trace-ids, a search and its verdict) cut to
 * two windows, one of them a run's partial first window, and one snapshot ΔQ (rows in
 * window_dqs and exemplars, events for the marks: the JSON counts and exemplars the store
 * parses), rewritten the same way.
 */
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char db_path[256];

/* Touches every string so that a bad pointer shows up under ASan. */
static size_t touch(const char *s) {
    return s ? strlen(s) : 0;
}

static int on_window(void *ctx, const struct store_window *w) {
    *(size_t *)ctx += touch(w->probe) + (size_t)(w->n & 1);
    return 0;
}

static int on_window_bin(void *ctx, const struct store_window *w, int windows) {
    *(size_t *)ctx += touch(w->probe) + (size_t)(windows & 1);
    return 0;
}

static int on_window_dq(void *ctx, const struct store_window_dq *d) {
    size_t s = 0;
    for (int i = 0; i < d->bins; i++) { /* every count the store parsed */
        s += (size_t)(d->counts[i] & 1);
    }
    *(size_t *)ctx += touch(d->probe) + s;
    return 0;
}

static int on_exemplar(void *ctx, const struct store_exemplar *e) {
    *(size_t *)ctx += touch(e->status) + touch(e->trace_id) + touch(e->instance_id) +
                      touch(e->node) + touch(e->attrs_json);
    return 0;
}

static int on_mark(void *ctx, const struct store_mark *m) {
    *(size_t *)ctx += touch(m->kind) + touch(m->probe) + touch(m->detail_json);
    return 0;
}

static int on_probe(void *ctx, const struct store_probe *p) {
    struct store *st = ctx;
    size_t sink = touch(p->name) + touch(p->qta_json);
    store_windows_each(st, p->name, STORE_OBSERVED, INT64_MIN, INT64_MAX, 50, on_window, &sink);
    /* the history (version 6): bins, window ΔQs, exemplars (slowest and failed) */
    store_windows_binned(st, p->name, STORE_OBSERVED, 0, INT64_MAX, INT64_C(3600000000000),
                         on_window_bin, &sink);
    store_window_dqs_each(st, p->name, INT64_MIN, INT64_MAX, on_window_dq, &sink);
    store_exemplars_each(st, p->name, INT64_MIN, INT64_MAX, 0, 20, on_exemplar, &sink);
    store_exemplars_each(st, p->name, INT64_MIN, INT64_MAX, 1, 20, on_exemplar, &sink);
    struct store_window w;
    store_window_latest(st, p->name, STORE_CALCULATED, &w);
    return 0;
}

static int on_event(void *ctx, const struct store_event *e) {
    *(size_t *)ctx += touch(e->kind) + touch(e->probe) + touch(e->detail_json);
    return 0;
}

static int on_trigger(void *ctx, const struct store_trigger *t) {
    *(size_t *)ctx += touch(t->probe) + touch(t->kind) + touch(t->params_json);
    return 0;
}

static int on_hypothesis(void *ctx, const struct store_hypothesis *h) {
    *(size_t *)ctx += touch(h->node) + touch(h->kind) + touch(h->action) + touch(h->probes_json) +
                      touch(h->stats_json) + touch(h->verdict);
    return 0;
}

struct inv_ctx {
    struct store *st;
    size_t sink;
};

static int on_hyp_chain(void *ctx, const struct store_hypothesis *h) {
    struct inv_ctx *c = ctx;
    on_hypothesis(&c->sink, h);
    /* The chain walks parent links, which a damaged file may turn into a cycle. */
    store_hypothesis_chain(c->st, h->id, on_hypothesis, &c->sink);
    return 0;
}

static int on_investigation(void *ctx, const struct store_investigation *inv) {
    struct inv_ctx *c = ctx;
    c->sink += touch(inv->node) + touch(inv->problem) + touch(inv->strategy) + touch(inv->origin) +
               touch(inv->requested_by) + touch(inv->verdict) + touch(inv->verdict_node) +
               touch(inv->summary_json);
    store_hypotheses_of_investigation(c->st, inv->id, on_hyp_chain, c);
    return 0;
}

static int on_command(void *ctx, const struct store_command *cmd) {
    *(size_t *)ctx += touch(cmd->wrapper) + touch(cmd->command) + touch(cmd->probe) +
                      touch(cmd->args_json) + touch(cmd->status) + touch(cmd->detail);
    return 0;
}

static int on_snapshot_dq(void *ctx, const struct store_snapshot_dq *d) {
    double sum = 0;
    for (int i = 0; i < d->dq->n; i++) {
        sum += d->dq->pdf[i];
    }
    *(size_t *)ctx += touch(d->probe) + (sum > 0.5);
    return 0;
}

static int on_snapshot(void *ctx, const struct store_snapshot *s) {
    struct inv_ctx *c = ctx;
    c->sink += touch(s->probe) + touch(s->reason);
    store_snapshot_get(c->st, s->id, NULL, on_snapshot_dq, &c->sink);
    return 0;
}

static int on_diagram(void *ctx, const struct store_diagram *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->len; i++) {
        n += d->text[i] == ';'; /* reads every byte the store says the text has */
    }
    *(size_t *)ctx += n + touch(d->path);
    return 0;
}

static void remove_files(void) {
    char side[300];
    unlink(db_path);
    snprintf(side, sizeof side, "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db_path);
    unlink(side);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!db_path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(db_path, sizeof db_path, "%s/dqd-fuzz-store-%ld.db", dir, (long)getpid());
    }
    remove_files();
    FILE *f = fopen(db_path, "wb");
    if (!f) {
        return 0;
    }
    size_t written = fwrite(data, 1, size, f);
    fclose(f);
    if (written != size) {
        return 0;
    }
    struct store *st = NULL;
    /* A small work limit: a damaged b-tree that loops must end within the fuzzer's timeout. */
    struct store_options opts = {.busy_timeout_ms = 10, .max_steps = 1000000};
    if (store_open_ex(db_path, &opts, &st) == DQ_OK) {
        struct inv_ctx c = {.st = st};
        store_probes_each(st, on_probe, st);
        store_events_each(st, NULL, NULL, 0, 100, on_event, &c.sink);
        store_triggers_each(st, NULL, on_trigger, &c.sink);
        store_investigations_each(st, false, 20, on_investigation, &c);
        store_hypotheses_of_probe(st, "worker_2", on_hypothesis, &c.sink);
        store_commands_each(st, NULL, on_command, &c.sink);
        store_snapshots_each(st, 20, on_snapshot, &c);
        store_diagram_latest(st, on_diagram, &c.sink);
        store_marks_each(st, INT64_MIN, INT64_MAX, 100, on_mark, &c.sink);
        struct store_retention r = {
            .window_max_rows = 1, .event_max_age_ns = 1, .dq_max_age_ns = 1};
        store_set_retention(st, &r);
        int64_t deleted = 0;
        store_prune(st, &deleted);
        store_close(st);
    }
    remove_files();
    return 0;
}
