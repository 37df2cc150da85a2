/*
 * api_probes.c: the routes of what is observed, probe by probe: the probes and their
 * summaries, a probe's ΔQs and windows, a person's changes to a probe (PUT: checked whole,
 * then one core_update_probe; DELETE), and the payloads of the window and probe events.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "dq_search.h"

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

const struct probe_window *api__latest_of(struct probe *p, int calculated) {
    for (int b = 0; b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (calculated ? w->calculated != NULL : w->observed != NULL) {
            return w;
        }
    }
    return NULL;
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

/*
 * The probe's last window with instances, and how current its numbers are: "age_s", the
 * seconds from its end to now on dqd's clock; "stale", true when windows have closed
 * since without an instance of it (it was disabled, or went silent: the numbers are from
 * before, not its present).
 */
static json_t *last_window_json(struct api *api, struct probe *p) {
    const struct probe_window *w = api__latest_of(p, 0);
    json_t *o = window_json(api, w);
    if (json_is_object(o)) {
        double end = json_number_value(json_object_get(o, "end"));
        double now = (double)clock_now(core_clock(api->env.core)) * 1e-9;
        json_object_set_new(o, "age_s", json_real(now > end ? now - end : 0.0));
        json_object_set_new(o, "stale", json_boolean(w->wid < core_last_closed(api->env.core)));
    }
    return o;
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
        last_window_json(api, p), "qta", core_qta_json(p), "silent_since_ns",
        silent ? json_integer(si.since_ns) : json_null(), "silent_windows", (json_int_t)si.windows,
        "silent_origin", silent ? api__origin_json(&si.origin) : json_null(), "nodes",
        nodes_json(t, p));
    json_object_set_new(o, "servers", p->servers > 0 ? json_integer(p->servers) : json_null());
    json_object_set_new(o, "quiet_windows", core_quiet_json(p));
    json_object_set_new(o, "mfa", p->mfa[0] ? json_string(p->mfa) : json_null());
    json_object_set_new(o, "auto_range", json_boolean(p->auto_range));
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

#define API_SHARE_WINDOWS 10 /* windows the children's contributions are weighed over */

/* A child's statistics over the windows [from, to) of its ring, with its newest observed ΔQ
 * (for all/first-to-finish criticality). */
static void child_stats(struct probe *c, int64_t from, int64_t to, struct search_stats *s) {
    search_stats_init(s);
    for (int b = 0; c && b < c->ring_len; b++) {
        const struct probe_window *w = probes_ring_get(c, b);
        if (w->wid < from) {
            break;
        }
        if (w->wid < to && w->ok + w->fa + w->to + w->out > 0) {
            search_stats_add_window(s, w->ok, w->fa, w->to + w->out, w->mean, w->variance);
            if (!s->observed && w->observed) {
                s->observed = w->observed;
            }
        }
    }
}

/*
 * How p's children share its mean latency over its newest API_SHARE_WINDOWS windows, as the
 * adaptive search attributes a latency problem (search_attribute: a sequence by the
 * children's means, a choice by weight × mean, all- and first-to-finish by criticality):
 * {"problem", "windows", "total", "explained", "children": [{"name", "contribution",
 * "half_width", "share", "criticality"} or {"name", "missing": why}]}, or null for a
 * leaf, a node outside the diagram or one with too many children.
 */
