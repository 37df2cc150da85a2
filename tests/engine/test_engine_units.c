/*
 * test_engine_units.c: dq_parse_duration (engine/dq_units.c), the one parser of durations
 * people write (dqctl's arguments, DISTs, JSON strings): every unit, the bare unit each
 * caller chooses, signs, and malformed input with the message it gets; and
 * dq_format_duration and its kin, the one style durations are written in for people.
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

static void fmt_is(double s, const char *want) {
    char buf[DQ_DURATION_TEXT];
    dq_format_duration(s, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, want) == 0, "%.17g s: \"%s\", not \"%s\"", s, buf, want);
}

static void pm_is(double s, double hw, const char *want) {
    char buf[DQ_DURATION_TEXT];
    dq_format_duration_pm(s, hw, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, want) == 0, "%.17g ± %.17g s: \"%s\", not \"%s\"", s, hw, buf, want);
}

/* every output's style: value and unit, µs, no exponent, a whole dMax kept whole */
static void test_format(void) {
    fmt_is(30.6e-6, "30.6 \xc2\xb5s");
    fmt_is(0.25, "250 ms");
    fmt_is(1.024, "1024 ms"); /* not 1.02 s */
    fmt_is(4.096, "4096 ms");
    fmt_is(1.5, "1.5 s");
    fmt_is(1.0, "1 s");
    fmt_is(1.001, "1001 ms");
    fmt_is(1.66123, "1.66 s");
    fmt_is(12.5, "12.5 s");
    fmt_is(300, "300 s");
    fmt_is(1234.56, "1235 s"); /* every integer digit, no 1.23e+03 */
    fmt_is(0.0123456, "12.3 ms");
    fmt_is(7e-9, "7 ns");
    fmt_is(0.5e-9, "0.5 ns");
    fmt_is(0, "0 ms");
    fmt_is(-0.002, "-2 ms");
    fmt_is(NAN, "-");
    fmt_is(INFINITY, "-");
    pm_is(30.6e-6, 1.2e-6, "30.6 \xc2\xb5s \xc2\xb1 1.2 \xc2\xb5s");
    pm_is(30.6e-6, 123e-6, "30.6 \xc2\xb5s \xc2\xb1 123 \xc2\xb5s"); /* not 1.2e+02 */
    pm_is(0.0333, 0.00068, "33.3 ms \xc2\xb1 0.68 ms");
    pm_is(12.5, 40e-6, "12.5 s \xc2\xb1 40 \xc2\xb5s");
    pm_is(2.5, 0.04, "2.5 s \xc2\xb1 0.04 s");
    pm_is(2.048, 0.04, "2048 ms \xc2\xb1 40 ms");
    pm_is(0.01, NAN, "10 ms");
    char num[32];
    CHECK_STR(dq_format_number(1234.56, 3, num, sizeof num), "1235");
    CHECK_STR(dq_format_number(0.000123, 2, num, sizeof num), "0.00012");
    CHECK_STR(dq_format_number(2.5, 3, num, sizeof num), "2.5");
    CHECK_STR(dq_format_number(9.996, 3, num, sizeof num), "10");
    CHECK_STR(dq_format_number(-0.0001, 1, num, sizeof num), "-0.0001");
    CHECK_STR(dq_format_number(1e-13, 3, num, sizeof num), "0");
    CHECK_STR(dq_format_number(1e300, 3, num, sizeof num)[0] == '1' ? "ok" : num, "ok");
    CHECK(strchr(dq_format_number(1e300, 3, num, sizeof num), 'e') == NULL);
    dq_format_duration_sig(0.0370326, 6, num, sizeof num);
    CHECK_STR(num, "37.0326 ms");
    dq_format_duration_sig(3.90625e-6, 6, num, sizeof num);
    CHECK_STR(num, "3.90625 \xc2\xb5s");
    dq_format_duration_sig(3.554, 6, num, sizeof num);
    CHECK_STR(num, "3.554 s");
    /* a buffer too small is cut, never overrun */
    char tiny[4] = "xxx";
    dq_format_duration(0.25, tiny, sizeof tiny);
    CHECK(strlen(tiny) < sizeof tiny);
}

static const struct check_case cases[] = {
    CHECK_CASE(bare_numbers), CHECK_CASE(units),     CHECK_CASE(signs),
    CHECK_CASE(length),       CHECK_CASE(malformed), CHECK_CASE(format),
};

CHECK_MAIN(cases)
