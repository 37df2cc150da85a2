/*
 * culprits.c: every culprit. After a localized verdict, how much of the change at the
 * investigation's node does the culprit explain? The diagram answers (a what-if): the
 * node's ΔQ calculated from its parts' observed ΔQs, once as they are and once with the
 * culprits put back to their references (their baselines from before the problem, or,
 * without one, the runner-up sibling they were judged against). When a material part of
 * the node's change remains (a tenth of it, and beyond SEARCH_Z standard errors; or mass
 * still later than the baseline with the culprits put back: shape_remains), the
 * search goes on from the node, each child weighed by its own mean less what the culprits
 * found put into it (their ΔQs as the what-if has them); the verdict names every culprit
 * with the share of the change it explains (its Shapley value over the what-ifs), the
 * shares scaled to add up to at most what all of them explain together.
 *
 * Everything here only decides: it changes the round's next state and adds effects.
 */
#include "adapt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

#define UNEXPLAINED_SHARE 0.10 /* a remainder this share of the change goes on searching */
/* … or, with the culprits put back, mass still later than the baseline by this share of
 * its median on average: a culprit put back to a sibling takes the sibling's spread, not
 * its own, which leaves 10–12 % of the median moved in two_culprits*.case with nothing
 * more to find; a rare branch's step leaves 38–43 % (the matrix's rare/two) */
#define REST_SHAPE_TIME 0.25

/* The diagram's what-if over windows [from, pl->upto). */
struct what_if {
    const struct dq_diagram *g;
    struct dq_eval *ev;
    size_t nn;
    struct dq **obs;      /* per node: its observed ΔQ over the range (owned), or NULL */
    unsigned char *above; /* per node: above a culprit (its calculated ΔQ is used) */
    struct dq *ref[ADAPT_MAX_CULPRITS]; /* the culprits' references (owned) */
    int cnode[ADAPT_MAX_CULPRITS];
    int n;
};

static void wi_release(struct what_if *w) {
    for (size_t i = 0; w->obs && i < w->nn; i++) {
        dq_destroy(w->obs[i]);
    }
    for (int k = 0; k < w->n; k++) {
        dq_destroy(w->ref[k]);
    }
    free(w->obs);
    free(w->above);
    dq_eval_destroy(w->ev);
    memset(w, 0, sizeof *w);
}

/* The reference ΔQ of culprit k: its baseline's, else its reference sibling's observed one. */
static struct dq *reference(struct plan *pl, const struct investigation *inv, int k,
                            const struct what_if *w, int64_t from) {
    struct node_stats b;
    adapt__baseline(pl, adapt__probe(pl->a, inv->culprits[k]), from, &b, NULL, NULL);
    struct dq *ref = NULL;
    if (b.s.present && b.s.windows >= SEARCH_BASELINE_WINDOWS && b.obs) {
        ref = b.obs;
        b.obs = NULL;
    } else if (inv->culprit_ref[k][0]) {
        int r = dq_diagram_find(w->g, inv->culprit_ref[k]);
        if (r >= 0 && w->obs[r]) {
            dq_clone(w->obs[r], &ref);
        }
    }
    adapt__node_stats_release(&b);
    return ref;
}

/* Sets up the what-if of inv's culprits over [from, pl->upto); DQ_ESTATE when it cannot be
 * told (no diagram, a culprit without a reference), DQ_ENOMEM. */
static int wi_init(struct plan *pl, const struct investigation *inv, int64_t from,
                   struct what_if *w) {
    memset(w, 0, sizeof *w);
    w->g = core_diagram(pl->a->env.core);
    w->nn = w->g ? dq_diagram_node_count(w->g) : 0;
    w->ev = w->g ? adapt__what_if_eval(pl->a, w->g) : NULL;
    w->obs = calloc(w->nn + 1, sizeof *w->obs);
    w->above = calloc(w->nn + 1, 1);
    if (!w->ev || !w->obs || !w->above) {
        wi_release(w);
        return w->g ? dq_fail(DQ_ENOMEM, "no memory for a what-if") : DQ_ESTATE;
    }
    for (size_t i = 0; i < w->nn; i++) {
        const struct dq_diagram_node *nd = dq_diagram_node(w->g, (int)i);
        const struct probe *p = nd && nd->name ? adapt__probe(pl->a, nd->name) : NULL;
        for (int k = 0; k < inv->n_culprits && nd && nd->name; k++) {
            w->above[i] |= strcmp(nd->name, inv->culprits[k]) != 0 &&
                           adapt__below(w->g, (int)i, inv->culprits[k]);
        }
        if (p && p->enabled) {
            struct node_stats ns;
            adapt__gather(p, from, pl->upto, &ns);
            w->obs[i] = ns.obs;
            ns.obs = NULL;
            adapt__node_stats_release(&ns);
        }
    }
    for (int k = 0; k < inv->n_culprits; k++) {
        w->cnode[k] = dq_diagram_find(w->g, inv->culprits[k]);
        w->ref[k] = reference(pl, inv, k, w, from);
        w->n = k + 1;
        if (w->cnode[k] < 0 || !w->ref[k] || !w->obs[w->cnode[k]]) {
            wi_release(w);
            return DQ_ESTATE;
        }
    }
    return DQ_OK;
}

