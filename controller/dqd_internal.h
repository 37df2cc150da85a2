/*
 * dqd_internal.h: the daemon's state, shared by dqd.c (loop, ingest, links, windows) and
 * dqd_api.c (HTTP handlers). Nothing outside controller/dqd*.c includes it.
 */
#ifndef DQ_DQD_INTERNAL_H
#define DQ_DQD_INTERNAL_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "diagram.h"
#include "dqd.h"
#include "http.h"
#include "log.h"
#include "probes.h"
#include "dq_search.h"
#include "proto.h"
#include "store.h"
#include "webhook.h"

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

/* ---- the adaptive loop (dqd_adapt.c) --------------------------------------------------- */

#define ADAPT_MAX_TRIGGERS 1024
#define ADAPT_MAX_INVESTIGATIONS 32
#define ADAPT_MAX_SNAPSHOTS 16
#define ADAPT_MAX_OWNED 1024 /* probes one investigation may have enabled */

enum trigger_kind { TRIG_QTA, TRIG_LOAD, TRIG_LOST, TRIG_DIVERGENCE, TRIG_CV, TRIG_KIND_COUNT };

/* A per-probe condition with hysteresis, mirrored in the store's `triggers`. */
struct trigger {
    int64_t id;
    char probe[PROBES_NAME_MAX + 1];
    enum trigger_kind kind;
    double threshold; /* NAN: the kind's default */
    int fire_after, clear_after;
    int enabled, fired, bad, good;
    int64_t last_wid; /* last window evaluated */
};

/* The ΔQs of a probe and its neighbours around a trigger, being collected. */
struct snapshot {
    int64_t id;
    int64_t fire_wid;
    int after_left; /* windows still to collect after the firing */
    char probes[16][PROBES_NAME_MAX + 1];
    int n_probes;
};

enum inv_state { INV_SEARCHING, INV_CLOSED };

/* One investigation in memory; its log is in the store. */
struct investigation {
    int64_t id;
    enum inv_state state;
    char node[PROBES_NAME_MAX + 1];  /* where the problem was seen */
    char focus[PROBES_NAME_MAX + 1]; /* the node being refined now */
    char verdict_node[PROBES_NAME_MAX + 1];
    enum search_problem problem;
    enum search_strategy_id strategy;
    int64_t trigger_id; /* 0: started by a person */
    int64_t hyp_id;     /* the current hypothesis (at focus) */
    struct search_state st;
    int64_t eval_from; /* windows ≥ this count for the current evaluation */
    int windows_waited;
    int quiet;                          /* closed: windows in a row without the problem */
    double verdict_value, runner_value; /* localized: the contributions at the verdict */
    int paused;
    char (*owned)[PROBES_NAME_MAX + 1]; /* probes this investigation enabled */
    int n_owned;
};

struct adapt {
    struct search_params params;
    struct trigger triggers[ADAPT_MAX_TRIGGERS];
    int n_triggers;
    struct snapshot snaps[ADAPT_MAX_SNAPSHOTS];
    int n_snaps;
    struct investigation *inv[ADAPT_MAX_INVESTIGATIONS];
    int n_inv;
    /* budget */
    int max_enabled;
    double max_rate; /* instances per second */
    int deescalate_windows;
    int max_windows; /* an investigation step waits at most this many windows */
    int snapshot_windows;
    uint64_t last_instances; /* instances_total at the previous window close */
    double rate;             /* instances per second over the last window */
    int congested;
};

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
    int64_t read_now_ns; /* wall clock when the chunk being parsed was read */
    char *readbuf;
    size_t readbuf_size;
    uint64_t lines, instances, drops, acks, errors_total;
    uint64_t errors[PROTO_E_COUNT];
    uint64_t commands_sent, commands_skipped;
    struct {
        char text[PROTO_CMD_MAX];
        int64_t id; /* store id of the command awaiting its ack */
    } pending[32];
    int pending_next;
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
    int64_t last_prune_ns;
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
    struct adapt adapt;
    struct webhooks *webhooks;
};

/* Wall clock in ns since the epoch. */
int64_t dqd__now_ns(void);

/* Sends one command to every link that can take it (see dqd.c); returns how many did. */
int dqd__broadcast(struct dqd *d, const struct proto_cmd *cmd);

/*
 * Enables or disables a probe: its setting, the store, and set_timeout / clear_timeout to
 * every wrapper link, each command recorded in the store for hypothesis `hyp` (0: none)
 * with its fate (sent, failed, or not_applied: a legacy link cannot disable a probe).
 */
int dqd__set_enabled(struct dqd *d, struct probe *p, int enable, int64_t hyp);

/* Posts an event to the configured webhooks (takes the reference to payload). */
void dqd__webhook_emit(struct dqd *d, const char *event, json_t *payload);

/* Replaces the diagram with `text` (path may be NULL). DQ_EPARSE with "LINE:COL: msg". */
int dqd__load_diagram(struct dqd *d, const char *text, size_t len, const char *path);

/* Persists a probe's settings to the store. */
int dqd__save_probe(struct dqd *d, const struct probe *p);

/* Sets up the adaptive loop and reloads triggers and open investigations from the store. */
int dqd__adapt_init(struct dqd *d);

/* Releases the adaptive loop's memory. */
void dqd__adapt_release(struct dqd *d);

/* Runs triggers, snapshots and investigations after window wid closed (inside the store
 * transaction of that window). */
void dqd__adapt_window(struct dqd *d, int64_t wid);

/* Opens a person-started investigation at node (NULL: the first root). */
int dqd__adapt_diagnose(struct dqd *d, const char *node, const char *strategy, const char *who,
                        int64_t *id);

/* Creates or updates a trigger; threshold NAN = the kind's default. */
int dqd__adapt_set_trigger(struct dqd *d, const char *probe, const char *kind, double threshold,
                           int fire_after, int clear_after, int enabled);

/* Name of a trigger kind, and the parse. */
const char *dqd__trigger_kind_name(enum trigger_kind k);
int dqd__trigger_kind_parse(const char *s, enum trigger_kind *k);

/* Parses a QTA from its JSON text {"points":[[p,t_s],...],"max_lost":x} (dqd_api.c). */
int dqd__qta_from_json_text(const char *text, struct dq_qta *q);

/* Routes of the adaptive loop (dqd_api_log.c): 1 when r (the path after /api/v1/) was
 * one of them and res holds the answer, 0 otherwise. */
int dqd__api_log_route(struct dqd *d, const char *r, const struct http_request *req,
                       struct http_response *res);

/* The HTTP request handler (dqd_api.c). */
void dqd__http_handler(void *ctx, const struct http_request *req, struct http_response *res);

#endif /* DQ_DQD_INTERNAL_H */
