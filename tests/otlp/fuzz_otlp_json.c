/*
 * fuzz_otlp_json.c: libFuzzer target for otlp_decode_json, checked against the reference
 * decoder (fuzz_otlp_decode.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_otlp_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_decode(data, size, 1);
}
