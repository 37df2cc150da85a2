/*
 * clock.h: the time every part of dqd reads, injected instead of read from the system.
 *
 * dqd's windows, stamps and budgets follow one clock. By default it is the wall clock
 * (CLOCK_REALTIME, ns since the epoch, as the wrappers stamp instances). A simulator or a
 * replay test drives dqd faster than real time by giving it a manual clock instead: its
 * owner sets the time, and nothing in dqd reads the system clock behind its back. Timers
 * that only guard connections (a hello wait, a reconnect backoff, HTTP idle timeouts) stay
 * on libuv's own monotonic clock: they are about sockets, not about windows.
 *
 * A struct clock is a value (a function and its context), copied freely; it must not
 * outlive its context. Reading it is cheap (the wall clock is one vDSO call).
 */
#ifndef DQ_CLOCK_H
#define DQ_CLOCK_H

#include <stdint.h>

struct clock {
    int64_t (*now_ns)(void *ctx); /* ns since the epoch */
    void *ctx;                    /* passed to now_ns */
};

/* A clock whose time its owner sets (clock_manual_set); for simulation and tests. */
struct clock_manual {
    int64_t now_ns; /* the time it shows */
};

/* The time c shows now. */
int64_t clock_now(const struct clock *c);

/* Makes c the wall clock (CLOCK_REALTIME). */
void clock_init_wall(struct clock *c);

/* Makes c show m's time, starting at start_ns; m must outlive c. */
void clock_init_manual(struct clock *c, struct clock_manual *m, int64_t start_ns);

/*
 * Moves a manual clock to ns. A clock never goes back: an earlier ns leaves it where it is.
 * Returns 1 when the time moved forward, 0 otherwise.
 */
int clock_manual_set(struct clock_manual *m, int64_t ns);

/* CLOCK_REALTIME in ns since the epoch, for code that needs the real time (log stamps). */
int64_t clock_wall_ns(void);

#endif /* DQ_CLOCK_H */
