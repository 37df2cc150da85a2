/*
 * test_search_attr.c: attribution, dominance and verdicts of search/ on synthetic
 * systems (issue 6, acceptance 1): the dominant child is found for each problem kind,
 * no dominant child gives diffuse, too few samples gives no decision, covariance is
 * reported, all- and first-to-finish attribution follow criticality.
 */
#include "check.h"

#include "search_test_util.h"

static struct search_params P;
static struct search_result R; /* large: keep it off the stack */

static int contains(const char *s, const char *sub) {
    return strstr(s, sub) != NULL;
}

/* ---- basics ------------------------------------------------------------------------ */

static void test_names(void) {
    enum search_problem p;
    enum search_strategy_id s;
    const char *kinds[] = {"latency", "qta", "variance", "lost", "divergence"};
    for (int i = 0; i < 5; i++) {
        CHECK_INT(search_problem_parse(kinds[i], &p), DQ_OK);
        CHECK_INT(p, i);
        CHECK_STR(search_problem_name(p), kinds[i]);
    }
    CHECK_INT(search_problem_parse("slow", &p), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "slow"));
    CHECK_INT(search_strategy_parse("bisect", &s), DQ_OK);
    CHECK_INT(s, SEARCH_BISECT);
    CHECK_INT(search_strategy_parse("children", &s), DQ_OK);
    CHECK_INT(s, SEARCH_CHILDREN);
    CHECK_INT(search_strategy_parse("random", &s), DQ_EINVAL);
    CHECK_STR(search_verdict_name(SEARCH_LOCALIZED), "localized");
    CHECK_STR(search_verdict_name(SEARCH_NEED_SAMPLES), "need_samples");
    CHECK_STR(search_verdict_name((enum search_verdict)99), "?");
    CHECK(search_strategy_get(SEARCH_BISECT) != NULL);
    CHECK_STR(search_strategy_get(SEARCH_BISECT)->name, "bisect");
    CHECK(search_strategy_get((enum search_strategy_id)7) == NULL);
}

/* Pooling windows must give the moments of all the samples at once. */
static void test_pooling(void) {
    struct srng r = {42};
    double all[600];
    size_t n = 0;
    struct search_stats st;
    search_stats_init(&st);
    CHECK(!st.present);
    CHECK(isnan(st.mean));
    int sizes[] = {1, 50, 0, 200, 349};
    for (int w = 0; w < 5; w++) {
        double sum = 0.0, sq = 0.0;
        for (int i = 0; i < sizes[w]; i++) {
            double d = srng_exp(&r, 0.01 * (w + 1));
            all[n++] = d;
            sum += d;
            sq += d * d;
        }
        double mean = sizes[w] ? sum / sizes[w] : 0.0;
        double var = sizes[w] ? sq / sizes[w] - mean * mean : 0.0;
        CHECK_INT(search_stats_add_window(&st, (uint64_t)sizes[w], 2, 1, mean, var > 0 ? var : 0),
                  DQ_OK);
    }
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++) {
        mean += all[i];
    }
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) {
        var += (all[i] - mean) * (all[i] - mean);
    }
    var /= (double)n;
    CHECK(st.present);
    CHECK_INT(st.n_ok, 600);
    CHECK_INT(st.n_fa, 10);
    CHECK_INT(st.n_to, 5);
    CHECK_INT(st.windows, 5);
    CHECK_NEAR(st.mean, mean, 1e-12);
    CHECK_NEAR(st.variance, var, 1e-9 * var);
    CHECK_NEAR(search_stats_lost(&st), 15.0 / 615.0, 1e-12);
    CHECK_INT(search_stats_add_window(&st, 3, 0, 0, NAN, 0.0), DQ_EINVAL);
    CHECK_INT(search_stats_add_window(&st, 3, 0, 0, 0.1, -1.0), DQ_EINVAL);
}

static void test_infer_problem(void) {
    struct search_stats x;
    search_stats_init(&x);
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_LATENCY); /* absent */
    search_stats_add_window(&x, 100, 0, 0, 0.010, 0.000001); /* CV 0.1 */
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_LATENCY);
    x.ks_d = 0.3;
    x.ks_p = 1e-6;
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_DIVERGENCE);
    x.variance = 0.010 * 0.010; /* CV 1 > 0.5 */
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_VARIANCE);
    x.n_fa = 5; /* 4.8 % lost > 1 % */
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_LOST);
    x.qta_hazard = 0.02;
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_QTA);
    x.qta_hazard = 0.0; /* no hazard: back to lost */
    CHECK_INT(search_infer_problem(&x, &P), SEARCH_LOST);
}

static void test_bad_input(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 3, SIM_EXP, 0.01, 0);
    sim_run(&s, 1, 2, 40, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "x");
    in.n_children = 0;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_EINVAL);
    in.n_children = SEARCH_MAX_CHILDREN + 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_EINVAL);
    in.n_children = 3;
    in.kind = DQ_NODE_OUTCOME;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_EINVAL);
    in.kind = DQ_NODE_SEQUENCE;
    in.problem = (enum search_problem)9;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_EINVAL);
    in.problem = SEARCH_LATENCY;
    CHECK_INT(search_evaluate(&in, &P, NULL), DQ_EINVAL);
    CHECK_INT(search_evaluate(NULL, &P, &R), DQ_EINVAL);
    /* Attribution over a child without statistics is a caller error … */
    res.ch[1].stats.present = 0;
    CHECK_INT(search_attribute(&in, &P, NULL, &R.attr), DQ_EINVAL);
    CHECK(contains(dq_last_error(), "s1"));
    /* … unless that child is left out. */
    unsigned char inc[3] = {1, 0, 1};
    CHECK_INT(search_attribute(&in, &P, inc, &R.attr), DQ_OK);
    CHECK(!R.attr.c[1].included);
    CHECK(R.attr.c[0].included && R.attr.c[2].included);
    sim_free(&res);
}

/* ---- latency ----------------------------------------------------------------------- */

