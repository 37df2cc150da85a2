/*
 * dqctl_call.c: the plumbing every dqctl subcommand that talks to dqd shares (declared in
 * dqctl_api.h): where output and errors go (text, or JSON with --json), one API call
 * with libcurl's easy interface (a CLI makes a handful of sequential calls: the token
 * from DQD_TOKEN or DQD_TOKEN_FILE, the answer read into a buffer capped at
 * DQCTL_MAX_RESPONSE, the Prometheus-style envelope unwrapped), the "GET, then show"
 * body, and a subcommand's start (options, --help) and end.
 */
#include "dqctl_api.h"
#include "dqctl_json.h"
#include "dqctl_set_err.h"

#include "dq_strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "dqctl.h"

static FILE *out_fp;
static FILE *err_fp;

void dqctl_api_set_output(FILE *out, FILE *err) {
    out_fp = out;
    err_fp = err;
}

FILE *dqctl_out(void) {
    return out_fp ? out_fp : stdout;
}

FILE *dqctl_err(void) {
    return err_fp ? err_fp : stderr;
}

static int json_errors; /* --json: errors as JSON objects */

void dqctl_set_json_errors(int on) {
    json_errors = on;
}

/* Prints one error: "dqctl: MESSAGE", or with --json {"status":"error","errorType":TYPE,
 * "error":MESSAGE[,"http_status":N]} on one line. */
static void complain_as(const char *type, long http_status, const char *msg) {
    FILE *e = dqctl_err();
    if (!json_errors) {
        fprintf(e, "dqctl: %s\n", msg);
        return;
    }
    json_t *o = json_pack("{s:s,s:s,s:s}", "status", "error", "errorType", type, "error", msg);
    if (o && http_status > 0) {
        json_object_set_new(o, "http_status", json_integer(http_status));
    }
    if (o) {
        json_dumpf(o, e, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(o);
    }
    fputc('\n', e);
}

void dqctl_complain_typed(const char *type, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    complain_as(type, 0, msg);
}

void dqctl_complain(const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    complain_as("error", 0, msg);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

struct fetch {
    char *data;
    size_t len;
    size_t cap;
    int over; /* the answer passed DQCTL_MAX_RESPONSE */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud) {
    struct fetch *f = ud;
    size_t n = size * nmemb;
    if (n > DQCTL_MAX_RESPONSE - f->len) {
        f->over = 1;
        return 0;
    }
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n + 1) {
            cap *= 2;
        }
        char *d = realloc(f->data, cap);
        if (!d) {
            f->over = 1;
            return 0;
        }
        f->data = d;
        f->cap = cap;
    }
    memcpy(f->data + f->len, ptr, n);
    f->len += n;
    f->data[f->len] = '\0';
    return n;
}

/*
 * One API call: method on server+path with an optional JSON body. On success *data is a
 * new reference to the envelope's data and the result is 0; otherwise the message goes to
 * msg and the result is DQCTL_EXIT_API (connection, HTTP or envelope error), or
 * DQCTL_EXIT_USAGE when the request could not be made (a URL too long, no memory).
 */
struct api_failure {
    char type[64]; /* the API's errorType, "unreachable", "bad_answer", "usage" */
    long http_status;
};

