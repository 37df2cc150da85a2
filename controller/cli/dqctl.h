/*
 * dqctl.h: the subcommands of dqctl, the command-line client of dqd.
 *
 * Each subcommand is one function with main()'s signature, registered in the table in
 * dqctl_main.c; argv[0] is the subcommand's name. Exit codes are shared by every
 * subcommand (docs/api.md, and DQCTL_EXIT_TABLE in every command's --help), with the
 * message of any other than 0 and 1 on stderr.
 */
#ifndef DQCTL_H
#define DQCTL_H

enum dqctl_exit {
    DQCTL_EXIT_OK = 0,         /* success; for a diagnosis: healthy */
    DQCTL_EXIT_PROBLEM = 1,    /* the answer is a problem found */
    DQCTL_EXIT_USAGE = 2,      /* bad arguments or input (a .dq model's error): nothing done */
    DQCTL_EXIT_API = 3,        /* dqd cannot be reached, or refused the request */
    DQCTL_EXIT_NO_VERDICT = 4, /* an investigation ended without a verdict: inconclusive,
                                  aborted, or --timeout passed before it ended */
};

/* The exit codes as every command's --help and `dqctl --help` print them (docs/api.md
 * has the same table; a test compares them). */
#define DQCTL_EXIT_TABLE                                                                           \
    "Exit status, the same for every command:\n"                                                   \
    "  0  success; for a diagnosis: healthy\n"                                                     \
    "  1  a problem was found (what that is for this command is said above)\n"                     \
    "  2  usage: bad arguments or input; nothing was asked of dqd\n"                               \
    "  3  dqd cannot be reached, or it refused the request (an unknown probe, …)\n"              \
    "  4  an investigation ended without a verdict: inconclusive, aborted, or timed out\n"

/* `dqctl model FILE.dq --set NAME=DIST …`: the offline what-if calculator. */
int dqctl_model_main(int argc, char **argv);

#endif /* DQCTL_H */
