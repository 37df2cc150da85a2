/*
 * test_dqctl_model_live.c: `dqctl model` with measured DISTs against a fake dqd
 * (tests/fake_dqd.h: a controller/http/ server in a thread on a loopback port) that serves
 * probe ΔQs on their own grids, a calculated ΔQ, older windows, snapshots and the API's
 * errors, and records each request. dqctl_model_main runs in-process with its output
 * captured. Checked: the requests (path, kind, window, the token), the model's quantiles,
 * mean and lost mass on the measured data (grids of 1 and 2 ms combined, scale, shift,
 * calculated:, @W, snapshot: before and after), the "measured" lines of the human output,
 * and that every failure (unknown probe, no window yet, a bad grid, a snapshot still
 * collecting or unknown, dqd unreachable) exits 2 naming the probe and the server, while
 * a model without measured DISTs, or with a model error, makes no request at all.
 */
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check.h"
#include "../fake_dqd.h"
#include "dqctl.h"
#include "http.h"

#define T0 1795000000.0 /* the latest window's start, Unix seconds */
#define FIRED 1795000100.0

struct fake {
    struct fake_dqd dqd;
    int port;
    int requests;
    char path[256];
    char kind[32];
    char window[32];
    char auth[128];
};

/* A ΔQ answer: bins of width w; mass m at each bin of [from, to] (bin indices). */
static json_t *dq_json(const char *probe, const char *kind, double w, int bins, int from, int to,
                       double m, double start, int n, int fa) {
    json_t *pdf = json_array(), *cdf = json_array();
    double acc = 0;
    for (int i = 0; i < bins; i++) {
        double x = i >= from && i <= to ? m : 0.0;
        acc += x;
        json_array_append_new(pdf, json_real(x));
        json_array_append_new(cdf, json_real(acc));
    }
    return json_pack("{s:s,s:s,s:{s:f,s:f},s:f,s:i,s:o,s:o,s:f,s:i,s:i,s:i,s:i}", "probe", probe,
                     "kind", kind, "window", "start", start, "end", start + 0.1, "bin_width", w,
                     "bins", bins, "pdf", pdf, "cdf", cdf, "lost", 1.0 - acc, "n", n, "ok", n - fa,
                     "fa", fa, "to", 0);
}

/* One element of a snapshot's "dqs": all mass at bin `at` of 1 ms bins. */
static json_t *snap_dq(const char *probe, const char *kind, double start, int at) {
    json_t *pdf = json_array();
    for (int i = 0; i < 64; i++) {
        json_array_append_new(pdf, json_real(i == at ? 1.0 : 0.0));
    }
    return json_pack("{s:s,s:s,s:f,s:f,s:f,s:i,s:f,s:o}", "probe", probe, "kind", kind, "start",
                     start, "end", start + 0.1, "bin_width", 0.001, "bins", 64, "lost", 0.0, "pdf",
                     pdf);
}

static json_t *snapshot(int id) {
    json_t *dqs = json_array();
    json_array_append_new(dqs, snap_dq("db", "observed", FIRED - 0.2, 15));
    json_array_append_new(dqs, snap_dq("db", "observed", FIRED - 0.1, 20)); /* the firing one */
    json_array_append_new(dqs, snap_dq("other", "observed", FIRED - 0.1, 1));
    if (id == 3) {
        json_array_append_new(dqs, snap_dq("db", "observed", FIRED + 0.1, 40)); /* newest after */
        json_array_append_new(dqs, snap_dq("db", "calculated", FIRED + 0.2, 60));
        json_array_append_new(dqs, snap_dq("db", "observed", FIRED, 30));
    }
    return json_pack("{s:i,s:n,s:n,s:s,s:s,s:f,s:i,s:b,s:i,s:o}", "id", id, "trigger",
                     "investigation", "probe", "db", "reason", "trigger load fired", "time", FIRED,
                     "windows", 2, "complete", id == 3, "dq_count", (int)json_array_size(dqs),
                     "dqs", dqs);
}

