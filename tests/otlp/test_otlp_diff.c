/*
 * test_otlp_diff.c: the OTLP decoders of controller/otlp against the reference
 * (otlp_ref.c: protobuf-c's full unpack, jansson's document): the same refusals and the
 * same spans, attribute by attribute (ref_compare), on
 *   - every file of the fuzz corpora tests/corpus/otlp_protobuf and tests/corpus/otlp_json
 *     (inflated first when gzip, as the fuzz targets do),
 *   - variants of each made here with a fixed seed (truncations, flipped, inserted,
 *     deleted and repeated bytes), and
 *   - bodies built here for the corners of protobuf-c's and jansson's rules (repeated and
 *     merged fields, wire types, NUL bytes, escapes, depth, duplicate keys, numbers).
 *
 * run: test_otlp_diff CORPUS_DIR (tests/corpus)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "otlp_ref.h"

static struct otlp_arena arena, ref_arena;
static int compared, accepted;

/* Compares; 1 when the body was accepted. */
static int compare(const uint8_t *body, size_t len, int json, const char *what) {
    char why[512];
    int d = ref_compare(&arena, &ref_arena, body, len, json, why, sizeof why);
    CHECK_MSG(!d, "%s (%zu bytes): %s", what, len, why);
    compared++;
    struct otlp_batch b;
    otlp_arena_reset(&arena);
    int rc = json ? otlp_decode_json(&arena, body, len, &b)
                  : otlp_decode_protobuf(&arena, body, len, &b);
    accepted += rc == DQ_OK;
    otlp_batch_release(&b);
    return rc == DQ_OK;
}

/* ---- variants ------------------------------------------------------------------------------ */

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define VARIANTS 64

/* The body and variants of it: truncated, a byte changed, inserted or deleted, a range
 * repeated (protobuf: a field twice; JSON: a key twice). */
static int compare_variants(const uint8_t *body, size_t len, int json, const char *name) {
    int ok = compare(body, len, json, name);
    if (len == 0) {
        return ok;
    }
    uint8_t *v = malloc(2 * len + 16);
    char what[1200];
    for (int i = 0; i < VARIANTS; i++) {
        size_t at = (size_t)(next_rand() % len), n = len;
        int kind = (int)(next_rand() % 5);
        memcpy(v, body, len);
        if (kind == 0) {
            n = at; /* truncated */
        } else if (kind == 1) {
            v[at] ^= (uint8_t)(1u << (next_rand() % 8));
        } else if (kind == 2) {
            memmove(v + at + 1, v + at, len - at);
            v[at] = json ? (uint8_t) "{}[]\",:0\\u"[next_rand() % 11] : (uint8_t)next_rand();
            n = len + 1;
        } else if (kind == 3) {
            memmove(v + at, v + at + 1, len - at - 1);
            n = len - 1;
        } else {
            size_t k = 1 + (size_t)(next_rand() % (len - at < 64 ? len - at : 64));
            memmove(v + at + k, v + at, len - at);
            n = len + k; /* v[at, at+k) now appears twice */
        }
        snprintf(what, sizeof what, "%s, variant %d (kind %d at %zu)", name, i, kind, at);
        compare(v, n, json, what);
    }
    free(v);
    return ok;
}

/* Compares every file of dir and its variants; the files accepted in *ok. */
static size_t corpus(const char *dir, int json, size_t *ok) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    if (!d) {
        return 0;
    }
    size_t files = 0;
    struct dirent *e;
    static uint8_t inflated[1 << 16];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            continue;
        }
        static uint8_t body[1 << 20];
        size_t len = fread(body, 1, sizeof body, f);
        fclose(f);
        const uint8_t *p = body;
        size_t n = 0;
        if (len > 2 && body[0] == 0x1f && body[1] == 0x8b &&
            otlp_inflate(body, len, inflated, sizeof inflated, &n) == DQ_OK) {
            p = inflated;
            len = n;
        }
        *ok += (size_t)compare_variants(p, len, json, path);
        files++;
    }
    closedir(d);
    return files;
}

/* ---- protobuf built here --------------------------------------------------------------------- */

struct pb {
    uint8_t d[2048];
    size_t n;
};

