/*
 * proto.c: parser, line splitter and command formatter of the wrapper protocol.
 *
 * Workload: every outcome instance of every instrumented application passes through
 * wire_splitter_feed() and wire_parse() on dqd's loop thread, millions per second at
 * peak. So the parser walks the line once with a moving pointer, classifies bytes with
 * a few comparisons instead of library calls, returns slices instead of copies, and
 * tests the instance prefix before anything else. The rarer v2 control lines (hello,
 * ack, drop, state) are parsed just as strictly but without concern for speed.
 *
 * Strictness: anything docs/protocol.md does not allow is an error of one kind, decided by
 * the first thing that goes wrong walking the line left to right (a missing field is
 * FIELD, a field with a bad value is the kind of that value). The only leniency is
 * the one the protocol asks for: unknown trailing fields of a v2 instance, and of
 * hello and state lines, are skipped so newer wrappers can add fields.
 */
#include "wire.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dq_error.h"
#include "wire_internal.h"

static const struct {
    const char *label;
    const char *msg;
} err_info[WIRE_E_COUNT] = {{"ok", "no error"},
#define WIRE_ERR_INFO_(name, label, msg) {label, msg},
                            WIRE_ERR_MAP(WIRE_ERR_INFO_)
#undef WIRE_ERR_INFO_
};

const char *wire_err_name(int err) {
    if (err < 0 || err >= WIRE_E_COUNT) {
        return "invalid";
    }
    return err_info[err].label;
}

const char *wire_err_message(int err) {
    if (err < 0 || err >= WIRE_E_COUNT) {
        return "invalid error kind";
    }
    return err_info[err].msg;
}

/* ---- character classes -------------------------------------------------------------- */

/*
 * Byte classes as bits of one table, so each test on the hot path is a load and a mask.
 * The table is written out (it is derived from the character sets of docs/protocol.md):
 *   C_NAME   [A-Za-z0-9_]        probe names after the first byte
 *   C_DIGIT  [0-9]
 *   C_HEX    [0-9A-Fa-f]         i:, t:, p: values
 *   C_AKEY   [A-Za-z0-9_.]       attribute keys
 *   C_AVAL   [A-Za-z0-9_.:-]     attribute values
 *   C_LABEL  [A-Za-z0-9_.:@+-]   hello node and app (Erlang node and application names)
 *   C_NAME0  [A-Za-z_]           first byte of a probe name
 * Bytes ≥ 0x80 are in no class.
 */
const unsigned char wire__byte_class[256] = {
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   32,  0,   48,  56,  0,   63,  63,  63,  63,  63,  63,  63,  63,  63,
    63,  48,  0,   0,   0,   0,   0,   32,  125, 125, 125, 125, 125, 125, 121, 121, 121, 121, 121,
    121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 0,   0,   0,   0,
    121, 0,   125, 125, 125, 125, 125, 125, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121, 121,
    121, 121, 121, 121, 121, 121, 121, 121, 121, 0,   0,   0,   0,   0,
};

static inline int is_digit(unsigned char c) {
    return (unsigned)(c - '0') < 10u;
}

/* 1 when [p, e) starts with the n bytes of lit. */
static inline int has_prefix(const char *p, const char *e, const char *lit, size_t n) {
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static inline int slice_is(const char *p, size_t n, const char *lit) {
    size_t m = strlen(lit);
    return n == m && memcmp(p, lit, m) == 0;
}

int wire_name_valid(const char *s, size_t n) {
    if (n == 0 || n > WIRE_MAX_NAME || !in_class(C_NAME0, s[0])) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (!in_class(C_NAME, s[i])) {
            return 0;
        }
    }
    return 1;
}

/* ---- numbers ------------------------------------------------------------------------ */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WIRE_SWAR 1
/*
 * Eight ASCII bytes at once (SWAR): timestamps are 19 digits, and converting them one
 * digit at a time is a chain of 19 dependent multiply-adds that dominates the parse.
 * Byte i of x (a little-endian load) is the i-th character.
 *
 * nondigit_bytes: 0 where the byte is '0' … '9', non-zero elsewhere. A digit has high
 * nibble 3 and so does digit + 6. Adding 6 can carry into the next (later) byte only
 * from a byte ≥ 0xFA, itself a non-digit, so the first non-zero byte is exact.
 */
