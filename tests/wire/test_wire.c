/*
 * test_wire.c: the wrapper protocol module (controller/wire/wire.h).
 *
 * Good lines of every kind in both dialects of docs/protocol.md, with
 * every field checked; the malformed cases of bad_lines.txt (its path is BAD_LINES_TXT,
 * set by CMake), each with its expected error kind; the line splitter against a reference
 * split under random chunkings and at every split position; the command formatter and its
 * parser.
 */
#include "wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dq_error.h"

#define NOW 1716300000000000000LL

static int slice_eq(struct wire_slice s, const char *lit) {
    return s.p && s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static int parse_str(const char *line, struct wire_msg *m) {
    return wire_parse(line, strlen(line), NOW, m);
}

/* ---- good lines ---------------------------------------------------------------------- */

static void test_legacy_instances(void) {
    struct wire_msg m;
    CHECK_INT(parse_str("n:checkout;b:1716300000200000000;e:1716300000400000000;s:to", &m),
              WIRE_OK);
    CHECK_INT(m.kind, WIRE_INSTANCE);
    CHECK(slice_eq(m.name, "checkout"));
    CHECK_INT(m.start_ns, 1716300000200000000LL);
    CHECK_INT(m.end_ns, 1716300000400000000LL);
    CHECK_INT(m.status, WIRE_ST_TO);
    CHECK_INT(m.v2_fields, 0);
    CHECK(m.id.p == NULL && m.trace.p == NULL && m.parent.p == NULL && m.attrs.p == NULL);

    CHECK_INT(parse_str("n:_a9;b:1716300000000000000;e:1716300000000000000;s:ok", &m), WIRE_OK);
    CHECK(slice_eq(m.name, "_a9"));
    CHECK_INT(m.status, WIRE_ST_OK);
    CHECK_INT(m.end_ns - m.start_ns, 0);
    CHECK_INT(parse_str("n:X;b:1716300000000000000;e:1716300000000000001;s:fa", &m), WIRE_OK);
    CHECK_INT(m.status, WIRE_ST_FA);

    /* Older oscilloscope wrappers end a timeout with e:0 (their deadline was not sent). */
    CHECK_INT(parse_str("n:slow;b:1716300000200000000;e:0;s:to", &m), WIRE_OK);
    CHECK_INT(m.status, WIRE_ST_TO);
    CHECK_INT(m.end_ns, 0);
    CHECK_INT(m.start_ns, 1716300000200000000LL);
    CHECK_INT(parse_str("n:slow;b:1716300000200000000;e:0;s:to;i:1", &m), WIRE_OK);
    CHECK_INT(m.end_ns, 0);

    /* CRLF: the '\r' is ignored. */
    CHECK_INT(parse_str("n:p;b:1716300000000000000;e:1716300000000000005;s:ok\r", &m), WIRE_OK);
    CHECK_INT(m.status, WIRE_ST_OK);
    CHECK_INT(m.end_ns, 1716300000000000005LL);

    /* The clock check is relative to now_ns and off when now_ns ≤ 0. */
    const char *old = "n:p;b:1000;e:2000;s:ok";
    CHECK_INT(wire_parse(old, strlen(old), NOW, &m), WIRE_E_CLOCK);
    CHECK_INT(wire_parse(old, strlen(old), 0, &m), WIRE_OK);
    CHECK_INT(m.start_ns, 1000);
    CHECK_INT(wire_parse(old, strlen(old), 1000 + WIRE_CLOCK_SLACK_NS, &m), WIRE_OK);
    CHECK_INT(wire_parse(old, strlen(old), 1001 + WIRE_CLOCK_SLACK_NS, &m), WIRE_E_CLOCK);
    /* END is checked too: START within a day of now, END a day and 10 ns after it. */
    char ahead[128];
    int an = snprintf(ahead, sizeof ahead, "n:p;b:%lld;e:%lld;s:to", (long long)NOW,
                      (long long)(NOW + WIRE_CLOCK_SLACK_NS + 10));
    CHECK_INT(wire_parse(ahead, (size_t)an, NOW, &m), WIRE_E_CLOCK);
    CHECK_INT(wire_parse(ahead, (size_t)an, NOW + 10, &m), WIRE_OK);
    /* START = INT64_MAX is a valid number (the clock check is what rejects it). */
    const char *big = "n:p;b:9223372036854775807;e:9223372036854775807;s:ok";
    CHECK_INT(wire_parse(big, strlen(big), 0, &m), WIRE_OK);
    CHECK_INT(m.start_ns, INT64_MAX);

    /* The line is not read past len: a valid prefix of a longer buffer. */
    const char *buf = "n:abc;b:1716300000000000000;e:1716300000000000001;s:okXXXX";
    CHECK_INT(wire_parse(buf, strlen(buf) - 4, NOW, &m), WIRE_OK);
    CHECK_INT(wire_parse(buf, strlen(buf), NOW, &m), WIRE_E_STATUS);
}

static void test_v2_instances(void) {
    struct wire_msg m;
    struct wire_slice it, k, v;
    CHECK_INT(parse_str("n:checkout;b:1716300000123456789;e:1716300000173456789;s:ok;i:9f2c;"
                        "t:5b8aa5a2d2c872e8",
                        &m),
              WIRE_OK);
    CHECK(slice_eq(m.name, "checkout"));
    CHECK_INT(m.start_ns, 1716300000123456789LL);
    CHECK_INT(m.end_ns, 1716300000173456789LL);
    CHECK_INT(m.v2_fields, 1);
    CHECK(slice_eq(m.id, "9f2c"));
    CHECK(slice_eq(m.trace, "5b8aa5a2d2c872e8"));
    CHECK(m.parent.p == NULL && m.attrs.p == NULL);

    CHECK_INT(parse_str("n:db_query;b:1716300000000000000;e:1716300000000001000;s:fa;"
                        "a:rows=42,table=users,peer.addr=10.0.0.1:5432,delta=-3;p:ABCdef01;"
                        "i:1",
                        &m),
              WIRE_OK);
    CHECK_INT(m.status, WIRE_ST_FA);
    CHECK(slice_eq(m.parent, "ABCdef01"));
    CHECK(slice_eq(m.id, "1"));
    it = m.attrs;
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "rows") && slice_eq(v, "42"));
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "table") && slice_eq(v, "users"));
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "peer.addr") && slice_eq(v, "10.0.0.1:5432"));
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "delta") && slice_eq(v, "-3"));
    CHECK_INT(wire_kv_next(&it, &k, &v), 0);
    CHECK_INT(wire_kv_next(&it, &k, &v), 0);

    /* Unknown trailing fields are skipped, whatever their value. */
    CHECK_INT(parse_str("n:a;b:1716300000000000000;e:1716300000000000001;s:to;zz:any thing!;"
                        "future_2:;i:00",
                        &m),
              WIRE_OK);
    CHECK_INT(m.status, WIRE_ST_TO);
    CHECK(slice_eq(m.id, "00"));
    CHECK_INT(m.v2_fields, 1);

    /* Fields of a previous parse do not leak into the next one. */
    CHECK_INT(parse_str("n:a;b:1716300000000000000;e:1716300000000000001;s:ok", &m), WIRE_OK);
    CHECK(m.id.p == NULL && m.attrs.n == 0);
    CHECK_INT(m.v2_fields, 0);
}

/* A xorshift generator; each case that draws from it starts from RNG_SEED, so a case run
 * alone sees what it sees in the whole run. */
#define RNG_SEED 0x9e3779b97f4a7c15ULL
static uint64_t rng_state = RNG_SEED;

