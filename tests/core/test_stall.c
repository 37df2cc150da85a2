/*
 * test_stall.c: when dqd's loop did not run (controller/core/core_stall.c), on a core
 * with a simulated clock: the times are constants the test gives, as dqd's loop would.
 *
 * core_timer_fired: a window timer on time closes the windows due; one later than
 * core_stall_ns makes the loop read first while instances keep coming, and not beyond
 * 20 ms without one, half a window or 250 ms, or an instance refused as future; the log
 * says dqd did not run when the timer was 0.5 s late or more, and not for a shorter
 * stall. core_loop_waits: the line floor's hold is set before each wait and left alone
 * while a stall is read. core_stall_ns from the lags.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dq_error.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define T0 (1716300000LL * SEC)

struct env {
    char dir[64], db[128], log[128];
    struct clock_manual manual;
    struct clock clock;
    struct store *store;
    struct core *core;
    int saved_stderr;
};

static void die(const char *what) {
    fprintf(stderr, "test_stall: %s: %s\n", what, dq_last_error());
    exit(2);
}

/* A core with windows of 1 s, lag `lag_ms`, a line lag when line_lag_ms > 0; its log
 * (stderr) goes to a file that said() reads. */
static void env_open(struct env *e, int64_t lag_ms, int64_t line_lag_ms) {
    snprintf(e->dir, sizeof e->dir, "/tmp/dqd-core-stall-XXXXXX");
    if (!mkdtemp(e->dir)) {
        die("mkdtemp");
    }
    snprintf(e->db, sizeof e->db, "%s/dqd.db", e->dir);
    snprintf(e->log, sizeof e->log, "%s/log", e->dir);
    clock_init_manual(&e->clock, &e->manual, T0);
    if (store_open(e->db, &e->store) != DQ_OK) {
        die("store");
    }
    struct core_options co = {.max_probes = 100,
                              .window_ns = SEC,
                              .lag_ns = lag_ms * MS,
                              .line_lag_ns = line_lag_ms * MS,
                              .ring = 8,
                              .default_dmax_ms = 1024,
                              .default_bins = 1024};
    if (core_create(&co, e->store, &e->clock, &e->core) != DQ_OK) {
        die("core");
    }
    fflush(stderr);
    e->saved_stderr = dup(2);
    if (e->saved_stderr < 0 || !freopen(e->log, "w", stderr)) {
        die("log file");
    }
}

/* Restores stderr and copies to it what went to the log file (failed checks too). */
static void env_close(struct env *e) {
    fflush(stderr);
    dup2(e->saved_stderr, 2);
    close(e->saved_stderr);
    FILE *f = fopen(e->log, "r");
    char buf[4096];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        fwrite(buf, 1, n, stderr);
    }
    if (f) {
        fclose(f);
    }
    core_destroy(e->core);
    store_close(e->store);
    unlink(e->db);
    unlink(e->log);
    char path[160];
    snprintf(path, sizeof path, "%s/dqd.db-wal", e->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/dqd.db-shm", e->dir);
    unlink(path);
    rmdir(e->dir);
}

