/*
 * test_search_policy.c: the rules around the strategies' verdicts: confirmation, the
 * fresh-window check, the no-reference fallback (search_contributor), what a person's
 * investigation follows once checked (search_followed), readiness to characterise and
 * whether a localized culprit still holds.
 */
#include "check.h"

#include "search_test_util.h"

static struct search_params P;
static struct search_result LAT, OUT; /* large: off the stack */

static void test_confirm(void) {
    struct search_confirm c;
    memset(&c, 0, sizeof c);
    CHECK_INT(search_confirm_step(&c, SEARCH_LOCALIZED, 2, 1, 10), 0);
    CHECK_INT(c.count, 1);
    CHECK_INT(c.from, 10);
    CHECK_INT(search_confirm_step(&c, SEARCH_LOCALIZED, 2, 1, 11), 1); /* held twice */
    CHECK_INT(c.from, 10);
    /* another child starts over, from this evaluation */
    CHECK_INT(search_confirm_step(&c, SEARCH_LOCALIZED, 3, 1, 12), 0);
    CHECK_INT(c.from, 12);
    CHECK_INT(search_confirm_step(&c, SEARCH_DIFFUSE, -1, 1, 13), 0); /* another verdict */
    CHECK_INT(search_confirm_step(&c, SEARCH_DIFFUSE, -1, 1, 14), 1);
    /* a person's action brings no window: nothing confirmed, nothing counted */
    search_confirm_reset(&c);
    CHECK_INT(search_confirm_step(&c, SEARCH_LOCALIZED, 1, 0, 20), 0);
    CHECK_INT(c.count, 0);
    /* out of time needs no confirmation */
    CHECK_INT(search_confirm_step(&c, SEARCH_INCONCLUSIVE, -1, 0, 20), 1);
    /* a reset forgets */
    search_confirm_step(&c, SEARCH_LOCALIZED, 1, 1, 21);
    search_confirm_reset(&c);
    CHECK_INT(search_confirm_step(&c, SEARCH_LOCALIZED, 1, 1, 22), 0);
    CHECK_INT(SEARCH_CONFIRM, 2);
}

static void test_fresh(void) {
    struct search_params fp;
    search_fresh_params(&P, &fp);
    CHECK_INT(fp.min_windows, P.diffuse_min_windows);
    CHECK_INT(fp.min_instances, P.min_instances);
    struct search_params big = P;
    big.min_windows = 9;
    search_fresh_params(&big, &fp);
    CHECK_INT(fp.min_windows, 9);
    CHECK_INT(search_fresh_judge(SEARCH_LOCALIZED, 2, SEARCH_NEED_SAMPLES, -1), SEARCH_FRESH_WAIT);
    CHECK_INT(search_fresh_judge(SEARCH_LOCALIZED, 2, SEARCH_LOCALIZED, 2), SEARCH_FRESH_AGREES);
    CHECK_INT(search_fresh_judge(SEARCH_LOCALIZED, 2, SEARCH_LOCALIZED, 1), SEARCH_FRESH_DISAGREES);
    CHECK_INT(search_fresh_judge(SEARCH_LOCALIZED, 2, SEARCH_DIFFUSE, -1), SEARCH_FRESH_DISAGREES);
    CHECK_INT(search_fresh_needed(SEARCH_LOCALIZED, SEARCH_CHILDREN, 0), 1);
    CHECK_INT(search_fresh_needed(SEARCH_INCONCLUSIVE, SEARCH_CHILDREN, 0), 0);
    CHECK_INT(search_fresh_needed(SEARCH_LOCALIZED, SEARCH_BISECT, 0), 0);
    CHECK_INT(search_fresh_needed(SEARCH_LOCALIZED, SEARCH_CHILDREN, 1), 0);
}

/* Runs search_contributor on a 3-stage sequence; returns its verdict. */
static int contributor_on(const struct sim *s, enum search_problem *followed,
                          struct sim_result *res) {
    sim_run(s, 7, 8, 200, 0, res);
    struct search_input in = sim_input(s, res, SEARCH_LATENCY, "x");
    CHECK_INT(search_evaluate(&in, &P, &LAT), DQ_OK);
    return search_contributor(&in, &P, &LAT, &OUT, followed);
}

