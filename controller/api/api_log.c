/*
 * api_log.c: the HTTP routes of the adaptive loop (docs/api.md): start a diagnosis,
 * read the hypothesis log (investigations, `why`), snapshots and triggers. Everything is
 * answered from the store, so it explains decisions made before a restart too.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq_error.h"
#include "dq_strbuf.h"

static json_t *json_text_or_null(const char *text) {
    json_error_t err;
    json_t *j = text ? json_loads(text, JSON_DECODE_ANY, &err) : NULL;
    return j ? j : json_null();
}

static double secs(int64_t ns) {
    return (double)ns * 1e-9;
}

/* "2026-11-22 03:40:12 UTC" */
static void clock_text(int64_t ns, char *buf, size_t cap) {
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* An investigation as the API shows it; an overload verdict's figures also at the top
 * ("overload": bottleneck, rates, stages), as they are in its summary's evidence. */
static json_t *investigation_json(const struct store_investigation *inv) {
    json_t *o = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:o,s:o,s:o,s:f,s:o}", "id", (json_int_t)inv->id, "node",
        inv->node, "problem", inv->problem, "strategy", inv->strategy, "origin", inv->origin,
        "trigger", inv->trigger_id ? json_integer(inv->trigger_id) : json_null(), "requested_by",
        inv->requested_by ? json_string(inv->requested_by) : json_null(), "open", inv->open,
        "verdict", inv->verdict ? json_string(inv->verdict) : json_null(), "verdict_node",
        inv->verdict_node ? json_string(inv->verdict_node) : json_null(), "summary",
        json_text_or_null(inv->summary_json), "opened", secs(inv->opened_ns), "closed",
        inv->closed_ns ? json_real(secs(inv->closed_ns)) : json_null());
    json_t *ov =
        json_object_get(json_object_get(json_object_get(o, "summary"), "evidence"), "overload");
    json_object_set(o, "overload", json_is_object(ov) ? ov : json_null());
    return o;
}

static json_t *hypothesis_json(const struct store_hypothesis *h) {
    return json_pack("{s:I,s:I,s:o,s:s,s:s,s:s,s:o,s:o,s:s,s:f}", "id", (json_int_t)h->id,
                     "investigation", (json_int_t)h->investigation, "parent",
                     h->parent ? json_integer(h->parent) : json_null(), "node", h->node, "kind",
                     h->kind, "action", h->action, "probes", json_text_or_null(h->probes_json),
                     "stats", json_text_or_null(h->stats_json), "verdict",
                     h->verdict ? h->verdict : "pending", "time", secs(h->created_ns));
}

static int collect_investigation(void *ctx, const struct store_investigation *inv) {
    json_array_append_new(ctx, investigation_json(inv));
    return 0;
}

static int collect_hypothesis(void *ctx, const struct store_hypothesis *h) {
    json_array_append_new(ctx, hypothesis_json(h));
    return 0;
}

static int collect_command(void *ctx, const struct store_command *c) {
    json_t *o = json_pack("{s:I,s:f,s:s,s:s,s:o,s:o,s:s,s:o}", "id", (json_int_t)c->id, "time",
                          secs(c->time_ns), "wrapper", c->wrapper, "command", c->command, "probe",
                          c->probe ? json_string(c->probe) : json_null(), "args",
                          json_text_or_null(c->args_json), "status", c->status ? c->status : "sent",
                          "detail", c->detail ? json_string(c->detail) : json_null());
    json_object_set_new(o, "hypothesis", c->hypothesis ? json_integer(c->hypothesis) : json_null());
    json_array_append_new(ctx, o);
    return 0;
}

static void reply_store_error(struct http_response *res, int rc, const char *what) {
    if (rc == DQ_ENOTFOUND) {
        http_reply_error(res, 404, "not_found", "%s", what);
    } else {
        http_reply_error(res, 500, "internal", "store: %s", dq_last_error());
    }
}

static int parse_id(const char *s, int64_t *id) {
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || !end || *end || v <= 0) {
        return -1;
    }
    *id = v;
    return 0;
}

/* ---- POST /api/v1/diagnose ----------------------------------------------------------------- */

