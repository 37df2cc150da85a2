/*
 * dqctl_dist.c: the DIST language of `dqctl model --set` (dqctl_dist.h): a recursive
 * parser over slices of the text, the canonical printer, support bounds, building a
 * DIST's ΔQ on a grid, the scale/shift transformation (dqctl_dq_map), and reading the
 * ΔQs of dqd's API answers.
 *
 * The parser works on (pointer, length) slices, so a DIST inside scale(…) or shift(…) is
 * parsed in place: the last comma of a transformation's arguments separates the inner
 * DIST from the number (a number has no comma, a samples path may), and the depth is
 * capped (DQCTL_DIST_MAX_DEPTH) so that no input makes the recursion deep.
 */
#include "dqctl_dist.h"
#include "dqctl_json.h"
#include "dqctl_set_err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "dq_strbuf.h"

#define EXP_TAIL_LN 20.72326583694 /* ln(1e9): the exponential bound leaves 1e-9 out */
#define SHOW 60                    /* bytes of a DIST quoted in a message */
#define TIME_EPS 1e-6              /* seconds: window boundaries in JSON are rounded */

/* ---- parsing -------------------------------------------------------------------------- */

struct slice {
    const char *s;
    size_t n;
};

static int is_space(char c) {
    return c == ' ' || c == '\t';
}

static struct slice trim(struct slice x) {
    while (x.n > 0 && is_space(x.s[0])) {
        x.s++;
        x.n--;
    }
    while (x.n > 0 && is_space(x.s[x.n - 1])) {
        x.n--;
    }
    return x;
}

static int starts(struct slice x, const char *word) {
    size_t n = strlen(word);
    return x.n >= n && memcmp(x.s, word, n) == 0;
}