static void handler(void *ctx, const struct http_request *req, struct http_response *res) {
    struct fake *f = ctx;
    f->requests++;
    snprintf(f->path, sizeof f->path, "%s", req->path);
    const char *k = http_request_query(req, "kind");
    const char *w = http_request_query(req, "window");
    const char *a = http_request_header(req, "Authorization");
    snprintf(f->kind, sizeof f->kind, "%s", k ? k : "");
    snprintf(f->window, sizeof f->window, "%s", w ? w : "");
    snprintf(f->auth, sizeof f->auth, "%s", a ? a : "");
    int latest = !w || strcmp(w, "latest") == 0 || strcmp(w, "0") == 0;
    int calc = k && strcmp(k, "calculated") == 0;
    if (strcmp(req->path, "/api/v1/status") == 0) {
        http_reply_data(res, json_pack("{s:s,s:i,s:i}", "version", "fake", "min_instances", 5,
                                       "min_windows", 2));
    } else if (strcmp(req->path, "/api/v1/probes/thin/dq") == 0) {
        http_reply_data(res, dq_json("thin", "observed", 0.001, 16, 1, 1, 1.0, T0, 2, 0));
    } else if (strcmp(req->path, "/api/v1/probes/front/dq") == 0 && latest && !calc) {
        /* 2 ms bins: all at 4 ms */
        http_reply_data(res, dq_json("front", "observed", 0.002, 512, 2, 2, 1.0, T0, 10, 0));
    } else if (strcmp(req->path, "/api/v1/probes/db/dq") == 0 && calc) {
        http_reply_data(res, dq_json("db", "calculated", 0.001, 1024, 7, 7, 1.0, T0, 0, 0));
    } else if (strcmp(req->path, "/api/v1/probes/db/dq") == 0 && latest) {
        /* 1 ms bins: 0.045 at each of 10 … 29 ms, 0.1 lost (10 of 100 failed) */
        http_reply_data(res, dq_json("db", "observed", 0.001, 1024, 10, 29, 0.045, T0, 100, 10));
    } else if (strcmp(req->path, "/api/v1/probes/db/dq") == 0 && strcmp(w, "1") == 0) {
        http_reply_data(res, dq_json("db", "observed", 0.001, 1024, 50, 50, 1.0, T0 - 0.1, 5, 0));
    } else if (strcmp(req->path, "/api/v1/probes/weird/dq") == 0) {
        http_reply_data(res, dq_json("weird", "observed", 0.003, 16, 1, 1, 1.0, T0, 1, 0));
    } else if (strcmp(req->path, "/api/v1/probes/fresh/dq") == 0 ||
               strncmp(req->path, "/api/v1/probes/db/", 18) == 0) {
        http_reply_error(res, 404, "not_found",
                         "probe %s has no observed ΔQ for window %s yet (windows close 200 ms "
                         "after their end)",
                         req->path[15] == 'f' ? "fresh" : "db", w ? w : "0");
    } else if (strncmp(req->path, "/api/v1/probes/", 15) == 0) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(req->path + 15, "/"), req->path + 15);
        http_reply_error(res, 404, "not_found", "no probe named \"%s\"", name);
    } else if (strcmp(req->path, "/api/v1/snapshots/3") == 0) {
        http_reply_data(res, snapshot(3));
    } else if (strcmp(req->path, "/api/v1/snapshots/4") == 0) {
        http_reply_data(res, snapshot(4));
    } else if (strncmp(req->path, "/api/v1/snapshots/", 18) == 0) {
        http_reply_error(res, 404, "not_found", "no such snapshot");
    } else {
        http_reply_error(res, 404, "not_found", "no route");
    }
}

static struct fake the_fake; /* the fake dqd every case asks, started by setup() */
static char dir[64];
static char model[256];
static char server[64]; /* with a trailing '/', as a user may write it */
static char base[64];   /* without: as messages print it */

