/*
 * api_metrics.c: GET /metrics, the Prometheus text exposition (docs/api.md, "GET /metrics";
 * running.md, "Monitoring"): one function per family, in the order of the families table
 * at the end, which is the order of the exposition.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "log.h"

typedef void (*family_fn)(struct api *api, struct http_response *res);

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

/* ---- what is observed ------------------------------------------------------------------ */

static void instances(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
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
}

/*
 * With OpenMetrics, a bucket line's exemplar: of the newest window p kept exemplars for, the
 * slowest successful one with a trace or instance id that falls in bucket j (± its trace id
 * and instance id as span_id, its duration and when it ended), or "" (printed after the
 * count, before the newline).
 */
static void bucket_exemplar(const struct api *api, const struct probe *p, int j, char *buf,
                            size_t cap) {
    const struct probe_exemplar *e;
    int64_t wid;
    int n = api->openmetrics ? probes_exemplars_newest(p, &wid, &e) : 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) { /* slowest first: the first that falls in j */
        int b = probes_bucket_of(e[i].d_ns);
        if (e[i].status != PROBE_OK || (b < PROBES_HIST_BUCKETS ? b : PROBES_HIST_BUCKETS) != j ||
            (!e[i].trace_len && !e[i].id_len)) {
            continue;
        }
        /* OpenMetrics allows 128 characters of exemplar labels: ids of 64 digits each would
         * not fit both, the trace id wins */
        int with_id = e[i].id_len && (e[i].trace_len + e[i].id_len + 15 <= 128 || !e[i].trace_len);
        snprintf(buf, cap, " # {%s%.*s%s%s%.*s%s} %.9g %.3f", e[i].trace_len ? "trace_id=\"" : "",
                 e[i].trace_len, e[i].trace, e[i].trace_len ? "\"" : "",
                 with_id ? (e[i].trace_len ? ",span_id=\"" : "span_id=\"") : "",
                 with_id ? e[i].id_len : 0, e[i].id, with_id ? "\"" : "", (double)e[i].d_ns * 1e-9,
                 (double)e[i].end_ns * 1e-9);
        return;
    }
}

static void durations(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    char ex[320];
    http_response_printf(
        res,
        "# HELP dqd_duration_seconds Durations of successful instances, on "
        "power-of-two edges (the widths of probe grids).\n# TYPE dqd_duration_seconds histogram\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        uint64_t cum = 0;
        for (int j = 0; j < PROBES_HIST_BUCKETS; j++) {
            cum += p->hist[j];
            bucket_exemplar(api, p, j, ex, sizeof ex);
            http_response_printf(
                res, "dqd_duration_seconds_bucket{probe=\"%s\",le=\"%.9g\"} %" PRIu64 "%s\n",
                p->name, probes_bucket_le(j), cum, ex);
        }
        bucket_exemplar(api, p, PROBES_HIST_BUCKETS, ex, sizeof ex);
        http_response_printf(res,
                             "dqd_duration_seconds_bucket{probe=\"%s\",le=\"+Inf\"} %" PRIu64 "%s\n"
                             "dqd_duration_seconds_sum{probe=\"%s\"} %.9g\n"
                             "dqd_duration_seconds_count{probe=\"%s\"} %" PRIu64 "\n",
                             p->name, p->total_ok, ex, p->name, p->total_sum, p->name, p->total_ok);
    }
}

static void enabled(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    http_response_printf(res, "# HELP dqd_probe_enabled 1 when dqd has the probe enabled.\n"
                              "# TYPE dqd_probe_enabled gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        http_response_printf(res, "dqd_probe_enabled{probe=\"%s\"} %d\n", p->name, p->enabled);
    }
}

/* dqd_probe_silent, dqd_probe_silent_seconds and dqd_probes_silent. */
static void silence(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    int64_t now = clock_now(core_clock(api->env.core));
    size_t n_silent = 0;
    struct probe_silence si;
    http_response_printf(res, "# HELP dqd_probe_silent 1 when an enabled probe's source "
                              "disconnected or went silent (its last windows were no data).\n"
                              "# TYPE dqd_probe_silent gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
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
                         "dqd_probes_silent %zu\n",
                         n_silent);
}

static void split_failures(struct api *api, struct http_response *res) {
    http_response_printf(res,
                         "# HELP dqd_node_split_failures_total Probes that could not get "
                         "per-node storage when a second node reported them.\n"
                         "# TYPE dqd_node_split_failures_total counter\n"
                         "dqd_node_split_failures_total %" PRIu64 "\n",
                         core_probes(api->env.core)->split_failures);
}

/* dqd_ingest_instances_total, dqd_ingest_rejected_total, dqd_probes_evicted_total,
 * dqd_probes_idle_removed_total. */
