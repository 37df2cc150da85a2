/*
 * adapt_internal.h: what the adaptive loop's files share. Nothing outside controller/adapt/
 * includes it. The decisions themselves are search/'s (dq_search.h): these files gather
 * the statistics they need from the core's windows, ask search, and record and act on the
 * answer.
 *
 *   adapt.c        the round: decide → persist → act, retries, silent sources, person
 *                  actions (diagnose, abort)
 *   plan.c         a round's next state and its effects; persisting and acting on them
 *   triggers.c     triggers with hysteresis
 *   snapshots.c    ΔQs around a firing
 *   gather.c       a probe's statistics over windows, the node check's inputs, the search
 *                  input of an investigation's focus, the node split's
 *   investigate.c  investigations: open, observe, characterise, one search step
 *   verdict.c      recording a step's outcome: descend, verdicts and their evidence
 *   overload.c     overload investigations: the stages' measurements, one overload step
 *   deescalate.c   after the verdict: release, de-escalation, a cause that moves
 *   resume.c       the state rebuilt from the store at start
 */
#ifndef DQ_ADAPT_INTERNAL_H
#define DQ_ADAPT_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "adapt.h"
#include "dq_search.h"
#include "log.h"

#define ADAPT_MAX_TRIGGERS 1024
#define ADAPT_MAX_INVESTIGATIONS 32
#define ADAPT_MAX_SNAPSHOTS 16
#define ADAPT_MAX_OWNED 1024 /* probes one investigation may have enabled */
#define ADAPT_SNAPSHOT_PROBES 16
#define ADAPT_MAX_CULPRITS 4 /* culprits one investigation names */
#define ADAPT_MAX_EPISODES                                                                         \
    32 /* problems remembered: open ones, and closed ones still in the rings */

/* Older baselines, kept for a person who asks late (a problem older than the ring is in its
 * baseline): one every ADAPT_REF_EVERY windows, the newest ADAPT_REFS of them. */
#define ADAPT_REFS 10
#define ADAPT_REF_EVERY SEARCH_BASELINE_SPAN

_Static_assert(PROBES_NAME_MAX == SEARCH_NAME_MAX, "a stage's name is a probe's name");

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
    int64_t bad_from; /* the first window of the current run of bad ones */
    /* fired while investigation waits_for searched at its probe: its problem is left to
     * that one while it lasts (0: none; not kept across a restart) */
    int64_t waits_for;
};

/* The baselines of a problem's probes as they were when it began (baseline.c): immutable,
 * shared between copies of the state. */
struct base_snap {
    char probe[PROBES_NAME_MAX + 1];
    struct search_stats s; /* pooled windows before the problem (s.observed = obs) */
    struct dq *obs;        /* their aggregated observed ΔQ */
    double means[SEARCH_MAX_WINDOW_MEANS];
    int n_means;
};
struct base_set {
    int refs;
    int n;
    struct base_snap snap[];
};

/*
 * A problem at `node` (a fired trigger's, or a person's investigation's) from window `from`
 * until `to` (INT64_MAX while open): the windows in between, of node and everything below
 * it in the diagram, are never baseline, and while it is open the baselines of those
 * probes are the ones they had when it began (bases; NULL once closed).
 */
struct episode {
    char node[PROBES_NAME_MAX + 1];
    int64_t from, to;
    int64_t trigger_id, inv_id; /* who holds it open (one of them) */
    struct base_set *bases;
};

/* The ΔQs of a probe and its neighbours around a trigger, being collected. */
struct snapshot {
    int64_t id; /* provisional (< 0) until its round commits */
    int64_t fire_wid;
    int after_left; /* windows still to collect after the firing */
    char probes[ADAPT_SNAPSHOT_PROBES][PROBES_NAME_MAX + 1];
    int n_probes;
};

enum inv_state { INV_SEARCHING, INV_CLOSED };

/* One investigation in memory; its log is in the store. */
/* Why a child is kept to be searched in turn (investigation.alt_kind). */
enum { ALT_CHOICE = 0, ALT_TIE = 1, ALT_EXPLORED = 2 };

