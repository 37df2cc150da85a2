/*
 * test_search_check.c: the node check (search_check) and the load tests of search/: each
 * problem kind found against a baseline (and not found without a change), the absolute
 * tests without one, a QTA first whatever its z, the windows' rank test, the tail beyond
 * the baseline's 99.9 % point and its largest instance, the far tail beyond the baseline's
 * fitted own (and no false alarm from the same law, light-tailed or heavy), Spearman's z
 * and search_load_rose.
 */
#include "check.h"

#include "search_test_util.h"

static struct search_params P;

/* Statistics of `windows` windows of n ok instances each (mean m s, sd s s, lost fraction
 * lost), with per-window means drawn around m with sd `wsd` (0: all equal). */
static void windows_of(struct search_stats *st, double *means, int *n_means, int windows, int n,
                       double m, double sd, double lost, double wsd, uint64_t seed) {
    struct srng r = {seed};
    search_stats_init(st);
    for (int w = 0; w < windows; w++) {
        double wm = m + wsd * srng_normal(&r);
        uint64_t fa = (uint64_t)floor(lost * n + 0.5);
        search_stats_add_window(st, (uint64_t)n - fa, fa, 0, wm, sd * sd);
        if (means) {
            means[(*n_means)++] = wm;
        }
    }
}

struct fixture {
    struct search_stats recent, base;
    double rm[SEARCH_MAX_WINDOW_MEANS], bm[SEARCH_MAX_WINDOW_MEANS];
    struct search_check_input in;
    struct search_check c;
};

static void fixture(struct fixture *f, double rmean, double rsd, double rlost, int with_base) {
    memset(f, 0, sizeof *f);
    windows_of(&f->recent, f->rm, &f->in.n_recent_means, 5, 100, rmean, rsd, rlost, 0.0002, 1);
    if (with_base) {
        windows_of(&f->base, f->bm, &f->in.n_base_means, 30, 100, 0.010, 0.002, 0.0, 0.0002, 2);
    } else {
        search_stats_init(&f->base);
    }
    f->in.recent = &f->recent;
    f->in.baseline = &f->base;
    f->in.recent_means = f->rm;
    f->in.base_means = f->bm;
    f->in.zt = search_z_looks(3);
}

static int has(const struct search_check *c, enum search_problem k) {
    for (int i = 0; i < c->n; i++) {
        if (c->p[i].kind == k) {
            return 1;
        }
    }
    return 0;
}

static void test_z(void) {
    CHECK_NEAR(search_z_of_p(0.5 * erfc(3.0 / sqrt(2.0))), 3.0, 1e-9);
    CHECK_NEAR(search_z_of_p(0.025), 1.959964, 1e-5);
    CHECK_NEAR(search_z_of_p(0.0), 40.0, 0);
    CHECK_NEAR(search_z_of_p(0.7), 0.0, 0);
    CHECK_NEAR(search_z_looks(1), SEARCH_Z, 1e-9);
    CHECK_NEAR(search_z_looks(0), SEARCH_Z, 1e-9);
    /* three looks share the one-look rate: P(Z > z3) = P(Z > 3) / 3 */
    double z3 = search_z_looks(3);
    CHECK_NEAR(0.5 * erfc(z3 / sqrt(2.0)), 0.5 * erfc(3.0 / sqrt(2.0)) / 3.0, 1e-12);
    CHECK(z3 > SEARCH_Z);
}

static void test_nothing(void) {
    struct fixture f;
    fixture(&f, 0.010, 0.002, 0.0, 1);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 0);
    CHECK_INT(f.c.has_baseline, 1);
    CHECK_INT(f.c.has_qta, 0);
    CHECK_INT(f.c.has_calculated, 0);
    CHECK_INT(f.c.recent.windows, 5);
    CHECK(f.c.recent.observed == NULL && f.c.baseline.observed == NULL);
    /* 29 windows are no baseline */
    struct search_stats b29;
    windows_of(&b29, NULL, NULL, 29, 100, 0.010, 0.002, 0.0, 0, 3);
    f.in.baseline = &b29;
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.has_baseline, 0);
    /* absent now: nothing to judge */
    struct search_stats none;
    search_stats_init(&none);
    f.in.recent = &none;
    f.in.baseline = &f.base;
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 0);
}

static void test_latency(void) {
    struct fixture f;
    fixture(&f, 0.015, 0.002, 0.0, 1);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 1);
    CHECK_INT(f.c.p[0].kind, SEARCH_LATENCY);
    CHECK(f.c.p[0].z >= f.c.zt);
    CHECK_MSG(strstr(f.c.p[0].why, "mean 15") == f.c.p[0].why &&
                  strstr(f.c.p[0].why, " ms before") != NULL,
              "%s", f.c.p[0].why);
    /* significant but smaller than half a baseline sd (1 ms): not a problem */
    fixture(&f, 0.0105, 0.002, 0.0, 1);
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_LATENCY));
}

static void test_rank(void) {
    /* windows that scatter (a queue's bursts) leave the pooled means' test short of the
     * threshold; the ranks still see that every window now is slower than every window
     * before (the most 5 windows against 30 can say: z 3.54) */
    struct fixture f;
    memset(&f, 0, sizeof f);
    search_stats_init(&f.base);
    search_stats_init(&f.recent);
    for (int w = 0; w < 30; w++) {
        double m = w % 2 ? 0.014 : 0.006;
        search_stats_add_window(&f.base, 100, 0, 0, m, 0.002 * 0.002);
        f.bm[f.in.n_base_means++] = m;
    }
    static const double now[5] = {0.0145, 0.016, 0.019, 0.022, 0.025};
    for (int w = 0; w < 5; w++) {
        search_stats_add_window(&f.recent, 100, 0, 0, now[w], 0.002 * 0.002);
        f.rm[f.in.n_recent_means++] = now[w];
    }
    f.in.recent = &f.recent;
    f.in.baseline = &f.base;
    f.in.recent_means = f.rm;
    f.in.base_means = f.bm;
    f.in.zt = search_z_looks(3);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 1);
    CHECK_INT(f.c.p[0].kind, SEARCH_LATENCY);
    CHECK_NEAR(f.c.p[0].z, 75.0 / sqrt(450.0), 1e-9); /* (u − n1·n2/2) / sd, u = 150 */
    /* the same without the windows' means: the pooled test alone stays below */
    f.in.n_recent_means = f.in.n_base_means = 0;
    struct search_check c2;
    search_check(&f.in, &P, &c2);
    CHECK_INT(c2.n, 0);
}

