/*
 * probes.c: the probe table and window builder (see core.h, first part). The hot path is
 * record() (probes_record_line for the line protocol): one compare with the probe last seen
 * under the name's hash, a few arithmetic operations and increments, all inlined into one
 * function (docs/PERFORMANCE.md, "Ingest").
 * Where an instance came from costs one more compare there (the probe's origin against
 * the instance's; a change of origin takes the slow path once, and nearly every read
 * carries one origin), plus the node's moments once the probe is split by node. Deciding
 * which empty windows are no data is done at window close.
 */
#include "core_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "wire.h"

#define NODE_ROWS (PROBES_MAX_NODES + 1) /* the named nodes, then the pooled one */
#define NODE_OTHER PROBES_MAX_NODES      /* the pooled nodes' row */
#define ORIGIN_UNRESOLVED UINT32_MAX     /* probe.node_origin: find the node again */
#define MAX_NODE_NAMES (1u << 20)        /* interned node names at most */
/* the hot path's helpers, inlined whatever the compiler's estimate of their size */
#define HOT_INLINE static inline __attribute__((always_inline))
#define UNLIKELY(c) __builtin_expect(!!(c), 0) /* rare on the hot path: laid out after it */

/* An open window's moments of one node. */
struct node_acc {
    uint64_t ok, fa, to, out;
    double sum, sumsq;
};

/* Per-node moments of a probe, one allocation: the open windows' rows (table->nslots ×
 * NODE_ROWS, in the probe's slot order), then the closed ones (ring_cap × NODE_ROWS, row
 * wid % ring_cap, tagged with its window). */
struct probe_split {
    int n_named;                     /* named nodes */
    int other_used;                  /* the pooled row was used */
    uint32_t node[PROBES_MAX_NODES]; /* interned node of each named row */
    int ring_cap;
    int64_t *ring_wid;               /* ring_cap: the window of each closed row, −1: none */
    struct probe_node_moments *ring; /* ring_cap × NODE_ROWS */
    struct node_acc open[];          /* nslots × NODE_ROWS */
};

/* The parser hashes every instance's name while checking it (msg->name_hash), so the
 * table uses the same function and ingest never reads a name twice. */
static uint32_t hash_name(const char *s, size_t n) {
    return (uint32_t)wire_name_hash(s, n);
}

static int name_valid(const char *s, size_t n) {
    if (!s || n == 0 || n > PROBES_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return 0;
        }
    }
    return 1;
}

int probes_grid(double dmax_ms, int bins, int *k, int *n) {
    if (!isfinite(dmax_ms) || !(dmax_ms > 0.0)) {
        return dq_fail(DQ_ERANGE, "dMax %g ms must be a positive time", dmax_ms);
    }
    if (bins < DQ_MIN_BINS || bins > DQ_MAX_BINS) {
        return dq_fail(DQ_ERANGE, "bins = %d out of range [%d, %d]", bins, DQ_MIN_BINS,
                       DQ_MAX_BINS);
    }
    for (int kk = DQ_MIN_K; kk <= DQ_MAX_K; kk++) {
        double w_ms = ldexp(1.0, kk);
        if (w_ms * bins >= dmax_ms * (1 - 1e-12)) {
            double need = ceil(dmax_ms / w_ms - 1e-9);
            *k = kk;
            *n = need < 1 ? 1 : (int)need;
            return DQ_OK;
        }
    }
    return dq_fail(DQ_ERANGE, "dMax %g ms needs more than %d bins of %g ms", dmax_ms, bins,
                   ldexp(1.0, DQ_MAX_K));
}

/*
 * Adds [lo, hi] to the slot's busy time: merged with the kept segments it touches, or
 * kept as a segment of its own; the oldest segment is let go (counted, no longer
 * mergeable) when there is no room. A single FIFO server is busy exactly while a request
 * is in the station, so this is its busy time whatever order the instances come in, as
 * long as none reaches back past the kept segments.
 */
static void busy_add_slow(struct probe_slot *s, int64_t lo, int64_t hi);

HOT_INLINE void busy_add(struct probe_slot *s, int64_t lo, int64_t hi) {
    int n = s->busy_n;
    if (n > 0 && lo >= s->busy_seg[n - 1][0] && lo <= s->busy_seg[n - 1][1]) {
        /* the usual order: merged with the newest segment */
        s->busy_seg[n - 1][1] = hi > s->busy_seg[n - 1][1] ? hi : s->busy_seg[n - 1][1];
        return;
    }
    busy_add_slow(s, lo, hi);
}

/* busy_add() when [lo, hi] does not touch the newest segment from inside it. */
static void busy_add_slow(struct probe_slot *s, int64_t lo, int64_t hi) {
    int n = s->busy_n, i = 0;
    if (n > 0 && lo >= s->busy_seg[n - 1][0]) {
        i = n; /* after every kept segment */
    }
    while (i < n && s->busy_seg[i][1] < lo) {
        i++; /* segments wholly before */
    }
    int j = i;
    while (j < n && s->busy_seg[j][0] <= hi) {
        lo = s->busy_seg[j][0] < lo ? s->busy_seg[j][0] : lo;
        hi = s->busy_seg[j][1] > hi ? s->busy_seg[j][1] : hi;
        j++; /* segments it touches: merged */
    }
    if (j > i) {
        s->busy_seg[i][0] = lo;
        s->busy_seg[i][1] = hi;
        memmove(&s->busy_seg[i + 1], &s->busy_seg[j], (size_t)(n - j) * sizeof s->busy_seg[0]);
        s->busy_n = n - (j - i - 1);
        return;
    }
    if (n == PROBES_BUSY_SEGMENTS) {
        if (i == 0) { /* before everything kept: counted on its own */
            s->busy_ns += hi - lo;
            return;
        }
        s->busy_ns += s->busy_seg[0][1] - s->busy_seg[0][0];
        memmove(&s->busy_seg[0], &s->busy_seg[1], (size_t)(n - 1) * sizeof s->busy_seg[0]);
        n--;
        i--;
    }
    memmove(&s->busy_seg[i + 1], &s->busy_seg[i], (size_t)(n - i) * sizeof s->busy_seg[0]);
    s->busy_seg[i][0] = lo;
    s->busy_seg[i][1] = hi;
    s->busy_n = n + 1;
}

static void slot_clear(struct probe_slot *s, int n) {
    s->wid = -1;
    s->ok = s->fa = s->to = s->out = 0;
    s->sum = s->sumsq = s->min = s->max = 0.0;
    s->busy_n = 0;
    s->busy_ns = 0;
    s->overtaken = 0;
    if (s->counts) {
        memset(s->counts, 0, sizeof(uint32_t) * (size_t)n);
    }
}

static void window_release(struct probe_window *w) {
    dq_destroy(w->observed);
    dq_destroy(w->calculated);
    memset(w, 0, sizeof *w);
}