void api__post_diagnose(struct api *api, const struct api_call *call, struct http_response *res) {
    const struct http_request *req = call->req;
    const char *node = NULL, *strategy = NULL, *who = NULL;
    int overload = 0;
    json_t *body = NULL;
    if (req->body_len > 0) {
        json_error_t err;
        body = json_loadb(req->body, req->body_len, 0, &err);
        if (!json_is_object(body)) {
            http_reply_error(
                res, 400, "bad_data",
                "body must be a JSON object {\"node\", \"strategy\", \"overload\"}: %s",
                body ? "not an object" : err.text);
            json_decref(body);
            return;
        }
        json_t *jn = json_object_get(body, "node"), *js = json_object_get(body, "strategy");
        json_t *jw = json_object_get(body, "requested_by");
        json_t *jo = json_object_get(body, "overload");
        if ((jn && !json_is_string(jn) && !json_is_null(jn)) || (js && !json_is_string(js)) ||
            (jw && !json_is_string(jw))) {
            http_reply_error(res, 400, "bad_data", "node, strategy and requested_by are strings");
            json_decref(body);
            return;
        }
        if (jo && !json_is_boolean(jo)) {
            http_reply_error(res, 400, "bad_data", "overload is true or false");
            json_decref(body);
            return;
        }
        if (jw &&
            !api__text_ok(res, "requested_by", json_string_value(jw), json_string_length(jw))) {
            json_decref(body);
            return;
        }
        overload = json_is_true(jo);
        node = json_string_value(jn);
        strategy = json_string_value(js);
        who = json_string_value(jw);
    }
    int64_t id = 0;
    int rc =
        adapt_diagnose(api->env.adapt, node, strategy, who ? who : "dqctl diagnose", overload, &id);
    if (rc == DQ_OK || rc == DQ_EEXIST) {
        struct store_investigation row;
        (void)row;
        json_t *arr = json_array();
        store_investigation_get(api->env.store, id, collect_investigation, arr);
        json_t *inv = json_array_size(arr) ? json_incref(json_array_get(arr, 0)) : json_null();
        json_decref(arr);
        http_reply_data(res, json_pack("{s:I,s:b,s:o}", "investigation", (json_int_t)id,
                                       "already_open", rc == DQ_EEXIST, "detail", inv));
    } else if (rc == DQ_ENOTFOUND) {
        http_reply_error(res, 404, "not_found", "%s", dq_last_error());
    } else if (rc == DQ_EINVAL || rc == DQ_ESTATE) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
    } else {
        http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
    }
    json_decref(body);
}

/* ---- investigations ---------------------------------------------------------------------- */

void api__get_investigations(struct api *api, const struct api_call *call,
                             struct http_response *res) {
    const struct http_request *req = call->req;
    const char *open = http_request_query(req, "open");
    const char *limit = http_request_query(req, "limit");
    int64_t lim = 50;
    if (limit && (parse_id(limit, &lim) != 0 || lim > 100000)) {
        http_reply_error(res, 400, "bad_data", "limit must be an integer in [1, 100000]");
        return;
    }
    json_t *arr = json_array();
    int rc = store_investigations_each(api->env.store, open && strcmp(open, "1") == 0, (int)lim,
                                       collect_investigation, arr);
    if (rc) {
        json_decref(arr);
        reply_store_error(res, rc, "investigations");
        return;
    }
    http_reply_data(res, arr);
}

/* GET /api/v1/investigations/ID: the investigation, its hypotheses and their commands. */
static void investigation_reply(struct api *api, const char *idtext, struct http_response *res) {
    int64_t id;
    if (parse_id(idtext, &id) != 0) {
        http_reply_error(res, 400, "bad_data", "investigation id must be a positive integer");
        return;
    }
    json_t *arr = json_array();
    int rc = store_investigation_get(api->env.store, id, collect_investigation, arr);
    if (rc) {
        json_decref(arr);
        reply_store_error(res, rc, "no such investigation");
        return;
    }
    json_t *inv = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    json_t *hyps = json_array();
    store_hypotheses_of_investigation(api->env.store, id, collect_hypothesis, hyps);
    json_t *cmds = json_array();
    size_t i;
    json_t *h;
    json_array_foreach(hyps, i, h) {
        struct store_command_filter f = {.hypothesis =
                                             json_integer_value(json_object_get(h, "id"))};
        store_commands_each(api->env.store, &f, collect_command, cmds);
    }
    json_object_set_new(inv, "hypotheses", hyps);
    json_object_set_new(inv, "commands", cmds);
    http_reply_data(res, inv);
}

/* DELETE /api/v1/investigations/ID: a person ends an investigation and releases what it
 * enabled (adapt_abort). The answer is the investigation as stored afterwards. */
void api__delete_investigation(struct api *api, const struct api_call *call,
                               struct http_response *res) {
    const struct http_request *req = call->req;
    const char *idtext = call->rest;
    int64_t id;
    if (parse_id(idtext, &id) != 0) {
        http_reply_error(res, 400, "bad_data", "investigation id must be a positive integer");
        return;
    }
    const char *who = http_request_query(req, "requested_by");
    if (who && !api__text_ok(res, "requested_by", who, strlen(who))) {
        return;
    }
    int rc = adapt_abort(api->env.adapt, id, who && *who ? who : "a person (DELETE)");
    if (rc == DQ_ENOTFOUND) {
        http_reply_error(res, 404, "not_found", "%s", dq_last_error());
    } else if (rc == DQ_ESTATE) {
        http_reply_error(res, 409, "conflict", "%s", dq_last_error());
    } else if (rc) {
        http_reply_error(res, 503, "unavailable", "%s", dq_last_error());
    } else {
        investigation_reply(api, idtext, res);
    }
}

void api__get_investigation(struct api *api, const struct api_call *call,
                            struct http_response *res) {
    investigation_reply(api, call->rest, res);
}

/* ---- why ----------------------------------------------------------------------------------- */

struct why_find {
    int found;
    struct {
        int64_t id, investigation;
        char action[33];
    } hit;
};

static int first_enabling(void *ctx, const struct store_hypothesis *h) {
    struct why_find *w = ctx;
    if (!w->found && (strcmp(h->action, "expand") == 0 || strcmp(h->action, "enable") == 0)) {
        w->found = 1;
        w->hit.id = h->id;
        w->hit.investigation = h->investigation;
        snprintf(w->hit.action, sizeof w->hit.action, "%s", h->action);
    }
    return 0;
}

/* The newest "disable" or "handover" hypothesis naming the probe, if any is newer than
 * the enabling. */
