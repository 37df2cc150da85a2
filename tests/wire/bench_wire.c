/*
 * bench_wire.c: throughput of the ingest parser (docs/PERFORMANCE.md "Ingest parser").
 *
 * Builds a buffer of legacy instance lines (what the oscilloscope's wrapper sends), then
 * in the same run measures (a) the baseline: memchr-only line splitting of that buffer,
 * (b) wire_splitter_feed() + wire_parse() on every line, fed in 64 KiB chunks as a
 * socket read would deliver them, and (c) wire_splitter_feed_instances(), the daemon's
 * one-pass path, on the same chunks (it must agree with (b)). Prints lines/s and
 * ns/line of each and their ratios to (a). Each figure is the best of several
 * repetitions, the passes alternating, to damp noise from a shared machine.
 * Usage: bench_wire [MEGABYTES]   (default 64)
 */
#include "wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK 65536
#define REPS 5

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct sink {
    uint64_t lines;
    uint64_t errors;
    int64_t sum; /* consumed so the compiler cannot drop the parse */
};

static void on_line(void *ctx, const char *line, size_t len, int err) {
    struct sink *s = ctx;
    struct wire_msg m;
    if (err == WIRE_OK) {
        err = wire_parse(line, len, 1716300000000000000LL, &m);
    }
    s->lines++;
    if (err != WIRE_OK) {
        s->errors++;
    } else {
        s->sum += m.end_ns - m.start_ns + (int64_t)m.name.n + (int64_t)m.status;
    }
}

/* The fast path's instance callback: the same bookkeeping as on_line. */
static void on_instance(void *ctx, const struct wire_msg *m) {
    struct sink *s = ctx;
    s->lines++;
    s->sum += m->end_ns - m->start_ns + (int64_t)m->name.n + (int64_t)m->status;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 64;
    size_t cap = (mb ? mb : 64) << 20;
    char *data = malloc(cap);
    static const char *names[] = {"checkout", "payment", "db_query", "render_page", "auth"};
    static const char *status[] = {"ok", "ok", "ok", "fa", "to"};
    size_t n = 0;
    uint64_t lines = 0;
    int64_t t = 1716300000000000000LL;
    if (!data) {
        fprintf(stderr, "bench_wire: out of memory\n");
        return 1;
    }
    while (n + 128 < cap) {
        int64_t d = 100000 + (int64_t)((lines * 7919) % 200000000);
        int w = snprintf(data + n, cap - n, "n:%s;b:%lld;e:%lld;s:%s\n", names[lines % 5],
                         (long long)t, (long long)(t + d), status[lines % 5]);
        n += (size_t)w;
        t += 1000;
        lines++;
    }

    /* The two measurements alternate, so both see the same load from other jobs. */
    double best_base = 1e30, best_parse = 1e30, best_fast = 1e30;
    uint64_t base_lines = 0;
    struct sink s = {0}, f = {0};
    char buf[4096];
    for (int r = 0; r < REPS; r++) {
        /* (a) memchr-only splitting. */
        double t0 = now_s();
        uint64_t k = 0;
        const char *p = data, *e = data + n;
        const char *nl;
        while (p < e && (nl = memchr(p, '\n', (size_t)(e - p))) != NULL) {
            k++;
            p = nl + 1;
        }
        double dt = now_s() - t0;
        base_lines = k;
        if (dt < best_base) {
            best_base = dt;
        }

        /* (b) splitter + parser, 64 KiB chunks. */
        struct wire_splitter sp;
        memset(&s, 0, sizeof s);
        wire_splitter_init(&sp, buf, sizeof buf, on_line, &s);
        t0 = now_s();
        for (size_t at = 0; at < n; at += CHUNK) {
            wire_splitter_feed(&sp, data + at, n - at < CHUNK ? n - at : CHUNK);
        }
        dt = now_s() - t0;
        if (dt < best_parse) {
            best_parse = dt;
        }

        /* (c) the daemon's path: the splitter's one-pass fast path for instance lines. */
        memset(&f, 0, sizeof f);
        wire_splitter_init(&sp, buf, sizeof buf, on_line, &f);
        t0 = now_s();
        for (size_t at = 0; at < n; at += CHUNK) {
            wire_splitter_feed_instances(&sp, data + at, n - at < CHUNK ? n - at : CHUNK,
                                         1716300000000000000LL, on_instance);
        }
        dt = now_s() - t0;
        if (dt < best_fast) {
            best_fast = dt;
        }
    }
    if (f.lines != s.lines || f.sum != s.sum || f.errors != 0) {
        fprintf(stderr, "bench_wire: the fast path disagrees (%llu lines, %llu errors)\n",
                (unsigned long long)f.lines, (unsigned long long)f.errors);
        free(data);
        return 1;
    }
    if (s.lines != lines || base_lines != lines || s.errors != 0) {
        fprintf(stderr, "bench_wire: line count mismatch (%llu parsed, %llu errors, %llu)\n",
                (unsigned long long)s.lines, (unsigned long long)s.errors,
                (unsigned long long)lines);
        free(data);
        return 1;
    }
    double base_rate = (double)lines / best_base, parse_rate = (double)lines / best_parse;
    printf("bench_wire: %llu legacy lines, %.1f MB, avg %.1f bytes/line, best of %d\n",
           (unsigned long long)lines, (double)n / 1e6, (double)n / (double)lines, REPS);
    printf("  memchr-only split : %7.2f M lines/s  %6.2f ns/line\n", base_rate / 1e6,
           1e9 * best_base / (double)lines);
    printf("  splitter + parse  : %7.2f M lines/s  %6.2f ns/line\n", parse_rate / 1e6,
           1e9 * best_parse / (double)lines);
    printf("  ratio parse/split : %.2f of the baseline rate (checksum %lld)\n",
           parse_rate / base_rate, (long long)(s.sum & 0xffff));
    printf("  fast path (feed_instances): %7.2f M lines/s  %6.2f ns/line, ratio %.2f\n",
           (double)lines / best_fast / 1e6, 1e9 * best_fast / (double)lines, best_base / best_fast);
    /* The daemon needs ≥ 2 M instances/s end to end; the parser should leave it room. */
    printf("%s splitter + parse >= 10 M lines/s: %.1f M lines/s\n",
           parse_rate >= 10e6 ? "PASS" : "MISS", parse_rate / 1e6);
    free(data);
    return 0;
}
