/*
 * diagram_eval.c: the outcome-diagram evaluator (see diagram.h).
 *
 * At create time the node graph is put in topological order (children first, Kahn's
 * algorithm over the parent lists), so a run is one loop without recursion however deep
 * the references chain. Each named node's result is re-expressed at its own grid; a
 * sequence is computed with dq_sequence_cut to the node's horizon (delays only add: mass
 * past the horizon never comes back), so the working grid stays at the operands' width
 * however long the chain, and the lost mass at the horizon does not depend on how the
 * chain is spelled (one definition or several joined by s: references).
 *
 * Workload: the daemon runs this at every window close (1 s by default) on diagrams of
 * tens to a few thousand nodes; bench_diagram measures a 1,000-node run.
 */
#include "diagram.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dq_eval {
    const struct dq_diagram *d;
    size_t n;
    int *order;                 /* node indices, every child before its parents */
    int *grid_k;                /* per node */
    int *grid_n;                /* per node */
    const struct dq **observed; /* borrowed, per node */
    struct dq **calc;           /* owned results of the last run, per node */
    const struct dq **ops;      /* scratch: one operator's operands */
    size_t ops_cap;
};

void dq_eval_destroy(struct dq_eval *ev) {
    if (!ev) {
        return;
    }
    for (size_t i = 0; ev->calc && i < ev->n; i++) {
        dq_destroy(ev->calc[i]);
    }
    free(ev->order);
    free(ev->grid_k);
    free(ev->grid_n);
    free(ev->observed);
    free(ev->calc);
    free(ev->ops);
    free(ev);
}

/* Children-first order by Kahn's algorithm; the parser has ruled out cycles. */
static int topo_order(struct dq_eval *ev) {
    const struct dq_diagram *d = ev->d;
    size_t *pending = malloc((ev->n ? ev->n : 1) * sizeof *pending);
    if (!pending) {
        return DQ_ENOMEM;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < ev->n; i++) {
        pending[i] = dq_diagram_node(d, (int)i)->n_children;
        if (pending[i] == 0) {
            ev->order[tail++] = (int)i;
        }
    }
    while (head < tail) {
        const struct dq_diagram_node *nd = dq_diagram_node(d, ev->order[head++]);
        for (size_t j = 0; j < nd->n_parents; j++) {
            int p = nd->parents[j];
            if (--pending[p] == 0) {
                ev->order[tail++] = p;
            }
        }
    }
    free(pending);
    if (tail != ev->n) {
        return dq_fail(DQ_ECYCLE, "the diagram has a cycle (%zu of %zu nodes ordered)", tail,
                       ev->n);
    }
    return DQ_OK;
}

int dq_eval_create(const struct dq_diagram *d, int k, int n, struct dq_eval **out) {
    if (!d || !out) {
        return dq_fail(DQ_EINVAL, "dq_eval_create: NULL argument");
    }
    int rc = dq_check_grid(k, n);
    if (rc) {
        return rc;
    }
    struct dq_eval *ev = calloc(1, sizeof *ev);
    if (!ev) {
        return dq_fail(DQ_ENOMEM, "no memory for an evaluator");
    }
    ev->d = d;
    ev->n = dq_diagram_node_count(d);
    size_t m = ev->n ? ev->n : 1;
    size_t max_children = 1;
    for (size_t i = 0; i < ev->n; i++) {
        size_t c = dq_diagram_node(d, (int)i)->n_children;
        max_children = c > max_children ? c : max_children;
    }
    ev->order = malloc(m * sizeof *ev->order);
    ev->grid_k = malloc(m * sizeof *ev->grid_k);
    ev->grid_n = malloc(m * sizeof *ev->grid_n);
    ev->observed = calloc(m, sizeof *ev->observed);
    ev->calc = calloc(m, sizeof *ev->calc);
    ev->ops = malloc(max_children * sizeof *ev->ops);
    ev->ops_cap = max_children;
    if (!ev->order || !ev->grid_k || !ev->grid_n || !ev->observed || !ev->calc || !ev->ops) {
        dq_eval_destroy(ev);
        return dq_fail(DQ_ENOMEM, "no memory for an evaluator of %zu nodes", m);
    }
    for (size_t i = 0; i < ev->n; i++) {
        ev->grid_k[i] = k;
        ev->grid_n[i] = n;
    }
    rc = topo_order(ev);
    if (rc) {
        dq_eval_destroy(ev);
        return rc == DQ_ENOMEM ? dq_fail(rc, "no memory to order %zu nodes", m) : rc;
    }
    *out = ev;
    return DQ_OK;
}

