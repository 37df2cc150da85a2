/*
 * adapt.h: the adaptive loop, as an opaque object built from its environment.
 *
 * Once per closed window (adapt_window) the loop runs its triggers (per-probe conditions
 * with hysteresis), collects snapshots around firings, steps its investigations (each a
 * focus node and a search state, search/), and de-escalates closed investigations whose
 * problem stayed away. A person starts investigations with adapt_diagnose.
 *
 * Every round runs in three steps:
 *   decide   the next state and a list of effects are computed from the current state
 *            and the core's windows; nothing is written, sent or logged;
 *   persist  the window's summaries and the effects (hypotheses, commands, investigations,
 *            triggers, snapshots, events) go to the store in one transaction;
 *   act      only after the commit: the next state becomes the state, probes change and
 *            their commands go out (through the core), webhooks and log lines are emitted.
 * A failed begin or commit drops the round: nothing is sent, the state stays as it was,
 * and the window is decided again before the next one (a window the core no longer holds
 * after a long store outage is skipped, logged and counted).
 *
 * The loop reads time only from env.clock and sends nothing itself: a test drives it with
 * a manual clock, a core with a fake source and a real store file (tests/adapt/).
 *
 * Everything it decides is in the store, so `dqctl why` can explain it and adapt_create
 * can resume after a restart: open investigations come back with their focus (the newest
 * root or descend hypothesis) and the probes they own; closed ones that still own enabled
 * probes come back to be de-escalated.
 */
#ifndef DQ_ADAPT_H
#define DQ_ADAPT_H

#include <jansson.h>
#include <stdint.h>

#include "clock.h"
#include "core.h"
#include "store.h"

struct adapt;

/* What the loop is built from; every pointer is borrowed and must outlive it. */
struct adapt_env {
    struct core *core;         /* the windows it reads; probe changes go through it */
    struct store *store;       /* the hypothesis log */
    const struct clock *clock; /* the only time it reads */
    /* The event sink (webhooks, live events): takes the reference to payload (which may
     * be NULL when it could not be built). NULL: events are dropped. Events:
     * "trigger_fired", "trigger_cleared", "verdict", "probe_silent",
     * "probe_data_returned", and "hypothesis" for every step recorded ({"investigation",
     * "id", "parent", "node", "kind", "action", "probes", "reason", "verdict"}). */
    void (*emit)(void *ctx, const char *event, json_t *payload);
    void *emit_ctx;
};

/* Settings (their meaning and defaults are in settings.h / docs/configuration.md). */
struct adapt_options {
    const struct search_params *search; /* the search's tunables (copied; NULL: the defaults
                                           of search_params_init) */
    int min_instances;                  /* instances a new probe needs before a decision */
    int min_windows;                    /* windows a new probe needs before a decision */
    int max_enabled_probes;             /* budget: probes enabled at once (0: no limit) */
    double max_instances_per_second;    /* budget: expansions pause above half of it (0: none) */
    int deescalate_windows;             /* quiet windows before an investigation's probes go */
    int investigation_windows;          /* windows one search step may wait before giving up */
    int snapshot_windows;               /* windows kept before and after a trigger fired */
};

/* Counters (for tests and /metrics). */
struct adapt_stats {
    uint64_t rounds;          /* rounds committed (windows and person actions) */
    uint64_t rounds_failed;   /* rounds dropped because the store failed */
    uint64_t windows_skipped; /* windows given up after a long store outage */
    int64_t pending_wid;      /* the oldest window still to decide, −1 when none */
    int investigations;       /* investigations in memory (searching or de-escalating) */
};

/*
 * Creates the loop and resumes it from the store: triggers, open investigations, and
 * closed ones that still own enabled probes. DQ_ENOMEM, DQ_EINVAL for bad options, or the
 * store's error.
 */
int adapt_create(const struct adapt_env *env, const struct adapt_options *o, struct adapt **out);

/* Releases the loop's memory (nothing is written). NULL is a no-op. */
void adapt_destroy(struct adapt *a);

/*
 * Decides, persists and acts on window wid, which the core has just closed; windows left
 * pending by a failed round are decided first, in order. Signature of core_window_fn
 * (ctx is the struct adapt).
 */
void adapt_window(void *ctx, int64_t wid);

