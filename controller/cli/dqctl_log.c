/*
 * dqctl_log.c: the dqctl subcommands of the adaptive loop: `diagnose` (start an
 * investigation and, with --wait, follow it to its verdict), `why` (the hypothesis chain
 * that enabled a probe), `log` (investigations and their hypothesis trees), `snapshots`
 * and `snapshot` (the ΔQs a trigger stored), `trigger` and `triggers`.
 *
 * Each command makes one or a few calls through dqctl_api.h's plumbing and prints either
 * the API's data object (--json) or a rendering for people. The renderers only read the
 * JSON they are given and tolerate missing fields (printing "-"), so an older or newer
 * dqd degrades the output instead of crashing it; they are exposed in dqctl_log.h and
 * tested on canned answers.
 */
#include "dqctl_log.h"
#include "dqctl_set_err.h"
#include "dqctl_json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqctl.h"
#include "dqctl_api.h"
#include "dq.h"
#include "dq_strbuf.h"

static double poll_interval_s = 0.5;

void dqctl_log_set_poll_interval(double seconds) {
    poll_interval_s = seconds > 0 ? seconds : 0.5;
}

/* "03:42:40.001" (UTC), for lines within one investigation. */
static void clock_hms(double unix_s, char *buf, size_t cap) {
    char full[40];
    dqctl_format_time(unix_s, full, sizeof full);
    const char *sp = strchr(full, ' ');
    snprintf(buf, cap, "%s", sp ? sp + 1 : full);
}

/* "validate, pay, ship" from an array of strings. */
static void join_names(const json_t *arr, char *buf, size_t cap) {
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        dq_strbuf_printf(&b, "%s%s", i ? ", " : "", s ? s : "?");
    }
}

/* "27.4 ms" or "-" */
static void dur(double s, char *buf, size_t cap) {
    dqctl_format_duration(s, buf, cap);
}

/*
 * The key numbers of a node's statistics object (the daemon's stats_json): "n 1453 in 3
 * windows, mean 27.4 ms, sd 4.72 ms, lost 0.00%, KS D 0.0101 (p 0.998), QTA hazard 0.3".
 */
static void format_node_stats(const json_t *st, char *buf, size_t cap) {
    struct dq_strbuf sb;
    dq_strbuf_init(&sb, buf, cap);
    if (!json_is_object(st)) {
        dq_strbuf_printf(&sb, "no numbers");
        return;
    }
    if (json_is_false(json_object_get(st, "present"))) {
        dq_strbuf_printf(&sb, "no data");
        return;
    }
    double n = jnum(st, "ok") + jnum(st, "fa") + jnum(st, "to");
    double w = jnum(st, "windows");
    if (!isnan(n)) {
        dq_strbuf_printf(&sb, "n %.0f", n);
        if (!isnan(w)) {
            dq_strbuf_printf(&sb, " in %.0f window%s", w, w == 1 ? "" : "s");
        }
    }
    char a[32], b[32];
    if (!isnan(jnum(st, "mean"))) {
        dur(jnum(st, "mean"), a, sizeof a);
        dur(jnum(st, "sd"), b, sizeof b);
        dq_strbuf_printf(&sb, "%smean %s, sd %s", sb.len ? ", " : "", a, b);
    }
    if (!isnan(jnum(st, "lost"))) {
        dqctl_format_percent(jnum(st, "lost"), a, sizeof a);
        dq_strbuf_printf(&sb, "%slost %s", sb.len ? ", " : "", a);
    }
    if (!isnan(jnum(st, "ks_d"))) {
        dq_strbuf_printf(&sb, "%sKS D %.3g (p %.3g)", sb.len ? ", " : "", jnum(st, "ks_d"),
                         jnum(st, "ks_p"));
    }
    if (!isnan(jnum(st, "qta_hazard"))) {
        dq_strbuf_printf(&sb, "%sQTA hazard %.3g", sb.len ? ", " : "", jnum(st, "qta_hazard"));
    }
    if (sb.len == 0) {
        dq_strbuf_printf(&sb, "no numbers");
    }
}

/* A contribution in the unit of the problem kind: seconds, s² (shown as ms²), a lost
 * fraction, a KS distance, or for `shape` (problem "mass": its evidence's "unit") a
 * fraction of the child's mass that moved. */
static void format_value(const char *problem, double v, int sig, char *buf, size_t cap) {
    char n[40];
    if (isnan(v)) {
        snprintf(buf, cap, "-");
    } else if (strcmp(problem, "variance") == 0) {
        snprintf(buf, cap, "%.30s ms²", dq_format_number(v * 1e6, sig, n, sizeof n));
    } else if (strcmp(problem, "lost") == 0 || strcmp(problem, "mass") == 0) {
        snprintf(buf, cap, "%.30s %%", dq_format_number(v * 100, sig, n, sizeof n));
    } else if (strcmp(problem, "divergence") == 0) {
        snprintf(buf, cap, "D %.30s", dq_format_number(v, sig, n, sizeof n));
    } else {
        dur(v, buf, cap);
    }
}

/* The unit an evidence object's contributions are in: "mass" for a shape problem weighed
 * by the mass that moved, else the problem kind's (format_value). */
static const char *evidence_unit(const json_t *ev, const char *problem) {
    return strcmp(jstr(ev, "unit", ""), "mass") == 0 ? "mass" : problem;
}

static void format_contribution(const char *problem, const json_t *c, char *buf, size_t cap) {
    double v = jnum(c, "contribution"), h = jnum(c, "half_width");
    if (isnan(v)) {
        snprintf(buf, cap, "-");
        return;
    }
    char a[40], b[40];
    int timed = strcmp(problem, "variance") != 0 && strcmp(problem, "lost") != 0 &&
                strcmp(problem, "mass") != 0 && strcmp(problem, "divergence") != 0;
    if (timed) {
        dq_format_duration_pm(v, h, buf, cap);
        return;
    }
    format_value(problem, v, 3, a, sizeof a);
    if (isnan(h)) {
        snprintf(buf, cap, "%s", a);
        return;
    }
    format_value(problem, h, 2, b, sizeof b);
    struct dq_strbuf sb;
    dq_strbuf_init(&sb, buf, cap);
    dq_strbuf_printf(&sb, "%s ± %s", a, strcmp(problem, "divergence") == 0 ? b + 2 : b);
}

/* The statistics of the node a hypothesis is about: stats.node (root), stats.focus
 * (expand) or stats.evidence.focus (descend, verdict). */
static const json_t *hyp_node_stats(const json_t *h) {
    const json_t *st = json_object_get(h, "stats");
    const json_t *n = json_object_get(st, "node");
    if (json_is_object(n)) {
        return n;
    }
    n = json_object_get(st, "focus");
    if (json_is_object(n)) {
        return n;
    }
    return json_object_get(json_object_get(st, "evidence"), "focus");
}

/* The child an evidence object names as the largest contributor, or NULL. */
static const json_t *evidence_best(const json_t *ev) {
    const char *best = jstr(ev, "best", NULL);
    const json_t *kids = json_object_get(ev, "children");
    for (size_t i = 0; best && i < json_array_size(kids); i++) {
        const json_t *k = json_array_get(kids, i);
        if (strcmp(jstr(k, "node", ""), best) == 0) {
            return k;
        }
    }
    return NULL;
}

