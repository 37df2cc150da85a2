/*
 * test_diagram_eval.c: the diagram model API and the evaluator, against the closed-form
 * and binned references of docs/engine.md ("Reference values"), through the public API
 * only.
 *
 * Quantiles are expected within two bin widths and masses within 1e-6 plus the
 * discretisation error, as docs/engine.md allows.
 */
#include "diagram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* A parsed diagram, an evaluator on grid (k, n), and the ΔQs given to it. */
struct fixture {
    struct dq_diagram *d;
    struct dq_eval *ev;
    struct dq *given[32];
    int n_given;
};

static int fixture_open(struct fixture *f, const char *text, int k, int n) {
    memset(f, 0, sizeof *f);
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(text, strlen(text), &f->d, &err);
    CHECK_MSG(rc == DQ_OK, "%d:%d: %s", err.line, err.column, err.text);
    if (rc) {
        return rc;
    }
    rc = dq_eval_create(f->d, k, n, &f->ev);
    CHECK_INT(rc, DQ_OK);
    return rc;
}

/* Gives `name` the ΔQ q (the fixture keeps and frees it). */
static void give(struct fixture *f, const char *name, struct dq *q) {
    CHECK(q != NULL);
    f->given[f->n_given++] = q;
    CHECK_INT(dq_eval_set_observed_by_name(f->ev, name, q), DQ_OK);
}

static void fixture_close(struct fixture *f) {
    dq_eval_destroy(f->ev);
    dq_diagram_destroy(f->d);
    for (int i = 0; i < f->n_given; i++) {
        dq_destroy(f->given[i]);
    }
}

static struct dq *uniform(int k, int n, double a, double b) {
    struct dq *q = NULL;
    CHECK_INT(dq_uniform(k, n, a, b, &q), DQ_OK);
    return q;
}

static struct dq *wait_dq(int k, int n, double t) {
    struct dq *q = NULL;
    CHECK_INT(dq_wait(k, n, t, &q), DQ_OK);
    return q;
}

static struct dq *expo(int k, int n, double rate) {
    struct dq *q = NULL;
    CHECK_INT(dq_exponential(k, n, rate, &q), DQ_OK);
    return q;
}

static struct dq *never(int k, int n) {
    struct dq *q = NULL;
    CHECK_INT(dq_never(k, n, &q), DQ_OK);
    return q;
}

static const struct dq *calc(struct fixture *f, const char *name) {
    int i = dq_diagram_find(f->d, name);
    CHECK_MSG(i >= 0, "no node %s", name);
    const struct dq *q = dq_eval_calculated(f->ev, i);
    CHECK_MSG(q != NULL, "%s has no calculated ΔQ", name);
    return q;
}

static double quantile(const struct dq *q, double p) {
    double t = -1.0;
    CHECK_INT(dq_quantile(q, p, &t), DQ_OK);
    return t;
}

static double mean_of(const struct dq *q) {
    struct dq_moments m;
    CHECK_INT(dq_moments(q, &m), DQ_OK);
    return m.mean;
}

static double variance_of(const struct dq *q) {
    struct dq_moments m;
    CHECK_INT(dq_moments(q, &m), DQ_OK);
    return m.variance;
}

/* ---- model ---------------------------------------------------------------------------- */

