/*
 * test_store.c: the store on real SQLite files in a private temporary directory: opening
 * and migrating, rejecting files it must not touch, every probes / windows / events call,
 * transactions, durability across a reopen and across a crashed process, retention.
 */
#include "store.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "store_test_util.h"

#define SEC INT64_C(1000000000)
#define T0 (INT64_C(1700000000) * SEC) /* a fixed wall-clock origin for fake clocks */

/* ---- helpers ------------------------------------------------------------------------- */

static struct store *open_ok(const char *path) {
    struct store *st = NULL;
    int rc = store_open(path, &st);
    CHECK_MSG(rc == DQ_OK && st, "store_open(%s) = %s: %s", path, dq_err_name(rc), dq_last_error());
    return st;
}

/* Collects probes into a small array (copying what the callback's strings say). */
struct probe_list {
    int count;
    char names[8][64];
    struct store_probe rows[8];
    char qta[8][128];
    int has_qta[8];
};

static int collect_probe(void *ctx, const struct store_probe *p) {
    struct probe_list *l = ctx;
    if (l->count >= 8) {
        return DQ_EFULL;
    }
    int i = l->count++;
    snprintf(l->names[i], sizeof l->names[i], "%s", p->name);
    l->rows[i] = *p;
    l->rows[i].name = l->names[i];
    l->has_qta[i] = p->qta_json != NULL;
    snprintf(l->qta[i], sizeof l->qta[i], "%s", p->qta_json ? p->qta_json : "");
    l->rows[i].qta_json = p->qta_json ? l->qta[i] : NULL;
    return 0;
}

static int count_cb(void *ctx, const void *row) {
    (void)row;
    ++*(int *)ctx;
    return 0;
}

static int count_probe(void *ctx, const struct store_probe *p) {
    return count_cb(ctx, p);
}
static int count_window(void *ctx, const struct store_window *w) {
    return count_cb(ctx, w);
}
static int count_event(void *ctx, const struct store_event *e) {
    return count_cb(ctx, e);
}

static int probe_count(struct store *st) {
    int n = 0;
    CHECK_INT(store_probes_each(st, count_probe, &n), DQ_OK);
    return n;
}

static int window_count(struct store *st, const char *probe, enum store_kind kind) {
    int n = 0;
    CHECK_INT(store_windows_each(st, probe, kind, INT64_MIN, INT64_MAX, 0, count_window, &n),
              DQ_OK);
    return n;
}

static int event_count(struct store *st) {
    int n = 0;
    CHECK_INT(store_events_each(st, NULL, NULL, 0, 0, count_event, &n), DQ_OK);
    return n;
}

static struct store_window make_window(const char *probe, enum store_kind kind, int64_t start,
                                       uint64_t n) {
    struct store_window w = {
        .probe = probe,
        .kind = kind,
        .start_ns = start,
        .end_ns = start + SEC,
        .n = n,
        .n_ok = n > 2 ? n - 2 : 0,
        .n_fa = n > 2 ? 1 : 0,
        .n_to = n > 2 ? 1 : 0,
        .mean = 0.010 + (double)n * 1e-6,
        .p50 = 0.009,
        .p95 = 0.020,
        .p99 = NAN,
        .lost = n > 2 ? 2.0 / (double)n : NAN,
        .run_ns = T0 - SEC, /* the run that wrote it */
    };
    return w;
}

static int put_probe(struct store *st, const char *name, double dmax, int bins, bool enabled) {
    struct store_probe p = {.name = name, .dmax_ms = dmax, .bins = bins, .enabled = enabled};
    return store_probe_upsert(st, &p);
}

/* ---- open, migrate, reject ---------------------------------------------------------- */

static void test_open_fresh(void) {
    char path[512], wal[600];
    tmp_path(path, sizeof path, "fresh.db");
    struct store *st = open_ok(path);
    if (!st) {
        return;
    }
    int v = -1;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    CHECK(store_schema_latest() >= 1);
    CHECK_STR(store_path(st), path);
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK_MSG(file_exists(wal), "WAL file %s should exist while open", wal);
    CHECK_INT(probe_count(st), 0);
    CHECK_INT(event_count(st), 0);
    store_close(st);
    /* Reopening an up-to-date file migrates nothing and keeps the version. */
    st = open_ok(path);
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    store_close(st);
    store_close(NULL); /* no-op */

    /* An in-memory database (no WAL there) works for tools and tests. */
    st = open_ok(":memory:");
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    CHECK_INT(put_probe(st, "mem", 10, 10, true), DQ_OK);
    CHECK_INT(probe_count(st), 1);
    store_close(st);
}

static void test_open_empty_file(void) {
    char path[512];
    tmp_path(path, sizeof path, "empty.db");
    CHECK_INT(write_file(path, "", 0), 0);
    struct store *st = open_ok(path);
    int v = -1;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    CHECK_INT(put_probe(st, "root", 100, 100, true), DQ_OK);
    store_close(st);
}

static void test_open_bad_args(void) {
    struct store *st = (struct store *)&st; /* a sentinel that must stay untouched */
    CHECK_INT(store_open(NULL, &st), DQ_EINVAL);
    CHECK(st == (struct store *)&st);
    char path[512];
    tmp_path(path, sizeof path, "args.db");
    CHECK_INT(store_open(path, NULL), DQ_EINVAL);
    struct store_options o = {.target_version = store_schema_latest() + 1};
    CHECK_INT(store_open_ex(path, &o, &st), DQ_EINVAL);
    o.target_version = -1;
    CHECK_INT(store_open_ex(path, &o, &st), DQ_EINVAL);
    CHECK(st == (struct store *)&st);
}