static void test_contributor(void) {
    struct sim_result *res = calloc(1, sizeof *res);
    enum search_problem followed;
    /* one stage holds most of the time: followed (latency) */
    struct sim s = {.kind = DQ_NODE_SEQUENCE, .n = 3};
    s.st[0] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0002, 0, 0, 0, 0};
    s.st[1] = (struct sim_stage){SIM_NORMAL, 0.020, 0.0002, 0, 0, 0, 0};
    s.st[2] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0002, 0, 0, 0, 0};
    CHECK_INT(contributor_on(&s, &followed, res), SEARCH_LOCALIZED);
    CHECK_INT(OUT.child, 1);
    CHECK_INT(followed, SEARCH_LATENCY);
    sim_free(res);
    /* balanced times, one erratic stage: the spread speaks */
    s.st[1] = (struct sim_stage){SIM_NORMAL, 0.001, 0.0002, 0, 0.1, 0.010, 0}; /* mean 2 ms */
    CHECK_INT(contributor_on(&s, &followed, res), SEARCH_LOCALIZED);
    CHECK_INT(OUT.child, 1);
    CHECK_INT(followed, SEARCH_VARIANCE);
    sim_free(res);
    /* balanced in all: healthy, and where the time goes */
    s.st[1] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0002, 0, 0, 0, 0};
    CHECK_INT(contributor_on(&s, &followed, res), SEARCH_HEALTHY);
    CHECK(strstr(OUT.reason, "healthy at x: nothing to judge it against") != NULL);
    CHECK(strstr(OUT.reason, "where the time goes: s") != NULL);
    CHECK_INT(followed, SEARCH_LATENCY);
    sim_free(res);
    /* the node loses instances at one stage: its lost mass, more concentrated, wins */
    s.st[2].p_fail = 0.2;
    CHECK_INT(contributor_on(&s, &followed, res), SEARCH_LOCALIZED);
    CHECK_INT(OUT.child, 2);
    CHECK_INT(followed, SEARCH_LOST);
    sim_free(res);
    free(res);
}

static void test_where_it_goes(void) {
    struct search_child kids[3];
    memset(kids, 0, sizeof kids);
    kids[0].name = "a";
    kids[1].name = "b";
    kids[2].name = "c";
    struct search_input in = {.name = "x", .children = kids, .n_children = 3};
    static struct search_attribution a;
    memset(&a, 0, sizeof a);
    double v[3] = {1, 3, 2};
    for (int i = 0; i < 3; i++) {
        a.c[i].included = 1;
        a.c[i].value = v[i];
        a.c[i].share = v[i] / 6.0;
    }
    char buf[100];
    search_where_it_goes(&in, &a, buf, sizeof buf);
    CHECK_STR(buf, "b 50 %, c 33 %, a 17 %");
    a.c[1].included = 0;
    search_where_it_goes(&in, &a, buf, sizeof buf);
    CHECK_STR(buf, "c 33 %, a 17 %");
    search_where_it_goes(&in, &a, buf, 8); /* truncated, never overrun */
    CHECK(strlen(buf) < 8);
}

static void test_followed(void) {
    struct search_check c;
    memset(&c, 0, sizeof c);
    /* nothing found, a reference: healthy (OBSERVE means "nothing to search") */
    c.has_baseline = 1;
    CHECK_INT(search_followed_needs(&c, 0), 0);
    CHECK_INT(search_followed(&c, 0, 0), SEARCH_MODE_OBSERVE);
    CHECK_INT(search_followed(&c, 0, 1), SEARCH_MODE_OVERLOAD); /* more traffic, rising */
    CHECK_INT(search_followed(&c, 1, 0), SEARCH_MODE_OVERLOAD); /* asked for */
    CHECK_INT(search_followed_needs(&c, 1), -1);
    /* nothing to judge against: the largest contributor */
    c.has_baseline = 0;
    CHECK_INT(search_followed(&c, 0, 0), SEARCH_MODE_CONTRIBUTOR);
    c.has_qta = 1;
    CHECK_INT(search_followed(&c, 0, 0), SEARCH_MODE_OBSERVE);
    /* a problem: followed; a latency problem rising with the load: an overload */
    c.n = 1;
    c.p[0].kind = SEARCH_LATENCY;
    CHECK_INT(search_followed_needs(&c, 0), 1);
    CHECK_INT(search_followed(&c, 0, 0), SEARCH_MODE_PROBLEM);
    CHECK_INT(search_followed(&c, 0, 1), SEARCH_MODE_OVERLOAD);
    c.p[0].kind = SEARCH_LOST; /* a load does not lose instances: not read */
    CHECK_INT(search_followed_needs(&c, 0), -1);
    CHECK_INT(search_followed(&c, 0, 1), SEARCH_MODE_PROBLEM);
    CHECK_INT(search_followed(&c, 1, 0), SEARCH_MODE_OVERLOAD);
}

