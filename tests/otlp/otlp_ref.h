/*
 * otlp_ref.h: the reference the OTLP decoders are compared with (test_otlp_diff, the two
 * fuzz targets, bench_otlp): protobuf-c's full unpack of otlp_trace.proto into the arena,
 * and jansson's document (json_loadb with JSON_REJECT_DUPLICATES), read into the same
 * flat spans as controller/otlp's decoders deliver.
 */
#ifndef DQ_OTLP_REF_H
#define DQ_OTLP_REF_H

#include <stddef.h>
#include <stdint.h>

#include "otlp.h"

/* A reference batch: the spans, and the document they point into. */
struct ref_batch {
    struct otlp_batch b;
    void *msg;  /* protobuf-c's ExportTraceServiceRequest (in the arena) */
    void *json; /* jansson's document (freed by ref_release) */
};

/* As otlp_decode_protobuf and otlp_decode_json, through protobuf-c and jansson. */
int ref_decode_protobuf(struct otlp_arena *a, const uint8_t *body, size_t len, struct ref_batch *r);
int ref_decode_json(struct otlp_arena *a, const uint8_t *body, size_t len, struct ref_batch *r);

/* otlp_span_attr for a span of a reference batch. */
int ref_span_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);

void ref_release(struct ref_batch *r);

/*
 * Decodes body (json: OTLP/JSON, else protobuf) with the decoder of controller/otlp into
 * a and with the reference into ra, and compares: the same refusal (DQ_EPARSE or DQ_OK),
 * and when accepted the same spans (service, name, ids, parent, times, status), the same
 * rejected count and reason, the same text for every attribute key either has (at two
 * buffer sizes). Returns 0 when the same or when the reference ran out of arena
 * (DQ_EFULL: nothing to compare), else 1 with what differs in why.
 */
int ref_compare(struct otlp_arena *a, struct otlp_arena *ra, const uint8_t *body, size_t len,
                int json, char *why, size_t cap);

#endif /* DQ_OTLP_REF_H */
