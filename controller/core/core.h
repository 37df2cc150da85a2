/*
 * core.h: what dqd observes, and the one place that changes a probe.
 *
 * Two parts. The probe table (struct probe_table, probes_*) turns outcome instances into
 * windows; struct core (core_*) holds the table with the loaded outcome diagram and its
 * evaluator, closes windows (observed ΔQs, then calculated ones through the diagram),
 * writes their summaries, keeps every probe's dMax and grid in step with the evaluator,
 * and makes every change to a probe (enable, disable, dMax, QTA, start/stop): it records
 * the change in the store, then hands the command to the sources that can carry it.
 * Sources (controller/ingest/) register here; core never does network I/O itself.
 *
 * ---- the probe table ----------------------------------------------------------------
 *
 * Every outcome instance that ingest accepts lands here: its probe is found by name in
 * an open-addressing hash table (registered on first sight, the only allocation), its
 * duration is binned in place into the histogram of the window its END falls in, and the
 * exact moments of that window (count per status, Σd, Σd², min, max) are updated. Nothing
 * on this path allocates or calls into the engine.
 *
 * Windows are aligned to the wall clock: window w holds instances whose END lies in
 * [w·P, (w+1)·P). A window is closed L after its end (the lag), so up to
 * ceil(L/P) + 2 windows are open at once; each probe has that many histogram slots,
 * reused round-robin. At close, each probe's slot becomes an observed ΔQ (engine) that
 * joins the probe's ring of the last W closed windows; the slot is cleared.
 *
 * Every instance carries its *origin*: the connection of a source it came from (a small
 * integer the table hands out, see "origins" below). The probe keeps the origin it last
 * heard from, and each source tells the table when a connection closes and when it last
 * received anything. At each window close, an enabled probe with no instance in the
 * window is then either *quiet* (its source is alive and simply had nothing to report) or
 * *no data* (its source disconnected or went silent): see probes_no_data. When one probe
 * hears from two or more nodes (Erlang nodes, or hosts for legacy links), the table also
 * keeps its window moments per node (probes_node_*), so a diagnosis can tell one sick
 * node among several.
 *
 * One table per daemon, used from the loop thread only.
 */
#ifndef DQ_CORE_H
#define DQ_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "clock.h"
#include "diagram.h"
#include "dq.h"
#include "store.h"
#include "wire.h"

#define PROBES_NAME_MAX 255
#define PROBES_MAX_SLOTS 64 /* open windows per probe: lag ≤ 59 windows */
/* Open windows beyond those the lag needs: room for what sources sent while dqd did not
 * run (stopped, or its machine stalled), read before the windows due meanwhile close. */
#define PROBES_STALL_WINDOWS 3
/* Prometheus buckets: le = 2^j ms for j = −6 … 12 (15.625 µs … 4.096 s), the widths a
 * probe's grid can have, fixed so that a dMax change never relabels counts. */
#define PROBES_HIST_BUCKETS 19
#define PROBES_QUIET 8              /* quiet windows a probe keeps */
#define PROBES_BUSY_SEGMENTS 8      /* busy segments a window keeps open to merge */
#define PROBES_QUIET_MIN_OK 30      /* ok instances a window needs to be one */
#define PROBES_LABEL_MAX 160        /* bytes of an origin's label, with the NUL */
#define PROBES_MAX_NODES 8          /* named nodes a probe is split by; more are pooled */
#define PROBES_NODE_OTHER "(other)" /* the name of the pooled nodes */
#define PROBES_MAX_ORIGINS 65536    /* origins (connections) tracked at once */
#define PROBES_NODATA_WINDOWS 64    /* closed windows whose no-data flag a probe keeps */

enum probe_status { PROBE_OK = 0, PROBE_FA = 1, PROBE_TO = 2 };

/* One closed window of a probe, as kept in its ring. */
struct probe_window {
    int64_t wid;           /* window index: [wid·P, (wid+1)·P) */
    uint64_t ok, fa, to;   /* instances by status */
    uint64_t out;          /* ok instances past the horizon (counted as lost) */
    double mean, variance; /* exact, over ok instances within the horizon, seconds */
    double min, max;       /* seconds; 0 when ok == 0 */
    double busy;           /* seconds the probe had an instance in progress: the union of
                              the intervals of the ok and failed instances that ended in
                              the window (at most the window): a single FIFO server's busy
                              time, whatever its service law */
    uint64_t overtaken;    /* ok and failed instances that began before one that had ended
                              earlier, begun later: concurrency (a single FIFO server never
                              lets a later arrival leave first) */
    struct dq *observed;   /* owned; NULL when the window had no instance */
    struct dq *calculated; /* owned; set by the caller after the diagram ran, or NULL */
    int partial;           /* dqd ran for part of it only: it started in it or after its start
                              (instances sent late), or closed it at its stop (probes_stop) */
};

/* An open window's histogram (internal to the table, exposed for the struct layout). */
struct probe_slot {
    int64_t wid; /* −1 when empty */
    /* the grid its instances are binned on: the probe's when the window's first instance
     * came (a grid change takes effect at a window boundary, never inside one) */
    int k;
    double inv_width_ns;
    int64_t dmax_ns;
    uint64_t ok, fa, to, out;
    double sum, sumsq, min, max;
    /* busy time, the union of the instances' intervals: the newest disjoint segments,
     * sorted (instances arrive about in end order, but one that was overtaken can reach
     * back over several), and the length of those no longer kept */
    int64_t busy_seg[PROBES_BUSY_SEGMENTS][2];
    int busy_n;
    int64_t busy_ns;
    uint64_t overtaken; /* as struct probe_window */
    uint32_t *counts;   /* n entries */
};

struct probe_split;     /* per-node moments of a probe (internal to probes.c) */
struct probe_exemplars; /* exemplars of a probe's windows (internal to exemplars.c) */

#define PROBES_TRACE_LINKS 8 /* connections whose tracer figures a probe keeps */

struct probe {
    char name[PROBES_NAME_MAX + 1];
    size_t name_len;
    uint32_t hash;
    int index; /* position in the table; changes only when another probe is removed */
    /* read by every instance, so next to the hash: the origin node_slot was found for
     * (origin, or none yet), that node's row among the per-node moments (when split), and
     * those moments (see "where instances come from" below) */
    uint32_t node_origin;
    int node_slot;
    struct probe_split *split;  /* owned; NULL until a second node reports the probe */
    struct probe_exemplars *ex; /* owned; NULL until an instance that identifies itself */

    /* settings */
    int enabled;    /* dqd wants instances (a dMax was pushed) */
    int always_on;  /* enabled at start and never disabled by the adaptive loop */
    int passive;    /* fed by a source without commands (OTLP): always observed, enabled
                       and always on from its first instance; costs the loop nothing
                       (1: not stored yet, 2: stored) */
    double dmax_ms; /* deadline pushed to wrappers */
    int dmax_set;   /* 1 once a dMax was configured or set (not the table default) */
    int k, n;       /* grid of the histograms: width 2^k ms, n bins, n·width ≥ dMax */
    double inv_width_ns;
    /* auto-ranging (probes_range_decide): the grid follows what is observed, its width
     * changing at window boundaries with n fixed, dMax = n·width within [min, max] */
    int auto_range;
    double range_min_ms, range_max_ms;
    int range_shrink; /* windows in a row that asked for a finer grid */
    int has_qta;
    struct dq_qta qta;
    int in_diagram;   /* a node of the loaded diagram carries this probe */
    int from_wire;    /* registered by an instance, not by the diagram, config or a person */
    int chosen;       /* enabled by a person, the config or the adaptive loop (not only
                         observed because a passive source feeds it) */
    int64_t last_wid; /* window of its newest instance (eviction takes the oldest first) */
    int servers;      /* servers of the station the probe measures (config), 0 = not set */

    /* A probe bound to a function (config "mfa"): enabling it sends `trace` (the wrapper
     * traces MOD:FUN/ARITY with erlang:trace) instead of set_timeout. "" = not bound.
     * What the wrappers' state lines last said of it (kept in memory only): */
    char mfa[WIRE_MAX_MFA + 1];
    struct probe_trace {
        struct probe_trace_link {
            uint64_t link;    /* the source's id of the connection */
            int installed;    /* its last state listed the pattern as installed */
            uint64_t calls;   /* its last tcalls: calls traced since the wrapper bound it */
            uint64_t dropped; /* its last tdropped */
            double keep;      /* its last sampling fraction (1: every call traced) */
        } per[PROBES_TRACE_LINKS];
        int n_per;
        char refused[65]; /* the last reason a wrapper refused or lost it, "" = none */
    } trace;

