/*
 * probes_names.c: the name budget of the probe table (core.h, docs/running.md "The name
 * budget"): new names per source and for the whole table, the observed probes' share
 * (max_observed), and which probes may be evicted, least recently seen first or when idle.
 */
#include "core.h"
#include "core_internal.h"

int probes_observed(const struct probe *p) {
    return p->from_wire && !p->chosen && (p->passive || (!p->enabled && !p->always_on)) &&
           !p->dmax_set && !p->has_qta && !p->in_diagram && !p->servers;
}

int probes_evictable(const struct probe_table *t, const struct probe *p) {
    return probes_observed(p) && !(t->evict_veto && t->evict_veto(t->evict_ctx, p));
}

void probes_set_name_limit(struct probe_table *t, double per_second, double burst) {
    t->name_rate_per_s = per_second;
    t->name_burst = burst < 1 ? 1 : burst;
}

void probes_set_name_budget(struct probe_table *t, const struct probes_name_budget *b) {
    t->all_rate_per_s = b->all_per_second;
    t->all_burst = b->all_burst < 1 ? 1 : b->all_burst;
    t->max_observed = b->max_observed;
    t->idle_windows = b->idle_windows;
}

/* Makes room: removes the evictable probe heard from least recently. 0, or −1 when none. */
static int evict_one(struct probe_table *t) {
    struct probe *victim = NULL;
    for (size_t i = 0; i < t->count; i++) {
        struct probe *q = t->probes[i];
        if ((!victim || q->last_wid < victim->last_wid) && probes_evictable(t, q)) {
            victim = q;
        }
    }
    if (!victim) {
        return -1;
    }
    t->evicted++;
    probes_remove(t, victim);
    return 0;
}

/* The tokens of bucket b at now (refilled at rate up to burst; a new bucket is full). */
static double bucket_level(struct probe_name_bucket *b, double rate, double burst, int64_t now) {
    if (b->at_ns == 0) {
        b->tokens = burst;
    } else if (now > b->at_ns) {
        b->tokens += (double)(now - b->at_ns) * 1e-9 * rate;
        if (b->tokens > burst) {
            b->tokens = burst;
        }
    }
    if (now > b->at_ns || b->at_ns == 0) {
        b->at_ns = now > 0 ? now : 1;
    }
    return b->tokens;
}

int core__name_allowed(struct probe_table *t, uint32_t origin, struct probe_name_bucket *peer,
                       int64_t now) {
    struct probe_name_bucket *b = peer;
    if (!b && origin != 0 && origin < t->n_origins && t->origins[origin].used) {
        struct probe_origin *o = &t->origins[origin];
        b = o->node && o->node < t->n_nodes ? &t->nodes[o->node].names : &o->names;
        now = o->last_rx_ns;
    }
    if (now > t->names_now) {
        t->names_now = now;
    }
    int own = b && t->name_rate_per_s > 0;
    int all = t->all_rate_per_s > 0;
    if ((own && bucket_level(b, t->name_rate_per_s, t->name_burst, now) < 1) ||
        (all && bucket_level(&t->all_names, t->all_rate_per_s, t->all_burst, t->names_now) < 1)) {
        return 0;
    }
    if (own) {
        b->tokens -= 1;
    }
    if (all) {
        t->all_names.tokens -= 1;
    }
    return 1;
}

/* Probes only observed (probes_observed). */
static size_t observed_count(const struct probe_table *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++) {
        n += probes_observed(t->probes[i]) != 0;
    }
    return n;
}

int core__make_room(struct probe_table *t, int observed) {
    int over = observed && t->max_observed > 0 && t->max_observed < t->cap &&
               observed_count(t) >= t->max_observed;
    if ((t->count >= t->cap || over) && evict_one(t) < 0) {
        t->full++;
        return over ? dq_fail(DQ_EFULL,
                              "the %zu probes names seen only in instances may hold "
                              "(max_observed_probes) are all held by an investigation",
                              t->max_observed)
                    : dq_fail(DQ_EFULL, "probe table full (%zu probes, none only seen on the wire)",
                              t->cap);
    }
    return DQ_OK;
}

size_t probes_remove_idle(struct probe_table *t, int64_t wid) {
    if (t->idle_windows <= 0) {
        return 0;
    }
    size_t kept = 0, gone = 0;
    for (size_t j = 0; j < t->count; j++) {
        struct probe *p = t->probes[j];
        if (p->last_wid + t->idle_windows <= wid && probes_evictable(t, p)) {
            core__probe_free(t, p);
            gone++;
        } else {
            p->index = (int)kept;
            t->probes[kept++] = p;
        }
    }
    if (gone) {
        for (size_t j = kept; j < t->count; j++) {
            t->probes[j] = NULL;
        }
        t->count = kept;
        core__index_rebuild(t); /* once for all of them */
        t->idle += gone;
    }
    return gone;
}
