/*
 * api_history.c: what the dashboard reads from the store beyond the ring (docs/api.md):
 * a probe's windows over a time range, downsampled to at most API_POINTS bins; the ΔQ over
 * time as heatmap columns; its exemplars; the marks of a time range (events, investigations
 * and their steps) with a sentence each.
 */
#include "api_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "dq_strbuf.h"
#include "wire.h"

#define API_POINTS 1000        /* bins a range is downsampled to, at most */
#define API_EXEMPLARS_MAX 1000 /* exemplars one answer lists, at most */
#define API_MARKS_MAX 5000     /* marks one answer lists, at most */
#define API_HOUR_NS (3600 * INT64_C(1000000000))

/* ---- ranges -------------------------------------------------------------------------------- */

/* A time range of a request: from, to (ns) and the bin width (a whole number of windows). */
struct range {
    int64_t from, to, step;
    int downsampled; /* step is more than one window */
};

/* A number of seconds from the query: 1 with *out set, 0 when absent, −1 when malformed. */
static int query_seconds(const struct http_request *req, const char *name, double *out) {
    const char *v = http_request_query(req, name);
    if (!v) {
        return 0;
    }
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || !end || *end || errno || !isfinite(x)) {
        return -1;
    }
    *out = x;
    return 1;
}

/*
 * The range of ?from=&to=&step= (Unix seconds; to defaults to now, from to `before` ns
 * before to): 1, or 0 with a 400 in res. The step is raised to a whole number of windows
 * and to what keeps the range within API_POINTS bins.
 */
static int parse_range(struct api *api, const struct http_request *req, int64_t before,
                       struct range *r, struct http_response *res) {
    int64_t window = core_window_ns(api->env.core);
    double from_s = 0, to_s = 0, step_s = 0;
    int has_from = query_seconds(req, "from", &from_s);
    int has_to = query_seconds(req, "to", &to_s);
    int has_step = query_seconds(req, "step", &step_s);
    if (has_from < 0 || has_to < 0 || has_step < 0) {
        http_reply_error(res, 400, "bad_data",
                         "from, to and step are numbers of seconds (from and to since the "
                         "epoch, like the windows' start and end)");
        return 0;
    }
    r->to = has_to ? (int64_t)llround(to_s * 1e9) : clock_now(core_clock(api->env.core));
    r->from = has_from ? (int64_t)llround(from_s * 1e9) : r->to - before;
    if (!(r->from < r->to) || from_s < 0 || to_s < 0) {
        http_reply_error(res, 400, "bad_data",
                         "the range is empty: from (%.3f) must be before to (%.3f), both ≥ 0",
                         (double)r->from * 1e-9, (double)r->to * 1e-9);
        return 0;
    }
    if (has_step && !(step_s > 0)) {
        http_reply_error(res, 400, "bad_data", "step must be a positive number of seconds");
        return 0;
    }
    /* whole windows, and at most API_POINTS of them */
    int64_t span = r->to - r->from;
    int64_t min_windows =
        (span + (int64_t)API_POINTS * window - 1) / ((int64_t)API_POINTS * window);
    int64_t want = has_step ? (int64_t)ceil(step_s * 1e9 / (double)window) : 1;
    int64_t windows = want > min_windows ? want : min_windows;
    r->step = (windows < 1 ? 1 : windows) * window;
    r->downsampled = r->step > window;
    /* bins start at window boundaries, so that a bin holds whole windows */
    r->from = probes_window_of(core_probes(api->env.core), r->from) * window;
    return 1;
}

static json_t *range_json(const struct range *r) {
    return json_pack("{s:f,s:f,s:f,s:b}", "from", (double)r->from * 1e-9, "to",
                     (double)r->to * 1e-9, "step", (double)r->step * 1e-9, "downsampled",
                     r->downsampled);
}

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* ---- windows --------------------------------------------------------------------------------- */

