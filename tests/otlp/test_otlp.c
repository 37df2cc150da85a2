/*
 * test_otlp.c: the OTLP receiver (controller/otlp/) without sockets. The decoders on good,
 * malformed, truncated, wrongly typed and oversized bodies; gzip and gzip bombs; the span to
 * probe mapping and the otlp_probes table; and whole requests through otlp_handle_body on a
 * real core over a real SQLite store with a manual clock: the answers (200 with
 * partial_success in the request's encoding, 400, 413, 415, 429 with Retry-After), the
 * counters, late spans, failed and timed-out spans, passive probes (always observed, on,
 * silent after otlp_silence without spans).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "core_env.h"
#include "otlp.h"
#include "otlp_decode_internal.h"
#include "otlp_trace.pb-c.h"

#define SEC 1000000000LL
#define T0 (1795600000LL * SEC) /* a window boundary (1 s windows) */

/* ---- building requests ---------------------------------------------------------------------- */

struct spec {
    const char *name;
    int64_t start, end;
    int status;
    int parent;    /* 1: has a parent id */
    int bad_trace; /* 1: a 4-byte trace id */
    const char *attr_key, *attr_value;
};

static uint8_t trace_id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* An ExportTraceServiceRequest of one resource (service) with the spans of specs; *len. */
static uint8_t *pb_request(const char *service, const struct spec *specs, size_t n, size_t *len) {
    Dqotlp__AnyValue sv = DQOTLP__ANY_VALUE__INIT;
    sv.value_case = DQOTLP__ANY_VALUE__VALUE_STRING_VALUE;
    sv.string_value = (char *)service;
    Dqotlp__KeyValue skv = DQOTLP__KEY_VALUE__INIT;
    skv.key = "service.name";
    skv.value = &sv;
    Dqotlp__KeyValue *res_attrs[1] = {&skv};
    Dqotlp__Resource res = DQOTLP__RESOURCE__INIT;
    res.n_attributes = service ? 1 : 0;
    res.attributes = res_attrs;
    Dqotlp__Span *spans[64], sp[64];
    Dqotlp__Status st[64];
    Dqotlp__KeyValue kv[64], *kvp[64];
    Dqotlp__AnyValue av[64];
    uint8_t sid[64][8], pid[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    for (size_t i = 0; i < n; i++) {
        dqotlp__span__init(&sp[i]);
        dqotlp__status__init(&st[i]);
        sp[i].name = (char *)specs[i].name;
        sp[i].trace_id.data = trace_id;
        sp[i].trace_id.len = specs[i].bad_trace ? 4 : 16;
        memset(sid[i], 0, 8);
        sid[i][0] = (uint8_t)(i + 1);
        sp[i].span_id.data = sid[i];
        sp[i].span_id.len = 8;
        if (specs[i].parent) {
            sp[i].parent_span_id.data = pid;
            sp[i].parent_span_id.len = 8;
        }
        sp[i].start_time_unix_nano = (uint64_t)specs[i].start;
        sp[i].end_time_unix_nano = (uint64_t)specs[i].end;
        st[i].code = specs[i].status;
        sp[i].status = &st[i];
        if (specs[i].attr_key) {
            dqotlp__key_value__init(&kv[i]);
            dqotlp__any_value__init(&av[i]);
            av[i].value_case = DQOTLP__ANY_VALUE__VALUE_STRING_VALUE;
            av[i].string_value = (char *)specs[i].attr_value;
            kv[i].key = (char *)specs[i].attr_key;
            kv[i].value = &av[i];
            kvp[i] = &kv[i];
            sp[i].n_attributes = 1;
            sp[i].attributes = &kvp[i];
        }
        spans[i] = &sp[i];
    }
    Dqotlp__ScopeSpans ss = DQOTLP__SCOPE_SPANS__INIT;
    ss.n_spans = n;
    ss.spans = spans;
    Dqotlp__ScopeSpans *ssp = &ss;
    Dqotlp__ResourceSpans rs = DQOTLP__RESOURCE_SPANS__INIT;
    rs.resource = &res;
    rs.n_scope_spans = 1;
    rs.scope_spans = &ssp;
    Dqotlp__ResourceSpans *rsp = &rs;
    Dqotlp__ExportTraceServiceRequest req = DQOTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
    req.n_resource_spans = 1;
    req.resource_spans = &rsp;
    *len = dqotlp__export_trace_service_request__get_packed_size(&req);
    uint8_t *buf = malloc(*len + 1);
    dqotlp__export_trace_service_request__pack(&req, buf);
    return buf;
}

static uint8_t *gzip(const void *in, size_t len, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, len) + 64;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

/* ---- decoders
 * ------------------------------------------------------------------------------------ */

static void test_protobuf(void) {
    struct otlp_arena a;
    otlp_arena_init(&a, 64 << 20);
    struct spec s[] = {
        {"GET /cart", T0, T0 + 5000000, 0, 0, 0, "http.route", "/cart"},
        {"db", T0 + 100, T0 + 2000000, 2, 1, 0, NULL, NULL},
        {"bad", T0, T0 + 1, 0, 0, 1, NULL, NULL},        /* a 4-byte trace id */
        {"backwards", T0 + 10, T0, 0, 0, 0, NULL, NULL}, /* ends before it starts */
        {"", T0, T0 + 1, 0, 0, 0, NULL, NULL},           /* no name */
    };
    size_t len;
    uint8_t *body = pb_request("shop", s, 5, &len);
    struct otlp_batch b;
    CHECK_INT(otlp_decode_protobuf(&a, body, len, &b), DQ_OK);
    CHECK_INT((int)b.n, 2);
    CHECK_INT((int)b.rejected, 3);
    CHECK(strstr(b.reason, "trace_id") != NULL);
    CHECK(b.n == 2 && b.spans[0].name_len == 9 && memcmp(b.spans[0].name, "GET /cart", 9) == 0);
    CHECK(b.n == 2 && b.spans[0].service_len == 4 && memcmp(b.spans[0].service, "shop", 4) == 0);
    CHECK(b.n == 2 && !b.spans[0].has_parent && b.spans[1].has_parent);
    CHECK(b.n == 2 && b.spans[1].status == 2 && b.spans[0].start_ns == T0);
    char v[64];
    CHECK(b.n == 2 && otlp_span_attr(&b.spans[0], "http.route", v, sizeof v) &&
          !strcmp(v, "/cart"));
    CHECK(b.n == 2 && otlp_span_attr(&b.spans[0], "service.name", v, sizeof v) &&
          !strcmp(v, "shop"));
    CHECK(b.n == 2 && !otlp_span_attr(&b.spans[0], "nope", v, sizeof v));
    otlp_batch_release(&b);

    /* every truncation of a valid body either decodes (a prefix ending on a field) or is
     * refused with DQ_EPARSE: never a crash */
    int refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        otlp_arena_reset(&a);
        int rc = otlp_decode_protobuf(&a, body, cut, &b);
        CHECK(rc == DQ_OK || rc == DQ_EPARSE);
        refused += rc == DQ_EPARSE;
        otlp_batch_release(&b);
    }
    CHECK(refused > (int)len / 2);
    /* wrongly typed: field 1 (resource_spans, a message) as a varint */
    static const uint8_t wrong_type[] = {0x08, 0x01};
    otlp_arena_reset(&a);
    CHECK_INT(otlp_decode_protobuf(&a, wrong_type, sizeof wrong_type, &b), DQ_EPARSE);
    otlp_batch_release(&b);
    /* a length past the end */
    static const uint8_t too_long[] = {0x0a, 0x7f, 0x0a};
    otlp_arena_reset(&a);
    CHECK_INT(otlp_decode_protobuf(&a, too_long, sizeof too_long, &b), DQ_EPARSE);
    otlp_batch_release(&b);
    /* garbage */
    uint8_t junk[512];
    for (size_t i = 0; i < sizeof junk; i++) {
        junk[i] = (uint8_t)(i * 37 + 11);
    }
    otlp_arena_reset(&a);
    CHECK_INT(otlp_decode_protobuf(&a, junk, sizeof junk, &b), DQ_EPARSE);
    otlp_batch_release(&b);
    /* an arena too small for the request: DQ_EFULL, not a parse error */
    struct otlp_arena small;
    otlp_arena_init(&small, 256);
    CHECK_INT(otlp_decode_protobuf(&small, body, len, &b), DQ_EFULL);
    otlp_batch_release(&b);
    otlp_arena_release(&small);
    free(body);
    /* an empty body is an empty request */
    otlp_arena_reset(&a);
    CHECK_INT(otlp_decode_protobuf(&a, (const uint8_t *)"", 0, &b), DQ_OK);
    CHECK_INT((int)b.n, 0);
    otlp_batch_release(&b);
    otlp_arena_release(&a);
}