/* Runs the diagram with the culprits in `mask` (bit k) put back to their references; means
 * (per node, NAN when unknown) and lost fractions into mean[] and lost[]; keep (NULL: none):
 * per node, a copy of its ΔQ in the what-if where keep[i] is set to NULL on entry (left
 * NULL when unknown). */
static int wi_run_keep(struct what_if *w, unsigned mask, double *mean, double *lost,
                       struct dq **keep) {
    dq_eval_clear_observed(w->ev);
    for (size_t i = 0; i < w->nn; i++) {
        if (w->obs[i] && !w->above[i]) {
            dq_eval_set_observed(w->ev, (int)i, w->obs[i]);
        }
    }
    for (int k = 0; k < w->n; k++) {
        if (mask & (1u << k)) {
            dq_eval_set_observed(w->ev, w->cnode[k], w->ref[k]);
        }
    }
    int rc = dq_eval_run(w->ev);
    for (size_t i = 0; i < w->nn; i++) {
        const struct dq *d = rc == DQ_OK ? dq_eval_effective(w->ev, (int)i) : NULL;
        struct dq_moments m;
        mean[i] = d && dq_moments(d, &m) == DQ_OK ? m.mean : NAN;
        lost[i] = d ? dq_lost(d) : NAN;
        if (keep && d && w->above[i] && dq_clone(d, &keep[i]) != DQ_OK) {
            keep[i] = NULL;
        }
    }
    dq_eval_clear_observed(w->ev);
    return rc;
}

static int wi_run(struct what_if *w, unsigned mask, double *mean, double *lost) {
    return wi_run_keep(w, mask, mean, lost, NULL);
}

/* The change at inv's node over [from, upto) against its baseline (mean, or lost fraction
 * for a lost problem) and its standard error as independent instances; NAN when it has no
 * baseline. */
static double node_change(struct plan *pl, const struct investigation *inv, int64_t from,
                          double *se) {
    const struct probe *p = adapt__probe(pl->a, inv->node);
    struct node_stats r, b;
    adapt__gather(p, from, pl->upto, &r);
    adapt__baseline(pl, p, from, &b, NULL, NULL);
    double d = NAN;
    *se = NAN;
    if (r.s.present && b.s.present && b.s.windows >= SEARCH_BASELINE_WINDOWS) {
        if (inv->problem == SEARCH_LOST) {
            d = search_stats_lost(&r.s) - search_stats_lost(&b.s);
            *se = hypot(search_stats_lost_se(&r.s), search_stats_lost_se(&b.s));
        } else if (r.s.n_ok > 1 && b.s.n_ok > 1) {
            /* the instances' own standard error, not the windows' (batch means): whether to
             * look for another culprit is a question the continued search answers with its
             * own intervals; this only keeps it from chasing a remainder within the noise */
            d = r.s.mean - b.s.mean;
            *se =
                hypot(sqrt(r.s.variance / (double)r.s.n_ok), sqrt(b.s.variance / (double)b.s.n_ok));
        }
    }
    adapt__node_stats_release(&r);
    adapt__node_stats_release(&b);
    return d;
}