struct investigation {
    int64_t id; /* provisional (< 0) until its round commits */
    enum inv_state state;
    char node[PROBES_NAME_MAX + 1];  /* where the problem was seen */
    char focus[PROBES_NAME_MAX + 1]; /* the node being refined now */
    char verdict_node[PROBES_NAME_MAX + 1];
    char verdict[16];            /* closed: its verdict */
    enum search_problem problem; /* meaningful once mode is not OBSERVE */
    /* what it does (dq_search.h): a person's starts by observing its node (OBSERVE) until
     * the node has the samples to tell what is abnormal; a trigger's starts searching */
    enum search_mode mode;
    int overload_asked; /* opened as an overload investigation (a person asked, or a load
                           trigger): it weighs the stages once its problem is decided */
    enum search_strategy_id strategy;
    int64_t trigger_id; /* 0: started by a person */
    int64_t hyp_id;     /* the current hypothesis (at focus) */
    struct search_state st;
    int64_t eval_from; /* windows ≥ this count for the current evaluation */
    int windows_waited;
    /* a person's diagnosis watching its node before it says healthy (search_watch_wanted):
     * from this window on (0: not watching), what was within reach, and done once looked */
    int64_t watch_from;
    char watch_why[240];
    int watch_done;
    int quiet;       /* closed: windows in a row without the problem */
    int untold;      /* closed: windows in a row its culprit had too few instances to judge */
    int unexplained; /* closed: windows in a row its verdict no longer
                        explains its still-fired trigger */
    double verdict_value, runner_value; /* localized: the contributions at the verdict */
    double verdict_hw;                  /* … and the half-width of the culprit's (95 %) */
    /* … weighed on this node alone against the others (adapt__scope_to_node; "": over all
     * nodes), as the re-checks weigh it again; scoping: set while such a decision is acted on */
    char verdict_on[PROBES_LABEL_MAX];
    const char *scoping;
    int64_t recheck_wid; /* closed: when its verdict was last re-checked */
    int recheck_holds;   /* … and what that said (1 holds, 0 not) */
    int recheck_rules;   /* … the rules it held by so far (bits, deescalate.c) */
    int paused;
    int load_looks; /* the looks taken so far at whether its latency rises with the arrivals */
    struct overload_prev *ov_prev; /* overload: the stages of the levels above its focus */
    int released;                  /* its probes were released (or handed over): it is done */
    struct search_confirm confirm; /* the verdict waiting for confirmation */
    double shape_level;            /* shape: the level at which the node's mass moved */
    double tail_at; /* variance found in the tail: its baseline's largest instance (0: not) */
    int tail_quiet; /* … closed: the quiet windows its release needs (0: not yet reckoned) */
    /* every culprit (culprits.c): those found so far, each with the sibling it is judged
     * against when it has no baseline of its own ("" when it has one) */
    char culprits[ADAPT_MAX_CULPRITS][PROBES_NAME_MAX + 1];
    char culprit_ref[ADAPT_MAX_CULPRITS][PROBES_NAME_MAX + 1];
    int n_culprits;
    char culprit_parent[PROBES_NAME_MAX + 1]; /* the first culprit's parent */
    char also[160]; /* other problems the node check saw ("variance, divergence") */
    /* a child searched in turn when the one taken, alt_from, ends without a culprit ("" when
     * none; verdict.c), why (alt_kind): a choice whose branches were weighed without
     * baselines of their own (shape by the mass beyond a level), two children near a tie
     * that hold most of the node's change, or, after a culprit, the subtree searched already
     * (the rest of the change is looked for elsewhere first); alt_tried once it is (reset
     * by every culprit found: the search goes on afresh) */
    char alt[PROBES_NAME_MAX + 1];
    char alt_from[PROBES_NAME_MAX + 1];
    int alt_tried;
    int alt_kind;
    int alt_inconclusive; /* … and alt_from, searched, ended inconclusive (not diffuse) */
    /* after a culprit, the search for the rest from the node went into rest_from: the
     * node's runner-up child then (rest_alt), searched in turn when rest_from's subtree,
     * its own kept alternative included, holds no culprit ("" when none; verdict.c);
     * rest_tried once it is (reset by every culprit found) */
    char rest_alt[PROBES_NAME_MAX + 1];
    char rest_from[PROBES_NAME_MAX + 1];
    int rest_tried;
    char (*owned)[PROBES_NAME_MAX + 1]; /* probes this investigation enabled */
    int n_owned, cap_owned;
};

/* What a round may change: copied at its start, kept when it commits. */
/* The baselines of every enabled probe of the diagram before window wid (take_bases's). */
struct adapt_ref {
    int64_t wid;
    struct base_set *bases;
};

