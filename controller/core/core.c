/*
 * core.c: struct core (see core.h, second part): the probe table with the diagram and
 * its evaluator, window closing and summaries, the registered sources, and every change
 * to a probe, recorded in the store before its command is handed to the sources.
 *
 * Workload: core_close_due runs once per window (about once a second) and touches every
 * probe; changes are rare (a person, or the adaptive loop enabling a few probes). The
 * ingest hot path does not come here: sources record instances straight into the probe
 * table (core_probes) and add their counts once per read.
 */
#include "core_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq_error.h"
#include "dq_strbuf.h"
#include "log.h"

#define PRUNE_EVERY_NS (300 * (int64_t)1000000000)
#define DIAGRAM_FROM_MAX 1200 /* "from PATH" and the like, for the log */

void core_set_observer(struct core *c, core_observer_fn fn, void *ctx) {
    c->observer = fn;
    c->observer_ctx = ctx;
}

void core__tell(struct core *c, const struct probe *p, const char *what) {
    if (c->observer) {
        c->observer(c->observer_ctx, p, what);
    }
}

/* ---- create / destroy --------------------------------------------------------------------- */

/* p's quiet windows from their JSON in the store (anything malformed is left out). */
static void quiet_from_json(struct probe *p, const char *text) {
    json_error_t err;
    json_t *a = text ? json_loads(text, 0, &err) : NULL;
    size_t i;
    json_t *e;
    p->n_quiet = 0;
    json_array_foreach(a, i, e) {
        if (p->n_quiet >= PROBES_QUIET) {
            break;
        }
        json_t *wid = json_object_get(e, "wid"), *n = json_object_get(e, "n");
        double rate = json_number_value(json_object_get(e, "rate"));
        double mean = json_number_value(json_object_get(e, "mean"));
        double busy = json_number_value(json_object_get(e, "busy"));
        if (!json_is_integer(wid) || !json_is_integer(n) || !(rate > 0) || !(mean >= 0) ||
            !(busy >= 0)) {
            continue;
        }
        p->quiet[p->n_quiet++] = (struct probe_quiet){.wid = json_integer_value(wid),
                                                      .rate = rate,
                                                      .n = (uint64_t)json_integer_value(n),
                                                      .mean = mean,
                                                      .busy = busy};
    }
    json_decref(a);
}

json_t *core_quiet_json(const struct probe *p) {
    json_t *a = json_array();
    for (int i = 0; i < p->n_quiet; i++) {
        const struct probe_quiet *q = &p->quiet[i];
        json_array_append_new(a, json_pack("{s:I,s:f,s:I,s:f,s:f}", "wid", (json_int_t)q->wid,
                                           "rate", q->rate, "n", (json_int_t)q->n, "mean", q->mean,
                                           "busy", q->busy));
    }
    return a;
}

int core_set_servers(struct core *c, struct probe *p, int servers) {
    if (servers < 0 || servers > 100000) {
        return dq_fail(DQ_ERANGE, "probe %s: servers %d not in [1, 100000] (0: not set)", p->name,
                       servers);
    }
    int old = p->servers;
    p->servers = servers;
    int rc = core_save_probe(c, p);
    if (rc == DQ_OK && store_probe_set_servers(c->store, p->name, servers) != DQ_OK) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: saving probe %s: %s", p->name, dq_last_error());
        rc = DQ_ESTORE;
    }
    if (rc) { /* the store did not take it: not made */
        p->servers = old;
        return DQ_ESTORE;
    }
    return DQ_OK;
}

/* Where and when p was last heard from before this run: its row's last instance and
 * origin (written at the stop), or after a stop that was not clean the end of its newest
 * window. */
static void restore_last(struct core *c, struct probe *p, const struct store_probe *sp) {
    p->last_end_ns = sp->last_instance_ns;
    struct store_window w;
    if (p->last_end_ns <= 0 &&
        store_window_latest(c->store, p->name, STORE_OBSERVED, &w) == DQ_OK) {
        p->last_end_ns = w.end_ns;
    }
    json_error_t err;
    json_t *o = sp->last_origin ? json_loads(sp->last_origin, 0, &err) : NULL;
    const char *label = json_string_value(json_object_get(o, "label"));
    if (label &&
        probes_restore_origin(&c->probes, p, label, json_string_value(json_object_get(o, "node")),
                              json_string_value(json_object_get(o, "app")),
                              json_string_value(json_object_get(o, "kind"))) != DQ_OK) {
        LOG(LOG_WARN, "probe %s: its last connection (%s) is not kept: %s", p->name, label,
            dq_last_error());
    }
    json_decref(o);
}

static int apply_stored_probe(void *ctx, const struct store_probe *sp) {
    struct core *c = ctx;
    struct probe *p = NULL;
    if (!sp->enabled && !sp->always_on && !(sp->dmax_ms > 0) && !sp->qta_json && sp->servers <= 0) {
        /* a name only seen on the wire (an older dqd stored those): not loaded, so junk
         * names sent once cannot fill the table for good */
        return 0;
    }
    if (probes_get(&c->probes, sp->name, strlen(sp->name), &p) != DQ_OK) {
        return 0;
    }
    if (!isnan(sp->dmax_ms) && sp->dmax_ms > 0) {
        probes_set_dmax(&c->probes, p, sp->dmax_ms, sp->bins);
    }
    p->enabled = sp->enabled;
    p->always_on = sp->always_on;
    p->chosen = sp->enabled;
    if (sp->qta_json) {
        p->has_qta = core_qta_from_json_text(sp->qta_json, &p->qta) == DQ_OK;
    }
    p->servers = sp->servers > 0 ? sp->servers : 0;
    quiet_from_json(p, sp->quiet_json);
    restore_last(c, p, sp);
    return 0;
}

static int find_downtime(struct core *c);
static void set_downtime_end(struct core *c);