/* What the culprits explain of the change at inv's node: together (*all) and each
 * (share[k]), as fractions of the change `change` (clipped to [0, 1]). Each culprit's share
 * is its Shapley value over the what-ifs of every subset of the culprits (what putting it
 * back adds, averaged over the orders in which they could be put back): under an all- or
 * first-to-finish node one culprit alone explains little while another still holds the
 * maximum, and the shares of a sequence are what each alone explains. Scaled so that they
 * add up to at most *all. node_as_is and node_back (both NULL: not wanted): the node's ΔQ
 * as the what-if calculates it with no culprit put back and with every one; node_prev (NULL:
 * not wanted; only with the other two, and two culprits or more): with every one but the
 * newest (the caller's to destroy; NULL when unknown). DQ_ESTATE when it cannot be told. */
static int explained(struct plan *pl, const struct investigation *inv, int64_t from, double change,
                     double *all, double *share, struct dq **node_as_is, struct dq **node_back,
                     struct dq **node_prev) {
    struct what_if w;
    int rc = wi_init(pl, inv, from, &w);
    if (rc) {
        return rc;
    }
    int root = dq_diagram_find(w.g, inv->node);
    double *mean = calloc(2 * (w.nn + 1), sizeof *mean);
    if (!mean || root < 0) {
        free(mean);
        wi_release(&w);
        return root < 0 ? DQ_ESTATE : dq_fail(DQ_ENOMEM, "no memory for a what-if");
    }
    double *lost = mean + w.nn + 1;
    int lostp = inv->problem == SEARCH_LOST;
    unsigned every = (1u << w.n) - 1;
    double v[1u << ADAPT_MAX_CULPRITS]; /* v[mask]: the change the culprits in mask explain */
    /* the node's ΔQ as calculated with no culprit put back, with every one, and with every
     * one but the newest */
    int want_prev = node_prev && w.n > 1;
    unsigned prev = want_prev ? every ^ (1u << (w.n - 1)) : 0;
    size_t stride = w.nn + 1;
    struct dq **keep = node_back && node_as_is ? calloc(3 * stride, sizeof *keep) : NULL;
    for (unsigned mask = 0; rc == DQ_OK && mask <= every; mask++) {
        struct dq **k = !keep                       ? NULL
                        : mask == 0                 ? keep
                        : mask == every             ? keep + stride
                        : want_prev && mask == prev ? keep + 2 * stride
                                                    : NULL;
        rc = wi_run_keep(&w, mask, mean, lost, k);
        v[mask] = lostp ? lost[root] : mean[root];
    }
    for (size_t i = 0; keep && i < 3 * stride; i++) {
        if (i % stride == (size_t)root) {
            struct dq **out = i < stride ? node_as_is : i < 2 * stride ? node_back : node_prev;
            if (out) {
                *out = keep[i];
                continue;
            }
        }
        dq_destroy(keep[i]);
    }
    free(keep);
    for (unsigned mask = 1; rc == DQ_OK && mask <= every; mask++) {
        v[mask] = v[0] - v[mask]; /* v[0]: the what-if with none put back */
    }
    v[0] = 0.0;
    *all = rc == DQ_OK && isfinite(v[every]) ? fmin(fmax(v[every] / change, 0.0), 1.0) : NAN;
    /* |S|! (n − |S| − 1)! / n! for |S| = 0 … n − 1 */
    double fact[ADAPT_MAX_CULPRITS + 1] = {1.0};
    for (int k = 1; k <= w.n; k++) {
        fact[k] = fact[k - 1] * k;
    }
    double sum = 0.0;
    for (int k = 0; k < w.n; k++) {
        double phi = 0.0;
        for (unsigned mask = 0; rc == DQ_OK && mask <= every; mask++) {
            if (!(mask & (1u << k))) {
                int size = __builtin_popcount(mask);
                phi +=
                    fact[size] * fact[w.n - size - 1] / fact[w.n] * (v[mask | (1u << k)] - v[mask]);
            }
        }
        share[k] = rc == DQ_OK && isfinite(phi) ? fmin(fmax(phi / change, 0.0), 1.0) : NAN;
        sum += isfinite(share[k]) ? share[k] : 0.0;
    }
    for (int k = 0; k < w.n && isfinite(*all) && sum > *all && sum > 0; k++) {
        share[k] *= *all / sum; /* clipped shares: no more than all of them explain */
    }
    free(mean);
    wi_release(&w);
    return rc == DQ_OK && isfinite(*all) ? DQ_OK : DQ_ESTATE;
}