/* One slowed leaf among 27 stages: found, though it holds far less than half. */
static void test_latency_27(void) {
    size_t positions[] = {0, 13, 26};
    for (size_t k = 0; k < 3; k++) {
        struct sim s;
        struct sim_result res;
        sim_uniform(&s, DQ_NODE_SEQUENCE, 27, SIM_EXP, 0.010, 0);
        s.st[positions[k]].mean = 0.040;
        sim_run(&s, 100 + k, 2, 40, 0, &res);
        struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
        CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
        CHECK_INT(R.verdict, SEARCH_LOCALIZED);
        CHECK_INT(R.child, (int)positions[k]);
        CHECK_INT(R.attr.best, (int)positions[k]);
        CHECK(R.attr.dominant);
        double share = R.attr.c[positions[k]].share;
        CHECK_MSG(share > 0.05 && share < 0.5, "share %g", share);
        /* Shares of a sequence's means add up to about 1 (X's mean is their sum). */
        double sum = 0.0;
        for (size_t i = 0; i < 27; i++) {
            sum += R.attr.c[i].share;
        }
        CHECK_NEAR(sum, 1.0, 1e-9);
        CHECK_NEAR(R.attr.total, res.x.mean, 1e-15);
        CHECK(contains(R.reason, "localized at s"));
        CHECK(contains(R.reason, "of the mean latency of pipeline's children"));
        CHECK(contains(R.reason, "the runner-up"));
        CHECK(contains(R.reason, " ms ± "));
        printf("latency 27, fault at %zu: %s\n", positions[k], R.reason);

        /* The same child with finer probes: descend into it instead. */
        res.ch[positions[k]].has_children = 1;
        CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
        CHECK_INT(R.verdict, SEARCH_DESCEND);
        CHECK_INT(R.child, (int)positions[k]);
        CHECK(contains(R.reason, "descend into"));
        sim_free(&res);
    }
}

/* Nothing slowed: no child dominates → diffuse, but only once enough windows are in. */
static void test_diffuse(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 8, SIM_EXP, 0.010, 0);
    sim_run(&s, 7, 4, 40, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK_INT(R.child, -1);
    CHECK(!R.attr.dominant);
    CHECK(R.attr.best >= 0 && R.attr.runner_up >= 0);
    CHECK(contains(R.reason, "diffuse at pipeline: no child dominates"));
    CHECK(contains(R.reason, "overlap"));
    printf("diffuse: %s\n", R.reason);
    sim_free(&res);

    /* With 2 windows the intervals are still wide: wait rather than call it diffuse. */
    sim_run(&s, 7, 2, 40, 0, &res);
    in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_NEED_SAMPLES);
    CHECK(contains(R.reason, "waiting for more windows"));
    /* … unless the caller is out of time. */
    in.exhausted = 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    sim_free(&res);
}

/* Too few samples: no decision; out of time: inconclusive. */
static void test_need_samples(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 5, SIM_EXP, 0.010, 0);
    s.st[2].mean = 0.100; /* an obvious fault, still no decision on too few samples */
    sim_run(&s, 9, 1, 40, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_NEED_SAMPLES);
    CHECK_INT(R.child, -1);
    CHECK_INT(R.attr.best, -1);
    printf("need samples: %s\n", R.reason);
    CHECK(contains(R.reason, "s0 has 40 instances in 1 window (needs 30 in 2)"));
    CHECK(contains(R.reason, "4 other children"));
    sim_free(&res);

    sim_run(&s, 9, 2, 10, 0, &res); /* 2 windows but 20 instances */
    in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_NEED_SAMPLES);
    res.ch[3].stats.present = 0;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_NEED_SAMPLES);
    in.exhausted = 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_INCONCLUSIVE);
    CHECK(contains(R.reason, "inconclusive at pipeline"));
    sim_free(&res);

    /* Enough: decided. */
    sim_run(&s, 9, 2, 40, 0, &res);
    in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 2);
    sim_free(&res);
}

/* Children with unlike natural means: only baselines find the one that changed. */
static void test_baseline(void) {
    struct sim s;
    struct sim_result base, res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 6, SIM_NORMAL, 0.010, 0.002);
    s.st[1].mean = 0.050; /* naturally slow, healthy */
    sim_run(&s, 21, 10, 100, 0, &base);
    s.st[4].mean = 0.025; /* +15 ms: the fault */
    sim_run(&s, 22, 4, 40, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 1); /* without baselines the largest mean wins */
    CHECK(!R.attr.baseline_mode);
    for (size_t i = 0; i < 6; i++) {
        struct search_stats *c = &res.ch[i].stats;
        c->has_baseline = 1;
        c->base_mean = base.ch[i].stats.mean;
        c->base_variance = base.ch[i].stats.variance;
        c->base_lost = search_stats_lost(&base.ch[i].stats);
        c->base_n = base.ch[i].stats.n_ok;
    }
    in.stats.has_baseline = 1;
    in.stats.base_mean = base.x.mean;
    in.stats.base_variance = base.x.variance;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK(R.attr.baseline_mode);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 4);
    CHECK_INT(R.attr.c[4].deviates, 1);
    CHECK_INT(R.attr.c[1].deviates, 0);
    CHECK_NEAR(R.attr.c[4].value, 0.015, 0.003);
    CHECK(contains(R.reason, "excess mean latency"));
    printf("baseline: %s\n", R.reason);

    /* No child deviates from its baseline, yet X diverges from its calculated ΔQ:
     * coupling → diffuse with that reason. */
    for (size_t i = 0; i < 6; i++) {
        res.ch[i].stats.base_mean = res.ch[i].stats.mean;
    }
    in.stats.ks_d = 0.25;
    in.stats.ks_p = 1e-5;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK(contains(R.reason, "no child deviates from its baseline"));
    CHECK(contains(R.reason, "interact"));
    sim_free(&base);
    sim_free(&res);
}

/* QTA on a violated 95 % point: the child with the heavy tail, not the largest mean. */
static void test_qta_quantile(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 5, SIM_NORMAL, 0.020, 0.002);
    s.st[0].mean = 0.040; /* slowest on average, tight */
    s.st[3].mean = 0.012;
    s.st[3].spike_p = 0.10; /* 10 % of its instances take +80 ms */
    s.st[3].spike_add = 0.080;
    sim_run(&s, 31, 4, 100, 1, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_QTA, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK); /* on means: s0 */
    CHECK(!R.attr.quantile_mode);
    CHECK_INT(R.child, 0);
    in.qta_p = 0.95;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK(R.attr.quantile_mode);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 3);
    CHECK_NEAR(R.attr.c[3].value, 0.092, 0.006);
    CHECK(contains(R.reason, "95 %-quantile latency"));
    printf("qta: %s\n", R.reason);
    sim_free(&res);
}

/* ---- variance ------------------------------------------------------------------------- */

