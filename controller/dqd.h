/*
 * dqd.h: the daemon as a library: create it on a libuv loop from its configuration
 * (settings.h), let the loop run, stop it. dqd_main.c is a thin shell around it; dqd.c
 * wires the modules of controller/ together (docs/architecture.md).
 */
#ifndef DQ_DQD_H
#define DQ_DQD_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "dq.h"
#include "settings.h"

#ifndef DQ_VERSION /* set by CMake from the project's version */
#define DQ_VERSION "unknown"
#endif
#define DQD_VERSION DQ_VERSION
#define DQD_MAX_PROBES 10000 /* probes one daemon tracks */
#define DQD_FD_RESERVE 64    /* descriptors kept for the store, stdio, listeners, webhooks */

struct dqd;

/*
 * Creates the daemon on `loop` from a configuration (copied): opens the store, loads the diagram,
 * reloads probes from the store and applies the configuration's probe settings, binds the ingest
 * and HTTP ports, starts the window timer and the outbound wrapper links. On failure everything
 * made so far is closed (the loop may need a run to finish closing) and a DQ_E* code returned with
 * dq_last_error() saying what failed ("cannot listen on 127.0.0.1:7400: address already in use").
 * The database is locked first (store_lock, DB.lock beside it): DQ_EBUSY, naming the other
 * process's pid, when another dqd runs on it, and nothing is touched. A database that the failed
 * start created is removed again, so a failed start leaves no empty database behind. The lock is
 * held until the shutdown has closed the store.
 */
int dqd_create(uv_loop_t *loop, const struct dqd_config *cfg, struct dqd **out);

/* The bound ports (useful with port 0). */
int dqd_ingest_port(const struct dqd *d);
int dqd_http_port(const struct dqd *d);
int dqd_otlp_port(const struct dqd *d); /* 0 without --otlp */

/*
 * Starts a clean shutdown: closes every handle; when the last close callback has run
 * the store is closed, the daemon freed and `done` called. The loop then ends by itself.
 */
void dqd_shutdown(struct dqd *d, void (*done)(void *arg), void *arg);

#endif /* DQ_DQD_H */
