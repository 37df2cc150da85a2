/*
 * fuzz_sim.c: libFuzzer target for dqsim's input parsers (scenarios/sim/sim.h).
 *
 * Each input line goes to every parser dqsim exposes to the outside: the operator's
 * stdin commands, `--fault` specs, `--station` specs and service times, `--enable`
 * lists, and dqd's commands through sim_ctl_apply(). Parsed faults are applied to a small
 * model with every operator kind and one request is walked, so a fault value that passed
 * the parser can never make the walk misbehave; a parsed station spec is added to a fresh
 * model (when its leaves exist) and a burst of requests queues at it. Checked: replies are
 * `ack;LINE\n` within the buffer, names valid, values in range, instance intervals
 * ordered, station counters consistent (nobody in a station beyond K, utilisation in
 * [0, 1]).
 */
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char DIAGRAM[] = "d1 = xa -> f:race(xb, xc -> xd) -> a:join(xe, xf) -> "
                              "p:ch[0.5, 0.5](xg, s:d2);\nd2 = xh -> xi;\n";

static struct dq_diagram *diagram;
static struct sim_model *model;
static struct sim_ctl ctl;

static void must(int cond) {
    if (!cond) {
        abort();
    }
}

static void setup(void) {
    if (model) {
        return;
    }
    struct sim_options o;
    sim_options_default(&o);
    must(dq_diagram_parse(DIAGRAM, sizeof DIAGRAM - 1, &diagram, NULL) == 0);
    must(sim_model_create(diagram, &o, &model) == 0);
    must(sim_ctl_init(&ctl, model) == 0);
}

/* A station spec that parsed: add it to a fresh model and push requests through. */
static void station_line(const struct sim_station_spec *spec) {
    must(spec->n_leaves >= 1 && spec->n_leaves <= SIM_STATION_MAX_LEAVES);
    must(spec->servers >= 1 && spec->servers <= SIM_STATION_MAX_SERVERS);
    must(spec->capacity <= SIM_STATION_MAX_K && sim_dist_mean(&spec->dist) > 0);
    must(wire_name_valid(spec->name, strlen(spec->name)));
    struct sim_options o;
    sim_options_default(&o);
    struct sim_model *m = NULL;
    must(sim_model_create(diagram, &o, &m) == 0);
    int k = sim_station_add(m, spec);
    if (k >= 0) {
        struct sim_rng r, arr;
        sim_rng_seed(&r, 1);
        sim_rng_seed(&arr, 2);
        struct sim_station_stats s0, s1;
        must(sim_station_stats(m, k, 0, &s0) == 0);
        int64_t t = 0;
        for (int i = 0; i < 64; i++) {
            t += (int64_t)sim_rng_exp(&arr, 1e6) + 1;
            struct sim_instance in[32];
            struct sim_result res;
            must(sim_request(m, &r, t, in, 32, &res) == 0);
            for (size_t j = 0; j < res.count; j++) {
                must(in[j].begin_ns >= 0 && in[j].end_ns >= in[j].begin_ns);
                must(in[j].wait_ns >= 0 && in[j].wait_ns <= in[j].end_ns - in[j].begin_ns);
            }
            must(sim_station_stats(m, k, t, &s1) == 0);
            must(s1.in_station <= (spec->capacity ? spec->capacity : SIM_STATION_MAX_K));
        }
        double u = sim_station_utilisation(&s0, &s1);
        must(u >= 0 && u <= 1 + 1e-9 && s1.busy_ns >= 0);
    }
    sim_model_destroy(m);
}

static void one_line(const char *line, size_t len) {
    struct sim_user_cmd c;
    if (sim_user_parse(line, len, &c) == 0) {
        if (c.kind == SIM_USER_FAULT) {
            must(wire_name_valid(c.name, strlen(c.name)));
            must(isfinite(c.value) && c.value >= 0);
            if (sim_fault_set(model, c.name, c.fault, c.value) == 0) {
                struct sim_instance in[32];
                struct sim_rng r;
                sim_rng_seed(&r, len);
                struct sim_result res;
                must(sim_request(model, &r, 0, in, 32, &res) == 0);
                for (size_t k = 0; k < res.count; k++) {
                    must(in[k].begin_ns >= 0 && in[k].end_ns >= in[k].begin_ns);
                }
            }
        } else if (c.kind == SIM_USER_RATE) {
            must(c.value >= 0 && c.value <= SIM_MAX_RATE);
        }
    }
    char z[1100];
    size_t n = len < sizeof z - 1 ? len : sizeof z - 1;
    memcpy(z, line, n);
    z[n] = '\0';
    if (sim_fault_spec_parse(z, &c) == 0) {
        must(c.kind == SIM_USER_FAULT && wire_name_valid(c.name, strlen(c.name)));
    }
    struct sim_station_spec spec;
    if (sim_station_spec_parse(z, &spec) == 0) {
        station_line(&spec);
    }
    struct sim_dist dist;
    if (sim_dist_parse(line, len, &dist) == 0) {
        must(sim_dist_mean(&dist) > 0 && dist.p1 >= 0 && dist.p2 >= 0);
    }
    (void)sim_ctl_enable_list(&ctl, z, 5);
    char reply[SIM_STATE_MAX + WIRE_MAX_LINE + 16];
    int r = sim_ctl_apply(&ctl, line, len, reply, sizeof reply);
    if (r >= 0) {
        must(r >= 5 && (size_t)r < sizeof reply && memcmp(reply, "ack;", 4) == 0);
        must(reply[r - 1] == '\n');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    sim_fault_clear_all(model);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len <= WIRE_MAX_LINE) {
            one_line(p, len);
        }
        p += len + (nl ? 1 : 0);
    }
    char state[SIM_STATE_MAX + 1];
    int n = sim_ctl_state(&ctl, state, sizeof state);
    must(n > 0 && n <= SIM_STATE_MAX + 1 && state[n - 1] == '\n');
    return 0;
}
