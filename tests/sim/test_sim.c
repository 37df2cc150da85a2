/*
 * test_sim.c: the pure part of dqsim (scenarios/sim/sim.h): PRNG, request walk over a
 * diagram (intervals nest, sequences add, all takes the max, first the min, choice by
 * weight), faults (each changes its own node and nothing else), determinism for a seed,
 * dMax and `to` reporting, dqd's commands and their acks through controller/wire/wire.h,
 * and the operator commands of stdin. argv[1] is scenarios/tree27.dq.
 */
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"
#include "wire.h"

static struct dq_diagram *parse(const char *text) {
    struct dq_diagram *d = NULL;
    struct dq_diagram_error err;
    if (dq_diagram_parse(text, strlen(text), &d, &err) != DQ_OK) {
        fprintf(stderr, "parse: %d:%d: %s\n", err.line, err.column, err.text);
        return NULL;
    }
    return d;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static struct sim_model *model(const struct dq_diagram *d, uint64_t seed) {
    struct sim_options o;
    sim_options_default(&o);
    o.seed = seed;
    struct sim_model *m = NULL;
    if (sim_model_create(d, &o, &m) != DQ_OK) {
        fprintf(stderr, "model: %s\n", dq_last_error());
    }
    return m;
}

/* The instance of node `node` in a request, or NULL. */
static const struct sim_instance *find_inst(const struct sim_instance *in, size_t n, int node) {
    for (size_t k = 0; k < n; k++) {
        if (in[k].node == node) {
            return &in[k];
        }
    }
    return NULL;
}

static int64_t dur(const struct sim_instance *i) {
    return i->end_ns - i->begin_ns;
}

/* ---- PRNG ---------------------------------------------------------------------------- */

static void test_rng(void) {
    struct sim_rng a, b, c;
    sim_rng_seed(&a, 42);
    sim_rng_seed(&b, 42);
    sim_rng_seed(&c, 43);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sim_rng_next(&a), y = sim_rng_next(&b), z = sim_rng_next(&c);
        same &= x == y;
        differ += x != z;
    }
    CHECK(same);
    CHECK(differ > 990);
    double sum = 0, lo = 1, hi = 0, esum = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = sim_rng_uniform(&a);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        esum += sim_rng_exp(&a, 2.0);
    }
    CHECK(lo >= 0 && hi < 1);
    CHECK_NEAR(sum / n, 0.5, 0.005);
    CHECK_NEAR(esum / n, 2.0, 0.03);
    CHECK(sim_rng_exp(&a, 0) == 0);
}

/* ---- walk over tree27 ------------------------------------------------------------------ */

/* parent_of[i]: the nearest named ancestor of probe i (tree27 is a tree of probes). */
static void probe_parents(const struct dq_diagram *d, int *parent_of) {
    size_t n = dq_diagram_node_count(d);
    for (size_t i = 0; i < n; i++) {
        parent_of[i] = -1;
    }
    int kids[64];
    for (size_t j = 0; j < dq_diagram_probe_count(d); j++) {
        int p = dq_diagram_probe(d, j);
        size_t k = dq_diagram_probe_children(d, p, kids, 64);
        for (size_t c = 0; c < k && c < 64; c++) {
            parent_of[kids[c]] = p;
        }
    }
}

