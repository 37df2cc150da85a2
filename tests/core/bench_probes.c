/*
 * bench_probes.c: dqd's per-line ingest work without the socket (docs/PERFORMANCE.md
 * "Ingest"): the lines bench_ingest's generator sends (four probe names, END within the
 * last millisecond, durations 1–50 ms, 97 % ok / 2 % fa / 1 % to), copied 64 KiB at a
 * time into a read buffer as a socket read would, then split, parsed and recorded as
 * dqd's read callback does (probes_origin_heard, wire_splitter_feed_instances +
 * probes_record_line with the connection's origin). The copy alone is timed too, so the
 * rest is parse + record. Best of many passes over 8 MB, alternating, to see through other
 * jobs on a shared machine. With --ids every line also carries v2 ids (`;i:…;t:…`, 16 hex
 * digits each), recorded as dqd does (probes_record_line takes probes_record_ident's path),
 * so every instance is offered to its window's exemplars (5 slowest, 2 failed kept; none
 * with --no-exemplars, the same lines' cost without them).
 * Usage: bench_probes [PASSES] [--ids [--no-exemplars]]   (default 40)
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire.h"

#define CHUNK 65536
#define DATA (8u << 20)

static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct ctx {
    struct probe_table t;
    uint32_t origin; /* one connection, as dqd's read callback passes it */
    uint64_t instances, other, rejected;
};

static void record(struct ctx *x, const struct wire_msg *m) {
    x->instances++;
    x->rejected += probes_record_line(&x->t, x->origin, m) != 0; /* as ingest_tcp.c */
}

/* Lines the fast path does not take: here only those cut by a chunk boundary, which the
 * splitter reassembles; dqd parses them with wire_parse(), and so does this. */
static void on_line(void *c, const char *line, size_t len, int err) {
    struct ctx *x = c;
    struct wire_msg m;
    if (err || wire_parse(line, len, 0, &m) != WIRE_OK || m.kind != WIRE_INSTANCE) {
        x->other++;
        return;
    }
    record(x, &m);
}

static void on_instance(void *c, const struct wire_msg *m) {
    record(c, m);
}

int main(int argc, char **argv) {
    static const char *const names[] = {"checkout", "payment", "search", "login"};
    int passes = argc > 1 && argv[1][0] != '-' ? atoi(argv[1]) : 40;
    int ids = 0, keep = 1;
    for (int i = 1; i < argc; i++) {
        ids |= strcmp(argv[i], "--ids") == 0;
        keep &= strcmp(argv[i], "--no-exemplars") != 0;
    }
    char *data = malloc(DATA), *rb = malloc(CHUNK);
    static struct ctx c;
    if (!data || !rb || passes < 1) {
        fprintf(stderr, "usage: bench_probes [PASSES]\n");
        return 2;
    }
    int64_t now = wall_ns();
    size_t n = 0;
    uint64_t lines = 0, rng = 0x9e3779b97f4a7c15ULL;
    while (n + 128 < DATA) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int64_t end = now - (int64_t)(rng % 1000000);
        int64_t dur = 1000000 + (int64_t)((rng >> 20) % 49000000);
        unsigned st = (unsigned)((rng >> 48) % 100);
        n += (size_t)snprintf(data + n, DATA - n, "n:%s;b:%lld;e:%lld;s:%s", names[lines % 4],
                              (long long)(end - dur), (long long)end,
                              st < 97 ? "ok" : (st < 99 ? "fa" : "to"));
        if (ids) {
            n += (size_t)snprintf(data + n, DATA - n, ";i:%016llx;t:%016llx",
                                  (unsigned long long)(rng * 31), (unsigned long long)rng);
        }
        data[n++] = '\n';
        lines++;
    }
    /* window 1 s, lag 1 s, dMax 1 s as dqd's defaults would have it: nothing is late */
    if (probes_init(&c.t, 10000, 1000000000LL, 1000000000LL, 60, 1000.0, 100, now) != 0 ||
        probes_set_exemplars(&c.t, keep ? 5 : 0, keep ? 2 : 0) != 0) {
        fprintf(stderr, "bench_probes: probes_init failed\n");
        return 1;
    }
    if (probes_origin_open(&c.t, "1 127.0.0.1:5555", "127.0.0.1", "", &c.origin) != 0) {
        fprintf(stderr, "bench_probes: probes_origin_open failed\n");
        return 1;
    }
    char split[4096];
    struct wire_splitter sp;
    wire_splitter_init(&sp, split, sizeof split, on_line, &c);
    double best_copy = 1e30, best_all = 1e30;
    for (int r = 0; r < passes; r++) {
        double t0 = mono_s();
        for (size_t at = 0; at < n; at += CHUNK) {
            memcpy(rb, data + at, n - at < CHUNK ? n - at : CHUNK);
            __asm__ volatile("" ::"r"(rb) : "memory"); /* the copy must happen */
        }
        double dt = mono_s() - t0;
        best_copy = dt < best_copy ? dt : best_copy;
        t0 = mono_s();
        for (size_t at = 0; at < n; at += CHUNK) {
            size_t k = n - at < CHUNK ? n - at : CHUNK;
            memcpy(rb, data + at, k);
            probes_origin_heard(&c.t, c.origin, now); /* once per read, as dqd */
            wire_splitter_feed_instances(&sp, rb, k, now, on_instance);
        }
        dt = mono_s() - t0;
        best_all = dt < best_all ? dt : best_all;
    }
    if (c.instances != lines * (uint64_t)passes || c.other != 0 || c.rejected != 0) {
        fprintf(stderr, "bench_probes: %llu instances, %llu other lines, %llu rejected\n",
                (unsigned long long)c.instances, (unsigned long long)c.other,
                (unsigned long long)c.rejected);
        return 1;
    }
    printf("bench_probes: %llu lines (%.1f bytes each%s), best of %d passes\n",
           (unsigned long long)lines, (double)n / (double)lines,
           ids ? (keep ? ", with ids, exemplars kept" : ", with ids, no exemplar kept") : "",
           passes);
    printf("  copy 64 KiB chunks         : %6.2f ns/line\n", 1e9 * best_copy / (double)lines);
    printf("  copy + split, parse, record: %6.2f ns/line (%.1f M lines/s)\n",
           1e9 * best_all / (double)lines, (double)lines / best_all / 1e6);
    printf("  split, parse, record       : %6.2f ns/line\n",
           1e9 * (best_all - best_copy) / (double)lines);
    probes_release(&c.t);
    free(data);
    free(rb);
    return 0;
}
