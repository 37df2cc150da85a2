/*
 * test_search_queue.c: where a node saturates: the M/M/c formulas against closed forms,
 * one stage's utilisation by each method, the bottleneck and co-bottlenecks, what an
 * overload step does next, the what-ifs (sojourn growth, stretch, the QTA's failing rate
 * through a diagram), the onset of divergence and the sentences.
 */
#include "check.h"

#include "search_test_util.h"

static void test_mmc(void) {
    /* M/M/1: P(wait) = ρ, L = ρ/(1 − ρ), busy = ρ, Wq/S = ρ/(1 − ρ) */
    CHECK_NEAR(search_erlang_c(1, 0.5), 0.5, 1e-12);
    CHECK_NEAR(search_mmc_busy(1, 0.7), 0.7, 1e-12);
    CHECK_NEAR(search_mmc_l(1, 0.5), 1.0, 1e-12);
    CHECK_NEAR(search_mmc_wait_factor(1, 0.8), 4.0, 1e-9);
    /* M/M/2 at a = 1: C = (1/2·2)/(1 + 1 + 1) = 1/3; P0 = 1/3 */
    CHECK_NEAR(search_erlang_c(2, 1.0), 1.0 / 3.0, 1e-12);
    CHECK_NEAR(search_mmc_busy(2, 0.5), 2.0 / 3.0, 1e-12);
    CHECK_NEAR(search_mmc_l(2, 0.5), 1.0 + (1.0 / 3.0) * 0.5 / 0.5, 1e-12);
    /* the inverses */
    for (int c = 1; c <= 4; c++) {
        for (double rho = 0.1; rho < 0.95; rho += 0.2) {
            CHECK_NEAR(search_mmc_rho_of_busy(c, search_mmc_busy(c, rho)), rho, 1e-9);
            CHECK_NEAR(search_mmc_rho_of_l(c, search_mmc_l(c, rho)), rho, 1e-9);
        }
    }
    CHECK_NEAR(search_erlang_c(2, 3.0), 1.0, 0); /* saturated */
    CHECK(isinf(search_mmc_l(1, 1.0)));
    CHECK_NEAR(search_mmc_rho_of_busy(3, 0.0), 0.0, 0);
    CHECK_NEAR(search_mmc_rho_of_busy(3, 1.0), 1.0, 0);
}

static struct search_stage_obs obs_of(double lambda, double busy, int servers) {
    struct search_stage_obs o = {.window_s = 1.0,
                                 .lambda = lambda,
                                 .lambda_se = 2.0,
                                 .busy = busy,
                                 .busy_se = 0.01,
                                 .completions = lambda * 10,
                                 .windows = 10,
                                 .w = 0.010,
                                 .w_se = 0.0005,
                                 .quiet_w = NAN,
                                 .quiet_se = NAN,
                                 .quiet_rate = NAN,
                                 .servers = servers,
                                 .lambda_root = 200.0};
    return o;
}

