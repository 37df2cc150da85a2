/*
 * test_settings.c: the settings table (controller/settings.h).
 *
 * Defaults, every flag, precedence flags > config file > defaults, the JSON sections,
 * --print-config round trips, and tables of bad input (flags and JSON documents), each
 * with the error code and a piece of the message that must name what is wrong.
 */
#include "settings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dq_error.h"

static struct dqd_config cfg, cfg2;

/* Runs settings_parse_args on a NULL-terminated list of flags. */
static int run_args(struct dqd_config *c, enum settings_action *act, const char *const *flags) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"dqd";
    for (int i = 0; flags[i] && argc < 31; i++) {
        argv[argc++] = (char *)flags[i];
    }
    argv[argc] = NULL;
    return settings_parse_args(c, argc, argv, act);
}

static int contains(const char *hay, const char *needle) {
    return strstr(hay, needle) != NULL;
}

/* Writes text to a fresh temporary file; returns its path (static buffer per slot). */
static const char *temp_file(int slot, const char *text, size_t len) {
    static char paths[4][64];
    snprintf(paths[slot], sizeof paths[slot], "/tmp/dqd_settings_test_%d_%d.json", (int)getpid(),
             slot);
    FILE *f = fopen(paths[slot], "wb");
    if (!f) {
        return NULL;
    }
    fwrite(text, 1, len, f);
    fclose(f);
    return paths[slot];
}

static void test_defaults(void) {
    enum settings_action act_of_margin;
    settings_defaults(&cfg);
    CHECK_STR(cfg.listen, "127.0.0.1:7400");
    CHECK_STR(cfg.http, "127.0.0.1:7401");
    CHECK_STR(cfg.db, "./dqd.db");
    CHECK_STR(cfg.diagram, "");
    CHECK_STR(cfg.config, "");
    CHECK_INT(cfg.window_ms, 1000);
    CHECK_INT(cfg.lag_ms, -1);
    CHECK_INT(cfg.ring, 60);
    CHECK_NEAR(cfg.default_dmax_ms, 1024, 0);
    CHECK_INT(cfg.default_bins, 1024);
    CHECK_INT(cfg.log_level, DQD_LOG_INFO);
    CHECK_INT(cfg.legacy_commands, 0);
    CHECK_INT(cfg.n_wrappers, 0);
    CHECK_INT(cfg.n_probes, 0);
    /* the search's tunables: the table's defaults are search_params_init's */
    struct search_params sp;
    search_params_init(&sp);
    CHECK_NEAR(cfg.search.min_lead, sp.min_lead, 0);
    CHECK_NEAR(cfg.search.z, sp.z, 0);
    CHECK_INT(settings_finish(&cfg), 0);
    CHECK_INT(cfg.lag_ms, 1000);
    const char *margin[] = {"--near-tie-margin", "0.25", NULL};
    CHECK_INT(run_args(&cfg, &act_of_margin, margin), 0);
    CHECK_NEAR(cfg.search.min_lead, 0.25, 0);
    CHECK(settings_set(&cfg, "near_tie_margin", "1.5") < 0); /* 0 … 1 */
    CHECK_NEAR(cfg.search.min_lead, 0.25, 0);

    enum settings_action act = SETTINGS_HELP;
    const char *none[] = {NULL};
    CHECK_INT(run_args(&cfg, &act, none), 0);
    CHECK_INT(act, SETTINGS_RUN);
    CHECK_INT(cfg.lag_ms, 1000);
    CHECK_STR(settings_log_level_name(DQD_LOG_DEBUG), "debug");
    CHECK_STR(settings_log_level_name(7), "?");
}