static inline uint64_t nondigit_bytes(uint64_t x) {
    return ((x & 0xF0F0F0F0F0F0F0F0ULL) |
            (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ^
           0x3333333333333333ULL;
}

/* The values of two 4-digit ASCII numbers in one word (bytes 0–3 and 4–7, first byte
 * most significant), in its low and high 32 bits. */
static inline uint64_t digits4x2_value(uint64_t x) {
    x -= 0x3030303030303030ULL;
    /* Neighbouring lanes merge pairwise: 8 digits → 4 values < 100 → 2 < 10^4. */
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;
    return (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;
}

/* The value of 8 ASCII digits, first byte most significant. */
static inline uint64_t digits8_value(uint64_t x) {
    x = digits4x2_value(x);
    return (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL;
}

static const uint64_t pow10_small[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

static inline uint64_t load64(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/*
 * The value of exactly 19 digits at p (the caller checks what follows), or 0 when a
 * byte is not a digit or the value is 0 or over INT64_MAX. Three overlapping loads
 * (digits 0–7, 8–15, 11–18) are converted independently instead of as one dependent
 * chain; digits 8–10 are moved to the end of their word.
 */
static inline uint64_t time19(const char *p) {
    uint64_t a = load64(p), b = load64(p + 8), c = load64(p + 11);
    if ((nondigit_bytes(a) | nondigit_bytes(b) | nondigit_bytes(c)) != 0) {
        return 0;
    }
    uint64_t v = digits8_value(a) * 100000000000ULL +
                 digits8_value((b << 40) | 0x3030303030ULL) * 100000000ULL + digits8_value(c);
    return v <= (uint64_t)INT64_MAX ? v : 0;
}

#ifdef __SSE2__
/*
 * Two 19-digit timestamps at a and b at once with SSE2 (part of every x86-64): the
 * fast path's main cost. Each is read as digits 0–15 (for the check) and digits 3–18
 * (for the value); the 16-digit value of digits 3–18 is built in three steps that merge
 * neighbours (pairs, then 4 digits, then 8, for both numbers together), and digits 0–2
 * are added in front. The byte before each (a[−1], b[−1]) must be readable. Returns 1
 * and sets both values, or 0 when a byte is not a digit or a value is 0 or over INT64_MAX
 * (the caller then takes the general path).
 */
static int time19x2(const char *a, const char *b, int64_t *va, int64_t *vb) {
    const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
    __m128i xa = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)a), zero);
    __m128i ya = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)(a + 3)), zero);
    __m128i xb = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)b), zero);
    __m128i yb = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + 3)), zero);
    /* a byte minus '0' is a digit when it is ≤ 9 unsigned: saturating − 9 leaves 0 */
    __m128i over = _mm_or_si128(_mm_or_si128(_mm_subs_epu8(xa, nine), _mm_subs_epu8(ya, nine)),
                                _mm_or_si128(_mm_subs_epu8(xb, nine), _mm_subs_epu8(yb, nine)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(over, _mm_setzero_si128())) != 0xFFFF) {
        return 0;
    }
    /* 16-bit lanes hold two digits, the first in the low byte: first·10 + second */
    const __m128i lowbyte = _mm_set1_epi16(0xFF), ten = _mm_set1_epi16(10);
    __m128i pa =
        _mm_add_epi16(_mm_mullo_epi16(_mm_and_si128(ya, lowbyte), ten), _mm_srli_epi16(ya, 8));
    __m128i pb =
        _mm_add_epi16(_mm_mullo_epi16(_mm_and_si128(yb, lowbyte), ten), _mm_srli_epi16(yb, 8));
    const __m128i hundred = _mm_set_epi16(1, 100, 1, 100, 1, 100, 1, 100);
    __m128i qa = _mm_madd_epi16(pa, hundred); /* 4 × 4 digits, 32-bit lanes */
    __m128i qb = _mm_madd_epi16(pb, hundred);
    const __m128i tenk = _mm_set_epi16(1, 10000, 1, 10000, 1, 10000, 1, 10000);
    __m128i r = _mm_madd_epi16(_mm_packs_epi32(qa, qb), tenk); /* a: 3–10, 11–18; b: same */
    uint64_t ra = (uint64_t)_mm_cvtsi128_si64(r);
    uint64_t rb = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(r, r));
    /* digits 0–2 (checked above) of both, as the 4-digit numbers 0d₀d₁d₂ in one word: the
     * byte before each (the field's ':') becomes a leading '0', then pairs, then fours */
    uint32_t wa, wb;
    memcpy(&wa, a - 1, 4);
    memcpy(&wb, b - 1, 4);
    uint64_t h = digits4x2_value(((((uint64_t)wb << 32) | wa) & 0xFFFFFF00FFFFFF00ULL) |
                                 0x0000003000000030ULL);
    uint64_t ha = h & 0xFFFF, hb = h >> 32;
    uint64_t x = ha * 10000000000000000ULL + (ra & 0xFFFFFFFFu) * 100000000ULL + (ra >> 32);
    uint64_t y = hb * 10000000000000000ULL + (rb & 0xFFFFFFFFu) * 100000000ULL + (rb >> 32);
    if (x - 1 >= (uint64_t)INT64_MAX || y - 1 >= (uint64_t)INT64_MAX) {
        return 0; /* 0, or over INT64_MAX */
    }
    *va = (int64_t)x;
    *vb = (int64_t)y;
    return 1;
}

/* Bit i set when byte i of the 16 at p is not a name byte [A-Za-z0-9_]. Bytes ≥ 0x80
 * are negative to the signed compares, so they fail every range. */
static inline unsigned name16_nonname(const char *p) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i lc = _mm_or_si128(v, _mm_set1_epi8(0x20)); /* letters to lower case */
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lc, _mm_set1_epi8('a' - 1)),
                                   _mm_cmplt_epi8(lc, _mm_set1_epi8('z' + 1)));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i under = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
    return ~(unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), under)) & 0xFFFFu;
}
#endif

#define ONES_ 0x0101010101010101ULL
#define HIGHS_ 0x8080808080808080ULL
/*
 * High bit set in each byte of x that is not a name byte [A-Za-z0-9_], 0 elsewhere.
 * Range tests add a per-byte bias so that the byte's high bit says "≥ bound"; with the
 * high bits cleared first no addition carries into the next byte.
 */
static inline uint64_t nonname_bytes(uint64_t x) {
    uint64_t a = x & ~HIGHS_;
    uint64_t lc = a | (0x20 * ONES_); /* letters to lower case */
    uint64_t letter = (lc + (0x80 - 'a') * ONES_) & ~(lc + (0x80 - 'z' - 1) * ONES_);
    uint64_t digit = (a + (0x80 - '0') * ONES_) & ~(a + (0x80 - '9' - 1) * ONES_);
    uint64_t under = ~((a ^ ('_' * ONES_)) + 0x7F * ONES_); /* high bit: byte == '_' */
    return (~(letter | digit | under) & HIGHS_) | (x & HIGHS_);
}
#endif

/* ---- name hash ---------------------------------------------------------------------- */

#define HASH_SEED_ 0x2545F4914F6CDD1DULL

/* One 8-byte word of the name (bytes in little-endian order, zero-padded) into h. */
static inline uint64_t hash_step(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    return (h << 31) | (h >> 33);
}

static inline uint64_t hash_final(uint64_t h, size_t n) {
    h = (h ^ (uint64_t)n) * 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 32);
}

uint64_t wire_name_hash(const char *s, size_t n) {
    uint64_t h = HASH_SEED_;
#ifdef WIRE_SWAR
    /* the general parser's path: whole words, then the tail zero-padded, read without
     * touching a byte outside [s, s + n) */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        h = hash_step(h, load64(s + i));
    }
    size_t r = n - i;
    if (r == 0) {
        return hash_final(h, n);
    }
    uint64_t w;
    if (n >= 8) {
        w = load64(s + n - 8) >> (8 * (8 - r));
    } else if (r >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + r - 4, 4);
        w = (uint64_t)lo | (uint64_t)hi << (8 * (r - 4)); /* overlapping bytes agree */
    } else {
        w = (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[r / 2] << (8 * (r / 2)) |
            (uint64_t)(unsigned char)s[r - 1] << (8 * (r - 1));
    }
    return hash_final(hash_step(h, w), n);
#else
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        size_t m = n - i < 8 ? n - i : 8;
        for (size_t j = 0; j < m; j++) {
            w |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
        }
        h = hash_step(h, w);
    }
    return hash_final(h, n);
