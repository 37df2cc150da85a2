/*
 * settings.c: the settings table and everything generated from it.
 *
 * The table `settings[]` is the single source of truth for dqd's configuration: adding
 * a setting means adding one row (and its field in struct dqd_config); flags, the JSON
 * file, defaults, --print-config, --help and docs/configuration.md follow. Defaults are
 * written as the text a user would pass to the flag and go through the same parser, so
 * a default can never be out of its own range (a test checks that each one parses).
 *
 * The two structured sections of the config file ("wrappers", "probes") are not rows:
 * they are parsed by dedicated code below and described in the rendered reference.
 */
#include "settings.h"

#include <errno.h>
#include <sys/stat.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum setting_type {
    ST_HOSTPORT, /* "HOST:PORT" string */
    ST_PATH,     /* file path string */
    ST_TEXT,     /* free string (a comma-separated list) */
    ST_URL,      /* a URL template string */
    ST_INT,      /* int */
    ST_MS,       /* int64_t milliseconds */
    ST_DOUBLE,   /* double */
    ST_ENUM,     /* int index into choices */
    ST_ACTION    /* command-line only, no value: sets the settings_action */
};

#define SF_CLI_ONLY 1u       /* a flag only, not a key of the config file */
#define SF_EMPTY_OK 2u       /* "" (JSON null) means "none" */
#define SF_DEFAULT_WINDOW 4u /* unset (−1) means "the window length" */
#define SF_MS 8u             /* ST_DOUBLE in milliseconds: a duration, units accepted */

struct setting {
    const char *name; /* JSON key */
    const char *flag; /* command-line flag */
    enum setting_type type;
    size_t offset;              /* of the field in struct dqd_config */
    size_t size;                /* of that field (string capacity) */
    double min, max;            /* numeric range, inclusive */
    const char *def;            /* default, as flag text */
    const char *const *choices; /* ST_ENUM: names, NULL-terminated */
    unsigned flags;             /* SF_* */
    int action;                 /* ST_ACTION: the enum settings_action */
    const char *help;           /* one sentence for --help and the reference */
};

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const clocks[] = {"wall", "sim", NULL};
static const char *const off_on[] = {"off", "on", NULL};

#define FIELD(f) offsetof(struct dqd_config, f), sizeof(((struct dqd_config *)0)->f)
#define NOFIELD 0, 0

/* The largest dMax the engine's grid can hold: DQ_MAX_BINS bins of 2^DQ_MAX_K ms. */
#define MAX_DMAX_MS 4194304.0
#define MIN_DMAX_MS 0.001

