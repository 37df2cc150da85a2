/*
 * store.c: opening, migrating and closing the database, transactions, and the helpers
 * the other store files share (statement cache, error translation, binding).
 *
 * Opening is defensive because the path comes from the command line: the file may be
 * missing, unwritable, garbage, someone else's SQLite database, or written by a newer
 * dqd. Each case ends in DQ_ESTORE with a message naming the path, never in a crash or a
 * modified file. The checks read the header through PRAGMAs before anything is written.
 */
#include "store.h"
#include "store_internal.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_APPLICATION_ID 1146176561 /* 'DQD1', set by migration 1 */
#define STORE_BUSY_TIMEOUT_MS 1000
/*
 * A damaged file can send SQLite's b-tree walk round in circles; dqd must not hang its
 * loop on one. The progress handler runs every STORE_TICK_OPS virtual-machine steps and
 * interrupts a statement (with the statements its callbacks run) after the work limit:
 * by default 10^8 steps, seconds of work, a hundred times what the biggest legitimate
 * statement (pruning a million windows) needs.
 */
#define STORE_TICK_OPS 1000
#define STORE_MAX_STEPS 100000000

/* ---- shared helpers ------------------------------------------------------------------ */

int store__stmt(struct store *st, enum store__stmt_id id, const char *sql, sqlite3_stmt **out) {
    assert(id >= 0 && id < STORE__STMT_COUNT);
    if (!st->stmt[id]) {
        if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[id], NULL) !=
            SQLITE_OK) {
            st->stmt[id] = NULL;
            return store__fail(st, "prepare");
        }
    } else if (sqlite3_stmt_busy(st->stmt[id])) {
        /* A callback called back into the function that is iterating on this statement:
           resetting it would silently end the outer iteration. */
        return dq_fail(DQ_ESTATE, "store: statement already in use (re-entrant call from a "
                                  "callback into the function iterating)");
    }
    if (!st->iterating) {
        st->ticks = 0;
    }
    *out = st->stmt[id];
    return DQ_OK;
}

void store__done(sqlite3_stmt *s) {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

int store__fail(struct store *st, const char *what) {
    int ext = sqlite3_extended_errcode(st->db);
    int code = DQ_ESTORE;
    if (ext == SQLITE_CONSTRAINT_FOREIGNKEY) {
        code = DQ_ENOTFOUND;
    } else if (ext == SQLITE_CONSTRAINT_CHECK || ext == SQLITE_CONSTRAINT_NOTNULL ||
               ext == SQLITE_CONSTRAINT_TRIGGER) {
        code = DQ_EINVAL;
    }
    if (ext == SQLITE_INTERRUPT) {
        return dq_fail(code,
                       "%s: stopped after %llu steps; is the database damaged? "
                       "(sqlite3 %s 'PRAGMA integrity_check')",
                       what, (unsigned long long)(st->tick_limit * STORE_TICK_OPS), st->path);
    }
    return dq_fail(code, "%s: %s", what, sqlite3_errmsg(st->db));
}

static int progress(void *ctx) {
    struct store *st = ctx;
    return st->tick_limit && ++st->ticks > st->tick_limit;
}

static int64_t realtime_ns(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t store__now(struct store *st) {
    return st->now_ns(st->now_ctx);
}

int store__check_name(const char *name) {
    if (!name) {
        return dq_fail(DQ_EINVAL, "probe name is NULL");
    }
    size_t len = strlen(name);
    if (len == 0 || len > STORE_PROBE_NAME_MAX) {
        return dq_fail(DQ_EINVAL, "probe name length %zu not in [1, %d]", len,
                       STORE_PROBE_NAME_MAX);
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        int digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0)) {
            return dq_fail(DQ_EINVAL, "probe name \"%.64s\": character %zu is not allowed", name,
                           i);
        }
    }
    return DQ_OK;
}

int store__bind_text(sqlite3_stmt *s, int i, const char *text) {
    return text ? sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC) : sqlite3_bind_null(s, i);
}

