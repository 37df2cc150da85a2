/*
 * dqd.c: the daemon, wired together. It owns nothing but the wiring: a clock (the wall
 * clock, or simulated time moved by a simulator's `clock;NS` lines), the store, the core,
 * the adaptive loop, the webhooks, the sources of instances (one array, ingest.h), the HTTP
 * server with the API and the dashboard, the live event hub, the timer that closes
 * windows, and the order in which all of it starts and stops.
 * Each piece is a module of its own under controller/ (docs/architecture.md).
 */
#include "dqd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "adapt.h"
#include "api.h"
#include "clock.h"
#include "core.h"
#include "events.h"
#include "http.h"
#include "ingest.h"
#include "log.h"
#include "otlp.h"
#include "store.h"
#include "webhook.h"

/* The sources of instances, in the order they are made and started, listed in the status,
 * the startup line and /metrics. A new source is its module and one line here. */
static const ingest_make_fn source_makers[] = {
    ingest_tcp_make, /* wrappers on --listen, links to --wrapper listeners */
    otlp_make,       /* OTLP/HTTP on --otlp (none without) */
};
#define N_SOURCES (sizeof source_makers / sizeof source_makers[0])

struct dqd {
    uv_loop_t *loop;
    struct dqd_config opt;
    struct clock clock;
    struct clock_manual manual; /* --clock sim: the time the simulator gave */
    struct store_lock *lock;    /* DB.lock: no second dqd on this database */
    int remove_db;              /* a failed start created the database: remove it when closed */
    struct store *store;
    struct core *core;
    struct adapt *adapt;
    struct webhooks *webhooks;
    struct events *events; /* live events (GET /api/v1/events) */
    /* the sources made, in the order of source_makers; an entry is NULL once it closes */
    struct ingest_source *sources[N_SOURCES];
    int n_sources;
    struct api *api;
    struct http_server *http;
    char http_host[64];
    int http_port;
    uv_timer_t window_timer;
    int window_timer_open;
    int64_t timer_due_ns; /* when the window timer was set to fire (core_next_wake) */
    uv_prepare_t waits;   /* before the loop waits for input: tells the core (stalls) */
    int waits_open;
    int ingest_cap, http_cap; /* connections, within the descriptor limit */
    int started;              /* dqd_create succeeded: a shutdown is a stop to record */
    int start_recorded;       /* dqd_started is in the store (simulated time: from the first
                                 clock line on) */
    /* shutdown */
    int closing, pending_closes;
    void (*on_closed)(void *);
    void *on_closed_arg;
};

/* ---- windows ---------------------------------------------------------------------------- */

/* One window closed: the adaptive loop decides on it, then the live clients hear of it. */
static void on_window(void *ctx, int64_t wid) {
    struct dqd *d = ctx;
    if (d->adapt) {
        adapt_window(d->adapt, wid);
    }
    if (d->api && events_wanted(d->events, EVENTS_WINDOW)) {
        events_publish(d->events, EVENTS_WINDOW, api_window_event(d->api, wid));
    }
}

/* Closes the windows due now. */
static void close_due(struct dqd *d) {
    core_close_due(d->core, clock_now(&d->clock), on_window, d);
    core_prune_if_due(d->core);
    log_report_suppressed(); /* repeated lines held back in the last second */
}

static void schedule_window_timer(struct dqd *d, int64_t now);

static void on_window_timer(uv_timer_t *t) {
    struct dqd *d = t->data;
    int64_t now = clock_now(&d->clock);
    if (core_timer_fired(d->core, now, d->timer_due_ns)) {
        /* dqd did not run: what its sources sent meanwhile is read before the windows due
         * close. 1 ms, not 0: a timer due now would run again before the loop polls */
        uv_timer_start(&d->window_timer, on_window_timer, 1, 0);
        return;
    }
    close_due(d);
    /* armed from the time this turn began, as libuv counts it: a stop in close_due (a
     * slow store) makes the next firing late, so what waits is read first */
    schedule_window_timer(d, now);
}