static void test_variance(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 8, SIM_NORMAL, 0.010, 0.001);
    s.st[5].spike_p = 0.2; /* erratic: one instance in five takes +20 ms */
    s.st[5].spike_add = 0.020;
    sim_run(&s, 41, 3, 60, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_VARIANCE, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 5);
    CHECK(R.attr.c[5].share > 0.8);
    /* Independent stages: the covariance is reported and small. */
    CHECK(isfinite(R.attr.covariance));
    CHECK(isfinite(R.attr.covariance_half_width) && R.attr.covariance_half_width > 0);
    double sum = 0.0;
    for (size_t i = 0; i < 8; i++) {
        sum += res.ch[i].stats.variance;
    }
    CHECK_NEAR(R.attr.covariance, res.x.variance - sum, 1e-15);
    CHECK(fabs(R.attr.covariance) <= R.attr.covariance_half_width);
    CHECK(contains(R.reason, "covariance"));
    CHECK(!contains(R.reason, "dependent"));
    printf("variance: %s\n", R.reason);
    sim_free(&res);

    /* A shared delay in every stage makes them dependent: large positive covariance. */
    sim_uniform(&s, DQ_NODE_SEQUENCE, 4, SIM_NORMAL, 0.010, 0.001);
    s.shared_sd = 0.004;
    sim_run(&s, 43, 3, 60, 0, &res);
    in = sim_input(&s, &res, SEARCH_VARIANCE, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK(R.attr.covariance > R.attr.covariance_half_width);
    CHECK(R.attr.covariance > 0.5 * res.x.variance);
    CHECK(contains(R.reason, "dependent"));
    printf("dependent: %s\n", R.reason);
    sim_free(&res);
}

/* A problem found in the tail whose rare passes missed every window weighed: no child can
 * show it, so no diffuse verdict until one does (or time is up); with one there, the step
 * decides as it would. */
static void test_tail_waits(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 6, SIM_NORMAL, 0.010, 0.001);
    sim_run(&s, 47, 10, 60, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_VARIANCE, "rare");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE); /* a variance problem outside the tail */
    in.tail_at = 0.057;
    in.tail_node = "req";
    in.tail_passes = 0;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_NEED_SAMPLES);
    CHECK(contains(R.reason, "waiting for the rare slow passes at rare: none of req's passes lay "
                             "beyond 57 ms in the 10 windows weighed"));
    printf("tail waits: %s\n", R.reason);
    in.tail_passes = 1; /* one showed: what the windows say is the verdict */
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    in.tail_passes = 0;
    in.exhausted = 1; /* out of time: decided on what there is */
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    sim_free(&res);
}

/* ---- lost mass ------------------------------------------------------------------------ */

static void test_lost(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 10, SIM_EXP, 0.010, 0);
    for (size_t i = 0; i < 10; i++) {
        s.st[i].p_fail = 0.002;
    }
    s.st[7].p_fail = 0.15;
    sim_run(&s, 51, 3, 100, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LOST, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 7);
    CHECK(R.attr.c[7].share > 0.7);
    CHECK_NEAR(R.attr.c[7].value, search_stats_lost(&res.ch[7].stats), 1e-15);
    CHECK(R.attr.c[7].half_width > 0.0);
    /* Downstream stages see fewer instances: the rate, not the count, is compared. */
    CHECK(search_stats_instances(&res.ch[9].stats) < search_stats_instances(&res.ch[0].stats));
    CHECK(contains(R.reason, "lost instances"));
    CHECK(contains(R.reason, "% ± "));
    printf("lost: %s\n", R.reason);
    sim_free(&res);

    /* Choice: a rarely chosen branch that always fails still counts by its weight. */
    memset(&s, 0, sizeof s);
    s.kind = DQ_NODE_CHOICE;
    s.n = 3;
    double w[3] = {0.6, 0.3, 0.1};
    for (size_t i = 0; i < 3; i++) {
        s.st[i].mean = 0.01;
        s.st[i].weight = w[i];
        s.st[i].p_fail = 0.01;
    }
    s.st[1].p_fail = 0.3;
    sim_run(&s, 53, 3, 200, 0, &res);
    in = sim_input(&s, &res, SEARCH_LOST, "router");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 1);
    CHECK_NEAR(R.attr.c[1].value, 0.3 * search_stats_lost(&res.ch[1].stats), 1e-15);
    sim_free(&res);
}

/* ---- divergence ----------------------------------------------------------------------- */

static void test_divergence(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 4, SIM_EXP, 0.010, 0);
    sim_run(&s, 61, 3, 60, 1, &res);
    /* s1 and s2 are sub-diagrams. s2's observed ΔQ does not match what its own children
     * predict (its calculated ΔQ has a mean of 3.3 ms, it observes 10 ms); s1's matches. */
    struct dq *calc1 = NULL, *calc2 = NULL;
    CHECK_INT(dq_exponential(SIM_K, SIM_N, 100.0, &calc1), DQ_OK);
    CHECK_INT(dq_exponential(SIM_K, SIM_N, 300.0, &calc2), DQ_OK);
    res.ch[1].has_children = 1;
    res.ch[1].stats.calculated = calc1;
    res.ch[2].has_children = 1;
    res.ch[2].stats.calculated = calc2;
    struct search_input in = sim_input(&s, &res, SEARCH_DIVERGENCE, "pipeline");
    in.stats.ks_d = 0.3;
    in.stats.ks_p = 1e-8;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DESCEND);
    CHECK_INT(R.child, 2);
    CHECK_NEAR(R.attr.c[0].value, 0.0, 0.0); /* leaves: no divergence of their own */
    CHECK_NEAR(R.attr.c[3].value, 0.0, 0.0);
    CHECK(R.attr.c[2].value > 0.25);
    CHECK(R.attr.c[1].value < R.attr.c[2].value);
    CHECK(contains(R.reason, "KS D = "));
    printf("divergence: %s\n", R.reason);

    /* Given as numbers (as the controller computes them) instead of ΔQs. */
    res.ch[1].stats.ks_d = 0.7;
    res.ch[1].stats.ks_p = 1e-9;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.child, 1);

    /* Every child a leaf: X diverges while no child does → diffuse, coupling. */
    res.ch[1].has_children = 0;
    res.ch[2].has_children = 0;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK(contains(R.reason, "no child diverges on its own"));
    printf("coupling: %s\n", R.reason);
    dq_destroy(calc1);
    dq_destroy(calc2);
    sim_free(&res);
}

/* ---- all-to-finish, first-to-finish, choice -------------------------------------------- */