static json_t *contributions_json(struct api *api, const struct dq_diagram *g, int node) {
    const struct dq_diagram_node *dn = dq_diagram_node(g, node);
    int kids[SEARCH_MAX_CHILDREN];
    size_t n = dq_diagram_probe_children(g, node, kids, SEARCH_MAX_CHILDREN);
    if (!dn || n == 0 || n > SEARCH_MAX_CHILDREN) {
        return json_null();
    }
    struct core *core = api->env.core;
    int64_t to = core_last_closed(core) + 1, from = to - API_SHARE_WINDOWS;
    struct search_child ch[SEARCH_MAX_CHILDREN];
    unsigned char include[SEARCH_MAX_CHILDREN];
    json_t *kids_json = json_array();
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        struct probe *c = core_node_probe(core, kids[i]);
        ch[i] = (struct search_child){.name = dq_diagram_node(g, kids[i])->name,
                                      .enabled = c && c->enabled,
                                      .weight = api__choice_weight(g, node, kids[i])};
        child_stats(c, from, to, &ch[i].stats);
        include[i] = ch[i].stats.present && ch[i].stats.n_ok > 0;
        any += include[i];
    }
    struct search_input in = {.name = dn->name,
                              .kind = dn->kind == DQ_NODE_REFERENCE ? DQ_NODE_SEQUENCE : dn->kind,
                              .problem = SEARCH_LATENCY,
                              .children = ch,
                              .n_children = n};
    struct probe *self = core_node_probe(core, node);
    child_stats(self, from, to, &in.stats);
    struct search_params params;
    search_params_init(&params);
    struct search_attribution at;
    int rc = any ? search_attribute(&in, &params, include, &at) : DQ_ENOTFOUND;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s}", "name", ch[i].name);
        if (rc == DQ_OK && at.c[i].included) {
            json_object_set_new(o, "contribution", json_real(at.c[i].value));
            json_object_set_new(o, "half_width", json_real(at.c[i].half_width));
            json_object_set_new(o, "share", json_real(at.c[i].share));
            json_object_set_new(o, "criticality", json_real(at.c[i].criticality));
        } else {
            json_object_set_new(o, "missing",
                                json_string(!ch[i].enabled ? "disabled"
                                            : !include[i]  ? "no successful instance in the windows"
                                                           : "not weighed"));
        }
        json_array_append_new(kids_json, o);
    }
    return json_pack("{s:s,s:i,s:o,s:o,s:o}", "problem", "latency", "windows", API_SHARE_WINDOWS,
                     "total", rc == DQ_OK && isfinite(at.total) ? json_real(at.total) : json_null(),
                     "explained",
                     rc == DQ_OK && isfinite(at.explained) ? json_real(at.explained) : json_null(),
                     "children", kids_json);
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
    int node = g ? dq_diagram_find(g, p->name) : -1;
    json_object_set_new(obj, "operator", node >= 0 ? api__operator_json(g, node) : json_null());
    json_object_set_new(obj, "contributions",
                        node >= 0 ? contributions_json(api, g, node) : json_null());
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

/* The probe the route names, or NULL with a 404 in res. */
static struct probe *named_probe(struct api *api, const struct api_call *call,
                                 struct http_response *res) {
    struct probe *p = probes_find(core_probes(api->env.core), call->probe, strlen(call->probe));
    if (!p) {
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", call->probe);
    }
    return p;
}

void api__get_probes(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)call;
    struct probe_table *t = core_probes(api->env.core);
    json_t *a = json_array();
    for (size_t i = 0; i < t->count; i++) {
        json_array_append_new(a, probe_summary(api, t->probes[i]));
    }
    http_reply_data(res, a);
}

void api__get_probe(struct api *api, const struct api_call *call, struct http_response *res) {
    struct probe *p = named_probe(api, call, res);
    if (p) {
        json_t *data = probe_summary(api, p);
        add_family(api, p, data);
        http_reply_data(res, data);
    }
}

/*
 * The newest calculated ΔQ w of p is older than p's newest observed one: the children
 * had no ΔQ in that window, and a calculated ΔQ from older windows would be compared with
 * an observed one of now. Answers 404 naming the children that are missing (returns 1).
 */
static int calc_is_stale(struct api *api, struct probe *p, const struct probe_window *w,
                         struct http_response *res) {
    const struct probe_window *obs = api__latest_of(p, 0);
    if (!obs || (w && w->wid >= obs->wid)) {
        return 0;
    }
    char missing[1024];
    size_t n = core_calc_missing(api->env.core, p, obs->wid, missing, sizeof missing);
    http_reply_error(res, 404, "not_found",
                     "probe %s has no calculated ΔQ for its latest window: %s%s had no data in "
                     "it, and a calculated ΔQ is made only from its children's ΔQs of the same "
                     "window%s",
                     p->name, n ? (n == 1 ? "its child " : "its children ") : "its children",
                     n ? missing : "", w ? " (the newest there is, older: ?window=0)" : "");
    return 1;
}

