/*
 * test_adapt.c: replay tests of the adaptive loop (controller/adapt/) with a manual
 * clock, a real store file, the real core and a fake wrapper that carries the core's
 * commands. Each case file (cases/NAME.case, format in README.md) gives a diagram, probe
 * settings and triggers, the instances every probe reports per window, and actions at
 * given windows (diagnose, restart, a locked or refusing store); the harness runs the
 * windows, writes a transcript of what the loop did (hypotheses, commands, events,
 * failed rounds, the enabled sets at the end) and compares it with the case's `expect`
 * block, line for line.
 *
 * Instances, never statistics: a case says "b: 100 ok uniform 3 4" and the harness
 * reports 100 durations spread over the quantiles of that distribution, each as one
 * instance with its start and end, only while the fake wrapper has b enabled (as a real
 * wrapper would), with durations past the wrapper's dMax reported as timed out. So every
 * share, interval and verdict comes from the attribution code running for real.
 *
 * Usage: test_adapt [--print] CASE_OR_DIR...   (--print: show each transcript)
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapt.h"
#include "dq_search.h"
#include "clock.h"
#include "core.h"
#include "dq_error.h"
#include "log.h"
#include "store.h"

#define MAX_LINES 4096
#define MAX_SPECS 256
#define MAX_ACTIONS 64
#define MAX_CFG 64
#define MAX_WRAPPER 256
#define T0_S 1800000000LL /* 2027-01-15: the first window starts here */

enum dist { D_CONST, D_UNIFORM, D_EXP, D_MIX, D_SUM, D_MAX, D_MIN, D_PICK };
#define MAX_PARTS 8

/* What a probe reports in every window from `from` on (until a later spec replaces it). */
struct spec {
    int64_t from;
    char probe[PROBES_NAME_MAX + 1];
    int group; /* specs of one `at` block for one probe replace the probe's earlier ones */
    int n;
    enum probe_status status;
    enum dist dist;
    double a, b, c; /* ms (mix: a = fraction at b ms, the rest at c ms) */
    int none;       /* "PROBE none": stops the probe's traffic */
    /* sum / max / min: each instance combines one ok duration of each part, drawn in a
     * different order per part (a sequence, an all- or a first-to-finish of them) */
    char parts[MAX_PARTS][PROBES_NAME_MAX + 1];
    int n_parts;
    /* `levels L1,L2,…`: window w's durations × L[w mod count] (a load that moves from
     * window to window: instances of one window are correlated) */
    double levels[16];
    int n_levels;
    int node; /* `node NAME`: the wrapper node it comes from (index in case_def.nodes) */
};

enum action_kind {
    A_DIAGNOSE,
    A_RESTART,
    A_LOCK,
    A_REFUSE,
    A_TRIGGER_OFF,
    A_ABORT,
    A_DISCONNECT,
    A_RECONNECT
};

struct action {
    int64_t at;
    enum action_kind kind;
    char arg[PROBES_NAME_MAX + 1];
    char arg2[32];
    int n;
};

struct probe_cfg {
    char name[PROBES_NAME_MAX + 1];
    int enable;
    double dmax_ms;
    int bins;
    int has_qta;
    struct dq_qta qta;
    int servers;
};

struct trigger_cfg {
    char probe[PROBES_NAME_MAX + 1];
    char kind[16];
    double threshold;
    int fire, clear;
};

struct case_def {
    char path[1024];
    char *diagram;
    size_t diagram_len;
    int64_t window_ms, lag_ms;
    int ring, legacy;
    int auto_range;    /* `set auto_range 1`: probes without a dMax of their own auto-range */
    int show_reasons;  /* `show reasons`: each verdict's sentence in the transcript */
    char nodes[8][64]; /* wrapper nodes the traffic names; nodes[0] is the default */
    int n_nodes;
    struct adapt_options opt;
    struct search_params search; /* opt.search points here */
    struct probe_cfg probes[MAX_CFG];
    int n_probes;
    struct trigger_cfg triggers[MAX_CFG];
    int n_triggers;
    struct spec specs[MAX_SPECS];
    int n_specs;
    struct action actions[MAX_ACTIONS];
    int n_actions;
    int64_t run;
    char *expect[MAX_LINES];
    int n_expect;
};

/* The fake wrapper: the probes it has a dMax for, as the commands it was sent say. */
struct wrapper {
    char names[MAX_WRAPPER][PROBES_NAME_MAX + 1];
    double dmax[MAX_WRAPPER];
    int n;
    int running;
    int gone;   /* `disconnect`: the link is closed, nothing is sent until `reconnect` */
    int legacy; /* no clear_timeout, no acks */
};

struct run {
    struct case_def *c;
    char db[1100];
    struct clock clock;
    struct clock_manual manual;
    struct store *store, *locker;
    struct core *core;
    struct adapt *adapt;
    struct wrapper w;
    uint32_t origin[8]; /* the fake wrapper's connection per node, as the core knows it */
    int64_t w0, cur;    /* first window, and the window being run (relative) */
    int lock_left;
    char *lines[MAX_LINES];
    int n_lines;
    int64_t hyp_seen;   /* highest hypothesis id already written */
    int64_t range_seen; /* highest auto_range event id already written */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (!d) {
        die("out of memory");
    }
    memcpy(d, s, n + 1);
    return d;
}

static void say(struct run *r, const char *fmt, ...) {
    char buf[4096];
    int off = snprintf(buf, sizeof buf, "w%" PRId64 " ", r->cur);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
    va_end(ap);
    if (r->n_lines < MAX_LINES) {
        r->lines[r->n_lines++] = dup_str(buf);
    }
}

/* Splits s in place into words; returns their number. */
static int words(char *s, char **w, int cap) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t\r\n", &save); t && n < cap;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        w[n++] = t;
    }
    return n;
}

static double num(const char *s, const char *path, int line) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno) {
        die("%s:%d: \"%s\" is not a number", path, line, s);
    }
    return v;
}

/* ---- the case file ----------------------------------------------------------------------------
 */

static void parse_qta(struct probe_cfg *p, const char *text, const char *path, int line) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *pt = strtok_r(buf, ",", &save); pt; pt = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(pt, ':');
        if (!colon || p->qta.n >= DQ_QTA_MAX_POINTS) {
            die("%s:%d: qta points are P:T_MS,...", path, line);
        }
        *colon = '\0';
        p->qta.p[p->qta.n] = num(pt, path, line);
        p->qta.t[p->qta.n] = num(colon + 1, path, line) / 1000.0;
        p->qta.n++;
    }
    p->qta.max_lost = 1.0 - p->qta.p[p->qta.n - 1];
    p->has_qta = 1;
}