static void test_all_to_finish(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_ALL, 4, SIM_EXP, 0.010, 0);
    s.st[2].mean = 0.030;
    sim_run(&s, 71, 3, 100, 1, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "fanout");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 2);
    double sum = 0.0;
    for (size_t i = 0; i < 4; i++) {
        sum += R.attr.c[i].criticality;
        /* Criticality from the ΔQs matches how often the branch really was last. */
        double emp = (double)res.crit_count[i] / (double)res.crit_total;
        CHECK_MSG(fabs(R.attr.c[i].criticality - emp) < 0.06, "branch %zu: %g vs %g", i,
                  R.attr.c[i].criticality, emp);
    }
    CHECK_NEAR(sum, 1.0, 1e-9);
    CHECK(R.attr.c[2].criticality > 0.45);
    /* The contributions split E[max] exactly: they add up to X's mean (up to the grid
     * rounding of 0.5 ms bins and the sampling error of X's own mean). */
    double parts = 0.0;
    for (size_t i = 0; i < 4; i++) {
        parts += R.attr.c[i].value;
    }
    double se = sqrt(res.x.variance / (double)res.x.n_ok); /* X's mean is a sample too */
    CHECK_MSG(fabs(parts - res.x.mean) < 3.0 * se, "Σ parts %g vs mean %g ± %g", parts, res.x.mean,
              se);
    /* Against the engine's all-to-finish of the same ΔQs (Π F_i): the same E[max] up to
     * how ties of 3+ branches within one bin are split. */
    const struct dq *ops[4] = {res.dq[0], res.dq[1], res.dq[2], res.dq[3]};
    struct dq *mx = NULL;
    struct dq_moments mm;
    CHECK_INT(dq_all_to_finish(ops, 4, &mx), DQ_OK);
    CHECK_INT(dq_moments(mx, &mm), DQ_OK);
    CHECK_NEAR(parts, mm.mean, 0.001 * mm.mean);
    dq_destroy(mx);
    CHECK(contains(R.reason, "last to finish in"));
    printf("all: %s\n", R.reason);

    /* Without ΔQs the normal approximation ranks the branches the same way. */
    for (size_t i = 0; i < 4; i++) {
        res.ch[i].stats.observed = NULL;
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 2);
    CHECK(R.attr.c[2].criticality > 0.5);
    sim_free(&res);

    /* Two identical deterministic branches: half each (the tie rule). */
    struct dq *a = NULL, *b = NULL;
    CHECK_INT(dq_wait(0, 64, 0.010, &a), DQ_OK);
    CHECK_INT(dq_wait(0, 64, 0.010, &b), DQ_OK);
    struct search_child ch[2];
    memset(ch, 0, sizeof ch);
    for (int i = 0; i < 2; i++) {
        search_stats_init(&ch[i].stats);
        for (int w = 0; w < 4; w++) {
            search_stats_add_window(&ch[i].stats, 50, 0, 0, 0.010, 0.0);
        }
        ch[i].stats.observed = i ? b : a;
    }
    struct search_input in2;
    memset(&in2, 0, sizeof in2);
    in2.name = "pair";
    in2.kind = DQ_NODE_ALL;
    in2.problem = SEARCH_LATENCY;
    in2.children = ch;
    in2.n_children = 2;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[0].criticality, 0.5, 1e-12);
    CHECK_NEAR(R.attr.c[1].criticality, 0.5, 1e-12);
    CHECK_NEAR(R.attr.c[0].value, 0.005, 1e-12); /* half of E[max] = 10 ms each */
    in2.kind = DQ_NODE_FIRST;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[0].criticality, 0.5, 1e-12);
    CHECK_INT(search_evaluate(&in2, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    dq_destroy(a);
    dq_destroy(b);

    /* Branches on different grids (1 ms and 0.5 ms bins): 10 ms vs 20 ms, the second is
     * always last and holds all of E[max] = 20 ms; it finishes first never. */
    CHECK_INT(dq_wait(0, 64, 0.010, &a), DQ_OK);
    CHECK_INT(dq_wait(-1, 100, 0.020, &b), DQ_OK);
    ch[0].stats.observed = a;
    ch[1].stats.observed = b;
    ch[1].stats.mean = 0.020;
    in2.kind = DQ_NODE_ALL;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[1].criticality, 1.0, 1e-12);
    CHECK_NEAR(R.attr.c[1].value, 0.020, 1e-12);
    CHECK_NEAR(R.attr.c[0].value, 0.0, 1e-12);
    in2.kind = DQ_NODE_FIRST;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[0].criticality, 1.0, 1e-12);
    CHECK_NEAR(R.attr.c[0].value, 0.010, 1e-12);
    /* The normal approximation (no ΔQs, zero variance: steps) agrees. */
    ch[0].stats.observed = NULL;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[0].criticality, 1.0, 1e-12);
    CHECK_NEAR(R.attr.c[0].value, 0.010, 0.0001);
    in2.kind = DQ_NODE_ALL;
    CHECK_INT(search_attribute(&in2, &P, NULL, &R.attr), DQ_OK);
    CHECK_NEAR(R.attr.c[1].criticality, 1.0, 1e-12);
    CHECK_NEAR(R.attr.c[1].value, 0.020, 0.0001);
    dq_destroy(a);
    dq_destroy(b);
}

static void test_first_to_finish(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_FIRST, 3, SIM_EXP, 0.050, 0);
    s.st[1].mean = 0.008; /* the usual winner: the parent's latency is mostly its latency */
    sim_run(&s, 81, 3, 100, 1, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "race");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 1); /* not the slow ones: they rarely finish first */
    for (size_t i = 0; i < 3; i++) {
        double emp = (double)res.crit_count[i] / (double)res.crit_total;
        CHECK_MSG(fabs(R.attr.c[i].criticality - emp) < 0.06, "branch %zu: %g vs %g", i,
                  R.attr.c[i].criticality, emp);
    }
    CHECK(contains(R.reason, "first to finish in"));
    double parts = 0.0; /* E[min] splits exactly too */
    for (size_t i = 0; i < 3; i++) {
        parts += R.attr.c[i].value;
    }
    double se = sqrt(res.x.variance / (double)res.x.n_ok);
    CHECK_MSG(fabs(parts - res.x.mean) < 3.0 * se, "Σ parts %g vs mean %g ± %g", parts, res.x.mean,
              se);
    printf("first: %s\n", R.reason);
    sim_free(&res);
}