    /* its quiet windows: the lowest-rate full windows seen (the low-load baseline of a
     * station's service time), kept across restarts in the store */
    struct probe_quiet {
        int64_t wid;
        double rate; /* instances per second */
        uint64_t n;  /* ok instances */
        double mean; /* seconds, over ok */
        double busy; /* seconds, as struct probe_window */
    } quiet[PROBES_QUIET];
    int n_quiet;
    int quiet_dirty; /* changed since last written to the store */
    /* the end of the busy time the newest closed window counted: an instance of the next
     * window that began before it counts only from there (its wait overlapped the busy time
     * of instances that ended before the boundary, already counted) */
    int64_t busy_prev_wid, busy_prev_hi;
    /* the instance seen with the latest start (overtaking: one that began earlier and ended
     * later was overtaken by it) */
    int64_t last_start, last_start_end;

    /* open windows */
    struct probe_slot *slots; /* table->nslots entries */

    /* closed windows, newest at ring[(head + len − 1) % cap] */
    struct probe_window *ring;
    int ring_head, ring_len, ring_cap;

    /* totals since start, for /metrics */
    uint64_t total_ok, total_fa, total_to, late, total_out;
    double total_sum;                   /* seconds, ok instances */
    uint64_t hist[PROBES_HIST_BUCKETS]; /* per bucket (not cumulative) */

    /* where instances come from (read through probes_silence and probes_node_*) */
    uint32_t origin;     /* the origin last heard from; 0 = none yet */
    uint32_t node_first; /* node of the first origin heard from; 0 = none yet */
    int split_failed;    /* 1: the per-node storage could not be allocated */

    /* no data */
    uint64_t nodata_bits;   /* bit k: window nodata_wid − k was no data */
    int64_t nodata_wid;     /* the newest closed window the bits describe */
    int64_t silent_since;   /* ns: start of the run's first no-data window; 0 = not silent */
    int64_t silent_windows; /* no-data windows in the run */
    uint32_t silent_origin; /* the origin the run's last no-data window was judged by */
    int64_t last_has_wid;   /* the newest closed window with an instance; 0 = none */
    int64_t last_end_ns;    /* END of the newest instance recorded, also one from before a
                               restart (the store keeps it); 0 = none known */
    int origin_dirty;       /* its origin changed since the store last had it */
};

/* How many probe names never seen before a source may still register (a token bucket). */
struct probe_name_bucket {
    double tokens;
    int64_t at_ns; /* when tokens was computed; 0 = full */
};

/* One connection of a source (internal to the table; read with probes_origin_get). */
struct probe_origin {
    int used;           /* the entry is in use (connected, or still named by a probe) */
    int connected;      /* 1 until probes_origin_closed */
    int restored;       /* a connection of dqd's previous run, named by the store */
    char kind[16];      /* what the source calls it ("legacy", "v2", …; "" unknown) */
    uint32_t refs;      /* probes whose origin or silent_origin this is */
    uint32_t node;      /* index in the table's nodes; 0 = none */
    int64_t last_rx_ns; /* when the source last received anything on it; 0 = never */
    int64_t silence_ns; /* > 0: a passive origin (probes_origin_set_passive) */
    char label[PROBES_LABEL_MAX];
    char app[WIRE_MAX_LABEL + 1];
    struct probe_name_bucket names; /* new names, when the origin has no node */
};

/* A node name, interned (internal to the table). */
struct probe_node_name {
    int pinned;       /* a probe keeps it (first node, or one it is split by): never freed */
    uint32_t origins; /* origins naming it */
    char name[WIRE_MAX_LABEL + 1];
    struct probe_name_bucket names; /* new probe names its origins may register */
};

struct probe_table {
    struct probe **probes; /* count entries */
    size_t count, cap;     /* cap = the maximum number of probes */
    int32_t *index;        /* open addressing: probe index or −1; index_size slots */
    size_t index_size;
    int64_t window_ns, lag_ns;
    int nslots;   /* open windows per probe */
    int ring_cap; /* closed windows per probe (W) */
    int default_k, default_n;
    double default_dmax_ms;
    /* auto-ranging of probes without a dMax of their own (probes_set_auto_range) */
    int auto_range;
    double range_min_ms, range_max_ms;
    int64_t next_close; /* the oldest window not yet closed */
    int64_t open_ns;    /* when the table began taking instances (probes_init's now): windows
                           that began before are partial */
    int64_t stop_ns;    /* probes_stop's time: windows closed from then on are partial; 0 */
    /* the window of the last recorded END, so binning needs no division while END stays
     * in it: [cur_lo, cur_lo + window_ns) is window cur_wid, in slot cur_slot. The
     * zeroed table holds window 0 in slot 0, which is correct too. */
    int64_t cur_lo, cur_wid;
    int cur_slot;
    /* the probe last seen per low bits of the name hash: a hit saves the index probe
     * (probes_remove clears the entries of the probe it frees) */
    struct probe *recent[64];
    uint64_t scratch[DQ_MAX_BINS]; /* counts widened for the engine at close */
    /* rejected instances */
    uint64_t late;      /* END in a window already closed */
    uint64_t future;    /* END too far ahead to have an open window */
    uint64_t full;      /* a new name but the table is full (and nothing could be evicted) */
    uint64_t name_rate; /* a new name over its source's or the daemon's rate */
    uint64_t evicted;   /* observed probes evicted to make room */
    uint64_t idle;      /* observed probes removed after idle_windows without an instance */
    /* new names per source (probes_set_name_limit) and of the whole table
     * (probes_set_name_budget) */
    double name_rate_per_s, name_burst;
    double all_rate_per_s, all_burst;
    struct probe_name_bucket all_names;
    int64_t names_now;    /* the newest time a source gave (the daemon's bucket's clock) */
    size_t max_observed;  /* observed probes (probes_evictable but for the veto) at most */
    int64_t idle_windows; /* an observed probe without an instance this long goes; 0: never */
    /* what may not be evicted besides the table's own rules (an investigation's probes) */
    int (*evict_veto)(void *ctx, const struct probe *p);
    void *evict_ctx;
    uint64_t passive_new; /* probes a passive origin made passive (the core stores them) */
    /* the line protocol's own lateness allowance when windows close later for spans
     * (probes_set_line_lag): windows before line_floor are closed to it */
    int line_lag_on;
    int64_t line_lag_ns, line_floor;
    /* dqd's loop last waited for input at awake_ns and expected to run again by wake_by_ns
     * (probes_loop_waits; INT64_MAX: no expectation) */
    int64_t awake_ns, wake_by_ns;
    /* origins and node names; entry 0 of each is unused (0 means none) */
    struct probe_origin *origins;
    uint32_t n_origins, origins_cap; /* entries 1 … n_origins − 1 exist */
    struct probe_node_name *nodes;
    uint32_t n_nodes, nodes_cap;
    uint64_t split_failures; /* per-node storage that could not be allocated */
    /* exemplars kept per probe and window (probes_set_exemplars) */
    int ex_slowest, ex_failed;
    uint64_t ex_failures; /* exemplar storage that could not be allocated */
    /* test hook: the allocator of per-node storage (NULL: calloc) */
    void *(*split_calloc)(size_t n, size_t size);
};

/*
 * Initialises a table for at most `max_probes` probes with windows of window_ns, closed
 * lag_ns after their end, rings of ring_cap closed windows, and the default grid for
 * probes that get no dMax of their own. `now_ns` sets the first window to close.
 * DQ_EINVAL / DQ_ERANGE on bad sizes, DQ_ENOMEM.
 */
int probes_init(struct probe_table *t, size_t max_probes, int64_t window_ns, int64_t lag_ns,
                int ring_cap, double default_dmax_ms, int default_bins, int64_t now_ns);

/* Releases every probe and ΔQ of the table. Safe on a zeroed or failed table. */
void probes_release(struct probe_table *t);

/* The probe called name, or NULL. */
struct probe *probes_find(struct probe_table *t, const char *name, size_t len);

/*
 * The probe called name, registered with the default settings when new. When the table is
 * full, the evictable probe (probes_evictable) heard from least recently makes room
 * (counted in t->evicted): a name the diagram, the config or a person registers always
 * gets a slot while names only seen on the wire hold any. DQ_EINVAL for an invalid name,
 * DQ_EFULL when the table is full of probes that cannot be evicted (counted in t->full),
 * DQ_ENOMEM.
 */