static void parse_probe(struct case_def *c, char **w, int n, int line) {
    if (c->n_probes >= MAX_CFG) {
        die("%s:%d: too many probes", c->path, line);
    }
    struct probe_cfg *p = &c->probes[c->n_probes++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", w[1]);
    p->enable = -1;
    for (int i = 2; i < n; i++) {
        if (strcmp(w[i], "enable") == 0) {
            p->enable = 1;
        } else if (strcmp(w[i], "dmax") == 0 && i + 1 < n) {
            p->dmax_ms = num(w[++i], c->path, line);
        } else if (strcmp(w[i], "bins") == 0 && i + 1 < n) {
            p->bins = (int)num(w[++i], c->path, line);
        } else if (strcmp(w[i], "qta") == 0 && i + 1 < n) {
            parse_qta(p, w[++i], c->path, line);
        } else if (strcmp(w[i], "servers") == 0 && i + 1 < n) {
            p->servers = (int)num(w[++i], c->path, line);
        } else if (strcmp(w[i], "max_lost") == 0 && i + 1 < n) {
            p->qta.max_lost = num(w[++i], c->path, line);
        } else {
            die("%s:%d: probe: unknown word \"%s\"", c->path, line, w[i]);
        }
    }
}

static void parse_trigger(struct case_def *c, char **w, int n, int line) {
    if (c->n_triggers >= MAX_CFG || n < 3) {
        die("%s:%d: trigger PROBE KIND [threshold X] [fire N] [clear N]", c->path, line);
    }
    struct trigger_cfg *t = &c->triggers[c->n_triggers++];
    snprintf(t->probe, sizeof t->probe, "%s", w[1]);
    snprintf(t->kind, sizeof t->kind, "%s", w[2]);
    t->threshold = NAN;
    t->fire = 3;
    t->clear = 5;
    for (int i = 3; i + 1 < n; i += 2) {
        double v = num(w[i + 1], c->path, line);
        if (strcmp(w[i], "threshold") == 0) {
            t->threshold = v;
        } else if (strcmp(w[i], "fire") == 0) {
            t->fire = (int)v;
        } else if (strcmp(w[i], "clear") == 0) {
            t->clear = (int)v;
        } else {
            die("%s:%d: trigger: unknown word \"%s\"", c->path, line, w[i]);
        }
    }
}

static void parse_set(struct case_def *c, char **w, int n, int line) {
    if (n != 3) {
        die("%s:%d: set NAME VALUE", c->path, line);
    }
    double v = num(w[2], c->path, line);
    const char *k = w[1];
    if (strcmp(k, "window_ms") == 0) {
        c->window_ms = (int64_t)v;
    } else if (strcmp(k, "lag_ms") == 0) {
        c->lag_ms = (int64_t)v;
    } else if (strcmp(k, "ring") == 0) {
        c->ring = (int)v;
    } else if (strcmp(k, "min_instances") == 0) {
        c->opt.min_instances = (int)v;
    } else if (strcmp(k, "min_windows") == 0) {
        c->opt.min_windows = (int)v;
    } else if (strcmp(k, "near_tie_margin") == 0) {
        c->search.min_lead = v;
    } else if (strcmp(k, "max_enabled") == 0) {
        c->opt.max_enabled_probes = (int)v;
    } else if (strcmp(k, "max_rate") == 0) {
        c->opt.max_instances_per_second = v;
    } else if (strcmp(k, "deescalate") == 0) {
        c->opt.deescalate_windows = (int)v;
    } else if (strcmp(k, "investigation_windows") == 0) {
        c->opt.investigation_windows = (int)v;
    } else if (strcmp(k, "snapshot_windows") == 0) {
        c->opt.snapshot_windows = (int)v;
    } else if (strcmp(k, "auto_range") == 0) {
        c->auto_range = v != 0;
    } else {
        die("%s:%d: set: unknown setting \"%s\"", c->path, line, k);
    }
}

/* "PROBE N STATUS [DIST ARGS]" or "PROBE none" inside an `at` block. */
static void parse_spec(struct case_def *c, char **w, int n, int line, int64_t from, int group) {
    if (c->n_specs >= MAX_SPECS) {
        die("%s:%d: too many traffic lines", c->path, line);
    }
    struct spec *s = &c->specs[c->n_specs++];
    memset(s, 0, sizeof *s);
    s->from = from;
    s->group = group;
    snprintf(s->probe, sizeof s->probe, "%s", w[0]);
    if (n == 2 && strcmp(w[1], "none") == 0) {
        s->none = 1;
        return;
    }
    if (n < 3) {
        die("%s:%d: PROBE N ok|fa|to [DIST ...] or PROBE none", c->path, line);
    }
    if (n >= 4 && strcmp(w[n - 2], "node") == 0) {
        int k = 0;
        while (k < c->n_nodes && strcmp(c->nodes[k], w[n - 1]) != 0) {
            k++;
        }
        if (k == c->n_nodes) {
            if (c->n_nodes >= 8) {
                die("%s:%d: at most 8 nodes", c->path, line);
            }
            snprintf(c->nodes[c->n_nodes++], sizeof c->nodes[0], "%s", w[n - 1]);
        }
        s->node = k;
        n -= 2;
    }
    if (n >= 5 && strcmp(w[n - 2], "levels") == 0) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", w[n - 1]);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (s->n_levels >= 16) {
                die("%s:%d: at most 16 levels", c->path, line);
            }
            s->levels[s->n_levels++] = num(t, c->path, line);
        }
        n -= 2;
    }
    s->n = (int)num(w[1], c->path, line);
    s->status = strcmp(w[2], "ok") == 0   ? PROBE_OK
                : strcmp(w[2], "fa") == 0 ? PROBE_FA
                : strcmp(w[2], "to") == 0
                    ? PROBE_TO
                    : (die("%s:%d: status ok, fa or to", c->path, line), PROBE_OK);
    s->dist = D_CONST;
    s->a = 1.0;
    if (n == 3) {
        return;
    }
    const char *d = w[3];
    if (strcmp(d, "const") == 0 && n == 5) {
        s->a = num(w[4], c->path, line);
    } else if (strcmp(d, "uniform") == 0 && n == 6) {
        s->dist = D_UNIFORM;
        s->a = num(w[4], c->path, line);
        s->b = num(w[5], c->path, line);
    } else if (strcmp(d, "exp") == 0 && (n == 5 || n == 6)) {
        s->dist = D_EXP;
        s->a = num(w[4], c->path, line);
        s->b = n == 6 ? num(w[5], c->path, line) : 0.0;
    } else if (strcmp(d, "mix") == 0 && n == 7) {
        s->dist = D_MIX;
        s->a = num(w[4], c->path, line);
        s->b = num(w[5], c->path, line);
        s->c = num(w[6], c->path, line);
    } else if ((strcmp(d, "sum") == 0 || strcmp(d, "max") == 0 || strcmp(d, "min") == 0 ||
                strcmp(d, "pick") == 0) &&
               n >= 5 && n - 4 <= MAX_PARTS) {
        s->dist = strcmp(d, "sum") == 0   ? D_SUM
                  : strcmp(d, "max") == 0 ? D_MAX
                  : strcmp(d, "min") == 0 ? D_MIN
                                          : D_PICK;
        for (int i = 4; i < n; i++) {
            snprintf(s->parts[s->n_parts++], PROBES_NAME_MAX + 1, "%s", w[i]);
        }
    } else {
        die("%s:%d: distribution: const MS | uniform LO HI | exp MEAN [SHIFT] | mix P A B | "
            "sum|max|min|pick PROBE…",
            c->path, line);
    }
}