static void test_tree27(const char *path) {
    char *text = slurp(path);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) {
        return;
    }
    struct dq_diagram *d = parse(text);
    free(text);
    CHECK(d != NULL);
    if (!d) {
        return;
    }
    /* the diagram the e2e tests rely on: 41 probes, 27 leaves, one all-to-finish */
    size_t leaves = 0, alls = 0;
    for (size_t j = 0; j < dq_diagram_probe_count(d); j++) {
        const struct dq_diagram_node *nd = dq_diagram_node(d, dq_diagram_probe(d, j));
        leaves += nd->kind == DQ_NODE_OUTCOME;
        alls += nd->kind == DQ_NODE_ALL;
    }
    CHECK_INT((int)dq_diagram_probe_count(d), 41);
    CHECK_INT((int)leaves, 27);
    CHECK_INT((int)alls, 1);

    struct sim_model *m = model(d, 7);
    CHECK(m != NULL);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    CHECK_INT((int)sim_model_max_instances(m), 41);
    CHECK_STR(dq_diagram_node(d, sim_model_root(m))->name, "root");

    /* every leaf's mean lies in the default band, and the shift is half of it */
    for (size_t j = 0; j < dq_diagram_probe_count(d); j++) {
        struct sim_node_info info;
        sim_model_node(m, dq_diagram_probe(d, j), &info);
        if (info.kind == DQ_NODE_OUTCOME) {
            CHECK(info.mean_ms >= SIM_DEFAULT_MEAN_LO_MS && info.mean_ms <= SIM_DEFAULT_MEAN_HI_MS);
            CHECK_NEAR(info.shift_ms, info.mean_ms * SIM_DEFAULT_SHIFT_FRAC, 1e-12);
        }
    }

    size_t n = dq_diagram_node_count(d);
    int *parent_of = malloc(n * sizeof *parent_of);
    probe_parents(d, parent_of);
    int root = dq_diagram_find(d, "root");
    int svc[3] = {dq_diagram_find(d, "front"), dq_diagram_find(d, "core"),
                  dq_diagram_find(d, "store")};
    int front_a = dq_diagram_find(d, "front_a");
    int fa[3] = {dq_diagram_find(d, "front_a1"), dq_diagram_find(d, "front_a2"),
                 dq_diagram_find(d, "front_a3")};
    int fan = dq_diagram_find(d, "core_b_fan");
    int core_b = dq_diagram_find(d, "core_b");
    int cb[3] = {dq_diagram_find(d, "core_b1"), dq_diagram_find(d, "core_b2"),
                 dq_diagram_find(d, "core_b3")};
    int leaf = dq_diagram_find(d, "store_c2");
    struct sim_node_info leaf_info;
    sim_model_node(m, leaf, &leaf_info);

    struct sim_instance in[64];
    struct sim_rng rng;
    sim_rng_seed(&rng, 99);
    int nest_ok = 1, seq_ok = 1, all_ok = 1, count_ok = 1, order_ok = 1;
    double leaf_sum = 0, leaf_min = 1e18;
    int reqs = 20000;
    for (int r = 0; r < reqs; r++) {
        struct sim_result res;
        CHECK(sim_request(m, &rng, in, 64, &res) == DQ_OK);
        count_ok &= res.count == 41 && !res.failed;
        /* children before parents; every interval inside its parent's */
        for (size_t k = 0; k < res.count; k++) {
            int p = parent_of[in[k].node];
            if (p < 0) {
                continue;
            }
            const struct sim_instance *pi = find_inst(in, res.count, p);
            nest_ok &= pi && pi->begin_ns <= in[k].begin_ns && in[k].end_ns <= pi->end_ns &&
                       in[k].begin_ns <= in[k].end_ns;
            order_ok &= pi > &in[k];
        }
        /* sequences: back to back, duration = sum */
        const struct sim_instance *ri = find_inst(in, res.count, root);
        int64_t t = ri->begin_ns, sum = 0;
        for (int s = 0; s < 3; s++) {
            const struct sim_instance *si = find_inst(in, res.count, svc[s]);
            seq_ok &= si->begin_ns == t;
            t = si->end_ns;
            sum += dur(si);
        }
        seq_ok &= dur(ri) == sum && ri->end_ns == t && res.end_ns == ri->end_ns;
        seq_ok &= ri->begin_ns == 0;
        const struct sim_instance *ci = find_inst(in, res.count, front_a);
        sum = 0;
        for (int l = 0; l < 3; l++) {
            sum += dur(find_inst(in, res.count, fa[l]));
        }
        seq_ok &= dur(ci) == sum;
        /* all-to-finish: branches start together, the join ends with the last */
        const struct sim_instance *fi = find_inst(in, res.count, fan);
        int64_t mx = 0;
        for (int l = 0; l < 3; l++) {
            const struct sim_instance *li = find_inst(in, res.count, cb[l]);
            all_ok &= li->begin_ns == fi->begin_ns;
            mx = dur(li) > mx ? dur(li) : mx;
        }
        all_ok &= dur(fi) == mx && dur(find_inst(in, res.count, core_b)) == mx;
        const struct sim_instance *li = find_inst(in, res.count, leaf);
        leaf_sum += (double)dur(li) / 1e6;
        leaf_min = (double)dur(li) / 1e6 < leaf_min ? (double)dur(li) / 1e6 : leaf_min;
    }
    CHECK(count_ok);
    CHECK(nest_ok);
    CHECK(order_ok);
    CHECK(seq_ok);
    CHECK(all_ok);
    /* the leaf's delay: shift + exponential; sample mean within 3 % of the nominal mean */
    CHECK_NEAR(leaf_sum / reqs, leaf_info.mean_ms, 0.03 * leaf_info.mean_ms);
    CHECK(leaf_min >= leaf_info.shift_ms - 1e-6);
    CHECK(leaf_min < leaf_info.shift_ms + 0.05 * leaf_info.mean_ms);

    free(parent_of);
    sim_model_destroy(m);
    dq_diagram_destroy(d);
}