int core_create(const struct core_options *o, struct store *store, const struct clock *clock,
                struct core **out) {
    struct core *c = calloc(1, sizeof *c);
    if (!c) {
        return dq_fail(DQ_ENOMEM, "no memory for the core");
    }
    c->store = store;
    c->clock = *clock;
    c->running = 1;
    c->retention_hours = o->retention_hours;
    c->started_ns = clock_now(&c->clock);
    c->last_prune_ns = c->started_ns;
    c->last_closed_wid = -1;
    int rc = probes_init(&c->probes, o->max_probes, o->window_ns, o->lag_ns, o->ring,
                         o->default_dmax_ms, o->default_bins, c->started_ns);
    if (!rc) {
        if (o->line_lag_ns > 0) {
            probes_set_line_lag(&c->probes, o->line_lag_ns);
        }
        probes_set_name_limit(&c->probes, o->new_names_per_second, o->new_names_burst);
        probes_set_name_budget(&c->probes, &o->names);
        rc = probes_set_auto_range(&c->probes, o->auto_range,
                                   o->auto_range_min_ms > 0 ? o->auto_range_min_ms : 1.0,
                                   o->auto_range_max_ms > 0 ? o->auto_range_max_ms : 60000.0);
    }
    if (!rc) {
        rc = probes_set_exemplars(&c->probes, o->exemplars_slowest, o->exemplars_failed);
    }
    if (!rc) {
        struct store_retention ret;
        store_retention_default(&ret);
        ret.window_max_age_ns = (int64_t)o->retention_hours * 3600 * 1000000000;
        ret.dq_max_age_ns = (int64_t)o->dq_retention_hours * 3600 * 1000000000;
        c->prune = o->retention_hours > 0 || o->dq_retention_hours > 0;
        rc = store_set_retention(store, &ret);
    }
    if (!rc) {
        rc = find_downtime(c); /* before this run writes anything */
    }
    if (!rc) {
        rc = store_probes_each(store, apply_stored_probe, c);
    }
    if (rc) {
        core_destroy(c);
        return rc;
    }
    *out = c;
    return DQ_OK;
}

/* The gap before this run, from the store: the previous run's dqd_stopped, or when it
 * started and never recorded a stop, the last thing it recorded. */
static int find_downtime(struct core *c) {
    int64_t stop_id = 0, stop_ns = 0, start_id = 0, start_ns = 0, last = 0;
    int rc = store_event_last(c->store, "dqd_stopped", &stop_id, &stop_ns);
    int stopped = rc == DQ_OK;
    if (rc == DQ_OK || rc == DQ_ENOTFOUND) {
        rc = store_event_last(c->store, "dqd_started", &start_id, &start_ns);
    }
    if (rc == DQ_OK || rc == DQ_ENOTFOUND) {
        rc = store_last_record_ns(c->store, &last);
    }
    if (rc) {
        return rc;
    }
    c->down.clean = stopped && stop_id > start_id;
    c->down_last_ns = c->down.clean ? stop_ns : last;
    set_downtime_end(c);
    return DQ_OK;
}

/* The gap ends where this run starts. */
static void set_downtime_end(struct core *c) {
    c->down.to_ns = c->started_ns;
    c->down.from_ns = c->down_last_ns;
    if (c->down.from_ns > c->started_ns) {
        c->down.from_ns = c->started_ns; /* a clock set back: no gap to speak of */
    }
}

void core_set_start(struct core *c, int64_t ns) {
    c->started_ns = ns;
    c->probes.open_ns = ns; /* the window it starts in is partial from there */
    set_downtime_end(c);
}

void core_downtime(const struct core *c, struct core_downtime *out) {
    *out = c->down;
}

void core_destroy(struct core *c) {
    if (!c) {
        return;
    }
    dq_eval_destroy(c->eval);
    dq_diagram_destroy(c->diagram);
    free(c->diagram_text);
    probes_release(&c->probes);
    free(c);
}

struct probe_table *core_probes(struct core *c) {
    return &c->probes;
}

struct store *core_store(struct core *c) {
    return c->store;
}

const struct clock *core_clock(const struct core *c) {
    return &c->clock;
}

void core_get_stats(const struct core *c, struct core_stats *st) {
    memset(st, 0, sizeof *st);
    st->instances_total = c->instances_total;
    st->windows_closed = c->windows_closed;
    st->store_errors = c->store_errors;
    st->started_ns = c->started_ns;
    st->probes = c->probes.count;
    for (size_t i = 0; i < c->probes.count; i++) {
        st->enabled += c->probes.probes[i]->enabled != 0;
    }
}

void core_add_instances(struct core *c, uint64_t n) {
    c->instances_total += n;
}

uint64_t core_instances_total(const struct core *c) {
    return c->instances_total;
}

void core_count_store_error(struct core *c) {
    c->store_errors++;
}

int core_running(const struct core *c) {
    return c->running;
}

/* ---- settings of one probe ------------------------------------------------------------- */

void core__sync_node_grid(struct core *c, const struct probe *p) {
    if (c->eval) {
        int i = dq_diagram_find(c->diagram, p->name);
        if (i >= 0) {
            dq_eval_set_grid(c->eval, i, p->k, p->n);
        }
    }
}

int core__set_dmax(struct core *c, struct probe *p, double dmax_ms, int bins, int person) {
    int rc = probes_set_dmax(&c->probes, p, dmax_ms, bins);
    if (rc == DQ_OK) {
        core__sync_node_grid(c, p);
        if (person) {
            p->auto_range = 0;
            core__tell(c, p, "dmax");
        }
    }
    return rc;
}

int core_set_dmax(struct core *c, struct probe *p, double dmax_ms, int bins) {
    return core__set_dmax(c, p, dmax_ms, bins, 1);
}

void core_set_auto_range(struct core *c, struct probe *p, int on) {
    p->auto_range = on != 0;
    p->range_shrink = 0;
    p->range_min_ms = c->probes.range_min_ms;
    /* a dMax of its own is the most it may reach */
    p->range_max_ms = p->dmax_set ? p->dmax_ms : c->probes.range_max_ms;
}

void core_set_range_veto(struct core *c, int (*in_use)(void *ctx, const struct probe *p),
                         void *ctx) {
    c->range_veto = in_use;
    c->range_veto_ctx = ctx;
    c->probes.evict_veto = in_use;
    c->probes.evict_ctx = ctx;
}

void core_get_range_stats(const struct core *c, struct core_range_stats *st) {
    *st = c->range;
}