static const struct setting settings[] = {
    {"listen", "--listen", ST_HOSTPORT, FIELD(listen), 0, 0, "127.0.0.1:7400", NULL, 0, 0,
     "Address of the ingest port, where wrappers connect and send outcome instances."},
    {"http", "--http", ST_HOSTPORT, FIELD(http), 0, 0, "127.0.0.1:7401", NULL, 0, 0,
     "Address of the HTTP API (/api/v1/..., /metrics, /-/healthy)."},
    {"db", "--db", ST_PATH, FIELD(db), 0, 0, "./dqd.db", NULL, 0, 0,
     "SQLite store file, created when missing."},
    {"api_token", "--api-token", ST_PATH, FIELD(api_token), 0, 0, "", NULL, SF_EMPTY_OK, 0,
     "File holding the bearer token (its first line) required on PUT/POST/DELETE requests to "
     "the API, and beyond loopback on reads too (header `Authorization: Bearer TOKEN`; dqctl "
     "sends $DQD_TOKEN, or the first line of the file $DQD_TOKEN_FILE). Without it, dqd takes the "
     "token from the environment variable "
     "DQD_API_TOKEN, else from $CREDENTIALS_DIRECTORY/api_token (systemd's LoadCredential). "
     "The token itself is never a flag: a command line is readable by every "
     "user (/proc/PID/cmdline). With no token at all, changes are refused when --http is not "
     "a loopback address."},
    {"allowed_hosts", "--allowed-hosts", ST_TEXT, FIELD(allowed_hosts), 0, 0, "", NULL, SF_EMPTY_OK,
     0,
     "Comma-separated names a request's Host header may carry besides loopback names "
     "(localhost), IP addresses and this machine's host name: a reverse proxy's name, a "
     "Collector's service name, a DNS name Prometheus scrapes by (`name` for any port, "
     "`name:port` for one, `.example.com` for every name under it, `*` for any). Other "
     "Hosts get 403: a web page cannot reach dqd through DNS rebinding."},
    {"public_reads", "--public-reads", ST_ENUM, FIELD(public_reads), 0, 0, "off", off_on, 0, 0,
     "Whether reads (GET, HEAD) beyond loopback are open without the token when one is set: "
     "off (the default) asks for it on every request but /-/healthy and the dashboard's "
     "static files; on leaves reads open. On loopback, reads are always open."},
    {"diagram", "--diagram", ST_PATH, FIELD(diagram), 0, 0, "", NULL, SF_EMPTY_OK, 0,
     "Outcome diagram (.dq file) loaded at start. Without it, dqd loads the diagram the "
     "store recorded last (from an earlier --diagram or PUT /api/v1/diagram), if any; with "
     "it, the file wins and is recorded in turn."},
    {"window", "--window", ST_MS, FIELD(window_ms), 10, 3600000, "1000", NULL, 0, 0,
     "Window length in milliseconds; windows are aligned to the wall clock."},
    {"lag", "--lag", ST_MS, FIELD(lag_ms), 0, 3600000, "", NULL, SF_DEFAULT_WINDOW, 0,
     "How long after its end a window still takes late instances, in milliseconds; "
     "by default the window length."},
    {"legacy_commands", "--legacy-commands", ST_ENUM, FIELD(legacy_commands), 0, 0, "off", off_on,
     0, 0,
     "Whether dqd writes commands on a legacy wrapper's own connection to the ingest port "
     "(one that sends no v2 hello): off (the default) writes nothing there, since the "
     "oscilloscope's wrapper never reads it and a close with unread commands resets the "
     "connection, losing the lines dqd had not read yet; its commands are recorded "
     "not_applied. on: the enabled set and commands in the legacy dialect, for legacy "
     "wrappers that read. v2 wrappers and `wrappers` listeners always get commands."},
    {"clock", "--clock", ST_ENUM, FIELD(clock), 0, 0, "wall", clocks, 0, 0,
     "Where dqd's time comes from: wall (the system clock) or sim (simulated time: a "
     "connected simulator sends `clock;NS` lines, dqd closes the windows that time makes "
     "due and answers `tick;NS`; for dqsim --clock sim and replays, faster than real "
     "time)."},
    {"ring", "--ring", ST_INT, FIELD(ring), 1, 10000, "60", NULL, 0, 0,
     "Closed windows (observed ΔQs) kept in memory per probe, for bands and statistics."},
    {"default_dmax_ms", "--default-dmax-ms", ST_DOUBLE, FIELD(default_dmax_ms), MIN_DMAX_MS,
     MAX_DMAX_MS, "1024", NULL, SF_MS, 0,
     "dMax in milliseconds of a probe enabled without one (it then auto-ranges)."},
    {"default_bins", "--default-bins", ST_INT, FIELD(default_bins), DQ_MIN_BINS, DQ_MAX_BINS,
     "1024", NULL, 0, 0, "Number of bins of a probe enabled without a setting."},
    {"auto_range", "--auto-range", ST_ENUM, FIELD(auto_range), 0, 0, "on", off_on, 0, 0,
     "Whether probes without a dMax of their own auto-range: their bin width follows what "
     "they observe (wider when the tail nears dMax, finer when the mass sits in the first "
     "bins), changing at window boundaries, each change in the store's events and sent to "
     "the wrappers (a probe with a configured dMax does so only with \"auto_range\": true "
     "in its entry of `probes`)."},
    {"auto_range_min_ms", "--auto-range-min-ms", ST_DOUBLE, FIELD(auto_range_min_ms), MIN_DMAX_MS,
     MAX_DMAX_MS, "1", NULL, SF_MS, 0, "The smallest dMax auto-ranging gives a probe."},
    {"auto_range_max_ms", "--auto-range-max-ms", ST_DOUBLE, FIELD(auto_range_max_ms), MIN_DMAX_MS,
     MAX_DMAX_MS, "60000", NULL, SF_MS, 0,
     "The largest dMax auto-ranging gives a probe without a dMax of its own."},
    {"min_instances", "--min-instances", ST_INT, FIELD(min_instances), 1, 1000000, "30", NULL, 0, 0,
     "Instances a newly enabled probe needs before the adaptive loop decides on it."},
    {"min_windows", "--min-windows", ST_INT, FIELD(min_windows), 1, 1000, "2", NULL, 0, 0,
     "Windows a newly enabled probe needs before the adaptive loop decides on it."},
    {"near_tie_margin", "--near-tie-margin", ST_DOUBLE, FIELD(search.min_lead), 0, 1, "0.1", NULL,
     0, 0,
     "How far a child's contribution must lead the runner-up's, as a fraction of the "
     "runner-up's, for the adaptive loop to name that child (0.1: by 10 %): closer shares are "
     "a near-tie, and no child is named however many samples tell them apart."},
    {"max_enabled_probes", "--max-enabled-probes", ST_INT, FIELD(max_enabled_probes), 0, 1000000,
     "0", NULL, 0, 0,
     "Budget: probes enabled at once; the adaptive loop pauses instead of exceeding it "
     "(0: no limit)."},
    {"max_instances_per_second", "--max-instances-per-second", ST_DOUBLE,
     FIELD(max_instances_per_second), 0, 1e12, "0", NULL, 0, 0,
     "Budget: ingest rate; expansions pause while it is above half of this (0: no limit)."},
    {"deescalate_windows", "--deescalate-windows", ST_INT, FIELD(deescalate_windows), 1, 100000,
     "5", NULL, 0, 0,
     "Quiet windows after an investigation closed before the probes it enabled are disabled "
     "(a person's variance problem waits at least 20: the windows its spread is judged over; "
     "one found beyond its baseline's largest and localized, up to 30, and a window with a "
     "pass beyond twice that largest is not quiet: docs/diagnosis.md, \"The node check\")."},
    {"investigation_windows", "--investigation-windows", ST_INT, FIELD(investigation_windows), 2,
     100000, "60", NULL, 0, 0,
     "Windows one step of an investigation may wait for samples before it is inconclusive."},
    {"snapshot_windows", "--snapshot-windows", ST_INT, FIELD(snapshot_windows), 1, 10000, "10",
     NULL, 0, 0, "Windows of ΔQs a trigger's snapshot keeps before and after the firing."},
    {"retention_hours", "--retention-hours", ST_INT, FIELD(retention_hours), 0, 1000000, "168",
     NULL, 0, 0,
     "Window summaries older than this many hours are deleted from the store, every five "
     "minutes (0: keep them all)."},
    {"dq_retention_hours", "--dq-retention-hours", ST_INT, FIELD(dq_retention_hours), 0, 1000000,
     "24", NULL, 0, 0,
     "Each window's observed ΔQ is kept in the store as counts per bin (at most 256, only "
     "those with instances) for the dashboard's heatmap of the ΔQ over time; rows older than "
     "this many hours are deleted every five minutes (0: keep them all). A probe with "
     "instances every window adds 86,400 rows a day, about 0.1 to 2 kB each."},
    {"exemplars", "--exemplars", ST_INT, FIELD(exemplars_slowest), 0, 16, "5", NULL, 0, 0,
     "Exemplars kept per probe and window: the slowest successful instances among those that "
     "identify themselves (a v2 line's t:, i: or a:; every OTLP span), with their trace id, "
     "instance id, node, attributes and duration; stored with the window's summary, served "
     "by GET /api/v1/probes/NAME/exemplars and as OpenMetrics exemplars on /metrics "
     "(0: none)."},
    {"exemplars_failed", "--exemplars-failed", ST_INT, FIELD(exemplars_failed), 0, 16, "2", NULL, 0,
     0,
     "Exemplars kept per probe and window among its failed and timed-out instances that "
     "identify themselves (the first ones of the window; 0: none)."},
    {"trace_url", "--trace-url", ST_URL, FIELD(trace_url), 0, 0, "", NULL, SF_EMPTY_OK, 0,
     "A link to a trace in a tracing UI, with {trace_id} where the exemplar's trace id goes "
     "(Jaeger: http://jaeger:16686/trace/{trace_id}; Tempo through Grafana's explore URL): "
     "the dashboard turns each exemplar's trace id into that link. Empty: no link."},
    {"webhook_queue", "--webhook-queue", ST_INT, FIELD(webhook_queue), 1, 100000, "256", NULL, 0, 0,
     "Webhook events waiting to be posted, at most; the oldest is dropped beyond."},
    {"webhook_retries", "--webhook-retries", ST_INT, FIELD(webhook_retries), 0, 100, "5", NULL, 0,
     0, "Further attempts per webhook event after a failure, with doubling backoff."},
    {"webhook_timeout", "--webhook-timeout", ST_MS, FIELD(webhook_timeout_ms), 100, 600000, "5000",
     NULL, 0, 0, "Timeout of one webhook POST in milliseconds."},
    {"otlp", "--otlp", ST_HOSTPORT, FIELD(otlp), 0, 0, "", NULL, SF_EMPTY_OK, 0,
     "Address of the OTLP/HTTP trace receiver (POST /v1/traces, protobuf or JSON, gzip), "
     "off unless given; 127.0.0.1:4318 is OTLP's port. Each span becomes an instance of a "
     "probe (docs/otlp.md). Beyond loopback, requests need the api_token as the API's "
     "changes do."},
    {"otlp_lag", "--otlp-lag", ST_MS, FIELD(otlp_lag_ms), 0, 3600000, "10000", NULL, 0, 0,
     "How long after its end a window still takes spans, in milliseconds: SDKs export in "
     "batches (every 5 s by default), so with --otlp windows close this long after their end "
     "when it is longer than lag; later spans are counted as late."},
    {"otlp_silence", "--otlp-silence", ST_MS, FIELD(otlp_silence_ms), 0, 3600000, "15000", NULL, 0,
     0,
     "A probe fed by OTLP that had spans before and none for this many milliseconds (a few "
     "export intervals) has no data: its source is silent."},
    {"otlp_max_body", "--otlp-max-body", ST_INT, FIELD(otlp_max_body), 1024, 1073741824, "8388608",
     NULL, 0, 0, "Largest OTLP request body in bytes, as sent and after gzip (413 beyond)."},
    {"otlp_max_spans_per_second", "--otlp-max-spans-per-second", ST_DOUBLE,
     FIELD(otlp_max_spans_per_second), 0, 1e12, "0", NULL, 0, 0,
     "Spans per second dqd takes over OTLP; a request beyond gets 429 with Retry-After "
     "(0: no limit)."},
    {"otlp_recent_spans", "--otlp-recent-spans", ST_INT, FIELD(otlp_recent_spans), 0, 10000000,
     "65536", NULL, 0, 0,
     "Spans kept (the newest) with their trace, span and parent ids for `dqctl diagram "
     "--infer` (0: none)."},
    {"otlp_cors_origins", "--otlp-cors-origins", ST_TEXT, FIELD(otlp_cors_origins), 0, 0, "", NULL,
     SF_EMPTY_OK, 0,
     "Web page origins (`https://app.example.com`, comma-separated; `*` for any) whose "
     "browser OpenTelemetry SDK may POST to the OTLP receiver: their preflight (OPTIONS) is "
     "answered and replies carry Access-Control-Allow-Origin. Empty (the default): CORS is "
     "off and a request carrying another site's Origin is refused (403)."},
    {"max_ingest_connections", "--max-ingest-connections", ST_INT, FIELD(max_ingest_connections), 1,
     65536, "512", NULL, 0, 0,
     "Ingest connections open at once. At the cap a new connection closes the one that has "
     "been silent longest, if for at least a second (logged, counted as evicted; otherwise the "
     "new one is refused): no timer closes a quiet connection, since the oscilloscope's "
     "wrapper sends nothing until a probe is enabled. One whose first "
     "16 lines are all malformed is closed at once (junk). dqd also keeps 64 descriptors for "
     "the API: past its descriptor limit minus those, the ingest cap is lower. Connections "
     "get TCP keepalive, so a vanished peer is noticed."},
    {"new_names_per_second", "--new-names-per-second", ST_DOUBLE, FIELD(new_names_per_second),
     0.001, 1e9, "10", NULL, 0, 0,
     "Probe names never seen before that one source (a node: a v2 hello's node, else the "
     "peer's host) may register per second, after a burst of new_names_burst; instances of "
     "further new names are rejected and counted (reason new_name_rate). Known names are "
     "never limited."},
    {"new_names_burst", "--new-names-burst", ST_INT, FIELD(new_names_burst), 1, 1000000, "1000",
     NULL, 0, 0,
     "New probe names a source may register at once (see new_names_per_second). Over OTLP "
     "the source is the connection's peer address, whatever service.name its spans carry."},
    {"new_names_global_per_second", "--new-names-global-per-second", ST_DOUBLE,
     FIELD(new_names_global_per_second), 0, 1e9, "100", NULL, 0, 0,
     "Probe names never seen before that every source together (wrappers and OTLP) may "
     "register per second, after a burst of new_names_global_burst; further new names are "
     "rejected and counted as new_name_rate (0: no limit). A source over its own rate takes "
     "nothing from this one."},
    {"new_names_global_burst", "--new-names-global-burst", ST_INT, FIELD(new_names_global_burst), 1,
     1000000, "2000", NULL, 0, 0,
     "New probe names every source together may register at once (see "
     "new_names_global_per_second)."},
    {"max_observed_probes", "--max-observed-probes", ST_INT, FIELD(max_observed_probes), 1, 9000,
     "1000", NULL, 0, 0,
     "Probes only observed (first seen in an instance or a span, and not in the diagram, "
     "configured, enabled by a person or the adaptive loop, nor given a dMax, QTA or servers) "
     "the probe table holds at most; the rest of its 10000 slots are a reserve that only real "
     "probes take. Past it a new name evicts the observed probe seen least recently (never "
     "one an investigation holds), or is rejected as probe_table_full. It bounds their "
     "memory (docs/running.md, \"The name budget\")."},
    {"idle_probe_windows", "--idle-probe-windows", ST_INT, FIELD(idle_probe_windows), 0, 1000000,
     "300", NULL, 0, 0,
     "An observed probe (see max_observed_probes) without an instance for this many windows "
     "is removed when a window closes (counted in dqd_probes_idle_removed_total); 0: never."},
    {"log_level", "--log-level", ST_ENUM, FIELD(log_level), 0, 0, "info", log_levels, 0, 0,
     "Least severe log messages written to stderr."},
    {"config", "--config", ST_PATH, FIELD(config), 0, 0, "", NULL, SF_CLI_ONLY | SF_EMPTY_OK, 0,
     "JSON config file to read; flags override its values."},
    {"print_config", "--print-config", ST_ACTION, NOFIELD, 0, 0, NULL, NULL, SF_CLI_ONLY,
     SETTINGS_PRINT_CONFIG,
     "Print the effective configuration as JSON (itself a valid config file) and exit."},
    {"help", "--help", ST_ACTION, NOFIELD, 0, 0, NULL, NULL, SF_CLI_ONLY, SETTINGS_HELP,
     "Print this help and exit."},
    {"version", "--version", ST_ACTION, NOFIELD, 0, 0, NULL, NULL, SF_CLI_ONLY, SETTINGS_VERSION,
     "Print the version and exit."},
};

#define N_SETTINGS (sizeof settings / sizeof settings[0])

/* ---- small helpers ----------------------------------------------------------------- */

static void *field(struct dqd_config *cfg, const struct setting *s) {
    return (char *)cfg + s->offset;
}

static const void *cfield(const struct dqd_config *cfg, const struct setting *s) {
    return (const char *)cfg + s->offset;
}

