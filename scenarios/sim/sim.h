/*
 * sim.h: the pure part of dqsim, a deterministic simulated system that dqd's end-to-end
 * tests observe through the wrapper protocol (docs/protocol.md).
 *
 * A struct sim_model is built from an outcome diagram (engine/diagram.h). Every outcome
 * (leaf) gets a nominal delay distribution, a shifted exponential whose mean is drawn
 * from a narrow band from the seed and the leaf's name, so the same seed gives the same
 * system whatever order the diagram is written in. sim_request() simulates one request
 * by walking the diagram: a sequence takes the sum of its components, all-to-finish the
 * maximum of its branches, first-to-finish the minimum of the branches that succeed,
 * a choice one branch drawn by weight. Each named node the request passes through yields
 * one outcome instance, child intervals inside the parent's. Faults (slow, erratic,
 * fail) change one node's behaviour at run time. A leaf may instead be served by a
 * *station* (FIFO queue, c servers, a service-time distribution, an optional capacity K):
 * then its instance covers the request's waiting and service there, and the station's
 * state carries over from request to request, so load shows (see "stations" below).
 *
 * struct sim_ctl is the wrapper's side of the protocol: which probes have a dMax, whether
 * instances are sent at all (start_stub/stop_stub), applying dqd's commands and writing
 * the ack, state and instance lines (an instance longer than its dMax is reported `to`
 * with END = START + dMax, as the real wrapper does).
 *
 * Nothing here does I/O, reads a clock or allocates after creation (stations allocate
 * when they are added, not when requests pass): dqsim's main adds the network, the wall
 * clock and the stdin commands.
 */
#ifndef DQ_SIM_H
#define DQ_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "diagram.h"

#define SIM_MAX_DEPTH 1000               /* nesting of the expanded request tree */
#define SIM_MAX_INSTANCES 100000         /* instances one request may yield */
#define SIM_DEFAULT_MEAN_LO_MS 1.0       /* default band of the leaves' mean delays */
#define SIM_DEFAULT_MEAN_HI_MS 3.0       /* … */
#define SIM_DEFAULT_SHIFT_FRAC 0.5       /* the fixed part of a leaf's delay, share of its mean */
#define SIM_STATE_MAX 1024               /* a state line is a protocol line: at most this long */
#define SIM_LINE_MAX (300 + 2 * 20 + 80) /* an instance line (name ≤ 255 bytes, ids) fits */

/* ---- PRNG: xoshiro256** seeded through splitmix64 ------------------------------------- */

struct sim_rng {
    uint64_t s[4];
};

/* Seeds the generator; every seed (0 included) gives a valid, distinct stream. */
void sim_rng_seed(struct sim_rng *r, uint64_t seed);

/* Next 64 random bits. */
uint64_t sim_rng_next(struct sim_rng *r);

/* Uniform in [0, 1) with 53 random bits. */
double sim_rng_uniform(struct sim_rng *r);

/* Exponential with the given mean (> 0); 0 when mean ≤ 0. */
double sim_rng_exp(struct sim_rng *r, double mean);

/* ---- model ----------------------------------------------------------------------------- */

enum sim_fault_kind {
    SIM_FAULT_NONE = 0,
    SIM_FAULT_SLOW,    /* value: ms added to every pass through the node */
    SIM_FAULT_ERRATIC, /* leaves only; value ≥ 1: the random part's std dev × value, mean kept */
    SIM_FAULT_FAIL     /* value in [0, 1]: probability that a pass fails */
};

struct sim_options {
    uint64_t seed;     /* leaf parameters and nothing else */
    double mean_lo_ms; /* leaves' means are uniform in [mean_lo_ms, mean_hi_ms] */
    double mean_hi_ms; /* … (both > 0, lo ≤ hi) */
    double shift_frac; /* fixed share of a leaf's delay, in [0, 1) */
    double time_scale; /* model ms × time_scale = reported ms (> 0; 1 normally) */
};

/* The defaults above, seed 1, time scale 1. */
void sim_options_default(struct sim_options *o);

/* What one named node does; read with sim_model_node(). */
struct sim_node_info {
    const char *name;          /* probe name, NULL for anonymous nodes */
    enum dq_node_kind kind;    /* as in the diagram */
    double mean_ms;            /* leaves: nominal mean delay (model ms); 0 otherwise */
    double shift_ms;           /* leaves: the fixed part of the delay */
    enum sim_fault_kind fault; /* the fault in force, SIM_FAULT_NONE when none */
    double fault_value;        /* its value */
    int station;               /* leaves: the station serving it (index), −1 when none */
};

