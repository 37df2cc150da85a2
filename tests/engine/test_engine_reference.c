/*
 * test_engine_reference.c: the engine against closed forms on a ladder of grids (issue 15,
 * acceptance 1): the triangular law, Irwin–Hall n = 20, Erlang-4, first- and all-to-finish
 * of exponentials and of uniforms each with failure mass, and a chain of exponentials whose
 * tail crosses every horizon, each on N = 256, 512, 1024, 2048, 4096 bins at three widths
 * (the width halves as N doubles, so each family keeps its horizon; the three families
 * have horizons H0, 2·H0, 4·H0).
 *
 * What must hold (docs/engine.md, "The CDF convention" and "Error bounds"):
 *   1. the error never grows as bins get finer: at the check times (the edges of the
 *      coarsest grid up to the smallest horizon, edges of every grid), a grid of a finer
 *      width is never further from the closed form than one of a coarser width;
 *   2. the lost mass at each grid's horizon is within 1e-4 of the truth, 1 − F(H), however
 *      the chain is spelled (one n-way sequence, pairs grouped either way with cuts, or a
 *      diagram with and without a named part);
 *   3. the QTA convention holds at every point: cdf[i − lag] ≤ F((i+1)·w) at every edge of
 *      every grid, the lost bound is ≥ the true lost mass, and a QTA point asking for
 *      2e-9 more than the law gives never passes.
 * Plus the issue's own chain, x1 -> x2 -> x3 of U(0.4, 0.6) on 1536 bins of 1 ms (and
 * 768 of 2 ms, 3072 of 0.5 ms), whose lost mass is 0.366944.
 *
 * Acceptance 2: at the default grid dq_grid_choose picks from the cases' hints (as
 * dqctl model does), every case is within a Kolmogorov distance of 1e-2 of its closed form
 * on [0, H], and the tail past H is reported as lost past the horizon.
 *
 * `test_engine_reference --table` prints the errors per case and grid (the figures of
 * docs/engine.md).
 */
#include "check.h"

#include "engine_test_util.h"

#include <stdio.h>

#include "diagram.h"

#define MS 0.001
#define N_GRIDS 15 /* 3 widths × 5 bin counts */

static int print_table;

/* ---- closed forms ------------------------------------------------------------------------- */

static double u01(double t, double a, double b) {
    return t <= a ? 0.0 : t >= b ? 1.0 : (t - a) / (b - a);
}

static double ex(double t, double rate) {
    return t <= 0.0 ? 0.0 : -expm1(-rate * t);
}

/* Irwin–Hall CDF of n uniforms on [0, 1], in long double (the alternating sum cancels). */
static double irwin_hall(int n, double x) {
    if (x <= 0.0) {
        return 0.0;
    }
    if (x >= n) {
        return 1.0;
    }
    if (x > n / 2.0) {
        return 1.0 - irwin_hall(n, n - x);
    }
    long double s = 0.0L, c = 1.0L, fact = 1.0L;
    for (int i = 2; i <= n; i++) {
        fact *= i;
    }
    for (int k = 0; k <= (int)floor(x); k++) {
        s += (k % 2 ? -1.0L : 1.0L) * c * powl((long double)x - k, n);
        c = c * (n - k) / (k + 1);
    }
    return (double)(s / fact);
}

static double f_tri(double t) {
    return t <= 2 ? 0 : t <= 3 ? (t - 2) * (t - 2) / 2 : t < 4 ? 1 - (4 - t) * (4 - t) / 2 : 1;
}

static double f_ih20(double t) {
    return irwin_hall(20, t);
}

static double erlang(double t, int k, double rate) {
    if (t <= 0.0) {
        return 0.0;
    }
    double term = 1.0, sum = 1.0;
    for (int j = 1; j < k; j++) {
        term *= rate * t / j;
        sum += term;
    }
    return 1.0 - exp(-rate * t) * sum;
}

static double f_erlang4(double t) {
    return erlang(t, 4, 10.0);
}

static double f_chain3(double t) {
    return erlang(t, 3, 5.0);
}

