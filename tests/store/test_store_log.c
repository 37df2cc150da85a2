/*
 * test_store_log.c: the adaptive loop's log (schema version 2) on real files: triggers and
 * their hysteresis state, investigations, the hypothesis forest with the "why" lookups,
 * commands, snapshots of ΔQs, a version-1 database upgraded with its data, and a restart
 * that finds open investigations and trigger state where they were.
 */
#include "store.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_test_util.h"

#define SEC INT64_C(1000000000)
#define T0 (INT64_C(1700000000) * SEC)

static struct store *open_ok(const char *path) {
    struct store *st = NULL;
    int rc = store_open(path, &st);
    CHECK_MSG(rc == DQ_OK && st, "store_open(%s) = %s: %s", path, dq_err_name(rc), dq_last_error());
    return st;
}

static int add_probe(struct store *st, const char *name) {
    struct store_probe p = {.name = name, .dmax_ms = 100, .bins = 100, .enabled = true};
    return store_probe_upsert(st, &p);
}

/* ---- triggers --------------------------------------------------------------------- */

struct trig_copy {
    int count;
    struct store_trigger t;
    char probe[64], kind[32], params[64];
};

static int copy_trigger(void *ctx, const struct store_trigger *t) {
    struct trig_copy *c = ctx;
    c->count++;
    c->t = *t;
    snprintf(c->probe, sizeof c->probe, "%s", t->probe);
    snprintf(c->kind, sizeof c->kind, "%s", t->kind);
    snprintf(c->params, sizeof c->params, "%s", t->params_json ? t->params_json : "(null)");
    return 0;
}

static void test_triggers(struct store *st, struct fake_clock *clk) {
    CHECK_INT(add_probe(st, "root"), DQ_OK);
    CHECK_INT(add_probe(st, "doomed"), DQ_OK);
    clk->now = T0;
    struct store_trigger t = {.probe = "root",
                              .kind = "qta",
                              .threshold = NAN,
                              .fire_after = 3,
                              .clear_after = 5,
                              .enabled = true};
    int64_t qta = 0, cv = 0, again = 0, gone = 0;
    CHECK_INT(store_trigger_upsert(st, &t, &qta), DQ_OK);
    t.kind = "cv";
    t.threshold = 0.5;
    t.params_json = "{\"min_n\":30}";
    CHECK_INT(store_trigger_upsert(st, &t, &cv), DQ_OK);
    CHECK(qta > 0 && cv > 0 && cv != qta);
    t.probe = "doomed";
    CHECK_INT(store_trigger_upsert(st, &t, &gone), DQ_OK);

    struct trig_copy c = {0};
    CHECK_INT(store_trigger_get(st, cv, copy_trigger, &c), DQ_OK);
    CHECK_INT(c.count, 1);
    CHECK_STR(c.probe, "root");
    CHECK_STR(c.kind, "cv");
    CHECK_NEAR(c.t.threshold, 0.5, 0);
    CHECK_INT(c.t.fire_after, 3);
    CHECK_INT(c.t.clear_after, 5);
    CHECK_STR(c.params, "{\"min_n\":30}");
    CHECK(c.t.enabled && !c.t.fired && c.t.bad == 0 && c.t.good == 0);
    CHECK_INT(c.t.fired_ns, 0);
    CHECK_INT(c.t.created_ns, T0);

    /* Hysteresis: two bad windows, then firing, then clearing. */
    clk->now = T0 + 1 * SEC;
    CHECK_INT(store_trigger_set_state(st, cv, false, 2, 0), DQ_OK);
    clk->now = T0 + 2 * SEC;
    CHECK_INT(store_trigger_set_state(st, cv, true, 3, 0), DQ_OK);
    clk->now = T0 + 3 * SEC;
    CHECK_INT(store_trigger_set_state(st, cv, true, 4, 0), DQ_OK); /* still fired */
    memset(&c, 0, sizeof c);
    CHECK_INT(store_trigger_get(st, cv, copy_trigger, &c), DQ_OK);
    CHECK(c.t.fired);
    CHECK_INT(c.t.bad, 4);
    CHECK_INT(c.t.fired_ns, T0 + 2 * SEC); /* stamped on the transition only */
    CHECK_INT(c.t.cleared_ns, 0);
    clk->now = T0 + 9 * SEC;
    CHECK_INT(store_trigger_set_state(st, cv, false, 0, 5), DQ_OK);
    memset(&c, 0, sizeof c);
    CHECK_INT(store_trigger_get(st, cv, copy_trigger, &c), DQ_OK);
    CHECK(!c.t.fired);
    CHECK_INT(c.t.good, 5);
    CHECK_INT(c.t.fired_ns, T0 + 2 * SEC);
    CHECK_INT(c.t.cleared_ns, T0 + 9 * SEC);
    CHECK_INT(c.t.updated_ns, T0 + 9 * SEC);

    /* Upserting the same (probe, kind) changes the configuration, keeps the state. */
    CHECK_INT(store_trigger_set_state(st, cv, true, 3, 0), DQ_OK);
    t.probe = "root";
    t.threshold = 0.8;
    t.fire_after = 2;
    t.params_json = NULL;
    t.enabled = false;
    CHECK_INT(store_trigger_upsert(st, &t, &again), DQ_OK);
    CHECK_INT(again, cv);
    memset(&c, 0, sizeof c);
    CHECK_INT(store_trigger_get(st, cv, copy_trigger, &c), DQ_OK);
    CHECK_NEAR(c.t.threshold, 0.8, 0);
    CHECK_INT(c.t.fire_after, 2);
    CHECK_STR(c.params, "(null)");
    CHECK(!c.t.enabled && c.t.fired && c.t.bad == 3);
    CHECK_INT(c.t.created_ns, T0);

    /* Listing. */
    memset(&c, 0, sizeof c);
    CHECK_INT(store_triggers_each(st, "root", copy_trigger, &c), DQ_OK);
    CHECK_INT(c.count, 2);
    CHECK_STR(c.kind, "qta"); /* by kind: cv, then qta */
    memset(&c, 0, sizeof c);
    CHECK_INT(store_triggers_each(st, NULL, copy_trigger, &c), DQ_OK);
    CHECK_INT(c.count, 3);

    /* Bad input. */
    t.fire_after = 0;
    CHECK_INT(store_trigger_upsert(st, &t, NULL), DQ_ERANGE);
    t.fire_after = 1;
    t.clear_after = -1;
    CHECK_INT(store_trigger_upsert(st, &t, NULL), DQ_ERANGE);
    t.clear_after = 1;
    t.probe = "ghost";
    CHECK_INT(store_trigger_upsert(st, &t, NULL), DQ_ENOTFOUND);
    t.probe = "root";
    t.params_json = "{";
    CHECK_INT(store_trigger_upsert(st, &t, NULL), DQ_EINVAL);
    t.params_json = NULL;
    t.kind = "";
    CHECK_INT(store_trigger_upsert(st, &t, NULL), DQ_EINVAL);
    CHECK_INT(store_trigger_upsert(st, NULL, NULL), DQ_EINVAL);
    CHECK_INT(store_trigger_set_state(st, 999999, true, 1, 0), DQ_ENOTFOUND);
    CHECK_INT(store_trigger_set_state(st, cv, true, -1, 0), DQ_ERANGE);
    CHECK_INT(store_trigger_get(st, 999999, copy_trigger, &c), DQ_ENOTFOUND);
    CHECK_INT(store_trigger_delete(st, 999999), DQ_ENOTFOUND);

    /* Deleting a probe deletes its triggers. */
    CHECK_INT(store_probe_delete(st, "doomed"), DQ_OK);
    CHECK_INT(store_trigger_get(st, gone, copy_trigger, &c), DQ_ENOTFOUND);
    CHECK_INT(store_trigger_delete(st, qta), DQ_OK);
    memset(&c, 0, sizeof c);
    CHECK_INT(store_triggers_each(st, NULL, copy_trigger, &c), DQ_OK);
    CHECK_INT(c.count, 1);
}