static void test_flags(void) {
    enum settings_action act;
    const char *flags[] = {"--listen",
                           "0.0.0.0:9000",
                           "--http=[::1]:0",
                           "--db",
                           "/tmp/x.db",
                           "--diagram",
                           "shop.dq",
                           "--window",
                           "2000",
                           "--lag=500",
                           "--ring",
                           "10",
                           "--default-dmax-ms",
                           "0.25",
                           "--default-bins",
                           "256",
                           "--log-level",
                           "debug",
                           "--legacy-commands",
                           "on",
                           NULL};
    CHECK_INT(run_args(&cfg, &act, flags), 0);
    CHECK_INT(act, SETTINGS_RUN);
    CHECK_STR(cfg.listen, "0.0.0.0:9000");
    CHECK_STR(cfg.http, "[::1]:0");
    CHECK_STR(cfg.db, "/tmp/x.db");
    CHECK_STR(cfg.diagram, "shop.dq");
    CHECK_INT(cfg.window_ms, 2000);
    CHECK_INT(cfg.lag_ms, 500);
    CHECK_INT(cfg.ring, 10);
    CHECK_NEAR(cfg.default_dmax_ms, 0.25, 0);
    CHECK_INT(cfg.default_bins, 256);
    CHECK_INT(cfg.log_level, DQD_LOG_DEBUG);
    CHECK_INT(cfg.legacy_commands, 1);

    /* lag follows the window unless given; the last of a repeated flag wins. */
    const char *w[] = {"--window", "300", "--window", "400", NULL};
    CHECK_INT(run_args(&cfg, &act, w), 0);
    CHECK_INT(cfg.window_ms, 400);
    CHECK_INT(cfg.lag_ms, 400);

    /* Ranges are inclusive at both ends. */
    const char *edges[] = {"--window",       "10",   "--lag", "0", "--ring", "10000",
                           "--default-bins", "4096", NULL};
    CHECK_INT(run_args(&cfg, &act, edges), 0);
    CHECK_INT(cfg.window_ms, 10);
    CHECK_INT(cfg.lag_ms, 0);
    const char *top[] = {"--window", "3600000", "--default-dmax-ms", "4194304", NULL};
    CHECK_INT(run_args(&cfg, &act, top), 0);
    CHECK_INT(cfg.window_ms, 3600000);

    const char *pc[] = {"--print-config", "--window", "50", NULL};
    CHECK_INT(run_args(&cfg, &act, pc), 0);
    CHECK_INT(act, SETTINGS_PRINT_CONFIG);
    CHECK_INT(cfg.window_ms, 50);

    /* --help and --version win, even over bad flags. */
    const char *h[] = {"--window", "0", "--bogus", "--help", NULL};
    CHECK_INT(run_args(&cfg, &act, h), 0);
    CHECK_INT(act, SETTINGS_HELP);
    const char *v[] = {"stray", "--version", NULL};
    CHECK_INT(run_args(&cfg, &act, v), 0);
    CHECK_INT(act, SETTINGS_VERSION);

    CHECK_INT(settings_set(&cfg, "window", "1500"), 0);
    CHECK_INT(cfg.window_ms, 1500);

    /* durations take units as well as their bare milliseconds (issue 25 item 6) */
    const char *u[] = {"--window",
                       "250ms",
                       "--lag",
                       "0.5s",
                       "--default-dmax-ms",
                       "2s",
                       "--webhook-timeout",
                       "1.5s",
                       "--otlp-silence",
                       "1m",
                       "--auto-range-min-ms",
                       "500us",
                       NULL};
    CHECK_INT(run_args(&cfg, &act, u), 0);
    CHECK_INT(cfg.window_ms, 250);
    CHECK_INT(cfg.lag_ms, 500);
    CHECK_NEAR(cfg.default_dmax_ms, 2000, 1e-9);
    CHECK_INT(cfg.webhook_timeout_ms, 1500);
    CHECK_INT(cfg.otlp_silence_ms, 60000);
    CHECK_NEAR(cfg.auto_range_min_ms, 0.5, 1e-12);
    const char *uj = "{\"window\": \"2s\", \"lag\": 300, \"default_dmax_ms\": \"250ms\","
                     " \"probes\": {\"a\": {\"dmax_ms\": \"1.5s\"}, \"b\": {\"dmax_ms\": 64}}}";
    settings_defaults(&cfg);
    CHECK_INT(settings_load_json(&cfg, uj, strlen(uj), "u.json"), 0);
    CHECK_INT(cfg.window_ms, 2000);
    CHECK_INT(cfg.lag_ms, 300);
    CHECK_NEAR(cfg.default_dmax_ms, 250, 1e-9);
    const struct dqd_probe_config *pa = settings_find_probe(&cfg, "a");
    const struct dqd_probe_config *pb = settings_find_probe(&cfg, "b");
    CHECK(pa && fabs(pa->dmax_ms - 1500) < 1e-9 && pb && pb->dmax_ms == 64);
    CHECK_INT(settings_set(&cfg, "nope", "1"), DQ_ENOTFOUND);
    CHECK_INT(settings_set(&cfg, "help", "1"), DQ_ENOTFOUND);
    CHECK_INT(settings_set(&cfg, "ring", "0"), DQ_ERANGE);
    CHECK_STR(dq_last_error(), "ring: 0 is out of range [1, 10000]");
}

struct bad_flags {
    const char *args[6];
    int code;
    const char *msg; /* a piece of dq_last_error() */
};

static const struct bad_flags bad_flags[] = {
    {{"--window", "0"}, DQ_ERANGE, "--window: 0 is out of range [10, 3600000]"},
    {{"--window=3600001"}, DQ_ERANGE, "--window: 3600001 is out of range [10, 3600000]"},
    {{"--window", "99999999999999999999"}, DQ_ERANGE, "--window: 99999999999999999999 is out"},
    {{"--window", "10.5"},
     DQ_EINVAL,
     "--window: 10.5 is 10.5 ms, not a whole number of milliseconds"},
    {{"--window", "10.5ms"}, DQ_EINVAL, "--window: 10.5ms is 10.5 ms, not a whole number"},
    {{"--window", "5ms"}, DQ_ERANGE, "--window: 5ms is out of range [10, 3600000] ms"},
    {{"--window", "2h"}, DQ_EINVAL, "--window: \"2h\" is not a duration: milliseconds (250) or"},
    {{"--window", "1 s"}, DQ_EINVAL, "--window: \"1 s\" is not a duration"},
    {{"--window", " 100"}, DQ_EINVAL, "is not a duration"},
    {{"--window", ""}, DQ_EINVAL, "--window: \"\" is not a duration"},
    {{"--window"}, DQ_EINVAL, "--window: missing value"},
    {{"--window", "--lag", "5"}, DQ_EINVAL, "--window: missing value"},
    {{"--lag", "-1"}, DQ_ERANGE, "--lag: -1 is out of range [0, 3600000]"},
    {{"--ring", "0"}, DQ_ERANGE, "--ring: 0 is out of range [1, 10000]"},
    {{"--default-bins", "4097"}, DQ_ERANGE, "--default-bins: 4097 is out of range [1, 4096]"},
    {{"--default-dmax-ms", "0"}, DQ_ERANGE, "--default-dmax-ms: 0 is out of range"},
    {{"--default-dmax-ms", "abc"}, DQ_EINVAL, "--default-dmax-ms: \"abc\" is not a duration"},
    {{"--default-dmax-ms", "inf"}, DQ_EINVAL, "is not a duration"},
    {{"--default-dmax-ms", "1e9"},
     DQ_ERANGE,
     "--default-dmax-ms: 1000000000 is out of range [0.001, 4194304]"},
    {{"--log-level", "loud"}, DQ_EINVAL, "--log-level: \"loud\" is not one of error, warn"},
    {{"--listen", "7400"}, DQ_EINVAL, "--listen: \"7400\" is not HOST:PORT (missing :PORT)"},
    {{"--listen", "localhost:"}, DQ_EINVAL, "port must be 0 to 65535"},
    {{"--listen", "localhost:65536"}, DQ_EINVAL, "port must be 0 to 65535"},
    {{"--listen", "localhost:-1"}, DQ_EINVAL, "port must be 0 to 65535"},
    {{"--listen", "localhost:80a"}, DQ_EINVAL, "port must be 0 to 65535"},
    {{"--listen", ":7400"}, DQ_EINVAL, "empty host"},
    {{"--http", "::1:7401"}, DQ_EINVAL, "--http: \"::1:7401\" is not HOST:PORT (an IPv6 host"},
    {{"--http", "[::1]"}, DQ_EINVAL, "missing :PORT"},
    {{"--http", "[]:80"}, DQ_EINVAL, "empty [IPv6]"},
    {{"--http", "[::g]:80"}, DQ_EINVAL, "bad IPv6 address"},
    {{"--http", "[::1:80"}, DQ_EINVAL, "unclosed"},
    {{"--http", "local host:80"}, DQ_EINVAL, "bad character in host"},
    {{"--listen", "127.0.0.1:7000", "--http", "127.0.0.1:7000"}, DQ_EINVAL, "same address"},
    {{"--db", ""}, DQ_EINVAL, "--db: must not be empty"},
    {{"--bogus"}, DQ_EINVAL, "unknown flag --bogus"},
    {{"--bogus=1"}, DQ_EINVAL, "unknown flag --bogus (see --help)"},
    /* a removed setting says what replaced it */
    {{"--ingest-junk-timeout", "2000"},
     DQ_EINVAL,
     "--ingest-junk-timeout: it was removed: an ingest connection that sends nothing is a quiet "
     "wrapper and is kept"},
    {{"--ingest-junk-timeout=2000"}, DQ_EINVAL, "remove it from the configuration"},
    {{"-w", "5"}, DQ_EINVAL, "unexpected argument \"-w\""},
    {{"stray"}, DQ_EINVAL, "unexpected argument \"stray\""},
    {{"--"}, DQ_EINVAL, "unexpected argument \"--\""},
    {{"--print-config=yes"}, DQ_EINVAL, "--print-config takes no value"},
    {{"--config", "/nonexistent/dqd.json"}, DQ_EIO, "--config: cannot open config file"},
};

