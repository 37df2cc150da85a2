/*
 * fuzz_diagram.c: libFuzzer target for the outcome-diagram parser and evaluator.
 *
 * Any byte string must either parse or fail with a positioned message, never crash,
 * leak or read out of bounds. When it parses, its warnings are checked (positioned, in
 * text order) and the model is walked (every child and
 * parent index must be in range and the parent lists must mirror the child lists) and,
 * for small diagrams, evaluated on a tiny grid with every outcome a wait, so the
 * evaluator's handling of shared nodes, references and choices is fuzzed too.
 */
#include "diagram.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_model(const struct dq_diagram *d) {
    size_t n = dq_diagram_node_count(d);
    for (size_t i = 0; i < n; i++) {
        const struct dq_diagram_node *nd = dq_diagram_node(d, (int)i);
        for (size_t c = 0; c < nd->n_children; c++) {
            int ch = nd->children[c];
            if (ch < 0 || (size_t)ch >= n) {
                abort();
            }
            const struct dq_diagram_node *cn = dq_diagram_node(d, ch);
            size_t back = 0;
            for (size_t j = 0; j < cn->n_parents; j++) {
                back += cn->parents[j] == (int)i;
            }
            if (back == 0) {
                abort();
            }
        }
        if (nd->name && dq_diagram_find(d, nd->name) != (int)i) {
            abort();
        }
        int kids[8];
        (void)dq_diagram_probe_children(d, (int)i, kids, 8);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct dq_diagram *d = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse((const char *)data, size, &d, &err);
    if (rc != DQ_OK) {
        if (d != NULL || err.text[0] == '\0' || memchr(err.text, '\0', sizeof err.text) == NULL) {
            abort();
        }
        return 0;
    }
    check_model(d);
    /* warnings: positioned, terminated, in text order, counted */
    size_t nw = dq_diagram_warning_count(d);
    if (nw > DQ_DIAGRAM_MAX_WARNINGS || dq_diagram_warning_total(d) < nw ||
        dq_diagram_warning(d, nw) != NULL) {
        abort();
    }
    for (size_t j = 0; j < nw; j++) {
        const struct dq_diagram_error *w = dq_diagram_warning(d, j);
        const struct dq_diagram_error *v = j ? dq_diagram_warning(d, j - 1) : NULL;
        if (w->line < 1 || w->text[0] == '\0' || memchr(w->text, '\0', sizeof w->text) == NULL ||
            (v && (v->line > w->line || (v->line == w->line && v->column > w->column)))) {
            abort();
        }
    }
    size_t n = dq_diagram_node_count(d);
    if (n > 0 && n <= 200) {
        struct dq_eval *ev = NULL;
        struct dq **given = calloc(n, sizeof *given);
        if (given && dq_eval_create(d, 0, 16, &ev) == DQ_OK) {
            for (size_t i = 0; i < n; i++) {
                const struct dq_diagram_node *nd = dq_diagram_node(d, (int)i);
                if (nd->kind == DQ_NODE_OUTCOME &&
                    dq_wait(0, 16, 0.001 * (double)(i % 5), &given[i]) == DQ_OK) {
                    dq_eval_set_observed(ev, (int)i, given[i]);
                }
            }
            if (dq_eval_run(ev) == DQ_OK) {
                for (size_t j = 0; j < dq_diagram_root_count(d); j++) {
                    if (dq_eval_calculated(ev, dq_diagram_root(d, j)) == NULL) {
                        abort(); /* every outcome has a ΔQ, so every root must have one */
                    }
                }
            }
        }
        dq_eval_destroy(ev);
        for (size_t i = 0; given && i < n; i++) {
            dq_destroy(given[i]);
        }
        free(given);
    }
    dq_diagram_destroy(d);
    return 0;
}