/* The loop is about to wait for input: a read much later than the window timer's due
 * time finds what was sent while dqd did not run (core_loop_waits). */
static void on_loop_waits(uv_prepare_t *h) {
    struct dqd *d = h->data;
    core_loop_waits(d->core, clock_now(&d->clock), d->timer_due_ns);
}

static void schedule_window_timer(struct dqd *d, int64_t now) {
    d->timer_due_ns = core_next_wake(d->core, now); /* a deadline, or the next edge */
    int64_t wait_ns = d->timer_due_ns - now;
    uint64_t wait_ms = wait_ns > 0 ? (uint64_t)(wait_ns / 1000000) + 1 : 0;
    uv_timer_start(&d->window_timer, on_window_timer, wait_ms, 0);
}

/* The run's start in the store's events (dqd_started), once. */
static void record_start(struct dqd *d) {
    d->start_recorded = 1;
    core_record_start(d->core, DQD_VERSION);
}

/* --clock sim: a simulator moved time forward. */
static void on_sim_clock(void *ctx, int64_t ns) {
    struct dqd *d = ctx;
    if (!d->closing && clock_manual_set(&d->manual, ns)) {
        if (d->started && !d->start_recorded) {
            /* in simulated time the run begins where the simulator's time does */
            core_set_start(d->core, ns);
            record_start(d);
        }
        close_due(d);
    }
}

/* ---- events ------------------------------------------------------------------------------ */

/* The adaptive loop's event sink: its events go to the live clients, and all but the
 * hypotheses to the webhooks subscribed to them. */
static void on_event(void *ctx, const char *event, json_t *payload) {
    struct dqd *d = ctx;
    int type = events_type_of(event);
    if (type >= 0 && payload) {
        events_publish(d->events, (enum events_type)type, json_incref(payload));
    }
    if (strcmp(event, "hypothesis") == 0) {
        json_decref(payload);
        return;
    }
    unsigned bit = strcmp(event, "trigger_fired") == 0     ? DQD_EVENT_TRIGGER_FIRED
                   : strcmp(event, "trigger_cleared") == 0 ? DQD_EVENT_TRIGGER_CLEARED
                                                           : DQD_EVENT_VERDICT;
    webhooks_emit(d->webhooks, bit, event, payload);
}

/* The core changed a probe (or loaded a diagram): the live clients hear of it. */
static void on_probe_change(void *ctx, const struct probe *p, const char *what) {
    struct dqd *d = ctx;
    enum events_type type = p ? EVENTS_PROBE : EVENTS_DIAGRAM;
    if (d->api && events_wanted(d->events, type)) {
        events_publish(d->events, type, api_probe_event(d->api, p, what));
    }
}

/* ---- shutdown ------------------------------------------------------------------------------ */

/* Closes the store, removes the database when a failed start created it, then lets go of
 * the lock (in that order: nobody else may open the file before it is gone). */
static void close_store(struct dqd *d) {
    store_close(d->store);
    d->store = NULL;
    if (d->remove_db && store_remove_files(d->opt.db) != DQ_OK) {
        LOG(LOG_WARN, "%s", dq_last_error());
    }
    store_unlock(d->lock);
    d->lock = NULL;
}

static void finish_if_done(struct dqd *d) {
    if (!d->closing || d->pending_closes > 0) {
        return;
    }
    api_destroy(d->api);
    events_destroy(d->events);
    adapt_destroy(d->adapt);
    core_destroy(d->core);
    close_store(d);
    void (*done)(void *) = d->on_closed;
    void *arg = d->on_closed_arg;
    free(d);
    dq_engine_cleanup();
    if (done) {
        done(arg);
    }
}

static void on_part_closed(void *arg) {
    struct dqd *d = arg;
    d->pending_closes--;
    finish_if_done(d);
}

static void on_handle_closed(uv_handle_t *h) {
    on_part_closed(h->data);
}