/* ---- investigations and hypotheses ------------------------------------------------ */

struct inv_list {
    int count;
    int64_t ids[8];
    struct store_investigation last;
    char verdict[32], verdict_node[64], summary[128], origin[16], problem[33];
};

static int collect_inv(void *ctx, const struct store_investigation *inv) {
    struct inv_list *l = ctx;
    if (l->count < 8) {
        l->ids[l->count] = inv->id;
    }
    l->count++;
    l->last = *inv;
    snprintf(l->verdict, sizeof l->verdict, "%s", inv->verdict ? inv->verdict : "(null)");
    snprintf(l->verdict_node, sizeof l->verdict_node, "%s",
             inv->verdict_node ? inv->verdict_node : "(null)");
    snprintf(l->summary, sizeof l->summary, "%s", inv->summary_json ? inv->summary_json : "(null)");
    snprintf(l->origin, sizeof l->origin, "%s", inv->origin);
    snprintf(l->problem, sizeof l->problem, "%s", inv->problem);
    return 0;
}

struct hyp_list {
    int count;
    int64_t ids[16];
    int64_t parents[16];
    char nodes[16][32];
    char actions[16][16];
    char verdicts[16][16];
    char probes[16][96];
    char stats[16][96];
};

static int collect_hyp(void *ctx, const struct store_hypothesis *h) {
    struct hyp_list *l = ctx;
    if (l->count < 16) {
        int i = l->count;
        l->ids[i] = h->id;
        l->parents[i] = h->parent;
        snprintf(l->nodes[i], sizeof l->nodes[i], "%s", h->node);
        snprintf(l->actions[i], sizeof l->actions[i], "%s", h->action);
        snprintf(l->verdicts[i], sizeof l->verdicts[i], "%s", h->verdict);
        snprintf(l->probes[i], sizeof l->probes[i], "%s", h->probes_json);
        snprintf(l->stats[i], sizeof l->stats[i], "%s", h->stats_json ? h->stats_json : "(null)");
    }
    l->count++;
    return 0;
}

/* Ids of one investigation's tree, for the later tests. */
struct tree {
    int64_t inv, other_inv;
    int64_t root, expand, child, grandchild;
};

