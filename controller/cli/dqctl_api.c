/*
 * dqctl_api.c: the dqctl subcommands that talk to a running dqd over its HTTP API.
 *
 * Each subcommand parses its options, makes one or two requests with libcurl (easy
 * interface: a CLI makes a handful of sequential calls), unwraps the Prometheus-style
 * envelope and prints either the API's data object (--json) or a rendering for people.
 * Everything that does not touch the network (options, durations, QTA points, the QTA
 * check, the renderers) is a separate function declared in dqctl_api.h so tests can
 * call it directly. Answers are read into a buffer capped at DQCTL_MAX_RESPONSE.
 * The plumbing (API call, option start, output streams) is shared with the adaptive-loop
 * commands of dqctl_log.c through dqctl_api.h.
 */
#include "dqctl_api.h"
#include "dqctl_set_err.h"
#include "dqctl_infer.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "dq.h"
#include "dq_error.h"
#include "dqctl.h"

#define PROBE_TEXT 1100 /* a name from the wire, each byte escaped at worst to \xNN */

static FILE *out_fp;
static FILE *err_fp;

void dqctl_api_set_output(FILE *out, FILE *err) {
    out_fp = out;
    err_fp = err;
}

FILE *dqctl_out(void) {
    return out_fp ? out_fp : stdout;
}

FILE *dqctl_err(void) {
    return err_fp ? err_fp : stderr;
}

static int json_errors; /* --json: errors as JSON objects */

void dqctl_set_json_errors(int on) {
    json_errors = on;
}

/* Prints one error: "dqctl: MESSAGE", or with --json {"status":"error","errorType":TYPE,
 * "error":MESSAGE[,"http_status":N]} on one line. */
static void complain_as(const char *type, long http_status, const char *msg) {
    FILE *e = dqctl_err();
    if (!json_errors) {
        fprintf(e, "dqctl: %s\n", msg);
        return;
    }
    json_t *o = json_pack("{s:s,s:s,s:s}", "status", "error", "errorType", type, "error", msg);
    if (o && http_status > 0) {
        json_object_set_new(o, "http_status", json_integer(http_status));
    }
    if (o) {
        json_dumpf(o, e, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(o);
    }
    fputc('\n', e);
}

void dqctl_complain_typed(const char *type, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    complain_as(type, 0, msg);
}

void dqctl_complain(const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    complain_as("error", 0, msg);
}

/* ---- options ---------------------------------------------------------------------- */

/* Option names with a value, and the bit that enables each. */
static const struct {
    const char *name;
    unsigned bit; /* 0 = always accepted */
    int has_value;
} option_table[] = {
    {"--server", 0, 1},
    {"--json", 0, 0},
    {"--help", 0, 0},
    {"-h", 0, 0},
    {"--csv", DQCTL_OPT_CSV, 0},
    {"--no-plot", DQCTL_OPT_NO_PLOT, 0},
    {"--kind", DQCTL_OPT_KIND, 1},
    {"--window", DQCTL_OPT_WINDOW, 1},
    {"--max-lost", DQCTL_OPT_MAX_LOST, 1},
    {"--clear", DQCTL_OPT_CLEAR, 0},
    {"--strategy", DQCTL_OPT_STRATEGY, 1},
    {"--wait", DQCTL_OPT_WAIT, 0},
    {"--timeout", DQCTL_OPT_WAIT, 1},
    {"--open", DQCTL_OPT_OPEN, 0},
    {"--limit", DQCTL_OPT_LIMIT, 1},
    {"--threshold", DQCTL_OPT_TRIGGER, 1},
    {"--fire-after", DQCTL_OPT_TRIGGER, 1},
    {"--clear-after", DQCTL_OPT_TRIGGER, 1},
    {"--disable", DQCTL_OPT_TRIGGER, 0},
    {"--abort", DQCTL_OPT_ABORT, 1},
    {"--overload", DQCTL_OPT_OVERLOAD, 0},
    {"--create", DQCTL_OPT_CREATE, 0},
    {"--types", DQCTL_OPT_WATCH, 1},
    {"--count", DQCTL_OPT_WATCH, 1},
    {"--for", DQCTL_OPT_WATCH, 1},
    {"--infer", DQCTL_OPT_INFER, 0},
    {"--service", DQCTL_OPT_INFER, 1},
};

static void apply_option(struct dqctl_opts *o, const char *name, const char *value) {
    if (strcmp(name, "--server") == 0) {
        o->server = value;
    } else if (strcmp(name, "--json") == 0) {
        o->json = 1;
    } else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        o->help = 1;
    } else if (strcmp(name, "--csv") == 0) {
        o->csv = 1;
    } else if (strcmp(name, "--no-plot") == 0) {
        o->no_plot = 1;
    } else if (strcmp(name, "--kind") == 0) {
        o->kind = value;
    } else if (strcmp(name, "--window") == 0) {
        o->window = value;
    } else if (strcmp(name, "--max-lost") == 0) {
        o->max_lost = value;
    } else if (strcmp(name, "--clear") == 0) {
        o->clear = 1;
    } else if (strcmp(name, "--strategy") == 0) {
        o->strategy = value;
    } else if (strcmp(name, "--wait") == 0) {
        o->wait = 1;
    } else if (strcmp(name, "--timeout") == 0) {
        o->timeout = value;
    } else if (strcmp(name, "--open") == 0) {
        o->open = 1;
    } else if (strcmp(name, "--limit") == 0) {
        o->limit = value;
    } else if (strcmp(name, "--threshold") == 0) {
        o->threshold = value;
    } else if (strcmp(name, "--fire-after") == 0) {
        o->fire_after = value;
    } else if (strcmp(name, "--clear-after") == 0) {
        o->clear_after = value;
    } else if (strcmp(name, "--disable") == 0) {
        o->disable = 1;
    } else if (strcmp(name, "--abort") == 0) {
        o->abort_id = value;
    } else if (strcmp(name, "--overload") == 0) {
        o->overload = 1;
    } else if (strcmp(name, "--create") == 0) {
        o->create = 1;
    } else if (strcmp(name, "--types") == 0) {
        o->types = value;
    } else if (strcmp(name, "--count") == 0) {
        o->count = value;
    } else if (strcmp(name, "--for") == 0) {
        o->for_ = value;
    } else if (strcmp(name, "--infer") == 0) {
        o->infer = 1;
    } else if (strcmp(name, "--service") == 0) {
        o->service = value;
    }
}

int dqctl_parse_args(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                     const char *env_url, struct dqctl_opts *o, char *err, size_t err_cap) {
    memset(o, 0, sizeof *o);
    o->kind = "observed";
    o->window = "latest";
    const char *cmd = argc > 0 ? argv[0] : "dqctl";
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (o->npos == DQCTL_MAX_POS) {
                return dqctl_set_err(err, err_cap, "%s: too many arguments", cmd);
            }
            o->pos[o->npos++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t name_len = eq ? (size_t)(eq - a) : strlen(a);
        size_t k;
        size_t n_opts = sizeof option_table / sizeof option_table[0];
        for (k = 0; k < n_opts; k++) {
            if (strlen(option_table[k].name) == name_len &&
                strncmp(option_table[k].name, a, name_len) == 0 &&
                (option_table[k].bit == 0 || (accepts & option_table[k].bit))) {
                break;
            }
        }
        if (k == n_opts) {
            return dqctl_set_err(err, err_cap, "%s: unknown option %.*s (see dqctl %s --help)", cmd,
                                 (int)name_len, a, cmd);
        }
        const char *value = NULL;
        if (option_table[k].has_value) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                return dqctl_set_err(err, err_cap, "%s: option %s needs a value", cmd,
                                     option_table[k].name);
            }
        } else if (eq) {
            return dqctl_set_err(err, err_cap, "%s: option %s takes no value", cmd,
                                 option_table[k].name);
        }
        apply_option(o, option_table[k].name, value);
    }
    if (!o->server || !*o->server) {
        o->server = env_url && *env_url ? env_url : DQCTL_DEFAULT_SERVER;
    }
    if (o->help) {
        return 0;
    }
    if (strcmp(o->kind, "observed") != 0 && strcmp(o->kind, "calculated") != 0) {
        return dqctl_set_err(err, err_cap, "%s: --kind must be observed or calculated, not \"%s\"",
                             cmd, o->kind);
    }
    if (strcmp(o->window, "latest") != 0) {
        char *end = NULL;
        errno = 0;
        long w = strtol(o->window, &end, 10);
        if (end == o->window || *end != '\0' || errno || w < 0 || w > 1000000) {
            return dqctl_set_err(err, err_cap,
                                 "%s: --window must be latest or N >= 0 (0 = latest), not \"%s\"",
                                 cmd, o->window);
        }
    }
    if (o->npos < min_pos) {
        return dqctl_set_err(err, err_cap, "%s: missing argument (see dqctl %s --help)", cmd, cmd);
    }
    if (o->npos > max_pos) {
        return dqctl_set_err(err, err_cap, "%s: unexpected argument \"%s\" (see dqctl %s --help)",
                             cmd, o->pos[max_pos], cmd);
    }
    return 0;
}

