/*
 * store.h: dqd's SQLite store (docs/store.md). The only module that calls sqlite3.
 *
 * One struct store wraps one database file: probes and their settings, per-window
 * summaries and an event log (schema version 1), and the adaptive loop's log: triggers,
 * investigations, hypotheses, commands, snapshots (version 2). The schema is versioned
 * with PRAGMA user_version and grown by forward migrations (store_schema.c);
 * docs/store.md describes every table and shows how to read them with the sqlite3 shell.
 *
 * Workload: the daemon calls the store from its loop thread only, at window close (about
 * once a second: one transaction holding a summary row per probe, see store_begin) and on
 * API changes; never on the ingest hot path. A struct store must not be shared between
 * threads. Other processes (the sqlite3 shell, backups) may read the file concurrently:
 * the database runs in WAL mode, and writers wait up to the busy timeout for a lock.
 *
 * Conventions:
 *   - Every fallible function returns DQ_OK (0) or a negative DQ_E* code and sets the
 *     detail message (dq_last_error()). SQLite failures are DQ_ESTORE with SQLite's own
 *     message; a missing row is DQ_ENOTFOUND; bad arguments are DQ_EINVAL / DQ_ERANGE.
 *   - Times are int64 nanoseconds since the Unix epoch (wall clock), like instance times.
 *     Times the store stamps itself (created, updated, an event with time 0) come from the
 *     store's clock: CLOCK_REALTIME unless store_set_clock installed another one.
 *   - Strings passed in are copied by SQLite; strings handed to a callback belong to the
 *     store and are valid only during that callback.
 *   - Callbacks return 0 to go on, a positive value to stop early (the iterating function
 *     then returns DQ_OK), or a negative DQ_E* code to abort (returned as is). A callback
 *     may call other store functions, but not the one iterating (that call fails with
 *     DQ_ESTATE instead of silently ending the iteration).
 *   - JSON columns (*_json fields) are stored as text and must be valid JSON (checked by
 *     SQLite's json_valid: DQ_EINVAL otherwise); the store never interprets them.
 *   - Doubles that have no value (a quantile not reached, an unset dMax) are NAN in C and
 *     NULL in the database.
 */
#ifndef DQ_STORE_H
#define DQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dq.h"

struct store;

/* ---- open / close ------------------------------------------------------------------ */

/* Options of store_open_ex; a zeroed struct means the defaults of store_open. */
struct store_options {
    int busy_timeout_ms; /* wait for another process's lock; 0 = default (1000 ms) */
    int target_version;  /* migrate only up to this version; 0 = latest. For tests/tools. */
    int64_t max_steps;   /* work limit of one call, in SQLite VM steps: a statement (with
                            those its callbacks run) that goes past it fails with DQ_ESTORE
                            instead of looping on a damaged file; 0 = default (10^8) */
};

/*
 * Opens (creating it when missing) the database at `path` and migrates it to the latest
 * schema version. On success *out holds a new store to release with store_close; on
 * failure *out is left untouched and nothing is leaked.
 *
 * Sets WAL journal mode, synchronous=NORMAL (durable across a process crash; a power
 * cut may lose the last transactions), foreign keys on, the busy timeout.
 * Each pending migration runs in its own transaction, so a failure leaves the file at
 * the last version that completed.
 *
 * Fails with DQ_ESTORE (and a message naming the path) when the file cannot be opened or
 * created (missing or read-only directory), is read-only, is not an SQLite database, is
 * another application's database, or has a schema version newer than this code knows
 * (store_schema_latest()): dqd never touches a database written by a newer dqd.
 * DQ_EINVAL when path or out is NULL.
 */
int store_open(const char *path, struct store **out);

/* store_open with options (opts may be NULL for the defaults). */
int store_open_ex(const char *path, const struct store_options *opts, struct store **out);

/*
 * Closes the store: rolls back a transaction left open by store_begin, finalizes every
 * cached statement, closes the database (checkpointing the WAL). store_close(NULL) is a
 * no-op.
 */
void store_close(struct store *st);

/* ---- the database's files ---------------------------------------------------------- */

struct store_lock;

/*
 * Takes the lock of the database at db_path for this process: an exclusive flock(2) on
 * the file `db_path.lock` beside it (created when missing), which then holds the holder's
 * pid. It is not SQLite's locking: other SQLite clients (the sqlite3 shell, backups) still
 * read the database while it is held; it keeps a second dqd from running on the same
 * database. The lock goes away with the process, however it ends; a lock file left behind
 * by a killed process is taken over.
 * DQ_EBUSY when another holder has it, with a message naming its pid ("… is in use by
 * another dqd (pid 1234, lock file /var/lib/dqd/dqd.db.lock)"); DQ_EIO when the lock file
 * cannot be created (missing or read-only directory); DQ_EINVAL, DQ_ENOMEM.
 */