static void parse_action(struct case_def *c, int64_t at, char **w, int n, int line) {
    if (c->n_actions >= MAX_ACTIONS) {
        die("%s:%d: too many actions", c->path, line);
    }
    struct action *a = &c->actions[c->n_actions++];
    memset(a, 0, sizeof *a);
    a->at = at;
    if (strcmp(w[0], "diagnose") == 0 && n >= 2) {
        a->kind = A_DIAGNOSE;
        snprintf(a->arg, sizeof a->arg, "%s", w[1]);
        for (int k = 2; k < n; k++) { /* diagnose NODE [STRATEGY] [overload] */
            if (strcmp(w[k], "overload") == 0) {
                a->n = 1;
            } else {
                snprintf(a->arg2, sizeof a->arg2, "%s", w[k]);
            }
        }
    } else if (strcmp(w[0], "restart") == 0) {
        a->kind = A_RESTART;
    } else if (strcmp(w[0], "store-locked") == 0 && n == 2) {
        a->kind = A_LOCK;
        a->n = (int)num(w[1], c->path, line);
    } else if (strcmp(w[0], "commits-refused") == 0 && n == 2) {
        a->kind = A_REFUSE;
        a->n = (int)num(w[1], c->path, line);
    } else if (strcmp(w[0], "trigger-off") == 0 && n == 3) {
        a->kind = A_TRIGGER_OFF;
        snprintf(a->arg, sizeof a->arg, "%s", w[1]);
        snprintf(a->arg2, sizeof a->arg2, "%s", w[2]);
    } else if (strcmp(w[0], "disconnect") == 0 && n == 1) {
        a->kind = A_DISCONNECT;
    } else if (strcmp(w[0], "reconnect") == 0 && n == 1) {
        a->kind = A_RECONNECT;
    } else if (strcmp(w[0], "abort") == 0 && n == 2) {
        a->kind = A_ABORT;
        a->n = (int)num(w[1], c->path, line);
    } else {
        die("%s:%d: unknown action \"%s\"", c->path, line, w[0]);
    }
}

static void case_defaults(struct case_def *c) {
    c->window_ms = 1000;
    c->lag_ms = 0;
    c->ring = 60;
    search_params_init(&c->search);
    c->opt.search = &c->search;
    c->opt.min_instances = 30;
    c->opt.min_windows = 2;
    c->opt.max_enabled_probes = 0;
    c->opt.max_instances_per_second = 0;
    c->opt.deescalate_windows = 5;
    c->opt.investigation_windows = 60;
    c->opt.snapshot_windows = 10;
}

static void case_load(struct case_def *c, const char *path) {
    memset(c, 0, sizeof *c);
    case_defaults(c);
    snprintf(c->nodes[0], sizeof c->nodes[0], "fake@test"); /* traffic without `node` */
    c->n_nodes = 1;
    snprintf(c->path, sizeof c->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        die("cannot open %s: %s", path, strerror(errno));
    }
    char line[1024];
    int ln = 0, in_diagram = 0, in_expect = 0, group = 0;
    int64_t at = -1;
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (in_diagram) {
            if (strncmp(line, "end", 3) == 0 && (line[3] == '\n' || line[3] == '\0')) {
                in_diagram = 0;
                continue;
            }
            size_t l = strlen(line);
            if (c->diagram_len + l + 1 > cap) {
                cap = (c->diagram_len + l + 1) * 2;
                c->diagram = realloc(c->diagram, cap);
                if (!c->diagram) {
                    die("out of memory");
                }
            }
            memcpy(c->diagram + c->diagram_len, line, l + 1);
            c->diagram_len += l;
            continue;
        }
        if (in_expect) {
            char *s = line;
            while (*s == ' ' || *s == '\t') {
                s++;
            }
            s[strcspn(s, "\r\n")] = '\0';
            if (strcmp(s, "end") == 0) {
                in_expect = 0;
            } else if (*s && *s != '#' && c->n_expect < MAX_LINES) {
                c->expect[c->n_expect++] = dup_str(s);
            }
            continue;
        }
        int indented = line[0] == ' ' || line[0] == '\t';
        char *w[32];
        int n = words(line, w, 32);
        if (n == 0 || w[0][0] == '#') {
            continue;
        }
        if (indented) {
            if (at < 0) {
                die("%s:%d: a traffic line outside an `at` block", path, ln);
            }
            parse_spec(c, w, n, ln, at, group);
            continue;
        }
        at = -1;
        if (strcmp(w[0], "diagram") == 0) {
            in_diagram = 1;
        } else if (strcmp(w[0], "expect") == 0) {
            in_expect = 1;
        } else if (strcmp(w[0], "set") == 0) {
            parse_set(c, w, n, ln);
        } else if (strcmp(w[0], "show") == 0 && n == 2 && strcmp(w[1], "reasons") == 0) {
            c->show_reasons = 1;
        } else if (strcmp(w[0], "wrapper") == 0 && n == 2 && strcmp(w[1], "legacy") == 0) {
            c->legacy = 1;
        } else if (strcmp(w[0], "probe") == 0 && n >= 2) {
            parse_probe(c, w, n, ln);
        } else if (strcmp(w[0], "trigger") == 0) {
            parse_trigger(c, w, n, ln);
        } else if (strcmp(w[0], "at") == 0 && n >= 2) {
            int64_t when = (int64_t)num(w[1], path, ln);
            if (n == 2) {
                at = when;
                group++;
            } else {
                parse_action(c, when, w + 2, n - 2, ln);
            }
        } else if (strcmp(w[0], "run") == 0 && n == 2) {
            c->run = (int64_t)num(w[1], path, ln);
        } else {
            die("%s:%d: unknown line \"%s\"", path, ln, w[0]);
        }
    }
    fclose(f);
    if (!c->diagram || c->run <= 0) {
        die("%s: a case needs a diagram and `run N`", path);
    }
}

