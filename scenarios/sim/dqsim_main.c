/*
 * dqsim_main.c: dqsim, a simulated system for dqd's end-to-end tests. It connects to
 * dqd's ingest port like our wrapper (wrapper protocol v2), generates requests in real
 * time through the model of sim.h, and sends the outcome instances of the probes dqd
 * enabled. Faults are switched on stdin or by --fault; every event is one flushed line
 * on stdout so that a test can follow. See scenarios/sim/README.md.
 *
 * One libuv loop: a tick timer (every --batch-ms) generates the requests that arrived
 * since the last tick and sends the instances that have ended, in one write; a pending
 * heap holds instances until their end (or their dMax) has passed on the wall clock,
 * as a real wrapper would only know them then.
 *
 * With --clock sim (against a dqd started with --clock sim) time is simulated instead:
 * each step moves the simulated clock on by --batch-ms, sends what ended by then and
 * `clock;NS`, and waits for dqd's `tick;NS` (dqd has closed the windows due and sent
 * their commands first) before the next step. The run is as fast as the two programs
 * are, and the same for a seed whatever the machine's load; --duration, --fault-after
 * and --fault-for are simulated seconds.
 *
 * Leaves may be bound to queueing stations (--station, sim.h): requests are simulated in
 * the order they arrive, on dqsim's clock, so the stations' queues are that clock's.
 * Connection control for tests: `disconnect`/`reconnect` take the data link down and back
 * (instances meanwhile are dropped and announced with drop;N), `mute`/`unmute` withhold
 * instance lines on a live link; --clock-link opens a second connection that carries the
 * clock exchange while the data link is down, so simulated time goes on without it.
 */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "dq_error.h"
#include "wire.h"

#include "dqsim.h"

static void event(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* One event line on stdout, flushed at once: tests read it through a pipe. */
static void event(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The time the simulated system lives in: the wall clock, or the simulated one. */
static int64_t now_ns(const struct app *a) {
    return a->sim_clock ? a->sim_now : wall_ns();
}

/* ---- pending heap (min on due) ------------------------------------------------------- */

static int heap_push(struct app *a, const struct pending *p) {
    if (a->heap_n >= HEAP_CAP) {
        return -1;
    }
    size_t i = a->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (a->heap[parent].due <= p->due) {
            break;
        }
        a->heap[i] = a->heap[parent];
        i = parent;
    }
    a->heap[i] = *p;
    return 0;
}

static void heap_pop(struct app *a, struct pending *top) {
    *top = a->heap[0];
    struct pending last = a->heap[--a->heap_n];
    size_t i = 0, n = a->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && a->heap[c + 1].due < a->heap[c].due) {
            c++;
        }
        if (a->heap[c].due >= last.due) {
            break;
        }
        a->heap[i] = a->heap[c];
        i = c;
    }
    if (n > 0) {
        a->heap[i] = last;
    }
}

/* ---- links to dqd -------------------------------------------------------------------- */

static void start_connect(struct link *l);
static void on_sim_tick(struct app *a, int64_t ns);
static void on_sim_step(uv_timer_t *t);
static void sim_link_lost(struct app *a, struct link *l);

static void on_written(uv_write_t *req, int status) {
    (void)status; /* a failed write shows up as a read error, which reconnects */
    free(req->data);
}

/* Queues len bytes on link l; 0, or −1 when the link is down or backed up. */
static int link_write(struct link *l, const char *data, size_t len) {
    if (!l->connected) {
        return -1;
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&l->tcp) > WRITE_QUEUE_CAP) {
        return -1;
    }
    struct write_req *w = malloc(sizeof *w + len);
    if (!w) {
        return -1;
    }
    memcpy(w->data, data, len);
    w->req.data = w;
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &buf, 1, on_written) != 0) {
        free(w);
        return -1;
    }
    l->last_tx_ms = uv_now(l->app->loop);
    return 0;
}

static void send_state(struct app *a) {
    char buf[SIM_STATE_MAX + 1];
    int n = sim_ctl_state(&a->ctl, buf, sizeof buf);
    if (n > 0) {
        link_write(&a->data, buf, (size_t)n);
    }
}

/* `drop;N` for the instances lost since the last one; not while muted (a muted wrapper
 * says nothing about its data). */
static void send_drops(struct app *a) {
    if (a->drop_unreported == 0 || !a->data.connected || a->muted) {
        return;
    }
    char buf[48];
    int n = snprintf(buf, sizeof buf, "drop;%" PRIu64 "\n", a->drop_unreported);
    if (link_write(&a->data, buf, (size_t)n) == 0) {
        a->drop_unreported = 0;
    }
}

static void on_retry(uv_timer_t *t) {
    start_connect(t->data);
}

/* Schedules the next connection attempt with backoff. */
static void link_retry_later(struct link *l) {
    uint64_t delay = l->backoff_ms;
    l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
    uv_timer_start(&l->retry, on_retry, delay, 0);
}

static void on_tcp_closed(uv_handle_t *h) {
    struct link *l = h->data;
    l->tcp_open = 0;
    if (l->app->quitting || l->kept_down) {
        return;
    }
    link_retry_later(l);
}

static void link_close(struct link *l, const char *why) {
    struct app *a = l->app;
    if (!l->tcp_open || uv_is_closing((uv_handle_t *)&l->tcp)) {
        return;
    }
    int was = l->connected;
    l->connected = 0;
    if (was) {
        event("%sdisconnected %s:%s (%s)", l->what, a->host, a->port, why);
    }
    uv_close((uv_handle_t *)&l->tcp, on_tcp_closed);
    if (was && a->sim_clock) {
        sim_link_lost(a, l);
    }
}