int store_lock(const char *db_path, struct store_lock **out);

/* Releases the lock and removes its file. NULL is a no-op. */
void store_unlock(struct store_lock *lk);

/* 1 when a file exists at path (a database dqd would open rather than create), else 0. */
int store_file_exists(const char *path);

/*
 * Removes the database at path with its -wal, -shm and -journal files, for a start that
 * failed after creating it (so that no empty database is left behind). Call only with the
 * store closed and its lock held. DQ_EIO names the first file that could not be removed
 * (a missing file is not an error).
 */
int store_remove_files(const char *path);

/* Latest schema version this code can migrate to. */
int store_schema_latest(void);

/* Schema version of the open database (PRAGMA user_version) in *version. */
int store_schema_version(struct store *st, int *version);

/* Path the store was opened with (owned by the store). */
const char *store_path(const struct store *st);

/*
 * Replaces the store's clock: now_ns(ctx) must return nanoseconds since the epoch. The
 * daemon passes its own clock so that simulated runs stamp simulated times. NULL restores
 * CLOCK_REALTIME.
 */
void store_set_clock(struct store *st, int64_t (*now_ns)(void *ctx), void *ctx);

/* ---- transactions ---------------------------------------------------------------- */

/*
 * Opens a write transaction (BEGIN IMMEDIATE: the write lock is taken now, so a busy
 * database fails here rather than halfway through). Every store call until store_commit
 * or store_rollback joins it. The daemon brackets each window close with it so that all
 * the summary rows of one window land together or not at all.
 * DQ_ESTATE when a transaction is already open (they do not nest); DQ_ESTORE when the
 * lock cannot be had within the busy timeout.
 */
int store_begin(struct store *st);

/*
 * Commits the open transaction. DQ_ESTATE when none is open. When COMMIT itself fails
 * (DQ_ESTORE) the transaction is rolled back, so the store is always out of it afterwards.
 */
int store_commit(struct store *st);

/* Rolls back the open transaction; DQ_ESTATE when none is open. */
int store_rollback(struct store *st);

/* True between store_begin and store_commit / store_rollback. */
bool store_in_transaction(const struct store *st);

/*
 * For tests of the callers' recovery: the next n commits are refused by SQLite itself
 * (its commit hook turns COMMIT into a rollback), so store_commit fails with DQ_ESTORE and
 * nothing of the transaction remains, as after a full disk. n = 0 turns it off.
 */
void store_refuse_commits(struct store *st, int n);

/* ---- probes ------------------------------------------------------------------------ */

#define STORE_PROBE_NAME_MAX 255 /* bytes, as a probe name (docs/architecture.md §1) */

/* One row of `probes`. */
struct store_probe {
    const char *name;         /* [A-Za-z_][A-Za-z0-9_]*, at most STORE_PROBE_NAME_MAX bytes */
    double dmax_ms;           /* configured dMax in ms, > 0; NAN = not set (daemon default) */
    int bins;                 /* bins over dMax, 1..DQ_MAX_BINS; 0 = not set */
    bool enabled;             /* the wrapper should report it (has a dMax on the wrapper) */
    bool always_on;           /* part of the baseline: never disabled by the adaptive loop */
    const char *qta_json;     /* required ΔQ as JSON text, NULL = none */
    int servers;              /* read only here (store_probe_set_servers): servers of the station
                                 the probe measures, 0 = not set */
    const char *quiet_json;   /* read only here (store_probe_set_quiet): its quiet windows */
    int64_t last_instance_ns; /* read only here (store_probe_set_last): the END of its newest
                                 instance as last recorded; 0 = not known */
    const char *last_origin;  /* read only here (store_probe_set_last): JSON of where that came
                                 from, NULL = not known */
    int64_t created_ns;       /* read only: first upsert */
    int64_t updated_ns;       /* read only: last change */
};

typedef int (*store_probe_cb)(void *ctx, const struct store_probe *p);

/*
 * Inserts the probe or, when a probe of that name exists, overwrites its settings
 * (dmax_ms, bins, enabled, always_on, qta_json); created_ns is kept, updated_ns set to now.
 * DQ_EINVAL for a bad name or invalid JSON, DQ_ERANGE for dmax_ms ≤ 0 or bins out of range.
 */
int store_probe_upsert(struct store *st, const struct store_probe *p);

/*
 * Inserts the probe with default settings (disabled, nothing set) when it is not there
 * yet; leaves an existing probe alone. For "registered on first sight".
 */