/* Migrating step by step gives the same result as migrating at once. */
static void test_migrate_in_steps(void) {
    char path[512];
    tmp_path(path, sizeof path, "steps.db");
    struct store *st = NULL;
    struct store_options o = {.target_version = 1};
    CHECK_INT(store_open_ex(path, &o, &st), DQ_OK);
    int v = -1;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, 1);
    CHECK_INT(put_probe(st, "kept", 50, 50, true), DQ_OK);
    store_close(st);
    st = open_ok(path);
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    struct probe_list l = {0};
    CHECK_INT(store_probe_get(st, "kept", collect_probe, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    store_close(st);
}

/* Byte image of a whole file, to show a rejected file was not modified. */
struct image {
    unsigned char bytes[262144]; /* more than any test database */
    long len;
};

static void test_reject_newer(void) {
    char path[512];
    tmp_path(path, sizeof path, "newer.db");
    struct store *st = open_ok(path);
    CHECK_INT(put_probe(st, "p", 10, 10, true), DQ_OK);
    store_close(st);
    /* user_version lives at byte 60 of the header (SQLite file format §1.3). */
    CHECK_INT(patch_be32(path, 60, (uint32_t)store_schema_latest() + 1), 0);
    static struct image before, after;
    before.len = read_file(path, before.bytes, sizeof before.bytes);
    st = NULL;
    int rc = store_open(path, &st);
    CHECK_INT(rc, DQ_ESTORE);
    CHECK(st == NULL);
    CHECK_MSG(strstr(dq_last_error(), "newer") != NULL, "message: %s", dq_last_error());
    CHECK_MSG(strstr(dq_last_error(), path) != NULL, "message names the path: %s", dq_last_error());
    after.len = read_file(path, after.bytes, sizeof after.bytes);
    CHECK(before.len > 0 && before.len < (long)sizeof before.bytes && before.len == after.len &&
          memcmp(before.bytes, after.bytes, (size_t)before.len) == 0);
}

static void test_reject_garbage(void) {
    char path[512];
    tmp_path(path, sizeof path, "garbage.db");
    static unsigned char junk[8192];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (unsigned char)(x >> 16);
    }
    CHECK_INT(write_file(path, junk, sizeof junk), 0);
    struct store *st = NULL;
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK(st == NULL);
    CHECK_MSG(strstr(dq_last_error(), "not a database") != NULL, "message: %s", dq_last_error());
    static struct image after;
    after.len = read_file(path, after.bytes, sizeof after.bytes);
    CHECK(after.len == (long)sizeof junk && memcmp(after.bytes, junk, sizeof junk) == 0);

    /* A short text file (under one header's length) is no database either. */
    tmp_path(path, sizeof path, "text.db");
    const char *text = "probe,dmax\nroot,100\n";
    CHECK_INT(write_file(path, text, strlen(text)), 0);
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK(st == NULL);

    /* A valid header followed by a corrupted schema page: an error, not a crash. */
    tmp_path(path, sizeof path, "corrupt.db");
    st = open_ok(path);
    CHECK_INT(put_probe(st, "p", 10, 10, true), DQ_OK);
    store_close(st);
    static struct image img;
    img.len = read_file(path, img.bytes, sizeof img.bytes);
    CHECK(img.len > 200);
    memset(img.bytes + 100, 0xA5, (size_t)(img.len > 4096 ? 4096 : img.len) - 100);
    CHECK_INT(write_file(path, img.bytes, (size_t)img.len), 0);
    int rc = store_open(path, &st);
    if (rc == DQ_OK) {
        /* SQLite may only notice when a query touches the page: queries must fail cleanly. */
        int n = 0;
        rc = store_probes_each(st, count_probe, &n);
        store_close(st);
    }
    CHECK_MSG(rc == DQ_ESTORE, "corrupt file: %s %s", dq_err_name(rc), dq_last_error());
}

static void test_reject_foreign(void) {
    char path[512];
    tmp_path(path, sizeof path, "foreign.db");
    struct store *st = open_ok(path);
    store_close(st);
    /* application_id lives at byte 68. */
    CHECK_INT(patch_be32(path, 68, 0x12345678u), 0);
    st = NULL;
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK_MSG(strstr(dq_last_error(), "another application") != NULL, "message: %s",
              dq_last_error());
    /* No application id and no version, but tables: someone else's database. */
    CHECK_INT(patch_be32(path, 68, 0), 0);
    CHECK_INT(patch_be32(path, 60, 0), 0);
    static struct image before, after;
    before.len = read_file(path, before.bytes, sizeof before.bytes);
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK_MSG(strstr(dq_last_error(), "not a dqd database") != NULL, "message: %s",
              dq_last_error());
    CHECK(st == NULL);
    after.len = read_file(path, after.bytes, sizeof after.bytes);
    CHECK(before.len > 0 && before.len < (long)sizeof before.bytes && before.len == after.len &&
          memcmp(before.bytes, after.bytes, (size_t)before.len) == 0);
}

static void test_unwritable(void) {
    struct store *st = NULL;
    char path[512];
    /* Missing directory. */
    tmp_path(path, sizeof path, "no/such/dir/x.db");
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK_MSG(strstr(dq_last_error(), "cannot open") != NULL &&
                  strstr(dq_last_error(), "No such file or directory") != NULL,
              "message: %s", dq_last_error());
    /* A regular file where a directory should be. */
    char file[256];
    tmp_path(file, sizeof file, "plainfile");
    CHECK_INT(write_file(file, "x", 1), 0);
    snprintf(path, sizeof path, "%s/x.db", file);
    CHECK_INT(store_open(path, &st), DQ_ESTORE);
    CHECK_MSG(strstr(dq_last_error(), "plainfile is not a directory") != NULL, "message: %s",
              dq_last_error());
    /* A directory nobody may create files in, root included (/proc). */
    CHECK_INT(store_open("/proc/dqd-store-test.db", &st), DQ_ESTORE);
    /* The path is a directory. */
    CHECK_INT(store_open(tmp_dir, &st), DQ_ESTORE);
    CHECK_MSG(strstr(dq_last_error(), "it is a directory") != NULL, "message: %s", dq_last_error());
    /* A read-only directory; root ignores permissions, so only a non-root run can check
       this one (the /proc case above covers root). */
    char ro[256];
    tmp_path(ro, sizeof ro, "readonly");
    CHECK_INT(mkdir(ro, 0555), 0);
    snprintf(path, sizeof path, "%s/x.db", ro);
    if (geteuid() != 0) {
        CHECK_INT(store_open(path, &st), DQ_ESTORE);
        CHECK_MSG(strstr(dq_last_error(), "cannot create files in directory") != NULL,
                  "message: %s", dq_last_error());
        /* A database that exists but is read-only. */
        char rofile[512];
        tmp_path(rofile, sizeof rofile, "rofile.db");
        struct store *w = open_ok(rofile);
        store_close(w);
        CHECK_INT(chmod(rofile, 0444), 0);
        CHECK_INT(store_open(rofile, &st), DQ_ESTORE);
        CHECK_MSG(strstr(dq_last_error(), "read-only") != NULL, "message: %s", dq_last_error());
        /* A writable database in a read-only directory: WAL cannot create its files. */
        char indir[256];
        tmp_path(indir, sizeof indir, "rodb");
        CHECK_INT(mkdir(indir, 0755), 0);
        snprintf(path, sizeof path, "%s/x.db", indir);
        w = open_ok(path);
        store_close(w);
        CHECK_INT(chmod(indir, 0555), 0);
        CHECK_INT(store_open(path, &st), DQ_ESTORE);
        CHECK_MSG(strstr(dq_last_error(), "directory writable") != NULL, "message: %s",
                  dq_last_error());
        chmod(indir, 0755);
        unlink(path);
        rmdir(indir);
    } else {
        printf("note: running as root; read-only directory covered by /proc instead\n");
    }
    rmdir(ro);
    CHECK(st == NULL);
}

/* ---- the lock beside the database, removing a database -------------------------------- */

