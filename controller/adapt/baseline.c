/*
 * baseline.c: baselines that cannot learn the fault. A problem (an *episode*) opens when a
 * trigger fires (from the first of its bad windows) or when a person's investigation finds
 * one (from the first window of the range the node check found it in), and closes when
 * the trigger clears or the investigation is released. While it is open, the baselines of
 * its node and of everything below it in the diagram are the ones they had when it began
 * (taken then, since the rings soon let those windows go): a probe enabled only after it
 * began has none and is judged against its siblings. Its windows are never baseline, during
 * it or after it. Every ADAPT_REF_EVERY windows the diagram's baselines are also kept as
 * they are (the newest ADAPT_REFS), for a person's diagnosis of a problem older than the
 * ring's baseline (investigate.c, older_problem).
 *
 * Everything here only decides: it changes the round's next state.
 */
#include "adapt_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* ---- references -------------------------------------------------------------------------- */

static void base_set_unref(struct base_set *b) {
    if (b && --b->refs == 0) {
        for (int i = 0; i < b->n; i++) {
            dq_destroy(b->snap[i].obs);
        }
        free(b);
    }
}

void adapt__episodes_ref(struct adapt_state *st) {
    for (int i = 0; i < st->n_episodes; i++) {
        if (st->episodes[i].bases) {
            st->episodes[i].bases->refs++;
        }
    }
    for (int i = 0; i < st->n_refs; i++) {
        st->refs[i].bases->refs++;
    }
}

void adapt__episodes_release(struct adapt_state *st) {
    for (int i = 0; i < st->n_episodes; i++) {
        base_set_unref(st->episodes[i].bases);
        st->episodes[i].bases = NULL;
    }
    st->n_episodes = 0;
    for (int i = 0; i < st->n_refs; i++) {
        base_set_unref(st->refs[i].bases);
        st->refs[i].bases = NULL;
    }
    st->n_refs = 0;
}

/* ---- the diagram below a node -------------------------------------------------------------- */

static int below(const struct dq_diagram *g, int i, const char *name, int depth);

int adapt__below(const struct dq_diagram *g, int i, const char *name) {
    return below(g, i, name, 0);
}

/* 1 when `name` is node i or one of the probes below it. */
static int below(const struct dq_diagram *g, int i, const char *name, int depth) {
    const struct dq_diagram_node *n = dq_diagram_node(g, i);
    if (!n || depth > 64) {
        return 0;
    }
    if (n->name && strcmp(n->name, name) == 0) {
        return 1;
    }
    int kids[SEARCH_MAX_CHILDREN];
    size_t k = dq_diagram_probe_children(g, i, kids, SEARCH_MAX_CHILDREN);
    for (size_t j = 0; j < k && j < SEARCH_MAX_CHILDREN; j++) {
        if (below(g, kids[j], name, depth + 1)) {
            return 1;
        }
    }
    return 0;
}

/* 1 when episode e covers probe `name`: it is at e's node or below it. */
static int covers(const struct plan *pl, const struct episode *e, const char *name) {
    if (strcmp(e->node, name) == 0) {
        return 1;
    }
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    int i = g ? dq_diagram_find(g, e->node) : -1;
    return i >= 0 && below(g, i, name, 0);
}

/* ---- windows no problem covered -------------------------------------------------------------- */

struct clean {
    const struct plan *pl;
    const char *probe;
};

/* 1 when window wid of the probe lies in a problem that covers it. */
static int tainted(void *ctx, int64_t wid) {
    const struct clean *c = ctx;
    const struct adapt_state *st = &c->pl->next;
    for (int i = 0; i < st->n_episodes; i++) {
        const struct episode *e = &st->episodes[i];
        if (wid >= e->from && wid < e->to && covers(c->pl, e, c->probe)) {
            return 1;
        }
    }
    return 0;
}

/* The windows' means (those with successes) of p over [from, to) outside problems. */
static int clean_means(const struct plan *pl, const struct probe *p, int64_t from, int64_t to,
                       double *means) {
    struct clean c = {pl, p->name};
    int n = 0;
    for (int k = 0; k < p->ring_len && n < SEARCH_MAX_WINDOW_MEANS; k++) {
        const struct probe_window *w = probes_ring_get((struct probe *)p, k);
        if (w->wid < from) {
            break;
        }
        if (w->ok > 0 && w->wid < to && !tainted(&c, w->wid)) {
            means[n++] = w->mean;
        }
    }
    return n;
}