static int newest_disable(void *ctx, const struct store_hypothesis *h) {
    int64_t *out = ctx;
    if (*out == 0 && (strcmp(h->action, "disable") == 0 || strcmp(h->action, "handover") == 0)) {
        *out = h->id;
    }
    return 0;
}

static const char *stats_reason(json_t *h) {
    json_t *stats = json_object_get(h, "stats");
    const char *r = json_string_value(json_object_get(stats, "reason"));
    return r ? r : "";
}

/* A search reason without its leading "verb NODE: " (the sentence around it says that). */
static const char *strip_verb(const char *reason) {
    static const char *const verbs[] = {"descend into ", "localized at ",    "diffuse at ",
                                        "overload at ",  "inconclusive at ", "healthy at ",
                                        "enable "};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        size_t n = strlen(verbs[i]);
        const char *colon = strstr(reason, ": ");
        if (strncmp(reason, verbs[i], n) == 0 && colon) {
            return colon + 2;
        }
    }
    return reason;
}

/* "fb and sb": every culprit a verdict's evidence names when there are several, else the
 * verdict's node (NULL: none). */
static void culprits_text(json_t *ev, const char *node, char *buf, size_t cap) {
    json_t *list = json_object_get(ev, "culprits");
    size_t n = json_array_size(list);
    snprintf(buf, cap, "%s", node ? node : "");
    if (n < 2) {
        return;
    }
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_object_get(json_array_get(list, i), "probe"));
        dq_strbuf_printf(&b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", p ? p : "?");
    }
}

/*
 * The why in plain sentences, from the start of the investigation down to the probe:
 * who started it, each descent with the numbers that chose it, the step that enabled the
 * probe, the verdict, and whether the probe was disabled again.
 */