static void ingest(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    struct core_stats cs;
    core_get_stats(api->env.core, &cs);
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
        "# HELP dqd_probes_evicted_total Probes only observed (seen in instances or spans, "
        "never in the diagram, configured or enabled by a person or the loop) evicted to make "
        "room for new names.\n"
        "# TYPE dqd_probes_evicted_total counter\n"
        "dqd_probes_evicted_total %" PRIu64 "\n"
        "# HELP dqd_probes_idle_removed_total Probes only observed removed after "
        "idle_probe_windows windows without an instance.\n"
        "# TYPE dqd_probes_idle_removed_total counter\n"
        "dqd_probes_idle_removed_total %" PRIu64 "\n",
        cs.instances_total, t->late, t->future, t->full, t->name_rate, t->evicted, t->idle);
}

/* dqd_windows_closed_total, dqd_store_errors_total. */
static void windows_store(struct api *api, struct http_response *res) {
    struct core_stats cs;
    core_get_stats(api->env.core, &cs);
    http_response_printf(res,
                         "# HELP dqd_windows_closed_total Windows closed.\n"
                         "# TYPE dqd_windows_closed_total counter\n"
                         "dqd_windows_closed_total %" PRIu64 "\n"
                         "# HELP dqd_store_errors_total Failed store writes.\n"
                         "# TYPE dqd_store_errors_total counter\n"
                         "dqd_store_errors_total %" PRIu64 "\n",
                         cs.windows_closed, cs.store_errors);
}

static void refused(struct api *api, struct http_response *res) {
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
}

/* The API's server: dqd_http_connections_open, dqd_http_connections_closed_total,
 * dqd_http_pending_bytes. */
static void http_server(struct api *api, struct http_response *res) {
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
}

static void webhooks(struct api *api, struct http_response *res) {
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
}

static void log_suppressed(struct api *api, struct http_response *res) {
    (void)api;
    http_response_printf(res,
                         "# HELP dqd_log_suppressed_total Log lines not written because their "
                         "call site wrote %d already that second (the log says how many).\n"
                         "# TYPE dqd_log_suppressed_total counter\n"
                         "dqd_log_suppressed_total %" PRIu64 "\n",
                         LOG_SITE_BURST, log_suppressed_total());
}

/* ---- what a Prometheus user alerts on (docs/running.md, "Monitoring") -------------------- */

static void build_info(struct api *api, struct http_response *res) {
    http_response_printf(res,
                         "# HELP dqd_build_info dqd's version and clock; always 1.\n"
                         "# TYPE dqd_build_info gauge\n"
                         "dqd_build_info{version=\"%s\",clock=\"%s\"} 1\n",
                         api->version, api->clock);
}

static void metrics_trigger(void *ctx, const struct adapt_trigger_view *t) {
    http_response_printf(ctx, "dqd_trigger_fired{probe=\"%s\",kind=\"%s\"} %d\n", t->probe, t->kind,
                         t->enabled && t->fired);
}

