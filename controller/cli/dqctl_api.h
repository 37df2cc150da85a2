/*
 * dqctl_api.h: the dqctl subcommands that talk to dqd's HTTP API (libcurl), and their
 * pure parts (argument, duration and QTA parsing, rendering) exposed for tests.
 *
 * Every entry point has main()'s signature with argv[0] the subcommand's name, and
 * returns the dqctl exit codes of dqctl.h: 0 ok, 1 a problem found (a ΔQ that violates
 * its QTA, a start/stop that reached no wrapper), 2 usage, API or connection error with
 * the message on stderr. Options go after the subcommand: --server URL (else $DQD_URL,
 * else http://127.0.0.1:7401), --json (print the API's data object), --help (dqctl's
 * main also takes --server and --json before the subcommand and passes them on).
 *
 * One header, five files by job: dqctl_api.c (the subcommands on probes and wrappers),
 * dqctl_diagram.c (`diagram`), dqctl_args.c (options, durations, QTA points),
 * dqctl_render.c (the renderers and the QTA check) and dqctl_call.c (output, errors, the
 * API call, the "GET, then show" body, a subcommand's start and end).
 */
#ifndef DQCTL_API_H
#define DQCTL_API_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define DQCTL_DEFAULT_SERVER "http://127.0.0.1:7401"
#define DQCTL_MAX_POS 20               /* positional arguments per subcommand */
#define DQCTL_MAX_QTA_POINTS 16        /* as DQ_QTA_MAX_POINTS */
#define DQCTL_MAX_RESPONSE (64u << 20) /* API answers larger than this are refused */

/* ---- subcommands (rows of the table in dqctl_main.c) -------------------------------- */

int dqctl_status_main(int argc, char **argv);      /* GET /api/v1/status */
int dqctl_probes_main(int argc, char **argv);      /* GET /api/v1/probes */
int dqctl_dq_main(int argc, char **argv);          /* GET /api/v1/probes/NAME/dq (+ summary) */
int dqctl_enable_main(int argc, char **argv);      /* PUT {"enabled":true} */
int dqctl_disable_main(int argc, char **argv);     /* PUT {"enabled":false} */
int dqctl_set_timeout_main(int argc, char **argv); /* PUT {"dmax_ms":MS} */
int dqctl_qta_main(int argc, char **argv);         /* PUT {"qta":…} / show / --clear */
int dqctl_start_main(int argc, char **argv);       /* POST /api/v1/wrapper/start */
int dqctl_stop_main(int argc, char **argv);        /* POST /api/v1/wrapper/stop */
int dqctl_delete_main(int argc, char **argv);      /* DELETE /api/v1/probes/NAME */
int dqctl_diagram_main(int argc, char **argv);     /* GET / PUT /api/v1/diagram */

/*
 * What a probe change did on every wrapper link, from the "commands" of a PUT or DELETE
 * answer ({"link","command","status","detail"}): one line per outcome ("clear_timeout sent
 * to 1 wrapper link (2 127.0.0.1:4001)", "set_timeout sent to the wrapper's command listener
 * (…): 1 link (…)", "NOT applied on 1 wrapper link (…): …", "NOT known to have reached …"),
 * or that no wrapper was connected to tell. Returns how many links did not get it (not
 * applied, failed, or not known: ambiguous).
 */
int dqctl_render_commands(FILE *out, const char *probe, const json_t *commands);

/*
 * The same commands behind one entry, for a caller without a table: cmd is "status",
 * "probes", "dq", "enable", "disable", "set-timeout", "qta", "start" or "stop"; argv[0]
 * is the subcommand's name as for the others. Unknown cmd: message, exit 2.
 */
int dqctl_api_main(const char *cmd, int argc, char **argv);

/* Where the commands print (default stdout / stderr); tests point them at memstreams. */
void dqctl_api_set_output(FILE *out, FILE *err);

/* ---- pure parts ------------------------------------------------------------------- */

