/*
 * test_access.c: who may ask (controller/http/http_access.c, http.h "who may ask"): the
 * Host check (loopback names, IP literals, the machine's name, allowed_hosts entries of
 * every form), Origin, the JSON content type, the bearer token, the listen address, and
 * http_access_decide for every class against every kind of request, with the order of
 * its checks (the first one failed is the answer) and its statuses. Pure functions: no
 * socket, no clock.
 */
#include "http.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

static int host_ok(const char *value, const char *hostname, const char *allowed) {
    return http_access_host_allowed(value, hostname, allowed);
}

static void test_host(void) {
    /* loopback names, IP literals, with or without a port */
    const char *yes[] = {"localhost",  "LOCALHOST:7401", "localhost.",     "app.localhost",
                         "127.0.0.1",  "127.0.0.1:7401", "10.1.2.3:80",    "[::1]",
                         "[::1]:7401", "[fe80::1]:1",    "a.b.localhost:9"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        CHECK_MSG(host_ok(yes[i], "", ""), "%s", yes[i]);
    }
    /* a name dqd does not know, a rebinding attack's domain, malformed values */
    const char *no[] = {"evil.example",
                        "evil.example:7401",
                        "localhost.evil.example",
                        "xlocalhost",
                        "",
                        ":7401",
                        "[::1",
                        "[127.0.0.1]",
                        "::1",
                        "256.1.1.1",
                        "localhost..",
                        ".localhost"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        CHECK_MSG(!host_ok(no[i], "", ""), "%s", no[i]);
    }
    /* the machine's own name, any case, any port; NULL and "" are none */
    CHECK(host_ok("Build-Box:7401", "build-box", NULL));
    CHECK(!host_ok("build-box", "", NULL));
    CHECK(!host_ok("build-box", NULL, NULL));
    CHECK(!host_ok("build-box2", "build-box", NULL));
    /* allowed_hosts: a name (any port), NAME:PORT (that port only), .DOMAIN (names under
     * it, not the domain itself), * (anything), blanks around entries */
    const char *allowed = " dqd.internal ,\t.svc.cluster.local,proxy.example:8443";
    CHECK(host_ok("dqd.internal", "", allowed));
    CHECK(host_ok("DQD.Internal:7401", "", allowed));
    CHECK(host_ok("otel.svc.cluster.local:4318", "", allowed));
    CHECK(!host_ok("svc.cluster.local", "", allowed));
    CHECK(host_ok("proxy.example:8443", "", allowed));
    CHECK(!host_ok("proxy.example:9", "", allowed));
    CHECK(!host_ok("proxy.example", "", allowed));
    CHECK(!host_ok("dqd.internal.evil", "", allowed));
    CHECK(!host_ok("prometheus-target", "", allowed));
    CHECK(host_ok("anything.at.all:1", "", "*"));
    CHECK(host_ok("x", "", ",,x,"));
    CHECK(!host_ok("x", "", " , ,"));
}