static const double ftf_p[3] = {0.9, 0.8, 0.7}, ftf_rate[3] = {10, 20, 30};

static double f_ftf_exp(double t) {
    double miss = 1.0;
    for (int i = 0; i < 3; i++) {
        miss *= 1.0 - ftf_p[i] * ex(t, ftf_rate[i]);
    }
    return 1.0 - miss;
}

static double f_atf_exp(double t) {
    return 0.9 * ex(t, 10.0) * 0.95 * ex(t, 5.0);
}

static double f_atf_unif(double t) {
    return 0.9 * u01(t, 0.1, 0.5) * 0.8 * u01(t, 0.2, 0.3);
}

static double f_ftf_unif(double t) {
    return 1.0 - (1.0 - 0.6 * u01(t, 0.1, 0.5)) * (1.0 - 0.5 * u01(t, 0.2, 0.4));
}

/* ---- the cases on a grid -------------------------------------------------------------------- */

/* A law with failure mass: choice(p: x, 1 − p: never). Takes x. */
static struct dq *with_failures(struct dq *x, double p) {
    struct dq *nv = NULL, *r = NULL;
    if (!x || dq_never(x->k, x->n, &nv) != DQ_OK) {
        dq_destroy(x);
        return NULL;
    }
    const struct dq *ops[2] = {x, nv};
    const double w[2] = {p, 1.0 - p};
    MUST(dq_choice(ops, w, 2, &r));
    dq_destroy(x);
    dq_destroy(nv);
    return r;
}

static struct dq *uni(int k, int n, double a, double b) {
    struct dq *q = NULL;
    MUST(dq_uniform(k, n, a, b, &q));
    return q;
}

static struct dq *expo(int k, int n, double rate) {
    struct dq *q = NULL;
    MUST(dq_exponential(k, n, rate, &q));
    return q;
}

/* The sequence of m copies made by mk, cut at the horizon, spelled one of four ways:
 * 0 one n-way product, 1 ((a;b);c)… pairwise with a cut after each step, 2 a;(b;(c…)),
 * 3 every operand first re-expressed at the grid (as the evaluator does) then n-way. */
static struct dq *chain(int k, int n, int m, struct dq *(*mk)(int, int), int spelling) {
    struct dq *ops[32] = {0}, *r = NULL;
    double h = n * dq_width_of(k);
    for (int i = 0; i < m; i++) {
        ops[i] = mk(k, n);
    }
    if (spelling == 0 || spelling == 3) {
        MUST(dq_sequence_cut((const struct dq *const *)ops, (size_t)m, h, &r));
    } else if (spelling == 1) {
        MUST(dq_clone(ops[0], &r));
        for (int i = 1; i < m && r; i++) {
            const struct dq *two[2] = {r, ops[i]};
            struct dq *t = NULL;
            MUST(dq_sequence_cut(two, 2, h, &t));
            dq_destroy(r);
            r = t;
        }
    } else {
        MUST(dq_clone(ops[m - 1], &r));
        for (int i = m - 2; i >= 0 && r; i--) {
            const struct dq *two[2] = {ops[i], r};
            struct dq *t = NULL;
            MUST(dq_sequence_cut(two, 2, h, &t));
            dq_destroy(r);
            r = t;
        }
    }
    for (int i = 0; i < m; i++) {
        dq_destroy(ops[i]);
    }
    if (r && (r->k != k || r->n != n)) {
        struct dq *t = NULL;
        MUST(dq_reexpress(r, k, n, &t));
        dq_destroy(r);
        r = t;
    }
    return r;
}

static struct dq *mk_u12(int k, int n) {
    return uni(k, n, 1.0, 2.0);
}

static struct dq *mk_u01(int k, int n) {
    return uni(k, n, 0.0, 1.0);
}

static struct dq *mk_e10(int k, int n) {
    return expo(k, n, 10.0);
}

static struct dq *mk_e5(int k, int n) {
    return expo(k, n, 5.0);
}