static void case_release(struct case_def *c) {
    free(c->diagram);
    for (int i = 0; i < c->n_expect; i++) {
        free(c->expect[i]);
    }
}

/* ---- the fake wrapper ------------------------------------------------------------------------ */

static int wrapper_find(const struct wrapper *w, const char *name) {
    for (int i = 0; i < w->n; i++) {
        if (strcmp(w->names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

static void wrapper_set(struct wrapper *w, const char *name, double dmax) {
    int i = wrapper_find(w, name);
    if (dmax > 0) {
        if (i < 0 && w->n < MAX_WRAPPER) {
            i = w->n++;
            snprintf(w->names[i], sizeof w->names[i], "%s", name);
        }
        if (i >= 0) {
            w->dmax[i] = dmax;
        }
    } else if (i >= 0) {
        w->n--;
        memcpy(w->names[i], w->names[w->n], sizeof w->names[i]);
        w->dmax[i] = w->dmax[w->n];
    }
}

static size_t fake_destinations(void *src, const struct wire_cmd *cmd, struct core_dest *out,
                                size_t cap) {
    struct run *r = src;
    if (cap > 0) {
        out[0].id = 1;
        out[0].applicable = !(r->w.legacy && cmd->kind == WIRE_CMD_CLEAR_TIMEOUT);
        snprintf(out[0].label, sizeof out[0].label, "1 %s", r->w.legacy ? "legacy" : "fake");
    }
    return 1;
}

static int fake_send(void *src, uint64_t dest, const struct wire_cmd *cmd, int64_t row) {
    struct run *r = src;
    (void)dest;
    char name[PROBES_NAME_MAX + 1];
    snprintf(name, sizeof name, "%.*s", (int)cmd->name.n, cmd->name.p ? cmd->name.p : "");
    switch (cmd->kind) {
    case WIRE_CMD_SET_TIMEOUT:
        say(r, "cmd set_timeout %s %g", name, cmd->ms);
        wrapper_set(&r->w, name, cmd->ms);
        break;
    case WIRE_CMD_CLEAR_TIMEOUT:
        say(r, "cmd clear_timeout %s", name);
        wrapper_set(&r->w, name, 0);
        break;
    case WIRE_CMD_START_STUB:
    case WIRE_CMD_STOP_STUB:
        say(r, "cmd %s", cmd->kind == WIRE_CMD_START_STUB ? "start_stub" : "stop_stub");
        r->w.running = cmd->kind == WIRE_CMD_START_STUB;
        break;
    default:
        say(r, "cmd sync");
        break;
    }
    if (!r->w.legacy) {
        core_command_acked(r->core, row); /* a v2 wrapper acknowledges every command */
    }
    return DQ_OK;
}

static const struct core_source_ops fake_ops = {
    .name = "fake",
    .destinations = fake_destinations,
    .send = fake_send,
};

/* ---- transcript from the store and the event sink ---------------------------------------- */

struct hyp_row {
    int64_t id, inv;
    char text[2400];
};

struct hyp_list {
    struct run *r;
    struct hyp_row *rows;
    int n, cap;
    const struct store_investigation *inv;
};

/* "a,b,c" from a JSON array of names ("-" when empty). */
static void names_of(const char *json, char *out, size_t cap) {
    json_error_t err;
    json_t *a = json ? json_loads(json, 0, &err) : NULL;
    size_t i, off = 0;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(a, i, v) {
        off += (size_t)snprintf(out + off, off < cap ? cap - off : 0, "%s%s", i ? "," : "",
                                json_string_value(v));
    }
    json_decref(a);
    if (!out[0]) {
        snprintf(out, cap, "-");
    }
}

static int collect_hyp(void *ctx, const struct store_hypothesis *h) {
    struct hyp_list *l = ctx;
    if (h->id <= l->r->hyp_seen) {
        return 0;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->rows = realloc(l->rows, (size_t)l->cap * sizeof *l->rows);
        if (!l->rows) {
            die("out of memory");
        }
    }
    struct hyp_row *row = &l->rows[l->n++];
    row->id = h->id;
    row->inv = h->investigation;
    char names[400];
    names_of(h->probes_json, names, sizeof names);
    json_error_t jerr;
    json_t *stats = h->stats_json ? json_loads(h->stats_json, 0, &jerr) : NULL;
    if (strcmp(h->action, "root") == 0) {
        /* the problem it opened with (a person's is "unknown" until its data decides) */
        json_int_t follows = json_integer_value(json_object_get(stats, "follows"));
        char after[40] = "";
        if (follows) {
            snprintf(after, sizeof after, ", follows inv%" JSON_INTEGER_FORMAT, follows);
        }
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " root %s (%s, %s%s)", h->investigation,
                 h->node, h->kind, l->inv->origin, after);
    } else if (strcmp(h->action, "check") == 0) {
        const char *mode = json_string_value(json_object_get(stats, "mode"));
        const char *also = json_string_value(json_object_get(stats, "also"));
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " check %s: %s%s%s%s", h->investigation,
                 h->node, json_string_value(json_object_get(stats, "problem")),
                 !mode                           ? ""
                 : strcmp(mode, "overload") == 0 ? " (overload)"
                                                 : " (largest contributor: no reference)",
                 also ? ", also " : "", also ? also : "");
    } else if (strcmp(h->action, "handover") == 0) {
        /* the investigation it hands over to, as stored ("to": a real id, never -1) */
        snprintf(row->text, sizeof row->text,
                 "inv%" PRId64 " handover %s to inv%" JSON_INTEGER_FORMAT ": %s", h->investigation,
                 h->node, json_integer_value(json_object_get(stats, "to")), names);
    } else if (strcmp(h->action, "expand") == 0 || strcmp(h->action, "disable") == 0 ||
               strcmp(h->action, "share") == 0 || strcmp(h->action, "enable") == 0) {
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " %s %s: %s", h->investigation,
                 h->action, h->node, names);
    } else if (strcmp(h->action, "verdict") == 0) {
        const char *why = json_string_value(json_object_get(stats, "reason"));
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " verdict %s %s%s%s", h->investigation,
                 h->verdict ? h->verdict : "?", h->node, l->r->c->show_reasons && why ? ": " : "",
                 l->r->c->show_reasons && why ? why : "");
        /* an overload verdict's stages, each estimate with its method */
        json_t *ov = json_object_get(stats, "overload");
        size_t i;
        json_t *st;
        json_array_foreach(json_object_get(ov, "stages"), i, st) {
            if (!l->r->c->show_reasons) {
                break;
            }
            size_t len = strlen(row->text);
            snprintf(row->text + len, sizeof row->text - len,
                     "%s%s ρ %.3f [%.3f, %.3f] S %.3g ms c %d %s, %s, saturates %.4g/s",
                     i == 0 ? " | stages: " : "; ", json_string_value(json_object_get(st, "probe")),
                     json_number_value(json_object_get(st, "rho")),
                     json_number_value(json_object_get(st, "rho_low")),
                     json_number_value(json_object_get(st, "rho_high")),
                     json_number_value(json_object_get(st, "service_ms")),
                     (int)json_integer_value(json_object_get(st, "servers")),
                     json_string_value(json_object_get(st, "servers_from")),
                     json_string_value(json_object_get(st, "method")),
                     json_number_value(json_object_get(st, "root_saturation_per_s")));
        }
    } else if (strcmp(h->action, "recheck") == 0 || strcmp(h->action, "culprit") == 0 ||
               strcmp(h->action, "watch") == 0) {
        const char *why = json_string_value(json_object_get(stats, "reason"));
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " %s %s%s%s", h->investigation,
                 h->action, h->node, l->r->c->show_reasons && why ? ": " : "",
                 l->r->c->show_reasons && why ? why : "");
    } else {
        snprintf(row->text, sizeof row->text, "inv%" PRId64 " %s %s", h->investigation, h->action,
                 h->node);
    }
    json_decref(stats);
    return 0;
}

