/*
 * test_busy.c: a probe's busy time per window (controller/core/core.h, struct
 * probe_window.busy): the union of its instances' intervals, whatever order they arrive
 * in. On a bare probe table, windows closed by the test, no wall clock.
 *
 * Instances out of order: one overtaken by later ones reaches back over their segments
 * (counted once); one wholly before the open segment keeps the gap between them idle.
 * Stations simulated here (one FIFO server, and a pool of two that lets requests
 * overtake), their instances delivered in end order as wrappers report them: the busy
 * time equals the exact union computed by sorting, and for one server the server's own
 * busy time. An instance reaching back past every kept segment is counted on its own.
 * Across window boundaries: an instance that began in the previous window counts from
 * where that window's busy time ended, so the windows add up to the union, never more.
 * Timed-out instances count up to their deadline.
 */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define T0 (1716300000LL * SEC) /* a window edge */
#define W0 (T0 / SEC)           /* its window (windows of 1 s) */

static void table(struct probe_table *t) {
    CHECK_INT(probes_init(t, 64, SEC, SEC, 8, 1000.0, 100, T0 + SEC), 0);
}

static struct probe *probe(struct probe_table *t, const char *name) {
    struct probe *p = NULL;
    CHECK_INT(probes_get(t, name, strlen(name), &p), 0);
    if (p) {
        p->enabled = 1;
    }
    return p;
}

/* One ok instance of name over [lo, hi] ms after T0. */
static void rec(struct probe_table *t, const char *name, double lo, double hi) {
    CHECK_INT(probes_record(t, name, strlen(name), 0, T0 + (int64_t)(lo * MS),
                            T0 + (int64_t)(hi * MS), PROBE_OK),
              0);
}

/* The busy time of window W0 of p, in ms, once closed. */
static double busy_ms(struct probe_table *t, struct probe *p) {
    CHECK_INT(probes_close_window(t, W0), 0);
    const struct probe_window *w = probes_ring_find(p, W0);
    CHECK(w != NULL);
    return w ? w->busy * 1e3 : -1.0;
}

static void test_out_of_order(void) {
    struct probe_table t;
    table(&t);
    /* a: [0, 50] overtaken by [10, 20] and [30, 40], which end first: 50 ms, not 60 */
    struct probe *a = probe(&t, "a");
    rec(&t, "a", 10, 20);
    rec(&t, "a", 30, 40);
    rec(&t, "a", 0, 50);
    /* b: [100, 110] arrives after [200, 210]: two segments, the gap stays idle */
    struct probe *b = probe(&t, "b");
    rec(&t, "b", 200, 210);
    rec(&t, "b", 100, 110);
    rec(&t, "b", 105, 205); /* and one joining them: [100, 210] */
    /* c: touching intervals merge, nested ones add nothing */
    struct probe *c = probe(&t, "c");
    rec(&t, "c", 0, 10);
    rec(&t, "c", 10, 20);
    rec(&t, "c", 12, 18);
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_NEAR(probes_ring_find(a, W0)->busy * 1e3, 50.0, 1e-6);
    CHECK_NEAR(probes_ring_find(b, W0)->busy * 1e3, 110.0, 1e-6);
    CHECK_NEAR(probes_ring_find(c, W0)->busy * 1e3, 20.0, 1e-6);
    probes_release(&t);
}

/* More disjoint segments than are kept: the oldest are let go, still counted; an instance
 * reaching back past all kept ones is counted on its own (the one overcount). */
static void test_reach_back(void) {
    struct probe_table t;
    table(&t);
    struct probe *p = probe(&t, "p");
    int n = PROBES_BUSY_SEGMENTS + 4;
    for (int i = 0; i < n; i++) {
        rec(&t, "p", 20.0 * i, 20.0 * i + 5); /* 5 ms every 20 ms */
    }
    rec(&t, "p", 2, 3); /* inside the first, long let go: counted again (1 ms) */
    double want = 5.0 * n + 1.0;
    CHECK_NEAR(busy_ms(&t, p), want, 1e-6);
    probes_release(&t);
}