struct sim_model;

/*
 * Builds a model of `d` (which must outlive it). DQ_EINVAL for bad options; DQ_ERANGE
 * when a request would be nested deeper than SIM_MAX_DEPTH or yield more than
 * SIM_MAX_INSTANCES instances (references reused exponentially); DQ_ENOMEM.
 */
int sim_model_create(const struct dq_diagram *d, const struct sim_options *opt,
                     struct sim_model **out);

/* Releases the model; NULL is a no-op. */
void sim_model_destroy(struct sim_model *m);

/* The diagram the model was built from. */
const struct dq_diagram *sim_model_diagram(const struct sim_model *m);

/* Node the requests start at: the diagram's last root (`system` when there is one). */
int sim_model_root(const struct sim_model *m);

/* Picks another start node (a named node index); DQ_EINVAL when out of range. */
int sim_model_set_root(struct sim_model *m, int node);

/* Most instances one request can yield: the size sim_request()'s buffer needs. */
size_t sim_model_max_instances(const struct sim_model *m);

/* Fills *info for node i; DQ_EINVAL when i is out of range. */
int sim_model_node(const struct sim_model *m, int i, struct sim_node_info *info);

/*
 * Sets a fault on the named node `name`: slow (value ≥ 0 ms; on an inner node the time
 * is added after its children, as own processing), erratic (leaves only, value ≥ 1),
 * fail (value in [0, 1]; an inner node fails after its children). Replaces any fault
 * the node had. DQ_ENOTFOUND for an unknown name, DQ_EINVAL for a bad kind or value.
 * On a station leaf: slow adds to the service time (the server is held longer), fail
 * fails the pass after its service (it queued and held a server like any other),
 * erratic makes the exponential part of the service time a two-phase mixture as on a
 * plain leaf (same mean, standard deviation × value) and is refused (DQ_EINVAL) for a
 * station whose service time has no exponential part (uniform, const).
 */
int sim_fault_set(struct sim_model *m, const char *name, enum sim_fault_kind kind, double value);

/* Removes the fault of node `name` (DQ_ENOTFOUND when unknown; no fault is fine). */
int sim_fault_clear(struct sim_model *m, const char *name);

/* Removes every fault. */
void sim_fault_clear_all(struct sim_model *m);

/*
 * Parses a fault kind "slow" / "erratic" / "fail" (n bytes) into *kind; −1 otherwise.
 * sim_fault_name() is the reverse ("none" for SIM_FAULT_NONE).
 */
int sim_fault_parse_kind(const char *s, size_t n, enum sim_fault_kind *kind);
const char *sim_fault_name(enum sim_fault_kind kind);

/* One outcome instance of a request: times in ns from the request's start. */
struct sim_instance {
    int node;         /* named node index (its probe) */
    int64_t begin_ns; /* ≥ 0 */
    int64_t end_ns;   /* ≥ begin_ns */
    int64_t wait_ns;  /* station leaves: time queued before service (end − begin − wait is
                       * the service time); 0 otherwise, and for a request turned away */
    int failed;       /* 1 when the pass failed (reported `fa`), or the station was full */
};

/* What one request did. */
struct sim_result {
    size_t count;   /* instances written */
    int64_t end_ns; /* the root's end: the request's duration */
    int failed;     /* 1 when the root failed */
};

/*
 * Simulates one request that arrives at at_ns (ns on the stations' time line, e.g. since
 * the epoch), drawing one number from `rng` to seed the request's own generator (so
 * requests do not depend on how much earlier ones drew), and writes its instances to out
 * (children before their parent; cap ≥ sim_model_max_instances() always suffices), times
 * relative to at_ns. Losing branches of a first-to-finish are cancelled when the winner
 * ends: their instances that would end later are not reported. Station leaves queue at
 * their stations (below), so with stations requests must come in the order of their
 * arrival: an at_ns earlier than the previous call's is DQ_EINVAL (nothing simulated).
 * Returns DQ_OK, or DQ_EFULL (nothing useful in out; the stations the walk reached have
 * taken the request) when cap is too small.
 */
int sim_request(struct sim_model *m, struct sim_rng *rng, int64_t at_ns, struct sim_instance *out,
                size_t cap, struct sim_result *res);

