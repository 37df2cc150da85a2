/*
 * settings.h: dqd's configuration, described once.
 *
 * One declarative table (settings.c, in the manner of redis's static_configs[]) lists
 * every setting: its name (the JSON key), command-line flag, type, range, default and
 * help text, and the field of struct dqd_config it writes. From that table come:
 * command-line parsing, the JSON config file, defaults, validation messages,
 * `--print-config`, `--help` and the Markdown reference docs/configuration.md.
 *
 * Precedence: flags > config file (--config FILE.json) > defaults. The config file may
 * also hold two sections that are not single values: "wrappers" (addresses of legacy
 * wrappers' command listeners) and "probes" (per-probe dMax, bins, enabled, QTA),
 * stored in the fixed-size arrays below.
 *
 * Nothing here aborts or exits: every function returns 0 or a negative DQ_E* code with
 * a message for dq_last_error() that names the flag or key at fault.
 */
#ifndef DQD_SETTINGS_H
#define DQD_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dq.h"
#include "dq_search.h"
#include "wire.h"

#define DQD_HOSTPORT_MAX 300           /* bytes of a "HOST:PORT" string, NUL included */
#define DQD_PATH_MAX 1024              /* bytes of a path, NUL included */
#define DQD_TOKEN_MAX 512              /* bytes of the API token, NUL included */
#define DQD_MAX_WRAPPERS 64            /* entries of "wrappers" */
#define DQD_MAX_CFG_PROBES 256         /* entries of "probes" */
#define DQD_CONFIG_MAX_BYTES (4 << 20) /* largest config file read */
#define DQD_MAX_LAG_WINDOWS 59         /* a lag of at most this many windows (core.h) */

enum dqd_log_level { DQD_LOG_ERROR, DQD_LOG_WARN, DQD_LOG_INFO, DQD_LOG_DEBUG };

/* Where dqd's time comes from (setting "clock"). */
enum dqd_clock_mode { DQD_CLOCK_WALL, DQD_CLOCK_SIM };

/* One entry of the config file's "probes" section. Unset members keep their marker. */
struct dqd_probe_config {
    char name[WIRE_MAX_NAME + 1]; /* a valid probe NAME */
    double dmax_ms;               /* > 0, or 0 when not set (default_dmax_ms / auto-range) */
    int bins;                     /* 1 … DQ_MAX_BINS, or 0 when not set */
    int enabled;                  /* 1 or 0, or −1 when not set */
    int has_qta;                  /* 1 when qta holds a QTA */
    struct dq_qta qta;            /* t in seconds; valid when has_qta */
    int servers;                  /* servers of the station it measures, 0 when not set */
    int auto_range;               /* 1 or 0, or −1 when not set (docs/configuration.md) */
    char mfa[WIRE_MAX_MFA + 1];   /* the function it is bound to (MOD:FUN/ARITY), "" = none */
};

#define DQD_MAX_CFG_TRIGGERS 256 /* entries of "triggers" */
#define DQD_MAX_WEBHOOKS 16      /* entries of "webhooks" */
#define DQD_URL_MAX 1024         /* bytes of a webhook URL, NUL included */

/* One entry of the config file's "triggers" section. */
struct dqd_trigger_config {
    char probe[WIRE_MAX_NAME + 1];
    char kind[16];    /* qta, load, lost, divergence, cv */
    double threshold; /* NAN: the kind's default */
    int fire_after;   /* k bad windows in a row to fire */
    int clear_after;  /* m good windows in a row to clear */
};

/* One entry of the config file's "webhooks" section. */
struct dqd_webhook_config {
    char url[DQD_URL_MAX];
    unsigned events; /* bit mask of DQD_EVENT_*; 0 = all */
};

#define DQD_EVENT_TRIGGER_FIRED 1u
#define DQD_EVENT_TRIGGER_CLEARED 2u
#define DQD_EVENT_VERDICT 4u

#define DQD_MAX_OTLP_RULES 64  /* entries of "otlp_probes" */
#define DQD_OTLP_RULE_ATTRS 4  /* attribute conditions per entry */
#define DQD_OTLP_MATCH_MAX 256 /* bytes of a service, span name or attribute text, NUL included */

/* One entry of the config file's "otlp_probes" section: spans that match every condition
 * given ("" = any) become instances of `probe`. A condition ending in '*' matches by prefix. */