static void test_investigations(struct store *st, struct fake_clock *clk, struct tree *tr) {
    CHECK_INT(add_probe(st, "stage_2"), DQ_OK);
    int64_t trig = 0;
    struct store_trigger t = {
        .probe = "stage_2", .kind = "lost", .threshold = 0.1, .fire_after = 1, .clear_after = 1};
    CHECK_INT(store_trigger_upsert(st, &t, &trig), DQ_OK);

    clk->now = T0 + 100 * SEC;
    struct store_investigation inv = {.node = "root",
                                      .problem = "latency",
                                      .strategy = "children",
                                      .origin = "person",
                                      .requested_by = "dqctl diagnose root"};
    CHECK_INT(store_investigation_open(st, &inv, &tr->inv), DQ_OK);
    inv = (struct store_investigation){.node = "stage_2",
                                       .problem = "lost",
                                       .strategy = "bisect",
                                       .origin = "trigger",
                                       .trigger_id = trig,
                                       .opened_ns = T0 + 50 * SEC};
    CHECK_INT(store_investigation_open(st, &inv, &tr->other_inv), DQ_OK);
    CHECK(tr->other_inv > tr->inv);

    struct inv_list l = {0};
    CHECK_INT(store_investigation_get(st, tr->inv, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK(l.last.open);
    CHECK_STR(l.origin, "person");
    CHECK_STR(l.verdict, "(null)");
    CHECK_INT(l.last.opened_ns, T0 + 100 * SEC);
    CHECK_INT(l.last.closed_ns, 0);
    CHECK_INT(l.last.trigger_id, 0);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigation_get(st, tr->other_inv, collect_inv, &l), DQ_OK);
    CHECK_INT(l.last.trigger_id, trig);
    CHECK_INT(l.last.opened_ns, T0 + 50 * SEC);

    /* Bad input. */
    inv = (struct store_investigation){
        .node = "x", .problem = "latency", .strategy = "children", .origin = "robot"};
    int64_t id = 0;
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_EINVAL);
    inv.origin = "trigger";
    inv.trigger_id = 424242;
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_ENOTFOUND);
    inv.node = NULL;
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_EINVAL);
    CHECK_INT(store_investigation_open(st, NULL, &id), DQ_EINVAL);

    /* The hypothesis tree: root → expand (enables stage_1..3) → child → grandchild. */
    clk->now = T0 + 101 * SEC;
    struct store_hypothesis h = {.investigation = tr->inv,
                                 .node = "root",
                                 .kind = "latency",
                                 .action = "root",
                                 .stats_json = "{\"mean_s\":0.12,\"n\":500}"};
    CHECK_INT(store_hypothesis_insert(st, &h, &tr->root), DQ_OK);
    h = (struct store_hypothesis){.investigation = tr->inv,
                                  .parent = tr->root,
                                  .node = "root",
                                  .kind = "latency",
                                  .action = "expand",
                                  .probes_json = "[\"stage_1\",\"stage_2\",\"stage_3\"]"};
    CHECK_INT(store_hypothesis_insert(st, &h, &tr->expand), DQ_OK);
    h = (struct store_hypothesis){.investigation = tr->inv,
                                  .parent = tr->expand,
                                  .node = "stage_2",
                                  .kind = "latency",
                                  .action = "expand",
                                  .probes_json = "[\"worker_1\",\"worker_2\"]",
                                  .stats_json = "{\"share\":0.71}"};
    CHECK_INT(store_hypothesis_insert(st, &h, &tr->child), DQ_OK);
    h = (struct store_hypothesis){.investigation = tr->inv,
                                  .parent = tr->child,
                                  .node = "worker_2",
                                  .kind = "latency",
                                  .action = "verdict",
                                  .verdict = "localized",
                                  .created_ns = T0 + 150 * SEC};
    CHECK_INT(store_hypothesis_insert(st, &h, &tr->grandchild), DQ_OK);
    /* The other investigation also enables stage_2, later. */
    int64_t other_root = 0, other_expand = 0;
    h = (struct store_hypothesis){
        .investigation = tr->other_inv, .node = "stage_2", .kind = "lost", .action = "root"};
    CHECK_INT(store_hypothesis_insert(st, &h, &other_root), DQ_OK);
    h = (struct store_hypothesis){.investigation = tr->other_inv,
                                  .parent = other_root,
                                  .node = "stage_2",
                                  .kind = "lost",
                                  .action = "expand",
                                  .probes_json = "[\"stage_2\"]"};
    CHECK_INT(store_hypothesis_insert(st, &h, &other_expand), DQ_OK);

    struct hyp_list hl = {0};
    CHECK_INT(store_hypotheses_of_investigation(st, tr->inv, collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 4);
    CHECK_INT(hl.ids[0], tr->root);
    CHECK_INT(hl.parents[0], 0);
    CHECK_INT(hl.parents[1], tr->root);
    CHECK_INT(hl.parents[3], tr->child);
    CHECK_STR(hl.probes[0], "[]");        /* default */
    CHECK_STR(hl.verdicts[0], "pending"); /* default */
    CHECK_STR(hl.verdicts[3], "localized");
    CHECK_STR(hl.stats[0], "{\"mean_s\":0.12,\"n\":500}");

    /* why stage_2: the newest hypothesis naming it first (the other investigation's). */
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypotheses_of_probe(st, "stage_2", collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 2);
    CHECK_INT(hl.ids[0], other_expand);
    CHECK_INT(hl.ids[1], tr->expand);
    /* A probe named inside another string does not match: json_each compares values. */
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypotheses_of_probe(st, "worker", collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 0);
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypotheses_of_probe(st, "worker_2", collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 1);
    CHECK_INT(hl.ids[0], tr->child);

    /* The chain from the verdict up to the root. */
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypothesis_chain(st, tr->grandchild, collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 4);
    CHECK_INT(hl.ids[0], tr->grandchild);
    CHECK_INT(hl.ids[1], tr->child);
    CHECK_INT(hl.ids[2], tr->expand);
    CHECK_INT(hl.ids[3], tr->root);
    CHECK_STR(hl.nodes[0], "worker_2");
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypothesis_chain(st, tr->root, collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 1);
    CHECK_INT(store_hypothesis_chain(st, 987654, collect_hyp, &hl), DQ_ENOTFOUND);

    /* Verdicts. */
    clk->now = T0 + 160 * SEC;
    CHECK_INT(store_hypothesis_set_verdict(st, tr->child, "confirmed", NULL), DQ_OK);
    CHECK_INT(store_hypothesis_set_verdict(st, tr->root, "confirmed", "{\"final\":true}"), DQ_OK);
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypothesis_get(st, tr->child, collect_hyp, &hl), DQ_OK);
    CHECK_STR(hl.verdicts[0], "confirmed");
    CHECK_STR(hl.stats[0], "{\"share\":0.71}"); /* kept */
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypothesis_get(st, tr->root, collect_hyp, &hl), DQ_OK);
    CHECK_STR(hl.stats[0], "{\"final\":true}"); /* replaced */
    CHECK_INT(store_hypothesis_set_verdict(st, tr->root, "maybe", NULL), DQ_EINVAL);
    CHECK_INT(store_hypothesis_set_verdict(st, 987654, "refuted", NULL), DQ_ENOTFOUND);
    CHECK_INT(store_hypothesis_get(st, 987654, collect_hyp, &hl), DQ_ENOTFOUND);

    /* Bad hypotheses. */
    h = (struct store_hypothesis){.investigation = tr->inv,
                                  .parent = other_root, /* other investigation's */
                                  .node = "x",
                                  .kind = "latency",
                                  .action = "expand"};
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_EINVAL);
    CHECK_MSG(strstr(dq_last_error(), "not in this investigation") != NULL, "%s", dq_last_error());
    h.parent = 987654;
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_ENOTFOUND);
    h.parent = 0;
    h.investigation = 987654;
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_ENOTFOUND);
    h.investigation = tr->inv;
    h.probes_json = "{\"a\":1}";
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_EINVAL);
    h.probes_json = NULL;
    h.verdict = "sure";
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_EINVAL);
    h.verdict = NULL;
    h.action = NULL;
    CHECK_INT(store_hypothesis_insert(st, &h, &id), DQ_EINVAL);
    memset(&hl, 0, sizeof hl);
    CHECK_INT(store_hypotheses_of_investigation(st, tr->inv, collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 4);

    /* Listing and closing investigations. */
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigations_each(st, true, 0, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 2);
    CHECK_INT(l.ids[0], tr->other_inv); /* newest first */
    clk->now = T0 + 170 * SEC;
    CHECK_INT(store_investigation_close(st, tr->inv, "localized", "worker_2",
                                        "{\"share\":0.71,\"child\":\"worker_2\"}"),
              DQ_OK);
    CHECK_INT(store_investigation_close(st, tr->inv, "diffuse", NULL, NULL), DQ_ESTATE);
    CHECK_INT(store_investigation_close(st, 987654, "diffuse", NULL, NULL), DQ_ENOTFOUND);
    CHECK_INT(store_investigation_close(st, tr->other_inv, "certain", NULL, NULL), DQ_EINVAL);
    CHECK_INT(store_investigation_close(st, tr->other_inv, NULL, NULL, NULL), DQ_EINVAL);
    CHECK_INT(store_investigation_close(st, tr->other_inv, "diffuse", NULL, "{bad"), DQ_EINVAL);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigation_get(st, tr->inv, collect_inv, &l), DQ_OK);
    CHECK(!l.last.open);
    CHECK_STR(l.verdict, "localized");
    CHECK_STR(l.verdict_node, "worker_2");
    CHECK_STR(l.summary, "{\"share\":0.71,\"child\":\"worker_2\"}");
    CHECK_INT(l.last.closed_ns, T0 + 170 * SEC);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigations_each(st, true, 0, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], tr->other_inv);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigations_each(st, false, 1, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigations_each(st, false, 0, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 2);
    CHECK_INT(store_investigation_get(st, 987654, collect_inv, &l), DQ_ENOTFOUND);
}