/* Runs `dqctl model MODEL --set …` with argv words; out/err captured in r. */
static int model_run(struct run *r, const char *const *words, int n) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = "model";
    argv[argc++] = model;
    for (int i = 0; i < n && argc < 31; i++) {
        argv[argc++] = (char *)words[i];
    }
    argv[argc] = NULL;
    return run_cmd(r, dqctl_model_main, argc, argv);
}

static json_t *model_json(const char *const *words, int n) {
    struct run r;
    int rc = model_run(&r, words, n);
    CHECK_MSG(rc == 0, "model %s …: exit %d: %s", words[1], rc, r.err.buf);
    json_error_t e;
    json_t *j = rc == 0 ? json_loadb(r.out.buf, strcspn(r.out.buf, "\n"), 0, &e) : NULL;
    CHECK_MSG(rc != 0 || j != NULL, "no JSON: %s", r.out.buf);
    run_free(&r);
    return j;
}

static double num(const json_t *o, const char *key) {
    return json_number_value(json_object_get(o, key));
}

static double quant(const json_t *o, const char *p) {
    const json_t *v = json_object_get(json_object_get(o, "quantiles"), p);
    CHECK_MSG(json_is_number(v), "quantile %s is not a number", p);
    return json_number_value(v);
}

/* Expects exit `code` and every needle on stderr. */
static void expect_fail(struct fake *f, int code, const char *const *words, int n, const char *n1,
                        const char *n2, const char *n3) {
    struct run r;
    CHECK_INT(model_run(&r, words, n), code);
    const char *needles[] = {n1, n2, n3};
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(!needles[i] || strstr(r.err.buf, needles[i]), "stderr lacks \"%s\": %s",
                  needles[i], r.err.buf);
    }
    CHECK_STR(r.out.buf ? r.out.buf : "", "");
    run_free(&r);
    (void)f;
}