int probes_get(struct probe_table *t, const char *name, size_t len, struct probe **out);

/*
 * 1 when p is only *observed*: registered by an instance (from_wire) and never given
 * anything since: not chosen (enabled by a person, the config or the loop), not enabled
 * nor always on unless a passive source (OTLP) made it so, no dMax set, no QTA, not in the
 * diagram, no servers. probes_evictable: observed and not vetoed (evict_veto, an
 * investigation's probes). Such probes may be evicted and are not persisted.
 */
int probes_observed(const struct probe *p);
int probes_evictable(const struct probe_table *t, const struct probe *p);

/*
 * New probe names per source: a source (an origin's node, else the origin; for a passive
 * source the caller's bucket, probes_record_span) may register `burst` names at once and
 * `per_second` more each second (its origin's last_rx_ns is the clock); instances of
 * further new names are refused (DQ_EFULL, counted in t->name_rate). per_second <= 0: no
 * limit (the default).
 */
void probes_set_name_limit(struct probe_table *t, double per_second, double burst);

/* The names of the whole table (docs/running.md, "The name budget"). */
struct probes_name_budget {
    double all_per_second; /* new names of every source together per second (0: no limit) */
    double all_burst;      /* … after a burst of this many */
    size_t max_observed;   /* observed probes at most (0: the table's size); the rest of the
                              table is a reserve for real probes (diagram, config, a person) */
    int64_t idle_windows;  /* an observed probe without an instance for this many windows is
                              removed at a window's close (probes_remove_idle); 0: never */
};

/* Sets the budget. A new name from an instance is refused (DQ_EFULL, counted in
 * t->name_rate) over its source's rate or the table's; past max_observed observed probes,
 * or a full table, the evictable probe heard from least recently makes room. */
void probes_set_name_budget(struct probe_table *t, const struct probes_name_budget *b);

/* Removes the evictable probes whose newest instance is more than t->idle_windows
 * windows before wid (counted in t->idle); returns how many. */
size_t probes_remove_idle(struct probe_table *t, int64_t wid);

/*
 * Removes p from the table and frees it (its windows, ring and per-node moments; the
 * origins it named are let go). The probe that was last in the table takes p's index; the
 * name index is rebuilt, so this costs O(table) and is meant for a person's act, never the
 * ingest path. Whoever holds a pointer to p must drop it. DQ_EINVAL when p is not in t.
 */
int probes_remove(struct probe_table *t, struct probe *p);

/*
 * Records one instance that came from `origin` (probes_origin_open; 0 = none). Finds or
 * registers the probe, remembers the origin, bins the duration end − start into the
 * window of end_ns (a timeout with end_ns 0, as old oscilloscope wrappers send it, ends at
 * start + the probe's dMax) and, when the probe is split by node, into its node's moments.
 * Returns 0, or a negative code when the instance was not recorded: DQ_ESTATE for a late
 * or too-future window (counted in t->late / t->future and per probe; the origin is
 * remembered all the same), DQ_EFULL / DQ_EINVAL from probes_get. Does not allocate unless
 * the probe is new or a second node reports it for the first time (its per-node storage,
 * once; when that fails it is counted in t->split_failures and the probe goes on unsplit).
 */
int probes_record(struct probe_table *t, const char *name, size_t len, uint32_t origin,
                  int64_t start_ns, int64_t end_ns, enum probe_status status);

/* probes_record() for a caller that has the name's hash already: hash must be
 * wire_name_hash(name, len) (the parser returns it as msg->name_hash). */
int probes_record_hashed(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                         uint32_t origin, int64_t start_ns, int64_t end_ns,
                         enum probe_status status);

/* Where a span comes from (probes_record_span). */
struct probe_span_source {
    uint32_t origin;                /* its service's passive origin; 0: none */
    struct probe_name_bucket *peer; /* the new names of the connection's peer (the source
                                       the name limit counts, whatever the service) */
    int64_t now_ns;                 /* the clock of the name buckets */
};

/*
 * What identifies an instance, as its source has it (slices valid during the call): a v2
 * line's `t:`, `i:` and `a:` (hex text, "K=V,K=V"), or a span's trace and span ids as raw
 * bytes (binary 1: written as hex only when the instance is kept as an exemplar).
 */
struct probe_ident {
    const char *trace;
    size_t trace_len;
    const char *id;
    size_t id_len;
    const char *attrs;
    size_t attrs_len;
    int binary;
};

/*
 * probes_record_hashed() for an instance that identifies itself (ident non-NULL): besides
 * being binned, it may be kept as one of its window's exemplars (see "exemplars" below).
 * Same returns. Allocates once per probe, at its first such instance (its exemplar storage;
 * when that fails it is counted in t->ex_failures and no exemplar is kept).
 */
int probes_record_ident(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                        uint32_t origin, int64_t start_ns, int64_t end_ns, enum probe_status status,
                        const struct probe_ident *ident);

/*
 * probes_record_ident() for a span of a passive source (OTLP): `failed` 1 records it as
 * failed; an ok span longer than the probe's dMax is recorded as timed out (its end is
 * then start + dMax, as a wrapper reports a timeout). A new name counts against src->peer
 * (when not NULL) and the table's budget. ident may be NULL. Same returns.
 */
int probes_record_span(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                       const struct probe_span_source *src, int64_t start_ns, int64_t end_ns,
                       int failed, const struct probe_ident *ident);

/*
 * The line protocol's instance m (kind WIRE_INSTANCE, as wire_parse() or the splitter's
 * fast path gives it) from the connection `origin`: probes_record_ident() with its v2 ids
 * when it has any, probes_record_hashed() otherwise. Same returns. The TCP source's path
 * for every instance line, one call with its arguments in registers.
 */
int probes_record_line(struct probe_table *t, uint32_t origin, const struct wire_msg *m);

/* ---- exemplars ------------------------------------------------------------------------
 *
 * Per probe and window the table keeps, from the instances that identify themselves, the
 * `slowest` successful ones (by duration; ok instances past dMax included) and the first
 * `failed` failed or timed-out ones, each with its trace id, instance id, the node of its
 * origin, its attributes and its duration: a fixed set per open window and one for the
 * newest closed window, in the probe's exemplar storage (allocated at its first identified
 * instance; (open windows + 1) × (slowest + failed) exemplars of PROBES_EX_BYTES or so).
 * Keeping one is a compare with the fastest kept and, when it is slower, a copy of its ids;
 * instances without ids cost nothing. At window close the open set moves to the closed one,
 * which the core writes to the store with the window's summary.
 */
#define PROBES_EX_ID_MAX WIRE_MAX_ID /* hex digits of a trace or instance id kept */
#define PROBES_EX_NODE_MAX                                                                         \
    64                          /* bytes of a node name kept (longer ones cut before a             \
                                   whole UTF-8 character) */
#define PROBES_EX_ATTRS_MAX 160 /* bytes of attributes kept (cut after a whole pair) */
#define PROBES_EX_MAX 16        /* the most of each kind kept per window */

struct probe_exemplar {
    int64_t end_ns, d_ns; /* when it ended, its duration */
    int status;           /* enum probe_status */
    int trace_len, id_len, node_len, attrs_len;
    char trace[PROBES_EX_ID_MAX];
    char id[PROBES_EX_ID_MAX];
    char node[PROBES_EX_NODE_MAX];
    char attrs[PROBES_EX_ATTRS_MAX];
};
#define PROBES_EX_BYTES ((int)sizeof(struct probe_exemplar))

/* Exemplars kept per probe and window from now on: the slowest ok ones and the first
 * failed ones, each 0 … PROBES_EX_MAX (0 and 0: none). Probes already keeping some keep
 * their sizes. DQ_ERANGE. */
int probes_set_exemplars(struct probe_table *t, int slowest, int failed);

/*
 * The exemplars p kept for closed window wid, when it is the newest one it kept them for:
 * *out points at them (valid until the next window closes), the successful ones first,
 * slowest first, then the failed ones in the order they came. Returns how many (0 when
 * none, or when wid is not that window).
 */
int probes_exemplars_of(const struct probe *p, int64_t wid, const struct probe_exemplar **out);

/* The exemplars of the newest window p kept any for, as probes_exemplars_of: *wid is that
 * window. Returns how many (0: none yet). */
int probes_exemplars_newest(const struct probe *p, int64_t *wid, const struct probe_exemplar **out);

/* "ok", "fa" or "to": an exemplar's status as the store and the API write it. */
const char *core_exemplar_status(int status);