/* p's baseline from its ring: the windows in [end − SPAN, end) outside problems. */
static void ring_baseline(const struct plan *pl, const struct probe *p, int64_t end,
                          struct node_stats *ns, double *means, int *n_means) {
    struct clean c = {pl, p ? p->name : ""};
    adapt__gather_where(p, end - SEARCH_BASELINE_SPAN, end, tainted, &c, ns);
    if (means) {
        *n_means = p ? clean_means(pl, p, end - SEARCH_BASELINE_SPAN, end, means) : 0;
    }
}

/* ---- episodes
 * ------------------------------------------------------------------------------------ */

/* Adds the baseline before `from` of probe `name` (when it is enabled and has one) to b. */
static void take_base(struct plan *pl, struct base_set *b, const char *name, int64_t from) {
    struct probe *p = adapt__probe(pl->a, name);
    if (!p || !p->enabled) {
        return;
    }
    for (int i = 0; i < b->n; i++) {
        if (strcmp(b->snap[i].probe, name) == 0) {
            return; /* a probe the diagram reaches twice */
        }
    }
    struct base_snap *s = &b->snap[b->n];
    struct node_stats ns;
    ring_baseline(pl, p, from, &ns, s->means, &s->n_means);
    if (!(ns.s.present && ns.s.windows >= SEARCH_BASELINE_WINDOWS)) {
        adapt__node_stats_release(&ns);
        return;
    }
    snprintf(s->probe, sizeof s->probe, "%s", p->name);
    s->s = ns.s;
    s->obs = ns.obs;
    s->s.observed = s->obs;
    s->s.calculated = NULL;
    dq_destroy(ns.calc);
    b->n++;
}

/* Node i and the probes below it, each once (seen: one flag per node of the diagram). */
static void take_below(struct plan *pl, struct base_set *b, const struct dq_diagram *g, int i,
                       unsigned char *seen, int64_t from, int depth) {
    const struct dq_diagram_node *n = dq_diagram_node(g, i);
    if (!n || seen[i] || depth > 64) {
        return;
    }
    seen[i] = 1;
    if (n->name) {
        take_base(pl, b, n->name, from);
    }
    int kids[SEARCH_MAX_CHILDREN];
    size_t k = dq_diagram_probe_children(g, i, kids, SEARCH_MAX_CHILDREN);
    for (size_t j = 0; j < k && j < SEARCH_MAX_CHILDREN; j++) {
        take_below(pl, b, g, kids[j], seen, from, depth + 1);
    }
}

/* The baselines of node and the enabled probes below it, before window `from`. */
static struct base_set *take_bases(struct plan *pl, const char *node, int64_t from) {
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    size_t nn = g ? dq_diagram_node_count(g) : 0;
    struct base_set *b = calloc(1, sizeof *b + (nn + 1) * sizeof b->snap[0]);
    unsigned char *seen = calloc(nn + 1, 1);
    if (!b || !seen) {
        free(b);
        free(seen);
        pl->failed = 1;
        return NULL;
    }
    b->refs = 1;
    int root = g ? dq_diagram_find(g, node) : -1;
    if (root >= 0) {
        take_below(pl, b, g, root, seen, from, 0);
    } else {
        take_base(pl, b, node, from);
    }
    free(seen);
    return b;
}

static struct episode *find_open(struct adapt_state *st, int64_t trigger_id, int64_t inv_id) {
    for (int i = 0; i < st->n_episodes; i++) {
        struct episode *e = &st->episodes[i];
        if (e->to == INT64_MAX &&
            ((trigger_id && e->trigger_id == trigger_id) || (inv_id && e->inv_id == inv_id))) {
            return e;
        }
    }
    return NULL;
}

int64_t adapt__episode_from(const struct adapt_state *st, int64_t trigger_id, int64_t inv_id) {
    const struct episode *e = find_open((struct adapt_state *)st, trigger_id, inv_id);
    return e ? e->from : -1;
}

static void open_with(struct plan *pl, const char *node, int64_t from, int64_t trigger_id,
                      int64_t inv_id, struct base_set *bases);

void adapt__episode_open(struct plan *pl, const char *node, int64_t from, int64_t trigger_id,
                         int64_t inv_id) {
    if (!find_open(&pl->next, trigger_id, inv_id)) {
        open_with(pl, node, from, trigger_id, inv_id, NULL);
    }
}

