/*
 * bench_otlp_nanopb.c: the protobuf decoders compared on one body, in the same run: the
 * wire walker (otlp_decode_protobuf), protobuf-c's unpack into the arena (the reference,
 * otlp_ref.c) and nanopb with callbacks (docs/otlp.md §9, "The options"). Each fills the
 * same flat spans in the arena. Not built by default: `make bench-nanopb` installs nanopb
 * and libnanopb-dev, configures with -DDQD_BENCH_NANOPB=ON, and runs it on
 * tests/corpus/otlp_protobuf/sdk_512_spans.bin (512 spans as bench_otlp makes them).
 *
 * The nanopb decoder is for the measurement only: ids, keys and attribute values decode
 * into fixed arrays (nanopb/otlp_trace.options), so a longer one fails the body where
 * protobuf-c and the walker do not, and a resource sent after its spans is not seen.
 *
 * run: bench_otlp_nanopb [BODY [PASSES]]   (default: that corpus file, 15 passes)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pb_decode.h>

#include "otlp.h"
#include "otlp_decode_internal.h"
#include "otlp_ref.h"
#include "otlp_trace.pb.h"

#define ROUNDS 64 /* decodes of the body per pass and decoder */

struct ctx {
    struct otlp_arena *a;
    struct otlp_batch *b;
    size_t cap;
    const char *svc;
    size_t svc_n;
};

/* A span's attribute: decoded (checked), not kept. */
static bool on_attribute(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    (void)arg;
    dqotlp_KeyValue kv = dqotlp_KeyValue_init_zero;
    return pb_decode(s, dqotlp_KeyValue_fields, &kv);
}

/* A resource's attribute: its service.name copied into the arena. */
static bool on_resource_attribute(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    struct ctx *c = *arg;
    dqotlp_KeyValue kv = dqotlp_KeyValue_init_zero;
    if (!pb_decode(s, dqotlp_KeyValue_fields, &kv)) {
        return false;
    }
    if (strcmp(kv.key, "service.name") == 0 && kv.has_value &&
        kv.value.which_value == dqotlp_AnyValue_string_value_tag &&
        kv.value.value.string_value[0]) {
        size_t n = strlen(kv.value.value.string_value);
        char *p = otlp_arena_alloc(c->a, n);
        if (!p) {
            return false;
        }
        memcpy(p, kv.value.value.string_value, n);
        c->svc = p;
        c->svc_n = n;
    }
    return true;
}

/* A span's name: where it is in the body (a buffer stream's state is its position). */
static bool on_name(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    struct otlp_span *sp = *arg;
    sp->name = (const char *)s->state;
    sp->name_len = s->bytes_left;
    return pb_read(s, NULL, s->bytes_left);
}

static bool on_span(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    struct ctx *c = *arg;
    struct otlp_span *sp = otlp_span_slot(c->a, c->b, &c->cap, 512);
    if (!sp) {
        return false;
    }
    dqotlp_Span m = dqotlp_Span_init_zero;
    sp->name = "";
    sp->name_len = 0;
    m.name.funcs.decode = on_name;
    m.name.arg = sp;
    m.attributes.funcs.decode = on_attribute;
    if (!pb_decode(s, dqotlp_Span_fields, &m)) {
        return false;
    }
    if (m.trace_id.size == 16) {
        memcpy(sp->trace_id, m.trace_id.bytes, 16);
    }
    if (m.span_id.size == 8) {
        memcpy(sp->span_id, m.span_id.bytes, 8);
    }
    if (m.parent_span_id.size == 8) {
        memcpy(sp->parent_id, m.parent_span_id.bytes, 8);
    }
    sp->has_parent = m.parent_span_id.size == 8 && !otlp_all_zero(sp->parent_id, 8);
    sp->start_ns = m.start_time_unix_nano > INT64_MAX ? -1 : (int64_t)m.start_time_unix_nano;
    sp->end_ns = m.end_time_unix_nano > INT64_MAX ? -1 : (int64_t)m.end_time_unix_nano;
    sp->status = m.has_status ? m.status.code : 0;
    sp->service = c->svc;
    sp->service_len = c->svc_n;
    sp->json = 0;
    if (otlp_span_check(c->b, sp, m.trace_id.size, m.span_id.size, m.parent_span_id.size,
                        OTLP_TEXT_OK)) {
        c->b->n++;
    }
    return true;
}

