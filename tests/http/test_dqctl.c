/*
 * test_dqctl.c: dqctl's API subcommands. The pure parts (options, durations, QTA points,
 * the QTA check, renderers) are called directly; the subcommands run against a fake dqd
 * built on controller/http/ (in a thread, ephemeral loopback port) that answers the
 * routes of docs/api.md with canned data and records each request, so the tests check
 * the exact method, path, query and JSON body dqctl sends, its output and exit codes.
 */
#include "dqctl_api.h"

#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check.h"
#include "../fake_dqd.h"
#include "dqctl.h"
#include "dqctl_watch.h"
#include "http.h"

/* ---- pure parts ------------------------------------------------------------------------ */

static void test_durations(void) {
    double s = -1;
    CHECK_INT(dqctl_parse_duration("250ms", 1.0, &s), 0);
    CHECK_NEAR(s, 0.25, 1e-12);
    CHECK_INT(dqctl_parse_duration("1.5s", 1e-3, &s), 0);
    CHECK_NEAR(s, 1.5, 1e-12);
    CHECK_INT(dqctl_parse_duration("800us", 1.0, &s), 0);
    CHECK_NEAR(s, 800e-6, 1e-15);
    CHECK_INT(dqctl_parse_duration("800\xc2\xb5s", 1.0, &s), 0);
    CHECK_NEAR(s, 800e-6, 1e-15);
    CHECK_INT(dqctl_parse_duration("20ns", 1.0, &s), 0);
    CHECK_NEAR(s, 20e-9, 1e-18);
    CHECK_INT(dqctl_parse_duration("2m", 1.0, &s), 0);
    CHECK_NEAR(s, 120, 1e-12);
    CHECK_INT(dqctl_parse_duration("250", 1e-3, &s), 0); /* set-timeout: bare = ms */
    CHECK_NEAR(s, 0.25, 1e-12);
    CHECK_INT(dqctl_parse_duration("2", 1.0, &s), 0); /* the caller's bare unit */
    CHECK_NEAR(s, 2, 1e-12);
    CHECK_INT(dqctl_parse_duration("1e3ms", 1.0, &s), 0);
    CHECK_NEAR(s, 1.0, 1e-12);
    CHECK_INT(dqctl_parse_duration("0", 1.0, &s), 0);
    CHECK_NEAR(s, 0, 0);
    s = 42;
    const char *bad[] = {"", "-1ms", "abc", "1.5x", "inf", "nan", "ms", "1 ms", "0x10", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(dqctl_parse_duration(bad[i], 1.0, &s) == -1, "accepted \"%s\"", bad[i]);
    }
    CHECK_NEAR(s, 42, 0); /* untouched on failure */

    double f = 0;
    CHECK_INT(dqctl_parse_fraction("0.95", &f), 0);
    CHECK_NEAR(f, 0.95, 1e-12);
    CHECK_INT(dqctl_parse_fraction("1%", &f), 0);
    CHECK_NEAR(f, 0.01, 1e-12);
    CHECK_INT(dqctl_parse_fraction(".5", &f), 0);
    CHECK_NEAR(f, 0.5, 1e-12);
    CHECK_INT(dqctl_parse_fraction("1.5", &f), -1);
    CHECK_INT(dqctl_parse_fraction("-0.1", &f), -1);
    CHECK_INT(dqctl_parse_fraction("101%", &f), -1);
    CHECK_INT(dqctl_parse_fraction("0.5x", &f), -1);
    CHECK_INT(dqctl_parse_fraction("nan", &f), -1);

    char b[32];
    dqctl_format_duration(0.25, b, sizeof b);
    CHECK_STR(b, "250 ms");
    dqctl_format_duration(1.5, b, sizeof b);
    CHECK_STR(b, "1.5 s");
    dqctl_format_duration(0.0008, b, sizeof b);
    CHECK_STR(b, "800 \xc2\xb5s");
    dqctl_format_duration(NAN, b, sizeof b);
    CHECK_STR(b, "-");
}

/* "did you mean": edits, swaps, the limit, and the names offered */
static void test_did_you_mean(void) {
    CHECK_INT(dqctl_edit_distance("front_b2", "front_b2", 2), 0);
    CHECK_INT(dqctl_edit_distance("fornt_b2", "front_b2", 2), 1); /* two neighbours swapped */
    CHECK_INT(dqctl_edit_distance("front_b", "front_b2", 2), 1);
    CHECK_INT(dqctl_edit_distance("frnt_b3", "front_b2", 2), 2);
    CHECK_INT(dqctl_edit_distance("xx", "front_b2", 2), 3); /* beyond: max + 1 */
    CHECK_INT(dqctl_edit_distance("", "ab", 2), 2);
    CHECK_INT(dqctl_edit_distance("abc", "", 2), 3);
    CHECK_INT(dqctl_edit_distance("ca", "abc", 5), 3); /* no swap across an insertion (OSA) */
    json_t *probes =
        json_pack("[{s:s},{s:s},{s:s},{s:s},{s:s},{s:s}]", "name", "front_b2", "name", "front_b1",
                  "name", "front", "name", "store", "name", "front_c2", "name", "front_b3");
    char buf[256];
    CHECK_INT(dqctl_did_you_mean("fornt_b2", probes, buf, sizeof buf), 3);
    CHECK_STR(buf, "front_b2, front_b1 or front_b3"); /* the nearest first, then by name */
    CHECK_INT(dqctl_did_you_mean("stroe", probes, buf, sizeof buf), 1);
    CHECK_STR(buf, "store");
    CHECK_INT(dqctl_did_you_mean("zzzz", probes, buf, sizeof buf), 0);
    CHECK_STR(buf, "");
    CHECK_INT(dqctl_did_you_mean("store", probes, buf, sizeof buf), 0); /* itself is no hint */
    json_decref(probes);
}

