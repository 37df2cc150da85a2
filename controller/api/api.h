/*
 * api.h: dqd's HTTP API (docs/api.md): JSON in the Prometheus envelope under /api/v1/,
 * the Prometheus text exposition at /metrics and /-/healthy. The routes read what the
 * core observes, ask the adaptive loop to act, and answer questions about the past from
 * the store; they never block and never write to a wrapper themselves (a change goes
 * through the core, which records it and hands its command to the sources).
 *
 * Every request's Host must be a loopback name, an IP address, this machine's name or one
 * of allowed_hosts (DNS rebinding), else 403. Changes (anything but GET and HEAD) need the
 * api_token when one is set, are refused when the API listens beyond loopback without one,
 * are refused when their Origin is another site's (CSRF), and a body must say
 * application/json (a text/plain or form POST is 415), except the .dq text of PUT
 * /api/v1/diagram. Beyond loopback, reads need the token too unless public_reads. GET / and
 * /assets/… serve the dashboard's embedded files (web.h); GET /api/v1/events is the live
 * event stream (events.h). Every route is one entry of a table (api_routes.c) with its
 * methods, path pattern, handler and access class (http.h, "who may ask").
 */
#ifndef DQ_API_H
#define DQ_API_H

#include <stdint.h>

#include "adapt.h"
#include "core.h"
#include "events.h"
#include "http.h"
#include "ingest.h"
#include "store.h"
#include "webhook.h"

struct api;

/* What the routes work on; all borrowed, all must outlive the API. */
struct api_env {
    struct core *core;
    struct adapt *adapt;
    struct store *store;
    struct events *events; /* GET /api/v1/events; NULL: a GET of it answers 404 */
    /* The sources of instances (dqd's array: an entry turns NULL once its source closes),
     * each listed in the status and measured in /metrics through ingest.h; the OTLP
     * receiver among them (otlp_of) serves GET /api/v1/otlp/spans. */
    struct ingest_source *const *sources;
    int n_sources;
};

/* What /api/v1/status reports about the daemon, and the token for changes. Copied. */
struct api_options {
    const char *version;       /* "0.1.0" */
    const char *db;            /* the store's path */
    const char *api_token;     /* "" or NULL: none */
    const char *allowed_hosts; /* extra Host names, comma-separated ("" or NULL: none) */
    int public_reads;          /* 1: reads beyond loopback need no token */
    const char *clock;         /* "wall" or "sim" (--clock) */
    int64_t window_ms, lag_ms;
    const char *trace_url; /* a tracing UI's link with {trace_id} ("" or NULL: none) */
};

/* Creates the API. DQ_ENOMEM. */
int api_create(const struct api_env *env, const struct api_options *o, struct api **out);

/* Where dqd listens, once bound: "HOST:PORT" of ingest and of the API (its host decides
 * whether changes need a token). */
void api_set_addresses(struct api *api, const char *ingest_host, int ingest_port,
                       const char *http_host, int http_port);

/* The server that serves the API (borrowed; NULL: none): its counters go to /metrics. */
void api_set_server(struct api *api, const struct http_server *http);

/* The webhooks' sender (borrowed; NULL: none): its counters go to /metrics. */
void api_set_webhooks(struct api *api, const struct webhooks *w);

/* Frees the API. NULL is a no-op. */
void api_destroy(struct api *api);

/*
 * The payload of a `window` event once window wid closed (a new reference): {"wid",
 * "start", "end", "probes": [{"name", "n", "ok", "fa", "to", "mean", "p50", "p95", "p99",
 * "lost", "no_data"}]}, one entry per probe with something to say about that window (an
 * observed ΔQ, or no data while enabled), as `last_window` in GET /api/v1/probes.
 */
json_t *api_window_event(struct api *api, int64_t wid);

/*
 * The payload of a `probe` event (a new reference): {"probe", "change", "summary"} with
 * the probe's summary as GET /api/v1/probes/NAME answers it (null for "delete"); for
 * p NULL (change "diagram"): the diagram as GET /api/v1/diagram answers it.
 */
json_t *api_probe_event(struct api *api, const struct probe *p, const char *change);

/* The request handler (http_handler_fn; ctx is the struct api). */
void api_handle(void *ctx, const struct http_request *req, struct http_response *res);

#endif /* DQ_API_H */
