/*
 * search_test_util.h: a tiny deterministic simulator for the search tests. It runs
 * instances through a node whose children are "stages" (sequence), "branches"
 * (all-to-finish, first-to-finish) or "alternatives" (choice), each with its own delay
 * distribution and failure probability, and collects per-window statistics exactly as
 * the daemon does (controller/core/probes.c: counts by status, Σd and Σd² per window, mean
 * and ÷n variance at close), pooled with search_stats_add_window, plus, on request, the
 * aggregated observed ΔQs built with dq_from_samples.
 *
 * Everything is static: each test executable is one translation unit including check.h.
 */
#ifndef SEARCH_TEST_UTIL_H
#define SEARCH_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_search.h"

#define SIM_MAX 32
#define SIM_X SIM_MAX /* index of the parent in per-node arrays */
#define SIM_K (-1)    /* ΔQ grid: 0.5 ms bins … */
#define SIM_N 4096    /* … up to 2.048 s */

/* splitmix64: small, seeded, the same on every platform. */
struct srng {
    uint64_t s;
};

static inline uint64_t srng_next(struct srng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double srng_unit(struct srng *r) {
    return (double)(srng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Exponential with the given mean. */
static inline double srng_exp(struct srng *r, double mean) {
    return -mean * log1p(-srng_unit(r));
}

/* Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin–Hall). */
static inline double srng_normal(struct srng *r) {
    double s = 0.0;
    for (int i = 0; i < 12; i++) {
        s += srng_unit(r);
    }
    return s - 6.0;
}

enum sim_dist { SIM_EXP = 0, SIM_NORMAL = 1 };

struct sim_stage {
    enum sim_dist dist;
    double mean;      /* seconds */
    double sd;        /* SIM_NORMAL: standard deviation (clipped at 0) */
    double p_fail;    /* probability of failing (counted fa) */
    double spike_p;   /* probability of an extra delay … */
    double spike_add; /* … of this many seconds (an erratic stage) */
    double weight;    /* choice: probability of being chosen */
};

struct sim {
    enum dq_node_kind kind;
    size_t n;
    struct sim_stage st[SIM_MAX];
    double shared_sd; /* a per-instance common delay added to every stage: dependency */
};

/* Per-node accumulators of one run. */
struct sim_acc {
    uint64_t wok, wfa, wto;
    double wsum, wsumsq;
    double *samples;
    size_t ns, cap;
    uint64_t fa;
};

struct sim_result {
    struct search_stats x;
    struct search_child ch[SIM_MAX];
    char names[SIM_MAX][24];
    struct sim_acc acc[SIM_MAX + 1];
    struct dq *dq[SIM_MAX + 1];   /* aggregated observed ΔQs, when asked */
    uint64_t crit_count[SIM_MAX]; /* all: times the branch was last; first: first */
    uint64_t crit_total;
};

static inline double sim_draw(struct srng *r, const struct sim_stage *s, double shared) {
    double d = s->dist == SIM_NORMAL ? s->mean + s->sd * srng_normal(r) : srng_exp(r, s->mean);
    if (s->spike_p > 0.0 && srng_unit(r) < s->spike_p) {
        d += s->spike_add;
    }
    d += shared;
    return d > 0.0 ? d : 0.0;
}

static inline void acc_ok(struct sim_acc *a, double d) {
    a->wok++;
    a->wsum += d;
    a->wsumsq += d * d;
    if (a->ns == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->samples = realloc(a->samples, a->cap * sizeof *a->samples);
        if (!a->samples) {
            abort(); /* test harness: out of memory is not a test result */
        }
    }
    a->samples[a->ns++] = d;
}

/* Closes a window the way controller/core/probes.c does and pools it into *st. */
static inline void acc_close(struct sim_acc *a, struct search_stats *st) {
    double mean = 0.0, var = 0.0;
    if (a->wok > 0) {
        mean = a->wsum / (double)a->wok;
        var = a->wsumsq / (double)a->wok - mean * mean;
        var = var > 0.0 ? var : 0.0;
    }
    if (a->wok + a->wfa + a->wto > 0) {
        search_stats_add_window(st, a->wok, a->wfa, a->wto, mean, var);
    }
    a->fa += a->wfa + a->wto;
    a->wok = a->wfa = a->wto = 0;
    a->wsum = a->wsumsq = 0.0;
}

static inline void sim_free(struct sim_result *res) {
    for (size_t i = 0; i <= SIM_MAX; i++) {
        free(res->acc[i].samples);
        dq_destroy(res->dq[i]);
    }
    memset(res, 0, sizeof *res);
}

/*
 * Runs `windows` windows of `per_window` instances through the node; fills res with the
 * parent's and every child's statistics (children named s0, s1, …, enabled, leaves),
 * and with ΔQs when with_dq.
 */
static inline void sim_run(const struct sim *s, uint64_t seed, int windows, int per_window,
                           int with_dq, struct sim_result *res) {
    struct srng r = {seed};
    memset(res, 0, sizeof *res);
    search_stats_init(&res->x);
    for (size_t i = 0; i < s->n; i++) {
        snprintf(res->names[i], sizeof res->names[i], "s%zu", i);
        res->ch[i].name = res->names[i];
        res->ch[i].enabled = 1;
        res->ch[i].weight = s->st[i].weight;
        search_stats_init(&res->ch[i].stats);
    }
    for (int w = 0; w < windows; w++) {
        for (int k = 0; k < per_window; k++) {
            double shared = s->shared_sd > 0.0 ? fabs(s->shared_sd * srng_normal(&r)) : 0.0;
            if (s->kind == DQ_NODE_SEQUENCE) {
                double total = 0.0;
                int failed = 0;
                for (size_t i = 0; i < s->n && !failed; i++) {
                    if (srng_unit(&r) < s->st[i].p_fail) {
                        res->acc[i].wfa++;
                        failed = 1;
                        break;
                    }
                    double d = sim_draw(&r, &s->st[i], shared);
                    acc_ok(&res->acc[i], d);
                    total += d;
                }
                if (failed) {
                    res->acc[SIM_X].wfa++;
                } else {
                    acc_ok(&res->acc[SIM_X], total);
                }
            } else if (s->kind == DQ_NODE_CHOICE) {
                double u = srng_unit(&r), c = 0.0;
                size_t i = 0;
                for (; i + 1 < s->n; i++) {
                    c += s->st[i].weight;
                    if (u < c) {
                        break;
                    }
                }
                if (srng_unit(&r) < s->st[i].p_fail) {
                    res->acc[i].wfa++;
                    res->acc[SIM_X].wfa++;
                } else {
                    double d = sim_draw(&r, &s->st[i], shared);
                    acc_ok(&res->acc[i], d);
                    acc_ok(&res->acc[SIM_X], d);
                }
            } else { /* all- or first-to-finish */
                int first = s->kind == DQ_NODE_FIRST;
                double best = first ? INFINITY : -INFINITY;
                size_t who = 0;
                int n_ok = 0;
                for (size_t i = 0; i < s->n; i++) {
                    if (srng_unit(&r) < s->st[i].p_fail) {
                        res->acc[i].wfa++;
                        continue;
                    }
                    double d = sim_draw(&r, &s->st[i], shared);
                    acc_ok(&res->acc[i], d);
                    n_ok++;
                    if (first ? d < best : d > best) {
                        best = d;
                        who = i;
                    }
                }
                int ok = first ? n_ok > 0 : n_ok == (int)s->n;
                if (ok) {
                    acc_ok(&res->acc[SIM_X], best);
                    res->crit_count[who]++;
                    res->crit_total++;
                } else {
                    res->acc[SIM_X].wfa++;
                }
            }
        }
        for (size_t i = 0; i < s->n; i++) {
            acc_close(&res->acc[i], &res->ch[i].stats);
        }
        acc_close(&res->acc[SIM_X], &res->x);
    }
    if (with_dq) {
        for (size_t i = 0; i <= SIM_MAX; i++) {
            if (i < s->n || i == SIM_X) {
                struct sim_acc *a = &res->acc[i];
                if (a->ns + a->fa > 0 && dq_from_samples(SIM_K, SIM_N, a->samples, a->ns, a->fa, 0,
                                                         &res->dq[i]) == DQ_OK) {
                    if (i == SIM_X) {
                        res->x.observed = res->dq[i];
                    } else {
                        res->ch[i].stats.observed = res->dq[i];
                    }
                }
            }
        }
    }
}

/* A search input over a simulation's result. */
static inline struct search_input sim_input(const struct sim *s, struct sim_result *res,
                                            enum search_problem prob, const char *name) {
    struct search_input in;
    memset(&in, 0, sizeof in);
    in.name = name;
    in.kind = s->kind;
    in.problem = prob;
    in.stats = res->x;
    in.children = res->ch;
    in.n_children = s->n;
    return in;
}

/* n identical stages of the given distribution. */
static inline void sim_uniform(struct sim *s, enum dq_node_kind kind, size_t n, enum sim_dist dist,
                               double mean, double sd) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        s->st[i].dist = dist;
        s->st[i].mean = mean;
        s->st[i].sd = sd;
        s->st[i].weight = 1.0 / (double)n;
    }
}

#endif /* SEARCH_TEST_UTIL_H */
