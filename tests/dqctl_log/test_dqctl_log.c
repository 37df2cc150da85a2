/*
 * test_dqctl_log.c: dqctl's adaptive-loop commands (diagnose, why, log, snapshots,
 * snapshot, trigger, triggers). The renderers run on canned answers copied from a real
 * dqd (a three-stage checkout where `pay` was slowed), the option and body builders
 * directly, and the subcommands against a fake dqd built on controller/http/ (in a
 * thread, ephemeral loopback port) that answers the routes of docs/api.md and records
 * each request, so the tests check what dqctl sends, prints and exits with.
 */
#include "dqctl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "../fake_dqd.h"
#include "dqctl.h"
#include "dq.h"
#include "dqctl_api.h"
#include "http.h"

/* ---- canned answers (data objects of a real dqd, GET /api/v1/investigations/1 and
 * GET /api/v1/why/pay; a not_applied command added to the latter) ---------------------- */

static const char INV1[] =
    "{\"id\":1,\"node\":\"checkout\",\"problem\":\"latency\",\"strategy\":\"children\",\"origin\":"
    "\"person"
    "\",\"trigger\":null,\"requested_by\":\"me\",\"open\":false,\"verdict\":\"localized\","
    "\"verdict_nod"
    "e\":\"pay\",\"summary\":{\"verdict\":\"localized\",\"node\":\"pay\",\"evidence\":{\"verdict\":"
    "\"locali"
    "zed\",\"reason\":\"localized at pay: pay holds 87 % of checkout's mean latency (23.9 ms "
    "± 0.29 of 27.5 ms); the runner-up validate holds 7 % (2.01 ms ± 0.036)\",\"focus\":{\"no"
    "de\":\"checkout\",\"ok\":967,\"fa\":0,\"to\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.027455,"
    "\"sd\":0."
    "00472258,\"ks_d\":0.0142705,\"ks_p\":0.988755},\"children\":[{\"node\":\"validate\",\"ok\":"
    "1000,"
    "\"fa\":0,\"to\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.00200586,\"sd\":0.000580256,"
    "\"contributio"
    "n\":0.00200586,\"half_width\":3.59646e-05,\"share\":0.0730599},{\"node\":\"pay\",\"ok\":970,"
    "\"fa"
    "\":0,\"to\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.0239172,\"sd\":0.00466417,"
    "\"contribution\":0."
    "0239172,\"half_width\":0.000293525,\"share\":0.871144},{\"node\":\"ship\",\"ok\":967,\"fa\":0,"
    "\"t"
    "o\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.00151239,\"sd\":0.000290387,\"contribution\":0."
    "0015"
    "1239,\"half_width\":1.83029e-05,\"share\":0.0550862}],\"best\":\"pay\",\"dominant\":true}},"
    "\"op"
    "ened\":1795318959.9351,\"closed\":1795318960.40126,\"hypotheses\":[{\"id\":1,\"investigation"
    "\":1,\"parent\":null,\"node\":\"checkout\",\"kind\":\"latency\",\"action\":\"root\","
    "\"probes\":[],\"st"
    "ats\":{\"node\":{\"node\":\"checkout\",\"ok\":1453,\"fa\":0,\"to\":0,\"windows\":3,\"lost\":0."
    "0,\"mean"
    "\":0.0273698,\"sd\":0.00471668,\"ks_d\":0.0101404,\"ks_p\":0.998232},\"origin\":\"person\","
    "\"pro"
    "blem\":\"latency\",\"requested_by\":\"me\"},\"verdict\":\"pending\",\"time\":1795318959.93524}"
    ",{\""
    "id\":2,\"investigation\":1,\"parent\":1,\"node\":\"checkout\",\"kind\":\"latency\",\"action\":"
    "\"expa"
    "nd\",\"probes\":[\"validate\",\"pay\",\"ship\"],\"stats\":{\"strategy\":\"children\","
    "\"reason\":\"enab"
    "le 3 children of checkout (validate, …): the strategy `children` weighs every child "
    "at "
    "once\",\"focus\":{\"node\":\"checkout\",\"ok\":494,\"fa\":0,\"to\":0,\"windows\":1,\"lost\":0."
    "0,\"m"
    "ean\":0.0272622,\"sd\":0.00442667,\"ks_d\":0.0225485,\"ks_p\":0.961341}},\"verdict\":\"localiz"
    "ed\",\"time\":1795318960.00109},{\"id\":3,\"investigation\":1,\"parent\":2,\"node\":\"pay\","
    "\"kind"
    "\":\"latency\",\"action\":\"verdict\",\"probes\":[],\"stats\":{\"reason\":\"localized at pay: "
    "pay "
    "holds 87 % of checkout's mean latency (23.9 ms ± 0.29 of 27.5 ms); the runner-up val"
    "idate holds 7 % (2.01 ms ± 0.036)\",\"evidence\":{\"verdict\":\"localized\",\"reason\":\"local"
    "ized at pay: pay holds 87 % of checkout's mean latency (23.9 ms ± 0.29 of 27.5 ms); "
    "the runner-up validate holds 7 % (2.01 ms ± 0.036)\",\"focus\":{\"node\":\"checkout\",\"ok\":"
    "967,\"fa\":0,\"to\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.027455,\"sd\":0.00472258,\"ks_d\":"
    "0.01"
    "42705,\"ks_p\":0.988755},\"children\":[{\"node\":\"validate\",\"ok\":1000,\"fa\":0,\"to\":0,"
    "\"windo"
    "ws\":2,\"lost\":0.0,\"mean\":0.00200586,\"sd\":0.000580256,\"contribution\":0.00200586,\"half_"
    "width\":3.59646e-05,\"share\":0.0730599},{\"node\":\"pay\",\"ok\":970,\"fa\":0,\"to\":0,"
    "\"windows\""
    ":2,\"lost\":0.0,\"mean\":0.0239172,\"sd\":0.00466417,\"contribution\":0.0239172,\"half_width\""
    ":0.000293525,\"share\":0.871144},{\"node\":\"ship\",\"ok\":967,\"fa\":0,\"to\":0,\"windows\":"
    "2,\"lo"
    "st\":0.0,\"mean\":0.00151239,\"sd\":0.000290387,\"contribution\":0.00151239,\"half_width\":1."
    "83029e-05,\"share\":0.0550862}],\"best\":\"pay\",\"dominant\":true}},\"verdict\":"
    "\"localized\",\""
    "time\":1795318960.40104}],\"commands\":[{\"id\":2,\"time\":1795318960.00126,\"wrapper\":\"1 12"
    "7.0.0.1:55166\",\"command\":\"set_timeout\",\"probe\":\"validate\",\"args\":{\"dmax_ms\":1024}"
    ",\"s"
    "tatus\":\"sent\",\"detail\":null},{\"id\":3,\"time\":1795318960.00131,\"wrapper\":\"1 "
    "127.0.0.1:"
    "55166\",\"command\":\"set_timeout\",\"probe\":\"pay\",\"args\":{\"dmax_ms\":1024},\"status\":"
    "\"sent\""
    ",\"detail\":null},{\"id\":4,\"time\":1795318960.00134,\"wrapper\":\"1 "
    "127.0.0.1:55166\",\"comma"
    "nd\":\"set_timeout\",\"probe\":\"ship\",\"args\":{\"dmax_ms\":1024},\"status\":\"sent\","
    "\"detail\":nu"
    "ll}]}";