static void probe_destroy(struct probe *p, int nslots, int ring_cap) {
    if (!p) {
        return;
    }
    free(p->split);
    free(p->ex);
    if (p->slots) {
        for (int i = 0; i < nslots; i++) {
            free(p->slots[i].counts);
        }
    }
    if (p->ring) {
        for (int i = 0; i < ring_cap; i++) {
            window_release(&p->ring[i]);
        }
    }
    free(p->slots);
    free(p->ring);
    free(p);
}

/* (Re)allocates p's slot histograms for its grid; clears every open window. */
/*
 * Gives p's slots histograms for n bins (all made before any is replaced, so a failure
 * leaves the old ones, of the old size, in place) and clears every open window.
 */
static int probe_alloc_slots(struct probe_table *t, struct probe *p, int n) {
    uint32_t *fresh[PROBES_MAX_SLOTS];
    int ns = t->nslots;
    for (int i = 0; i < ns; i++) {
        fresh[i] = calloc((size_t)n, sizeof(uint32_t));
        if (!fresh[i]) {
            while (i-- > 0) {
                free(fresh[i]);
            }
            return dq_fail(DQ_ENOMEM, "no memory for the histograms of probe %s", p->name);
        }
    }
    for (int i = 0; i < ns; i++) {
        free(p->slots[i].counts);
        p->slots[i].counts = fresh[i];
        slot_clear(&p->slots[i], n);
    }
    if (p->split) {
        memset(p->split->open, 0, sizeof p->split->open[0] * (size_t)ns * NODE_ROWS);
    }
    probes__ex_clear_open(p);
    return DQ_OK;
}

int probes_init(struct probe_table *t, size_t max_probes, int64_t window_ns, int64_t lag_ns,
                int ring_cap, double default_dmax_ms, int default_bins, int64_t now_ns) {
    memset(t, 0, sizeof *t);
    if (max_probes < 1 || max_probes > 1000000 || window_ns <= 0 || lag_ns < 0 || ring_cap < 1) {
        return dq_fail(DQ_EINVAL,
                       "probe table: bad sizes (max %zu, window %lld ns, lag %lld "
                       "ns, ring %d)",
                       max_probes, (long long)window_ns, (long long)lag_ns, ring_cap);
    }
    int rc = probes_grid(default_dmax_ms, default_bins, &t->default_k, &t->default_n);
    if (rc) {
        return rc;
    }
    t->cap = max_probes;
    t->index_size = 16;
    while (t->index_size < 2 * max_probes) {
        t->index_size *= 2;
    }
    t->probes = calloc(max_probes, sizeof *t->probes);
    t->index = malloc(sizeof *t->index * t->index_size);
    if (!t->probes || !t->index) {
        probes_release(t);
        return dq_fail(DQ_ENOMEM, "no memory for a table of %zu probes", max_probes);
    }
    for (size_t i = 0; i < t->index_size; i++) {
        t->index[i] = -1;
    }
    t->window_ns = window_ns;
    t->lag_ns = lag_ns;
    /* the windows the lag keeps open, two more (the one being filled and the next), and
     * room for a stall */
    t->nslots = (int)((lag_ns + window_ns - 1) / window_ns) + 2 + PROBES_STALL_WINDOWS;
    if (t->nslots > PROBES_MAX_SLOTS) {
        int64_t w = window_ns / 1000000, l = lag_ns / 1000000;
        probes_release(t);
        return dq_fail(DQ_ERANGE,
                       "lag %lld ms is more than %d windows of %lld ms: every open window "
                       "costs a histogram per probe; use a longer window or a shorter lag",
                       (long long)l, PROBES_MAX_SLOTS - 2 - PROBES_STALL_WINDOWS, (long long)w);
    }
    t->ring_cap = ring_cap;
    t->default_dmax_ms = default_dmax_ms;
    t->range_min_ms = 1.0;
    t->range_max_ms = 60000.0;
    /* windows that ended less than the lag ago are still open: lines in flight at a
     * (re)start are not lost */
    t->next_close = probes_window_of(t, now_ns - lag_ns);
    t->open_ns = now_ns;
    t->wake_by_ns = INT64_MAX;
    return DQ_OK;
}

