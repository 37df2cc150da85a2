/*
 * api_internal.h: what the API's two files share (api.c: dispatch, status, probes,
 * diagram, wrappers, /metrics; api_log.c: the adaptive loop's routes). Nothing outside
 * controller/api/ includes it.
 */
#ifndef DQ_API_INTERNAL_H
#define DQ_API_INTERNAL_H

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

/*
 * Routes of the adaptive loop: 1 when r (the path after /api/v1/) was one of them and res
 * holds the answer, 0 otherwise.
 */
int api__log_route(struct api *api, const char *r, const struct http_request *req,
                   struct http_response *res);

#endif /* DQ_API_INTERNAL_H */