/* the arena: bumps within its cap, keeps a small chunk across requests, frees a huge one */
static void test_arena(void) {
    struct otlp_arena a;
    otlp_arena_init(&a, 64u << 20);
    void *p = otlp_arena_alloc(&a, 100);
    CHECK(p && ((uintptr_t)p & 15) == 0);
    otlp_arena_reset(&a);
    CHECK(a.head != NULL && a.used == 0);
    CHECK(otlp_arena_alloc(&a, 100) == p); /* the kept chunk is reused */
    CHECK(otlp_arena_alloc(&a, 40u << 20) != NULL);
    CHECK(otlp_arena_alloc(&a, 30u << 20) == NULL && a.exhausted); /* past the cap */
    CHECK(otlp_arena_alloc(&a, 16) == NULL);                       /* until the reset */
    otlp_arena_reset(&a);
    CHECK(a.head == NULL && !a.exhausted); /* the 64 MiB chunk is not kept */
    CHECK(otlp_arena_alloc(&a, 16) != NULL);
    otlp_arena_release(&a);
}

static void test_json(void) {
    struct otlp_arena a;
    otlp_arena_init(&a, 64 << 20);
    struct otlp_batch b;
    const char *good =
        "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
        "\"value\":{\"stringValue\":\"shop\"}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"x\"},"
        "\"spans\":[{\"traceId\":\"0102030405060708090A0b0c0d0e0f10\",\"spanId\":"
        "\"0102030405060708\",\"parentSpanId\":\"\",\"name\":\"GET /cart\",\"kind\":2,"
        "\"startTimeUnixNano\":\"1795600000000000000\",\"endTimeUnixNano\":1795600000005000000,"
        "\"attributes\":[{\"key\":\"n\",\"value\":{\"intValue\":\"42\"}}],\"status\":{\"code\":2},"
        "\"unknownField\":[1,2]},"
        "{\"traceId\":\"0102030405060708090a0b0c0d0e0f10\",\"spanId\":\"0a0b0c0d0e0f0102\","
        "\"parentSpanId\":\"0102030405060708\",\"name\":\"db\",\"startTimeUnixNano\":"
        "\"1795600000001000000\",\"endTimeUnixNano\":\"1795600000002000000\",\"status\":{\"code\":"
        "\"STATUS_CODE_ERROR\"}},"
        "{\"traceId\":\"\",\"spanId\":\"0a0b0c0d0e0f0102\",\"name\":\"noid\","
        "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"}]}]}]}";
    CHECK_INT(otlp_decode_json(&a, (const uint8_t *)good, strlen(good), &b), DQ_OK);
    CHECK_INT((int)b.n, 2);
    CHECK_INT((int)b.rejected, 1);
    CHECK(b.n == 2 && b.spans[0].trace_id[9] == 0x0a && b.spans[0].status == 2);
    CHECK(b.n == 2 && b.spans[0].end_ns - b.spans[0].start_ns == 5000000);
    CHECK(b.n == 2 && !b.spans[0].has_parent && b.spans[1].has_parent && b.spans[1].status == 2);
    char v[64];
    CHECK(b.n == 2 && otlp_span_attr(&b.spans[0], "n", v, sizeof v) && !strcmp(v, "42"));
    CHECK(b.n == 2 && otlp_span_attr(&b.spans[1], "service.name", v, sizeof v) &&
          !strcmp(v, "shop"));
    otlp_batch_release(&b);
    /* malformed, truncated and wrongly typed bodies: DQ_EPARSE naming what is wrong */
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{\"resourceSpans\":\"x\"}",
        "{\"resourceSpans\":[{\"scopeSpans\":{}}]}",
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":5}]}]}]}",
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"a\",\"traceId\":\"xyz\"}]}]}]"
        "}",
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"a\",\"startTimeUnixNano\":"
        "\"12a\"}]}]}]}",
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"a\",\"endTimeUnixNano\":-5}]}"
        "]}]}",
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"a\",\"status\":3}]}]}]}",
        "{\"resourceSpans\":[{\"resource\":{\"attributes\":{}}}]}",
        "{\"resourceSpans\":[1]}",
        "{\"a\":1,\"a\":2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        otlp_arena_reset(&a);
        int rc = otlp_decode_json(&a, (const uint8_t *)bad[i], strlen(bad[i]), &b);
        CHECK_MSG(rc == DQ_EPARSE, "case %zu: %s -> %d", i, bad[i], rc);
        otlp_batch_release(&b);
    }
    size_t n = strlen(good);
    for (size_t cut = 0; cut < n; cut += 7) {
        otlp_arena_reset(&a);
        CHECK_INT(otlp_decode_json(&a, (const uint8_t *)good, cut, &b), DQ_EPARSE);
        otlp_batch_release(&b);
    }
    otlp_arena_release(&a);
}

