/*
 * bench_otlp.c: spans per second on one core through the OTLP paths, against the line
 * protocol path, in the same run (issue 28: protobuf at >= 0.3 of the line protocol's
 * rate, OTLP/JSON at >= 1 M spans/s; docs/PERFORMANCE.md "OTLP").
 *
 * The OTLP side: requests as an SDK's batch exporter sends them (512 spans each, one
 * resource with service.name, 16-byte trace ids, 8-byte span and parent ids, four span
 * names, two attributes per span, 2 % with status ERROR, ends within the last
 * millisecond), packed once with protobuf-c, then handed to otlp_handle_body as the HTTP
 * server would hand over a request's body: decode into the arena, map each span to its
 * probe, record it in the core's probe table, build the response. The same bodies
 * gzip'ed (inflate + the rest) and as OTLP/JSON. Also shown: each decoder alone, and the
 * decoders dqd had before (tests/otlp/otlp_ref.c: protobuf-c's unpack into the arena,
 * jansson's document) on the same bodies. The line side: the same instances as line
 * protocol text, split, parsed and recorded as dqd's TCP read callback does
 * (wire_splitter_feed_instances + probes_record_line), into the same table. Paths
 * alternate in every pass and the best pass of each counts, to see through other jobs on
 * a shared machine. Single thread: the rates are per core. The last line says PASS when
 * both targets are met.
 *
 * run: build/tests/otlp/bench_otlp [PASSES]   (default 15; make bench runs it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "otlp.h"
#include "otlp_ref.h"
#include "otlp_trace.pb-c.h"

#define BATCH 512
#define REQUESTS 64
#define TARGET_RATIO 0.3 /* protobuf spans per line protocol line, same run */
#define TARGET_JSON 1e6  /* OTLP/JSON spans per second */
#define CHUNK 65536

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const names[] = {"checkout", "payment", "search", "login"};

struct body {
    uint8_t *pb, *gz;
    char *json;
    size_t pb_len, gz_len, json_len;
};

static void hexs(char *out, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sprintf(out + 2 * i, "%02x", p[i]);
    }
}

