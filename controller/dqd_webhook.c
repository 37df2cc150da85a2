/*
 * dqd_webhook.c: placeholder replaced by the webhook module (libcurl multi on the loop).
 */
#include "dqd_internal.h"

void dqd__webhook_emit(struct dqd *d, const char *event, json_t *payload) {
    (void)d;
    (void)event;
    json_decref(payload);
}