static void qta_text(const struct dq_qta *q, char *buf, size_t cap) {
    size_t off = (size_t)snprintf(buf, cap, "{\"points\":[");
    for (int j = 0; j < q->n && off < cap; j++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s[%.17g,%.17g]", j ? "," : "", q->p[j],
                                q->t[j]);
    }
    if (off < cap) {
        snprintf(buf + off, cap - off, "],\"max_lost\":%.17g}", q->max_lost);
    }
}

int core__save_row(struct core *c, const struct probe *p, int enabled, double dmax_ms, int n) {
    char qta[2048];
    if (p->has_qta) {
        qta_text(&p->qta, qta, sizeof qta);
    }
    /* a probe a passive source (OTLP) feeds is observed, not enabled in the store's sense,
     * unless someone chose to enable it */
    int observed_only = p->passive && !p->chosen;
    struct store_probe sp = {.name = p->name,
                             .dmax_ms = dmax_ms,
                             .bins = n,
                             .enabled = enabled && !observed_only,
                             .always_on = p->always_on && !observed_only,
                             .qta_json = p->has_qta ? qta : NULL};
    int rc = store_probe_upsert(c->store, &sp);
    if (rc) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: saving probe %s: %s", p->name, dq_last_error());
    }
    return rc;
}

int core_save_probe(struct core *c, const struct probe *p) {
    return core__save_row(c, p, p->enabled, p->dmax_ms, p->n);
}

int core_set_qta(struct core *c, struct probe *p, const struct dq_qta *qta) {
    int had = p->has_qta;
    struct dq_qta old = p->qta;
    p->has_qta = qta != NULL;
    if (qta) {
        p->qta = *qta;
    }
    int rc = core_save_probe(c, p);
    if (rc) { /* the store did not take it: not made */
        p->has_qta = had;
        p->qta = old;
        return DQ_ESTORE;
    }
    core__tell(c, p, "qta");
    return DQ_OK;
}

int core_configure_probe(struct core *c, const char *name, double dmax_ms, int bins, int enabled,
                         const struct dq_qta *qta, int servers) {
    struct probe *p = NULL;
    int rc = probes_get(&c->probes, name, strlen(name), &p);
    if (!rc && dmax_ms > 0) {
        rc = core_set_dmax(c, p, dmax_ms, bins);
    }
    if (rc) {
        return dq_fail(rc, "probe %s: %s", name, dq_last_error());
    }
    if (enabled >= 0) {
        p->enabled = enabled;
        p->always_on = enabled;
        p->chosen = enabled;
    }
    if (qta) {
        p->has_qta = 1;
        p->qta = *qta;
    }
    core_save_probe(c, p);
    if (servers > 0 && core_set_servers(c, p, servers) == DQ_ERANGE) {
        return dq_fail(DQ_ERANGE, "%s", dq_last_error());
    }
    return DQ_OK;
}

/* ---- the diagram ------------------------------------------------------------------------- */

/* Gives every diagram node its probe's grid, registering probes the diagram names. */
static void eval_sync_grids(struct core *c) {
    if (!c->eval) {
        return;
    }
    size_t np = dq_diagram_probe_count(c->diagram);
    for (size_t j = 0; j < np; j++) {
        int i = dq_diagram_probe(c->diagram, j);
        const struct dq_diagram_node *node = dq_diagram_node(c->diagram, i);
        struct probe *p = NULL;
        if (probes_get(&c->probes, node->name, strlen(node->name), &p) == DQ_OK) {
            p->in_diagram = 1;
            dq_eval_set_grid(c->eval, i, p->k, p->n);
        }
    }
}

/* Parses and installs a diagram; `record`: writes it to the store first; `from` says where
 * it came from in the log line. */
static int load_diagram(struct core *c, const char *text, size_t len, const char *path, int record,
                        const char *from) {
    struct dq_diagram *g = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(text, len, &g, &err);
    if (rc) {
        return dq_fail(rc, "%d:%d: %s", err.line, err.column, err.text);
    }
    struct dq_eval *ev = NULL;
    rc = dq_eval_create(g, c->probes.default_k, c->probes.default_n, &ev);
    char *copy = malloc(len + 1);
    if (rc || !copy) {
        free(copy);
        dq_eval_destroy(ev);
        dq_diagram_destroy(g);
        return rc ? rc : dq_fail(DQ_ENOMEM, "no memory for the diagram");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (record && (rc = store_diagram_put(c->store, copy, path, NULL)) != DQ_OK) {
        c->store_errors++;
        rc = dq_fail(rc,
                     "the diagram could not be recorded in the store (it would not survive "
                     "a restart), so it is not loaded: %s",
                     dq_last_error());
        free(copy);
        dq_eval_destroy(ev);
        dq_diagram_destroy(g);
        return rc;
    }
    for (size_t i = 0; i < c->probes.count; i++) {
        c->probes.probes[i]->in_diagram = 0;
    }
    dq_eval_destroy(c->eval);
    dq_diagram_destroy(c->diagram);
    free(c->diagram_text);
    c->diagram = g;
    c->eval = ev;
    c->diagram_text = copy;
    snprintf(c->diagram_path, sizeof c->diagram_path, "%s", path ? path : "");
    eval_sync_grids(c);
    LOG(LOG_INFO, "diagram loaded %s: %zu nodes, %zu probes", from, dq_diagram_node_count(g),
        dq_diagram_probe_count(g));
    for (size_t j = 0; j < dq_diagram_warning_count(g); j++) {
        const struct dq_diagram_error *w = dq_diagram_warning(g, j);
        LOG(LOG_WARN, "diagram %s%s%d:%d: %s", path ? path : "sent through the API",
            path ? ":" : ", ", w->line, w->column, w->text);
    }
    size_t more = dq_diagram_warning_total(g) - dq_diagram_warning_count(g);
    if (more > 0) {
        LOG(LOG_WARN, "diagram %s: %zu more warning%s (not kept)",
            path ? path : "sent through the API", more, more == 1 ? "" : "s");
    }
    core__tell(c, NULL, "diagram");
    return DQ_OK;
}

int core_load_diagram(struct core *c, const char *text, size_t len, const char *path) {
    char from[DIAGRAM_FROM_MAX];
    snprintf(from, sizeof from, "%s%s", path ? "from " : "through the API", path ? path : "");
    return load_diagram(c, text, len, path, 1, from);
}

struct restore_ctx {
    struct core *c;
    int rc;
};

static int restore_one(void *ctx, const struct store_diagram *d) {
    struct restore_ctx *r = ctx;
    char from[DIAGRAM_FROM_MAX], when[32];
    time_t secs = (time_t)(d->loaded_ns / 1000000000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm) || !strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
        snprintf(when, sizeof when, "?");
    }
    snprintf(from, sizeof from, "from the store (recorded %s, %s%s)", when,
             d->path ? "from " : "sent through the API", d->path ? d->path : "");
    r->rc = load_diagram(r->c, d->text, d->len, d->path, 0, from);
    if (r->rc) {
        r->rc = dq_fail(r->rc,
                        "the diagram recorded in the store (%s) does not load: %s; give "
                        "--diagram FILE to replace it",
                        when, dq_last_error());
    }
    return 1;
}

