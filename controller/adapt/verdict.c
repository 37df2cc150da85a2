/*
 * verdict.c: recording what a search step decided: a descent into a child, or a verdict
 * (localized, diffuse, inconclusive, healthy, aborted) with its evidence: the attribution
 * numbers, the sentence, the node split (a probe reported by several Erlang nodes or
 * hosts: is it one node's problem?) and, for a node that never reported, the hint that it
 * may not be instrumented. The closing writes the investigation's summary, its log line
 * and its webhook.
 *
 * Everything here only decides: it changes the round's next state and adds effects.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

json_t *adapt__attribution_json(const struct search_input *in, const struct search_result *r) {
    json_t *kids = json_array();
    for (size_t i = 0; i < in->n_children; i++) {
        const struct search_contribution *c = &r->attr.c[i];
        json_t *o = adapt__stats_json(in->children[i].name, &in->children[i].stats);
        if (c->included) {
            json_object_set_new(o, "contribution", json_real(c->value));
            json_object_set_new(o, "half_width", json_real(c->half_width));
            json_object_set_new(o, "share", json_real(c->share));
        }
        json_array_append_new(kids, o);
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o}", "verdict", search_verdict_name(r->verdict),
                          "problem", search_problem_name(r->attr.problem), "reason", r->reason,
                          "focus", adapt__stats_json(in->name, &in->stats), "children", kids);
    if (r->attr.best >= 0 && r->attr.best < (int)in->n_children) {
        json_object_set_new(o, "best", json_string(in->children[r->attr.best].name));
        json_object_set_new(o, "dominant", json_boolean(r->attr.dominant));
    }
    if (isfinite(r->attr.explained)) {
        json_object_set_new(o, "explained", json_real(r->attr.explained));
    }
    if (isfinite(r->attr.remainder)) {
        json_object_set_new(o, "remainder", json_real(r->attr.remainder));
        json_object_set_new(o, "remainder_half_width", json_real(r->attr.remainder_half_width));
    }
    if (isfinite(r->attr.covariance)) {
        json_object_set_new(o, "covariance", json_real(r->attr.covariance));
    }
    if (r->attr.problem == SEARCH_SHAPE && r->attr.shape_mode) {
        /* the contributions are fractions of mass that moved, not times */
        json_object_set_new(o, "unit", json_string("mass"));
    }
    return o;
}

void adapt__close(struct plan *pl, struct investigation *inv, const char *verdict, const char *node,
                  json_t *evidence) {
    json_t *summary =
        json_pack("{s:s,s:s,s:o}", "verdict", verdict, "node", node ? node : inv->focus, "evidence",
                  evidence ? evidence : json_null());
    if (inv->also[0]) {
        json_object_set_new(summary, "also", json_string(inv->also));
    }
    if (inv->mode == SEARCH_MODE_CONTRIBUTOR) {
        json_object_set_new(summary, "mode", json_string("contributor"));
    }
    const char *on =
        json_string_value(json_object_get(json_object_get(evidence, "node_split"), "node"));
    if (on) {
        json_object_set_new(summary, "on_node", json_string(on));
    }
    /* the webhook carries the summary as stored (same rounding), not the live object */
    char *text = summary ? json_dumps(summary, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_error_t jerr;
    json_t *stored = text ? json_loads(text, 0, &jerr) : NULL;
    free(text);
    json_t *wh = json_pack("{s:s,s:s,s:o}", "node", inv->node, "verdict", verdict, "summary",
                           stored ? stored : json_null());
    adapt__fx_inv_close(pl, inv->id, verdict, node, summary);
    inv->state = INV_CLOSED;
    inv->quiet = 0;
    snprintf(inv->verdict_node, sizeof inv->verdict_node, "%s", node ? node : "");
    snprintf(inv->verdict, sizeof inv->verdict, "%s", verdict);
    adapt__fx_log(pl, LOG_WARN, inv->id, " at %s: %s%s%s", inv->node, verdict, node ? " at " : "",
                  node ? node : "");
    adapt__fx_webhook(pl, "verdict", wh, 1, inv->id);
}

void adapt__aborted_on_error(struct plan *pl, struct investigation *inv) {
    adapt__close(pl, inv, "aborted", NULL, json_pack("{s:s}", "error", dq_last_error()));
    adapt__release(pl, inv, "aborted on an error: releasing what it enabled");
}

void adapt__healthy(struct plan *pl, struct investigation *inv, const char *reason,
                    json_t *evidence) {
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "healthy");
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->focus, "verdict", NULL,
                      json_pack("{s:s,s:O}", "reason", reason, "evidence", evidence), "healthy");
    json_object_set_new(evidence, "reason", json_string(reason));
    adapt__close(pl, inv, "healthy", inv->focus, evidence);
    adapt__release(pl, inv, "the verdict is healthy: releasing what the investigation enabled");
}

/* ---- several nodes, one probe ---------------------------------------------------------- */

