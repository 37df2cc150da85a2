/*
 * ingest_tcp.c: the TCP source (see ingest.h): wrappers connecting to dqd's ingest port,
 * in the v2 dialect (hello first) or the legacy one (the ΔQ Oscilloscope's wrapper, no
 * hello), and outbound links to legacy wrappers' command listeners.
 *
 * Workload: a handful of wrapper connections each sending up to millions of lines per
 * second; commands back to wrappers are rare. So reading is allocation-free (one read
 * buffer per connection, the splitter's buffer embedded in the link, parsing into slices,
 * binning in place in the core's probe table) while writing a command allocates its
 * request. Commands are decided and recorded by the core; this file only formats them in
 * each link's dialect, queues them, and matches v2 acks to their rows.
 */
#include "ingest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "log.h"
#include "settings.h"

#define SPLIT_BUF 4096
#define PENDING_ACKS 32

enum link_kind {
    LINK_UNKNOWN = 0, /* inbound, no line yet */
    LINK_V2,          /* inbound, said hello */
    LINK_LEGACY,      /* inbound, no hello: the oscilloscope's wrapper */
    LINK_OUTBOUND,    /* dqd connected to a legacy wrapper's command listener */
};

struct tcp_source;

/* One wrapper connection, inbound on the ingest port or outbound to a listener. */
struct link {
    struct tcp_source *s;
    uint64_t id;
    enum link_kind kind;
    uv_tcp_t tcp;
    uv_timer_t timer; /* inbound: hello wait; outbound: reconnect backoff */
    uv_connect_t connect;
    int tcp_open, timer_open, connected, closing;
    char peer[64];
    uint32_t origin; /* the core's id of this connection (0: none) */
    char node[WIRE_MAX_LABEL + 1];
    char app[WIRE_MAX_LABEL + 1];
    int running; /* last state line: 0/1, −1 unknown */
    int valid;   /* a valid line came (one whose first INGEST_JUNK_LINES lines are bad is junk) */
    int inbound; /* counted in the source's n_inbound */
    uint64_t rx_ms; /* loop time of its last read, or of its accept: the cap evicts the oldest */
    /* outbound target and backoff */
    char host[64];
    int port;
    int backoff_ms;
    char host_ip[64]; /* the host as an address ("127.0.0.1"), what pairing compares */
    /* one wrapper, two connections (link_pair): a legacy data link and a listener */
    enum pair_state { PAIR_NONE = 0, PAIR_ONE, PAIR_AMBIGUOUS } pair;
    struct link *pair_with;  /* PAIR_ONE: the other link (only right after pair_links) */
    uint64_t pair_id;        /* PAIR_ONE: its id (what link_info reports) */
    int pair_data, pair_lsn; /* legacy data links and listeners it could pair with */
    /* ingest */
    struct wire_splitter split;
    char splitbuf[SPLIT_BUF];
    int64_t read_now_ns; /* dqd's clock when the chunk being parsed was read */
    char *readbuf;
    size_t readbuf_size;
    uint64_t lines, instances, drops, acks, errors_total;
    uint64_t counted; /* instances already added to the core's total */
    uint64_t errors[WIRE_E_COUNT];
    uint64_t commands_sent, commands_skipped;
    uint64_t bytes_written; /* queued to the peer since the connection opened */
    struct {
        char text[WIRE_CMD_MAX];
        int64_t id; /* store id of the command awaiting its ack */
    } pending[PENDING_ACKS];
    int pending_next;
    struct log_limit limit;
    struct link *next, *prev;
};

struct tcp_source {
    struct ingest_source base; /* first: the public handle */
    uv_loop_t *loop;
    struct core *core;
    struct probe_table *probes;
    struct ingest_tcp_options opt;
    char listen[DQD_HOSTPORT_MAX];
    char (*wrappers)[DQD_HOSTPORT_MAX];
    char host[64];
    int port;
    uv_tcp_t server;
    int server_open;
    struct link *links;
    size_t n_links;
    struct link *send_hint; /* the link tcp_send found last (NULL once it is freed) */
    uint64_t next_link_id;
    uint64_t connections_total, connections_rejected, connections_junk, connections_evicted;
    size_t n_inbound; /* inbound connections open */
    struct log_limit reject_limit, evict_limit, junk_limit;
    uint64_t connections_reset, reset_written_bytes;
    uint64_t errors[WIRE_E_COUNT];
    uint64_t instances; /* added to the core's instances_total */
    /* shutdown */
    int closing, pending_closes;
    void (*on_closed)(void *);
    void *on_closed_arg;
};

static struct tcp_source *tcp_of(struct ingest_source *s) {
    return (struct tcp_source *)s;
}

static int resolve(const char *host, int port, struct sockaddr_storage *ss) {
    memset(ss, 0, sizeof *ss);
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) {
        return DQ_OK;
    }
    if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0) {
        return DQ_OK;
    }
    if (strcmp(host, "localhost") == 0) {
        return uv_ip4_addr("127.0.0.1", port, (struct sockaddr_in *)ss) == 0 ? DQ_OK : DQ_EINVAL;
    }
    return dq_fail(DQ_EINVAL, "\"%s\" is not an IP address", host);
}

/* ---- shutdown bookkeeping ------------------------------------------------------------ */

static void finish_if_done(struct tcp_source *s) {
    if (!s->closing || s->pending_closes > 0) {
        return;
    }
    void (*done)(void *) = s->on_closed;
    void *arg = s->on_closed_arg;
    free(s->wrappers);
    free(s);
    if (done) {
        done(arg);
    }
}

static void on_server_closed(uv_handle_t *h) {
    struct tcp_source *s = h->data;
    s->pending_closes--;
    finish_if_done(s);
}

/* ---- links ---------------------------------------------------------------------------- */

static void link_on_closed(uv_handle_t *h);
static void outbound_schedule(struct link *l);

static void link_info(const struct link *l, struct core_link_info *li);
static void pair_links(struct tcp_source *s);

static void link_free_if_closed(struct link *l) {
    if (l->tcp_open || l->timer_open) {
        return;
    }
    struct tcp_source *s = l->s;
    struct core_link_info li;
    link_info(l, &li);
    core_link_gone(s->core, &li); /* its errors stay counted under its peer */
    if (l->prev) {
        l->prev->next = l->next;
    } else if (s->links == l) {
        s->links = l->next;
    }
    if (l->next) {
        l->next->prev = l->prev;
    }
    if (s->send_hint == l) {
        s->send_hint = NULL;
    }
    s->n_links--;
    free(l->readbuf);
    free(l);
    s->pending_closes--;
    finish_if_done(s);
}