static void test_model_api(void) {
    const char *text = "pipeline = worker_1 -> worker_2;\n"
                       "lookup   = f:race(cache, db -> s:pipeline) -> render;\n"
                       "system   = s:pipeline -> s:lookup;\n";
    struct dq_diagram *d = NULL;
    CHECK_INT(dq_diagram_parse(text, strlen(text), &d, NULL), DQ_OK);
    CHECK_INT(dq_diagram_root_count(d), 1);
    int sys = dq_diagram_find(d, "system");
    CHECK_INT(dq_diagram_root(d, 0), sys);
    CHECK_INT(dq_diagram_root(d, 1), -1);
    int pipeline = dq_diagram_find(d, "pipeline");
    int race = dq_diagram_find(d, "race");
    CHECK(pipeline >= 0 && race >= 0);
    CHECK_INT(dq_diagram_find(d, "nothing"), -1);
    CHECK(dq_diagram_node(d, -1) == NULL);
    CHECK(dq_diagram_node(d, (int)dq_diagram_node_count(d)) == NULL);

    const struct dq_diagram_node *p = dq_diagram_node(d, pipeline);
    CHECK_INT(p->kind, DQ_NODE_SEQUENCE);
    CHECK(p->is_definition);
    CHECK_INT(p->line, 1);
    CHECK_INT(p->column, 1);
    CHECK_INT(p->n_children, 2);
    CHECK_STR(dq_diagram_node(d, p->children[0])->name, "worker_1");
    /* pipeline is referenced twice: from system and from inside race's branch */
    CHECK_INT(p->n_parents, 2);
    for (size_t j = 0; j < p->n_parents; j++) {
        const struct dq_diagram_node *ref = dq_diagram_node(d, p->parents[j]);
        CHECK_INT(ref->kind, DQ_NODE_REFERENCE);
        CHECK_INT(ref->target, pipeline);
        CHECK(ref->name == NULL);
    }

    const struct dq_diagram_node *r = dq_diagram_node(d, race);
    CHECK_INT(r->kind, DQ_NODE_FIRST);
    CHECK_INT(r->line, 2);
    CHECK_INT(r->column, 12);
    CHECK_INT(r->n_children, 2);
    const struct dq_diagram_node *branch = dq_diagram_node(d, r->children[1]);
    CHECK(branch->name == NULL);
    CHECK_INT(branch->kind, DQ_NODE_SEQUENCE);
    CHECK_INT(branch->n_parents, 1);
    CHECK_INT(branch->parents[0], race);

    int kids[8];
    size_t nk = dq_diagram_probe_children(d, race, kids, 8);
    CHECK_INT(nk, 3);
    CHECK_STR(dq_diagram_node(d, kids[0])->name, "cache");
    CHECK_STR(dq_diagram_node(d, kids[1])->name, "db");
    CHECK_STR(dq_diagram_node(d, kids[2])->name, "pipeline");
    CHECK_INT(dq_diagram_probe_children(d, race, kids, 1), 3); /* total beyond cap */
    nk = dq_diagram_probe_children(d, sys, kids, 8);
    CHECK_INT(nk, 2);
    CHECK_INT(kids[0], pipeline);
    CHECK_INT(kids[1], dq_diagram_find(d, "lookup"));

    /* probes: every named node once, none of the anonymous ones */
    size_t np = dq_diagram_probe_count(d);
    CHECK_INT(np, 9);
    for (size_t j = 0; j < np; j++) {
        const struct dq_diagram_node *nd = dq_diagram_node(d, dq_diagram_probe(d, j));
        CHECK(nd->name != NULL);
        CHECK_INT(dq_diagram_find(d, nd->name), dq_diagram_probe(d, j));
    }
    CHECK_STR(dq_node_kind_name(DQ_NODE_CHOICE), "choice");
    dq_diagram_destroy(d);
    dq_diagram_destroy(NULL);
}

static void test_parse_error_api(void) {
    struct dq_diagram *d = (struct dq_diagram *)&d; /* must be reset to NULL */
    struct dq_diagram_error err;
    const char *text = "ok = x;\nbad = f:r(y);\n";
    CHECK_INT(dq_diagram_parse(text, strlen(text), &d, &err), DQ_EPARSE);
    CHECK(d == NULL);
    CHECK_INT(err.line, 2);
    CHECK_INT(err.column, 7);
    CHECK(strstr(err.text, "at least two") != NULL);
    CHECK(strncmp(dq_last_error(), "2:7: ", 5) == 0);
    /* no error struct: still an error code and a message */
    CHECK_INT(dq_diagram_parse(text, strlen(text), &d, NULL), DQ_EPARSE);
    CHECK(strstr(dq_last_error(), "f:r has one branch") != NULL);
    /* the length bounds the text: the part after it is not read */
    const char *cut = "ok = x; trailing garbage $$$";
    CHECK_INT(dq_diagram_parse(cut, 7, &d, &err), DQ_OK);
    dq_diagram_destroy(d);
    CHECK_INT(dq_diagram_parse(NULL, 0, &d, &err), DQ_OK);
    CHECK_INT(dq_diagram_node_count(d), 0);
    dq_diagram_destroy(d);
    CHECK_INT(dq_diagram_parse(NULL, 0, NULL, &err), DQ_EINVAL);
}