static void test_bad_flags(void) {
    enum settings_action act;
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
        const struct bad_flags *b = &bad_flags[i];
        int r = run_args(&cfg, &act, b->args);
        CHECK_MSG(r == b->code && contains(dq_last_error(), b->msg),
                  "case %zu (%s): got %s \"%s\", want %s \"%s\"", i, b->args[0], dq_err_name(r),
                  dq_last_error(), dq_err_name(b->code), b->msg);
    }
    /* A long path does not fit its field. */
    char longpath[DQD_PATH_MAX + 10];
    memset(longpath, 'p', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    const char *lp[] = {"--db", longpath, NULL};
    CHECK_INT(run_args(&cfg, &act, lp), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "--db: longer than 1023 bytes"));
}

static void test_hostport(void) {
    char host[64];
    int port = -1;
    CHECK_INT(settings_split_hostport("127.0.0.1:7400", host, sizeof host, &port), 0);
    CHECK_STR(host, "127.0.0.1");
    CHECK_INT(port, 7400);
    CHECK_INT(settings_split_hostport("[::1]:0", host, sizeof host, &port), 0);
    CHECK_STR(host, "::1");
    CHECK_INT(port, 0);
    CHECK_INT(settings_split_hostport("my-host.example_1.com:65535", host, sizeof host, &port), 0);
    CHECK_STR(host, "my-host.example_1.com");
    CHECK_INT(port, 65535);
    CHECK_INT(settings_split_hostport("[fe80::1%eth0]:80", host, sizeof host, &port), DQ_EINVAL);
    CHECK_INT(settings_split_hostport("abcdefgh:1", host, 4, &port), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "host too long"));
}

static const char good_json[] =
    "{\n"
    "  \"listen\": \"0.0.0.0:7500\",\n"
    "  \"http\": \"127.0.0.1:0\",\n"
    "  \"db\": \"/var/lib/dqd/dqd.db\",\n"
    "  \"diagram\": null,\n"
    "  \"window\": 5000,\n"
    "  \"lag\": 300,\n"
    "  \"ring\": 12,\n"
    "  \"default_dmax_ms\": 512,\n"
    "  \"default_bins\": 200,\n"
    "  \"log_level\": \"warn\",\n"
    "  \"wrappers\": [\"127.0.0.1:8081\", \"[::1]:8082\"],\n"
    "  \"probes\": {\n"
    "    \"checkout\": {\"dmax_ms\": 200, \"enabled\": true,\n"
    "                 \"qta\": {\"points\": [[0.5, 0.05], [0.95, 0.15]], \"max_lost\": 0.01}},\n"
    "    \"payment\": {\"dmax_ms\": 0.25, \"bins\": 640, \"enabled\": false},\n"
    "    \"bare\": {},\n"
    "    \"stock\": {\"mfa\": \"shop_db:stock/1\"},\n"
    "    \"orders\": {\"mfa\": \"Elixir.Shop.Orders:place/1\"},\n"
    "    \"doit\": {\"mfa\": \"'my-mod':'do it'/2\"},\n"
    "    \"odd\": {\"mfa\": \"'a\\\\\\\\b\\\\'\\\"':valid?/0\"},\n"
    "    \"noqta\": {\"qta\": null}\n"
    "  }\n"
    "}\n";