/* ---- simulated stations --------------------------------------------------------------- */

struct iv {
    double lo, hi;
};

static int by_hi(const void *a, const void *b) {
    const struct iv *x = a, *y = b;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int by_lo(const void *a, const void *b) {
    const struct iv *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static double exact_union(struct iv *v, int n) {
    qsort(v, (size_t)n, sizeof *v, by_lo);
    double total = 0, lo = v[0].lo, hi = v[0].hi;
    for (int i = 1; i < n; i++) {
        if (v[i].lo > hi) {
            total += hi - lo;
            lo = v[i].lo;
            hi = v[i].hi;
        } else if (v[i].hi > hi) {
            hi = v[i].hi;
        }
    }
    return total + hi - lo;
}

static double uniform(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return ((*seed >> 8) + 0.5) / 16777216.0;
}

/*
 * A FIFO station of `servers` servers at utilisation ~rho over 900 ms (exponential
 * interarrivals and services, in whole microseconds); its instances (arrival to
 * departure) go to the table in departure order. Returns the servers' busy time.
 */
static double station(struct probe_table *t, const char *name, int servers, double rho,
                      unsigned seed, struct iv *out, int *n_out) {
    double free_at[4] = {0, 0, 0, 0}, served = 0;
    double mean_s = 4.0, gap = mean_s / (rho * servers), now = 0;
    int n = 0;
    for (;;) {
        now += -gap * log(uniform(&seed));
        now = floor(now * 1000) / 1000;
        if (now > 850) {
            break;
        }
        int k = 0;
        for (int j = 1; j < servers; j++) {
            k = free_at[j] < free_at[k] ? j : k;
        }
        double start = now > free_at[k] ? now : free_at[k];
        double s = floor(-mean_s * log(uniform(&seed)) * 1000) / 1000 + 0.001;
        free_at[k] = start + s;
        served += s;
        out[n].lo = now;
        out[n].hi = start + s;
        n++;
    }
    struct iv *sorted = malloc((size_t)n * sizeof *sorted);
    memcpy(sorted, out, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_hi);
    for (int i = 0; i < n; i++) {
        if (sorted[i].hi < 999) {
            rec(t, name, sorted[i].lo, sorted[i].hi);
        }
    }
    free(sorted);
    *n_out = n;
    return served;
}

static void test_stations(void) {
    for (unsigned seed = 1; seed <= 20; seed++) {
        struct probe_table t;
        table(&t);
        static struct iv v1[2000], v2[2000];
        int n1 = 0, n2 = 0;
        struct probe *one = probe(&t, "one"), *pool = probe(&t, "pool");
        double served = station(&t, "one", 1, 0.8, seed, v1, &n1);
        station(&t, "pool", 2, 0.8, seed * 7919u, v2, &n2);
        CHECK_INT(probes_close_window(&t, W0), 0);
        double b1 = probes_ring_find(one, W0)->busy * 1e3;
        double b2 = probes_ring_find(pool, W0)->busy * 1e3;
        CHECK(n1 > 100 && n2 > 100);
        /* microsecond grid: the core's nanoseconds round within a microsecond */
        CHECK_NEAR(b1, exact_union(v1, n1), 0.01);
        CHECK_NEAR(b1, served, 0.01); /* one FIFO server: busy exactly while one is in */
        CHECK_NEAR(b2, exact_union(v2, n2), 0.01);
        probes_release(&t);
    }
}

/* A loaded FIFO server over three windows (instances in end order): the windows' busy
 * times add up to the exact union (the waits that straddle a boundary are not counted
 * twice), and each window's stays within [0, 1 s]. */
static void test_boundaries(void) {
    for (unsigned seed = 1; seed <= 10; seed++) {
        struct probe_table t;
        CHECK_INT(probes_init(&t, 64, SEC, SEC, 8, 1000.0, 100, T0 + SEC), 0);
        struct probe *p = probe(&t, "q");
        static struct iv v[4000];
        unsigned sd = seed;
        double free_at = 0, now = 0, served = 0;
        int n = 0;
        for (;;) {
            now += -5.0 * log(uniform(&sd)); /* 200/s, service 4 ms: rho 0.8 */
            now = floor(now * 1000) / 1000;
            if (now > 2900) {
                break;
            }
            double start = now > free_at ? now : free_at;
            double sv = floor(-4.0 * log(uniform(&sd)) * 1000) / 1000 + 0.001;
            free_at = start + sv;
            if (free_at >= 2999) {
                break;
            }
            served += sv;
            v[n].lo = now;
            v[n].hi = free_at;
            n++;
        }
        struct iv *sorted = malloc((size_t)n * sizeof *sorted);
        memcpy(sorted, v, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, by_hi);
        double total = 0;
        int next = 0;
        for (int w = 0; w < 3; w++) { /* a window's instances, then it closes */
            while (next < n && sorted[next].hi < 1000.0 * (w + 1)) {
                rec(&t, "q", sorted[next].lo, sorted[next].hi);
                next++;
            }
            if (w > 0) {
                CHECK_INT(probes_close_window(&t, W0 + w - 1), 0);
                double b = probes_ring_find(p, W0 + w - 1)->busy;
                CHECK(b >= 0 && b <= 1.0);
                total += b * 1e3;
            }
        }
        CHECK_INT(probes_close_window(&t, W0 + 2), 0);
        total += probes_ring_find(p, W0 + 2)->busy * 1e3;
        free(sorted);
        CHECK_NEAR(total, exact_union(v, n), 0.05);
        CHECK_NEAR(total, served, 0.05);
        probes_release(&t);
    }
}

/* Overtaking (issue 24: concurrency from the instances): a FIFO server's instances, in any
 * arrival order, never show it; one that began before another and ended after it does. */
static void test_overtaking(void) {
    struct probe_table t;
    table(&t);
    struct probe *f = probe(&t, "fifo"), *p = probe(&t, "pool");
    rec(&t, "fifo", 0, 10);
    rec(&t, "fifo", 5, 20); /* waited, then served: later start, later end */
    rec(&t, "fifo", 30, 40);
    rec(&t, "fifo", 25, 28); /* arrived late on the wire, but began and ended earlier */
    rec(&t, "pool", 0, 50);  /* one long request … */
    rec(&t, "pool", 10, 20); /* … overtaken by two short ones on other servers */
    rec(&t, "pool", 20, 30);
    rec(&t, "pool", 5, 60); /* began before [20, 30] and ended after it: overtaken */
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_ring_find(f, W0)->overtaken, 0);
    CHECK_INT(probes_ring_find(p, W0)->overtaken, 1);
    probes_release(&t);
}

/* A saturated station: its instances time out (END = START + dMax, or 0 from an old
 * wrapper: dMax after START). They were in the station until then at least, and count in
 * its busy time: the union of [0, 100], [50, 150] (timed out, dMax 100 ms) and [400, 500]
 * (timed out, END 0) is 250 ms. Without them only the ok [0, 100] would count. */
static void test_timed_out(void) {
    struct probe_table t;
    table(&t);
    struct probe *p = probe(&t, "sat");
    p->dmax_ms = 100.0;
    rec(&t, "sat", 0, 100);
    CHECK_INT(probes_record(&t, "sat", 3, 0, T0 + 50 * MS, T0 + 150 * MS, PROBE_TO), 0);
    CHECK_INT(probes_record(&t, "sat", 3, 0, T0 + 400 * MS, 0, PROBE_TO), 0);
    CHECK_NEAR(busy_ms(&t, p), 250.0, 1e-6);
    probes_release(&t);
}

static const struct check_case cases[] = {
    CHECK_CASE(out_of_order), CHECK_CASE(overtaking), CHECK_CASE(reach_back),
    CHECK_CASE(stations),     CHECK_CASE(boundaries), CHECK_CASE(timed_out),
};

CHECK_MAIN(cases)
