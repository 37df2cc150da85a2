/*
 * api_routes.c: the route table and the dispatch that follows from it (see api_internal.h,
 * "the route table"). A request's route is the first entry whose pattern matches its path
 * and whose methods include its method; the route's access class decides who may ask (a
 * request no route takes is a read for GET and HEAD, a change otherwise), then the handler
 * answers. A path some routes match with other methods is a 405 whose Allow header lists
 * theirs; a path no route matches is a 404.
 */
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#define READ HTTP_ACCESS_READ
#define OPEN HTTP_ACCESS_OPEN
#define CHANGE HTTP_ACCESS_CHANGE
#define TEXT_BODY HTTP_ACCESS_TEXT_BODY

/* clang-format off */
const struct api_route api__routes[] = {
    {API_GET,    "/-/healthy",                        api__get_healthy,         OPEN},
    {API_GET,    "/metrics",                          api__get_metrics,         READ},
    {API_GET,    "/",                                 api__get_web,             OPEN},
    {API_GET,    "/assets/*",                         api__get_web,             OPEN},
    {API_GET,    "/api/v1/status",                    api__get_status,          READ},
    {API_GET,    "/api/v1/events",                    api__get_events,          READ},
    {API_GET,    "/api/v1/probes",                    api__get_probes,          READ},
    {API_GET,    "/api/v1/probes/{probe}",            api__get_probe,           READ},
    {API_PUT,    "/api/v1/probes/{probe}",            api__put_probe,           CHANGE},
    {API_DELETE, "/api/v1/probes/{probe}",            api__delete_probe,        CHANGE},
    {API_GET,    "/api/v1/probes/{probe}/dq",         api__get_probe_dq,        READ},
    {API_GET,    "/api/v1/probes/{probe}/dqs",        api__get_probe_dqs,       READ},
    {API_GET,    "/api/v1/probes/{probe}/windows",    api__get_probe_windows,   READ},
    {API_GET,    "/api/v1/probes/{probe}/heatmap",    api__get_probe_heatmap,   READ},
    {API_GET,    "/api/v1/probes/{probe}/exemplars",  api__get_probe_exemplars, READ},
    {API_GET,    "/api/v1/probes/{probe}/triggers",   api__get_probe_triggers,  READ},
    {API_PUT,    "/api/v1/probes/{probe}/triggers/*", api__put_trigger,         CHANGE},
    {API_GET,    "/api/v1/diagram",                   api__get_diagram,         READ},
    {API_PUT,    "/api/v1/diagram",                   api__put_diagram,         TEXT_BODY},
    {API_GET,    "/api/v1/otlp/spans",                api__get_otlp_spans,      READ},
    {API_POST,   "/api/v1/wrapper/start",             api__post_wrapper_start,  CHANGE},
    {API_POST,   "/api/v1/wrapper/stop",              api__post_wrapper_stop,   CHANGE},
    {API_POST,   "/api/v1/diagnose",                  api__post_diagnose,       CHANGE},
    {API_GET,    "/api/v1/investigations",            api__get_investigations,  READ},
    {API_GET,    "/api/v1/investigations/*",          api__get_investigation,   READ},
    {API_DELETE, "/api/v1/investigations/*",          api__delete_investigation, CHANGE},
    {API_GET,    "/api/v1/why/*",                     api__get_why,             READ},
    {API_GET,    "/api/v1/snapshots",                 api__get_snapshots,       READ},
    {API_GET,    "/api/v1/snapshots/*",               api__get_snapshot,        READ},
    {API_GET,    "/api/v1/triggers",                  api__get_triggers,        READ},
    {API_GET,    "/api/v1/marks",                     api__get_marks,           READ},
};
/* clang-format on */
const size_t api__n_routes = sizeof api__routes / sizeof api__routes[0];

/* The method's bit (API_GET for GET and HEAD), 0 for a method no route has. */
static unsigned method_bit(const struct http_request *req) {
    switch (req->method) {
    case HTTP_GET:
    case HTTP_HEAD:
        return API_GET;
    case HTTP_PUT:
        return API_PUT;
    case HTTP_POST:
        return API_POST;
    case HTTP_DELETE:
        return API_DELETE;
    default:
        return 0;
    }
}

/* 1 when path matches pattern: probe (PROBES_NAME_MAX + 1 bytes) gets the {probe} segment
 * and *rest what the final * matched. */
static int match(const char *pattern, const char *path, char *probe, const char **rest) {
    static const char seg[] = "{probe}";
    const char *p = pattern, *s = path;
    while (*p) {
        if (p[0] == '*' && p[1] == '\0') {
            *rest = s;
            return 1;
        }
        if (strncmp(p, seg, sizeof seg - 1) == 0) {
            size_t n = strcspn(s, "/");
            if (n == 0 || n > PROBES_NAME_MAX) {
                return 0;
            }
            memcpy(probe, s, n);
            probe[n] = '\0';
            s += n;
            p += sizeof seg - 1;
        } else if (*p++ != *s++) {
            return 0;
        }
    }
    return *s == '\0';
}

/* "GET, HEAD, PUT, POST, DELETE", the methods set in bits, in that order. */
static void allow_text(unsigned bits, char *buf, size_t cap) {
    static const struct {
        unsigned bit;
        const char *text;
    } m[] = {{API_GET, "GET, HEAD"}, {API_PUT, "PUT"}, {API_POST, "POST"}, {API_DELETE, "DELETE"}};
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof m / sizeof m[0] && off < cap; i++) {
        if (bits & m[i].bit) {
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", m[i].text);
        }
    }
}

void api_handle(void *ctx, const struct http_request *req, struct http_response *res) {
    struct api *api = ctx;
    unsigned want = method_bit(req), allowed = 0;
    const struct api_route *route = NULL;
    char probe[PROBES_NAME_MAX + 1] = "", seen[PROBES_NAME_MAX + 1];
    const char *rest = "";
    for (size_t i = 0; i < api__n_routes; i++) {
        const struct api_route *r = &api__routes[i];
        const char *seen_rest = "";
        seen[0] = '\0';
        if (!match(r->pattern, req->path, seen, &seen_rest)) {
            continue;
        }
        allowed |= r->methods;
        if (!route && (r->methods & want)) {
            route = r;
            memcpy(probe, seen, strlen(seen) + 1);
            rest = seen_rest;
        }
    }
    enum http_access_class cls = route ? route->access : want == API_GET ? READ : CHANGE;
    if (!api__authorized(api, cls, req, res)) {
        return;
    }
    if (route) {
        struct api_call call = {.req = req, .probe = probe, .rest = rest};
        route->handler(api, &call, res);
    } else if (allowed) {
        char allow[64];
        allow_text(allowed, allow, sizeof allow);
        http_reply_error(res, 405, "method_not_allowed", "%s is not allowed on %s; use %s",
                         req->method_name, req->path, allow);
        http_response_add_header(res, "Allow", allow);
    } else if (strncmp(req->path, API_PREFIX, strlen(API_PREFIX)) != 0) {
        http_reply_error(res, 404, "not_found", "no such route: %s (the API is under /api/v1/)",
                         req->path);
    } else {
        http_reply_error(res, 404, "not_found", "no such route: %s", req->path);
    }
}