/* ---- stations --------------------------------------------------------------------------
 *
 * A station is a FIFO queue in front of `servers` identical servers, with a service-time
 * distribution and a capacity K (the most requests in the station, waiting and in
 * service; 0 = no limit short of SIM_STATION_MAX_K). One or more leaves are bound to it
 * (several leaves: a shared resource). A request whose walk reaches a bound leaf at
 * absolute time a (its arrival at the station) is handled there and then:
 *
 *  - when K requests are in the station at a, it is turned away: the pass fails at once
 *    (instance [a, a], `fa`, counted as rejected) and draws no server;
 *  - else it takes the server that frees first (the lowest index among ties), starts at
 *    s = max(a, that server's free time), holds it for a drawn service time S (plus a
 *    slow fault) and leaves at e = s + S. The leaf's instance is [a, e]: its sojourn,
 *    wait_ns = s − a. A fail fault fails the pass at e.
 *
 * Order. Requests are simulated one at a time, in the order of their root arrival, each
 * walked to its end before the next, so a station takes its requests in that order and
 * serves them first come, first served in that order. That is the FIFO queue exactly
 * (for one server, Lindley's recursion W(n+1) = max(0, W(n) + S(n) − A(n+1))) whenever
 * requests reach the station in the order they reached the root: a station that a
 * request reaches first (after no delay, or only after constant ones), or one behind a
 * tandem of single-server stations (a FIFO single server lets requests out in the order
 * they came). It is approximate when requests can overtake each other on the way there:
 * behind a station with several servers, behind a plain leaf (a random delay), or inside
 * an all- or first-to-finish whose branches differ. Then a request that reaches the
 * station earlier but was simulated later still queues behind the ones simulated before
 * it (never in front), and the count checked against K includes those ahead of it in
 * that order that reach the station after it. A first-to-finish's losers are cancelled
 * in the instances only: the station work they were given is not taken back.
 *
 * Accounting is exact in the stations' time: a service period [s, e) counts as busy
 * server-time, split at any instant, and sim_station_stats() reports the busy time up
 * to t, the services completed by t, and the requests in the station at t, once the
 * requests that arrive before t have all been simulated (a request simulated later
 * changes nothing before its own arrival).
 */

#define SIM_STATION_MAX_SERVERS 1024
#define SIM_STATION_MAX_K 65536     /* largest K; K = 0 (no limit) stops at this many */
#define SIM_STATION_SLACK 4096      /* bookkeeping beyond K: see sim_station_stats.overflow */
#define SIM_STATION_MAX_LEAVES 16   /* leaves in one --station spec */
#define SIM_STATION_MAX_MS 10000000 /* largest service-time parameter, model ms */

enum sim_dist_kind {
    SIM_DIST_EXP = 1, /* exp:MEAN            exponential with mean p1 (> 0) */
    SIM_DIST_UNIFORM, /* uniform:LO:HI       uniform on [p1, p2], 0 ≤ p1 ≤ p2, p2 > 0 */
    SIM_DIST_CONST,   /* const:MS            always p1 (> 0) */
    SIM_DIST_SHEXP    /* shexp:SHIFT:MEAN    p1 + exponential with mean p2 − p1, 0 ≤ p1 < p2 */
};

/* A service-time distribution in model ms (times --time-scale, like every delay). */
struct sim_dist {
    enum sim_dist_kind kind;
    double p1, p2; /* as above; p2 = 0 for exp and const */
};

/*
 * Parses n bytes "exp:MEAN", "uniform:LO:HI", "const:MS" or "shexp:SHIFT:MEAN" (decimal
 * ms, each at most SIM_STATION_MAX_MS) into *d. DQ_EINVAL with dq_last_error() saying
 * what is wrong.
 */
int sim_dist_parse(const char *s, size_t n, struct sim_dist *d);

/* The distribution's mean in model ms. */
double sim_dist_mean(const struct sim_dist *d);

/* Writes the distribution as sim_dist_parse() reads it (%g numbers); snprintf's result. */
int sim_dist_format(const struct sim_dist *d, char *buf, size_t cap);

/* A station to add, as `--station` gives it: LEAF[,LEAF…][=NAME]:SERVERS:DIST[:K=N]. */
struct sim_station_spec {
    char name[DQ_DIAGRAM_MAX_NAME + 1]; /* the station's name; the first leaf's by default */
    size_t n_leaves;                    /* 1 … SIM_STATION_MAX_LEAVES */
    char leaves[SIM_STATION_MAX_LEAVES][DQ_DIAGRAM_MAX_NAME + 1];
    int servers;          /* 1 … SIM_STATION_MAX_SERVERS */
    struct sim_dist dist; /* the service time */
    uint32_t capacity;    /* K: 0 (no limit) or 1 … SIM_STATION_MAX_K */
};

