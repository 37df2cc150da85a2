/*
 * sim.c: dqsim's model, request walk, PRNG, faults and protocol state (see sim.h).
 *
 * Reproducibility is the point of this file: each request has its own generator, seeded
 * by one draw of the run's stream, and within it every leaf pass draws exactly three
 * uniforms (branch of the erratic mixture, the exponential, the failure coin) and every
 * named inner node one (its failure coin), whatever faults are in force. So a fault that
 * does not change a request's path (slow, erratic) changes the draws of the faulty node
 * only, a failure changes only the request it cuts short, and two runs with one seed
 * differ exactly where a fault was set. A station leaf draws the same three (the service
 * time takes the place of the leaf's delay, and a request turned away still draws them),
 * so binding a leaf to a station or filling a station changes no other node's draws;
 * what stations do change is when later requests are served, which is their point.
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "wire.h"

/* ---- PRNG ---------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sim_rng_seed(struct sim_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        r->s[i] = splitmix64(&x);
    }
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sim_rng_uniform(struct sim_rng *r) {
    return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Exponential from a uniform u in [0, 1): −mean·ln(1 − u), finite since 1 − u > 0. */
static double exp_from(double u, double mean) {
    return mean > 0 ? -mean * log1p(-u) : 0.0;
}

double sim_rng_exp(struct sim_rng *r, double mean) {
    return exp_from(sim_rng_uniform(r), mean);
}

/* ---- model --------------------------------------------------------------------------- */

struct sim_node {
    double mean_ms;  /* leaves: nominal mean */
    double shift_ms; /* leaves: fixed part */
    enum sim_fault_kind fault;
    double fault_value;
    /* erratic: a two-phase hyperexponential with the random part's mean mu and squared
     * coefficient of variation value² (an exponential has 1): phase 1 (probability h2_p)
     * has mean h2_a·mu, phase 2 h2_b·mu; see sim_fault_set */
    double h2_p, h2_a, h2_b;
    int station; /* leaves: index of the station serving it, −1 when none */
};

/* A request in or bound for a station: arrival, service start, departure (ns). */
struct st_entry {
    int64_t a, s, e;
};

struct sim_station {
    char name[DQ_DIAGRAM_MAX_NAME + 1];
    int servers;
    struct sim_dist dist;
    uint32_t capacity; /* K as given, 0 = no limit */
    uint32_t limit;    /* K, or SIM_STATION_MAX_K */
    size_t n_leaves;
    int64_t *free_at; /* per server: when its last request leaves */
    /* min-heap on e of the requests that leave after the last arrival simulated (those
     * that left earlier are folded into the counters): in or bound for the station */
    struct st_entry *heap;
    size_t heap_n, heap_cap;
    int64_t busy_ns; /* service time of every request admitted, whole */
    uint64_t admitted, rejected, overflow;
};

struct sim_model {
    const struct dq_diagram *d;
    size_t count;
    struct sim_node *nodes;
    double ns_per_ms; /* 1e6 × time_scale */
    int root;
    size_t max_instances;
    struct sim_station *stations;
    size_t n_stations;
    int64_t last_at; /* arrival of the last request simulated (stations' order) */
    int any_request; /* last_at is set */
};

void sim_options_default(struct sim_options *o) {
    o->seed = 1;
    o->mean_lo_ms = SIM_DEFAULT_MEAN_LO_MS;
    o->mean_hi_ms = SIM_DEFAULT_MEAN_HI_MS;
    o->shift_frac = SIM_DEFAULT_SHIFT_FRAC;
    o->time_scale = 1.0;
}

/* FNV-1a: a leaf's parameters depend on the seed and its name only. */
static uint64_t name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    }
    return h;
}

/*
 * Depth and instance count of every node, children first, by an explicit-stack DFS
 * (the diagram is acyclic; references can chain far deeper than the C stack should go).
 */
static int model_measure(struct sim_model *m) {
    size_t n = m->count;
    double *inst = calloc(n, sizeof *inst);
    int *depth = calloc(n, sizeof *depth);
    unsigned char *state = calloc(n, 1);
    int *stack = malloc(n * sizeof *stack);
    size_t *next = malloc(n * sizeof *next);
    int rc = DQ_OK;
    if (!inst || !depth || !state || !stack || !next) {
        rc = dq_fail(DQ_ENOMEM, "out of memory measuring the diagram");
        goto out;
    }
    for (size_t s = 0; s < n; s++) {
        if (state[s]) {
            continue;
        }
        size_t top = 0;
        stack[top] = (int)s;
        next[top++] = 0;
        state[s] = 1;
        while (top > 0) {
            int i = stack[top - 1];
            const struct dq_diagram_node *nd = dq_diagram_node(m->d, i);
            if (next[top - 1] < nd->n_children) {
                int c = nd->children[next[top - 1]++];
                if (state[c] == 0) {
                    state[c] = 1;
                    stack[top] = c;
                    next[top++] = 0;
                }
                continue;
            }
            double total = 0;
            int dmax = 0;
            for (size_t k = 0; k < nd->n_children; k++) {
                int c = nd->children[k];
                if (nd->kind == DQ_NODE_CHOICE) {
                    total = inst[c] > total ? inst[c] : total;
                } else {
                    total += inst[c];
                }
                dmax = depth[c] > dmax ? depth[c] : dmax;
            }
            inst[i] = total + (nd->name ? 1 : 0);
            depth[i] = dmax + 1;
            state[i] = 2;
            top--;
        }
    }
    if (depth[m->root] > SIM_MAX_DEPTH) {
        rc = dq_fail(DQ_ERANGE, "a request through %s nests %d deep (at most %d)",
                     dq_diagram_node(m->d, m->root)->name, depth[m->root], SIM_MAX_DEPTH);
    } else if (inst[m->root] > SIM_MAX_INSTANCES) {
        rc = dq_fail(DQ_ERANGE, "a request through %s yields %.0f instances (at most %d)",
                     dq_diagram_node(m->d, m->root)->name, inst[m->root], SIM_MAX_INSTANCES);
    } else {
        m->max_instances = (size_t)inst[m->root];
    }
out:
    free(inst);
    free(depth);
    free(state);
    free(stack);
    free(next);
    return rc;
}

