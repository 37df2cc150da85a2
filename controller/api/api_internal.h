/*
 * api_internal.h: what the API's two files share (api.c: dispatch, status, probes,
 * diagram, wrappers, /metrics; api_log.c: the adaptive loop's routes). Nothing outside
 * controller/api/ includes it.
 */
#ifndef DQ_API_INTERNAL_H
#define DQ_API_INTERNAL_H

#include <jansson.h>

#include "api.h"

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

/* A probe's tracer figures as the API shows them ({"installed","calls","dropped",
 * "sampling","refused"}), or JSON null for a probe never bound to a function. */
json_t *api__trace_json(const struct probe *p);

/* The CPU one traced call costs the node, in ns: the caller's share (~1 µs) plus the
 * tracer's and the connection's, as the wrapper benchmark measured it (docs/PERFORMANCE.md,
 * "Probes bound to functions"). The why of a traced probe multiplies it by the calls
 * traced. */
#define API_TRACE_CALL_NS 2500.0

/* 1 when a Host header value (name or address, optional :port) is one dqd answers to:
 * loopback names, IP literals, the machine's name, allowed_hosts. */
int api__host_allowed(const struct api *api, const char *value);

#define API_TEXT_MAX 200 /* bytes of a free-text field (requested_by) */

/*
 * 1 when a free-text field a person sends (requested_by) is at most API_TEXT_MAX bytes of
 * UTF-8 without control characters (C0, DEL, C1: what a terminal would act on); else 0
 * with a 422 in res naming the field.
 */
int api__text_ok(struct http_response *res, const char *field, const char *s, size_t len);

/* 1 for GET and HEAD (the http module drops a HEAD answer's body). */
int api__is_read(const struct http_request *req);

/* 405 with errorType "method_not_allowed" and the Allow header (e.g. "GET, HEAD"). */
void api__method_not_allowed(const struct http_request *req, struct http_response *res,
                             const char *allowed);

/*
 * Routes of the adaptive loop: 1 when r (the path after /api/v1/) was one of them and res
 * holds the answer, 0 otherwise.
 */
int api__log_route(struct api *api, const char *r, const struct http_request *req,
                   struct http_response *res);

#endif /* DQ_API_INTERNAL_H */
