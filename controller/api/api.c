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
#include <unistd.h>
#include <arpa/inet.h>
#include <strings.h>

#include "dq_error.h"
#include "otlp.h"
#include "web.h"
#include "log.h"

#define API_PREFIX "/api/v1/"
#define API_MIN_DMAX_MS 0.001     /* the finest grid: 2^-10 ms bins */
#define API_MAX_DMAX_MS 4194304.0 /* DQ_MAX_BINS bins of 2^10 ms */

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* A closed window's counts and observed quantiles: {n, ok, fa, to, mean, p50, p95, p99,
 * lost}, the last five null when there is nothing to say. */
static json_t *window_stats(const struct probe_window *w) {
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
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)(w->ok + w->out + w->fa + w->to),
        "ok", (json_int_t)(w->ok + w->out), "fa", (json_int_t)w->fa, "to", (json_int_t)w->to,
        "mean", w->ok ? json_real(w->mean) : json_null(), "p50", num_or_null(t50), "p95",
        num_or_null(t95), "p99", num_or_null(t99), "lost", q ? json_real(dq_lost(q)) : json_null());
}

static json_t *window_json(const struct api *api, const struct probe_window *w) {
    if (!w) {
        return json_null();
    }
    int64_t window_ns = core_window_ns(api->env.core);
    double start = (double)(w->wid * window_ns) * 1e-9;
    json_t *o = json_pack("{s:f,s:f}", "start", start, "end", start + (double)window_ns * 1e-9);
    json_t *st = window_stats(w);
    json_object_update(o, st);
    json_decref(st);
    return o;
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

/* What to do about a silent probe's source, or NULL: an oscilloscope wrapper (a legacy
 * connection) does not reconnect by itself. */
static const char *silence_hint(const struct probe_origin_info *o) {
    if (o->id && !o->connected && strcmp(o->kind, "legacy") == 0) {
        return "a legacy wrapper (the oscilloscope's) does not reconnect by itself: restart it, "
               "or its application";
    }
    return NULL;
}

/* The origin of a silence as JSON: {id, label, node, app, connected, kind, previous_run,
 * hint}, or null when the probe was never heard from. */
static json_t *origin_json(const struct probe_origin_info *o) {
    if (o->id == 0) {
        return json_null();
    }
    const char *hint = silence_hint(o);
    return json_pack("{s:I,s:s,s:s,s:s,s:b,s:o,s:b,s:o}", "id", (json_int_t)o->id, "label",
                     o->label, "node", o->node, "app", o->app, "connected", o->connected, "kind",
                     o->kind[0] ? json_string(o->kind) : json_null(), "previous_run", o->restored,
                     "hint", hint ? json_string(hint) : json_null());
}

json_t *api__downtime_json(struct api *api) {
    struct core_downtime dt;
    core_downtime(api->env.core, &dt);
    if (dt.from_ns <= 0) {
        return json_null();
    }
    char from[48], to[48];
    api__iso8601(dt.from_ns, from, sizeof from);
    api__iso8601(dt.to_ns, to, sizeof to);
    return json_pack("{s:I,s:s,s:I,s:s,s:b}", "from_ns", (json_int_t)dt.from_ns, "from", from,
                     "to_ns", (json_int_t)dt.to_ns, "to", to, "clean", dt.clean);
}

json_t *api__silence_json(struct api *api, const struct probe *p) {
    struct probe_silence si;
    if (!p->enabled || !probes_silence(core_probes(api->env.core), p, &si)) {
        return json_null();
    }
    char since[48];
    api__iso8601(si.since_ns, since, sizeof since);
    int known = si.origin.id != 0;
    json_t *o = json_pack(
        "{s:s,s:I,s:s,s:I,s:o,s:o,s:o,s:b}", "probe", p->name, "since_ns", (json_int_t)si.since_ns,
        "since", since, "windows", (json_int_t)si.windows, "origin",
        known ? json_string(si.origin.label) : json_null(), "node",
        known ? json_string(si.origin.node) : json_null(), "app",
        known ? json_string(si.origin.app) : json_null(), "connected", si.origin.connected);
    json_object_set_new(o, "kind",
                        known && si.origin.kind[0] ? json_string(si.origin.kind) : json_null());
    /* the connection was one of dqd's previous run (the store named it) */
    json_object_set_new(o, "previous_run", json_boolean(known && si.origin.restored));
    const char *hint = silence_hint(&si.origin);
    json_object_set_new(o, "hint", hint ? json_string(hint) : json_null());
    /* a silence that began before this run spans the time dqd was not running */
    struct core_downtime dt;
    core_downtime(api->env.core, &dt);
    json_object_set_new(o, "dqd_not_running",
                        dt.from_ns > 0 && si.since_ns < dt.to_ns ? api__downtime_json(api)
                                                                 : json_null());
    return o;
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
    json_object_set_new(o, "mfa", p->mfa[0] ? json_string(p->mfa) : json_null());
    json_object_set_new(o, "trace", api__trace_json(p));
    return o;
}

json_t *api__trace_json(const struct probe *p) {
    struct core_trace_sum ts;
    core_trace_sum(p, &ts);
    if (!p->mfa[0] && p->trace.n_per == 0 && !p->trace.refused[0]) {
        return json_null();
    }
    return json_pack("{s:i,s:I,s:I,s:f,s:o}", "installed", ts.installed, "calls",
                     (json_int_t)ts.calls, "dropped", (json_int_t)ts.dropped, "sampling", ts.keep,
                     "refused", p->trace.refused[0] ? json_string(p->trace.refused) : json_null());
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
    size_t connections; /* inbound and connected */
    size_t connected;   /* connected, either way */
    size_t distinct;    /* connected wrappers: a paired data link and listener once */
};

static void status_link(void *ctx, const struct core_link_info *li) {
    struct status_ctx *sc = ctx;
    sc->connections += li->inbound && li->connected;
    sc->connected += li->connected != 0;
    /* a pair is counted at its data link (the inbound one), or at the listener when the
     * data link is gone */
    sc->distinct += li->connected && !(li->paired_with && !li->inbound);
    json_t *w = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:b,s:o,s:I,s:I,s:I}", "id", (json_int_t)li->id, "kind", li->kind,
        "peer", li->peer, "node", li->node, "app", li->app, "connected", li->connected, "running",
        li->running < 0 ? json_null() : json_boolean(li->running), "instances",
        (json_int_t)li->instances, "protocol_errors", (json_int_t)li->protocol_errors,
        "dropped_by_wrapper", (json_int_t)li->dropped_by_wrapper);
    json_object_set_new(w, "pairing", li->pairing ? json_string(li->pairing) : json_null());
    json_object_set_new(w, "paired_with",
                        li->paired_with ? json_integer((json_int_t)li->paired_with) : json_null());
    json_array_append_new(sc->wrappers, w);
}