/* dqd_trigger_fired, dqd_investigations_open, dqd_verdicts_total (with an adaptive loop). */
static void adaptive_loop(struct api *api, struct http_response *res) {
    if (!api->env.adapt) {
        return;
    }
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

/* QTA margins of the newest observed window. */
static void qta_margins(struct api *api, struct http_response *res) {
    struct probe_table *t = core_probes(api->env.core);
    http_response_printf(res, "# HELP dqd_qta_margin The worst margin of a probe's QTA on its "
                              "newest observed window with instances: min over the points of "
                              "F(t) - p, and max_lost - lost; below 0 the QTA is violated.\n"
                              "# TYPE dqd_qta_margin gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        const struct probe_window *w = api__latest_of(p, 0);
        struct dq_qta_result r;
        if (p->has_qta && w && dq_qta_eval(w->observed, &p->qta, &r) == DQ_OK) {
            http_response_printf(res, "dqd_qta_margin{probe=\"%s\"} %.9g\n", p->name, r.margin);
        }
    }
}

/* Quantiles of the newest observed and calculated ΔQs. */
static void quantiles(struct api *api, struct http_response *res) {
    static const double qs[] = {0.5, 0.95, 0.99};
    static const char *const qn[] = {"0.5", "0.95", "0.99"};
    struct probe_table *t = core_probes(api->env.core);
    http_response_printf(res, "# HELP dqd_delay_quantile_seconds Quantiles of the newest closed "
                              "window's observed and calculated ΔQ; +Inf when the tangible mass "
                              "never reaches the quantile (too much lost).\n"
                              "# TYPE dqd_delay_quantile_seconds gauge\n");
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        for (int kind = 0; kind < 2; kind++) {
            const struct probe_window *w = api__latest_of(p, kind);
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
}

/* The wrappers, one series per peer whatever the reconnects. */
static void wrappers(struct api *api, struct http_response *res) {
    struct core_peer peers[CORE_MAX_PEERS];
    size_t n = core_peers(api->env.core, peers, CORE_MAX_PEERS);
    int connected = 0;
    for (size_t i = 0; i < n; i++) {
        connected += peers[i].connected;
    }
    const char *label = NULL;
    int64_t down = core_last_link_down(api->env.core, &label);
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
    char peer[2 * CORE_PEER_MAX];
    for (size_t i = 0; i < n; i++) {
        label_value(peers[i].peer, peer, sizeof peer);
        http_response_printf(res, "dqd_peer_connected{peer=\"%s\"} %d\n", peer, peers[i].connected);
    }
    http_response_printf(res, "# HELP dqd_peer_protocol_errors_total Bad lines per peer (links "
                              "gone included, so a reconnect continues the series).\n"
                              "# TYPE dqd_peer_protocol_errors_total counter\n");
    for (size_t i = 0; i < n; i++) {
        label_value(peers[i].peer, peer, sizeof peer);
        http_response_printf(res, "dqd_peer_protocol_errors_total{peer=\"%s\"} %" PRIu64 "\n", peer,
                             peers[i].errors);
    }
}

/* ---- the exposition ---------------------------------------------------------------------- */

/* Every source's own families (ingest.h: its connections, its errors). */
static void sources(struct api *api, struct http_response *res) {
    for (int i = 0; i < api->env.n_sources; i++) {
        if (api->env.sources[i]) {
            ingest_metrics(api->env.sources[i], res);
        }
    }
}

static const family_fn families[] = {
    instances,     durations,     enabled,     silence,   split_failures, ingest,
    windows_store, refused,       http_server, webhooks,  log_suppressed, sources,
    build_info,    adaptive_loop, qta_margins, quantiles, wrappers,
};

/* 1 when the scraper asks for OpenMetrics (Prometheus does when its exemplar storage is on:
 * Accept: application/openmetrics-text; version=1.0.0, …). */
static int wants_openmetrics(const struct http_request *req) {
    const char *accept = http_request_header(req, "Accept");
    return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

/* 1 when line [p, end) is "# TYPE|HELP NAME …" for a NAME ending in _total of a counter
 * (one of the counters' TYPE lines in body); *name_end is where NAME ends. */
static int counter_meta(const char *body, size_t len, const char *p, const char *end,
                        const char **name_end) {
    if (end - p < 8 || p[0] != '#' || (memcmp(p, "# TYPE ", 7) && memcmp(p, "# HELP ", 7))) {
        return 0;
    }
    const char *name = p + 7, *sp = memchr(name, ' ', (size_t)(end - name));
    if (!sp || sp - name < 7 || memcmp(sp - 6, "_total", 6) != 0) {
        return 0;
    }
    *name_end = sp;
    /* its TYPE line says counter */
    char want[256];
    int n = snprintf(want, sizeof want, "# TYPE %.*s counter\n", (int)(sp - name), name);
    if (n <= 0 || (size_t)n >= sizeof want) {
        return 0;
    }
    for (const char *q = body; q && q < body + len; q = memchr(q, '\n', (size_t)(body + len - q))) {
        q += q != body;
        if ((size_t)(body + len - q) >= (size_t)n && memcmp(q, want, (size_t)n) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * The text exposition as OpenMetrics 1.0: a counter's family is named without its _total
 * (its samples keep it), and the exposition ends with # EOF. The exemplars are in the
 * bucket lines already. DQ_ENOMEM leaves res as it was.
 */
static int to_openmetrics(struct http_response *res) {
    const char *body = res->body ? res->body : "";
    size_t len = res->len;
    char *out = malloc(len + 16);
    if (!out) {
        return DQ_ENOMEM;
    }
    size_t o = 0;
    for (const char *p = body; p < body + len;) {
        const char *nl = memchr(p, '\n', (size_t)(body + len - p));
        const char *end = nl ? nl + 1 : body + len, *name_end;
        if (counter_meta(body, len, p, end, &name_end)) {
            memcpy(out + o, p, (size_t)(name_end - 6 - p)); /* without _total */
            o += (size_t)(name_end - 6 - p);
            memcpy(out + o, name_end, (size_t)(end - name_end));
            o += (size_t)(end - name_end);
        } else {
            memcpy(out + o, p, (size_t)(end - p));
            o += (size_t)(end - p);
        }
        p = end;
    }
    memcpy(out + o, "# EOF\n", 6);
    o += 6;
    http_response_clear(res);
    int rc = http_response_append(res, out, o);
    free(out);
    return rc;
}

void api__get_metrics(struct api *api, const struct api_call *call, struct http_response *res) {
    api->openmetrics = wants_openmetrics(call->req);
    http_response_set_type(res, api->openmetrics
                                    ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                    : "text/plain; version=0.0.4; charset=utf-8");
    res->status = 200;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        families[i](api, res);
    }
    if (api->openmetrics && to_openmetrics(res) != DQ_OK) {
        http_reply_error(res, 500, "internal", "no memory for the OpenMetrics exposition");
    }
    api->openmetrics = 0;
}
