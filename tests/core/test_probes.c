/*
 * test_probes.c: the probe table of dqd (controller/core/core.h), without the daemon.
 *
 * The ingest path looks names up with a word-at-a-time compare and a hash the parser
 * computed, and bins with a cached window: so names that differ in any single byte, or
 * only in length, must never match; probes_record and probes_record_hashed must agree;
 * instances must land in the window of their END whichever window came before; and a
 * duration's bin, computed in integers where the grid allows, must be the engine's.
 */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"
#include "wire.h"

#define SEC 1000000000LL
#define T0 (1716300000LL * SEC) /* a window edge for any whole-second window */

/* Names of every length 1 … 40, and each one changed in every single position. */
static void test_lookup(void) {
    struct probe_table t;
    CHECK_INT(probes_init(&t, 4000, SEC, SEC, 4, 100.0, 50, T0), 0);
    char names[40][41];
    struct probe *got[40];
    int bad = 0;
    for (int n = 1; n <= 40; n++) {
        for (int i = 0; i < n; i++) {
            names[n - 1][i] = (char)('a' + (i * 7 + n) % 26);
        }
        names[n - 1][n] = '\0';
        CHECK_INT(probes_get(&t, names[n - 1], (size_t)n, &got[n - 1]), 0);
    }
    for (int n = 1; n <= 40; n++) {
        char name[48];
        memcpy(name, names[n - 1], (size_t)n + 1);
        bad += probes_find(&t, name, (size_t)n) != got[n - 1];
        for (int i = 0; i < n; i++) {
            char c = name[i];
            name[i] = c == 'z' ? 'y' : (char)(c + 1);
            bad += probes_find(&t, name, (size_t)n) != NULL;
            name[i] = c;
        }
        /* a prefix or an extension of a registered name is another name (the names
         * of two lengths differ in their first byte) */
        bad += n > 1 && probes_find(&t, name, (size_t)n - 1) != NULL;
        name[n] = 'q';
        bad += probes_find(&t, name, (size_t)n + 1) != NULL;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(t.count, 40);
    /* same bytes at another address, looked up with the parser's hash */
    char copy[64] = "xx";
    memcpy(copy + 2, names[12], 13);
    CHECK(probes_find(&t, copy + 2, 13) == got[12]);
    CHECK_INT(probes_record_hashed(&t, copy + 2, 13, wire_name_hash(copy + 2, 13), 0, T0 - 5000000,
                                   T0, PROBE_OK),
              0);
    CHECK_INT(got[12]->total_ok, 1);
    CHECK_INT(probes_record(&t, "9bad", 4, 0, T0 - 5, T0, PROBE_OK), DQ_EINVAL);
    CHECK_INT(probes_record(&t, "new_one", 7, 0, T0 - 5, T0, PROBE_FA), 0);
    CHECK_INT(t.count, 41);
    probes_release(&t);
}

/*
 * Two names of the same length whose 32-bit table hashes are equal: only the byte
 * compare can tell them apart. Found by brute force among names that share `prefix`
 * and differ in their last `vary` bytes; returns 1 and fills a and b, or 0.
 */
static struct cand {
    uint32_t h;
    uint32_t i;
} cands[300000];

static int cmp_cand(const void *x, const void *y) {
    const struct cand *a = x, *b = y;
    return a->h < b->h ? -1 : a->h > b->h ? 1 : (a->i > b->i) - (a->i < b->i);
}

static void cand_name(char *out, const char *prefix, size_t vary, uint32_t i) {
    size_t pn = strlen(prefix);
    memcpy(out, prefix, pn);
    for (size_t j = 0; j < vary; j++) {
        out[pn + j] = (char)('a' + i % 26);
        i /= 26;
    }
    out[pn + vary] = '\0';
}

static int find_collision(const char *prefix, size_t vary, char *a, char *b) {
    size_t n = sizeof cands / sizeof cands[0];
    char name[64];
    for (uint32_t i = 0; i < n; i++) {
        cand_name(name, prefix, vary, i);
        cands[i].h = (uint32_t)wire_name_hash(name, strlen(name));
        cands[i].i = i;
    }
    qsort(cands, n, sizeof cands[0], cmp_cand);
    for (size_t k = 1; k < n; k++) {
        if (cands[k].h == cands[k - 1].h) {
            cand_name(a, prefix, vary, cands[k - 1].i);
            cand_name(b, prefix, vary, cands[k].i);
            return 1;
        }
    }
    return 0;
}

static void test_hash_collisions(void) {
    static const struct {
        const char *prefix;
        size_t vary;
    } cases[] = {{"", 5}, {"ab", 4}, {"prefix_8", 5}, {"sixteen_byte_pre", 4}, {"", 13}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char a[64], b[64];
        int found = find_collision(cases[c].prefix, cases[c].vary, a, b);
        CHECK_MSG(found, "no 32-bit collision among names %s + %zu letters", cases[c].prefix,
                  cases[c].vary);
        if (!found) {
            continue;
        }
        struct probe_table t;
        struct probe *pa = NULL, *pb = NULL;
        size_t n = strlen(a);
        CHECK_INT(probes_init(&t, 8, SEC, SEC, 4, 100.0, 50, T0), 0);
        CHECK_INT(probes_get(&t, a, n, &pa), 0);
        CHECK_INT(probes_get(&t, b, n, &pb), 0);
        CHECK_MSG(pa && pb && pa != pb && t.count == 2, "%s and %s are one probe", a, b);
        CHECK(probes_find(&t, a, n) == pa);
        CHECK(probes_find(&t, b, n) == pb);
        CHECK_INT(probes_record(&t, b, n, 0, T0 - 10, T0, PROBE_OK), 0);
        CHECK(pb && pa && pb->total_ok == 1 && pa->total_ok == 0);
        probes_release(&t);
    }
}

/* END decides the window, whatever window the previous instance was in. */
static void test_windows(void) {
    struct probe_table t;
    /* window 1 s, lag 2 s: windows next_close … next_close + 3 are open, and 3 more for a
     * stall (PROBES_STALL_WINDOWS) */
    CHECK_INT(PROBES_STALL_WINDOWS, 3);
    CHECK_INT(probes_init(&t, 16, SEC, 2 * SEC, 4, 100.0, 50, T0 + 2 * SEC), 0);
    int64_t w0 = T0 / SEC;
    CHECK_INT(t.next_close, w0);
    static const int order[] = {0, 1, 0, 2, 3, 1, 0, 3, 3, 2};
    int per[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int64_t end = T0 + order[i] * SEC + (int64_t)(i * 1000);
        CHECK_INT(probes_record(&t, "p", 1, 0, end - 1000000, end, PROBE_OK), 0);
        per[order[i]]++;
    }
    /* the last nanosecond of a window, and the first of the next */
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + SEC - 9, T0 + SEC - 1, PROBE_OK), 0);
    per[0]++;
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + SEC - 9, T0 + SEC, PROBE_OK), 0);
    per[1]++;
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 - SEC, T0 - 1, PROBE_OK), DQ_ESTATE); /* late */
    /* the last window of the stall's room, then one beyond every open window */
    CHECK_INT(probes_record(&t, "p", 1, 0, T0 + 6 * SEC - 9, T0 + 6 * SEC, PROBE_OK), 0);
    CHECK_INT(probes_record(&t, "p", 1, 0, T0, T0 + 7 * SEC, PROBE_OK), DQ_ESTATE); /* future */
    CHECK_INT(t.late, 1);
    CHECK_INT(t.future, 1);
    struct probe *p = probes_find(&t, "p", 1);
    CHECK(p != NULL);
    for (int w = 0; w < 4; w++) {
        CHECK_INT(probes_close_window(&t, w0 + w), 0);
        struct probe_window *win = probes_ring_get(p, 0);
        CHECK(win != NULL && win->wid == w0 + w);
        CHECK_MSG(win && (int)win->ok == per[w], "window %d: %d ok, want %d", w,
                  win ? (int)win->ok : -1, per[w]);
    }
    /* after the closes, the window that was cached is late */
    CHECK_INT(probes_record(&t, "p", 1, 0, T0, T0 + 3 * SEC, PROBE_OK), DQ_ESTATE);
    CHECK_INT(t.late, 2);
    CHECK_INT(probes_record(&t, "p", 1, 0, T0, T0 + 5 * SEC, PROBE_OK), 0);
    probes_release(&t);
}

