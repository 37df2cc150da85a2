/*
 * core_stall.c: when dqd's loop did not run (stopped, its machine stalled, a long write).
 * What the sources sent meanwhile waits in the sockets; the windows due close after it is
 * read, not before (which would refuse it all as late), and a wrapper's lines under
 * --otlp are judged late from when dqd last waited, not from when it read them. A stall
 * shows as a timer, a read or a wait later than the loop expected: its window timer wakes
 * it at every window edge at least (core_next_wake).
 * Contracts in core.h (core_loop_waits, core_timer_fired).
 */
#include "core_internal.h"

#include "log.h"

#define MS_NS INT64_C(1000000)
#define STALL_MAX_NS (200 * MS_NS) /* a lateness that is a stall, at most */
#define STALL_MIN_NS (10 * MS_NS)  /* and at least */
/* reading first lasts at most this long (and half a window), and ends once no instance was
 * parsed for STALL_QUIET_NS (the next segment of a backlog larger than the socket's buffer
 * comes a round trip later) */
#define STALL_WAIT_NS (250 * MS_NS)
#define STALL_QUIET_NS (20 * MS_NS)
#define STALL_SAY_NS (500 * MS_NS) /* a stall the log mentions, at least */
#define STALL_AGAIN 3              /* new stalls while reading first that start it over */

int64_t core_stall_ns(const struct core *c) {
    const struct probe_table *t = &c->probes;
    int64_t lag = t->line_lag_on ? t->line_lag_ns : t->lag_ns; /* on: shorter than lag_ns */
    int64_t ns = lag / 2 < STALL_MAX_NS ? lag / 2 : STALL_MAX_NS;
    return ns > STALL_MIN_NS ? ns : STALL_MIN_NS;
}

int64_t core_next_wake(const struct core *c, int64_t now) {
    int64_t edge = (probes_window_of(&c->probes, now) + 1) * c->probes.window_ns;
    int64_t due = core_next_deadline(c);
    return edge < due ? edge : due;
}

void core_loop_waits(struct core *c, int64_t now, int64_t timer_due) {
    struct probe_table *t = &c->probes;
    if (c->stall.from) {
        return; /* a stall being read: the floor holds where the loop last waited */
    }
    if (now > t->wake_by_ns && !c->stall.held) {
        /* the loop did not run as it expected since it last waited (stopped in its wait or
         * in a callback since): the next wait reads what waited, with the floor held */
        c->stall.held = 1;
        return;
    }
    c->stall.held = 0;
    probes_loop_waits(t, now, timer_due + core_stall_ns(c));
}

int core_timer_fired(struct core *c, int64_t now, int64_t timer_due) {
    const struct probe_table *t = &c->probes;
    int more;
    if (!c->stall.from) {
        c->stall.late = now - timer_due;
        c->stall.again = 0;
        more = c->stall.late > core_stall_ns(c);
        c->stall.from = more ? now : 0;
        c->stall.heard = now;
    } else if (now - c->stall.prev > core_stall_ns(c) && c->stall.again < STALL_AGAIN) {
        /* dqd did not run again while it read first: a new stall, a new backlog (a few
         * times: a loop this starved must still close its windows) */
        c->stall.again++;
        c->stall.late = c->stall.late > now - c->stall.prev ? c->stall.late : now - c->stall.prev;
        c->stall.from = c->stall.heard = now;
        more = 1;
    } else {
        c->stall.heard = c->instances_total != c->stall.seen ? now : c->stall.heard;
        int64_t wait = t->window_ns / 2 < STALL_WAIT_NS ? t->window_ns / 2 : STALL_WAIT_NS;
        more = t->future == c->stall.future && now - c->stall.heard < STALL_QUIET_NS &&
               now - c->stall.from < wait;
        if (!more && c->stall.late >= STALL_SAY_NS) {
            char late[DQ_DURATION_TEXT];
            dq_format_duration((double)c->stall.late * 1e-9, late, sizeof late);
            LOG(LOG_WARN,
                "dqd did not run for at least %s (its window timer came that late, or the clock "
                "stepped): what its sources sent meanwhile was read before the windows due "
                "closed",
                late);
        }
        c->stall.from = more ? c->stall.from : 0;
    }
    c->stall.seen = c->instances_total;
    c->stall.future = t->future;
    c->stall.prev = now;
    return more;
}
