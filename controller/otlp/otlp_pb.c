/*
 * otlp_pb.c: ExportTraceServiceRequest (protobuf) to spans by walking the wire format
 * directly (docs/otlp.md, "Decoding"). Nothing is copied or allocated per span: a span's
 * name, its service's name and its attributes stay in the body; the only allocation is
 * the span array, which grows in the arena. Attributes are read from the body when a
 * mapping asks.
 *
 * It accepts and refuses exactly what protobuf-c's unpack of otlp_trace.proto did, and
 * reads the same values (tests/otlp/test_otlp_diff.c compares the two on the corpus):
 *   - a field's tag is a varint of at most 5 bytes whose first byte has field bits; wire
 *     types 0, 1, 2 and 5 only; a varint ends within 10 bytes, a length within 5 and
 *     inside the message; unknown fields are skipped;
 *   - a declared field must come with its declared wire type, except a bool
 *     (AnyValue.bool_value), which is true when any byte of its value has a low bit set;
 *   - a scalar or string field that repeats keeps its last value; a repeated field
 *     concatenates; a message field that repeats is merged: Resource's attributes
 *     concatenate, Span.status is the last Status as sent (its code is not carried
 *     over), KeyValue.value is the newest AnyValue that has a value, or when the newest
 *     has none the one before it carried over unless that was a string or empty bytes
 *     (then none); two in a row without a value are refused;
 *   - an attribute's string value ends at its first NUL byte (protobuf-c's were C
 *     strings); a service name, a span name and an attribute key are kept whole, and
 *     otlp_span_check refuses the span when one holds a NUL byte or is not UTF-8.
 * Every span's attributes, and every resource, are walked whole, so that a body is
 * refused for a malformed attribute as before, even when no mapping reads it.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "otlp.h"
#include "otlp_decode_internal.h"

/* ---- the wire ---------------------------------------------------------------------------- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

struct pb {
    const uint8_t *p, *end;
};

struct field {
    uint32_t num;
    int wt;
    const uint8_t *raw; /* the value as sent: a varint, 8 or 4 bytes, or length and payload */
    size_t raw_n;
    const uint8_t *data; /* WT_LEN: the payload */
    size_t n;
    uint64_t v; /* WT_VARINT: the value (its low 64 bits); WT_I64, WT_I32: the bits */
};

static uint64_t le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian hosts only, as the wire */
}

/* next() for any field: multi-byte tags, varints and lengths, and every refusal. */
static int next_any(struct pb *r, struct field *f) {
    const uint8_t *p = r->p;
    size_t rem = (size_t)(r->end - p);
    if (rem == 0) {
        return 0;
    }
    unsigned b = p[0];
    if ((b & 0xf8) == 0) {
        return -1; /* field number 0 */
    }
    f->wt = (int)(b & 7);
    uint32_t num = (b & 0x7f) >> 3;
    size_t used = 1;
    if (b & 0x80) {
        size_t max = rem < 5 ? rem : 5;
        unsigned shift = 4;
        for (;;) {
            if (used == max) {
                return -1;
            }
            b = p[used++];
            num |= (uint32_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                break;
            }
            shift += 7;
        }
    }
    f->num = num;
    p += used;
    rem -= used;
    f->raw = p;
    switch (f->wt) {
    case WT_VARINT: {
        size_t max = rem < 10 ? rem : 10, i = 0;
        uint64_t v = 0;
        for (;; i++) {
            if (i == max) {
                return -1;
            }
            v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if (!(p[i] & 0x80)) {
                break;
            }
        }
        f->v = v;
        f->raw_n = i + 1;
        break;
    }
    case WT_I64:
        if (rem < 8) {
            return -1;
        }
        f->v = le64(p);
        f->raw_n = 8;
        break;
    case WT_I32:
        if (rem < 4) {
            return -1;
        }
        f->v = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
        f->raw_n = 4;
        break;
    case WT_LEN: {
        size_t max = rem < 5 ? rem : 5, i = 0, len = 0;
        for (;; i++) {
            if (i == max) {
                return -1;
            }
            len |= (size_t)(p[i] & 0x7f) << (7 * i);
            if (!(p[i] & 0x80)) {
                break;
            }
        }
        if (len > INT_MAX || len > rem - (i + 1)) {
            return -1;
        }
        f->data = p + i + 1;
        f->n = len;
        f->raw_n = i + 1 + len;
        break;
    }
    default:
        return -1; /* groups and wire types 6, 7 */
    }
    r->p = p + f->raw_n;
    return 1;
}

