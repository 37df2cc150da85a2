/*
 * otlp_map.c: which probe a span is an instance of (the `otlp_probes` table, else its name
 * in the probe alphabet). Pure.
 */
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
    if (s->name_len > 0 && s->name[0] >= '0' && s->name[0] <= '9') {
        out[o++] = '_';
    }
    size_t n = s->name_len < max - o ? s->name_len : max - o;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s->name[i];
        out[o++] = KEEP[c] ? (char)c : '_';
    }
    out[o] = '\0';
    return o;
}