/* Parsed options of one subcommand. */
struct dqctl_opts {
    const char *server;             /* base URL, never NULL after dqctl_parse_args */
    int json;                       /* --json */
    int csv;                        /* --csv (dq) */
    int no_plot;                    /* --no-plot (dq) */
    int help;                       /* --help / -h */
    int clear;                      /* --clear (qta) */
    const char *kind;               /* --kind observed|calculated (dq), default "observed" */
    const char *window;             /* --window latest|N (dq), default "latest" */
    const char *max_lost;           /* --max-lost X (qta), NULL when absent */
    const char *strategy;           /* --strategy children|bisect (diagnose), NULL when absent */
    int wait;                       /* --wait (diagnose) */
    int overload;                   /* --overload (diagnose) */
    const char *abort_id;           /* --abort ID (diagnose), NULL when absent */
    const char *timeout;            /* --timeout DURATION (diagnose), NULL when absent */
    int open;                       /* --open (log) */
    const char *limit;              /* --limit N (log), NULL when absent */
    const char *threshold;          /* --threshold X (trigger), NULL when absent */
    const char *fire_after;         /* --fire-after K (trigger), NULL when absent */
    const char *clear_after;        /* --clear-after M (trigger), NULL when absent */
    int disable;                    /* --disable (trigger) */
    int create;                     /* --create (enable, disable, set-timeout, qta) */
    const char *types;              /* --types LIST (watch), NULL when absent */
    const char *count;              /* --count N (watch), NULL when absent */
    const char *for_;               /* --for DURATION (watch), NULL when absent */
    int infer;                      /* --infer (diagram) */
    const char *service;            /* --service S (diagram --infer), NULL when absent */
    const char *pos[DQCTL_MAX_POS]; /* positional arguments in order */
    int npos;
};

/* Which options a subcommand accepts (bits) and how many positional arguments. */
enum {
    DQCTL_OPT_CSV = 1 << 0,
    DQCTL_OPT_KIND = 1 << 1,
    DQCTL_OPT_WINDOW = 1 << 2,
    DQCTL_OPT_MAX_LOST = 1 << 3,
    DQCTL_OPT_CLEAR = 1 << 4,
    DQCTL_OPT_NO_PLOT = 1 << 5,
    DQCTL_OPT_STRATEGY = 1 << 6,  /* --strategy */
    DQCTL_OPT_WAIT = 1 << 7,      /* --wait and --timeout */
    DQCTL_OPT_OPEN = 1 << 8,      /* --open */
    DQCTL_OPT_LIMIT = 1 << 9,     /* --limit */
    DQCTL_OPT_TRIGGER = 1 << 10,  /* --threshold, --fire-after, --clear-after, --disable */
    DQCTL_OPT_ABORT = 1 << 11,    /* --abort ID */
    DQCTL_OPT_OVERLOAD = 1 << 12, /* --overload */
    DQCTL_OPT_CREATE = 1 << 13,   /* --create */
    DQCTL_OPT_WATCH = 1 << 14,    /* --types, --count, --for */
    DQCTL_OPT_INFER = 1 << 15,    /* --infer and --service S */
};

/*
 * Parses argv[1…] (argv[0] is the subcommand). --server, --json and --help are always
 * accepted, the others when their bit is in `accepts`; "--opt=value" and "--opt value"
 * both work; "--" ends options. env_url is $DQD_URL (may be NULL). Checks the count of
 * positionals unless --help was given. Returns 0, or -1 with a message in err.
 */
int dqctl_parse_args(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                     const char *env_url, struct dqctl_opts *o, char *err, size_t err_cap);

/*
 * Parses a duration (dq_parse_duration): a number with an optional unit ns, us, µs, ms, s,
 * m (minutes). A bare number is in `bare_unit_s` seconds: dqctl's arguments pass 1e-3 (a
 * bare duration is milliseconds, for every duration dqctl takes). No sign; the result
 * is finite and ≥ 0. Returns 0 and *out_s, or -1.
 */
int dqctl_parse_duration(const char *s, double bare_unit_s, double *out_s);

/* Parses an integer in [lo, hi] from the whole of s (decimal, no blanks). Returns 0, or -1
 * leaving *out untouched. */
int dqctl_parse_int(const char *s, long lo, long hi, long *out);

/* Parses a probability or fraction in [0, 1] ("0.95", "95%"). Returns 0 or -1. */
int dqctl_parse_fraction(const char *s, double *out);

/*
 * Parses "P@T" (e.g. "0.95@250ms"): p in (0, 1], T a duration (bare = milliseconds) > 0.
 * Returns 0, or -1 with a message in err.
 */
int dqctl_parse_qta_point(const char *s, double *p, double *t_s, char *err, size_t err_cap);

/*
 * Builds the PUT body {"qta":{"points":[[p,t_s],…],"max_lost":x}} from the point
 * arguments (sorted by time; p must then be non-decreasing, times distinct) and the
 * --max-lost text (NULL: 1 − p of the last point, which adds no constraint beyond the
 * points). Returns a new reference, or NULL with a message in err.
 */
json_t *dqctl_qta_body(const char *const *points, int n, const char *max_lost, char *err,
                       size_t err_cap);

#define DQCTL_SUGGEST_DISTANCE 2 /* "did you mean": names this many edits away */
#define DQCTL_SUGGESTIONS 3      /* at most this many named */