static void test_lost(void) {
    struct fixture f;
    fixture(&f, 0.010, 0.002, 0.10, 1);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 1);
    CHECK_INT(f.c.p[0].kind, SEARCH_LOST);
    CHECK(strstr(f.c.p[0].why, "against 0 % before") != NULL);
    /* no baseline: against the threshold (1 %) */
    fixture(&f, 0.010, 0.002, 0.10, 0);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.has_baseline, 0);
    CHECK_INT(f.c.n, 1);
    CHECK_INT(f.c.p[0].kind, SEARCH_LOST);
    CHECK(strstr(f.c.p[0].why, "more than 1 %") != NULL);
    /* below the threshold: nothing, with or without a baseline */
    fixture(&f, 0.010, 0.002, 0.005, 0);
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 0);
}

static void test_variance(void) {
    struct fixture f;
    fixture(&f, 0.010, 0.005, 0.0, 1);
    search_check(&f.in, &P, &f.c);
    CHECK(has(&f.c, SEARCH_VARIANCE));
    CHECK(!has(&f.c, SEARCH_LATENCY));
    /* a node that grew in scale keeps its relative spread: latency, not variance */
    fixture(&f, 0.020, 0.004, 0.0, 1);
    search_check(&f.in, &P, &f.c);
    CHECK(has(&f.c, SEARCH_LATENCY));
    CHECK(!has(&f.c, SEARCH_VARIANCE));
}

static void test_qta_first(void) {
    /* a QTA of 99 % within 12 ms, a node now at mean 15 ms: both a latency problem (huge
     * z) and a QTA hazard; the broken requirement is listed first */
    struct fixture f;
    fixture(&f, 0.015, 0.002, 0.0, 1);
    struct dq *obs = NULL;
    CHECK_INT(dq_uniform(-2, 256, 0.013, 0.017, &obs), DQ_OK);
    f.recent.observed = obs;
    struct dq_qta q = {.n = 1, .t = {0.012}, .p = {0.99}, .max_lost = 0.01};
    f.in.qta = &q;
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.has_qta, 1);
    CHECK(f.c.n >= 2);
    CHECK_INT(f.c.p[0].kind, SEARCH_QTA);
    CHECK(strstr(f.c.p[0].why, "the QTA wants 99 % within 12 ms") != NULL);
    CHECK(has(&f.c, SEARCH_LATENCY));
    /* met: no QTA problem */
    q.t[0] = 0.020;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_QTA));
    dq_destroy(obs);
}

static void test_tail(void) {
    /* the same bulk, but 1 % of instances 200 ms slow now against none before */
    struct fixture f;
    fixture(&f, 0.010, 0.002, 0.0, 1);
    struct dq *b = NULL, *r = NULL;
    double pdf_b[256] = {0}, pdf_r[256] = {0};
    for (int i = 36; i < 44; i++) {
        pdf_b[i] = 1.0 / 8.0;
        pdf_r[i] = 0.99 / 8.0;
    }
    pdf_r[200] = 0.01;
    CHECK_INT(dq_from_pdf(-2, 256, pdf_b, &b), DQ_OK);
    CHECK_INT(dq_from_pdf(-2, 256, pdf_r, &r), DQ_OK);
    f.base.observed = b;
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(has(&f.c, SEARCH_VARIANCE));
    int found = 0;
    for (int i = 0; i < f.c.n; i++) {
        found |=
            f.c.p[i].kind == SEARCH_VARIANCE && strstr(f.c.p[i].why, "rare, very slow") != NULL;
    }
    CHECK(found);
    /* the same ΔQ on both sides: no tail problem */
    f.recent.observed = b;
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 0);
    dq_destroy(b);
    dq_destroy(r);
}

/* A rare erratic part seen for 20 s against a 60-s baseline (6000 instances against 18000):
 * seven passes beyond every baseline instance, where the baseline's far tail holds a few
 * stragglers of its own (four beyond the bulk, one beyond its 99.99 % point). Beyond that
 * point the count is 7 against 1 (z 3.4, short of the tail's threshold); beyond the
 * baseline's largest it is 7 against none: the chance that the seven largest of both sides
 * all fall on the recent side is 0.25^7 (z 3.8). */
static void test_tail_largest(void) {
    struct fixture f;
    memset(&f, 0, sizeof f);
    windows_of(&f.recent, f.rm, &f.in.n_recent_means, 60, 100, 0.010, 0.002, 0.0, 0.0002, 1);
    windows_of(&f.base, NULL, NULL, 180, 100, 0.010, 0.002, 0.0, 0.0002, 2);
    f.in.recent = &f.recent;
    f.in.baseline = &f.base;
    f.in.recent_means = f.rm;
    f.in.base_means = f.bm;
    f.in.zt = search_z_looks(3);
    double pdf_b[256] = {0}, pdf_r[256] = {0};
    for (int i = 36; i < 44; i++) {
        pdf_b[i] = (1.0 - 4.0 / 18000.0) / 8.0;
        pdf_r[i] = (1.0 - 7.0 / 6000.0) / 8.0;
    }
    pdf_b[50] = pdf_b[55] = pdf_b[60] = pdf_b[65] = 1.0 / 18000.0;
    for (int k = 0; k < 7; k++) {
        pdf_r[100 + 15 * k] = 1.0 / 6000.0;
    }
    struct dq *b = NULL, *r = NULL;
    CHECK_INT(dq_from_pdf(-2, 256, pdf_b, &b), DQ_OK);
    CHECK_INT(dq_from_pdf(-2, 256, pdf_r, &r), DQ_OK);
    f.base.observed = b;
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    int found = 0;
    for (int i = 0; i < f.c.n; i++) {
        found |= f.c.p[i].kind == SEARCH_VARIANCE &&
                 strstr(f.c.p[i].why, "the baseline's largest, of 18000") != NULL;
    }
    CHECK(found);
    /* six: 0.25^6 (z 3.5) is short of the threshold of three levels: nothing */
    dq_destroy(r);
    r = NULL;
    pdf_r[190] = 0;
    for (int i = 36; i < 44; i++) {
        pdf_r[i] = (1.0 - 6.0 / 6000.0) / 8.0;
    }
    CHECK_INT(dq_from_pdf(-2, 256, pdf_r, &r), DQ_OK);
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_VARIANCE));
    dq_destroy(b);
    dq_destroy(r);
}

