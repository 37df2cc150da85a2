/*
 * test_origins.c: where instances come from (controller/core/core.h: origins, no data,
 * per-node moments), on a bare probe table: the test plays the sources, telling the table
 * when a connection opened, received something or closed, and closes the windows itself.
 * No wall clock anywhere: every time is a constant.
 *
 * No data: an enabled probe's empty window is no data when the origin it last heard from
 * is disconnected or received nothing since the window's start; a probe never heard from
 * when no connected origin received anything; otherwise the window is quiet. The silent
 * run's since / windows / origin, its end, and the 64-window bit ring's edges.
 * Per node: three nodes reporting one probe, one slower, with means and variances equal
 * to a direct computation; a 9th node pooled; a node that reconnects, or renames itself;
 * the allocation failure path; origin ids reused only when nothing names them.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define T0 (1716300000LL * SEC) /* a window edge */
#define W0 (T0 / SEC)           /* its window (windows of 1 s) */

/* A table with windows of 1 s, lag 1 s (3 open windows), rings of 8; window W0 is the
 * first to close. */
static void table(struct probe_table *t) {
    CHECK_INT(probes_init(t, 64, SEC, SEC, 8, 1000.0, 100, T0 + SEC), 0);
    CHECK_INT(t->next_close, W0);
}

static struct probe *enabled(struct probe_table *t, const char *name) {
    struct probe *p = NULL;
    CHECK_INT(probes_get(t, name, strlen(name), &p), 0);
    if (p) {
        p->enabled = 1;
    }
    return p;
}

/* One ok instance of `name` from origin o ending at `end`, lasting d_ms. */
static void send(struct probe_table *t, uint32_t o, const char *name, int64_t end, double d_ms) {
    CHECK_INT(probes_record(t, name, strlen(name), o, end - (int64_t)(d_ms * MS), end, PROBE_OK),
              0);
}

/* Window W0 + k: its start, and a time inside it. */
static int64_t at(int k, int64_t off_ms) {
    return T0 + k * SEC + off_ms * MS;
}

/* ---- no data ------------------------------------------------------------------------------- */

/*
 * Two origins: A reports x, B reports y (and keeps sending). A disconnects: x's empty
 * windows are no data, with since / windows / origin; A's wrapper reconnects and x has
 * data again: the silence clears. B stops sending but stays connected: y is no data from
 * the window after its last instance.
 */