/* One request of BATCH spans ending just before now; the same spans as lines in *lines. */
static void make_request(int64_t now, struct body *b, char *lines, size_t *lines_len,
                         size_t lines_cap) {
    static Dqotlp__Span sp[BATCH], *spp[BATCH];
    static Dqotlp__Status st[BATCH];
    static Dqotlp__KeyValue kv[BATCH][2], *kvp[BATCH][2];
    static Dqotlp__AnyValue av[BATCH][2];
    static uint8_t ids[BATCH][32];
    static char json[BATCH * 700 + 1024];
    Dqotlp__AnyValue sv = DQOTLP__ANY_VALUE__INIT;
    sv.value_case = DQOTLP__ANY_VALUE__VALUE_STRING_VALUE;
    sv.string_value = "shop";
    Dqotlp__KeyValue skv = DQOTLP__KEY_VALUE__INIT;
    skv.key = "service.name";
    skv.value = &sv;
    Dqotlp__KeyValue *rattrs[1] = {&skv};
    Dqotlp__Resource res = DQOTLP__RESOURCE__INIT;
    res.n_attributes = 1;
    res.attributes = rattrs;
    size_t jl = (size_t)snprintf(json, sizeof json,
                                 "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":"
                                 "\"service.name\",\"value\":{\"stringValue\":\"shop\"}}]},"
                                 "\"scopeSpans\":[{\"scope\":{\"name\":\"bench\"},\"spans\":[");
    for (int i = 0; i < BATCH; i++) {
        uint64_t r = next_rand();
        int64_t end = now - (int64_t)(r % 1000000);
        int64_t dur = 1000000 + (int64_t)((r >> 20) % 49000000);
        int failed = (r >> 48) % 100 < 2;
        const char *name = names[(r >> 40) % 4];
        for (int k = 0; k < 32; k++) {
            ids[i][k] = (uint8_t)(next_rand() | 1);
        }
        dqotlp__span__init(&sp[i]);
        dqotlp__status__init(&st[i]);
        sp[i].name = (char *)name;
        sp[i].trace_id = (ProtobufCBinaryData){16, ids[i]};
        sp[i].span_id = (ProtobufCBinaryData){8, ids[i] + 16};
        sp[i].parent_span_id = (ProtobufCBinaryData){8, ids[i] + 24};
        sp[i].kind = 2;
        sp[i].start_time_unix_nano = (uint64_t)(end - dur);
        sp[i].end_time_unix_nano = (uint64_t)end;
        st[i].code = failed ? 2 : 0;
        sp[i].status = &st[i];
        for (int a = 0; a < 2; a++) {
            dqotlp__key_value__init(&kv[i][a]);
            dqotlp__any_value__init(&av[i][a]);
            kv[i][a].value = &av[i][a];
            kvp[i][a] = &kv[i][a];
        }
        kv[i][0].key = "http.method";
        av[i][0].value_case = DQOTLP__ANY_VALUE__VALUE_STRING_VALUE;
        av[i][0].string_value = "GET";
        kv[i][1].key = "http.status_code";
        av[i][1].value_case = DQOTLP__ANY_VALUE__VALUE_INT_VALUE;
        av[i][1].int_value = failed ? 500 : 200;
        sp[i].n_attributes = 2;
        sp[i].attributes = kvp[i];
        spp[i] = &sp[i];
        char t[33], s[17], p[17];
        hexs(t, ids[i], 16);
        hexs(s, ids[i] + 16, 8);
        hexs(p, ids[i] + 24, 8);
        jl += (size_t)snprintf(
            json + jl, sizeof json - jl,
            "%s{\"traceId\":\"%s\",\"spanId\":\"%s\",\"parentSpanId\":\"%s\",\"name\":\"%s\","
            "\"kind\":2,\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\","
            "\"attributes\":[{\"key\":\"http.method\",\"value\":{\"stringValue\":\"GET\"}},"
            "{\"key\":\"http.status_code\",\"value\":{\"intValue\":\"%d\"}}],"
            "\"status\":{\"code\":%d}}",
            i ? "," : "", t, s, p, name, (long long)(end - dur), (long long)end, failed ? 500 : 200,
            failed ? 2 : 0);
        *lines_len += (size_t)snprintf(lines + *lines_len, lines_cap - *lines_len,
                                       "n:%s;b:%lld;e:%lld;s:%s\n", name, (long long)(end - dur),
                                       (long long)end, failed ? "fa" : "ok");
    }
    jl += (size_t)snprintf(json + jl, sizeof json - jl, "]}]}]}");
    Dqotlp__ScopeSpans ss = DQOTLP__SCOPE_SPANS__INIT;
    ss.n_spans = BATCH;
    ss.spans = spp;
    Dqotlp__ScopeSpans *ssp = &ss;
    Dqotlp__ResourceSpans rs = DQOTLP__RESOURCE_SPANS__INIT;
    rs.resource = &res;
    rs.n_scope_spans = 1;
    rs.scope_spans = &ssp;
    Dqotlp__ResourceSpans *rsp = &rs;
    Dqotlp__ExportTraceServiceRequest req = DQOTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
    req.n_resource_spans = 1;
    req.resource_spans = &rsp;
    b->pb_len = dqotlp__export_trace_service_request__get_packed_size(&req);
    b->pb = malloc(b->pb_len);
    dqotlp__export_trace_service_request__pack(&req, b->pb);
    b->json = malloc(jl);
    memcpy(b->json, json, jl);
    b->json_len = jl;
    uLongf gl = compressBound(b->pb_len) + 32;
    b->gz = malloc(gl);
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = b->pb;
    z.avail_in = (uInt)b->pb_len;
    z.next_out = b->gz;
    z.avail_out = (uInt)gl;
    deflate(&z, Z_FINISH);
    b->gz_len = z.total_out;
    deflateEnd(&z);
}

struct line_ctx {
    struct probe_table *t;
    uint32_t origin;
    uint64_t n, rejected;
};

static void on_instance(void *c, const struct wire_msg *m) {
    struct line_ctx *x = c;
    x->n++;
    x->rejected += probes_record_line(x->t, x->origin, m) != 0; /* as ingest_tcp.c */
}

static void on_line(void *c, const char *line, size_t len, int err) {
    struct wire_msg m;
    if (!err && wire_parse(line, len, 0, &m) == WIRE_OK && m.kind == WIRE_INSTANCE) {
        on_instance(c, &m);
    }
}

/* jansson's allocator for the JSON_REF_ARENA path: the arena of the request */
static struct otlp_arena arena;

static void *arena_alloc(size_t n) {
    return otlp_arena_alloc(&arena, n);
}

static void arena_free(void *p) {
    (void)p; /* emptied with the arena */
}

static int64_t store_clock(void *ctx) {
    return clock_now(ctx);
}