static void put(struct pb *b, const void *p, size_t n) {
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void varint(struct pb *b, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        b->d[b->n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
}

static void tag(struct pb *b, uint32_t field, int wt) {
    varint(b, (uint64_t)field << 3 | (unsigned)wt);
}

static void bytes(struct pb *b, uint32_t field, const void *p, size_t n) {
    tag(b, field, 2);
    varint(b, n);
    put(b, p, n);
}

static void sub(struct pb *b, uint32_t field, const struct pb *m) {
    bytes(b, field, m->d, m->n);
}

static void fixed64(struct pb *b, uint32_t field, uint64_t v) {
    tag(b, field, 1);
    put(b, &v, 8);
}

/* A valid span's fields (ids, times), then what the case adds. */
static void span_base(struct pb *s) {
    static const uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    static const uint8_t id[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    s->n = 0;
    bytes(s, 1, trace, 16);
    bytes(s, 2, id, 8);
    fixed64(s, 7, 1795600000000000000ULL);
    fixed64(s, 8, 1795600000005000000ULL);
}

static struct pb kv_str(const char *key, const char *val) {
    struct pb kv = {0}, v = {0};
    bytes(&v, 1, val, strlen(val));
    bytes(&kv, 1, key, strlen(key));
    sub(&kv, 2, &v);
    return kv;
}

/* A request of one resource (res: its fields) with one scope of one span (span). */
static void request(struct pb *out, const struct pb *res, const struct pb *span) {
    struct pb ss = {0}, rs = {0};
    sub(&ss, 2, span);
    if (res) {
        sub(&rs, 1, res);
    }
    sub(&rs, 2, &ss);
    out->n = 0;
    sub(out, 1, &rs);
}

static void pb_case(const char *what, const struct pb *res, const struct pb *span, int want) {
    struct pb req;
    request(&req, res, span);
    compare(req.d, req.n, 0, what);
    struct otlp_batch b;
    otlp_arena_reset(&arena);
    CHECK_MSG(otlp_decode_protobuf(&arena, req.d, req.n, &b) == want, "%s: want %d", what, want);
    otlp_batch_release(&b);
}

/* As pb_case, and the body's one span is left out for a reason that says why. */
static void pb_refused(const char *what, const struct pb *res, const struct pb *span,
                       const char *why) {
    pb_case(what, res, span, DQ_OK);
    struct pb req;
    request(&req, res, span);
    struct otlp_batch b;
    otlp_arena_reset(&arena);
    CHECK(otlp_decode_protobuf(&arena, req.d, req.n, &b) == DQ_OK);
    CHECK_MSG(b.n == 0 && b.rejected == 1 && strstr(b.reason, why),
              "%s: %zu spans, %zu rejected (%s), want it refused for \"%s\"", what, b.n, b.rejected,
              b.reason, why);
    otlp_batch_release(&b);
}

/* The text rules (docs/otlp.md, "The text of a span"): names and keys with a NUL byte or
 * not UTF-8 refuse their span, in the decoder and the reference alike. */
static void protobuf_text(const struct pb *svc) {
    static const struct {
        const char *what, *bytes;
        size_t n;
        const char *why;
    } names[] = {
        {"a NUL inside a name", "a\0b", 3, "name holds a NUL"},
        {"a name ending with a NUL", "ab\0", 3, "name holds a NUL"},
        {"a name of Latin-1", "caf\xe9", 4, "name is not UTF-8"},
        {"an overlong slash", "a\xc0\xaf", 3, "name is not UTF-8"},
        {"a surrogate", "\xed\xa0\x80", 3, "name is not UTF-8"},
        {"above U+10FFFF", "\xf4\x90\x80\x80", 4, "name is not UTF-8"},
        {"a cut sequence", "ab\xe2\x82", 4, "name is not UTF-8"},
    };
    struct pb s;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        span_base(&s);
        bytes(&s, 5, names[i].bytes, names[i].n);
        pb_refused(names[i].what, svc, &s, names[i].why);
    }
    span_base(&s);
    bytes(&s, 5, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 13);
    pb_case("a name of UTF-8", svc, &s, DQ_OK);

    struct pb kv = {0}, bad = {0};
    static const char latin[] = {'s', 'h', 'o', 'p', (char)0xe9};
    kv.n = 0;
    bytes(&kv, 1, "service.name", 12);
    struct pb val = {0};
    bytes(&val, 1, latin, sizeof latin);
    sub(&kv, 2, &val);
    sub(&bad, 1, &kv);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    pb_refused("a service.name of Latin-1", &bad, &s, "service.name is not UTF-8");
    kv.n = val.n = bad.n = 0;
    bytes(&kv, 1, "service.name", 12);
    bytes(&val, 1, "sh\0op", 5);
    sub(&kv, 2, &val);
    sub(&bad, 1, &kv);
    pb_refused("a service.name with a NUL", &bad, &s, "service.name holds a NUL");
    kv.n = val.n = 0;
    bytes(&kv, 1, "k\xff", 2);
    bytes(&val, 1, "v", 1);
    sub(&kv, 2, &val);
    sub(&s, 9, &kv);
    pb_refused("an attribute key not UTF-8", svc, &s, "attribute key is not UTF-8");
}

static void protobuf_corners(void) {
    struct pb s, r = {0}, kv, v, st;
    struct pb shop = kv_str("service.name", "shop"), svc = {0};
    sub(&svc, 1, &shop); /* a Resource with service.name shop */

    span_base(&s);
    bytes(&s, 5, "a", 1);
    bytes(&s, 5, "b", 1);
    pb_case("a name twice: the last", &svc, &s, DQ_OK);

    protobuf_text(&svc);

    span_base(&s);
    bytes(&s, 5, "x", 1);
    st.n = 0;
    tag(&st, 3, 0);
    varint(&st, 2);
    sub(&s, 15, &st);
    st.n = 0;
    bytes(&st, 2, "m", 1);
    sub(&s, 15, &st);
    pb_case("a status twice, the second without a code", &svc, &s, DQ_OK);

    span_base(&s);
    bytes(&s, 5, "x", 1);
    st.n = 0;
    tag(&st, 3, 0);
    varint(&st, 0xffffffffffffffffULL);
    sub(&s, 15, &st);
    pb_case("a negative status code", &svc, &s, DQ_OK);

    /* KeyValue.value twice: merged */
    static const struct {
        const char *what;
        int first, second, third; /* AnyValue field sent, 0: an empty AnyValue, −1: none */
        int want;
    } merges[] = {
        {"a string, then an empty value", 1, 0, -1, DQ_OK},
        {"an empty value, then a string", 0, 1, -1, DQ_OK},
        {"two empty values", 0, 0, -1, DQ_EPARSE},
        {"empty bytes, then an empty value", 7, 0, -1, DQ_OK},
        {"empty bytes, then two empty values", 7, 0, 0, DQ_EPARSE},
        {"an int, then an empty value, then another", 3, 0, 0, DQ_OK},
        {"a bool, then a double", 2, 4, -1, DQ_OK},
    };
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++) {
        span_base(&s);
        bytes(&s, 5, "x", 1);
        kv.n = 0;
        bytes(&kv, 1, "k", 1);
        int sent[3] = {merges[i].first, merges[i].second, merges[i].third};
        for (int k = 0; k < 3 && sent[k] >= 0; k++) {
            v.n = 0;
            if (sent[k] == 1) {
                bytes(&v, 1, "vv", 2);
            } else if (sent[k] == 2 || sent[k] == 3) {
                tag(&v, (uint32_t)sent[k], 0);
                varint(&v, sent[k] == 2 ? 1 : (uint64_t)-7);
            } else if (sent[k] == 4) {
                fixed64(&v, 4, 0x400921fb54442d18ULL);
            } else if (sent[k] == 7) {
                bytes(&v, 7, "", 0);
            }
            sub(&kv, 2, &v);
        }
        sub(&s, 9, &kv);
        pb_case(merges[i].what, &svc, &s, merges[i].want);
    }

    /* a bool sent with other wire types */
    for (int wt = 0; wt < 3; wt++) {
        span_base(&s);
        bytes(&s, 5, "x", 1);
        v.n = 0;
        if (wt == 0) {
            tag(&v, 2, 0);
            varint(&v, 0x80); /* 0x80 0x01: true */
        } else if (wt == 1) {
            fixed64(&v, 2, 0x100);
        } else {
            bytes(&v, 2, "\0\0", 2);
        }
        kv.n = 0;
        bytes(&kv, 1, "k", 1);
        sub(&kv, 2, &v);
        sub(&s, 9, &kv);
        pb_case("a bool with another wire type", &svc, &s, DQ_OK);
    }

    /* a resource sent twice: its attributes concatenate */
    sub(&r, 1, &shop);
    struct pb r2 = {0}, other = kv_str("service.name", "billing"), rs = {0}, ss = {0}, req = {0};
    sub(&r2, 1, &other);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    sub(&ss, 2, &s);
    sub(&rs, 1, &r);
    sub(&rs, 2, &ss);
    sub(&rs, 1, &r2);
    sub(&req, 1, &rs);
    compare(req.d, req.n, 0, "a resource twice");

    /* attributes that cannot be printed, and the resource's after them */
    span_base(&s);
    bytes(&s, 5, "x", 1);
    kv.n = 0;
    v.n = 0;
    bytes(&v, 5, "\x0a\x00", 2);
    bytes(&kv, 1, "service.name", 12);
    sub(&kv, 2, &v);
    sub(&s, 9, &kv);
    pb_case("an array attribute shadowing nothing", &svc, &s, DQ_OK);

    /* wire types */
    span_base(&s);
    bytes(&s, 5, "x", 1);
    bytes(&s, 6, "", 0); /* kind, an int32, as bytes */
    pb_case("a declared field with another wire type", &svc, &s, DQ_EPARSE);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    tag(&s, 16, 0); /* flags, a fixed32, as a varint */
    varint(&s, 1);
    pb_case("flags as a varint", &svc, &s, DQ_EPARSE);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    tag(&s, 99, 3); /* a group */
    pb_case("a group", &svc, &s, DQ_EPARSE);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    tag(&s, 99, 0);
    put(&s, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    pb_case("an unknown 10-byte varint", &svc, &s, DQ_OK);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    tag(&s, 99, 0);
    put(&s, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    pb_case("an 11-byte varint", &svc, &s, DQ_EPARSE);
    span_base(&s);
    bytes(&s, 5, "x", 1);
    put(&s, "\x80\x00\x05", 3); /* a two-byte tag of field 0, a varint */
    pb_case("field 0 in a two-byte tag", &svc, &s, DQ_OK);
    span_base(&s);
    put(&s, "\xaa\x00\x01y", 4); /* field 5 in a two-byte tag */
    pb_case("a name in a two-byte tag", &svc, &s, DQ_OK);
    span_base(&s);
    put(&s, "\xaa\x80\x80\x80\x00\x01z", 7); /* field 5 in a five-byte tag */
    pb_case("a name in a five-byte tag", &svc, &s, DQ_OK);
    span_base(&s);
    put(&s, "\xaa\x80\x80\x80\x80\x00\x01z", 8);
    pb_case("a six-byte tag", &svc, &s, DQ_EPARSE);
}

/* ---- JSON written here ---------------------------------------------------------------------- */

#define SPAN_OK                                                                                    \
    "\"traceId\":\"0102030405060708090a0b0c0d0e0f10\",\"spanId\":\"0102030405060708\","            \
    "\"startTimeUnixNano\":\"1795600000000000000\",\"endTimeUnixNano\":\"1795600000005000000\""
#define SPAN_IDS "\"traceId\":\"0102030405060708090a0b0c0d0e0f10\",\"spanId\":\"0102030405060708\""
#define WRAP(spans) "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[" spans "]}]}]}"

static void json_corners(void) {
    static const struct {
        const char *body;
        int want;
    } cases[] = {
        {WRAP("{" SPAN_OK ",\"name\":\"a\\u00e9\\ud83d\\ude00\\n\"}"), DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"a\\u0000\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\\ud83d\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\\ude00\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"), DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"\xc0\xaf\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\xed\xa0\x80\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\xf4\x90\x80\x80\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"\x01\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"na\\u006de\":\"x\"}"), DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"na\\u006de\":\"y\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"o\":{\"a\":1,\"a\":1}}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":9223372036854775807,\"m\":-9223372036854775808}"),
         DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":9223372036854775808}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":1e308,\"m\":-1.5e-400}"), DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":1e309}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":01}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":1.}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":[1,]}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":nul}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"n\":truex}"), DQ_EPARSE},
        {WRAP("{\"name\":\"x\",\"traceId\":\"0102030405060708090a0b0c0d0e0f1\"}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"startTimeUnixNano\":1.5}"), DQ_EPARSE},
        {WRAP("{\"traceId\":\"0102030405060708090A0B0C0D0E0F10\",\"spanId\":"
              "\"\\u0030102030405060708\","
              "\"name\":\"x\",\"startTimeUnixNano\":1795600000000000000,\"endTimeUnixNano\":"
              "\"18446744073709551615\"}"),
         DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"status\":{\"code\":-1}}"), DQ_OK},
        /* times as strings: 20 digits with leading zeros, the largest, one more, 21 digits */
        {WRAP("{" SPAN_IDS ",\"name\":\"x\",\"startTimeUnixNano\":\"00000000000000000001\","
              "\"endTimeUnixNano\":\"9223372036854775807\"}"),
         DQ_OK},
        {WRAP("{" SPAN_IDS ",\"name\":\"x\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":"
              "\"9223372036854775808\"}"),
         DQ_EPARSE},
        {WRAP("{" SPAN_IDS ",\"name\":\"x\",\"startTimeUnixNano\":\"000000000000000000001\"}"),
         DQ_EPARSE},
        {WRAP("{" SPAN_IDS ",\"name\":\"x\",\"startTimeUnixNano\":\"17956000000000000x0\"}"),
         DQ_EPARSE},
        {WRAP("{" SPAN_IDS ",\"name\":\"x\",\"startTimeUnixNano\":\"1795600000\\u00300000000\","
              "\"endTimeUnixNano\":\"1795600000000000000\"}"),
         DQ_OK},
        {WRAP("{" SPAN_OK
              ",\"name\":\"x\",\"attributes\":null,\"status\":null,\"parentSpanId\":null,"
              "\"kind\":null}"),
         DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":null}"), DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"status\":{\"code\":\"STATUS_CODE_OK\",\"m\":[]}}"),
         DQ_OK},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"status\":{\"code\":true}}"), DQ_EPARSE},
        {WRAP("{" SPAN_OK ",\"name\":\"x\",\"attributes\":[{\"key\":\"k\",\"value\":{\"intValue\":"
              "\"12\"}},{\"key\":\"d\",\"value\":{\"doubleValue\":2}},{\"value\":{\"boolValue\":"
              "false},\"key\":\"b\"},{\"key\":\"i\",\"value\":{\"intValue\":true,\"boolValue\":"
              "true}},"
              "{\"key\":\"s\",\"value\":{\"stringValue\":5,\"doubleValue\":0.1}},7,null,"
              "{\"key\":\"e\",\"value\":{\"stringValue\":\"\\u00e9\\\"\\\\ long enough to be "
              "cut\"}}]}"),
         DQ_OK},
        {"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{" SPAN_OK ",\"name\":\"x\"}]}],"
         "\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":"
         "\"s\\u00e9\"}},{\"key\":\"service.name\",\"value\":{\"stringValue\":\"\"}}]}}]}",
         DQ_OK},
        {"{\"resourceSpans\":[{\"resource\":null,\"scopeSpans\":null}],\"x\":[[[[]]]]}  \n", DQ_OK},
        {"{\"resourceSpans\":[]} x", DQ_EPARSE},
        {"[{\"resourceSpans\":[]}]", DQ_EPARSE},
        {" \"x\"", DQ_EPARSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "JSON case %zu", i);
        const uint8_t *body = (const uint8_t *)cases[i].body;
        size_t len = strlen(cases[i].body);
        compare(body, len, 1, what);
        struct otlp_batch b;
        otlp_arena_reset(&arena);
        CHECK_MSG(otlp_decode_json(&arena, body, len, &b) == cases[i].want, "%s: want %d", what,
                  cases[i].want);
        otlp_batch_release(&b);
    }
    /* hex ids: every byte next to the hex digits' ranges, at each place of a word */
    static const char next_to_hex[] = "/:@G`g\x7f\xc3";
    for (size_t c = 0; c < sizeof next_to_hex - 1; c++) {
        for (int at = 0; at < 32; at += 3) {
            char id[33], body[512];
            memcpy(id, "0102030405060708090a0B0c0d0E0f10", 33);
            id[at] = next_to_hex[c];
            snprintf(body, sizeof body,
                     WRAP("{\"traceId\":\"%s\",\"spanId\":\"0102030405060708\",\"name\":\"x\","
                          "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"}"),
                     id);
            struct otlp_batch b;
            compare((const uint8_t *)body, strlen(body), 1, body);
            otlp_arena_reset(&arena);
            CHECK_MSG(otlp_decode_json(&arena, (const uint8_t *)body, strlen(body), &b) ==
                          DQ_EPARSE,
                      "%s", body);
            otlp_batch_release(&b);
        }
    }
    /* one NUL byte after a number or a literal is passed over (jansson reads one byte
     * ahead and puts it back), not two, not after a string */
    static const char nul_ok[] = "{\"a\":0\0,\"b\":true\0,\"c\":1.5\0}",
                      nul_two[] = "{\"a\":0\0\0}", nul_string[] = "{\"a\":\"x\"\0}";
    const char *nul[3] = {nul_ok, nul_two, nul_string};
    size_t nul_len[3] = {sizeof nul_ok - 1, sizeof nul_two - 1, sizeof nul_string - 1};
    for (int i = 0; i < 3; i++) {
        struct otlp_batch b;
        compare((const uint8_t *)nul[i], nul_len[i], 1, nul[i]);
        otlp_arena_reset(&arena);
        CHECK_INT(otlp_decode_json(&arena, (const uint8_t *)nul[i], nul_len[i], &b),
                  i == 0 ? DQ_OK : DQ_EPARSE);
        otlp_batch_release(&b);
    }
    /* depth: jansson takes 2048 values deep, counting scalars, and no more */
    for (int extra = -1; extra <= 1; extra++) {
        size_t depth = 2048 - 2 + (size_t)(extra + 1), n = 0; /* arrays under the root's key */
        char *deep = malloc(2 * depth + 64);
        n += (size_t)sprintf(deep, "{\"d\":");
        for (size_t k = 0; k < depth; k++) {
            deep[n++] = '[';
        }
        deep[n++] = '1';
        for (size_t k = 0; k < depth; k++) {
            deep[n++] = ']';
        }
        deep[n++] = '}';
        compare((const uint8_t *)deep, n, 1, "deep arrays");
        free(deep);
    }
}

