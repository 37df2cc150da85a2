/*
 * dqctl_main.c: dqctl's entry point: global options, global help and the subcommand
 * dispatch table.
 *
 * Adding a subcommand is one row in `commands` (name, one-line summary, entry point
 * declared in dqctl.h, dqctl_api.h or dqctl_log.h); help, `dqctl help NAME` and
 * unknown-command errors all come from the table. --server and --json may come before
 * the subcommand (`dqctl --server URL status`): they are passed on to it right after its
 * name, so the same option after the subcommand still wins (the parser keeps the last).
 */
#include "dqctl.h"
#include "dqctl_api.h"
#include "dqctl_log.h"
#include "dqctl_watch.h"
#include "dqctl_safe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DQ_VERSION /* set by CMake from the project's version */
#define DQ_VERSION "unknown"
#endif

struct dqctl_command {
    const char *name;    /* the word after dqctl */
    const char *summary; /* one line for `dqctl --help` */
    int (*run)(int argc, char **argv);
    int offline; /* 1: needs no daemon, so a global --server is not passed on */
};

static const struct dqctl_command commands[] = {
    {"model", "what-if: a .dq model's end-to-end ΔQ from its parts' ΔQs, given or measured",
     dqctl_model_main, 0},
    {"status", "dqd's version, addresses, counters and wrappers", dqctl_status_main, 0},
    {"probes", "every probe: state, dMax, last window's quantiles, QTA", dqctl_probes_main, 0},
    {"dq", "a probe's ΔQ for a window: table, CDF plot, CSV; exit 1 if its QTA fails",
     dqctl_dq_main, 0},
    {"enable", "enable a probe (the wrappers start reporting it); --create for a new name",
     dqctl_enable_main, 0},
    {"disable", "disable a probe; says what each wrapper link did with it", dqctl_disable_main, 0},
    {"delete", "delete a probe dqd knows (not a diagram node, not one being investigated)",
     dqctl_delete_main, 0},
    {"set-timeout", "set a probe's dMax: set-timeout PROBE 250 (ms) or 1.5s",
     dqctl_set_timeout_main, 0},
    {"qta", "set, show or clear a probe's QTA: qta PROBE 0.95@250 (ms) …", dqctl_qta_main, 0},
    {"diagram",
     "the loaded outcome diagram; `diagram FILE.dq` loads one, `diagram --infer` writes one "
     "from OTLP spans",
     dqctl_diagram_main, 0},
    {"start", "tell the connected wrappers to start", dqctl_start_main, 0},
    {"stop", "tell the connected wrappers to stop", dqctl_stop_main, 0},
    {"diagnose", "find where a problem at a node comes from; --wait follows it to a verdict",
     dqctl_diagnose_main, 0},
    {"why", "why a probe is enabled: the hypothesis chain, its numbers, the commands sent",
     dqctl_why_main, 0},
    {"log", "investigations; `log ID`: one investigation's hypothesis tree", dqctl_log_main, 0},
    {"snapshots", "the snapshots triggers stored when they fired", dqctl_snapshots_main, 0},
    {"snapshot", "one snapshot's ΔQs: table, --csv or --json", dqctl_snapshot_main, 0},
    {"trigger", "set a probe's trigger: trigger PROBE KIND --threshold X …", dqctl_trigger_main, 0},
    {"triggers", "the triggers and their state; exit 1 if one is fired", dqctl_triggers_main, 0},
    {"watch", "dqd's live events as lines: windows, probes, triggers, steps, verdicts",
     dqctl_watch_main, 0},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out, "usage: dqctl [--server URL] [--json] [--help] [--version] COMMAND [ARGS…]\n"
                 "\n"
                 "The command-line client of dqd, the adaptive instrumentation controller.\n"
                 "--server URL (default: $DQD_URL, else " DQCTL_DEFAULT_SERVER ") and --json\n"
                 "may come before or after COMMAND. A dqd with an api_token wants it on\n"
                 "every change (and on reads from beyond loopback): dqctl sends $DQD_TOKEN,\n"
                 "else the first line of the file $DQD_TOKEN_FILE names.\n"
                 "\n"
                 "commands:\n");
    int width = 0; /* the longest name sets the column, whatever rows are added */
    for (size_t i = 0; i < N_COMMANDS; i++) {
        int len = (int)strlen(commands[i].name);
        width = len > width ? len : width;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        fprintf(out, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
    }
    fprintf(out, "\n"
                 "Durations: a bare number is milliseconds everywhere (set-timeout 250, qta\n"
                 "P@250, diagnose --timeout 90000, watch --for 30000); a unit may follow (us,\n"
                 "ms, s, m: 800us, 0.25s, 90s). Only in `model`'s DISTs, as in the .dq language,\n"
                 "a bare number is seconds (wait(0.25)); units work there too. Output writes\n"
                 "every duration as a value and a unit: 30.6 µs, 1024 ms, 12.5 s.\n"
                 "With --json, errors are one line of JSON on stderr: {\"status\":\"error\",\n"
                 "\"errorType\":…, \"error\":…}.\n"
                 "\n"
                 "`dqctl COMMAND --help` (or `dqctl help COMMAND`) describes one command.\n"
                 "\n" DQCTL_EXIT_TABLE);
}