static const char WHY_PAY[] =
    "{\"probe\":\"pay\",\"enabled\":true,\"enabled_by\":{\"id\":2,\"investigation\":1,\"parent\":1,"
    "\"nod"
    "e\":\"checkout\",\"kind\":\"latency\",\"action\":\"expand\",\"probes\":[\"validate\",\"pay\","
    "\"ship\"],"
    "\"stats\":{\"strategy\":\"children\",\"reason\":\"enable 3 children of checkout (validate, …)"
    ": the strategy `children` weighs every child at once\",\"focus\":{\"node\":\"checkout\",\"ok"
    "\":494,\"fa\":0,\"to\":0,\"windows\":1,\"lost\":0.0,\"mean\":0.0272622,\"sd\":0.00442667,\"ks_"
    "d\":0"
    ".0225485,\"ks_p\":0.961341}},\"verdict\":\"localized\",\"time\":1795318960.00109},\"chain\":[{"
    "\"id\":2,\"investigation\":1,\"parent\":1,\"node\":\"checkout\",\"kind\":\"latency\","
    "\"action\":\"exp"
    "and\",\"probes\":[\"validate\",\"pay\",\"ship\"],\"stats\":{\"strategy\":\"children\","
    "\"reason\":\"ena"
    "ble 3 children of checkout (validate, …): the strategy `children` weighs every child"
    " at "
    "once\",\"focus\":{\"node\":\"checkout\",\"ok\":494,\"fa\":0,\"to\":0,\"windows\":1,\"lost\":0."
    "0,\""
    "mean\":0.0272622,\"sd\":0.00442667,\"ks_d\":0.0225485,\"ks_p\":0.961341}},\"verdict\":\"locali"
    "zed\",\"time\":1795318960.00109},{\"id\":1,\"investigation\":1,\"parent\":null,\"node\":"
    "\"checko"
    "ut\",\"kind\":\"latency\",\"action\":\"root\",\"probes\":[],\"stats\":{\"node\":{\"node\":"
    "\"checkout\","
    "\"ok\":1453,\"fa\":0,\"to\":0,\"windows\":3,\"lost\":0.0,\"mean\":0.0273698,\"sd\":0.00471668,"
    "\"ks_"
    "d\":0.0101404,\"ks_p\":0.998232},\"origin\":\"person\",\"problem\":\"latency\",\"requested_"
    "by\":\""
    "me\"},\"verdict\":\"pending\",\"time\":1795318959.93524}],\"investigation\":{\"id\":1,"
    "\"node\":\"c"
    "heckout\",\"problem\":\"latency\",\"strategy\":\"children\",\"origin\":\"person\",\"trigger\":"
    "null,"
    "\"requested_by\":\"me\",\"open\":false,\"verdict\":\"localized\",\"verdict_node\":\"pay\","
    "\"summary"
    "\":{\"verdict\":\"localized\",\"node\":\"pay\",\"evidence\":{\"verdict\":\"localized\","
    "\"reason\":\"lo"
    "calized at pay: pay holds 87 % of checkout's mean latency (23.9 ms ± 0.29 of 27.5 ms"
    "); the runner-up validate holds 7 % (2.01 ms ± 0.036)\",\"focus\":{\"node\":\"checkout\",\"o"
    "k\":967,\"fa\":0,\"to\":0,\"windows\":2,\"lost\":0.0,\"mean\":0.027455,\"sd\":0.00472258,\"ks_"
    "d\":0"
    ".0142705,\"ks_p\":0.988755},\"children\":[{\"node\":\"validate\",\"ok\":1000,\"fa\":0,\"to\":"
    "0,\"wi"
    "ndows\":2,\"lost\":0.0,\"mean\":0.00200586,\"sd\":0.000580256,\"contribution\":0.00200586,\"ha"
    "lf_width\":3.59646e-05,\"share\":0.0730599},{\"node\":\"pay\",\"ok\":970,\"fa\":0,\"to\":0,"
    "\"windo"
    "ws\":2,\"lost\":0.0,\"mean\":0.0239172,\"sd\":0.00466417,\"contribution\":0.0239172,\"half_wid"
    "th\":0.000293525,\"share\":0.871144},{\"node\":\"ship\",\"ok\":967,\"fa\":0,\"to\":0,"
    "\"windows\":2,"
    "\"lost\":0.0,\"mean\":0.00151239,\"sd\":0.000290387,\"contribution\":0.00151239,\"half_width\""
    ":1.83029e-05,\"share\":0.0550862}],\"best\":\"pay\",\"dominant\":true}},\"opened\":1795318959."
    "9351,\"closed\":1795318960.40126},\"trigger\":null,\"commands\":[{\"id\":3,\"time\":1795318960"
    ".00131,\"wrapper\":\"1 "
    "127.0.0.1:55166\",\"command\":\"set_timeout\",\"probe\":\"pay\",\"args\":{\""
    "dmax_ms\":1024},\"status\":\"sent\",\"detail\":null},{\"id\":9,\"time\":1795318990.5,"
    "\"wrapper\":"
    "\"2 "
    "127.0.0.1:4000\",\"command\":\"clear_timeout\",\"probe\":\"pay\",\"args\":null,\"status\":"
    "\"not"
    "_applied\",\"detail\":\"legacy link\"}],\"disabled_by\":null,\"sentences\":[\"pay was enabled "
    "at 2026-11-22 03:42:40 UTC by investigation 1, while refining a latency problem at c"
    "heckout.\",\"Evidence at checkout: enable 3 children of checkout (validate, …): the st"
    "rategy `children` weighs every child at once\",\"The investigation started at checkout"
    ".\",\"Investigation 1 was started by a person (me) at checkout.\",\"Verdict: localized a"
    "t pay. localized at pay: pay holds 87 % of checkout's mean latency (23.9 ms ± 0.29 o"
    "f 27.5 ms); the runner-up validate holds 7 % (2.01 ms ± 0.036)\"]}";

/* A snapshot: two ΔQs of 4 bins of 10 ms, a probe name that needs CSV quoting, and an
 * object without a pdf (dqd lists the snapshot row itself in "dqs"), which is skipped. */
static const char SNAP[] =
    "{\"id\":3,\"trigger\":2,\"investigation\":5,\"probe\":\"checkout\",\"reason\":\"trigger "
    "load fired\",\"time\":1795318974.4,\"windows\":10,\"complete\":true,\"dq_count\":2,"
    "\"dqs\":[{\"id\":3,\"probe\":\"checkout\"},"
    "{\"probe\":\"checkout\",\"kind\":\"observed\",\"start\":1795318972.4,\"end\":1795318972.6,"
    "\"bin_width\":0.01,\"bins\":4,\"lost\":0.1,\"pdf\":[0.1,0.4,0.3,0.1]},"
    "{\"probe\":\"a,\\\"b\",\"kind\":\"calculated\",\"start\":1795318972.6,\"end\":"
    "1795318972.8,\"bin_width\":0.01,\"bins\":4,\"lost\":0.0,\"pdf\":[0.0,0.5,0.5,0.0]}]}";

static const char TRIGGERS[] =
    "[{\"id\":2,\"probe\":\"checkout\",\"kind\":\"load\",\"threshold\":100.0,\"fire_after\":2,"
    "\"clear_after\":3,\"enabled\":true,\"fired\":true,\"bad\":20,\"good\":0,\"fired_at\":"
    "1795318974.60119,\"cleared_at\":null},"
    "{\"id\":1,\"probe\":\"checkout\",\"kind\":\"lost\",\"threshold\":0.01,\"fire_after\":3,"
    "\"clear_after\":5,\"enabled\":true,\"fired\":false,\"bad\":0,\"good\":39,\"fired_at\":null,"
    "\"cleared_at\":null},"
    "{\"id\":3,\"probe\":\"pay\",\"kind\":\"cv\",\"threshold\":null,\"fire_after\":3,"
    "\"clear_after\":5,\"enabled\":false,\"fired\":true,\"bad\":7,\"good\":0,\"fired_at\":"
    "1795318974.6,\"cleared_at\":null}]";

static json_t *parse(const char *text) {
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j) {
        fprintf(stderr, "canned JSON: %s at %d:%d\n", err.text, err.line, err.column);
    }
    return j;
}

static int starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* The line of text that contains needle (copied into line), or "" */
static const char *line_with(const char *text, const char *needle, char *line, size_t cap) {
    const char *p = strstr(text, needle);
    line[0] = '\0';
    if (!p) {
        return line;
    }
    const char *b = p;
    while (b > text && b[-1] != '\n') {
        b--;
    }
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - b) : strlen(b);
    n = n < cap - 1 ? n : cap - 1;
    memcpy(line, b, n);
    line[n] = '\0';
    return line;
}

/* ---- pure parts ----------------------------------------------------------------------- */

static void test_parse_args(void) {
    struct dqctl_opts o;
    char err[256];
    char *a1[] = {"diagnose", "checkout", "--strategy", "bisect", "--wait", "--timeout=90s"};
    CHECK_INT(dqctl_parse_args(6, a1, DQCTL_OPT_STRATEGY | DQCTL_OPT_WAIT, 0, 1, NULL, &o, err,
                               sizeof err),
              0);
    CHECK_STR(o.strategy, "bisect");
    CHECK_INT(o.wait, 1);
    CHECK_STR(o.timeout, "90s");
    CHECK_STR(o.pos[0], "checkout");
    char *a2[] = {"log", "--open", "--limit", "3", "--json"};
    CHECK_INT(
        dqctl_parse_args(5, a2, DQCTL_OPT_OPEN | DQCTL_OPT_LIMIT, 0, 1, NULL, &o, err, sizeof err),
        0);
    CHECK_INT(o.open, 1);
    CHECK_STR(o.limit, "3");
    CHECK_INT(o.json, 1);
    char *a3[] = {"trigger",         "p",        "lost", "--threshold", "-1", "--fire-after", "2",
                  "--clear-after=9", "--disable"};
    CHECK_INT(dqctl_parse_args(9, a3, DQCTL_OPT_TRIGGER, 2, 2, NULL, &o, err, sizeof err), 0);
    CHECK_STR(o.threshold, "-1"); /* a value, not an option, even with a leading dash */
    CHECK_STR(o.fire_after, "2");
    CHECK_STR(o.clear_after, "9");
    CHECK_INT(o.disable, 1);
    CHECK_INT(o.npos, 2);
    /* options of one command are unknown to the others */
    char *b1[] = {"why", "p", "--wait"};
    CHECK_INT(dqctl_parse_args(3, b1, 0, 1, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "unknown option --wait") != NULL);
    char *b2[] = {"log", "--threshold", "1"};
    CHECK_INT(
        dqctl_parse_args(3, b2, DQCTL_OPT_OPEN | DQCTL_OPT_LIMIT, 0, 1, NULL, &o, err, sizeof err),
        -1);
    char *b3[] = {"diagnose", "--strategy"};
    CHECK_INT(dqctl_parse_args(2, b3, DQCTL_OPT_STRATEGY, 0, 1, NULL, &o, err, sizeof err), -1);
    CHECK(strstr(err, "needs a value") != NULL);
    char *b4[] = {"diagnose", "a", "b"};
    CHECK_INT(dqctl_parse_args(3, b4, DQCTL_OPT_STRATEGY, 0, 1, NULL, &o, err, sizeof err), -1);
}