static void test_observe_ready(void) {
    struct search_check c;
    memset(&c, 0, sizeof c);
    c.recent.windows = 2;
    CHECK_INT(search_observe_ready(0, &c, 1), 0); /* no samples: never */
    CHECK_INT(search_observe_ready(1, &c, 0), 0); /* nothing yet, few windows */
    CHECK_INT(search_observe_ready(1, &c, 1), 1); /* out of time */
    c.n = 1;
    CHECK_INT(search_observe_ready(1, &c, 0), 1); /* a problem shows at once */
    c.n = 0;
    c.recent.windows = SEARCH_RECENT_WINDOWS;
    CHECK_INT(search_observe_ready(1, &c, 0), 1); /* "nothing abnormal" over full windows */
}

static void test_watch_wanted(void) {
    CHECK_INT(search_watch_wanted(1, 0, 1, 1), 1); /* a person's, within reach */
    CHECK_INT(search_watch_wanted(0, 0, 1, 1), 0); /* a trigger's: it knows its problem */
    CHECK_INT(search_watch_wanted(1, 1, 1, 1), 0); /* an overload asked for is weighed */
    CHECK_INT(search_watch_wanted(1, 0, 0, 1), 0); /* no reference: the contributors */
    CHECK_INT(search_watch_wanted(1, 0, 1, 0), 0); /* nothing within reach: healthy */
    CHECK(SEARCH_Z_SUGGESTIVE < search_z_looks(3));
    CHECK(search_z_looks(SEARCH_WATCH_LOOKS) > search_z_looks(3));
}

static void test_still_holds(void) {
    CHECK_INT(search_still_holds(0.016, 0.017, 0.002), 1);
    CHECK_INT(search_still_holds(0.009, 0.017, 0.002), 0); /* below the midpoint 9.5 ms */
    CHECK_INT(search_still_holds(0.0095, 0.017, 0.002), 0);
    /* a verdict's value that was a spike: below the midpoint, yet far above its siblings */
    CHECK_INT(search_stands_out(0.098, 0.01, 0.003), 1);
    CHECK_INT(search_stands_out(0.098, 0.01, 0.09), 0);      /* within a sibling's reach */
    CHECK_INT(search_stands_out(0.098, 0.01, -INFINITY), 0); /* no sibling to judge by */
}

static void test_names(void) {
    CHECK_STR(search_verdict_name(SEARCH_HEALTHY), "healthy");
    CHECK_STR(search_verdict_name(SEARCH_OVERLOAD), "overload");
    CHECK_STR(search_mode_name(SEARCH_MODE_OBSERVE), "observe");
    CHECK_STR(search_mode_name(SEARCH_MODE_CONTRIBUTOR), "contributor");
    CHECK_STR(search_mode_name((enum search_mode)9), "?");
}

static const struct check_case cases[] = {
    CHECK_CASE(confirm),       CHECK_CASE(fresh),    CHECK_CASE(contributor),
    CHECK_CASE(where_it_goes), CHECK_CASE(followed), CHECK_CASE(observe_ready),
    CHECK_CASE(still_holds),   CHECK_CASE(names),    CHECK_CASE(watch_wanted),
};

static int setup(void) {
    search_params_init(&P);
    return 0;
}

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, NULL);
}
