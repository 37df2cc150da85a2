/*
 * webhook.h: JSON POSTs of dqd's events (trigger fired or cleared, investigation
 * verdicts) to configured URLs, through the libcurl multi interface driven by a libuv
 * loop, so a slow or dead receiver never blocks the daemon.
 *
 * Events wait in one bounded queue (the oldest is dropped, and counted, when it is
 * full). Each delivery is one POST with Content-Type application/json and body
 * {"event": NAME, "time": UNIX_SECONDS, "data": PAYLOAD}; a 2xx answer is success,
 * anything else (connection refused, timeout, 5xx, …) is retried after 250 ms, 500 ms,
 * 1 s … (capped at 30 s) up to `retries` more times, then counted as failed. At most
 * four POSTs are in flight at once. Events to one URL keep their order.
 */
#ifndef DQ_WEBHOOK_H
#define DQ_WEBHOOK_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "settings.h"

struct webhooks;

struct webhook_stats {
    uint64_t queued;    /* events accepted into the queue */
    uint64_t delivered; /* POSTs answered with 2xx */
    uint64_t retried;   /* failed attempts that were tried again */
    uint64_t failed;    /* events given up after the last retry */
    uint64_t dropped;   /* events pushed out of a full queue */
    uint64_t pending;   /* events waiting or in flight now */
};

/*
 * Creates the sender on `loop` for n hooks (copied). queue_cap ≥ 1 events at most,
 * `retries` further attempts, timeout_ms per attempt. DQ_ENOMEM, DQ_EINVAL (bad sizes),
 * DQ_ENET when libcurl cannot be initialised.
 */
int webhooks_create(uv_loop_t *loop, const struct dqd_webhook_config *hooks, int n, int queue_cap,
                    int retries, int64_t timeout_ms, struct webhooks **out);

/*
 * Queues `event` (bit DQD_EVENT_*, name e.g. "verdict") with its payload for every hook
 * subscribed to it. Takes the reference to payload (NULL is taken as null).
 */
void webhooks_emit(struct webhooks *w, unsigned event_bit, const char *event, json_t *payload);

/* Counters since creation. */
void webhooks_get_stats(const struct webhooks *w, struct webhook_stats *st);

/*
 * Abandons what is queued or in flight and closes every handle; `done(arg)` runs once
 * the last close callback has (then the struct is freed). NULL w calls done at once.
 */
void webhooks_close(struct webhooks *w, void (*done)(void *arg), void *arg);

#endif /* DQ_WEBHOOK_H */