int sim_model_create(const struct dq_diagram *d, const struct sim_options *opt,
                     struct sim_model **out) {
    *out = NULL;
    if (!d || !opt) {
        return dq_fail(DQ_EINVAL, "no diagram or options");
    }
    if (!(opt->mean_lo_ms > 0) || !(opt->mean_hi_ms >= opt->mean_lo_ms) ||
        !isfinite(opt->mean_hi_ms)) {
        return dq_fail(DQ_EINVAL, "leaf mean band [%g, %g] ms: need 0 < lo ≤ hi", opt->mean_lo_ms,
                       opt->mean_hi_ms);
    }
    if (!(opt->shift_frac >= 0 && opt->shift_frac < 1)) {
        return dq_fail(DQ_EINVAL, "shift fraction %g not in [0, 1)", opt->shift_frac);
    }
    if (!(opt->time_scale > 0) || !isfinite(opt->time_scale)) {
        return dq_fail(DQ_EINVAL, "time scale %g must be > 0", opt->time_scale);
    }
    size_t roots = dq_diagram_root_count(d);
    if (roots == 0) {
        return dq_fail(DQ_EINVAL, "the diagram has no root");
    }
    struct sim_model *m = calloc(1, sizeof *m);
    if (!m) {
        return dq_fail(DQ_ENOMEM, "out of memory");
    }
    m->d = d;
    m->count = dq_diagram_node_count(d);
    m->ns_per_ms = 1e6 * opt->time_scale;
    m->root = dq_diagram_root(d, roots - 1);
    m->nodes = calloc(m->count ? m->count : 1, sizeof *m->nodes);
    if (!m->nodes) {
        free(m);
        return dq_fail(DQ_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct dq_diagram_node *nd = dq_diagram_node(d, (int)i);
        m->nodes[i].station = -1;
        if (nd->kind != DQ_NODE_OUTCOME) {
            continue;
        }
        struct sim_rng r;
        sim_rng_seed(&r, opt->seed ^ name_hash(nd->name));
        double mean = opt->mean_lo_ms + (opt->mean_hi_ms - opt->mean_lo_ms) * sim_rng_uniform(&r);
        m->nodes[i].mean_ms = mean;
        m->nodes[i].shift_ms = mean * opt->shift_frac;
    }
    int rc = model_measure(m);
    if (rc) {
        sim_model_destroy(m);
        return rc;
    }
    *out = m;
    return DQ_OK;
}

void sim_model_destroy(struct sim_model *m) {
    if (!m) {
        return;
    }
    for (size_t k = 0; k < m->n_stations; k++) {
        free(m->stations[k].free_at);
        free(m->stations[k].heap);
    }
    free(m->stations);
    free(m->nodes);
    free(m);
}

const struct dq_diagram *sim_model_diagram(const struct sim_model *m) {
    return m->d;
}

int sim_model_root(const struct sim_model *m) {
    return m->root;
}

int sim_model_set_root(struct sim_model *m, int node) {
    const struct dq_diagram_node *nd = dq_diagram_node(m->d, node);
    if (!nd || !nd->name) {
        return dq_fail(DQ_EINVAL, "node %d is not a named node", node);
    }
    int old = m->root;
    m->root = node;
    int rc = model_measure(m);
    if (rc) {
        m->root = old;
        model_measure(m);
    }
    return rc;
}

size_t sim_model_max_instances(const struct sim_model *m) {
    return m->max_instances;
}

int sim_model_node(const struct sim_model *m, int i, struct sim_node_info *info) {
    const struct dq_diagram_node *nd = dq_diagram_node(m->d, i);
    if (!nd) {
        return dq_fail(DQ_EINVAL, "node %d out of range", i);
    }
    const struct sim_node *sn = &m->nodes[i];
    info->name = nd->name;
    info->kind = nd->kind;
    info->mean_ms = sn->mean_ms;
    info->shift_ms = sn->shift_ms;
    info->fault = sn->fault;
    info->fault_value = sn->fault_value;
    info->station = sn->station;
    return DQ_OK;
}

static int find_named(const struct sim_model *m, const char *name) {
    int i = name ? dq_diagram_find(m->d, name) : -1;
    if (i < 0) {
        return dq_fail(DQ_ENOTFOUND, "no probe `%s` in the diagram", name ? name : "(null)");
    }
    return i;
}

int sim_fault_set(struct sim_model *m, const char *name, enum sim_fault_kind kind, double value) {
    int i = find_named(m, name);
    if (i < 0) {
        return i;
    }
    struct sim_node *sn = &m->nodes[i];
    int leaf = dq_diagram_node(m->d, i)->kind == DQ_NODE_OUTCOME;
    switch (kind) {
    case SIM_FAULT_SLOW:
        if (!(value >= 0) || !isfinite(value) || value > 1e7) {
            return dq_fail(DQ_EINVAL, "slow %g ms: need 0 … 1e7", value);
        }
        break;
    case SIM_FAULT_ERRATIC:
        if (!leaf) {
            return dq_fail(DQ_EINVAL, "erratic applies to outcomes (leaves); `%s` is a %s", name,
                           dq_node_kind_name(dq_diagram_node(m->d, i)->kind));
        }
        if (!(value >= 1) || value > 1000) {
            return dq_fail(DQ_EINVAL, "erratic factor %g: need 1 … 1000", value);
        }
        if (sn->station >= 0 && (m->stations[sn->station].dist.kind == SIM_DIST_UNIFORM ||
                                 m->stations[sn->station].dist.kind == SIM_DIST_CONST)) {
            return dq_fail(DQ_EINVAL,
                           "erratic: `%s` is served by station %s, whose service time has no "
                           "exponential part to make erratic (use exp or shexp)",
                           name, m->stations[sn->station].name);
        }
        {
            /* a two-phase hyperexponential with the random part's mean mu and squared
             * coefficient of variation c² = value²: with probability q = 1/(c² + 1) a pass
             * is slow (mean b·mu), else quick (mean a·mu). q is half the largest q that
             * can reach c²: outliers twice as frequent as with balanced means, so that a
             * window of a few dozen passes sees some. From (1−q)a + qb = 1 and
             * (1−q)a² + qb² = (c² + 1)/2 = s: a = 1 − √(q(s − 1)/(1 − q)). */
            double c2 = value * value, s = (c2 + 1) / 2, q = 1 / (c2 + 1);
            double a = 1 - sqrt(q * (s - 1) / (1 - q));
            double b = (1 - (1 - q) * a) / q;
            sn->h2_p = 1 - q;
            sn->h2_a = a;
            sn->h2_b = b;
        }
        break;
    case SIM_FAULT_FAIL:
        if (!(value >= 0 && value <= 1)) {
            return dq_fail(DQ_EINVAL, "fail probability %g: need 0 … 1", value);
        }
        break;
    default:
        return dq_fail(DQ_EINVAL, "unknown fault kind %d", (int)kind);
    }
    sn->fault = kind;
    sn->fault_value = value;
    return DQ_OK;
}

int sim_fault_clear(struct sim_model *m, const char *name) {
    int i = find_named(m, name);
    if (i < 0) {
        return i;
    }
    m->nodes[i].fault = SIM_FAULT_NONE;
    m->nodes[i].fault_value = 0;
    return DQ_OK;
}

void sim_fault_clear_all(struct sim_model *m) {
    for (size_t i = 0; i < m->count; i++) {
        m->nodes[i].fault = SIM_FAULT_NONE;
        m->nodes[i].fault_value = 0;
    }
}

int sim_fault_parse_kind(const char *s, size_t n, enum sim_fault_kind *kind) {
    static const struct {
        const char *word;
        enum sim_fault_kind kind;
    } words[] = {
        {"slow", SIM_FAULT_SLOW}, {"erratic", SIM_FAULT_ERRATIC}, {"fail", SIM_FAULT_FAIL}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strlen(words[i].word) == n && memcmp(words[i].word, s, n) == 0) {
            *kind = words[i].kind;
            return 0;
        }
    }
    return -1;
}