static void test_qta_points(void) {
    double p = 0, t = 0;
    char err[256];
    CHECK_INT(dqctl_parse_qta_point("0.5@100ms", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(p, 0.5, 1e-12);
    CHECK_NEAR(t, 0.1, 1e-12);
    CHECK_INT(dqctl_parse_qta_point("95%@1.5s", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(p, 0.95, 1e-12);
    CHECK_NEAR(t, 1.5, 1e-12);
    /* a bare time is milliseconds, as every duration dqctl takes (issue 13) */
    CHECK_INT(dqctl_parse_qta_point("1@2", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(t, 0.002, 1e-12);
    CHECK_INT(dqctl_parse_qta_point("0.9@30", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(t, 0.030, 1e-12);
    CHECK_INT(dqctl_parse_qta_point("0.9@30ms", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(t, 0.030, 1e-12);
    CHECK_INT(dqctl_parse_qta_point("0.9@0.03s", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(t, 0.030, 1e-12);
    CHECK_INT(dqctl_parse_qta_point("0.9@800us", &p, &t, err, sizeof err), 0);
    CHECK_NEAR(t, 0.0008, 1e-12);
    const char *bad[] = {"0.5",      "0@1s",    "1.2@1s",  "0.5@0",  "0.5@-1s", "@1s",
                         "0.5@",     "0.5@1q",  "0.5@1 s", "0.5@ms", "0.5@1e",  "0.5@1.2.3ms",
                         "0.5@0x10", "0.5@inf", "0.5@nan", "0.5@+1s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK_MSG(dqctl_parse_qta_point(bad[i], &p, &t, err, sizeof err) == -1, "accepted %s",
                  bad[i]);
        CHECK_MSG(strstr(err, bad[i]) != NULL, "message for %s: %s", bad[i], err);
    }

    /* the body: sorted by time, default max_lost = 1 − p of the last point */
    const char *pts[] = {"0.95@250ms", "0.5@100ms"};
    json_t *body = dqctl_qta_body(pts, 2, NULL, err, sizeof err);
    CHECK(body != NULL);
    json_t *q = json_object_get(body, "qta");
    json_t *a = json_object_get(q, "points");
    CHECK_INT(json_array_size(a), 2);
    CHECK_NEAR(json_real_value(json_array_get(json_array_get(a, 0), 0)), 0.5, 1e-12);
    CHECK_NEAR(json_real_value(json_array_get(json_array_get(a, 0), 1)), 0.1, 1e-12);
    CHECK_NEAR(json_real_value(json_array_get(json_array_get(a, 1), 1)), 0.25, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(q, "max_lost")), 0.05, 1e-12);
    json_decref(body);
    body = dqctl_qta_body(pts, 2, "1%", err, sizeof err);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(body, "qta"), "max_lost")), 0.01,
               1e-12);
    json_decref(body);

    const char *decreasing[] = {"0.9@100ms", "0.5@200ms"};
    CHECK(dqctl_qta_body(decreasing, 2, NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "must not decrease") != NULL);
    const char *same[] = {"0.5@100ms", "0.9@0.1s"};
    CHECK(dqctl_qta_body(same, 2, NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "same time") != NULL);
    CHECK(dqctl_qta_body(pts, 2, "2", err, sizeof err) == NULL);
    CHECK(strstr(err, "--max-lost") != NULL);
    const char *many[17];
    for (int i = 0; i < 17; i++) {
        many[i] = "0.5@1s";
    }
    CHECK(dqctl_qta_body(many, 17, NULL, err, sizeof err) == NULL);
    CHECK(dqctl_qta_body(pts, 0, NULL, err, sizeof err) == NULL);
}

static void test_url_escape(void) {
    char out[64];
    CHECK_INT(dqctl_url_escape("checkout.db-1_x~", out, sizeof out), 0);
    CHECK_STR(out, "checkout.db-1_x~");
    CHECK_INT(dqctl_url_escape("a b/c?d", out, sizeof out), 0);
    CHECK_STR(out, "a%20b%2Fc%3Fd");
    CHECK_INT(dqctl_url_escape("caf\xc3\xa9", out, sizeof out), 0);
    CHECK_STR(out, "caf%C3%A9");
    CHECK_INT(dqctl_url_escape("abcd", out, 4), -1);
    CHECK_INT(dqctl_url_escape("abc", out, 4), 0);
    CHECK_INT(dqctl_url_escape("a b", out, 5), -1);
}

static void test_parse_args(void) {
    struct dqctl_opts o;
    char err[256];
    char *a1[] = {"dq", "--kind", "calculated", "checkout", "--window=3", "--json", "--csv"};
    CHECK_INT(dqctl_parse_args(7, a1, DQCTL_OPT_KIND | DQCTL_OPT_WINDOW | DQCTL_OPT_CSV, 1, 1, NULL,
                               &o, err, sizeof err),
              0);
    CHECK_STR(o.kind, "calculated");
    CHECK_STR(o.window, "3");
    CHECK_INT(o.json, 1);
    CHECK_INT(o.csv, 1);
    CHECK_INT(o.npos, 1);
    CHECK_STR(o.pos[0], "checkout");
    CHECK_STR(o.server, DQCTL_DEFAULT_SERVER);

    /* $DQD_URL, overridden by --server */
    char *a2[] = {"status"};
    CHECK_INT(dqctl_parse_args(1, a2, 0, 0, 0, "http://h:1", &o, err, sizeof err), 0);
    CHECK_STR(o.server, "http://h:1");
    char *a3[] = {"status", "--server", "http://x:2"};
    CHECK_INT(dqctl_parse_args(3, a3, 0, 0, 0, "http://h:1", &o, err, sizeof err), 0);
    CHECK_STR(o.server, "http://x:2");
    CHECK_INT(dqctl_parse_args(1, a2, 0, 0, 0, "", &o, err, sizeof err), 0);
    CHECK_STR(o.server, DQCTL_DEFAULT_SERVER);

    /* defaults */
    char *a4[] = {"dq", "p"};
    CHECK_INT(dqctl_parse_args(2, a4, DQCTL_OPT_KIND, 1, 1, NULL, &o, err, sizeof err), 0);
    CHECK_STR(o.kind, "observed");
    CHECK_STR(o.window, "latest");

    /* errors */
    char *b1[] = {"status", "--csv"}; /* not accepted by status */
    CHECK_INT(dqctl_parse_args(2, b1, 0, 0, 0, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "unknown option --csv") != NULL);
    char *b2[] = {"dq", "p", "--kind"};
    CHECK_INT(dqctl_parse_args(3, b2, DQCTL_OPT_KIND, 1, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "needs a value") != NULL);
    char *b3[] = {"dq", "p", "--kind", "guessed"};
    CHECK_INT(dqctl_parse_args(4, b3, DQCTL_OPT_KIND, 1, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "observed or calculated") != NULL);
    char *b4[] = {"dq", "p", "--window", "-1"};
    CHECK_INT(dqctl_parse_args(4, b4, DQCTL_OPT_WINDOW, 1, 1, NULL, &o, err, sizeof err), -1);
    char *b5[] = {"dq", "p", "--window", "1x"};
    CHECK_INT(dqctl_parse_args(4, b5, DQCTL_OPT_WINDOW, 1, 1, NULL, &o, err, sizeof err), -1);
    char *b6[] = {"enable"};
    CHECK_INT(dqctl_parse_args(1, b6, 0, 1, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "missing argument") != NULL);
    char *b7[] = {"enable", "a", "b"};
    CHECK_INT(dqctl_parse_args(3, b7, 0, 1, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "unexpected argument \"b\"") != NULL);
    char *b8[] = {"status", "--json=yes"};
    CHECK_INT(dqctl_parse_args(2, b8, 0, 0, 0, NULL, &o, err, sizeof err), -1);
    /* --help skips the positional check; "--" makes a dash-led word positional */
    CHECK_INT(
        dqctl_parse_args(2, (char *[]){"enable", "--help"}, 0, 1, 1, NULL, &o, err, sizeof err), 0);
    CHECK_INT(o.help, 1);
    CHECK_INT(dqctl_parse_args(3, (char *[]){"enable", "--", "-weird"}, 0, 1, 1, NULL, &o, err,
                               sizeof err),
              0);
    CHECK_STR(o.pos[0], "-weird");
}

/* A ΔQ answer: delays uniform on (0, hi] seconds, bins of 1 ms ((i·w, (i+1)·w], cdf[i] at
 * the right edge), a lost fraction. */
static json_t *make_dq(const char *probe, double hi, int bins, double lost) {
    json_t *pdf = json_array(), *cdf = json_array();
    double w = 0.001, acc = 0;
    for (int i = 0; i < bins; i++) {
        double t = (i + 1) * w;
        double m = t <= hi + 1e-12 ? (1.0 - lost) * w / hi : 0;
        acc += m;
        json_array_append_new(pdf, json_real(m));
        json_array_append_new(cdf, json_real(acc));
    }
    return json_pack("{s:s,s:s,s:{s:f,s:f},s:f,s:i,s:o,s:o,s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f},"
                     "s:i,s:i,s:i,s:i}",
                     "probe", probe, "kind", "observed", "window", "start", 1795000000.0, "end",
                     1795000010.0, "bin_width", w, "bins", bins, "pdf", pdf, "cdf", cdf, "lost",
                     lost, "mean", hi / 2, "variance", hi * hi / 12, "quantiles", "0.5", hi / 2,
                     "0.9", hi * 0.9, "0.95", hi * 0.95, "0.99", hi * 0.99, "n", 1000, "ok",
                     (int)(1000 * (1 - lost)), "fa", (int)(1000 * lost), "to", 0);
}

static json_t *make_qta(void) {
    return json_pack("{s:[[f,f],[f,f]],s:f}", "points", 0.5, 0.1, 0.95, 0.25, "max_lost", 0.01);
}

static void test_qta_check(void) {
    char why[256];
    json_t *qta = make_qta();
    json_t *fast = make_dq("login", 0.2, 500, 0);    /* F(0.1) = 0.5, F(0.25) = 1 */
    json_t *slow = make_dq("checkout", 0.4, 500, 0); /* F(0.1) ≈ 0.25 */
    json_t *lossy = make_dq("pay", 0.05, 500, 0.02); /* fast, but 2 % lost > 1 % */
    CHECK_INT(dqctl_qta_check(fast, qta, why, sizeof why), 1);
    CHECK(strncmp(why, "met", 3) == 0);
    CHECK_INT(dqctl_qta_check(slow, qta, why, sizeof why), 0);
    CHECK(strstr(why, "VIOLATED") != NULL);
    CHECK(strstr(why, "P(d <= 250 ms)") != NULL); /* 0.626 < 0.95 beats 0.252 < 0.5 */
    CHECK_INT(dqctl_qta_check(lossy, qta, why, sizeof why), 0);
    CHECK(strstr(why, "lost 2%") != NULL);
    /* a point beyond the horizon reads the tangible mass */
    json_t *far = json_pack("{s:[[f,f]],s:f}", "points", 0.99, 10.0, "max_lost", 0.5);
    CHECK_INT(dqctl_qta_check(fast, far, why, sizeof why), 1);
    json_decref(far);
    /* the convention: cdf[i] = P(d <= (i+1)·w); a point on an edge reads it, a point
     * between edges the edge before it */
    json_t *step =
        json_pack("{s:f,s:[f,f,f],s:f}", "bin_width", 0.001, "cdf", 0.0, 0.3, 1.0, "lost", 0.0);
    json_t *q1 = json_pack("{s:[[f,f]],s:f}", "points", 0.3, 0.002, "max_lost", 0.0);
    json_t *q2 = json_pack("{s:[[f,f]],s:f}", "points", 0.31, 0.0029, "max_lost", 0.0);
    json_t *q3 = json_pack("{s:[[f,f]],s:f}", "points", 0.3, 0.0019, "max_lost", 0.0);
    CHECK_INT(dqctl_qta_check(step, q1, why, sizeof why), 1);
    CHECK_INT(dqctl_qta_check(step, q2, why, sizeof why), 0);
    CHECK_INT(dqctl_qta_check(step, q3, why, sizeof why), 0);
    /* a calculated ΔQ is checked on its lower bound, lag bins earlier */
    json_object_set_new(step, "lag", json_integer(1));
    CHECK_INT(dqctl_qta_check(step, q1, why, sizeof why), 0);
    json_t *q4 = json_pack("{s:[[f,f]],s:f}", "points", 0.3, 0.003, "max_lost", 1.0);
    CHECK_INT(dqctl_qta_check(step, q4, why, sizeof why), 1);
    json_decref(q1);
    json_decref(q2);
    json_decref(q3);
    json_decref(q4);
    json_decref(step);
    /* malformed */
    json_t *junk = json_pack("{s:s}", "cdf", "no");
    CHECK_INT(dqctl_qta_check(junk, qta, why, sizeof why), -1);
    CHECK_INT(dqctl_qta_check(fast, junk, why, sizeof why), -1);
    json_decref(junk);
    json_decref(qta);
    json_decref(fast);
    json_decref(slow);
    json_decref(lossy);
}

static int count_char(const char *s, char ch) {
    int n = 0;
    for (; *s; s++) {
        n += *s == ch;
    }
    return n;
}

static void test_renderers(void) {
    struct capture c;
    json_t *qta = make_qta();
    json_t *dq = make_dq("checkout", 0.4, 500, 0);

    cap_open(&c);
    dqctl_render_dq(c.f, dq, qta);
    const char *t = cap_text(&c);
    CHECK(strstr(t, "checkout  observed") != NULL);
    CHECK(strstr(t, "2026-11-17") != NULL || strstr(t, "2026-11-18") != NULL); /* 1795000000 */
    CHECK(strstr(t, "instances  1000 (ok 1000, failed 0, timed out 0)") != NULL);
    CHECK(strstr(t, "p50 200 ms, p90 360 ms, p95 380 ms, p99 396 ms") != NULL);
    CHECK(strstr(t, "500 bins of 1 ms (horizon 500 ms)") != NULL);
    CHECK(strstr(t, "0.5@100ms 0.95@250ms, max lost 1%: VIOLATED") != NULL);
    cap_close(&c);

    cap_open(&c);
    dqctl_render_cdf_plot(c.f, dq, qta, 40, 11);
    t = cap_text(&c);
    int stars = count_char(t, '*'), qs = count_char(t, 'Q');
    CHECK(qs >= 1); /* one mark per column; a QTA point may overwrite one */
    CHECK(stars <= 40 && stars >= 40 - qs);
    CHECK(strstr(t, " 1.00 |") != NULL);
    CHECK(strstr(t, " 0.00 |") != NULL);
    /* the curve rises left to right: the last column's mark is on the top row */
    CHECK(strstr(t, " 1.00 |") && strchr(strstr(t, " 1.00 |"), '\n')[-1] == '*');
    cap_close(&c);

    cap_open(&c);
    dqctl_render_dq_csv(c.f, dq);
    t = cap_text(&c);
    CHECK(strncmp(t, "t_s,pdf,cdf\n0.001,", 18) == 0); /* bin 0's right edge */
    CHECK_INT(count_char(t, '\n'), 501);
    cap_close(&c);

    json_t *probes = json_pack(
        "[{s:s,s:b,s:f,s:i,s:{s:i,s:i,s:i},s:{s:f,s:f,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f},s:o},"
        "{s:s,s:b,s:f,s:i,s:{s:i,s:i,s:i},s:n,s:n}]",
        "name", "checkout", "enabled", 1, "dmax_ms", 1024.0, "bins", 1024, "instances", "ok", 10,
        "fa", 1, "to", 0, "last_window", "start", 1.0, "end", 2.0, "n", 11, "ok", 10, "fa", 1, "to",
        0, "mean", 0.1, "p50", 0.09, "p95", 0.2, "p99", 0.3, "lost", 1.0 / 11, "qta",
        json_incref(qta), "name", "idle-probe", "enabled", 0, "dmax_ms", 250.0, "bins", 256,
        "instances", "ok", 0, "fa", 0, "to", 0, "last_window", "qta");
    CHECK(probes != NULL);
    cap_open(&c);
    dqctl_render_probes(c.f, probes);
    t = cap_text(&c);
    CHECK(strstr(t, "NAME") == t);
    CHECK(strstr(t, "checkout   on") != NULL);
    CHECK(strstr(t, "90 ms") != NULL);
    CHECK(strstr(t, "9.09%") != NULL);
    CHECK(strstr(t, "0.5@100ms 0.95@250ms, max lost 1%") != NULL);
    CHECK(strstr(t, "idle-probe off") != NULL);
    cap_close(&c);
    json_decref(probes);

    json_t *st = json_pack(
        "{s:s,s:f,s:s,s:s,s:i,s:i,s:s,s:n,s:b,s:i,s:i,s:i,s:i,s:i,s:i,"
        "s:[{s:i,s:s,s:s,s:s,s:s,s:b,s:n}]}",
        "version", "0.1.0", "uptime_seconds", 3725.0, "ingest", "127.0.0.1:7400", "http",
        "127.0.0.1:7401", "window_ms", 1000, "lag_ms", 200, "db", "./dqd.db", "diagram", "running",
        1, "probes", 3, "enabled", 2, "connections", 1, "instances_total", 12345,
        "protocol_errors_total", 7, "windows_closed", 42, "wrappers", "id", 1, "kind", "v2", "peer",
        "127.0.0.1:5555", "node", "n1@host", "app", "shop", "connected", 1, "running");
    CHECK(st != NULL);
    cap_open(&c);
    dqctl_render_status(c.f, st);
    t = cap_text(&c);
    CHECK(strstr(t, "dqd 0.1.0, up 0d 01:02:05, running: yes") != NULL);
    CHECK(strstr(t, "diagram none") != NULL);
    CHECK(strstr(t, "probes 3 (2 enabled)") != NULL);
    CHECK(strstr(t, "protocol errors 7") != NULL);
    CHECK(strstr(t, "n1@host") != NULL);
    CHECK(strstr(t, "silent:") == NULL); /* no "silent" list: nothing silent */
    cap_close(&c);
    json_decref(st);

    /* silent probes: one line each, what a wrapper named escaped */
    st = json_pack("{s:s,s:[{s:s,s:I,s:s,s:i,s:s,s:s,s:s,s:b},{s:s,s:I,s:s,s:i,s:n,s:n,s:n,s:b},"
                   "{s:s,s:I,s:s,s:i,s:s,s:s,s:s,s:b}],s:[]}",
                   "version", "0.1.0", "silent", "probe", "db", "since_ns",
                   (json_int_t)1000000000000000000LL, "since", "2001-09-09T01:46:40.000Z",
                   "windows", 4, "origin", "3 127.0.0.1:5555", "node", "app@host", "app", "shop",
                   "connected", 0, "probe", "cache", "since_ns", (json_int_t)1000000000000000000LL,
                   "since", "2001-09-09T01:46:40.000Z", "windows", 1, "origin", "node", "app",
                   "connected", 0, "probe", "q", "since_ns", (json_int_t)1000000000000000000LL,
                   "since", "2001-09-09T01:46:40.000Z", "windows", 2, "origin", "4 10.0.0.9:1",
                   "node", "evil\x1b[2J\n@h", "app", "", "connected", 1, "wrappers");
    CHECK(st != NULL);
    cap_open(&c);
    dqctl_render_status(c.f, st);
    t = cap_text(&c);
    CHECK(strstr(t, "silent: db since 2001-09-09 01:46:40 UTC (4 windows; no data from 3 "
                    "127.0.0.1:5555 node app@host app shop, disconnected)\n") != NULL);
    CHECK(strstr(t, "silent: cache since 2001-09-09 01:46:40 UTC (1 window; never heard from") !=
          NULL);
    CHECK(strstr(t, "node evil\\x1b[2J\\x0a@h, connected but silent)\n") != NULL);
    CHECK(strchr(t, '\x1b') == NULL);
    CHECK(strstr(t, "wrappers: none") != NULL);
    cap_close(&c);
    json_decref(st);

    /* every wrapper gone: since when, and which went last; none ever: said too */
    st = json_pack("{s:s,s:i,s:{s:I,s:s,s:s},s:[]}", "version", "0.1.0", "wrappers_connected", 0,
                   "last_wrapper_down", "since_ns", (json_int_t)1000000000000000000LL, "since",
                   "2001-09-09T01:46:40.000Z", "link", "3 legacy 127.0.0.1:5555", "wrappers");
    cap_open(&c);
    dqctl_render_status(c.f, st);
    t = cap_text(&c);
    CHECK(strstr(t, "no wrapper connected since 2001-09-09 01:46:40 UTC (the last to go: link 3 "
                    "legacy 127.0.0.1:5555)\n") != NULL);
    cap_close(&c);
    json_object_set_new(st, "last_wrapper_down", json_null());
    cap_open(&c);
    dqctl_render_status(c.f, st);
    CHECK(strstr(cap_text(&c), "no wrapper connected (none has connected since dqd started)") !=
          NULL);
    cap_close(&c);
    json_object_set_new(st, "wrappers_connected", json_integer(1));
    cap_open(&c);
    dqctl_render_status(c.f, st);
    CHECK(strstr(cap_text(&c), "no wrapper connected") == NULL);
    cap_close(&c);
    json_decref(st);

    /* what a change did on every link */
    json_t *cmds =
        json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]", "link",
                  "2 127.0.0.1:4001", "command", "clear_timeout", "status", "sent", "link",
                  "1 127.0.0.1:4000", "command", "clear_timeout", "status", "not_applied", "link",
                  "5 10.0.0.1:1\x1b", "command", "clear_timeout", "status", "not_applied", "link",
                  "4 127.0.0.1:4002", "command", "clear_timeout", "status", "failed");
    cap_open(&c);
    CHECK_INT(dqctl_render_commands(c.f, "pay", cmds), 3);
    t = cap_text(&c);
    CHECK(strstr(t, "  clear_timeout sent to 1 wrapper link (2 127.0.0.1:4001)\n") != NULL);
    CHECK(strstr(t, "  clear_timeout NOT applied on 2 wrapper links (1 127.0.0.1:4000, 5 "
                    "10.0.0.1:1\\x1b): a legacy wrapper has no clear_timeout, it keeps reporting "
                    "pay\n") != NULL);
    CHECK(strstr(t, "  clear_timeout FAILED on 1 wrapper link (4 127.0.0.1:4002): the link was "
                    "not writable\n") != NULL);
    cap_close(&c);
    json_decref(cmds);
    cmds = json_array();
    cap_open(&c);
    CHECK_INT(dqctl_render_commands(c.f, "pay", cmds), 0);
    CHECK(strstr(cap_text(&c), "no wrapper is connected") != NULL);
    cap_close(&c);
    json_decref(cmds);

    char esc[16];
    dqctl_escape("a\tb\x7f", esc, sizeof esc);
    CHECK(strcmp(esc, "a\\x09b\\x7f") == 0);
    dqctl_escape("\x01\x02\x03", esc, 10); /* cut at a whole escape */
    CHECK(strcmp(esc, "\\x01\\x02") == 0);

    /* numbers from a disabled probe's last window are stale, with their age; an enabled
     * probe's say how old they are */
    probes =
        json_pack("[{s:s,s:b,s:f,s:i,s:{s:f,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:b},s:n},"
                  "{s:s,s:b,s:f,s:i,s:{s:f,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:b},s:n}]",
                  "name", "gone", "enabled", 0, "dmax_ms", 100.0, "bins", 100, "last_window",
                  "start", 1.0, "end", 2.0, "n", 2, "p50", 0.01, "p95", 0.02, "p99", 0.02, "lost",
                  0.0, "age_s", 185.0, "stale", 1, "qta", "name", "live", "enabled", 1, "dmax_ms",
                  100.0, "bins", 100, "last_window", "start", 1.0, "end", 2.0, "n", 90, "p50", 0.01,
                  "p95", 0.02, "p99", 0.02, "lost", 0.0, "age_s", 1.2, "stale", 0, "qta");
    CHECK(probes != NULL);
    cap_open(&c);
    dqctl_render_probes(c.f, probes);
    t = cap_text(&c);
    CHECK(strstr(t, "LAST WINDOW") != NULL);
    const char *gone = strstr(t, "\ngone "), *live = strstr(t, "\nlive ");
    CHECK(gone && live && gone < live);
    CHECK_MSG(gone && strstr(gone, "STALE, 185 s ago") && strstr(gone, "STALE, 185 s ago") < live,
              "%s", t);
    CHECK_MSG(live && strstr(live, " 1.2 s ago") && !strstr(live, "STALE"), "%s", t);
    cap_close(&c);
    json_decref(probes);

    /* a silent probe is marked in the probes list */
    probes =
        json_pack("[{s:s,s:b,s:f,s:i,s:n,s:n,s:I},{s:s,s:b,s:f,s:i,s:n,s:n,s:n}]", "name", "db",
                  "enabled", 1, "dmax_ms", 100.0, "bins", 100, "last_window", "qta",
                  "silent_since_ns", (json_int_t)1000000000000000000LL, "name", "ok_one", "enabled",
                  1, "dmax_ms", 100.0, "bins", 100, "last_window", "qta", "silent_since_ns");
    CHECK(probes != NULL);
    cap_open(&c);
    dqctl_render_probes(c.f, probes);
    t = cap_text(&c);
    CHECK(strstr(t, "db     silent") != NULL);
    CHECK(strstr(t, "ok_one on ") != NULL);
    cap_close(&c);
    json_decref(probes);
    json_decref(dq);
    json_decref(qta);
}

/* ---- against a fake dqd ---------------------------------------------------------------- */

struct fake {
    struct fake_dqd dqd;
    int port;
    /* the last request, written by the server thread while the main thread waits in curl */
    char method[16];
    char path[256];
    char kind[32];
    char window[32];
    char *body;
    int requests;
};

static json_t *summary(const char *name, json_t *put) {
    json_t *s = json_pack("{s:s,s:b,s:f,s:i,s:b,s:{s:i,s:i,s:i},s:n,s:n}", "name", name, "enabled",
                          1, "dmax_ms", 500.0, "bins", 500, "in_diagram", 0, "instances", "ok", 5,
                          "fa", 0, "to", 0, "last_window", "qta");
    if (strcmp(name, "checkout") == 0 || strcmp(name, "login") == 0) {
        json_object_set_new(s, "qta", make_qta());
    }
    if (put) {
        json_object_update_existing(s, put); /* what the daemon would store */
    }
    return s;
}

static void fake_handler(void *ctx, const struct http_request *req, struct http_response *res) {
    struct fake *f = ctx;
    f->requests++;
    snprintf(f->method, sizeof f->method, "%s", req->method_name);
    snprintf(f->path, sizeof f->path, "%s", req->path);
    const char *k = http_request_query(req, "kind");
    const char *w = http_request_query(req, "window");
    if (k || w) { /* only the ΔQ request has a query; keep it across the summary call */
        snprintf(f->kind, sizeof f->kind, "%s", k ? k : "");
        snprintf(f->window, sizeof f->window, "%s", w ? w : "");
    }
    free(f->body);
    f->body = strdup(req->body);
    const char *pfx = "/api/v1/probes/";
    if (strncmp(req->path, "/notdqd", 7) == 0) {
        http_reply_text(res, 200, "text/html", "<html></html>", 13);
    } else if (strcmp(req->path, "/api/v1/status") == 0) {
        http_reply_data(res,
                        json_pack("{s:s,s:f,s:b,s:i,s:[]}", "version", "0.1.0", "uptime_seconds",
                                  5.0, "running", 0, "probes", 2, "wrappers"));
    } else if (strcmp(req->path, "/api/v1/probes") == 0) {
        http_reply_data(res, json_pack("[o,o]", summary("checkout", NULL), summary("login", NULL)));
    } else if (strcmp(req->path, "/api/v1/wrapper/start") == 0) {
        http_reply_data(res, json_pack("{s:b,s:i}", "running", 1, "sent_to", 2));
    } else if (strcmp(req->path, "/api/v1/wrapper/stop") == 0) {
        http_reply_data(res, json_pack("{s:b,s:i}", "running", 0, "sent_to", 0));
    } else if (strncmp(req->path, pfx, strlen(pfx)) == 0) {
        char name[128];
        snprintf(name, sizeof name, "%s", req->path + strlen(pfx));
        char *slash = strchr(name, '/');
        int is_dq = slash && strcmp(slash, "/dq") == 0;
        if (slash) {
            *slash = '\0';
        }
        if (strcmp(name, "nope") == 0) {
            http_reply_error(res, 404, "not_found", "no probe named \"%s\"", name);
        } else if (is_dq && req->method == HTTP_GET) {
            double hi = strcmp(name, "checkout") == 0 ? 0.4 : 0.2;
            http_reply_data(res, make_dq(name, hi, 500, 0));
        } else if (req->method == HTTP_GET) {
            http_reply_data(res, summary(name, NULL));
        } else if (req->method == HTTP_PUT) {
            json_t *put = json_loadb(req->body, req->body_len, 0, NULL);
            if (!json_is_object(put)) {
                http_reply_error(res, 400, "bad_data", "body is not a JSON object");
            } else {
                http_reply_data(res, summary(name, put));
            }
            json_decref(put);
        } else {
            http_reply_error(res, 405, "bad_data", "method");
        }
    } else {
        http_reply_error(res, 404, "not_found", "no route");
    }
}

static json_t *last_body(struct fake *f) {
    return json_loads(f->body ? f->body : "", 0, NULL);
}

static void test_against_fake(void) {
    struct fake f;
    memset(&f, 0, sizeof f);
    f.port = fake_dqd_start(&f.dqd, fake_handler, &f);
    CHECK(f.port > 0);
    char server[64];
    snprintf(server, sizeof server, "http://127.0.0.1:%d/", f.port); /* trailing '/' is fine */
    struct run r;

    /* status: via $DQD_URL */
    setenv("DQD_URL", server, 1);
    CHECK_INT(run_cmd(&r, dqctl_status_main, 1, (char *[]){"status"}), 0);
    CHECK_STR(f.method, "GET");
    CHECK_STR(f.path, "/api/v1/status");
    CHECK(strstr(r.out.buf, "dqd 0.1.0") != NULL);
    CHECK(strstr(r.out.buf, "wrappers: none") != NULL);
    run_free(&r);
    unsetenv("DQD_URL");

    /* --json prints the data object */
    CHECK_INT(run_cmd(&r, dqctl_probes_main, 4, (char *[]){"probes", "--server", server, "--json"}),
              0);
    json_t *j = json_loads(r.out.buf, 0, NULL);
    CHECK(json_is_array(j));
    CHECK_STR(json_string_value(json_object_get(json_array_get(j, 1), "name")), "login");
    json_decref(j);
    run_free(&r);

    /* dq: a window that violates the QTA exits 1; the query carries kind and window */
    CHECK_INT(
        run_cmd(&r, dqctl_dq_main, 7,
                (char *[]){"dq", "checkout", "--server", server, "--window", "2", "--no-plot"}),
        DQCTL_EXIT_PROBLEM);
    CHECK_STR(f.path, "/api/v1/probes/checkout"); /* the summary came second */
    CHECK_STR(f.kind, "observed");
    CHECK_STR(f.window, "2");
    CHECK(strstr(r.out.buf, "VIOLATED") != NULL);
    CHECK(strstr(r.err.buf, "dqctl: checkout: QTA VIOLATED") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_dq_main, 6,
                      (char *[]){"dq", "login", "--server", server, "--kind", "calculated"}),
              0);
    CHECK(strstr(r.out.buf, "met") != NULL);
    CHECK(strstr(r.out.buf, " 1.00 |") != NULL); /* the plot */
    CHECK_STR(f.kind, "calculated");
    CHECK_STR(f.window, "latest");
    run_free(&r);
    /* --csv; the ΔQ request and the summary request */
    f.requests = 0;
    CHECK_INT(run_cmd(&r, dqctl_dq_main, 8,
                      (char *[]){"dq", "login", "--server", server, "--csv", "--window=0", "--kind",
                                 "observed"}),
              0);
    CHECK_INT(f.requests, 2);
    CHECK_STR(f.window, "0");
    CHECK_STR(f.kind, "observed");
    CHECK(strncmp(r.out.buf, "t_s,pdf,cdf\n", 12) == 0);
    run_free(&r);

    /* enable / disable / set-timeout / qta send the documented bodies */
    CHECK_INT(run_cmd(&r, dqctl_enable_main, 4, (char *[]){"enable", "a b", "--server", server}),
              0);
    CHECK_STR(f.method, "PUT");
    CHECK_STR(f.path, "/api/v1/probes/a b");
    j = last_body(&f);
    CHECK(json_is_true(json_object_get(j, "enabled")));
    CHECK_INT(json_object_size(j), 1);
    json_decref(j);
    CHECK(strstr(r.out.buf, "a b: enabled") != NULL);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_disable_main, 4, (char *[]){"disable", "x", "--server", server}),
              0);
    j = last_body(&f);
    CHECK(json_is_false(json_object_get(j, "enabled")));
    json_decref(j);
    CHECK(strstr(r.out.buf, "x: disabled") != NULL);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_set_timeout_main, 5,
                      (char *[]){"set-timeout", "x", "1.5s", "--server", server}),
              0);
    j = last_body(&f);
    CHECK_NEAR(json_number_value(json_object_get(j, "dmax_ms")), 1500, 1e-9);
    json_decref(j);
    CHECK(strstr(r.out.buf, "dmax 1.5 s") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_set_timeout_main, 5,
                      (char *[]){"set-timeout", "x", "250", "--server", server}),
              0);
    j = last_body(&f);
    CHECK_NEAR(json_number_value(json_object_get(j, "dmax_ms")), 250, 1e-9);
    json_decref(j);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_set_timeout_main, 5,
                      (char *[]){"set-timeout", "x", "0", "--server", server}),
              DQCTL_EXIT_USAGE);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_qta_main, 8,
                      (char *[]){"qta", "checkout", "0.5@100ms", "0.95@250ms", "--max-lost", "0.01",
                                 "--server", server}),
              0);
    j = last_body(&f);
    json_t *pts = json_object_get(json_object_get(j, "qta"), "points");
    CHECK_INT(json_array_size(pts), 2);
    CHECK_NEAR(json_number_value(json_array_get(json_array_get(pts, 1), 0)), 0.95, 1e-12);
    CHECK_NEAR(json_number_value(json_array_get(json_array_get(pts, 1), 1)), 0.25, 1e-12);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(j, "qta"), "max_lost")), 0.01,
               1e-12);
    json_decref(j);
    CHECK(strstr(r.out.buf, "QTA 0.5@100ms 0.95@250ms, max lost 1%") != NULL);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_qta_main, 5,
                      (char *[]){"qta", "checkout", "--clear", "--server", server}),
              0);
    j = last_body(&f);
    CHECK(json_is_null(json_object_get(j, "qta")));
    json_decref(j);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_qta_main, 4, (char *[]){"qta", "login", "--server", server}), 0);
    CHECK_STR(f.method, "GET");
    CHECK(strstr(r.out.buf, "login: QTA 0.5@100ms") != NULL);
    run_free(&r);

    /* start reaches two wrappers (0); stop reaches none (1) */
    CHECK_INT(run_cmd(&r, dqctl_start_main, 3, (char *[]){"start", "--server", server}), 0);
    CHECK_STR(f.method, "POST");
    CHECK_STR(f.path, "/api/v1/wrapper/start");
    CHECK(strstr(r.out.buf, "start sent to 2 wrapper(s); running: yes") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_stop_main, 3, (char *[]){"stop", "--server", server}),
              DQCTL_EXIT_PROBLEM);
    CHECK(strstr(r.err.buf, "no wrapper is connected") != NULL);
    run_free(&r);

    /* an unknown probe: said for the CLI, with the names near it; exit 3 */
    CHECK_INT(run_cmd(&r, dqctl_dq_main, 4, (char *[]){"dq", "nope", "--server", server}),
              DQCTL_EXIT_API);
    CHECK(strstr(r.err.buf, "dqctl: dq: dqd knows no probe named \"nope\" (it is not in the "
                            "diagram and no wrapper has reported it); `dqctl probes` lists the "
                            "names it knows\n") != NULL);
    CHECK_STR(r.out.buf ? r.out.buf : "", "");
    run_free(&r);

    /* something that is not dqd */
    char notdqd[96];
    snprintf(notdqd, sizeof notdqd, "http://127.0.0.1:%d/notdqd", f.port);
    CHECK_INT(run_cmd(&r, dqctl_status_main, 3, (char *[]){"status", "--server", notdqd}),
              DQCTL_EXIT_API);
    CHECK(strstr(r.err.buf, "without the API's JSON envelope") != NULL);
    run_free(&r);

    /* usage errors never touch the network */
    int before = f.requests;
    CHECK_INT(run_cmd(&r, dqctl_qta_main, 5,
                      (char *[]){"qta", "checkout", "0.95@fast", "--server", server}),
              DQCTL_EXIT_USAGE);
    CHECK(strstr(r.err.buf, "0.95@fast") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_enable_main, 1, (char *[]){"enable"}), DQCTL_EXIT_USAGE);
    run_free(&r);
    CHECK_INT(f.requests, before);

    /* --help for every subcommand, exit 0 */
    int (*mains[])(int, char **) = {dqctl_status_main, dqctl_probes_main,  dqctl_dq_main,
                                    dqctl_enable_main, dqctl_disable_main, dqctl_set_timeout_main,
                                    dqctl_qta_main,    dqctl_start_main,   dqctl_stop_main};
    for (size_t i = 0; i < sizeof mains / sizeof mains[0]; i++) {
        CHECK_INT(run_cmd(&r, mains[i], 2, (char *[]){"x", "--help"}), 0);
        CHECK(strstr(r.out.buf, "usage: dqctl ") == r.out.buf);
        CHECK(strstr(r.out.buf, "--server URL") != NULL);
        run_free(&r);
    }
    CHECK_INT(run_cmd(&r, dqctl_probes_main, 2, (char *[]){"probes", "-h"}), 0);
    run_free(&r);
    CHECK_INT(dqctl_api_main("bogus", 1, (char *[]){"bogus"}), DQCTL_EXIT_USAGE);
    CHECK_INT(run_cmd(&r, dqctl_status_main, 3, (char *[]){"status", "--server", server}), 0);
    run_free(&r);

    fake_dqd_stop(&f.dqd);
    free(f.body);
}

