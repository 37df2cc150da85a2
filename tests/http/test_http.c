/*
 * test_http.c: the HTTP module, parser side (bytes in, requests out) and server side
 * (real TCP on 127.0.0.1, ephemeral port, a toy handler; the server runs its own libuv
 * loop in a thread and the client is plain blocking sockets in the main thread).
 * Every server run ends with uv_loop_close() == 0, so a leaked handle fails the test.
 */
#include "http.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"

/* ---- parser side --------------------------------------------------------------------- */

#define MAX_SEEN 16

struct seen {
    int n;
    char method[MAX_SEEN][16];
    char path[MAX_SEEN][128];
    char query[MAX_SEEN][128];
    char body[MAX_SEEN][256];
    size_t body_len[MAX_SEEN];
    char q_name[MAX_SEEN][64]; /* value of query parameter "name" or "(none)" */
    char q_flag[MAX_SEEN][64]; /* value of query parameter "flag" or "(none)" */
    char h_test[MAX_SEEN][64]; /* value of header X-Test or "(none)" */
    size_t q_count[MAX_SEEN];
    int keep_alive[MAX_SEEN];
    int pause_after; /* pause after this many requests (0 = never) */
};

static void copy_or_none(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "(none)");
}

static int record(void *ctx, const struct http_request *req) {
    struct seen *s = ctx;
    if (s->n < MAX_SEEN) {
        int i = s->n;
        snprintf(s->method[i], sizeof s->method[i], "%s", req->method_name);
        snprintf(s->path[i], sizeof s->path[i], "%s", req->path);
        snprintf(s->query[i], sizeof s->query[i], "%s", req->query);
        size_t n = req->body_len < sizeof s->body[i] - 1 ? req->body_len : sizeof s->body[i] - 1;
        memcpy(s->body[i], req->body, n);
        s->body[i][n] = '\0';
        s->body_len[i] = req->body_len;
        copy_or_none(s->q_name[i], sizeof s->q_name[i], http_request_query(req, "name"));
        copy_or_none(s->q_flag[i], sizeof s->q_flag[i], http_request_query(req, "flag"));
        copy_or_none(s->h_test[i], sizeof s->h_test[i], http_request_header(req, "x-test"));
        s->q_count[i] = http_request_query_count(req);
        s->keep_alive[i] = req->keep_alive;
    }
    s->n++;
    return s->pause_after && s->n == s->pause_after ? HTTP_FEED_PAUSE : HTTP_FEED_CONTINUE;
}

/* Feeds the whole string in one call, or byte by byte; returns the last feed's code. */
static int feed(struct http_conn_parser *p, const char *data, size_t len, int bytewise) {
    if (!bytewise) {
        return http_conn_parser_feed(p, data, len, NULL);
    }
    int rc = DQ_OK;
    for (size_t i = 0; i < len && rc == DQ_OK; i++) {
        rc = http_conn_parser_feed(p, data + i, 1, NULL);
    }
    return rc;
}

static void test_parse_basic(int bytewise) {
    static const char req[] =
        "PUT /api/v1/probes/a%20b?name=x+y%2Fz&flag&empty=&name=second HTTP/1.1\r\n"
        "Host: localhost\r\n"
        "X-Test: hello world\r\n"
        "Content-Length: 11\r\n"
        "\r\n"
        "{\"bins\":64}";
    struct seen s = {0};
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, NULL, record, NULL, &s), DQ_OK);
    CHECK_INT(feed(&p, req, sizeof req - 1, bytewise), DQ_OK);
    CHECK_INT(s.n, 1);
    CHECK_STR(s.method[0], "PUT");
    CHECK_STR(s.path[0], "/api/v1/probes/a b");
    CHECK_STR(s.query[0], "name=x+y%2Fz&flag&empty=&name=second");
    CHECK_STR(s.q_name[0], "x y/z"); /* first occurrence wins */
    CHECK_STR(s.q_flag[0], "");      /* present without '=' */
    CHECK_INT(s.q_count[0], 4);
    CHECK_STR(s.h_test[0], "hello world");
    CHECK_STR(s.body[0], "{\"bins\":64}");
    CHECK_INT(s.body_len[0], 11);
    CHECK_INT(s.keep_alive[0], 1);
    CHECK_INT(http_conn_parser_busy(&p), 0);
    http_conn_parser_release(&p);
}

static void test_parse_pipelined_and_pause(void) {
    static const char reqs[] = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n"
                               "GET /two?name=2 HTTP/1.1\r\nHost: a\r\n\r\n"
                               "POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                               "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
                               "GET /four HTTP/1.0\r\n\r\n";
    struct seen s = {0};
    s.pause_after = 2;
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, NULL, record, NULL, &s), DQ_OK);
    size_t used = 0;
    CHECK_INT(http_conn_parser_feed(&p, reqs, sizeof reqs - 1, &used), HTTP_FEED_PAUSED);
    CHECK_INT(s.n, 2);
    /* consumed exactly the first two requests */
    const char *third = strstr(reqs, "POST");
    CHECK_INT(used, (size_t)(third - reqs));
    http_conn_parser_resume(&p);
    size_t used2 = 0;
    CHECK_INT(http_conn_parser_feed(&p, reqs + used, sizeof reqs - 1 - used, &used2), DQ_OK);
    CHECK_INT(used + used2, sizeof reqs - 1);
    CHECK_INT(s.n, 4);
    CHECK_STR(s.path[0], "/one");
    CHECK_STR(s.path[1], "/two");
    CHECK_STR(s.q_name[1], "2");
    CHECK_STR(s.path[2], "/three");
    CHECK_STR(s.body[2], "hello world"); /* chunked body reassembled */
    CHECK_INT(s.body_len[2], 11);
    CHECK_STR(s.q_name[2], "(none)"); /* no leak of the previous request's query */
    CHECK_STR(s.path[3], "/four");
    CHECK_INT(s.keep_alive[3], 0); /* HTTP/1.0 without keep-alive */
    http_conn_parser_release(&p);
}

