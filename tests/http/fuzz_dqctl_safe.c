/*
 * fuzz_dqctl_safe.c: dqctl's output escaper under libFuzzer: whatever the bytes and
 * wherever they are cut, the output holds no control character (C0 but TAB/LF, DEL, C1)
 * and is valid UTF-8, and the cut does not change it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dqctl_safe.h"

static size_t run(const uint8_t *data, size_t n, size_t cut, char *out) {
    struct dqctl_esc st = {0};
    size_t o = dqctl_escape_stream(&st, (const char *)data, cut, out, 0);
    o += dqctl_escape_stream(&st, (const char *)data + cut, n - cut, out + o, 1);
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 4096) {
        return 0;
    }
    char *a = malloc(DQCTL_ESC_MAX_OUT(n) + 8), *b = malloc(DQCTL_ESC_MAX_OUT(n) + 8);
    size_t la = run(data, n, n, a);
    size_t lb = run(data, n, n ? data[0] % (n + 1) : 0, b);
    if (la != lb || memcmp(a, b, la) != 0) {
        abort();
    }
    for (size_t i = 0; i < la; i++) {
        unsigned char c = (unsigned char)a[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            abort();
        }
        if (c == 0xc2 && i + 1 < la && (unsigned char)a[i + 1] <= 0x9f) {
            abort();
        }
    }
    free(a);
    free(b);
    return 0;
}