/* ---- numbers and durations ------------------------------------------------------------ */

int dqctl_parse_duration(const char *s, double bare_unit_s, double *out_s) {
    if (!s || !*s || *s == '+' || *s == '-') {
        return -1;
    }
    return dq_parse_duration(s, strlen(s), bare_unit_s, 0, out_s) == DQ_OK ? 0 : -1;
}

int dqctl_parse_fraction(const char *s, double *out) {
    if (!s || !*s) {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v) ||
        (s[0] != '.' && (s[0] < '0' || s[0] > '9'))) {
        return -1;
    }
    if (strcmp(end, "%") == 0) {
        v /= 100.0;
    } else if (*end != '\0') {
        return -1;
    }
    if (v < 0 || v > 1) {
        return -1;
    }
    *out = v;
    return 0;
}

int dqctl_parse_qta_point(const char *s, double *p, double *t_s, char *err, size_t err_cap) {
    const char *at = strchr(s, '@');
    if (!at) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\" is not P@T (e.g. 0.95@250ms)", s);
    }
    char pbuf[64];
    size_t n = (size_t)(at - s);
    if (n == 0 || n >= sizeof pbuf) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\": missing or long probability", s);
    }
    memcpy(pbuf, s, n);
    pbuf[n] = '\0';
    if (dqctl_parse_fraction(pbuf, p) < 0 || *p <= 0) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\": probability must be in (0, 1]", s);
    }
    if (dqctl_parse_duration(at + 1, 1e-3, t_s) < 0 || *t_s <= 0) {
        return dqctl_set_err(err, err_cap,
                             "QTA point \"%s\": time must be > 0, in milliseconds or with a unit "
                             "ns, us, ms, s or m (0.95@250, 0.95@250ms, 0.95@0.25s)",
                             s);
    }
    return 0;
}