/*
 * The next field of r into f: 1, or 0 at the end, or −1 when the bytes are not a field.
 * Inline for what spans are made of: a one-byte tag, then a one-byte varint or length, or
 * 8 fixed bytes.
 */
static inline int next(struct pb *r, struct field *f) {
    const uint8_t *p = r->p;
    size_t rem = (size_t)(r->end - p);
    if (rem == 0) {
        return 0;
    }
    if (rem >= 2 && p[0] >= 8 && p[0] < 0x80) {
        unsigned wt = p[0] & 7;
        f->num = p[0] >> 3;
        f->wt = (int)wt;
        f->raw = p + 1;
        if (wt == WT_LEN && p[1] < 0x80 && p[1] <= rem - 2) {
            f->data = p + 2;
            f->n = p[1];
            f->raw_n = 1 + (size_t)p[1];
            r->p = p + 2 + p[1];
            return 1;
        }
        if (wt == WT_VARINT) {
            size_t max = rem - 1 < 10 ? rem - 1 : 10;
            uint64_t v = 0;
            for (size_t i = 0; i < max; i++) {
                v |= (uint64_t)(p[1 + i] & 0x7f) << (7 * i);
                if (!(p[1 + i] & 0x80)) {
                    f->v = v;
                    f->raw_n = i + 1;
                    r->p = p + 2 + i;
                    return 1;
                }
            }
            return -1; /* a varint longer than 10 bytes, or cut */
        }
        if (wt == WT_I64 && rem >= 9) {
            f->v = le64(p + 1);
            f->raw_n = 8;
            r->p = p + 9;
            return 1;
        }
    }
    return next_any(r, f);
}

static struct pb reader(const uint8_t *p, size_t n) {
    return p ? (struct pb){p, p + n} : (struct pb){NULL, NULL};
}

/* The length of a string as protobuf-c read it: up to its first NUL byte. */
static size_t text_len(const uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* eight bytes at a time while none is zero */
        uint64_t w;
        memcpy(&w, p + i, 8);
        if ((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL) {
            break;
        }
    }
    while (i < n && p[i]) {
        i++;
    }
    return i;
}

/* ---- KeyValue and AnyValue --------------------------------------------------------------- */

/* AnyValue's oneof: 0 none, 1 string, 2 bool, 3 int, 4 double, 5 array, 6 kvlist, 7 bytes. */
struct any {
    int kind;
    const uint8_t *p; /* string and bytes kinds: the payload */
    size_t n;
    uint64_t v; /* bool (0, 1), int, double's bits */
};

static int any_parse(const uint8_t *p, size_t n, struct any *a) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    a->kind = 0;
    while ((rc = next(&r, &f)) > 0) {
        switch (f.num) {
        case 2: /* bool: any wire type */
            a->kind = 2;
            a->v = 0;
            for (size_t i = 0; i < f.raw_n; i++) {
                if (f.raw[i] & 0x7f) {
                    a->v = 1;
                    break;
                }
            }
            break;
        case 3:
        case 4:
            if (f.wt != (f.num == 3 ? WT_VARINT : WT_I64)) {
                return -1;
            }
            a->kind = (int)f.num;
            a->v = f.v;
            break;
        case 1:
        case 5:
        case 6:
        case 7:
            if (f.wt != WT_LEN) {
                return -1;
            }
            a->kind = (int)f.num;
            a->p = f.data;
            a->n = f.n;
            break;
        default:
            break;
        }
    }
    return rc;
}

struct kv {
    const uint8_t *key; /* "" when absent */
    size_t key_n;       /* as sent (the key ends at a NUL byte before that) */
    int has_value;
    struct any val;
};