static void test_two_origins(void) {
    struct probe_table t;
    table(&t);
    uint32_t a = 0, b = 0;
    CHECK_INT(probes_origin_open(&t, "1 127.0.0.1:5555", "a@host", "shop", &a), 0);
    CHECK_INT(probes_origin_open(&t, "2 127.0.0.1:5556", "b@host", "shop", &b), 0);
    CHECK(a != 0 && b != 0 && a != b);
    struct probe *x = enabled(&t, "x"), *y = enabled(&t, "y");
    struct probe *idle = NULL;
    CHECK_INT(probes_get(&t, "idle", 4, &idle), 0); /* not enabled: never no data */

    /* window 0: both report */
    probes_origin_heard(&t, a, at(0, 100));
    send(&t, a, "x", at(0, 100), 5);
    probes_origin_heard(&t, b, at(0, 200));
    send(&t, b, "y", at(0, 200), 5);
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_no_data(x, W0), 0);
    CHECK_INT(probes_no_data(y, W0), 0);
    struct probe_silence si;
    CHECK_INT(probes_silence(&t, x, &si), 0);
    CHECK_INT(si.since_ns, 0);

    /* window 1: A sends another probe, then its link closes (so A did receive something
     * since the window's start: x is no data because A is disconnected); B reports y */
    probes_origin_heard(&t, a, at(1, 50));
    send(&t, a, "z", at(1, 50), 5);
    probes_origin_closed(&t, a);
    probes_origin_heard(&t, b, at(1, 300));
    send(&t, b, "y", at(1, 300), 5);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    CHECK_INT(probes_no_data(x, W0 + 1), 1);
    CHECK_INT(probes_no_data(y, W0 + 1), 0);
    CHECK_INT(probes_no_data(idle, W0 + 1), 0);
    CHECK_INT(probes_silence(&t, x, &si), 1);
    CHECK_INT(si.since_ns, at(0, 100)); /* dated from its last instance */
    CHECK_INT(si.run_start_ns, at(1, 0));
    CHECK_INT(si.windows, 1);
    CHECK_INT(si.origin.id, a);
    CHECK(strcmp(si.origin.label, "1 127.0.0.1:5555") == 0);
    CHECK(strcmp(si.origin.node, "a@host") == 0);
    CHECK(strcmp(si.origin.app, "shop") == 0);
    CHECK_INT(si.origin.connected, 0);
    CHECK_INT(probes_silence(&t, y, &si), 0);

    /* window 2: B still connected but sends nothing from now on; x still silent */
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    CHECK_INT(probes_no_data(x, W0 + 2), 1);
    CHECK_INT(probes_no_data(y, W0 + 2), 1); /* the window after y's last instance */
    CHECK_INT(probes_silence(&t, x, &si), 1);
    CHECK_INT(si.since_ns, at(0, 100));
    CHECK_INT(si.windows, 2);
    CHECK_INT(probes_silence(&t, y, &si), 1);
    CHECK_INT(si.since_ns, at(1, 300));
    CHECK_INT(si.run_start_ns, at(2, 0));
    CHECK_INT(si.windows, 1);
    CHECK_INT(si.origin.id, b);
    CHECK_INT(si.origin.connected, 1);
    CHECK(strcmp(si.origin.node, "b@host") == 0);

    /* a closed origin that a probe still names keeps its id: a new connection gets another */
    uint32_t a2 = 0;
    CHECK_INT(probes_origin_open(&t, "3 127.0.0.1:5557", "a@host", "shop", &a2), 0);
    CHECK(a2 != 0 && a2 != a && a2 != b);
    struct probe_origin_info oi;
    CHECK_INT(probes_origin_get(&t, a, &oi), 0);
    CHECK(strcmp(oi.label, "1 127.0.0.1:5555") == 0 && oi.connected == 0);

    /* window 3: x has data again from the new connection; the silence clears */
    probes_origin_heard(&t, a2, at(3, 10));
    send(&t, a2, "x", at(3, 10), 5);
    send(&t, a2, "z", at(3, 11), 5);
    CHECK_INT(probes_close_window(&t, W0 + 3), 0);
    CHECK_INT(probes_no_data(x, W0 + 3), 0);
    CHECK_INT(probes_silence(&t, x, &si), 0);
    CHECK_INT(si.since_ns, 0);
    CHECK_INT(si.windows, 0);
    /* the flags of the closed windows stay */
    CHECK_INT(probes_no_data(x, W0), 0);
    CHECK_INT(probes_no_data(x, W0 + 1), 1);
    CHECK_INT(probes_no_data(x, W0 + 2), 1);
    /* nothing names the first A any more: its id is free again */
    CHECK_INT(probes_origin_get(&t, a, &oi), DQ_EINVAL);
    uint32_t a3 = 0;
    CHECK_INT(probes_origin_open(&t, "4 127.0.0.1:5558", "c@host", "", &a3), 0);
    CHECK_INT(a3, a);
    /* y: B received again (another probe), so y's empty window is quiet and its run ends */
    probes_origin_heard(&t, b, at(4, 10));
    CHECK_INT(probes_close_window(&t, W0 + 4), 0);
    CHECK_INT(probes_no_data(y, W0 + 4), 0);
    CHECK_INT(probes_silence(&t, y, &si), 0);
    /* a window not closed yet is not no data */
    CHECK_INT(probes_no_data(y, W0 + 5), 0);
    probes_release(&t);
}