/* ---- commands ---------------------------------------------------------------------- */

struct cmd_list {
    int count;
    int64_t ids[8];
    char status[8][16];
    char detail[8][64];
    int64_t status_ns[8];
    int64_t hyp[8];
};

static int collect_cmd(void *ctx, const struct store_command *c) {
    struct cmd_list *l = ctx;
    if (l->count < 8) {
        int i = l->count;
        l->ids[i] = c->id;
        snprintf(l->status[i], sizeof l->status[i], "%s", c->status);
        snprintf(l->detail[i], sizeof l->detail[i], "%s", c->detail ? c->detail : "(null)");
        l->status_ns[i] = c->status_ns;
        l->hyp[i] = c->hypothesis;
    }
    l->count++;
    return 0;
}

static void test_commands(struct store *st, struct fake_clock *clk, const struct tree *tr) {
    clk->now = T0 + 200 * SEC;
    int64_t c1 = 0, c2 = 0, c3 = 0;
    struct store_command c = {.wrapper = "v2:shop@host1",
                              .command = "set_timeout",
                              .probe = "stage_1",
                              .args_json = "{\"dmax_ms\":64}",
                              .hypothesis = tr->expand};
    CHECK_INT(store_command_insert(st, &c, &c1), DQ_OK);
    c.probe = "stage_2";
    CHECK_INT(store_command_insert(st, &c, &c2), DQ_OK);
    c = (struct store_command){.wrapper = "127.0.0.1:8081",
                               .command = "clear_timeout",
                               .probe = "stage_3",
                               .status = "not_applied",
                               .detail = "legacy link has no clear_timeout"};
    CHECK_INT(store_command_insert(st, &c, &c3), DQ_OK);
    CHECK(c1 > 0 && c2 > c1 && c3 > c2);

    clk->now = T0 + 201 * SEC;
    CHECK_INT(store_command_ack(st, c1), DQ_OK);
    CHECK_INT(store_command_set_status(st, c2, "failed", "wrapper disconnected"), DQ_OK);

    struct cmd_list l = {0};
    CHECK_INT(store_commands_each(st, NULL, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 3);
    CHECK_STR(l.status[0], "acked");
    CHECK_INT(l.status_ns[0], T0 + 201 * SEC);
    CHECK_STR(l.detail[0], "(null)");
    CHECK_STR(l.status[1], "failed");
    CHECK_STR(l.detail[1], "wrapper disconnected");
    CHECK_STR(l.status[2], "not_applied");
    CHECK_INT(l.status_ns[2], T0 + 200 * SEC); /* status given on insert is stamped then */
    CHECK_INT(l.hyp[0], tr->expand);
    CHECK_INT(l.hyp[2], 0);

    struct store_command_filter f = {.hypothesis = tr->expand};
    memset(&l, 0, sizeof l);
    CHECK_INT(store_commands_each(st, &f, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 2);
    f = (struct store_command_filter){.wrapper = "127.0.0.1:8081"};
    memset(&l, 0, sizeof l);
    CHECK_INT(store_commands_each(st, &f, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], c3);
    f = (struct store_command_filter){.status = "acked"};
    memset(&l, 0, sizeof l);
    CHECK_INT(store_commands_each(st, &f, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], c1);
    f = (struct store_command_filter){.after_id = c1, .limit = 1};
    memset(&l, 0, sizeof l);
    CHECK_INT(store_commands_each(st, &f, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], c2);

    CHECK_INT(store_command_set_status(st, c1, "lost", NULL), DQ_EINVAL);
    CHECK_INT(store_command_set_status(st, c1, NULL, NULL), DQ_EINVAL);
    CHECK_INT(store_command_ack(st, 987654), DQ_ENOTFOUND);
    c = (struct store_command){.wrapper = "w", .command = "start_stub", .hypothesis = 987654};
    CHECK_INT(store_command_insert(st, &c, NULL), DQ_ENOTFOUND);
    c.hypothesis = 0;
    c.args_json = "nope";
    CHECK_INT(store_command_insert(st, &c, NULL), DQ_EINVAL);
    c.args_json = NULL;
    c.wrapper = NULL;
    CHECK_INT(store_command_insert(st, &c, NULL), DQ_EINVAL);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_commands_each(st, NULL, collect_cmd, &l), DQ_OK);
    CHECK_INT(l.count, 3);
}

/* ---- snapshots --------------------------------------------------------------------- */

struct snap_read {
    int snapshots;
    struct store_snapshot snap;
    char probe[32], reason[64];
    int dqs;
    char dq_probe[8][32];
    enum store_kind kinds[8];
    int64_t starts[8];
    struct dq *copies[8]; /* dq_clone of each ΔQ handed out */
};

static int read_snapshot(void *ctx, const struct store_snapshot *s) {
    struct snap_read *r = ctx;
    r->snapshots++;
    r->snap = *s;
    snprintf(r->probe, sizeof r->probe, "%s", s->probe);
    snprintf(r->reason, sizeof r->reason, "%s", s->reason ? s->reason : "(null)");
    return 0;
}

static int read_snapshot_dq(void *ctx, const struct store_snapshot_dq *d) {
    struct snap_read *r = ctx;
    if (r->dqs >= 8) {
        return DQ_EFULL;
    }
    int i = r->dqs++;
    snprintf(r->dq_probe[i], sizeof r->dq_probe[i], "%s", d->probe);
    r->kinds[i] = d->kind;
    r->starts[i] = d->start_ns;
    return dq_clone(d->dq, &r->copies[i]);
}

static void snap_read_release(struct snap_read *r) {
    for (int i = 0; i < 8; i++) {
        dq_destroy(r->copies[i]);
        r->copies[i] = NULL;
    }
}

static int same_dq(const struct dq *a, const struct dq *b) {
    if (!a || !b || a->k != b->k || a->n != b->n || a->n_ok != b->n_ok || a->n_fa != b->n_fa ||
        a->n_to != b->n_to || a->n_out != b->n_out) {
        return 0;
    }
    return memcmp(a->pdf, b->pdf, sizeof(double) * (size_t)a->n) == 0; /* bit for bit */
}

static void test_snapshots(struct store *st, struct fake_clock *clk, const struct tree *tr) {
    clk->now = T0 + 300 * SEC;
    struct dq *obs = NULL, *calc = NULL, *point = NULL;
    /* An observed ΔQ over 4096 bins from 970 exponential delays (mean 27 ms) plus 20
       failures and 10 timeouts: masses like 3/1000 are awkward doubles, and the empty
       tail bins are trimmed when stored. */
    static uint64_t counts[4096];
    uint32_t x = 2024;
    for (int i = 0; i < 970; i++) {
        x = x * 1103515245u + 12345u;
        double u = ((double)(x >> 8) + 0.5) / 16777216.0;
        double bin = -log(u) / 37.0 / 0.00025; /* k = -2: bins of 0.25 ms */
        counts[bin < 4095 ? (int)bin : 4095]++;
    }
    CHECK_INT(dq_from_counts(-2, 4096, counts, 20, 10, 0, &obs), DQ_OK);
    CHECK_INT(dq_uniform(0, 100, 0.01, 0.05, &calc), DQ_OK);
    CHECK_INT(dq_wait(0, 1024, 0.003, &point), DQ_OK); /* one non-zero bin, 1021 zeros after */
    if (!obs || !calc || !point) {
        dq_destroy(obs);
        dq_destroy(calc);
        dq_destroy(point);
        return;
    }
    CHECK_INT(obs->n_ok, 970);
    CHECK_INT(obs->n_fa, 20);
    CHECK_NEAR(dq_lost(obs), 0.03, 1e-12);

    int64_t sid = 0, sid2 = 0;
    struct store_snapshot s = {.trigger_id = 0,
                               .investigation = tr->other_inv,
                               .probe = "stage_2",
                               .reason = "lost > 0.1 for 1 window",
                               .time_ns = T0 + 290 * SEC,
                               .windows = 2};
    CHECK_INT(store_snapshot_insert(st, &s, &sid), DQ_OK);
    CHECK_INT(store_snapshot_add_dq(st, sid, "stage_2", STORE_OBSERVED, T0 + 288 * SEC,
                                    T0 + 289 * SEC, obs),
              DQ_OK);
    CHECK_INT(store_snapshot_add_dq(st, sid, "stage_2", STORE_CALCULATED, T0 + 288 * SEC,
                                    T0 + 289 * SEC, calc),
              DQ_OK);
    CHECK_INT(store_snapshot_add_dq(st, sid, "stage_1", STORE_OBSERVED, T0 + 288 * SEC,
                                    T0 + 289 * SEC, calc),
              DQ_OK);
    /* Same key again: replaced, not duplicated. */
    CHECK_INT(store_snapshot_add_dq(st, sid, "stage_1", STORE_OBSERVED, T0 + 288 * SEC,
                                    T0 + 289 * SEC, point),
              DQ_OK);

    struct snap_read r = {0};
    CHECK_INT(store_snapshot_get(st, sid, read_snapshot, read_snapshot_dq, &r), DQ_OK);
    CHECK_INT(r.snapshots, 1);
    CHECK_INT(r.snap.id, sid);
    CHECK_STR(r.probe, "stage_2");
    CHECK_STR(r.reason, "lost > 0.1 for 1 window");
    CHECK_INT(r.snap.investigation, tr->other_inv);
    CHECK_INT(r.snap.trigger_id, 0);
    CHECK_INT(r.snap.time_ns, T0 + 290 * SEC);
    CHECK_INT(r.snap.windows, 2);
    CHECK(!r.snap.complete);
    CHECK_INT(r.snap.created_ns, T0 + 300 * SEC);
    CHECK_INT(r.snap.dq_count, 3);
    CHECK_INT(r.dqs, 3);
    /* Ordered by probe, kind, start. */
    CHECK_STR(r.dq_probe[0], "stage_1");
    CHECK_STR(r.dq_probe[1], "stage_2");
    CHECK_INT(r.kinds[1], STORE_CALCULATED);
    CHECK_INT(r.kinds[2], STORE_OBSERVED);
    CHECK_INT(r.starts[2], T0 + 288 * SEC);
    CHECK_MSG(same_dq(r.copies[0], point), "the one-bin ΔQ round-trips");
    CHECK_MSG(same_dq(r.copies[1], calc), "the uniform ΔQ round-trips");
    CHECK_MSG(same_dq(r.copies[2], obs), "the 4096-bin ΔQ round-trips bit for bit");
    if (r.copies[2]) {
        CHECK_NEAR(dq_tangible(r.copies[2]), dq_tangible(obs), 0);
        CHECK_NEAR(r.copies[2]->width, obs->width, 0);
    }
    snap_read_release(&r);

    /* Completing closes it to further ΔQs. */
    clk->now = T0 + 310 * SEC;
    CHECK_INT(store_snapshot_complete(st, sid), DQ_OK);
    CHECK_INT(store_snapshot_complete(st, sid), DQ_ESTATE);
    CHECK_INT(store_snapshot_add_dq(st, sid, "stage_3", STORE_OBSERVED, T0, T0 + SEC, calc),
              DQ_ESTATE);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_snapshot_get(st, sid, read_snapshot, NULL, &r), DQ_OK);
    CHECK(r.snap.complete);
    CHECK_INT(r.snap.completed_ns, T0 + 310 * SEC);
    CHECK_INT(r.dqs, 0);

    /* A second snapshot; listing is newest first. */
    s = (struct store_snapshot){.probe = "root", .windows = 1};
    CHECK_INT(store_snapshot_insert(st, &s, &sid2), DQ_OK);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_snapshots_each(st, 0, read_snapshot, &r), DQ_OK);
    CHECK_INT(r.snapshots, 2);
    CHECK_INT(r.snap.id, sid); /* the last one visited is the oldest */
    memset(&r, 0, sizeof r);
    CHECK_INT(store_snapshots_each(st, 1, read_snapshot, &r), DQ_OK);
    CHECK_INT(r.snapshots, 1);
    CHECK_INT(r.snap.id, sid2);
    CHECK_INT(r.snap.time_ns, T0 + 310 * SEC); /* time 0 = now */

    /* Bad input. */
    CHECK_INT(store_snapshot_add_dq(st, 987654, "x", STORE_OBSERVED, T0, T0, calc), DQ_ENOTFOUND);
    CHECK_INT(store_snapshot_add_dq(st, sid2, "x", STORE_OBSERVED, T0 + 1, T0, calc), DQ_EINVAL);
    CHECK_INT(store_snapshot_add_dq(st, sid2, "x", (enum store_kind)5, T0, T0, calc), DQ_EINVAL);
    CHECK_INT(store_snapshot_add_dq(st, sid2, "x", STORE_OBSERVED, T0, T0, NULL), DQ_EINVAL);
    struct dq bad = *calc;
    bad.k = 11;
    CHECK_INT(store_snapshot_add_dq(st, sid2, "x", STORE_OBSERVED, T0, T0, &bad), DQ_ERANGE);
    double nan_pdf[4] = {0.1, NAN, 0, 0};
    bad = (struct dq){.k = 0, .n = 4, .width = 0.001, .pdf = nan_pdf};
    CHECK_INT(store_snapshot_add_dq(st, sid2, "x", STORE_OBSERVED, T0, T0, &bad), DQ_EINVAL);
    CHECK_INT(store_snapshot_get(st, 987654, read_snapshot, read_snapshot_dq, &r), DQ_ENOTFOUND);
    CHECK_INT(store_snapshot_complete(st, 987654), DQ_ENOTFOUND);
    s.windows = 0;
    CHECK_INT(store_snapshot_insert(st, &s, &sid2), DQ_ERANGE);
    s.windows = 1;
    s.trigger_id = 987654;
    CHECK_INT(store_snapshot_insert(st, &s, &sid2), DQ_ENOTFOUND);
    memset(&r, 0, sizeof r);
    CHECK_INT(store_snapshot_get(st, sid2, read_snapshot, read_snapshot_dq, &r), DQ_OK);
    CHECK_INT(r.dqs, 0);
    CHECK_INT(r.snap.dq_count, 0);

    dq_destroy(obs);
    dq_destroy(calc);
    dq_destroy(point);
}

