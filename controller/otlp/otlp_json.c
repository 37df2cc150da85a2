/*
 * otlp_json.c: OTLP/JSON to spans in one streaming pass over the body, without a document
 * tree (docs/otlp.md, "Decoding"). Strings without escapes stay in the body; a string
 * with escapes that dqd keeps (a name, a service) is decoded into the arena. The span
 * array grows in the arena. Attributes are kept as the text of their arrays and read from
 * it when a mapping asks.
 *
 * It refuses what jansson (json_loadb with JSON_REJECT_DUPLICATES) refused, and the known
 * keys with the wrong type as before (tests/otlp/test_otlp_diff.c compares the two):
 *   - strict JSON: an object or an array at the top, then only whitespace; no trailing
 *     comma, no leading zero, literals true, false and null only;
 *   - strings in UTF-8 (no overlong form, no surrogate, nothing above U+10FFFF), no
 *     control character, escapes \" \\ \/ \b \f \n \r \t and \uXXXX (a high surrogate
 *     followed by a low one), never \u0000;
 *   - no key twice in one object (compared after unescaping);
 *   - integers (no fraction, no exponent) within a signed 64-bit integer, reals below
 *     overflow as strtod reads them;
 *   - at most 2048 values deep, counting the scalars.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "otlp.h"
#include "otlp_decode_internal.h"

#define MAX_DEPTH 2048  /* jansson's JSON_PARSER_MAX_DEPTH */
#define SMALL_OBJECT 16 /* keys compared pair by pair up to this many, sorted beyond */
#define KEYS_INLINE 64

struct jkey {
    uint64_t hash;
    const char *p; /* the key's bytes, unescaped */
    size_t n;
};

struct jp {
    const uint8_t *p, *end, *body;
    struct otlp_arena *a; /* NULL when reading attributes again (no checks, no copies) */
    int depth;
    int rc; /* DQ_EPARSE or DQ_EFULL once failed */
    /* the keys of the objects open, innermost last (for the duplicate check) */
    struct jkey *keys;
    size_t n_keys, cap_keys;
    struct jkey keys_inline[KEYS_INLINE];
};

enum jtype { J_NONE, J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_OBJECT, J_ARRAY };

/* A scalar as read: its type and where its text is. */
struct jval {
    enum jtype type;
    const uint8_t *p; /* J_STRING: the raw text between the quotes; J_NUMBER: the token */
    size_t n;
    int esc;    /* J_STRING: has escapes */
    int is_int; /* J_NUMBER: no fraction, no exponent */
    long long i;
    double d;
};

/* ---- errors ------------------------------------------------------------------------------ */

static int syntax(struct jp *j, const uint8_t *at, const char *what) {
    if (!j->rc) {
        j->rc = dq_fail(DQ_EPARSE, "OTLP/JSON: at byte %zu: %s", (size_t)(at - j->body), what);
    }
    return -1;
}

static int wrong(struct jp *j, const char *where, const char *want) {
    if (!j->rc) {
        j->rc = dq_fail(DQ_EPARSE, "OTLP/JSON: %s must be %s", where, want);
    }
    return -1;
}

static int full(struct jp *j) {
    if (!j->rc) {
        j->rc = dq_fail(DQ_EFULL, "the request decodes to more than %zu bytes", j->a->cap);
    }
    return -1;
}

/* ---- strings ----------------------------------------------------------------------------- */

static inline void ws(struct jp *j) {
    if (j->p<j->end && * j->p> ' ') {
        return; /* the usual case: no whitespace at all */
    }
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) {
        j->p++;
    }
}

/* A hex digit's value plus one; 0 for any other byte. */
static const uint8_t HEX1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};

static int hexval(int c) {
    return HEX1[c & 0xff] - 1;
}

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

static uint64_t load8(const void *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w; /* little-endian hosts */
}

/* Nonzero when one of the 8 bytes of w ends a plain run of a string: a quote, a
 * backslash, a control character or a byte of a UTF-8 sequence (may say so wrongly for
 * bytes after the first such one, never for a word without one). */
static uint64_t special8(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w) & HIGH;
}

/* The 4 hex digits at p (at least 4 bytes), or −1. */
static long hex4(const uint8_t *p) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) {
            return -1;
        }
        v = v << 4 | h;
    }
    return v;
}

/* The length of the UTF-8 sequence at p (rem bytes left) when it is valid, else 0. */
static size_t utf8_seq(const uint8_t *p, size_t rem) {
    unsigned c = p[0];
    size_t k;
    unsigned long v;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2, v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3, v = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4, v = c & 0x07;
    } else {
        return 0;
    }
    if (rem < k) {
        return 0;
    }
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        v = v << 6 | (p[i] & 0x3f);
    }
    if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || (k == 3 && v < 0x800) ||
        (k == 4 && v < 0x10000)) {
        return 0;
    }
    return k;
}

#ifdef __SSE2__
/* special8 for 16 bytes, a bit each (SSE2: every x86-64) */
static inline unsigned special16(const uint8_t *p) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i q = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i b = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    __m128i c = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)); /* signed: 0x80 and above too */
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, b), c));
}
#endif