static void link_on_closed(uv_handle_t *h) {
    struct link *l = h->data;
    if (h == (uv_handle_t *)&l->tcp) {
        l->tcp_open = 0;
    } else {
        l->timer_open = 0;
    }
    if (l->kind == LINK_OUTBOUND && !l->closing && h == (uv_handle_t *)&l->tcp) {
        outbound_schedule(l);
        return;
    }
    link_free_if_closed(l);
}

/* The host part of a "HOST:PORT" peer (IPv6 hosts keep their colons). */
static void peer_host(const char *peer, char *out, size_t cap) {
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    n = n < cap - 1 ? n : cap - 1;
    memcpy(out, peer, n);
    out[n] = '\0';
}

/* Gives a connection that is up its origin in the core: labelled as the commands table
 * labels it, its node the peer's host until a hello names one. */
static void link_origin_open(struct link *l) {
    char label[PROBES_LABEL_MAX], host[64];
    snprintf(label, sizeof label, "%" PRIu64 " %s", l->id, l->peer);
    peer_host(l->peer, host, sizeof host);
    if (probes_origin_open(l->s->probes, label, host, "", &l->origin) != DQ_OK) {
        LOG(LOG_WARN, "link %" PRIu64 " (%s): %s; its instances count without an origin", l->id,
            l->peer, dq_last_error());
    }
}

/* The connection went down: the core stops counting it as a live origin (and knows when
 * the last wrapper went). */
static void link_origin_close(struct link *l) {
    probes_origin_closed(l->s->probes, l->origin);
    l->origin = 0;
    if (l->connected) {
        struct core_link_info li;
        link_info(l, &li);
        core_link_down(l->s->core, &li);
    }
}

/* Closes a link for good (inbound) or until the next reconnect (outbound, not closing). */
static void link_close_tcp(struct link *l) {
    link_origin_close(l);
    l->connected = 0;
    if (l->tcp_open && !uv_is_closing((uv_handle_t *)&l->tcp)) {
        uv_close((uv_handle_t *)&l->tcp, link_on_closed);
    }
}

static void link_destroy(struct link *l) {
    if (l->inbound) {
        l->inbound = 0;
        l->s->n_inbound--;
    }
    link_origin_close(l);
    l->closing = 1;
    l->connected = 0;
    if (l->tcp_open && !uv_is_closing((uv_handle_t *)&l->tcp)) {
        uv_close((uv_handle_t *)&l->tcp, link_on_closed);
    }
    if (l->timer_open && !uv_is_closing((uv_handle_t *)&l->timer)) {
        uv_close((uv_handle_t *)&l->timer, link_on_closed);
    }
    if (!l->tcp_open && !l->timer_open) {
        link_free_if_closed(l);
    }
}

static struct link *link_new(struct tcp_source *s, enum link_kind kind) {
    struct link *l = calloc(1, sizeof *l);
    if (!l) {
        return NULL;
    }
    l->readbuf_size = INGEST_READ_BUFFER;
    l->readbuf = malloc(l->readbuf_size);
    if (!l->readbuf) {
        free(l);
        return NULL;
    }
    l->s = s;
    l->id = ++s->next_link_id;
    l->kind = kind;
    l->running = -1;
    l->next = s->links;
    if (s->links) {
        s->links->prev = l;
    }
    s->links = l;
    s->n_links++;
    s->pending_closes++; /* released when the link is freed */
    l->tcp.data = l;
    l->timer.data = l;
    return l;
}

struct write_req {
    uv_write_t req;
    char data[];
};

static void on_written(uv_write_t *req, int status) {
    (void)status; /* a failed write shows up as a read error and closes the link */
    free(req);
}

/* Why a legacy connection on the ingest port gets nothing (the commands row says it). */
static const char *const legacy_mute_reason =
    "a legacy connection to the ingest port is not read by its wrapper: dqd writes nothing "
    "to it (legacy_commands is off), since a close with unread data resets the connection "
    "and loses lines";
static const char *const legacy_clear_reason =
    "a legacy wrapper has no clear_timeout: it keeps reporting the probe";
static const char *const legacy_trace_reason =
    "the probe is bound to a function and a legacy wrapper cannot trace functions (the trace "
    "command needs dqd's v2 wrapper, wrapper-erl): nothing was sent";

/* 1 when dqd may write on the link: not an inbound legacy one unless the config says so. */
static int link_writable(const struct link *l) {
    return l->kind != LINK_LEGACY || l->s->opt.legacy_commands;
}

/* Queues bytes to a link; skipped (and counted) when the peer is not reading. */
static int link_send(struct link *l, const char *data, size_t len) {
    if (!l->connected || l->closing) {
        return DQ_ESTATE;
    }
    if (!link_writable(l)) {
        return dq_fail(DQ_ESTATE, "link %" PRIu64 " is a legacy connection: %s", l->id,
                       legacy_mute_reason);
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&l->tcp) > INGEST_MAX_PENDING_WRITE) {
        l->commands_skipped++;
        return DQ_EFULL;
    }
    struct write_req *w = malloc(sizeof *w + len);
    if (!w) {
        return DQ_ENOMEM;
    }
    memcpy(w->data, data, len);
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &buf, 1, on_written) != 0) {
        free(w);
        return DQ_ENET;
    }
    l->commands_sent++;
    l->bytes_written += len;
    return DQ_OK;
}

static enum wire_dialect link_dialect(const struct link *l) {
    return l->kind == LINK_V2 ? WIRE_V2 : WIRE_LEGACY;
}

static int link_send_cmd(struct link *l, const struct wire_cmd *cmd) {
    char buf[WIRE_CMD_MAX];
    int n = wire_format_cmd(buf, sizeof buf, link_dialect(l), cmd);
    if (n < 0) {
        return n; /* e.g. clear_timeout to a legacy link: not applicable */
    }
    return link_send(l, buf, (size_t)n);
}

static int link_takes_commands(const struct link *l) {
    return l->connected && !l->closing && l->kind != LINK_UNKNOWN;
}

static const char *link_kind_name(const struct link *l) {
    return l->kind == LINK_V2         ? "v2"
           : l->kind == LINK_OUTBOUND ? "outbound"
           : l->kind == LINK_LEGACY   ? "legacy"
                                      : "unknown";
}

