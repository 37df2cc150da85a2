/*
 * http.h: dqd's HTTP/1.1 server (libuv + http-parser) and its JSON envelope.
 *
 * Two layers, usable separately:
 *
 *   struct http_conn_parser  turns a byte stream into complete requests, with every
 *                            size capped (URL, headers, body, query parameters), and
 *                            refuses (400) a request that sends Host, Origin, Content-Type
 *                            or Content-Length more than once. It does no I/O, so unit
 *                            tests and the libFuzzer target feed it bytes.
 *   struct http_server       listens on HOST:PORT on a caller's uv_loop_t, runs one
 *                            parser per connection, calls one handler per request and
 *                            writes the responses back in request order (keep-alive and
 *                            pipelining), with an idle timeout and a connection cap.
 *
 * The handler is synchronous: it fills a struct http_response before returning, and the
 * request's strings are valid only during the call. A handler may instead turn its answer
 * into a stream (http_response_stream: Server-Sent Events): the head and the body so far
 * go out, the connection takes no more requests, and its owner writes to it later with
 * http_stream_write, each stream with a bound on its unsent bytes (a client that does not
 * read is dropped, the server goes on). Responses are built in a growable
 * buffer with a cap; http_reply_data/http_reply_error write the Prometheus-style
 * envelope {"status":"success","data":…} / {"status":"error","errorType":…,"error":…}.
 *
 * Workload: a handful of API clients (dqctl, scripts, a Prometheus scraper); requests
 * are small, responses up to a few MiB (/metrics, ΔQ arrays). Not on the ingest path.
 */
#ifndef DQ_HTTP_H
#define DQ_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>
#include <jansson.h>
#include <uv.h>

#include "dq_error.h"

/* ---- limits ------------------------------------------------------------------------ */

/* Every cap of the server; http_limits_default() fills the defaults shown. */
struct http_limits {
    size_t max_url_bytes;         /* request target, raw (2048) -> 414 */
    size_t max_header_bytes;      /* target + header names and values (8192) -> 431 */
    size_t max_headers;           /* header lines per request (64) -> 431 */
    size_t max_body_bytes;        /* decoded body (1 MiB) -> 413 */
    size_t max_query_params;      /* name=value pairs in the query (32) -> 400 */
    size_t max_response_bytes;    /* response body (64 MiB) -> handler's reply becomes 500 */
    size_t max_pending_write;     /* per connection: stop parsing while more is unsent (1 MiB) */
    unsigned max_connections;     /* open connections (1024): past it the connection idle the
                                     longest is closed for the new one, else 503 */
    unsigned reserve_connections; /* more beyond max_connections for reserve_paths only (16) */
    const char *const *reserve_paths; /* NULL-terminated; default {"/-/healthy", "/metrics"} */
    size_t max_total_pending;         /* unsent answers of all connections (64 MiB): past it the
                                         connections that pipelined answers they do not read are
                                         closed, largest first; an answer over 64 KiB that still
                                         does not fit is a 503 that ends its connection */
    uint64_t idle_timeout_ms;         /* no request in progress and nothing read (30000) */
    uint64_t request_timeout_ms;      /* first byte of a request to its last (30000) -> 408 */
};

/* Fills *lim with the defaults above. */
void http_limits_default(struct http_limits *lim);

/* ---- requests ------------------------------------------------------------------------ */

/* A complete request as the handler sees it. Every string is NUL-terminated. */
struct http_request {
    enum http_method method; /* HTTP_GET, HTTP_PUT, ... (http_parser.h) */
    const char *method_name; /* "GET", ... */
    const char *url;         /* raw request target as received */
    const char *path;        /* percent-decoded path, without query: "/api/v1/probes/a b" */
    const char *query;       /* raw query string without '?', "" when none */
    const char *body;        /* body bytes (NUL-terminated for convenience), "" when none */
    size_t body_len;         /* length of body, excluding the terminator */
    int http_major;          /* 1 */
    int http_minor;          /* 0 or 1 */
    int keep_alive;          /* 1 when the connection stays open after the response */
    const char *peer;        /* the connection's peer address ("127.0.0.1", "::1"), "" when
                                not known (a parser fed without a socket) */
    /* Private to http.c: header and query tables (offsets into the parser's buffers). */
    const struct http_conn_parser *priv_;
};

/* Value of header `name` (case-insensitive), or NULL when absent. The first one wins. */
const char *http_request_header(const struct http_request *req, const char *name);

/*
 * Value of query parameter `name` ('+' and %XX decoded), or NULL when absent; a
 * parameter without '=' has the value "". Names are compared after decoding, exactly.
 */
