/*
 * dq_units.c: durations written by people and configuration files (dq.h,
 * dq_parse_duration: a decimal number and an optional unit), and durations written for
 * people (dq_format_duration and its kin: the one output style). Pure: no I/O, no
 * allocation.
 */
#include "dq.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
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

/* ---- durations for people ------------------------------------------------------------- */

const char *dq_format_number(double v, int sig, char *buf, size_t cap) {
    if (cap == 0) {
        return buf;
    }
    if (!isfinite(v)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    sig = sig < 1 ? 1 : sig > 15 ? 15 : sig;
    double a = fabs(v);
    if (a < 1e-12) {
        snprintf(buf, cap, "0");
        return buf;
    }
    int mag = (int)floor(log10(a)); /* the exponent of the leading digit */
    int decimals = sig - 1 - mag;
    decimals = decimals < 0 ? 0 : decimals > 15 ? 15 : decimals;
    int n = snprintf(buf, cap, "%.*f", decimals, v);
    if (n < 0 || (size_t)n >= cap) {
        return buf;
    }
    if (decimals > 0) { /* "2.50" → "2.5", "10.00" → "10" */
        while (n > 0 && buf[n - 1] == '0') {
            buf[--n] = '\0';
        }
        if (n > 0 && buf[n - 1] == '.') {
            buf[--n] = '\0';
        }
    }
    if (strcmp(buf, "-0") == 0) {
        snprintf(buf, cap, "0");
    }
    return buf;
}

/* dq_duration_unit for a value written with sig significant digits. */
static const char *unit_for(double s, int sig, double *factor) {
    double a = fabs(s);
    double ms = a * 1e3;
    if (!isfinite(a) || a == 0.0) {
        *factor = 1e3;
        return "ms";
    }
    /* a whole number of milliseconds that sig digits of seconds would round (1024 ms, not
     * 1.02 s) stays in milliseconds */
    double scale = pow(10.0, sig - 1); /* a in [1, 10) to sig significant digits */
    double rounded = round(a * scale) / scale;
    int keep_ms = a < 10.0 && fabs(ms - round(ms)) <= 1e-9 * ms && fabs(rounded - a) > 1e-9 * a;
    if (a >= 1.0 && !keep_ms) {
        *factor = 1.0;
        return "s";
    }
    if (a >= 1e-3) {
        *factor = 1e3;
        return "ms";
    }
    if (a >= 1e-6) {
        *factor = 1e6;
        return "\xc2\xb5s";
    }
    *factor = 1e9;
    return "ns";
}

const char *dq_duration_unit(double s, double *factor) {
    return unit_for(s, 3, factor);
}

/* v seconds in the unit of `like` (a duration written with like_sig digits), sig digits:
 * "30.6 µs". */
static void format_in_unit(double v, double like, int like_sig, int sig, char *buf, size_t cap) {
    double f;
    const char *unit = unit_for(like, like_sig, &f);
    char num[40];
    dq_format_number(v * f, sig, num, sizeof num);
    snprintf(buf, cap, "%s %s", num, unit);
}

const char *dq_format_duration_sig(double s, int sig, char *buf, size_t cap) {
    if (cap == 0) {
        return buf;
    }
    if (!isfinite(s)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    format_in_unit(s, s, sig, sig, buf, cap);
    return buf;
}

const char *dq_format_duration(double s, char *buf, size_t cap) {
    return dq_format_duration_sig(s, 3, buf, cap);
}

const char *dq_format_duration_pm(double s, double hw, char *buf, size_t cap) {
    if (cap == 0) {
        return buf;
    }
    char a[DQ_DURATION_TEXT], b[DQ_DURATION_TEXT];
    dq_format_duration(s, a, sizeof a);
    if (!isfinite(s) || isnan(hw)) {
        snprintf(buf, cap, "%s", a);
        return buf;
    }
    double f;
    dq_duration_unit(s, &f);
    double h = fabs(hw);
    if (isfinite(h) && h * f < 0.01 && h > 0) {
        format_in_unit(h, h, 2, 2, b, sizeof b); /* too small for the value's unit */
    } else if (isfinite(h)) {
        format_in_unit(h, s, 3, 2, b, sizeof b);
    } else {
        snprintf(b, sizeof b, "-");
    }
    snprintf(buf, cap, "%s \xc2\xb1 %s", a, b);
    return buf;
}