const char *sim_fault_name(enum sim_fault_kind kind) {
    switch (kind) {
    case SIM_FAULT_SLOW:
        return "slow";
    case SIM_FAULT_ERRATIC:
        return "erratic";
    case SIM_FAULT_FAIL:
        return "fail";
    default:
        return "none";
    }
}

/* ---- request walk -------------------------------------------------------------------- */

struct walk {
    struct sim_model *m;
    int64_t at; /* the request's arrival on the stations' time line */
    struct sim_rng *rng;
    struct sim_instance *out;
    size_t cap;
    size_t n;
    int full;
};

/* Clamped to 10^13 ns (2.8 hours): a request has at most SIM_MAX_INSTANCES passes, so its
 * sums stay below 10^18 ns, far from overflow. */
static int64_t ms_to_ns(const struct sim_model *m, double ms) {
    double ns = ms * m->ns_per_ms;
    return ns < 1e13 ? (int64_t)llround(ns) : (int64_t)10000000000000LL;
}

/* The exponential part of a delay with mean mu, or its erratic mixture. */
static double random_part(const struct sim_node *sn, double mu, double u_branch, double u_exp) {
    if (sn->fault == SIM_FAULT_ERRATIC) {
        return exp_from(u_exp, u_branch < sn->h2_p ? sn->h2_a * mu : sn->h2_b * mu);
    }
    return exp_from(u_exp, mu);
}

/* A station's service time for a pass of leaf sn (model ms, before a slow fault). */
static double service_ms(const struct sim_dist *d, const struct sim_node *sn, double u_branch,
                         double u_exp) {
    switch (d->kind) {
    case SIM_DIST_UNIFORM:
        return d->p1 + (d->p2 - d->p1) * u_exp;
    case SIM_DIST_CONST:
        return d->p1;
    case SIM_DIST_SHEXP:
        return d->p1 + random_part(sn, d->p2 - d->p1, u_branch, u_exp);
    case SIM_DIST_EXP:
    default:
        return random_part(sn, d->p1, u_branch, u_exp);
    }
}

/* One leaf pass: its delay in model ms (at a station: its service time); *failed from
 * its failure coin. Always three draws. */
static double leaf_delay(const struct sim_model *m, int i, struct sim_rng *rng, int *failed) {
    const struct sim_node *sn = &m->nodes[i];
    double u_branch = sim_rng_uniform(rng);
    double u_exp = sim_rng_uniform(rng);
    double u_fail = sim_rng_uniform(rng);
    double ms;
    if (sn->station >= 0) {
        ms = service_ms(&m->stations[sn->station].dist, sn, u_branch, u_exp);
    } else {
        ms = sn->shift_ms + random_part(sn, sn->mean_ms - sn->shift_ms, u_branch, u_exp);
    }
    if (sn->fault == SIM_FAULT_SLOW) {
        ms += sn->fault_value;
    }
    *failed = sn->fault == SIM_FAULT_FAIL && u_fail < sn->fault_value;
    return ms;
}

static void emit(struct walk *w, int i, int64_t b, int64_t e, int64_t wait, int failed) {
    if (w->n >= w->cap) {
        w->full = 1;
        return;
    }
    w->out[w->n++] = (struct sim_instance){
        .node = i, .begin_ns = b, .end_ns = e, .wait_ns = wait, .failed = failed};
}

/* ---- station state --------------------------------------------------------------------- */

static void heap_push_entry(struct sim_station *st, struct st_entry x) {
    size_t i = st->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (st->heap[parent].e <= x.e) {
            break;
        }
        st->heap[i] = st->heap[parent];
        i = parent;
    }
    st->heap[i] = x;
}

static void heap_pop_min(struct sim_station *st) {
    struct st_entry last = st->heap[--st->heap_n];
    size_t i = 0, n = st->heap_n;
    if (n == 0) {
        return;
    }
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && st->heap[c + 1].e < st->heap[c].e) {
            c++;
        }
        if (st->heap[c].e >= last.e) {
            break;
        }
        st->heap[i] = st->heap[c];
        i = c;
    }
    st->heap[i] = last;
}

/* Entries of the subtree at i that leave at or before t (the heap's order prunes the
 * rest); recursion depth is the heap's height, at most 17 levels. */
static size_t heap_count_le(const struct sim_station *st, size_t i, int64_t t) {
    if (i >= st->heap_n || st->heap[i].e > t) {
        return 0;
    }
    return 1 + heap_count_le(st, 2 * i + 1, t) + heap_count_le(st, 2 * i + 2, t);
}

/*
 * A pass of leaf i at its station, reached at t0 (ns from the request's start): the
 * request queues FIFO, takes the server that frees first and leaves after its service;
 * or it finds the station full and fails at once. Returns the pass's end; sets *failed
 * and *wait.
 */
static int64_t station_pass(struct walk *w, int i, int64_t t0, int *failed, int64_t *wait) {
    struct sim_model *m = w->m;
    struct sim_station *st = &m->stations[m->nodes[i].station];
    int fail = 0;
    int64_t service = ms_to_ns(m, leaf_delay(m, i, w->rng, &fail));
    int64_t a = w->at + t0;
    size_t in = st->heap_n - heap_count_le(st, 0, a); /* in the station at a */
    *wait = 0;
    if (in >= st->limit || st->heap_n >= st->heap_cap) {
        st->rejected++;
        st->overflow += in < st->limit;
        *failed = 1;
        return t0;
    }
    int j = 0;
    for (int k = 1; k < st->servers; k++) {
        if (st->free_at[k] < st->free_at[j]) {
            j = k;
        }
    }
    int64_t start = st->free_at[j] > a ? st->free_at[j] : a;
    int64_t e = start + service;
    st->free_at[j] = e;
    heap_push_entry(st, (struct st_entry){.a = a, .s = start, .e = e});
    st->busy_ns += service;
    st->admitted++;
    *wait = start - a;
    *failed = fail;
    return t0 + (e - a);
}

/* Walks node i from t0 (ns); returns its end and sets *failed. Depth is bounded by
 * SIM_MAX_DEPTH, checked when the model was built. */
