/*
 * search_policy.c: the rules around the strategies' verdicts: confirmation, the
 * fresh-window check, the no-reference fallback (follow the largest contributor), what a
 * person's investigation follows once its node is checked, and whether a localized
 * culprit still holds its problem. Pure functions of statistics and verdicts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_search.h"

/* ---- confirmation ---------------------------------------------------------------------- */

void search_confirm_reset(struct search_confirm *c) {
    c->count = 0;
}

int search_confirm_step(struct search_confirm *c, int verdict, int child, int has_window,
                        int64_t upto) {
    if (verdict == SEARCH_INCONCLUSIVE) {
        return 1;
    }
    if (!has_window) {
        return 0; /* a person's action brings no new window: nothing to confirm with */
    }
    if (c->count > 0 && c->verdict == verdict && c->child == child) {
        c->count++;
    } else {
        c->verdict = verdict;
        c->child = child;
        c->count = 1;
        c->from = upto; /* fresh windows start after this evaluation */
    }
    return c->count >= SEARCH_CONFIRM;
}

/* ---- fresh windows ----------------------------------------------------------------------- */

void search_fresh_params(const struct search_params *p, struct search_params *out) {
    *out = *p;
    /* fresh evidence of its own: as many windows as a diffuse verdict needs */
    out->min_windows =
        out->min_windows < out->diffuse_min_windows ? out->diffuse_min_windows : out->min_windows;
}

enum search_fresh search_fresh_judge(int verdict, int child, int fresh_verdict, int fresh_child) {
    if (fresh_verdict == SEARCH_NEED_SAMPLES) {
        return SEARCH_FRESH_WAIT;
    }
    return fresh_verdict == verdict && fresh_child == child ? SEARCH_FRESH_AGREES
                                                            : SEARCH_FRESH_DISAGREES;
}

int search_fresh_needed(int verdict, enum search_strategy_id strategy, int exhausted) {
    return verdict != SEARCH_INCONCLUSIVE && strategy == SEARCH_CHILDREN && !exhausted;
}

/* ---- no reference: the largest contributor ---------------------------------------------- */

/* 1 when a verdict names a child (descend or localized). */
static int names_child(int verdict) {
    return verdict == SEARCH_DESCEND || verdict == SEARCH_LOCALIZED;
}

/* How concentrated a dominant attribution is: the leader's contribution over the
 * runner-up's (a stage that holds nine times its sibling's spread says more than one
 * that holds three times its mean). */
static double concentration(const struct search_attribution *a) {
    if (a->best < 0) {
        return 0.0;
    }
    const struct search_contribution *b = &a->c[a->best];
    if (a->runner_up < 0 || !(a->c[a->runner_up].value > 0.0)) {
        return 1e9;
    }
    return b->value / a->c[a->runner_up].value;
}

void search_where_it_goes(const struct search_input *in, const struct search_attribution *a,
                          char *buf, size_t cap) {
    unsigned char used[SEARCH_MAX_CHILDREN] = {0};
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < 6; k++) {
        int best = -1;
        for (size_t i = 0; i < in->n_children; i++) {
            if (a->c[i].included && !used[i] &&
                (best < 0 || a->c[i].value > a->c[(size_t)best].value)) {
                best = (int)i;
            }
        }
        if (best < 0) {
            break;
        }
        used[best] = 1;
        int w = snprintf(buf + len, cap - len, "%s%s %.0f %%", len ? ", " : "",
                         in->children[best].name ? in->children[best].name : "?",
                         100.0 * a->c[best].share);
        if (w < 0 || (size_t)w >= cap - len) {
            break;
        }
        len += (size_t)w;
    }
}

/* The lost mass, when the focus lost instances: it replaces the latency verdict when it
 * names a child more concentrated. Returns SEARCH_NEED_SAMPLES when the lost evaluation
 * waits for samples (both are weighed over the same windows), else the verdict kept. */