static void test_json(void) {
    settings_defaults(&cfg);
    CHECK_INT(settings_load_json(&cfg, good_json, strlen(good_json), "t.json"), 0);
    CHECK_STR(cfg.listen, "0.0.0.0:7500");
    CHECK_STR(cfg.http, "127.0.0.1:0");
    CHECK_STR(cfg.db, "/var/lib/dqd/dqd.db");
    CHECK_STR(cfg.diagram, "");
    CHECK_INT(cfg.window_ms, 5000);
    CHECK_INT(cfg.lag_ms, 300);
    CHECK_INT(cfg.ring, 12);
    CHECK_NEAR(cfg.default_dmax_ms, 512, 0);
    CHECK_INT(cfg.default_bins, 200);
    CHECK_INT(cfg.log_level, DQD_LOG_WARN);
    CHECK_INT(cfg.n_wrappers, 2);
    CHECK_STR(cfg.wrappers[0], "127.0.0.1:8081");
    CHECK_STR(cfg.wrappers[1], "[::1]:8082");
    CHECK_INT(cfg.n_probes, 8);
    const struct dqd_probe_config *st = settings_find_probe(&cfg, "stock");
    CHECK(st && strcmp(st->mfa, "shop_db:stock/1") == 0 && st->enabled == -1);
    /* any Erlang atom: Elixir's modules, quoted atoms (issue 25) */
    st = settings_find_probe(&cfg, "orders");
    CHECK(st && strcmp(st->mfa, "Elixir.Shop.Orders:place/1") == 0);
    st = settings_find_probe(&cfg, "doit");
    CHECK(st && strcmp(st->mfa, "'my-mod':'do it'/2") == 0);
    st = settings_find_probe(&cfg, "odd");
    CHECK(st && strcmp(st->mfa, "'a\\\\b\\'\"':valid?/0") == 0);
    const struct dqd_probe_config *c = settings_find_probe(&cfg, "checkout");
    CHECK(c != NULL);
    if (c) {
        CHECK_NEAR(c->dmax_ms, 200, 0);
        CHECK_INT(c->bins, 0);
        CHECK_INT(c->enabled, 1);
        CHECK_INT(c->has_qta, 1);
        CHECK_INT(c->qta.n, 2);
        CHECK_NEAR(c->qta.p[0], 0.5, 0);
        CHECK_NEAR(c->qta.t[0], 0.05, 0);
        CHECK_NEAR(c->qta.p[1], 0.95, 0);
        CHECK_NEAR(c->qta.t[1], 0.15, 0);
        CHECK_NEAR(c->qta.max_lost, 0.01, 0);
    }
    const struct dqd_probe_config *p = settings_find_probe(&cfg, "payment");
    CHECK(p && p->bins == 640 && p->enabled == 0 && p->dmax_ms == 0.25 && !p->has_qta);
    const struct dqd_probe_config *b = settings_find_probe(&cfg, "bare");
    CHECK(b && b->bins == 0 && b->enabled == -1 && b->dmax_ms == 0 && !b->has_qta && !b->mfa[0]);
    CHECK(settings_find_probe(&cfg, "noqta") != NULL);
    CHECK(settings_find_probe(&cfg, "missing") == NULL);

    /* A later document replaces the sections and keeps keys it does not mention. */
    const char *more = "{\"wrappers\": [], \"probes\": {\"x\": {\"bins\": 1}}, \"ring\": 3}";
    CHECK_INT(settings_load_json(&cfg, more, strlen(more), "more.json"), 0);
    CHECK_INT(cfg.n_wrappers, 0);
    CHECK_INT(cfg.n_probes, 1);
    CHECK_INT(cfg.ring, 3);
    CHECK_INT(cfg.window_ms, 5000);

    /* Numbers: reals are fine where the setting is a number, lag may be null. */
    const char *num = "{\"default_dmax_ms\": 0.5, \"lag\": null, \"window\": 20}";
    CHECK_INT(settings_load_json(&cfg, num, strlen(num), "n.json"), 0);
    CHECK_NEAR(cfg.default_dmax_ms, 0.5, 0);
    CHECK_INT(settings_finish(&cfg), 0);
    CHECK_INT(cfg.lag_ms, 20);
}

struct bad_json {
    const char *text;
    int code;
    const char *msg;
};