/* Feeds `req` to a parser with small limits and checks the failure status. */
static void expect_parse_error(const char *what, const char *req, size_t len, int status) {
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_url_bytes = 64;
    lim.max_header_bytes = 256;
    lim.max_headers = 4;
    lim.max_body_bytes = 16;
    lim.max_query_params = 3;
    struct seen s = {0};
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, &lim, record, NULL, &s), DQ_OK);
    int rc = http_conn_parser_feed(&p, req, len, NULL);
    CHECK_MSG(rc == DQ_EPROTO, "%s: rc %d", what, rc);
    CHECK_MSG(p.error_status == status, "%s: status %d, expected %d (%s)", what, p.error_status,
              status, p.error_msg);
    CHECK_MSG(s.n == 0, "%s: %d requests reached the handler", what, s.n);
    CHECK_MSG(p.error_msg[0] != '\0', "%s: no message", what);
    /* once failed, the stream stays failed */
    CHECK_INT(http_conn_parser_feed(&p, "GET / HTTP/1.1\r\n\r\n", 18, NULL), DQ_EPROTO);
    http_conn_parser_release(&p);
}

static void test_parse_errors(void) {
    char big[1024];
    static const char long_url_head[] = "GET /";
    memcpy(big, long_url_head, sizeof long_url_head - 1);
    memset(big + 5, 'a', 100);
    memcpy(big + 105, " HTTP/1.1\r\n\r\n", 13);
    expect_parse_error("long url", big, 118, 414);

    int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Big: %0300d\r\n\r\n", 7);
    expect_parse_error("long header", big, (size_t)n, 431);

    static const char many[] = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n";
    expect_parse_error("too many headers", many, sizeof many - 1, 431);

    static const char cl[] = "PUT / HTTP/1.1\r\nContent-Length: 17\r\n\r\n";
    expect_parse_error("content-length over cap", cl, sizeof cl - 1, 413);

    static const char chunked[] = "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "a\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n";
    expect_parse_error("chunked over cap", chunked, sizeof chunked - 1, 413);

    static const char garbage[] = "\x01\x02\xff garbage\r\n\r\n";
    expect_parse_error("garbage", garbage, sizeof garbage - 1, 400);

    static const char badver[] = "GET / HTTP/9\r\n\r\n";
    expect_parse_error("bad version", badver, sizeof badver - 1, 400);

    static const char badpct[] = "GET /a%zz HTTP/1.1\r\n\r\n";
    expect_parse_error("bad escape in path", badpct, sizeof badpct - 1, 400);

    static const char nul[] = "GET /a%00b HTTP/1.1\r\n\r\n";
    expect_parse_error("encoded NUL", nul, sizeof nul - 1, 400);

    static const char badq[] = "GET /a?x=%4 HTTP/1.1\r\n\r\n";
    expect_parse_error("bad escape in query", badq, sizeof badq - 1, 400);

    static const char manyq[] = "GET /a?a=1&b=2&c=3&d=4 HTTP/1.1\r\n\r\n";
    expect_parse_error("too many query params", manyq, sizeof manyq - 1, 400);

    static const char connect[] = "CONNECT host:443 HTTP/1.1\r\n\r\n";
    expect_parse_error("connect", connect, sizeof connect - 1, 405);

    static const char star[] = "OPTIONS * HTTP/1.1\r\n\r\n";
    expect_parse_error("asterisk form", star, sizeof star - 1, 400);

    static const char both[] =
        "PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc";
    expect_parse_error("two content-lengths", both, sizeof both - 1, 400);
}

static void test_parse_upgrade(void) {
    /* an Upgrade request is served once, marked not keep-alive, and the rest ignored */
    static const char req[] = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                              "Upgrade: websocket\r\n\r\n\x81\x05hello GET /x HTTP/1.1\r\n\r\n";
    struct seen s = {0};
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, NULL, record, NULL, &s), DQ_OK);
    size_t used = 0;
    CHECK_INT(http_conn_parser_feed(&p, req, sizeof req - 1, &used), DQ_OK);
    CHECK_INT(used, sizeof req - 1);
    CHECK_INT(s.n, 1);
    CHECK_STR(s.path[0], "/ws");
    CHECK_INT(s.keep_alive[0], 0);
    http_conn_parser_release(&p);

    /* ';' is not a query separator (only '&' is) */
    static const char semi[] = "GET /q?name=a;flag=1 HTTP/1.1\r\n\r\n";
    struct seen s2 = {0};
    CHECK_INT(http_conn_parser_init(&p, NULL, record, NULL, &s2), DQ_OK);
    CHECK_INT(http_conn_parser_feed(&p, semi, sizeof semi - 1, NULL), DQ_OK);
    CHECK_STR(s2.q_name[0], "a;flag=1");
    CHECK_STR(s2.q_flag[0], "(none)");
    http_conn_parser_release(&p);
}

static void test_parse_limits_exact(void) {
    /* exactly at the caps is accepted */
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_url_bytes = 10;
    lim.max_body_bytes = 4;
    struct seen s = {0};
    struct http_conn_parser p;
    CHECK_INT(http_conn_parser_init(&p, &lim, record, NULL, &s), DQ_OK);
    static const char ok[] = "PUT /123456789 HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd";
    CHECK_INT(http_conn_parser_feed(&p, ok, sizeof ok - 1, NULL), DQ_OK);
    CHECK_INT(s.n, 1);
    CHECK_STR(s.path[0], "/123456789");
    CHECK_STR(s.body[0], "abcd");
    http_conn_parser_release(&p);
}

/* ---- responses ------------------------------------------------------------------------ */

