/*
 * test_sim.c: the pure part of dqsim (scenarios/sim/sim.h): PRNG, request walk over a
 * diagram (intervals nest, sequences add, all takes the max, first the min, choice by
 * weight), faults (each changes its own node and nothing else), determinism for a seed,
 * dMax and `to` reporting, dqd's commands and their acks through controller/wire/wire.h,
 * and the operator commands of stdin. TREE27_DQ (set by CMake) is scenarios/tree27.dq.
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

static void test_tree27(void) {
    const char *path = TREE27_DQ;
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
        CHECK(sim_request(m, &rng, 0, in, 64, &res) == DQ_OK);
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
            sim_request(m, &rng, 0, in, 16, &res);
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
            sim_request(m, &rng, 0, in, 16, &res);
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
static void run_durations(struct sim_model *m, size_t nodes, uint64_t seed, int64_t *out,
                          int *failed_out) {
    struct sim_rng rng;
    sim_rng_seed(&rng, seed);
    struct sim_instance in[PER];
    for (int r = 0; r < REQS; r++) {
        struct sim_result res;
        sim_request(m, &rng, 0, in, PER, &res);
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

static void test_faults(void) {
    const char *path = TREE27_DQ;
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
    CHECK(sim_request(m, &rng, 0, in, 2, &res) == DQ_EFULL);
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
    sim_request(m1, &r1, 0, a, 16, &ra);
    sim_request(m10, &r2, 0, b, 16, &rb);
    CHECK(ra.count == rb.count && llabs(rb.end_ns - 10 * ra.end_ns) <= 20);
    sim_model_destroy(m1);
    sim_model_destroy(m10);
    dq_diagram_destroy(d);
}

/* ---- stations ----------------------------------------------------------------------------- */

/* A model of `text` with the stations of specs[0 … n) added; NULL (checked) on error. */
static struct sim_model *station_model(struct dq_diagram **d, const char *text, const char **specs,
                                       size_t n) {
    *d = parse(text);
    struct sim_model *m = *d ? model(*d, 1) : NULL;
    for (size_t k = 0; m && k < n; k++) {
        struct sim_station_spec spec;
        int rc = sim_station_spec_parse(specs[k], &spec);
        if (rc == 0) {
            rc = sim_station_add(m, &spec);
        }
        CHECK_MSG(rc == (int)k, "%s: %s", specs[k], dq_last_error());
    }
    CHECK(m != NULL);
    return m;
}

