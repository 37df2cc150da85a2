/*
 * otlp_decode.c: request bodies to spans. The arena, gzip, the protobuf decoder (protobuf-c
 * generated at build time from otlp_trace.proto, allocating through the arena) and the
 * OTLP/JSON decoder (jansson). No I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "otlp.h"
#include "otlp_trace.pb-c.h"

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

static void *pb_alloc(void *data, size_t size) {
    return otlp_arena_alloc(data, size);
}

static void pb_free(void *data, void *ptr) {
    (void)data;
    (void)ptr; /* the arena is emptied as a whole */
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
    if (b->json) {
        json_decref(b->json);
    }
    memset(b, 0, sizeof *b);
}

static void reject(struct otlp_batch *b, const char *why) {
    if (b->rejected++ == 0) {
        snprintf(b->reason, sizeof b->reason, "%s", why);
    }
}

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (p[i]) {
            return 0;
        }
    }
    return 1;
}

/* Checks a decoded span; 1 when it can be recorded, else counts it rejected. */
static int span_valid(struct otlp_batch *b, const struct otlp_span *s, size_t trace_len,
                      size_t span_len, size_t parent_len) {
    if (trace_len != 16 || all_zero(s->trace_id, 16)) {
        reject(b, "a span's trace_id is not 16 bytes, or all zero");
    } else if (span_len != 8 || all_zero(s->span_id, 8)) {
        reject(b, "a span's span_id is not 8 bytes, or all zero");
    } else if (parent_len != 0 && parent_len != 8) {
        reject(b, "a span's parent_span_id is neither empty nor 8 bytes");
    } else if (s->name_len == 0) {
        reject(b, "a span has no name");
    } else if (s->start_ns <= 0 || s->end_ns < s->start_ns) {
        reject(b, "a span ends before it starts, or has no start time");
    } else {
        return 1;
    }
    return 0;
}

static const char UNKNOWN_SERVICE[] = "unknown_service";

/* ---- protobuf ----------------------------------------------------------------------------- */

static void pb_service(const Dqotlp__Resource *r, const char **name, size_t *len) {
    *name = UNKNOWN_SERVICE;
    *len = sizeof UNKNOWN_SERVICE - 1;
    for (size_t i = 0; r && i < r->n_attributes; i++) {
        const Dqotlp__KeyValue *kv = r->attributes[i];
        if (kv->key && strcmp(kv->key, "service.name") == 0 && kv->value &&
            kv->value->value_case == DQOTLP__ANY_VALUE__VALUE_STRING_VALUE &&
            kv->value->string_value[0]) {
            *name = kv->value->string_value;
            *len = strlen(*name);
        }
    }
}

