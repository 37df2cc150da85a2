/*
 * test_dqctl_dist.c: the DIST language of `dqctl model` (controller/cli/dqctl_dist.c),
 * called directly: every form and its fields, nesting and its limit, a message for each
 * malformed form, the canonical printer (parse ∘ format is the identity), support bounds
 * and resolutions, the scale/shift transformations against closed forms (scale(uniform(1,2),
 * 0.5) is uniform(0.5,1) within one bin, shift(wait(1),0.5) is wait(1.5) exactly; mean,
 * lost mass, clamping at 0 and the horizon), and reading dqd's ΔQ and snapshot answers.
 */
#include "dqctl_dist.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct dqctl_dist *parse_ok(const char *text) {
    struct dqctl_dist *d = NULL;
    char err[512] = "";
    int rc = dqctl_dist_parse(text, &d, err, sizeof err);
    CHECK_MSG(rc == 0 && d != NULL, "`%s` did not parse: %s", text, err);
    return rc == 0 ? d : NULL;
}

/* text must fail with a message containing needle. */
static void parse_bad(const char *text, const char *needle) {
    struct dqctl_dist *d = NULL;
    char err[512] = "";
    int rc = dqctl_dist_parse(text, &d, err, sizeof err);
    CHECK_MSG(rc == -1 && d == NULL, "`%s` was accepted", text);
    CHECK_MSG(strstr(err, needle) != NULL, "`%s`: message lacks \"%s\": %s", text, needle, err);
    dqctl_dist_free(d);
}