static void test_responses(void) {
    struct http_response res;
    http_response_init(&res, 1 << 20);
    CHECK_INT(res.status, 404);
    CHECK_INT(http_reply_data(&res, json_pack("{s:i,s:[f,f]}", "n", 3, "pdf", 0.25, 0.75)), DQ_OK);
    CHECK_INT(res.status, 200);
    CHECK_STR(res.content_type, "application/json");
    json_error_t err;
    json_t *j = json_loadb(res.body, res.len, 0, &err);
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "status")), "success");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "data"), "n")), 3);
    CHECK_NEAR(
        json_real_value(json_array_get(json_object_get(json_object_get(j, "data"), "pdf"), 1)),
        0.75, 0);
    json_decref(j);

    CHECK_INT(http_reply_error(&res, 422, "unprocessable", "%d:%d: %s", 3, 7, "unknown probe"),
              DQ_OK);
    CHECK_INT(res.status, 422);
    j = json_loadb(res.body, res.len, 0, &err);
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "status")), "error");
    CHECK_STR(json_string_value(json_object_get(j, "errorType")), "unprocessable");
    CHECK_STR(json_string_value(json_object_get(j, "error")), "3:7: unknown probe");
    json_decref(j);

    /* invalid UTF-8 in the message is made readable rather than dropped */
    CHECK_INT(http_reply_error(&res, 404, "not_found", "no probe %s", "caf\xff"), DQ_OK);
    j = json_loadb(res.body, res.len, 0, &err);
    CHECK_STR(json_string_value(json_object_get(j, "error")), "no probe caf?");
    json_decref(j);

    /* data == NULL (failed constructor) becomes a 500 */
    CHECK(http_reply_data(&res, NULL) == DQ_OK);
    CHECK_INT(res.status, 500);

    CHECK_INT(http_reply_text(&res, 200, NULL, "dqd is healthy.\n", 16), DQ_OK);
    CHECK_STR(res.content_type, "text/plain; charset=utf-8");
    CHECK_INT(res.len, 16);

    CHECK_INT(http_response_add_header(&res, "Retry-After", "5"), DQ_OK);
    CHECK_INT(http_response_add_header(&res, "Bad", "a\r\nInjected: 1"), DQ_EINVAL);
    CHECK_INT(http_response_add_header(&res, "Content-Length", "9"), DQ_EINVAL);
    char head[2048];
    size_t n = http_response_head(&res, 0, head, sizeof head);
    CHECK(n > 0);
    CHECK(strstr(head, "HTTP/1.1 200 OK\r\n") == head);
    CHECK(strstr(head, "Content-Length: 16\r\n") != NULL);
    CHECK(strstr(head, "Retry-After: 5\r\n") != NULL);
    CHECK(strstr(head, "Connection: close\r\n") != NULL);
    CHECK(strstr(head, "Injected") == NULL);
    CHECK(n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0);
    CHECK_INT(http_response_head(&res, 1, head, 10), 0); /* too small */
    http_response_release(&res);

    /* the body cap */
    http_response_init(&res, 100);
    CHECK_INT(http_response_printf(&res, "%090d", 1), DQ_OK);
    CHECK_INT(http_response_printf(&res, "%020d", 2), DQ_EFULL);
    CHECK_INT(res.overflow, 1);
    CHECK_INT(res.len, 90); /* unchanged by the failed append */
    /* a data reply that does not fit becomes a small 500 */
    json_t *arr = json_array();
    for (int i = 0; i < 100; i++) {
        json_array_append_new(arr, json_integer(i));
    }
    CHECK(http_reply_data(&res, arr) < 0);
    CHECK_INT(res.status, 500);
    CHECK(strstr(res.body, "\"internal\"") != NULL);
    http_response_release(&res);

    CHECK_STR(http_error_type(400), "bad_data");
    CHECK_STR(http_error_type(404), "not_found");
    CHECK_STR(http_error_type(405), "method_not_allowed");
    CHECK_STR(http_error_type(422), "unprocessable");
    CHECK_STR(http_error_type(503), "unavailable");
    CHECK_STR(http_error_type(500), "internal");
}

/* ---- server side ------------------------------------------------------------------------ */

