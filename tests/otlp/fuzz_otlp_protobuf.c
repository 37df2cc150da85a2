/*
 * fuzz_otlp_protobuf.c: libFuzzer target for otlp_decode_protobuf: arbitrary bytes as a request
 * body (also inflated when they are gzip), decoded into an arena with a small cap so that
 * exhaustion is reached too; every span is mapped to its probe.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_otlp_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static struct otlp_arena arena;
    static uint8_t inflated[1 << 16];
    if (!arena.cap) {
        otlp_arena_init(&arena, 4u << 20);
    }
    size_t n = 0;
    if (size > 2 && data[0] == 0x1f && data[1] == 0x8b &&
        otlp_inflate(data, size, inflated, sizeof inflated, &n) == DQ_OK) {
        data = inflated;
        size = n;
    }
    struct otlp_batch b;
    otlp_arena_reset(&arena);
    if (otlp_decode_protobuf(&arena, data, size, &b) == DQ_OK) {
        fuzz_use_batch(&b);
    }
    otlp_batch_release(&b);
    return 0;
}