/* Copies src (length n) into a field of cap bytes; returns −1 if it does not fit. */
static int copy_str(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap) {
        return -1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

/* Re-raises the current error message with a prefix ("--listen: ..."). */
static int fail_prefixed(int code, const char *label) {
    char detail[512];
    size_t n = strlen(dq_last_error());
    if (n >= sizeof detail) {
        n = sizeof detail - 1;
    }
    memcpy(detail, dq_last_error(), n);
    detail[n] = '\0';
    return dq_fail(code, "%s: %s", label, detail);
}

static const char *metavar(const struct setting *s) {
    switch (s->type) {
    case ST_HOSTPORT:
        return "HOST:PORT";
    case ST_PATH:
        return "PATH";
    case ST_TEXT:
        return "LIST";
    case ST_URL:
        return "URL";
    case ST_INT:
        return "N";
    case ST_MS:
        return "DURATION";
    case ST_DOUBLE:
        return s->flags & SF_MS ? "DURATION" : "NUMBER";
    case ST_ENUM:
        return s->choices == log_levels ? "LEVEL" : "CHOICE";
    case ST_ACTION:
        return "";
    }
    return "";
}

static const char *type_doc(const struct setting *s) {
    switch (s->type) {
    case ST_HOSTPORT:
        return "host:port";
    case ST_PATH:
        return "path";
    case ST_TEXT:
        return "list";
    case ST_URL:
        return "URL";
    case ST_INT:
        return "integer";
    case ST_MS:
        return "duration: whole ms (250), or with a unit (250ms, 1.5s)";
    case ST_DOUBLE:
        return s->flags & SF_MS ? "duration: ms (0.5), or with a unit (500us, 2s)" : "number";
    case ST_ENUM:
        return "string";
    case ST_ACTION:
        return "flag";
    }
    return "";
}

const char *settings_log_level_name(int level) {
    if (level < 0 || level > DQD_LOG_DEBUG) {
        return "?";
    }
    return log_levels[level];
}

/* ---- host:port --------------------------------------------------------------------- */

int settings_split_hostport(const char *hp, char *host, size_t host_cap, int *port) {
    const char *colon, *h = hp, *he;
    if (hp[0] == '[') {
        const char *rb = strchr(hp, ']');
        if (!rb || rb == hp + 1) {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (unclosed or empty [IPv6])", hp);
        }
        for (const char *c = hp + 1; c < rb; c++) {
            if (!strchr("0123456789abcdefABCDEF:.", *c)) {
                return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (bad IPv6 address)", hp);
            }
        }
        if (rb[1] != ':') {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (missing :PORT)", hp);
        }
        h = hp + 1;
        he = rb;
        colon = rb + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon) {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (missing :PORT)", hp);
        }
        he = colon;
        if (he == h) {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (empty host)", hp);
        }
        for (const char *c = h; c < he; c++) {
            if (*c == ':') {
                return dq_fail(DQ_EINVAL,
                               "\"%s\" is not HOST:PORT (an IPv6 host needs brackets: [::1]:7400)",
                               hp);
            }
            if (!strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-_", *c)) {
                return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (bad character in host)", hp);
            }
        }
        if (he - h > 253) {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (host longer than 253)", hp);
        }
    }
    const char *ps = colon + 1;
    size_t pn = strlen(ps);
    long p = 0;
    if (pn == 0 || pn > 5) {
        return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (port must be 0 to 65535)", hp);
    }
    for (size_t i = 0; i < pn; i++) {
        if (ps[i] < '0' || ps[i] > '9') {
            return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (port must be 0 to 65535)", hp);
        }
        p = p * 10 + (ps[i] - '0');
    }
    if (p > 65535) {
        return dq_fail(DQ_EINVAL, "\"%s\" is not HOST:PORT (port must be 0 to 65535)", hp);
    }
    if (host && copy_str(host, host_cap, h, (size_t)(he - h)) != 0) {
        return dq_fail(DQ_EINVAL, "\"%s\": host too long", hp);
    }
    if (port) {
        *port = (int)p;
    }
    return 0;
}

/* ---- setting values ------------------------------------------------------------------ */

static int check_range_int(const struct setting *s, long long v, const char *label) {
    if ((double)v < s->min || (double)v > s->max) {
        return dq_fail(DQ_ERANGE, "%s: %lld is out of range [%.0f, %.0f]", label, v, s->min,
                       s->max);
    }
    return 0;
}

static int store_int(struct dqd_config *cfg, const struct setting *s, long long v,
                     const char *label) {
    int r = check_range_int(s, v, label);
    if (r) {
        return r;
    }
    if (s->type == ST_MS) {
        *(int64_t *)field(cfg, s) = (int64_t)v;
    } else {
        *(int *)field(cfg, s) = (int)v;
    }
    return 0;
}

static int store_double(struct dqd_config *cfg, const struct setting *s, double v,
                        const char *label) {
    if (!isfinite(v) || v < s->min || v > s->max) {
        return dq_fail(DQ_ERANGE, "%s: %.10g is out of range [%.10g, %.10g]", label, v, s->min,
                       s->max);
    }
    *(double *)field(cfg, s) = v;
    return 0;
}

/* String-valued settings (host:port, path, enum) from text. */
static int store_string(struct dqd_config *cfg, const struct setting *s, const char *v,
                        const char *label) {
    size_t n = strlen(v);
    if (s->type == ST_ENUM) {
        for (int i = 0; s->choices[i]; i++) {
            if (strcmp(v, s->choices[i]) == 0) {
                *(int *)field(cfg, s) = i;
                return 0;
            }
        }
        char list[128] = "";
        size_t at = 0;
        for (int i = 0; s->choices[i]; i++) {
            int w = snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", s->choices[i]);
            if (w < 0 || (size_t)w >= sizeof list - at) {
                break;
            }
            at += (size_t)w;
        }
        return dq_fail(DQ_EINVAL, "%s: \"%s\" is not one of %s", label, v, list);
    }
    if (n == 0 && !(s->flags & SF_EMPTY_OK)) {
        return dq_fail(DQ_EINVAL, "%s: must not be empty", label);
    }
    if (s->type == ST_HOSTPORT && n > 0 && settings_split_hostport(v, NULL, 0, NULL) != 0) {
        return fail_prefixed(DQ_EINVAL, label);
    }
    if (copy_str(field(cfg, s), s->size, v, n) != 0) {
        return dq_fail(DQ_EINVAL, "%s: longer than %zu bytes", label, s->size - 1);
    }
    return 0;
}

/* strtoll/strtod skip leading blanks and read "inf"; a flag value must not do either. */
static int starts_number(const char *v) {
    return (v[0] >= '0' && v[0] <= '9') || v[0] == '-' || v[0] == '+' || v[0] == '.';
}

/* A duration in milliseconds from text: a bare number is milliseconds (the setting's
 * documented unit), or a number with a unit (250ms, 1.5s, 800us, 2m). */
static int parse_ms(const char *v, const char *label, double *ms) {
    double s;
    if (dq_parse_duration(v, strlen(v), 1e-3, 1, &s) != DQ_OK) { /* the range says "< 0" */
        return dq_fail(DQ_EINVAL,
                       "%s: \"%s\" is not a duration: milliseconds (250) or a number with a "
                       "unit (250ms, 1.5s)",
                       label, v);
    }
    *ms = s * 1e3;
    return 0;
}

/* An ST_MS setting (whole milliseconds) from a duration's text. */
static int set_ms_text(struct dqd_config *cfg, const struct setting *s, const char *v,
                       const char *label) {
    double ms;
    int r = parse_ms(v, label, &ms);
    if (r) {
        return r;
    }
    if (!(ms >= s->min && ms <= s->max)) {
        return dq_fail(DQ_ERANGE, "%s: %s is out of range [%.0f, %.0f] ms", label, v, s->min,
                       s->max);
    }
    if (fabs(ms - round(ms)) > 1e-6 * (ms > 1 ? ms : 1)) {
        char n[40];
        return dq_fail(DQ_EINVAL, "%s: %s is %s ms, not a whole number of milliseconds", label, v,
                       dq_format_number(ms, 6, n, sizeof n));
    }
    return store_int(cfg, s, llround(ms), label);
}

/* A setting from flag text (also used for the defaults). */
static int set_text(struct dqd_config *cfg, const struct setting *s, const char *v,
                    const char *label) {
    char *end;
    switch (s->type) {
    case ST_INT:
    case ST_MS: {
        if (v[0] == '\0' && (s->flags & SF_DEFAULT_WINDOW)) {
            *(int64_t *)field(cfg, s) = -1;
            return 0;
        }
        if (s->type == ST_MS) {
            return set_ms_text(cfg, s, v, label);
        }
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!starts_number(v) || *end != '\0' || end == v) {
            return dq_fail(DQ_EINVAL, "%s: \"%s\" is not an integer", label, v);
        }
        if (errno == ERANGE) {
            return dq_fail(DQ_ERANGE, "%s: %s is out of range [%.0f, %.0f]", label, v, s->min,
                           s->max);
        }
        return store_int(cfg, s, x, label);
    }
    case ST_DOUBLE: {
        double x;
        if (s->flags & SF_MS) {
            int r = parse_ms(v, label, &x);
            return r ? r : store_double(cfg, s, x, label);
        }
        x = strtod(v, &end);
        if (!starts_number(v) || *end != '\0' || end == v) {
            return dq_fail(DQ_EINVAL, "%s: \"%s\" is not a number", label, v);
        }
        return store_double(cfg, s, x, label);
    }
    case ST_HOSTPORT:
    case ST_PATH:
    case ST_TEXT:
    case ST_URL:
    case ST_ENUM:
        return store_string(cfg, s, v, label);
    case ST_ACTION:
        break;
    }
    return dq_fail(DQ_EINVAL, "%s: takes no value", label);
}

static const struct setting *find_by_name(const char *name) {
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (strcmp(settings[i].name, name) == 0) {
            return &settings[i];
        }
    }
    return NULL;
}

/* Settings that existed once: naming one is an error that says what replaced it. */
static const struct {
    const char *name, *flag, *why;
} removed_settings[] = {
    {"ingest_junk_timeout", "--ingest-junk-timeout",
     "it was removed: an ingest connection that sends nothing is a quiet wrapper and is kept "
     "(at max_ingest_connections the one silent longest is closed to take a new one), and one "
     "whose first lines are all malformed is closed at once; remove it from the configuration"},
};