static int window_bin(void *ctx, const struct store_window *w, int windows) {
    json_t *a = ctx;
    json_array_append_new(a, json_pack("{s:f,s:f,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:i}", "start",
                                       (double)w->start_ns * 1e-9, "end", (double)w->end_ns * 1e-9,
                                       "n", (json_int_t)w->n, "ok", (json_int_t)w->n_ok, "fa",
                                       (json_int_t)w->n_fa, "to", (json_int_t)w->n_to, "mean",
                                       num(w->mean), "p50", num(w->p50), "p95", num(w->p95), "p99",
                                       num(w->p99), "lost", num(w->lost), "windows", windows));
    return 0;
}

void api__windows_range(struct api *api, struct probe *p, const struct api_call *call,
                        struct http_response *res) {
    struct range r;
    if (!parse_range(api, call->req, API_HOUR_NS, &r, res)) {
        return;
    }
    json_t *a = json_array();
    int rc = store_windows_binned(api->env.store, p->name, STORE_OBSERVED, r.from, r.to, r.step,
                                  window_bin, a);
    if (rc) {
        json_decref(a);
        http_reply_error(res, 503, "unavailable", "reading %s's windows: %s", p->name,
                         dq_last_error());
        return;
    }
    json_t *data = range_json(&r);
    json_object_set_new(data, "probe", json_string(p->name));
    json_object_set_new(data, "window_s", json_real((double)core_window_ns(api->env.core) * 1e-9));
    json_object_set_new(data, "windows", a);
    http_reply_data(res, data);
}

/* ---- the heatmap --------------------------------------------------------------------------- */

/*
 * Columns of counts on one grid: bins of 2^k ms, `bins` of them (≤ STORE_DQ_MAX_BINS). A row
 * on a finer grid is merged into it; one on a coarser grid, or reaching further, coarsens
 * every column first (merging pairs of bins: exact, the widths being powers of two).
 */
struct heat {
    const struct range *r;
    int ncols;
    int k, bins; /* the grid so far; bins 0 before the first row */
    uint64_t (*counts)[STORE_DQ_MAX_BINS];
    uint64_t *n;
    double *lost_n; /* Σ lost·n, for the column's lost fraction */
    int *windows;
};

static void heat_coarsen(struct heat *h) {
    for (int c = 0; c < h->ncols; c++) {
        for (int b = 0; b < h->bins; b++) {
            uint64_t v = h->counts[c][b];
            h->counts[c][b] = 0;
            h->counts[c][b / 2] += v;
        }
    }
    h->k++;
    h->bins = (h->bins + 1) / 2;
}

static int heat_row(void *ctx, const struct store_window_dq *d) {
    struct heat *h = ctx;
    int64_t col = (d->start_ns - h->r->from) / h->r->step;
    if (col < 0 || col >= h->ncols) {
        return 0;
    }
    if (h->bins == 0) {
        h->k = d->k;
        h->bins = 1;
    }
    while (h->k < d->k) {
        heat_coarsen(h);
    }
    /* how far the row's mass reaches, in bins of the grid (h->k ≥ d->k now): the columns
     * cover what was observed, not each window's horizon */
    int last = d->bins - 1;
    while (last > 0 && d->counts[last] == 0) {
        last--;
    }
    int64_t reach = ((int64_t)last >> (h->k - d->k)) + 1;
    while (reach > STORE_DQ_MAX_BINS) {
        heat_coarsen(h);
        reach = ((int64_t)last >> (h->k - d->k)) + 1;
    }
    if (reach > h->bins) {
        h->bins = (int)reach;
    }
    int shift = h->k - d->k;
    for (int b = 0; b < d->bins; b++) {
        if (d->counts[b]) {
            h->counts[col][b >> shift] += d->counts[b];
        }
    }
    h->n[col] += d->n;
    h->lost_n[col] += (isfinite(d->lost) ? d->lost : 0.0) * (double)d->n;
    h->windows[col]++;
    return 0;
}