/* A KeyValue, its AnyValues merged as protobuf-c merges them; −1 when malformed. */
static int kv_parse(const uint8_t *p, size_t n, struct kv *kv) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    kv->key = (const uint8_t *)"";
    kv->key_n = 0;
    kv->has_value = 0;
    while ((rc = next(&r, &f)) > 0) {
        if (f.num == 1 || f.num == 2) {
            if (f.wt != WT_LEN) {
                return -1;
            }
        }
        if (f.num == 1) {
            kv->key = f.data;
            kv->key_n = f.n;
        } else if (f.num == 2) {
            struct any a;
            if (any_parse(f.data, f.n, &a) < 0) {
                return -1;
            }
            if (!kv->has_value || a.kind != 0) {
                kv->val = a;
            } else if (kv->val.kind == 0) {
                return -1; /* two without a value in a row: protobuf-c cannot merge them */
            } else if (kv->val.kind == 1 || (kv->val.kind >= 5 && kv->val.n == 0)) {
                kv->val.kind = 0; /* a string, or empty bytes, is not carried over */
            }
            kv->has_value = 1;
        }
    }
    return rc;
}

/*
 * 1 when the KeyValue at p (n bytes) has the shape SDKs send, valid as it stands: its key,
 * then its value holding one string, bool, int or double, every tag and length one byte.
 * (kv_parse decides the others.)
 */
static inline __attribute__((always_inline)) int kv_plain(const uint8_t *p, size_t n) {
    if (n < 4 || p[0] != 0x0a || p[1] >= 0x80) {
        return 0;
    }
    size_t at = 2 + (size_t)p[1];
    if (at + 2 > n || p[at] != 0x12 || p[at + 1] >= 0x80 || at + 2 + p[at + 1] != n) {
        return 0;
    }
    const uint8_t *v = p + at + 2;
    size_t vn = p[at + 1], i = 1;
    if (vn < 2) {
        return 0;
    }
    switch (v[0]) {
    case 0x0a: /* string_value */
        return v[1] < 0x80 && 2 + (size_t)v[1] == vn;
    case 0x10: /* bool_value, int_value: a varint up to the end */
    case 0x18:
        while (i < vn && (v[i] & 0x80)) {
            i++;
        }
        return i == vn - 1 && vn - 1 <= 10;
    case 0x21: /* double_value */
        return vn == 9;
    default:
        return 0;
    }
}

/* 1 when the pair's key, up to its first NUL byte, is key. */
static int key_is(const struct kv *kv, const char *key) {
    size_t n = strlen(key);
    return kv->key_n >= n && memcmp(kv->key, key, n) == 0 && (kv->key_n == n || !kv->key[n]);
}

/* The attribute's value as text (protobuf-c's printing), 1; 0 when it has none to print. */
static int any_text(const struct any *a, char *buf, size_t cap) {
    switch (a->kind) {
    case 1:
        snprintf(buf, cap, "%.*s", (int)text_len(a->p, a->n), (const char *)a->p);
        return 1;
    case 2:
        snprintf(buf, cap, "%s", a->v ? "true" : "false");
        return 1;
    case 3:
        snprintf(buf, cap, "%lld", (long long)a->v);
        return 1;
    case 4: {
        double d;
        memcpy(&d, &a->v, sizeof d);
        snprintf(buf, cap, "%.17g", d);
        return 1;
    }
    default:
        return 0;
    }
}

enum { KV_NONE = 0, KV_TEXT = 1, KV_NO_TEXT = 2 };

/*
 * Walks the KeyValues of field num in the message at p (n bytes): a span's attributes (9)
 * or a Resource's (1). With key: the first pair of that key that has a value decides:
 * KV_TEXT with its text in buf, or KV_NO_TEXT when it cannot be printed; KV_NONE when no
 * pair decides. Without key: validates them all, and with svc finds the last service.name
 * with a non-empty string value. −1 when malformed.
 */