static struct dq *build_tri(int k, int n, int spelling) {
    return chain(k, n, 2, mk_u12, spelling);
}

static struct dq *build_ih20(int k, int n, int spelling) {
    return chain(k, n, 20, mk_u01, spelling);
}

static struct dq *build_erlang4(int k, int n, int spelling) {
    return chain(k, n, 4, mk_e10, spelling);
}

static struct dq *build_chain3(int k, int n, int spelling) {
    return chain(k, n, 3, mk_e5, spelling);
}

static struct dq *combine3(struct dq **ops, int m, int all) {
    struct dq *r = NULL;
    int ok = 1;
    for (int i = 0; i < m; i++) {
        ok = ok && ops[i];
    }
    if (ok) {
        const struct dq *const *c = (const struct dq *const *)ops;
        MUST(all ? dq_all_to_finish(c, (size_t)m, &r) : dq_first_to_finish(c, (size_t)m, &r));
    }
    for (int i = 0; i < m; i++) {
        dq_destroy(ops[i]);
    }
    return r;
}

static struct dq *build_ftf_exp(int k, int n, int spelling) {
    (void)spelling;
    struct dq *ops[3];
    for (int i = 0; i < 3; i++) {
        ops[i] = with_failures(expo(k, n, ftf_rate[i]), ftf_p[i]);
    }
    return combine3(ops, 3, 0);
}

static struct dq *build_atf_exp(int k, int n, int spelling) {
    (void)spelling;
    struct dq *ops[2] = {with_failures(expo(k, n, 10.0), 0.9),
                         with_failures(expo(k, n, 5.0), 0.95)};
    return combine3(ops, 2, 1);
}

static struct dq *build_atf_unif(int k, int n, int spelling) {
    (void)spelling;
    struct dq *ops[2] = {with_failures(uni(k, n, 0.1, 0.5), 0.9),
                         with_failures(uni(k, n, 0.2, 0.3), 0.8)};
    return combine3(ops, 2, 1);
}

static struct dq *build_ftf_unif(int k, int n, int spelling) {
    (void)spelling;
    struct dq *ops[2] = {with_failures(uni(k, n, 0.1, 0.5), 0.6),
                         with_failures(uni(k, n, 0.2, 0.4), 0.5)};
    return combine3(ops, 2, 0);
}

struct refcase {
    const char *name;
    double (*F)(double t);
    struct dq *(*build)(int k, int n, int spelling);
    int k0;        /* width exponent of the coarsest family at N = 256 */
    int spellings; /* how many spellings to compare (sequences: 4) */
};

static const struct refcase refcases[] = {
    {"triangular U(1,2);U(1,2)", f_tri, build_tri, 4, 4},
    {"Irwin-Hall n=20", f_ih20, build_ih20, 7, 4},
    {"Erlang-4 (rate 10)", f_erlang4, build_erlang4, 2, 4},
    {"ftf 3 exp with failures", f_ftf_exp, build_ftf_exp, 2, 1},
    {"atf 2 exp with failures", f_atf_exp, build_atf_exp, 2, 1},
    {"atf 2 uniforms with failures", f_atf_unif, build_atf_unif, 1, 1},
    {"ftf 2 uniforms with failures", f_ftf_unif, build_ftf_unif, 1, 1},
    {"chain exp(5)^3 past the horizon", f_chain3, build_chain3, 1, 4},
};

/* ---- the ladder -------------------------------------------------------------------------------
 */

struct grid_result {
    int k, n;
    double err_common; /* max |F_grid − F| at the check times */
    double err_edges;  /* max |F_grid − F| at every edge of this grid */
    double err_lost;   /* |lost − (1 − F(H))| */
    double bound_over; /* max (cdf[i − lag] − F) over the edges: ≤ 0 */
    int lag;
};