void adapt__amount_pm(enum search_problem p, double v, double hw, char *buf, size_t cap) {
    char a[40], b[40];
    if (p == SEARCH_LOST || p == SEARCH_VARIANCE) {
        double f = p == SEARCH_LOST ? 100.0 : 1e6;
        const char *unit = p == SEARCH_LOST ? "%" : "ms²";
        dq_format_number(v * f, 3, a, sizeof a);
        if (isnan(hw)) {
            snprintf(buf, cap, "%s %s", a, unit);
        } else {
            snprintf(buf, cap, "%s %s ± %s %s", a, unit, dq_format_number(hw * f, 2, b, sizeof b),
                     unit);
        }
    } else {
        dq_format_duration_pm(v, hw, buf, cap);
    }
}

/* "on node n2: db's mean latency there is 12 ms ± 1 ms, against 4 ms ± 0.5 ms on n1 (the
 * next node)": the sentence of a node that dominates a node split. */
static void node_split_words(const struct search_input *in, const struct search_attribution *a,
                             char *why, size_t why_cap) {
    const struct search_contribution *b = &a->c[a->best];
    const struct search_child *kids = in->children;
    const char *what = in->problem == SEARCH_LOST ? "lost"
                       : in->problem == SEARCH_VARIANCE ? "part of the spread (w·(σ² + (μ − μ̄)²))"
                                                        : "mean latency";
    if (a->runner_up >= 0) {
        const struct search_contribution *r = &a->c[a->runner_up];
        char bw[96], rw[96];
        adapt__amount_pm(in->problem, b->value, b->half_width, bw, sizeof bw);
        adapt__amount_pm(in->problem, r->value, r->half_width, rw, sizeof rw);
        snprintf(why, why_cap, "on node %s: %s's %s there is %s, against %s on %s (the next node)",
                 kids[a->best].name, in->name, what, bw, rw, kids[a->runner_up].name);
    }
}

/*
 * When several nodes (Erlang nodes, hosts) report probe `name`, its problem split by node
 * over windows ≥ from: each node's own mean, spread or lost fraction, compared by the
 * dominance rule. Returns the per-node numbers as JSON (NULL when the probe is not split)
 * and, when one node dominates, its name in `sick` and a sentence in `why`.
 */
static json_t *node_split(struct plan *pl, const char *name, enum search_problem prob, int64_t from,
                          char *sick, size_t sick_cap, char *why, size_t why_cap) {
    sick[0] = why[0] = '\0';
    struct search_child kids[ADAPT_MAX_SPLIT];
    unsigned char include[ADAPT_MAX_SPLIT];
    int weighed = 0;
    int n = adapt__gather_nodes(pl, name, from, kids, include, &weighed);
    if (n < 2) {
        return NULL;
    }
    struct search_input in = {
        .name = name,
        .kind = prob == SEARCH_VARIANCE ? DQ_NODE_CHOICE : DQ_NODE_SEQUENCE,
        .problem = prob == SEARCH_QTA || prob == SEARCH_DIVERGENCE ? SEARCH_LATENCY : prob,
        .children = kids,
        .n_children = (size_t)n};
    search_stats_init(&in.stats);
    json_t *nodes = json_array();
    struct search_attribution *a = weighed >= 2 ? calloc(1, sizeof *a) : NULL;
    if (a && search_attribute(&in, &pl->a->params, include, a) == DQ_OK && a->dominant) {
        snprintf(sick, sick_cap, "%s", kids[a->best].name);
        node_split_words(&in, a, why, why_cap);
    }
    for (int i = 0; i < n; i++) {
        json_t *o = adapt__stats_json(kids[i].name, &kids[i].stats);
        if (a && a->c[i].included) {
            json_object_set_new(o, "contribution", json_real(a->c[i].value));
            json_object_set_new(o, "half_width", json_real(a->c[i].half_width));
        }
        json_array_append_new(nodes, o);
    }
    free(a);
    return nodes;
}

/* Adds the node split of `probe` to a verdict's evidence (and its sentence to reason). */
static void add_node_split(struct plan *pl, struct investigation *inv, const char *probe,
                           json_t *ev, char *reason, size_t cap, char *sick, size_t sick_cap) {
    char why[600];
    json_t *nodes =
        node_split(pl, probe, inv->problem, inv->eval_from, sick, sick_cap, why, sizeof why);
    if (!nodes) {
        return;
    }
    json_t *o = json_pack("{s:s,s:o}", "probe", probe, "nodes", nodes);
    if (sick[0]) {
        json_object_set_new(o, "node", json_string(sick));
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len, "; %s", why);
    }
    json_object_set_new(ev, "node_split", o);
}

/* ---- never reported --------------------------------------------------------------------- */

/* 1 when dqd knows `name` but no instance of it arrived since it started (or it is not
 * even a probe dqd knows). */
static int never_reported(struct plan *pl, const char *name) {
    const struct probe *p = adapt__probe(pl->a, name);
    return !p || p->total_ok + p->total_fa + p->total_to + p->late == 0;
}

/*
 * "b never reported any instance: is it instrumented? " in front of an inconclusive reason,
 * for the children of the focus (or the node itself when fi is NULL) that never reported:
 * an outcome of the diagram that no wrapper measures can never give statistics, and
 * waiting for them is not the problem to report.
 */
