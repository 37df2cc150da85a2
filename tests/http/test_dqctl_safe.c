/*
 * test_dqctl_safe.c: dqctl's output escaper (controller/cli/dqctl_safe.c): controls become
 * \xNN or \u00NN, UTF-8 passes, bytes that are not UTF-8 are escaped, and the result does
 * not depend on where the input is cut into chunks.
 */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "dqctl_safe.h"

static size_t esc_all(const char *in, size_t n, size_t chunk, char *out) {
    struct dqctl_esc st = {0};
    size_t o = 0;
    for (size_t i = 0; i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        o += dqctl_escape_stream(&st, in + i, k, out + o, 0);
    }
    o += dqctl_escape_stream(&st, "", 0, out + o, 1);
    out[o] = '\0';
    return o;
}

static void expect(const char *in, size_t n, const char *want) {
    char out[DQCTL_ESC_MAX_OUT(256) + 1];
    for (size_t chunk = 1; chunk <= n + 1; chunk++) {
        esc_all(in, n, chunk, out);
        if (strcmp(out, want) != 0) {
            fprintf(stderr, "chunk %zu: got \"%s\", want \"%s\"\n", chunk, out, want);
        }
        CHECK(strcmp(out, want) == 0);
    }
}

#define EXPECT(in, want) expect(in, sizeof(in) - 1, want)

/* control characters, C0 and C1 */
static void test_controls(void) {
    EXPECT("plain text\n\tok", "plain text\n\tok");
    EXPECT("\x1b[2Jfake\x07", "\\x1b[2Jfake\\x07");
    EXPECT("a\rb\x7f", "a\\x0db\\x7f");
    EXPECT("\xc2\x9b"
           "31m",
           "\\u009b31m"); /* C1 CSI */
}

/* UTF-8 passes; bytes that are not UTF-8 are escaped */
static void test_utf8(void) {
    EXPECT("\xc3\xa9t\xc3\xa9 \xce\x94Q", "\xc3\xa9t\xc3\xa9 \xce\x94Q");   /* été ΔQ */
    EXPECT("\xe2\x94\x80\xf0\x9f\x98\x80", "\xe2\x94\x80\xf0\x9f\x98\x80"); /* ─ 😀 */
    EXPECT("\xff\xfe", "\\xff\\xfe");                                       /* not UTF-8 */
    EXPECT("\x9b", "\\x9b");                                                /* a raw 8-bit CSI */
    EXPECT("\xc3", "\\xc3");                                                /* cut at the end */
    EXPECT("\xc3z", "\\xc3z"); /* lead byte without its tail */
    EXPECT("\xe2\x94z", "\\xe2\\x94z");
    EXPECT("\xc0\xaf", "\\xc0\\xaf");          /* overlong */
    EXPECT("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
    EXPECT("\xe2"
           "d\x1b",
           "\\xe2d\\x1b"); /* a lead byte, then ASCII (found by the fuzzer) */
}

static const struct check_case cases[] = {CHECK_CASE(controls), CHECK_CASE(utf8)};

CHECK_MAIN(cases)