/* What a hypothesis says in words: its reason, or for the root who opened it and why. */
static void hyp_reason(const json_t *h, char *buf, size_t cap) {
    const json_t *st = json_object_get(h, "stats");
    const char *reason = jstr(st, "reason", NULL);
    if (reason) {
        snprintf(buf, cap, "%s", reason);
        return;
    }
    if (strcmp(jstr(h, "action", ""), "root") == 0) {
        const char *origin = jstr(st, "origin", "?");
        const char *who = jstr(st, "requested_by", NULL);
        const char *kind = jstr(h, "kind", "?");
        char what[64];
        if (strcmp(kind, "unknown") == 0) {
            snprintf(what, sizeof what, "to decide from its data what is wrong");
        } else {
            snprintf(what, sizeof what, "for a %s problem", kind);
        }
        /* an overload investigation from the start: asked for, or why it became one */
        const char *load_why = jstr(st, "overload_why", NULL);
        char overload[400] = "";
        if (load_why) {
            snprintf(overload, sizeof overload, "; an overload investigation: %s", load_why);
        } else if (json_is_true(json_object_get(st, "overload"))) {
            snprintf(overload, sizeof overload, "; an overload investigation, as asked");
        }
        snprintf(buf, cap, "opened %s, %s%s%s%s%s", what,
                 strcmp(origin, "trigger") == 0 ? "by a trigger" : "by a person", who ? " (" : "",
                 who ? who : "", who ? ")" : "", overload);
        return;
    }
    const char *err = jstr(st, "error", NULL);
    snprintf(buf, cap, "%s", err ? err : "");
}

/* "latency problem", "no problem found" (a healthy verdict's "none"), "problem not decided
 * yet" ("unknown": decided from the node's data). */
static void problem_words(const char *problem, char *buf, size_t cap) {
    if (strcmp(problem, "none") == 0) {
        snprintf(buf, cap, "no problem found");
    } else if (strcmp(problem, "unknown") == 0) {
        snprintf(buf, cap, "problem not decided yet");
    } else {
        snprintf(buf, cap, "%s problem", problem);
    }
}

/* A reason without its leading "VERDICT at NODE: " (the line it is printed under names
 * the verdict and the node already): "localized at b: b holds 81 %" → "b holds 81 %". */
const char *dqctl_strip_verdict(const char *reason) {
    static const char *const verbs[] = {"localized at ", "diffuse at ", "overload at ",
                                        "healthy at ", "inconclusive at "};
    const char *colon = strstr(reason, ": ");
    for (size_t i = 0; colon && i < sizeof verbs / sizeof verbs[0]; i++) {
        if (strncmp(reason, verbs[i], strlen(verbs[i])) == 0) {
            return colon + 2;
        }
    }
    return reason;
}

/* "fb and sb", "a, b and c": the culprits an evidence object names (none: buf empty). */
static void culprit_names(const json_t *ev, char *buf, size_t cap) {
    const json_t *list = json_object_get(ev, "culprits");
    size_t n = json_array_size(list);
    struct dq_strbuf b;
    dq_strbuf_init(&b, buf, cap);
    for (size_t i = 0; i < n; i++) {
        char name[300];
        dqctl_escape(jstr(json_array_get(list, i), "probe", "?"), name, sizeof name);
        dq_strbuf_printf(&b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", name);
    }
}

/* "localized at fb and sb", "healthy at root": a verdict and where, every culprit named. */
void dqctl_verdict_words(const char *verdict, const char *node, const json_t *ev, char *buf,
                         size_t cap) {
    char names[1200];
    culprit_names(ev, names, sizeof names);
    char at[1100];
    dqctl_escape(names[0] && json_array_size(json_object_get(ev, "culprits")) > 1 ? names
                 : node                                                           ? node
                                                                                  : "",
                 at, sizeof at);
    snprintf(buf, cap, "%s%s%s", verdict ? verdict : "no verdict", at[0] ? " at " : "", at);
}

/*
 * The culprits of a verdict, one line each with the share of the change at the
 * investigation's node it explains:
 *   culprits, each with its share of root's change (12.2 ms against its baseline; 100 % explained):
 *     fb   62 %   reference fa
 */
static void render_culprits(FILE *out, const json_t *ev, const char *problem, const char *node,
                            const char *indent) {
    const json_t *list = json_object_get(ev, "culprits");
    if (json_array_size(list) == 0) {
        return;
    }
    char change[64] = "-", expl[32] = "-";
    double ch = jnum(ev, "change"), all = jnum(ev, "explained");
    if (!isnan(ch)) {
        format_value(strcmp(problem, "lost") == 0 ? "lost" : "latency", ch, 3, change,
                     sizeof change);
    }
    if (!isnan(all)) {
        snprintf(expl, sizeof expl, "%.0f %%", 100.0 * all);
    }
    fprintf(out,
            "%sculprits, each with the share of %s's change it explains (%s against its "
            "baseline; %s explained):\n",
            indent, node, change, expl);
    int width = dqctl_column_width(list, "probe", 5, 40);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *c = json_array_get(list, i);
        char share[24] = "-";
        if (!isnan(jnum(c, "share"))) {
            snprintf(share, sizeof share, "%.0f %%", 100.0 * jnum(c, "share"));
        }
        fprintf(out, "%s  %-*.*s %6s   reference: %s\n", indent, width, width,
                jstr(c, "probe", "?"), share, jstr(c, "reference", "its baseline"));
    }
}

/* ---- verdicts and progress ------------------------------------------------------------ */

int dqctl_verdict_exit(const char *verdict) {
    if (verdict && (strcmp(verdict, "localized") == 0 || strcmp(verdict, "diffuse") == 0 ||
                    strcmp(verdict, "overload") == 0)) {
        return DQCTL_EXIT_PROBLEM;
    }
    if (verdict && strcmp(verdict, "healthy") == 0) {
        return DQCTL_EXIT_OK;
    }
    return DQCTL_EXIT_NO_VERDICT; /* inconclusive, aborted, unknown */
}

void dqctl_render_progress(FILE *out, const json_t *h) {
    char when[40], probes[512], reason[2048];
    clock_hms(jnum(h, "time"), when, sizeof when);
    join_names(json_object_get(h, "probes"), probes, sizeof probes);
    hyp_reason(h, reason, sizeof reason);
    const char *action = jstr(h, "action", "?");
    if (strcmp(action, "verdict") == 0) {
        /* "verdict  localized at fb and sb: …", the reason without its own "… at X: " */
        char head[1300];
        const json_t *ev = json_object_get(json_object_get(h, "stats"), "evidence");
        dqctl_verdict_words(jstr(h, "verdict", NULL), jstr(h, "node", NULL), ev, head, sizeof head);
        fprintf(out, "%s  %-8s %s%s%s\n", when, action, head, reason[0] ? ": " : "",
                dqctl_strip_verdict(reason));
        return;
    }
    /* the first step opened the investigation: "opened   root: …" */
    fprintf(out, "%s  %-8s %s", when, strcmp(action, "root") == 0 ? "opened" : action,
            jstr(h, "node", "?"));
    if (probes[0]) {
        fprintf(out, " [%s]", probes);
    }
    if (strcmp(action, "root") == 0) {
        char st[256];
        format_node_stats(hyp_node_stats(h), st, sizeof st);
        fprintf(out, ": %s; %s\n", reason, st);
    } else {
        fprintf(out, "%s%s\n", reason[0] ? ": " : "", reason);
    }
}