static void test_choice(void) {
    struct sim s;
    struct sim_result res;
    memset(&s, 0, sizeof s);
    s.kind = DQ_NODE_CHOICE;
    s.n = 3;
    double w[3] = {0.5, 0.3, 0.2};
    for (size_t i = 0; i < 3; i++) {
        s.st[i].dist = SIM_NORMAL;
        s.st[i].mean = 0.010;
        s.st[i].sd = 0.001;
        s.st[i].weight = w[i];
    }
    s.st[2].mean = 0.060; /* the rare branch became slow */
    sim_run(&s, 91, 3, 200, 0, &res);
    struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "router");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 2);
    CHECK_NEAR(R.attr.c[2].value, 0.2 * res.ch[2].stats.mean, 1e-15);
    /* Variance of a choice: law of total variance; the residual is small. */
    in.problem = SEARCH_VARIANCE;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.child, 2);
    CHECK(isfinite(R.attr.covariance));
    CHECK_MSG(fabs(R.attr.covariance) < 0.1 * res.x.variance, "residual %g of %g",
              R.attr.covariance, res.x.variance);
    sim_free(&res);
}

/* Arbitrary statistics (zeros, NaN, huge, empty ΔQs) never crash nor break contracts. */
static void test_random_inputs(void) {
    static struct search_step st_out;
    struct srng r = {2024};
    struct dq *dqs[4] = {NULL, NULL, NULL, NULL};
    CHECK_INT(dq_never(0, 16, &dqs[0]), DQ_OK);
    CHECK_INT(dq_wait(-3, 100, 0.005, &dqs[1]), DQ_OK);
    CHECK_INT(dq_exponential(2, 300, 10.0, &dqs[2]), DQ_OK);
    CHECK_INT(dq_uniform(0, 4096, 0.0, 5.0, &dqs[3]), DQ_OK);
    enum dq_node_kind kinds[] = {DQ_NODE_SEQUENCE, DQ_NODE_FIRST, DQ_NODE_ALL, DQ_NODE_CHOICE,
                                 DQ_NODE_REFERENCE};
    double odd[] = {0.0, 1e-9, 0.01, 3.0, 1e6, NAN, -1.0, INFINITY};
    int bad = 0, n_ok = 0, n_decided = 0;
    for (int it = 0; it < 3000; it++) {
        struct search_child ch[12];
        struct search_input in;
        memset(&in, 0, sizeof in);
        memset(ch, 0, sizeof ch);
        size_t n = 1 + (size_t)(srng_next(&r) % 12);
        in.name = it % 7 ? "x" : NULL;
        in.kind = kinds[srng_next(&r) % 5];
        in.problem = (enum search_problem)(srng_next(&r) % 5);
        in.qta_p = srng_unit(&r) < 0.5 ? srng_unit(&r) : 0.0;
        in.exhausted = srng_unit(&r) < 0.2;
        in.children = ch;
        in.n_children = n;
        for (size_t i = 0; i <= n; i++) {
            struct search_stats *x = i < n ? &ch[i].stats : &in.stats;
            search_stats_init(x);
            if (srng_unit(&r) < 0.9) {
                int w = (int)(srng_next(&r) % 6);
                for (int k = 0; k < w; k++) {
                    uint64_t ok = srng_next(&r) % 4 ? srng_next(&r) % 60 : 0;
                    search_stats_add_window(x, ok, srng_next(&r) % 5, srng_next(&r) % 3,
                                            fabs(odd[srng_next(&r) % 5]),
                                            fabs(odd[srng_next(&r) % 5]));
                }
            }
            if (srng_unit(&r) < 0.3) {
                x->observed = dqs[srng_next(&r) % 4];
            }
            if (srng_unit(&r) < 0.2) {
                x->calculated = dqs[srng_next(&r) % 4];
            }
            if (srng_unit(&r) < 0.3) {
                x->ks_d = odd[srng_next(&r) % 8];
                x->ks_p = odd[srng_next(&r) % 8];
            }
            if (srng_unit(&r) < 0.3) {
                x->has_baseline = 1;
                x->base_mean = odd[srng_next(&r) % 8];
                x->base_variance = odd[srng_next(&r) % 8];
                x->base_lost = odd[srng_next(&r) % 8];
                x->base_n = srng_next(&r) % 100;
            }
            if (i < n) {
                ch[i].has_children = (int)(srng_next(&r) % 2);
                ch[i].enabled = srng_unit(&r) < 0.7;
                ch[i].weight = 1.0 / (double)n;
                ch[i].name = i % 3 ? NULL : "c";
            }
        }
        int rc = search_evaluate(&in, &P, &R);
        bad += rc != DQ_OK && rc != DQ_EINVAL;
        if (rc == DQ_OK) {
            n_ok++;
            n_decided += R.verdict != SEARCH_NEED_SAMPLES && R.verdict != SEARCH_INCONCLUSIVE;
            bad += memchr(R.reason, '\0', sizeof R.reason) == NULL || R.reason[0] == '\0';
            if (R.verdict == SEARCH_DESCEND || R.verdict == SEARCH_LOCALIZED) {
                bad += R.child < 0 || (size_t)R.child >= n;
            } else {
                bad += R.child != -1;
            }
        }
        struct search_state st;
        search_state_init(&st, (enum search_strategy_id)(it % 2), n);
        rc = search_step(&in, &P, &st, &st_out);
        bad += rc != DQ_OK && rc != DQ_EINVAL;
        if (rc == DQ_OK) {
            bad += st.lo >= st.hi || st.hi > n;
            bad += st_out.n_enable > n;
            for (size_t k = 0; k < st_out.n_enable; k++) {
                bad += st_out.enable[k] >= n || ch[st_out.enable[k]].enabled;
            }
            bad += (st_out.action == SEARCH_ENABLE) != (st_out.n_enable > 0);
        }
    }
    CHECK_INT(bad, 0);
    /* The inputs must reach the decisions, not only the argument checks. */
    CHECK_MSG(n_ok > 2000 && n_decided > 100, "%d evaluated, %d decided", n_ok, n_decided);
    for (int i = 0; i < 4; i++) {
        dq_destroy(dqs[i]);
    }
}

/* ---- intervals that hold for correlated windows, shares that add up -------------------- */

/* A child whose instances come in correlated windows (a queue that is slow for a whole
 * window, then quick): the windows' means scatter far more than σ/√n says. Two such
 * identical children must not be told apart by chance; the iid interval would. */