static void test_measured(void) {
    struct fake *f = &the_fake;
    /* front: bin 2 of 2 ms bins, (4, 6] ms; db: bins 10 … 29 of 1 ms bins, (10, 30] ms, with
     * 0.1 lost. A bin's mass is spread over it (docs/engine.md): front is U(4, 6) ms, db
     * 0.9·U(10, 30) ms; quantiles are right edges, at or after the exact value. */
    f->requests = 0;
    const char *w1[] = {"--set", "front=probe:front", "--set", "db=probe:db", "--server", server,
                        "--json"};
    json_t *j = model_json(w1, 7);
    CHECK_INT(f->requests, 3); /* the status (min_instances), then the two ΔQs */
    CHECK_STR(f->path, "/api/v1/probes/db/dq");
    CHECK_STR(f->kind, "observed");
    CHECK_STR(f->window, "0");
    if (j) {
        /* the grid: no finer than the coarsest measured bins (2 ms), reaching the support:
         * front's last bin ends at 6 ms, db's at 30 ms */
        CHECK_NEAR(num(j, "bin_width"), 0.002, 1e-12);
        CHECK_NEAR(num(j, "bins"), 18, 0);
        CHECK_NEAR(num(j, "lost"), 0.1, 1e-9);
        CHECK_NEAR(num(j, "mean"), 0.005 + 0.020, 1e-9); /* 1 ms → 2 ms keeps the mean */
        /* exact: U(4,6) + U(10,30) has F(t) = (t − 15)/20 on [16, 34] ms; the median of the
         * whole is where F = 0.5/0.9: 26.1 ms, so the right edge 28 ms */
        CHECK_NEAR(quant(j, "0.5"), 0.028, 1e-9);
        CHECK(json_is_null(json_object_get(json_object_get(j, "quantiles"), "0.95")));
        CHECK_INT(json_array_size(json_object_get(j, "cdf")), 18);
        CHECK_STR(json_string_value(json_object_get(j, "node")), "e2e");
    }
    json_decref(j);

    /* db twice as fast: 0.5·db is 0.9·U(5, 15) ms, mean 10 ms */
    const char *w2[] = {
        "--set", "front=probe:front", "--set", "db=scale(probe:db,0.5)", "--server", server,
        "--json"};
    j = model_json(w2, 7);
    if (j) {
        CHECK_NEAR(num(j, "bin_width"), 0.002, 1e-12);
        CHECK_NEAR(num(j, "lost"), 0.1, 1e-9); /* scale keeps the lost mass */
        CHECK_NEAR(num(j, "mean"), 0.005 + 0.010, 1e-9);
        /* exact: U(4,6) + U(5,15) has F(t) = (t − 10)/10 on [11, 19] ms: F = 0.5/0.9 at
         * 15.6 ms, so the right edge 16 ms */
        CHECK_NEAR(quant(j, "0.5"), 0.016, 1e-9);
    }
    json_decref(j);

    /* front 3 ms slower (shift), db as measured: everything moves by 3 ms */
    const char *w3[] = {
        "--set", "front=shift(probe:front,0.003)", "--set", "db=probe:db", "--server", server,
        "--json"};
    j = model_json(w3, 7);
    if (j) {
        /* (7, 9] ms spreads over the 2 ms bins (6, 8] and (8, 10] equally: mean kept */
        CHECK_NEAR(num(j, "mean"), 0.008 + 0.020, 1e-9);
        CHECK_NEAR(quant(j, "0.5"), 0.030, 1e-9); /* exact 29.1 ms */
    }
    json_decref(j);

    /* calculated:db and probe:db@1 ask for what they say */
    const char *w4[] = {
        "--set", "front=probe:front", "--set", "db=calculated:db", "--server", server, "--json"};
    j = model_json(w4, 7);
    CHECK_STR(f->kind, "calculated");
    if (j) {
        /* (4, 6] + (6, 8] ms (db's (7, 8] on 2 ms bins): half by 12 ms, all by 14 */
        CHECK_NEAR(quant(j, "0.5"), 0.012, 1e-9);
        CHECK_NEAR(num(j, "lost"), 0.0, 1e-9);
    }
    json_decref(j);
    const char *w5[] = {"--set", "front=probe:front", "--set", "db=probe:db@1", "--server", server,
                        "--json"};
    j = model_json(w5, 7);
    CHECK_STR(f->window, "1");
    if (j) {
        /* (4, 6] + (50, 52] ms: half by 56 ms; mean 5 + 51 */
        CHECK_NEAR(quant(j, "0.5"), 0.056, 1e-9);
        CHECK_NEAR(num(j, "mean"), 0.056, 1e-9);
    }
    json_decref(j);

    /* snapshots: the newest observed window after the firing, or before it */
    const char *w6[] = {
        "--set", "front=probe:front", "--set", "db=snapshot:3:db", "--server", server, "--json"};
    j = model_json(w6, 7);
    CHECK_STR(f->path, "/api/v1/snapshots/3");
    if (j) {
        CHECK_NEAR(quant(j, "0.5"), 0.046, 1e-9); /* (4, 6] + (40, 42] ms */
    }
    json_decref(j);
    const char *w7[] = {
        "--set", "front=wait(0.004)", "--set", "db=snapshot:3:db:before", "--server", server,
        "--json"};
    j = model_json(w7, 7);
    if (j) {
        /* 4 ms exactly + (20, 21] ms (the firing window), on db's 1 ms bins */
        CHECK_NEAR(quant(j, "0.5"), 0.025, 1e-9);
    }
    json_decref(j);

    /* $DQD_URL without --server, and $DQD_TOKEN sent as for every dqctl command */
    setenv("DQD_URL", server, 1);
    setenv("DQD_TOKEN", "sekrit", 1);
    const char *w8[] = {"--set", "front=probe:front", "--set", "db=wait(0)", "--json"};
    j = model_json(w8, 5);
    CHECK_STR(f->auth, "Bearer sekrit");
    CHECK_STR(f->path, "/api/v1/probes/front/dq");
    if (j) {
        CHECK_NEAR(quant(j, "0.5"), 0.006, 1e-9); /* front's (4, 6] ms, wait(0) the identity */
    }
    json_decref(j);
    unsetenv("DQD_URL");
    unsetenv("DQD_TOKEN");
}