void dqd_shutdown(struct dqd *d, void (*done)(void *arg), void *arg) {
    if (d->closing) {
        return;
    }
    d->closing = 1;
    d->on_closed = done;
    d->on_closed_arg = arg;
    d->pending_closes++; /* held while closing starts */
    if (d->window_timer_open) {
        d->window_timer_open = 0;
        d->pending_closes++;
        uv_close((uv_handle_t *)&d->window_timer, on_handle_closed);
    }
    if (d->waits_open) {
        d->waits_open = 0;
        d->pending_closes++;
        uv_close((uv_handle_t *)&d->waits, on_handle_closed);
    }
    if (d->http) {
        d->pending_closes++;
        http_server_close(d->http, on_part_closed, d);
        d->http = NULL;
    }
    if (d->webhooks) {
        if (d->api) {
            api_set_webhooks(d->api, NULL); /* no /metrics from a closing sender */
        }
        d->pending_closes++;
        webhooks_close(d->webhooks, on_part_closed, d);
        d->webhooks = NULL;
    }
    if (d->events) {
        d->pending_closes++;
        events_close(d->events, on_part_closed, d); /* freed once the HTTP server closed */
    }
    if (d->core) {
        core_set_observer(d->core, NULL, NULL);
    }
    for (int i = d->n_sources; i-- > 0;) {
        struct ingest_source *s = d->sources[i];
        d->sources[i] = NULL; /* the API skips it from now on */
        core_remove_source(d->core, s);
        d->pending_closes++;
        ingest_close(s, on_part_closed, d);
    }
    if (d->started) {
        if (!d->start_recorded) {
            record_start(d); /* simulated time that never moved: a stop needs its start */
        }
        /* nothing is read any more: what was received is kept, in partial windows */
        struct adapt_stats as = {.pending_wid = -1};
        if (d->adapt) {
            adapt_get_stats(d->adapt, &as);
        }
        core_stop(d->core, clock_now(&d->clock), as.pending_wid, NULL);
    }
    d->pending_closes--;
    finish_if_done(d);
}

/* ---- create -------------------------------------------------------------------------------- */

static int64_t store_clock(void *ctx) {
    return clock_now(ctx);
}

static int configure_probes(struct dqd *d) {
    for (int i = 0; i < d->opt.n_probes; i++) {
        const struct dqd_probe_config *po = &d->opt.probes[i];
        int rc = core_configure_probe(d->core, po->name, po->dmax_ms, po->bins, po->enabled,
                                      po->has_qta ? &po->qta : NULL, po->servers);
        if (rc) {
            return rc;
        }
        struct probe *p = probes_find(core_probes(d->core), po->name, strlen(po->name));
        if (p && po->auto_range >= 0) {
            core_set_auto_range(d->core, p, po->auto_range);
        }
        if (p && po->mfa[0] && (rc = core_bind_probe(d->core, p, po->mfa)) != DQ_OK) {
            return rc;
        }
    }
    return DQ_OK;
}

static int create_adapt(struct dqd *d) {
    const struct dqd_config *o = &d->opt;
    struct adapt_env env = {
        .core = d->core, .store = d->store, .clock = &d->clock, .emit = on_event, .emit_ctx = d};
    struct adapt_options ao = {.search = &o->search,
                               .min_instances = o->min_instances,
                               .min_windows = o->min_windows,
                               .max_enabled_probes = o->max_enabled_probes,
                               .max_instances_per_second = o->max_instances_per_second,
                               .deescalate_windows = o->deescalate_windows,
                               .investigation_windows = o->investigation_windows,
                               .snapshot_windows = o->snapshot_windows};
    int rc = adapt_create(&env, &ao, &d->adapt);
    if (!rc) {
        /* auto-ranging leaves alone the probes an investigation uses */
        core_set_range_veto(d->core, adapt_probe_in_use, d->adapt);
    }
    for (int i = 0; !rc && i < o->n_triggers; i++) {
        const struct dqd_trigger_config *t = &o->triggers[i];
        rc = adapt_set_trigger(d->adapt, t->probe, t->kind, t->threshold, t->fire_after,
                               t->clear_after, 1);
        if (rc) {
            rc = dq_fail(rc, "trigger %s on %s: %s", t->kind, t->probe, dq_last_error());
        }
    }
    return rc;
}