/*
 * The optimal-string-alignment distance between a and b: the fewest insertions,
 * deletions, substitutions and swaps of two neighbouring bytes that turn one into the
 * other ("fornt_b2" is 1 from "front_b2"). Returns it when it is at most max, else max + 1
 * (also for names over 255 bytes).
 */
int dqctl_edit_distance(const char *a, const char *b, int max);

/*
 * "did you mean": the names in `probes` (an API list of objects with "name") within
 * DQCTL_SUGGEST_DISTANCE edits of name, nearest first (ties by name), at most
 * DQCTL_SUGGESTIONS of them, written "a", "a or b", "a, b or c" into buf. Returns how
 * many were named (0: buf is empty).
 */
size_t dqctl_did_you_mean(const char *name, const json_t *probes, char *buf, size_t cap);

/* Percent-encodes a probe name for a URL path segment (unreserved bytes kept). Returns
 * 0, or -1 when out is too small. */
int dqctl_url_escape(const char *in, char *out, size_t cap);

/*
 * Checks a ΔQ answer (the data of …/dq) against a QTA object {"points","max_lost"}.
 * F(t) is read from "cdf" at the grid time floor(t / bin_width) (cdf[i] = P(delay ≤
 * i·bin_width)); beyond the horizon F is the tangible mass. Returns 1 when met, 0 when
 * violated (why describes the worst point), -1 when the objects are malformed.
 */
int dqctl_qta_check(const json_t *dq, const json_t *qta, char *why, size_t why_cap);

/* The width of a table's name column: the longest string field `key` of the objects in
 * list ("?" for one without it), at least min, at most max bytes. */
int dqctl_column_width(const json_t *list, const char *key, int min, int max);

/* A fraction as a percentage, "12.34%" ("-" for NAN). */
void dqctl_format_percent(double f, char *buf, size_t cap);

/* Formats a duration in seconds for people, in the one style of dq_format_duration:
 * "850 µs", "12.5 ms", "1024 ms", "12.5 s". */
void dqctl_format_duration(double s, char *buf, size_t cap);

/* The printf field width that pads s to `width` columns on a terminal: bytes that continue
 * a UTF-8 character (the µ of µs, a Δ) take no column of their own. Negative width (left
 * alignment, as in "%-*s") stays negative. */
int dqctl_cols(const char *s, int width);

/* "0.5@100ms 0.95@250ms, max lost 1%" from a QTA object {"points","max_lost"}. */
void dqctl_format_qta(const json_t *qta, char *buf, size_t cap);

/* "2026-11-22 03:17:49.000" (UTC) from Unix seconds; "-" for NAN. */
void dqctl_format_time(double unix_s, char *buf, size_t cap);

/* Copies in to out (cap bytes, NUL-terminated, cut if need be) with every control
 * character written as \xNN: for anything a wrapper named (node, app, peer). */
void dqctl_escape(const char *in, char *out, size_t cap);

/* Renderers of the human-readable outputs. */
void dqctl_render_status(FILE *out, const json_t *status);
/* One entry of the status's "silent" list: "silent: db since 12:03:04 UTC (4 windows; no
 * data from 3 127.0.0.1:5555 node app@host, disconnected)". */
void dqctl_render_silent(FILE *out, const json_t *silent);
void dqctl_render_probes(FILE *out, const json_t *probes);
void dqctl_render_dq(FILE *out, const json_t *dq, const json_t *qta);
void dqctl_render_dq_csv(FILE *out, const json_t *dq);
/* A width×height character plot of the CDF (and the QTA's points, marked 'Q'). */
void dqctl_render_cdf_plot(FILE *out, const json_t *dq, const json_t *qta, int width, int height);

/* ---- plumbing shared with the other API subcommands (dqctl_log.c) -------------------- */

/* The streams set with dqctl_api_set_output (stdout / stderr by default). */
FILE *dqctl_out(void);
FILE *dqctl_err(void);

/*
 * Prints "dqctl: <message>" and a newline on dqctl_err(); after dqctl_set_json_errors(1)
 * (what --json does) one line of JSON instead: {"status":"error","errorType":TYPE,
 * "error":MESSAGE}, with "http_status" for an API answer. dqctl_complain's TYPE is
 * "error"; the _typed form names it ("usage", "problem", "unreachable", or the API's
 * errorType as dqctl_api_call passes it on).
 */