/* GET /api/v1/probes/NAME/dq?kind=observed|calculated&window=latest|N */
void api__get_probe_dq(struct api *api, const struct api_call *call, struct http_response *res) {
    const struct http_request *req = call->req;
    struct probe *p = named_probe(api, call, res);
    if (!p) {
        return;
    }
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
    int latest = !win || strcmp(win, "latest") == 0; /* not an explicit 0: the newest one */
    if (calculated && latest && calc_is_stale(api, p, w, res)) {
        return;
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

/* GET /api/v1/probes/NAME/dqs: the newest observed and calculated ΔQs (the dashboard); no
 * calculated one older than the observed (its children's data is missing: named in
 * "calculated_missing"). */
void api__get_probe_dqs(struct api *api, const struct api_call *call, struct http_response *res) {
    struct probe *p = named_probe(api, call, res);
    if (p) {
        const struct probe_window *obs = api__latest_of(p, 0), *calc = api__latest_of(p, 1);
        json_t *missing = json_array();
        if (obs && (!calc || calc->wid < obs->wid)) {
            calc = NULL; /* none, or not of the same time as the observed one */
            char names[1024];
            if (core_calc_missing(api->env.core, p, obs->wid, names, sizeof names) > 0) {
                for (char *s = names, *e; s && *s; s = e ? e + 2 : NULL) {
                    e = strstr(s, ", ");
                    json_array_append_new(missing,
                                          e ? json_stringn(s, (size_t)(e - s)) : json_string(s));
                }
            }
        }
        http_reply_data(res, json_pack("{s:s,s:o,s:o,s:o}", "probe", p->name, "observed",
                                       dq_brief(api, obs, 0), "calculated", dq_brief(api, calc, 1),
                                       "calculated_missing", missing));
    }
}

/* GET /api/v1/probes/NAME/windows: the ring's windows, oldest first; with from, to or step
 * the store's over a range (api_history.c). */
void api__get_probe_windows(struct api *api, const struct api_call *call,
                            struct http_response *res) {
    struct probe *p = named_probe(api, call, res);
    if (!p) {
        return;
    }
    const struct http_request *req = call->req;
    if (http_request_query(req, "from") || http_request_query(req, "to") ||
        http_request_query(req, "step")) {
        api__windows_range(api, p, call, res); /* the store's, over a range */
        return;
    }
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
        return json_pack("{s:s,s:o}", "change", change, "diagram", api__diagram_json(api));
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

/* The values of a PUT body whose fields have the right types, checked into u (its dMax
 * read already): 1, or 0 with a 422 in res. */
static int probe_put_values(struct core_probe_update *u, json_t *jd, json_t *jb, json_t *js,
                            json_t *jq, struct http_response *res) {
    /* numbers are checked whole, before any narrowing: 4294967297 bins is not 1 bin */
    if (jd && !(u->dmax_ms >= API_MIN_DMAX_MS && u->dmax_ms <= API_MAX_DMAX_MS)) {
        http_reply_error(res, 422, "unprocessable",
                         "dmax_ms %g is out of range [%g, %g] ms (the grid's finest and widest "
                         "horizons)",
                         u->dmax_ms, API_MIN_DMAX_MS, API_MAX_DMAX_MS);
        return 0;
    }
    if (jb && (json_integer_value(jb) < DQ_MIN_BINS || json_integer_value(jb) > DQ_MAX_BINS)) {
        http_reply_error(res, 422, "unprocessable",
                         "bins %" JSON_INTEGER_FORMAT " is out of range [%d, %d]",
                         json_integer_value(jb), DQ_MIN_BINS, DQ_MAX_BINS);
        return 0;
    }
    u->bins = jb ? (int)json_integer_value(jb) : 0;
    json_int_t servers = js && !json_is_null(js) ? json_integer_value(js) : 0;
    if (js && !json_is_null(js) && (servers < 1 || servers > 100000)) {
        http_reply_error(res, 422, "unprocessable",
                         "servers must be an integer in [1, 100000], or null to unset");
        return 0;
    }
    u->servers = (int)servers;
    if (u->qta_set && core_qta_from_json(jq, &u->qta) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        return 0;
    }
    return 1;
}

/*
 * A PUT /api/v1/probes/NAME body checked whole into u (nothing changes here): 1, or 0 with
 * the refusal in res (400 for the shape, 422 for a value).
 */
static int probe_put_parse(const struct http_request *req, struct core_probe_update *u,
                           struct http_response *res) {
    json_error_t err;
    json_t *body = json_loadb(req->body, req->body_len, 0, &err);
    int ok = 0;
    if (!body || !json_is_object(body)) {
        http_reply_error(res, 400, "bad_data", "body must be a JSON object: %s",
                         body ? "not an object" : err.text);
        json_decref(body);
        return 0;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "dmax_ms") && strcmp(key, "bins") && strcmp(key, "enabled") &&
            strcmp(key, "qta") && strcmp(key, "servers")) {
            http_reply_error(res, 400, "bad_data",
                             "unknown field \"%s\" (dmax_ms, bins, enabled, qta, servers)", key);
            json_decref(body);
            return 0;
        }
    }
    json_t *jd = json_object_get(body, "dmax_ms"), *jb = json_object_get(body, "bins");
    json_t *je = json_object_get(body, "enabled"), *jq = json_object_get(body, "qta");
    json_t *js = json_object_get(body, "servers");
    double dmax_s = 0.0;
    if ((jd && !json_is_number(jd) && !json_is_string(jd)) || (jb && !json_is_integer(jb)) ||
        (je && !json_is_boolean(je)) || (js && !json_is_integer(js) && !json_is_null(js))) {
        http_reply_error(res, 400, "bad_data",
                         "dmax_ms must be a number (ms) or a string with a unit (\"1.5s\"), "
                         "bins and servers integers (servers may be null), enabled a boolean");
    } else if (json_is_string(jd) &&
               dq_parse_duration(json_string_value(jd), json_string_length(jd), 1e-3, 0, &dmax_s) !=
                   DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "dmax_ms: %s", dq_last_error());
    } else {
        *u = (struct core_probe_update){.has_grid = jd || jb,
                                        .dmax_ms = !jd                  ? 0
                                                   : json_is_string(jd) ? dmax_s * 1e3
                                                                        : json_number_value(jd),
                                        .has_qta = jq != NULL,
                                        .qta_set = jq && !json_is_null(jq),
                                        .has_servers = js != NULL,
                                        .has_enabled = je != NULL,
                                        .enabled = json_is_true(je)};
        ok = probe_put_values(u, jd, jb, js, jq, res);
    }
    json_decref(body);
    return ok;
}

