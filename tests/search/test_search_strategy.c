/*
 * test_search_strategy.c: the strategies behind search_step. A harness plays the
 * controller: it enables what the strategy asks for, lets windows pass (fresh samples
 * for the parent and every enabled child) and calls search_step again until a verdict.
 * Bisect must reach the verdict of `children` with fewer probes on an 8-stage sequence
 * for a fault at each of the 8 positions (issue 6, acceptance 1).
 */
#include "check.h"

#include "search_test_util.h"

static struct search_params P;
static struct search_step S; /* large: keep it off the stack */

struct run {
    enum search_verdict verdict;
    int child;
    size_t probes; /* children enabled over the whole search */
    int rounds;    /* window batches waited */
    char reason[SEARCH_REASON_MAX];
};

/* Pools one round's statistics (several windows) into an accumulator. */
static void accumulate(struct search_stats *acc, const struct search_stats *round) {
    if (!round->present) {
        return;
    }
    uint32_t w = acc->present ? acc->windows : 0;
    search_stats_add_window(acc, round->n_ok, round->n_fa, round->n_to,
                            round->n_ok ? round->mean : 0.0, round->n_ok ? round->variance : 0.0);
    acc->windows = w + round->windows;
}

/*
 * Runs one search at a node simulated by `s` with problem `prob`; only the children the
 * strategy enables report statistics. Each round is 3 windows of 40 instances.
 */
static void drive(const struct sim *s, enum search_problem prob, enum search_strategy_id strat,
                  uint64_t seed, struct run *out) {
    static struct sim_result res;
    static struct search_stats acc[SIM_MAX + 1]; /* since enabled; [SIM_X] = parent */
    int enabled[SIM_MAX] = {0};
    struct search_state st;
    for (size_t i = 0; i <= SIM_MAX; i++) {
        search_stats_init(&acc[i]);
    }
    search_state_init(&st, strat, s->n);
    memset(out, 0, sizeof *out);
    out->verdict = SEARCH_INCONCLUSIVE;
    out->child = -1;
    for (int round = 0; round < 20; round++) {
        sim_run(s, seed + (uint64_t)round * 7919, 3, 40, 0, &res);
        /* Statistics accumulate over the windows since each probe was enabled, as the
         * controller aggregates them over the evaluation windows. */
        accumulate(&acc[SIM_X], &res.x);
        res.x = acc[SIM_X];
        for (size_t i = 0; i < s->n; i++) {
            res.ch[i].enabled = enabled[i];
            if (enabled[i]) {
                accumulate(&acc[i], &res.ch[i].stats);
            }
            res.ch[i].stats = acc[i];
        }
        struct search_input in = sim_input(s, &res, prob, "pipeline");
        int rc = search_step(&in, &P, &st, &S);
        CHECK_INT(rc, DQ_OK);
        sim_free(&res);
        if (rc != DQ_OK) {
            return;
        }
        out->rounds = round + 1;
        if (S.action == SEARCH_DECIDED) {
            out->verdict = S.result.verdict;
            out->child = S.result.child;
            snprintf(out->reason, sizeof out->reason, "%s", S.result.reason);
            return;
        }
        if (S.action == SEARCH_ENABLE) {
            CHECK(S.n_enable > 0);
            for (size_t k = 0; k < S.n_enable; k++) {
                CHECK(S.enable[k] < s->n);
                CHECK(!enabled[S.enable[k]]); /* never asks twice */
                enabled[S.enable[k]] = 1;
                out->probes++;
            }
        }
    }
    CHECK_MSG(0, "no verdict after 20 rounds");
}

static void fault_seq(struct sim *s, size_t n, size_t at, enum search_problem prob) {
    sim_uniform(s, DQ_NODE_SEQUENCE, n, SIM_NORMAL, 0.010, 0.002);
    switch (prob) {
    case SEARCH_VARIANCE:
        s->st[at].spike_p = 0.2;
        s->st[at].spike_add = 0.030;
        break;
    case SEARCH_LOST:
        for (size_t i = 0; i < n; i++) {
            s->st[i].p_fail = 0.002;
        }
        s->st[at].p_fail = 0.2;
        break;
    default:
        s->st[at].mean = 0.030;
        break;
    }
}

