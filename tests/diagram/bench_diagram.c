/*
 * bench_diagram.c: time to parse and evaluate a 1,000-node outcome diagram at N = 1024.
 *
 * The diagram is what the daemon would hold for a mid-sized service: 90 leaf-level
 * definitions, each a sequence with a first-to-finish (one branch a two-step chain) and
 * a probabilistic choice, grouped ten at a time into 9 group definitions chained by the
 * system definition through s: references. Every outcome is given a uniform ΔQ; each
 * level has its own grid (finer below, coarser above, 1024 bins everywhere) so the run
 * also pays for re-expression between widths, as the daemon's per-probe grids do.
 *
 * Prints the node count and the median and minimum over repeated runs of: parse,
 * evaluator create, evaluate, and parse + create + evaluate together. Run by
 * tools/run-bench (make bench); figures are recorded in docs/PERFORMANCE.md.
 */
#include "diagram.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_LEAF_DEFS 90
#define GROUP_SIZE 10
#define BINS 1024
#define REPEATS 21

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A growing text buffer for the generated diagram. */
struct text {
    char *buf;
    size_t used;
    size_t cap;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
add(struct text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->used, t->cap - t->used, fmt, ap);
        va_end(ap);
        if (n < 0) {
            exit(1);
        }
        if ((size_t)n < t->cap - t->used) {
            t->used += (size_t)n;
            return;
        }
        t->cap *= 2;
        t->buf = realloc(t->buf, t->cap);
        if (!t->buf) {
            exit(1);
        }
    }
}

static char *make_text(size_t *len) {
    struct text t = {malloc(4096), 0, 4096};
    if (!t.buf) {
        exit(1);
    }
    for (int i = 0; i < N_LEAF_DEFS; i++) {
        add(&t, "d%d = oa%d -> f:r%d(ob%d, oc%d -> od%d) -> p:c%d[0.9, 0.1](oe%d, of%d);\n", i, i,
            i, i, i, i, i, i, i);
    }
    for (int g = 0; g < N_LEAF_DEFS / GROUP_SIZE; g++) {
        add(&t, "g%d = s:d%d", g, g * GROUP_SIZE);
        for (int j = 1; j < GROUP_SIZE; j++) {
            add(&t, " -> s:d%d", g * GROUP_SIZE + j);
        }
        add(&t, ";\n");
    }
    add(&t, "system = s:g0");
    for (int g = 1; g < N_LEAF_DEFS / GROUP_SIZE; g++) {
        add(&t, " -> s:g%d", g);
    }
    add(&t, ";\n");
    *len = t.used;
    return t.buf;
}

/* Grid exponent by level: outcomes/operators k = −4 (62.5 µs), leaf definitions −3,
 * groups −1, system 0 (1 ms, horizon 1.024 s). */
static int level_k(const struct dq_diagram *d, int i) {
    const struct dq_diagram_node *nd = dq_diagram_node(d, i);
    if (!nd->is_definition) {
        return -4;
    }
    if (nd->name[0] == 'd') {
        return -3;
    }
    return nd->name[0] == 'g' ? -1 : 0;
}

int main(void) {
    size_t len = 0;
    char *text = make_text(&len);
    double t_parse[REPEATS], t_create[REPEATS], t_eval[REPEATS], t_total[REPEATS];
    size_t n_nodes = 0;
    double median_p50 = 0.0;
    struct dq **leaves = NULL;
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now_ms();
        struct dq_diagram *d = NULL;
        struct dq_diagram_error err;
        if (dq_diagram_parse(text, len, &d, &err) != DQ_OK) {
            fprintf(stderr, "bench_diagram: %d:%d: %s\n", err.line, err.column, err.text);
            return 1;
        }
        double t1 = now_ms();
        n_nodes = dq_diagram_node_count(d);
        struct dq_eval *ev = NULL;
        if (dq_eval_create(d, 0, BINS, &ev) != DQ_OK) {
            fprintf(stderr, "bench_diagram: %s\n", dq_last_error());
            return 1;
        }
        for (size_t i = 0; i < n_nodes; i++) {
            dq_eval_set_grid(ev, (int)i, level_k(d, (int)i), BINS);
        }
        if (!leaves) {
            /* the window's observed ΔQs exist before the evaluation: built once */
            leaves = calloc(n_nodes, sizeof *leaves);
            for (size_t i = 0; leaves && i < n_nodes; i++) {
                if (dq_diagram_node(d, (int)i)->kind == DQ_NODE_OUTCOME) {
                    double lo = 0.0005 + 0.0001 * (double)(i % 7);
                    dq_uniform(-4, BINS, lo, lo + 0.002, &leaves[i]);
                }
            }
        }
        for (size_t i = 0; leaves && i < n_nodes; i++) {
            if (leaves[i]) {
                dq_eval_set_observed(ev, (int)i, leaves[i]);
            }
        }
        double t2 = now_ms();
        if (dq_eval_run(ev) != DQ_OK) {
            fprintf(stderr, "bench_diagram: %s\n", dq_last_error());
            return 1;
        }
        double t3 = now_ms();
        const struct dq *sys = dq_eval_calculated(ev, dq_diagram_find(d, "system"));
        if (!sys || dq_quantile(sys, 0.5, &median_p50) != DQ_OK) {
            fprintf(stderr, "bench_diagram: the system has no calculated ΔQ\n");
            return 1;
        }
        t_parse[r] = t1 - t0;
        t_create[r] = t2 - t1;
        t_eval[r] = t3 - t2;
        t_total[r] = t3 - t0;
        dq_eval_destroy(ev);
        dq_diagram_destroy(d);
    }
    qsort(t_parse, REPEATS, sizeof(double), cmp_double);
    qsort(t_create, REPEATS, sizeof(double), cmp_double);
    qsort(t_eval, REPEATS, sizeof(double), cmp_double);
    qsort(t_total, REPEATS, sizeof(double), cmp_double);
    printf("bench_diagram: %zu nodes (%zu bytes of .dq), N = %d bins per node, %d runs\n", n_nodes,
           len, BINS, REPEATS);
    printf("  parse                     median %8.3f ms   min %8.3f ms\n", t_parse[REPEATS / 2],
           t_parse[0]);
    printf("  evaluator create + inputs median %8.3f ms   min %8.3f ms\n", t_create[REPEATS / 2],
           t_create[0]);
    printf("  evaluate                  median %8.3f ms   min %8.3f ms\n", t_eval[REPEATS / 2],
           t_eval[0]);
    printf("  parse + evaluate          median %8.3f ms   min %8.3f ms\n", t_total[REPEATS / 2],
           t_total[0]);
    printf("  (system median delay %.4f s)\n", median_p50);
    for (size_t i = 0; leaves && i < n_nodes; i++) {
        dq_destroy(leaves[i]);
    }
    free(leaves);
    free(text);
    dq_engine_cleanup();
    return 0;
}