static void test_origin_type_token(void) {
    CHECK(http_access_same_origin("http://127.0.0.1:7401", "127.0.0.1:7401"));
    CHECK(http_access_same_origin("HTTPS://Dqd.Internal", "dqd.internal"));
    CHECK(!http_access_same_origin("http://evil.example", "127.0.0.1:7401"));
    CHECK(!http_access_same_origin("http://127.0.0.1:7402", "127.0.0.1:7401"));
    CHECK(!http_access_same_origin("null", "127.0.0.1"));
    CHECK(!http_access_same_origin("ftp://127.0.0.1", "127.0.0.1"));
    CHECK(!http_access_same_origin("http://127.0.0.1", NULL));

    CHECK(http_access_json_type("application/json"));
    CHECK(http_access_json_type("Application/JSON; charset=utf-8"));
    CHECK(http_access_json_type("application/json ;x=y"));
    CHECK(!http_access_json_type("application/jsonx"));
    CHECK(!http_access_json_type("text/plain"));
    CHECK(!http_access_json_type("application/x-www-form-urlencoded"));
    CHECK(!http_access_json_type(""));
    CHECK(!http_access_json_type(NULL));

    CHECK(http_access_bearer_ok("Bearer s3cret", "s3cret"));
    CHECK(!http_access_bearer_ok("Bearer s3creX", "s3cret"));
    CHECK(!http_access_bearer_ok("Bearer Xs3cre", "s3cret"));
    CHECK(!http_access_bearer_ok("Bearer X3cret", "s3cret")); /* one byte off: first, */
    CHECK(!http_access_bearer_ok("Bearer s3Cret", "s3cret")); /* middle, */
    CHECK(!http_access_bearer_ok("Bearer s3creT", "s3cret")); /* last */
    CHECK(!http_access_bearer_ok("Bearer s3cret ", "s3cret"));
    CHECK(!http_access_bearer_ok("Bearer s3cre", "s3cret"));
    CHECK(!http_access_bearer_ok("bearer s3cret", "s3cret"));
    CHECK(!http_access_bearer_ok("Basic s3cret", "s3cret"));
    CHECK(!http_access_bearer_ok("s3cret", "s3cret"));
    CHECK(!http_access_bearer_ok(NULL, "s3cret"));
    CHECK(!http_access_bearer_ok("Bearer ", "")); /* no token set: nothing matches it */
    CHECK(!http_access_bearer_ok("Bearer x", NULL));

    const char *loop[] = {"127.0.0.1", "127.8.9.10", "::1", "localhost"};
    const char *wide[] = {"0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "", "localhostx"};
    for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++) {
        CHECK_MSG(http_access_loopback(loop[i]), "%s", loop[i]);
    }
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        CHECK_MSG(!http_access_loopback(wide[i]), "%s", wide[i]);
    }
}

/* ---- the decision -------------------------------------------------------------------------- */

/* Servers: where they listen, whether a token is set, public reads. */
struct server {
    const char *name;
    int loopback, token, public_reads;
};

/* Requests: what they carry. */
enum ask_kind {
    ASK_PLAIN,          /* a known Host, nothing else */
    ASK_TOKEN,          /* the right token */
    ASK_WRONG_TOKEN,    /* a token, not the right one */
    ASK_NO_HOST,        /* HTTP/1.1 without Host */
    ASK_NO_HOST_10,     /* HTTP/1.0 without Host (allowed: 1.0 has none) */
    ASK_FOREIGN_HOST,   /* a Host that is not the server's (with the token) */
    ASK_FOREIGN_ORIGIN, /* another site's Origin (with the token) */
    ASK_SAME_ORIGIN,    /* the page's own Origin (with the token) */
    ASK_TEXT_BODY,      /* a text/plain body (with the token) */
    ASK_JSON_BODY,      /* a JSON body (with the token) */
    ASK_KINDS
};

static struct http_access_ask make_ask(enum ask_kind k) {
    struct http_access_ask a = {.host = "127.0.0.1:7401", .needs_host = 1};
    if (k != ASK_PLAIN && k != ASK_WRONG_TOKEN) {
        a.authorization = "Bearer tok";
    }
    switch (k) {
    case ASK_WRONG_TOKEN:
        a.authorization = "Bearer tox";
        break;
    case ASK_NO_HOST:
        a.host = NULL;
        break;
    case ASK_NO_HOST_10:
        a.host = NULL;
        a.needs_host = 0;
        break;
    case ASK_FOREIGN_HOST:
        a.host = "evil.example";
        break;
    case ASK_FOREIGN_ORIGIN:
        a.origin = "http://evil.example";
        break;
    case ASK_SAME_ORIGIN:
        a.origin = "http://127.0.0.1:7401";
        break;
    case ASK_TEXT_BODY:
        a.content_type = "text/plain";
        a.body_len = 5;
        break;
    case ASK_JSON_BODY:
        a.content_type = "application/json";
        a.body_len = 2;
        break;
    default:
        break;
    }
    return a;
}

/*
 * What docs/api.md ("Authorization") promises, written out case by case rather than
 * computed the way http_access.c computes it: the first check failed, in the order Host,
 * then (read) the token beyond loopback, or (change) Origin, body type, the token.
 */