static const struct dqctl_command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

/* The global options before the subcommand; argv[*next] is the first other word. */
struct globals {
    const char *server; /* NULL when not given */
    int json;
    int help;
    int version;
};

static int parse_globals(int argc, char **argv, struct globals *g, int *next) {
    memset(g, 0, sizeof *g);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            g->help = 1;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            g->version = 1;
        } else if (strcmp(a, "--json") == 0) {
            g->json = 1;
        } else if (strcmp(a, "--server") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dqctl: option --server needs a value\n");
                return -1;
            }
            g->server = argv[++i];
        } else if (strncmp(a, "--server=", 9) == 0) {
            g->server = a + 9;
        } else {
            fprintf(stderr,
                    "dqctl: unknown option %s before the command (only --server, --json, "
                    "--help and --version go there); see dqctl --help\n",
                    a);
            return -1;
        }
    }
    *next = i;
    return 0;
}

static void close_safe_stdio(void) {
    fclose(stdout); /* writes out a UTF-8 sequence the last write cut (escaped) */
    fclose(stderr);
}

int main(int argc, char **argv) {
    struct globals g;
    int first;
    /* text from dqd (and from whoever reached it) must not drive the terminal */
    if (dqctl_safe_stdio() == 0) {
        atexit(close_safe_stdio);
    }
    if (parse_globals(argc, argv, &g, &first) < 0) {
        return DQCTL_EXIT_USAGE;
    }
    if (g.version) {
        printf("dqctl %s\n", DQ_VERSION);
        return DQCTL_EXIT_OK;
    }
    if (g.help && first >= argc) {
        usage(stdout);
        return DQCTL_EXIT_OK;
    }
    dqctl_set_json_errors(g.json);
    if (first >= argc) {
        usage(stderr);
        return DQCTL_EXIT_USAGE;
    }
    const char *word = argv[first];
    if (strcmp(word, "help") == 0) {
        if (first + 1 >= argc) {
            usage(stdout);
            return DQCTL_EXIT_OK;
        }
        const struct dqctl_command *c = find_command(argv[first + 1]);
        if (!c) {
            dqctl_complain_typed("usage", "unknown command `%s`; see dqctl --help",
                                 argv[first + 1]);
            return DQCTL_EXIT_USAGE;
        }
        char *help_argv[] = {argv[first + 1], "--help", NULL};
        return c->run(2, help_argv);
    }
    const struct dqctl_command *c = find_command(word);
    if (!c) {
        dqctl_complain_typed("usage", "unknown command `%s`; see dqctl --help", word);
        return DQCTL_EXIT_USAGE;
    }
    /* the subcommand's argv: its name, the global options, then its own words */
    int rest = argc - first - 1;
    char **sub = calloc((size_t)rest + 6, sizeof *sub);
    if (!sub) {
        fprintf(stderr, "dqctl: out of memory\n");
        return DQCTL_EXIT_USAGE;
    }
    int n = 0;
    sub[n++] = argv[first];
    if (g.help) {
        sub[n++] = "--help";
    }
    if (g.server && !c->offline) {
        sub[n++] = "--server";
        sub[n++] = (char *)g.server;
    }
    if (g.json) {
        sub[n++] = "--json";
    }
    for (int i = 0; i < rest; i++) {
        sub[n++] = argv[first + 1 + i];
    }
    sub[n] = NULL;
    int rc = c->run(n, sub);
    free(sub);
    return rc;
}
