/*
 * dq_units.c: durations written by people and configuration files (dq.h,
 * dq_parse_duration): a decimal number and an optional unit. Pure: no I/O, no allocation.
 */
#include "dq.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

#define NUMBER_MAX 63 /* bytes of the number part */

static const struct {
    const char *unit;
    double seconds;
} units[] = {
    {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ms", 1e-3},
    {"s", 1.0},   {"m", 60.0},  {"min", 60.0},
};

int dq_parse_duration(const char *s, size_t len, double bare_unit_s, int allow_negative,
                      double *out_s) {
    if (!s || len == 0) {
        return dq_fail(DQ_EINVAL, "empty duration: write a number with a unit, as in 250ms");
    }
    /* the number: digits, one point, an exponent; a sign only in front (or after e) */
    size_t n = 0;
    int digits = 0;
    if (s[n] == '-' || s[n] == '+') {
        n++;
    }
    while (n < len && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) {
        digits += s[n] != '.';
        n++;
    }
    if (digits && n < len && (s[n] == 'e' || s[n] == 'E') && n + 1 < len &&
        ((s[n + 1] >= '0' && s[n + 1] <= '9') ||
         ((s[n + 1] == '-' || s[n + 1] == '+') && n + 2 < len && s[n + 2] >= '0' &&
          s[n + 2] <= '9'))) {
        n += 2;
        while (n < len && s[n] >= '0' && s[n] <= '9') {
            n++;
        }
    }
    if (!digits || n > NUMBER_MAX) {
        return dq_fail(DQ_EINVAL,
                       "`%.*s` is not a duration: a number, then a unit (ns, us, ms, "
                       "s, m), as in 250ms or 1.5s",
                       (int)(len > 40 ? 40 : len), s);
    }
    char buf[NUMBER_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n || errno == ERANGE || !isfinite(v)) {
        return dq_fail(DQ_EINVAL,
                       "`%.*s` is not a duration: a number, then a unit (ns, us, ms, "
                       "s, m), as in 250ms or 1.5s",
                       (int)(len > 40 ? 40 : len), s);
    }
    double scale = bare_unit_s;
    if (n < len) {
        size_t k, ul = len - n;
        for (k = 0; k < sizeof units / sizeof units[0]; k++) {
            if (strlen(units[k].unit) == ul && memcmp(units[k].unit, s + n, ul) == 0) {
                break;
            }
        }
        if (k == sizeof units / sizeof units[0]) {
            return dq_fail(DQ_EINVAL, "unknown unit `%.*s` in `%.*s`: use ns, us, ms, s or m",
                           (int)(ul > 16 ? 16 : ul), s + n, (int)(len > 40 ? 40 : len), s);
        }
        scale = units[k].seconds;
    }
    double r = v * scale;
    if (!isfinite(r)) {
        return dq_fail(DQ_EINVAL, "duration `%.*s` is too large", (int)(len > 40 ? 40 : len), s);
    }
    if (r < 0 && !allow_negative) {
        return dq_fail(DQ_EINVAL, "duration `%.*s` is negative", (int)(len > 40 ? 40 : len), s);
    }
    *out_s = r == 0 ? 0.0 : r; /* no -0 */
    return DQ_OK;
}