static void test_verdict_exit(void) {
    CHECK_INT(dqctl_verdict_exit("localized"), DQCTL_EXIT_PROBLEM);
    CHECK_INT(dqctl_verdict_exit("diffuse"), DQCTL_EXIT_PROBLEM);
    CHECK_INT(dqctl_verdict_exit("overload"), DQCTL_EXIT_PROBLEM);
    CHECK_INT(dqctl_verdict_exit("healthy"), DQCTL_EXIT_OK);
    CHECK_INT(dqctl_verdict_exit("inconclusive"), DQCTL_EXIT_NO_VERDICT);
    CHECK_INT(dqctl_verdict_exit("aborted"), DQCTL_EXIT_NO_VERDICT);
    CHECK_INT(dqctl_verdict_exit("something new"), DQCTL_EXIT_NO_VERDICT);
    CHECK_INT(dqctl_verdict_exit(NULL), DQCTL_EXIT_NO_VERDICT);
}

static void test_trigger_body(void) {
    char err[256];
    json_t *cur = json_pack("{s:s,s:s,s:f,s:i,s:i,s:b}", "probe", "checkout", "kind", "lost",
                            "threshold", 0.01, "fire_after", 4, "clear_after", 6, "enabled", 0);
    /* only the threshold given: the counts keep their values, enabled by default */
    json_t *b = dqctl_trigger_body(cur, "2%", NULL, NULL, 0, err, sizeof err);
    CHECK(b != NULL);
    CHECK_NEAR(json_number_value(json_object_get(b, "threshold")), 0.02, 1e-12);
    CHECK_INT(json_integer_value(json_object_get(b, "fire_after")), 4);
    CHECK_INT(json_integer_value(json_object_get(b, "clear_after")), 6);
    CHECK(json_is_true(json_object_get(b, "enabled")));
    CHECK_INT(json_object_size(b), 4); /* nothing else from the current trigger */
    json_decref(b);
    /* counts given, threshold kept, --disable */
    b = dqctl_trigger_body(cur, NULL, "2", "10", 1, err, sizeof err);
    CHECK_NEAR(json_number_value(json_object_get(b, "threshold")), 0.01, 1e-12);
    CHECK_INT(json_integer_value(json_object_get(b, "fire_after")), 2);
    CHECK_INT(json_integer_value(json_object_get(b, "clear_after")), 10);
    CHECK(json_is_false(json_object_get(b, "enabled")));
    json_decref(b);
    /* "default" sends null; a new trigger sends only what was given */
    b = dqctl_trigger_body(NULL, "default", NULL, NULL, 0, err, sizeof err);
    CHECK(json_is_null(json_object_get(b, "threshold")));
    CHECK_INT(json_object_size(b), 2);
    json_decref(b);
    b = dqctl_trigger_body(NULL, "1000", NULL, NULL, 0, err, sizeof err);
    CHECK_NEAR(json_number_value(json_object_get(b, "threshold")), 1000, 0);
    json_decref(b);
    /* bad values name the option and the value */
    const char *bad_th[] = {"-1", "abc", "1x", "inf", "nan", "", "1e999"};
    for (size_t i = 0; i < sizeof bad_th / sizeof bad_th[0]; i++) {
        err[0] = '\0';
        CHECK_MSG(dqctl_trigger_body(cur, bad_th[i], NULL, NULL, 0, err, sizeof err) == NULL,
                  "threshold %s accepted", bad_th[i]);
        CHECK(strstr(err, "--threshold") != NULL);
    }
    const char *bad_n[] = {"0", "1001", "-3", "2.5", "x", ""};
    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++) {
        CHECK_MSG(dqctl_trigger_body(cur, NULL, bad_n[i], NULL, 0, err, sizeof err) == NULL,
                  "fire-after %s accepted", bad_n[i]);
        CHECK(strstr(err, "--fire-after") != NULL);
        CHECK_MSG(dqctl_trigger_body(cur, NULL, NULL, bad_n[i], 0, err, sizeof err) == NULL,
                  "clear-after %s accepted", bad_n[i]);
        CHECK(strstr(err, "--clear-after") != NULL);
    }
    json_decref(cur);
}

/* Verdicts that hold (issue 24 items 4-5): every culprit with its share, a healthy verdict
 * without "none problem", the verdict said once, the first step "opened", a shape problem's
 * contributions as fractions of mass. */
static const char INV_TWO[] =
    "{\"id\":3,\"node\":\"root\",\"problem\":\"latency\",\"strategy\":\"children\","
    "\"origin\":\"person\",\"open\":false,\"verdict\":\"localized\",\"verdict_node\":\"fb\","
    "\"opened\":1795714612.598,\"closed\":1795714641.218,\"summary\":{\"verdict\":"
    "\"localized\",\"node\":\"fb\",\"evidence\":{\"verdict\":\"localized\",\"reason\":"
    "\"localized at 2 culprits: fb (62 %), sb (38 %) explain 100 % of root's change together "
    "(12.2 ms of 12.2 ms); the last found, sb: sb holds 78 % of the mean latency of store's "
    "children\",\"focus\":{\"node\":\"store\",\"ok\":1844,\"fa\":0,\"to\":0,\"windows\":6,"
    "\"mean\":0.00899,\"sd\":0.0014,\"lost\":0},\"children\":[{\"node\":\"sa\",\"ok\":1839,"
    "\"fa\":0,\"to\":0,\"mean\":0.002,\"sd\":0.001,\"lost\":0,\"contribution\":0.002,"
    "\"half_width\":4.6e-05,\"share\":0.223},{\"node\":\"sb\",\"ok\":1844,\"fa\":0,\"to\":0,"
    "\"mean\":0.00698,\"sd\":0.00096,\"lost\":0,\"contribution\":0.00698,\"half_width\":"
    "4.4e-05,\"share\":0.777}],\"best\":\"sb\",\"dominant\":true,\"culprits\":[{\"probe\":"
    "\"fb\",\"reference\":\"fa\",\"share\":0.61601},{\"probe\":\"sb\",\"reference\":\"sa\","
    "\"share\":0.38399}],\"explained\":1.0,\"change\":0.012175}},\"hypotheses\":["
    "{\"id\":10,\"investigation\":3,\"parent\":9,\"node\":\"fb\",\"kind\":\"latency\","
    "\"action\":\"recheck\",\"probes\":[],\"stats\":{\"reason\":\"root is still abnormal "
    "against its baseline from before the problem\",\"holds\":true},\"verdict\":\"pending\","
    "\"time\":1795714642.218}]}";

static const char INV_HEALTHY[] =
    "{\"id\":4,\"node\":\"root\",\"problem\":\"none\",\"strategy\":\"children\",\"origin\":"
    "\"person\",\"open\":false,\"verdict\":\"healthy\",\"verdict_node\":\"root\","
    "\"opened\":1795714612.5,\"closed\":1795714612.5,\"summary\":{\"verdict\":\"healthy\","
    "\"node\":\"root\",\"evidence\":{\"reason\":\"healthy at root: nothing abnormal against "
    "its baseline (mean 21 ms against 21 ms before, 0 % lost against 0 %)\"}},\"hypotheses\":[]}";

static const char EV_SHAPE[] =
    "{\"verdict\":\"localized\",\"problem\":\"shape\",\"unit\":\"mass\",\"reason\":\"x\","
    "\"children\":[{\"node\":\"p2\",\"ok\":500,\"fa\":0,\"to\":0,\"mean\":0.0156,\"sd\":"
    "0.002,\"lost\":0,\"contribution\":0.976,\"half_width\":0.096,\"share\":1.0}],\"best\":"
    "\"p2\",\"dominant\":true}";