/* ---- first-to-finish and choice --------------------------------------------------------- */

static void test_first_and_choice(void) {
    struct dq_diagram *d = parse("x1 = f:race(aa, bb -> cc);");
    struct sim_model *m = d ? model(d, 3) : NULL;
    CHECK(m != NULL);
    if (m) {
        int race = dq_diagram_find(d, "race"), aa = dq_diagram_find(d, "aa"),
            bb = dq_diagram_find(d, "bb"), cc = dq_diagram_find(d, "cc");
        struct sim_instance in[16];
        struct sim_rng rng;
        sim_rng_seed(&rng, 5);
        int ok = 1, aa_lost = 0, aa_won = 0;
        for (int r = 0; r < 5000; r++) {
            struct sim_result res;
            sim_request(m, &rng, in, 16, &res);
            const struct sim_instance *ri = find_inst(in, res.count, race);
            const struct sim_instance *ai = find_inst(in, res.count, aa);
            const struct sim_instance *ci = find_inst(in, res.count, cc);
            const struct sim_instance *bi = find_inst(in, res.count, bb);
            ok &= ri && find_inst(in, res.count, dq_diagram_find(d, "x1")) != NULL;
            /* whatever is reported lies inside the race */
            for (size_t k = 0; k < res.count; k++) {
                ok &= in[k].end_ns <= ri->end_ns;
            }
            /* the race ends with its first finisher: aa, or the chain bb -> cc */
            if (ai && (!ci || ai->end_ns <= ci->end_ns)) {
                ok &= ri->end_ns == ai->end_ns;
                aa_won++;
            } else {
                ok &= ci && ri->end_ns == ci->end_ns && !ai;
                aa_lost++;
            }
            ok &= !ci || (bi && ci->begin_ns == bi->end_ns);
        }
        CHECK(ok);
        /* aa (one leaf) wins most races against two leaves in a row, but not all */
        CHECK(aa_won > 2500 && aa_lost > 0);
        sim_model_destroy(m);
    }
    dq_diagram_destroy(d);

    d = parse("x1 = p:coin[0.25, 0.75](aa, bb);");
    m = d ? model(d, 3) : NULL;
    CHECK(m != NULL);
    if (m) {
        int aa = dq_diagram_find(d, "aa"), coin = dq_diagram_find(d, "coin");
        struct sim_instance in[16];
        struct sim_rng rng;
        sim_rng_seed(&rng, 11);
        int n_aa = 0, ok = 1, reqs = 40000;
        for (int r = 0; r < reqs; r++) {
            struct sim_result res;
            sim_request(m, &rng, in, 16, &res);
            ok &= res.count == 3 && find_inst(in, res.count, coin) != NULL;
            n_aa += find_inst(in, res.count, aa) != NULL;
        }
        CHECK(ok);
        CHECK_NEAR((double)n_aa / reqs, 0.25, 0.015);
        sim_model_destroy(m);
    }
    dq_diagram_destroy(d);
}

/* ---- faults ------------------------------------------------------------------------------ */

#define REQS 4000
#define PER 64

/* Runs REQS requests with a seed; stores each request's instances (tree27-like: each node
 * at most once per request) as per-node durations, −1 for absent. */
static void run_durations(const struct sim_model *m, size_t nodes, uint64_t seed, int64_t *out,
                          int *failed_out) {
    struct sim_rng rng;
    sim_rng_seed(&rng, seed);
    struct sim_instance in[PER];
    for (int r = 0; r < REQS; r++) {
        struct sim_result res;
        sim_request(m, &rng, in, PER, &res);
        for (size_t i = 0; i < nodes; i++) {
            out[(size_t)r * nodes + i] = -1;
            failed_out[(size_t)r * nodes + i] = 0;
        }
        for (size_t k = 0; k < res.count; k++) {
            out[(size_t)r * nodes + (size_t)in[k].node] = dur(&in[k]);
            failed_out[(size_t)r * nodes + (size_t)in[k].node] = in[k].failed;
        }
    }
}

static int is_ancestor(const int *parent_of, int a, int node) {
    for (int p = parent_of[node]; p >= 0; p = parent_of[p]) {
        if (p == a) {
            return 1;
        }
    }
    return 0;
}