void probes_release(struct probe_table *t) {
    if (!t) {
        return;
    }
    for (size_t i = 0; i < t->count; i++) {
        probe_destroy(t->probes[i], t->nslots, t->ring_cap);
    }
    free(t->probes);
    free(t->index);
    free(t->origins);
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

int64_t probes_window_of(const struct probe_table *t, int64_t ns) {
    int64_t w = ns / t->window_ns;
    return (ns < 0 && w * t->window_ns != ns) ? w - 1 : w;
}

static inline uint64_t load64(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t load32(const char *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/*
 * 1 when the n ≥ 1 bytes at a and b are equal. Names are short, and a libc memcmp call
 * cost as much as the rest of the lookup: whole words, the tail as an overlapping word,
 * never reading outside either run.
 */
static inline int name_eq(const char *a, const char *b, size_t n) {
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 < n; i += 8) {
            if (load64(a + i) != load64(b + i)) {
                return 0;
            }
        }
        return load64(a + n - 8) == load64(b + n - 8);
    }
    if (n >= 4) {
        return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    }
    return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

static inline size_t slot_of(const struct probe_table *t, uint32_t h, const char *name, size_t len,
                             int *found) {
    size_t mask = t->index_size - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        int32_t at = t->index[i];
        if (at < 0) {
            *found = 0;
            return i;
        }
        struct probe *p = t->probes[at];
        if (p->hash == h && p->name_len == len && name_eq(p->name, name, len)) {
            *found = 1;
            return i;
        }
    }
}

struct probe *probes_find(struct probe_table *t, const char *name, size_t len) {
    if (!t->index || !name || len == 0 || len > PROBES_NAME_MAX) {
        return NULL;
    }
    int found;
    size_t i = slot_of(t, hash_name(name, len), name, len, &found);
    return found ? t->probes[t->index[i]] : NULL;
}

/* Who registers a name: a person, the diagram or the config (from_wire 0), or an instance
 * from origin, its source's new names in peer (NULL: the origin's) at now. */
struct registrar {
    int from_wire;
    uint32_t origin;
    struct probe_name_bucket *peer;
    int64_t now;
};

static int probe_register(struct probe_table *t, const char *name, size_t len,
                          const struct registrar *who, struct probe **out);

int probes_get(struct probe_table *t, const char *name, size_t len, struct probe **out) {
    static const struct registrar person = {0};
    return probe_register(t, name, len, &person, out);
}

static int probe_register(struct probe_table *t, const char *name, size_t len,
                          const struct registrar *who, struct probe **out) {
    int from_wire = who->from_wire;
    if (!name_valid(name, len)) {
        return dq_fail(DQ_EINVAL,
                       "invalid probe name (want [A-Za-z_][A-Za-z0-9_]*, at most "
                       "%d bytes)",
                       PROBES_NAME_MAX);
    }
    uint32_t h = hash_name(name, len);
    int found;
    size_t i = slot_of(t, h, name, len, &found);
    if (found) {
        *out = t->probes[t->index[i]];
        return DQ_OK;
    }
    if (from_wire && !core__name_allowed(t, who->origin, who->peer, who->now)) {
        t->name_rate++;
        return dq_fail(DQ_EFULL, "over new_names_per_second for this source or "
                                 "new_names_global_per_second");
    }
    size_t before = t->count;
    int rc = core__make_room(t, from_wire);
    if (rc) {
        return rc;
    }
    if (t->count != before) {
        i = slot_of(t, h, name, len, &found); /* the index was rebuilt */
    }
    struct probe *p = calloc(1, sizeof *p);
    if (!p) {
        return dq_fail(DQ_ENOMEM, "no memory for a probe");
    }
    memcpy(p->name, name, len);
    p->name_len = len;
    p->hash = h;
    p->index = (int)t->count;
    p->dmax_ms = t->default_dmax_ms;
    p->from_wire = from_wire;
    p->last_wid = t->next_close;
    p->busy_prev_wid = INT64_MIN;
    p->last_start = INT64_MIN;
    p->k = t->default_k;
    p->n = t->default_n;
    p->slots = calloc((size_t)t->nslots, sizeof *p->slots);
    p->ring = calloc((size_t)t->ring_cap, sizeof *p->ring);
    p->ring_cap = t->ring_cap;
    p->inv_width_ns = 1.0 / (ldexp(1.0, p->k) * 1e6);
    p->auto_range = t->auto_range;
    p->range_min_ms = t->range_min_ms;
    p->range_max_ms = t->range_max_ms;
    rc = (p->slots && p->ring) ? probe_alloc_slots(t, p, p->n)
                               : dq_fail(DQ_ENOMEM, "no memory for a probe");
    if (rc) {
        probe_destroy(p, t->nslots, t->ring_cap);
        return rc;
    }
    t->probes[t->count++] = p;
    t->index[i] = p->index;
    *out = p;
    return DQ_OK;
}

static void origin_unref(struct probe_table *t, uint32_t id);

/* Open addressing without tombstones: the index is rebuilt after removals. */
void core__index_rebuild(struct probe_table *t) {
    for (size_t i = 0; i < t->index_size; i++) {
        t->index[i] = -1;
    }
    for (size_t j = 0; j < t->count; j++) {
        struct probe *q = t->probes[j];
        int found;
        t->index[slot_of(t, q->hash, q->name, q->name_len, &found)] = (int32_t)j;
    }
}

void core__probe_free(struct probe_table *t, struct probe *p) {
    for (size_t i = 0; i < sizeof t->recent / sizeof t->recent[0]; i++) {
        if (t->recent[i] == p) {
            t->recent[i] = NULL;
        }
    }
    uint32_t o = p->origin, so = p->silent_origin;
    p->origin = p->silent_origin = 0;
    origin_unref(t, o);
    origin_unref(t, so);
    probe_destroy(p, t->nslots, t->ring_cap);
}

int probes_remove(struct probe_table *t, struct probe *p) {
    if (!p || p->index < 0 || (size_t)p->index >= t->count || t->probes[p->index] != p) {
        return dq_fail(DQ_EINVAL, "not a probe of this table");
    }
    /* the last probe takes its place, so the array stays dense */
    size_t at = (size_t)p->index;
    t->probes[at] = t->probes[t->count - 1];
    t->probes[at]->index = (int)at;
    t->probes[--t->count] = NULL;
    core__index_rebuild(t); /* O(table): a person's act, or a new name finding no room */
    core__probe_free(t, p);
    return DQ_OK;
}

int probes_set_dmax(struct probe_table *t, struct probe *p, double dmax_ms, int bins) {
    int k, n;
    int rc = probes_grid(dmax_ms, bins > 0 ? bins : p->n, &k, &n);
    if (rc) {
        return rc;
    }
    if (k == p->k && n == p->n) {
        p->dmax_ms = dmax_ms;
        p->dmax_set = 1;
        return DQ_OK;
    }
    rc = probe_alloc_slots(t, p, n);
    if (rc) {
        return rc; /* the old grid, dMax and histograms stay as they were */
    }
    p->dmax_ms = dmax_ms;
    p->dmax_set = 1;
    p->k = k;
    p->n = n;
    p->inv_width_ns = 1.0 / (ldexp(1.0, p->k) * 1e6);
    return DQ_OK;
}

int probes_set_auto_range(struct probe_table *t, int on, double min_ms, double max_ms) {
    if (!(min_ms > 0.0) || !(max_ms >= min_ms) || !isfinite(max_ms)) {
        return dq_fail(DQ_ERANGE, "auto-range: [%g, %g] ms is not a range of dMax", min_ms, max_ms);
    }
    t->auto_range = on != 0;
    t->range_min_ms = min_ms;
    t->range_max_ms = max_ms;
    return DQ_OK;
}

/* A duration in units of 15.625 µs (2^−6 ms), rounded up: ⌈d / 15625 ns⌉ for d > 0. The
 * Prometheus buckets' edges and every grid edge of width 2^k ms with k ≥ −6 are multiples. */
static inline int64_t ticks_of(int64_t d_ns) {
    return (d_ns + 15624) / 15625;
}

/* Prometheus bucket of a duration of q ticks: the smallest j with d ≤ 2^(j−6) ms (edges
 * are exact integers in ns: 15625 ns · 2^j); PROBES_HIST_BUCKETS for longer durations
 * (+Inf only). */
static inline int bucket_of_ticks(int64_t q) {
    if (q <= 1) {
        return 0;
    }
    int j = 64 - __builtin_clzll((unsigned long long)(q - 1));
    return j < PROBES_HIST_BUCKETS ? j : PROBES_HIST_BUCKETS;
}

/* Below this the exact bin (integers) and the engine's rule (doubles, a time within 1e−12
 * of an edge on it) agree: a duration 1 ns past an edge is more than 1e−12 past it. */
#define EXACT_BIN_NS (INT64_C(1) << 39)

/*
 * up = the bin's index + 1 (0 for d ≤ 0) of a duration of d_ns (q = ticks_of(d_ns)) on
 * the slot's grid: ⌈d / w⌉ with a time within 1e−12 of an edge on it, as the engine's
 * (dq.h). On a grid of 2^k ms with k ≥ −6 the width is 2^(k+6) ticks and
 * ⌈d / w⌉ = ⌈q / 2^(k+6)⌉ in integers, exact (the same bin as the rule below up to
 * EXACT_BIN_NS: test_probes.c, case bins, on every grid); finer grids and longer durations
 * take the rule in doubles.
 */
static inline int64_t bin_up(const struct probe_slot *s, int64_t d_ns, int64_t q) {
    if (d_ns <= 0) {
        return 0;
    }
    if (s->k >= -6 && d_ns < EXACT_BIN_NS) {
        int m = s->k + 6;
        return (q + ((INT64_C(1) << m) - 1)) >> m;
    }
    double x = (double)d_ns * s->inv_width_ns * (1 - 1e-12);
    int64_t up = (int64_t)x;
    return up + ((double)up < x);
}

int probes_bucket_of(int64_t d_ns) {
    return bucket_of_ticks(ticks_of(d_ns));
}

double probes_bucket_le(int j) {
    return ldexp(1.0, j - 6) * 1e-3;
}

int probes_record(struct probe_table *t, const char *name, size_t len, uint32_t origin,
                  int64_t start_ns, int64_t end_ns, enum probe_status status) {
    return probes_record_hashed(t, name, len, wire_name_hash(name, len), origin, start_ns, end_ns,
                                status);
}

static void probe_switch_origin(struct probe_table *t, struct probe *p, uint32_t origin);

/* Busy time, also of a timed-out instance: it was in the station at least until its
 * deadline (a saturated station's instances nearly all time out, and without theirs its
 * busy time would read low). What the previous window (the slot before si: no division
 * here) counted already: its busy time up to its newest segment's end (still open, or as it
 * closed). That end is an instance's END in the previous window, before this window's
 * start lo_ns: an instance that starts in this window (nearly all) has nothing counted. */
HOT_INLINE void busy_record(const struct probe_table *t, struct probe *p, int si, int64_t wid,
                            int64_t lo_ns, int64_t start_ns, int64_t end_ns) {
    struct probe_slot *s = &p->slots[si];
    if (start_ns >= lo_ns) {
        busy_add(s, start_ns, end_ns);
        return;
    }
    const struct probe_slot *prev = &p->slots[si > 0 ? si - 1 : t->nslots - 1];
    int64_t carry = prev->wid == wid - 1 && prev->busy_n > 0 ? prev->busy_seg[prev->busy_n - 1][1]
                    : p->busy_prev_wid == wid - 1            ? p->busy_prev_hi
                                                             : INT64_MIN;
    int64_t lo = start_ns > carry ? start_ns : carry;
    if (lo < end_ns) {
        busy_add(s, lo, end_ns);
    }
}

/* record() when the name is not the one last seen under its hash: the index, or a new
 * probe (registered; a span's new name counts against src->peer). Out of the hot path. */
static __attribute__((noinline, cold)) int record_find(struct probe_table *t, const char *name,
                                                       size_t len, uint64_t hash, uint32_t origin,
                                                       const struct probe_span_source *src,
                                                       struct probe **out) {
    struct probe *p = NULL;
    if (t->index && len > 0 && len <= PROBES_NAME_MAX) {
        int found;
        size_t i = slot_of(t, (uint32_t)hash, name, len, &found);
        p = found ? t->probes[t->index[i]] : NULL;
        t->recent[hash & 63] = p;
    }
    if (!p) {
        struct registrar who = {.from_wire = 1,
                                .origin = origin,
                                .peer = src ? src->peer : NULL,
                                .now = src ? src->now_ns : 0};
        int rc = probe_register(t, name, len, &who, &p);
        if (rc) {
            return rc;
        }
    }
    *out = p;
    return DQ_OK;
}

/* probes_record_ident; with a span's source `src` an ok instance longer than dMax times
 * out, and a new name counts against src->peer. Inlined into each entry point, where src
 * and ident are often constants (the line protocol's path, 20 M instances/s, is here). */
HOT_INLINE int record(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                      uint32_t origin, int64_t start_ns, int64_t end_ns, enum probe_status status,
                      const struct probe_span_source *src, const struct probe_ident *ident) {
    int span = src != NULL;
    /* known names (nearly every line) skip the name check; probes_get registers */
    struct probe *p = t->recent[hash & 63];
    if (!(p && p->hash == (uint32_t)hash && p->name_len == len && name_eq(p->name, name, len))) {
        int rc = record_find(t, name, len, hash, origin, src, &p);
        if (rc) {
            return rc;
        }
    }
    if (UNLIKELY(p->node_origin != origin)) {
        probe_switch_origin(t, p, origin); /* another connection than the last instance's */
    }
    if (UNLIKELY(status == PROBE_TO && end_ns == 0)) {
        /* old oscilloscope wrappers report a timeout's END as 0: it is START + dMax */
        end_ns = start_ns + (int64_t)(p->dmax_ms * 1e6);
    } else if (span && status == PROBE_OK && end_ns - start_ns > (int64_t)(p->dmax_ms * 1e6)) {
        status = PROBE_TO; /* a span past the probe's deadline */
        end_ns = start_ns + (int64_t)(p->dmax_ms * 1e6);
    }
    int64_t wid;
    int si = -1;
    if ((uint64_t)end_ns - (uint64_t)t->cur_lo < (uint64_t)t->window_ns) {
        wid = t->cur_wid; /* nearly every line: same window as the last one */
        si = t->cur_slot;
    } else {
        wid = probes_window_of(t, end_ns);
    }
    if (UNLIKELY(wid < t->next_close || (wid < t->line_floor && !span))) {
        t->late++; /* closed, or closed to the line protocol (probes_set_line_lag) */
        p->late++;
        return DQ_ESTATE;
    }
    if (UNLIKELY(wid >= t->next_close + t->nslots)) {
        t->future++;
        return DQ_ESTATE;
    }
    p->last_wid = wid;
    if (end_ns > p->last_end_ns) {
        p->last_end_ns = end_ns;
    }
    if (si < 0) {
        si = (int)(wid % t->nslots);
        t->cur_wid = wid;
        t->cur_lo = wid * t->window_ns;
        t->cur_slot = si;
    }
    struct probe_slot *s = &p->slots[si];
    if (UNLIKELY(s->wid != wid)) {
        /* the window's first instance: it is binned on the probe's grid of now */
        s->wid = wid;
        s->k = p->k;
        s->inv_width_ns = p->inv_width_ns;
        s->dmax_ns = (int64_t)(p->dmax_ms * 1e6);
    }
    if (ident) {
        probes__ex_offer(t, p, si, wid, ident, origin, start_ns, end_ns, status);
    }
    busy_record(t, p, si, wid, t->cur_lo, start_ns, end_ns);
    if (status != PROBE_TO) {
        if (start_ns > p->last_start) {
            p->last_start = start_ns;
            p->last_start_end = end_ns;
        } else if (end_ns > p->last_start_end) {
            s->overtaken++; /* began before it, ended after it */
        }
    }
    struct node_acc *na = p->split ? &p->split->open[si * NODE_ROWS + p->node_slot] : NULL;
    if (status == PROBE_FA) {
        s->fa++;
        p->total_fa++;
        if (na) {
            na->fa++;
        }
        return DQ_OK;
    }
    if (status == PROBE_TO) {
        s->to++;
        p->total_to++;
        if (na) {
            na->to++;
        }
        return DQ_OK;
    }
    int64_t d_ns = end_ns - start_ns;
    int64_t q = ticks_of(d_ns);
    /* the bin (i·w, (i+1)·w] holding d: up − 1 (0 for d ≤ 0) */
    int64_t up = bin_up(s, d_ns, q);
    double d = (double)d_ns * 1e-9;
    p->total_ok++;
    p->total_sum += d;
    int hb = bucket_of_ticks(q);
    if (hb < PROBES_HIST_BUCKETS) {
        p->hist[hb]++;
    }
    if (d_ns > s->dmax_ns || up > p->n) {
        s->out++;
        p->total_out++;
        if (na) {
            na->out++;
        }
        return DQ_OK;
    }
    int idx = up > 0 ? (int)up - 1 : 0;
    s->counts[idx]++;
    if (s->ok == 0 || d < s->min) {
        s->min = d;
    }
    if (s->ok == 0 || d > s->max) {
        s->max = d;
    }
    s->ok++;
    s->sum += d;
    s->sumsq += d * d;
    if (na) {
        na->ok++;
        na->sum += d;
        na->sumsq += d * d;
    }
    return DQ_OK;
}

int probes_record_hashed(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                         uint32_t origin, int64_t start_ns, int64_t end_ns,
                         enum probe_status status) {
    return record(t, name, len, hash, origin, start_ns, end_ns, status, NULL, NULL);
}

int probes_record_ident(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                        uint32_t origin, int64_t start_ns, int64_t end_ns, enum probe_status status,
                        const struct probe_ident *ident) {
    return record(t, name, len, hash, origin, start_ns, end_ns, status, NULL, ident);
}

int probes_record_line(struct probe_table *t, uint32_t origin, const struct wire_msg *m) {
    enum probe_status st = m->status == WIRE_ST_OK   ? PROBE_OK
                           : m->status == WIRE_ST_FA ? PROBE_FA
                                                     : PROBE_TO;
    if (m->v2_fields && (m->trace.n || m->id.n || m->attrs.n)) {
        /* an instance that says which request it was: a candidate exemplar */
        struct probe_ident id = {.trace = m->trace.p,
                                 .trace_len = m->trace.n,
                                 .id = m->id.p,
                                 .id_len = m->id.n,
                                 .attrs = m->attrs.p,
                                 .attrs_len = m->attrs.n};
        return probes_record_ident(t, m->name.p, m->name.n, m->name_hash, origin, m->start_ns,
                                   m->end_ns, st, &id);
    }
    return record(t, m->name.p, m->name.n, m->name_hash, origin, m->start_ns, m->end_ns, st, NULL,
                  NULL);
}

int probes_record_span(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                       const struct probe_span_source *src, int64_t start_ns, int64_t end_ns,
                       int failed, const struct probe_ident *ident) {
    return record(t, name, len, hash, src->origin, start_ns, end_ns, failed ? PROBE_FA : PROBE_OK,
                  src, ident);
}

struct probe_window *probes_ring_get(struct probe *p, int back) {
    if (!p || back < 0 || back >= p->ring_len) {
        return NULL;
    }
    return &p->ring[(p->ring_head + p->ring_len - 1 - back) % p->ring_cap];
}

int probes_has_window(struct probe *p, int64_t wid) {
    struct probe_window *w = probes_ring_get(p, 0);
    return w && w->wid == wid;
}

struct probe_window *probes_ring_find(struct probe *p, int64_t wid) {
    for (int b = 0; p && b < p->ring_len; b++) {
        struct probe_window *w = probes_ring_get(p, b);
        if (w->wid == wid) {
            return w;
        }
        if (w->wid < wid) {
            break; /* newest first: older ones cannot match */
        }
    }
    return NULL;
}

/* Mean and ÷n variance from a window's sums, as the probe's own windows compute them. */
static void moments_of(uint64_t ok, double sum, double sumsq, double *mean, double *variance) {
    *mean = *variance = 0.0;
    if (ok > 0) {
        double m = sum / (double)ok;
        double var = sumsq / (double)ok - m * m;
        *mean = m;
        *variance = var > 0.0 ? var : 0.0;
    }
}

static int64_t ring_row(int64_t wid, int cap) {
    int64_t r = wid % cap;
    return r < 0 ? r + cap : r;
}

/* Moves the split's open rows of slot si (window wid when `has`, else nothing) to its
 * closed row for wid and clears them. */
static void split_close(struct probe_split *sp, int si, int64_t wid, int has) {
    int64_t r = ring_row(wid, sp->ring_cap);
    sp->ring_wid[r] = wid;
    for (int k = 0; k < NODE_ROWS; k++) {
        struct node_acc *a = &sp->open[si * NODE_ROWS + k];
        struct probe_node_moments *m = &sp->ring[r * NODE_ROWS + k];
        memset(m, 0, sizeof *m);
        if (has) {
            m->ok = a->ok;
            m->fa = a->fa;
            m->to = a->to;
            m->out = a->out;
            moments_of(a->ok, a->sum, a->sumsq, &m->mean, &m->variance);
        }
        memset(a, 0, sizeof *a);
    }
}

static void origin_ref(struct probe_table *t, uint32_t id);
static struct probe_origin *origin_at(const struct probe_table *t, uint32_t id);

/* 1 when origin id says nothing arrived since start: closed, or silent since then. */
static int origin_silent_since(const struct probe_table *t, uint32_t id, int64_t start) {
    const struct probe_origin *o = id < t->n_origins ? &t->origins[id] : NULL;
    return !o || !o->used || !o->connected || o->last_rx_ns < start;
}

/* Records whether window wid of p was no data, and extends or ends p's silent run. */
static void judge_window(struct probe_table *t, struct probe *p, int64_t wid, int has,
                         int any_live) {
    int64_t start = wid * t->window_ns;
    if (!has && start + t->window_ns <= t->open_ns) {
        return; /* over before dqd started: an empty window there says nothing */
    }
    const struct probe_origin *po = origin_at(t, p->origin);
    int nodata;
    if (po && po->silence_ns > 0) {
        /* a passive source sends only what happened: silent once a probe that had
         * instances has had none for silence_ns */
        nodata = p->enabled && !has && p->last_has_wid > 0 &&
                 (wid - p->last_has_wid) * t->window_ns >= po->silence_ns;
    } else {
        nodata = p->enabled && !has &&
                 (p->origin ? origin_silent_since(t, p->origin, start) : !any_live);
    }
    if (has) {
        p->last_has_wid = wid;
    }
    int64_t gap = wid - p->nodata_wid;
    if (gap >= PROBES_NODATA_WINDOWS || gap < 0) {
        p->nodata_bits = 0;
    } else {
        p->nodata_bits <<= gap;
    }
    p->nodata_bits |= (uint64_t)nodata;
    p->nodata_wid = wid;
    if (nodata) {
        if (p->silent_since == 0) {
            p->silent_since = start != 0 ? start : 1; /* 0 means "not silent" */
            p->silent_windows = 0;
        }
        p->silent_windows++;
        if (p->silent_origin != p->origin) {
            uint32_t old = p->silent_origin;
            origin_ref(t, p->origin);
            p->silent_origin = p->origin;
            origin_unref(t, old);
        }
    } else if (p->silent_since != 0) {
        uint32_t old = p->silent_origin;
        p->silent_since = 0;
        p->silent_windows = 0;
        p->silent_origin = 0;
        origin_unref(t, old);
    }
}

/*
 * A closed window joins p's quiet windows when it is among the PROBES_QUIET lowest-rate
 * full ones seen: enough ok instances, and the probe had instances in the window before
 * too (the first window after enabling is partial: few instances, yet as loaded as
 * any).
 */
static void quiet_offer(const struct probe_table *t, struct probe *p,
                        const struct probe_window *w) {
    if (w->ok < PROBES_QUIET_MIN_OK || p->ring_len == 0 ||
        probes_ring_get(p, 0)->wid != w->wid - 1) {
        return;
    }
    double rate = (double)(w->ok + w->fa + w->to + w->out) * 1e9 / (double)t->window_ns;
    int slot = p->n_quiet < PROBES_QUIET ? p->n_quiet : -1;
    if (slot < 0) {
        int worst = 0;
        for (int i = 1; i < p->n_quiet; i++) {
            worst = p->quiet[i].rate > p->quiet[worst].rate ? i : worst;
        }
        if (!(rate < p->quiet[worst].rate)) {
            return;
        }
        slot = worst;
    } else {
        p->n_quiet++;
    }
    p->quiet[slot] = (struct probe_quiet){
        .wid = w->wid, .rate = rate, .n = w->ok, .mean = w->mean, .busy = w->busy};
    p->quiet_dirty = 1;
}

int probes_close_window(struct probe_table *t, int64_t wid) {
    int result = DQ_OK;
    /* a probe never heard from is no data unless some connected origin is alive */
    int any_live = 0;
    for (uint32_t o = 1; o < t->n_origins && !any_live; o++) {
        any_live = !origin_silent_since(t, o, wid * t->window_ns);
    }
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        int si = (int)(wid % t->nslots);
        struct probe_slot *s = &p->slots[si];
        int has = s->wid == wid;
        if (p->split) {
            split_close(p->split, si, wid, has);
        }
        if (p->ex) {
            probes__ex_close(p, si, wid);
        }
        judge_window(t, p, wid, has, any_live);
        if (!has) {
            continue;
        }
        struct probe_window w = {.wid = wid,
                                 .ok = s->ok,
                                 .fa = s->fa,
                                 .to = s->to,
                                 .out = s->out,
                                 .overtaken = s->overtaken};
        w.partial = wid * t->window_ns < t->open_ns || t->stop_ns != 0;
        int64_t busy = s->busy_ns;
        for (int k = 0; k < s->busy_n; k++) {
            busy += s->busy_seg[k][1] - s->busy_seg[k][0];
        }
        if (s->busy_n > 0) {
            p->busy_prev_wid = wid;
            p->busy_prev_hi = s->busy_seg[s->busy_n - 1][1];
        }
        w.busy = (double)(busy < t->window_ns ? busy : t->window_ns) * 1e-9;
        if (s->ok > 0) {
            moments_of(s->ok, s->sum, s->sumsq, &w.mean, &w.variance);
            w.min = s->min;
            w.max = s->max;
        }
        for (int b = 0; b < p->n; b++) {
            t->scratch[b] = s->counts[b];
        }
        int rc = dq_from_counts(s->k, p->n, t->scratch, s->fa, s->to, s->out, &w.observed);
        if (rc == DQ_OK && s->k != p->k) {
            /* opened before a grid change: on the probe's grid of now, like its ring */
            struct dq *r = NULL;
            rc = dq_reexpress(w.observed, p->k, p->n, &r);
            if (rc == DQ_OK) {
                r->n_ok = w.observed->n_ok;
                r->n_fa = w.observed->n_fa;
                r->n_to = w.observed->n_to;
                r->n_out = w.observed->n_out;
            }
            dq_destroy(w.observed);
            w.observed = r;
        }
        if (rc) {
            result = rc;
        }
        slot_clear(s, p->n);
        if (!w.partial) { /* a partial window's rate is no window's rate */
            quiet_offer(t, p, &w);
        }
        if (p->ring_len == t->ring_cap) {
            window_release(&p->ring[p->ring_head]);
            p->ring_head = (p->ring_head + 1) % t->ring_cap;
            p->ring_len--;
        }
        p->ring[(p->ring_head + p->ring_len) % t->ring_cap] = w;
        p->ring_len++;
    }
    if (wid >= t->next_close) {
        t->next_close = wid + 1;
    }
    return result;
}

