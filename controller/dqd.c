/*
 * dqd.c: the daemon's loop: ingest connections, wrapper links (inbound v2 and legacy,
 * outbound to legacy command listeners), the window timer that closes windows and runs
 * the diagram, and the clean shutdown.
 *
 * Workload: a handful of wrapper connections each sending up to millions of lines per
 * second; commands back to wrappers are rare (a person or the adaptive loop enabling a
 * probe). So reading is allocation-free (one read buffer per connection, the splitter's
 * buffer embedded in the link, parsing into slices, binning in place) while writing a
 * command allocates its request.
 */
#include "dqd.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqd_internal.h"

int64_t dqd__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

static void finish_if_done(struct dqd *d) {
    if (!d->closing || d->pending_closes > 0) {
        return;
    }
    dqd__adapt_release(d);
    dq_eval_destroy(d->eval);
    dq_diagram_destroy(d->diagram);
    free(d->diagram_text);
    probes_release(&d->probes);
    store_close(d->store);
    void (*done)(void *) = d->on_closed;
    void *arg = d->on_closed_arg;
    free(d);
    dq_engine_cleanup();
    if (done) {
        done(arg);
    }
}

static void on_handle_closed(uv_handle_t *h) {
    struct dqd *d = h->data;
    d->pending_closes--;
    finish_if_done(d);
}

static void close_handle(struct dqd *d, uv_handle_t *h, int *open_flag) {
    if (*open_flag && !uv_is_closing(h)) {
        *open_flag = 0;
        h->data = d;
        d->pending_closes++;
        uv_close(h, on_handle_closed);
    }
}

/* ---- links ---------------------------------------------------------------------------- */

static void link_on_closed(uv_handle_t *h);
static void outbound_schedule(struct link *l);

