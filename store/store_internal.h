/*
 * store_internal.h: what the store's own files share (the struct, the statement cache,
 * the migration list, binding helpers). Not part of the API: nothing outside store/
 * includes it, and it is the only header that mentions sqlite3 types.
 */
#ifndef DQ_STORE_INTERNAL_H
#define DQ_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

/*
 * One slot per SQL statement the store runs repeatedly. A slot is prepared on first use
 * (SQLITE_PREPARE_PERSISTENT) and kept until store_close, so the window-close path never
 * re-parses SQL.
 */
enum store__stmt_id {
    STORE__PROBE_UPSERT,
    STORE__PROBE_ENSURE,
    STORE__PROBE_SET_LAST,
    STORE__PROBE_GET,
    STORE__PROBE_ALL,
    STORE__PROBE_SET_ENABLED,
    STORE__PROBE_SET_ALWAYS_ON,
    STORE__PROBE_SET_RANGE,
    STORE__PROBE_SET_QTA,
    STORE__PROBE_SET_SERVERS,
    STORE__PROBE_SET_QUIET,
    STORE__PROBE_DELETE,
    STORE__PROBE_NAMES,
    STORE__WINDOW_PUT,
    STORE__EVENT_LAST,
    STORE__LAST_RECORD,
    STORE__WINDOW_RANGE,
    STORE__WINDOW_PRUNE_AGE,
    STORE__WINDOW_PRUNE_ROWS,
    STORE__EVENT_ADD,
    STORE__EVENT_EACH,
    STORE__EVENT_PRUNE_AGE,
    STORE__TRIGGER_UPSERT,
    STORE__TRIGGER_SET_STATE,
    STORE__TRIGGER_GET,
    STORE__TRIGGER_EACH,
    STORE__TRIGGER_DELETE,
    STORE__INV_OPEN,
    STORE__INV_CLOSE,
    STORE__INV_SET_PROBLEM,
    STORE__INV_GET,
    STORE__INV_EACH,
    STORE__HYP_INSERT,
    STORE__HYP_SET_VERDICT,
    STORE__HYP_GET,
    STORE__HYP_OF_INV,
    STORE__HYP_OF_PROBE,
    STORE__HYP_CHAIN,
    STORE__CMD_INSERT,
    STORE__CMD_SET_STATUS,
    STORE__CMD_EACH,
    STORE__SNAP_INSERT,
    STORE__SNAP_STATE,
    STORE__SNAP_ADD_DQ,
    STORE__SNAP_COMPLETE,
    STORE__SNAP_GET,
    STORE__SNAP_DQS,
    STORE__SNAP_EACH,
    STORE__DIAGRAM_PUT,
    STORE__DIAGRAM_LATEST,
    STORE__DIAGRAM_LATEST_ID,
    STORE__WDQ_PUT,
    STORE__WDQ_RANGE,
    STORE__WDQ_PRUNE_AGE,
    STORE__EX_PUT,
    STORE__EX_SLOWEST,
    STORE__EX_FAILED,
    STORE__EX_PRUNE_AGE,
    STORE__MARKS,
    STORE__WINDOW_BINNED,
    STORE__EX_NEWEST,
    STORE__STMT_COUNT
};

struct store {
    sqlite3 *db;                           /* the connection, owned */
    char *path;                            /* as given to store_open, owned */
    sqlite3_stmt *stmt[STORE__STMT_COUNT]; /* statement cache, NULL until first use */
    bool in_txn;                           /* between store_begin and commit/rollback */
    bool opened;                           /* store_open succeeded (checks passed) */
    uint64_t ticks;                        /* progress calls since the statement began */
    uint64_t tick_limit;                   /* interrupt a statement past this many (0 = never) */
    int iterating;                         /* depth of store__each loops running callbacks */
    int64_t (*now_ns)(void *ctx);          /* clock for times the store stamps */
    void *now_ctx;                         /* its argument */
    struct store_retention retention;      /* policy applied by store_prune */
    char *text;                            /* scratch for a snapshot ΔQ's JSON masses */
    size_t text_cap;                       /* its size */
    double *masses;                        /* scratch for masses read back (DQ_MAX_BINS) */
    int refuse_commits;                    /* store_refuse_commits: commits still to refuse */
};

/*
 * One forward migration: the SQL statements that take the schema from version - 1 to
 * version, run in order in one transaction. Kept as separate strings because C11 only
 * promises string literals of 4095 bytes.
 */
struct store__migration {
    int version;              /* 1, 2, ... in order, no gaps */
    const char *what;         /* one line for messages and docs */
    const char *const *steps; /* NULL-terminated; never edited once released */
    bool edits_schema;        /* writes sqlite_schema: defensive mode is off while it runs */
};

/* Bytes of one window's exemplars as JSON text, at most (STORE_EXEMPLARS_MAX of them). */
#define STORE__EXEMPLAR_TEXT_MAX 65536

