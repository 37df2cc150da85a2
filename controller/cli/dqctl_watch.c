/*
 * dqctl_watch.c: `dqctl watch` (see dqctl_watch.h): one libcurl GET of /api/v1/events
 * whose bytes go through the event-stream parser, each event printed as a line as it
 * arrives (flushed, so a pipe sees it at once).
 */
#include "dqctl.h"
#include "dqctl_api.h"
#include "dqctl_json.h"
#include "dqctl_log.h"
#include "dqctl_watch.h"

#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the event-stream parser --------------------------------------------------------- */

void dqctl_sse_init(struct dqctl_sse *p, dqctl_sse_fn fn, void *ctx) {
    memset(p, 0, sizeof *p);
    p->fn = fn;
    p->ctx = ctx;
}

void dqctl_sse_release(struct dqctl_sse *p) {
    free(p->line);
    free(p->data);
    p->line = p->data = NULL;
    p->line_len = p->line_cap = p->data_len = p->data_cap = 0;
}

static int grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) {
        return 0;
    }
    if (need > DQCTL_SSE_MAX_EVENT + 1024) {
        return -1;
    }
    size_t c = *cap ? *cap : 1024;
    while (c < need) {
        c *= 2;
    }
    char *b = realloc(*buf, c);
    if (!b) {
        return -1;
    }
    *buf = b;
    *cap = c;
    return 0;
}

/* One complete line (without its end). Returns 1 to stop, −1 on failure, else 0. */
static int sse_line(struct dqctl_sse *p, const char *line, size_t len) {
    if (len == 0) {
        int stop = 0;
        if (p->data_len > 0) {
            p->data[--p->data_len] = '\0'; /* the last data line's '\n' */
            stop = p->fn(p->ctx, p->type[0] ? p->type : "message", p->id, p->data, p->data_len);
        }
        p->data_len = 0;
        p->type[0] = '\0';
        return stop ? 1 : 0;
    }
    if (line[0] == ':') {
        return 0;
    }
    const char *colon = memchr(line, ':', len);
    size_t name_len = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    size_t value_len = colon ? len - name_len - 1 : 0;
    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 4 && memcmp(line, "data", 4) == 0) {
        if (p->data_len + value_len + 2 > DQCTL_SSE_MAX_EVENT ||
            grow(&p->data, &p->data_cap, p->data_len + value_len + 2) < 0) {
            p->overflow = 1;
            return -1;
        }
        memcpy(p->data + p->data_len, value, value_len);
        p->data_len += value_len;
        p->data[p->data_len++] = '\n';
        p->data[p->data_len] = '\0';
    } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
        snprintf(p->type, sizeof p->type, "%.*s", (int)value_len, value);
    } else if (name_len == 2 && memcmp(line, "id", 2) == 0) {
        snprintf(p->id, sizeof p->id, "%.*s", (int)value_len, value);
    }
    return 0; /* retry and unknown fields are ignored */
}

int dqctl_sse_feed(struct dqctl_sse *p, const char *bytes, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char ch = bytes[i];
        if (ch == '\n' && p->cr) {
            p->cr = 0; /* the LF of a CRLF */
            continue;
        }
        p->cr = ch == '\r';
        if (ch == '\n' || ch == '\r') {
            int rc = sse_line(p, p->line ? p->line : "", p->line_len);
            p->line_len = 0;
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        if (p->line_len + 2 > DQCTL_SSE_MAX_EVENT ||
            grow(&p->line, &p->line_cap, p->line_len + 2) < 0) {
            p->overflow = 1;
            return -1;
        }
        p->line[p->line_len++] = ch;
    }
    return 0;
}

/* ---- rendering ----------------------------------------------------------------------- */

/* "09:26:01.000" (UTC) */
static void clock_time(double unix_s, char *buf, size_t cap) {
    char full[64];
    dqctl_format_time(unix_s, full, sizeof full);
    const char *t = strlen(full) > 11 ? full + 11 : full;
    size_t n = strlen(t) < cap ? strlen(t) : cap - 1;
    memcpy(buf, t, n);
    buf[n] = '\0';
}

static void duration(double s, char *buf, size_t cap) {
    if (isfinite(s)) {
        dqctl_format_duration(s, buf, cap);
    } else {
        snprintf(buf, cap, "-");
    }
}

struct ranked {
    const json_t *p;
    double n;
};

static int by_n_desc(const void *a, const void *b) {
    double x = ((const struct ranked *)a)->n, y = ((const struct ranked *)b)->n;
    return x < y ? 1 : x > y ? -1 : 0;
}

#define WATCH_SHOWN 3 /* probes named on a window's line */