static void why_sentences(json_t *out, const char *probe, json_t *inv, json_t *chain,
                          json_t *trigger, json_t *cmds, json_t *disable, json_t *check) {
    json_t *s = json_array();
    char buf[2048], when[64];
    json_t *enabling = json_array_get(chain, 0);
    json_int_t inv_id = json_integer_value(json_object_get(inv, "id"));
    clock_text((int64_t)(json_real_value(json_object_get(enabling, "time")) * 1e9), when,
               sizeof when);
    const char *enode = json_string_value(json_object_get(enabling, "node"));
    const char *mode = json_string_value(json_object_get(json_object_get(check, "stats"), "mode"));
    json_t *root_stats =
        json_object_get(json_array_get(chain, json_array_size(chain) - 1), "stats");
    int overload = (mode && strcmp(mode, "overload") == 0) ||
                   json_is_true(json_object_get(root_stats, "overload"));
    if (strcmp(json_string_value(json_object_get(enabling, "action")), "enable") == 0) {
        if (strcmp(probe, enode) == 0) {
            snprintf(buf, sizeof buf,
                     "%s was enabled at %s by investigation %" JSON_INTEGER_FORMAT
                     ", because it had no recent statistics, so it was enabled with its "
                     "children to decide from their data what is wrong.",
                     probe, when, inv_id);
        } else {
            snprintf(buf, sizeof buf,
                     "%s was enabled at %s by investigation %" JSON_INTEGER_FORMAT
                     ", together with %s, which had no recent statistics: %s and its children "
                     "were enabled to decide from their data what is wrong.",
                     probe, when, inv_id, enode, enode);
        }
    } else if (overload) {
        snprintf(buf, sizeof buf,
                 "%s was enabled at %s by investigation %" JSON_INTEGER_FORMAT
                 ", as a child of %s, to measure its load: an overload investigation weighs "
                 "every stage's utilisation to find the bottleneck and where it saturates.",
                 probe, when, inv_id, enode);
    } else {
        snprintf(buf, sizeof buf,
                 "%s was enabled at %s by investigation %" JSON_INTEGER_FORMAT
                 ", as a child of %s, to find where a %s problem lies.",
                 probe, when, inv_id, enode, json_string_value(json_object_get(enabling, "kind")));
    }
    json_array_append_new(s, json_string(buf));
    const char *origin = json_string_value(json_object_get(inv, "origin"));
    if (origin && strcmp(origin, "trigger") == 0 && json_is_object(trigger)) {
        snprintf(buf, sizeof buf,
                 "Investigation %" JSON_INTEGER_FORMAT " was opened by the %s trigger on %s, "
                 "which fires after %" JSON_INTEGER_FORMAT " bad windows in a row.",
                 inv_id, json_string_value(json_object_get(trigger, "kind")),
                 json_string_value(json_object_get(trigger, "probe")),
                 json_integer_value(json_object_get(trigger, "fire_after")));
    } else {
        const char *who = json_string_value(json_object_get(inv, "requested_by"));
        snprintf(buf, sizeof buf,
                 "Investigation %" JSON_INTEGER_FORMAT " was started at %s by a person (%s).",
                 inv_id, json_string_value(json_object_get(inv, "node")),
                 who ? who : "dqctl diagnose");
    }
    json_array_append_new(s, json_string(buf));
    /* an overload investigation from its opening: why it became one, or that it was asked */
    const char *load_why = json_string_value(json_object_get(root_stats, "overload_why"));
    if (load_why) {
        snprintf(buf, sizeof buf, "It was an overload investigation from the start: %s.", load_why);
        json_array_append_new(s, json_string(buf));
    } else if (json_is_true(json_object_get(root_stats, "overload"))) {
        json_array_append_new(
            s, json_string("It was an overload investigation from the start, as asked."));
    }
    json_int_t follows = json_integer_value(json_object_get(
        json_object_get(json_array_get(chain, json_array_size(chain) - 1), "stats"), "follows"));
    if (follows) {
        snprintf(buf, sizeof buf, "It follows investigation %" JSON_INTEGER_FORMAT ": %s.", follows,
                 stats_reason(json_array_get(chain, json_array_size(chain) - 1)));
        json_array_append_new(s, json_string(buf));
    }
    if (json_is_object(check)) {
        snprintf(buf, sizeof buf, "At %s, from its data: %s.",
                 json_string_value(json_object_get(check, "node")), stats_reason(check));
        json_array_append_new(s, json_string(buf));
    }
    /* the descents and the culprits found, from the root down: each step was weighed at the
     * node its evidence names (the focus), else at its parent's node */
    size_t n = json_array_size(chain);
    for (size_t i = n; i-- > 1;) {
        json_t *h = json_array_get(chain, i);
        const char *action = json_string_value(json_object_get(h, "action"));
        int culprit = strcmp(action, "culprit") == 0;
        if (strcmp(action, "descend") != 0 && !culprit) {
            continue;
        }
        const char *node = json_string_value(json_object_get(h, "node"));
        const char *from = json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(h, "stats"), "evidence"), "focus"),
            "node"));
        if (!from) {
            from = i + 1 < n
                       ? json_string_value(json_object_get(json_array_get(chain, i + 1), "node"))
                       : "?";
        }
        if (culprit) { /* its reason names the culprit and what remains */
            snprintf(buf, sizeof buf, "At %s, a culprit: %s.", from, stats_reason(h));
        } else {
            snprintf(buf, sizeof buf, "At %s: %s. So the search went down into %s.", from,
                     strip_verb(stats_reason(h)), node);
        }
        json_array_append_new(s, json_string(buf));
    }
    const char *verdict = json_string_value(json_object_get(inv, "verdict"));
    if (verdict) {
        const char *vn = json_string_value(json_object_get(inv, "verdict_node"));
        json_t *ev = json_object_get(json_object_get(inv, "summary"), "evidence");
        const char *vr = json_string_value(json_object_get(ev, "reason"));
        char at[1024];
        culprits_text(ev, vn, at, sizeof at);
        snprintf(buf, sizeof buf, "Verdict: %s%s%s%s%s.", verdict, at[0] ? " at " : "", at,
                 vr ? ": " : "", vr ? strip_verb(vr) : "");
    } else {
        snprintf(buf, sizeof buf, "The investigation is still open.");
    }
    json_array_append_new(s, json_string(buf));
    (void)cmds; /* what the commands did is said link by link (add_last_change) */
    if (json_is_object(disable)) {
        clock_text((int64_t)(json_real_value(json_object_get(disable, "time")) * 1e9), when,
                   sizeof when);
        if (strcmp(json_string_value(json_object_get(disable, "action")), "handover") == 0) {
            snprintf(buf, sizeof buf,
                     "At %s investigation %" JSON_INTEGER_FORMAT
                     " handed it over to investigation %" JSON_INTEGER_FORMAT ": %s.",
                     when, inv_id,
                     json_integer_value(json_object_get(json_object_get(disable, "stats"), "to")),
                     stats_reason(disable));
        } else {
            snprintf(buf, sizeof buf, "It was disabled again at %s: %s.", when,
                     stats_reason(disable));
        }
        json_array_append_new(s, json_string(buf));
    }
    json_object_set_new(out, "sentences", s);
}

static int collect_trigger(void *ctx, const struct store_trigger *t) {
    json_array_append_new(
        ctx, json_pack("{s:I,s:s,s:s,s:o,s:i,s:i,s:b,s:b,s:i,s:i,s:o,s:o}", "id", (json_int_t)t->id,
                       "probe", t->probe, "kind", t->kind, "threshold",
                       isnan(t->threshold) ? json_null() : json_real(t->threshold), "fire_after",
                       t->fire_after, "clear_after", t->clear_after, "enabled", t->enabled, "fired",
                       t->fired, "bad", t->bad, "good", t->good, "fired_at",
                       t->fired_ns ? json_real(secs(t->fired_ns)) : json_null(), "cleared_at",
                       t->cleared_ns ? json_real(secs(t->cleared_ns)) : json_null()));
    return 0;
}

/*
 * When p is silent now, one sentence: since when, and from which connection it last came
 * (its label, node and whether it is still up). Appended to the why's sentences, with the
 * silence itself as "silent" (null when it is not).
 */
