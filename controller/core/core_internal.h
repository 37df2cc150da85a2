/*
 * core_internal.h: what the core's files share (core.c: the diagram, windows, sources;
 * core_change.c: changes to probes; probes.c: the probe table; probes_names.c: its name
 * budget; exemplars.c: the exemplars its windows keep). Nothing outside controller/core/
 * includes it.
 */
#ifndef DQ_CORE_INTERNAL_H
#define DQ_CORE_INTERNAL_H

#include "core.h"

struct source {
    const struct core_source_ops *ops;
    void *src;
};

struct core {
    struct probe_table probes;
    struct store *store;
    struct clock clock;
    int retention_hours;
    int prune; /* some retention is set: store_prune runs every few minutes */
    /* diagram */
    struct dq_diagram *diagram;
    struct dq_eval *eval;
    char *diagram_text;
    char diagram_path[1024];
    /* sources */
    struct source sources[CORE_MAX_SOURCES];
    int n_sources;
    /* state and counters */
    int running;
    int64_t started_ns;
    int64_t last_prune_ns;
    int64_t last_closed_wid;
    uint64_t instances_total;
    uint64_t windows_closed;
    uint64_t store_errors;
    /* refused instances the log has reported (late, future) and when it last did */
    uint64_t said_late, said_future;
    int64_t said_refused_ns;
    /* wrapper links that went away */
    int64_t link_down_ns; /* the last disconnection; 0: none yet */
    char link_down_label[CORE_LABEL_MAX + 96];
    struct core_peer peers[CORE_MAX_PEERS]; /* protocol errors of links gone, per peer */
    size_t n_peers;
    /* told of changes to probes (core_set_observer) */
    core_observer_fn observer;
    void *observer_ctx;
    /* auto-ranging */
    int (*range_veto)(void *ctx, const struct probe *p);
    void *range_veto_ctx;
    struct core_range_stats range;
    /* dqd's own runs: the gap before this one */
    struct core_downtime down;
    int64_t down_last_ns; /* the previous run's end as the store had it, before any clamp */
    /* a window timer that came late (core_stall.c): since when the loop reads first (0:
     * it does not), how late the timer was, when an instance was last parsed, and the
     * instances parsed and refused as future before this turn, when it last fired;
     * `held`: a wait after one the loop overslept keeps the line floor's hold */
    struct {
        int64_t from, late, heard, prev;
        uint64_t seen, future;
        int held, again; /* again: stalls that started the reading over */
    } stall;
};

/* Tells the observer (core_set_observer) that p changed: what as in core_observer_fn. */
void core__tell(struct core *c, const struct probe *p, const char *what);

/* Keeps the evaluator's grid for p's node in step with p's. */
void core__sync_node_grid(struct core *c, const struct probe *p);

/* A dMax change; `person`: a person's (the probe stops auto-ranging, the observer is told;
 * a change applied by core_change_apply tells it once, at its end). DQ_ERANGE, DQ_ENOMEM. */
int core__set_dmax(struct core *c, struct probe *p, double dmax_ms, int bins, int person);

/* Writes p's row as it would be with `enabled` and the grid (dmax_ms, n); a failure is
 * counted and logged. */
int core__save_row(struct core *c, const struct probe *p, int enabled, double dmax_ms, int n);

/* ---- the probe table's name budget (probes_names.c) and its removals (probes.c) ---- */

/* Whether one more new name may be registered now: its source's bucket (peer when given,
 * else the node or origin of `origin`, whose last_rx_ns is then the clock) and the table's
 * both have a token; takes one from each, or none. */
int core__name_allowed(struct probe_table *t, uint32_t origin, struct probe_name_bucket *peer,
                       int64_t now);

/* Room for one more probe (an observed one when observed): evicts the evictable probe seen
 * least recently when the table or the observed share is full. DQ_OK, or DQ_EFULL when
 * nothing could be evicted (counted in t->full). */
int core__make_room(struct probe_table *t, int observed);

/* Rebuilds the name index from the probe array (after removals). */
void core__index_rebuild(struct probe_table *t);

/* Frees p, already out of the probe array: the recent cache and its origins let go. */
void core__probe_free(struct probe_table *t, struct probe *p);

/* ---- exemplars (exemplars.c), for probes.c ---------------------------------------------- */

/* Offers an identified instance of window wid (in open slot si) to p's exemplars. */
void probes__ex_offer(struct probe_table *t, struct probe *p, int si, int64_t wid,
                      const struct probe_ident *id, uint32_t origin, int64_t start_ns,
                      int64_t end_ns, enum probe_status status);

/* Window wid closes (p->ex non-NULL): slot si's exemplars become the closed set. */
void probes__ex_close(struct probe *p, int si, int64_t wid);

/* Every open window was cleared (a new grid): so are their exemplars. */
void probes__ex_clear_open(struct probe *p);

/* Writes the exemplars p kept for closed window wid to the store (in the caller's
 * transaction) under start_ns (the start of its summary row: the run's start for the
 * window a run started in), replacing those written there before. */
int core__persist_exemplars(struct core *c, const struct probe *p, int64_t wid, int64_t start_ns);

#endif /* DQ_CORE_INTERNAL_H */
