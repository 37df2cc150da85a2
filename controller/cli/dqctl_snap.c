/*
 * dqctl_snap.c: what dqctl prints of the snapshots triggers stored and of the triggers
 * themselves, and the body of `dqctl trigger` (declared in dqctl_log.h; the subcommands
 * are in dqctl_log.c). Pure: each renderer reads the JSON it is given, tolerates missing
 * fields, and writes to the stream given.
 */
#include "dqctl_log.h"
#include "dqctl_json.h"
#include "dqctl_set_err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqctl_api.h"

/* ---- snapshots ---------------------------------------------------------------------- */

void dqctl_render_snapshots(FILE *out, const json_t *list) {
    int wp = dqctl_column_width(list, "probe", 5, 40);
    /* "ΔQS" is one column wider in bytes than on screen (Δ is two bytes of UTF-8) */
    fprintf(out, "%5s  %-23s  %-*s %8s %6s %7s %10s  %s\n", "ID", "TIME (UTC)", wp, "PROBE",
            "TRIGGER", "INV", "WINDOWS", "ΔQS", "REASON");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *s = json_array_get(list, i);
        char when[40], trig[24] = "-", inv[24] = "-", dqs[32];
        dqctl_format_time(jnum(s, "time"), when, sizeof when);
        if (jint(s, "trigger", 0)) {
            snprintf(trig, sizeof trig, "#%lld", jint(s, "trigger", 0));
        }
        if (jint(s, "investigation", 0)) {
            snprintf(inv, sizeof inv, "%lld", jint(s, "investigation", 0));
        }
        snprintf(dqs, sizeof dqs, "%lld%s", jint(s, "dq_count", 0),
                 json_is_true(json_object_get(s, "complete")) ? "" : " (+)");
        fprintf(out, "%5lld  %-23s  %-*.*s %8s %6s %7lld %9s  %s\n", jint(s, "id", 0), when, wp, wp,
                jstr(s, "probe", "?"), trig, inv, jint(s, "windows", 0), dqs,
                jstr(s, "reason", "-"));
    }
}

/* A snapshot ΔQ entry has a pdf; other objects in "dqs" are skipped. */
static int is_dq_entry(const json_t *e) {
    return json_is_array(json_object_get(e, "pdf")) && jnum(e, "bin_width") > 0;
}

/* Moments and quantiles of one pdf on its grid. */
struct pdf_summary {
    double mass, mean, q[4];
};

static const double summary_p[4] = {0.5, 0.9, 0.95, 0.99};

static void pdf_summarize(const json_t *e, struct pdf_summary *s) {
    const json_t *pdf = json_object_get(e, "pdf");
    double w = jnum(e, "bin_width");
    double acc = 0, first = 0;
    for (int k = 0; k < 4; k++) {
        s->q[k] = NAN;
    }
    for (size_t i = 0; i < json_array_size(pdf); i++) {
        double m = json_number_value(json_array_get(pdf, i));
        double t = (double)(i + 1) * w; /* the right edge of bin i: P(delay ≤ t) = acc */
        acc += m;
        first += m * (t - 0.5 * w); /* the bin's mass at its middle */
        for (int k = 0; k < 4; k++) {
            if (isnan(s->q[k]) && acc >= summary_p[k] - 1e-12) {
                s->q[k] = t;
            }
        }
    }
    s->mass = acc;
    s->mean = acc > 0 ? first / acc : NAN;
}