static void say_never_reported(struct plan *pl, const struct focus_input *fi, const char *node,
                               char *reason, size_t cap) {
    char names[600] = "";
    size_t len = 0, n = 0;
    if (fi) {
        for (size_t i = 0; i < fi->in.n_children; i++) {
            if (fi->kids[i].name && never_reported(pl, fi->kids[i].name)) {
                int w = snprintf(names + len, sizeof names - len, "%s%s", n ? ", " : "",
                                 fi->kids[i].name);
                len = w > 0 && len + (size_t)w < sizeof names ? len + (size_t)w : len;
                n++;
            }
        }
    } else if (never_reported(pl, node)) {
        snprintf(names, sizeof names, "%s", node);
        n = 1;
    }
    if (n == 0) {
        return;
    }
    char *old = strdup(reason);
    if (!old) {
        return;
    }
    snprintf(reason, cap,
             "%s never reported any instance since dqd started: %s instrumented? (a node of the "
             "diagram that no wrapper reports can give no statistics) %s",
             names, n == 1 ? "is it" : "are they", old);
    free(old);
}

void adapt__inconclusive_no_data(struct plan *pl, struct investigation *inv,
                                 const struct search_check *c) {
    char reason[1400];
    snprintf(reason, sizeof reason,
             "inconclusive at %s: it has %llu instances in %u window%s after %d windows "
             "(needs %llu in %u); no data to decide its problem from",
             inv->node, (unsigned long long)search_stats_instances(&c->recent), c->recent.windows,
             c->recent.windows == 1 ? "" : "s", inv->windows_waited,
             (unsigned long long)pl->a->params.min_instances, pl->a->params.min_windows);
    say_never_reported(pl, NULL, inv->node, reason, sizeof reason);
    json_t *ev = json_pack("{s:s,s:o}", "reason", reason, "check", adapt__check_json(inv->node, c));
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "inconclusive");
    adapt__hypothesis(pl, inv, inv->hyp_id, inv->node, "verdict", NULL,
                      json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), "inconclusive");
    adapt__close(pl, inv, "inconclusive", inv->node, ev);
    adapt__release(pl, inv, "inconclusive without data: releasing what it enabled");
}

/* ---- a search verdict ---------------------------------------------------------------------- */

/* The verdict hypothesis and the closing of a verdict at `node`. */
static void record_verdict(struct plan *pl, struct investigation *inv, const char *verdict,
                           const char *node, const char *reason, json_t *ev) {
    json_object_set_new(ev, "reason", json_string(reason));
    adapt__fx_hyp_verdict(pl, inv->hyp_id, verdict);
    adapt__hypothesis(pl, inv, inv->hyp_id, node, "verdict", NULL,
                      json_pack("{s:s,s:O}", "reason", reason, "evidence", ev), verdict);
    adapt__close(pl, inv, verdict, node, ev);
}

static int try_alternative(struct plan *pl, struct investigation *inv, json_t *ev,
                           const char *reason, const char *found);
static int try_rest(struct plan *pl, struct investigation *inv, json_t *ev, const char *reason,
                    const char *found);
static int descend_off_path(struct plan *pl, struct investigation *inv,
                            const struct focus_input *fi, const struct search_result *r, json_t *ev,
                            const char *reason, const char *found);
static int descend_tie(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                       const struct search_result *r, json_t *ev, const char *reason);
static json_t *keep_alternative(struct investigation *inv, const char *alt, const char *from,
                                int kind);

/* Ends s on a whole UTF-8 character (a cut text can end inside one: invalid JSON). */
static void utf8_whole(char *s) {
    size_t n = strlen(s), k = n;
    while (k > 0 && ((unsigned char)s[k - 1] & 0xC0) == 0x80) {
        k--; /* continuation bytes back to their lead byte */
    }
    if (k > 0 && ((unsigned char)s[k - 1] & 0x80)) {
        unsigned char lead = (unsigned char)s[k - 1];
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        if (n - (k - 1) < need) {
            s[k - 1] = '\0';
        }
    }
}

/*
 * No child dominates over all nodes, but the node split found the change on node `sick`: a
 * step slowed on one node of many is diluted by the others. There, each child of the focus
 * against the same child on the other nodes (adapt__scope_to_node): when one dominates, the
 * search descends into it, or it is the culprit, weighed again that way by the re-checks
 * (1: ev and reason used). A node slow in every part stays the node split's verdict (no
 * child dominates there either).
 */
static int on_sick_node(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                        const char *sick, const char *over_all) {
    if (inv->mode != SEARCH_MODE_PROBLEM || inv->alt_tried || inv->alt[0]) {
        return 0;
    }
    struct focus_input *x = malloc(sizeof *x);
    struct search_result *r = calloc(1, sizeof *r);
    int ok = x && r;
    if (ok) {
        *x = *fi;
        memset(x->kstats, 0, sizeof x->kstats); /* fi owns its ΔQs: x borrows none */
        memset(&x->xstats, 0, sizeof x->xstats);
        x->in.children = x->kids;
        x->in.exhausted = 1; /* the step is over: decide now */
        ok = adapt__scope_to_node(pl, x, sick, inv->eval_from) &&
             search_evaluate(&x->in, &pl->a->params, r) == DQ_OK &&
             (r->verdict == SEARCH_DESCEND || r->verdict == SEARCH_LOCALIZED) && r->child >= 0;
    }
    if (ok) {
        /* "descend into back: on node n3 alone, against …, back holds …; over all nodes, …" */
        char said[SEARCH_REASON_MAX];
        snprintf(said, sizeof said, "%s", r->reason);
        const char *colon = strstr(said, ": ");
        int head = colon ? (int)(colon - said) : 0;
        int w = snprintf(r->reason, sizeof r->reason,
                         "%.*s: on node %s alone, against the same probes on the other nodes, "
                         "%s; over all nodes, %s",
                         head, said, sick, colon ? colon + 2 : said, over_all);
        if (w >= (int)sizeof r->reason) {
            utf8_whole(r->reason);
        }
        adapt__fx_log(pl, LOG_INFO, inv->id,
                      ": no child of %s dominates over all nodes; on %s alone, %s does", inv->focus,
                      sick, x->kids[r->child].name);
        inv->scoping = sick;
        adapt__decided(pl, inv, x, r);
        inv->scoping = NULL;
    }
    free(x);
    free(r);
    return ok;
}

