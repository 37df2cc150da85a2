/*
 * fuzz_dist.c: libFuzzer target for the parsers of `dqctl model`'s measured what-ifs
 * (controller/cli/dqctl_dist.c): the DIST text of --set, and dqd's JSON answers (a probe's
 * ΔQ, a snapshot) that dqctl turns into ΔQs.
 *
 * The input is tried both ways. As DIST text it must parse or fail with a message, never
 * crash; when it parses, printing it canonically and parsing that again must give the
 * same text (so the printer and the parser agree on every form), and its bound and
 * resolution are computed and its ΔQ built on a small grid (closed forms and their
 * transformations; measured leaves get a small ΔQ first). As JSON it is read as a ΔQ and
 * as a snapshot; a ΔQ read is then scaled and shifted by factors taken from the input.
 */
#include "dqctl_dist.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_text(const char *text) {
    struct dqctl_dist *d = NULL;
    char err[512];
    if (dqctl_dist_parse(text, &d, err, sizeof err) < 0) {
        if (d || !err[0]) {
            abort(); /* a failure leaves nothing and says why */
        }
        return;
    }
    char a[8192], b[8192];
    dqctl_dist_format(d, a, sizeof a);
    struct dqctl_dist *e = NULL;
    if (strlen(a) + 1 < sizeof a) {
        if (dqctl_dist_parse(a, &e, err, sizeof err) < 0) {
            abort(); /* the canonical text of a DIST is a DIST */
        }
        dqctl_dist_format(e, b, sizeof b);
        if (strcmp(a, b) != 0) {
            abort();
        }
        dqctl_dist_free(e);
    }
    struct dqctl_dist *leaf = dqctl_dist_leaf(d);
    if (dqctl_dist_is_measured(leaf)) {
        double pdf[8] = {0.1, 0.2, 0, 0.3, 0, 0, 0.1, 0.05};
        if (dq_from_pdf(leaf->kind == DQCTL_DIST_SNAPSHOT ? 3 : -2, 8, pdf, &leaf->measured)) {
            abort();
        }
    }
    double bound = dqctl_dist_bound(d), res = dqctl_dist_resolution(d);
    if (isnan(bound) || bound < 0.0 || isnan(res) || res < 0.0) {
        abort();
    }
    /* the default grid's hint: never NaN, and a grid always comes of it */
    struct dq_hint h;
    dqctl_dist_hint(d, &h);
    int gk = 0, gn = 0, cov = 0;
    if (isnan(h.hi) || h.hi < 0.0 || isnan(h.fmax) || h.fmax < 0.0 ||
        dq_grid_choose(&h, 0, &gk, &gn, &cov) != DQ_OK || dq_check_grid(gk, gn) != DQ_OK) {
        abort();
    }
    struct dq *q = NULL;
    if (leaf->kind != DQCTL_DIST_SAMPLES && dqctl_dist_build(d, 0, 64, &q, err, sizeof err) == 0) {
        double lost = dq_lost(q);
        if (!(lost >= 0.0 && lost <= 1.0)) {
            abort();
        }
    }
    dq_destroy(q);
    dqctl_dist_free(d);
}

static void fuzz_json(const uint8_t *data, size_t size) {
    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
    if (!j) {
        return;
    }
    char err[512];
    struct dq *q = NULL;
    if (dqctl_dq_from_json(j, &q, err, sizeof err) == 0) {
        double lost = dq_lost(q);
        struct dq *m = NULL;
        /* factors from the input: any finite factor ≥ 0, any finite offset */
        double f = (double)(size % 7) * 0.37, o = ((double)(size % 11) - 5.0) * 0.003;
        if (dqctl_dq_map(q, f, o, q->k, q->n, &m) != DQ_OK || dq_lost(m) < lost - 1e-9) {
            abort(); /* a transformation never brings lost mass back */
        }
        dq_destroy(m);
        dq_destroy(q);
    }
    const char *probes[] = {"db", "a"};
    for (int i = 0; i < 4; i++) {
        const json_t *e = dqctl_snapshot_pick(j, probes[i / 2], i % 2, err, sizeof err);
        if (e && dqctl_dq_from_json(e, &q, err, sizeof err) == 0) {
            dq_destroy(q);
        }
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) {
        return 0;
    }
    char *text = malloc(size + 1);
    if (!text) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_text(text);
    free(text);
    fuzz_json(data, size);
    dq_engine_cleanup();
    return 0;
}
