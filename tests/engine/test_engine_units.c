/*
 * test_engine_units.c: dq_parse_duration (engine/dq_units.c), the one parser of durations
 * people write (dqctl's arguments, DISTs, JSON strings): every unit, the bare unit each
 * caller chooses, signs, and malformed input with the message it gets.
 */
#include <string.h>

#include "check.h"
#include "dq.h"
#include "dq_error.h"

static double ok(const char *s, double bare, int neg) {
    double v = NAN;
    int rc = dq_parse_duration(s, strlen(s), bare, neg, &v);
    CHECK_MSG(rc == DQ_OK, "%s: %s", s, dq_last_error());
    return v;
}

static void bad(const char *s, size_t len, int neg, const char *needle) {
    double v = 12345.0;
    int rc = dq_parse_duration(s, len, 1e-3, neg, &v);
    CHECK_MSG(rc == DQ_EINVAL, "accepted `%.*s`", (int)len, s);
    CHECK_MSG(v == 12345.0, "`%.*s` changed the output on failure", (int)len, s);
    CHECK_MSG(strstr(dq_last_error(), needle) != NULL, "`%.*s`: message %s lacks %s", (int)len, s,
              dq_last_error(), needle);
}

/* a bare number in the caller's unit: milliseconds for dqctl, seconds for JSON */
static void test_bare_numbers(void) {
    CHECK_NEAR(ok("50", 1e-3, 0), 0.050, 1e-15);
    CHECK_NEAR(ok("50", 1.0, 0), 50.0, 1e-12);
    CHECK_NEAR(ok("0.25", 1.0, 0), 0.25, 1e-15);
    CHECK_NEAR(ok(".5", 1e-3, 0), 0.0005, 1e-15);
    CHECK_NEAR(ok("5.", 1e-3, 0), 0.005, 1e-15);
    CHECK_NEAR(ok("1e3", 1e-3, 0), 1.0, 1e-12);
    CHECK_NEAR(ok("2.5E-1s", 1e-3, 0), 0.25, 1e-15);
}

static void test_units(void) {
    CHECK_NEAR(ok("7ns", 1e-3, 0), 7e-9, 1e-21);
    CHECK_NEAR(ok("800us", 1e-3, 0), 800e-6, 1e-18);
    CHECK_NEAR(ok("800\xc2\xb5s", 1e-3, 0), 800e-6, 1e-18);
    CHECK_NEAR(ok("30ms", 1.0, 0), 0.030, 1e-15);
    CHECK_NEAR(ok("0.03s", 1e-3, 0), 0.030, 1e-15);
    CHECK_NEAR(ok("2m", 1e-3, 0), 120.0, 1e-12);
    CHECK_NEAR(ok("1.5min", 1e-3, 0), 90.0, 1e-12);
    CHECK_NEAR(ok("0", 1e-3, 0), 0.0, 0);
    CHECK(!signbit(ok("-0", 1e-3, 0))); /* no negative zero */
}

static void test_signs(void) {
    CHECK_NEAR(ok("+5ms", 1.0, 0), 0.005, 1e-15);
    CHECK_NEAR(ok("-5ms", 1.0, 1), -0.005, 1e-15);
    bad("-5ms", 4, 0, "negative");
}

/* only len bytes are read: no NUL needed, and what follows does not count */
static void test_length(void) {
    const char buf[] = "250msXYZ";
    double v = 0;
    CHECK_INT(dq_parse_duration(buf, 5, 1.0, 0, &v), DQ_OK);
    CHECK_NEAR(v, 0.25, 1e-15);
}

static void test_malformed(void) {
    bad("", 0, 0, "empty duration");
    bad(NULL, 3, 0, "empty duration");
    bad("ms", 2, 0, "not a duration");
    bad(".", 1, 0, "not a duration");
    bad("-", 1, 1, "not a duration");
    bad("1.2.3", 5, 0, "not a duration");
    bad("1..2ms", 6, 0, "not a duration");
    bad("10 ms", 5, 0, "unknown unit ` ms`");
    bad("10h", 3, 0, "unknown unit `h`");
    bad("10MS", 4, 0, "unknown unit `MS`");
    bad("10mss", 5, 0, "unknown unit");
    bad("0x10", 4, 0, "unknown unit `x10`");
    bad("inf", 3, 0, "not a duration");
    bad("nan", 3, 0, "not a duration");
    bad("1e999", 5, 0, "not a duration");
    bad("1e", 2, 0, "unknown unit `e`");
    bad("1e+", 3, 0, "unknown unit `e+`");
    bad("1e308m", 6, 0, "too large");
    char longnum[200];
    memset(longnum, '1', sizeof longnum - 1);
    longnum[sizeof longnum - 1] = '\0';
    bad(longnum, strlen(longnum), 0, "not a duration");
}

static const struct check_case cases[] = {
    CHECK_CASE(bare_numbers), CHECK_CASE(units),     CHECK_CASE(signs),
    CHECK_CASE(length),       CHECK_CASE(malformed),
};

CHECK_MAIN(cases)