/* ---- alongside the version-1 tables -------------------------------------------------- */

/* The log lives next to windows and events in one file; this also gives docs/store.md a
   database with every table filled (run with DQD_KEEP_TMP=1 to keep it). */
static void test_with_windows(struct store *st, struct fake_clock *clk) {
    const char *probes[] = {"root", "stage_2"};
    CHECK_INT(store_begin(st), DQ_OK);
    for (int i = 0; i < 3; i++) {
        for (int p = 0; p < 2; p++) {
            struct store_window w = {.probe = probes[p],
                                     .kind = STORE_OBSERVED,
                                     .start_ns = T0 + (287 + i) * SEC,
                                     .end_ns = T0 + (288 + i) * SEC,
                                     .n = 500 + (uint64_t)(100 * i),
                                     .n_ok = 480 + (uint64_t)(100 * i),
                                     .n_fa = 15,
                                     .n_to = 5,
                                     .mean = 0.012 + 0.004 * i + 0.001 * p,
                                     .p50 = 0.010 + 0.003 * i,
                                     .p95 = 0.031 + 0.010 * i,
                                     .p99 = i == 2 ? NAN : 0.052 + 0.010 * i,
                                     .lost = 20.0 / (500.0 + 100.0 * i)};
            CHECK_INT(store_window_put(st, &w), DQ_OK);
            w.kind = STORE_CALCULATED;
            w.n = w.n_ok = w.n_fa = w.n_to = 0;
            w.mean -= 0.002;
            w.lost = 0.01;
            CHECK_INT(store_window_put(st, &w), DQ_OK);
        }
    }
    clk->now = T0 + 287 * SEC;
    struct store_event e = {.kind = "auto_range",
                            .probe = "root",
                            .detail_json = "{\"old_dmax_ms\":1024,\"new_dmax_ms\":128,"
                                           "\"p999_ms\":51.2}"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);
    e = (struct store_event){.kind = "trigger_fired",
                             .probe = "stage_2",
                             .detail_json = "{\"kind\":\"lost\",\"lost\":0.14,\"threshold\":0.1}"};
    CHECK_INT(store_event_add(st, &e, NULL), DQ_OK);
    CHECK_INT(
        store_probe_set_qta(st, "root", "{\"points\":[[0.5,0.02],[0.95,0.05]],\"max_lost\":0.05}"),
        DQ_OK);
    CHECK_INT(store_probe_set_always_on(st, "root", true), DQ_OK);
    CHECK_INT(store_commit(st), DQ_OK);
    struct store_window latest;
    CHECK_INT(store_window_latest(st, "stage_2", STORE_CALCULATED, &latest), DQ_OK);
    CHECK_INT(latest.start_ns, T0 + 289 * SEC);
    CHECK(isnan(latest.p99));
}