/* The Prometheus bucket (0 … PROBES_HIST_BUCKETS − 1, or PROBES_HIST_BUCKETS for +Inf
 * only) a duration falls in, as dqd_duration_seconds counts it. */
int probes_bucket_of(int64_t d_ns);

/*
 * Changes a probe's deadline and bins (bins 0 keeps the current count). The grid is
 * the finest power-of-two width whose `bins` bins cover dmax_ms (at most DQ_MAX_BINS).
 * Open windows are cleared (their instances were binned on the old grid). DQ_ERANGE for
 * a dMax the grid cannot hold.
 */
int probes_set_dmax(struct probe_table *t, struct probe *p, double dmax_ms, int bins);

/* The grid for a deadline and a bin count (see probes_set_dmax). */
int probes_grid(double dmax_ms, int bins, int *k, int *n);

/* ---- auto-ranging ----------------------------------------------------------------------
 *
 * A probe whose auto_range is set keeps its bin count and changes its width by powers of
 * two so that what it observes fits its grid (dMax = n·width): wider when the tail comes
 * near dMax, finer when the mass sits in the first bins. Decided once per closed window
 * (probes_range_decide, pure); the change takes effect for the windows opened after it
 * (probes_set_range), and the closed windows of the ring are re-expressed on the new grid.
 * The core records, applies and sends it (core.c, CORE_RANGE).
 */

/* Auto-ranging of probes registered from now on without a dMax of their own: on/off and
 * the range their dMax keeps to. DQ_ERANGE for a bad range. */
int probes_set_auto_range(struct probe_table *t, int on, double min_ms, double max_ms);

#define PROBES_RANGE_MIN_INSTANCES 20 /* a window decides only with this many timed ones */
#define PROBES_RANGE_TAIL 0.01        /* wider when more than this is past 7/8 of dMax */
#define PROBES_RANGE_SHRINK_WINDOWS 2 /* finer only after this many windows in a row */

enum probes_range_reason {
    PROBES_RANGE_KEEP = 0,
    PROBES_RANGE_TAIL_NEAR_DMAX, /* the tail reached the last 1/8 of dMax, or past it */
    PROBES_RANGE_TAIL_FAR,       /* the slowest instance is within 3/8 of dMax */
    PROBES_RANGE_HEAD,           /* over 10 % in the first 8 bins, slowest within 7/16 */
};

/* What one window says about a probe's grid. */
struct probes_range {
    enum probes_range_reason reason;
    int k;              /* the width exponent asked for (p->k when KEEP) */
    double dmax_ms;     /* the dMax that gives (n·width) */
    int wants_finer;    /* the window asks for a finer grid (counted towards the shrink) */
    uint64_t timed;     /* instances that say something about the delay: ok, out, to */
    double tail;        /* fraction of them past 7/8 of dMax (timeouts and out included) */
    double head;        /* fraction in the first 8 bins */
    double slowest_ms;  /* the window's slowest ok instance */
    const char *capped; /* why it could not go further ("max", "min", "qta"), or NULL */
};

/*
 * Decides from window w (p's newest, its ΔQ on p's grid) whether p's grid should change:
 * wider by one step when over PROBES_RANGE_TAIL of its timed instances are past 7/8 of dMax
 * (two when over a quarter timed out or ran past dMax: their delays are unknown), finer
 * by as many steps as keep the slowest instance within 3/4 of the new dMax when it is
 * within 3/8 of it now (or within 7/16 with over 10 % in the first 8 bins) and nothing
 * timed out, once p->range_shrink + 1 ≥ PROBES_RANGE_SHRINK_WINDOWS. Never past
 * range_max_ms, below range_min_ms or below p's last QTA point. Pure: p is not changed.
 */
void probes_range_decide(const struct probe *p, const struct probe_window *w,
                         struct probes_range *out);

/*
 * Gives p the width 2^k ms (n kept, dMax = n·width): windows opened from now on are binned
 * on it, and every closed window of its ring is re-expressed on it. DQ_ERANGE for a bad k,
 * DQ_ENOMEM (nothing changed then).
 */
int probes_set_range(struct probe_table *t, struct probe *p, int k);

/* The window index of a time and its bounds. */
int64_t probes_window_of(const struct probe_table *t, int64_t ns);

/*
 * Closes window `wid` for every probe (wid must be t->next_close): each probe with
 * instances in it gets a new ring entry with its observed ΔQ (and, when split, a row of
 * per-node moments); every enabled probe without one is judged quiet or no data (see
 * probes_no_data) and its silent run is extended or cleared; then t->next_close advances.
 * Returns 0 or DQ_ENOMEM (the window is closed anyway; the ΔQs that could not be built
 * are missing). Work proportional to the probes, plus one pass over the origins.
 */
int probes_close_window(struct probe_table *t, int64_t wid);

/* The ring entry `back` windows before the newest (0 = newest) of p, or NULL. */
struct probe_window *probes_ring_get(struct probe *p, int back);

/* 1 when p's newest ring entry is for window wid. */
int probes_has_window(struct probe *p, int64_t wid);

/* p's ring entry for window wid, or NULL when p has none (no instance then, or too old). */
struct probe_window *probes_ring_find(struct probe *p, int64_t wid);

/* Upper edge in seconds of Prometheus bucket j (0 … PROBES_HIST_BUCKETS − 1). */
double probes_bucket_le(int j);

/* ---- origins: where instances come from ----------------------------------------------
 *
 * An origin is one connection of a source: registered when the connection is accepted
 * (or, outbound, established), named by a label ("3 127.0.0.1:5555", as the commands
 * table names it), a node (a v2 hello's `node:`; for a legacy link its peer's host) and an
 * app (the hello's `app:`, or ""). Ids are small integers ≥ 1, core-wide; 0 means none.
 * An id is reused only once its connection closed and no probe names it any more.
 */

/* What probes_origin_get reports. Strings are valid until the next origin is opened,
 * identified or closed. */
struct probe_origin_info {
    uint32_t id;
    const char *label, *node, *app; /* "" when unknown */
    const char *kind;               /* as the source set it ("legacy", "v2", …), "" */
    int connected;
    int restored;       /* a connection of dqd's previous run (probes_restore_origin) */
    int64_t last_rx_ns; /* 0: nothing received yet */
};

/*
 * Registers a connection that is up now: label, node and app (NULL or "" for none; cut to
 * their maxima). *out gets its id. DQ_EFULL past PROBES_MAX_ORIGINS live origins,
 * DQ_ENOMEM (a source goes on with origin 0: its instances count, without an origin).
 */
int probes_origin_open(struct probe_table *t, const char *label, const char *node, const char *app,
                       uint32_t *out);

/* Renames origin's node and app (a v2 hello, also a repeated one). Probes that last heard
 * from it find their node again at their next instance. DQ_EINVAL for an unknown id,
 * DQ_ENOMEM / DQ_EFULL when the node name cannot be kept (the origin then has none). */
int probes_origin_identify(struct probe_table *t, uint32_t origin, const char *node,
                           const char *app);

/* The source received something on origin at now_ns (the core's clock, read once per
 * read, not per line). 0 or an unknown id: nothing. */
void probes_origin_heard(struct probe_table *t, uint32_t origin, int64_t now_ns);

/*
 * Gives instances from origins that are not passive (the line protocol) a lateness
 * allowance of their own, shorter than the table's lag (which then serves passive sources,
 * OTLP): at each probes_origin_heard (once per read) the windows whose end + line_lag_ns
 * has passed become closed to them, and such an instance is late (DQ_ESTATE, counted in
 * t->late) although its window is still open for spans. line_lag_ns ≥ the table's lag
 * turns it off.
 */
void probes_set_line_lag(struct probe_table *t, int64_t line_lag_ns);

/*
 * dqd's loop waits for input at now_ns and expects to run again by wake_by_ns (its next
 * timer plus a margin). A read after wake_by_ns finds what was sent while dqd did not run
 * (stopped, its machine stalled): that was sent at now_ns or later, so the line floor
 * (probes_set_line_lag) moves only as far as now_ns allows until the loop waits again,
 * not with the reads' time, and a wrapper's lines are not refused for dqd's own stop.
 * wake_by_ns INT64_MAX (the table's start): no expectation, the floor follows the reads.
 */
void probes_loop_waits(struct probe_table *t, int64_t now_ns, int64_t wake_by_ns);

/*
 * Makes origin passive: a source that cannot carry commands and sends only when there is
 * something to report (OTLP: one origin per service). A probe that hears from it becomes
 * passive, enabled and always on (t->passive_new counts them for the core to store), and
 * its empty windows are no data only once it had an instance before and none for
 * silence_ns (> 0) up to the window's end; otherwise they are quiet.
 */