int probes_no_data(const struct probe *p, int64_t wid) {
    int64_t back = p->nodata_wid - wid;
    if (back < 0 || back >= PROBES_NODATA_WINDOWS) {
        return 0;
    }
    return (int)((p->nodata_bits >> back) & 1);
}

int probes_silence(const struct probe_table *t, const struct probe *p, struct probe_silence *out) {
    memset(out, 0, sizeof *out);
    probes_origin_get(t, p->silent_origin, &out->origin);
    if (p->silent_since == 0) {
        return 0;
    }
    out->run_start_ns = p->silent_since;
    /* dated from the last instance received (across a restart: before dqd started) */
    out->since_ns = p->last_end_ns > 0 ? p->last_end_ns : p->silent_since;
    out->windows = p->silent_windows;
    return 1;
}

void probes_stop(struct probe_table *t, int64_t now_ns) {
    t->stop_ns = now_ns > 0 ? now_ns : 1;
}

/* ---- origins and node names --------------------------------------------------------------- */

static void copy_cut(char *dst, size_t cap, const char *src) {
    size_t n = src ? strlen(src) : 0;
    n = n < cap - 1 ? n : cap - 1;
    if (n) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

static int node_in_use(const struct probe_node_name *nn) {
    return nn->pinned || nn->origins > 0;
}

/* The interned id of a node name ("" or NULL: 0), counted as named by one more origin. */
static int node_intern(struct probe_table *t, const char *name, uint32_t *out) {
    *out = 0;
    if (!name || !name[0]) {
        return DQ_OK;
    }
    char key[WIRE_MAX_LABEL + 1];
    copy_cut(key, sizeof key, name);
    uint32_t free_at = 0;
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        struct probe_node_name *nn = &t->nodes[i];
        if (!node_in_use(nn)) {
            free_at = free_at ? free_at : i;
        } else if (strcmp(nn->name, key) == 0) {
            nn->origins++;
            *out = i;
            return DQ_OK;
        }
    }
    if (!free_at) {
        if (t->n_nodes == 0) {
            t->n_nodes = 1; /* entry 0: none */
        }
        if (t->n_nodes >= t->nodes_cap) {
            uint32_t cap = t->nodes_cap ? t->nodes_cap * 2 : 16;
            if (cap > MAX_NODE_NAMES) {
                return dq_fail(DQ_EFULL, "more than %u node names", MAX_NODE_NAMES);
            }
            struct probe_node_name *nn = realloc(t->nodes, sizeof *nn * cap);
            if (!nn) {
                return dq_fail(DQ_ENOMEM, "no memory for node names");
            }
            if (t->nodes_cap == 0) {
                memset(&nn[0], 0, sizeof nn[0]);
            }
            t->nodes = nn;
            t->nodes_cap = cap;
        }
        free_at = t->n_nodes++;
    }
    struct probe_node_name *nn = &t->nodes[free_at];
    memset(nn, 0, sizeof *nn);
    memcpy(nn->name, key, sizeof key);
    nn->origins = 1;
    *out = free_at;
    return DQ_OK;
}