#endif
}

/*
 * Reads a positive decimal int64 at *pp, stopping at ';' or e. Returns WIRE_OK with
 * *pp on the stop byte, or WIRE_E_TIME (empty, non-digit, 0, more than 19 digits, or
 * > INT64_MAX). 19 digits stay below 2^64, so the sum never wraps before the last check.
 */
static int parse_time(const char **pp, const char *e, int64_t *out) {
    const char *p = *pp;
    const char *start = p;
    uint64_t v = 0;
#ifdef WIRE_SWAR
    /* Fast path: exactly 19 digits, what every nanosecond timestamp from 2001 to 2286
     * is. Anything else (and any error) takes the general loop below. */
    if (e - p >= 19 && (e - p == 19 || p[19] == ';') && (v = time19(p)) != 0) {
        *out = (int64_t)v;
        *pp = p + 19;
        return WIRE_OK;
    }
    while (e - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t bad = nondigit_bytes(x);
        if (bad == 0) {
            if (p - start > 11) {
                return WIRE_E_TIME; /* a 20th digit */
            }
            v = v * 100000000u + digits8_value(x);
            p += 8;
            continue;
        }
        unsigned n = (unsigned)__builtin_ctzll(bad) / 8; /* leading digits, 0 … 7 */
        if (n > 0) {
            unsigned sh = 8 * (8 - n);
            if ((size_t)(p - start) + n > 19) {
                return WIRE_E_TIME;
            }
            /* Move the n digits to the end of the word and pad the front with '0's. */
            x = (x << sh) | (0x3030303030303030ULL >> (64 - sh));
            v = v * pow10_small[n] + digits8_value(x);
            p += n;
        }
        goto done;
    }
#endif
    while (p < e) {
        unsigned d = (unsigned)((unsigned char)*p - '0');
        if (d > 9) {
            break;
        }
        if (p - start >= 19) {
            return WIRE_E_TIME;
        }
        v = v * 10 + d;
        p++;
    }
#ifdef WIRE_SWAR
done:
#endif
    if (p == start || v == 0 || v > (uint64_t)INT64_MAX || (p < e && *p != ';')) {
        return WIRE_E_TIME;
    }
    *out = (int64_t)v;
    *pp = p;
    return WIRE_OK;
}

/* A whole-slice unsigned decimal (1 … 20 digits, no overflow). Returns 0 or −1. */
int wire__parse_u64(const char *s, size_t n, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)((unsigned char)s[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int wire_parse_ms(const char *s, size_t n, double *ms) {
    size_t i = 0;
    uint64_t ip = 0, fp = 0;
    double scale = 1.0;
    while (i < n && is_digit((unsigned char)s[i])) {
        if (i >= 10) {
            return -1; /* more than 10 integer digits is beyond WIRE_MAX_CMD_MS anyway */
        }
        ip = ip * 10 + (uint64_t)(s[i] - '0');
        i++;
    }
    if (i == 0) {
        return -1;
    }
    if (i < n) {
        size_t f0;
        if (s[i] != '.') {
            return -1;
        }
        f0 = ++i;
        while (i < n && is_digit((unsigned char)s[i])) {
            if (i - f0 >= 9) {
                return -1;
            }
            fp = fp * 10 + (uint64_t)(s[i] - '0');
            scale *= 10.0;
            i++;
        }
        if (i == f0 || i < n) {
            return -1;
        }
    }
    double v = (double)ip + (double)fp / scale;
    if (!(v >= WIRE_MIN_CMD_MS) || v > WIRE_MAX_CMD_MS) {
        return -1;
    }
    *ms = v;
    return 0;
}

/* ---- key/value lists ---------------------------------------------------------------- */

/* The first c in [p, e) outside quoted atoms ('…', where \\ and \' are escapes), else e. */
static const char *unquoted_chr(const char *p, const char *e, char c) {
    int quoted = 0;
    for (; p < e; p++) {
        if (quoted) {
            if (*p == '\\' && p + 1 < e) {
                p++;
            } else if (*p == '\'') {
                quoted = 0;
            }
        } else if (*p == '\'') {
            quoted = 1;
        } else if (*p == c) {
            return p;
        }
    }
    return e;
}

int wire_kv_next(struct wire_slice *it, struct wire_slice *key, struct wire_slice *value) {
    if (it->n == 0) {
        return 0;
    }
    const char *p = it->p, *e = it->p + it->n;
    const char *eq = memchr(p, '=', it->n);
    if (!eq || eq == p || memchr(p, ',', (size_t)(eq - p))) {
        return -1;
    }
    const char *comma = memchr(eq, ',', (size_t)(e - eq));
    if (memchr(eq, '\'', (size_t)((comma ? comma : e) - eq))) { /* a quoted atom (traced:) */
        comma = unquoted_chr(eq, e, ',');
        comma = comma == e ? NULL : comma;
    }
    const char *vend = comma ? comma : e;
    if (vend == eq + 1) {
        return -1;
    }
    key->p = p;
    key->n = (size_t)(eq - p);
    value->p = eq + 1;
    value->n = (size_t)(vend - eq - 1);
    if (comma) {
        if (comma + 1 == e) {
            return -1; /* a trailing ',' */
        }
        it->p = comma + 1;
        it->n = (size_t)(e - comma - 1);
    } else {
        it->p = e;
        it->n = 0;
    }
    return 1;
}

/* K=V(,K=V)* with keys [A-Za-z0-9_.]+ and values [A-Za-z0-9_.:-]+. */
static int attrs_valid(const char *p, size_t n) {
    const char *e = p + n;
    for (;;) {
        const char *k = p;
        while (p < e && in_class(C_AKEY, *p)) {
            p++;
        }
        if (p == k || p == e || *p != '=') {
            return 0;
        }
        const char *v = ++p;
        while (p < e && in_class(C_AVAL, *p)) {
            p++;
        }
        if (p == v) {
            return 0;
        }
        if (p == e) {
            return 1;
        }
        if (*p != ',' || ++p == e) {
            return 0;
        }
    }
}

/* NAME=MS(,NAME=MS)* or empty. */
static int probes_valid(struct wire_slice it) {
    struct wire_slice k, v;
    double ms;
    int r;
    while ((r = wire_kv_next(&it, &k, &v)) == 1) {
        if (!wire_name_valid(k.p, k.n) || wire_parse_ms(v.p, v.n, &ms) != 0) {
            return 0;
        }
    }
    return r == 0;
}

static int hex_valid(const char *p, size_t n) {
    if (n == 0 || n > WIRE_MAX_ID) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!in_class(C_HEX, p[i])) {
            return 0;
        }
    }
    return 1;
}