static void run_case(const struct refcase *c) {
    struct grid_result g[N_GRIDS];
    int ng = 0;
    /* check times: the edges of the coarsest width (family 2, N = 256) up to the smallest
     * horizon (family 0) */
    double wc = dq_width_of(c->k0 + 2), h0 = 256 * dq_width_of(c->k0);
    for (int a = 0; a < 3; a++) {
        for (int m = 0; m < 5; m++) {
            int k = c->k0 + a - m, n = 256 << m;
            double w = dq_width_of(k), h = n * w;
            struct dq *q = c->build(k, n, 0);
            if (!q) {
                CHECK(0);
                continue;
            }
            struct grid_result *r = &g[ng++];
            memset(r, 0, sizeof *r);
            r->k = k;
            r->n = n;
            r->lag = q->lag;
            r->bound_over = -INFINITY;
            CHECK_INT(q->k, k);
            CHECK_INT(q->n, n);
            for (double t = wc; t <= h0 * (1 + 1e-12); t += wc) {
                r->err_common = fmax(r->err_common, fabs(dq_cdf_at(q, t) - c->F(t)));
            }
            for (int i = 0; i < n; i++) {
                double t = (i + 1) * w, F = c->F(t);
                r->err_edges = fmax(r->err_edges, fabs(dq_cdf_at(q, t) - F));
                r->bound_over = fmax(r->bound_over, dq_cdf_bound_at(q, t) - F);
            }
            double lost = 1.0 - c->F(h);
            r->err_lost = fabs(dq_lost(q) - lost);
            /* 2. lost within 1e-4 of the truth, whatever the spelling */
            CHECK_MSG(r->err_lost <= 1e-4, "%s on (k %d, N %d): lost %.8f, true %.8f", c->name, k,
                      n, dq_lost(q), lost);
            for (int s = 1; s < c->spellings; s++) {
                struct dq *o = c->build(k, n, s);
                if (o) {
                    CHECK_MSG(fabs(dq_lost(o) - dq_lost(q)) <= 1e-12 && o->n == q->n &&
                                  ref_maxdiff(o->pdf, q->pdf, q->n) <= 1e-9,
                              "%s on (k %d, N %d): spelling %d differs: lost %.12f vs %.12f",
                              c->name, k, n, s, dq_lost(o), dq_lost(q));
                }
                dq_destroy(o);
            }
            /* 3. the QTA convention at every point */
            CHECK_MSG(r->bound_over <= 1e-12,
                      "%s on (k %d, N %d): the lower bound exceeds the law by %g", c->name, k, n,
                      r->bound_over);
            CHECK_MSG(dq_lost_bound(q) >= lost - 1e-12, "%s on (k %d, N %d): lost bound %g < %g",
                      c->name, k, n, dq_lost_bound(q), lost);
            int passed = 0;
            for (double t = wc; t <= h0 * (1 + 1e-12); t += wc) {
                double p = c->F(t) + 2e-9;
                if (p > 1.0 || p < 1e-6) {
                    continue;
                }
                struct dq_qta qta = {.n = 1, .t = {t}, .p = {p}, .max_lost = 1.0};
                struct dq_qta_result res;
                if (dq_qta_eval(q, &qta, &res) == DQ_OK) {
                    passed += res.ok;
                }
            }
            CHECK_MSG(passed == 0, "%s on (k %d, N %d): %d QTA points above the law pass", c->name,
                      k, n, passed);
            dq_destroy(q);
        }
    }
    /* 1. never worse on a finer grid: any two grids, the finer width at least as close */
    for (int i = 0; i < ng; i++) {
        for (int j = 0; j < ng; j++) {
            if (g[j].k < g[i].k) {
                CHECK_MSG(g[j].err_common <= g[i].err_common + 1e-12,
                          "%s: (k %d, N %d) error %.3g > (k %d, N %d) error %.3g", c->name, g[j].k,
                          g[j].n, g[j].err_common, g[i].k, g[i].n, g[i].err_common);
            }
        }
    }
    if (print_table) {
        printf("%s\n  %-8s %-5s %-4s %-10s %-10s %-10s\n", c->name, "width_ms", "N", "lag",
               "err_check", "err_edges", "err_lost");
        for (int i = 0; i < ng; i++) {
            printf("  %-8g %-5d %-4d %-10.3g %-10.3g %-10.3g\n", dq_width_of(g[i].k) / MS, g[i].n,
                   g[i].lag, g[i].err_common, g[i].err_edges, g[i].err_lost);
        }
    }
}