static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* START/END of every length 1 … 19 digits round-trip; a bad byte anywhere is TIME. */
static void test_times(void) {
    rng_state = RNG_SEED;
    struct wire_msg m;
    char line[128];
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        int digits = 1 + (int)(rnd() % 19);
        uint64_t v = 0;
        for (int d = 0; d < digits; d++) {
            v = v * 10 + rnd() % 10;
        }
        if (v > (uint64_t)INT64_MAX || v == 0) {
            continue;
        }
        int n = snprintf(line, sizeof line, "n:t;b:%llu;e:%llu;s:ok", (unsigned long long)v,
                         (unsigned long long)v);
        int r = wire_parse(line, (size_t)n, 0, &m);
        bad += r != WIRE_OK || m.start_ns != (int64_t)v || m.end_ns != (int64_t)v;
        /* Corrupt one byte of START: only another digit keeps it a number. */
        size_t at = 6 + rnd() % (size_t)(strchr(line + 6, ';') - (line + 6));
        char c = (char)(rnd() % 256);
        line[at] = c;
        r = wire_parse(line, (size_t)n, 0, &m);
        if (c >= '0' && c <= '9') {
            bad += r != WIRE_OK && r != WIRE_E_TIME && r != WIRE_E_ORDER;
        } else if (c == ';') {
            bad += r != WIRE_E_FIELD && r != WIRE_E_TIME;
        } else {
            bad += r != WIRE_E_TIME;
        }
    }
    CHECK_INT(bad, 0);
    /* Exactly INT64_MAX and one more, with a prefix of zeros up to 19 digits. */
    const char *ok = "n:t;b:0000000000000000001;e:9223372036854775807;s:ok";
    CHECK_INT(wire_parse(ok, strlen(ok), 0, &m), WIRE_OK);
    CHECK_INT(m.start_ns, 1);
    const char *over = "n:t;b:1;e:9223372036854775808;s:ok";
    CHECK_INT(wire_parse(over, strlen(over), 0, &m), WIRE_E_TIME);
    const char *twenty = "n:t;b:00000000000000000001;e:2;s:ok";
    CHECK_INT(wire_parse(twenty, strlen(twenty), 0, &m), WIRE_E_TIME);
}

static void test_names(void) {
    char line[2048];
    char name[300];
    struct wire_msg m;
    memset(name, 'q', sizeof name);
    int n = snprintf(line, sizeof line, "n:%.*s;b:1716300000000000000;e:1716300000000000001;s:ok",
                     255, name);
    CHECK_INT(wire_parse(line, (size_t)n, NOW, &m), WIRE_OK);
    CHECK_INT(m.name.n, 255);
    n = snprintf(line, sizeof line, "n:%.*s;b:1716300000000000000;e:1716300000000000001;s:ok", 256,
                 name);
    CHECK_INT(wire_parse(line, (size_t)n, NOW, &m), WIRE_E_NAME);
    CHECK(wire_name_valid("a", 1));
    CHECK(wire_name_valid("_", 1));
    CHECK(wire_name_valid("Zz_09", 5));
    CHECK(!wire_name_valid("", 0));
    CHECK(!wire_name_valid("0a", 2));
    CHECK(!wire_name_valid("a-b", 3));
    CHECK(!wire_name_valid("a\0b", 3));
    CHECK(wire_name_valid(name, 255));
    CHECK(!wire_name_valid(name, 256));
}

static void test_line_limit(void) {
    /* Exactly 1024 bytes of content is fine (with or without a CR); 1025 is not. */
    char line[1100];
    struct wire_msg m;
    const char *head = "n:lim;b:1716300000000000000;e:1716300000000000001;s:ok;x:";
    size_t h = strlen(head);
    memcpy(line, head, h);
    memset(line + h, 'y', sizeof line - h);
    CHECK_INT(wire_parse(line, 1024, NOW, &m), WIRE_OK);
    line[1024] = '\r';
    CHECK_INT(wire_parse(line, 1025, NOW, &m), WIRE_OK);
    line[1024] = 'y';
    CHECK_INT(wire_parse(line, 1025, NOW, &m), WIRE_E_TOOLONG);
}