int store_probe_ensure(struct store *st, const char *name);

/* Calls cb once with the probe `name`; DQ_ENOTFOUND when there is none. */
int store_probe_get(struct store *st, const char *name, store_probe_cb cb, void *ctx);

/* Calls cb for every probe, in name order (the daemon's reload at start). */
int store_probes_each(struct store *st, store_probe_cb cb, void *ctx);

/* The setters below change one setting and updated_ns; DQ_ENOTFOUND for an unknown probe. */
int store_probe_set_enabled(struct store *st, const char *name, bool enabled);
int store_probe_set_always_on(struct store *st, const char *name, bool always_on);
/* dmax_ms NAN with bins 0 clears both (back to the daemon default). */
int store_probe_set_range(struct store *st, const char *name, double dmax_ms, int bins);
/* qta_json NULL removes the QTA. */
int store_probe_set_qta(struct store *st, const char *name, const char *qta_json);
/* servers 1 … 100000, 0 = not set (DQ_ERANGE otherwise). */
int store_probe_set_servers(struct store *st, const char *name, int servers);
/* The probe's quiet windows as JSON (an array; NULL clears them); DQ_EINVAL when invalid. */
int store_probe_set_quiet(struct store *st, const char *name, const char *quiet_json);

/* Where and when a probe was last heard from: the END of its newest instance (0 leaves it
 * as it is) and its origin as JSON ({"label","node","app","kind"}; NULL leaves it). The
 * probe must exist (store_probe_ensure). DQ_EINVAL for invalid JSON. */
int store_probe_set_last(struct store *st, const char *name, int64_t last_instance_ns,
                         const char *last_origin_json);

/* Deletes the probe and, through the foreign keys, its windows and triggers. DQ_ENOTFOUND
   if unknown. The adaptive log (investigations, hypotheses, ...) keeps naming it. */
int store_probe_delete(struct store *st, const char *name);

/* ---- windows --------------------------------------------------------------------- */

/* Which ΔQ a summary describes: built from instances, or by the diagram operators. */
enum store_kind { STORE_OBSERVED = 0, STORE_CALCULATED = 1 };

/* "observed" / "calculated" (the text stored in the kind columns); NULL if out of range. */
const char *store_kind_name(enum store_kind kind);

/* One row of `windows`: the summary of one probe's ΔQ over one window. */
struct store_window {
    const char *probe;    /* registered in probes on first sight (see store_window_put) */
    enum store_kind kind; /* observed or calculated: one row each per window */
    int64_t start_ns;     /* window [start, end) */
    int64_t end_ns;
    uint64_t n;    /* instances: n_ok + n_fa + n_to for observed, 0 for calculated */
    uint64_t n_ok; /* successful instances */
    uint64_t n_fa; /* failed */
    uint64_t n_to; /* timed out */
    double mean;   /* seconds, conditioned on success; NAN = none */
    double p50;    /* quantiles in seconds; NAN = not reached by the tangible mass */
    double p95;
    double p99;
    double lost;    /* lost mass in [0, 1]; NAN = none (no instances) */
    bool partial;   /* dqd ran for only [start, end] of the window (it stopped or started in
                       it, or the window ended before it started: instances sent late) */
    int64_t run_ns; /* when the dqd run that wrote the row started; 0 = not known (rows
                       from before schema version 6) */
};

typedef int (*store_window_cb)(void *ctx, const struct store_window *w);

/*
 * Writes one summary row. Writing the same (probe, kind, start_ns, run_ns) again replaces
 * the row, so a window written twice by one run is not duplicated, while two runs that each
 * saw part of a window keep a row each. A probe the store does not know
 * yet is registered with default settings first (as store_probe_ensure), like the daemon
 * registers unknown probes on first sight. Call it between store_begin and store_commit
 * at window close. DQ_EINVAL for a bad probe name, end_ns < start_ns or a bad kind.
 */
int store_window_put(struct store *st, const struct store_window *w);

/*
 * Calls cb for the windows of `probe` and `kind` whose start lies in [from_ns, to_ns),
 * newest first, at most `limit` of them (limit ≤ 0: all).
 */
int store_windows_each(struct store *st, const char *probe, enum store_kind kind, int64_t from_ns,
                       int64_t to_ns, int limit, store_window_cb cb, void *ctx);

/*
 * Calls cb for the windows of `probe` and `kind` that start in [from_ns, to_ns), gathered
 * into bins of step_ns (> 0) from from_ns, oldest first, one call per bin that has any, with
 * `windows` the rows it gathered: start_ns the first's start, end_ns the last's end, counts
 * summed, mean weighted by n_ok, lost by n, p50 the n-weighted mean of the p50s, p95 and
 * p99 the largest of the bin (a slow window stays visible). A bin of one window is that
 * window as stored.
 */
