/*
 * api.c: dispatch, authorization, and the routes of what is observed: status, probes and
 * their ΔQs, the diagram, start/stop of the wrappers, /metrics (see api.h). Probe changes
 * go through the core (core_change_now), which records them and sends their commands.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq_error.h"

#define API_PREFIX "/api/v1/"

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *window_json(const struct api *api, const struct probe_window *w) {
    if (!w) {
        return json_null();
    }
    const struct dq *q = w->observed;
    double t50 = NAN, t95 = NAN, t99 = NAN, t;
    if (q && dq_quantile(q, 0.5, &t) == DQ_OK) {
        t50 = t;
    }
    if (q && dq_quantile(q, 0.95, &t) == DQ_OK) {
        t95 = t;
    }
    if (q && dq_quantile(q, 0.99, &t) == DQ_OK) {
        t99 = t;
    }
    int64_t window_ns = core_window_ns(api->env.core);
    double start = (double)(w->wid * window_ns) * 1e-9;
    return json_pack(
        "{s:f,s:f,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "start", start, "end",
        start + (double)window_ns * 1e-9, "n", (json_int_t)(w->ok + w->out + w->fa + w->to), "ok",
        (json_int_t)(w->ok + w->out), "fa", (json_int_t)w->fa, "to", (json_int_t)w->to, "mean",
        w->ok ? json_real(w->mean) : json_null(), "p50", num_or_null(t50), "p95", num_or_null(t95),
        "p99", num_or_null(t99), "lost", q ? json_real(dq_lost(q)) : json_null());
}

/* The newest ring entry of p that has an observed ΔQ. */
static const struct probe_window *latest_observed(struct probe *p) {
    for (int b = 0; b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (w->observed) {
            return w;
        }
    }
    return NULL;
}

void api__iso8601(int64_t ns, char *buf, size_t cap) {
    int64_t s = ns / 1000000000, ms = ns % 1000000000 / 1000000;
    if (ns < 0 && ns % 1000000000) {
        s--;
        ms += 1000;
    }
    time_t t = (time_t)s;
    struct tm tm;
    char day[32] = "?";
    if (gmtime_r(&t, &tm)) {
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    }
    snprintf(buf, cap, "%s.%03dZ", day, (int)ms);
}

/* The origin of a silence as JSON: {id, label, node, app, connected}, or null when the
 * probe was never heard from. */
static json_t *origin_json(const struct probe_origin_info *o) {
    if (o->id == 0) {
        return json_null();
    }
    return json_pack("{s:I,s:s,s:s,s:s,s:b}", "id", (json_int_t)o->id, "label", o->label, "node",
                     o->node, "app", o->app, "connected", o->connected);
}

json_t *api__silence_json(struct api *api, const struct probe *p) {
    struct probe_silence si;
    if (!p->enabled || !probes_silence(core_probes(api->env.core), p, &si)) {
        return json_null();
    }
    char since[48];
    api__iso8601(si.since_ns, since, sizeof since);
    int known = si.origin.id != 0;
    return json_pack("{s:s,s:I,s:s,s:I,s:o,s:o,s:o,s:b}", "probe", p->name, "since_ns",
                     (json_int_t)si.since_ns, "since", since, "windows", (json_int_t)si.windows,
                     "origin", known ? json_string(si.origin.label) : json_null(), "node",
                     known ? json_string(si.origin.node) : json_null(), "app",
                     known ? json_string(si.origin.app) : json_null(), "connected",
                     si.origin.connected);
}

/* The node names p is split by ([] when it is not). */
static json_t *nodes_json(const struct probe_table *t, const struct probe *p) {
    json_t *a = json_array();
    int n = probes_node_count(p);
    for (int i = 0; i < n; i++) {
        json_array_append_new(a, json_string(probes_node_name(t, p, i)));
    }
    return a;
}