/* PUT /api/v1/probes/NAME[?create=1]: the body's settings as one change (core_update_probe):
 * all of them are made, or none (503 when the store does not take them). */
void api__put_probe(struct api *api, const struct api_call *call, struct http_response *res) {
    struct core *core = api->env.core;
    const char *name = call->probe;
    struct core_probe_update u;
    if (!probe_put_parse(call->req, &u, res)) {
        return;
    }
    struct probe *p = probes_find(core_probes(core), name, strlen(name));
    const char *create = http_request_query(call->req, "create");
    if (!p && !(create && (strcmp(create, "1") == 0 || strcmp(create, "true") == 0))) {
        http_reply_error(res, 404, "not_found",
                         "no probe named \"%s\": it is not in the diagram and no wrapper has "
                         "reported it (see GET /api/v1/probes); to register it anyway, PUT "
                         "with ?create=1 (dqctl: --create)",
                         name);
        return;
    }
    int created = !p;
    if (!p && probes_get(core_probes(core), name, strlen(name), &p) != DQ_OK) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        return;
    }
    json_t *report = json_array();
    u.report = report;
    int commanded = 0;
    int rc = core_update_probe(core, p, &u, &commanded);
    if (rc) {
        if (rc == DQ_ERANGE || rc == DQ_EINVAL) {
            http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        } else {
            http_reply_error(res, 503, "unavailable",
                             "the store did not take the change (%s); what is answered by GET "
                             "/api/v1/probes/%s is what dqd has and keeps",
                             dq_last_error(), name);
        }
        if (created) {
            probes_remove(core_probes(core), p);
        }
        json_decref(report);
        return;
    }
    json_t *warnings = json_array();
    if (p->has_qta && (u.has_qta || u.has_grid)) {
        qta_warnings(p, warnings);
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
void api__delete_probe(struct api *api, const struct api_call *call, struct http_response *res) {
    const char *name = call->probe;
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
