/*
 * dqctl_main.c: dqctl's entry point: global help and the subcommand dispatch table.
 *
 * Adding a subcommand is one row in `commands` (name, one-line summary, entry point
 * declared in dqctl.h); help, `dqctl help NAME` and unknown-command errors all come
 * from the table.
 */
#include "dqctl.h"
#include "dqctl_api.h"

#include <stdio.h>
#include <string.h>

struct dqctl_command {
    const char *name;    /* the word after dqctl */
    const char *summary; /* one line for `dqctl --help` */
    int (*run)(int argc, char **argv);
};

static const struct dqctl_command commands[] = {
    {"model", "offline what-if: a .dq model's end-to-end ΔQ from its parts' ΔQs (no daemon)",
     dqctl_model_main},
    {"status", "dqd's version, addresses, counters and wrappers", dqctl_status_main},
    {"probes", "every probe: state, dMax, last window's quantiles, QTA", dqctl_probes_main},
    {"dq", "a probe's ΔQ for a window: table, CDF plot, CSV; exit 1 if its QTA fails",
     dqctl_dq_main},
    {"enable", "enable a probe (the wrappers start reporting it)", dqctl_enable_main},
    {"disable", "disable a probe", dqctl_disable_main},
    {"set-timeout", "set a probe's dMax: set-timeout PROBE MS", dqctl_set_timeout_main},
    {"qta", "set, show or clear a probe's QTA: qta PROBE 0.95@250ms …", dqctl_qta_main},
    {"start", "tell the connected wrappers to start", dqctl_start_main},
    {"stop", "tell the connected wrappers to stop", dqctl_stop_main},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out, "usage: dqctl [--help] COMMAND [ARGS…]\n"
                 "\n"
                 "The command-line client of dqd, the adaptive instrumentation controller.\n"
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
                 "`dqctl COMMAND --help` (or `dqctl help COMMAND`) describes one command.\n"
                 "Exit status: 0 success, 1 a problem was found, 2 usage, model or connection "
                 "error.\n");
}

static const struct dqctl_command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return DQCTL_EXIT_USAGE;
    }
    const char *word = argv[1];
    if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0) {
        usage(stdout);
        return DQCTL_EXIT_OK;
    }
    if (strcmp(word, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return DQCTL_EXIT_OK;
        }
        const struct dqctl_command *c = find_command(argv[2]);
        if (!c) {
            fprintf(stderr, "dqctl: unknown command `%s`; see dqctl --help\n", argv[2]);
            return DQCTL_EXIT_USAGE;
        }
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->run(2, help_argv);
    }
    const struct dqctl_command *c = find_command(word);
    if (!c) {
        fprintf(stderr, "dqctl: unknown command `%s`; see dqctl --help\n", word);
        return DQCTL_EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