/*
 * Splits the descriptors dqd may open between its connections: the soft limit is raised to
 * the hard one, DQD_FD_RESERVE stay for the store, stdio, the listeners and webhooks, the
 * API gets its connections and their reserve first (so /-/healthy and /metrics answer
 * whatever the wrappers do), the ingest port what is left (at most max_ingest_connections).
 */
static void descriptor_budget(struct dqd *d) {
    struct rlimit rl;
    rlim_t avail = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = want;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        avail = rl.rlim_cur;
    }
    struct http_limits lim;
    http_limits_default(&lim);
    long budget = avail > DQD_FD_RESERVE + 32 ? (long)(avail - DQD_FD_RESERVE) : 32;
    long http = (long)lim.max_connections;
    if (http > budget / 2) {
        http = budget / 2;
    }
    long ingest = budget - http - (long)lim.reserve_connections;
    if (ingest > d->opt.max_ingest_connections) {
        ingest = d->opt.max_ingest_connections;
    }
    d->http_cap = (int)(http > 8 ? http : 8);
    d->ingest_cap = (int)(ingest > 1 ? ingest : 1);
    if (d->ingest_cap < d->opt.max_ingest_connections || d->http_cap < (int)lim.max_connections) {
        LOG(LOG_WARN,
            "only %lu file descriptors (ulimit -n): at most %d ingest and %d HTTP connections "
            "(raise the limit, e.g. LimitNOFILE= in the systemd unit)",
            (unsigned long)avail, d->ingest_cap, d->http_cap);
    }
}

/* Makes, registers and starts every configured source, in the order of source_makers. */
static int start_sources(struct dqd *d) {
    struct ingest_env env = {
        .loop = d->loop,
        .core = d->core,
        .cfg = &d->opt,
        .max_connections = d->ingest_cap,
        .on_clock = d->opt.clock == DQD_CLOCK_SIM ? on_sim_clock : NULL,
        .clock_ctx = d,
    };
    for (size_t i = 0; i < N_SOURCES; i++) {
        struct ingest_source *s = NULL;
        int rc = source_makers[i](&env, &s);
        if (rc) {
            return rc;
        }
        if (!s) {
            continue; /* left off by the configuration */
        }
        d->sources[d->n_sources++] = s;
        if (s->ops->core && (rc = core_add_source(d->core, s->ops->core, s)) != DQ_OK) {
            return rc;
        }
        if ((rc = ingest_start(s)) != DQ_OK) {
            return rc;
        }
    }
    return DQ_OK;
}

/* The source called name, or NULL. */
static struct ingest_source *source_named(const struct dqd *d, const char *name) {
    for (int i = 0; i < d->n_sources; i++) {
        if (d->sources[i] && strcmp(d->sources[i]->ops->name, name) == 0) {
            return d->sources[i];
        }
    }
    return NULL;
}

/* The lag windows close after: with --otlp, the longer of lag and otlp_lag (spans come in
 * batches, seconds after they ended). */
static int64_t close_lag_ms(const struct dqd_config *o) {
    return o->otlp[0] && o->otlp_lag_ms > o->lag_ms ? o->otlp_lag_ms : o->lag_ms;
}