static void add_silence(struct api *api, const struct probe *p, json_t *out) {
    json_t *si = p ? api__silence_json(api, p) : json_null();
    if (json_is_object(si)) {
        char when[64], buf[1024];
        json_int_t since = json_integer_value(json_object_get(si, "since_ns"));
        clock_text((int64_t)since, when, sizeof when);
        json_int_t windows = json_integer_value(json_object_get(si, "windows"));
        const char *label = json_string_value(json_object_get(si, "origin"));
        const char *node = json_string_value(json_object_get(si, "node"));
        if (!label) {
            snprintf(buf, sizeof buf,
                     "%s has had no data since %s (%" JSON_INTEGER_FORMAT
                     " window%s): no wrapper has reported it since dqd started, and no "
                     "connected wrapper sent anything.",
                     p->name, when, windows, windows == 1 ? "" : "s");
        } else {
            const char *hint = json_string_value(json_object_get(si, "hint"));
            snprintf(buf, sizeof buf,
                     "%s has had no data since %s (%" JSON_INTEGER_FORMAT
                     " window%s): the connection it last came from%s, %s (node %s), %s%s%s.",
                     p->name, when, windows, windows == 1 ? "" : "s",
                     json_is_true(json_object_get(si, "previous_run")) ? " before dqd's restart"
                                                                       : "",
                     label, node && node[0] ? node : "unknown",
                     json_is_true(json_object_get(si, "connected"))
                         ? "is still connected but has sent nothing since"
                         : "is disconnected",
                     hint ? ": " : "", hint ? hint : "");
        }
        json_array_append_new(json_object_get(out, "sentences"), json_string(buf));
        const json_t *gap = json_object_get(si, "dqd_not_running");
        if (json_is_object(gap)) {
            char from[64], to[64];
            clock_text((int64_t)json_integer_value(json_object_get(gap, "from_ns")), from,
                       sizeof from);
            clock_text((int64_t)json_integer_value(json_object_get(gap, "to_ns")), to, sizeof to);
            snprintf(buf, sizeof buf, "dqd was not running from %s to %s (%s).", from, to,
                     json_is_true(json_object_get(gap, "clean"))
                         ? "it stopped cleanly"
                         : "it did not record a stop: from its last record");
            json_array_append_new(json_object_get(out, "sentences"), json_string(buf));
        }
    }
    json_object_set_new(out, "silent", si);
}

/* "2 127.0.0.1:4001, 3 127.0.0.1:4002" from the commands of a run with this status. */
static size_t links_with(json_t *run, const char *status, char *buf, size_t cap) {
    size_t i, n = 0, len = 0;
    json_t *c;
    buf[0] = '\0';
    json_array_foreach(run, i, c) {
        const json_t *w = json_object_get(c, "wrapper");
        int seen = 0; /* a run may hold a link twice (an enable, then a dMax): once here */
        for (size_t j = 0; j < i && !seen; j++) {
            const json_t *e = json_array_get(run, j);
            seen = json_equal(json_object_get(e, "wrapper"), w) &&
                   json_equal(json_object_get(e, "status"), json_object_get(c, "status"));
        }
        if (!seen && strcmp(json_string_value(json_object_get(c, "status")), status) == 0) {
            int k = snprintf(buf + len, cap - len, "%s%s", n ? ", " : "", json_string_value(w));
            len = k > 0 && len + (size_t)k < cap ? len + (size_t)k : len;
            n++;
        }
    }
    return n;
}

/* What a sent or ambiguous command's links were to their wrappers, one sentence per link
 * with a detail: "On 5 127.0.0.1:8081 it went to the wrapper's command listener (…)." */
static void add_link_details(json_t *run, json_t *sentences) {
    size_t i;
    json_t *c;
    json_array_foreach(run, i, c) {
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *detail = json_string_value(json_object_get(c, "detail"));
        if (!status || !detail || !detail[0]) {
            continue;
        }
        int said = 0; /* one sentence per link and detail (a run may hold a link twice) */
        for (size_t j = 0; j < i && !said; j++) {
            const json_t *e = json_array_get(run, j);
            said = json_equal(json_object_get(e, "wrapper"), json_object_get(c, "wrapper")) &&
                   json_equal(json_object_get(e, "detail"), json_object_get(c, "detail"));
        }
        if (said) {
            continue;
        }
        char buf[1024];
        if (strcmp(status, "sent") == 0 || strcmp(status, "acked") == 0) {
            snprintf(buf, sizeof buf, "On %s it went to %s.",
                     json_string_value(json_object_get(c, "wrapper")), detail);
        } else if (strcmp(status, "ambiguous") == 0) {
            snprintf(buf, sizeof buf, "On %s: %s.",
                     json_string_value(json_object_get(c, "wrapper")), detail);
        } else {
            continue;
        }
        json_array_append_new(sentences, json_string(buf));
    }
}

/*
 * What the probe's last change did on every link: the newest run of commands for it (the
 * same command for the same hypothesis, in a row), one sentence saying where it was sent,
 * acknowledged, failed or not applied, and what that means; and dqd's own state now.
 * Appended to out's sentences; the run as out's "last_change" (null when no command was
 * ever recorded for the probe).
 */