/* An origin that keeps sending other probes: the empty window of its idle probe is quiet. */
static void test_quiet(void) {
    struct probe_table t;
    table(&t);
    uint32_t c = 0;
    CHECK_INT(probes_origin_open(&t, "1 10.0.0.1:4000", "c@host", "", &c), 0);
    struct probe *busy = enabled(&t, "busy"), *rare = enabled(&t, "rare");
    probes_origin_heard(&t, c, at(0, 5));
    send(&t, c, "rare", at(0, 5), 2);
    send(&t, c, "busy", at(0, 6), 2);
    CHECK_INT(probes_close_window(&t, W0), 0);
    for (int k = 1; k <= 3; k++) {
        probes_origin_heard(&t, c, at(k, 500));
        send(&t, c, "busy", at(k, 500), 2);
        CHECK_INT(probes_close_window(&t, W0 + k), 0);
        CHECK_INT(probes_no_data(rare, W0 + k), 0);
        CHECK_INT(probes_no_data(busy, W0 + k), 0);
    }
    struct probe_silence si;
    CHECK_INT(probes_silence(&t, rare, &si), 0);
    /* received during the lag only (after the window's end, before its close) still
     * counts: the link was not silent since the window's start */
    probes_origin_heard(&t, c, at(5, 100));
    CHECK_INT(probes_close_window(&t, W0 + 4), 0);
    CHECK_INT(probes_no_data(rare, W0 + 4), 0);
    /* then silent through a whole window */
    CHECK_INT(probes_close_window(&t, W0 + 5), 0);
    CHECK_INT(probes_close_window(&t, W0 + 6), 0);
    CHECK_INT(probes_no_data(rare, W0 + 5), 0); /* heard at its start + 100 ms */
    CHECK_INT(probes_no_data(rare, W0 + 6), 1);
    CHECK_INT(probes_no_data(busy, W0 + 6), 1);
    /* disabling ends the run at the next close, and a disabled probe is never no data */
    rare->enabled = 0;
    CHECK_INT(probes_close_window(&t, W0 + 7), 0);
    CHECK_INT(probes_no_data(rare, W0 + 7), 0);
    CHECK_INT(probes_silence(&t, rare, &si), 0);
    CHECK_INT(probes_no_data(busy, W0 + 7), 1);
    CHECK_INT(probes_silence(&t, busy, &si), 1);
    CHECK_INT(si.windows, 2);
    probes_release(&t);
}

/* A probe never heard from (enabled by configuration before any wrapper connected). */
static void test_never_heard(void) {
    struct probe_table t;
    table(&t);
    t.open_ns = T0; /* dqd started as window W0 began: it judges W0 */
    struct probe *q = enabled(&t, "q");
    /* no origin at all: no data */
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_no_data(q, W0), 1);
    struct probe_silence si;
    CHECK_INT(probes_silence(&t, q, &si), 1);
    CHECK_INT(si.since_ns, at(0, 0));
    CHECK_INT(si.origin.id, 0);
    CHECK(strcmp(si.origin.label, "") == 0 && strcmp(si.origin.node, "") == 0);
    /* a connected origin that received nothing yet does not count */
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "1 127.0.0.1:9", "n@h", "", &o), 0);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    CHECK_INT(probes_no_data(q, W0 + 1), 1);
    /* one that received something before the window's start neither */
    probes_origin_heard(&t, o, at(1, 999));
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    CHECK_INT(probes_no_data(q, W0 + 2), 1);
    CHECK_INT(probes_silence(&t, q, &si), 1);
    CHECK_INT(si.windows, 3);
    /* one that received something during the window: quiet, the run ends */
    probes_origin_heard(&t, o, at(3, 1));
    CHECK_INT(probes_close_window(&t, W0 + 3), 0);
    CHECK_INT(probes_no_data(q, W0 + 3), 0);
    CHECK_INT(probes_silence(&t, q, &si), 0);
    /* received during the window, but closed since: does not count */
    probes_origin_heard(&t, o, at(4, 1));
    probes_origin_closed(&t, o);
    CHECK_INT(probes_close_window(&t, W0 + 4), 0);
    CHECK_INT(probes_no_data(q, W0 + 4), 1);
    probes_release(&t);
}

/* The bit ring keeps the last 64 closed windows; older ones, later ones and skipped ones
 * read 0. */