/* ---- instance ----------------------------------------------------------------------- */

/* The optional v2 fields after s:STATUS. p is on the ';' that starts the first one. */
static int parse_trailing(const char *p, const char *e, struct wire_msg *m) {
    m->v2_fields = 1;
    while (p < e) {
        const char *seg = p + 1; /* *p == ';' */
        const char *se = memchr(seg, ';', (size_t)(e - seg));
        if (!se) {
            se = e;
        }
        const char *colon = memchr(seg, ':', (size_t)(se - seg));
        if (!colon || colon == seg) {
            return WIRE_E_SYNTAX;
        }
        const char *val = colon + 1;
        size_t vn = (size_t)(se - val);
        size_t kn = (size_t)(colon - seg);
        struct wire_slice *dst = NULL;
        if (kn == 1) {
            switch (*seg) {
            case 'i':
                dst = &m->id;
                break;
            case 't':
                dst = &m->trace;
                break;
            case 'p':
                dst = &m->parent;
                break;
            case 'a':
                dst = &m->attrs;
                break;
            default:
                break;
            }
        }
        if (dst) {
            if (dst->p) {
                return WIRE_E_FIELD; /* the same field twice */
            }
            if (dst == &m->attrs) {
                if (!attrs_valid(val, vn)) {
                    return WIRE_E_ATTR;
                }
            } else if (!hex_valid(val, vn)) {
                return WIRE_E_ID;
            }
            dst->p = val;
            dst->n = vn;
        } else {
            for (const char *k = seg; k < colon; k++) {
                if (!in_class(C_NAME, *k)) {
                    return WIRE_E_SYNTAX;
                }
            }
        }
        p = se;
    }
    return WIRE_OK;
}

/* p is just past "n:". */
static int parse_instance(const char *p, const char *e, int64_t now_ns, struct wire_msg *m) {
    int r;
    const char *name = p;

    m->kind = WIRE_INSTANCE;
    while (p < e && in_class(C_NAME, *p)) {
        p++;
    }
    if (p == e) {
        return p == name ? WIRE_E_NAME : WIRE_E_FIELD;
    }
    if (*p != ';' || p == name || !in_class(C_NAME0, *name) || (size_t)(p - name) > WIRE_MAX_NAME) {
        return WIRE_E_NAME;
    }
    m->name.p = name;
    m->name.n = (size_t)(p - name);
    m->name_hash = wire_name_hash(name, m->name.n);
    p++;

    if (e - p < 2 || p[0] != 'b' || p[1] != ':') {
        return WIRE_E_FIELD;
    }
    p += 2;
    if ((r = parse_time(&p, e, &m->start_ns)) != WIRE_OK) {
        return r;
    }
    if (e - p < 3 || p[0] != ';' || p[1] != 'e' || p[2] != ':') {
        return WIRE_E_FIELD;
    }
    p += 3;
    /* Older oscilloscope wrappers send e:0 for a timeout; accepted for s:to only. */
    int end_zero = p < e && p[0] == '0' && (p + 1 == e || p[1] == ';');
    if (end_zero) {
        m->end_ns = 0;
        p++;
    } else if ((r = parse_time(&p, e, &m->end_ns)) != WIRE_OK) {
        return r;
    }
    if (e - p < 3 || p[0] != ';' || p[1] != 's' || p[2] != ':') {
        return WIRE_E_FIELD;
    }
    p += 3;
    if (e - p < 2 || (e - p > 2 && p[2] != ';')) {
        return WIRE_E_STATUS;
    }
    if (p[0] == 'o' && p[1] == 'k') {
        m->status = WIRE_ST_OK;
    } else if (p[0] == 'f' && p[1] == 'a') {
        m->status = WIRE_ST_FA;
    } else if (p[0] == 't' && p[1] == 'o') {
        m->status = WIRE_ST_TO;
    } else {
        return WIRE_E_STATUS;
    }
    p += 2;

    m->id.p = m->trace.p = m->parent.p = m->attrs.p = NULL;
    m->id.n = m->trace.n = m->parent.n = m->attrs.n = 0;
    m->v2_fields = 0;
    if (p < e && (r = parse_trailing(p, e, m)) != WIRE_OK) {
        return r;
    }

    if (end_zero) {
        if (m->status != WIRE_ST_TO) {
            return WIRE_E_TIME;
        }
    } else if (m->end_ns < m->start_ns) {
        return WIRE_E_ORDER;
    }
    if (now_ns > 0 &&
        (m->start_ns - now_ns > WIRE_CLOCK_SLACK_NS || now_ns - m->start_ns > WIRE_CLOCK_SLACK_NS ||
         m->end_ns - now_ns > WIRE_CLOCK_SLACK_NS)) {
        /* END ≥ START (or 0), so END is checked only on the late side. */
        return WIRE_E_CLOCK;
    }
    return WIRE_OK;
}

#ifdef WIRE_SWAR
/*
 * The common case in one pass: a complete instance line at p with 19-digit timestamps,
 * `n:NAME;b:START;e:END;s:ok|fa|to`, optionally v2 trailing fields, and its '\n'. The
 * name is checked and hashed 8 bytes at a time; the 50 bytes after it have fixed
 * positions (only a line with trailing fields needs a search for its end).
 * Returns the bytes taken, '\n' included, with *m filled exactly as wire_parse() fills
 * it, or 0 for anything else, including every error: then the general path (memchr,
 * wire_parse) decides. So this path only ever accepts what wire_parse() accepts.
 * *m comes from the caller's previous calls (zeroed before the first): its trailing
 * fields are empty whenever its v2_fields is 0 (parse_trailing sets v2_fields before it
 * writes one), so a line without them clears them only after one that had them.
 */