static void test_render_culprits(void) {
    json_t *inv = parse(INV_TWO);
    CHECK(inv != NULL);
    struct capture c;
    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    const char *t = cap_text(&c);
    CHECK_MSG(starts_with(t, "verdict: localized at fb and sb (investigation 3: latency problem "
                             "at root, 28.6 s)\n  fb (62 %), sb (38 %) explain 100 % of root's "
                             "change together"),
              "%s", t);
    CHECK_MSG(strstr(t,
                     "\n  culprits, each with the share of root's change it explains (12.2 ms "
                     "against its baseline; 100 % explained):\n    fb      62 %   reference: fa\n"
                     "    sb      38 %   reference: sa\n") != NULL,
              "%s", t);
    CHECK(strstr(t, "\n  the last step, at store: n 1844 in 6 windows") != NULL);
    CHECK(strstr(t, "localized at 2 culprits") == NULL); /* said by the verdict line */
    cap_close(&c);
    /* the progress line of the verdict names both, and a re-check reads as one */
    json_t *h =
        json_pack("{s:I,s:s,s:s,s:s,s:f,s:{s:s,s:O}}", "id", (json_int_t)9, "action", "verdict",
                  "node", "fb", "verdict", "localized", "time", 1795714641.218, "stats", "reason",
                  "localized at 2 culprits: fb (62 %), sb (38 %) explain all", "evidence",
                  json_object_get(json_object_get(inv, "summary"), "evidence"));
    cap_open(&c);
    dqctl_render_progress(c.f, h);
    dqctl_render_progress(c.f, json_array_get(json_object_get(inv, "hypotheses"), 0));
    CHECK_STR(cap_text(&c), "17:37:21.218  verdict  localized at fb and sb: fb (62 %), sb (38 %) "
                            "explain all\n17:37:22.218  recheck  fb: root is still abnormal "
                            "against its baseline from before the problem\n");
    cap_close(&c);
    json_decref(h);
    json_decref(inv);

    /* a healthy verdict: its problem is "none", never printed as "none problem" */
    inv = parse(INV_HEALTHY);
    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    CHECK_STR(cap_text(&c), "verdict: healthy at root (investigation 4: no problem found at root, "
                            "0 ms)\n  nothing abnormal against its baseline (mean 21 ms against "
                            "21 ms before, 0 % lost against 0 %)\n");
    cap_close(&c);
    cap_open(&c);
    dqctl_render_investigation(c.f, inv);
    CHECK(starts_with(cap_text(&c), "investigation 4 at root: no problem found, strategy"));
    CHECK(strstr(cap_text(&c), "none problem") == NULL);
    cap_close(&c);
    json_decref(inv);

    /* shape: how much of each child's mass moved, not a time */
    json_t *ev = parse(EV_SHAPE);
    inv =
        json_pack("{s:I,s:s,s:s,s:s,s:s,s:{s:O}}", "id", (json_int_t)5, "node", "root", "problem",
                  "shape", "verdict", "localized", "verdict_node", "p2", "summary", "evidence", ev);
    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    t = cap_text(&c);
    char line[512];
    line_with(t, "* p2", line, sizeof line);
    CHECK_MSG(strstr(line, "97.6 % ± 9.6 %") != NULL, "shape row: %s", line);
    CHECK(strstr(line, "976 ms") == NULL && strstr(line, " s ") == NULL);
    cap_close(&c);
    json_decref(inv);
    json_decref(ev);
}

static void test_render_progress_and_verdict(void) {
    json_t *inv = parse(INV1);
    CHECK(inv != NULL);
    const json_t *hyps = json_object_get(inv, "hypotheses");
    CHECK_INT(json_array_size(hyps), 3);
    struct capture c;
    cap_open(&c);
    for (size_t i = 0; i < json_array_size(hyps); i++) {
        dqctl_render_progress(c.f, json_array_get(hyps, i));
    }
    const char *t = cap_text(&c);
    CHECK_STR(t, "03:42:39.935  opened   checkout: opened for a latency problem, by a person "
                 "(me); n 1453 in 3 windows, mean 27.4 ms, sd 4.72 ms, lost 0.00%, KS D 0.0101 "
                 "(p 0.998)\n"
                 "03:42:40.001  expand   checkout [validate, pay, ship]: enable 3 children of "
                 "checkout (validate, …): the strategy `children` weighs every child at once\n"
                 "03:42:40.401  verdict  localized at pay: pay holds 87 % of checkout's mean "
                 "latency (23.9 ms ± 0.29 of 27.5 ms); the runner-up validate holds 7 % (2.01 ms ± "
                 "0.036)\n");
    cap_close(&c);
    /* a trigger's investigation that was an overload one as it opened says why; one asked
     * for says so */
    json_t *root =
        json_pack("{s:I,s:s,s:s,s:s,s:f,s:{s:s,s:s,s:b,s:s}}", "id", (json_int_t)1, "action",
                  "root", "node", "checkout", "kind", "qta", "time", 1795318959.935, "stats",
                  "origin", "trigger", "problem", "qta", "overload", 1, "overload_why",
                  "its latency rises with its arrivals (Spearman z 3.7 over its windows)");
    cap_open(&c);
    dqctl_render_progress(c.f, root);
    CHECK_MSG(starts_with(cap_text(&c), "03:42:39.935  opened   checkout: opened for a qta "
                                        "problem, by a trigger; an overload investigation: its "
                                        "latency rises with its arrivals (Spearman z 3.7 over "
                                        "its windows);"),
              "%s", cap_text(&c));
    cap_close(&c);
    json_object_del(json_object_get(root, "stats"), "overload_why");
    cap_open(&c);
    dqctl_render_progress(c.f, root);
    CHECK(strstr(cap_text(&c), "by a trigger; an overload investigation, as asked;") != NULL);
    cap_close(&c);
    json_decref(root);

    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    t = cap_text(&c);
    char line[512];
    /* the verdict line names the verdict and its node: the reason under it does not again */
    CHECK(starts_with(t, "verdict: localized at pay (investigation 1: latency problem at checkout, "
                         "466 ms)\n  pay holds 87 %"));
    CHECK(strstr(t, "  checkout: n 967 in 2 windows, mean 27.5 ms, sd 4.72 ms, lost 0.00%") !=
          NULL);
    /* the dominant child is marked and its contribution carries its interval and share */
    line_with(t, "* pay", line, sizeof line);
    CHECK_MSG(strstr(line, "970") && strstr(line, "23.9 ms ± 0.29 ms") && strstr(line, "87.1%") &&
                  strstr(line, "dominant"),
              "row: %s", line);
    line_with(t, "  validate ", line, sizeof line);
    CHECK_MSG(strstr(line, "2.01 ms ± 0.036 ms") && strstr(line, "7.3%") && !strstr(line, "*") &&
                  !strstr(line, "dominant"),
              "row: %s", line);
    CHECK_INT(count_of(t, "dominant"), 1);
    CHECK(strstr(t, "CHILD") != NULL && strstr(t, "CONTRIBUTION (95%)") != NULL);
    cap_close(&c);

    /* other kinds use their own units; a largest child that does not dominate says so */
    json_t *ev = json_object_get(json_object_get(inv, "summary"), "evidence");
    json_object_set_new(ev, "dominant", json_false());
    json_object_set_new(inv, "problem", json_string("lost"));
    json_t *kid = json_array_get(json_object_get(ev, "children"), 1);
    json_object_set_new(kid, "contribution", json_real(0.05));
    json_object_set_new(kid, "half_width", json_real(0.004));
    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    t = cap_text(&c);
    line_with(t, "* pay", line, sizeof line);
    CHECK_MSG(strstr(line, "5 % ± 0.4 %") && strstr(line, "largest, not dominant"), "row: %s",
              line);
    cap_close(&c);
    json_object_set_new(inv, "problem", json_string("variance"));
    json_object_set_new(kid, "contribution", json_real(2e-6));
    cap_open(&c);
    dqctl_render_verdict(c.f, inv);
    CHECK(strstr(cap_text(&c), "2 ms² ± ") != NULL);
    cap_close(&c);

    /* an aborted investigation shows its error */
    json_t *ab = json_pack(
        "{s:I,s:s,s:s,s:s,s:b,s:s,s:n,s:{s:s,s:n,s:{s:s}},s:f,s:f}", "id", (json_int_t)4, "node",
        "checkout", "problem", "latency", "strategy", "children", "open", 0, "verdict", "aborted",
        "verdict_node", "summary", "verdict", "aborted", "node", "evidence", "error",
        "checkout is no longer in the diagram", "opened", 1795318959.0, "closed", 1795318961.5);
    CHECK(ab != NULL);
    cap_open(&c);
    dqctl_render_verdict(c.f, ab);
    CHECK_STR(cap_text(&c), "verdict: aborted (investigation 4: latency problem at checkout, "
                            "2.5 s)\n  error: checkout is no longer in the diagram\n");
    cap_close(&c);
    json_decref(ab);
    json_decref(inv);
}