static void test_batch_means(void) {
    struct srng r = {7};
    struct search_child ch[2];
    memset(ch, 0, sizeof ch);
    const char *names[2] = {"worker_1", "worker_2"};
    int wrong_iid = 0, wrong = 0;
    for (int trial = 0; trial < 200; trial++) {
        for (int c = 0; c < 2; c++) {
            ch[c].name = names[c];
            ch[c].enabled = 1;
            search_stats_init(&ch[c].stats);
            for (int w = 0; w < 8; w++) {
                /* each window's level is random (load), its 300 instances scatter around it */
                double level = 0.010 + 0.006 * srng_normal(&r);
                level = level > 0.001 ? level : 0.001;
                search_stats_add_window(&ch[c].stats, 300, 0, 0, level, 0.002 * 0.002);
            }
        }
        struct search_input in;
        memset(&in, 0, sizeof in);
        in.name = "pipeline";
        in.kind = DQ_NODE_SEQUENCE;
        in.problem = SEARCH_LATENCY;
        in.children = ch;
        in.n_children = 2;
        search_stats_init(&in.stats);
        CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
        wrong += R.verdict == SEARCH_LOCALIZED;
        /* the same numbers with the scatter of the windows forgotten */
        double iid = 1.96 * sqrt(0.002 * 0.002 / 2400.0);
        double d = fabs(ch[0].stats.mean - ch[1].stats.mean);
        wrong_iid += d > 2.0 * iid;
        /* the batch standard error is the windows' scatter, about 6 ms / √8, widened by t
         * for 7 degrees of freedom and by the (chance) autocorrelation of 8 windows */
        double se = search_stats_mean_se(&ch[0].stats);
        CHECK_MSG(se > 0.0006 && se < 0.008, "batch se %g", se);
    }
    CHECK_MSG(wrong <= 4, "identical correlated stations localized in %d of 200 trials", wrong);
    CHECK_MSG(wrong_iid > 100, "the iid interval would have named one in %d of 200", wrong_iid);
    printf("batch means: 2 identical correlated stations: %d/200 localized (iid intervals: "
           "%d/200)\n",
           wrong, wrong_iid);

    /* Identical windows (no scatter): the batch term adds nothing. */
    struct search_stats st;
    search_stats_init(&st);
    for (int w = 0; w < 5; w++) {
        search_stats_add_window(&st, 100, 1, 0, 0.02, 0.0001);
    }
    CHECK_NEAR(search_stats_mean_se(&st), sqrt(0.0001 / 500.0), 1e-15);
    CHECK_NEAR(search_stats_lost_se(&st), sqrt((5.0 / 505.0) * (1 - 5.0 / 505.0) / 505.0), 1e-12);
    /* Lost fractions that swing between windows widen the lost interval. */
    search_stats_init(&st);
    for (int w = 0; w < 6; w++) {
        search_stats_add_window(&st, w % 2 ? 100 : 60, w % 2 ? 0 : 40, 0, 0.02, 0.0001);
    }
    double p = search_stats_lost(&st);
    CHECK(search_stats_lost_se(&st) > 2.0 * sqrt(p * (1 - p) / 600.0));
}

/* Shares are of what the children account for: they add up to 100 % on every operator,
 * and what the node holds beyond that is named. */
static void test_shares_add_up(void) {
    enum dq_node_kind kinds[] = {DQ_NODE_SEQUENCE, DQ_NODE_ALL, DQ_NODE_FIRST, DQ_NODE_CHOICE};
    for (int k = 0; k < 4; k++) {
        struct sim s;
        struct sim_result res;
        sim_uniform(&s, kinds[k], 4, SIM_EXP, 0.010, 0);
        for (size_t i = 0; i < 4; i++) {
            s.st[i].weight = 0.25;
        }
        s.st[1].mean = 0.030;
        sim_run(&s, 90 + (uint64_t)k, 4, 200, 1, &res);
        struct search_input in = sim_input(&s, &res, SEARCH_LATENCY, "node");
        CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
        double sum = 0.0;
        for (size_t i = 0; i < 4; i++) {
            sum += R.attr.c[i].share;
        }
        CHECK_NEAR(sum, 1.0, 1e-9);
        CHECK(isfinite(R.attr.remainder));
        if (kinds[k] != DQ_NODE_FIRST) {
            CHECK_INT(R.child, 1);
        }
        /* the node takes 5 ms more than its children: its own time, named */
        in.stats.mean += 0.005;
        CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
        CHECK_MSG(contains(R.reason, "more than its children account for"), "%s", R.reason);
        CHECK_NEAR(R.attr.remainder, R.attr.total - R.attr.explained, 1e-15);
        printf("shares (%d): %s\n", (int)kinds[k], R.reason);
        sim_free(&res);
    }
}

/* A child that diverges and a leaf runner-up: no "0 % (KS D = 0 ± 0)". */
static void test_runner_up_zero(void) {
    struct sim s;
    struct sim_result res;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 2, SIM_EXP, 0.010, 0);
    sim_run(&s, 5, 3, 60, 1, &res);
    struct dq *calc = NULL;
    CHECK_INT(dq_exponential(SIM_K, SIM_N, 300.0, &calc), DQ_OK);
    res.ch[0].has_children = 1;
    res.ch[0].stats.calculated = calc;
    struct search_input in = sim_input(&s, &res, SEARCH_DIVERGENCE, "pipeline");
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DESCEND);
    CHECK(!contains(R.reason, "0 % (KS D = 0 ± 0)"));
    CHECK(contains(R.reason, "no other child holds any"));
    dq_destroy(calc);
    sim_free(&res);
}

/* A heavy-tailed child measured over few windows: its variance is known too loosely to
 * say that no child dominates: wait for more windows; out of time, the child when its
 * interval on the log scale is clear of its siblings', else diffuse. */