/* Bisect vs children, fault at each of the 8 positions, for latency, variance, lost. */
static void test_bisect_vs_children(void) {
    enum search_problem probs[] = {SEARCH_LATENCY, SEARCH_VARIANCE, SEARCH_LOST};
    for (size_t k = 0; k < 3; k++) {
        size_t total_b = 0, total_c = 0;
        printf("%-8s fault at:      ", search_problem_name(probs[k]));
        for (size_t at = 0; at < 8; at++) {
            printf(" %zu", at);
        }
        printf("\n");
        char line_c[128] = "", line_b[128] = "", rounds_c[128] = "", rounds_b[128] = "";
        for (size_t at = 0; at < 8; at++) {
            struct sim s;
            struct run rc, rb;
            fault_seq(&s, 8, at, probs[k]);
            drive(&s, probs[k], SEARCH_CHILDREN, 1000 + 10 * at + k, &rc);
            drive(&s, probs[k], SEARCH_BISECT, 1000 + 10 * at + k, &rb);
            CHECK_INT(rc.verdict, SEARCH_LOCALIZED);
            CHECK_INT(rc.child, (int)at);
            CHECK_INT(rb.verdict, rc.verdict);
            CHECK_INT(rb.child, rc.child);
            CHECK_INT(rc.probes, 8);
            CHECK(rb.probes <= rc.probes);
            if (rb.verdict != SEARCH_LOCALIZED || rb.child != (int)at) {
                fprintf(stderr, "bisect %s at %zu: %s\n", search_problem_name(probs[k]), at,
                        rb.reason);
            }
            total_b += rb.probes;
            total_c += rc.probes;
            size_t lc = strlen(line_c), lb = strlen(line_b);
            snprintf(line_c + lc, sizeof line_c - lc, " %zu", rc.probes);
            snprintf(line_b + lb, sizeof line_b - lb, " %zu", rb.probes);
            lc = strlen(rounds_c);
            lb = strlen(rounds_b);
            snprintf(rounds_c + lc, sizeof rounds_c - lc, " %d", rc.rounds);
            snprintf(rounds_b + lb, sizeof rounds_b - lb, " %d", rb.rounds);
        }
        printf("  children probes:%s (total %zu)\n", line_c, total_c);
        printf("  bisect probes:  %s (total %zu)\n", line_b, total_b);
        printf("  children rounds:%s\n  bisect rounds:  %s\n", rounds_c, rounds_b);
        CHECK(total_b < total_c);
    }
}

/* A 27-stage sequence: same verdicts, probe counts reported. */
static void test_bisect_27(void) {
    size_t total_b = 0, worst_b = 0, n_ok = 0;
    for (size_t at = 0; at < 27; at++) {
        struct sim s;
        struct run rc, rb;
        fault_seq(&s, 27, at, SEARCH_LATENCY);
        drive(&s, SEARCH_LATENCY, SEARCH_CHILDREN, 3000 + at, &rc);
        drive(&s, SEARCH_LATENCY, SEARCH_BISECT, 3000 + at, &rb);
        CHECK_INT(rc.verdict, SEARCH_LOCALIZED);
        CHECK_INT(rc.child, (int)at);
        CHECK_INT(rb.verdict, SEARCH_LOCALIZED);
        CHECK_INT(rb.child, (int)at);
        n_ok += rb.verdict == SEARCH_LOCALIZED && rb.child == (int)at;
        total_b += rb.probes;
        worst_b = rb.probes > worst_b ? rb.probes : worst_b;
    }
    printf("27 stages, latency: bisect localized %zu/27, mean %.1f probes, worst %zu "
           "(children: 27)\n",
           n_ok, (double)total_b / 27.0, worst_b);
    CHECK(total_b < 27 * 27);
}

/* The expected sequence of bisect's requests for a fault at position 6 of 8. */
static void test_bisect_trace(void) {
    static struct sim_result res;
    struct sim s;
    fault_seq(&s, 8, 6, SEARCH_LATENCY);
    struct search_state st;
    search_state_init(&st, SEARCH_BISECT, 8);
    int enabled[8] = {0};
    size_t expect[][4] = {{0, 1, 2, 3}, {4, 5}, {6}};
    size_t expect_n[] = {4, 2, 1};
    for (int step = 0; step < 3; step++) {
        sim_run(&s, 77 + (uint64_t)step, 3, 40, 0, &res);
        for (size_t i = 0; i < 8; i++) {
            res.ch[i].enabled = enabled[i];
            if (!enabled[i]) {
                search_stats_init(&res.ch[i].stats);
            }
        }
        struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
        CHECK_INT(search_step(&in, &P, &st, &S), DQ_OK);
        CHECK_INT(S.action, SEARCH_ENABLE);
        CHECK_INT(S.n_enable, expect_n[step]);
        for (size_t k = 0; k < S.n_enable && k < 4; k++) {
            CHECK_INT(S.enable[k], expect[step][k]);
            enabled[S.enable[k]] = 1;
        }
        CHECK(strstr(S.result.reason, "enable ") == S.result.reason);
        sim_free(&res);
    }
    CHECK_INT(st.lo, 6);
    CHECK_INT(st.hi, 8);
}