static void test_lock(void) {
    char db[512], lockfile[600];
    tmp_path(db, sizeof db, "locked.db");
    snprintf(lockfile, sizeof lockfile, "%s.lock", db);
    struct store_lock *a = NULL, *b = NULL;
    CHECK_INT(store_lock(db, &a), DQ_OK);
    CHECK(a != NULL);
    CHECK(file_exists(lockfile));
    CHECK(!file_exists(db)); /* the lock creates no database */
    /* the lock file names this process */
    char text[64] = "";
    FILE *f = fopen(lockfile, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fgets(text, sizeof text, f) != NULL);
        fclose(f);
    }
    CHECK_INT(atol(text), (long)getpid());
    /* a second holder, in this process or another, is refused with the holder's pid */
    CHECK_INT(store_lock(db, &b), DQ_EBUSY);
    CHECK(b == NULL);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld, lock file", (long)getpid());
    CHECK_MSG(strstr(dq_last_error(), want) && strstr(dq_last_error(), "in use by another dqd"),
              "message: %s", dq_last_error());
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        struct store_lock *c = NULL;
        _exit(store_lock(db, &c) == DQ_EBUSY && strstr(dq_last_error(), want) ? 0 : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process is refused");
    /* the database stays readable by any SQLite client while locked */
    struct store *st = open_ok(db);
    store_close(st);
    /* released: the file goes, and the next holder gets it */
    store_unlock(a);
    CHECK(!file_exists(lockfile));
    CHECK_INT(store_lock(db, &b), DQ_OK);
    store_unlock(b);
    /* a lock file left by a killed holder (flock went with the process) is taken over */
    child = fork();
    if (child == 0) {
        struct store_lock *c = NULL;
        if (store_lock(db, &c) != DQ_OK) {
            _exit(1);
        }
        kill(getpid(), SIGKILL);
        _exit(2);
    }
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK_MSG(WIFSIGNALED(status), "the child was killed holding the lock");
    CHECK(file_exists(lockfile));
    CHECK_INT(store_lock(db, &b), DQ_OK);
    store_unlock(b);
    /* errors */
    CHECK_INT(store_lock(NULL, &b), DQ_EINVAL);
    CHECK_INT(store_lock("", &b), DQ_EINVAL);
    CHECK_INT(store_lock(db, NULL), DQ_EINVAL);
    char nodir[512];
    tmp_path(nodir, sizeof nodir, "no/such/dir/x.db");
    CHECK_INT(store_lock(nodir, &b), DQ_EIO);
    CHECK_MSG(strstr(dq_last_error(), "cannot create the lock file"), "message: %s",
              dq_last_error());
}

static void test_remove_files(void) {
    char db[512], wal[600];
    tmp_path(db, sizeof db, "removed.db");
    snprintf(wal, sizeof wal, "%s-wal", db);
    CHECK(!store_file_exists(db));
    struct store *st = open_ok(db);
    CHECK(store_file_exists(db));
    CHECK_INT(put_probe(st, "p", 10, 10, true), DQ_OK);
    CHECK(file_exists(wal)); /* open in WAL mode */
    store_close(st);
    CHECK_INT(store_remove_files(db), DQ_OK);
    CHECK(!store_file_exists(db));
    CHECK(!file_exists(wal));
    CHECK_INT(store_remove_files(db), DQ_OK); /* nothing there: not an error */
    CHECK_INT(store_remove_files(NULL), DQ_EINVAL);
    CHECK_INT(store_remove_files(tmp_dir), DQ_EIO); /* a directory: unlink fails */
}

/* ---- diagrams (version 5) -------------------------------------------------------------- */

struct diagram_copy {
    int calls;
    int64_t id, loaded_ns;
    char text[128];
    size_t len;
    int has_path;
    char path[128];
};

static int copy_diagram(void *ctx, const struct store_diagram *d) {
    struct diagram_copy *c = ctx;
    c->calls++;
    c->id = d->id;
    c->loaded_ns = d->loaded_ns;
    snprintf(c->text, sizeof c->text, "%s", d->text);
    c->len = d->len;
    c->has_path = d->path != NULL;
    snprintf(c->path, sizeof c->path, "%s", d->path ? d->path : "");
    return 0;
}

static int diagram_rows(const char *path) {
    int n = -1;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'SELECT count(*) FROM diagrams'", path);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%d", &n) != 1) {
            n = -1;
        }
        pclose(p);
    }
    return n;
}

static void test_diagrams(void) {
    char path[512];
    tmp_path(path, sizeof path, "diagrams.db");
    struct store *st = open_ok(path);
    struct diagram_copy c = {0};
    CHECK_INT(store_diagram_latest(st, copy_diagram, &c), DQ_ENOTFOUND);
    CHECK_INT(c.calls, 0);
    int64_t id1 = 0, id = 0;
    const char *a = "shop = validate -> pay;\n";
    CHECK_INT(store_diagram_put(st, a, "shop.dq", &id1), DQ_OK);
    CHECK(id1 > 0);
    CHECK_INT(store_diagram_latest(st, copy_diagram, &c), DQ_OK);
    CHECK_INT(c.calls, 1);
    CHECK_INT(c.id, id1);
    CHECK_STR(c.text, a);
    CHECK_INT((long)c.len, (long)strlen(a));
    CHECK_STR(c.path, "shop.dq");
    CHECK(c.loaded_ns > 0);
    /* the same text from the same file again (a restart with --diagram): no new row */
    CHECK_INT(store_diagram_put(st, a, "shop.dq", &id), DQ_OK);
    CHECK_INT(id, id1);
    /* the same text through the API (no path) is a change of source: a new row */
    CHECK_INT(store_diagram_put(st, a, NULL, &id), DQ_OK);
    CHECK(id > id1);
    int64_t id2 = id;
    const char *b = "shop = validate -> pay -> ship;\n";
    CHECK_INT(store_diagram_put(st, b, "", &id), DQ_OK); /* "" is no path */
    CHECK(id > id2);
    CHECK_INT(store_diagram_put(st, b, NULL, NULL), DQ_OK);
    memset(&c, 0, sizeof c);
    CHECK_INT(store_diagram_latest(st, copy_diagram, &c), DQ_OK);
    CHECK_STR(c.text, b);
    CHECK_INT(c.has_path, 0);
    CHECK_INT(c.id, id);
    CHECK_INT(store_diagram_put(st, NULL, NULL, NULL), DQ_EINVAL);
    CHECK_INT(store_diagram_latest(st, NULL, NULL), DQ_EINVAL);
    store_close(st);
    CHECK_INT(diagram_rows(path), 3);
    /* it survives a reopen, and the shell reads it through the view */
    st = open_ok(path);
    memset(&c, 0, sizeof c);
    CHECK_INT(store_diagram_latest(st, copy_diagram, &c), DQ_OK);
    CHECK_STR(c.text, b);
    store_close(st);
    /* a database of version 4 migrates to 5 with no diagram yet */
    char old[512];
    tmp_path(old, sizeof old, "v4.db");
    struct store_options o = {.target_version = 4};
    CHECK_INT(store_open_ex(old, &o, &st), DQ_OK);
    store_close(st);
    st = open_ok(old);
    CHECK_INT(store_diagram_latest(st, copy_diagram, &c), DQ_ENOTFOUND);
    CHECK_INT(store_diagram_put(st, a, NULL, NULL), DQ_OK);
    store_close(st);
}

