/*
 * dqsim_args.c: dqsim's command line (dqsim.h): the help text and the options, each
 * checked as it is read, then what must go together.
 */
#include "dqsim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

void dqsim_usage(FILE *f) {
    fprintf(f, "usage: dqsim --diagram FILE.dq --dqd HOST:PORT [options]\n"
               "       dqsim --diagram FILE.dq --list [--seed N]\n"
               "       dqsim --diagram FILE.dq --dry-run N [--enable …] [options]\n"
               "\n"
               "  --diagram FILE      outcome diagram (.dq); every named node is a probe\n"
               "  --dqd HOST:PORT     dqd's ingest port (reconnects with backoff 0.1 … 2 s)\n"
               "  --seed N            all randomness (default 1)\n"
               "  --rate N            requests per second (default 200)\n"
               "  --leaf-mean LO:HI   band of the leaves' mean delays in ms (default 1:3)\n"
               "  --time-scale X      reported ms = model ms × X (default 1)\n"
               "  --root NAME         start requests at this node (default: the last root)\n"
               "  --enable LIST       NAME[=MS],… initial dMax (MS default 1000; * = every probe)\n"
               "  --fault NAME:KIND:VALUE   slow:ADD_MS, erratic:FACTOR or fail:PROB; repeatable\n"
               "  --fault-after S     switch the --fault set on after S seconds (default 0)\n"
               "  --fault-for S       and off again S seconds later (default: stays on)\n"
               "  --station LEAF[,LEAF…][=NAME]:SERVERS:DIST[:K=N]   a FIFO queueing station\n"
               "                      serving the leaves (shared when several), DIST one of\n"
               "                      exp:MEAN uniform:LO:HI const:MS shexp:SHIFT:MEAN (ms),\n"
               "                      K the most requests in it (default 0: no limit); repeatable\n"
               "  --duration S        exit after S seconds (stdin EOF then does not quit)\n"
               "  --batch-ms MS       send interval (default 5); with --clock sim, the step\n"
               "  --clock wall|sim    sim: simulated time in lockstep with a dqd started with\n"
               "                      --clock sim, as fast as both can go (durations are then\n"
               "                      simulated seconds)\n"
               "  --hold              with --clock sim: stand still until stdin says `run S`\n"
               "                      (S simulated seconds more, then `held at T`)\n"
               "  --start-at S        with --clock sim: simulated time starts at S (Unix seconds;\n"
               "                      default now), e.g. after what a dqd saw before a restart\n"
               "  --trace-ids         instances say which request they were (v2 i:, t:, a:)\n"
               "  --clock-link        with --clock sim: a second connection (node NAME-clock)\n"
               "                      keeps simulated time going while the data link is down\n"
               "  --node NAME, --app NAME   labels of the hello (default dqsim@HOST, dqsim)\n"
               "  --list              print the probes and leaf parameters, exit\n"
               "  --dry-run N         no network: print the lines of N requests, exit\n"
               "\n"
               "stdin: fault NAME slow MS | fault NAME erratic FACTOR | fault NAME fail PROB |\n"
               "       clear NAME | clear all | rate N | run S | status | stations |\n"
               "       disconnect | reconnect | mute | unmute | quit\n");
}