/* Scans the string at j->p (a '"') into v, checking it; j->p after it. */
static inline __attribute__((always_inline)) int str_scan(struct jp *j, struct jval *v) {
    const uint8_t *p = j->p + 1, *end = j->end;
    v->type = J_STRING;
    v->p = p;
    v->esc = 0;
    for (;;) {
#ifdef __SSE2__
        while (end - p >= 16) {
            unsigned m = special16(p);
            if (m) {
                p += __builtin_ctz(m);
                goto special;
            }
            p += 16;
        }
#endif
        while (end - p >= 8) {
            uint64_t m = special8(load8(p));
            if (m) {
                p += __builtin_ctzll(m) >> 3; /* the first one is flagged rightly */
                goto special;
            }
            p += 8;
        }
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
            p++;
        }
    special:
        if (p >= end) {
            return syntax(j, p, "a string does not end");
        }
        if (*p == '"') {
            break;
        }
        if (*p < 0x20) {
            return syntax(j, p, "a control character in a string");
        }
        if (*p >= 0x80) {
            size_t k = utf8_seq(p, (size_t)(end - p));
            if (!k) {
                return syntax(j, p, "a string is not UTF-8");
            }
            p += k;
            continue;
        }
        v->esc = 1; /* a backslash */
        if (end - p < 2) {
            return syntax(j, p, "a string does not end");
        }
        if (p[1] != 'u') {
            if (!strchr("\"\\/bfnrt", p[1]) || !p[1]) {
                return syntax(j, p, "an invalid escape");
            }
            p += 2;
            continue;
        }
        long cp = end - p >= 6 ? hex4(p + 2) : -1;
        if (cp < 0) {
            return syntax(j, p, "an invalid \\u escape");
        }
        if (cp == 0) {
            return syntax(j, p, "\\u0000 in a string");
        }
        p += 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            return syntax(j, p, "a lone low surrogate");
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            long lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
            if (lo < 0xdc00 || lo > 0xdfff) {
                return syntax(j, p, "a high surrogate without its low one");
            }
            p += 6;
        }
    }
    v->n = (size_t)(p - v->p);
    j->p = p + 1;
    return 0;
}

/* Decodes one character of a checked string at *pp into out (1 to 4 bytes): its length. */
static size_t str_unit(const uint8_t **pp, uint8_t out[4]) {
    const uint8_t *p = *pp;
    if (*p != '\\') {
        out[0] = *p;
        *pp = p + 1;
        return 1;
    }
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (p[1] != 'u') {
        out[0] = (uint8_t)to[strchr(from, p[1]) - from];
        *pp = p + 2;
        return 1;
    }
    unsigned long cp = (unsigned long)hex4(p + 2);
    p += 6;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned long)hex4(p + 2) - 0xdc00);
        p += 6;
    }
    *pp = p;
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/*
 * Copies the unescaped string v into out, at most cap bytes; returns its whole length.
 */
static size_t str_copy(const struct jval *v, char *out, size_t cap) {
    if (!v->esc) {
        memcpy(out, v->p, v->n < cap ? v->n : cap);
        return v->n;
    }
    const uint8_t *p = v->p, *end = v->p + v->n;
    size_t n = 0;
    while (p < end) {
        uint8_t u[4];
        size_t k = str_unit(&p, u);
        for (size_t i = 0; i < k; i++, n++) {
            if (n < cap) {
                out[n] = (char)u[i];
            }
        }
    }
    return n;
}

/* 1 when the unescaped string v is want (n bytes). */
static int str_eq(const struct jval *v, const char *want, size_t n) {
    if (!v->esc) {
        return v->n == n && memcmp(v->p, want, n) == 0;
    }
    if (v->n < n) {
        return 0; /* unescaping only shortens */
    }
    const uint8_t *p = v->p, *end = v->p + v->n;
    size_t at = 0;
    while (p < end) {
        uint8_t u[4];
        size_t k = str_unit(&p, u);
        if (at + k > n || memcmp(want + at, u, k) != 0) {
            return 0;
        }
        at += k;
    }
    return at == n;
}

/* The bytes of string v, unescaped into the arena when it has escapes. */
static int str_bytes(struct jp *j, const struct jval *v, const char **out, size_t *n) {
    if (!v->esc) {
        *out = (const char *)v->p;
        *n = v->n;
        return 0;
    }
    char *buf = otlp_arena_alloc(j->a, v->n);
    if (!buf) {
        return full(j);
    }
    *n = str_copy(v, buf, v->n);
    *out = buf;
    return 0;
}

/* ---- scalars ----------------------------------------------------------------------------- */

static int is_digit(const uint8_t *p, const uint8_t *end) {
    return p < end && *p >= '0' && *p <= '9';
}

/* After a number or a literal: jansson reads one byte ahead and puts it back, and a NUL
 * byte put back is passed over. */
static void after_lookahead(struct jp *j) {
    if (j->p < j->end && *j->p == 0) {
        j->p++;
    }
}