static void link_free_if_closed(struct link *l) {
    if (l->tcp_open || l->timer_open) {
        return;
    }
    struct dqd *d = l->d;
    if (l->prev) {
        l->prev->next = l->next;
    } else if (d->links == l) {
        d->links = l->next;
    }
    if (l->next) {
        l->next->prev = l->prev;
    }
    d->n_links--;
    free(l->readbuf);
    free(l);
    d->pending_closes--;
    finish_if_done(d);
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

/* Closes a link for good (inbound) or until the next reconnect (outbound, not closing). */
static void link_close_tcp(struct link *l) {
    l->connected = 0;
    if (l->tcp_open && !uv_is_closing((uv_handle_t *)&l->tcp)) {
        uv_close((uv_handle_t *)&l->tcp, link_on_closed);
    }
}

static void link_destroy(struct link *l) {
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

static struct link *link_new(struct dqd *d, enum link_kind kind) {
    struct link *l = calloc(1, sizeof *l);
    if (!l) {
        return NULL;
    }
    l->readbuf_size = DQD_CONN_BUFFER;
    l->readbuf = malloc(l->readbuf_size);
    if (!l->readbuf) {
        free(l);
        return NULL;
    }
    l->d = d;
    l->id = ++d->next_link_id;
    l->kind = kind;
    l->running = -1;
    l->next = d->links;
    if (d->links) {
        d->links->prev = l;
    }
    d->links = l;
    d->n_links++;
    d->pending_closes++; /* released when the link is freed */
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

/* Queues bytes to a link; skipped (and counted) when the peer is not reading. */
static int link_send(struct link *l, const char *data, size_t len) {
    if (!l->connected || l->closing) {
        return DQ_ESTATE;
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&l->tcp) > DQD_MAX_PENDING_WRITE) {
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
    return DQ_OK;
}

static enum proto_dialect link_dialect(const struct link *l) {
    return l->kind == LINK_V2 ? PROTO_V2 : PROTO_LEGACY;
}

static int link_send_cmd(struct link *l, const struct proto_cmd *cmd) {
    char buf[PROTO_CMD_MAX];
    int n = proto_format_cmd(buf, sizeof buf, link_dialect(l), cmd);
    if (n < 0) {
        return n; /* e.g. clear_timeout to a legacy link: not applicable */
    }
    return link_send(l, buf, (size_t)n);
}

static int link_takes_commands(const struct link *l) {
    return l->connected && !l->closing && l->kind != LINK_UNKNOWN;
}

/* Sends the enabled set and the running state: after a hello, a legacy link's first
 * line, or an outbound connect. */
static void link_push_state(struct link *l) {
    struct dqd *d = l->d;
    for (size_t i = 0; i < d->probes.count; i++) {
        struct probe *p = d->probes.probes[i];
        if (!p->enabled) {
            continue;
        }
        struct proto_cmd cmd = {
            .kind = PROTO_CMD_SET_TIMEOUT, .name = {p->name, p->name_len}, .ms = p->dmax_ms};
        link_send_cmd(l, &cmd);
    }
    struct proto_cmd run = {.kind = d->running ? PROTO_CMD_START_STUB : PROTO_CMD_STOP_STUB};
    link_send_cmd(l, &run);
    LOG(LOG_INFO, "link %" PRIu64 " (%s %s): sent the enabled set", l->id,
        l->kind == LINK_V2 ? "v2" : (l->kind == LINK_OUTBOUND ? "outbound" : "legacy"), l->peer);
}

static int send_logged(struct dqd *d, const struct proto_cmd *cmd, const char *probe, int64_t hyp);

int dqd__broadcast(struct dqd *d, const struct proto_cmd *cmd) {
    char probe[PROBES_NAME_MAX + 1] = "";
    if (cmd->name.n > 0 && cmd->name.n <= PROBES_NAME_MAX) {
        memcpy(probe, cmd->name.p, cmd->name.n);
        probe[cmd->name.n] = '\0';
    }
    return send_logged(d, cmd, probe[0] ? probe : NULL, 0);
}

static void link_count_error(struct link *l, int err, const char *line, size_t len) {
    struct dqd *d = l->d;
    if (err <= 0 || err >= PROTO_E_COUNT) {
        return;
    }
    l->errors[err]++;
    l->errors_total++;
    d->proto_errors[err]++;
    uint64_t suppressed = 0;
    if (log_limit_allow(&l->limit, (int64_t)uv_now(d->loop), 5, &suppressed)) {
        char shown[64];
        size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)line[i];
            shown[i] = (c >= 32 && c < 127) ? (char)c : '?';
        }
        shown[n] = '\0';
        LOG(LOG_WARN, "link %" PRIu64 " (%s): %s: \"%s%s\"%s", l->id, l->peer,
            proto_err_message(err), shown, len > n ? "…" : "",
            suppressed ? " (earlier messages suppressed)" : "");
    }
}

static void slice_copy(char *dst, size_t cap, struct proto_slice s) {
    size_t n = s.n < cap - 1 ? s.n : cap - 1;
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

static void link_become(struct link *l, enum link_kind kind) {
    if (l->kind != LINK_UNKNOWN) {
        return;
    }
    l->kind = kind;
    if (l->timer_open) {
        uv_timer_stop(&l->timer);
    }
    link_push_state(l);
}

/*
 * A v2 wrapper's state line lists the probes it has a dMax for. Any that dqd does not
 * want (e.g. enabled by a dqd that was killed before it could record it) is cleared, so
 * the wrapper and the store agree again; those dqd wants were re-sent after the hello.
 */
static void reconcile_state(struct link *l, const struct proto_msg *m) {
    struct proto_slice it = m->probes, key, value;
    while (proto_kv_next(&it, &key, &value) == 1) {
        struct probe *p = probes_find(&l->d->probes, key.p, key.n);
        if (p && p->enabled) {
            continue;
        }
        struct proto_cmd cmd = {.kind = PROTO_CMD_CLEAR_TIMEOUT, .name = key};
        if (link_send_cmd(l, &cmd) == DQ_OK) {
            LOG(LOG_INFO, "link %" PRIu64 ": cleared %.*s, which dqd does not have enabled", l->id,
                (int)key.n, key.p);
        }
    }
}

/* An instance line, parsed (by proto_parse() or the splitter's fast path). */
static inline void link_instance(struct link *l, const struct proto_msg *m) {
    struct dqd *d = l->d;
    if (l->kind == LINK_UNKNOWN) {
        link_become(l, LINK_LEGACY);
    }
    enum probe_status st = m->status == PROTO_ST_OK   ? PROBE_OK
                           : m->status == PROTO_ST_FA ? PROBE_FA
                                                      : PROBE_TO;
    l->instances++;
    d->instances_total++;
    probes_record_hashed(&d->probes, m->name.p, m->name.n, m->name_hash, m->start_ns, m->end_ns,
                         st);
}

/* The splitter's fast path: an instance line, already parsed. */
static void on_instance(void *ctx, const struct proto_msg *m) {
    struct link *l = ctx;
    l->lines++;
    link_instance(l, m);
}

static void on_line(void *ctx, const char *line, size_t len, int err) {
    struct link *l = ctx;
    struct dqd *d = l->d;
    l->lines++;
    if (err) {
        link_count_error(l, err, line, len);
        return;
    }
    struct proto_msg m;
    int rc = proto_parse(line, len, l->read_now_ns, &m);
    if (rc) {
        link_count_error(l, rc, line, len);
        return;
    }
    switch (m.kind) {
    case PROTO_INSTANCE:
        link_instance(l, &m);
        break;
    case PROTO_PING:
        if (l->kind == LINK_UNKNOWN) {
            link_become(l, LINK_LEGACY);
        }
        break;
    case PROTO_HELLO:
        slice_copy(l->node, sizeof l->node, m.node);
        slice_copy(l->app, sizeof l->app, m.app);
        if (l->kind == LINK_OUTBOUND) {
            break; /* a listener that greets stays an outbound link (and keeps reconnecting) */
        }
        if (l->kind == LINK_UNKNOWN) {
            link_become(l, LINK_V2);
        } else {
            l->kind = LINK_V2;
            link_push_state(l); /* a hello again: the wrapper restarted its state */
        }
        break;
    case PROTO_ACK:
        l->acks++;
        for (int i = 0; i < 32; i++) {
            if (l->pending[i].id && strlen(l->pending[i].text) == m.command.n &&
                memcmp(l->pending[i].text, m.command.p, m.command.n) == 0) {
                store_command_ack(d->store, l->pending[i].id);
                l->pending[i].id = 0;
                break;
            }
        }
        break;
    case PROTO_DROP:
        l->drops += m.count;
        break;
    case PROTO_STATE:
        l->running = m.running;
        if (l->kind == LINK_V2) {
            reconcile_state(l, &m);
        }
        break;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    struct link *l = h->data;
    *buf = uv_buf_init(l->readbuf, (unsigned)l->readbuf_size);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    struct link *l = s->data;
    if (nread > 0) {
        /* one clock read per chunk, not per line (a vDSO call costs ~70 ns on a VM, a
         * quarter of the ingest time); the clock check allows a day of skew anyway */
        l->read_now_ns = dqd__now_ns();
        proto_splitter_feed_instances(&l->split, buf->base, (size_t)nread, l->read_now_ns,
                                      on_instance);
        return;
    }
    if (nread < 0) {
        size_t pending = proto_splitter_pending(&l->split);
        if (pending > 0) {
            /* a last line cut off by the close: not an instance, but not silently lost */
            link_count_error(l, PROTO_E_SYNTAX, l->splitbuf, pending);
        }
        if (nread != UV_EOF) {
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

static void on_connection(uv_stream_t *server, int status) {
    struct dqd *d = server->data;
    if (status < 0 || d->closing) {
        return;
    }
    struct link *l = link_new(d, LINK_UNKNOWN);
    if (!l || uv_tcp_init(d->loop, &l->tcp) != 0) {
        /* accept and drop so the listener does not spin on the pending connection */
        uv_tcp_t *tmp = malloc(sizeof *tmp);
        if (tmp && uv_tcp_init(d->loop, tmp) == 0) {
            (void)uv_accept(server, (uv_stream_t *)tmp);
            uv_close((uv_handle_t *)tmp, (uv_close_cb)free);
        } else {
            free(tmp);
        }
        d->connections_rejected++;
        if (l) {
            link_free_if_closed(l);
        }
        return;
    }
    l->tcp_open = 1;
    if (uv_accept(server, (uv_stream_t *)&l->tcp) != 0) {
        link_destroy(l);
        return;
    }
    d->connections_total++;
    l->connected = 1;
    peer_name(&l->tcp, l->peer, sizeof l->peer);
    uv_tcp_nodelay(&l->tcp, 1);
    proto_splitter_init(&l->split, l->splitbuf, sizeof l->splitbuf, on_line, l);
    if (uv_timer_init(d->loop, &l->timer) == 0) {
        l->timer_open = 1;
        uv_timer_start(&l->timer, on_hello_timeout, DQD_HELLO_WAIT_MS, 0);
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
    if (l->closing || l->d->closing) {
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
    LOG(LOG_INFO, "wrapper %s: connected to its command listener", l->peer);
    proto_splitter_init(&l->split, l->splitbuf, sizeof l->splitbuf, on_line, l);
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    link_push_state(l);
}

static void outbound_connect(struct link *l) {
    struct sockaddr_storage ss;
    if (l->closing || resolve(l->host, l->port, &ss) != DQ_OK) {
        return;
    }
    if (uv_tcp_init(l->d->loop, &l->tcp) != 0) {
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

static int outbound_add(struct dqd *d, const char *addr) {
    struct link *l = link_new(d, LINK_OUTBOUND);
    if (!l) {
        return dq_fail(DQ_ENOMEM, "no memory for a wrapper link");
    }
    int rc = settings_split_hostport(addr, l->host, sizeof l->host, &l->port);
    struct sockaddr_storage ss;
    if (!rc) {
        rc = resolve(l->host, l->port, &ss);
    }
    if (rc || uv_timer_init(d->loop, &l->timer) != 0) {
        rc = rc ? dq_fail(rc, "wrapper address: %s", dq_last_error()) : DQ_ENOMEM;
        link_destroy(l);
        return rc;
    }
    l->timer_open = 1;
    snprintf(l->peer, sizeof l->peer, "%s", addr);
    outbound_connect(l);
    return DQ_OK;
}

/* ---- probes and diagram ----------------------------------------------------------------- */

static void qta_to_json(const struct probe *p, char *buf, size_t cap) {
    size_t off = 0;
    off += (size_t)snprintf(buf + off, cap - off, "{\"points\":[");
    for (int j = 0; j < p->qta.n && off < cap; j++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s[%.17g,%.17g]", j ? "," : "", p->qta.p[j],
                                p->qta.t[j]);
    }
    if (off < cap) {
        snprintf(buf + off, cap - off, "],\"max_lost\":%.17g}", p->qta.max_lost);
    }
}

int dqd__save_probe(struct dqd *d, const struct probe *p) {
    char qta[2048];
    if (p->has_qta) {
        qta_to_json(p, qta, sizeof qta);
    }
    struct store_probe sp = {.name = p->name,
                             .dmax_ms = p->dmax_ms,
                             .bins = p->n,
                             .enabled = p->enabled,
                             .always_on = p->always_on,
                             .qta_json = p->has_qta ? qta : NULL};
    int rc = store_probe_upsert(d->store, &sp);
    if (rc) {
        d->store_errors++;
        LOG(LOG_ERROR, "store: saving probe %s: %s", p->name, dq_last_error());
    }
    return rc;
}

static const char *cmd_name(enum proto_cmd_kind k) {
    switch (k) {
    case PROTO_CMD_START_STUB:
        return "start_stub";
    case PROTO_CMD_STOP_STUB:
        return "stop_stub";
    case PROTO_CMD_SET_TIMEOUT:
        return "set_timeout";
    case PROTO_CMD_CLEAR_TIMEOUT:
        return "clear_timeout";
    default:
        return "sync";
    }
}

/* Sends cmd to every link that takes commands and records each attempt in the store. */
static int send_logged(struct dqd *d, const struct proto_cmd *cmd, const char *probe, int64_t hyp) {
    int sent = 0;
    char args[64] = "";
    if (cmd->kind == PROTO_CMD_SET_TIMEOUT) {
        snprintf(args, sizeof args, "{\"dmax_ms\":%.9g}", cmd->ms);
    }
    for (struct link *l = d->links; l; l = l->next) {
        if (!link_takes_commands(l)) {
            continue;
        }
        char text[PROTO_CMD_MAX];
        int n = proto_format_cmd(text, sizeof text, link_dialect(l), cmd);
        const char *status = "sent", *detail = NULL;
        if (n < 0) {
            status = "not_applied";
            detail = "a legacy wrapper has no clear_timeout: the probe stays enabled there";
        } else if (link_send(l, text, (size_t)n) != DQ_OK) {
            status = "failed";
            detail = "the wrapper link is not writable (closed, or not reading)";
        } else {
            sent++;
        }
        char wrapper[128];
        snprintf(wrapper, sizeof wrapper, "%" PRIu64 " %s", l->id, l->peer);
        struct store_command row = {.wrapper = wrapper,
                                    .command = cmd_name(cmd->kind),
                                    .probe = probe,
                                    .args_json = args[0] ? args : NULL,
                                    .hypothesis = hyp,
                                    .status = status,
                                    .detail = detail};
        int64_t id = 0;
        if (store_command_insert(d->store, &row, &id) != DQ_OK) {
            d->store_errors++;
        } else if (n > 0 && l->kind == LINK_V2) {
            /* remember it until the wrapper's ack;COMMAND comes back */
            int slot = l->pending_next++ % 32;
            size_t len = (size_t)n - 1; /* without the newline */
            memcpy(l->pending[slot].text, text, len);
            l->pending[slot].text[len] = '\0';
            l->pending[slot].id = id;
        }
    }
    return sent;
}

int dqd__set_enabled(struct dqd *d, struct probe *p, int enable, int64_t hyp) {
    if (p->enabled == enable) {
        return DQ_OK;
    }
    p->enabled = enable;
    struct proto_cmd cmd = {.kind = enable ? PROTO_CMD_SET_TIMEOUT : PROTO_CMD_CLEAR_TIMEOUT,
                            .name = {p->name, p->name_len},
                            .ms = p->dmax_ms};
    int sent = send_logged(d, &cmd, p->name, hyp);
    LOG(LOG_INFO, "probe %s %s (dMax %g ms), sent to %d wrapper(s)", p->name,
        enable ? "enabled" : "disabled", p->dmax_ms, sent);
    return dqd__save_probe(d, p);
}

/* Gives every diagram node its probe's grid. */
static void eval_sync_grids(struct dqd *d) {
    if (!d->eval) {
        return;
    }
    size_t np = dq_diagram_probe_count(d->diagram);
    for (size_t j = 0; j < np; j++) {
        int i = dq_diagram_probe(d->diagram, j);
        const struct dq_diagram_node *node = dq_diagram_node(d->diagram, i);
        struct probe *p = NULL;
        if (probes_get(&d->probes, node->name, strlen(node->name), &p) == DQ_OK) {
            p->in_diagram = 1;
            dq_eval_set_grid(d->eval, i, p->k, p->n);
        }
    }
}

int dqd__load_diagram(struct dqd *d, const char *text, size_t len, const char *path) {
    struct dq_diagram *g = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(text, len, &g, &err);
    if (rc) {
        return dq_fail(rc, "%d:%d: %s", err.line, err.column, err.text);
    }
    struct dq_eval *ev = NULL;
    rc = dq_eval_create(g, d->probes.default_k, d->probes.default_n, &ev);
    char *copy = malloc(len + 1);
    if (rc || !copy) {
        free(copy);
        dq_diagram_destroy(g);
        return rc ? rc : dq_fail(DQ_ENOMEM, "no memory for the diagram");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    for (size_t i = 0; i < d->probes.count; i++) {
        d->probes.probes[i]->in_diagram = 0;
    }
    dq_eval_destroy(d->eval);
    dq_diagram_destroy(d->diagram);
    free(d->diagram_text);
    d->diagram = g;
    d->eval = ev;
    d->diagram_text = copy;
    snprintf(d->diagram_path, sizeof d->diagram_path, "%s", path ? path : "");
    eval_sync_grids(d);
    LOG(LOG_INFO, "diagram loaded%s%s: %zu nodes, %zu probes", path ? " from " : "",
        path ? path : "", dq_diagram_node_count(g), dq_diagram_probe_count(g));
    return DQ_OK;
}

static int load_diagram_file(struct dqd *d, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return dq_fail(DQ_EIO, "cannot open diagram %s: %s", path, strerror(errno));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = DQ_OK;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (64u << 20)) {
                rc = dq_fail(DQ_EFULL, "diagram %s is larger than 64 MiB", path);
                break;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                rc = dq_fail(DQ_ENOMEM, "no memory to read %s", path);
                break;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (!rc && ferror(f)) {
        rc = dq_fail(DQ_EIO, "cannot read diagram %s", path);
    }
    fclose(f);
    if (!rc) {
        rc = dqd__load_diagram(d, buf ? buf : "", len, path);
        if (rc) {
            rc = dq_fail(rc, "%s:%s", path, dq_last_error());
        }
    }
    free(buf);
    return rc;
}

/* ---- windows ----------------------------------------------------------------------------- */

static void summary_row(struct dqd *d, const struct probe *p, const struct dq *q,
                        const struct probe_window *w, enum store_kind kind) {
    struct store_window row = {.probe = p->name, .kind = kind};
    row.start_ns = w->wid * d->probes.window_ns;
    row.end_ns = row.start_ns + d->probes.window_ns;
    if (kind == STORE_OBSERVED) {
        row.n_ok = w->ok + w->out;
        row.n_fa = w->fa;
        row.n_to = w->to;
        row.n = row.n_ok + row.n_fa + row.n_to;
    }
    row.mean = NAN;
    row.p50 = row.p95 = row.p99 = NAN;
    row.lost = NAN;
    if (q) {
        struct dq_moments m;
        if (dq_moments(q, &m) == DQ_OK) {
            row.mean = kind == STORE_OBSERVED && w->ok ? w->mean : m.mean;
        }
        double t;
        row.p50 = dq_quantile(q, 0.5, &t) == DQ_OK ? t : NAN;
        row.p95 = dq_quantile(q, 0.95, &t) == DQ_OK ? t : NAN;
        row.p99 = dq_quantile(q, 0.99, &t) == DQ_OK ? t : NAN;
        row.lost = dq_lost(q);
    }
    if (store_window_put(d->store, &row) != DQ_OK) {
        d->store_errors++;
    }
}

/* Ring entry of p for wid, creating an empty one when p had no instance in it. */
static struct probe_window *ring_entry(struct dqd *d, struct probe *p, int64_t wid) {
    if (probes_has_window(p, wid)) {
        return probes_ring_get(p, 0);
    }
    struct probe_window w = {.wid = wid};
    if (p->ring_len == p->ring_cap) {
        struct probe_window *old = &p->ring[p->ring_head];
        dq_destroy(old->observed);
        dq_destroy(old->calculated);
        p->ring_head = (p->ring_head + 1) % p->ring_cap;
        p->ring_len--;
    }
    (void)d;
    p->ring[(p->ring_head + p->ring_len) % p->ring_cap] = w;
    p->ring_len++;
    return probes_ring_get(p, 0);
}

/* Applies the store's retention every five minutes (outside the window transaction). */
static void prune_if_due(struct dqd *d) {
    int64_t now = dqd__now_ns();
    if (d->opt.retention_hours <= 0 || now - d->last_prune_ns < 300 * (int64_t)1000000000) {
        return;
    }
    d->last_prune_ns = now;
    int64_t deleted = 0;
    if (store_prune(d->store, &deleted) != DQ_OK) {
        d->store_errors++;
        LOG(LOG_ERROR, "store: pruning old windows: %s", dq_last_error());
    } else if (deleted > 0) {
        LOG(LOG_INFO, "store: pruned %" PRId64 " old rows", deleted);
    }
}

static void close_window(struct dqd *d, int64_t wid) {
    if (probes_close_window(&d->probes, wid) != DQ_OK) {
        LOG(LOG_ERROR, "window %" PRId64 ": %s", wid, dq_last_error());
    }
    /* calculated ΔQs through the diagram, from this window's observed ones */
    if (d->eval) {
        dq_eval_clear_observed(d->eval);
        size_t np = dq_diagram_probe_count(d->diagram);
        for (size_t j = 0; j < np; j++) {
            int i = dq_diagram_probe(d->diagram, j);
            const struct dq_diagram_node *node = dq_diagram_node(d->diagram, i);
            struct probe *p = probes_find(&d->probes, node->name, strlen(node->name));
            struct probe_window *w = p && probes_has_window(p, wid) ? probes_ring_get(p, 0) : NULL;
            if (w && w->observed) {
                dq_eval_set_observed(d->eval, i, w->observed);
            }
        }
        if (dq_eval_run(d->eval) == DQ_OK) {
            for (size_t j = 0; j < np; j++) {
                int i = dq_diagram_probe(d->diagram, j);
                const struct dq *c = dq_eval_calculated(d->eval, i);
                if (!c) {
                    continue;
                }
                const struct dq_diagram_node *node = dq_diagram_node(d->diagram, i);
                struct probe *p = NULL;
                if (probes_get(&d->probes, node->name, strlen(node->name), &p) != DQ_OK) {
                    continue;
                }
                struct probe_window *w = ring_entry(d, p, wid);
                dq_destroy(w->calculated);
                w->calculated = NULL;
                dq_clone(c, &w->calculated);
            }
        }
        dq_eval_clear_observed(d->eval);
    }
    /* one transaction: a summary row per probe and kind */
    if (store_begin(d->store) == DQ_OK) {
        dqd__adapt_window(d, wid);
        for (size_t i = 0; i < d->probes.count; i++) {
            struct probe *p = d->probes.probes[i];
            if (!probes_has_window(p, wid)) {
                continue;
            }
            struct probe_window *w = probes_ring_get(p, 0);
            if (w->observed) {
                summary_row(d, p, w->observed, w, STORE_OBSERVED);
            }
            if (w->calculated) {
                summary_row(d, p, w->calculated, w, STORE_CALCULATED);
            }
        }
        if (store_commit(d->store) != DQ_OK) {
            d->store_errors++;
            store_rollback(d->store);
        }
    } else {
        d->store_errors++;
    }
    d->windows_closed++;
    d->last_closed_wid = wid;
    prune_if_due(d);
}

static void schedule_window_timer(struct dqd *d);

static void on_window_timer(uv_timer_t *t) {
    struct dqd *d = t->data;
    int64_t now = dqd__now_ns();
    int64_t due = probes_window_of(&d->probes, now - d->probes.lag_ns); /* first not due */
    if (due - d->probes.next_close > d->probes.nslots) {
        /* the clock jumped ahead: only the open slots can hold data; close those and skip
         * the empty windows in between instead of closing them one by one */
        int64_t last = d->probes.next_close + d->probes.nslots;
        while (d->probes.next_close < last) {
            close_window(d, d->probes.next_close);
        }
        LOG(LOG_WARN, "the clock jumped %" PRId64 " windows ahead; skipped the empty ones",
            due - d->probes.next_close);
        d->probes.next_close = due;
    }
    while ((d->probes.next_close + 1) * d->probes.window_ns + d->probes.lag_ns <= now) {
        close_window(d, d->probes.next_close);
    }
    schedule_window_timer(d);
}

static void schedule_window_timer(struct dqd *d) {
    int64_t deadline = (d->probes.next_close + 1) * d->probes.window_ns + d->probes.lag_ns;
    int64_t wait_ns = deadline - dqd__now_ns();
    uint64_t wait_ms = wait_ns > 0 ? (uint64_t)(wait_ns / 1000000) + 1 : 0;
    uv_timer_start(&d->window_timer, on_window_timer, wait_ms, 0);
}

/* ---- create / shutdown --------------------------------------------------------------------- */

static int apply_stored_probe(void *ctx, const struct store_probe *sp) {
    struct dqd *d = ctx;
    struct probe *p = NULL;
    if (probes_get(&d->probes, sp->name, strlen(sp->name), &p) != DQ_OK) {
        return 0;
    }
    if (!isnan(sp->dmax_ms) && sp->dmax_ms > 0) {
        probes_set_dmax(&d->probes, p, sp->dmax_ms, sp->bins);
    }
    p->enabled = sp->enabled;
    p->always_on = sp->always_on;
    if (sp->qta_json) {
        p->has_qta = dqd__qta_from_json_text(sp->qta_json, &p->qta) == DQ_OK;
    }
    return 0;
}

static int apply_option_probes(struct dqd *d) {
    for (int i = 0; i < d->opt.n_probes; i++) {
        const struct dqd_probe_config *po = &d->opt.probes[i];
        struct probe *p = NULL;
        int rc = probes_get(&d->probes, po->name, strlen(po->name), &p);
        if (!rc && po->dmax_ms > 0) {
            rc = probes_set_dmax(&d->probes, p, po->dmax_ms, po->bins);
        }
        if (rc) {
            return dq_fail(rc, "probe %s: %s", po->name, dq_last_error());
        }
        if (po->enabled >= 0) {
            p->enabled = po->enabled;
            p->always_on = po->enabled;
        }
        if (po->has_qta) {
            p->has_qta = 1;
            p->qta = po->qta;
        }
        dqd__save_probe(d, p);
    }
    return DQ_OK;
}

static int listen_ingest(struct dqd *d) {
    struct sockaddr_storage ss;
    int rc = settings_split_hostport(d->opt.listen, d->listen_host, sizeof d->listen_host,
                                     &d->listen_port);
    if (rc || (rc = resolve(d->listen_host, d->listen_port, &ss))) {
        return dq_fail(rc, "--listen: %s", dq_last_error());
    }
    if (uv_tcp_init(d->loop, &d->ingest) != 0) {
        return dq_fail(DQ_ENET, "cannot create the ingest socket");
    }
    d->ingest_open = 1;
    d->ingest.data = d;
    int e = uv_tcp_bind(&d->ingest, (struct sockaddr *)&ss, 0);
    if (!e) {
        e = uv_listen((uv_stream_t *)&d->ingest, 511, on_connection);
    }
    if (e) {
        return dq_fail(DQ_ENET, "cannot listen on %s: %s", d->opt.listen, uv_strerror(e));
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (uv_tcp_getsockname(&d->ingest, (struct sockaddr *)&bound, &len) == 0) {
        d->listen_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    return DQ_OK;
}

static int listen_http(struct dqd *d) {
    int rc = settings_split_hostport(d->opt.http, d->http_host, sizeof d->http_host, &d->http_port);
    if (rc) {
        return dq_fail(rc, "--http: %s", dq_last_error());
    }
    struct http_limits lim;
    http_limits_default(&lim);
    rc = http_server_create(d->loop, &lim, dqd__http_handler, d, &d->http);
    if (!rc) {
        rc = http_server_listen(d->http, d->http_host, d->http_port);
        if (rc) {
            rc = dq_fail(rc, "cannot serve HTTP on %s: %s", d->opt.http, dq_last_error());
        }
    }
    if (!rc) {
        d->http_port = http_server_port(d->http);
    }
    return rc;
}

int dqd_create(uv_loop_t *loop, const struct dqd_config *o, struct dqd **out) {
    struct dqd *d = calloc(1, sizeof *d);
    if (!d) {
        return dq_fail(DQ_ENOMEM, "no memory for the daemon");
    }
    d->loop = loop;
    d->opt = *o;
    d->running = 1;
    d->started_ns = dqd__now_ns();
    int rc = probes_init(&d->probes, DQD_MAX_PROBES, o->window_ms * 1000000, o->lag_ms * 1000000,
                         o->ring, o->default_dmax_ms, o->default_bins, d->started_ns);
    if (!rc) {
        rc = store_open(o->db, &d->store);
        if (rc) {
            rc = dq_fail(rc, "store %s: %s", o->db, dq_last_error());
        }
    }
    if (!rc) {
        struct store_retention ret;
        store_retention_default(&ret);
        ret.window_max_age_ns = (int64_t)o->retention_hours * 3600 * 1000000000;
        rc = store_set_retention(d->store, &ret);
        d->last_prune_ns = d->started_ns;
    }
    if (!rc) {
        rc = store_probes_each(d->store, apply_stored_probe, d);
    }
    if (!rc) {
        rc = apply_option_probes(d);
    }
    if (!rc && o->diagram[0]) {
        rc = load_diagram_file(d, o->diagram);
    }
    if (!rc) {
        rc = webhooks_create(loop, o->webhooks, o->n_webhooks, o->webhook_queue, o->webhook_retries,
                             o->webhook_timeout_ms, &d->webhooks);
    }
    if (!rc) {
        rc = dqd__adapt_init(d);
    }
    if (!rc) {
        rc = listen_ingest(d);
    }
    if (!rc) {
        rc = listen_http(d);
    }
    if (!rc) {
        if (uv_timer_init(loop, &d->window_timer) == 0) {
            d->window_timer_open = 1;
            d->window_timer.data = d;
            schedule_window_timer(d);
        } else {
            rc = dq_fail(DQ_ENOMEM, "cannot create the window timer");
        }
    }
    for (int i = 0; !rc && i < o->n_wrappers; i++) {
        rc = outbound_add(d, o->wrappers[i]);
    }
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dq_last_error());
        dqd_shutdown(d, NULL, NULL);
        return dq_fail(rc, "%s", msg);
    }
    LOG(LOG_INFO,
        "dqd %s: ingest on %s:%d, HTTP on %s:%d, store %s, window %" PRId64 " ms, lag %" PRId64
        " ms",
        DQD_VERSION, d->listen_host, d->listen_port, d->http_host, d->http_port, o->db,
        o->window_ms, o->lag_ms);
    *out = d;
    return DQ_OK;
}

int dqd_ingest_port(const struct dqd *d) {
    return d->listen_port;
}

int dqd_http_port(const struct dqd *d) {
    return d->http_port;
}

static void on_http_closed(void *arg) {
    struct dqd *d = arg;
    d->pending_closes--;
    finish_if_done(d);
}

void dqd_shutdown(struct dqd *d, void (*done)(void *arg), void *arg) {
    if (d->closing) {
        return;
    }
    d->closing = 1;
    d->on_closed = done;
    d->on_closed_arg = arg;
    d->pending_closes++; /* held while closing starts */
    close_handle(d, (uv_handle_t *)&d->ingest, &d->ingest_open);
    close_handle(d, (uv_handle_t *)&d->window_timer, &d->window_timer_open);
    if (d->http) {
        d->pending_closes++;
        http_server_close(d->http, on_http_closed, d);
        d->http = NULL;
    }
    if (d->webhooks) {
        d->pending_closes++;
        webhooks_close(d->webhooks, on_http_closed, d);
        d->webhooks = NULL;
    }
    for (struct link *l = d->links, *next; l; l = next) {
        next = l->next;
        link_destroy(l);
    }
    d->pending_closes--;
    finish_if_done(d);
}