int core_restore_diagram(struct core *c) {
    struct restore_ctx r = {c, DQ_OK};
    int rc = store_diagram_latest(c->store, restore_one, &r);
    return rc ? rc : r.rc;
}

int core_load_diagram_file(struct core *c, const char *path) {
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
        rc = core_load_diagram(c, buf ? buf : "", len, path);
        if (rc) {
            rc = dq_fail(rc, "%s:%s", path, dq_last_error());
        }
    }
    free(buf);
    return rc;
}

const struct dq_diagram *core_diagram(const struct core *c) {
    return c->diagram;
}

const char *core_diagram_text(const struct core *c) {
    return c->diagram_text;
}

const char *core_diagram_path(const struct core *c) {
    return c->diagram_path;
}

struct probe *core_node_probe(struct core *c, int node) {
    const struct dq_diagram_node *n = c->diagram ? dq_diagram_node(c->diagram, node) : NULL;
    return n && n->name ? probes_find(&c->probes, n->name, strlen(n->name)) : NULL;
}

/* ---- windows -------------------------------------------------------------------------------- */

int64_t core_window_of(const struct core *c, int64_t ns) {
    return probes_window_of(&c->probes, ns);
}

int64_t core_window_ns(const struct core *c) {
    return c->probes.window_ns;
}

int64_t core_lag_ns(const struct core *c) {
    return c->probes.lag_ns;
}

int64_t core_next_close(const struct core *c) {
    return c->probes.next_close;
}

int64_t core_last_closed(const struct core *c) {
    return c->last_closed_wid;
}

int64_t core_next_deadline(const struct core *c) {
    return (c->probes.next_close + 1) * c->probes.window_ns + c->probes.lag_ns;
}

size_t core_calc_missing(struct core *c, const struct probe *p, int64_t wid, char *buf,
                         size_t cap) {
    if (cap) {
        buf[0] = '\0';
    }
    int node = c->diagram && p ? dq_diagram_find(c->diagram, p->name) : -1;
    if (node < 0) {
        return 0;
    }
    int kids[256];
    size_t n = dq_diagram_probe_children(c->diagram, node, kids, 256), missing = 0;
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    for (size_t j = 0; j < n && j < 256; j++) {
        const char *name = dq_diagram_node(c->diagram, kids[j])->name;
        struct probe *k = probes_find(&c->probes, name, strlen(name));
        const struct probe_window *w = k ? probes_ring_find(k, wid) : NULL;
        if (!w || (!w->observed && !w->calculated)) {
            dq_strbuf_printf(&b, "%s%s", missing++ ? ", " : "", name);
        }
    }
    return missing;
}

/* Ring entry of p for wid, creating an empty one when p had no instance in it. */
static struct probe_window *ring_entry(struct probe *p, int64_t wid) {
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
    p->ring[(p->ring_head + p->ring_len) % p->ring_cap] = w;
    p->ring_len++;
    return probes_ring_get(p, 0);
}

/* Calculated ΔQs through the diagram from window wid's observed ones. */
static void calculate(struct core *c, int64_t wid) {
    dq_eval_clear_observed(c->eval);
    size_t np = dq_diagram_probe_count(c->diagram);
    for (size_t j = 0; j < np; j++) {
        int i = dq_diagram_probe(c->diagram, j);
        struct probe *p = core_node_probe(c, i);
        struct probe_window *w = p && probes_has_window(p, wid) ? probes_ring_get(p, 0) : NULL;
        if (w && w->observed) {
            dq_eval_set_observed(c->eval, i, w->observed);
        }
    }
    if (dq_eval_run(c->eval) == DQ_OK) {
        for (size_t j = 0; j < np; j++) {
            int i = dq_diagram_probe(c->diagram, j);
            const struct dq *q = dq_eval_calculated(c->eval, i);
            if (!q) {
                continue;
            }
            const struct dq_diagram_node *node = dq_diagram_node(c->diagram, i);
            struct probe *p = NULL;
            if (probes_get(&c->probes, node->name, strlen(node->name), &p) != DQ_OK) {
                continue;
            }
            struct probe_window *w = ring_entry(p, wid);
            dq_destroy(w->calculated);
            w->calculated = NULL;
            dq_clone(q, &w->calculated);
        }
    }
    dq_eval_clear_observed(c->eval);
}

static const char *range_reason(enum probes_range_reason r) {
    switch (r) {
    case PROBES_RANGE_TAIL_NEAR_DMAX:
        return "tail_near_dmax";
    case PROBES_RANGE_TAIL_FAR:
        return "tail_far_inside";
    case PROBES_RANGE_HEAD:
        return "mass_in_first_bins";
    default:
        return "keep";
    }
}

/*
 * Auto-ranging after window wid closed: each auto-ranging enabled probe's decision
 * (probes_range_decide) from that window; a change is made unless the veto holds it back
 * (an investigation uses the probe): recorded (an `auto_range` event with its reason and
 * figures, the probe row, a set_timeout command per wrapper link, in one transaction),
 * then applied (the new grid, the ring re-expressed) and sent.
 */