/* A finite decimal number filling the whole slice (no hex, inf or nan). */
static int parse_number(struct slice x, double *out) {
    char buf[64];
    x = trim(x);
    if (x.n == 0 || x.n >= sizeof buf) {
        return -1;
    }
    for (size_t i = 0; i < x.n; i++) {
        char c = x.s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
            return -1;
        }
    }
    memcpy(buf, x.s, x.n);
    buf[x.n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno == ERANGE || end != buf + x.n || !isfinite(v)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* A time filling the slice: a number in seconds, or with a unit (10ms); negative only
 * when allowed. */
static int parse_time(struct slice x, int allow_negative, double *out) {
    x = trim(x);
    return dq_parse_duration(x.s, x.n, 1.0, allow_negative, out) == DQ_OK ? 0 : -1;
}

/* A whole number 0 … max filling the slice. */
static int parse_whole(struct slice x, long long max, long long *out) {
    if (x.n == 0 || x.n > 19) {
        return -1;
    }
    long long v = 0;
    for (size_t i = 0; i < x.n; i++) {
        if (x.s[i] < '0' || x.s[i] > '9') {
            return -1;
        }
        int d = x.s[i] - '0';
        if (v > (max - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int name_start(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int name_char(char c) {
    return name_start(c) || (c >= '0' && c <= '9');
}

/* The length of the probe name at the start of x (0 when there is none). */
static size_t name_len(struct slice x) {
    size_t i = 0;
    if (x.n == 0 || !name_start(x.s[0])) {
        return 0;
    }
    while (i < x.n && name_char(x.s[i])) {
        i++;
    }
    return i;
}

/* "FN(ARGS)" filling x: args gets ARGS. */
static int call_form(struct slice x, const char *fn, struct slice *args) {
    size_t n = strlen(fn);
    if (x.n < n + 2 || memcmp(x.s, fn, n) != 0 || x.s[n] != '(' || x.s[x.n - 1] != ')') {
        return 0;
    }
    args->s = x.s + n + 1;
    args->n = x.n - n - 2;
    return 1;
}

static struct dqctl_dist *new_dist(enum dqctl_dist_kind kind) {
    struct dqctl_dist *d = calloc(1, sizeof *d);
    if (d) {
        d->kind = kind;
    }
    return d;
}

static int parse_at(struct slice x, int depth, struct dqctl_dist **out, char *err, size_t cap);

/* probe:NAME[@W] and calculated:NAME[@W]; x is what follows the colon. */
static int parse_probe(struct slice x, enum dqctl_dist_kind kind, struct dqctl_dist **out,
                       char *err, size_t cap) {
    const char *form = kind == DQCTL_DIST_PROBE ? "probe" : "calculated";
    size_t nl = name_len(x);
    if (nl == 0 || (nl < x.n && x.s[nl] != '@')) {
        return dqctl_set_err(
            err, cap,
            "%s:NAME needs a probe name (letters, digits and _, not starting with a "
            "digit), as in %s:db; got `%s:%.*s`",
            form, form, form, (int)(x.n > SHOW ? SHOW : x.n), x.s);
    }
    if (nl > DQCTL_DIST_NAME_MAX) {
        return dqctl_set_err(err, cap,
                             "%s:NAME: a probe name has at most %d bytes (this one has %zu)", form,
                             DQCTL_DIST_NAME_MAX, nl);
    }
    long long w = 0;
    if (nl < x.n) {
        struct slice ws = {x.s + nl + 1, x.n - nl - 1};
        int latest = ws.n == 6 && memcmp(ws.s, "latest", 6) == 0;
        if (!latest && parse_whole(ws, DQCTL_DIST_MAX_WINDOW, &w) < 0) {
            return dqctl_set_err(
                err, cap,
                "%s:NAME@W: W is the window back from the latest (0 or `latest` = the "
                "latest, 1 the one before, … up to %d); got `%.*s`",
                form, DQCTL_DIST_MAX_WINDOW, (int)(ws.n > SHOW ? SHOW : ws.n), ws.s);
        }
    }
    struct dqctl_dist *d = new_dist(kind);
    if (!d) {
        return dqctl_set_err(err, cap, "out of memory");
    }
    memcpy(d->name, x.s, nl);
    d->name[nl] = '\0';
    d->window = (long)w;
    *out = d;
    return 0;
}

/* snapshot:ID:NAME[:before|:after]; x is what follows "snapshot:". */
static int parse_snapshot(struct slice x, struct dqctl_dist **out, char *err, size_t cap) {
    static const char usage[] =
        "snapshot:ID:NAME[:before|:after] needs a snapshot id ≥ 1 and a probe name, as in "
        "snapshot:3:db or snapshot:3:db:before";
    const char *colon = memchr(x.s, ':', x.n);
    long long id = 0;
    struct slice ids = {x.s, colon ? (size_t)(colon - x.s) : x.n};
    if (!colon || parse_whole(ids, INT64_MAX, &id) < 0 || id < 1) {
        return dqctl_set_err(err, cap, "%s; got `snapshot:%.*s`", usage,
                             (int)(x.n > SHOW ? SHOW : x.n), x.s);
    }
    struct slice rest = {colon + 1, x.n - ids.n - 1};
    size_t nl = name_len(rest);
    if (nl == 0 || (nl < rest.n && rest.s[nl] != ':')) {
        return dqctl_set_err(err, cap, "%s; got `snapshot:%.*s`", usage,
                             (int)(x.n > SHOW ? SHOW : x.n), x.s);
    }
    if (nl > DQCTL_DIST_NAME_MAX) {
        return dqctl_set_err(
            err, cap, "snapshot:ID:NAME: a probe name has at most %d bytes (this one has %zu)",
            DQCTL_DIST_NAME_MAX, nl);
    }
    int before = 0;
    if (nl < rest.n) {
        struct slice side = {rest.s + nl + 1, rest.n - nl - 1};
        if (side.n == 6 && memcmp(side.s, "before", 6) == 0) {
            before = 1;
        } else if (!(side.n == 5 && memcmp(side.s, "after", 5) == 0)) {
            return dqctl_set_err(
                err, cap,
                "snapshot:ID:NAME:SIDE: SIDE is `before` or `after` (the default) the "
                "firing; got `%.*s`",
                (int)(side.n > SHOW ? SHOW : side.n), side.s);
        }
    }
    struct dqctl_dist *d = new_dist(DQCTL_DIST_SNAPSHOT);
    if (!d) {
        return dqctl_set_err(err, cap, "out of memory");
    }
    memcpy(d->name, rest.s, nl);
    d->name[nl] = '\0';
    d->snapshot = id;
    d->before = before;
    *out = d;
    return 0;
}

/* scale(DIST,K) and shift(DIST,S); args is what is between the parentheses. */
static int parse_transform(struct slice whole, struct slice args, enum dqctl_dist_kind kind,
                           int depth, struct dqctl_dist **out, char *err, size_t cap) {
    int scale = kind == DQCTL_DIST_SCALE;
    const char *usage = scale ? "scale(DIST,K) needs a distribution and a factor K ≥ 0 (every "
                                "delay times K: 0.5 is twice as fast), as in scale(probe:db,0.5)"
                              : "shift(DIST,S) needs a distribution and a time S, in seconds or "
                                "with a unit (every delay plus S, never below 0), as in "
                                "shift(probe:db,0.01) or shift(probe:db,10ms)";
    const char *comma = NULL;
    for (size_t i = args.n; i > 0; i--) {
        if (args.s[i - 1] == ',') {
            comma = args.s + i - 1;
            break;
        }
    }
    double v = 0.0;
    if (!comma) {
        return dqctl_set_err(err, cap, "%s; got `%.*s`", usage,
                             (int)(whole.n > SHOW ? SHOW : whole.n), whole.s);
    }
    struct slice inner = {args.s, (size_t)(comma - args.s)};
    struct slice num = {comma + 1, args.n - inner.n - 1};
    if ((scale ? parse_number(num, &v) : parse_time(num, 1, &v)) < 0 || (scale && v < 0.0)) {
        struct slice t = trim(num);
        return dqctl_set_err(err, cap, "%s; got `%.*s` for %s", usage,
                             (int)(t.n > SHOW ? SHOW : t.n), t.s, scale ? "K" : "S");
    }
    if (depth + 1 > DQCTL_DIST_MAX_DEPTH) {
        return dqctl_set_err(err, cap, "transformations nested more than %d deep",
                             DQCTL_DIST_MAX_DEPTH);
    }
    struct dqctl_dist *in = NULL;
    if (parse_at(inner, depth + 1, &in, err, cap) < 0) {
        return -1;
    }
    struct dqctl_dist *d = new_dist(kind);
    if (!d) {
        dqctl_dist_free(in);
        return dqctl_set_err(err, cap, "out of memory");
    }
    d->a = v;
    d->inner = in;
    *out = d;
    return 0;
}

static int parse_at(struct slice x, int depth, struct dqctl_dist **out, char *err, size_t cap) {
    struct slice args;
    struct dqctl_dist *d = NULL;
    x = trim(x);
    int show = (int)(x.n > SHOW ? SHOW : x.n);
    if (x.n == 0) {
        return dqctl_set_err(
            err, cap,
            "empty distribution: use wait(T), uniform(A,B), exponential(RATE), never, "
            "samples(PATH), probe:NAME, snapshot:ID:NAME, scale(DIST,K) or "
            "shift(DIST,S)");
    }
    if (x.n == 5 && memcmp(x.s, "never", 5) == 0) {
        d = new_dist(DQCTL_DIST_NEVER);
    } else if (call_form(x, "wait", &args)) {
        double t;
        if (parse_time(args, 0, &t) < 0) {
            return dqctl_set_err(err, cap,
                                 "wait(T) needs one time T ≥ 0, in seconds or with a unit, as in "
                                 "wait(0.25) or wait(250ms); got `%.*s`",
                                 show, x.s);
        }
        if ((d = new_dist(DQCTL_DIST_WAIT)) != NULL) {
            d->a = t;
        }
    } else if (call_form(x, "uniform", &args)) {
        const char *comma = memchr(args.s, ',', args.n);
        double a = 0.0, b = 0.0;
        struct slice sa = {args.s, comma ? (size_t)(comma - args.s) : 0};
        struct slice sb = {comma ? comma + 1 : args.s, comma ? args.n - sa.n - 1 : 0};
        if (!comma || parse_time(sa, 0, &a) < 0 || parse_time(sb, 0, &b) < 0 || b < a) {
            return dqctl_set_err(
                err, cap,
                "uniform(A,B) needs two times 0 ≤ A ≤ B, in seconds or with a unit, as "
                "in uniform(1,2) or uniform(5ms,20ms); got `%.*s`",
                show, x.s);
        }
        if ((d = new_dist(DQCTL_DIST_UNIFORM)) != NULL) {
            d->a = a;
            d->b = b;
        }
    } else if (call_form(x, "exponential", &args)) {
        double r;
        if (parse_number(args, &r) < 0 || !(r > 0.0)) {
            return dqctl_set_err(
                err, cap,
                "exponential(RATE) needs a rate > 0 per second, as in exponential(10) "
                "(mean 0.1 s); got `%.*s`",
                show, x.s);
        }
        if ((d = new_dist(DQCTL_DIST_EXPONENTIAL)) != NULL) {
            d->a = r;
        }
    } else if (call_form(x, "samples", &args)) {
        if (args.n == 0 || args.n >= 4096) {
            return dqctl_set_err(err, cap,
                                 "samples(PATH) needs a file path (under 4096 bytes); got `%.*s`",
                                 show, x.s);
        }
        if ((d = new_dist(DQCTL_DIST_SAMPLES)) != NULL) {
            d->path = malloc(args.n + 1);
            if (!d->path) {
                free(d);
                return dqctl_set_err(err, cap, "out of memory");
            }
            memcpy(d->path, args.s, args.n);
            d->path[args.n] = '\0';
        }
    } else if (call_form(x, "scale", &args)) {
        return parse_transform(x, args, DQCTL_DIST_SCALE, depth, out, err, cap);
    } else if (call_form(x, "shift", &args)) {
        return parse_transform(x, args, DQCTL_DIST_SHIFT, depth, out, err, cap);
    } else if (starts(x, "probe:")) {
        return parse_probe((struct slice){x.s + 6, x.n - 6}, DQCTL_DIST_PROBE, out, err, cap);
    } else if (starts(x, "calculated:")) {
        return parse_probe((struct slice){x.s + 11, x.n - 11}, DQCTL_DIST_CALCULATED, out, err,
                           cap);
    } else if (starts(x, "snapshot:")) {
        return parse_snapshot((struct slice){x.s + 9, x.n - 9}, out, err, cap);
    } else {
        static const char *const fns[] = {"wait(",    "uniform(", "exponential(",
                                          "samples(", "scale(",   "shift("};
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
            if (starts(x, fns[i])) {
                return dqctl_set_err(err, cap, "`%.*s` does not end with the `)` that closes %s…)",
                                     show, x.s, fns[i]);
            }
        }
        return dqctl_set_err(
            err, cap,
            "unknown distribution `%.*s`; use wait(T), uniform(A,B), exponential(RATE), "
            "never, samples(PATH), probe:NAME, calculated:NAME, snapshot:ID:NAME, "
            "scale(DIST,K) or shift(DIST,S)",
            show, x.s);
    }
    if (!d) {
        return dqctl_set_err(err, cap, "out of memory");
    }
    *out = d;
    return 0;
}

int dqctl_dist_parse(const char *text, struct dqctl_dist **out, char *err, size_t err_cap) {
    if (!text || !out) {
        return dqctl_set_err(err, err_cap, "no distribution");
    }
    struct slice x = {text, strlen(text)};
    return parse_at(x, 0, out, err, err_cap);
}

void dqctl_dist_free(struct dqctl_dist *d) {
    while (d) {
        struct dqctl_dist *in = d->inner;
        free(d->path);
        free(d->durations);
        dq_destroy(d->measured);
        free(d);
        d = in;
    }
}

/* ---- printing and walking ---------------------------------------------------------------- */

static void format_into(const struct dqctl_dist *d, struct dq_strbuf *b) {
    switch (d->kind) {
    case DQCTL_DIST_WAIT:
        dq_strbuf_printf(b, "wait(%.17g)", d->a);
        break;
    case DQCTL_DIST_UNIFORM:
        dq_strbuf_printf(b, "uniform(%.17g,%.17g)", d->a, d->b);
        break;
    case DQCTL_DIST_EXPONENTIAL:
        dq_strbuf_printf(b, "exponential(%.17g)", d->a);
        break;
    case DQCTL_DIST_NEVER:
        dq_strbuf_printf(b, "never");
        break;
    case DQCTL_DIST_SAMPLES:
        dq_strbuf_printf(b, "samples(%s)", d->path);
        break;
    case DQCTL_DIST_PROBE:
    case DQCTL_DIST_CALCULATED:
        dq_strbuf_printf(b, "%s:%s", d->kind == DQCTL_DIST_PROBE ? "probe" : "calculated", d->name);
        if (d->window > 0) {
            dq_strbuf_printf(b, "@%ld", d->window);
        }
        break;
    case DQCTL_DIST_SNAPSHOT:
        dq_strbuf_printf(b, "snapshot:%lld:%s:%s", d->snapshot, d->name,
                         d->before ? "before" : "after");
        break;
    case DQCTL_DIST_SCALE:
    case DQCTL_DIST_SHIFT:
        dq_strbuf_printf(b, "%s(", d->kind == DQCTL_DIST_SCALE ? "scale" : "shift");
        format_into(d->inner, b);
        dq_strbuf_printf(b, ",%.17g)", d->a);
        break;
    }
}

void dqctl_dist_format(const struct dqctl_dist *d, char *buf, size_t cap) {
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    if (d) {
        format_into(d, &b);
    }
}

int dqctl_dist_is_measured(const struct dqctl_dist *d) {
    return d && (d->kind == DQCTL_DIST_PROBE || d->kind == DQCTL_DIST_CALCULATED ||
                 d->kind == DQCTL_DIST_SNAPSHOT);
}

int dqctl_dist_is_live(const struct dqctl_dist *d) {
    for (; d; d = d->inner) {
        if (dqctl_dist_is_measured(d)) {
            return 1;
        }
    }
    return 0;
}

struct dqctl_dist *dqctl_dist_leaf(struct dqctl_dist *d) {
    while (d && d->inner) {
        d = d->inner;
    }
    return d;
}

/* ---- bounds and building ---------------------------------------------------------------- */

/* Bin i of a grid of width w collects (i·w, (i+1)·w] (the engine's bins, dq.h). */
static double bin_lo(int i, double w) {
    return i * w;
}

static double bin_hi(int i, double w) {
    return (i + 1) * w;
}

static double measured_bound(const struct dq *q) {
    int i = dq_last_bin(q);
    return i >= 0 ? bin_hi(i, q->width) : 0.0;
}

double dqctl_dist_bound(const struct dqctl_dist *d) {
    double b = 0.0;
    switch (d->kind) {
    case DQCTL_DIST_WAIT:
        return d->a;
    case DQCTL_DIST_UNIFORM:
        return d->b;
    case DQCTL_DIST_EXPONENTIAL:
        return EXP_TAIL_LN / d->a;
    case DQCTL_DIST_NEVER:
        return 0.0;
    case DQCTL_DIST_SAMPLES:
        for (size_t i = 0; i < d->count; i++) {
            b = d->durations[i] > b ? d->durations[i] : b;
        }
        return b;
    case DQCTL_DIST_PROBE:
    case DQCTL_DIST_CALCULATED:
    case DQCTL_DIST_SNAPSHOT:
        return measured_bound(d->measured);
    case DQCTL_DIST_SCALE:
        return d->a * dqctl_dist_bound(d->inner);
    case DQCTL_DIST_SHIFT:
        b = dqctl_dist_bound(d->inner) + d->a;
        return b > 0.0 ? b : 0.0;
    }
    return 0.0;
}

double dqctl_dist_resolution(const struct dqctl_dist *d) {
    switch (d->kind) {
    case DQCTL_DIST_PROBE:
    case DQCTL_DIST_CALCULATED:
    case DQCTL_DIST_SNAPSHOT:
        return d->measured ? d->measured->width : 0.0;
    case DQCTL_DIST_SCALE:
        return d->a * dqctl_dist_resolution(d->inner);
    case DQCTL_DIST_SHIFT:
        return dqctl_dist_resolution(d->inner);
    default:
        return 0.0;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The hint of a samples leaf: range, moments, failed share, and the densest run of
 * max(5, count/20) sorted durations as its density. */
static void samples_hint(const struct dqctl_dist *d, struct dq_hint *h) {
    dq_hint_never(h);
    uint64_t total = d->count + d->n_failed + d->n_timeout;
    if (total == 0) {
        return;
    }
    h->failed = (double)(d->n_failed + d->n_timeout) / (double)total;
    if (d->count == 0) {
        return;
    }
    double *v = malloc(d->count * sizeof *v);
    if (!v) {
        return;
    }
    memcpy(v, d->durations, d->count * sizeof *v);
    qsort(v, d->count, sizeof *v, cmp_double);
    double sum = 0.0, sq = 0.0;
    for (size_t i = 0; i < d->count; i++) {
        sum += v[i];
        sq += v[i] * v[i];
    }
    double ok = (double)d->count / (double)total;
    h->lo = v[0];
    h->hi = v[d->count - 1];
    h->mean = sum / (double)d->count;
    h->var = sq / (double)d->count - h->mean * h->mean;
    h->var = h->var > 0.0 ? h->var : 0.0;
    size_t run = d->count / 20 > 5 ? d->count / 20 : 5;
    if (run < d->count) {
        for (size_t i = 0; i + run < d->count; i++) {
            double span = v[i + run] - v[i];
            double f = span > 0.0 ? ok * (double)run / (double)d->count / span : 0.0;
            h->fmax = f > h->fmax ? f : h->fmax;
        }
    } else if (h->hi > h->lo) {
        h->fmax = ok / (h->hi - h->lo);
    }
    free(v);
}

void dqctl_dist_hint(const struct dqctl_dist *d, struct dq_hint *h) {
    switch (d->kind) {
    case DQCTL_DIST_WAIT:
        dq_hint_wait(d->a, h);
        return;
    case DQCTL_DIST_UNIFORM:
        dq_hint_uniform(d->a, d->b, h);
        return;
    case DQCTL_DIST_EXPONENTIAL:
        dq_hint_exponential(d->a, h);
        return;
    case DQCTL_DIST_NEVER:
        dq_hint_never(h);
        return;
    case DQCTL_DIST_SAMPLES:
        samples_hint(d, h);
        return;
    case DQCTL_DIST_PROBE:
    case DQCTL_DIST_CALCULATED:
    case DQCTL_DIST_SNAPSHOT:
        if (d->measured) {
            dq_hint_dq(d->measured, h);
        } else {
            dq_hint_wait(0.0, h);
        }
        return;
    case DQCTL_DIST_SCALE:
        dqctl_dist_hint(d->inner, h);
        dq_hint_scale(h, d->a);
        return;
    case DQCTL_DIST_SHIFT:
        dqctl_dist_hint(d->inner, h);
        dq_hint_shift(h, d->a);
        return;
    }
    dq_hint_wait(0.0, h);
}

/* Adds mass m at time t to dst (grid w, n): the bin holding t, lost beyond n·w. Returns 1
 * when t is a right edge of the grid (or 0). */
static int add_point(double *dst, int n, double w, double m, double t) {
    if (!(t <= n * w * (1.0 + 1e-12))) {
        return 1;
    }
    double x = t / w, i = t > 0.0 ? ceil(x * (1 - 1e-12)) - 1.0 : 0.0;
    i = i < 0.0 ? 0.0 : i;
    dst[i >= n ? n - 1 : (int)i] += m;
    return t <= 0.0 || fabs(x - (i + 1.0)) <= 1e-9 * (x > 1.0 ? x : 1.0);
}

/* Adds mass m spread evenly over [lo, hi) (0 ≤ lo < hi) to dst; lost beyond n·w. */
static void add_spread(double *dst, int n, double w, double m, double lo, double hi) {
    if (!(lo < n * w)) {
        return;
    }
    double len = hi - lo;
    int j = (int)floor(lo / w) - 1; /* one early: round-off may put lo in j − 1 */
    for (j = j < 0 ? 0 : j; j < n; j++) {
        double a = lo > bin_lo(j, w) ? lo : bin_lo(j, w);
        double b = hi < bin_hi(j, w) ? hi : bin_hi(j, w);
        if (b > a) {
            dst[j] += m * ((b - a) / len);
        }
        if (bin_hi(j, w) >= hi) {
            break;
        }
    }
}

int dqctl_dq_map(const struct dq *a, double factor, double offset, int k, int n, struct dq **out) {
    if (!out || !a || !a->pdf) {
        return dq_fail(DQ_EINVAL, "missing operand or output pointer");
    }
    if (!isfinite(factor) || factor < 0.0 || !isfinite(offset)) {
        return dq_fail(DQ_EINVAL, "a transformation needs a finite factor ≥ 0 and a finite offset");
    }
    int rc = dq_check_grid(k, n);
    if (rc) {
        return rc;
    }
    double *dst = calloc((size_t)n, sizeof *dst);
    if (!dst) {
        return dq_fail(DQ_ENOMEM, "no memory for %d bins", n);
    }
    double w = dq_width_of(k);
    int on_edges = a->atoms; /* point masses that all land on edges stay point masses */
    double zero = 0.0;       /* mass mapped to delay 0: the result's atom at 0 */
    for (int i = 0; i < a->n; i++) {
        double m = a->pdf[i];
        if (i == 0 && a->zero > 0.0) {
            /* the atom at 0 goes to f(0) */
            double t = offset > 0.0 ? offset : 0.0;
            on_edges &= add_point(dst, n, w, a->zero, t);
            zero += t <= 0.0 ? a->zero : 0.0;
            m -= a->zero;
        }
        if (!(m > 0.0)) {
            continue;
        }
        if (a->atoms) {
            /* a point mass at the bin's right edge */
            double t = factor * bin_hi(i, a->width) + offset;
            t = t > 0.0 ? t : 0.0;
            on_edges &= add_point(dst, n, w, m, t);
            zero += t <= 0.0 ? m : 0.0;
            continue;
        }
        double lo = factor * bin_lo(i, a->width) + offset;
        double hi = factor * bin_hi(i, a->width) + offset;
        if (hi <= 0.0) {
            dst[0] += m; /* all of it before 0: at 0 */
            zero += m;
            continue;
        }
        if (lo < 0.0) {
            double at0 = m * (-lo / (hi - lo));
            dst[0] += at0;
            zero += at0;
            m -= at0;
            lo = 0.0;
        }
        if (hi - lo <= 1e-12 * w) {
            add_point(dst, n, w, m, lo);
            zero += lo <= 0.0 ? m : 0.0;
        } else {
            add_spread(dst, n, w, m, lo, hi);
        }
    }
    rc = dq_from_pdf(k, n, dst, out);
    free(dst);
    if (rc == DQ_OK) {
        /* lost stays lost: what a had failed is still failed, the rest is past the horizon */
        double lost = dq_lost(*out);
        (*out)->failed = a->failed < lost ? a->failed : lost;
        (*out)->atoms = on_edges;
        (*out)->zero = zero < (*out)->pdf[0] ? zero : (*out)->pdf[0];
    }
    return rc;
}

/* The finest grid of DQ_MAX_BINS bins whose horizon covers b (the widest when none does). */
static void cover_grid(double b, int *k, int *n) {
    *n = DQ_MAX_BINS;
    *k = DQ_MIN_K;
    while (*k < DQ_MAX_K && dq_width_of(*k) * DQ_MAX_BINS < b * (1.0 - 1e-12)) {
        (*k)++;
    }
}

int dqctl_dist_build(const struct dqctl_dist *d, int k, int n, struct dq **out, char *err,
                     size_t err_cap) {
    int rc = DQ_OK;
    switch (d->kind) {
    case DQCTL_DIST_WAIT:
        rc = dq_wait(k, n, d->a, out);
        break;
    case DQCTL_DIST_UNIFORM:
        rc = dq_uniform(k, n, d->a, d->b, out);
        break;
    case DQCTL_DIST_EXPONENTIAL:
        rc = dq_exponential(k, n, d->a, out);
        break;
    case DQCTL_DIST_NEVER:
        rc = dq_never(k, n, out);
        break;
    case DQCTL_DIST_SAMPLES:
        rc = dq_from_samples(k, n, d->durations, d->count, d->n_failed, d->n_timeout, out);
        break;
    case DQCTL_DIST_PROBE:
    case DQCTL_DIST_CALCULATED:
    case DQCTL_DIST_SNAPSHOT:
        if (!d->measured) {
            return dqctl_set_err(err, err_cap, "the ΔQ of %s was not fetched", d->name);
        }
        rc = dq_reexpress(d->measured, k, n, out);
        break;
    case DQCTL_DIST_SCALE:
    case DQCTL_DIST_SHIFT: {
        struct dq *own = NULL;
        const struct dq *src = d->inner->measured;
        if (!dqctl_dist_is_measured(d->inner)) {
            int ks, ns;
            cover_grid(dqctl_dist_bound(d->inner), &ks, &ns);
            if (dqctl_dist_build(d->inner, ks, ns, &own, err, err_cap) < 0) {
                return -1;
            }
            src = own;
        }
        if (!src) {
            return dqctl_set_err(err, err_cap, "the ΔQ of %s was not fetched", d->inner->name);
        }
        if (d->kind == DQCTL_DIST_SCALE) {
            rc = dqctl_dq_map(src, d->a, 0.0, k, n, out);
        } else {
            rc = dqctl_dq_map(src, 1.0, d->a, k, n, out);
        }
        dq_destroy(own);
        break;
    }
    }
    if (rc) {
        return dqctl_set_err(err, err_cap, "%s", dq_last_error());
    }
    return 0;
}

/* ---- dqd's ΔQ objects ---------------------------------------------------------------------- */

int dqctl_dq_from_json(const json_t *obj, struct dq **out, char *err, size_t err_cap) {
    const json_t *jw = json_object_get(obj, "bin_width");
    const json_t *jn = json_object_get(obj, "bins");
    if (!json_is_object(obj) || !json_is_number(jw) || !json_is_number(jn)) {
        return dqctl_set_err(err, err_cap, "a ΔQ without bin_width and bins");
    }
    double w = json_number_value(jw), bins = json_number_value(jn);
    int k = DQ_MIN_K;
    while (k <= DQ_MAX_K && !(fabs(dq_width_of(k) - w) <= 1e-9 * dq_width_of(k))) {
        k++;
    }
    if (k > DQ_MAX_K) {
        return dqctl_set_err(err, err_cap,
                             "a ΔQ with bin width %g s, not 0.001 s times a power of two", w);
    }
    if (!(bins >= DQ_MIN_BINS && bins <= DQ_MAX_BINS) || bins != floor(bins)) {
        return dqctl_set_err(err, err_cap, "a ΔQ with %g bins (1 … %d)", bins, DQ_MAX_BINS);
    }
    int n = (int)bins;
    const json_t *pdf = json_object_get(obj, "pdf");
    const json_t *cdf = json_object_get(obj, "cdf");
    const json_t *arr = json_is_array(pdf) ? pdf : cdf;
    if (!json_is_array(arr) || json_array_size(arr) != (size_t)n) {
        return dqctl_set_err(err, err_cap, "a ΔQ of %d bins whose pdf (or cdf) is not %d numbers",
                             n, n);
    }
    double *m = malloc((size_t)n * sizeof *m);
    if (!m) {
        return dqctl_set_err(err, err_cap, "out of memory");
    }
    double prev = 0.0;
    for (int i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, (size_t)i);
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(x) || x < 0.0 || x > 1.0 + DQ_EPS) {
            free(m);
            return dqctl_set_err(err, err_cap, "a ΔQ whose %s[%d] is not a mass in [0, 1]",
                                 arr == pdf ? "pdf" : "cdf", i);
        }
        if (arr == pdf) {
            m[i] = x;
        } else {
            m[i] = x > prev ? x - prev : 0.0; /* a CDF rounded on the way may dip by 1e-15 */
            prev = x > prev ? x : prev;
        }
    }
    int rc = dq_from_pdf(k, n, m, out);
    free(m);
    if (rc) {
        return dqctl_set_err(err, err_cap, "a ΔQ dqd sent is not valid: %s", dq_last_error());
    }
    /* a calculated ΔQ's lower bound reads `lag` bins earlier (docs/engine.md) */
    const json_t *lag = json_object_get(obj, "lag");
    if (json_is_integer(lag) && json_integer_value(lag) > 0 && json_integer_value(lag) < n) {
        (*out)->lag = (int)json_integer_value(lag);
    }
    return 0;
}

const json_t *dqctl_snapshot_pick(const json_t *snap, const char *probe, int before, char *err,
                                  size_t err_cap) {
    const json_t *dqs = json_object_get(snap, "dqs");
    const json_t *jt = json_object_get(snap, "time");
    const json_t *jid = json_object_get(snap, "id");
    long long id = json_is_integer(jid) ? (long long)json_integer_value(jid) : 0;
    if (!json_is_array(dqs) || !json_is_number(jt)) {
        dqctl_set_err(err, err_cap, "the answer for snapshot %lld has no time and dqs list", id);
        return NULL;
    }
    double t = json_number_value(jt);
    const json_t *best = NULL;
    double best_start = -INFINITY;
    int any = 0;
    char others[256];
    struct dq_strbuf ob;
    dq_strbuf_init(&ob, others, sizeof others);
    size_t i;
    const json_t *e;
    json_array_foreach(dqs, i, e) {
        const char *p = jstr(e, "probe", NULL);
        const char *kind = jstr(e, "kind", NULL);
        if (!p || !kind || strcmp(kind, "observed") != 0) {
            continue;
        }
        if (strcmp(p, probe) != 0) {
            /* the probes it does hold, each once, for the message */
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++) {
                const char *q = jstr(json_array_get(dqs, j), "probe", NULL);
                seen = q && strcmp(q, p) == 0;
            }
            if (!seen) {
                dq_strbuf_printf(&ob, "%s%s", ob.len ? ", " : "", p);
            }
            continue;
        }
        any = 1;
        double start = json_number_value(json_object_get(e, "start"));
        double end = json_number_value(json_object_get(e, "end"));
        int side_ok = before ? end <= t + TIME_EPS : start >= t - TIME_EPS;
        if (side_ok && start > best_start) {
            best = e;
            best_start = start;
        }
    }
    if (best) {
        return best;
    }
    if (!any) {
        dqctl_set_err(err, err_cap, "snapshot %lld holds no observed ΔQ of probe %s (%s%s)", id,
                      probe, ob.len ? "it holds: " : "it holds none", others);
        return NULL;
    }
    int complete = json_is_true(json_object_get(snap, "complete"));
    dqctl_set_err(err, err_cap, "snapshot %lld has no observed ΔQ of %s %s its firing%s; try %s",
                  id, probe, before ? "before" : "after",
                  before || complete ? "" : " yet (it is still collecting the windows after it)",
                  before ? "snapshot:ID:NAME:after" : "snapshot:ID:NAME:before");
    return NULL;
}