static int64_t walk_node(struct walk *w, int i, int64_t t0, int *failed) {
    struct sim_model *m = w->m;
    const struct dq_diagram_node *nd = dq_diagram_node(m->d, i);
    int64_t end = t0;
    int64_t wait = 0;
    int f = 0;
    switch (nd->kind) {
    case DQ_NODE_OUTCOME:
        if (m->nodes[i].station >= 0) {
            end = station_pass(w, i, t0, &f, &wait);
        } else {
            end = t0 + ms_to_ns(m, leaf_delay(m, i, w->rng, &f));
        }
        break;
    case DQ_NODE_SEQUENCE:
        /* a failed component aborts the rest: later components never start */
        for (size_t k = 0; k < nd->n_children && !f; k++) {
            end = walk_node(w, nd->children[k], end, &f);
        }
        break;
    case DQ_NODE_REFERENCE:
        end = walk_node(w, nd->children[0], t0, &f);
        break;
    case DQ_NODE_ALL:
        /* every branch runs to its end; the join fails when any branch failed */
        for (size_t k = 0; k < nd->n_children; k++) {
            int cf = 0;
            int64_t e = walk_node(w, nd->children[k], t0, &cf);
            end = e > end ? e : end;
            f |= cf;
        }
        break;
    case DQ_NODE_FIRST: {
        size_t mark = w->n;
        int64_t best = INT64_MAX, worst = t0;
        for (size_t k = 0; k < nd->n_children; k++) {
            int cf = 0;
            int64_t e = walk_node(w, nd->children[k], t0, &cf);
            if (!cf && e < best) {
                best = e;
            }
            worst = e > worst ? e : worst;
        }
        f = best == INT64_MAX;
        end = f ? worst : best;
        /* the winner cancels the others: what had not ended by then is never reported */
        size_t keep = mark;
        for (size_t k = mark; k < w->n; k++) {
            if (w->out[k].end_ns <= end) {
                w->out[keep++] = w->out[k];
            }
        }
        w->n = keep;
        break;
    }
    case DQ_NODE_CHOICE: {
        double u = sim_rng_uniform(w->rng), acc = 0;
        size_t pick = nd->n_children - 1;
        for (size_t k = 0; k + 1 < nd->n_children; k++) {
            acc += nd->weights[k];
            if (u < acc) {
                pick = k;
                break;
            }
        }
        end = walk_node(w, nd->children[pick], t0, &f);
        break;
    }
    }
    if (nd->name && nd->kind != DQ_NODE_OUTCOME) {
        /* an inner node's own fault acts after its children: extra processing, or a
         * failure of its own */
        const struct sim_node *sn = &m->nodes[i];
        double u_fail = sim_rng_uniform(w->rng);
        if (sn->fault == SIM_FAULT_SLOW) {
            end += ms_to_ns(m, sn->fault_value);
        } else if (sn->fault == SIM_FAULT_FAIL && u_fail < sn->fault_value) {
            f = 1;
        }
    }
    if (nd->name) {
        emit(w, i, t0, end, wait, f);
    }
    *failed = f;
    return end;
}

int sim_request(struct sim_model *m, struct sim_rng *rng, int64_t at_ns, struct sim_instance *out,
                size_t cap, struct sim_result *res) {
    res->count = 0;
    res->end_ns = 0;
    res->failed = 0;
    if (m->n_stations > 0) {
        if (m->any_request && at_ns < m->last_at) {
            return dq_fail(DQ_EINVAL,
                           "a request arriving at %lld ns after one at %lld ns: with stations, "
                           "requests come in the order of their arrival",
                           (long long)at_ns, (long long)m->last_at);
        }
        /* who left by this arrival leaves the bookkeeping; the counters keep them */
        for (size_t k = 0; k < m->n_stations; k++) {
            struct sim_station *st = &m->stations[k];
            while (st->heap_n > 0 && st->heap[0].e <= at_ns) {
                heap_pop_min(st);
            }
        }
    }
    m->last_at = at_ns;
    m->any_request = 1;
    /* each request draws from its own generator, seeded by one draw of the stream: a
     * fault that cuts a request short does not shift the draws of the requests after it */
    struct sim_rng req;
    sim_rng_seed(&req, sim_rng_next(rng));
    struct walk w = {.m = m, .at = at_ns, .rng = &req, .out = out, .cap = cap};
    int failed = 0;
    int64_t end = walk_node(&w, m->root, 0, &failed);
    res->count = w.n;
    res->end_ns = end;
    res->failed = failed;
    if (w.full) {
        return dq_fail(DQ_EFULL, "a request yields more than %zu instances", cap);
    }
    return DQ_OK;
}

/* ---- protocol state ------------------------------------------------------------------ */

int sim_ctl_init(struct sim_ctl *c, const struct sim_model *m) {
    c->m = m;
    c->running = 1;
    c->dmax_ms = calloc(m->count ? m->count : 1, sizeof *c->dmax_ms);
    if (!c->dmax_ms) {
        return dq_fail(DQ_ENOMEM, "out of memory");
    }
    return DQ_OK;
}

void sim_ctl_release(struct sim_ctl *c) {
    free(c->dmax_ms);
    c->dmax_ms = NULL;
}

int sim_ctl_set(struct sim_ctl *c, const char *name, size_t n, double ms) {
    char buf[DQ_DIAGRAM_MAX_NAME + 1];
    if (n == 0 || n > DQ_DIAGRAM_MAX_NAME) {
        return dq_fail(DQ_ENOTFOUND, "bad probe name length %zu", n);
    }
    if (!(ms >= 0) || ms > WIRE_MAX_CMD_MS) {
        return dq_fail(DQ_EINVAL, "dMax %g ms out of range", ms);
    }
    memcpy(buf, name, n);
    buf[n] = '\0';
    int i = find_named(c->m, buf);
    if (i < 0) {
        return i;
    }
    c->dmax_ms[i] = ms;
    return DQ_OK;
}

int sim_ctl_enable_list(struct sim_ctl *c, const char *list, double default_ms) {
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        double ms = default_ms;
        if (eq && wire_parse_ms(eq + 1, len - nlen - 1, &ms) != 0) {
            return dq_fail(DQ_EINVAL, "bad dMax in `%.*s` (milliseconds, e.g. 100 or 0.5)",
                           (int)len, p);
        }
        if (nlen == 1 && p[0] == '*') {
            for (size_t i = 0; i < c->m->count; i++) {
                if (dq_diagram_node(c->m->d, (int)i)->name) {
                    c->dmax_ms[i] = ms;
                }
            }
        } else {
            if (!wire_name_valid(p, nlen)) {
                return dq_fail(DQ_EINVAL, "bad probe name in `%.*s`", (int)len, p);
            }
            int rc = sim_ctl_set(c, p, nlen, ms);
            if (rc) {
                return rc;
            }
        }
        p = end ? end + 1 : p + len;
    }
    return DQ_OK;
}

size_t sim_ctl_enabled_count(const struct sim_ctl *c) {
    size_t n = 0;
    for (size_t i = 0; i < c->m->count; i++) {
        n += c->dmax_ms[i] > 0;
    }
    return n;
}