/* Sends the enabled set and the running state: after a hello, a legacy link's first
 * line, or an outbound connect. */
static void link_push_state(struct link *l) {
    struct probe_table *t = l->s->probes;
    if (!link_writable(l)) {
        pair_links(l->s);
        if (l->pair == PAIR_ONE) {
            LOG(LOG_INFO,
                "link %" PRIu64 " (legacy %s): no hello, so dqd writes nothing to it (its wrapper "
                "does not read it); its wrapper takes commands on its listener, link %" PRIu64
                " %s: one wrapper, two connections",
                l->id, l->peer, l->pair_with->id, l->pair_with->peer);
        } else {
            LOG(LOG_INFO,
                "link %" PRIu64 " (legacy %s): no hello, so dqd writes nothing to it (its wrapper "
                "does not read it; set legacy_commands to on if it does, or list its command "
                "listener in wrappers); %s",
                l->id, l->peer,
                l->pair == PAIR_AMBIGUOUS
                    ? "several legacy wrappers or listeners on its host: which listener is its "
                      "wrapper's cannot be told, and its commands are recorded ambiguous"
                    : "commands for it are recorded not_applied");
        }
        return;
    }
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        if (!p->enabled) {
            continue;
        }
        struct wire_cmd cmd = core_enable_cmd(p, p->dmax_ms);
        if (link_send_cmd(l, &cmd) == DQ_EINVAL && cmd.kind == WIRE_CMD_TRACE) {
            LOG(LOG_WARN,
                "link %" PRIu64 " (%s): probe %s is bound to the function %s, which a legacy "
                "wrapper cannot trace: not sent",
                l->id, l->peer, p->name, p->mfa);
        }
    }
    struct wire_cmd run = {.kind =
                               core_running(l->s->core) ? WIRE_CMD_START_STUB : WIRE_CMD_STOP_STUB};
    link_send_cmd(l, &run);
    LOG(LOG_INFO, "link %" PRIu64 " (%s %s): sent the enabled set", l->id,
        l->kind == LINK_V2 ? "v2" : (l->kind == LINK_OUTBOUND ? "outbound" : "legacy"), l->peer);
}

static void link_count_error(struct link *l, int err, const char *line, size_t len) {
    if (err <= 0 || err >= WIRE_E_COUNT) {
        return;
    }
    l->errors[err]++;
    l->errors_total++;
    l->s->errors[err]++;
    uint64_t suppressed = 0;
    if (log_limit_allow(&l->limit, (int64_t)uv_now(l->s->loop), 5, &suppressed)) {
        char shown[64];
        size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)line[i];
            shown[i] = (c >= 32 && c < 127) ? (char)c : '?';
        }
        shown[n] = '\0';
        LOG(LOG_WARN, "link %" PRIu64 " (%s): %s: \"%s%s\"%s", l->id, l->peer,
            wire_err_message(err), shown, len > n ? "…" : "",
            suppressed ? " (earlier messages suppressed)" : "");
    }
}