static int check_node(const struct dq_eval *ev, int i) {
    if (!ev) {
        return dq_fail(DQ_EINVAL, "NULL evaluator");
    }
    if (i < 0 || (size_t)i >= ev->n) {
        return dq_fail(DQ_ERANGE, "node %d out of range [0, %zu)", i, ev->n);
    }
    return DQ_OK;
}

int dq_eval_set_grid(struct dq_eval *ev, int i, int k, int n) {
    int rc = check_node(ev, i);
    if (rc || (rc = dq_check_grid(k, n))) {
        return rc;
    }
    ev->grid_k[i] = k;
    ev->grid_n[i] = n;
    return DQ_OK;
}

int dq_eval_set_observed(struct dq_eval *ev, int i, const struct dq *obs) {
    int rc = check_node(ev, i);
    if (rc) {
        return rc;
    }
    if (dq_diagram_node(ev->d, i)->kind == DQ_NODE_REFERENCE) {
        return dq_fail(DQ_EINVAL, "node %d is a reference: set the ΔQ on its definition", i);
    }
    ev->observed[i] = obs;
    return DQ_OK;
}

int dq_eval_set_observed_by_name(struct dq_eval *ev, const char *name, const struct dq *obs) {
    if (!ev || !name) {
        return dq_fail(DQ_EINVAL, "NULL argument");
    }
    int i = dq_diagram_find(ev->d, name);
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "no node named `%s` in the diagram", name);
    }
    return dq_eval_set_observed(ev, i, obs);
}

void dq_eval_clear_observed(struct dq_eval *ev) {
    if (ev) {
        memset(ev->observed, 0, (ev->n ? ev->n : 1) * sizeof *ev->observed);
    }
}

const struct dq *dq_eval_observed(const struct dq_eval *ev, int i) {
    if (!ev || i < 0 || (size_t)i >= ev->n) {
        return NULL;
    }
    return ev->observed[i];
}

const struct dq *dq_eval_calculated(const struct dq_eval *ev, int i) {
    if (!ev || i < 0 || (size_t)i >= ev->n) {
        return NULL;
    }
    return ev->calc[i];
}

const struct dq *dq_eval_effective(const struct dq_eval *ev, int i) {
    if (!ev || i < 0 || (size_t)i >= ev->n) {
        return NULL;
    }
    if (ev->observed[i]) {
        return ev->observed[i];
    }
    const struct dq_diagram_node *nd = dq_diagram_node(ev->d, i);
    if (nd->kind == DQ_NODE_REFERENCE) {
        /* a reference's target is a definition or an outcome, never another reference */
        int t = nd->target;
        return ev->observed[t] ? ev->observed[t] : ev->calc[t];
    }
    return ev->calc[i];
}

/* Replaces *a by its re-expression at (k, n) unless it is on that grid already. */
static int reexpress_owned(struct dq **a, int k, int n) {
    if ((*a)->k == k && (*a)->n == n) {
        return DQ_OK;
    }
    struct dq *r = NULL;
    int rc = dq_reexpress(*a, k, n, &r);
    if (rc) {
        return rc;
    }
    dq_destroy(*a);
    *a = r;
    return DQ_OK;
}