static void test_unreachable(void) {
    /* a port that was just free: bind, read the port, close */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    char server[64], want[160];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(want, sizeof want,
             "dqctl: cannot reach dqd at %s: Connection refused. Is dqd running? Set --server "
             "or DQD_URL.\n",
             server);
    struct run r;
    CHECK_INT(run_cmd(&r, dqctl_probes_main, 3, (char *[]){"probes", "--server", server}),
              DQCTL_EXIT_API);
    CHECK_STR(r.err.buf, want);
    run_free(&r);
}

/* ---- dqctl watch: the event-stream parser and the lines ------------------------------ */

struct got_events {
    int n;
    char type[8][32];
    char id[8][32];
    char data[8][256];
    int stop_after; /* 0: never */
};

static int got_event(void *ctx, const char *type, const char *id, const char *data, size_t len) {
    struct got_events *g = ctx;
    if (g->n < 8) {
        snprintf(g->type[g->n], sizeof g->type[0], "%s", type);
        snprintf(g->id[g->n], sizeof g->id[0], "%s", id);
        snprintf(g->data[g->n], sizeof g->data[0], "%.*s", (int)len, data);
    }
    g->n++;
    return g->stop_after && g->n >= g->stop_after;
}

static void test_sse_parser(void) {
    static const char stream[] = "retry: 2000\n\n"
                                 ": a comment\n"
                                 "id: 1\nevent: hello\ndata: {\"id\":0}\n\n"
                                 "id: 2\r\nevent: window\r\ndata:{\"a\":1}\r\n\r\n"
                                 "id: 3\revent: probe\rdata: line1\rdata: line2\r\r"
                                 "data: no type\n\n"
                                 "event: empty\n\n";
    /* whole, and byte by byte: the same events */
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        struct got_events g = {0};
        struct dqctl_sse p;
        dqctl_sse_init(&p, got_event, &g);
        if (bytewise) {
            for (size_t i = 0; i < sizeof stream - 1; i++) {
                CHECK_INT(dqctl_sse_feed(&p, stream + i, 1), 0);
            }
        } else {
            CHECK_INT(dqctl_sse_feed(&p, stream, sizeof stream - 1), 0);
        }
        CHECK_INT(g.n, 4);
        CHECK_STR(g.type[0], "hello");
        CHECK_STR(g.id[0], "1");
        CHECK_STR(g.data[0], "{\"id\":0}");
        CHECK_STR(g.type[1], "window");
        CHECK_STR(g.data[1], "{\"a\":1}");
        CHECK_STR(g.type[2], "probe");
        CHECK_STR(g.data[2], "line1\nline2");
        CHECK_STR(g.type[3], "message");
        CHECK_STR(g.id[3], "3"); /* the last id stays */
        dqctl_sse_release(&p);
    }
    struct got_events g = {.stop_after = 1};
    struct dqctl_sse p;
    dqctl_sse_init(&p, got_event, &g);
    CHECK_INT(dqctl_sse_feed(&p, "data: 1\n\ndata: 2\n\n", 20), 1);
    CHECK_INT(g.n, 1);
    dqctl_sse_release(&p);
}