/* ---- probes ------------------------------------------------------------------------- */

static void test_probes(void) {
    char path[512];
    tmp_path(path, sizeof path, "probes.db");
    struct store *st = open_ok(path);
    struct fake_clock clk = {T0};
    store_set_clock(st, fake_now, &clk);

    struct store_probe p = {.name = "root",
                            .dmax_ms = 128,
                            .bins = 512,
                            .enabled = true,
                            .always_on = true,
                            .qta_json = "{\"points\":[[0.5,0.01],[0.9,0.05]],\"max_lost\":0.01}"};
    CHECK_INT(store_probe_upsert(st, &p), DQ_OK);
    CHECK_INT(put_probe(st, "worker_1", NAN, 0, false), DQ_OK);
    CHECK_INT(store_probe_ensure(st, "alpha"), DQ_OK);

    struct probe_list l = {0};
    CHECK_INT(store_probes_each(st, collect_probe, &l), DQ_OK);
    CHECK_INT(l.count, 3);
    CHECK_STR(l.names[0], "alpha"); /* name order */
    CHECK_STR(l.names[1], "root");
    CHECK_STR(l.names[2], "worker_1");
    CHECK(isnan(l.rows[0].dmax_ms) && l.rows[0].bins == 0 && !l.rows[0].enabled);
    CHECK_NEAR(l.rows[1].dmax_ms, 128, 0);
    CHECK_INT(l.rows[1].bins, 512);
    CHECK(l.rows[1].enabled && l.rows[1].always_on);
    CHECK_STR(l.rows[1].qta_json, p.qta_json);
    CHECK_INT(l.rows[1].created_ns, T0);
    CHECK_INT(l.rows[1].updated_ns, T0);
    CHECK(l.rows[2].qta_json == NULL && isnan(l.rows[2].dmax_ms));

    /* Upsert of an existing probe: settings overwritten, created kept, updated moved. */
    clk.now = T0 + 5 * SEC;
    p.dmax_ms = 64;
    p.bins = 256;
    p.enabled = false;
    p.always_on = false;
    p.qta_json = NULL;
    CHECK_INT(store_probe_upsert(st, &p), DQ_OK);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_probe_get(st, "root", collect_probe, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_NEAR(l.rows[0].dmax_ms, 64, 0);
    CHECK_INT(l.rows[0].bins, 256);
    CHECK(!l.rows[0].enabled && !l.rows[0].always_on && l.rows[0].qta_json == NULL);
    CHECK_INT(l.rows[0].created_ns, T0);
    CHECK_INT(l.rows[0].updated_ns, T0 + 5 * SEC);

    /* ensure leaves an existing probe alone. */
    CHECK_INT(store_probe_ensure(st, "root"), DQ_OK);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_probe_get(st, "root", collect_probe, &l), DQ_OK);
    CHECK_NEAR(l.rows[0].dmax_ms, 64, 0);
    CHECK_INT(probe_count(st), 3);

    /* Setters. */
    clk.now = T0 + 9 * SEC;
    CHECK_INT(store_probe_set_enabled(st, "worker_1", true), DQ_OK);
    CHECK_INT(store_probe_set_always_on(st, "worker_1", true), DQ_OK);
    CHECK_INT(store_probe_set_range(st, "worker_1", 32, 32), DQ_OK);
    CHECK_INT(store_probe_set_qta(st, "worker_1", "{\"points\":[[0.99,0.03]],\"max_lost\":0}"),
              DQ_OK);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_probe_get(st, "worker_1", collect_probe, &l), DQ_OK);
    CHECK(l.rows[0].enabled && l.rows[0].always_on);
    CHECK_NEAR(l.rows[0].dmax_ms, 32, 0);
    CHECK_INT(l.rows[0].bins, 32);
    CHECK_STR(l.rows[0].qta_json, "{\"points\":[[0.99,0.03]],\"max_lost\":0}");
    CHECK_INT(l.rows[0].updated_ns, T0 + 9 * SEC);
    CHECK_INT(store_probe_set_qta(st, "worker_1", NULL), DQ_OK);
    CHECK_INT(store_probe_set_range(st, "worker_1", NAN, 0), DQ_OK);
    CHECK_INT(store_probe_set_enabled(st, "worker_1", false), DQ_OK);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_probe_get(st, "worker_1", collect_probe, &l), DQ_OK);
    CHECK(!l.rows[0].enabled && l.rows[0].qta_json == NULL && isnan(l.rows[0].dmax_ms) &&
          l.rows[0].bins == 0);

    /* Unknown probes and bad input. */
    CHECK_INT(store_probe_get(st, "nope", collect_probe, &l), DQ_ENOTFOUND);
    CHECK_INT(store_probe_set_enabled(st, "nope", true), DQ_ENOTFOUND);
    CHECK_INT(store_probe_set_always_on(st, "nope", true), DQ_ENOTFOUND);
    CHECK_INT(store_probe_set_range(st, "nope", 10, 10), DQ_ENOTFOUND);
    CHECK_INT(store_probe_set_qta(st, "nope", NULL), DQ_ENOTFOUND);
    CHECK_INT(store_probe_delete(st, "nope"), DQ_ENOTFOUND);
    CHECK_INT(put_probe(st, "9lives", 10, 10, true), DQ_EINVAL);
    CHECK_INT(put_probe(st, "", 10, 10, true), DQ_EINVAL);
    CHECK_INT(put_probe(st, "has space", 10, 10, true), DQ_EINVAL);
    CHECK_INT(put_probe(st, "semi;colon", 10, 10, true), DQ_EINVAL);
    CHECK_INT(store_probe_ensure(st, NULL), DQ_EINVAL);
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_INT(put_probe(st, longname, 10, 10, true), DQ_EINVAL);
    longname[255] = '\0';
    CHECK_INT(put_probe(st, longname, 10, 10, true), DQ_OK); /* exactly 255 bytes */
    CHECK_INT(put_probe(st, "r", -1, 10, true), DQ_ERANGE);
    CHECK_INT(put_probe(st, "r", 0, 10, true), DQ_ERANGE);
    CHECK_INT(put_probe(st, "r", INFINITY, 10, true), DQ_ERANGE);
    CHECK_INT(put_probe(st, "r", 10, DQ_MAX_BINS + 1, true), DQ_ERANGE);
    CHECK_INT(put_probe(st, "r", 10, -3, true), DQ_ERANGE);
    CHECK_INT(store_probe_set_range(st, "root", 10, 5000), DQ_ERANGE);
    CHECK_INT(store_probe_set_qta(st, "root", "{not json"), DQ_EINVAL);
    struct store_probe bad = {.name = "r", .dmax_ms = 10, .bins = 10, .qta_json = "[1,"};
    CHECK_INT(store_probe_upsert(st, &bad), DQ_EINVAL);
    CHECK_INT(store_probe_upsert(st, NULL), DQ_EINVAL);
    CHECK_INT(probe_count(st), 4); /* none of the bad calls added a row */

    /* A callback's negative return aborts with that code; a positive one stops quietly. */
    CHECK_INT(store_probes_each(st, collect_probe, &(struct probe_list){.count = 8}), DQ_EFULL);
    CHECK_INT(store_probe_delete(st, longname), DQ_OK);
    CHECK_INT(probe_count(st), 3);
    store_close(st);
}