static int contributor_lost(const struct search_input *lost_in, const struct search_params *slow,
                            const struct search_result *lat, int verdict, struct search_result *alt,
                            struct search_result *out, enum search_problem *followed) {
    int rc = search_evaluate(lost_in, slow, alt);
    if (rc == DQ_OK && alt->verdict == SEARCH_NEED_SAMPLES && !lost_in->exhausted) {
        return SEARCH_NEED_SAMPLES;
    }
    if (rc == DQ_OK && names_child(alt->verdict) &&
        (!names_child(verdict) || concentration(&alt->attr) > concentration(&lat->attr))) {
        *out = *alt;
        *followed = SEARCH_LOST;
        return alt->verdict;
    }
    return verdict;
}

int search_contributor(const struct search_input *in, const struct search_params *params,
                       const struct search_result *lat, struct search_result *out,
                       enum search_problem *followed) {
    *out = *lat;
    *followed = SEARCH_LATENCY;
    struct search_result *alt = calloc(1, sizeof *alt);
    if (!alt) {
        return SEARCH_NEED_SAMPLES;
    }
    /* failures and spread show in rare events: every child needs enough windows */
    struct search_params slow = *params;
    slow.min_windows = slow.min_windows < 4 ? 4 : slow.min_windows;
    struct search_input x = *in;
    int verdict = lat->verdict;
    if (search_stats_lost(&in->stats) > 0.0) {
        x.problem = SEARCH_LOST;
        verdict = contributor_lost(&x, &slow, lat, verdict, alt, out, followed);
    }
    if (names_child(verdict) || verdict == SEARCH_NEED_SAMPLES) {
        free(alt);
        return verdict;
    }
    /* the time is balanced (or the search is out of time): the spread */
    x.problem = SEARCH_VARIANCE;
    x.own_spread = 1;
    int rc = search_evaluate(&x, &slow, alt);
    if (rc == DQ_OK && (names_child(alt->verdict) || alt->verdict == SEARCH_NEED_SAMPLES)) {
        if (names_child(alt->verdict)) {
            *out = *alt;
            *followed = SEARCH_VARIANCE;
        }
        verdict = alt->verdict;
        free(alt);
        return verdict;
    }
    free(alt);
    if (verdict == SEARCH_INCONCLUSIVE) {
        return verdict;
    }
    char where[400];
    search_where_it_goes(in, &lat->attr, where, sizeof where);
    snprintf(out->reason, sizeof out->reason,
             "healthy at %s: nothing to judge it against (no QTA, no baseline yet) and no child "
             "dominates its time or its spread; where the time goes: %s",
             in->name, where);
    return SEARCH_HEALTHY;
}

/* ---- what a person's investigation follows ------------------------------------------------ */

int search_followed_needs(const struct search_check *c, int overload_asked) {
    if (overload_asked) {
        return -1;
    }
    if (c->n > 0) {
        return search_load_shaped(c->p[0].kind) ? 1 : -1;
    }
    return 0;
}

enum search_mode search_followed(const struct search_check *c, int overload_asked, int load_rose) {
    if (c->n > 0) {
        return overload_asked || (search_load_shaped(c->p[0].kind) && load_rose)
                   ? SEARCH_MODE_OVERLOAD
                   : SEARCH_MODE_PROBLEM;
    }
    if (overload_asked || load_rose) {
        return SEARCH_MODE_OVERLOAD;
    }
    return c->has_qta || c->has_baseline ? SEARCH_MODE_OBSERVE : SEARCH_MODE_CONTRIBUTOR;
}

int search_observe_ready(int enough, const struct search_check *c, int exhausted) {
    /* a problem is decided as soon as it shows; "nothing abnormal" needs the recent windows
     * in full (few samples say little either way) */
    return enough && (c->n > 0 || c->recent.windows >= SEARCH_RECENT_WINDOWS || exhausted);
}

int search_watch_wanted(int person, int overload_asked, int has_reference, int suggestive) {
    /* an overload asked for is weighed whatever the check says; without a reference the
     * search follows the contributors rather than saying healthy */
    return person && !overload_asked && has_reference && suggestive;
}

int search_still_holds(double now, double at_verdict, double runner_at_verdict) {
    return now > 0.5 * (at_verdict + runner_at_verdict);
}

int search_stands_out(double value, double half_width, double rival) {
    return rival > -INFINITY && value - half_width > rival;
}