/* The table of children of an evidence object (indent: leading spaces). */
static void render_children(FILE *out, const json_t *ev, const char *problem, const char *indent) {
    const json_t *kids = json_object_get(ev, "children");
    if (json_array_size(kids) == 0) {
        return;
    }
    int width = dqctl_column_width(kids, "node", 5, 40);
    const char *best = jstr(ev, "best", "");
    int dominant = json_is_true(json_object_get(ev, "dominant"));
    fprintf(out, "%s  %-*s %8s %9s %9s %7s  %-24s %6s\n", indent, width, "CHILD", "N", "MEAN", "SD",
            "LOST", "CONTRIBUTION (95%)", "SHARE");
    for (size_t i = 0; i < json_array_size(kids); i++) {
        const json_t *k = json_array_get(kids, i);
        const char *name = jstr(k, "node", "?");
        char n[24] = "-", mean[24], sd[24], lost[24], contrib[80], share[24] = "-";
        int present = !json_is_false(json_object_get(k, "present"));
        double total = jnum(k, "ok") + jnum(k, "fa") + jnum(k, "to");
        if (present && !isnan(total)) {
            snprintf(n, sizeof n, "%.0f", total);
        }
        dur(jnum(k, "mean"), mean, sizeof mean);
        dur(jnum(k, "sd"), sd, sizeof sd);
        dqctl_format_percent(jnum(k, "lost"), lost, sizeof lost);
        format_contribution(evidence_unit(ev, problem), k, contrib, sizeof contrib);
        if (!isnan(jnum(k, "share"))) {
            snprintf(share, sizeof share, "%.1f%%", jnum(k, "share") * 100);
        }
        int is_best = strcmp(name, best) == 0;
        fprintf(out, "%s%c %-*.*s %8s %*s %*s %7s  %*s %6s%s\n", indent, is_best ? '*' : ' ', width,
                width, name, n, dqctl_cols(mean, 9), mean, dqctl_cols(sd, 9), sd, lost,
                dqctl_cols(contrib, -24), contrib, share,
                !is_best   ? ""
                : dominant ? "  dominant"
                : !present ? ""
                           : "  largest, not dominant");
    }
    double cov = jnum(ev, "covariance");
    if (!isnan(cov)) {
        char c[40];
        format_value("variance", cov, 3, c, sizeof c);
        fprintf(out, "%s  covariance (observed variance minus the children's sum): %s\n", indent,
                c);
    }
}

/* A rate in requests per second ("-" when unknown). */
static void per_s(double v, char *buf, size_t cap) {
    if (isnan(v)) {
        snprintf(buf, cap, "-");
    } else {
        snprintf(buf, cap, "%.*f/s", v < 10 ? 2 : v < 100 ? 1 : 0, v);
    }
}

/*
 * An overload verdict's stages as a table, the bottleneck starred and co-bottlenecks
 * marked, then the root's figures:
 *
 *     STAGE      RHO  INTERVAL     SERVICE  SERVERS     ARRIVALS  SATURATES  ROOT AT  METHOD
 *   * worker_2  0.81  0.74 – 0.88  4.05ms   1 assumed   198/s     247/s      247/s    busy time
 */
static void render_overload(FILE *out, const json_t *ov, const char *root, const char *indent) {
    const json_t *stages = json_object_get(ov, "stages");
    const char *bottleneck = jstr(ov, "bottleneck", "");
    const json_t *co = json_object_get(ov, "co_bottlenecks");
    int width = dqctl_column_width(stages, "probe", 5, 32);
    fprintf(out, "%s  %-*s %5s  %-12s %9s  %-11s %9s %10s %10s  %s\n", indent, width, "STAGE",
            "RHO", "INTERVAL", "SERVICE", "SERVERS", "ARRIVALS", "SATURATES", root ? "ROOT AT" : "",
            "METHOD");
    for (size_t i = 0; i < json_array_size(stages); i++) {
        const json_t *st = json_array_get(stages, i);
        const char *name = jstr(st, "probe", "?");
        int is_co = 0;
        for (size_t j = 0; j < json_array_size(co); j++) {
            const char *c = json_string_value(json_array_get(co, j));
            is_co |= c && strcmp(c, name) == 0;
        }
        char rho[16] = "-", iv[40] = "-", svc[24], servers[32], arr[24], sat[24], rsat[24];
        if (!isnan(jnum(st, "rho"))) {
            snprintf(rho, sizeof rho, "%.2f", jnum(st, "rho"));
            snprintf(iv, sizeof iv, "%.2f – %.2f", jnum(st, "rho_low"), jnum(st, "rho_high"));
        }
        dur(jnum(st, "service_ms") / 1e3, svc, sizeof svc);
        const char *from = jstr(st, "servers_from", "config");
        snprintf(servers, sizeof servers, "%lld%s%s", jint(st, "servers", 1),
                 strcmp(from, "config") == 0 ? "" : " ", strcmp(from, "config") == 0 ? "" : from);
        per_s(jnum(st, "arrivals_per_s"), arr, sizeof arr);
        per_s(jnum(st, "saturation_per_s"), sat, sizeof sat);
        per_s(jnum(st, "root_saturation_per_s"), rsat, sizeof rsat);
        const char *m = jstr(st, "method", "?");
        fprintf(out, "%s%c %-*.*s %5s  %-14s %*s  %-11s %9s %10s %10s  %s\n", indent,
                strcmp(name, bottleneck) == 0 ? '*'
                : is_co                       ? '+'
                                              : ' ',
                width, width, name, rho, iv, dqctl_cols(svc, 9), svc, servers, arr, sat, rsat,
                strcmp(m, "busy") == 0       ? "busy time"
                : strcmp(m, "baseline") == 0 ? "quiet baseline"
                : strcmp(m, "mmc") == 0      ? "M/M/c, Little"
                                             : m);
    }
    char now[24], satr[24], qta[24], onset[24];
    per_s(jnum(ov, "arrivals_per_s"), now, sizeof now);
    per_s(jnum(ov, "saturation_per_s"), satr, sizeof satr);
    per_s(jnum(ov, "qta_violation_per_s"), qta, sizeof qta);
    per_s(jnum(ov, "divergence_onset_per_s"), onset, sizeof onset);
    fprintf(out, "%s  (* bottleneck, + co-bottleneck; rates in arrivals per second)\n", indent);
    fprintf(out, "%s  %s takes %s now and saturates at %s", indent, root ? root : "the root", now,
            satr);
    double ratio = jnum(ov, "saturation_per_s") / jnum(ov, "arrivals_per_s");
    if (!isnan(ratio)) {
        fprintf(out, " (%.2f× today)", ratio);
    }
    fprintf(out, "; its QTA fails at: %s; observed and calculated parted at: %s\n",
            strcmp(qta, "-") == 0 ? "no QTA, or not before saturation" : qta,
            strcmp(onset, "-") == 0 ? "not seen" : onset);
}