int main(int argc, char **argv) {
    int passes = argc > 1 ? atoi(argv[1]) : 15;
    if (passes < 1) {
        fprintf(stderr, "usage: bench_otlp [PASSES]\n");
        return 2;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    /* a core over a real store, its clock held at now: every span's window is open */
    char db[64];
    snprintf(db, sizeof db, "/tmp/bench_otlp_%d.db", (int)getpid());
    store_remove_files(db);
    struct store *store;
    struct clock clock;
    struct clock_manual manual;
    struct core *core;
    clock_init_manual(&clock, &manual, now);
    struct core_options co = {.max_probes = 1000,
                              .window_ns = 1000000000LL,
                              .lag_ns = 10000000000LL,
                              .ring = 60,
                              .default_dmax_ms = 1000,
                              .default_bins = 100};
    if (store_open(db, &store) || (store_set_clock(store, store_clock, &clock), 0) ||
        core_create(&co, store, &clock, &core)) {
        fprintf(stderr, "bench_otlp: %s\n", dq_last_error());
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct otlp *otlp;
    struct otlp_options oo = {.listen = "127.0.0.1:0",
                              .silence_ns = 15000000000LL,
                              .max_body = 8u << 20,
                              .recent_spans = 65536};
    if (otlp_create(&loop, core, &oo, &otlp)) {
        fprintf(stderr, "bench_otlp: %s\n", dq_last_error());
        core_destroy(core);
        store_close(store);
        store_remove_files(db); /* no store file left in /tmp */
        return 1;
    }
    static struct body bodies[REQUESTS];
    size_t lines_cap = (size_t)REQUESTS * BATCH * 80, lines_len = 0;
    char *lines = malloc(lines_cap), *rb = malloc(CHUNK);
    size_t pb_bytes = 0, gz_bytes = 0, json_bytes = 0;
    for (int r = 0; r < REQUESTS; r++) {
        make_request(now, &bodies[r], lines, &lines_len, lines_cap);
        pb_bytes += bodies[r].pb_len;
        gz_bytes += bodies[r].gz_len;
        json_bytes += bodies[r].json_len;
    }
    const double spans = (double)REQUESTS * BATCH;
    struct line_ctx lc = {.t = core_probes(core)};
    probes_origin_open(lc.t, "1 127.0.0.1:5555", "127.0.0.1", "", &lc.origin);
    char split[4096];
    struct wire_splitter sp;
    wire_splitter_init(&sp, split, sizeof split, on_line, &lc);
    struct http_response res;
    http_response_init(&res, 1 << 20);
    otlp_arena_init(&arena, 64u << 20);
    /* the paths, timed in turn in every pass; the best pass of each counts */
    enum { PB, PB_DECODE, PB_REF, GZIP, JSON, JSON_DECODE, JSON_REF, JSON_REF_ARENA, LINES, PATHS };
    double best[PATHS];
    for (int i = 0; i < PATHS; i++) {
        best[i] = 1e30;
    }
    int bad = 0;
    for (int p = 0; p < passes; p++) {
        for (int path = 0; path < PATHS; path++) {
            double t0 = mono_s();
            if (path == LINES) {
                for (size_t at = 0; at < lines_len; at += CHUNK) {
                    size_t k = lines_len - at < CHUNK ? lines_len - at : CHUNK;
                    memcpy(rb, lines + at, k);
                    probes_origin_heard(lc.t, lc.origin, now);
                    wire_splitter_feed_instances(&sp, rb, k, now, on_instance);
                }
            }
            for (int r = 0; r < REQUESTS && path != LINES; r++) {
                const struct body *q = &bodies[r];
                struct otlp_batch b;
                struct ref_batch rf;
                int rc = DQ_OK;
                otlp_arena_reset(&arena);
                switch (path) {
                case PB:
                    otlp_handle_body(otlp, "application/x-protobuf", NULL, NULL, q->pb, q->pb_len,
                                     &res);
                    bad += res.status != 200 || res.len != 0;
                    break;
                case GZIP:
                    otlp_handle_body(otlp, "application/x-protobuf", "gzip", NULL, q->gz, q->gz_len,
                                     &res);
                    bad += res.status != 200;
                    break;
                case JSON:
                    otlp_handle_body(otlp, "application/json", NULL, NULL, (const uint8_t *)q->json,
                                     q->json_len, &res);
                    bad += res.status != 200;
                    break;
                case PB_DECODE:
                case JSON_DECODE:
                    rc = path == PB_DECODE
                             ? otlp_decode_protobuf(&arena, q->pb, q->pb_len, &b)
                             : otlp_decode_json(&arena, (const uint8_t *)q->json, q->json_len, &b);
                    bad += rc != DQ_OK || b.n != BATCH;
                    otlp_batch_release(&b);
                    break;
                default:
                    if (path == JSON_REF_ARENA) { /* jansson allocating from the arena */
                        json_set_alloc_funcs(arena_alloc, arena_free);
                    }
                    rc = path == PB_REF
                             ? ref_decode_protobuf(&arena, q->pb, q->pb_len, &rf)
                             : ref_decode_json(&arena, (const uint8_t *)q->json, q->json_len, &rf);
                    bad += rc != DQ_OK || rf.b.n != BATCH;
                    ref_release(&rf);
                    json_set_alloc_funcs(malloc, free);
                    break;
                }
            }
            double d = mono_s() - t0;
            best[path] = d < best[path] ? d : best[path];
        }
    }
    struct otlp_stats st;
    otlp_get_stats(otlp, &st);
    if (bad || lc.rejected || lc.n != (uint64_t)spans * (uint64_t)passes ||
        st.spans_accepted != 3 * (uint64_t)spans * (uint64_t)passes) {
        fprintf(stderr, "bench_otlp: %d bad answers, %llu lines rejected, %llu lines, %llu spans\n",
                bad, (unsigned long long)lc.rejected, (unsigned long long)lc.n,
                (unsigned long long)st.spans_accepted);
        store_remove_files(db); /* unlinked while open: gone when the process exits */
        return 1;
    }
    double ns[PATHS];
    for (int i = 0; i < PATHS; i++) {
        ns[i] = 1e9 * best[i] / spans;
    }
    double ratio = ns[LINES] / ns[PB], json_rate = 1e3 / ns[JSON];
    printf("bench_otlp: %d requests of %d spans (protobuf %.0f B/span, gzip %.0f, JSON %.0f; "
           "lines %.0f B), best of %d passes, one core\n",
           REQUESTS, BATCH, (double)pb_bytes / spans, (double)gz_bytes / spans,
           (double)json_bytes / spans, (double)lines_len / spans, passes);
    printf("  OTLP protobuf: decode, map, record, answer : %7.1f ns/span  %6.2f M spans/s\n",
           ns[PB], 1e3 / ns[PB]);
    printf("    the decode alone (wire walker)           : %7.1f ns/span\n", ns[PB_DECODE]);
    printf("    protobuf-c's unpack into the arena       : %7.1f ns/span  (%.1fx the walker)\n",
           ns[PB_REF], ns[PB_REF] / ns[PB_DECODE]);
    printf("  OTLP protobuf + gzip                       : %7.1f ns/span  %6.2f M spans/s\n",
           ns[GZIP], 1e3 / ns[GZIP]);
    printf("  OTLP/JSON: decode, map, record, answer     : %7.1f ns/span  %6.2f M spans/s\n",
           ns[JSON], json_rate);
    printf("    the decode alone (streaming parse)       : %7.1f ns/span\n", ns[JSON_DECODE]);
    printf("    jansson's document (json_loadb) and walk : %7.1f ns/span  (%.1fx the parse)\n",
           ns[JSON_REF], ns[JSON_REF] / ns[JSON_DECODE]);
    printf("    the same, jansson allocating in the arena: %7.1f ns/span\n", ns[JSON_REF_ARENA]);
    printf("  line protocol: split, parse, record        : %7.1f ns/line  %6.2f M lines/s\n",
           ns[LINES], 1e3 / ns[LINES]);
    printf("  protobuf / line protocol: %.2f (target >= %.1f); OTLP/JSON %.2f M spans/s (target >= "
           "%.0f): %s\n",
           ratio, TARGET_RATIO, json_rate, TARGET_JSON / 1e6,
           ratio >= TARGET_RATIO && json_rate * 1e6 >= TARGET_JSON ? "PASS" : "FAIL");
    http_response_release(&res);
    otlp_arena_release(&arena);
    otlp_close(otlp, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    core_destroy(core);
    store_close(store);
    store_remove_files(db);
    free(lines);
    free(rb);
    for (int r = 0; r < REQUESTS; r++) {
        free(bodies[r].pb);
        free(bodies[r].gz);
        free(bodies[r].json);
    }
    return 0;
}