/* How many times the log so far has `text`. */
static int said(struct env *e, const char *text) {
    fflush(stderr);
    char buf[8192] = {0};
    FILE *f = fopen(e->log, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    buf[n] = 0;
    int k = 0;
    for (const char *at = strstr(buf, text); at; at = strstr(at + 1, text)) {
        k++;
    }
    return k;
}

#define DUE (T0 + 3 * SEC) /* the window timer's due time in every case */
#define STALL_LINE "dqd did not run for at least "

/* Turns of reading first every `step` after `now`, 10 more instances parsed before each,
 * until core_timer_fired says close (at most 1000): how many turns that took. */
static int turns_to_close(struct env *e, int64_t now, int64_t step, int64_t due) {
    int turns = 0;
    while (turns < 1000) {
        now += step;
        core_add_instances(e->core, 10);
        turns++;
        if (!core_timer_fired(e->core, now, due)) {
            break;
        }
    }
    return turns;
}

/* A timer on time, or late by less than a stall: the windows due close at once. */
static void test_on_time(void) {
    struct env e;
    env_open(&e, 1000, 0);
    CHECK_INT(core_stall_ns(e.core), 200 * MS);
    CHECK_INT(core_timer_fired(e.core, DUE + 1 * MS, DUE), 0);
    CHECK_INT(core_timer_fired(e.core, DUE + 200 * MS, DUE), 0);
    CHECK(!said(&e, STALL_LINE));
    env_close(&e);
}

/*
 * A timer 2 s late: the loop reads first while instances come (each turn finds some), then
 * 20 ms with none ends it, and the log says dqd did not run for at least 2 s. A second
 * stall in the same run, of 300 ms, reads first too but is not said.
 */
static void test_reads_backlog(void) {
    struct env e;
    env_open(&e, 1000, 0);
    int64_t now = DUE + 2 * SEC;
    CHECK_INT(core_timer_fired(e.core, now, DUE), 1);
    for (int i = 1; i <= 5; i++) {
        core_add_instances(e.core, 1000); /* the backlog, read in this turn */
        CHECK_INT(core_timer_fired(e.core, now + i * MS, DUE), 1);
    }
    CHECK_INT(core_timer_fired(e.core, now + 20 * MS, DUE), 1); /* 15 ms quiet */
    CHECK(!said(&e, STALL_LINE));
    CHECK_INT(core_timer_fired(e.core, now + 26 * MS, DUE), 0); /* 21 ms quiet */
    CHECK(said(&e, STALL_LINE "2 s (its window timer came that late"));

    int64_t due2 = DUE + 5 * SEC;
    CHECK_INT(core_timer_fired(e.core, due2 + 300 * MS, due2), 1);
    CHECK_INT(core_timer_fired(e.core, due2 + 330 * MS, due2), 0);
    CHECK_INT(said(&e, STALL_LINE), 1); /* the first stall's line only */
    env_close(&e);
}

/* dqd stopped again while it read first (3 s): the reading starts over, it does not end as
 * quiet or past 250 ms; the log says the longer stall, once. */
static void test_stall_in_stall(void) {
    struct env e;
    env_open(&e, 1000, 0);
    int64_t now = DUE + 2 * SEC;
    CHECK_INT(core_timer_fired(e.core, now, DUE), 1);
    core_add_instances(e.core, 100);
    CHECK_INT(core_timer_fired(e.core, now + 5 * MS, DUE), 1);
    now += 3 * SEC + 5 * MS; /* the next turn, 1 ms on, after a stop of 3 s */
    CHECK_INT(core_timer_fired(e.core, now, DUE), 1);
    core_add_instances(e.core, 100);
    CHECK_INT(core_timer_fired(e.core, now + 5 * MS, DUE), 1);
    CHECK_INT(core_timer_fired(e.core, now + 15 * MS, DUE), 1);
    CHECK_INT(said(&e, STALL_LINE), 0);
    CHECK_INT(core_timer_fired(e.core, now + 26 * MS, DUE), 0); /* 21 ms quiet */
    CHECK_INT(said(&e, STALL_LINE "3 s (its window timer"), 1);

    /* a loop so starved that every turn comes 300 ms late: three new starts, then the
     * windows due close */
    int64_t due2 = DUE + 10 * SEC;
    CHECK_INT(core_timer_fired(e.core, due2 + SEC, due2), 1);
    CHECK_INT(turns_to_close(&e, due2 + SEC, 300 * MS, due2), 4); /* 5 turns in all */
    env_close(&e);
}

/* Instances that never stop: reading first ends after 250 ms (half a window is 500). An
 * instance refused as future ends it at once: the open windows are full. */
static void test_bounded(void) {
    struct env e;
    env_open(&e, 1000, 0);
    int64_t now = DUE + 3 * SEC;
    CHECK_INT(core_timer_fired(e.core, now, DUE), 1);
    CHECK_INT(turns_to_close(&e, now, 5 * MS, DUE) * 5 * MS, 250 * MS);

    int64_t due2 = DUE + 7 * SEC;
    CHECK_INT(core_timer_fired(e.core, due2 + SEC, due2), 1);
    core_add_instances(e.core, 10);
    CHECK_INT(core_timer_fired(e.core, due2 + SEC + 5 * MS, due2), 1);
    core_add_instances(e.core, 10);
    core_probes(e.core)->future++; /* what the source's record refused */
    CHECK_INT(core_timer_fired(e.core, due2 + SEC + 10 * MS, due2), 0);
    env_close(&e);
}

/*
 * The loop's expectations. core_next_wake: the next window deadline or the next window
 * edge, whichever is sooner. core_loop_waits sets the probe table's hold before each wait
 * (the timer's due time plus core_stall_ns); a wait that begins after the last one's
 * expected end (dqd stopped in its wait or in a callback) keeps the hold for that wait,
 * once; while a stall is read (core_timer_fired returned 1) the hold stays too.
 */
static void test_loop_waits(void) {
    struct env e;
    env_open(&e, 10500, 1000); /* windows close 10.5 s after their end: mid-window */
    struct probe_table *t = core_probes(e.core);
    CHECK_INT(core_stall_ns(e.core), 200 * MS); /* half the line lag, at most 200 ms */
    CHECK_INT(core_next_deadline(e.core), T0 + 500 * MS);
    CHECK_INT(core_next_wake(e.core, T0 - 800 * MS), T0);            /* the edge first */
    CHECK_INT(core_next_wake(e.core, T0 + 100 * MS), T0 + 500 * MS); /* the deadline */

    core_loop_waits(e.core, DUE - 500 * MS, DUE);
    CHECK_INT(t->awake_ns, DUE - 500 * MS);
    CHECK_INT(t->wake_by_ns, DUE + 200 * MS);
    /* dqd stopped in that wait; the timer, re-armed, is due at DUE + 4 s */
    core_loop_waits(e.core, DUE + 3 * SEC, DUE + 4 * SEC);
    CHECK_INT(t->awake_ns, DUE - 500 * MS); /* held for the wait that reads the backlog */
    CHECK_INT(t->wake_by_ns, DUE + 200 * MS);
    core_loop_waits(e.core, DUE + 3 * SEC + 5 * MS, DUE + 4 * SEC);
    CHECK_INT(t->awake_ns, DUE + 3 * SEC + 5 * MS); /* once */
    CHECK_INT(t->wake_by_ns, DUE + 4 * SEC + 200 * MS);

    /* a late timer: reading first holds it until the windows due close */
    int64_t now = DUE + 6 * SEC;
    CHECK_INT(core_timer_fired(e.core, now, DUE + 4 * SEC), 1);
    core_add_instances(e.core, 100);
    core_loop_waits(e.core, now + MS, DUE + 4 * SEC);
    CHECK_INT(t->awake_ns, DUE + 3 * SEC + 5 * MS);
    CHECK_INT(core_timer_fired(e.core, now + 10 * MS, DUE + 4 * SEC), 1);
    CHECK_INT(core_timer_fired(e.core, now + 31 * MS, DUE + 4 * SEC), 0); /* 21 ms quiet */
    core_loop_waits(e.core, now + 32 * MS, DUE + 7 * SEC); /* closed, re-armed: once more */
    CHECK_INT(t->awake_ns, DUE + 3 * SEC + 5 * MS);
    core_loop_waits(e.core, now + 40 * MS, DUE + 7 * SEC);
    CHECK_INT(t->awake_ns, now + 40 * MS);
    CHECK_INT(t->wake_by_ns, DUE + 7 * SEC + 200 * MS);
    env_close(&e);
}

/* The lateness that is a stall: half the shorter lag, within [10 ms, 200 ms]. */
static void test_stall_ns(void) {
    struct env e;
    env_open(&e, 100, 0);
    CHECK_INT(core_stall_ns(e.core), 50 * MS);
    env_close(&e);
    env_open(&e, 10000, 100);
    CHECK_INT(core_stall_ns(e.core), 50 * MS); /* the line lag is the shorter */
    env_close(&e);
    env_open(&e, 10, 0);
    CHECK_INT(core_stall_ns(e.core), 10 * MS);
    env_close(&e);
}

static const struct check_case cases[] = {
    CHECK_CASE(on_time), CHECK_CASE(reads_backlog), CHECK_CASE(stall_in_stall),
    CHECK_CASE(bounded), CHECK_CASE(loop_waits),    CHECK_CASE(stall_ns),
};

CHECK_MAIN(cases)