static void test_human(void) {
    struct fake *f = &the_fake;
    (void)f;
    struct run r;
    const char *w[] = {
        "--set", "front=probe:front", "--set", "db=scale(snapshot:3:db,0.5)", "--server", server};
    CHECK_INT(model_run(&r, w, 6), 0);
    const char *o = r.out.buf;
    const char *first = "measured  front = probe:front: observed, window 2026-11-";
    CHECK_MSG(strncmp(o, first, strlen(first)) == 0, "first line: %.200s", o);
    CHECK(strstr(o, " UTC + 100 ms, 10 instances (0 failed or timed out), bins of 2 ms\n") != NULL);
    CHECK(strstr(o, "          db = scale(snapshot:3:db,0.5): snapshot 3, window ") != NULL);
    CHECK(strstr(o, " UTC + 100 ms (after the firing), bins of 1 ms\n\ne2e  (calculated; bin "
                    "width 2 ms") != NULL);
    CHECK(strstr(o, "p50       26 ms") != NULL); /* (4, 6] + 0.5·(40, 41] ms */
    run_free(&r);
    /* --json has no such lines: one object per line, as without measured DISTs */
    const char *wj[] = {"--set", "front=probe:front", "--set", "db=probe:db", "--server", server,
                        "--json"};
    CHECK_INT(model_run(&r, wj, 7), 0);
    CHECK(r.out.buf[0] == '{' && strchr(r.out.buf, '\n') == r.out.buf + strlen(r.out.buf) - 1);
    run_free(&r);
}

static void test_failures(void) {
    struct fake *f = &the_fake;
    const char *w1[] = {"--set", "front=probe:front", "--set", "db=probe:nope", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w1, 6,
                "--set db=probe:nope: cannot get the observed ΔQ of probe nope (latest "
                "window)",
                base, "no probe named \"nope\" (HTTP 404, not_found)");
    const char *w2[] = {"--set", "front=probe:fresh", "--set", "db=wait(0)", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w2, 6, "probe fresh", "has no observed ΔQ for window 0 yet",
                base);
    const char *w3[] = {"--set", "front=probe:weird", "--set", "db=wait(0)", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w3, 6, "probe weird",
                "bin width 0.003 s, not 0.001 s times a power of two", base);
    const char *w4[] = {"--set", "front=wait(0)", "--set", "db=snapshot:4:db", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w4, 6,
                "snapshot 4 has no observed ΔQ of db after its firing yet", base,
                "snapshot:ID:NAME:before");
    const char *w5[] = {"--set", "front=wait(0)", "--set", "db=snapshot:9:db", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w5, 6, "probe db in snapshot 9", "no such snapshot (HTTP 404",
                base);
    const char *w6[] = {"--set", "front=wait(0)", "--set", "db=snapshot:3:zzz", "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w6, 6,
                "snapshot 3 holds no observed ΔQ of probe zzz (it holds: db, other)", base, NULL);
    const char *w7[] = {"--set",    "front=wait(0)", "--set", "db=shift(probe:db@2,1)",
                        "--server", server};
    expect_fail(f, DQCTL_EXIT_API, w7, 6, "(window 2 back)", "no observed ΔQ for window 2 yet",
                base);

    /* a window with fewer instances than dqd's min_instances: refused, the window named */
    const char *wt[] = {"--set", "front=probe:thin", "--set", "db=wait(0)", "--server", server};
    expect_fail(f, DQCTL_EXIT_USAGE, wt, 6,
                "--set front=probe:thin: the window of thin it names (the latest, 0 back: ",
                "holds 2 instances, fewer than dqd's min_instances (5): too few to stand for "
                "thin's ΔQ",
                "probe:thin@W");

    /* no request at all: a model without measured DISTs, a DIST or model error */
    int before = f->requests;
    struct run r;
    const char *w8[] = {"--set",    "front=wait(0.004)",
                        "--set",    "db=scale(uniform(0.01,0.03),0.5)",
                        "--server", server,
                        "--json"};
    CHECK_INT(model_run(&r, w8, 7), 0);
    run_free(&r);
    const char *w9[] = {"--set", "front=probe:front", "--set", "nothere=probe:db", "--server",
                        server};
    expect_fail(f, DQCTL_EXIT_USAGE, w9, 6, "no node named `nothere`", NULL, NULL);
    const char *w10[] = {"--set", "front=probe:front", "--set", "db=scale(probe:db)", "--server",
                         server};
    expect_fail(f, DQCTL_EXIT_USAGE, w10, 6,
                "--set db: scale(DIST,K) needs a distribution and a factor", NULL, NULL);
    const char *w11[] = {"--set", "front=probe:front", "--set", "db=probe:db", "--server"};
    expect_fail(f, DQCTL_EXIT_USAGE, w11, 5, "--server needs a value", NULL, NULL);
    CHECK_INT(f->requests, before);
}

