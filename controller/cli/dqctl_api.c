/*
 * dqctl_api.c: the dqctl subcommands on probes and wrappers (declared in dqctl_api.h):
 * status, probes, dq, enable, disable, set-timeout, qta, start, stop and delete. Each
 * parses its options, makes one or two requests (dqctl_call.c) and prints the API's
 * data object (--json) or a rendering for people (dqctl_render.c).
 */
#include "dqctl_api.h"
#include "dqctl_json.h"

#include <math.h>
#include <string.h>

#include "dqctl.h"

int dqctl_status_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help = "usage: dqctl status [--server URL] [--json]\n"
                "dqd's version, uptime, addresses, counters and wrappers.\n",
        .path = "/api/v1/status",
        .view = {.render = dqctl_render_status},
    };
    return dqctl_show_main(argc, argv, &cmd);
}

int dqctl_probes_main(int argc, char **argv) {
    static const struct dqctl_show cmd = {
        .help = "usage: dqctl probes [--server URL] [--json]\n"
                "Every probe dqd knows: enabled or not, dMax and bins, the count, quantiles and\n"
                "lost fraction of its last window with instances and how long ago that window\n"
                "ended (STALE when windows closed since without an instance of it: disabled or\n"
                "silent, its numbers are from before, not its present), and its QTA.\n",
        .path = "/api/v1/probes",
        .view =
            {
                .render = dqctl_render_probes,
                .not_list = "/api/v1/probes did not answer a list",
                .empty = "no probes yet",
            },
    };
    return dqctl_show_main(argc, argv, &cmd);
}