static void test_bit_ring(void) {
    struct probe_table t;
    table(&t);
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "1 h:1", "n@h", "", &o), 0);
    struct probe *r = enabled(&t, "r");
    probes_origin_heard(&t, o, at(0, 1));
    send(&t, o, "r", at(0, 1), 1);
    CHECK_INT(probes_close_window(&t, W0), 0);
    probes_origin_closed(&t, o);
    /* 63 no-data windows: the data window is 63 closed windows back, still in the ring */
    for (int k = 1; k <= 63; k++) {
        CHECK_INT(probes_close_window(&t, W0 + k), 0);
    }
    CHECK_INT(probes_no_data(r, W0), 0);
    CHECK_INT(probes_no_data(r, W0 + 1), 1);
    CHECK_INT(probes_no_data(r, W0 + 63), 1);
    int ones = 0;
    for (int k = 0; k <= 63; k++) {
        ones += probes_no_data(r, W0 + k);
    }
    CHECK_INT(ones, 63);
    /* 7 more: windows older than 64 closed windows read 0 */
    for (int k = 64; k <= 70; k++) {
        CHECK_INT(probes_close_window(&t, W0 + k), 0);
    }
    CHECK_INT(probes_no_data(r, W0 + 70), 1);
    CHECK_INT(probes_no_data(r, W0 + 7), 1);  /* 63 back */
    CHECK_INT(probes_no_data(r, W0 + 6), 0);  /* 64 back: gone */
    CHECK_INT(probes_no_data(r, W0 + 71), 0); /* not closed */
    struct probe_silence si;
    CHECK_INT(probes_silence(&t, r, &si), 1);
    CHECK_INT(si.windows, 70);
    CHECK_INT(si.since_ns, at(0, 1));
    CHECK_INT(si.run_start_ns, at(1, 0));
    /* a clock jump: the windows skipped were never closed and read 0; the run goes on */
    t.next_close = W0 + 80;
    CHECK_INT(probes_close_window(&t, W0 + 80), 0);
    CHECK_INT(probes_no_data(r, W0 + 80), 1);
    CHECK_INT(probes_no_data(r, W0 + 75), 0);
    CHECK_INT(probes_no_data(r, W0 + 70), 1);
    CHECK_INT(probes_silence(&t, r, &si), 1);
    CHECK_INT(si.windows, 71);
    /* a jump of more than 64 windows leaves only the newest flag */
    t.next_close = W0 + 200;
    CHECK_INT(probes_close_window(&t, W0 + 200), 0);
    CHECK_INT(probes_no_data(r, W0 + 200), 1);
    CHECK_INT(probes_no_data(r, W0 + 150), 0);
    CHECK_INT(probes_no_data(r, W0 + 80), 0);
    probes_release(&t);
}

/* ---- per-node moments ---------------------------------------------------------------------- */

/* Exact moments of one node's ok durations, accumulated in the order they were sent. */
struct direct {
    uint64_t ok, fa, to;
    double sum, sumsq;
};

static void direct_add(struct direct *d, int64_t d_ns) {
    double s = (double)d_ns * 1e-9;
    d->ok++;
    d->sum += s;
    d->sumsq += s * s;
}

static void direct_moments(const struct direct *d, double *mean, double *var) {
    *mean = d->sum / (double)d->ok;
    double v = d->sumsq / (double)d->ok - *mean * *mean;
    *var = v > 0 ? v : 0;
}

/*
 * Three nodes report one probe in turns, as three wrappers' reads would arrive; n3 is
 * slower. The split happens at n2's first instance, after n1 had already sent some: those
 * count as n1's. A window closed before the split is reported as n1's.
 */