static json_t *probe_summary(struct api *api, struct probe *p) {
    struct probe_table *t = core_probes(api->env.core);
    struct probe_silence si;
    int silent = probes_silence(t, p, &si) && p->enabled; /* as the status lists them */
    json_t *o = json_pack(
        "{s:s,s:b,s:f,s:i,s:f,s:b,s:{s:I,s:I,s:I},s:o,s:o,s:o,s:I,s:o,s:o}", "name", p->name,
        "enabled", p->enabled, "dmax_ms", p->dmax_ms, "bins", p->n, "bin_width_s",
        dq_width_of(p->k), "in_diagram", p->in_diagram, "instances", "ok", (json_int_t)p->total_ok,
        "fa", (json_int_t)p->total_fa, "to", (json_int_t)p->total_to, "last_window",
        window_json(api, latest_observed(p)), "qta", core_qta_json(p), "silent_since_ns",
        silent ? json_integer(si.since_ns) : json_null(), "silent_windows", (json_int_t)si.windows,
        "silent_origin", silent ? origin_json(&si.origin) : json_null(), "nodes", nodes_json(t, p));
    json_object_set_new(o, "servers", p->servers > 0 ? json_integer(p->servers) : json_null());
    json_object_set_new(o, "quiet_windows", core_quiet_json(p));
    return o;
}

static void add_family(struct api *api, struct probe *p, json_t *obj) {
    json_t *children = json_array();
    json_t *parent = json_null();
    const struct dq_diagram *g = core_diagram(api->env.core);
    if (g) {
        int i = dq_diagram_find(g, p->name);
        if (i >= 0) {
            int kids[256];
            size_t n = dq_diagram_probe_children(g, i, kids, 256);
            for (size_t j = 0; j < n && j < 256; j++) {
                json_array_append_new(children, json_string(dq_diagram_node(g, kids[j])->name));
            }
            /* nearest named ancestor, looking through anonymous nodes and references */
            const struct dq_diagram_node *node = dq_diagram_node(g, i);
            for (int guard = 0; node && node->n_parents > 0 && guard < 10000; guard++) {
                const struct dq_diagram_node *up = dq_diagram_node(g, node->parents[0]);
                if (up && up->name && up->kind != DQ_NODE_REFERENCE) {
                    json_decref(parent);
                    parent = json_string(up->name);
                    break;
                }
                node = up;
            }
        }
    }
    json_object_set_new(obj, "parent", parent);
    json_object_set_new(obj, "children", children);
}

static json_t *cdf_array(const struct dq *q) {
    json_t *a = json_array();
    double sum = 0.0;
    for (int i = 0; i < q->n; i++) {
        sum += q->pdf[i];
        json_array_append_new(a, json_real(sum > 1.0 ? 1.0 : sum));
    }
    return a;
}

static json_t *pdf_array(const struct dq *q) {
    json_t *a = json_array();
    for (int i = 0; i < q->n; i++) {
        json_array_append_new(a, json_real(q->pdf[i]));
    }
    return a;
}

static json_t *quantiles_json(const struct dq *q) {
    static const double ps[] = {0.5, 0.9, 0.95, 0.99};
    static const char *const keys[] = {"0.5", "0.9", "0.95", "0.99"};
    json_t *o = json_object();
    for (int i = 0; i < 4; i++) {
        double t;
        json_object_set_new(o, keys[i],
                            dq_quantile(q, ps[i], &t) == DQ_OK ? json_real(t) : json_null());
    }
    return o;
}

/* ---- routes ------------------------------------------------------------------------------ */

struct status_ctx {
    json_t *wrappers;
    size_t connections;
};

static void status_link(void *ctx, const struct core_link_info *li) {
    struct status_ctx *sc = ctx;
    sc->connections += li->inbound && li->connected;
    json_array_append_new(sc->wrappers,
                          json_pack("{s:I,s:s,s:s,s:s,s:s,s:b,s:o,s:I,s:I,s:I}", "id",
                                    (json_int_t)li->id, "kind", li->kind, "peer", li->peer, "node",
                                    li->node, "app", li->app, "connected", li->connected, "running",
                                    li->running < 0 ? json_null() : json_boolean(li->running),
                                    "instances", (json_int_t)li->instances, "protocol_errors",
                                    (json_int_t)li->protocol_errors, "dropped_by_wrapper",
                                    (json_int_t)li->dropped_by_wrapper));
}