static int kvs_walk(const uint8_t *p, size_t n, uint32_t num, const char *key, char *buf,
                    size_t cap, const uint8_t **svc, size_t *svc_n) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    while ((rc = next(&r, &f)) > 0) {
        if (f.num != num || f.wt != WT_LEN) {
            continue; /* the message's walker has checked wire types */
        }
        struct kv kv;
        if (kv_parse(f.data, f.n, &kv) < 0) {
            return -1;
        }
        if (key) {
            if (kv.has_value && key_is(&kv, key)) {
                return any_text(&kv.val, buf, cap) ? KV_TEXT : KV_NO_TEXT;
            }
        } else if (svc && kv.has_value && kv.val.kind == 1 && kv.val.n > 0 &&
                   key_is(&kv, "service.name")) {
            *svc = kv.val.p;
            *svc_n = kv.val.n;
        }
    }
    return rc < 0 ? -1 : KV_NONE;
}

/* A Resource: validated, and its service.name (last wins) into *svc. */
static int resource_walk(const uint8_t *p, size_t n, const uint8_t **svc, size_t *svc_n) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    while ((rc = next(&r, &f)) > 0) {
        if ((f.num == 1 && f.wt != WT_LEN) || (f.num == 2 && f.wt != WT_VARINT)) {
            return -1;
        }
    }
    return rc < 0 ? -1 : kvs_walk(p, n, 1, NULL, NULL, 0, svc, svc_n);
}

/* ---- spans ------------------------------------------------------------------------------- */

/* The wire type each Span field (1 to 16) must have. */
static const int8_t SPAN_WT[17] = {-1,        WT_LEN, WT_LEN,    WT_LEN, WT_LEN,    WT_LEN,
                                   WT_VARINT, WT_I64, WT_I64,    WT_LEN, WT_VARINT, WT_LEN,
                                   WT_VARINT, WT_LEN, WT_VARINT, WT_LEN, WT_I32};

/* A Status: its code (the last sent; 0 when none). −1 when malformed. */
static int status_walk(const uint8_t *p, size_t n, int32_t *code) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    *code = 0;
    while ((rc = next(&r, &f)) > 0) {
        if (f.num == 2 && f.wt != WT_LEN) {
            return -1;
        }
        if (f.num == 3) {
            if (f.wt != WT_VARINT) {
                return -1;
            }
            *code = (int32_t)(uint32_t)f.v;
        }
    }
    return rc;
}

static int64_t nanos(uint64_t v) {
    return v > INT64_MAX ? -1 : (int64_t)v;
}

/* What a Span's fields say, as they come. */
struct span_fields {
    const uint8_t *ids[5]; /* by field number: 1 trace, 2 span, 4 parent */
    size_t id_n[5];
    const uint8_t *name;
    size_t name_n;
    uint64_t start, end;
    int32_t status;
    int keys_text; /* the worst otlp_text_check of the attribute keys */
};

/* Notes the text verdict of an attribute key in sf (the worst one counts). */
static inline void span_key(struct span_fields *sf, const uint8_t *key, size_t n) {
    int v = otlp_text_check((const char *)key, n);
    if (v && (!sf->keys_text || v < sf->keys_text)) {
        sf->keys_text = v;
    }
}

/* One field of a Span (its wire type checked) into sf; −1 when malformed. Always inline:
 * the compiler's call per field cost 13 ns a span (bench_otlp, EPYC). */
static inline __attribute__((always_inline)) int
span_field(struct span_fields *sf, uint32_t num, const uint8_t *data, size_t n, uint64_t v) {
    struct kv kv;
    switch (num) {
    case 1:
    case 2:
    case 4:
        sf->ids[num] = data;
        sf->id_n[num] = n;
        return 0;
    case 5:
        sf->name = data;
        sf->name_n = n;
        return 0;
    case 7:
        sf->start = v;
        return 0;
    case 8:
        sf->end = v;
        return 0;
    case 9:
        if (kv_plain(data, n)) {
            span_key(sf, data + 2, data[1]);
            return 0;
        }
        if (kv_parse(data, n, &kv) < 0) {
            return -1;
        }
        span_key(sf, kv.key, kv.key_n);
        return 0;
    case 15:
        if (n == 0 || (n == 2 && data[0] == (3 << 3 | WT_VARINT) && data[1] < 0x80)) {
            sf->status = n ? data[1] : 0; /* the usual Status: empty, or only a small code */
            return 0;
        }
        return status_walk(data, n, &sf->status);
    default:
        return 0;
    }
}