void adapt__episode_open_ref(struct plan *pl, const char *node, int64_t from, int64_t inv_id,
                             struct base_set *bases) {
    if (!find_open(&pl->next, 0, inv_id)) {
        bases->refs++;
        open_with(pl, node, from, 0, inv_id, bases);
    }
}

/* Opens the problem; its baselines are `bases` (owned from here), or taken now when NULL. */
static void open_with(struct plan *pl, const char *node, int64_t from, int64_t trigger_id,
                      int64_t inv_id, struct base_set *bases) {
    struct adapt_state *st = &pl->next;
    if (st->n_episodes == ADAPT_MAX_EPISODES) {
        /* the oldest closed one goes; with every one open, the new problem is not frozen */
        int oldest = -1;
        for (int i = 0; i < st->n_episodes; i++) {
            if (st->episodes[i].to != INT64_MAX &&
                (oldest < 0 || st->episodes[i].to < st->episodes[oldest].to)) {
                oldest = i;
            }
        }
        if (oldest < 0) {
            adapt__fx_log(pl, LOG_WARN, 0,
                          "%d problems are open: the baselines under %s are not frozen",
                          ADAPT_MAX_EPISODES, node);
            base_set_unref(bases);
            return;
        }
        base_set_unref(st->episodes[oldest].bases);
        st->episodes[oldest] = st->episodes[--st->n_episodes];
    }
    struct episode *e = &st->episodes[st->n_episodes];
    memset(e, 0, sizeof *e);
    snprintf(e->node, sizeof e->node, "%s", node);
    e->from = from;
    e->to = INT64_MAX;
    e->trigger_id = trigger_id;
    e->inv_id = inv_id;
    e->bases = bases ? bases : take_bases(pl, node, from);
    st->n_episodes++;
}

void adapt__episode_resume(struct adapt_state *st, const char *node, int64_t from,
                           int64_t trigger_id, int64_t inv_id) {
    if (st->n_episodes == ADAPT_MAX_EPISODES) {
        return;
    }
    struct episode *e = &st->episodes[st->n_episodes++];
    memset(e, 0, sizeof *e);
    snprintf(e->node, sizeof e->node, "%s", node);
    e->from = from;
    e->to = INT64_MAX;
    e->trigger_id = trigger_id;
    e->inv_id = inv_id;
}

void adapt__episode_close(struct plan *pl, int64_t trigger_id, int64_t inv_id) {
    struct episode *e = find_open(&pl->next, trigger_id, inv_id);
    if (e) {
        e->to = pl->upto;
        base_set_unref(e->bases);
        e->bases = NULL;
    }
}

void adapt__episode_drop(struct plan *pl, int64_t trigger_id, int64_t inv_id) {
    struct adapt_state *st = &pl->next;
    struct episode *e = find_open(st, trigger_id, inv_id);
    if (e) {
        base_set_unref(e->bases);
        *e = st->episodes[--st->n_episodes];
    }
}

void adapt__episodes_sweep(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    int64_t keep = pl->upto - core_probes(pl->a->env.core)->ring_cap - SEARCH_BASELINE_SPAN;
    for (int i = 0; i < st->n_episodes;) {
        if (st->episodes[i].to != INT64_MAX && st->episodes[i].to < keep) {
            base_set_unref(st->episodes[i].bases);
            st->episodes[i] = st->episodes[--st->n_episodes];
            continue;
        }
        i++;
    }
}

/* ---- older baselines, for a person who asks late ------------------------------------------- */

/* Whether some enabled probe of the diagram has closed windows enough for a baseline: a
 * condition take_base's needs, tested before a set is allocated (until a probe has them,
 * adapt__refs_take would otherwise gather every probe's ring each window for nothing). */
static int refs_possible(struct plan *pl, const struct dq_diagram *g, size_t nn) {
    for (size_t i = 0; i <= nn; i++) {
        const struct dq_diagram_node *n = dq_diagram_node(g, (int)i);
        const struct probe *p = n && n->name ? adapt__probe(pl->a, n->name) : NULL;
        if (p && p->enabled && p->ring_len >= SEARCH_BASELINE_WINDOWS) {
            return 1;
        }
    }
    return 0;
}