static void get_status(struct api *api, struct http_response *res) {
    struct core *core = api->env.core;
    struct core_stats cs;
    core_get_stats(core, &cs);
    struct core_source_stats ss;
    core_sources_stats(core, &ss);
    uint64_t errors = 0;
    for (int e = 1; e < WIRE_E_COUNT; e++) {
        errors += ss.protocol_errors[e];
    }
    struct status_ctx sc = {json_array(), 0};
    core_links_each(core, status_link, &sc);
    /* enabled probes whose source disconnected or went silent */
    json_t *silent = json_array();
    struct probe_table *t = core_probes(core);
    for (size_t i = 0; i < t->count; i++) {
        json_t *one = api__silence_json(api, t->probes[i]);
        if (json_is_object(one)) {
            json_array_append_new(silent, one);
        } else {
            json_decref(one);
        }
    }
    char ingest[96], http[96];
    snprintf(ingest, sizeof ingest, "%s:%d", api->ingest_host, api->ingest_port);
    snprintf(http, sizeof http, "%s:%d", api->http_host, api->http_port);
    const char *path = core_diagram_path(core);
    json_t *data = json_pack(
        "{s:s,s:f,s:s,s:s,s:I,s:I,s:s,s:s,s:o,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "version",
        api->version, "uptime_seconds",
        (double)(clock_now(core_clock(core)) - cs.started_ns) * 1e-9, "ingest", ingest, "http",
        http, "window_ms", (json_int_t)api->window_ms, "lag_ms", (json_int_t)api->lag_ms, "clock",
        api->clock, "db", api->db, "diagram",
        core_diagram(core) ? json_string(path && path[0] ? path : "(api)") : json_null(), "running",
        core_running(core), "probes", (json_int_t)cs.probes, "enabled", (json_int_t)cs.enabled,
        "connections", (json_int_t)sc.connections, "instances_total",
        (json_int_t)cs.instances_total, "protocol_errors_total", (json_int_t)errors,
        "windows_closed", (json_int_t)cs.windows_closed, "wrappers", sc.wrappers);
    json_object_set_new(data, "silent", silent);
    http_reply_data(res, data);
}

static void get_probes(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    json_t *a = json_array();
    for (size_t i = 0; i < t->count; i++) {
        json_array_append_new(a, probe_summary(api, t->probes[i]));
    }
    http_reply_data(res, a);
}

static void get_probe_dq(struct api *api, struct probe *p, const struct http_request *req,
                         struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    const char *kind = http_request_query(req, "kind");
    const char *win = http_request_query(req, "window");
    int calculated = 0;
    if (kind && strcmp(kind, "calculated") == 0) {
        calculated = 1;
    } else if (kind && strcmp(kind, "observed") != 0) {
        http_reply_error(res, 400, "bad_data", "kind must be observed or calculated, not \"%s\"",
                         kind);
        return;
    }
    long back = 0;
    if (win && strcmp(win, "latest") != 0) {
        char *end = NULL;
        back = strtol(win, &end, 10);
        if (!*win || !end || *end || back < 0 || back >= t->ring_cap) {
            http_reply_error(res, 400, "bad_data",
                             "window must be latest or 0 … %d (windows back from the newest)",
                             t->ring_cap - 1);
            return;
        }
    }
    /* window N = the N-th newest closed window that has this kind of ΔQ */
    const struct probe_window *w = NULL;
    long seen = 0;
    for (int b = 0; b < p->ring_len && !w; b++) {
        struct probe_window *c = probes_ring_get(p, b);
        if ((calculated ? c->calculated : c->observed) && seen++ == back) {
            w = c;
        }
    }
    if (!w) {
        http_reply_error(res, 404, "not_found",
                         "probe %s has no %s ΔQ for window %ld yet (windows close %" PRId64
                         " ms after their end)",
                         p->name, calculated ? "calculated" : "observed", back,
                         (t->window_ns + t->lag_ns) / 1000000);
        return;
    }
    const struct dq *q = calculated ? w->calculated : w->observed;
    struct dq_moments m;
    int have_m = dq_moments(q, &m) == DQ_OK;
    double start = (double)(w->wid * t->window_ns) * 1e-9;
    json_t *data =
        json_pack("{s:s,s:s,s:{s:f,s:f},s:f,s:i,s:o,s:o,s:f,s:o,s:o,s:o,s:I,s:I,s:I,s:I}", "probe",
                  p->name, "kind", calculated ? "calculated" : "observed", "window", "start", start,
                  "end", start + (double)t->window_ns * 1e-9, "bin_width", q->width, "bins", q->n,
                  "pdf", pdf_array(q), "cdf", cdf_array(q), "lost", dq_lost(q), "mean",
                  have_m ? json_real(m.mean) : json_null(), "variance",
                  have_m ? json_real(m.variance) : json_null(), "quantiles", quantiles_json(q), "n",
                  (json_int_t)(w->ok + w->out + w->fa + w->to), "ok", (json_int_t)(w->ok + w->out),
                  "fa", (json_int_t)w->fa, "to", (json_int_t)w->to);
    /* cdf[i] is P(delay ≤ (i+1)·bin_width); cdf[i − lag] a lower bound of it (docs/engine.md) */
    json_object_set_new(data, "lag", json_integer(q->lag));
    http_reply_data(res, data);
}

