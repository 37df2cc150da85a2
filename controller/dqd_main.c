/*
 * dqd_main.c: the dqd program: settings from the command line and config file, one
 * libuv loop, a clean shutdown on SIGINT/SIGTERM.
 */
#include "dqd.h"

#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <string.h>

#include "log.h"

struct main_state {
    struct dqd *d;
    uv_signal_t sigint, sigterm;
    int signals_open;
};

static void on_closed(void *arg) {
    struct main_state *m = arg;
    m->d = NULL;
    LOG(LOG_INFO, "dqd stopped cleanly");
}

static void on_signal(uv_signal_t *h, int signum) {
    struct main_state *m = h->data;
    LOG(LOG_INFO, "%s: shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
    if (m->signals_open) {
        m->signals_open = 0;
        uv_close((uv_handle_t *)&m->sigint, NULL);
        uv_close((uv_handle_t *)&m->sigterm, NULL);
    }
    if (m->d) {
        dqd_shutdown(m->d, on_closed, m);
    }
}

/* Writes msg on one line: a control character a config's key or value brought in (a
 * newline would start a line of its own) as \n, \r, \t or \xNN. */
static void print_one_line(FILE *f, const char *msg) {
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
        if (*c == '\n' || *c == '\r' || *c == '\t') {
            fprintf(f, "\\%c", *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't');
        } else if (*c < 0x20 || *c == 0x7f) {
            fprintf(f, "\\x%02x", *c);
        } else {
            fputc(*c, f);
        }
    }
}

int main(int argc, char **argv) {
#ifdef __GLIBC__
    /* Large transient buffers (a /metrics answer of 17 MB with 10,000 probes) are mapped
     * and unmapped on their own: glibc's default threshold rises with every such buffer
     * freed, after which they come from the heap, whose top is rarely given back. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    static struct dqd_config cfg;
    enum settings_action action;
    if (settings_parse_args(&cfg, argc, argv, &action) != DQ_OK) {
        fputs("dqd: ", stderr);
        print_one_line(stderr, dq_last_error());
        fputs("\n(see dqd --help)\n", stderr);
        return 2;
    }
    switch (action) {
    case SETTINGS_HELP:
        settings_print_help(stdout, argv[0]);
        return 0;
    case SETTINGS_VERSION:
        printf("dqd %s\n", DQD_VERSION);
        return 0;
    case SETTINGS_PRINT_CONFIG:
        return settings_write_json(&cfg, stdout) == DQ_OK ? 0 : 1;
    case SETTINGS_RUN:
        break;
    }
    log_current_level = cfg.log_level;
    int token_warning = 0;
    if (settings_resolve_token(&cfg, &token_warning) != DQ_OK) {
        fprintf(stderr, "dqd: %s\n", dq_last_error());
        return 2;
    }
    if (token_warning) {
        LOG(LOG_WARN, "api_token: %s is readable by other users (chmod 600 it)", cfg.api_token);
    }
    signal(SIGPIPE, SIG_IGN);

    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "dqd: cannot create the event loop\n");
        return 1;
    }
    struct main_state m = {0};
    int rc = dqd_create(&loop, &cfg, &m.d);
    if (rc != DQ_OK) {
        fprintf(stderr, "dqd: %s\n", dq_last_error());
        uv_run(&loop, UV_RUN_DEFAULT); /* let the partial start finish closing */
        uv_loop_close(&loop);
        return rc == DQ_EBUSY ? 2 : 1; /* 2: another dqd has the database, as for bad flags */
    }
    uv_signal_init(&loop, &m.sigint);
    uv_signal_init(&loop, &m.sigterm);
    m.sigint.data = m.sigterm.data = &m;
    uv_signal_start(&m.sigint, on_signal, SIGINT);
    uv_signal_start(&m.sigterm, on_signal, SIGTERM);
    m.signals_open = 1;
    /* One machine-readable line for scripts and tests that start dqd on port 0. */
    if (dqd_otlp_port(m.d)) {
        printf("dqd ready ingest=%d http=%d otlp=%d\n", dqd_ingest_port(m.d), dqd_http_port(m.d),
               dqd_otlp_port(m.d));
    } else {
        printf("dqd ready ingest=%d http=%d\n", dqd_ingest_port(m.d), dqd_http_port(m.d));
    }
    fflush(stdout);

    uv_run(&loop, UV_RUN_DEFAULT);
    rc = uv_loop_close(&loop);
    if (rc != 0) {
        LOG(LOG_WARN, "event loop closed with handles still open: %s", uv_strerror(rc));
        return 1;
    }
    return 0;
}
