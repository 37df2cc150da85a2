/*
 * fuzz_otlp_receiver.c: libFuzzer target for the OTLP receiver as a whole (issue 26): each
 * input is a script of requests to one receiver on a real core and store (no sockets),
 * which live across inputs, so that names, services and peers pile up as under a flood.
 *
 * The script is records [op][n][n bytes]: op % 8 is 0 a service name (any bytes: invalid
 * UTF-8, NUL), 1 a span name in the current service, 2 that span repeated n × 16 times
 * (huge repeated fields), 3 an attribute of the next span (key = the bytes), 4 the clock
 * moved n × 100 ms (windows close, idle probes go), 5 the request sent so far, from peer
 * op >> 3 (of 32), 6 the bytes as a raw body of their own; the rest is sent at the end.
 *
 * After every request the invariants are checked (a failure aborts: a crash):
 *   - the reply is one the receiver documents (200, 400, 413, 429, 503);
 *   - the spans API would answer 200: otlp_recent_json builds, and dumps;
 *   - the probe table keeps its reserve: observed probes at most max_observed, and a real
 *     probe can always be registered;
 *   - RSS under FUZZ_RSS_BOUND_MB.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RSS_BOUND_MB 1536 /* with the sanitizers' own memory; libFuzzer stops at 2048 */
#define T0 1700000000000000000LL
#define SEC 1000000000LL
#define MAX_OBSERVED 30

static struct {
    struct store *store;
    struct clock clock;
    struct clock_manual manual;
    struct core *core;
    uv_loop_t loop;
    struct otlp *otlp;
    int64_t now;
    uint64_t inputs;
} F;

static void fail(const char *what) {
    fprintf(stderr, "fuzz_otlp_receiver: invariant broken: %s\n", what);
    abort();
}

static int64_t clock_of(void *ctx) {
    return clock_now(ctx);
}

static char db[64];

/* The store's files go when the fuzzer exits. */
static void remove_db(void) {
    store_remove_files(db);
}

static void setup(void) {
    snprintf(db, sizeof db, "/tmp/fuzz_otlp_receiver_%d.db", (int)getpid());
    store_remove_files(db);
    atexit(remove_db);
    F.now = T0;
    if (store_open(db, &F.store) != DQ_OK) {
        fail("store_open");
    }
    clock_init_manual(&F.clock, &F.manual, F.now);
    store_set_clock(F.store, clock_of, &F.clock);
    struct core_options co = {.max_probes = 100,
                              .window_ns = SEC,
                              .lag_ns = 2 * SEC,
                              .ring = 8,
                              .default_dmax_ms = 100,
                              .default_bins = 64,
                              .new_names_per_second = 5,
                              .new_names_burst = 20,
                              .names = {.all_per_second = 10,
                                        .all_burst = 40,
                                        .max_observed = MAX_OBSERVED,
                                        .idle_windows = 5}};
    if (core_create(&co, F.store, &F.clock, &F.core) != DQ_OK) {
        fail("core_create");
    }
    uv_loop_init(&F.loop);
    struct otlp_options oo = {
        .listen = "127.0.0.1:0", .silence_ns = 3 * SEC, .max_body = 1 << 20, .recent_spans = 256};
    if (otlp_create(&F.loop, F.core, &oo, &F.otlp) != DQ_OK) {
        fail("otlp_create");
    }
}

/* ---- a protobuf request, built by hand -------------------------------------------------- */

struct pb {
    uint8_t *d;
    size_t n, cap;
};

static void put(struct pb *b, const void *p, size_t n) {
    if (b->n + n <= b->cap) {
        memcpy(b->d + b->n, p, n);
        b->n += n;
    }
}

static void varint(struct pb *b, uint64_t v) {
    uint8_t x[10];
    size_t n = 0;
    do {
        x[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, x, n);
}

static void bytes(struct pb *b, uint32_t field, const void *p, size_t n) {
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, p, n);
}

static void fixed64(struct pb *b, uint32_t field, uint64_t v) {
    varint(b, (uint64_t)field << 3 | 1);
    put(b, &v, 8); /* little-endian machines only, as dqd */
}

/* The request under construction: resources of spans. */
struct script {
    struct pb req, res, spans, span;
    uint8_t buf[4][1 << 18];
    uint64_t id;
};

static void span_end(struct script *s) {
    if (s->span.n) {
        bytes(&s->spans, 2, s->span.d, s->span.n);
        s->span.n = 0;
    }
}

static void resource_end(struct script *s) {
    span_end(s);
    if (s->spans.n || s->res.n) {
        struct pb rs = {s->buf[3], 0, sizeof s->buf[3]};
        bytes(&rs, 1, s->res.d, s->res.n);
        bytes(&rs, 2, s->spans.d, s->spans.n);
        bytes(&s->req, 1, rs.d, rs.n);
    }
    s->res.n = s->spans.n = 0;
}