/* "200", "0.25": at most 6 decimals, no trailing zeros. */
static int format_ms(char *buf, size_t cap, double ms) {
    int n = snprintf(buf, cap, "%.6f", ms);
    if (n < 0 || (size_t)n >= cap) {
        return -1;
    }
    while (n > 0 && buf[n - 1] == '0') {
        n--;
    }
    if (n > 0 && buf[n - 1] == '.') {
        n--;
    }
    buf[n] = '\0';
    return n;
}

int sim_ctl_state(const struct sim_ctl *c, char *buf, size_t cap) {
    if (cap < SIM_STATE_MAX + 1) {
        return dq_fail(DQ_EFULL, "state buffer of %zu bytes", cap);
    }
    int len = snprintf(buf, cap, "state;running:%d;probes:", c->running ? 1 : 0);
    int first = 1;
    for (size_t i = 0; i < c->m->count; i++) {
        if (!(c->dmax_ms[i] > 0)) {
            continue;
        }
        char ms[64];
        if (format_ms(ms, sizeof ms, c->dmax_ms[i]) < 0) {
            continue;
        }
        const char *name = dq_diagram_node(c->m->d, (int)i)->name;
        size_t need = (first ? 0 : 1) + strlen(name) + 1 + strlen(ms);
        if ((size_t)len + need > SIM_STATE_MAX) {
            break; /* a protocol line has at most SIM_STATE_MAX bytes: leave the rest out */
        }
        len += snprintf(buf + len, cap - (size_t)len, "%s%s=%s", first ? "" : ",", name, ms);
        first = 0;
    }
    buf[len++] = '\n';
    buf[len] = '\0';
    return len;
}

int sim_ctl_apply(struct sim_ctl *c, const char *line, size_t len, char *reply, size_t cap) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    struct wire_cmd cmd;
    if (wire_parse_cmd(line, len, &cmd) != 0) {
        return -1;
    }
    switch (cmd.kind) {
    case WIRE_CMD_START_STUB:
        c->running = 1;
        break;
    case WIRE_CMD_STOP_STUB:
        c->running = 0;
        break;
    case WIRE_CMD_SET_TIMEOUT:
    case WIRE_CMD_TRACE: /* a simulated probe needs no trace pattern: enabled alike */
        (void)sim_ctl_set(c, cmd.name.p, cmd.name.n, cmd.ms); /* unknown: ack, ignore */
        break;
    case WIRE_CMD_CLEAR_TIMEOUT:
        (void)sim_ctl_set(c, cmd.name.p, cmd.name.n, 0);
        break;
    case WIRE_CMD_SYNC:
        break;
    }
    if (cap < len + 6) {
        return -1;
    }
    memcpy(reply, "ack;", 4);
    memcpy(reply + 4, line, len);
    size_t n = len + 4;
    reply[n++] = '\n';
    reply[n] = '\0';
    if (cmd.kind == WIRE_CMD_SYNC) {
        int s = sim_ctl_state(c, reply + n, cap - n);
        if (s < 0) {
            return -1;
        }
        n += (size_t)s;
    }
    return (int)n;
}

int sim_ctl_reports(const struct sim_ctl *c, int node) {
    return c->running && node >= 0 && (size_t)node < c->m->count && c->dmax_ms[node] > 0;
}

/* splitmix64's finaliser: a request number's trace id */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int sim_ctl_format_instance(const struct sim_ctl *c, int node, int64_t start_ns, int64_t end_ns,
                            int failed, uint64_t request, char *buf, size_t cap) {
    if (node < 0 || (size_t)node >= c->m->count || !(c->dmax_ms[node] > 0)) {
        return 0;
    }
    const char *name = dq_diagram_node(c->m->d, node)->name;
    int64_t dmax_ns = (int64_t)llround(c->dmax_ms[node] * 1e6);
    if (dmax_ns < 1) {
        dmax_ns = 1;
    }
    const char *st = failed ? "fa" : "ok";
    if (end_ns - start_ns > dmax_ns) {
        st = "to";
        end_ns = start_ns + dmax_ns;
    }
    int n;
    if (request) {
        uint64_t trace = mix64(request);
        n = snprintf(buf, cap, "n:%s;b:%lld;e:%lld;s:%s;i:%016llx;t:%016llx;a:request=%llu\n", name,
                     (long long)start_ns, (long long)end_ns, st,
                     (unsigned long long)mix64(trace ^ (uint64_t)node), (unsigned long long)trace,
                     (unsigned long long)request);
    } else {
        n = snprintf(buf, cap, "n:%s;b:%lld;e:%lld;s:%s\n", name, (long long)start_ns,
                     (long long)end_ns, st);
    }
    if (n < 0 || (size_t)n >= cap) {
        return dq_fail(DQ_EFULL, "instance line does not fit in %zu bytes", cap);
    }
    return n;
}

/* ---- operator commands ----------------------------------------------------------------- */

/* Next word of [*p, end): skips blanks, returns its length (0 at the end). */
static size_t next_word(const char **p, const char *end, const char **word) {
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t')) {
        s++;
    }
    const char *w = s;
    while (s < end && *s != ' ' && *s != '\t') {
        s++;
    }
    *word = w;
    *p = s;
    return (size_t)(s - w);
}

/* A finite decimal number filling exactly n bytes. */
static int parse_number(const char *s, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) {
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e = NULL;
    double v = strtod(buf, &e);
    if (e != buf + n || !isfinite(v)) {
        return -1;
    }
    *out = v;
    return 0;
}

static int fault_value_check(enum sim_fault_kind kind, double v) {
    switch (kind) {
    case SIM_FAULT_SLOW:
        return v >= 0 && v <= 1e7 ? 0 : dq_fail(DQ_EINVAL, "slow takes 0 … 1e7 ms, not %g", v);
    case SIM_FAULT_ERRATIC:
        return v >= 1 && v <= 1000
                   ? 0
                   : dq_fail(DQ_EINVAL, "erratic takes a factor 1 … 1000, not %g", v);
    case SIM_FAULT_FAIL:
        return v >= 0 && v <= 1 ? 0
                                : dq_fail(DQ_EINVAL, "fail takes a probability 0 … 1, not %g", v);
    default:
        return dq_fail(DQ_EINVAL, "no such fault kind");
    }
}

static int fill_fault(struct sim_user_cmd *cmd, const char *name, size_t nn, const char *kind,
                      size_t kn, const char *val, size_t vn) {
    if (!wire_name_valid(name, nn)) {
        return dq_fail(DQ_EINVAL, "bad probe name `%.*s`", (int)(nn < 64 ? nn : 64), name);
    }
    if (sim_fault_parse_kind(kind, kn, &cmd->fault) != 0) {
        return dq_fail(DQ_EINVAL, "fault kind `%.*s`: use slow, erratic or fail",
                       (int)(kn < 32 ? kn : 32), kind);
    }
    if (parse_number(val, vn, &cmd->value) != 0) {
        return dq_fail(DQ_EINVAL, "fault value `%.*s` is not a number", (int)(vn < 32 ? vn : 32),
                       val);
    }
    int rc = fault_value_check(cmd->fault, cmd->value);
    if (rc) {
        return rc;
    }
    cmd->kind = SIM_USER_FAULT;
    memcpy(cmd->name, name, nn);
    cmd->name[nn] = '\0';
    return 0;
}