static void test_imprecise_waits(void) {
    struct search_child ch[3];
    memset(ch, 0, sizeof ch);
    const char *names[3] = {"a", "b", "c"};
    double wvar[4] = {0.0001, 0.0040, 0.0000, 0.0090}; /* rare outliers: windows disagree */
    for (int c = 0; c < 3; c++) {
        ch[c].name = names[c];
        ch[c].enabled = 1;
        search_stats_init(&ch[c].stats);
        for (int w = 0; w < 4; w++) {
            search_stats_add_window(&ch[c].stats, 200, 0, 0, 0.010, c == 1 ? wvar[w] : 0.000004);
        }
    }
    struct search_input in;
    memset(&in, 0, sizeof in);
    in.name = "x";
    in.kind = DQ_NODE_SEQUENCE;
    in.problem = SEARCH_VARIANCE;
    in.children = ch;
    in.n_children = 3;
    search_stats_init(&in.stats);
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(R.verdict == SEARCH_NEED_SAMPLES, "verdict %d: %s", R.verdict, R.reason);
    CHECK(contains(R.reason, "not clear of its own"));
    /* out of time: b's variance, a thousand times its siblings', is clear of them on the
     * log scale (a variance's uncertainty is a factor): b, not a diffuse verdict */
    in.exhausted = 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(R.verdict == SEARCH_LOCALIZED && R.child == 1, "verdict %d: %s", R.verdict, R.reason);
    CHECK(contains(R.reason, "on the log scale its lower end"));
    /* siblings as spread as b's lower end on that scale: no child came to dominate */
    for (int c = 0; c < 3; c += 2) {
        search_stats_init(&ch[c].stats);
        for (int w = 0; w < 4; w++) {
            search_stats_add_window(&ch[c].stats, 200, 0, 0, 0.010, 0.0012);
        }
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(R.verdict == SEARCH_DIFFUSE, "verdict %d: %s", R.verdict, R.reason);
    CHECK(contains(R.reason, "came to dominate"));
    for (int c = 0; c < 3; c += 2) {
        search_stats_init(&ch[c].stats);
        for (int w = 0; w < 4; w++) {
            search_stats_add_window(&ch[c].stats, 200, 0, 0, 0.010, 0.000004);
        }
    }
    /* many more windows of the same kind: b's variance is pinned down, it dominates */
    in.exhausted = 0;
    for (int w = 0; w < 60; w++) {
        for (int c = 0; c < 3; c++) {
            search_stats_add_window(&ch[c].stats, 200, 0, 0, 0.010,
                                    c == 1 ? wvar[w % 4] : 0.000004);
        }
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(R.verdict == SEARCH_LOCALIZED && R.child == 1, "%s", R.reason);
}

/* Node `node`, a sequence with a latency problem, over two children `names` whose four
 * windows of 50 instances each have the means given. */
static void two_swinging(struct search_input *in, struct search_child ch[2], const char *node,
                         const char *const names[2], const double means[2][4]) {
    memset(ch, 0, 2 * sizeof ch[0]);
    for (int c = 0; c < 2; c++) {
        ch[c].name = names[c];
        ch[c].enabled = 1;
        search_stats_init(&ch[c].stats);
        for (int w = 0; w < 4; w++) {
            search_stats_add_window(&ch[c].stats, 50, 0, 0, means[c][w], 0.000001);
        }
    }
    memset(in, 0, sizeof *in);
    in->name = node;
    in->kind = DQ_NODE_SEQUENCE;
    in->problem = SEARCH_LATENCY;
    in->children = ch;
    in->n_children = 2;
    search_stats_init(&in->stats);
}

/* Raw contributions whose intervals are wider than the largest value (windows that swing
 * from 1 to 40 ms, as on a starved machine): that is no balance to call diffuse; wait, and
 * when out of time say it was measured too loosely. Excesses over baselines near 0 inside
 * wide intervals stay a balance (test_baseline). */
static void test_vague_waits(void) {
    struct search_child ch[2];
    struct search_input in;
    const char *const names[2] = {"a", "b"};
    const double means[2][4] = {{0.001, 0.040, 0.002, 0.030}, {0.002, 0.001, 0.030, 0.001}};
    two_swinging(&in, ch, "x", names, means);
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(R.verdict == SEARCH_NEED_SAMPLES, "verdict %d: %s", R.verdict, R.reason);
    CHECK_MSG(contains(R.reason, "too loosely to tell a balance"), "%s", R.reason);
    CHECK(R.attr.c[0].half_width >= R.attr.c[0].value);
    in.exhausted = 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK_MSG(contains(R.reason, "measured too loosely to tell"), "%s", R.reason);
    /* the same swings over many windows: the intervals narrow below the values, and the
     * two (means 18 and 8.5 ms) are told apart or called a balance, no longer waited on */
    in.exhausted = 0;
    for (int w = 0; w < 200; w++) {
        for (int c = 0; c < 2; c++) {
            search_stats_add_window(&ch[c].stats, 50, 0, 0, means[c][w % 4], 0.000001);
        }
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_MSG(!contains(R.reason, "too loosely"), "%s", R.reason);
}

/* The runner-up measured too loosely: a steady leader (23 ms) and a runner-up whose windows
 * swing from 1 to 40 ms (11 ms on average, its interval wider than that): its interval
 * reaching past the leader is no balance yet, so the search waits rather than say diffuse;
 * out of time it says why. */
static void test_vague_runner_waits(void) {
    struct search_child ch[2];
    struct search_input in;
    const char *const names[2] = {"back", "front"};
    const double means[2][4] = {{0.022, 0.024, 0.023, 0.024}, {0.001, 0.040, 0.002, 0.001}};
    two_swinging(&in, ch, "service", names, means);
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK(R.attr.c[1].half_width >= R.attr.c[1].value);
    CHECK(R.attr.c[0].half_width < R.attr.c[0].value);
    CHECK_MSG(R.verdict == SEARCH_NEED_SAMPLES, "verdict %d: %s", R.verdict, R.reason);
    CHECK_MSG(contains(R.reason, "the runner-up's contribution is measured too loosely"), "%s",
              R.reason);
    in.exhausted = 1;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK_MSG(contains(R.reason, "the runner-up's interval spans more than its value"), "%s",
              R.reason);
}

/* search_series_se: the windows' scatter over √n, widened by t for n − 1 degrees of
 * freedom (12.706 / 1.96 with two values, 2.447 / 1.96 with seven), 0 when it cannot
 * tell. */
static void test_series_se(void) {
    const double two[] = {0.8, 0.9};
    /* sd of {0.8, 0.9} is 0.0707; over √2: 0.05; t with 1 df: 12.706 / 1.96 */
    CHECK_NEAR(search_series_se(two, 2), 0.05 * 12.706 / 1.96, 1e-9);
    const double seven[] = {0.8548, 0.9157, 0.9666, 0.8169, 0.8427, 0.9321, 0.8591};
    double m = 0.0, ss = 0.0;
    for (int i = 0; i < 7; i++) {
        m += seven[i] / 7.0;
    }
    for (int i = 0; i < 7; i++) {
        ss += (seven[i] - m) * (seven[i] - m);
    }
    CHECK_NEAR(search_series_se(seven, 7), sqrt(ss / 6.0 / 7.0) * 2.447 / 1.96, 1e-9);
    const double flat[] = {0.5, 0.5, 0.5};
    CHECK_NEAR(search_series_se(flat, 3), 0.0, 0.0);
    CHECK_NEAR(search_series_se(two, 1), 0.0, 0.0);
    CHECK_NEAR(search_series_se(NULL, 5), 0.0, 0.0);
}

/* The shape of the distribution (issue 24): children judged by how much of their own mass
 * moved against their own baselines (a rare branch whose whole ΔQ moved wins, though it
 * holds little of the time); without baselines, on a choice, by their mass beyond where the
 * node's mass moved. */
static void test_shape(void) {
    struct sim s = {.kind = DQ_NODE_CHOICE, .n = 2};
    s.st[0] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0003, 0, 0, 0, 0.8};
    s.st[1] = (struct sim_stage){SIM_NORMAL, 0.010, 0.0005, 0, 0, 0, 0.2};
    struct sim_result *before = calloc(1, sizeof *before), *now = calloc(1, sizeof *now);
    sim_run(&s, 11, 30, 200, 1, before);
    s.st[1].mean = 0.022; /* the rare branch slows by 12 ms */
    sim_run(&s, 12, 6, 200, 1, now);
    struct search_input in = sim_input(&s, now, SEARCH_SHAPE, "pick");
    for (size_t i = 0; i < 2; i++) {
        now->ch[i].stats.base_observed = before->ch[i].stats.observed;
        now->ch[i].stats.has_baseline = 1;
        now->ch[i].stats.base_mean = before->ch[i].stats.mean;
        now->ch[i].stats.base_variance = before->ch[i].stats.variance;
        now->ch[i].stats.base_n = before->ch[i].stats.n_ok;
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.attr.shape_mode, 1);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 1);
    CHECK(R.attr.c[1].value > 0.95);          /* its whole ΔQ moved */
    CHECK_NEAR(R.attr.c[0].value, 0.0, 0.05); /* the other did not */
    CHECK_MSG(strstr(R.reason, "of s1's mass moved later against its own baseline") != NULL, "%s",
              R.reason);
    /* no baselines: the mass beyond the node's upper 10 % (where its mass moved) */
    for (size_t i = 0; i < 2; i++) {
        now->ch[i].stats.base_observed = NULL;
        now->ch[i].stats.has_baseline = 0;
    }
    in = sim_input(&s, now, SEARCH_SHAPE, "pick");
    in.qta_p = 0.9;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.attr.shape_mode, 2);
    CHECK(R.attr.shape_at > 0.015);
    CHECK_INT(R.verdict, SEARCH_LOCALIZED);
    CHECK_INT(R.child, 1);
    CHECK_MSG(strstr(R.reason, "mass beyond") != NULL, "%s", R.reason);
    /* a sequence without baselines: the level's quantile, as a QTA */
    struct sim q = {.kind = DQ_NODE_SEQUENCE, .n = 2};
    q.st[0] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0003, 0, 0, 0, 0};
    q.st[1] = (struct sim_stage){SIM_NORMAL, 0.002, 0.0003, 0, 0.2, 0.012, 0};
    sim_free(now);
    sim_run(&q, 13, 6, 200, 1, now);
    in = sim_input(&q, now, SEARCH_SHAPE, "seq");
    in.qta_p = 0.9;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK_INT(R.attr.shape_mode, 0);
    CHECK_INT(R.attr.quantile_mode, 1);
    CHECK_INT(R.child, 1);
    sim_free(before);
    sim_free(now);
    free(before);
    free(now);
}

