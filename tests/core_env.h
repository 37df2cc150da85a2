/*
 * core_env.h: a real core over a real SQLite store (a file in /tmp) with a manual clock and
 * a libuv loop, for the C tests of the modules built on the core (tests/otlp/test_otlp.c,
 * tests/ingest/test_sources.c): 1 s windows, a 10 s lag, 60 windows kept, 100 probes
 * (dMax 100 ms over 100 bins by default).
 *
 * Header-only with static functions: the checks count in the test that includes it.
 */
#ifndef DQ_TESTS_CORE_ENV_H
#define DQ_TESTS_CORE_ENV_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "check.h"
#include "core.h"

struct core_env {
    char db[64];
    struct store *store;
    struct clock clock;
    struct clock_manual manual;
    struct core *core;
    uv_loop_t loop;
};

static int64_t core_env_clock(void *ctx) {
    return clock_now(ctx);
}

/* Opens /tmp/NAME_PID.db afresh, the clock at now_ns, the core and the loop. */
static void core_env_open(struct core_env *e, const char *name, int64_t now_ns) {
    memset(e, 0, sizeof *e);
    snprintf(e->db, sizeof e->db, "/tmp/%s_%d.db", name, (int)getpid());
    store_remove_files(e->db);
    CHECK_INT(store_open(e->db, &e->store), DQ_OK);
    clock_init_manual(&e->clock, &e->manual, now_ns);
    store_set_clock(e->store, core_env_clock, &e->clock);
    struct core_options co = {.max_probes = 100,
                              .window_ns = 1000000000LL,
                              .lag_ns = 10 * 1000000000LL,
                              .ring = 60,
                              .default_dmax_ms = 100,
                              .default_bins = 100};
    CHECK_INT(core_create(&co, e->store, &e->clock, &e->core), DQ_OK);
    uv_loop_init(&e->loop);
}

/* Runs the loop until every handle has closed, then closes it, the core and the store, and
 * removes the database. */
static void core_env_close(struct core_env *e) {
    uv_run(&e->loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&e->loop), 0);
    core_destroy(e->core);
    store_close(e->store);
    store_remove_files(e->db);
}

#endif /* DQ_TESTS_CORE_ENV_H */