int sim_user_parse(const char *line, size_t len, struct sim_user_cmd *cmd) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    const char *p = line, *end = line + len;
    const char *w[5];
    size_t n[5];
    size_t count = 0;
    for (;;) {
        const char *word;
        size_t wn = next_word(&p, end, &word);
        if (wn == 0) {
            break;
        }
        if (count == 5) {
            return dq_fail(DQ_EINVAL, "too many words");
        }
        w[count] = word;
        n[count++] = wn;
    }
    memset(cmd, 0, sizeof *cmd);
#define IS(k, lit) (n[k] == sizeof(lit) - 1 && memcmp(w[k], lit, n[k]) == 0)
    if (count == 0) {
        return dq_fail(DQ_EINVAL, "empty command");
    }
    if (IS(0, "fault")) {
        if (count != 4) {
            return dq_fail(DQ_EINVAL, "usage: fault NAME slow MS | erratic FACTOR | fail PROB");
        }
        return fill_fault(cmd, w[1], n[1], w[2], n[2], w[3], n[3]);
    }
    if (IS(0, "clear")) {
        if (count != 2) {
            return dq_fail(DQ_EINVAL, "usage: clear NAME | clear all");
        }
        if (IS(1, "all")) {
            cmd->kind = SIM_USER_CLEAR_ALL;
            return 0;
        }
        if (!wire_name_valid(w[1], n[1])) {
            return dq_fail(DQ_EINVAL, "bad probe name");
        }
        cmd->kind = SIM_USER_CLEAR;
        memcpy(cmd->name, w[1], n[1]);
        cmd->name[n[1]] = '\0';
        return 0;
    }
    if (IS(0, "rate")) {
        if (count != 2 || parse_number(w[1], n[1], &cmd->value) != 0 || cmd->value < 0 ||
            cmd->value > SIM_MAX_RATE) {
            return dq_fail(DQ_EINVAL, "usage: rate N (requests per second, 0 … %g)", SIM_MAX_RATE);
        }
        cmd->kind = SIM_USER_RATE;
        return 0;
    }
    if (IS(0, "status") && count == 1) {
        cmd->kind = SIM_USER_STATUS;
        return 0;
    }
    if (IS(0, "quit") && count == 1) {
        cmd->kind = SIM_USER_QUIT;
        return 0;
    }
    static const struct {
        const char *word;
        enum sim_user_kind kind;
    } single[] = {{"stations", SIM_USER_STATIONS},
                  {"disconnect", SIM_USER_DISCONNECT},
                  {"reconnect", SIM_USER_RECONNECT},
                  {"mute", SIM_USER_MUTE},
                  {"unmute", SIM_USER_UNMUTE}};
    for (size_t k = 0; k < sizeof single / sizeof single[0]; k++) {
        if (strlen(single[k].word) == n[0] && memcmp(single[k].word, w[0], n[0]) == 0) {
            if (count != 1) {
                return dq_fail(DQ_EINVAL, "%s takes no arguments", single[k].word);
            }
            cmd->kind = single[k].kind;
            return 0;
        }
    }
    if (IS(0, "run")) {
        if (count != 2 || parse_number(w[1], n[1], &cmd->value) != 0 || cmd->value < 0 ||
            cmd->value > 1e7) {
            return dq_fail(DQ_EINVAL, "usage: run SECONDS (simulated, 0 … 1e7)");
        }
        cmd->kind = SIM_USER_RUN;
        return 0;
    }
#undef IS
    return dq_fail(DQ_EINVAL,
                   "unknown command `%.*s` (fault, clear, rate, run, status, stations, "
                   "disconnect, reconnect, mute, unmute, quit)",
                   (int)(n[0] < 32 ? n[0] : 32), w[0]);
}

int sim_fault_spec_parse(const char *spec, struct sim_user_cmd *cmd) {
    memset(cmd, 0, sizeof *cmd);
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2) {
        return dq_fail(DQ_EINVAL,
                       "fault spec `%s`: use NAME:slow:MS, NAME:erratic:FACTOR or "
                       "NAME:fail:PROB",
                       spec);
    }
    return fill_fault(cmd, spec, (size_t)(c1 - spec), c1 + 1, (size_t)(c2 - c1 - 1), c2 + 1,
                      strlen(c2 + 1));
}

/* ---- stations: distributions, specs, setup, accounting ----------------------------------- */

/* Splits [p, end) at the next ':' : the part before it, *p moved past it (or to end). */
static size_t next_field(const char **p, const char *end, const char **field) {
    const char *s = *p;
    const char *c = memchr(s, ':', (size_t)(end - s));
    *field = s;
    *p = c ? c + 1 : end;
    return (size_t)((c ? c : end) - s);
}

static int dist_number(const char *s, size_t n, const char *what, double *out) {
    if (parse_number(s, n, out) != 0 || !(*out >= 0) || *out > SIM_STATION_MAX_MS) {
        return dq_fail(DQ_EINVAL, "%s `%.*s`: need a number of ms in [0, %d]", what,
                       (int)(n < 32 ? n : 32), s, SIM_STATION_MAX_MS);
    }
    return 0;
}