/* A standard normal by Box–Muller (srng_normal, a sum of uniforms, has no tail past 6). */
static double normal_of(struct srng *g) {
    double u = srng_unit(g), v = srng_unit(g);
    return sqrt(-2.0 * log1p(-u)) * cos(6.283185307179586 * v);
}

/* n draws of a law: 0 a sum of twelve exponentials of 2 ms (a light tail, as a request
 * through twelve steps), 1 a log-normal with median 20 ms and σ 1 (a heavy one), 2 an
 * exponential of 4 ms with a rare slow mode (1 pass in 5,000 takes 200–400 ms), 3 a sum of
 * twelve exponentials of 2 ms where a window in twenty stalls: its first five passes wait
 * about 100 ms more (windows of 300); plus the `extra` values given. */
static struct dq *law_dq_max(int law, int n, uint64_t seed, const double *extra, int n_extra,
                             double *maxima) {
    struct srng g = {seed};
    double *x = malloc((size_t)(n + n_extra) * sizeof *x);
    double stall = 0.0;
    for (int i = 0; i < n; i++) {
        double v = 0.0;
        if (law == 0 || law == 3) {
            for (int k = 0; k < 12; k++) {
                v += srng_exp(&g, 0.002);
            }
            if (law == 3 && i % 300 == 0) {
                stall = srng_unit(&g) < 0.05 ? srng_exp(&g, 0.100) : 0.0;
            }
            v += law == 3 && i % 300 < 5 ? stall : 0.0;
        } else if (law == 1) {
            v = 0.020 * exp(normal_of(&g));
        } else {
            v = srng_unit(&g) < 2e-4 ? 0.200 + 0.200 * srng_unit(&g) : srng_exp(&g, 0.004);
        }
        x[i] = v;
        if (maxima) { /* each window's largest, as its bin's left edge (0.25 ms bins) */
            double e = floor(v / 0.00025) * 0.00025; /* its bin's left edge */
            maxima[i / 300] = i % 300 == 0 || e > maxima[i / 300] ? e : maxima[i / 300];
        }
    }
    for (int i = 0; i < n_extra; i++) {
        x[n + i] = extra[i];
    }
    struct dq *d = NULL;
    CHECK_INT(dq_from_samples(-2, 4096, x, (size_t)(n + n_extra), 0, 0, &d), DQ_OK);
    free(x);
    return d;
}

static struct dq *law_dq(int law, int n, uint64_t seed, const double *extra, int n_extra) {
    return law_dq_max(law, n, seed, extra, n_extra, NULL);
}

/* 1 when the check found a tail problem (`fitted`: the far tail's level in particular). */
static int tail_found(const struct search_check *c, int fitted) {
    for (int i = 0; i < c->n; i++) {
        if (c->p[i].kind == SEARCH_VARIANCE && strstr(c->p[i].why, "rare, very slow") &&
            (!fitted || c->p[i].far)) {
            return 1;
        }
    }
    return 0;
}

/* The same moments on both sides (only the tail levels can speak), 12000 instances in the
 * baseline (40 windows of 300) and 6000 now (20); wsd: the windows' means scatter. */
static void far_fixture_n(struct fixture *f, double wsd, int recent_windows) {
    memset(f, 0, sizeof *f);
    windows_of(&f->recent, f->rm, &f->in.n_recent_means, recent_windows, 300, 0.024, 0.007, 0.0,
               0.0004, 1);
    windows_of(&f->base, f->bm, &f->in.n_base_means, 40, 300, 0.024, 0.007, 0.0, wsd, 2);
    f->in.recent = &f->recent;
    f->in.baseline = &f->base;
    f->in.recent_means = f->rm;
    f->in.base_means = f->bm;
    f->in.zt = search_z_looks(3);
}

static void far_fixture(struct fixture *f, double wsd) {
    far_fixture_n(f, wsd, 20);
}

/* Alarms of the check in `draws` draws of `law` on both sides (each a fresh baseline and
 * recent range, with the recent windows' largest passes, as dqd gives them). */
static int far_alarms(int law, int draws, int suggest) {
    struct fixture f;
    far_fixture(&f, 0.0004);
    if (suggest) {
        f.in.zt = SEARCH_Z_SUGGESTIVE;
        f.in.suggest = 1;
    }
    double maxima[20];
    f.in.recent_max = maxima;
    f.in.n_recent_max = 20;
    int alarms = 0;
    for (uint64_t k = 0; k < (uint64_t)draws; k++) {
        struct dq *b = law_dq(law, 12000, 1000 + 2 * k, NULL, 0);
        struct dq *r = law_dq_max(law, 6000, 1001 + 2 * k, NULL, 0, maxima);
        f.base.observed = b;
        f.recent.observed = r;
        search_check(&f.in, &P, &f.c);
        alarms += tail_found(&f.c, 1);
        dq_destroy(b);
        dq_destroy(r);
    }
    return alarms;
}

/* The draws of each law in the false-alarm counts of the far tail: 200 (the bounds scale);
 * 50 under AddressSanitizer, where the same paths run 2.4 times slower and the counts are
 * the normal build's to check (make test under 8 minutes, issue 28) */
#ifdef __SANITIZE_ADDRESS__
#define FAR_DRAWS 50
#else
#define FAR_DRAWS 200
#endif