/* The error for a removed setting named `name` or flag `flag` (n bytes), or DQ_OK. */
static int removed_setting(const char *label, const char *name, const char *flag, size_t n) {
    for (size_t i = 0; i < sizeof removed_settings / sizeof removed_settings[0]; i++) {
        if ((name && strcmp(name, removed_settings[i].name) == 0) ||
            (flag && strlen(removed_settings[i].flag) == n &&
             memcmp(flag, removed_settings[i].flag, n) == 0)) {
            return dq_fail(DQ_EINVAL, "%s: %s", label, removed_settings[i].why);
        }
    }
    return DQ_OK;
}

static const struct setting *find_by_flag(const char *flag, size_t n) {
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (strlen(settings[i].flag) == n && memcmp(settings[i].flag, flag, n) == 0) {
            return &settings[i];
        }
    }
    return NULL;
}

void settings_defaults(struct dqd_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    search_params_init(&cfg->search); /* what the table below does not set */
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (settings[i].type != ST_ACTION) {
            /* Cannot fail: test_settings checks every default through this path. */
            (void)set_text(cfg, &settings[i], settings[i].def, settings[i].name);
        }
    }
}

int settings_set(struct dqd_config *cfg, const char *name, const char *value) {
    const struct setting *s = find_by_name(name);
    if (!s || s->type == ST_ACTION) {
        return dq_fail(DQ_ENOTFOUND, "unknown setting \"%s\"", name);
    }
    return set_text(cfg, s, value, name);
}

int settings_resolve_token(struct dqd_config *cfg, int *warning) {
    char buf[DQD_TOKEN_MAX + 2];
    size_t n = 0;
    const char *from = "DQD_API_TOKEN";
    if (warning) {
        *warning = 0;
    }
    cfg->token[0] = '\0';
    if (cfg->api_token[0]) {
        from = cfg->api_token;
        FILE *f = fopen(cfg->api_token, "r");
        if (!f) {
            return dq_fail(DQ_EIO,
                           "api_token: cannot read the token file %s: %s (api_token names a "
                           "file holding the token, not the token itself)",
                           cfg->api_token, strerror(errno));
        }
        struct stat st;
        if (warning && fstat(fileno(f), &st) == 0 && (st.st_mode & 0044)) {
            *warning = 1;
        }
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *nl = memchr(buf, '\n', n);
        if (nl) {
            *nl = '\0';
            n = (size_t)(nl - buf);
        }
    } else {
        const char *env = getenv("DQD_API_TOKEN");
        const char *creds = getenv("CREDENTIALS_DIRECTORY");
        if ((!env || !*env) && creds && *creds) {
            /* systemd's LoadCredential=api_token:FILE: the file dqd's user may read */
            char path[DQD_PATH_MAX];
            snprintf(path, sizeof path, "%s/api_token", creds);
            FILE *f = fopen(path, "r");
            if (f) {
                fclose(f);
                snprintf(cfg->api_token, sizeof cfg->api_token, "%s", path);
                return settings_resolve_token(cfg, warning);
            }
        }
        if (!env || !*env) {
            return 0;
        }
        n = strlen(env);
        if (n >= sizeof buf) {
            n = sizeof buf - 1;
        }
        memcpy(buf, env, n);
        buf[n] = '\0';
    }
    while (n > 0 && (buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) {
        buf[--n] = '\0';
    }
    if (n == 0) {
        return dq_fail(DQ_EINVAL, "api_token: %s holds no token", from);
    }
    if (n >= DQD_TOKEN_MAX) {
        return dq_fail(DQ_EINVAL, "api_token: the token in %s is longer than %d bytes", from,
                       DQD_TOKEN_MAX - 1);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c <= ' ' || c == 0x7f) {
            return dq_fail(DQ_EINVAL,
                           "api_token: the token in %s has a blank or a control character", from);
        }
    }
    memcpy(cfg->token, buf, n + 1);
    return 0;
}

int settings_finish(struct dqd_config *cfg) {
    char h1[DQD_HOSTPORT_MAX], h2[DQD_HOSTPORT_MAX];
    int p1, p2;
    if (cfg->lag_ms < 0) {
        cfg->lag_ms = cfg->window_ms;
    }
    if (settings_split_hostport(cfg->listen, h1, sizeof h1, &p1) != 0) {
        return fail_prefixed(DQ_EINVAL, "listen");
    }
    if (settings_split_hostport(cfg->http, h2, sizeof h2, &p2) != 0) {
        return fail_prefixed(DQ_EINVAL, "http");
    }
    if (p1 != 0 && p1 == p2 && strcmp(h1, h2) == 0) {
        return dq_fail(DQ_EINVAL, "--listen and --http are the same address %s", cfg->listen);
    }
    if (cfg->otlp[0] && cfg->otlp_lag_ms > cfg->lag_ms &&
        cfg->otlp_lag_ms > (int64_t)DQD_MAX_LAG_WINDOWS * cfg->window_ms) {
        return dq_fail(DQ_EINVAL,
                       "otlp_lag %lld ms is more than %d windows of %lld ms (windows close "
                       "otlp_lag after their end with --otlp): use a longer --window or a "
                       "shorter --otlp-lag",
                       (long long)cfg->otlp_lag_ms, DQD_MAX_LAG_WINDOWS, (long long)cfg->window_ms);
    }
    if (cfg->otlp[0]) {
        char h3[DQD_HOSTPORT_MAX];
        int p3;
        if (settings_split_hostport(cfg->otlp, h3, sizeof h3, &p3) != 0) {
            return fail_prefixed(DQ_EINVAL, "otlp");
        }
        if (p3 != 0 && ((p3 == p1 && strcmp(h3, h1) == 0) || (p3 == p2 && strcmp(h3, h2) == 0))) {
            return dq_fail(DQ_EINVAL, "--otlp %s is the address of --listen or --http", cfg->otlp);
        }
    }
    if (cfg->trace_url[0] &&
        (!strstr(cfg->trace_url, "{trace_id}") || (strncmp(cfg->trace_url, "http://", 7) != 0 &&
                                                   strncmp(cfg->trace_url, "https://", 8) != 0))) {
        return dq_fail(DQ_EINVAL,
                       "trace_url \"%s\" must be an http:// or https:// URL with {trace_id} "
                       "where the trace id goes",
                       cfg->trace_url);
    }
    if (cfg->auto_range_min_ms > cfg->auto_range_max_ms) {
        return dq_fail(DQ_EINVAL, "auto_range_min_ms %g is above auto_range_max_ms %g",
                       cfg->auto_range_min_ms, cfg->auto_range_max_ms);
    }
    return 0;
}

const struct dqd_probe_config *settings_find_probe(const struct dqd_config *cfg, const char *name) {
    for (int i = 0; i < cfg->n_probes; i++) {
        if (strcmp(cfg->probes[i].name, name) == 0) {
            return &cfg->probes[i];
        }
    }
    return NULL;
}

/* ---- JSON ------------------------------------------------------------------------- */

static const char *json_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

static int wrong_type(const char *label, const char *want, const json_t *v) {
    return dq_fail(DQ_EINVAL, "%s: expected %s, got %s", label, want, json_type_name(v));
}

/* A scalar setting from its JSON value. */
static int set_json(struct dqd_config *cfg, const struct setting *s, json_t *v, const char *label) {
    switch (s->type) {
    case ST_INT:
    case ST_MS:
        if (json_is_null(v) && (s->flags & SF_DEFAULT_WINDOW)) {
            *(int64_t *)field(cfg, s) = -1;
            return 0;
        }
        if (s->type == ST_MS && json_is_string(v)) { /* a duration with its unit: "250ms" */
            return set_ms_text(cfg, s, json_string_value(v), label);
        }
        if (!json_is_integer(v)) {
            return wrong_type(label,
                              s->type == ST_MS ? "an integer (milliseconds) or a duration "
                                                 "string (\"250ms\", \"1.5s\")"
                                               : "an integer",
                              v);
        }
        return store_int(cfg, s, (long long)json_integer_value(v), label);
    case ST_DOUBLE:
        if ((s->flags & SF_MS) && json_is_string(v)) {
            double x;
            int r = parse_ms(json_string_value(v), label, &x);
            return r ? r : store_double(cfg, s, x, label);
        }
        if (!json_is_number(v)) {
            return wrong_type(label,
                              s->flags & SF_MS ? "a number (milliseconds) or a duration string "
                                                 "(\"500us\", \"2s\")"
                                               : "a number",
                              v);
        }
        return store_double(cfg, s, json_number_value(v), label);
    case ST_HOSTPORT:
    case ST_PATH:
    case ST_TEXT:
    case ST_URL:
    case ST_ENUM:
        if (json_is_null(v) && (s->flags & SF_EMPTY_OK)) {
            return store_string(cfg, s, "", label);
        }
        if (!json_is_string(v)) {
            return wrong_type(label, "a string", v);
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            return dq_fail(DQ_EINVAL, "%s: contains a NUL character", label);
        }
        return store_string(cfg, s, json_string_value(v), label);
    case ST_ACTION:
        break;
    }
    return dq_fail(DQ_EINVAL, "%s: only valid on the command line", label);
}

static int load_wrappers(struct dqd_config *cfg, json_t *arr, const char *origin) {
    char label[DQD_PATH_MAX + 64];
    size_t i;
    json_t *v;
    snprintf(label, sizeof label, "%s: \"wrappers\"", origin);
    if (!json_is_array(arr)) {
        return wrong_type(label, "an array of \"HOST:PORT\" strings", arr);
    }
    if (json_array_size(arr) > DQD_MAX_WRAPPERS) {
        return dq_fail(DQ_EFULL, "%s: more than %d addresses", label, DQD_MAX_WRAPPERS);
    }
    cfg->n_wrappers = 0;
    json_array_foreach(arr, i, v) {
        snprintf(label, sizeof label, "%s: \"wrappers\"[%zu]", origin, i);
        if (!json_is_string(v)) {
            return wrong_type(label, "a \"HOST:PORT\" string", v);
        }
        const char *hp = json_string_value(v);
        if (strlen(hp) != json_string_length(v) ||
            settings_split_hostport(hp, NULL, 0, NULL) != 0) {
            return fail_prefixed(DQ_EINVAL, label);
        }
        if (copy_str(cfg->wrappers[cfg->n_wrappers], DQD_HOSTPORT_MAX, hp, strlen(hp)) != 0) {
            return dq_fail(DQ_EINVAL, "%s: longer than %d bytes", label, DQD_HOSTPORT_MAX - 1);
        }
        cfg->n_wrappers++;
    }
    return 0;
}