static void test_faults(const char *path) {
    char *text = slurp(path);
    struct dq_diagram *d = text ? parse(text) : NULL;
    free(text);
    struct sim_model *m = d ? model(d, 7) : NULL;
    CHECK(m != NULL);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    size_t nodes = dq_diagram_node_count(d);
    int *parent_of = malloc(nodes * sizeof *parent_of);
    probe_parents(d, parent_of);
    int64_t *base = malloc(REQS * nodes * sizeof *base);
    int64_t *got = malloc(REQS * nodes * sizeof *got);
    int *fbase = malloc(REQS * nodes * sizeof *fbase);
    int *fgot = malloc(REQS * nodes * sizeof *fgot);
    run_durations(m, nodes, 1234, base, fbase);

    /* determinism: the same seed gives the same requests, a second model too */
    run_durations(m, nodes, 1234, got, fgot);
    CHECK(memcmp(base, got, REQS * nodes * sizeof *base) == 0);
    struct sim_model *m2 = model(d, 7);
    run_durations(m2, nodes, 1234, got, fgot);
    CHECK(memcmp(base, got, REQS * nodes * sizeof *base) == 0);
    sim_model_destroy(m2);
    /* another model seed: other leaf means, other durations */
    m2 = model(d, 8);
    run_durations(m2, nodes, 1234, got, fgot);
    CHECK(memcmp(base, got, REQS * nodes * sizeof *base) != 0);
    sim_model_destroy(m2);

    /* slow: the leaf takes exactly 20 ms more, its ancestors too, nothing else changes */
    int target = dq_diagram_find(d, "front_b2");
    CHECK(sim_fault_set(m, "front_b2", SIM_FAULT_SLOW, 20) == DQ_OK);
    struct sim_node_info info;
    sim_model_node(m, target, &info);
    CHECK(info.fault == SIM_FAULT_SLOW && info.fault_value == 20);
    run_durations(m, nodes, 1234, got, fgot);
    int slow_ok = 1;
    for (int r = 0; r < REQS; r++) {
        for (size_t i = 0; i < nodes; i++) {
            int64_t b = base[(size_t)r * nodes + i], g = got[(size_t)r * nodes + i];
            if (b < 0) {
                slow_ok &= g < 0;
            } else if ((int)i == target || is_ancestor(parent_of, (int)i, target)) {
                slow_ok &= llabs(g - b - 20000000) <= 1;
            } else {
                slow_ok &= g == b;
            }
        }
    }
    CHECK(slow_ok);
    CHECK(sim_fault_clear(m, "front_b2") == DQ_OK);
    run_durations(m, nodes, 1234, got, fgot);
    CHECK(memcmp(base, got, REQS * nodes * sizeof *base) == 0);

    /* erratic: same mean order, much larger spread; only the leaf's draws change */
    int e = dq_diagram_find(d, "core_a3");
    CHECK(sim_fault_set(m, "core_a3", SIM_FAULT_ERRATIC, 6) == DQ_OK);
    run_durations(m, nodes, 1234, got, fgot);
    double bs = 0, bs2 = 0, gs = 0, gs2 = 0;
    int others_same = 1;
    for (int r = 0; r < REQS; r++) {
        for (size_t i = 0; i < nodes; i++) {
            const struct dq_diagram_node *nd = dq_diagram_node(d, (int)i);
            if (nd->kind == DQ_NODE_OUTCOME && (int)i != e) {
                others_same &= base[(size_t)r * nodes + i] == got[(size_t)r * nodes + i];
            }
        }
        double b = (double)base[(size_t)r * nodes + (size_t)e] / 1e6;
        double g = (double)got[(size_t)r * nodes + (size_t)e] / 1e6;
        bs += b;
        bs2 += b * b;
        gs += g;
        gs2 += g * g;
    }
    CHECK(others_same);
    double bm = bs / REQS, gm = gs / REQS;
    double bsd = sqrt(bs2 / REQS - bm * bm), gsd = sqrt(gs2 / REQS - gm * gm);
    CHECK_MSG(fabs(gm - bm) < 0.2 * bm, "erratic mean %g vs %g", gm, bm);
    CHECK_MSG(gsd > 4 * bsd && gsd < 8 * bsd, "erratic sd %g vs %g (factor 6)", gsd, bsd);
    sim_fault_clear_all(m);

    /* fail: the leaf fails with the probability; the failure reaches the root, the rest of
     * the sequence never runs, requests the coin spares are unchanged */
    int f = dq_diagram_find(d, "store_a1");
    int store_a2 = dq_diagram_find(d, "store_a2");
    int rootn = dq_diagram_find(d, "root");
    CHECK(sim_fault_set(m, "store_a1", SIM_FAULT_FAIL, 0.3) == DQ_OK);
    run_durations(m, nodes, 1234, got, fgot);
    int n_fail = 0, prop_ok = 1, spared_same = 1;
    for (int r = 0; r < REQS; r++) {
        size_t o = (size_t)r * nodes;
        if (fgot[o + (size_t)f]) {
            n_fail++;
            prop_ok &= fgot[o + (size_t)rootn] && got[o + (size_t)store_a2] < 0;
            prop_ok &= fgot[o + (size_t)parent_of[f]] && fgot[o + (size_t)parent_of[parent_of[f]]];
            prop_ok &= got[o + (size_t)f] == base[o + (size_t)f];
        } else {
            prop_ok &= !fgot[o + (size_t)rootn];
            spared_same &= memcmp(got + o, base + o, nodes * sizeof *got) == 0;
        }
    }
    CHECK(prop_ok);
    CHECK(spared_same);
    CHECK_NEAR((double)n_fail / REQS, 0.3, 0.03);
    sim_fault_clear_all(m);

    /* fail inside the all-to-finish: the join fails, its other branches still report */
    CHECK(sim_fault_set(m, "core_b2", SIM_FAULT_FAIL, 1) == DQ_OK);
    run_durations(m, nodes, 1234, got, fgot);
    int fan = dq_diagram_find(d, "core_b_fan"), cb3 = dq_diagram_find(d, "core_b3");
    CHECK(fgot[(size_t)fan] == 1 && got[(size_t)cb3] >= 0 && fgot[(size_t)cb3] == 0);
    CHECK(fgot[(size_t)rootn] == 1 && got[(size_t)dq_diagram_find(d, "core_c")] < 0);
    sim_fault_clear_all(m);

    /* slow on an inner node: own time after its children */
    CHECK(sim_fault_set(m, "core", SIM_FAULT_SLOW, 5) == DQ_OK);
    run_durations(m, nodes, 1234, got, fgot);
    int core = dq_diagram_find(d, "core"), core_c = dq_diagram_find(d, "core_c");
    CHECK(llabs(got[(size_t)core] - base[(size_t)core] - 5000000) <= 1);
    CHECK(got[(size_t)core_c] == base[(size_t)core_c]);
    sim_fault_clear_all(m);

    /* bad faults are refused and change nothing */
    CHECK(sim_fault_set(m, "nothere", SIM_FAULT_SLOW, 1) == DQ_ENOTFOUND);
    CHECK(sim_fault_set(m, "core", SIM_FAULT_ERRATIC, 5) == DQ_EINVAL);
    CHECK(sim_fault_set(m, "core_a1", SIM_FAULT_FAIL, 1.5) == DQ_EINVAL);
    CHECK(sim_fault_set(m, "core_a1", SIM_FAULT_ERRATIC, 0.5) == DQ_EINVAL);
    CHECK(sim_fault_set(m, "core_a1", SIM_FAULT_SLOW, -1) == DQ_EINVAL);
    CHECK(sim_fault_clear(m, "nothere") == DQ_ENOTFOUND);
    run_durations(m, nodes, 1234, got, fgot);
    CHECK(memcmp(base, got, REQS * nodes * sizeof *base) == 0);

    free(base);
    free(got);
    free(fbase);
    free(fgot);
    free(parent_of);
    sim_model_destroy(m);
    dq_diagram_destroy(d);
}