static const struct bad_json bad_json[] = {
    {"{\n  \"window\": 10,\n  \"lag\" 5\n}", DQ_EPARSE, "b.json:3:9: "},
    {"{\"window\": 10,}", DQ_EPARSE, "b.json:1:"},
    {"", DQ_EPARSE, "b.json:1:0: "},
    {"{\"window\": 10", DQ_EPARSE, "b.json:1:"},
    {"{\"window\": 1, \"window\": 2}", DQ_EPARSE, "duplicate object key"},
    {"[1, 2]", DQ_EPARSE, "must be a JSON object, not an array"},
    {"\"listen\"", DQ_EPARSE, "b.json:"},
    {"{\"windw\": 1000}", DQ_EINVAL, "b.json: \"windw\": unknown key"},
    {"{\"ingest_junk_timeout\": 2000}", DQ_EINVAL,
     "\"ingest_junk_timeout\": it was removed: an ingest connection that sends nothing"},
    {"{\"window\": \"ten\"}", DQ_EINVAL, "b.json: \"window\": \"ten\" is not a duration"},
    {"{\"window\": 1000.5}", DQ_EINVAL,
     "\"window\": expected an integer (milliseconds) or a duration string (\"250ms\", \"1.5s\"), "
     "got a real number"},
    {"{\"window\": 1000.0}", DQ_EINVAL, "or a duration string (\"250ms\", \"1.5s\"), got a real"},
    {"{\"window\": null}", DQ_EINVAL, "or a duration string (\"250ms\", \"1.5s\"), got null"},
    {"{\"window\": 5}", DQ_ERANGE, "b.json: \"window\": 5 is out of range [10, 3600000]"},
    {"{\"window\": 99999999999999999}", DQ_ERANGE, "\"window\": 99999999999999999 is out"},
    {"{\"listen\": 7400}", DQ_EINVAL, "\"listen\": expected a string, got an integer"},
    {"{\"listen\": null}", DQ_EINVAL, "\"listen\": expected a string, got null"},
    {"{\"listen\": \"nohost\"}", DQ_EINVAL, "\"listen\": \"nohost\" is not HOST:PORT"},
    {"{\"db\": \"\"}", DQ_EINVAL, "\"db\": must not be empty"},
    {"{\"db\": \"a\\u0000b\"}", DQ_EPARSE, "b.json:1:"},
    {"{\"default_dmax_ms\": \"x\"}", DQ_EINVAL, "\"default_dmax_ms\": \"x\" is not a duration"},
    {"{\"default_dmax_ms\": true}", DQ_EINVAL,
     "expected a number (milliseconds) or a duration string (\"500us\", \"2s\"), got a boolean"},
    {"{\"window\": 1.5}", DQ_EINVAL,
     "\"window\": expected an integer (milliseconds) or a duration string"},
    {"{\"window\": \"10.5ms\"}", DQ_EINVAL, "not a whole number of milliseconds"},
    {"{\"probes\": {\"a\": {\"dmax_ms\": \"soon\"}}}", DQ_EINVAL, ".dmax_ms: \"soon\" is not a"},
    {"{\"default_dmax_ms\": -1}", DQ_ERANGE, "\"default_dmax_ms\": -1 is out of range"},
    {"{\"log_level\": 1}", DQ_EINVAL, "\"log_level\": expected a string, got an integer"},
    {"{\"log_level\": \"INFO\"}", DQ_EINVAL, "\"INFO\" is not one of error, warn, info, debug"},
    {"{\"legacy_commands\": true}", DQ_EINVAL, "\"legacy_commands\": expected a string"},
    {"{\"legacy_commands\": \"yes\"}", DQ_EINVAL, "\"yes\" is not one of off, on"},
    {"{\"config\": \"x.json\"}", DQ_EINVAL, "only valid as the command-line flag --config"},
    {"{\"help\": true}", DQ_EINVAL, "only valid as the command-line flag --help"},
    {"{\"wrappers\": \"127.0.0.1:8081\"}", DQ_EINVAL, "\"wrappers\": expected an array"},
    {"{\"wrappers\": [8081]}", DQ_EINVAL, "\"wrappers\"[0]: expected a \"HOST:PORT\" string"},
    {"{\"wrappers\": [\"a:1\", \"b\"]}", DQ_EINVAL, "\"wrappers\"[1]: \"b\" is not HOST:PORT"},
    {"{\"probes\": []}", DQ_EINVAL, "\"probes\": expected an object"},
    {"{\"probes\": {\"9x\": {}}}", DQ_EINVAL, "probe \"9x\": not a valid probe name"},
    {"{\"probes\": {\"a-b\": {}}}", DQ_EINVAL, "probe \"a-b\": not a valid probe name"},
    {"{\"probes\": {\"\": {}}}", DQ_EINVAL, "probe \"\": not a valid probe name"},
    {"{\"probes\": {\"a\": 5}}", DQ_EINVAL, "probe \"a\": expected an object, got an integer"},
    {"{\"probes\": {\"a\": {\"dmax\": 5}}}", DQ_EINVAL, "probe \"a\": unknown key \"dmax\""},
    {"{\"probes\": {\"a\": {\"mfa\": 5}}}", DQ_EINVAL, ".mfa: expected a string"},
    {"{\"probes\": {\"a\": {\"mfa\": \"Shop:f/1\"}}}", DQ_EINVAL,
     "\"Shop:f/1\" is not a function MOD:FUN/ARITY"},
    {"{\"probes\": {\"a\": {\"mfa\": \"shop:f\"}}}", DQ_EINVAL, "is not a function"},
    {"{\"probes\": {\"a\": {\"mfa\": \"shop:f/256\"}}}", DQ_EINVAL, "is not a function"},
    /* issue 25: why, in words; issue 26: the value shown escaped, on one line */
    {"{\"probes\": {\"a\": {\"mfa\": \"Shop.Orders:place/1\"}}}", DQ_EINVAL,
     "\"Shop.Orders:place/1\" is not a function MOD:FUN/ARITY: an unquoted module is "
     "[a-z][A-Za-z0-9_@.]* or an Elixir module Elixir.Alias"},
    {"{\"probes\": {\"a\": {\"mfa\": \"shop:f\\n/1\"}}}", DQ_EINVAL,
     "\"shop:f\\n/1\" is not a function MOD:FUN/ARITY"},
    {"{\"probes\": {\"a\": {\"mfa\": \"'a\\u0001b':f/1\"}}}", DQ_EINVAL,
     "\"'a\\x01b':f/1\" is not a function MOD:FUN/ARITY: a quoted atom holds a control "
     "character"},
    {"{\"probes\": {\"a\": {\"mfa\": \"'my-mod:f/1\"}}}", DQ_EINVAL, "a quote is not closed"},
    {"{\"probes\": {\"a\": {\"dmax_ms\": 0}}}", DQ_ERANGE, "probe \"a\".dmax_ms: 0 is out of"},
    {"{\"probes\": {\"a\": {\"dmax_ms\": true}}}", DQ_EINVAL,
     ".dmax_ms: expected a number (milliseconds) or a duration string"},
    {"{\"probes\": {\"a\": {\"bins\": 0}}}", DQ_ERANGE, ".bins: 0 is out of range [1, 4096]"},
    {"{\"probes\": {\"a\": {\"bins\": 2.5}}}", DQ_EINVAL, ".bins: expected an integer"},
    {"{\"probes\": {\"a\": {\"enabled\": 1}}}", DQ_EINVAL, ".enabled: expected true or false"},
    {"{\"probes\": {\"a\": {\"qta\": []}}}", DQ_EINVAL, ".qta: expected an object"},
    {"{\"probes\": {\"a\": {\"qta\": {}}}}", DQ_EINVAL, ".qta.points: missing"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": []}}}}", DQ_EINVAL,
     ".qta.points: expected a "
     "non-empty array"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5]]}}}}", DQ_EINVAL,
     ".qta.points[0]: expected a pair [p, t_s] of numbers"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, \"1\"]]}}}}", DQ_EINVAL,
     ".qta.points[0]: expected a pair"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[1.5, 1]]}}}}", DQ_ERANGE,
     ".qta.points[0]: probability 1.5 is out of range (0, 1]"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0, 1]]}}}}", DQ_ERANGE,
     "probability 0 is out of range"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 0]]}}}}", DQ_ERANGE,
     ".qta.points[0]: time 0 s must be positive"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 1], [0.9, 1]]}}}}", DQ_EINVAL,
     ".qta.points[1]: times must increase"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 1], [0.4, 2]]}}}}", DQ_EINVAL,
     ".qta.points[1]: probabilities must not decrease"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 1]], \"max_lost\": 2}}}}", DQ_ERANGE,
     ".qta.max_lost: 2 is out of range [0, 1]"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 1]], \"max_lost\": \"x\"}}}}", DQ_EINVAL,
     ".qta.max_lost: expected a number"},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.5, 1]], \"p99\": 1}}}}", DQ_EINVAL,
     ".qta: unknown key \"p99\""},
    {"{\"probes\": {\"a\": {\"qta\": {\"points\": [[0.01, 1], [0.02, 2], [0.03, 3], [0.04, 4], "
     "[0.05, 5], [0.06, 6], [0.07, 7], [0.08, 8], [0.09, 9], [0.1, 10], [0.11, 11], [0.12, 12], "
     "[0.13, 13], [0.14, 14], [0.15, 15], [0.16, 16], [0.17, 17]]}}}}",
     DQ_EFULL, ".qta.points: more than 16 points"},
};

