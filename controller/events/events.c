/*
 * events.c: the Server-Sent Events hub (see events.h). Clients live in a doubly linked
 * list; a publish formats the event once and queues the same bytes on every client that
 * wants it. A client leaves the list only in its stream's closed callback (the http
 * module calls it from the loop, never inside http_stream_write), so the list is never
 * changed under a loop over it.
 */
#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

static const char *const type_names[EVENTS_N_TYPES] = {
#define EVENTS_NAME_(id, name) name,
    EVENTS_TYPES(EVENTS_NAME_)
#undef EVENTS_NAME_
};

const char *events_type_name(int type) {
    return type >= 0 && type < EVENTS_N_TYPES ? type_names[type] : NULL;
}

int events_type_of(const char *name) {
    for (int i = 0; i < EVENTS_N_TYPES; i++) {
        if (strcmp(type_names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

int events_parse_types(const char *list, unsigned *mask, char *err, size_t err_cap) {
    *mask = EVENTS_ALL;
    if (!list) {
        return 0;
    }
    unsigned m = 0;
    int any = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ') {
            p++;
        }
        const char *end = p;
        while (*end && *end != ',') {
            end++;
        }
        const char *last = end;
        while (last > p && last[-1] == ' ') {
            last--;
        }
        size_t n = (size_t)(last - p);
        if (n > 0) {
            char name[64];
            int t = -1;
            if (n < sizeof name) {
                memcpy(name, p, n);
                name[n] = '\0';
                t = events_type_of(name);
            }
            if (t < 0) {
                snprintf(err, err_cap, "unknown event type \"%.*s\" in types (known: %s", (int)n, p,
                         type_names[0]);
                for (int i = 1; i < EVENTS_N_TYPES; i++) {
                    size_t used = strlen(err);
                    snprintf(err + used, err_cap - used, ", %s", type_names[i]);
                }
                size_t used = strlen(err);
                snprintf(err + used, err_cap - used, ")");
                return -1;
            }
            m |= 1u << t;
            any = 1;
        }
        p = *end ? end + 1 : end;
    }
    *mask = any ? m | (1u << EVENTS_HELLO) : EVENTS_ALL;
    return 0;
}

struct dump_buf {
    char *s;
    size_t len, cap;
};

static int dump_cb(const char *buffer, size_t size, void *data) {
    struct dump_buf *b = data;
    if (b->len + size + 3 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + size + 3) {
            cap *= 2;
        }
        char *s = realloc(b->s, cap);
        if (!s) {
            return -1;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, buffer, size);
    b->len += size;
    return 0;
}

char *events_format(uint64_t id, const char *type, const json_t *data, size_t *len) {
    char head[160];
    int hn =
        snprintf(head, sizeof head, "id: %llu\nevent: %s\ndata: ", (unsigned long long)id, type);
    if (hn < 0 || (size_t)hn >= sizeof head) {
        return NULL;
    }
    struct dump_buf b = {0};
    if (dump_cb(head, (size_t)hn, &b) < 0 ||
        json_dump_callback(data, dump_cb, &b,
                           JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY) != 0) {
        free(b.s);
        return NULL;
    }
    b.s[b.len++] = '\n';
    b.s[b.len++] = '\n';
    b.s[b.len] = '\0';
    *len = b.len;
    return b.s;
}

/* ---- the hub --------------------------------------------------------------------------- */

struct client {
    struct events *ev;
    struct http_stream *stream; /* NULL until open */
    unsigned mask;
    struct client *prev, *next;
};

struct events {
    uv_loop_t *loop;
    struct events_options opt;
    uv_timer_t heartbeat;
    int timer_open;
    int closing;
    struct client *clients; /* open streams */
    size_t n_clients;       /* clients, open or about to open */
    struct events_stats stats;
    void (*closed_cb)(void *);
    void *closed_arg;
};

void events_options_default(struct events_options *o) {
    o->max_clients = 64;
    o->max_pending = 1024 * 1024;
    o->heartbeat_ms = 15000;
}

/* Queues bytes on one client; a client that does not read is dropped (counted). */
static void client_send(struct client *c, const char *bytes, size_t len) {
    if (!c->stream) {
        return;
    }
    int rc = http_stream_write(c->stream, bytes, len);
    if (rc == DQ_OK) {
        c->ev->stats.bytes += len;
    } else if (rc == DQ_EFULL) {
        c->ev->stats.dropped++;
    }
}

static void on_heartbeat(uv_timer_t *t) {
    struct events *ev = t->data;
    static const char beat[] = ": keep-alive\n\n";
    for (struct client *c = ev->clients; c; c = c->next) {
        client_send(c, beat, sizeof beat - 1);
    }
}

int events_create(uv_loop_t *loop, const struct events_options *o, struct events **out) {
    struct events_options d;
    events_options_default(&d);
    if (o) {
        d = *o;
    }
    if (d.max_clients == 0 || d.max_pending < 1024) {
        return dq_fail(DQ_EINVAL, "events: max_clients must be > 0 and max_pending ≥ 1024");
    }
    struct events *ev = calloc(1, sizeof *ev);
    if (!ev) {
        return dq_fail(DQ_ENOMEM, "no memory for the event hub");
    }
    ev->loop = loop;
    ev->opt = d;
    if (uv_timer_init(loop, &ev->heartbeat) != 0) {
        free(ev);
        return dq_fail(DQ_ENOMEM, "cannot create the heartbeat timer");
    }
    ev->heartbeat.data = ev;
    ev->timer_open = 1;
    if (d.heartbeat_ms > 0) {
        uv_timer_start(&ev->heartbeat, on_heartbeat, d.heartbeat_ms, d.heartbeat_ms);
    }
    *out = ev;
    return DQ_OK;
}

static void on_client_open(void *ctx, struct http_stream *s) {
    struct client *c = ctx;
    struct events *ev = c->ev;
    c->stream = s;
    c->next = ev->clients;
    if (ev->clients) {
        ev->clients->prev = c;
    }
    ev->clients = c;
    ev->stats.clients++;
    ev->stats.connects++;
}

static void on_client_closed(void *ctx, struct http_stream *s) {
    struct client *c = ctx;
    struct events *ev = c->ev;
    (void)s;
    if (c->stream) {
        if (c->prev) {
            c->prev->next = c->next;
        } else {
            ev->clients = c->next;
        }
        if (c->next) {
            c->next->prev = c->prev;
        }
        ev->stats.clients--;
    }
    ev->n_clients--;
    free(c);
}

void events_subscribe(struct events *ev, const struct http_request *req,
                      struct http_response *res) {
    unsigned mask;
    char err[512];
    if (events_parse_types(http_request_query(req, "types"), &mask, err, sizeof err) < 0) {
        http_reply_error(res, 400, "bad_data", "%s", err);
        return;
    }
    if (ev->closing || ev->n_clients >= ev->opt.max_clients) {
        http_reply_error(res, 503, "unavailable",
                         ev->closing ? "dqd is shutting down"
                                     : "too many event clients (%zu connected)",
                         ev->n_clients);
        return;
    }
    json_t *types = json_array();
    for (int i = 0; i < EVENTS_N_TYPES; i++) {
        if (mask & (1u << i)) {
            json_array_append_new(types, json_string(type_names[i]));
        }
    }
    json_t *hello = json_pack("{s:I,s:o,s:I}", "id", (json_int_t)ev->stats.published, "types",
                              types, "heartbeat_ms", (json_int_t)ev->opt.heartbeat_ms);
    size_t len = 0;
    char *frame = hello ? events_format(ev->stats.published, "hello", hello, &len) : NULL;
    json_decref(hello);
    if (!frame) {
        http_reply_error(res, 500, "internal", "no memory for the event stream");
        return;
    }
    http_reply_text(res, 200, "text/event-stream; charset=utf-8", "retry: 2000\n\n", 13);
    http_response_append(res, frame, len);
    free(frame);
    http_response_add_header(res, "Cache-Control", "no-store");
    http_response_add_header(res, "X-Accel-Buffering", "no");
    if (req->method != HTTP_GET) {
        return; /* HEAD: the head only */
    }
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        http_reply_error(res, 500, "internal", "no memory for an event client");
        return;
    }
    c->ev = ev;
    c->mask = mask;
    struct http_stream_spec spec = {.open = on_client_open,
                                    .closed = on_client_closed,
                                    .ctx = c,
                                    .max_pending = ev->opt.max_pending};
    if (http_response_stream(res, &spec) != DQ_OK) {
        free(c);
        http_reply_error(res, 500, "internal", "cannot stream");
        return;
    }
    ev->n_clients++;
}

int events_wanted(const struct events *ev, enum events_type type) {
    for (const struct client *c = ev ? ev->clients : NULL; c; c = c->next) {
        if (c->mask & (1u << type)) {
            return 1;
        }
    }
    return 0;
}

void events_publish(struct events *ev, enum events_type type, json_t *data) {
    if (!ev || !data || (int)type < 0 || type >= EVENTS_N_TYPES) {
        json_decref(data);
        return;
    }
    ev->stats.published++;
    if (!events_wanted(ev, type)) {
        json_decref(data);
        return;
    }
    size_t len = 0;
    char *frame = events_format(ev->stats.published, type_names[type], data, &len);
    json_decref(data);
    if (!frame) {
        return;
    }
    for (struct client *c = ev->clients; c; c = c->next) {
        if (c->mask & (1u << type)) {
            client_send(c, frame, len);
        }
    }
    free(frame);
}

void events_get_stats(const struct events *ev, struct events_stats *st) {
    *st = ev->stats;
}

static void on_timer_closed(uv_handle_t *h) {
    struct events *ev = h->data;
    ev->timer_open = 0;
    if (ev->closed_cb) {
        ev->closed_cb(ev->closed_arg);
    }
}

void events_close(struct events *ev, void (*cb)(void *arg), void *arg) {
    if (!ev || ev->closing) {
        return;
    }
    ev->closing = 1;
    ev->closed_cb = cb;
    ev->closed_arg = arg;
    uv_close((uv_handle_t *)&ev->heartbeat, on_timer_closed);
}

void events_destroy(struct events *ev) {
    if (!ev) {
        return;
    }
    /* Clients left only when their server never closed (a caller's bug): forget them. */
    while (ev->clients) {
        struct client *c = ev->clients;
        ev->clients = c->next;
        free(c);
    }
    free(ev);
}