static void test_forms(void) {
    struct dqctl_dist *d = parse_ok("wait(0.25)");
    if (d) {
        CHECK_INT(d->kind, DQCTL_DIST_WAIT);
        CHECK_NEAR(d->a, 0.25, 0);
        CHECK_INT(dqctl_dist_is_live(d), 0);
    }
    dqctl_dist_free(d);
    d = parse_ok("  uniform( 1 , 2 )\t");
    if (d) {
        CHECK_INT(d->kind, DQCTL_DIST_UNIFORM);
        CHECK_NEAR(d->a, 1, 0);
        CHECK_NEAR(d->b, 2, 0);
    }
    dqctl_dist_free(d);
    /* times take units (issue 13); a bare time stays seconds, as in .dq and JSON */
    static const struct {
        const char *text;
        double a, b;
    } timed[] = {
        {"wait(10ms)", 0.010, 0}, {"wait(250us)", 250e-6, 0}, {"wait(1.5s)", 1.5, 0},
        {"wait(2m)", 120, 0},     {"wait( 7ms )", 0.007, 0},  {"uniform(5ms,0.02)", 0.005, 0.02},
    };
    for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
        d = parse_ok(timed[i].text);
        CHECK_MSG(d && fabs(d->a - timed[i].a) < 1e-15 && fabs(d->b - timed[i].b) < 1e-15,
                  "%s: a %g b %g", timed[i].text, d ? d->a : NAN, d ? d->b : NAN);
        dqctl_dist_free(d);
    }
    d = parse_ok("shift(wait(1),-5ms)");
    CHECK(d && d->kind == DQCTL_DIST_SHIFT && fabs(d->a + 0.005) < 1e-15);
    dqctl_dist_free(d);
    d = parse_ok("exponential(10)");
    CHECK(d && d->kind == DQCTL_DIST_EXPONENTIAL && d->a == 10);
    dqctl_dist_free(d);
    d = parse_ok("never");
    CHECK(d && d->kind == DQCTL_DIST_NEVER);
    dqctl_dist_free(d);
    d = parse_ok("samples(dir (1)/a,b.txt)"); /* a path keeps its parentheses and commas */
    CHECK(d && d->kind == DQCTL_DIST_SAMPLES && strcmp(d->path, "dir (1)/a,b.txt") == 0);
    CHECK(d && dqctl_dist_leaf(d) == d && !dqctl_dist_is_live(d));
    dqctl_dist_free(d);

    d = parse_ok("probe:db");
    if (d) {
        CHECK_INT(d->kind, DQCTL_DIST_PROBE);
        CHECK_STR(d->name, "db");
        CHECK_INT(d->window, 0);
        CHECK_INT(dqctl_dist_is_live(d), 1);
        CHECK_INT(dqctl_dist_is_measured(d), 1);
    }
    dqctl_dist_free(d);
    d = parse_ok("probe:_Db_2@3");
    CHECK(d && strcmp(d->name, "_Db_2") == 0 && d->window == 3);
    dqctl_dist_free(d);
    d = parse_ok("probe:db@latest");
    CHECK(d && d->window == 0);
    dqctl_dist_free(d);
    d = parse_ok("calculated:e2e@2");
    CHECK(d && d->kind == DQCTL_DIST_CALCULATED && strcmp(d->name, "e2e") == 0 && d->window == 2);
    dqctl_dist_free(d);
    d = parse_ok("snapshot:3:db");
    CHECK(d && d->kind == DQCTL_DIST_SNAPSHOT && d->snapshot == 3 && !d->before &&
          strcmp(d->name, "db") == 0);
    dqctl_dist_free(d);
    d = parse_ok("snapshot:12:db:before");
    CHECK(d && d->snapshot == 12 && d->before == 1);
    dqctl_dist_free(d);
    d = parse_ok("snapshot:9223372036854775807:db:after");
    CHECK(d && d->snapshot == 9223372036854775807LL && d->before == 0);
    dqctl_dist_free(d);

    /* transformations and nesting */
    d = parse_ok("scale(probe:db,0.5)");
    if (d) {
        CHECK_INT(d->kind, DQCTL_DIST_SCALE);
        CHECK_NEAR(d->a, 0.5, 0);
        CHECK(d->inner && d->inner->kind == DQCTL_DIST_PROBE);
        CHECK_INT(dqctl_dist_is_live(d), 1);
        CHECK_INT(dqctl_dist_is_measured(d), 0);
        CHECK(dqctl_dist_leaf(d) == d->inner);
    }
    dqctl_dist_free(d);
    d = parse_ok(" shift( scale( probe:db , 0.5 ) , -0.002 ) ");
    if (d) {
        CHECK_INT(d->kind, DQCTL_DIST_SHIFT);
        CHECK_NEAR(d->a, -0.002, 0);
        CHECK(d->inner && d->inner->kind == DQCTL_DIST_SCALE && d->inner->a == 0.5);
        CHECK(d->inner && d->inner->inner && d->inner->inner->kind == DQCTL_DIST_PROBE);
        CHECK(dqctl_dist_leaf(d) && strcmp(dqctl_dist_leaf(d)->name, "db") == 0);
    }
    dqctl_dist_free(d);
    d = parse_ok("scale(samples(x,1.txt),2)"); /* the last comma splits */
    CHECK(d && d->a == 2 && d->inner && strcmp(d->inner->path, "x,1.txt") == 0);
    dqctl_dist_free(d);
    d = parse_ok("scale(wait(1),0)"); /* K = 0 is allowed: everything at once */
    CHECK(d && d->a == 0);
    dqctl_dist_free(d);

    /* DQCTL_DIST_MAX_DEPTH transformations deep: fine; one more: refused */
    char deep[512] = "", deeper[1024] = "";
    size_t len = 0;
    for (int i = 0; i < DQCTL_DIST_MAX_DEPTH; i++) {
        len += (size_t)snprintf(deep + len, sizeof deep - len, "%s(", i % 2 ? "shift" : "scale");
    }
    len += (size_t)snprintf(deep + len, sizeof deep - len, "probe:db");
    for (int i = 0; i < DQCTL_DIST_MAX_DEPTH; i++) {
        len += (size_t)snprintf(deep + len, sizeof deep - len, ",1)");
    }
    d = parse_ok(deep);
    int depth = 0;
    for (struct dqctl_dist *x = d; x && x->inner; x = x->inner) {
        depth++;
    }
    CHECK_INT(depth, DQCTL_DIST_MAX_DEPTH);
    dqctl_dist_free(d);
    snprintf(deeper, sizeof deeper, "scale(%s,1)", deep);
    parse_bad(deeper, "nested more than 16 deep");
}