static size_t fast_instance(const char *p, const char *end, int64_t now_ns, struct wire_msg *m) {
    /* "n:", a name byte, the 50 fixed bytes ";b:<19>;e:<19>;s:XX\n" */
    if (end - p < 53 || p[0] != 'n' || p[1] != ':' || !in_class(C_NAME0, p[2])) {
        return 0;
    }
    const char *name = p + 2, *s; /* s: the byte after the name */
    uint64_t h = HASH_SEED_;
#ifdef __SSE2__
    /* names under 16 bytes (nearly all): one 16-byte test; end − name ≥ 51 here */
    unsigned nonname = name16_nonname(name);
    if (nonname != 0) {
        unsigned k = (unsigned)__builtin_ctz(nonname); /* the name's length, 1 … 15 */
        uint64_t w = load64(name);
        if (k < 8) {
            h = hash_step(h, w & ((1ULL << (8 * k)) - 1));
        } else {
            h = hash_step(h, w);
            if (k > 8) {
                h = hash_step(h, load64(name + 8) & ((1ULL << (8 * (k - 8))) - 1));
            }
        }
        s = name + k;
    } else
#endif
    {
        const char *q = name;
        uint64_t x, bad;
        for (;;) {
            if (end - q < 8 || q - name > WIRE_MAX_NAME) {
                return 0;
            }
            x = load64(q);
            if ((bad = nonname_bytes(x)) != 0) {
                break;
            }
            h = hash_step(h, x);
            q += 8;
        }
        unsigned k = (unsigned)__builtin_ctzll(bad) / 8; /* name bytes in this word */
        if (k > 0) {
            h = hash_step(h, x & ((1ULL << (8 * k)) - 1));
        }
        s = q + k;
    }
    size_t n = (size_t)(s - name);
    if (n > WIRE_MAX_NAME || end - s < 50) {
        return 0;
    }
    /* ";b:" at s, ";e:" at s + 22, ";s:" at s + 44, as whole words (little-endian: the
     * first byte is the lowest); the status is s[47], s[48]; then '\n' or v2 fields */
    uint64_t tail = load64(s + 42);
    uint32_t fb, fe;
    memcpy(&fb, s, 4);
    memcpy(&fe, s + 22, 4);
    if ((((fb ^ 0x3A623Bu) | (fe ^ 0x3A653Bu)) & 0xFFFFFFu) |
        ((tail ^ 0x00003A733B0000ULL) & 0x0000FFFFFF0000ULL)) {
        return 0;
    }
    const char *nl = s + 49;
    if (*nl != '\n') {
        /* v2 trailing fields (i:, t:, p:, a:, newer ones): to the end of the line */
        if (*nl != ';' || (nl = memchr(nl, '\n', (size_t)(end - nl))) == NULL ||
            nl - p > WIRE_MAX_LINE || nl[-1] == '\r') {
            return 0;
        }
        m->id.p = m->trace.p = m->parent.p = m->attrs.p = NULL;
        m->id.n = m->trace.n = m->parent.n = m->attrs.n = 0;
        if (parse_trailing(s + 49, nl, m) != WIRE_OK) {
            return 0;
        }
    }
    enum wire_status st;
    switch ((tail >> 40) & 0xFFFF) {
    case 'o' | 'k' << 8:
        st = WIRE_ST_OK;
        break;
    case 'f' | 'a' << 8:
        st = WIRE_ST_FA;
        break;
    case 't' | 'o' << 8:
        st = WIRE_ST_TO;
        break;
    default:
        return 0;
    }
    int64_t start, stop;
#ifdef __SSE2__
    if (!time19x2(s + 3, s + 25, &start, &stop)) {
        return 0;
    }
#else
    start = (int64_t)time19(s + 3);
    stop = (int64_t)time19(s + 25);
#endif
    if (start == 0 || stop < start ||
        (now_ns > 0 &&
         (start - now_ns > WIRE_CLOCK_SLACK_NS || now_ns - start > WIRE_CLOCK_SLACK_NS ||
          stop - now_ns > WIRE_CLOCK_SLACK_NS))) {
        return 0; /* (stop == 0 is stop < start) */
    }
    m->kind = WIRE_INSTANCE;
    m->name.p = name;
    m->name.n = n;
    m->name_hash = hash_final(h, n);
    m->start_ns = start;
    m->end_ns = stop;
    m->status = st;
    if (nl == s + 49 && m->v2_fields) {
        /* (with v2_fields 0 the trailing fields are empty already: see the caller) */
        m->v2_fields = 0;
        m->id.p = m->trace.p = m->parent.p = m->attrs.p = NULL;
        m->id.n = m->trace.n = m->parent.n = m->attrs.n = 0;
    }
    return (size_t)(nl + 1 - p);
}
#endif

/* ---- control lines ------------------------------------------------------------------ */

/* A label value [A-Za-z0-9_.@:+-]{1,255} up to ';' or e; sets *out and moves *pp. */
static int take_label(const char **pp, const char *e, struct wire_slice *out) {
    const char *p = *pp, *s = p;
    while (p < e && *p != ';') {
        if (!in_class(C_LABEL, *p)) {
            return -1;
        }
        p++;
    }
    if (p == s || (size_t)(p - s) > WIRE_MAX_LABEL) {
        return -1;
    }
    out->p = s;
    out->n = (size_t)(p - s);
    *pp = p;
    return 0;
}

/* p is just past "h:". */
static int parse_hello(const char *p, const char *e, struct wire_msg *m) {
    const char *semi = memchr(p, ';', (size_t)(e - p));
    const char *ve = semi ? semi : e;
    uint64_t v;

    m->kind = WIRE_HELLO;
    if (ve - p > 6 || wire__parse_u64(p, (size_t)(ve - p), &v) != 0 || v < 2) {
        return WIRE_E_SYNTAX;
    }
    m->version = (int)v;
    p = ve;
    if (!has_prefix(p, e, ";node:", 6)) {
        return WIRE_E_FIELD;
    }
    p += 6;
    if (take_label(&p, e, &m->node) != 0) {
        return WIRE_E_SYNTAX;
    }
    if (!has_prefix(p, e, ";app:", 5)) {
        return WIRE_E_FIELD;
    }
    p += 5;
    if (take_label(&p, e, &m->app) != 0) {
        return WIRE_E_SYNTAX;
    }
    return WIRE_OK; /* anything after a ';' here is a newer field: skipped */
}

int wire__lower_word(const char *p, size_t n, int dot) {
    if (n == 0 || !(p[0] >= 'a' && p[0] <= 'z')) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        char ch = p[i];
        if (!(in_class(C_NAME, ch) || ch == '@' || (dot && ch == '.'))) {
            return 0;
        }
    }
    return 1;
}

