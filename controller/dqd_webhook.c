/*
 * dqd_webhook.c: the daemon's side of webhooks: event names to the configured hooks.
 */
#include "dqd_internal.h"

#include <string.h>

void dqd__webhook_emit(struct dqd *d, const char *event, json_t *payload) {
    unsigned bit = strcmp(event, "trigger_fired") == 0     ? DQD_EVENT_TRIGGER_FIRED
                   : strcmp(event, "trigger_cleared") == 0 ? DQD_EVENT_TRIGGER_CLEARED
                                                           : DQD_EVENT_VERDICT;
    webhooks_emit(d->webhooks, bit, event, payload);
}