/* Computes node i's calculated ΔQ into ev->calc[i] when every child has a ΔQ. */
static int eval_node(struct dq_eval *ev, int i) {
    const struct dq_diagram_node *nd = dq_diagram_node(ev->d, i);
    if (nd->kind == DQ_NODE_OUTCOME || nd->kind == DQ_NODE_REFERENCE) {
        return DQ_OK;
    }
    for (size_t c = 0; c < nd->n_children; c++) {
        ev->ops[c] = dq_eval_effective(ev, nd->children[c]);
        if (!ev->ops[c]) {
            return DQ_OK; /* an input is missing: no calculated ΔQ this run */
        }
    }
    /* An anonymous branch has no grid of its own: it works to its operator's. */
    int g = nd->name ? i : nd->parents[0];
    double horizon = dq_width_of(ev->grid_k[g]) * ev->grid_n[g];
    struct dq *res = NULL;
    int rc;
    switch (nd->kind) {
    case DQ_NODE_SEQUENCE:
        rc = dq_sequence_cut(ev->ops, nd->n_children, horizon, &res);
        break;
    case DQ_NODE_FIRST:
        rc = dq_first_to_finish(ev->ops, nd->n_children, &res);
        break;
    case DQ_NODE_ALL:
        rc = dq_all_to_finish(ev->ops, nd->n_children, &res);
        break;
    case DQ_NODE_CHOICE:
        rc = dq_choice(ev->ops, nd->weights, nd->n_children, &res);
        break;
    default:
        rc = dq_fail(DQ_EINVAL, "node %d has an unknown kind", i);
        break;
    }
    if (rc == DQ_OK && nd->name) {
        rc = reexpress_owned(&res, ev->grid_k[i], ev->grid_n[i]);
    }
    if (rc) {
        dq_destroy(res);
        /* dq_fail writes the buffer dq_last_error() returns: copy the detail first */
        char detail[256];
        snprintf(detail, sizeof detail, "%s", dq_last_error());
        return dq_fail(rc, "evaluating %s: %s", nd->name ? nd->name : "a branch", detail);
    }
    ev->calc[i] = res;
    return DQ_OK;
}

static void clear_results(struct dq_eval *ev) {
    for (size_t i = 0; i < ev->n; i++) {
        dq_destroy(ev->calc[i]);
        ev->calc[i] = NULL;
    }
}

int dq_eval_run(struct dq_eval *ev) {
    if (!ev) {
        return dq_fail(DQ_EINVAL, "NULL evaluator");
    }
    clear_results(ev);
    for (size_t j = 0; j < ev->n; j++) {
        int rc = eval_node(ev, ev->order[j]);
        if (rc) {
            clear_results(ev);
            return rc;
        }
    }
    return DQ_OK;
}

size_t dq_eval_missing(const struct dq_eval *ev, int i, int *out, size_t cap) {
    if (!ev || i < 0 || (size_t)i >= ev->n || dq_eval_effective(ev, i)) {
        return 0;
    }
    unsigned char *seen = calloc(ev->n, 1);
    int *stack = malloc(ev->n * sizeof *stack);
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return 0;
    }
    /* Mark every node whose missing ΔQ blocks i, walking down only through nodes that
     * have no effective ΔQ themselves. */
    size_t top = 0;
    stack[top++] = i;
    seen[i] = 1;
    while (top > 0) {
        const struct dq_diagram_node *nd = dq_diagram_node(ev->d, stack[--top]);
        for (size_t c = 0; c < nd->n_children; c++) {
            int ch = nd->children[c];
            if (!seen[ch] && !dq_eval_effective(ev, ch)) {
                seen[ch] = 1;
                stack[top++] = ch;
            }
        }
    }
    size_t count = 0;
    for (size_t j = 0; j < ev->n; j++) {
        if (seen[j] && dq_diagram_node(ev->d, (int)j)->kind == DQ_NODE_OUTCOME) {
            if (count < cap) {
                out[count] = (int)j;
            }
            count++;
        }
    }
    free(seen);
    free(stack);
    return count;
}
