/*
 * probes_range.c: auto-ranging (see core.h, probes_range_decide): what a closed
 * window says about the grid (probes_range_decide, a pure decision) and moving a probe and
 * its ring to another grid (probes_set_range).
 */
#include "core_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* The window's instances that say something about the delay, and where they are. */
static void range_counts(const struct probe *p, const struct probe_window *w, double *tail,
                         double *head, uint64_t *timed) {
    uint64_t total = w->ok + w->fa + w->to + w->out;
    *timed = w->ok + w->to + w->out;
    *tail = *head = 0.0;
    if (*timed == 0 || !w->observed || w->observed->n != p->n) {
        return;
    }
    const struct dq *q = w->observed;
    double in_tail = 0.0, in_head = 0.0;
    int from = p->n - p->n / 8;
    for (int i = 0; i < q->n; i++) {
        double c = q->pdf[i] * (double)total;
        in_tail += i >= from ? c : 0.0;
        in_head += i < 8 ? c : 0.0;
    }
    *tail = (in_tail + (double)(w->to + w->out)) / (double)*timed;
    *head = in_head / (double)*timed;
}

void probes_range_decide(const struct probe *p, const struct probe_window *w,
                         struct probes_range *out) {
    memset(out, 0, sizeof *out);
    out->k = p->k;
    out->dmax_ms = ldexp(1.0, p->k) * p->n;
    if (!w) {
        return;
    }
    range_counts(p, w, &out->tail, &out->head, &out->timed);
    out->slowest_ms = w->ok > 0 ? w->max * 1e3 : 0.0;
    if (out->timed < PROBES_RANGE_MIN_INSTANCES) {
        return;
    }
    double dmax = out->dmax_ms;
    /* the grid may not go below the QTA's last point: it must be observable */
    double floor_ms = p->range_min_ms;
    if (p->has_qta && p->qta.t[p->qta.n - 1] * 1e3 > floor_ms) {
        floor_ms = p->qta.t[p->qta.n - 1] * 1e3;
    }
    int k = p->k;
    if (out->tail > PROBES_RANGE_TAIL) {
        /* wider: the tail is near dMax, or past it (its delays unknown: two steps) */
        int steps = (double)(w->to + w->out) > 0.25 * (double)out->timed ? 2 : 1;
        while (steps-- > 0 && k < DQ_MAX_K &&
               ldexp(1.0, k + 1) * p->n <= p->range_max_ms * (1 + 1e-12)) {
            k++;
        }
        out->capped = k == p->k ? "max" : NULL;
        out->reason = k != p->k ? PROBES_RANGE_TAIL_NEAR_DMAX : PROBES_RANGE_KEEP;
    } else if (w->to + w->out == 0 && w->ok > 0 &&
               (out->slowest_ms < 0.375 * dmax ||
                (out->head > 0.10 && out->slowest_ms < 0.4375 * dmax))) {
        /* finer: as many halvings as keep the slowest instance within 3/4 of dMax */
        out->wants_finer = 1;
        if (p->range_shrink + 1 >= PROBES_RANGE_SHRINK_WINDOWS) {
            while (k > DQ_MIN_K && out->slowest_ms < 0.75 * ldexp(1.0, k - 1) * p->n &&
                   ldexp(1.0, k - 1) * p->n >= floor_ms * (1 - 1e-12)) {
                k--;
            }
            if (k == p->k) {
                /* the head rule alone (slowest past 3/8): one step, if the floor allows */
                if (out->slowest_ms < 0.4375 * dmax && k > DQ_MIN_K &&
                    ldexp(1.0, k - 1) * p->n >= floor_ms * (1 - 1e-12)) {
                    k--;
                }
            }
            if (k == p->k) {
                out->capped = floor_ms > p->range_min_ms ? "qta" : "min";
            }
            out->reason = k == p->k                        ? PROBES_RANGE_KEEP
                          : out->slowest_ms < 0.375 * dmax ? PROBES_RANGE_TAIL_FAR
                                                           : PROBES_RANGE_HEAD;
        }
    }
    out->k = k;
    out->dmax_ms = ldexp(1.0, k) * p->n;
}

int probes_set_range(struct probe_table *t, struct probe *p, int k) {
    (void)t;
    int rc = dq_check_grid(k, p->n);
    if (rc) {
        return rc;
    }
    if (k == p->k) {
        return DQ_OK;
    }
    /* the ring on the new grid first (all made before any is replaced) */
    int len = p->ring_len;
    struct dq **fresh = calloc((size_t)(2 * (len ? len : 1)), sizeof *fresh);
    if (!fresh) {
        return dq_fail(DQ_ENOMEM, "no memory to re-express probe %s's ring", p->name);
    }
    for (int b = 0; b < len && rc == DQ_OK; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        struct dq *src[2] = {w->observed, w->calculated};
        for (int j = 0; j < 2 && rc == DQ_OK; j++) {
            if (src[j] && (rc = dq_reexpress(src[j], k, p->n, &fresh[2 * b + j])) == DQ_OK) {
                fresh[2 * b + j]->n_ok = src[j]->n_ok;
                fresh[2 * b + j]->n_fa = src[j]->n_fa;
                fresh[2 * b + j]->n_to = src[j]->n_to;
                fresh[2 * b + j]->n_out = src[j]->n_out;
            }
        }
    }
    if (rc) {
        for (int i = 0; i < 2 * len; i++) {
            dq_destroy(fresh[i]);
        }
        free(fresh);
        return rc;
    }
    for (int b = 0; b < len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (w->observed) {
            dq_destroy(w->observed);
            w->observed = fresh[2 * b];
        }
        if (w->calculated) {
            dq_destroy(w->calculated);
            w->calculated = fresh[2 * b + 1];
        }
    }
    free(fresh);
    p->k = k;
    p->dmax_ms = ldexp(1.0, k) * p->n;
    p->inv_width_ns = 1.0 / (ldexp(1.0, k) * 1e6);
    return DQ_OK;
}