void dqctl_render_snapshot(FILE *out, const json_t *snap) {
    char when[40];
    dqctl_format_time(jnum(snap, "time"), when, sizeof when);
    fprintf(out, "snapshot %lld of %s at %s UTC: %s", jint(snap, "id", 0), jstr(snap, "probe", "?"),
            when, jstr(snap, "reason", "no reason recorded"));
    if (jint(snap, "trigger", 0)) {
        fprintf(out, " (trigger #%lld", jint(snap, "trigger", 0));
        if (jint(snap, "investigation", 0)) {
            fprintf(out, ", investigation %lld", jint(snap, "investigation", 0));
        }
        fprintf(out, ")");
    }
    fprintf(out, "\n%lld windows before and after, %s\n", jint(snap, "windows", 0),
            json_is_true(json_object_get(snap, "complete"))
                ? "complete"
                : "still collecting the windows after the firing");
    const json_t *dqs = json_object_get(snap, "dqs");
    int wp = dqctl_column_width(dqs, "probe", 5, 40);
    fprintf(out, "%-*s %-10s  %-23s %8s %7s %9s %9s %9s %9s %9s\n", wp, "PROBE", "KIND",
            "WINDOW START (UTC)", "LENGTH", "LOST", "MEAN", "P50", "P90", "P95", "P99");
    for (size_t i = 0; i < json_array_size(dqs); i++) {
        const json_t *e = json_array_get(dqs, i);
        if (!is_dq_entry(e)) {
            continue;
        }
        struct pdf_summary s;
        pdf_summarize(e, &s);
        char start[40], len[24], lost[24], mean[24], q[4][24];
        dqctl_format_time(jnum(e, "start"), start, sizeof start);
        dqctl_format_duration(jnum(e, "end") - jnum(e, "start"), len, sizeof len);
        double l = jnum(e, "lost");
        dqctl_format_percent(isnan(l) ? 1.0 - s.mass : l, lost, sizeof lost);
        dqctl_format_duration(s.mean, mean, sizeof mean);
        for (int k = 0; k < 4; k++) {
            dqctl_format_duration(s.q[k], q[k], sizeof q[k]);
        }
        fprintf(out, "%-*.*s %-10s  %-23s %*s %7s %*s %*s %*s %*s %*s\n", wp, wp,
                jstr(e, "probe", "?"), jstr(e, "kind", "?"), start, dqctl_cols(len, 8), len, lost,
                dqctl_cols(mean, 9), mean, dqctl_cols(q[0], 9), q[0], dqctl_cols(q[1], 9), q[1],
                dqctl_cols(q[2], 9), q[2], dqctl_cols(q[3], 9), q[3]);
    }
}

/* A CSV field: quoted (with doubled quotes) when it holds a comma, quote or line break. */
static void csv_field(FILE *out, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') {
            fputc('"', out);
        }
        fputc(*s, out);
    }
    fputc('"', out);
}

void dqctl_render_snapshot_csv(FILE *out, const json_t *snap) {
    fprintf(out, "probe,kind,window_start,window_end,bin,time_s,pdf,cdf\n");
    const json_t *dqs = json_object_get(snap, "dqs");
    for (size_t i = 0; i < json_array_size(dqs); i++) {
        const json_t *e = json_array_get(dqs, i);
        if (!is_dq_entry(e)) {
            continue;
        }
        const json_t *pdf = json_object_get(e, "pdf");
        double w = jnum(e, "bin_width"), acc = 0;
        for (size_t b = 0; b < json_array_size(pdf); b++) {
            double m = json_number_value(json_array_get(pdf, b));
            acc += m;
            csv_field(out, jstr(e, "probe", ""));
            fputc(',', out);
            csv_field(out, jstr(e, "kind", ""));
            fprintf(out, ",%.6f,%.6f,%zu,%.9g,%.9g,%.9g\n", jnum(e, "start"), jnum(e, "end"), b,
                    (double)(b + 1) * w, m, acc);
        }
    }
}

/* ---- triggers ------------------------------------------------------------------------- */

static const char *const trigger_kinds[] = {"qta", "load", "lost", "divergence", "cv"};