struct dqd_otlp_rule {
    char service[DQD_OTLP_MATCH_MAX]; /* the resource's service.name */
    char span[DQD_OTLP_MATCH_MAX];    /* the span's name */
    int n_attrs;
    char attr_key[DQD_OTLP_RULE_ATTRS][DQD_OTLP_MATCH_MAX];   /* span or resource attribute */
    char attr_value[DQD_OTLP_RULE_ATTRS][DQD_OTLP_MATCH_MAX]; /* its value as text */
    char probe[WIRE_MAX_NAME + 1];                            /* a valid probe NAME */
};

/* The effective configuration. Fill with settings_defaults() before anything else. */
struct dqd_config {
    char listen[DQD_HOSTPORT_MAX];      /* ingest address, "HOST:PORT" */
    char http[DQD_HOSTPORT_MAX];        /* HTTP API address, "HOST:PORT" */
    char db[DQD_PATH_MAX];              /* SQLite store path */
    char diagram[DQD_PATH_MAX];         /* outcome diagram (.dq) path, "" for none */
    char config[DQD_PATH_MAX];          /* the config file that was read, "" for none */
    char api_token[DQD_PATH_MAX];       /* file holding the API's bearer token, "" none */
    char token[DQD_TOKEN_MAX];          /* the token itself (settings_resolve_token), "" none */
    char allowed_hosts[DQD_PATH_MAX];   /* extra Host names the API accepts, comma-separated */
    int public_reads;                   /* 1: reads beyond loopback need no token */
    int max_ingest_connections;         /* ingest connections open at once */
    double new_names_per_second;        /* new probe names per source and second */
    int new_names_burst;                /* … after a burst of this many */
    double new_names_global_per_second; /* new probe names of every source together */
    int new_names_global_burst;         /* … after a burst of this many */
    int max_observed_probes;            /* probes only observed (seen in instances) at most */
    int idle_probe_windows;             /* an observed probe without an instance this long goes */
    int64_t window_ms;                  /* window length */
    int64_t lag_ms;                     /* how long a window stays open after its end */
    int clock;                          /* enum dqd_clock_mode */
    int legacy_commands;                /* 1: write commands on inbound legacy connections */
    int ring;                           /* closed ΔQs kept per probe */
    double default_dmax_ms;             /* dMax of a probe enabled without one */
    int default_bins;                   /* bins of a probe enabled without a setting */
    int auto_range;                     /* 1: probes without a dMax of their own auto-range */
    double auto_range_min_ms;           /* … between these dMax */
    double auto_range_max_ms;
    int log_level;                                     /* enum dqd_log_level */
    int n_wrappers;                                    /* entries used in wrappers */
    char wrappers[DQD_MAX_WRAPPERS][DQD_HOSTPORT_MAX]; /* legacy listeners, "HOST:PORT" */
    int n_probes;                                      /* entries used in probes */
    struct dqd_probe_config probes[DQD_MAX_CFG_PROBES];
    /* the adaptive loop */
    struct search_params search;     /* the search's tunables (dq_search.h); min_instances and
                                        min_windows are the two below */
    int min_instances;               /* instances a new probe needs before a decision */
    int min_windows;                 /* windows a new probe needs before a decision */
    int max_enabled_probes;          /* budget: probes enabled at once (0: no limit) */
    double max_instances_per_second; /* budget: expansions pause above half of it (0: none) */
    int deescalate_windows;          /* quiet windows before an investigation's probes go */
    int investigation_windows;       /* windows one search step may wait before giving up */
    int snapshot_windows;            /* windows kept before and after a trigger fired */
    int n_triggers;
    struct dqd_trigger_config triggers[DQD_MAX_CFG_TRIGGERS];
    int n_webhooks;
    struct dqd_webhook_config webhooks[DQD_MAX_WEBHOOKS];
    int retention_hours;          /* window summaries older than this are pruned (0: keep) */
    int dq_retention_hours;       /* window ΔQs (the heatmap's) older than this are pruned */
    int exemplars_slowest;        /* exemplars per probe and window: the slowest ok ones … */
    int exemplars_failed;         /* … and the first failed ones */
    char trace_url[DQD_PATH_MAX]; /* a tracing UI's link with {trace_id}, "" for none */
    int webhook_queue;            /* events waiting to be posted, at most */
    int webhook_retries;          /* attempts per event after the first */
    int64_t webhook_timeout_ms;   /* per attempt */
    /* OTLP/HTTP ingest (controller/otlp/) */
    char otlp[DQD_HOSTPORT_MAX];          /* "HOST:PORT" of POST /v1/traces, "" = off */
    int64_t otlp_lag_ms;                  /* lateness allowance of spans */
    int64_t otlp_silence_ms;              /* no span of a probe this long: its source is silent */
    int otlp_max_body;                    /* bytes of a request body, before and after gzip */
    double otlp_max_spans_per_second;     /* 429 above it (0: no limit) */
    int otlp_recent_spans;                /* spans kept for `dqctl diagram --infer` */
    char otlp_cors_origins[DQD_PATH_MAX]; /* browser origins allowed on OTLP (CORS), "" none */
    int n_otlp_rules;
    struct dqd_otlp_rule otlp_rules[DQD_MAX_OTLP_RULES];
};