/* ---- model limits and options --------------------------------------------------------------- */

static void test_limits(void) {
    /* references reused in pairs: 2^20 leaves per request, refused */
    char text[4096];
    int len = snprintf(text, sizeof text, "d0 = xx -> yy;\n");
    for (int i = 1; i <= 20; i++) {
        len += snprintf(text + len, sizeof text - (size_t)len, "d%d = s:d%d -> s:d%d;\n", i, i - 1,
                        i - 1);
    }
    struct dq_diagram *d = parse(text);
    CHECK(d != NULL);
    struct sim_options o;
    sim_options_default(&o);
    struct sim_model *m = NULL;
    CHECK(sim_model_create(d, &o, &m) == DQ_ERANGE && m == NULL);
    /* starting lower down is fine: d3 has 8 leaves + 15 definitions */
    o.seed = 2;
    dq_diagram_destroy(d);
    d = parse("d0 = xx -> yy;\nd1 = s:d0 -> s:d0;\nd2 = s:d1 -> s:d1;\n");
    CHECK(sim_model_create(d, &o, &m) == DQ_OK);
    CHECK_INT((int)sim_model_max_instances(m), 4 * 2 + 4 + 2 + 1);
    CHECK(sim_model_set_root(m, dq_diagram_find(d, "d0")) == DQ_OK);
    CHECK_INT((int)sim_model_max_instances(m), 3);
    struct sim_instance in[2];
    struct sim_rng rng;
    sim_rng_seed(&rng, 1);
    struct sim_result res;
    CHECK(sim_request(m, &rng, in, 2, &res) == DQ_EFULL);
    sim_model_destroy(m);

    o = (struct sim_options){0};
    sim_options_default(&o);
    o.mean_lo_ms = 3;
    o.mean_hi_ms = 1;
    CHECK(sim_model_create(d, &o, &m) == DQ_EINVAL);
    sim_options_default(&o);
    o.time_scale = 0;
    CHECK(sim_model_create(d, &o, &m) == DQ_EINVAL);
    /* time scale: the same draws, durations scaled */
    sim_options_default(&o);
    struct sim_model *m1 = NULL, *m10 = NULL;
    sim_model_create(d, &o, &m1);
    o.time_scale = 10;
    sim_model_create(d, &o, &m10);
    struct sim_instance a[16], b[16];
    struct sim_rng r1, r2;
    sim_rng_seed(&r1, 4);
    sim_rng_seed(&r2, 4);
    struct sim_result ra, rb;
    sim_request(m1, &r1, a, 16, &ra);
    sim_request(m10, &r2, b, 16, &rb);
    CHECK(ra.count == rb.count && llabs(rb.end_ns - 10 * ra.end_ns) <= 20);
    sim_model_destroy(m1);
    sim_model_destroy(m10);
    dq_diagram_destroy(d);
}