static void auto_range(struct core *c, int64_t wid) {
    struct probe_table *t = &c->probes;
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        if (!p->auto_range || !p->enabled || !probes_has_window(p, wid)) {
            continue;
        }
        struct probes_range r;
        probes_range_decide(p, probes_ring_get(p, 0), &r);
        p->range_shrink = r.wants_finer ? p->range_shrink + 1 : 0;
        if (r.k == p->k) {
            continue;
        }
        if (c->range_veto && c->range_veto(c->range_veto_ctx, p)) {
            c->range.vetoed++;
            LOG(LOG_DEBUG, "probe %s: auto-range to dMax %g ms held back: an investigation uses it",
                p->name, r.dmax_ms);
            continue;
        }
        double old = p->dmax_ms;
        char detail[512];
        snprintf(detail, sizeof detail,
                 "{\"old_dmax_ms\":%.9g,\"new_dmax_ms\":%.9g,\"old_width_ms\":%.9g,"
                 "\"new_width_ms\":%.9g,\"bins\":%d,\"reason\":\"%s\",\"window\":%" PRId64
                 ",\"instances\":%" PRIu64 ",\"tail\":%.6g,\"head\":%.6g,\"slowest_ms\":%.9g}",
                 old, r.dmax_ms, ldexp(1.0, p->k), ldexp(1.0, r.k), p->n, range_reason(r.reason),
                 wid, r.timed, r.tail, r.head, r.slowest_ms);
        struct core_change ch = {
            .kind = CORE_RANGE, .probe = p, .dmax_ms = r.dmax_ms, .range_k = r.k};
        int own = !store_in_transaction(c->store);
        int began = own && store_begin(c->store) == DQ_OK;
        struct store_event ev = {.kind = "auto_range", .probe = p->name, .detail_json = detail};
        if (store_event_add(c->store, &ev, NULL) != DQ_OK) {
            c->store_errors++;
        }
        if (core_change_record(c, &ch) == DQ_ENOMEM) {
            if (began) {
                store_rollback(c->store);
            }
            core_change_release(&ch);
            continue;
        }
        if (began && store_commit(c->store) != DQ_OK) {
            c->store_errors++;
            LOG(LOG_ERROR, "store: %s; the auto-range of %s is made but not recorded",
                dq_last_error(), p->name);
            for (size_t j = 0; j < ch.n_sent; j++) {
                ch.sent[j].row = 0;
            }
        }
        int sent = core_change_apply(c, &ch);
        core_change_release(&ch);
        c->range.changes++;
        p->range_shrink = 0;
        LOG(LOG_INFO,
            "probe %s: auto-range dMax %g → %g ms (bins of %g ms, %s: %.3g past 7/8 of dMax, "
            "slowest %.4g ms), sent to %d wrapper(s)",
            p->name, old, p->dmax_ms, ldexp(1.0, p->k), range_reason(r.reason), r.tail,
            r.slowest_ms, sent);
    }
}

/* Stores the probes a passive source (OTLP) made observed since the last window
 * (probes_origin_set_passive; passive 1 is new, 2 seen here) that are persisted: those in
 * the diagram, configured or given something by a person; one only observed is not. */
static void save_passive(struct core *c) {
    struct probe_table *t = &c->probes;
    for (size_t i = 0; t->passive_new > 0 && i < t->count; i++) {
        struct probe *p = t->probes[i];
        if (p->passive == 1) {
            p->passive = 2;
            t->passive_new--;
            if (!probes_observed(p) && core__save_row(c, p, p->chosen, p->dmax_ms, p->n) == DQ_OK) {
                LOG(LOG_INFO, "probe %s: fed by OTLP, always observed", p->name);
            }
        }
    }
    t->passive_new = 0;
}

static void close_window(struct core *c, int64_t wid, core_window_fn fn, void *ctx) {
    if (c->probes.passive_new > 0) {
        save_passive(c);
    }
    if (probes_close_window(&c->probes, wid) != DQ_OK) {
        LOG(LOG_ERROR, "window %" PRId64 ": %s", wid, dq_last_error());
    }
    size_t idle = probes_remove_idle(&c->probes, wid);
    if (idle) {
        LOG(LOG_INFO, "%zu observed probe(s) without an instance for %" PRId64 " windows removed",
            idle, c->probes.idle_windows);
    }
    if (c->eval) {
        calculate(c, wid);
    }
    auto_range(c, wid);
    c->windows_closed++;
    c->last_closed_wid = wid;
    if (fn) {
        fn(ctx, wid);
    }
}

#define REFUSED_REPORT_NS (60 * INT64_C(1000000000)) /* the log's line of refusals, at most */

/* Instances refused as late or future since the log last said so, at most once a minute
 * (or now: at the stop, or when the clock went back): counted in /metrics, and said where
 * people look first. */
static void report_refused(struct core *c, int64_t now, int force) {
    const struct probe_table *t = &c->probes;
    uint64_t late = t->late - c->said_late, future = t->future - c->said_future;
    if (late + future == 0 || (!force && c->said_refused_ns && now >= c->said_refused_ns &&
                               now - c->said_refused_ns < REFUSED_REPORT_NS)) {
        return;
    }
    int64_t since = c->said_refused_ns ? c->said_refused_ns : c->probes.open_ns;
    char lag[DQ_DURATION_TEXT], span[DQ_DURATION_TEXT];
    /* with --otlp a wrapper's line is late after its own lag (probes_set_line_lag) */
    dq_format_duration((double)(t->line_lag_on ? t->line_lag_ns : t->lag_ns) * 1e-9, lag,
                       sizeof lag);
    dq_format_duration((double)(now > since ? now - since : 0) * 1e-9, span, sizeof span);
    LOG(LOG_WARN,
        "ingest: %" PRIu64 " instance(s) refused in the last %s: %" PRIu64 " late (their "
        "window had closed: they came more than the lag, %s, after their end), %" PRIu64
        " future (beyond the open windows: a clock ahead of dqd's, or dqd stalled for longer "
        "than it has room for); dqd_ingest_rejected_total counts them",
        late + future, span, late, lag, future);
    c->said_late = t->late;
    c->said_future = t->future;
    c->said_refused_ns = now;
}