static void test_gzip(void) {
    const char *text = "{\"resourceSpans\":[]}";
    size_t zl, out_len;
    uint8_t *z = gzip(text, strlen(text), &zl);
    uint8_t out[256];
    CHECK_INT(otlp_inflate(z, zl, out, sizeof out, &out_len), DQ_OK);
    CHECK(out_len == strlen(text) && memcmp(out, text, out_len) == 0);
    CHECK_INT(otlp_inflate(z, zl - 3, out, sizeof out, &out_len), DQ_EPARSE); /* truncated */
    z[12] ^= 0x55;
    CHECK_INT(otlp_inflate(z, zl, out, sizeof out, &out_len), DQ_EPARSE); /* corrupt */
    free(z);
    CHECK_INT(otlp_inflate((const uint8_t *)"plain", 5, out, sizeof out, &out_len), DQ_EPARSE);
    /* a bomb: 64 MiB of zeros in about 64 KiB, stopped at the cap */
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    z = gzip(zeros, big, &zl);
    free(zeros);
    CHECK(zl < 200000);
    uint8_t *cap = malloc(1 << 20);
    CHECK_INT(otlp_inflate(z, zl, cap, 1 << 20, &out_len), DQ_EFULL);
    CHECK(strstr(dq_last_error(), "inflates to more than") != NULL);
    free(cap);
    free(z);
}

