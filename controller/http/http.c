/*
 * http.c: the HTTP/1.1 server of dqd's API (see http.h for the contract).
 *
 * Design. Each connection owns a fixed read buffer, an http-parser state wrapped in a
 * struct http_conn_parser, and a timer. Bytes are parsed in place; the parser copies the
 * request target and headers into one capped buffer and the body into another, so a
 * request is complete and NUL-terminated when the handler runs. The handler is called
 * synchronously from the parser's message-complete callback, so pipelined requests are
 * answered in order simply by queueing each response's uv_write as it is produced.
 *
 * Back-pressure: when a connection's unsent responses exceed max_pending_write, the
 * parser is paused after the current request, reading stops, and the rest of the read
 * buffer waits until the writes drain. A request that must end the connection (HTTP/1.0
 * without keep-alive, "Connection: close", a parse error) is answered, the write side
 * is shut down once everything is sent, and further input is discarded until the peer
 * closes or the linger timeout fires: closing with unread input would make the kernel
 * send a reset that can destroy the error response before the client reads it.
 *
 * Streams (Server-Sent Events): a handler may make its 200 answer a stream. The head goes
 * out without a length, the connection stops parsing (input is read and discarded, so a
 * peer's close is seen at once) and loses its idle timer; its owner queues bytes with
 * http_stream_write. Each stream's unsent bytes are bounded: past the bound the stream
 * is closed and counted as dropped, so a client that never reads costs at most that much
 * memory (plus the kernel's socket buffers) and never blocks the loop. The owner hears
 * of the close from the handle's close callback, never from inside its own call.
 *
 * Handles: the listener, and per connection a uv_tcp_t and a uv_timer_t, are freed only
 * in their close callbacks; the server itself is freed after the last one.
 */
#include "http.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_READ_BUF 16384     /* per-connection read buffer */
#define HTTP_LINGER_MAX_MS 5000 /* waiting for the peer's FIN after our shutdown */
#define HTTP_ERROR_MSG_MAX 1024 /* error envelope message cap */
#define HTTP_HEAD_MAX (HTTP_RESPONSE_MAX_EXTRA + 512)
#define HTTP_NO_VALUE UINT32_MAX
#define HTTP_SMALL_ANSWER 65536 /* answers this small are sent past max_total_pending */

/* ---- limits ------------------------------------------------------------------------ */

void http_limits_default(struct http_limits *lim) {
    lim->max_url_bytes = 2048;
    lim->max_header_bytes = 8192;
    lim->max_headers = 64;
    lim->max_body_bytes = 1024 * 1024;
    lim->max_query_params = 32;
    lim->max_response_bytes = 64u * 1024 * 1024;
    lim->max_pending_write = 1024 * 1024;
    static const char *const reserve[] = {"/-/healthy", "/metrics", NULL};
    lim->max_connections = 1024;
    lim->reserve_connections = 16;
    lim->reserve_paths = reserve;
    lim->max_total_pending = 64u * 1024 * 1024;
    lim->idle_timeout_ms = 30000;
    lim->request_timeout_ms = 30000;
}

/* ---- capped buffers ------------------------------------------------------------------ */

