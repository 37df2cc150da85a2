/*
 * test_dqctl_infer.c: `dqctl diagram --infer`'s pure part (controller/cli/dqctl_infer.c) on
 * span lists built here: nesting (a child with children of its own is s:NAME), stages (a
 * fan-out then a step), a race whose loser outlives the parent, what it cannot settle
 * (the order varies, untraced time, instances without children, few instances), the
 * choice's weights, several roots, and malformed lists.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dqctl_infer.h"

static json_t *list;
static int next_id;

/* Adds a span; returns its id (hex) in a static ring of buffers. */
static const char *add(const char *trace, const char *parent, const char *probe, long long start,
                       long long end) {
    static char ids[64][17];
    char *id = ids[next_id % 64];
    snprintf(id, 17, "%016x", ++next_id);
    json_array_append_new(list,
                          json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "trace_id", trace, "span_id", id,
                                    "parent_id", parent ? parent : "", "probe", probe, "start_ns",
                                    (json_int_t)start, "end_ns", (json_int_t)end));
    return id;
}

static char *infer(void) {
    char err[512];
    char *text = dqctl_infer(list, NULL, err, sizeof err);
    if (!text) {
        fprintf(stderr, "infer: %s\n", err);
    }
    return text;
}

static int has_line(const char *text, const char *line) {
    const char *p = text;
    size_t n = strlen(line);
    while ((p = strstr(p, line)) != NULL) {
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) {
            return 1;
        }
        p += n;
    }
    return 0;
}

static const long long ms = 1000000;

/* A new empty span list; span ids start again from 1. */
static void new_list(void) {
    list = json_array();
    next_id = 0;
}

/* nesting and stages: root = a:(x, y) then z, where z has children q -> r */
static void test_nesting(void) {
    new_list();
    for (int i = 0; i < 20; i++) {
        char t[33];
        snprintf(t, sizeof t, "%032x", i + 1);
        long long t0 = 1000 * ms * i;
        const char *root = add(t, NULL, "root", t0, t0 + 30 * ms);
        add(t, root, "x", t0 + ms, t0 + 10 * ms);
        add(t, root, "y", t0 + ms, t0 + (i % 2 ? 12 : 8) * ms);
        const char *z = add(t, root, "z", t0 + 13 * ms, t0 + 29 * ms);
        add(t, z, "q", t0 + 14 * ms, t0 + 20 * ms);
        add(t, z, "r", t0 + 21 * ms, t0 + 28 * ms);
    }
    char *text = infer();
    CHECK(text && has_line(text, "root = a:root_all(x, y) -> s:z;"));
    CHECK(text && has_line(text, "z = q -> r;"));
    CHECK(text && has_line(text, "system = s:root;"));
    free(text);
    json_decref(list);
}

/* a race whose loser outlives its parent; order varies; untraced time; leaves */
static void test_race_and_unsettled(void) {
    new_list();
    char *text;
    for (int i = 0; i < 20; i++) {
        char t[33];
        snprintf(t, sizeof t, "%032x", 100 + i);
        long long t0 = 1000 * ms * i;
        const char *r = add(t, NULL, "race", t0, t0 + 5 * ms);
        add(t, r, "fast", t0 + ms / 10, t0 + 5 * ms - ms / 10);
        add(t, r, "slow", t0 + ms / 10, t0 + 40 * ms); /* cancelled after the parent ended */
        const char *s = add(t, NULL, "seq", t0, t0 + 100 * ms);
        if (i % 3 == 0) { /* b before a in a third of the instances */
            add(t, s, "b", t0 + ms, t0 + 2 * ms);
            add(t, s, "a", t0 + 3 * ms, t0 + 4 * ms);
        } else {
            add(t, s, "a", t0 + ms, t0 + 2 * ms);
            add(t, s, "b", t0 + 3 * ms, t0 + 4 * ms);
        }
        add(t, NULL, "seq", t0, t0 + ms); /* an instance without children */
    }
    text = infer();
    CHECK(text && has_line(text, "race = f:race_first(fast, slow);"));
    CHECK(text && has_line(text, "seq = a -> b;"));
    CHECK(text && strstr(text, "order or overlap varies (a, b): the most frequent arrangement "
                               "(13 of 20)"));
    CHECK(text && strstr(text, "% of seq's time is in no child span"));
    CHECK(text && strstr(text, "20 without (not in the model"));
    CHECK(text && strstr(text, "2 roots"));
    CHECK(text && !strstr(text, "\nsystem = "));
    free(text);
    json_decref(list);
}

/* a choice with weights, and few instances */
static void test_choice(void) {
    new_list();
    char *text;
    for (int i = 0; i < 8; i++) {
        char t[33];
        snprintf(t, sizeof t, "%032x", 200 + i);
        const char *p = add(t, NULL, "pay", 0, 10 * ms);
        add(t, p, i < 6 ? "card" : "voucher", ms, 9 * ms);
    }
    text = infer();
    CHECK(text && has_line(text, "pay = p:pay_choice[0.750, 0.250](card, voucher);"));
    CHECK(text && strstr(text, "only 8 instances seen"));
    free(text);
    json_decref(list);
}

/* nothing to infer; malformed lists */
static void test_nothing_and_malformed(void) {
    char err[512];
    new_list();
    add("t", NULL, "alone", 0, 1);
    CHECK(dqctl_infer(list, "svc", err, sizeof err) == NULL && strstr(err, "nothing to infer") &&
          strstr(err, "\"svc\""));
    json_array_append_new(list, json_pack("{s:s}", "trace_id", "x"));
    CHECK(dqctl_infer(list, NULL, err, sizeof err) == NULL && strstr(err, "span 1 lacks"));
    json_decref(list);
    json_t *obj = json_object();
    CHECK(dqctl_infer(obj, NULL, err, sizeof err) == NULL && strstr(err, "not a list"));
    json_decref(obj);
}

static const struct check_case cases[] = {
    CHECK_CASE(nesting),
    CHECK_CASE(race_and_unsettled),
    CHECK_CASE(choice),
    CHECK_CASE(nothing_and_malformed),
};

CHECK_MAIN(cases)