static void test_malformed(void) {
    char longname[300] = "probe:";
    memset(longname + 6, 'x', 256);
    longname[262] = '\0';
    char okname[300] = "probe:";
    memset(okname + 6, 'x', 255);
    okname[261] = '\0';
    struct dqctl_dist *d = parse_ok(okname);
    dqctl_dist_free(d);
    const struct {
        const char *text, *needle;
    } bad[] = {
        {"", "empty distribution"},
        {"   ", "empty distribution"},
        {"gamma(2)", "unknown distribution `gamma(2)`"},
        {"Never", "unknown distribution `Never`"},
        {"wait(-1)", "wait(T) needs one time T ≥ 0"},
        {"wait()", "wait(T) needs one time T ≥ 0"},
        {"wait(0x10)", "wait(T) needs one time T ≥ 0"},
        {"wait(nan)", "wait(T) needs one time T ≥ 0"},
        {"wait(1e999)", "wait(T) needs one time T ≥ 0"},
        {"wait(10 ms)", "wait(T) needs one time T ≥ 0"},
        {"wait(10h)", "wait(T) needs one time T ≥ 0"},
        {"wait(ms)", "wait(T) needs one time T ≥ 0"},
        {"wait(-5ms)", "wait(T) needs one time T ≥ 0"},
        {"wait(1.2.3ms)", "wait(T) needs one time T ≥ 0"},
        {"uniform(20ms,5ms)", "uniform(A,B) needs two times"},
        {"uniform(1q,2)", "uniform(A,B) needs two times"},
        {"shift(wait(1),5xs)", "shift(DIST,S) needs a distribution and a time S"},
        {"scale(wait(1),5ms)", "scale(DIST,K) needs"},
        {"uniform(2,1)", "uniform(A,B) needs two times 0 ≤ A ≤ B"},
        {"uniform(1)", "uniform(A,B) needs two times"},
        {"uniform(1,2,3)", "uniform(A,B) needs two times"},
        {"exponential(0)", "exponential(RATE) needs a rate > 0"},
        {"exponential(-3)", "exponential(RATE) needs a rate > 0"},
        {"samples()", "samples(PATH) needs a file path"},
        {"probe:", "probe:NAME needs a probe name"},
        {"probe:9db", "probe:NAME needs a probe name"},
        {"probe:db x", "probe:NAME needs a probe name"},
        {"probe:d-b", "probe:NAME needs a probe name"},
        {"probe:db@", "probe:NAME@W: W is the window back from the latest"},
        {"probe:db@-1", "probe:NAME@W: W is the window back"},
        {"probe:db@1.5", "probe:NAME@W: W is the window back"},
        {"probe:db@1000001", "probe:NAME@W: W is the window back"},
        {"probe:db@first", "got `first`"},
        {longname, "a probe name has at most 255 bytes (this one has 256)"},
        {"calculated:", "calculated:NAME needs a probe name"},
        {"calculated:db@x", "calculated:NAME@W"},
        {"snapshot:0:db", "snapshot:ID:NAME[:before|:after] needs a snapshot id ≥ 1"},
        {"snapshot:x:db", "needs a snapshot id ≥ 1"},
        {"snapshot:3", "needs a snapshot id ≥ 1 and a probe name"},
        {"snapshot:3:", "needs a snapshot id ≥ 1 and a probe name"},
        {"snapshot:3:9x", "got `snapshot:3:9x`"},
        {"snapshot:99999999999999999999:db", "needs a snapshot id"},
        {"snapshot:3:db:during", "SIDE is `before` or `after`"},
        {"snapshot:3:db:", "SIDE is `before` or `after`"},
        {"scale(probe:db)", "scale(DIST,K) needs a distribution and a factor K ≥ 0"},
        {"scale(probe:db,-1)", "got `-1` for K"},
        {"scale(probe:db,abc)", "got `abc` for K"},
        {"scale(probe:db,)", "got `` for K"},
        {"shift(probe:db,inf)", "shift(DIST,S) needs a distribution and a time S"},
        {"shift(probe:db)", "shift(DIST,S) needs"},
        {"scale(probe:db,0.5", "does not end with the `)` that closes scale(…)"},
        {"shift(wait(1),1", "does not end with the `)` that closes shift(…)"},
        {"wait(1", "does not end with the `)` that closes wait(…)"},
        {"scale(,0.5)", "empty distribution"},
        {"scale(gamma(1),2)", "unknown distribution `gamma(1)`"},
        {"shift(scale(probe:9,1),1)", "probe:NAME needs a probe name"},
        {"scale(scale(wait(-2),1),1)", "wait(T) needs one time T ≥ 0"},
        {"probe:db,0.5", "probe:NAME needs a probe name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parse_bad(bad[i].text, bad[i].needle);
    }
    /* a NULL text is an error, not a crash */
    char err[64];
    CHECK_INT(dqctl_dist_parse(NULL, &d, err, sizeof err), -1);
}

static void test_format(void) {
    static const struct {
        const char *in, *canonical;
    } cases[] = {
        {"wait(0.25)", "wait(0.25)"},
        {" uniform( 1 , 2 ) ", "uniform(1,2)"},
        {"exponential(1e1)", "exponential(10)"},
        {"never", "never"},
        {"samples( a b )", "samples( a b )"},
        {"probe:db@latest", "probe:db"},
        {"probe:db@0", "probe:db"},
        {"probe:db@7", "probe:db@7"},
        {"calculated:x@1", "calculated:x@1"},
        {"snapshot:3:db", "snapshot:3:db:after"},
        {"snapshot:3:db:before", "snapshot:3:db:before"},
        {"shift( scale( probe:db , 0.5 ) , -0.002 )", "shift(scale(probe:db,0.5),-0.002)"},
        {"wait(250ms)", "wait(0.25)"},
        {"shift(wait(2s),-500ms)", "shift(wait(2),-0.5)"},
        {"scale(shift(wait(0.1),0.1),3)", "scale(shift(wait(0.10000000000000001),"
                                          "0.10000000000000001),3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct dqctl_dist *d = parse_ok(cases[i].in);
        char buf[512], again[512];
        dqctl_dist_format(d, buf, sizeof buf);
        CHECK_STR(buf, cases[i].canonical);
        struct dqctl_dist *e = parse_ok(buf);
        dqctl_dist_format(e, again, sizeof again);
        CHECK_STR(again, buf);
        dqctl_dist_free(d);
        dqctl_dist_free(e);
    }
    /* cut to the buffer, NUL-terminated */
    struct dqctl_dist *d = parse_ok("scale(probe:averylongname,0.5)");
    char small[8];
    dqctl_dist_format(d, small, sizeof small);
    CHECK_STR(small, "scale(p");
    dqctl_dist_free(d);
}

/* ---- transformations --------------------------------------------------------------------- */

static struct dq *build(const char *text, int k, int n) {
    struct dqctl_dist *d = parse_ok(text);
    struct dq *q = NULL;
    char err[256] = "";
    if (d) {
        CHECK_MSG(dqctl_dist_build(d, k, n, &q, err, sizeof err) == 0, "build %s: %s", text, err);
    }
    dqctl_dist_free(d);
    return q;
}

/* The quantiles at p = 0.01 … 0.99 of a and b differ by at most tol seconds. */
static void same_quantiles(const struct dq *a, const struct dq *b, double tol, const char *what) {
    int bad = 0;
    double worst = 0.0;
    for (int j = 1; a && b && j < 100; j++) {
        double qa = -1, qb = -1;
        int ra = dq_quantile(a, j / 100.0, &qa), rb = dq_quantile(b, j / 100.0, &qb);
        if (ra != rb || (ra == DQ_OK && fabs(qa - qb) > tol + 1e-12)) {
            bad++;
            worst = fabs(qa - qb) > worst ? fabs(qa - qb) : worst;
        }
    }
    CHECK_MSG(a && b && bad == 0, "%s: %d quantiles differ by more than %g (worst %g)", what, bad,
              tol, worst);
}

static double mean_of(const struct dq *a) {
    struct dq_moments m;
    return a && dq_moments(a, &m) == DQ_OK ? m.mean : NAN;
}

static void test_against_closed_forms(void) {
    /* scale(uniform(1,2),0.5) = uniform(0.5,1) within one bin (1 ms grid, 1024 bins) */
    struct dq *s = build("scale(uniform(1,2),0.5)", 0, 1024);
    struct dq *u = build("uniform(0.5,1)", 0, 1024);
    same_quantiles(s, u, 0.001, "scale(uniform(1,2),0.5) vs uniform(0.5,1)");
    CHECK_NEAR(mean_of(s), 0.75, 0.0005);
    CHECK_NEAR(dq_lost(s), 0.0, 1e-12);
    for (int i = 0; s && u && i <= 1024; i += 64) { /* the CDFs too, at every 64th grid time */
        CHECK_NEAR(dq_cdf_at(s, i * 0.001), dq_cdf_at(u, i * 0.001), 0.0011);
    }
    dq_destroy(s);
    dq_destroy(u);

    /* shift(wait(1),0.5) = wait(1.5), exactly */
    s = build("shift(wait(1),0.5)", 1, 1024);
    u = build("wait(1.5)", 1, 1024);
    int same = s && u;
    for (int i = 0; same && i < 1024; i++) {
        same = fabs(s->pdf[i] - u->pdf[i]) < 1e-12;
    }
    CHECK(same);
    CHECK(s && s->pdf[749] > 1 - 1e-12); /* the bin (1.498, 1.5] s, at its right edge */
    CHECK(s && s->atoms == 1);
    dq_destroy(s);
    dq_destroy(u);

    /* twice as slow: scale(exponential(10),2) = exponential(5) within a bin */
    s = build("scale(exponential(10),2)", 2, 2048);
    u = build("exponential(5)", 2, 2048);
    same_quantiles(s, u, 0.004, "scale(exponential(10),2) vs exponential(5)");
    CHECK_NEAR(mean_of(s), mean_of(u), 0.002);
    dq_destroy(s);
    dq_destroy(u);

    /* a point mass scaled stays centred: scale(wait(1),2) has median and mean 2 s */
    s = build("scale(wait(1),2)", 0, 4096);
    double q = -1;
    CHECK(s && dq_quantile(s, 0.5, &q) == DQ_OK);
    CHECK_NEAR(q, 2.0, 1e-12);
    CHECK_NEAR(mean_of(s), 2.0, 1e-9);
    dq_destroy(s);

    /* negative shifts: shift(uniform(1,2),-0.5) = uniform(0.5,1.5); below 0 is put at 0 */
    s = build("shift(uniform(1,2),-0.5)", 0, 2048);
    u = build("uniform(0.5,1.5)", 0, 2048);
    same_quantiles(s, u, 0.001, "shift(uniform(1,2),-0.5) vs uniform(0.5,1.5)");
    dq_destroy(s);
    dq_destroy(u);
    s = build("shift(wait(0.2),-0.5)", 0, 1024);
    CHECK(s && s->pdf[0] > 1 - 1e-12);
    dq_destroy(s);
    s = build("shift(uniform(0,1),-0.5)", 0, 1024);
    CHECK_NEAR(dq_cdf_at(s, 0.0), 0.5, 0.001); /* the half that would be below 0 */
    CHECK_NEAR(dq_cdf_at(s, 0.25), 0.75, 0.0011);
    CHECK_NEAR(dq_cdf_at(s, 0.5), 1.0, 1e-9);
    dq_destroy(s);

    /* beyond the horizon is lost: scale(uniform(0,1),2) on a 1.024 s horizon */
    s = build("scale(uniform(0,1),2)", 0, 1024);
    CHECK_NEAR(dq_lost(s), 1.0 - 1.024 / 2.0, 0.001);
    dq_destroy(s);

    /* K = 0: all tangible mass at once; never stays never */
    s = build("scale(uniform(1,2),0)", 0, 16);
    CHECK(s && s->pdf[0] > 1 - 1e-12);
    dq_destroy(s);
    s = build("shift(scale(never,0.5),1)", 0, 16);
    CHECK_NEAR(dq_lost(s), 1.0, 1e-12);
    dq_destroy(s);
}

static void test_map(void) {
    /* a measured-like ΔQ: 1 ms bins, masses at 10 … 29 ms (0.04 each), 0.2 lost */
    double pdf[64] = {0};
    for (int i = 10; i < 30; i++) {
        pdf[i] = 0.04;
    }
    struct dq *a = NULL, *m = NULL;
    CHECK_INT(dq_from_pdf(0, 64, pdf, &a), DQ_OK);

    /* identity on the same grid: nothing moves */
    CHECK_INT(dqctl_dq_map(a, 1.0, 0.0, 0, 64, &m), DQ_OK);
    int same = m != NULL;
    for (int i = 0; same && i < 64; i++) {
        same = fabs(m->pdf[i] - a->pdf[i]) < 1e-15;
    }
    CHECK(same);
    dq_destroy(m);
    m = NULL;

    /* a shift by whole bins moves every mass by that many bins; lost stays 0.2 */
    CHECK_INT(dqctl_dq_map(a, 1.0, 0.005, 0, 64, &m), DQ_OK);
    CHECK(m && fabs(m->pdf[15] - 0.04) < 1e-12 && fabs(m->pdf[34] - 0.04) < 1e-12 &&
          m->pdf[14] < 1e-12 && m->pdf[35] < 1e-12);
    CHECK_NEAR(dq_lost(m), 0.2, 1e-12);
    dq_destroy(m);
    m = NULL;

    /* scale 0.5: bin t ms ((t, t + 1]) goes to (t/2, t/2 + ½]: bins 2j and 2j + 1 both
     * into bin j; the mean halves exactly, the lost mass is kept */
    CHECK_INT(dqctl_dq_map(a, 0.5, 0.0, 0, 64, &m), DQ_OK);
    CHECK(m && fabs(m->pdf[5] - 0.08) < 1e-12);  /* t = 10 and 11 */
    CHECK(m && fabs(m->pdf[6] - 0.08) < 1e-12);  /* t = 12 and 13 */
    CHECK(m && fabs(m->pdf[14] - 0.08) < 1e-12); /* t = 28 and 29 */
    CHECK(m && m->pdf[4] == 0.0 && m->pdf[15] == 0.0);
    CHECK_NEAR(mean_of(m), 0.5 * mean_of(a), 1e-12);
    CHECK_NEAR(dq_lost(m), 0.2, 1e-12);
    dq_destroy(m);
    m = NULL;

    /* onto a coarser grid (4 ms) and a finer one (0.5 ms): mass and mean kept */
    CHECK_INT(dqctl_dq_map(a, 2.0, 0.0, 2, 64, &m), DQ_OK);
    CHECK_NEAR(dq_lost(m), 0.2, 1e-12);
    CHECK_NEAR(mean_of(m), 2 * mean_of(a), 0.002);
    dq_destroy(m);
    m = NULL;
    CHECK_INT(dqctl_dq_map(a, 1.0, 0.0, -1, 128, &m), DQ_OK);
    CHECK_NEAR(dq_lost(m), 0.2, 1e-12);
    CHECK_NEAR(mean_of(m), mean_of(a), 1e-12);
    /* 1 ms bin t spreads over the 0.5 ms bins 2t and 2t + 1, half each */
    CHECK(m && fabs(m->pdf[20] - 0.02) < 1e-12 && fabs(m->pdf[21] - 0.02) < 1e-12 &&
          fabs(m->pdf[59] - 0.02) < 1e-12 && m->pdf[19] < 1e-12 && m->pdf[60] < 1e-12);
    dq_destroy(m);
    m = NULL;

    /* past the horizon: lost on top of what was lost */
    CHECK_INT(dqctl_dq_map(a, 1.0, 0.050, 0, 64, &m), DQ_OK);
    /* bins (60, 61] … (79, 80] ms on a 64 ms horizon: the four up to 64 ms stay, 16 of
     * the 20 masses are lost */
    CHECK_NEAR(dq_lost(m), 0.2 + 0.04 * 16, 1e-12);
    CHECK_NEAR(m->failed, 0.2, 1e-12); /* lost stays lost; the rest is past the horizon */
    dq_destroy(m);
    m = NULL;

    /* bad arguments */
    CHECK_INT(dqctl_dq_map(a, -1.0, 0.0, 0, 64, &m), DQ_EINVAL);
    CHECK_INT(dqctl_dq_map(a, 1.0, NAN, 0, 64, &m), DQ_EINVAL);
    CHECK_INT(dqctl_dq_map(a, INFINITY, 0.0, 0, 64, &m), DQ_EINVAL);
    CHECK_INT(dqctl_dq_map(a, 1.0, 0.0, 0, 5000, &m), DQ_ERANGE);
    CHECK_INT(dqctl_dq_map(NULL, 1.0, 0.0, 0, 64, &m), DQ_EINVAL);
    CHECK(m == NULL);

    /* a measured DIST: bound, resolution, build (re-expressed, or mapped from its grid) */
    struct dqctl_dist *d = parse_ok("shift(scale(probe:db,0.5),0.001)");
    if (d) {
        CHECK_NEAR(dqctl_dist_bound(d), 0.001, 1e-15); /* not fetched yet: only the shift */
        char err[256] = "";
        struct dq *q = NULL;
        CHECK_INT(dqctl_dist_build(d, 0, 64, &q, err, sizeof err), -1);
        CHECK(strstr(err, "the ΔQ of db was not fetched") != NULL);
        CHECK_INT(dq_clone(a, &dqctl_dist_leaf(d)->measured), DQ_OK);
        CHECK_NEAR(dqctl_dist_bound(d->inner->inner), 0.030, 1e-12); /* bin 29's upper edge */
        CHECK_NEAR(dqctl_dist_bound(d), 0.5 * 0.030 + 0.001, 1e-12);
        CHECK_NEAR(dqctl_dist_resolution(d), 0.0005, 1e-15);
        CHECK_INT(dqctl_dist_build(d, 0, 64, &q, err, sizeof err), 0);
        CHECK_NEAR(mean_of(q), 0.5 * mean_of(a) + 0.001, 1e-6);
        CHECK_NEAR(dq_lost(q), 0.2, 1e-12);
        dq_destroy(q);
        q = NULL;
        CHECK_INT(dqctl_dist_build(d->inner->inner, 1, 32, &q, err, sizeof err), 0);
        CHECK(q && q->k == 1 && q->n == 32);
        CHECK_NEAR(dq_lost(q), 0.2, 1e-12);
        dq_destroy(q);
    }
    dqctl_dist_free(d);
    d = parse_ok("shift(wait(1),-3)");
    CHECK(d && dqctl_dist_bound(d) == 0.0 && dqctl_dist_resolution(d) == 0.0);
    dqctl_dist_free(d);
    d = parse_ok("scale(uniform(1,2),0.5)");
    CHECK(d && dqctl_dist_bound(d) == 1.0);
    dqctl_dist_free(d);
    dq_destroy(a);
}

/* ---- dqd's answers ---------------------------------------------------------------------- */

static void test_json(void) {
    char err[256];
    struct dq *q = NULL;
    json_t *o = json_pack("{s:f,s:i,s:[f,f,f,f],s:f}", "bin_width", 0.002, "bins", 4, "pdf", 0.0,
                          0.5, 0.25, 0.0, "lost", 0.25);
    CHECK_INT(dqctl_dq_from_json(o, &q, err, sizeof err), 0);
    CHECK(q && q->k == 1 && q->n == 4 && q->pdf[1] == 0.5);
    CHECK_NEAR(dq_lost(q), 0.25, 1e-12);
    dq_destroy(q);
    q = NULL;
    json_decref(o);
    /* a cdf without pdf */
    o = json_pack("{s:f,s:i,s:[f,f,f]}", "bin_width", 0.001, "bins", 3, "cdf", 0.1, 0.1, 0.7);
    CHECK_INT(dqctl_dq_from_json(o, &q, err, sizeof err), 0);
    CHECK(q && fabs(q->pdf[0] - 0.1) < 1e-15 && q->pdf[1] == 0.0 && fabs(q->pdf[2] - 0.6) < 1e-15);
    dq_destroy(q);
    q = NULL;
    json_decref(o);

    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"[]", "a ΔQ without bin_width and bins"},
        {"{\"bins\":2,\"pdf\":[0,0]}", "a ΔQ without bin_width and bins"},
        {"{\"bin_width\":0.003,\"bins\":2,\"pdf\":[0,0]}", "bin width 0.003 s, not 0.001 s"},
        {"{\"bin_width\":0.001,\"bins\":0,\"pdf\":[]}", "a ΔQ with 0 bins"},
        {"{\"bin_width\":0.001,\"bins\":2.5,\"pdf\":[0,0]}", "a ΔQ with 2.5 bins"},
        {"{\"bin_width\":0.001,\"bins\":5000,\"pdf\":[]}", "a ΔQ with 5000 bins"},
        {"{\"bin_width\":0.001,\"bins\":3,\"pdf\":[0,0]}", "whose pdf (or cdf) is not 3 numbers"},
        {"{\"bin_width\":0.001,\"bins\":2,\"pdf\":[0,-0.1]}", "pdf[1] is not a mass in [0, 1]"},
        {"{\"bin_width\":0.001,\"bins\":2,\"pdf\":[0,\"x\"]}", "pdf[1] is not a mass"},
        {"{\"bin_width\":0.001,\"bins\":2,\"pdf\":[0.6,0.6]}", "is not valid: masses sum to 1.2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
        err[0] = '\0';
        q = NULL;
        CHECK_MSG(dqctl_dq_from_json(j, &q, err, sizeof err) == -1 && q == NULL, "accepted %s",
                  bad[i].json);
        CHECK_MSG(strstr(err, bad[i].needle) != NULL, "%s: message %s", bad[i].json, err);
        json_decref(j);
    }
}

static void test_snapshot_pick(void) {
    /* fired at t = 100 s with 0.1 s windows: 99.9 … 100 is before, 100 … and 100.1 … after */
    json_t *snap = json_loads(
        "{\"id\":3,\"time\":100.0,\"complete\":true,\"dqs\":["
        "{\"probe\":\"db\",\"kind\":\"observed\",\"start\":99.8,\"end\":99.9,\"n\":1},"
        "{\"probe\":\"db\",\"kind\":\"observed\",\"start\":99.9,\"end\":100.0,\"n\":2},"
        "{\"probe\":\"db\",\"kind\":\"calculated\",\"start\":100.2,\"end\":100.3,\"n\":9},"
        "{\"probe\":\"db\",\"kind\":\"observed\",\"start\":100.1,\"end\":100.2,\"n\":4},"
        "{\"probe\":\"db\",\"kind\":\"observed\",\"start\":100.0,\"end\":100.1,\"n\":3},"
        "{\"probe\":\"other\",\"kind\":\"observed\",\"start\":100.0,\"end\":100.1},"
        "{\"probe\":\"other\",\"kind\":\"observed\",\"start\":100.1,\"end\":100.2},"
        "{\"probe\":\"pay\",\"kind\":\"observed\",\"start\":100.1,\"end\":100.2}]}",
        0, NULL);
    CHECK(snap != NULL);
    char err[256];
    const json_t *e = dqctl_snapshot_pick(snap, "db", 0, err, sizeof err);
    CHECK_INT(json_integer_value(json_object_get(e, "n")), 4); /* newest after, observed */
    e = dqctl_snapshot_pick(snap, "db", 1, err, sizeof err);
    CHECK_INT(json_integer_value(json_object_get(e, "n")), 2); /* the firing window */
    CHECK(dqctl_snapshot_pick(snap, "zz", 0, err, sizeof err) == NULL);
    CHECK_STR(err, "snapshot 3 holds no observed ΔQ of probe zz (it holds: db, other, pay)");
    json_decref(snap);

    snap = json_loads("{\"id\":4,\"time\":100.0,\"complete\":false,\"dqs\":["
                      "{\"probe\":\"db\",\"kind\":\"observed\",\"start\":99.9,\"end\":100.0}]}",
                      0, NULL);
    CHECK(dqctl_snapshot_pick(snap, "db", 0, err, sizeof err) == NULL);
    CHECK(strstr(err, "snapshot 4 has no observed ΔQ of db after its firing yet (it is still "
                      "collecting") != NULL);
    CHECK(strstr(err, "try snapshot:ID:NAME:before") != NULL);
    CHECK(dqctl_snapshot_pick(snap, "db", 1, err, sizeof err) != NULL);
    json_decref(snap);
    snap = json_loads("{\"id\":5,\"time\":1.0,\"dqs\":[]}", 0, NULL);
    CHECK(dqctl_snapshot_pick(snap, "db", 1, err, sizeof err) == NULL);
    CHECK_STR(err, "snapshot 5 holds no observed ΔQ of probe db (it holds none)");
    json_decref(snap);
    snap = json_loads("{\"id\":6}", 0, NULL);
    CHECK(dqctl_snapshot_pick(snap, "db", 0, err, sizeof err) == NULL);
    CHECK(strstr(err, "no time and dqs list") != NULL);
    json_decref(snap);
}

static const struct check_case cases[] = {
    CHECK_CASE(forms),         CHECK_CASE(malformed),
    CHECK_CASE(format),        CHECK_CASE(against_closed_forms),
    CHECK_CASE(map),           CHECK_CASE(json),
    CHECK_CASE(snapshot_pick),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