static json_t *heat_json(const struct heat *h) {
    json_t *cols = json_array();
    for (int c = 0; c < h->ncols; c++) {
        if (!h->windows[c]) {
            continue;
        }
        json_t *counts = json_object();
        for (int b = 0; b < h->bins; b++) {
            if (h->counts[c][b]) {
                char key[16];
                snprintf(key, sizeof key, "%d", b);
                json_object_set_new(counts, key, json_integer((json_int_t)h->counts[c][b]));
            }
        }
        int64_t start = h->r->from + c * h->r->step;
        json_array_append_new(
            cols, json_pack("{s:f,s:f,s:I,s:f,s:i,s:o}", "start", (double)start * 1e-9, "end",
                            (double)(start + h->r->step) * 1e-9, "n", (json_int_t)h->n[c], "lost",
                            h->n[c] ? h->lost_n[c] / (double)h->n[c] : 0.0, "windows",
                            h->windows[c], "counts", counts));
    }
    return cols;
}

void api__get_probe_heatmap(struct api *api, const struct api_call *call,
                            struct http_response *res) {
    struct probe *p = probes_find(core_probes(api->env.core), call->probe, strlen(call->probe));
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", call->probe);
        return;
    }
    struct range r;
    if (!parse_range(api, call->req, API_HOUR_NS, &r, res)) {
        return;
    }
    struct heat h = {.r = &r, .ncols = (int)((r.to - r.from + r.step - 1) / r.step)};
    h.counts = calloc((size_t)h.ncols, sizeof h.counts[0]);
    h.n = calloc((size_t)h.ncols, sizeof h.n[0]);
    h.lost_n = calloc((size_t)h.ncols, sizeof h.lost_n[0]);
    h.windows = calloc((size_t)h.ncols, sizeof h.windows[0]);
    int rc = h.counts && h.n && h.lost_n && h.windows
                 ? store_window_dqs_each(api->env.store, p->name, r.from, r.to, heat_row, &h)
                 : dq_fail(DQ_ENOMEM, "no memory for %d columns", h.ncols);
    if (rc) {
        http_reply_error(res, rc == DQ_ENOMEM ? 500 : 503, "unavailable", "reading %s's ΔQs: %s",
                         p->name, dq_last_error());
    } else {
        json_t *data = range_json(&r);
        json_object_set_new(data, "probe", json_string(p->name));
        json_object_set_new(data, "bin_width", json_real(dq_width_of(h.k)));
        json_object_set_new(data, "bins", json_integer(h.bins));
        json_object_set_new(data, "columns", heat_json(&h));
        http_reply_data(res, data);
    }
    free(h.counts);
    free(h.n);
    free(h.lost_n);
    free(h.windows);
}

/* ---- exemplars ------------------------------------------------------------------------------ */

struct ex_list {
    struct api *api;
    json_t *a;
};

/* trace_url with the trace id in place of {trace_id} (ids are hex: nothing to escape). */
/* s as a JSON string, null for none. Text a store row holds that is not valid UTF-8 (a
 * build before 3737433 cut an exemplar's node inside a character) is escaped (wire_escape)
 * rather than losing the whole exemplar. */
static json_t *text_or_null(const char *s) {
    if (!s) {
        return json_null();
    }
    json_t *j = json_string(s);
    if (!j) {
        char esc[1024];
        j = json_string(wire_escape(esc, sizeof esc, s, strlen(s)));
    }
    return j ? j : json_null();
}

static json_t *trace_link(const struct api *api, const char *trace) {
    const char *at = api->trace_url[0] && trace ? strstr(api->trace_url, "{trace_id}") : NULL;
    if (!at) {
        return json_null();
    }
    char url[sizeof api->trace_url + 2 * WIRE_MAX_ID];
    snprintf(url, sizeof url, "%.*s%s%s", (int)(at - api->trace_url), api->trace_url, trace,
             at + strlen("{trace_id}"));
    return text_or_null(url);
}

static int exemplar_json(void *ctx, const struct store_exemplar *e) {
    struct ex_list *l = ctx;
    json_error_t err;
    json_t *attrs = e->attrs_json ? json_loads(e->attrs_json, 0, &err) : NULL;
    json_t *o =
        json_pack("{s:f,s:i,s:s,s:f,s:f,s:o,s:o,s:o,s:o,s:o}", "window", (double)e->start_ns * 1e-9,
                  "rank", e->rank, "status", e->status, "duration", e->duration, "end",
                  (double)e->end_ns * 1e-9, "trace_id", text_or_null(e->trace_id), "instance_id",
                  text_or_null(e->instance_id), "node", text_or_null(e->node), "attrs",
                  attrs ? attrs : json_object(), "url", trace_link(l->api, e->trace_id));
    json_array_append_new(l->a, o);
    return 0;
}