/* ---- evaluator: closed forms -------------------------------------------------------- */

static void test_uniform_sequence(void) {
    struct fixture f;
    /* k = 2: 4 ms bins, 1024 of them: horizon 4.096 s covers the support [2, 4] */
    if (fixture_open(&f, "e2e = x -> y;", 2, 1024)) {
        return;
    }
    give(&f, "x", uniform(2, 1024, 1.0, 2.0));
    give(&f, "y", uniform(2, 1024, 1.0, 2.0));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *e = calc(&f, "e2e");
    double w = 0.004;
    CHECK_INT(e->k, 2);
    CHECK_INT(e->n, 1024);
    CHECK_NEAR(quantile(e, 0.5), 3.0, 2 * w);
    CHECK_NEAR(quantile(e, 0.9), 3.5527864, 2 * w);
    CHECK_NEAR(dq_cdf_at(e, 3.5), 0.875, 0.01);
    CHECK_NEAR(mean_of(e), 3.0, w);
    CHECK_NEAR(variance_of(e), 2.0 / 12.0, 1e-3);
    CHECK_NEAR(dq_lost(e), 0.0, 1e-9);
    fixture_close(&f);
}

static void test_first_and_all_uniform(void) {
    struct fixture f;
    if (fixture_open(&f, "fast = f:race(x, y);\nslow = a:join(u, v);\n", 0, 1024)) {
        return;
    }
    give(&f, "x", uniform(0, 1024, 0.0, 1.0));
    give(&f, "y", uniform(0, 1024, 0.0, 1.0));
    give(&f, "u", uniform(0, 1024, 0.0, 1.0));
    give(&f, "v", uniform(0, 1024, 0.0, 1.0));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *fast = calc(&f, "fast");
    const struct dq *slow = calc(&f, "slow");
    for (double t = 0.1; t < 0.95; t += 0.2) {
        CHECK_NEAR(dq_cdf_at(fast, t), 1.0 - (1.0 - t) * (1.0 - t), 0.003);
        CHECK_NEAR(dq_cdf_at(slow, t), t * t, 0.003);
    }
    CHECK_NEAR(mean_of(fast), 1.0 / 3.0, 0.002);
    CHECK_NEAR(mean_of(slow), 2.0 / 3.0, 0.002);
    /* the operator node and the definition above it carry the same ΔQ */
    CHECK_NEAR(mean_of(calc(&f, "race")), mean_of(fast), 1e-12);
    fixture_close(&f);
}

static void test_exponentials(void) {
    struct fixture f;
    double lambda = 10.0;
    if (fixture_open(&f, "erlang = x -> y;\nmin = f:first(u, v);\n", -1, 4096)) {
        return;
    }
    give(&f, "x", expo(-1, 4096, lambda));
    give(&f, "y", expo(-1, 4096, lambda));
    give(&f, "u", expo(-1, 4096, 4.0));
    give(&f, "v", expo(-1, 4096, 6.0));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *e = calc(&f, "erlang");
    const struct dq *m = calc(&f, "min");
    double w = 0.0005;
    for (double t = 0.05; t < 1.0; t += 0.15) {
        double erlang = 1.0 - exp(-lambda * t) * (1.0 + lambda * t);
        /* two bins of slope (max density λ/e ≈ 3.7 /s) plus rounding */
        CHECK_NEAR(dq_cdf_at(e, t), erlang, 2 * w * 3.7 + 1e-6);
        CHECK_NEAR(dq_cdf_at(m, t), 1.0 - exp(-10.0 * t), 2 * w * 10.0 + 1e-6);
    }
    CHECK_NEAR(mean_of(e), 2.0 / lambda, 2 * w);
    CHECK_NEAR(variance_of(e), 2.0 / (lambda * lambda), 1e-3);
    fixture_close(&f);
}

