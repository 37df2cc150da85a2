/*
 * snapshots.c: when a trigger fires, the observed and calculated ΔQs of its probe, its
 * children and its nearest named parent are kept: the W windows before the firing at
 * once, then each of the W windows after it as they close.
 */
#include "adapt_internal.h"

#include <stdio.h>
#include <string.h>

static void add_window(struct plan *pl, const struct snapshot *s, const struct probe *p,
                       const struct probe_window *w) {
    int64_t window_ns = core_window_ns(pl->a->env.core);
    int64_t start = w->wid * window_ns, end = start + window_ns;
    if (w->observed) {
        adapt__fx_snap_dq(pl, s->id, p->name, STORE_OBSERVED, start, end, w->observed);
    }
    if (w->calculated) {
        adapt__fx_snap_dq(pl, s->id, p->name, STORE_CALCULATED, start, end, w->calculated);
    }
}

/* The probe, its children and its nearest named parent (at most ADAPT_SNAPSHOT_PROBES). */
static void neighbours(const struct dq_diagram *g, struct snapshot *s, const char *probe) {
    snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s", probe);
    if (!g) {
        return;
    }
    int i = dq_diagram_find(g, probe);
    int kids[ADAPT_SNAPSHOT_PROBES - 1];
    size_t n = i >= 0 ? dq_diagram_probe_children(g, i, kids, ADAPT_SNAPSHOT_PROBES - 1) : 0;
    for (size_t j = 0;
         j < n && j < ADAPT_SNAPSHOT_PROBES - 1 && s->n_probes < ADAPT_SNAPSHOT_PROBES; j++) {
        snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s",
                 dq_diagram_node(g, kids[j])->name);
    }
    const struct dq_diagram_node *node = i >= 0 ? dq_diagram_node(g, i) : NULL;
    for (int guard = 0; node && node->n_parents > 0 && guard < 1000; guard++) {
        node = dq_diagram_node(g, node->parents[0]);
        if (node && node->name && node->kind != DQ_NODE_REFERENCE) {
            if (s->n_probes < ADAPT_SNAPSHOT_PROBES) {
                snprintf(s->probes[s->n_probes++], PROBES_NAME_MAX + 1, "%s", node->name);
            }
            break;
        }
    }
}

void adapt__snapshot_start(struct plan *pl, const struct trigger *t, int64_t inv) {
    struct adapt *a = pl->a;
    struct adapt_state *st = &pl->next;
    if (st->n_snaps >= ADAPT_MAX_SNAPSHOTS) {
        adapt__fx_log(pl, LOG_WARN, 0, "snapshot of %s skipped: %d snapshots are being collected",
                      t->probe, ADAPT_MAX_SNAPSHOTS);
        return;
    }
    struct snapshot *s = &st->snaps[st->n_snaps];
    memset(s, 0, sizeof *s);
    char reason[128];
    snprintf(reason, sizeof reason, "trigger %s fired", adapt__trigger_kind_name(t->kind));
    struct store_snapshot row = {.trigger_id = t->id,
                                 .investigation = inv,
                                 .probe = t->probe,
                                 .reason = reason,
                                 .time_ns = (pl->wid + 1) * core_window_ns(a->env.core),
                                 .windows = a->opt.snapshot_windows};
    s->id = adapt__fx_snap_open(pl, &row);
    if (!s->id) {
        return;
    }
    neighbours(core_diagram(a->env.core), s, t->probe);
    /* the windows before (the firing window among them), newest first */
    for (int j = 0; j < s->n_probes; j++) {
        struct probe *p = adapt__probe(a, s->probes[j]);
        int taken = 0;
        for (int b = 0; p && b < p->ring_len && taken < a->opt.snapshot_windows; b++) {
            const struct probe_window *w = probes_ring_get(p, b);
            if (w->wid > pl->wid) {
                continue; /* closed after the window this round decides */
            }
            add_window(pl, s, p, w);
            taken++;
        }
    }
    s->fire_wid = pl->wid;
    s->after_left = a->opt.snapshot_windows;
    st->n_snaps++;
}

void adapt__run_snapshots(struct plan *pl) {
    struct adapt_state *st = &pl->next;
    for (int i = 0; i < st->n_snaps;) {
        struct snapshot *s = &st->snaps[i];
        if (s->fire_wid == pl->wid) {
            i++; /* started this window, with it among the windows before */
            continue;
        }
        for (int j = 0; j < s->n_probes; j++) {
            struct probe *p = adapt__probe(pl->a, s->probes[j]);
            const struct probe_window *w = p ? probes_ring_find(p, pl->wid) : NULL;
            if (w) {
                add_window(pl, s, p, w);
            }
        }
        if (--s->after_left <= 0) {
            adapt__fx_snap_complete(pl, s->id);
            st->snaps[i] = st->snaps[--st->n_snaps];
            continue;
        }
        i++;
    }
}