static void test_control_lines(void) {
    struct wire_msg m;
    struct wire_slice it, k, v;
    double ms;

    CHECK_INT(parse_str("ping", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_PING);
    CHECK_INT(parse_str("ping\r", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_PING);

    CHECK_INT(parse_str("h:2;node:shop@host1;app:shop", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_HELLO);
    CHECK_INT(m.version, 2);
    CHECK(slice_eq(m.node, "shop@host1"));
    CHECK(slice_eq(m.app, "shop"));
    CHECK_INT(parse_str("h:17;node:a-b.c_d@x:1;app:my.app+2;pid:123", &m), WIRE_OK);
    CHECK_INT(m.version, 17);
    CHECK(slice_eq(m.node, "a-b.c_d@x:1"));
    CHECK(slice_eq(m.app, "my.app+2"));

    CHECK_INT(parse_str("ack;set_timeout;payment;80", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_ACK);
    CHECK(slice_eq(m.command, "set_timeout;payment;80"));
    CHECK_INT(m.cmd.kind, WIRE_CMD_SET_TIMEOUT);
    CHECK(slice_eq(m.cmd.name, "payment"));
    CHECK_NEAR(m.cmd.ms, 80.0, 0);
    CHECK_INT(parse_str("ack;start_stub", &m), WIRE_OK);
    CHECK_INT(m.cmd.kind, WIRE_CMD_START_STUB);
    CHECK_INT(parse_str("ack;stop_stub", &m), WIRE_OK);
    CHECK_INT(m.cmd.kind, WIRE_CMD_STOP_STUB);
    CHECK_INT(parse_str("ack;clear_timeout;payment", &m), WIRE_OK);
    CHECK_INT(m.cmd.kind, WIRE_CMD_CLEAR_TIMEOUT);
    CHECK(slice_eq(m.cmd.name, "payment"));
    CHECK_INT(parse_str("ack;sync", &m), WIRE_OK);
    CHECK_INT(m.cmd.kind, WIRE_CMD_SYNC);
    CHECK_INT(parse_str("ack;set_timeout;p;0.25", &m), WIRE_OK);
    CHECK_NEAR(m.cmd.ms, 0.25, 0);

    CHECK_INT(parse_str("drop;0", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_DROP);
    CHECK_INT(m.count, 0);
    CHECK_INT(parse_str("drop;18446744073709551615", &m), WIRE_OK);
    CHECK(m.count == UINT64_MAX);
    CHECK_INT(parse_str("drop;1234", &m), WIRE_OK);
    CHECK_INT(m.count, 1234);

    CHECK_INT(parse_str("state;running:1;probes:checkout=200", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_STATE);
    CHECK_INT(m.running, 1);
    it = m.probes;
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "checkout") && slice_eq(v, "200"));
    CHECK_INT(wire_kv_next(&it, &k, &v), 0);

    CHECK_INT(parse_str("state;running:0;probes:", &m), WIRE_OK);
    CHECK_INT(m.running, 0);
    CHECK_INT(m.probes.n, 0);
    it = m.probes;
    CHECK_INT(wire_kv_next(&it, &k, &v), 0);

    CHECK_INT(parse_str("state;running:1;probes:a=0.25,b_2=1024,c=3.5;mode:x", &m), WIRE_OK);
    it = m.probes;
    const char *names[] = {"a", "b_2", "c"};
    const double mss[] = {0.25, 1024, 3.5};
    for (int i = 0; i < 3; i++) {
        CHECK_INT(wire_kv_next(&it, &k, &v), 1);
        CHECK(slice_eq(k, names[i]));
        CHECK_INT(wire_parse_ms(v.p, v.n, &ms), 0);
        CHECK_NEAR(ms, mss[i], 1e-12);
    }
    CHECK_INT(wire_kv_next(&it, &k, &v), 0);

    /* simulated time: clock;NS and its answer tick;NS */
    CHECK_INT(parse_str("clock;1716300000500000000", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_CLOCK);
    CHECK(m.clock_ns == 1716300000500000000LL);
    CHECK_INT(parse_str("clock;9223372036854775807", &m), WIRE_OK);
    CHECK(m.clock_ns == INT64_MAX);
    CHECK_INT(parse_str("clock;", &m), WIRE_E_FIELD);
    CHECK_INT(parse_str("clock", &m), WIRE_E_FIELD);
    CHECK_INT(parse_str("clock;0", &m), WIRE_E_TIME);
    CHECK_INT(parse_str("clock;-5", &m), WIRE_E_TIME);
    CHECK_INT(parse_str("clock;9223372036854775808", &m), WIRE_E_TIME);
    CHECK_INT(parse_str("clock;12x", &m), WIRE_E_TIME);
    CHECK_INT(parse_str("clockwork", &m), WIRE_E_UNKNOWN);
    char tick[WIRE_CMD_MAX];
    int tn = wire_format_tick(tick, sizeof tick, 1716300000500000000LL);
    CHECK_INT(tn, 25);
    CHECK(tn > 0 && memcmp(tick, "tick;1716300000500000000\n", (size_t)tn) == 0);
    int64_t tns = 0;
    CHECK_INT(wire_parse_tick(tick, (size_t)tn - 1, &tns), 0);
    CHECK(tns == 1716300000500000000LL);
    CHECK_INT(wire_parse_tick("tick;5\r", 7, &tns), 0);
    CHECK(tns == 5);
    CHECK_INT(wire_parse_tick("tick;", 5, &tns), -1);
    CHECK_INT(wire_parse_tick("tick;0", 6, &tns), -1);
    CHECK_INT(wire_parse_tick("tock;5", 6, &tns), -1);
    CHECK_INT(wire_format_tick(tick, 10, 1716300000500000000LL), DQ_EFULL);

    /* The iterator on hand-made malformed lists. */
    struct wire_slice bad = {"a=1,", 4};
    CHECK_INT(wire_kv_next(&bad, &k, &v), -1);
    bad.p = "a=1,,b=2";
    bad.n = 8;
    CHECK_INT(wire_kv_next(&bad, &k, &v), 1);
    CHECK_INT(wire_kv_next(&bad, &k, &v), -1);
    bad.p = "noeq";
    bad.n = 4;
    CHECK_INT(wire_kv_next(&bad, &k, &v), -1);
}

static void test_parse_ms(void) {
    double ms = -1;
    CHECK_INT(wire_parse_ms("200", 3, &ms), 0);
    CHECK_NEAR(ms, 200, 0);
    CHECK_INT(wire_parse_ms("0.000001", 8, &ms), 0);
    CHECK_NEAR(ms, 1e-6, 1e-18);
    CHECK_INT(wire_parse_ms("1000000000", 10, &ms), 0);
    CHECK_INT(wire_parse_ms("1000000000.5", 12, &ms), -1);
    CHECK_INT(wire_parse_ms("10000000000", 11, &ms), -1);
    CHECK_INT(wire_parse_ms("0", 1, &ms), -1);
    CHECK_INT(wire_parse_ms("0.000000999", 11, &ms), -1);
    CHECK_INT(wire_parse_ms("0.0", 3, &ms), -1);
    CHECK_INT(wire_parse_ms("", 0, &ms), -1);
    CHECK_INT(wire_parse_ms("1.", 2, &ms), -1);
    CHECK_INT(wire_parse_ms(".5", 2, &ms), -1);
    CHECK_INT(wire_parse_ms("1.1234567891", 12, &ms), -1);
    CHECK_INT(wire_parse_ms("1.123456789", 11, &ms), 0);
    CHECK_INT(wire_parse_ms("1e3", 3, &ms), -1);
    CHECK_INT(wire_parse_ms("-1", 2, &ms), -1);
}

/* A wrapper → dqd stream in the manner of docs/protocol.md, as a whole stream through the splitter.
 */
struct collect {
    int n;
    int kinds[16];
    int errs[16];
};

static void collect_fn(void *ctx, const char *line, size_t len, int err) {
    struct collect *c = ctx;
    struct wire_msg m;
    if (c->n >= 16) {
        return;
    }
    c->errs[c->n] = err == WIRE_OK ? wire_parse(line, len, NOW, &m) : err;
    c->kinds[c->n] = c->errs[c->n] == WIRE_OK ? (int)m.kind : -1;
    c->n++;
}

static void test_wirecol_example(void) {
    static const char stream[] =
        "h:2;node:shop@host1;app:shop\n"
        "state;running:1;probes:checkout=200\n"
        "n:checkout;b:1716300000123456789;e:1716300000173456789;s:ok;i:9f2c;t:5b8aa5a2d2c872e8\n"
        "n:checkout;b:1716300000200000000;e:1716300000400000000;s:to\n"
        "ping\n"
        "ack;set_timeout;payment;80\n"
        "ack;start_stub\n";
    const int want[] = {WIRE_HELLO, WIRE_STATE, WIRE_INSTANCE, WIRE_INSTANCE,
                        WIRE_PING,  WIRE_ACK,   WIRE_ACK};
    char buf[4096];
    struct wire_splitter s;
    struct collect c = {0};
    CHECK_INT(wire_splitter_init(&s, buf, sizeof buf, collect_fn, &c), 0);
    wire_splitter_feed(&s, stream, sizeof stream - 1);
    CHECK_INT(c.n, 7);
    for (int i = 0; i < 7; i++) {
        CHECK_INT(c.errs[i], WIRE_OK);
        CHECK_INT(c.kinds[i], want[i]);
    }
    CHECK_INT(wire_splitter_pending(&s), 0);

    /* dqd's answer to the hello, in both dialects. */
    char out[WIRE_CMD_MAX];
    struct wire_cmd cmd = {WIRE_CMD_SET_TIMEOUT, {"checkout", 8}, 200, {NULL, 0}};
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), 25);
    CHECK_STR(out, "set_timeout;checkout;200\n");
    cmd.name.p = "payment";
    cmd.name.n = 7;
    cmd.ms = 80;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), 23);
    CHECK_STR(out, "set_timeout;payment;80\n");
    cmd.kind = WIRE_CMD_START_STUB;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), 11);
    CHECK_STR(out, "start_stub\n");
}

/* ---- malformed lines (data-driven) ------------------------------------------------- */

static int hexval(int c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Expands the escapes of bad_lines.txt; returns the length or −1. */
static long unescape(const char *s, char *out, size_t cap) {
    size_t n = 0;
    while (*s) {
        if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
            if (n >= cap) {
                return -1;
            }
            out[n++] = (char)(hexval(s[2]) * 16 + hexval(s[3]));
            s += 4;
        } else if (s[0] == '\\' && s[1] == 'r') {
            if (n >= cap) {
                return -1;
            }
            out[n++] = '\r';
            s += 2;
        } else if (s[0] == '\\' && s[1] == '\\') {
            if (n >= cap) {
                return -1;
            }
            out[n++] = '\\';
            s += 2;
        } else if (s[0] == '<' && s[1] && s[2] == '*') {
            char *end;
            long k = strtol(s + 3, &end, 10);
            if (*end != '>' || k < 0 || (size_t)k > cap - n) {
                return -1;
            }
            memset(out + n, s[1], (size_t)k);
            n += (size_t)k;
            s = end + 1;
        } else {
            if (n >= cap) {
                return -1;
            }
            out[n++] = *s++;
        }
    }
    return (long)n;
}

static void test_bad_lines(void) {
    const char *path = BAD_LINES_TXT;
    FILE *f = fopen(path, "r");
    char text[4096], line[8192];
    int cases = 0, lineno = 0;
    int seen[WIRE_E_COUNT] = {0};
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) {
        return;
    }
    while (fgets(text, sizeof text, f)) {
        lineno++;
        size_t tl = strlen(text);
        if (tl > 0 && text[tl - 1] == '\n') {
            text[--tl] = '\0';
        }
        if (tl == 0 || text[0] == '#') {
            continue;
        }
        char *sp = strchr(text, ' ');
        CHECK_MSG(sp != NULL, "%s:%d: no space after the kind", path, lineno);
        if (!sp) {
            continue;
        }
        *sp = '\0';
        int want = -1;
        for (int k = 1; k < WIRE_E_COUNT; k++) {
            if (strcmp(text, wire_err_name(k)) == 0) {
                want = k;
            }
        }
        CHECK_MSG(want > 0, "%s:%d: unknown kind %s", path, lineno, text);
        long n = unescape(sp + 1, line, sizeof line);
        CHECK_MSG(n >= 0, "%s:%d: bad escape", path, lineno);
        if (want <= 0 || n < 0) {
            continue;
        }
        struct wire_msg m;
        int got = wire_parse(line, (size_t)n, NOW, &m);
        CHECK_MSG(got == want, "%s:%d: got %s, want %s", path, lineno, wire_err_name(got),
                  wire_err_name(want));
        seen[want]++;
        cases++;

        /* Through the splitter the same line gives the same kind. */
        char buf[4096];
        struct wire_splitter s;
        struct collect c = {0};
        wire_splitter_init(&s, buf, sizeof buf, collect_fn, &c);
        if (memchr(line, '\n', (size_t)n) == NULL) {
            wire_splitter_feed(&s, line, (size_t)n);
            wire_splitter_feed(&s, "\n", 1);
            CHECK_MSG(c.n == 1 && c.errs[0] == want, "%s:%d: through the splitter: %s", path,
                      lineno, c.n ? wire_err_name(c.errs[0]) : "no line");
        }
    }
    fclose(f);
    CHECK(cases > 100);
    for (int k = 1; k < WIRE_E_COUNT; k++) {
        CHECK_MSG(seen[k] > 0, "no case for kind %s", wire_err_name(k));
    }
}