static int collect_inv(void *ctx, const struct store_investigation *inv) {
    struct hyp_list *l = ctx;
    l->inv = inv;
    store_hypotheses_of_investigation(l->r->store, inv->id, collect_hyp, l);
    return 0;
}

static int cmp_hyp(const void *a, const void *b) {
    const struct hyp_row *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* "range NAME OLD -> NEW ms (REASON)": the auto_range events the store holds since the
 * last call. */
static int say_range(void *ctx, const struct store_event *ev) {
    struct run *r = ctx;
    json_t *d = json_loads(ev->detail_json ? ev->detail_json : "{}", 0, NULL);
    say(r, "range %s %g -> %g ms (%s)", ev->probe ? ev->probe : "-",
        json_number_value(json_object_get(d, "old_dmax_ms")),
        json_number_value(json_object_get(d, "new_dmax_ms")),
        json_string_value(json_object_get(d, "reason")));
    json_decref(d);
    r->range_seen = ev->id > r->range_seen ? ev->id : r->range_seen;
    return 0;
}

static void transcript_ranges(struct run *r) {
    store_events_each(r->store, NULL, "auto_range", r->range_seen, 0, say_range, r);
}

/* Writes the hypotheses recorded since the last call, in the order they were made. */
static void transcript_hypotheses(struct run *r) {
    struct hyp_list l = {.r = r};
    store_investigations_each(r->store, false, 0, collect_inv, &l);
    if (l.n > 0) {
        qsort(l.rows, (size_t)l.n, sizeof *l.rows, cmp_hyp);
    }
    for (int i = 0; i < l.n; i++) {
        say(r, "%s", l.rows[i].text);
        if (l.rows[i].id > r->hyp_seen) {
            r->hyp_seen = l.rows[i].id;
        }
    }
    free(l.rows);
}

/* A hypothesis event must be the row the round committed: same investigation, node and
 * action. Matching events are not written (the transcript lists the rows themselves). */
struct hyp_check {
    const json_t *ev;
    int same;
};

static int check_hyp(void *ctx, const struct store_hypothesis *h) {
    struct hyp_check *k = ctx;
    const char *node = json_string_value(json_object_get(k->ev, "node"));
    const char *action = json_string_value(json_object_get(k->ev, "action"));
    k->same = json_integer_value(json_object_get(k->ev, "investigation")) == h->investigation &&
              node && strcmp(node, h->node) == 0 && action && strcmp(action, h->action) == 0;
    return 0;
}

static void on_event(void *ctx, const char *event, json_t *payload) {
    struct run *r = ctx;
    if (strcmp(event, "hypothesis") == 0) {
        struct hyp_check k = {.ev = payload};
        json_int_t id = json_integer_value(json_object_get(payload, "id"));
        if (store_hypothesis_get(r->store, id, check_hyp, &k) != DQ_OK || !k.same) {
            char *text = json_dumps(payload, JSON_COMPACT);
            say(r, "hypothesis event unlike row %" JSON_INTEGER_FORMAT ": %s", id,
                text ? text : "?");
            free(text);
        }
        json_decref(payload);
        return;
    }
    json_t *inv = json_object_get(payload, "investigation");
    char invtext[32] = "";
    if (json_is_integer(inv)) {
        snprintf(invtext, sizeof invtext, " inv%" JSON_INTEGER_FORMAT, json_integer_value(inv));
    }
    if (strcmp(event, "verdict") == 0) {
        json_t *summary = json_object_get(payload, "summary");
        say(r, "event verdict%s %s %s", invtext,
            json_string_value(json_object_get(payload, "verdict")),
            json_string_value(json_object_get(summary, "node")));
    } else if (strncmp(event, "probe_", 6) == 0) {
        say(r, "event %s %s", event, json_string_value(json_object_get(payload, "probe")));
    } else {
        say(r, "event %s %s %s%s", event, json_string_value(json_object_get(payload, "kind")),
            json_string_value(json_object_get(payload, "probe")), invtext);
    }
    json_decref(payload);
}

/* "end commands: acked 3, not_applied 3": the commands table by status. */
struct status_count {
    const char *names[8];
    int counts[8];
    int n;
};

static int count_command(void *ctx, const struct store_command *cmd) {
    struct status_count *sc = ctx;
    const char *st = cmd->status ? cmd->status : "sent";
    for (int i = 0; i < sc->n; i++) {
        if (strcmp(sc->names[i], st) == 0) {
            sc->counts[i]++;
            return 0;
        }
    }
    static const char *const known[] = {"sent", "acked", "failed", "not_applied"};
    for (int i = 0; i < 4 && sc->n < 8; i++) {
        if (strcmp(known[i], st) == 0) {
            sc->names[sc->n] = known[i];
            sc->counts[sc->n++] = 1;
        }
    }
    return 0;
}

static void say_commands(struct run *r) {
    struct status_count sc = {0};
    store_commands_each(r->store, NULL, count_command, &sc);
    char buf[256] = "";
    size_t off = 0;
    for (int i = 0; i < sc.n; i++) {
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s %d", i ? ", " : "", sc.names[i],
                                sc.counts[i]);
    }
    say(r, "end commands: %s", sc.n ? buf : "none");
}

