/*
 * dqctl_render.c: what dqctl prints for people from the API's answers (declared in
 * dqctl_api.h): durations and times, the escaping of what a wrapper named, the QTA check
 * of a ΔQ answer, and the renderers of status, probes, a ΔQ (table, CSV, CDF plot) and
 * what a probe change did on every wrapper link. Pure: each writes to the stream given.
 */
#include "dqctl_api.h"
#include "dqctl_json.h"
#include "dqctl_set_err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq.h"
#include "dq_strbuf.h"

#define PROBE_TEXT 1100 /* a name from the wire, each byte escaped at worst to \xNN */

void dqctl_format_duration(double s, char *buf, size_t cap) {
    dq_format_duration(s, buf, cap);
}

int dqctl_column_width(const json_t *list, const char *key, int min, int max) {
    int width = min;
    for (size_t i = 0; i < json_array_size(list); i++) {
        int n = (int)strlen(jstr(json_array_get(list, i), key, "?"));
        width = n > width ? n : width;
    }
    return width > max ? max : width;
}

void dqctl_format_percent(double f, char *buf, size_t cap) {
    if (isnan(f)) {
        snprintf(buf, cap, "-");
    } else {
        snprintf(buf, cap, "%.2f%%", f * 100);
    }
}

int dqctl_cols(const char *s, int width) {
    int extra = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        extra += (*c & 0xc0) == 0x80;
    }
    return width < 0 ? width - extra : width + extra;
}

/* Compact form for QTA points: 250ms, 1.5s. */
static void format_compact(double s, char *buf, size_t cap) {
    if (s < 1e-3) {
        snprintf(buf, cap, "%.6g\xc2\xb5s", s * 1e6);
    } else if (s < 1.0) {
        snprintf(buf, cap, "%.6gms", s * 1e3);
    } else {
        snprintf(buf, cap, "%.6gs", s);
    }
}

/* ---- reading JSON answers ---------------------------------------------------------------- */

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

void dqctl_format_qta(const json_t *qta, char *buf, size_t cap) {
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    const json_t *pts = json_object_get(qta, "points");
    for (size_t i = 0; i < json_array_size(pts); i++) {
        const json_t *pt = json_array_get(pts, i);
        char tb[32];
        format_compact(json_number_value(json_array_get(pt, 1)), tb, sizeof tb);
        dq_strbuf_printf(&b, "%s%g@%s", i ? " " : "", json_number_value(json_array_get(pt, 0)), tb);
    }
    double ml = jnum(qta, "max_lost");
    if (!isnan(ml)) {
        dq_strbuf_printf(&b, ", max lost %g%%", ml * 100);
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
    int width = dqctl_column_width(probes, "name", 4, 40);
    fprintf(out, "%-*s %-6s %9s %5s %8s %9s %9s %9s %7s  %-18s %s\n", width, "NAME", "STATE",
            "DMAX", "BINS", "N", "P50", "P95", "P99", "LOST", "LAST WINDOW", "QTA");
    for (size_t i = 0; i < json_array_size(probes); i++) {
        const json_t *p = json_array_get(probes, i);
        const json_t *lw = json_object_get(p, "last_window");
        char dmax[24], n[24] = "-", p50[24] = "-", p95[24] = "-", p99[24] = "-", lost[24] = "-";
        char last[64] = "-";
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
            /* how old the numbers are; a disabled or silent probe's are not its present */
            double age = jnum(lw, "age_s");
            if (!isnan(age)) {
                char a[DQ_DURATION_TEXT];
                dqctl_format_duration(age, a, sizeof a);
                snprintf(last, sizeof last, "%s%s ago",
                         json_is_true(json_object_get(lw, "stale")) ? "STALE, " : "", a);
            }
        }
        char qta[256] = "-";
        const json_t *q = json_object_get(p, "qta");
        if (json_is_object(q)) {
            dqctl_format_qta(q, qta, sizeof qta);
        }
        /* an enabled probe whose source went away is "silent", not just "on" */
        int on = json_is_true(json_object_get(p, "enabled"));
        int silent = on && json_is_number(json_object_get(p, "silent_since_ns"));
        fprintf(out, "%-*.*s %-6s %*s %5.0f %8s %*s %*s %*s %7s  %*s %s\n", width, width,
                jstr(p, "name", "?"), silent ? "silent" : (on ? "on" : "off"), dqctl_cols(dmax, 9),
                dmax, jnum(p, "bins"), n, dqctl_cols(p50, 9), p50, dqctl_cols(p95, 9), p95,
                dqctl_cols(p99, 9), p99, lost, dqctl_cols(last, -18), last, qta);
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
        dqctl_format_qta(qta, q, sizeof q);
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
            char links[2048];
            struct dq_strbuf lb;
            dq_strbuf_init(&lb, links, sizeof links);
            size_t n = 0;
            for (size_t i = first; i < n_cmds; i++) {
                const json_t *c = json_array_get(commands, i);
                if (strcmp(jstr(c, "status", ""), kinds[k].status) != 0 ||
                    strcmp(jstr(c, "detail", ""), detail) != 0) {
                    continue;
                }
                char one[PROBE_TEXT];
                dqctl_escape(jstr(c, "link", "?"), one, sizeof one);
                dq_strbuf_printf(&lb, "%s%s", n ? ", " : "", one);
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
