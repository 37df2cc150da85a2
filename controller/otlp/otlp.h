/*
 * otlp.h: the OTLP/HTTP trace receiver, a source of outcome instances (docs/otlp.md).
 *
 * Any OpenTelemetry SDK, or a Collector, POSTs ExportTraceServiceRequest messages to
 * /v1/traces as protobuf (application/x-protobuf) or OTLP/JSON (application/json), gzip
 * or not. Each span becomes an instance of a probe: its name mapped to the probe
 * alphabet, or the probe of the first matching entry of the `otlp_probes` table; status
 * ERROR is a failure, a span longer than the probe's dMax a timeout.
 *
 * Two layers:
 *
 *   decoding (pure, no I/O)  otlp_inflate, otlp_decode_protobuf, otlp_decode_json turn a
 *                            body into a flat batch of spans in a per-request arena
 *                            (struct otlp_arena; the decoders walk the body and allocate
 *                            nothing per span); otlp_probe_name maps a span to its probe.
 *                            Unit tests and the libFuzzer targets call these directly.
 *   the source               an HTTP server (controller/http) on --otlp that answers as
 *                            OTLP/HTTP specifies, records spans into the core's probe
 *                            table through one passive origin per service
 *                            (probes_origin_set_passive: OTLP carries no commands, so its
 *                            probes are always observed), and keeps the newest spans with
 *                            their ids for `dqctl diagram --infer`. It is a source like the
 *                            TCP one (ingest.h): dqd makes it with otlp_make and starts,
 *                            describes, measures and closes it through struct ingest_ops.
 */
#ifndef DQ_OTLP_H
#define DQ_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "core.h"
#include "http.h"
#include "ingest.h"
#include "settings.h"

/* ---- the arena ------------------------------------------------------------------------ */

/* A bump allocator: chunks kept across requests, emptied by otlp_arena_reset. */
struct otlp_arena {
    struct otlp_chunk *head; /* chunks, newest first */
    size_t used;             /* bytes handed out since the reset */
    size_t cap;              /* most bytes handed out between resets */
    int exhausted;           /* 1 once an allocation was refused (cap or memory) */
};

/* An empty arena that hands out at most cap bytes between resets. */
void otlp_arena_init(struct otlp_arena *a, size_t cap);

/* Memory for n bytes (8-aligned), or NULL past the cap or without memory (exhausted). */
void *otlp_arena_alloc(struct otlp_arena *a, size_t n);

/* Forgets everything handed out; keeps the newest chunk for the next request unless it
 * is larger than 16 MiB (a huge request does not hold its memory). */
void otlp_arena_reset(struct otlp_arena *a);

/* Frees every chunk. */
void otlp_arena_release(struct otlp_arena *a);

/* ---- decoded spans ---------------------------------------------------------------------- */

enum otlp_format { OTLP_PROTOBUF, OTLP_JSON };

/* One span as the decoders deliver it. Strings point into the arena or the body and are
 * not NUL-terminated. */
struct otlp_span {
    const char *service; /* the resource's service.name ("unknown_service" when absent) */
    size_t service_len;
    const char *name;
    size_t name_len;
    uint8_t trace_id[16], span_id[8], parent_id[8];
    int has_parent;           /* parent_id is set (not all zero, not empty) */
    int64_t start_ns, end_ns; /* ns since the epoch */
    int status;               /* 0 unset, 1 ok, 2 error */
    /* attributes, read through otlp_span_attr from the body: for protobuf the Span and
     * the ResourceSpans messages, for JSON the text of the two attribute arrays (NULL
     * when absent); n_ are their lengths in bytes */
    const void *attrs, *res_attrs;
    size_t n_attrs, n_res_attrs;
    int json; /* 1: OTLP/JSON, 0: protobuf */
};

/* What a decoder made of a body. Its spans point into the arena and the body: both must
 * outlive it. */
struct otlp_batch {
    struct otlp_span *spans; /* n valid spans, in the arena */
    size_t n;
    size_t rejected;  /* spans left out as invalid (partial_success) */
    char reason[256]; /* the first rejection's reason, "" when none */
};

/* Forgets a batch (it holds nothing beyond the arena). */
void otlp_batch_release(struct otlp_batch *b);

/*
 * Decodes an ExportTraceServiceRequest (protobuf) into b, allocating in a (the span array
 * only). Returns DQ_OK (invalid spans are counted in b->rejected with a reason: ids of the
 * wrong length, an end before the start, no name), DQ_EPARSE for a body that is not the
 * message (message says why), DQ_EFULL when the arena is exhausted (too many spans).
 * Strings end at their first NUL byte. The same bodies decode, and decode to the same
 * spans, as with protobuf-c's unpack of otlp_trace.proto (docs/otlp.md, "Decoding").
 */
int otlp_decode_protobuf(struct otlp_arena *a, const uint8_t *body, size_t len,
                         struct otlp_batch *b);

/*
 * The same for OTLP/JSON (lowerCamelCase keys, hex trace and span ids, 64-bit integers as
 * decimal strings or numbers, enums as integers or their names; unknown keys ignored). A
 * known key with the wrong JSON type is DQ_EPARSE naming it; so is a body that is not
 * strict JSON as jansson reads it (UTF-8, no \u0000, no duplicate key in an object,
 * integers within 64 bits, at most 2048 values deep).
 */
int otlp_decode_json(struct otlp_arena *a, const uint8_t *body, size_t len, struct otlp_batch *b);

