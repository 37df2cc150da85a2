/*
 * http_access.c: who may ask (see http.h, "who may ask"): Host, Origin, Content-Type and
 * the bearer token, as pure functions of a request's headers and a server's policy.
 */
#include "http.h"

#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

void http_access_ask_of(const struct http_request *req, struct http_access_ask *out) {
    out->host = http_request_header(req, "Host");
    out->origin = http_request_header(req, "Origin");
    out->content_type = http_request_header(req, "Content-Type");
    out->authorization = http_request_header(req, "Authorization");
    out->body_len = req->body_len;
    out->needs_host = req->http_major > 1 || (req->http_major == 1 && req->http_minor >= 1);
}

int http_access_loopback(const char *listen_host) {
    return strncmp(listen_host, "127.", 4) == 0 || strcmp(listen_host, "::1") == 0 ||
           strcmp(listen_host, "localhost") == 0;
}

/* Case-insensitive equality of a[0, n) and the string b. */
static int eq_n(const char *a, size_t n, const char *b) {
    return strlen(b) == n && strncasecmp(a, b, n) == 0;
}

/* 1 when host[0, n) (no port, no brackets) is an IP address literal. */
static int is_ip_literal(const char *host, size_t n, int bracketed) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) {
        return 0;
    }
    memcpy(buf, host, n);
    buf[n] = '\0';
    unsigned char addr[16];
    return bracketed ? inet_pton(AF_INET6, buf, addr) == 1 : inet_pton(AF_INET, buf, addr) == 1;
}

/* Whether one allowed_hosts entry e[0, en) matches host[0, hn) with the Host's full value
 * full[0, fn) (host plus ":port"). */
static int entry_matches(const char *e, size_t en, const char *host, size_t hn, const char *full,
                         size_t fn) {
    if (en == 1 && e[0] == '*') {
        return 1;
    }
    if (en > 1 && e[0] == '.') { /* every name under a domain */
        return hn > en && strncasecmp(host + hn - en, e, en) == 0;
    }
    if (memchr(e, ':', en) && e[0] != '[') { /* name:port */
        return en == fn && strncasecmp(full, e, en) == 0;
    }
    return en == hn && strncasecmp(host, e, en) == 0;
}

/* The next entry of a comma-separated list at *e (blanks around it trimmed) in *x, *xn;
 * 0 at the end of the list. An empty entry has *xn 0. */
static int next_entry(const char **e, const char **x, size_t *xn) {
    if (!**e) {
        return 0;
    }
    size_t en = strcspn(*e, ",");
    *x = *e;
    *xn = en;
    while (*xn && (**x == ' ' || **x == '\t')) {
        (*x)++, (*xn)--;
    }
    while (*xn && ((*x)[*xn - 1] == ' ' || (*x)[*xn - 1] == '\t')) {
        (*xn)--;
    }
    *e += en + ((*e)[en] == ',');
    return 1;
}

/* 1 when one of the comma-separated entries of list (blanks around them ignored) matches. */
static int listed(const char *list, const char *host, size_t hn, const char *full, size_t fn) {
    const char *e = list ? list : "", *x;
    size_t xn;
    while (next_entry(&e, &x, &xn)) {
        if (xn && entry_matches(x, xn, host, hn, full, fn)) {
            return 1;
        }
    }
    return 0;
}

/* 1 when p[0, n) is empty or ":" and a port of 1 to 5 digits. */
static int port_ok(const char *p, size_t n) {
    if (n == 0) {
        return 1;
    }
    if (p[0] != ':' || n < 2 || n > 6) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
    }
    return 1;
}

int http_access_host_allowed(const char *value, const char *hostname, const char *allowed_hosts) {
    size_t fn = strlen(value);
    const char *host = value;
    size_t hn = fn;
    int bracketed = 0;
    if (fn > 0 && value[0] == '[') {
        const char *close = memchr(value, ']', fn);
        if (!close) {
            return 0;
        }
        host = value + 1;
        hn = (size_t)(close - host);
        bracketed = 1;
    } else {
        const char *colon = memchr(value, ':', fn);
        if (colon) {
            hn = (size_t)(colon - value);
        }
    }
    size_t after = (size_t)(host - value) + hn + (size_t)bracketed;
    if (hn == 0 || !port_ok(value + after, fn - after)) {
        return 0;
    }
    if (host[hn - 1] == '.' && !bracketed) {
        hn--; /* "localhost." is "localhost" */
    }
    if (is_ip_literal(host, hn, bracketed) || eq_n(host, hn, "localhost") ||
        (hn > 10 && strncasecmp(host + hn - 10, ".localhost", 10) == 0) ||
        (hostname && hostname[0] && eq_n(host, hn, hostname))) {
        return 1;
    }
    return listed(allowed_hosts, host, hn, value, fn);
}