/* ---- upgrade and restart ----------------------------------------------------------- */

/* A database made by version-1 code, with data, gains the log tables and keeps its data. */
static void test_upgrade_from_v1(void) {
    char path[512];
    tmp_path(path, sizeof path, "v1.db");
    struct store *st = NULL;
    struct store_options o = {.target_version = 1};
    CHECK_INT(store_open_ex(path, &o, &st), DQ_OK);
    if (!st) {
        return;
    }
    CHECK_INT(add_probe(st, "old"), DQ_OK);
    /* The version-2 tables do not exist yet. */
    struct store_investigation inv = {
        .node = "old", .problem = "latency", .strategy = "children", .origin = "person"};
    int64_t id = 0;
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_ESTORE);
    store_close(st);
    /* a window as version 1 wrote it (this code writes the columns of version 6) */
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO windows (probe, kind, start_ns, end_ns, n) VALUES "
             "('old', 'observed', %lld, %lld, 7)",
             (long long)T0, (long long)(T0 + SEC));
    CHECK_INT(sqlite3_cli(path, sql, NULL, 0), 0);

    st = open_ok(path);
    int v = 0;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    struct store_window got;
    CHECK_INT(store_window_latest(st, "old", STORE_OBSERVED, &got), DQ_OK);
    CHECK_INT(got.n, 7);
    CHECK(!got.partial);
    CHECK_INT(got.run_ns, 0);
    CHECK_INT(store_investigation_open(st, &inv, &id), DQ_OK);
    store_close(st);
}