static int http_is_loopback(const struct api *api);

/* The live event hub's counters: {"clients", "connects", "dropped", "published"}. */
static json_t *events_json(const struct events *ev) {
    struct events_stats st;
    events_get_stats(ev, &st);
    return json_pack("{s:I,s:I,s:I,s:I}", "clients", (json_int_t)st.clients, "connects",
                     (json_int_t)st.connects, "dropped", (json_int_t)st.dropped, "published",
                     (json_int_t)st.published);
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
    struct status_ctx sc = {json_array(), 0, 0, 0};
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
    /* when every wrapper has gone: since when, and which went last */
    const char *down_label = NULL;
    int64_t down_ns = core_last_link_down(core, &down_label);
    json_object_set_new(data, "wrappers_connected", json_integer((json_int_t)sc.connected));
    json_object_set_new(data, "wrappers_distinct", json_integer((json_int_t)sc.distinct));
    json_t *down = json_null();
    if (down_ns > 0) {
        char when[48];
        api__iso8601(down_ns, when, sizeof when);
        down = json_pack("{s:I,s:s,s:s}", "since_ns", (json_int_t)down_ns, "since", when, "link",
                         down_label);
    }
    json_object_set_new(data, "last_wrapper_down", down);
    /* the time dqd was not running before this run (null on a new store) */
    json_object_set_new(data, "downtime", api__downtime_json(api));
    /* what a change (PUT, POST, DELETE) needs: nothing, the token, or nothing can do it */
    json_object_set_new(data, "changes",
                        json_string(api->api_token[0]       ? "token"
                                    : http_is_loopback(api) ? "open"
                                                            : "refused"));
    json_object_set_new(data, "events",
                        api->env.events ? events_json(api->env.events) : json_null());
    int64_t last = core_last_closed(core);
    double last_start = (double)(last * core_window_ns(core)) * 1e-9;
    json_object_set_new(data, "last_window",
                        last < 0 ? json_null()
                                 : json_pack("{s:I,s:f,s:f}", "wid", (json_int_t)last, "start",
                                             last_start, "end",
                                             last_start + (double)core_window_ns(core) * 1e-9));
    json_object_set_new(data, "connections_reset", json_integer((json_int_t)ss.connections_reset));
    json_object_set_new(data, "reset_written_bytes",
                        json_integer((json_int_t)ss.reset_written_bytes));
    json_t *sources = json_array();
    for (int i = 0; i < api->env.n_sources; i++) {
        if (api->env.sources[i]) {
            json_array_append_new(sources, ingest_describe(api->env.sources[i]));
        }
    }
    json_object_set_new(data, "sources", sources);
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

static json_t *diagram_json(struct api *api);

static const struct probe_window *latest_of(struct probe *p, int calculated);

/* One ΔQ for the dashboard (GET …/dqs): its window, grid, pdf, lost, mean and quantiles,
 * and for an observed one the window's counts; null without one. */
static json_t *dq_brief(struct api *api, const struct probe_window *w, int calculated) {
    if (!w) {
        return json_null();
    }
    const struct dq *q = calculated ? w->calculated : w->observed;
    int64_t window_ns = core_window_ns(api->env.core);
    double start = (double)(w->wid * window_ns) * 1e-9;
    struct dq_moments m;
    int have_m = dq_moments(q, &m) == DQ_OK;
    json_t *o = json_pack("{s:I,s:f,s:f,s:f,s:i,s:o,s:f,s:o,s:o}", "wid", (json_int_t)w->wid,
                          "start", start, "end", start + (double)window_ns * 1e-9, "bin_width",
                          q->width, "bins", q->n, "pdf", pdf_array(q), "lost", dq_lost(q), "mean",
                          have_m ? json_real(m.mean) : json_null(), "quantiles", quantiles_json(q));
    /* cdf[i] is P(delay ≤ (i+1)·bin_width); cdf[i − lag] a lower bound of it */
    json_object_set_new(o, "lag", json_integer(q->lag));
    if (!calculated) {
        json_object_set_new(o, "n", json_integer((json_int_t)(w->ok + w->out + w->fa + w->to)));
    }
    return o;
}

/* GET /api/v1/probes/NAME/windows: the ring's windows, oldest first. */
static void get_probe_windows(struct api *api, struct probe *p, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    json_t *a = json_array();
    for (int b = p->ring_len - 1; b >= 0; b--) {
        const struct probe_window *w = probes_ring_get(p, b);
        json_t *o = window_json(api, w);
        json_object_set_new(o, "wid", json_integer(w->wid));
        json_object_set_new(o, "no_data", json_boolean(probes_no_data(p, w->wid)));
        json_array_append_new(a, o);
    }
    http_reply_data(res, json_pack("{s:s,s:f,s:i,s:o}", "probe", p->name, "window_s",
                                   (double)t->window_ns * 1e-9, "ring", t->ring_cap, "windows", a));
}

json_t *api_window_event(struct api *api, int64_t wid) {
    struct probe_table *t = core_probes(api->env.core);
    json_t *a = json_array();
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        const struct probe_window *w = probes_ring_find(p, wid);
        int no_data = p->enabled && probes_no_data(p, wid);
        if (!w || (!w->observed && !no_data)) {
            continue;
        }
        json_t *o = json_pack("{s:s}", "name", p->name);
        json_t *st = window_stats(w);
        json_object_update(o, st);
        json_decref(st);
        json_object_set_new(o, "no_data", json_boolean(no_data));
        json_array_append_new(a, o);
    }
    double start = (double)(wid * t->window_ns) * 1e-9;
    return json_pack("{s:I,s:f,s:f,s:o}", "wid", (json_int_t)wid, "start", start, "end",
                     start + (double)t->window_ns * 1e-9, "probes", a);
}

json_t *api_probe_event(struct api *api, const struct probe *p, const char *change) {
    if (!p) {
        return json_pack("{s:s,s:o}", "change", change, "diagram", diagram_json(api));
    }
    json_t *summary = json_null();
    if (strcmp(change, "delete") != 0) {
        summary = probe_summary(api, (struct probe *)p);
        add_family(api, (struct probe *)p, summary);
    }
    return json_pack("{s:s,s:s,s:o}", "probe", p->name, "change", change, "summary", summary);
}

/* A QTA point past the probe's dMax cannot be met by instances (those past dMax time out):
 * a warning, not a refusal (dMax may be raised next). */