static void test_three_nodes(void) {
    struct probe_table t;
    table(&t);
    uint32_t o[3];
    static const char *const nodes[3] = {"n1@host", "n2@host", "n3@host"};
    for (int i = 0; i < 3; i++) {
        char label[64]; /* room for any int, as -O1's format-truncation check wants */
        snprintf(label, sizeof label, "%d 10.0.0.%d:7000", i + 1, i + 1);
        CHECK_INT(probes_origin_open(&t, label, nodes[i], "shop", &o[i]), 0);
    }
    struct probe *db = enabled(&t, "db");
    /* window 0: only n1 */
    send(&t, o[0], "db", at(0, 10), 4);
    send(&t, o[0], "db", at(0, 20), 6);
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_node_count(db), 0);
    /* window 1: n1 first, then the others in turns */
    struct direct want[3];
    memset(want, 0, sizeof want);
    uint64_t rng = 0x2545f4914f6cdd1dULL;
    for (int round = 0; round < 30; round++) {
        for (int i = 0; i < 3; i++) {
            if (round == 0 && i > 0) {
                continue; /* n1 sends a batch alone before the others come */
            }
            for (int k = 0; k < 5; k++) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                int64_t d_ns = (i == 2 ? 40 : 10) * MS + (int64_t)(rng % (5 * MS));
                int64_t end = at(1, 100 + round * 20 + k);
                CHECK_INT(probes_record(&t, "db", 2, o[i], end - d_ns, end, PROBE_OK), 0);
                direct_add(&want[i], d_ns);
            }
            CHECK_INT(probes_record(&t, "db", 2, o[i], at(1, 700), at(1, 701),
                                    i == 1 ? PROBE_FA : PROBE_TO),
                      0);
            if (i == 1) {
                want[i].fa++;
            } else {
                want[i].to++;
            }
        }
    }
    /* a timeout past the horizon (dMax 1 s): an ok past it counts as out */
    CHECK_INT(probes_record(&t, "db", 2, o[2], at(1, 900) - 2 * SEC, at(1, 900), PROBE_OK), 0);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    CHECK_INT(probes_node_count(db), 3);
    for (int i = 0; i < 3; i++) {
        CHECK(probes_node_name(&t, db, i) && strcmp(probes_node_name(&t, db, i), nodes[i]) == 0);
    }
    CHECK(probes_node_name(&t, db, 3) == NULL);
    CHECK(probes_node_name(&t, db, -1) == NULL);
    uint64_t ok = 0;
    for (int i = 0; i < 3; i++) {
        struct probe_node_moments m;
        CHECK_INT(probes_node_moments(db, i, W0 + 1, &m), 0);
        double mean, var;
        direct_moments(&want[i], &mean, &var);
        CHECK_INT(m.ok, want[i].ok);
        CHECK_INT(m.fa, want[i].fa);
        CHECK_INT(m.to, want[i].to);
        CHECK_INT(m.out, i == 2 ? 1 : 0);
        CHECK_MSG(m.mean == mean, "node %d: mean %.17g, want %.17g", i, m.mean, mean);
        CHECK_MSG(m.variance == var, "node %d: variance %.17g, want %.17g", i, m.variance, var);
        ok += m.ok;
    }
    struct probe_window *w = probes_ring_find(db, W0 + 1);
    CHECK(w != NULL);
    CHECK_INT(w ? w->ok : 0, ok); /* the nodes add up to the probe */
    /* the slow node is the slow one, by far */
    struct probe_node_moments m0, m2;
    CHECK_INT(probes_node_moments(db, 0, W0 + 1, &m0), 0);
    CHECK_INT(probes_node_moments(db, 2, W0 + 1, &m2), 0);
    CHECK(m2.mean > m0.mean + 0.025);
    /* before the split: n1's alone, as the probe's own window */
    struct probe_node_moments before;
    CHECK_INT(probes_node_moments(db, 0, W0, &before), 0);
    w = probes_ring_find(db, W0);
    CHECK(w && before.ok == 2 && before.mean == w->mean && before.variance == w->variance);
    CHECK_INT(probes_node_moments(db, 1, W0, &before), 0);
    CHECK_INT(before.ok, 0);
    /* not closed, or out of the ring */
    CHECK_INT(probes_node_moments(db, 0, W0 + 2, &before), DQ_ENOTFOUND);
    CHECK_INT(probes_node_moments(db, 3, W0 + 1, &before), DQ_EINVAL);
    /* an empty window of a split probe: every node at zero */
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    CHECK_INT(probes_node_moments(db, 2, W0 + 2, &before), 0);
    CHECK(before.ok == 0 && before.fa == 0 && before.to == 0 && before.mean == 0);
    /* a reconnecting n2 (a new connection, the same node) keeps its row */
    probes_origin_closed(&t, o[1]);
    uint32_t n2b = 0;
    CHECK_INT(probes_origin_open(&t, "9 10.0.0.2:7001", "n2@host", "shop", &n2b), 0);
    send(&t, n2b, "db", at(3, 5), 11);
    CHECK_INT(probes_close_window(&t, W0 + 3), 0);
    CHECK_INT(probes_node_count(db), 3);
    CHECK_INT(probes_node_moments(db, 1, W0 + 3, &before), 0);
    CHECK_INT(before.ok, 1);
    /* the ring holds 8 windows: W0 + 1 is gone once W0 + 9 closed */
    for (int k = 4; k <= 9; k++) {
        CHECK_INT(probes_close_window(&t, W0 + k), 0);
    }
    CHECK_INT(probes_node_moments(db, 0, W0 + 1, &before), DQ_ENOTFOUND);
    CHECK_INT(probes_node_moments(db, 1, W0 + 3, &before), 0);
    probes_release(&t);
}

/* Nine nodes and more: the 9th and later are pooled as "(other)". A legacy-looking link
 * that says hello later is renamed. */