static void test_stage(void) {
    struct search_stage st;
    memset(&st, 0, sizeof st);
    /* one server assumed: ρ is the busy fraction, S = busy time / completions */
    struct search_stage_obs o = obs_of(100.0, 0.8, 0);
    search_stage_estimate(&o, 1.96, &st);
    CHECK_STR(st.method, "busy");
    CHECK_STR(st.servers_from, "assumed");
    CHECK_INT(st.servers, 1);
    CHECK_NEAR(st.rho, 0.8, 1e-12);
    CHECK_NEAR(st.rho_hi - st.rho_lo, 2 * 1.96 * 0.01, 1e-12);
    CHECK_NEAR(st.service, 0.008, 1e-12);
    CHECK_NEAR(st.sat, 125.0, 1e-9);
    CHECK_NEAR(st.share, 0.5, 1e-12);
    CHECK_NEAR(st.sat_root, 250.0, 1e-9);
    /* a pool inferred from quiet windows: λ·S over the busy fraction */
    o = obs_of(100.0, 0.4, 0);
    o.quiet_w = 0.012, o.quiet_se = 0.0005, o.quiet_rate = 20.0;
    search_stage_estimate(&o, 1.96, &st);
    CHECK_STR(st.servers_from, "inferred");
    CHECK_INT(st.servers, 3); /* 1.2 / 0.4 = 3 */
    CHECK_STR(st.method, "baseline");
    CHECK_NEAR(st.rho, 100.0 * 0.012 / 3, 1e-12);
    /* configured servers, quiet windows at too high a rate: M/M/c read twice */
    o = obs_of(150.0, 0.6, 2);
    o.quiet_w = 0.008, o.quiet_se = 0.0005, o.quiet_rate = 100.0;
    search_stage_estimate(&o, 1.96, &st);
    CHECK_STR(st.servers_from, "config");
    CHECK_STR(st.method, "mmc");
    CHECK(isfinite(st.rho_busy) && isfinite(st.rho_little));
    CHECK_NEAR(st.rho, 0.5 * (st.rho_busy + st.rho_little), 1e-12);
    CHECK(st.rho_lo <= st.rho && st.rho <= st.rho_hi && st.rho_hi <= 1.0);
    CHECK_NEAR(st.rho_busy, search_mmc_rho_of_busy(2, 0.6), 1e-12);
    CHECK_NEAR(st.rho_little, search_mmc_rho_of_l(2, 150.0 * 0.010), 1e-12);
}

static void stage_at(struct search_stage *st, const char *name, double rho, double hw,
                     double sat_root) {
    memset(st, 0, sizeof *st);
    snprintf(st->name, sizeof st->name, "%s", name);
    st->rho = rho;
    st->rho_lo = rho - hw;
    st->rho_hi = rho + hw;
    st->sat_root = sat_root;
    st->servers = 1;
    st->method = "busy";
    st->servers_from = "assumed";
}

static void test_observed_servers(void) {
    /* no overtaking, or too little of it: nothing shown */
    CHECK_INT(search_servers_observed(0, 1000, 100, 0.01, 0.5), 0);
    CHECK_INT(search_servers_observed(2, 1000, 100, 0.01, 0.5), 0);
    CHECK_INT(search_servers_observed(5, 1000, 100, 0.01, 0.5), 0); /* under 1 % */
    /* overtaking: at least 2, at least the mean number in the station while busy */
    CHECK_INT(search_servers_observed(50, 1000, 100, 0.01, 0.9), 2);  /* λW/B = 1.1 */
    CHECK_INT(search_servers_observed(50, 1000, 400, 0.01, 0.95), 4); /* λW/B = 4.2 */
    /* a stage that shows it is a pool: used, and said, unless configured */
    struct search_stage st;
    memset(&st, 0, sizeof st);
    struct search_stage_obs o = obs_of(150.0, 0.6, 0);
    o.servers_observed = 3;
    search_stage_estimate(&o, 1.96, &st);
    CHECK_INT(st.servers, 3);
    CHECK_STR(st.servers_from, "observed");
    CHECK_STR(st.method, "mmc");
    char buf[300];
    search_stage_words(&st, buf, sizeof buf);
    CHECK(strstr(buf, "3 servers observed") != NULL);
    o.servers = 2; /* configured wins */
    search_stage_estimate(&o, 1.96, &st);
    CHECK_INT(st.servers, 2);
    CHECK_STR(st.servers_from, "config");
}

static void test_weigh(void) {
    struct search_stage st[3];
    struct search_overload r = {.n = 3, .st = st, .lambda_root = 100.0};
    stage_at(&st[0], "a", 0.3, 0.02, 300);
    stage_at(&st[1], "b", 0.8, 0.02, 125);
    stage_at(&st[2], "c", 0.5, 0.02, 200);
    CHECK_INT(search_overload_weigh(&r, 1.96), DQ_OK);
    CHECK_INT(r.bottleneck, 1);
    CHECK_INT(r.n_co, 0);
    CHECK_NEAR(r.saturation, 125, 0);
    CHECK_STR(search_overload_at("root", "root", &r), "b");
    /* c close to b (its ρ within SEARCH_Z standard errors of the difference): co */
    stage_at(&st[2], "c", 0.78, 0.02, 120);
    CHECK_INT(search_overload_weigh(&r, 1.96), DQ_OK);
    CHECK_INT(r.n_co, 1);
    CHECK_INT(st[2].co, 1);
    CHECK_NEAR(r.saturation, 120, 0); /* the first of the two to saturate */
    CHECK_STR(search_overload_at("root", "focus", &r), "focus");
    r.first_current = 2; /* b is of a level above: the verdict sits at the node */
    CHECK_STR(search_overload_at("root", "focus", &r), "root");
    r.first_current = 0;
    /* nothing to weigh */
    st[0].rho = st[1].rho = st[2].rho = NAN;
    CHECK_INT(search_overload_weigh(&r, 1.96), DQ_ESTATE);
}