void dqctl_complain(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void dqctl_complain_typed(const char *type, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Errors as JSON objects (1) or text (0, the default); dqctl_start_cmd sets it from --json. */
void dqctl_set_json_errors(int on);

/*
 * Starts a subcommand: parses argv with dqctl_parse_args ($DQD_URL as the default
 * server). On a usage error prints it and returns 2; on --help prints `help`, the common
 * options and the exit codes (DQCTL_EXIT_TABLE), and returns 0. Otherwise initialises
 * libcurl and returns -1: the caller goes on and ends with dqctl_end_cmd.
 */
int dqctl_start_cmd(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                    const char *help, struct dqctl_opts *o);

/* Releases what dqctl_start_cmd set up; returns code. */
int dqctl_end_cmd(int code);

/*
 * One API call: method on o->server + path with an optional JSON body. On success
 * *data is a new reference to the envelope's data and the result is 0; otherwise the
 * message (connection, HTTP status or the API's error; an unknown probe in the CLI's
 * words, see dqctl_note_probe) is printed and the result is 3 (DQCTL_EXIT_API), or 2 when
 * the request could not be made at all (a URL too long).
 */
int dqctl_api_call(const struct dqctl_opts *o, const char *method, const char *path,
                   const json_t *body, json_t **data);

/*
 * A GET like dqctl_api_call that prints nothing: on failure the message (the same text,
 * without the "dqctl: " prefix) goes to err and the result is 3 (or 2, as there), for a
 * caller that says what it was fetching (dqctl model's measured ΔQs). Needs
 * curl_global_init done.
 */
int dqctl_api_get_quiet(const struct dqctl_opts *o, const char *path, json_t **data, char *err,
                        size_t err_cap);

/*
 * A request whose body is text (the diagram's PUT), printing nothing: 0 and *data, or 3
 * (2 as there) with the message in err and the error's type (as dqctl_complain_typed takes
 * it) in type.
 */
int dqctl_api_call_text(const struct dqctl_opts *o, const char *method, const char *path,
                        const char *text, size_t len, json_t **data, char *err, size_t err_cap,
                        char *type, size_t type_cap);

/*
 * The probe the running command names, for its errors: when a call on a probe route
 * answers 404 and dqd does not list the name, dqctl_api_call says so in the CLI's words,
 * with the names near it ("did you mean") and, for a command that can register a name
 * (it accepts --create and is not disable), that --create does. dqctl_probe_path notes the
 * name; dqctl_start_cmd forgets it.
 */
void dqctl_note_probe(const char *name);

/* Prints data as one line of JSON on dqctl_out() (what --json shows). */
void dqctl_print_json(const json_t *data);

/* How a "GET, then show" subcommand presents the answer for people (--json ignores all
 * but problem). */
struct dqctl_view {
    void (*render)(FILE *out, const json_t *data); /* the rendering; never NULL */
    const char *not_list; /* non-NULL: the answer must be a list, else this complaint, exit 2 */
    const char *empty;    /* with not_list: the line printed (newline added) for an empty list;
                             NULL renders the empty list */
    int (*problem)(const json_t *data); /* NULL, or nonzero when the answer is a problem found */
};

/* What a "GET, then show" subcommand's prepare fills in from its arguments. */
struct dqctl_show_req {
    char path[2048];        /* the GET's path (starts as the command's path, or empty) */
    char text[1200];        /* room for a message the view points at (an empty list's) */
    struct dqctl_view view; /* starts as the command's view */
};

/* A subcommand that is one GET, then shows the answer: status, probes, why, log,
 * snapshots, snapshot, triggers. */
struct dqctl_show {
    const char *help;       /* --help's text (dqctl_start_cmd adds the common options) */
    unsigned accepts;       /* DQCTL_OPT_* bits beyond --server, --json, --help */
    int min_pos, max_pos;   /* positional arguments */
    const char *path;       /* the GET's path, or NULL when prepare writes it */
    struct dqctl_view view; /* how the answer is shown */
    int (*prepare)(const struct dqctl_opts *o, struct dqctl_show_req *r); /* NULL, or: checks
        the arguments and fills r; returns 0, or -1 after reporting a usage error (exit 2) */
};

/*
 * The one body of those subcommands: dqctl_start_cmd with cmd's options; prepare; GET
 * o->server + path; then with --json print the data (dqctl_print_json), else as the view
 * says: complain when it must be a list and is not, print view.empty for an empty list,
 * or call view.render on dqctl_out(); end the command. Returns dqctl_start_cmd's code for
 * --help or a usage error, 2 when prepare refuses the arguments, dqctl_api_call's code on
 * a failed call, 2 when the answer is not the list it should be, 1 when view.problem says
 * the answer is a problem (also with --json), else 0.
 */
int dqctl_show_main(int argc, char **argv, const struct dqctl_show *cmd);

/* "/api/v1/probes/<escaped name><suffix>" into buf; -1 (with a message) when it does not
 * fit or the name is empty. Notes the name (dqctl_note_probe). */
int dqctl_probe_path(const char *name, const char *suffix, char *buf, size_t cap);

#endif /* DQCTL_API_H */