void dqctl_render_verdict(FILE *out, const json_t *inv) {
    const char *verdict = jstr(inv, "verdict", NULL);
    const char *vnode = jstr(inv, "verdict_node", NULL);
    const char *problem = jstr(inv, "problem", "?");
    double took = jnum(inv, "closed") - jnum(inv, "opened");
    const char *on = jstr(json_object_get(inv, "summary"), "on_node", NULL);
    char on_safe[1100] = ""; /* a node name comes from a wrapper */
    if (on) {
        dqctl_escape(on, on_safe, sizeof on_safe);
    }
    const json_t *ev = json_object_get(json_object_get(inv, "summary"), "evidence");
    char head[1300], what[64];
    dqctl_verdict_words(verdict, vnode, ev, head, sizeof head);
    problem_words(problem, what, sizeof what);
    fprintf(out, "verdict: %s%s%s (investigation %lld: %s at %s", head, on ? " on node " : "",
            on_safe, jint(inv, "id", 0), what, jstr(inv, "node", "?"));
    if (!isnan(took) && took >= 0) {
        char t[32];
        dur(took, t, sizeof t);
        fprintf(out, ", %s", t);
    }
    fprintf(out, ")\n");
    const char *reason = jstr(ev, "reason", NULL);
    const char *error = jstr(ev, "error", NULL);
    if (reason) {
        fprintf(out, "  %s\n", dqctl_strip_verdict(reason));
    }
    if (error) {
        fprintf(out, "  error: %s\n", error);
    }
    render_culprits(out, ev, problem, jstr(inv, "node", "?"), "  ");
    const json_t *focus = json_object_get(ev, "focus");
    if (json_is_object(focus)) {
        char st[256];
        format_node_stats(focus, st, sizeof st);
        fprintf(out, "  %s%s: %s\n",
                json_array_size(json_object_get(ev, "culprits")) > 1 ? "the last step, at " : "",
                jstr(focus, "node", "?"), st);
    }
    const json_t *ov = json_object_get(ev, "overload");
    if (json_is_object(ov)) {
        render_overload(out, ov, jstr(inv, "node", NULL), "  ");
    } else {
        render_children(out, ev, problem, "  ");
    }
}

/* ---- why ------------------------------------------------------------------------------ */

/* One hypothesis as a list item: "#2 expand checkout 03:42:40.001 [a, b]" then its
 * numbers and its reason on indented lines. */
static void render_hyp_item(FILE *out, const json_t *h, int depth, const char *mark) {
    char when[40], probes[512], st[256], reason[2048];
    clock_hms(jnum(h, "time"), when, sizeof when);
    join_names(json_object_get(h, "probes"), probes, sizeof probes);
    format_node_stats(hyp_node_stats(h), st, sizeof st);
    hyp_reason(h, reason, sizeof reason);
    int ind = 2 + 2 * depth;
    const char *verdict = jstr(h, "verdict", "pending");
    const char *action = jstr(h, "action", "?");
    const json_t *ev = json_object_get(json_object_get(h, "stats"), "evidence");
    if (strcmp(action, "root") == 0) { /* the step that opened it: "#1 opened at root" */
        fprintf(out, "%*s#%lld opened at %s  %s", ind, "", jint(h, "id", 0), jstr(h, "node", "?"),
                when);
    } else if (strcmp(action, "verdict") == 0) { /* "#9 verdict: localized at fb and sb" */
        char head[1300];
        dqctl_verdict_words(jstr(h, "verdict", NULL), jstr(h, "node", NULL), ev, head, sizeof head);
        fprintf(out, "%*s#%lld verdict: %s  %s", ind, "", jint(h, "id", 0), head, when);
        verdict = "pending"; /* said already */
    } else {
        fprintf(out, "%*s#%lld %s %s  %s", ind, "", jint(h, "id", 0), action, jstr(h, "node", "?"),
                when);
    }
    if (probes[0]) {
        fprintf(out, "  [%s]", probes);
    }
    if (strcmp(verdict, "pending") != 0) {
        fprintf(out, "  -> %s", verdict);
    }
    fprintf(out, "%s\n", mark ? mark : "");
    const json_t *stats = json_object_get(h, "stats");
    const json_t *node_st = hyp_node_stats(h);
    /* an expand step has no windows of its own yet: its empty numbers say nothing */
    if (json_is_object(node_st) &&
        !(json_is_false(json_object_get(node_st, "present")) && strcmp(action, "expand") == 0)) {
        fprintf(out, "%*s  %s: %s\n", ind, "", jstr(node_st, "node", jstr(h, "node", "?")), st);
    }
    const json_t *best = evidence_best(ev);
    if (best) {
        char c[80];
        format_contribution(evidence_unit(ev, jstr(h, "kind", "latency")), best, c, sizeof c);
        double share = jnum(best, "share");
        fprintf(out, "%*s  largest contribution: %s %s", ind, "", jstr(best, "node", "?"), c);
        if (!isnan(share)) {
            fprintf(out, " (%.1f%%)", share * 100);
        }
        fprintf(out, "%s\n",
                json_is_true(json_object_get(json_object_get(stats, "evidence"), "dominant"))
                    ? ", dominant"
                    : ", not dominant");
    }
    if (reason[0]) {
        fprintf(out, "%*s  %s\n", ind, "",
                strcmp(action, "verdict") == 0 ? dqctl_strip_verdict(reason) : reason);
    }
}

static void render_command(FILE *out, const json_t *c, int with_probe) {
    char when[40];
    dqctl_format_time(jnum(c, "time"), when, sizeof when);
    char *args = NULL;
    const json_t *a = json_object_get(c, "args");
    if (a && !json_is_null(a)) {
        args = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    }
    const char *status = jstr(c, "status", "?");
    const char *detail = jstr(c, "detail", NULL);
    fprintf(out, "  %s  %s%s%s%s%s  to wrapper %s: %s%s%s%s\n", when, jstr(c, "command", "?"),
            with_probe ? " " : "", with_probe ? jstr(c, "probe", "-") : "", args ? " " : "",
            args ? args : "", jstr(c, "wrapper", "?"), status,
            strcmp(status, "not_applied") == 0 ? " (a legacy link cannot do this)"
            : strcmp(status, "ambiguous") == 0 ? " (not known to have reached its wrapper)"
                                               : "",
            detail ? ": " : "", detail ? detail : "");
    free(args);
}

void dqctl_render_why(FILE *out, const json_t *why) {
    const json_t *sent = json_object_get(why, "sentences");
    for (size_t i = 0; i < json_array_size(sent); i++) {
        const char *s = json_string_value(json_array_get(sent, i));
        if (s) {
            /* sentences quote node names and labels that came from wrappers */
            char safe[8192];
            dqctl_escape(s, safe, sizeof safe);
            fprintf(out, "%s\n", safe);
        }
    }
    const json_t *chain = json_object_get(why, "chain");
    size_t n = json_array_size(chain);
    const char *probe = jstr(why, "probe", "?");
    if (n > 0) {
        /* the API lists the enabling hypothesis first and the root last; a tree reads
         * from the top, so print it root first, each step one level deeper */
        fprintf(out,
                "\nchain (from the start of investigation %lld to the step that enabled %s):\n",
                jint(json_object_get(why, "investigation"), "id", 0), probe);
        for (size_t i = n; i-- > 0;) {
            char mark[256] = "";
            if (i == 0) {
                snprintf(mark, sizeof mark, "  <- enabled %s", probe);
            }
            render_hyp_item(out, json_array_get(chain, i), (int)(n - 1 - i), mark);
        }
    }
    const json_t *dis = json_object_get(why, "disabled_by");
    if (json_is_object(dis)) {
        fprintf(out, "\nthen disabled by:\n");
        render_hyp_item(out, dis, 0, NULL);
    }
    const json_t *cmds = json_object_get(why, "commands");
    if (n > 0 || json_array_size(cmds) > 0) {
        fprintf(out, "\ncommands sent for %s:%s\n", probe,
                json_array_size(cmds) ? "" : " none recorded");
        for (size_t i = 0; i < json_array_size(cmds); i++) {
            render_command(out, json_array_get(cmds, i), 0);
        }
    }
}

/* ---- log ------------------------------------------------------------------------------ */

static void origin_text(const json_t *inv, char *buf, size_t cap) {
    const char *origin = jstr(inv, "origin", "?");
    if (strcmp(origin, "trigger") == 0) {
        long long t = jint(inv, "trigger", 0);
        if (t) {
            snprintf(buf, cap, "trigger #%lld", t);
        } else {
            snprintf(buf, cap, "trigger");
        }
    } else {
        const char *who = jstr(inv, "requested_by", NULL);
        snprintf(buf, cap, "%s%s%s%s", origin, who ? " (" : "", who ? who : "", who ? ")" : "");
    }
}