static void test_next(void) {
    struct search_stage st[2];
    struct search_overload r = {.n = 2, .st = st, .lambda_root = 100.0};
    stage_at(&st[0], "a", 0.3, 0.02, 300);
    stage_at(&st[1], "b", 0.8, 0.02, 125);
    search_overload_weigh(&r, 1.96);
    CHECK_INT(search_overload_next(&r, 0), SEARCH_OV_VERDICT); /* a leaf */
    st[1].has_children = 1;
    CHECK_INT(search_overload_next(&r, 0), SEARCH_OV_DESCEND);
    r.first_current = 2; /* the bottleneck is of a level above: no descent */
    CHECK_INT(search_overload_next(&r, 0), SEARCH_OV_VERDICT);
    r.first_current = 0;
    st[1].rho_lo = 0.70, st[1].rho_hi = 0.90; /* ±0.10: too loose to name */
    CHECK_INT(search_overload_next(&r, 0), SEARCH_OV_WAIT);
    CHECK_INT(search_overload_next(&r, 1), SEARCH_OV_DESCEND); /* out of time */
}

static void test_what_if(void) {
    /* M/M/1 at ρ 0.5: W = 2S; at 0.75: W = 4S: the sojourn doubles */
    struct search_stage st;
    stage_at(&st, "a", 0.5, 0.01, 0);
    st.service = 0.004;
    st.w = 0.008;
    CHECK_NEAR(search_sojourn_growth(&st, 0.75), 2.0, 1e-9);
    CHECK_NEAR(search_sojourn_growth(&st, 0.5), 1.0, 1e-9);
    CHECK(isinf(search_sojourn_growth(&st, 1.0)));
    struct dq *d = NULL, *s = NULL;
    CHECK_INT(dq_wait(-1, 64, 0.004, &d), DQ_OK); /* all mass at 4 ms (bins of 0.5 ms) */
    CHECK_INT(search_stretch(d, 2.0, &s), DQ_OK);
    /* within a bin of 8 ms (the stretch moves bin indices: bin i's mass is at (i + 1)·w) */
    CHECK_NEAR(dq_cdf_at(s, 0.0070), 0.0, 1e-12);
    CHECK_NEAR(dq_cdf_at(s, 0.0080), 1.0, 1e-12);
    CHECK_NEAR(dq_lost(s), 0.0, 1e-12);
    dq_destroy(s);
    CHECK_INT(search_stretch(d, 100.0, &s), DQ_OK); /* past the horizon: lost */
    CHECK_NEAR(dq_lost(s), 1.0, 1e-12);
    dq_destroy(s);
    dq_destroy(d);
}