/* A line from dqd: a command to apply, acknowledge and report, or a tick. Both links take
 * commands (dqd sends its enabled set to every v2 connection); applying one twice changes
 * nothing. */
static void on_command(void *ctx, const char *line, size_t len, int err) {
    struct link *l = ctx;
    struct app *a = l->app;
    if (err) {
        event("%sbad-command (line over %d bytes)", l->what, WIRE_MAX_LINE);
        return;
    }
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    int64_t tick;
    if (a->sim_clock && wire_parse_tick(line, len, &tick) == 0) {
        on_sim_tick(a, tick);
        return;
    }
    char reply[SIM_STATE_MAX + WIRE_MAX_LINE + 16];
    int n = sim_ctl_apply(&a->ctl, line, len, reply, sizeof reply);
    int shown = len > 200 ? 200 : (int)len;
    if (n < 0) {
        event("%sbad-command %.*s", l->what, shown, line);
        return;
    }
    a->commands++;
    link_write(l, reply, (size_t)n);
    event("command %.*s%s", shown, line, l->is_clock ? " (clock-link)" : "");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    struct link *l = h->data;
    *buf = uv_buf_init(l->readbuf, sizeof l->readbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    struct link *l = s->data;
    if (nread > 0) {
        wire_splitter_feed(&l->split, buf->base, (size_t)nread);
    } else if (nread < 0) {
        link_close(l, nread == UV_EOF ? "closed by dqd" : uv_strerror((int)nread));
    }
}

static void on_connect(uv_connect_t *req, int status) {
    struct link *l = req->data;
    struct app *a = l->app;
    if (a->quitting || status == UV_ECANCELED || uv_is_closing((uv_handle_t *)&l->tcp)) {
        return; /* closed meanwhile (quit, disconnect) */
    }
    if (status < 0) {
        event("%sconnect-failed %s:%s (%s); retry in %" PRIu64 " ms", l->what, a->host, a->port,
              uv_strerror(status), l->backoff_ms);
        uv_close((uv_handle_t *)&l->tcp, on_tcp_closed);
        return;
    }
    l->connected = 1;
    l->connects++;
    l->backoff_ms = BACKOFF_MIN_MS;
    wire_splitter_init(&l->split, l->splitbuf, sizeof l->splitbuf, on_command, l);
    uv_tcp_nodelay(&l->tcp, 1);
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    char hello[2 * WIRE_MAX_LABEL + 40];
    int n = snprintf(hello, sizeof hello, "h:2;node:%s%s;app:%s\n", a->node_label,
                     l->is_clock ? "-clock" : "", a->app_label);
    link_write(l, hello, (size_t)n);
    if (!l->is_clock) {
        send_state(a);
        send_drops(a);
    }
    event("%sconnected %s:%s", l->what, a->host, a->port);
    if (a->sim_clock && !a->tick_wait) {
        uv_timer_start(&a->tick, on_sim_step, 0, 0);
    }
}

static void start_connect(struct link *l) {
    struct app *a = l->app;
    if (a->quitting || l->tcp_open || l->kept_down) {
        return;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    uv_getaddrinfo_t gai;
    int rc = uv_getaddrinfo(a->loop, &gai, NULL, a->host, a->port, &hints);
    if (rc == 0) {
        uv_tcp_init(a->loop, &l->tcp);
        l->tcp.data = l;
        l->tcp_open = 1;
        l->connect_req.data = l;
        rc = uv_tcp_connect(&l->connect_req, &l->tcp, gai.addrinfo->ai_addr, on_connect);
        uv_freeaddrinfo(gai.addrinfo);
        if (rc != 0) {
            event("%sconnect-failed %s:%s (%s); retry in %" PRIu64 " ms", l->what, a->host, a->port,
                  uv_strerror(rc), l->backoff_ms);
            uv_close((uv_handle_t *)&l->tcp, on_tcp_closed);
        }
        return;
    }
    event("%sconnect-failed %s:%s (%s); retry in %" PRIu64 " ms", l->what, a->host, a->port,
          uv_strerror(rc), l->backoff_ms);
    link_retry_later(l);
}

/* `disconnect`: the data link closes and stays down until `reconnect`. */
static void data_disconnect(struct app *a) {
    struct link *l = &a->data;
    if (l->kept_down) {
        event("error already disconnected (reconnect brings the link back)");
        return;
    }
    l->kept_down = 1;
    uv_timer_stop(&l->retry);
    int was = l->connected;
    link_close(l, "disconnect command"); /* also a connection attempt in flight */
    if (!was) {
        event("disconnected %s:%s (disconnect command; was not connected)", a->host, a->port);
    }
}

/* `reconnect`: back to connecting (at once, then with the usual backoff). */
static void data_reconnect(struct app *a) {
    struct link *l = &a->data;
    if (!l->kept_down) {
        event("error reconnect: the link was not disconnected");
        return;
    }
    l->kept_down = 0;
    l->backoff_ms = BACKOFF_MIN_MS;
    if (!l->tcp_open) {
        start_connect(l);
    } /* else still closing: on_tcp_closed schedules the attempt */
}

/* ---- traffic ------------------------------------------------------------------------- */

/* Simulates one request that starts at `start` and queues the instances dqd would get. */
static void simulate(struct app *a, int64_t start) {
    struct sim_result res;
    if (sim_request(a->model, &a->service, start, a->scratch, a->scratch_cap, &res) != DQ_OK) {
        return; /* cannot happen: scratch holds sim_model_max_instances() */
    }
    a->requests++;
    a->requests_failed += res.failed != 0;
    if (!res.failed && res.end_ns > a->root_max_ns) {
        a->beyond_max += a->fault_seen != 0;
        a->beyond_twice += a->fault_seen && res.end_ns > 2 * a->root_max_ns;
        a->root_max_ns = a->fault_seen ? a->root_max_ns : res.end_ns;
    }
    for (size_t k = 0; k < res.count; k++) {
        const struct sim_instance *in = &a->scratch[k];
        if (!sim_ctl_reports(&a->ctl, in->node)) {
            continue;
        }
        int64_t dmax_ns = (int64_t)(a->ctl.dmax_ms[in->node] * 1e6);
        int64_t dur = in->end_ns - in->begin_ns;
        struct pending p = {.begin = start + in->begin_ns,
                            .end = start + in->end_ns,
                            .node = in->node,
                            .failed = in->failed,
                            .request = a->trace_ids ? a->requests : 0};
        p.due = p.begin + (dur > dmax_ns ? dmax_ns : dur);
        if (heap_push(a, &p) != 0) {
            a->dropped++;
            a->drop_unreported++;
        }
    }
}

static void flush_out(struct app *a) {
    if (a->out_len == 0) {
        return;
    }
    if (link_write(&a->data, a->out, a->out_len) != 0) {
        /* count the lines lost */
        for (size_t i = 0; i < a->out_len; i++) {
            if (a->out[i] == '\n') {
                a->dropped++;
                a->drop_unreported++;
            }
        }
    }
    a->out_len = 0;
}

/* Simulates the requests that arrived by `now` (Poisson at the current rate). */
static void generate(struct app *a, int64_t now) {
    if (a->rate > 0) {
        if (now - a->next_arrival > 1000000000LL) {
            a->next_arrival = now; /* the loop stalled: do not replay a burst */
        }
        double mean_gap_ns = 1e9 / a->rate;
        while (a->next_arrival <= now) {
            simulate(a, a->next_arrival);
            int64_t gap = (int64_t)sim_rng_exp(&a->arrivals, mean_gap_ns);
            a->next_arrival += gap > 0 ? gap : 1;
        }
    } else {
        a->next_arrival = now;
    }
}

/*
 * `rate N`: takes effect now. The arrivals up to now come at the old rate; the gap to
 * the next one, already drawn at the old rate, is rescaled to the new one (what is left
 * of an exponential gap is exponential, so this is the Poisson stream of the new rate from
 * now on, without a draw); from a rate of 0 the next gap is drawn.
 */
static void set_rate(struct app *a, double rate) {
    int64_t now = now_ns(a);
    generate(a, now);
    if (rate > 0 && a->rate > 0 && a->next_arrival > now) {
        a->next_arrival = now + (int64_t)((double)(a->next_arrival - now) * (a->rate / rate));
    } else if (rate > 0) {
        int64_t gap = (int64_t)sim_rng_exp(&a->arrivals, 1e9 / rate);
        a->next_arrival = now + (gap > 0 ? gap : 1);
    }
    a->rate = rate;
}

/* Generates the requests that arrived by now and sends the instances that ended. */
static void send_due(struct app *a) {
    int64_t now = now_ns(a);
    generate(a, now);
    while (a->heap_n > 0 && a->heap[0].due <= now) {
        struct pending p;
        heap_pop(a, &p);
        if (!sim_ctl_reports(&a->ctl, p.node)) {
            continue; /* disabled or stopped meanwhile */
        }
        if (!a->data.connected || a->muted) {
            a->dropped++;
            a->drop_unreported++;
            continue;
        }
        if (OUT_CAP - a->out_len < SIM_LINE_MAX) {
            flush_out(a);
        }
        int n = sim_ctl_format_instance(&a->ctl, p.node, p.begin, p.end, p.failed, p.request,
                                        a->out + a->out_len, OUT_CAP - a->out_len);
        if (n > 0) {
            const char *st = strstr(a->out + a->out_len, ";s:") + 3; /* snprintf ended it */
            a->sent_to += memcmp(st, "to", 2) == 0;
            a->sent_fa += memcmp(st, "fa", 2) == 0;
            a->out_len += (size_t)n;
            a->sent++;
        }
    }
    send_drops(a);
    flush_out(a);
}

static void on_tick(uv_timer_t *t) {
    struct app *a = t->data;
    send_due(a);
    if (a->data.connected && uv_now(a->loop) - a->data.last_tx_ms >= PING_MS) {
        link_write(&a->data, "ping\n", 5);
    }
}

/* ---- faults and operator commands ---------------------------------------------------- */

static void apply_fault(struct app *a, const struct sim_user_cmd *c) {
    if (sim_fault_set(a->model, c->name, c->fault, c->value) != DQ_OK) {
        event("error %s", dq_last_error());
        return;
    }
    a->fault_seen = 1;
    event("fault %s %s %g on", c->name, sim_fault_name(c->fault), c->value);
}

static void on_fault_timer(uv_timer_t *t);

static void faults_start(struct app *a) {
    for (size_t i = 0; i < a->n_faults; i++) {
        apply_fault(a, &a->faults[i]);
    }
    a->faults_on = 1;
    if (a->fault_for_s > 0 && !a->sim_clock) {
        uv_timer_start(&a->fault_timer, on_fault_timer, (uint64_t)(a->fault_for_s * 1000), 0);
    }
}

static void faults_stop(struct app *a) {
    for (size_t i = 0; i < a->n_faults; i++) {
        if (sim_fault_clear(a->model, a->faults[i].name) == DQ_OK) {
            event("fault %s off", a->faults[i].name);
        }
    }
    a->faults_on = 2; /* done */
}

static void on_fault_timer(uv_timer_t *t) {
    struct app *a = t->data;
    if (!a->faults_on) {
        faults_start(a);
        return;
    }
    faults_stop(a);
}

static void app_quit(struct app *a, const char *why);

/* ---- simulated time ------------------------------------------------------------------ */

static void on_sim_step(uv_timer_t *t);

/* The --fault set switches on and off at simulated times. */
static void sim_faults(struct app *a) {
    if (a->n_faults == 0) {
        return;
    }
    double elapsed_s = (double)(a->sim_now - a->sim_start) * 1e-9;
    if (a->faults_on == 0 && elapsed_s >= a->fault_after_s) {
        faults_start(a);
    }
    if (a->faults_on == 1 && a->fault_for_s > 0 && elapsed_s >= a->fault_after_s + a->fault_for_s) {
        faults_stop(a);
    }
}

/*
 * The link that carries the next clock line: the data link while it is up, so that dqd
 * reads a step's instances before the step's clock line (two sockets keep no order
 * between them); else, with --clock-link, the clock link, once the data link has been up
 * (simulated time does not run ahead before the first connection). NULL: time stands.
 */
static struct link *clock_carrier(struct app *a) {
    if (a->data.connected) {
        return &a->data;
    }
    if (a->clock_link && a->clk.connected && a->data.connects > 0) {
        return &a->clk;
    }
    return NULL;
}

/* Sends `clock;NS` for the current simulated time on l and waits for its tick. */
static void send_clock(struct app *a, struct link *l) {
    char line[48];
    int n = snprintf(line, sizeof line, "clock;%" PRId64 "\n", a->sim_now);
    if (link_write(l, line, (size_t)n) == 0) {
        a->tick_wait = a->sim_now;
        a->tick_link = l;
        uv_timer_start(&a->fault_timer, on_sim_step, 10000, 0); /* the guard, below */
    }
}

/* Link l went down in simulated time: a clock line it carried is sent again on the other
 * link (dqd's clock never goes back, so a line it did read costs nothing), or, with none,
 * the steps wait for a connection. */
static void sim_link_lost(struct app *a, struct link *l) {
    if (!a->tick_wait || a->tick_link != l) {
        return;
    }
    struct link *c = clock_carrier(a);
    if (c) {
        int64_t keep = a->sim_now;
        a->sim_now = a->tick_wait;
        send_clock(a, c);
        a->sim_now = keep;
    } else {
        a->tick_wait = 0;
        a->tick_link = NULL;
        uv_timer_stop(&a->fault_timer);
    }
}

/* One step: the clock moves on by --batch-ms, what ended is sent, then `clock;NS`; the
 * next step waits for dqd's `tick;NS`. */
static void sim_step(struct app *a) {
    struct link *carrier = clock_carrier(a);
    if (a->quitting || !carrier || a->tick_wait) {
        return;
    }
    if (a->duration_s > 0 && (double)(a->sim_now - a->sim_start) * 1e-9 >= a->duration_s) {
        app_quit(a, "duration reached");
        return;
    }
    if (a->hold && a->sim_now >= a->hold_until) {
        if (!a->held) {
            a->held = 1;
            event("held at %.3f", (double)(a->sim_now - a->sim_start) * 1e-9);
        }
        return;
    }
    a->sim_now += (int64_t)(a->batch_ms * 1e6);
    sim_faults(a);
    send_due(a);
    carrier = clock_carrier(a); /* sending can find the data link gone */
    if (carrier) {
        send_clock(a, carrier);
    }
}

/* dqd answered the clock line: the windows due are closed, their commands applied. */
static void on_sim_tick(struct app *a, int64_t ns) {
    if (ns != a->tick_wait) {
        event("bad-command tick;%" PRId64 " (waiting for %" PRId64 ")", ns, a->tick_wait);
        return;
    }
    a->tick_wait = 0;
    a->tick_link = NULL;
    a->sim_steps++;
    uv_timer_stop(&a->fault_timer);
    uv_timer_start(&a->tick, on_sim_step, 0, 0); /* next step from the loop, not from here */
}

/* The step timer, and the guard: a dqd that never answers is on the wall clock. */
static void on_sim_step(uv_timer_t *t) {
    struct app *a = t->data;
    if (t == &a->fault_timer) {
        if (a->tick_wait && !a->quitting) {
            event("error dqd did not answer clock;%" PRId64 " in 10 s: is it running with "
                  "--clock sim?",
                  a->tick_wait);
            a->exit_code = 1;
            app_quit(a, "no tick from dqd");
        }
        return;
    }
    sim_step(a);
}

/* Seconds of dqsim's clock (simulated or wall) since it started. */
static double since_start_s(const struct app *a, int64_t t) {
    return (double)(t - a->sim_start) * 1e-9;
}

static void print_status(struct app *a) {
    char sim[64] = "", clk[32] = "", st[160] = "";
    if (a->sim_clock) {
        snprintf(sim, sizeof sim, " sim_seconds=%.3f steps=%" PRIu64, since_start_s(a, a->sim_now),
                 a->sim_steps);
    }
    if (a->clock_link) {
        snprintf(clk, sizeof clk, " clock_link=%d", a->clk.connected);
    }
    size_t ns = sim_model_station_count(a->model);
    if (ns > 0) {
        /* totals over the stations, now (the requests that arrived by now simulated) */
        int64_t now = now_ns(a);
        if (!a->quitting) {
            generate(a, now);
        }
        int64_t busy = 0;
        uint64_t served = 0, rejected = 0;
        for (size_t k = 0; k < ns; k++) {
            struct sim_station_stats ss;
            if (sim_station_stats(a->model, (int)k, now, &ss) == DQ_OK) {
                busy += ss.busy_ns;
                served += ss.served;
                rejected += ss.rejected;
            }
        }
        snprintf(st, sizeof st, " stations=%zu served=%" PRIu64 " rejected=%" PRIu64 " busy_s=%.6f",
                 ns, served, rejected, (double)busy * 1e-9);
    }
    event("status requests=%" PRIu64 " failed=%" PRIu64 " sent=%" PRIu64 " to=%" PRIu64
          " fa=%" PRIu64 " dropped=%" PRIu64 " enabled=%zu running=%d connected=%d "
          "muted=%d disconnected=%d rate=%g commands=%" PRIu64
          " root_max_ms=%.3f beyond_max=%" PRIu64 " beyond_twice=%" PRIu64 "%s%s%s",
          a->requests, a->requests_failed, a->sent, a->sent_to, a->sent_fa, a->dropped,
          sim_ctl_enabled_count(&a->ctl), a->ctl.running, a->data.connected, a->muted,
          a->data.kept_down, a->rate, a->commands, (double)a->root_max_ns * 1e-6, a->beyond_max,
          a->beyond_twice, sim, clk, st);
}

/* `stations`: one line per station, utilisation over the interval since the previous
 * `stations` (or the start), in the time dqsim lives in (simulated or wall). */
static void print_stations(struct app *a) {
    size_t ns = sim_model_station_count(a->model);
    if (ns == 0) {
        event("error no stations (--station LEAF:SERVERS:DIST)");
        return;
    }
    int64_t now = now_ns(a);
    generate(a, now); /* every request that arrived by now counts */
    for (size_t k = 0; k < ns; k++) {
        struct sim_station_info info;
        struct sim_station_stats cur;
        if (sim_station_info(a->model, (int)k, &info) != DQ_OK ||
            sim_station_stats(a->model, (int)k, now, &cur) != DQ_OK) {
            event("error %s", dq_last_error());
            continue;
        }
        struct sim_station_stats *mark = &a->station_mark[k];
        event("station %s servers=%d util=%.4f busy_s=%.6f served=%" PRIu64 " rejected=%" PRIu64
              " queue=%" PRIu64 " since=%.3f",
              info.name, info.servers, sim_station_utilisation(mark, &cur),
              (double)cur.busy_ns * 1e-9, cur.served, cur.rejected, cur.in_station,
              since_start_s(a, mark->t_ns));
        *mark = cur;
    }
}

static void user_line(struct app *a, const char *line, size_t len) {
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) {
        i++;
    }
    if (i == len || line[i] == '#') {
        return; /* blank lines and comments */
    }
    struct sim_user_cmd c;
    if (sim_user_parse(line, len, &c) != 0) {
        event("error %s", dq_last_error());
        return;
    }
    switch (c.kind) {
    case SIM_USER_FAULT:
        apply_fault(a, &c);
        break;
    case SIM_USER_CLEAR:
        if (sim_fault_clear(a->model, c.name) != DQ_OK) {
            event("error %s", dq_last_error());
        } else {
            event("fault %s off", c.name);
        }
        break;
    case SIM_USER_CLEAR_ALL:
        sim_fault_clear_all(a->model);
        event("fault all off");
        break;
    case SIM_USER_RATE:
        set_rate(a, c.value);
        event("rate %g", a->rate);
        break;
    case SIM_USER_STATIONS:
        print_stations(a);
        break;
    case SIM_USER_DISCONNECT:
        data_disconnect(a);
        break;
    case SIM_USER_RECONNECT:
        data_reconnect(a);
        break;
    case SIM_USER_MUTE:
    case SIM_USER_UNMUTE:
        a->muted = c.kind == SIM_USER_MUTE;
        event("%s", a->muted ? "muted" : "unmuted");
        if (!a->muted) {
            send_drops(a);
        }
        break;
    case SIM_USER_STATUS:
        print_status(a);
        break;
    case SIM_USER_QUIT:
        app_quit(a, "quit");
        break;
    case SIM_USER_RUN:
        if (!a->sim_clock || !a->hold) {
            event("error run needs --clock sim --hold");
            break;
        }
        a->hold_until =
            (a->hold_until > a->sim_now ? a->hold_until : a->sim_now) + (int64_t)(c.value * 1e9);
        a->held = 0;
        if (!a->tick_wait) {
            uv_timer_start(&a->tick, on_sim_step, 0, 0);
        }
        break;
    }
}

static void on_stdin_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    struct app *a = h->data;
    *buf = uv_buf_init(a->in_readbuf, sizeof a->in_readbuf);
}