static void test_names(void) {
    struct otlp_span s = {
        .service = "shop", .service_len = 4, .name = "GET /cart/:id", .name_len = 13};
    char out[PROBES_NAME_MAX + 2];
    CHECK_INT((int)otlp_probe_name(&s, NULL, 0, out, sizeof out), 13);
    CHECK_STR(out, "GET__cart__id");
    s.name = "3ds";
    s.name_len = 3;
    otlp_probe_name(&s, NULL, 0, out, sizeof out);
    CHECK_STR(out, "_3ds");
    char longname[600];
    memset(longname, 'x', sizeof longname);
    s.name = longname;
    s.name_len = sizeof longname;
    CHECK_INT((int)otlp_probe_name(&s, NULL, 0, out, sizeof out), PROBES_NAME_MAX);
    CHECK(wire_name_valid(out, strlen(out)));
    struct dqd_otlp_rule rules[3];
    memset(rules, 0, sizeof rules);
    strcpy(rules[0].service, "billing");
    strcpy(rules[0].probe, "billing_any");
    strcpy(rules[1].span, "GET /cart*");
    strcpy(rules[1].probe, "cart");
    strcpy(rules[2].service, "shop");
    rules[2].n_attrs = 1;
    strcpy(rules[2].attr_key[0], "db.system");
    strcpy(rules[2].attr_value[0], "postgres");
    strcpy(rules[2].probe, "pg");
    s.name = "GET /cart/7";
    s.name_len = 11;
    otlp_probe_name(&s, rules, 3, out, sizeof out);
    CHECK_STR(out, "cart");
    s.service = "billing";
    s.service_len = 7;
    otlp_probe_name(&s, rules, 3, out, sizeof out);
    CHECK_STR(out, "billing_any");
    s.service = "shop";
    s.service_len = 4;
    s.name = "query";
    s.name_len = 5;
    otlp_probe_name(&s, rules, 3, out, sizeof out);
    CHECK_STR(out, "query"); /* no attributes: rule 2 does not match */
}

/* The probe name rule, byte by byte: [A-Za-z0-9_] kept, any other byte '_', a name that
 * starts with a digit gets a '_' before it. */
static size_t ref_probe_name(const char *name, size_t n, char *out) {
    size_t o = 0;
    if (n > 0 && name[0] >= '0' && name[0] <= '9') {
        out[o++] = '_';
    }
    for (size_t i = 0; i < n && o < PROBES_NAME_MAX; i++) {
        unsigned char c = (unsigned char)name[i];
        int keep =
            (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        out[o++] = keep ? (char)c : '_';
    }
    out[o] = '\0';
    return o;
}

/* otlp_probe_name reads a word at a time: every byte value at every place of names of 0 to
 * 24 bytes, and random names, against the rule byte by byte */
static void test_names_words(void) {
    static const char fill[] = "aZ9_zA0bQx";
    char name[32], out[PROBES_NAME_MAX + 2], want[PROBES_NAME_MAX + 2];
    struct otlp_span s = {.service = "shop", .service_len = 4, .name = name};
    int bad = 0;
    for (size_t n = 1; n <= 24; n++) {
        for (size_t at = 0; at < n; at++) {
            for (int b = 0; b < 256; b++) {
                for (size_t i = 0; i < n; i++) {
                    name[i] = fill[(i + n) % 10];
                }
                name[at] = (char)b;
                s.name_len = n;
                size_t got = otlp_probe_name(&s, NULL, 0, out, sizeof out);
                size_t exp = ref_probe_name(name, n, want);
                bad += got != exp || strcmp(out, want) != 0;
            }
        }
    }
    uint64_t x = 0x2545f4914f6cdd1dULL;
    for (int k = 0; k < 20000; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % 31);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            name[i] = (x & 3) ? fill[(x >> 8) % 10] : (char)(x >> 16);
        }
        s.name_len = n;
        size_t got = otlp_probe_name(&s, NULL, 0, out, sizeof out);
        bad += got != ref_probe_name(name, n, want) || strcmp(out, want) != 0;
    }
    s.name_len = 0;
    CHECK_INT((int)otlp_probe_name(&s, NULL, 0, out, sizeof out), 0);
    /* a buffer of 1 or 2 bytes: cut, never overrun (the '_' before a digit included) */
    char small[3] = {'x', 'x', 'x'};
    s.name = "9lives";
    s.name_len = 6;
    CHECK_INT((int)otlp_probe_name(&s, NULL, 0, small, 1), 0);
    CHECK(small[0] == '\0' && small[1] == 'x');
    CHECK_INT((int)otlp_probe_name(&s, NULL, 0, small, 2), 1);
    CHECK(strcmp(small, "_") == 0 && small[2] == 'x');
    CHECK_MSG(bad == 0, "%d names differ from the rule byte by byte", bad);
}