int dqctl_trigger_kind_known(const char *k) {
    for (size_t i = 0; i < sizeof trigger_kinds / sizeof trigger_kinds[0]; i++) {
        if (strcmp(k, trigger_kinds[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The threshold in the kind's words: "> 5% lost", "> 1000 instances/window". */
static void format_threshold(const json_t *t, char *buf, size_t cap) {
    const char *kind = jstr(t, "kind", "?");
    double th = jnum(t, "threshold");
    if (isnan(th)) {
        snprintf(buf, cap, "default");
    } else if (strcmp(kind, "lost") == 0) {
        snprintf(buf, cap, "lost > %g%%", th * 100);
    } else if (strcmp(kind, "load") == 0) {
        snprintf(buf, cap, "n > %g/window", th);
    } else if (strcmp(kind, "qta") == 0) {
        snprintf(buf, cap, "hazard > %g", th);
    } else if (strcmp(kind, "divergence") == 0) {
        snprintf(buf, cap, "KS D > %g", th);
    } else if (strcmp(kind, "cv") == 0) {
        snprintf(buf, cap, "sd/mean > %g", th);
    } else {
        snprintf(buf, cap, "%g", th);
    }
}

int dqctl_render_triggers(FILE *out, const json_t *list) {
    int wp = dqctl_column_width(list, "probe", 5, 40), fired = 0;
    fprintf(out, "%-*s %-10s %-20s %4s %5s  %-8s %s\n", wp, "PROBE", "KIND", "THRESHOLD", "FIRE",
            "CLEAR", "ENABLED", "STATE");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        char th[64], state[96];
        format_threshold(t, th, sizeof th);
        int enabled = json_is_true(json_object_get(t, "enabled"));
        if (json_is_true(json_object_get(t, "fired"))) {
            char when[40];
            dqctl_format_time(jnum(t, "fired_at"), when, sizeof when);
            snprintf(state, sizeof state, "FIRED at %s (%lld bad windows in a row)", when,
                     jint(t, "bad", 0));
            fired += enabled;
        } else {
            snprintf(state, sizeof state, "quiet (%lld good, %lld bad windows in a row)",
                     jint(t, "good", 0), jint(t, "bad", 0));
        }
        fprintf(out, "%-*.*s %-10s %-20s %4lld %5lld  %-8s %s\n", wp, wp, jstr(t, "probe", "?"),
                jstr(t, "kind", "?"), th, jint(t, "fire_after", 0), jint(t, "clear_after", 0),
                enabled ? "yes" : "no", state);
    }
    return fired;
}

/* A threshold: a plain decimal ≥ 0, with an optional % (divided by 100). */
static int parse_threshold(const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    if (!((*s >= '0' && *s <= '9') || *s == '.')) {
        return -1; /* no sign, no "inf"/"nan" */
    }
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v)) {
        return -1;
    }
    if (strcmp(end, "%") == 0) {
        v /= 100.0;
    } else if (*end) {
        return -1;
    }
    *out = v;
    return 0;
}

json_t *dqctl_trigger_body(const json_t *current, const char *threshold, const char *fire_after,
                           const char *clear_after, int disable, char *err, size_t err_cap) {
    json_t *body = json_object();
    if (!body) {
        dqctl_set_err(err, err_cap, "out of memory");
        return NULL;
    }
    /* what is not given keeps its current value (the API would reset it to the default) */
    static const char *const keep[] = {"threshold", "fire_after", "clear_after"};
    for (size_t i = 0; current && i < sizeof keep / sizeof keep[0]; i++) {
        const json_t *v = json_object_get(current, keep[i]);
        if (v && (json_is_number(v) || json_is_null(v))) {
            json_object_set(body, keep[i], (json_t *)v);
        }
    }
    if (threshold) {
        double th;
        if (strcmp(threshold, "default") == 0) {
            json_object_set_new(body, "threshold", json_null());
        } else if (parse_threshold(threshold, &th) == 0) {
            json_object_set_new(body, "threshold", json_real(th));
        } else {
            json_decref(body);
            dqctl_set_err(
                err, err_cap,
                "--threshold must be a number >= 0 (5%% = 0.05) or \"default\", not \"%s\"",
                threshold);
            return NULL;
        }
    }
    const char *counts[2] = {fire_after, clear_after};
    const char *names[2] = {"fire_after", "clear_after"};
    for (int i = 0; i < 2; i++) {
        long v;
        if (!counts[i]) {
            continue;
        }
        if (dqctl_parse_int(counts[i], 1, 1000, &v) < 0) {
            json_decref(body);
            dqctl_set_err(err, err_cap,
                          "--%s must be a whole number of windows from 1 to 1000, not \"%s\"",
                          i == 0 ? "fire-after" : "clear-after", counts[i]);
            return NULL;
        }
        json_object_set_new(body, names[i], json_integer(v));
    }
    json_object_set_new(body, "enabled", json_boolean(!disable));
    return body;
}