/* The line `dqctl watch` prints for one event of `type` with data `json`, at `now`. */
static void check_watch_line(double now, const char *type, const char *json, const char *want) {
    struct capture c;
    json_t *ev = json_loads(json, 0, NULL);
    CHECK(ev != NULL);
    cap_open(&c);
    dqctl_render_event(c.f, now, type, ev);
    CHECK_STR(cap_text(&c), want);
    cap_close(&c);
    json_decref(ev);
}

static void test_watch_lines(void) {
    double now = 1795000000.25; /* 2026-11-18 11:06:40.250 UTC */
    check_watch_line(now, "window",
                     "{\"wid\":1,\"start\":1795000000.0,\"end\":1795000001.0,\"probes\":["
                     "{\"name\":\"a\",\"n\":10,\"p50\":0.002,\"p95\":0.004,\"lost\":0.1,"
                     "\"no_data\":false},"
                     "{\"name\":\"b\",\"n\":30,\"p50\":0.02,\"p95\":0.04,\"lost\":0,"
                     "\"no_data\":false},"
                     "{\"name\":\"c\",\"n\":0,\"p50\":null,\"p95\":null,\"lost\":null,"
                     "\"no_data\":true},"
                     "{\"name\":\"d\",\"n\":1,\"p50\":0.5,\"p95\":0.5,\"lost\":0,"
                     "\"no_data\":false}]}",
                     "11:06:40.250 window   11:06:40.000 +1 s: 4 probes, 41 instances, 1 "
                     "with no data; b n 30, p50 20 ms, p95 40 ms, lost 0.00%; a n 10, p50 "
                     "2 ms, p95 4 ms, lost 10.00%; d n 1, p50 500 ms, p95 500 ms, lost "
                     "0.00%; 1 more\n");
    check_watch_line(now, "hypothesis",
                     "{\"investigation\":3,\"id\":9,\"parent\":8,\"node\":\"pay\","
                     "\"action\":\"expand\",\"probes\":[\"x\",\"y\"],\"reason\":\"because\"}",
                     "11:06:40.250 step     investigation 3 #9 expand pay [x, y]: because\n");
    check_watch_line(now, "hypothesis", /* the first step: never "#7 root root" */
                     "{\"investigation\":3,\"id\":7,\"action\":\"root\",\"node\":\"root\","
                     "\"probes\":[],\"reason\":null}",
                     "11:06:40.250 step     investigation 3 #7 opened at root\n");
    check_watch_line(now, "verdict",
                     "{\"investigation\":3,\"node\":\"root\",\"verdict\":\"localized\","
                     "\"summary\":{\"node\":\"leaf\",\"evidence\":{\"reason\":\"r\"}}}",
                     "11:06:40.250 verdict  investigation 3 at root: localized at leaf: r\n");
    /* said once, every culprit named */
    check_watch_line(
        now, "verdict",
        "{\"investigation\":4,\"node\":\"root\",\"verdict\":\"localized\","
        "\"summary\":{\"node\":\"fb\",\"evidence\":{\"reason\":\"localized at 2 "
        "culprits: fb (62 %), sb (38 %) explain it\",\"culprits\":[{\"probe\":\"fb\","
        "\"share\":0.62},{\"probe\":\"sb\",\"share\":0.38}]}}}",
        "11:06:40.250 verdict  investigation 4 at root: localized at fb and sb: fb (62 "
        "%), sb (38 %) explain it\n");
    check_watch_line(now, "probe",
                     "{\"probe\":\"p\\u0001\",\"change\":\"enable\",\"summary\":{"
                     "\"enabled\":true,\"dmax_ms\":250,\"qta\":null}}",
                     "11:06:40.250 probe    p\\x01: enable (now enabled, dMax 250 ms, QTA "
                     "none)\n");
    check_watch_line(now, "trigger_fired",
                     "{\"probe\":\"a\",\"kind\":\"load\",\"trigger\":2,\"investigation\":5}",
                     "11:06:40.250 trigger  a load FIRED (trigger #2, investigation 5)\n");
    check_watch_line(now, "future_kind", "{\"x\":1}", "11:06:40.250 future_kind {\"x\":1}\n");
}

static const struct check_case cases[] = {
    CHECK_CASE(sse_parser),  CHECK_CASE(watch_lines),  CHECK_CASE(durations),
    CHECK_CASE(qta_points),  CHECK_CASE(url_escape),   CHECK_CASE(parse_args),
    CHECK_CASE(qta_check),   CHECK_CASE(renderers),    CHECK_CASE(against_fake),
    CHECK_CASE(unreachable), CHECK_CASE(did_you_mean),
};

CHECK_MAIN(cases)
