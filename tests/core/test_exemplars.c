/*
 * test_exemplars.c: the exemplars a probe keeps per window (controller/core/core.h,
 * "exemplars"), on a bare probe table: the slowest identified ok instances whatever their
 * order, the first failed and timed-out ones, nothing from instances without ids, the ids,
 * node and attributes as they came (attributes cut after a whole pair, a span's binary ids
 * as hex, a long node cut before a whole character), each window's set apart from the
 * next, a grid change clearing the open windows, and the bounds (0 kept, the maximum, a bad
 * size).
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define T0 (1716300000LL * SEC)
#define W0 (T0 / SEC)

static void table(struct probe_table *t, int slowest, int failed) {
    CHECK_INT(probes_init(t, 64, SEC, SEC, 8, 1000.0, 100, T0 + SEC), 0);
    CHECK_INT(probes_set_exemplars(t, slowest, failed), 0);
}

/* An instance of `api` ending in window W0 + k that lasted d_ms, with trace id `trace`
 * (NULL: no ids at all). */
static void inst(struct probe_table *t, uint32_t origin, int k, double d_ms, enum probe_status st,
                 const char *trace, const char *attrs) {
    int64_t end = T0 + k * SEC + 500 * MS;
    struct probe_ident id = {.trace = trace,
                             .trace_len = trace ? strlen(trace) : 0,
                             .id = "9f2c",
                             .id_len = 4,
                             .attrs = attrs,
                             .attrs_len = attrs ? strlen(attrs) : 0};
    uint64_t h = wire_name_hash("api", 3);
    int rc =
        trace
            ? probes_record_ident(t, "api", 3, h, origin, end - (int64_t)(d_ms * MS), end, st, &id)
            : probes_record_hashed(t, "api", 3, h, origin, end - (int64_t)(d_ms * MS), end, st);
    CHECK_INT(rc, 0);
}

static const struct probe_exemplar *closed(struct probe_table *t, int k, int *n) {
    struct probe *p = probes_find(t, "api", 3);
    const struct probe_exemplar *e = NULL;
    *n = p ? probes_exemplars_of(p, W0 + k, &e) : 0;
    return e;
}

static void test_slowest_and_failed(void) {
    struct probe_table t;
    table(&t, 3, 2);
    /* ten identified ok instances in a shuffled order, two unidentified slower ones, three
     * failed, one timed out */
    static const double d[] = {12, 40, 7, 33, 90, 15, 61, 2, 58, 20};
    char trace[16];
    for (int i = 0; i < 10; i++) {
        snprintf(trace, sizeof trace, "aa%02d", (int)d[i]);
        inst(&t, 0, 0, d[i], PROBE_OK, trace, NULL);
        if (i == 4) {
            inst(&t, 0, 0, 200, PROBE_OK, NULL, NULL);
            inst(&t, 0, 0, 300, PROBE_OK, NULL, NULL);
        }
    }
    inst(&t, 0, 0, 5, PROBE_FA, "fa01", NULL);
    inst(&t, 0, 0, 6, PROBE_FA, "fa02", NULL);
    inst(&t, 0, 0, 7, PROBE_FA, "fa03", NULL);
    int n;
    closed(&t, 0, &n);
    CHECK_INT(n, 0); /* nothing until the window closes */
    CHECK_INT(probes_close_window(&t, W0), 0);
    const struct probe_exemplar *e = closed(&t, 0, &n);
    CHECK_INT(n, 5);
    if (n == 5) {
        /* the three slowest identified ones, slowest first, then the first two failed */
        CHECK(memcmp(e[0].trace, "aa90", 4) == 0 && e[0].d_ns == 90 * MS);
        CHECK(memcmp(e[1].trace, "aa61", 4) == 0);
        CHECK(memcmp(e[2].trace, "aa58", 4) == 0);
        CHECK(memcmp(e[3].trace, "fa01", 4) == 0 && e[3].status == PROBE_FA);
        CHECK(memcmp(e[4].trace, "fa02", 4) == 0);
        CHECK_INT(e[0].id_len, 4);
        CHECK(memcmp(e[0].id, "9f2c", 4) == 0);
        CHECK_INT(e[0].end_ns, T0 + 500 * MS);
    }
    CHECK(strcmp(core_exemplar_status(PROBE_TO), "to") == 0);
    /* the next window keeps its own: one timed out, one slow */
    inst(&t, 0, 1, 1000, PROBE_TO, "to01", NULL);
    inst(&t, 0, 1, 3, PROBE_OK, "bb03", NULL);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    e = closed(&t, 1, &n);
    CHECK_INT(n, 2);
    CHECK(n == 2 && memcmp(e[0].trace, "bb03", 4) == 0 && e[1].status == PROBE_TO);
    closed(&t, 0, &n);
    CHECK_INT(n, 0); /* only the newest closed window's set is kept */
    /* a window where nothing identified itself leaves the closed set as it was */
    inst(&t, 0, 2, 50, PROBE_OK, NULL, NULL);
    CHECK_INT(probes_close_window(&t, W0 + 2), 0);
    closed(&t, 2, &n);
    CHECK_INT(n, 0);
    closed(&t, 1, &n);
    CHECK_INT(n, 2);
    probes_release(&t);
}