static void test_qta_rate(void) {
    /* root = a -> b, each an M/M/1 stage at ρ 0.5 with S = 2 ms (W = 4 ms, all of it at
     * 4 ms here); root takes 100/s and saturates at 250/s. The root's QTA wants 90 %
     * within 12 ms: it holds today (8 ms) and fails once both sojourns pass 6 ms. */
    const char *text = "root = a -> b;";
    struct dq_diagram *g = NULL;
    CHECK_INT(dq_diagram_parse(text, strlen(text), &g, NULL), DQ_OK);
    struct dq_eval *ev = NULL;
    CHECK_INT(dq_eval_create(g, -1, 256, &ev), DQ_OK);
    struct search_stage st[2];
    struct dq *oa = NULL, *ob = NULL;
    CHECK_INT(dq_wait(-1, 256, 0.004, &oa), DQ_OK);
    CHECK_INT(dq_wait(-1, 256, 0.004, &ob), DQ_OK);
    stage_at(&st[0], "a", 0.5, 0.01, 250);
    stage_at(&st[1], "b", 0.5, 0.01, 250);
    st[0].service = st[1].service = 0.002;
    st[0].w = st[1].w = 0.004;
    st[0].obs = oa;
    st[1].obs = ob;
    struct search_overload r = {.n = 2, .st = st, .lambda_root = 100.0, .saturation = 250.0};
    struct dq_qta q = {.n = 1, .t = {0.012}, .p = {0.9}, .max_lost = 0.05};
    double rate = search_qta_rate(ev, dq_diagram_find(g, "root"), &r, &q);
    /* sojourn 6 ms at ρ with 2/(1 − ρ)·… : W = S/(1 − ρ) = 6 ms → ρ = 2/3 → 133/s */
    CHECK(isfinite(rate));
    CHECK(rate > 100.0 && rate < 250.0);
    CHECK_NEAR(rate, 400.0 / 3.0, 10.0);
    q.t[0] = 0.007; /* already failing at today's 8 ms */
    CHECK_NEAR(search_qta_rate(ev, dq_diagram_find(g, "root"), &r, &q), 100.0, 0);
    r.saturation = NAN;
    CHECK(isnan(search_qta_rate(ev, 0, &r, &q)));
    dq_destroy(oa);
    dq_destroy(ob);
    dq_eval_destroy(ev);
    dq_diagram_destroy(g);
}

static void test_onset(void) {
    double rate[8] = {150, 100, 180, 120, 200, 110, 170, 190};
    int div[8] = {0, 0, 1, 0, 1, 0, 1, 1};
    CHECK_NEAR(search_divergence_onset(rate, div, 8), 170, 0);
    /* sorted in place */
    CHECK_NEAR(rate[0], 100, 0);
    CHECK_NEAR(rate[7], 200, 0);
    double r2[4] = {100, 120, 140, 160};
    int d2[4] = {0, 1, 0, 1}; /* two diverge: too few */
    CHECK(isnan(search_divergence_onset(r2, d2, 4)));
}

static void test_words(void) {
    struct search_stage st[2];
    struct search_overload r = {
        .n = 2, .st = st, .lambda_root = 100.0, .qta_rate = NAN, .onset = NAN};
    stage_at(&st[0], "parse", 0.3, 0.02, 300);
    stage_at(&st[1], "price", 0.85, 0.03, 118);
    st[1].service = 0.0085;
    st[1].lambda = 100.0;
    search_overload_weigh(&r, 1.96);
    char buf[600];
    search_stage_words(&st[1], buf, sizeof buf);
    CHECK_STR(buf, "price: ρ 0.85 (0.82 – 0.88; busy time, 1 server assumed), service 8.5 ms, "
                   "100/s");
    search_overload_reason("pipeline", "pipeline", &r, buf, sizeof buf);
    CHECK(strstr(buf, "overload at pipeline: the bottleneck is price: ρ 0.85") == buf);
    CHECK(strstr(buf, "pipeline takes 100/s and saturates at 118/s (1.18× today)") != NULL);
    r.qta_rate = 105.0;
    search_overload_reason("pipeline", "pipeline", &r, buf, sizeof buf);
    CHECK(strstr(buf, "its QTA fails from 105/s") != NULL);
    search_overload_reason("pipeline", "pipeline", &r, buf, 20); /* never overrun */
    CHECK(strlen(buf) < 20);
}

static const struct check_case cases[] = {
    CHECK_CASE(mmc),      CHECK_CASE(stage), CHECK_CASE(observed_servers),
    CHECK_CASE(weigh),    CHECK_CASE(next),  CHECK_CASE(what_if),
    CHECK_CASE(qta_rate), CHECK_CASE(onset), CHECK_CASE(words),
};

CHECK_MAIN(cases)
