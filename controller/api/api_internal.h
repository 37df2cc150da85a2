/*
 * api_internal.h: what the API's two files share (api.c: dispatch, status, probes,
 * diagram, wrappers, /metrics; api_log.c: the adaptive loop's routes). Nothing outside
 * controller/api/ includes it.
 */
#ifndef DQ_API_INTERNAL_H
#define DQ_API_INTERNAL_H

#include <jansson.h>

#include "api.h"

struct api {
    struct api_env env;
    char version[32];
    char db[1024];
    char api_token[1024];
    char clock[8];
    int64_t window_ms, lag_ms;
    char ingest_host[64], http_host[64];
    int ingest_port, http_port;
};

/* "2026-11-22T03:17:49.123Z" (ISO 8601, UTC) from ns since the epoch. */
void api__iso8601(int64_t ns, char *buf, size_t cap);

/*
 * An enabled probe's silence as the status lists it: {probe, since_ns, since, windows,
 * origin, node, app, connected} (origin, node and app null when the probe was never heard
 * from); JSON null when p is not silent. A new reference.
 */
json_t *api__silence_json(struct api *api, const struct probe *p);

/* A probe's tracer figures as the API shows them ({"installed","calls","dropped",
 * "sampling","refused"}), or JSON null for a probe never bound to a function. */
json_t *api__trace_json(const struct probe *p);

/* The CPU one traced call costs the node, in ns: the caller's share (~1 µs) plus the
 * tracer's and the connection's, as the wrapper benchmark measured it (docs/PERFORMANCE.md,
 * "Probes bound to functions"). The why of a traced probe multiplies it by the calls
 * traced. */
#define API_TRACE_CALL_NS 2500.0

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