static int api_request(const struct dqctl_opts *o, const char *method, const char *path,
                       const json_t *body, const char *raw, size_t raw_len, json_t **data,
                       char *msg, size_t msg_cap, struct api_failure *failure) {
    snprintf(failure->type, sizeof failure->type, "usage");
    failure->http_status = 0;
    char url[4096];
    size_t sl = strlen(o->server);
    while (sl > 0 && o->server[sl - 1] == '/') {
        sl--;
    }
    if (snprintf(url, sizeof url, "%.*s%s", (int)sl, o->server, path) >= (int)sizeof url) {
        dqctl_set_err(msg, msg_cap, "URL too long");
        return DQCTL_EXIT_USAGE;
    }
    char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !payload) {
        dqctl_set_err(msg, msg_cap, "out of memory");
        return DQCTL_EXIT_USAGE;
    }
    size_t payload_len = payload ? strlen(payload) : 0;
    if (!body && raw) {
        payload = malloc(raw_len + 1);
        if (!payload) {
            dqctl_set_err(msg, msg_cap, "out of memory");
            return DQCTL_EXIT_USAGE;
        }
        memcpy(payload, raw, raw_len);
        payload[raw_len] = '\0';
        payload_len = raw_len;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        free(payload);
        dqctl_set_err(msg, msg_cap, "cannot initialise libcurl");
        return DQCTL_EXIT_USAGE;
    }
    struct fetch f = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (payload) {
        hdrs = curl_slist_append(hdrs, body ? "Content-Type: application/json"
                                            : "Content-Type: text/plain; charset=utf-8");
    } else {
        /* no body: no type either (libcurl's default is a form's, which dqd refuses) */
        hdrs = curl_slist_append(hdrs, "Content-Type:");
    }
    /* dqd wants its api_token on changes (and on reads beyond loopback): DQD_TOKEN carries
     * it, or the first line of the file DQD_TOKEN_FILE names */
    const char *token = getenv("DQD_TOKEN");
    char from_file[512] = "";
    const char *token_file = getenv("DQD_TOKEN_FILE");
    if ((!token || !*token) && token_file && *token_file) {
        FILE *tf = fopen(token_file, "r");
        if (tf) {
            if (fgets(from_file, sizeof from_file, tf)) {
                from_file[strcspn(from_file, "\r\n")] = '\0';
            }
            fclose(tf);
        } else {
            fprintf(stderr, "dqctl: DQD_TOKEN_FILE: cannot read %s: %s (sending no token)\n",
                    token_file, strerror(errno));
        }
        token = from_file;
    }
    char auth[600];
    if (token && *token && strlen(token) < 512) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "dqctl/0.1");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload ? payload : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, payload ? (long)payload_len : 0L);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    long os_errno = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(payload);
    int result = DQCTL_EXIT_API;
    if (rc != CURLE_OK) {
        if (f.over) {
            dqctl_set_err(msg, msg_cap, "the answer of dqd at %.*s is larger than %u MiB", (int)sl,
                          o->server, DQCTL_MAX_RESPONSE >> 20);
        } else {
            const char *why =
                os_errno ? strerror((int)os_errno) : (errbuf[0] ? errbuf : curl_easy_strerror(rc));
            dqctl_set_err(msg, msg_cap,
                          "cannot reach dqd at %.*s: %s. Is dqd running? Set --server or DQD_URL.",
                          (int)sl, o->server, why);
        }
        snprintf(failure->type, sizeof failure->type, "unreachable");
        free(f.data);
        return result;
    }
    json_error_t jerr;
    json_t *env = f.data ? json_loadb(f.data, f.len, 0, &jerr) : NULL;
    const char *st = jstr(env, "status", NULL);
    failure->http_status = status;
    if (!json_is_object(env) || !st) {
        dqctl_set_err(msg, msg_cap,
                      "%s %s: HTTP %ld without the API's JSON envelope (is %.*s a dqd?)", method,
                      path, status, (int)sl, o->server);
        snprintf(failure->type, sizeof failure->type, "bad_answer");
    } else if (strcmp(st, "success") != 0 || status >= 400) {
        dqctl_set_err(msg, msg_cap, "%s (HTTP %ld, %s)",
                      jstr(env, "error", "error without a message"), status,
                      jstr(env, "errorType", "?"));
        snprintf(failure->type, sizeof failure->type, "%s", jstr(env, "errorType", "internal"));
        if (json_errors) { /* the API's own message, without dqctl's decoration */
            dqctl_set_err(msg, msg_cap, "%s", jstr(env, "error", "error without a message"));
        }
    } else {
        *data = json_incref(json_object_get(env, "data"));
        result = *data ? DQCTL_EXIT_OK : DQCTL_EXIT_API;
        if (!*data) {
            dqctl_set_err(msg, msg_cap, "%s %s: the answer has no data", method, path);
        }
    }
    json_decref(env);
    free(f.data);
    return result;
}