static void test_unreachable(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    char url[64], want[400];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(want, sizeof want,
             "dqctl model: --set db=scale(probe:db,0.5): cannot get the observed ΔQ of probe db "
             "(latest window): cannot reach dqd at %s: Connection refused. Is dqd running? Set "
             "--server or DQD_URL.\n",
             url);
    struct run r;
    const char *w[] = {"--set", "front=wait(0)", "--set", "db=scale(probe:db,0.5)", "--server",
                       url};
    CHECK_INT(model_run(&r, w, 6), DQCTL_EXIT_API);
    CHECK_STR(r.err.buf, want);
    CHECK_STR(r.out.buf ? r.out.buf : "", "");
    run_free(&r);
}

static void test_help(void) {
    struct run r;
    CHECK_INT(run_cmd(&r, dqctl_model_main, 2, (char *[]){"model", "--help"}), 0);
    const char *o = r.out.buf;
    CHECK(strstr(o, "[--server URL]") && strstr(o, "probe:NAME@W") &&
          strstr(o, "calculated:NAME") && strstr(o, "snapshot:ID:NAME:before") &&
          strstr(o, "scale(DIST,K)") && strstr(o, "shift(DIST,S)") && strstr(o, "$DQD_TOKEN"));
    run_free(&r);
}

/* The fake dqd on a loopback port, and a model file in a temporary directory. */
static int setup(void) {
    struct fake *f = &the_fake;
    memset(f, 0, sizeof *f);
    f->port = fake_dqd_start(&f->dqd, handler, f);
    CHECK(f->port > 0);
    snprintf(server, sizeof server, "http://127.0.0.1:%d/", f->port);
    snprintf(base, sizeof base, "http://127.0.0.1:%d", f->port);
    snprintf(dir, sizeof dir, "/tmp/test_dqctl_model_live.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(model, sizeof model, "%s/e2e.dq", dir);
    FILE *m = fopen(model, "w");
    CHECK(m != NULL);
    if (m) {
        fputs("e2e = front -> db;\n", m);
        fclose(m);
    }
    unsetenv("DQD_URL");
    unsetenv("DQD_TOKEN");
    return 0;
}

static void teardown(void) {
    fake_dqd_stop(&the_fake.dqd);
    remove(model);
    rmdir(dir);
}

static const struct check_case cases[] = {
    CHECK_CASE(measured),    CHECK_CASE(human), CHECK_CASE(failures),
    CHECK_CASE(unreachable), CHECK_CASE(help),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
