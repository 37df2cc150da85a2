/*
 * otlp_decode_internal.h: what the decoders of otlp/ share, private to the module (and to
 * the reference decoders of tests/otlp/ that the differential tests compare them with).
 * The public contracts are in otlp.h.
 */
#ifndef DQ_OTLP_DECODE_INTERNAL_H
#define DQ_OTLP_DECODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "otlp.h"

/* The service of spans whose resource has no service.name. */
#define OTLP_UNKNOWN_SERVICE "unknown_service"

/*
 * Checks a decoded span: 1 when it can be recorded, else 0 with the span counted in
 * b->rejected (the first reason kept). trace_len, span_len and parent_len are the id
 * lengths as sent. The place for checks of a span's text (UTF-8, NUL bytes) too.
 */
int otlp_span_check(struct otlp_batch *b, struct otlp_span *s, size_t trace_len, size_t span_len,
                    size_t parent_len);

/* 1 when the n bytes at p are all zero. */
static inline int otlp_all_zero(const uint8_t *p, size_t n) {
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        any |= w;
    }
    for (; i < n; i++) {
        any |= p[i];
    }
    return any == 0;
}

/* The span array of a batch of total spans, in a; NULL (dq_fail: DQ_EFULL) past its cap. */
struct otlp_span *otlp_span_array(struct otlp_arena *a, size_t total);

/* The slot of the next span of b (b->n), the span array grown in a when it is full (first
 * spans at first, then twice as many); *cap is its size. NULL (dq_fail: DQ_EFULL) past the
 * arena's cap. */
struct otlp_span *otlp_span_slot(struct otlp_arena *a, struct otlp_batch *b, size_t *cap,
                                 size_t first);

/* otlp_span_attr for each format: the text of attribute key in buf, 1 when found. */
int otlp_pb_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);
int otlp_json_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);

#endif /* DQ_OTLP_DECODE_INTERNAL_H */