static void test_err_names(void) {
    for (int a = 0; a < WIRE_E_COUNT; a++) {
        CHECK(wire_err_name(a) != NULL && wire_err_message(a) != NULL);
        CHECK(strlen(wire_err_message(a)) > 3);
        for (int b = a + 1; b < WIRE_E_COUNT; b++) {
            CHECK(strcmp(wire_err_name(a), wire_err_name(b)) != 0);
        }
    }
    CHECK_STR(wire_err_name(WIRE_OK), "ok");
    CHECK_STR(wire_err_name(WIRE_E_TOOLONG), "too_long");
    CHECK_STR(wire_err_name(WIRE_E_COUNT), "invalid");
    CHECK_STR(wire_err_name(-1), "invalid");
}

/* ---- splitter ---------------------------------------------------------------------- */

#define MAXREC 4096

struct rec {
    int n;
    int err[MAXREC];
    size_t off[MAXREC];
    size_t len[MAXREC];
    char *store;
    size_t used, cap;
    int overflow;
};

static void rec_fn(void *ctx, const char *line, size_t len, int err) {
    struct rec *r = ctx;
    if (r->n >= MAXREC || len > r->cap - r->used) {
        r->overflow = 1;
        return;
    }
    memcpy(r->store + r->used, line, len);
    r->err[r->n] = err;
    r->off[r->n] = r->used;
    r->len[r->n] = len;
    r->used += len;
    r->n++;
}

static void rec_init(struct rec *r, size_t cap) {
    memset(r, 0, sizeof *r);
    r->store = malloc(cap);
    r->cap = r->store ? cap : 0;
}

/* What the splitter must report for a stream: split at every '\n' by hand. */
static void reference_split(const char *data, size_t n, struct rec *r) {
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '\n') {
            continue;
        }
        size_t len = i - start;
        size_t content = len - (len > 0 && data[i - 1] == '\r');
        if (content > WIRE_MAX_LINE) {
            rec_fn(r, data + start, len, WIRE_E_TOOLONG);
        } else {
            rec_fn(r, data + start, len, WIRE_OK);
        }
        start = i + 1;
    }
}