typedef int (*store_window_bin_cb)(void *ctx, const struct store_window *w, int windows);
int store_windows_binned(struct store *st, const char *probe, enum store_kind kind, int64_t from_ns,
                         int64_t to_ns, int64_t step_ns, store_window_bin_cb cb, void *ctx);

/* The start of the newest window of `probe` that has exemplars: DQ_ENOTFOUND when none. */
int store_exemplars_newest(struct store *st, const char *probe, int64_t *start_ns);

/*
 * Fills *out with the newest window of `probe` and `kind`; out->probe is set to `probe`.
 * DQ_ENOTFOUND when the probe has no such window.
 */
int store_window_latest(struct store *st, const char *probe, enum store_kind kind,
                        struct store_window *out);

/* ---- events ------------------------------------------------------------------------ */

/* One row of `events`, the general log ("auto-range pushed dMax 64 ms", "trigger fired"). */
struct store_event {
    int64_t id;              /* read only: assigned on insert, increasing */
    int64_t time_ns;         /* 0 on insert = now (store clock) */
    const char *kind;        /* short tag, e.g. "auto_range"; required, ≤ 64 bytes */
    const char *probe;       /* the probe concerned, or NULL */
    const char *detail_json; /* JSON text, or NULL */
};

typedef int (*store_event_cb)(void *ctx, const struct store_event *ev);

/* Appends an event; its id goes to *id when id is not NULL. DQ_EINVAL for bad kind/JSON. */
int store_event_add(struct store *st, const struct store_event *ev, int64_t *id);

/*
 * Calls cb for events with id > after_id, oldest first, matching `probe` and `kind`
 * (NULL = any), at most `limit` (≤ 0: all). Tail the log by passing the last id seen.
 */
int store_events_each(struct store *st, const char *probe, const char *kind, int64_t after_id,
                      int limit, store_event_cb cb, void *ctx);

/* The newest event of `kind`: its id and time. DQ_ENOTFOUND when there is none. */
int store_event_last(struct store *st, const char *kind, int64_t *id, int64_t *time_ns);

/* The time of the newest thing the store recorded (a window's end, an event, a command);
 * 0 for an empty store. Where a dqd that did not stop cleanly was last known to run. */
int store_last_record_ns(struct store *st, int64_t *ns);

/* ---- the history: window ΔQs, exemplars, marks (schema version 7) ------------------ */

/*
 * A window's observed ΔQ kept for the heatmap of the ΔQ over time (window_dqs): its counts
 * per bin, sparse, on the probe's grid coarsened by merging 2^j adjacent bins (exact, the
 * widths being powers of two) until at most STORE_DQ_MAX_BINS remain.
 */
#define STORE_DQ_MAX_BINS 256

struct store_window_dq {
    const char *probe;
    int64_t start_ns, end_ns; /* the window [start, end) */
    int k;                    /* the stored bins are 2^k ms wide */
    int bins;                 /* 1 … STORE_DQ_MAX_BINS: they cover bins·2^k ms */
    uint64_t n;               /* instances (ok, failed, timed out, ok past dMax) */
    double lost;              /* lost mass in [0, 1] */
    const uint64_t *counts;   /* bins entries: instances per bin (read: the store's) */
};

typedef int (*store_window_dq_cb)(void *ctx, const struct store_window_dq *d);

/*
 * Writes window [start_ns, end_ns)'s observed ΔQ q of `probe` (q's counts n_ok, n_fa, n_to,
 * n_out say how many instances it holds; its masses times that many are the counts per
 * bin, rounded). Writing a window again replaces it. The probe is registered when the store
 * does not know it (as store_window_put). DQ_EINVAL for a bad name, grid or window.
 */
int store_window_dq_put(struct store *st, const char *probe, int64_t start_ns, int64_t end_ns,
                        const struct dq *q);

/* Calls cb for the window ΔQs of `probe` that start in [from_ns, to_ns), oldest first.
 * DQ_EPARSE when a stored row was damaged (its counts are not what dqd writes). */
int store_window_dqs_each(struct store *st, const char *probe, int64_t from_ns, int64_t to_ns,
                          store_window_dq_cb cb, void *ctx);

/*
 * An exemplar: one instance of a window kept with what identifies it. A window's exemplars
 * are one row of `exemplars` (a JSON array), so that a window close writes one row per
 * probe, not one per exemplar.
 */