void probes_origin_set_passive(struct probe_table *t, uint32_t origin, int64_t silence_ns);

/* The connection closed. Its probes' empty windows are no data from now on. 0 or an
 * unknown id: nothing. */
void probes_origin_closed(struct probe_table *t, uint32_t origin);

/* What the source calls the connection ("legacy", "v2", "outbound"; cut to 15 bytes): the
 * status and the silence hints say it (an oscilloscope wrapper does not reconnect). */
void probes_origin_set_kind(struct probe_table *t, uint32_t origin, const char *kind);

/*
 * At start, before any source connects: p last heard from a connection of dqd's previous
 * run (the store named it): a closed origin with that label, node, app and kind becomes p's,
 * so that p's silence names it (probes_origin_get says `restored`) until p hears from a
 * connection of this run. DQ_EFULL / DQ_ENOMEM as probes_origin_open (p keeps none then).
 */
int probes_restore_origin(struct probe_table *t, struct probe *p, const char *label,
                          const char *node, const char *app, const char *kind);

/*
 * dqd stops at now_ns: windows closed from now on are partial (probes_close_window marks
 * them and keeps them out of the quiet windows). The caller then closes the open ones.
 */
void probes_stop(struct probe_table *t, int64_t now_ns);

/* Fills *out for origin; DQ_EINVAL (and an empty *out) for 0 or an unknown id. */
int probes_origin_get(const struct probe_table *t, uint32_t origin, struct probe_origin_info *out);

/* ---- no data ---------------------------------------------------------------------------
 *
 * At each window close, an enabled probe with no instance in the window had *no data*
 * when the origin it last heard from is disconnected, or received nothing at all since the
 * window's start (the link was silent through the whole window); a probe never heard from
 * had no data when no connected origin received anything since the window's start.
 * Otherwise the empty window is an ordinary quiet one. An empty window that ended before
 * the table began taking instances (open_ns: before dqd started) is neither: it is not
 * judged. A run of consecutive no-data windows is the probe's *silence*; it ends at the
 * first closed window that is not no data (the probe has data again, or its source is
 * alive and simply had nothing to report), or when the probe is disabled. A silence is
 * dated from the probe's last instance (last_end_ns, kept across restarts).
 */

/* 1 when closed window wid of p was no data; 0 otherwise, and for windows more than
 * PROBES_NODATA_WINDOWS closed windows old or not closed yet. */
int probes_no_data(const struct probe *p, int64_t wid);

/* A probe's silence, as probes_silence reports it. */
struct probe_silence {
    int64_t since_ns;     /* since when it has had no data: the END of its last instance (also one
                             of dqd's previous run), else (never one) the start of the run's first
                             no-data window; 0 when not silent */
    int64_t run_start_ns; /* the start of the run's first no-data window */
    int64_t windows;      /* no-data windows in the run (0 when not silent) */
    /* the origin it last came from (the one the last no-data window was judged by);
       origin 0 with "" strings: never heard from. Strings as in probes_origin_info. */
    struct probe_origin_info origin;
};

/* Fills *out with p's silence. Returns 1 when p is silent, else 0 (*out zeroed). */
int probes_silence(const struct probe_table *t, const struct probe *p, struct probe_silence *out);

/* ---- per-node moments ------------------------------------------------------------------
 *
 * Once instances of one probe come from a second node, the table keeps, per window, the
 * moments of each node's instances: up to PROBES_MAX_NODES nodes in the order they first
 * reported, further ones pooled under PROBES_NODE_OTHER. Windows closed before the split
 * come from the first node alone and are reported as its. Nothing per node but moments.
 */

/* One node's moments in one closed window, computed as the probe's own window's. */
struct probe_node_moments {
    uint64_t ok, fa, to;   /* instances by status */
    uint64_t out;          /* ok instances past the horizon (as struct probe_window) */
    double mean, variance; /* seconds, over ok within the horizon (÷ n); 0 when ok == 0 */
};

/* The number of nodes p is split by (named ones, plus 1 once the pooled one was used);
 * 0 when p is not split. */
int probes_node_count(const struct probe *p);

/* The name of node i (0 … probes_node_count − 1) of p; PROBES_NODE_OTHER for the pooled
 * one; NULL for a bad i. Valid while the table lives. */
const char *probes_node_name(const struct probe_table *t, const struct probe *p, int i);

/* Node i's moments in closed window wid. DQ_OK, or DQ_ENOTFOUND when the ring no longer
 * (or never) held wid for p's nodes, DQ_EINVAL for a bad i. */
int probes_node_moments(const struct probe *p, int i, int64_t wid, struct probe_node_moments *out);

/* ==== struct core ===================================================================== */

struct core;

/* What core_create needs. Sizes as in settings.h (window, lag, ring, default dMax). */
struct core_options {
    size_t max_probes;      /* probes tracked at most */
    int64_t window_ns;      /* window length */
    int64_t lag_ns;         /* how long a window stays open after its end */
    int64_t line_lag_ns;    /* > 0 and < lag_ns: the line protocol's own allowance (with
                               --otlp the windows close otlp_lag after their end); 0: none */
    int ring;               /* closed windows kept per probe (W) */
    double default_dmax_ms; /* dMax of a probe that has none of its own */
    int default_bins;       /* bins of such a probe */
    int retention_hours;    /* window summaries older than this are pruned (0: never) */
    int dq_retention_hours; /* window ΔQs (the heatmap's) older than this are pruned (0: never) */
    int exemplars_slowest;  /* exemplars kept per probe and window: the slowest ok ones … */
    int exemplars_failed;   /* … and the first failed ones (probes_set_exemplars; 0: none) */
    int auto_range;         /* 1: probes without a dMax of their own auto-range (0: off) */
    double auto_range_min_ms, auto_range_max_ms; /* their dMax's range (0: 1 ms, 60 s) */
    double new_names_per_second;                 /* new probe names per source (0: no limit) */
    double new_names_burst;                      /* … after a burst of this many */
    struct probes_name_budget names;             /* of the whole table (zero: none) */
};

/* Counters of the daemon as a whole (for status and /metrics). */
struct core_stats {
    uint64_t instances_total; /* instances parsed by every source */
    uint64_t windows_closed;  /* windows closed since start */
    uint64_t store_errors;    /* failed store writes, whoever made them */
    int64_t started_ns;       /* when core_create ran (its clock) */
    size_t probes, enabled;   /* probes known; probes enabled */
};

/*
 * Creates the core on `store` (borrowed, must outlive it) and `clock` (copied): the probe
 * table sized by o, the first window to close set from the clock, the probes and their
 * settings reloaded from the store. DQ_EINVAL / DQ_ERANGE for bad sizes (message says
 * which), DQ_ENOMEM, DQ_ESTORE when the store cannot be read.
 */
int core_create(const struct core_options *o, struct store *store, const struct clock *clock,
                struct core **out);

/* Releases the core, its probes, windows and diagram. NULL is a no-op. Sources must have
 * been removed first. */
void core_destroy(struct core *c);

/* The probe table (for the ingest hot path and readers; changes go through core_*). */
struct probe_table *core_probes(struct core *c);

/* The store and clock the core was made with. */
struct store *core_store(struct core *c);
const struct clock *core_clock(const struct core *c);

/* Counters; fills *st. */
void core_get_stats(const struct core *c, struct core_stats *st);

/* Adds n instances parsed by a source to instances_total (a source calls it per read). */
void core_add_instances(struct core *c, uint64_t n);

/* instances_total alone (cheap: no walk over the probes). */
uint64_t core_instances_total(const struct core *c);

/* Counts one failed store write made by a module above core (the adaptive loop). */
void core_count_store_error(struct core *c);

/* ---- the diagram --------------------------------------------------------------------- */

/*
 * Replaces the outcome diagram with `text` (path names the file it came from; NULL for one
 * sent through the API): parsed, an evaluator built, recorded in the store (the diagrams
 * table, so that it is loaded again after a restart), every probe node given its probe's
 * grid. DQ_EPARSE with "LINE:COL: message", DQ_ENOMEM, or the store's error (DQ_ESTORE,
 * counted); the old diagram stays on failure.
 */
int core_load_diagram(struct core *c, const char *text, size_t len, const char *path);

/* Reads a diagram file (≤ 64 MiB) and loads it as core_load_diagram does; DQ_EIO when
 * unreadable, messages name the path ("PATH:LINE:COL: message"). */
