/*
 * fuzz_otlp_decode.h: what the two OTLP decoders' libFuzzer targets share: arbitrary bytes
 * as a request body (also inflated when they are gzip), decoded into an arena with a
 * small cap so that exhaustion is reached too, and compared with the reference decoder
 * (otlp_ref.h: the same refusals, the same spans; a difference is a crash); then every
 * span of the batch goes through the mapping (with a rule that reads attributes) and the
 * attribute lookup, as the receiver would use it.
 */
#ifndef FUZZ_OTLP_DECODE_H
#define FUZZ_OTLP_DECODE_H

#include <stdio.h>
#include <string.h>

#include "otlp.h"
#include "otlp_ref.h"

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

static int fuzz_decode(const uint8_t *data, size_t size, int json) {
    static struct otlp_arena arena, ref_arena;
    static uint8_t inflated[1 << 16];
    if (!arena.cap) {
        otlp_arena_init(&arena, 4u << 20);
        otlp_arena_init(&ref_arena, 4u << 20);
    }
    size_t n = 0;
    if (size > 2 && data[0] == 0x1f && data[1] == 0x8b &&
        otlp_inflate(data, size, inflated, sizeof inflated, &n) == DQ_OK) {
        data = inflated;
        size = n;
    }
    char why[512];
    if (ref_compare(&arena, &ref_arena, data, size, json, why, sizeof why)) {
        fprintf(stderr, "the decoder differs from the reference: %s\n", why);
        __builtin_trap();
    }
    struct otlp_batch b;
    otlp_arena_reset(&arena);
    int rc = json ? otlp_decode_json(&arena, data, size, &b)
                  : otlp_decode_protobuf(&arena, data, size, &b);
    if (rc == DQ_OK) {
        fuzz_use_batch(&b);
    }
    otlp_batch_release(&b);
    return 0;
}

#endif