/* ---- default grids (acceptance 2) --------------------------------------------------------- */

static double f_erlang10(double t) {
    return erlang(t, 10, 25.0);
}

static struct dq *mk_e25(int k, int n) {
    return expo(k, n, 25.0);
}

static struct dq *build_erlang10(int k, int n, int spelling) {
    return chain(k, n, 10, mk_e25, spelling);
}

/* a 1–2 ms cache raced against a slow database (exponential, mean 1 s) */
static double f_race(double t) {
    return 1.0 - (1.0 - u01(t, 0.001, 0.002)) * (1.0 - ex(t, 1.0));
}

static struct dq *build_race(int k, int n, int spelling) {
    (void)spelling;
    struct dq *ops[2] = {uni(k, n, 0.001, 0.002), expo(k, n, 1.0)};
    return combine3(ops, 2, 0);
}

static double f_u46(double t) {
    return irwin_hall(3, (t - 1.2) / 0.2);
}

static struct dq *mk_u46(int k, int n) {
    return uni(k, n, 0.4, 0.6);
}

static struct dq *build_u46(int k, int n, int spelling) {
    return chain(k, n, 3, mk_u46, spelling);
}

/* The hints of the cases, built as dqctl model builds them from its --set DISTs. */
static void hint_seq_of(int m, const struct dq_hint *one, struct dq_hint *out) {
    struct dq_hint ops[32];
    for (int i = 0; i < m; i++) {
        ops[i] = *one;
    }
    dq_hint_sequence(ops, (size_t)m, out);
}

static void hint_lossy(struct dq_hint *h, double p) {
    struct dq_hint two[2], nv;
    dq_hint_never(&nv);
    two[0] = *h;
    two[1] = nv;
    const double w[2] = {p, 1.0 - p};
    dq_hint_choice(two, w, 2, h);
}

static void hint_of(const char *name, struct dq_hint *h) {
    struct dq_hint one, ops[3];
    if (strcmp(name, "triangular") == 0) {
        dq_hint_uniform(1.0, 2.0, &one);
        hint_seq_of(2, &one, h);
    } else if (strcmp(name, "ih20") == 0) {
        dq_hint_uniform(0.0, 1.0, &one);
        hint_seq_of(20, &one, h);
    } else if (strcmp(name, "erlang4") == 0) {
        dq_hint_exponential(10.0, &one);
        hint_seq_of(4, &one, h);
    } else if (strcmp(name, "erlang10") == 0) {
        dq_hint_exponential(25.0, &one);
        hint_seq_of(10, &one, h);
    } else if (strcmp(name, "chain3") == 0) {
        dq_hint_exponential(5.0, &one);
        hint_seq_of(3, &one, h);
    } else if (strcmp(name, "u46") == 0) {
        dq_hint_uniform(0.4, 0.6, &one);
        hint_seq_of(3, &one, h);
    } else if (strcmp(name, "ftf_exp") == 0) {
        for (int i = 0; i < 3; i++) {
            dq_hint_exponential(ftf_rate[i], &ops[i]);
            hint_lossy(&ops[i], ftf_p[i]);
        }
        dq_hint_first(ops, 3, h);
    } else if (strcmp(name, "atf_exp") == 0) {
        dq_hint_exponential(10.0, &ops[0]);
        hint_lossy(&ops[0], 0.9);
        dq_hint_exponential(5.0, &ops[1]);
        hint_lossy(&ops[1], 0.95);
        dq_hint_all(ops, 2, h);
    } else if (strcmp(name, "atf_unif") == 0) {
        dq_hint_uniform(0.1, 0.5, &ops[0]);
        hint_lossy(&ops[0], 0.9);
        dq_hint_uniform(0.2, 0.3, &ops[1]);
        hint_lossy(&ops[1], 0.8);
        dq_hint_all(ops, 2, h);
    } else if (strcmp(name, "ftf_unif") == 0) {
        dq_hint_uniform(0.1, 0.5, &ops[0]);
        hint_lossy(&ops[0], 0.6);
        dq_hint_uniform(0.2, 0.4, &ops[1]);
        hint_lossy(&ops[1], 0.5);
        dq_hint_first(ops, 2, h);
    } else { /* race */
        dq_hint_uniform(0.001, 0.002, &ops[0]);
        dq_hint_exponential(1.0, &ops[1]);
        dq_hint_first(ops, 2, h);
    }
}