static void node_release(struct probe_table *t, uint32_t node) {
    if (node && node < t->n_nodes && t->nodes[node].origins > 0) {
        t->nodes[node].origins--;
    }
}

/* Frees an origin's entry once its connection closed and no probe names it. */
static void origin_free_if_unused(struct probe_table *t, uint32_t id) {
    struct probe_origin *o = &t->origins[id];
    if (o->used && !o->connected && o->refs == 0) {
        node_release(t, o->node);
        o->used = 0;
        o->node = 0;
    }
}

static void origin_ref(struct probe_table *t, uint32_t id) {
    if (id && id < t->n_origins) {
        t->origins[id].refs++;
    }
}

static void origin_unref(struct probe_table *t, uint32_t id) {
    if (id && id < t->n_origins && t->origins[id].refs > 0) {
        t->origins[id].refs--;
        origin_free_if_unused(t, id);
    }
}

int probes_origin_open(struct probe_table *t, const char *label, const char *node, const char *app,
                       uint32_t *out) {
    *out = 0;
    uint32_t id = 0;
    for (uint32_t i = 1; i < t->n_origins; i++) {
        if (!t->origins[i].used) {
            id = i;
            break;
        }
    }
    if (!id) {
        if (t->n_origins == 0) {
            t->n_origins = 1; /* entry 0: none */
        }
        if (t->n_origins >= t->origins_cap) {
            uint32_t cap = t->origins_cap ? t->origins_cap * 2 : 16;
            if (t->origins_cap >= PROBES_MAX_ORIGINS) {
                return dq_fail(DQ_EFULL, "more than %d connections tracked", PROBES_MAX_ORIGINS);
            }
            struct probe_origin *no = realloc(t->origins, sizeof *no * cap);
            if (!no) {
                return dq_fail(DQ_ENOMEM, "no memory for a connection's origin");
            }
            if (t->origins_cap == 0) {
                memset(&no[0], 0, sizeof no[0]);
            }
            t->origins = no;
            t->origins_cap = cap;
        }
        id = t->n_origins++;
    }
    struct probe_origin *o = &t->origins[id];
    memset(o, 0, sizeof *o);
    uint32_t nid = 0;
    node_intern(t, node, &nid); /* without a node name the origin has none (0) */
    o->used = 1;
    o->connected = 1;
    o->node = nid;
    copy_cut(o->label, sizeof o->label, label);
    copy_cut(o->app, sizeof o->app, app);
    *out = id;
    return DQ_OK;
}