#define STORE_EXEMPLAR_STATUSES "ok, fa, to"
#define STORE_EXEMPLARS_MAX 64 /* exemplars of one window, at most */
struct store_exemplar {
    const char *probe;       /* read: the probe; ignored by store_exemplars_put */
    int64_t start_ns;        /* read: its window's start; ignored by store_exemplars_put */
    int rank;                /* read: its place in its window's list (0, 1, …) */
    const char *status;      /* "ok", "fa" or "to" */
    double duration;         /* seconds */
    int64_t end_ns;          /* when it ended */
    const char *trace_id;    /* hex, or NULL */
    const char *instance_id; /* hex, or NULL */
    const char *node;        /* the node it came from, or NULL */
    const char *attrs_json;  /* a JSON object of its attributes, or NULL */
};

typedef int (*store_exemplar_cb)(void *ctx, const struct store_exemplar *e);

/*
 * Writes the n (1 … STORE_EXEMPLARS_MAX) exemplars of window start_ns of `probe`, in the
 * order they are given (the successful ones slowest first, then the failed ones, as the
 * core keeps them), replacing what that window had. DQ_EINVAL for a bad name, status,
 * duration or attributes (a JSON object); the probe is registered when new.
 */
int store_exemplars_put(struct store *st, const char *probe, int64_t start_ns,
                        const struct store_exemplar *e, int n);

/*
 * Calls cb for the exemplars of `probe` whose window starts in [from_ns, to_ns): with
 * failed 0 the successful ones, slowest first; with failed 1 the failed and timed-out
 * ones, newest first; at most `limit` (≤ 0: all).
 */
int store_exemplars_each(struct store *st, const char *probe, int64_t from_ns, int64_t to_ns,
                         int failed, int limit, store_exemplar_cb cb, void *ctx);

/*
 * A mark: something that happened at one time, for the marks on time charts. Read from the
 * events (kind as stored: "trigger_fired", "probe_enabled", "dqd_started", …; probe from the
 * row or its detail's "probe"), the investigations ("investigation_opened" at its opening,
 * probe = its node; "verdict" at its close) and their hypotheses ("step": every step but the
 * root and the verdict, probe = the step's node, hypothesis its id).
 */
struct store_mark {
    int64_t time_ns;
    const char *kind;
    const char *probe;       /* or NULL (dqd itself) */
    int64_t investigation;   /* 0: none */
    int64_t hypothesis;      /* "step": its id; else 0 */
    const char *detail_json; /* the event's detail; for the adaptive loop's, its fields
                                ("problem", "verdict", "verdict_node", "culprits": the
                                evidence's list of {"probe", "share", "reference"} or null,
                                "action", "probes", "reason"); may be NULL */
};

typedef int (*store_mark_cb)(void *ctx, const struct store_mark *m);

/* Calls cb for the marks in [from_ns, to_ns), newest first, at most `limit` (≤ 0: all). */
int store_marks_each(struct store *st, int64_t from_ns, int64_t to_ns, int limit, store_mark_cb cb,
                     void *ctx);

/* ---- retention ------------------------------------------------------------------- */

/* What store_prune deletes. 0 in a field means "no limit". */
struct store_retention {
    int64_t window_max_age_ns; /* windows (and their exemplars) that started more than this
                                  before now */
    int64_t window_max_rows;   /* beyond the newest N windows per probe and kind */
    int64_t event_max_age_ns;  /* events older than this */
    int64_t dq_max_age_ns;     /* window ΔQs (the heatmap's) that started more than this
                                  before now */
};

/* Defaults: windows kept 7 days, no row cap, events kept forever, window ΔQs a day. */
void store_retention_default(struct store_retention *r);

/* Replaces the store's retention policy (copied). DQ_EINVAL for a negative field. */
int store_set_retention(struct store *st, const struct store_retention *r);

/*
 * Applies the retention policy now (store clock); the number of rows deleted goes to
 * *deleted when it is not NULL. Runs in its own transaction, or joins the caller's.
 * The daemon calls it every few minutes, not at every window close.
 */
int store_prune(struct store *st, int64_t *deleted);

/* ---- the adaptive loop's log (schema version 2) ----------------------------------- */
/*
 * Tables of the adaptive loop (docs/architecture.md §4): triggers, investigations, hypotheses,
 * commands, snapshots. Ids are positive int64 assigned by the store; 0 in an id field means "none".
 * Kinds, actions and strategies are short free texts (1..32 bytes) chosen by the
 * controller; the values with a fixed meaning are listed per field and checked.
 */