static void put_probe(struct api *api, const char *name, const struct http_request *req,
                      struct http_response *res) {
    struct core *core = api->env.core;
    json_error_t err;
    json_t *body = json_loadb(req->body, req->body_len, 0, &err);
    if (!body || !json_is_object(body)) {
        http_reply_error(res, 400, "bad_data", "body must be a JSON object: %s",
                         body ? "not an object" : err.text);
        json_decref(body);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "dmax_ms") && strcmp(key, "bins") && strcmp(key, "enabled") &&
            strcmp(key, "qta") && strcmp(key, "servers")) {
            http_reply_error(res, 400, "bad_data",
                             "unknown field \"%s\" (dmax_ms, bins, enabled, qta, servers)", key);
            json_decref(body);
            return;
        }
    }
    json_t *jd = json_object_get(body, "dmax_ms"), *jb = json_object_get(body, "bins");
    json_t *je = json_object_get(body, "enabled"), *jq = json_object_get(body, "qta");
    json_t *js = json_object_get(body, "servers");
    if ((jd && !json_is_number(jd)) || (jb && !json_is_integer(jb)) ||
        (je && !json_is_boolean(je)) || (js && !json_is_integer(js) && !json_is_null(js))) {
        http_reply_error(res, 400, "bad_data",
                         "dmax_ms must be a number, bins and servers integers (servers may be "
                         "null), enabled a boolean");
        json_decref(body);
        return;
    }
    struct dq_qta qta;
    if (jq && !json_is_null(jq) && core_qta_from_json(jq, &qta) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        json_decref(body);
        return;
    }
    struct probe *p = NULL;
    if (probes_get(core_probes(core), name, strlen(name), &p) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        json_decref(body);
        return;
    }
    if (jd || jb) {
        double dmax = jd ? json_number_value(jd) : p->dmax_ms;
        int bins = jb ? (int)json_integer_value(jb) : 0;
        if (core_set_dmax(core, p, dmax, bins) != DQ_OK) {
            http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
            json_decref(body);
            return;
        }
        if (p->enabled) {
            struct core_change ch = {.kind = CORE_RESEND, .probe = p};
            core_change_now(core, &ch);
        }
    }
    if (jq) {
        core_set_qta(core, p, json_is_null(jq) ? NULL : &qta);
    }
    if (js) {
        json_int_t n = json_is_null(js) ? 0 : json_integer_value(js);
        if (n < 0 || n > 100000 || (!json_is_null(js) && n == 0) ||
            core_set_servers(core, p, (int)n) == DQ_ERANGE) {
            http_reply_error(res, 422, "unprocessable",
                             "servers must be an integer in [1, 100000], or null to unset");
            json_decref(body);
            return;
        }
    }
    if (je) {
        struct core_change ch = {.kind = json_is_true(je) ? CORE_ENABLE : CORE_DISABLE, .probe = p};
        core_change_now(core, &ch);
    }
    core_save_probe(core, p);
    json_decref(body);
    json_t *data = probe_summary(api, p);
    add_family(api, p, data);
    http_reply_data(res, data);
}

static void diagram_reply(struct api *api, struct http_response *res) {
    struct core *core = api->env.core;
    const struct dq_diagram *g = core_diagram(core);
    if (!g) {
        http_reply_data(res, json_pack("{s:n,s:n,s:[],s:[]}", "path", "text", "roots", "probes"));
        return;
    }
    json_t *roots = json_array(), *probes = json_array();
    for (size_t j = 0; j < dq_diagram_root_count(g); j++) {
        json_array_append_new(roots, json_string(dq_diagram_node(g, dq_diagram_root(g, j))->name));
    }
    for (size_t j = 0; j < dq_diagram_probe_count(g); j++) {
        json_array_append_new(probes,
                              json_string(dq_diagram_node(g, dq_diagram_probe(g, j))->name));
    }
    const char *path = core_diagram_path(core);
    http_reply_data(res, json_pack("{s:o,s:s,s:o,s:o}", "path",
                                   path[0] ? json_string(path) : json_null(), "text",
                                   core_diagram_text(core), "roots", roots, "probes", probes));
}

