/*
 * fuzz_settings.c: libFuzzer target for the JSON config parser.
 *
 * Any byte string is given to settings_load_json(). When it is accepted, the effective
 * configuration is written back with settings_write_json(), loaded again into fresh
 * defaults and written once more: the two outputs must be identical (--print-config
 * round-trips), and the loaded values must respect the table's caps.
 */
#include "settings.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct dqd_config a, b;

static void must(int cond) {
    if (!cond) {
        abort();
    }
}

static char *dump(const struct dqd_config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    must(f != NULL);
    must(settings_write_json(c, f) == 0);
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    settings_defaults(&a);
    if (settings_load_json(&a, (const char *)data, size, "fuzz") != 0) {
        must(dq_last_error()[0] != '\0');
        return 0;
    }
    must(a.n_wrappers >= 0 && a.n_wrappers <= DQD_MAX_WRAPPERS);
    must(a.n_probes >= 0 && a.n_probes <= DQD_MAX_CFG_PROBES);
    for (int i = 0; i < a.n_probes; i++) {
        must(wire_name_valid(a.probes[i].name, strlen(a.probes[i].name)));
        must(a.probes[i].qta.n >= 0 && a.probes[i].qta.n <= DQ_QTA_MAX_POINTS);
    }
    if (settings_finish(&a) != 0) {
        return 0;
    }
    char *d1 = dump(&a);
    settings_defaults(&b);
    must(settings_load_json(&b, d1, strlen(d1), "dump") == 0);
    must(settings_finish(&b) == 0);
    char *d2 = dump(&b);
    must(strcmp(d1, d2) == 0);
    free(d1);
    free(d2);
    return 0;
}