int dqctl_dq_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl dq PROBE [--kind observed|calculated] [--window latest|N] [--csv]\n"
        "                [--no-plot] [--server URL] [--json]\n"
        "A probe's ΔQ for one closed window (N = 0 the latest, 1 the one before, ...):\n"
        "counts, lost fraction, mean, quantiles, its QTA verdict and a CDF plot; --csv\n"
        "prints t_s,pdf,cdf per bin. Exit 1 when the window violates the probe's QTA.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv,
                             DQCTL_OPT_KIND | DQCTL_OPT_WINDOW | DQCTL_OPT_CSV | DQCTL_OPT_NO_PLOT,
                             1, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    char path[2048], suffix[128];
    snprintf(suffix, sizeof suffix, "/dq?kind=%s&window=%s", o.kind, o.window);
    json_t *dq = NULL, *summary = NULL;
    if (dqctl_probe_path(o.pos[0], suffix, path, sizeof path) < 0) {
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    rc = dqctl_api_call(&o, "GET", path, NULL, &dq);
    if (rc == DQCTL_EXIT_OK && dqctl_probe_path(o.pos[0], "", path, sizeof path) == 0) {
        rc = dqctl_api_call(&o, "GET", path, NULL, &summary);
    }
    if (rc == DQCTL_EXIT_OK) {
        const json_t *qta = json_object_get(summary, "qta");
        FILE *out = dqctl_out();
        if (o.json) {
            dqctl_print_json(dq);
        } else if (o.csv) {
            dqctl_render_dq_csv(out, dq);
        } else {
            dqctl_render_dq(out, dq, qta);
            if (!o.no_plot) {
                fputc('\n', out);
                dqctl_render_cdf_plot(out, dq, qta, 60, 11);
            }
        }
        double n = jnum(dq, "n");
        int empty = strcmp(o.kind, "observed") == 0 && !(n > 0);
        char why[256];
        if (json_is_object(qta) && !empty && dqctl_qta_check(dq, qta, why, sizeof why) == 0) {
            dqctl_complain_typed("problem", "%s: QTA %s", o.pos[0], why);
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(dq);
    json_decref(summary);
    return dqctl_end_cmd(rc);
}

/* PUT /api/v1/probes/NAME with body (?create=1 with --create); prints the summary line,
 * what the change did on every link and dqd's warnings (or the JSON). Exits 1 when the
 * change could not be applied on some link. */
static int put_probe(const struct dqctl_opts *o, const char *name, json_t *body, int say_links) {
    char path[2048];
    if (!body) {
        dqctl_complain("out of memory");
        return DQCTL_EXIT_USAGE;
    }
    if (dqctl_probe_path(name, o->create ? "?create=1" : "", path, sizeof path) < 0) {
        json_decref(body);
        return DQCTL_EXIT_USAGE;
    }
    json_t *data = NULL;
    int rc = dqctl_api_call(o, "PUT", path, body, &data);
    json_decref(body);
    if (rc == DQCTL_EXIT_OK) {
        const json_t *cmds = json_object_get(data, "commands");
        int missed = 0;
        if (o->json) {
            dqctl_print_json(data);
            for (size_t i = 0; i < json_array_size(cmds); i++) {
                missed += strcmp(jstr(json_array_get(cmds, i), "status", ""), "sent") != 0;
            }
        } else {
            char dmax[24], qta[256] = "none";
            dqctl_format_duration(jnum(data, "dmax_ms") / 1e3, dmax, sizeof dmax);
            if (json_is_object(json_object_get(data, "qta"))) {
                dqctl_format_qta(json_object_get(data, "qta"), qta, sizeof qta);
            }
            fprintf(dqctl_out(), "%s: %s in dqd, dmax %s, %.0f bins, QTA %s\n",
                    jstr(data, "name", name),
                    json_is_true(json_object_get(data, "enabled")) ? "enabled" : "disabled", dmax,
                    jnum(data, "bins"), qta);
            if (json_is_array(cmds) && (json_array_size(cmds) > 0 || say_links)) {
                missed = dqctl_render_commands(dqctl_out(), name, cmds);
            } else if (say_links && json_is_null(cmds)) {
                fprintf(dqctl_out(), "  it was %s already: nothing sent\n",
                        json_is_true(json_object_get(data, "enabled")) ? "enabled" : "disabled");
            }
        }
        const json_t *warnings = json_object_get(data, "warnings");
        for (size_t i = 0; i < json_array_size(warnings); i++) {
            const char *wtext = json_string_value(json_array_get(warnings, i));
            fprintf(dqctl_err(), "dqctl: warning: %s\n", wtext ? wtext : "?");
        }
        if (missed) {
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return rc;
}

static int enable_common(int argc, char **argv, int enable) {
    static const char help_on[] =
        "usage: dqctl enable PROBE [--create] [--server URL] [--json]\n"
        "Enables a probe: dqd sends set_timeout to every connected wrapper, which then\n"
        "reports it. Prints what happened on each wrapper link. PROBE must be known to\n"
        "dqd (in the diagram, or reported by a wrapper); --create registers a new name.\n"
        "Exit 1 when the send failed on some link (or it is not known to have reached a\n"
        "legacy wrapper: several on one host); 3 for a name dqd does not know.\n";
    static const char help_off[] =
        "usage: dqctl disable PROBE [--create] [--server URL] [--json]\n"
        "Disables a probe: dqd sends clear_timeout to every connected wrapper. A legacy\n"
        "wrapper has no clear_timeout: there the disable is recorded as not applied, the\n"
        "wrapper keeps reporting the probe, and dqctl says so link by link. --create\n"
        "registers a name dqd does not know yet, disabled.\n"
        "Exit 1 when it was not applied (or failed) on some link; 3 for a name dqd does\n"
        "not know (without --create).\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_CREATE, 1, 1, enable ? help_on : help_off, &o);
    if (rc >= 0) {
        return rc;
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:b}", "enabled", enable), 1));
}

int dqctl_enable_main(int argc, char **argv) {
    return enable_common(argc, argv, 1);
}

int dqctl_disable_main(int argc, char **argv) {
    return enable_common(argc, argv, 0);
}

int dqctl_set_timeout_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl set-timeout PROBE DURATION [--create] [--server URL] [--json]\n"
        "Sets a probe's dMax (its timeout and ΔQ horizon). A bare DURATION is\n"
        "milliseconds (250); a unit may follow: 250ms, 1.5s, 800us, 2m. dqd warns when a\n"
        "point of the probe's QTA then lies beyond dMax. --create registers a new name.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_CREATE, 2, 2, help, &o);
    if (rc >= 0) {
        return rc;
    }
    double s = 0;
    if (dqctl_parse_duration(o.pos[1], 1e-3, &s) < 0 || !(s > 0)) {
        dqctl_complain("set-timeout: \"%s\" is not a duration > 0 (e.g. 250, 250ms, 1.5s)",
                       o.pos[1]);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:f}", "dmax_ms", s * 1e3), 0));
}

int dqctl_qta_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl qta PROBE [P@T ...] [--max-lost X] [--create] [--server URL] [--json]\n"
        "       dqctl qta PROBE --clear\n"
        "Sets a probe's quantitative timeliness agreement: P(delay <= T) >= P at each\n"
        "point, and at most X of the instances lost (failed or timed out). A bare T is\n"
        "milliseconds (0.95@250); a unit may follow (ns, us, ms, s, m: 0.95@0.25s). P and\n"
        "X are fractions or percentages. X defaults to 1 - P of the last point (the bound\n"
        "the points already imply). A point beyond the probe's dMax is accepted with a\n"
        "warning. Without points, shows the current QTA; --clear removes it. Example:\n"
        "  dqctl qta checkout 0.5@100 0.95@250ms --max-lost 0.01\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_MAX_LOST | DQCTL_OPT_CLEAR | DQCTL_OPT_CREATE, 1,
                             DQCTL_MAX_QTA_POINTS + 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    if (o.clear) {
        if (o.npos > 1 || o.max_lost) {
            dqctl_complain("qta: --clear takes no points and no --max-lost");
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        return dqctl_end_cmd(put_probe(&o, o.pos[0], json_pack("{s:n}", "qta"), 0));
    }
    if (o.npos == 1) {
        if (o.max_lost) {
            dqctl_complain("qta: --max-lost needs at least one P@T point");
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        char path[2048];
        json_t *data = NULL;
        if (dqctl_probe_path(o.pos[0], "", path, sizeof path) < 0) {
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        rc = dqctl_api_call(&o, "GET", path, NULL, &data);
        if (rc == DQCTL_EXIT_OK) {
            const json_t *q = json_object_get(data, "qta");
            if (o.json) {
                dqctl_print_json(q ? q : json_null());
            } else if (json_is_object(q)) {
                char buf[256];
                dqctl_format_qta(q, buf, sizeof buf);
                fprintf(dqctl_out(), "%s: QTA %s\n", o.pos[0], buf);
            } else {
                fprintf(dqctl_out(), "%s: no QTA\n", o.pos[0]);
            }
        }
        json_decref(data);
        return dqctl_end_cmd(rc);
    }
    char err[256];
    json_t *body = dqctl_qta_body(o.pos + 1, o.npos - 1, o.max_lost, err, sizeof err);
    if (!body) {
        dqctl_complain("qta: %s", err);
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    return dqctl_end_cmd(put_probe(&o, o.pos[0], body, 0));
}

static int wrapper_common(int argc, char **argv, const char *verb) {
    static const char help_start[] =
        "usage: dqctl start [--server URL] [--json]\n"
        "Tells every connected wrapper to start (the system under test's stub).\n"
        "Exits 1 when no wrapper received the command.\n";
    static const char help_stop[] = "usage: dqctl stop [--server URL] [--json]\n"
                                    "Tells every connected wrapper to stop.\n"
                                    "Exits 1 when no wrapper received the command.\n";
    int start = strcmp(verb, "start") == 0;
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 0, 0, start ? help_start : help_stop, &o);
    if (rc >= 0) {
        return rc;
    }
    json_t *data = NULL;
    rc = dqctl_api_call(&o, "POST", start ? "/api/v1/wrapper/start" : "/api/v1/wrapper/stop", NULL,
                        &data);
    if (rc == DQCTL_EXIT_OK) {
        double sent = jnum(data, "sent_to");
        if (o.json) {
            dqctl_print_json(data);
        } else {
            fprintf(dqctl_out(), "%s sent to %.0f wrapper(s); running: %s\n", verb,
                    isnan(sent) ? 0 : sent,
                    json_is_true(json_object_get(data, "running")) ? "yes" : "no");
        }
        double muted = jnum(data, "not_applied");
        if (!(sent > 0) && muted > 0) {
            dqctl_complain_typed("problem",
                                 "%s: no wrapper was told to %s: the %.0f connected are legacy "
                                 "connections, which dqd does not write to (legacy_commands is "
                                 "off; the command is recorded not_applied)",
                                 verb, verb, muted);
            rc = DQCTL_EXIT_PROBLEM;
        } else if (!(sent > 0)) {
            dqctl_complain_typed(
                "problem", "%s: no wrapper is connected, so nothing was told to %s", verb, verb);
            rc = DQCTL_EXIT_PROBLEM;
        }
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

int dqctl_start_main(int argc, char **argv) {
    return wrapper_common(argc, argv, "start");
}

int dqctl_stop_main(int argc, char **argv) {
    return wrapper_common(argc, argv, "stop");
}

int dqctl_delete_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl delete PROBE [--server URL] [--json]\n"
        "Deletes a probe dqd knows (DELETE /api/v1/probes/PROBE): its settings, windows and\n"
        "triggers go; an enabled probe is disabled first, and dqctl says what that did on\n"
        "each wrapper link. Refused for a node of the loaded diagram (change the diagram)\n"
        "and for a probe an open investigation holds (dqctl diagnose --abort ID first). A\n"
        "wrapper that still reports the probe registers it again at its next instance.\n"
        "Exit 1 when it was deleted but the disable was not applied on some link; 3 when\n"
        "dqd refused (a diagram node, an investigated probe, an unknown name).\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, 0, 1, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    char path[2048];
    if (dqctl_probe_path(o.pos[0], "", path, sizeof path) < 0) {
        return dqctl_end_cmd(DQCTL_EXIT_USAGE);
    }
    json_t *data = NULL;
    rc = dqctl_api_call(&o, "DELETE", path, NULL, &data);
    if (rc == DQCTL_EXIT_OK) {
        const json_t *cmds = json_object_get(data, "commands");
        int missed = 0;
        if (o.json) {
            dqctl_print_json(data);
            for (size_t i = 0; i < json_array_size(cmds); i++) {
                missed += strcmp(jstr(json_array_get(cmds, i), "status", ""), "sent") != 0;
            }
        } else {
            FILE *out = dqctl_out();
            double seen = jnum(data, "instances"), trig = jnum(data, "triggers_removed");
            fprintf(out,
                    "%s deleted (%.0f instance%s seen since dqd started, %.0f trigger%s "
                    "removed)\n",
                    o.pos[0], isnan(seen) ? 0 : seen, seen == 1 ? "" : "s", isnan(trig) ? 0 : trig,
                    trig == 1 ? "" : "s");
            if (json_is_true(json_object_get(data, "was_enabled"))) {
                fprintf(out, "  it was enabled, so it was disabled first:\n");
                missed = dqctl_render_commands(out, o.pos[0], cmds);
            }
            const char *note = jstr(data, "note", NULL);
            if (note) {
                fprintf(out, "  note: %s\n", note);
            }
        }
        rc = missed ? DQCTL_EXIT_PROBLEM : DQCTL_EXIT_OK;
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}

int dqctl_api_main(const char *cmd, int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } table[] = {
        {"status", dqctl_status_main},   {"probes", dqctl_probes_main},
        {"dq", dqctl_dq_main},           {"enable", dqctl_enable_main},
        {"disable", dqctl_disable_main}, {"set-timeout", dqctl_set_timeout_main},
        {"qta", dqctl_qta_main},         {"start", dqctl_start_main},
        {"stop", dqctl_stop_main},       {"delete", dqctl_delete_main},
        {"diagram", dqctl_diagram_main},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(cmd, table[i].name) == 0) {
            return table[i].run(argc, argv);
        }
    }
    dqctl_complain("unknown command `%s`; see dqctl --help", cmd);
    return DQCTL_EXIT_USAGE;
}