static struct probe_origin *origin_at(const struct probe_table *t, uint32_t id) {
    return id && id < t->n_origins && t->origins[id].used ? &t->origins[id] : NULL;
}

int probes_origin_identify(struct probe_table *t, uint32_t origin, const char *node,
                           const char *app) {
    struct probe_origin *o = origin_at(t, origin);
    if (!o) {
        return dq_fail(DQ_EINVAL, "no origin %u", origin);
    }
    copy_cut(o->app, sizeof o->app, app);
    uint32_t nid = 0;
    int rc = node_intern(t, node, &nid);
    o = &t->origins[origin];
    if (nid == o->node) {
        node_release(t, nid); /* the same name: interning counted it once more */
        return rc;
    }
    node_release(t, o->node);
    o->node = nid;
    /* probes that last heard from it look their node up again at their next instance */
    for (size_t i = 0; i < t->count; i++) {
        if (t->probes[i]->node_origin == origin) {
            t->probes[i]->node_origin = ORIGIN_UNRESOLVED;
        }
    }
    return rc;
}

void probes_origin_heard(struct probe_table *t, uint32_t origin, int64_t now_ns) {
    if (origin && origin < t->n_origins) {
        t->origins[origin].last_rx_ns = now_ns;
    }
    if (t->line_lag_on) {
        /* read after dqd did not run: what waited was sent at awake_ns or later */
        int64_t sent = now_ns > t->wake_by_ns ? t->awake_ns : now_ns;
        t->line_floor = probes_window_of(t, sent - t->line_lag_ns);
    }
}