static enum http_access_verdict promised(const struct server *s, enum http_access_class cls,
                                         enum ask_kind k) {
    if (k == ASK_NO_HOST) {
        return HTTP_ACCESS_NO_HOST;
    }
    if (k == ASK_FOREIGN_HOST) {
        return HTTP_ACCESS_FOREIGN_HOST;
    }
    int has_token = k != ASK_PLAIN && k != ASK_WRONG_TOKEN;
    if (cls == HTTP_ACCESS_OPEN) {
        return HTTP_ACCESS_OK;
    }
    if (cls == HTTP_ACCESS_READ) {
        int needs = !s->loopback && s->token && !s->public_reads;
        return needs && !has_token ? HTTP_ACCESS_READ_TOKEN : HTTP_ACCESS_OK;
    }
    if (k == ASK_FOREIGN_ORIGIN) {
        return HTTP_ACCESS_FOREIGN_ORIGIN;
    }
    if (k == ASK_TEXT_BODY && cls == HTTP_ACCESS_CHANGE) {
        return HTTP_ACCESS_NOT_JSON;
    }
    if (!s->token) {
        return s->loopback ? HTTP_ACCESS_OK : HTTP_ACCESS_NO_TOKEN_SET;
    }
    return has_token ? HTTP_ACCESS_OK : HTTP_ACCESS_CHANGE_TOKEN;
}

static void test_decide(void) {
    static const struct server servers[] = {{"loopback", 1, 0, 0},
                                            {"loopback+token", 1, 1, 0},
                                            {"beyond", 0, 0, 0},
                                            {"beyond+token", 0, 1, 0},
                                            {"beyond+token+public_reads", 0, 1, 1}};
    static const enum http_access_class classes[] = {HTTP_ACCESS_READ, HTTP_ACCESS_OPEN,
                                                     HTTP_ACCESS_CHANGE, HTTP_ACCESS_TEXT_BODY};
    int cases = 0;
    for (size_t si = 0; si < sizeof servers / sizeof servers[0]; si++) {
        const struct server *s = &servers[si];
        struct http_access_policy pol = {.token = s->token ? "tok" : "",
                                         .hostname = "box",
                                         .allowed_hosts = "dqd.internal",
                                         .loopback = s->loopback,
                                         .public_reads = s->public_reads};
        for (size_t ci = 0; ci < sizeof classes / sizeof classes[0]; ci++) {
            for (int k = 0; k < ASK_KINDS; k++) {
                struct http_access_ask ask = make_ask((enum ask_kind)k);
                enum http_access_verdict got = http_access_decide(&pol, classes[ci], &ask);
                enum http_access_verdict want = promised(s, classes[ci], (enum ask_kind)k);
                CHECK_MSG(got == want, "%s, class %d, request %d: verdict %d, promised %d", s->name,
                          (int)classes[ci], k, (int)got, (int)want);
                cases++;
            }
        }
    }
    CHECK_INT(cases, 5 * 4 * ASK_KINDS);
    /* a token set as NULL is no token */
    struct http_access_policy none = {.token = NULL, .loopback = 0};
    struct http_access_ask plain = make_ask(ASK_PLAIN);
    CHECK_INT(http_access_decide(&none, HTTP_ACCESS_READ, &plain), HTTP_ACCESS_OK);
    CHECK_INT(http_access_decide(&none, HTTP_ACCESS_CHANGE, &plain), HTTP_ACCESS_NO_TOKEN_SET);
    /* a route without a class is refused, whatever the request carries */
    struct http_access_policy open = {.token = "", .loopback = 1};
    for (int k = 0; k < ASK_KINDS; k++) {
        struct http_access_ask ask = make_ask((enum ask_kind)k);
        enum http_access_verdict v = http_access_decide(&open, HTTP_ACCESS_NONE, &ask);
        CHECK_MSG(v != HTTP_ACCESS_OK, "request %d passes a route without a class", k);
    }
    struct http_access_ask ok_ask = make_ask(ASK_TOKEN);
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_NONE, &ok_ask), HTTP_ACCESS_NO_CLASS);
    CHECK_INT(http_access_decide(&open, (enum http_access_class)99, &ok_ask), HTTP_ACCESS_NO_CLASS);
    /* a Content-Type on a change without a body is checked too; none at all passes */
    struct http_access_ask ct = make_ask(ASK_TOKEN);
    ct.content_type = "text/plain";
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_CHANGE, &ct), HTTP_ACCESS_NOT_JSON);
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_TEXT_BODY, &ct), HTTP_ACCESS_OK);
    /* the Host is checked before anything else, the Origin before the body's type */
    struct http_access_ask both = make_ask(ASK_TEXT_BODY);
    both.origin = "http://evil.example";
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_CHANGE, &both), HTTP_ACCESS_FOREIGN_ORIGIN);
    both.host = "evil.example";
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_CHANGE, &both), HTTP_ACCESS_FOREIGN_HOST);
    /* an Origin with no Host to compare (HTTP/1.0) is another site's */
    struct http_access_ask ten = make_ask(ASK_NO_HOST_10);
    ten.origin = "http://127.0.0.1:7401";
    CHECK_INT(http_access_decide(&open, HTTP_ACCESS_CHANGE, &ten), HTTP_ACCESS_FOREIGN_ORIGIN);
    /* allowed_hosts and the machine's name reach the Host check */
    struct http_access_policy named = {
        .token = "", .hostname = "box", .allowed_hosts = "dqd.internal", .loopback = 1};
    struct http_access_ask by_name = make_ask(ASK_PLAIN);
    by_name.host = "dqd.internal:7401";
    CHECK_INT(http_access_decide(&named, HTTP_ACCESS_READ, &by_name), HTTP_ACCESS_OK);
    by_name.host = "box";
    CHECK_INT(http_access_decide(&named, HTTP_ACCESS_READ, &by_name), HTTP_ACCESS_OK);
    by_name.host = "other.internal";
    CHECK_INT(http_access_decide(&named, HTTP_ACCESS_READ, &by_name), HTTP_ACCESS_FOREIGN_HOST);
}