static void stdin_feed(struct app *a, const char *data, size_t n) {
    for (size_t i = 0; i < n && !a->quitting; i++) {
        char ch = data[i];
        if (ch == '\n') {
            if (!a->in_discard) {
                user_line(a, a->inbuf, a->in_len);
            } else {
                event("error command line over %d bytes", STDIN_LINE_MAX);
            }
            a->in_len = 0;
            a->in_discard = 0;
        } else if (a->in_len < STDIN_LINE_MAX) {
            a->inbuf[a->in_len++] = ch;
        } else {
            a->in_discard = 1;
        }
    }
}

static void stdin_eof(struct app *a) {
    if (a->in_len > 0 && !a->in_discard) {
        user_line(a, a->inbuf, a->in_len);
        a->in_len = 0;
    }
    if (a->duration_s > 0) {
        event("stdin closed; running until --duration");
    } else {
        app_quit(a, "stdin closed");
    }
}

static void on_stdin_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    struct app *a = s->data;
    if (nread > 0) {
        stdin_feed(a, buf->base, (size_t)nread);
    } else if (nread < 0) {
        uv_read_stop(s);
        uv_close((uv_handle_t *)s, NULL);
        a->in_open = 0;
        stdin_eof(a);
    }
}

/* Reads stdin through libuv when it is a pipe or terminal; a file (or /dev/null) is read
 * at once, since files cannot be polled. */