static void test_pooled(void) {
    struct probe_table t;
    table(&t);
    struct probe *p = enabled(&t, "p");
    uint32_t o[11];
    for (int i = 0; i < 11; i++) {
        char node[32], label[32];
        snprintf(node, sizeof node, "n%d@h", i);
        snprintf(label, sizeof label, "%d h:%d", i + 1, i);
        CHECK_INT(probes_origin_open(&t, label, node, "", &o[i]), 0);
        for (int k = 0; k <= i; k++) {
            send(&t, o[i], "p", at(0, 10 + i), 1 + i);
        }
    }
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_node_count(p), PROBES_MAX_NODES + 1);
    CHECK(strcmp(probes_node_name(&t, p, 7), "n7@h") == 0);
    CHECK(strcmp(probes_node_name(&t, p, 8), PROBES_NODE_OTHER) == 0);
    struct probe_node_moments m;
    CHECK_INT(probes_node_moments(p, 8, W0, &m), 0);
    CHECK_INT(m.ok, 9 + 10 + 11); /* nodes 8, 9 and 10 */
    CHECK_NEAR(m.mean, (9 * 9 + 10 * 10 + 11 * 11) * 1e-3 / 30, 1e-12);
    CHECK_INT(probes_node_moments(p, 7, W0, &m), 0);
    CHECK_INT(m.ok, 8);
    CHECK_NEAR(m.mean, 8e-3, 1e-12);
    CHECK_NEAR(m.variance, 0.0, 1e-15);

    /* a link known by its host, then named by a hello: a new node for q */
    struct probe *q = enabled(&t, "q");
    uint32_t l1 = 0, l2 = 0;
    CHECK_INT(probes_origin_open(&t, "20 10.1.1.1:1", "10.1.1.1", "", &l1), 0);
    CHECK_INT(probes_origin_open(&t, "21 10.1.1.2:1", "10.1.1.2", "", &l2), 0);
    send(&t, l1, "q", at(1, 1), 1);
    send(&t, l1, "q", at(1, 2), 1);
    CHECK_INT(probes_origin_identify(&t, l1, "app@one", "app"), 0);
    send(&t, l1, "q", at(1, 3), 3);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    CHECK_INT(probes_node_count(q), 2);
    CHECK(strcmp(probes_node_name(&t, q, 0), "10.1.1.1") == 0);
    CHECK(strcmp(probes_node_name(&t, q, 1), "app@one") == 0);
    CHECK_INT(probes_node_moments(q, 0, W0 + 1, &m), 0);
    CHECK_INT(m.ok, 2);
    CHECK_INT(probes_node_moments(q, 1, W0 + 1, &m), 0);
    CHECK_INT(m.ok, 1);
    struct probe_origin_info oi;
    CHECK_INT(probes_origin_get(&t, l1, &oi), 0);
    CHECK(strcmp(oi.node, "app@one") == 0 && strcmp(oi.app, "app") == 0);
    /* renaming to the same node changes nothing */
    CHECK_INT(probes_origin_identify(&t, l1, "app@one", "app"), 0);
    CHECK_INT(probes_origin_identify(&t, 999, "x", "y"), DQ_EINVAL);
    /* l2 (another host) reporting q makes a third node */
    send(&t, l2, "q", at(2, 1), 1);
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    CHECK_INT(probes_node_count(q), 3);
    /* one node only: no split */
    struct probe *solo = enabled(&t, "solo");
    send(&t, o[0], "solo", at(3, 1), 1);
    CHECK_INT(probes_close_window(&t, W0 + 3), 0);
    CHECK_INT(probes_node_count(solo), 0);
    CHECK_INT(probes_node_moments(solo, 0, W0 + 3, &m), DQ_EINVAL);
    probes_release(&t);
}

static int fail_allocs;

static void *failing_calloc(size_t n, size_t size) {
    fail_allocs++;
    (void)n;
    (void)size;
    return NULL;
}

/* The per-node storage cannot be allocated: counted once, and the probe goes on unsplit. */
static void test_split_alloc_fails(void) {
    struct probe_table t;
    table(&t);
    t.split_calloc = failing_calloc;
    uint32_t o[3];
    for (int i = 0; i < 3; i++) {
        char node[16];
        snprintf(node, sizeof node, "m%d@h", i);
        CHECK_INT(probes_origin_open(&t, "x", node, "", &o[i]), 0);
    }
    struct probe *p = enabled(&t, "p");
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 3; i++) {
            send(&t, o[i], "p", at(0, 10 * k + i), 2);
        }
    }
    CHECK_INT(fail_allocs, 1);
    CHECK_INT(t.split_failures, 1);
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_node_count(p), 0);
    struct probe_window *w = probes_ring_find(p, W0);
    CHECK(w && w->ok == 12);
    /* another probe tries once too */
    enabled(&t, "p2");
    send(&t, o[0], "p2", at(1, 1), 2);
    send(&t, o[1], "p2", at(1, 2), 2);
    CHECK_INT(t.split_failures, 2);
    probes_release(&t);
}