static int load_qta(struct dq_qta *q, json_t *obj, const char *label) {
    char sub[DQD_PATH_MAX + 400];
    const char *key;
    json_t *v, *points = NULL;
    int have_max_lost = 0;
    memset(q, 0, sizeof *q);
    if (!json_is_object(obj)) {
        return wrong_type(label, "an object {\"points\": [[p, t_s], ...], \"max_lost\": x}", obj);
    }
    json_object_foreach(obj, key, v) {
        if (strcmp(key, "points") == 0) {
            points = v;
        } else if (strcmp(key, "max_lost") == 0) {
            snprintf(sub, sizeof sub, "%s.max_lost", label);
            if (!json_is_number(v)) {
                return wrong_type(sub, "a number", v);
            }
            q->max_lost = json_number_value(v);
            have_max_lost = 1;
            if (!(q->max_lost >= 0 && q->max_lost <= 1)) {
                return dq_fail(DQ_ERANGE, "%s: %g is out of range [0, 1]", sub, q->max_lost);
            }
        } else {
            return dq_fail(DQ_EINVAL, "%s: unknown key \"%s\" (expected points, max_lost)", label,
                           key);
        }
    }
    snprintf(sub, sizeof sub, "%s.points", label);
    if (!points) {
        return dq_fail(DQ_EINVAL, "%s: missing", sub);
    }
    if (!json_is_array(points) || json_array_size(points) == 0) {
        return wrong_type(sub, "a non-empty array of [p, t_s] pairs", points);
    }
    if (json_array_size(points) > DQ_QTA_MAX_POINTS) {
        return dq_fail(DQ_EFULL, "%s: more than %d points", sub, DQ_QTA_MAX_POINTS);
    }
    size_t i;
    json_array_foreach(points, i, v) {
        /* the label cut short, never the index (a point's place is what the error names) */
        snprintf(sub, sizeof sub, "%.*s.points[%zu]", (int)(sizeof sub - 32), label, i);
        json_t *jp = json_array_get(v, 0), *jt = json_array_get(v, 1);
        if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_number(jp) ||
            !json_is_number(jt)) {
            return dq_fail(DQ_EINVAL, "%s: expected a pair [p, t_s] of numbers", sub);
        }
        double p = json_number_value(jp), t = json_number_value(jt);
        if (!(p > 0 && p <= 1)) {
            return dq_fail(DQ_ERANGE, "%s: probability %g is out of range (0, 1]", sub, p);
        }
        if (!(t > 0) || !isfinite(t)) {
            return dq_fail(DQ_ERANGE, "%s: time %g s must be positive", sub, t);
        }
        if (i > 0 && !(t > q->t[i - 1])) {
            return dq_fail(DQ_EINVAL, "%s: times must increase (%g after %g)", sub, t, q->t[i - 1]);
        }
        if (i > 0 && p < q->p[i - 1]) {
            return dq_fail(DQ_EINVAL, "%s: probabilities must not decrease (%g after %g)", sub, p,
                           q->p[i - 1]);
        }
        q->p[i] = p;
        q->t[i] = t;
        q->n = (int)i + 1;
    }
    if (!have_max_lost) {
        /* no limit beyond what the last point already implies */
        q->max_lost = 1.0 - q->p[q->n - 1];
    }
    return 0;
}

static int load_triggers(struct dqd_config *cfg, json_t *arr, const char *origin) {
    static const char *const kinds[] = {"qta", "load", "lost", "divergence", "cv"};
    char label[DQD_PATH_MAX + 64], sub[DQD_PATH_MAX + 96];
    size_t i;
    json_t *v;
    snprintf(label, sizeof label, "%s: \"triggers\"", origin);
    if (!json_is_array(arr)) {
        return wrong_type(label, "an array of {\"probe\", \"kind\", ...} objects", arr);
    }
    if (json_array_size(arr) > DQD_MAX_CFG_TRIGGERS) {
        return dq_fail(DQ_EFULL, "%s: more than %d triggers", label, DQD_MAX_CFG_TRIGGERS);
    }
    cfg->n_triggers = 0;
    json_array_foreach(arr, i, v) {
        struct dqd_trigger_config *t = &cfg->triggers[cfg->n_triggers];
        snprintf(label, sizeof label, "%s: \"triggers\"[%zu]", origin, i);
        if (!json_is_object(v)) {
            return wrong_type(label, "an object", v);
        }
        memset(t, 0, sizeof *t);
        t->threshold = NAN;
        t->fire_after = 3;
        t->clear_after = 5;
        const char *key;
        json_t *x;
        int have_kind = 0;
        json_object_foreach(v, key, x) {
            snprintf(sub, sizeof sub, "%s.%s", label, key);
            if (strcmp(key, "probe") == 0) {
                const char *name = json_string_value(x);
                if (!name || !wire_name_valid(name, strlen(name))) {
                    return dq_fail(DQ_EINVAL, "%s: want a probe name ([A-Za-z_][A-Za-z0-9_]*)",
                                   sub);
                }
                memcpy(t->probe, name, strlen(name) + 1);
            } else if (strcmp(key, "kind") == 0) {
                const char *k = json_string_value(x);
                size_t j = 0;
                while (k && j < 5 && strcmp(k, kinds[j]) != 0) {
                    j++;
                }
                if (!k || j == 5) {
                    return dq_fail(DQ_EINVAL, "%s: want qta, load, lost, divergence or cv", sub);
                }
                memcpy(t->kind, k, strlen(k) + 1);
                have_kind = 1;
            } else if (strcmp(key, "threshold") == 0) {
                if (json_is_null(x)) {
                    t->threshold = NAN;
                    continue;
                }
                if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
                    !isfinite(json_number_value(x))) {
                    return dq_fail(DQ_ERANGE, "%s: want a number ≥ 0 (or null: the default)", sub);
                }
                t->threshold = json_number_value(x);
            } else if (strcmp(key, "fire_after") == 0 || strcmp(key, "clear_after") == 0) {
                if (!json_is_integer(x) || json_integer_value(x) < 1 ||
                    json_integer_value(x) > 1000) {
                    return dq_fail(DQ_ERANGE, "%s: want an integer in [1, 1000]", sub);
                }
                *(key[0] == 'f' ? &t->fire_after : &t->clear_after) = (int)json_integer_value(x);
            } else {
                return dq_fail(DQ_EINVAL,
                               "%s: unknown key \"%s\" (expected probe, kind, threshold, "
                               "fire_after, clear_after)",
                               label, key);
            }
        }
        if (!t->probe[0] || !have_kind) {
            return dq_fail(DQ_EINVAL, "%s: \"probe\" and \"kind\" are required", label);
        }
        cfg->n_triggers++;
    }
    return 0;
}

static int load_webhooks(struct dqd_config *cfg, json_t *arr, const char *origin) {
    static const char *const events[] = {"trigger_fired", "trigger_cleared", "verdict"};
    char label[DQD_PATH_MAX + 64], sub[DQD_PATH_MAX + 96];
    size_t i;
    json_t *v;
    snprintf(label, sizeof label, "%s: \"webhooks\"", origin);
    if (!json_is_array(arr)) {
        return wrong_type(label, "an array of {\"url\", \"events\"} objects", arr);
    }
    if (json_array_size(arr) > DQD_MAX_WEBHOOKS) {
        return dq_fail(DQ_EFULL, "%s: more than %d webhooks", label, DQD_MAX_WEBHOOKS);
    }
    cfg->n_webhooks = 0;
    json_array_foreach(arr, i, v) {
        struct dqd_webhook_config *w = &cfg->webhooks[cfg->n_webhooks];
        snprintf(label, sizeof label, "%s: \"webhooks\"[%zu]", origin, i);
        memset(w, 0, sizeof *w);
        json_t *url = json_object_get(v, "url"), *ev = json_object_get(v, "events");
        if (!json_is_object(v) || !json_is_string(url)) {
            return dq_fail(DQ_EINVAL, "%s: want {\"url\": \"http://…\", \"events\": [...]}", label);
        }
        const char *u = json_string_value(url);
        if ((strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) ||
            strlen(u) >= DQD_URL_MAX) {
            return dq_fail(DQ_EINVAL, "%s.url: want an http:// or https:// URL shorter than %d",
                           label, DQD_URL_MAX);
        }
        memcpy(w->url, u, strlen(u) + 1);
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x) {
            if (strcmp(key, "url") != 0 && strcmp(key, "events") != 0) {
                return dq_fail(DQ_EINVAL, "%s: unknown key \"%s\" (expected url, events)", label,
                               key);
            }
        }
        if (ev) {
            snprintf(sub, sizeof sub, "%s.events", label);
            if (!json_is_array(ev)) {
                return wrong_type(sub, "an array of event names", ev);
            }
            size_t j;
            json_t *e;
            json_array_foreach(ev, j, e) {
                const char *name = json_string_value(e);
                unsigned bit = 0;
                for (unsigned b = 0; name && b < 3; b++) {
                    if (strcmp(name, events[b]) == 0) {
                        bit = 1u << b;
                    }
                }
                if (!bit) {
                    return dq_fail(DQ_EINVAL,
                                   "%s[%zu]: want trigger_fired, trigger_cleared or verdict", sub,
                                   j);
                }
                w->events |= bit;
            }
        }
        cfg->n_webhooks++;
    }
    return 0;
}