/*
 * The far tail: a rare erratic step seen for 20 s against a 40-s baseline. Four passes of
 * 150–300 ms where the baseline (twelve 2-ms steps: its largest near 74 ms) never went:
 * beyond its largest the count alone (0.33^4, z 2.2) cannot tell, but the baseline's own
 * tail, fitted beyond its 99 % point and taken cautiously, expects 0.03 passes beyond
 * 180 ms where three came: found; three are found too. Two such passes are not enough
 * (three at least), nor four passes just beyond the baseline's reach (the fit expects
 * some), nor three of 300–400 ms among as many instances as the baseline's (the count
 * beyond its largest, 0.5^3, z 1.2, must say at least z 1.5). With the recent windows'
 * largest passes given, passes count by window: four in one window (a burst) are one,
 * four in four windows are found. A baseline whose windows scatter (its effective count
 * below its count) weighs instances as fewer, but not windows. Then 200 draws of each law
 * on both sides (DQ_FAR_DRAWS for more): a light tail, a heavy one (log-normal), stalls of
 * five passes in one window in twenty: at most one alarm each (none seen in 2,000); a rare
 * slow mode that a baseline may miss (1 pass in 5,000): at most 4 (19 in 2,000: three of
 * them in the recent range and none in the baseline's 12,000, which the fit's assumption
 * cannot tell from a fault, and the gate does not stop at these sizes).
 */
static void test_tail_far(void) {
    struct fixture f;
    far_fixture(&f, 0.0004);
    struct dq *b = law_dq(0, 12000, 7, NULL, 0);
    const double slow[] = {0.150, 0.180, 0.220, 0.300};
    struct dq *r = law_dq(0, 5996, 8, slow, 4);
    f.base.observed = b;
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(tail_found(&f.c, 1));
    /* the best of its counts: the three largest, beyond 180 ms (and the sentence counts
     * every pass beyond that point) */
    CHECK(f.c.n > 0 && strstr(f.c.p[0].why, "3 instances beyond 180 ms") != NULL);
    CHECK(f.c.n > 0 && f.c.p[0].looks == 4);
    dq_destroy(r);
    r = law_dq(0, 5998, 8, slow, 2); /* two: too few to speak of passes */
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 0));
    dq_destroy(r);
    r = law_dq(0, 5997, 8, slow, 3); /* three: found (beyond the largest, z 1.8) */
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(tail_found(&f.c, 1));
    dq_destroy(r);
    /* three in as many instances as the baseline's: beyond its largest alone, 0.5^3 (z 1.2)
     * does not say as much, and the fit's word is not taken alone */
    far_fixture_n(&f, 0.0004, 40);
    f.base.observed = b;
    const double far3[] = {0.300, 0.350, 0.400};
    r = law_dq(0, 11997, 8, far3, 3);
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 0));
    dq_destroy(r);
    far_fixture(&f, 0.0004);
    f.base.observed = b;
    const double near[] = {0.080, 0.080, 0.081, 0.082};
    r = law_dq(0, 5996, 8, near, 4); /* just beyond its reach: the fit expects some */
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 1));
    dq_destroy(r);
    /* by window: the four slow passes in one window, then in four */
    r = law_dq(0, 5996, 8, slow, 4);
    f.recent.observed = r;
    double maxima[20];
    for (int w = 0; w < 20; w++) {
        maxima[w] = 0.050;
    }
    maxima[3] = 0.300;
    f.in.recent_max = maxima;
    f.in.n_recent_max = 20;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 1));
    maxima[7] = 0.150, maxima[11] = 0.180, maxima[15] = 0.220;
    search_check(&f.in, &P, &f.c);
    CHECK(tail_found(&f.c, 1));
    f.in.recent_max = NULL;
    f.in.n_recent_max = 0;
    dq_destroy(r);
    /* a baseline whose windows scatter (its effective count 0.63 of its count): counted by
     * instances, the count of three among the four passes weighs as 1.9, under the 2 a
     * count needs; counted by windows (as dqd counts them: a burst is one), four windows
     * tell */
    far_fixture(&f, 0.0006);
    printf("  scattered baseline: effective share %.2f\n",
           search_stats_effective_n(&f.base) / (double)search_stats_instances(&f.base));
    CHECK(search_stats_effective_n(&f.base) < 0.9 * (double)search_stats_instances(&f.base));
    f.base.observed = b;
    r = law_dq(0, 5996, 8, slow, 4);
    f.recent.observed = r;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 1));
    f.in.recent_max = maxima;
    f.in.n_recent_max = 20;
    search_check(&f.in, &P, &f.c);
    CHECK(tail_found(&f.c, 1));
    dq_destroy(r);
    dq_destroy(b);
    /* DQ_FAR_DRAWS=2000 for the figures of docs/diagnosis.md (the bounds scale) */
    const char *e = getenv("DQ_FAR_DRAWS");
    int draws = e && atoi(e) > 0 ? atoi(e) : FAR_DRAWS;
    for (int law = 0; law < 4; law++) {
        int alarms = far_alarms(law, draws, 0);
        printf("  far tail, law %d: %d alarm(s) in %d draws of the same law\n", law, alarms, draws);
        CHECK(alarms <= (law < 2 ? 1 : 4) * (draws + 199) / 200);
    }
}

/*
 * A suggestive check (its problem starts a watch of 20 windows, never a verdict) weighs the
 * far tail's 2nd largest window too, without the gate: two passes of 220 and 300 ms in two
 * windows, which the check does not count (above), are within reach; the problem names the
 * point its passes lie beyond (the baseline's largest, which the search counts the
 * investigated node's passes beyond). The same laws on both sides start a watch now and
 * then (a healthy diagnosis 20 windows longer): at most 1 in 10 draws of each (2,000 draws:
 * none for the light and heavy tails, 0.55 % for the rare slow mode, 5.5 % for stalls).
 */
static void test_tail_far_suggestive(void) {
    struct fixture f;
    far_fixture(&f, 0.0004);
    struct dq *b = law_dq(0, 12000, 7, NULL, 0);
    const double slow[] = {0.220, 0.300};
    struct dq *r = law_dq(0, 5998, 8, slow, 2);
    f.base.observed = b;
    f.recent.observed = r;
    double maxima[20];
    for (int w = 0; w < 20; w++) {
        maxima[w] = 0.050;
    }
    maxima[4] = 0.220, maxima[13] = 0.300;
    f.in.recent_max = maxima;
    f.in.n_recent_max = 20;
    f.in.zt = SEARCH_Z_SUGGESTIVE;
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 1));
    f.in.suggest = 1;
    search_check(&f.in, &P, &f.c);
    CHECK(tail_found(&f.c, 1));
    CHECK(f.c.n > 0 && f.c.p[0].beyond > 0.040 && f.c.p[0].beyond < 0.220);
    maxima[13] = 0.050; /* one pass of 220 ms: not far enough beyond this law's fitted tail */
    search_check(&f.in, &P, &f.c);
    CHECK(!tail_found(&f.c, 1));
    dq_destroy(r);
    dq_destroy(b);
    const char *e = getenv("DQ_FAR_DRAWS");
    int draws = e && atoi(e) > 0 ? atoi(e) : FAR_DRAWS;
    for (int law = 0; law < 4; law++) {
        int watches = far_alarms(law, draws, 1);
        printf("  suggestive far tail, law %d: %d watch(es) in %d draws of the same law\n", law,
               watches, draws);
        CHECK(watches <= draws / 10);
    }
}