/* A fraction in [0, 1]: `0` or `1`, or either followed by '.' and 1 … 9 digits (all zeros
 * after a 1). */
static int fraction_valid(const char *p, size_t n) {
    if (n == 0 || (p[0] != '0' && p[0] != '1')) {
        return 0;
    }
    if (n == 1) {
        return 1;
    }
    if (p[1] != '.' || n < 3 || n > 11) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (p[i] < '0' || p[i] > '9' || (p[0] == '1' && p[i] != '0')) {
            return 0;
        }
    }
    return 1;
}

/* A state line's tracer list: NAME=VALUE pairs, VALUE checked by kind. */
enum tlist { TL_MFA, TL_COUNT, TL_FRACTION, TL_REASON };

static int tlist_valid(struct wire_slice it, enum tlist kind) {
    struct wire_slice k, v;
    int r;
    uint64_t u;
    while ((r = wire_kv_next(&it, &k, &v)) == 1) {
        if (!wire_name_valid(k.p, k.n)) {
            return 0;
        }
        int ok = 0;
        switch (kind) {
        case TL_MFA:
            ok = wire_mfa_valid(v.p, v.n);
            break;
        case TL_COUNT:
            ok = v.n <= 20 && wire__parse_u64(v.p, v.n, &u) == 0;
            break;
        case TL_FRACTION: /* 0 … 1: "0", "0.0", "0.25", "1" (up to 9 decimals) */
            ok = fraction_valid(v.p, v.n);
            break;
        case TL_REASON:
            ok = wire__lower_word(v.p, v.n, 0) && v.n <= 64;
            break;
        }
        if (!ok) {
            return 0;
        }
    }
    return r == 0;
}

/* The fields after a state line's probes list: p on the ';' before the first one. The
 * tracer's are read; any other field (KEY:VALUE) is a newer one, skipped. */
static int parse_state_tail(const char *p, const char *e, struct wire_msg *m) {
    static const struct {
        const char *key;
        size_t n;
        size_t off;
        enum tlist kind;
    } fields[] = {
        {"traced:", 7, offsetof(struct wire_msg, traced), TL_MFA},
        {"tcalls:", 7, offsetof(struct wire_msg, tcalls), TL_COUNT},
        {"sampling:", 9, offsetof(struct wire_msg, sampling), TL_FRACTION},
        {"tdropped:", 9, offsetof(struct wire_msg, tdropped), TL_COUNT},
        {"trefused:", 9, offsetof(struct wire_msg, trefused), TL_REASON},
    };
    while (p < e) {
        const char *seg = p + 1;
        const char *semi = memchr(seg, ';', (size_t)(e - seg));
        const char *se = semi ? semi : e;
        if (has_prefix(seg, e, "traced:", 7)) { /* functions: a quoted atom may hold ';' */
            se = unquoted_chr(seg, e, ';');
        }
        int known = 0;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            if (has_prefix(seg, se, fields[i].key, fields[i].n)) {
                struct wire_slice *out = (struct wire_slice *)((char *)m + fields[i].off);
                out->p = seg + fields[i].n;
                out->n = (size_t)(se - out->p);
                if (out->n == 0 || !tlist_valid(*out, fields[i].kind)) {
                    return WIRE_E_SYNTAX;
                }
                known = 1;
                break;
            }
        }
        if (!known && has_prefix(seg, se, "tother:", 7)) {
            if (se - seg > 7 + 20 ||
                wire__parse_u64(seg + 7, (size_t)(se - seg - 7), &m->tother) != 0) {
                return WIRE_E_SYNTAX;
            }
        }
        p = se;
    }
    return WIRE_OK;
}

/* p is just past "state;". */
static int parse_state(const char *p, const char *e, struct wire_msg *m) {
    m->kind = WIRE_STATE;
    m->traced = m->tcalls = m->sampling = m->tdropped = m->trefused = (struct wire_slice){0};
    m->tother = 0;
    if (!has_prefix(p, e, "running:", 8)) {
        return WIRE_E_FIELD;
    }
    p += 8;
    if (p == e || (*p != '0' && *p != '1') || (p + 1 < e && p[1] != ';')) {
        return WIRE_E_SYNTAX;
    }
    m->running = *p - '0';
    p++;
    if (!has_prefix(p, e, ";probes:", 8)) {
        return WIRE_E_FIELD;
    }
    p += 8;
    const char *semi = memchr(p, ';', (size_t)(e - p));
    m->probes.p = p;
    m->probes.n = (size_t)((semi ? semi : e) - p);
    if (!probes_valid(m->probes)) {
        return WIRE_E_SYNTAX;
    }
    return semi ? parse_state_tail(semi, e, m) : WIRE_OK;
}

int wire_parse(const char *line, size_t len, int64_t now_ns, struct wire_msg *msg) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    if (len > WIRE_MAX_LINE) {
        return WIRE_E_TOOLONG;
    }
    const char *e = line + len;
    if (len >= 2 && line[1] == ':') {
        if (line[0] == 'n') {
            return parse_instance(line + 2, e, now_ns, msg);
        }
        if (line[0] == 'h') {
            return parse_hello(line + 2, e, msg);
        }
        return WIRE_E_UNKNOWN;
    }
    if (slice_is(line, len, "ping")) {
        msg->kind = WIRE_PING;
        return WIRE_OK;
    }
    if (has_prefix(line, e, "ack", 3) && (len == 3 || line[3] == ';')) {
        msg->kind = WIRE_ACK;
        if (len <= 4) {
            return WIRE_E_FIELD;
        }
        msg->command.p = line + 4;
        msg->command.n = len - 4;
        return wire_parse_cmd(line + 4, len - 4, &msg->cmd) == 0 ? WIRE_OK : WIRE_E_SYNTAX;
    }
    if (has_prefix(line, e, "drop", 4) && (len == 4 || line[4] == ';')) {
        msg->kind = WIRE_DROP;
        if (len <= 5) {
            return WIRE_E_FIELD;
        }
        return wire__parse_u64(line + 5, len - 5, &msg->count) == 0 ? WIRE_OK : WIRE_E_SYNTAX;
    }
    if (has_prefix(line, e, "state", 5) && (len == 5 || line[5] == ';')) {
        if (len <= 6) {
            msg->kind = WIRE_STATE;
            return WIRE_E_FIELD;
        }
        return parse_state(line + 6, e, msg);
    }
    if (has_prefix(line, e, "clock", 5) && (len == 5 || line[5] == ';')) {
        msg->kind = WIRE_CLOCK;
        if (len <= 6) {
            return WIRE_E_FIELD;
        }
        uint64_t ns;
        if (wire__parse_u64(line + 6, len - 6, &ns) != 0 || ns == 0 || ns > (uint64_t)INT64_MAX) {
            return WIRE_E_TIME;
        }
        msg->clock_ns = (int64_t)ns;
        return WIRE_OK;
    }
    return WIRE_E_UNKNOWN;
}