static void span_begin(struct script *s, const uint8_t *name, size_t n) {
    span_end(s);
    uint8_t trace[16] = {1}, id[8];
    s->id++;
    memcpy(trace + 8, &s->id, 8);
    memcpy(id, &s->id, 8);
    bytes(&s->span, 1, trace, 16);
    bytes(&s->span, 2, id, 8);
    bytes(&s->span, 5, name, n);
    fixed64(&s->span, 7, (uint64_t)(F.now - 2000000));
    fixed64(&s->span, 8, (uint64_t)(F.now - 1000000));
}

/* ---- the invariants ------------------------------------------------------------------------ */

static long rss_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb / 1024;
}

static void check_invariants(const struct http_response *res) {
    int st = res->status;
    if (st != 200 && st != 400 && st != 413 && st != 429 && st != 503) {
        fail("a reply the receiver does not document");
    }
    if (st == 200 && res->len == 0 && strstr(res->content_type, "json")) {
        fail("an empty JSON reply");
    }
    json_t *spans = otlp_recent_json(F.otlp, NULL, 100000);
    char *text = spans ? json_dumps(spans, JSON_COMPACT) : NULL;
    if (!text) {
        fail("the spans API could not answer");
    }
    free(text);
    json_decref(spans);
    struct probe_table *t = core_probes(F.core);
    size_t observed = 0;
    for (size_t i = 0; i < t->count; i++) {
        observed += probes_observed(t->probes[i]) != 0;
    }
    if (observed > MAX_OBSERVED || t->count > t->cap) {
        fail("observed probes ate into the reserve");
    }
    struct probe *real;
    char name[32];
    snprintf(name, sizeof name, "real_%llu", (unsigned long long)(F.inputs % 8));
    if (probes_get(t, name, strlen(name), &real) != DQ_OK) {
        fail("a real probe could not be registered");
    }
    if ((F.inputs & 255) == 0 && rss_mb() > FUZZ_RSS_BOUND_MB) {
        fail("RSS over the bound");
    }
}

static void post(const uint8_t *body, size_t len, int peer) {
    char addr[32];
    snprintf(addr, sizeof addr, "10.0.0.%d", peer);
    struct http_response res;
    http_response_init(&res, 1 << 20);
    otlp_handle_body(F.otlp, "application/x-protobuf", NULL, addr, body, len, &res);
    check_invariants(&res);
    http_response_release(&res);
}

static void flush(struct script *s, int peer) {
    resource_end(s);
    post(s->req.d, s->req.n, peer);
    s->req.n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!F.core) {
        setup();
    }
    F.inputs++;
    static struct script s;
    s.req = (struct pb){s.buf[0], 0, sizeof s.buf[0]};
    s.res = (struct pb){s.buf[1], 0, sizeof s.buf[1] / 2};
    s.spans = (struct pb){s.buf[2], 0, sizeof s.buf[2]};
    s.span = (struct pb){s.buf[1] + sizeof s.buf[1] / 2, 0, sizeof s.buf[1] / 2};
    const uint8_t *last_name = (const uint8_t *)"x";
    size_t last_n = 1;
    int peer = 0;
    for (size_t at = 0; at + 2 <= size;) {
        uint8_t op = data[at], n = data[at + 1];
        const uint8_t *p = data + at + 2;
        if (at + 2 + n > size) {
            n = (uint8_t)(size - at - 2);
        }
        at += 2 + (size_t)n;
        switch (op % 8) {
        case 0: /* a service */
            resource_end(&s);
            varint(&s.res, 1 << 3 | 2);
            {
                struct pb kv = {s.buf[3], 0, sizeof s.buf[3]}, v = {s.buf[3] + 4096, 0, 4096};
                bytes(&v, 1, p, n);
                bytes(&kv, 1, "service.name", 12);
                bytes(&kv, 2, v.d, v.n);
                varint(&s.res, kv.n);
                put(&s.res, kv.d, kv.n);
            }
            break;
        case 1: /* a span */
            span_begin(&s, p, n);
            last_name = p;
            last_n = n;
            break;
        case 2: /* repeated */
            for (int k = 0; k < (n ? n : 1) * 16; k++) {
                span_begin(&s, last_name, last_n);
            }
            break;
        case 3: /* an attribute of the current span */
            if (s.span.n) {
                struct pb kv = {s.buf[3], 0, sizeof s.buf[3]};
                bytes(&kv, 1, p, n);
                bytes(&kv, 2, "\x0a\x01v", 3);
                bytes(&s.span, 9, kv.d, kv.n);
            }
            break;
        case 4: /* time passes */
            F.now += (int64_t)(n ? n : 1) * (SEC / 10);
            clock_manual_set(&F.manual, F.now);
            core_close_due(F.core, F.now, NULL, NULL);
            break;
        case 5:
            peer = op >> 3;
            flush(&s, peer);
            break;
        case 6: /* a raw body */
            post(p, n, op >> 3);
            break;
        default:
            break;
        }
    }
    flush(&s, peer);
    return 0;
}
