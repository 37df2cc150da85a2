/*
 * dqctl_dist.h: the distributions of `dqctl model --set NAME=DIST` (docs/outcome-diagrams.md):
 * the DIST parser, the what-if transformations scale and shift, a ΔQ read from dqd's JSON,
 * and a DIST's ΔQ built on a grid.
 *
 * Everything here is pure (no network, no files) so that tests and the fuzz target call
 * it directly: dqctl_model.c reads samples files and fetches the measured ΔQs into a
 * parsed DIST (the `durations…` and `measured` fields) before it builds.
 *
 * DIST := wait(T) | uniform(A,B) | exponential(RATE) | never | samples(PATH)
 *       | probe:NAME[@W] | calculated:NAME[@W] | snapshot:ID:NAME[:before|:after]
 *       | scale(DIST,K) | shift(DIST,S)
 * NAME is a probe name ([A-Za-z_][A-Za-z0-9_]*, 1 … 255 bytes, as in the wire protocol),
 * W the window back from the newest closed one (0 = latest, the default; `latest` too),
 * ID a snapshot id ≥ 1. Spaces and tabs around a DIST and its numbers are allowed.
 */
#ifndef DQCTL_DIST_H
#define DQCTL_DIST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dq.h"

#define DQCTL_DIST_MAX_DEPTH 16       /* transformations inside each other */
#define DQCTL_DIST_NAME_MAX 255       /* bytes of a probe name */
#define DQCTL_DIST_MAX_WINDOW 1000000 /* W of probe:NAME@W (dqd refuses W ≥ its ring) */

enum dqctl_dist_kind {
    DQCTL_DIST_WAIT,        /* a = T */
    DQCTL_DIST_UNIFORM,     /* [a, b] */
    DQCTL_DIST_EXPONENTIAL, /* a = rate */
    DQCTL_DIST_NEVER,
    DQCTL_DIST_SAMPLES,    /* path */
    DQCTL_DIST_PROBE,      /* the observed ΔQ of probe `name`, window `window` back */
    DQCTL_DIST_CALCULATED, /* the calculated one */
    DQCTL_DIST_SNAPSHOT,   /* probe `name` in snapshot `snapshot`, side `before` */
    DQCTL_DIST_SCALE,      /* every delay of `inner` times a = K */
    DQCTL_DIST_SHIFT,      /* every delay of `inner` plus a = S seconds (at least 0) */
};

struct dqctl_dist {
    enum dqctl_dist_kind kind;
    double a, b;
    char *path;                         /* samples: the file as written, owned */
    char name[DQCTL_DIST_NAME_MAX + 1]; /* probe, calculated, snapshot */
    long window;                        /* probe, calculated: 0 = the latest window */
    long long snapshot;                 /* snapshot: its id */
    int before;                         /* snapshot: 1 = newest window before the firing */
    struct dqctl_dist *inner;           /* scale, shift: owned */

    /* filled by the caller before dqctl_dist_build (dqctl_model.c) */
    double *durations; /* samples: successes in seconds, owned (freed by dqctl_dist_free) */
    size_t count;
    uint64_t n_failed, n_timeout;
    struct dq *measured; /* probe, calculated, snapshot: the ΔQ as dqd sent it, owned */
};

/*
 * Parses text into a new DIST tree (*out, free with dqctl_dist_free). Syntax only: no
 * file is read and nothing is fetched. Returns 0, or -1 with a one-line message naming
 * the offending part in err (e.g. "scale(DIST,K) needs a factor K ≥ 0 …; got `-1`").
 */
int dqctl_dist_parse(const char *text, struct dqctl_dist **out, char *err, size_t err_cap);

/* Releases a tree (NULL is a no-op), with its samples and measured ΔQs. */
void dqctl_dist_free(struct dqctl_dist *d);

/* The canonical text of a tree (numbers with 17 significant digits, `@W` only when W > 0,
 * the snapshot side always): dqctl_dist_parse gives the same tree back. Cut to cap. */
void dqctl_dist_format(const struct dqctl_dist *d, char *buf, size_t cap);

/* 1 when d is, or transforms, a ΔQ measured by dqd (probe, calculated, snapshot). */
int dqctl_dist_is_measured(const struct dqctl_dist *d);
int dqctl_dist_is_live(const struct dqctl_dist *d); /* d or anything inside it is measured */

