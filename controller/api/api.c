/*
 * api.c: the API's life (create, addresses, counters' sources) and the routes of the
 * daemon as a whole: status, the diagram, start/stop of the wrappers, the health check,
 * the dashboard's files, the live events, the OTLP spans kept for `dqctl diagram --infer`
 * (see api.h; the table is in api_routes.c).
 */
#include "api_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dq_error.h"
#include "otlp.h"
#include "web.h"

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
json_t *api__origin_json(const struct probe_origin_info *o) {
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

/* The live event hub's counters: {"clients", "connects", "dropped", "published"}. */
static json_t *events_json(const struct events *ev) {
    struct events_stats st;
    events_get_stats(ev, &st);
    return json_pack("{s:I,s:I,s:I,s:I}", "clients", (json_int_t)st.clients, "connects",
                     (json_int_t)st.connects, "dropped", (json_int_t)st.dropped, "published",
                     (json_int_t)st.published);
}

void api__get_status(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)call;
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
    if (api->env.adapt) {
        uint64_t min_n;
        uint32_t min_w;
        adapt_min_sample(api->env.adapt, &min_n, &min_w);
        json_object_set_new(data, "min_instances", json_integer((json_int_t)min_n));
        json_object_set_new(data, "min_windows", json_integer((json_int_t)min_w));
    }
    json_t *sources = json_array();
    for (int i = 0; i < api->env.n_sources; i++) {
        if (api->env.sources[i]) {
            json_array_append_new(sources, ingest_describe(api->env.sources[i]));
        }
    }
    json_object_set_new(data, "sources", sources);
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
    json_object_set_new(data, "changes", json_string(api__changes(api)));
    /* dqd's clock (simulated time with --clock sim), and the tracing UI's link */
    json_object_set_new(data, "now", json_real((double)clock_now(core_clock(core)) * 1e-9));
    json_object_set_new(data, "trace_url",
                        api->trace_url[0] ? json_string(api->trace_url) : json_null());
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
    http_reply_data(res, data);
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

double api__choice_weight(const struct dq_diagram *g, int node, int child) {
    const struct dq_diagram_node *dn = dq_diagram_node(g, node);
    if (!dn || dn->kind != DQ_NODE_CHOICE || !dn->weights) {
        return 0.0;
    }
    double w = 0.0;
    for (size_t b = 0; b < dn->n_children; b++) {
        int kids[256];
        int c = dn->children[b];
        size_t n = dq_diagram_node(g, c)->name ? 0 : dq_diagram_probe_children(g, c, kids, 256);
        int hit = c == child;
        for (size_t k = 0; k < n && k < 256 && !hit; k++) {
            hit = kids[k] == child;
        }
        w += hit ? dn->weights[b] : 0.0;
    }
    return w;
}

json_t *api__operator_json(const struct dq_diagram *g, int node) {
    const struct dq_diagram_node *dn = dq_diagram_node(g, node);
    enum dq_node_kind kind = dn->kind == DQ_NODE_REFERENCE ? DQ_NODE_SEQUENCE : dn->kind;
    json_t *o = json_pack("{s:s}", "kind", dq_node_kind_name(kind));
    if (kind == DQ_NODE_CHOICE) {
        int kids[256];
        size_t n = dq_diagram_probe_children(g, node, kids, 256);
        json_t *w = json_object();
        for (size_t k = 0; k < n && k < 256; k++) {
            json_object_set_new(w, dq_diagram_node(g, kids[k])->name,
                                json_real(api__choice_weight(g, node, kids[k])));
        }
        json_object_set_new(o, "weights", w);
    }
    return o;
}

json_t *api__diagram_json(struct api *api) {
    struct core *core = api->env.core;
    const struct dq_diagram *g = core_diagram(core);
    if (!g) {
        return json_pack("{s:n,s:n,s:[],s:[],s:{},s:{},s:[],s:i}", "path", "text", "roots",
                         "probes", "children", "operators", "warnings", "warnings_total", 0);
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
    json_t *ops = json_object();
    for (size_t j = 0; j < dq_diagram_probe_count(g); j++) {
        int i = dq_diagram_probe(g, j);
        json_object_set_new(ops, dq_diagram_node(g, i)->name, api__operator_json(g, i));
    }
    json_object_set_new(data, "operators", ops);
    /* what the model accepted but is worth a look (dqctl model's warnings) */
    json_t *warnings = json_array();
    for (size_t j = 0; j < dq_diagram_warning_count(g); j++) {
        const struct dq_diagram_error *w = dq_diagram_warning(g, j);
        json_array_append_new(warnings, json_pack("{s:i,s:i,s:s}", "line", w->line, "column",
                                                  w->column, "message", w->text));
    }
    json_object_set_new(data, "warnings", warnings);
    json_object_set_new(data, "warnings_total",
                        json_integer((json_int_t)dq_diagram_warning_total(g)));
    return data;
}

void api__get_diagram(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)call;
    http_reply_data(res, api__diagram_json(api));
}

/* PUT /api/v1/diagram: the .dq text replaces the diagram once the store has it. */
void api__put_diagram(struct api *api, const struct api_call *call, struct http_response *res) {
    const struct http_request *req = call->req;
    int rc = core_load_diagram(api->env.core, req->body, req->body_len, NULL);
    if (rc == DQ_ESTORE || rc == DQ_ENOMEM) {
        /* it parses, but would not survive a restart: not loaded, try again */
        http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
    } else if (rc != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
    } else {
        http_reply_data(res, api__diagram_json(api));
    }
}

/* POST /api/v1/wrapper/start and stop: start_stub / stop_stub to every wrapper. */
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

void api__post_wrapper_start(struct api *api, const struct api_call *call,
                             struct http_response *res) {
    (void)call;
    wrapper_run(api, 1, res);
}

void api__post_wrapper_stop(struct api *api, const struct api_call *call,
                            struct http_response *res) {
    (void)call;
    wrapper_run(api, 0, res);
}

void api__get_healthy(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)api, (void)call;
    static const char ok[] = "dqd is healthy.\n";
    http_reply_text(res, 200, "text/plain; charset=utf-8", ok, sizeof ok - 1);
}

/* GET /api/v1/events: the live event stream (events.h); 404 without a hub. */
void api__get_events(struct api *api, const struct api_call *call, struct http_response *res) {
    if (!api->env.events) {
        http_reply_error(res, 404, "not_found", "no such route: %s", call->req->path);
        return;
    }
    events_subscribe(api->env.events, call->req, res);
}

/* GET /api/v1/otlp/spans?service=S&limit=N: the newest spans kept for `dqctl diagram
 * --infer`. */
void api__get_otlp_spans(struct api *api, const struct api_call *call, struct http_response *res) {
    const struct http_request *req = call->req;
    struct otlp *otlp = NULL; /* the receiver among the sources */
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

/*
 * GET / and /assets/…: the dashboard's embedded files. Each has an ETag (a changed dqd
 * serves changed files) and must be revalidated (no-cache): If-None-Match gets a 304. The
 * page may load nothing but dqd's own files and talk to nothing but dqd: its
 * Content-Security-Policy says so to the browser.
 */
void api__get_web(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)api;
    const struct http_request *req = call->req;
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
    snprintf(api->trace_url, sizeof api->trace_url, "%s", o->trace_url ? o->trace_url : "");
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
