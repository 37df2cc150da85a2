/*
 * ingest.h: the sources outcome instances come from, behind one interface.
 *
 * A source is one kind of input. There are two: the TCP source here (ingest_tcp.c: wrappers
 * on the ingest port in both dialects of the line protocol, controller/wire/, and the
 * outbound links dqd opens to legacy wrappers' command listeners) and the OTLP/HTTP
 * receiver (controller/otlp/, a module of its own after this one). Each records instances
 * straight into the core's probe table under origins of its own (probes_origin_open; no
 * allocation per instance) and adds them to the core's count (core_add_instances).
 *
 * dqd.c holds every source in one array and does everything through struct ingest_ops:
 * make it from the configuration (an ingest_make_fn, one line per source in dqd.c),
 * register its core_source_ops with the core when it has any, start it, list it in the
 * status and the startup line (ingest_describe, the address), print its /metrics families
 * (ingest_metrics), and at shutdown unregister and close it (asynchronous: `done` runs once
 * every handle has closed). The core, not the source, decides what is sent and records it.
 */
#ifndef DQ_INGEST_H
#define DQ_INGEST_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "core.h"
#include "http.h"
#include "settings.h"

struct ingest_source;

/* What every source implements. */
struct ingest_ops {
    const char *name; /* "tcp", "otlp": its name in the status */
    const char *what; /* "ingest", "OTLP": the startup line says "WHAT on HOST:PORT" */
    /* Binds and connects; DQ_ENET / DQ_EINVAL with a message naming the address. */
    int (*start)(struct ingest_source *s);
    /* Closes every handle; done(arg) runs when the last has closed and s is freed. */
    void (*close)(struct ingest_source *s, void (*done)(void *arg), void *arg);
    /* The address it listens on, once started ("" and 0 before). */
    const char *(*host)(const struct ingest_source *s);
    int (*port)(const struct ingest_source *s);
    /* Adds its own figures to its status object o (which holds "name" and "listen"
     * already); at least "instances", what it added to the core's instances_total. */
    void (*describe)(const struct ingest_source *s, json_t *o);
    /* Appends its own /metrics families (HELP, TYPE and samples; names no other source
     * prints) to res. */
    void (*metrics)(const struct ingest_source *s, struct http_response *res);
    /* What the core sees of it (its `src` pointer is the struct ingest_source): the
     * connections that carry commands, listed for the status, and their totals. NULL for a
     * source whose origins are passive (probes_origin_set_passive): nothing to command. */
    const struct core_source_ops *core;
};

struct ingest_source {
    const struct ingest_ops *ops;
};

/* What a source is made from; all borrowed, all outlive the source. */
struct ingest_env {
    uv_loop_t *loop;
    struct core *core;
    const struct dqd_config *cfg; /* read while making it; the source copies what it keeps */
    /* Inbound connections the descriptor budget leaves the ingest port (the OTLP receiver's
     * HTTP server keeps its own cap). */
    int max_connections;
    /* Simulated time (--clock sim): a source that carries `clock;NS` lines calls
     * on_clock(clock_ctx, ns), which moves dqd's clock and closes the windows due; NULL
     * with the wall clock. */
    void (*on_clock)(void *ctx, int64_t ns);
    void *clock_ctx;
};

/*
 * Makes a source from the configuration, nothing bound yet: DQ_OK with *out, or with *out
 * NULL when the configuration leaves the source off; DQ_ENOMEM, DQ_EINVAL for a bad
 * address (the message names the setting).
 */
typedef int (*ingest_make_fn)(const struct ingest_env *env, struct ingest_source **out);

/* Starts a source (s->ops->start). */
int ingest_start(struct ingest_source *s);

/* Closes a source (s->ops->close); NULL s calls done at once. */
void ingest_close(struct ingest_source *s, void (*done)(void *arg), void *arg);

/* The address a source listens on (after start); "" and 0 for NULL. */
const char *ingest_host(const struct ingest_source *s);
int ingest_port(const struct ingest_source *s);

/* A source in the status: {"name", "listen": "HOST:PORT", …its own figures} (a new
 * reference; NULL without memory). */
json_t *ingest_describe(const struct ingest_source *s);

/* Appends a source's /metrics families to res. */
void ingest_metrics(const struct ingest_source *s, struct http_response *res);

/* ---- the TCP source ------------------------------------------------------------------- */

#define INGEST_HELLO_WAIT_MS 200           /* a connection silent this long is legacy */
#define INGEST_KEEPALIVE_S 30              /* TCP keepalive idle time of wrapper links */
#define INGEST_MAX_PENDING_WRITE (1 << 20) /* bytes queued to one wrapper before we stop */
#define INGEST_READ_BUFFER 65536           /* bytes of a connection's read buffer */
/* An inbound connection whose first INGEST_JUNK_LINES lines are all malformed (no valid
 * one among them) is closed as junk (counted in connections_junk). One that sends nothing
 * is kept: the oscilloscope's wrapper connects and says nothing until a probe is enabled. */
#define INGEST_JUNK_LINES 16
/* At the connection cap the connection silent longest is closed for a new one, but only one
 * silent for at least this long: a wrapper streaming in batches is never taken for quiet. */
#define INGEST_EVICT_MIN_SILENT_MS 1000

struct ingest_tcp_options {
    const char *listen;          /* "HOST:PORT" to accept wrappers on (port 0: any) */
    const char *const *wrappers; /* "HOST:PORT" of legacy command listeners to dial */
    int n_wrappers;              /* entries of wrappers */
    /* 0 (the default): nothing is written on an inbound legacy connection (no hello): its
     * wrapper never reads it, and a close with unread data becomes a TCP reset that
     * discards the lines dqd had not read yet; its commands are listed as not applicable.
     * 1: such connections get the enabled set and commands in the legacy dialect, for
     * legacy wrappers that do read. A v2 hello (the peer reads) always gets them. */
    int legacy_commands;
    /* Simulated time: when set, a v2 connection's `clock;NS` line calls on_clock(ctx, ns)
     * (which moves dqd's clock and closes the windows due), then answers `tick;NS`. When
     * NULL such lines are counted as protocol errors (kind "unknown"). */
    void (*on_clock)(void *ctx, int64_t ns);
    void *clock_ctx;
    /* Inbound connections open at once (0: no cap). At the cap a new connection closes the
     * one silent longest (counted in connections_evicted): no timer closes a quiet one. */
    int max_connections;
};

/*
 * Creates the TCP source on `loop` for `core` (both borrowed). The options are copied.
 * DQ_ENOMEM, DQ_EINVAL for a bad address (message says which).
 */
int ingest_tcp_create(uv_loop_t *loop, struct core *core, const struct ingest_tcp_options *o,
                      struct ingest_source **out);

/* The TCP source as dqd configures it (ingest_make_fn): listen, wrappers, legacy_commands
 * and the environment's connection cap and clock. Always made. */
int ingest_tcp_make(const struct ingest_env *env, struct ingest_source **out);

#endif /* DQ_INGEST_H */