static void add_last_change(struct api *api, const char *probe, const struct probe *p,
                            json_t *out) {
    json_t *all = json_array();
    struct store_command_filter f = {.probe = probe};
    store_commands_each(api->env.store, &f, collect_command, all);
    json_t *sentences = json_object_get(out, "sentences");
    size_t n = json_array_size(all);
    if (n == 0) {
        json_decref(all);
        json_object_set_new(out, "last_change", json_null());
        return;
    }
    json_t *last = json_array_get(all, n - 1);
    const char *cmd = json_string_value(json_object_get(last, "command"));
    json_int_t hyp = json_integer_value(json_object_get(last, "hypothesis"));
    size_t first = n - 1;
    while (first > 0) {
        json_t *c = json_array_get(all, first - 1);
        if (strcmp(json_string_value(json_object_get(c, "command")), cmd) != 0 ||
            json_integer_value(json_object_get(c, "hypothesis")) != hyp) {
            break;
        }
        first--;
    }
    json_t *run = json_array();
    for (size_t i = first; i < n; i++) {
        json_array_append(run, json_array_get(all, i));
    }
    json_decref(all);
    char when[64], by[96], buf[4096], sent[1024], acked[1024], failed[1024], na[1024], amb[1024];
    clock_text((int64_t)(json_real_value(json_object_get(last, "time")) * 1e9), when, sizeof when);
    if (hyp) {
        snprintf(by, sizeof by, "by the adaptive loop (hypothesis #%" JSON_INTEGER_FORMAT ")", hyp);
    } else {
        snprintf(by, sizeof by, "by a person or the configuration");
    }
    int disable = strcmp(cmd, "clear_timeout") == 0;
    size_t n_sent = links_with(run, "sent", sent, sizeof sent);
    size_t n_acked = links_with(run, "acked", acked, sizeof acked);
    size_t n_failed = links_with(run, "failed", failed, sizeof failed);
    size_t n_na = links_with(run, "not_applied", na, sizeof na);
    size_t n_amb = links_with(run, "ambiguous", amb, sizeof amb);
    size_t len = (size_t)snprintf(buf, sizeof buf, "Its last change was %s (%s) at %s, %s:",
                                  disable ? "a disable" : "an enable", cmd, when, by);
#define PART(cnt, text, list)                                                                      \
    if ((cnt) && len < sizeof buf) {                                                               \
        len += (size_t)snprintf(buf + len, sizeof buf - len, " %s on %zu link%s (%s);", text,      \
                                (size_t)(cnt), (cnt) == 1 ? "" : "s", list);                       \
    }
    PART(n_acked, "acknowledged", acked)
    PART(n_sent, "sent, not acknowledged (legacy wrappers never acknowledge)", sent)
    PART(n_failed, "FAILED (the link was not writable)", failed)
    PART(n_na, "NOT APPLIED", na)
    PART(n_amb, "NOT KNOWN to have reached its wrapper", amb)
#undef PART
    if (len < sizeof buf && len > 0 && buf[len - 1] == ';') {
        buf[len - 1] = '.';
    }
    json_array_append_new(sentences, json_string(buf));
    add_link_details(run, sentences);
    if (disable && n_na) {
        snprintf(buf, sizeof buf,
                 "A legacy wrapper has no clear_timeout: on %s %s is still reported, and dqd "
                 "keeps counting what arrives.",
                 na, probe);
        json_array_append_new(sentences, json_string(buf));
    }
    if (p) {
        snprintf(buf, sizeof buf, "In dqd, %s is %s now.", probe,
                 p->enabled ? "enabled" : "disabled");
        json_array_append_new(sentences, json_string(buf));
    }
    json_object_set_new(out, "last_change", run);
}

/*
 * For a probe bound to a function, one sentence saying so and what tracing it cost: the
 * calls the wrappers traced (their own count, from their state lines), the sampling, the
 * calls dropped, and the CPU that makes at the benchmark's cost per traced call; another
 * when a wrapper refused or lost it. out's "traced" holds the same figures (null for a
 * probe not bound).
 */
static void add_traced(const struct probe *p, json_t *out) {
    if (!p || !p->mfa[0]) {
        json_object_set_new(out, "traced", json_null());
        return;
    }
    struct core_trace_sum ts;
    core_trace_sum(p, &ts);
    double cost_ms = (double)ts.calls * API_TRACE_CALL_NS * 1e-6;
    char buf[2048], samp[160] = "every call timed";
    if (ts.keep < 1.0) {
        snprintf(samp, sizeof samp,
                 "its budget sampled %.1f %% of the calls in the last slot (the rest ran "
                 "untraced)",
                 100.0 * ts.keep);
    }
    char cost[DQ_DURATION_TEXT], per[DQ_DURATION_TEXT];
    snprintf(buf, sizeof buf,
             "%s is a traced function: it is bound to %s (the \"mfa\" of its configuration), so "
             "the wrapper times it with erlang:trace, no span in the code. Tracing it cost %" PRIu64
             " traced call%s (%s%s), about %s of the node's CPU at ~%s per traced call "
             "(docs/PERFORMANCE.md); the pattern is installed on %d node%s now%s.",
             p->name, p->mfa, ts.calls, ts.calls == 1 ? "" : "s", samp,
             ts.dropped ? ", some dropped open when the pattern was removed" : "",
             dq_format_duration(cost_ms * 1e-3, cost, sizeof cost),
             dq_format_duration(API_TRACE_CALL_NS * 1e-9, per, sizeof per), ts.installed,
             ts.installed == 1 ? "" : "s", ts.installed ? "" : " (none: disabled, or refused)");
    json_t *sentences = json_object_get(out, "sentences");
    json_array_append_new(sentences, json_string(buf));
    if (p->trace.refused[0]) {
        snprintf(buf, sizeof buf,
                 "A wrapper did not trace %s: %s (docs/tracing.md says why a function is "
                 "refused or its pattern lost).",
                 p->mfa, p->trace.refused);
        json_array_append_new(sentences, json_string(buf));
    }
    json_t *tj = api__trace_json(p);
    json_object_set_new(tj, "mfa", json_string(p->mfa));
    json_object_set_new(tj, "cost_ms", json_real(cost_ms));
    json_object_set_new(tj, "dropped", json_integer((json_int_t)ts.dropped));
    json_object_set_new(out, "traced", tj);
}

