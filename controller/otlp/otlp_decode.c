/*
 * otlp_decode.c: what the two decoders share: the arena, gzip, the checks of a decoded
 * span, the attribute lookup. The decoders are otlp_pb.c (protobuf) and otlp_json.c
 * (OTLP/JSON). No I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "otlp.h"
#include "otlp_decode_internal.h"

/* ---- the arena ------------------------------------------------------------------------ */

struct otlp_chunk {
    struct otlp_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK (256u << 10) /* the first chunk; later ones double */
#define ARENA_KEEP (16u << 20)   /* a chunk up to this size is kept for the next request */

void otlp_arena_init(struct otlp_arena *a, size_t cap) {
    memset(a, 0, sizeof *a);
    a->cap = cap;
}

void *otlp_arena_alloc(struct otlp_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) {
        n = 16;
    }
    if (a->exhausted || n > a->cap - a->used || a->used > a->cap) {
        a->exhausted = 1;
        return NULL;
    }
    struct otlp_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = c ? c->size * 2 : ARENA_CHUNK;
        while (size < n) {
            size *= 2;
        }
        struct otlp_chunk *nc = malloc(sizeof *nc + size);
        if (!nc) {
            a->exhausted = 1;
            return NULL;
        }
        nc->size = size;
        nc->used = 0;
        nc->next = c;
        a->head = c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used += n;
    return p;
}

void otlp_arena_reset(struct otlp_arena *a) {
    /* keep the newest (largest) chunk, unless a huge request grew it: the next request
     * fills it before asking for more */
    struct otlp_chunk *c = a->head;
    if (c && c->size > ARENA_KEEP) {
        otlp_arena_release(a);
        c = NULL;
    }
    if (c) {
        struct otlp_chunk *rest = c->next;
        while (rest) {
            struct otlp_chunk *n = rest->next;
            free(rest);
            rest = n;
        }
        c->next = NULL;
        c->used = 0;
    }
    a->used = 0;
    a->exhausted = 0;
}

void otlp_arena_release(struct otlp_arena *a) {
    struct otlp_chunk *c = a->head;
    while (c) {
        struct otlp_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used = 0;
}

/* ---- gzip -------------------------------------------------------------------------------- */

int otlp_inflate(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    *out_len = 0;
    if (inflateInit2(&z, 15 + 32) != Z_OK) { /* 32: gzip or zlib header, detected */
        return dq_fail(DQ_ENOMEM, "cannot start inflating the body");
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
    z.next_out = out;
    z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
    int rc = inflate(&z, Z_FINISH);
    size_t produced = z.total_out;
    int result = DQ_OK;
    if (rc == Z_STREAM_END) {
        if (z.avail_in != 0) {
            result =
                dq_fail(DQ_EPARSE, "gzip body: %u bytes after the end of the stream", z.avail_in);
        }
    } else if ((rc == Z_BUF_ERROR || rc == Z_OK) && z.avail_out == 0) {
        result = dq_fail(DQ_EFULL, "the body inflates to more than %zu bytes", cap);
    } else if (rc == Z_BUF_ERROR) {
        result = dq_fail(DQ_EPARSE, "gzip body: truncated after %lu bytes", z.total_in);
    } else {
        result = dq_fail(DQ_EPARSE, "gzip body: %s", z.msg ? z.msg : "corrupt stream");
    }
    inflateEnd(&z);
    *out_len = result == DQ_OK ? produced : 0;
    return result;
}

/* ---- common ---------------------------------------------------------------------------- */

void otlp_batch_release(struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
}

int otlp_text_check_utf8(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* eight bytes at a time while they are ASCII and none is zero */
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!otlp_word_ascii(w)) {
                break;
            }
        }
        if (i >= n) {
            break;
        }
        unsigned c = p[i];
        if (c == 0) {
            return OTLP_TEXT_NUL;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                     : c >= 0xe0 && c <= 0xef ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
        if (len == 0 || i + len > n) {
            return OTLP_TEXT_NOT_UTF8;
        }
        unsigned c1 = p[i + 1];
        /* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
        unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
        unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        if (c1 < lo || c1 > hi) {
            return OTLP_TEXT_NOT_UTF8;
        }
        for (size_t k = 2; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return OTLP_TEXT_NOT_UTF8;
            }
        }
        i += len;
    }
    return OTLP_TEXT_OK;
}

void otlp_span_reject(struct otlp_batch *b, const char *why) {
    if (b->rejected++ == 0) {
        snprintf(b->reason, sizeof b->reason, "%s", why);
    }
}

struct otlp_span *otlp_span_array(struct otlp_arena *a, size_t total) {
    struct otlp_span *s = NULL;
    if (total <= (SIZE_MAX >> 1) / sizeof *s) {
        s = otlp_arena_alloc(a, (total ? total : 1) * sizeof *s);
    }
    if (!s) {
        dq_fail(DQ_EFULL, "the request decodes to more than %zu bytes", a->cap);
    }
    return s;
}

struct otlp_span *otlp_span_grow(struct otlp_arena *a, struct otlp_batch *b, size_t *cap,
                                 size_t first) {
    size_t n = *cap ? 2 * *cap : first;
    struct otlp_span *s = otlp_span_array(a, n);
    if (!s) {
        return NULL;
    }
    if (b->n) {
        memcpy(s, b->spans, b->n * sizeof *s);
    }
    b->spans = s;
    *cap = n;
    return &b->spans[b->n];
}

int otlp_span_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap) {
    return s->json ? otlp_json_attr(s, key, buf, cap) : otlp_pb_attr(s, key, buf, cap);
}