int wire_format_tick(char *buf, size_t cap, int64_t ns) {
    int n = snprintf(buf, cap, "tick;%lld\n", (long long)ns);
    return n > 0 && (size_t)n < cap ? n : dq_fail(DQ_EFULL, "tick line needs %d bytes", n + 1);
}

int wire_parse_tick(const char *line, size_t len, int64_t *ns) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    uint64_t v;
    if (len <= 5 || memcmp(line, "tick;", 5) != 0 || wire__parse_u64(line + 5, len - 5, &v) != 0 ||
        v == 0 || v > (uint64_t)INT64_MAX) {
        return -1;
    }
    *ns = (int64_t)v;
    return 0;
}

/* ---- splitter ----------------------------------------------------------------------- */

int wire_splitter_init(struct wire_splitter *s, char *buf, size_t cap, wire_line_fn fn, void *ctx) {
    if (!s || !buf || !fn || cap < WIRE_SPLITTER_MIN_CAP) {
        return dq_fail(DQ_EINVAL, "line splitter needs a buffer of at least %d bytes",
                       WIRE_SPLITTER_MIN_CAP);
    }
    s->buf = buf;
    s->cap = cap;
    s->len = 0;
    s->discarding = 0;
    s->fn = fn;
    s->ctx = ctx;
    s->too_long = 0;
    return 0;
}

static void report_too_long(struct wire_splitter *s, const char *prefix, size_t n) {
    s->too_long++;
    s->fn(s->ctx, prefix, n < WIRE_MAX_LINE ? n : WIRE_MAX_LINE, WIRE_E_TOOLONG);
}

static void emit_line(struct wire_splitter *s, const char *line, size_t n) {
    size_t content = n - (n > 0 && line[n - 1] == '\r');
    if (content > WIRE_MAX_LINE) {
        report_too_long(s, line, n);
    } else {
        s->fn(s->ctx, line, n, WIRE_OK);
    }
}

/*
 * The buffer holds at most WIRE_MAX_LINE + 1 bytes (a full line plus its '\r'); any
 * partial line longer than that is over-long whatever comes next.
 */
#define SPLIT_HOLD (WIRE_MAX_LINE + 1)

/*
 * Takes bytes from p up to the end of the first line that ends in [p, end) and passes
 * that line on (or buffers or discards them); returns where the next line starts, or
 * end when the chunk is used up.
 */
static const char *feed_line(struct wire_splitter *s, const char *p, const char *end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (s->discarding) {
        if (!nl) {
            return end;
        }
        s->discarding = 0;
        return nl + 1;
    }
    size_t take = (size_t)((nl ? nl : end) - p);
    if (s->len > 0) {
        if (s->len + take > SPLIT_HOLD) {
            report_too_long(s, s->buf, s->len);
            s->len = 0;
            if (!nl) {
                s->discarding = 1;
                return end;
            }
            return nl + 1;
        }
        memcpy(s->buf + s->len, p, take);
        s->len += take;
        if (!nl) {
            return end;
        }
        size_t ln = s->len;
        s->len = 0; /* before the callback, so it sees a clean state */
        emit_line(s, s->buf, ln);
        return nl + 1;
    }
    if (!nl) {
        if (take > SPLIT_HOLD) {
            report_too_long(s, p, take);
            s->discarding = 1;
            return end;
        }
        memcpy(s->buf, p, take);
        s->len = take;
        return end;
    }
    emit_line(s, p, take);
    return nl + 1;
}

void wire_splitter_feed(struct wire_splitter *s, const char *data, size_t n) {
    const char *p = data, *end = data + n;
    while (p < end) {
        p = feed_line(s, p, end);
    }
}

void wire_splitter_feed_instances(struct wire_splitter *s, const char *data, size_t n,
                                  int64_t now_ns, wire_instance_fn inst) {
    const char *p = data, *end = data + n;
#ifdef WIRE_SWAR
    struct wire_msg m;
    memset(&m, 0, sizeof m); /* as fast_instance() expects it */
    while (p < end) {
        if (s->len == 0 && !s->discarding) {
            size_t k;
            while ((k = fast_instance(p, end, now_ns, &m)) != 0) {
                inst(s->ctx, &m);
                p += k;
            }
            if (p == end) {
                return;
            }
        }
        p = feed_line(s, p, end);
    }
#else
    (void)now_ns;
    (void)inst;
    while (p < end) {
        p = feed_line(s, p, end);
    }
#endif
}

size_t wire_splitter_pending(const struct wire_splitter *s) {
    return s->len;
}

/* ---- commands ----------------------------------------------------------------------- */

/* Appends n bytes at *at within cap; returns −1 when they do not fit. */
static int put(char *buf, size_t cap, size_t *at, const char *s, size_t n) {
    if (n > cap - *at) {
        return -1;
    }
    memcpy(buf + *at, s, n);
    *at += n;
    return 0;
}

/* Writes ms as the dialect wants it into num (≥ 32 bytes); returns its length. */
static size_t format_ms(char *num, size_t cap, enum wire_dialect d, double ms) {
    int w;
    if (d == WIRE_LEGACY) {
        /* Round up, forgiving float noise below 1 ns (200.0000000001 stays 200). */
        double c = ceil(ms - 1e-6);
        if (c < 1.0) {
            c = 1.0;
        }
        w = snprintf(num, cap, "%lld", (long long)c);
        return (size_t)w;
    }
    w = snprintf(num, cap, "%.6f", ms);
    size_t n = (size_t)w;
    while (num[n - 1] == '0') {
        n--;
    }
    if (num[n - 1] == '.') {
        n--;
    }
    return n;
}