/* The splitter's output equals the reference (TOOLONG prefixes are line prefixes). */
static int rec_same(const struct rec *got, const struct rec *want) {
    if (got->overflow || want->overflow || got->n != want->n) {
        return 0;
    }
    for (int i = 0; i < got->n; i++) {
        if (got->err[i] != want->err[i]) {
            return 0;
        }
        if (got->err[i] == WIRE_OK) {
            if (got->len[i] != want->len[i] ||
                memcmp(got->store + got->off[i], want->store + want->off[i], got->len[i]) != 0) {
                return 0;
            }
        } else if (got->len[i] == 0 || got->len[i] > want->len[i] || got->len[i] > WIRE_MAX_LINE ||
                   memcmp(got->store + got->off[i], want->store + want->off[i], got->len[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

/* A stream of lines of every interesting length, ending mid-line. */
static size_t make_stream(char *out, size_t cap) {
    size_t n = 0;
    while (n + 4000 < cap) {
        int kind = (int)(rnd() % 8);
        size_t len;
        switch (kind) {
        case 0:
            len = 0;
            break;
        case 1:
            len = 1023 + rnd() % 4; /* around the limit */
            break;
        case 2:
            len = 1025 + rnd() % 3000; /* far over it */
            break;
        default:
            len = 20 + rnd() % 60;
            break;
        }
        for (size_t i = 0; i < len; i++) {
            out[n + i] = (char)('a' + rnd() % 26);
        }
        if (len > 0 && rnd() % 4 == 0) {
            out[n + len - 1] = '\r';
        }
        n += len;
        out[n++] = '\n';
    }
    memcpy(out + n, "tail-without-newline", 20);
    return n + 20;
}

static void test_splitter_chunkings(void) {
    rng_state = RNG_SEED;
    size_t cap = 1 << 20;
    char *stream = malloc(cap);
    char *buf = malloc(4096);
    struct rec *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    CHECK(stream && buf && want && got);
    if (!stream || !buf || !want || !got) {
        goto out;
    }
    size_t n = make_stream(stream, cap);
    rec_init(want, cap);
    reference_split(stream, n, want);
    CHECK(want->n > 100 && !want->overflow);
    int too_long = 0;
    for (int i = 0; i < want->n; i++) {
        too_long += want->err[i] == WIRE_E_TOOLONG;
    }
    CHECK(too_long > 10);

    for (int round = 0; round < 200; round++) {
        struct wire_splitter s;
        size_t maxchunk = round < 50 ? 1 + rnd() % 8 : 1 + rnd() % 9000;
        size_t bufcap = round % 2 ? 4096 : WIRE_SPLITTER_MIN_CAP;
        rec_init(got, cap);
        CHECK_INT(wire_splitter_init(&s, buf, bufcap, rec_fn, got), 0);
        for (size_t at = 0; at < n;) {
            size_t c = 1 + rnd() % maxchunk;
            if (c > n - at) {
                c = n - at;
            }
            wire_splitter_feed(&s, stream + at, c);
            at += c;
        }
        CHECK_MSG(rec_same(got, want), "round %d (max chunk %zu): %d lines, want %d", round,
                  maxchunk, got->n, want->n);
        CHECK_INT(wire_splitter_pending(&s), 20);
        CHECK_INT(s.too_long, (uint64_t)too_long);
        free(got->store);
    }
out:
    if (want) {
        free(want->store);
    }
    free(want);
    free(got);
    free(buf);
    free(stream);
}

/* Two lines and a long one split in two chunks at every position. */
static void test_splitter_every_split(void) {
    char stream[4000];
    size_t n = 0;
    const char *a = "n:a;b:1716300000000000000;e:1716300000000000001;s:ok\r\n";
    memcpy(stream, a, strlen(a));
    n += strlen(a);
    memset(stream + n, 'L', 1500);
    n += 1500;
    stream[n++] = '\n';
    memset(stream + n, 'M', 1024);
    n += 1024;
    stream[n++] = '\n';
    memcpy(stream + n, "ping\n", 5);
    n += 5;

    struct rec *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    char buf[WIRE_SPLITTER_MIN_CAP];
    int bad = 0;
    CHECK(want && got);
    if (!want || !got) {
        free(want);
        free(got);
        return;
    }
    rec_init(want, 8192);
    reference_split(stream, n, want);
    CHECK_INT(want->n, 4);
    CHECK_INT(want->err[1], WIRE_E_TOOLONG);
    CHECK_INT(want->err[2], WIRE_OK);
    for (size_t cut = 0; cut <= n; cut++) {
        for (size_t cut2 = cut; cut2 <= n; cut2 += (cut2 < cut + 3 ? 1 : 997)) {
            struct wire_splitter s;
            rec_init(got, 8192);
            wire_splitter_init(&s, buf, sizeof buf, rec_fn, got);
            wire_splitter_feed(&s, stream, cut);
            wire_splitter_feed(&s, stream + cut, cut2 - cut);
            wire_splitter_feed(&s, stream + cut2, n - cut2);
            if (!rec_same(got, want) || s.too_long != 1 || wire_splitter_pending(&s) != 0) {
                bad++;
            }
            free(got->store);
        }
    }
    CHECK_INT(bad, 0);
    free(want->store);
    free(want);
    free(got);

    /* An over-long line is reported once, as soon as it is known, then skipped. */
    struct rec *r = malloc(sizeof *r);
    if (!r) {
        return;
    }
    rec_init(r, 8192);
    struct wire_splitter s;
    wire_splitter_init(&s, buf, sizeof buf, rec_fn, r);
    for (int i = 0; i < 5000; i++) {
        wire_splitter_feed(&s, "zzzzzzzzzz", 10);
    }
    CHECK_INT(r->n, 1);
    CHECK_INT(r->err[0], WIRE_E_TOOLONG);
    wire_splitter_feed(&s, "zz\nping\n", 8);
    CHECK_INT(r->n, 2);
    CHECK_INT(r->err[1], WIRE_OK);
    CHECK_INT(r->len[1], 4);
    free(r->store);
    free(r);

    char small[WIRE_SPLITTER_MIN_CAP - 1];
    CHECK_INT(wire_splitter_init(&s, small, sizeof small, rec_fn, NULL), DQ_EINVAL);
}

/* ---- commands ---------------------------------------------------------------------- */

static void check_fmt(enum wire_dialect d, enum wire_cmd_kind kind, const char *name, double ms,
                      const char *want) {
    char out[WIRE_CMD_MAX];
    struct wire_cmd cmd = {kind, {name, name ? strlen(name) : 0}, ms, {NULL, 0}};
    int n = wire_format_cmd(out, sizeof out, d, &cmd);
    CHECK_MSG(n == (int)strlen(want) && memcmp(out, want, strlen(want)) == 0,
              "format(%g) gave %d \"%.*s\", want \"%s\"", ms, n, n > 0 ? n : 0, out, want);
}

/* ---- the splitter's fast instance path ------------------------------------------------ */

/* What one line came to: the parse result and, for an instance, everything dqd uses. */
struct outcome {
    int rc, kind, status, v2;
    int64_t start, end;
    size_t name_n;
    uint64_t name_fnv; /* the name's bytes, hashed here independently of wire */
    uint64_t v2_fnv;   /* the v2 slices (i:, t:, p:, a:): presence, lengths and bytes */
};

struct outcomes {
    struct outcome o[20000];
    int n, fast, bad_hash;
    int64_t now;
};

static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    }
    return h;
}

static void outcome_add(struct outcomes *r, int rc, const struct wire_msg *m) {
    struct outcome o = {.rc = rc};
    if (rc == WIRE_OK) {
        o.kind = (int)m->kind;
        if (m->kind == WIRE_INSTANCE) {
            o.status = (int)m->status;
            o.v2 = m->v2_fields;
            o.start = m->start_ns;
            o.end = m->end_ns;
            o.name_n = m->name.n;
            o.name_fnv = fnv(m->name.p, m->name.n);
            const struct wire_slice *v2[4] = {&m->id, &m->trace, &m->parent, &m->attrs};
            for (int k = 0; k < 4; k++) {
                uint64_t h = v2[k]->p ? fnv(v2[k]->p, v2[k]->n) + v2[k]->n : 7;
                o.v2_fnv = (o.v2_fnv ^ h) * 1099511628211ULL;
            }
            r->bad_hash += m->name_hash != wire_name_hash(m->name.p, m->name.n);
            r->bad_hash += !m->v2_fields && (m->id.p || m->trace.p || m->parent.p || m->attrs.p);
        }
    }
    if (r->n < (int)(sizeof r->o / sizeof r->o[0])) {
        r->o[r->n++] = o;
    }
}

static void outcome_line(void *ctx, const char *line, size_t len, int err) {
    struct outcomes *r = ctx;
    struct wire_msg m;
    outcome_add(r, err ? err : wire_parse(line, len, r->now, &m), &m);
}

static void outcome_instance(void *ctx, const struct wire_msg *m) {
    struct outcomes *r = ctx;
    r->fast++;
    outcome_add(r, WIRE_OK, m);
}

/* A random digit string of n digits (leading zeros allowed). */
static void put_digits(char *p, int n) {
    for (int i = 0; i < n; i++) {
        p[i] = (char)('0' + rnd() % 10);
    }
}

/*
 * One line for the fast-path test: mostly the usual legacy shape with random names,
 * times near NOW (or anywhere in 19 digits) and statuses, then damaged in one of many
 * ways the fast path must hand to the general parser. Returns its length with '\n'.
 */
static size_t fast_test_line(char *p) {
    static const char *const st[] = {"ok", "fa", "to", "ok", "xx", "o", "okk"};
    size_t n = 0;
    unsigned kind = rnd() % 16;
    int name_n = kind == 1 ? 250 + (int)(rnd() % 10) : 1 + (int)(rnd() % 24);
    memcpy(p, "n:", 2);
    n = 2;
    for (int i = 0; i < name_n; i++) {
        static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";
        p[n++] = set[rnd() % (i == 0 ? 53 : 63)];
    }
    int64_t start = NOW - 1000000000LL + (int64_t)(rnd() % 2000000000u);
    int64_t end = start + (int64_t)(rnd() % 100000000u);
    if (kind == 2) {
        end = start - 1; /* END before START */
    }
    if (kind == 3) {
        start -= 2 * WIRE_CLOCK_SLACK_NS; /* far from the clock */
    }
    int w = snprintf(p + n, 200, ";b:%019lld;e:%019lld;s:%s", (long long)start, (long long)end,
                     st[kind == 4 ? rnd() % 7 : rnd() % 3]);
    n += (size_t)w;
    if (kind == 5) {
        put_digits(p + n - 24, 19); /* any 19 digits as END, 0 and > INT64_MAX among them */
        if (rnd() % 4 == 0) {
            memcpy(p + n - 24, rnd() % 2 ? "9223372036854775808" : "0000000000000000000", 19);
        }
    }
    if (kind == 6 || kind == 11) {
        /* v2 trailing fields, good and bad (a bad one is an error of its own kind) */
        static const char *const v2[] = {";i:abc",
                                         ";i:0a1b;t:ff00;p:12;a:k=v,k2.x=v:2",
                                         ";t:dead",
                                         ";a:region=eu-1",
                                         ";zz:newer_field;i:1",
                                         ";i:xyz",
                                         ";i:",
                                         ";i:1;i:2",
                                         ";a:k=",
                                         ";",
                                         ";i:abc;",
                                         ";i:abc\r"};
        const char *f = v2[kind == 6 ? rnd() % 5 : rnd() % 12];
        memcpy(p + n, f, strlen(f));
        n += strlen(f);
    }
    if (kind == 7) {
        p[n++] = '\r';
    }
    if (kind == 8) {
        p[rnd() % n] = (char)(rnd() % 256); /* any byte anywhere, '\n' included */
    }
    if (kind == 12) {
        /* a name byte just outside the name classes */
        static const char edge[] = "@[`{/:-.~ \x7f\x80\xc3\xff";
        p[2 + rnd() % (unsigned)name_n] = edge[rnd() % (sizeof edge - 1)];
    }
    if (kind == 9) {
        memmove(p + n - 24, p + n - 23, 23); /* an 18-digit END */
        n--;
    }
    if (kind == 10) {
        const char *e0 = ";e:0;s:to";
        char *e = strstr(p, ";e:");
        memcpy(e, e0, strlen(e0));
        n = (size_t)(e - p) + strlen(e0);
    }
    p[n++] = '\n';
    return n;
}

static void test_fast_path(void) {
    static struct outcomes want, got;
    size_t cap = 4 << 20, n = 0;
    char *stream = malloc(cap);
    char buf[WIRE_SPLITTER_MIN_CAP];
    CHECK(stream != NULL);
    if (!stream) {
        return;
    }
    while (n < cap - 2000 && (int)(n / 40) < 19000) {
        n += fast_test_line(stream + n);
    }
    for (int round = 0; round < 40; round++) {
        struct wire_splitter a, b;
        int64_t now = round % 4 == 3 ? 0 : NOW; /* 0: no clock check */
        size_t maxchunk = round < 10 ? 1 + rnd() % 100 : 1 + rnd() % 70000;
        want.n = got.n = got.fast = want.fast = got.bad_hash = 0;
        want.now = got.now = now;
        CHECK_INT(wire_splitter_init(&a, buf, sizeof buf, outcome_line, &want), 0);
        for (size_t at = 0; at < n;) {
            size_t c = 1 + rnd() % maxchunk;
            c = c > n - at ? n - at : c;
            wire_splitter_feed(&a, stream + at, c);
            at += c;
        }
        char buf2[WIRE_SPLITTER_MIN_CAP];
        CHECK_INT(wire_splitter_init(&b, buf2, sizeof buf2, outcome_line, &got), 0);
        for (size_t at = 0; at < n;) {
            size_t c = 1 + rnd() % maxchunk;
            c = c > n - at ? n - at : c;
            wire_splitter_feed_instances(&b, stream + at, c, now, outcome_instance);
            at += c;
        }
        int diff = -1;
        for (int i = 0; i < want.n && diff < 0; i++) {
            if (memcmp(&want.o[i], &got.o[i], sizeof want.o[i]) != 0) {
                diff = i;
            }
        }
        CHECK_MSG(got.n == want.n && diff < 0, "round %d: %d vs %d lines, first difference %d",
                  round, got.n, want.n, diff);
        CHECK_INT(got.bad_hash + want.bad_hash, 0);
        CHECK_INT(a.too_long, b.too_long);
        CHECK_INT(wire_splitter_pending(&a), wire_splitter_pending(&b));
        /* the fast path took most lines, and not the damaged ones */
        int ok = 0;
        for (int i = 0; i < want.n; i++) {
            ok += want.o[i].rc == WIRE_OK;
        }
        /* (chunks under a line's length leave it little to take) */
        CHECK_MSG((maxchunk < 4096 || got.fast > ok / 2) && got.fast <= ok,
                  "round %d: %d fast of %d lines (%d ok)", round, got.fast, want.n, ok);
        if (round == 0) {
            CHECK(want.n > 5000 && ok < want.n - 1000);
        }
    }
    free(stream);
}

/* The hash depends on the bytes only: equal names at any address, distinct names differ. */
static void test_name_hash(void) {
    char a[300], b[300];
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        size_t n = 1 + rnd() % 255, off = rnd() % 16;
        for (size_t j = 0; j < n; j++) {
            a[j] = (char)('a' + rnd() % 26);
        }
        memcpy(b + off, a, n);
        bad += wire_name_hash(a, n) != wire_name_hash(b + off, n);
        b[off + rnd() % n] ^= 1;
        bad += wire_name_hash(a, n) == wire_name_hash(b + off, n);
        bad += wire_name_hash(a, n) == wire_name_hash(a, n - 1);
    }
    CHECK_INT(bad, 0);
    struct wire_msg m;
    CHECK_INT(
        parse_str("n:probe_name_longer_than_16;b:1716300000000000000;e:1716300000000000001;s:ok",
                  &m),
        WIRE_OK);
    CHECK(m.name_hash == wire_name_hash("probe_name_longer_than_16", 25));
}

static void test_format(void) {
    check_fmt(WIRE_LEGACY, WIRE_CMD_START_STUB, NULL, 0, "start_stub\n");
    check_fmt(WIRE_V2, WIRE_CMD_STOP_STUB, NULL, 0, "stop_stub\n");
    check_fmt(WIRE_V2, WIRE_CMD_SYNC, NULL, 0, "sync\n");
    check_fmt(WIRE_V2, WIRE_CMD_CLEAR_TIMEOUT, "checkout", 0, "clear_timeout;checkout\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "checkout", 0.25, "set_timeout;checkout;1\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "checkout", 0.25, "set_timeout;checkout;0.25\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 200, "set_timeout;c;200\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "c", 200, "set_timeout;c;200\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 1.5, "set_timeout;c;2\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "c", 1.5, "set_timeout;c;1.5\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 1024, "set_timeout;c;1024\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 1024.0000000001, "set_timeout;c;1024\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 1024.01, "set_timeout;c;1025\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 0.000001, "set_timeout;c;1\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "c", 0.000001, "set_timeout;c;0.000001\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "c", 0.0009765625, "set_timeout;c;0.000977\n");
    check_fmt(WIRE_V2, WIRE_CMD_SET_TIMEOUT, "c", 1e9, "set_timeout;c;1000000000\n");
    check_fmt(WIRE_LEGACY, WIRE_CMD_SET_TIMEOUT, "c", 1e9, "set_timeout;c;1000000000\n");

    char out[WIRE_CMD_MAX];
    struct wire_cmd cmd = {WIRE_CMD_SET_TIMEOUT, {"c", 1}, 0, {NULL, 0}};
    const double bad_ms[] = {0, -1, 1e-7, 1e9 + 1, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_ms / sizeof bad_ms[0]; i++) {
        cmd.ms = bad_ms[i];
        CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);
        CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), DQ_EINVAL);
    }
    cmd.ms = 5;
    cmd.name.p = "9bad";
    cmd.name.n = 4;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);
    cmd.name.p = NULL;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);
    cmd.kind = WIRE_CMD_CLEAR_TIMEOUT;
    cmd.name.p = "c";
    cmd.name.n = 1;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), DQ_EINVAL);
    cmd.kind = WIRE_CMD_SYNC;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), DQ_EINVAL);
    cmd.kind = (enum wire_cmd_kind)99;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);

    /* A buffer one byte short is DQ_EFULL; exactly long enough works (no NUL then). */
    cmd.kind = WIRE_CMD_SET_TIMEOUT;
    cmd.ms = 200;
    char exact[18];
    memset(exact, '#', sizeof exact);
    CHECK_INT(wire_format_cmd(exact, 17, WIRE_V2, &cmd), DQ_EFULL);
    CHECK_INT(wire_format_cmd(exact, 18, WIRE_V2, &cmd), 18);
    CHECK(memcmp(exact, "set_timeout;c;200\n", 18) == 0);
    CHECK_INT(wire_format_cmd(exact, 0, WIRE_V2, &cmd), DQ_EFULL);

    /* The longest command fits WIRE_CMD_MAX. */
    char name[WIRE_MAX_NAME];
    memset(name, 'n', sizeof name);
    cmd.name.p = name;
    cmd.name.n = sizeof name;
    cmd.ms = 999999999.999999;
    int n = wire_format_cmd(out, sizeof out, WIRE_V2, &cmd);
    CHECK(n > 255 && n < WIRE_CMD_MAX);
}

