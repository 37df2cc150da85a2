/*
 * fuzz_sim.c: libFuzzer target for dqsim's input parsers (scenarios/sim/sim.h).
 *
 * Each input line goes to every parser dqsim exposes to the outside: the operator's
 * stdin commands, `--fault` specs and `--enable` lists, and dqd's commands through
 * sim_ctl_apply(). Parsed faults are applied to a small model with every operator kind
 * and one request is walked, so a fault value that passed the parser can never make
 * the walk misbehave. Checked: replies are `ack;LINE\n` within the buffer, names valid,
 * values in range, instance intervals ordered.
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
                must(sim_request(model, &r, in, 32, &res) == 0);
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