/* Many small spans, more than the decoders' first guess of the span array holds: it grows. */
static void many_spans(void) {
    enum { N = 3000 };
    static uint8_t req[N * 64 + 64];
    static char json[N * 200 + 64];
    struct pb s;
    size_t at = 0, jl = 0;
    uint8_t ss[N * 64];
    size_t ss_n = 0;
    for (int i = 0; i < N; i++) {
        span_base(&s);
        bytes(&s, 5, i % 2 ? "a" : "b", 1);
        ss[ss_n++] = 2 << 3 | 2; /* ScopeSpans.spans */
        ss[ss_n++] = (uint8_t)s.n;
        memcpy(ss + ss_n, s.d, s.n);
        ss_n += s.n;
    }
    /* request { resource_spans (1) { scope_spans (2) { ss } } }, lengths as varints */
    struct pb hdr = {0};
    tag(&hdr, 2, 2);
    varint(&hdr, ss_n);
    struct pb top = {0};
    tag(&top, 1, 2);
    varint(&top, hdr.n + ss_n);
    memcpy(req + at, top.d, top.n);
    at += top.n;
    memcpy(req + at, hdr.d, hdr.n);
    at += hdr.n;
    memcpy(req + at, ss, ss_n);
    at += ss_n;
    CHECK(compare(req, at, 0, "3000 small protobuf spans"));
    jl += (size_t)snprintf(json, sizeof json, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[");
    for (int i = 0; i < N; i++) {
        jl += (size_t)snprintf(json + jl, sizeof json - jl, "%s{" SPAN_OK ",\"name\":\"s%d\"}",
                               i ? "," : "", i % 7);
    }
    jl += (size_t)snprintf(json + jl, sizeof json - jl, "]}]}]}");
    CHECK(compare((const uint8_t *)json, jl, 1, "3000 small JSON spans"));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_otlp_diff CORPUS_DIR\n");
        return 2;
    }
    otlp_arena_init(&arena, 64u << 20);
    otlp_arena_init(&ref_arena, 256u << 20);
    protobuf_corners();
    json_corners();
    many_spans();
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/otlp_protobuf", argv[1]);
    size_t pb_ok = 0, json_ok = 0;
    size_t pb_files = corpus(dir, 0, &pb_ok);
    snprintf(dir, sizeof dir, "%s/otlp_json", argv[1]);
    size_t json_files = corpus(dir, 1, &json_ok);
    /* the corpora are the fuzzers' (kept minimal by libFuzzer's merge): enough files to
     * mean something, of which a good number decode (the others are the refusals) */
    CHECK_MSG(pb_files >= 100 && json_files >= 100, "%zu protobuf and %zu JSON corpus files",
              pb_files, json_files);
    CHECK_MSG(pb_ok >= 20 && json_ok >= 20, "%zu protobuf and %zu JSON corpus files accepted",
              pb_ok, json_ok);
    printf("test_otlp_diff: %d bodies compared, %d accepted: %zu protobuf corpus files (%zu "
           "accepted) and %zu JSON (%zu accepted) with %d variants each, and the cases built "
           "here\n",
           compared, accepted, pb_files, pb_ok, json_files, json_ok, VARIANTS);
    otlp_arena_release(&arena);
    otlp_arena_release(&ref_arena);
    return check_done();
}
