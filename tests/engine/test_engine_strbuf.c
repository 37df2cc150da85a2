/*
 * test_engine_strbuf.c: the bounded string builder (engine/dq_strbuf.h): appends that fit,
 * the cut at every capacity (the text is always the longest prefix of what was asked
 * that fits, NUL-terminated, and the builder says it cut), appends after a cut, a buffer
 * of one byte and of none, resuming after text already in a buffer, and the va_list form.
 */
#include "dq_strbuf.h"

#include <stdarg.h>
#include <string.h>

#include "check.h"

static void test_appends(void) {
    char buf[64];
    struct dq_strbuf b;
    memset(buf, 'x', sizeof buf);
    dq_strbuf_init(&b, buf, sizeof buf);
    CHECK_STR(buf, "");
    CHECK_INT(b.len, 0);
    const char *names[] = {"validate", "pay", "ship"};
    for (int i = 0; i < 3; i++) {
        dq_strbuf_printf(&b, "%s%s", b.len ? ", " : "", names[i]);
    }
    CHECK_STR(buf, "validate, pay, ship");
    CHECK_INT(b.len, strlen("validate, pay, ship"));
    CHECK_INT(b.cut, 0);
    dq_strbuf_printf(&b, "%s", "");
    CHECK_INT(b.len, 19);
    CHECK_INT(b.cut, 0);
    dq_strbuf_printf(&b, " %d%%", 42);
    CHECK_STR(buf, "validate, pay, ship 42%");
}

/* At every capacity the text is the longest prefix that fits, and cut says whether it
 * is the whole. */
static void test_cut_at_every_capacity(void) {
    const char *whole = "n 1453 in 3 windows, mean 27.4 ms";
    size_t n = strlen(whole);
    for (size_t cap = 1; cap <= n + 3; cap++) {
        char buf[64];
        memset(buf, 'x', sizeof buf);
        struct dq_strbuf b;
        dq_strbuf_init(&b, buf, cap);
        dq_strbuf_printf(&b, "n %d in %d windows", 1453, 3);
        dq_strbuf_printf(&b, ", mean %s", "27.4 ms");
        size_t want = cap - 1 < n ? cap - 1 : n;
        CHECK_MSG(b.len == want && strlen(buf) == want && memcmp(buf, whole, want) == 0,
                  "cap %zu: \"%s\" (len %zu)", cap, buf, b.len);
        CHECK_MSG(b.cut == (want < n), "cap %zu: cut %d", cap, b.cut);
        CHECK_MSG(buf[cap] == 'x', "cap %zu: a byte past the buffer was written", cap);
    }
}

/* After a cut nothing more is added, even what would fit on its own. */
static void test_after_cut(void) {
    char buf[8];
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, sizeof buf);
    dq_strbuf_printf(&b, "%s", "abcdefghij");
    CHECK_STR(buf, "abcdefg");
    CHECK_INT(b.cut, 1);
    dq_strbuf_printf(&b, "%s", "z");
    CHECK_STR(buf, "abcdefg");
    CHECK_INT(b.len, 7);
    dq_strbuf_printf(&b, "%s", "");
    CHECK_STR(buf, "abcdefg");
    CHECK_INT(b.cut, 1);
}

static void test_tiny_buffers(void) {
    char one[1] = {'x'};
    struct dq_strbuf b;
    dq_strbuf_init(&b, one, 1);
    CHECK_INT(one[0], '\0');
    dq_strbuf_printf(&b, "%s", "");
    CHECK_INT(b.cut, 0);
    dq_strbuf_printf(&b, "%d", 7);
    CHECK_INT(one[0], '\0');
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cut, 1);

    /* no byte at all: nothing is written, not even through a NULL buffer */
    dq_strbuf_init(&b, NULL, 0);
    dq_strbuf_printf(&b, "%s", "");
    CHECK_INT(b.cut, 0);
    dq_strbuf_printf(&b, "%s", "text");
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cut, 1);
}

static void test_resume(void) {
    char buf[16] = "reason";
    struct dq_strbuf b;
    dq_strbuf_resume(&b, buf, sizeof buf);
    CHECK_INT(b.len, 6);
    CHECK_INT(b.cut, 0);
    dq_strbuf_printf(&b, ": %s", "a, b");
    CHECK_STR(buf, "reason: a, b");
    dq_strbuf_printf(&b, "%s", " and more");
    CHECK_STR(buf, "reason: a, b an");
    CHECK_INT(b.cut, 1);

    /* a buffer without a NUL is cut to cap − 1 bytes */
    char full[4] = {'a', 'b', 'c', 'd'};
    dq_strbuf_resume(&b, full, sizeof full);
    CHECK_STR(full, "abc");
    CHECK_INT(b.len, 3);
    CHECK_INT(b.cut, 1);

    dq_strbuf_resume(&b, NULL, 0);
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cut, 0);
}

static void append_v(struct dq_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dq_strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

static void test_vprintf(void) {
    char buf[32];
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, sizeof buf);
    append_v(&b, "%s holds %.0f %%", "front", 50.4);
    append_v(&b, " (%s)", "33.3 ms");
    CHECK_STR(buf, "front holds 50 % (33.3 ms)");
    CHECK_INT(b.cut, 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(appends),   CHECK_CASE(cut_at_every_capacity),
    CHECK_CASE(after_cut), CHECK_CASE(tiny_buffers),
    CHECK_CASE(resume),    CHECK_CASE(vprintf),
};

CHECK_MAIN(cases)