static void test_status(void) {
    CHECK_INT(http_access_status(HTTP_ACCESS_OK), 0);
    CHECK_INT(http_access_status(HTTP_ACCESS_NO_HOST), 400);
    CHECK_INT(http_access_status(HTTP_ACCESS_FOREIGN_HOST), 403);
    CHECK_INT(http_access_status(HTTP_ACCESS_READ_TOKEN), 401);
    CHECK_INT(http_access_status(HTTP_ACCESS_FOREIGN_ORIGIN), 403);
    CHECK_INT(http_access_status(HTTP_ACCESS_NOT_JSON), 415);
    CHECK_INT(http_access_status(HTTP_ACCESS_NO_TOKEN_SET), 403);
    CHECK_INT(http_access_status(HTTP_ACCESS_CHANGE_TOKEN), 401);
    CHECK_INT(http_access_status(HTTP_ACCESS_NO_CLASS), 500);
}

/* http_access_ask_of reads the headers of a parsed request (names in any case); its
 * strings live as long as the request, so each is checked in the callback. */
static int n_parsed;
static int on_request(void *ctx, const struct http_request *req) {
    (void)ctx;
    struct http_access_ask a;
    http_access_ask_of(req, &a);
    if (n_parsed++ == 0) {
        CHECK_STR(a.host, "h:1");
        CHECK_STR(a.origin, "http://o");
        CHECK_STR(a.content_type, "application/json");
        CHECK_STR(a.authorization, "Bearer t");
        CHECK_INT(a.body_len, 2);
        CHECK_INT(a.needs_host, 1);
    } else {
        CHECK(a.host == NULL && a.origin == NULL && a.authorization == NULL);
        CHECK(a.content_type == NULL);
        CHECK_INT(a.body_len, 0);
        CHECK_INT(a.needs_host, 0); /* HTTP/1.0 has no Host to require */
    }
    return HTTP_FEED_CONTINUE;
}

static void test_ask_of(void) {
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, NULL, on_request, NULL, NULL), DQ_OK);
    static const char req[] = "PUT /x HTTP/1.1\r\nhost: h:1\r\nORIGIN: http://o\r\n"
                              "Content-Type: application/json\r\nAuthorization: Bearer t\r\n"
                              "Content-Length: 2\r\n\r\n{}"
                              "GET /y HTTP/1.0\r\n\r\n";
    CHECK_INT(http_conn_parser_feed(&p, req, sizeof req - 1, NULL), DQ_OK);
    http_conn_parser_release(&p);
    CHECK_INT(n_parsed, 2);
}

/* Issue 26: a header two readers could take differently when sent twice (a proxy the first,
 * dqd the last) is refused whole: Host, Origin, Content-Type, Content-Length. */
static int n_dup;
static int on_dup(void *ctx, const struct http_request *req) {
    (void)ctx;
    (void)req;
    n_dup++;
    return HTTP_FEED_CONTINUE;
}