static void test_render_why(void) {
    json_t *why = parse(WHY_PAY);
    CHECK(why != NULL);
    struct capture c;
    cap_open(&c);
    dqctl_render_why(c.f, why);
    const char *t = cap_text(&c);
    /* the sentences come first, one per line, as dqd wrote them */
    CHECK(starts_with(
        t, "pay was enabled at 2026-11-22 03:42:40 UTC by investigation 1, while refining "
           "a latency problem at checkout.\nEvidence at checkout: enable 3 children"));
    CHECK(strstr(t, "\nInvestigation 1 was started by a person (me) at checkout.\n") != NULL);
    /* the chain: root first, the enabling step one level deeper and marked */
    const char *root = strstr(t, "\n  #1 opened at checkout  03:42:39.935\n");
    const char *exp = strstr(t, "\n    #2 expand checkout  03:42:40.001  [validate, pay, ship]  "
                                "-> localized  <- enabled pay\n");
    CHECK(root != NULL);
    CHECK(exp != NULL);
    CHECK(root && exp && root < exp);
    CHECK(strstr(t, "\n      checkout: n 494 in 1 window, mean 27.3 ms, sd 4.43 ms") != NULL);
    CHECK(strstr(t, "\n    opened for a latency problem, by a person (me)\n") != NULL);
    /* the commands, with the status that says a legacy link could not apply one */
    CHECK(strstr(t, "\ncommands sent for pay:\n  2026-11-22 03:42:40.001  set_timeout "
                    "{\"dmax_ms\":1024}  to wrapper 1 127.0.0.1:55166: sent\n") != NULL);
    CHECK(strstr(t, "clear_timeout  to wrapper 2 127.0.0.1:4000: not_applied (a legacy link "
                    "cannot do this): legacy link\n") != NULL);
    CHECK(strstr(t, "then disabled by") == NULL);
    cap_close(&c);

    /* after de-escalation: the disabling step follows the chain */
    json_object_set_new(why, "disabled_by",
                        json_pack("{s:I,s:I,s:s,s:s,s:s,s:[s,s,s],s:{s:s,s:i},s:s,s:f}", "id",
                                  (json_int_t)9, "parent", (json_int_t)3, "node", "checkout",
                                  "kind", "latency", "action", "disable", "probes", "validate",
                                  "pay", "ship", "stats", "reason",
                                  "the problem stayed away; disabling what the investigation "
                                  "enabled",
                                  "quiet_windows", 5, "verdict", "pending", "time", 1795319000.0));
    cap_open(&c);
    dqctl_render_why(c.f, why);
    t = cap_text(&c);
    const char *dis = strstr(t, "\nthen disabled by:\n  #9 disable checkout  03:43:20.000  "
                                "[validate, pay, ship]\n    the problem stayed away; disabling "
                                "what the investigation enabled\n");
    CHECK(dis != NULL);
    const char *enabling = strstr(t, "<- enabled pay");
    CHECK(dis && enabling && dis > enabling && dis < strstr(t, "\ncommands sent for pay:"));
    cap_close(&c);
    json_decref(why);

    /* a probe no investigation enabled: only the sentence */
    why = json_pack("{s:s,s:b,s:n,s:[s]}", "probe", "checkout", "enabled", 1, "enabled_by",
                    "sentences",
                    "No investigation enabled checkout: it is enabled by "
                    "configuration (always on).");
    cap_open(&c);
    dqctl_render_why(c.f, why);
    CHECK_STR(cap_text(&c), "No investigation enabled checkout: it is enabled by configuration "
                            "(always on).\n");
    cap_close(&c);
    json_decref(why);
}

static void test_render_log(void) {
    json_t *inv = parse(INV1);
    struct capture c;
    cap_open(&c);
    dqctl_render_investigation(c.f, inv);
    const char *t = cap_text(&c);
    CHECK(starts_with(t,
                      "investigation 1 at checkout: latency problem, strategy children, started by "
                      "person (me) at 2026-11-22 03:42:39.935 UTC\nclosed at 2026-11-22 "
                      "03:42:40.401 UTC\nverdict: localized at pay"));
    /* the tree: each hypothesis indented under its parent */
    CHECK(strstr(t, "\nhypotheses (3):\n  #1 opened at checkout  03:42:39.935\n") != NULL);
    CHECK(strstr(t, " root ") == NULL); /* never "#1 root checkout" (nor "root root") */
    CHECK(strstr(t, "\n    #2 expand checkout  03:42:40.001  [validate, pay, ship]  -> "
                    "localized\n") != NULL);
    CHECK(strstr(t, "\n      #3 verdict: localized at pay  03:42:40.401\n") != NULL);
    CHECK(strstr(t, "\n        largest contribution: pay 23.9 ms ± 0.29 ms (87.1%), dominant\n") !=
          NULL);
    CHECK(strstr(t, "\ncommands (3):\n  2026-11-22 03:42:40.001  set_timeout validate "
                    "{\"dmax_ms\":1024}  to wrapper 1 127.0.0.1:55166: sent\n") != NULL);
    cap_close(&c);

    /* siblings come in id order under their parent; a dangling parent is a root; a
     * parent cycle is still printed (flat), never looped over */
    json_t *h =
        json_pack("[{s:I,s:I,s:s,s:s},{s:I,s:n,s:s,s:s},{s:I,s:I,s:s,s:s},"
                  "{s:I,s:I,s:s,s:s},{s:I,s:I,s:s,s:s},{s:I,s:I,s:s,s:s}]",
                  "id", (json_int_t)2, "parent", (json_int_t)1, "action", "expand", "node", "a",
                  "id", (json_int_t)1, "parent", "action", "root", "node", "r", "id", (json_int_t)3,
                  "parent", (json_int_t)1, "action", "expand", "node", "b", "id", (json_int_t)4,
                  "parent", (json_int_t)99, "action", "pause", "node", "c", "id", (json_int_t)5,
                  "parent", (json_int_t)6, "action", "x", "node", "d", "id", (json_int_t)6,
                  "parent", (json_int_t)5, "action", "y", "node", "e");
    json_object_set_new(inv, "hypotheses", h);
    cap_open(&c);
    dqctl_render_investigation(c.f, inv);
    t = cap_text(&c);
    const char *r = strstr(t, "\n  #1 opened at r");
    const char *a = strstr(t, "\n    #2 expand a");
    const char *b = strstr(t, "\n    #3 expand b");
    const char *d = strstr(t, "\n  #4 pause c");
    CHECK(r && a && b && d && r < a && a < b && b < d);
    CHECK_INT(count_of(t, "(parent cycle)"), 2);
    cap_close(&c);

    /* the list */
    json_object_del(inv, "hypotheses");
    json_object_del(inv, "commands");
    json_t *open = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:n,s:b,s:n,s:n,s:f}", "id", (json_int_t)12,
                             "node", "frontend", "problem", "qta", "strategy", "bisect", "origin",
                             "trigger", "trigger", (json_int_t)7, "requested_by", "open", 1,
                             "verdict", "verdict_node", "opened", 1795319000.25);
    json_t *list = json_pack("[o,O]", open, inv);
    cap_open(&c);
    dqctl_render_investigations(c.f, list);
    t = cap_text(&c);
    char line[512];
    CHECK(starts_with(t, "   ID  OPENED (UTC)"));
    line_with(t, "   12  ", line, sizeof line);
    CHECK_MSG(strstr(line, "2026-11-22 03:43:20.250") && strstr(line, "frontend") &&
                  strstr(line, "qta") && strstr(line, "bisect") && strstr(line, "trigger #7") &&
                  strstr(line, "(open)"),
              "row: %s", line);
    line_with(t, "    1  ", line, sizeof line);
    CHECK_MSG(strstr(line, "person (me)") && strstr(line, "localized") &&
                  strstr(line, " pay") == line + strlen(line) - 4,
              "row: %s", line);
    cap_close(&c);
    json_decref(list);
    json_decref(inv);
}

static void test_render_snapshot(void) {
    json_t *s = parse(SNAP);
    CHECK(s != NULL);
    struct capture c;
    cap_open(&c);
    dqctl_render_snapshot_csv(c.f, s);
    CHECK_STR(cap_text(&c),
              "probe,kind,window_start,window_end,bin,time_s,pdf,cdf\n"
              "checkout,observed,1795318972.400000,1795318972.600000,0,0.01,0.1,0.1\n"
              "checkout,observed,1795318972.400000,1795318972.600000,1,0.02,0.4,0.5\n"
              "checkout,observed,1795318972.400000,1795318972.600000,2,0.03,0.3,0.8\n"
              "checkout,observed,1795318972.400000,1795318972.600000,3,0.04,0.1,0.9\n"
              "\"a,\"\"b\",calculated,1795318972.600000,1795318972.800000,0,0.01,0,0\n"
              "\"a,\"\"b\",calculated,1795318972.600000,1795318972.800000,1,0.02,0.5,0.5\n"
              "\"a,\"\"b\",calculated,1795318972.600000,1795318972.800000,2,0.03,0.5,1\n"
              "\"a,\"\"b\",calculated,1795318972.600000,1795318972.800000,3,0.04,0,1\n");
    cap_close(&c);

    cap_open(&c);
    dqctl_render_snapshot(c.f, s);
    const char *t = cap_text(&c);
    CHECK(starts_with(t,
                      "snapshot 3 of checkout at 2026-11-22 03:42:54.400 UTC: trigger load fired "
                      "(trigger #2, investigation 5)\n10 windows before and after, complete\n"));
    char line[512];
    /* observed (10 ms bins (i·w, (i+1)·w], each mass at its middle): lost 10 %, mean
     * 17.5/0.9 ms, p50 at the right edge where the CDF reaches 0.5 (20 ms), p90 at 40 ms,
     * p95 and p99 never reached */
    line_with(t, "checkout observed", line, sizeof line);
    CHECK_MSG(strstr(line, "2026-11-22 03:42:52.400") && strstr(line, "200 ms") &&
                  strstr(line, "10.00%") &&
                  strstr(line, "19.4 ms     20 ms     40 ms         -         -"),
              "row: %s", line);
    line_with(t, "calculated", line, sizeof line);
    CHECK_MSG(strstr(line, "0.00%") &&
                  strstr(line, "20 ms     20 ms     30 ms     30 ms     30 ms"),
              "row: %s", line);
    CHECK_INT(count_of(t, "\n"), 5); /* 2 header lines, the column titles, 2 ΔQs */
    cap_close(&c);

    json_t *list = json_pack("[{s:I,s:I,s:n,s:s,s:s,s:f,s:i,s:b,s:i}]", "id", (json_int_t)3,
                             "trigger", (json_int_t)2, "investigation", "probe", "checkout",
                             "reason", "trigger load fired", "time", 1795318974.4, "windows", 10,
                             "complete", 0, "dq_count", 40);
    cap_open(&c);
    dqctl_render_snapshots(c.f, list);
    t = cap_text(&c);
    line_with(t, "    3  ", line, sizeof line);
    CHECK_MSG(strstr(line, "2026-11-22 03:42:54.400") && strstr(line, "checkout") &&
                  strstr(line, "#2") && strstr(line, "40 (+)") &&
                  strstr(line, "trigger load fired"),
              "row: %s", line);
    cap_close(&c);
    json_decref(list);
    json_decref(s);
}

