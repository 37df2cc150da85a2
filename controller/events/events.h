/*
 * events.h: dqd's live event stream, Server-Sent Events on GET /api/v1/events
 * (docs/api.md, "Live events").
 *
 * A hub keeps the connected clients (streams of the http module) and sends each event to
 * every client that asked for its type, formatted once:
 *
 *     id: 42
 *     event: window
 *     data: {"wid":1795317469,…}
 *
 * (one line of compact JSON, then a blank line). A client gets a `hello` event first, and
 * a comment line (": keep-alive") every heartbeat so proxies and dead peers are noticed.
 * Every client has a bound on its unsent bytes: a client that does not read is dropped
 * (counted) and dqd goes on; the browser's EventSource then reconnects by itself and
 * gets a new `hello`, its cue to fetch the state again. Nothing is replayed.
 *
 * The hub does no decisions of its own: dqd publishes what the core and the adaptive loop
 * tell it (windows closed, probes changed, triggers, hypotheses, verdicts). The pure
 * parts (a frame's bytes, the ?types= filter) are separate functions for the tests.
 */
#ifndef DQ_EVENTS_H
#define DQ_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "http.h"

/* The event types, in the order of their bits in a filter mask. */
#define EVENTS_TYPES(X)                                                                            \
    X(HELLO, "hello")                     /* to one client, when it connects */                    \
    X(WINDOW, "window")                   /* a window closed: every probe's summary */             \
    X(PROBE, "probe")                     /* a probe changed: enabled, dMax, QTA, deleted */       \
    X(DIAGRAM, "diagram")                 /* a diagram was loaded */                               \
    X(TRIGGER_FIRED, "trigger_fired")     /* a trigger fired */                                    \
    X(TRIGGER_CLEARED, "trigger_cleared") /* a trigger cleared */                                  \
    X(HYPOTHESIS, "hypothesis")           /* an investigation recorded a step */                   \
    X(VERDICT, "verdict")                 /* an investigation closed */                            \
    X(PROBE_SILENT, "probe_silent")       /* an enabled probe's source went silent */              \
    X(PROBE_DATA_RETURNED, "probe_data_returned") /* … and came back */

enum events_type {
#define EVENTS_ENUM_(id, name) EVENTS_##id,
    EVENTS_TYPES(EVENTS_ENUM_)
#undef EVENTS_ENUM_
        EVENTS_N_TYPES
};

#define EVENTS_ALL ((1u << EVENTS_N_TYPES) - 1u)

/* The type's name ("window"), NULL out of range. */
const char *events_type_name(int type);

/* The type of a name, or −1 for a name that is none. */
int events_type_of(const char *name);

/*
 * Parses a filter, the value of ?types=: names separated by commas ("window,verdict";
 * spaces around names are ignored; "" or NULL is every type). `hello` is always sent,
 * whatever the filter. Returns 0 and *mask, or −1 with a message naming the unknown type
 * in err.
 */
int events_parse_types(const char *list, unsigned *mask, char *err, size_t err_cap);

/*
 * The bytes of one event: "id: ID\nevent: TYPE\ndata: JSON\n\n", the JSON compact on one
 * line (jansson escapes every control character, so no line break can end up inside it).
 * Returns a malloc'd string (*len its length), or NULL when out of memory or data cannot be
 * encoded.
 */
char *events_format(uint64_t id, const char *type, const json_t *data, size_t *len);

/* ---- the hub ----------------------------------------------------------------------- */

struct events;

struct events_options {
    size_t max_clients;    /* clients at once; one more gets 503 (64) */
    size_t max_pending;    /* unsent bytes per client before it is dropped (1 MiB) */
    uint64_t heartbeat_ms; /* a comment line to every client this often (15000; 0: none) */
};

/* Fills *o with the defaults above. */
void events_options_default(struct events_options *o);

/* Counters (for /metrics, the status and the tests). */
struct events_stats {
    uint64_t clients;   /* connected now */
    uint64_t connects;  /* streams opened since start */
    uint64_t dropped;   /* clients dropped because they did not read */
    uint64_t published; /* events published (the last id) */
    uint64_t bytes;     /* bytes queued to clients */
};

/* Creates a hub on loop (o NULL: defaults). DQ_OK and *out, DQ_ENOMEM, DQ_EINVAL. */
int events_create(uv_loop_t *loop, const struct events_options *o, struct events **out);

/*
 * The route GET /api/v1/events (also HEAD): answers on res with a stream of events, after
 * a `hello` {"id": the last event's id, "types": [the filter], "heartbeat_ms"}. 400 for an
 * unknown type in ?types=, 503 when max_clients are connected or the hub is closing.
 */
void events_subscribe(struct events *ev, const struct http_request *req, struct http_response *res);

/*
 * Sends one event to every client whose filter has its type. Takes the reference to data
 * (NULL: nothing is sent). A client whose unsent bytes would pass max_pending is dropped.
 * Unknown type: nothing is sent.
 */
void events_publish(struct events *ev, enum events_type type, json_t *data);

/* 1 when some connected client wants events of this type (build nothing otherwise). */
int events_wanted(const struct events *ev, enum events_type type);

void events_get_stats(const struct events *ev, struct events_stats *st);

/*
 * Stops the heartbeat and takes no more clients; cb(arg) once the timer is closed. The
 * clients themselves are closed by the http server they belong to: free the hub with
 * events_destroy only after that server has closed.
 */
void events_close(struct events *ev, void (*cb)(void *arg), void *arg);

/* Frees the hub (after events_close and the http server's close). NULL is a no-op. */
void events_destroy(struct events *ev);

#endif /* DQ_EVENTS_H */