/* What otlp_text_check answers, written from the definition: code points decoded one by
 * one, an overlong form, a surrogate or one above U+10FFFF refused; the first fault
 * counts. */
static int ref_text(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == 0) {
            return OTLP_TEXT_NUL;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 0 || i + len > n) {
            return OTLP_TEXT_NOT_UTF8;
        }
        uint32_t cp = c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return OTLP_TEXT_NOT_UTF8;
            }
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return OTLP_TEXT_NOT_UTF8;
        }
        i += len;
    }
    return OTLP_TEXT_OK;
}

/* otlp_text_check reads a word at a time: every byte value at every place of texts of 0 to
 * 24 bytes, UTF-8 sequences (good, cut, overlong) at every place, and random texts */
static void test_text_words(void) {
    unsigned char t[40];
    int bad = 0;
    for (size_t n = 0; n <= 24; n++) {
        for (size_t at = 0; at < n; at++) {
            for (int b = 0; b < 256; b++) {
                memset(t, 'k', n);
                t[at] = (unsigned char)b;
                bad += otlp_text_check((const char *)t, n) != ref_text(t, n);
            }
        }
    }
    static const char *const seqs[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e",
                                       "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                       "\xe2\x82", "\xe0\x80\xaf", "\xc3\x00"};
    int seen_ok = 0;
    for (size_t q = 0; q < sizeof seqs / sizeof *seqs; q++) {
        size_t k = q == 8 ? 2 : strlen(seqs[q]);
        for (size_t n = k; n <= 24; n++) {
            for (size_t at = 0; at + k <= n; at++) {
                memset(t, 'k', n);
                memcpy(t + at, seqs[q], k);
                int want = ref_text(t, n);
                seen_ok += want == OTLP_TEXT_OK;
                bad += otlp_text_check((const char *)t, n) != want;
            }
        }
    }
    static const unsigned char alpha[] = {'a',  'z',  0,    0x80, 0xbf, 0xc3,
                                          0xa9, 0xe2, 0x82, 0xf0, 0x9d};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < 50000; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % 33);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            t[i] = (x & 1) ? 'q' : alpha[(x >> 8) % sizeof alpha];
        }
        bad += otlp_text_check((const char *)t, n) != ref_text(t, n);
    }
    CHECK(seen_ok > 100);
    CHECK_MSG(bad == 0, "%d texts judged unlike the definition", bad);
}

/* ---- whole requests
 * ------------------------------------------------------------------------------- */

struct env {
    struct core_env c;
    struct otlp *otlp;
};

static void env_open(struct env *e, double max_sps, size_t max_body) {
    core_env_open(&e->c, "test_otlp", T0 + SEC / 2);
    struct otlp_options oo = {.listen = "127.0.0.1:0",
                              .silence_ns = 15 * SEC,
                              .max_body = max_body,
                              .max_spans_per_second = max_sps,
                              .recent_spans = 100};
    CHECK_INT(otlp_create(&e->c.loop, e->c.core, &oo, &e->otlp), DQ_OK);
}

static void env_close(struct env *e) {
    otlp_close(e->otlp, NULL, NULL);
    core_env_close(&e->c);
}

static int post(struct env *e, const char *ct, const char *enc, const void *body, size_t len,
                struct http_response *res) {
    http_response_release(res);
    http_response_init(res, 1 << 20);
    otlp_handle_body(e->otlp, ct, enc, NULL, body, len, res);
    return res->status;
}