int core_load_diagram_file(struct core *c, const char *path);

/*
 * Loads the diagram the store recorded last (at start, when no --diagram is given), with
 * the path it was recorded with. DQ_ENOTFOUND when the store has none (nothing changes);
 * DQ_EPARSE when the recorded text no longer parses (message says so), the store's error.
 */
int core_restore_diagram(struct core *c);

/* The loaded diagram, its text and its path ("" when it came through the API); NULL when
 * none is loaded. Valid until the next load. */
const struct dq_diagram *core_diagram(const struct core *c);
const char *core_diagram_text(const struct core *c);
const char *core_diagram_path(const struct core *c);

/* The probe of diagram node `node` when dqd knows it (NULL otherwise). */
struct probe *core_node_probe(struct core *c, int node);

/* ---- windows ---------------------------------------------------------------------------- */

/* Called once per closed window, in window order. */
typedef void (*core_window_fn)(void *ctx, int64_t wid);

/*
 * Closes every window due at `now` (its end plus the lag has passed), oldest first: each
 * probe's slot becomes an observed ΔQ in its ring, the diagram computes the calculated
 * ΔQs; then fn(ctx, wid) (may be NULL) decides what to do with it. When the clock jumped
 * further than the open windows reach, the open ones are closed and the empty windows in
 * between are skipped (logged). Returns the number of windows closed.
 */
int core_close_due(struct core *c, int64_t now, core_window_fn fn, void *ctx);

/* When the next window falls due (its end plus the lag), ns on the core's clock. */
int64_t core_next_deadline(const struct core *c);

/*
 * When dqd's loop did not run (core_stall.c): the wall-clock loop tells the core when it
 * waits for input and when its window timer fires; the core decides (no I/O but the log).
 *
 * core_next_wake: when the window timer should fire next: the next window deadline
 * (core_next_deadline) or the next window edge after now, whichever is sooner, so that
 * the loop runs at every edge, where the line floor moves, and a later wake is a stall.
 *
 * core_loop_waits: the loop is about to wait for input at now, its window timer due at
 * timer_due. A read later than timer_due plus core_stall_ns finds what was sent while dqd
 * did not run; the line floor then holds at now (probes_loop_waits). Ignored while a stall
 * is being read (core_timer_fired returned 1), so the floor holds until the windows due
 * close, and once when now is already past the last wait's expected end (dqd stopped in
 * its wait or in a callback since: the wait about to begin reads the backlog).
 *
 * core_timer_fired: the window timer due at timer_due fired at now. Returns 1 when the
 * windows due should wait one more turn of the loop, reading first: the timer came more
 * than core_stall_ns late (dqd did not run), and the sockets still yield instances (one
 * parsed in the last 20 ms), for at most 250 ms or half a window, and not once an
 * instance was refused as future (the open windows are full: the windows due must close
 * to make room); a turn that itself comes more than core_stall_ns after the last (dqd
 * stopped again) starts the reading over, three times at most. Returns 0 when they should close
 * now; after a stall of 0.5 s or more it logs that dqd did not run. The caller then closes them
 * (core_close_due) and re-arms.
 *
 * core_stall_ns: the lateness that is a stall: half the shorter lag (the line protocol's
 * with --otlp), at most 200 ms, at least 10 ms.
 */
int64_t core_next_wake(const struct core *c, int64_t now);
void core_loop_waits(struct core *c, int64_t now, int64_t timer_due);
int core_timer_fired(struct core *c, int64_t now, int64_t timer_due);
int64_t core_stall_ns(const struct core *c);

/* The window of a time, the length of a window and the lag, in ns. */
int64_t core_window_of(const struct core *c, int64_t ns);
int64_t core_window_ns(const struct core *c);
int64_t core_lag_ns(const struct core *c);

/* The oldest window not closed yet, and the newest closed one (−1 before the first). */
int64_t core_next_close(const struct core *c);
int64_t core_last_closed(const struct core *c);

/*
 * Why probe p has no calculated ΔQ for window wid: the named children of its node in the
 * diagram (dq_diagram_probe_children) that had no ΔQ in that window, neither observed nor
 * calculated, written "a, b" into buf (cap bytes, cut there). A calculated ΔQ comes from
 * every child's ΔQ of the same window, never from older ones: these are the missing.
 * Returns how many; 0 when p is no node of the diagram, has no named children, or none
 * is missing.
 */
size_t core_calc_missing(struct core *c, const struct probe *p, int64_t wid, char *buf, size_t cap);

/*
 * Writes the summary rows of window wid (one per probe and kind, observed and
 * calculated) to the store. Meant to run inside the caller's transaction (the adaptive
 * loop's, one per window). Returns DQ_OK or the first store error (the others are still
 * attempted; each is counted).
 */
int core_persist_window(struct core *c, int64_t wid);

/* Applies the store's retention at most every five minutes (outside any transaction). */
void core_prune_if_due(struct core *c);

/* ---- dqd's own runs ------------------------------------------------------------------------
 *
 * The store records when dqd starts and stops (events `dqd_started` and `dqd_stopped`), and
 * a stop keeps what dqd has: every window still open is closed as a partial one (its row
 * marked partial, its span the part dqd ran for) and written, with each probe's last
 * instance and origin. So the time dqd was not running is known (the status, `why`, the
 * dashboard and the silences say it), and a probe silent since before a restart is dated
 * from its last instance and named by the connection it came from.
 */

/* The gap before this run. */
struct core_downtime {
    int64_t from_ns; /* when the previous run stopped, or (not clean) its last record in the
                        store; 0: no previous run is known (a new store) */
    int64_t to_ns;   /* when this run started */
    int clean;       /* 1: the previous run recorded its stop (dqd_stopped) */
};

/* Fills *out with the gap core_create found in the store before this run. */
void core_downtime(const struct core *c, struct core_downtime *out);

/* Simulated time: this run starts at ns, the simulator's first time, not at the time the
 * core was made with (the wall clock's); the gap before it ends there. Before
 * core_record_start, and before any window is written. */
void core_set_start(struct core *c, int64_t ns);

/* Records this run's start (a `dqd_started` event: version, and the gap before it), once
 * dqd has started. The store's error (counted and logged), or DQ_OK. */
int core_record_start(struct core *c, const char *version);

/* What core_stop kept. */
struct core_stop_report {
    int windows;        /* the open windows closed as partial that held instances */
    uint64_t instances; /* instances in them */
    int undecided;      /* closed windows the adaptive loop had not recorded, written too */
};

/*
 * The stop, at now_ns (after the sources stopped reading): in one transaction, the closed
 * windows from `undecided` on that were never written (the adaptive loop's round failed;
 * −1: none), every open window closed as a partial window and written (the adaptive loop
 * does not decide on it), each persisted probe's last instance and origin, and the
 * `dqd_stopped` event. After it the core takes no instance. DQ_OK or the store's error
 * (counted and logged: what it could not write is lost, and said so).
 */
int core_stop(struct core *c, int64_t now_ns, int64_t undecided, struct core_stop_report *out);

/* ---- sources: where commands go --------------------------------------------------------- */

#define CORE_MAX_SOURCES 16
#define CORE_LABEL_MAX PROBES_LABEL_MAX

/* One connection that can carry a command, as its source lists it. */
#define CORE_DETAIL_MAX 512 /* bytes of a destination's own detail, with the NUL */

/* What a destination does with a command. */
enum core_dest_fate {
    CORE_DEST_NOT_APPLIED = 0, /* it cannot carry it (a legacy link has no clear_timeout):
                                  recorded not_applied, nothing sent */
    CORE_DEST_SEND = 1,        /* it carries it: sent */
    CORE_DEST_AMBIGUOUS = 2,   /* a connection dqd does not write to, whose wrapper may or may
                                  not have got the command through another connection of its
                                  source (which one cannot be told): recorded ambiguous,
                                  nothing sent on it */
};

/* One connection that can carry a command, as its source lists it. */
struct core_dest {
    uint64_t id;                /* the source's handle for it */
    char label[CORE_LABEL_MAX]; /* what the commands table calls it: "3 127.0.0.1:5555" */
    int applicable;             /* enum core_dest_fate */
    const char *reason;         /* when not applicable: why, for the commands row (a static
                                   string; NULL gives a generic reason) */
    /* what the row says of this destination in words of its own ("" for none): for a sent
     * command, what the link is to its wrapper ("the wrapper's command listener …"); for
     * one not applied or ambiguous, why (instead of reason) */
    char detail[CORE_DETAIL_MAX];
};