static int last_probe_cb(void *ctx, const struct store_probe *p) {
    struct store_probe *out = ctx;
    out->last_instance_ns = p->last_instance_ns;
    out->qta_json = NULL;
    static char origin[256];
    snprintf(origin, sizeof origin, "%s", p->last_origin ? p->last_origin : "");
    out->last_origin = origin;
    return 0;
}

/*
 * Version 6 (issue 25): a version-5 file with windows and a not_applied command keeps them;
 * then windows have partial and run_ns (two runs of one window keep a row each, one run
 * rewriting its window replaces it), probes their last instance and origin, commands the
 * status ambiguous; the windows_v view shows partial.
 */
static void test_upgrade_from_v5(void) {
    char path[512];
    tmp_path(path, sizeof path, "v5.db");
    struct store *st = NULL;
    struct store_options o = {.target_version = 5};
    CHECK_INT(store_open_ex(path, &o, &st), DQ_OK);
    if (!st) {
        return;
    }
    CHECK_INT(add_probe(st, "pay"), DQ_OK);
    struct store_command cmd = {.wrapper = "3 127.0.0.1:5555",
                                .command = "set_timeout",
                                .probe = "pay",
                                .status = "not_applied",
                                .detail = "a legacy connection"};
    int64_t row = 0;
    CHECK_INT(store_command_insert(st, &cmd, &row), DQ_OK);
    cmd.status = "ambiguous";
    CHECK_INT(store_command_insert(st, &cmd, &row), DQ_EINVAL); /* not a status yet */
    store_close(st);
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO windows (probe, kind, start_ns, end_ns, n) VALUES "
             "('pay', 'observed', %lld, %lld, 9)",
             (long long)T0, (long long)(T0 + SEC));
    CHECK_INT(sqlite3_cli(path, sql, NULL, 0), 0);

    st = open_ok(path);
    if (!st) {
        return;
    }
    int v = 0;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest()); /* 6, then 7 */
    CHECK_INT(store_command_insert(st, &cmd, &row), DQ_OK);
    cmd.status = "maybe";
    CHECK_INT(store_command_insert(st, &cmd, &row), DQ_EINVAL);
    /* the old row stays; a partial row of a run that stopped in the same window joins it */
    struct store_window w = {.probe = "pay",
                             .kind = STORE_OBSERVED,
                             .start_ns = T0,
                             .end_ns = T0 + SEC / 2,
                             .n = 4,
                             .n_ok = 4,
                             .partial = true,
                             .run_ns = T0 - 60 * SEC};
    w.mean = w.p50 = w.p95 = w.p99 = w.lost = NAN;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    w.n = w.n_ok = 5; /* the same run writing it again: replaced */
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    w.run_ns = T0 + SEC / 2; /* the next run, which started in that window */
    w.start_ns = T0 + SEC / 2;
    w.end_ns = T0 + SEC;
    w.n = w.n_ok = 2;
    CHECK_INT(store_window_put(st, &w), DQ_OK);
    char out[64] = "";
    CHECK_INT(sqlite3_cli(path,
                          "SELECT sum(n) || ' ' || sum(partial) || ' ' || count(*) FROM windows_v "
                          "WHERE probe = 'pay'",
                          out, sizeof out),
              0);
    CHECK_STR(out, "16 2 3");
    /* where the probe was last heard from */
    struct store_probe got = {0};
    CHECK_INT(store_probe_set_last(st, "pay", T0 + 7, "{\"label\":\"3 127.0.0.1:5555\"}"), DQ_OK);
    CHECK_INT(store_probe_get(st, "pay", last_probe_cb, &got), DQ_OK);
    CHECK_INT(got.last_instance_ns, T0 + 7);
    CHECK_STR(got.last_origin, "{\"label\":\"3 127.0.0.1:5555\"}");
    CHECK_INT(store_probe_set_last(st, "pay", 0, NULL), DQ_OK); /* leaves both */
    CHECK_INT(store_probe_get(st, "pay", last_probe_cb, &got), DQ_OK);
    CHECK_INT(got.last_instance_ns, T0 + 7);
    CHECK_INT(store_probe_set_last(st, "pay", 1, "{not json"), DQ_EINVAL);
    CHECK_INT(store_probe_set_last(st, "nosuch", 1, NULL), DQ_ENOTFOUND);
    /* the newest event of a kind, and the newest record */
    int64_t id = 0, at = 0;
    CHECK_INT(store_event_last(st, "dqd_stopped", &id, &at), DQ_ENOTFOUND);
    struct store_event ev = {.kind = "dqd_stopped", .time_ns = T0 + 3 * SEC};
    CHECK_INT(store_event_add(st, &ev, NULL), DQ_OK);
    ev.time_ns = T0 + 4 * SEC;
    int64_t second = 0;
    CHECK_INT(store_event_add(st, &ev, &second), DQ_OK);
    CHECK_INT(store_event_last(st, "dqd_stopped", &id, &at), DQ_OK);
    CHECK_INT(id, second);
    CHECK_INT(at, T0 + 4 * SEC);
    CHECK_INT(store_last_record_ns(st, &at), DQ_OK);
    CHECK(at >= T0 + 4 * SEC);
    store_close(st);
}

static int quiet_probe_cb(void *ctx, const struct store_probe *p) {
    struct {
        int servers;
        char quiet[64];
    } *q = ctx;
    q->servers = p->servers;
    snprintf(q->quiet, sizeof q->quiet, "%s", p->quiet_json ? p->quiet_json : "");
    return 0;
}

/* Version 3 widens the verdicts: a version-2 file with investigations keeps them and then
 * takes `healthy` (investigations, hypotheses) and `aborted` (hypotheses); nothing else. */