struct snap_count {
    int n, complete, dqs;
};

static int count_snapshot(void *ctx, const struct store_snapshot *s) {
    struct snap_count *c = ctx;
    c->n++;
    c->complete += s->complete;
    c->dqs += s->dq_count;
    return 0;
}

/* "end snapshots: 1 (1 complete, 42 ΔQs)". */
static void say_snapshots(struct run *r) {
    struct snap_count c = {0};
    store_snapshots_each(r->store, 0, count_snapshot, &c);
    say(r, "end snapshots: %d (%d complete, %d dqs)", c.n, c.complete, c.dqs);
}

/* ---- running a case ------------------------------------------------------------------------- */

/* Moves lines [from, n_lines) to position at, shifting [at, from) after them. */
static void move_tail(struct run *r, int at, int from) {
    int tail = r->n_lines - from, head = from - at;
    if (tail <= 0 || head <= 0) {
        return;
    }
    char **tmp = malloc((size_t)head * sizeof *tmp);
    if (!tmp) {
        die("out of memory");
    }
    memcpy(tmp, &r->lines[at], (size_t)head * sizeof *tmp);
    memmove(&r->lines[at], &r->lines[from], (size_t)tail * sizeof *tmp);
    memcpy(&r->lines[at + tail], tmp, (size_t)head * sizeof *tmp);
    free(tmp);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void say_set(struct run *r, const char *what, const char **names, int n) {
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    char buf[900];
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off < sizeof buf; i++) {
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? "," : "", names[i]);
    }
    say(r, "%s %s", what, n ? buf : "-");
}

static int64_t store_clock(void *ctx) {
    return clock_now(ctx);
}

static void start(struct run *r, int restart) {
    struct case_def *c = r->c;
    struct store_options so = {.busy_timeout_ms = 5};
    if (store_open_ex(r->db, &so, &r->store) != DQ_OK) {
        die("%s: store: %s", c->path, dq_last_error());
    }
    store_set_clock(r->store, store_clock, &r->clock);
    struct core_options co = {.max_probes = 1000,
                              .window_ns = c->window_ms * 1000000,
                              .lag_ns = c->lag_ms * 1000000,
                              .ring = c->ring,
                              .default_dmax_ms = 1024,
                              .default_bins = 1024,
                              .retention_hours = 0,
                              .auto_range = c->auto_range};
    if (core_create(&co, r->store, &r->clock, &r->core) != DQ_OK) {
        die("%s: core: %s", c->path, dq_last_error());
    }
    for (int i = 0; i < c->n_probes; i++) {
        const struct probe_cfg *p = &c->probes[i];
        if (core_configure_probe(r->core, p->name, p->dmax_ms, p->bins, p->enable,
                                 p->has_qta ? &p->qta : NULL, p->servers) != DQ_OK) {
            die("%s: %s", c->path, dq_last_error());
        }
    }
    if (core_load_diagram(r->core, c->diagram, c->diagram_len, "case") != DQ_OK) {
        die("%s: diagram: %s", c->path, dq_last_error());
    }
    if (core_add_source(r->core, &fake_ops, r) != DQ_OK) {
        die("%s: %s", c->path, dq_last_error());
    }
    for (int k = 0; k < c->n_nodes; k++) {
        char label[80];
        snprintf(label, sizeof label, "%d fake", k + 1);
        if (probes_origin_open(core_probes(r->core), label, c->nodes[k], "fake", &r->origin[k]) !=
            DQ_OK) {
            die("%s: origin: %s", c->path, dq_last_error());
        }
    }
    struct adapt_env env = {
        .core = r->core, .store = r->store, .clock = &r->clock, .emit = on_event, .emit_ctx = r};
    if (adapt_create(&env, &c->opt, &r->adapt) != DQ_OK) {
        die("%s: adapt: %s", c->path, dq_last_error());
    }
    core_set_range_veto(r->core, adapt_probe_in_use, r->adapt);
    for (int i = 0; i < c->n_triggers; i++) {
        const struct trigger_cfg *t = &c->triggers[i];
        if (adapt_set_trigger(r->adapt, t->probe, t->kind, t->threshold, t->fire, t->clear, 1) !=
            DQ_OK) {
            die("%s: trigger: %s", c->path, dq_last_error());
        }
    }
    /* the wrapper (re)connects: it gets dqd's enabled set and drops what dqd does not want,
     * as a v2 wrapper's hello and state exchange do */
    struct probe_table *t = core_probes(r->core);
    r->w.n = 0;
    for (size_t i = 0; i < t->count; i++) {
        if (t->probes[i]->enabled) {
            wrapper_set(&r->w, t->probes[i]->name, t->probes[i]->dmax_ms);
        }
    }
    r->w.running = 1;
    if (restart) {
        struct adapt_stats as;
        adapt_get_stats(r->adapt, &as);
        say(r, "restart: %d investigation(s) in memory", as.investigations);
    }
}

static void stop(struct run *r) {
    adapt_destroy(r->adapt);
    core_remove_source(r->core, r);
    core_destroy(r->core);
    store_close(r->store);
    r->adapt = NULL;
    r->core = NULL;
    r->store = NULL;
}

/* The duration (ms) of the i-th of n instances of s: the (i + ½)/n quantile. */
static double duration_ms(const struct case_def *c, int64_t w, const struct spec *s, int i);

/* The ok spec in force for probe at window w (the newest `at` block that started), or
 * NULL. */
static const struct spec *active_ok(const struct case_def *c, const char *probe, int node,
                                    int64_t w) {
    int64_t newest = -1;
    for (int i = 0; i < c->n_specs; i++) {
        const struct spec *o = &c->specs[i];
        if (strcmp(o->probe, probe) == 0 && o->node == node && o->from <= w && o->from > newest) {
            newest = o->from;
        }
    }
    for (int i = 0; i < c->n_specs; i++) {
        const struct spec *o = &c->specs[i];
        if (strcmp(o->probe, probe) == 0 && o->node == node && o->from == newest && !o->none &&
            o->status == PROBE_OK) {
            return o;
        }
    }
    return NULL;
}

/* A part's durations in its own order: a stride coprime with n per part, so that the
 * parts of one instance are drawn as if independent. */