/* One row of `triggers`: a per-probe condition with hysteresis. */
struct store_trigger {
    int64_t id;              /* read only */
    const char *probe;       /* must exist in probes (DQ_ENOTFOUND otherwise) */
    const char *kind;        /* "qta", "load", "lost", "divergence", "cv", ... */
    double threshold;        /* the limit, NAN = none (a QTA trigger uses the probe's QTA) */
    int fire_after;          /* k ≥ 1 bad windows in a row to fire */
    int clear_after;         /* m ≥ 1 good windows in a row to clear */
    const char *params_json; /* further settings (e.g. {"alpha":0.01}), or NULL */
    bool enabled;
    bool fired;         /* read only on upsert: state, changed by store_trigger_set_state */
    int bad;            /* read only on upsert: consecutive bad windows so far */
    int good;           /* read only on upsert: consecutive good windows so far */
    int64_t fired_ns;   /* read only: last time it fired, 0 = never */
    int64_t cleared_ns; /* read only: last time it cleared, 0 = never */
    int64_t created_ns; /* read only */
    int64_t updated_ns; /* read only */
};

typedef int (*store_trigger_cb)(void *ctx, const struct store_trigger *t);

/*
 * Creates the trigger (probe, kind) or updates its configuration (threshold, fire_after,
 * clear_after, params_json, enabled), keeping its state and counters. Its id goes to *id
 * when id is not NULL. DQ_ERANGE for fire_after or clear_after < 1.
 */
int store_trigger_upsert(struct store *st, const struct store_trigger *t, int64_t *id);

/*
 * Records the hysteresis state after a window: fired or clear, and the counters. A change
 * from clear to fired stamps fired_ns, the reverse cleared_ns (store clock).
 * DQ_ENOTFOUND for an unknown id, DQ_ERANGE for negative counters.
 */
int store_trigger_set_state(struct store *st, int64_t id, bool fired, int bad, int good);

/* Calls cb once with trigger `id`; DQ_ENOTFOUND when there is none. */
int store_trigger_get(struct store *st, int64_t id, store_trigger_cb cb, void *ctx);

/* Calls cb for the triggers of `probe` (NULL: of every probe), by probe then kind. */
int store_triggers_each(struct store *st, const char *probe, store_trigger_cb cb, void *ctx);

/* Deletes a trigger (investigations and snapshots keep their rows, without the link). */
int store_trigger_delete(struct store *st, int64_t id);

/* Verdicts of an investigation. */
#define STORE_VERDICTS "localized, diffuse, inconclusive, aborted, healthy"

/* One row of `investigations`: one run of the adaptive search. */
struct store_investigation {
    int64_t id;               /* read only */
    const char *node;         /* where the problem was seen (a probe / diagram node) */
    const char *problem;      /* "latency", "qta", "variance", "lost", "divergence", ... */
    const char *strategy;     /* "children", "bisect", ... */
    const char *origin;       /* "trigger" or "person" */
    int64_t trigger_id;       /* the trigger that started it, 0 = none */
    const char *requested_by; /* free text (who ran dqctl diagnose), or NULL */
    bool open;                /* read only: not closed yet */
    const char *verdict;      /* read only: NULL while open, else one of STORE_VERDICTS */
    const char *verdict_node; /* read only: the node the verdict names, or NULL */
    const char *summary_json; /* read only: the verdict's evidence, or NULL */
    int64_t opened_ns;        /* 0 on open = now */
    int64_t closed_ns;        /* read only: 0 while open */
};

typedef int (*store_investigation_cb)(void *ctx, const struct store_investigation *inv);

/* Opens an investigation; its id goes to *id (required). DQ_EINVAL for a missing or bad field
   (node, problem, strategy, origin "trigger" or "person"); DQ_ENOTFOUND for an unknown
   trigger_id. */
int store_investigation_open(struct store *st, const struct store_investigation *inv, int64_t *id);

/*
 * Closes investigation `id` with a verdict (one of STORE_VERDICTS), the node it names
 * (or NULL) and its evidence as JSON (or NULL); closed_ns = now. DQ_ENOTFOUND for an
 * unknown id, DQ_ESTATE when it is already closed, DQ_EINVAL for a bad verdict or JSON.
 */
int store_investigation_close(struct store *st, int64_t id, const char *verdict,
                              const char *verdict_node, const char *summary_json);

/*
 * Sets the problem kind of investigation `id` (1..32 bytes): a person's diagnosis opens
 * with the kind not known yet and learns it from the node's data. DQ_ENOTFOUND for an
 * unknown id, DQ_EINVAL for a bad kind.
 */
int store_investigation_set_problem(struct store *st, int64_t id, const char *problem);

/* Calls cb once with investigation `id`; DQ_ENOTFOUND when there is none. */
int store_investigation_get(struct store *st, int64_t id, store_investigation_cb cb, void *ctx);

/*
 * Calls cb for investigations, newest first: only the open ones when open_only (the
 * daemon's resume after a restart), at most `limit` (≤ 0: all).
 */