static void test_parse_cmd(void) {
    struct wire_cmd c;
    CHECK_INT(wire_parse_cmd("start_stub", 10, &c), 0);
    CHECK_INT(c.kind, WIRE_CMD_START_STUB);
    CHECK_INT(wire_parse_cmd("stop_stub\r", 10, &c), 0);
    CHECK_INT(c.kind, WIRE_CMD_STOP_STUB);
    CHECK_INT(wire_parse_cmd("set_timeout;abc;12.5", 20, &c), 0);
    CHECK_INT(c.kind, WIRE_CMD_SET_TIMEOUT);
    CHECK(slice_eq(c.name, "abc"));
    CHECK_NEAR(c.ms, 12.5, 0);
    CHECK_INT(wire_parse_cmd("set_timeout;abc", 15, &c), -1);
    CHECK_INT(wire_parse_cmd("set_timeout;;5", 14, &c), -1);
    CHECK_INT(wire_parse_cmd("set_timeout;a;5;6", 17, &c), -1);
    CHECK_INT(wire_parse_cmd("clear_timeout;", 14, &c), -1);
    CHECK_INT(wire_parse_cmd("clear_timeout;a;", 16, &c), -1);
    CHECK_INT(wire_parse_cmd("sync;", 5, &c), -1);
    CHECK_INT(wire_parse_cmd("", 0, &c), -1);

    /* Round trip of random commands in both dialects. */
    char out[WIRE_CMD_MAX];
    char name[40];
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        struct wire_cmd in = {
            (enum wire_cmd_kind)(rnd() % 5), {name, 1 + rnd() % 39}, 0, {NULL, 0}};
        enum wire_dialect d = rnd() % 2 ? WIRE_V2 : WIRE_LEGACY;
        name[0] = (char)('a' + rnd() % 26);
        for (size_t j = 1; j < in.name.n; j++) {
            name[j] = "abcXYZ_019"[rnd() % 10];
        }
        in.ms = (double)(rnd() % 1000000000) / (double)(1u << (rnd() % 20)) + 1e-6;
        int n = wire_format_cmd(out, sizeof out, d, &in);
        if (n < 0) {
            bad += !(d == WIRE_LEGACY &&
                     (in.kind == WIRE_CMD_SYNC || in.kind == WIRE_CMD_CLEAR_TIMEOUT));
            continue;
        }
        if (out[n - 1] != '\n' || wire_parse_cmd(out, (size_t)n - 1, &c) != 0 ||
            c.kind != in.kind) {
            bad++;
            continue;
        }
        if (in.kind == WIRE_CMD_SET_TIMEOUT || in.kind == WIRE_CMD_CLEAR_TIMEOUT) {
            bad += c.name.n != in.name.n || memcmp(c.name.p, name, in.name.n) != 0;
        }
        if (in.kind == WIRE_CMD_SET_TIMEOUT) {
            double want = d == WIRE_LEGACY ? fmax(1.0, ceil(in.ms - 1e-6)) : in.ms;
            bad += fabs(c.ms - want) > (d == WIRE_LEGACY ? 0 : 5e-7 + 1e-15 * want);
        }
    }
    CHECK_INT(bad, 0);
}