struct default_case {
    const char *hint;
    const char *name;
    double (*F)(double t);
    struct dq *(*build)(int k, int n, int spelling);
};

static const struct default_case defaults[] = {
    {"triangular", "triangular U(1,2);U(1,2)", f_tri, build_tri},
    {"ih20", "Irwin-Hall n=20", f_ih20, build_ih20},
    {"erlang4", "Erlang-4 (rate 10, mean 0.4 s)", f_erlang4, build_erlang4},
    {"erlang10", "Erlang-10 (rate 25, mean 0.4 s)", f_erlang10, build_erlang10},
    {"ftf_exp", "ftf 3 exp with failures", f_ftf_exp, build_ftf_exp},
    {"atf_exp", "atf 2 exp with failures", f_atf_exp, build_atf_exp},
    {"atf_unif", "atf 2 uniforms with failures", f_atf_unif, build_atf_unif},
    {"ftf_unif", "ftf 2 uniforms with failures", f_ftf_unif, build_ftf_unif},
    {"chain3", "chain exp(5)^3", f_chain3, build_chain3},
    {"u46", "chain U(0.4,0.6)^3", f_u46, build_u46},
    {"race", "race of a 1-2 ms cache and exp(1) s", f_race, build_race},
};

/*
 * Kolmogorov distance on [0, H] between the step CDF of the convention (dq_cdf_at: on
 * [(i)·w, (i+1)·w) the value at the edge i·w) and a continuous F: on each bin the sup is at
 * one of its ends.
 */
static double ks_step(const struct dq *q, double (*F)(double)) {
    double d = 0.0;
    for (int i = 0; i < q->n; i++) {
        double c = dq_cdf_at(q, i * q->width);
        double a = fabs(c - F(i * q->width)), b = fabs(c - F((i + 1) * q->width));
        d = fmax(d, fmax(a, b));
    }
    return d;
}

static void test_default_grids(void) {
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        const struct default_case *c = &defaults[i];
        struct dq_hint h;
        hint_of(c->hint, &h);
        int k = 0, n = 0, covered = 0;
        CHECK_INT(dq_grid_choose(&h, 0, &k, &n, &covered), DQ_OK);
        struct dq *q = c->build(k, n, 0);
        if (!q) {
            CHECK(0);
            continue;
        }
        double ks = ks_step(q, c->F), H = dq_horizon(q);
        double tail = 1.0 - c->F(H) - q->failed; /* the truth's tangible mass past H */
        CHECK_MSG(ks <= 1e-2, "%s at its default grid (%g ms × %d): Kolmogorov distance %g",
                  c->name, q->width / MS, n, ks);
        /* the tail cut at the horizon is reported as such: lost past the horizon, not
         * failed, and as large as the truth's (within the bins' second-order error) */
        CHECK_MSG(fabs(dq_past_horizon(q) - (tail > 0.0 ? tail : 0.0)) <= 1e-4,
                  "%s: past the horizon %g, true %g", c->name, dq_past_horizon(q), tail);
        if (print_table) {
            printf("default grid %-40s %8g ms x %-4d horizon %-8g KS %-9.3g past H %.3g%s\n",
                   c->name, q->width / MS, n, H, ks, dq_past_horizon(q),
                   covered ? "" : " (horizon short of hi)");
        }
        dq_destroy(q);
    }
}

/* ---- the issue's chain, through the diagram evaluator ------------------------------------ */