/* A Span's one-byte tags by what follows them: a length (the declared length-delimited
 * fields), 8 bytes (the times), a varint (kind and the dropped counts, not read). */
enum { TAG_OTHER, TAG_LEN, TAG_I64, TAG_VARINT };
static const uint8_t SPAN_TAG[256] = {
    [1 << 3 | WT_LEN] = TAG_LEN,        [2 << 3 | WT_LEN] = TAG_LEN,
    [3 << 3 | WT_LEN] = TAG_LEN,        [4 << 3 | WT_LEN] = TAG_LEN,
    [5 << 3 | WT_LEN] = TAG_LEN,        [9 << 3 | WT_LEN] = TAG_LEN,
    [11 << 3 | WT_LEN] = TAG_LEN,       [13 << 3 | WT_LEN] = TAG_LEN,
    [15 << 3 | WT_LEN] = TAG_LEN,       [7 << 3 | WT_I64] = TAG_I64,
    [8 << 3 | WT_I64] = TAG_I64,        [6 << 3 | WT_VARINT] = TAG_VARINT,
    [10 << 3 | WT_VARINT] = TAG_VARINT, [12 << 3 | WT_VARINT] = TAG_VARINT,
    [14 << 3 | WT_VARINT] = TAG_VARINT};

/* One Span into s (counted valid or rejected in b); −1 when malformed. */
static int span_walk(struct otlp_batch *b, struct otlp_span *s, const uint8_t *p, size_t n) {
    /* the fields read before they are set, one by one: a compiler zeroes a whole struct
     * with `rep stos`, which cost 9 ns a span on an EPYC (a pointer in ids is read only
     * when its length is set) */
    struct span_fields sf;
    sf.id_n[1] = sf.id_n[2] = sf.id_n[4] = 0;
    sf.name = (const uint8_t *)"";
    sf.name_n = 0;
    sf.start = sf.end = 0;
    sf.status = 0;
    sf.keys_text = OTLP_TEXT_OK;
    const uint8_t *q = p, *end = p + n;
    while (q < end) {
        /* inline: a declared field with a one-byte tag, and a one-byte length or varint */
        unsigned t = q[0], kind = SPAN_TAG[t];
        size_t rem = (size_t)(end - q);
        if (kind == TAG_LEN && rem >= 2 && q[1] < 0x80 && q[1] <= rem - 2) {
            if (span_field(&sf, t >> 3, q + 2, q[1], 0) < 0) {
                return -1;
            }
            q += 2 + q[1];
            continue;
        }
        if (kind == TAG_I64 && rem >= 9) {
            *(t >> 3 == 7 ? &sf.start : &sf.end) = le64(q + 1);
            q += 9;
            continue;
        }
        if (kind == TAG_VARINT && rem >= 2 && q[1] < 0x80) {
            q += 2;
            continue;
        }
        struct pb r = {q, end};
        struct field f = {0};
        if (next(&r, &f) < 0 || (f.num <= 16 && f.num > 0 && SPAN_WT[f.num] != f.wt) ||
            span_field(&sf, f.num, f.data, f.n, f.v) < 0) {
            return -1;
        }
        q = r.p;
    }
    s->name = (const char *)sf.name;
    s->name_len = sf.name_n;
    if (sf.id_n[1] == 16) {
        memcpy(s->trace_id, sf.ids[1], 16);
    }
    if (sf.id_n[2] == 8) {
        memcpy(s->span_id, sf.ids[2], 8);
    }
    if (sf.id_n[4] == 8) {
        memcpy(s->parent_id, sf.ids[4], 8);
    }
    s->has_parent = sf.id_n[4] == 8 && !otlp_all_zero(s->parent_id, 8);
    s->start_ns = nanos(sf.start);
    s->end_ns = nanos(sf.end);
    s->status = sf.status;
    s->attrs = p;
    s->n_attrs = n;
    s->json = 0;
    if (otlp_span_check(b, s, sf.id_n[1], sf.id_n[2], sf.id_n[4], sf.keys_text)) {
        b->n++;
    }
    return 0;
}