static void qta_warnings(const struct probe *p, json_t *warnings) {
    for (int i = 0; i < p->qta.n; i++) {
        if (p->qta.t[i] * 1e3 > p->dmax_ms * (1 + 1e-9)) {
            char buf[PROBES_NAME_MAX + 400];
            snprintf(buf, sizeof buf,
                     "QTA point %g@%gs lies beyond %s's dMax (%g ms): instances slower than "
                     "dMax time out and count as lost, so the point can only be met through "
                     "the tangible mass; raise dMax (set-timeout) or move the point",
                     p->qta.p[i], p->qta.t[i], p->name, p->dmax_ms);
            json_array_append_new(warnings, json_string(buf));
        }
    }
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
    if ((jd && !json_is_number(jd) && !json_is_string(jd)) || (jb && !json_is_integer(jb)) ||
        (je && !json_is_boolean(je)) || (js && !json_is_integer(js) && !json_is_null(js))) {
        http_reply_error(res, 400, "bad_data",
                         "dmax_ms must be a number (ms) or a string with a unit (\"1.5s\"), "
                         "bins and servers integers (servers may be null), enabled a boolean");
        json_decref(body);
        return;
    }
    double dmax_s = 0.0;
    if (json_is_string(jd) && dq_parse_duration(json_string_value(jd), json_string_length(jd), 1e-3,
                                                0, &dmax_s) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "dmax_ms: %s", dq_last_error());
        json_decref(body);
        return;
    }
    /* numbers are checked whole, before any narrowing: 4294967297 bins is not 1 bin */
    double dmax_req = !jd ? 0 : json_is_string(jd) ? dmax_s * 1e3 : json_number_value(jd);
    if (jd && !(dmax_req >= API_MIN_DMAX_MS && dmax_req <= API_MAX_DMAX_MS)) {
        http_reply_error(res, 422, "unprocessable",
                         "dmax_ms %g is out of range [%g, %g] ms (the grid's finest and widest "
                         "horizons)",
                         dmax_req, API_MIN_DMAX_MS, API_MAX_DMAX_MS);
        json_decref(body);
        return;
    }
    if (jb && (json_integer_value(jb) < DQ_MIN_BINS || json_integer_value(jb) > DQ_MAX_BINS)) {
        http_reply_error(res, 422, "unprocessable",
                         "bins %" JSON_INTEGER_FORMAT " is out of range [%d, %d]",
                         json_integer_value(jb), DQ_MIN_BINS, DQ_MAX_BINS);
        json_decref(body);
        return;
    }
    json_int_t servers = js && !json_is_null(js) ? json_integer_value(js) : 0;
    if (js && !json_is_null(js) && (servers < 1 || servers > 100000)) {
        http_reply_error(res, 422, "unprocessable",
                         "servers must be an integer in [1, 100000], or null to unset");
        json_decref(body);
        return;
    }
    struct dq_qta qta;
    if (jq && !json_is_null(jq) && core_qta_from_json(jq, &qta) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        json_decref(body);
        return;
    }
    struct probe *p = probes_find(core_probes(core), name, strlen(name));
    const char *create = http_request_query(req, "create");
    if (!p && !(create && (strcmp(create, "1") == 0 || strcmp(create, "true") == 0))) {
        http_reply_error(res, 404, "not_found",
                         "no probe named \"%s\": it is not in the diagram and no wrapper has "
                         "reported it (see GET /api/v1/probes); to register it anyway, PUT "
                         "with ?create=1 (dqctl: --create)",
                         name);
        json_decref(body);
        return;
    }
    int created = !p;
    if (!p && probes_get(core_probes(core), name, strlen(name), &p) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        json_decref(body);
        return;
    }
    /* the store must take the change, or it would be gone after a restart: try it first
     * (a full disk refuses this write too), then check every step */
    if (core_save_probe(core, p) != DQ_OK) {
        http_reply_error(res, 503, "unavailable",
                         "the store cannot record changes now (%s): nothing was changed",
                         dq_last_error());
        if (created) {
            probes_remove(core_probes(core), p);
        }
        json_decref(body);
        return;
    }
    json_t *report = json_array(), *warnings = json_array();
    int commanded = 0; /* a change that sends commands was made */
    int failed = 0;    /* a step the store refused (503) */
    char why[320] = "";
    if (jd || jb) {
        double dmax = !jd ? p->dmax_ms : dmax_req;
        int bins = jb ? (int)json_integer_value(jb) : 0;
        double old_dmax = p->dmax_ms;
        int old_set = p->dmax_set, old_n = p->n, old_auto = p->auto_range;
        if (core_set_dmax(core, p, dmax, bins) != DQ_OK) {
            http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
            json_decref(body);
            json_decref(report);
            json_decref(warnings);
            return;
        }
        struct core_change ch = {.kind = CORE_RESEND, .probe = p, .report = report};
        int rc = p->enabled ? core_change_now(core, &ch) : core_save_probe(core, p);
        if (rc < 0) { /* not recorded: the grid goes back to what the store has */
            snprintf(why, sizeof why, "dMax: %s", dq_last_error());
            core_set_dmax(core, p, old_dmax, old_n);
            p->dmax_set = old_set;
            p->auto_range = old_auto;
            failed = 1;
        } else {
            commanded |= p->enabled;
        }
    }
    if (jq && !failed && core_set_qta(core, p, json_is_null(jq) ? NULL : &qta) != DQ_OK) {
        snprintf(why, sizeof why, "QTA: %s", dq_last_error());
        failed = 1;
    }
    if (p->has_qta && (jq || jd || jb)) {
        qta_warnings(p, warnings);
    }
    if (js && !failed && core_set_servers(core, p, (int)servers) != DQ_OK) {
        snprintf(why, sizeof why, "servers: %s", dq_last_error());
        failed = 1;
    }
    if (je && !failed) {
        struct core_change ch = {
            .kind = json_is_true(je) ? CORE_ENABLE : CORE_DISABLE, .probe = p, .report = report};
        int needed = core_change_needed(&ch);
        if (core_change_now(core, &ch) < 0) {
            snprintf(why, sizeof why, "enabled: %s", dq_last_error());
            failed = 1;
        } else {
            commanded |= needed;
        }
    }
    json_decref(body);
    if (failed) {
        json_decref(report);
        json_decref(warnings);
        http_reply_error(res, 503, "unavailable",
                         "the store did not take the change (%s); what is answered by GET "
                         "/api/v1/probes/%s is what dqd has and keeps",
                         why, name);
        return;
    }
    json_t *data = probe_summary(api, p);
    add_family(api, p, data);
    if (!commanded) {
        json_decref(report);
        report = json_null();
    }
    json_object_set_new(data, "commands", report);
    json_object_set_new(data, "warnings", warnings);
    http_reply_data(res, data);
}