/* The limit of ?limit= (default def, 1 … API_EXEMPLARS_MAX): 1, or 0 with a 400 in res. */
static int parse_limit(const struct http_request *req, int def, int max, int *out,
                       struct http_response *res) {
    const char *v = http_request_query(req, "limit");
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : def;
    if (v && (!*v || *end || n < 1 || n > max)) {
        http_reply_error(res, 400, "bad_data", "limit must be an integer in [1, %d]", max);
        return 0;
    }
    *out = (int)n;
    return 1;
}

/* GET /api/v1/probes/NAME/exemplars[?window=WID|latest][&from=&to=][&limit=] */
void api__get_probe_exemplars(struct api *api, const struct api_call *call,
                              struct http_response *res) {
    const struct http_request *req = call->req;
    struct probe *p = probes_find(core_probes(api->env.core), call->probe, strlen(call->probe));
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", call->probe);
        return;
    }
    int limit;
    if (!parse_limit(req, 100, API_EXEMPLARS_MAX, &limit, res)) {
        return;
    }
    int64_t window = core_window_ns(api->env.core);
    const char *win = http_request_query(req, "window");
    struct range r = {0};
    int rc = DQ_OK;
    if (win && (http_request_query(req, "from") || http_request_query(req, "to"))) {
        http_reply_error(res, 400, "bad_data", "give window or a range (from, to), not both");
        return;
    } else if (win && strcmp(win, "latest") != 0) {
        char *end = NULL;
        errno = 0;
        long long wid = strtoll(win, &end, 10);
        if (!*win || *end || errno || wid < 0 || wid > INT64_MAX / window - 1) {
            http_reply_error(res, 400, "bad_data",
                             "window must be latest or a window's wid (its start / the window "
                             "length, as GET …/windows lists them)");
            return;
        }
        r.from = (int64_t)wid * window;
        r.to = r.from + window;
        r.step = window;
    } else if (!win && (http_request_query(req, "from") || http_request_query(req, "to"))) {
        if (!parse_range(api, req, API_HOUR_NS, &r, res)) {
            return;
        }
    } else {
        int64_t start = 0;
        rc = store_exemplars_newest(api->env.store, p->name, &start);
        r.from = rc == DQ_OK ? start : 0;
        r.to = r.from + window;
        r.step = window;
    }
    json_t *a = json_array();
    struct ex_list l = {.api = api, .a = a};
    if (rc == DQ_OK) {
        rc = store_exemplars_each(api->env.store, p->name, r.from, r.to, 0, limit, exemplar_json,
                                  &l);
    }
    if (rc == DQ_OK) {
        rc = store_exemplars_each(api->env.store, p->name, r.from, r.to, 1, limit, exemplar_json,
                                  &l);
    }
    if (rc && rc != DQ_ENOTFOUND) {
        json_decref(a);
        http_reply_error(res, 503, "unavailable", "reading %s's exemplars: %s", p->name,
                         dq_last_error());
        return;
    }
    http_reply_data(res, json_pack("{s:s,s:f,s:f,s:o,s:o}", "probe", p->name, "from",
                                   (double)r.from * 1e-9, "to", (double)r.to * 1e-9, "trace_url",
                                   api->trace_url[0] ? json_string(api->trace_url) : json_null(),
                                   "exemplars", a));
}

/* ---- marks ---------------------------------------------------------------------------------- */

