/*
 * test_range.c: auto-ranging in the probe table (controller/core/core.h, "auto-ranging"),
 * without the daemon: the decision from a window (wider when the tail nears dMax or
 * times out, finer when the mass sits far inside, never past the range or below a QTA
 * point, not on few instances), the grid change taking effect at a window boundary (a
 * window opened before it keeps its instances' bins and is re-expressed when it closes),
 * and the ring re-expressed on the new grid with its masses kept.
 */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"

#define MS 1000000LL
#define SEC 1000000000LL
#define T0 (1716300000LL * SEC)

/* A table with 1 s windows, no lag, one probe "p" on 1024 bins of 1 ms (dMax 1024 ms),
 * auto-ranging between 1 ms and 60 s. */
static struct probe *table(struct probe_table *t) {
    CHECK_INT(probes_init(t, 16, SEC, 0, 8, 1024.0, 1024, T0), DQ_OK);
    CHECK_INT(probes_set_auto_range(t, 1, 1.0, 60000.0), DQ_OK);
    struct probe *p = NULL;
    CHECK_INT(probes_get(t, "p", 1, &p), DQ_OK);
    if (p) {
        CHECK_INT(p->auto_range, 1);
        CHECK_INT(p->k, 0);
        CHECK_INT(p->n, 1024);
        p->enabled = 1;
    }
    return p;
}

/* Window w of probe p: `count` ok instances with durations lo … hi ms spread evenly
 * (the (i + ½)/count quantiles), and `to` timeouts. Closes it; returns its ring entry. */
static struct probe_window *window(struct probe_table *t, struct probe *p, int64_t w, int count,
                                   double lo, double hi, int to) {
    int64_t end = T0 + w * SEC + SEC / 2;
    for (int i = 0; i < count; i++) {
        double d = lo + (hi - lo) * (i + 0.5) / count;
        CHECK_INT(probes_record(t, "p", 1, 0, end - (int64_t)(d * MS), end, PROBE_OK), DQ_OK);
    }
    for (int i = 0; i < to; i++) {
        CHECK_INT(probes_record(t, "p", 1, 0, end - 2 * SEC, end, PROBE_TO), DQ_OK);
    }
    int64_t wid = probes_window_of(t, end);
    CHECK_INT(probes_close_window(t, wid), DQ_OK);
    return probes_ring_find(p, wid);
}

static void test_decide(void) {
    struct probe_table t;
    struct probe *p = table(&t);
    if (!p) {
        probes_release(&t);
        return;
    }
    struct probes_range r;
    /* 8-10 ms in a 1024 ms horizon: finer, but only from the second window in a row */
    struct probe_window *w = window(&t, p, 0, 100, 8, 10, 0);
    probes_range_decide(p, w, &r);
    CHECK_INT(r.wants_finer, 1);
    CHECK_INT(r.k, 0);
    CHECK_INT(r.reason, PROBES_RANGE_KEEP);
    CHECK_INT((int)r.timed, 100);
    CHECK_NEAR(r.slowest_ms, 9.99, 1e-6);
    p->range_shrink = 1;
    probes_range_decide(p, w, &r);
    /* the finest dMax keeping 9.99 ms within 3/4 of it: 16 ms, bins of 2^-6 ms */
    CHECK_INT(r.k, -6);
    CHECK_NEAR(r.dmax_ms, 16.0, 1e-12);
    CHECK_INT(r.reason, PROBES_RANGE_TAIL_FAR);
    CHECK_INT(p->k, 0); /* pure: the probe is not changed */
    /* a QTA point at 50 ms: the grid stays able to see it */
    p->has_qta = 1;
    p->qta = (struct dq_qta){.n = 1, .t = {0.050}, .p = {0.9}, .max_lost = 0.1};
    probes_range_decide(p, w, &r);
    CHECK_NEAR(r.dmax_ms, 64.0, 1e-12);
    p->has_qta = 0;
    /* and the range's floor */
    p->range_min_ms = 100.0;
    probes_range_decide(p, w, &r);
    CHECK_NEAR(r.dmax_ms, 128.0, 1e-12);
    p->range_min_ms = 1.0;
    p->range_shrink = 0;

    /* on the 16 ms grid, 40-60 ms: all time out (as a wrapper reports them): two steps */
    CHECK_INT(probes_set_range(&t, p, -6), DQ_OK);
    CHECK_NEAR(p->dmax_ms, 16.0, 1e-12);
    w = window(&t, p, 1, 0, 0, 0, 100);
    probes_range_decide(p, w, &r);
    CHECK_NEAR(r.tail, 1.0, 1e-12);
    CHECK_INT(r.k, -4);
    CHECK_INT(r.reason, PROBES_RANGE_TAIL_NEAR_DMAX);
    CHECK_INT(r.wants_finer, 0);
    /* a tail just past 7/8 of dMax (14 ms of 16): 3 of 100 there, one step */
    w = window(&t, p, 2, 97, 1, 13, 0);
    CHECK(w != NULL);
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + 3 * SEC - 15 * MS, T0 + 3 * SEC, PROBE_OK), DQ_OK);
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + 3 * SEC - 15 * MS, T0 + 3 * SEC, PROBE_OK), DQ_OK);
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + 3 * SEC - 15 * MS, T0 + 3 * SEC, PROBE_OK), DQ_OK);
    w = window(&t, p, 3, 97, 1, 13, 0);
    probes_range_decide(p, w, &r);
    CHECK_NEAR(r.tail, 3.0 / 100.0, 1e-9);
    CHECK_INT(r.k, -5);
    /* 1 % is not enough: keep */
    w = window(&t, p, 4, 100, 1, 13, 0);
    probes_range_decide(p, w, &r);
    CHECK_INT(r.k, -6);
    CHECK_INT(r.reason, PROBES_RANGE_KEEP);
    /* at the top of the range: no wider */
    p->range_max_ms = 16.0;
    w = window(&t, p, 5, 0, 0, 0, 100);
    probes_range_decide(p, w, &r);
    CHECK_INT(r.k, -6);
    CHECK_STR(r.capped ? r.capped : "", "max");
    p->range_max_ms = 60000.0;
    /* too few instances: nothing is decided */
    w = window(&t, p, 6, 5, 1, 2, 10);
    probes_range_decide(p, w, &r);
    CHECK_INT(r.k, -6);
    CHECK_INT(r.wants_finer, 0);
    probes_release(&t);
}