static void test_requests(void) {
    struct env e;
    env_open(&e, 0, 1 << 20);
    struct http_response res;
    http_response_init(&res, 1 << 20);
    struct spec s[] = {
        {"checkout", T0, T0 + 30000000, 0, 0, 0, NULL, NULL},
        {"checkout", T0, T0 + 40000000, 2, 0, 0, NULL, NULL},  /* ERROR: failed */
        {"checkout", T0, T0 + 300000000, 0, 0, 0, NULL, NULL}, /* past dMax 100 ms: timed out */
        {"bad", T0, T0, 0, 0, 1, NULL, NULL},
    };
    size_t len;
    uint8_t *body = pb_request("shop", s, 4, &len);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 200);
    CHECK(strstr(res.content_type, "application/x-protobuf") != NULL);
    Dqotlp__ExportTraceServiceResponse *r =
        dqotlp__export_trace_service_response__unpack(NULL, res.len, (uint8_t *)res.body);
    CHECK(r && r->partial_success && r->partial_success->rejected_spans == 1);
    CHECK(r && r->partial_success && strstr(r->partial_success->error_message, "trace_id"));
    dqotlp__export_trace_service_response__free_unpacked(r, NULL);
    struct probe *p = probes_find(core_probes(e.c.core), "checkout", 8);
    CHECK(p && p->total_ok == 1 && p->total_fa == 1 && p->total_to == 1);
    CHECK(p && p->passive && p->enabled && p->always_on);
    /* gzip, with parameters in the content type */
    size_t zl;
    uint8_t *z = gzip(body, len, &zl);
    CHECK_INT(post(&e, "application/x-protobuf; charset=binary", "gzip", z, zl, &res), 200);
    CHECK(p && p->total_ok == 2);
    CHECK_INT(post(&e, "application/x-protobuf", "gzip", z, zl - 5, &res), 400);
    CHECK_INT(post(&e, "application/x-protobuf", "br", z, zl, &res), 415);
    free(z);
    /* all accepted: an empty response */
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len / 2 > 0 ? 0 : 0, &res), 200);
    CHECK_INT((int)res.len, 0);
    free(body);
    /* JSON: the answer in JSON, partial_success's count as a string */
    const char *late =
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":"
        "\"0102030405060708090a0b0c0d0e0f10\",\"spanId\":\"0102030405060708\",\"name\":\"old\","
        "\"startTimeUnixNano\":\"1000\",\"endTimeUnixNano\":\"2000\"}]}]}]}";
    CHECK_INT(post(&e, "application/json", NULL, late, strlen(late), &res), 200);
    CHECK(strstr(res.content_type, "application/json") != NULL);
    CHECK(res.len > 0 && strstr(res.body, "\"rejectedSpans\":\"1\"") != NULL);
    CHECK(res.len > 0 && strstr(res.body, "later than otlp_lag") != NULL);
    CHECK_INT(post(&e, "application/json", NULL, "{\"resourceSpans\":[]}", 20, &res), 200);
    CHECK(res.len == 2 && memcmp(res.body, "{}", 2) == 0);
    /* 400 in the request's encoding: a google.rpc.Status */
    CHECK_INT(post(&e, "application/json", NULL, "{\"resourceSpans\":7}", 19, &res), 400);
    CHECK(strstr(res.body, "\"code\":3") && strstr(res.body, "resourceSpans must be an array"));
    static const uint8_t junk[] = {0x0a, 0x05, 0x12, 0x03};
    CHECK_INT(post(&e, "application/x-protobuf", NULL, junk, sizeof junk, &res), 400);
    Dqotlp__RpcStatus *rs = dqotlp__rpc_status__unpack(NULL, res.len, (uint8_t *)res.body);
    CHECK(rs && rs->code == 3 && strstr(rs->message, "protobuf"));
    dqotlp__rpc_status__free_unpacked(rs, NULL);
    /* 415: another content type, or none */
    CHECK_INT(post(&e, "text/plain", NULL, "x", 1, &res), 415);
    CHECK_INT(post(&e, NULL, NULL, "x", 1, &res), 415);
    CHECK_INT(post(&e, "application/jsonx", NULL, "{}", 2, &res), 415);
    /* 413: a gzip bomb stops at the body cap */
    size_t big = 8u << 20;
    uint8_t *zeros = calloc(1, big);
    z = gzip(zeros, big, &zl);
    free(zeros);
    CHECK_INT(post(&e, "application/json", "gzip", z, zl, &res), 413);
    CHECK(strstr(res.body, "inflates to more than") != NULL);
    free(z);
    struct otlp_stats st;
    otlp_get_stats(e.otlp, &st);
    CHECK_INT((int)st.spans_accepted, 6);
    CHECK_INT((int)st.spans_late, 1);
    CHECK_INT((int)st.spans_rejected, 2);
    CHECK_INT((int)st.bytes_inflated > 0, 1);
    CHECK_INT((int)st.services, 2); /* shop, unknown_service */
    /* the recent spans with their ids */
    json_t *recent = otlp_recent_json(e.otlp, "shop", 100);
    CHECK(recent && json_array_size(recent) == 6);
    CHECK(recent &&
          !strcmp(json_string_value(json_object_get(json_array_get(recent, 0), "trace_id")),
                  "0102030405060708090a0b0c0d0e0f10"));
    json_decref(recent);
    recent = otlp_recent_json(e.otlp, NULL, 2);
    CHECK(recent && json_array_size(recent) == 2);
    json_decref(recent);

    /* silence: checkout had spans in window T0; none after. Its empty windows are quiet
     * until otlp_silence (15 s) has passed, then no data */
    for (int k = 1; k <= 12; k++) {
        clock_manual_set(&e.c.manual, T0 + k * SEC);
        core_close_due(e.c.core, clock_now(&e.c.clock), NULL, NULL);
    }
    struct probe_silence si;
    CHECK(p && !probes_silence(core_probes(e.c.core), p, &si));
    for (int k = 13; k <= 30; k++) {
        clock_manual_set(&e.c.manual, T0 + k * SEC);
        core_close_due(e.c.core, clock_now(&e.c.clock), NULL, NULL);
    }
    CHECK(p && probes_silence(core_probes(e.c.core), p, &si) == 1);
    /* dated from its last span (in window T0), the run of no-data windows from 15 s on */
    CHECK(p && si.run_start_ns == T0 + 15 * SEC && si.since_ns == p->last_end_ns &&
          si.since_ns < T0 + SEC && si.since_ns >= T0 && !strcmp(si.origin.label, "otlp") &&
          !strcmp(si.origin.node, "shop"));
    http_response_release(&res);
    env_close(&e);
}