int otlp_decode_protobuf(struct otlp_arena *a, const uint8_t *body, size_t len,
                         struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
    ProtobufCAllocator al = {.alloc = pb_alloc, .free = pb_free, .allocator_data = a};
    Dqotlp__ExportTraceServiceRequest *req =
        dqotlp__export_trace_service_request__unpack(&al, len, body);
    if (!req) {
        if (a->exhausted) {
            return dq_fail(DQ_EFULL, "the request decodes to more than %zu bytes", a->cap);
        }
        return dq_fail(DQ_EPARSE, "the body is not a protobuf ExportTraceServiceRequest "
                                  "(malformed, truncated or wrongly typed fields)");
    }
    size_t total = 0;
    for (size_t i = 0; i < req->n_resource_spans; i++) {
        const Dqotlp__ResourceSpans *rs = req->resource_spans[i];
        for (size_t j = 0; j < rs->n_scope_spans; j++) {
            total += rs->scope_spans[j]->n_spans;
        }
    }
    b->spans = otlp_arena_alloc(a, (total ? total : 1) * sizeof *b->spans);
    if (!b->spans) {
        return dq_fail(DQ_EFULL, "the request decodes to more than %zu bytes", a->cap);
    }
    for (size_t i = 0; i < req->n_resource_spans; i++) {
        const Dqotlp__ResourceSpans *rs = req->resource_spans[i];
        const char *svc;
        size_t svc_len;
        pb_service(rs->resource, &svc, &svc_len);
        for (size_t j = 0; j < rs->n_scope_spans; j++) {
            const Dqotlp__ScopeSpans *ss = rs->scope_spans[j];
            for (size_t k = 0; k < ss->n_spans; k++) {
                const Dqotlp__Span *sp = ss->spans[k];
                struct otlp_span *s = &b->spans[b->n];
                s->service = svc;
                s->service_len = svc_len;
                s->name = sp->name;
                s->name_len = strlen(sp->name);
                if (sp->trace_id.len == 16) {
                    memcpy(s->trace_id, sp->trace_id.data, 16);
                }
                if (sp->span_id.len == 8) {
                    memcpy(s->span_id, sp->span_id.data, 8);
                }
                if (sp->parent_span_id.len == 8) {
                    memcpy(s->parent_id, sp->parent_span_id.data, 8);
                }
                s->has_parent = sp->parent_span_id.len == 8 && !all_zero(s->parent_id, 8);
                s->start_ns =
                    sp->start_time_unix_nano > INT64_MAX ? -1 : (int64_t)sp->start_time_unix_nano;
                s->end_ns =
                    sp->end_time_unix_nano > INT64_MAX ? -1 : (int64_t)sp->end_time_unix_nano;
                s->status = sp->status ? sp->status->code : 0;
                s->attrs = sp->attributes;
                s->n_attrs = sp->n_attributes;
                s->res_attrs = rs->resource ? rs->resource->attributes : NULL;
                s->n_res_attrs = rs->resource ? rs->resource->n_attributes : 0;
                s->json = 0;
                if (span_valid(b, s, sp->trace_id.len, sp->span_id.len, sp->parent_span_id.len)) {
                    b->n++;
                }
            }
        }
    }
    return DQ_OK;
}

/* ---- JSON ----------------------------------------------------------------------------------- */