static void test_render_triggers(void) {
    json_t *t = parse(TRIGGERS);
    struct capture c;
    cap_open(&c);
    CHECK_INT(dqctl_render_triggers(c.f, t), 1); /* the disabled fired one does not count */
    const char *s = cap_text(&c);
    char line[512];
    line_with(s, " load ", line, sizeof line);
    CHECK_MSG(strstr(line, "n > 100/window") && strstr(line, "yes") &&
                  strstr(line, "FIRED at 2026-11-22 03:42:54.601 (20 bad windows in a row)"),
              "row: %s", line);
    line_with(s, " lost ", line, sizeof line);
    CHECK_MSG(strstr(line, "lost > 1%") && strstr(line, "quiet (39 good, 0 bad"), "row: %s", line);
    line_with(s, " cv ", line, sizeof line);
    CHECK_MSG(strstr(line, "default") && strstr(line, " no "), "row: %s", line);
    cap_close(&c);
    json_decref(t);
}

/* ---- against a fake dqd ------------------------------------------------------------ */

struct fake {
    struct fake_dqd dqd;
    int port;
    /* written by the server thread while the main thread waits in curl */
    char method[16];
    char path[256];
    char q_open[16];
    char q_limit[16];
    char *body;     /* of the last request */
    char *put_body; /* of the last PUT */
    int requests;
    int gets_of_7;      /* polls of the investigation that reveals a step per poll */
    int posts_of_stale; /* diagnoses of `stale`, `stale_slow`: the first finds 12 open */
};

/* INV1 as investigation id, keeping the first `steps` hypotheses, open or closed with
 * the given verdict. */
static json_t *canned_inv(long long id, size_t steps, int open, const char *verdict) {
    json_t *inv = parse(INV1);
    json_object_set_new(inv, "id", json_integer(id));
    json_t *h = json_object_get(inv, "hypotheses");
    while (json_array_size(h) > steps) {
        json_array_remove(h, json_array_size(h) - 1);
    }
    json_object_set_new(inv, "open", json_boolean(open));
    if (open) {
        json_object_set_new(inv, "verdict", json_null());
        json_object_set_new(inv, "verdict_node", json_null());
        json_object_set_new(inv, "summary", json_null());
        json_object_set_new(inv, "closed", json_null());
    } else if (strcmp(verdict, "localized") != 0) {
        json_object_set_new(inv, "verdict", json_string(verdict));
        json_object_set_new(inv, "verdict_node", json_string("checkout"));
        json_t *ev = json_object_get(json_object_get(inv, "summary"), "evidence");
        json_object_set_new(ev, "verdict", json_string(verdict));
        json_object_set_new(ev, "reason", json_string("no child dominates (canned)"));
    }
    return inv;
}

static void post_diagnose(struct fake *f, const struct http_request *req,
                          struct http_response *res) {
    json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
    const char *node = json_string_value(json_object_get(body, "node"));
    const char *strategy = json_string_value(json_object_get(body, "strategy"));
    static const struct {
        const char *node;
        long long id;
    } ids[] = {{"checkout", 7}, {"busy", 8}, {"vague", 9}, {"broken", 10}, {"slow", 11}};
    long long id = 0;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (strcmp(node ? node : "checkout", ids[i].node) == 0) {
            id = ids[i].id;
        }
    }
    if (node && strcmp(node, "stale") == 0) {
        id = f->posts_of_stale++ == 0 ? 12 : 13;
    }
    if (node && strcmp(node, "stale_slow") == 0) { /* 12 found open, then 11 (never ends) */
        id = f->posts_of_stale++ == 0 ? 12 : 11;
    }
    if (!id) {
        http_reply_error(res, 404, "not_found", "no node named \"%s\" in the diagram",
                         node ? node : "");
    } else {
        json_t *detail = canned_inv(id, 1, 1, NULL);
        json_object_set_new(detail, "node", json_string(node ? node : "checkout"));
        json_object_set_new(detail, "strategy",
                            json_string(id == 8    ? "children"
                                        : strategy ? strategy
                                                   : "children"));
        json_object_del(detail, "hypotheses");
        json_object_del(detail, "commands");
        http_reply_data(res, json_pack("{s:I,s:b,s:o}", "investigation", (json_int_t)id,
                                       "already_open", id == 8 || id == 12, "detail", detail));
    }
    json_decref(body);
}

static void get_investigation(struct fake *f, long long id, struct http_response *res) {
    json_t *inv = NULL;
    if (id == 7) {
        f->gets_of_7++; /* one more step per poll; closed with the third */
        size_t steps = f->gets_of_7 < 3 ? (size_t)f->gets_of_7 : 3;
        inv = canned_inv(7, steps, f->gets_of_7 < 3, "localized");
    } else if (id == 1 || id == 8) {
        inv = canned_inv(id, 3, 0, "localized");
    } else if (id == 9) {
        inv = canned_inv(9, 3, 0, "inconclusive");
    } else if (id == 12) {
        inv = canned_inv(12, 3, 0, "diffuse");
    } else if (id == 13) {
        inv = canned_inv(13, 3, 0, "localized");
    } else if (id == 10) {
        inv = canned_inv(10, 1, 0, "aborted");
    } else if (id == 11) {
        inv = canned_inv(11, 1, 1, NULL);
    }
    if (inv) {
        http_reply_data(res, inv);
    } else {
        http_reply_error(res, 404, "not_found", "no such investigation");
    }
}

static void fake_handler(void *ctx, const struct http_request *req, struct http_response *res) {
    struct fake *f = ctx;
    f->requests++;
    snprintf(f->method, sizeof f->method, "%s", req->method_name);
    snprintf(f->path, sizeof f->path, "%s", req->path);
    const char *qo = http_request_query(req, "open"), *ql = http_request_query(req, "limit");
    snprintf(f->q_open, sizeof f->q_open, "%s", qo ? qo : "");
    snprintf(f->q_limit, sizeof f->q_limit, "%s", ql ? ql : "");
    free(f->body);
    f->body = strdup(req->body);
    const char *p = req->path;
    const char *inv_pfx = "/api/v1/investigations/", *snap_pfx = "/api/v1/snapshots/";
    const char *probe_pfx = "/api/v1/probes/";
    if (strcmp(p, "/api/v1/diagnose") == 0 && req->method == HTTP_POST) {
        post_diagnose(f, req, res);
    } else if (strcmp(p, "/api/v1/investigations") == 0) {
        json_t *one = canned_inv(1, 0, 0, "localized");
        json_object_del(one, "hypotheses");
        json_object_del(one, "commands");
        http_reply_data(res, json_pack("[o]", one));
    } else if (strncmp(p, inv_pfx, strlen(inv_pfx)) == 0) {
        get_investigation(f, atoll(p + strlen(inv_pfx)), res);
    } else if (strcmp(p, "/api/v1/why/pay") == 0) {
        http_reply_data(res, parse(WHY_PAY));
    } else if (starts_with(p, "/api/v1/why/")) {
        char s[300];
        snprintf(s, sizeof s, "No investigation enabled %s: dqd has never seen it.", p + 12);
        http_reply_data(res, json_pack("{s:s,s:b,s:n,s:[s]}", "probe", p + 12, "enabled", 0,
                                       "enabled_by", "sentences", s));
    } else if (strcmp(p, "/api/v1/snapshots") == 0) {
        json_t *s = parse(SNAP);
        json_object_del(s, "dqs");
        http_reply_data(res, json_pack("[o]", s));
    } else if (strncmp(p, snap_pfx, strlen(snap_pfx)) == 0) {
        if (strcmp(p + strlen(snap_pfx), "3") == 0) {
            http_reply_data(res, parse(SNAP));
        } else {
            http_reply_error(res, 404, "not_found", "no such snapshot");
        }
    } else if (strcmp(p, "/api/v1/triggers") == 0) {
        http_reply_data(res, parse(TRIGGERS));
    } else if (strncmp(p, probe_pfx, strlen(probe_pfx)) == 0 && strstr(p, "/triggers")) {
        /* GET …/NAME/triggers: checkout has a lost trigger; PUT …/triggers/KIND answers
         * the list with the body applied */
        char name[128];
        snprintf(name, sizeof name, "%s", p + strlen(probe_pfx));
        char *slash = strchr(name, '/');
        const char *kind = strchr(slash ? slash + 1 : "", '/');
        if (slash) {
            *slash = '\0';
        }
        json_t *list = json_array();
        if (strcmp(name, "checkout") == 0) {
            json_array_append_new(list,
                                  json_pack("{s:I,s:s,s:s,s:f,s:i,s:i,s:b,s:b,s:i,s:i}", "id",
                                            (json_int_t)1, "probe", "checkout", "kind", "lost",
                                            "threshold", 0.01, "fire_after", 4, "clear_after", 6,
                                            "enabled", 0, "fired", 0, "bad", 0, "good", 3));
        }
        if (req->method == HTTP_PUT && kind) {
            free(f->put_body);
            f->put_body = strdup(req->body);
            json_t *put = json_loadb(req->body, req->body_len, 0, NULL);
            json_t *t = NULL;
            for (size_t i = 0; i < json_array_size(list); i++) {
                if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "kind")),
                           kind + 1) == 0) {
                    t = json_array_get(list, i);
                }
            }
            if (!t) {
                t = json_pack("{s:I,s:s,s:s,s:n,s:i,s:i,s:b,s:b,s:i,s:i}", "id", (json_int_t)5,
                              "probe", name, "kind", kind + 1, "threshold", "fire_after", 3,
                              "clear_after", 5, "enabled", 1, "fired", 0, "bad", 0, "good", 0);
                json_array_append_new(list, t);
            }
            json_object_update_existing(t, put);
            json_decref(put);
        }
        http_reply_data(res, list);
    } else {
        http_reply_error(res, 404, "not_found", "no route");
    }
}