/* DELETE /api/v1/probes/NAME: a person's probe goes (core_delete_probe), unless an open
 * investigation holds it or the diagram has it. */
static void delete_probe(struct api *api, const char *name, const struct http_request *req,
                         struct http_response *res) {
    (void)req;
    struct core *core = api->env.core;
    struct probe *p = probes_find(core_probes(core), name, strlen(name));
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", name);
        return;
    }
    int64_t holder = api->env.adapt ? adapt_probe_holder(api->env.adapt, name) : 0;
    if (holder) {
        http_reply_error(res, 409, "conflict",
                         "investigation %" PRId64 " holds %s (it enabled it, or searches at "
                         "it): end it first (DELETE /api/v1/investigations/%" PRId64
                         ", dqctl diagnose --abort %" PRId64 ")",
                         holder, name, holder, holder);
        return;
    }
    int was_enabled = p->enabled;
    uint64_t seen = p->total_ok + p->total_fa + p->total_to;
    json_t *report = json_array();
    int rc = core_delete_probe(core, p, report); /* frees p */
    if (rc == DQ_ESTATE) {
        http_reply_error(res, 409, "conflict", "%s", dq_last_error());
        json_decref(report);
        return;
    }
    if (rc) {
        http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
        json_decref(report);
        return;
    }
    int triggers = api->env.adapt ? adapt_forget_probe(api->env.adapt, name) : 0;
    size_t i, kept_on = 0;
    json_t *c;
    json_array_foreach(report, i, c) {
        kept_on += strcmp(json_string_value(json_object_get(c, "status")), "sent") != 0;
    }
    char note[512];
    if (kept_on) {
        snprintf(note, sizeof note,
                 "%zu wrapper link%s could not be told to stop reporting %s (a legacy wrapper "
                 "has no clear_timeout): its next instance registers the probe again",
                 kept_on, kept_on == 1 ? "" : "s", name);
    } else if (seen) {
        snprintf(note, sizeof note,
                 "a wrapper that still reports %s registers it again at its next instance", name);
    } else {
        note[0] = '\0';
    }
    http_reply_data(res, json_pack("{s:s,s:b,s:b,s:I,s:I,s:o,s:o}", "probe", name, "deleted", 1,
                                   "was_enabled", was_enabled, "instances", (json_int_t)seen,
                                   "triggers_removed", (json_int_t)triggers, "commands", report,
                                   "note", note[0] ? json_string(note) : json_null()));
}

/* {"node": ["child", …]} for every named node: the tree the dashboard draws (the children
 * are the nearest named nodes below, as in GET /api/v1/probes/NAME). */
static json_t *diagram_children(const struct dq_diagram *g) {
    json_t *o = json_object();
    for (size_t j = 0; j < dq_diagram_probe_count(g); j++) {
        int i = dq_diagram_probe(g, j);
        int kids[256];
        size_t n = dq_diagram_probe_children(g, i, kids, 256);
        json_t *a = json_array();
        for (size_t k = 0; k < n && k < 256; k++) {
            json_array_append_new(a, json_string(dq_diagram_node(g, kids[k])->name));
        }
        json_object_set_new(o, dq_diagram_node(g, i)->name, a);
    }
    return o;
}

/* The diagram as GET /api/v1/diagram answers it (a new reference). */
static json_t *diagram_json(struct api *api) {
    struct core *core = api->env.core;
    const struct dq_diagram *g = core_diagram(core);
    if (!g) {
        return json_pack("{s:n,s:n,s:[],s:[],s:{}}", "path", "text", "roots", "probes", "children");
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
    json_t *data = json_pack("{s:o,s:s,s:o,s:o}", "path", path[0] ? json_string(path) : json_null(),
                             "text", core_diagram_text(core), "roots", roots, "probes", probes);
    json_object_set_new(data, "children", diagram_children(g));
    return data;
}

static void diagram_reply(struct api *api, struct http_response *res) {
    http_reply_data(res, diagram_json(api));
}

static void wrapper_run(struct api *api, int run, struct http_response *res) {
    struct core_change ch = {.kind = run ? CORE_START : CORE_STOP};
    int sent = core_change_now(api->env.core, &ch);
    if (sent == DQ_ESTORE || sent == DQ_ENOMEM) {
        http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
        return;
    }
    http_reply_data(res, json_pack("{s:b,s:i,s:I}", "running", run, "sent_to", sent < 0 ? 0 : sent,
                                   "not_applied", (json_int_t)ch.n_not_applied));
}

/* ---- /metrics -------------------------------------------------------------------------- */

/* A label value as the exposition format wants it: \\, \" and \n escaped. */
static void label_value(const char *in, char *out, size_t cap) {
    size_t o = 0;
    for (const char *c = in ? in : ""; *c && o + 3 < cap; c++) {
        if (*c == '\\' || *c == '"') {
            out[o++] = '\\';
            out[o++] = *c;
        } else if (*c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *c;
        }
    }
    out[o] = '\0';
}

/* A number as the exposition writes it: +Inf / NaN spelled out. */
static void metric_number(double v, char *buf, size_t cap) {
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, cap, "%s", v > 0 ? "+Inf" : "-Inf");
    } else {
        snprintf(buf, cap, "%.9g", v);
    }
}

static void metrics_trigger(void *ctx, const struct adapt_trigger_view *t) {
    http_response_printf(ctx, "dqd_trigger_fired{probe=\"%s\",kind=\"%s\"} %d\n", t->probe, t->kind,
                         t->enabled && t->fired);
}

/* The newest ring entry of p that has a ΔQ of the kind, or NULL. */
static const struct probe_window *latest_of(struct probe *p, int calculated) {
    for (int b = 0; b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (calculated ? w->calculated != NULL : w->observed != NULL) {
            return w;
        }
    }
    return NULL;
}

/* What a Prometheus user alerts on (issue 13): triggers, investigations, verdicts, QTA
 * margins, quantiles, wrappers, the build. */