static void render_window(FILE *out, const json_t *d) {
    const json_t *probes = json_object_get(d, "probes");
    size_t n = json_array_size(probes);
    double total = 0;
    size_t no_data = 0;
    struct ranked *r = calloc(n ? n : 1, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(probes, i);
        double k = jnum(p, "n");
        total += isfinite(k) ? k : 0;
        no_data += json_is_true(json_object_get(p, "no_data"));
        if (r) {
            r[i].p = p;
            r[i].n = isfinite(k) ? k : 0;
        }
    }
    char start[32], len[32];
    clock_time(jnum(d, "start"), start, sizeof start);
    duration(jnum(d, "end") - jnum(d, "start"), len, sizeof len);
    fprintf(out, "window   %s +%s: %zu probe%s, %.0f instance%s", start, len, n, n == 1 ? "" : "s",
            total, total == 1 ? "" : "s");
    if (no_data) {
        fprintf(out, ", %zu with no data", no_data);
    }
    if (r) {
        qsort(r, n, sizeof *r, by_n_desc);
        for (size_t i = 0; i < n && i < WATCH_SHOWN; i++) {
            char p50[32], p95[32];
            duration(jnum(r[i].p, "p50"), p50, sizeof p50);
            duration(jnum(r[i].p, "p95"), p95, sizeof p95);
            double lost = jnum(r[i].p, "lost");
            char escaped[300];
            dqctl_escape(jstr(r[i].p, "name", "?"), escaped, sizeof escaped);
            fprintf(out, "; %s n %.0f, p50 %s, p95 %s, lost ", escaped, r[i].n, p50, p95);
            if (isfinite(lost)) {
                fprintf(out, "%.2f%%", lost * 100.0);
            } else {
                fprintf(out, "-");
            }
        }
        if (n > WATCH_SHOWN) {
            fprintf(out, "; %zu more", n - WATCH_SHOWN);
        }
        free(r);
    }
    fputc('\n', out);
}

static void render_probe(FILE *out, const json_t *d) {
    const json_t *s = json_object_get(d, "summary");
    char name[300];
    dqctl_escape(jstr(d, "probe", "?"), name, sizeof name);
    fprintf(out, "probe    %s: %s", name, jstr(d, "change", "?"));
    if (json_is_object(s)) {
        char dmax[32];
        duration(jnum(s, "dmax_ms") * 1e-3, dmax, sizeof dmax);
        fprintf(out, " (now %s, dMax %s, QTA %s)",
                json_is_true(json_object_get(s, "enabled")) ? "enabled" : "disabled", dmax,
                json_is_object(json_object_get(s, "qta")) ? "set" : "none");
    }
    fputc('\n', out);
}

static void render_names(FILE *out, const json_t *a) {
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) {
        char name[300];
        dqctl_escape(json_string_value(v) ? json_string_value(v) : "?", name, sizeof name);
        fprintf(out, "%s%s", i ? ", " : "", name);
    }
}

