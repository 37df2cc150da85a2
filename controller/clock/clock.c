/*
 * clock.c: the wall clock and a manual clock behind one struct (see clock.h).
 */
#include "clock.h"

#include <stddef.h>
#include <time.h>

int64_t clock_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_now(void *ctx) {
    (void)ctx;
    return clock_wall_ns();
}

static int64_t manual_now(void *ctx) {
    return ((const struct clock_manual *)ctx)->now_ns;
}

int64_t clock_now(const struct clock *c) {
    return c->now_ns(c->ctx);
}

void clock_init_wall(struct clock *c) {
    c->now_ns = wall_now;
    c->ctx = NULL;
}

void clock_init_manual(struct clock *c, struct clock_manual *m, int64_t start_ns) {
    m->now_ns = start_ns;
    c->now_ns = manual_now;
    c->ctx = m;
}

int clock_manual_set(struct clock_manual *m, int64_t ns) {
    if (ns <= m->now_ns) {
        return 0;
    }
    m->now_ns = ns;
    return 1;
}
