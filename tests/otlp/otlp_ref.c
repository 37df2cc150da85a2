/*
 * otlp_ref.c: the OTLP decoders as dqd had them before it walked the bodies itself
 * (protobuf-c's unpack through the arena; jansson's document), kept as the reference of
 * the differential tests, and the comparison (otlp_ref.h).
 */
#include "otlp_ref.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "otlp_decode_internal.h"
#include "otlp_trace.pb-c.h"

/* Each block protobuf-c asks for is preceded by its size, so that the length of a string
 * it unpacked (a C string: len + 1 bytes, copied whole) is known past a NUL byte. */
#define PB_HEAD 16

static void *pb_alloc(void *data, size_t size) {
    unsigned char *p = otlp_arena_alloc(data, size + PB_HEAD);
    if (!p) {
        return NULL;
    }
    memcpy(p, &size, sizeof size);
    return p + PB_HEAD;
}

/* The length of a string field as sent: NUL bytes in it included. */
static size_t pb_len(const char *s) {
    if (!s || s == protobuf_c_empty_string) {
        return 0;
    }
    size_t size;
    memcpy(&size, s - PB_HEAD, sizeof size);
    return size - 1;
}

/* otlp_span_check's verdict on the keys of a span's attributes (the worst one). */
static int pb_keys_text(const Dqotlp__Span *sp) {
    int worst = OTLP_TEXT_OK;
    for (size_t i = 0; i < sp->n_attributes; i++) {
        const char *k = sp->attributes[i]->key;
        int v = otlp_text_check(k, pb_len(k));
        if (v && (!worst || v < worst)) {
            worst = v;
        }
    }
    return worst;
}

static void pb_free(void *data, void *ptr) {
    (void)data;
    (void)ptr; /* the arena is emptied as a whole */
}

/* ---- protobuf-c ------------------------------------------------------------------------------ */

static void pb_service(const Dqotlp__Resource *r, const char **name, size_t *len) {
    *name = OTLP_UNKNOWN_SERVICE;
    *len = sizeof OTLP_UNKNOWN_SERVICE - 1;
    for (size_t i = 0; r && i < r->n_attributes; i++) {
        const Dqotlp__KeyValue *kv = r->attributes[i];
        if (kv->key && strcmp(kv->key, "service.name") == 0 && kv->value &&
            kv->value->value_case == DQOTLP__ANY_VALUE__VALUE_STRING_VALUE &&
            pb_len(kv->value->string_value) > 0) {
            *name = kv->value->string_value;
            *len = pb_len(*name);
        }
    }
}

int ref_decode_protobuf(struct otlp_arena *a, const uint8_t *body, size_t len,
                        struct ref_batch *r) {
    memset(r, 0, sizeof *r);
    struct otlp_batch *b = &r->b;
    ProtobufCAllocator al = {.alloc = pb_alloc, .free = pb_free, .allocator_data = a};
    Dqotlp__ExportTraceServiceRequest *req =
        dqotlp__export_trace_service_request__unpack(&al, len, body);
    r->msg = req;
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
    b->spans = otlp_span_array(a, total);
    if (!b->spans) {
        return DQ_EFULL;
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
                s->name_len = pb_len(sp->name);
                if (sp->trace_id.len == 16) {
                    memcpy(s->trace_id, sp->trace_id.data, 16);
                }
                if (sp->span_id.len == 8) {
                    memcpy(s->span_id, sp->span_id.data, 8);
                }
                if (sp->parent_span_id.len == 8) {
                    memcpy(s->parent_id, sp->parent_span_id.data, 8);
                }
                s->has_parent = sp->parent_span_id.len == 8 && !otlp_all_zero(s->parent_id, 8);
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
                if (otlp_span_check(b, s, sp->trace_id.len, sp->span_id.len, sp->parent_span_id.len,
                                    pb_keys_text(sp))) {
                    b->n++;
                }
            }
        }
    }
    return DQ_OK;
}

/* ---- jansson -----------------------------------------------------------------------------------
 */

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
    *name = OTLP_UNKNOWN_SERVICE;
    *len = sizeof OTLP_UNKNOWN_SERVICE - 1;
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
    s->has_parent = pl == 8 && !otlp_all_zero(s->parent_id, 8);
    s->attrs = attrs;
    s->n_attrs = attrs ? json_array_size(attrs) : 0;
    s->res_attrs = res_attrs;
    s->n_res_attrs = res_attrs ? json_array_size(res_attrs) : 0;
    s->json = 1;
    if (otlp_span_check(b, s, (size_t)tl, (size_t)sl, (size_t)pl, OTLP_TEXT_OK)) {
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

int ref_decode_json(struct otlp_arena *a, const uint8_t *body, size_t len, struct ref_batch *r) {
    memset(r, 0, sizeof *r);
    struct otlp_batch *b = &r->b;
    json_error_t err;
    r->json = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &err);
    if (!r->json) {
        return dq_fail(DQ_EPARSE, "OTLP/JSON: line %d column %d: %s", err.line, err.column,
                       err.text);
    }
    size_t total = 0;
    int rc = json_walk(b, r->json, 1, &total);
    if (rc) {
        return rc;
    }
    b->spans = otlp_span_array(a, total);
    if (!b->spans) {
        return DQ_EFULL;
    }
    return json_walk(b, r->json, 0, &total);
}

/* ---- attributes ---------------------------------------------------------------------------------
 */

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