void adapt__refs_take(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    const struct dq_diagram *g = core_diagram(pl->a->env.core);
    if (!g || (st->n_refs > 0 && pl->upto - st->refs[st->n_refs - 1].wid < ADAPT_REF_EVERY)) {
        return;
    }
    size_t nn = dq_diagram_node_count(g);
    if (!refs_possible(pl, g, nn)) {
        return;
    }
    struct base_set *b = calloc(1, sizeof *b + (nn + 1) * sizeof b->snap[0]);
    if (!b) {
        pl->failed = 1;
        return;
    }
    b->refs = 1;
    for (size_t i = 0; i <= nn; i++) {
        const struct dq_diagram_node *n = dq_diagram_node(g, (int)i);
        if (n && n->name) {
            take_base(pl, b, n->name, pl->upto);
        }
    }
    if (b->n == 0) {
        base_set_unref(b);
        return;
    }
    /* kept for ten minutes: only the probes that had a baseline */
    struct base_set *fit = realloc(b, sizeof *b + (size_t)b->n * sizeof b->snap[0]);
    if (fit) {
        b = fit;
    }
    if (st->n_refs == ADAPT_REFS) {
        base_set_unref(st->refs[0].bases);
        memmove(&st->refs[0], &st->refs[1], (size_t)(ADAPT_REFS - 1) * sizeof st->refs[0]);
        st->n_refs--;
    }
    st->refs[st->n_refs++] = (struct adapt_ref){.wid = pl->upto, .bases = b};
}

/* Copies p's snapshot in b (when b holds one) into *ns and means; 1 when it did. */
static int snap_stats(const struct base_set *b, const struct probe *p, struct node_stats *ns,
                      double *means, int *n_means) {
    for (int i = 0; b && i < b->n; i++) {
        const struct base_snap *s = &b->snap[i];
        if (strcmp(s->probe, p->name) != 0) {
            continue;
        }
        ns->s = s->s;
        if (s->obs && dq_clone(s->obs, &ns->obs) != DQ_OK) {
            ns->obs = NULL;
        }
        ns->s.observed = ns->obs;
        if (means) {
            memcpy(means, s->means, (size_t)s->n_means * sizeof *means);
            *n_means = s->n_means;
        }
        return 1;
    }
    return 0;
}

int adapt__ref_baseline(struct plan *pl, const struct probe *p, struct node_stats *ns,
                        double *means, int *n_means, int64_t *wid, struct base_set **bases) {
    const struct adapt_state *st = &pl->next;
    memset(ns, 0, sizeof *ns);
    search_stats_init(&ns->s);
    if (means) {
        *n_means = 0;
    }
    for (int i = 0; p && i < st->n_refs && st->refs[i].wid <= pl->upto - SEARCH_BASELINE_SPAN;
         i++) {
        if (snap_stats(st->refs[i].bases, p, ns, means, n_means)) {
            *wid = st->refs[i].wid;
            *bases = st->refs[i].bases;
            return 1;
        }
    }
    return 0;
}

/* ---- a probe's baseline -----------------------------------------------------------------------
 */

int adapt__baseline(struct plan *pl, const struct probe *p, int64_t end, struct node_stats *ns,
                    double *means, int *n_means) {
    const struct episode *first = NULL;
    const struct adapt_state *st = &pl->next;
    for (int i = 0; p && i < st->n_episodes; i++) {
        const struct episode *e = &st->episodes[i];
        if (e->to == INT64_MAX && e->from < end && (!first || e->from < first->from) &&
            covers(pl, e, p->name)) {
            first = e;
        }
    }
    if (!first) {
        ring_baseline(pl, p, end, ns, means, n_means);
        return 0;
    }
    memset(ns, 0, sizeof *ns);
    search_stats_init(&ns->s);
    if (means) {
        *n_means = 0;
    }
    snap_stats(first->bases, p, ns, means, n_means);
    return 1;
}

int adapt__qta_lost(struct plan *pl, const struct probe *p, int64_t from, char *why, size_t cap) {
    if (!p || !p->has_qta) {
        return 0;
    }
    struct node_stats ns, b;
    adapt__gather(p, from, pl->upto, &ns);
    adapt__baseline(pl, p, from, &b, NULL, NULL);
    int base = b.s.present && b.s.windows >= SEARCH_BASELINE_WINDOWS;
    int lost = search_qta_lost(&ns.s, base ? &b.s : NULL, &p->qta, why, cap);
    adapt__node_stats_release(&b);
    adapt__node_stats_release(&ns);
    return lost;
}