void probes_loop_waits(struct probe_table *t, int64_t now_ns, int64_t wake_by_ns) {
    t->awake_ns = now_ns;
    t->wake_by_ns = wake_by_ns;
}

void probes_set_line_lag(struct probe_table *t, int64_t line_lag_ns) {
    t->line_lag_on = line_lag_ns >= 0 && line_lag_ns < t->lag_ns;
    t->line_lag_ns = t->line_lag_on ? line_lag_ns : 0;
    t->line_floor = 0;
}

void probes_origin_set_passive(struct probe_table *t, uint32_t origin, int64_t silence_ns) {
    struct probe_origin *o = origin_at(t, origin);
    if (o) {
        o->silence_ns = silence_ns > 0 ? silence_ns : 1;
    }
}

void probes_origin_closed(struct probe_table *t, uint32_t origin) {
    struct probe_origin *o = origin_at(t, origin);
    if (o) {
        o->connected = 0;
        origin_free_if_unused(t, origin);
    }
}

void probes_origin_set_kind(struct probe_table *t, uint32_t origin, const char *kind) {
    struct probe_origin *o = origin_at(t, origin);
    if (o) {
        copy_cut(o->kind, sizeof o->kind, kind);
    }
}

int probes_restore_origin(struct probe_table *t, struct probe *p, const char *label,
                          const char *node, const char *app, const char *kind) {
    uint32_t id = 0;
    int rc = probes_origin_open(t, label, node, app, &id);
    if (rc) {
        return rc;
    }
    t->origins[id].restored = 1;
    probes_origin_set_kind(t, id, kind);
    probe_switch_origin(t, p, id); /* p names it (its node too): kept while p does */
    p->origin_dirty = 0;           /* the store has it */
    probes_origin_closed(t, id);
    return DQ_OK;
}