/* The distribution at the bottom of d's transformations (d itself when it is none). */
struct dqctl_dist *dqctl_dist_leaf(struct dqctl_dist *d);

/*
 * An upper bound of the support in seconds: wait T → T, uniform → B, exponential λ →
 * ln(10⁹)/λ, never → 0, samples → the largest, a measured ΔQ → the upper edge of its last
 * bin with mass (0 when it has none), scale → K·bound, shift → max(0, bound + S). Leaves
 * must be loaded (a measured leaf without its ΔQ counts as 0).
 */
double dqctl_dist_bound(const struct dqctl_dist *d);

/*
 * The time resolution d carries, in seconds: 0 for closed forms and samples (continuous),
 * the bin width of a measured ΔQ, K·r for scale, r for shift.
 */
double dqctl_dist_resolution(const struct dqctl_dist *d);

/*
 * What a grid must resolve about d (engine dq.h, struct dq_hint), for the default grid of
 * dqctl model: the engine's leaf hints for wait, uniform, exponential and never; for
 * samples their range, moments, failed share and a density estimate (the densest run of
 * max(5, count/20) sorted durations); a measured ΔQ's dq_hint_dq (its bins the finest
 * width that means anything); scale and shift applied to their inner DIST's hint. Leaves
 * must be loaded (an unfetched measured leaf counts as a wait of 0).
 */
void dqctl_dist_hint(const struct dqctl_dist *d, struct dq_hint *h);

/*
 * d's ΔQ on the grid (k, n) into *out. Closed forms and samples use the engine's
 * constructors; a measured ΔQ is re-expressed (dq_reexpress: whole bins summed onto a
 * coarser grid, spread evenly onto a finer one; beyond the horizon it is lost). scale and
 * shift map their inner ΔQ with
 * dqctl_dq_map: a measured inner ΔQ from its own grid, any other from the finest grid of
 * DQ_MAX_BINS bins that covers its bound. Returns 0, or -1 with a message in err.
 */
int dqctl_dist_build(const struct dqctl_dist *d, int k, int n, struct dq **out, char *err,
                     size_t err_cap);

/*
 * The transformation t ↦ max(0, factor·t + offset) of every delay of a, onto the grid
 * (k, n). Bin i of a holds its mass spread evenly over the delays it collects,
 * (i·w, (i+1)·w] (dq.h); that interval is mapped, the part that falls below 0 is put at 0
 * (bin 0), and each bin j of the result gets the mass in proportion to the overlap of the
 * mapped interval with (j·w', (j+1)·w']. A point mass (a's atoms: waits; its atom at 0)
 * is mapped as a point, into the bin holding its image; when every one lands on a right
 * edge the result is made of point masses too (shift(wait(1),0.5) is wait(1.5)). Mass
 * mapped beyond the horizon n·w' is lost; a's lost mass stays lost (and failed). An
 * interval mapped to one point (factor 0) is a point mass. factor must be finite and ≥ 0,
 * offset finite (else DQ_EINVAL). Returns a dq_error code; dq_last_error() says why.
 */
int dqctl_dq_map(const struct dq *a, double factor, double offset, int k, int n, struct dq **out);

/*
 * A ΔQ from one of dqd's ΔQ objects (GET /api/v1/probes/NAME/dq, an element of a
 * snapshot's "dqs"): "bin_width" (0.001 s · 2^k, k in −10 … 10), "bins" (1 … 4096) and
 * "pdf" (bins masses ≥ 0 summing to at most 1), or "cdf" when there is no "pdf", and
 * "lag" (the lower bound's, when present). The lost mass is 1 − Σ pdf. Returns 0, or -1
 * with a message in err.
 */
int dqctl_dq_from_json(const json_t *obj, struct dq **out, char *err, size_t err_cap);

/*
 * The observed ΔQ of probe in a snapshot (the data of GET /api/v1/snapshots/ID): the
 * newest window after the firing (start ≥ "time"; before = 0) or before it (end ≤
 * "time", the firing window among them; before = 1). Returns the object (borrowed from
 * snap), or NULL with a message in err (no such probe in it, none on that side yet).
 */
const json_t *dqctl_snapshot_pick(const json_t *snap, const char *probe, int before, char *err,
                                  size_t err_cap);

#endif /* DQCTL_DIST_H */