/*
 * Parses a `--station` spec "LEAF[,LEAF…][=NAME]:SERVERS:DIST[:K=N]" (e.g.
 * "worker_1:1:exp:4:K=50", "db_read,db_write=db:4:shexp:0.5:2") into *spec. Names must
 * be valid probe names, none twice. DQ_EINVAL with a message; whether the leaves exist
 * is sim_station_add()'s call.
 */
int sim_station_spec_parse(const char *spec, struct sim_station_spec *out);

/*
 * Adds a station to the model and binds its leaves; returns the station's index (≥ 0,
 * in the order added). DQ_ENOTFOUND for a leaf the diagram does not have; DQ_EINVAL for
 * a bad spec, a name that is no outcome (leaf), a leaf already bound, a station name
 * already used, or an erratic fault on a leaf that the distribution cannot carry;
 * DQ_ENOMEM. On error nothing changes. Allocates: call it before requests run.
 */
int sim_station_add(struct sim_model *m, const struct sim_station_spec *spec);

/* Number of stations. */
size_t sim_model_station_count(const struct sim_model *m);

/* Index of the station called name, or DQ_ENOTFOUND. */
int sim_model_find_station(const struct sim_model *m, const char *name);

/* A station's definition. */
struct sim_station_info {
    const char *name;
    int servers;
    struct sim_dist dist;
    uint32_t capacity; /* K; 0 = no limit (SIM_STATION_MAX_K) */
    size_t n_leaves;   /* leaves bound to it */
};

/* Fills *info for station k; DQ_EINVAL when k is out of range. */
int sim_station_info(const struct sim_model *m, int k, struct sim_station_info *info);

/* A station's counters at one instant t (ns on the stations' time line). */
struct sim_station_stats {
    int64_t t_ns;        /* the instant */
    int servers;         /* c */
    int64_t busy_ns;     /* busy server-time before t since the start (or the last reset) */
    uint64_t served;     /* services completed by t */
    uint64_t rejected;   /* requests turned away (full) so far, as simulated: a rejection
                          * at a station deep in a request can lie a little after t */
    uint64_t in_station; /* requests in the station at t, waiting or in service */
    uint64_t overflow;   /* of rejected: turned away because more than K +
                          * SIM_STATION_SLACK requests were in or bound for the station
                          * (only in odd diagrams; 0 normally) */
};

/*
 * Fills *st for station k at instant t_ns. Exact (integer ns) once every request that
 * arrives before t_ns has been simulated (the caller's part: requests simulated later
 * arrive at t_ns or after; dqsim simulates the arrivals up to now, then asks at now).
 * DQ_EINVAL when k is out of range or t_ns is earlier than the arrival of the last
 * request simulated. Costs one pass over the requests in or bound for the station.
 */
int sim_station_stats(const struct sim_model *m, int k, int64_t t_ns, struct sim_station_stats *st);

/*
 * Utilisation over [from->t_ns, to->t_ns) of one station's two snapshots: busy
 * server-time inside the interval / (servers × length); 0 for an empty interval.
 * Service periods that straddle a boundary count with their part inside, so the
 * busy times of adjacent intervals add up exactly.
 */
double sim_station_utilisation(const struct sim_station_stats *from,
                               const struct sim_station_stats *to);

/* Empties every station (no request in them, counters 0, servers free) and forgets the
 * last arrival time, as after sim_model_create(): a fresh run on the same model. */
void sim_stations_reset(struct sim_model *m);

/* ---- the wrapper's side of the protocol ----------------------------------------------- */

struct sim_ctl {
    const struct sim_model *m;
    double *dmax_ms; /* per node index: dMax in ms, 0 when the probe is not enabled */
    int running;     /* 1 after start_stub (and at creation), 0 after stop_stub */
};

/* Sets up a controller for m with no probe enabled and running = 1. DQ_ENOMEM. */
int sim_ctl_init(struct sim_ctl *c, const struct sim_model *m);

/* Frees what sim_ctl_init allocated; safe on a zeroed or released struct. */
void sim_ctl_release(struct sim_ctl *c);

/* Enables probe `name` with dMax ms (> 0), or disables it with ms = 0. DQ_ENOTFOUND
 * for a name that is no named node, DQ_EINVAL for a bad ms. */
int sim_ctl_set(struct sim_ctl *c, const char *name, size_t n, double ms);