/* ---- protocol side ----------------------------------------------------------------------------
 */

/* Formats cmd as dqd would for a v2 link, applies it, returns the reply length. */
static int apply_cmd(struct sim_ctl *c, const struct wire_cmd *cmd, char *reply, size_t cap,
                     char *line, size_t *line_len) {
    int n = wire_format_cmd(line, WIRE_CMD_MAX, WIRE_V2, cmd);
    if (n <= 0) {
        return -2;
    }
    *line_len = (size_t)n - 1; /* without '\n' */
    return sim_ctl_apply(c, line, *line_len, reply, cap);
}

static void test_ctl(const char *path) {
    char *text = slurp(path);
    struct dq_diagram *d = text ? parse(text) : NULL;
    free(text);
    struct sim_model *m = d ? model(d, 7) : NULL;
    CHECK(m != NULL);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    struct sim_ctl c;
    CHECK(sim_ctl_init(&c, m) == DQ_OK);
    int root = dq_diagram_find(d, "root");
    CHECK(c.running == 1 && sim_ctl_enabled_count(&c) == 0);
    CHECK(!sim_ctl_reports(&c, root));

    char reply[2048], line[WIRE_CMD_MAX];
    size_t ll;
    /* set_timeout: applied and acknowledged with the line echoed */
    struct wire_cmd set = {.kind = WIRE_CMD_SET_TIMEOUT, .name = {"root", 4}, .ms = 100};
    int n = apply_cmd(&c, &set, reply, sizeof reply, line, &ll);
    CHECK(n > 0);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;set_timeout;root;100\n");
    CHECK(c.dmax_ms[root] == 100 && sim_ctl_reports(&c, root));
    /* the ack parses as dqd parses it, with the command inside */
    struct wire_msg msg;
    CHECK(wire_parse(reply, (size_t)n - 1, 0, &msg) == WIRE_OK && msg.kind == WIRE_ACK);
    CHECK(msg.cmd.kind == WIRE_CMD_SET_TIMEOUT && msg.cmd.ms == 100 && msg.cmd.name.n == 4);
    CHECK(msg.command.n == ll && memcmp(msg.command.p, line, ll) == 0);

    /* decimal dMax, then `to` reporting */
    struct wire_cmd set2 = {.kind = WIRE_CMD_SET_TIMEOUT, .name = {"front_a1", 8}, .ms = 0.25};
    n = apply_cmd(&c, &set2, reply, sizeof reply, line, &ll);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;set_timeout;front_a1;0.25\n");
    int fa1 = dq_diagram_find(d, "front_a1");
    CHECK(c.dmax_ms[fa1] == 0.25);
    char buf[SIM_LINE_MAX];
    int64_t t0 = 1767225600000000000LL;
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 300000, 0, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000250000;s:to\n");
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 250000, 0, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000250000;s:ok\n");
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 200000, 1, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000200000;s:fa\n");
    /* a failure that outlasts dMax is a timeout */
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 900000, 1, buf, sizeof buf);
    CHECK(n > 0 && wire_parse(buf, (size_t)n - 1, t0, &msg) == WIRE_OK);
    CHECK(msg.kind == WIRE_INSTANCE && msg.status == WIRE_ST_TO && msg.end_ns == t0 + 250000 &&
          msg.start_ns == t0);
    /* a probe without dMax: nothing to send */
    CHECK(sim_ctl_format_instance(&c, dq_diagram_find(d, "core"), t0, t0 + 1, 0, buf, sizeof buf) ==
          0);
    CHECK(sim_ctl_format_instance(&c, fa1, t0, t0 + 1, 0, buf, 10) == DQ_EFULL);

    /* stop_stub / start_stub */
    struct wire_cmd stop = {.kind = WIRE_CMD_STOP_STUB};
    n = apply_cmd(&c, &stop, reply, sizeof reply, line, &ll);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;stop_stub\n");
    CHECK(c.running == 0 && !sim_ctl_reports(&c, root));
    struct wire_cmd start = {.kind = WIRE_CMD_START_STUB};
    n = apply_cmd(&c, &start, reply, sizeof reply, line, &ll);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;start_stub\n");
    CHECK(c.running == 1 && sim_ctl_reports(&c, root));

    /* sync: ack, then the state line, which dqd's parser reads back */
    struct wire_cmd sync = {.kind = WIRE_CMD_SYNC};
    n = apply_cmd(&c, &sync, reply, sizeof reply, line, &ll);
    CHECK(n > 0);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;sync\nstate;running:1;probes:root=100,front_a1=0.25\n");
    const char *st = strchr(reply, '\n') + 1;
    CHECK(wire_parse(st, strlen(st) - 1, 0, &msg) == WIRE_OK && msg.kind == WIRE_STATE);
    CHECK(msg.running == 1);
    struct wire_slice it = msg.probes, k, v;
    int pairs = 0;
    while (wire_kv_next(&it, &k, &v) == 1) {
        pairs++;
    }
    CHECK_INT(pairs, 2);

    /* clear_timeout disables; an unknown name is acknowledged and ignored */
    struct wire_cmd clr = {.kind = WIRE_CMD_CLEAR_TIMEOUT, .name = {"front_a1", 8}};
    n = apply_cmd(&c, &clr, reply, sizeof reply, line, &ll);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;clear_timeout;front_a1\n");
    CHECK(c.dmax_ms[fa1] == 0 && !sim_ctl_reports(&c, fa1));
    struct wire_cmd unk = {.kind = WIRE_CMD_SET_TIMEOUT, .name = {"ghost", 5}, .ms = 3};
    n = apply_cmd(&c, &unk, reply, sizeof reply, line, &ll);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;set_timeout;ghost;3\n");
    CHECK_INT((int)sim_ctl_enabled_count(&c), 1);

    /* not commands: no ack, nothing changes */
    const char *bad[] = {"set_timeout;root", "set_timeout;root;-1", "hello", "",
                         "start_stub;x",     "set_timeout;9x;5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(sim_ctl_apply(&c, bad[i], strlen(bad[i]), reply, sizeof reply) == -1, "%s",
                  bad[i]);
    }
    CHECK(c.dmax_ms[root] == 100);
    /* a '\r' before the newline is not echoed */
    n = sim_ctl_apply(&c, "stop_stub\r", 10, reply, sizeof reply);
    reply[n > 0 ? n : 0] = '\0';
    CHECK_STR(reply, "ack;stop_stub\n");

    /* state with every probe: at most one protocol line */
    CHECK(sim_ctl_enable_list(&c, "*=1000", 5) == DQ_OK);
    CHECK_INT((int)sim_ctl_enabled_count(&c), 41);
    char state[SIM_STATE_MAX + 1];
    n = sim_ctl_state(&c, state, sizeof state);
    CHECK(n > 0 && n <= SIM_STATE_MAX + 1);
    CHECK(wire_parse(state, (size_t)n - 1, 0, &msg) == WIRE_OK && msg.running == 0);
    CHECK(sim_ctl_state(&c, state, 100) == DQ_EFULL);

    /* --enable lists */
    CHECK(sim_ctl_enable_list(&c, "*=0", 5) == DQ_EINVAL); /* 0 is no dMax */
    sim_ctl_release(&c);
    CHECK(sim_ctl_init(&c, m) == DQ_OK);
    CHECK(sim_ctl_enable_list(&c, "root=50,core,core_b1=0.5", 7) == DQ_OK);
    CHECK(c.dmax_ms[root] == 50 && c.dmax_ms[dq_diagram_find(d, "core")] == 7);
    CHECK(c.dmax_ms[dq_diagram_find(d, "core_b1")] == 0.5);
    CHECK_INT((int)sim_ctl_enabled_count(&c), 3);
    CHECK(sim_ctl_enable_list(&c, "nothere=5", 7) == DQ_ENOTFOUND);
    CHECK(sim_ctl_enable_list(&c, "root=abc", 7) == DQ_EINVAL);
    CHECK(sim_ctl_enable_list(&c, "ro-ot", 7) == DQ_EINVAL);
    sim_ctl_release(&c);
    sim_ctl_release(&c); /* released twice: fine */

    sim_model_destroy(m);
    dq_diagram_destroy(d);
}