/* No fault: both strategies call it diffuse. */
static void test_no_fault(void) {
    struct sim s;
    struct run rc, rb;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 8, SIM_NORMAL, 0.010, 0.002);
    drive(&s, SEARCH_LATENCY, SEARCH_CHILDREN, 5, &rc);
    drive(&s, SEARCH_LATENCY, SEARCH_BISECT, 5, &rb);
    CHECK_INT(rc.verdict, SEARCH_DIFFUSE);
    CHECK_INT(rb.verdict, SEARCH_DIFFUSE);
    CHECK(rb.probes <= 4);
    CHECK(strstr(rb.reason, "neither half dominates") != NULL);
    printf("no fault, children: %s\nno fault, bisect (%zu probes): %s\n", rc.reason, rb.probes,
           rb.reason);
}

/* Bisect falls back to children where it has no law to infer with. */
static void test_bisect_fallback(void) {
    struct sim s;
    struct run rb;
    fault_seq(&s, 3, 1, SEARCH_LATENCY); /* too short */
    drive(&s, SEARCH_LATENCY, SEARCH_BISECT, 11, &rb);
    CHECK_INT(rb.verdict, SEARCH_LOCALIZED);
    CHECK_INT(rb.child, 1);
    CHECK_INT(rb.probes, 3);
    sim_uniform(&s, DQ_NODE_ALL, 6, SIM_EXP, 0.010, 0); /* not a sequence */
    s.st[4].mean = 0.050;
    drive(&s, SEARCH_LATENCY, SEARCH_BISECT, 12, &rb);
    CHECK_INT(rb.verdict, SEARCH_LOCALIZED);
    CHECK_INT(rb.child, 4);
    CHECK_INT(rb.probes, 6);
}

/* The children strategy's first answer, waiting, and giving up. */
static void test_children_steps(void) {
    static struct sim_result res;
    struct sim s;
    fault_seq(&s, 5, 2, SEARCH_LATENCY);
    sim_run(&s, 3, 1, 40, 0, &res);
    for (size_t i = 0; i < 5; i++) {
        res.ch[i].enabled = i == 0; /* one already on (always-on probe) */
        if (i != 0) {
            search_stats_init(&res.ch[i].stats);
        }
    }
    struct search_state st;
    search_state_init(&st, SEARCH_CHILDREN, 5);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_step(&in, &P, &st, &S), DQ_OK);
    CHECK_INT(S.action, SEARCH_ENABLE);
    CHECK_INT(S.n_enable, 4);
    CHECK_INT(S.enable[0], 1);
    CHECK_INT(S.enable[3], 4);
    CHECK(strstr(S.result.reason, "enable 4 children of pipeline") != NULL);
    for (size_t i = 0; i < 5; i++) {
        res.ch[i].enabled = 1;
    }
    CHECK_INT(search_step(&in, &P, &st, &S), DQ_OK);
    CHECK_INT(S.action, SEARCH_WAIT);
    CHECK_INT(S.result.verdict, SEARCH_NEED_SAMPLES);
    in.exhausted = 1;
    CHECK_INT(search_step(&in, &P, &st, &S), DQ_OK);
    CHECK_INT(S.action, SEARCH_DECIDED);
    CHECK_INT(S.result.verdict, SEARCH_INCONCLUSIVE);
    /* Bad state. */
    st.lo = 3;
    st.hi = 9;
    CHECK_INT(search_step(&in, &P, &st, &S), DQ_EINVAL);
    st.lo = 0;
    st.hi = 5;
    st.strategy = (enum search_strategy_id)5;
    CHECK_INT(search_step(&in, &P, &st, &S), DQ_EINVAL);
    sim_free(&res);
}

static const struct check_case cases[] = {
    CHECK_CASE(bisect_trace), CHECK_CASE(bisect_vs_children), CHECK_CASE(bisect_27),
    CHECK_CASE(no_fault),     CHECK_CASE(bisect_fallback),    CHECK_CASE(children_steps),
};

static int setup(void) {
    search_params_init(&P);
    return 0;
}

static void teardown(void) {
    dq_engine_cleanup();
}

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
