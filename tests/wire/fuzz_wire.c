/*
 * fuzz_wire.c: libFuzzer target for the wrapper protocol.
 *
 * The input is a byte stream from a connection: it is fed through the line splitter in
 * chunks whose sizes come from the first bytes, every line is parsed (and its lists
 * iterated), and each parsed line is checked against the parser's contract: slices
 * lie inside the line, times are ordered. Lines that parse as commands are formatted
 * again in both dialects and parsed back, which must give the same command. The same
 * chunks also go through wire_splitter_feed_instances(), whose fast path must give
 * every line the outcome wire_parse() gives it.
 */
#include "wire.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void must(int cond) {
    if (!cond) {
        abort();
    }
}

static void inside(struct wire_slice s, const char *line, size_t len) {
    if (s.p) {
        must(s.p >= line && s.p + s.n <= line + len);
    }
}

static void roundtrip(const struct wire_cmd *c) {
    char out[WIRE_CMD_MAX];
    struct wire_cmd back;
    for (int d = 0; d < 2; d++) {
        int n = wire_format_cmd(out, sizeof out, (enum wire_dialect)d, c);
        if (n < 0) {
            must(d == WIRE_LEGACY &&
                 (c->kind == WIRE_CMD_SYNC || c->kind == WIRE_CMD_CLEAR_TIMEOUT ||
                  c->kind == WIRE_CMD_TRACE));
            continue;
        }
        must(n > 0 && out[n - 1] == '\n');
        must(wire_parse_cmd(out, (size_t)n - 1, &back) == 0);
        must(back.kind == c->kind);
        if (c->kind != WIRE_CMD_START_STUB && c->kind != WIRE_CMD_STOP_STUB &&
            c->kind != WIRE_CMD_SYNC) {
            must(back.name.n == c->name.n && memcmp(back.name.p, c->name.p, c->name.n) == 0);
        }
        if (c->kind == WIRE_CMD_TRACE) {
            must(back.mfa.n == c->mfa.n && memcmp(back.mfa.p, c->mfa.p, c->mfa.n) == 0);
        }
        if (c->kind == WIRE_CMD_SET_TIMEOUT || c->kind == WIRE_CMD_TRACE) {
            if (d == WIRE_LEGACY) {
                must(back.ms >= 1 && back.ms == floor(back.ms) && back.ms + 1e-6 >= c->ms);
            } else {
                must(fabs(back.ms - c->ms) <= 5e-7 + 1e-15 * c->ms);
            }
        }
    }
}

static void on_line(void *ctx, const char *line, size_t len, int err) {
    struct wire_msg m;
    struct wire_slice it, k, v;
    (void)ctx;
    must(err == WIRE_OK || err == WIRE_E_TOOLONG);
    if (err != WIRE_OK) {
        must(len <= WIRE_MAX_LINE);
        return;
    }
    int r = wire_parse(line, len, 1716300000000000000LL, &m);
    must(r >= 0 && r < WIRE_E_COUNT);
    must(wire_err_name(r) != NULL);
    if (r != WIRE_OK) {
        return;
    }
    switch (m.kind) {
    case WIRE_INSTANCE:
        inside(m.name, line, len);
        must(wire_name_valid(m.name.p, m.name.n));
        must(m.start_ns > 0);
        must(m.end_ns >= m.start_ns || (m.end_ns == 0 && m.status == WIRE_ST_TO));
        inside(m.id, line, len);
        inside(m.trace, line, len);
        inside(m.parent, line, len);
        inside(m.attrs, line, len);
        it = m.attrs;
        while ((r = wire_kv_next(&it, &k, &v)) == 1) {
            inside(k, line, len);
            inside(v, line, len);
        }
        must(r == 0);
        break;
    case WIRE_STATE:
        it = m.probes;
        while ((r = wire_kv_next(&it, &k, &v)) == 1) {
            double ms;
            must(wire_name_valid(k.p, k.n));
            must(wire_parse_ms(v.p, v.n, &ms) == 0 && ms > 0);
        }
        must(r == 0);
        /* the tracer's lists: inside the line, NAME=VALUE pairs with valid names, and a
         * traced: value a valid function */
        {
            const struct wire_slice lists[] = {m.traced, m.tcalls, m.sampling, m.tdropped,
                                               m.trefused};
            for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
                inside(lists[i], line, len);
                it = lists[i];
                while ((r = wire_kv_next(&it, &k, &v)) == 1) {
                    must(wire_name_valid(k.p, k.n));
                    must(i != 0 || wire_mfa_valid(v.p, v.n));
                }
                must(r == 0);
            }
        }
        break;
    case WIRE_ACK:
        inside(m.command, line, len);
        roundtrip(&m.cmd);
        break;
    default:
        break;
    }
    /* Any line may also be read as a function: a valid one is printable text, and
     * any bytes come out of wire_escape as one printable line. */
    if (wire_mfa_valid(line, len)) {
        for (size_t i = 0; i < len; i++) {
            must((unsigned char)line[i] >= 0x20 && line[i] != 0x7f);
        }
    }
    char esc[64];
    wire_escape(esc, sizeof esc, line, len);
    must(strlen(esc) < sizeof esc);
    for (const char *q = esc; *q; q++) {
        must((unsigned char)*q >= 0x20 && *q != 0x7f);
    }
    /* Any line may also be read as a command (what a test wrapper does). */
    struct wire_cmd c;
    if (wire_parse_cmd(line, len, &c) == 0) {
        roundtrip(&c);
    }
}