/* ---- the request ------------------------------------------------------------------------- */

/* The walkers below return 0, −1 when the body is malformed, −2 when the arena is full. */

struct walk {
    struct otlp_arena *a;
    struct otlp_batch *b;
    size_t cap, first; /* the span array's size; its first size */
    /* the current resource */
    const char *svc;
    size_t svc_n;
    const uint8_t *rs;
    size_t rs_n;
};

static int scope_spans_walk(struct walk *w, const uint8_t *p, size_t n) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    while ((rc = next(&r, &f)) > 0) {
        if (f.num >= 1 && f.num <= 3 && f.wt != WT_LEN) {
            return -1;
        }
        if (f.num != 2) {
            continue;
        }
        struct otlp_span *s = otlp_span_slot(w->a, w->b, &w->cap, w->first);
        if (!s) {
            return -2;
        }
        s->service = w->svc;
        s->service_len = w->svc_n;
        s->res_attrs = w->rs;
        s->n_res_attrs = w->rs_n;
        if (span_walk(w->b, s, f.data, f.n) < 0) {
            return -1;
        }
    }
    return rc;
}

static int resource_spans_walk(struct walk *w, const uint8_t *p, size_t n) {
    struct pb r = reader(p, n);
    struct field f = {0};
    int rc;
    const uint8_t *svc = (const uint8_t *)OTLP_UNKNOWN_SERVICE;
    size_t svc_n = sizeof OTLP_UNKNOWN_SERVICE - 1;
    /* the resources first (a repeated Resource merges: its attributes concatenate) */
    while ((rc = next(&r, &f)) > 0) {
        if (f.num >= 1 && f.num <= 3 && f.wt != WT_LEN) {
            return -1;
        }
        if (f.num == 1 && resource_walk(f.data, f.n, &svc, &svc_n) < 0) {
            return -1;
        }
    }
    if (rc < 0) {
        return -1;
    }
    w->svc = (const char *)svc;
    w->svc_n = svc_n;
    w->rs = p;
    w->rs_n = n;
    r = reader(p, n);
    while ((rc = next(&r, &f)) > 0) {
        int e = f.num == 2 ? scope_spans_walk(w, f.data, f.n) : 0;
        if (e < 0) {
            return e;
        }
    }
    return rc;
}

static int request_walk(struct walk *w, const uint8_t *body, size_t len) {
    struct pb r = reader(body, len);
    struct field f = {0};
    int rc;
    while ((rc = next(&r, &f)) > 0) {
        int e = f.num != 1 ? 0 : f.wt != WT_LEN ? -1 : resource_spans_walk(w, f.data, f.n);
        if (e < 0) {
            return e;
        }
    }
    return rc;
}

int otlp_decode_protobuf(struct otlp_arena *a, const uint8_t *body, size_t len,
                         struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
    /* the span array first for a span every 100 bytes (SDKs send about 120 and more) */
    struct walk w = {.a = a, .b = b, .first = len / 100 + 16};
    int rc = request_walk(&w, body, len);
    if (rc == 0) {
        return DQ_OK;
    }
    b->n = 0;
    b->rejected = 0;
    if (rc == -2) {
        return DQ_EFULL;
    }
    return dq_fail(DQ_EPARSE, "the body is not a protobuf ExportTraceServiceRequest "
                              "(malformed, truncated or wrongly typed fields)");
}

/* ---- attributes -------------------------------------------------------------------------- */

int otlp_pb_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap) {
    /* the span's attributes, then (when they give no text) the resource's: each Resource
     * (field 1 of ResourceSpans) in turn, as merged */
    if (kvs_walk(s->attrs, s->n_attrs, 9, key, buf, cap, NULL, NULL) == KV_TEXT) {
        return 1;
    }
    int rc = KV_NONE;
    struct pb r = reader(s->res_attrs, s->n_res_attrs);
    struct field f = {0};
    while (rc == KV_NONE && next(&r, &f) > 0) {
        if (f.num == 1 && f.wt == WT_LEN) {
            rc = kvs_walk(f.data, f.n, 1, key, buf, cap, NULL, NULL);
        }
    }
    return rc == KV_TEXT;
}