/* The command running and the probe it names (dqctl_start_cmd, dqctl_note_probe): what an
 * unknown probe's error says. */
static char cur_cmd[64];
static unsigned cur_accepts;
static char cur_probe[1024];

void dqctl_note_probe(const char *name) {
    snprintf(cur_probe, sizeof cur_probe, "%s", name ? name : "");
}

/* 1 when `name` is among the probes dqd knows (the list in probes). */
static int listed(const json_t *probes, const char *name) {
    for (size_t i = 0; i < json_array_size(probes); i++) {
        const char *n = json_string_value(json_object_get(json_array_get(probes, i), "name"));
        if (n && strcmp(n, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A probe route answered 404 for the probe the command names: when dqd does not know the
 * name at all, the error in the CLI's words (what the name is not, the names near it, and
 * --create for a command that can register one) into msg; 0 when it is not that case. */
static int unknown_probe(const struct dqctl_opts *o, const char *path, const struct api_failure *f,
                         char *msg, size_t cap) {
    if (!cur_probe[0] || f->http_status != 404 || strcmp(f->type, "not_found") != 0 ||
        (strncmp(path, "/api/v1/probes/", 15) != 0 && strncmp(path, "/api/v1/why/", 12) != 0)) {
        return 0;
    }
    json_t *probes = NULL;
    char err[512];
    struct api_failure lf;
    if (api_request(o, "GET", "/api/v1/probes", NULL, NULL, 0, &probes, err, sizeof err, &lf) !=
            DQCTL_EXIT_OK ||
        listed(probes, cur_probe)) {
        json_decref(probes); /* the probe exists: the API's own words say what is missing */
        return 0;
    }
    char near[600], name[300];
    dqctl_escape(cur_probe, name, sizeof name);
    size_t n = dqctl_did_you_mean(cur_probe, probes, near, sizeof near);
    json_decref(probes);
    int creates = (cur_accepts & DQCTL_OPT_CREATE) && strcmp(cur_cmd, "disable") != 0;
    struct dq_strbuf b;
    dq_strbuf_init(&b, msg, cap);
    dq_strbuf_printf(&b,
                     "%s: dqd knows no probe named \"%s\" (it is not in the diagram and no "
                     "wrapper has reported it)",
                     cur_cmd, name);
    if (n) {
        dq_strbuf_printf(&b, ". Did you mean %s?", near);
    } else {
        dq_strbuf_printf(&b, "; `dqctl probes` lists the names it knows");
    }
    if (creates) {
        dq_strbuf_printf(&b, "%s To register a new name, add --create.", n ? "" : ".");
    }
    return 1;
}

int dqctl_api_call(const struct dqctl_opts *o, const char *method, const char *path,
                   const json_t *body, json_t **data) {
    char msg[4096];
    struct api_failure f;
    int rc = api_request(o, method, path, body, NULL, 0, data, msg, sizeof msg, &f);
    if (rc != DQCTL_EXIT_OK) {
        unknown_probe(o, path, &f, msg, sizeof msg);
        complain_as(f.type, f.http_status, msg);
    }
    return rc;
}

int dqctl_api_call_text(const struct dqctl_opts *o, const char *method, const char *path,
                        const char *text, size_t len, json_t **data, char *err, size_t err_cap,
                        char *type, size_t type_cap) {
    struct api_failure f;
    int rc = api_request(o, method, path, NULL, text ? text : "", text ? len : 0, data, err,
                         err_cap, &f);
    if (rc != DQCTL_EXIT_OK && type_cap) {
        snprintf(type, type_cap, "%s", f.type);
    }
    return rc;
}

int dqctl_api_get_quiet(const struct dqctl_opts *o, const char *path, json_t **data, char *err,
                        size_t err_cap) {
    struct api_failure f;
    return api_request(o, "GET", path, NULL, NULL, 0, data, err, err_cap, &f);
}

void dqctl_print_json(const json_t *data) {
    FILE *out = dqctl_out();
    /* One line: ΔQ arrays hold thousands of numbers; pipe to jq for an indented view. */
    json_dumpf(data, out, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    fputc('\n', out);
}

/* GET path, then show the answer as v says (dqctl_show_main's middle). */
static int get_and_show(const struct dqctl_opts *o, const char *path, const struct dqctl_view *v) {
    json_t *data = NULL;
    int rc = dqctl_api_call(o, "GET", path, NULL, &data);
    if (rc == DQCTL_EXIT_OK) {
        if (o->json) {
            dqctl_print_json(data);
        } else if (v->not_list && !json_is_array(data)) {
            dqctl_complain("%s", v->not_list);
            rc = DQCTL_EXIT_API;
        } else if (v->not_list && v->empty && json_array_size(data) == 0) {
            fprintf(dqctl_out(), "%s\n", v->empty);
        } else {
            v->render(dqctl_out(), data);
        }
        /* judged on the answer, not on what was printed: --json exits the same way */
        if (rc == DQCTL_EXIT_OK && v->problem && v->problem(data)) {
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return rc;
}

/* "/api/v1/probes/<escaped name><suffix>" */
int dqctl_probe_path(const char *name, const char *suffix, char *buf, size_t cap) {
    char esc[1024];
    dqctl_note_probe(name);
    if (!*name || dqctl_url_escape(name, esc, sizeof esc) < 0) {
        dqctl_complain("invalid probe name");
        return -1;
    }
    if (snprintf(buf, cap, "/api/v1/probes/%s%s", esc, suffix) >= (int)cap) {
        dqctl_complain("probe name too long");
        return -1;
    }
    return 0;
}

/* ---- subcommands ------------------------------------------------------------------------ */

static const char common_help[] =
    "options:\n"
    "  --server URL   dqd's HTTP API (default: $DQD_URL, else " DQCTL_DEFAULT_SERVER ")\n"
    "  --json         JSON instead of text: the API's data object on one line, unless said\n"
    "                 otherwise above; errors as one line of JSON on stderr\n"
    "  --help         this text\n";

/* Parses options; prints help or the usage error. Returns -1 to go on, else an exit code. */
int dqctl_start_cmd(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                    const char *help, struct dqctl_opts *o) {
    char err[256];
    for (int i = 1; i < argc; i++) { /* before parsing: a usage error is JSON too */
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        if (strcmp(argv[i], "--json") == 0) {
            dqctl_set_json_errors(1);
        }
    }
    if (dqctl_parse_args(argc, argv, accepts, min_pos, max_pos, getenv("DQD_URL"), o, err,
                         sizeof err) < 0) {
        dqctl_complain_typed("usage", "%s", err);
        return DQCTL_EXIT_USAGE;
    }
    dqctl_set_json_errors(o->json);
    snprintf(cur_cmd, sizeof cur_cmd, "%s", argc > 0 ? argv[0] : "dqctl");
    cur_accepts = accepts;
    cur_probe[0] = '\0';
    if (o->help) {
        fprintf(dqctl_out(), "%s%s\n%s", help, common_help, DQCTL_EXIT_TABLE);
        return DQCTL_EXIT_OK;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return -1;
}

int dqctl_end_cmd(int code) {
    curl_global_cleanup();
    return code;
}

int dqctl_show_main(int argc, char **argv, const struct dqctl_show *cmd) {
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, cmd->accepts, cmd->min_pos, cmd->max_pos, cmd->help, &o);
    if (rc >= 0) {
        return rc;
    }
    struct dqctl_show_req r = {.view = cmd->view};
    snprintf(r.path, sizeof r.path, "%s", cmd->path ? cmd->path : "");
    if (cmd->prepare && cmd->prepare(&o, &r) < 0) {
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    return dqctl_end_cmd(get_and_show(&o, r.path, &r.view));
}