/* GET /api/v1/why/PROBE: why the probe is (or is not) enabled, in rows and sentences. */
void api__get_why(struct api *api, const struct api_call *call, struct http_response *res) {
    const char *probe = call->rest;
    struct probe *p = probes_find(core_probes(api->env.core), probe, strlen(probe));
    struct why_find w = {0};
    int rc = store_hypotheses_of_probe(api->env.store, probe, first_enabling, &w);
    if (rc && rc != DQ_ENOTFOUND) {
        reply_store_error(res, rc, "hypotheses");
        return;
    }
    if (!w.found && !p) {
        http_reply_error(res, 404, "not_found",
                         "no probe named \"%s\": it is not in the diagram, no wrapper has "
                         "reported it, and no investigation ever enabled it",
                         probe);
        return;
    }
    if (!w.found) {
        const char *state = !p           ? "dqd has never seen it"
                            : p->enabled ? (p->always_on ? "it is enabled by configuration "
                                                           "(always on)"
                                                         : "it was enabled by a person or the "
                                                           "configuration, not by the adaptive "
                                                           "loop")
                                         : "it is not enabled";
        char sentence[512];
        snprintf(sentence, sizeof sentence, "No investigation enabled %s: %s.", probe, state);
        json_t *out = json_pack("{s:s,s:b,s:n,s:[s]}", "probe", probe, "enabled", p && p->enabled,
                                "enabled_by", "sentences", sentence);
        add_last_change(api, probe, p, out);
        add_traced(p, out);
        add_silence(api, p, out);
        http_reply_data(res, out);
        return;
    }
    json_t *chain = json_array();
    store_hypothesis_chain(api->env.store, w.hit.id, collect_hypothesis, chain);
    json_t *invs = json_array();
    store_investigation_get(api->env.store, w.hit.investigation, collect_investigation, invs);
    json_t *inv = json_incref(json_array_get(invs, 0));
    json_decref(invs);
    json_t *trigger = json_null();
    json_int_t tid = json_integer_value(json_object_get(inv, "trigger"));
    if (tid) {
        json_t *ts = json_array();
        if (store_trigger_get(api->env.store, tid, collect_trigger, ts) == DQ_OK) {
            json_decref(trigger);
            trigger = json_incref(json_array_get(ts, 0));
        }
        json_decref(ts);
    }
    json_t *cmds = json_array(), *own = json_array();
    struct store_command_filter f = {.hypothesis = w.hit.id};
    store_commands_each(api->env.store, &f, collect_command, cmds);
    size_t i;
    json_t *c;
    json_array_foreach(cmds, i, c) {
        const char *cp = json_string_value(json_object_get(c, "probe"));
        if (cp && strcmp(cp, probe) == 0) {
            json_array_append(own, c);
        }
    }
    json_decref(cmds);
    int64_t dis = 0;
    store_hypotheses_of_probe(api->env.store, probe, newest_disable, &dis);
    json_t *disable = json_null();
    if (dis > w.hit.id) {
        json_t *da = json_array();
        store_hypothesis_get(api->env.store, dis, collect_hypothesis, da);
        json_decref(disable);
        disable = json_incref(json_array_get(da, 0));
        json_decref(da);
        struct store_command_filter fd = {.hypothesis = dis};
        json_t *dc = json_array();
        store_commands_each(api->env.store, &fd, collect_command, dc);
        json_array_foreach(dc, i, c) {
            const char *cp = json_string_value(json_object_get(c, "probe"));
            if (cp && strcmp(cp, probe) == 0) {
                json_array_append(own, c);
            }
        }
        json_decref(dc);
    }
    json_t *out =
        json_pack("{s:s,s:b,s:O,s:O,s:O,s:O,s:O,s:O}", "probe", probe, "enabled", p && p->enabled,
                  "enabled_by", json_array_get(chain, 0), "chain", chain, "investigation", inv,
                  "trigger", trigger, "commands", own, "disabled_by", disable);
    /* the node check of the investigation, when its problem was decided from data */
    json_t *hyps = json_array(), *check = NULL;
    store_hypotheses_of_investigation(api->env.store, w.hit.investigation, collect_hypothesis,
                                      hyps);
    json_t *hh;
    json_array_foreach(hyps, i, hh) {
        if (strcmp(json_string_value(json_object_get(hh, "action")), "check") == 0 && !check) {
            check = hh;
        }
    }
    why_sentences(out, probe, inv, chain, trigger, own, disable, check);
    json_decref(hyps);
    add_last_change(api, probe, p, out);
    add_traced(p, out);
    add_silence(api, p, out);
    json_decref(chain);
    json_decref(inv);
    json_decref(trigger);
    json_decref(own);
    json_decref(disable);
    http_reply_data(res, out);
}

/* ---- snapshots ---------------------------------------------------------------------------- */

static int collect_snapshot(void *ctx, const struct store_snapshot *s) {
    json_array_append_new(
        ctx, json_pack("{s:I,s:o,s:o,s:s,s:o,s:f,s:i,s:b,s:i}", "id", (json_int_t)s->id, "trigger",
                       s->trigger_id ? json_integer(s->trigger_id) : json_null(), "investigation",
                       s->investigation ? json_integer(s->investigation) : json_null(), "probe",
                       s->probe, "reason", s->reason ? json_string(s->reason) : json_null(), "time",
                       secs(s->time_ns), "windows", s->windows, "complete", s->complete, "dq_count",
                       s->dq_count));
    return 0;
}