static void test_budget(void) {
    struct env e;
    env_open(&e, 10, 1 << 20); /* 10 spans per second */
    struct http_response res;
    http_response_init(&res, 1 << 20);
    struct spec s[8];
    for (int i = 0; i < 8; i++) {
        s[i] = (struct spec){"a", T0, T0 + 1000, 0, 0, 0, NULL, NULL};
    }
    size_t len;
    uint8_t *body = pb_request("svc", s, 8, &len);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 200);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 429);
    CHECK(strstr(res.extra, "Retry-After: 1") != NULL);
    clock_manual_set(&e.c.manual, T0 + SEC / 2 + 2 * SEC);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 200);
    struct otlp_stats st;
    otlp_get_stats(e.otlp, &st);
    CHECK_INT((int)st.spans_throttled, 8);
    CHECK_INT((int)st.spans_accepted, 16);
    free(body);
    /* a batch larger than the bucket (10) gets in on a full bucket, then the debt is paid */
    struct spec big[20];
    for (int i = 0; i < 20; i++) {
        big[i] = (struct spec){"a", T0, T0 + 1000, 0, 0, 0, NULL, NULL};
    }
    body = pb_request("svc", big, 20, &len);
    clock_manual_set(&e.c.manual, T0 + SEC / 2 + 5 * SEC);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 200);
    clock_manual_set(&e.c.manual, T0 + SEC / 2 + 6 * SEC); /* 1 s: the debt of 10 is paid */
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 429);
    CHECK(strstr(res.extra, "Retry-After: 1") != NULL);
    clock_manual_set(&e.c.manual, T0 + SEC / 2 + 7 * SEC);
    CHECK_INT(post(&e, "application/x-protobuf", NULL, body, len, &res), 200);
    free(body);
    http_response_release(&res);
    env_close(&e);
}

/* One span named name of service svc from peer, at the clock; the reply's status, and
 * its partial_success message in why (JSON). */
static int post_one(struct env *e, const char *peer, const char *svc, const char *name,
                    struct http_response *res) {
    int64_t now = clock_now(&e->c.clock);
    struct spec s = {name, now - 2000000, now - 1000000, 0, 0, 0, NULL, NULL};
    size_t len;
    uint8_t *body = pb_request(svc, &s, 1, &len);
    http_response_release(res);
    http_response_init(res, 1 << 20);
    otlp_handle_body(e->otlp, "application/x-protobuf", NULL, peer, body, len, res);
    free(body);
    return res->status;
}

/* The partial_success message of a protobuf reply ("" when none). */
static const char *partial_why(const struct http_response *res, char *buf, size_t cap) {
    Dqotlp__ExportTraceServiceResponse *r =
        dqotlp__export_trace_service_response__unpack(NULL, res->len, (uint8_t *)res->body);
    snprintf(buf, cap, "%s",
             r && r->partial_success && r->partial_success->error_message
                 ? r->partial_success->error_message
                 : "");
    dqotlp__export_trace_service_response__free_unpacked(r, NULL);
    return buf;
}

static int count_enabled_rows(void *ctx, const struct store_probe *sp) {
    *(int *)ctx += sp->enabled || sp->always_on;
    return 0;
}

static int veto_keep(void *ctx, const struct probe *p) {
    (void)ctx;
    return strcmp(p->name, "a1") == 0;
}

/* Issue 26, item 1: new names are a budget of the daemon: per peer whatever the service,
 * then the daemon's rate; observed probes at most max_observed, evicted least recently
 * seen first, removed when idle, never stored as enabled; a real probe always gets a slot;
 * the partial_success names the reasons as /metrics does. */