static double part_ms(const struct case_def *c, int64_t w, int part, const char *probe, int node,
                      int k, int n) {
    static const int strides[MAX_PARTS] = {1, 37, 61, 83, 97, 41, 29, 53};
    char *end = NULL;
    double ms = strtod(probe, &end);
    if (end && end != probe && *end == '\0') {
        return ms; /* a constant part: the node's own time */
    }
    const struct spec *o = active_ok(c, probe, node, w);
    if (!o || o->n <= 0) {
        return 0.0;
    }
    int stride = strides[part % MAX_PARTS];
    while (o->n % stride == 0 && stride > 1) {
        stride += 2;
    }
    int i = (int)(((int64_t)k * stride + part * 7) % n);
    return duration_ms(c, w, o, (int)((int64_t)i * o->n / n));
}

/* pick: instance i of the node is one of its parts' instances, the parts taking turns in
 * proportion to their counts (a choice among them, as the parts report it). */
static double pick_ms(const struct case_def *c, int64_t w, const struct spec *s, int i) {
    int total = 0;
    for (int j = 0; j < s->n_parts; j++) {
        const struct spec *o = active_ok(c, s->parts[j], s->node, w);
        total += o ? o->n : 0;
    }
    int at = total > 0 ? (int)((int64_t)i * total / s->n) : 0;
    for (int j = 0; j < s->n_parts; j++) {
        const struct spec *o = active_ok(c, s->parts[j], s->node, w);
        if (o && at < o->n) {
            return duration_ms(c, w, o, at);
        }
        at -= o ? o->n : 0;
    }
    return 0.0;
}

static double duration_ms(const struct case_def *c, int64_t w, const struct spec *s, int i) {
    if (s->dist == D_PICK) {
        return pick_ms(c, w, s, i);
    }
    if (s->dist == D_SUM || s->dist == D_MAX || s->dist == D_MIN) {
        double acc = s->dist == D_SUM ? 0.0 : (s->dist == D_MAX ? 0.0 : 1e300);
        for (int j = 0; j < s->n_parts; j++) {
            double d = part_ms(c, w, j, s->parts[j], s->node, i, s->n);
            acc = s->dist == D_SUM ? acc + d : (s->dist == D_MAX ? fmax(acc, d) : fmin(acc, d));
        }
        return acc;
    }
    double u = (i + 0.5) / s->n;
    double level = s->n_levels ? s->levels[w % s->n_levels] : 1.0;
    switch (s->dist) {
    case D_UNIFORM:
        return level * (s->a + u * (s->b - s->a));
    case D_EXP:
        return level * (s->b - s->a * log(1.0 - u));
    case D_MIX:
        return level * (u < s->a ? s->b : s->c);
    default:
        return level * s->a;
    }
}

/* The specs in force for window w (the newest `at` block of each probe up to w). */
static void feed_window(struct run *r, int64_t w) {
    struct case_def *c = r->c;
    struct probe_table *t = core_probes(r->core);
    int64_t wstart = (r->w0 + w) * c->window_ms * 1000000;
    int64_t window_ns = c->window_ms * 1000000;
    if (r->w.gone) {
        return; /* a closed link sends nothing */
    }
    if (r->w.running) {
        /* the fake wrapper's link is alive: its probes' empty windows are quiet, not no data */
        for (int k = 0; k < c->n_nodes; k++) {
            probes_origin_heard(t, r->origin[k], wstart + window_ns - 1);
        }
    }
    for (int i = 0; i < c->n_specs; i++) {
        const struct spec *s = &c->specs[i];
        if (s->from > w || s->none) {
            continue;
        }
        int newest = 1; /* no later block for this probe has started by w */
        for (int j = 0; j < c->n_specs; j++) {
            const struct spec *o = &c->specs[j];
            if (strcmp(o->probe, s->probe) == 0 && o->node == s->node && o->group != s->group &&
                o->from <= w && o->from > s->from) {
                newest = 0;
            }
        }
        int wi = wrapper_find(&r->w, s->probe);
        if (!newest || wi < 0 || !r->w.running) {
            continue;
        }
        double dmax = r->w.dmax[wi];
        for (int k = 0; k < s->n; k++) {
            int64_t end = wstart + (int64_t)((k + 0.5) * (double)window_ns / s->n);
            double d = duration_ms(c, w, s, k);
            enum probe_status st = s->status;
            if (st == PROBE_TO || (st == PROBE_OK && d > dmax)) {
                st = PROBE_TO;
                d = dmax; /* as a wrapper reports a timeout: END = START + dMax */
            }
            int64_t start = end - (int64_t)(d * 1e6);
            probes_record(t, s->probe, strlen(s->probe), r->origin[s->node], start, end, st);
            core_add_instances(r->core, 1);
        }
    }
}

static void do_action(struct run *r, const struct action *a) {
    switch (a->kind) {
    case A_DIAGNOSE: {
        int64_t id = 0;
        int mark = r->n_lines;
        int rc = adapt_diagnose(r->adapt, a->arg, a->arg2[0] ? a->arg2 : NULL, "test", a->n, &id);
        int mid = r->n_lines;
        if (rc == DQ_OK || rc == DQ_EEXIST) {
            say(r, "diagnose %s -> inv%" PRId64 "%s", a->arg, id,
                rc == DQ_EEXIST ? " (already open)" : "");
        } else {
            say(r, "diagnose %s -> %s: %s", a->arg, dq_err_name(rc), dq_last_error());
        }
        transcript_hypotheses(r);
        move_tail(r, mark, mid);
        break;
    }
    case A_RESTART:
        stop(r);
        start(r, 1);
        break;
    case A_LOCK:
        if (!r->locker) {
            struct store_options so = {.busy_timeout_ms = 5};
            if (store_open_ex(r->db, &so, &r->locker) != DQ_OK || store_begin(r->locker) != DQ_OK) {
                die("%s: cannot lock the store: %s", r->c->path, dq_last_error());
            }
        }
        r->lock_left = a->n;
        say(r, "store locked by another writer for %d window(s)", a->n);
        break;
    case A_REFUSE:
        store_refuse_commits(r->store, a->n);
        say(r, "store refuses the next %d commit(s)", a->n);
        break;
    case A_DISCONNECT:
        for (int k = 0; k < r->c->n_nodes; k++) {
            probes_origin_closed(core_probes(r->core), r->origin[k]);
        }
        r->w.gone = 1;
        say(r, "wrapper disconnected");
        break;
    case A_RECONNECT:
        for (int k = 0; k < r->c->n_nodes; k++) {
            char label[80];
            snprintf(label, sizeof label, "%d fake", r->c->n_nodes + k + 1);
            if (probes_origin_open(core_probes(r->core), label, r->c->nodes[k], "fake",
                                   &r->origin[k]) != DQ_OK) {
                die("%s: origin: %s", r->c->path, dq_last_error());
            }
        }
        r->w.gone = 0;
        say(r, "wrapper reconnected");
        break;
    case A_ABORT: {
        int mark = r->n_lines;
        int rc = adapt_abort(r->adapt, a->n, "test");
        int mid = r->n_lines;
        if (rc == DQ_OK) {
            say(r, "abort inv%d -> ok", a->n);
        } else {
            say(r, "abort inv%d -> %s: %s", a->n, dq_err_name(rc), dq_last_error());
        }
        transcript_hypotheses(r);
        move_tail(r, mark, mid);
        break;
    }
    case A_TRIGGER_OFF:
        if (adapt_set_trigger(r->adapt, a->arg, a->arg2, NAN, 3, 5, 0) != DQ_OK) {
            say(r, "trigger-off %s %s: %s", a->arg, a->arg2, dq_last_error());
        } else {
            say(r, "trigger %s on %s disabled", a->arg2, a->arg);
        }
        break;
    }
}

