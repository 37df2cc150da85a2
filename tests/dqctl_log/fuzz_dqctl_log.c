/*
 * fuzz_dqctl_log.c: libFuzzer target for dqctl's adaptive-loop renderers. They read JSON
 * from the network (dqd's answers), so any JSON value (arrays and objects of the wrong
 * shape, huge or negative numbers, deep trees, parent cycles) must render without a
 * crash, a hang or undefined behaviour. The input is parsed as JSON and handed to every
 * renderer, to the trigger-body builder and to the verdict exit code.
 */
#include "dqctl_log.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink) {
        sink = fopen("/dev/null", "w");
        if (!sink) {
            return 0;
        }
    }
    json_error_t err;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &err);
    if (!j) {
        return 0;
    }
    dqctl_render_progress(sink, j);
    dqctl_render_verdict(sink, j);
    dqctl_render_why(sink, j);
    dqctl_render_investigations(sink, j);
    dqctl_render_investigation(sink, j);
    dqctl_render_snapshots(sink, j);
    dqctl_render_snapshot(sink, j);
    dqctl_render_snapshot_csv(sink, j);
    dqctl_render_triggers(sink, j);
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e) {
        dqctl_render_progress(sink, e);
        dqctl_render_verdict(sink, e);
        dqctl_render_investigation(sink, e);
        dqctl_render_snapshot(sink, e);
    }
    (void)dqctl_verdict_exit(json_string_value(json_object_get(j, "verdict")));
    char msg[256];
    json_t *body = dqctl_trigger_body(
        j, json_string_value(json_object_get(j, "t")), json_string_value(json_object_get(j, "f")),
        json_string_value(json_object_get(j, "c")), (int)(size & 1), msg, sizeof msg);
    json_decref(body);
    json_decref(j);
    return 0;
}