/* memmem is a GNU extension; the build is strict POSIX. */
static char *find_bytes(char *hay, size_t n, const char *needle, size_t m) {
    for (size_t i = 0; m <= n && i <= n - m; i++) {
        if (memcmp(hay + i, needle, m) == 0) {
            return hay + i;
        }
    }
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

struct test_server {
    uv_loop_t loop;
    uv_async_t stop;
    uv_thread_t thread;
    uv_sem_t ready;
    struct http_limits lim;
    struct http_server *srv;
    int port;
    int listen_rc;
    int loop_close_rc;
    int closed_cb_ran;
    struct http_server_stats final_stats;
    /* streams (/stream): the toy writes a tick to each one every millisecond */
    uv_timer_t tick;
    struct http_stream *streams[8];
    size_t chunk[8];           /* bytes per tick of each stream */
    atomic_int streams_opened; /* open callbacks */
    atomic_int streams_closed; /* closed callbacks */
    atomic_int writes_refused; /* http_stream_write said DQ_EFULL */
    atomic_int bad_callbacks;  /* a callback about a stream the toy does not hold */
    atomic_int forgotten;      /* closed(NULL): the answer did not become a stream */
};

static size_t toy_next_chunk; /* the chunk size the next opened stream gets */

static void toy_stream_open(void *ctx, struct http_stream *st) {
    struct test_server *t = ctx;
    for (int i = 0; i < 8; i++) {
        if (!t->streams[i]) {
            t->streams[i] = st;
            t->chunk[i] = toy_next_chunk;
            atomic_fetch_add(&t->streams_opened, 1);
            return;
        }
    }
    atomic_fetch_add(&t->bad_callbacks, 1);
}

static void toy_stream_closed(void *ctx, struct http_stream *st) {
    struct test_server *t = ctx;
    if (!st) {
        atomic_fetch_add(&t->forgotten, 1);
        return;
    }
    for (int i = 0; i < 8; i++) {
        if (t->streams[i] == st) {
            t->streams[i] = NULL;
            atomic_fetch_add(&t->streams_closed, 1);
            return;
        }
    }
    atomic_fetch_add(&t->bad_callbacks, 1);
}

static void on_tick(uv_timer_t *tm) {
    struct test_server *t = tm->data;
    static char filler[65536];
    for (int i = 0; i < 8; i++) {
        if (!t->streams[i]) {
            continue;
        }
        size_t n = t->chunk[i] ? t->chunk[i] : 5;
        memset(filler, 'x', n);
        memcpy(filler, "tick\n", 5);
        if (http_stream_write(t->streams[i], filler, n) == DQ_EFULL) {
            atomic_fetch_add(&t->writes_refused, 1);
        }
    }
}

/* The toy handler: a few routes exercising every reply helper. */
static void toy_handler(void *ctx, const struct http_request *req, struct http_response *res) {
    if (strcmp(req->path, "/stream") == 0) {
        /* a stream whose ticks are ?chunk= bytes (5: "tick\n"), bound ?max= bytes */
        const char *chunk = http_request_query(req, "chunk");
        const char *max = http_request_query(req, "max");
        toy_next_chunk = chunk ? (size_t)strtoul(chunk, NULL, 10) : 5;
        struct http_stream_spec spec = {.open = toy_stream_open,
                                        .closed = toy_stream_closed,
                                        .ctx = ctx,
                                        .max_pending = max ? strtoul(max, NULL, 10) : 65536};
        http_reply_text(res, 200, "text/event-stream", "hello\n", 6);
        http_response_add_header(res, "Cache-Control", "no-store");
        CHECK_INT(http_response_stream(res, &spec), DQ_OK);
        if (http_request_query(req, "refuse")) {
            http_reply_error(res, 503, "unavailable", "no stream today");
        }
        return;
    }
    if (strcmp(req->path, "/hello") == 0) {
        http_reply_text(res, 200, NULL, "hello\n", 6);
    } else if (strcmp(req->path, "/echo") == 0) {
        const char *name = http_request_query(req, "name");
        const char *hdr = http_request_header(req, "X-Test");
        http_reply_data(res,
                        json_pack("{s:s,s:s,s:s?,s:s?,s:s%,s:i}", "method", req->method_name,
                                  "path", req->path, "name", name, "header", hdr, "body", req->body,
                                  req->body_len, "body_len", (json_int_t)req->body_len));
    } else if (strcmp(req->path, "/big") == 0) {
        /* n bytes: the tag, then filler */
        const char *ns = http_request_query(req, "n");
        const char *tag = http_request_query(req, "tag");
        long n = ns ? strtol(ns, NULL, 10) : 0;
        http_response_set_type(res, "application/octet-stream");
        res->status = 200;
        http_response_printf(res, "%s;", tag ? tag : "-");
        while ((long)res->len < n &&
               http_response_append(res, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32) == DQ_OK) {
        }
        res->len = (size_t)n > res->len ? res->len : (size_t)n;
    } else if (strcmp(req->path, "/close") == 0) {
        http_reply_text(res, 200, NULL, "bye\n", 4);
        res->close = 1;
    } else {
        http_reply_error(res, 404, "not_found", "no route %s", req->path);
    }
}

static void on_server_closed(void *arg) {
    struct test_server *t = arg;
    t->closed_cb_ran = 1;
}

static void on_stop(uv_async_t *a) {
    struct test_server *t = a->data;
    http_server_get_stats(t->srv, &t->final_stats);
    http_server_close(t->srv, on_server_closed, t);
    t->srv = NULL;
    uv_close((uv_handle_t *)a, NULL);
    uv_close((uv_handle_t *)&t->tick, NULL);
}

static void server_thread(void *arg) {
    struct test_server *t = arg;
    uv_loop_init(&t->loop);
    uv_async_init(&t->loop, &t->stop, on_stop);
    t->stop.data = t;
    uv_timer_init(&t->loop, &t->tick);
    t->tick.data = t;
    uv_timer_start(&t->tick, on_tick, 1, 1);
    http_server_create(&t->loop, &t->lim, toy_handler, t, &t->srv);
    t->listen_rc = http_server_listen(t->srv, "127.0.0.1", 0);
    t->port = http_server_port(t->srv);
    uv_sem_post(&t->ready);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    t->loop_close_rc = uv_loop_close(&t->loop);
}

static void server_start(struct test_server *t, const struct http_limits *lim) {
    memset(t, 0, sizeof *t);
    if (lim) {
        t->lim = *lim;
    } else {
        http_limits_default(&t->lim);
    }
    uv_sem_init(&t->ready, 0);
    uv_thread_create(&t->thread, server_thread, t);
    uv_sem_wait(&t->ready);
    uv_sem_destroy(&t->ready);
    CHECK_INT(t->listen_rc, DQ_OK);
    CHECK(t->port > 0);
}

static void server_stop(struct test_server *t) {
    uv_async_send(&t->stop);
    uv_thread_join(&t->thread);
    CHECK_INT(t->closed_cb_ran, 1);
    CHECK_MSG(t->loop_close_rc == 0, "uv_loop_close: %s", uv_strerror(t->loop_close_rc));
}

static int client_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_str(int fd, const char *s) {
    return send_all(fd, s, strlen(s));
}

/* A client connection with a buffer, so pipelined responses can be read one by one. */
struct client {
    int fd;
    char buf[1 << 20];
    size_t len;
};

struct resp {
    int status;
    int close;
    char content_type[160];
    char *body; /* malloc'd, NUL-terminated */
    size_t body_len;
};

static void resp_free(struct resp *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Reads more bytes into c->buf; returns bytes read, 0 on EOF, -1 on error/timeout. */
static ssize_t client_fill(struct client *c) {
    if (c->len == sizeof c->buf) {
        return -1;
    }
    ssize_t n;
    do {
        n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        c->len += (size_t)n;
    }
    return n;
}

static const char *find_header(const char *head, size_t head_len, const char *name, char *out,
                               size_t cap) {
    size_t nl = strlen(name);
    const char *p = head;
    const char *end = head + head_len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            break;
        }
        if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') {
                v++;
            }
            size_t vl = (size_t)(eol - v);
            if (vl && v[vl - 1] == '\r') {
                vl--;
            }
            snprintf(out, cap, "%.*s", (int)vl, v);
            return out;
        }
        p = eol + 1;
    }
    return NULL;
}

/* Reads one response (skipping 1xx); returns 0, or -1 on EOF/timeout/garbage. */
static int client_read(struct client *c, struct resp *r) {
    memset(r, 0, sizeof *r);
    for (;;) {
        char *end = NULL;
        while (!(end = find_bytes(c->buf, c->len, "\r\n\r\n", 4))) {
            if (client_fill(c) <= 0) {
                return -1;
            }
        }
        size_t head_len = (size_t)(end - c->buf) + 4;
        if (sscanf(c->buf, "HTTP/1.1 %d", &r->status) != 1) {
            return -1;
        }
        char v[128];
        if (r->status >= 100 && r->status < 200) {
            memmove(c->buf, c->buf + head_len, c->len - head_len);
            c->len -= head_len;
            continue;
        }
        size_t cl = 0;
        if (find_header(c->buf, head_len, "Content-Length", v, sizeof v)) {
            cl = strtoul(v, NULL, 10);
        }
        if (find_header(c->buf, head_len, "Connection", v, sizeof v)) {
            r->close = strcasecmp(v, "close") == 0;
        }
        if (find_header(c->buf, head_len, "Content-Type", v, sizeof v)) {
            snprintf(r->content_type, sizeof r->content_type, "%s", v);
        }
        while (c->len < head_len + cl) {
            if (client_fill(c) <= 0) {
                return -1;
            }
        }
        r->body = malloc(cl + 1);
        memcpy(r->body, c->buf + head_len, cl);
        r->body[cl] = '\0';
        r->body_len = cl;
        memmove(c->buf, c->buf + head_len + cl, c->len - head_len - cl);
        c->len -= head_len + cl;
        return 0;
    }
}