json_t *dqctl_qta_body(const char *const *points, int n, const char *max_lost, char *err,
                       size_t err_cap) {
    double p[DQCTL_MAX_QTA_POINTS], t[DQCTL_MAX_QTA_POINTS];
    if (n < 1 || n > DQCTL_MAX_QTA_POINTS) {
        dqctl_set_err(err, err_cap, "a QTA has 1 to %d points, not %d", DQCTL_MAX_QTA_POINTS, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (dqctl_parse_qta_point(points[i], &p[i], &t[i], err, err_cap) < 0) {
            return NULL;
        }
    }
    /* insertion sort by time: at most 16 points */
    for (int i = 1; i < n; i++) {
        double pi = p[i], ti = t[i];
        int j = i - 1;
        while (j >= 0 && t[j] > ti) {
            p[j + 1] = p[j];
            t[j + 1] = t[j];
            j--;
        }
        p[j + 1] = pi;
        t[j + 1] = ti;
    }
    for (int i = 1; i < n; i++) {
        if (t[i] == t[i - 1]) {
            dqctl_set_err(err, err_cap, "two QTA points at the same time %g s", t[i]);
            return NULL;
        }
        if (p[i] < p[i - 1]) {
            dqctl_set_err(err, err_cap,
                          "QTA probabilities must not decrease with time (%g at %g s, %g at %g s)",
                          p[i - 1], t[i - 1], p[i], t[i]);
            return NULL;
        }
    }
    double lost = 1.0 - p[n - 1];
    if (max_lost && dqctl_parse_fraction(max_lost, &lost) < 0) {
        dqctl_set_err(err, err_cap,
                      "--max-lost must be a fraction in [0, 1] (e.g. 0.01 or 1%%), not "
                      "\"%s\"",
                      max_lost);
        return NULL;
    }
    json_t *pts = json_array();
    for (int i = 0; pts && i < n; i++) {
        json_array_append_new(pts, json_pack("[f,f]", p[i], t[i]));
    }
    json_t *body = json_pack("{s:{s:o,s:f}}", "qta", "points", pts, "max_lost", lost);
    if (!body) {
        dqctl_set_err(err, err_cap, "out of memory");
    }
    return body;
}

int dqctl_url_escape(const char *in, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
        int keep = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                   (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_' || *c == '~';
        size_t need = keep ? 1 : 3;
        if (o + need >= cap) {
            return -1;
        }
        if (keep) {
            out[o++] = (char)*c;
        } else {
            out[o++] = '%';
            out[o++] = hex[*c >> 4];
            out[o++] = hex[*c & 15];
        }
    }
    if (o >= cap) {
        return -1;
    }
    out[o] = '\0';
    return 0;
}

void dqctl_format_duration(double s, char *buf, size_t cap) {
    if (!isfinite(s)) {
        snprintf(buf, cap, "-");
    } else if (s == 0) {
        snprintf(buf, cap, "0");
    } else if (s < 1e-3) {
        snprintf(buf, cap, "%.3g us", s * 1e6);
    } else if (s < 1.0) {
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    } else {
        snprintf(buf, cap, "%.3g s", s);
    }
}

/* Compact form for QTA points: 250ms, 1.5s. */
static void format_compact(double s, char *buf, size_t cap) {
    if (s < 1e-3) {
        snprintf(buf, cap, "%.6gus", s * 1e6);
    } else if (s < 1.0) {
        snprintf(buf, cap, "%.6gms", s * 1e3);
    } else {
        snprintf(buf, cap, "%.6gs", s);
    }
}

/* ---- reading JSON answers ---------------------------------------------------------------- */

/* A number field (integer or real); NAN when absent, null or not a number. */
static double jnum(const json_t *obj, const char *key) {
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *jstr(const json_t *obj, const char *key, const char *dflt) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

/* F(t) from a ΔQ answer's cdf array, whose cdf[i] is P(delay ≤ (i+1)·bin_width): the value
 * at the last right edge at or before t, `lag` bins earlier for the lower bound (dqd's
 * "lag"; 0 when absent); NAN when malformed. */
static double cdf_at_lag(const json_t *dq, double t, int lag) {
    const json_t *cdf = json_object_get(dq, "cdf");
    double w = jnum(dq, "bin_width");
    size_t n = json_array_size(cdf);
    if (!json_is_array(cdf) || n == 0 || !(w > 0)) {
        return NAN;
    }
    double idx = floor(t / w + 1e-9) - 1.0 - lag;
    if (!(t >= 0) || idx < 0) {
        return 0;
    }
    size_t i = idx >= (double)n ? n - 1 : (size_t)idx;
    const json_t *v = json_array_get(cdf, i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double cdf_at(const json_t *dq, double t) {
    return cdf_at_lag(dq, t, 0);
}

/* The lower bound QTAs are checked on. */
static double cdf_bound_at(const json_t *dq, double t) {
    const json_t *lag = json_object_get(dq, "lag");
    return cdf_at_lag(dq, t, json_is_integer(lag) ? (int)json_integer_value(lag) : 0);
}

static double dq_lost_of(const json_t *dq) {
    double lost = jnum(dq, "lost");
    if (isnan(lost)) {
        const json_t *cdf = json_object_get(dq, "cdf");
        size_t n = json_array_size(cdf);
        lost = n ? 1.0 - json_number_value(json_array_get(cdf, n - 1)) : NAN;
    }
    return lost;
}

int dqctl_qta_check(const json_t *dq, const json_t *qta, char *why, size_t why_cap) {
    const json_t *pts = json_object_get(qta, "points");
    if (!json_is_array(pts) || json_array_size(pts) == 0) {
        return dqctl_set_err(why, why_cap, "QTA without points");
    }
    double worst = INFINITY;
    char worst_desc[160] = "";
    for (size_t i = 0; i < json_array_size(pts); i++) {
        const json_t *pt = json_array_get(pts, i);
        double p = json_number_value(json_array_get(pt, 0));
        double t = json_number_value(json_array_get(pt, 1));
        double f = cdf_bound_at(dq, t); /* never passes on rounding (docs/engine.md) */
        if (!json_is_array(pt) || json_array_size(pt) != 2 || isnan(f)) {
            return dqctl_set_err(why, why_cap, "malformed ΔQ or QTA point");
        }
        if (f - p < worst) {
            worst = f - p;
            char tb[32];
            dqctl_format_duration(t, tb, sizeof tb);
            snprintf(worst_desc, sizeof worst_desc, "P(d <= %s) = %.4g %s %.4g", tb, f,
                     f - p < -1e-9 ? "<" : ">=", p);
        }
    }
    double max_lost = jnum(qta, "max_lost");
    double lost = dq_lost_of(dq);
    const json_t *lag = json_object_get(dq, "lag");
    if (json_is_integer(lag) && json_integer_value(lag) > 0) {
        /* the upper bound of the lost mass: 1 − cdf[N − 1 − lag] */
        double h = jnum(dq, "bin_width") * (double)json_array_size(json_object_get(dq, "cdf"));
        lost = 1.0 - cdf_bound_at(dq, h);
    }
    if (!isnan(max_lost) && !isnan(lost) && max_lost - lost < worst) {
        worst = max_lost - lost;
        snprintf(worst_desc, sizeof worst_desc, "lost %.4g%% %s max %.4g%%", lost * 100,
                 worst < -1e-9 ? ">" : "<=", max_lost * 100);
    }
    int ok = worst >= -1e-9;
    dqctl_set_err(why, why_cap, "%s (worst margin %+.4g: %s)", ok ? "met" : "VIOLATED", worst,
                  worst_desc);
    return ok;
}

/* "0.5@100ms 0.95@250ms, max lost 1%" */
static void format_qta(const json_t *qta, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    const json_t *pts = json_object_get(qta, "points");
    for (size_t i = 0; i < json_array_size(pts) && o < cap; i++) {
        const json_t *pt = json_array_get(pts, i);
        char tb[32];
        format_compact(json_number_value(json_array_get(pt, 1)), tb, sizeof tb);
        int n = snprintf(buf + o, cap - o, "%s%g@%s", i ? " " : "",
                         json_number_value(json_array_get(pt, 0)), tb);
        o += n > 0 ? (size_t)n : 0;
    }
    double ml = jnum(qta, "max_lost");
    if (!isnan(ml) && o < cap) {
        snprintf(buf + o, cap - o, ", max lost %g%%", ml * 100);
    }
}

/* ---- renderers ----------------------------------------------------------------------- */

void dqctl_format_time(double unix_s, char *buf, size_t cap) {
    if (isnan(unix_s)) {
        snprintf(buf, cap, "-");
        return;
    }
    if (!(fabs(unix_s) < 1e12)) { /* beyond year 33000: no calendar, and no time_t overflow */
        snprintf(buf, cap, "%g", unix_s);
        return;
    }
    time_t secs = (time_t)floor(unix_s);
    int ms = (int)((unix_s - floor(unix_s)) * 1000.0 + 0.5);
    if (ms == 1000) {
        secs++;
        ms = 0;
    }
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, cap, "%.3f", unix_s);
        return;
    }
    char tmp[32];
    strftime(tmp, sizeof tmp, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03d", tmp, ms);
}

void dqctl_escape(const char *in, char *out, size_t cap) {
    size_t o = 0;
    if (cap == 0) {
        return;
    }
    for (const unsigned char *c = (const unsigned char *)(in ? in : ""); *c; c++) {
        char esc[8];
        int ctrl = *c < 0x20 || *c == 0x7f;
        size_t n = ctrl ? (size_t)snprintf(esc, sizeof esc, "\\x%02x", *c) : 1;
        if (!ctrl) {
            esc[0] = (char)*c;
        }
        if (o + n >= cap) {
            break;
        }
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
}

/* A string field, control characters escaped (for anything a wrapper named). */
static const char *jsafe(const json_t *obj, const char *key, const char *dflt, char *buf,
                         size_t cap) {
    dqctl_escape(jstr(obj, key, dflt), buf, cap);
    return buf;
}

/* "12:03:04 UTC" from ns since the epoch, with the date in front when it is not today. */
static void format_since(double ns, char *buf, size_t cap) {
    if (isnan(ns)) {
        snprintf(buf, cap, "-");
        return;
    }
    time_t secs = (time_t)floor(ns * 1e-9), now = time(NULL);
    struct tm tm, today;
    if (!gmtime_r(&secs, &tm) || !gmtime_r(&now, &today)) {
        snprintf(buf, cap, "%.0f", ns);
        return;
    }
    if (tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday) {
        strftime(buf, cap, "%H:%M:%S UTC", &tm);
    } else {
        strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
    }
}

void dqctl_render_silent(FILE *out, const json_t *s) {
    char probe[PROBE_TEXT], since[48], origin[PROBE_TEXT], node[PROBE_TEXT], app[PROBE_TEXT];
    format_since(jnum(s, "since_ns"), since, sizeof since);
    double windows = jnum(s, "windows");
    fprintf(out, "silent: %s since %s (%.0f window%s; ",
            jsafe(s, "probe", "?", probe, sizeof probe), since, isnan(windows) ? 0.0 : windows,
            windows == 1 ? "" : "s");
    if (!json_is_string(json_object_get(s, "origin"))) {
        fprintf(out, "never heard from since dqd started, and no wrapper is sending)\n");
        return;
    }
    jsafe(s, "origin", "?", origin, sizeof origin);
    jsafe(s, "node", "", node, sizeof node);
    jsafe(s, "app", "", app, sizeof app);
    fprintf(out, "no data from %s%s%s%s%s%s, %s)\n", origin, node[0] ? " node " : "", node,
            app[0] ? " app " : "", app,
            json_is_true(json_object_get(s, "previous_run")) ? " before dqd's restart" : "",
            json_is_true(json_object_get(s, "connected")) ? "connected but silent"
                                                          : "disconnected");
    const char *hint = jstr(s, "hint", NULL);
    if (hint) {
        fprintf(out, "  %s\n", hint);
    }
}

/* "dqd was not running from 14:52:42 UTC to 14:52:50 UTC (it stopped cleanly)". */
static void render_downtime(FILE *out, const json_t *gap) {
    char from[48], to[48];
    format_since(jnum(gap, "from_ns"), from, sizeof from);
    format_since(jnum(gap, "to_ns"), to, sizeof to);
    fprintf(out, "dqd was not running from %s to %s (%s)\n", from, to,
            json_is_true(json_object_get(gap, "clean"))
                ? "it stopped cleanly"
                : "it did not record a stop: from its last record");
}

static void fmt_count(const json_t *obj, const char *key, char *buf, size_t cap) {
    double v = jnum(obj, key);
    if (isnan(v)) {
        snprintf(buf, cap, "-");
    } else {
        snprintf(buf, cap, "%.0f", v);
    }
}

/* One row of the wrappers table; prefix "+ " marks a legacy wrapper's command link. */
static void render_wrapper_row(FILE *out, const json_t *w, const char *prefix) {
    const json_t *id = json_object_get(w, "id");
    char idb[32];
    if (json_is_integer(id)) {
        snprintf(idb, sizeof idb, "%s%lld", prefix, (long long)json_integer_value(id));
    } else {
        snprintf(idb, sizeof idb, "%s%s", prefix, json_is_string(id) ? json_string_value(id) : "-");
    }
    const json_t *r = json_object_get(w, "running");
    char peer[PROBE_TEXT], node[PROBE_TEXT], app[PROBE_TEXT];
    const char *kind = prefix[0] ? "commands" : jstr(w, "kind", "-");
    fprintf(out, "  %-6s %-9s %-22s %-16s %-16s %-10s %s\n", idb, kind,
            jsafe(w, "peer", "-", peer, sizeof peer), jsafe(w, "node", "-", node, sizeof node),
            jsafe(w, "app", "-", app, sizeof app),
            json_is_true(json_object_get(w, "connected")) ? "yes" : "no",
            json_is_boolean(r) ? (json_is_true(r) ? "yes" : "no") : "-");
}

void dqctl_render_status(FILE *out, const json_t *st) {
    double up = jnum(st, "uptime_seconds");
    long u = isnan(up) ? 0 : (long)up;
    const json_t *running = json_object_get(st, "running");
    fprintf(out, "dqd %s, up %ldd %02ld:%02ld:%02ld, running: %s\n", jstr(st, "version", "?"),
            u / 86400, u / 3600 % 24, u / 60 % 60, u % 60, json_is_true(running) ? "yes" : "no");
    fprintf(out, "ingest %s   http %s   window %.0f ms (lag %.0f ms)\n", jstr(st, "ingest", "?"),
            jstr(st, "http", "?"), jnum(st, "window_ms"), jnum(st, "lag_ms"));
    fprintf(out, "db %s   diagram %s\n", jstr(st, "db", "-"), jstr(st, "diagram", "none"));
    char a[32], b[32], c[32], d[32], e[32], f[32];
    fmt_count(st, "probes", a, sizeof a);
    fmt_count(st, "enabled", b, sizeof b);
    fmt_count(st, "connections", c, sizeof c);
    fmt_count(st, "instances_total", d, sizeof d);
    fmt_count(st, "protocol_errors_total", e, sizeof e);
    fmt_count(st, "windows_closed", f, sizeof f);
    fprintf(out,
            "probes %s (%s enabled)   connections %s   instances %s   protocol errors %s   "
            "windows closed %s\n",
            a, b, c, d, e, f);
    if (json_is_object(json_object_get(st, "downtime"))) {
        render_downtime(out, json_object_get(st, "downtime"));
    }
    const json_t *silent = json_object_get(st, "silent");
    for (size_t i = 0; i < json_array_size(silent); i++) {
        dqctl_render_silent(out, json_array_get(silent, i));
    }
    const json_t *ws = json_object_get(st, "wrappers");
    const json_t *down = json_object_get(st, "last_wrapper_down");
    if (json_is_integer(json_object_get(st, "wrappers_connected")) &&
        json_integer_value(json_object_get(st, "wrappers_connected")) == 0) {
        /* say it in words: nothing streams, and since when */
        if (json_is_object(down)) {
            char since[48], link[PROBE_TEXT];
            format_since(jnum(down, "since_ns"), since, sizeof since);
            fprintf(out, "no wrapper connected since %s (the last to go: link %s)\n", since,
                    jsafe(down, "link", "?", link, sizeof link));
        } else {
            fprintf(out, "no wrapper connected (none has connected since dqd started)\n");
        }
    }
    if (json_array_size(ws) == 0) {
        fprintf(out, "wrappers: none\n");
        return;
    }
    fprintf(out, "wrappers:\n  %-6s %-9s %-22s %-16s %-16s %-10s %s\n", "ID", "KIND", "PEER",
            "NODE", "APP", "CONNECTED", "RUNNING");
    for (size_t i = 0; i < json_array_size(ws); i++) {
        const json_t *w = json_array_get(ws, i);
        const json_t *with = json_object_get(w, "paired_with");
        if (json_is_integer(with) && strcmp(jstr(w, "kind", ""), "outbound") == 0) {
            continue; /* a legacy wrapper's command link: under its data link */
        }
        render_wrapper_row(out, w, "");
        const json_t *pair = NULL;
        for (size_t j = 0; json_is_integer(with) && j < json_array_size(ws) && !pair; j++) {
            const json_t *o = json_array_get(ws, j);
            if (json_equal(json_object_get(o, "id"), with)) {
                pair = o;
            }
        }
        if (pair) { /* one wrapper, two connections */
            render_wrapper_row(out, pair, "+ ");
        } else if (strcmp(jstr(w, "pairing", ""), "ambiguous") == 0) {
            fprintf(out, "         (several legacy wrappers or command listeners on this host: "
                         "which is whose cannot be told)\n");
        }
    }
}

void dqctl_render_probes(FILE *out, const json_t *probes) {
    int width = 4;
    for (size_t i = 0; i < json_array_size(probes); i++) {
        int n = (int)strlen(jstr(json_array_get(probes, i), "name", "?"));
        width = n > width ? n : width;
    }
    width = width > 40 ? 40 : width;
    fprintf(out, "%-*s %-6s %9s %5s %8s %9s %9s %9s %7s  %s\n", width, "NAME", "STATE", "DMAX",
            "BINS", "N", "P50", "P95", "P99", "LOST", "QTA");
    for (size_t i = 0; i < json_array_size(probes); i++) {
        const json_t *p = json_array_get(probes, i);
        const json_t *lw = json_object_get(p, "last_window");
        char dmax[24], n[24] = "-", p50[24] = "-", p95[24] = "-", p99[24] = "-", lost[24] = "-";
        dqctl_format_duration(jnum(p, "dmax_ms") / 1e3, dmax, sizeof dmax);
        if (json_is_object(lw)) {
            fmt_count(lw, "n", n, sizeof n);
            dqctl_format_duration(jnum(lw, "p50"), p50, sizeof p50);
            dqctl_format_duration(jnum(lw, "p95"), p95, sizeof p95);
            dqctl_format_duration(jnum(lw, "p99"), p99, sizeof p99);
            double l = jnum(lw, "lost");
            if (!isnan(l)) {
                snprintf(lost, sizeof lost, "%.2f%%", l * 100);
            }
        }
        char qta[256] = "-";
        const json_t *q = json_object_get(p, "qta");
        if (json_is_object(q)) {
            format_qta(q, qta, sizeof qta);
        }
        /* an enabled probe whose source went away is "silent", not just "on" */
        int on = json_is_true(json_object_get(p, "enabled"));
        int silent = on && json_is_number(json_object_get(p, "silent_since_ns"));
        fprintf(out, "%-*.*s %-6s %9s %5.0f %8s %9s %9s %9s %7s  %s\n", width, width,
                jstr(p, "name", "?"), silent ? "silent" : (on ? "on" : "off"), dmax,
                jnum(p, "bins"), n, p50, p95, p99, lost, qta);
    }
}

void dqctl_render_dq(FILE *out, const json_t *dq, const json_t *qta) {
    const json_t *win = json_object_get(dq, "window");
    char start[40], end[40];
    dqctl_format_time(jnum(win, "start"), start, sizeof start);
    dqctl_format_time(jnum(win, "end"), end, sizeof end);
    fprintf(out, "%s  %s ΔQ  window %s .. %s UTC\n", jstr(dq, "probe", "?"), jstr(dq, "kind", "?"),
            start, end);
    char n[24], ok[24], fa[24], to[24];
    fmt_count(dq, "n", n, sizeof n);
    fmt_count(dq, "ok", ok, sizeof ok);
    fmt_count(dq, "fa", fa, sizeof fa);
    fmt_count(dq, "to", to, sizeof to);
    fprintf(out, "  %-10s %s (ok %s, failed %s, timed out %s)\n", "instances", n, ok, fa, to);
    double lost = dq_lost_of(dq);
    fprintf(out, "  %-10s %.3f %%\n", "lost", isnan(lost) ? NAN : lost * 100);
    char mean[24], sd[24];
    double var = jnum(dq, "variance");
    dqctl_format_duration(jnum(dq, "mean"), mean, sizeof mean);
    dqctl_format_duration(isnan(var) || var < 0 ? NAN : sqrt(var), sd, sizeof sd);
    fprintf(out, "  %-10s %s (std dev %s)\n", "mean", mean, sd);
    const json_t *qs = json_object_get(dq, "quantiles");
    fprintf(out, "  %-10s", "quantiles");
    static const char *const keys[] = {"0.5", "0.9", "0.95", "0.99"};
    static const char *const labels[] = {"p50", "p90", "p95", "p99"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char b[24];
        dqctl_format_duration(jnum(qs, keys[i]), b, sizeof b);
        fprintf(out, " %s %s%s", labels[i], b, i + 1 < sizeof keys / sizeof keys[0] ? "," : "");
    }
    fputc('\n', out);
    char bw[24], hz[24];
    double w = jnum(dq, "bin_width"), bins = jnum(dq, "bins");
    dqctl_format_duration(w, bw, sizeof bw);
    dqctl_format_duration(w * bins, hz, sizeof hz);
    fprintf(out, "  %-10s %.0f bins of %s (horizon %s)\n", "grid", bins, bw, hz);
    if (json_is_object(qta)) {
        char q[256], why[256];
        format_qta(qta, q, sizeof q);
        dqctl_qta_check(dq, qta, why, sizeof why);
        fprintf(out, "  %-10s %s: %s\n", "QTA", q, why);
    } else {
        fprintf(out, "  %-10s none\n", "QTA");
    }
}

void dqctl_render_dq_csv(FILE *out, const json_t *dq) {
    const json_t *pdf = json_object_get(dq, "pdf");
    const json_t *cdf = json_object_get(dq, "cdf");
    double w = jnum(dq, "bin_width");
    fprintf(out, "t_s,pdf,cdf\n");
    for (size_t i = 0; i < json_array_size(cdf); i++) {
        /* t_s: the right edge of bin i, where cdf is P(delay ≤ t_s) (docs/engine.md) */
        fprintf(out, "%.9g,%.9g,%.9g\n", (double)(i + 1) * w,
                json_number_value(json_array_get(pdf, i)),
                json_number_value(json_array_get(cdf, i)));
    }
}

void dqctl_render_cdf_plot(FILE *out, const json_t *dq, const json_t *qta, int width, int height) {
    const json_t *cdf = json_object_get(dq, "cdf");
    double w = jnum(dq, "bin_width");
    size_t n = json_array_size(cdf);
    if (n == 0 || !(w > 0) || width < 8 || height < 3 || width > 400 || height > 100) {
        return;
    }
    /* x range: up to where the curve reaches its plateau, and past the QTA's points */
    double top = json_number_value(json_array_get(cdf, n - 1));
    size_t e = 0;
    while (e + 1 < n && json_number_value(json_array_get(cdf, e)) < top - 1e-6) {
        e++;
    }
    double t_max = (double)(e + 1) * w;
    const json_t *pts = json_object_get(qta, "points");
    for (size_t i = 0; i < json_array_size(pts); i++) {
        double t = json_number_value(json_array_get(json_array_get(pts, i), 1));
        t_max = t * 1.1 > t_max ? t * 1.1 : t_max;
    }
    char *grid = malloc((size_t)width * (size_t)height);
    if (!grid) {
        return;
    }
    memset(grid, ' ', (size_t)width * (size_t)height);
    /* row 0 is the top (F = 1), row height-1 the bottom (F = 0) */
    for (int c = 0; c < width; c++) {
        double t = t_max * (c + 1) / width;
        double f = cdf_at(dq, t);
        if (isnan(f)) {
            continue;
        }
        int r = (int)lround((1.0 - f) * (height - 1));
        r = r < 0 ? 0 : r >= height ? height - 1 : r;
        grid[r * width + c] = '*';
    }
    for (size_t i = 0; i < json_array_size(pts); i++) {
        const json_t *pt = json_array_get(pts, i);
        double p = json_number_value(json_array_get(pt, 0));
        double t = json_number_value(json_array_get(pt, 1));
        int c = (int)lround(t / t_max * width) - 1;
        int r = (int)lround((1.0 - p) * (height - 1));
        if (c >= 0 && c < width && r >= 0 && r < height) {
            grid[r * width + c] = 'Q';
        }
    }
    for (int r = 0; r < height; r++) {
        double level = 1.0 - (double)r / (height - 1);
        if (r == 0 || r == height - 1 || r == (height - 1) / 2) {
            fprintf(out, "%5.2f |", level);
        } else {
            fprintf(out, "      |");
        }
        fwrite(grid + r * width, 1, (size_t)width, out);
        fputc('\n', out);
    }
    free(grid);
    fprintf(out, "      +");
    for (int c = 0; c < width; c++) {
        fputc('-', out);
    }
    char tb[24];
    dqctl_format_duration(t_max, tb, sizeof tb);
    fprintf(out, "\n       0%*s\n", width - 1, tb);
    fprintf(out, "       P(delay <= t)%s\n", json_array_size(pts) ? "; Q = QTA points" : "");
}

/* ---- HTTP ------------------------------------------------------------------------------ */

struct fetch {
    char *data;
    size_t len;
    size_t cap;
    int over; /* the answer passed DQCTL_MAX_RESPONSE */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud) {
    struct fetch *f = ud;
    size_t n = size * nmemb;
    if (n > DQCTL_MAX_RESPONSE - f->len) {
        f->over = 1;
        return 0;
    }
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n + 1) {
            cap *= 2;
        }
        char *d = realloc(f->data, cap);
        if (!d) {
            f->over = 1;
            return 0;
        }
        f->data = d;
        f->cap = cap;
    }
    memcpy(f->data + f->len, ptr, n);
    f->len += n;
    f->data[f->len] = '\0';
    return n;
}

/*
 * One API call: method on server+path with an optional JSON body. On success *data is a
 * new reference to the envelope's data and the result is 0; otherwise the message goes to
 * msg and the result is DQCTL_EXIT_USAGE (connection, HTTP or envelope error).
 */
struct api_failure {
    char type[64]; /* the API's errorType, "unreachable", "bad_answer", "usage" */
    long http_status;
};

static int api_request(const struct dqctl_opts *o, const char *method, const char *path,
                       const json_t *body, const char *raw, size_t raw_len, json_t **data,
                       char *msg, size_t msg_cap, struct api_failure *failure) {
    snprintf(failure->type, sizeof failure->type, "usage");
    failure->http_status = 0;
    char url[4096];
    size_t sl = strlen(o->server);
    while (sl > 0 && o->server[sl - 1] == '/') {
        sl--;
    }
    if (snprintf(url, sizeof url, "%.*s%s", (int)sl, o->server, path) >= (int)sizeof url) {
        dqctl_set_err(msg, msg_cap, "URL too long");
        return DQCTL_EXIT_USAGE;
    }
    char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !payload) {
        dqctl_set_err(msg, msg_cap, "out of memory");
        return DQCTL_EXIT_USAGE;
    }
    size_t payload_len = payload ? strlen(payload) : 0;
    if (!body && raw) {
        payload = malloc(raw_len + 1);
        if (!payload) {
            dqctl_set_err(msg, msg_cap, "out of memory");
            return DQCTL_EXIT_USAGE;
        }
        memcpy(payload, raw, raw_len);
        payload[raw_len] = '\0';
        payload_len = raw_len;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        free(payload);
        dqctl_set_err(msg, msg_cap, "cannot initialise libcurl");
        return DQCTL_EXIT_USAGE;
    }
    struct fetch f = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (payload) {
        hdrs = curl_slist_append(hdrs, body ? "Content-Type: application/json"
                                            : "Content-Type: text/plain; charset=utf-8");
    } else {
        /* no body: no type either (libcurl's default is a form's, which dqd refuses) */
        hdrs = curl_slist_append(hdrs, "Content-Type:");
    }
    /* dqd wants its api_token on changes (and on reads beyond loopback): DQD_TOKEN carries
     * it, or the first line of the file DQD_TOKEN_FILE names */
    const char *token = getenv("DQD_TOKEN");
    char from_file[512] = "";
    const char *token_file = getenv("DQD_TOKEN_FILE");
    if ((!token || !*token) && token_file && *token_file) {
        FILE *tf = fopen(token_file, "r");
        if (tf) {
            if (fgets(from_file, sizeof from_file, tf)) {
                from_file[strcspn(from_file, "\r\n")] = '\0';
            }
            fclose(tf);
        } else {
            fprintf(stderr, "dqctl: DQD_TOKEN_FILE: cannot read %s: %s (sending no token)\n",
                    token_file, strerror(errno));
        }
        token = from_file;
    }
    char auth[600];
    if (token && *token && strlen(token) < 512) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "dqctl/0.1");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload ? payload : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, payload ? (long)payload_len : 0L);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    long os_errno = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(payload);
    int result = DQCTL_EXIT_USAGE;
    if (rc != CURLE_OK) {
        if (f.over) {
            dqctl_set_err(msg, msg_cap, "the answer of dqd at %.*s is larger than %u MiB", (int)sl,
                          o->server, DQCTL_MAX_RESPONSE >> 20);
        } else {
            const char *why =
                os_errno ? strerror((int)os_errno) : (errbuf[0] ? errbuf : curl_easy_strerror(rc));
            dqctl_set_err(msg, msg_cap,
                          "cannot reach dqd at %.*s: %s. Is dqd running? Set --server or DQD_URL.",
                          (int)sl, o->server, why);
        }
        snprintf(failure->type, sizeof failure->type, "unreachable");
        free(f.data);
        return result;
    }
    json_error_t jerr;
    json_t *env = f.data ? json_loadb(f.data, f.len, 0, &jerr) : NULL;
    const char *st = jstr(env, "status", NULL);
    failure->http_status = status;
    if (!json_is_object(env) || !st) {
        dqctl_set_err(msg, msg_cap,
                      "%s %s: HTTP %ld without the API's JSON envelope (is %.*s a dqd?)", method,
                      path, status, (int)sl, o->server);
        snprintf(failure->type, sizeof failure->type, "bad_answer");
    } else if (strcmp(st, "success") != 0 || status >= 400) {
        dqctl_set_err(msg, msg_cap, "%s (HTTP %ld, %s)",
                      jstr(env, "error", "error without a message"), status,
                      jstr(env, "errorType", "?"));
        snprintf(failure->type, sizeof failure->type, "%s", jstr(env, "errorType", "internal"));
        if (json_errors) { /* the API's own message, without dqctl's decoration */
            dqctl_set_err(msg, msg_cap, "%s", jstr(env, "error", "error without a message"));
        }
    } else {
        *data = json_incref(json_object_get(env, "data"));
        result = *data ? DQCTL_EXIT_OK : DQCTL_EXIT_USAGE;
        if (!*data) {
            dqctl_set_err(msg, msg_cap, "%s %s: the answer has no data", method, path);
        }
    }
    json_decref(env);
    free(f.data);
    return result;
}