int core_close_due(struct core *c, int64_t now, core_window_fn fn, void *ctx) {
    struct probe_table *t = &c->probes;
    int closed = 0;
    int64_t due = probes_window_of(t, now - t->lag_ns); /* the first window not due */
    if (due - t->next_close > t->nslots) {
        /* the clock jumped ahead: only the open slots can hold data; close those and skip
         * the empty windows in between instead of closing them one by one */
        int64_t last = t->next_close + t->nslots;
        while (t->next_close < last) {
            close_window(c, t->next_close, fn, ctx);
            closed++;
        }
        LOG(LOG_WARN,
            "the clock jumped %" PRId64 " windows ahead (or dqd did not run for that long): "
            "the %d open windows closed, the ones between skipped",
            due - t->next_close + t->nslots, t->nslots);
        t->next_close = due;
    }
    while ((t->next_close + 1) * t->window_ns + t->lag_ns <= now) {
        close_window(c, t->next_close, fn, ctx);
        closed++;
    }
    report_refused(c, now, 0);
    return closed;
}

/* The part of window wid this run was there for: from its start, up to its stop. Returns
 * whether that is only part of it (a partial window). */
static bool run_span(const struct probe_table *tb, int64_t wid, int64_t *start, int64_t *end) {
    *start = wid * tb->window_ns;
    *end = *start + tb->window_ns;
    bool partial = *start < tb->open_ns || tb->stop_ns != 0;
    if (tb->open_ns > *start && tb->open_ns < *end) {
        *start = tb->open_ns;
    }
    if (tb->stop_ns != 0 && tb->stop_ns < *end) {
        *end = tb->stop_ns > *start ? tb->stop_ns : *start;
    }
    return partial;
}

static int summary_row(struct core *c, const struct probe *p, const struct dq *q,
                       const struct probe_window *w, enum store_kind kind) {
    struct store_window row = {.probe = p->name, .kind = kind, .run_ns = c->started_ns};
    row.partial = run_span(&c->probes, w->wid, &row.start_ns, &row.end_ns);
    if (kind == STORE_OBSERVED) {
        row.n_ok = w->ok + w->out;
        row.n_fa = w->fa;
        row.n_to = w->to;
        row.n = row.n_ok + row.n_fa + row.n_to;
    }
    row.mean = NAN;
    row.p50 = row.p95 = row.p99 = NAN;
    row.lost = NAN;
    struct dq_moments m;
    if (dq_moments(q, &m) == DQ_OK) {
        row.mean = kind == STORE_OBSERVED && w->ok ? w->mean : m.mean;
    }
    double t;
    row.p50 = dq_quantile(q, 0.5, &t) == DQ_OK ? t : NAN;
    row.p95 = dq_quantile(q, 0.95, &t) == DQ_OK ? t : NAN;
    row.p99 = dq_quantile(q, 0.99, &t) == DQ_OK ? t : NAN;
    row.lost = dq_lost(q);
    int rc = store_window_put(c->store, &row);
    if (rc != DQ_OK) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: window of %s not recorded: %s", p->name, dq_last_error());
    }
    return rc;
}

/* Writes p's last origin (and with `instance`, its last instance's END) to its row. */
static int save_last(struct core *c, const struct probe *p, int instance) {
    struct probe_origin_info oi;
    char *text = NULL;
    if (probes_origin_get(&c->probes, p->origin, &oi) == DQ_OK) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "label", oi.label, "node", oi.node, "app",
                              oi.app, "kind", oi.kind);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
    }
    int rc = store_probe_ensure(c->store, p->name);
    rc = rc ? rc : store_probe_set_last(c->store, p->name, instance ? p->last_end_ns : 0, text);
    free(text);
    if (rc) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: where probe %s was last heard from is not recorded: %s", p->name,
            dq_last_error());
    }
    return rc;
}

int core_persist_window(struct core *c, int64_t wid) {
    int result = DQ_OK;
    for (size_t i = 0; i < c->probes.count; i++) {
        struct probe *p = c->probes.probes[i];
        if (probes_evictable(&c->probes, p)) {
            continue; /* only seen on the wire: not persisted (it may be evicted any time) */
        }
        struct probe_window *w = probes_ring_find(p, wid);
        int rc = DQ_OK;
        if (w && w->observed) {
            rc = summary_row(c, p, w->observed, w, STORE_OBSERVED);
            result = result ? result : rc;
            /* the window's ΔQ for the heatmap, and what identified its slowest instances,
             * under the span of its summary: two runs that each saw part of it keep theirs */
            int64_t start, end;
            run_span(&c->probes, wid, &start, &end);
            rc = store_window_dq_put(c->store, p->name, start, end, w->observed);
            rc = rc ? rc : core__persist_exemplars(c, p, wid, start);
            if (rc) {
                c->store_errors++;
                LOG(LOG_ERROR, "store: ΔQ or exemplars of %s not recorded: %s", p->name,
                    dq_last_error());
                result = result ? result : rc;
            }
        }
        if (w && w->calculated) {
            rc = summary_row(c, p, w->calculated, w, STORE_CALCULATED);
            result = result ? result : rc;
        }
        if (p->origin_dirty && save_last(c, p, 0) == DQ_OK) {
            p->origin_dirty = 0; /* where it last came from: kept across restarts */
        }
        if (p->quiet_dirty) {
            /* the quiet windows changed: kept across restarts */
            json_t *q = core_quiet_json(p);
            char *text = q ? json_dumps(q, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
            json_decref(q);
            rc = text ? store_probe_ensure(c->store, p->name) : DQ_ENOMEM;
            rc = rc ? rc : store_probe_set_quiet(c->store, p->name, text);
            free(text);
            if (rc) {
                c->store_errors++;
                result = result ? result : rc;
            } else {
                p->quiet_dirty = 0;
            }
        }
    }
    return result;
}

int core_record_start(struct core *c, const char *version) {
    json_t *d = json_pack("{s:s,s:I,s:b}", "version", version ? version : "", "previous_ns",
                          (json_int_t)c->down.from_ns, "previous_clean", c->down.clean);
    char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
    json_decref(d);
    struct store_event ev = {.time_ns = c->started_ns, .kind = "dqd_started", .detail_json = text};
    int rc = store_event_add(c->store, &ev, NULL);
    free(text);
    if (rc) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: dqd's start is not recorded: %s", dq_last_error());
    }
    return rc;
}