static void test_upgrade_from_v2(void) {
    char path[512];
    tmp_path(path, sizeof path, "v2.db");
    struct store *st = NULL;
    struct store_options o = {.target_version = 2};
    CHECK_INT(store_open_ex(path, &o, &st), DQ_OK);
    if (!st) {
        return;
    }
    struct store_investigation inv = {
        .node = "root", .problem = "latency", .strategy = "children", .origin = "person"};
    int64_t old = 0, fresh = 0, hyp = 0;
    CHECK_INT(store_investigation_open(st, &inv, &old), DQ_OK);
    CHECK_INT(store_investigation_close(st, old, "localized", "b", NULL), DQ_OK);
    CHECK_INT(store_investigation_open(st, &inv, &fresh), DQ_OK);
    CHECK_INT(store_investigation_close(st, fresh, "healthy", NULL, NULL), DQ_EINVAL);
    store_close(st);

    st = open_ok(path);
    if (!st) {
        return;
    }
    int v = 0;
    CHECK_INT(store_schema_version(st, &v), DQ_OK);
    CHECK_INT(v, store_schema_latest());
    struct inv_list l = {0};
    CHECK_INT(store_investigation_get(st, old, collect_inv, &l), DQ_OK);
    CHECK_STR(l.verdict, "localized");
    CHECK_INT(store_investigation_close(st, fresh, "healthy", NULL, NULL), DQ_OK);
    struct store_hypothesis h = {.investigation = fresh,
                                 .node = "root",
                                 .kind = "latency",
                                 .action = "verdict",
                                 .verdict = "healthy"};
    CHECK_INT(store_hypothesis_insert(st, &h, &hyp), DQ_OK);
    CHECK_INT(store_hypothesis_set_verdict(st, hyp, "aborted", NULL), DQ_OK);
    CHECK_INT(store_hypothesis_set_verdict(st, hyp, "maybe", NULL), DQ_EINVAL);
    int64_t third = 0;
    CHECK_INT(store_investigation_open(st, &inv, &third), DQ_OK);
    CHECK_INT(store_investigation_set_problem(st, third, "variance"), DQ_OK);
    CHECK_INT(store_investigation_get(st, third, collect_inv, &l), DQ_OK);
    CHECK_STR(l.problem, "variance");
    CHECK_INT(store_investigation_set_problem(st, third, ""), DQ_EINVAL);
    CHECK_INT(store_investigation_set_problem(st, 99999, "lost"), DQ_ENOTFOUND);
    CHECK_INT(store_investigation_close(st, third, "fine", NULL, NULL), DQ_EINVAL);
    /* version 4: the verdict overload, a probe's servers and quiet windows */
    CHECK_INT(store_investigation_close(st, third, "overload", "db", NULL), DQ_OK);
    CHECK_INT(store_hypothesis_set_verdict(st, hyp, "overload", NULL), DQ_OK);
    CHECK_INT(store_probe_ensure(st, "db"), DQ_OK);
    CHECK_INT(store_probe_set_servers(st, "db", 2), DQ_OK);
    CHECK_INT(store_probe_set_servers(st, "db", -1), DQ_ERANGE);
    CHECK_INT(store_probe_set_servers(st, "nosuch", 2), DQ_ENOTFOUND);
    CHECK_INT(store_probe_set_quiet(st, "db", "[{\"wid\":3,\"rate\":12.5}]"), DQ_OK);
    CHECK_INT(store_probe_set_quiet(st, "db", "[not json"), DQ_EINVAL);
    struct quiet_probe {
        int servers;
        char quiet[64];
    } qp = {0};
    CHECK_INT(store_probe_get(st, "db", quiet_probe_cb, &qp), DQ_OK);
    CHECK_INT(qp.servers, 2);
    CHECK_STR(qp.quiet, "[{\"wid\":3,\"rate\":12.5}]");
    CHECK_INT(store_probe_set_servers(st, "db", 0), DQ_OK);
    CHECK_INT(store_probe_get(st, "db", quiet_probe_cb, &qp), DQ_OK);
    CHECK_INT(qp.servers, 0);
    store_close(st);
}

/* After a restart the daemon finds open investigations, their trees and trigger state. */
static void test_restart(const char *path, const struct tree *tr) {
    struct store *st = open_ok(path);
    if (!st) {
        return;
    }
    struct inv_list l = {0};
    CHECK_INT(store_investigations_each(st, true, 0, collect_inv, &l), DQ_OK);
    CHECK_INT(l.count, 1);
    CHECK_INT(l.ids[0], tr->other_inv);
    struct hyp_list hl = {0};
    CHECK_INT(store_hypotheses_of_investigation(st, tr->inv, collect_hyp, &hl), DQ_OK);
    CHECK_INT(hl.count, 4);
    struct trig_copy c = {0};
    CHECK_INT(store_triggers_each(st, "root", copy_trigger, &c), DQ_OK);
    CHECK_INT(c.count, 1);
    CHECK(c.t.fired && c.t.bad == 3);
    /* Deleting a trigger keeps the investigations it started, unlinked. */
    memset(&c, 0, sizeof c);
    CHECK_INT(store_triggers_each(st, "stage_2", copy_trigger, &c), DQ_OK);
    CHECK_INT(store_trigger_delete(st, c.t.id), DQ_OK);
    memset(&l, 0, sizeof l);
    CHECK_INT(store_investigation_get(st, tr->other_inv, collect_inv, &l), DQ_OK);
    CHECK_INT(l.last.trigger_id, 0);
    store_close(st);
}

/* One log's life on one file, each step on what the steps before it left (the tree's ids,
 * the trigger state): triggers, investigations, commands, snapshots, windows, a restart. */
static void test_lifecycle(void) {
    char path[512];
    tmp_path(path, sizeof path, "log.db");
    struct store *st = open_ok(path);
    struct tree tr = {0};
    if (st) {
        struct fake_clock clk = {T0};
        store_set_clock(st, fake_now, &clk);
        test_triggers(st, &clk);
        test_investigations(st, &clk, &tr);
        test_commands(st, &clk, &tr);
        test_snapshots(st, &clk, &tr);
        test_with_windows(st, &clk);
        store_close(st);
        test_restart(path, &tr);
    }
}

static int setup(void) {
    return tmp_setup("storelog");
}

static void teardown(void) {
    dq_engine_cleanup();
    if (getenv("DQD_KEEP_TMP")) {
        printf("kept %s\n", tmp_dir);
    } else {
        tmp_cleanup();
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(lifecycle),
    CHECK_CASE(upgrade_from_v1),
    CHECK_CASE(upgrade_from_v2),
    CHECK_CASE(upgrade_from_v5),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
