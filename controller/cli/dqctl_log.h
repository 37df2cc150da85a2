/*
 * dqctl_log.h: the dqctl subcommands of the adaptive loop (docs/api.md, docs/architecture.md
 * §5-§7): start a diagnosis and follow it, explain why a probe is enabled, read the
 * hypothesis log, the trigger snapshots, and set or list triggers. Their pure parts
 * (renderers of the API's answers, the trigger body, the exit code of a verdict) are
 * exposed for tests: those of snapshots and triggers are in dqctl_snap.c, the others and
 * the subcommands in dqctl_log.c.
 *
 * Entry points have main()'s signature with argv[0] the subcommand's name and return
 * the exit codes of dqctl.h. They share the options and plumbing of dqctl_api.h
 * (--server, --json, --help; output through dqctl_api_set_output's streams).
 */
#ifndef DQCTL_LOG_H
#define DQCTL_LOG_H

#include <stdio.h>

#include <jansson.h>

#define DQCTL_DIAGNOSE_TIMEOUT_S 300.0 /* --wait gives up after this by default */

/* ---- subcommands (rows of the table in dqctl_main.c) -------------------------------- */

int dqctl_diagnose_main(int argc, char **argv);  /* POST /api/v1/diagnose, then follow */
int dqctl_why_main(int argc, char **argv);       /* GET /api/v1/why/PROBE */
int dqctl_log_main(int argc, char **argv);       /* GET /api/v1/investigations[/ID] */
int dqctl_snapshots_main(int argc, char **argv); /* GET /api/v1/snapshots */
int dqctl_snapshot_main(int argc, char **argv);  /* GET /api/v1/snapshots/ID */
int dqctl_trigger_main(int argc, char **argv);   /* PUT /api/v1/probes/P/triggers/KIND */
int dqctl_triggers_main(int argc, char **argv);  /* GET /api/v1/triggers or …/P/triggers */

/* How often `diagnose --wait` polls dqd (default 0.5 s); tests make it shorter. */
void dqctl_log_set_poll_interval(double seconds);

/* ---- pure parts ------------------------------------------------------------------- */

/*
 * The exit code of a finished investigation's verdict: 1 (a problem was found) for
 * "localized", "diffuse" and "overload", 0 for "healthy", 4 (DQCTL_EXIT_NO_VERDICT) for
 * anything else: "inconclusive" (it ended without pinning a problem down), "aborted",
 * unknown, NULL.
 */
int dqctl_verdict_exit(const char *verdict);

/* A verdict's reason without its leading "VERDICT at NODE: " ("localized at b: b holds
 * 81 %" → "b holds 81 %"), for a line that names the verdict and its node already. */
const char *dqctl_strip_verdict(const char *reason);

/* "localized at fb and sb", "healthy at root": a verdict and where, every culprit of the
 * evidence object ev named when there are several, else node (NULL: none). */
void dqctl_verdict_words(const char *verdict, const char *node, const json_t *ev, char *buf,
                         size_t cap);

/* One progress line of `diagnose --wait` for a hypothesis object of the API: time,
 * action, node, the probes it names and the reason from its stats. */
void dqctl_render_progress(FILE *out, const json_t *hyp);

/* The verdict of a closed investigation (GET /api/v1/investigations/ID's data): verdict
 * and node, the reason, the focus's numbers and a table of the children's contributions. */
void dqctl_render_verdict(FILE *out, const json_t *inv);

/* `dqctl why`: the sentences, the chain as an indented list with its numbers (root
 * first), the disabling hypothesis if any, and the commands sent for the probe. */
void dqctl_render_why(FILE *out, const json_t *why);

/* `dqctl log`: a table of investigations (the list answer). */
void dqctl_render_investigations(FILE *out, const json_t *list);

/* `dqctl log ID`: the header, the hypothesis tree (indented by parent) and the commands. */
void dqctl_render_investigation(FILE *out, const json_t *inv);

/* `dqctl snapshots`: a table of the list answer. */
void dqctl_render_snapshots(FILE *out, const json_t *list);

/* `dqctl snapshot ID`: the header and per ΔQ its window, lost mass, mean and quantiles
 * (computed from the pdf on the grid: the first grid time where the CDF reaches p). */
void dqctl_render_snapshot(FILE *out, const json_t *snap);

/* `dqctl snapshot ID --csv`: "probe,kind,window_start,window_end,bin,time_s,pdf,cdf", one
 * row per bin of every ΔQ (cdf[i] = P(delay <= i·bin_width)). */
void dqctl_render_snapshot_csv(FILE *out, const json_t *snap);

/* `dqctl triggers`: a table of trigger objects. Returns how many are enabled and fired. */
int dqctl_render_triggers(FILE *out, const json_t *list);

/* 1 when k is a trigger kind dqd has: qta, load, lost, divergence, cv. */
int dqctl_trigger_kind_known(const char *k);

/*
 * The PUT body of `dqctl trigger`: the options given (threshold text: a number ≥ 0, a
 * percentage, or "default" for null; fire_after / clear_after: integers 1…1000; NULL when
 * absent) over the current trigger object (NULL when there is none), so what is not
 * given keeps its value; "enabled" is !disable. Returns a new reference, or NULL with a
 * message in err.
 */
json_t *dqctl_trigger_body(const json_t *current, const char *threshold, const char *fire_after,
                           const char *clear_after, int disable, char *err, size_t err_cap);

#endif /* DQCTL_LOG_H */
