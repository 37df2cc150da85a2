/*
 * test_engine_stats.c: the ΔQ queries that summarise or compare distributions: moments
 * of known laws, dq_compare, QTA validation / evaluation / dq_from_qta, Kolmogorov–Smirnov
 * distance and p-value, Wasserstein-1, confidence bands and the moment algebra of
 * dq_infer_unobserved. Expected values are closed forms computed here.
 */
#include "check.h"

#include "engine_test_util.h"

#define MS 0.001

static struct dq *pdf_dq(int k, int n, const double *pdf) {
    struct dq *a = NULL;
    MUST(dq_from_pdf(k, n, pdf, &a));
    return a;
}

/* Point masses at the grid times 0 … n (n + 1 values). */
static struct dq *points_dq(int k, int n, const double *m) {
    struct dq *a = NULL;
    MUST(dq_from_points(k, n, m, &a));
    return a;
}

static struct dq *wait_dq(int k, int n, double t) {
    struct dq *a = NULL;
    MUST(dq_wait(k, n, t, &a));
    return a;
}

static void test_moments(void) {
    struct dq_moments m;
    struct dq *a = wait_dq(0, 10, 0.005);
    if (a) {
        memset(&m, 0xff, sizeof m);
        CHECK_INT(dq_moments(a, &m), DQ_OK);
        CHECK_NEAR(m.mass, 1.0, 1e-15);
        CHECK_NEAR(m.mean, 0.005, 1e-15);
        CHECK_NEAR(m.variance, 0.0, 1e-18);
        CHECK_NEAR(m.skewness, 0.0, 0.0);
        CHECK_NEAR(m.kurtosis, 0.0, 0.0);
    }
    dq_destroy(a);

    /* Two-point law: 0 w.p. 0.3, 10 ms w.p. 0.7 (Bernoulli q = 0.7 scaled by 10 ms);
     * the same shape with half the mass lost has the same conditioned moments. */
    for (int half = 0; half <= 1; half++) {
        double pts[12] = {0};
        double s = half ? 0.5 : 1.0, q = 0.7;
        pts[0] = 0.3 * s;
        pts[10] = 0.7 * s;
        a = points_dq(0, 11, pts);
        if (!a)
            continue;
        CHECK_INT(dq_moments(a, &m), DQ_OK);
        CHECK_NEAR(m.mass, s, 1e-15);
        CHECK_NEAR(m.mean, 0.007, 1e-15);
        CHECK_NEAR(m.variance, q * (1 - q) * 1e-4, 1e-15);
        CHECK_NEAR(m.skewness, (1 - 2 * q) / sqrt(q * (1 - q)), 1e-9);
        CHECK_NEAR(m.kurtosis, (1 - 3 * q * (1 - q)) / (q * (1 - q)), 1e-9);
        dq_destroy(a);
    }

    /* Discrete uniform on bins 3 … 3+M−1 (k = 1, 2 ms bins), each at its middle. */
    {
        const int M = 40, off = 3;
        double pdf[64] = {0};
        for (int i = 0; i < M; i++)
            pdf[off + i] = 1.0 / M;
        a = pdf_dq(1, 64, pdf);
        if (a) {
            double w = 0.002;
            CHECK_INT(dq_moments(a, &m), DQ_OK);
            CHECK_NEAR(m.mean, (off + 0.5 + (M - 1) / 2.0) * w, 1e-12);
            CHECK_NEAR(m.variance, (M * M - 1) / 12.0 * w * w, 1e-12);
            CHECK_NEAR(m.skewness, 0.0, 1e-9);
            CHECK_NEAR(m.kurtosis, 3.0 - 6.0 * (M * M + 1) / (5.0 * (M * M - 1)), 1e-9);
        }
        dq_destroy(a);
    }

    /* Exponential(10/s) on 1 ms bins: mean 1/λ, variance 1/λ² (+ w²/12 from rounding),
     * skewness 2, kurtosis 9. */
    a = NULL;
    MUST(dq_exponential(0, 4096, 10.0, &a));
    if (a) {
        CHECK_INT(dq_moments(a, &m), DQ_OK);
        CHECK_NEAR(m.mean, 0.1, 1e-5);
        CHECK_NEAR(m.variance, 0.01, 1e-5);
        CHECK_NEAR(m.skewness, 2.0, 1e-3);
        CHECK_NEAR(m.kurtosis, 9.0, 1e-2);
    }
    dq_destroy(a);

    /* No success to condition on. */
    a = NULL;
    MUST(dq_never(0, 10, &a));
    if (a) {
        memset(&m, 0, sizeof m);
        m.mean = 77.0;
        CHECK_INT(dq_moments(a, &m), DQ_ENOTREACHED);
    }
    dq_destroy(a);
}