static void metrics_alerting(struct api *api, struct http_response *res) {
    struct core *core = api->env.core;
    struct probe_table *t = core_probes(core);
    http_response_printf(res,
                         "# HELP dqd_build_info dqd's version and clock; always 1.\n"
                         "# TYPE dqd_build_info gauge\n"
                         "dqd_build_info{version=\"%s\",clock=\"%s\"} 1\n",
                         api->version, api->clock);
    /* the adaptive loop */
    if (api->env.adapt) {
        http_response_printf(res, "# HELP dqd_trigger_fired 1 while an enabled trigger is fired, "
                                  "per probe and kind.\n# TYPE dqd_trigger_fired gauge\n");
        adapt_triggers_each(api->env.adapt, metrics_trigger, res);
        http_response_printf(res,
                             "# HELP dqd_investigations_open Investigations searching for a "
                             "verdict.\n# TYPE dqd_investigations_open gauge\n"
                             "dqd_investigations_open %d\n"
                             "# HELP dqd_verdicts_total Investigations closed since dqd started, "
                             "by verdict.\n# TYPE dqd_verdicts_total counter\n",
                             adapt_open_investigations(api->env.adapt));
        uint64_t counts[ADAPT_VERDICT_KINDS];
        adapt_verdict_counts(api->env.adapt, counts);
        for (int i = 0; i < ADAPT_VERDICT_KINDS; i++) {
            http_response_printf(res, "dqd_verdicts_total{verdict=\"%s\"} %" PRIu64 "\n",
                                 adapt_verdict_names[i], counts[i]);
        }
    }
    /* QTA margins of the newest observed window */
    http_response_printf(res, "# HELP dqd_qta_margin The worst margin of a probe's QTA on its "
                              "newest observed window with instances: min over the points of "
                              "F(t) - p, and max_lost - lost; below 0 the QTA is violated.\n"
                              "# TYPE dqd_qta_margin gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        const struct probe_window *w = latest_of(p, 0);
        struct dq_qta_result r;
        if (p->has_qta && w && dq_qta_eval(w->observed, &p->qta, &r) == DQ_OK) {
            http_response_printf(res, "dqd_qta_margin{probe=\"%s\"} %.9g\n", p->name, r.margin);
        }
    }
    /* quantiles of the newest observed and calculated ΔQs */
    static const double qs[] = {0.5, 0.95, 0.99};
    static const char *const qn[] = {"0.5", "0.95", "0.99"};
    http_response_printf(res, "# HELP dqd_delay_quantile_seconds Quantiles of the newest closed "
                              "window's observed and calculated ΔQ; +Inf when the tangible mass "
                              "never reaches the quantile (too much lost).\n"
                              "# TYPE dqd_delay_quantile_seconds gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        for (int kind = 0; kind < 2; kind++) {
            const struct probe_window *w = latest_of(p, kind);
            if (!w) {
                continue;
            }
            const struct dq *q = kind ? w->calculated : w->observed;
            for (int j = 0; j < 3; j++) {
                double v;
                char num[32];
                metric_number(dq_quantile(q, qs[j], &v) == DQ_OK ? v : INFINITY, num, sizeof num);
                http_response_printf(res,
                                     "dqd_delay_quantile_seconds{probe=\"%s\",kind=\"%s\","
                                     "q=\"%s\"} %s\n",
                                     p->name, kind ? "calculated" : "observed", qn[j], num);
            }
        }
    }
    /* wrappers, one series per peer whatever the reconnects */
    struct core_peer peers[CORE_MAX_PEERS];
    size_t n = core_peers(core, peers, CORE_MAX_PEERS);
    int connected = 0;
    for (size_t i = 0; i < n; i++) {
        connected += peers[i].connected;
    }
    const char *label = NULL;
    int64_t down = core_last_link_down(core, &label);
    http_response_printf(res,
                         "# HELP dqd_wrappers_connected Wrapper links connected now (inbound and "
                         "outbound).\n# TYPE dqd_wrappers_connected gauge\n"
                         "dqd_wrappers_connected %d\n"
                         "# HELP dqd_wrapper_last_disconnect_timestamp_seconds When a wrapper "
                         "link last went down (0: none since dqd started).\n"
                         "# TYPE dqd_wrapper_last_disconnect_timestamp_seconds gauge\n"
                         "dqd_wrapper_last_disconnect_timestamp_seconds %.3f\n"
                         "# HELP dqd_peer_connected Links connected now per peer (the host of "
                         "an inbound link, the address of an outbound one); 0 once gone.\n"
                         "# TYPE dqd_peer_connected gauge\n",
                         connected, (double)down * 1e-9);
    for (size_t i = 0; i < n; i++) {
        char peer[2 * CORE_PEER_MAX];
        label_value(peers[i].peer, peer, sizeof peer);
        http_response_printf(res, "dqd_peer_connected{peer=\"%s\"} %d\n", peer, peers[i].connected);
    }
    http_response_printf(res, "# HELP dqd_peer_protocol_errors_total Bad lines per peer (links "
                              "gone included, so a reconnect continues the series).\n"
                              "# TYPE dqd_peer_protocol_errors_total counter\n");
    for (size_t i = 0; i < n; i++) {
        char peer[2 * CORE_PEER_MAX];
        label_value(peers[i].peer, peer, sizeof peer);
        http_response_printf(res, "dqd_peer_protocol_errors_total{peer=\"%s\"} %" PRIu64 "\n", peer,
                             peers[i].errors);
    }
}

/* GET /api/v1/otlp/spans?service=S&limit=N: the newest spans kept for `dqctl diagram
 * --infer`. */
static void get_otlp_spans(struct api *api, const struct http_request *req,
                           struct http_response *res) {
    struct otlp *otlp = NULL;
    for (int i = 0; i < api->env.n_sources && !otlp; i++) {
        otlp = otlp_of(api->env.sources[i]);
    }
    if (!otlp) {
        http_reply_error(res, 404, "not_found",
                         "dqd receives no OTLP: start it with --otlp HOST:PORT (docs/otlp.md)");
        return;
    }
    const char *svc = http_request_query(req, "service");
    const char *lim = http_request_query(req, "limit");
    long limit = 65536;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (*end || end == lim || limit < 1 || limit > 10000000) {
            http_reply_error(res, 400, "bad_data", "limit: want an integer in [1, 10000000]");
            return;
        }
    }
    http_reply_data(res, otlp_recent_json(otlp, svc && svc[0] ? svc : NULL, (size_t)limit));
}