static void slice_copy(char *dst, size_t cap, struct wire_slice s) {
    size_t n = s.n < cap - 1 ? s.n : cap - 1;
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

/* After a read: an inbound connection that sent no valid line yet and INGEST_JUNK_LINES bad
 * ones is closed as junk (decided on what it sent, not on time: one that sends nothing is a
 * quiet wrapper and is kept). 1 when it was closed. */
static int link_close_if_junk(struct link *l) {
    if (!l->inbound || l->valid || l->closing || l->errors_total < INGEST_JUNK_LINES) {
        return 0;
    }
    struct tcp_source *s = l->s;
    s->connections_junk++;
    uint64_t held = 0;
    if (log_limit_allow(&s->junk_limit, (int64_t)uv_now(s->loop), 1, &held)) {
        LOG(LOG_WARN,
            "link %" PRIu64 " (%s): its first %" PRIu64 " lines were all malformed, none valid: "
            "closed as junk%s",
            l->id, l->peer, l->errors_total, held ? " (and more since the last message)" : "");
    }
    link_destroy(l);
    return 1;
}

static void link_become(struct link *l, enum link_kind kind) {
    if (l->kind != LINK_UNKNOWN) {
        return;
    }
    l->kind = kind;
    probes_origin_set_kind(l->s->probes, l->origin, link_kind_name(l));
    if (l->timer_open) {
        uv_timer_stop(&l->timer); /* the hello wait is over; no timer closes a quiet link */
    }
    link_push_state(l);
}

/*
 * A v2 wrapper's state line lists the probes it has a dMax for. Any that dqd does not
 * want (e.g. enabled by a dqd that was killed before it could record it) is cleared, so
 * the wrapper and the store agree again; those dqd wants were re-sent after the hello.
 */
static void reconcile_state(struct link *l, const struct wire_msg *m) {
    struct wire_slice it = m->probes, key, value;
    while (wire_kv_next(&it, &key, &value) == 1) {
        struct probe *p = probes_find(l->s->probes, key.p, key.n);
        if (p && p->enabled) {
            continue;
        }
        struct wire_cmd cmd = {.kind = WIRE_CMD_CLEAR_TIMEOUT, .name = key};
        if (link_send_cmd(l, &cmd) == DQ_OK) {
            LOG(LOG_INFO, "link %" PRIu64 ": cleared %.*s, which dqd does not have enabled", l->id,
                (int)key.n, key.p);
        }
    }
}

/* An instance line, parsed (by wire_parse() or the splitter's fast path). */
static inline void link_instance(struct link *l, const struct wire_msg *m) {
    l->valid = 1;
    if (l->kind == LINK_UNKNOWN) {
        link_become(l, LINK_LEGACY);
    }
    l->instances++;
    probes_record_line(l->s->probes, l->origin, m);
}

/* The splitter's fast path: an instance line, already parsed. */
static void on_instance(void *ctx, const struct wire_msg *m) {
    struct link *l = ctx;
    l->lines++;
    link_instance(l, m);
}

static void on_ack(struct link *l, const struct wire_msg *m) {
    l->acks++;
    for (int i = 0; i < PENDING_ACKS; i++) {
        if (l->pending[i].id && strlen(l->pending[i].text) == m->command.n &&
            memcmp(l->pending[i].text, m->command.p, m->command.n) == 0) {
            core_command_acked(l->s->core, l->pending[i].id);
            l->pending[i].id = 0;
            break;
        }
    }
    /* an acknowledged start or stop is the wrapper's state as much as a state line */
    if (m->command.n == 10 && memcmp(m->command.p, "start_stub", 10) == 0) {
        l->running = 1;
    } else if (m->command.n == 9 && memcmp(m->command.p, "stop_stub", 9) == 0) {
        l->running = 0;
    }
}

/* Adds the instances parsed since the last call to the core's total (once per read, not
 * per line). */
static void link_flush_count(struct link *l) {
    core_add_instances(l->s->core, l->instances - l->counted);
    l->s->instances += l->instances - l->counted;
    l->counted = l->instances;
}

/* Simulated time: dqd's clock moves to the line's time (closing the windows due, whose
 * commands go out first), then the simulator is told with `tick;NS`. */
static void on_clock(struct link *l, const struct wire_msg *m, const char *line, size_t len) {
    struct tcp_source *s = l->s;
    if (!s->opt.on_clock || l->kind != LINK_V2) {
        link_count_error(l, WIRE_E_UNKNOWN, line, len); /* dqd runs on the wall clock */
        return;
    }
    link_flush_count(l); /* the windows about to close count what came before */
    /* the line says everything before NS was sent: the link is alive up to NS */
    probes_origin_heard(s->probes, l->origin, m->clock_ns);
    s->opt.on_clock(s->opt.clock_ctx, m->clock_ns);
    char tick[WIRE_CMD_MAX];
    int n = wire_format_tick(tick, sizeof tick, m->clock_ns);
    if (n > 0) {
        link_send(l, tick, (size_t)n);
    }
}

static void on_line(void *ctx, const char *line, size_t len, int err) {
    struct link *l = ctx;
    l->lines++;
    if (err) {
        link_count_error(l, err, line, len);
        return;
    }
    struct wire_msg m;
    int rc = wire_parse(line, len, l->read_now_ns, &m);
    if (rc) {
        link_count_error(l, rc, line, len);
        return;
    }
    l->valid = 1;
    switch (m.kind) {
    case WIRE_INSTANCE:
        link_instance(l, &m);
        break;
    case WIRE_PING:
        if (l->kind == LINK_UNKNOWN) {
            link_become(l, LINK_LEGACY);
        }
        break;
    case WIRE_HELLO:
        slice_copy(l->node, sizeof l->node, m.node);
        slice_copy(l->app, sizeof l->app, m.app);
        if (l->origin &&
            probes_origin_identify(l->s->probes, l->origin, l->node, l->app) != DQ_OK) {
            LOG(LOG_WARN, "link %" PRIu64 " (%s): node %s: %s", l->id, l->peer, l->node,
                dq_last_error());
        }
        if (l->kind == LINK_OUTBOUND) {
            break; /* a listener that greets stays an outbound link (and keeps reconnecting) */
        }
        if (l->kind == LINK_UNKNOWN) {
            link_become(l, LINK_V2);
        } else {
            l->kind = LINK_V2;
            probes_origin_set_kind(l->s->probes, l->origin, link_kind_name(l));
            link_push_state(l); /* a hello again: the wrapper restarted its state */
        }
        break;
    case WIRE_ACK:
        on_ack(l, &m);
        break;
    case WIRE_DROP:
        l->drops += m.count;
        break;
    case WIRE_STATE:
        l->running = m.running;
        if (l->kind == LINK_V2) {
            reconcile_state(l, &m);
            core_trace_state(l->s->core, l->id, &m);
        }
        break;
    case WIRE_CLOCK:
        on_clock(l, &m, line, len);
        break;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    struct link *l = h->data;
    *buf = uv_buf_init(l->readbuf, (unsigned)l->readbuf_size);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    struct link *l = stream->data;
    if (nread > 0) {
        /* one clock read per chunk, not per line (a vDSO call costs ~70 ns on a VM, a
         * quarter of the ingest time); the clock check allows a day of skew anyway */
        l->read_now_ns = clock_now(core_clock(l->s->core));
        l->rx_ms = uv_now(l->s->loop);
        probes_origin_heard(l->s->probes, l->origin, l->read_now_ns);
        wire_splitter_feed_instances(&l->split, buf->base, (size_t)nread, l->read_now_ns,
                                     on_instance);
        link_flush_count(l);
        link_close_if_junk(l);
        return;
    }
    if (nread < 0) {
        size_t pending = wire_splitter_pending(&l->split);
        if (pending > 0) {
            /* a last line cut off by the close: not an instance, but not silently lost */
            link_count_error(l, WIRE_E_SYNTAX, l->splitbuf, pending);
        }
        if (nread == UV_ECONNRESET) {
            /* the peer's kernel reset the connection (typically: the wrapper closed it with
             * dqd's commands unread): the lines it had not delivered yet are gone, and how
             * many is known only to the peer */
            l->s->connections_reset++;
            l->s->reset_written_bytes += l->bytes_written;
            LOG(LOG_WARN,
                "link %" PRIu64 " (%s %s): connection reset by the peer after %" PRIu64
                " instances: lines it sent that dqd had not read yet are lost (dqd had written "
                "%" PRIu64 " bytes to it%s)",
                l->id, link_kind_name(l), l->peer, l->instances, l->bytes_written,
                l->bytes_written ? ", which a peer that closes without reading makes a reset" : "");
        } else if (nread != UV_EOF) {
            LOG(LOG_INFO, "link %" PRIu64 " (%s): %s", l->id, l->peer, uv_strerror((int)nread));
        } else {
            LOG(LOG_INFO, "link %" PRIu64 " (%s) closed by the peer", l->id, l->peer);
        }
        if (l->kind == LINK_OUTBOUND) {
            link_close_tcp(l);
        } else {
            link_destroy(l);
        }
    }
}

static void on_hello_timeout(uv_timer_t *t) {
    struct link *l = t->data;
    link_become(l, LINK_LEGACY);
}

static void peer_name(uv_tcp_t *tcp, char *out, size_t cap) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    out[0] = '\0';
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) != 0) {
        return;
    }
    char ip[48] = "";
    int port = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        uv_ip4_name(a, ip, sizeof ip);
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        uv_ip6_name(a, ip, sizeof ip);
        port = ntohs(a->sin6_port);
    }
    snprintf(out, cap, "%s:%d", ip, port);
}

