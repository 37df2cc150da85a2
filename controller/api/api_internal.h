/*
 * api_internal.h: what the API's files share. api_routes.c: the route table and dispatch;
 * api_access.c: who may ask (the refusals, worded and counted); api.c: create, status,
 * diagram, wrappers, the dashboard, events, OTLP spans; api_probes.c: probes and their ΔQs,
 * the event payloads; api_history.c: what the store keeps beyond the ring (windows over a
 * range, the heatmap, exemplars, marks); api_metrics.c: /metrics; api_log.c: the adaptive
 * loop's routes.
 * Nothing outside controller/api/ includes it.
 */
#ifndef DQ_API_INTERNAL_H
#define DQ_API_INTERNAL_H

#include <jansson.h>

#include "api.h"

#define API_PREFIX "/api/v1/"

enum {
    API_REFUSED_HOST,
    API_REFUSED_ORIGIN,
    API_REFUSED_TYPE,
    API_REFUSED_TOKEN,
    API_REFUSED_KINDS
};

struct api {
    struct api_env env;
    char version[32];
    char db[1024];
    char api_token[1024];
    char allowed_hosts[1024];
    char trace_url[1024];
    int openmetrics; /* while GET /metrics answers: the scraper asked for OpenMetrics */
    int public_reads;
    char hostname[256];                  /* gethostname(): accepted as a Host */
    uint64_t refused[API_REFUSED_KINDS]; /* requests refused, by reason (/metrics) */
    const struct http_server *http;      /* for its counters; may be NULL */
    const struct webhooks *webhooks;     /* for its counters; may be NULL */
    char clock[8];
    int64_t window_ms, lag_ms;
    char ingest_host[64], http_host[64];
    int ingest_port, http_port;
};

/* ---- the route table (api_routes.c) ------------------------------------------------------- */

/* A request as its route's handler sees it: the request, and what the pattern captured. */
struct api_call {
    const struct http_request *req;
    const char *probe; /* the pattern's {probe} segment, "" when it has none */
    const char *rest;  /* what the pattern's final * matched ("" too), "" when it has none */
};

typedef void (*api_route_fn)(struct api *api, const struct api_call *call,
                             struct http_response *res);

/* Methods of a route; API_GET answers HEAD too (the http module drops the body). */
enum { API_GET = 1, API_PUT = 2, API_POST = 4, API_DELETE = 8 };

/*
 * One route: its methods, its path pattern, its handler and its access class. A pattern is
 * literal text, where a segment {probe} stands for one path segment of 1 to PROBES_NAME_MAX
 * bytes (a probe's name, percent-decoded) and a final * for the rest of the path, slashes
 * included, possibly empty. The access class (http.h) says who may ask; a route without one
 * is answered 500.
 */
struct api_route {
    unsigned methods;
    const char *pattern;
    api_route_fn handler;
    enum http_access_class access;
};

/* The table, in the order it is matched (docs/api.md lists it too). */
extern const struct api_route api__routes[];
extern const size_t api__n_routes;

/* ---- who may ask (api_access.c) ------------------------------------------------------------ */

/* 1 when a request of class cls may go on, else res holds the refusal (counted in
 * api->refused). */
int api__authorized(struct api *api, enum http_access_class cls, const struct http_request *req,
                    struct http_response *res);

/* What a change (PUT, POST, DELETE) needs in the status: "token", "open" or "refused". */
const char *api__changes(const struct api *api);

/* ---- shared pieces -------------------------------------------------------------------------- */

/* "2026-11-22T03:17:49.123Z" (ISO 8601, UTC) from ns since the epoch. */
void api__iso8601(int64_t ns, char *buf, size_t cap);

/*
 * An enabled probe's silence as the status lists it: {probe, since_ns, since, windows,
 * origin, node, app, connected, kind, previous_run, hint, dqd_not_running} (origin, node,
 * app and kind null when the probe was never heard from; previous_run: the origin was a
 * connection of dqd's previous run; hint: what to do, or null; dqd_not_running: the gap
 * before this run when the silence began before it, else null); JSON null when p is not
 * silent. A new reference.
 */
json_t *api__silence_json(struct api *api, const struct probe *p);