void dqctl_render_investigations(FILE *out, const json_t *list) {
    int wn = 4, wo = 6;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *v = json_array_get(list, i);
        char o[160];
        origin_text(v, o, sizeof o);
        int a = (int)strlen(jstr(v, "node", "?")), b = (int)strlen(o);
        wn = a > wn ? a : wn;
        wo = b > wo ? b : wo;
    }
    wn = wn > 40 ? 40 : wn;
    wo = wo > 40 ? 40 : wo;
    fprintf(out, "%5s  %-23s  %-*s %-10s %-8s  %-*s  %-12s %s\n", "ID", "OPENED (UTC)", wn, "NODE",
            "PROBLEM", "STRATEGY", wo, "ORIGIN", "VERDICT", "AT");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *v = json_array_get(list, i);
        char opened[40], o[160];
        dqctl_format_time(jnum(v, "opened"), opened, sizeof opened);
        origin_text(v, o, sizeof o);
        int open = json_is_true(json_object_get(v, "open"));
        fprintf(out, "%5lld  %-23s  %-*.*s %-10s %-8s  %-*.*s  %-12s %s\n", jint(v, "id", 0),
                opened, wn, wn, jstr(v, "node", "?"), jstr(v, "problem", "?"),
                jstr(v, "strategy", "?"), wo, wo, o, open ? "(open)" : jstr(v, "verdict", "-"),
                open ? "-" : jstr(v, "verdict_node", "-"));
    }
}

/* Depth-first over the hypotheses by parent; children in the order given (by id). */
static void render_tree(FILE *out, const json_t *hyps) {
    size_t n = json_array_size(hyps);
    if (n == 0) {
        return;
    }
    /* a small explicit stack (no recursion on data from the network); visited guards
     * against a parent cycle in a damaged log */
    char *visited = calloc(n, 1);
    size_t *stack = malloc(n * sizeof *stack);
    int *depth = malloc(n * sizeof *depth);
    if (!visited || !stack || !depth) {
        free(visited);
        free(stack);
        free(depth);
        return;
    }
    for (size_t r = 0; r < n; r++) {
        const json_t *h = json_array_get(hyps, r);
        long long parent = jint(h, "parent", 0);
        int has_parent = 0;
        for (size_t k = 0; parent && k < n; k++) {
            has_parent |= k != r && jint(json_array_get(hyps, k), "id", -1) == parent;
        }
        if (has_parent || visited[r]) {
            continue;
        }
        size_t top = 0;
        stack[top] = r;
        depth[top++] = 0;
        visited[r] = 1;
        while (top > 0) {
            top--;
            size_t i = stack[top];
            int d = depth[top];
            render_hyp_item(out, json_array_get(hyps, i), d > 30 ? 30 : d, NULL);
            long long id = jint(json_array_get(hyps, i), "id", -1);
            /* push children in reverse so the smallest id comes out first */
            for (size_t k = n; k-- > 0;) {
                if (!visited[k] && jint(json_array_get(hyps, k), "parent", 0) == id) {
                    visited[k] = 1;
                    stack[top] = k;
                    depth[top++] = d + 1;
                }
            }
        }
    }
    /* anything left hangs in a cycle: print it flat rather than lose it */
    for (size_t i = 0; i < n; i++) {
        if (!visited[i]) {
            render_hyp_item(out, json_array_get(hyps, i), 0, "  (parent cycle)");
        }
    }
    free(visited);
    free(stack);
    free(depth);
}

void dqctl_render_investigation(FILE *out, const json_t *inv) {
    char opened[40], closed[40], o[160];
    dqctl_format_time(jnum(inv, "opened"), opened, sizeof opened);
    origin_text(inv, o, sizeof o);
    char what[64];
    problem_words(jstr(inv, "problem", "?"), what, sizeof what);
    fprintf(out, "investigation %lld at %s: %s, strategy %s, started by %s at %s UTC\n",
            jint(inv, "id", 0), jstr(inv, "node", "?"), what, jstr(inv, "strategy", "?"), o,
            opened);
    if (json_is_true(json_object_get(inv, "open"))) {
        fprintf(out, "still open\n");
    } else {
        dqctl_format_time(jnum(inv, "closed"), closed, sizeof closed);
        fprintf(out, "closed at %s UTC\n", closed);
        dqctl_render_verdict(out, inv);
    }
    const json_t *hyps = json_object_get(inv, "hypotheses");
    fprintf(out, "\nhypotheses (%zu):\n", json_array_size(hyps));
    render_tree(out, hyps);
    const json_t *cmds = json_object_get(inv, "commands");
    fprintf(out, "\ncommands (%zu):\n", json_array_size(cmds));
    for (size_t i = 0; i < json_array_size(cmds); i++) {
        render_command(out, json_array_get(cmds, i), 1);
    }
}

/* ---- subcommands -------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Prints the hypotheses with an id above *last (in the API's order) and raises *last. */
static void print_new_hypotheses(const json_t *inv, long long *last) {
    const json_t *hyps = json_object_get(inv, "hypotheses");
    long long top = *last;
    for (size_t i = 0; i < json_array_size(hyps); i++) {
        const json_t *h = json_array_get(hyps, i);
        long long id = jint(h, "id", 0);
        if (id > *last) {
            dqctl_render_progress(dqctl_out(), h);
            top = id > top ? id : top;
        }
    }
    *last = top;
    fflush(dqctl_out());
}

/* Follows investigation ID until it closes or DEADLINE (now_s() clock, INFINITY for none)
 * passes; TIMEOUT_S is the person's --timeout, as the message on a timeout says it. */
static int follow(const struct dqctl_opts *o, long long id, double deadline, double timeout_s,
                  int retry, int *unfound) {
    *unfound = 0;
    char path[64];
    snprintf(path, sizeof path, "/api/v1/investigations/%lld", id);
    long long last = 0;
    for (;;) {
        json_t *inv = NULL;
        int rc = dqctl_api_call(o, "GET", path, NULL, &inv);
        if (rc != DQCTL_EXIT_OK) {
            dqctl_complain("diagnose: lost track of investigation %lld; it goes on in dqd "
                           "(dqctl log %lld shows it)",
                           id, id);
            return rc;
        }
        if (!o->json) {
            print_new_hypotheses(inv, &last);
        }
        if (json_is_false(json_object_get(inv, "open"))) {
            const char *verdict = jstr(inv, "verdict", NULL);
            if (retry && verdict &&
                (strcmp(verdict, "diffuse") == 0 || strcmp(verdict, "inconclusive") == 0)) {
                if (!o->json) {
                    fprintf(dqctl_out(),
                            "\ninvestigation %lld, which this diagnosis followed, ended %s (`dqctl "
                            "log %lld` shows it); diagnosing afresh\n",
                            id, verdict, id);
                }
                *unfound = 1;
                json_decref(inv);
                return DQCTL_EXIT_OK;
            }
            if (o->json) {
                dqctl_print_json(inv);
            } else {
                fputc('\n', dqctl_out());
                dqctl_render_verdict(dqctl_out(), inv);
            }
            rc = dqctl_verdict_exit(verdict);
            if (rc == DQCTL_EXIT_NO_VERDICT) {
                dqctl_complain_typed("no_verdict",
                                     "diagnose: investigation %lld ended without a verdict (%s)",
                                     id, verdict ? verdict : "none recorded");
            }
            json_decref(inv);
            return rc;
        }
        json_decref(inv);
        if (now_s() >= deadline) {
            char t[DQ_DURATION_TEXT];
            dqctl_complain_typed("timeout",
                                 "diagnose: no verdict after %s (--timeout); investigation %lld "
                                 "goes on in dqd (dqctl log %lld shows it, dqctl diagnose … "
                                 "--wait follows it again)",
                                 dq_format_duration(timeout_s, t, sizeof t), id, id);
            return DQCTL_EXIT_NO_VERDICT;
        }
        sleep_s(poll_interval_s);
    }
}