/* probes_remove (a person's DELETE): the others keep their names, indexes and windows,
 * the cache forgets the removed one, its origin is let go, and the name can come back. */
static void test_remove(void) {
    struct probe_table t;
    CHECK_INT(probes_init(&t, 64, SEC, SEC, 4, 100.0, 50, T0), 0);
    char name[16];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "p%d", i);
        CHECK_INT(
            probes_record(&t, name, strlen(name), 0, T0 + SEC / 2 - 1000, T0 + SEC / 2, PROBE_OK),
            0);
    }
    uint32_t o = 0;
    CHECK_INT(probes_origin_open(&t, "1 127.0.0.1:5555", "n@host", "app", &o), 0);
    CHECK_INT(probes_record(&t, "p7", 2, o, T0 + SEC / 2 - 1000, T0 + SEC / 2, PROBE_OK), 0);
    CHECK_INT(t.origins[o].refs, 1);
    struct probe *p7 = probes_find(&t, "p7", 2);
    CHECK(p7 && t.recent[wire_name_hash("p7", 2) & 63] == p7);
    struct probe *last = t.probes[t.count - 1];
    CHECK_INT(probes_remove(&t, p7), 0);
    CHECK_INT(t.count, 39);
    CHECK(probes_find(&t, "p7", 2) == NULL);
    CHECK(t.recent[wire_name_hash("p7", 2) & 63] == NULL);
    CHECK_INT(t.origins[o].refs, 0); /* its origin is no longer named by it */
    CHECK(t.probes[last->index] == last && last->index == 7); /* the last took its place */
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "p%d", i);
        struct probe *p = probes_find(&t, name, strlen(name));
        CHECK_MSG(i == 7 ? p == NULL : (p && t.probes[p->index] == p && p->total_ok == 1),
                  "%s after removing p7", name);
    }
    /* instances of a removed name register it again, from nothing */
    CHECK_INT(probes_record(&t, "p7", 2, 0, T0 + SEC / 2 - 1000, T0 + SEC / 2, PROBE_OK), 0);
    struct probe *again = probes_find(&t, "p7", 2);
    CHECK(again && again->total_ok == 1 && again->index == 39);
    /* something not in the table */
    struct probe stray;
    memset(&stray, 0, sizeof stray);
    stray.index = 3;
    CHECK_INT(probes_remove(&t, &stray), DQ_EINVAL);
    stray.index = -1;
    CHECK_INT(probes_remove(&t, &stray), DQ_EINVAL);
    /* remove everything, one by one from the front */
    while (t.count > 0) {
        CHECK_INT(probes_remove(&t, t.probes[0]), 0);
    }
    CHECK(probes_find(&t, "p1", 2) == NULL);
    probes_release(&t);
}