/* The gap before this run of dqd: {"from_ns","from","to_ns","to","clean"}, or JSON null
 * when no previous run is known (a new store). */
json_t *api__downtime_json(struct api *api);
/* The origin of a silence: {id, label, node, app, connected, kind, previous_run, hint}, or
 * null when the probe was never heard from. */
json_t *api__origin_json(const struct probe_origin_info *o);

/* A probe's tracer figures as the API shows them ({"installed","calls","dropped",
 * "sampling","refused"}), or JSON null for a probe never bound to a function. */
json_t *api__trace_json(const struct probe *p);

/* The newest ring entry of p that has a ΔQ of the kind (1: calculated), or NULL. */
const struct probe_window *api__latest_of(struct probe *p, int calculated);

/* A named node's operator: {"kind": "sequence" | "all" | "first" | "choice" | "outcome"},
 * with {"weights": {"child": w}} for a choice (w the branch's probability, 0 … 1). */
json_t *api__operator_json(const struct dq_diagram *g, int node);

/* The probability of the branch of choice `node` holding named node `child` (a direct
 * child, or a named node of an anonymous branch); 0 when node is not a choice. */
double api__choice_weight(const struct dq_diagram *g, int node, int child);

/* The diagram as GET /api/v1/diagram answers it (a new reference). */
json_t *api__diagram_json(struct api *api);

/* The CPU one traced call costs the node, in ns: the caller's share (~1 µs) plus the
 * tracer's and the connection's, as the wrapper benchmark measured it (docs/PERFORMANCE.md,
 * "Probes bound to functions"). The why of a traced probe multiplies it by the calls
 * traced. */
#define API_TRACE_CALL_NS 2500.0

#define API_TEXT_MAX 200 /* bytes of a free-text field (requested_by) */

/*
 * 1 when a free-text field a person sends (requested_by) is at most API_TEXT_MAX bytes of
 * UTF-8 without control characters (C0, DEL, C1: what a terminal would act on); else 0
 * with a 422 in res naming the field.
 */
int api__text_ok(struct http_response *res, const char *field, const char *s, size_t len);

/* ---- the handlers the table names ----------------------------------------------------------- */

/* api.c */
void api__get_healthy(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_web(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_status(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_events(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_diagram(struct api *api, const struct api_call *call, struct http_response *res);
void api__put_diagram(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_otlp_spans(struct api *api, const struct api_call *call, struct http_response *res);
void api__post_wrapper_start(struct api *api, const struct api_call *call,
                             struct http_response *res);
void api__post_wrapper_stop(struct api *api, const struct api_call *call,
                            struct http_response *res);

/* api_probes.c */
void api__get_probes(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_probe(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_probe_dq(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_probe_dqs(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_probe_windows(struct api *api, const struct api_call *call,
                            struct http_response *res);
void api__put_probe(struct api *api, const struct api_call *call, struct http_response *res);
void api__delete_probe(struct api *api, const struct api_call *call, struct http_response *res);

/* api_history.c */
void api__get_probe_heatmap(struct api *api, const struct api_call *call,
                            struct http_response *res);
void api__get_probe_exemplars(struct api *api, const struct api_call *call,
                              struct http_response *res);
void api__get_marks(struct api *api, const struct api_call *call, struct http_response *res);
/* GET …/windows with from, to or step: p's windows over that range from the store. */
void api__windows_range(struct api *api, struct probe *p, const struct api_call *call,
                        struct http_response *res);

/* api_metrics.c */
void api__get_metrics(struct api *api, const struct api_call *call, struct http_response *res);

/* api_log.c */
void api__post_diagnose(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_investigations(struct api *api, const struct api_call *call,
                             struct http_response *res);
void api__get_investigation(struct api *api, const struct api_call *call,
                            struct http_response *res);
void api__delete_investigation(struct api *api, const struct api_call *call,
                               struct http_response *res);
void api__get_why(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_snapshots(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_snapshot(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_triggers(struct api *api, const struct api_call *call, struct http_response *res);
void api__get_probe_triggers(struct api *api, const struct api_call *call,
                             struct http_response *res);
void api__put_trigger(struct api *api, const struct api_call *call, struct http_response *res);

#endif /* DQ_API_INTERNAL_H */