/* A grid change takes effect at a window boundary: the open window keeps its bins. */
static void test_boundary(void) {
    struct probe_table t;
    struct probe *p = table(&t);
    if (!p) {
        probes_release(&t);
        return;
    }
    /* window 0 opens on 1 ms bins: 100 instances at 3.5 ms (bin 3) */
    int64_t end0 = T0 + SEC / 2;
    for (int i = 0; i < 100; i++) {
        CHECK_INT(probes_record(&t, "p", 1, 0, end0 - 3500000, end0, PROBE_OK), DQ_OK);
    }
    /* the grid becomes 2 ms bins (dMax 2048 ms) while window 0 is still open */
    CHECK_INT(probes_set_range(&t, p, 1), DQ_OK);
    CHECK_NEAR(p->dmax_ms, 2048.0, 1e-12);
    /* more of window 0 still goes into its 1 ms bins; window 1 opens on 2 ms bins */
    for (int i = 0; i < 100; i++) {
        CHECK_INT(probes_record(&t, "p", 1, 0, end0 - 1500000, end0, PROBE_OK), DQ_OK);
    }
    int64_t end1 = T0 + SEC + SEC / 2;
    for (int i = 0; i < 50; i++) {
        CHECK_INT(probes_record(&t, "p", 1, 0, end1 - 3500000, end1, PROBE_OK), DQ_OK);
    }
    CHECK_INT(p->slots[probes_window_of(&t, end0) % t.nslots].k, 0);
    CHECK_INT(p->slots[probes_window_of(&t, end1) % t.nslots].k, 1);
    CHECK_INT(probes_close_window(&t, probes_window_of(&t, end0)), DQ_OK);
    CHECK_INT(probes_close_window(&t, probes_window_of(&t, end1)), DQ_OK);
    struct probe_window *w0 = probes_ring_find(p, probes_window_of(&t, end0));
    struct probe_window *w1 = probes_ring_find(p, probes_window_of(&t, end1));
    CHECK(w0 && w1);
    if (w0 && w1) {
        /* both on the grid of now; window 0's 1 ms bins 1 and 3 summed into 2 ms bins 0, 1 */
        CHECK_INT(w0->observed->k, 1);
        CHECK_INT(w1->observed->k, 1);
        CHECK_NEAR(w0->observed->pdf[0], 0.5, 1e-15);
        CHECK_NEAR(w0->observed->pdf[1], 0.5, 1e-15);
        CHECK_INT((int)w0->observed->n_ok, 200);
        CHECK_NEAR(w1->observed->pdf[1], 1.0, 1e-15);
        CHECK_NEAR(w0->mean, 0.0025, 1e-12); /* the exact moments do not depend on bins */
    }
    probes_release(&t);
}

/* The ring is re-expressed on the new grid, masses and counts kept. */
static void test_ring(void) {
    struct probe_table t;
    struct probe *p = table(&t);
    if (!p) {
        probes_release(&t);
        return;
    }
    for (int w = 0; w < 5; w++) {
        window(&t, p, w, 40, 10 + w, 30 + w, 2);
    }
    CHECK_INT(p->ring_len, 5);
    double lost[5], mean[5];
    for (int b = 0; b < 5; b++) {
        const struct dq *q = probes_ring_get(p, b)->observed;
        struct dq_moments m;
        CHECK_INT(dq_moments(q, &m), DQ_OK);
        lost[b] = dq_lost(q);
        mean[b] = m.mean;
    }
    /* coarser by 8: masses summed, the lost mass and the counts kept, means within a bin */
    CHECK_INT(probes_set_range(&t, p, 3), DQ_OK);
    for (int b = 0; b < 5; b++) {
        const struct dq *q = probes_ring_get(p, b)->observed;
        struct dq_moments m;
        CHECK_INT(q->k, 3);
        CHECK_INT(q->n, 1024);
        CHECK_NEAR(dq_lost(q), lost[b], 1e-12);
        CHECK_INT((int)q->n_to, 2);
        CHECK_INT(dq_moments(q, &m), DQ_OK);
        CHECK_NEAR(m.mean, mean[b], 0.004 + 1e-12);
    }
    /* a bad width is refused and nothing changes */
    CHECK_INT(probes_set_range(&t, p, DQ_MAX_K + 1), DQ_ERANGE);
    CHECK_INT(p->k, 3);
    CHECK_INT(probes_set_auto_range(&t, 1, 10.0, 1.0), DQ_ERANGE);
    probes_release(&t);
}

static const struct check_case cases[] = {
    CHECK_CASE(decide),
    CHECK_CASE(boundary),
    CHECK_CASE(ring),
};

CHECK_MAIN(cases)