/* Probes bound to functions (issue 18): the trace command, MFA validation, and the
 * tracer's fields of a state line. */
static void test_trace(void) {
    const char *good[] = {"m:f/0", "dqs_shop:stock_db/1", "my.mod_1:f@x/255", "a:b/10"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(wire_mfa_valid(good[i], strlen(good[i])));
    }
    const char *bad[] = {"",        "m:f",     "m/1",    "M:f/1",   "m:F/1",  "m:f/256",  "m:f/-1",
                         "m:f/1x",  "m:f.g/1", ":f/1",   "m:/1",    "m:f/",   "m:f/1000", "m:f/01",
                         "m f:g/1", "m:f/1/2", "1m:f/1", "m:f:g/1", "m;x:f/1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!wire_mfa_valid(bad[i], strlen(bad[i])));
    }
    char longm[WIRE_MAX_MFA + 8];
    memset(longm, 'm', sizeof longm);
    memcpy(longm + WIRE_MAX_MFA - 4, ":f/1", 4);
    CHECK(wire_mfa_valid(longm, WIRE_MAX_MFA));
    memcpy(longm + WIRE_MAX_MFA - 3, ":f/1", 4);
    CHECK(!wire_mfa_valid(longm, WIRE_MAX_MFA + 1));

    char out[WIRE_CMD_MAX];
    struct wire_cmd cmd = {.kind = WIRE_CMD_TRACE,
                           .name = {"stock_db", 8},
                           .ms = 64,
                           .mfa = {"dqs_shop:stock_db/1", 19}};
    int n = wire_format_cmd(out, sizeof out, WIRE_V2, &cmd);
    CHECK_INT(n, (int)strlen("trace;stock_db;64;dqs_shop:stock_db/1\n"));
    CHECK_STR(out, "trace;stock_db;64;dqs_shop:stock_db/1\n");
    /* a legacy wrapper has no trace command: dqd records it as not applied */
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_LEGACY, &cmd), DQ_EINVAL);
    cmd.mfa.n = 8; /* "dqs_shop" */
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);
    cmd.mfa.p = NULL;
    CHECK_INT(wire_format_cmd(out, sizeof out, WIRE_V2, &cmd), DQ_EINVAL);
    /* the longest trace command fits WIRE_CMD_MAX, and its ack a line */
    char name[WIRE_MAX_NAME];
    memset(name, 'n', sizeof name);
    memset(longm, 'm', sizeof longm);
    memcpy(longm + WIRE_MAX_MFA - 6, ":f/255", 6);
    struct wire_cmd big = {.kind = WIRE_CMD_TRACE,
                           .name = {name, sizeof name},
                           .ms = 999999999.999999,
                           .mfa = {longm, WIRE_MAX_MFA}};
    n = wire_format_cmd(out, sizeof out, WIRE_V2, &big);
    CHECK(n > 500 && n < WIRE_CMD_MAX && n + 4 < WIRE_MAX_LINE);

    struct wire_cmd c;
    CHECK_INT(wire_parse_cmd("trace;p;0.5;m:f/2", 17, &c), 0);
    CHECK_INT(c.kind, WIRE_CMD_TRACE);
    CHECK(slice_eq(c.name, "p") && slice_eq(c.mfa, "m:f/2"));
    CHECK_NEAR(c.ms, 0.5, 0);
    const char *badc[] = {
        "trace;p;0.5",     "trace;p;0.5;",      "trace;p;0.5;m:f", "trace;;1;m:f/1",
        "trace;p;0;m:f/1", "trace;p;1;m:f/1;x", "trace;p;x;m:f/1", "trace"};
    for (size_t i = 0; i < sizeof badc / sizeof badc[0]; i++) {
        CHECK_INT(wire_parse_cmd(badc[i], strlen(badc[i]), &c), -1);
    }
    /* round trip through a v2 ack */
    struct wire_msg m;
    CHECK_INT(parse_str("ack;trace;stock_db;64;dqs_shop:stock_db/1", &m), WIRE_OK);
    CHECK_INT(m.kind, WIRE_ACK);
    CHECK_INT(m.cmd.kind, WIRE_CMD_TRACE);
    CHECK(slice_eq(m.cmd.mfa, "dqs_shop:stock_db/1"));

    /* the tracer's fields of a state line */
    CHECK_INT(parse_str("state;running:1;probes:a=64,b=2;traced:a=m:f/1,b=m:g/0;tcalls:a=12,b=0;"
                        "sampling:a=0.25;tdropped:b=3;trefused:c=tail_recursive;tother:2;new:x",
                        &m),
              WIRE_OK);
    CHECK(slice_eq(m.traced, "a=m:f/1,b=m:g/0"));
    CHECK(slice_eq(m.tcalls, "a=12,b=0"));
    CHECK(slice_eq(m.sampling, "a=0.25"));
    CHECK(slice_eq(m.tdropped, "b=3"));
    CHECK(slice_eq(m.trefused, "c=tail_recursive"));
    CHECK(m.tother == 2);
    struct wire_slice it = m.traced, k, v;
    CHECK_INT(wire_kv_next(&it, &k, &v), 1);
    CHECK(slice_eq(k, "a") && slice_eq(v, "m:f/1"));
    /* absent fields are empty, also after an earlier line had them */
    CHECK_INT(parse_str("state;running:1;probes:a=64", &m), WIRE_OK);
    CHECK_INT(m.traced.n + m.tcalls.n + m.sampling.n + m.tdropped.n + m.trefused.n, 0);
    CHECK(m.tother == 0);
    CHECK_INT(parse_str("state;running:1;probes:a=64;sampling:a=0", &m), WIRE_OK);
    CHECK_INT(parse_str("state;running:1;probes:a=64;sampling:a=1", &m), WIRE_OK);
    CHECK_INT(parse_str("state;running:1;probes:a=64;sampling:a=0.0", &m), WIRE_OK);
    CHECK_INT(parse_str("state;running:1;probes:a=64;sampling:a=1.000,b=0.034", &m), WIRE_OK);
    const char *bads[] = {"state;running:1;probes:;traced:a=M:f/1",
                          "state;running:1;probes:;traced:",
                          "state;running:1;probes:;traced:a",
                          "state;running:1;probes:;tcalls:a=-1",
                          "state;running:1;probes:;tcalls:a=1x",
                          "state;running:1;probes:;sampling:a=1.5",
                          "state;running:1;probes:;sampling:a=x",
                          "state;running:1;probes:;sampling:a=1.01",
                          "state;running:1;probes:;sampling:a=0.",
                          "state;running:1;probes:;sampling:a=.5",
                          "state;running:1;probes:;tdropped:9a=1",
                          "state;running:1;probes:;trefused:a=Tail",
                          "state;running:1;probes:;trefused:a=",
                          "state;running:1;probes:;tother:x",
                          "state;running:1;probes:;tother:123456789012345678901"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        CHECK_INT(parse_str(bads[i], &m), WIRE_E_SYNTAX);
    }
}