static int collect_snapshot_dq(void *ctx, const struct store_snapshot_dq *sd) {
    json_t *pdf = json_array();
    for (int i = 0; i < sd->dq->n; i++) {
        json_array_append_new(pdf, json_real(sd->dq->pdf[i]));
    }
    json_array_append_new(ctx,
                          json_pack("{s:s,s:s,s:f,s:f,s:f,s:i,s:f,s:o}", "probe", sd->probe, "kind",
                                    store_kind_name(sd->kind), "start", secs(sd->start_ns), "end",
                                    secs(sd->end_ns), "bin_width", sd->dq->width, "bins", sd->dq->n,
                                    "lost", dq_lost(sd->dq), "pdf", pdf));
    return 0;
}

void api__get_snapshots(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)call;
    json_t *arr = json_array();
    int rc = store_snapshots_each(api->env.store, 100, collect_snapshot, arr);
    if (rc) {
        json_decref(arr);
        reply_store_error(res, rc, "snapshots");
        return;
    }
    http_reply_data(res, arr);
}

void api__get_snapshot(struct api *api, const struct api_call *call, struct http_response *res) {
    const char *idtext = call->rest;
    int64_t id;
    if (parse_id(idtext, &id) != 0) {
        http_reply_error(res, 400, "bad_data", "snapshot id must be a positive integer");
        return;
    }
    json_t *rows = json_array(), *dqs = json_array();
    /* one context per call: the row and the ΔQs go to different arrays */
    int rc = store_snapshot_get(api->env.store, id, collect_snapshot, NULL, rows);
    if (rc == DQ_OK) {
        rc = store_snapshot_get(api->env.store, id, NULL, collect_snapshot_dq, dqs);
    }
    if (rc) {
        json_decref(rows);
        json_decref(dqs);
        reply_store_error(res, rc, "no such snapshot");
        return;
    }
    json_t *s = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    json_object_set_new(s, "dqs", dqs);
    http_reply_data(res, s);
}

/* ---- triggers ------------------------------------------------------------------------------- */

/* The triggers of one probe, or of every probe (probe NULL). */
static void triggers_reply(struct api *api, const char *probe, struct http_response *res) {
    json_t *arr = json_array();
    int rc = store_triggers_each(api->env.store, probe, collect_trigger, arr);
    if (rc) {
        json_decref(arr);
        reply_store_error(res, rc, "triggers");
        return;
    }
    http_reply_data(res, arr);
}

/* PUT /api/v1/probes/NAME/triggers/KIND {threshold, fire_after, clear_after, enabled} */
void api__put_trigger(struct api *api, const struct api_call *call, struct http_response *res) {
    const struct http_request *req = call->req;
    const char *probe = call->probe, *kind = call->rest;
    json_error_t err;
    json_t *body = req->body_len ? json_loadb(req->body, req->body_len, 0, &err) : json_object();
    if (!json_is_object(body)) {
        http_reply_error(res, 400, "bad_data", "body must be a JSON object");
        json_decref(body);
        return;
    }
    json_t *th = json_object_get(body, "threshold"), *fa = json_object_get(body, "fire_after");
    json_t *ca = json_object_get(body, "clear_after"), *en = json_object_get(body, "enabled");
    if ((th && !json_is_number(th) && !json_is_null(th)) || (fa && !json_is_integer(fa)) ||
        (ca && !json_is_integer(ca)) || (en && !json_is_boolean(en)) ||
        (fa && (json_integer_value(fa) < 1 || json_integer_value(fa) > 1000)) ||
        (ca && (json_integer_value(ca) < 1 || json_integer_value(ca) > 1000))) {
        http_reply_error(res, 400, "bad_data",
                         "threshold is a number (or null), fire_after and clear_after integers "
                         "in [1, 1000], enabled a boolean");
        json_decref(body);
        return;
    }
    /* fields left out keep the trigger's current value (or the defaults for a new one) */
    double threshold = NAN;
    int fire_after = 3, clear_after = 5, enabled = 1;
    struct adapt_trigger_info cur;
    if (adapt_trigger_get(api->env.adapt, probe, kind, &cur) == DQ_OK) {
        threshold = cur.threshold;
        fire_after = cur.fire_after;
        clear_after = cur.clear_after;
        enabled = cur.enabled;
    }
    if (th) {
        threshold = json_is_number(th) ? json_number_value(th) : NAN;
    }
    int rc = adapt_set_trigger(
        api->env.adapt, probe, kind, threshold, fa ? (int)json_integer_value(fa) : fire_after,
        ca ? (int)json_integer_value(ca) : clear_after, en ? json_is_true(en) : enabled);
    json_decref(body);
    if (rc) {
        http_reply_error(res, 422, "unprocessable", "%s", dq_last_error());
        return;
    }
    triggers_reply(api, probe, res);
}

void api__get_triggers(struct api *api, const struct api_call *call, struct http_response *res) {
    (void)call;
    triggers_reply(api, NULL, res);
}

void api__get_probe_triggers(struct api *api, const struct api_call *call,
                             struct http_response *res) {
    triggers_reply(api, call->probe, res);
}