/* Makes room for `extra` more bytes plus a terminator, never beyond max + 1 bytes. */
static int buf_reserve(struct http_buf *b, size_t extra, size_t max) {
    if (extra > max || b->len > max - extra) {
        return DQ_EFULL;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) {
        return DQ_OK;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    if (cap > max + 1) {
        cap = max + 1;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        return DQ_ENOMEM;
    }
    b->data = d;
    b->cap = cap;
    return DQ_OK;
}

static int buf_append(struct http_buf *b, const char *data, size_t len, size_t max) {
    int rc = buf_reserve(b, len, max);
    if (rc < 0) {
        return rc;
    }
    if (len) {
        memcpy(b->data + b->len, data, len);
    }
    b->len += len;
    b->data[b->len] = '\0';
    return DQ_OK;
}

/* Appends a NUL that counts as content (separates pieces stored in one buffer). */
static int buf_append_nul(struct http_buf *b, size_t max) {
    int rc = buf_reserve(b, 1, max);
    if (rc < 0) {
        return rc;
    }
    b->data[b->len++] = '\0';
    b->data[b->len] = '\0';
    return DQ_OK;
}

static void buf_release(struct http_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- responses ------------------------------------------------------------------------ */

void http_response_init(struct http_response *res, size_t max) {
    memset(res, 0, sizeof *res);
    res->status = 404;
    res->max = max;
    memcpy(res->content_type, "text/plain; charset=utf-8", sizeof "text/plain; charset=utf-8");
}

void http_response_release(struct http_response *res) {
    free(res->body);
    res->body = NULL;
    res->len = res->cap = 0;
}

void http_response_clear(struct http_response *res) {
    res->len = 0;
    res->overflow = 0;
}

int http_response_append(struct http_response *res, const void *data, size_t len) {
    if (len > res->max || res->len > res->max - len) {
        res->overflow = 1;
        return dq_fail(DQ_EFULL, "response body over %zu bytes", res->max);
    }
    if (res->len + len > res->cap) {
        size_t cap = res->cap ? res->cap : 1024;
        while (cap < res->len + len) {
            cap *= 2;
        }
        if (cap > res->max) {
            cap = res->max;
        }
        char *b = realloc(res->body, cap);
        if (!b) {
            res->overflow = 1;
            return dq_fail(DQ_ENOMEM, "out of memory for a %zu-byte response", cap);
        }
        res->body = b;
        res->cap = cap;
    }
    if (len) {
        memcpy(res->body + res->len, data, len);
    }
    res->len += len;
    return DQ_OK;
}

int http_response_printf(struct http_response *res, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        res->overflow = 1;
        return dq_fail(DQ_EINVAL, "bad format");
    }
    if ((size_t)n < sizeof small) {
        return http_response_append(res, small, (size_t)n);
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        res->overflow = 1;
        return dq_fail(DQ_ENOMEM, "out of memory formatting %d bytes", n);
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = http_response_append(res, big, (size_t)n);
    free(big);
    return rc;
}

static int has_crlf(const char *s) {
    return strpbrk(s, "\r\n") != NULL;
}

int http_response_add_header(struct http_response *res, const char *name, const char *value) {
    if (!name || !value || !*name || has_crlf(name) || has_crlf(value) || strchr(name, ':')) {
        return dq_fail(DQ_EINVAL, "invalid header line");
    }
    if (strcasecmp(name, "Content-Type") == 0 || strcasecmp(name, "Content-Length") == 0 ||
        strcasecmp(name, "Connection") == 0 || strcasecmp(name, "Transfer-Encoding") == 0) {
        return dq_fail(DQ_EINVAL, "header %s is set by the server", name);
    }
    size_t room = sizeof res->extra - res->extra_len;
    int n = snprintf(res->extra + res->extra_len, room, "%s: %s\r\n", name, value);
    if (n < 0 || (size_t)n >= room) {
        res->extra[res->extra_len] = '\0';
        return dq_fail(DQ_EFULL, "extra headers over %zu bytes", sizeof res->extra);
    }
    res->extra_len += (size_t)n;
    return DQ_OK;
}

int http_response_set_type(struct http_response *res, const char *content_type) {
    if (!content_type || has_crlf(content_type)) {
        return dq_fail(DQ_EINVAL, "invalid content type");
    }
    snprintf(res->content_type, sizeof res->content_type, "%s", content_type);
    return DQ_OK;
}

static int dump_cb(const char *buffer, size_t size, void *data) {
    return http_response_append(data, buffer, size) == DQ_OK ? 0 : -1;
}

/* Encodes the envelope into the body; on failure leaves a minimal 500 reply. */
static int reply_json(struct http_response *res, int status, json_t *env) {
    http_response_clear(res);
    http_response_set_type(res, "application/json");
    res->status = status;
    int rc = DQ_ENOMEM;
    if (env) {
        rc = json_dump_callback(env, dump_cb, res, JSON_COMPACT | JSON_REAL_PRECISION(15)) == 0
                 ? DQ_OK
                 : DQ_EFULL;
        json_decref(env);
    }
    if (rc != DQ_OK) {
        static const char fallback[] = "{\"status\":\"error\",\"errorType\":\"internal\","
                                       "\"error\":\"response could not be encoded\"}";
        http_response_clear(res);
        res->status = 500;
        /* The fallback is written past the cap on purpose: the client must learn why. */
        size_t max = res->max;
        res->max = max > sizeof fallback ? max : sizeof fallback;
        http_response_append(res, fallback, sizeof fallback - 1);
        res->max = max;
        res->overflow = 0;
        return dq_fail(rc, "response could not be encoded");
    }
    return DQ_OK;
}

int http_reply_data(struct http_response *res, json_t *data) {
    if (!data) {
        return http_reply_error(res, 500, "internal", "out of memory building the reply");
    }
    json_t *env = json_object();
    if (!env) {
        json_decref(data);
        return reply_json(res, 500, NULL);
    }
    if (json_object_set_new(env, "status", json_string("success")) < 0 ||
        json_object_set_new(env, "data", data) < 0) {
        json_decref(env);
        return reply_json(res, 500, NULL);
    }
    return reply_json(res, 200, env);
}

const char *http_error_type(int status) {
    switch (status) {
    case 405:
        return "method_not_allowed";
    case 400:
    case 408:
    case 411:
    case 413:
    case 414:
    case 415:
    case 431:
        return "bad_data";
    case 404:
        return "not_found";
    case 422:
        return "unprocessable";
    case 503:
        return "unavailable";
    default:
        return "internal";
    }
}

int http_reply_error(struct http_response *res, int status, const char *error_type, const char *fmt,
                     ...) {
    char msg[HTTP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        msg[0] = '\0';
    }
    json_t *text = json_string(msg);
    if (!text) {
        /* Not UTF-8 (a name taken from the request): keep the ASCII part readable. */
        for (char *c = msg; *c; c++) {
            if ((unsigned char)*c >= 0x80 || (unsigned char)*c < 0x20) {
                *c = '?';
            }
        }
        text = json_string(msg);
    }
    json_t *env = json_object();
    if (!env || !text || json_object_set_new(env, "status", json_string("error")) < 0 ||
        json_object_set_new(env, "errorType",
                            json_string(error_type ? error_type : http_error_type(status))) < 0 ||
        json_object_set_new(env, "error", text) < 0) {
        json_decref(env);
        if (env == NULL) {
            json_decref(text);
        }
        return reply_json(res, 500, NULL);
    }
    return reply_json(res, status, env);
}

int http_reply_text(struct http_response *res, int status, const char *content_type,
                    const char *text, size_t len) {
    http_response_clear(res);
    res->status = status;
    http_response_set_type(res, content_type ? content_type : "text/plain; charset=utf-8");
    return http_response_append(res, text, len);
}

size_t http_response_head(const struct http_response *res, int keep_alive, char *buf, size_t cap) {
    const char *conn = keep_alive == HTTP_KEEP_ALIVE_EXPLICIT ? "Connection: keep-alive\r\n"
                       : keep_alive                           ? ""
                                                              : "Connection: close\r\n";
    const char *reason = http_status_str((enum http_status)res->status);
    if (!reason || strcmp(reason, "<unknown>") == 0) {
        reason = "Status";
    }
    int n;
    if (res->status == 204 || res->status == 304 || (res->status >= 100 && res->status < 200)) {
        n = snprintf(buf, cap, "HTTP/1.1 %d %s\r\n%s%s\r\n", res->status, reason, res->extra, conn);
    } else {
        n = snprintf(buf, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                     res->status, reason, res->content_type, res->len, res->extra, conn);
    }
    if (n < 0 || (size_t)n >= cap) {
        return 0;
    }
    return (size_t)n;
}

/* ---- request accessors ------------------------------------------------------------------ */

const char *http_request_header(const struct http_request *req, const char *name) {
    const struct http_conn_parser *p = req->priv_;
    for (size_t i = 0; i < p->n_hdrs; i++) {
        if (strcasecmp(p->head.data + p->hdrs[i].name, name) == 0) {
            return p->hdrs[i].value == HTTP_NO_VALUE ? "" : p->head.data + p->hdrs[i].value;
        }
    }
    return NULL;
}

const char *http_request_query(const struct http_request *req, const char *name) {
    const struct http_conn_parser *p = req->priv_;
    for (size_t i = 0; i < p->n_qs; i++) {
        if (strcmp(p->decoded.data + p->qs[i].name, name) == 0) {
            return p->decoded.data + p->qs[i].value;
        }
    }
    return NULL;
}

size_t http_request_query_count(const struct http_request *req) {
    return req->priv_->n_qs;
}

void http_request_query_at(const struct http_request *req, size_t i, const char **name,
                           const char **value) {
    const struct http_conn_parser *p = req->priv_;
    assert(i < p->n_qs);
    *name = p->decoded.data + p->qs[i].name;
    *value = p->decoded.data + p->qs[i].value;
}

/* ---- the parser side ------------------------------------------------------------------ */

enum { PIECE_URL, PIECE_FIELD, PIECE_VALUE };

static size_t head_max(const struct http_limits *lim) {
    return lim->max_header_bytes + 2 * lim->max_headers + 16;
}

static size_t decoded_max(const struct http_limits *lim) {
    return 3 * lim->max_url_bytes + 2 * lim->max_query_params + 16;
}

/* Records the first failure (status + message) and returns http-parser's "stop". */
static int fail(struct http_conn_parser *p, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(struct http_conn_parser *p, int status, const char *fmt, ...) {
    if (!p->error_status) {
        p->error_status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error_msg, sizeof p->error_msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int fail_alloc(struct http_conn_parser *p, int rc) {
    if (rc == DQ_ENOMEM) {
        return fail(p, 503, "out of memory");
    }
    return fail(p, 431, "request headers longer than %zu bytes", p->lim.max_header_bytes);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/*
 * Appends the percent-decoding of in[0, n) and a NUL to out. '+' becomes a space when
 * plus_space (query strings). Returns 0, or -1 for a bad escape or an encoded NUL (a
 * NUL would silently truncate names later), -2 when out is full.
 */
static int pct_decode(const char *in, size_t n, int plus_space, struct http_buf *out, size_t max) {
    if (buf_reserve(out, n + 1, max) < 0) {
        return -2;
    }
    char *o = out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= n) {
                return -1;
            }
            int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return -1;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        *o++ = c;
    }
    *o++ = '\0';
    out->len = (size_t)(o - out->data);
    out->data[out->len] = '\0';
    return 0;
}

/* Splits the raw query into decoded name/value pairs. */
static int parse_query(struct http_conn_parser *p, const char *q, size_t n) {
    size_t max = decoded_max(&p->lim);
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        while (end < n && q[end] != '&') {
            end++;
        }
        if (end > i) {
            if (p->n_qs == p->lim.max_query_params) {
                return fail(p, 400, "more than %zu query parameters", p->lim.max_query_params);
            }
            size_t eq = i;
            while (eq < end && q[eq] != '=') {
                eq++;
            }
            uint32_t name_off = (uint32_t)p->decoded.len;
            int rc = pct_decode(q + i, eq - i, 1, &p->decoded, max);
            uint32_t value_off = (uint32_t)p->decoded.len;
            if (rc == 0) {
                rc = eq < end ? pct_decode(q + eq + 1, end - eq - 1, 1, &p->decoded, max)
                              : pct_decode("", 0, 1, &p->decoded, max);
            }
            if (rc < 0) {
                return fail(p, 400, "invalid percent-encoding in the query string");
            }
            p->qs[p->n_qs].name = name_off;
            p->qs[p->n_qs].value = value_off;
            p->n_qs++;
        }
        i = end + 1;
    }
    return 0;
}

/* Terminates the URL / header piece being received. */
static int close_piece(struct http_conn_parser *p) {
    int rc = buf_append_nul(&p->head, head_max(&p->lim));
    return rc < 0 ? fail_alloc(p, rc) : 0;
}

static struct http_conn_parser *parser_of(http_parser *hp) {
    return hp->data;
}

static int on_message_begin(http_parser *hp) {
    struct http_conn_parser *p = parser_of(hp);
    p->head.len = 0;
    p->body.len = 0;
    p->decoded.len = 0;
    p->url_len = 0;
    p->head_bytes = 0;
    p->n_hdrs = 0;
    p->n_qs = 0;
    p->last_was_value = PIECE_URL;
    p->in_message = 1;
    return 0;
}

static int count_head(struct http_conn_parser *p, size_t len) {
    p->head_bytes += len;
    if (p->head_bytes > p->lim.max_header_bytes) {
        return fail(p, 431, "request headers longer than %zu bytes", p->lim.max_header_bytes);
    }
    return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len) {
    struct http_conn_parser *p = parser_of(hp);
    p->url_len += len;
    if (p->url_len > p->lim.max_url_bytes) {
        return fail(p, 414, "request target longer than %zu bytes", p->lim.max_url_bytes);
    }
    if (count_head(p, len) < 0) {
        return -1;
    }
    int rc = buf_append(&p->head, at, len, head_max(&p->lim));
    return rc < 0 ? fail_alloc(p, rc) : 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len) {
    struct http_conn_parser *p = parser_of(hp);
    if (count_head(p, len) < 0) {
        return -1;
    }
    if (p->last_was_value != PIECE_FIELD) {
        if (close_piece(p) < 0) {
            return -1;
        }
        if (p->n_hdrs == p->lim.max_headers) {
            return fail(p, 431, "more than %zu header lines", p->lim.max_headers);
        }
        p->hdrs[p->n_hdrs].name = (uint32_t)p->head.len;
        p->hdrs[p->n_hdrs].value = HTTP_NO_VALUE;
        p->n_hdrs++;
        p->last_was_value = PIECE_FIELD;
    }
    int rc = buf_append(&p->head, at, len, head_max(&p->lim));
    return rc < 0 ? fail_alloc(p, rc) : 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len) {
    struct http_conn_parser *p = parser_of(hp);
    if (count_head(p, len) < 0) {
        return -1;
    }
    if (p->last_was_value != PIECE_VALUE) {
        if (p->n_hdrs == 0 || close_piece(p) < 0) {
            return fail(p, 400, "header value without a name");
        }
        p->hdrs[p->n_hdrs - 1].value = (uint32_t)p->head.len;
        p->last_was_value = PIECE_VALUE;
    }
    int rc = buf_append(&p->head, at, len, head_max(&p->lim));
    return rc < 0 ? fail_alloc(p, rc) : 0;
}

/* The first of the headers whose repetition would let two readers see two requests (a
 * proxy and dqd taking different Hosts or body lengths) that p holds more than once; NULL. */
static const char *repeated_header(const struct http_conn_parser *p) {
    static const char *const once[] = {"Host", "Origin", "Content-Type", "Content-Length"};
    for (size_t k = 0; k < sizeof once / sizeof once[0]; k++) {
        int seen = 0;
        for (size_t i = 0; i < p->n_hdrs; i++) {
            seen += strcasecmp(p->head.data + p->hdrs[i].name, once[k]) == 0;
        }
        if (seen > 1) {
            return once[k];
        }
    }
    return NULL;
}

static int on_headers_complete(http_parser *hp) {
    struct http_conn_parser *p = parser_of(hp);
    if (close_piece(p) < 0) {
        return -1;
    }
    const char *twice = repeated_header(p);
    if (twice) {
        fail(p, 400, "the header %s is sent more than once", twice);
        return -1;
    }
    if (hp->method == HTTP_CONNECT) {
        fail(p, 405, "method CONNECT is not supported");
        return -1;
    }
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (p->url_len == 0 || http_parser_parse_url(p->head.data, p->url_len, 0, &u) != 0) {
        fail(p, 400, "invalid request target");
        return -1;
    }
    if (u.field_set & ((1u << UF_SCHEMA) | (1u << UF_HOST))) {
        /* an absolute-form target names a host of its own: for a proxy, which dqd is not */
        fail(p, 400, "the request target must be a path (origin form), not an absolute URL");
        return -1;
    }
    size_t max = decoded_max(&p->lim);
    p->path_off = (uint32_t)p->decoded.len;
    int rc;
    if (u.field_set & (1u << UF_PATH)) {
        const char *path = p->head.data + u.field_data[UF_PATH].off;
        size_t n = u.field_data[UF_PATH].len;
        if (n == 0 || path[0] != '/') {
            fail(p, 400, "request path must start with '/'");
            return -1;
        }
        rc = pct_decode(path, n, 0, &p->decoded, max);
    } else {
        fail(p, 400, "invalid request target");
        return -1;
    }
    if (rc < 0) {
        fail(p, 400, "invalid percent-encoding in the path");
        return -1;
    }
    const char *q = "";
    size_t qn = 0;
    if (u.field_set & (1u << UF_QUERY)) {
        q = p->head.data + u.field_data[UF_QUERY].off;
        qn = u.field_data[UF_QUERY].len;
    }
    p->query_off = (uint32_t)p->decoded.len;
    if (buf_append(&p->decoded, q, qn, max) < 0 || buf_append_nul(&p->decoded, max) < 0) {
        fail(p, 414, "request target longer than %zu bytes", p->lim.max_url_bytes);
        return -1;
    }
    if (parse_query(p, q, qn) < 0) {
        return -1;
    }
    if ((hp->flags & F_CONTENTLENGTH) && hp->content_length > p->lim.max_body_bytes) {
        fail(p, 413, "request body longer than %zu bytes", p->lim.max_body_bytes);
        return -1;
    }
    if (p->on_continue && hp->http_major == 1 && hp->http_minor >= 1) {
        struct http_request tmp = {.priv_ = p};
        const char *expect = http_request_header(&tmp, "Expect");
        if (expect && strcasecmp(expect, "100-continue") == 0) {
            p->on_continue(p->ctx);
        }
    }
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len) {
    struct http_conn_parser *p = parser_of(hp);
    int rc = buf_append(&p->body, at, len, p->lim.max_body_bytes);
    if (rc == DQ_EFULL) {
        return fail(p, 413, "request body longer than %zu bytes", p->lim.max_body_bytes);
    }
    return rc < 0 ? fail(p, 503, "out of memory") : 0;
}

static int on_message_complete(http_parser *hp) {
    struct http_conn_parser *p = parser_of(hp);
    struct http_request req = {
        .method = (enum http_method)hp->method,
        .method_name = http_method_str((enum http_method)hp->method),
        .url = p->head.data,
        .path = p->decoded.data + p->path_off,
        .query = p->decoded.data + p->query_off,
        .body = p->body.data ? p->body.data : "",
        .body_len = p->body.len,
        .http_major = hp->http_major,
        .http_minor = hp->http_minor,
        .keep_alive = http_should_keep_alive(hp) && !hp->upgrade,
        .peer = p->peer,
        .priv_ = p,
    };
    p->in_message = 0;
    p->requests++;
    if (p->on_request && p->on_request(p->ctx, &req) == HTTP_FEED_PAUSE) {
        p->pause_requested = 1;
        http_parser_pause(hp, 1);
    }
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

int http_conn_parser_init(struct http_conn_parser *p, const struct http_limits *lim,
                          http_request_fn on_request, http_continue_fn on_continue, void *ctx) {
    memset(p, 0, sizeof *p);
    if (lim) {
        p->lim = *lim;
    } else {
        http_limits_default(&p->lim);
    }
    if (p->lim.max_headers == 0) {
        p->lim.max_headers = 1;
    }
    if (p->lim.max_query_params == 0) {
        p->lim.max_query_params = 1;
    }
    p->hdrs = calloc(p->lim.max_headers, sizeof *p->hdrs);
    p->qs = calloc(p->lim.max_query_params, sizeof *p->qs);
    if (!p->hdrs || !p->qs) {
        http_conn_parser_release(p);
        return dq_fail(DQ_ENOMEM, "out of memory for an HTTP parser");
    }
    http_parser_init(&p->parser, HTTP_REQUEST);
    p->parser.data = p;
    p->on_request = on_request;
    p->on_continue = on_continue;
    p->ctx = ctx;
    return DQ_OK;
}

void http_conn_parser_release(struct http_conn_parser *p) {
    buf_release(&p->head);
    buf_release(&p->body);
    buf_release(&p->decoded);
    free(p->hdrs);
    free(p->qs);
    p->hdrs = NULL;
    p->qs = NULL;
}

int http_conn_parser_feed(struct http_conn_parser *p, const char *data, size_t len,
                          size_t *consumed) {
    size_t used = 0;
    int rc = DQ_OK;
    if (p->error_status) {
        rc = DQ_EPROTO;
    } else if (len > 0) {
        used = http_parser_execute(&p->parser, &parser_settings, data, len);
        enum http_errno e = HTTP_PARSER_ERRNO(&p->parser);
        if (e == HPE_PAUSED && p->pause_requested) {
            rc = HTTP_FEED_PAUSED;
        } else if (e != HPE_OK) {
            if (e == HPE_HEADER_OVERFLOW) {
                fail(p, 431, "request headers too long");
            } else {
                fail(p, 400, "malformed request: %s", http_errno_description(e));
            }
            rc = DQ_EPROTO;
        } else if (p->parser.upgrade) {
            /* The rest would be another protocol: the request was answered with close. */
            used = len;
        }
    }
    if (consumed) {
        *consumed = used;
    }
    if (rc == DQ_EPROTO) {
        return dq_fail(DQ_EPROTO, "%d %s", p->error_status, p->error_msg);
    }
    return rc;
}

void http_conn_parser_resume(struct http_conn_parser *p) {
    p->pause_requested = 0;
    http_parser_pause(&p->parser, 0);
}

int http_conn_parser_busy(const struct http_conn_parser *p) {
    return p->in_message;
}

/* ---- the server ---------------------------------------------------------------------- */

struct http_conn {
    uv_tcp_t tcp;                   /* the socket; data = this */
    uv_timer_t timer;               /* idle / request / linger timeout; data = this */
    uv_shutdown_t shutdown;         /* write-side shutdown before closing */
    struct http_server *srv;        /* owner */
    struct http_conn *prev;         /* in srv->conns */
    struct http_conn *next;         /* in srv->conns */
    struct http_conn_parser parser; /* request parsing state */
    int handles_open;               /* close callbacks still to come */
    int closing;                    /* uv_close called on both handles */
    int reading;                    /* uv_read_start in force */
    int close_after_write;          /* no more requests: shut down once writes drain */
    int shutting_down;              /* uv_shutdown issued */
    int lingering;                  /* shut down: discard input until EOF */
    int peer_eof;                   /* the peer closed its side */
    int backpressure;               /* paused until pending_bytes drains */
    int stream;                     /* the answer is a stream: no more requests */
    struct http_stream_spec spec;   /* the stream's owner (when stream) */
    int reserve;                    /* accepted past max_connections: reserve_paths only */
    int doomed;                     /* closed for its unread answers (srv->doomed_bytes) */
    uint64_t last_active;           /* loop time (ms) of its last request or read */
    int timer_request;              /* timer armed for the request numbered timer_for */
    uint64_t timer_for;             /* parser.requests when the request timer was armed */
    size_t pending_bytes;           /* queued by uv_write, not yet completed */
    unsigned pending_writes;        /* uv_write requests in flight */
    size_t rstart, rend;            /* unparsed bytes in rbuf */
    char rbuf[HTTP_READ_BUF];       /* read buffer */
};

struct http_server {
    uv_loop_t *loop;         /* not owned */
    uv_tcp_t listener;       /* data = this */
    struct http_limits lim;  /* caps */
    http_handler_fn handler; /* per request */
    void *ctx;               /* handler's context */
    struct http_conn *conns; /* open connections */
    unsigned n_conns;        /* length of conns */
    unsigned stray_handles;  /* rejected sockets still closing */
    size_t doomed_bytes;     /* pending bytes of connections closed by make_room, not yet freed */
    int listener_open;       /* listener not yet closed */
    int port;                /* bound port */
    int closing;             /* http_server_close called */
    http_server_closed_fn closed_cb;
    void *closed_arg;
    struct http_server_stats stats;
    http_error_fn error_fn; /* NULL: the JSON envelope */
    void *error_ctx;
};

struct http_write {
    uv_write_t req;
    struct http_conn *conn;
    char *body;   /* owned, may be NULL */
    size_t total; /* head + body bytes */
    size_t head_len;
    char head[];
};

static void conn_close(struct http_conn *c);
static void conn_process(struct http_conn *c);

static void server_maybe_free(struct http_server *s) {
    if (!s->closing || s->listener_open || s->conns || s->stray_handles) {
        return;
    }
    http_server_closed_fn cb = s->closed_cb;
    void *arg = s->closed_arg;
    free(s);
    if (cb) {
        cb(arg);
    }
}

static void on_conn_handle_closed(uv_handle_t *h) {
    struct http_conn *c = h->data;
    if (--c->handles_open > 0) {
        return;
    }
    struct http_server *s = c->srv;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    s->n_conns--;
    s->stats.connections_open--;
    if (c->stream) {
        s->stats.streams_open--;
        c->spec.closed(c->spec.ctx, (struct http_stream *)c);
    }
    http_conn_parser_release(&c->parser);
    free(c);
    server_maybe_free(s);
}

static void conn_close(struct http_conn *c) {
    if (c->closing) {
        return;
    }
    c->closing = 1;
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_timer(uv_timer_t *t);

static void conn_arm(struct http_conn *c, uint64_t ms, int for_request) {
    c->timer_request = for_request;
    c->timer_for = c->parser.requests;
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* Idle timer when nothing is in progress; a request timer that reads do not reset. */
static void conn_arm_after_activity(struct http_conn *c) {
    if (c->closing || c->lingering || c->stream) {
        return;
    }
    if (http_conn_parser_busy(&c->parser)) {
        if (!c->timer_request || c->timer_for != c->parser.requests) {
            conn_arm(c, c->srv->lim.request_timeout_ms, 1);
        }
    } else {
        conn_arm(c, c->srv->lim.idle_timeout_ms, 0);
    }
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    struct http_conn *c = req->data;
    if (c->closing) {
        return;
    }
    if (status < 0 || c->peer_eof) {
        conn_close(c);
        return;
    }
    c->lingering = 1;
    uint64_t ms = c->srv->lim.idle_timeout_ms;
    uv_timer_start(&c->timer, on_timer, ms < HTTP_LINGER_MAX_MS ? ms : HTTP_LINGER_MAX_MS, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    struct http_conn *c = h->data;
    (void)suggested;
    if (c->lingering || c->stream) {
        buf->base = c->rbuf; /* discarded input */
        buf->len = sizeof c->rbuf;
        return;
    }
    assert(c->close_after_write || c->rstart == c->rend);
    c->rstart = c->rend = 0;
    buf->base = c->rbuf;
    buf->len = sizeof c->rbuf;
}

static void conn_read_stop(struct http_conn *c) {
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void conn_read_start(struct http_conn *c) {
    if (!c->reading && !c->closing && !c->peer_eof) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) {
            c->reading = 1;
        } else {
            conn_close(c);
        }
    }
}

/* All responses sent and no more requests wanted: half-close, then linger. */
static void conn_maybe_shutdown(struct http_conn *c) {
    if (c->closing || !c->close_after_write || c->pending_writes || c->shutting_down) {
        return;
    }
    c->shutting_down = 1;
    uv_timer_stop(&c->timer);
    if (c->peer_eof) {
        conn_close(c);
        return;
    }
    conn_read_start(c); /* keep reading (and discarding) until the peer's FIN */
    c->shutdown.data = c;
    if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        conn_close(c);
    }
}

static void on_write(uv_write_t *req, int status) {
    struct http_write *w = (struct http_write *)req;
    struct http_conn *c = w->conn;
    c->pending_writes--;
    c->pending_bytes -= w->total;
    c->srv->stats.pending_bytes -= w->total;
    if (c->doomed) {
        c->srv->doomed_bytes -= w->total;
    }
    free(w->body);
    free(w);
    if (c->closing) {
        return;
    }
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (!http_conn_parser_busy(&c->parser)) {
        conn_arm_after_activity(c);
    }
    if (c->stream) {
        conn_maybe_shutdown(c);
        return;
    }
    if (c->backpressure && c->pending_bytes <= c->srv->lim.max_pending_write) {
        c->backpressure = 0;
        http_conn_parser_resume(&c->parser);
        conn_process(c);
    }
    conn_maybe_shutdown(c);
}

/* Queues head + body; takes the body buffer (body may be NULL). */
static int conn_write(struct http_conn *c, const char *head, size_t head_len, char *body,
                      size_t body_len) {
    struct http_write *w = malloc(sizeof *w + head_len);
    if (!w) {
        free(body);
        conn_close(c);
        return DQ_ENOMEM;
    }
    w->conn = c;
    w->body = body;
    w->head_len = head_len;
    w->total = head_len + body_len;
    memcpy(w->head, head, head_len);
    uv_buf_t bufs[2];
    unsigned n = 0;
    if (head_len || !body_len) {
        bufs[n++] = uv_buf_init(w->head, (unsigned)head_len);
    }
    if (body_len) {
        bufs[n++] = uv_buf_init(body, (unsigned)body_len);
    }
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, n, on_write);
    if (rc < 0) {
        free(w->body);
        free(w);
        conn_close(c);
        return DQ_ENET;
    }
    c->pending_writes++;
    c->pending_bytes += w->total;
    c->srv->stats.pending_bytes += w->total;
    return DQ_OK;
}

static void conn_send(struct http_conn *c, struct http_response *res, int keep_alive,
                      int head_only) {
    char head[HTTP_HEAD_MAX];
    size_t n = http_response_head(res, keep_alive, head, sizeof head);
    assert(n > 0); /* extra headers are capped well below HTTP_HEAD_MAX */
    char *body = NULL;
    size_t body_len = 0;
    if (!head_only && res->len) {
        if (res->cap - res->len > 65536) { /* doubling left up to half unused: give it back */
            char *fit = realloc(res->body, res->len);
            res->body = fit ? fit : res->body;
        }
        body = res->body;
        body_len = res->len;
        res->body = NULL;
        res->len = res->cap = 0;
    }
    conn_write(c, head, n, body, body_len);
}

/* Answers a parse error or a timeout, then ends the connection. */
static void conn_send_error(struct http_conn *c, int status, const char *msg) {
    struct http_response res;
    http_response_init(&res, 4096);
    if (c->srv->error_fn) {
        res.status = status;
        c->srv->error_fn(c->srv->error_ctx, status, msg, &res);
    } else {
        http_reply_error(&res, status, http_error_type(status), "%s", msg);
    }
    c->close_after_write = 1;
    conn_send(c, &res, 0, 0);
    http_response_release(&res);
}

static void on_continue(void *ctx) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct http_conn *c = ctx;
    if (!c->closing) {
        conn_write(c, cont, sizeof cont - 1, NULL, 0);
    }
}

/* The answer becomes a stream: head without a length, the body so far, then the owner. */
static void conn_start_stream(struct http_conn *c, struct http_response *res) {
    char head[HTTP_HEAD_MAX];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%sConnection: close\r\n\r\n",
                     res->content_type, res->extra);
    assert(n > 0 && (size_t)n < sizeof head);
    c->stream = 1;
    c->spec = res->stream;
    c->srv->stats.streams_opened++;
    c->srv->stats.streams_open++;
    uv_timer_stop(&c->timer);
    char *body = res->body;
    size_t len = res->len;
    res->body = NULL;
    res->len = res->cap = 0;
    if (conn_write(c, head, (size_t)n, body, len) == DQ_OK) {
        c->spec.open(c->spec.ctx, (struct http_stream *)c);
    }
}

int http_response_stream(struct http_response *res, const struct http_stream_spec *spec) {
    if (!spec || !spec->open || !spec->closed || spec->max_pending == 0) {
        return dq_fail(DQ_EINVAL, "a stream needs open and closed callbacks and a bound");
    }
    res->streaming = 1;
    res->stream = *spec;
    return DQ_OK;
}

int http_stream_write(struct http_stream *st, const char *data, size_t len) {
    struct http_conn *c = (struct http_conn *)st;
    if (c->closing || c->close_after_write) {
        return dq_fail(DQ_ESTATE, "the stream is closing");
    }
    if (len > c->spec.max_pending || c->pending_bytes > c->spec.max_pending - len) {
        c->srv->stats.streams_dropped++;
        conn_close(c);
        return dq_fail(DQ_EFULL, "the client has %zu bytes unread: dropped", c->pending_bytes);
    }
    if (len == 0) {
        return DQ_OK;
    }
    char *copy = malloc(len);
    if (!copy) {
        conn_close(c);
        return dq_fail(DQ_ENOMEM, "no memory for a stream write");
    }
    memcpy(copy, data, len);
    return conn_write(c, "", 0, copy, len) == DQ_OK ? DQ_OK
                                                    : dq_fail(DQ_ENOMEM, "stream write failed");
}

size_t http_stream_pending(const struct http_stream *st) {
    return ((const struct http_conn *)st)->pending_bytes;
}

void http_stream_close(struct http_stream *st) {
    struct http_conn *c = (struct http_conn *)st;
    if (c->closing || c->close_after_write) {
        return;
    }
    c->close_after_write = 1;
    conn_maybe_shutdown(c);
}

/* 1 when path is one of the reserve's paths. */
static int reserve_path(const struct http_server *s, const char *path) {
    for (const char *const *r = s->lim.reserve_paths; r && *r; r++) {
        if (strcmp(*r, path) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * Makes room for `need` more unsent bytes under max_total_pending: closes the connections
 * that pipelined answers they do not read (more than one answer unsent, or paused by
 * back-pressure), the most unsent first, never `keep`; a client waiting for one large
 * answer is not one of them, nor a stream (each has its own bound on unsent bytes). 1 when the
 * bytes fit afterwards.
 */
static int make_room(struct http_server *s, struct http_conn *keep, size_t need) {
    while (s->stats.pending_bytes - s->doomed_bytes + need > s->lim.max_total_pending) {
        struct http_conn *worst = NULL;
        for (struct http_conn *c = s->conns; c; c = c->next) {
            if (c != keep && !c->closing && !c->stream &&
                (c->pending_writes > 1 || c->backpressure) &&
                (!worst || c->pending_bytes > worst->pending_bytes)) {
                worst = c;
            }
        }
        if (!worst) {
            return 0; /* only clients that are reading: nothing to blame */
        }
        s->stats.unread_dropped++;
        worst->doomed = 1; /* its bytes are freed once its writes are cancelled */
        s->doomed_bytes += worst->pending_bytes;
        conn_close(worst);
    }
    /* the closed connections' answers are freed only when the loop has run their close
     * callbacks: until then this answer waits (a 503), or many connections read in the
     * same turn would each hold a large answer at once */
    return s->stats.pending_bytes + need <= s->lim.max_total_pending;
}

static int on_request(void *ctx, const struct http_request *req) {
    struct http_conn *c = ctx;
    struct http_server *s = c->srv;
    struct http_response res;
    http_response_init(&res, s->lim.max_response_bytes);
    s->stats.requests++;
    c->last_active = uv_now(s->loop);
    int full = 0;
    if (c->reserve && !reserve_path(s, req->path)) {
        s->stats.reserve_refused++;
        http_reply_error(&res, 503, "unavailable",
                         "too many connections: the last %u are kept for health checks and "
                         "/metrics",
                         s->lim.reserve_connections);
        res.close = 1;
    } else if (s->stats.pending_bytes >= s->lim.max_total_pending && !reserve_path(s, req->path)) {
        full = 1; /* not even built: the unread answers already fill the bound */
    } else {
        s->handler(s->ctx, req, &res);
    }
    int stream = res.streaming && res.status == 200 && req->method == HTTP_GET && !s->closing &&
                 !c->closing && !res.overflow;
    if (res.streaming && !stream) {
        res.stream.closed(res.stream.ctx, NULL); /* not a stream after all */
    }
    /* a small answer always goes (health checks answer whatever the others do); a large
     * one only within the bound, else a 503 that ends the connection, so a pipelining
     * client costs at most one answer built in vain (a stream has its own bound) */
    if (full) {
        res.close = 1;
        s->stats.unread_dropped++;
        http_reply_error(&res, 503, "unavailable",
                         "dqd holds %zu bytes of answers its clients have not read: try later",
                         (size_t)s->stats.pending_bytes);
    } else if (!stream && !res.overflow && !make_room(s, c, res.len) &&
               res.len > HTTP_SMALL_ANSWER) {
        s->stats.unread_dropped++;
        http_reply_error(&res, 503, "unavailable",
                         "dqd holds %zu bytes of answers its clients have not read: try later",
                         (size_t)s->stats.pending_bytes);
        res.close = 1;
    }
    if (c->closing) {
        http_response_release(&res);
        return HTTP_FEED_PAUSE;
    }
    if (res.overflow) {
        http_reply_error(&res, 500, "internal", "response larger than %zu bytes",
                         s->lim.max_response_bytes);
    }
    if (stream) {
        conn_start_stream(c, &res);
        http_response_release(&res);
        return HTTP_FEED_PAUSE;
    }
    int keep = req->keep_alive && !res.close && !s->closing;
    if (keep && req->http_major == 1 && req->http_minor == 0) {
        keep = HTTP_KEEP_ALIVE_EXPLICIT; /* 1.0 clients assume close unless told */
    }
    conn_send(c, &res, keep, req->method == HTTP_HEAD);
    http_response_release(&res);
    if (!keep) {
        c->close_after_write = 1;
        return HTTP_FEED_PAUSE;
    }
    if (c->pending_bytes > s->lim.max_pending_write) {
        c->backpressure = 1;
        return HTTP_FEED_PAUSE;
    }
    return HTTP_FEED_CONTINUE;
}

/* Parses what is in rbuf; stops early on pause, error or close. */
static void conn_process(struct http_conn *c) {
    /* a stream takes no more requests: what follows its request is discarded below */
    while (c->rstart < c->rend && !c->closing && !c->close_after_write && !c->stream) {
        size_t used = 0;
        int rc = http_conn_parser_feed(&c->parser, c->rbuf + c->rstart, c->rend - c->rstart, &used);
        c->rstart += used;
        if (c->closing) {
            return;
        }
        if (rc == HTTP_FEED_PAUSED && c->backpressure) {
            conn_read_stop(c);
            return;
        }
        if (rc < 0) {
            c->srv->stats.bad_requests++;
            conn_send_error(c, c->parser.error_status, c->parser.error_msg);
            break;
        }
    }
    if (c->closing) {
        return;
    }
    c->rstart = c->rend = 0; /* consumed, or discarded because the connection ends */
    if (c->close_after_write) {
        conn_maybe_shutdown(c);
        return;
    }
    conn_read_start(c);
    conn_arm_after_activity(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    struct http_conn *c = stream->data;
    (void)buf;
    if (c->closing) {
        return;
    }
    if (nread < 0 && c->stream && !c->close_after_write) {
        conn_close(c); /* the client left */
        return;
    }
    if (nread < 0) {
        conn_read_stop(c);
        c->peer_eof = 1;
        /* Half-closed clients still get the answers to what they sent. */
        if (nread == UV_EOF && !c->lingering && (c->pending_writes || c->close_after_write)) {
            c->close_after_write = 1;
            conn_maybe_shutdown(c);
            return;
        }
        conn_close(c);
        return;
    }
    if (nread == 0 || c->lingering || c->close_after_write || c->stream) {
        c->rstart = c->rend = 0;
        return;
    }
    c->rend = c->rstart + (size_t)nread;
    c->last_active = uv_now(c->srv->loop);
    conn_process(c);
}

static void on_timer(uv_timer_t *t) {
    struct http_conn *c = t->data;
    if (c->closing) {
        return;
    }
    if (c->lingering || c->close_after_write || !http_conn_parser_busy(&c->parser)) {
        if (!c->lingering) {
            c->srv->stats.timeouts++;
        }
        conn_close(c);
        return;
    }
    c->srv->stats.timeouts++;
    conn_read_stop(c);
    char msg[96];
    snprintf(msg, sizeof msg, "request not completed within %llu ms",
             (unsigned long long)c->srv->lim.request_timeout_ms);
    conn_send_error(c, 408, msg);
    conn_maybe_shutdown(c);
}

static void on_stray_closed(uv_handle_t *h) {
    struct http_server *s = h->data;
    free(h);
    s->stray_handles--;
    server_maybe_free(s);
}

/* Over the connection cap: tell the client (best effort) and close. */
static void server_reject(struct http_server *s) {
    static const char body[] =
        "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"too many connections\"}";
    char busy[320];
    int busy_len = snprintf(busy, sizeof busy,
                            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                            sizeof body - 1, body);
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t) {
        return;
    }
    if (uv_tcp_init(s->loop, t) < 0) {
        free(t);
        return;
    }
    t->data = s;
    s->stray_handles++;
    if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)t) == 0) {
        uv_buf_t b = uv_buf_init(busy, (unsigned)busy_len);
        uv_try_write((uv_stream_t *)t, &b, 1);
        s->stats.connections_rejected++;
    }
    uv_close((uv_handle_t *)t, on_stray_closed);
}

/*
 * At the connection cap: closes the connection idle the longest (no request in progress,
 * nothing unsent, not ending, not a stream: that waits for events) so that a new client is
 * served instead of the one that holds
 * a slot doing nothing. 1 when one was closed.
 */
static int shed_idle(struct http_server *s) {
    struct http_conn *oldest = NULL;
    for (struct http_conn *c = s->conns; c; c = c->next) {
        if (!c->closing && !c->close_after_write && !c->pending_writes && !c->stream &&
            !http_conn_parser_busy(&c->parser) && c->rstart == c->rend &&
            (!oldest || c->last_active < oldest->last_active)) {
            oldest = c;
        }
    }
    if (!oldest) {
        return 0;
    }
    s->stats.connections_shed++;
    conn_close(oldest);
    return 1;
}

/* The peer's address as text into the parser (its requests carry it); "" when unknown. */
static void conn_peer(struct http_conn *c) {
    struct sockaddr_storage ss;
    int n = sizeof ss;
    c->parser.peer[0] = '\0';
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &n) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        uv_ip4_name((const struct sockaddr_in *)&ss, c->parser.peer, sizeof c->parser.peer);
    } else if (ss.ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)&ss, c->parser.peer, sizeof c->parser.peer);
    }
}