static void wrapper_run(struct api *api, int run, struct http_response *res) {
    struct core_change ch = {.kind = run ? CORE_START : CORE_STOP};
    int sent = core_change_now(api->env.core, &ch);
    http_reply_data(res, json_pack("{s:b,s:i}", "running", run, "sent_to", sent < 0 ? 0 : sent));
}

/* ---- /metrics -------------------------------------------------------------------------- */

static void metrics_link(void *ctx, const struct core_link_info *li) {
    http_response_printf(ctx,
                         "dqd_link_protocol_errors_total{link=\"%" PRIu64 "\",peer=\"%s\"} "
                         "%" PRIu64 "\n",
                         li->id, li->peer, li->protocol_errors);
}

static void metrics(struct api *api, struct http_response *res) {
    struct core *core = api->env.core;
    struct probe_table *t = core_probes(core);
    struct core_stats cs;
    core_get_stats(core, &cs);
    struct core_source_stats ss;
    core_sources_stats(core, &ss);
    http_response_set_type(res, "text/plain; version=0.0.4; charset=utf-8");
    res->status = 200;
    http_response_printf(res, "# HELP dqd_instances_total Outcome instances received, by probe "
                              "and status.\n# TYPE dqd_instances_total counter\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        http_response_printf(res,
                             "dqd_instances_total{probe=\"%s\",status=\"ok\"} %" PRIu64 "\n"
                             "dqd_instances_total{probe=\"%s\",status=\"fa\"} %" PRIu64 "\n"
                             "dqd_instances_total{probe=\"%s\",status=\"to\"} %" PRIu64 "\n",
                             p->name, p->total_ok, p->name, p->total_fa, p->name, p->total_to);
    }
    http_response_printf(
        res,
        "# HELP dqd_duration_seconds Durations of successful instances, on "
        "power-of-two edges (the widths of probe grids).\n# TYPE dqd_duration_seconds histogram\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        uint64_t cum = 0;
        for (int j = 0; j < PROBES_HIST_BUCKETS; j++) {
            cum += p->hist[j];
            http_response_printf(
                res, "dqd_duration_seconds_bucket{probe=\"%s\",le=\"%.9g\"} %" PRIu64 "\n", p->name,
                probes_bucket_le(j), cum);
        }
        http_response_printf(res,
                             "dqd_duration_seconds_bucket{probe=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
                             "dqd_duration_seconds_sum{probe=\"%s\"} %.9g\n"
                             "dqd_duration_seconds_count{probe=\"%s\"} %" PRIu64 "\n",
                             p->name, p->total_ok, p->name, p->total_sum, p->name, p->total_ok);
    }
    http_response_printf(res, "# HELP dqd_probe_enabled 1 when dqd has the probe enabled.\n"
                              "# TYPE dqd_probe_enabled gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        http_response_printf(res, "dqd_probe_enabled{probe=\"%s\"} %d\n", p->name, p->enabled);
    }
    int64_t now = clock_now(core_clock(core));
    size_t n_silent = 0;
    http_response_printf(res, "# HELP dqd_probe_silent 1 when an enabled probe's source "
                              "disconnected or went silent (its last windows were no data).\n"
                              "# TYPE dqd_probe_silent gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        struct probe_silence si;
        if (p->enabled) {
            int silent = probes_silence(t, p, &si);
            n_silent += (size_t)silent;
            http_response_printf(res, "dqd_probe_silent{probe=\"%s\"} %d\n", p->name, silent);
        }
    }
    http_response_printf(res, "# HELP dqd_probe_silent_seconds How long an enabled probe has "
                              "been silent (0 when it is not).\n"
                              "# TYPE dqd_probe_silent_seconds gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        struct probe_silence si;
        if (p->enabled) {
            double secs = probes_silence(t, p, &si) && now > si.since_ns
                              ? (double)(now - si.since_ns) * 1e-9
                              : 0.0;
            http_response_printf(res, "dqd_probe_silent_seconds{probe=\"%s\"} %.3f\n", p->name,
                                 secs);
        }
    }
    http_response_printf(res,
                         "# HELP dqd_probes_silent Enabled probes that are silent.\n"
                         "# TYPE dqd_probes_silent gauge\n"
                         "dqd_probes_silent %zu\n"
                         "# HELP dqd_node_split_failures_total Probes that could not get "
                         "per-node storage when a second node reported them.\n"
                         "# TYPE dqd_node_split_failures_total counter\n"
                         "dqd_node_split_failures_total %" PRIu64 "\n",
                         n_silent, t->split_failures);
    http_response_printf(res, "# HELP dqd_protocol_errors_total Bad lines from wrappers, by "
                              "kind.\n# TYPE dqd_protocol_errors_total counter\n");
    for (int e = 1; e < WIRE_E_COUNT; e++) {
        http_response_printf(res, "dqd_protocol_errors_total{kind=\"%s\"} %" PRIu64 "\n",
                             wire_err_name(e), ss.protocol_errors[e]);
    }
    http_response_printf(
        res,
        "# HELP dqd_ingest_instances_total Instances parsed from wrapper connections.\n"
        "# TYPE dqd_ingest_instances_total counter\n"
        "dqd_ingest_instances_total %" PRIu64 "\n"
        "# HELP dqd_ingest_rejected_total Instances not recorded, by reason.\n"
        "# TYPE dqd_ingest_rejected_total counter\n"
        "dqd_ingest_rejected_total{reason=\"late\"} %" PRIu64 "\n"
        "dqd_ingest_rejected_total{reason=\"future\"} %" PRIu64 "\n"
        "dqd_ingest_rejected_total{reason=\"probe_table_full\"} %" PRIu64 "\n"
        "# HELP dqd_connections_total Wrapper connections accepted.\n"
        "# TYPE dqd_connections_total counter\n"
        "dqd_connections_total %" PRIu64 "\n"
        "# HELP dqd_windows_closed_total Windows closed.\n"
        "# TYPE dqd_windows_closed_total counter\n"
        "dqd_windows_closed_total %" PRIu64 "\n"
        "# HELP dqd_store_errors_total Failed store writes.\n"
        "# TYPE dqd_store_errors_total counter\n"
        "dqd_store_errors_total %" PRIu64 "\n",
        cs.instances_total, t->late, t->future, t->full, ss.connections_total, cs.windows_closed,
        cs.store_errors);
    http_response_printf(res, "# HELP dqd_link_protocol_errors_total Bad lines per wrapper "
                              "connection.\n# TYPE dqd_link_protocol_errors_total counter\n");
    core_links_each(core, metrics_link, res);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static int method_is(const struct http_request *req, const char *m) {
    return strcmp(req->method_name, m) == 0;
}

