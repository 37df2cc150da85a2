/*
 * test_engine_oracles.c: the ΔQ engine against closed forms (docs/engine.md, "Reference
 * values") and against the
 * grid semantics of dq.h: grid helpers, constructors, and every operator on inputs whose
 * result is known exactly (binned reference cases, waits, never) or analytically
 * (triangular, Erlang-2, first/all-to-finish of uniforms and exponentials).
 *
 * A binned ΔQ carries the mass of (i·w, (i+1)·w] in bin i and cdf[i] is the CDF at that
 * right edge, so a continuous law built by a constructor has cdf[i] = F((i+1)·w) exactly;
 * first-to-finish and all-to-finish keep that (within 1e-9), a sequence of laws that are
 * uniform within each bin keeps it too (the triangular case), and in every case the lower
 * bound cdf[i − lag] never exceeds the closed form.
 */
#include "check.h"

#include "engine_test_util.h"

#include <float.h>

#define MS 0.001

static void test_grid(void) {
    CHECK_NEAR(dq_width_of(0), 0.001, 1e-18);
    CHECK_NEAR(dq_width_of(3), 0.008, 1e-18);
    CHECK_NEAR(dq_width_of(-10), 0.001 / 1024.0, 1e-20);
    CHECK_NEAR(dq_width_of(10), 1.024, 1e-15);

    CHECK_INT(dq_check_grid(0, 1), DQ_OK);
    CHECK_INT(dq_check_grid(-10, 4096), DQ_OK);
    CHECK_INT(dq_check_grid(10, 4096), DQ_OK);
    CHECK_INT(dq_check_grid(0, 0), DQ_ERANGE);
    CHECK_INT(dq_check_grid(0, 4097), DQ_ERANGE);
    CHECK_INT(dq_check_grid(11, 1), DQ_ERANGE);
    CHECK_INT(dq_check_grid(-11, 1), DQ_ERANGE);

    /* Worked examples: 1 s needs 250 µs bins (4000 of them), 5 s needs 2 ms bins. */
    int k = 99, n = -1;
    CHECK_INT(dq_grid_for(1.0, &k, &n), DQ_OK);
    CHECK_INT(k, -2);
    CHECK_INT(n, 4000);
    CHECK_INT(dq_grid_for(5.0, &k, &n), DQ_OK);
    CHECK_INT(k, 1);
    CHECK_INT(n, 2500);
    CHECK_INT(dq_grid_for(4096 * 1.024, &k, &n), DQ_OK);
    CHECK_INT(k, 10);
    CHECK_INT(n, 4096);

    /* The defining properties on a spread of deadlines. */
    const double dmax[] = {1e-9, 1e-6, 3.3e-4, 0.004, 0.0041, 0.25, 1.5, 7.77, 100.0, 4000.0};
    for (size_t i = 0; i < sizeof dmax / sizeof dmax[0]; i++) {
        k = 99;
        n = -1;
        int rc = dq_grid_for(dmax[i], &k, &n);
        CHECK_MSG(rc == DQ_OK, "dq_grid_for(%g) = %d", dmax[i], rc);
        if (rc != DQ_OK)
            continue;
        double w = dq_width_of(k);
        CHECK_MSG(k >= DQ_MIN_K && k <= DQ_MAX_K, "dmax %g: k %d", dmax[i], k);
        CHECK_MSG(n >= 1 && n <= DQ_MAX_BINS, "dmax %g: n %d", dmax[i], n);
        /* n = ceil(dmax / w): the horizon covers dmax, one bin fewer would not. */
        CHECK_MSG(n * w >= dmax[i] * (1 - 1e-12), "dmax %g: n·w = %g", dmax[i], n * w);
        CHECK_MSG((n - 1) * w < dmax[i], "dmax %g: (n-1)·w = %g", dmax[i], (n - 1) * w);
        /* smallest k: one step finer would need more than DQ_MAX_BINS bins. */
        CHECK_MSG(k == DQ_MIN_K || dmax[i] / dq_width_of(k - 1) > DQ_MAX_BINS, "dmax %g: k %d",
                  dmax[i], k);
    }
}