static double eval_lost(const char *text, int k, int n) {
    struct dq_diagram *d = NULL;
    struct dq_eval *ev = NULL;
    struct dq *x[3] = {0};
    double lost = NAN;
    if (dq_diagram_parse(text, strlen(text), &d, NULL) != DQ_OK ||
        dq_eval_create(d, k, n, &ev) != DQ_OK) {
        CHECK(0);
        goto out;
    }
    const char *names[3] = {"x1", "x2", "x3"};
    for (int i = 0; i < 3; i++) {
        x[i] = uni(k, n, 0.4, 0.6);
        CHECK_INT(dq_eval_set_observed_by_name(ev, names[i], x[i]), DQ_OK);
    }
    CHECK_INT(dq_eval_run(ev), DQ_OK);
    const struct dq *s = dq_eval_calculated(ev, dq_diagram_find(d, "system"));
    CHECK(s != NULL);
    if (s) {
        lost = dq_lost(s);
        CHECK_NEAR(dq_past_horizon(s), lost, 1e-12); /* nothing failed: all past H */
    }
out:
    dq_eval_destroy(ev);
    dq_diagram_destroy(d);
    for (int i = 0; i < 3; i++) {
        dq_destroy(x[i]);
    }
    return lost;
}

static void test_issue_chain(void) {
    const double truth = 1.0 - irwin_hall(3, (1.536 - 1.2) / 0.2); /* 0.366944 */
    CHECK_NEAR(truth, 0.366944, 1e-12);
    const int grids[][2] = {{-1, 3072}, {0, 1536}, {1, 768}};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        double one = eval_lost("system = x1 -> x2 -> x3;", grids[g][0], grids[g][1]);
        double two = eval_lost("d = x1 -> x2;\nsystem = s:d -> x3;", grids[g][0], grids[g][1]);
        CHECK_MSG(fabs(one - truth) <= 1e-4 && fabs(two - truth) <= 1e-4,
                  "x1->x2->x3 on %g ms × %d: lost %.8f and %.8f, true %.8f",
                  dq_width_of(grids[g][0]) / MS, grids[g][1], one, two, truth);
        CHECK_NEAR(one, two, 1e-12);
        if (print_table) {
            printf("x1->x2->x3 of U(0.4,0.6), %g ms x %d: lost %.8f (spelled with s:d %.8f), "
                   "true %.8f\n",
                   dq_width_of(grids[g][0]) / MS, grids[g][1], one, two, truth);
        }
    }
}

/* One case per closed form of the ladder: test_ladder_NAME runs refcases[I]. */
#define LADDER_CASE(name, i)                                                                       \
    static void test_ladder_##name(void) {                                                         \
        run_case(&refcases[i]);                                                                    \
    }
LADDER_CASE(triangular, 0)
LADDER_CASE(irwin_hall, 1)
LADDER_CASE(erlang4, 2)
LADDER_CASE(ftf_exp, 3)
LADDER_CASE(atf_exp, 4)
LADDER_CASE(atf_unif, 5)
LADDER_CASE(ftf_unif, 6)
LADDER_CASE(chain3, 7)

static const struct check_case cases[] = {
    CHECK_CASE(ladder_triangular), CHECK_CASE(ladder_irwin_hall), CHECK_CASE(ladder_erlang4),
    CHECK_CASE(ladder_ftf_exp),    CHECK_CASE(ladder_atf_exp),    CHECK_CASE(ladder_atf_unif),
    CHECK_CASE(ladder_ftf_unif),   CHECK_CASE(ladder_chain3),     CHECK_CASE(issue_chain),
    CHECK_CASE(default_grids),
};

/* --table (anywhere) prints the figures; the other arguments go to the runner. */
int main(int argc, char **argv) {
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--table") == 0) {
            print_table = 1;
        } else {
            argv[n++] = argv[i];
        }
    }
    _Static_assert(sizeof refcases / sizeof refcases[0] == 8, "a ladder case per closed form");
    return check_main_fixture(n, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