static void test_compare(void) {
    struct dq *w2 = wait_dq(0, 10, 0.002), *w3 = wait_dq(0, 10, 0.003);
    struct dq *w2c = wait_dq(1, 5, 0.002), *w2long = wait_dq(0, 40, 0.002);
    enum dq_order o;
    if (w2 && w3 && w2c && w2long) {
        CHECK_INT(dq_compare(w2, w3, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_BETTER);
        CHECK_INT(dq_compare(w3, w2, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_WORSE);
        CHECK_INT(dq_compare(w3, w3, 0.0, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_EQUAL);
        /* same law on another width or horizon */
        CHECK_INT(dq_compare(w2, w2c, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_EQUAL);
        CHECK_INT(dq_compare(w2long, w2, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_EQUAL);
    } else {
        CHECK(0);
    }
    /* Same shape, less tangible mass: worse; a difference within tol: equal. */
    double p1[5] = {0, 0.5, 0.3, 0, 0}, p2[5] = {0, 0.5, 0.4, 0, 0}, p3[5] = {0, 0.5, 0.3, 1e-7, 0};
    struct dq *a = pdf_dq(0, 5, p1), *b = pdf_dq(0, 5, p2), *c = pdf_dq(0, 5, p3);
    if (a && b && c) {
        CHECK_INT(dq_compare(a, b, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_WORSE);
        CHECK_INT(dq_compare(b, a, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_BETTER);
        CHECK_INT(dq_compare(a, c, 1e-6, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_EQUAL);
        CHECK_INT(dq_compare(a, c, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_WORSE);
    }
    dq_destroy(a);
    dq_destroy(b);
    dq_destroy(c);
    dq_destroy(w2);
    dq_destroy(w3);
    dq_destroy(w2c);
    dq_destroy(w2long);
}

static void test_qta(void) {
    struct dq_qta q = {.n = 2, .t = {0.002, 0.004}, .p = {0.5, 0.9}, .max_lost = 0.1};
    CHECK_INT(dq_qta_check(&q), DQ_OK);
    struct dq_qta one = {.n = 1, .t = {0.0}, .p = {1.0}, .max_lost = 0.0};
    CHECK_INT(dq_qta_check(&one), DQ_OK);
    struct dq_qta full = {.n = DQ_QTA_MAX_POINTS, .max_lost = 0.5};
    for (int j = 0; j < DQ_QTA_MAX_POINTS; j++) {
        full.t[j] = 0.001 * (j + 1);
        full.p[j] = 0.05 * (j + 1);
    }
    CHECK_INT(dq_qta_check(&full), DQ_OK);

    struct dq_qta_result r;
    struct dq *w3 = wait_dq(0, 10, 0.003);
    if (w3) {
        /* hazard at the first point: F(2 ms) = 0 < 0.5 */
        memset(&r, 0, sizeof r);
        CHECK_INT(dq_qta_eval(w3, &q, &r), DQ_OK);
        CHECK_INT(r.ok, 0);
        CHECK_NEAR(r.margin, -0.5, 1e-12);
        CHECK_NEAR(r.slack, 0.0, 0.0);
        CHECK_NEAR(r.hazard, 0.5, 1e-12);
        CHECK_INT(r.worst, 0);
        /* slack, limited by the lost-mass term: margins 0.5, 0.1 and 0.05 − 0 */
        struct dq_qta q2 = {.n = 2, .t = {0.004, 0.006}, .p = {0.5, 0.9}, .max_lost = 0.05};
        CHECK_INT(dq_qta_eval(w3, &q2, &r), DQ_OK);
        CHECK_INT(r.ok, 1);
        CHECK_NEAR(r.margin, 0.05, 1e-12);
        CHECK_NEAR(r.slack, 0.05, 1e-12);
        CHECK_NEAR(r.hazard, 0.0, 0.0);
        CHECK_INT(r.worst, -1);
    }
    dq_destroy(w3);

    /* lost-mass violation: F(4 ms) = 0.8 ≥ 0.7 but lost 0.2 > 0.1 */
    double p1[10] = {0, 0, 0, 0.8};
    struct dq *a = pdf_dq(0, 10, p1);
    if (a) {
        struct dq_qta q3 = {.n = 1, .t = {0.004}, .p = {0.7}, .max_lost = 0.1};
        CHECK_INT(dq_qta_eval(a, &q3, &r), DQ_OK);
        CHECK_INT(r.ok, 0);
        CHECK_NEAR(r.margin, -0.1, 1e-12);
        CHECK_NEAR(r.hazard, 0.1, 1e-12);
        CHECK_NEAR(r.slack, 0.0, 0.0);
        CHECK_INT(r.worst, -1);
    }
    dq_destroy(a);

    /* worst point is the second one: margins 0.1, 0.05, lost 0.5 (bins (1,2] … (5,6] ms) */
    double p2[10] = {0, 0.2, 0.2, 0.2, 0.2, 0.2};
    a = pdf_dq(0, 10, p2);
    if (a) {
        struct dq_qta q4 = {.n = 2, .t = {0.002, 0.006}, .p = {0.1, 0.95}, .max_lost = 0.5};
        CHECK_INT(dq_qta_eval(a, &q4, &r), DQ_OK);
        CHECK_INT(r.ok, 1);
        CHECK_NEAR(r.margin, 0.05, 1e-12);
        CHECK_INT(r.worst, 1);
        /* between edges the CDF is read at the last edge before: F(5.9 ms) = F(5 ms) = 0.8 */
        struct dq_qta q5 = {.n = 2, .t = {0.002, 0.0059}, .p = {0.1, 0.85}, .max_lost = 0.5};
        CHECK_INT(dq_qta_eval(a, &q5, &r), DQ_OK);
        CHECK_INT(r.ok, 0);
        CHECK_NEAR(r.margin, -0.05, 1e-12);
        CHECK_NEAR(r.hazard, 0.05, 1e-12);
        CHECK_INT(r.worst, 1);
    }
    dq_destroy(a);

    /* A QTA's own ΔQ meets it with zero margin (dyadic values so sums are exact). */
    struct dq_qta q6 = {.n = 3, .t = {0.002, 0.005, 0.008}, .p = {0.5, 0.75, 0.875}};
    q6.max_lost = 0.125;
    a = NULL;
    MUST(dq_from_qta(0, 16, &q6, &a));
    if (a) {
        CHECK_INT(dq_qta_eval(a, &q6, &r), DQ_OK);
        CHECK_INT(r.ok, 1);
        CHECK_NEAR(r.margin, 0.0, 1e-12);
        CHECK_NEAR(r.hazard, 0.0, 1e-12);
        CHECK_NEAR(dq_lost(a), 0.125, 1e-12);
        /* anything one bin later violates it */
        struct dq *d = wait_dq(0, 2, 0.001), *late = NULL;
        if (d)
            MUST(dq_sequence(a, d, &late));
        if (late) {
            CHECK_INT(dq_qta_eval(late, &q6, &r), DQ_OK);
            CHECK_INT(r.ok, 0);
            CHECK_NEAR(r.hazard, 0.5, 1e-12);
            CHECK_INT(r.worst, 0);
        }
        dq_destroy(d);
        dq_destroy(late);
    }
    dq_destroy(a);
    /* A sequence is checked on its lower bound: U(1,2)·w + U(2,3)·w has exactly half its
     * mass by 4 ms, but the bound reads one bin earlier, so "P(≤ 4 ms) ≥ 0.5" is not met
     * on this grid (it is, with margin, by 5 ms). */
    {
        double pa[3] = {0, 1, 0}, pb[3] = {0, 0, 1};
        struct dq *x = pdf_dq(0, 3, pa), *y = pdf_dq(0, 3, pb), *xy = NULL;
        if (x && y)
            MUST(dq_sequence(x, y, &xy));
        if (xy) {
            struct dq_qta q8 = {.n = 1, .t = {0.004}, .p = {0.5}, .max_lost = 0.0};
            CHECK_NEAR(dq_cdf_at(xy, 0.004), 0.5, 1e-15);
            CHECK_INT(dq_qta_eval(xy, &q8, &r), DQ_OK);
            CHECK_INT(r.ok, 0);
            CHECK_NEAR(r.hazard, 0.5, 1e-15);
            q8.t[0] = 0.005;
            CHECK_INT(dq_qta_eval(xy, &q8, &r), DQ_OK);
            CHECK_INT(r.ok, 1);
            /* the lost-mass term uses the bound too: 1 − cdf[N − 1 − lag] */
            CHECK_NEAR(dq_lost_bound(xy), 0.0, 1e-15);
            struct dq *cut = NULL;
            MUST(dq_reexpress(xy, 0, 4, &cut));
            if (cut) {
                CHECK_NEAR(dq_lost(cut), 0.5, 1e-15);
                CHECK_NEAR(dq_lost_bound(cut), 1.0, 1e-15);
            }
            dq_destroy(cut);
        }
        dq_destroy(x);
        dq_destroy(y);
        dq_destroy(xy);
    }
    /* Non-dyadic probabilities: still met, within DQ_EPS. */
    struct dq_qta q7 = {.n = 3, .t = {0.001, 0.003, 0.007}, .p = {0.1, 0.3, 0.7}};
    q7.max_lost = 0.3;
    a = NULL;
    MUST(dq_from_qta(0, 16, &q7, &a));
    if (a) {
        CHECK_INT(dq_qta_eval(a, &q7, &r), DQ_OK);
        CHECK_MSG(r.ok == 1, "own ΔQ of a QTA fails it by round-off: margin %g", r.margin);
        CHECK_NEAR(r.margin, 0.0, 1e-9);
    }
    dq_destroy(a);
}

/* Kolmogorov tail Q(λ) = 2 Σ (−1)^(j−1) e^(−2 j² λ²), written out here for reference. */
static double ref_kolmogorov_q(double lambda) {
    if (lambda < 0.2)
        return 1.0;
    double s = 0.0;
    for (int j = 1; j < 200; j++)
        s += (j % 2 ? 2.0 : -2.0) * exp(-2.0 * j * j * lambda * lambda);
    return s < 0 ? 0 : s > 1 ? 1 : s;
}

static double ref_ks_p(double d, double ne) {
    double sq = sqrt(ne);
    return ref_kolmogorov_q((sq + 0.12 + 0.11 / sq) * d);
}

static void test_ks(void) {
    double d = -1, p = -1;
    struct trng g = {99};
    struct dq *a = trng_dq(&g, 0, 200, 0.9, 0.2);
    if (a) {
        CHECK_INT(dq_ks(a, a, 100, 100, &d, &p), DQ_OK);
        CHECK_NEAR(d, 0.0, 1e-12);
        CHECK_NEAR(p, 1.0, 1e-9);
        CHECK_INT(dq_ks(a, a, 100, 0, &d, &p), DQ_OK);
        CHECK_NEAR(p, 1.0, 1e-9);
        d = -1;
        p = -1;
        CHECK_INT(dq_ks(a, a, 0, 50, &d, &p), DQ_OK);
        CHECK_NEAR(d, 0.0, 1e-12);
        CHECK_NEAR(p, 1.0, 0.0);
    }
    dq_destroy(a);

    struct dq *w2 = wait_dq(0, 10, 0.002), *w5 = wait_dq(0, 10, 0.005);
    if (w2 && w5) {
        CHECK_INT(dq_ks(w2, w5, 1000, 1000, &d, &p), DQ_OK);
        CHECK_NEAR(d, 1.0, 1e-12);
        CHECK(p < 1e-10);
        CHECK(p >= 0.0);
    }
    dq_destroy(w2);
    dq_destroy(w5);

    /* D = 0.2: CDFs 0.2 / 0.4 at 1 ms, both 1 at 2 ms. */
    double pa[4] = {0, 0.2, 0.8, 0}, pb[4] = {0, 0.4, 0.6, 0};
    struct dq *x = NULL, *y = NULL;
    MUST(dq_from_pdf(0, 4, pa, &x));
    MUST(dq_from_pdf(0, 4, pb, &y));
    if (x && y) {
        double p_small = -1, p_mid = -1, p_large = -1, p_one = -1;
        CHECK_INT(dq_ks(x, y, 10, 10, &d, &p_small), DQ_OK);
        CHECK_NEAR(d, 0.2, 1e-12);
        CHECK_INT(dq_ks(x, y, 50, 50, &d, &p_mid), DQ_OK);
        CHECK_INT(dq_ks(x, y, 2000, 2000, &d, &p_large), DQ_OK);
        CHECK_INT(dq_ks(x, y, 25, 0, &d, &p_one), DQ_OK);
        CHECK(p_small > p_mid);
        CHECK(p_mid > p_large);
        CHECK(p_large < 1e-6);
        CHECK(p_small > 0.5);
        /* effective size na·nb/(na+nb) = 25 for 50 vs 50, and 25 for one-sample n = 25 */
        CHECK_NEAR(p_mid, ref_ks_p(0.2, 25.0), 1e-6);
        CHECK_NEAR(p_one, p_mid, 1e-9);
        double p_asym = -1;
        CHECK_INT(dq_ks(x, y, 30, 150, &d, &p_asym), DQ_OK);
        CHECK_NEAR(p_asym, p_mid, 1e-9); /* 30·150/180 = 25 */
    }
    dq_destroy(x);
    dq_destroy(y);

    /* The sup includes infinity: same shape, tangible 0.5 vs 1 -> D = 0.5; different
     * horizons of the same law -> D = 0. */
    double ph[6] = {0, 0, 0.5, 0, 0, 0}, pf[6] = {0, 0, 1.0, 0, 0, 0};
    struct dq *h = NULL, *f = NULL, *flong = NULL;
    MUST(dq_from_pdf(0, 6, ph, &h));
    MUST(dq_from_pdf(0, 6, pf, &f));
    double pl[60] = {0, 0, 1.0};
    MUST(dq_from_pdf(0, 60, pl, &flong));
    if (h && f && flong) {
        CHECK_INT(dq_ks(h, f, 100, 100, &d, &p), DQ_OK);
        CHECK_NEAR(d, 0.5, 1e-12);
        CHECK_INT(dq_ks(f, flong, 100, 100, &d, &p), DQ_OK);
        CHECK_NEAR(d, 0.0, 1e-12);
    }
    dq_destroy(h);
    dq_destroy(f);
    dq_destroy(flong);
}

static void test_wasserstein(void) {
    const int grid[][2] = {{0, 100}, {-3, 400}, {2, 50}};
    for (size_t c = 0; c < sizeof grid / sizeof grid[0]; c++) {
        int k = grid[c][0], n = grid[c][1];
        double w = dq_width_of(k);
        struct dq *a = wait_dq(k, n, 7 * w), *b = wait_dq(k, n, 31 * w), *nv = NULL;
        MUST(dq_never(k, n, &nv));
        double w1 = -1;
        if (a && b && nv) {
            CHECK_INT(dq_wasserstein1(a, b, &w1), DQ_OK);
            CHECK_NEAR(w1, 24 * w, 1e-12);
            CHECK_INT(dq_wasserstein1(b, a, &w1), DQ_OK);
            CHECK_NEAR(w1, 24 * w, 1e-12);
            CHECK_INT(dq_wasserstein1(a, a, &w1), DQ_OK);
            CHECK_NEAR(w1, 0.0, 1e-15);
            /* lost mass sits at the horizon H */
            CHECK_INT(dq_wasserstein1(a, nv, &w1), DQ_OK);
            CHECK_NEAR(w1, n * w - 7 * w, 1e-12);
        } else {
            CHECK(0);
        }
        dq_destroy(a);
        dq_destroy(b);
        dq_destroy(nv);
    }
    /* Different widths: waits of 6 ms (k = 0) and 12 ms (k = 1) are 6 ms apart. */
    struct dq *a = wait_dq(0, 100, 0.006), *b = wait_dq(1, 100, 0.012);
    double w1 = -1;
    if (a && b) {
        CHECK_INT(dq_wasserstein1(a, b, &w1), DQ_OK);
        CHECK_NEAR(w1, 0.006, 1e-12);
    }
    dq_destroy(a);
    dq_destroy(b);
    /* Half of bin (3, 4] ms lost vs the whole bin: half the mass moves from its edge,
     * 4 ms, to H. */
    double ph[10] = {0, 0, 0, 0.5}, pf[10] = {0, 0, 0, 1.0};
    a = pdf_dq(0, 10, ph);
    b = pdf_dq(0, 10, pf);
    if (a && b) {
        CHECK_INT(dq_wasserstein1(a, b, &w1), DQ_OK);
        CHECK_NEAR(w1, 0.5 * (0.010 - 0.004), 1e-12);
    }
    dq_destroy(a);
    dq_destroy(b);
}

static void test_band(void) {
    double pa[8] = {0.1, 0.2, 0.3, 0.2, 0.1, 0, 0, 0}, pb[8] = {0, 0.1, 0.1, 0.3, 0.3, 0.1, 0, 0};
    struct dq *A = pdf_dq(0, 8, pa), *B = pdf_dq(0, 8, pb);
    if (!A || !B) {
        dq_destroy(A);
        dq_destroy(B);
        return;
    }
    double Fa[8], Fb[8];
    memcpy(Fa, pa, sizeof Fa);
    memcpy(Fb, pb, sizeof Fb);
    ref_cumsum(Fa, 8);
    ref_cumsum(Fb, 8);

    /* identical members: no spread (1e-7: a one-pass E[x²] − E[x]² leaves ~1e-9 of
     * cancellation noise, invisible on a band plot) */
    const struct dq *same[5] = {A, A, A, A, A};
    struct dq_band *band = NULL;
    CHECK_INT(dq_band_compute(same, 5, 1.96, &band), DQ_OK);
    if (band) {
        CHECK_INT(band->k, 0);
        CHECK_INT(band->n, 8);
        for (int i = 0; i < 8; i++) {
            CHECK_NEAR(band->mean[i], Fa[i], 1e-12);
            CHECK_NEAR(band->lo[i], Fa[i], 1e-7);
            CHECK_NEAR(band->hi[i], Fa[i], 1e-7);
        }
    }
    dq_band_destroy(band);
    dq_band_destroy(NULL);

    /* alternating A, B: mean (Fa + Fb)/2, σ = |Fa − Fb|/2 (population) or with the
     * W − 1 correction; width must shrink as W grows. */
    const struct dq *ring[16];
    double width4[8] = {0}, width16[8] = {0};
    int sigma_pop = 0, sigma_sample = 0;
    for (int wcase = 0; wcase < 2; wcase++) {
        int W = wcase ? 16 : 4;
        for (int i = 0; i < W; i++)
            ring[i] = i % 2 ? B : A;
        band = NULL;
        CHECK_INT(dq_band_compute(ring, (size_t)W, 2.0, &band), DQ_OK);
        if (!band)
            continue;
        for (int i = 0; i < 8; i++) {
            double mean = (Fa[i] + Fb[i]) / 2, sp = fabs(Fa[i] - Fb[i]) / 2;
            double ss = sp * sqrt((double)W / (W - 1));
            CHECK_NEAR(band->mean[i], mean, 1e-12);
            CHECK(band->lo[i] <= band->mean[i] + 1e-15);
            CHECK(band->hi[i] >= band->mean[i] - 1e-15);
            CHECK(band->lo[i] >= 0.0 && band->hi[i] <= 1.0);
            double hw_pop = 2.0 * sp / sqrt((double)W), hw_s = 2.0 * ss / sqrt((double)W);
            double want_hi_p = fmin(1.0, mean + hw_pop), want_lo_p = fmax(0.0, mean - hw_pop);
            double want_hi_s = fmin(1.0, mean + hw_s), want_lo_s = fmax(0.0, mean - hw_s);
            if (fabs(band->hi[i] - want_hi_p) < 1e-12 && fabs(band->lo[i] - want_lo_p) < 1e-12)
                sigma_pop++;
            if (fabs(band->hi[i] - want_hi_s) < 1e-12 && fabs(band->lo[i] - want_lo_s) < 1e-12)
                sigma_sample++;
            (wcase ? width16 : width4)[i] = band->hi[i] - band->lo[i];
        }
        dq_band_destroy(band);
    }
    CHECK_MSG(sigma_pop == 16 || sigma_sample == 16,
              "band half-width is neither z·σ/√W with population nor sample σ (%d, %d of 16)",
              sigma_pop, sigma_sample);
    for (int i = 0; i < 8; i++) {
        if (Fa[i] != Fb[i])
            CHECK_MSG(width16[i] < width4[i], "band width at %d: W=16 %g, W=4 %g", i, width16[i],
                      width4[i]);
    }
    /* clamping: a huge z cannot leave [0, 1] */
    const struct dq *two[2] = {A, B};
    band = NULL;
    CHECK_INT(dq_band_compute(two, 2, 100.0, &band), DQ_OK);
    if (band) {
        int clamped = 1;
        for (int i = 0; i < 8; i++)
            clamped = clamped && band->lo[i] >= 0.0 && band->hi[i] <= 1.0;
        CHECK(clamped);
        CHECK_NEAR(band->lo[1], 0.0, 0.0);
    }
    dq_band_destroy(band);
    dq_destroy(A);
    dq_destroy(B);
}

static void test_infer(void) {
    struct dq_moments parent = {.mass = 1, .mean = 10, .variance = 5};
    struct dq_moments obs[2] = {{.mass = 1, .mean = 2, .variance = 1},
                                {.mass = 1, .mean = 3, .variance = 1.5}};
    double mean = 0, var = 0, hint = 99;
    CHECK_INT(dq_infer_unobserved(&parent, obs, 2, &mean, &var, &hint), DQ_OK);
    CHECK_NEAR(mean, 5.0, 1e-12);
    CHECK_NEAR(var, 2.5, 1e-12);
    CHECK_NEAR(hint, 0.0, 0.0);

    struct dq_moments p2 = {.mass = 1, .mean = 6, .variance = 1};
    CHECK_INT(dq_infer_unobserved(&p2, obs, 2, &mean, &var, &hint), DQ_OK);
    CHECK_NEAR(mean, 1.0, 1e-12);
    CHECK_NEAR(var, 0.0, 0.0);
    CHECK_NEAR(hint, -1.5, 1e-12);

    /* observed parts slower than the parent (sampling noise): the mean is reported as 0 */
    struct dq_moments p3 = {.mass = 1, .mean = 4, .variance = 5};
    CHECK_INT(dq_infer_unobserved(&p3, obs, 2, &mean, &var, &hint), DQ_OK);
    CHECK_NEAR(mean, 0.0, 0.0);
    CHECK_NEAR(var, 2.5, 1e-12);

    /* m = 0: the unobserved part is the whole parent */
    CHECK_INT(dq_infer_unobserved(&parent, NULL, 0, &mean, &var, &hint), DQ_OK);
    CHECK_NEAR(mean, 10.0, 0.0);
    CHECK_NEAR(var, 5.0, 0.0);

    /* End to end: infer a hidden exponential stage from a computed sequence. */
    struct dq *o1 = NULL, *u = NULL, *s = NULL;
    MUST(dq_uniform(0, 500, 0.05, 0.15, &o1));
    MUST(dq_exponential(0, 2000, 20.0, &u));
    if (o1 && u)
        MUST(dq_sequence(o1, u, &s));
    if (s) {
        struct dq_moments ms, mo, mu;
        CHECK_INT(dq_moments(s, &ms), DQ_OK);
        CHECK_INT(dq_moments(o1, &mo), DQ_OK);
        CHECK_INT(dq_moments(u, &mu), DQ_OK);
        CHECK_INT(dq_infer_unobserved(&ms, &mo, 1, &mean, &var, &hint), DQ_OK);
        CHECK_NEAR(mean, mu.mean, 1e-9);
        /* variances add up to the w²/4 of sharing a pair between two bins */
        CHECK_NEAR(var, mu.variance + MS * MS / 4, 1e-9);
        CHECK_NEAR(hint, 0.0, 0.0);
    }
    dq_destroy(o1);
    dq_destroy(u);
    dq_destroy(s);
}

static const struct check_case cases[] = {
    CHECK_CASE(moments),     CHECK_CASE(compare), CHECK_CASE(qta),   CHECK_CASE(ks),
    CHECK_CASE(wasserstein), CHECK_CASE(band),    CHECK_CASE(infer),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