/* Origin ids: reused once closed and unnamed; 0 and unknown ids are none. */
static void test_origin_ids(void) {
    struct probe_table t;
    table(&t);
    uint32_t a = 0, b = 0;
    CHECK_INT(probes_origin_open(&t, "1 h:1", "", NULL, &a), 0);
    probes_origin_closed(&t, a);
    CHECK_INT(probes_origin_open(&t, "2 h:2", "n@h", "", &b), 0);
    CHECK_INT(b, a); /* nothing named it */
    struct probe_origin_info oi;
    CHECK_INT(probes_origin_get(&t, b, &oi), 0);
    CHECK(strcmp(oi.label, "2 h:2") == 0 && strcmp(oi.node, "n@h") == 0 && oi.connected);
    CHECK_INT(probes_origin_get(&t, 0, &oi), DQ_EINVAL);
    CHECK(oi.label && strcmp(oi.label, "") == 0);
    /* an unknown origin counts as none; heard / closed on it do nothing */
    probes_origin_heard(&t, 12345, T0);
    probes_origin_closed(&t, 12345);
    struct probe *p = enabled(&t, "p");
    send(&t, 777, "p", at(0, 1), 1);
    CHECK_INT(p->origin, 0);
    send(&t, b, "p", at(0, 2), 1);
    CHECK_INT(p->origin, b);
    /* many connections: ids grow, and the labels are kept cut to their size */
    char longlabel[400];
    memset(longlabel, 'L', sizeof longlabel - 1);
    longlabel[sizeof longlabel - 1] = '\0';
    uint32_t last = 0;
    for (int i = 0; i < 100; i++) {
        CHECK_INT(probes_origin_open(&t, longlabel, "many@h", "", &last), 0);
    }
    CHECK_INT(probes_origin_get(&t, last, &oi), 0);
    CHECK_INT(strlen(oi.label), PROBES_LABEL_MAX - 1);
    probes_release(&t);
}

/*
 * Across a restart (issue 25): a probe whose last instance and connection the store kept is
 * silent from that instance, named by the old connection (restored, legacy, closed); empty
 * windows that ended before dqd started are not judged; a window that began before the
 * start, or is closed at the stop, is partial and never one of the quiet windows.
 */
static void test_restart_state(void) {
    struct probe_table t;
    /* started half way through window W0 + 1: W0 (lag 1 s) is still open */
    CHECK_INT(probes_init(&t, 64, SEC, SEC, 8, 1000.0, 100, at(1, 500)), 0);
    CHECK_INT(t.next_close, W0);
    struct probe *q = enabled(&t, "q"), *s = enabled(&t, "s");
    q->last_end_ns = T0 - 3 * SEC; /* as the store had it */
    CHECK_INT(probes_restore_origin(&t, q, "3 127.0.0.1:40212", "127.0.0.1", "", "legacy"), 0);
    struct probe_origin_info oi;
    CHECK_INT(probes_origin_get(&t, q->origin, &oi), 0);
    CHECK(oi.restored && !oi.connected && strcmp(oi.kind, "legacy") == 0 &&
          strcmp(oi.label, "3 127.0.0.1:40212") == 0 && strcmp(oi.node, "127.0.0.1") == 0);
    CHECK_INT(q->origin_dirty, 0);
    /* W0 ended before the start: not judged */
    CHECK_INT(probes_close_window(&t, W0), 0);
    CHECK_INT(probes_no_data(q, W0), 0);
    struct probe_silence si;
    CHECK_INT(probes_silence(&t, q, &si), 0);
    /* W0 + 1, the start's window: q's connection is gone, so no data, dated from its last
     * instance; s has 40 instances there, a partial window, not a quiet one */
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "4 127.0.0.1:40300", "127.0.0.1", "", &o), 0);
    probes_origin_heard(&t, o, at(1, 900));
    for (int i = 0; i < 40; i++) {
        send(&t, o, "s", at(1, 600 + i), 1);
    }
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    CHECK_INT(probes_no_data(q, W0 + 1), 1);
    CHECK_INT(probes_silence(&t, q, &si), 1);
    CHECK_INT(si.since_ns, T0 - 3 * SEC);
    CHECK_INT(si.run_start_ns, at(1, 0));
    CHECK_INT(si.origin.id, q->origin);
    CHECK(si.origin.restored && !si.origin.connected);
    struct probe_window *w = probes_ring_find(s, W0 + 1);
    CHECK(w && w->partial && w->ok == 40);
    CHECK_INT(s->n_quiet, 0);
    /* W0 + 2: q heard from the new connection (the silence ends), 40 of s: a full window */
    probes_origin_heard(&t, o, at(2, 900));
    send(&t, o, "q", at(2, 5), 1);
    for (int i = 0; i < 40; i++) {
        send(&t, o, "s", at(2, 100 + i), 1);
    }
    CHECK_INT(q->origin, o);
    CHECK_INT(q->origin_dirty, 1); /* a new origin for the store */
    CHECK_INT(q->last_end_ns, at(2, 5));
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    CHECK_INT(probes_silence(&t, q, &si), 0);
    w = probes_ring_find(s, W0 + 2);
    CHECK(w && !w->partial);
    CHECK_INT(s->n_quiet, 1);
    /* the stop, in W0 + 3: closed there, partial, not a quiet window */
    for (int i = 0; i < 40; i++) {
        send(&t, o, "s", at(3, 100 + i), 1);
    }
    probes_stop(&t, at(3, 300));
    CHECK_INT(probes_close_window(&t, W0 + 3), 0);
    w = probes_ring_find(s, W0 + 3);
    CHECK(w && w->partial && w->ok == 40);
    CHECK_INT(s->n_quiet, 1);
    probes_release(&t);
}

