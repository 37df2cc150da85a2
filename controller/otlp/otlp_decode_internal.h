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

/* The longest service.name taken (bytes): a longer one refuses its spans. */
#define OTLP_SERVICE_MAX 255

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

/* Counts a span left out for why (the first reason is kept for partial_success). */
void otlp_span_reject(struct otlp_batch *b, const char *why);

/* What otlp_text_check finds in a name. */
enum { OTLP_TEXT_OK = 0, OTLP_TEXT_NUL = 1, OTLP_TEXT_NOT_UTF8 = 2 };

/* otlp_text_check for any text: the byte-by-byte walk. */
int otlp_text_check_utf8(const char *s, size_t n);

/* 1 when no byte of w is zero or above 0x7f. */
static inline int otlp_word_ascii(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    return !((w | ((w - ones) & ~w)) & highs);
}

/* Whether the n bytes at s are UTF-8 (no overlong form, no surrogate, nothing above
 * U+10FFFF) without a NUL byte: OTLP_TEXT_OK, else the first fault's kind (a NUL before a
 * byte that is not UTF-8 is OTLP_TEXT_NUL). Inline for the usual case, ASCII without a
 * NUL, read a word at a time (the last word overlapping the one before, a short text in
 * two overlapping halves) without touching a byte outside [s, s + n). */
static inline int otlp_text_check(const char *s, size_t n) {
    uint64_t w;
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            if (!otlp_word_ascii(w)) {
                return otlp_text_check_utf8(s, n);
            }
        }
        memcpy(&w, s + n - 8, 8);
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        w = (uint64_t)lo << 32 | hi;
    } else if (n > 0) {
        const unsigned char *u = (const unsigned char *)s;
        w = 0x0101010101010101ULL ^ 0x01 ^ 0x0100 ^ 0x010000; /* the other bytes: 1 */
        w |= (uint64_t)u[0] | (uint64_t)u[n / 2] << 8 | (uint64_t)u[n - 1] << 16;
    } else {
        return OTLP_TEXT_OK;
    }
    return otlp_word_ascii(w) ? OTLP_TEXT_OK : otlp_text_check_utf8(s, n);
}

/*
 * Checks a decoded span: 1 when it can be recorded, else 0 with the span counted in
 * b->rejected. trace_len, span_len and parent_len are the id lengths as sent; keys_text is
 * otlp_text_check's worst verdict on the span's attribute keys (OTLP_TEXT_OK when none).
 * A service name, span name or attribute key that holds a NUL byte or is not UTF-8 refuses
 * the span (docs/otlp.md, "The text of a span").
 */
static inline int otlp_span_check(struct otlp_batch *b, struct otlp_span *s, size_t trace_len,
                                  size_t span_len, size_t parent_len, int keys_text) {
    int name_text = otlp_text_check(s->name, s->name_len);
    int svc_text = otlp_text_check(s->service, s->service_len);
    if (name_text == OTLP_TEXT_NUL) {
        otlp_span_reject(b, "a span's name holds a NUL byte");
    } else if (name_text) {
        otlp_span_reject(b, "a span's name is not UTF-8");
    } else if (svc_text == OTLP_TEXT_NUL) {
        otlp_span_reject(b, "a span's service.name holds a NUL byte");
    } else if (svc_text) {
        otlp_span_reject(b, "a span's service.name is not UTF-8");
    } else if (s->service_len > OTLP_SERVICE_MAX) {
        otlp_span_reject(b, "a span's service.name is longer than 255 bytes");
    } else if (keys_text == OTLP_TEXT_NUL) {
        otlp_span_reject(b, "a span's attribute key holds a NUL byte");
    } else if (keys_text) {
        otlp_span_reject(b, "a span's attribute key is not UTF-8");
    } else if (trace_len != 16 || otlp_all_zero(s->trace_id, 16)) {
        otlp_span_reject(b, "a span's trace_id is not 16 bytes, or all zero");
    } else if (span_len != 8 || otlp_all_zero(s->span_id, 8)) {
        otlp_span_reject(b, "a span's span_id is not 8 bytes, or all zero");
    } else if (parent_len != 0 && parent_len != 8) {
        otlp_span_reject(b, "a span's parent_span_id is neither empty nor 8 bytes");
    } else if (s->name_len == 0) {
        otlp_span_reject(b, "a span has no name");
    } else if (s->start_ns <= 0 || s->end_ns < s->start_ns) {
        otlp_span_reject(b, "a span ends before it starts, or has no start time");
    } else {
        return 1;
    }
    return 0;
}

/* The span array of a batch of total spans, in a; NULL (dq_fail: DQ_EFULL) past its cap. */
struct otlp_span *otlp_span_array(struct otlp_arena *a, size_t total);

/* otlp_span_slot when the array is full: grows it (first spans at first, then twice as
 * many). NULL (dq_fail: DQ_EFULL) past the arena's cap. */
struct otlp_span *otlp_span_grow(struct otlp_arena *a, struct otlp_batch *b, size_t *cap,
                                 size_t first);

/* The slot of the next span of b (b->n) in its array of *cap, grown in a when full. */
static inline struct otlp_span *otlp_span_slot(struct otlp_arena *a, struct otlp_batch *b,
                                               size_t *cap, size_t first) {
    return b->n < *cap ? &b->spans[b->n] : otlp_span_grow(a, b, cap, first);
}

/* otlp_span_attr for each format: the text of attribute key in buf, 1 when found. */
int otlp_pb_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);
int otlp_json_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);

#endif /* DQ_OTLP_DECODE_INTERNAL_H */