struct adapt_state {
    struct trigger *triggers; /* n_triggers used, cap_triggers allocated */
    int n_triggers, cap_triggers;
    struct snapshot snaps[ADAPT_MAX_SNAPSHOTS];
    int n_snaps;
    struct investigation *inv[ADAPT_MAX_INVESTIGATIONS];
    int n_inv;
    struct episode episodes[ADAPT_MAX_EPISODES];
    int n_episodes;
    struct adapt_ref refs[ADAPT_REFS]; /* oldest first */
    int n_refs;
    uint64_t last_instances; /* instances_total at the previous window */
    double rate;             /* instances per second over the last window */
    int congested;
};

struct adapt {
    struct adapt_env env;
    struct search_params params;
    struct adapt_options opt;
    struct adapt_state st; /* as committed */
    int64_t pending_wid;   /* the oldest window not decided yet (−1: none) */
    uint64_t rounds, rounds_failed, windows_skipped;
    int64_t tracked; /* the real id of the last round's plan.track (0: none) */
    uint64_t verdicts[ADAPT_VERDICT_KINDS]; /* closed since start, by adapt_verdict_names */
};

/* Counts one investigation closed with `verdict` (after its round committed). */
void adapt__count_verdict(struct adapt *a, const char *verdict);

/* ---- a round: plan.c ---------------------------------------------------------------------- */

enum effect_kind {
    FX_TRIGGER_STATE, /* id: trigger; n1 fired, n2 bad, n3 good */
    FX_INV_OPEN,      /* id: new investigation; s: node, problem, strategy, origin, who;
                         ref: trigger */
    FX_INV_CLOSE,     /* id: investigation; s: verdict, node, summary json */
    FX_INV_PROBLEM,   /* id: investigation; s: problem */
    FX_HYP,           /* id: new hypothesis; ref: investigation, ref2: parent; s: node,
                         kind, action, probes json, stats json, verdict */
    FX_HYP_VERDICT,   /* id: hypothesis; s: verdict */
    FX_SNAP_OPEN,     /* id: new snapshot; ref: trigger, ref2: investigation; s: probe,
                         reason; n1 time (ns), n2 windows */
    FX_SNAP_DQ,       /* id: snapshot; s: probe; n1 kind, n2 start, n3 end; dq */
    FX_SNAP_COMPLETE, /* id: snapshot */
    FX_EVENT,         /* s: kind, detail json */
    FX_CHANGE,        /* change (its hypothesis may be provisional: ref) */
    FX_WEBHOOK,       /* s: event; payload; ref: investigation put in as "investigation"
                         when n1 is 1 (null when ref is 0) */
    FX_LOG,           /* n1 level; ref: investigation named first when non-zero; s: text */
};

#define FX_STRINGS 6

struct effect {
    enum effect_kind kind;
    int64_t id, ref, ref2; /* rows: provisional (< 0) or real (> 0), 0 none */
    int64_t n1, n2, n3;
    char *s[FX_STRINGS]; /* owned */
    const struct dq *dq; /* borrowed from a ring (valid until the next window closes) */
    json_t *payload;     /* owned */
    struct core_change change;
};

/* One round: the state it computes and the effects that will make it so. */
struct plan {
    struct adapt *a;
    struct adapt_state next;
    struct effect *fx;
    size_t n_fx, cap_fx;
    int failed;     /* an allocation failed: the round cannot commit */
    int64_t n_prov; /* provisional ids handed out: −1 … −n_prov */
    int64_t *real;  /* after persist: real id of provisional −(k+1) */
    int64_t upto;   /* windows < upto are the ones this round may read */
    int64_t wid;    /* the window decided, −1 for a person's action */
    int64_t track;  /* a provisional id whose real id the caller wants (a->tracked) */
    struct {        /* probes this round enables or disables */
        struct probe *p;
        int enabled;
    } over[64];
    int n_over;
};

/* Starts a round on a copy of a's state. DQ_ENOMEM. */
int adapt__plan_begin(struct adapt *a, struct plan *pl, int64_t wid, int64_t upto);

/*
 * Persists the effects (inside the caller's transaction): returns DQ_OK or the first store
 * error (every effect is still attempted, each failure counted and logged).
 */
int adapt__plan_persist(struct plan *pl);

/* After the commit: the next state becomes a's state, changes are applied and sent,
 * webhooks and logs emitted. Frees the plan. */
void adapt__plan_act(struct plan *pl);

/* Drops a round (failed or unneeded): frees the next state and the effects. */
void adapt__plan_drop(struct plan *pl);

/* Effects. Each copies its strings and takes the reference to JSON values passed in.
 * Those that create a row return its provisional id (< 0), or 0 when memory failed. */
void adapt__fx_trigger_state(struct plan *pl, const struct trigger *t);
int64_t adapt__fx_inv_open(struct plan *pl, const struct store_investigation *row);
void adapt__fx_inv_close(struct plan *pl, int64_t inv, const char *verdict, const char *node,
                         json_t *summary);
