/*
 * dqd_internal.h: the daemon's state, shared by dqd.c (loop, ingest, links, windows) and
 * dqd_api.c (HTTP handlers). Nothing outside controller/dqd*.c includes it.
 */
#ifndef DQ_DQD_INTERNAL_H
#define DQ_DQD_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "diagram.h"
#include "dqd.h"
#include "http.h"
#include "log.h"
#include "probes.h"
#include "proto.h"
#include "store.h"

#define DQD_SPLIT_BUF 4096
#define DQD_MAX_PENDING_WRITE (1 << 20) /* bytes queued to one wrapper before we stop */
#define DQD_HELLO_WAIT_MS 200           /* a connection silent this long is a legacy link */

enum link_kind {
    LINK_UNKNOWN = 0, /* inbound, no line yet */
    LINK_V2,          /* inbound, said hello */
    LINK_LEGACY,      /* inbound, no hello: the oscilloscope's wrapper */
    LINK_OUTBOUND,    /* dqd connected to a legacy wrapper's command listener */
};

struct dqd;

/* One wrapper connection, inbound on the ingest port or outbound to a listener. */
struct link {
    struct dqd *d;
    uint64_t id;
    enum link_kind kind;
    uv_tcp_t tcp;
    uv_timer_t timer; /* inbound: hello wait; outbound: reconnect backoff */
    uv_connect_t connect;
    int tcp_open, timer_open, connected, closing;
    char peer[64];
    char node[PROTO_MAX_LABEL + 1];
    char app[PROTO_MAX_LABEL + 1];
    int running; /* last state line: 0/1, −1 unknown */
    /* outbound target and backoff */
    char host[64];
    int port;
    int backoff_ms;
    /* ingest */
    struct proto_splitter split;
    char splitbuf[DQD_SPLIT_BUF];
    char *readbuf;
    size_t readbuf_size;
    uint64_t lines, instances, drops, acks, errors_total;
    uint64_t errors[PROTO_E_COUNT];
    uint64_t commands_sent, commands_skipped;
    struct log_limit limit;
    struct link *next, *prev;
};

struct dqd {
    uv_loop_t *loop;
    struct dqd_config opt;
    char listen_host[64], http_host[64];
    int listen_port, http_port;
    uv_tcp_t ingest;
    int ingest_open;
    struct http_server *http;
    struct store *store;
    struct probe_table probes;
    /* diagram */
    struct dq_diagram *diagram;
    struct dq_eval *eval;
    char *diagram_text;
    char diagram_path[1024];
    /* links: inbound and outbound */
    struct link *links;
    size_t n_links;
    uint64_t next_link_id;
    /* windows */
    uv_timer_t window_timer;
    int window_timer_open;
    uint64_t windows_closed;
    int64_t last_closed_wid;
    /* signals are the main program's; shutdown bookkeeping */
    int closing, pending_closes;
    void (*on_closed)(void *);
    void *on_closed_arg;
    /* state */
    int running; /* wrappers should send (start_stub) or not (stop_stub) */
    int64_t started_ns;
    uint64_t instances_total;
    uint64_t proto_errors[PROTO_E_COUNT];
    uint64_t connections_total, connections_rejected;
    uint64_t store_errors;
    struct log_limit limit;
};

/* Wall clock in ns since the epoch. */
int64_t dqd__now_ns(void);

/* Sends one command to every link that can take it (see dqd.c); returns how many did. */
int dqd__broadcast(struct dqd *d, const struct proto_cmd *cmd);

/* Enables or disables a probe: settings, store, and the command to every wrapper. */
int dqd__enable_probe(struct dqd *d, struct probe *p, int enable);

/* Replaces the diagram with `text` (path may be NULL). DQ_EPARSE with "LINE:COL: msg". */
int dqd__load_diagram(struct dqd *d, const char *text, size_t len, const char *path);

/* Persists a probe's settings to the store. */
int dqd__save_probe(struct dqd *d, const struct probe *p);

/* Parses a QTA from its JSON text {"points":[[p,t_s],...],"max_lost":x} (dqd_api.c). */
int dqd__qta_from_json_text(const char *text, struct dq_qta *q);

/* The HTTP request handler (dqd_api.c). */
void dqd__http_handler(void *ctx, const struct http_request *req, struct http_response *res);

#endif /* DQ_DQD_INTERNAL_H */