int store__bind_double(sqlite3_stmt *s, int i, double v) {
    return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

double store__column_double(sqlite3_stmt *s, int i) {
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

int store__step_write(struct store *st, sqlite3_stmt *s, const char *what, bool must_change) {
    int rc = DQ_OK;
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = store__fail(st, what);
    } else if (must_change && sqlite3_changes(st->db) == 0) {
        rc = dq_fail(DQ_ENOTFOUND, "%s: no such row", what);
    }
    store__done(s);
    return rc;
}

int store__each(struct store *st, sqlite3_stmt *s, int (*row)(sqlite3_stmt *s, void *arg),
                void *arg, int *rows, const char *what) {
    int rc = DQ_OK, step, seen = 0;
    st->iterating++; /* statements the callbacks run count against this one's budget */
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        seen++;
        int r = row(s, arg);
        if (r != 0) {
            rc = r < 0 ? r : DQ_OK;
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = store__fail(st, what);
    }
    store__done(s);
    st->iterating--;
    if (rows) {
        *rows = seen;
    }
    return rc;
}

/* Binds ?1, ?2, ... of s from ap (the letters of store__prepare). SQLITE_OK or an error. */
static int bind_va(sqlite3_stmt *s, const char *types, va_list ap) {
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        int at = i + 1;
        switch (types[i]) {
        case 'l':
            rc = sqlite3_bind_int64(s, at, va_arg(ap, int64_t));
            break;
        case 'L':
            rc = store__bind_id(s, at, va_arg(ap, int64_t));
            break;
        case 'i':
            rc = sqlite3_bind_int(s, at, va_arg(ap, int));
            break;
        case 'N': {
            int v = va_arg(ap, int);
            rc = v ? sqlite3_bind_int(s, at, v) : sqlite3_bind_null(s, at);
            break;
        }
        case 'b':
            rc = sqlite3_bind_int(s, at, va_arg(ap, int) ? 1 : 0);
            break;
        case 't':
            rc = store__bind_text(s, at, va_arg(ap, const char *));
            break;
        case 'd':
            rc = store__bind_double(s, at, va_arg(ap, double));
            break;
        default:
            rc = SQLITE_MISUSE;
            break;
        }
    }
    return rc;
}

static int prepare_va(struct store *st, enum store__stmt_id id, const char *sql, sqlite3_stmt **out,
                      const char *types, va_list ap) {
    int rc = store__stmt(st, id, sql, out);
    if (rc) {
        return rc;
    }
    if (sqlite3_bind_parameter_count(*out) != (int)strlen(types)) {
        /* a programmer's error, caught on the first run of the statement */
        return dq_fail(DQ_EINVAL, "store: statement %d has %d parameters, %zu types given", (int)id,
                       sqlite3_bind_parameter_count(*out), strlen(types));
    }
    if (bind_va(*out, types, ap) != SQLITE_OK) {
        rc = store__fail(st, "bind");
        store__done(*out);
    }
    return rc;
}

int store__prepare(struct store *st, enum store__stmt_id id, const char *sql, sqlite3_stmt **out,
                   const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = prepare_va(st, id, sql, out, types, ap);
    va_end(ap);
    return rc;
}

int store__write(struct store *st, enum store__stmt_id id, const char *sql, const char *what,
                 bool must_change, const char *types, ...) {
    sqlite3_stmt *s;
    va_list ap;
    va_start(ap, types);
    int rc = prepare_va(st, id, sql, &s, types, ap);
    va_end(ap);
    return rc ? rc : store__step_write(st, s, what, must_change);
}

int store__query(struct store *st, enum store__stmt_id id, const char *sql,
                 int (*row)(sqlite3_stmt *s, void *arg), void *arg, const char *what,
                 const char *missing, const char *types, ...) {
    sqlite3_stmt *s;
    va_list ap;
    va_start(ap, types);
    int rc = prepare_va(st, id, sql, &s, types, ap);
    va_end(ap);
    int rows = 0;
    if (rc == DQ_OK) {
        rc = store__each(st, s, row, arg, &rows, what);
    }
    if (rc == DQ_OK && missing && rows == 0) {
        rc = dq_fail(DQ_ENOTFOUND, "%s", missing);
    }
    return rc;
}

const char *store__column_text(sqlite3_stmt *s, int i) {
    return (const char *)sqlite3_column_text(s, i);
}

int store__bind_id(sqlite3_stmt *s, int i, int64_t id) {
    return id ? sqlite3_bind_int64(s, i, id) : sqlite3_bind_null(s, i);
}