/* The bin the engine's rule gives a duration of d ns on a grid of 2^k ms (dq.h: a time
 * within 1e−12 of an edge on it), as record() computed it before it binned in integers. */
static int64_t bin_up_doubles(int k, int64_t d) {
    double inv = 1.0 / (ldexp(1.0, k) * 1e6);
    double x = (double)d * inv * (1 - 1e-12);
    int64_t up = (int64_t)x;
    return up + ((double)up < x);
}

/* Records one instance of d ns and returns the bin it was counted in, −1 when none or
 * more than one moved (out of range: past dMax). */
static int recorded_bin(struct probe_table *t, struct probe *p, int64_t d) {
    int64_t end = T0 + SEC / 2;
    uint32_t before[DQ_MAX_BINS];
    struct probe_slot *s = &p->slots[t->cur_slot];
    int had = s->wid == t->cur_wid && s->counts;
    for (int i = 0; i < p->n; i++) {
        before[i] = had ? s->counts[i] : 0;
    }
    if (probes_record(t, "b", 1, 0, end - d, end, PROBE_OK) != 0) {
        return -2;
    }
    s = &p->slots[t->cur_slot];
    int bin = -1, moved = 0;
    for (int i = 0; i < p->n; i++) {
        if (s->counts[i] != before[i]) {
            bin = i;
            moved++;
        }
    }
    return moved == 1 ? bin : -1;
}

/* Every grid: a duration's bin (integers on grids of 2^−6 ms and wider) is the engine's,
 * on and around every edge and at random durations. */
static void test_bins(void) {
    unsigned r = 12345;
    int bad = 0, checked = 0;
    for (int k = DQ_MIN_K; k <= DQ_MAX_K; k++) {
        struct probe_table t;
        struct probe *p = NULL;
        CHECK_INT(probes_init(&t, 4, SEC, SEC, 4, 100.0, 50, T0), 0);
        CHECK_INT(probes_get(&t, "b", 1, &p), 0);
        if (!p || probes_set_range(&t, p, k) != 0) {
            CHECK_MSG(0, "grid 2^%d ms × %d bins", k, p ? p->n : 0);
            probes_release(&t);
            continue;
        }
        int64_t dmax = (int64_t)(p->dmax_ms * 1e6);
        double w = ldexp(1.0, k) * 1e6;
        for (int i = 0; i <= p->n; i++) {
            int64_t e = (int64_t)(i * w);
            for (int64_t d = e - 2; d <= e + 2; d++) {
                if (d < 0 || d > dmax) {
                    continue;
                }
                int64_t up = bin_up_doubles(k, d);
                int want = up > 0 ? (int)up - 1 : 0;
                int got = recorded_bin(&t, p, d);
                bad += got != want;
                checked++;
                if (got != want && bad < 5) {
                    fprintf(stderr, "k %d, d %lld ns: bin %d, want %d\n", k, (long long)d, got,
                            want);
                }
            }
        }
        for (int j = 0; j < 300; j++) {
            r = r * 1103515245u + 12345u;
            int64_t d = (int64_t)((double)(r >> 4) / (double)(1u << 28) * (double)dmax);
            int64_t up = bin_up_doubles(k, d);
            bad += recorded_bin(&t, p, d) != (up > 0 ? (int)up - 1 : 0);
            checked++;
        }
        probes_release(&t);
    }
    CHECK_INT(bad, 0);
    CHECK(checked > 21 * 300);
}

static const struct check_case cases[] = {
    CHECK_CASE(bins),    CHECK_CASE(remove), CHECK_CASE(lookup), CHECK_CASE(hash_collisions),
    CHECK_CASE(windows),
};

CHECK_MAIN(cases)