/* Whether inv's node, with its culprits put back (back: the what-if's ΔQ), still has mass
 * later than its baseline from before the problem: significantly (one-sided KS at
 * SEARCH_Z), materially (the shape test's rules, dq_search.h) and by REST_SHAPE_TIME of the
 * baseline's median on average. A step in a rarely taken branch moves a sixth of the mass
 * by much and the mean by little, and a culprit judged against a sibling that is faster by
 * nature seems to explain more of the mean than it does. The what-if is calculated: the
 * baseline is moved later by as much as the calculation puts the node later than observed
 * now (as_is against the observed mean; a convolution of binned parts lags by about half a
 * bin per part), and a node's own time, missing from it, can only make it earlier. */
static int shape_remains(struct plan *pl, const struct investigation *inv, int64_t from,
                         const struct dq *as_is, const struct dq *back, struct search_shift *sh) {
    const struct probe *p = adapt__probe(pl->a, inv->node);
    struct node_stats r, b;
    adapt__gather(p, from, pl->upto, &r);
    adapt__baseline(pl, p, from, &b, NULL, NULL);
    double nr = search_stats_effective_n(&r.s), nb = search_stats_effective_n(&b.s);
    /* how much later the calculation puts the node now than it was observed */
    struct dq_moments m;
    double model_lag = as_is && dq_moments(as_is, &m) == DQ_OK ? m.mean - r.s.mean : NAN;
    int yes = isfinite(model_lag) && back && r.s.present && b.s.present &&
              b.s.windows >= SEARCH_BASELINE_WINDOWS && nr > 0 && nb > 0 &&
              search_shift_lagged(back, b.obs, fmax(model_lag, 0.0), nr, nb, sh) == DQ_OK &&
              sh->z >= SEARCH_Z && search_shift_material(sh, back->width) &&
              sh->moved >= REST_SHAPE_TIME * (isnan(sh->median) ? 0.0 : sh->median);
    adapt__node_stats_release(&r);
    adapt__node_stats_release(&b);
    return yes;
}

/* "fb (62 % of root's change), sb (35 %)" into ev ("culprits") and buf. */
static void name_culprits(const struct investigation *inv, const double *share, double all,
                          double change, json_t *ev, char *buf, size_t cap) {
    json_t *list = json_array();
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < inv->n_culprits; k++) {
        json_t *o = json_pack("{s:s,s:s}", "probe", inv->culprits[k], "reference",
                              inv->culprit_ref[k][0] ? inv->culprit_ref[k] : "its baseline");
        if (isfinite(share[k])) {
            /* rounded down to the 6 digits the log keeps: shares that add up to at most
             * what the culprits explain still do once written */
            json_object_set_new(o, "share", json_real(floor(share[k] * 1e6) / 1e6));
        }
        json_array_append_new(list, o);
        int n = isfinite(share[k])
                    ? snprintf(buf + len, cap - len, "%s%s (%.0f %%)", k ? ", " : "",
                               inv->culprits[k], 100.0 * share[k])
                    : snprintf(buf + len, cap - len, "%s%s", k ? ", " : "", inv->culprits[k]);
        len = n > 0 && len + (size_t)n < cap ? len + (size_t)n : len;
    }
    json_object_set_new(ev, "culprits", list);
    if (isfinite(all)) { /* unknown: left out, not 0 */
        json_object_set_new(ev, "explained", json_real(all));
    }
    if (isfinite(change)) {
        json_object_set_new(ev, "change", json_real(change));
    }
}

/* reason without a leading "localized at CULPRIT: " (a sentence around it names the
 * culprit already). */
static const char *strip_localized(const char *reason, const char *culprit) {
    static const char head[] = "localized at ";
    size_t n = sizeof head - 1, c = strlen(culprit);
    if (strncmp(reason, head, n) == 0 && strncmp(reason + n, culprit, c) == 0 &&
        strncmp(reason + n + c, ": ", 2) == 0) {
        return reason + n + c + 2;
    }
    return reason;
}

/*
 * Whether a culprit found after the first (share: its share of the change) is one: it
 * explains a tenth of the change or more (UNEXPLAINED_SHARE: a smaller remainder is not
 * searched for either), or, where the search went on because the node's mass was still
 * later than its baseline with the culprits before it put back (prev), putting it back
 * too ends that (back). Bringing a remainder just over a tenth under it is no evidence:
 * with the culprit before it put back to a sibling faster by nature, a part slow by nature
 * can become the one that finishes last, and the what-if then gives it more of the change
 * than its share (later_culprit_not_material.case: rules, 5 %, took the part explained
 * from 81 % to 92 %). A search that goes on for the rest always ends at some leaf, the
 * one that holds most of what is left of the node's time; on a busy machine, where every
 * part's latency swells a little after the baseline, that leaf can be a part slow by
 * nature that changed in nothing (the tree scenario once named `rules (4 %)` beside its
 * one fault).
 * *still_late: whether the node's mass is still late with every culprit put back (back),
 * when that was weighed (sh: its shift), else -1.
 */