static const char *jstr(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double jnum(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The sentence of an adaptive loop's mark (an investigation's opening, step, verdict). */
static void loop_sentence(const struct store_mark *m, json_t *d, char *buf, size_t cap) {
    const char *probe = m->probe ? m->probe : "?";
    if (strcmp(m->kind, "investigation_opened") == 0) {
        const char *by = jstr(d, "requested_by");
        snprintf(buf, cap, "investigation %" PRId64 " opened at %s for a %s problem, by %s",
                 m->investigation, probe, jstr(d, "problem"),
                 strcmp(jstr(d, "origin"), "trigger") == 0 ? "a trigger"
                 : by[0]                                   ? by
                                                           : "a person");
    } else if (strcmp(m->kind, "verdict") == 0) {
        /* every culprit it names, with the share of the node's change each explains */
        char at[512];
        struct dq_strbuf b;
        dq_strbuf_init(&b, at, sizeof at);
        json_t *list = json_object_get(d, "culprits");
        size_t n = json_array_size(list);
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_array_get(list, i);
            const char *name = json_string_value(json_object_get(c, "probe"));
            double share = jnum(c, "share");
            dq_strbuf_printf(&b, "%s%s",
                             i == 0       ? ""
                             : i + 1 == n ? " and "
                                          : ", ",
                             name ? name : "?");
            if (n > 1 && isfinite(share)) {
                dq_strbuf_printf(&b, " (%.0f %%)", 100.0 * share);
            }
        }
        if (n == 0) {
            dq_strbuf_printf(&b, "%s", jstr(d, "verdict_node"));
        }
        snprintf(buf, cap, "investigation %" PRId64 ": verdict %s%s%s", m->investigation,
                 jstr(d, "verdict"), at[0] ? " at " : "", at);
    } else {
        char probes[256] = "";
        json_t *a = json_object_get(d, "probes");
        size_t i, len = 0;
        json_t *v;
        json_array_foreach(a, i, v) {
            int n = snprintf(probes + len, sizeof probes - len, "%s%s", i ? ", " : " [",
                             json_string_value(v) ? json_string_value(v) : "?");
            len = n > 0 && len + (size_t)n < sizeof probes ? len + (size_t)n : len;
        }
        if (len > 0 && len + 1 < sizeof probes) {
            probes[len] = ']';
            probes[len + 1] = '\0';
        }
        const char *reason = jstr(d, "reason");
        snprintf(buf, cap, "investigation %" PRId64 ", step %" PRId64 ": %s %s%s%s%s",
                 m->investigation, m->hypothesis, jstr(d, "action"), probe, probes,
                 reason[0] ? ": " : "", reason);
    }
}