/* In a migration step, stands for the connection's PRAGMA schema_version plus one (the
 * runner substitutes it), for the steps that edit sqlite_schema. */
#define STORE_SCHEMA_VERSION_NEXT "@schema_version+1@"

extern const struct store__migration store__migrations[];
extern const int store__migration_count;

/*
 * What a SELECT's row function hands each row to: the caller's callback (the member of
 * the row's type) and its context. One struct for every table; `store` and `probe`/`kind`
 * are for the row functions that need more than the row (snapshot ΔQs, windows).
 */
struct store__iter {
    void *ctx;
    union {
        store_probe_cb probe;
        store_window_cb window;
        store_event_cb event;
        store_trigger_cb trigger;
        store_investigation_cb investigation;
        store_hypothesis_cb hypothesis;
        store_command_cb command;
        store_snapshot_cb snapshot;
        store_snapshot_dq_cb snapshot_dq;
        store_diagram_cb diagram;
        store_window_dq_cb window_dq;
        store_exemplar_cb exemplar;
        store_mark_cb mark;
        store_window_bin_cb window_bin;
    } cb;
    struct store *store;
    const char *probe;
    enum store_kind kind;
};

/* The statement of slot `id` (preparing `sql` on first use) in *out. */
int store__stmt(struct store *st, enum store__stmt_id id, const char *sql, sqlite3_stmt **out);

/* Resets a statement after use and drops its bindings (strings are bound SQLITE_STATIC). */
void store__done(sqlite3_stmt *s);

/*
 * Turns the connection's last error into a DQ code with "what: SQLite's message":
 * a foreign-key failure is DQ_ENOTFOUND, a CHECK failure DQ_EINVAL, anything else
 * DQ_ESTORE. Call it before resetting the failed statement.
 */
int store__fail(struct store *st, const char *what);

/* Current time of the store's clock. */
int64_t store__now(struct store *st);

/* DQ_OK when name is a valid probe name, else DQ_EINVAL with a message. */
int store__check_name(const char *name);

/* Binding helpers: NULL for a NULL string / a NAN double. Return the sqlite3_bind code. */
int store__bind_text(sqlite3_stmt *s, int i, const char *text);
int store__bind_double(sqlite3_stmt *s, int i, double v);

/* Column helper: NAN for NULL. */
double store__column_double(sqlite3_stmt *s, int i);

/*
 * Runs a bound statement that must return no row; `what` names it in the message.
 * Resets the statement. DQ_ENOTFOUND when must_change and no row changed.
 */
int store__step_write(struct store *st, sqlite3_stmt *s, const char *what, bool must_change);

/*
 * Steps a bound SELECT, calling row(s, arg) per result row; row's non-zero return stops
 * (negative: returned as the error, positive: success). *rows (may be NULL) counts the
 * rows seen. Resets the statement.
 */
int store__each(struct store *st, sqlite3_stmt *s, int (*row)(sqlite3_stmt *s, void *arg),
                void *arg, int *rows, const char *what);

/* Column text, NULL for NULL. */
const char *store__column_text(sqlite3_stmt *s, int i);

/* Binds an id: NULL for 0 (no link). */
int store__bind_id(sqlite3_stmt *s, int i, int64_t id);

/*
 * The statement of slot `id` (preparing `sql` on first use) in *out, with ?1, ?2, ...
 * bound from the arguments that follow, one per letter of `types`:
 *   'l' int64_t            'L' int64_t id, NULL when 0
 *   'i' int                'N' int, NULL when 0 (an unset count)
 *   'b' int/bool as 0 or 1 't' const char *, NULL when NULL (bound SQLITE_STATIC)
 *   'd' double, NULL when NAN
 * On failure nothing stays bound.
 */
int store__prepare(struct store *st, enum store__stmt_id id, const char *sql, sqlite3_stmt **out,
                   const char *types, ...);

/*
 * store__prepare, then store__step_write: one INSERT, UPDATE or DELETE. `what` names it in
 * messages; DQ_ENOTFOUND when must_change and no row changed.
 */
int store__write(struct store *st, enum store__stmt_id id, const char *sql, const char *what,
                 bool must_change, const char *types, ...);

/*
 * store__prepare, then store__each: a SELECT calling row(s, arg) per row; `what` names it
 * in messages ("reading triggers"). With `missing` non-NULL (a lookup by key) no row at all
 * is DQ_ENOTFOUND with that message ("no trigger 7").
 */
int store__query(struct store *st, enum store__stmt_id id, const char *sql,
                 int (*row)(sqlite3_stmt *s, void *arg), void *arg, const char *what,
                 const char *missing, const char *types, ...);

/* Runs one SQL text without results (BEGIN, SAVEPOINT, ...); DQ_ESTORE on failure. */
int store__exec(struct store *st, const char *sql);

#endif /* DQ_STORE_INTERNAL_H */