int store__exec(struct store *st, const char *sql) {
    char *err = NULL;
    if (!st->iterating) {
        st->ticks = 0;
    }
    if (sqlite3_exec(st->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        int rc = dq_fail(DQ_ESTORE, "%s: %s", sql, err ? err : sqlite3_errmsg(st->db));
        sqlite3_free(err);
        return rc;
    }
    return DQ_OK;
}

/*
 * Reads one integer PRAGMA (user_version, application_id, ...). On failure the message
 * is "PATH: SQLite's message" and *code (when not NULL) SQLite's extended result code.
 */
static int pragma_int(struct store *st, const char *pragma, int *value, int *code) {
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA %s", pragma);
    sqlite3_stmt *s = NULL;
    int rc = DQ_OK;
    if (!st->iterating) {
        st->ticks = 0;
    }
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
        if (code) {
            *code = sqlite3_extended_errcode(st->db);
        }
        rc = dq_fail(DQ_ESTORE, "%s: %s", st->path, sqlite3_errmsg(st->db));
    } else {
        *value = sqlite3_column_int(s, 0);
    }
    sqlite3_finalize(s);
    return rc;
}

/* The hint for a failure to read or set up the file, by SQLite's result code. */
static const char *open_hint(int code) {
    switch (code & 0xff) {
    case SQLITE_NOTADB:
        return "not an SQLite file";
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        /* WAL keeps PATH-wal and PATH-shm next to the database. */
        return "is its directory writable? WAL creates PATH-wal and PATH-shm beside it";
    case SQLITE_CORRUPT:
        return "the file is damaged";
    default:
        return "cannot read the file";
    }
}

/* ---- open / migrate / close ------------------------------------------------------- */

int store_schema_latest(void) {
    return store__migrations[store__migration_count - 1].version;
}

/* Applies migration m unless another process got there first; one transaction. */
static int apply_migration(struct store *st, const struct store__migration *m) {
    int rc = store__exec(st, "BEGIN IMMEDIATE");
    if (rc) {
        return rc;
    }
    int version = 0;
    rc = pragma_int(st, "user_version", &version, NULL);
    /* A migration may rewrite a big table: it gets no work limit. */
    uint64_t limit = st->tick_limit;
    st->tick_limit = 0;
    if (rc == DQ_OK && version < m->version) {
        if (m->edits_schema) {
            sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 0, NULL);
        }
        for (int i = 0; rc == DQ_OK && m->steps[i]; i++) {
            char *err = NULL;
            const char *step = m->steps[i];
            char bumped[128];
            if (strstr(step, STORE_SCHEMA_VERSION_NEXT)) {
                int sv = 0;
                if ((rc = pragma_int(st, "schema_version", &sv, NULL)) != DQ_OK) {
                    break;
                }
                snprintf(bumped, sizeof bumped, "PRAGMA schema_version = %d;", sv + 1);
                step = bumped; /* the only statement such a step may hold */
            }
            if (sqlite3_exec(st->db, step, NULL, NULL, &err) != SQLITE_OK) {
                rc = dq_fail(DQ_ESTORE, "%s: migration %d (%s), step %d failed: %s", st->path,
                             m->version, m->what, i + 1, err ? err : sqlite3_errmsg(st->db));
            }
            sqlite3_free(err);
        }
        if (m->edits_schema) {
            sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        }
        if (rc == DQ_OK) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA user_version = %d", m->version);
            rc = store__exec(st, sql);
        }
    }
    if (rc == DQ_OK) {
        rc = store__exec(st, "COMMIT");
    }
    if (rc != DQ_OK && !sqlite3_get_autocommit(st->db)) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", dq_last_error());
        store__exec(st, "ROLLBACK");
        dq_fail(rc, "%s", keep);
    }
    st->tick_limit = limit;
    return rc;
}

/*
 * The checks before anything is written. Reading user_version is the first access to the
 * file's header, so it is where a non-database fails (SQLITE_NOTADB).
 */
static int check_file(struct store *st) {
    int version = 0, app = 0, tables = 0;
    int code = 0;
    int rc = pragma_int(st, "user_version", &version, &code);
    if (rc == DQ_OK) {
        rc = pragma_int(st, "application_id", &app, &code);
    }
    if (rc) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", dq_last_error());
        return dq_fail(DQ_ESTORE, "%s (%s)", msg, open_hint(code));
    }
    if (app != 0 && app != STORE_APPLICATION_ID) {
        return dq_fail(DQ_ESTORE, "%s: SQLite database of another application (application_id %d)",
                       st->path, app);
    }
    if (version > store_schema_latest()) {
        return dq_fail(DQ_ESTORE,
                       "%s: schema version %d is newer than this dqd knows (%d); "
                       "use a newer dqd or another --db",
                       st->path, version, store_schema_latest());
    }
    if (version == 0) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_schema", -1, &s, NULL) !=
                SQLITE_OK ||
            sqlite3_step(s) != SQLITE_ROW) {
            rc = dq_fail(DQ_ESTORE, "%s: %s", st->path, sqlite3_errmsg(st->db));
        } else {
            tables = sqlite3_column_int(s, 0);
        }
        sqlite3_finalize(s);
        if (rc) {
            return rc;
        }
        if (tables > 0) {
            /* A version-0 file with tables was not created by dqd: migrating it would mix
               our schema into someone else's data. */
            return dq_fail(DQ_ESTORE,
                           "%s: SQLite database with %d schema objects but no dqd "
                           "schema version; not a dqd database",
                           st->path, tables);
        }
    }
    return DQ_OK;
}

