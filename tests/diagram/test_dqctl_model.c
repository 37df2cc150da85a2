/*
 * test_dqctl_model.c: `dqctl model` run as a subprocess (dqctl's path is DQCTL_BINARY, set by
 * CMake).
 *
 * Checks the reference values of docs/engine.md through the command line, the JSON fields and their
 * meaning (cdf[i] = dq_cdf_at(i·width), compared with the engine run in-process), the
 * grid rule, the distributions (samples files with fail/timeout lines included), and that
 * every usage or model error exits 2 with a message on stderr.
 */
#include "diagram.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const char *const dqctl = DQCTL_BINARY;
static char dir[256];
static char e2e[512]; /* e2e.dq in dir, written by setup() */

/* Output of one run. */
struct run {
    int status;
    char *out;
    char *err;
};

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
    }
    return buf;
}

static void write_file(const char *name, const char *text, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs `dqctl ARGS` (ARGS is shell text) capturing stdout and stderr. */
static struct run run_dqctl(const char *args) {
    struct run r = {-1, NULL, NULL};
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out' 2>'%s/err'", dqctl, args, dir, dir);
    int st = system(cmd);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char path[512];
    snprintf(path, sizeof path, "%s/out", dir);
    r.out = slurp(path);
    snprintf(path, sizeof path, "%s/err", dir);
    r.err = slurp(path);
    if (!r.out || !r.err) {
        fprintf(stderr, "cannot read the output of: %s\n", cmd);
    }
    return r;
}

static void run_free(struct run *r) {
    free(r->out);
    free(r->err);
}

/* The index-th JSON line of r's stdout, or NULL. */
static json_t *json_line(const struct run *r, int index) {
    const char *p = r->out;
    for (int i = 0; p && i < index; i++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (!p || !*p) {
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb(p, strcspn(p, "\n"), 0, &e);
    CHECK_MSG(j != NULL, "bad JSON at %d:%d: %s", e.line, e.column, e.text);
    return j;
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    CHECK_MSG(json_is_number(v), "%s is not a number", key);
    return json_number_value(v);
}

static double quant(json_t *o, const char *p) {
    json_t *v = json_object_get(json_object_get(o, "quantiles"), p);
    CHECK_MSG(json_is_number(v), "quantile %s is not a number", p);
    return json_number_value(v);
}

/* Expects exit status 2 and a message containing `needle` on stderr. */
static void expect_error(const char *args, const char *needle) {
    struct run r = run_dqctl(args);
    CHECK_MSG(r.status == 2, "dqctl %s: status %d", args, r.status);
    CHECK_MSG(r.err && strstr(r.err, needle) != NULL, "dqctl %s: stderr lacks \"%s\": %s", args,
              needle, r.err ? r.err : "(none)");
    run_free(&r);
}

static void test_oracle_json(void) {
    const char *model = e2e;
    char args[1024];
    snprintf(args, sizeof args, "model '%s' --set x='uniform(1,2)' --set 'y=uniform(1, 2)' --json",
             model);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *o = json_line(&r, 0);
    CHECK(json_line(&r, 1) == NULL); /* one root, one object */
    if (!o) {
        run_free(&r);
        return;
    }
    CHECK_STR(json_string_value(json_object_get(o, "node")), "e2e");
    CHECK_STR(json_string_value(json_object_get(o, "source")), "calculated");
    double w = num(o, "bin_width");
    /* grid rule: density ≤ 1/s (min of the operands'), support [2, 4] s → the largest
     * 2^k ms ≤ 4 s/1024 is 2 ms, 2000 of them reach 4 s */
    CHECK_NEAR(w, 0.002, 1e-12);
    CHECK_NEAR(num(o, "bins"), 2000, 0);
    /* quantiles are right edges, at or after the exact value (uniform bins: exact CDF) */
    CHECK_NEAR(quant(o, "0.5"), 3.0, 1e-12);
    CHECK_NEAR(quant(o, "0.9"), 3.554, 1e-12); /* 4 − √0.2 = 3.5527864 */
    CHECK_NEAR(num(o, "lost_past_horizon"), 0.0, 0.0);
    CHECK_NEAR(num(o, "mean"), 3.0, w);
    CHECK_NEAR(num(o, "variance"), 1.0 / 6.0, 1e-3);
    CHECK_NEAR(num(o, "lost"), 0.0, 1e-9);
    json_t *cdf = json_object_get(o, "cdf");
    CHECK_INT(json_array_size(cdf), 2000);

    /* the same model in-process: cdf[i] must be dq_cdf_at((i+1)·width), the CDF at the
     * right edge of bin i */
    struct dq_diagram *d = NULL;
    struct dq_eval *ev = NULL;
    struct dq *x = NULL, *y = NULL;
    const char *text = "e2e = x -> y;";
    CHECK_INT(dq_diagram_parse(text, strlen(text), &d, NULL), DQ_OK);
    CHECK_INT(dq_eval_create(d, 1, 2000, &ev), DQ_OK);
    CHECK_INT(dq_uniform(1, 2000, 1.0, 2.0, &x), DQ_OK);
    CHECK_INT(dq_uniform(1, 2000, 1.0, 2.0, &y), DQ_OK);
    dq_eval_set_observed_by_name(ev, "x", x);
    dq_eval_set_observed_by_name(ev, "y", y);
    CHECK_INT(dq_eval_run(ev), DQ_OK);
    const struct dq *e = dq_eval_calculated(ev, dq_diagram_find(d, "e2e"));
    CHECK(e != NULL);
    double prev = 0.0;
    int bad = 0;
    for (size_t i = 0; e && i < json_array_size(cdf); i++) {
        double v = json_number_value(json_array_get(cdf, i));
        bad += v < prev - 1e-12 || fabs(v - dq_cdf_at(e, (double)(i + 1) * w)) > 1e-9;
        prev = v;
    }
    CHECK_INT(bad, 0);
    CHECK_NEAR(prev, 1.0 - num(o, "lost"), 1e-9);
    CHECK_NEAR(json_number_value(json_array_get(cdf, 1749)), dq_cdf_at(e, 3.5), 1e-9);
    CHECK_NEAR(json_number_value(json_array_get(cdf, 1749)), 0.875, 1e-9); /* exact at edges */
    dq_eval_destroy(ev);
    dq_diagram_destroy(d);
    dq_destroy(x);
    dq_destroy(y);
    json_decref(o);
    run_free(&r);
}

static void test_stdin(void) {
    const char *model = e2e;
    char args[1024];
    snprintf(args, sizeof args, "model - --set x='wait(0.25)' --set y='wait(0.5)' --json < '%s'",
             model);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *o = json_line(&r, 0);
    if (o) {
        CHECK_NEAR(quant(o, "0.5"), 0.75, 2 * num(o, "bin_width"));
    }
    json_decref(o);
    run_free(&r);
}

static void test_human_output(void) {
    const char *model = e2e;
    char args[1024];
    snprintf(args, sizeof args, "model '%s' --set x='uniform(1,2)' --set y='uniform(1,2)'", model);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    CHECK(r.out && strstr(r.out, "e2e  (calculated; bin width 2 ms, 2000 bins") != NULL);
    CHECK(r.out && strstr(r.out, "p50       3 s") != NULL);
    CHECK(r.out && strstr(r.out, "p90       3.554 s") != NULL);
    CHECK(r.out && strstr(r.out, "lost      0\n") != NULL);
    CHECK(r.out && strstr(r.out, "1.00 |") != NULL && strstr(r.out, "*") != NULL);
    run_free(&r);
}

static void test_distributions(void) {
    char model[512], samples[512], args[2048];
    write_file("multi.dq",
               "front = s:back -> net;\n"
               "back = f:race(cache, db);\n"
               "other = p:coin[0.75, 0.25](ok, down);\n",
               model, sizeof model);
    write_file("samples.txt",
               "# durations in seconds\n0.010\n0.020\n  0.030  \n\nfail\nTIMEOUT\n0.040\n"
               "0.050\n0.060\nfail\n",
               samples, sizeof samples);

    /* every root, in file order: front then other (back is referenced) */
    snprintf(args, sizeof args,
             "model '%s' --set cache='samples(%s)' --set db=never --set net='wait(0.005)' "
             "--set ok='exponential(20)' --set down=never --json",
             model, samples);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *front = json_line(&r, 0);
    json_t *other = json_line(&r, 1);
    CHECK(json_line(&r, 2) == NULL);
    if (front && other) {
        CHECK_STR(json_string_value(json_object_get(front, "node")), "front");
        CHECK_STR(json_string_value(json_object_get(other, "node")), "other");
        /* 6 successes, 2 failures, 1 timeout: 3/9 lost, and db never finishes */
        CHECK_NEAR(num(front, "lost"), 3.0 / 9.0, 1e-9);
        CHECK_NEAR(num(front, "mean"), 0.035 + 0.005, 2 * num(front, "bin_width"));
        CHECK(json_is_null(json_object_get(json_object_get(front, "quantiles"), "0.99")));
        /* lost: the 0.25 that never completes, and the exponential's tail past the horizon,
         * reported as such: 0.75·e^(−20·H) */
        double h = num(other, "horizon");
        CHECK_NEAR(num(other, "lost") - num(other, "lost_past_horizon"), 0.25, 1e-9);
        CHECK_NEAR(num(other, "lost_past_horizon"), 0.75 * exp(-20.0 * h), 1e-9);
        CHECK(num(other, "lost_past_horizon") < 1e-4);
        CHECK_NEAR(num(other, "mean"), 1.0 / 20.0, 2 * num(other, "bin_width"));
        CHECK(json_is_null(json_object_get(json_object_get(other, "quantiles"), "0.95")));
        /* the sharpest density is exponential(20) taken 75 % of the time: 15/s, so bins of
         * 0.25 ms (15·w ≤ 0.004); they reach its ln(1e4)/20 = 0.4605 s in 1843 bins */
        CHECK_NEAR(num(front, "bin_width"), 0.00025, 1e-12);
        CHECK_NEAR(num(front, "bins"), 1843, 0);
    }
    json_decref(front);
    json_decref(other);
    run_free(&r);

    /* --node: a given node is reported as given; never has no quantile and no mean */
    snprintf(args, sizeof args,
             "model '%s' --set back=never --set net='wait(0.5)' --node back --node front "
             "--json",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *b = json_line(&r, 0);
    json_t *f = json_line(&r, 1);
    if (b && f) {
        CHECK_STR(json_string_value(json_object_get(b, "source")), "given");
        CHECK_NEAR(num(b, "lost"), 1.0, 1e-12);
        CHECK(json_is_null(json_object_get(b, "mean")));
        CHECK(json_is_null(json_object_get(json_object_get(b, "quantiles"), "0.5")));
        CHECK_STR(json_string_value(json_object_get(f, "source")), "calculated");
        CHECK_NEAR(num(f, "lost"), 1.0, 1e-12);
    }
    json_decref(b);
    json_decref(f);
    run_free(&r);

    /* an explicit grid is used as given; --bin-width alone covers the support */
    snprintf(args, sizeof args,
             "model '%s' --set back='uniform(0,1)' --set net='wait(1)' --bin-width 0.001 "
             "--bins 4096 --json --node front",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *g = json_line(&r, 0);
    if (g) {
        CHECK_NEAR(num(g, "bin_width"), 0.001, 1e-12);
        CHECK_NEAR(num(g, "bins"), 4096, 0);
        CHECK_NEAR(quant(g, "0.5"), 1.5, 0.002);
    }
    json_decref(g);
    run_free(&r);
    snprintf(args, sizeof args,
             "model '%s' --set back='uniform(0,1)' --set net='wait(1)' --bin-width=0.008 "
             "--json --node=front",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    g = json_line(&r, 0);
    if (g) {
        CHECK_NEAR(num(g, "bin_width"), 0.008, 1e-12);
        CHECK_NEAR(num(g, "bins"), 250, 0); /* 2 s / 8 ms */
    }
    json_decref(g);
    run_free(&r);
}

/* Kolmogorov distance on [0, H] between the step CDF of a --json object (cdf[i] at the
 * right edge (i+1)·w, held until the next edge) and a continuous F. */
static double ks_json(json_t *o, double (*F)(double)) {
    json_t *cdf = json_object_get(o, "cdf");
    double w = num(o, "bin_width"), d = 0.0, c = 0.0;
    for (size_t i = 0; i < json_array_size(cdf); i++) {
        d = fmax(d, fmax(fabs(c - F(i * w)), fabs(c - F((i + 1) * w))));
        c = json_number_value(json_array_get(cdf, i));
    }
    return d;
}

static double ex(double t, double rate) {
    return t <= 0.0 ? 0.0 : -expm1(-rate * t);
}

static double f_erlang4(double t) {
    double x = 10.0 * t;
    return t <= 0.0 ? 0.0 : 1.0 - exp(-x) * (1 + x + x * x / 2 + x * x * x / 6);
}

static double f_race(double t) {
    double u = t <= 0.001 ? 0.0 : t >= 0.002 ? 1.0 : (t - 0.001) / 0.001;
    return 1.0 - (1.0 - u) * (1.0 - ex(t, 1.0));
}

static double f_ftf3(double t) {
    return 1.0 - (1.0 - 0.9 * ex(t, 10)) * (1.0 - 0.8 * ex(t, 20)) * (1.0 - 0.7 * ex(t, 30));
}

/* Issue 15, defect D and acceptance 2: the default grid resolves every case within a
 * Kolmogorov distance of 1e-2; the tail cut at the horizon is reported as such. */
static void test_default_grids(void) {
    char model[512], args[2048];
    write_file("erlang4.dq", "system = a -> b -> c -> d;\n", model, sizeof model);
    snprintf(args, sizeof args,
             "model '%s' --set a='exponential(10)' --set b='exponential(10)' "
             "--set c='exponential(10)' --set d='exponential(10)' --json",
             model);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    json_t *o = json_line(&r, 0);
    if (o) {
        /* 1 ms bins (16 ms before issue 15), reaching mean + 8σ = 2 s */
        CHECK_NEAR(num(o, "bin_width"), 0.001, 1e-12);
        CHECK_NEAR(num(o, "horizon"), 2.0, 1e-12);
        double ks = ks_json(o, f_erlang4);
        CHECK_MSG(ks <= 1e-2, "Erlang-4 at the default grid: KS %g", ks);
        CHECK_NEAR(num(o, "mean"), 0.4, 1e-4);
        double tail = 1.0 - f_erlang4(2.0);
        CHECK_NEAR(num(o, "lost_past_horizon"), tail, 1e-6);
        CHECK_NEAR(num(o, "lost"), num(o, "lost_past_horizon"), 1e-12);
    }
    json_decref(o);
    run_free(&r);
    snprintf(args, sizeof args,
             "model '%s' --set a='exponential(10)' --set b='exponential(10)' "
             "--set c='exponential(10)' --set d='exponential(10)'",
             model);
    r = run_dqctl(args);
    CHECK(r.out &&
          strstr(r.out, "lost      0.00000320385 (0.00000320385 of it past the horizon 2 s)"));
    run_free(&r);

    /* a race of a 1–2 ms cache with a slow database: the race is over by 2 ms, so the
     * grid resolves the cache (0.5 ms bins before issue 15) */
    write_file("race.dq", "lookup = f:race(cache, db);\n", model, sizeof model);
    snprintf(args, sizeof args,
             "model '%s' --set cache='uniform(0.001,0.002)' --set db='exponential(1)' --json",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    o = json_line(&r, 0);
    if (o) {
        CHECK(num(o, "bin_width") <= 0.002 / 1024 * (1 + 1e-9));
        CHECK_NEAR(num(o, "horizon"), 0.002, 1e-12);
        double ks = ks_json(o, f_race);
        CHECK_MSG(ks <= 1e-2, "race at the default grid: KS %g", ks);
        CHECK_NEAR(quant(o, "0.5"), 0.0015, 1e-5);
    }
    json_decref(o);
    run_free(&r);

    /* a cache that misses 20 % of the time raced against the database: bins fine enough
     * for the cache reach only ~19 ms and would cut 7 % of the misses' tail, so the model
     * is evaluated again on the grid that reaches the database's tail, and says so */
    write_file("miss.dq", "c = p:h[0.8, 0.2](hit, miss);\nlookup = f:race(s:c, db);\n", model,
               sizeof model);
    snprintf(args, sizeof args,
             "model '%s' --set hit='uniform(0.001,0.002)' --set miss=never "
             "--set db='exponential(50)' --json --node lookup",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    CHECK(r.err && strstr(r.err, "reaching 256 ms instead with 4096 bins of 62.5 \xc2\xb5s"));
    o = json_line(&r, 0);
    if (o) {
        CHECK_NEAR(num(o, "horizon"), 0.256, 1e-12);
        CHECK(num(o, "lost_past_horizon") < 1e-5);
        CHECK_NEAR(num(o, "lost"), 0.0, 1e-5);
        CHECK_NEAR(quant(o, "0.5"), 0.001625, 1e-12); /* exact 1.574 ms: the next edge */
    }
    json_decref(o);
    run_free(&r);

    /* first-to-finish of three exponentials with failure mass */
    write_file("ftf3.dq",
               "b1 = p:c1[0.9, 0.1](e1, n1);\nb2 = p:c2[0.8, 0.2](e2, n2);\n"
               "b3 = p:c3[0.7, 0.3](e3, n3);\nsystem = f:r(s:b1, s:b2, s:b3);\n",
               model, sizeof model);
    snprintf(args, sizeof args,
             "model '%s' --set e1='exponential(10)' --set e2='exponential(20)' "
             "--set e3='exponential(30)' --set n1=never --set n2=never --set n3=never --json "
             "--node system",
             model);
    r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    CHECK(r.err && strstr(r.err, "mass beyond it is reported as lost past the horizon"));
    o = json_line(&r, 0);
    if (o) {
        double ks = ks_json(o, f_ftf3);
        CHECK_MSG(ks <= 1e-2, "ftf of three lossy exponentials at the default grid: KS %g", ks);
        double h = num(o, "horizon"), failed = 0.1 * 0.2 * 0.3;
        CHECK_NEAR(num(o, "lost") - num(o, "lost_past_horizon"), failed, 1e-9);
        CHECK_NEAR(num(o, "lost_past_horizon"), 1.0 - f_ftf3(h) - failed, 1e-9);
    }
    json_decref(o);
    run_free(&r);
}

/* The oscilloscope's example diagram is evaluated, its doubtful parts warned about. */
static void test_oscilloscope_example(void) {
    char model[512], args[2048];
    write_file("example.dq",
               "probe1 = o1 -> o2 -> s:o3;\n"
               "system = s:probe1 -> f:ftf1(c, d, e, g, h) -> p:q[0.1, 0.2](c, b);\n",
               model, sizeof model);
    snprintf(args, sizeof args,
             "model '%s' --set o1='wait(0.001)' --set o2='wait(0.002)' --set o3='wait(0.003)' "
             "--set c='wait(0.010)' --set d='wait(0.02)' --set e='wait(0.02)' "
             "--set g='wait(0.02)' --set h='wait(0.02)' --set b='wait(0.04)' --json",
             model);
    struct run r = run_dqctl(args);
    CHECK_INT(r.status, 0);
    CHECK(r.err && strstr(r.err, "example.dq:1:22: warning: s:o3 refers to `o3`, which is never "
                                 "defined"));
    CHECK(r.err && strstr(r.err, "example.dq:2:47: warning: the probabilities of p:q sum to 0.3"));
    json_t *o = json_line(&r, 0);
    if (o) {
        /* 6 ms, then the race (c: 10 ms), then c (10 ms) w.p. 1/3 or b (40 ms) w.p. 2/3 */
        CHECK_NEAR(quant(o, "0.5"), 0.056, 1e-12);
        CHECK_NEAR(num(o, "mean"), 0.006 + 0.010 + (0.010 + 2 * 0.040) / 3, 1e-9);
    }
    json_decref(o);
    run_free(&r);
}

static void test_errors(void) {
    const char *model = e2e;
    char args[2048], bad[512];
    write_file("bad.dq", "ok = x;\nbroken = f:r(y);\n", bad, sizeof bad);
    snprintf(args, sizeof args, "model '%s'", bad);
    expect_error(args, "bad.dq:2:10: f:r has one branch");
    snprintf(args, sizeof args, "model '%s' --set nothere=never", model);
    expect_error(args, "no node named `nothere`");
    snprintf(args, sizeof args, "model '%s' --set x='uniform(1,2)'", model);
    expect_error(args, "cannot compute `e2e`: no ΔQ for y; give it with --set");
    snprintf(args, sizeof args, "model '%s' --set x='gamma(2)' --set y=never", model);
    expect_error(args, "unknown distribution `gamma(2)`");
    snprintf(args, sizeof args, "model '%s' --set x='uniform(2,1)' --set y=never", model);
    expect_error(args, "uniform(A,B) needs two times 0 ≤ A ≤ B");
    snprintf(args, sizeof args, "model '%s' --set x='exponential(0)' --set y=never", model);
    expect_error(args, "exponential(RATE) needs a rate > 0");
    snprintf(args, sizeof args, "model '%s' --set x='wait(-1)' --set y=never", model);
    expect_error(args, "wait(T) needs one time T ≥ 0");
    snprintf(args, sizeof args, "model '%s' --set x=never --set x=never --set y=never", model);
    expect_error(args, "`x` is given twice");
    snprintf(args, sizeof args, "model '%s' --set x=never --set y=never --bin-width 0.003", model);
    expect_error(args, "--bin-width 0.003 is not 0.001 s times a power of two");
    snprintf(args, sizeof args, "model '%s' --set x=never --set y=never --bins 0", model);
    expect_error(args, "--bins needs a whole number from 1 to 4096");
    snprintf(args, sizeof args, "model '%s' --set x=never --set y=never --node zz", model);
    expect_error(args, "--node zz");
    snprintf(args, sizeof args, "model '%s' --set x='samples(%s/none.txt)' --set y=never", model,
             dir);
    expect_error(args, "cannot open samples file");
    write_file("bad_samples.txt", "0.1\nabc\n", bad, sizeof bad);
    snprintf(args, sizeof args, "model '%s' --set x='samples(%s)' --set y=never", model, bad);
    expect_error(args, "bad_samples.txt:2: expected a duration in seconds");
    snprintf(args, sizeof args, "model '%s' --frobnicate", model);
    expect_error(args, "unknown option `--frobnicate`");
    expect_error("model", "no model file given");
    snprintf(args, sizeof args, "model '%s/missing.dq' --set x=never", dir);
    expect_error(args, "cannot open");
    snprintf(args, sizeof args, "model '%s' --set novalue", model);
    expect_error(args, "--set needs NAME=DIST");
    expect_error("", "usage: dqctl");
    expect_error("frobnicate", "unknown command `frobnicate`");
}

static void test_help(void) {
    struct run r = run_dqctl("--help");
    CHECK_INT(r.status, 0);
    CHECK(r.out && strstr(r.out, "usage: dqctl") && strstr(r.out, "model"));
    run_free(&r);
    r = run_dqctl("model --help");
    CHECK_INT(r.status, 0);
    CHECK(r.out && strstr(r.out, "usage: dqctl model FILE.dq --set NAME=DIST") &&
          strstr(r.out, "samples(PATH)") && strstr(r.out, "--bin-width"));
    run_free(&r);
    r = run_dqctl("help model");
    CHECK_INT(r.status, 0);
    CHECK(r.out && strstr(r.out, "usage: dqctl model"));
    run_free(&r);
}

/* A temporary directory for the models and outputs, with the model most cases run. */
static int setup(void) {
    snprintf(dir, sizeof dir, "/tmp/test_dqctl_model.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    write_file("e2e.dq", "# docs/engine.md: U(1,2) ; U(1,2)\ne2e = x -> y;\n", e2e, sizeof e2e);
    return 0;
}

static void teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    dq_engine_cleanup();
}

static const struct check_case cases[] = {
    CHECK_CASE(oracle_json),   CHECK_CASE(human_output),  CHECK_CASE(stdin),
    CHECK_CASE(distributions), CHECK_CASE(default_grids), CHECK_CASE(oscilloscope_example),
    CHECK_CASE(errors),        CHECK_CASE(help),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), setup, teardown);
}