/* ---- windows ------------------------------------------------------------------------ */

struct window_list {
    int count;
    struct store_window rows[16];
    int stop_after; /* > 0: return 1 after this many */
};

static int collect_window(void *ctx, const struct store_window *w) {
    struct window_list *l = ctx;
    if (l->count < 16) {
        l->rows[l->count] = *w;
    }
    l->count++;
    return l->stop_after > 0 && l->count >= l->stop_after ? 1 : 0;
}

/* A callback that calls back into the iterating function. */
static int reenter(void *ctx, const struct store_window *w) {
    int n = 0;
    return store_windows_each(ctx, w->probe, w->kind, INT64_MIN, INT64_MAX, 0, count_window, &n);
}

static void test_windows(void) {
    char path[512];
    tmp_path(path, sizeof path, "windows.db");
    struct store *st = open_ok(path);
    CHECK_INT(put_probe(st, "root", 100, 100, true), DQ_OK);
    CHECK_INT(put_probe(st, "leaf", 100, 100, true), DQ_OK);

    for (int i = 0; i < 10; i++) {
        struct store_window w = make_window("root", STORE_OBSERVED, T0 + i * SEC, 100 + i);
        CHECK_INT(store_window_put(st, &w), DQ_OK);
        w = make_window("root", STORE_CALCULATED, T0 + i * SEC, 0);
        w.mean = 0.005;
        w.lost = 0.001;
        CHECK_INT(store_window_put(st, &w), DQ_OK);
    }
    struct store_window w = make_window("leaf", STORE_OBSERVED, T0, 2);
    CHECK_INT(store_window_put(st, &w), DQ_OK);

    CHECK_INT(window_count(st, "root", STORE_OBSERVED), 10);
    CHECK_INT(window_count(st, "root", STORE_CALCULATED), 10);
    CHECK_INT(window_count(st, "leaf", STORE_OBSERVED), 1);
    CHECK_INT(window_count(st, "leaf", STORE_CALCULATED), 0);

    /* Range [T0+3, T0+7), newest first, limit 3. */
    struct window_list l = {0};
    CHECK_INT(store_windows_each(st, "root", STORE_OBSERVED, T0 + 3 * SEC, T0 + 7 * SEC, 3,
                                 collect_window, &l),
              DQ_OK);
    CHECK_INT(l.count, 3);
    CHECK_INT(l.rows[0].start_ns, T0 + 6 * SEC);
    CHECK_INT(l.rows[2].start_ns, T0 + 4 * SEC);
    CHECK_INT(l.rows[0].end_ns, T0 + 7 * SEC);
    CHECK_INT(l.rows[0].n, 106);
    CHECK_INT(l.rows[0].n_ok, 104);
    CHECK_INT(l.rows[0].n_fa, 1);
    CHECK_INT(l.rows[0].n_to, 1);
    CHECK_NEAR(l.rows[0].mean, 0.010106, 1e-15);
    CHECK_NEAR(l.rows[0].p50, 0.009, 0);
    CHECK_NEAR(l.rows[0].p95, 0.020, 0);
    CHECK(isnan(l.rows[0].p99)); /* NULL round-trips as NAN */
    CHECK_NEAR(l.rows[0].lost, 2.0 / 106, 1e-15);
    CHECK_STR(l.rows[0].probe, "root");
    CHECK_INT(l.rows[0].kind, STORE_OBSERVED);

    /* A positive callback return stops early without error. */
    memset(&l, 0, sizeof l);
    l.stop_after = 2;
    CHECK_INT(
        store_windows_each(st, "root", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0, collect_window, &l),
        DQ_OK);
    CHECK_INT(l.count, 2);
    /* The statement is usable again afterwards. */
    CHECK_INT(window_count(st, "root", STORE_OBSERVED), 10);
    /* Re-entering the iterating function is refused, not silently truncated. */
    CHECK_INT(store_windows_each(st, "root", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0, reenter, st),
              DQ_ESTATE);
    CHECK_INT(window_count(st, "root", STORE_OBSERVED), 10);

    /* Latest. */
    struct store_window latest;
    CHECK_INT(store_window_latest(st, "root", STORE_CALCULATED, &latest), DQ_OK);
    CHECK_INT(latest.start_ns, T0 + 9 * SEC);
    CHECK_NEAR(latest.mean, 0.005, 0);
    CHECK_INT(latest.n, 0);
    CHECK_INT(store_window_latest(st, "leaf", STORE_CALCULATED, &latest), DQ_ENOTFOUND);
    CHECK_INT(store_window_latest(st, "ghost", STORE_OBSERVED, &latest), DQ_ENOTFOUND);

    /* Writing the same window again in the same run replaces it. */
    w = make_window("leaf", STORE_OBSERVED, T0, 50);
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    CHECK_INT(window_count(st, "leaf", STORE_OBSERVED), 1);
    CHECK_INT(store_window_latest(st, "leaf", STORE_OBSERVED, &latest), DQ_OK);
    CHECK_INT(latest.n, 50);
    CHECK(!latest.partial);
    CHECK_INT(latest.run_ns, T0 - SEC);
    /* Two runs that each saw part of one window keep a row each: the first stopped in it
     * (partial, [start, its stop]), the second started in it (partial, [its start, end]). */
    w = make_window("split", STORE_OBSERVED, T0, 30);
    w.end_ns = T0 + SEC / 4;
    w.partial = true;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    w = make_window("split", STORE_OBSERVED, T0, 12);
    w.start_ns = T0 + SEC / 2;
    w.partial = true;
    w.run_ns = T0 + SEC / 2;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    w = make_window("split", STORE_OBSERVED, T0, 7); /* a late row of the second run */
    w.partial = true;
    w.run_ns = T0 + SEC / 2;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    CHECK_INT(window_count(st, "split", STORE_OBSERVED), 3);
    struct window_list wl = {0};
    CHECK_INT(store_windows_each(st, "split", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0,
                                 collect_window, &wl),
              DQ_OK);
    CHECK_INT(wl.count, 3);
    uint64_t n_sum = 0;
    for (int i = 0; i < wl.count && i < 8; i++) {
        n_sum += wl.rows[i].n;
        CHECK(wl.rows[i].partial);
    }
    CHECK_INT(n_sum, 30 + 12 + 7);

    /* Bad input. */
    /* A probe the store has not seen is registered on the way, disabled, nothing set. */
    w = make_window("ghost", STORE_OBSERVED, T0, 5);
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    CHECK_INT(window_count(st, "ghost", STORE_OBSERVED), 1);
    struct probe_list pl = {0};
    CHECK_INT(store_probe_get(st, "ghost", collect_probe, &pl), DQ_OK);
    CHECK(pl.count == 1 && !pl.rows[0].enabled && isnan(pl.rows[0].dmax_ms));
    w.probe = "bad name";
    CHECK_INT(store_window_put(st, &w), DQ_EINVAL);
    w = make_window("root", STORE_OBSERVED, T0 + 100 * SEC, 5);
    w.end_ns = w.start_ns - 1;
    CHECK_INT(store_window_put(st, &w), DQ_EINVAL);
    w = make_window("root", (enum store_kind)7, T0 + 100 * SEC, 5);
    CHECK_INT(store_window_put(st, &w), DQ_EINVAL);
    w = make_window("root", STORE_OBSERVED, T0 + 100 * SEC, 5);
    w.n_fa = UINT64_MAX;
    CHECK_INT(store_window_put(st, &w), DQ_ERANGE);
    CHECK_INT(store_window_put(st, NULL), DQ_EINVAL);
    CHECK_INT(window_count(st, "root", STORE_OBSERVED), 10);
    CHECK(store_kind_name((enum store_kind)3) == NULL);
    CHECK_STR(store_kind_name(STORE_CALCULATED), "calculated");

    /* Deleting a probe deletes its windows (foreign key cascade). */
    CHECK_INT(store_probe_delete(st, "root"), DQ_OK);
    CHECK_INT(window_count(st, "root", STORE_OBSERVED), 0);
    CHECK_INT(window_count(st, "root", STORE_CALCULATED), 0);
    CHECK_INT(window_count(st, "leaf", STORE_OBSERVED), 1);
    store_close(st);
}