int sim_dist_parse(const char *s, size_t n, struct sim_dist *d) {
    static const char usage[] = "use exp:MEAN, uniform:LO:HI, const:MS or shexp:SHIFT:MEAN (ms)";
    int shown = (int)(n < 64 ? n : 64);
    const char *p = s, *end = s + n, *f[3];
    size_t fn[3], count = 0;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        if (count == 3) {
            return dq_fail(DQ_EINVAL, "service time `%.*s`: too many fields; %s", shown, s, usage);
        }
        f[count] = p;
        fn[count++] = (size_t)((c ? c : end) - p);
        if (!c) {
            break;
        }
        p = c + 1;
    }
    memset(d, 0, sizeof *d);
    static const struct {
        const char *word;
        enum sim_dist_kind kind;
        size_t params;
    } kinds[] = {{"exp", SIM_DIST_EXP, 1},
                 {"uniform", SIM_DIST_UNIFORM, 2},
                 {"const", SIM_DIST_CONST, 1},
                 {"shexp", SIM_DIST_SHEXP, 2}};
    size_t want = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strlen(kinds[k].word) == fn[0] && memcmp(kinds[k].word, f[0], fn[0]) == 0) {
            d->kind = kinds[k].kind;
            want = kinds[k].params + 1;
        }
    }
    if (want == 0) {
        return dq_fail(DQ_EINVAL, "service time `%.*s`: %s", shown, s, usage);
    }
    if (count != want) {
        return dq_fail(DQ_EINVAL, "service time `%.*s`: %.*s takes %zu number%s; %s", shown, s,
                       (int)fn[0], f[0], want - 1, want == 2 ? "" : "s", usage);
    }
    int rc = dist_number(f[1], fn[1], "service time parameter", &d->p1);
    if (!rc && want == 3) {
        rc = dist_number(f[2], fn[2], "service time parameter", &d->p2);
    }
    if (rc) {
        return rc;
    }
    switch (d->kind) {
    case SIM_DIST_EXP:
        return d->p1 > 0 ? 0 : dq_fail(DQ_EINVAL, "exp:MEAN: the mean must be > 0");
    case SIM_DIST_CONST:
        return d->p1 > 0 ? 0 : dq_fail(DQ_EINVAL, "const:MS: the time must be > 0");
    case SIM_DIST_UNIFORM:
        return d->p1 <= d->p2 && d->p2 > 0
                   ? 0
                   : dq_fail(DQ_EINVAL, "uniform:LO:HI: need 0 ≤ LO ≤ HI and HI > 0, not %g, %g",
                             d->p1, d->p2);
    case SIM_DIST_SHEXP:
        return d->p1 < d->p2 ? 0
                             : dq_fail(DQ_EINVAL,
                                       "shexp:SHIFT:MEAN: the mean (%g) must exceed the shift (%g)",
                                       d->p2, d->p1);
    }
    return dq_fail(DQ_EINVAL, "service time: %s", usage);
}

double sim_dist_mean(const struct sim_dist *d) {
    switch (d->kind) {
    case SIM_DIST_UNIFORM:
        return (d->p1 + d->p2) / 2;
    case SIM_DIST_SHEXP:
        return d->p2;
    default:
        return d->p1;
    }
}

int sim_dist_format(const struct sim_dist *d, char *buf, size_t cap) {
    switch (d->kind) {
    case SIM_DIST_UNIFORM:
        return snprintf(buf, cap, "uniform:%g:%g", d->p1, d->p2);
    case SIM_DIST_CONST:
        return snprintf(buf, cap, "const:%g", d->p1);
    case SIM_DIST_SHEXP:
        return snprintf(buf, cap, "shexp:%g:%g", d->p1, d->p2);
    case SIM_DIST_EXP:
    default:
        return snprintf(buf, cap, "exp:%g", d->p1);
    }
}

