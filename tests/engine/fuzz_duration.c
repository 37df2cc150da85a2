/*
 * fuzz_duration.c: libFuzzer target for dq_parse_duration (engine/dq_units.c). Any bytes
 * parse or fail with a message, never read past len, and a success is finite, never −0,
 * and negative only when allowed; the same text with a bare unit of seconds is 1000 times
 * the milliseconds reading when it has no unit of its own.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dq.h"
#include "dq_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exact-size copy: ASan catches a read past len */
    char *s = malloc(size ? size : 1);
    if (!s) {
        return 0;
    }
    memcpy(s, data, size);
    double ms = NAN, sec = NAN;
    int a = dq_parse_duration(s, size, 1e-3, 0, &ms);
    int b = dq_parse_duration(s, size, 1.0, 1, &sec);
    if (a == DQ_OK) {
        if (!isfinite(ms) || ms < 0 || signbit(ms) || b != DQ_OK) {
            abort();
        }
    } else if (a != DQ_EINVAL || !dq_last_error()[0]) {
        abort();
    }
    if (b == DQ_OK && !isfinite(sec)) {
        abort();
    }
    if (a == DQ_OK && b == DQ_OK && ms != 0) {
        double r = sec / ms; /* 1 with a unit, 1000 without */
        if (!(fabs(r - 1) < 1e-9 || fabs(r - 1000) < 1e-6)) {
            abort();
        }
    }
    free(s);
    return 0;
}