/* ---- events ------------------------------------------------------------------------- */

struct event_list {
    int count;
    int64_t ids[16];
    int64_t times[16];
    char kinds[16][32];
    char details[16][128];
    int has_probe[16];
};

static int collect_event(void *ctx, const struct store_event *e) {
    struct event_list *l = ctx;
    if (l->count < 16) {
        int i = l->count;
        l->ids[i] = e->id;
        l->times[i] = e->time_ns;
        snprintf(l->kinds[i], sizeof l->kinds[i], "%s", e->kind);
        snprintf(l->details[i], sizeof l->details[i], "%s", e->detail_json ? e->detail_json : "");
        l->has_probe[i] = e->probe != NULL;
    }
    l->count++;
    return 0;
}

static void test_events(void) {
    char path[512];
    tmp_path(path, sizeof path, "events.db");
    struct store *st = open_ok(path);
    struct fake_clock clk = {T0 + 42};
    store_set_clock(st, fake_now, &clk);

    int64_t id1 = 0, id2 = 0, id3 = 0;
    struct store_event e = {.kind = "auto_range",
                            .probe = "root",
                            .detail_json = "{\"old_dmax_ms\":1024,\"new_dmax_ms\":64}"};
    CHECK_INT(store_event_add(st, &e, &id1), DQ_OK);
    e = (struct store_event){.time_ns = T0 + 7, .kind = "wrapper_connected"};
    CHECK_INT(store_event_add(st, &e, &id2), DQ_OK);
    e = (struct store_event){.kind = "auto_range", .probe = "leaf", .detail_json = "[]"};
    CHECK_INT(store_event_add(st, &e, &id3), DQ_OK);
    CHECK(id1 > 0 && id2 > id1 && id3 > id2);
    CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);

    struct event_list l = {0};
    CHECK_INT(store_events_each(st, NULL, NULL, 0, 0, collect_event, &l), DQ_OK);
    CHECK_INT(l.count, 4);
    CHECK_INT(l.ids[0], id1);
    CHECK_INT(l.times[0], T0 + 42); /* time 0 = store clock */
    CHECK_INT(l.times[1], T0 + 7);  /* explicit time kept */
    CHECK_STR(l.kinds[0], "auto_range");
    CHECK_STR(l.details[0], "{\"old_dmax_ms\":1024,\"new_dmax_ms\":64}");
    CHECK(l.has_probe[0] && !l.has_probe[1]);

    memset(&l, 0, sizeof l);
    CHECK_INT(store_events_each(st, "root", NULL, 0, 0, collect_event, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_events_each(st, NULL, "auto_range", 0, 0, collect_event, &l), DQ_OK);
    CHECK_INT(l.count, 3);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_events_each(st, NULL, "auto_range", id1, 1, collect_event, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], id3);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_events_each(st, "leaf", "wrapper_connected", 0, 0, collect_event, &l), DQ_OK);
    CHECK_INT(l.count, 0);

    e = (struct store_event){.kind = "x", .detail_json = "{oops"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_EINVAL);
    e = (struct store_event){.kind = ""};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_EINVAL);
    e = (struct store_event){.kind = NULL};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_EINVAL);
    CHECK_INT(store_events_each(st, NULL, NULL, 0, 0, NULL, NULL), DQ_EINVAL);
    CHECK_INT(event_count(st), 4);
    store_close(st);
}

/* ---- transactions and durability ------------------------------------------------------ */

static void test_transactions(void) {
    char path[512];
    tmp_path(path, sizeof path, "txn.db");
    struct store *st = open_ok(path);
    CHECK(!store_in_transaction(st));
    CHECK_INT(store_commit(st), DQ_ESTATE);
    CHECK_INT(store_rollback(st), DQ_ESTATE);

    /* Rollback leaves nothing: probes, windows and events of the batch all vanish. */
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK(store_in_transaction(st));
    CHECK_INT(store_begin(st), DQ_ESTATE); /* no nesting */
    CHECK_INT(put_probe(st, "a", 10, 10, true), DQ_OK);
    struct store_window w = make_window("a", STORE_OBSERVED, T0, 10);
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    struct store_event e = {.kind = "k"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);
    CHECK_INT(probe_count(st), 1); /* visible inside the transaction */
    CHECK_INT(store_rollback(st), DQ_OK);
    CHECK(!store_in_transaction(st));
    CHECK_INT(probe_count(st), 0);
    CHECK_INT(window_count(st, "a", STORE_OBSERVED), 0);
    CHECK_INT(event_count(st), 0);

    /* A failed call inside the batch does not poison the rest of it. */
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(put_probe(st, "a", 10, 10, true), DQ_OK);
    CHECK_INT(put_probe(st, "b", 10, 10, true), DQ_OK);
    for (int i = 0; i < 3; i++) {
        w = make_window("a", STORE_OBSERVED, T0 + i * SEC, 10);
        CHECK_INT(store_window_put(st, &w), DQ_OK);
        w = make_window("b", STORE_OBSERVED, T0 + i * SEC, 10);
        CHECK_INT(store_window_put(st, &w), DQ_OK);
    }
    e = (struct store_event){.kind = "k", .detail_json = "{broken"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_EINVAL); /* fails inside SQLite (CHECK) */
    CHECK_INT(store_commit(st), DQ_OK);
    CHECK_INT(event_count(st), 0);
    CHECK_INT(window_count(st, "a", STORE_OBSERVED), 3);
    CHECK_INT(window_count(st, "b", STORE_OBSERVED), 3);

    /* While one store holds a write transaction, a second connection reads the last
       committed state (WAL) and cannot start its own write: it fails after its busy
       timeout instead of hanging. */
    struct store *other = NULL;
    struct store_options o = {.busy_timeout_ms = 50};
    CHECK_INT(store_open_ex(path, &o, &other), DQ_OK);
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(put_probe(st, "c", 10, 10, true), DQ_OK);
    if (other) {
        CHECK_INT(probe_count(other), 2);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_INT(store_begin(other), DQ_ESTORE);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        CHECK_MSG(waited >= 0.04 && waited < 5, "waited %.3f s", waited);
        CHECK(!store_in_transaction(other));
        CHECK_INT(put_probe(other, "d", 10, 10, true), DQ_ESTORE); /* busy: locked */
    }
    CHECK_INT(store_commit(st), DQ_OK);
    if (other) {
        CHECK_INT(probe_count(other), 3);
        CHECK_INT(put_probe(other, "d", 10, 10, true), DQ_OK);
    }
    store_close(other);
    CHECK_INT(probe_count(st), 4);

    /* A refused commit (SQLite's commit hook) fails and leaves nothing; the next commits
       go through again. */
    store_refuse_commits(st, 1);
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(put_probe(st, "refused", 10, 10, true), DQ_OK);
    CHECK_INT(store_commit(st), DQ_ESTORE);
    CHECK(!store_in_transaction(st));
    CHECK_INT(probe_count(st), 4);
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(put_probe(st, "accepted", 10, 10, true), DQ_OK);
    CHECK_INT(store_commit(st), DQ_OK);
    CHECK_INT(probe_count(st), 5);
    CHECK_INT(store_probe_delete(st, "accepted"), DQ_OK);

    /* Closing with a transaction open rolls it back. */
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(put_probe(st, "uncommitted", 10, 10, true), DQ_OK);
    store_close(st);
    st = open_ok(path);
    struct probe_list l = {0};
    CHECK_INT(store_probe_get(st, "uncommitted", collect_probe, &l), DQ_ENOTFOUND);
    CHECK_INT(probe_count(st), 4);
    store_close(st);
}