/* The sentence of a mark, from its kind and detail. */
static void mark_sentence(const struct store_mark *m, json_t *d, char *buf, size_t cap) {
    const char *probe = m->probe ? m->probe : "?";
    char a[DQ_DURATION_TEXT], b[DQ_DURATION_TEXT];
    if (strcmp(m->kind, "trigger_fired") == 0 || strcmp(m->kind, "trigger_cleared") == 0) {
        snprintf(buf, cap, "trigger %s on %s %s", jstr(d, "kind"), probe,
                 strcmp(m->kind, "trigger_fired") == 0 ? "fired" : "cleared");
    } else if (strcmp(m->kind, "investigation_opened") == 0 || strcmp(m->kind, "verdict") == 0 ||
               strcmp(m->kind, "step") == 0) {
        loop_sentence(m, d, buf, cap);
    } else if (strcmp(m->kind, "probe_enabled") == 0) {
        dq_format_duration(jnum(d, "dmax_ms") / 1e3, a, sizeof a);
        snprintf(buf, cap, "%s enabled (dMax %s)%s", probe, a,
                 jnum(d, "hypothesis") > 0 ? " by the adaptive loop" : "");
    } else if (strcmp(m->kind, "probe_disabled") == 0) {
        snprintf(buf, cap, "%s disabled%s", probe,
                 jnum(d, "hypothesis") > 0 ? " by the adaptive loop" : "");
    } else if (strcmp(m->kind, "probe_dmax") == 0 || strcmp(m->kind, "auto_range") == 0) {
        int auto_range = m->kind[0] == 'a';
        dq_format_duration(jnum(d, "old_dmax_ms") / 1e3, a, sizeof a);
        dq_format_duration(jnum(d, auto_range ? "new_dmax_ms" : "dmax_ms") / 1e3, b, sizeof b);
        snprintf(buf, cap, "%s: dMax %s → %s%s%s%s", probe, a, b,
                 auto_range ? " (auto-range, " : "", auto_range ? jstr(d, "reason") : "",
                 auto_range ? ")" : "");
    } else if (strcmp(m->kind, "dqd_started") == 0) {
        /* the gap before it: since the previous run's stop, or its last record */
        double prev = jnum(d, "previous_ns");
        int gap = prev > 0 && (double)m->time_ns >= prev;
        if (gap) {
            dq_format_duration(((double)m->time_ns - prev) * 1e-9, a, sizeof a);
        }
        snprintf(buf, cap, "dqd%s%s started%s%s%s", jstr(d, "version")[0] ? " " : "",
                 jstr(d, "version"), gap ? ", not running for " : "", gap ? a : "",
                 gap && !json_is_true(json_object_get(d, "previous_clean")) ? " (no stop recorded)"
                                                                            : "");
    } else if (strcmp(m->kind, "dqd_stopped") == 0) {
        snprintf(buf, cap, "dqd stopped%s",
                 jnum(d, "partial_windows") > 0 ? ", its open windows kept as partial ones" : "");
    } else if (strcmp(m->kind, "probe_silent") == 0) {
        const char *node = jstr(d, "node");
        snprintf(buf, cap, "%s went silent: no data from %s%s%s", probe,
                 jstr(d, "connection")[0] ? jstr(d, "connection") : "its source",
                 node[0] ? " node " : "", node);
    } else if (strcmp(m->kind, "probe_data_returned") == 0) {
        snprintf(buf, cap,
                 json_is_false(json_object_get(d, "instances"))
                     ? "%s is no longer silent: a connection is live (no instance of it yet)"
                     : "%s has data again",
                 probe);
    } else if (strcmp(m->kind, "congestion") == 0) {
        snprintf(buf, cap, "ingest %s half the budget: expansions %s",
                 json_is_true(json_object_get(d, "congested")) ? "above" : "back below",
                 json_is_true(json_object_get(d, "congested")) ? "pause" : "resume");
    } else {
        snprintf(buf, cap, "%s%s%s", m->kind, m->probe ? " at " : "", m->probe ? m->probe : "");
    }
}

static int mark_json(void *ctx, const struct store_mark *m) {
    json_t *a = ctx;
    json_error_t err;
    json_t *d = m->detail_json ? json_loads(m->detail_json, JSON_DECODE_ANY, &err) : NULL;
    char text[640];
    mark_sentence(m, d, text, sizeof text);
    json_t *o = json_pack("{s:f,s:s,s:o,s:o,s:o,s:s,s:o}", "time", (double)m->time_ns * 1e-9,
                          "kind", m->kind, "probe", text_or_null(m->probe), "investigation",
                          m->investigation ? json_integer(m->investigation) : json_null(),
                          "hypothesis", m->hypothesis ? json_integer(m->hypothesis) : json_null(),
                          "text", text, "detail", d ? d : json_null());
    json_array_append_new(a, o);
    return 0;
}

/* GET /api/v1/marks?from=&to=&limit=: the newest `limit` marks of the range, oldest first. */
void api__get_marks(struct api *api, const struct api_call *call, struct http_response *res) {
    struct range r;
    int limit;
    if (!parse_range(api, call->req, API_HOUR_NS, &r, res) ||
        !parse_limit(call->req, 1000, API_MARKS_MAX, &limit, res)) {
        return;
    }
    json_t *a = json_array();
    int rc = store_marks_each(api->env.store, r.from, r.to, limit, mark_json, a);
    if (rc) {
        json_decref(a);
        http_reply_error(res, 503, "unavailable", "reading marks: %s", dq_last_error());
        return;
    }
    /* the store lists the newest first (so that the limit keeps them): oldest first here */
    json_t *asc = json_array();
    for (size_t i = json_array_size(a); i-- > 0;) {
        json_array_append(asc, json_array_get(a, i));
    }
    json_decref(a);
    http_reply_data(res, json_pack("{s:f,s:f,s:o}", "from", (double)r.from * 1e-9, "to",
                                   (double)r.to * 1e-9, "marks", asc));
}