/* ---- operator commands
 * --------------------------------------------------------------------------- */

static void test_user(void) {
    struct sim_user_cmd c;
    CHECK(sim_user_parse("fault front_b2 slow 20", 22, &c) == 0);
    CHECK(c.kind == SIM_USER_FAULT && c.fault == SIM_FAULT_SLOW && c.value == 20);
    CHECK_STR(c.name, "front_b2");
    const char *l = "  fault\tcore_a3 erratic 8.5\r";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.fault == SIM_FAULT_ERRATIC && c.value == 8.5);
    l = "fault x1 fail 0.2";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.fault == SIM_FAULT_FAIL && c.value == 0.2);
    l = "clear store_a1";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_CLEAR);
    CHECK_STR(c.name, "store_a1");
    l = "clear all";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_CLEAR_ALL);
    l = "rate 350";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_RATE && c.value == 350);
    l = "status";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_STATUS);
    l = "quit";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_QUIT);
    l = "run 12.5";
    CHECK(sim_user_parse(l, strlen(l), &c) == 0 && c.kind == SIM_USER_RUN && c.value == 12.5);
    const char *bad[] = {"fault x1 slow",
                         "run",
                         "run -1",
                         "run 1e8",
                         "run soon",
                         "fault x1 slow -3",
                         "fault x1 fail 2",
                         "fault x1 erratic 0.5",
                         "fault x1 boil 3",
                         "fault 1x slow 3",
                         "fault x1 slow 3ms",
                         "clear",
                         "rate -1",
                         "rate 1e9",
                         "dance",
                         "",
                         "quit now",
                         "a b c d e f g h i",
                         "fault x1 slow nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(sim_user_parse(bad[i], strlen(bad[i]), &c) == DQ_EINVAL, "%s", bad[i]);
        CHECK(dq_last_error()[0] != '\0');
    }
    CHECK(sim_fault_spec_parse("core_b2:fail:0.5", &c) == 0 && c.fault == SIM_FAULT_FAIL &&
          c.value == 0.5);
    CHECK_STR(c.name, "core_b2");
    CHECK(sim_fault_spec_parse("core_b2:slow:15", &c) == 0 && c.value == 15);
    CHECK(sim_fault_spec_parse("core_b2:slow", &c) == DQ_EINVAL);
    CHECK(sim_fault_spec_parse("core_b2:erratic:x", &c) == DQ_EINVAL);
    CHECK(sim_fault_spec_parse(":slow:1", &c) == DQ_EINVAL);
    enum sim_fault_kind k;
    CHECK(sim_fault_parse_kind("fail", 4, &k) == 0 && k == SIM_FAULT_FAIL);
    CHECK(sim_fault_parse_kind("fai", 3, &k) == -1);
    CHECK_STR(sim_fault_name(SIM_FAULT_ERRATIC), "erratic");
    CHECK_STR(sim_fault_name(SIM_FAULT_NONE), "none");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_sim TREE27.dq\n");
        return 2;
    }
    test_rng();
    test_tree27(argv[1]);
    test_first_and_choice();
    test_faults(argv[1]);
    test_limits();
    test_ctl(argv[1]);
    test_user();
    return check_done();
}