const char *http_request_query(const struct http_request *req, const char *name);

/* Number of query parameters; http_request_query_at returns the i-th (name and value). */
size_t http_request_query_count(const struct http_request *req);
void http_request_query_at(const struct http_request *req, size_t i, const char **name,
                           const char **value);

/* ---- responses ------------------------------------------------------------------------ */

#define HTTP_RESPONSE_MAX_EXTRA 1024 /* bytes of extra header lines per response */

struct http_stream; /* a connection whose answer is a stream (see http_response_stream) */

/* What a streamed answer tells its owner. Both run on the loop, never inside a call of
 * http_stream_write or http_stream_close. */
struct http_stream_spec {
    /* The head and the first bytes are queued: s may be written from now on. */
    void (*open)(void *ctx, struct http_stream *s);
    /* s is closed (the peer left, it was dropped, the server closes): this is the last
     * call about s, which is freed when it returns. s is NULL when the answer did not
     * become a stream at all (see http_response_stream). */
    void (*closed)(void *ctx, struct http_stream *s);
    void *ctx;
    size_t max_pending; /* unsent bytes beyond which a write drops the stream (> 0) */
};
#define HTTP_KEEP_ALIVE_EXPLICIT 2 /* http_response_head: say keep-alive (HTTP/1.0) */

/* What a handler fills in. Start state: 404 with an empty body. */
struct http_response {
    int status;            /* HTTP status code */
    char content_type[96]; /* Content-Type value */
    char *body;            /* owned buffer, grown by the append functions */
    size_t len;            /* bytes used in body */
    size_t cap;            /* bytes allocated in body */
    size_t max;            /* cap on len (from the server's limits) */
    int overflow;          /* 1 once an append failed (cap or memory): reply becomes 500 */
    int close;             /* handler asks to close the connection after this response */
    char extra[HTTP_RESPONSE_MAX_EXTRA]; /* extra "Name: value\r\n" lines */
    size_t extra_len;
    int streaming;                  /* http_response_stream was called */
    struct http_stream_spec stream; /* its owner */
};

/* Prepares an empty response whose body may grow to max bytes. */
void http_response_init(struct http_response *res, size_t max);

/* Frees the body buffer; the struct may be re-initialised afterwards. */
void http_response_release(struct http_response *res);

/* Empties the body (keeps the buffer) and clears the overflow flag. */
void http_response_clear(struct http_response *res);

/*
 * Appends bytes / formatted text to the body. Returns DQ_OK, or DQ_EFULL past the cap,
 * DQ_ENOMEM when memory runs out; either sets res->overflow and leaves the body as it was.
 */
