/*
 * dqctl_watch.h: `dqctl watch`, dqd's live events (GET /api/v1/events, Server-Sent
 * Events) printed as lines, and its pure parts for the tests: the SSE parser and the
 * rendering of one event.
 */
#ifndef DQCTL_WATCH_H
#define DQCTL_WATCH_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define DQCTL_SSE_MAX_EVENT (64u << 20) /* bytes of one event's data */

/* `dqctl watch [--types LIST] [--count N] [--for DURATION]` (row of dqctl_main.c's table). */
int dqctl_watch_main(int argc, char **argv);

/* ---- pure parts ------------------------------------------------------------------- */

/* Called per complete event: its type ("message" when the stream named none), id ("" when
 * none) and data (the data lines joined by '\n', NUL-terminated). Return 0 to go on, non-zero
 * to stop the parser (dqctl_sse_feed then returns 1). */
typedef int (*dqctl_sse_fn)(void *ctx, const char *type, const char *id, const char *data,
                            size_t len);

/* An event-stream parser (the WHATWG rules: lines end in LF, CRLF or CR; "field: value",
 * one space after the colon dropped; a line starting with ':' is a comment; a blank line
 * dispatches the event when it has data). */
struct dqctl_sse {
    dqctl_sse_fn fn;
    void *ctx;
    char *line; /* the line being read */
    size_t line_len, line_cap;
    char *data; /* the event's data so far */
    size_t data_len, data_cap;
    char type[64];
    char id[64];
    int cr;       /* the previous byte was CR (an LF right after it ends nothing more) */
    int overflow; /* an event passed DQCTL_SSE_MAX_EVENT */
};

void dqctl_sse_init(struct dqctl_sse *p, dqctl_sse_fn fn, void *ctx);
void dqctl_sse_release(struct dqctl_sse *p);

/* Feeds bytes. 0: all used; 1: the callback asked to stop; −1: out of memory or an event
 * over DQCTL_SSE_MAX_EVENT. */
int dqctl_sse_feed(struct dqctl_sse *p, const char *bytes, size_t len);

/*
 * One event as one line (with its newline) for people, e.g.
 *   "09:26:01.000 window   09:26:00 +1 s: 3 probes, 342 instances; root n 114, p50 51 ms,
 *    p95 62 ms, lost 0.00%; …"
 *   "09:26:03.120 verdict  investigation 1 at checkout: localized at pay: …"
 * now_s is when it arrived (Unix seconds). Unknown types print their data as JSON.
 */
void dqctl_render_event(FILE *out, double now_s, const char *type, const json_t *data);

#endif /* DQCTL_WATCH_H */