static int configure(struct store *st) {
    /* journal_mode answers with the mode in force: "wal", or "memory" for :memory:. */
    sqlite3_stmt *s = NULL;
    int rc = DQ_OK;
    if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
        rc = dq_fail(DQ_ESTORE, "%s: cannot enable WAL: %s (%s)", st->path, sqlite3_errmsg(st->db),
                     open_hint(sqlite3_extended_errcode(st->db)));
    } else {
        const char *mode = (const char *)sqlite3_column_text(s, 0);
        if (!mode || (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)) {
            rc = dq_fail(DQ_ESTORE, "%s: journal mode stays \"%s\" instead of wal", st->path,
                         mode ? mode : "?");
        }
    }
    sqlite3_finalize(s);
    if (rc) {
        return rc;
    }
    if ((rc = store__exec(st, "PRAGMA synchronous = NORMAL")) ||
        (rc = store__exec(st, "PRAGMA foreign_keys = ON")) ||
        (rc = store__exec(st, "PRAGMA cell_size_check = ON"))) {
        return rc;
    }
    return DQ_OK;
}

/*
 * Why a database file could not be opened, in words a person can act on. SQLite reports
 * the errno of its last attempt, which after its read-only fallback is often ENOENT even
 * when the real obstacle is a directory without write permission, so look for ourselves.
 */
static void explain_open_failure(const char *path, int sys, char *buf, size_t size) {
    struct stat sb;
    if (stat(path, &sb) == 0) {
        snprintf(buf, size, "%s",
                 S_ISDIR(sb.st_mode) ? "it is a directory"
                 : sys               ? strerror(sys)
                                     : "unreadable");
        return;
    }
    char dir[256];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    }
    if (stat(dir, &sb) != 0) {
        snprintf(buf, size, "directory %s: %s", dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        snprintf(buf, size, "%s is not a directory", dir);
    } else if (access(dir, W_OK | X_OK) != 0) {
        snprintf(buf, size, "cannot create files in directory %s: %s", dir, strerror(errno));
    } else {
        snprintf(buf, size, "%s", sys ? strerror(sys) : "unknown reason");
    }
}

int store_open(const char *path, struct store **out) {
    return store_open_ex(path, NULL, out);
}

int store_open_ex(const char *path, const struct store_options *opts, struct store **out) {
    if (!path || !out) {
        return dq_fail(DQ_EINVAL, "store_open: NULL path or out");
    }
    int target = opts && opts->target_version ? opts->target_version : store_schema_latest();
    int busy = opts && opts->busy_timeout_ms ? opts->busy_timeout_ms : STORE_BUSY_TIMEOUT_MS;
    int64_t max_steps = opts && opts->max_steps ? opts->max_steps : STORE_MAX_STEPS;
    if (target < 1 || target > store_schema_latest() || busy < 0 || max_steps < 0) {
        return dq_fail(DQ_EINVAL,
                       "store_open: target version %d not in [1, %d], or negative timeout or "
                       "step limit",
                       target, store_schema_latest());
    }
    struct store *st = calloc(1, sizeof *st);
    if (!st) {
        return dq_fail(DQ_ENOMEM, "store_open: out of memory");
    }
    size_t len = strlen(path);
    st->path = malloc(len + 1);
    if (!st->path) {
        free(st);
        return dq_fail(DQ_ENOMEM, "store_open: out of memory");
    }
    memcpy(st->path, path, len + 1);
    st->now_ns = realtime_ns;
    store_retention_default(&st->retention);

    int rc = DQ_OK;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
        char why[320];
        explain_open_failure(path, st->db ? sqlite3_system_errno(st->db) : 0, why, sizeof why);
        rc = dq_fail(DQ_ESTORE, "%s: cannot open: %s (%s)", path,
                     st->db ? sqlite3_errmsg(st->db) : "out of memory", why);
        goto fail;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, busy);
    st->tick_limit = (uint64_t)(max_steps / STORE_TICK_OPS) + 1;
    sqlite3_progress_handler(st->db, STORE_TICK_OPS, progress, st);
    /* Refuse the statements that can corrupt a file (writable_schema and the like), and
       check cell sizes while reading so damage is reported rather than followed. */
    sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    if (sqlite3_db_readonly(st->db, "main") == 1) {
        rc = dq_fail(DQ_ESTORE, "%s: database file is read-only", path);
        goto fail;
    }
    if ((rc = check_file(st)) || (rc = configure(st))) {
        goto fail;
    }
    int version = 0;
    if ((rc = pragma_int(st, "user_version", &version, NULL))) {
        goto fail;
    }
    for (int i = 0; i < store__migration_count; i++) {
        const struct store__migration *m = &store__migrations[i];
        if (m->version > version && m->version <= target) {
            if ((rc = apply_migration(st, m))) {
                goto fail;
            }
        }
    }
    st->opened = true;
    *out = st;
    return DQ_OK;

