/*
 * test_engine_errors.c: every engine entry point refuses bad input with a negative
 * dq_error code and a non-empty dq_last_error(), leaves *out untouched and never aborts
 * (the sanitizer build runs this file too). Codes the header names exactly (ERANGE for
 * grids, EINVAL for samples, ENOTREACHED, ...) are checked exactly; where the contract
 * only says "invalid" the test accepts EINVAL or ERANGE and prints what it got.
 */
#include "check.h"

#include "engine_test_util.h"

#include "dq_conv.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static struct dq sentinel_dq;
#define SENTINEL (&sentinel_dq)

/* A failing call: exact code, a message, and (when given) *out left alone. */
#define EXPECT_CODE(call, code)                                                                    \
    do {                                                                                           \
        dq_clear_error();                                                                          \
        int ec_rc_ = (call);                                                                       \
        CHECK_MSG(ec_rc_ == (code), "%s returned %d (%s), want %s", #call, ec_rc_,                 \
                  dq_err_name(ec_rc_), dq_err_name(code));                                         \
        CHECK_MSG(dq_last_error()[0] != '\0', "%s: empty dq_last_error()", #call);                 \
    } while (0)

/* EINVAL or ERANGE: the header does not name the code. */
#define EXPECT_BAD(call)                                                                           \
    do {                                                                                           \
        dq_clear_error();                                                                          \
        int eb_rc_ = (call);                                                                       \
        CHECK_MSG(eb_rc_ == DQ_EINVAL || eb_rc_ == DQ_ERANGE, "%s returned %d (%s)", #call,        \
                  eb_rc_, dq_err_name(eb_rc_));                                                    \
        CHECK_MSG(dq_last_error()[0] != '\0', "%s: empty dq_last_error()", #call);                 \
    } while (0)

/*
 * A NULL output pointer must be refused with DQ_EINVAL. The call runs in a child process
 * so that one crash (a write through NULL) is reported by name and the other checks
 * still run.
 */
#define EXPECT_NULL_OUT(call)                                                                      \
    do {                                                                                           \
        fflush(NULL);                                                                              \
        pid_t no_pid_ = fork();                                                                    \
        if (no_pid_ == 0) {                                                                        \
            dq_clear_error();                                                                      \
            int no_rc_ = (call);                                                                   \
            _exit(no_rc_ == DQ_EINVAL && dq_last_error()[0] != '\0' ? 0 : 3);                      \
        }                                                                                          \
        int no_st_ = 0;                                                                            \
        CHECK_MSG(no_pid_ > 0 && waitpid(no_pid_, &no_st_, 0) == no_pid_, "fork for %s", #call);   \
        CHECK_MSG(WIFEXITED(no_st_) && WEXITSTATUS(no_st_) == 0,                                   \
                  "%s with a NULL output pointer: %s", #call,                                      \
                  WIFSIGNALED(no_st_)        ? "crashed (signal)"                                  \
                  : WEXITSTATUS(no_st_) == 3 ? "did not return DQ_EINVAL with a message"           \
                                             : "crashed (sanitizer report above)");                \
    } while (0)

static void test_error_module(void) {
    CHECK_STR(dq_err_name(DQ_EINVAL), "DQ_EINVAL");
    CHECK_STR(dq_err_name(DQ_ECYCLE), "DQ_ECYCLE");
    CHECK_STR(dq_err_name(DQ_EBUSY), "DQ_EBUSY");
    CHECK_STR(dq_strerror(DQ_EBUSY), "in use by another process");
    CHECK_STR(dq_err_name(-999), "DQ_UNKNOWN");
    CHECK_STR(dq_strerror(DQ_ERANGE), "value out of range");
    CHECK_STR(dq_strerror(DQ_ENOTREACHED), "probability not reached by the tangible mass");
    CHECK_STR(dq_strerror(12345), "unknown error");
    dq_clear_error();
    CHECK_STR(dq_last_error(), "");
    CHECK_INT(dq_fail(DQ_EMISMATCH, "grid %d vs %d", 3, 4), DQ_EMISMATCH);
    CHECK_STR(dq_last_error(), "grid 3 vs 4");
    dq_clear_error();
    CHECK_STR(dq_last_error(), "");
    /* a long message is truncated, not overflowed */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_INT(dq_fail(DQ_EINVAL, "%s", big), DQ_EINVAL);
    CHECK(strlen(dq_last_error()) > 0 && strlen(dq_last_error()) < sizeof big);
}

static void test_grid_errors(void) {
    struct dq *out = SENTINEL;
    int k = 77, n = 77;
    const double bad_dmax[] = {0.0, -1.0, NAN, INFINITY, 4096 * 1.024 * 1.001};
    for (size_t i = 0; i < sizeof bad_dmax / sizeof bad_dmax[0]; i++)
        EXPECT_CODE(dq_grid_for(bad_dmax[i], &k, &n), DQ_ERANGE);
    CHECK_INT(k, 77);
    CHECK_INT(n, 77);

    const int bad[][2] = {{0, 0}, {0, -5}, {0, 4097}, {11, 10}, {-11, 10}, {1000, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int bk = bad[i][0], bn = bad[i][1];
        double pdf[1] = {0.5};
        uint64_t counts[1] = {1};
        double dur[1] = {0.001};
        struct dq_qta q = {.n = 1, .t = {0.001}, .p = {0.5}, .max_lost = 0.5};
        EXPECT_CODE(dq_check_grid(bk, bn), DQ_ERANGE);
        EXPECT_CODE(dq_never(bk, bn, &out), DQ_ERANGE);
        EXPECT_CODE(dq_wait(bk, bn, 0.001, &out), DQ_ERANGE);
        EXPECT_CODE(dq_uniform(bk, bn, 0.0, 0.001, &out), DQ_ERANGE);
        EXPECT_CODE(dq_exponential(bk, bn, 1.0, &out), DQ_ERANGE);
        EXPECT_CODE(dq_from_samples(bk, bn, dur, 1, 0, 0, &out), DQ_ERANGE);
        /* counts/pdf arrays are only 1 long: a sane engine checks the grid first */
        if (bn <= 1) {
            EXPECT_CODE(dq_from_counts(bk, bn, counts, 0, 0, 0, &out), DQ_ERANGE);
            EXPECT_CODE(dq_from_pdf(bk, bn, pdf, &out), DQ_ERANGE);
        }
        EXPECT_CODE(dq_from_qta(bk, bn, &q, &out), DQ_ERANGE);
        CHECK(out == SENTINEL);
    }
}

static void test_constructor_errors(void) {
    struct dq *out = SENTINEL;
    EXPECT_BAD(dq_wait(0, 10, -0.001, &out));
    EXPECT_BAD(dq_wait(0, 10, NAN, &out));
    EXPECT_BAD(dq_wait(0, 10, -INFINITY, &out));
    EXPECT_BAD(dq_uniform(0, 10, 0.004, 0.002, &out)); /* a > b */
    EXPECT_BAD(dq_uniform(0, 10, -0.001, 0.002, &out));
    EXPECT_BAD(dq_uniform(0, 10, NAN, 0.002, &out));
    EXPECT_BAD(dq_uniform(0, 10, 0.001, NAN, &out));
    EXPECT_BAD(dq_exponential(0, 10, 0.0, &out));
    EXPECT_BAD(dq_exponential(0, 10, -3.0, &out));
    EXPECT_BAD(dq_exponential(0, 10, NAN, &out));

    const double with_nan[3] = {0.001, NAN, 0.002}, with_neg[3] = {0.001, -0.002, 0.002};
    const double with_inf[2] = {0.001, INFINITY};
    EXPECT_CODE(dq_from_samples(0, 10, with_nan, 3, 0, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_from_samples(0, 10, with_neg, 3, 0, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_from_samples(0, 10, with_inf, 2, 0, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_from_samples(0, 10, NULL, 0, 0, 0, &out), DQ_EINVAL); /* total 0 */
    EXPECT_CODE(dq_from_samples(0, 10, NULL, 3, 0, 0, &out), DQ_EINVAL);

    uint64_t zeros[10] = {0};
    EXPECT_BAD(dq_from_counts(0, 10, zeros, 0, 0, 0, &out)); /* no instance at all */
    EXPECT_CODE(dq_from_counts(0, 10, NULL, 1, 0, 0, &out), DQ_EINVAL);

    double neg[3] = {0.5, -0.1, 0.2}, over[3] = {0.5, 0.4, 0.2}, nan3[3] = {0.1, NAN, 0.1};
    double inf3[3] = {0.1, INFINITY, 0.1};
    EXPECT_BAD(dq_from_pdf(0, 3, neg, &out));
    EXPECT_BAD(dq_from_pdf(0, 3, over, &out));
    EXPECT_BAD(dq_from_pdf(0, 3, nan3, &out));
    EXPECT_BAD(dq_from_pdf(0, 3, inf3, &out));
    EXPECT_CODE(dq_from_pdf(0, 3, NULL, &out), DQ_EINVAL);
    /* Σ = 1 + 1e-12 is within DQ_EPS: accepted */
    double edge[2] = {0.5, 0.5 + 1e-12};
    struct dq *ok = NULL;
    CHECK_INT(dq_from_pdf(0, 2, edge, &ok), DQ_OK);
    CHECK(ok == NULL || dq_tangible(ok) <= 1.0);
    dq_destroy(ok);

    EXPECT_CODE(dq_clone(NULL, &out), DQ_EINVAL);
    CHECK(out == SENTINEL);

    /* Instance counts whose 64-bit total wraps around must be refused (or at least not
     * give masses above 1). */
    const uint64_t huge[2] = {UINT64_MAX, 2}, two_ok[2] = {2, 0};
    const double two[2] = {0.001, 0.002};
    for (int c = 0; c < 3; c++) {
        struct dq *h = NULL;
        dq_clear_error();
        int rc = c == 0   ? dq_from_counts(0, 2, huge, 0, 0, 0, &h)
                 : c == 1 ? dq_from_counts(0, 2, two_ok, UINT64_MAX, 0, 0, &h)
                          : dq_from_samples(0, 10, two, 2, UINT64_MAX, 0, &h);
        CHECK_MSG(rc < 0 ? dq_last_error()[0] != '\0' : (h && ref_mass(h) <= 1 + 1e-9),
                  "overflowing counts (case %d): rc %d, mass %g", c, rc, h ? ref_mass(h) : -1.0);
        dq_destroy(h);
    }
}

/* Every function with an output pointer refuses NULL there (valid inputs otherwise). */
static void test_null_outputs(void) {
    double one[1] = {1.0}, dur[1] = {0.001};
    uint64_t counts[1] = {1};
    struct dq_qta q = {.n = 1, .t = {0.001}, .p = {0.5}, .max_lost = 0.5};
    struct dq *a = NULL;
    MUST(dq_wait(0, 10, 0.002, &a));
    if (!a)
        return;
    const struct dq *ops[2] = {a, a};
    const double wts[2] = {0.5, 0.5};
    int k = 0, n = 0;
    double d = 0;
    struct dq_moments pm = {.mass = 1, .mean = 1, .variance = 1};
    EXPECT_NULL_OUT(dq_grid_for(1.0, NULL, &n));
    EXPECT_NULL_OUT(dq_grid_for(1.0, &k, NULL));
    EXPECT_NULL_OUT(dq_never(0, 10, NULL));
    EXPECT_NULL_OUT(dq_wait(0, 10, 0.001, NULL));
    EXPECT_NULL_OUT(dq_uniform(0, 10, 0.001, 0.002, NULL));
    EXPECT_NULL_OUT(dq_exponential(0, 10, 1.0, NULL));
    EXPECT_NULL_OUT(dq_from_samples(0, 10, dur, 1, 0, 0, NULL));
    EXPECT_NULL_OUT(dq_from_counts(0, 1, counts, 0, 0, 0, NULL));
    EXPECT_NULL_OUT(dq_from_pdf(0, 1, one, NULL));
    EXPECT_NULL_OUT(dq_from_qta(0, 10, &q, NULL));
    EXPECT_NULL_OUT(dq_clone(a, NULL));
    EXPECT_NULL_OUT(dq_qta_eval(a, &q, NULL));
    EXPECT_NULL_OUT(dq_sequence(a, a, NULL));
    EXPECT_NULL_OUT(dq_sequence_n(ops, 2, NULL));
    EXPECT_NULL_OUT(dq_first_to_finish(ops, 2, NULL));
    EXPECT_NULL_OUT(dq_all_to_finish(ops, 2, NULL));
    EXPECT_NULL_OUT(dq_choice(ops, wts, 2, NULL));
    EXPECT_NULL_OUT(dq_rebin(a, 1, NULL));
    EXPECT_NULL_OUT(dq_reexpress(a, 1, 10, NULL));
    EXPECT_NULL_OUT(dq_quantile(a, 0.5, NULL));
    EXPECT_NULL_OUT(dq_moments(a, NULL));
    EXPECT_NULL_OUT(dq_compare(a, a, 0.0, NULL));
    EXPECT_NULL_OUT(dq_ks(a, a, 1, 1, NULL, &d));
    EXPECT_NULL_OUT(dq_ks(a, a, 1, 1, &d, NULL));
    EXPECT_NULL_OUT(dq_wasserstein1(a, a, NULL));
    EXPECT_NULL_OUT(dq_band_compute(ops, 2, 1.0, NULL));
    EXPECT_NULL_OUT(dq_infer_unobserved(&pm, NULL, 0, NULL, &d, &d));
    dq_destroy(a);
}

static void test_qta_errors(void) {
    struct dq *out = SENTINEL;
    struct dq_qta good = {.n = 2, .t = {0.001, 0.002}, .p = {0.5, 0.9}, .max_lost = 0.1};
    struct dq_qta q;
    CHECK_INT(dq_qta_check(&good), DQ_OK);
    const char *what[] = {
        "n = 0",        "n = 17",       "t not increasing", "t equal",   "p decreasing",
        "p = 0",        "p > 1",        "t negative",       "t NaN",     "p NaN",
        "max_lost < 0", "max_lost > 1", "max_lost NaN",     "n negative"};
    for (int c = 0; c < (int)(sizeof what / sizeof what[0]); c++) {
        q = good;
        switch (c) {
        case 0:
            q.n = 0;
            break;
        case 1:
            q.n = DQ_QTA_MAX_POINTS + 1;
            break;
        case 2:
            q.t[1] = 0.0005;
            break;
        case 3:
            q.t[1] = q.t[0];
            break;
        case 4:
            q.p[1] = 0.4;
            break;
        case 5:
            q.p[0] = 0.0;
            break;
        case 6:
            q.p[1] = 1.5;
            break;
        case 7:
            q.t[0] = -0.001;
            break;
        case 8:
            q.t[1] = NAN;
            break;
        case 9:
            q.p[0] = NAN;
            break;
        case 10:
            q.max_lost = -0.1;
            break;
        case 11:
            q.max_lost = 1.5;
            break;
        case 12:
            q.max_lost = NAN;
            break;
        default:
            q.n = -3;
            break;
        }
        dq_clear_error();
        int rc = dq_qta_check(&q);
        CHECK_MSG(rc == DQ_EINVAL || rc == DQ_ERANGE, "qta_check(%s) = %d", what[c], rc);
        CHECK_MSG(dq_last_error()[0] != '\0', "qta_check(%s): no message", what[c]);
        EXPECT_BAD(dq_from_qta(0, 10, &q, &out));
        struct dq *a = NULL;
        struct dq_qta_result r;
        MUST(dq_wait(0, 10, 0.001, &a));
        if (a)
            EXPECT_BAD(dq_qta_eval(a, &q, &r));
        dq_destroy(a);
    }
    CHECK(out == SENTINEL);
    EXPECT_CODE(dq_qta_check(NULL), DQ_EINVAL);
    EXPECT_CODE(dq_from_qta(0, 10, NULL, &out), DQ_EINVAL);
    struct dq_qta_result r;
    EXPECT_CODE(dq_qta_eval(NULL, &good, &r), DQ_EINVAL);
    struct dq *a = NULL;
    MUST(dq_wait(0, 10, 0.001, &a));
    if (a) {
        EXPECT_CODE(dq_qta_eval(a, NULL, &r), DQ_EINVAL);
    }
    dq_destroy(a);
}

static void test_operator_errors(void) {
    struct dq *out = SENTINEL, *a = NULL, *b = NULL;
    MUST(dq_wait(0, 10, 0.002, &a));
    MUST(dq_wait(1, 10, 0.004, &b));
    if (!a || !b) {
        dq_destroy(a);
        dq_destroy(b);
        return;
    }
    const struct dq *ops[3] = {a, b, a}, *withnull[3] = {a, NULL, b};
    const double wts[3] = {0.2, 0.3, 0.5};

    EXPECT_CODE(dq_sequence(NULL, b, &out), DQ_EINVAL);
    EXPECT_CODE(dq_sequence(a, NULL, &out), DQ_EINVAL);

    EXPECT_CODE(dq_sequence_n(ops, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_sequence_n(NULL, 2, &out), DQ_EINVAL);
    EXPECT_CODE(dq_sequence_n(withnull, 3, &out), DQ_EINVAL);

    EXPECT_CODE(dq_first_to_finish(ops, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_first_to_finish(NULL, 2, &out), DQ_EINVAL);
    EXPECT_CODE(dq_first_to_finish(withnull, 3, &out), DQ_EINVAL);
    EXPECT_CODE(dq_all_to_finish(ops, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_all_to_finish(NULL, 2, &out), DQ_EINVAL);
    EXPECT_CODE(dq_all_to_finish(withnull, 3, &out), DQ_EINVAL);

    EXPECT_CODE(dq_choice(ops, wts, 0, &out), DQ_EINVAL);
    EXPECT_CODE(dq_choice(NULL, wts, 3, &out), DQ_EINVAL);
    EXPECT_CODE(dq_choice(ops, NULL, 3, &out), DQ_EINVAL);
    EXPECT_CODE(dq_choice(withnull, wts, 3, &out), DQ_EINVAL);
    const double low[3] = {0.2, 0.3, 0.4}, high[3] = {0.5, 0.5, 0.1};
    const double negw[3] = {-0.2, 0.7, 0.5}, bigw[3] = {1.5, -0.25, -0.25};
    const double nanw[3] = {NAN, 0.5, 0.5}, near[3] = {0.2, 0.3, 0.5 + 1e-6};
    EXPECT_BAD(dq_choice(ops, low, 3, &out));
    EXPECT_BAD(dq_choice(ops, high, 3, &out));
    EXPECT_BAD(dq_choice(ops, negw, 3, &out));
    EXPECT_BAD(dq_choice(ops, bigw, 3, &out));
    EXPECT_BAD(dq_choice(ops, nanw, 3, &out));
    EXPECT_BAD(dq_choice(ops, near, 3, &out));
    /* within DQ_EPS of 1: accepted */
    const double close[3] = {0.2, 0.3, 0.5 + 1e-12};
    struct dq *c = NULL;
    CHECK_INT(dq_choice(ops, close, 3, &c), DQ_OK);
    dq_destroy(c);

    EXPECT_CODE(dq_rebin(NULL, 1, &out), DQ_EINVAL);
    EXPECT_BAD(dq_rebin(b, 0, &out)); /* finer than the operand */
    EXPECT_CODE(dq_rebin(a, DQ_MAX_K + 1, &out), DQ_ERANGE);
    EXPECT_CODE(dq_reexpress(NULL, 0, 10, &out), DQ_EINVAL);
    EXPECT_CODE(dq_reexpress(a, 0, 0, &out), DQ_ERANGE);
    EXPECT_CODE(dq_reexpress(a, 0, DQ_MAX_BINS + 1, &out), DQ_ERANGE);
    EXPECT_CODE(dq_reexpress(a, DQ_MIN_K - 1, 10, &out), DQ_ERANGE);
    EXPECT_CODE(dq_reexpress(a, DQ_MAX_K + 1, 10, &out), DQ_ERANGE);
    CHECK(out == SENTINEL);

    /* queries */
    double t = 42.0;
    EXPECT_CODE(dq_quantile(NULL, 0.5, &t), DQ_EINVAL);
    EXPECT_BAD(dq_quantile(a, 0.0, &t));
    EXPECT_BAD(dq_quantile(a, -0.5, &t));
    EXPECT_BAD(dq_quantile(a, 1.5, &t));
    EXPECT_BAD(dq_quantile(a, NAN, &t));
    CHECK_NEAR(t, 42.0, 0.0);
    struct dq *half = NULL;
    double ph[4] = {0, 0.5, 0, 0};
    MUST(dq_from_pdf(0, 4, ph, &half));
    if (half) {
        EXPECT_CODE(dq_quantile(half, 0.6, &t), DQ_ENOTREACHED);
        CHECK_NEAR(t, 42.0, 0.0);
        CHECK_INT(dq_quantile(half, 0.5, &t), DQ_OK);
        CHECK_NEAR(t, 0.002, 1e-15); /* the right edge of bin 1 */
    }
    dq_destroy(half);

    struct dq_moments m;
    EXPECT_CODE(dq_moments(NULL, &m), DQ_EINVAL);
    struct dq *nv = NULL;
    MUST(dq_never(0, 4, &nv));
    if (nv)
        EXPECT_CODE(dq_moments(nv, &m), DQ_ENOTREACHED);
    dq_destroy(nv);

    enum dq_order o = DQ_CMP_EQUAL;
    EXPECT_CODE(dq_compare(NULL, b, 0.0, &o), DQ_EINVAL);
    EXPECT_CODE(dq_compare(a, NULL, 0.0, &o), DQ_EINVAL);
    EXPECT_BAD(dq_compare(a, b, -1.0, &o));
    EXPECT_BAD(dq_compare(a, b, NAN, &o));

    double d = 0, p = 0, w1 = 0;
    EXPECT_CODE(dq_ks(NULL, b, 1, 1, &d, &p), DQ_EINVAL);
    EXPECT_CODE(dq_ks(a, NULL, 1, 1, &d, &p), DQ_EINVAL);
    EXPECT_CODE(dq_wasserstein1(NULL, b, &w1), DQ_EINVAL);
    EXPECT_CODE(dq_wasserstein1(a, NULL, &w1), DQ_EINVAL);

    /* band */
    struct dq_band *band = (struct dq_band *)SENTINEL;
    const struct dq *ring[3] = {a, a, a}, *mixed_k[2] = {a, b};
    struct dq *a20 = NULL;
    MUST(dq_wait(0, 20, 0.002, &a20));
    const struct dq *mixed_n[2] = {a, a20}, *ringnull[2] = {a, NULL};
    EXPECT_CODE(dq_band_compute(ring, 0, 1.96, &band), DQ_EINVAL);
    EXPECT_CODE(dq_band_compute(NULL, 3, 1.96, &band), DQ_EINVAL);
    EXPECT_CODE(dq_band_compute(ringnull, 2, 1.96, &band), DQ_EINVAL);
    EXPECT_CODE(dq_band_compute(mixed_k, 2, 1.96, &band), DQ_EMISMATCH);
    if (a20)
        EXPECT_CODE(dq_band_compute(mixed_n, 2, 1.96, &band), DQ_EMISMATCH);
    EXPECT_BAD(dq_band_compute(ring, 3, -1.0, &band));
    EXPECT_BAD(dq_band_compute(ring, 3, NAN, &band));
    CHECK(band == (struct dq_band *)SENTINEL);
    dq_destroy(a20);

    /* moment algebra */
    struct dq_moments pm = {.mass = 1, .mean = 1, .variance = 1}, om[1] = {{1, 0.5, 0.5, 0, 0}};
    double mean = 0, var = 0, hint = 0;
    EXPECT_CODE(dq_infer_unobserved(NULL, om, 1, &mean, &var, &hint), DQ_EINVAL);
    EXPECT_CODE(dq_infer_unobserved(&pm, NULL, 1, &mean, &var, &hint), DQ_EINVAL);
    EXPECT_NULL_OUT(dq_infer_unobserved(&pm, om, 1, NULL, &var, &hint));
    EXPECT_NULL_OUT(dq_infer_unobserved(&pm, om, 1, &mean, NULL, &hint));
    EXPECT_NULL_OUT(dq_infer_unobserved(&pm, om, 1, &mean, &var, NULL));

    /* A malformed operand (N = 5000) inside an operand list: ERANGE, and the message
     * keeps the detail (it names 5000) rather than a garbled prefix. */
    static double big_pdf[5000];
    struct dq bad = {.k = 0, .n = 5000, .width = 0.001, .pdf = big_pdf};
    const struct dq *withbad[2] = {a, &bad};
    const double half2[2] = {0.5, 0.5};
    struct dq_band *bb = NULL;
    const char *names[] = {"sequence", "sequence_n", "first_to_finish", "all_to_finish", "choice",
                           "band",     "rebin",      "reexpress",       "moments"};
    for (int f = 0; f < 9; f++) {
        struct dq_moments mm;
        dq_clear_error();
        int rc = f == 0   ? dq_sequence(a, &bad, &out)
                 : f == 1 ? dq_sequence_n(withbad, 2, &out)
                 : f == 2 ? dq_first_to_finish(withbad, 2, &out)
                 : f == 3 ? dq_all_to_finish(withbad, 2, &out)
                 : f == 4 ? dq_choice(withbad, half2, 2, &out)
                 : f == 5 ? dq_band_compute(withbad, 2, 1.0, &bb)
                 : f == 6 ? dq_rebin(&bad, 1, &out)
                 : f == 7 ? dq_reexpress(&bad, 0, 10, &out)
                          : dq_moments(&bad, &mm);
        CHECK_MSG(rc == DQ_ERANGE || rc == DQ_EINVAL, "%s with N = 5000 operand: %d", names[f], rc);
        CHECK_MSG(strstr(dq_last_error(), "5000") != NULL, "%s: message lost its detail: \"%s\"",
                  names[f], dq_last_error());
    }
    CHECK(out == SENTINEL);
    CHECK(bb == NULL);

    /* the engine still works after all that */
    struct dq *s = NULL;
    CHECK_INT(dq_sequence(a, b, &s), DQ_OK);
    if (s)
        CHECK_NEAR(dq_tangible(s), 1.0, 1e-12);
    dq_destroy(s);
    dq_destroy(a);
    dq_destroy(b);
}

static void test_conv_errors(void) {
    double a[4] = {0.25, 0.25, 0.25, 0.25}, o[8];
    int (*const fns[4])(const double *, int, const double *, int,
                        double *) = {dq_conv_direct, dq_conv_fft, dq_conv_fft_fresh, dq_conv_auto};
    for (int f = 0; f < 4; f++) {
        EXPECT_CODE(fns[f](NULL, 4, a, 4, o), DQ_EINVAL);
        EXPECT_CODE(fns[f](a, 4, NULL, 4, o), DQ_EINVAL);
        EXPECT_NULL_OUT(fns[f](a, 4, a, 4, NULL));
        EXPECT_CODE(fns[f](a, 0, a, 4, o), DQ_EINVAL);
        EXPECT_CODE(fns[f](a, 4, a, -1, o), DQ_EINVAL);
    }
    const double *arrs[2] = {a, a}, *withnull[2] = {a, NULL};
    const int lens[2] = {4, 4}, badlens[2] = {4, 0};
    EXPECT_CODE(dq_conv_fft_n(arrs, lens, 0, o), DQ_EINVAL);
    EXPECT_CODE(dq_conv_fft_n(NULL, lens, 2, o), DQ_EINVAL);
    EXPECT_CODE(dq_conv_fft_n(arrs, NULL, 2, o), DQ_EINVAL);
    EXPECT_CODE(dq_conv_fft_n(withnull, lens, 2, o), DQ_EINVAL);
    EXPECT_CODE(dq_conv_fft_n(arrs, badlens, 2, o), DQ_EINVAL);
    EXPECT_NULL_OUT(dq_conv_fft_n(arrs, lens, 2, NULL));
    CHECK_INT(dq_conv_fft_n(arrs, lens, 2, o), DQ_OK);
    CHECK_NEAR(o[3], 0.25, 1e-12);
}

/* The calls issue 15 added: dq_from_points, dq_sequence_cut, the bound queries. */
static void test_new_calls(void) {
    struct dq *out = NULL, *a = NULL;
    double pts[4] = {0.1, 0.2, 0.3, 0.4};
    EXPECT_BAD(dq_from_points(0, 3, NULL, &out));
    EXPECT_NULL_OUT(dq_from_points(0, 3, pts, NULL));
    CHECK_INT(dq_from_points(0, 0, pts, &out), DQ_ERANGE);
    double neg[4] = {0.1, -0.2, 0.3, 0.4}, big[4] = {0.5, 0.5, 0.5, 0.0};
    EXPECT_BAD(dq_from_points(0, 3, neg, &out));
    EXPECT_BAD(dq_from_points(0, 3, big, &out));
    pts[3] = NAN;
    EXPECT_BAD(dq_from_points(0, 3, pts, &out));
    CHECK(out == NULL);
    MUST(dq_uniform(0, 10, 0.001, 0.005, &a));
    if (a) {
        const struct dq *ops[2] = {a, a};
        EXPECT_BAD(dq_sequence_cut(ops, 2, 0.0, &out));
        EXPECT_BAD(dq_sequence_cut(ops, 2, -1.0, &out));
        EXPECT_BAD(dq_sequence_cut(ops, 2, NAN, &out));
        EXPECT_BAD(dq_sequence_cut(ops, 0, 1.0, &out));
        EXPECT_BAD(dq_sequence_cut(NULL, 2, 1.0, &out));
        EXPECT_NULL_OUT(dq_sequence_cut(ops, 2, 1.0, NULL));
        const struct dq *withnull[2] = {a, NULL};
        EXPECT_BAD(dq_sequence_cut(withnull, 2, 1.0, &out));
        CHECK(out == NULL);
        /* a horizon shorter than one bin keeps one bin */
        CHECK_INT(dq_sequence_cut(ops, 2, 1e-9, &out), DQ_OK);
        if (out)
            CHECK_INT(out->n, 1);
        dq_destroy(out);
        out = NULL;
        double t = 42.0;
        EXPECT_BAD(dq_quantile_bound(a, 0.0, &t));
        EXPECT_BAD(dq_quantile_bound(a, 1.5, &t));
        EXPECT_CODE(dq_quantile_bound(NULL, 0.5, &t), DQ_EINVAL);
        CHECK_NEAR(t, 42.0, 0.0);
    }
    CHECK_NEAR(dq_cdf_bound_at(NULL, 1.0), 0.0, 0.0);
    CHECK_NEAR(dq_cdf_bound_at(a, NAN), 0.0, 0.0);
    CHECK_NEAR(dq_cdf_bound_at(a, -1.0), 0.0, 0.0);
    CHECK_NEAR(dq_lost_bound(NULL), 1.0, 0.0);
    CHECK_NEAR(dq_past_horizon(NULL), 0.0, 0.0);
    dq_destroy(a);
}

static const struct check_case cases[] = {
    CHECK_CASE(error_module),       CHECK_CASE(new_calls),    CHECK_CASE(grid_errors),
    CHECK_CASE(constructor_errors), CHECK_CASE(null_outputs), CHECK_CASE(qta_errors),
    CHECK_CASE(operator_errors),    CHECK_CASE(conv_errors),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