static int load_probe(struct dqd_probe_config *pc, const char *name, json_t *obj,
                      const char *origin) {
    char label[DQD_PATH_MAX + 360];
    char sub[DQD_PATH_MAX + 380];
    const char *key;
    json_t *v;
    int r;
    snprintf(label, sizeof label, "%s: probe \"%s\"", origin, name);
    if (!wire_name_valid(name, strlen(name))) {
        return dq_fail(DQ_EINVAL,
                       "%s: not a valid probe name ([A-Za-z_][A-Za-z0-9_]*, 1 to %d bytes)", label,
                       WIRE_MAX_NAME);
    }
    if (!json_is_object(obj)) {
        return wrong_type(label, "an object", obj);
    }
    memset(pc, 0, sizeof *pc);
    memcpy(pc->name, name, strlen(name) + 1);
    pc->enabled = -1;
    pc->auto_range = -1;
    json_object_foreach(obj, key, v) {
        snprintf(sub, sizeof sub, "%s.%s", label, key);
        if (strcmp(key, "dmax_ms") == 0) {
            if (json_is_string(v)) { /* a duration with its unit: "250ms", "1.5s" */
                if ((r = parse_ms(json_string_value(v), sub, &pc->dmax_ms)) != 0) {
                    return r;
                }
            } else if (!json_is_number(v)) {
                return wrong_type(sub, "a number (milliseconds) or a duration string (\"250ms\")",
                                  v);
            } else {
                pc->dmax_ms = json_number_value(v);
            }
            if (!(pc->dmax_ms >= MIN_DMAX_MS && pc->dmax_ms <= MAX_DMAX_MS)) {
                return dq_fail(DQ_ERANGE, "%s: %.10g is out of range [%.10g, %.10g]", sub,
                               pc->dmax_ms, MIN_DMAX_MS, MAX_DMAX_MS);
            }
        } else if (strcmp(key, "bins") == 0) {
            if (!json_is_integer(v)) {
                return wrong_type(sub, "an integer", v);
            }
            json_int_t b = json_integer_value(v);
            if (b < DQ_MIN_BINS || b > DQ_MAX_BINS) {
                return dq_fail(DQ_ERANGE, "%s: %lld is out of range [%d, %d]", sub, (long long)b,
                               DQ_MIN_BINS, DQ_MAX_BINS);
            }
            pc->bins = (int)b;
        } else if (strcmp(key, "enabled") == 0) {
            if (!json_is_boolean(v)) {
                return wrong_type(sub, "true or false", v);
            }
            pc->enabled = json_is_true(v);
        } else if (strcmp(key, "qta") == 0) {
            if (json_is_null(v)) {
                pc->has_qta = 0;
                continue;
            }
            if ((r = load_qta(&pc->qta, v, sub)) != 0) {
                return r;
            }
            pc->has_qta = 1;
        } else if (strcmp(key, "servers") == 0) {
            if (!json_is_integer(v)) {
                return wrong_type(sub, "an integer", v);
            }
            json_int_t n = json_integer_value(v);
            if (n < 1 || n > 100000) {
                return dq_fail(DQ_ERANGE, "%s: %lld is out of range [1, 100000]", sub,
                               (long long)n);
            }
            pc->servers = (int)n;
        } else if (strcmp(key, "mfa") == 0) {
            if (!json_is_string(v)) {
                return wrong_type(sub, "a string \"MOD:FUN/ARITY\"", v);
            }
            const char *f = json_string_value(v);
            size_t fn = json_string_length(v);
            const char *why = wire_mfa_check(f, fn);
            if (why) {
                char shown[160];
                return dq_fail(DQ_EINVAL,
                               "%s: \"%s\" is not a function MOD:FUN/ARITY: %s (e.g. "
                               "\"shop_db:stock/1\", \"Elixir.Shop.Orders:place/1\", "
                               "\"'my-mod':'do it'/2\"; docs/tracing.md)",
                               sub, wire_escape(shown, sizeof shown, f, fn), why);
            }
            memcpy(pc->mfa, f, fn + 1);
        } else if (strcmp(key, "auto_range") == 0) {
            if (!json_is_boolean(v)) {
                return wrong_type(sub, "true or false", v);
            }
            pc->auto_range = json_is_true(v);
        } else {
            return dq_fail(DQ_EINVAL,
                           "%s: unknown key \"%s\" (expected dmax_ms, bins, enabled, qta, "
                           "servers, auto_range, mfa)",
                           label, key);
        }
    }
    return 0;
}

static int load_probes(struct dqd_config *cfg, json_t *obj, const char *origin) {
    char label[DQD_PATH_MAX + 64];
    const char *name;
    json_t *v;
    int r;
    snprintf(label, sizeof label, "%s: \"probes\"", origin);
    if (!json_is_object(obj)) {
        return wrong_type(label, "an object {\"NAME\": {...}}", obj);
    }
    if (json_object_size(obj) > DQD_MAX_CFG_PROBES) {
        return dq_fail(DQ_EFULL, "%s: more than %d probes", label, DQD_MAX_CFG_PROBES);
    }
    cfg->n_probes = 0;
    json_object_foreach(obj, name, v) {
        if ((r = load_probe(&cfg->probes[cfg->n_probes], name, v, origin)) != 0) {
            return r;
        }
        cfg->n_probes++;
    }
    return 0;
}

/* A match text of "otlp_probes": a string shorter than DQD_OTLP_MATCH_MAX, without NUL. */
static int otlp_text(char *dst, json_t *v, const char *label, const char *key) {
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
        json_string_length(v) >= DQD_OTLP_MATCH_MAX) {
        return dq_fail(DQ_EINVAL, "%s.%s: want a string shorter than %d bytes", label, key,
                       DQD_OTLP_MATCH_MAX);
    }
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int load_otlp_rule(struct dqd_otlp_rule *r, json_t *v, const char *label) {
    const char *key;
    json_t *x;
    int rc = 0;
    memset(r, 0, sizeof *r);
    if (!json_is_object(v)) {
        return wrong_type(label, "an object {\"service\", \"span\", \"attributes\", \"probe\"}", v);
    }
    json_object_foreach(v, key, x) {
        if (strcmp(key, "service") == 0) {
            rc = otlp_text(r->service, x, label, key);
        } else if (strcmp(key, "span") == 0) {
            rc = otlp_text(r->span, x, label, key);
        } else if (strcmp(key, "probe") == 0) {
            const char *name = json_string_value(x);
            if (!name || !wire_name_valid(name, strlen(name))) {
                rc = dq_fail(DQ_EINVAL,
                             "%s.probe: want a probe name ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                             "bytes)",
                             label, WIRE_MAX_NAME);
            } else {
                memcpy(r->probe, name, strlen(name) + 1);
            }
        } else if (strcmp(key, "attributes") == 0) {
            const char *ak;
            json_t *av;
            if (!json_is_object(x) || json_object_size(x) > DQD_OTLP_RULE_ATTRS) {
                return dq_fail(DQ_EINVAL,
                               "%s.attributes: want an object of at most %d "
                               "\"key\": \"value\" pairs",
                               label, DQD_OTLP_RULE_ATTRS);
            }
            json_object_foreach(x, ak, av) {
                if (strlen(ak) >= DQD_OTLP_MATCH_MAX) {
                    return dq_fail(DQ_EINVAL, "%s.attributes: key longer than %d bytes", label,
                                   DQD_OTLP_MATCH_MAX - 1);
                }
                memcpy(r->attr_key[r->n_attrs], ak, strlen(ak) + 1);
                if ((rc = otlp_text(r->attr_value[r->n_attrs], av, label, ak)) != 0) {
                    return rc;
                }
                r->n_attrs++;
            }
        } else {
            rc = dq_fail(DQ_EINVAL,
                         "%s: unknown key \"%s\" (expected service, span, attributes, probe)",
                         label, key);
        }
        if (rc) {
            return rc;
        }
    }
    if (!r->probe[0]) {
        return dq_fail(DQ_EINVAL, "%s: \"probe\" is required", label);
    }
    return 0;
}

static int load_otlp_rules(struct dqd_config *cfg, json_t *arr, const char *origin) {
    char label[DQD_PATH_MAX + 64];
    size_t i;
    json_t *v;
    snprintf(label, sizeof label, "%s: \"otlp_probes\"", origin);
    if (!json_is_array(arr)) {
        return wrong_type(label, "an array of {\"service\", \"span\", \"attributes\", \"probe\"}",
                          arr);
    }
    if (json_array_size(arr) > DQD_MAX_OTLP_RULES) {
        return dq_fail(DQ_EFULL, "%s: more than %d entries", label, DQD_MAX_OTLP_RULES);
    }
    cfg->n_otlp_rules = 0;
    json_array_foreach(arr, i, v) {
        snprintf(label, sizeof label, "%s: \"otlp_probes\"[%zu]", origin, i);
        int rc = load_otlp_rule(&cfg->otlp_rules[cfg->n_otlp_rules], v, label);
        if (rc) {
            return rc;
        }
        cfg->n_otlp_rules++;
    }
    return 0;
}

int settings_load_json(struct dqd_config *cfg, const char *text, size_t len, const char *origin) {
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    const char *key;
    json_t *v;
    int r = 0;
    char label[DQD_PATH_MAX + 300];

    if (!root) {
        return dq_fail(DQ_EPARSE, "%s:%d:%d: %s", origin, err.line, err.column, err.text);
    }
    if (!json_is_object(root)) {
        r = dq_fail(DQ_EPARSE, "%s: the config must be a JSON object, not %s", origin,
                    json_type_name(root));
        goto out;
    }
    json_object_foreach(root, key, v) {
        snprintf(label, sizeof label, "%s: \"%s\"", origin, key);
        if (strcmp(key, "wrappers") == 0) {
            r = load_wrappers(cfg, v, origin);
        } else if (strcmp(key, "probes") == 0) {
            r = load_probes(cfg, v, origin);
        } else if (strcmp(key, "triggers") == 0) {
            r = load_triggers(cfg, v, origin);
        } else if (strcmp(key, "webhooks") == 0) {
            r = load_webhooks(cfg, v, origin);
        } else if (strcmp(key, "otlp_probes") == 0) {
            r = load_otlp_rules(cfg, v, origin);
        } else {
            const struct setting *s = find_by_name(key);
            if (!s) {
                r = removed_setting(label, key, NULL, 0);
                r = r ? r : dq_fail(DQ_EINVAL, "%s: unknown key", label);
            } else if (s->flags & SF_CLI_ONLY) {
                r = dq_fail(DQ_EINVAL, "%s: only valid as the command-line flag %s", label,
                            s->flag);
            } else {
                r = set_json(cfg, s, v, label);
            }
        }
        if (r != 0) {
            goto out;
        }
    }
out:
    json_decref(root);
    return r;
}