void adapt__fx_inv_problem(struct plan *pl, int64_t inv, const char *problem);
int64_t adapt__fx_hyp(struct plan *pl, int64_t inv, int64_t parent, const char *node,
                      const char *kind, const char *action, json_t *probes, json_t *stats,
                      const char *verdict);
void adapt__fx_hyp_verdict(struct plan *pl, int64_t hyp, const char *verdict);
/* Hypothesis hyp's stats name investigation inv under "to" (a handover): written with its
 * real id when the row is stored, since inv may be provisional in this round. */
void adapt__fx_hyp_to(struct plan *pl, int64_t hyp, int64_t inv);
int64_t adapt__fx_snap_open(struct plan *pl, const struct store_snapshot *row);
void adapt__fx_snap_dq(struct plan *pl, int64_t snap, const char *probe, enum store_kind kind,
                       int64_t start_ns, int64_t end_ns, const struct dq *q);
void adapt__fx_snap_complete(struct plan *pl, int64_t snap);
void adapt__fx_event(struct plan *pl, const char *kind, const char *probe, const char *detail_json);
/* A probe enabled (dmax_ms > 0: given that dMax first) or disabled for hypothesis hyp. */
void adapt__fx_change(struct plan *pl, enum core_change_kind kind, struct probe *p, double dmax_ms,
                      int bins, int64_t hyp);
void adapt__fx_webhook(struct plan *pl, const char *event, json_t *payload, int with_inv,
                       int64_t inv);