/* The member key of obj; NULL when absent or null. Wrong types are checked by callers. */
static json_t *member(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static int hexval(int c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A hex id of n bytes into out; returns the bytes decoded (0 for "" or absent), or −1 for
 * a malformed string (odd length, not hex, too long). */
static int hex_id(json_t *v, uint8_t *out, size_t n) {
    if (!v) {
        return 0;
    }
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (!s || len % 2 != 0 || len / 2 > n) {
        return -1;
    }
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval((unsigned char)s[2 * i]), lo = hexval((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (int)(len / 2);
}

/* A 64-bit unsigned time: a decimal string or a non-negative integer. 0 when absent; −1 on a
 * wrong type or text. */
static int64_t json_nanos(json_t *v) {
    if (!v) {
        return 0;
    }
    if (json_is_integer(v)) {
        return json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
    }
    const char *s = json_string_value(v);
    if (!s || !s[0] || json_string_length(v) > 20) {
        return -1;
    }
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || x > (UINT64_MAX - 9) / 10) {
            return -1;
        }
        x = x * 10 + (uint64_t)(*p - '0');
    }
    return x > INT64_MAX ? -1 : (int64_t)x;
}

/* The status code: an integer, or the enum's name. −1 when malformed. */
static int json_status(json_t *st) {
    if (!st) {
        return 0;
    }
    if (!json_is_object(st)) {
        return -1;
    }
    json_t *c = member(st, "code");
    if (!c) {
        return 0;
    }
    if (json_is_integer(c)) {
        return (int)(json_integer_value(c) & 0x7fffffff);
    }
    const char *s = json_string_value(c);
    if (!s) {
        return -1;
    }
    return strcmp(s, "STATUS_CODE_ERROR") == 0 ? 2 : strcmp(s, "STATUS_CODE_OK") == 0 ? 1 : 0;
}

static int json_fail(const char *where, const char *want) {
    return dq_fail(DQ_EPARSE, "OTLP/JSON: %s must be %s", where, want);
}

/* The attribute value of a JSON AnyValue as text. */
static int json_any_text(json_t *val, char *buf, size_t cap) {
    json_t *v;
    if ((v = member(val, "stringValue")) && json_is_string(v)) {
        snprintf(buf, cap, "%s", json_string_value(v));
    } else if ((v = member(val, "intValue"))) {
        if (json_is_integer(v)) {
            snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        } else if (json_is_string(v)) {
            snprintf(buf, cap, "%s", json_string_value(v));
        } else {
            return 0;
        }
    } else if ((v = member(val, "boolValue")) && json_is_boolean(v)) {
        snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
    } else if ((v = member(val, "doubleValue")) && json_is_number(v)) {
        snprintf(buf, cap, "%.17g", json_number_value(v));
    } else {
        return 0;
    }
    return 1;
}

static void json_service(json_t *attrs, const char **name, size_t *len) {
    size_t i;
    json_t *kv;
    *name = UNKNOWN_SERVICE;
    *len = sizeof UNKNOWN_SERVICE - 1;
    json_array_foreach(attrs, i, kv) {
        const char *k = json_string_value(member(kv, "key"));
        json_t *sv = member(member(kv, "value"), "stringValue");
        if (k && strcmp(k, "service.name") == 0 && json_is_string(sv) && json_string_length(sv)) {
            *name = json_string_value(sv);
            *len = json_string_length(sv);
        }
    }
}

/* Checks that v, when present, is an array; else fails naming where. */
#define WANT_ARRAY(v, where)                                                                       \
    do {                                                                                           \
        if ((v) && !json_is_array(v)) {                                                            \
            return json_fail(where, "an array");                                                   \
        }                                                                                          \
    } while (0)
#define WANT_OBJECT(v, where)                                                                      \
    do {                                                                                           \
        if (!json_is_object(v)) {                                                                  \
            return json_fail(where, "an object");                                                  \
        }                                                                                          \
    } while (0)

static int json_span(struct otlp_batch *b, json_t *sp, const char *svc, size_t svc_len,
                     json_t *res_attrs) {
    WANT_OBJECT(sp, "a span");
    struct otlp_span *s = &b->spans[b->n];
    memset(s, 0, sizeof *s);
    json_t *name = member(sp, "name"), *attrs = member(sp, "attributes");
    if (name && !json_is_string(name)) {
        return json_fail("span.name", "a string");
    }
    WANT_ARRAY(attrs, "span.attributes");
    int tl = hex_id(member(sp, "traceId"), s->trace_id, 16);
    int sl = hex_id(member(sp, "spanId"), s->span_id, 8);
    int pl = hex_id(member(sp, "parentSpanId"), s->parent_id, 8);
    if (tl < 0 || sl < 0 || pl < 0) {
        return json_fail("traceId, spanId and parentSpanId", "hex strings (32, 16, 16 digits)");
    }
    s->start_ns = json_nanos(member(sp, "startTimeUnixNano"));
    s->end_ns = json_nanos(member(sp, "endTimeUnixNano"));
    if (s->start_ns < 0 || s->end_ns < 0) {
        return json_fail("startTimeUnixNano and endTimeUnixNano",
                         "decimal strings or integers of nanoseconds");
    }
    s->status = json_status(member(sp, "status"));
    if (s->status < 0) {
        return json_fail("span.status", "an object with an integer code");
    }
    s->service = svc;
    s->service_len = svc_len;
    s->name = name ? json_string_value(name) : "";
    s->name_len = name ? json_string_length(name) : 0;
    s->has_parent = pl == 8 && !all_zero(s->parent_id, 8);
    s->attrs = attrs;
    s->n_attrs = attrs ? json_array_size(attrs) : 0;
    s->res_attrs = res_attrs;
    s->n_res_attrs = res_attrs ? json_array_size(res_attrs) : 0;
    s->json = 1;
    if (span_valid(b, s, (size_t)tl, (size_t)sl, (size_t)pl)) {
        b->n++;
    }
    return DQ_OK;
}

static int json_walk(struct otlp_batch *b, json_t *root, int count_only, size_t *total) {
    WANT_OBJECT(root, "the body");
    json_t *rss = member(root, "resourceSpans");
    WANT_ARRAY(rss, "resourceSpans");
    size_t i, j, k;
    json_t *rs, *ss, *sp;
    json_array_foreach(rss, i, rs) {
        WANT_OBJECT(rs, "resourceSpans[]");
        json_t *res = member(rs, "resource"), *res_attrs = NULL;
        if (res) {
            WANT_OBJECT(res, "resource");
            res_attrs = member(res, "attributes");
            WANT_ARRAY(res_attrs, "resource.attributes");
        }
        const char *svc;
        size_t svc_len;
        json_service(res_attrs, &svc, &svc_len);
        json_t *sss = member(rs, "scopeSpans");
        WANT_ARRAY(sss, "scopeSpans");
        json_array_foreach(sss, j, ss) {
            WANT_OBJECT(ss, "scopeSpans[]");
            json_t *spans = member(ss, "spans");
            WANT_ARRAY(spans, "spans");
            if (count_only) {
                *total += spans ? json_array_size(spans) : 0;
                continue;
            }
            json_array_foreach(spans, k, sp) {
                int rc = json_span(b, sp, svc, svc_len, res_attrs);
                if (rc) {
                    return rc;
                }
            }
        }
    }
    return DQ_OK;
}

int otlp_decode_json(struct otlp_arena *a, const uint8_t *body, size_t len, struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
    json_error_t err;
    b->json = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &err);
    if (!b->json) {
        return dq_fail(DQ_EPARSE, "OTLP/JSON: line %d column %d: %s", err.line, err.column,
                       err.text);
    }
    size_t total = 0;
    int rc = json_walk(b, b->json, 1, &total);
    if (rc) {
        return rc;
    }
    b->spans = otlp_arena_alloc(a, (total ? total : 1) * sizeof *b->spans);
    if (!b->spans) {
        return dq_fail(DQ_EFULL, "the request decodes to more than %zu bytes", a->cap);
    }
    return json_walk(b, b->json, 0, &total);
}

/* ---- attributes --------------------------------------------------------------------------- */

static int pb_find(const void *arr, size_t n, const char *key, char *buf, size_t cap) {
    Dqotlp__KeyValue *const *kvs = arr;
    for (size_t i = 0; i < n; i++) {
        const Dqotlp__KeyValue *kv = kvs[i];
        if (!kv->key || strcmp(kv->key, key) != 0 || !kv->value) {
            continue;
        }
        const Dqotlp__AnyValue *v = kv->value;
        switch (v->value_case) {
        case DQOTLP__ANY_VALUE__VALUE_STRING_VALUE:
            snprintf(buf, cap, "%s", v->string_value);
            return 1;
        case DQOTLP__ANY_VALUE__VALUE_INT_VALUE:
            snprintf(buf, cap, "%lld", (long long)v->int_value);
            return 1;
        case DQOTLP__ANY_VALUE__VALUE_BOOL_VALUE:
            snprintf(buf, cap, "%s", v->bool_value ? "true" : "false");
            return 1;
        case DQOTLP__ANY_VALUE__VALUE_DOUBLE_VALUE:
            snprintf(buf, cap, "%.17g", v->double_value);
            return 1;
        default:
            return 0;
        }
    }
    return 0;
}

static int json_find(const void *arr, const char *key, char *buf, size_t cap) {
    size_t i;
    json_t *kv;
    json_array_foreach((json_t *)(uintptr_t)arr, i, kv) {
        const char *k = json_string_value(member(kv, "key"));
        if (k && strcmp(k, key) == 0) {
            return json_any_text(member(kv, "value"), buf, cap);
        }
    }
    return 0;
}

int otlp_span_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap) {
    if (s->json) {
        return (s->attrs && json_find(s->attrs, key, buf, cap)) ||
               (s->res_attrs && json_find(s->res_attrs, key, buf, cap));
    }
    return pb_find(s->attrs, s->n_attrs, key, buf, cap) ||
           pb_find(s->res_attrs, s->n_res_attrs, key, buf, cap);
}