/* `dqctl diagnose`'s request: POST /api/v1/diagnose, and what it opened (or found open)
 * said; *id_out, *already_out: the investigation and whether it was open already. */
static int open_diagnosis(const struct dqctl_opts *o, long long *id_out, int *already_out) {
    int rc;
    char who[128];
    const char *user = getenv("USER");
    /* who asked, as `why` will say it: "started by a person (alice via dqctl)" */
    snprintf(who, sizeof who, "%s%s", user && *user ? user : "",
             user && *user ? " via dqctl" : "dqctl");
    json_t *body = json_pack("{s:s}", "requested_by", who);
    if (o->npos > 0) {
        json_object_set_new(body, "node", json_string(o->pos[0]));
    }
    if (o->strategy) {
        json_object_set_new(body, "strategy", json_string(o->strategy));
    }
    if (o->overload) {
        json_object_set_new(body, "overload", json_true());
    }
    json_t *data = NULL;
    rc = dqctl_api_call(o, "POST", "/api/v1/diagnose", body, &data);
    json_decref(body);
    if (rc != DQCTL_EXIT_OK) {
        return rc;
    }
    long long id = jint(data, "investigation", 0);
    *id_out = id;
    const json_t *inv = json_object_get(data, "detail");
    int already = json_is_true(json_object_get(data, "already_open"));
    *already_out = already;
    if (id <= 0) {
        dqctl_complain("diagnose: dqd's answer names no investigation");
        json_decref(data);
        return DQCTL_EXIT_API;
    }
    const char *node = jstr(inv, "node", o->npos ? o->pos[0] : "?");
    if (o->json && !o->wait) {
        dqctl_print_json(data);
    } else if (!o->json) {
        FILE *out = dqctl_out();
        if (already) {
            char opened[40], what[64];
            dqctl_format_time(jnum(inv, "opened"), opened, sizeof opened);
            problem_words(jstr(inv, "problem", "?"), what, sizeof what);
            fprintf(out,
                    "investigation %lld is already open at %s (%s, strategy %s, opened %s UTC)%s\n",
                    id, node, what, jstr(inv, "strategy", "?"), opened,
                    o->wait ? "; following it" : "");
            if (o->strategy && strcmp(o->strategy, jstr(inv, "strategy", o->strategy)) != 0) {
                fprintf(out, "(it keeps its strategy; --strategy %s applies to new ones)\n",
                        o->strategy);
            }
        } else {
            const char *problem = jstr(inv, "problem", "?");
            if (strcmp(problem, "unknown") == 0) {
                fprintf(out,
                        "investigation %lld opened at %s (strategy %s); its problem is decided "
                        "from %s's data\n",
                        id, node, jstr(inv, "strategy", "?"), node);
            } else if (json_is_false(json_object_get(inv, "open"))) {
                /* decided in the round that opened it (healthy at once, or a refusal) */
                fprintf(out, "investigation %lld at %s (strategy %s) ended at once: %s\n", id, node,
                        jstr(inv, "strategy", "?"), jstr(inv, "verdict", "no verdict"));
            } else {
                fprintf(out, "investigation %lld opened at %s (%s problem, strategy %s)\n", id,
                        node, problem, jstr(inv, "strategy", "?"));
            }
        }
        if (!o->wait) {
            fprintf(out,
                    "follow it with `dqctl log %lld`, or wait for its verdict with `dqctl "
                    "diagnose %s --wait`\n",
                    id, node);
        }
    }
    json_decref(data);
    return DQCTL_EXIT_OK;
}

/* `dqctl diagnose --abort ID`: DELETE /api/v1/investigations/ID, then its verdict. */
static int abort_investigation(const struct dqctl_opts *o) {
    char *end = NULL;
    long long id = strtoll(o->abort_id, &end, 10);
    if (!*o->abort_id || *end || id <= 0 || o->npos > 0 || o->wait || o->strategy || o->overload) {
        dqctl_complain("diagnose: --abort takes an investigation id (a positive integer) and "
                       "nothing else");
        return DQCTL_EXIT_USAGE;
    }
    char path[160];
    const char *user = getenv("USER");
    char who[96];
    snprintf(who, sizeof who, "%s%s", user && *user ? user : "",
             user && *user ? "-via-dqctl" : "dqctl");
    for (char *c = who; *c; c++) { /* a query value: keep it to safe characters */
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.') {
            *c = '_';
        }
    }
    snprintf(path, sizeof path, "/api/v1/investigations/%lld?requested_by=%s", id, who);
    json_t *inv = NULL;
    int rc = dqctl_api_call(o, "DELETE", path, NULL, &inv);
    if (rc != DQCTL_EXIT_OK) {
        return rc;
    }
    if (o->json) {
        dqctl_print_json(inv);
    } else {
        size_t released = 0;
        const json_t *hyps = json_object_get(inv, "hypotheses");
        for (size_t i = 0; i < json_array_size(hyps); i++) {
            const json_t *h = json_array_get(hyps, i);
            if (strcmp(jstr(h, "action", ""), "disable") == 0) {
                released = json_array_size(json_object_get(h, "probes"));
            }
        }
        fprintf(dqctl_out(), "investigation %lld ended (%s); %zu probe(s) released\n", id,
                jstr(inv, "verdict", "aborted"), released);
    }
    json_decref(inv);
    return DQCTL_EXIT_OK;
}