static int material(struct plan *pl, const struct investigation *inv, int64_t from, double change,
                    double share, int by_mean, const struct dq *as_is, const struct dq *back,
                    const struct dq *prev, int *still_late, struct search_shift *sh) {
    *still_late = -1; /* not weighed */
    if (!isfinite(share) || share >= UNEXPLAINED_SHARE || !(change > 0) || !prev || !as_is) {
        return 1; /* (unknown: named, as a culprit without a share is) */
    }
    if (!(by_mean && shape_remains(pl, inv, from, as_is, prev, sh))) {
        return 0;
    }
    *still_late = shape_remains(pl, inv, from, as_is, back, sh);
    return !*still_late;
}

/* Takes back the newest culprit (not material) and puts why into reason, for a verdict that
 * says the search went on and found no other culprit. */
static void not_named(struct investigation *inv, const char *culprit, double share, double change,
                      enum search_problem unit, int still_late, char *reason, size_t cap) {
    int k = --inv->n_culprits;
    char part[64], whole[64], late[PROBES_NAME_MAX + 96] = "";
    adapt__amount_pm(unit, share * change, NAN, part, sizeof part);
    adapt__amount_pm(unit, change, NAN, whole, sizeof whole);
    if (still_late) {
        snprintf(late, sizeof late,
                 ", and with it put back %s's mass is still later than its baseline", inv->node);
    }
    char *found = strdup(strip_localized(reason, culprit));
    snprintf(reason, cap,
             "the part it found last, %s, explains %.2g %% of %s's change (%s of %s), less than "
             "a tenth%s: not named a culprit (%s)",
             culprit, 100.0 * share, inv->node, part, whole, late, found ? found : "");
    free(found);
    inv->culprits[k][0] = '\0';
    inv->culprit_ref[k][0] = '\0';
}

int adapt__on_culprit_path(const struct dq_diagram *g, const struct investigation *inv, int i) {
    for (int k = 0; g && k < inv->n_culprits; k++) {
        if (adapt__below(g, i, inv->culprits[k])) {
            return 1;
        }
    }
    return 0;
}

int adapt__culprits_can_go_on(struct plan *pl, const struct investigation *inv) {
    if (inv->mode != SEARCH_MODE_PROBLEM || inv->n_culprits >= ADAPT_MAX_CULPRITS ||
        !(inv->problem == SEARCH_LATENCY || inv->problem == SEARCH_QTA ||
          inv->problem == SEARCH_SHAPE)) {
        return 0;
    }
    double se, change = node_change(pl, inv, inv->eval_from, &se);
    return change > 0 && se >= 0;
}