/* One ok line instance of `name` from origin o ending at `end`: its result. */
static int line(struct probe_table *t, uint32_t o, const char *name, int64_t end) {
    return probes_record(t, name, strlen(name), o, end - MS, end, PROBE_OK);
}

/*
 * The line protocol's floor after dqd did not run (probes_loop_waits), as with --otlp:
 * windows stay open 5 s for spans, 1 s for lines. Read while the loop ran as it expected:
 * a line that ended more than 1 s before the read is late. Read after the time the loop
 * expected to wake (dqd was stopped): what waited in the socket was sent after the loop
 * last waited, so a line that ended less than 1 s before that is kept, though it ended
 * 4 s before the read; one that ended earlier is late. Once the loop waits again, the
 * floor follows the reads.
 */
static void test_line_floor_stall(void) {
    struct probe_table t;
    CHECK_INT(probes_init(&t, 64, SEC, 5 * SEC, 8, 1000.0, 100, T0 + 5 * SEC), 0);
    CHECK_INT(t.next_close, W0);
    probes_set_line_lag(&t, SEC);
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "1 127.0.0.1:5555", "a@host", "shop", &o), 0);

    /* awake: the loop waits at W0+2 and expects to run by W0+3 + 200 ms */
    probes_loop_waits(&t, at(2, 0), at(3, 200));
    probes_origin_heard(&t, o, at(2, 100));
    CHECK_INT(t.line_floor, W0 + 1);
    CHECK_INT(line(&t, o, "x", at(0, 500)), DQ_ESTATE); /* 1.6 s before the read */
    CHECK_INT(line(&t, o, "x", at(1, 500)), 0);
    CHECK_INT(t.late, 1);

    /* dqd stopped: the next read comes at W0+5 + 300 ms */
    probes_origin_heard(&t, o, at(5, 300));
    CHECK_INT(t.line_floor, W0 + 1);                    /* from W0+2 − 1 s, not the read */
    CHECK_INT(line(&t, o, "x", at(1, 200)), 0);         /* 4.1 s before the read: kept */
    CHECK_INT(line(&t, o, "x", at(0, 900)), DQ_ESTATE); /* before the loop waited − 1 s */
    CHECK_INT(t.late, 2);
    probes_origin_heard(&t, o, at(5, 400)); /* still reading the backlog */
    CHECK_INT(t.line_floor, W0 + 1);

    /* the loop waits again: the floor follows the reads */
    probes_loop_waits(&t, at(5, 450), at(6, 200));
    probes_origin_heard(&t, o, at(5, 500));
    CHECK_INT(t.line_floor, W0 + 4);
    CHECK_INT(line(&t, o, "x", at(3, 900)), DQ_ESTATE);
    CHECK_INT(line(&t, o, "x", at(4, 600)), 0);
    CHECK_INT(t.late, 3);
    probes_release(&t);
}

static const struct check_case cases[] = {
    CHECK_CASE(two_origins),       CHECK_CASE(quiet),       CHECK_CASE(never_heard),
    CHECK_CASE(bit_ring),          CHECK_CASE(three_nodes), CHECK_CASE(pooled),
    CHECK_CASE(split_alloc_fails), CHECK_CASE(origin_ids),  CHECK_CASE(restart_state),
    CHECK_CASE(line_floor_stall),
};

CHECK_MAIN(cases)