/* A field of mfa_cases.txt with its %NN escapes decoded into out (cap bytes); its length. */
static size_t case_field(const char *p, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned v;
        if (p[i] == '%' && i + 2 < n && sscanf(p + i + 1, "%2x", &v) == 1) {
            out[k++] = (char)v;
            i += 2;
        } else {
            out[k++] = p[i];
        }
    }
    out[k] = '\0';
    return k;
}

/* Functions with Erlang's atoms (issue 25): the cases the wrapper's EUnit tests read too,
 * through MFA validation, the trace command both ways and the traced: list of a state
 * line, where ',' and ';' inside quotes do not end a pair or a field. */
static void test_mfa_cases(void) {
    FILE *f = fopen(MFA_CASES_TXT, "r");
    CHECK(f != NULL);
    if (!f) {
        return;
    }
    char line[1024];
    int n_ok = 0, n_bad = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        if (len == 0 || line[0] == '#') {
            continue;
        }
        char *fields[6] = {0};
        size_t nf = 0;
        for (char *p = line; nf < 6; nf++) {
            fields[nf] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                nf++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        char mfa[512], canon[512], buf[WIRE_CMD_MAX], st[1024];
        CHECK(nf >= 2);
        if (nf < 2) {
            continue;
        }
        size_t mn = case_field(fields[1], strlen(fields[1]), mfa, sizeof mfa);
        int ok = strcmp(fields[0], "ok") == 0;
        CHECK(ok || strcmp(fields[0], "bad") == 0);
        if (wire_mfa_valid(mfa, mn) != ok) {
            fprintf(stderr, "mfa case %s: %s, expected %s (%s)\n", fields[1],
                    ok ? "refused" : "accepted", fields[0], ok ? wire_mfa_check(mfa, mn) : "valid");
        }
        CHECK_INT(wire_mfa_valid(mfa, mn), ok);
        CHECK_INT(wire_mfa_check(mfa, mn) == NULL, ok);
        struct wire_cmd cmd = {.kind = WIRE_CMD_TRACE, .name = {"p", 1}, .ms = 2, .mfa = {mfa, mn}};
        int k =
            snprintf(st, sizeof st, "state;running:1;probes:p=2;traced:p=%.*s,q=m:f/1;tcalls:p=1",
                     (int)mn, mfa);
        struct wire_msg m;
        if (!ok) {
            n_bad++;
            CHECK_INT(wire_format_cmd(buf, sizeof buf, WIRE_V2, &cmd), DQ_EINVAL);
            CHECK(wire_parse(st, (size_t)k, 0, &m) != WIRE_OK);
            continue;
        }
        n_ok++;
        CHECK(nf == 6);
        if (nf != 6) {
            continue;
        }
        size_t cn = case_field(fields[5], strlen(fields[5]), canon, sizeof canon);
        CHECK(wire_mfa_valid(canon, cn));
        CHECK(cn <= mn); /* the canonical form is never longer than an accepted one */
        int w = wire_format_cmd(buf, sizeof buf, WIRE_V2, &cmd);
        CHECK(w > 0);
        struct wire_cmd back;
        CHECK_INT(wire_parse_cmd(buf, w > 0 ? (size_t)w - 1 : 0, &back), 0);
        CHECK(back.kind == WIRE_CMD_TRACE && back.mfa.n == mn && memcmp(back.mfa.p, mfa, mn) == 0);
        CHECK(back.name.n == 1 && back.ms == 2);
        CHECK_INT(wire_parse(st, (size_t)k, 0, &m), WIRE_OK);
        struct wire_slice it = m.traced, key, val;
        CHECK_INT(wire_kv_next(&it, &key, &val), 1);
        CHECK(slice_eq(key, "p") && val.n == mn && memcmp(val.p, mfa, mn) == 0);
        CHECK_INT(wire_kv_next(&it, &key, &val), 1);
        CHECK(slice_eq(key, "q") && slice_eq(val, "m:f/1"));
        CHECK_INT(wire_kv_next(&it, &key, &val), 0);
        CHECK(slice_eq(m.tcalls, "p=1"));
    }
    fclose(f);
    CHECK(n_ok >= 20 && n_bad >= 40);

    /* the length limit counts bytes as written, quotes and UTF-8 included */
    char q[WIRE_MAX_MFA + 8];
    size_t at = 0;
    q[at++] = '\'';
    q[at++] = 'x';
    for (int i = 0; i < 124; i++) { /* 'xé…é':f/1, 1 + 1 + 248 + 5 bytes */
        q[at++] = (char)0xc3, q[at++] = (char)0xa9;
    }
    memcpy(q + at, "':f/1", 5);
    at += 5;
    CHECK_INT((int)at, WIRE_MAX_MFA);
    CHECK(wire_mfa_valid(q, at));
    memmove(q + 2, q + 1, at - 1); /* one byte more: refused */
    at++;
    CHECK(!wire_mfa_valid(q, at) && strstr(wire_mfa_check(q, at), "255 bytes") != NULL);
    /* reasons an error message can give */
    CHECK(strstr(wire_mfa_check("Shop.Orders:place/1", 19), "Elixir.Alias") != NULL);
    CHECK(strstr(wire_mfa_check("'a:f/1", 6), "not closed") != NULL);
    CHECK(strstr(wire_mfa_check("m:do it/1", 9), "quote any other") != NULL);
    CHECK(strstr(wire_mfa_check("'a\nb':f/1", 9), "control character") != NULL);
}

static void test_escape(void) {
    char out[64];
    CHECK_STR(wire_escape(out, sizeof out, "m:f/1", 5), "m:f/1");
    CHECK_STR(wire_escape(out, sizeof out, "a\nb\r\t\"\\", 7), "a\\nb\\r\\t\\\"\\\\");
    CHECK_STR(wire_escape(out, sizeof out, "\x01\x7f\xff\xc3", 4), "\\x01\\x7f\\xff\\xc3");
    CHECK_STR(wire_escape(out, sizeof out,
                          "gr\xc3\xb6\xc3\x9f"
                          "e",
                          7),
              "gr\xc3\xb6\xc3\x9f"
              "e");
    CHECK_STR(wire_escape(out, sizeof out, "a\0b", 3), "a\\x00b");
    /* cut where it does not fit: what fits, then "..." */
    CHECK_STR(wire_escape(out, 8, "abcdefgh", 8), "abcd...");
    CHECK_STR(wire_escape(out, 8, "abcdefg", 7), "abcdefg");
    CHECK_STR(wire_escape(out, 8, "\n\n\n\n", 4), "\\n\\n...");
    CHECK_STR(wire_escape(out, 8, "", 0), "");
}

static const struct check_case cases[] = {
    CHECK_CASE(err_names),
    CHECK_CASE(legacy_instances),
    CHECK_CASE(v2_instances),
    CHECK_CASE(times),
    CHECK_CASE(names),
    CHECK_CASE(line_limit),
    CHECK_CASE(control_lines),
    CHECK_CASE(parse_ms),
    CHECK_CASE(wirecol_example),
    CHECK_CASE(bad_lines),
    CHECK_CASE(splitter_chunkings),
    CHECK_CASE(splitter_every_split),
    CHECK_CASE(fast_path),
    CHECK_CASE(name_hash),
    CHECK_CASE(format),
    CHECK_CASE(parse_cmd),
    CHECK_CASE(trace),
    CHECK_CASE(mfa_cases),
    CHECK_CASE(escape),
};

CHECK_MAIN(cases)