static void test_repeated_headers(void) {
    static const char *const twice[] = {
        "Host: localhost:7401\r\nHost: evil.example\r\n",
        "Host: a\r\nOrigin: http://a\r\norigin: http://evil.example\r\n",
        "Host: a\r\nContent-Type: application/json\r\nCONTENT-TYPE: text/plain\r\n",
        "Host: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n",
    };
    for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++) {
        char req[512];
        snprintf(req, sizeof req, "POST /v1/traces HTTP/1.1\r\n%s\r\n{}", twice[i]);
        struct http_conn_parser p;
        CHECK_INT(http_conn_parser_init(&p, NULL, on_dup, NULL, NULL), DQ_OK);
        n_dup = 0;
        int rc = http_conn_parser_feed(&p, req, strlen(req), NULL);
        CHECK_MSG(rc < 0 && p.error_status == 400 && n_dup == 0,
                  "headers %zu: rc %d, status %d, %d requests", i, rc, p.error_status, n_dup);
        CHECK_MSG(i == 3 || strstr(p.error_msg, "more than once"), "%s", p.error_msg);
        http_conn_parser_release(&p);
    }
    /* other headers may repeat */
    static const char ok[] = "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\n\r\n";
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, NULL, on_dup, NULL, NULL), DQ_OK);
    n_dup = 0;
    CHECK_INT(http_conn_parser_feed(&p, ok, sizeof ok - 1, NULL), DQ_OK);
    CHECK_INT(n_dup, 1);
    http_conn_parser_release(&p);
}

/* A Host's port is digits only; a policy's listed origins pass the Origin check. */
static void test_port_and_origins(void) {
    CHECK(http_access_host_allowed("localhost:17401", NULL, NULL));
    CHECK(!http_access_host_allowed("localhost:17401 evil", NULL, NULL));
    CHECK(!http_access_host_allowed("localhost:", NULL, NULL));
    CHECK(!http_access_host_allowed("localhost:1x", NULL, NULL));
    CHECK(!http_access_host_allowed("127.0.0.1:123456", NULL, NULL));
    CHECK(http_access_host_allowed("[::1]:4318", NULL, NULL));
    CHECK(!http_access_host_allowed("[::1]x", NULL, NULL));
    CHECK(http_access_origin_listed("https://app.example", " https://x, HTTPS://APP.example "));
    CHECK(!http_access_origin_listed("https://app.example.evil", "https://app.example"));
    CHECK(http_access_origin_listed("http://anything", "*"));
    CHECK(!http_access_origin_listed("http://a", ""));
    CHECK(!http_access_origin_listed("http://a", NULL));
    struct http_access_policy pol = {.loopback = 1, .origins = "https://app.example"};
    struct http_access_ask ask = {.host = "localhost:4318", .origin = "https://app.example"};
    CHECK_INT(http_access_decide(&pol, HTTP_ACCESS_TEXT_BODY, &ask), HTTP_ACCESS_OK);
    ask.origin = "https://evil.example";
    CHECK_INT(http_access_decide(&pol, HTTP_ACCESS_TEXT_BODY, &ask), HTTP_ACCESS_FOREIGN_ORIGIN);
    pol.token = "s3cret";
    ask.origin = NULL;
    ask.authorization = "Bearer s3cret";
    CHECK_INT(http_access_decide(&pol, HTTP_ACCESS_TEXT_BODY, &ask), HTTP_ACCESS_OK);
    ask.authorization = "Bearer s3creT";
    CHECK_INT(http_access_decide(&pol, HTTP_ACCESS_TEXT_BODY, &ask), HTTP_ACCESS_CHANGE_TOKEN);
    ask.host = "rebind.evil.example:4318";
    CHECK_INT(http_access_decide(&pol, HTTP_ACCESS_OPEN, &ask), HTTP_ACCESS_FOREIGN_HOST);
}

static const struct check_case cases[] = {
    CHECK_CASE(host),
    CHECK_CASE(origin_type_token),
    CHECK_CASE(decide),
    CHECK_CASE(status),
    CHECK_CASE(ask_of),
    CHECK_CASE(repeated_headers),
    CHECK_CASE(port_and_origins),
};

CHECK_MAIN(cases)