static void test_ids_node_attrs(void) {
    struct probe_table t;
    table(&t, 2, 1);
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "1 127.0.0.1:5555", "shop@host1", "shop", &o), 0);
    /* 200 bytes of pairs: cut after the last whole pair that fits in 160 */
    char attrs[256];
    size_t len = 0;
    for (int i = 0; len < 200; i++) {
        len += (size_t)snprintf(attrs + len, sizeof attrs - len, "%sk%02d=value%02d", i ? "," : "",
                                i, i);
    }
    inst(&t, o, 0, 30, PROBE_OK, "5b8aa5a2d2c872e8", attrs);
    /* a span: 16 + 8 bytes of ids, written as hex */
    unsigned char tid[16], sid[8];
    for (int i = 0; i < 16; i++) {
        tid[i] = (unsigned char)(0xf0 + i);
    }
    memset(sid, 0xab, sizeof sid);
    struct probe_ident span = {.trace = (const char *)tid,
                               .trace_len = 16,
                               .id = (const char *)sid,
                               .id_len = 8,
                               .binary = 1};
    uint64_t h = wire_name_hash("api", 3);
    struct probe_span_source src = {.origin = o};
    CHECK_INT(probes_record_span(&t, "api", 3, h, &src, T0 + 100 * MS, T0 + 300 * MS, 1, &span), 0);
    CHECK_INT(probes_close_window(&t, W0), 0);
    int n;
    const struct probe_exemplar *e = closed(&t, 0, &n);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_INT(e[0].node_len, 10);
        CHECK(memcmp(e[0].node, "shop@host1", 10) == 0);
        CHECK(e[0].attrs_len <= PROBES_EX_ATTRS_MAX && e[0].attrs_len > 100);
        CHECK(memcmp(e[0].attrs, attrs, (size_t)e[0].attrs_len) == 0);
        CHECK(attrs[e[0].attrs_len] == ','); /* a whole pair, no half value */
        CHECK_INT(e[1].trace_len, 32);
        CHECK(memcmp(e[1].trace, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", 32) == 0);
        CHECK_INT(e[1].id_len, 16);
        CHECK(memcmp(e[1].id, "abababababababab", 16) == 0);
        CHECK_INT(e[1].status, PROBE_FA);
    }
    probes_release(&t);
}

/* The bytes of node an exemplar keeps from an instance of an origin of that node (-1: none
 * kept). */
static int node_kept(const char *node) {
    struct probe_table t;
    table(&t, 1, 0);
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "otlp node", node, node, &o), 0);
    inst(&t, o, 0, 30, PROBE_OK, "aa", NULL);
    CHECK_INT(probes_close_window(&t, W0), 0);
    int n;
    const struct probe_exemplar *e = closed(&t, 0, &n);
    int kept = n == 1 && memcmp(e[0].node, node, (size_t)e[0].node_len) == 0 ? e[0].node_len : -1;
    probes_release(&t);
    return kept;
}

/* A node name longer than PROBES_EX_NODE_MAX (an OTLP service name, UTF-8 checked where it
 * entered) is cut before a whole character: the exemplar's JSON can be built from it. */
static void test_node_cut_whole_character(void) {
    char node[128] = "a";
    for (int i = 0; i < 40; i++) {
        strcat(node, "\xc3\xa9"); /* é: byte 64 is the second byte of the 32nd */
    }
    CHECK_INT(node_kept(node), 63);
    memset(node, 'n', 100); /* an ASCII name is cut at the bound itself */
    node[100] = '\0';
    CHECK_INT(node_kept(node), PROBES_EX_NODE_MAX);
    CHECK_INT(node_kept("shop@host1"), 10);
}

static void test_grid_change_and_bounds(void) {
    struct probe_table t;
    table(&t, 2, 0);
    inst(&t, 0, 0, 30, PROBE_OK, "aa", NULL);
    struct probe *p = probes_find(&t, "api", 3);
    CHECK(p && p->ex);
    /* a new grid clears the open windows, exemplars too */
    CHECK_INT(probes_set_dmax(&t, p, 500.0, 50), 0);
    inst(&t, 0, 0, 10, PROBE_OK, "bb", NULL);
    CHECK_INT(probes_close_window(&t, W0), 0);
    int n;
    const struct probe_exemplar *e = closed(&t, 0, &n);
    CHECK_INT(n, 1);
    CHECK(n == 1 && memcmp(e[0].trace, "bb", 2) == 0);
    /* failed ones are not kept with 0 of them */
    inst(&t, 0, 1, 10, PROBE_FA, "cc", NULL);
    CHECK_INT(probes_close_window(&t, W0 + 1), 0);
    closed(&t, 1, &n);
    CHECK_INT(n, 0);
    probes_release(&t);
    /* none kept at all: no storage either */
    table(&t, 0, 0);
    inst(&t, 0, 0, 30, PROBE_OK, "aa", NULL);
    p = probes_find(&t, "api", 3);
    CHECK(p && !p->ex);
    CHECK_INT(probes_set_exemplars(&t, PROBES_EX_MAX + 1, 0), DQ_ERANGE);
    CHECK_INT(probes_set_exemplars(&t, 0, -1), DQ_ERANGE);
    CHECK_INT(probes_set_exemplars(&t, PROBES_EX_MAX, PROBES_EX_MAX), 0);
    probes_release(&t);
    /* the most kept: 16 slowest of 100 */
    table(&t, PROBES_EX_MAX, 1);
    for (int i = 0; i < 100; i++) {
        inst(&t, 0, 0, (double)((i * 37) % 100) + 1, PROBE_OK, "dd", NULL);
    }
    CHECK_INT(probes_close_window(&t, W0), 0);
    e = closed(&t, 0, &n);
    CHECK_INT(n, PROBES_EX_MAX);
    for (int i = 0; i < n; i++) {
        CHECK_INT(e[i].d_ns, (100 - i) * MS);
    }
    probes_release(&t);
}

static const struct check_case cases[] = {
    CHECK_CASE(slowest_and_failed),
    CHECK_CASE(ids_node_attrs),
    CHECK_CASE(node_cut_whole_character),
    CHECK_CASE(grid_change_and_bounds),
};
CHECK_MAIN(cases)