/* Diffuse over the children, but maybe held by one node: then it is that node's, or a child's
 * there (on_sick_node); else the turn of a child kept to be searched in turn
 * (try_alternative), or of the other of two near a tie (descend_tie). */
static void diffuse(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                    const struct search_result *r, json_t *ev, char *reason, size_t cap) {
    char sick[PROBES_LABEL_MAX];
    char *before = strdup(reason);
    add_node_split(pl, inv, inv->focus, ev, reason, cap, sick, sizeof sick);
    if (sick[0] && before) {
        const char *on = strstr(reason, "; on node ");
        const char *rest = strstr(before, ": ");
        if (on_sick_node(pl, inv, fi, sick, rest ? rest + 2 : before)) {
            free(before);
            json_decref(ev);
            return;
        }
        snprintf(reason, cap, "localized at %s, on node %s; over all nodes, %s", inv->focus,
                 on ? on + 10 : sick, rest ? rest + 2 : before);
    }
    free(before);
    if (!sick[0] && (try_alternative(pl, inv, ev, reason, "diffuse") ||
                     descend_tie(pl, inv, fi, r, ev, reason))) {
        return; /* ev taken */
    }
    if (!sick[0] && inv->alt_tried) {
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len,
                 inv->alt_inconclusive
                     ? "; %s, searched before it, told too little (inconclusive): the change "
                       "is in no one part here, and unknown there"
                 : inv->alt_kind == ALT_TIE
                     ? "; %s, searched before it (the two near a tie), was diffuse too: neither "
                       "holds the change in one part"
                     : "; %s, the branch searched before it (weighed without baselines of its "
                       "own), was diffuse too: neither branch holds the change in one part",
                 inv->alt_from);
    }
    record_verdict(pl, inv, sick[0] ? "localized" : "diffuse", inv->focus, reason, ev);
}