static bool on_scope_spans(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    dqotlp_ScopeSpans m = dqotlp_ScopeSpans_init_zero;
    m.spans.funcs.decode = on_span;
    m.spans.arg = *arg;
    return pb_decode(s, dqotlp_ScopeSpans_fields, &m);
}

static bool on_resource_spans(pb_istream_t *s, const pb_field_t *f, void **arg) {
    (void)f;
    struct ctx *c = *arg;
    c->svc = "unknown_service";
    c->svc_n = 15;
    dqotlp_ResourceSpans m = dqotlp_ResourceSpans_init_zero;
    m.resource.attributes.funcs.decode = on_resource_attribute;
    m.resource.attributes.arg = c;
    m.scope_spans.funcs.decode = on_scope_spans;
    m.scope_spans.arg = c;
    return pb_decode(s, dqotlp_ResourceSpans_fields, &m);
}

static int nanopb_decode(struct otlp_arena *a, const uint8_t *body, size_t len,
                         struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
    struct ctx c = {a, b, 0, NULL, 0};
    dqotlp_ExportTraceServiceRequest m = dqotlp_ExportTraceServiceRequest_init_zero;
    m.resource_spans.funcs.decode = on_resource_spans;
    m.resource_spans.arg = &c;
    pb_istream_t s = pb_istream_from_buffer(body, len);
    return pb_decode(&s, dqotlp_ExportTraceServiceRequest_fields, &m) ? DQ_OK : DQ_EPARSE;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int passes = argc > 2 ? atoi(argv[2]) : 15;
    FILE *f = fopen(argc > 1 ? argv[1] : DQ_NANOPB_BODY, "rb");
    if (!f || passes < 1) {
        fprintf(stderr, "usage: bench_otlp_nanopb [BODY [PASSES]]\n");
        return 2;
    }
    static uint8_t body[8u << 20];
    size_t len = fread(body, 1, sizeof body, f);
    fclose(f);
    struct otlp_arena a;
    otlp_arena_init(&a, 256u << 20);
    enum { WALKER, PROTOBUF_C, NANOPB, N };
    static const char *const names[N] = {"the wire walker (chosen)", "protobuf-c's unpack",
                                         "nanopb with callbacks"};
    double best[N] = {1e30, 1e30, 1e30};
    size_t spans[N] = {0};
    for (int p = 0; p < passes; p++) {
        for (int d = 0; d < N; d++) {
            double t0 = mono_s();
            for (int r = 0; r < ROUNDS; r++) {
                struct otlp_batch b;
                struct ref_batch rb;
                int rc;
                otlp_arena_reset(&a);
                if (d == PROTOBUF_C) {
                    rc = ref_decode_protobuf(&a, body, len, &rb);
                    spans[d] = rb.b.n;
                    ref_release(&rb);
                } else {
                    rc = d == WALKER ? otlp_decode_protobuf(&a, body, len, &b)
                                     : nanopb_decode(&a, body, len, &b);
                    spans[d] = b.n;
                }
                if (rc != DQ_OK) {
                    fprintf(stderr, "bench_otlp_nanopb: %s refused the body\n", names[d]);
                    return 1;
                }
            }
            double t = mono_s() - t0;
            best[d] = t < best[d] ? t : best[d];
        }
    }
    if (spans[NANOPB] != spans[WALKER] || spans[PROTOBUF_C] != spans[WALKER] || !spans[WALKER]) {
        fprintf(stderr, "bench_otlp_nanopb: %zu, %zu and %zu spans\n", spans[0], spans[1],
                spans[2]);
        return 1;
    }
    printf("bench_otlp_nanopb: %zu bytes, %zu spans, best of %d passes of %d decodes, one core\n",
           len, spans[WALKER], passes, ROUNDS);
    for (int d = 0; d < N; d++) {
        double ns = best[d] * 1e9 / ((double)ROUNDS * (double)spans[d]);
        printf("  %-28s: %7.1f ns/span  (%.1fx the walker)\n", names[d], ns,
               best[d] / best[WALKER]);
    }
    otlp_arena_release(&a);
    return 0;
}