/* Scans the number at j->p into v as jansson reads it. */
static int num_scan(struct jp *j, struct jval *v) {
    const uint8_t *p = j->p, *end = j->end;
    int neg = *p == '-';
    p += neg;
    if (!is_digit(p, end)) {
        return syntax(j, p, "an invalid number");
    }
    if (*p == '0') {
        p++;
        if (is_digit(p, end)) {
            return syntax(j, p, "a number with a leading zero");
        }
    }
    while (is_digit(p, end)) {
        p++;
    }
    v->type = J_NUMBER;
    v->p = j->p;
    v->is_int = !(p < end && (*p == '.' || *p == 'e' || *p == 'E'));
    if (v->is_int) {
        unsigned long long x = 0, lim = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
        for (const uint8_t *q = j->p + neg; q < p; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (x > (lim - d) / 10) {
                return syntax(j, j->p, "an integer beyond 64 bits");
            }
            x = x * 10 + d;
        }
        v->i = neg ? (x == lim ? (-9223372036854775807LL - 1) : -(long long)x) : (long long)x;
        v->d = (double)v->i;
    } else {
        if (*p == '.') {
            p++;
            if (!is_digit(p, end)) {
                return syntax(j, p, "an invalid number");
            }
            while (is_digit(p, end)) {
                p++;
            }
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            p++;
            p += p < end && (*p == '+' || *p == '-');
            if (!is_digit(p, end)) {
                return syntax(j, p, "an invalid number");
            }
            while (is_digit(p, end)) {
                p++;
            }
        }
        if (p >= end) {
            return syntax(j, p, "the body ends in a number");
        }
        /* strtod reads exactly the token: a byte that cannot continue a number follows */
        errno = 0;
        v->d = strtod((const char *)j->p, NULL);
        if ((v->d == HUGE_VAL || v->d == -HUGE_VAL) && errno == ERANGE) {
            return syntax(j, j->p, "a real number overflows");
        }
    }
    v->n = (size_t)(p - j->p);
    j->p = p;
    after_lookahead(j);
    return 0;
}

static int literal(struct jp *j, const char *word, enum jtype t, struct jval *v) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) {
        return syntax(j, j->p, "an invalid literal");
    }
    j->p += n;
    v->type = t;
    after_lookahead(j);
    return 0;
}

/* Reads a scalar at j->p into v, or says which container starts there (not consumed). */
static int scalar(struct jp *j, struct jval *v) {
    if (j->p >= j->end) {
        return syntax(j, j->p, "a value is missing");
    }
    switch (*j->p) {
    case '{':
        v->type = J_OBJECT;
        return 0;
    case '[':
        v->type = J_ARRAY;
        return 0;
    case '"':
        return str_scan(j, v);
    case 't':
        return literal(j, "true", J_TRUE, v);
    case 'f':
        return literal(j, "false", J_FALSE, v);
    case 'n':
        return literal(j, "null", J_NULL, v);
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
            return num_scan(j, v);
        }
        return syntax(j, j->p, "an invalid value");
    }
}

/* ---- containers -------------------------------------------------------------------------- */

static int enter(struct jp *j) {
    if (++j->depth > MAX_DEPTH) {
        return syntax(j, j->p, "more than 2048 values deep");
    }
    return 0;
}

/* A hash of a key from its length and its first and last 8 bytes (keys that share them
 * are told apart by the comparison). */
static uint64_t key_hash(const char *p, size_t n) {
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        a = load8(p);
        b = load8(p + n - 8);
    } else {
        for (size_t i = 0; i < n; i++) {
            a = a << 8 | (uint8_t)p[i];
        }
    }
    uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ULL) ^ n) * 0xff51afd7ed558ccdULL;
    return h ^ (h >> 29);
}

static int push_key(struct jp *j, const char *p, size_t n) {
    if (j->n_keys == j->cap_keys) {
        struct jkey *k = otlp_arena_alloc(j->a, 2 * j->cap_keys * sizeof *k);
        if (!k) {
            return full(j);
        }
        memcpy(k, j->keys, j->n_keys * sizeof *k);
        j->keys = k;
        j->cap_keys *= 2;
    }
    j->keys[j->n_keys++] = (struct jkey){key_hash(p, n), p, n};
    return 0;
}

static int key_cmp(const void *x, const void *y) {
    const struct jkey *a = x, *b = y;
    if (a->hash != b->hash) {
        return a->hash < b->hash ? -1 : 1;
    }
    if (a->n != b->n) {
        return a->n < b->n ? -1 : 1;
    }
    return memcmp(a->p, b->p, a->n);
}