static void metrics(struct api *api, struct http_response *res) {
    struct core *core = api->env.core;
    struct probe_table *t = core_probes(core);
    struct core_stats cs;
    core_get_stats(core, &cs);
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
        "dqd_ingest_rejected_total{reason=\"new_name_rate\"} %" PRIu64 "\n"
        "# HELP dqd_probes_evicted_total Probes only seen on the wire (never in the diagram, "
        "enabled or configured) evicted to make room for new names.\n"
        "# TYPE dqd_probes_evicted_total counter\n"
        "dqd_probes_evicted_total %" PRIu64 "\n"
        "# HELP dqd_windows_closed_total Windows closed.\n"
        "# TYPE dqd_windows_closed_total counter\n"
        "dqd_windows_closed_total %" PRIu64 "\n"
        "# HELP dqd_store_errors_total Failed store writes.\n"
        "# TYPE dqd_store_errors_total counter\n"
        "dqd_store_errors_total %" PRIu64 "\n",
        cs.instances_total, t->late, t->future, t->full, t->name_rate, t->evicted,
        cs.windows_closed, cs.store_errors);
    http_response_printf(res,
                         "# HELP dqd_http_refused_total API requests refused before their route: "
                         "a Host that is not dqd's, another site's Origin on a change, a change "
                         "without a JSON Content-Type, a missing or wrong token.\n"
                         "# TYPE dqd_http_refused_total counter\n"
                         "dqd_http_refused_total{reason=\"host\"} %" PRIu64 "\n"
                         "dqd_http_refused_total{reason=\"origin\"} %" PRIu64 "\n"
                         "dqd_http_refused_total{reason=\"content_type\"} %" PRIu64 "\n"
                         "dqd_http_refused_total{reason=\"token\"} %" PRIu64 "\n",
                         api->refused[API_REFUSED_HOST], api->refused[API_REFUSED_ORIGIN],
                         api->refused[API_REFUSED_TYPE], api->refused[API_REFUSED_TOKEN]);
    struct http_server_stats hs = {0};
    if (api->http) {
        http_server_get_stats(api->http, &hs);
    }
    http_response_printf(
        res,
        "# HELP dqd_http_connections_open HTTP connections open now.\n"
        "# TYPE dqd_http_connections_open gauge\n"
        "dqd_http_connections_open %" PRIu64 "\n"
        "# HELP dqd_http_connections_closed_total HTTP connections dqd closed or refused to "
        "keep serving: shed (idle the longest, closed for a new client at the cap), rejected "
        "(past the cap and its reserve: 503), reserve (a reserve connection that asked for "
        "more than /-/healthy or /metrics: 503), unread (its unsent answers over the total "
        "bound: a client that does not read), timeout (idle or request timeout).\n"
        "# TYPE dqd_http_connections_closed_total counter\n"
        "dqd_http_connections_closed_total{reason=\"shed\"} %" PRIu64 "\n"
        "dqd_http_connections_closed_total{reason=\"rejected\"} %" PRIu64 "\n"
        "dqd_http_connections_closed_total{reason=\"reserve\"} %" PRIu64 "\n"
        "dqd_http_connections_closed_total{reason=\"unread\"} %" PRIu64 "\n"
        "dqd_http_connections_closed_total{reason=\"timeout\"} %" PRIu64 "\n"
        "# HELP dqd_http_pending_bytes Answer bytes queued for HTTP clients, not yet sent.\n"
        "# TYPE dqd_http_pending_bytes gauge\n"
        "dqd_http_pending_bytes %" PRIu64 "\n",
        hs.connections_open, hs.connections_shed, hs.connections_rejected, hs.reserve_refused,
        hs.unread_dropped, hs.timeouts, hs.pending_bytes);
    struct webhook_stats ws = {0};
    if (api->webhooks) {
        webhooks_get_stats(api->webhooks, &ws);
    }
    http_response_printf(res,
                         "# HELP dqd_webhook_events_total Webhook events by outcome: delivered "
                         "(a 2xx answer), failed (given up after the last retry), dropped "
                         "(pushed out of a full queue).\n"
                         "# TYPE dqd_webhook_events_total counter\n"
                         "dqd_webhook_events_total{outcome=\"delivered\"} %" PRIu64 "\n"
                         "dqd_webhook_events_total{outcome=\"failed\"} %" PRIu64 "\n"
                         "dqd_webhook_events_total{outcome=\"dropped\"} %" PRIu64 "\n"
                         "# HELP dqd_webhook_retries_total Webhook attempts that failed and "
                         "were tried again.\n"
                         "# TYPE dqd_webhook_retries_total counter\n"
                         "dqd_webhook_retries_total %" PRIu64 "\n"
                         "# HELP dqd_webhook_pending Webhook events waiting or in flight.\n"
                         "# TYPE dqd_webhook_pending gauge\n"
                         "dqd_webhook_pending %" PRIu64 "\n",
                         ws.delivered, ws.failed, ws.dropped, ws.retried, ws.pending);
    http_response_printf(res,
                         "# HELP dqd_log_suppressed_total Log lines not written because their "
                         "call site wrote %d already that second (the log says how many).\n"
                         "# TYPE dqd_log_suppressed_total counter\n"
                         "dqd_log_suppressed_total %" PRIu64 "\n",
                         LOG_SITE_BURST, log_suppressed_total());
    for (int i = 0; i < api->env.n_sources; i++) {
        if (api->env.sources[i]) {
            ingest_metrics(api->env.sources[i], res);
        }
    }
    metrics_alerting(api, res);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static int method_is(const struct http_request *req, const char *m) {
    return strcmp(req->method_name, m) == 0;
}

int api__is_read(const struct http_request *req) {
    return method_is(req, "GET") || method_is(req, "HEAD");
}