static void stdin_start(struct app *a) {
    uv_handle_type t = uv_guess_handle(0);
    int rc = -1;
    if (t == UV_NAMED_PIPE) {
        rc = uv_pipe_init(a->loop, &a->in.pipe, 0);
        if (rc == 0) {
            rc = uv_pipe_open(&a->in.pipe, 0);
            if (rc != 0) {
                uv_close((uv_handle_t *)&a->in.pipe, NULL);
            }
        }
    } else if (t == UV_TTY) {
        rc = uv_tty_init(a->loop, &a->in.tty, 0, 1);
    } else if (t == UV_FILE) {
        char buf[4096];
        ssize_t n;
        while ((n = read(0, buf, sizeof buf)) > 0 && !a->quitting) {
            stdin_feed(a, buf, (size_t)n);
        }
        stdin_eof(a);
        return;
    }
    if (rc != 0) {
        stdin_eof(a);
        return;
    }
    a->in.pipe.data = a;
    a->in_open = 1;
    uv_read_start((uv_stream_t *)&a->in.pipe, on_stdin_alloc, on_stdin_read);
}

/* ---- lifetime ------------------------------------------------------------------------ */

static void close_if_open(uv_handle_t *h, void *arg) {
    struct app *a = arg;
    if (a->shutting && (h == (uv_handle_t *)&a->data.tcp || h == (uv_handle_t *)&a->stop_timer)) {
        return; /* closed by on_shutdown or its guard */
    }
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static void finish_shutdown(struct app *a) {
    if (!uv_is_closing((uv_handle_t *)&a->data.tcp)) {
        uv_close((uv_handle_t *)&a->data.tcp, NULL);
    }
    if (!uv_is_closing((uv_handle_t *)&a->stop_timer)) {
        uv_close((uv_handle_t *)&a->stop_timer, NULL);
    }
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    (void)status;
    finish_shutdown(req->data);
}

/* dqd is not reading: do not wait for the socket to drain for ever. */
static void on_shutdown_guard(uv_timer_t *t) {
    finish_shutdown(t->data);
}

static void app_quit(struct app *a, const char *why) {
    if (a->quitting) {
        return;
    }
    a->quit_reason = why;
    if (a->data.connected) {
        /* send what has ended so far, then let the socket drain before closing it */
        send_due(a);
        a->shutdown_req.data = a;
        if (uv_shutdown(&a->shutdown_req, (uv_stream_t *)&a->data.tcp, on_shutdown) == 0) {
            a->shutting = 1;
            uv_timer_start(&a->stop_timer, on_shutdown_guard, 1000, 0);
        }
    }
    a->quitting = 1;
    a->data.connected = 0;
    a->clk.connected = 0;
    a->in_open = 0;
    uv_walk(a->loop, close_if_open, a);
}

static void on_signal(uv_signal_t *s, int signum) {
    struct app *a = s->data;
    if (signum == SIGPIPE) {
        return;
    }
    app_quit(a, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_stop_timer(uv_timer_t *t) {
    app_quit(t->data, "duration reached");
}

/* ---- offline modes and start ---------------------------------------------------------- */

static int read_file(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "dqsim: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= ((size_t)64 << 20)) {
                fprintf(stderr, "dqsim: %s: larger than 64 MiB\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "dqsim: %s: out of memory\n", path);
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

static void list_probes(const struct app *a) {
    const struct dq_diagram *d = a->diagram;
    size_t leaves = 0;
    for (size_t j = 0; j < dq_diagram_probe_count(d); j++) {
        int i = dq_diagram_probe(d, j);
        struct sim_node_info info;
        sim_model_node(a->model, i, &info);
        if (info.kind == DQ_NODE_OUTCOME && info.station >= 0) {
            leaves++;
            struct sim_station_info si;
            char dist[64];
            sim_station_info(a->model, info.station, &si);
            sim_dist_format(&si.dist, dist, sizeof dist);
            printf("%s outcome station=%s servers=%d service=%s K=%u\n", info.name, si.name,
                   si.servers, dist, (unsigned)si.capacity);
        } else if (info.kind == DQ_NODE_OUTCOME) {
            leaves++;
            printf("%s outcome mean_ms=%.4f shift_ms=%.4f\n", info.name, info.mean_ms,
                   info.shift_ms);
        } else {
            printf("%s %s\n", info.name, dq_node_kind_name(info.kind));
        }
    }
    size_t ns = sim_model_station_count(a->model);
    char stations[32] = "";
    if (ns > 0) {
        snprintf(stations, sizeof stations, " stations=%zu", ns);
    }
    printf("probes=%zu leaves=%zu root=%s%s\n", dq_diagram_probe_count(d), leaves,
           dq_diagram_node(d, sim_model_root(a->model))->name, stations);
}

/* --dry-run: N requests on a virtual clock from a fixed epoch, lines to stdout in request
 * order; the output depends on the options only. */
static void dry_run(struct app *a, uint64_t n) {
    int64_t t = DRY_RUN_EPOCH_NS;
    double mean_gap_ns = a->rate > 0 ? 1e9 / a->rate : 0;
    char line[SIM_LINE_MAX];
    for (uint64_t r = 0; r < n; r++) {
        struct sim_result res;
        if (sim_request(a->model, &a->service, t, a->scratch, a->scratch_cap, &res) != DQ_OK) {
            break;
        }
        a->requests++;
        a->requests_failed += res.failed != 0;
        for (size_t k = 0; k < res.count; k++) {
            const struct sim_instance *in = &a->scratch[k];
            if (!sim_ctl_reports(&a->ctl, in->node)) {
                continue;
            }
            int len = sim_ctl_format_instance(&a->ctl, in->node, t + in->begin_ns, t + in->end_ns,
                                              in->failed, a->trace_ids ? a->requests : 0, line,
                                              sizeof line);
            if (len > 0) {
                fwrite(line, 1, (size_t)len, stdout);
                a->sent++;
            }
        }
        t += (int64_t)sim_rng_exp(&a->arrivals, mean_gap_ns) + 1;
    }
    fprintf(stderr, "dqsim dry-run requests=%" PRIu64 " failed=%" PRIu64 " lines=%" PRIu64 "\n",
            a->requests, a->requests_failed, a->sent);
}

/* The model from --diagram with --root, the enabled set, the stations, and the faults'
 * names and kinds checked (they are switched on later). Returns DQ_OK, or an error with
 * its message in dq_last_error(), or 2 when the file cannot be read or parsed (printed). */
static int setup_model(struct app *a, const struct cli *cli) {
    char *text = NULL;
    size_t len = 0;
    if (read_file(cli->diagram, &text, &len) != 0) {
        return 2;
    }
    struct dq_diagram_error derr;
    int rc = dq_diagram_parse(text, len, &a->diagram, &derr);
    free(text);
    if (rc) {
        fprintf(stderr, "dqsim: %s:%d:%d: %s\n", cli->diagram, derr.line, derr.column, derr.text);
        return 2;
    }
    rc = sim_model_create(a->diagram, &cli->opt, &a->model);
    if (rc == DQ_OK && cli->root) {
        int i = dq_diagram_find(a->diagram, cli->root);
        rc = i < 0 ? dq_fail(DQ_ENOTFOUND, "--root %s: no such probe", cli->root)
                   : sim_model_set_root(a->model, i);
    }
    if (rc == DQ_OK) {
        rc = sim_ctl_init(&a->ctl, a->model);
    }
    if (rc == DQ_OK && cli->enable) {
        rc = sim_ctl_enable_list(&a->ctl, cli->enable, DEFAULT_ENABLE_MS);
    }
    for (size_t i = 0; rc == DQ_OK && i < a->n_stations; i++) {
        rc = sim_station_add(a->model, &a->stations[i]);
        rc = rc < 0 ? dq_fail(rc, "--station: %s", dq_last_error()) : DQ_OK;
    }
    for (size_t i = 0; rc == DQ_OK && i < a->n_faults; i++) {
        /* check names and kinds now; they are switched on later */
        struct sim_node_info info;
        int node = dq_diagram_find(a->diagram, a->faults[i].name);
        if (node < 0) {
            rc = dq_fail(DQ_ENOTFOUND, "--fault: no probe `%s`", a->faults[i].name);
        } else if (a->faults[i].fault == SIM_FAULT_ERRATIC &&
                   (sim_model_node(a->model, node, &info), info.kind != DQ_NODE_OUTCOME)) {
            rc = dq_fail(DQ_EINVAL, "--fault: erratic applies to outcomes; `%s` is a %s",
                         a->faults[i].name, dq_node_kind_name(info.kind));
        } else if (a->faults[i].fault == SIM_FAULT_ERRATIC && info.station >= 0) {
            /* the service time must have an exponential part: try it, then take it back */
            rc = sim_fault_set(a->model, a->faults[i].name, SIM_FAULT_ERRATIC, a->faults[i].value);
            sim_fault_clear(a->model, a->faults[i].name);
            rc = rc ? dq_fail(rc, "--fault: %s", dq_last_error()) : DQ_OK;
        }
    }
    return rc;
}

/* Timers, signals, links and stdin on the loop, then the run until it quits. Returns the
 * exit code. */
static int run_network(struct app *a, const struct cli *cli) {
    size_t ns = sim_model_station_count(a->model);
    a->loop = uv_default_loop();
    uv_timer_init(a->loop, &a->tick);
    struct link *links[2] = {&a->data, &a->clk};
    for (int k = 0; k < 2; k++) {
        links[k]->app = a;
        links[k]->is_clock = k == 1;
        links[k]->what = k == 1 ? "clock-link " : "";
        links[k]->backoff_ms = BACKOFF_MIN_MS;
        uv_timer_init(a->loop, &links[k]->retry);
        links[k]->retry.data = links[k];
    }
    uv_timer_init(a->loop, &a->stop_timer);
    uv_timer_init(a->loop, &a->fault_timer);
    uv_signal_init(a->loop, &a->sigterm);
    uv_signal_init(a->loop, &a->sigint);
    uv_signal_init(a->loop, &a->sigpipe);
    a->tick.data = a->stop_timer.data = a->fault_timer.data = a;
    a->sigterm.data = a->sigint.data = a->sigpipe.data = a;
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sigpipe, on_signal, SIGPIPE);
    a->sim_now = a->sim_start = a->sim_clock && a->start_at_ns > 0 ? a->start_at_ns : wall_ns();
    a->next_arrival = a->sim_now;
    for (size_t k = 0; k < ns; k++) {
        sim_station_stats(a->model, (int)k, a->sim_start, &a->station_mark[k]);
    }
    char stations[32] = "";
    if (ns > 0) {
        snprintf(stations, sizeof stations, " stations=%zu", ns);
    }
    event("dqsim ready probes=%zu enabled=%zu root=%s seed=%llu rate=%g dqd=%s:%s%s",
          dq_diagram_probe_count(a->diagram), sim_ctl_enabled_count(&a->ctl),
          dq_diagram_node(a->diagram, sim_model_root(a->model))->name,
          (unsigned long long)cli->opt.seed, a->rate, a->host, a->port, stations);
    uint64_t every = (uint64_t)(a->batch_ms + 0.5);
    if (!a->sim_clock) {
        uv_timer_start(&a->tick, on_tick, every, every);
    }
    if (a->duration_s > 0 && !a->sim_clock) {
        uv_timer_start(&a->stop_timer, on_stop_timer, (uint64_t)(a->duration_s * 1000), 0);
    }
    if (a->n_faults > 0 && !a->sim_clock) {
        if (a->fault_after_s > 0) {
            uv_timer_start(&a->fault_timer, on_fault_timer, (uint64_t)(a->fault_after_s * 1000), 0);
        } else {
            faults_start(a);
        }
    }
    start_connect(&a->data);
    if (a->clock_link) {
        start_connect(&a->clk);
    }
    stdin_start(a);
    uv_run(a->loop, UV_RUN_DEFAULT);
    print_status(a);
    event("exit %s", a->quit_reason ? a->quit_reason : "loop ended");
    int code = uv_loop_close(a->loop) != 0 ? 1 : 0;
    return a->exit_code ? a->exit_code : code;
}

int main(int argc, char **argv) {
    static struct app app; /* large (buffers): not on the stack */
    struct app *a = &app;
    struct cli cli = {0};
    sim_options_default(&cli.opt);
    a->rate = 200;
    a->batch_ms = 5;
    snprintf(a->app_label, sizeof a->app_label, "dqsim");
    int pr = dqsim_parse_args(argc, argv, &cli, a);
    if (pr != 0) {
        dqsim_usage(pr > 0 ? stdout : stderr);
        return pr > 0 ? 0 : 2;
    }
    if (!a->node_label[0]) {
        char host[128] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(a->node_label, sizeof a->node_label, "dqsim@%s", host);
    }
    int rc = setup_model(a, &cli);
    if (rc != DQ_OK) {
        if (rc != 2) {
            fprintf(stderr, "dqsim: %s\n", dq_last_error());
        }
        sim_ctl_release(&a->ctl);
        sim_model_destroy(a->model);
        dq_diagram_destroy(a->diagram);
        return 2;
    }
    a->scratch_cap = sim_model_max_instances(a->model);
    a->scratch = malloc((a->scratch_cap ? a->scratch_cap : 1) * sizeof *a->scratch);
    sim_rng_seed(&a->service, cli.opt.seed);
    sim_rng_seed(&a->arrivals, cli.opt.seed ^ 0xa5a5a5a5a5a5a5a5ULL);
    int code = 0;
    if (!a->scratch) {
        fprintf(stderr, "dqsim: out of memory\n");
        code = 2;
    } else if (cli.list) {
        list_probes(a);
    } else if (cli.dry_run > 0) {
        for (size_t i = 0; i < a->n_faults; i++) {
            sim_fault_set(a->model, a->faults[i].name, a->faults[i].fault, a->faults[i].value);
        }
        dry_run(a, (uint64_t)cli.dry_run);
    } else {
        a->heap = malloc(HEAP_CAP * sizeof *a->heap);
        a->out = malloc(OUT_CAP);
        size_t ns = sim_model_station_count(a->model);
        a->station_mark = calloc(ns ? ns : 1, sizeof *a->station_mark);
        if (!a->heap || !a->out || !a->station_mark) {
            fprintf(stderr, "dqsim: out of memory\n");
            code = 2;
        } else {
            code = run_network(a, &cli);
        }
    }
    free(a->heap);
    free(a->out);
    free(a->station_mark);
    free(a->scratch);
    sim_ctl_release(&a->ctl);
    sim_model_destroy(a->model);
    dq_diagram_destroy(a->diagram);
    return code;
}