static void test_divergence(void) {
    struct fixture f;
    fixture(&f, 0.010, 0.002, 0.0, 1);
    f.recent.ks_d = 0.3;
    f.recent.ks_p = 1e-6;
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 1);
    CHECK_INT(f.c.p[0].kind, SEARCH_DIVERGENCE);
    CHECK(strstr(f.c.p[0].why, "KS D 0.3") != NULL);
    f.recent.ks_d = 0.05; /* significant but small */
    search_check(&f.in, &P, &f.c);
    CHECK_INT(f.c.n, 0);
}

/* A ΔQ of 0.5 ms bins: mass `frac` uniform over [a, b) ms, the rest over [c, d) ms. */
static struct dq *two_bumps(double frac, double a, double b, double c, double d) {
    double pdf[512] = {0};
    for (int i = (int)(a * 2); i < (int)(b * 2); i++) {
        pdf[i] += frac / ((b - a) * 2);
    }
    for (int i = (int)(c * 2); i < (int)(d * 2); i++) {
        pdf[i] += (1 - frac) / ((d - c) * 2);
    }
    struct dq *q = NULL;
    CHECK_INT(dq_from_pdf(-1, 512, pdf, &q), DQ_OK);
    return q;
}

/* Mass later than a reference moved later (search_shift_lagged). */
static void test_shift_lagged(void) {
    /* four fifths at 1-5 ms, a fifth at 40-60 ms (median 3.5 ms) */
    struct dq *base = two_bumps(0.8, 1, 5, 40, 60), *rare = two_bumps(0.8, 1, 5, 52, 72);
    struct dq *lag = two_bumps(0.8, 2, 6, 41, 61), *both = two_bumps(0.8, 2, 6, 53, 73);
    struct search_shift sh;
    /* the rare fifth 12 ms later: 12 % of the mass at most, 20 ms on average */
    CHECK_INT(search_shift_of(rare, base, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(fabs(sh.d - 0.12) < 0.01 && fabs(sh.moved - 0.020) < 0.001 &&
                  fabs(sh.median - 0.0035) < 1e-9,
              "d %g moved %g median %g", sh.d, sh.moved, sh.median);
    CHECK(sh.z > 3.0 && search_shift_material(&sh, rare->width));
    /* everything 1 ms later (a calculation that lags): against the reference lagged 1 ms,
     * nothing; unlagged, a fifth of the mass */
    CHECK_INT(search_shift_of(lag, base, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(sh.d > 0.19, "d %g", sh.d);
    CHECK_INT(search_shift_lagged(lag, base, 0.001, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(sh.d < 1e-9, "d %g", sh.d);
    /* lagged half as much (one bin), half of that mass is still later: a lag too large
     * would find none */
    CHECK_INT(search_shift_lagged(lag, base, 0.0005, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(fabs(sh.d - 0.1) < 0.002, "d %g", sh.d);
    /* 0.7 ms rounds to one bin, 0.8 ms to two */
    CHECK_INT(search_shift_lagged(lag, base, 0.0007, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(fabs(sh.d - 0.1) < 0.002, "d %g", sh.d);
    CHECK_INT(search_shift_lagged(lag, base, 0.0008, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(sh.d < 1e-9, "d %g", sh.d);
    /* both, lagged 1 ms: the rare fifth's 12 ms stays */
    CHECK_INT(search_shift_lagged(both, base, 0.001, 1000, 1000, &sh), DQ_OK);
    CHECK_MSG(fabs(sh.d - 0.12) < 0.002 && fabs(sh.moved - 0.020) < 0.0005, "d %g moved %g", sh.d,
              sh.moved);
    /* a negative lag, or another grid: refused */
    CHECK_INT(search_shift_lagged(rare, base, -0.001, 1000, 1000, &sh), DQ_EINVAL);
    struct dq *other = NULL;
    CHECK_INT(dq_uniform(-2, 64, 0.001, 0.002, &other), DQ_OK);
    CHECK_INT(search_shift_of(other, base, 1000, 1000, &sh), DQ_EINVAL);
    dq_destroy(base);
    dq_destroy(rare);
    dq_destroy(lag);
    dq_destroy(both);
    dq_destroy(other);
}

static void test_shape(void) {
    /* a fifth of the mass (a rare branch) moves from 40-60 ms to 52-72 ms: the mean moves
     * 2.4 ms against a within-window sd of 20 ms (no latency problem); shape sees it */
    struct fixture f;
    fixture(&f, 0.0124, 0.020, 0.0, 1);
    f.base.mean = 0.010;
    struct dq *b = two_bumps(0.8, 1, 5, 40, 60), *r = two_bumps(0.8, 1, 5, 52, 72);
    f.base.observed = b;
    f.recent.observed = r;
    /* the baseline's windows: 30 × 100 of sd 20 ms */
    search_stats_init(&f.base);
    for (int w = 0; w < 30; w++) {
        search_stats_add_window(&f.base, 100, 0, 0, 0.010, 0.020 * 0.020);
    }
    f.base.observed = b;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_LATENCY));
    CHECK(has(&f.c, SEARCH_SHAPE));
    for (int i = 0; i < f.c.n; i++) {
        if (f.c.p[i].kind == SEARCH_SHAPE) {
            /* the bumps overlap: at most 12 % of the mass is later than before at any time,
             * 2.4 ms of delay in all (0.2 × 12 ms), as if those 12 % moved 20 ms */
            CHECK_MSG(strstr(f.c.p[i].why, "12 % of its mass moved later (one-sided KS D 0.12") &&
                          strstr(f.c.p[i].why, "2.4 ms of delay in all") &&
                          strstr(f.c.p[i].why, "later by 20 ms on average"),
                      "%s", f.c.p[i].why);
            CHECK(f.c.p[i].level > 0.8 && f.c.p[i].level < 1.0); /* the upper fifth */
        }
    }
    /* the same ΔQ both sides: nothing */
    f.recent.observed = b;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_SHAPE));
    /* mass that moved earlier is no problem */
    struct dq *e = two_bumps(0.8, 1, 5, 28, 48);
    f.recent.observed = e;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_SHAPE));
    /* moved by a hair (one bin): not practically large */
    struct dq *h = two_bumps(0.8, 1, 5, 40.5, 60.5);
    f.recent.observed = h;
    search_check(&f.in, &P, &f.c);
    CHECK(!has(&f.c, SEARCH_SHAPE));
    /* correlated instances count as fewer: 5 windows whose means scatter widely leave a
     * small moved mass short of significance */
    struct dq *s5 = two_bumps(0.88, 1, 5, 52, 72), *b5 = two_bumps(1.0, 1, 5, 40, 60);
    struct fixture g;
    fixture(&g, 0.0124, 0.020, 0.0, 1);
    g.base.observed = b5;
    g.recent.observed = s5;
    search_check(&g.in, &P, &g.c);
    int independent = has(&g.c, SEARCH_SHAPE);
    search_stats_init(&g.recent);
    static const double wm[5] = {0.002, 0.030, 0.004, 0.040, 0.001};
    for (int w = 0; w < 5; w++) {
        search_stats_add_window(&g.recent, 100, 0, 0, wm[w], 0.020 * 0.020);
    }
    g.recent.observed = s5;
    search_check(&g.in, &P, &g.c);
    CHECK(independent);
    CHECK(!has(&g.c, SEARCH_SHAPE));
    dq_destroy(b);
    dq_destroy(r);
    dq_destroy(e);
    dq_destroy(h);
    dq_destroy(s5);
    dq_destroy(b5);
}

static void test_spearman(void) {
    double rate[20], mean[20];
    for (int i = 0; i < 20; i++) {
        rate[i] = 100 + 5 * i;
        mean[i] = 0.010 + 0.0005 * i;
    }
    CHECK_NEAR(search_rate_latency_z(rate, mean, 20), sqrt(19.0), 1e-9);
    CHECK_NEAR(search_rate_latency_z(rate, mean, 9), 0.0, 0); /* too few windows */
    for (int i = 0; i < 20; i++) {
        mean[i] = 0.020 - 0.0005 * i;
    }
    CHECK_NEAR(search_rate_latency_z(rate, mean, 20), -sqrt(19.0), 1e-9);
    /* values within a relative 1e-6 are ties: equal means say nothing */
    for (int i = 0; i < 20; i++) {
        mean[i] = 0.010 * (1 + 1e-9 * i);
    }
    CHECK_NEAR(search_rate_latency_z(rate, mean, 20), 0.0, 0);
}

static void test_load_rose(void) {
    char why[200];
    struct search_load l = {.rz = 4.0};
    CHECK_INT(search_load_rose(&l, NULL, 1, why, sizeof why), 1);
    CHECK(strstr(why, "Spearman z 4.0") != NULL);
    l.rz = 3.2;
    CHECK_INT(search_load_rose(&l, NULL, 3, why, sizeof why), 0); /* 3 looks need ≈ 3.4 */
    CHECK_STR(why, "");
    /* the arrivals per window rose 1.5× against the baseline */
    struct search_check c;
    memset(&c, 0, sizeof c);
    c.has_baseline = 1;
    windows_of(&c.recent, NULL, NULL, 5, 150, 0.010, 0.002, 0, 0, 4);
    windows_of(&c.baseline, NULL, NULL, 30, 100, 0.010, 0.002, 0, 0, 5);
    l.rz = 0.0;
    CHECK_INT(search_load_rose(&l, &c, 3, why, sizeof why), 1);
    CHECK(strstr(why, "rose 1.50×") != NULL);
    /* unless two of the five recent windows were a stall's backlog of 250 each: the other
     * three hold 83 a window */
    l.backlog_n = 500;
    l.backlog_windows = 2;
    CHECK_INT(search_load_rose(&l, &c, 3, why, sizeof why), 0);
    l.backlog_windows = 5; /* all of them: nothing to compare */
    l.backlog_n = 750;
    CHECK_INT(search_load_rose(&l, &c, 3, why, sizeof why), 0);
    l = (struct search_load){0};
    /* by a tenth only: not a rise */
    windows_of(&c.recent, NULL, NULL, 5, 110, 0.010, 0.002, 0, 0, 4);
    CHECK_INT(search_load_rose(&l, &c, 3, why, sizeof why), 0);
    CHECK_INT(search_load_shaped(SEARCH_LATENCY), 1);
    CHECK_INT(search_load_shaped(SEARCH_QTA), 1);
    CHECK_INT(search_load_shaped(SEARCH_VARIANCE), 1);
    CHECK_INT(search_load_shaped(SEARCH_LOST), 0);
    CHECK_INT(search_load_shaped(SEARCH_DIVERGENCE), 0);
}

/* Windows newest first (w[0] newest), wids consecutive from `wid0` for the oldest; n and
 * mean from the arrays in oldest-first order. */
static int load_windows(struct search_load_window *w, const double *n, const double *mean, int k,
                        int64_t wid0) {
    for (int i = 0; i < k; i++) {
        w[k - 1 - i] =
            (struct search_load_window){.wid = wid0 + i, .n = n[i], .ok = n[i], .mean = mean[i]};
    }
    return k;
}

static void test_load_backlog(void) {
    /* 40 windows at 150 ± 9 a window, latency 30 ms rising a little with the count (as in
     * a loaded queue, short of "rises with the arrivals" at 3 looks), then the source
     * stalls two windows (no data: silent_before 2) and comes back with two windows of its
     * backlog (250 and 230, at 46 and 40 ms), then three ordinary windows */
    double n[45], mean[45];
    struct search_load_window w[48];
    for (int i = 0; i < 40; i++) {
        n[i] = 150 + ((i * 7) % 19) - 9;
        mean[i] = 0.030 + 0.00003 * (n[i] - 150) + 0.0001 * ((i * 11) % 13);
    }
    n[40] = 250, mean[40] = 0.046;
    n[41] = 230, mean[41] = 0.040;
    for (int i = 42; i < 45; i++) {
        n[i] = 150, mean[i] = 0.031 + 0.0001 * i;
    }
    load_windows(w, n, mean, 40, 100);
    /* newest first: the 5 after the silence (wids 142 … 146), then the 40 before it */
    struct search_load_window all[45];
    for (int i = 0; i < 5; i++) {
        all[i] = (struct search_load_window){
            .wid = 146 - i, .n = n[44 - i], .ok = n[44 - i], .mean = mean[44 - i]};
    }
    all[4].silent_before = 2;
    for (int i = 0; i < 40; i++) {
        all[5 + i] = w[i];
    }
    struct search_load l;
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 2);
    CHECK_NEAR(l.backlog_n, 480, 0);
    /* all of them in the rank test would say "latency rises with the arrivals" */
    double rate[45], m[45];
    for (int i = 0; i < 45; i++) {
        rate[i] = all[i].n;
        m[i] = all[i].mean;
    }
    double zt = search_z_looks(3);
    CHECK(search_rate_latency_z(rate, m, 45) > zt);
    CHECK(l.rz > 2.5 && l.rz < zt);
    /* a gap in the ids without a stall (the probe was disabled, then enabled again): the
     * two windows are arrivals */
    all[4].silent_before = 0;
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 0);
    CHECK(l.rz > zt);
    /* a stall of one window holds back about 2 × 150 (the silent window and the one it
     * began in): the 250 (100 over the median) and the 230 (80 more) fit in it */
    all[4].silent_before = 1;
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 2);
    /* what comes after a stall beyond what it held back is arrivals: five windows of 250
     * after one silent window, 100 over the median each: the first three are its backlog
     * (excess 100, 200, 300 of 300), then the run ends */
    for (int i = 0; i < 5; i++) {
        all[i].n = 250;
        all[i].ok = 250;
    }
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 3);
    /* a window of timeouts (2 ok of 400) among ordinary ones is a pile of timeouts; a
     * window above the range after it is arrivals */
    for (int i = 0; i < 5; i++) {
        all[i].n = i == 3 ? 230 : 150;
        all[i].ok = all[i].n;
        all[i].silent_before = 0;
    }
    all[4].ok = 2;
    all[4].n = 400;
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 1);
    CHECK_NEAR(l.backlog_n, 400, 0);
    /* a window of timeouts within the range (the source stalled in it: 2 ok of 150) holds
     * back one window: the 230 after it is its backlog */
    all[4].n = 150;
    search_load_of(all, 45, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 1);
    CHECK_NEAR(l.backlog_n, 230, 0);
    /* a probe's first window (partial: 40 instances), then a surge from its third window on
     * and no stall: arrivals */
    double s[20], sm[20];
    for (int i = 0; i < 20; i++) {
        s[i] = i == 0 ? 40 : i < 2 ? 100 + (i % 3) : 200 + (i % 3);
        sm[i] = i < 2 ? 0.010 + 0.0001 * (i % 4) : 0.020 + 0.0001 * (i % 4);
    }
    int k = load_windows(w, s, sm, 20, 0);
    search_load_of(w, k, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 0);
}

/* A stall that began before its silence (docs_tutorial in a stress run at dd4a904): checkout
 * at about 150 a window, then 116 and 106 (the node slowing), a window without data, and
 * 515 (19 % lost), 118 (80 % lost), 195: the 515 is what the stall held back, 365 over the
 * median against the 2 × 150 of the silence and the window it began in and the 34 + 44 the
 * two windows before it lacked. Without those it was arrivals, and the trigger's three
 * windows (276 a window against 146) said overload. */
static void test_load_backlog_short(void) {
    double n[44], mean[44];
    struct search_load_window w[44];
    for (int i = 0; i < 38; i++) {
        n[i] = 150 + ((i * 7) % 19) - 9;
        mean[i] = 0.021 + 0.0001 * ((i * 11) % 13);
    }
    const double tail[] = {116, 106, 515, 118, 195, 158},
                 tail_mean[] = {0.0208, 0.0211, 0.1215, 0.0213, 0.0396, 0.0257};
    for (int i = 0; i < 6; i++) {
        n[38 + i] = tail[i], mean[38 + i] = tail_mean[i];
    }
    load_windows(w, n, mean, 44, 100);
    w[3].wid += 1, w[2].wid += 1, w[1].wid += 1, w[0].wid += 1; /* the 515 after a gap */
    w[3].silent_before = 1;
    w[3].ok = 416, w[2].ok = 24;
    struct search_load l;
    search_load_of(w, 44, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 1);
    CHECK_NEAR(l.backlog_n, 515, 0);
    /* the same 515 after ordinary windows (150, 150): arrivals beyond what it held back */
    w[5].n = w[5].ok = 150, w[4].n = w[4].ok = 150;
    search_load_of(w, 44, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 0);
    /* a lull of 8 windows at 105 before the silence, then 650: the lull lacked about 330 of
     * the median, but what counts of it is at most one median (a long lull is not all held
     * back), and 650 is arrivals beyond the stall's 3 medians; 515 still fits */
    for (int i = 4; i < 12; i++) {
        w[i].n = w[i].ok = 105;
    }
    w[3].n = 650;
    search_load_of(w, 44, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 0);
    w[3].n = 515;
    search_load_of(w, 44, 1.0, 5, &l);
    CHECK_INT(l.backlog_windows, 1);
}

/* Statistics of `ok` successes (2–3 ms but `slow` of them at slow_s), `failed` failures and
 * `timeouts` (their ΔQ into *d, on the grid of 4096 bins of 0.25 ms). */
static void qta_stats(struct search_stats *st, struct dq **d, int ok, int failed, int timeouts,
                      double slow_s, int slow) {
    double x[400];
    for (int i = 0; i < ok; i++) {
        x[i] = i < slow ? slow_s : 0.002 + 0.001 * (double)i / (double)ok;
    }
    CHECK_INT(dq_from_samples(-2, 4096, x, (size_t)ok, (uint64_t)failed, (uint64_t)timeouts, d),
              DQ_OK);
    search_stats_init(st);
    st->present = 1;
    st->observed = *d;
    st->n_ok = (uint64_t)ok, st->n_fa = (uint64_t)failed, st->n_to = (uint64_t)timeouts;
}

/* A QTA broken by failures (search_qta_lost): 90 % within 10 ms, successes of 2–3 ms but
 * `slow` of them at slow_s; the sentence it gives (want_why, or "" when it says 0); base
 * (NULL: none): the baseline. */
static void qta_lost_base(const struct dq_qta *q, int ok, int failed, int timeouts, double slow_s,
                          int slow, const struct search_stats *base, int want,
                          const char *want_why) {
    struct search_stats st;
    struct dq *d = NULL;
    qta_stats(&st, &d, ok, failed, timeouts, slow_s, slow);
    char why[300];
    CHECK_INT(search_qta_lost(&st, base, q, why, sizeof why), want);
    CHECK(want ? strstr(why, want_why) != NULL : why[0] == '\0');
    printf("  %d ok (%d at %g s), %d failed, %d timed out%s: %d %s\n", ok, slow, slow_s, failed,
           timeouts, base ? " (with a baseline)" : "", want, why);
    dq_destroy(d);
}

static void qta_lost_case(const struct dq_qta *q, int ok, int failed, int timeouts, double slow_s,
                          int slow, int want, const char *want_why) {
    qta_lost_base(q, ok, failed, timeouts, slow_s, slow, NULL, want, want_why);
}

static void test_qta_lost(void) {
    struct dq_qta q = {.n = 2, .t = {0.009, 0.010}, .p = {0.5, 0.9}, .max_lost = 1.0};
    /* 20 % failed, every success fast: the failures break it */
    qta_lost_case(&q, 320, 80, 0, 0, 0, 1, "20 % failed, 0 % took longer; the failures break it");
    /* 12 % failed and 8 % slow: still mostly failures */
    qta_lost_case(&q, 352, 48, 0, 0.050, 32, 1, "12 % failed, 8 % took longer");
    /* 4 % failed and 16 % slow: a latency problem that also fails a little */
    qta_lost_case(&q, 384, 16, 0, 0.050, 64, 0, "");
    /* slow, nothing lost */
    qta_lost_case(&q, 400, 0, 0, 0.050, 80, 0, "");
    /* 20 % timed out, nothing failed: a delay past dMax (an overload's), not failures */
    qta_lost_case(&q, 320, 0, 80, 0, 0, 0, "");
    /* 12 % failed and 8 % timed out: mostly failures */
    qta_lost_case(&q, 320, 48, 32, 0, 0, 1, "12 % failed, 8 % took longer");
    /* 5 % failed: the QTA holds, nothing to say */
    qta_lost_case(&q, 380, 20, 0, 0, 0, 0, "");
    /* the lost bound is the worst clause */
    struct dq_qta ql = {.n = 1, .t = {0.010}, .p = {0.5}, .max_lost = 0.01};
    qta_lost_case(&ql, 380, 20, 0, 0, 0, 1, "the QTA allows 1 % lost and 5 % failed");
    qta_lost_case(&ql, 380, 5, 15, 0, 0, 0, "");

    /* with a baseline: what changed. It always failed 8 % (the QTA tolerates that) */
    struct search_stats base;
    struct dq *bd = NULL;
    qta_stats(&base, &bd, 368, 32, 0, 0, 0);
    /* … and now 8 % of its successes are slower (the same levels said lost: 8 % ≥ 7.4 %) */
    qta_lost_case(&q, 368, 32, 0, 0.050, 29, 1, "8 % failed, 7.25 % took longer");
    qta_lost_base(&q, 368, 32, 0, 0.050, 29, &base, 0, "");
    /* … and now fails 20 %: a rise of 12 % against none beyond the point */
    qta_lost_base(&q, 320, 80, 0, 0, 0, &base, 1,
                  "20 % failed, 0 % took longer (8 % and 0 % in its baseline)");
    /* … fails 16 % and 8 % slower: a rise of 8 % against a rise of 6.7 % */
    qta_lost_base(&q, 336, 64, 0, 0.050, 28, &base, 1, "16 % failed, 7 % took longer");
    /* … fails 12 % and 16 % slower: the slowdown is the larger change */
    qta_lost_base(&q, 352, 48, 0, 0.050, 64, &base, 0, "");
    /* a baseline without instances is none */
    struct search_stats empty;
    search_stats_init(&empty);
    empty.present = 1;
    empty.observed = bd;
    qta_lost_base(&q, 368, 32, 0, 0.050, 29, &empty, 1, "8 % failed, 7.25 % took longer;");
    dq_destroy(bd);

    /* counts that say more failures than the ΔQ has lost mass (a window on another grid
     * left out of it): the failures are taken at most as the lost mass, here none */
    {
        struct search_stats st;
        struct dq *d = NULL;
        qta_stats(&st, &d, 400, 0, 0, 0.050, 80);
        st.n_fa = 100;
        char why[300];
        CHECK_INT(search_qta_lost(&st, NULL, &q, why, sizeof why), 0);
        CHECK_STR(why, "");
        dq_destroy(d);
    }

    char why[8];
    CHECK_INT(search_qta_lost(NULL, NULL, &q, why, sizeof why), 0);
    struct search_stats none;
    search_stats_init(&none);
    CHECK_INT(search_qta_lost(&none, NULL, &q, why, sizeof why), 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(z),
    CHECK_CASE(nothing),
    CHECK_CASE(latency),
    CHECK_CASE(rank),
    CHECK_CASE(lost),
    CHECK_CASE(variance),
    CHECK_CASE(qta_first),
    CHECK_CASE(tail),
    CHECK_CASE(tail_largest),
    CHECK_CASE(tail_far),
    CHECK_CASE(tail_far_suggestive),
    CHECK_CASE(divergence),
    CHECK_CASE(shape),
    CHECK_CASE(shift_lagged),
    CHECK_CASE(spearman),
    CHECK_CASE(load_rose),
    CHECK_CASE(load_backlog),
    CHECK_CASE(load_backlog_short),
    CHECK_CASE(qta_lost),
};

static int setup(void) {
    search_params_init(&P);
    return 0;
}

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, NULL);
}
