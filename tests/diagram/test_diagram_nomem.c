/*
 * test_diagram_nomem.c: fails every allocation of the parser and the evaluator in turn
 * (jansson's test of the same name is the model).
 *
 * The executable is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, so every
 * allocation made by this file and by libdqengine goes through the wrappers below, which
 * fail the N-th one. For N = 0, 1, 2, … the parse (then the evaluation) must either
 * succeed, when fewer than N allocations were needed, or fail cleanly with DQ_ENOMEM,
 * leaving no output and no leak (the ASan build checks leaks).
 */
#include "diagram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static long fail_at = -1; /* index of the allocation to fail, −1 for none */
static long n_allocs;     /* allocations since the counter was reset */

static int should_fail(void) {
    return fail_at >= 0 && n_allocs++ == fail_at;
}

void *__wrap_malloc(size_t size) {
    return should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size) {
    return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
    return should_fail() ? NULL : __real_realloc(p, size);
}

static const char *const model = "# every construct, a forward reference and a reuse\n"
                                 "pipeline = worker_1 -> s:later -> worker_2;\n"
                                 "later = f:race(cache, db -> retry) -> a:join(x, y);\n"
                                 "pay = p:coin[0.25, 0.75](card, bank -> s:later);\n"
                                 "system = s:pipeline -> s:pay -> s:pipeline\n";

static void test_parse(void) {
    int succeeded = 0;
    for (long i = 0; i < 10000 && !succeeded; i++) {
        struct dq_diagram *d = (struct dq_diagram *)&d;
        struct dq_diagram_error err;
        fail_at = i;
        n_allocs = 0;
        int rc = dq_diagram_parse(model, strlen(model), &d, &err);
        int hit = n_allocs > i;
        fail_at = -1;
        if (!hit) {
            CHECK_INT(rc, DQ_OK);
            CHECK_INT(dq_diagram_find(d, "retry") >= 0, 1);
            succeeded = 1;
        } else {
            CHECK_MSG(rc == DQ_ENOMEM && d == NULL, "allocation %ld: rc %d", i, rc);
            CHECK_STR(err.text, "out of memory");
        }
        dq_diagram_destroy(rc == DQ_OK ? d : NULL);
    }
    CHECK(succeeded);
}

static void test_eval(void) {
    struct dq_diagram *d = NULL;
    CHECK_INT(dq_diagram_parse(model, strlen(model), &d, NULL), DQ_OK);
    if (!d) {
        return;
    }
    /* the inputs exist before the evaluation, as the daemon's window ΔQs do */
    struct dq *given[64] = {0};
    size_t n = dq_diagram_node_count(d);
    CHECK(n <= 64);
    for (size_t i = 0; i < n && i < 64; i++) {
        if (dq_diagram_node(d, (int)i)->kind == DQ_NODE_OUTCOME) {
            CHECK_INT(dq_uniform(0, 256, 0.001 * (double)i, 0.002 * (double)(i + 1), &given[i]),
                      DQ_OK);
        }
    }
    int succeeded = 0;
    for (long i = 0; i < 100000 && !succeeded; i++) {
        struct dq_eval *ev = NULL;
        fail_at = i;
        n_allocs = 0;
        int rc = dq_eval_create(d, 0, 256, &ev);
        for (size_t j = 0; rc == DQ_OK && j < n && j < 64; j++) {
            if (given[j]) {
                dq_eval_set_observed(ev, (int)j, given[j]);
            }
        }
        if (rc == DQ_OK) {
            rc = dq_eval_run(ev);
        }
        int hit = n_allocs > i;
        fail_at = -1;
        if (!hit) {
            CHECK_INT(rc, DQ_OK);
            CHECK(dq_eval_calculated(ev, dq_diagram_find(d, "system")) != NULL);
            succeeded = 1;
        } else {
            CHECK_MSG(rc == DQ_ENOMEM, "allocation %ld: rc %d (%s)", i, rc, dq_last_error());
            /* a failed run leaves no partial results behind */
            CHECK(ev == NULL || dq_eval_calculated(ev, dq_diagram_find(d, "system")) == NULL);
        }
        dq_eval_destroy(ev);
    }
    CHECK(succeeded);
    for (size_t i = 0; i < 64; i++) {
        dq_destroy(given[i]);
    }
    dq_diagram_destroy(d);
}

static const struct check_case cases[] = {
    CHECK_CASE(parse),
    CHECK_CASE(eval),
};

int main(int argc, char **argv) {
    return check_main_fixture(argc, argv, cases, CHECK_COUNT(cases), NULL, dq_engine_cleanup);
}