/* One connection of a source, for status and /metrics. Strings valid during the call. */
struct core_link_info {
    uint64_t id;
    const char *kind; /* "v2", "legacy", "outbound", "unknown" */
    const char *peer; /* "127.0.0.1:5555" */
    const char *node; /* the hello's node, "" */
    const char *app;  /* the hello's app, "" */
    int connected;    /* 1 while the connection is up */
    int inbound;      /* 1 when the wrapper connected to dqd */
    int running;      /* the wrapper's last state: 1, 0, or −1 unknown */
    uint64_t instances, protocol_errors, dropped_by_wrapper;
    /* one wrapper, two connections: a legacy wrapper's own connection (instances) and the
     * link dqd opened to its command listener, paired by host (and app when both say one) */
    const char *pairing;  /* "paired", "ambiguous" (several legacy wrappers or listeners on
                             one host: not guessed), or NULL (nothing to pair) */
    uint64_t paired_with; /* "paired": the id of the other connection; else 0 */
};

/* Totals of a source. */
struct core_source_stats {
    uint64_t connections_total;    /* connections accepted */
    uint64_t connections_rejected; /* refused (over the connection cap, no memory, closing) */
    uint64_t connections_junk;     /* closed: its first lines were all malformed */
    uint64_t connections_evicted;  /* closed at the connection cap: the one silent longest */
    uint64_t connections_reset;    /* closed by a reset from the peer (TCP RST): the lines
                                      it sent that dqd had not read yet are lost, how many
                                      cannot be known */
    uint64_t reset_written_bytes;  /* bytes dqd had written to those connections (commands
                                      the peer may not have read: the usual cause) */
    uint64_t protocol_errors[WIRE_E_COUNT];
};

/* What a source offers the core. Every function is called on the loop thread. */
struct core_source_ops {
    const char *name; /* "tcp" */
    /* Lists the connections that take commands now (at most cap in out), each saying
     * whether it can carry cmd. Returns how many there are (more than cap: the rest are
     * not listed). May be NULL: the source carries no commands. */
    size_t (*destinations)(void *src, const struct wire_cmd *cmd, struct core_dest *out,
                           size_t cap);
    /* Sends cmd to destination `dest`; `row` is its commands-table id (0: none) so that a
     * wrapper's ack can be recorded. DQ_OK, or an error when it could not be queued. */
    int (*send)(void *src, uint64_t dest, const struct wire_cmd *cmd, int64_t row);
    /* Calls fn for each connection. May be NULL. */
    void (*links)(void *src, void (*fn)(void *ctx, const struct core_link_info *li), void *ctx);
    /* Fills *st. May be NULL. */
    void (*stats)(void *src, struct core_source_stats *st);
};

/* Registers a source (ops must outlive it). DQ_EFULL past CORE_MAX_SOURCES. */
int core_add_source(struct core *c, const struct core_source_ops *ops, void *src);

/* Unregisters a source; unknown ones are ignored. */
void core_remove_source(struct core *c, void *src);

/* Calls fn for every connection of every source. */
void core_links_each(struct core *c, void (*fn)(void *ctx, const struct core_link_info *li),
                     void *ctx);

/* Sums the stats of every source into *st. */
void core_sources_stats(struct core *c, struct core_source_stats *st);

/* ---- links that go away ------------------------------------------------------------
 *
 * A source tells the core when a link goes down (core_link_down: the status can then say
 * since when no wrapper is connected) and when it forgets a link for good (core_link_gone:
 * its protocol errors stay counted under its peer, so that /metrics keeps one series per
 * peer whatever the reconnects). A peer is the host of an inbound link (its ephemeral
 * port left out) or the address of an outbound one (a wrapper's command listener).
 */

#define CORE_MAX_PEERS 256 /* peers kept; more are pooled */
#define CORE_PEER_OTHER "(other)"
#define CORE_PEER_MAX 72 /* bytes of a peer key, with the NUL */

/* One peer: its errors (links gone, plus the live ones in core_peers), live links. */
struct core_peer {
    char peer[CORE_PEER_MAX];
    uint64_t gone_errors; /* protocol errors of its links that are gone */
    uint64_t errors;      /* core_peers: gone_errors + those of its live links */
    int connected;        /* core_peers: its links that are connected now */
    int64_t last_down_ns; /* when one of its links last went down; 0: never */
};

/* The peer key of a link ("127.0.0.1" for an inbound 127.0.0.1:5555). */
void core_peer_key(const struct core_link_info *li, char *out, size_t cap);

/* A link that was connected went down (li as the source lists it). */
void core_link_down(struct core *c, const struct core_link_info *li);

/* The source forgets a link: its protocol errors join its peer's. */
void core_link_gone(struct core *c, const struct core_link_info *li);

/* When a link last went down (0: never) and which ("3 legacy 127.0.0.1:5555 node n"). */
int64_t core_last_link_down(const struct core *c, const char **label);

/* Every peer ever seen, with errors and connected filled in; at most cap. Returns how
 * many. */
size_t core_peers(struct core *c, struct core_peer *out, size_t cap);

/* A wrapper acknowledged the command recorded as `row`: marks the row acked. */
void core_command_acked(struct core *c, int64_t row);

/* ---- changes to probes ---------------------------------------------------------------- */

enum core_change_kind {
    CORE_ENABLE,  /* set_timeout: the probe gets a dMax on the wrappers */
    CORE_DISABLE, /* clear_timeout */
    CORE_RESEND,  /* set_timeout again with the probe's current dMax (after a dMax change) */
    CORE_START,   /* start_stub: wrappers send instances */
    CORE_STOP,    /* stop_stub */
    CORE_RANGE,   /* auto-ranging: the probe's width becomes 2^range_k ms (dmax_ms = its
                     n·width), and set_timeout tells the wrappers the new dMax */
};

/* One command as recorded: where it goes, its commands-table row, and its fate. */
struct core_sent {
    int source;                   /* index among the registered sources */
    uint64_t dest;                /* the source's handle */
    int64_t row;                  /* commands-table id, 0 when it could not be recorded */
    int applicable;               /* enum core_dest_fate; −1 after a failed send */
    const char *reason;           /* why not applied (the source's static string), or NULL */
    char label[CORE_LABEL_MAX];   /* as the source named it */
    char detail[CORE_DETAIL_MAX]; /* the source's own words for it, "" for none */
};

/*
 * A change to one probe (or to every wrapper, for START and STOP), made in two steps:
 * core_change_record writes it to the store (the probe's row with its new settings, and
 * one commands row per destination that can carry it, inside the caller's transaction),
 * core_change_apply then changes the probe in memory and hands the command to the
 * sources. Between the two nothing else may change the sources (same loop turn).
 */
struct core_change {
    enum core_change_kind kind;
    struct probe *probe; /* ENABLE, DISABLE, RESEND; NULL for START, STOP */
    double dmax_ms;      /* ENABLE: a dMax to give the probe first when > 0 (inherited from
                            the parent the search came from); 0 keeps its own */
    int bins;            /* with dmax_ms: bins, 0 = the probe's current count */
    int range_k;         /* CORE_RANGE: the new width exponent */
    int64_t hypothesis;  /* the hypothesis it serves, 0 = none (a person, the config) */
    json_t *report;      /* borrowed, may be NULL: an array to which core_change_apply appends
                            one {"link", "command", "status": "sent"|"not_applied"|"failed"|
                            "ambiguous", "row", "detail"} per destination (what happened on
                            every link; detail may be absent) */
    /* filled by core_change_record */
    struct core_sent *sent; /* owned; released by core_change_release */
    size_t n_sent;
    size_t n_not_applied; /* destinations that cannot carry it (kept after the release) */
    size_t n_ambiguous;   /* destinations recorded ambiguous (kept after the release) */
    int recorded;
};

/* Does nothing and returns 0 for an ENABLE of an enabled probe or a DISABLE of a disabled
 * one; otherwise 1: the change would do something. */
int core_change_needed(const struct core_change *ch);

/*
 * Step 1: writes the change to the store (probe row, command rows with status "sent",
 * "not_applied" or "ambiguous", each with the destination's detail). Call inside a store
 * transaction to make it part of a larger decision. DQ_OK, DQ_ENOMEM, or the store's error
 * (counted); ch->sent lists the destinations either way, so core_change_apply can still act.
 */
int core_change_record(struct core *c, struct core_change *ch);

/*
 * Step 2: changes the probe in memory (dMax first when one is given, then enabled) and
 * sends the command to every applicable destination; a send that fails is recorded as
 * "failed" on its row. Returns how many destinations were sent the command.
 */