/* Everything written comes back after a reopen, field for field. */
static void test_reopen_reload(void) {
    char path[512];
    tmp_path(path, sizeof path, "reload.db");
    struct store *st = open_ok(path);
    CHECK_INT(store_begin(st), DQ_OK);
    struct store_probe p = {.name = "svc",
                            .dmax_ms = 0.5,
                            .bins = 4096,
                            .enabled = true,
                            .always_on = false,
                            .qta_json = "{\"points\":[[0.5,0.0001]],\"max_lost\":0.5}"};
    CHECK_INT(store_probe_upsert(st, &p), DQ_OK);
    struct store_window w = make_window("svc", STORE_OBSERVED, T0, 1000);
    w.mean = 1.0 / 3.0;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    struct store_event e = {.kind = "start", .detail_json = "{\"a\":[1,2,3]}"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);
    CHECK_INT(store_commit(st), DQ_OK);
    store_close(st);

    st = open_ok(path);
    struct probe_list l = {0};
    CHECK_INT(store_probes_each(st, collect_probe, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_STR(l.names[0], "svc");
    CHECK_NEAR(l.rows[0].dmax_ms, 0.5, 0);
    CHECK_INT(l.rows[0].bins, 4096);
    CHECK(l.rows[0].enabled && !l.rows[0].always_on);
    CHECK_STR(l.rows[0].qta_json, p.qta_json);
    struct store_window got;
    CHECK_INT(store_window_latest(st, "svc", STORE_OBSERVED, &got), DQ_OK);
    CHECK(got.mean == 1.0 / 3.0); /* doubles are stored exactly */
    CHECK_INT(got.n, 1000);
    CHECK_INT(got.n_ok, 998);
    struct event_list el = {0};
    CHECK_INT(store_events_each(st, NULL, NULL, 0, 0, collect_event, &el), DQ_OK);
    CHECK_INT(el.count, 1);
    CHECK_STR(el.details[0], "{\"a\":[1,2,3]}");
    store_close(st);
}

/* A process killed right after a commit (no store_close) loses nothing committed, and
   the transaction it had open when it died leaves no trace. */
static void test_crash_durability(void) {
    char path[512];
    tmp_path(path, sizeof path, "crash.db");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct store *st = NULL;
        if (store_open(path, &st) != DQ_OK) {
            _exit(3);
        }
        int bad = put_probe(st, "committed", 10, 10, true) != DQ_OK;
        bad |= store_begin(st) != DQ_OK;
        bad |= put_probe(st, "half_done", 10, 10, true) != DQ_OK;
        _exit(bad ? 4 : 0); /* dies holding the open transaction, without closing */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct store *st = open_ok(path);
    struct probe_list l = {0};
    CHECK_INT(store_probes_each(st, collect_probe, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_STR(l.names[0], "committed");
    store_close(st);
}

/* ---- retention ------------------------------------------------------------------------ */

static void test_retention(void) {
    char path[512];
    tmp_path(path, sizeof path, "retention.db");
    struct store *st = open_ok(path);
    struct fake_clock clk = {T0 + 100 * SEC};
    store_set_clock(st, fake_now, &clk);
    const char *names[] = {"p1", "p2", "p3"};
    CHECK_INT(store_begin(st), DQ_OK);
    for (int k = 0; k < 3; k++) {
        CHECK_INT(put_probe(st, names[k], 10, 10, true), DQ_OK);
        /* p1, p2: windows at T0 .. T0+99; p3: only 5 windows at T0+95 .. T0+99. */
        for (int i = k == 2 ? 95 : 0; i < 100; i++) {
            struct store_window w = make_window(names[k], STORE_OBSERVED, T0 + i * SEC, 10);
            CHECK_INT(store_window_put(st, &w), DQ_OK);
            w.kind = STORE_CALCULATED;
            CHECK_INT(store_window_put(st, &w), DQ_OK);
        }
    }
    for (int i = 0; i < 10; i++) {
        struct store_event e = {.time_ns = T0 + i * 10 * SEC, .kind = "tick"};
        CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);
    }
    CHECK_INT(store_commit(st), DQ_OK);

    /* Nothing to do: no limits. */
    struct store_retention r = {0};
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    int64_t deleted = -1;
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 0);

    /* By age: windows that started more than 60 s before now (T0+100) go: starts T0..T0+39. */
    r.window_max_age_ns = 60 * SEC;
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 2 * 2 * 40);
    CHECK_INT(window_count(st, "p1", STORE_OBSERVED), 60);
    CHECK_INT(window_count(st, "p2", STORE_CALCULATED), 60);
    CHECK_INT(window_count(st, "p3", STORE_OBSERVED), 5);
    struct window_list l = {0};
    CHECK_INT(
        store_windows_each(st, "p1", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0, collect_window, &l),
        DQ_OK);
    CHECK_INT(l.count, 60);

    /* By count: the newest 10 per probe and kind survive; p3 (5 rows) is untouched. */
    r.window_max_rows = 10;
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 2 * 2 * 50);
    CHECK_INT(window_count(st, "p1", STORE_OBSERVED), 10);
    CHECK_INT(window_count(st, "p1", STORE_CALCULATED), 10);
    CHECK_INT(window_count(st, "p3", STORE_CALCULATED), 5);
    struct store_window w;
    CHECK_INT(store_window_latest(st, "p2", STORE_OBSERVED, &w), DQ_OK);
    CHECK_INT(w.start_ns, T0 + 99 * SEC);
    memset(&l, 0, sizeof l);
    CHECK_INT(
        store_windows_each(st, "p2", STORE_OBSERVED, INT64_MIN, INT64_MAX, 0, collect_window, &l),
        DQ_OK);
    CHECK_INT(l.rows[9].start_ns, T0 + 90 * SEC); /* the oldest survivor */

    /* Inside a caller's transaction, a prune is undone by its rollback. */
    r.window_max_rows = 1;
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    CHECK_INT(store_begin(st), DQ_OK);
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 2 * 2 * 9 + 2 * 4);
    CHECK_INT(window_count(st, "p1", STORE_OBSERVED), 1);
    CHECK_INT(store_rollback(st), DQ_OK);
    CHECK_INT(window_count(st, "p1", STORE_OBSERVED), 10);

    /* Events by age: those before now - 45 s = T0+55 go: T0, T0+10 .. T0+50 (6 events). */
    r = (struct store_retention){.event_max_age_ns = 45 * SEC};
    CHECK_INT(store_set_retention(st, &r), DQ_OK);
    CHECK_INT(store_prune(st, &deleted), DQ_OK);
    CHECK_INT(deleted, 6);
    CHECK_INT(event_count(st), 4);
    /* New events keep increasing ids after a prune. */
    struct event_list el = {0};
    CHECK_INT(store_events_each(st, NULL, NULL, 0, 0, collect_event, &el), DQ_OK);
    int64_t id = 0;
    struct store_event e = {.kind = "after"};
    CHECK_INT(store_event_add(st, &e, &id), DQ_OK);
    CHECK(id > el.ids[3]);

    r.window_max_rows = -1;
    CHECK_INT(store_set_retention(st, &r), DQ_EINVAL);
    CHECK_INT(store_set_retention(st, NULL), DQ_EINVAL);
    struct store_retention def;
    store_retention_default(&def);
    CHECK_INT(def.window_max_age_ns, 7 * 24 * 3600 * SEC);
    CHECK_INT(store_prune(st, NULL), DQ_OK);
    store_close(st);
}