int adapt__culprit_found(struct plan *pl, struct investigation *inv, const char *culprit,
                         const char *runner, json_t *ev, char *reason, size_t cap) {
    if (inv->mode != SEARCH_MODE_PROBLEM || inv->n_culprits >= ADAPT_MAX_CULPRITS) {
        return 0;
    }
    int k = inv->n_culprits++;
    snprintf(inv->culprits[k], sizeof inv->culprits[k], "%s", culprit);
    snprintf(inv->culprit_ref[k], sizeof inv->culprit_ref[k], "%s", runner ? runner : "");
    int64_t from = inv->eval_from;
    double se, change = node_change(pl, inv, from, &se), all = NAN;
    double share[ADAPT_MAX_CULPRITS];
    struct dq *as_is = NULL, *back = NULL, *prev = NULL;
    if (!(change > 0) || !(se >= 0) || !(change > SEARCH_Z * se) ||
        explained(pl, inv, from, change, &all, share, &as_is, &back, &prev) != DQ_OK) {
        /* no change to explain (no baseline, or none beyond the noise: a spread that grew
         * with its mean kept), or no what-if: the search ends here; every culprit found is
         * named, without shares (after a restart the node has no baseline to weigh by) */
        dq_destroy(as_is);
        dq_destroy(back);
        dq_destroy(prev);
        if (inv->n_culprits > 1) {
            for (int j = 0; j < ADAPT_MAX_CULPRITS; j++) {
                share[j] = NAN;
            }
            char names[ADAPT_MAX_CULPRITS * (PROBES_NAME_MAX + 16)];
            name_culprits(inv, share, NAN, change, ev, names, sizeof names);
            char *last = strdup(strip_localized(reason, culprit));
            snprintf(reason, cap,
                     "localized at %d culprits: %s (their shares of %s's change cannot be "
                     "weighed now: no baseline, a change within the noise, or no reference to "
                     "put a culprit back to); the last found, %s: %s",
                     inv->n_culprits, names, inv->node, culprit, last ? last : "");
            free(last);
        }
        return 0;
    }
    /* node_change's unit: lost mass, else the mean (a variance problem's change too) */
    enum search_problem unit = inv->problem == SEARCH_LOST ? SEARCH_LOST : SEARCH_LATENCY;
    int by_mean = inv->problem == SEARCH_LATENCY || inv->problem == SEARCH_QTA ||
                  inv->problem == SEARCH_SHAPE;
    int still_late = -1; /* with every culprit put back: -1 not weighed yet, else 0 or 1 */
    struct search_shift sh;
    if (k > 0 &&
        !material(pl, inv, from, change, share[k], by_mean, as_is, back, prev, &still_late, &sh)) {
        not_named(inv, culprit, share[k], change, unit, still_late > 0, reason, cap);
        dq_destroy(as_is);
        dq_destroy(back);
        dq_destroy(prev);
        return -1;
    }
    dq_destroy(prev);
    char names[ADAPT_MAX_CULPRITS * (PROBES_NAME_MAX + 16)];
    name_culprits(inv, share, all, change, ev, names, sizeof names);
    double rest = change * (1.0 - all);
    char part[64], whole[64];
    adapt__amount_pm(unit, all * change, NAN, part, sizeof part);
    adapt__amount_pm(unit, change, NAN, whole, sizeof whole);
    size_t len = strlen(reason);
    int by_rest = rest > UNEXPLAINED_SHARE * change && rest > SEARCH_Z * se;
    /* (weighed already when material() kept the culprit because putting it back ends the
     * lateness: then it is 0) */
    int by_shape = by_mean && !by_rest && inv->n_culprits < ADAPT_MAX_CULPRITS &&
                   (still_late >= 0 ? still_late : shape_remains(pl, inv, from, as_is, back, &sh));
    dq_destroy(as_is);
    dq_destroy(back);
    if (by_mean && (by_rest || by_shape) && inv->n_culprits < ADAPT_MAX_CULPRITS) {
        char why[sizeof names + 2 * PROBES_NAME_MAX + 600], left[96];
        adapt__amount_pm(unit, rest, se, left, sizeof left);
        int n = snprintf(why, sizeof why,
                         "%s explain%s %.0f %% of %s's change (%s of %s against its baseline); ",
                         inv->n_culprits == 1 ? culprit : names, inv->n_culprits == 1 ? "s" : "",
                         100.0 * all, inv->node, part, whole);
        size_t at = n > 0 && (size_t)n < sizeof why ? (size_t)n : 0;
        if (by_rest) {
            snprintf(why + at, sizeof why - at,
                     "%s remain unexplained: the search goes on from %s for another culprit", left,
                     inv->node);
        } else {
            char t1[DQ_DURATION_TEXT], t2[DQ_DURATION_TEXT];
            double med = isnan(sh.median) ? 0.0 : sh.median;
            snprintf(why + at, sizeof why - at,
                     "with %s put back, %.2g %% of %s's mass is still later than its baseline "
                     "(one-sided KS D %.3g), by %s on average (its median before %s): the "
                     "search goes on from %s for another culprit",
                     inv->n_culprits == 1 ? "it" : "them", 100.0 * sh.d, inv->node, sh.d,
                     dq_format_duration(sh.moved, t1, sizeof t1),
                     dq_format_duration(med, t2, sizeof t2), inv->node);
        }
        adapt__fx_hyp_verdict(pl, inv->hyp_id, "localized");
        int64_t hyp =
            adapt__hypothesis(pl, inv, inv->hyp_id, culprit, "culprit", NULL,
                              json_pack("{s:s,s:O}", "reason", why, "evidence", ev), NULL);
        adapt__fx_log(pl, LOG_INFO, inv->id, ": %s", why);
        adapt__focus_on(pl->a, inv, inv->node, hyp ? hyp : inv->hyp_id, pl->upto);
        json_decref(ev);
        return 1;
    }
    if (inv->n_culprits == 1) {
        snprintf(reason + len, cap - len, "; %s explains %.0f %% of %s's change (%s of %s)",
                 culprit, 100.0 * all, inv->node, part, whole);
        return 0;
    }
    char *last = strdup(strip_localized(reason, culprit));
    snprintf(reason, cap,
             "localized at %d culprits: %s explain %.0f %% of %s's change together (%s of %s); "
             "the last found, %s: %s",
             inv->n_culprits, names, 100.0 * all, inv->node, part, whole, culprit,
             last ? last : "");
    free(last);
    return 0;
}