/* Shares are of what rose: children below their baselines hold none, every share lies in
 * [0, 1]; when nothing rose the sentence says so (issue 24: -204 % and 270 % were seen). */
static void test_shares_bounded(void) {
    struct sim s;
    sim_uniform(&s, DQ_NODE_SEQUENCE, 4, SIM_NORMAL, 0.005, 0.0005);
    struct sim_result *res = calloc(1, sizeof *res);
    sim_run(&s, 21, 6, 200, 0, res);
    struct search_input in = sim_input(&s, res, SEARCH_LATENCY, "node");
    static const double base[4] = {0.004, 0.0062, 0.0051, 0.0049}; /* one rose, one fell */
    for (size_t i = 0; i < 4; i++) {
        res->ch[i].stats.has_baseline = 1;
        res->ch[i].stats.base_mean = base[i];
        res->ch[i].stats.base_variance = 0.0005 * 0.0005;
        res->ch[i].stats.base_n = 2000;
    }
    in.stats.has_baseline = 1;
    in.stats.base_mean = 0.0202;
    in.stats.base_variance = 0.001 * 0.001;
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    CHECK(R.attr.baseline_mode);
    double sum = 0.0;
    for (size_t i = 0; i < 4; i++) {
        CHECK(R.attr.c[i].share >= 0.0 && R.attr.c[i].share <= 1.0);
        sum += R.attr.c[i].share;
    }
    CHECK_NEAR(sum, 1.0, 1e-9);
    CHECK(R.attr.c[1].value < 0 && R.attr.c[1].share == 0.0);       /* below its baseline */
    CHECK_MSG(strstr(R.reason, "holds -") == NULL, "%s", R.reason); /* no negative share */
    /* nothing rose */
    for (size_t i = 0; i < 4; i++) {
        res->ch[i].stats.base_mean = 0.0065;
    }
    CHECK_INT(search_evaluate(&in, &P, &R), DQ_OK);
    for (size_t i = 0; i < 4; i++) {
        CHECK_NEAR(R.attr.c[i].share, 0.0, 0);
    }
    CHECK_INT(R.verdict, SEARCH_DIFFUSE);
    CHECK_MSG(strstr(R.reason, "none of its children is above its baseline") != NULL, "%s",
              R.reason);
    sim_free(res);
    free(res);
}

static const struct check_case cases[] = {
    CHECK_CASE(names),           CHECK_CASE(pooling),        CHECK_CASE(infer_problem),
    CHECK_CASE(bad_input),       CHECK_CASE(latency_27),     CHECK_CASE(diffuse),
    CHECK_CASE(need_samples),    CHECK_CASE(baseline),       CHECK_CASE(qta_quantile),
    CHECK_CASE(variance),        CHECK_CASE(tail_waits),     CHECK_CASE(lost),
    CHECK_CASE(divergence),      CHECK_CASE(all_to_finish),  CHECK_CASE(first_to_finish),
    CHECK_CASE(choice),          CHECK_CASE(random_inputs),  CHECK_CASE(batch_means),
    CHECK_CASE(shares_add_up),   CHECK_CASE(runner_up_zero), CHECK_CASE(series_se),
    CHECK_CASE(imprecise_waits), CHECK_CASE(vague_waits),    CHECK_CASE(vague_runner_waits),
    CHECK_CASE(shape),           CHECK_CASE(shares_bounded),
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