int dqctl_diagnose_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl diagnose [NODE] [--strategy children|bisect] [--overload] [--wait]\n"
        "                      [--timeout DURATION] [--server URL] [--json]\n"
        "       dqctl diagnose --abort ID\n"
        "Asks dqd whether something is wrong at NODE (default: the diagram's first root)\n"
        "and where it comes from. An investigation opens and first decides from NODE's\n"
        "data what is wrong (NODE and its children are enabled first when NODE has no\n"
        "recent statistics): its QTA broken, lost mass, slower or more erratic than its\n"
        "baseline, or observed and calculated ΔQs apart. Nothing abnormal: healthy, and\n"
        "what it enabled is released at once. Otherwise it enables NODE's children\n"
        "(`children`: all at once; `bisect`: half of a long sequence at a time), waits for\n"
        "enough samples, weighs each child's contribution and descends into the dominant\n"
        "one, down to a leaf. With no reference at all (no QTA, no baseline yet) it follows\n"
        "the largest contributor and says so. A problem older than the baseline in dqd's\n"
        "ring is looked for against the oldest of the baselines dqd keeps (one every 60\n"
        "windows, the newest 10); one older than that is in every baseline, and the answer\n"
        "is healthy: give NODE a QTA (dqctl qta NODE ...), a requirement that does not move.\n"
        "If an investigation is already open at NODE,\n"
        "dqctl says so and follows that one; with --wait, if that one ends diffuse or\n"
        "inconclusive (opened earlier, by a trigger or a person, maybe for another\n"
        "cause), dqctl asks again, once, and follows what that request opens. --abort ID ends "
        "investigation ID and releases\n"
        "the probes it enabled (`dqctl why` says so afterwards).\n"
        "\n"
        "Overload: with --overload (or by itself, when NODE's latency rises with its\n"
        "arrival rate) the investigation weighs every stage (child probe) on the path:\n"
        "its utilisation rho with an interval, service time, servers and the rate at which\n"
        "it saturates. The verdict `overload` names the bottleneck (highest rho; stages\n"
        "not clearly below it are co-bottlenecks), the arrival rate at which NODE\n"
        "saturates, the rate at which its QTA will fail, and where observed and calculated\n"
        "first parted. A lone bottleneck with finer probes is descended into.\n"
        "\n"
        "Without --wait, prints the investigation's id and returns at once (exit 0);\n"
        "`dqctl log ID` shows its progress. With --wait, prints one line per step as it\n"
        "happens (time, action, node, probes enabled, reason) and at the end the verdict,\n"
        "its reason and the children's contributions; --json prints only the finished\n"
        "investigation. --timeout gives up waiting after DURATION (a bare number is\n"
        "milliseconds, as everywhere in dqctl: 90000; or with a unit: 90s, 5m; default 5m;\n"
        "0 waits for ever); the investigation itself goes on in dqd.\n"
        "\n"
        "With --wait, the exit status is the verdict's: 0 healthy (nothing abnormal); 1 a\n"
        "problem was found: localized (at a leaf), diffuse (spread over NODE's children, or\n"
        "load-induced coupling) or overload (a bottleneck named); 4 no verdict: inconclusive\n"
        "(no problem could be pinned down), aborted, or --timeout passed. 3 when dqd refused\n"
        "(no diagram, an unknown node, a leaf) or cannot be reached. Without --wait: 0 once\n"
        "the investigation is open (or was already). --abort: 0 when it was ended, 3 when\n"
        "dqd refused (an unknown id, or nothing left to end).\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(
        argc, argv, DQCTL_OPT_STRATEGY | DQCTL_OPT_WAIT | DQCTL_OPT_ABORT | DQCTL_OPT_OVERLOAD, 0,
        1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    if (o.abort_id) {
        return dqctl_end_cmd(abort_investigation(&o));
    }
    if (o.strategy && strcmp(o.strategy, "children") != 0 && strcmp(o.strategy, "bisect") != 0) {
        dqctl_complain("diagnose: --strategy must be children or bisect, not \"%s\"", o.strategy);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    double timeout_s = DQCTL_DIAGNOSE_TIMEOUT_S;
    if (o.timeout && (!o.wait || dqctl_parse_duration(o.timeout, 1e-3, &timeout_s) < 0)) {
        dqctl_complain(o.wait ? "diagnose: --timeout must be a duration >= 0: milliseconds "
                                "(90000) or with a unit (90s, 5m), not \"%s\""
                              : "diagnose: --timeout \"%s\" only goes with --wait",
                       o.timeout);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    long long id = 0;
    int already = 0;
    rc = open_diagnosis(&o, &id, &already);
    if (rc != DQCTL_EXIT_OK || !o.wait) {
        return dqctl_end_cmd(rc);
    }
    double deadline = timeout_s > 0 ? now_s() + timeout_s : INFINITY;
    int unfound = 0;
    rc = follow(&o, id, deadline, timeout_s, already, &unfound);
    if (unfound) {
        /* the investigation followed was not this request's own and named no culprit: the
         * person asked for a diagnosis now, so ask again (once), within the same --timeout */
        rc = open_diagnosis(&o, &id, &already);
        if (rc == DQCTL_EXIT_OK) {
            rc = follow(&o, id, deadline, timeout_s, 0, &unfound);
        }
    }
    return dqctl_end_cmd(rc);
}

static int why_prepare(const struct dqctl_opts *o, struct dqctl_show_req *r) {
    char esc[1024];
    if (!*o->pos[0] || dqctl_url_escape(o->pos[0], esc, sizeof esc) < 0) {
        dqctl_complain("why: invalid probe name");
        return -1;
    }
    snprintf(r->path, sizeof r->path, "/api/v1/why/%s", esc);
    return 0;
}

int dqctl_why_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help =
            "usage: dqctl why PROBE [--server URL] [--json]\n"
            "Why PROBE is (or was) enabled, answered from dqd's store: the hypothesis that\n"
            "enabled it and its numbers, the chain of steps up to the trigger or person that\n"
            "started the investigation, in plain sentences; then the chain as an indented list\n"
            "(root first: action, node, time, the node's numbers, the largest contribution and\n"
            "the reason), the step that disabled it again if any, and the commands sent to the\n"
            "wrappers for it with their status (sent, acked, failed, not_applied on legacy\n"
            "links that cannot disable a probe, or ambiguous: a legacy wrapper's own\n"
            "connection among several on one host, whose command listener cannot be told).\n",
        .min_pos = 1,
        .max_pos = 1,
        .view = {.render = dqctl_render_why},
        .prepare = why_prepare,
    };
    return dqctl_show_main(argc, argv, &cmd);
}

static int parse_id_arg(const char *what, const char *s, long long *id) {
    long v;
    if (dqctl_parse_int(s, 1, 0x7fffffffL, &v) < 0) {
        dqctl_complain("%s: the id must be a whole number >= 1, not \"%s\"", what, s);
        return -1;
    }
    *id = v;
    return 0;
}

/* One investigation with an ID, else the list (--open, --limit). */
static int log_prepare(const struct dqctl_opts *o, struct dqctl_show_req *r) {
    if (o->npos == 1) {
        long long id = 0;
        if (o->open || o->limit) {
            dqctl_complain("log: --open and --limit select from the list; they do not go with "
                           "an ID");
            return -1;
        }
        if (parse_id_arg("log", o->pos[0], &id) < 0) {
            return -1;
        }
        snprintf(r->path, sizeof r->path, "/api/v1/investigations/%lld", id);
        r->view = (struct dqctl_view){.render = dqctl_render_investigation};
        return 0;
    }
    long limit = 50;
    if (o->limit && dqctl_parse_int(o->limit, 1, 100000, &limit) < 0) {
        dqctl_complain("log: --limit must be a whole number from 1 to 100000, not \"%s\"",
                       o->limit);
        return -1;
    }
    snprintf(r->path, sizeof r->path, "/api/v1/investigations?limit=%ld%s", limit,
             o->open ? "&open=1" : "");
    r->view.empty = o->open ? "no open investigations" : "no investigations";
    return 0;
}

int dqctl_log_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help = "usage: dqctl log [--open] [--limit N] [--server URL] [--json]\n"
                "       dqctl log ID [--server URL] [--json]\n"
                "Without ID, lists the investigations, newest first (at most N, default 50;\n"
                "--open: only those still searching): id, when and where it opened, the problem\n"
                "kind, the strategy, what started it (a trigger or a person), the verdict and the\n"
                "node it names. With ID, prints that investigation: its verdict and evidence, the\n"
                "hypothesis tree (each step indented under the one it came from: action, node,\n"
                "probes, verdict, the node's numbers and the reason) and the commands it sent.\n",
        .accepts = DQCTL_OPT_OPEN | DQCTL_OPT_LIMIT,
        .max_pos = 1,
        .view =
            {
                .render = dqctl_render_investigations,
                .not_list = "log: dqd did not answer a list",
            },
        .prepare = log_prepare,
    };
    return dqctl_show_main(argc, argv, &cmd);
}