/* Closes window wid at the stop: observed and calculated ΔQs, no decision, no auto-range. */
static void close_at_stop(struct core *c, int64_t wid) {
    if (c->probes.passive_new > 0) {
        save_passive(c);
    }
    if (probes_close_window(&c->probes, wid) != DQ_OK) {
        LOG(LOG_ERROR, "window %" PRId64 ": %s", wid, dq_last_error());
    }
    if (c->eval) {
        calculate(c, wid);
    }
    c->last_closed_wid = wid;
}

/* The instances of window wid in the ring of every probe that is persisted. */
static uint64_t window_instances(struct core *c, int64_t wid) {
    uint64_t n = 0;
    for (size_t i = 0; i < c->probes.count; i++) {
        struct probe *p = c->probes.probes[i];
        const struct probe_window *w = probes_ring_find(p, wid);
        if (w && !probes_evictable(&c->probes, p)) {
            n += w->ok + w->out + w->fa + w->to;
        }
    }
    return n;
}

int core_stop(struct core *c, int64_t now_ns, int64_t undecided, struct core_stop_report *out) {
    struct probe_table *t = &c->probes;
    struct core_stop_report rep = {0};
    int rc = store_begin(c->store);
    if (rc) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: %s: the open windows are not recorded at the stop", dq_last_error());
        return rc;
    }
    /* closed windows the adaptive loop could not record, while the rings hold them */
    int64_t from = undecided >= 0 ? undecided : c->last_closed_wid + 1;
    if (from < c->last_closed_wid - t->ring_cap + 1) {
        from = c->last_closed_wid - t->ring_cap + 1;
    }
    for (int64_t wid = from; wid <= c->last_closed_wid; wid++) {
        core_persist_window(c, wid);
        rep.undecided++;
    }
    report_refused(c, now_ns, 1); /* what the last minute refused */
    /* every window still open: each slot's window, as far as any instance reached */
    probes_stop(t, now_ns);
    int64_t first = t->next_close, last = t->next_close + t->nslots;
    for (int64_t wid = first; wid < last; wid++) {
        close_at_stop(c, wid);
        uint64_t n = window_instances(c, wid);
        core_persist_window(c, wid); /* writes only the probes that have the window */
        rep.windows += n > 0;
        rep.instances += n;
    }
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        if (!probes_evictable(t, p) && (p->last_end_ns > 0 || p->origin)) {
            save_last(c, p, 1);
        }
    }
    char detail[256];
    snprintf(detail, sizeof detail,
             "{\"partial_windows\":%d,\"instances_in_partial\":%" PRIu64
             ",\"undecided_windows\":%d,\"instances_total\":%" PRIu64 ",\"started_ns\":%" PRId64
             "}",
             rep.windows, rep.instances, rep.undecided, c->instances_total, c->started_ns);
    struct store_event ev = {.time_ns = now_ns, .kind = "dqd_stopped", .detail_json = detail};
    if (store_event_add(c->store, &ev, NULL) != DQ_OK) {
        c->store_errors++;
    }
    rc = store_commit(c->store);
    if (rc) {
        c->store_errors++;
        LOG(LOG_ERROR,
            "store: %s: the %d windows closed at the stop (%" PRIu64 " instances) are "
            "lost",
            dq_last_error(), rep.windows, rep.instances);
        return rc;
    }
    LOG(LOG_INFO,
        "stop: %d windows closed and recorded as partial (%" PRIu64 " instances)%s, with each "
        "probe's last instance and connection",
        rep.windows, rep.instances,
        rep.undecided ? ", and the closed windows the adaptive loop had not recorded" : "");
    if (out) {
        *out = rep;
    }
    return DQ_OK;
}

void core_prune_if_due(struct core *c) {
    int64_t now = clock_now(&c->clock);
    if (!c->prune || now - c->last_prune_ns < PRUNE_EVERY_NS) {
        return;
    }
    c->last_prune_ns = now;
    int64_t deleted = 0;
    if (store_prune(c->store, &deleted) != DQ_OK) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: pruning old windows: %s", dq_last_error());
    } else if (deleted > 0) {
        LOG(LOG_INFO, "store: pruned %" PRId64 " old rows", deleted);
    }
}

/* ---- sources ------------------------------------------------------------------------------- */

int core_add_source(struct core *c, const struct core_source_ops *ops, void *src) {
    if (c->n_sources >= CORE_MAX_SOURCES) {
        return dq_fail(DQ_EFULL, "at most %d ingest sources", CORE_MAX_SOURCES);
    }
    c->sources[c->n_sources].ops = ops;
    c->sources[c->n_sources].src = src;
    c->n_sources++;
    return DQ_OK;
}

void core_remove_source(struct core *c, void *src) {
    for (int i = 0; i < c->n_sources; i++) {
        if (c->sources[i].src == src) {
            memmove(&c->sources[i], &c->sources[i + 1],
                    sizeof c->sources[0] * (size_t)(c->n_sources - i - 1));
            c->n_sources--;
            return;
        }
    }
}

void core_links_each(struct core *c, void (*fn)(void *ctx, const struct core_link_info *li),
                     void *ctx) {
    for (int i = 0; i < c->n_sources; i++) {
        if (c->sources[i].ops->links) {
            c->sources[i].ops->links(c->sources[i].src, fn, ctx);
        }
    }
}

/* ---- links that go away ---------------------------------------------------------------- */

void core_peer_key(const struct core_link_info *li, char *out, size_t cap) {
    const char *peer = li->peer ? li->peer : "";
    size_t n = strlen(peer);
    if (li->inbound) { /* the ephemeral port goes: one series per host across reconnects */
        const char *colon = strrchr(peer, ':');
        if (colon && (peer[0] != '[' || (colon > peer && colon[-1] == ']'))) {
            n = (size_t)(colon - peer);
        }
        if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
            peer++;
            n -= 2;
        }
    }
    snprintf(out, cap, "%.*s", (int)n, peer);
}