/* 1 when two of the keys k[0..n) are equal. */
static int has_duplicate(struct jkey *k, size_t n) {
    if (n <= SMALL_OBJECT) {
        for (size_t a = 1; a < n; a++) {
            for (size_t b = 0; b < a; b++) {
                if (k[a].hash == k[b].hash && key_cmp(&k[a], &k[b]) == 0) {
                    return 1;
                }
            }
        }
        return 0;
    }
    qsort(k, n, sizeof *k, key_cmp);
    for (size_t a = 1; a < n; a++) {
        if (key_cmp(&k[a - 1], &k[a]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The keys an OTLP object may have, those dqd reads first: a key found here is told by its
 * index, and checked against the others by a bit; other keys go to the stack of keys. */
struct key {
    const char *name;
    size_t len;
    unsigned hash; /* of its length and first and last bytes, as schema_find computes it */
};

struct schema {
    int n;
    const struct key *keys;
    int ready;        /* the index below is built (at the first use) */
    int8_t first[64]; /* by hash: the first key's index + 1, 0 for none */
    int8_t next[32];  /* the next key of the same hash, + 1 */
};

#define K(s)                                                                                       \
    {                                                                                              \
        s, sizeof s - 1,                                                                           \
            ((sizeof s - 1) * 7 + (unsigned)(uint8_t)s[0] * 3 +                                    \
             (unsigned)(uint8_t)s[sizeof s - 2]) &                                                 \
                63                                                                                 \
    }
#define SCHEMA(name, ...)                                                                          \
    static const struct key name##_keys[] = {__VA_ARGS__};                                         \
    static struct schema name = {                                                                  \
        sizeof name##_keys / sizeof name##_keys[0], name##_keys, 0, {0}, {0}}

enum { ROOT_RESOURCE_SPANS };
SCHEMA(ROOT, K("resourceSpans"));
enum { RS_RESOURCE, RS_SCOPE_SPANS };
SCHEMA(RESOURCE_SPANS, K("resource"), K("scopeSpans"), K("schemaUrl"));
enum { RES_ATTRIBUTES };
SCHEMA(RESOURCE, K("attributes"), K("droppedAttributesCount"));
enum { SS_SPANS };
SCHEMA(SCOPE_SPANS, K("spans"), K("scope"), K("schemaUrl"));
enum { F_TRACE, F_SPAN, F_PARENT, F_NAME, F_START, F_END, F_ATTRS, F_STATUS };
SCHEMA(SPAN, K("traceId"), K("spanId"), K("parentSpanId"), K("name"), K("startTimeUnixNano"),
       K("endTimeUnixNano"), K("attributes"), K("status"), K("kind"), K("traceState"), K("flags"),
       K("droppedAttributesCount"), K("events"), K("droppedEventsCount"), K("links"),
       K("droppedLinksCount"));
enum { STATUS_CODE };
SCHEMA(STATUS, K("code"), K("message"));
enum { KV_KEY, KV_VALUE };
SCHEMA(KV, K("key"), K("value"));
enum { ANY_STRING, ANY_INT, ANY_BOOL, ANY_DOUBLE };
SCHEMA(ANY, K("stringValue"), K("intValue"), K("boolValue"), K("doubleValue"), K("arrayValue"),
       K("kvlistValue"), K("bytesValue"));
static struct schema NONE = {0, NULL, 1, {0}, {0}};

/* 1 when the n bytes at a and b are the same (short keys: a few loads, no call). */
static inline int same_bytes(const char *a, const char *b, size_t n) {
    if (n < 8) {
        if (n >= 4) {
            uint32_t x[2], y[2];
            memcpy(&x[0], a, 4);
            memcpy(&x[1], a + n - 4, 4);
            memcpy(&y[0], b, 4);
            memcpy(&y[1], b + n - 4, 4);
            return x[0] == y[0] && x[1] == y[1];
        }
        for (size_t i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return 0;
            }
        }
        return 1;
    }
    return load8(a) == load8(b) && load8(a + n - 8) == load8(b + n - 8) &&
           (n <= 16 || memcmp(a + 8, b + 8, n - 16) == 0);
}

/* The index of key k (n bytes) in sc, or −1: its length and first and last bytes pick the
 * candidates. */
static inline __attribute__((always_inline)) int schema_find(struct schema *sc, const char *k,
                                                             size_t n) {
    if (!sc->ready) {
        for (int i = sc->n - 1; i >= 0; i--) { /* chains in the schema's order */
            sc->next[i] = sc->first[sc->keys[i].hash];
            sc->first[sc->keys[i].hash] = (int8_t)(i + 1);
        }
        sc->ready = 1;
    }
    if (n == 0) {
        return -1;
    }
    unsigned h = ((unsigned)n * 7 + (uint8_t)k[0] * 3 + (uint8_t)k[n - 1]) & 63;
    for (int i = sc->first[h] - 1; i >= 0; i = sc->next[i] - 1) {
        const struct key *c = &sc->keys[i];
        if (c->len == n && same_bytes(c->name, k, n)) {
            return i;
        }
    }
    return -1;
}

/* An object's members: obj_begin at '{' (entered), then obj_next until it returns 0 at
 * the closing '}' (left, keys checked) or −1; each 1 leaves j->p at the member's value,
 * which the caller reads, and says which key of the schema it is (−1: another). */
struct jobj {
    struct schema *sc;
    uint32_t seen; /* the schema's keys seen */
    size_t keys;   /* where the object's other keys start on the stack */
    int first;
};

static int obj_begin(struct jp *j, struct jobj *o, struct schema *sc) {
    if (enter(j)) {
        return -1;
    }
    j->p++;
    o->sc = sc;
    o->seen = 0;
    o->keys = j->n_keys;
    o->first = 1;
    return 0;
}

/* Which key of the object's schema key is (−1: another, pushed on the stack of keys). */
static int known_key(struct jp *j, struct jobj *o, const struct jval *key) {
    int field = -1;
    if (!key->esc) {
        field = schema_find(o->sc, (const char *)key->p, key->n);
    } else if (o->sc->n) {
        char k[32];
        size_t n = str_copy(key, k, sizeof k);
        field = n <= sizeof k ? schema_find(o->sc, k, n) : -1;
    }
    if (field >= 0) {
        if (o->seen & 1u << field) {
            return syntax(j, key->p, "a key twice in one object") - 1;
        }
        o->seen |= 1u << field;
        return field;
    }
    const char *kp;
    size_t kn;
    if (j->a && (str_bytes(j, key, &kp, &kn) || push_key(j, kp, kn))) {
        return -2;
    }
    return -1;
}

static int obj_next(struct jp *j, struct jobj *o, struct jval *key, int *field) {
    ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        j->depth--;
        if (j->a && has_duplicate(j->keys + o->keys, j->n_keys - o->keys)) {
            return syntax(j, j->p, "a key twice in one object");
        }
        j->n_keys = o->keys;
        return 0;
    }
    if (!o->first) {
        if (j->p >= j->end || *j->p != ',') {
            return syntax(j, j->p, "',' or '}' expected");
        }
        j->p++;
        ws(j);
    }
    o->first = 0;
    if (j->p >= j->end || *j->p != '"') {
        return syntax(j, j->p, "a key expected");
    }
    if (str_scan(j, key)) {
        return -1;
    }
    *field = known_key(j, o, key);
    if (*field < -1) {
        return -1;
    }
    ws(j);
    if (j->p >= j->end || *j->p != ':') {
        return syntax(j, j->p, "':' expected");
    }
    j->p++;
    ws(j);
    return 1;
}

/* An array's elements: arr_begin at '[', then arr_next until 0 at ']' or −1; each 1 leaves
 * j->p at the element. */
static int arr_begin(struct jp *j, int *first) {
    if (enter(j)) {
        return -1;
    }
    j->p++;
    *first = 1;
    return 0;
}

static int arr_next(struct jp *j, int *first) {
    ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        j->depth--;
        return 0;
    }
    if (!*first) {
        if (j->p >= j->end || *j->p != ',') {
            return syntax(j, j->p, "',' or ']' expected");
        }
        j->p++;
        ws(j);
    }
    *first = 0;
    if (j->p >= j->end) {
        return syntax(j, j->p, "a value is missing");
    }
    return 1;
}

/* Reads (checks) any value at j->p. */
static int skip(struct jp *j) {
    struct jval v;
    if (scalar(j, &v)) {
        return -1;
    }
    if (v.type == J_OBJECT) {
        struct jobj o;
        struct jval k;
        int rc, field;
        if (obj_begin(j, &o, &NONE)) {
            return -1;
        }
        while ((rc = obj_next(j, &o, &k, &field)) > 0) {
            if (skip(j)) {
                return -1;
            }
        }
        return rc;
    }
    if (v.type == J_ARRAY) {
        int first, rc;
        if (arr_begin(j, &first)) {
            return -1;
        }
        while ((rc = arr_next(j, &first)) > 0) {
            if (skip(j)) {
                return -1;
            }
        }
        return rc;
    }
    /* a scalar counts as a level of its own */
    return j->depth + 1 > MAX_DEPTH ? syntax(j, v.p, "more than 2048 values deep") : 0;
}

/* ---- OTLP fields ------------------------------------------------------------------------- */

/* HIGH in each byte of w (every byte below 0x80) that lies in [lo, hi]. */
static uint64_t in_range8(uint64_t w, unsigned lo, unsigned hi) {
    return (w + ONES * (0x80 - lo)) & ~(w + ONES * (0x7f - hi)) & HIGH;
}

/* The 8 hex digits at t as 4 bytes into out; nonzero when one is not a hex digit. */
static unsigned hex8(const uint8_t *t, uint8_t *out) {
    uint64_t w = load8(t);
    if (w & HIGH) {
        return 1;
    }
    uint64_t letter = in_range8(w, 'a', 'f') | in_range8(w, 'A', 'F');
    if ((in_range8(w, '0', '9') | letter) != HIGH) {
        return 1;
    }
    uint64_t v = (w & (ONES * 0x0f)) + (letter >> 7) * 9; /* each byte a digit's value */
    v = ((v << 4) | (v >> 8)) & 0x00ff00ff00ff00ffULL;    /* pairs in the even bytes */
    v = (v | (v >> 8)) & 0x0000ffff0000ffffULL;
    v = (v | (v >> 16)) & 0xffffffffULL;
    memcpy(out, &v, 4); /* little-endian: the first pair first */
    return 0;
}

/* A hex id of at most n bytes into out: its length in bytes (0 for null or ""), −1 when
 * it is not a string of hex digits of an even count. */
static int hex_id(const struct jval *v, uint8_t *out, size_t n) {
    if (v->type == J_NULL) {
        return 0;
    }
    char text[40];
    if (v->type != J_STRING) {
        return -1;
    }
    const uint8_t *t = v->p;
    size_t len = v->n;
    if (v->esc) {
        len = str_copy(v, text, sizeof text);
        t = (const uint8_t *)text;
    }
    if (len % 2 != 0 || len / 2 > n) {
        return -1;
    }
    unsigned bad = 0;
    size_t i = 0;
    for (; 2 * i + 8 <= len; i += 4) {
        bad |= hex8(t + 2 * i, out + i);
    }
    for (; i < len / 2; i++) {
        unsigned hi = HEX1[t[2 * i]], lo = HEX1[t[2 * i + 1]];
        bad |= !hi | !lo;
        out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    return bad ? -1 : (int)(len / 2);
}

/* The value of the 8 decimal digits at t, or −1 when one is not a digit. */
static int64_t digits8(const uint8_t *t) {
    uint64_t w = load8(t);
    if ((w & (ONES * 0xf0)) != ONES * 0x30 || ((w + ONES * 6) & (ONES * 0xf0)) != ONES * 0x30) {
        return -1;
    }
    w -= ONES * '0';
    w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffULL;           /* pairs of digits in 16-bit lanes */
    w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffULL;         /* fours in 32-bit lanes */
    return (int64_t)((w * 10000 + (w >> 32)) & 0xffffffffULL); /* the first digit leads */
}

/* A time in ns: a non-negative integer or a decimal string of at most 20 digits within 63
 * bits; 0 for null; −1 otherwise. */
static int64_t nanos(const struct jval *v) {
    if (v->type == J_NULL) {
        return 0;
    }
    if (v->type == J_NUMBER) {
        return v->is_int && v->i >= 0 ? v->i : -1;
    }
    char text[24];
    const uint8_t *t = v->p;
    size_t len = v->type == J_STRING ? v->n : 0;
    if (v->type == J_STRING && v->esc) {
        len = str_copy(v, text, sizeof text);
        t = (const uint8_t *)text;
    }
    if (len == 0 || len > 20) {
        return -1;
    }
    /* the digits' value, eight at a time while that stays below 10^19 */
    uint64_t x = 0;
    size_t i = 0;
    for (; i + 8 <= len && i + 8 <= 19; i += 8) {
        int64_t d = digits8(t + i);
        if (d < 0) {
            return -1;
        }
        x = x * 100000000 + (uint64_t)d;
    }
    for (; i < len; i++) {
        if (t[i] < '0' || t[i] > '9' || x > (UINT64_MAX - 9) / 10) {
            return -1;
        }
        x = x * 10 + (uint64_t)(t[i] - '0');
    }
    return x > INT64_MAX ? -1 : (int64_t)x;
}

/* The value of a known key that must be an object or null: 1 with the object begun in o,
 * 0 for null, −1 otherwise (naming where and what it must be). */
static int object_or_null(struct jp *j, struct jobj *o, struct schema *sc, const char *where,
                          const char *want) {
    struct jval v;
    if (scalar(j, &v)) {
        return -1;
    }
    if (v.type == J_NULL) {
        return 0;
    }
    if (v.type != J_OBJECT) {
        return wrong(j, where, want);
    }
    return obj_begin(j, o, sc) ? -1 : 1;
}

/* Span.status: its code (an integer, or the enum's name); −1 when malformed. */
static int status(struct jp *j, int *code) {
    struct jobj o;
    struct jval k, v;
    int field;
    *code = 0;
    int rc = object_or_null(j, &o, &STATUS, "span.status", "an object with an integer code");
    if (rc <= 0) {
        return rc;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        if (field != STATUS_CODE) {
            if (skip(j)) {
                return -1;
            }
            continue;
        }
        if (scalar(j, &v)) {
            return -1;
        }
        if (v.type == J_NUMBER && v.is_int) {
            *code = (int)(v.i & 0x7fffffff);
        } else if (v.type == J_STRING) {
            *code = str_eq(&v, "STATUS_CODE_ERROR", 17) ? 2 : str_eq(&v, "STATUS_CODE_OK", 14);
        } else if (v.type != J_NULL) {
            return wrong(j, "span.status", "an object with an integer code");
        }
    }
    return rc;
}

/* A KeyValue's parts as read: its key when a string, its value's members when an object. */
struct jkv {
    struct jval key;                        /* J_NONE when absent or not a string */
    struct jval str, integer, boolean, dbl; /* the AnyValue's members, J_NONE when absent */
};

/* Reads an AnyValue's members into kv (an object is begun in o). */
static int any_read(struct jp *j, struct jobj *o, struct jkv *kv) {
    struct jval k, v;
    int rc, field;
    while ((rc = obj_next(j, o, &k, &field)) > 0) {
        struct jval *slot = field == ANY_STRING   ? &kv->str
                            : field == ANY_INT    ? &kv->integer
                            : field == ANY_BOOL   ? &kv->boolean
                            : field == ANY_DOUBLE ? &kv->dbl
                                                  : NULL;
        if (!slot) {
            if (skip(j)) {
                return -1;
            }
            continue;
        }
        if (scalar(j, &v)) {
            return -1;
        }
        if (v.type == J_OBJECT || v.type == J_ARRAY) {
            if (skip(j)) {
                return -1;
            }
            v.type = J_OBJECT; /* no scalar: it has no text */
        }
        *slot = v.type == J_NULL ? (struct jval){.type = J_NONE} : v;
    }
    return rc;
}

/* Reads one element of an attributes array into kv (anything but an object: nothing). */
static int kv_read(struct jp *j, struct jkv *kv) {
    struct jobj o, vo;
    struct jval k, v;
    int rc, field;
    kv->key.type = kv->str.type = kv->integer.type = kv->boolean.type = kv->dbl.type = J_NONE;
    if (*j->p != '{') {
        return skip(j);
    }
    if (obj_begin(j, &o, &KV)) {
        return -1;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        if (field < 0) {
            rc = skip(j);
        } else if (scalar(j, &v)) {
            return -1;
        } else if (v.type == J_OBJECT) {
            rc =
                field == KV_VALUE ? (obj_begin(j, &vo, &ANY) ? -1 : any_read(j, &vo, kv)) : skip(j);
        } else if (v.type == J_ARRAY) {
            rc = skip(j);
        } else if (field == KV_KEY && v.type == J_STRING) {
            kv->key = v;
        }
        if (rc < 0) {
            return -1;
        }
    }
    return rc;
}

/* The text of an AnyValue as jansson's decoder printed it: 1, or 0 when it has none. */
static int kv_text(const struct jkv *kv, char *buf, size_t cap) {
    if (kv->str.type == J_STRING) {
        size_t n = str_copy(&kv->str, buf, cap - 1);
        buf[n < cap - 1 ? n : cap - 1] = '\0';
    } else if (kv->integer.type != J_NONE) {
        if (kv->integer.type == J_NUMBER && kv->integer.is_int) {
            snprintf(buf, cap, "%lld", kv->integer.i);
        } else if (kv->integer.type == J_STRING) {
            size_t n = str_copy(&kv->integer, buf, cap - 1);
            buf[n < cap - 1 ? n : cap - 1] = '\0';
        } else {
            return 0;
        }
    } else if (kv->boolean.type == J_TRUE || kv->boolean.type == J_FALSE) {
        snprintf(buf, cap, "%s", kv->boolean.type == J_TRUE ? "true" : "false");
    } else if (kv->dbl.type == J_NUMBER) {
        snprintf(buf, cap, "%.17g", kv->dbl.d);
    } else {
        return 0;
    }
    return 1;
}

/*
 * Reads an attributes array at j->p (its text into *at, *n): with key, the first pair of
 * that key decides (2 when it has text, in buf; 1 when it has none); 0 when none. With
 * svc, the last non-empty string service.name into *svc.
 */
static int kvs(struct jp *j, const char *key, char *buf, size_t cap, struct jval *svc,
               const void **at, size_t *n) {
    const uint8_t *start = j->p;
    int first, rc;
    if (arr_begin(j, &first)) {
        return -1;
    }
    while ((rc = arr_next(j, &first)) > 0) {
        struct jkv kv;
        if (kv_read(j, &kv)) {
            return -1;
        }
        if (kv.key.type != J_STRING) {
            continue;
        }
        if (key && str_eq(&kv.key, key, strlen(key))) {
            return kv_text(&kv, buf, cap) ? 2 : 1;
        }
        if (svc && kv.str.type == J_STRING && kv.str.n > 0 && str_eq(&kv.key, "service.name", 12)) {
            *svc = kv.str;
        }
    }
    if (at) {
        *at = start;
        *n = (size_t)(j->p - start);
    }
    return rc;
}

/* A known key whose value must be an array of KeyValues, or null: read by kvs. */
static int attributes(struct jp *j, const char *where, struct jval *svc, const void **at,
                      size_t *n) {
    struct jval v;
    if (scalar(j, &v)) {
        return -1;
    }
    *at = NULL;
    *n = 0;
    if (v.type == J_ARRAY) {
        return kvs(j, NULL, NULL, 0, svc, at, n) < 0 ? -1 : 0;
    }
    return v.type == J_NULL ? 0 : wrong(j, where, "an array");
}

/* The spans array: grows in the arena. */
struct spans {
    struct otlp_batch *b;
    size_t cap;
};

static int span(struct jp *j, struct spans *sa) {
    struct otlp_batch *b = sa->b;
    /* the span array first for a span every 200 bytes (an SDK's take more) */
    struct otlp_span *s = otlp_span_slot(j->a, b, &sa->cap, (size_t)(j->end - j->body) / 200 + 16);
    if (!s) {
        return full(j);
    }
    memset(s, 0, sizeof *s);
    s->name = "";
    s->json = 1;
    int tl = 0, sl = 0, pl = 0, field, rc;
    struct jobj o;
    struct jval k, v;
    if (*j->p != '{') {
        return wrong(j, "a span", "an object");
    }
    if (obj_begin(j, &o, &SPAN)) {
        return -1;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        if (field < 0 || field > F_STATUS) {
            rc = skip(j);
        } else if (field == F_STATUS) {
            rc = status(j, &s->status);
        } else if (field == F_ATTRS) {
            rc = attributes(j, "span.attributes", NULL, &s->attrs, &s->n_attrs);
        } else if (scalar(j, &v)) {
            return -1;
        } else if (field == F_NAME) {
            if (v.type == J_STRING) {
                rc = str_bytes(j, &v, &s->name, &s->name_len);
            } else if (v.type != J_NULL) {
                return wrong(j, "span.name", "a string");
            }
        } else if (field == F_TRACE || field == F_SPAN || field == F_PARENT) {
            int *len = field == F_TRACE ? &tl : field == F_SPAN ? &sl : &pl;
            uint8_t *out = field == F_TRACE  ? s->trace_id
                           : field == F_SPAN ? s->span_id
                                             : s->parent_id;
            *len = hex_id(&v, out, field == F_TRACE ? 16 : 8);
            if (*len < 0) {
                return wrong(j, "traceId, spanId and parentSpanId",
                             "hex strings (32, 16, 16 digits)");
            }
        } else {
            int64_t t = nanos(&v);
            if (t < 0) {
                return wrong(j, "startTimeUnixNano and endTimeUnixNano",
                             "decimal strings or integers of nanoseconds");
            }
            *(field == F_START ? &s->start_ns : &s->end_ns) = t;
        }
        if (rc < 0) {
            return -1;
        }
    }
    if (rc < 0) {
        return -1;
    }
    s->has_parent = pl == 8 && !otlp_all_zero(s->parent_id, 8);
    /* a JSON string is UTF-8 without NUL (the parser refuses the body otherwise) */
    if (otlp_span_check(b, s, (size_t)tl, (size_t)sl, (size_t)pl, OTLP_TEXT_OK)) {
        b->n++;
    }
    return 0;
}

/* ResourceSpans.resource: its attributes' text and service.name. */
static int resource(struct jp *j, const void **attrs, size_t *n_attrs, struct jval *svc) {
    struct jval k;
    struct jobj o;
    int field, rc = object_or_null(j, &o, &RESOURCE, "resource", "an object");
    if (rc <= 0) {
        return rc;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        rc = field == RES_ATTRIBUTES ? attributes(j, "resource.attributes", svc, attrs, n_attrs)
                                     : skip(j);
        if (rc < 0) {
            return -1;
        }
    }
    return rc;
}

/* An array of a known key (null: none): each element through each(j, ctx). */
static int each_of(struct jp *j, const char *where, int (*each)(struct jp *, void *), void *ctx) {
    struct jval v;
    int first, rc;
    if (scalar(j, &v)) {
        return -1;
    }
    if (v.type == J_NULL) {
        return 0;
    }
    if (v.type != J_ARRAY) {
        return wrong(j, where, "an array");
    }
    if (arr_begin(j, &first)) {
        return -1;
    }
    while ((rc = arr_next(j, &first)) > 0) {
        if (each(j, ctx)) {
            return -1;
        }
    }
    return rc;
}

static int each_span(struct jp *j, void *ctx) {
    return span(j, ctx);
}

static int each_scope_spans(struct jp *j, void *ctx) {
    struct jobj o;
    struct jval k;
    int rc, field;
    if (*j->p != '{') {
        return wrong(j, "scopeSpans[]", "an object");
    }
    if (obj_begin(j, &o, &SCOPE_SPANS)) {
        return -1;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        if ((field == SS_SPANS ? each_of(j, "spans", each_span, ctx) : skip(j)) < 0) {
            return -1;
        }
    }
    return rc;
}

static int each_resource_spans(struct jp *j, void *ctx) {
    struct spans *sa = ctx;
    struct jobj o;
    struct jval k, svc = {.type = J_NONE};
    const void *attrs = NULL;
    size_t n_attrs = 0, first = sa->b->n;
    int rc, field;
    if (*j->p != '{') {
        return wrong(j, "resourceSpans[]", "an object");
    }
    if (obj_begin(j, &o, &RESOURCE_SPANS)) {
        return -1;
    }
    while ((rc = obj_next(j, &o, &k, &field)) > 0) {
        rc = field == RS_RESOURCE      ? resource(j, &attrs, &n_attrs, &svc)
             : field == RS_SCOPE_SPANS ? each_of(j, "scopeSpans", each_scope_spans, sa)
                                       : skip(j);
        if (rc < 0) {
            return -1;
        }
    }
    if (rc < 0) {
        return -1;
    }
    /* the resource may come after its spans: they get its service now */
    const char *name = OTLP_UNKNOWN_SERVICE;
    size_t name_n = sizeof OTLP_UNKNOWN_SERVICE - 1;
    if (svc.type == J_STRING && str_bytes(j, &svc, &name, &name_n)) {
        return -1;
    }
    for (size_t i = first; i < sa->b->n; i++) {
        sa->b->spans[i].service = name;
        sa->b->spans[i].service_len = name_n;
        sa->b->spans[i].res_attrs = attrs;
        sa->b->spans[i].n_res_attrs = n_attrs;
    }
    return 0;
}

static void jp_init(struct jp *j, struct otlp_arena *a, const uint8_t *p, size_t n) {
    j->p = j->body = p;
    j->end = p + n;
    j->a = a;
    j->depth = 0;
    j->rc = 0;
    j->keys = j->keys_inline;
    j->n_keys = 0;
    j->cap_keys = KEYS_INLINE;
}

int otlp_decode_json(struct otlp_arena *a, const uint8_t *body, size_t len, struct otlp_batch *b) {
    memset(b, 0, sizeof *b);
    struct jp j;
    struct spans sa = {b, 0};
    struct jobj o;
    struct jval k;
    int rc, field;
    jp_init(&j, a, body ? body : (const uint8_t *)"", body ? len : 0);
    ws(&j);
    if (j.p >= j.end || (*j.p != '{' && *j.p != '[')) {
        syntax(&j, j.p, "'[' or '{' expected");
        goto fail;
    }
    if (*j.p == '[') {
        if (skip(&j) == 0) {
            wrong(&j, "the body", "an object");
        }
        goto fail;
    }
    if (obj_begin(&j, &o, &ROOT)) {
        goto fail;
    }
    while ((rc = obj_next(&j, &o, &k, &field)) > 0) {
        if ((field == ROOT_RESOURCE_SPANS ? each_of(&j, "resourceSpans", each_resource_spans, &sa)
                                          : skip(&j)) < 0) {
            goto fail;
        }
    }
    if (rc < 0) {
        goto fail;
    }
    ws(&j);
    if (j.p != j.end) {
        syntax(&j, j.p, "the end of the body expected");
        goto fail;
    }
    return DQ_OK;
fail:
    b->n = 0;
    b->rejected = 0;
    return j.rc;
}

/* ---- attributes -------------------------------------------------------------------------- */

int otlp_json_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap) {
    const void *arr[2] = {s->attrs, s->res_attrs};
    size_t n[2] = {s->n_attrs, s->n_res_attrs};
    for (int i = 0; i < 2; i++) {
        if (!arr[i]) {
            continue;
        }
        struct jp j;
        jp_init(&j, NULL, arr[i], n[i]);
        if (kvs(&j, key, buf, cap, NULL, NULL, NULL) == 2) {
            return 1; /* else the resource's attributes */
        }
    }
    return 0;
}