/* ---- the fast instance path must agree with wire_parse() line by line ---- */

struct trace {
    uint64_t h; /* running hash of every line's outcome, in order */
    uint64_t n;
};

static void trace_add(struct trace *t, int rc, const struct wire_msg *m) {
    uint64_t v[6] = {(uint64_t)rc, 0, 0, 0, 0, 0};
    if (rc == WIRE_OK && m->kind == WIRE_INSTANCE) {
        must(m->name_hash == wire_name_hash(m->name.p, m->name.n));
        v[1] = (uint64_t)m->start_ns;
        v[2] = (uint64_t)m->end_ns;
        v[3] = (uint64_t)m->status + 4 * (uint64_t)m->v2_fields;
        v[4] = m->name_hash;
        v[5] = m->name.n;
        const struct wire_slice *v2[4] = {&m->id, &m->trace, &m->parent, &m->attrs};
        for (int k = 0; k < 4; k++) {
            /* offsets from the name: both paths give slices into the same line */
            v[5] = v[5] * 31 + (v2[k]->p ? (uint64_t)(v2[k]->p - m->name.p) * 977 + v2[k]->n : 5);
        }
    } else if (rc == WIRE_OK) {
        v[3] = 100 + (uint64_t)m->kind;
    }
    for (int i = 0; i < 6; i++) {
        t->h = (t->h ^ v[i]) * 0x100000001B3ULL;
    }
    t->n++;
}

static void trace_line(void *ctx, const char *line, size_t len, int err) {
    struct wire_msg m;
    trace_add(ctx, err ? err : wire_parse(line, len, 1716300000000000000LL, &m), &m);
}

static void trace_instance(void *ctx, const struct wire_msg *m) {
    trace_add(ctx, WIRE_OK, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char buf[WIRE_SPLITTER_MIN_CAP];
    struct wire_splitter s;
    size_t at = 0;
    unsigned seed = size > 0 ? data[0] : 0;
    wire_splitter_init(&s, buf, sizeof buf, on_line, NULL);
    /* Chunk sizes vary with the first byte so splits land everywhere. */
    while (at < size) {
        size_t c = 1 + (seed * 2654435761u + at) % 1500;
        if (c > size - at) {
            c = size - at;
        }
        wire_splitter_feed(&s, (const char *)data + at, c);
        at += c;
    }
    /* The same chunks through the fast path give the same outcomes, line by line. */
    char ba[WIRE_SPLITTER_MIN_CAP], bb[WIRE_SPLITTER_MIN_CAP];
    struct wire_splitter sa, sb;
    struct trace ta = {0, 0}, tb = {0, 0};
    wire_splitter_init(&sa, ba, sizeof ba, trace_line, &ta);
    wire_splitter_init(&sb, bb, sizeof bb, trace_line, &tb);
    for (at = 0; at < size;) {
        size_t c = 1 + (seed * 2654435761u + at) % 1500;
        if (c > size - at) {
            c = size - at;
        }
        wire_splitter_feed(&sa, (const char *)data + at, c);
        wire_splitter_feed_instances(&sb, (const char *)data + at, c, 1716300000000000000LL,
                                     trace_instance);
        at += c;
    }
    must(ta.n == tb.n && ta.h == tb.h);
    must(wire_splitter_pending(&sa) == wire_splitter_pending(&sb));
    /* The whole input as one line, too (the parser alone, no splitter). */
    struct wire_msg m;
    int r = wire_parse((const char *)data, size, 0, &m);
    must(r >= 0 && r < WIRE_E_COUNT);
    must(size - (size > 0 && data[size - 1] == '\r') <= WIRE_MAX_LINE || r == WIRE_E_TOOLONG);
    return 0;
}