/*
 * At the connection cap, the inbound connection that has been silent longest (its last read
 * the oldest; never a read: its accept) is closed to make room, logged and counted: a quiet
 * wrapper keeps its slot until the slots run out, and then the one quiet the longest goes.
 * One that read something within INGEST_EVICT_MIN_SILENT_MS is never chosen (a streaming
 * wrapper between two batches is not silent): when all are that recent, nothing is closed
 * and the new connection is refused. 1 when one was closed.
 */
static int evict_longest_silent(struct tcp_source *s) {
    struct link *victim = NULL;
    uint64_t now = uv_now(s->loop);
    for (struct link *l = s->links; l; l = l->next) {
        if (!l->inbound || !l->connected || l->closing ||
            now - l->rx_ms < INGEST_EVICT_MIN_SILENT_MS) {
            continue;
        }
        if (!victim || l->rx_ms < victim->rx_ms ||
            (l->rx_ms == victim->rx_ms && l->id < victim->id)) {
            victim = l;
        }
    }
    if (!victim) {
        return 0;
    }
    s->connections_evicted++;
    uint64_t held = 0;
    if (log_limit_allow(&s->evict_limit, (int64_t)now, 1, &held)) {
        LOG(LOG_WARN,
            "ingest: %zu connections open, the most max_ingest_connections allows: closed link "
            "%" PRIu64 " (%s %s, %" PRIu64 " instances), silent for %.1f s, the longest, to take "
            "a new one%s",
            s->n_inbound, victim->id, link_kind_name(victim), victim->peer, victim->instances,
            (double)(now - victim->rx_ms) / 1000.0,
            held ? " (and more since the last message)" : "");
    }
    link_destroy(victim);
    return 1;
}

static void on_connection(uv_stream_t *server, int status) {
    struct tcp_source *s = server->data;
    if (status < 0 || s->closing) {
        return;
    }
    int over = s->opt.max_connections > 0 && s->n_inbound >= (size_t)s->opt.max_connections;
    if (over && evict_longest_silent(s)) {
        over = 0;
    }
    if (over) {
        uint64_t held;
        if (log_limit_allow(&s->reject_limit, (int64_t)uv_now(s->loop), 1, &held)) {
            LOG(LOG_WARN,
                "ingest: %zu connections open, the most max_ingest_connections allows: a new "
                "one is closed%s",
                s->n_inbound, held ? " (and more since the last message)" : "");
        }
    }
    struct link *l = over ? NULL : link_new(s, LINK_UNKNOWN);
    if (!l || uv_tcp_init(s->loop, &l->tcp) != 0) {
        /* accept and drop so the listener does not spin on the pending connection */
        uv_tcp_t *tmp = malloc(sizeof *tmp);
        if (tmp && uv_tcp_init(s->loop, tmp) == 0) {
            (void)uv_accept(server, (uv_stream_t *)tmp);
            uv_close((uv_handle_t *)tmp, (uv_close_cb)free);
        } else {
            free(tmp);
        }
        s->connections_rejected++;
        if (l) {
            link_free_if_closed(l);
        }
        return;
    }
    l->tcp_open = 1;
    int arc = uv_accept(server, (uv_stream_t *)&l->tcp);
    if (arc != 0) {
        /* e.g. reset by the peer while it waited in the backlog: counted, not silent */
        s->connections_rejected++;
        LOG(LOG_DEBUG, "ingest: accept: %s", uv_strerror(arc));
        link_destroy(l);
        return;
    }
    s->connections_total++;
    l->connected = 1;
    l->inbound = 1;
    l->rx_ms = uv_now(s->loop);
    s->n_inbound++;
    peer_name(&l->tcp, l->peer, sizeof l->peer);
    link_origin_open(l);
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1, INGEST_KEEPALIVE_S); /* a peer that vanished is noticed */
    wire_splitter_init(&l->split, l->splitbuf, sizeof l->splitbuf, on_line, l);
    if (uv_timer_init(s->loop, &l->timer) == 0) {
        l->timer_open = 1;
        uv_timer_start(&l->timer, on_hello_timeout, INGEST_HELLO_WAIT_MS, 0);
    }
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    LOG(LOG_DEBUG, "link %" PRIu64 ": connection from %s", l->id, l->peer);
}

/* ---- outbound links to legacy command listeners ------------------------------------- */

static void outbound_connect(struct link *l);

static void on_backoff(uv_timer_t *t) {
    outbound_connect(t->data);
}

static void outbound_schedule(struct link *l) {
    if (l->closing || l->s->closing) {
        link_free_if_closed(l);
        return;
    }
    l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : 100;
    if (l->backoff_ms > 5000) {
        l->backoff_ms = 5000;
    }
    uv_timer_start(&l->timer, on_backoff, (uint64_t)l->backoff_ms, 0);
}

static void on_outbound_connected(uv_connect_t *req, int status) {
    struct link *l = req->data;
    if (status < 0) {
        if (status != UV_ECANCELED) {
            LOG(LOG_DEBUG, "wrapper %s: %s; retrying in %d ms", l->peer, uv_strerror(status),
                l->backoff_ms ? l->backoff_ms * 2 : 100);
        }
        link_close_tcp(l);
        return;
    }
    l->connected = 1;
    l->backoff_ms = 0;
    uv_tcp_keepalive(&l->tcp, 1, INGEST_KEEPALIVE_S);
    link_origin_open(l);
    probes_origin_set_kind(l->s->probes, l->origin, link_kind_name(l));
    LOG(LOG_INFO, "wrapper %s: connected to its command listener", l->peer);
    wire_splitter_init(&l->split, l->splitbuf, sizeof l->splitbuf, on_line, l);
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    link_push_state(l);
}

static void outbound_connect(struct link *l) {
    struct sockaddr_storage ss;
    if (l->closing || resolve(l->host, l->port, &ss) != DQ_OK) {
        return;
    }
    if (uv_tcp_init(l->s->loop, &l->tcp) != 0) {
        outbound_schedule(l);
        return;
    }
    l->tcp.data = l;
    l->tcp_open = 1;
    l->connect.data = l;
    if (uv_tcp_connect(&l->connect, &l->tcp, (struct sockaddr *)&ss, on_outbound_connected) != 0) {
        link_close_tcp(l);
    }
}