int http_response_append(struct http_response *res, const void *data, size_t len);
int http_response_printf(struct http_response *res, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/*
 * Adds one header line. name and value must not contain CR, LF or NUL, and name not
 * ':' (DQ_EINVAL); DQ_EFULL when the extra area is full. Content-Type, Content-Length
 * and Connection are written by the server and cannot be added here (DQ_EINVAL).
 */
int http_response_add_header(struct http_response *res, const char *name, const char *value);

/* Sets the Content-Type (truncated to fit; CR/LF refused with DQ_EINVAL). */
int http_response_set_type(struct http_response *res, const char *content_type);

/*
 * Success envelope: status 200, application/json, {"status":"success","data":DATA}.
 * Takes the caller's reference to data (like json_object_set_new); data == NULL (a
 * failed jansson constructor) gives a 500 error reply instead. Returns DQ_OK or the
 * error of the body append (the response then is a 500).
 */
int http_reply_data(struct http_response *res, json_t *data);

/*
 * Error envelope {"status":"error","errorType":TYPE,"error":MESSAGE} with the given
 * status; the message is printf-formatted and truncated to 1 KiB.
 */
int http_reply_error(struct http_response *res, int status, const char *error_type, const char *fmt,
                     ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Plain text reply: the given status, content type (NULL = "text/plain; charset=utf-8"). */
int http_reply_text(struct http_response *res, int status, const char *content_type,
                    const char *text, size_t len);

/*
 * Makes the answer a stream (a 200 with the content type set, e.g. text/event-stream):
 * once the handler returns, the head goes out without a Content-Length and with
 * "Connection: close", then the body appended so far, and spec->open is called. The
 * connection then reads nothing more (input is discarded, the peer's close is noticed)
 * and has no idle timeout. Only a 200 to a GET becomes a stream: another status (set
 * after this call), a HEAD request or a server that is closing is answered the ordinary
 * way, and spec->closed(ctx, NULL) runs once the handler has returned (open never does),
 * so the owner can free what it prepared. DQ_EINVAL when spec->open or closed is NULL or
 * max_pending is 0.
 */
int http_response_stream(struct http_response *res, const struct http_stream_spec *spec);

/*
 * Queues len bytes on a stream (copied). DQ_OK; DQ_EFULL when its unsent bytes would
 * exceed spec.max_pending: the stream is dropped (closed at once, counted in
 * streams_dropped; its closed callback comes later, from the loop); DQ_ESTATE when it is
 * closing already; DQ_ENOMEM (the stream is closed).
 */
int http_stream_write(struct http_stream *s, const char *data, size_t len);

/* Unsent bytes queued on the stream. */
size_t http_stream_pending(const struct http_stream *s);

/* Ends a stream once what is queued is sent (write side shut down, then closed). */
void http_stream_close(struct http_stream *s);

/* errorType of the envelope for a status: 400 "bad_data", 404 "not_found", 405
 * "method_not_allowed", 408/413/414/431 "bad_data", 422 "unprocessable", 503 "unavailable", others
 * "internal". */
const char *http_error_type(int status);

/*
 * Serialises the head of a response (status line and headers, ending in the blank
 * line) into buf. keep_alive = 0 adds "Connection: close", HTTP_KEEP_ALIVE_EXPLICIT adds
 * "Connection: keep-alive" (for HTTP/1.0 clients), 1 adds neither. Returns the length, or 0
 * when cap is too small.
 */
size_t http_response_head(const struct http_response *res, int keep_alive, char *buf, size_t cap);

/* ---- who may ask (http_access.c) ----------------------------------------------------- */

/*
 * The checks a server on the operator's machine makes before its routes, as pure functions
 * of a request's headers (no I/O, nothing counted: the caller words the refusal and counts
 * it). A web page the operator opens must not be able to drive the server: DNS rebinding
 * makes a page's own name resolve to 127.0.0.1, so every request must carry a Host the
 * server knows as its own; a page of another site can send a POST without asking
 * (text/plain, a form), so a change whose Origin is another site's is refused, and a change's
 * body must say application/json, which a browser does not send across sites without a CORS
 * preflight (never granted). Beyond loopback, a bearer token, compared in constant time.
 */

/* How a route is protected. Every route names one; 0 is none and is refused. */
enum http_access_class {
    HTTP_ACCESS_NONE = 0,
    HTTP_ACCESS_READ,      /* GET, HEAD: beyond loopback the token, unless public_reads */
    HTTP_ACCESS_OPEN,      /* GET, HEAD that need no token anywhere (a health check, the files
                              a page loads before it can send a token) */
    HTTP_ACCESS_CHANGE,    /* PUT, POST, DELETE: Origin, a JSON body (or none), the token */
    HTTP_ACCESS_TEXT_BODY, /* a change whose body is not JSON (its route checks the type):
                              as CHANGE without the Content-Type check */
};

/* What the server allows. Borrowed strings. */
struct http_access_policy {
    const char *token;         /* the bearer token; "" or NULL: none */
    const char *hostname;      /* this machine's name, a Host it answers to ("" or NULL) */
    const char *allowed_hosts; /* more Host values, comma-separated: NAME, NAME:PORT, .DOMAIN
                                  (every name under it), * (any); "" or NULL: none */
    int loopback;              /* 1: the server listens on loopback only */
    int public_reads;          /* 1: READ needs no token beyond loopback either */
    const char *origins;       /* Origins of other sites a change may come from (CORS:
                                  "http://app.example:8080", comma-separated, exact); "" or
                                  NULL: none */
};

/* What a request says about itself (http_access_ask_of fills it from a request). */
struct http_access_ask {
    const char *host;          /* the Host header, NULL when absent */
    const char *origin;        /* Origin, NULL when absent */
    const char *content_type;  /* Content-Type, NULL when absent */
    const char *authorization; /* Authorization, NULL when absent */
    size_t body_len;
    int needs_host; /* HTTP/1.1 or later: a request without Host is malformed */
};

/* The first check a request fails, in the order they are made (Host, then for READ the token;
 * for a change Origin, Content-Type, the token). */
enum http_access_verdict {
    HTTP_ACCESS_OK = 0,
    HTTP_ACCESS_NO_HOST,        /* 400: an HTTP/1.1 request without Host */
    HTTP_ACCESS_FOREIGN_HOST,   /* 403: a Host that is not the server's */
    HTTP_ACCESS_READ_TOKEN,     /* 401: a read beyond loopback without the right token */
    HTTP_ACCESS_FOREIGN_ORIGIN, /* 403: a change whose Origin is not http(s)://HOST nor
                                   one of the policy's origins */
    HTTP_ACCESS_NOT_JSON,       /* 415: a change with a body or a Content-Type not JSON */
    HTTP_ACCESS_NO_TOKEN_SET,   /* 403: a change beyond loopback while no token is set */
    HTTP_ACCESS_CHANGE_TOKEN,   /* 401: a change without the right token */
    HTTP_ACCESS_NO_CLASS,       /* 500: the route names no class (a bug: refused) */
};

/* The headers of req that the checks read. */
void http_access_ask_of(const struct http_request *req, struct http_access_ask *out);

/* The verdict on a request of class cls under pol (pure). */
enum http_access_verdict http_access_decide(const struct http_access_policy *pol,
                                            enum http_access_class cls,
                                            const struct http_access_ask *ask);

/* The HTTP status of a refusal (400, 401, 403, 415, 500); 0 for HTTP_ACCESS_OK. */
int http_access_status(enum http_access_verdict v);

/* 1 when a listen address is loopback only: 127.x.y.z, ::1, localhost. */
int http_access_loopback(const char *listen_host);

/*
 * 1 when a Host value (a name or address, optional :port, [v6]) is one the server answers
 * to: an IP literal, localhost and *.localhost (a trailing dot ignored), hostname, or an
 * entry of allowed_hosts (names compared without case; NAME:PORT must match with its port).
 * A port that is not 1 to 5 digits ("localhost:17401 evil") is refused.
 */
int http_access_host_allowed(const char *value, const char *hostname, const char *allowed_hosts);

/* 1 when origin is "http://" or "https://" followed by host (no case); 0 when host is NULL. */
int http_access_same_origin(const char *origin, const char *host);

/* 1 when origin is one of the comma-separated entries of list (blanks around them ignored,
 * compared without case, "*" matches any); 0 for an empty or NULL list. */
int http_access_origin_listed(const char *origin, const char *list);

/* 1 when a Content-Type value is application/json (parameters allowed). */
int http_access_json_type(const char *content_type);

/* 1 when an Authorization value is "Bearer " and the token (non-empty), compared in a time
 * that depends on the token's length only. */
int http_access_bearer_ok(const char *authorization, const char *token);

/* ---- the parser side (no sockets) ---------------------------------------------------- */

/*
 * Called once per complete request. Return HTTP_FEED_CONTINUE to go on parsing the
 * bytes that follow, HTTP_FEED_PAUSE to stop right after this request (feed returns
 * HTTP_FEED_PAUSED with *consumed covering this request only).
 */
#define HTTP_FEED_CONTINUE 0
#define HTTP_FEED_PAUSE 1
typedef int (*http_request_fn)(void *ctx, const struct http_request *req);

/* Called when a request's headers carry "Expect: 100-continue" and the body is acceptable. */
typedef void (*http_continue_fn)(void *ctx);

/* Growable byte buffer with a cap, used for the parser's storage. */
struct http_buf {
    char *data;
    size_t len;
    size_t cap;
};

struct http_hdr_ref { /* offsets into head */
    uint32_t name, value;
};

struct http_query_ref { /* offsets into decoded */
    uint32_t name, value;
};

struct http_conn_parser {
    http_parser parser;           /* http-parser state; parser.data points back here */
    struct http_limits lim;       /* caps in force */
    http_request_fn on_request;   /* request callback */
    http_continue_fn on_continue; /* optional 100-continue callback */
    void *ctx;                    /* passed to both callbacks */
    struct http_buf head;         /* URL then header names/values, NUL-separated */
    struct http_buf body;         /* request body */
    struct http_buf decoded;      /* decoded path and query pairs of the current request */
    size_t url_len;               /* raw URL bytes so far */
    size_t head_bytes;            /* URL + header bytes so far (cap check) */
    struct http_hdr_ref *hdrs;    /* max_headers slots */
    size_t n_hdrs;                /* headers stored */
    int last_was_value;           /* header callbacks alternate field/value; may be split */
    struct http_query_ref *qs;    /* max_query_params slots */
    size_t n_qs;                  /* query parameters of the current request */
    uint32_t path_off;            /* offset of the decoded path in decoded */
    uint32_t query_off;           /* offset of the raw query in decoded */
    int in_message;               /* 1 between the first byte of a request and its end */
    int pause_requested;          /* on_request asked to pause */
    int error_status;             /* 0, or the HTTP status of the failure (400/413/...) */
    char error_msg[160];          /* why */
    uint64_t requests;            /* complete requests parsed */
    char peer[48];                /* the peer's address (the server sets it), "" unknown */
};

#define HTTP_FEED_PAUSED 1

/*
 * Initialises p with the limits (NULL = defaults) and callbacks. Returns DQ_OK or
 * DQ_ENOMEM. Release with http_conn_parser_release.
 */
int http_conn_parser_init(struct http_conn_parser *p, const struct http_limits *lim,
                          http_request_fn on_request, http_continue_fn on_continue, void *ctx);

/* Frees p's buffers (p itself belongs to the caller). Safe on a zeroed struct. */
void http_conn_parser_release(struct http_conn_parser *p);

/*
 * Feeds bytes. Calls on_request for each complete request, in order. Returns:
 *   DQ_OK             all len bytes consumed (*consumed = len);
 *   HTTP_FEED_PAUSED  on_request asked to pause; *consumed bytes were used, feed the
 *                     rest later (after http_conn_parser_resume);
 *   DQ_EPROTO         malformed or over a cap: p->error_status holds the status to
 *                     answer (400, 413, 414, 431) and p->error_msg why; the stream is
 *                     unusable afterwards (answer, then close).
 * consumed may be NULL.
 */
int http_conn_parser_feed(struct http_conn_parser *p, const char *data, size_t len,
                          size_t *consumed);

/* Lets a paused parser go on. */
void http_conn_parser_resume(struct http_conn_parser *p);

/* 1 when a request has started but not completed (for the request timeout). */
int http_conn_parser_busy(const struct http_conn_parser *p);

/* ---- the server ---------------------------------------------------------------------- */

/* The per-request callback; fills res (initialised to 404, empty). */
typedef void (*http_handler_fn)(void *ctx, const struct http_request *req,
                                struct http_response *res);

struct http_server;

/* Counters for /metrics and tests. */
struct http_server_stats {
    uint64_t connections_accepted; /* accepted and served */
    uint64_t connections_rejected; /* closed at once because of max_connections */
    uint64_t connections_open;     /* currently open */
    uint64_t requests;             /* requests handed to the handler */
    uint64_t bad_requests;         /* parse errors and caps (400/413/414/431) */
    uint64_t timeouts;             /* idle and request timeouts */
    uint64_t streams_opened;       /* answers that became streams */
    uint64_t streams_open;         /* streams open now */
    uint64_t streams_dropped;      /* streams closed because their client did not read */
    uint64_t connections_shed;     /* idle connections closed to make room for a new one */
    uint64_t reserve_refused;      /* reserve connections that asked for another path (503) */
    uint64_t unread_dropped;       /* connections closed because the unsent answers were
                                      past max_total_pending (a client that does not read),
                                      or answered 503 and ended for it */
    uint64_t pending_bytes;        /* unsent answer bytes now, all connections */
};

typedef void (*http_server_closed_fn)(void *arg);

/*
 * Creates a server on loop (nothing bound yet). lim NULL = defaults. Returns DQ_OK and
 * *out, or DQ_ENOMEM.
 */
int http_server_create(uv_loop_t *loop, const struct http_limits *lim, http_handler_fn handler,
                       void *ctx, struct http_server **out);

/*
 * Binds host:port (IPv4 or IPv6 literal; port 0 = ephemeral) and listens. Returns DQ_OK,
 * DQ_EINVAL for a bad address, DQ_ENET when bind/listen fail (message has libuv's text).
 */
int http_server_listen(struct http_server *s, const char *host, int port);

/*
 * How the server words the errors it answers itself, before any handler runs (a malformed
 * request, a cap: 400, 413, 414, 431; a request timeout: 408): fn fills res, whose status
 * is already set, from the status and the message (a protocol with error bodies of its
 * own, OTLP's google.rpc.Status). NULL, the default: the JSON envelope (http_reply_error).
 * The connection is closed after such an answer either way.
 */
typedef void (*http_error_fn)(void *ctx, int status, const char *msg, struct http_response *res);
void http_server_set_error_reply(struct http_server *s, http_error_fn fn, void *ctx);

/* The bound port (after a successful listen), else 0. */
int http_server_port(const struct http_server *s);

/* Copies the counters. */
void http_server_get_stats(const struct http_server *s, struct http_server_stats *st);

/*
 * Closes the listener and every connection (pending writes are cancelled). The server
 * is freed once all its handles have closed; then cb(arg) runs (cb may be NULL).
 * s must not be used after this call. Calling it with NULL runs nothing.
 */
void http_server_close(struct http_server *s, http_server_closed_fn cb, void *arg);

#endif /* DQ_HTTP_H */