void dqctl_render_event(FILE *out, double now_s, const char *type, const json_t *d) {
    char when[32];
    clock_time(now_s, when, sizeof when);
    fprintf(out, "%s ", when);
    char probe[300], node[300], reason[2048];
    dqctl_escape(jstr(d, "probe", "?"), probe, sizeof probe);
    dqctl_escape(jstr(d, "node", "?"), node, sizeof node);
    if (strcmp(type, "hello") == 0) {
        fprintf(out, "hello    watching ");
        render_names(out, json_object_get(d, "types"));
        fprintf(out, " (events so far: %.0f)\n", jnum(d, "id"));
    } else if (strcmp(type, "window") == 0) {
        render_window(out, d);
    } else if (strcmp(type, "probe") == 0) {
        render_probe(out, d);
    } else if (strcmp(type, "diagram") == 0) {
        const json_t *g = json_object_get(d, "diagram");
        fprintf(out, "diagram  loaded: %zu probes, roots ",
                json_array_size(json_object_get(g, "probes")));
        render_names(out, json_object_get(g, "roots"));
        fputc('\n', out);
    } else if (strcmp(type, "trigger_fired") == 0 || strcmp(type, "trigger_cleared") == 0) {
        const json_t *inv = json_object_get(d, "investigation");
        fprintf(out, "trigger  %s %s %s (trigger #%.0f", probe, jstr(d, "kind", "?"),
                type[8] == 'f' ? "FIRED" : "cleared", jnum(d, "trigger"));
        if (json_is_integer(inv)) {
            fprintf(out, ", investigation %lld", (long long)json_integer_value(inv));
        }
        fprintf(out, ")\n");
    } else if (strcmp(type, "hypothesis") == 0) {
        dqctl_escape(jstr(d, "reason", ""), reason, sizeof reason);
        const char *action = jstr(d, "action", "?");
        int root = strcmp(action, "root") == 0; /* the step that opened it: "opened at X" */
        fprintf(out, "step     investigation %.0f #%.0f %s%s", jnum(d, "investigation"),
                jnum(d, "id"), root ? "opened at " : action, root ? "" : " ");
        fputs(node, out);
        const json_t *probes = json_object_get(d, "probes");
        if (json_array_size(probes) > 0) {
            fprintf(out, " [");
            render_names(out, probes);
            fprintf(out, "]");
        }
        fprintf(out, "%s%s\n", reason[0] ? ": " : "", reason);
    } else if (strcmp(type, "verdict") == 0) {
        /* "localized at fb and sb: …", the reason without its own "localized at X: " */
        const json_t *s = json_object_get(d, "summary");
        const json_t *ev = json_object_get(s, "evidence");
        char head[1300], at[1400];
        const char *where = jstr(s, "node", "");
        dqctl_verdict_words(jstr(d, "verdict", "?"), where[0] ? where : NULL, ev, head,
                            sizeof head);
        dqctl_escape(head, at, sizeof at);
        dqctl_escape(dqctl_strip_verdict(jstr(ev, "reason", "")), reason, sizeof reason);
        fprintf(out, "verdict  investigation %.0f at %s: %s%s%s\n", jnum(d, "investigation"), node,
                at, reason[0] ? ": " : "", reason);
    } else if (strcmp(type, "probe_silent") == 0 || strcmp(type, "probe_data_returned") == 0) {
        char conn[300];
        dqctl_escape(jstr(d, "connection", ""), conn, sizeof conn);
        int live_only = json_is_false(json_object_get(d, "instances"));
        fprintf(out, "silence  %s %s%s%s\n", probe,
                type[6] == 's'
                    ? "is silent: no data from "
                    : (live_only ? "is no longer silent: a connection is live (no instance "
                                   "of it yet)"
                                 : "has data again"),
                type[6] == 's' ? (conn[0] ? conn : "any connection") : "",
                type[6] == 's' && !json_is_true(json_object_get(d, "connected")) ? " (disconnected)"
                                                                                 : "");
    } else {
        char *text = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
        fprintf(out, "%-8s %s\n", type, text ? text : "?");
        free(text);
    }
}

/* ---- the command ----------------------------------------------------------------------- */

struct watch {
    CURL *curl;
    struct dqctl_sse sse;
    int json;
    long count;     /* events to print before stopping (hello excluded); 0: no limit */
    long printed;   /* events printed (hello excluded) */
    int done;       /* --count reached */
    int bad;        /* an event whose data is not JSON */
    long status;    /* HTTP status, once known */
    char *err_body; /* the body of an answer that is not 200 */
    size_t err_len;
};

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int on_event(void *ctx, const char *type, const char *id, const char *data, size_t len) {
    struct watch *w = ctx;
    json_error_t jerr;
    json_t *d = json_loadb(data, len, JSON_DECODE_ANY, &jerr);
    if (!d) {
        w->bad++;
        return 0;
    }
    FILE *out = dqctl_out();
    if (w->json) {
        json_t *line = json_pack("{s:s,s:s,s:O}", "event", type, "id", id, "data", d);
        char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
        if (text) {
            fprintf(out, "%s\n", text);
        }
        free(text);
        json_decref(line);
    } else {
        dqctl_render_event(out, wall_now(), type, d);
    }
    fflush(out);
    json_decref(d);
    if (strcmp(type, "hello") != 0) {
        w->printed++;
        if (w->count > 0 && w->printed >= w->count) {
            w->done = 1;
            return 1;
        }
    }
    return 0;
}

static size_t on_bytes(char *ptr, size_t size, size_t nmemb, void *ud) {
    struct watch *w = ud;
    size_t len = size * nmemb;
    if (w->status == 0) {
        curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &w->status);
    }
    if (w->status != 200) { /* an error envelope: keep it for the message */
        if (w->err_len + len > 65536) {
            return 0;
        }
        char *b = realloc(w->err_body, w->err_len + len + 1);
        if (!b) {
            return 0;
        }
        memcpy(b + w->err_len, ptr, len);
        w->err_len += len;
        b[w->err_len] = '\0';
        w->err_body = b;
        return len;
    }
    return dqctl_sse_feed(&w->sse, ptr, len) == 0 ? len : 0;
}