static void method_not_allowed(struct http_response *res, const char *allowed) {
    http_reply_error(res, 405, "bad_data", "method not allowed here; use %s", allowed);
    http_response_add_header(res, "Allow", allowed);
}

static void probe_routes(struct api *api, const char *rest, const struct http_request *req,
                         struct http_response *res) {
    char name[PROBES_NAME_MAX + 1];
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    if (len == 0 || len > PROBES_NAME_MAX) {
        http_reply_error(res, 404, "not_found", "no such route");
        return;
    }
    memcpy(name, rest, len);
    name[len] = '\0';
    if (slash && strcmp(slash, "/dq") != 0) {
        http_reply_error(res, 404, "not_found", "no such route: %s", req->path);
        return;
    }
    if (!slash && method_is(req, "PUT")) {
        put_probe(api, name, req, res);
        return;
    }
    if (!method_is(req, "GET")) {
        method_not_allowed(res, slash ? "GET" : "GET, PUT");
        return;
    }
    struct probe *p = probes_find(core_probes(api->env.core), name, len);
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", name);
        return;
    }
    if (slash) {
        get_probe_dq(api, p, req, res);
        return;
    }
    json_t *data = probe_summary(api, p);
    add_family(api, p, data);
    http_reply_data(res, data);
}

/* 1 when the HTTP API listens on a loopback address only. */
static int http_is_loopback(const struct api *api) {
    return strncmp(api->http_host, "127.", 4) == 0 || strcmp(api->http_host, "::1") == 0 ||
           strcmp(api->http_host, "localhost") == 0;
}