int dqctl_snapshots_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help =
            "usage: dqctl snapshots [--server URL] [--json]\n"
            "The snapshots dqd stored when a trigger fired (newest first, at most 100): id,\n"
            "time, probe, trigger, investigation, windows kept before and after, the number of\n"
            "ΔQs ((+) while the windows after the firing are still being collected) and the\n"
            "reason. `dqctl snapshot ID` shows one.\n",
        .path = "/api/v1/snapshots",
        .view =
            {
                .render = dqctl_render_snapshots,
                .not_list = "snapshots: dqd did not answer a list",
                .empty = "no snapshots (a trigger stores one when it fires)",
            },
    };
    return dqctl_show_main(argc, argv, &cmd);
}

static int snapshot_prepare(const struct dqctl_opts *o, struct dqctl_show_req *r) {
    long long id;
    if (parse_id_arg("snapshot", o->pos[0], &id) < 0) {
        return -1;
    }
    if (o->csv && o->json) {
        dqctl_complain("snapshot: --csv and --json are two different outputs; pick one");
        return -1;
    }
    snprintf(r->path, sizeof r->path, "/api/v1/snapshots/%lld", id);
    if (o->csv) {
        r->view.render = dqctl_render_snapshot_csv;
    }
    return 0;
}

int dqctl_snapshot_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help =
            "usage: dqctl snapshot ID [--csv] [--server URL] [--json]\n"
            "The ΔQs one snapshot holds: for the fired probe and its diagram neighbours, each\n"
            "window before and after the firing, observed and calculated. The table shows per\n"
            "ΔQ its window, lost mass, mean and quantiles (the first right edge where the CDF\n"
            "reaches p; - when the tangible mass never does). --csv prints one row per bin:\n"
            "  probe,kind,window_start,window_end,bin,time_s,pdf,cdf\n"
            "(window times in Unix seconds; time_s is the right edge of the bin, cdf = P(delay <=\n"
            "time_s), lost = 1 - the last cdf).\n",
        .accepts = DQCTL_OPT_CSV,
        .min_pos = 1,
        .max_pos = 1,
        .view = {.render = dqctl_render_snapshot},
        .prepare = snapshot_prepare,
    };
    return dqctl_show_main(argc, argv, &cmd);
}

/* GET /api/v1/probes/NAME/triggers into *data. */
static int get_probe_triggers(const struct dqctl_opts *o, const char *probe, json_t **data) {
    char path[2048];
    if (dqctl_probe_path(probe, "/triggers", path, sizeof path) < 0) {
        return DQCTL_EXIT_USAGE;
    }
    return dqctl_api_call(o, "GET", path, NULL, data);
}

static const json_t *find_kind(const json_t *list, const char *kind) {
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        if (strcmp(jstr(t, "kind", ""), kind) == 0) {
            return t;
        }
    }
    return NULL;
}

int dqctl_trigger_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl trigger PROBE KIND [--threshold X] [--fire-after K] [--clear-after M]\n"
        "                     [--disable] [--server URL] [--json]\n"
        "Sets (or creates) the trigger KIND on PROBE; dqd evaluates it at every window close\n"
        "and, after K bad windows in a row, fires: it stores a snapshot and opens an\n"
        "investigation at PROBE. After M good windows in a row it clears. KIND and X:\n"
        "  qta         the probe's QTA has a hazard above X (default 0)\n"
        "  load        more than X instances per window (default 1000)\n"
        "  lost        lost (failed or timed out) fraction above X (default 0.05; 5% works)\n"
        "  divergence  observed vs calculated KS distance above X (default 0.1) and significant\n"
        "  cv          standard deviation / mean above X (default 1)\n"
        "--threshold default goes back to the default. K and M are 1 to 1000 (defaults 3\n"
        "and 5). Options not given keep the trigger's current values. Setting a trigger\n"
        "enables it unless --disable is given. Prints the trigger as `dqctl triggers` does.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_TRIGGER, 2, 2, help, &o);
    if (rc >= 0) {
        return rc;
    }
    const char *probe = o.pos[0], *kind = o.pos[1];
    if (!dqctl_trigger_kind_known(kind)) {
        dqctl_complain("trigger: KIND must be qta, load, lost, divergence or cv, not \"%s\"", kind);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    char err[256];
    /* check the options before any request: a usage error never touches dqd */
    json_t *check = dqctl_trigger_body(NULL, o.threshold, o.fire_after, o.clear_after, o.disable,
                                       err, sizeof err);
    if (!check) {
        dqctl_complain("trigger: %s", err);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    json_decref(check);
    json_t *current = NULL;
    rc = get_probe_triggers(&o, probe, &current);
    if (rc != DQCTL_EXIT_OK) {
        return dqctl_end_cmd(rc);
    }
    json_t *body = dqctl_trigger_body(find_kind(current, kind), o.threshold, o.fire_after,
                                      o.clear_after, o.disable, err, sizeof err);
    json_decref(current);
    char suffix[64], path[2048];
    snprintf(suffix, sizeof suffix, "/triggers/%s", kind);
    if (!body || dqctl_probe_path(probe, suffix, path, sizeof path) < 0) {
        json_decref(body);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    json_t *data = NULL;
    rc = dqctl_api_call(&o, "PUT", path, body, &data);
    json_decref(body);
    if (rc == DQCTL_EXIT_OK) {
        const json_t *t = find_kind(data, kind);
        if (o.json) {
            dqctl_print_json(t ? t : data);
        } else if (t) {
            json_t *one = json_pack("[O]", t);
            dqctl_render_triggers(dqctl_out(), one);
            json_decref(one);
        } else {
            dqctl_complain("trigger: dqd's answer does not list the %s trigger of %s", kind, probe);
            rc = DQCTL_EXIT_API;
        }
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

/* dqctl_render_triggers as a dqctl_view's renderer (the count is any_trigger_fired's). */
static void render_trigger_list(FILE *out, const json_t *list) {
    dqctl_render_triggers(out, list);
}

/* An enabled trigger that is fired is a problem found: `dqctl triggers` exits 1. */
static int any_trigger_fired(const json_t *list) {
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        if (json_is_true(json_object_get(t, "fired")) &&
            json_is_true(json_object_get(t, "enabled"))) {
            return 1;
        }
    }
    return 0;
}

/* Every probe's triggers, or PROBE's; the empty list's line names it. */
static int triggers_prepare(const struct dqctl_opts *o, struct dqctl_show_req *r) {
    if (o->npos == 1 && dqctl_probe_path(o->pos[0], "/triggers", r->path, sizeof r->path) < 0) {
        return -1;
    }
    /* the probe's name passed dqctl_probe_path, so it is under 1024 bytes and fits */
    snprintf(r->text, sizeof r->text, "no triggers%s%s (set one with dqctl trigger PROBE KIND)",
             o->npos ? " on " : "", o->npos ? o->pos[0] : "");
    r->view.empty = r->text;
    return 0;
}

int dqctl_triggers_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help = "usage: dqctl triggers [PROBE] [--server URL] [--json]\n"
                "The triggers of every probe (or of PROBE): kind, threshold, the bad windows in a\n"
                "row that fire it and the good ones that clear it, whether it is enabled, and its\n"
                "state (fired since when, or quiet) with the current run of bad or good windows.\n"
                "Set them with `dqctl trigger`.\n"
                "Exit 1 when an enabled trigger is fired.\n",
        .max_pos = 1,
        .path = "/api/v1/triggers",
        .view =
            {
                .render = render_trigger_list,
                .not_list = "triggers: dqd did not answer a list",
                .problem = any_trigger_fired,
            },
        .prepare = triggers_prepare,
    };
    return dqctl_show_main(argc, argv, &cmd);
}