int dqctl_api_call(const struct dqctl_opts *o, const char *method, const char *path,
                   const json_t *body, json_t **data) {
    char msg[4096];
    struct api_failure f;
    int rc = api_request(o, method, path, body, NULL, 0, data, msg, sizeof msg, &f);
    if (rc != DQCTL_EXIT_OK) {
        complain_as(f.type, f.http_status, msg);
    }
    return rc;
}

int dqctl_api_call_text(const struct dqctl_opts *o, const char *method, const char *path,
                        const char *text, size_t len, json_t **data, char *err, size_t err_cap,
                        char *type, size_t type_cap) {
    struct api_failure f;
    int rc = api_request(o, method, path, NULL, text ? text : "", text ? len : 0, data, err,
                         err_cap, &f);
    if (rc != DQCTL_EXIT_OK && type_cap) {
        snprintf(type, type_cap, "%s", f.type);
    }
    return rc;
}

int dqctl_api_get_quiet(const struct dqctl_opts *o, const char *path, json_t **data, char *err,
                        size_t err_cap) {
    struct api_failure f;
    return api_request(o, "GET", path, NULL, NULL, 0, data, err, err_cap, &f);
}

void dqctl_print_json(const json_t *data) {
    FILE *out = dqctl_out();
    /* One line: ΔQ arrays hold thousands of numbers; pipe to jq for an indented view. */
    json_dumpf(data, out, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    fputc('\n', out);
}

int dqctl_get_and_show(const struct dqctl_opts *o, const char *path, const struct dqctl_view *v) {
    json_t *data = NULL;
    int rc = dqctl_api_call(o, "GET", path, NULL, &data);
    if (rc == DQCTL_EXIT_OK) {
        if (o->json) {
            dqctl_print_json(data);
        } else if (v->not_list && !json_is_array(data)) {
            dqctl_complain("%s", v->not_list);
            rc = DQCTL_EXIT_USAGE;
        } else if (v->not_list && v->empty && json_array_size(data) == 0) {
            fprintf(dqctl_out(), "%s\n", v->empty);
        } else {
            v->render(dqctl_out(), data);
        }
        /* judged on the answer, not on what was printed: --json exits the same way */
        if (rc == DQCTL_EXIT_OK && v->problem && v->problem(data)) {
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return rc;
}

/* "/api/v1/probes/<escaped name><suffix>" */
int dqctl_probe_path(const char *name, const char *suffix, char *buf, size_t cap) {
    char esc[1024];
    if (!*name || dqctl_url_escape(name, esc, sizeof esc) < 0) {
        dqctl_complain("invalid probe name");
        return -1;
    }
    if (snprintf(buf, cap, "/api/v1/probes/%s%s", esc, suffix) >= (int)cap) {
        dqctl_complain("probe name too long");
        return -1;
    }
    return 0;
}

/* ---- subcommands ------------------------------------------------------------------------ */

static const char common_help[] =
    "options:\n"
    "  --server URL   dqd's HTTP API (default: $DQD_URL, else " DQCTL_DEFAULT_SERVER ")\n"
    "  --json         print the API's data object (one line of JSON) instead of the table\n"
    "  --help         this text\n";
static const char common_exit[] =
    "Exit status: 0 ok, 1 a problem was found, 2 usage, API or connection error.\n";

/* Parses options; prints help or the usage error. Returns -1 to go on, else an exit code. */
int dqctl_start_cmd(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                    const char *help, struct dqctl_opts *o) {
    char err[256];
    for (int i = 1; i < argc; i++) { /* before parsing: a usage error is JSON too */
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        if (strcmp(argv[i], "--json") == 0) {
            dqctl_set_json_errors(1);
        }
    }
    if (dqctl_parse_args(argc, argv, accepts, min_pos, max_pos, getenv("DQD_URL"), o, err,
                         sizeof err) < 0) {
        dqctl_complain_typed("usage", "%s", err);
        return DQCTL_EXIT_USAGE;
    }
    dqctl_set_json_errors(o->json);
    if (o->help) {
        /* a command whose exit codes say more than the common line documents its own */
        fprintf(dqctl_out(), "%s%s%s", help, common_help,
                strstr(help, "Exit status") ? "" : common_exit);
        return DQCTL_EXIT_OK;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return -1;
}

int dqctl_end_cmd(int code) {
    curl_global_cleanup();
    return code;
}

int dqctl_status_main(int argc, char **argv) {
    static const char help[] = "usage: dqctl status [--server URL] [--json]\n"
                               "dqd's version, uptime, addresses, counters and wrappers.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 0, 0, help, &o);
    if (rc >= 0) {
        return rc;
    }
    static const struct dqctl_view view = {.render = dqctl_render_status};
    return dqctl_end_cmd(dqctl_get_and_show(&o, "/api/v1/status", &view));
}

int dqctl_probes_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl probes [--server URL] [--json]\n"
        "Every probe dqd knows: enabled or not, dMax and bins, the last closed window's\n"
        "count, quantiles and lost fraction, and its QTA.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 0, 0, help, &o);
    if (rc >= 0) {
        return rc;
    }
    static const struct dqctl_view view = {
        .render = dqctl_render_probes,
        .not_list = "/api/v1/probes did not answer a list",
        .empty = "no probes yet",
    };
    return dqctl_end_cmd(dqctl_get_and_show(&o, "/api/v1/probes", &view));
}

int dqctl_dq_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl dq PROBE [--kind observed|calculated] [--window latest|N] [--csv]\n"
        "                [--no-plot] [--server URL] [--json]\n"
        "A probe's ΔQ for one closed window (N = 0 the latest, 1 the one before, ...):\n"
        "counts, lost fraction, mean, quantiles, its QTA verdict and a CDF plot; --csv\n"
        "prints t_s,pdf,cdf per bin. Exits 1 when the window violates the probe's QTA.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv,
                             DQCTL_OPT_KIND | DQCTL_OPT_WINDOW | DQCTL_OPT_CSV | DQCTL_OPT_NO_PLOT,
                             1, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    char path[2048], suffix[128];
    snprintf(suffix, sizeof suffix, "/dq?kind=%s&window=%s", o.kind, o.window);
    json_t *dq = NULL, *summary = NULL;
    if (dqctl_probe_path(o.pos[0], suffix, path, sizeof path) < 0) {
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    rc = dqctl_api_call(&o, "GET", path, NULL, &dq);
    if (rc == DQCTL_EXIT_OK && dqctl_probe_path(o.pos[0], "", path, sizeof path) == 0) {
        rc = dqctl_api_call(&o, "GET", path, NULL, &summary);
    }
    if (rc == DQCTL_EXIT_OK) {
        const json_t *qta = json_object_get(summary, "qta");
        FILE *out = dqctl_out();
        if (o.json) {
            dqctl_print_json(dq);
        } else if (o.csv) {
            dqctl_render_dq_csv(out, dq);
        } else {
            dqctl_render_dq(out, dq, qta);
            if (!o.no_plot) {
                fputc('\n', out);
                dqctl_render_cdf_plot(out, dq, qta, 60, 11);
            }
        }
        double n = jnum(dq, "n");
        int empty = strcmp(o.kind, "observed") == 0 && !(n > 0);
        char why[256];
        if (json_is_object(qta) && !empty && dqctl_qta_check(dq, qta, why, sizeof why) == 0) {
            dqctl_complain_typed("problem", "%s: QTA %s", o.pos[0], why);
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(dq);
    json_decref(summary);
    return dqctl_end_cmd(rc);
}

int dqctl_render_commands(FILE *out, const char *probe, const json_t *commands) {
    static const struct {
        const char *status, *text;
    } kinds[] = {
        {"sent", "sent to"},
        {"failed", "FAILED on"},
        {"not_applied", "NOT applied on"},
        {"ambiguous", "NOT known to have reached"},
    };
    if (json_array_size(commands) == 0) {
        fprintf(out, "  no wrapper is connected: wrappers get the enabled set when they "
                     "connect\n");
        return 0;
    }
    int missed = 0;
    size_t n_cmds = json_array_size(commands);
    const char *cmd = jstr(json_array_get(commands, 0), "command", "?");
    /* one line per status and reason: the links, then why (as dqd recorded it) */
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t first = 0; first < n_cmds; first++) {
            const json_t *f = json_array_get(commands, first);
            const char *detail = jstr(f, "detail", "");
            if (strcmp(jstr(f, "status", ""), kinds[k].status) != 0) {
                continue;
            }
            int seen = 0; /* this reason was printed with an earlier link */
            for (size_t i = 0; i < first && !seen; i++) {
                const json_t *c = json_array_get(commands, i);
                seen = strcmp(jstr(c, "status", ""), kinds[k].status) == 0 &&
                       strcmp(jstr(c, "detail", ""), detail) == 0;
            }
            if (seen) {
                continue;
            }
            char links[2048] = "";
            size_t len = 0, n = 0;
            for (size_t i = first; i < n_cmds; i++) {
                const json_t *c = json_array_get(commands, i);
                if (strcmp(jstr(c, "status", ""), kinds[k].status) != 0 ||
                    strcmp(jstr(c, "detail", ""), detail) != 0) {
                    continue;
                }
                char one[PROBE_TEXT];
                dqctl_escape(jstr(c, "link", "?"), one, sizeof one);
                int w = snprintf(links + len, sizeof links - len, "%s%s", n ? ", " : "", one);
                len = w > 0 && len + (size_t)w < sizeof links ? len + (size_t)w : len;
                n++;
            }
            missed += k > 0 ? (int)n : 0;
            if (k == 0 && detail[0]) {
                /* what the link is to its wrapper: "the wrapper's command listener (…)" */
                char d[512];
                dqctl_escape(detail, d, sizeof d);
                fprintf(out, "  %s sent to %s: %zu link%s (%s)\n", cmd, d, n, n == 1 ? "" : "s",
                        links);
                continue;
            }
            fprintf(out, "  %s %s %zu wrapper link%s (%s)", cmd, kinds[k].text, n,
                    n == 1 ? "" : "s", links);
            if (detail[0]) {
                char d[512];
                dqctl_escape(detail, d, sizeof d);
                fprintf(out, ": %s", d);
            } else if (strcmp(kinds[k].status, "not_applied") == 0) {
                fprintf(out, ": a legacy wrapper has no clear_timeout, it keeps reporting %s",
                        probe);
            } else if (strcmp(kinds[k].status, "failed") == 0) {
                fprintf(out, ": the link was not writable");
            }
            fputc('\n', out);
        }
    }
    return missed;
}

/* PUT /api/v1/probes/NAME with body (?create=1 with --create); prints the summary line,
 * what the change did on every link and dqd's warnings (or the JSON). Exits 1 when the
 * change could not be applied on some link. */
static int put_probe(const struct dqctl_opts *o, const char *name, json_t *body, int say_links) {
    char path[2048];
    if (!body) {
        dqctl_complain("out of memory");
        return DQCTL_EXIT_USAGE;
    }
    if (dqctl_probe_path(name, o->create ? "?create=1" : "", path, sizeof path) < 0) {
        json_decref(body);
        return DQCTL_EXIT_USAGE;
    }
    json_t *data = NULL;
    int rc = dqctl_api_call(o, "PUT", path, body, &data);
    json_decref(body);
    if (rc == DQCTL_EXIT_OK) {
        const json_t *cmds = json_object_get(data, "commands");
        int missed = 0;
        if (o->json) {
            dqctl_print_json(data);
            for (size_t i = 0; i < json_array_size(cmds); i++) {
                missed += strcmp(jstr(json_array_get(cmds, i), "status", ""), "sent") != 0;
            }
        } else {
            char dmax[24], qta[256] = "none";
            dqctl_format_duration(jnum(data, "dmax_ms") / 1e3, dmax, sizeof dmax);
            if (json_is_object(json_object_get(data, "qta"))) {
                format_qta(json_object_get(data, "qta"), qta, sizeof qta);
            }
            fprintf(dqctl_out(), "%s: %s in dqd, dmax %s, %.0f bins, QTA %s\n",
                    jstr(data, "name", name),
                    json_is_true(json_object_get(data, "enabled")) ? "enabled" : "disabled", dmax,
                    jnum(data, "bins"), qta);
            if (json_is_array(cmds) && (json_array_size(cmds) > 0 || say_links)) {
                missed = dqctl_render_commands(dqctl_out(), name, cmds);
            } else if (say_links && json_is_null(cmds)) {
                fprintf(dqctl_out(), "  it was %s already: nothing sent\n",
                        json_is_true(json_object_get(data, "enabled")) ? "enabled" : "disabled");
            }
        }
        const json_t *warnings = json_object_get(data, "warnings");
        for (size_t i = 0; i < json_array_size(warnings); i++) {
            const char *wtext = json_string_value(json_array_get(warnings, i));
            fprintf(dqctl_err(), "dqctl: warning: %s\n", wtext ? wtext : "?");
        }
        if (missed) {
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return rc;
}

static int enable_common(int argc, char **argv, int enable) {
    static const char help_on[] =
        "usage: dqctl enable PROBE [--create] [--server URL] [--json]\n"
        "Enables a probe: dqd sends set_timeout to every connected wrapper, which then\n"
        "reports it. Prints what happened on each wrapper link. PROBE must be known to\n"
        "dqd (in the diagram, or reported by a wrapper); --create registers a new name.\n"
        "Exit status: 0 done, 1 the send failed on some link (or it is not known to have\n"
        "reached a legacy wrapper: several on one host), 2 unknown probe, usage, API or\n"
        "connection error.\n";
    static const char help_off[] =
        "usage: dqctl disable PROBE [--create] [--server URL] [--json]\n"
        "Disables a probe: dqd sends clear_timeout to every connected wrapper. A legacy\n"
        "wrapper has no clear_timeout: there the disable is recorded as not applied, the\n"
        "wrapper keeps reporting the probe, and dqctl says so link by link.\n"
        "Exit status: 0 done, 1 not applied (or failed) on some link, 2 unknown probe,\n"
        "usage, API or connection error.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_CREATE, 1, 1, enable ? help_on : help_off, &o);
    if (rc >= 0) {
        return rc;
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:b}", "enabled", enable), 1));
}

int dqctl_enable_main(int argc, char **argv) {
    return enable_common(argc, argv, 1);
}

int dqctl_disable_main(int argc, char **argv) {
    return enable_common(argc, argv, 0);
}

int dqctl_set_timeout_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl set-timeout PROBE DURATION [--create] [--server URL] [--json]\n"
        "Sets a probe's dMax (its timeout and ΔQ horizon). A bare DURATION is\n"
        "milliseconds (250); a unit may follow: 250ms, 1.5s, 800us, 2m. dqd warns when a\n"
        "point of the probe's QTA then lies beyond dMax. --create registers a new name.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_CREATE, 2, 2, help, &o);
    if (rc >= 0) {
        return rc;
    }
    double s = 0;
    if (dqctl_parse_duration(o.pos[1], 1e-3, &s) < 0 || !(s > 0)) {
        dqctl_complain("set-timeout: \"%s\" is not a duration > 0 (e.g. 250, 250ms, 1.5s)",
                       o.pos[1]);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:f}", "dmax_ms", s * 1e3), 0));
}

int dqctl_qta_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl qta PROBE [P@T ...] [--max-lost X] [--create] [--server URL] [--json]\n"
        "       dqctl qta PROBE --clear\n"
        "Sets a probe's quantitative timeliness agreement: P(delay <= T) >= P at each\n"
        "point, and at most X of the instances lost (failed or timed out). A bare T is\n"
        "milliseconds (0.95@250); a unit may follow (ns, us, ms, s, m: 0.95@0.25s). P and\n"
        "X are fractions or percentages. X defaults to 1 - P of the last point (the bound\n"
        "the points already imply). A point beyond the probe's dMax is accepted with a\n"
        "warning. Without points, shows the current QTA; --clear removes it. Example:\n"
        "  dqctl qta checkout 0.5@100 0.95@250ms --max-lost 0.01\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_MAX_LOST | DQCTL_OPT_CLEAR | DQCTL_OPT_CREATE, 1,
                             DQCTL_MAX_QTA_POINTS + 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    if (o.clear) {
        if (o.npos > 1 || o.max_lost) {
            dqctl_complain("qta: --clear takes no points and no --max-lost");
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:n}", "qta"), 0));
    }
    if (o.npos == 1) {
        if (o.max_lost) {
            dqctl_complain("qta: --max-lost needs at least one P@T point");
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        char path[2048];
        json_t *data = NULL;
        if (dqctl_probe_path(o.pos[0], "", path, sizeof path) < 0) {
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        rc = dqctl_api_call(&o, "GET", path, NULL, &data);
        if (rc == DQCTL_EXIT_OK) {
            const json_t *q = json_object_get(data, "qta");
            if (o.json) {
                dqctl_print_json(q ? q : json_null());
            } else if (json_is_object(q)) {
                char buf[256];
                format_qta(q, buf, sizeof buf);
                fprintf(dqctl_out(), "%s: QTA %s\n", o.pos[0], buf);
            } else {
                fprintf(dqctl_out(), "%s: no QTA\n", o.pos[0]);
            }
        }
        json_decref(data);
        return dqctl_end_cmd(rc);
    }
    char err[256];
    json_t *body = dqctl_qta_body(o.pos + 1, o.npos - 1, o.max_lost, err, sizeof err);
    if (!body) {
        dqctl_complain("qta: %s", err);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], body, 0));
}

static int wrapper_common(int argc, char **argv, const char *verb) {
    static const char help_start[] =
        "usage: dqctl start [--server URL] [--json]\n"
        "Tells every connected wrapper to start (the system under test's stub).\n"
        "Exits 1 when no wrapper received the command.\n";
    static const char help_stop[] = "usage: dqctl stop [--server URL] [--json]\n"
                                    "Tells every connected wrapper to stop.\n"
                                    "Exits 1 when no wrapper received the command.\n";
    int start = strcmp(verb, "start") == 0;
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 0, 0, start ? help_start : help_stop, &o);
    if (rc >= 0) {
        return rc;
    }
    json_t *data = NULL;
    rc = dqctl_api_call(&o, "POST", start ? "/api/v1/wrapper/start" : "/api/v1/wrapper/stop", NULL,
                        &data);
    if (rc == DQCTL_EXIT_OK) {
        double sent = jnum(data, "sent_to");
        if (o.json) {
            dqctl_print_json(data);
        } else {
            fprintf(dqctl_out(), "%s sent to %.0f wrapper(s); running: %s\n", verb,
                    isnan(sent) ? 0 : sent,
                    json_is_true(json_object_get(data, "running")) ? "yes" : "no");
        }
        double muted = jnum(data, "not_applied");
        if (!(sent > 0) && muted > 0) {
            dqctl_complain_typed("problem",
                                 "%s: no wrapper was told to %s: the %.0f connected are legacy "
                                 "connections, which dqd does not write to (legacy_commands is "
                                 "off; the command is recorded not_applied)",
                                 verb, verb, muted);
            rc = DQCTL_EXIT_PROBLEM;
        } else if (!(sent > 0)) {
            dqctl_complain_typed(
                "problem", "%s: no wrapper is connected, so nothing was told to %s", verb, verb);
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

int dqctl_start_main(int argc, char **argv) {
    return wrapper_common(argc, argv, "start");
}

int dqctl_stop_main(int argc, char **argv) {
    return wrapper_common(argc, argv, "stop");
}

int dqctl_delete_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl delete PROBE [--server URL] [--json]\n"
        "Deletes a probe dqd knows (DELETE /api/v1/probes/PROBE): its settings, windows and\n"
        "triggers go; an enabled probe is disabled first, and dqctl says what that did on\n"
        "each wrapper link. Refused for a node of the loaded diagram (change the diagram)\n"
        "and for a probe an open investigation holds (dqctl diagnose --abort ID first). A\n"
        "wrapper that still reports the probe registers it again at its next instance.\n"
        "Exit status: 0 deleted, 1 deleted but the disable was not applied on some link,\n"
        "2 refused, unknown probe, usage, API or connection error.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 1, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    char path[2048];
    if (dqctl_probe_path(o.pos[0], "", path, sizeof path) < 0) {
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    json_t *data = NULL;
    rc = dqctl_api_call(&o, "DELETE", path, NULL, &data);
    if (rc == DQCTL_EXIT_OK) {
        const json_t *cmds = json_object_get(data, "commands");
        int missed = 0;
        if (o.json) {
            dqctl_print_json(data);
            for (size_t i = 0; i < json_array_size(cmds); i++) {
                missed += strcmp(jstr(json_array_get(cmds, i), "status", ""), "sent") != 0;
            }
        } else {
            FILE *out = dqctl_out();
            double seen = jnum(data, "instances"), trig = jnum(data, "triggers_removed");
            fprintf(out,
                    "%s deleted (%.0f instance%s seen since dqd started, %.0f trigger%s "
                    "removed)\n",
                    o.pos[0], isnan(seen) ? 0 : seen, seen == 1 ? "" : "s", isnan(trig) ? 0 : trig,
                    trig == 1 ? "" : "s");
            if (json_is_true(json_object_get(data, "was_enabled"))) {
                fprintf(out, "  it was enabled, so it was disabled first:\n");
                missed = dqctl_render_commands(out, o.pos[0], cmds);
            }
            const char *note = jstr(data, "note", NULL);
            if (note) {
                fprintf(out, "  note: %s\n", note);
            }
        }
        rc = missed ? DQCTL_EXIT_PROBLEM : DQCTL_EXIT_OK;
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

/* Reads a whole file (or stdin for "-") into a new buffer, at most 64 MiB. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
        if (n == cap) {
            char *more = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    if (f != stdin) {
        fclose(f);
    }
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static void render_diagram(FILE *out, const json_t *d) {
    const json_t *text = json_object_get(d, "text");
    if (!json_is_string(text)) {
        fprintf(out, "no diagram loaded (dqd --diagram FILE.dq, or dqctl diagram FILE.dq)\n");
        return;
    }
    char roots[2048] = "", probes[8192] = "";
    size_t rl = 0, pl = 0;
    const json_t *r = json_object_get(d, "roots"), *p = json_object_get(d, "probes");
    for (size_t i = 0; i < json_array_size(r); i++) {
        int w = snprintf(roots + rl, sizeof roots - rl, "%s%s", i ? ", " : "",
                         json_string_value(json_array_get(r, i)));
        rl = w > 0 && rl + (size_t)w < sizeof roots ? rl + (size_t)w : rl;
    }
    for (size_t i = 0; i < json_array_size(p); i++) {
        int w = snprintf(probes + pl, sizeof probes - pl, "%s%s", i ? ", " : "",
                         json_string_value(json_array_get(p, i)));
        pl = w > 0 && pl + (size_t)w < sizeof probes ? pl + (size_t)w : pl;
    }
    fprintf(out, "diagram %s: %zu probe%s, root%s %s\nprobes: %s\n\n%s",
            jstr(d, "path", "(sent through the API)"), json_array_size(p),
            json_array_size(p) == 1 ? "" : "s", json_array_size(r) == 1 ? "" : "s", roots, probes,
            json_string_value(text));
    size_t tl = strlen(json_string_value(text));
    if (tl == 0 || json_string_value(text)[tl - 1] != '\n') {
        fputc('\n', out);
    }
}

/* dqctl diagram --infer: the spans from dqd, the diagram on stdout. */
static int infer_diagram(const struct dqctl_opts *o) {
    if (!o->infer || o->npos > 0) {
        dqctl_complain_typed("usage", "diagram: --service goes with --infer, and --infer takes "
                                      "no FILE (redirect its output: > FILE.dq)");
        return DQCTL_EXIT_USAGE;
    }
    char path[600] = "/api/v1/otlp/spans";
    if (o->service) {
        char esc[512];
        if (dqctl_url_escape(o->service, esc, sizeof esc) != 0) {
            dqctl_complain_typed("usage", "diagram: --service is too long");
            return DQCTL_EXIT_USAGE;
        }
        snprintf(path, sizeof path, "/api/v1/otlp/spans?service=%s", esc);
    }
    json_t *spans = NULL;
    int rc = dqctl_api_call(o, "GET", path, NULL, &spans);
    if (rc != DQCTL_EXIT_OK) {
        return rc;
    }
    char err[512];
    char *text = dqctl_infer(spans, o->service, err, sizeof err);
    json_decref(spans);
    if (!text) {
        dqctl_complain_typed("problem", "diagram --infer: %s", err);
        return DQCTL_EXIT_PROBLEM;
    }
    if (o->json) {
        json_t *j = json_pack("{s:s}", "text", text);
        dqctl_print_json(j);
        json_decref(j);
    } else {
        fputs(text, dqctl_out());
    }
    free(text);
    return DQCTL_EXIT_OK;
}

int dqctl_diagram_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl diagram [FILE.dq | -] [--server URL] [--json]\n"
        "       dqctl diagram --infer [--service S] [--server URL] > FILE.dq\n"
        "Without FILE: the outcome diagram dqd has loaded (its path, roots, probes and\n"
        "text; GET /api/v1/diagram). With FILE (- reads stdin): loads it into dqd\n"
        "(PUT /api/v1/diagram), replacing the diagram; a model error is printed as\n"
        "FILE:LINE:COL: message and nothing changes.\n"
        "--infer writes a .dq diagram inferred from the parent/child span trees dqd keeps\n"
        "from OTLP (GET /api/v1/otlp/spans; of service S only with --service): children\n"
        "one after another are a sequence, overlapping children an all-to-finish when the\n"
        "parent waits for the last, a first-to-finish when it goes on after the first,\n"
        "different sets of children a choice with the observed weights; what the spans\n"
        "cannot settle is a # comment. Edit it, then load it with `dqctl diagram FILE.dq`.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_INFER, 0, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    json_t *data = NULL;
    if (o.infer || o.service) {
        return dqctl_end_cmd(infer_diagram(&o));
    }
    if (o.npos == 0) {
        rc = dqctl_api_call(&o, "GET", "/api/v1/diagram", NULL, &data);
    } else {
        size_t len = 0;
        char *text = read_all(o.pos[0], &len);
        if (!text) {
            dqctl_complain_typed("usage", "diagram: cannot read %s: %s", o.pos[0], strerror(errno));
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        char err[4096], type[64] = "error";
        rc = dqctl_api_call_text(&o, "PUT", "/api/v1/diagram", text, len, &data, err, sizeof err,
                                 type, sizeof type);
        free(text);
        if (rc != DQCTL_EXIT_OK) {
            /* a model error is "LINE:COL: message": name the file as a compiler would */
            int line = 0, col = 0;
            if (strcmp(type, "unprocessable") == 0 && sscanf(err, "%d:%d:", &line, &col) == 2) {
                dqctl_complain_typed(type, "%s:%s",
                                     strcmp(o.pos[0], "-") == 0 ? "<stdin>" : o.pos[0], err);
            } else {
                dqctl_complain_typed(type, "%s", err);
            }
        }
    }
    if (rc == DQCTL_EXIT_OK) {
        if (o.json) {
            dqctl_print_json(data);
        } else {
            if (o.npos == 1) {
                fprintf(dqctl_out(), "loaded %s into dqd\n", o.pos[0]);
            }
            render_diagram(dqctl_out(), data);
        }
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

int dqctl_api_main(const char *cmd, int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } table[] = {
        {"status", dqctl_status_main},   {"probes", dqctl_probes_main},
        {"dq", dqctl_dq_main},           {"enable", dqctl_enable_main},
        {"disable", dqctl_disable_main}, {"set-timeout", dqctl_set_timeout_main},
        {"qta", dqctl_qta_main},         {"start", dqctl_start_main},
        {"stop", dqctl_stop_main},       {"delete", dqctl_delete_main},
        {"diagram", dqctl_diagram_main},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(cmd, table[i].name) == 0) {
            return table[i].run(argc, argv);
        }
    }
    dqctl_complain("unknown command `%s`; see dqctl --help", cmd);
    return DQCTL_EXIT_USAGE;
}