/* 1 when `name` is one of inv's culprits. */
static int is_culprit(const struct investigation *inv, const char *name) {
    for (int k = 0; name && k < inv->n_culprits; k++) {
        if (strcmp(inv->culprits[k], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The search after a culprit found no other: localized at the culprits found. */
static void close_culprits(struct plan *pl, struct investigation *inv, json_t *ev, char *reason,
                           size_t cap) {
    const char *at = adapt__culprits_close(pl, inv, ev, reason, cap);
    char node[PROBES_NAME_MAX + 1], sick[PROBES_LABEL_MAX];
    snprintf(node, sizeof node, "%s", at);
    /* the culprit named, split by node as a lone culprit's verdict is (the search went on
     * from it without) */
    add_node_split(pl, inv, node, ev, reason, cap, sick, sizeof sick);
    snprintf(inv->focus, sizeof inv->focus, "%s", inv->culprit_parent); /* re-checks look there */
    record_verdict(pl, inv, "localized", node, reason, ev);
}

/* A localized verdict at child c: the first culprit keeps the numbers re-checks compare
 * with; every culprit asks whether the node's change is explained (or the search goes on). */
static void localized(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                      const struct search_result *r, json_t *ev, char *reason, size_t cap) {
    int child = r->child;
    const char *child_name = fi->kids[child].name;
    if (is_culprit(inv, child_name)) { /* the search came back to a culprit: nothing more, */
        if (!try_alternative(pl, inv, ev, reason, "diffuse") &&
            !try_rest(pl, inv, ev, reason, "localized")) {
            close_culprits(pl, inv, ev, reason, cap);
        }
        return;
    }
    if (inv->n_culprits == 0) {
        inv->verdict_value = r->attr.c[child].value;
        inv->verdict_hw = r->attr.c[child].half_width;
        inv->runner_value = r->attr.runner_up >= 0 ? r->attr.c[r->attr.runner_up].value : 0.0;
        snprintf(inv->culprit_parent, sizeof inv->culprit_parent, "%s", inv->focus);
        /* weighed on one node alone: so are the re-checks (a restart keeps none of a lone
         * verdict's numbers, as for any) */
        snprintf(inv->verdict_on, sizeof inv->verdict_on, "%s", inv->scoping ? inv->scoping : "");
        if (inv->scoping) {
            json_object_set_new(ev, "weighed_on_node", json_string(inv->scoping));
        }
    }
    const char *runner = r->attr.runner_up >= 0 ? fi->kids[r->attr.runner_up].name : NULL;
    /* a culprit weighed on one node alone is not weighed for its share of the node's change:
     * the what-ifs put a culprit back to its sibling over all nodes, not to the same probe on
     * the other nodes (it would explain nothing, and the search look for a second culprit
     * among siblings that did not change) */
    int found = inv->scoping && inv->n_culprits == 0
                    ? 0
                    : adapt__culprit_found(pl, inv, child_name, runner, ev, reason, cap);
    if (found > 0) {
        adapt__turns_clear(inv); /* the search goes on afresh from the node */
        return;                  /* ev taken: the search goes on for another culprit */
    }
    if (found < 0) { /* not a culprit after all: as when the search comes back to one */
        if (!try_alternative(pl, inv, ev, reason, "diffuse") &&
            !try_rest(pl, inv, ev, reason, "localized")) {
            close_culprits(pl, inv, ev, reason, cap);
        }
        return;
    }
    char sick[PROBES_LABEL_MAX];
    add_node_split(pl, inv, child_name, ev, reason, cap, sick, sizeof sick);
    const char *at = inv->n_culprits > 0 ? inv->culprits[0] : child_name;
    char node[PROBES_NAME_MAX + 1];
    snprintf(node, sizeof node, "%s", at);
    if (inv->n_culprits > 1) {
        snprintf(inv->focus, sizeof inv->focus, "%s", inv->culprit_parent);
    }
    record_verdict(pl, inv, "localized", node, reason, ev);
}

/*
 * A choice's branches weighed without baselines of their own (by their weighted means, or
 * for shape by each branch's mass beyond the level where the node's mass moved) cannot tell
 * which branch changed: a common branch holds most of the weighted time or mass whether it
 * changed or a rare one did. The runner-up is kept, and searched in turn if the branch
 * taken holds no culprit: a branch where one part stands out is a better answer than one
 * where none does.
 */
static json_t *note_alternative(struct plan *pl, struct investigation *inv,
                                const struct focus_input *fi, const struct search_result *r) {
    if (inv->mode != SEARCH_MODE_PROBLEM || fi->in.kind != DQ_NODE_CHOICE ||
        r->attr.baseline_mode || r->attr.shape_mode == 1 || r->attr.runner_up < 0 || r->child < 0 ||
        !fi->kids[r->attr.runner_up].has_children || inv->alt[0] || inv->alt_tried ||
        adapt__on_culprit_path(core_diagram(pl->a->env.core), inv, fi->kid_nodes[r->child])) {
        return NULL; /* (a culprit's branch taken again: explored_first orders them) */
    }
    return keep_alternative(inv, fi->kids[r->attr.runner_up].name, fi->kids[r->child].name,
                            ALT_CHOICE);
}

static const char *const alt_kinds[] = {"choice", "tie", "explored"};

/* Keeps `alt` to be searched in turn when `from`, taken now, holds no culprit; the JSON for
 * the descend hypothesis, so that a restart resumes it (resume.c). */
static json_t *keep_alternative(struct investigation *inv, const char *alt, const char *from,
                                int kind) {
    snprintf(inv->alt, sizeof inv->alt, "%s", alt);
    snprintf(inv->alt_from, sizeof inv->alt_from, "%s", from);
    inv->alt_kind = kind;
    inv->alt_tried = 0; /* a new turn (resume.c alike): each kept child is searched once */
    inv->alt_inconclusive = 0;
    return json_pack("{s:s,s:s,s:s}", "runner_up", inv->alt, "branch", inv->alt_from, "kind",
                     alt_kinds[kind]);
}

int adapt__alt_kind(const char *name) {
    for (int k = 0; name && k < (int)(sizeof alt_kinds / sizeof alt_kinds[0]); k++) {
        if (strcmp(alt_kinds[k], name) == 0) {
            return k;
        }
    }
    return ALT_CHOICE;
}

/*
 * After a culprit, the search goes on from the node for the rest of its change, each child
 * weighed by its mean less what the culprits put in; without baselines of their own the
 * children's raw times differ by nature, and the subtree that holds the culprit found, searched
 * already, can still weigh most. Then the rest is looked for first in the largest other child
 * with finer probes, and the culprit's subtree searched in turn if that child holds no
 * culprit. Returns that child's index (its alternative kept), or −1.
 */
static int explored_first(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                          const struct search_result *r, json_t **alt) {
    if (inv->n_culprits == 0 || inv->alt[0] || r->child < 0 ||
        !adapt__on_culprit_path(core_diagram(pl->a->env.core), inv, fi->kid_nodes[r->child])) {
        return -1;
    }
    int other = -1;
    for (size_t j = 0; j < fi->in.n_children; j++) {
        if ((int)j != r->child && r->attr.c[j].included && fi->kids[j].has_children &&
            r->attr.c[j].value > 0 &&
            !adapt__on_culprit_path(core_diagram(pl->a->env.core), inv, fi->kid_nodes[j]) &&
            (other < 0 || r->attr.c[j].value > r->attr.c[other].value)) {
            other = (int)j;
        }
    }
    if (other >= 0) {
        *alt = keep_alternative(inv, fi->kids[r->child].name, fi->kids[other].name, ALT_EXPLORED);
    }
    return other;
}

/* The share of the included children's value the two largest hold at which a diffuse pair
 * is searched one after the other (descend_tie). */
#define TIE_PAIR_SHARE 0.75

/*
 * Diffuse at a node whose problem has a reference, where two children near a tie hold most
 * of the change (three quarters or more of what the children account for) and the larger
 * has finer probes: rather than diffuse, the larger is searched, and the other in turn if it
 * holds no culprit (two faults, or one whose part is hidden among siblings of another make).
 * 1 when it descended (ev taken).
 */
static int descend_tie(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                       const struct search_result *r, json_t *ev, const char *reason) {
    int b = r->attr.best, u = r->attr.runner_up;
    if (inv->mode != SEARCH_MODE_PROBLEM || r->verdict != SEARCH_DIFFUSE || inv->alt[0] ||
        inv->alt_tried || b < 0 || u < 0 || !fi->kids[b].has_children ||
        !fi->kids[u].has_children || !r->attr.c[b].included || !r->attr.c[u].included ||
        adapt__on_culprit_path(core_diagram(pl->a->env.core), inv, fi->kid_nodes[b]) ||
        adapt__on_culprit_path(core_diagram(pl->a->env.core), inv, fi->kid_nodes[u])) {
        return 0;
    }
    /* both clearly above 0, and together most of the node: its children's values and its
     * own time beyond them (a node whose own time grew is not its children's tie) */
    const struct search_contribution *cb = &r->attr.c[b], *cu = &r->attr.c[u];
    double sum = isfinite(r->attr.remainder) ? fmax(r->attr.remainder, 0.0) : 0.0;
    for (size_t j = 0; j < fi->in.n_children; j++) {
        sum += r->attr.c[j].included && r->attr.c[j].value > 0 ? r->attr.c[j].value : 0.0;
    }
    if (!(cb->value - cb->half_width > 0) || !(cu->value - cu->half_width > 0) || !(sum > 0) ||
        cb->value + cu->value < TIE_PAIR_SHARE * sum) {
        return 0;
    }
    /* searched one after the other only when a culprit found in the first lets the search
     * go on for the rest (else the second half would never be looked at: diffuse says more) */
    if (!adapt__culprits_can_go_on(pl, inv)) {
        return 0;
    }
    const char *leader = fi->kids[b].name;
    json_t *alt = keep_alternative(inv, fi->kids[u].name, leader, ALT_TIE);
    char why[SEARCH_REASON_MAX + 900 + 2 * PROBES_NAME_MAX + 300];
    snprintf(why, sizeof why,
             "%s; %s and %s hold %.0f %% of it between them, near a tie: %s is searched, and %s "
             "in turn if %s holds no culprit",
             reason, leader, inv->alt, 100.0 * (cb->value + cu->value) / sum, leader, inv->alt,
             leader);
    adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
    int64_t hyp = adapt__hypothesis(
        pl, inv, inv->hyp_id, leader, "descend", json_array(),
        json_pack("{s:s,s:O,s:o}", "reason", why, "evidence", ev, "alternative", alt), NULL);
    json_decref(ev);
    adapt__focus_on(pl->a, inv, leader, hyp ? hyp : inv->hyp_id, pl->upto);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": %s and %s near a tie; descending into %s", leader,
                  inv->alt, leader);
    return 1;
}

/* The search's turn moves to `next`, kept for it (1: ev taken): the step's hypothesis marked
 * with what it found, a `descend` hypothesis with `stats` (taken), what the investigation
 * enabled below `leave` released with `released` (NULL leave: nothing), and `log_line`. */
static int descend_in_turn(struct plan *pl, struct investigation *inv, const char *next,
                           const char *found, json_t *stats, json_t *ev, const char *leave,
                           const char *released, const char *log_line) {
    adapt__fx_hyp_verdict(pl, inv->hyp_id, found);
    int64_t hyp =
        adapt__hypothesis(pl, inv, inv->hyp_id, next, "descend", json_array(), stats, NULL);
    json_decref(ev);
    if (leave) {
        adapt__release_below(pl, inv, leave, hyp ? hyp : inv->hyp_id, released);
    }
    adapt__focus_on(pl->a, inv, next, hyp ? hyp : inv->hyp_id, pl->upto);
    adapt__fx_log(pl, LOG_INFO, inv->id, ": %s", log_line);
    return 1;
}

/* Diffuse in (or below) the branch taken at such a choice: the runner-up's turn (1, ev
 * taken); the parts enabled below the branch taken are disabled. */
static int try_alternative(struct plan *pl, struct investigation *inv, json_t *ev,
                           const char *reason, const char *found) {
    if (!inv->alt[0] || inv->alt_tried) {
        return 0;
    }
    char why[SEARCH_REASON_MAX + 900 + 2 * PROBES_NAME_MAX + 300]; /* reason: adapt__decided's */
    int told_little = strcmp(found, "inconclusive") == 0;
    if (inv->alt_kind == ALT_TIE) {
        snprintf(why, sizeof why,
                 "%s; %s, searched first of two near a tie, %s, so %s is searched in turn", reason,
                 inv->alt_from,
                 told_little ? "told too little to find a culprit" : "holds no culprit", inv->alt);
    } else if (inv->alt_kind == ALT_EXPLORED) {
        snprintf(why, sizeof why,
                 told_little ? "%s; %s told too little to find the rest of %s's change, so %s, "
                               "which holds the culprit found, is searched again for it"
                             : "%s; the rest of %s's change is not in %s, so %s, which holds "
                               "the culprit found, is searched again for it",
                 reason, told_little ? inv->alt_from : inv->node,
                 told_little ? inv->node : inv->alt_from, inv->alt);
    } else {
        snprintf(why, sizeof why,
                 "%s; %s was taken at a choice whose branches were weighed without baselines of "
                 "their own (a wide branch holds most of the mass whichever branch changed), so "
                 "the runner-up branch %s is searched in turn",
                 reason, inv->alt_from, inv->alt);
    }
    inv->alt_tried = 1;
    inv->alt_inconclusive = told_little;
    char next[PROBES_NAME_MAX + 1];
    snprintf(next, sizeof next, "%s", inv->alt);
    inv->alt[0] = '\0';
    char released[128], line[3 * PROBES_NAME_MAX + 64];
    snprintf(released, sizeof released,
             "a branch searched and found %s: its parts go while the runner-up is searched", found);
    snprintf(line, sizeof line, "%s %s; descending into the runner-up %s", inv->alt_from, found,
             next);
    return descend_in_turn(pl, inv, next, found,
                           json_pack("{s:s,s:O,s:s,s:b}", "reason", why, "evidence", ev,
                                     "alternative_of", inv->alt_from, "alternative_of_inconclusive",
                                     inv->alt_inconclusive),
                           ev, inv->alt_from, released, line);
}

/* The largest child of the focus off every culprit's path, with children of its own and a
 * positive value, other than `except` (NULL: none); −1 when none. */
static int largest_off_path(struct plan *pl, const struct investigation *inv,
                            const struct focus_input *fi, const struct search_result *r,
                            const char *except) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int best = -1;
    for (size_t j = 0; g && j < fi->in.n_children; j++) {
        if ((!except || strcmp(fi->kids[j].name, except) != 0) && r->attr.c[j].included &&
            fi->kids[j].has_children && r->attr.c[j].value > 0 &&
            !adapt__on_culprit_path(g, inv, fi->kid_nodes[j]) &&
            (best < 0 || r->attr.c[j].value > r->attr.c[best].value)) {
            best = (int)j;
        }
    }
    return best;
}

/* Keeps the runner-up for the rest of the change (see note_rest) when none is kept. */
static json_t *keep_rest(struct investigation *inv, const struct focus_input *fi, int j,
                         const char *into) {
    if (j < 0 || inv->rest_alt[0] || inv->rest_tried ||
        (inv->alt[0] && strcmp(inv->alt, fi->kids[j].name) == 0)) {
        return NULL;
    }
    snprintf(inv->rest_alt, sizeof inv->rest_alt, "%s", fi->kids[j].name);
    snprintf(inv->rest_from, sizeof inv->rest_from, "%s", into);
    return json_pack("{s:s,s:s}", "runner_up", inv->rest_alt, "branch", inv->rest_from);
}

/* After a culprit, a node on a culprit's path that ends diffuse (or inconclusive) while the
 * rest of the change is looked for: its largest child off every culprit's path, with
 * children of its own, is searched (1, ev taken). The culprit's branch was searched
 * already, and with its culprit put back it is weighed against its siblings by raw means,
 * which differ by nature: the cache's hit branch (c_find_1 found) against its miss branch
 * (m_store_3 slowed) ended diffuse, and miss was never searched. */
static int descend_off_path(struct plan *pl, struct investigation *inv,
                            const struct focus_input *fi, const struct search_result *r, json_t *ev,
                            const char *reason, const char *found) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int at = g ? dq_diagram_find(g, inv->focus) : -1;
    if (inv->n_culprits == 0 || at < 0 || strcmp(inv->focus, inv->node) == 0 ||
        !adapt__on_culprit_path(g, inv, at)) {
        return 0;
    }
    int best = largest_off_path(pl, inv, fi, r, NULL);
    if (best < 0) {
        return 0;
    }
    char why[SEARCH_REASON_MAX + 900 + 2 * PROBES_NAME_MAX + 200];
    snprintf(why, sizeof why,
             "%s; %s holds a culprit found, whose branch was searched: the rest of %s's change "
             "is looked for in %s, its largest part off the culprits' paths",
             reason, inv->focus, inv->node, fi->kids[best].name);
    char next[PROBES_NAME_MAX + 1];
    snprintf(next, sizeof next, "%s", fi->kids[best].name);
    json_t *stats = json_pack("{s:s,s:O}", "reason", why, "evidence", ev);
    json_t *rest = keep_rest(inv, fi, largest_off_path(pl, inv, fi, r, next), next);
    if (rest) {
        json_object_set_new(stats, "rest_alternative", rest);
    }
    char line[PROBES_NAME_MAX + 64];
    snprintf(line, sizeof line, "descending into %s, off the culprits' paths", next);
    return descend_in_turn(pl, inv, next, found, stats, ev, NULL, NULL, line);
}

/* After a culprit, the search for the rest of the change descends from the node into
 * `into`: the node's runner-up child then (not on a culprit's path, with children of its
 * own) is kept to be searched in turn should that subtree hold no culprit (try_rest): the
 * node's children are weighed by raw means, which differ by nature (cache 18 ms against
 * reply 16 ms, the second fault in reply). The JSON for the descend hypothesis (resume.c),
 * or NULL. */
static json_t *note_rest(struct plan *pl, struct investigation *inv, const struct focus_input *fi,
                         const struct search_result *r, const char *into) {
    if (inv->n_culprits == 0 || strcmp(inv->focus, inv->node) != 0) {
        return NULL;
    }
    return keep_rest(inv, fi, largest_off_path(pl, inv, fi, r, into), into);
}

/* The rest of the change not found in rest_from's subtree: the node's runner-up's turn
 * (1, ev taken; rest_from's parts are disabled). */
static int try_rest(struct plan *pl, struct investigation *inv, json_t *ev, const char *reason,
                    const char *found) {
    if (!inv->rest_alt[0] || inv->rest_tried) {
        return 0;
    }
    char why[SEARCH_REASON_MAX + 900 + 3 * PROBES_NAME_MAX + 200];
    snprintf(why, sizeof why,
             "%s; no culprit for the rest of %s's change in %s, so %s, the runner-up there, "
             "is searched in turn",
             reason, inv->node, inv->rest_from, inv->rest_alt);
    inv->rest_tried = 1;
    inv->alt[0] = '\0'; /* the subtree's own kept child had its turn, or goes with it */
    char next[PROBES_NAME_MAX + 1];
    snprintf(next, sizeof next, "%s", inv->rest_alt);
    char line[3 * PROBES_NAME_MAX + 64];
    snprintf(line, sizeof line, "no culprit in %s; descending into %s", inv->rest_from, next);
    return descend_in_turn(pl, inv, next, found,
                           json_pack("{s:s,s:O,s:s}", "reason", why, "evidence", ev,
                                     "rest_alternative_of", inv->rest_from),
                           ev, inv->rest_from,
                           "no culprit for the rest of the change there: its parts go while the "
                           "runner-up is searched",
                           line);
}

void adapt__decided(struct plan *pl, struct investigation *inv, struct focus_input *fi,
                    const struct search_result *r) {
    json_t *ev = adapt__attribution_json(&fi->in, r);
    int child = r->child;
    const char *child_name = child >= 0 ? fi->kids[child].name : NULL;
    char reason[SEARCH_REASON_MAX + 900];
    snprintf(reason, sizeof reason, "%s", r->reason);
    const char *colon = strstr(r->reason, ": ");
    if (inv->mode == SEARCH_MODE_CONTRIBUTOR && r->verdict == SEARCH_LOCALIZED && colon) {
        /* after the verdict's own "localized at X: ", so that it is said once, first */
        snprintf(reason, sizeof reason,
                 "%.*sthe largest contributor, nothing to judge it against (no QTA, no "
                 "baseline yet): %s",
                 (int)(colon + 2 - r->reason), r->reason, colon + 2);
    }
    json_object_set_new(ev, "reason", json_string(reason));
    if (r->verdict == SEARCH_DESCEND) {
        json_t *alt = note_alternative(pl, inv, fi, r);
        int other = alt ? -1 : explored_first(pl, inv, fi, r, &alt);
        if (other >= 0) {
            size_t len = strlen(reason);
            snprintf(reason + len, sizeof reason - len,
                     "; %s holds the culprit found and was searched already: the rest of %s's "
                     "change is looked for in %s first",
                     child_name, inv->node, fi->kids[other].name);
            child_name = fi->kids[other].name;
            json_object_set_new(ev, "reason", json_string(reason));
        }
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "confirmed");
        json_t *stats = json_pack("{s:s,s:o}", "reason", reason, "evidence", ev);
        if (alt) {
            json_object_set_new(stats, "alternative", alt);
        }
        json_t *rest = note_rest(pl, inv, fi, r, child_name);
        if (rest) {
            json_object_set_new(stats, "rest_alternative", rest);
        }
        int64_t hyp = adapt__hypothesis(pl, inv, inv->hyp_id, child_name, "descend", json_array(),
                                        stats, NULL);
        adapt__focus_on(pl->a, inv, child_name, hyp ? hyp : inv->hyp_id, pl->upto);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": descending into %s", child_name);
    } else if (r->verdict == SEARCH_LOCALIZED) {
        localized(pl, inv, fi, r, ev, reason, sizeof reason);
    } else if (inv->n_culprits > 0) {
        const char *found = r->verdict == SEARCH_INCONCLUSIVE ? "inconclusive" : "diffuse";
        if (!try_alternative(pl, inv, ev, reason, found) &&
            !descend_tie(pl, inv, fi, r, ev, reason) &&
            !descend_off_path(pl, inv, fi, r, ev, reason, found) &&
            !try_rest(pl, inv, ev, reason, found)) {
            close_culprits(pl, inv, ev, reason, sizeof reason);
        }
    } else if (r->verdict == SEARCH_DIFFUSE) {
        diffuse(pl, inv, fi, r, ev, reason, sizeof reason);
    } else {
        say_never_reported(pl, fi, inv->focus, reason, sizeof reason);
        /* a branch whose parts never told: the runner-up kept for its turn may */
        if (!try_alternative(pl, inv, ev, reason, "inconclusive")) {
            record_verdict(pl, inv, "inconclusive", inv->focus, reason, ev);
        }
    }
}