static void run_case(struct run *r) {
    struct case_def *c = r->c;
    int64_t window_ns = c->window_ms * 1000000;
    r->w0 = T0_S * 1000000000LL / window_ns;
    r->w.legacy = c->legacy;
    clock_init_manual(&r->clock, &r->manual, r->w0 * window_ns);
    start(r, 0);
    for (r->cur = 0; r->cur < c->run; r->cur++) {
        int64_t wstart = (r->w0 + r->cur) * window_ns;
        clock_manual_set(&r->manual, wstart);
        for (int i = 0; i < c->n_actions; i++) {
            if (c->actions[i].at == r->cur) {
                do_action(r, &c->actions[i]);
            }
        }
        feed_window(r, r->cur);
        struct adapt_stats before, after;
        adapt_get_stats(r->adapt, &before);
        int mark = r->n_lines;
        clock_manual_set(&r->manual, wstart + window_ns + c->lag_ms * 1000000);
        core_close_due(r->core, clock_now(&r->clock), adapt_window, r->adapt);
        adapt_get_stats(r->adapt, &after);
        if (after.rounds_failed > before.rounds_failed) {
            say(r, "round failed (window %" PRId64 " pending)", after.pending_wid - r->w0);
        }
        if (r->locker && --r->lock_left <= 0) {
            store_rollback(r->locker);
            store_close(r->locker);
            r->locker = NULL;
            say(r, "store unlocked");
        }
        /* what the round recorded (grid changes, hypotheses) before what it then sent and
         * emitted */
        int mid = r->n_lines;
        transcript_ranges(r);
        transcript_hypotheses(r);
        move_tail(r, mark, mid);
    }
    /* the end state */
    struct probe_table *t = core_probes(r->core);
    const char *names[MAX_WRAPPER];
    int n = 0;
    for (size_t i = 0; i < t->count && n < MAX_WRAPPER; i++) {
        if (t->probes[i]->enabled) {
            names[n++] = t->probes[i]->name;
        }
    }
    say_set(r, "end enabled:", names, n);
    n = 0;
    for (int i = 0; i < r->w.n; i++) {
        names[n++] = r->w.names[i];
    }
    say_set(r, "end wrapper:", names, n);
    struct adapt_stats as;
    adapt_get_stats(r->adapt, &as);
    say(r, "end investigations in memory: %d", as.investigations);
    say_commands(r);
    say_snapshots(r);
    if (r->locker) {
        store_rollback(r->locker);
        store_close(r->locker);
        r->locker = NULL;
    }
    stop(r);
}

/* ---- main --------------------------------------------------------------------------------- */

static int run_file(const char *path, int print) {
    struct case_def *c = calloc(1, sizeof *c);
    struct run *r = calloc(1, sizeof *r);
    if (!c || !r) {
        die("out of memory");
    }
    case_load(c, path);
    r->c = c;
    const char *base = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/dqd-adapt-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        die("mkdtemp: %s", strerror(errno));
    }
    snprintf(r->db, sizeof r->db, "%s/case.db", dir);
    run_case(r);
    int ok = r->n_lines == c->n_expect;
    for (int i = 0; ok && i < r->n_lines; i++) {
        ok = strcmp(r->lines[i], c->expect[i]) == 0;
    }
    if (print || !ok) {
        printf("%s %s\n", ok ? "ok  " : "FAIL", path);
        int n = r->n_lines > c->n_expect ? r->n_lines : c->n_expect;
        for (int i = 0; i < n; i++) {
            const char *got = i < r->n_lines ? r->lines[i] : "";
            const char *want = i < c->n_expect ? c->expect[i] : "";
            int same = strcmp(got, want) == 0;
            if (print && ok) {
                printf("  %s\n", got);
            } else {
                printf("%s %-60s%s%s\n", same ? " " : "!", got,
                       same ? "" : " | want: ", same ? "" : want);
            }
        }
    } else {
        printf("ok   %s (%d lines)\n", path, r->n_lines);
    }
    for (int i = 0; i < r->n_lines; i++) {
        free(r->lines[i]);
    }
    char p[1200];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", r->db, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
    case_release(c);
    free(c);
    free(r);
    return ok;
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    int print = 0, failed = 0, total = 0;
    log_current_level = -1; /* the transcript says what happened; log lines would only
                               interleave with it */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--print") == 0) {
            print = 1;
            continue;
        }
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            die("%s: %s", argv[i], strerror(errno));
        }
        if (!S_ISDIR(sb.st_mode)) {
            total++;
            failed += !run_file(argv[i], print);
            continue;
        }
        DIR *d = opendir(argv[i]);
        char *paths[512];
        int n = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL && n < 512) {
            size_t l = strlen(e->d_name);
            if (l > 5 && strcmp(e->d_name + l - 5, ".case") == 0) {
                char p[1024];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                paths[n++] = dup_str(p);
            }
        }
        if (d) {
            closedir(d);
        }
        qsort(paths, (size_t)n, sizeof *paths, cmp_path);
        for (int j = 0; j < n; j++) {
            total++;
            failed += !run_file(paths[j], print);
            free(paths[j]);
        }
    }
    if (total == 0) {
        die("no case files given");
    }
    dq_engine_cleanup();
    printf("%d case(s), %d failed\n", total, failed);
    return failed ? 1 : 0;
}