int http_access_same_origin(const char *origin, const char *host) {
    const char *rest = strncasecmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncasecmp(origin, "https://", 8) == 0 ? origin + 8
                                                                 : NULL;
    return rest && host && strcasecmp(rest, host) == 0;
}

int http_access_origin_listed(const char *origin, const char *list) {
    const char *e = list && origin ? list : "", *x;
    size_t xn, on = origin ? strlen(origin) : 0;
    while (next_entry(&e, &x, &xn)) {
        if ((xn == 1 && x[0] == '*') || (xn == on && xn && strncasecmp(x, origin, on) == 0)) {
            return 1;
        }
    }
    return 0;
}

int http_access_json_type(const char *content_type) {
    static const char aj[] = "application/json";
    if (!content_type || strncasecmp(content_type, aj, sizeof aj - 1) != 0) {
        return 0;
    }
    char after = content_type[sizeof aj - 1];
    return after == '\0' || after == ';' || after == ' ' || after == '\t';
}

int http_access_bearer_ok(const char *authorization, const char *token) {
    size_t tl = token ? strlen(token) : 0;
    if (tl == 0 || !authorization || strncmp(authorization, "Bearer ", 7) != 0 ||
        strlen(authorization + 7) != tl) {
        return 0;
    }
    unsigned char diff = 0; /* the same time whatever the first differing byte */
    for (size_t i = 0; i < tl; i++) {
        diff |= (unsigned char)(authorization[7 + i] ^ token[i]);
    }
    return diff == 0;
}

/* The checks of a change after Host: Origin, the body's type, the token. */
static enum http_access_verdict decide_change(const struct http_access_policy *pol,
                                              enum http_access_class cls,
                                              const struct http_access_ask *ask) {
    if (ask->origin && !http_access_same_origin(ask->origin, ask->host) &&
        !http_access_origin_listed(ask->origin, pol->origins)) {
        return HTTP_ACCESS_FOREIGN_ORIGIN;
    }
    if (cls != HTTP_ACCESS_TEXT_BODY && !http_access_json_type(ask->content_type) &&
        (ask->body_len > 0 || ask->content_type)) {
        return HTTP_ACCESS_NOT_JSON;
    }
    if (!pol->token || !pol->token[0]) {
        return pol->loopback ? HTTP_ACCESS_OK : HTTP_ACCESS_NO_TOKEN_SET;
    }
    return http_access_bearer_ok(ask->authorization, pol->token) ? HTTP_ACCESS_OK
                                                                 : HTTP_ACCESS_CHANGE_TOKEN;
}

enum http_access_verdict http_access_decide(const struct http_access_policy *pol,
                                            enum http_access_class cls,
                                            const struct http_access_ask *ask) {
    if (ask->host ? !http_access_host_allowed(ask->host, pol->hostname, pol->allowed_hosts)
                  : ask->needs_host) {
        return ask->host ? HTTP_ACCESS_FOREIGN_HOST : HTTP_ACCESS_NO_HOST;
    }
    switch (cls) {
    case HTTP_ACCESS_OPEN:
        return HTTP_ACCESS_OK;
    case HTTP_ACCESS_READ:
        return pol->loopback || !pol->token || !pol->token[0] || pol->public_reads ||
                       http_access_bearer_ok(ask->authorization, pol->token)
                   ? HTTP_ACCESS_OK
                   : HTTP_ACCESS_READ_TOKEN;
    case HTTP_ACCESS_CHANGE:
    case HTTP_ACCESS_TEXT_BODY:
        return decide_change(pol, cls, ask);
    default:
        return HTTP_ACCESS_NO_CLASS;
    }
}

int http_access_status(enum http_access_verdict v) {
    switch (v) {
    case HTTP_ACCESS_OK:
        return 0;
    case HTTP_ACCESS_NO_HOST:
        return 400;
    case HTTP_ACCESS_READ_TOKEN:
    case HTTP_ACCESS_CHANGE_TOKEN:
        return 401;
    case HTTP_ACCESS_FOREIGN_HOST:
    case HTTP_ACCESS_FOREIGN_ORIGIN:
    case HTTP_ACCESS_NO_TOKEN_SET:
        return 403;
    case HTTP_ACCESS_NOT_JSON:
        return 415;
    default:
        return 500;
    }
}