static void test_station_specs(void) {
    struct sim_dist dist;
    CHECK(sim_dist_parse("exp:4", 5, &dist) == 0 && dist.kind == SIM_DIST_EXP && dist.p1 == 4);
    CHECK(sim_dist_parse("uniform:1:3", 11, &dist) == 0 && dist.kind == SIM_DIST_UNIFORM &&
          dist.p1 == 1 && dist.p2 == 3);
    CHECK(sim_dist_parse("const:2.5", 9, &dist) == 0 && dist.kind == SIM_DIST_CONST &&
          dist.p1 == 2.5);
    CHECK(sim_dist_parse("shexp:1:4", 9, &dist) == 0 && dist.kind == SIM_DIST_SHEXP &&
          dist.p1 == 1 && dist.p2 == 4);
    CHECK_NEAR(sim_dist_mean(&dist), 4, 0);
    char text[64];
    sim_dist_format(&dist, text, sizeof text);
    CHECK_STR(text, "shexp:1:4");
    dist = (struct sim_dist){.kind = SIM_DIST_UNIFORM, .p1 = 1, .p2 = 3};
    CHECK_NEAR(sim_dist_mean(&dist), 2, 0);
    const char *bad_dist[] = {
        "exp",         "exp:",      "exp:0",       "exp:-1",  "exp:4:5",     "exp:four",
        "uniform:3:1", "uniform:1", "uniform:0:0", "const:0", "shexp:4:4",   "shexp:5:4",
        "gamma:2:3",   "",          "exp:1e9",     "exp:nan", "const:1:2:3", ":4"};
    for (size_t i = 0; i < sizeof bad_dist / sizeof bad_dist[0]; i++) {
        dq_clear_error();
        CHECK_MSG(sim_dist_parse(bad_dist[i], strlen(bad_dist[i]), &dist) == DQ_EINVAL, "%s",
                  bad_dist[i]);
        CHECK_MSG(dq_last_error()[0] != '\0', "no message for %s", bad_dist[i]);
    }

    struct sim_station_spec spec;
    CHECK(sim_station_spec_parse("worker_1:1:exp:4:K=50", &spec) == 0);
    CHECK_STR(spec.name, "worker_1");
    CHECK(spec.n_leaves == 1 && spec.servers == 1 && spec.capacity == 50);
    CHECK(spec.dist.kind == SIM_DIST_EXP && spec.dist.p1 == 4);
    CHECK(sim_station_spec_parse("db_read,db_write=db:4:shexp:0.5:2", &spec) == 0);
    CHECK_STR(spec.name, "db");
    CHECK(spec.n_leaves == 2 && spec.servers == 4 && spec.capacity == 0);
    CHECK_STR(spec.leaves[1], "db_write");
    CHECK(spec.dist.kind == SIM_DIST_SHEXP && spec.dist.p1 == 0.5 && spec.dist.p2 == 2);
    CHECK(sim_station_spec_parse("w=w2:2:uniform:1:3:K=0", &spec) == 0 && spec.capacity == 0 &&
          spec.dist.p2 == 3);
    const char *bad[] = {"worker_1",
                         "worker_1:1",
                         "worker_1:1:",
                         "worker_1:0:exp:4",
                         "worker_1:1025:exp:4",
                         "worker_1:x:exp:4",
                         "worker_1:1:exp:4:K=",
                         "worker_1:1:exp:4:K=65537",
                         "worker_1:1:exp:4:K=-1",
                         "worker_1:1:exp:4:K=5:K=6",
                         "worker_1:1:boil:4",
                         "1worker:1:exp:4",
                         "a,,b:1:exp:4",
                         "a,a:1:exp:4",
                         "a=:1:exp:4",
                         "=s:1:exp:4",
                         ":1:exp:4",
                         "a=b=c:1:exp:4",
                         "a:1:uniform:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dq_clear_error();
        CHECK_MSG(sim_station_spec_parse(bad[i], &spec) == DQ_EINVAL, "%s", bad[i]);
        CHECK_MSG(strstr(dq_last_error(), "station") != NULL, "message for %s: %s", bad[i],
                  dq_last_error());
    }

    /* adding: leaves must exist, be outcomes, be bound once; names once */
    struct dq_diagram *d = parse("p = w1 -> w2 -> s:q;\nq = w3 -> w4;");
    struct sim_model *m = d ? model(d, 1) : NULL;
    CHECK(m != NULL);
    if (m) {
        struct sim_node_info info;
        sim_model_node(m, dq_diagram_find(d, "w1"), &info);
        CHECK(info.station == -1);
        CHECK(sim_station_spec_parse("ghost:1:exp:4", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == DQ_ENOTFOUND);
        CHECK(strstr(dq_last_error(), "ghost") != NULL);
        CHECK(sim_station_spec_parse("q:1:exp:4", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == DQ_EINVAL);
        CHECK(strstr(dq_last_error(), "not an outcome") != NULL);
        CHECK(sim_station_spec_parse("w1,w3=shared:2:exp:4:K=9", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == 0);
        CHECK(sim_station_spec_parse("w3:1:exp:4", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == DQ_EINVAL);
        CHECK(strstr(dq_last_error(), "already served by station shared") != NULL);
        CHECK(sim_station_spec_parse("w2=shared:1:exp:4", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == DQ_EINVAL);
        CHECK(strstr(dq_last_error(), "defined twice") != NULL);
        /* erratic needs an exponential part, whichever comes first */
        CHECK(sim_fault_set(m, "w2", SIM_FAULT_ERRATIC, 3) == DQ_OK);
        CHECK(sim_station_spec_parse("w2:1:const:4", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == DQ_EINVAL);
        CHECK(sim_station_spec_parse("w4:1:uniform:1:3", &spec) == 0);
        CHECK(sim_station_add(m, &spec) == 1);
        CHECK(sim_fault_set(m, "w4", SIM_FAULT_ERRATIC, 3) == DQ_EINVAL);
        CHECK(strstr(dq_last_error(), "no exponential part") != NULL);
        CHECK(sim_fault_set(m, "w1", SIM_FAULT_ERRATIC, 3) == DQ_OK);
        CHECK_INT((int)sim_model_station_count(m), 2);
        CHECK(sim_model_find_station(m, "shared") == 0 && sim_model_find_station(m, "w4") == 1);
        CHECK(sim_model_find_station(m, "w1") == DQ_ENOTFOUND);
        struct sim_station_info si;
        CHECK(sim_station_info(m, 0, &si) == 0 && si.servers == 2 && si.capacity == 9 &&
              si.n_leaves == 2);
        CHECK_STR(si.name, "shared");
        CHECK(sim_station_info(m, 2, &si) == DQ_EINVAL);
        sim_model_node(m, dq_diagram_find(d, "w3"), &info);
        CHECK(info.station == 0);
        sim_model_node(m, dq_diagram_find(d, "w2"), &info);
        CHECK(info.station == -1);
        /* requests must come in arrival order once there are stations */
        struct sim_instance in[16];
        struct sim_result res;
        struct sim_rng rng;
        sim_rng_seed(&rng, 1);
        CHECK(sim_request(m, &rng, 1000000, in, 16, &res) == DQ_OK);
        CHECK(sim_request(m, &rng, 999999, in, 16, &res) == DQ_EINVAL);
        struct sim_station_stats ss;
        CHECK(sim_station_stats(m, 0, 999999, &ss) == DQ_EINVAL);
        CHECK(sim_station_stats(m, 0, 1000000, &ss) == DQ_OK && ss.in_station >= 1);
        sim_stations_reset(m);
        CHECK(sim_station_stats(m, 0, 0, &ss) == DQ_OK && ss.in_station == 0 && ss.busy_ns == 0);
        CHECK(sim_request(m, &rng, 5, in, 16, &res) == DQ_OK);
        sim_model_destroy(m);
    }
    dq_diagram_destroy(d);
}

/* Poisson arrivals: the next arrival after *t, rate lambda per ms. */
static int64_t next_arrival(struct sim_rng *r, int64_t t, double lambda_per_ms) {
    int64_t gap = (int64_t)llround(sim_rng_exp(r, 1e6 / lambda_per_ms));
    return t + (gap > 0 ? gap : 1);
}

/* One station `srv` (sys = srv) fed by Poisson arrivals: returns the mean sojourn and
 * wait (ms), the loss fraction and the utilisation over [0, last arrival). */
struct queue_run {
    double sojourn_ms, wait_ms, loss, util;
    uint64_t rejected, zero_fails;
    int ok;
};

static struct queue_run run_queue(const char *spec, double lambda_per_ms, int reqs, uint64_t seed) {
    struct queue_run q = {0};
    struct dq_diagram *d;
    const char *specs[] = {spec};
    struct sim_model *m = station_model(&d, "sys = srv;", specs, 1);
    if (!m) {
        dq_diagram_destroy(d);
        return q;
    }
    int srv = dq_diagram_find(d, "srv"), sys = dq_diagram_find(d, "sys");
    struct sim_rng rng, arr;
    sim_rng_seed(&rng, seed);
    sim_rng_seed(&arr, seed + 1000);
    struct sim_station_stats s0, s1;
    CHECK(sim_station_stats(m, 0, 0, &s0) == DQ_OK);
    int64_t t = 0;
    double soj = 0, wait = 0;
    int served = 0, ok = 1;
    for (int r = 0; r < reqs; r++) {
        t = next_arrival(&arr, t, lambda_per_ms);
        struct sim_instance in[4];
        struct sim_result res;
        ok &= sim_request(m, &rng, t, in, 4, &res) == DQ_OK && res.count == 2;
        const struct sim_instance *si = find_inst(in, res.count, srv);
        const struct sim_instance *ri = find_inst(in, res.count, sys);
        ok &= si && ri && si->end_ns == ri->end_ns && si->failed == ri->failed;
        if (si && si->failed) {
            q.zero_fails += dur(si) == 0 && si->wait_ns == 0;
        } else if (si) {
            served++;
            soj += (double)dur(si) / 1e6;
            wait += (double)si->wait_ns / 1e6;
        }
    }
    CHECK(sim_station_stats(m, 0, t, &s1) == DQ_OK);
    q.sojourn_ms = soj / served;
    q.wait_ms = wait / served;
    q.rejected = s1.rejected;
    q.loss = (double)s1.rejected / reqs;
    q.util = sim_station_utilisation(&s0, &s1);
    q.ok = ok && s1.overflow == 0 && (int)s1.rejected == reqs - served;
    sim_model_destroy(m);
    dq_diagram_destroy(d);
    return q;
}

static void test_mm1(void) {
    /* M/M/1, mean service 4 ms (μ = 0.25/ms): ρ = λ/μ, sojourn 1/(μ − λ) */
    const double rhos[] = {0.5, 0.8};
    for (int k = 0; k < 2; k++) {
        double mu = 0.25, lambda = rhos[k] * mu;
        struct queue_run q = run_queue("srv:1:exp:4", lambda, 200000, 11 + (uint64_t)k);
        double want = 1 / (mu - lambda);
        CHECK(q.ok && q.rejected == 0);
        CHECK_NEAR(q.util, rhos[k], 0.01);
        CHECK_NEAR(q.sojourn_ms, want, 0.05 * want);
        printf("M/M/1 rho=%.1f: utilisation %.4f (error %+.4f), sojourn %.3f ms (1/(mu-lambda) "
               "%.3f, error %+.2f %%)\n",
               rhos[k], q.util, q.util - rhos[k], q.sojourn_ms, want,
               100 * (q.sojourn_ms / want - 1));
    }
}

/* Erlang C: the probability that an arrival waits in M/M/c with offered load a = λ/μ. */
static double erlang_c(int c, double a) {
    double term = 1, sum = 0;
    for (int k = 0; k < c; k++) {
        sum += term;
        term *= a / (k + 1); /* term = a^(k+1)/(k+1)! */
    }
    double top = term * c / (c - a);
    return top / (sum + top);
}

static void test_mmc(void) {
    /* M/M/2 at ρ = 0.7: mean wait C(2, a)/(cμ − λ) */
    double mu = 0.25, lambda = 0.7 * 2 * mu;
    struct queue_run q = run_queue("srv:2:exp:4", lambda, 200000, 21);
    double wq = erlang_c(2, lambda / mu) / (2 * mu - lambda);
    CHECK(q.ok && q.rejected == 0);
    CHECK_NEAR(q.wait_ms, wq, 0.05 * wq);
    CHECK_NEAR(q.util, 0.7, 0.01);
    printf("M/M/2 rho=0.7: mean wait %.3f ms (Erlang C %.3f, error %+.2f %%), utilisation %.4f\n",
           q.wait_ms, wq, 100 * (q.wait_ms / wq - 1), q.util);
}

static void test_mm1k(void) {
    /* M/M/1/K loss: P(K) = (1 − ρ)ρ^K / (1 − ρ^(K+1)) */
    const struct {
        double rho;
        int k;
        const char *spec;
    } cases[] = {
        {0.9, 5, "srv:1:exp:4:K=5"}, {1.5, 10, "srv:1:exp:4:K=10"}, {0.3, 8, "srv:1:exp:4:K=8"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double rho = cases[i].rho, mu = 0.25;
        struct queue_run q = run_queue(cases[i].spec, rho * mu, 200000, 31 + i);
        double p = (1 - rho) * pow(rho, cases[i].k) / (1 - pow(rho, cases[i].k + 1));
        CHECK(q.ok);
        CHECK(q.zero_fails == q.rejected); /* a rejection fails at once */
        if (p > 1e-3) {
            CHECK_NEAR(q.loss, p, 0.10 * p);
        } else {
            CHECK_NEAR(q.loss, p, 1e-4);
        }
        /* the station is busy when not empty: ρ(1 − P(K)) */
        CHECK_NEAR(q.util, rho * (1 - p), 0.01);
        printf("M/M/1/%d rho=%.1f: loss %.5f (closed form %.5f), utilisation %.4f (%.4f)\n",
               cases[i].k, rho, q.loss, p, q.util, rho * (1 - p));
    }
}

/* Per-request record of a tandem run. */
struct tandem_rec {
    int64_t at, w1_b, w1_e, w1_wait, w2_b, w2_e, w2_wait;
};

static void test_tandem_fifo(void) {
    struct dq_diagram *d;
    const char *specs[] = {"worker_1:1:exp:4", "worker_2:1:exp:4"};
    struct sim_model *m = station_model(&d, "pipeline = worker_1 -> worker_2;", specs, 2);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    int w1 = dq_diagram_find(d, "worker_1"), w2 = dq_diagram_find(d, "worker_2");
    enum { N = 20000 };
    struct tandem_rec *rec = calloc(N, sizeof *rec);
    struct sim_rng rng, arr;
    sim_rng_seed(&rng, 41);
    sim_rng_seed(&arr, 42);
    int64_t t = 0;
    int ok = 1;
    for (int r = 0; r < N; r++) {
        t = next_arrival(&arr, t, 0.2);
        struct sim_instance in[4];
        struct sim_result res;
        ok &= sim_request(m, &rng, t, in, 4, &res) == DQ_OK && res.count == 3;
        const struct sim_instance *a = find_inst(in, res.count, w1);
        const struct sim_instance *b = find_inst(in, res.count, w2);
        ok &= a && b;
        if (!a || !b) {
            break;
        }
        rec[r] = (struct tandem_rec){t,          t + a->begin_ns, t + a->end_ns,
                                     a->wait_ns, t + b->begin_ns, t + b->end_ns,
                                     b->wait_ns};
    }
    CHECK(ok);
    /* Lindley, recomputed from the service times: each station starts a request when it
     * arrives or when the one before it leaves, whichever is later; departures from the
     * first station keep the arrival order, so the second sees them in order too */
    int fifo = 1, lindley = 1, waited = 0;
    int64_t d1 = INT64_MIN, d2 = INT64_MIN;
    for (int r = 0; ok && r < N; r++) {
        const struct tandem_rec *x = &rec[r];
        int64_t s1 = x->w1_e - x->w1_b - x->w1_wait; /* service times */
        int64_t s2 = x->w2_e - x->w2_b - x->w2_wait;
        int64_t start1 = x->at > d1 ? x->at : d1;
        lindley &= x->w1_b == x->at && x->w1_b + x->w1_wait == start1 && s1 >= 0;
        fifo &= x->w1_e >= d1 && x->w2_e >= d2; /* nobody overtakes */
        d1 = start1 + s1;
        lindley &= x->w1_e == d1 && x->w2_b == d1;
        int64_t start2 = d1 > d2 ? d1 : d2;
        lindley &= x->w2_b + x->w2_wait == start2 && s2 >= 0;
        d2 = start2 + s2;
        lindley &= x->w2_e == d2;
        waited += x->w2_wait > 0;
    }
    CHECK(fifo);
    CHECK(lindley);
    CHECK(waited > N / 4); /* the second station did queue */
    free(rec);
    sim_model_destroy(m);
    dq_diagram_destroy(d);
}

/* Busy time of [s, e) inside (−∞, t). */
static int64_t busy_before(int64_t s, int64_t e, int64_t t) {
    return e <= t ? e - s : (s < t ? t - s : 0);
}

static void test_utilisation_split(void) {
    /* two servers behind a plain leaf: requests reach the station out of order, so the
     * bookkeeping holds requests that arrive after the snapshots */
    struct dq_diagram *d;
    const char *specs[] = {"srv:2:uniform:2:9:K=6"};
    struct sim_model *m = station_model(&d, "p = pre -> srv;", specs, 1);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    int srv = dq_diagram_find(d, "srv");
    enum { N = 30000, SNAPS = 200 };
    int64_t(*iv)[3] = calloc(N, sizeof *iv); /* a, s, e of each admitted request */
    struct sim_station_stats *snap = calloc(SNAPS, sizeof *snap);
    struct sim_rng rng, arr;
    sim_rng_seed(&rng, 51);
    sim_rng_seed(&arr, 52);
    int64_t t = 0, step = 100000000; /* a snapshot every 100 ms */
    int n = 0, k = 0, rejected = 0, out_of_order = 0;
    int64_t last_a = INT64_MIN;
    for (int r = 0; r < N; r++) {
        t = next_arrival(&arr, t, 0.3);
        while (k < SNAPS && (int64_t)k * step < t) {
            CHECK(sim_station_stats(m, 0, (int64_t)k * step, &snap[k]) == DQ_OK);
            k++;
        }
        struct sim_instance in[4];
        struct sim_result res;
        sim_request(m, &rng, t, in, 4, &res);
        const struct sim_instance *x = find_inst(in, res.count, srv);
        if (x && x->failed && dur(x) == 0) {
            rejected++;
        } else if (x) {
            iv[n][0] = t + x->begin_ns;
            iv[n][1] = t + x->begin_ns + x->wait_ns;
            iv[n][2] = t + x->end_ns;
            out_of_order += iv[n][0] < last_a;
            last_a = iv[n][0] > last_a ? iv[n][0] : last_a;
            n++;
        }
    }
    CHECK(k == SNAPS && rejected > 0 && out_of_order > 0);
    /* every snapshot agrees exactly with the service periods recomputed from the
     * instances: busy time, completions, and who was inside */
    int busy_ok = 1, served_ok = 1, in_ok = 1;
    for (int j = 0; j < k; j++) {
        int64_t tj = snap[j].t_ns, busy = 0;
        uint64_t served = 0, inside = 0;
        for (int i = 0; i < n; i++) {
            busy += busy_before(iv[i][1], iv[i][2], tj);
            served += iv[i][2] <= tj;
            inside += iv[i][0] <= tj && tj < iv[i][2];
        }
        busy_ok &= snap[j].busy_ns == busy;
        served_ok &= snap[j].served == served;
        in_ok &= snap[j].in_station == inside;
    }
    CHECK(busy_ok);
    CHECK(served_ok);
    CHECK(in_ok);
    /* utilisation over split intervals adds up exactly to the whole one's */
    double whole = sim_station_utilisation(&snap[10], &snap[190]) * 2 * 180 * step;
    double parts = 0;
    for (int j = 10; j < 190; j += 30) {
        parts += sim_station_utilisation(&snap[j], &snap[j + 30]) * 2 * 30 * step;
    }
    CHECK_NEAR(parts, whole, 1e-6 * whole);
    CHECK(sim_station_utilisation(&snap[5], &snap[5]) == 0);
    double u = sim_station_utilisation(&snap[0], &snap[SNAPS - 1]);
    CHECK(u > 0.5 && u < 1);
    free(iv);
    free(snap);
    sim_model_destroy(m);
    dq_diagram_destroy(d);
}

/* Instances of REQS requests of m (arrivals from seed) into out[REQS][PER]. */
static void run_all(struct sim_model *m, uint64_t seed, struct sim_instance *out, size_t *counts) {
    struct sim_rng rng, arr;
    sim_rng_seed(&rng, seed);
    sim_rng_seed(&arr, seed + 1);
    sim_stations_reset(m);
    int64_t t = 0;
    for (int r = 0; r < REQS; r++) {
        t = next_arrival(&arr, t, 0.2);
        struct sim_result res;
        sim_request(m, &rng, t, out + (size_t)r * PER, PER, &res);
        counts[r] = res.count;
    }
}

static const struct sim_instance *inst_of(const struct sim_instance *all, const size_t *counts,
                                          int r, int node) {
    return find_inst(all + (size_t)r * PER, counts[r], node);
}

static void test_station_determinism(void) {
    struct dq_diagram *d;
    const char *specs[] = {"w1:1:exp:4:K=20", "w2:1:shexp:1:3"};
    const char *text = "p = w1 -> w2 -> x3;";
    struct sim_model *m = station_model(&d, text, specs, 2);
    if (!m) {
        dq_diagram_destroy(d);
        return;
    }
    int w1 = dq_diagram_find(d, "w1"), w2 = dq_diagram_find(d, "w2"), x3 = dq_diagram_find(d, "x3");
    struct sim_instance *base = calloc(REQS * PER, sizeof *base);
    struct sim_instance *got = calloc(REQS * PER, sizeof *got);
    size_t cb[REQS], cg[REQS];
    /* same seed, same instances, after a reset */
    run_all(m, 61, base, cb);
    run_all(m, 61, got, cg);
    CHECK(memcmp(cb, cg, sizeof cb) == 0);
    CHECK(memcmp(base, got, REQS * PER * sizeof *base) == 0);
    /* a station draws as the plain leaf did: x3 is the same without stations */
    struct dq_diagram *d0 = parse(text);
    struct sim_model *plain = model(d0, 1);
    run_all(plain, 61, got, cg);
    int same_x3 = 1;
    for (int r = 0; r < REQS; r++) {
        same_x3 &= dur(inst_of(base, cb, r, x3)) == dur(inst_of(got, cg, r, x3));
    }
    CHECK(same_x3);
    sim_model_destroy(plain);
    dq_diagram_destroy(d0);

    /* slow on w1: its service takes 2 ms more, the others' draws stay (w2's waits change,
     * which is the queueing) */
    CHECK(sim_fault_set(m, "w1", SIM_FAULT_SLOW, 2) == DQ_OK);
    run_all(m, 61, got, cg);
    int slow_ok = 1, w2_service = 1, waits_differ = 0;
    for (int r = 0; r < REQS; r++) {
        const struct sim_instance *b1 = inst_of(base, cb, r, w1), *g1 = inst_of(got, cg, r, w1);
        if (!b1 || !g1 || b1->failed || g1->failed) {
            continue; /* a fuller w1 turns other requests away */
        }
        slow_ok &= llabs((dur(g1) - g1->wait_ns) - (dur(b1) - b1->wait_ns) - 2000000) <= 1;
        const struct sim_instance *b2 = inst_of(base, cb, r, w2), *g2 = inst_of(got, cg, r, w2);
        w2_service &= dur(g2) - g2->wait_ns == dur(b2) - b2->wait_ns;
        waits_differ += g2->wait_ns != b2->wait_ns;
        slow_ok &= dur(inst_of(got, cg, r, x3)) == dur(inst_of(base, cb, r, x3));
    }
    CHECK(slow_ok);
    CHECK(w2_service);
    CHECK(waits_differ > 0);
    /* fail on w1: the requests it fails end there; the others keep their draws */
    CHECK(sim_fault_set(m, "w1", SIM_FAULT_FAIL, 0.3) == DQ_OK);
    run_all(m, 61, got, cg);
    int fail_ok = 1, fails = 0;
    for (int r = 0; r < REQS; r++) {
        const struct sim_instance *g1 = inst_of(got, cg, r, w1);
        if (g1->failed) {
            fails++;
            fail_ok &= inst_of(got, cg, r, w2) == NULL && dur(g1) > 0;
            continue;
        }
        const struct sim_instance *b2 = inst_of(base, cb, r, w2), *g2 = inst_of(got, cg, r, w2);
        fail_ok &= b2 && g2 && dur(g2) - g2->wait_ns == dur(b2) - b2->wait_ns;
        fail_ok &= dur(inst_of(got, cg, r, x3)) == dur(inst_of(base, cb, r, x3));
    }
    CHECK(fail_ok);
    CHECK_NEAR((double)fails / REQS, 0.3, 0.03);
    /* erratic on w2 (shexp): the exponential part's mean stays, its spread grows */
    sim_fault_clear_all(m);
    CHECK(sim_fault_set(m, "w2", SIM_FAULT_ERRATIC, 3) == DQ_OK);
    run_all(m, 61, got, cg);
    double s = 0, s2 = 0, smin = 1e18;
    for (int r = 0; r < REQS; r++) {
        const struct sim_instance *g2 = inst_of(got, cg, r, w2);
        double x = (double)(dur(g2) - g2->wait_ns) / 1e6;
        s += x;
        s2 += x * x;
        smin = x < smin ? x : smin;
    }
    double mean = s / REQS, var = s2 / REQS - mean * mean;
    CHECK_NEAR(mean, 3, 0.3);
    CHECK(smin >= 1 - 1e-6);
    CHECK(var / ((mean - 1) * (mean - 1)) > 3); /* squared CV of the random part: 9 nominal */
    free(base);
    free(got);
    sim_model_destroy(m);
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

static void test_ctl(void) {
    const char *path = TREE27_DQ;
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
    size_t ll = 0;
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
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 300000, 0, 0, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000250000;s:to\n");
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 250000, 0, 0, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000250000;s:ok\n");
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 200000, 1, 0, buf, sizeof buf);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "n:front_a1;b:1767225600000000000;e:1767225600000200000;s:fa\n");
    /* a failure that outlasts dMax is a timeout */
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 900000, 1, 0, buf, sizeof buf);
    CHECK(n > 0 && wire_parse(buf, (size_t)n - 1, t0, &msg) == WIRE_OK);
    CHECK(msg.kind == WIRE_INSTANCE && msg.status == WIRE_ST_TO && msg.end_ns == t0 + 250000 &&
          msg.start_ns == t0);
    /* --trace-ids: the request's trace id, the instance's id, the request as an attribute,
     * as v2 fields dqd's parser takes */
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 200000, 0, 7, buf, sizeof buf);
    CHECK(n > 0 && wire_parse(buf, (size_t)n - 1, t0, &msg) == WIRE_OK);
    CHECK(msg.kind == WIRE_INSTANCE && msg.status == WIRE_ST_OK && msg.trace.n == 16 &&
          msg.id.n == 16 && msg.attrs.n == 9 && memcmp(msg.attrs.p, "request=7", 9) == 0);
    char trace7[17];
    memcpy(trace7, msg.trace.p, 16);
    trace7[16] = '\0';
    /* another instance of request 7: the same trace; request 8: another */
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 100000, 0, 7, buf, sizeof buf);
    CHECK(n > 0 && wire_parse(buf, (size_t)n - 1, t0, &msg) == WIRE_OK);
    CHECK(msg.trace.n == 16 && memcmp(msg.trace.p, trace7, 16) == 0);
    n = sim_ctl_format_instance(&c, fa1, t0, t0 + 100000, 0, 8, buf, sizeof buf);
    CHECK(n > 0 && wire_parse(buf, (size_t)n - 1, t0, &msg) == WIRE_OK);
    CHECK(msg.trace.n == 16 && memcmp(msg.trace.p, trace7, 16) != 0);
    /* a probe without dMax: nothing to send */
    CHECK(sim_ctl_format_instance(&c, dq_diagram_find(d, "core"), t0, t0 + 1, 0, 0, buf,
                                  sizeof buf) == 0);
    CHECK(sim_ctl_format_instance(&c, fa1, t0, t0 + 1, 0, 0, buf, 10) == DQ_EFULL);

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
    const struct {
        const char *line;
        enum sim_user_kind kind;
    } words[] = {{"stations", SIM_USER_STATIONS},
                 {" disconnect\r", SIM_USER_DISCONNECT},
                 {"reconnect", SIM_USER_RECONNECT},
                 {"mute", SIM_USER_MUTE},
                 {"unmute", SIM_USER_UNMUTE}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        CHECK_MSG(sim_user_parse(words[i].line, strlen(words[i].line), &c) == 0 &&
                      c.kind == words[i].kind,
                  "%s", words[i].line);
    }
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
                         "mute all",
                         "stations worker_1",
                         "disconnect now",
                         "mutes",
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

static const struct check_case cases[] = {
    CHECK_CASE(rng),
    CHECK_CASE(tree27),
    CHECK_CASE(first_and_choice),
    CHECK_CASE(faults),
    CHECK_CASE(limits),
    CHECK_CASE(ctl),
    CHECK_CASE(user),
    CHECK_CASE(station_specs),
    CHECK_CASE(mm1),
    CHECK_CASE(mmc),
    CHECK_CASE(mm1k),
    CHECK_CASE(tandem_fifo),
    CHECK_CASE(utilisation_split),
    CHECK_CASE(station_determinism),
};

CHECK_MAIN(cases)