/* Changes need the api_token when one is set, and are refused beyond loopback without. */
static int authorized(const struct api *api, const struct http_request *req,
                      struct http_response *res) {
    if (strcmp(req->method_name, "GET") == 0 || strcmp(req->method_name, "HEAD") == 0) {
        return 1;
    }
    const char *token = api->api_token;
    if (!token[0]) {
        if (http_is_loopback(api)) {
            return 1;
        }
        http_reply_error(res, 403, "forbidden",
                         "changes through an API bound to %s need an api_token (set it in the "
                         "config or with --api-token, and DQD_TOKEN for dqctl)",
                         api->http_host);
        return 0;
    }
    const char *auth = http_request_header(req, "Authorization");
    size_t tl = strlen(token);
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != tl ||
        memcmp(auth + 7, token, tl) != 0) {
        http_reply_error(res, 401, "unauthorized",
                         "this change needs the header `Authorization: Bearer <api_token>` "
                         "(dqctl sends $DQD_TOKEN)");
        http_response_add_header(res, "WWW-Authenticate", "Bearer");
        return 0;
    }
    return 1;
}

void api_handle(void *ctx, const struct http_request *req, struct http_response *res) {
    struct api *api = ctx;
    const char *path = req->path;
    if (!authorized(api, req, res)) {
        return;
    }
    if (strcmp(path, "/-/healthy") == 0) {
        static const char ok[] = "dqd is healthy.\n";
        http_reply_text(res, 200, "text/plain; charset=utf-8", ok, sizeof ok - 1);
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        if (!method_is(req, "GET")) {
            method_not_allowed(res, "GET");
            return;
        }
        metrics(api, res);
        return;
    }
    if (strncmp(path, API_PREFIX, strlen(API_PREFIX)) != 0) {
        http_reply_error(res, 404, "not_found", "no such route: %s (the API is under /api/v1/)",
                         path);
        return;
    }
    const char *r = path + strlen(API_PREFIX);
    if (api__log_route(api, r, req, res)) {
        return;
    }
    if (strcmp(r, "status") == 0) {
        method_is(req, "GET") ? get_status(api, res) : method_not_allowed(res, "GET");
    } else if (strcmp(r, "probes") == 0) {
        method_is(req, "GET") ? get_probes(api, res) : method_not_allowed(res, "GET");
    } else if (strncmp(r, "probes/", 7) == 0) {
        probe_routes(api, r + 7, req, res);
    } else if (strcmp(r, "diagram") == 0) {
        if (method_is(req, "GET")) {
            diagram_reply(api, res);
        } else if (method_is(req, "PUT")) {
            if (core_load_diagram(api->env.core, req->body, req->body_len, NULL) != DQ_OK) {
                http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
                return;
            }
            diagram_reply(api, res);
        } else {
            method_not_allowed(res, "GET, PUT");
        }
    } else if (strcmp(r, "wrapper/start") == 0 || strcmp(r, "wrapper/stop") == 0) {
        if (!method_is(req, "POST")) {
            method_not_allowed(res, "POST");
            return;
        }
        wrapper_run(api, strcmp(r, "wrapper/start") == 0, res);
    } else {
        http_reply_error(res, 404, "not_found", "no such route: %s", path);
    }
}

/* ---- create ----------------------------------------------------------------------------- */

int api_create(const struct api_env *env, const struct api_options *o, struct api **out) {
    struct api *api = calloc(1, sizeof *api);
    if (!api) {
        return dq_fail(DQ_ENOMEM, "no memory for the API");
    }
    api->env = *env;
    snprintf(api->version, sizeof api->version, "%s", o->version ? o->version : "");
    snprintf(api->db, sizeof api->db, "%s", o->db ? o->db : "");
    snprintf(api->api_token, sizeof api->api_token, "%s", o->api_token ? o->api_token : "");
    snprintf(api->clock, sizeof api->clock, "%s", o->clock ? o->clock : "wall");
    api->window_ms = o->window_ms;
    api->lag_ms = o->lag_ms;
    *out = api;
    return DQ_OK;
}

void api_set_addresses(struct api *api, const char *ingest_host, int ingest_port,
                       const char *http_host, int http_port) {
    snprintf(api->ingest_host, sizeof api->ingest_host, "%s", ingest_host);
    snprintf(api->http_host, sizeof api->http_host, "%s", http_host);
    api->ingest_port = ingest_port;
    api->http_port = http_port;
}

void api_destroy(struct api *api) {
    free(api);
}