void api__method_not_allowed(const struct http_request *req, struct http_response *res,
                             const char *allowed) {
    http_reply_error(res, 405, "method_not_allowed", "%s is not allowed on %s; use %s",
                     req->method_name, req->path, allowed);
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
    if (slash && strcmp(slash, "/dq") != 0 && strcmp(slash, "/windows") != 0 &&
        strcmp(slash, "/dqs") != 0) {
        http_reply_error(res, 404, "not_found", "no such route: %s", req->path);
        return;
    }
    if (!slash && method_is(req, "PUT")) {
        put_probe(api, name, req, res);
        return;
    }
    if (!slash && method_is(req, "DELETE")) {
        delete_probe(api, name, req, res);
        return;
    }
    if (!api__is_read(req)) {
        api__method_not_allowed(req, res, slash ? "GET, HEAD" : "GET, HEAD, PUT, DELETE");
        return;
    }
    struct probe *p = probes_find(core_probes(api->env.core), name, len);
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", name);
        return;
    }
    if (slash && strcmp(slash, "/windows") == 0) {
        get_probe_windows(api, p, res);
        return;
    }
    if (slash && strcmp(slash, "/dqs") == 0) {
        http_reply_data(res, json_pack("{s:s,s:o,s:o}", "probe", p->name, "observed",
                                       dq_brief(api, latest_of(p, 0), 0), "calculated",
                                       dq_brief(api, latest_of(p, 1), 1)));
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

/*
 * GET / and /assets/…: the dashboard's embedded files. Each has an ETag (a changed dqd
 * serves changed files) and must be revalidated (no-cache): If-None-Match gets a 304. The
 * page may load nothing but dqd's own files and talk to nothing but dqd: its
 * Content-Security-Policy says so to the browser.
 */
static void web_route(const struct http_request *req, struct http_response *res) {
    if (!api__is_read(req)) {
        api__method_not_allowed(req, res, "GET, HEAD");
        return;
    }
    const struct web_asset *a = web_find(req->path);
    if (!a) {
        http_reply_error(res, 404, "not_found", "no such file: %s", req->path);
        return;
    }
    const char *inm = http_request_header(req, "If-None-Match");
    if (inm && strcmp(inm, a->etag) == 0) {
        http_response_clear(res);
        res->status = 304;
    } else {
        http_reply_text(res, 200, a->content_type, (const char *)a->data, a->len);
    }
    http_response_add_header(res, "ETag", a->etag);
    http_response_add_header(res, "Cache-Control", "no-cache");
    http_response_add_header(res, "X-Content-Type-Options", "nosniff");
    if (strcmp(a->path, "/") == 0) {
        http_response_add_header(res, "Content-Security-Policy",
                                 "default-src 'none'; script-src 'self'; style-src 'self'; "
                                 "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                                 "form-action 'none'; frame-ancestors 'none'");
        http_response_add_header(res, "Referrer-Policy", "no-referrer");
        http_response_add_header(res, "X-Frame-Options", "DENY");
    }
}

/* 1 when the HTTP API listens on a loopback address only. */
static int http_is_loopback(const struct api *api) {
    return strncmp(api->http_host, "127.", 4) == 0 || strcmp(api->http_host, "::1") == 0 ||
           strcmp(api->http_host, "localhost") == 0;
}

/* ---- who may ask ---------------------------------------------------------------------------
 *
 * A web page the operator opens must not be able to drive dqd: (1) DNS rebinding makes a
 * page's own name resolve to 127.0.0.1, so the Host header names the attacker's domain:
 * every request must carry a Host dqd knows as its own; (2) a page on another site can
 * send a POST without asking (text/plain or a form): a change whose Origin is another
 * site's is refused, and a body must say application/json, which a browser does not send
 * across sites without a CORS preflight dqd never grants.
 */

/* Case-insensitive equality of a[0, n) and the string b. */
static int eq_n(const char *a, size_t n, const char *b) {
    return strlen(b) == n && strncasecmp(a, b, n) == 0;
}

/* 1 when host[0, n) (no port, no brackets) is an IP address literal. */
static int is_ip_literal(const char *host, size_t n, int bracketed) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) {
        return 0;
    }
    memcpy(buf, host, n);
    buf[n] = '\0';
    unsigned char addr[16];
    return bracketed ? inet_pton(AF_INET6, buf, addr) == 1 : inet_pton(AF_INET, buf, addr) == 1;
}

/* Whether one allowed_hosts entry e[0, en) matches host[0, hn) with the Host's full value
 * full[0, fn) (host plus ":port"). */
static int entry_matches(const char *e, size_t en, const char *host, size_t hn, const char *full,
                         size_t fn) {
    if (en == 1 && e[0] == '*') {
        return 1;
    }
    if (en > 1 && e[0] == '.') { /* every name under a domain */
        return hn > en && strncasecmp(host + hn - en, e, en) == 0;
    }
    if (memchr(e, ':', en) && e[0] != '[') { /* name:port */
        return en == fn && strncasecmp(full, e, en) == 0;
    }
    return en == hn && strncasecmp(host, e, en) == 0;
}

int api__host_allowed(const struct api *api, const char *value) {
    size_t fn = strlen(value);
    const char *host = value;
    size_t hn = fn;
    int bracketed = 0;
    if (fn > 0 && value[0] == '[') {
        const char *close = memchr(value, ']', fn);
        if (!close) {
            return 0;
        }
        host = value + 1;
        hn = (size_t)(close - host);
        bracketed = 1;
    } else {
        const char *colon = memchr(value, ':', fn);
        if (colon) {
            hn = (size_t)(colon - value);
        }
    }
    if (hn == 0) {
        return 0;
    }
    if (hn > 0 && host[hn - 1] == '.' && !bracketed) {
        hn--; /* "localhost." is "localhost" */
    }
    if (is_ip_literal(host, hn, bracketed) || eq_n(host, hn, "localhost") ||
        (hn > 10 && strncasecmp(host + hn - 10, ".localhost", 10) == 0) ||
        (api->hostname[0] && eq_n(host, hn, api->hostname))) {
        return 1;
    }
    const char *e = api->allowed_hosts;
    while (*e) {
        size_t en = strcspn(e, ",");
        const char *x = e;
        size_t xn = en;
        while (xn && (*x == ' ' || *x == '\t')) {
            x++, xn--;
        }
        while (xn && (x[xn - 1] == ' ' || x[xn - 1] == '\t')) {
            xn--;
        }
        if (xn && entry_matches(x, xn, host, hn, value, fn)) {
            return 1;
        }
        e += en + (e[en] == ',');
    }
    return 0;
}

int api__text_ok(struct http_response *res, const char *field, const char *s, size_t len) {
    if (len > API_TEXT_MAX) {
        http_reply_error(res, 422, "unprocessable", "%s is %zu bytes long; at most %d", field, len,
                         API_TEXT_MAX);
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int c1 = c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
                 (unsigned char)s[i + 1] <= 0x9f;
        if (c < 0x20 || c == 0x7f || c1) {
            http_reply_error(res, 422, "unprocessable",
                             "%s has a control character at byte %zu (a terminal would act on it)",
                             field, i);
            return 0;
        }
    }
    json_t *utf8 = json_stringn(s, len); /* NULL for bytes that are not UTF-8 */
    if (!utf8) {
        http_reply_error(res, 422, "unprocessable", "%s is not UTF-8", field);
        return 0;
    }
    json_decref(utf8);
    return 1;
}

/* 1 when the Content-Type value is application/json (parameters allowed). */
static int is_json_type(const char *ct) {
    static const char aj[] = "application/json";
    if (!ct || strncasecmp(ct, aj, sizeof aj - 1) != 0) {
        return 0;
    }
    char after = ct[sizeof aj - 1];
    return after == '\0' || after == ';' || after == ' ' || after == '\t';
}

/* The Origin is "http://" or "https://" followed by the Host. */
static int same_origin(const char *origin, const char *host) {
    const char *rest = strncasecmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncasecmp(origin, "https://", 8) == 0 ? origin + 8
                                                                 : NULL;
    return rest && host && strcasecmp(rest, host) == 0;
}

/* Paths a read beyond loopback may ask for without the token: the health check (for load
 * balancers and orchestrators) and the dashboard's static files (a browser loads those
 * before the page can send a token). */