static void test_waits_and_never(void) {
    struct fixture f;
    const char *text = "seq = a1 -> b1;\n"
                       "both = a:all_w(a1, b1);\n"
                       "either = f:first_w(a1, b1);\n"
                       "with_never = f:fn(a1, nv);\n"
                       "seq_never = a1 -> nv;\n"
                       "all_never = a:an(a1, nv);\n";
    if (fixture_open(&f, text, 0, 1024)) {
        return;
    }
    give(&f, "a1", wait_dq(0, 1024, 0.2));
    give(&f, "b1", wait_dq(0, 1024, 0.5));
    give(&f, "nv", never(0, 1024));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    CHECK_NEAR(quantile(calc(&f, "seq"), 1.0), 0.7, 0.002);
    CHECK_NEAR(quantile(calc(&f, "seq"), 0.01), 0.7, 0.002);
    CHECK_NEAR(quantile(calc(&f, "both"), 0.5), 0.5, 0.002);
    CHECK_NEAR(quantile(calc(&f, "either"), 0.5), 0.2, 0.002);
    /* never: identity of first-to-finish, absorbing for sequence and all-to-finish */
    CHECK_NEAR(quantile(calc(&f, "with_never"), 1.0), 0.2, 0.002);
    CHECK_NEAR(dq_lost(calc(&f, "with_never")), 0.0, 1e-9);
    CHECK_NEAR(dq_lost(calc(&f, "seq_never")), 1.0, 1e-9);
    CHECK_NEAR(dq_lost(calc(&f, "all_never")), 1.0, 1e-9);
    fixture_close(&f);
}

static void test_choice_and_lost_mass(void) {
    struct fixture f;
    const char *text = "scaled = p:c[0.75, 0.25](x, nv);\n"
                       "lossy2 = p:c2[0.6, 0.4](y, nv2);\n"
                       "chain = s:scaled -> s:lossy2;\n"
                       "race = f:r(s:scaled, s:lossy2);\n";
    if (fixture_open(&f, text, 0, 2048)) {
        return;
    }
    give(&f, "x", uniform(0, 2048, 0.1, 0.3));
    give(&f, "nv", never(0, 2048));
    give(&f, "y", wait_dq(0, 2048, 0.4));
    give(&f, "nv2", never(0, 2048));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *s = calc(&f, "scaled");
    CHECK_NEAR(dq_lost(s), 0.25, 1e-6);
    for (double t = 0.12; t < 0.3; t += 0.04) {
        CHECK_NEAR(dq_cdf_at(s, t), 0.75 * (t - 0.1) / 0.2, 0.01);
    }
    /* lost mass of a sequence 1 − Π(1 − lostᵢ); of first-to-finish Π lostᵢ */
    CHECK_NEAR(dq_lost(calc(&f, "chain")), 1.0 - 0.75 * 0.6, 1e-6);
    CHECK_NEAR(dq_lost(calc(&f, "race")), 0.25 * 0.4, 1e-6);
    /* means add under sequence (conditioned on success here: each part is a scaled
     * copy of x or y, so the conditional means still add) */
    CHECK_NEAR(mean_of(calc(&f, "chain")), 0.2 + 0.4, 0.002);
    fixture_close(&f);
}

/* docs/engine.md, binned reference values: point masses at the grid times 0 … 6 on 1 ms
 * bins (the DeltaQ library's way of writing them), CDFs read at those times. */
