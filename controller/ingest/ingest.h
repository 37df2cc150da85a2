/*
 * ingest.h: the sources outcome instances come from, behind one small interface.
 *
 * A source is one kind of input: today the TCP port that wrappers connect to (both
 * dialects of the line protocol, controller/wire/) together with the outbound links dqd
 * opens to legacy wrappers' command listeners. Each source records instances straight
 * into the core's probe table (no allocation per instance) and offers the core what it
 * needs to carry commands back, list its connections and count its errors (struct
 * core_source_ops): the core, not the source, decides what is sent and records it.
 *
 * Life of a source: create (nothing bound yet), start (bind, connect; errors name the
 * address), register its core_source_ops with core_add_source, and close at shutdown
 * (asynchronous: `done` runs once every handle has closed; unregister it first).
 */
#ifndef DQ_INGEST_H
#define DQ_INGEST_H

#include <stdint.h>
#include <uv.h>

#include "core.h"

struct ingest_source;

/* What every source implements. */
struct ingest_ops {
    const char *name; /* "tcp" */
    /* Binds and connects; DQ_ENET / DQ_EINVAL with a message naming the address. */
    int (*start)(struct ingest_source *s);
    /* Closes every handle; done(arg) runs when the last has closed and s is freed. */
    void (*close)(struct ingest_source *s, void (*done)(void *arg), void *arg);
    /* What the core sees of it (its `src` pointer is the struct ingest_source). */
    const struct core_source_ops *core;
};

struct ingest_source {
    const struct ingest_ops *ops;
};

/* ---- the TCP source ------------------------------------------------------------------- */

#define INGEST_HELLO_WAIT_MS 200           /* a connection silent this long is legacy */
#define INGEST_KEEPALIVE_S 30              /* TCP keepalive idle time of wrapper links */
#define INGEST_MAX_PENDING_WRITE (1 << 20) /* bytes queued to one wrapper before we stop */
#define INGEST_READ_BUFFER 65536           /* bytes of a connection's read buffer */

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
    /* Inbound connections open at once (0: no cap); a further one is closed at accept and
     * counted in connections_rejected. */
    int max_connections;
    /* An inbound connection that sent no valid line (instance, hello, ping, …) within this
     * many ms is closed and counted in connections_junk (0: never). */
    int64_t junk_timeout_ms;
};

/*
 * Creates the TCP source on `loop` for `core` (both borrowed). The options are copied.
 * DQ_ENOMEM, DQ_EINVAL for a bad address (message says which).
 */
int ingest_tcp_create(uv_loop_t *loop, struct core *core, const struct ingest_tcp_options *o,
                      struct ingest_source **out);

/* The port and host the TCP source listens on (after start; useful with port 0). */
int ingest_tcp_port(const struct ingest_source *s);
const char *ingest_tcp_host(const struct ingest_source *s);

/* Starts a source (s->ops->start). */
int ingest_start(struct ingest_source *s);

/* Closes a source (s->ops->close); NULL s calls done at once. */
void ingest_close(struct ingest_source *s, void (*done)(void *arg), void *arg);

#endif /* DQ_INGEST_H */