/*
 * The value of attribute key (span attributes first, then the resource's) as text in buf
 * (strings as they are, numbers and booleans printed); 1 when found, else 0.
 */
int otlp_span_attr(const struct otlp_span *s, const char *key, char *buf, size_t cap);

/*
 * Inflates a gzip (or zlib) body into out (at most cap bytes). DQ_OK with *out_len,
 * DQ_EFULL when it inflates to more than cap (a gzip bomb stops there), DQ_EPARSE for a
 * corrupt or truncated stream.
 */
int otlp_inflate(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *out_len);

/*
 * The probe of span s: the first rule (in order) whose conditions all match, else the
 * span's name mapped to the probe alphabet (bytes outside [A-Za-z0-9_] become '_', a
 * leading digit gets a '_' before it, cut at PROBES_NAME_MAX). Writes the name to out
 * (cap > PROBES_NAME_MAX) and returns its length, 0 for a span without a name.
 */
size_t otlp_probe_name(const struct otlp_span *s, const struct dqd_otlp_rule *rules, int n_rules,
                       char *out, size_t cap);

/* ---- the source --------------------------------------------------------------------------- */

struct otlp;

struct otlp_options {
    const char *listen;    /* "HOST:PORT" (port 0: any) */
    const char *api_token; /* "" or NULL: none (then loopback only) */
    /* who may ask, as the API (http.h, "who may ask"): Host names besides loopback names,
     * IP addresses and hostname; browser origins allowed (CORS); NULL or "": none */
    const char *hostname;
    const char *allowed_hosts;
    const char *cors_origins;
    int64_t silence_ns;                /* a passive probe's silence (otlp_silence) */
    size_t max_body;                   /* bytes, as sent and inflated */
    double max_spans_per_second;       /* 0: no limit */
    size_t recent_spans;               /* kept for --infer */
    const struct dqd_otlp_rule *rules; /* copied */
    int n_rules;
};

/* Counters for /metrics and tests. */
struct otlp_stats {
    uint64_t requests;        /* requests answered, whatever their path and method */
    uint64_t responses[6];    /* by status: 200, 400, 413, 415, 429, 503 */
    uint64_t other_responses; /* 401, 403, 404, 405 */
    uint64_t spans_received;  /* decoded spans, valid or not */
    uint64_t spans_accepted;  /* recorded in a window */
    uint64_t spans_rejected;  /* invalid (the decoders' checks, docs/otlp.md §3) */
    uint64_t spans_name_rate; /* a new probe name over its peer's or dqd's rate */
    uint64_t spans_full;      /* a new probe name and no room (probe_table_full) */
    uint64_t spans_late;      /* ended in a window already closed (later than the lag) */
    uint64_t spans_future;    /* ended too far ahead of the clock */
    uint64_t spans_throttled; /* in requests answered 429 */
    uint64_t bytes_received;  /* bodies as sent */
    uint64_t bytes_inflated;  /* bodies after gzip */
    uint64_t services;        /* distinct service.name values seen */
    uint64_t refused[3];      /* before decoding, by otlp_refusal: Host, Origin, token */
    uint64_t http_errors;     /* refused by the HTTP layer before the handler: malformed
                                 HTTP or over a size cap (400, 413, 414, 431) */
};

/* The reasons of otlp_stats.refused, named as the API's dqd_http_refused_total. */
enum otlp_refusal { OTLP_REFUSED_HOST, OTLP_REFUSED_ORIGIN, OTLP_REFUSED_TOKEN };

/* Index of status in otlp_stats.responses, or −1. */
int otlp_status_index(int status);

/*
 * Creates the receiver on loop for core (both borrowed); options copied. DQ_ENOMEM,
 * DQ_EINVAL for a bad address. It binds when started through its source (ingest_start).
 */
int otlp_create(uv_loop_t *loop, struct core *core, const struct otlp_options *o,
                struct otlp **out);

/* The receiver as dqd configures it (ingest_make_fn): *out NULL unless --otlp; the options
 * from the otlp_* settings, the token from api_token. */
int otlp_make(const struct ingest_env *env, struct ingest_source **out);

/* The receiver as a source (ingest.h), and back: NULL when s is not an OTLP receiver. */
struct ingest_source *otlp_source(struct otlp *r);
struct otlp *otlp_of(struct ingest_source *s);

/* Copies the counters. */
void otlp_get_stats(const struct otlp *r, struct otlp_stats *st);

/*
 * The newest recent spans (at most max; of one service when service is not NULL), oldest
 * first, as a JSON array of {"trace_id", "span_id", "parent_id" (hex, "" for a root),
 * "service", "probe", "start_ns", "end_ns", "status"}. NULL without memory.
 */
json_t *otlp_recent_json(const struct otlp *r, const char *service, size_t max);

/* Closes the server; done(arg) runs when every handle has closed and r is freed (the same
 * as ingest_close on its source). */
void otlp_close(struct otlp *r, void (*done)(void *arg), void *arg);

/* For the benchmark and tests: handles one request body as the server would, without
 * HTTP (content_type and content_encoding as the headers say, NULL when absent; peer the
 * client's address, "" or NULL for one shared unknown peer): fills res (status, headers,
 * body) as the server would send it. */
void otlp_handle_body(struct otlp *r, const char *content_type, const char *content_encoding,
                      const char *peer, const uint8_t *body, size_t len, struct http_response *res);

#endif /* DQ_OTLP_H */