static void test_binned_reference(void) {
    struct fixture f;
    const char *text = "seq = x -> y;\nall = a:both(u, v);\nfirst = f:race(u, v);\n";
    if (fixture_open(&f, text, 0, 7)) {
        return;
    }
    const double x[7] = {0, .3, 0, .7, 0, 0, 0};
    const double y[7] = {0, 0, .6, .4, 0, 0, 0};
    const double u[4] = {0, .5, .25, .25};
    const double v[4] = {0, .25, .25, .5};
    struct dq *qx = NULL, *qy = NULL, *qu = NULL, *qv = NULL;
    CHECK_INT(dq_from_points(0, 6, x, &qx), DQ_OK);
    CHECK_INT(dq_from_points(0, 6, y, &qy), DQ_OK);
    CHECK_INT(dq_from_points(0, 3, u, &qu), DQ_OK);
    CHECK_INT(dq_from_points(0, 3, v, &qv), DQ_OK);
    give(&f, "x", qx);
    give(&f, "y", qy);
    give(&f, "u", qu);
    give(&f, "v", qv);
    for (const char *const *g = (const char *const[]){"all", "both", "first", "race", NULL}; *g;
         g++) {
        CHECK_INT(dq_eval_set_grid(f.ev, dq_diagram_find(f.d, *g), 0, 3), DQ_OK);
    }
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const double seq_cdf[8] = {0, 0, 0, .18, .30, .72, 1, 1};
    const double all_cdf[4] = {0, .125, .375, 1};
    const double first_cdf[4] = {0, .625, .875, 1};
    const struct dq *s = calc(&f, "seq");
    const struct dq *a = calc(&f, "all");
    const struct dq *fi = calc(&f, "first");
    for (int i = 0; i < 8; i++) {
        CHECK_NEAR(dq_cdf_at(s, i * 0.001), seq_cdf[i], 1e-9);
    }
    CHECK_NEAR(dq_lost(s), 0.0, 1e-12); /* everything by 6 ms, inside the 7 ms horizon */
    CHECK_INT(s->lag, 0);
    CHECK_INT(a->n, 3);
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(dq_cdf_at(a, i * 0.001), all_cdf[i], 1e-9);
        CHECK_NEAR(dq_cdf_at(fi, i * 0.001), first_cdf[i], 1e-9);
    }
    fixture_close(&f);
}

/* ---- evaluator: observed vs calculated, grids, missing inputs ------------------------ */

static void test_observed_where_given(void) {
    struct fixture f;
    const char *text = "part = x -> y;\nsystem = s:part -> z;\n";
    if (fixture_open(&f, text, 0, 1024)) {
        return;
    }
    int part = dq_diagram_find(f.d, "part");
    int sys = dq_diagram_find(f.d, "system");
    int ref = dq_diagram_node(f.d, sys)->children[0];
    CHECK_INT(dq_eval_set_observed(f.ev, ref, NULL), DQ_EINVAL); /* a reference */
    CHECK_INT(dq_eval_set_observed(f.ev, 999, NULL), DQ_ERANGE);
    CHECK_INT(dq_eval_set_observed_by_name(f.ev, "nope", NULL), DQ_ENOTFOUND);

    /* only x: nothing above it can be computed, and the missing outcomes are named */
    give(&f, "x", wait_dq(0, 1024, 0.1));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    CHECK(dq_eval_calculated(f.ev, part) == NULL);
    CHECK(dq_eval_calculated(f.ev, sys) == NULL);
    int miss[4];
    CHECK_INT(dq_eval_missing(f.ev, sys, miss, 4), 2);
    CHECK_STR(dq_diagram_node(f.d, miss[0])->name, "y");
    CHECK_STR(dq_diagram_node(f.d, miss[1])->name, "z");

    /* every leaf: calculated from leaves */
    give(&f, "y", wait_dq(0, 1024, 0.2));
    give(&f, "z", wait_dq(0, 1024, 0.3));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    CHECK_INT(dq_eval_missing(f.ev, sys, miss, 4), 0);
    CHECK_NEAR(quantile(calc(&f, "part"), 0.5), 0.3, 0.0011);
    CHECK_NEAR(quantile(calc(&f, "system"), 0.5), 0.6, 0.0011);
    CHECK(dq_eval_effective(f.ev, ref) == dq_eval_calculated(f.ev, part));

    /* part observed: system uses the observation, part still has its calculation */
    give(&f, "part", wait_dq(0, 1024, 0.5));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    CHECK_NEAR(quantile(calc(&f, "part"), 0.5), 0.3, 0.0011);
    CHECK_NEAR(quantile(calc(&f, "system"), 0.5), 0.8, 0.0011);
    CHECK(dq_eval_effective(f.ev, ref) == dq_eval_observed(f.ev, part));

    /* a new window: nothing observed, nothing calculated */
    dq_eval_clear_observed(f.ev);
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    CHECK(dq_eval_calculated(f.ev, sys) == NULL);
    CHECK(dq_eval_effective(f.ev, part) == NULL);
    CHECK_INT(dq_eval_missing(f.ev, sys, miss, 4), 3);
    fixture_close(&f);
}

