/*
 * probes.c: the probe table and window builder (see core.h, first part). The hot path is
 * probes_record(): one hash, one compare, a few arithmetic operations and increments.
 */
#include "core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "wire.h"

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

static void slot_clear(struct probe_slot *s, int n) {
    s->wid = -1;
    s->ok = s->fa = s->to = s->out = 0;
    s->sum = s->sumsq = s->min = s->max = 0.0;
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
    t->nslots = (int)((lag_ns + window_ns - 1) / window_ns) + 2;
    if (t->nslots > PROBES_MAX_SLOTS) {
        int64_t w = window_ns / 1000000, l = lag_ns / 1000000;
        probes_release(t);
        return dq_fail(DQ_ERANGE,
                       "lag %lld ms is more than %d windows of %lld ms: every open window "
                       "costs a histogram per probe; use a longer window or a shorter lag",
                       (long long)l, PROBES_MAX_SLOTS - 2, (long long)w);
    }
    t->ring_cap = ring_cap;
    t->default_dmax_ms = default_dmax_ms;
    /* windows that ended less than the lag ago are still open: lines in flight at a
     * (re)start are not lost */
    t->next_close = probes_window_of(t, now_ns - lag_ns);
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

int probes_get(struct probe_table *t, const char *name, size_t len, struct probe **out) {
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
    if (t->count >= t->cap) {
        t->full++;
        return dq_fail(DQ_EFULL, "probe table full (%zu probes)", t->cap);
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
    p->k = t->default_k;
    p->n = t->default_n;
    p->slots = calloc((size_t)t->nslots, sizeof *p->slots);
    p->ring = calloc((size_t)t->ring_cap, sizeof *p->ring);
    p->ring_cap = t->ring_cap;
    p->inv_width_ns = 1.0 / (ldexp(1.0, p->k) * 1e6);
    int rc = (p->slots && p->ring) ? probe_alloc_slots(t, p, p->n)
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

/* Prometheus bucket of a duration: the smallest j with d ≤ 2^(j−6) ms (edges are exact
 * integers in ns: 15625 ns · 2^j); PROBES_HIST_BUCKETS for longer durations (+Inf only). */
static int bucket_of(int64_t d_ns) {
    int64_t q = (d_ns + 15624) / 15625;
    if (q <= 1) {
        return 0;
    }
    int j = 64 - __builtin_clzll((unsigned long long)(q - 1));
    return j < PROBES_HIST_BUCKETS ? j : PROBES_HIST_BUCKETS;
}

double probes_bucket_le(int j) {
    return ldexp(1.0, j - 6) * 1e-3;
}

int probes_record(struct probe_table *t, const char *name, size_t len, int64_t start_ns,
                  int64_t end_ns, enum probe_status status) {
    return probes_record_hashed(t, name, len, wire_name_hash(name, len), start_ns, end_ns, status);
}

int probes_record_hashed(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                         int64_t start_ns, int64_t end_ns, enum probe_status status) {
    /* known names (nearly every line) skip the name check; probes_get registers */
    struct probe **recent = &t->recent[hash & 63];
    struct probe *p = *recent;
    if (p && p->hash == (uint32_t)hash && p->name_len == len && name_eq(p->name, name, len)) {
        /* found */
    } else if (t->index && len > 0 && len <= PROBES_NAME_MAX) {
        int found;
        size_t i = slot_of(t, (uint32_t)hash, name, len, &found);
        p = found ? t->probes[t->index[i]] : NULL;
        *recent = p;
    } else {
        p = NULL;
    }
    if (!p) {
        int rc = probes_get(t, name, len, &p);
        if (rc) {
            return rc;
        }
    }
    if (status == PROBE_TO && end_ns == 0) {
        /* old oscilloscope wrappers report a timeout's END as 0: it is START + dMax */
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
    if (wid < t->next_close) {
        t->late++;
        p->late++;
        return DQ_ESTATE;
    }
    if (wid >= t->next_close + t->nslots) {
        t->future++;
        return DQ_ESTATE;
    }
    if (si < 0) {
        si = (int)(wid % t->nslots);
        t->cur_wid = wid;
        t->cur_lo = wid * t->window_ns;
        t->cur_slot = si;
    }
    struct probe_slot *s = &p->slots[si];
    s->wid = wid;
    if (status == PROBE_FA) {
        s->fa++;
        p->total_fa++;
        return DQ_OK;
    }
    if (status == PROBE_TO) {
        s->to++;
        p->total_to++;
        return DQ_OK;
    }
    int64_t d_ns = end_ns - start_ns;
    double bin = (double)d_ns * p->inv_width_ns + 0.5;
    double d = (double)d_ns * 1e-9;
    p->total_ok++;
    p->total_sum += d;
    int hb = bucket_of(d_ns);
    if (hb < PROBES_HIST_BUCKETS) {
        p->hist[hb]++;
    }
    if (d_ns > (int64_t)(p->dmax_ms * 1e6) || bin >= p->n + 0.5) {
        s->out++;
        p->total_out++;
        return DQ_OK;
    }
    int idx = bin >= p->n ? p->n - 1 : (int)bin;
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
    return DQ_OK;
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

int probes_close_window(struct probe_table *t, int64_t wid) {
    int result = DQ_OK;
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        struct probe_slot *s = &p->slots[wid % t->nslots];
        if (s->wid != wid) {
            continue;
        }
        struct probe_window w = {.wid = wid, .ok = s->ok, .fa = s->fa, .to = s->to, .out = s->out};
        if (s->ok > 0) {
            double mean = s->sum / (double)s->ok;
            double var = s->sumsq / (double)s->ok - mean * mean;
            w.mean = mean;
            w.variance = var > 0.0 ? var : 0.0;
            w.min = s->min;
            w.max = s->max;
        }
        for (int b = 0; b < p->n; b++) {
            t->scratch[b] = s->counts[b];
        }
        int rc = dq_from_counts(p->k, p->n, t->scratch, s->fa, s->to, s->out, &w.observed);
        if (rc) {
            result = rc;
        }
        slot_clear(s, p->n);
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