static void on_connection(uv_stream_t *listener, int status) {
    struct http_server *s = listener->data;
    if (status < 0 || s->closing) {
        return;
    }
    int reserve = 0;
    if (s->n_conns >= s->lim.max_connections && !shed_idle(s)) {
        if (s->n_conns >= s->lim.max_connections + s->lim.reserve_connections) {
            server_reject(s);
            return;
        }
        reserve = 1; /* for a health check or a scrape only */
    }
    struct http_conn *c = malloc(sizeof *c);
    if (!c) {
        server_reject(s);
        return;
    }
    memset(c, 0, offsetof(struct http_conn, rbuf));
    c->srv = s;
    if (http_conn_parser_init(&c->parser, &s->lim, on_request, on_continue, c) < 0) {
        free(c);
        server_reject(s);
        return;
    }
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->handles_open = 2;
    c->next = s->conns;
    if (s->conns) {
        s->conns->prev = c;
    }
    s->conns = c;
    s->n_conns++;
    s->stats.connections_open++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    s->stats.connections_accepted++;
    conn_peer(c);
    c->reserve = reserve;
    c->last_active = uv_now(s->loop);
    uv_tcp_nodelay(&c->tcp, 1);
    conn_read_start(c);
    conn_arm_after_activity(c);
}

int http_server_create(uv_loop_t *loop, const struct http_limits *lim, http_handler_fn handler,
                       void *ctx, struct http_server **out) {
    struct http_server *s = calloc(1, sizeof *s);
    if (!s) {
        return dq_fail(DQ_ENOMEM, "out of memory for the HTTP server");
    }
    assert(handler != NULL);
    s->loop = loop;
    if (lim) {
        s->lim = *lim;
    } else {
        http_limits_default(&s->lim);
    }
    s->handler = handler;
    s->ctx = ctx;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->listener_open = 1;
    *out = s;
    return DQ_OK;
}