static int parse_double_arg(const char *opt, const char *s, double lo, double hi, double *out) {
    char *e = NULL;
    errno = 0;
    double v = strtod(s, &e);
    if (errno || e == s || *e || !(v >= lo && v <= hi)) {
        fprintf(stderr, "dqsim: %s %s: need a number in [%g, %g]\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* One option (name, its value or NULL for a flag, arg as written) into cli and a:
 * returns 0, 1 for --help, or -1 on an error (message printed). */
static int parse_option(const char *name, const char *val, const char *arg, struct cli *cli,
                        struct app *a) {
    double v;
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        return 1;
    } else if (strcmp(name, "--list") == 0) {
        cli->list = 1;
    } else if (strcmp(name, "--diagram") == 0) {
        cli->diagram = val;
    } else if (strcmp(name, "--dqd") == 0) {
        cli->dqd = val;
    } else if (strcmp(name, "--enable") == 0) {
        cli->enable = val;
    } else if (strcmp(name, "--root") == 0) {
        cli->root = val;
    } else if (strcmp(name, "--seed") == 0) {
        char *e = NULL;
        errno = 0;
        unsigned long long s = strtoull(val, &e, 10);
        if (errno || e == val || *e) {
            fprintf(stderr, "dqsim: --seed %s: need an unsigned integer\n", val);
            return -1;
        }
        cli->opt.seed = s;
    } else if (strcmp(name, "--rate") == 0) {
        if (parse_double_arg(name, val, 0, SIM_MAX_RATE, &a->rate)) {
            return -1;
        }
    } else if (strcmp(name, "--time-scale") == 0) {
        if (parse_double_arg(name, val, 1e-6, 1e6, &cli->opt.time_scale)) {
            return -1;
        }
    } else if (strcmp(name, "--leaf-mean") == 0) {
        char *e = NULL;
        double lo = strtod(val, &e);
        double hi = lo;
        if (e && *e == ':') {
            const char *h = e + 1;
            hi = strtod(h, &e);
            if (e == h) {
                e = NULL;
            }
        }
        if (!e || *e || !(lo > 0) || !(hi >= lo) || hi > 1e6) {
            fprintf(stderr, "dqsim: --leaf-mean %s: need LO:HI ms with 0 < LO ≤ HI\n", val);
            return -1;
        }
        cli->opt.mean_lo_ms = lo;
        cli->opt.mean_hi_ms = hi;
    } else if (strcmp(name, "--fault") == 0) {
        if (a->n_faults >= MAX_FAULTS) {
            fprintf(stderr, "dqsim: at most %d --fault options\n", MAX_FAULTS);
            return -1;
        }
        if (sim_fault_spec_parse(val, &a->faults[a->n_faults]) != 0) {
            fprintf(stderr, "dqsim: --fault: %s\n", dq_last_error());
            return -1;
        }
        a->n_faults++;
    } else if (strcmp(name, "--fault-after") == 0) {
        if (parse_double_arg(name, val, 0, 1e7, &a->fault_after_s)) {
            return -1;
        }
    } else if (strcmp(name, "--fault-for") == 0) {
        if (parse_double_arg(name, val, 0.001, 1e7, &a->fault_for_s)) {
            return -1;
        }
    } else if (strcmp(name, "--duration") == 0) {
        if (parse_double_arg(name, val, 0.001, 1e7, &a->duration_s)) {
            return -1;
        }
    } else if (strcmp(name, "--batch-ms") == 0) {
        if (parse_double_arg(name, val, 1, 1000, &a->batch_ms)) {
            return -1;
        }
    } else if (strcmp(name, "--hold") == 0) {
        a->hold = 1;
    } else if (strcmp(name, "--trace-ids") == 0) {
        a->trace_ids = 1;
    } else if (strcmp(name, "--start-at") == 0) {
        if (parse_double_arg(name, val, 1, 9e9, &v)) {
            return -1;
        }
        a->start_at_ns = (int64_t)(v * 1e9);
    } else if (strcmp(name, "--clock-link") == 0) {
        a->clock_link = 1;
    } else if (strcmp(name, "--station") == 0) {
        if (a->n_stations >= MAX_STATIONS) {
            fprintf(stderr, "dqsim: at most %d --station options\n", MAX_STATIONS);
            return -1;
        }
        if (sim_station_spec_parse(val, &a->stations[a->n_stations]) != 0) {
            fprintf(stderr, "dqsim: --station: %s\n", dq_last_error());
            return -1;
        }
        a->n_stations++;
    } else if (strcmp(name, "--clock") == 0) {
        if (strcmp(val, "wall") != 0 && strcmp(val, "sim") != 0) {
            fprintf(stderr, "dqsim: --clock %s: wall or sim\n", val);
            return -1;
        }
        a->sim_clock = strcmp(val, "sim") == 0;
    } else if (strcmp(name, "--dry-run") == 0) {
        if (parse_double_arg(name, val, 1, 1e8, &v)) {
            return -1;
        }
        cli->dry_run = v;
    } else if (strcmp(name, "--node") == 0 || strcmp(name, "--app") == 0) {
        char *dst = name[2] == 'n' ? a->node_label : a->app_label;
        size_t n = strlen(val);
        if (n == 0 || n > WIRE_MAX_LABEL || strpbrk(val, ";\r\n")) {
            fprintf(stderr, "dqsim: %s %s: 1 … %d bytes without ';'\n", name, val, WIRE_MAX_LABEL);
            return -1;
        }
        memcpy(dst, val, n + 1);
    } else {
        fprintf(stderr, "dqsim: unknown option %s (try --help)\n", arg);
        return -1;
    }
    return 0;
}

int dqsim_parse_args(int argc, char **argv, struct cli *cli, struct app *a) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        char name[32];
        const char *eq = strchr(arg, '=');
        if (strncmp(arg, "--", 2) == 0 && eq && (size_t)(eq - arg) < sizeof name) {
            memcpy(name, arg, (size_t)(eq - arg));
            name[eq - arg] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg);
        }
        int flag = strcmp(name, "--list") == 0 || strcmp(name, "--help") == 0 ||
                   strcmp(name, "-h") == 0 || strcmp(name, "--hold") == 0 ||
                   strcmp(name, "--clock-link") == 0 || strcmp(name, "--trace-ids") == 0;
        if (!flag && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dqsim: %s needs a value\n", name);
                return -1;
            }
            val = argv[++i];
        }
        int rc = parse_option(name, val, arg, cli, a);
        if (rc != 0) {
            return rc;
        }
    }
    if (!cli->diagram) {
        fprintf(stderr, "dqsim: --diagram FILE is required (try --help)\n");
        return -1;
    }
    if (!cli->list && !cli->dry_run && !cli->dqd) {
        fprintf(stderr, "dqsim: --dqd HOST:PORT is required (or --list, --dry-run)\n");
        return -1;
    }
    if (a->clock_link && !a->sim_clock) {
        fprintf(stderr, "dqsim: --clock-link needs --clock sim (on the wall clock dqd's time "
                        "goes on by itself)\n");
        return -1;
    }
    if (cli->dqd) {
        const char *colon = strrchr(cli->dqd, ':');
        size_t hn = colon ? (size_t)(colon - cli->dqd) : 0;
        if (!colon || hn == 0 || hn >= sizeof a->host || strlen(colon + 1) == 0 ||
            strlen(colon + 1) >= sizeof a->port) {
            fprintf(stderr, "dqsim: --dqd %s: need HOST:PORT\n", cli->dqd);
            return -1;
        }
        const char *h = cli->dqd;
        if (h[0] == '[' && hn >= 2 && h[hn - 1] == ']') {
            h++; /* [::1]:PORT */
            hn -= 2;
        }
        memcpy(a->host, h, hn);
        a->host[hn] = '\0';
        snprintf(a->port, sizeof a->port, "%s", colon + 1);
    }
    return 0;
}
