/*
 * dqctl.h: the subcommands of dqctl, the command-line client of dqd.
 *
 * Each subcommand is one function with main()'s signature, registered in the table in
 * dqctl_main.c; argv[0] is the subcommand's name. Exit codes are shared by every
 * subcommand (docs/api.md): 0 success, 1 when the answer is a problem found,
 * 2 on a usage, model or connection error, with the message on stderr.
 */
#ifndef DQCTL_H
#define DQCTL_H

enum dqctl_exit {
    DQCTL_EXIT_OK = 0,
    DQCTL_EXIT_PROBLEM = 1,
    DQCTL_EXIT_USAGE = 2,
};

/* `dqctl model FILE.dq --set NAME=DIST …`: the offline what-if calculator. */
int dqctl_model_main(int argc, char **argv);

#endif /* DQCTL_H */