static const char *out_of(struct run *r) {
    return r->out.buf ? r->out.buf : "";
}

static const char *err_of(struct run *r) {
    return r->err.buf ? r->err.buf : "";
}

static void test_diagnose(struct fake *f, char *server) {
    struct run r;
    /* without --wait: the id and how to follow it; the body names node, strategy, who */
    setenv("USER", "tester", 1);
    CHECK_INT(
        run_cmd(&r, dqctl_diagnose_main, 6,
                (char *[]){"diagnose", "checkout", "--strategy", "bisect", "--server", server}),
        0);
    CHECK_STR(f->method, "POST");
    CHECK_STR(f->path, "/api/v1/diagnose");
    json_t *b = json_loads(f->body, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(b, "node")), "checkout");
    CHECK_STR(json_string_value(json_object_get(b, "strategy")), "bisect");
    CHECK_STR(json_string_value(json_object_get(b, "requested_by")), "tester via dqctl");
    json_decref(b);
    CHECK_STR(out_of(&r), "investigation 7 opened at checkout (latency problem, strategy bisect)\n"
                          "follow it with `dqctl log 7`, or wait for its verdict with `dqctl "
                          "diagnose checkout --wait`\n");
    run_free(&r);
    /* no NODE: the body has none (dqd picks the root) */
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 3, (char *[]){"diagnose", "--server", server}), 0);
    b = json_loads(f->body, 0, NULL);
    CHECK(json_object_get(b, "node") == NULL);
    CHECK(json_object_get(b, "strategy") == NULL);
    json_decref(b);
    run_free(&r);

    /* --wait: one line per new step as it appears, then the verdict; localized → 1 */
    f->gets_of_7 = 0;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "checkout", "--wait", "--server", server}),
              DQCTL_EXIT_PROBLEM);
    CHECK_INT(f->gets_of_7, 3);
    const char *t = out_of(&r);
    CHECK_INT(count_of(t, "  opened   checkout: "), 1);
    CHECK_INT(count_of(t, "  expand   checkout [validate, pay, ship]: "), 1);
    CHECK_INT(count_of(t, "  verdict  localized at pay: pay holds"), 1);
    const char *v = strstr(t, "\nverdict: localized at pay (investigation 7: latency problem at "
                              "checkout, 466 ms)\n");
    CHECK(v != NULL);
    CHECK(v && strstr(t, "  verdict  pay") < v); /* progress before the summary */
    CHECK(strstr(t, "* pay") != NULL);
    CHECK_STR(err_of(&r), "");
    run_free(&r);

    /* --json --wait: only the finished investigation, as one line of JSON */
    f->gets_of_7 = 0;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 6,
                      (char *[]){"diagnose", "checkout", "--wait", "--json", "--server", server}),
              DQCTL_EXIT_PROBLEM);
    json_t *j = json_loads(out_of(&r), 0, NULL);
    CHECK(json_is_object(j));
    CHECK_STR(json_string_value(json_object_get(j, "verdict")), "localized");
    CHECK_INT(json_array_size(json_object_get(j, "hypotheses")), 3);
    CHECK_INT(count_of(out_of(&r), "\n"), 1);
    json_decref(j);
    run_free(&r);

    /* already open: says so and follows it */
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 7,
                      (char *[]){"diagnose", "busy", "--wait", "--strategy", "bisect", "--server",
                                 server}),
              DQCTL_EXIT_PROBLEM);
    CHECK(strstr(out_of(&r),
                 "investigation 8 is already open at busy (latency problem, "
                 "strategy children, opened 2026-11-22 03:42:39.935 UTC); following "
                 "it\n(it keeps its strategy; --strategy bisect applies to new ones)\n") ==
          out_of(&r));
    CHECK(strstr(out_of(&r), "\nverdict: localized at pay (investigation 8") != NULL);
    run_free(&r);

    /* already open, and it ends diffuse (a trigger's, for another cause): asked again, once,
     * and the new investigation's verdict is the answer */
    f->posts_of_stale = 0;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "stale", "--wait", "--server", server}),
              DQCTL_EXIT_PROBLEM);
    CHECK_INT(f->posts_of_stale, 2);
    CHECK(strstr(out_of(&r), "investigation 12 is already open at stale") == out_of(&r));
    CHECK(strstr(out_of(&r), "investigation 12, which this diagnosis followed, ended diffuse "
                             "(`dqctl log 12` shows it); diagnosing afresh\n") != NULL);
    CHECK(strstr(out_of(&r), "verdict: diffuse") == NULL);
    CHECK(strstr(out_of(&r), "\nverdict: localized at pay (investigation 13") != NULL);
    run_free(&r);
    /* the same without --wait: nothing followed, nothing asked again */
    f->posts_of_stale = 0;
    CHECK_INT(
        run_cmd(&r, dqctl_diagnose_main, 4, (char *[]){"diagnose", "stale", "--server", server}),
        DQCTL_EXIT_OK);
    CHECK_INT(f->posts_of_stale, 1);
    run_free(&r);

    /* inconclusive → 4; aborted → 4 with a message */
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "vague", "--wait", "--server", server}),
              DQCTL_EXIT_NO_VERDICT);
    CHECK(strstr(out_of(&r), "verdict: inconclusive at checkout") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "broken", "--wait", "--server", server}),
              DQCTL_EXIT_NO_VERDICT);
    CHECK(strstr(err_of(&r), "investigation 10 ended without a verdict (aborted)") != NULL);
    run_free(&r);

    /* --timeout (a bare number is milliseconds): gives up with 4, and says the
     * investigation goes on. The timeout must leave room for several polls (20 ms apart):
     * ten polls as long as one takes on this machine now (measured with `dqctl log 11`, the
     * same GET), at least 1 s and at most 10 s (a sanitizer build beside another whole test
     * run once fitted only the POST and one poll into the 200 ms this case used to allow) */
    double t0 = mono_s();
    CHECK_INT(run_cmd(&r, dqctl_log_main, 4, (char *[]){"log", "11", "--server", server}), 0);
    run_free(&r);
    long timeout_ms =
        lround(fmin(10000.0, fmax(1000.0, ceil(10.0 * (1e3 * (mono_s() - t0) + 20.0)))));
    char timeout_arg[24], want[160], dur[DQ_DURATION_TEXT];
    snprintf(timeout_arg, sizeof timeout_arg, "%ld", timeout_ms);
    snprintf(want, sizeof want, "no verdict after %s (--timeout); investigation 11 goes on in dqd",
             dq_format_duration((double)timeout_ms * 1e-3, dur, sizeof dur));
    int before = f->requests;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 7,
                      (char *[]){"diagnose", "slow", "--wait", "--timeout", timeout_arg, "--server",
                                 server}),
              DQCTL_EXIT_NO_VERDICT);
    CHECK(strstr(err_of(&r), want) != NULL);
    CHECK_INT(count_of(out_of(&r), "  opened "), 1); /* printed once over several polls */
    CHECK(f->requests - before >= 3);                /* the POST and at least two polls */
    run_free(&r);
    /* asked again after a diffuse end, within the same --timeout: the message names the
     * person's --timeout, not the time that was left for the second request */
    f->posts_of_stale = 0;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 7,
                      (char *[]){"diagnose", "stale_slow", "--wait", "--timeout", "300", "--server",
                                 server}),
              DQCTL_EXIT_NO_VERDICT);
    CHECK_INT(f->posts_of_stale, 2);
    CHECK(strstr(err_of(&r), "no verdict after 300 ms (--timeout); investigation 11 goes on in "
                             "dqd") != NULL);
    run_free(&r);

    /* dqd refuses: its message, 3 */
    CHECK_INT(
        run_cmd(&r, dqctl_diagnose_main, 4, (char *[]){"diagnose", "nowhere", "--server", server}),
        DQCTL_EXIT_API);
    CHECK(strstr(err_of(&r), "no node named \"nowhere\" in the diagram (HTTP 404") != NULL);
    run_free(&r);

    /* usage errors never touch the network */
    before = f->requests;
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "--strategy", "dfs", "--server", server}),
              DQCTL_EXIT_USAGE);
    CHECK(strstr(err_of(&r), "children or bisect") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 5,
                      (char *[]){"diagnose", "--timeout", "5", "--server", server}),
              DQCTL_EXIT_USAGE);
    CHECK(strstr(err_of(&r), "only goes with --wait") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_diagnose_main, 6,
                      (char *[]){"diagnose", "--wait", "--timeout", "soon", "--server", server}),
              DQCTL_EXIT_USAGE);
    run_free(&r);
    CHECK_INT(f->requests, before);
}

