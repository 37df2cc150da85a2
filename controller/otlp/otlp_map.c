/*
 * otlp_map.c: which probe a span is an instance of (the `otlp_probes` table, else its name
 * in the probe alphabet). Pure.
 */
#include <stdint.h>
#include <string.h>

#include "otlp.h"

/* 1 when text (len bytes) matches pattern: equal, or a prefix when it ends in '*'. */
static int matches(const char *pattern, const char *text, size_t len) {
    size_t pl = strlen(pattern);
    if (pl > 0 && pattern[pl - 1] == '*') {
        return len >= pl - 1 && memcmp(pattern, text, pl - 1) == 0;
    }
    return pl == len && memcmp(pattern, text, len) == 0;
}

static int rule_matches(const struct dqd_otlp_rule *r, const struct otlp_span *s) {
    if (r->service[0] && !matches(r->service, s->service, s->service_len)) {
        return 0;
    }
    if (r->span[0] && !matches(r->span, s->name, s->name_len)) {
        return 0;
    }
    for (int i = 0; i < r->n_attrs; i++) {
        char v[DQD_OTLP_MATCH_MAX];
        if (!otlp_span_attr(s, r->attr_key[i], v, sizeof v) ||
            !matches(r->attr_value[i], v, strlen(v))) {
            return 0;
        }
    }
    return 1;
}

/* 1 for the bytes a probe name keeps ([A-Za-z0-9_]); the others become '_'. */
static const uint8_t KEEP[256] = {
#define FOUR(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1
    FOUR('0'), FOUR('4'), ['8'] = 1, ['9'] = 1, FOUR('A'), FOUR('E'), FOUR('I'),
    FOUR('M'), FOUR('Q'), FOUR('U'), ['Y'] = 1, ['Z'] = 1, FOUR('a'), FOUR('e'),
    FOUR('i'), FOUR('m'), FOUR('q'), FOUR('u'), ['y'] = 1, ['z'] = 1, ['_'] = 1,
#undef FOUR
};

/* 1 when every byte of w is one a probe name keeps. */
static inline int kept_word(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    if (w & highs) {
        return 0;
    }
    /* for bytes below 0x80, x + (0x80 - lo) has its high bit set when x >= lo, and
     * x + (0x7f - hi) has it clear when x <= hi, with no carry into the next byte */
#define IN(x, lo, hi) (((x) + (0x80 - (lo)) * ones) & ~((x) + (0x7f - (hi)) * ones) & highs)
    uint64_t keep = IN(w, '0', '9') | IN(w | 0x20 * ones, 'a', 'z') | IN(w, '_', '_');
#undef IN
    return keep == highs;
}

size_t otlp_probe_name(const struct otlp_span *s, const struct dqd_otlp_rule *rules, int n_rules,
                       char *out, size_t cap) {
    for (int i = 0; i < n_rules; i++) {
        if (rule_matches(&rules[i], s)) {
            size_t n = strlen(rules[i].probe);
            n = n < cap ? n : cap - 1;
            memcpy(out, rules[i].probe, n);
            out[n] = '\0';
            return n;
        }
    }
    size_t max = cap - 1 < PROBES_NAME_MAX ? cap - 1 : PROBES_NAME_MAX;
    size_t o = 0;
    if (max > 0 && s->name_len > 0 && s->name[0] >= '0' && s->name[0] <= '9') {
        out[o++] = '_'; /* (not with cap 1: max − o would wrap) */
    }
    size_t n = s->name_len < max - o ? s->name_len : max - o;
    const char *in = s->name;
    char *to = out + o;
    size_t i = 0;
    /* a word at a time while its bytes are all kept (the last word overlapping the one
     * before, a short name in two overlapping halves), then byte by byte */
    if (n >= 8) {
        uint64_t w;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, in + i, 8);
            if (!kept_word(w)) {
                break;
            }
            memcpy(to + i, &w, 8);
        }
        if (i < n && i + 8 > n) {
            memcpy(&w, in + n - 8, 8);
            if (kept_word(w)) {
                memcpy(to + n - 8, &w, 8);
                i = n;
            }
        }
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, in, 4);
        memcpy(&hi, in + n - 4, 4);
        if (kept_word((uint64_t)lo << 32 | hi)) {
            memcpy(to, &lo, 4);
            memcpy(to + n - 4, &hi, 4);
            i = n;
        }
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        to[i] = KEEP[c] ? (char)c : '_';
    }
    to[n] = '\0';
    return o + n;
}
