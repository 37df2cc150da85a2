/*
 * fuzz_http.c: libFuzzer target for the request side of the HTTP module. Arbitrary bytes
 * go through struct http_conn_parser (no sockets), cut into pieces whose sizes come from
 * the first input byte so split tokens are exercised; every complete request goes
 * through the accessors and a reply is built and serialised as the server would.
 */
#include "http.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_request(void *ctx, const struct http_request *req) {
    unsigned *count = ctx;
    (*count)++;
    /* Touch everything the handler may read. */
    size_t n = strlen(req->path) + strlen(req->query) + strlen(req->url);
    const char *h = http_request_header(req, "Host");
    const char *q = http_request_query(req, "window");
    for (size_t i = 0; i < http_request_query_count(req); i++) {
        const char *name, *value;
        http_request_query_at(req, i, &name, &value);
        n += strlen(name) + strlen(value);
    }
    struct http_response res;
    http_response_init(&res, 1 << 16);
    if (req->body_len % 2) {
        http_reply_error(&res, 404, "not_found", "no %s (%zu, %s, %s)", req->path, n, h ? h : "-",
                         q ? q : "-");
    } else {
        http_reply_data(
            &res, json_pack("{s:s,s:s%}", "path", req->path, "body", req->body, req->body_len));
    }
    char head[2048];
    http_response_head(&res, req->keep_alive, head, sizeof head);
    http_response_release(&res);
    /* Pause every third request, as back-pressure does. */
    return *count % 3 == 0 ? HTTP_FEED_PAUSE : HTTP_FEED_CONTINUE;
}

static void on_continue(void *ctx) {
    (void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) {
        return 0;
    }
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_body_bytes = 4096; /* small caps reach the 413/431 paths quickly */
    lim.max_header_bytes = 2048;
    lim.max_url_bytes = 512;
    lim.max_headers = 16;
    lim.max_query_params = 8;
    unsigned count = 0;
    struct http_conn_parser p;
    if (http_conn_parser_init(&p, &lim, on_request, on_continue, &count) != 0) {
        return 0;
    }
    size_t piece = (size_t)data[0] % 64 + 1;
    const char *in = (const char *)data + 1;
    size_t left = size - 1;
    while (left > 0) {
        size_t n = left < piece ? left : piece;
        size_t used = 0;
        int rc = http_conn_parser_feed(&p, in, n, &used);
        if (rc < 0) {
            break;
        }
        if (rc == HTTP_FEED_PAUSED) {
            http_conn_parser_resume(&p);
        }
        if (used > n) {
            __builtin_trap(); /* the parser must never claim more than it was given */
        }
        in += used;
        left -= used;
        if (used == 0 && rc == 0) {
            break;
        }
    }
    http_conn_parser_release(&p);
    return 0;
}