static const char watch_help[] =
    "usage: dqctl watch [--types LIST] [--count N] [--for DURATION] [--server URL] [--json]\n"
    "dqd's live events (GET /api/v1/events), one line each as they happen: windows\n"
    "closed (the probes with the most instances and their p50, p95, lost), probes\n"
    "changed, diagrams loaded, triggers fired and cleared, investigation steps\n"
    "(hypotheses) with their reasons, verdicts, probes gone silent and back.\n"
    "  --types LIST     only these types, comma-separated: window, probe, diagram,\n"
    "                   trigger_fired, trigger_cleared, hypothesis, verdict,\n"
    "                   probe_silent, probe_data_returned (hello always comes first)\n"
    "  --count N        stop after N events (hello not counted)\n"
    "  --for DURATION   stop after that long (a bare number is ms: --for 30s)\n"
    "  --json           each event as one line {\"event\", \"id\", \"data\"}\n"
    "Exit 0 after --count events or --for; 3 when dqd cannot be reached or refuses (an\n"
    "unknown type), or ends the stream (it stopped, or dropped this client because it\n"
    "did not read).\n";

int dqctl_watch_main(int argc, char **argv) {
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_WATCH, 0, 0, watch_help, &o);
    if (rc >= 0) {
        return rc;
    }
    struct watch w = {.json = o.json};
    if (o.count) {
        char *end = NULL;
        w.count = strtol(o.count, &end, 10);
        if (!*o.count || *end || w.count < 1) {
            dqctl_complain_typed("usage", "watch: --count must be a whole number ≥ 1, not \"%s\"",
                                 o.count);
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
    }
    double for_s = 0;
    if (o.for_ && (dqctl_parse_duration(o.for_, 1e-3, &for_s) < 0 || for_s <= 0)) {
        dqctl_complain_typed(
            "usage", "watch: --for must be a duration > 0 (30s, 1500ms), not \"%s\"", o.for_);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    char url[4096], types[1024] = "";
    if (o.types) {
        char *esc = curl_easy_escape(NULL, o.types, 0);
        snprintf(types, sizeof types, "?types=%s", esc ? esc : "");
        curl_free(esc);
    }
    size_t sl = strlen(o.server);
    while (sl > 0 && o.server[sl - 1] == '/') {
        sl--;
    }
    snprintf(url, sizeof url, "%.*s/api/v1/events%s", (int)sl, o.server, types);
    w.curl = curl_easy_init();
    if (!w.curl) {
        dqctl_complain("cannot initialise libcurl");
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    dqctl_sse_init(&w.sse, on_event, &w);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(w.curl, CURLOPT_URL, url);
    curl_easy_setopt(w.curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(w.curl, CURLOPT_USERAGENT, "dqctl/0.1");
    curl_easy_setopt(w.curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(w.curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(w.curl, CURLOPT_TIMEOUT_MS, (long)(for_s * 1e3));
    curl_easy_setopt(w.curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(w.curl, CURLOPT_WRITEFUNCTION, on_bytes);
    curl_easy_setopt(w.curl, CURLOPT_WRITEDATA, &w);
    CURLcode cc = curl_easy_perform(w.curl);
    long os_errno = 0;
    curl_easy_getinfo(w.curl, CURLINFO_OS_ERRNO, &os_errno);
    if (w.status == 0) {
        curl_easy_getinfo(w.curl, CURLINFO_RESPONSE_CODE, &w.status);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(w.curl);
    int code = DQCTL_EXIT_OK;
    if (w.done || (cc == CURLE_OPERATION_TIMEDOUT && for_s > 0 && w.status == 200)) {
        code = DQCTL_EXIT_OK;
    } else if (w.status != 0 && w.status != 200) {
        json_error_t jerr;
        json_t *env = w.err_body ? json_loadb(w.err_body, w.err_len, 0, &jerr) : NULL;
        dqctl_complain_typed(jstr(env, "errorType", "bad_answer"), "%s (HTTP %ld)",
                             jstr(env, "error", "GET /api/v1/events failed"), w.status);
        json_decref(env);
        code = DQCTL_EXIT_API;
    } else if (cc != CURLE_OK && w.status == 0) {
        dqctl_complain_typed("unreachable",
                             "cannot reach dqd at %.*s: %s. Is dqd running? Set --server or "
                             "DQD_URL.",
                             (int)sl, o.server,
                             os_errno ? strerror((int)os_errno)
                                      : (errbuf[0] ? errbuf : curl_easy_strerror(cc)));
        code = DQCTL_EXIT_API;
    } else if (w.sse.overflow) {
        dqctl_complain("an event from dqd was larger than %u MiB or memory ran out",
                       DQCTL_SSE_MAX_EVENT >> 20);
        code = DQCTL_EXIT_API;
    } else {
        dqctl_complain_typed("unreachable",
                             "dqd ended the event stream after %ld events (it stopped, or "
                             "dropped this client for not reading fast enough)",
                             w.printed);
        code = DQCTL_EXIT_API;
    }
    dqctl_sse_release(&w.sse);
    free(w.err_body);
    return dqctl_end_cmd(code);
}