/*
 * Opens a person-started investigation at `node` (NULL or "": the diagram's first root)
 * with `strategy` ("children", "bisect"; NULL: children), requested by `who` (free text,
 * may be NULL). The problem kind is decided from the node's data: at once when it has
 * recent statistics, else the node (and its children, when the budget allows) is enabled
 * and owned by the investigation, which decides once there are enough samples. A node
 * with nothing abnormal against its QTA or baseline is healthy (possibly at once: the
 * investigation is then closed when this returns). With `overload` set it is an overload
 * investigation from the start (the verdict weighs every stage's utilisation and where
 * the node saturates); without, it becomes one when the node's latency rises with its
 * arrival rate. *id receives the investigation. DQ_EEXIST (with
 * *id) when one is already open at node; DQ_ESTATE with no diagram; DQ_ENOTFOUND for an unknown
 * node; DQ_EINVAL for a leaf or a bad strategy; DQ_EFULL at the investigation limit; DQ_ESTORE when
 * the store could not record it (nothing is changed then).
 */
int adapt_diagnose(struct adapt *a, const char *node, const char *strategy, const char *who,
                   int overload, int64_t *id);

/*
 * Ends investigation `id` at a person's request (`who`, free text, may be NULL): a
 * searching one is closed with the verdict "aborted"; searching or closed, what it enabled
 * is released at once (unless another investigation still needs it), and it is
 * forgotten. Decided, persisted and acted on like a window. DQ_ENOTFOUND when no
 * investigation has that id; DQ_ESTATE when it is closed and holds no probes any more
 * (nothing to do); DQ_ESTORE when the store could not record it (nothing is changed).
 */
int adapt_abort(struct adapt *a, int64_t id, const char *who);

/*
 * Creates or updates the trigger (probe, kind): kind one of "qta", "load", "lost",
 * "divergence", "cv"; threshold NAN = the kind's default; fire_after and clear_after in
 * [1, 1000]. A disabled trigger clears. Written to the store first. DQ_EINVAL, DQ_ERANGE,
 * DQ_EFULL, DQ_ESTORE.
 */
int adapt_set_trigger(struct adapt *a, const char *probe, const char *kind, double threshold,
                      int fire_after, int clear_after, int enabled);

/* A trigger's settings, for updates that leave some out. */
struct adapt_trigger_info {
    double threshold; /* NAN: the kind's default */
    int fire_after, clear_after, enabled, fired;
};

/* Fills *out for the trigger (probe, kind); DQ_ENOTFOUND when there is none, DQ_EINVAL
 * for an unknown kind. */
int adapt_trigger_get(const struct adapt *a, const char *probe, const char *kind,
                      struct adapt_trigger_info *out);

/* DQ_OK when kind names a trigger kind, DQ_EINVAL with the list otherwise. */
int adapt_trigger_kind_check(const char *kind);

/*
 * The open investigation that holds `probe` (searching at it, or it enabled the probe and
 * has not released it yet): its id, 0 when none. A probe held so cannot be deleted.
 */
int64_t adapt_probe_holder(const struct adapt *a, const char *probe);

/* Forgets the triggers on `probe` (its rows in the store go with the probe's). Returns how
 * many there were. */
int adapt_forget_probe(struct adapt *a, const char *probe);

/* The verdicts an investigation can close with (the last, "other", counts anything else). */
#define ADAPT_VERDICT_KINDS 7
extern const char *const adapt_verdict_names[ADAPT_VERDICT_KINDS];

/* Investigations closed since start with verdict adapt_verdict_names[i], into counts[i]. */
void adapt_verdict_counts(const struct adapt *a, uint64_t counts[ADAPT_VERDICT_KINDS]);

/* Searching investigations (open: no verdict yet). */
int adapt_open_investigations(const struct adapt *a);

/* The instances and windows a probe needs before the loop decides on it (the options
 * min_instances and min_windows), for the status: what a window must hold to count. */
void adapt_min_sample(const struct adapt *a, uint64_t *instances, uint32_t *windows);

/* One trigger as adapt_triggers_each lists it (strings valid during the call). */
struct adapt_trigger_view {
    const char *probe, *kind;
    int enabled, fired;
};

/* Calls fn for every trigger, in the order they were made. */
void adapt_triggers_each(const struct adapt *a,
                         void (*fn)(void *ctx, const struct adapt_trigger_view *t), void *ctx);

/* Fills *st. */
void adapt_get_stats(const struct adapt *a, struct adapt_stats *st);

/*
 * 1 while an investigation uses probe p: its node or focus, a probe it enabled (owns), or
 * a child its search reads (a named child of its focus), for as long as it holds its
 * probes (searching, or closed and not yet released). The core's auto-ranging asks before
 * changing a probe's grid (core_set_range_veto; ctx is the struct adapt): a search must
 * not see the grid move under it. A read of the committed state, nothing changes.
 */
int adapt_probe_in_use(void *ctx, const struct probe *p);

#endif /* DQ_ADAPT_H */