int store_investigations_each(struct store *st, bool open_only, int limit,
                              store_investigation_cb cb, void *ctx);

/* Verdicts of a hypothesis: "pending" until evaluated. */
#define STORE_HYPOTHESIS_VERDICTS                                                                  \
    "pending, confirmed, refuted, localized, diffuse, inconclusive, healthy, aborted"

/* One row of `hypotheses`: one step of an investigation (a node of the VAIF forest). */
struct store_hypothesis {
    int64_t id;              /* read only */
    int64_t investigation;   /* the investigation it belongs to (must exist) */
    int64_t parent;          /* the hypothesis it refines, in the same investigation; 0 = root */
    const char *node;        /* "the problem at node lies in ..." */
    const char *kind;        /* the problem kind it attributes ("latency", "variance", ...) */
    const char *action;      /* "root", "expand" (enabled probes), "evaluate", "disable",
                                "pause", "verdict", ... */
    const char *probes_json; /* JSON array of the probe names it enabled (or, for "disable",
                                disabled); NULL on insert = [] */
    const char *stats_json;  /* the statistics that motivated it, or NULL */
    const char *verdict;     /* one of STORE_HYPOTHESIS_VERDICTS; NULL on insert = pending */
    int64_t created_ns;      /* 0 on insert = now */
    int64_t updated_ns;      /* read only: last verdict change */
};

typedef int (*store_hypothesis_cb)(void *ctx, const struct store_hypothesis *h);

/*
 * Records a hypothesis; its id goes to *id (required). DQ_ENOTFOUND when the investigation or the
 * parent does not exist, DQ_EINVAL when the parent belongs to another investigation or a
 * field is bad (probes_json not a JSON array, unknown verdict).
 */
int store_hypothesis_insert(struct store *st, const struct store_hypothesis *h, int64_t *id);

/*
 * Sets a hypothesis's verdict and, when stats_json is not NULL, replaces its statistics;
 * updated_ns = now. DQ_ENOTFOUND for an unknown id.
 */
int store_hypothesis_set_verdict(struct store *st, int64_t id, const char *verdict,
                                 const char *stats_json);

/* Calls cb once with hypothesis `id`; DQ_ENOTFOUND when there is none. */
int store_hypothesis_get(struct store *st, int64_t id, store_hypothesis_cb cb, void *ctx);

/* Calls cb for every hypothesis of an investigation in insertion order (parents first). */
int store_hypotheses_of_investigation(struct store *st, int64_t investigation,
                                      store_hypothesis_cb cb, void *ctx);

/*
 * Calls cb for the hypotheses whose probes list names `probe`, newest first: the first
 * one with action "expand" is the answer to "why was this probe enabled?".
 */
int store_hypotheses_of_probe(struct store *st, const char *probe, store_hypothesis_cb cb,
                              void *ctx);

/*
 * Calls cb for hypothesis `id` and then each ancestor up to the root (the chain `dqctl
 * why` prints). DQ_ENOTFOUND when `id` does not exist.
 */
int store_hypothesis_chain(struct store *st, int64_t id, store_hypothesis_cb cb, void *ctx);

/* Statuses of a command. */
#define STORE_COMMAND_STATUSES "sent, acked, failed, not_applied, ambiguous"

/* One row of `commands`: something dqd sent (or meant to send) to a wrapper. */
struct store_command {
    int64_t id;            /* read only */
    int64_t time_ns;       /* when sent; 0 on insert = now */
    const char *wrapper;   /* which wrapper link (its id or address) */
    const char *command;   /* "set_timeout", "clear_timeout", "start_stub", "stop_stub", ... */
    const char *probe;     /* the probe concerned, or NULL */
    const char *args_json; /* arguments (e.g. {"dmax_ms":64}), or NULL */
    int64_t hypothesis;    /* the hypothesis it serves, 0 = none */
    const char *status;    /* one of STORE_COMMAND_STATUSES; NULL on insert = sent */
    int64_t status_ns;     /* read only: last status change, 0 = none */
    const char *detail;    /* free text (why it failed / was not applied), or NULL */
};

typedef int (*store_command_cb)(void *ctx, const struct store_command *c);

/* Records a command; its id goes to *id when id is not NULL. */
int store_command_insert(struct store *st, const struct store_command *c, int64_t *id);

/* Marks command `id` acknowledged now. DQ_ENOTFOUND for an unknown id. */
int store_command_ack(struct store *st, int64_t id);

/* Sets the status of command `id` (with an optional detail) now. */
int store_command_set_status(struct store *st, int64_t id, const char *status, const char *detail);