int ref_span_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap) {
    if (s->json) {
        return (s->attrs && json_find(s->attrs, key, buf, cap)) ||
               (s->res_attrs && json_find(s->res_attrs, key, buf, cap));
    }
    return pb_find(s->attrs, s->n_attrs, key, buf, cap) ||
           pb_find(s->res_attrs, s->n_res_attrs, key, buf, cap);
}

void ref_release(struct ref_batch *r) {
    if (r->json) {
        json_decref(r->json);
    }
    memset(r, 0, sizeof *r);
}

/* ---- the comparison
 * ------------------------------------------------------------------------------ */

#define MAX_KEYS 24

/* The attribute keys a reference span has (its own, then its resource's), at most max. */
static size_t ref_keys(const struct otlp_span *s, const char **keys, size_t max) {
    size_t n = 0;
    const void *lists[2] = {s->attrs, s->res_attrs};
    size_t sizes[2] = {s->n_attrs, s->n_res_attrs};
    for (int l = 0; l < 2; l++) {
        if (s->json) {
            size_t i;
            json_t *kv;
            json_array_foreach((json_t *)(uintptr_t)lists[l], i, kv) {
                const char *k = json_string_value(json_object_get(kv, "key"));
                if (k && n < max) {
                    keys[n++] = k;
                }
            }
        } else {
            Dqotlp__KeyValue *const *kvs = lists[l];
            for (size_t i = 0; i < sizes[l] && n < max; i++) {
                keys[n++] = kvs[i]->key ? kvs[i]->key : "";
            }
        }
    }
    return n;
}

static int differ(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int differ(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return 1;
}

static int same_span(const struct otlp_span *x, const struct otlp_span *y, size_t i, char *why,
                     size_t cap) {
    if (x->service_len != y->service_len || memcmp(x->service, y->service, x->service_len)) {
        return differ(why, cap, "span %zu: service %.*s, want %.*s", i, (int)x->service_len,
                      x->service, (int)y->service_len, y->service);
    }
    if (x->name_len != y->name_len || memcmp(x->name, y->name, x->name_len)) {
        return differ(why, cap, "span %zu: name %.*s, want %.*s", i, (int)x->name_len, x->name,
                      (int)y->name_len, y->name);
    }
    if (memcmp(x->trace_id, y->trace_id, 16) || memcmp(x->span_id, y->span_id, 8) ||
        x->has_parent != y->has_parent ||
        (x->has_parent && memcmp(x->parent_id, y->parent_id, 8))) {
        return differ(why, cap, "span %zu: ids or parent differ", i);
    }
    if (x->start_ns != y->start_ns || x->end_ns != y->end_ns || x->status != y->status) {
        return differ(why, cap, "span %zu: start %lld end %lld status %d, want %lld %lld %d", i,
                      (long long)x->start_ns, (long long)x->end_ns, x->status,
                      (long long)y->start_ns, (long long)y->end_ns, y->status);
    }
    const char *keys[MAX_KEYS + 3] = {"service.name", "nope", ""};
    size_t n = 3 + ref_keys(y, keys + 3, MAX_KEYS);
    for (size_t k = 0; k < n; k++) {
        static const size_t caps[2] = {64, 6};
        for (int c = 0; c < 2; c++) {
            char bx[64], by[64];
            memset(bx, 0, sizeof bx);
            memset(by, 0, sizeof by);
            int fx = otlp_span_attr(x, keys[k], bx, caps[c]);
            int fy = ref_span_attr(y, keys[k], by, caps[c]);
            if (fx != fy || (fx && strcmp(bx, by) != 0)) {
                return differ(why, cap, "span %zu: attribute %s: %d \"%s\", want %d \"%s\"", i,
                              keys[k], fx, fx ? bx : "", fy, fy ? by : "");
            }
        }
    }
    return 0;
}

int ref_compare(struct otlp_arena *a, struct otlp_arena *ra, const uint8_t *body, size_t len,
                int json, char *why, size_t cap) {
    struct otlp_batch b;
    struct ref_batch r;
    char err[256], ref_err[256];
    otlp_arena_reset(a);
    otlp_arena_reset(ra);
    int rc = json ? otlp_decode_json(a, body, len, &b) : otlp_decode_protobuf(a, body, len, &b);
    snprintf(err, sizeof err, "%s", rc ? dq_last_error() : "");
    int ref = json ? ref_decode_json(ra, body, len, &r) : ref_decode_protobuf(ra, body, len, &r);
    snprintf(ref_err, sizeof ref_err, "%s", ref ? dq_last_error() : "");
    int d = 0;
    why[0] = '\0';
    if (ref == DQ_EFULL) {
        d = 0;
    } else if (rc != ref) {
        d = differ(why, cap, "returned %d (%s), the reference %d (%s)", rc, err, ref, ref_err);
    } else if (rc == DQ_OK) {
        if (b.n != r.b.n || b.rejected != r.b.rejected || strcmp(b.reason, r.b.reason) != 0) {
            d = differ(why, cap, "%zu spans, %zu rejected (%s), want %zu, %zu (%s)", b.n,
                       b.rejected, b.reason, r.b.n, r.b.rejected, r.b.reason);
        }
        for (size_t i = 0; !d && i < b.n; i++) {
            d = same_span(&b.spans[i], &r.b.spans[i], i, why, cap);
        }
    }
    otlp_batch_release(&b);
    ref_release(&r);
    return d;
}