static void test_constructors(void) {
    struct dq *a = NULL;

    MUST(dq_never(0, 10, &a));
    if (a) {
        CHECK_INT(a->k, 0);
        CHECK_INT(a->n, 10);
        CHECK_NEAR(a->width, 0.001, 1e-18);
        CHECK_NEAR(ref_mass(a), 0.0, 0.0);
        CHECK_NEAR(dq_tangible(a), 0.0, 0.0);
        CHECK_NEAR(dq_lost(a), 1.0, 0.0);
        CHECK_NEAR(a->failed, 1.0, 0.0);
        CHECK_NEAR(dq_past_horizon(a), 0.0, 0.0);
        CHECK_NEAR(dq_horizon(a), 0.010, 1e-15);
        CHECK_INT(a->n_ok + a->n_fa + a->n_to + a->n_out, 0);
    }
    dq_destroy(a);
    dq_destroy(NULL);

    /* wait: a point mass at the right edge of the bin (i·w, (i+1)·w] holding t; exactly on
     * an edge it is that edge; at the horizon it is kept; past it lost; 0 is the atom at 0. */
    const struct {
        double t;
        int bin; /* −1: lost */
    } waits[] = {{0.0, 0},    {0.0031, 3}, {0.0036, 3},  {0.0004, 0}, {0.003, 2},
                 {0.0096, 9}, {0.0100, 9}, {0.0101, -1}, {0.5, -1}};
    for (size_t c = 0; c < sizeof waits / sizeof waits[0]; c++) {
        a = NULL;
        MUST(dq_wait(0, 10, waits[c].t, &a));
        if (!a)
            continue;
        for (int i = 0; i < 10; i++)
            CHECK_MSG(a->pdf[i] == (i == waits[c].bin ? 1.0 : 0.0), "wait(%g): pdf[%d] = %g",
                      waits[c].t, i, a->pdf[i]);
        CHECK_NEAR(dq_lost(a), waits[c].bin < 0 ? 1.0 : 0.0, 1e-15);
        CHECK_NEAR(dq_past_horizon(a), waits[c].bin < 0 ? 1.0 : 0.0, 1e-15);
        CHECK_NEAR(a->zero, waits[c].t == 0.0 ? 1.0 : 0.0, 0.0);
        /* a point mass when t is an edge (or 0), else a mass somewhere in its bin */
        double x = waits[c].t / MS;
        CHECK_INT(a->atoms, waits[c].bin < 0 || fabs(x - floor(x + 0.5)) < 1e-9);
        CHECK_INT(a->lag, 0);
        /* never read ahead of time: the CDF just before t is 0, at the bin's edge 1 */
        if (waits[c].bin >= 0 && waits[c].t > 0.0) {
            CHECK_NEAR(dq_cdf_at(a, (waits[c].bin + 1) * MS), 1.0, 0.0);
            CHECK_NEAR(dq_cdf_at(a, waits[c].t * (1 - 1e-6)), 0.0, 0.0);
        }
        dq_destroy(a);
    }
    a = NULL;
    MUST(dq_wait(0, 10, 0.0, &a));
    if (a) {
        double t = -1;
        CHECK_INT(dq_quantile(a, 1.0, &t), DQ_OK);
        CHECK_NEAR(t, 0.0, 0.0); /* the atom at 0 reaches every p at 0 */
        CHECK_NEAR(dq_cdf_at(a, 0.0), 1.0, 0.0);
    }
    dq_destroy(a);

    /* uniform [2, 6] ms: whole bins (2,3], (3,4], (4,5], (5,6]. */
    a = NULL;
    MUST(dq_uniform(0, 10, 0.002, 0.006, &a));
    if (a) {
        const double want[10] = {0, 0, 0.25, 0.25, 0.25, 0.25, 0, 0, 0, 0};
        CHECK_MSG(ref_maxdiff(a->pdf, want, 10) < 1e-12, "uniform[2,6]ms maxdiff %g",
                  ref_maxdiff(a->pdf, want, 10));
        CHECK_INT(a->atoms, 0);
        CHECK_NEAR(a->zero, 0.0, 0.0);
    }
    dq_destroy(a);
    /* uniform [2.5, 6.5] ms: half bins at both ends. */
    a = NULL;
    MUST(dq_uniform(0, 10, 0.0025, 0.0065, &a));
    if (a) {
        const double want[10] = {0, 0, 0.125, 0.25, 0.25, 0.25, 0.125, 0, 0, 0};
        CHECK_MSG(ref_maxdiff(a->pdf, want, 10) < 1e-12, "uniform[2.5,6.5]ms maxdiff %g",
                  ref_maxdiff(a->pdf, want, 10));
    }
    dq_destroy(a);
    /* uniform [8, 12] ms on a 10 ms horizon: (8, 10] kept, the rest past the horizon. */
    a = NULL;
    MUST(dq_uniform(0, 10, 0.008, 0.012, &a));
    if (a) {
        const double want[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0.25, 0.25};
        CHECK_MSG(ref_maxdiff(a->pdf, want, 10) < 1e-12, "uniform[8,12]ms maxdiff %g",
                  ref_maxdiff(a->pdf, want, 10));
        CHECK_NEAR(dq_lost(a), 0.5, 1e-12);
        CHECK_NEAR(a->failed, 0.0, 0.0);
        CHECK_NEAR(dq_past_horizon(a), 0.5, 1e-12);
    }
    dq_destroy(a);
    /* uniform a == b is a wait. */
    a = NULL;
    MUST(dq_uniform(0, 10, 0.004, 0.004, &a));
    if (a) {
        CHECK_NEAR(a->pdf[3], 1.0, 1e-15);
        CHECK_NEAR(ref_mass(a), 1.0, 1e-15);
        CHECK_INT(a->atoms, 1);
    }
    dq_destroy(a);

    /* exponential: the mass of each bin, lost = e^(−λH); cdf[i] = F((i+1)·w). */
    a = NULL;
    const double lam = 50.0, w = 0.001;
    MUST(dq_exponential(0, 100, lam, &a));
    if (a) {
        double maxd = 0.0, cdf = 0.0, maxc = 0.0;
        for (int i = 0; i < 100; i++) {
            double want = exp(-lam * i * w) - exp(-lam * (i + 1) * w);
            maxd = fmax(maxd, fabs(a->pdf[i] - want));
            cdf += a->pdf[i];
            maxc = fmax(maxc, fabs(cdf - (1 - exp(-lam * (i + 1) * w))));
        }
        CHECK_MSG(maxd < 1e-12, "exponential(50) bins maxdiff %g", maxd);
        CHECK_MSG(maxc < 1e-12, "exponential(50) CDF at right edges maxdiff %g", maxc);
        CHECK_NEAR(dq_lost(a), exp(-lam * 0.1), 1e-12);
        CHECK_NEAR(dq_past_horizon(a), exp(-lam * 0.1), 1e-12);
        /* between edges the CDF is the one at the last edge before: never ahead */
        CHECK_NEAR(dq_cdf_at(a, 0.0027), 1 - exp(-lam * 0.002), 1e-12);
        CHECK_NEAR(dq_cdf_at(a, 0.0005), 0.0, 0.0);
    }
    dq_destroy(a);

    /* from samples: counts / total in the bin (i·w, (i+1)·w] holding each duration. */
    const double dur[] = {0.0012, 0.0031, 0.0029, 0.02, 0.0098, 0.003};
    a = NULL;
    MUST(dq_from_samples(0, 10, dur, 6, 2, 1, &a));
    if (a) {
        const double want[10] = {0, 1.0 / 9, 2.0 / 9, 1.0 / 9, 0, 0, 0, 0, 0, 1.0 / 9};
        CHECK_MSG(ref_maxdiff(a->pdf, want, 10) < 1e-15, "from_samples maxdiff %g",
                  ref_maxdiff(a->pdf, want, 10));
        CHECK_NEAR(dq_lost(a), 4.0 / 9, 1e-15);
        CHECK_NEAR(a->failed, 2.0 / 9, 1e-15);
        CHECK_NEAR(dq_past_horizon(a), 2.0 / 9, 1e-15);
        CHECK_INT(a->n_fa, 2);
        CHECK_INT(a->n_to, 1);
        CHECK_INT(a->n_out, 1);
        CHECK_INT(a->atoms, 0);
    }
    dq_destroy(a);
    /* Only failures: a valid ΔQ with all mass lost. */
    a = NULL;
    MUST(dq_from_samples(0, 10, NULL, 0, 3, 0, &a));
    if (a)
        CHECK_NEAR(dq_lost(a), 1.0, 0.0);
    dq_destroy(a);

    /* from counts. */
    uint64_t counts[10] = {3, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    a = NULL;
    MUST(dq_from_counts(0, 10, counts, 1, 2, 2, &a));
    if (a) {
        CHECK_NEAR(a->pdf[0], 3.0 / 9.0, 1e-15);
        CHECK_NEAR(a->pdf[5], 1.0 / 9.0, 1e-15);
        CHECK_NEAR(dq_lost(a), 5.0 / 9.0, 1e-15);
        CHECK_NEAR(a->failed, 1.0 / 9.0, 1e-15);
        CHECK_INT(a->n_fa, 1);
        CHECK_INT(a->n_to, 2);
        CHECK_INT(a->n_out, 2);
    }
    dq_destroy(a);

    /* from pdf copies; clone is deep. */
    double pdf[4] = {0.25, 0.0, 0.5, 0.125};
    a = NULL;
    MUST(dq_from_pdf(2, 4, pdf, &a));
    pdf[0] = 0.9;
    if (a) {
        CHECK(a->pdf != pdf);
        CHECK_NEAR(a->pdf[0], 0.25, 0.0);
        CHECK_INT(a->k, 2);
        CHECK_NEAR(a->width, 0.004, 1e-18);
        CHECK_NEAR(dq_lost(a), 0.125, 1e-15);
        CHECK_NEAR(a->failed, 0.125, 1e-15);
        CHECK_NEAR(dq_horizon(a), 0.016, 1e-15);
        struct dq *c = NULL;
        MUST(dq_clone(a, &c));
        if (c) {
            CHECK(c->pdf != a->pdf);
            CHECK_INT(c->k, 2);
            CHECK_INT(c->n, 4);
            CHECK(memcmp(c->pdf, a->pdf, 4 * sizeof(double)) == 0);
            CHECK_NEAR(c->failed, a->failed, 0.0);
            c->pdf[1] = 0.1;
            CHECK_NEAR(a->pdf[1], 0.0, 0.0);
        }
        dq_destroy(c);
    }
    dq_destroy(a);

    /* from points at grid times 0 … n. */
    const double pts[5] = {0.1, 0.2, 0, 0.3, 0.1};
    a = NULL;
    MUST(dq_from_points(0, 4, pts, &a));
    if (a) {
        const double want[4] = {0.3, 0, 0.3, 0.1};
        CHECK(ref_maxdiff(a->pdf, want, 4) < 1e-15);
        CHECK_NEAR(a->zero, 0.1, 0.0);
        CHECK_INT(a->atoms, 1);
        CHECK_NEAR(dq_cdf_at(a, 0.0), 0.1, 1e-15);
        CHECK_NEAR(dq_cdf_at(a, 0.0035), 0.6, 1e-15);
        CHECK_NEAR(a->failed, 0.3, 1e-15);
    }
    dq_destroy(a);

    /* QTA's own ΔQ: point masses at the edges at or after each t. */
    struct dq_qta q = {
        .n = 3, .t = {0.002, 0.005, 0.0081}, .p = {0.5, 0.8, 0.95}, .max_lost = 0.05};
    a = NULL;
    MUST(dq_from_qta(0, 10, &q, &a));
    if (a) {
        const double want[10] = {0, 0.5, 0, 0, 0.3, 0, 0, 0, 0.15, 0};
        CHECK_MSG(ref_maxdiff(a->pdf, want, 10) < 1e-12, "from_qta maxdiff %g",
                  ref_maxdiff(a->pdf, want, 10));
        CHECK_NEAR(dq_lost(a), 0.05, 1e-12);
        /* 8.1 ms is not an edge: its step is read at 9 ms, so on a 1 ms grid the QTA's
         * own ΔQ misses the point by its mass (conservative); on edges it meets it */
        struct dq_qta_result r;
        CHECK_INT(dq_qta_eval(a, &q, &r), DQ_OK);
        CHECK_INT(r.ok, 0);
        CHECK_NEAR(r.hazard, 0.15, 1e-12);
        q.t[2] = 0.008;
        struct dq *e = NULL;
        MUST(dq_from_qta(0, 10, &q, &e));
        if (e) {
            CHECK_INT(dq_qta_eval(e, &q, &r), DQ_OK);
            CHECK_INT(r.ok, 1);
            CHECK_NEAR(r.margin, 0.0, 0.0);
        }
        dq_destroy(e);
    }
    dq_destroy(a);
}

/* CDF of a at bin index j, i.e. at the right edge (j+1)·w (tangible mass past the end). */
static double cdf_idx(const struct dq *a, int j) {
    double s = 0.0;
    for (int i = 0; i <= j && i < a->n; i++)
        s += a->pdf[i];
    return s;
}

/* The DeltaQ library writes a ΔQ as CDF values at the grid times 0, w, …: point masses. */
static struct dq *from_cdf_points(int k, int n, const double *cdf) {
    double m[16];
    struct dq *a = NULL;
    for (int j = 0; j < n; j++)
        m[j] = cdf[j] - (j ? cdf[j - 1] : 0.0);
    MUST(dq_from_points(k, n - 1, m, &a));
    return a;
}

static void test_binned_reference(void) {
    /* docs/engine.md "Reference values": CDF values at the grid times 0 … 6 (units of w). */
    const double ca[7] = {0, .3, .3, 1, 1, 1, 1}, cb[7] = {0, 0, .6, 1, 1, 1, 1};
    const double cs[7] = {0, 0, 0, .18, .30, .72, 1};
    struct dq *a = from_cdf_points(0, 7, ca), *b = from_cdf_points(0, 7, cb), *s = NULL;
    if (a && b) {
        MUST(dq_sequence(a, b, &s));
        if (s) {
            CHECK_INT(s->n, 12);
            CHECK_INT(s->k, 0);
            CHECK_INT(s->lag, 0); /* point masses add exactly */
            for (int j = 0; j <= 12; j++)
                CHECK_MSG(fabs(dq_cdf_at(s, j * MS) - cs[j < 7 ? j : 6]) < 1e-12, "seq F(%d) = %g",
                          j, dq_cdf_at(s, j * MS));
            /* between grid times: the value at the last one before */
            for (int j = 0; j < 7; j++)
                CHECK_NEAR(dq_cdf_at(s, (j + 0.5) * MS), cs[j], 1e-12);
        }
        dq_destroy(s);
    }
    dq_destroy(a);
    dq_destroy(b);

    const double c1[4] = {0, .5, .75, 1}, c2[4] = {0, .25, .5, 1};
    const double atf[4] = {0, .125, .375, 1}, ftf[4] = {0, .625, .875, 1};
    a = from_cdf_points(0, 4, c1);
    b = from_cdf_points(0, 4, c2);
    if (a && b) {
        const struct dq *ops[2] = {a, b};
        struct dq *r = NULL;
        MUST(dq_all_to_finish(ops, 2, &r));
        if (r) {
            CHECK_INT(r->n, 3);
            for (int j = 0; j < 4; j++)
                CHECK_MSG(fabs(dq_cdf_at(r, j * MS) - atf[j]) < 1e-12, "atf F(%d) = %g", j,
                          dq_cdf_at(r, j * MS));
        }
        dq_destroy(r);
        r = NULL;
        MUST(dq_first_to_finish(ops, 2, &r));
        if (r) {
            CHECK_INT(r->n, 3);
            for (int j = 0; j < 4; j++)
                CHECK_MSG(fabs(dq_cdf_at(r, j * MS) - ftf[j]) < 1e-12, "ftf F(%d) = %g", j,
                          dq_cdf_at(r, j * MS));
        }
        dq_destroy(r);
    }
    dq_destroy(a);
    dq_destroy(b);

    const double i1[4] = {0, .3, .3, 1}, i2[4] = {0, 0, .6, 1};
    a = from_cdf_points(0, 4, i1);
    b = from_cdf_points(0, 4, i2);
    if (a && b) {
        enum dq_order o = DQ_CMP_EQUAL;
        CHECK_INT(dq_compare(a, b, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_INCOMPARABLE);
        o = DQ_CMP_EQUAL;
        CHECK_INT(dq_compare(b, a, 1e-9, &o), DQ_OK);
        CHECK_INT(o, DQ_CMP_INCOMPARABLE);
    }
    dq_destroy(a);
    dq_destroy(b);

    /* Two spread bins: U(1,2)·w + U(2,3)·w is triangular on (3, 5)·w, half of it by 4·w:
     * the halves go to bins 3 and 4; the lower bound reads one bin later. */
    double p1[3] = {0, 1, 0}, p2[3] = {0, 0, 1};
    a = NULL;
    b = NULL;
    s = NULL;
    MUST(dq_from_pdf(0, 3, p1, &a));
    MUST(dq_from_pdf(0, 3, p2, &b));
    if (a && b)
        MUST(dq_sequence(a, b, &s));
    if (s) {
        const double want[6] = {0, 0, 0, 0.5, 0.5, 0};
        CHECK(ref_maxdiff(s->pdf, want, 6) < 1e-15);
        CHECK_INT(s->lag, 1);
        CHECK_NEAR(dq_cdf_at(s, 4 * MS), 0.5, 1e-15);       /* exact */
        CHECK_NEAR(dq_cdf_bound_at(s, 4 * MS), 0.0, 1e-15); /* ≤ 0.5 */
        CHECK_NEAR(dq_cdf_bound_at(s, 5 * MS), 0.5, 1e-15); /* ≤ 1 */
        double t = 0;
        CHECK_INT(dq_quantile(s, 0.5, &t), DQ_OK);
        CHECK_NEAR(t, 4 * MS, 1e-15);
        CHECK_INT(dq_quantile_bound(s, 0.5, &t), DQ_OK);
        CHECK_NEAR(t, 5 * MS, 1e-15);
    }
    dq_destroy(a);
    dq_destroy(b);
    dq_destroy(s);
}

static void test_waits_and_never(void) {
    struct dq *w2 = NULL, *w3 = NULL, *w4 = NULL, *w5 = NULL, *w7 = NULL, *nv = NULL, *r = NULL;
    struct dq *w0 = NULL;
    MUST(dq_wait(0, 10, 0.002, &w2));
    MUST(dq_wait(0, 10, 0.003, &w3));
    MUST(dq_wait(0, 10, 0.004, &w4));
    MUST(dq_wait(0, 10, 0.005, &w5));
    MUST(dq_wait(0, 10, 0.007, &w7));
    MUST(dq_wait(0, 10, 0.0, &w0));
    MUST(dq_never(0, 10, &nv));
    if (!(w2 && w3 && w4 && w5 && w7 && w0 && nv))
        goto out;

    /* wait(3) ; wait(4) = wait(7): the point mass at the edge 7 ms, bin 6 */
    MUST(dq_sequence(w3, w4, &r));
    if (r) {
        CHECK_INT(r->n, 20);
        CHECK_INT(r->lag, 0);
        CHECK_INT(r->atoms, 1);
        for (int i = 0; i < r->n; i++)
            CHECK_NEAR(r->pdf[i], i == 6 ? 1.0 : 0.0, 1e-12);
    }
    dq_destroy(r);
    r = NULL;

    const struct dq *three[3] = {w2, w7, w5};
    MUST(dq_all_to_finish(three, 3, &r));
    if (r)
        for (int i = 0; i < r->n; i++)
            CHECK_NEAR(r->pdf[i], i == 6 ? 1.0 : 0.0, 1e-12);
    dq_destroy(r);
    r = NULL;
    MUST(dq_first_to_finish(three, 3, &r));
    if (r)
        for (int i = 0; i < r->n; i++)
            CHECK_NEAR(r->pdf[i], i == 1 ? 1.0 : 0.0, 1e-12);
    dq_destroy(r);
    r = NULL;

    struct trng g = {42};
    struct dq *x = trng_dq(&g, 0, 10, 0.8, 0.3);
    if (x) {
        /* wait(0) is the identity of sequence; wait(w) moves a ΔQ by exactly one bin */
        MUST(dq_sequence(x, w0, &r));
        if (r) {
            CHECK_INT(r->n, 20);
            CHECK(ref_maxdiff(r->pdf, x->pdf, 10) < 1e-15);
            CHECK_NEAR(ref_mass(r), ref_mass(x), 1e-15);
            CHECK_INT(r->lag, 0);
        }
        dq_destroy(r);
        r = NULL;
        struct dq *w1 = NULL;
        MUST(dq_wait(0, 10, 0.001, &w1));
        if (w1)
            MUST(dq_sequence(w1, x, &r));
        if (r) {
            for (int i = 0; i < 10; i++)
                CHECK_NEAR(r->pdf[i + 1], x->pdf[i], 1e-15);
            CHECK_INT(r->lag, 0);
        }
        dq_destroy(w1);
        dq_destroy(r);
        r = NULL;

        /* never: identity of first-to-finish, absorbing for sequence and all-to-finish. */
        const struct dq *xn[2] = {x, nv}, *nx[2] = {nv, x};
        MUST(dq_first_to_finish(xn, 2, &r));
        if (r) {
            CHECK_INT(r->n, 10);
            CHECK(ref_maxdiff(r->pdf, x->pdf, 10) < 1e-12);
        }
        dq_destroy(r);
        r = NULL;
        MUST(dq_first_to_finish(nx, 2, &r));
        if (r)
            CHECK(ref_maxdiff(r->pdf, x->pdf, 10) < 1e-12);
        dq_destroy(r);
        r = NULL;
        MUST(dq_sequence(x, nv, &r));
        if (r) {
            CHECK_NEAR(ref_mass(r), 0.0, 1e-12);
            CHECK_NEAR(r->failed, 1.0, 1e-12);
        }
        dq_destroy(r);
        r = NULL;
        MUST(dq_sequence(nv, x, &r));
        if (r) {
            CHECK_NEAR(ref_mass(r), 0.0, 1e-12);
            CHECK_NEAR(dq_lost(r), 1.0, 1e-12);
        }
        dq_destroy(r);
        r = NULL;
        MUST(dq_all_to_finish(xn, 2, &r));
        if (r)
            CHECK_NEAR(ref_mass(r), 0.0, 1e-12);
        dq_destroy(r);
        r = NULL;

        /* choice(0.75: X, 0.25: never) = 0.75·X; the never part is failed */
        const double wts[2] = {0.75, 0.25};
        MUST(dq_choice(xn, wts, 2, &r));
        if (r) {
            double want[10];
            for (int i = 0; i < 10; i++)
                want[i] = 0.75 * x->pdf[i];
            CHECK_INT(r->n, 10);
            CHECK(ref_maxdiff(r->pdf, want, 10) < 1e-12);
            CHECK_NEAR(dq_lost(r), 0.75 * dq_lost(x) + 0.25, 1e-12);
            CHECK_NEAR(r->failed, 0.75 * x->failed + 0.25, 1e-12);
        }
        dq_destroy(r);
        r = NULL;
    }
    dq_destroy(x);
out:
    dq_destroy(w0);
    dq_destroy(w2);
    dq_destroy(w3);
    dq_destroy(w4);
    dq_destroy(w5);
    dq_destroy(w7);
    dq_destroy(nv);
}

/* U(0,1) ftf/atf U(0,1): exact at the right edges, F_grid[j] = (j + 1)·w. */
static void test_uniform_race(void) {
    const int n = 1024;
    const double w = dq_width_of(0);
    struct dq *u = NULL, *f = NULL, *a = NULL;
    MUST(dq_uniform(0, n, 0.0, 1.0, &u));
    if (!u)
        return;
    const struct dq *ops[2] = {u, u};
    MUST(dq_first_to_finish(ops, 2, &f));
    MUST(dq_all_to_finish(ops, 2, &a));
    if (f && a) {
        double cf = 0.0, ca = 0.0, df = 0.0, da = 0.0;
        for (int j = 0; j < n; j++) {
            double F = fmin(1.0, (j + 1) * w);
            cf += f->pdf[j];
            ca += a->pdf[j];
            df = fmax(df, fabs(cf - (1 - (1 - F) * (1 - F))));
            da = fmax(da, fabs(ca - F * F));
        }
        CHECK_MSG(df < 1e-9, "U ftf U: max CDF error %g", df);
        CHECK_MSG(da < 1e-9, "U atf U: max CDF error %g", da);
        CHECK_INT(f->lag, 0);
        struct dq_moments m;
        CHECK_INT(dq_moments(f, &m), DQ_OK);
        CHECK_NEAR(m.mean, 1.0 / 3.0, 1e-4);
        CHECK_INT(dq_moments(a, &m), DQ_OK);
        CHECK_NEAR(m.mean, 2.0 / 3.0, 1e-4);
    }
    dq_destroy(f);
    dq_destroy(a);
    dq_destroy(u);
}

/* exponential(λ1) ftf exponential(λ2) = exponential(λ1 + λ2), exactly on the grid. */
static void test_exponential_race(void) {
    struct dq *e1 = NULL, *e2 = NULL, *e12 = NULL, *r = NULL;
    MUST(dq_exponential(0, 500, 3.0, &e1));
    MUST(dq_exponential(0, 500, 5.0, &e2));
    MUST(dq_exponential(0, 500, 8.0, &e12));
    if (e1 && e2 && e12) {
        const struct dq *ops[2] = {e1, e2};
        MUST(dq_first_to_finish(ops, 2, &r));
        if (r) {
            CHECK_INT(r->n, 500);
            double c1 = 0, c2 = 0, d = 0;
            for (int j = 0; j < 500; j++) {
                c1 += r->pdf[j];
                c2 += e12->pdf[j];
                d = fmax(d, fabs(c1 - c2));
            }
            CHECK_MSG(d < 1e-9, "exp(3) ftf exp(5) vs exp(8): max CDF diff %g", d);
            CHECK_NEAR(dq_lost(r), exp(-8.0 * 0.5), 1e-9);
            /* the first bin is F(w), not the half-bin F(w/2) the old convention read at 0 */
            CHECK_NEAR(r->pdf[0], 1 - exp(-8.0 * 0.001), 1e-12);
            CHECK_NEAR(dq_cdf_at(r, 0.0), 0.0, 0.0);
        }
    }
    dq_destroy(r);
    dq_destroy(e1);
    dq_destroy(e2);
    dq_destroy(e12);
}

/* U(1,2) ; U(1,2): triangular on [2, 4]. Uniform within every 1 ms bin, so the sequence
 * is exact at the right edges. */
static double tri_cdf(double h) {
    return h <= 2 ? 0 : h <= 3 ? (h - 2) * (h - 2) / 2 : h < 4 ? 1 - (4 - h) * (4 - h) / 2 : 1;
}

static void test_triangular(void) {
    struct dq *u = NULL, *s = NULL;
    MUST(dq_uniform(0, 2048, 1.0, 2.0, &u));
    if (!u)
        return;
    MUST(dq_sequence(u, u, &s));
    if (s) {
        CHECK_INT(s->k, 0);
        CHECK_INT(s->n, 4096);
        CHECK_INT(s->lag, 1);
        CHECK_NEAR(ref_mass(s), 1.0, 1e-9);
        double t = -1;
        CHECK_INT(dq_quantile(s, 0.5, &t), DQ_OK);
        CHECK_NEAR(t, 3.0, 1e-12);
        t = -1;
        CHECK_INT(dq_quantile(s, 0.9, &t), DQ_OK);
        CHECK_NEAR(t, ceil((4.0 - sqrt(0.2)) / MS) * MS, 1e-12); /* the next edge: 3.553 */
        CHECK_NEAR(dq_cdf_at(s, 3.5), 0.875, 1e-12);
        double maxd = 0, over = 0;
        for (int i = 0; i < s->n; i++) {
            double F = tri_cdf((i + 1) * MS);
            maxd = fmax(maxd, fabs(cdf_idx(s, i) - F));
            over = fmax(over, dq_cdf_bound_at(s, (i + 1) * MS) - F);
        }
        CHECK_MSG(maxd < 1e-12, "triangular CDF max error at the edges %g", maxd);
        CHECK_MSG(over <= 1e-12, "triangular: the lower bound exceeds the law by %g", over);
        struct dq_moments m;
        CHECK_INT(dq_moments(s, &m), DQ_OK);
        CHECK_NEAR(m.mean, 3.0, 1e-9);
        CHECK_NEAR(m.variance, 1.0 / 6.0, 1e-5);
        CHECK_NEAR(m.skewness, 0.0, 1e-6);
        CHECK_NEAR(m.kurtosis, 2.4, 1e-3); /* triangular: excess −0.6 */
    }
    dq_destroy(s);
    dq_destroy(u);
}

/* exponential(λ) ; exponential(λ) = Erlang-2. */
static void test_erlang2(void) {
    const double lam = 4.0;
    struct dq *e = NULL, *s = NULL;
    /* Fine grid, no coarsening: at the edges only the second-order error of sharing a
     * pair's mass between two bins remains (a one-bin shift would be ≈ 1.5e-3). */
    MUST(dq_exponential(0, 2048, lam, &e));
    if (e) {
        MUST(dq_sequence(e, e, &s));
        if (s) {
            CHECK_INT(s->n, 4096);
            CHECK_INT(s->k, 0);
            double maxd = 0, over = 0;
            for (int i = 0; i < 2048; i++) {
                double x = (i + 1) * MS;
                double F = 1 - exp(-lam * x) * (1 + lam * x);
                maxd = fmax(maxd, fabs(cdf_idx(s, i) - F));
                over = fmax(over, dq_cdf_bound_at(s, x) - F);
            }
            CHECK_MSG(maxd < 2e-6, "Erlang-2 (k=0) max CDF error %g", maxd);
            CHECK_MSG(over <= 1e-12, "Erlang-2: the lower bound exceeds the law by %g", over);
            CHECK_NEAR(dq_lost(s), 1 - (1 - exp(-lam * 2.048)) * (1 - exp(-lam * 2.048)), 1e-9);
        }
        dq_destroy(s);
        s = NULL;
    }
    dq_destroy(e);
    e = NULL;
    /* Long horizon: 4096 + 4096 bins do not fit, the result coarsens to 2 ms by summing
     * pairs of bins: at its edges it is the fine result exactly. */
    MUST(dq_exponential(0, 4096, lam, &e));
    if (e) {
        MUST(dq_sequence(e, e, &s));
        if (s) {
            CHECK_INT(s->k, 1);
            CHECK_INT(s->n, DQ_MAX_BINS);
            CHECK_NEAR(dq_horizon(s), 2 * 4096 * MS, 1e-9);
            CHECK_NEAR(ref_mass(s), ref_mass(e) * ref_mass(e), 1e-9);
            double maxd = 0;
            for (int i = 0; i < 2048; i++) {
                double x = (i + 1) * 2 * MS;
                double F = 1 - exp(-lam * x) * (1 + lam * x);
                maxd = fmax(maxd, fabs(cdf_idx(s, i) - F));
            }
            CHECK_MSG(maxd < 2e-6, "Erlang-2 (coarsened) max CDF error %g", maxd);
            struct dq_moments m;
            CHECK_INT(dq_moments(s, &m), DQ_OK);
            CHECK_NEAR(m.mean, 2 / lam, 1e-3);
            CHECK_NEAR(m.variance, 2 / (lam * lam), 1e-3);
        }
        dq_destroy(s);
    }
    dq_destroy(e);
}

/* Means add exactly under sequence, variances up to the w²/4 of sharing a pair between
 * two bins; lost-mass laws of every operator. */
static void test_moment_and_loss_laws(void) {
    struct trng g = {7};
    for (int rep = 0; rep < 20; rep++) {
        int na = trng_int(&g, 1, 300), nb = trng_int(&g, 1, 300), nc = trng_int(&g, 1, 300);
        double la = trng_unit(&g) * 0.5, lb = trng_unit(&g) * 0.5, lc = trng_unit(&g);
        struct dq *a = trng_dq(&g, 0, na, 1 - la, 0.5), *b = trng_dq(&g, 0, nb, 1 - lb, 0.5);
        struct dq *c = trng_dq(&g, 0, nc, 1 - lc, 0.5), *s = NULL, *r = NULL;
        if (!(a && b && c)) {
            CHECK(0);
            goto next;
        }
        MUST(dq_sequence(a, b, &s));
        if (s) {
            struct dq_moments ma, mb, ms;
            CHECK_INT(dq_moments(a, &ma), DQ_OK);
            CHECK_INT(dq_moments(b, &mb), DQ_OK);
            CHECK_INT(dq_moments(s, &ms), DQ_OK);
            CHECK_NEAR(ms.mean, ma.mean + mb.mean, 1e-9 * (1 + ms.mean));
            CHECK_NEAR(ms.variance, ma.variance + mb.variance + MS * MS / 4,
                       1e-9 * (1 + ms.variance));
            CHECK_NEAR(ms.mass, ma.mass * mb.mass, 1e-9);
            CHECK_NEAR(dq_lost(s), 1 - (1 - la) * (1 - lb), 1e-9);
            CHECK_NEAR(s->failed, 1 - (1 - a->failed) * (1 - b->failed), 1e-9);
        }
        const struct dq *ops[3] = {a, b, c};
        MUST(dq_first_to_finish(ops, 3, &r));
        if (r)
            CHECK_NEAR(dq_lost(r), la * lb * lc, 1e-9);
        dq_destroy(r);
        r = NULL;
        MUST(dq_all_to_finish(ops, 3, &r));
        if (r)
            CHECK_NEAR(dq_lost(r), 1 - (1 - la) * (1 - lb) * (1 - lc), 1e-9);
        dq_destroy(r);
        r = NULL;
        const double wts[3] = {0.2, 0.3, 0.5};
        MUST(dq_choice(ops, wts, 3, &r));
        if (r)
            CHECK_NEAR(dq_lost(r), 0.2 * la + 0.3 * lb + 0.5 * lc, 1e-9);
        dq_destroy(r);
    next:
        dq_destroy(s);
        dq_destroy(a);
        dq_destroy(b);
        dq_destroy(c);
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(grid),
    CHECK_CASE(constructors),
    CHECK_CASE(binned_reference),
    CHECK_CASE(waits_and_never),
    CHECK_CASE(uniform_race),
    CHECK_CASE(exponential_race),
    CHECK_CASE(triangular),
    CHECK_CASE(erlang2),
    CHECK_CASE(moment_and_loss_laws),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