static void test_bad_json(void) {
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        const struct bad_json *b = &bad_json[i];
        settings_defaults(&cfg);
        int r = settings_load_json(&cfg, b->text, strlen(b->text), "b.json");
        CHECK_MSG(r == b->code && contains(dq_last_error(), b->msg),
                  "case %zu: got %s \"%s\", want %s \"%s\"", i, dq_err_name(r), dq_last_error(),
                  dq_err_name(b->code), b->msg);
    }

    /* Caps: wrappers and probes beyond their arrays. */
    size_t cap = 64 * 1024;
    char *big = malloc(cap);
    CHECK(big != NULL);
    if (!big) {
        return;
    }
    size_t at = (size_t)snprintf(big, cap, "{\"wrappers\": [");
    for (int i = 0; i <= DQD_MAX_WRAPPERS; i++) {
        at += (size_t)snprintf(big + at, cap - at, "%s\"h:%d\"", i ? "," : "", i);
    }
    at += (size_t)snprintf(big + at, cap - at, "]}");
    settings_defaults(&cfg);
    CHECK_INT(settings_load_json(&cfg, big, at, "w.json"), DQ_EFULL);
    CHECK(contains(dq_last_error(), "\"wrappers\": more than 64 addresses"));

    at = (size_t)snprintf(big, cap, "{\"probes\": {");
    for (int i = 0; i <= DQD_MAX_CFG_PROBES; i++) {
        at += (size_t)snprintf(big + at, cap - at, "%s\"p%d\": {}", i ? "," : "", i);
    }
    at += (size_t)snprintf(big + at, cap - at, "}}");
    CHECK_INT(settings_load_json(&cfg, big, at, "p.json"), DQ_EFULL);
    CHECK(contains(dq_last_error(), "more than 256 probes"));
    /* Exactly at the caps is fine. */
    at = (size_t)snprintf(big, cap, "{\"probes\": {");
    for (int i = 0; i < DQD_MAX_CFG_PROBES; i++) {
        at += (size_t)snprintf(big + at, cap - at, "%s\"p%d\": {\"bins\": %d}", i ? "," : "", i,
                               i + 1);
    }
    at += (size_t)snprintf(big + at, cap - at, "}}");
    CHECK_INT(settings_load_json(&cfg, big, at, "p.json"), 0);
    CHECK_INT(cfg.n_probes, DQD_MAX_CFG_PROBES);
    CHECK_INT(cfg.probes[255].bins, 256);
    free(big);
}

static void test_config_file(void) {
    enum settings_action act;
    const char *file = "{\"window\": 5000, \"lag\": 300, \"ring\": 7, \"listen\": \"0.0.0.0:1\"}";
    const char *path = temp_file(0, file, strlen(file));
    CHECK(path != NULL);
    if (!path) {
        return;
    }
    /* flags > file > defaults */
    const char *a[] = {"--window", "2000", "--config", path, "--ring=9", NULL};
    CHECK_INT(run_args(&cfg, &act, a), 0);
    CHECK_INT(cfg.window_ms, 2000); /* flag */
    CHECK_INT(cfg.lag_ms, 300);     /* file */
    CHECK_INT(cfg.ring, 9);         /* flag */
    CHECK_STR(cfg.listen, "0.0.0.0:1");
    CHECK_STR(cfg.http, "127.0.0.1:7401"); /* default */
    CHECK_STR(cfg.config, path);

    /* An error in the file names the file and the key. */
    const char *badf = "{\n\"ring\": 0\n}";
    const char *bpath = temp_file(1, badf, strlen(badf));
    const char *b[] = {"--config", bpath, NULL};
    CHECK_INT(run_args(&cfg, &act, b), DQ_ERANGE);
    CHECK(contains(dq_last_error(), "--config: "));
    CHECK(contains(dq_last_error(), "\"ring\": 0 is out of range [1, 10000]"));
    const char *syn = "{\n\"ring\": 5,\n\"window\" 7\n}";
    const char *spath = temp_file(2, syn, strlen(syn));
    const char *s[] = {"--config", spath, NULL};
    CHECK_INT(run_args(&cfg, &act, s), DQ_EPARSE);
    CHECK(contains(dq_last_error(), ":3:"));

    /* Larger than the cap. */
    size_t n = DQD_CONFIG_MAX_BYTES + 10;
    char *huge = malloc(n);
    if (huge) {
        memset(huge, ' ', n);
        huge[0] = '{';
        huge[n - 1] = '}';
        const char *hpath = temp_file(3, huge, n);
        CHECK_INT(settings_load_file(&cfg, hpath), DQ_EFULL);
        CHECK(contains(dq_last_error(), "larger than"));
        free(huge);
        unlink(hpath);
    }
    unlink(path);
    unlink(bpath);
    unlink(spath);
}