static int outbound_add(struct tcp_source *s, const char *addr) {
    struct link *l = link_new(s, LINK_OUTBOUND);
    if (!l) {
        return dq_fail(DQ_ENOMEM, "no memory for a wrapper link");
    }
    int rc = settings_split_hostport(addr, l->host, sizeof l->host, &l->port);
    struct sockaddr_storage ss;
    if (!rc) {
        rc = resolve(l->host, l->port, &ss);
    }
    if (rc || uv_timer_init(s->loop, &l->timer) != 0) {
        rc = rc ? dq_fail(rc, "wrapper address: %s", dq_last_error()) : DQ_ENOMEM;
        link_destroy(l);
        return rc;
    }
    l->timer_open = 1;
    snprintf(l->peer, sizeof l->peer, "%s", addr);
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, l->host_ip, sizeof l->host_ip);
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, l->host_ip, sizeof l->host_ip);
    }
    outbound_connect(l);
    return DQ_OK;
}

/* ---- one wrapper, two connections -------------------------------------------------------
 *
 * The oscilloscope's wrapper sends instances on a connection to the ingest port, which it
 * never reads, and takes commands on a listener of its own that dqd dials (`wrappers`).
 * Those two links are one wrapper when they are the only legacy data link and the only
 * listener on one host (the listener's address, the data link's peer), and their apps do
 * not differ where both say one: then a command the listener carries reached the wrapper
 * of the data link too. Several of either on one host cannot be paired without guessing:
 * that is said (PAIR_AMBIGUOUS), not guessed. Worked out afresh whenever asked (commands,
 * the status, a new legacy link): O(data links × listeners), nothing when there is no
 * listener.
 */

/* An inbound legacy connection dqd does not write to (its wrapper does not read it). */
static int is_data_link(const struct link *l) {
    return l->inbound && l->kind == LINK_LEGACY && l->connected && !l->closing;
}

static int is_listener(const struct link *l) {
    return l->kind == LINK_OUTBOUND && !l->closing;
}

/* The host of a link as an address: an IPv4 peer seen through an IPv6 socket as itself. */
static const char *link_host(const struct link *l, char *buf, size_t cap) {
    if (l->kind == LINK_OUTBOUND) {
        return l->host_ip;
    }
    peer_host(l->peer, buf, cap);
    return strncmp(buf, "::ffff:", 7) == 0 && strchr(buf + 7, '.') ? buf + 7 : buf;
}

/* 1 when data link d and listener o may be one wrapper: one host, no two different apps. */
static int same_wrapper(const struct link *d, const char *d_host, const struct link *o) {
    return strcmp(d_host, o->host_ip) == 0 && (!d->app[0] || !o->app[0] || !strcmp(d->app, o->app));
}

static void pair_links(struct tcp_source *s) {
    size_t listeners = 0;
    for (struct link *l = s->links; l; l = l->next) {
        l->pair = PAIR_NONE;
        l->pair_with = NULL;
        l->pair_id = 0;
        l->pair_data = l->pair_lsn = 0;
        listeners += is_listener(l);
    }
    if (listeners == 0) {
        return;
    }
    char hb[64];
    for (struct link *d = s->links; d; d = d->next) {
        if (!is_data_link(d)) {
            continue;
        }
        const char *h = link_host(d, hb, sizeof hb);
        for (struct link *o = s->links; o; o = o->next) {
            if (is_listener(o) && same_wrapper(d, h, o)) {
                d->pair_lsn++;
                o->pair_data++;
                d->pair_with = o;
                o->pair_with = d;
            }
        }
    }
    /* a data link's rivals are the other data links of its listeners, and a listener's the
     * other listeners of its data links */
    for (struct link *l = s->links; l; l = l->next) {
        if (l->pair_with) {
            if (is_data_link(l)) {
                l->pair_data = l->pair_with->pair_data;
            } else {
                l->pair_lsn = l->pair_with->pair_lsn;
            }
        }
    }
    for (struct link *l = s->links; l; l = l->next) {
        if (!l->pair_with) {
            continue;
        }
        l->pair = l->pair_data == 1 && l->pair_lsn == 1 ? PAIR_ONE : PAIR_AMBIGUOUS;
        if (l->pair != PAIR_ONE) {
            l->pair_with = NULL;
        }
        l->pair_id = l->pair_with ? l->pair_with->id : 0;
    }
}

/* "5 127.0.0.1:8081, 6 127.0.0.1:8082": the links of the other kind l could pair with. */
static void pair_rivals(const struct tcp_source *s, const struct link *l, char *buf, size_t cap) {
    char hb[64], ob[64];
    size_t len = 0;
    int data = is_data_link(l);
    const char *h = link_host(l, hb, sizeof hb);
    buf[0] = '\0';
    for (const struct link *o = s->links; o; o = o->next) {
        int other = data ? is_listener(o) && same_wrapper(l, h, o)
                         : is_data_link(o) && same_wrapper(o, link_host(o, ob, sizeof ob), l);
        if (other && len < cap) {
            int n =
                snprintf(buf + len, cap - len, "%s%" PRIu64 " %s", len ? ", " : "", o->id, o->peer);
            len = n > 0 && len + (size_t)n < cap ? len + (size_t)n : cap;
        }
    }
}

/* ---- what the core sees ---------------------------------------------------------------- */

/* What a command does on one link (out->applicable, reason, detail), pairs known. */
static void link_dest(const struct tcp_source *s, const struct link *l, const struct wire_cmd *cmd,
                      struct core_dest *out) {
    char text[WIRE_CMD_MAX], rivals[160], hb[64];
    out->id = l->id;
    out->detail[0] = '\0';
    out->reason = NULL;
    snprintf(out->label, sizeof out->label, "%" PRIu64 " %s", l->id, l->peer);
    if (!link_writable(l)) {
        out->applicable = CORE_DEST_NOT_APPLIED;
        out->reason = legacy_mute_reason;
        if (l->pair == PAIR_ONE) { /* its listener is down: listed by tcp_destinations */
            snprintf(out->detail, sizeof out->detail,
                     "its wrapper's command listener, link %" PRIu64 " %s, is not connected now: "
                     "it gets the enabled set when dqd reconnects to it",
                     l->pair_with->id, l->pair_with->peer);
        } else if (l->pair == PAIR_AMBIGUOUS) {
            out->applicable = CORE_DEST_AMBIGUOUS;
            pair_rivals(s, l, rivals, sizeof rivals);
            snprintf(out->detail, sizeof out->detail,
                     "%d legacy wrappers send from %s and %d command listeners are configured "
                     "there (%s): which listener is this connection's wrapper cannot be told, so "
                     "it is not said to be applied; the command went to those listeners",
                     l->pair_data, link_host(l, hb, sizeof hb), l->pair_lsn, rivals);
        }
        return;
    }
    out->applicable = wire_format_cmd(text, sizeof text, link_dialect(l), cmd) >= 0;
    if (!out->applicable) {
        out->reason = cmd->kind == WIRE_CMD_TRACE ? legacy_trace_reason : legacy_clear_reason;
        return;
    }
    if (l->kind != LINK_OUTBOUND) {
        return;
    }
    if (l->pair == PAIR_ONE) {
        snprintf(out->detail, sizeof out->detail,
                 "the wrapper's command listener (the same wrapper sends its instances on link "
                 "%" PRIu64 " %s)",
                 l->pair_with->id, l->pair_with->peer);
    } else if (l->pair == PAIR_AMBIGUOUS) {
        pair_rivals(s, l, rivals, sizeof rivals);
        snprintf(out->detail, sizeof out->detail,
                 "a command listener on %s, where %d legacy wrappers send instances (%s) and %d "
                 "listeners are configured: which wrapper it belongs to cannot be told",
                 l->host_ip, l->pair_data, rivals, l->pair_lsn);
    } else {
        snprintf(out->detail, sizeof out->detail, "the wrapper's command listener");
    }
}

