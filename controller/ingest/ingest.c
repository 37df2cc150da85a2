/*
 * ingest.c: what every source does, through its struct ingest_ops (see ingest.h).
 */
#include "ingest.h"

#include <stdio.h>

int ingest_start(struct ingest_source *s) {
    return s->ops->start(s);
}

void ingest_close(struct ingest_source *s, void (*done)(void *arg), void *arg) {
    if (!s) {
        if (done) {
            done(arg);
        }
        return;
    }
    s->ops->close(s, done, arg);
}

const char *ingest_host(const struct ingest_source *s) {
    return s ? s->ops->host(s) : "";
}

int ingest_port(const struct ingest_source *s) {
    return s ? s->ops->port(s) : 0;
}

json_t *ingest_describe(const struct ingest_source *s) {
    char listen[DQD_HOSTPORT_MAX + 16];
    snprintf(listen, sizeof listen, "%s:%d", ingest_host(s), ingest_port(s));
    json_t *o = json_pack("{s:s,s:s}", "name", s->ops->name, "listen", listen);
    if (o) {
        s->ops->describe(s, o);
    }
    return o;
}

void ingest_metrics(const struct ingest_source *s, struct http_response *res) {
    s->ops->metrics(s, res);
}