int probes_origin_get(const struct probe_table *t, uint32_t origin, struct probe_origin_info *out) {
    memset(out, 0, sizeof *out);
    out->label = out->node = out->app = out->kind = "";
    const struct probe_origin *o = origin_at(t, origin);
    if (!o) {
        return DQ_EINVAL;
    }
    out->id = origin;
    out->label = o->label;
    out->node = o->node ? t->nodes[o->node].name : "";
    out->app = o->app;
    out->kind = o->kind;
    out->connected = o->connected;
    out->restored = o->restored;
    out->last_rx_ns = o->last_rx_ns;
    return DQ_OK;
}

/* ---- per-node moments ---------------------------------------------------------------------- */

/*
 * Gives p its per-node storage, the first node in row 0: the open windows and the closed
 * ones it still has came from that node alone, so they are copied there.
 */
static int split_alloc(struct probe_table *t, struct probe *p) {
    size_t open = (size_t)t->nslots * NODE_ROWS;
    size_t cap = (size_t)t->ring_cap;
    size_t size = sizeof(struct probe_split) + sizeof(struct node_acc) * open +
                  sizeof(int64_t) * cap + sizeof(struct probe_node_moments) * cap * NODE_ROWS;
    void *(*alloc)(size_t, size_t) = t->split_calloc ? t->split_calloc : calloc;
    struct probe_split *sp = alloc(1, size);
    if (!sp) {
        return dq_fail(DQ_ENOMEM, "no memory to split probe %s by node", p->name);
    }
    sp->ring_cap = t->ring_cap;
    sp->ring_wid = (int64_t *)(void *)&sp->open[open];
    sp->ring = (struct probe_node_moments *)(void *)&sp->ring_wid[cap];
    for (size_t i = 0; i < cap; i++) {
        sp->ring_wid[i] = -1;
    }
    sp->n_named = 1;
    sp->node[0] = p->node_first;
    for (int i = 0; i < t->nslots; i++) {
        const struct probe_slot *s = &p->slots[i];
        if (s->wid >= 0) {
            sp->open[i * NODE_ROWS] = (struct node_acc){.ok = s->ok,
                                                        .fa = s->fa,
                                                        .to = s->to,
                                                        .out = s->out,
                                                        .sum = s->sum,
                                                        .sumsq = s->sumsq};
        }
    }
    for (int b = 0; b < p->ring_len; b++) {
        const struct probe_window *w = probes_ring_get(p, b);
        int64_t r = ring_row(w->wid, sp->ring_cap);
        if (sp->ring_wid[r] != -1) {
            continue; /* a newer window took the row */
        }
        sp->ring_wid[r] = w->wid;
        sp->ring[r * NODE_ROWS] = (struct probe_node_moments){.ok = w->ok,
                                                              .fa = w->fa,
                                                              .to = w->to,
                                                              .out = w->out,
                                                              .mean = w->mean,
                                                              .variance = w->variance};
    }
    p->split = sp;
    return DQ_OK;
}

/*
 * The slow path of probes_record_hashed: an instance of p from another origin than the
 * last one. Remembers it, and finds the row of its node (splitting p when the node is
 * its second).
 */
static void probe_switch_origin(struct probe_table *t, struct probe *p, uint32_t origin) {
    const struct probe_origin *no = origin_at(t, origin);
    if (!no) {
        origin = 0; /* an unknown id counts as none */
    } else if (no->silence_ns > 0 && !p->passive) {
        /* a source without commands: always observed, at no cost to the adaptive loop */
        p->passive = 1;
        p->enabled = 1;
        p->always_on = 1;
        t->passive_new++;
    }
    if (p->origin != origin) {
        uint32_t old = p->origin;
        origin_ref(t, origin);
        p->origin = origin;
        origin_unref(t, old);
        p->origin_dirty = origin != 0;
    }
    p->node_origin = origin;
    p->node_slot = 0;
    uint32_t node = origin ? t->origins[origin].node : 0;
    struct probe_split *sp = p->split;
    if (node == 0) {
        if (sp) {
            sp->other_used = 1; /* no node name: pooled */
            p->node_slot = NODE_OTHER;
        }
        return;
    }
    if (p->node_first == 0) {
        p->node_first = node;
        t->nodes[node].pinned = 1;
        return;
    }
    if (!sp) {
        if (node == p->node_first || p->split_failed) {
            return;
        }
        if (split_alloc(t, p) != DQ_OK) {
            p->split_failed = 1; /* once: no allocation per instance */
            t->split_failures++;
            return;
        }
        sp = p->split;
    }
    for (int i = 0; i < sp->n_named; i++) {
        if (sp->node[i] == node) {
            p->node_slot = i;
            return;
        }
    }
    if (sp->n_named < PROBES_MAX_NODES) {
        sp->node[sp->n_named] = node;
        t->nodes[node].pinned = 1;
        p->node_slot = sp->n_named++;
        return;
    }
    sp->other_used = 1;
    p->node_slot = NODE_OTHER;
}

int probes_node_count(const struct probe *p) {
    return p->split ? p->split->n_named + p->split->other_used : 0;
}

/* The row of node i of p, or −1. */
static int node_row(const struct probe *p, int i) {
    const struct probe_split *sp = p->split;
    if (!sp || i < 0) {
        return -1;
    }
    if (i < sp->n_named) {
        return i;
    }
    return i == sp->n_named && sp->other_used ? NODE_OTHER : -1;
}

const char *probes_node_name(const struct probe_table *t, const struct probe *p, int i) {
    int r = node_row(p, i);
    if (r < 0) {
        return NULL;
    }
    return r == NODE_OTHER ? PROBES_NODE_OTHER : t->nodes[p->split->node[r]].name;
}

int probes_node_moments(const struct probe *p, int i, int64_t wid, struct probe_node_moments *out) {
    memset(out, 0, sizeof *out);
    int r = node_row(p, i);
    if (r < 0) {
        return dq_fail(DQ_EINVAL, "no node %d", i);
    }
    const struct probe_split *sp = p->split;
    int64_t row = ring_row(wid, sp->ring_cap);
    if (sp->ring_wid[row] != wid) {
        return DQ_ENOTFOUND;
    }
    *out = sp->ring[row * NODE_ROWS + r];
    return DQ_OK;
}
