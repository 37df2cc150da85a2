/*
 * fuzz_sse.c: dqctl watch's event-stream parser and its line renderer on arbitrary bytes
 * (what a server could send). The input is fed in two pieces split at a byte the input
 * chooses, and every event's data that parses as JSON is rendered.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dqctl_watch.h"

static int on_event(void *ctx, const char *type, const char *id, const char *data, size_t len) {
    (void)ctx;
    (void)id;
    json_t *d = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    if (d) {
        FILE *out = fopen("/dev/null", "w");
        if (out) {
            dqctl_render_event(out, 1795000000.0, type, d);
            fclose(out);
        }
        json_decref(d);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    size_t cut = data[0] % size;
    struct dqctl_sse p;
    dqctl_sse_init(&p, on_event, NULL);
    if (dqctl_sse_feed(&p, (const char *)data + 1, cut > 0 ? cut - 1 : 0) == 0) {
        size_t done = cut > 0 ? cut : 1;
        dqctl_sse_feed(&p, (const char *)data + done, size - done);
    }
    dqctl_sse_release(&p);
    return 0;
}