static void test_per_node_grid(void) {
    struct fixture f;
    if (fixture_open(&f, "inner = x -> y;\nouter = s:inner -> z;\n", 0, 1024)) {
        return;
    }
    int inner = dq_diagram_find(f.d, "inner");
    int outer = dq_diagram_find(f.d, "outer");
    CHECK_INT(dq_eval_set_grid(f.ev, inner, 3, 100), DQ_OK); /* 8 ms × 100 = 0.8 s */
    CHECK_INT(dq_eval_set_grid(f.ev, outer, 1, 4096), DQ_OK);
    CHECK_INT(dq_eval_set_grid(f.ev, outer, 1, 5000), DQ_ERANGE);
    CHECK_INT(dq_eval_set_grid(f.ev, outer, 11, 10), DQ_ERANGE);
    give(&f, "x", uniform(0, 1024, 0.2, 0.6));
    give(&f, "y", uniform(0, 1024, 0.2, 0.6));
    give(&f, "z", wait_dq(0, 1024, 0.1));
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *in = calc(&f, "inner");
    const struct dq *out = calc(&f, "outer");
    CHECK_INT(in->k, 3);
    CHECK_INT(in->n, 100);
    CHECK_INT(out->k, 1);
    CHECK_INT(out->n, 4096);
    /* x + y is triangular on [0.4, 1.2]: past inner's 0.8 s horizon is lost, 1/2 */
    CHECK_NEAR(dq_lost(in), 0.5, 0.02);
    CHECK_NEAR(quantile(in, 0.25), 0.6828, 2 * 0.008);
    /* outer consumes inner's (truncated) calculated ΔQ plus z */
    CHECK_NEAR(dq_lost(out), 0.5, 0.02);
    fixture_close(&f);
}

/* A long chain whose summed horizons pass DQ_MAX_BINS: the fold path with truncation. */
static void test_long_sequence(void) {
    char text[4096];
    size_t used = 0;
    used += (size_t)snprintf(text + used, sizeof text - used, "chain = o0");
    for (int i = 1; i < 100; i++) {
        used += (size_t)snprintf(text + used, sizeof text - used, " -> o%d", i);
    }
    snprintf(text + used, sizeof text - used, ";");
    struct fixture f;
    if (fixture_open(&f, text, 0, 2048)) {
        return;
    }
    struct dq *parts[100];
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        parts[i] = uniform(0, 1024, 0.0, 0.02);
        CHECK_INT(dq_eval_set_observed_by_name(f.ev, name, parts[i]), DQ_OK);
    }
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *c = calc(&f, "chain");
    CHECK_INT(c->k, 0);
    CHECK_INT(c->n, 2048);
    CHECK_NEAR(mean_of(c), 1.0, 0.002);
    CHECK_NEAR(variance_of(c), 100 * 0.02 * 0.02 / 12.0, 2e-4);
    CHECK_NEAR(quantile(c, 0.5), 1.0, 0.002);
    CHECK_NEAR(dq_lost(c), 0.0, 1e-9);
    for (int i = 0; i < 100; i++) {
        dq_destroy(parts[i]);
    }
    fixture_close(&f);
}