/* A decimal integer filling exactly n bytes, in [lo, hi]. */
static int parse_uint(const char *s, size_t n, unsigned long lo, unsigned long hi,
                      unsigned long *out) {
    if (n == 0 || n > 9) {
        return -1;
    }
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

static int spec_name(char *dst, const char *s, size_t n, const char *what, const char *spec) {
    if (!wire_name_valid(s, n) || n > DQ_DIAGRAM_MAX_NAME) {
        return dq_fail(DQ_EINVAL, "station `%.64s`: bad %s name `%.*s`", spec, what,
                       (int)(n < 64 ? n : 64), s);
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

int sim_station_spec_parse(const char *spec, struct sim_station_spec *out) {
    static const char usage[] = "use LEAF[,LEAF…][=NAME]:SERVERS:DIST[:K=N], e.g. "
                                "worker_1:1:exp:4:K=50";
    memset(out, 0, sizeof *out);
    const char *end = spec + strlen(spec);
    const char *p = spec, *head, *srv;
    size_t hn = next_field(&p, end, &head);
    if (p == end) {
        return dq_fail(DQ_EINVAL, "station `%.64s`: %s", spec, usage);
    }
    size_t sn = next_field(&p, end, &srv);
    if (p == end) {
        return dq_fail(DQ_EINVAL, "station `%.64s`: no service time; %s", spec, usage);
    }
    /* LEAF[,LEAF…][=NAME] */
    const char *eq = memchr(head, '=', hn);
    size_t ln = eq ? (size_t)(eq - head) : hn;
    const char *l = head, *lend = head + ln;
    for (;;) {
        const char *comma = memchr(l, ',', (size_t)(lend - l));
        size_t n = (size_t)((comma ? comma : lend) - l);
        if (out->n_leaves == SIM_STATION_MAX_LEAVES) {
            return dq_fail(DQ_EINVAL, "station `%.64s`: at most %d leaves", spec,
                           SIM_STATION_MAX_LEAVES);
        }
        int rc = spec_name(out->leaves[out->n_leaves], l, n, "leaf", spec);
        if (rc) {
            return rc;
        }
        for (size_t k = 0; k < out->n_leaves; k++) {
            if (strcmp(out->leaves[k], out->leaves[out->n_leaves]) == 0) {
                return dq_fail(DQ_EINVAL, "station `%.64s`: leaf %s named twice", spec,
                               out->leaves[k]);
            }
        }
        out->n_leaves++;
        if (!comma) {
            break;
        }
        l = comma + 1;
    }
    int rc = eq ? spec_name(out->name, eq + 1, hn - ln - 1, "station", spec)
                : spec_name(out->name, out->leaves[0], strlen(out->leaves[0]), "station", spec);
    if (rc) {
        return rc;
    }
    unsigned long v;
    if (parse_uint(srv, sn, 1, SIM_STATION_MAX_SERVERS, &v) != 0) {
        return dq_fail(DQ_EINVAL, "station `%.64s`: servers `%.*s`: need an integer 1 … %d", spec,
                       (int)(sn < 32 ? sn : 32), srv, SIM_STATION_MAX_SERVERS);
    }
    out->servers = (int)v;
    /* DIST[:K=N]: K=N is the last field when there is one */
    const char *dist = p;
    size_t dn = (size_t)(end - p);
    const char *last = dn ? memchr(dist, ':', dn) : NULL;
    for (const char *c = last; c; c = memchr(c + 1, ':', (size_t)(end - c - 1))) {
        last = c;
    }
    if (last && end - last >= 3 && (last[1] == 'K' || last[1] == 'k') && last[2] == '=') {
        size_t kn = (size_t)(end - last - 3);
        if (parse_uint(last + 3, kn, 0, SIM_STATION_MAX_K, &v) != 0) {
            return dq_fail(DQ_EINVAL,
                           "station `%.64s`: K=`%.*s`: need an integer 0 … %d (0: no "
                           "limit)",
                           spec, (int)(kn < 32 ? kn : 32), last + 3, SIM_STATION_MAX_K);
        }
        out->capacity = (uint32_t)v;
        dn = (size_t)(last - dist);
    }
    rc = sim_dist_parse(dist, dn, &out->dist);
    if (rc) {
        return dq_fail(rc, "station `%.64s`: %s", spec, dq_last_error());
    }
    return 0;
}

int sim_station_add(struct sim_model *m, const struct sim_station_spec *spec) {
    if (spec->n_leaves == 0 || spec->n_leaves > SIM_STATION_MAX_LEAVES || spec->servers < 1 ||
        spec->servers > SIM_STATION_MAX_SERVERS || spec->capacity > SIM_STATION_MAX_K) {
        return dq_fail(DQ_EINVAL, "station %.64s: bad spec", spec->name);
    }
    char text[64];
    int leaves[SIM_STATION_MAX_LEAVES];
    if (sim_dist_format(&spec->dist, text, sizeof text) < 0 || !(sim_dist_mean(&spec->dist) > 0)) {
        return dq_fail(DQ_EINVAL, "station %.64s: bad service time", spec->name);
    }
    if (!wire_name_valid(spec->name, strlen(spec->name))) {
        return dq_fail(DQ_EINVAL, "bad station name `%.64s`", spec->name);
    }
    if (sim_model_find_station(m, spec->name) >= 0) {
        return dq_fail(DQ_EINVAL, "station %s is defined twice", spec->name);
    }
    int exp_part = spec->dist.kind == SIM_DIST_EXP || spec->dist.kind == SIM_DIST_SHEXP;
    for (size_t k = 0; k < spec->n_leaves; k++) {
        int i = dq_diagram_find(m->d, spec->leaves[k]);
        if (i < 0) {
            return dq_fail(DQ_ENOTFOUND, "station %s: no leaf `%s` in the diagram", spec->name,
                           spec->leaves[k]);
        }
        const struct dq_diagram_node *nd = dq_diagram_node(m->d, i);
        if (nd->kind != DQ_NODE_OUTCOME) {
            return dq_fail(DQ_EINVAL, "station %s: `%s` is a %s, not an outcome (leaf)", spec->name,
                           spec->leaves[k], dq_node_kind_name(nd->kind));
        }
        if (m->nodes[i].station >= 0) {
            return dq_fail(DQ_EINVAL, "station %s: leaf %s is already served by station %s",
                           spec->name, spec->leaves[k], m->stations[m->nodes[i].station].name);
        }
        for (size_t j = 0; j < k; j++) {
            if (leaves[j] == i) {
                return dq_fail(DQ_EINVAL, "station %s: leaf %s named twice", spec->name,
                               spec->leaves[k]);
            }
        }
        if (m->nodes[i].fault == SIM_FAULT_ERRATIC && !exp_part) {
            return dq_fail(DQ_EINVAL,
                           "station %s: leaf %s is erratic, and %s has no exponential part",
                           spec->name, spec->leaves[k], text);
        }
        leaves[k] = i;
    }
    uint32_t limit = spec->capacity ? spec->capacity : SIM_STATION_MAX_K;
    struct sim_station st = {.servers = spec->servers,
                             .dist = spec->dist,
                             .capacity = spec->capacity,
                             .limit = limit,
                             .n_leaves = spec->n_leaves,
                             .heap_cap = (size_t)limit + SIM_STATION_SLACK};
    snprintf(st.name, sizeof st.name, "%s", spec->name);
    st.free_at = malloc((size_t)spec->servers * sizeof *st.free_at);
    st.heap = malloc(st.heap_cap * sizeof *st.heap);
    struct sim_station *grown = realloc(m->stations, (m->n_stations + 1) * sizeof *grown);
    if (!st.free_at || !st.heap || !grown) {
        free(st.free_at);
        free(st.heap);
        if (grown) {
            m->stations = grown;
        }
        return dq_fail(DQ_ENOMEM, "out of memory for station %s", spec->name);
    }
    for (int k = 0; k < st.servers; k++) {
        st.free_at[k] = INT64_MIN;
    }
    m->stations = grown;
    int index = (int)m->n_stations++;
    m->stations[index] = st;
    for (size_t k = 0; k < spec->n_leaves; k++) {
        m->nodes[leaves[k]].station = index;
    }
    return index;
}

size_t sim_model_station_count(const struct sim_model *m) {
    return m->n_stations;
}

int sim_model_find_station(const struct sim_model *m, const char *name) {
    for (size_t k = 0; k < m->n_stations; k++) {
        if (strcmp(m->stations[k].name, name) == 0) {
            return (int)k;
        }
    }
    return dq_fail(DQ_ENOTFOUND, "no station `%.64s`", name);
}

int sim_station_info(const struct sim_model *m, int k, struct sim_station_info *info) {
    if (k < 0 || (size_t)k >= m->n_stations) {
        return dq_fail(DQ_EINVAL, "station %d out of range", k);
    }
    const struct sim_station *st = &m->stations[k];
    info->name = st->name;
    info->servers = st->servers;
    info->dist = st->dist;
    info->capacity = st->capacity;
    info->n_leaves = st->n_leaves;
    return DQ_OK;
}

int sim_station_stats(const struct sim_model *m, int k, int64_t t_ns,
                      struct sim_station_stats *out) {
    if (k < 0 || (size_t)k >= m->n_stations) {
        return dq_fail(DQ_EINVAL, "station %d out of range", k);
    }
    if (m->any_request && t_ns < m->last_at) {
        return dq_fail(DQ_EINVAL,
                       "station counters at %lld ns: the last request simulated arrived later "
                       "(%lld ns)",
                       (long long)t_ns, (long long)m->last_at);
    }
    const struct sim_station *st = &m->stations[k];
    /* whoever is still in the heap leaves after the last arrival; take out what of their
     * service lies at or after t */
    int64_t busy = st->busy_ns;
    uint64_t served = st->admitted, in = 0;
    for (size_t i = 0; i < st->heap_n; i++) {
        const struct st_entry *x = &st->heap[i];
        if (x->e <= t_ns) {
            continue;
        }
        busy -= x->e - (x->s > t_ns ? x->s : t_ns);
        served--;
        in += x->a <= t_ns;
    }
    *out = (struct sim_station_stats){.t_ns = t_ns,
                                      .servers = st->servers,
                                      .busy_ns = busy,
                                      .served = served,
                                      .rejected = st->rejected,
                                      .in_station = in,
                                      .overflow = st->overflow};
    return DQ_OK;
}

double sim_station_utilisation(const struct sim_station_stats *from,
                               const struct sim_station_stats *to) {
    int64_t len = to->t_ns - from->t_ns;
    if (len <= 0 || to->servers <= 0) {
        return 0;
    }
    return (double)(to->busy_ns - from->busy_ns) / ((double)to->servers * (double)len);
}

void sim_stations_reset(struct sim_model *m) {
    for (size_t k = 0; k < m->n_stations; k++) {
        struct sim_station *st = &m->stations[k];
        for (int j = 0; j < st->servers; j++) {
            st->free_at[j] = INT64_MIN;
        }
        st->heap_n = 0;
        st->busy_ns = 0;
        st->admitted = st->rejected = st->overflow = 0;
    }
    m->last_at = 0;
    m->any_request = 0;
}
