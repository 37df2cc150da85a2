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
    STORE__PROBE_GET,
    STORE__PROBE_ALL,
    STORE__PROBE_SET_ENABLED,
    STORE__PROBE_SET_ALWAYS_ON,
    STORE__PROBE_SET_RANGE,
    STORE__PROBE_SET_QTA,
    STORE__PROBE_DELETE,
    STORE__PROBE_NAMES,
    STORE__WINDOW_PUT,
    STORE__WINDOW_RANGE,
    STORE__WINDOW_PRUNE_AGE,
    STORE__WINDOW_PRUNE_ROWS,
    STORE__EVENT_ADD,
    STORE__EVENT_EACH,
    STORE__EVENT_PRUNE_AGE,
    STORE__STMT_COUNT
};

struct store {
    sqlite3 *db;                           /* the connection, owned */
    char *path;                            /* as given to store_open, owned */
    sqlite3_stmt *stmt[STORE__STMT_COUNT]; /* statement cache, NULL until first use */
    bool in_txn;                           /* between store_begin and commit/rollback */
    int64_t (*now_ns)(void *ctx);          /* clock for times the store stamps */
    void *now_ctx;                         /* its argument */
    struct store_retention retention;      /* policy applied by store_prune */
};

/* One forward migration: the SQL that takes the schema from version - 1 to version. */
struct store__migration {
    int version;      /* 1, 2, ... in order, no gaps */
    const char *what; /* one line for messages and docs */
    const char *sql;  /* may hold several statements; never edited once released */
};

extern const struct store__migration store__migrations[];
extern const int store__migration_count;

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

/* Runs one SQL text without results (BEGIN, SAVEPOINT, ...); DQ_ESTORE on failure. */
int store__exec(struct store *st, const char *sql);

#endif /* DQ_STORE_INTERNAL_H */