int http_server_listen(struct http_server *s, const char *host, int port) {
    struct sockaddr_storage addr;
    if (port < 0 || port > 65535) {
        return dq_fail(DQ_EINVAL, "port %d out of range [0, 65535]", port);
    }
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
        return dq_fail(DQ_EINVAL, "invalid listen address \"%s\" (an IP literal is expected)",
                       host);
    }
    int rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)&s->listener, SOMAXCONN, on_connection);
    }
    if (rc < 0) {
        return dq_fail(DQ_ENET, "cannot listen on %s:%d: %s", host, port, uv_strerror(rc));
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len) == 0) {
        s->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                              : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    return DQ_OK;
}

void http_server_set_error_reply(struct http_server *s, http_error_fn fn, void *ctx) {
    s->error_fn = fn;
    s->error_ctx = ctx;
}

int http_server_port(const struct http_server *s) {
    return s->port;
}

void http_server_get_stats(const struct http_server *s, struct http_server_stats *st) {
    *st = s->stats;
}

static void on_listener_closed(uv_handle_t *h) {
    struct http_server *s = h->data;
    s->listener_open = 0;
    server_maybe_free(s);
}

void http_server_close(struct http_server *s, http_server_closed_fn cb, void *arg) {
    if (!s || s->closing) {
        return;
    }
    s->closing = 1;
    s->closed_cb = cb;
    s->closed_arg = arg;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    for (struct http_conn *c = s->conns; c; c = c->next) {
        conn_close(c);
    }
}