/*
 * Applies `--enable` text: "NAME[=MS],NAME[=MS]…"; a NAME without MS gets default_ms; the
 * NAME `*` stands for every probe. DQ_EINVAL (with dq_last_error() saying which item)
 * for a malformed list or bad MS, DQ_ENOTFOUND for an unknown probe.
 */
int sim_ctl_enable_list(struct sim_ctl *c, const char *list, double default_ms);

/* Number of probes with a dMax. */
size_t sim_ctl_enabled_count(const struct sim_ctl *c);

/*
 * Applies one dqd → wrapper command line (without '\n') and writes the reply into
 * reply (cap ≥ SIM_STATE_MAX + WIRE_CMD_MAX + 8 is always enough): `ack;LINE\n`, and
 * for `sync` the state line after it. A set_timeout or clear_timeout for a name the
 * diagram does not have is acknowledged and ignored (a real wrapper keeps it, but
 * nothing here would ever report it). Returns the reply's length (> 0), or −1 for a line
 * that is no command (nothing written: not applied, not acknowledged).
 */
int sim_ctl_apply(struct sim_ctl *c, const char *line, size_t len, char *reply, size_t cap);

/*
 * Writes `state;running:R;probes:NAME=MS,…\n` (probes in node order, MS as a decimal
 * without trailing zeros). The whole line stays within SIM_STATE_MAX bytes: probes that
 * would not fit are left out. Returns the length, or DQ_EFULL when cap < SIM_STATE_MAX+1.
 */
int sim_ctl_state(const struct sim_ctl *c, char *buf, size_t cap);

/*
 * 1 when an instance of node i would be sent now: running and node i has a dMax.
 */
int sim_ctl_reports(const struct sim_ctl *c, int node);

/*
 * Writes one instance line `n:NAME;b:START;e:END;s:STATUS\n` for node `node` with
 * absolute times (ns since the epoch): s:to with END = START + dMax when END − START
 * exceeds node's dMax (the timeout wins over a failure), else s:fa when failed, else
 * s:ok. With request > 0 the line also says which request it was (v2 trailing fields):
 * `;i:ID;t:TRACE;a:request=N`, TRACE 16 hex digits of a hash of N (one per request), ID
 * TRACE's hash with the node. Returns the length, 0 when the node has no dMax (nothing to
 * send), or DQ_EFULL when cap is too small (SIM_LINE_MAX always suffices).
 */
int sim_ctl_format_instance(const struct sim_ctl *c, int node, int64_t start_ns, int64_t end_ns,
                            int failed, uint64_t request, char *buf, size_t cap);

/* ---- operator commands (dqsim's stdin and --fault) ------------------------------------- */

enum sim_user_kind {
    SIM_USER_FAULT,      /* fault NAME slow|erratic|fail VALUE */
    SIM_USER_CLEAR,      /* clear NAME */
    SIM_USER_CLEAR_ALL,  /* clear all */
    SIM_USER_RATE,       /* rate N (requests per second, 0 … SIM_MAX_RATE) */
    SIM_USER_STATUS,     /* status */
    SIM_USER_QUIT,       /* quit */
    SIM_USER_RUN,        /* run SECONDS: --clock sim --hold: advance, then hold again */
    SIM_USER_STATIONS,   /* stations: one line per station */
    SIM_USER_DISCONNECT, /* disconnect: close the data connection, stay away */
    SIM_USER_RECONNECT,  /* reconnect: connect again after disconnect */
    SIM_USER_MUTE,       /* mute: stay connected, withhold instance lines */
    SIM_USER_UNMUTE      /* unmute */
};

#define SIM_MAX_RATE 100000.0

struct sim_user_cmd {
    enum sim_user_kind kind;
    char name[DQ_DIAGRAM_MAX_NAME + 1]; /* FAULT, CLEAR */
    enum sim_fault_kind fault;          /* FAULT */
    double value; /* FAULT: ms, factor or probability; RATE: N; RUN: seconds */
};

/*
 * Parses one operator line (words separated by spaces or tabs; a final '\r' ignored).
 * Returns 0, or DQ_EINVAL with dq_last_error() saying what is wrong. The fault's value
 * is checked for its kind's range here; whether NAME exists is sim_fault_set()'s call.
 */
int sim_user_parse(const char *line, size_t len, struct sim_user_cmd *cmd);

/* Parses a `--fault` spec NAME:KIND:VALUE into a SIM_USER_FAULT command; DQ_EINVAL. */
int sim_fault_spec_parse(const char *spec, struct sim_user_cmd *cmd);

#endif /* DQ_SIM_H */