/* ---- a window close at scale --------------------------------------------------------- */

struct walk {
    struct store *st;
    int *rows;
};

static int count_all_windows(void *ctx, const struct store_probe *p) {
    struct walk *w = ctx;
    int n = 0;
    int rc = store_windows_each(w->st, p->name, STORE_OBSERVED, INT64_MIN, INT64_MAX, 0,
                                count_window, &n);
    *w->rows += n;
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times one window-close transaction for 1000 probes (two rows each): the daemon's
   per-second write. Printed, not asserted: the machine is shared. */
static void test_window_close_batch(void) {
    char path[512];
    tmp_path(path, sizeof path, "batch.db");
    struct store *st = open_ok(path);
    enum { PROBES = 1000, WINDOWS = 21 };
    char names[PROBES][24];
    CHECK_INT(store_begin(st), DQ_OK);
    for (int i = 0; i < PROBES; i++) {
        snprintf(names[i], sizeof names[i], "probe_%d", i);
        CHECK_INT(put_probe(st, names[i], 100, 100, true), DQ_OK);
    }
    CHECK_INT(store_commit(st), DQ_OK);
    double secs[WINDOWS];
    int failures = 0;
    for (int k = 0; k < WINDOWS; k++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        failures += store_begin(st) != DQ_OK;
        for (int i = 0; i < PROBES; i++) {
            struct store_window w = make_window(names[i], STORE_OBSERVED, T0 + k * SEC, 100);
            failures += store_window_put(st, &w) != DQ_OK;
            w.kind = STORE_CALCULATED;
            failures += store_window_put(st, &w) != DQ_OK;
        }
        failures += store_commit(st) != DQ_OK;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs[k] = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
    CHECK_INT(failures, 0);
    CHECK_INT(window_count(st, "probe_999", STORE_CALCULATED), WINDOWS);
    qsort(secs, WINDOWS, sizeof secs[0], cmp_double);
    printf("window close, %d probes x 2 rows, %d transactions: median %.2f ms, worst %.2f ms\n",
           PROBES, WINDOWS, secs[WINDOWS / 2] * 1e3, secs[WINDOWS - 1] * 1e3);
    /* The default work limit leaves a full walk alone: every probe, every window. */
    int rows = 0;
    CHECK_INT(store_probes_each(st, count_all_windows, &(struct walk){st, &rows}), DQ_OK);
    CHECK_INT(rows, PROBES * WINDOWS);
    store_close(st);

    /* A small limit stops the same walk (callbacks' statements count against it) with a
       message, where a damaged file would otherwise loop; small calls still work. */
    struct store_options o = {.max_steps = 20000};
    st = NULL;
    CHECK_INT(store_open_ex(path, &o, &st), DQ_OK);
    if (st) {
        rows = 0;
        CHECK_INT(store_probes_each(st, count_all_windows, &(struct walk){st, &rows}), DQ_ESTORE);
        CHECK_MSG(strstr(dq_last_error(), "is the database damaged") != NULL, "message: %s",
                  dq_last_error());
        CHECK(rows > 0 && rows < PROBES * WINDOWS);
        struct probe_list l = {0};
        CHECK_INT(store_probe_get(st, "probe_7", collect_probe, &l), DQ_OK);
        CHECK_INT(window_count(st, "probe_7", STORE_OBSERVED), WINDOWS);
        store_close(st);
    }
    o.max_steps = -1;
    CHECK_INT(store_open_ex(path, &o, &st), DQ_EINVAL);
}

/* Every case's files live in one temporary directory, removed at the end unless
 * DQD_KEEP_TMP is set. */
static int setup(void) {
    return tmp_setup("store");
}

static void teardown(void) {
    if (getenv("DQD_KEEP_TMP")) {
        printf("kept %s\n", tmp_dir);
    } else {
        tmp_cleanup();
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(open_fresh),
    CHECK_CASE(open_empty_file),
    CHECK_CASE(open_bad_args),
    CHECK_CASE(migrate_in_steps),
    CHECK_CASE(reject_newer),
    CHECK_CASE(reject_garbage),
    CHECK_CASE(reject_foreign),
    CHECK_CASE(unwritable),
    CHECK_CASE(lock),
    CHECK_CASE(remove_files),
    CHECK_CASE(diagrams),
    CHECK_CASE(probes),
    CHECK_CASE(windows),
    CHECK_CASE(events),
    CHECK_CASE(transactions),
    CHECK_CASE(reopen_reload),
    CHECK_CASE(crash_durability),
    CHECK_CASE(retention),
    CHECK_CASE(window_close_batch),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