/* Which commands store_commands_each visits: zero / NULL fields match everything. */
struct store_command_filter {
    int64_t hypothesis; /* only this hypothesis's commands */
    const char *wrapper;
    const char *status;
    int64_t after_id;  /* only ids greater than this */
    int limit;         /* ≤ 0: all */
    const char *probe; /* only commands for this probe (NULL: any) */
};

/* Calls cb for the matching commands, oldest first. f may be NULL (all commands). */
int store_commands_each(struct store *st, const struct store_command_filter *f, store_command_cb cb,
                        void *ctx);

/* One row of `snapshots`: the ΔQs of a probe and its neighbours around a trigger. */
struct store_snapshot {
    int64_t id;            /* read only */
    int64_t trigger_id;    /* the trigger that caused it, 0 = none */
    int64_t investigation; /* the investigation it belongs to, 0 = none */
    const char *probe;     /* the probe whose trigger fired */
    const char *reason;    /* free text, or NULL */
    int64_t time_ns;       /* the firing: windows before it are "before", after "after" */
    int windows;           /* W, windows kept on each side, ≥ 1 */
    bool complete;         /* read only: store_snapshot_complete was called */
    int64_t created_ns;    /* read only */
    int64_t completed_ns;  /* read only: 0 while collecting */
    int dq_count;          /* read only: ΔQs stored so far */
};

/* One ΔQ of a snapshot, as handed to a callback. */
struct store_snapshot_dq {
    const char *probe;
    enum store_kind kind;
    int64_t start_ns; /* its window */
    int64_t end_ns;
    const struct dq *dq; /* valid during the callback only; dq_clone it to keep it */
};

typedef int (*store_snapshot_cb)(void *ctx, const struct store_snapshot *s);
typedef int (*store_snapshot_dq_cb)(void *ctx, const struct store_snapshot_dq *d);

/* Creates a snapshot (collecting); its id goes to *id (required). DQ_ERANGE for windows < 1,
   DQ_ENOTFOUND for an unknown trigger_id or investigation. */
int store_snapshot_insert(struct store *st, const struct store_snapshot *s, int64_t *id);

/*
 * Adds one ΔQ (grid, counts, masses) of `probe` for the window [start_ns, end_ns) to
 * snapshot `snapshot`; adding the same (probe, kind, start_ns) again replaces it.
 * Masses round-trip exactly. DQ_ENOTFOUND for an unknown snapshot, DQ_ESTATE when it is
 * complete, DQ_ERANGE for a bad grid.
 */
int store_snapshot_add_dq(struct store *st, int64_t snapshot, const char *probe,
                          enum store_kind kind, int64_t start_ns, int64_t end_ns,
                          const struct dq *dq);

/* Marks the snapshot complete (no more ΔQs); DQ_ESTATE when it already is. */
int store_snapshot_complete(struct store *st, int64_t id);

/*
 * Reads snapshot `id`: snapshot_cb once with its row (may be NULL), then dq_cb (may be
 * NULL) for each ΔQ by probe, kind and window start. DQ_ENOTFOUND when there is none;
 * DQ_EPARSE when a stored ΔQ was damaged (e.g. edited by hand).
 */
int store_snapshot_get(struct store *st, int64_t id, store_snapshot_cb snapshot_cb,
                       store_snapshot_dq_cb dq_cb, void *ctx);

/* Calls cb for snapshots, newest first, at most `limit` (≤ 0: all). */
int store_snapshots_each(struct store *st, int limit, store_snapshot_cb cb, void *ctx);

/* ---- the outcome diagram (version 5) ------------------------------------------------- */

/* One diagram dqd loaded. Strings belong to the store (valid during the callback). */
struct store_diagram {
    int64_t id;
    const char *text; /* the .dq text as loaded, NUL-terminated */
    size_t len;       /* its length in bytes */
    const char *path; /* the file it came from, NULL when sent with PUT /api/v1/diagram */
    int64_t loaded_ns;
};

typedef int (*store_diagram_cb)(void *ctx, const struct store_diagram *d);

/*
 * Records the diagram now in force: `text` (NUL-terminated, as parsed) and the file it came
 * from (`path`, NULL for one sent through the API). A new row only when text or path differ
 * from the latest row's (a restart with the same --diagram adds nothing); *id (may be NULL)
 * gets the latest row's id either way. The caller has parsed the text: the store keeps it
 * as given. DQ_EINVAL for a NULL text.
 */
int store_diagram_put(struct store *st, const char *text, const char *path, int64_t *id);

/* Calls cb once with the latest recorded diagram. DQ_ENOTFOUND when none was recorded. */
int store_diagram_latest(struct store *st, store_diagram_cb cb, void *ctx);

#endif /* DQ_STORE_H */