fail:
    store_close(st);
    return rc;
}

void store_close(struct store *st) {
    if (!st) {
        return;
    }
    if (st->db) {
        st->ticks = 0;
        if (!sqlite3_get_autocommit(st->db)) {
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        }
        for (int i = 0; i < STORE__STMT_COUNT; i++) {
            sqlite3_finalize(st->stmt[i]);
        }
        /* Lets SQLite refresh its planner statistics where it thinks it worthwhile; cheap.
           Never on a file store_open refused: that file must stay untouched. */
        if (st->opened && sqlite3_db_readonly(st->db, "main") == 0) {
            st->ticks = 0;
            sqlite3_exec(st->db, "PRAGMA optimize", NULL, NULL, NULL);
        }
        sqlite3_close(st->db);
    }
    free(st->text);
    free(st->masses);
    free(st->path);
    free(st);
}

int store_schema_version(struct store *st, int *version) {
    if (!st || !version) {
        return dq_fail(DQ_EINVAL, "store_schema_version: NULL argument");
    }
    return pragma_int(st, "user_version", version, NULL);
}

const char *store_path(const struct store *st) {
    return st->path;
}

void store_set_clock(struct store *st, int64_t (*now_ns)(void *ctx), void *ctx) {
    st->now_ns = now_ns ? now_ns : realtime_ns;
    st->now_ctx = now_ns ? ctx : NULL;
}

/* ---- transactions ---------------------------------------------------------------- */

int store_begin(struct store *st) {
    if (st->in_txn) {
        return dq_fail(DQ_ESTATE, "store_begin: a transaction is already open");
    }
    int rc = store__exec(st, "BEGIN IMMEDIATE");
    if (rc == DQ_OK) {
        st->in_txn = true;
    }
    return rc;
}

int store_commit(struct store *st) {
    if (!st->in_txn) {
        return dq_fail(DQ_ESTATE, "store_commit: no transaction is open");
    }
    st->in_txn = false;
    if (sqlite3_get_autocommit(st->db)) {
        /* SQLite rolls a transaction back by itself after some errors (disk full, I/O). */
        return dq_fail(DQ_ESTORE, "store_commit: the transaction was already rolled back "
                                  "by an earlier error");
    }
    int rc = store__exec(st, "COMMIT");
    if (rc != DQ_OK && !sqlite3_get_autocommit(st->db)) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", dq_last_error());
        store__exec(st, "ROLLBACK");
        dq_fail(rc, "%s (rolled back)", keep);
    }
    return rc;
}

int store_rollback(struct store *st) {
    if (!st->in_txn) {
        return dq_fail(DQ_ESTATE, "store_rollback: no transaction is open");
    }
    st->in_txn = false;
    if (sqlite3_get_autocommit(st->db)) {
        return DQ_OK; /* already rolled back by SQLite */
    }
    return store__exec(st, "ROLLBACK");
}

bool store_in_transaction(const struct store *st) {
    return st->in_txn;
}

/* SQLite's commit hook: a non-zero return turns the COMMIT into a rollback. */
static int refuse_commit(void *ctx) {
    struct store *st = ctx;
    if (st->refuse_commits <= 0) {
        return 0;
    }
    st->refuse_commits--;
    return 1;
}

void store_refuse_commits(struct store *st, int n) {
    st->refuse_commits = n > 0 ? n : 0;
    sqlite3_commit_hook(st->db, n > 0 ? refuse_commit : NULL, n > 0 ? st : NULL);
}