/* settings_write_json into a string (caller frees). */
static char *dump(const struct dqd_config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        return NULL;
    }
    int r = settings_write_json(c, f);
    fclose(f);
    if (r != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void test_print_config_roundtrip(void) {
    /* The defaults. */
    settings_defaults(&cfg);
    CHECK_INT(settings_finish(&cfg), 0);
    char *d1 = dump(&cfg);
    CHECK(d1 != NULL);
    if (d1) {
        CHECK(contains(d1, "\"listen\": \"127.0.0.1:7400\""));
        CHECK(contains(d1, "\"diagram\": null"));
        CHECK(contains(d1, "\"lag\": 1000"));
        CHECK(contains(d1, "\"log_level\": \"info\""));
        CHECK(!contains(d1, "\"config\""));
        CHECK(!contains(d1, "help"));
        settings_defaults(&cfg2);
        CHECK_INT(settings_load_json(&cfg2, d1, strlen(d1), "dump"), 0);
        CHECK_INT(settings_finish(&cfg2), 0);
        char *d2 = dump(&cfg2);
        CHECK(d2 && strcmp(d1, d2) == 0);
        free(d2);
    }
    free(d1);

    /* A configuration with every section and awkward numbers. */
    settings_defaults(&cfg);
    CHECK_INT(settings_load_json(&cfg, good_json, strlen(good_json), "t.json"), 0);
    CHECK_INT(settings_set(&cfg, "default_dmax_ms", "0.1"), 0);
    CHECK_INT(settings_set(&cfg, "diagram", "/x/y.dq"), 0);
    CHECK_INT(settings_finish(&cfg), 0);
    d1 = dump(&cfg);
    CHECK(d1 != NULL);
    if (d1) {
        settings_defaults(&cfg2);
        CHECK_INT(settings_load_json(&cfg2, d1, strlen(d1), "dump"), 0);
        CHECK_INT(settings_finish(&cfg2), 0);
        char *d2 = dump(&cfg2);
        CHECK(d2 && strcmp(d1, d2) == 0);
        free(d2);
        CHECK_STR(cfg2.diagram, "/x/y.dq");
        CHECK(cfg2.default_dmax_ms == 0.1);
        CHECK_INT(cfg2.n_wrappers, 2);
        CHECK_STR(cfg2.wrappers[1], "[::1]:8082");
        CHECK_INT(cfg2.n_probes, 8);
        for (int i = 0; i < cfg.n_probes; i++) {
            const struct dqd_probe_config *a = &cfg.probes[i];
            const struct dqd_probe_config *b = settings_find_probe(&cfg2, a->name);
            CHECK(b != NULL);
            if (!b) {
                continue;
            }
            CHECK(a->dmax_ms == b->dmax_ms && a->bins == b->bins && a->enabled == b->enabled);
            CHECK_STR(a->mfa, b->mfa);
            CHECK_INT(a->has_qta, b->has_qta);
            CHECK_INT(a->qta.n, b->qta.n);
            for (int j = 0; j < a->qta.n; j++) {
                CHECK(a->qta.p[j] == b->qta.p[j] && a->qta.t[j] == b->qta.t[j]);
            }
            CHECK(a->qta.max_lost == b->qta.max_lost);
        }
        /* And through the command line, as `dqd --config dump.json` would. */
        const char *path = temp_file(0, d1, strlen(d1));
        enum settings_action act;
        const char *a[] = {"--config", path, NULL};
        CHECK_INT(run_args(&cfg2, &act, a), 0);
        char *d3 = dump(&cfg2);
        CHECK(d3 && strcmp(d1, d3) == 0);
        free(d3);
        unlink(path);
    }
    free(d1);
}

static void test_generated_text(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        CHECK(0);
        return;
    }
    settings_print_help(f, "dqd");
    fclose(f);
    const char *flags[] = {"--listen HOST:PORT",
                           "--http HOST:PORT",
                           "--db PATH",
                           "--diagram PATH",
                           "--config PATH",
                           "--window DURATION",
                           "--lag DURATION",
                           "--ring N",
                           "--default-dmax-ms DURATION",
                           "--default-bins N",
                           "--log-level LEVEL",
                           "--print-config",
                           "--help",
                           "--version",
                           "(default: 127.0.0.1:7400)",
                           "(default: = window)",
                           "Usage: dqd"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        CHECK_MSG(buf && contains(buf, flags[i]), "help lacks %s", flags[i]);
    }
    /* every entry whole, however long (a fixed buffer once cut three mid-word): the long
     * ones end as their sentences do, with their defaults, once the wrapping is undone */
    char *flat = buf ? strdup(buf) : NULL;
    size_t k = 0;
    for (size_t i = 0; flat && flat[i]; i++) {
        if (flat[i] == '\n') { /* a wrapped line: newline and indent are one space */
            while (flat[i + 1] == ' ') {
                i++;
            }
            flat[k++] = ' ';
        } else {
            flat[k++] = flat[i];
        }
    }
    if (flat) {
        flat[k] = '\0';
    }
    const char *ends[] = {"changes are refused when --http is not a loopback address. (default: "
                          "none)",
                          "every name under it, `*` for any). Other Hosts get 403: a web page "
                          "cannot reach dqd through DNS rebinding. (default: none)",
                          "v2 wrappers and `wrappers` listeners always get commands. (default: "
                          "off)"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        CHECK_MSG(flat && contains(flat, ends[i]), "help cuts the entry ending \"%s\"", ends[i]);
    }
    free(flat);
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    if (!f) {
        CHECK(0);
        return;
    }
    settings_render_markdown(f);
    fclose(f);
    const char *rows[] = {"| `listen` | `--listen HOST:PORT` | host:port | port 0 … 65535 | "
                          "`127.0.0.1:7400` |",
                          "| `window` | `--window DURATION` | duration: whole ms (250), or with a "
                          "unit (250ms, 1.5s) | 10 … 3600000 | `1000` |",
                          "| `lag` | `--lag DURATION` | duration: whole ms (250), or with a unit "
                          "(250ms, 1.5s) | 0 … 3600000 | = window |",
                          "| `diagram` | `--diagram PATH` | path |  | none |",
                          "| `--print-config` |",
                          "### `wrappers`",
                          "### `probes`"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK_MSG(buf && contains(buf, rows[i]), "reference lacks %s", rows[i]);
    }
    /* The example config of the reference is a valid config. */
    const char *ex = buf ? strstr(buf, "```json\n") : NULL;
    const char *ex_end = ex ? strstr(ex + 8, "```") : NULL;
    CHECK(ex && ex_end);
    if (ex && ex_end) {
        settings_defaults(&cfg);
        CHECK_INT(settings_load_json(&cfg, ex + 8, (size_t)(ex_end - ex - 8), "example"), 0);
        CHECK_INT(cfg.window_ms, 5000);
        CHECK_INT(cfg.n_probes, 2);
        CHECK_INT(cfg.n_wrappers, 1);
    }
    /* So is the malformed JSON it quotes, with the message it quotes. */
    const char *mal = "{\n  \"ring\": 5,\n  \"window\" 7\n}";
    CHECK_INT(settings_load_json(&cfg, mal, strlen(mal), "dqd.json"), DQ_EPARSE);
    CHECK_STR(dq_last_error(), "dqd.json:3:12: ':' expected near '7'");
    CHECK(buf && contains(buf, dq_last_error()));
    free(buf);
}