static int open_path(const char *path) {
    return strcmp(path, "/-/healthy") == 0 || strcmp(path, "/") == 0 ||
           strncmp(path, "/assets/", 8) == 0;
}

static int token_ok(const struct api *api, const struct http_request *req) {
    const char *auth = http_request_header(req, "Authorization");
    const char *token = api->api_token;
    size_t tl = strlen(token);
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != tl) {
        return 0;
    }
    unsigned char diff = 0; /* the same time whatever the first differing byte */
    for (size_t i = 0; i < tl; i++) {
        diff |= (unsigned char)(auth[7 + i] ^ token[i]);
    }
    return diff == 0;
}

static void refuse_token(struct http_response *res, const char *what) {
    http_reply_error(res, 401, "unauthorized",
                     "%s needs the header `Authorization: Bearer <api_token>` (dqctl sends "
                     "$DQD_TOKEN; Prometheus: authorization.credentials_file)",
                     what);
    http_response_add_header(res, "WWW-Authenticate", "Bearer");
}

/* Host, Origin, Content-Type and the token: 1 when the request may go on, else res holds
 * the refusal (counted in api->refused). */
static int authorized(struct api *api, const struct http_request *req, struct http_response *res) {
    const char *host = http_request_header(req, "Host");
    int read = api__is_read(req);
    if (host ? !api__host_allowed(api, host) : (req->http_major == 1 && req->http_minor >= 1)) {
        api->refused[API_REFUSED_HOST]++;
        char shown[96];
        snprintf(shown, sizeof shown, "%s", host ? host : "");
        http_reply_error(res, host ? 403 : 400, host ? "forbidden" : "bad_data",
                         host ? "Host \"%s\" is not one of dqd's names (a loopback name, an IP "
                                "address, this machine's name); a proxy, a Collector or a DNS "
                                "name must be listed in allowed_hosts"
                              : "an HTTP/1.1 request needs a Host header%s",
                         shown);
        return 0;
    }
    int loopback = http_is_loopback(api);
    if (read) {
        if (loopback || !api->api_token[0] || api->public_reads || open_path(req->path) ||
            token_ok(api, req)) {
            return 1;
        }
        api->refused[API_REFUSED_TOKEN]++;
        refuse_token(res, "a read through an API bound beyond loopback");
        return 0;
    }
    const char *origin = http_request_header(req, "Origin");
    if (origin && !same_origin(origin, host)) {
        api->refused[API_REFUSED_ORIGIN]++;
        char shown[96];
        snprintf(shown, sizeof shown, "%s", origin);
        http_reply_error(res, 403, "forbidden",
                         "a change from the web page of another site (Origin %s) is refused",
                         shown);
        return 0;
    }
    const char *ct = http_request_header(req, "Content-Type");
    int text_body = req->method == HTTP_PUT && strcmp(req->path, API_PREFIX "diagram") == 0;
    if (!text_body && !is_json_type(ct) && (req->body_len > 0 || ct)) {
        api->refused[API_REFUSED_TYPE]++;
        char shown[96];
        snprintf(shown, sizeof shown, "%s", ct ? ct : "none");
        http_reply_error(res, 415, "bad_data",
                         "a change's body must be JSON with `Content-Type: application/json` "
                         "(got %s)",
                         shown);
        return 0;
    }
    if (!api->api_token[0]) {
        if (loopback) {
            return 1;
        }
        api->refused[API_REFUSED_TOKEN]++;
        http_reply_error(res, 403, "forbidden",
                         "changes through an API bound to %s need an api_token (a file named "
                         "by --api-token or the config, or DQD_API_TOKEN; DQD_TOKEN for dqctl)",
                         api->http_host);
        return 0;
    }
    if (!token_ok(api, req)) {
        api->refused[API_REFUSED_TOKEN]++;
        refuse_token(res, "this change");
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
        if (!api__is_read(req)) {
            api__method_not_allowed(req, res, "GET, HEAD");
            return;
        }
        static const char ok[] = "dqd is healthy.\n";
        http_reply_text(res, 200, "text/plain; charset=utf-8", ok, sizeof ok - 1);
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        if (!api__is_read(req)) {
            api__method_not_allowed(req, res, "GET, HEAD");
            return;
        }
        metrics(api, res);
        return;
    }
    if (strcmp(path, "/") == 0 || strncmp(path, "/assets/", 8) == 0) {
        web_route(req, res);
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
    if (strcmp(r, "events") == 0 && api->env.events) {
        if (api__is_read(req)) {
            events_subscribe(api->env.events, req, res);
        } else {
            api__method_not_allowed(req, res, "GET, HEAD");
        }
    } else if (strcmp(r, "status") == 0) {
        api__is_read(req) ? get_status(api, res) : api__method_not_allowed(req, res, "GET, HEAD");
    } else if (strcmp(r, "probes") == 0) {
        api__is_read(req) ? get_probes(api, res) : api__method_not_allowed(req, res, "GET, HEAD");
    } else if (strncmp(r, "probes/", 7) == 0) {
        probe_routes(api, r + 7, req, res);
    } else if (strcmp(r, "diagram") == 0) {
        if (api__is_read(req)) {
            diagram_reply(api, res);
        } else if (method_is(req, "PUT")) {
            int rc = core_load_diagram(api->env.core, req->body, req->body_len, NULL);
            if (rc == DQ_ESTORE || rc == DQ_ENOMEM) {
                /* it parses, but would not survive a restart: not loaded, try again */
                http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
                return;
            }
            if (rc != DQ_OK) {
                http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
                return;
            }
            diagram_reply(api, res);
        } else {
            api__method_not_allowed(req, res, "GET, HEAD, PUT");
        }
    } else if (strcmp(r, "otlp/spans") == 0) {
        api__is_read(req) ? get_otlp_spans(api, req, res)
                          : api__method_not_allowed(req, res, "GET, HEAD");
    } else if (strcmp(r, "wrapper/start") == 0 || strcmp(r, "wrapper/stop") == 0) {
        if (!method_is(req, "POST")) {
            api__method_not_allowed(req, res, "POST");
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
    snprintf(api->allowed_hosts, sizeof api->allowed_hosts, "%s",
             o->allowed_hosts ? o->allowed_hosts : "");
    api->public_reads = o->public_reads;
    if (gethostname(api->hostname, sizeof api->hostname - 1) != 0) {
        api->hostname[0] = '\0';
    }
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

void api_set_server(struct api *api, const struct http_server *http) {
    api->http = http;
}

void api_set_webhooks(struct api *api, const struct webhooks *w) {
    api->webhooks = w;
}

void api_destroy(struct api *api) {
    free(api);
}