const char *adapt__culprits_close(struct plan *pl, struct investigation *inv, json_t *ev,
                                  char *reason, size_t cap) {
    if (inv->n_culprits == 0) {
        return NULL;
    }
    int64_t from = inv->eval_from;
    double se, change = node_change(pl, inv, from, &se), all = NAN;
    double share[ADAPT_MAX_CULPRITS];
    for (int k = 0; k < ADAPT_MAX_CULPRITS; k++) {
        share[k] = NAN;
    }
    if (change > 0) {
        explained(pl, inv, from, change, &all, share, NULL, NULL, NULL);
    }
    char names[ADAPT_MAX_CULPRITS * (PROBES_NAME_MAX + 16)];
    name_culprits(inv, share, all, change, ev, names, sizeof names);
    char *before = strdup(reason);
    char count[32] = ""; /* "2 culprits: " (one is named alone) */
    if (inv->n_culprits > 1) {
        snprintf(count, sizeof count, "%d culprits: ", inv->n_culprits);
    }
    snprintf(reason, cap,
             "localized at %s%s%s; the rest of %s's change is not localized (the search went "
             "on: %s)",
             count, names,
             isfinite(all)          ? ""
             : inv->n_culprits == 1 ? " (its share unknown)"
                                    : " (their shares unknown)",
             inv->node, before ? before : "it found nothing more");
    free(before);
    return inv->culprits[0];
}

void adapt__culprits_adjust(struct plan *pl, const struct investigation *inv,
                            struct focus_input *fi) {
    if (inv->n_culprits == 0 || inv->mode != SEARCH_MODE_PROBLEM) {
        return;
    }
    /* the rest is weighed by the children's means, less what the culprits put into them */
    fi->in.problem = SEARCH_LATENCY;
    fi->in.qta_p = 0.0;
    struct what_if w;
    if (wi_init(pl, inv, inv->eval_from, &w) != DQ_OK) {
        return;
    }
    double *a = calloc(4 * (w.nn + 1), sizeof *a);
    struct dq **keep = calloc(w.nn + 1, sizeof *keep);
    if (a && keep) {
        double *la = a + w.nn + 1, *b = la + w.nn + 1, *lb = b + w.nn + 1;
        if (wi_run(&w, 0, a, la) == DQ_OK &&
            wi_run_keep(&w, (1u << w.n) - 1, b, lb, keep) == DQ_OK) {
            for (size_t j = 0; j < fi->in.n_children; j++) {
                int i = fi->kid_nodes[j];
                double d = a[i] - b[i];
                struct search_child *c = &fi->kids[j];
                if (!(c->stats.present && c->stats.n_ok > 0 && isfinite(d) && d > 0)) {
                    continue;
                }
                c->stats.mean = c->stats.mean - d > 0 ? c->stats.mean - d : 0.0;
                if (keep[i] && c->stats.observed == fi->kstats[j].obs) {
                    /* a child above a culprit: its ΔQ as the what-if has it, so that an
                     * all- or first-to-finish node weighs who finishes last (first) without
                     * what the culprits put in */
                    dq_destroy(fi->kstats[j].obs);
                    fi->kstats[j].obs = keep[i];
                    keep[i] = NULL;
                    c->stats.observed = fi->kstats[j].obs;
                }
            }
        }
    }
    for (size_t i = 0; keep && i < w.nn; i++) {
        dq_destroy(keep[i]);
    }
    free(keep);
    free(a);
    wi_release(&w);
}
