/*
 * dqsim.h: what the two files of the dqsim program share (private to scenarios/sim):
 * the running program's state (struct app, its links to dqd, the pending instances) in
 * dqsim_main.c, and the command line that fills it in dqsim_args.c.
 */
#ifndef DQSIM_H
#define DQSIM_H

#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "sim.h"
#include "wire.h"

#define MAX_FAULTS 32
#define MAX_STATIONS 64
#define HEAP_CAP (1u << 21)        /* pending instances held at most */
#define OUT_CAP (1u << 20)         /* bytes of one batch write */
#define WRITE_QUEUE_CAP (8u << 20) /* bytes queued in the socket before dropping */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define PING_MS 5000
#define DEFAULT_ENABLE_MS 1000.0
#define DRY_RUN_EPOCH_NS 1767225600000000000LL /* 2026-01-01T00:00:00Z */
#define STDIN_LINE_MAX 1024

struct pending {
    int64_t due;   /* wall-clock ns at which the wrapper would know the outcome */
    int64_t begin; /* absolute ns */
    int64_t end;
    int node;
    int failed;
    uint64_t request; /* with --trace-ids: the request's number (1, 2, …); else 0 */
};

struct write_req {
    uv_write_t req;
    char data[];
};

struct app;

/* A connection to dqd's ingest port: the data link (hello, state, instances, commands),
 * and with --clock-link a second one that carries the clock exchange while the data
 * link is down. */
struct link {
    struct app *app;
    int is_clock;     /* the --clock-link connection */
    const char *what; /* prefix of its events: "" or "clock-link " */
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    int tcp_open;  /* the handle is initialized (connecting or connected) */
    int connected; /* hello sent, reading commands */
    int kept_down; /* data link: `disconnect` said so; no reconnection until `reconnect` */
    uv_timer_t retry;
    uint64_t backoff_ms;
    uint64_t connects;
    struct wire_splitter split;
    char splitbuf[4096];
    char readbuf[8192];
    uint64_t last_tx_ms;
};

struct app {
    uv_loop_t *loop;
    struct dq_diagram *diagram;
    struct sim_model *model;
    struct sim_ctl ctl;
    struct sim_rng arrivals;
    struct sim_rng service;
    double rate;
    int64_t next_arrival;
    struct sim_instance *scratch;
    size_t scratch_cap;
    struct sim_station_spec stations[MAX_STATIONS]; /* --station, added after the model */
    size_t n_stations;
    struct sim_station_stats *station_mark; /* per station: the last `stations` snapshot */

    struct pending *heap;
    size_t heap_n;

    /* links to dqd */
    char host[256];
    char port[16];
    char node_label[WIRE_MAX_LABEL + 1];
    char app_label[WIRE_MAX_LABEL + 1];
    struct link data;
    struct link clk; /* --clock-link */
    int clock_link;  /* --clock-link given */
    int muted;       /* `mute`: instance lines withheld (counted as dropped) */
    uv_shutdown_t shutdown_req;
    int shutting; /* quitting: the last writes drain before the socket closes */

    char *out;
    size_t out_len;

    /* stdin */
    union {
        uv_pipe_t pipe;
        uv_tty_t tty;
    } in;
    int in_open;
    char inbuf[STDIN_LINE_MAX + 1];
    size_t in_len;
    int in_discard;
    char in_readbuf[4096];

    uv_timer_t tick;
    uv_timer_t stop_timer;
    uv_timer_t fault_timer;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sigpipe;

    /* options */
    double batch_ms;
    double duration_s;
    double fault_after_s;
    double fault_for_s;
    struct sim_user_cmd faults[MAX_FAULTS];
    size_t n_faults;
    int faults_on;

    int quitting;
    const char *quit_reason;
    int exit_code;

    /* --clock sim */
    int sim_clock;          /* 1: time is simulated, stepped in lockstep with dqd */
    int64_t sim_now;        /* the simulated time, ns since the epoch */
    int64_t sim_start;      /* sim_now when the run started */
    int64_t tick_wait;      /* the `clock;NS` sent and not answered yet, 0 when none */
    struct link *tick_link; /* the link that carried it */
    int hold;               /* --hold: advance only on `run S` from stdin */
    int trace_ids;          /* --trace-ids: instances say their request (i:, t:, a:) */
    int64_t start_at_ns;    /* --start-at: where simulated time starts (0: now) */
    int64_t hold_until;     /* --hold: the simulated time the last `run` reaches */
    int held;               /* the `held at` event was printed for hold_until */
    uint64_t sim_steps;     /* steps answered by dqd */

    /* counters */
    uint64_t requests;
    uint64_t requests_failed;
    /* the evidence a fault gave (`status`): the root's largest successful duration before
     * the first fault, and how many root durations since lay beyond it, and beyond twice it */
    int64_t root_max_ns;
    uint64_t beyond_max, beyond_twice;
    int fault_seen;
    uint64_t sent;
    uint64_t sent_to;
    uint64_t sent_fa;
    uint64_t dropped;         /* instances lost: link down, queue or heap full */
    uint64_t drop_unreported; /* dropped since the last `drop;N` line */
    uint64_t commands;
};

/* The options that choose what dqsim does (the others go straight into struct app). */
struct cli {
    const char *diagram;
    const char *dqd;
    const char *enable;
    const char *root;
    struct sim_options opt;
    int list;
    double dry_run;
};

/* The command line's help, on f. */
void dqsim_usage(FILE *f);

/*
 * Parses argv into cli and the options of a (which the caller set to their defaults):
 * returns 0, 1 for --help, or -1 on an error (the message printed on stderr). Checks what
 * goes together (--diagram always, --dqd unless --list or --dry-run, --clock-link only
 * with --clock sim) and splits --dqd HOST:PORT into a->host and a->port.
 */
int dqsim_parse_args(int argc, char **argv, struct cli *cli, struct app *a);

#endif /* DQSIM_H */