/* The links that take commands, each with what cmd does there. A legacy data link paired
 * with a connected listener is not listed: its wrapper is the listener's (one wrapper). */
static size_t tcp_destinations(void *src, const struct wire_cmd *cmd, struct core_dest *out,
                               size_t cap) {
    struct tcp_source *s = src;
    size_t n = 0;
    pair_links(s);
    for (struct link *l = s->links; l; l = l->next) {
        if (!link_takes_commands(l)) {
            continue;
        }
        if (!link_writable(l) && l->pair == PAIR_ONE && link_takes_commands(l->pair_with)) {
            continue; /* its listener carries it */
        }
        if (n < cap) {
            link_dest(s, l, cmd, &out[n]);
        }
        n++;
    }
    return n;
}

static int tcp_send(void *src, uint64_t dest, const struct wire_cmd *cmd, int64_t row) {
    struct tcp_source *s = src;
    /* a change goes to the links in the order tcp_destinations listed them: the one after
     * the last found is nearly always the next (without the hint, 5,000 links cost
     * 12.5 million steps per change, 0.12 s of the loop) */
    struct link *h = s->send_hint;
    struct link *l = h && h->next && h->next->id == dest ? h->next : h && h->id == dest ? h : NULL;
    if (!l) {
        l = s->links;
        while (l && l->id != dest) {
            l = l->next;
        }
    }
    s->send_hint = l;
    if (!l || !link_takes_commands(l)) {
        return dq_fail(DQ_ESTATE, "wrapper link %" PRIu64 " is gone", dest);
    }
    char text[WIRE_CMD_MAX];
    int n = wire_format_cmd(text, sizeof text, link_dialect(l), cmd);
    if (n < 0) {
        return n;
    }
    int rc = link_send(l, text, (size_t)n);
    if (rc == DQ_OK && row > 0 && l->kind == LINK_V2) {
        /* remember it until the wrapper's ack;COMMAND comes back */
        int slot = l->pending_next++ % PENDING_ACKS;
        size_t len = (size_t)n - 1; /* without the newline */
        memcpy(l->pending[slot].text, text, len);
        l->pending[slot].text[len] = '\0';
        l->pending[slot].id = row;
    }
    return rc;
}

static void link_info(const struct link *l, struct core_link_info *li) {
    *li = (struct core_link_info){.id = l->id,
                                  .kind = link_kind_name(l),
                                  .peer = l->peer,
                                  .node = l->node,
                                  .app = l->app,
                                  .connected = l->connected,
                                  .inbound = l->kind != LINK_OUTBOUND,
                                  .running = l->running,
                                  .instances = l->instances,
                                  .protocol_errors = l->errors_total,
                                  .dropped_by_wrapper = l->drops,
                                  .pairing = l->pair == PAIR_ONE         ? "paired"
                                             : l->pair == PAIR_AMBIGUOUS ? "ambiguous"
                                                                         : NULL,
                                  .paired_with = l->pair_id};
}

static void tcp_links(void *src, void (*fn)(void *ctx, const struct core_link_info *li),
                      void *ctx) {
    struct tcp_source *s = src;
    pair_links(s);
    for (struct link *l = s->links; l; l = l->next) {
        struct core_link_info li;
        link_info(l, &li);
        fn(ctx, &li);
    }
}

static void tcp_totals(const struct tcp_source *s, struct core_source_stats *st) {
    st->connections_total = s->connections_total;
    st->connections_rejected = s->connections_rejected;
    st->connections_junk = s->connections_junk;
    st->connections_evicted = s->connections_evicted;
    st->connections_reset = s->connections_reset;
    st->reset_written_bytes = s->reset_written_bytes;
    memcpy(st->protocol_errors, s->errors, sizeof st->protocol_errors);
}

static void tcp_stats(void *src, struct core_source_stats *st) {
    tcp_totals(src, st);
}

static const struct core_source_ops tcp_core_ops = {
    .name = "tcp",
    .destinations = tcp_destinations,
    .send = tcp_send,
    .links = tcp_links,
    .stats = tcp_stats,
};

/* ---- start / close ------------------------------------------------------------------------ */