/* After a response: the server must close (recv returns 0). */
static int client_sees_eof(struct client *c) {
    char tmp[4096];
    for (;;) {
        ssize_t n = recv(c->fd, tmp, sizeof tmp, 0);
        if (n == 0) {
            return 1;
        }
        if (n < 0) {
            return errno == ECONNRESET;
        }
    }
}

static struct client *client_new(int port) {
    struct client *c = malloc(sizeof *c);
    c->fd = client_connect(port);
    c->len = 0;
    return c;
}

static void client_free(struct client *c) {
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c);
}

static json_t *body_data(const struct resp *r) {
    json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
    json_t *d = json_incref(json_object_get(j, "data"));
    json_decref(j);
    return d;
}

static void test_server_basic(void) {
    struct test_server t;
    server_start(&t, NULL);
    struct client *c = client_new(t.port);
    CHECK(c->fd >= 0);
    struct resp r;

    /* GET, then on the same connection (keep-alive) a PUT with a body */
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "hello\n");
    CHECK_STR(r.content_type, "text/plain; charset=utf-8");
    CHECK_INT(r.close, 0);
    resp_free(&r);

    char body[5000];
    memset(body, 'b', sizeof body);
    char head[256];
    snprintf(head, sizeof head, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
             sizeof body);
    CHECK_INT(send_str(c->fd, head), 0);
    CHECK_INT(send_all(c->fd, body, sizeof body), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.content_type, "application/json");
    json_t *d = body_data(&r);
    CHECK_STR(json_string_value(json_object_get(d, "method")), "PUT");
    CHECK_INT(json_integer_value(json_object_get(d, "body_len")), 5000);
    json_decref(d);
    resp_free(&r);

    /* query and path decoding over the wire */
    CHECK_INT(send_str(c->fd, "GET /ec%68o?name=a%20b+c&x=%E2%82%AC HTTP/1.1\r\nHost: x\r\n"
                              "X-Test: yes\r\n\r\n"),
              0);
    CHECK_INT(client_read(c, &r), 0);
    d = body_data(&r);
    CHECK_STR(json_string_value(json_object_get(d, "path")), "/echo");
    CHECK_STR(json_string_value(json_object_get(d, "name")), "a b c");
    CHECK_STR(json_string_value(json_object_get(d, "header")), "yes");
    json_decref(d);
    resp_free(&r);

    /* unknown route: the handler's error envelope */
    CHECK_INT(send_str(c->fd, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 404);
    CHECK(strstr(r.body, "\"errorType\":\"not_found\"") != NULL);
    resp_free(&r);

    /* HEAD: the length of the GET body, no body bytes (the next response parses cleanly) */
    CHECK_INT(send_str(c->fd, "HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"),
              0);
    char *end = NULL;
    while (!(end = find_bytes(c->buf, c->len, "\r\n\r\n", 4))) {
        CHECK(client_fill(c) > 0);
    }
    CHECK(strstr(c->buf, "Content-Length: 6\r\n") != NULL);
    size_t hl = (size_t)(end - c->buf) + 4;
    memmove(c->buf, c->buf + hl, c->len - hl);
    c->len -= hl;
    CHECK_INT(client_read(c, &r), 0);
    CHECK_STR(r.body, "hello\n");
    resp_free(&r);

    /* Expect: 100-continue gets the interim response, then the answer */
    CHECK_INT(send_str(c->fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                              "Expect: 100-continue\r\n\r\n"),
              0);
    while (!find_bytes(c->buf, c->len, "\r\n\r\n", 4)) {
        CHECK(client_fill(c) > 0);
    }
    CHECK(strncmp(c->buf, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0);
    CHECK_INT(send_str(c->fd, "abc"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    d = body_data(&r);
    CHECK_STR(json_string_value(json_object_get(d, "body")), "abc");
    json_decref(d);
    resp_free(&r);

    /* the handler asks to close */
    CHECK_INT(send_str(c->fd, "GET /close HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.close, 1);
    CHECK_STR(r.body, "bye\n");
    CHECK(client_sees_eof(c));
    resp_free(&r);
    client_free(c);

    /* HTTP/1.0 without keep-alive: answered, then closed */
    c = client_new(t.port);
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.0\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.close, 1);
    CHECK(client_sees_eof(c));
    resp_free(&r);
    client_free(c);

    /* HTTP/1.0 with keep-alive: told so, and the connection stays usable */
    c = client_new(t.port);
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.close, 0);
    resp_free(&r);
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 0);
    while (!find_bytes(c->buf, c->len, "\r\n\r\n", 4)) {
        CHECK(client_fill(c) > 0);
    }
    CHECK(find_bytes(c->buf, c->len, "\r\nConnection: keep-alive\r\n", 26) != NULL);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(c);

    /* a client that half-closes after its request still gets the answer */
    c = client_new(t.port);
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    shutdown(c->fd, SHUT_WR);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    CHECK(client_sees_eof(c));
    resp_free(&r);
    client_free(c);

    /* a connection left open at shutdown is closed by http_server_close */
    c = client_new(t.port);
    CHECK_INT(send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(c, &r), 0);
    resp_free(&r);
    server_stop(&t);
    CHECK(client_sees_eof(c));
    client_free(c);
    CHECK_INT(t.final_stats.requests, 13);
    CHECK_INT(t.final_stats.bad_requests, 0);
}

static void test_server_pipelining(void) {
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_pending_write = 64 * 1024; /* forces the back-pressure path */
    lim.max_response_bytes = 200000;
    struct test_server t;
    server_start(&t, &lim);
    struct client *c = client_new(t.port);

    /* three small requests in one write, answered in order */
    CHECK_INT(send_str(c->fd, "GET /echo?name=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /echo?name=2 HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /echo?name=3 HTTP/1.1\r\nHost: x\r\n\r\n"),
              0);
    for (int i = 1; i <= 3; i++) {
        struct resp r;
        CHECK_INT(client_read(c, &r), 0);
        json_t *d = body_data(&r);
        char want[16];
        snprintf(want, sizeof want, "%d", i);
        CHECK_STR(json_string_value(json_object_get(d, "name")), want);
        json_decref(d);
        resp_free(&r);
    }

    /* 40 requests for 100 kB each in one write: 4 MB of answers, 64 KiB pending cap */
    char reqs[40 * 64];
    size_t len = 0;
    for (int i = 0; i < 40; i++) {
        len += (size_t)snprintf(reqs + len, sizeof reqs - len,
                                "GET /big?n=100000&tag=%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    }
    CHECK_INT(send_all(c->fd, reqs, len), 0);
    int in_order = 1;
    for (int i = 0; i < 40; i++) {
        struct resp r;
        if (client_read(c, &r) != 0) {
            CHECK_MSG(0, "pipelined response %d missing", i);
            break;
        }
        CHECK_INT(r.body_len, 100000);
        if (atoi(r.body) != i) {
            in_order = 0;
        }
        resp_free(&r);
    }
    CHECK(in_order);

    /* an answer over the response cap becomes a 500, and the connection goes on */
    CHECK_INT(send_str(c->fd, "GET /big?n=300000 HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"),
              0);
    struct resp r;
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 500);
    CHECK(r.body && strstr(r.body, "response larger than 200000 bytes") != NULL);
    resp_free(&r);
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(c);
    server_stop(&t);
    CHECK_INT(t.final_stats.requests, 45);
}

/* Sends raw bytes on a fresh connection; expects `status` and then the close. */
static void expect_refusal(int port, const char *what, const char *data, size_t len, int status) {
    struct client *c = client_new(port);
    CHECK(c->fd >= 0);
    send_all(c->fd, data, len);
    struct resp r;
    int rc = client_read(c, &r);
    CHECK_MSG(rc == 0, "%s: no response", what);
    CHECK_MSG(r.status == status, "%s: status %d, expected %d", what, r.status, status);
    CHECK_MSG(r.close == 1, "%s: no Connection: close", what);
    CHECK_MSG(r.body && strstr(r.body, "\"status\":\"error\"") != NULL, "%s: body %s", what,
              r.body ? r.body : "(null)");
    CHECK_MSG(client_sees_eof(c), "%s: connection left open", what);
    resp_free(&r);
    client_free(c);
}

static void test_server_refusals(void) {
    struct test_server t;
    server_start(&t, NULL);
    size_t n = 3 * 1024 * 1024;
    char *big = malloc(n);

    /* URL over 2 KiB */
    int k = snprintf(big, n, "GET /");
    memset(big + k, 'u', 3000);
    k += 3000;
    k += snprintf(big + k, n - (size_t)k, " HTTP/1.1\r\nHost: x\r\n\r\n");
    expect_refusal(t.port, "url", big, (size_t)k, 414);

    /* headers over 8 KiB */
    k = snprintf(big, n, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + k, 'h', 9000);
    k += 9000;
    k += snprintf(big + k, n - (size_t)k, "\r\n\r\n");
    expect_refusal(t.port, "headers", big, (size_t)k, 431);

    /* body over 1 MiB, announced: refused from the headers, without reading the body */
    k = snprintf(big, n, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
    expect_refusal(t.port, "body", big, (size_t)k, 413);

    /* and sent in full (the server must still answer despite the unread upload) */
    k = snprintf(big, n, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
    memset(big + k, 'b', 2000000);
    expect_refusal(t.port, "body sent", big, (size_t)k + 2000000, 413);

    /* chunked body over 1 MiB */
    k = snprintf(big, n, "PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 20; i++) {
        k += snprintf(big + k, n - (size_t)k, "10000\r\n");
        memset(big + k, 'c', 0x10000);
        k += 0x10000;
        k += snprintf(big + k, n - (size_t)k, "\r\n");
    }
    expect_refusal(t.port, "chunked body", big, (size_t)k, 413);

    /* garbage */
    static const char garbage[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n";
    expect_refusal(t.port, "garbage", garbage, sizeof garbage - 1, 400);
    static const char nul[] = "GET /\0 HTTP/1.1\r\n\r\n";
    expect_refusal(t.port, "NUL in target", nul, sizeof nul - 1, 400);
    free(big);

    /* a good request after a bad one in the same pipeline is not served */
    struct client *c = client_new(t.port);
    send_str(c->fd, "BREW /pot HTCPCP/1.0\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 400);
    resp_free(&r);
    CHECK(client_sees_eof(c));
    client_free(c);

    /* the server still serves */
    c = client_new(t.port);
    send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(c);
    server_stop(&t);
    CHECK_INT(t.final_stats.bad_requests, 8);
}

static double now_ms(void) {
    return (double)uv_hrtime() / 1e6;
}

static void test_server_timeouts(void) {
    struct http_limits lim;
    http_limits_default(&lim);
    lim.idle_timeout_ms = 300;
    lim.request_timeout_ms = 400;
    struct test_server t;
    server_start(&t, &lim);

    /* silent client: closed after the idle timeout */
    struct client *c = client_new(t.port);
    double t0 = now_ms();
    CHECK(client_sees_eof(c));
    double el = now_ms() - t0;
    CHECK_MSG(el >= 250 && el < 3000, "idle close after %.0f ms", el);
    client_free(c);

    /* idle after a served request: the timer restarts from the response */
    c = client_new(t.port);
    send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    CHECK_INT(client_read(c, &r), 0);
    resp_free(&r);
    t0 = now_ms();
    CHECK(client_sees_eof(c));
    el = now_ms() - t0;
    CHECK_MSG(el >= 250 && el < 3000, "idle close after %.0f ms", el);
    client_free(c);

    /* slow client: trickles a request; the request timer is not reset by reads -> 408 */
    c = client_new(t.port);
    t0 = now_ms();
    send_str(c->fd, "GET /hello HTTP/1.1\r\n");
    for (int i = 0; i < 4; i++) {
        sleep_ms(150);
        send_str(c->fd, "X-Slow: 1\r\n");
    }
    CHECK_INT(client_read(c, &r), 0);
    el = now_ms() - t0;
    CHECK_INT(r.status, 408);
    CHECK_MSG(el >= 350 && el < 3000, "408 after %.0f ms", el);
    resp_free(&r);
    CHECK(client_sees_eof(c));
    client_free(c);

    server_stop(&t);
    CHECK_INT(t.final_stats.timeouts, 3);
}

static void test_server_many_connections(void) {
    struct test_server t;
    server_start(&t, NULL);
    enum { BATCH = 100, ROUNDS = 10 };
    int fds[BATCH];
    int opened = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < BATCH; i++) {
            fds[i] = client_connect(t.port);
            if (fds[i] >= 0) {
                opened++;
                /* a third send half a request, a third a whole one, the rest nothing */
                if (i % 3 == 1) {
                    send_str(fds[i], "GET /hel");
                } else if (i % 3 == 2) {
                    send_str(fds[i], "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
                }
            }
        }
        for (int i = 0; i < BATCH; i++) {
            if (fds[i] >= 0) {
                close(fds[i]);
            }
        }
    }
    CHECK_INT(opened, BATCH * ROUNDS);

    /* still serving; wait until the server has noticed all the closes */
    struct client *c = client_new(t.port);
    struct resp r;
    send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(c);
    server_stop(&t);
    CHECK_INT(t.final_stats.connections_accepted, BATCH * ROUNDS + 1);
    CHECK_INT(t.final_stats.connections_rejected, 0);
}

/* 1 when the server closed c (EOF or reset within ~1 s). */
static int client_closed(struct client *c) {
    for (int i = 0; i < 50; i++) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        if (poll(&pfd, 1, 20) > 0) {
            char b[256];
            ssize_t n = recv(c->fd, b, sizeof b, 0);
            if (n <= 0) {
                return 1;
            }
        }
    }
    return 0;
}

static void test_server_connection_cap(void) {
    static const char *const reserve_paths[] = {"/echo", NULL};
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_connections = 4;
    lim.reserve_connections = 1;
    lim.reserve_paths = reserve_paths;
    struct test_server t;
    server_start(&t, &lim);
    struct client *cs[4];
    struct resp r;
    for (int i = 0; i < 4; i++) {
        cs[i] = client_new(t.port);
        send_str(cs[i]->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
        CHECK_INT(client_read(cs[i], &r), 0); /* accepted and served, then idle */
        resp_free(&r);
        sleep_ms(5);
    }
    /* at the cap with idle connections: the one idle the longest makes room */
    struct client *extra = client_new(t.port);
    send_str(extra->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(client_read(extra, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    CHECK(client_closed(cs[0])); /* the oldest idle one went */
    client_free(cs[0]);
    cs[0] = extra;
    /* connections in the middle of a request are not idle: the next one is a reserve
     * connection, served only for the reserve's paths */
    for (int i = 0; i < 4; i++) {
        send_str(cs[i]->fd, "GET /hello HTTP/1.1\r\n"); /* a request begun, not ended */
    }
    sleep_ms(50);
    struct client *res1 = client_new(t.port);
    send_str(res1->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(client_read(res1, &r), 0);
    CHECK_INT(r.status, 503);
    CHECK(r.body && strstr(r.body, "kept for health checks") != NULL);
    resp_free(&r);
    client_free(res1);
    sleep_ms(50);
    struct client *res2 = client_new(t.port);
    send_str(res2->fd, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(client_read(res2, &r), 0);
    CHECK_INT(r.status, 200); /* a health check still answers */
    resp_free(&r);
    send_str(res2->fd, "GET /echo HTTP/1.1\r\n"); /* busy too: nothing is idle now */
    sleep_ms(50);
    /* past the cap and the reserve: refused at once */
    struct client *over = client_new(t.port);
    CHECK_INT(client_read(over, &r), 0);
    CHECK_INT(r.status, 503);
    CHECK(strstr(r.body, "too many connections") != NULL);
    json_t *j = json_loadb(r.body, r.body_len, 0, NULL); /* the canned body is valid JSON */
    CHECK(j != NULL);
    json_decref(j);
    resp_free(&r);
    client_free(over);
    client_free(res2);
    for (int i = 0; i < 4; i++) {
        client_free(cs[i]);
    }
    server_stop(&t);
    CHECK(t.final_stats.connections_shed >= 1);
    CHECK(t.final_stats.reserve_refused >= 1);
    CHECK(t.final_stats.connections_rejected >= 1);
}

/* Waits (up to 10 s) until *v reaches want. */
static int wait_atomic(atomic_int *v, int want) {
    for (int i = 0; i < 1000 && atomic_load(v) < want; i++) {
        sleep_ms(10);
    }
    return atomic_load(v);
}

static void test_server_streams(void) {
    struct test_server t;
    server_start(&t, NULL);
    struct http_stream_spec bad = {.open = NULL};
    struct http_response tmp;
    http_response_init(&tmp, 100);
    CHECK_INT(http_response_stream(&tmp, &bad), DQ_EINVAL);
    CHECK_INT(tmp.streaming, 0);
    http_response_release(&tmp);

    /* a stream: head without a length, the handler's body, then the ticks */
    struct client *a = client_new(t.port);
    CHECK_INT(send_str(a->fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    char *end = NULL;
    while (!(end = find_bytes(a->buf, a->len, "tick\n", 5)) && client_fill(a) > 0) {
    }
    CHECK(end != NULL);
    char *head_end = find_bytes(a->buf, a->len, "\r\n\r\n", 4);
    CHECK(head_end != NULL);
    if (head_end) {
        size_t hl = (size_t)(head_end - a->buf) + 4;
        char v[128];
        CHECK(strncmp(a->buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
        CHECK(find_header(a->buf, hl, "Content-Length", v, sizeof v) == NULL);
        CHECK_STR(find_header(a->buf, hl, "Content-Type", v, sizeof v), "text/event-stream");
        CHECK_STR(find_header(a->buf, hl, "Connection", v, sizeof v), "close");
        CHECK_STR(find_header(a->buf, hl, "Cache-Control", v, sizeof v), "no-store");
        CHECK(strncmp(head_end + 4, "hello\ntick\n", 11) == 0);
    }
    CHECK_INT(wait_atomic(&t.streams_opened, 1), 1);
    /* requests after the stream's are not answered: the connection reads nothing more */
    CHECK_INT(send_str(a->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    a->len = 0;
    for (int i = 0; i < 20; i++) {
        client_fill(a);
    }
    CHECK(find_bytes(a->buf, a->len, "hello\n", 6) == NULL);
    CHECK(find_bytes(a->buf, a->len, "tick\n", 5) != NULL);

    /* HEAD, and a status other than 200 after the call: ordinary answers, no stream */
    struct client *h = client_new(t.port);
    struct resp r;
    CHECK_INT(send_str(h->fd, "GET /stream?refuse=1 HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(h, &r), 0);
    CHECK_INT(r.status, 503);
    resp_free(&r);
    CHECK_INT(send_str(h->fd, "HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"),
              0);
    while (!find_bytes(h->buf, h->len, "hello\n", 6) && client_fill(h) > 0) {
    }
    CHECK(find_bytes(h->buf, h->len, "Content-Length: 6\r\n", 19) != NULL);
    CHECK(find_bytes(h->buf, h->len, "tick", 4) == NULL);
    client_free(h);
    sleep_ms(50);
    CHECK_INT(atomic_load(&t.streams_opened), 1);
    CHECK_INT(atomic_load(&t.forgotten), 2); /* the 503 and the HEAD */

    /* the client leaves: the owner hears of it */
    client_free(a);
    CHECK_INT(wait_atomic(&t.streams_closed, 1), 1);

    /* a client that never reads (small receive buffer): dropped once 64 KiB are unsent,
     * while the server goes on answering others */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t.port)};
    sa.sin_addr.s_addr = htonl(0x7f000001);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    CHECK_INT(send_str(fd, "GET /stream?chunk=16384&max=65536 HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(wait_atomic(&t.streams_opened, 2), 2);
    CHECK_INT(wait_atomic(&t.writes_refused, 1), 1);
    CHECK_INT(wait_atomic(&t.streams_closed, 2), 2);
    struct client *b = client_new(t.port);
    CHECK_INT(send_str(b->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(client_read(b, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(b);
    close(fd);

    /* a request pipelined after the stream's, in the same packet: not answered */
    struct client *pl = client_new(t.port);
    CHECK_INT(send_str(pl->fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"),
              0);
    while (!find_bytes(pl->buf, pl->len, "tick\ntick\n", 10) && client_fill(pl) > 0) {
    }
    CHECK(find_bytes(pl->buf, pl->len, "tick\ntick\n", 10) != NULL);
    CHECK(find_bytes(pl->buf, pl->len, "hello\ntick", 10) != NULL); /* the stream's body */
    CHECK(find_bytes(pl->buf, pl->len, "HTTP/1.1 200 OK", 15) == pl->buf);
    CHECK(find_bytes(pl->buf + 15, pl->len - 15, "HTTP/1.1", 8) == NULL);
    CHECK_INT(wait_atomic(&t.streams_opened, 3), 3);
    client_free(pl);
    CHECK_INT(wait_atomic(&t.streams_closed, 3), 3);

    /* a stream still open when the server closes: closed too */
    struct client *c = client_new(t.port);
    CHECK_INT(send_str(c->fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    CHECK_INT(wait_atomic(&t.streams_opened, 4), 4);
    server_stop(&t);
    client_free(c);
    CHECK_INT(atomic_load(&t.streams_closed), 4);
    CHECK_INT(atomic_load(&t.bad_callbacks), 0);
    CHECK_INT(t.final_stats.streams_opened, 4);
    CHECK_INT(t.final_stats.streams_dropped, 1);
    CHECK_INT(t.final_stats.streams_open, 1);
}

/* Clients that pipeline requests and never read: the unsent answers of all connections
 * stay under max_total_pending (the worst is closed), while a reading client is served. */
static void test_server_unread_bound(void) {
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_pending_write = 64 * 1024;
    lim.max_total_pending = 4u * 1024 * 1024;
    struct test_server t;
    server_start(&t, &lim);
    enum { N = 8 };
    struct client *cs[N];
    char req[64];
    int rl = snprintf(req, sizeof req, "GET /big?n=1000000 HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < N; i++) {
        cs[i] = client_new(t.port);
        int bufsz = 4096; /* a small receive window: the answers stay in dqd's memory */
        setsockopt(cs[i]->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
        for (int k = 0; k < 20; k++) {
            send(cs[i]->fd, req, (size_t)rl, MSG_NOSIGNAL);
        }
    }
    sleep_ms(500);
    struct client *c = client_new(t.port); /* a client that reads is served all the same */
    send_str(c->fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    CHECK_INT(client_read(c, &r), 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    client_free(c);
    server_stop(&t); /* its counters are taken on the loop, the pipeliners still connected */
    struct http_server_stats *st = &t.final_stats;
    CHECK_MSG(st->pending_bytes <= lim.max_total_pending + 1000100, "pending %llu over the bound",
              (unsigned long long)st->pending_bytes);
    CHECK_MSG(st->unread_dropped >= 1, "unread_dropped %llu",
              (unsigned long long)st->unread_dropped);
    for (int i = 0; i < N; i++) {
        client_free(cs[i]);
    }
}

static void test_listen_errors(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct http_server *a = NULL, *b = NULL;
    CHECK_INT(http_server_create(&loop, NULL, toy_handler, NULL, &a), DQ_OK);
    CHECK_INT(http_server_listen(a, "not-an-ip", 0), DQ_EINVAL);
    CHECK_INT(http_server_listen(a, "127.0.0.1", 70000), DQ_EINVAL);
    CHECK_INT(http_server_listen(a, "127.0.0.1", 0), DQ_OK);
    CHECK_INT(http_server_create(&loop, NULL, toy_handler, NULL, &b), DQ_OK);
    CHECK_INT(http_server_listen(b, "127.0.0.1", http_server_port(a)), DQ_ENET);
    CHECK(strstr(dq_last_error(), "address already in use") != NULL);
    http_server_close(a, NULL, NULL);
    http_server_close(b, NULL, NULL);
    http_server_close(NULL, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&loop), 0);
}

/* the parser fed the whole buffer at once, and one byte at a time */
static void test_parse_whole(void) {
    test_parse_basic(0);
}

static void test_parse_bytewise(void) {
    test_parse_basic(1);
}

static const struct check_case cases[] = {
    CHECK_CASE(parse_whole),
    CHECK_CASE(parse_bytewise),
    CHECK_CASE(parse_pipelined_and_pause),
    CHECK_CASE(parse_errors),
    CHECK_CASE(parse_limits_exact),
    CHECK_CASE(parse_upgrade),
    CHECK_CASE(responses),
    CHECK_CASE(listen_errors),
    CHECK_CASE(server_basic),
    CHECK_CASE(server_pipelining),
    CHECK_CASE(server_refusals),
    CHECK_CASE(server_timeouts),
    CHECK_CASE(server_many_connections),
    CHECK_CASE(server_connection_cap),
    CHECK_CASE(server_streams),
    CHECK_CASE(server_unread_bound),
};

CHECK_MAIN(cases)
