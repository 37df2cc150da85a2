/*
 * fuzz_otlp_decode.h: what the two OTLP decoders' libFuzzer targets share: every span of a
 * decoded batch goes through the mapping (with a rule that reads attributes) and the
 * attribute lookup, as the receiver would use it.
 */
#ifndef FUZZ_OTLP_DECODE_H
#define FUZZ_OTLP_DECODE_H

#include <string.h>

#include "otlp.h"

static void fuzz_use_batch(const struct otlp_batch *b) {
    static struct dqd_otlp_rule rules[2];
    if (!rules[1].probe[0]) {
        strcpy(rules[0].span, "a*");
        rules[0].n_attrs = 1;
        strcpy(rules[0].attr_key[0], "k");
        strcpy(rules[0].attr_value[0], "v*");
        strcpy(rules[0].probe, "ruled");
        strcpy(rules[1].service, "s");
        strcpy(rules[1].probe, "svc");
    }
    char name[PROBES_NAME_MAX + 2], v[64];
    for (size_t i = 0; i < b->n; i++) {
        size_t n = otlp_probe_name(&b->spans[i], rules, 2, name, sizeof name);
        if (n > PROBES_NAME_MAX || strlen(name) != n) {
            __builtin_trap();
        }
        otlp_span_attr(&b->spans[i], "service.name", v, sizeof v);
    }
}

#endif