static int tcp_start(struct ingest_source *base) {
    struct tcp_source *s = tcp_of(base);
    struct sockaddr_storage ss;
    int rc = settings_split_hostport(s->listen, s->host, sizeof s->host, &s->port);
    if (rc || (rc = resolve(s->host, s->port, &ss))) {
        return dq_fail(rc, "--listen: %s", dq_last_error());
    }
    if (uv_tcp_init(s->loop, &s->server) != 0) {
        return dq_fail(DQ_ENET, "cannot create the ingest socket");
    }
    s->server_open = 1;
    s->server.data = s;
    int e = uv_tcp_bind(&s->server, (struct sockaddr *)&ss, 0);
    if (!e) {
        e = uv_listen((uv_stream_t *)&s->server, SOMAXCONN, on_connection); /* bursts */
    }
    if (e) {
        return dq_fail(DQ_ENET, "cannot listen on %s: %s", s->listen, uv_strerror(e));
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (uv_tcp_getsockname(&s->server, (struct sockaddr *)&bound, &len) == 0) {
        s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    for (int i = 0; i < s->opt.n_wrappers; i++) {
        rc = outbound_add(s, s->wrappers[i]);
        if (rc) {
            return rc;
        }
    }
    return DQ_OK;
}

static void tcp_close(struct ingest_source *base, void (*done)(void *arg), void *arg) {
    struct tcp_source *s = tcp_of(base);
    if (s->closing) {
        return;
    }
    s->closing = 1;
    s->on_closed = done;
    s->on_closed_arg = arg;
    s->pending_closes++; /* held while closing starts */
    if (s->server_open && !uv_is_closing((uv_handle_t *)&s->server)) {
        s->server_open = 0;
        s->pending_closes++;
        uv_close((uv_handle_t *)&s->server, on_server_closed);
    }
    for (struct link *l = s->links, *next; l; l = next) {
        next = l->next;
        link_destroy(l);
    }
    s->pending_closes--;
    finish_if_done(s);
}

/* ---- what the status, the startup line and /metrics show --------------------------------- */

static const char *tcp_host(const struct ingest_source *base) {
    return ((const struct tcp_source *)base)->host;
}

static int tcp_port(const struct ingest_source *base) {
    return ((const struct tcp_source *)base)->port;
}

static void tcp_describe(const struct ingest_source *base, json_t *o) {
    const struct tcp_source *s = (const struct tcp_source *)base;
    size_t connected = 0;
    for (const struct link *l = s->links; l; l = l->next) {
        connected += (size_t)l->connected;
    }
    json_object_set_new(o, "connections", json_integer((json_int_t)connected));
    json_object_set_new(o, "connections_total", json_integer((json_int_t)s->connections_total));
    json_object_set_new(o, "connections_evicted", json_integer((json_int_t)s->connections_evicted));
    json_object_set_new(o, "connections_junk", json_integer((json_int_t)s->connections_junk));
    json_object_set_new(o, "instances", json_integer((json_int_t)s->instances));
}

/* Bad lines by kind, and the connections: accepted, reset by the peer, refused or closed. */
static void tcp_metrics(const struct ingest_source *base, struct http_response *res) {
    struct core_source_stats st;
    tcp_totals((const struct tcp_source *)base, &st);
    http_response_printf(res, "# HELP dqd_protocol_errors_total Bad lines from wrappers, by "
                              "kind.\n# TYPE dqd_protocol_errors_total counter\n");
    for (int e = 1; e < WIRE_E_COUNT; e++) {
        http_response_printf(res, "dqd_protocol_errors_total{kind=\"%s\"} %" PRIu64 "\n",
                             wire_err_name(e), st.protocol_errors[e]);
    }
    http_response_printf(
        res,
        "# HELP dqd_connections_total Wrapper connections accepted.\n"
        "# TYPE dqd_connections_total counter\n"
        "dqd_connections_total %" PRIu64 "\n"
        "# HELP dqd_ingest_connections_reset_total Wrapper connections closed by a reset "
        "from the peer (TCP RST): the lines it sent that dqd had not read yet are lost.\n"
        "# TYPE dqd_ingest_connections_reset_total counter\n"
        "dqd_ingest_connections_reset_total %" PRIu64 "\n"
        "# HELP dqd_ingest_reset_written_bytes_total Bytes dqd had written to connections "
        "that were later reset (commands a peer that closes without reading makes a reset).\n"
        "# TYPE dqd_ingest_reset_written_bytes_total counter\n"
        "dqd_ingest_reset_written_bytes_total %" PRIu64 "\n"
        "# HELP dqd_ingest_connections_closed_total Ingest connections dqd refused or closed: "
        "rejected (refused at accept: at max_ingest_connections with every connection heard "
        "from within the last second, or no memory), evicted (at max_ingest_connections, the "
        "one silent longest, closed to take a new one), junk (its first lines all "
        "malformed).\n"
        "# TYPE dqd_ingest_connections_closed_total counter\n"
        "dqd_ingest_connections_closed_total{reason=\"rejected\"} %" PRIu64 "\n"
        "dqd_ingest_connections_closed_total{reason=\"evicted\"} %" PRIu64 "\n"
        "dqd_ingest_connections_closed_total{reason=\"junk\"} %" PRIu64 "\n",
        st.connections_total, st.connections_reset, st.reset_written_bytes, st.connections_rejected,
        st.connections_evicted, st.connections_junk);
}

static const struct ingest_ops tcp_ops = {
    .name = "tcp",
    .what = "ingest",
    .start = tcp_start,
    .close = tcp_close,
    .host = tcp_host,
    .port = tcp_port,
    .describe = tcp_describe,
    .metrics = tcp_metrics,
    .core = &tcp_core_ops,
};

int ingest_tcp_create(uv_loop_t *loop, struct core *core, const struct ingest_tcp_options *o,
                      struct ingest_source **out) {
    struct tcp_source *s = calloc(1, sizeof *s);
    if (!s) {
        return dq_fail(DQ_ENOMEM, "no memory for the ingest source");
    }
    s->base.ops = &tcp_ops;
    s->loop = loop;
    s->core = core;
    s->probes = core_probes(core);
    s->opt = *o;
    snprintf(s->listen, sizeof s->listen, "%s", o->listen ? o->listen : "");
    if (o->n_wrappers > 0) {
        s->wrappers = calloc((size_t)o->n_wrappers, sizeof *s->wrappers);
        if (!s->wrappers) {
            free(s);
            return dq_fail(DQ_ENOMEM, "no memory for the ingest source");
        }
        for (int i = 0; i < o->n_wrappers; i++) {
            snprintf(s->wrappers[i], sizeof s->wrappers[i], "%s", o->wrappers[i]);
        }
    }
    s->opt.wrappers = NULL;
    *out = &s->base;
    return DQ_OK;
}

int ingest_tcp_make(const struct ingest_env *env, struct ingest_source **out) {
    const struct dqd_config *cfg = env->cfg;
    const char *wrappers[DQD_MAX_WRAPPERS];
    for (int i = 0; i < cfg->n_wrappers; i++) {
        wrappers[i] = cfg->wrappers[i];
    }
    struct ingest_tcp_options io = {
        .listen = cfg->listen,
        .wrappers = wrappers,
        .n_wrappers = cfg->n_wrappers,
        .legacy_commands = cfg->legacy_commands,
        .max_connections = env->max_connections,
        .on_clock = env->on_clock,
        .clock_ctx = env->clock_ctx,
    };
    return ingest_tcp_create(env->loop, env->core, &io, out);
}