static int start_http(struct dqd *d) {
    struct api_env env = {.core = d->core,
                          .adapt = d->adapt,
                          .store = d->store,
                          .events = d->events,
                          .sources = d->sources,
                          .n_sources = d->n_sources};
    struct api_options ao = {.version = DQD_VERSION,
                             .db = d->opt.db,
                             .api_token = d->opt.token,
                             .allowed_hosts = d->opt.allowed_hosts,
                             .public_reads = d->opt.public_reads,
                             .clock = d->opt.clock == DQD_CLOCK_SIM ? "sim" : "wall",
                             .window_ms = d->opt.window_ms,
                             .lag_ms = close_lag_ms(&d->opt),
                             .trace_url = d->opt.trace_url};
    int rc = api_create(&env, &ao, &d->api);
    if (!rc) {
        rc = settings_split_hostport(d->opt.http, d->http_host, sizeof d->http_host, &d->http_port);
        if (rc) {
            rc = dq_fail(rc, "--http: %s", dq_last_error());
        }
    }
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_connections = (unsigned)d->http_cap;
    if (!rc) {
        rc = http_server_create(d->loop, &lim, api_handle, d->api, &d->http);
    }
    if (!rc) {
        rc = http_server_listen(d->http, d->http_host, d->http_port);
        if (rc) {
            rc = dq_fail(rc, "cannot serve HTTP on %s: %s", d->opt.http, dq_last_error());
        }
    }
    if (!rc) {
        core_set_observer(d->core, on_probe_change, d);
        d->http_port = http_server_port(d->http);
        api_set_server(d->api, d->http);
        api_set_webhooks(d->api, d->webhooks);
        const struct ingest_source *tcp = source_named(d, "tcp"); /* the ingest port */
        api_set_addresses(d->api, ingest_host(tcp), ingest_port(tcp), d->http_host, d->http_port);
    }
    return rc;
}

/* "dqd 0.1.0: ingest on 127.0.0.1:7400, HTTP on 127.0.0.1:7401, OTLP on 127.0.0.1:4318,
 * store …": the first source, HTTP, then the other sources. */
static void log_started(const struct dqd *d) {
    const struct dqd_config *o = &d->opt;
    char first[DQD_HOSTPORT_MAX + 32] = "", others[N_SOURCES * sizeof first] = "";
    for (int i = 0, len = 0; i < d->n_sources; i++) {
        const struct ingest_source *s = d->sources[i];
        if (i == 0) {
            snprintf(first, sizeof first, "%s on %s:%d", s->ops->what, ingest_host(s),
                     ingest_port(s));
        } else {
            len += snprintf(others + len, sizeof others - (size_t)len, ", %s on %s:%d",
                            s->ops->what, ingest_host(s), ingest_port(s));
        }
    }
    LOG(LOG_INFO,
        "dqd %s: %s, HTTP on %s:%d%s, store %s, window %" PRId64 " ms, lag %" PRId64 " ms%s",
        DQD_VERSION, first, d->http_host, d->http_port, others, o->db, o->window_ms,
        close_lag_ms(o), o->clock == DQD_CLOCK_SIM ? ", simulated time (--clock sim)" : "");
}

