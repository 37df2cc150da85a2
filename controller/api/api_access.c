/*
 * api_access.c: who may ask the API (docs/api.md, "Authorization"; running.md, "Security
 * and limits"). The decision is http_access_decide's (http.h), under the API's policy: its
 * token, allowed_hosts, public_reads and whether it listens on loopback only. What is here
 * is the wording of each refusal and its count in dqd_http_refused_total.
 */
#include "api_internal.h"

#include <stdio.h>

/* The policy of the API as http_access wants it (strings borrowed from api). */
static struct http_access_policy policy(const struct api *api) {
    return (struct http_access_policy){.token = api->api_token,
                                       .hostname = api->hostname,
                                       .allowed_hosts = api->allowed_hosts,
                                       .loopback = http_access_loopback(api->http_host),
                                       .public_reads = api->public_reads};
}

const char *api__changes(const struct api *api) {
    return api->api_token[0] ? "token" : http_access_loopback(api->http_host) ? "open" : "refused";
}

static void refuse_token(struct http_response *res, const char *what) {
    http_reply_error(res, 401, "unauthorized",
                     "%s needs the header `Authorization: Bearer <api_token>` (dqctl sends "
                     "$DQD_TOKEN; Prometheus: authorization.credentials_file)",
                     what);
    http_response_add_header(res, "WWW-Authenticate", "Bearer");
}

/* The refusal's answer, for a verdict other than HTTP_ACCESS_OK. */
static void refuse(struct api *api, enum http_access_verdict v, const struct http_access_ask *ask,
                   struct http_response *res) {
    char shown[96];
    switch (v) {
    case HTTP_ACCESS_NO_HOST:
        http_reply_error(res, 400, "bad_data", "an HTTP/1.1 request needs a Host header");
        break;
    case HTTP_ACCESS_FOREIGN_HOST:
        snprintf(shown, sizeof shown, "%s", ask->host);
        http_reply_error(res, 403, "forbidden",
                         "Host \"%s\" is not one of dqd's names (a loopback name, an IP "
                         "address, this machine's name); a proxy, a Collector or a DNS "
                         "name must be listed in allowed_hosts",
                         shown);
        break;
    case HTTP_ACCESS_READ_TOKEN:
        refuse_token(res, "a read through an API bound beyond loopback");
        break;
    case HTTP_ACCESS_FOREIGN_ORIGIN:
        snprintf(shown, sizeof shown, "%s", ask->origin);
        http_reply_error(res, 403, "forbidden",
                         "a change from the web page of another site (Origin %s) is refused",
                         shown);
        break;
    case HTTP_ACCESS_NOT_JSON:
        snprintf(shown, sizeof shown, "%s", ask->content_type ? ask->content_type : "none");
        http_reply_error(res, 415, "bad_data",
                         "a change's body must be JSON with `Content-Type: application/json` "
                         "(got %s)",
                         shown);
        break;
    case HTTP_ACCESS_NO_TOKEN_SET:
        http_reply_error(res, 403, "forbidden",
                         "changes through an API bound to %s need an api_token (a file named "
                         "by --api-token or the config, or DQD_API_TOKEN; DQD_TOKEN for dqctl)",
                         api->http_host);
        break;
    case HTTP_ACCESS_CHANGE_TOKEN:
        refuse_token(res, "this change");
        break;
    default:
        http_reply_error(res, 500, "internal", "the route has no access class");
        break;
    }
}

int api__authorized(struct api *api, enum http_access_class cls, const struct http_request *req,
                    struct http_response *res) {
    struct http_access_policy pol = policy(api);
    struct http_access_ask ask;
    http_access_ask_of(req, &ask);
    enum http_access_verdict v = http_access_decide(&pol, cls, &ask);
    switch (v) {
    case HTTP_ACCESS_OK:
        return 1;
    case HTTP_ACCESS_NO_HOST:
    case HTTP_ACCESS_FOREIGN_HOST:
        api->refused[API_REFUSED_HOST]++;
        break;
    case HTTP_ACCESS_FOREIGN_ORIGIN:
        api->refused[API_REFUSED_ORIGIN]++;
        break;
    case HTTP_ACCESS_NOT_JSON:
        api->refused[API_REFUSED_TYPE]++;
        break;
    case HTTP_ACCESS_READ_TOKEN:
    case HTTP_ACCESS_NO_TOKEN_SET:
    case HTTP_ACCESS_CHANGE_TOKEN:
        api->refused[API_REFUSED_TOKEN]++;
        break;
    default:
        break;
    }
    refuse(api, v, &ask, res);
    return 0;
}