int settings_load_file(struct dqd_config *cfg, const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n;
    int r;
    if (!f) {
        return dq_fail(DQ_EIO, "cannot open config file %s: %s", path, strerror(errno));
    }
    buf = malloc(DQD_CONFIG_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return dq_fail(DQ_ENOMEM, "no memory to read %s", path);
    }
    n = fread(buf, 1, DQD_CONFIG_MAX_BYTES + 1, f);
    if (ferror(f)) {
        r = dq_fail(DQ_EIO, "cannot read config file %s: %s", path, strerror(errno));
    } else if (n > DQD_CONFIG_MAX_BYTES) {
        r = dq_fail(DQ_EFULL, "config file %s is larger than %d bytes", path, DQD_CONFIG_MAX_BYTES);
    } else {
        r = settings_load_json(cfg, buf, n, path);
    }
    free(buf);
    fclose(f);
    return r;
}

static json_t *probe_to_json(const struct dqd_probe_config *pc) {
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    if (pc->dmax_ms > 0) {
        json_object_set_new(o, "dmax_ms", json_real(pc->dmax_ms));
    }
    if (pc->bins > 0) {
        json_object_set_new(o, "bins", json_integer(pc->bins));
    }
    if (pc->enabled >= 0) {
        json_object_set_new(o, "enabled", json_boolean(pc->enabled));
    }
    if (pc->servers > 0) {
        json_object_set_new(o, "servers", json_integer(pc->servers));
    }
    if (pc->auto_range >= 0) {
        json_object_set_new(o, "auto_range", json_boolean(pc->auto_range));
    }
    if (pc->mfa[0]) {
        json_object_set_new(o, "mfa", json_string(pc->mfa));
    }
    if (pc->has_qta) {
        json_t *q = json_object(), *pts = json_array();
        for (int i = 0; i < pc->qta.n; i++) {
            json_array_append_new(pts, json_pack("[ff]", pc->qta.p[i], pc->qta.t[i]));
        }
        json_object_set_new(q, "points", pts);
        json_object_set_new(q, "max_lost", json_real(pc->qta.max_lost));
        json_object_set_new(o, "qta", q);
    }
    return o;
}

int settings_write_json(const struct dqd_config *cfg, FILE *out) {
    json_t *root = json_object();
    int r = 0;
    if (!root) {
        return dq_fail(DQ_ENOMEM, "no memory for the config JSON");
    }
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        const void *f = cfield(cfg, s);
        json_t *v = NULL;
        if (s->flags & SF_CLI_ONLY) {
            continue;
        }
        switch (s->type) {
        case ST_HOSTPORT:
        case ST_PATH:
        case ST_TEXT:
        case ST_URL:
            v = ((const char *)f)[0] == '\0' && (s->flags & SF_EMPTY_OK) ? json_null()
                                                                         : json_string(f);
            break;
        case ST_INT:
            v = json_integer(*(const int *)f);
            break;
        case ST_MS: {
            int64_t ms = *(const int64_t *)f;
            if (ms < 0 && (s->flags & SF_DEFAULT_WINDOW)) {
                ms = cfg->window_ms;
            }
            v = json_integer((json_int_t)ms);
            break;
        }
        case ST_DOUBLE:
            v = json_real(*(const double *)f);
            break;
        case ST_ENUM:
            v = json_string(s->choices[*(const int *)f]);
            break;
        case ST_ACTION:
            break;
        }
        if (v) {
            json_object_set_new(root, s->name, v);
        }
    }
    json_t *w = json_array();
    for (int i = 0; i < cfg->n_wrappers; i++) {
        json_array_append_new(w, json_string(cfg->wrappers[i]));
    }
    json_object_set_new(root, "wrappers", w);
    json_t *p = json_object();
    for (int i = 0; i < cfg->n_probes; i++) {
        json_object_set_new(p, cfg->probes[i].name, probe_to_json(&cfg->probes[i]));
    }
    json_object_set_new(root, "probes", p);
    json_t *ta = json_array();
    for (int i = 0; i < cfg->n_triggers; i++) {
        const struct dqd_trigger_config *t = &cfg->triggers[i];
        json_array_append_new(
            ta, json_pack("{s:s,s:s,s:o,s:i,s:i}", "probe", t->probe, "kind", t->kind, "threshold",
                          isnan(t->threshold) ? json_null() : json_real(t->threshold), "fire_after",
                          t->fire_after, "clear_after", t->clear_after));
    }
    json_object_set_new(root, "triggers", ta);
    json_t *wa = json_array();
    for (int i = 0; i < cfg->n_webhooks; i++) {
        const struct dqd_webhook_config *hook = &cfg->webhooks[i];
        json_t *ev = json_array();
        static const char *const names[] = {"trigger_fired", "trigger_cleared", "verdict"};
        for (unsigned b = 0; b < 3; b++) {
            if (!hook->events || (hook->events & (1u << b))) {
                json_array_append_new(ev, json_string(names[b]));
            }
        }
        json_array_append_new(wa, json_pack("{s:s,s:o}", "url", hook->url, "events", ev));
    }
    json_object_set_new(root, "webhooks", wa);
    json_t *oa = json_array();
    for (int i = 0; i < cfg->n_otlp_rules; i++) {
        const struct dqd_otlp_rule *rule = &cfg->otlp_rules[i];
        json_t *o = json_pack("{s:s}", "probe", rule->probe);
        if (rule->service[0]) {
            json_object_set_new(o, "service", json_string(rule->service));
        }
        if (rule->span[0]) {
            json_object_set_new(o, "span", json_string(rule->span));
        }
        if (rule->n_attrs > 0) {
            json_t *at = json_object();
            for (int j = 0; j < rule->n_attrs; j++) {
                json_object_set_new(at, rule->attr_key[j], json_string(rule->attr_value[j]));
            }
            json_object_set_new(o, "attributes", at);
        }
        json_array_append_new(oa, o);
    }
    json_object_set_new(root, "otlp_probes", oa);
    if (json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0 ||
        fputc('\n', out) == EOF) {
        r = dq_fail(DQ_EIO, "cannot write the config JSON");
    }
    json_decref(root);
    return r;
}

/* ---- command line ------------------------------------------------------------------ */

/* One pass over argv applying every valued flag to cfg; records the action flags. */
static int apply_args(struct dqd_config *cfg, int argc, char **argv, int *print_config) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            return dq_fail(DQ_EINVAL, "unexpected argument \"%s\" (see --help)", a);
        }
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        const struct setting *s = find_by_flag(a, fl);
        if (!s) {
            char label[64];
            snprintf(label, sizeof label, "%.*s", (int)(fl < 40 ? fl : 40), a);
            int r = removed_setting(label, NULL, a, fl);
            return r ? r : dq_fail(DQ_EINVAL, "unknown flag %.*s (see --help)", (int)fl, a);
        }
        if (s->type == ST_ACTION) {
            if (eq) {
                return dq_fail(DQ_EINVAL, "%s takes no value", s->flag);
            }
            if (s->action == SETTINGS_PRINT_CONFIG) {
                *print_config = 1;
            }
            continue;
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            v = argv[++i];
        } else {
            return dq_fail(DQ_EINVAL, "%s: missing value (%s %s)", s->flag, s->flag, metavar(s));
        }
        int r = set_text(cfg, s, v, s->flag);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

int settings_parse_args(struct dqd_config *cfg, int argc, char **argv,
                        enum settings_action *action) {
    int print_config = 0, r;
    char path[DQD_PATH_MAX];

    *action = SETTINGS_RUN;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            *action = SETTINGS_HELP;
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            *action = SETTINGS_VERSION;
            return 0;
        }
    }
    settings_defaults(cfg);
    if ((r = apply_args(cfg, argc, argv, &print_config)) != 0) {
        return r;
    }
    if (cfg->config[0] != '\0') {
        memcpy(path, cfg->config, sizeof path);
        settings_defaults(cfg);
        if ((r = settings_load_file(cfg, path)) != 0) {
            return fail_prefixed(r, "--config");
        }
        /* Flags override the file: apply them again (they were all valid above). */
        if ((r = apply_args(cfg, argc, argv, &print_config)) != 0) {
            return r;
        }
    }
    if ((r = settings_finish(cfg)) != 0) {
        return r;
    }
    if (print_config) {
        *action = SETTINGS_PRINT_CONFIG;
    }
    return 0;
}

/* ---- generated text ----------------------------------------------------------------- */

static void default_text(const struct setting *s, char *buf, size_t cap) {
    if (s->type == ST_ACTION) {
        snprintf(buf, cap, "%s", "");
    } else if (s->flags & SF_DEFAULT_WINDOW) {
        snprintf(buf, cap, "%s", "= window");
    } else if (s->def[0] == '\0') {
        snprintf(buf, cap, "%s", "none");
    } else {
        snprintf(buf, cap, "%s", s->def);
    }
}

static void range_text(const struct setting *s, char *buf, size_t cap) {
    switch (s->type) {
    case ST_INT:
    case ST_MS:
        snprintf(buf, cap, "%.0f … %.0f", s->min, s->max);
        break;
    case ST_DOUBLE:
        snprintf(buf, cap, "%.10g … %.10g", s->min, s->max);
        break;
    case ST_ENUM: {
        size_t at = 0;
        buf[0] = '\0';
        for (int i = 0; s->choices[i]; i++) {
            int w = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", s->choices[i]);
            if (w < 0 || (size_t)w >= cap - at) {
                break;
            }
            at += (size_t)w;
        }
        break;
    }
    case ST_HOSTPORT:
        snprintf(buf, cap, "%s", "port 0 … 65535");
        break;
    case ST_PATH:
    case ST_TEXT:
    case ST_URL:
    case ST_ACTION:
        snprintf(buf, cap, "%s", "");
        break;
    }
}