int core_change_apply(struct core *c, struct core_change *ch);

/* Frees what core_change_record allocated; the struct may be reused. */
void core_change_release(struct core_change *ch);

/*
 * Both steps at once, for a person's change through the API or the config: records in a
 * transaction of its own (unless the caller has one open), then applies. When the store
 * does not take it (a full disk, an I/O error) the change is not made, nothing is sent,
 * the failure is counted and logged, and DQ_ESTORE says so: an answered change survives a
 * restart. Returns the number of destinations reached, or a negative DQ_E*.
 */
int core_change_now(struct core *c, struct core_change *ch);

/* A person's update of one probe's settings (PUT /api/v1/probes/NAME), checked by the
 * caller; a setting changes only when its has_ flag is set. */
struct core_probe_update {
    int has_grid;
    double dmax_ms; /* > 0: the new dMax; 0 keeps the dMax (bins only) */
    int bins;       /* 0 keeps the bin count */
    int has_qta;
    struct dq_qta qta; /* used when qta_set */
    int qta_set;       /* 0: the QTA is removed */
    int has_servers;
    int servers; /* 1 … 100000, 0 unsets */
    int has_enabled;
    int enabled;
    json_t *report; /* borrowed, may be NULL: what happened on every link, as in core_change */
};

/*
 * Applies u to p as one change: the settings in memory (the grid first: a dMax that gives no
 * grid is DQ_ERANGE and nothing changes), then one store transaction with the probe's row,
 * its servers, a set_timeout with the new dMax when p is enabled, and the enable or disable;
 * when the store does not take any of it (DQ_ESTORE, the message names the setting), every
 * setting goes back to what it was and nothing is sent (inside a transaction the caller
 * opened, the caller rolls that back). Once committed, the commands are
 * sent and the observer is told once per setting ("dmax", "qta", "enable"/"disable").
 * Returns DQ_OK with *commanded (may be NULL) 1 when commands went to the wrappers' links
 * (or could not: a report entry per link), else a negative DQ_E*. The row is written even
 * when u changes nothing (a probe just registered is then kept).
 */
int core_update_probe(struct core *c, struct probe *p, const struct core_probe_update *u,
                      int *commanded);

/* 1 when wrappers should send instances (start_stub), 0 after stop_stub. */
int core_running(const struct core *c);

/*
 * Changes a probe's dMax and bins (bins 0 keeps the count), keeping the diagram's grid for
 * it in step. A dMax set this way (a person's: the API, the config) pins the probe: it no
 * longer auto-ranges (core_set_auto_range turns that back on). Nothing is sent or stored
 * (see core_change for that). DQ_ERANGE.
 */
int core_set_dmax(struct core *c, struct probe *p, double dmax_ms, int bins);

/*
 * Lets p auto-range (on) or pins it (off). On a probe with a dMax of its own (configured,
 * or set through the API) its dMax then never goes above that one; otherwise the table's
 * range holds. Saves nothing (the probe row keeps its dMax).
 */
void core_set_auto_range(struct core *c, struct probe *p, int on);

/*
 * Who may veto a grid change: in_use(ctx, p) returns 1 while something relies on p's grid
 * (the adaptive loop: an investigation uses the probe), and auto-ranging then leaves p as
 * it is, nor is p evicted to make room in the probe table. NULL removes it.
 */
void core_set_range_veto(struct core *c, int (*in_use)(void *ctx, const struct probe *p),
                         void *ctx);

/* Counters of auto-ranging, for tests and /metrics. */
struct core_range_stats {
    uint64_t changes; /* grid changes made */
    uint64_t vetoed;  /* changes a decision asked for and the veto held back */
};
void core_get_range_stats(const struct core *c, struct core_range_stats *st);

/*
 * Binds p to a function MOD:FUN/ARITY (wire_mfa_valid; "" or NULL unbinds): from then on
 * enabling p sends `trace;NAME;MS;MFA` (legacy links: not applied, they cannot trace).
 * Takes effect at the next enable. DQ_EINVAL for a malformed function.
 */
int core_bind_probe(struct core *c, struct probe *p, const char *mfa);

/* The command that enables p on the wrappers with dMax ms: trace for a probe bound to a
 * function, set_timeout otherwise (slices point into p). */
struct wire_cmd core_enable_cmd(const struct probe *p, double ms);

/*
 * What a v2 wrapper's state line says about probes bound to functions (msg: a WIRE_STATE;
 * link: the source's id of the connection it came on, so each connection's figures
 * replace its earlier ones). Updates each named probe's `trace` fields; logs a refusal
 * or a lost pattern once per change.
 */
void core_trace_state(struct core *c, uint64_t link, const struct wire_msg *msg);

/* A probe's tracer figures summed over the connections that reported them. */
struct core_trace_sum {
    int installed;    /* connections with the pattern installed now */
    uint64_t calls;   /* calls traced, as the wrappers count them */
    uint64_t dropped; /* open calls dropped */
    double keep;      /* the smallest sampling fraction (1: every call traced) */
};
void core_trace_sum(const struct probe *p, struct core_trace_sum *out);

/* Writes a probe's settings (dMax, bins, enabled, always-on, QTA) to the store. */
int core_save_probe(struct core *c, const struct probe *p);

/* Sets (qta non-NULL, copied) or removes (NULL) a probe's QTA, and saves the probe;
 * DQ_ESTORE when the store did not take it (the QTA is then as it was). */
int core_set_qta(struct core *c, struct probe *p, const struct dq_qta *qta);

/*
 * Applies a probe's configured settings at start, before any source is connected (no
 * command is sent: wrappers get the enabled set when they connect): dMax and bins when
 * dmax_ms > 0; enabled (0/1, −1 = leave) also makes it always-on or not; the QTA when qta
 * is non-NULL; servers when > 0. Registers the probe when new and saves it. DQ_EINVAL /
 * DQ_ERANGE / DQ_EFULL with the probe named in the message.
 */
int core_configure_probe(struct core *c, const char *name, double dmax_ms, int bins, int enabled,
                         const struct dq_qta *qta, int servers);

/*
 * Deletes a probe a person no longer wants: disabled first when it is enabled (recorded and
 * sent like any disable; report as in struct core_change, may be NULL), then its row, windows
 * and triggers in the store, then the probe itself (probes_remove: p is freed). DQ_ESTATE for
 * a node of the loaded diagram (it would come back at the next load), DQ_ESTORE when the
 * store refused (the probe stays, though disabled).
 */
int core_delete_probe(struct core *c, struct probe *p, json_t *report);

/* ---- who is told of changes ------------------------------------------------------------ */

/*
 * Told of every change to a probe's settings once it is made in memory: p and what
 * changed, "enable", "disable", "dmax" (also a resend of it), "qta", or "delete" (p is
 * freed right after the call); p NULL and "diagram" when a diagram was loaded. An enable
 * that brings a dMax is told once ("enable"); a person's PUT of dMax and QTA is told once
 * per setting. The observer must not change probes itself. dqd publishes these as live
 * events.
 */
typedef void (*core_observer_fn)(void *ctx, const struct probe *p, const char *what);

/* Sets the one observer (fn NULL: none). */
void core_set_observer(struct core *c, core_observer_fn fn, void *ctx);

/* ---- QTAs as JSON -------------------------------------------------------------------- */

/* Parses {"points":[[p,t],...],"max_lost":x} into q: t in seconds, or a string with a
 * unit ("250ms"; a bare string number is seconds too); max_lost absent: 1 − the last p (the
 * bound the points already imply: P(d ≤ t) ≥ p leaves at most 1 − p lost).
 * DQ_EINVAL with a message saying what is wrong, or dq_qta_check's error. */
int core_qta_from_json(json_t *j, struct dq_qta *q);

/* The same from JSON text (DQ_EPARSE for text that is not JSON). */
int core_qta_from_json_text(const char *text, struct dq_qta *q);

/* A probe's QTA as JSON (new reference), or JSON null when it has none. */
json_t *core_qta_json(const struct probe *p);

/* Sets the servers of p's station (1 … 100000; 0 = not set) and saves it. DQ_ERANGE;
 * DQ_ESTORE when the store did not take it (servers is then as it was). */
int core_set_servers(struct core *c, struct probe *p, int servers);

/* p's quiet windows as JSON (new reference): [{"wid","rate","n","mean","busy"}]. */
json_t *core_quiet_json(const struct probe *p);

#endif /* DQ_CORE_H */