static void test_name_budget(void) {
    struct env e;
    env_open(&e, 0, 1 << 20);
    struct probe_table *t = core_probes(e.c.core);
    probes_set_name_limit(t, 1, 4); /* per peer: 4 at once, then 1 a second */
    struct probes_name_budget nb = {
        .all_per_second = 1, .all_burst = 6, .max_observed = 8, .idle_windows = 20};
    probes_set_name_budget(t, &nb);
    core_set_range_veto(e.c.core, veto_keep, NULL);
    struct http_response res;
    http_response_init(&res, 1 << 20);
    char name[32], svc[32], why[640];
    /* one peer, a new service per span: the peer's 4, then new_name_rate */
    int accepted = 0;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "a%d", i);
        snprintf(svc, sizeof svc, "svc%d", i);
        CHECK_INT(post_one(&e, "10.0.0.1", svc, name, &res), 200);
        accepted += partial_why(&res, why, sizeof why)[0] == '\0';
        if (i >= 4) {
            CHECK_MSG(strstr(why, "1 new_name_rate (") != NULL, "span %d: \"%s\"", i, why);
        }
    }
    CHECK_INT(accepted, 4);
    CHECK_INT((int)t->name_rate, 6);
    /* another peer: the daemon's burst (6) leaves it 2 */
    accepted = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "b%d", i);
        CHECK_INT(post_one(&e, "10.0.0.2", "shop", name, &res), 200);
        accepted += partial_why(&res, why, sizeof why)[0] == '\0';
    }
    CHECK_INT(accepted, 2);
    CHECK_INT((int)t->count, 6);
    /* a real probe always gets a slot */
    struct probe *real;
    CHECK_INT(probes_get(t, "real", 4, &real), DQ_OK);
    CHECK(!probes_observed(real));
    /* 10 s later: the rates allow more, but observed probes stop at 8; then the one seen
     * least recently makes room (not a1: an investigation holds it) */
    clock_manual_set(&e.c.manual, T0 + 10 * SEC);
    core_close_due(e.c.core, clock_now(&e.c.clock), NULL, NULL);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "c%d", i);
        CHECK_INT(post_one(&e, "10.0.0.3", "shop", name, &res), 200);
        CHECK_MSG(partial_why(&res, why, sizeof why)[0] == '\0', "c%d: \"%s\"", i, why);
    }
    size_t observed = 0;
    for (size_t i = 0; i < t->count; i++) {
        observed += probes_observed(t->probes[i]) != 0;
    }
    CHECK_INT((int)observed, 8);
    CHECK_INT((int)t->evicted, 2);
    CHECK(probes_find(t, "a1", 2) != NULL && probes_find(t, "real", 4) != NULL);
    CHECK(probes_find(t, "c3", 2) != NULL);
    /* OTLP probes are observed: enabled in memory, never stored as enabled */
    struct probe *c3 = probes_find(t, "c3", 2);
    CHECK(c3 && c3->passive && c3->enabled && probes_evictable(t, c3));
    struct probe *b0 = probes_find(t, "b0", 2);
    CHECK(b0 != NULL);
    if (b0) {
        struct dq_qta q = {.n = 1, .p = {0.5}, .t = {0.1}, .max_lost = 0.1};
        CHECK_INT(core_set_qta(e.c.core, b0, &q), DQ_OK); /* a person gave it a QTA */
        CHECK(!probes_observed(b0));
    }
    for (int k = 11; k <= 40; k++) {
        clock_manual_set(&e.c.manual, T0 + k * SEC);
        core_close_due(e.c.core, clock_now(&e.c.clock), NULL, NULL);
    }
    int rows = 0;
    CHECK_INT(store_probes_each(e.c.store, count_enabled_rows, &rows), DQ_OK);
    CHECK_INT(rows, 0);
    /* idle: every observed probe without a span for 20 windows went, but a1 (held) */
    CHECK_MSG(t->idle >= 6, "%d removed as idle", (int)t->idle);
    CHECK(probes_find(t, "a1", 2) && probes_find(t, "b0", 2) && probes_find(t, "real", 4));
    CHECK(!probes_find(t, "c3", 2) && !probes_find(t, "a0", 2));
    /* a full table: the reasons say probe_table_full */
    nb.max_observed = 1;
    probes_set_name_budget(t, &nb);
    CHECK_INT(post_one(&e, "10.0.0.4", "shop", "d0", &res), 200);
    CHECK_MSG(strstr(partial_why(&res, why, sizeof why), "1 probe_table_full (") != NULL, "\"%s\"",
              why);
    struct otlp_stats st;
    otlp_get_stats(e.otlp, &st);
    CHECK_INT((int)st.spans_name_rate, 8);
    CHECK_INT((int)st.spans_full, 1);
    http_response_release(&res);
    env_close(&e);
}

static const struct check_case cases[] = {
    CHECK_CASE(arena),       CHECK_CASE(protobuf),   CHECK_CASE(json),   CHECK_CASE(gzip),
    CHECK_CASE(names),       CHECK_CASE(requests),   CHECK_CASE(budget), CHECK_CASE(name_budget),
    CHECK_CASE(names_words), CHECK_CASE(text_words),
};

CHECK_MAIN(cases)