/* What the command line asks dqd to do once it has been parsed. */
enum settings_action {
    SETTINGS_RUN,          /* run the daemon with the configuration */
    SETTINGS_HELP,         /* print settings_print_help() and exit 0 */
    SETTINGS_VERSION,      /* print the version and exit 0 */
    SETTINGS_PRINT_CONFIG, /* print settings_write_json() and exit 0 */
};

/* Fills cfg with the defaults of the table (lag = window, no wrappers, no probes). */
void settings_defaults(struct dqd_config *cfg);

/*
 * The whole command line: defaults, then the file of --config if any, then the other
 * flags over it. argv[0] is the program name. Flags are `--name VALUE` or
 * `--name=VALUE`. Sets *action. On error returns DQ_EINVAL / DQ_ERANGE / DQ_EPARSE /
 * DQ_EIO / DQ_EFULL with a message such as "--window: 0 is out of range
 * [10, 3600000]"; cfg is then unspecified. --help and --version win over everything
 * else and skip the config file.
 */
int settings_parse_args(struct dqd_config *cfg, int argc, char **argv,
                        enum settings_action *action);

/*
 * Sets one setting from text, as the flag would ("window", "2000"). `name` is the
 * setting's name (the JSON key). Returns 0, or DQ_ENOTFOUND for an unknown name, or
 * the validation error. Does not re-run the cross-setting checks of settings_finish().
 */
int settings_set(struct dqd_config *cfg, const char *name, const char *value);

/*
 * Applies a JSON config document held in memory (`origin` names it in messages, e.g.
 * the file path). Keys are setting names plus "wrappers" and "probes"; unknown keys,
 * wrong JSON types, out-of-range values and malformed JSON ("origin:LINE:COL: text")
 * are errors. Keys not present keep their current value; a "wrappers" or "probes"
 * section replaces the current one. On error cfg may be partly updated (callers start
 * again from settings_defaults(), as settings_parse_args() does).
 */
int settings_load_json(struct dqd_config *cfg, const char *text, size_t len, const char *origin);

/* Reads a JSON config file (at most DQD_CONFIG_MAX_BYTES) with settings_load_json(). */
int settings_load_file(struct dqd_config *cfg, const char *path);

/*
 * Cross-setting checks and derived values, run by settings_parse_args() last: resolves
 * an unset lag to the window, refuses the same non-zero port for --listen and --http.
 */
int settings_finish(struct dqd_config *cfg);

/*
 * Fills cfg->token: the first line of the file cfg->api_token names (trailing CR/LF and
 * blanks dropped), else the environment variable DQD_API_TOKEN, else the file api_token
 * of systemd's $CREDENTIALS_DIRECTORY (LoadCredential=api_token:FILE; cfg->api_token then
 * names it), else "". DQ_EIO when the
 * file cannot be read, DQ_EINVAL for an empty token, one with blanks or control
 * characters, or one of DQD_TOKEN_MAX bytes or more; the message names the file. When the
 * file is readable by other users, *warning (may be NULL) is set to 1.
 */
int settings_resolve_token(struct dqd_config *cfg, int *warning);

/*
 * Writes the effective configuration as a JSON config file (every setting that a file
 * may hold, plus wrappers and probes), loadable again with settings_load_json().
 * Returns 0, DQ_ENOMEM or DQ_EIO.
 */
int settings_write_json(const struct dqd_config *cfg, FILE *out);

/* Prints the usage text generated from the table. */
void settings_print_help(FILE *out, const char *argv0);

/* Prints the Markdown reference of all settings (the content of docs/configuration.md). */
void settings_render_markdown(FILE *out);

/*
 * Splits "HOST:PORT" (HOST a name, an IPv4 address or a bracketed IPv6 address; PORT
 * 0 … 65535) into host (without brackets, NUL-terminated in host_cap bytes) and port.
 * Returns 0 or DQ_EINVAL with a message.
 */
int settings_split_hostport(const char *hp, char *host, size_t host_cap, int *port);

/* Name of a log level ("info"); "?" when out of range. */
const char *settings_log_level_name(int level);

/* The entry of cfg->probes with that name, or NULL. */
const struct dqd_probe_config *settings_find_probe(const struct dqd_config *cfg, const char *name);

#endif /* DQD_SETTINGS_H */