static void test_other_commands(struct fake *f, char *server) {
    struct run r;
    CHECK_INT(run_cmd(&r, dqctl_why_main, 4, (char *[]){"why", "pay", "--server", server}), 0);
    CHECK_STR(f->method, "GET");
    CHECK_STR(f->path, "/api/v1/why/pay");
    CHECK(starts_with(out_of(&r), "pay was enabled at"));
    CHECK(strstr(out_of(&r), "<- enabled pay") != NULL);
    run_free(&r);
    CHECK_INT(
        run_cmd(&r, dqctl_why_main, 5, (char *[]){"why", "a b", "--server", server, "--json"}), 0);
    CHECK_STR(f->path, "/api/v1/why/a b"); /* escaped by dqctl, decoded by the server */
    json_t *j = json_loads(out_of(&r), 0, NULL);
    CHECK_STR(json_string_value(json_array_get(json_object_get(j, "sentences"), 0)),
              "No investigation enabled a b: dqd has never seen it.");
    json_decref(j);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_log_main, 7,
                      (char *[]){"log", "--open", "--limit", "3", "--server", server, "--json"}),
              0);
    CHECK_STR(f->path, "/api/v1/investigations");
    CHECK_STR(f->q_open, "1");
    CHECK_STR(f->q_limit, "3");
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_log_main, 3, (char *[]){"log", "--server", server}), 0);
    CHECK_STR(f->q_open, "");
    CHECK_STR(f->q_limit, "50");
    CHECK(strstr(out_of(&r), "    1  2026-11-22 03:42:39.935") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_log_main, 4, (char *[]){"log", "1", "--server", server}), 0);
    CHECK_STR(f->path, "/api/v1/investigations/1");
    CHECK(strstr(out_of(&r), "\n      #3 verdict: localized at pay") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_log_main, 4, (char *[]){"log", "99", "--server", server}),
              DQCTL_EXIT_API);
    CHECK(strstr(err_of(&r), "no such investigation (HTTP 404") != NULL);
    run_free(&r);

    CHECK_INT(run_cmd(&r, dqctl_snapshots_main, 3, (char *[]){"snapshots", "--server", server}), 0);
    CHECK(strstr(out_of(&r), "trigger load fired") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_snapshot_main, 5,
                      (char *[]){"snapshot", "3", "--csv", "--server", server}),
              0);
    CHECK_STR(f->path, "/api/v1/snapshots/3");
    CHECK(starts_with(out_of(&r), "probe,kind,window_start,window_end,bin,time_s,pdf,cdf\n"));
    CHECK_INT(count_of(out_of(&r), "\n"), 9);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_snapshot_main, 4, (char *[]){"snapshot", "3", "--server", server}),
              0);
    CHECK(strstr(out_of(&r), "checkout observed") != NULL);
    run_free(&r);

    /* trigger: reads the current one, sends it back with the change */
    int before = f->requests;
    CHECK_INT(
        run_cmd(&r, dqctl_trigger_main, 7,
                (char *[]){"trigger", "checkout", "lost", "--threshold", "2%", "--server", server}),
        0);
    CHECK_INT(f->requests - before, 2);
    CHECK_STR(f->method, "PUT");
    CHECK_STR(f->path, "/api/v1/probes/checkout/triggers/lost");
    json_t *b = json_loads(f->put_body, 0, NULL);
    CHECK_NEAR(json_number_value(json_object_get(b, "threshold")), 0.02, 1e-12);
    CHECK_INT(json_integer_value(json_object_get(b, "fire_after")), 4);
    CHECK_INT(json_integer_value(json_object_get(b, "clear_after")), 6);
    CHECK(json_is_true(json_object_get(b, "enabled")));
    json_decref(b);
    CHECK(strstr(out_of(&r), "lost > 2%") != NULL);
    CHECK_INT(count_of(out_of(&r), "\n"), 2); /* the titles and the one trigger */
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_trigger_main, 6,
                      (char *[]){"trigger", "pay", "cv", "--disable", "--server", server}),
              0);
    b = json_loads(f->put_body, 0, NULL);
    CHECK_INT(json_object_size(b), 1);
    CHECK(json_is_false(json_object_get(b, "enabled")));
    json_decref(b);
    run_free(&r);
    before = f->requests;
    CHECK_INT(run_cmd(&r, dqctl_trigger_main, 5,
                      (char *[]){"trigger", "pay", "latency", "--server", server}),
              DQCTL_EXIT_USAGE);
    CHECK(strstr(err_of(&r), "qta, load, lost, divergence or cv") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_trigger_main, 7,
                      (char *[]){"trigger", "pay", "cv", "--fire-after", "0", "--server", server}),
              DQCTL_EXIT_USAGE);
    run_free(&r);
    CHECK_INT(f->requests, before);

    /* triggers: exit 1 while an enabled trigger is fired */
    CHECK_INT(run_cmd(&r, dqctl_triggers_main, 3, (char *[]){"triggers", "--server", server}),
              DQCTL_EXIT_PROBLEM);
    CHECK_STR(f->path, "/api/v1/triggers");
    run_free(&r);
    CHECK_INT(
        run_cmd(&r, dqctl_triggers_main, 4, (char *[]){"triggers", "checkout", "--server", server}),
        0);
    CHECK_STR(f->path, "/api/v1/probes/checkout/triggers");
    CHECK(strstr(out_of(&r), "quiet (3 good") != NULL);
    run_free(&r);
    CHECK_INT(run_cmd(&r, dqctl_triggers_main, 4, (char *[]){"triggers", "x", "--server", server}),
              0);
    CHECK(strstr(out_of(&r), "no triggers on x") != NULL);
    run_free(&r);

    /* --help everywhere: exit 0, the usage line, the common options */
    int (*mains[])(int, char **) = {dqctl_diagnose_main,  dqctl_why_main,      dqctl_log_main,
                                    dqctl_snapshots_main, dqctl_snapshot_main, dqctl_trigger_main,
                                    dqctl_triggers_main};
    before = f->requests;
    for (size_t i = 0; i < sizeof mains / sizeof mains[0]; i++) {
        CHECK_INT(run_cmd(&r, mains[i], 2, (char *[]){"x", "--help"}), 0);
        CHECK(starts_with(out_of(&r), "usage: dqctl "));
        CHECK(strstr(out_of(&r), "--server URL") != NULL);
        CHECK_INT(count_of(out_of(&r), "Exit status"), 1);
        run_free(&r);
    }
    CHECK_INT(f->requests, before);
}

static void test_against_fake(void) {
    struct fake f;
    memset(&f, 0, sizeof f);
    f.port = fake_dqd_start(&f.dqd, fake_handler, &f);
    CHECK(f.port > 0);
    char server[64];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", f.port);
    dqctl_log_set_poll_interval(0.02);
    test_diagnose(&f, server);
    test_other_commands(&f, server);
    fake_dqd_stop(&f.dqd);
    free(f.body);
    free(f.put_body);
}

static const struct check_case cases[] = {
    CHECK_CASE(parse_args),      CHECK_CASE(verdict_exit),
    CHECK_CASE(trigger_body),    CHECK_CASE(render_progress_and_verdict),
    CHECK_CASE(render_why),      CHECK_CASE(render_log),
    CHECK_CASE(render_culprits), CHECK_CASE(render_snapshot),
    CHECK_CASE(render_triggers), CHECK_CASE(against_fake),
};

CHECK_MAIN(cases)