int wire_format_cmd(char *buf, size_t cap, enum wire_dialect d, const struct wire_cmd *cmd) {
    size_t at = 0;
    int fits = 0;
    char num[48];
    size_t nn;

    switch (cmd->kind) {
    case WIRE_CMD_START_STUB:
        fits = put(buf, cap, &at, "start_stub\n", 11);
        break;
    case WIRE_CMD_STOP_STUB:
        fits = put(buf, cap, &at, "stop_stub\n", 10);
        break;
    case WIRE_CMD_SYNC:
        if (d == WIRE_LEGACY) {
            return dq_fail(DQ_EINVAL, "a legacy wrapper has no sync command");
        }
        fits = put(buf, cap, &at, "sync\n", 5);
        break;
    case WIRE_CMD_SET_TIMEOUT:
    case WIRE_CMD_CLEAR_TIMEOUT:
        if (!cmd->name.p || !wire_name_valid(cmd->name.p, cmd->name.n)) {
            return dq_fail(DQ_EINVAL, "bad probe name in command");
        }
        if (cmd->kind == WIRE_CMD_CLEAR_TIMEOUT) {
            if (d == WIRE_LEGACY) {
                return dq_fail(DQ_EINVAL, "a legacy wrapper has no clear_timeout command");
            }
            fits = put(buf, cap, &at, "clear_timeout;", 14) |
                   put(buf, cap, &at, cmd->name.p, cmd->name.n) | put(buf, cap, &at, "\n", 1);
            break;
        }
        if (!(cmd->ms >= WIRE_MIN_CMD_MS) || cmd->ms > WIRE_MAX_CMD_MS) {
            return dq_fail(DQ_EINVAL, "set_timeout: %g ms is out of range [%g, %g]", cmd->ms,
                           WIRE_MIN_CMD_MS, WIRE_MAX_CMD_MS);
        }
        nn = format_ms(num, sizeof num, d, cmd->ms);
        fits = put(buf, cap, &at, "set_timeout;", 12) |
               put(buf, cap, &at, cmd->name.p, cmd->name.n) | put(buf, cap, &at, ";", 1) |
               put(buf, cap, &at, num, nn) | put(buf, cap, &at, "\n", 1);
        break;
    case WIRE_CMD_TRACE:
        if (d == WIRE_LEGACY) {
            return dq_fail(DQ_EINVAL, "a legacy wrapper has no trace command");
        }
        if (!cmd->name.p || !wire_name_valid(cmd->name.p, cmd->name.n)) {
            return dq_fail(DQ_EINVAL, "bad probe name in command");
        }
        if (!wire_mfa_valid(cmd->mfa.p, cmd->mfa.n)) {
            return dq_fail(DQ_EINVAL, "trace: bad function (MOD:FUN/ARITY)");
        }
        if (!(cmd->ms >= WIRE_MIN_CMD_MS) || cmd->ms > WIRE_MAX_CMD_MS) {
            return dq_fail(DQ_EINVAL, "trace: %g ms is out of range [%g, %g]", cmd->ms,
                           WIRE_MIN_CMD_MS, WIRE_MAX_CMD_MS);
        }
        nn = format_ms(num, sizeof num, d, cmd->ms);
        fits = put(buf, cap, &at, "trace;", 6) | put(buf, cap, &at, cmd->name.p, cmd->name.n) |
               put(buf, cap, &at, ";", 1) | put(buf, cap, &at, num, nn) |
               put(buf, cap, &at, ";", 1) | put(buf, cap, &at, cmd->mfa.p, cmd->mfa.n) |
               put(buf, cap, &at, "\n", 1);
        break;
    default:
        return dq_fail(DQ_EINVAL, "unknown command kind %d", (int)cmd->kind);
    }
    if (fits != 0) {
        return dq_fail(DQ_EFULL, "command does not fit in %zu bytes", cap);
    }
    if (at < cap) {
        buf[at] = '\0';
    }
    return (int)at;
}

int wire_parse_cmd(const char *line, size_t len, struct wire_cmd *cmd) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    const char *e = line + len;
    cmd->name.p = NULL;
    cmd->name.n = 0;
    cmd->ms = 0;
    cmd->mfa.p = NULL;
    cmd->mfa.n = 0;
    if (slice_is(line, len, "start_stub")) {
        cmd->kind = WIRE_CMD_START_STUB;
        return 0;
    }
    if (slice_is(line, len, "stop_stub")) {
        cmd->kind = WIRE_CMD_STOP_STUB;
        return 0;
    }
    if (slice_is(line, len, "sync")) {
        cmd->kind = WIRE_CMD_SYNC;
        return 0;
    }
    if (has_prefix(line, e, "clear_timeout;", 14)) {
        cmd->kind = WIRE_CMD_CLEAR_TIMEOUT;
        cmd->name.p = line + 14;
        cmd->name.n = len - 14;
        return wire_name_valid(cmd->name.p, cmd->name.n) ? 0 : -1;
    }
    if (has_prefix(line, e, "set_timeout;", 12)) {
        const char *n = line + 12;
        const char *semi = memchr(n, ';', (size_t)(e - n));
        if (!semi) {
            return -1;
        }
        cmd->kind = WIRE_CMD_SET_TIMEOUT;
        cmd->name.p = n;
        cmd->name.n = (size_t)(semi - n);
        if (!wire_name_valid(cmd->name.p, cmd->name.n)) {
            return -1;
        }
        return wire_parse_ms(semi + 1, (size_t)(e - semi - 1), &cmd->ms);
    }
    if (has_prefix(line, e, "trace;", 6)) {
        const char *n = line + 6;
        const char *s1 = memchr(n, ';', (size_t)(e - n));
        const char *s2 = s1 ? memchr(s1 + 1, ';', (size_t)(e - s1 - 1)) : NULL;
        if (!s2) {
            return -1;
        }
        cmd->kind = WIRE_CMD_TRACE;
        cmd->name.p = n;
        cmd->name.n = (size_t)(s1 - n);
        cmd->mfa.p = s2 + 1;
        cmd->mfa.n = (size_t)(e - s2 - 1);
        if (!wire_name_valid(cmd->name.p, cmd->name.n) || !wire_mfa_valid(cmd->mfa.p, cmd->mfa.n)) {
            return -1;
        }
        return wire_parse_ms(s1 + 1, (size_t)(s2 - s1 - 1), &cmd->ms);
    }
    return -1;
}