/* issue 17: --otlp and its settings, the otlp_probes table and its errors, the round trip. */
static void test_otlp(void) {
    settings_defaults(&cfg);
    CHECK_STR(cfg.otlp, "");
    CHECK(cfg.otlp_lag_ms == 10000 && cfg.otlp_silence_ms == 15000);
    const char *const flags[] = {"--otlp", "127.0.0.1:4318", "--otlp-lag", "8000", NULL};
    enum settings_action act;
    CHECK_INT(run_args(&cfg, &act, flags), 0);
    CHECK_STR(cfg.otlp, "127.0.0.1:4318");
    CHECK(cfg.otlp_lag_ms == 8000);
    const char *const clash[] = {"--otlp", "127.0.0.1:7401", NULL};
    CHECK_INT(run_args(&cfg, &act, clash), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "--otlp 127.0.0.1:7401 is the address of --listen or --http"));
    const char *const lag[] = {"--otlp", "127.0.0.1:0", "--window", "100", NULL};
    CHECK_INT(run_args(&cfg, &act, lag), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "otlp_lag 10000 ms is more than 59 windows of 100 ms"));
    const char *const bad[] = {"--otlp", "nowhere", NULL};
    CHECK(run_args(&cfg, &act, bad) != 0);
    static const char rules[] =
        "{\"otlp\": \"127.0.0.1:0\", \"otlp_probes\": ["
        "{\"service\": \"shop\", \"span\": \"GET /cart*\", \"probe\": \"cart\"},"
        "{\"attributes\": {\"db.system\": \"postgres\", \"db.name\": \"orders\"}, "
        "\"probe\": \"pg\"}]}";
    settings_defaults(&cfg);
    CHECK_INT(settings_load_json(&cfg, rules, strlen(rules), "o.json"), 0);
    CHECK_INT(cfg.n_otlp_rules, 2);
    CHECK_STR(cfg.otlp_rules[0].span, "GET /cart*");
    CHECK_INT(cfg.otlp_rules[1].n_attrs, 2);
    CHECK_STR(cfg.otlp_rules[1].attr_value[0], "postgres");
    CHECK_INT(settings_finish(&cfg), 0);
    char *d1 = dump(&cfg);
    settings_defaults(&cfg2);
    CHECK(d1 && settings_load_json(&cfg2, d1, strlen(d1), "dump") == 0);
    char *d2 = dump(&cfg2);
    CHECK(d1 && d2 && strcmp(d1, d2) == 0);
    free(d1);
    free(d2);
    static const struct {
        const char *text, *msg;
    } bads[] = {
        {"{\"otlp_probes\": {}}", "an array"},
        {"{\"otlp_probes\": [{\"span\": \"x\"}]}", "\"probe\" is required"},
        {"{\"otlp_probes\": [{\"probe\": \"a-b\"}]}", "want a probe name"},
        {"{\"otlp_probes\": [{\"probe\": \"a\", \"nope\": 1}]}", "unknown key \"nope\""},
        {"{\"otlp_probes\": [{\"probe\": \"a\", \"service\": 5}]}", "want a string"},
        {"{\"otlp_probes\": [{\"probe\": \"a\", \"attributes\": {\"k\": 1}}]}", "want a string"},
        {"{\"otlp_probes\": [{\"probe\": \"a\", \"attributes\": {\"a\": \"1\", \"b\": \"2\", "
         "\"c\": \"3\", \"d\": \"4\", \"e\": \"5\"}}]}",
         "at most 4"},
    };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        settings_defaults(&cfg);
        int r = settings_load_json(&cfg, bads[i].text, strlen(bads[i].text), "o.json");
        CHECK_MSG(r != 0 && contains(dq_last_error(), bads[i].msg), "case %zu: %s", i,
                  dq_last_error());
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(otlp),           CHECK_CASE(defaults),    CHECK_CASE(flags),
    CHECK_CASE(bad_flags),      CHECK_CASE(hostport),    CHECK_CASE(json),
    CHECK_CASE(bad_json),       CHECK_CASE(config_file), CHECK_CASE(print_config_roundtrip),
    CHECK_CASE(generated_text),
};

CHECK_MAIN(cases)