/*
 * Fine-grained parts under a long horizon: 100 × U(0, 20 ms) on 62.5 µs bins summed into
 * a node of 2048 × 1 ms. The chain outgrows DQ_MAX_BINS at the parts' width long before
 * it reaches the node's horizon; no mass inside the horizon may be dropped on the way.
 */
static void test_long_sequence_fine_parts(void) {
    char text[4096];
    size_t used = (size_t)snprintf(text, sizeof text, "chain = o0");
    for (int i = 1; i < 100; i++) {
        used += (size_t)snprintf(text + used, sizeof text - used, " -> o%d", i);
    }
    snprintf(text + used, sizeof text - used, ";");
    struct fixture f;
    if (fixture_open(&f, text, 0, 2048)) {
        return;
    }
    struct dq *parts[100];
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        parts[i] = uniform(-4, 1024, 0.0, 0.02);
        CHECK_INT(dq_eval_set_observed_by_name(f.ev, name, parts[i]), DQ_OK);
    }
    CHECK_INT(dq_eval_run(f.ev), DQ_OK);
    const struct dq *c = calc(&f, "chain");
    CHECK_INT(c->k, 0);
    CHECK_INT(c->n, 2048);
    CHECK_NEAR(dq_lost(c), 0.0, 1e-9);
    /* Each part is rebinned from 62.5 µs to the sum's wider grid; ties go to the even
     * coarse time, so the parts' rounding does not add up to a drift (with ties upward
     * it was + ½ fine bin per part, 3.1 ms over 100 parts). */
    CHECK_NEAR(mean_of(c), 1.0, 0.001);
    CHECK_NEAR(variance_of(c), 100 * 0.02 * 0.02 / 12.0, 2e-4);
    for (int i = 0; i < 100; i++) {
        dq_destroy(parts[i]);
    }
    fixture_close(&f);
}

/* An operator's failure stops the run, clears every result and keeps the detail. */
static void test_operator_error(void) {
    struct fixture f;
    if (fixture_open(&f, "e2e = x -> y;", 0, 64)) {
        return;
    }
    static double zeros[5000];
    struct dq bad = {.k = 0, .n = 5000, .width = 0.001, .pdf = zeros}; /* N out of range */
    give(&f, "x", wait_dq(0, 64, 0.01));
    CHECK_INT(dq_eval_set_observed_by_name(f.ev, "y", &bad), DQ_OK);
    int rc = dq_eval_run(f.ev);
    CHECK(rc < 0);
    CHECK(strncmp(dq_last_error(), "evaluating e2e: ", 16) == 0);
    CHECK_MSG(strstr(dq_last_error(), "5000") != NULL, "detail lost: %s", dq_last_error());
    CHECK(dq_eval_calculated(f.ev, dq_diagram_find(f.d, "e2e")) == NULL);
    fixture_close(&f);
}

static const struct check_case cases[] = {
    CHECK_CASE(model_api),
    CHECK_CASE(parse_error_api),
    CHECK_CASE(uniform_sequence),
    CHECK_CASE(first_and_all_uniform),
    CHECK_CASE(exponentials),
    CHECK_CASE(waits_and_never),
    CHECK_CASE(choice_and_lost_mass),
    CHECK_CASE(binned_reference),
    CHECK_CASE(observed_where_given),
    CHECK_CASE(per_node_grid),
    CHECK_CASE(long_sequence),
    CHECK_CASE(long_sequence_fine_parts),
    CHECK_CASE(operator_error),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