int dqd_create(uv_loop_t *loop, const struct dqd_config *o, struct dqd **out) {
    struct dqd *d = calloc(1, sizeof *d);
    if (!d) {
        return dq_fail(DQ_ENOMEM, "no memory for the daemon");
    }
    d->loop = loop;
    d->opt = *o;
    if (o->clock == DQD_CLOCK_SIM) {
        clock_init_manual(&d->clock, &d->manual, clock_wall_ns());
    } else {
        clock_init_wall(&d->clock);
    }
    /* the lock first: a second dqd leaves the database of the first alone */
    int rc = store_lock(o->db, &d->lock);
    if (rc == DQ_EBUSY) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dq_last_error());
        free(d);
        return dq_fail(rc, "%s", msg);
    }
    if (!rc) {
        int existed = store_file_exists(o->db);
        rc = store_open(o->db, &d->store);
        d->remove_db = !existed; /* until the start succeeds */
    }
    if (rc) {
        rc = dq_fail(rc, "store %s: %s", o->db, dq_last_error());
    } else {
        store_set_clock(d->store, store_clock, &d->clock);
    }
    if (!rc) {
        struct core_options co = {.max_probes = DQD_MAX_PROBES,
                                  .window_ns = o->window_ms * 1000000,
                                  .lag_ns = close_lag_ms(o) * 1000000,
                                  /* the line protocol keeps its own allowance (a lag
                                     of 0 as 1 ns: 0 would mean none) */
                                  .line_lag_ns = o->lag_ms > 0 ? o->lag_ms * 1000000 : 1,
                                  .ring = o->ring,
                                  .default_dmax_ms = o->default_dmax_ms,
                                  .default_bins = o->default_bins,
                                  .retention_hours = o->retention_hours,
                                  .dq_retention_hours = o->dq_retention_hours,
                                  .exemplars_slowest = o->exemplars_slowest,
                                  .exemplars_failed = o->exemplars_failed,
                                  .auto_range = o->auto_range,
                                  .auto_range_min_ms = o->auto_range_min_ms,
                                  .new_names_per_second = o->new_names_per_second,
                                  .new_names_burst = o->new_names_burst,
                                  .names = {.all_per_second = o->new_names_global_per_second,
                                            .all_burst = o->new_names_global_burst,
                                            .max_observed = (size_t)o->max_observed_probes,
                                            .idle_windows = o->idle_probe_windows},
                                  .auto_range_max_ms = o->auto_range_max_ms};
        rc = core_create(&co, d->store, &d->clock, &d->core);
        if (rc) {
            rc = dq_fail(rc, "store %s: %s", o->db, dq_last_error());
        }
    }
    if (!rc) {
        rc = configure_probes(d);
    }
    if (!rc && o->diagram[0]) {
        rc = core_load_diagram_file(d->core, o->diagram); /* --diagram wins over the store */
    } else if (!rc) {
        rc = core_restore_diagram(d->core); /* the last one loaded, e.g. through the API */
        rc = rc == DQ_ENOTFOUND ? DQ_OK : rc;
    }
    if (!rc) {
        rc = webhooks_create(loop, o->webhooks, o->n_webhooks, o->webhook_queue, o->webhook_retries,
                             o->webhook_timeout_ms, &d->webhooks);
    }
    if (!rc) {
        rc = events_create(loop, NULL, &d->events);
    }
    if (!rc) {
        rc = create_adapt(d);
    }
    if (!rc) {
        descriptor_budget(d);
        rc = start_sources(d);
    }
    if (!rc) {
        rc = start_http(d);
    }
    if (!rc && o->clock == DQD_CLOCK_WALL) {
        if (uv_timer_init(loop, &d->window_timer) == 0) {
            d->window_timer_open = 1;
            d->window_timer.data = d;
            schedule_window_timer(d, clock_now(&d->clock));
        } else {
            rc = dq_fail(DQ_ENOMEM, "cannot create the window timer");
        }
        if (!rc && uv_prepare_init(loop, &d->waits) == 0) {
            d->waits_open = 1;
            d->waits.data = d;
            uv_prepare_start(&d->waits, on_loop_waits);
        } else if (!rc) {
            rc = dq_fail(DQ_ENOMEM, "cannot create the loop's prepare handle");
        }
    }
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dq_last_error());
        if (d->core) {
            dqd_shutdown(d, NULL, NULL);
        } else {
            close_store(d);
            free(d);
        }
        return dq_fail(rc, "%s", msg);
    }
    d->remove_db = 0;
    d->started = 1;
    if (o->clock != DQD_CLOCK_SIM) {
        record_start(d); /* simulated time: at the first clock line */
    }
    log_started(d);
    *out = d;
    return DQ_OK;
}

int dqd_ingest_port(const struct dqd *d) {
    return ingest_port(source_named(d, "tcp"));
}

int dqd_otlp_port(const struct dqd *d) {
    return ingest_port(source_named(d, "otlp"));
}

int dqd_http_port(const struct dqd *d) {
    return d->http_port;
}
