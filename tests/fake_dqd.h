/*
 * fake_dqd.h: what dqctl's subcommand tests share (tests/http/test_dqctl.c and
 * tests/dqctl_log/test_dqctl_log.c): output capture, running one subcommand with its
 * stdout/stderr captured, and a fake dqd, a controller/http/ server on its own loop in a
 * thread at an ephemeral loopback port. Each test brings its own request handler (the
 * routes and canned answers it needs) and records what it wants to check.
 *
 * Header-only with static functions on purpose: check.h keeps its counters per
 * translation unit, so the check made on the server thread must be compiled into the
 * test that counts it.
 */
#ifndef DQ_TESTS_FAKE_DQD_H
#define DQ_TESTS_FAKE_DQD_H

#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "check.h"
#include "dqctl_api.h"
#include "http.h"

/* Captures what a renderer writes. */
struct capture {
    char *buf;
    size_t len;
    FILE *f;
};

static void cap_open(struct capture *c) {
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
}

static const char *cap_text(struct capture *c) {
    fflush(c->f);
    return c->buf ? c->buf : "";
}

static void cap_close(struct capture *c) {
    fclose(c->f);
    free(c->buf);
}

/* Runs one subcommand with captured output; returns its exit code. */
struct run {
    struct capture out, err;
    int rc;
};

static int run_cmd(struct run *r, int (*fn)(int, char **), int argc, char **argv) {
    cap_open(&r->out);
    cap_open(&r->err);
    dqctl_api_set_output(r->out.f, r->err.f);
    r->rc = fn(argc, argv);
    dqctl_api_set_output(NULL, NULL);
    cap_text(&r->out);
    cap_text(&r->err);
    return r->rc;
}

static void run_free(struct run *r) {
    cap_close(&r->out);
    cap_close(&r->err);
}

/* The server and its thread; embedded in the test's own record of requests. */
struct fake_dqd {
    uv_loop_t loop;
    uv_async_t stop;
    uv_thread_t thread;
    uv_sem_t ready;
    struct http_server *srv;
    int port;
    http_handler_fn handler;
    void *ctx;
};

static void fake_dqd_on_stop(uv_async_t *a) {
    struct fake_dqd *d = a->data;
    http_server_close(d->srv, NULL, NULL);
    uv_close((uv_handle_t *)a, NULL);
}

static void fake_dqd_thread(void *arg) {
    struct fake_dqd *d = arg;
    uv_loop_init(&d->loop);
    uv_async_init(&d->loop, &d->stop, fake_dqd_on_stop);
    d->stop.data = d;
    http_server_create(&d->loop, NULL, d->handler, d->ctx, &d->srv);
    http_server_listen(d->srv, "127.0.0.1", 0);
    d->port = http_server_port(d->srv);
    uv_sem_post(&d->ready);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&d->loop), 0);
}

/* Starts the server thread answering with handler(ctx, …) and waits until it listens.
 * d must be zeroed. Returns the port (not positive when the server failed to listen). */
static int fake_dqd_start(struct fake_dqd *d, http_handler_fn handler, void *ctx) {
    d->handler = handler;
    d->ctx = ctx;
    uv_sem_init(&d->ready, 0);
    uv_thread_create(&d->thread, fake_dqd_thread, d);
    uv_sem_wait(&d->ready);
    uv_sem_destroy(&d->ready);
    return d->port;
}

/* Closes the server from its own loop and joins the thread. */
static void fake_dqd_stop(struct fake_dqd *d) {
    uv_async_send(&d->stop);
    uv_thread_join(&d->thread);
}

#endif /* DQ_TESTS_FAKE_DQD_H */