void adapt__fx_log(struct plan *pl, int level, int64_t inv, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Whether p is enabled once this round's changes are made, and how many probes are. */
int adapt__plan_enabled(const struct plan *pl, const struct probe *p);
size_t adapt__plan_enabled_count(const struct plan *pl);

/* ---- state ---------------------------------------------------------------------------- */

/* Copies src into *dst (deep); DQ_ENOMEM. adapt__state_release frees a copy or the state. */
int adapt__state_copy(struct adapt_state *dst, const struct adapt_state *src);
void adapt__state_release(struct adapt_state *s);

struct investigation *adapt__inv_new(void);
/* After a culprit the search goes on afresh from the node: no child kept to be searched in
 * turn (alt, rest_alt), none tried yet (verdict.c, resume.c). */
void adapt__turns_clear(struct investigation *inv);
void adapt__inv_free(struct investigation *inv);
/* Removes and frees st->inv[i]. */
void adapt__inv_remove(struct adapt_state *st, int i);
int adapt__owns(const struct investigation *inv, const char *name);
/* Adds name to inv's owned probes (once); DQ_EFULL at ADAPT_MAX_OWNED, DQ_ENOMEM. */
int adapt__own(struct investigation *inv, const char *name);
/* Removes name from inv's owned probes. */
void adapt__disown(struct investigation *inv, const char *name);

/* The probe called name in the core, or NULL. */
struct probe *adapt__probe(struct adapt *a, const char *name);

/* 1 when probe `name` had no data in the window this round decides (its source
 * disconnected or went silent): such a window says nothing about it, so waits and
 * de-escalations do not count it. 0 for a person's action (no window). */
int adapt__no_data(const struct plan *pl, const char *name);

/* ---- triggers.c -------------------------------------------------------------------------- */

const char *adapt__trigger_kind_name(enum trigger_kind k);
int adapt__trigger_kind_parse(const char *s, enum trigger_kind *k);
/* Evaluates every trigger on window pl->wid; firings open investigations and snapshots. */
void adapt__run_triggers(struct plan *pl);
/* Adds a trigger row read from the store to st. */
int adapt__trigger_load(struct adapt_state *st, const struct store_trigger *row);

/* ---- snapshots.c ------------------------------------------------------------------------ */

/* Starts a snapshot of t's probe and its neighbours (inv: the investigation it opened). */
void adapt__snapshot_start(struct plan *pl, const struct trigger *t, int64_t inv);
/* Adds window pl->wid to every snapshot being collected; completes those that are done. */
void adapt__run_snapshots(struct plan *pl);

/* ---- gather.c ----------------------------------------------------------------------------- */

struct node_stats {
    struct search_stats s;
    struct dq *obs;  /* aggregated observed ΔQ (owned) */
    struct dq *calc; /* aggregated calculated ΔQ (owned) */
    struct dq *base; /* the baseline's aggregated observed ΔQ, when set (owned) */
};

/*
 * Statistics of probe p over its closed windows with from ≤ wid < to: the moments pool
 * every window; the ΔQs are instance-weighted mixtures on the newest grid only (windows
 * from before a dMax change would add their mass as lost). The calculated ΔQ, and the KS
 * distance, use only windows that have both ΔQs, with the same weights on both sides. NULL
 * p gives empty statistics. Release with adapt__node_stats_release.
 */
void adapt__gather(const struct probe *p, int64_t from, int64_t to, struct node_stats *ns);
/* The same without the windows for which skip(ctx, wid) says 1. */
void adapt__gather_where(const struct probe *p, int64_t from, int64_t to,
                         int (*skip)(void *ctx, int64_t wid), void *ctx, struct node_stats *ns);
void adapt__node_stats_release(struct node_stats *ns);

/* A node's statistics as JSON (new reference). */
json_t *adapt__stats_json(const char *name, const struct search_stats *s);

/* The node check (search_check) of probe p over its windows since `from`: the last
 * SEARCH_RECENT_WINDOWS before pl->upto, then twice and four times as many when those show
 * nothing (three looks, each at search_z_looks(3)), each against the baseline before it;
 * with no baseline before them, the last SEARCH_RECENT_WINDOWS and, when they show
 * nothing, up to SEARCH_BASELINE_WINDOWS of "now". Baselines are
 * adapt__baseline's. rfrom (may be NULL): the first window of the range c judged. */
void adapt__check_node(struct plan *pl, const struct probe *p, int64_t from, struct search_check *c,
                       int64_t *rfrom);
/* A person's late look: the last 4·SEARCH_RECENT_WINDOWS windows (since `from`) against
 * p's oldest kept baseline (adapt__ref_baseline: its window into *wid, its set into
 * *bases), at the threshold of one more look than adapt__check_node's. 0 when p has no
 * such baseline (c untouched). */
int adapt__check_older(struct plan *pl, const struct probe *p, int64_t from, struct search_check *c,
                       int64_t *rfrom, int64_t *wid, struct base_set **bases);
json_t *adapt__check_json(const char *node, const struct search_check *c);
/* The same horizons at z SEARCH_Z_SUGGESTIVE: 1 when one of them finds something, with the
 * first problem found in *found. */
int adapt__check_suggestive(struct plan *pl, const struct probe *p, int64_t from,
                            struct search_found *found);
/* The check over the last `horizon` windows at the threshold of SEARCH_WATCH_LOOKS looks
 * (a watched diagnosis's last look, dq_search.h). */
void adapt__check_watched(struct plan *pl, const struct probe *p, int64_t from, int horizon,
                          struct search_check *c, int64_t *rfrom);

/* search_load_rose over search_load_of of p's windows with instances before pl->upto (each
 * with the no-data windows right before it, probes_no_data), with the check c (may be
 * NULL) and `looks` as there. */
int adapt__load_rose(struct plan *pl, const struct probe *p, const struct search_check *c,
                     int looks, char *why, size_t cap);

/* The search input for the focus of an investigation. */
struct focus_input {
    struct search_input in;
    struct search_child kids[SEARCH_MAX_CHILDREN];
    struct node_stats kstats[SEARCH_MAX_CHILDREN];
    struct node_stats xstats;
    int kid_nodes[SEARCH_MAX_CHILDREN];
};

/* Fills fi for inv's focus over windows ≥ from (DQ_ENOTFOUND, DQ_EINVAL); release with
 * adapt__focus_input_release. */
int adapt__build_input(struct plan *pl, const struct investigation *inv, int64_t from,
                       struct focus_input *fi);
/* How many passes of probe over its closed windows ≥ from lay beyond `at` (s): successes
 * beyond it and every pass past dMax; *windows the windows counted; −1 (windows untouched)
 * when it has no success there. */
int adapt__passes_beyond(struct plan *pl, const char *probe, int64_t from, double at, int *windows);
void adapt__focus_input_release(struct focus_input *fi);

/* An evaluator of the diagram with every probe on its own grid (NULL: no diagram, no
 * probe, or no memory). */
struct dq_eval *adapt__what_if_eval(struct adapt *a, const struct dq_diagram *g);

#define ADAPT_MAX_SPLIT (PROBES_MAX_NODES + 1)

/* The nodes (Erlang nodes, hosts) that report probe `name`, as children of a search input
 * for the node split over windows ≥ from: each node's statistics, weights by instances,
 * and `include` set for those with params.min_instances. Returns the number of nodes
 * (0 when the probe is not split). */
int adapt__gather_nodes(struct plan *pl, const char *name, int64_t from, struct search_child *kids,
                        unsigned char *include, int *weighed);
/* fi (adapt__build_input's) weighed on node `on` alone: the focus's and every child's
 * statistics there over windows ≥ from, each against the same probe on the other nodes as
 * its baseline (their excess over them: a step slowed on one node of many), and the
 * problem per-node moments can weigh (a QTA, a divergence or a shape by the means). 1 when
 * done; 0, fi unchanged, when `on` or no other node reports the focus or one of them.
 * fi->kstats keep what they own (release fi as before). */
int adapt__scope_to_node(struct plan *pl, struct focus_input *fi, const char *on, int64_t from);

/* ---- investigate.c --------------------------------------------------------------------- */

/* How an investigation opens. */
struct adapt_open {
    const char *node;
    int problem; /* an enum search_problem, or −1: decided from the node's data */
    enum search_strategy_id strategy;
    int64_t trigger_id;      /* 0: a person */
    const char *who;         /* the person (free text) or NULL */
    int64_t follows;         /* the investigation this one supersedes or waited for, 0 none */
    const char *why;         /* … and why */
    int overload;            /* an overload investigation (a person asked, or a load trigger) */
    const char *problem_why; /* why the problem is not the trigger's own, or NULL */
};

/* The problem kind of inv as stored ("unknown" until it is decided). */
const char *adapt__problem_name(const struct investigation *inv);
/* A hypothesis of inv (its problem kind). Returns its provisional id, 0 on no memory. */
int64_t adapt__hypothesis(struct plan *pl, const struct investigation *inv, int64_t parent,
                          const char *node, const char *action, json_t *probes, json_t *stats,
                          const char *verdict);
/* The searching investigation opened at node, or NULL. */
struct investigation *adapt__investigation_at(struct adapt_state *st, const char *node);
/* 1 when an investigation of trigger trigger_id localized a culprit and still holds its
 * probes (not released): the problem of a trigger that cleared is not over yet. */
int adapt__trigger_held(const struct adapt_state *st, int64_t trigger_id);
/* 1 while investigation o may explain another trigger's problem at its node (a trigger that
 * fired while it searched waits for it: triggers.c): it searches, or its localized or
 * overload verdict keeps its probes. */
int adapt__inv_may_explain(const struct investigation *o);

/* A trigger's problem (its episode: baselines frozen) ends when the trigger is fired no
 * more and its node is back to normal against the baseline from before it at every
 * horizon of the node check, up to 20 windows (while a localized verdict of it holds its probes,
 * when that investigation lets them go), when the trigger is disabled, or once it has stayed clear
 * this many windows (a node whose normal moved for good). Called every round, after the
 * investigations. */
#define EPISODE_CLEAR_WINDOWS (4 * SEARCH_BASELINE_WINDOWS)
void adapt__episodes_settle(struct plan *pl);
/* Opens an investigation (NULL: failed, dq_last_error() says why). */
struct investigation *adapt__open(struct plan *pl, const struct adapt_open *o);
/*
 * A person's investigation starts observing its node: returns 1 when the node has recent
 * statistics (it can be characterised at once: call adapt__step), else enables it, with
 * its children when the budget allows (an "enable" hypothesis), and returns 0.
 */
int adapt__observe_start(struct plan *pl, struct investigation *inv);
/* 1 when s has the minimum samples of the loop's parameters. */
int adapt__check_enough(const struct plan *pl, const struct search_stats *s);
/* One step of an investigation: observing (characterise once there are samples) or
 * searching (expand, wait, decide). */
void adapt__step(struct plan *pl, struct investigation *inv);
/* Sets the focus of an investigation and starts its search there (upto: first window not
 * closed yet). */
void adapt__focus_on(struct adapt *a, struct investigation *inv, const char *node, int64_t hyp,
                     int64_t upto);
/* SEARCH_ENABLE: expand the focus with the step's children, unless the budget says pause. */
void adapt__expand(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                   const struct search_step *step);
/* 1 when a round's step of inv has the window it needs: the focus and its enabled children
 * had data (else the search waits, and the window does not count); counts the window. */
int adapt__window_counts(struct plan *pl, struct investigation *inv, const struct focus_input *fi);

/* ---- verdict.c ------------------------------------------------------------------------------ */

/* Closes inv with a verdict (node: where, NULL for none) and its evidence (taken). */
void adapt__close(struct plan *pl, struct investigation *inv, const char *verdict, const char *node,
                  json_t *evidence);
/* Closes inv "aborted" with dq_last_error() and releases what it enabled. */
void adapt__aborted_on_error(struct plan *pl, struct investigation *inv);
/* Closes inv healthy (reason: one sentence) and releases what it enabled at once. */
void adapt__healthy(struct plan *pl, struct investigation *inv, const char *reason,
                    json_t *evidence);
/* A search verdict of inv's focus (search_result r over fi): descend, or close with it. */
void adapt__decided(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                    const struct search_result *r);
/* The attribution behind r as JSON (new reference). */
json_t *adapt__attribution_json(const struct search_input *in, const struct search_result *r);
/* Inconclusive without data at inv's node: the sentence (with the check's counts). */
void adapt__inconclusive_no_data(struct plan *pl, struct investigation *inv,
                                 const struct search_check *c);

/* ---- overload.c ---------------------------------------------------------------------------- */

/* The stages an overload investigation weighed at the levels above its focus (all but the
 * one it descended into), shared between copies of the investigation (immutable). */
struct overload_prev {
    int refs;
    int n;
    struct search_stage st[];
};
struct overload_prev *adapt__overload_prev_ref(struct overload_prev *p);
void adapt__overload_prev_unref(struct overload_prev *p);
/* The stages of an "overload" object (a descent's, as stored) but `descended`, without
 * their ΔQs: what a resumed investigation carries down (NULL on no memory). */
struct overload_prev *adapt__overload_prev_from_json(const json_t *overload, const char *descended);

/*
 * One step of an overload investigation: the focus's children (enabled as the `children`
 * strategy does, with SEARCH_OVERLOAD_MIN_WINDOWS windows each) are its stages, weighed
 * with the stages of the levels above; a lone bottleneck with finer probes is descended
 * into, otherwise the verdict is `overload`, with every stage's numbers.
 */
void adapt__overload_step(struct plan *pl, struct investigation *inv, struct focus_input *fi);

/* ---- deescalate.c ------------------------------------------------------------------------- */

/*
 * Disables every probe inv owns that is enabled, not always on and not needed by another
 * investigation (searching, or closed with its problem still there): a "disable"
 * hypothesis with `reason`, and the changes. Marks inv released (removed at the end of
 * the round).
 */
void adapt__release(struct plan *pl, struct investigation *inv, const char *reason);
/* Disables the probes inv enabled below diagram node `node` that nothing else holds (a
 * branch searched and left), under a "disable" hypothesis whose parent is hyp_parent. */
void adapt__release_below(struct plan *pl, struct investigation *inv, const char *node,
                          int64_t hyp_parent, const char *reason);
/* One window of a closed investigation: its problem still there, superseded, or gone for
 * deescalate_windows windows (then released). */
void adapt__deescalate(struct plan *pl, struct investigation *inv);
/* Removes the released investigations from st. */
void adapt__sweep(struct adapt_state *st);

/* "12 ms ± 1 ms", "4.1 ms² ± 0.6 ms²", "8 % ± 1.2 %": an amount of problem p (seconds, s²
 * or a lost fraction) with its half width hw (NAN: the amount alone), in the one style of
 * dq_format_duration (verdict.c). */
void adapt__amount_pm(enum search_problem p, double v, double hw, char *buf, size_t cap);

/* ---- culprits.c --------------------------------------------------------------------------- */

/* 1 when a culprit found now would let the search go on for the rest of the node's change
 * (a mean-type problem, the node's change against its baseline known): what searching two
 * children near a tie one after the other needs (verdict.c). */
int adapt__culprits_can_go_on(struct plan *pl, const struct investigation *inv);

/* 1 when diagram node i is one of inv's culprits found so far or lies above one (g may be
 * NULL: 0). */
int adapt__on_culprit_path(const struct dq_diagram *g, const struct investigation *inv, int i);

/*
 * A localized verdict at `culprit` (its runner-up sibling `runner`, the reference when it
 * has no baseline of its own): how much of the change at inv's node the culprits found so
 * far explain, through the diagram with each put back to its reference (a what-if). When a
 * material part remains unexplained, the search goes on from the node for another culprit
 * (a "culprit" hypothesis; returns 1); otherwise ev gets "culprits" (each with the share it
 * explains) and "unexplained", reason a sentence, and the verdict closes (returns 0). A
 * culprit after the first that explains less than a tenth of the change, and does not end
 * the lateness that made the search go on, is taken back: reason says why, and the caller
 * ends the search as when it finds no other culprit (returns −1; ev not taken).
 */
int adapt__culprit_found(struct plan *pl, struct investigation *inv, const char *culprit,
                         const char *runner, json_t *ev, char *reason, size_t cap);
/* The search found nothing more after culprits: ev and reason say which were found; returns
 * the first culprit (the verdict's node), or NULL when there are none. */
const char *adapt__culprits_close(struct plan *pl, struct investigation *inv, json_t *ev,
                                  char *reason, size_t cap);
/* While inv searches for another culprit: each child's mean in fi less what the culprits
 * found put into it (the what-if's difference), weighed as a latency problem, so that the
 * search weighs the rest. */
void adapt__culprits_adjust(struct plan *pl, const struct investigation *inv,
                            struct focus_input *fi);

/* ---- baseline.c ------------------------------------------------------------------------ */

/* ALT_CHOICE … from its name in a descend hypothesis ("choice", "tie", "explored"). */
int adapt__alt_kind(const char *name);

/* 1 when probe `name` is node i of diagram g or below it. */
int adapt__below(const struct dq_diagram *g, int i, const char *name);

/* Opens the problem of trigger_id or inv_id (one of them non-zero) at node from window
 * `from`, taking the baselines of node and the enabled probes below it as they are; once
 * per owner. */
void adapt__episode_open(struct plan *pl, const char *node, int64_t from, int64_t trigger_id,
                         int64_t inv_id);
/* The problem of a trigger found fired at start, or of a person's investigation that
 * decided its problem (the rings are empty: no baselines; windows from `from` on are
 * never baseline). */
void adapt__episode_resume(struct adapt_state *st, const char *node, int64_t from,
                           int64_t trigger_id, int64_t inv_id);
/* Closes it (its windows stay out of baselines while the rings hold them). */
void adapt__episode_close(struct plan *pl, int64_t trigger_id, int64_t inv_id);
/* Forgets it, as if it had never been opened: its windows count in baselines again (a
 * person's watch that found no problem: investigate.c). */
void adapt__episode_drop(struct plan *pl, int64_t trigger_id, int64_t inv_id);
/* The first window of the open problem of trigger_id or inv_id; −1 when none. */
int64_t adapt__episode_from(const struct adapt_state *st, int64_t trigger_id, int64_t inv_id);
/* Forgets closed problems whose windows have left every ring. */
void adapt__episodes_sweep(struct plan *pl);
/* Every ADAPT_REF_EVERY windows, keeps the baselines of the diagram's enabled probes as
 * they are now (the oldest of ADAPT_REFS is let go). */
void adapt__refs_take(struct plan *pl);
/* The oldest kept baseline of p that ends at least SEARCH_BASELINE_SPAN windows before
 * now: into *ns (and means), its window into *wid and its set into *bases (borrowed);
 * 0 when there is none. */
int adapt__ref_baseline(struct plan *pl, const struct probe *p, struct node_stats *ns,
                        double *means, int *n_means, int64_t *wid, struct base_set **bases);
/* adapt__episode_open with the baselines given (bases: a reference is taken). */
void adapt__episode_open_ref(struct plan *pl, const char *node, int64_t from, int64_t inv_id,
                             struct base_set *bases);
/* Releases the references of a state's episodes (state copies take their own). */
void adapt__episodes_release(struct adapt_state *st);
void adapt__episodes_ref(struct adapt_state *st);

/*
 * The baseline of probe p for a range that starts at window `end`: when an open problem
 * covers p (at p or above it) and began before `end`, p's baseline from when it began
 * (none when p had none then: a probe enabled after the problem began is judged against its
 * siblings); otherwise p's windows in [end − SEARCH_BASELINE_SPAN, end) that no problem
 * covered. Fills ns (release with adapt__node_stats_release) and, when means is not NULL,
 * the windows' means (at most SEARCH_MAX_WINDOW_MEANS). Returns 1 when it is a frozen one.
 */
int adapt__baseline(struct plan *pl, const struct probe *p, int64_t end, struct node_stats *ns,
                    double *means, int *n_means);

/* Whether the failures break probe p's QTA over its windows from `from` to the plan's last
 * (search_qta_lost, against p's baseline before `from` when it has SEARCH_BASELINE_WINDOWS
 * of them): then its problem is followed as lost mass. why (may be empty) says so. 0 for a
 * probe without a QTA. */
int adapt__qta_lost(struct plan *pl, const struct probe *p, int64_t from, char *why, size_t cap);

/* ---- resume.c ----------------------------------------------------------------------------- */

/* Rebuilds triggers and investigations from the store into a->st. */
int adapt__resume(struct adapt *a);

#endif /* DQ_ADAPT_INTERNAL_H */