/* Prints text word-wrapped to lines of at most width columns after an indent. */
static void wrap(FILE *out, const char *text, int indent, int width) {
    int col = indent;
    const char *p = text;
    while (*p) {
        const char *w = p;
        while (*w && *w != ' ') {
            w++;
        }
        int len = (int)(w - p);
        if (col > indent && col + 1 + len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", len, p);
        col += len;
        p = *w ? w + 1 : w;
    }
    fputc('\n', out);
}

void settings_print_help(FILE *out, const char *argv0) {
    fprintf(out,
            "Usage: %s [OPTIONS]\n"
            "dqd: adaptive ΔQ instrumentation controller.\n\n"
            "Options (flags override the --config file, which overrides the defaults).\n"
            "A DURATION is a number in the unit its line names (milliseconds), or a number\n"
            "with a unit: ns, us, ms, s, m (--window 250ms, --webhook-timeout 1.5s).\n",
            argv0 ? argv0 : "dqd");
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        char left[64], def[64];
        snprintf(left, sizeof left, "%s%s%s", s->flag, s->type == ST_ACTION ? "" : " ", metavar(s));
        default_text(s, def, sizeof def);
        fprintf(out, "  %-26s ", left);
        if (s->type == ST_ACTION) {
            wrap(out, s->help, 29, 92);
            continue;
        }
        /* the whole sentence, however long: no fixed buffer cuts it */
        size_t need = strlen(s->help) + strlen(def) + sizeof " (default: )";
        char *text = malloc(need);
        if (!text) {
            wrap(out, s->help, 29, 92);
            continue;
        }
        snprintf(text, need, "%s (default: %s)", s->help, def);
        wrap(out, text, 29, 92);
        free(text);
    }
    fprintf(out, "\nThe config file is JSON: {\"<setting>\": value, ..., \"wrappers\": "
                 "[\"HOST:PORT\", ...],\n"
                 "\"probes\": {\"NAME\": {\"dmax_ms\": x, \"bins\": n, \"enabled\": bool, "
                 "\"qta\": {...}}}}.\n"
                 "Setting names are the flags without the leading dashes, with '_' for '-'.\n");
}

void settings_render_markdown(FILE *out) {
    fputs("# Configuration reference\n"
          "\n"
          "<!-- Generated from the settings table in controller/settings/settings.c by\n"
          "     `build/tests/settings/gen_config_doc > docs/configuration.md`.\n"
          "     The CTest test `settings_doc` fails when this file and the table differ. -->\n"
          "\n"
          "dqd takes its settings from three places, each overriding the one before:\n"
          "\n"
          "1. the defaults below;\n"
          "2. the JSON config file named by `--config FILE.json`;\n"
          "3. command-line flags, written `--flag VALUE` or `--flag=VALUE`.\n"
          "\n"
          "`dqd --print-config` prints the effective configuration as JSON; that output is\n"
          "itself a valid config file. Bad input never starts the daemon: dqd prints one\n"
          "message naming the flag or key at fault (for example\n"
          "`--window: 0 is out of range [10, 3600000] ms`, or\n"
          "`--config: dqd.json:3:12: ':' expected near '7'` for malformed JSON) and does\n"
          "not start.\n"
          "\n"
          "## Settings\n"
          "\n"
          "The key is the name in the config file; the flag sets the same value.\n"
          "\n"
          "| key | flag | type | range | default | description |\n"
          "| --- | --- | --- | --- | --- | --- |\n",
          out);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        char def[64], range[96];
        if (s->flags & SF_CLI_ONLY) {
            continue;
        }
        default_text(s, def, sizeof def);
        range_text(s, range, sizeof range);
        fprintf(out, "| `%s` | `%s %s` | %s | %s | %s%s%s | %s |\n", s->name, s->flag, metavar(s),
                type_doc(s), range, s->def[0] ? "`" : "", def, s->def[0] ? "`" : "", s->help);
    }
    fputs("\n"
          "## Command-line only\n"
          "\n"
          "| flag | description |\n"
          "| --- | --- |\n",
          out);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (!(s->flags & SF_CLI_ONLY)) {
            continue;
        }
        fprintf(out, "| `%s%s%s` | %s |\n", s->flag, s->type == ST_ACTION ? "" : " ", metavar(s),
                s->help);
    }
    fprintf(out,
            "\n"
            "`--help` and `--version` win over every other flag and do not read the config "
            "file.\n"
            "\n"
            "## Config file\n"
            "\n"
            "A JSON object (at most %d bytes). Its keys are the setting keys above, with the\n"
            "JSON type of the setting: strings for host:port, path and string settings\n"
            "(`null` for an optional path), integers for integer settings (`1000`, not\n"
            "`1000.0` or `\"1000\"`), any number for number settings. `lag` may be `null`\n"
            "(= the window). Unknown keys, duplicate keys and wrong types are errors that\n"
            "name the key. Besides the settings, five sections:\n"
            "\n"
            "### `wrappers`\n"
            "\n"
            "An array of at most %d `\"HOST:PORT\"` strings: the command listeners of legacy\n"
            "wrappers (the ΔQ Oscilloscope's Erlang wrapper listens on 127.0.0.1:8081 by\n"
            "default). dqd connects out to each, sends it the enabled probes and\n"
            "`start_stub`, and reconnects with backoff. v2 wrappers need no entry: they\n"
            "connect to `listen` and take commands on that connection.\n"
            "\n"
            "### `probes`\n"
            "\n"
            "An object of at most %d probes, keyed by probe name (`[A-Za-z_][A-Za-z0-9_]*`,\n"
            "at most %d bytes). Each value is an object with any of:\n"
            "\n"
            "| key | type | meaning |\n"
            "| --- | --- | --- |\n"
            "| `dmax_ms` | number, %.10g … %.10g | the probe's dMax in milliseconds (otherwise "
            "`default_dmax_ms`, then auto-ranging) |\n"
            "| `bins` | integer, %d … %d | number of bins of its histogram (otherwise "
            "`default_bins`) |\n"
            "| `enabled` | boolean | whether dqd asks the wrappers for its instances at start |\n"
            "| `qta` | object or `null` | its quantitative timeliness agreement: `\"points\"`: "
            "1 to %d pairs `[p, t_s]` (\"P(delay ≤ t_s seconds) ≥ p\"; p in (0, 1] not "
            "decreasing, t_s > 0 increasing), `\"max_lost\"`: the largest acceptable lost "
            "mass in [0, 1] (default 1 − the last point's p: no limit beyond the points) |\n"
            "| `auto_range` | boolean | with `dmax_ms`: whether it auto-ranges all the same, "
            "never above that dMax (otherwise a configured dMax is fixed); without: whether it "
            "auto-ranges (default: `auto_range`) |\n"
            "| `servers` | integer, 1 … 100000 | when the probe measures a queueing station "
            "(a pool of workers, a connection pool, one process), how many requests it serves "
            "at once: the overload diagnosis's utilisation ρ = λ·S / servers (otherwise: one "
            "server for the busy-time estimate; see docs/diagnosis.md) |\n"
            "| `mfa` | string `\"MOD:FUN/ARITY\"` | binds the probe to an Erlang function: "
            "enabling it makes dqd's wrapper trace that function (erlang:trace, no code "
            "change), each call an instance (docs/tracing.md); legacy wrappers cannot, and "
            "record the command not applied. MOD and FUN are any Erlang atoms, bare when "
            "plain (Elixir's modules and `?`/`!` functions too), else in single quotes: "
            "`\"shop_db:stock/1\"`, `\"Elixir.Shop.Orders:place/1\"`, "
            "`\"'my-mod':'do it'/2\"` (docs/protocol.md, Functions) |\n"
            "\n"
            "### `triggers`\n"
            "\n"
            "An array of at most %d objects, each a per-probe condition evaluated at every\n"
            "window close: `\"probe\"` (required), `\"kind\"` (required: `qta` (the probe's\n"
            "QTA has a hazard above `threshold`, default 0), `load` (instances per window\n"
            "above `threshold`, default 1000), `lost` (lost mass above `threshold`, default\n"
            "0.05), `divergence` (KS distance of observed vs calculated above `threshold`,\n"
            "default 0.1, and significant at 1 %%), `cv` (σ/μ above `threshold`, default 1)),\n"
            "`\"threshold\"` (number or `null`), `\"fire_after\"` (k bad windows in a row to\n"
            "fire, default 3) and `\"clear_after\"` (m good windows in a row to clear,\n"
            "default 5). A firing stores a snapshot and opens an investigation at the probe.\n"
            "\n"
            "### `webhooks`\n"
            "\n"
            "An array of at most %d objects `{\"url\": \"http://…\", \"events\": [...]}`:\n"
            "dqd POSTs a JSON object `{\"event\", \"time\", \"data\"}` to the URL on each\n"
            "event named (`trigger_fired`, `trigger_cleared`, `verdict`; all when `events`\n"
            "is absent), from a bounded queue (`webhook_queue`), retrying failures\n"
            "(`webhook_retries`) with doubling backoff.\n"
            "\n",
            DQD_CONFIG_MAX_BYTES, DQD_MAX_WRAPPERS, DQD_MAX_CFG_PROBES, WIRE_MAX_NAME, MIN_DMAX_MS,
            MAX_DMAX_MS, DQ_MIN_BINS, DQ_MAX_BINS, DQ_QTA_MAX_POINTS, DQD_MAX_CFG_TRIGGERS,
            DQD_MAX_WEBHOOKS);
    fprintf(out,
            "### `otlp_probes`\n"
            "\n"
            "An array of at most %d objects mapping OTLP spans to probes, tried in order, the\n"
            "first match wins: `\"service\"` (the resource's `service.name`), `\"span\"` (the\n"
            "span's name), `\"attributes\"` (at most %d `\"key\": \"value\"` pairs, each a\n"
            "span or resource attribute, values compared as text) and `\"probe\"` (required:\n"
            "the probe the span becomes an instance of). Absent conditions match anything; a\n"
            "text ending in `*` matches by prefix. A span that no entry matches becomes an\n"
            "instance of its name mapped to the probe alphabet (every byte outside\n"
            "`[A-Za-z0-9_]` becomes `_`, a leading digit gets a `_` before it), for example\n"
            "`{\"service\": \"shop\", \"span\": \"GET /cart*\", \"probe\": \"cart\"}`.\n"
            "\n"

            "### Example\n"
            "\n"
            "```json\n"
            "{\n"
            "  \"listen\": \"0.0.0.0:7400\",\n"
            "  \"window\": 5000,\n"
            "  \"lag\": 2000,\n"
            "  \"wrappers\": [\"127.0.0.1:8081\"],\n"
            "  \"probes\": {\n"
            "    \"checkout\": {\"dmax_ms\": 200, \"enabled\": true,\n"
            "                 \"qta\": {\"points\": [[0.5, 0.05], [0.95, 0.15]], "
            "\"max_lost\": 0.01}},\n"
            "    \"payment\": {\"dmax_ms\": 80, \"bins\": 640}\n"
            "  }\n"
            "}\n"
            "```\n",
            DQD_MAX_OTLP_RULES, DQD_OTLP_RULE_ATTRS);
}