/* The peer entry of key, added when new (pooled as "(other)" past CORE_MAX_PEERS). */
static struct core_peer *peer_entry(struct core *c, const char *key) {
    for (size_t i = 0; i < c->n_peers; i++) {
        if (strcmp(c->peers[i].peer, key) == 0) {
            return &c->peers[i];
        }
    }
    if (c->n_peers == CORE_MAX_PEERS - 1) {
        key = CORE_PEER_OTHER;
        for (size_t i = 0; i < c->n_peers; i++) {
            if (strcmp(c->peers[i].peer, key) == 0) {
                return &c->peers[i];
            }
        }
    }
    struct core_peer *e = &c->peers[c->n_peers++];
    memset(e, 0, sizeof *e);
    snprintf(e->peer, sizeof e->peer, "%s", key);
    return e;
}

void core_link_down(struct core *c, const struct core_link_info *li) {
    c->link_down_ns = clock_now(&c->clock);
    snprintf(c->link_down_label, sizeof c->link_down_label, "%" PRIu64 " %s %s%s%s", li->id,
             li->kind ? li->kind : "?", li->peer ? li->peer : "?",
             li->node && li->node[0] ? " node " : "", li->node ? li->node : "");
    char key[CORE_PEER_MAX];
    core_peer_key(li, key, sizeof key);
    peer_entry(c, key)->last_down_ns = c->link_down_ns;
}

void core_link_gone(struct core *c, const struct core_link_info *li) {
    char key[CORE_PEER_MAX];
    core_peer_key(li, key, sizeof key);
    peer_entry(c, key)->gone_errors += li->protocol_errors;
}

int64_t core_last_link_down(const struct core *c, const char **label) {
    if (label) {
        *label = c->link_down_label;
    }
    return c->link_down_ns;
}

struct peer_fold {
    struct core *c;
    struct core_peer *out; /* NULL: only make sure every live link's peer has an entry */
    size_t n;
};

static void peer_fold_link(void *ctx, const struct core_link_info *li) {
    struct peer_fold *f = ctx;
    char key[CORE_PEER_MAX];
    core_peer_key(li, key, sizeof key);
    size_t at = (size_t)(peer_entry(f->c, key) - f->c->peers);
    if (f->out && at < f->n) {
        f->out[at].errors += li->protocol_errors;
        f->out[at].connected += li->connected != 0;
    }
}

size_t core_peers(struct core *c, struct core_peer *out, size_t cap) {
    struct peer_fold f = {c, NULL, 0};
    core_links_each(c, peer_fold_link, &f); /* every peer ever seen keeps its series */
    f.n = c->n_peers < cap ? c->n_peers : cap;
    for (size_t i = 0; i < f.n; i++) {
        out[i] = c->peers[i];
        out[i].errors = c->peers[i].gone_errors;
        out[i].connected = 0;
    }
    f.out = out;
    core_links_each(c, peer_fold_link, &f);
    return f.n;
}

void core_sources_stats(struct core *c, struct core_source_stats *st) {
    memset(st, 0, sizeof *st);
    for (int i = 0; i < c->n_sources; i++) {
        struct core_source_stats one;
        memset(&one, 0, sizeof one);
        if (!c->sources[i].ops->stats) {
            continue;
        }
        c->sources[i].ops->stats(c->sources[i].src, &one);
        st->connections_total += one.connections_total;
        st->connections_rejected += one.connections_rejected;
        st->connections_junk += one.connections_junk;
        st->connections_evicted += one.connections_evicted;
        st->connections_reset += one.connections_reset;
        st->reset_written_bytes += one.reset_written_bytes;
        for (int e = 0; e < WIRE_E_COUNT; e++) {
            st->protocol_errors[e] += one.protocol_errors[e];
        }
    }
}

void core_command_acked(struct core *c, int64_t row) {
    if (row > 0 && store_command_ack(c->store, row) != DQ_OK) {
        c->store_errors++;
    }
}

/* ---- QTAs as JSON ------------------------------------------------------------------------- */

int core_qta_from_json(json_t *j, struct dq_qta *q) {
    memset(q, 0, sizeof *q);
    json_t *pts = json_object_get(j, "points");
    if (!json_is_object(j) || !json_is_array(pts)) {
        return dq_fail(DQ_EINVAL, "qta must be {\"points\": [[p, t_seconds], ...], "
                                  "\"max_lost\": x}");
    }
    size_t n = json_array_size(pts);
    if (n < 1 || n > DQ_QTA_MAX_POINTS) {
        return dq_fail(DQ_EINVAL, "qta needs 1 to %d points", DQ_QTA_MAX_POINTS);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *pt = json_array_get(pts, i);
        json_t *jt = json_array_get(pt, 1);
        if (!json_is_array(pt) || json_array_size(pt) != 2 ||
            !json_is_number(json_array_get(pt, 0)) || !(json_is_number(jt) || json_is_string(jt))) {
            return dq_fail(DQ_EINVAL,
                           "qta point %zu must be [probability, time]: the time in seconds, or a "
                           "string with a unit (\"250ms\")",
                           i);
        }
        q->p[i] = json_number_value(json_array_get(pt, 0));
        if (json_is_string(jt)) {
            if (dq_parse_duration(json_string_value(jt), json_string_length(jt), 1.0, 0,
                                  &q->t[i]) != DQ_OK) {
                return dq_fail(DQ_EINVAL, "qta point %zu: %s", i, dq_last_error());
            }
        } else {
            q->t[i] = json_number_value(jt);
        }
    }
    q->n = (int)n;
    json_t *ml = json_object_get(j, "max_lost");
    if (ml && !json_is_number(ml)) {
        return dq_fail(DQ_EINVAL, "qta max_lost must be a number");
    }
    /* absent: no limit beyond what the last point implies (as the config file) */
    q->max_lost = ml ? json_number_value(ml) : 1.0 - q->p[q->n - 1];
    return dq_qta_check(q);
}

int core_qta_from_json_text(const char *text, struct dq_qta *q) {
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j) {
        return dq_fail(DQ_EPARSE, "qta: %s", err.text);
    }
    int rc = core_qta_from_json(j, q);
    json_decref(j);
    return rc;
}

json_t *core_qta_json(const struct probe *p) {
    if (!p->has_qta) {
        return json_null();
    }
    json_t *pts = json_array();
    for (int j = 0; j < p->qta.n; j++) {
        json_array_append_new(pts, json_pack("[ff]", p->qta.p[j], p->qta.t[j]));
    }
    return json_pack("{s:o,s:f}", "points", pts, "max_lost", p->qta.max_lost);
}
