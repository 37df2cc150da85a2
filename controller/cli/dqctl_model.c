/*
 * dqctl_model.c: `dqctl model`, the offline what-if calculator.
 *
 * Loads a .dq model, gives some of its nodes a ΔQ from a distribution (--set NAME=DIST,
 * the language of dqctl_dist.h), runs the engine's evaluator and prints, for each root
 * (or each --node), the calculated ΔQ: quantiles, mean, lost mass and a terminal CDF plot,
 * or one JSON object per node. This is the engine used directly; dqd is asked only for
 * the measured DISTs (probe:, calculated:, snapshot:), after the model and its names
 * have been checked, with dqctl's usual --server / $DQD_URL / $DQD_TOKEN.
 *
 * The grid: every node is evaluated on one grid (width 2^k ms, N bins). Unless
 * --bin-width is given, it is chosen from what the given distributions need resolved
 * (dqctl_dist_hint: reach, density, point masses, measured bins), combined along the
 * diagram's operators by the engine (dq_hint_*), then dq_grid_choose: fine enough for the
 * sharpest reported density, reaching every reported node's support, no finer than the
 * coarsest measured ΔQ's bins (the engine's operators would bring finer operands to that
 * width anyway). When 4096 bins cannot do both and the resolution's horizon cuts more
 * than 1e-3 of a reported node's mass, the model is evaluated again on the grid that
 * reaches the support. The rule is documented in docs/outcome-diagrams.md.
 */
#include "dqctl.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diagram.h"
#include "dq.h"
#include "dqctl_api.h"
#include "dqctl_dist.h"

#define MODEL_MAX_FILE (16u << 20)  /* bytes of a .dq file */
#define MODEL_MAX_SAMPLES 10000000u /* lines of one samples file */
#define MODEL_MAX_LINE 1024         /* bytes of one samples line */
#define PLOT_COLS 60
#define PLOT_ROWS 10

static const double report_p[] = {0.5, 0.9, 0.95, 0.99};
static const char *const report_key[] = {"0.5", "0.9", "0.95", "0.99"};
#define N_REPORT_P (sizeof report_p / sizeof report_p[0])

/* One --set: the node and the distribution it behaves like. */
struct setting {
    int node;
    const char *name;        /* owned copy of NAME */
    const char *text;        /* DIST as given (points into argv) */
    struct dqctl_dist *dist; /* parsed, owned */
    char note[512];          /* measured: what dqd sent (window, instances, grid) */
    struct dq_hint hint;     /* what a grid must resolve about it */
    struct dq *dq;
};

struct model_args {
    const char *file;
    const char **sets;
    size_t n_sets;
    const char **nodes;
    size_t n_nodes;
    double bin_width; /* 0 when not given */
    int bins;         /* 0 when not given */
    int json;
    const char *server; /* --server, NULL when not given */
};

/* A duration of a result, in the one output style with six significant digits (the
 * digits of a calculation matter): "37.0326 ms", "3.554 s". T(x) is valid to the end of the
 * statement it is in. */
struct dur6 {
    char s[DQ_DURATION_TEXT];
};
static struct dur6 dur6(double x) {
    struct dur6 d;
    dq_format_duration_sig(x, 6, d.s, sizeof d.s);
    return d;
}
#define T(x) (dur6(x).s)

/* A fraction (lost mass) to six significant digits, never an exponent: "0.0000032". */
struct num6 {
    char s[48];
};
static struct num6 num6(double x) {
    struct num6 n;
    dq_format_number(x, 6, n.s, sizeof n.s);
    return n;
}
#define F(x) (num6(x).s)

static void model_usage(FILE *out) {
    fprintf(out,
            "usage: dqctl model FILE.dq --set NAME=DIST [--set NAME=DIST …] [--node NAME]…\n"
            "                   [--bin-width SECONDS] [--bins N] [--server URL] [--json]\n"
            "\n"
            "What would the end-to-end ΔQ be if these parts behaved like this? Loads an\n"
            "outcome diagram, gives the named nodes the distributions below, and prints\n"
            "each root's calculated ΔQ (or each --node's): quantiles, mean, lost mass and\n"
            "a CDF plot. Times are in seconds, or carry a unit (wait(10ms), uniform(5ms,20ms),\n"
            "shift(D,-2ms); ns, us, ms, s, m). Only measured DISTs need a running dqd.\n"
            "\n"
            "DIST is one of:\n"
            "  wait(T)            always exactly T\n"
            "  uniform(A,B)       uniform on [A, B], 0 <= A <= B\n"
            "  exponential(RATE)  exponential with RATE per second (mean 1/RATE)\n"
            "  never              never completes (all mass lost)\n"
            "  samples(PATH)      one duration per line; `fail` or `timeout` lines count as\n"
            "                     lost; blank lines and lines starting with # are skipped\n"
            "measured by dqd (NAME a probe; its own bins and lost mass):\n"
            "  probe:NAME         the observed ΔQ of NAME's latest closed window\n"
            "  probe:NAME@W       the window W back (0 or `latest` = the latest, as dq --window)\n"
            "  calculated:NAME[@W]  the ΔQ dqd calculated for NAME from the diagram\n"
            "  snapshot:ID:NAME   NAME's observed ΔQ in snapshot ID: its newest window after\n"
            "                     the trigger fired; snapshot:ID:NAME:before the newest before\n"
            "what-if transformations, of any DIST:\n"
            "  scale(DIST,K)      every delay times K >= 0: K = 0.5 is twice as fast\n"
            "  shift(DIST,S)      every delay plus S seconds; S < 0 is faster (what would\n"
            "                     fall below 0 is put at 0)\n"
            "  Each bin's mass is spread evenly over the delays it stands for (its bin\n"
            "  width), mapped, and shared among the result's bins in proportion to the\n"
            "  overlap; mass mapped past the horizon is lost; lost mass stays lost.\n"
            "  They nest: shift(scale(probe:db,0.5),0.002).\n"
            "\n"
            "options:\n"
            "  --set NAME=DIST    give node NAME (outcome, definition or operator) this ΔQ;\n"
            "                     a node given a ΔQ is used as is by its parents\n"
            "  --node NAME        report this node instead of the roots (repeatable)\n"
            "  --bin-width S      bin width: 0.001 s times a power of two (2^-10 … 2^10)\n"
            "  --bins N           number of bins, 1 … 4096 (default: as the model needs)\n"
            "  --server URL       dqd for measured DISTs (default: $DQD_URL, else\n"
            "                     " DQCTL_DEFAULT_SERVER "); $DQD_TOKEN is sent when set\n"
            "  --json             one JSON object per reported node, one per line\n"
            "  -h, --help         this help\n"
            "\n"
            "Without --bin-width the grid is chosen from the distributions: bins narrow\n"
            "enough for the sharpest reported density, reaching every reported node's\n"
            "support (up to 4096 bins), no finer than the measured ΔQs' bins (times K under\n"
            "scale); a tail cut at the horizon is reported as such. cdf[i] and quantiles are\n"
            "read at the bins' right edges (docs/engine.md).\n"
            "\n"
            "Durations: unlike dqctl's other commands, where a bare number is milliseconds,\n"
            "a bare number in a DIST is seconds, as in the .dq language (wait(0.25) is\n"
            "250 ms); a unit makes it plain (wait(250ms)). A measured window with fewer\n"
            "instances than dqd's min_instances is refused (its ΔQ would stand for too few);\n"
            "the output names the window each measured DIST used.\n"
            "\n" DQCTL_EXIT_TABLE
            "Here 2 is also a model error or a measured window too thin, and 3 an unknown\n"
            "probe or snapshot, a probe with no closed window yet, or dqd unreachable.\n"
            "\n"
            "examples:\n"
            "  dqctl model pipeline.dq --set worker_1='uniform(1,2)' "
            "--set worker_2='uniform(1,2)'\n"
            "  dqctl model shop.dq --set front=probe:front --set db='scale(probe:db,0.5)'\n");
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(dqctl_err(), "dqctl model: ");
    vfprintf(dqctl_err(), fmt, ap);
    fprintf(dqctl_err(), "\nsee dqctl model --help\n");
    va_end(ap);
    return DQCTL_EXIT_USAGE;
}

/* A finite number filling the whole of s (surrounding spaces allowed). */
static int parse_number(const char *s, size_t len, double *out) {
    char buf[64];
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
        len--;
    }
    if (len == 0 || len >= sizeof buf) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || end != buf + len || !isfinite(v)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Reads a samples file into the leaf st (durations, failures, timeouts). */
static int read_samples(const char *path, struct dqctl_dist *st) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(dqctl_err(), "dqctl model: cannot open samples file %s: %s\n", path,
                strerror(errno));
        return DQCTL_EXIT_USAGE;
    }
    size_t cap = 0;
    char line[MODEL_MAX_LINE + 2];
    long lineno = 0;
    int rc = DQCTL_EXIT_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len > MODEL_MAX_LINE) {
            fprintf(dqctl_err(), "dqctl model: %s:%ld: line longer than %d bytes\n", path, lineno,
                    MODEL_MAX_LINE);
            rc = DQCTL_EXIT_USAGE;
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
                           line[len - 1] == '\t')) {
            line[--len] = '\0';
        }
        char *s = line;
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        if (*s == '\0' || *s == '#') {
            continue;
        }
        if (st->count + st->n_failed + st->n_timeout >= MODEL_MAX_SAMPLES) {
            fprintf(dqctl_err(), "dqctl model: %s: more than %u samples\n", path,
                    MODEL_MAX_SAMPLES);
            rc = DQCTL_EXIT_USAGE;
            break;
        }
        if (strcasecmp(s, "fail") == 0) {
            st->n_failed++;
            continue;
        }
        if (strcasecmp(s, "timeout") == 0) {
            st->n_timeout++;
            continue;
        }
        double v;
        if (parse_number(s, strlen(s), &v) < 0 || v < 0.0) {
            fprintf(dqctl_err(),
                    "dqctl model: %s:%ld: expected a duration in seconds (≥ 0), `fail` or "
                    "`timeout`, found `%.40s`\n",
                    path, lineno, s);
            rc = DQCTL_EXIT_USAGE;
            break;
        }
        if (st->count == cap) {
            cap = cap ? cap * 2 : 1024;
            double *d = realloc(st->durations, cap * sizeof *d);
            if (!d) {
                fprintf(dqctl_err(), "dqctl model: out of memory reading %s\n", path);
                rc = DQCTL_EXIT_USAGE;
                break;
            }
            st->durations = d;
        }
        st->durations[st->count++] = v;
    }
    if (rc == DQCTL_EXIT_OK && ferror(f)) {
        fprintf(dqctl_err(), "dqctl model: error reading %s\n", path);
        rc = DQCTL_EXIT_USAGE;
    }
    fclose(f);
    if (rc == DQCTL_EXIT_OK && st->count + st->n_failed + st->n_timeout == 0) {
        fprintf(dqctl_err(), "dqctl model: %s holds no sample\n", path);
        rc = DQCTL_EXIT_USAGE;
    }
    return rc;
}

/* Parses DIST into st and reads its samples file, if any. Returns 0 or prints the
 * reason and returns DQCTL_EXIT_USAGE. Nothing is fetched here. */
static int parse_dist(const char *spec, struct setting *st) {
    char err[512];
    st->text = spec;
    if (dqctl_dist_parse(spec, &st->dist, err, sizeof err) < 0) {
        return usage_error("--set %s: %s", st->name, err);
    }
    struct dqctl_dist *leaf = dqctl_dist_leaf(st->dist);
    if (leaf->kind == DQCTL_DIST_SAMPLES) {
        return read_samples(leaf->path, leaf);
    }
    return DQCTL_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct model_args *a, int *help) {
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        const char *eq = NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            *help = 1;
            return DQCTL_EXIT_OK;
        }
        if (strcmp(arg, "--json") == 0) {
            a->json = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || strcmp(arg, "-") == 0) {
            if (a->file) {
                return usage_error("one model file only (got a second: `%s`)", arg);
            }
            a->file = arg;
            continue;
        }
        /* --opt VALUE or --opt=VALUE */
        size_t optlen = strlen(arg);
        if ((eq = strchr(arg, '=')) != NULL) {
            optlen = (size_t)(eq - arg);
            val = eq + 1;
        }
        char opt[32];
        if (optlen >= sizeof opt) {
            return usage_error("unknown option `%s`", arg);
        }
        memcpy(opt, arg, optlen);
        opt[optlen] = '\0';
        int known = strcmp(opt, "--set") == 0 || strcmp(opt, "--node") == 0 ||
                    strcmp(opt, "--bin-width") == 0 || strcmp(opt, "--bins") == 0 ||
                    strcmp(opt, "--server") == 0;
        if (!known) {
            return usage_error("unknown option `%s`", arg);
        }
        if (!val) {
            if (i + 1 >= argc) {
                return usage_error("%s needs a value", opt);
            }
            val = argv[++i];
        }
        if (strcmp(opt, "--set") == 0) {
            a->sets[a->n_sets++] = val;
        } else if (strcmp(opt, "--node") == 0) {
            a->nodes[a->n_nodes++] = val;
        } else if (strcmp(opt, "--server") == 0) {
            a->server = val;
        } else if (strcmp(opt, "--bin-width") == 0) {
            if (parse_number(val, strlen(val), &a->bin_width) < 0 || !(a->bin_width > 0.0)) {
                return usage_error("--bin-width needs a width in seconds, such as 0.004; got "
                                   "`%s`",
                                   val);
            }
        } else {
            double b;
            if (parse_number(val, strlen(val), &b) < 0 || b != floor(b) || b < DQ_MIN_BINS ||
                b > DQ_MAX_BINS) {
                return usage_error("--bins needs a whole number from 1 to 4096; got `%s`", val);
            }
            a->bins = (int)b;
        }
    }
    if (!a->file) {
        return usage_error("%s", "no model file given");
    }
    return DQCTL_EXIT_OK;
}

static char *read_model(const char *path, size_t *len) {
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(dqctl_err(), "dqctl model: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(MODEL_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MODEL_MAX_FILE + 1, f) : 0;
    int bad = !buf || ferror(f);
    if (!is_stdin) {
        fclose(f);
    }
    if (bad) {
        fprintf(dqctl_err(), "dqctl model: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    if (n > MODEL_MAX_FILE) {
        fprintf(dqctl_err(), "dqctl model: %s is larger than %u bytes\n", path, MODEL_MAX_FILE);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/*
 * The hints of every node (what a grid must resolve about its delay), children first
 * (Kahn's order over the parent lists, no recursion: reference chains can be long).
 * known[i] = 0 when node i's delay is unknown (an outcome with no --set below it).
 */
static int support_hints(const struct dq_diagram *d, const struct setting *sets, size_t n_sets,
                         struct dq_hint *hint, unsigned char *known) {
    size_t n = dq_diagram_node_count(d);
    size_t *pending = malloc((n ? n : 1) * sizeof *pending);
    int *order = malloc((n ? n : 1) * sizeof *order);
    signed char *given = calloc(n ? n : 1, 1);
    struct dq_hint *ops = malloc((n ? n : 1) * sizeof *ops);
    if (!pending || !order || !given || !ops) {
        free(pending);
        free(order);
        free(given);
        free(ops);
        return -1;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++) {
        pending[i] = dq_diagram_node(d, (int)i)->n_children;
        known[i] = 0;
        if (pending[i] == 0) {
            order[tail++] = (int)i;
        }
    }
    for (size_t s = 0; s < n_sets; s++) {
        given[sets[s].node] = 1;
        hint[sets[s].node] = sets[s].hint;
        known[sets[s].node] = 1;
    }
    while (head < tail) {
        int i = order[head++];
        const struct dq_diagram_node *nd = dq_diagram_node(d, i);
        if (!given[i] && nd->kind != DQ_NODE_OUTCOME) {
            /* a given node is used as is: its children do not matter */
            int all = 1;
            for (size_t c = 0; c < nd->n_children; c++) {
                all = all && known[nd->children[c]];
                ops[c] = hint[nd->children[c]];
            }
            known[i] = (unsigned char)all;
            if (all) {
                switch (nd->kind) {
                case DQ_NODE_FIRST:
                    dq_hint_first(ops, nd->n_children, &hint[i]);
                    break;
                case DQ_NODE_ALL:
                    dq_hint_all(ops, nd->n_children, &hint[i]);
                    break;
                case DQ_NODE_CHOICE:
                    dq_hint_choice(ops, nd->weights, nd->n_children, &hint[i]);
                    break;
                default: /* sequences and references (one child: itself) */
                    dq_hint_sequence(ops, nd->n_children, &hint[i]);
                    break;
                }
            }
        }
        for (size_t j = 0; j < nd->n_parents; j++) {
            if (--pending[nd->parents[j]] == 0) {
                order[tail++] = nd->parents[j];
            }
        }
    }
    free(pending);
    free(order);
    free(given);
    free(ops);
    return 0;
}

/* The exponent k with width 0.001·2^k == w, or DQ_MIN_K − 1 when there is none. */
static int exponent_of(double w) {
    for (int k = DQ_MIN_K; k <= DQ_MAX_K; k++) {
        if (fabs(dq_width_of(k) - w) <= 1e-9 * w) {
            return k;
        }
    }
    return DQ_MIN_K - 1;
}

/* The most a default grid may leave past its horizon before reach is preferred to
 * resolution (run_model). */
#define MODEL_TAIL_CUT_MAX 1e-3

/*
 * The grid rule of the file comment: h merges the reported nodes' hints (the largest
 * reach, the sharpest density, the coarsest measured bins). Warns when the horizon stops
 * short of the reach, unless it is the default rule's choice of resolution over reach
 * (*short_default set: run_model decides after evaluating).
 */
static int choose_grid(const struct model_args *a, const struct dq_hint *h, int *k, int *n,
                       int *short_default) {
    double b = h->hi;
    int covered = 1;
    *short_default = 0;
    if (a->bin_width > 0.0) {
        *k = exponent_of(a->bin_width);
        if (*k < DQ_MIN_K) {
            fprintf(dqctl_err(),
                    "dqctl model: --bin-width %g is not 0.001 s times a power of two from "
                    "2^%d to 2^%d (e.g. 0.001, 0.002, 0.004 …)\n",
                    a->bin_width, DQ_MIN_K, DQ_MAX_K);
            return DQCTL_EXIT_USAGE;
        }
        if (a->bins) {
            *n = a->bins;
        } else {
            double need = ceil(b / dq_width_of(*k) - 1e-9);
            *n = need < 1.0 ? 1 : (need > DQ_MAX_BINS ? DQ_MAX_BINS : (int)need);
        }
        covered = dq_width_of(*k) * *n >= b * (1.0 - 1e-12);
    } else if (dq_grid_choose(h, a->bins, k, n, &covered) != DQ_OK) {
        fprintf(dqctl_err(), "dqctl model: %s\n", dq_last_error());
        return DQCTL_EXIT_USAGE;
    }
    if (!covered && !(a->bin_width > 0.0) && !a->bins) {
        *short_default = 1;
    } else if (!covered) {
        fprintf(dqctl_err(),
                "dqctl model: warning: the horizon %s is shorter than the support bound %s "
                "(%d bins of %s); mass beyond it is reported as lost past the horizon\n",
                T(dq_width_of(*k) * *n), T(b), *n, T(dq_width_of(*k)));
    }
    return DQCTL_EXIT_OK;
}

static int build_dq(struct setting *st, int k, int n) {
    char err[512];
    dq_destroy(st->dq);
    st->dq = NULL;
    if (dqctl_dist_build(st->dist, k, n, &st->dq, err, sizeof err) < 0) {
        fprintf(dqctl_err(), "dqctl model: --set %s: %s\n", st->name, err);
        return DQCTL_EXIT_USAGE;
    }
    return DQCTL_EXIT_OK;
}

/* A fresh evaluator of d on grid (k, n) (*ev replaced), every --set built on it, run. */
static int evaluate(const struct dq_diagram *d, struct setting *sets, size_t n_sets, int k, int n,
                    struct dq_eval **ev) {
    dq_eval_destroy(*ev);
    *ev = NULL;
    if (dq_eval_create(d, k, n, ev) != DQ_OK) {
        fprintf(dqctl_err(), "dqctl model: %s\n", dq_last_error());
        return DQCTL_EXIT_USAGE;
    }
    for (size_t s = 0; s < n_sets; s++) {
        int status = build_dq(&sets[s], k, n);
        if (status != DQCTL_EXIT_OK) {
            return status;
        }
        dq_eval_set_observed(*ev, sets[s].node, sets[s].dq);
    }
    if (dq_eval_run(*ev) != DQ_OK) {
        fprintf(dqctl_err(), "dqctl model: %s\n", dq_last_error());
        return DQCTL_EXIT_USAGE;
    }
    return DQCTL_EXIT_OK;
}

/* ---- measured ΔQs --------------------------------------------------------------------- */

/* What a measured leaf asks dqd for, in words. */
static void describe_leaf(const struct dqctl_dist *l, char *buf, size_t cap) {
    if (l->kind == DQCTL_DIST_SNAPSHOT) {
        snprintf(buf, cap,
                 "the observed ΔQ of probe %s in snapshot %lld (newest window %s the "
                 "firing)",
                 l->name, l->snapshot, l->before ? "before" : "after");
    } else if (l->window == 0) {
        snprintf(buf, cap, "the %s ΔQ of probe %s (latest window)",
                 l->kind == DQCTL_DIST_PROBE ? "observed" : "calculated", l->name);
    } else {
        snprintf(buf, cap, "the %s ΔQ of probe %s (window %ld back)",
                 l->kind == DQCTL_DIST_PROBE ? "observed" : "calculated", l->name, l->window);
    }
}

/* "observed, window 2026-11-22 03:17:49.000 UTC + 100 ms, 30 instances (2 lost), bins of 1 ms" */
static void note_of(const struct dqctl_dist *l, const json_t *q, const json_t *snap, char *buf,
                    size_t cap) {
    const json_t *win = json_object_get(q, "window");
    double start = json_number_value(json_object_get(win ? win : q, "start"));
    double end = json_number_value(json_object_get(win ? win : q, "end"));
    char t0[40], len[24], w[24], counts[96] = "";
    dqctl_format_time(start, t0, sizeof t0);
    dqctl_format_duration(end - start, len, sizeof len);
    dqctl_format_duration(l->measured->width, w, sizeof w);
    const json_t *jn = json_object_get(q, "n");
    if (json_is_integer(jn)) {
        long long n = (long long)json_integer_value(jn);
        long long lost = (long long)json_integer_value(json_object_get(q, "fa")) +
                         (long long)json_integer_value(json_object_get(q, "to"));
        snprintf(counts, sizeof counts, ", %lld instance%s (%lld failed or timed out)", n,
                 n == 1 ? "" : "s", lost);
    }
    if (snap) {
        snprintf(buf, cap, "snapshot %lld, window %s UTC + %s (%s the firing)%s, bins of %s",
                 l->snapshot, t0, len, l->before ? "before" : "after", counts, w);
    } else {
        snprintf(buf, cap, "%s, window %s UTC + %s%s, bins of %s",
                 l->kind == DQCTL_DIST_PROBE ? "observed" : "calculated", t0, len, counts, w);
    }
}

/*
 * An observed window with fewer instances than min_instances (dqd's, from its status; 0:
 * unknown, no check) cannot stand for the probe's ΔQ: says so, naming the window, and
 * returns 1.
 */
static int too_thin(const struct setting *st, const struct dqctl_dist *l, const json_t *q,
                    long long min_instances) {
    const json_t *jn = json_object_get(q, "n");
    if (l->kind != DQCTL_DIST_PROBE || min_instances <= 0 || !json_is_integer(jn) ||
        json_integer_value(jn) >= min_instances) {
        return 0;
    }
    const json_t *win = json_object_get(q, "window");
    char t0[40], len[DQ_DURATION_TEXT];
    double start = json_number_value(json_object_get(win, "start"));
    dqctl_format_time(start, t0, sizeof t0);
    dqctl_format_duration(json_number_value(json_object_get(win, "end")) - start, len, sizeof len);
    long long n = (long long)json_integer_value(jn);
    fprintf(dqctl_err(),
            "dqctl model: --set %s=%s: the window of %s it names (%s%ld back: %s UTC + %s) "
            "holds %lld instance%s, fewer than dqd's min_instances (%lld): too few to stand "
            "for %s's ΔQ. Name a window with more (probe:%s@W, `dqctl dq %s --window W` shows "
            "one), or a longer --window for dqd.\n",
            st->name, st->text, l->name, l->window == 0 ? "the latest, " : "", l->window, t0, len,
            n, n == 1 ? "" : "s", min_instances, l->name, l->name, l->name);
    return 1;
}

/* Fetches the measured leaf of st from dqd. Prints why not and returns 3 (2 for a window
 * too thin) on failure. */
static int fetch_measured(const struct dqctl_opts *o, struct setting *st, long long min_instances) {
    struct dqctl_dist *l = dqctl_dist_leaf(st->dist);
    char path[512], what[400], msg[4096], srv[256];
    if (l->kind == DQCTL_DIST_SNAPSHOT) {
        snprintf(path, sizeof path, "/api/v1/snapshots/%lld", l->snapshot);
    } else {
        /* names are [A-Za-z0-9_]: nothing to escape */
        snprintf(path, sizeof path, "/api/v1/probes/%s/dq?kind=%s&window=%ld", l->name,
                 l->kind == DQCTL_DIST_PROBE ? "observed" : "calculated", l->window);
    }
    describe_leaf(l, what, sizeof what);
    size_t sl = strlen(o->server);
    while (sl > 0 && o->server[sl - 1] == '/') {
        sl--;
    }
    snprintf(srv, sizeof srv, "%.*s", (int)sl, o->server);
    json_t *data = NULL;
    if (dqctl_api_get_quiet(o, path, &data, msg, sizeof msg) != DQCTL_EXIT_OK) {
        /* a connection error names the server already; dqd's own answers do not */
        fprintf(dqctl_err(), "dqctl model: --set %s=%s: cannot get %s%s%s: %s\n", st->name,
                st->text, what, strstr(msg, srv) ? "" : " from dqd at ",
                strstr(msg, srv) ? "" : srv, msg);
        return DQCTL_EXIT_API;
    }
    const json_t *q = data;
    if (l->kind == DQCTL_DIST_SNAPSHOT) {
        q = dqctl_snapshot_pick(data, l->name, l->before, msg, sizeof msg);
    }
    if (q && dqctl_dq_from_json(q, &l->measured, msg, sizeof msg) == 0) {
        int thin = too_thin(st, l, q, min_instances);
        note_of(l, q, l->kind == DQCTL_DIST_SNAPSHOT ? data : NULL, st->note, sizeof st->note);
        json_decref(data);
        return thin ? DQCTL_EXIT_USAGE : DQCTL_EXIT_OK;
    }
    fprintf(dqctl_err(), "dqctl model: --set %s=%s: %s from dqd at %s: %s\n", st->name, st->text,
            what, srv, msg);
    json_decref(data);
    return DQCTL_EXIT_API;
}

/* Fetches every measured DIST (only they touch the network). */
static int fetch_all(const struct model_args *a, struct setting *sets, int *any) {
    struct dqctl_opts o;
    memset(&o, 0, sizeof o);
    const char *env = getenv("DQD_URL");
    o.server = a->server && *a->server ? a->server : (env && *env ? env : DQCTL_DEFAULT_SERVER);
    int status = DQCTL_EXIT_OK;
    long long min_instances = 0; /* dqd's, from its status (an older dqd: no check) */
    *any = 0;
    for (size_t s = 0; s < a->n_sets && status == DQCTL_EXIT_OK; s++) {
        if (!dqctl_dist_is_live(sets[s].dist)) {
            continue;
        }
        if (!*any) {
            curl_global_init(CURL_GLOBAL_DEFAULT);
            *any = 1;
            json_t *st = NULL;
            char msg[1024];
            if (dqctl_api_get_quiet(&o, "/api/v1/status", &st, msg, sizeof msg) == DQCTL_EXIT_OK &&
                json_is_integer(json_object_get(st, "min_instances"))) {
                min_instances = (long long)json_integer_value(json_object_get(st, "min_instances"));
            }
            json_decref(st);
        }
        status = fetch_measured(&o, &sets[s], min_instances);
    }
    if (*any) {
        curl_global_cleanup();
    }
    return status;
}

/* The "measured" block of the human output: what dqd sent for each measured --set. */
static void print_measured(const struct model_args *a, const struct setting *sets) {
    int first = 1;
    for (size_t s = 0; s < a->n_sets; s++) {
        if (sets[s].note[0]) {
            fprintf(dqctl_out(), "%s  %s = %s: %s\n", first ? "measured" : "        ", sets[s].name,
                    sets[s].text, sets[s].note);
            first = 0;
        }
    }
    if (!first) {
        fputc('\n', dqctl_out());
    }
}

/* Lost mass without the ~1e-16 round-off of sums of masses (shown as 0, not 1.1e-16). */
static double lost_of(const struct dq *a) {
    return round(dq_lost(a) * 1e12) / 1e12;
}

/* The part of it past the horizon (the tail a longer horizon would keep), rounded so. */
static double past_of(const struct dq *a) {
    return round(dq_past_horizon(a) * 1e12) / 1e12;
}

/* The facts printed for one node. */
struct report {
    const char *node;
    const char *source; /* "calculated" or "given" */
    const struct dq *dq;
    int have_q[N_REPORT_P];
    double q[N_REPORT_P];
    int have_m;
    struct dq_moments m;
};

static void fill_report(struct report *r) {
    for (size_t j = 0; j < N_REPORT_P; j++) {
        r->have_q[j] = dq_quantile(r->dq, report_p[j], &r->q[j]) == DQ_OK;
    }
    r->have_m = dq_moments(r->dq, &r->m) == DQ_OK;
}

static int print_json(const struct report *r) {
    const struct dq *a = r->dq;
    json_t *o = json_object();
    json_t *cdf = json_array();
    json_t *qs = json_object();
    if (!o || !cdf || !qs) {
        json_decref(o);
        json_decref(cdf);
        json_decref(qs);
        return -1;
    }
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        sum += a->pdf[i];
        /* cdf[i] = P(delay ≤ (i+1)·w), the right edge of bin i (docs/engine.md); rounded to
         * 1e-12: FFT round-off leaves ~1e-18 dust that is not information */
        double v = round((sum > 1.0 ? 1.0 : sum) * 1e12) / 1e12;
        json_array_append_new(cdf, json_real(v));
    }
    for (size_t j = 0; j < N_REPORT_P; j++) {
        json_object_set_new(qs, report_key[j], r->have_q[j] ? json_real(r->q[j]) : json_null());
    }
    json_object_set_new(o, "node", json_string(r->node));
    json_object_set_new(o, "source", json_string(r->source));
    json_object_set_new(o, "bin_width", json_real(a->width));
    json_object_set_new(o, "bins", json_integer(a->n));
    json_object_set_new(o, "horizon", json_real(dq_horizon(a)));
    json_object_set_new(o, "lost", json_real(lost_of(a)));
    json_object_set_new(o, "lost_past_horizon", json_real(past_of(a)));
    json_object_set_new(o, "mean", r->have_m ? json_real(r->m.mean) : json_null());
    json_object_set_new(o, "variance", r->have_m ? json_real(r->m.variance) : json_null());
    json_object_set_new(o, "quantiles", qs);
    json_object_set_new(o, "cdf", cdf);
    int rc =
        json_dumpf(o, dqctl_out(), JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', dqctl_out());
    json_decref(o);
    return rc;
}

/* A CDF plot PLOT_COLS wide and PLOT_ROWS high up to the last time with mass. */
static void print_plot(const struct dq *a) {
    /* Up to where the curve reaches its final height (ignoring round-off dust), with
     * a margin, so that a short delay on a long horizon is not a vertical line. */
    double tangible = dq_tangible(a);
    double sum = 0.0;
    int end = a->n - 1;
    for (int i = 0; i < a->n; i++) {
        sum += a->pdf[i];
        if (sum >= tangible - 1e-9) {
            end = i;
            break;
        }
    }
    double tmax = (end + 1) * a->width * 1.1;
    if (tmax > dq_horizon(a) || tangible < 1e-12) {
        tmax = dq_horizon(a);
    }
    char grid[PLOT_ROWS + 1][PLOT_COLS + 1];
    for (int r = 0; r <= PLOT_ROWS; r++) {
        memset(grid[r], ' ', PLOT_COLS);
        grid[r][PLOT_COLS] = '\0';
    }
    for (int c = 0; c < PLOT_COLS; c++) {
        double t = tmax * (c + 1) / PLOT_COLS;
        int row = (int)lround(dq_cdf_at(a, t) * PLOT_ROWS);
        grid[row][c] = '*';
    }
    fprintf(dqctl_out(), "  CDF\n");
    for (int r = PLOT_ROWS; r >= 0; r--) {
        if (r == PLOT_ROWS || r == PLOT_ROWS / 2 || r == 0) {
            fprintf(dqctl_out(), "  %4.2f |%s\n", (double)r / PLOT_ROWS, grid[r]);
        } else {
            fprintf(dqctl_out(), "       |%s\n", grid[r]);
        }
    }
    fprintf(dqctl_out(), "       +");
    for (int c = 0; c < PLOT_COLS; c++) {
        fputc('-', dqctl_out());
    }
    fprintf(dqctl_out(), "\n        0%*s%s\n", PLOT_COLS - 10, "", T(tmax));
}

static void print_human(const struct report *r) {
    const struct dq *a = r->dq;
    fprintf(dqctl_out(), "%s  (%s; bin width %s, %d bins, horizon %s)\n", r->node, r->source,
            T(a->width), a->n, T(dq_horizon(a)));
    for (size_t j = 0; j < N_REPORT_P; j++) {
        char label[16];
        snprintf(label, sizeof label, "p%g", report_p[j] * 100.0);
        if (r->have_q[j]) {
            fprintf(dqctl_out(), "  %-9s %s\n", label, T(r->q[j]));
        } else {
            fprintf(dqctl_out(), "  %-9s not reached (lost mass %s)\n", label, F(lost_of(a)));
        }
    }
    if (r->have_m) {
        fprintf(dqctl_out(), "  %-9s %s\n", "mean", T(r->m.mean));
        fprintf(dqctl_out(), "  %-9s %s\n", "std dev", T(sqrt(r->m.variance)));
    } else {
        fprintf(dqctl_out(), "  %-9s none (nothing completes)\n", "mean");
    }
    if (past_of(a) > 0.0) {
        fprintf(dqctl_out(), "  %-9s %s (%s of it past the horizon %s)\n", "lost", F(lost_of(a)),
                F(past_of(a)), T(dq_horizon(a)));
    } else {
        fprintf(dqctl_out(), "  %-9s %s\n", "lost", F(lost_of(a)));
    }
    print_plot(a);
}

/* Lists the outcomes that still need a --set before node i can be computed. */
static void report_missing(const struct dq_eval *ev, const struct dq_diagram *d, int i) {
    int miss[8];
    size_t n = dq_eval_missing(ev, i, miss, 8);
    fprintf(dqctl_err(), "dqctl model: cannot compute `%s`: no ΔQ for",
            dq_diagram_node(d, i)->name);
    for (size_t j = 0; j < n && j < 8; j++) {
        fprintf(dqctl_err(), "%s %s", j ? "," : "", dq_diagram_node(d, miss[j])->name);
    }
    if (n > 8) {
        fprintf(dqctl_err(), " and %zu more", n - 8);
    }
    fprintf(dqctl_err(), "; give %s with --set NAME=DIST\n", n == 1 ? "it" : "them");
}

/* What run_model's steps share: the model, the nodes to report, the grid, the evaluation. */
struct model_run {
    const struct model_args *a;
    struct setting *sets;
    struct dq_diagram *d;
    int *report_nodes; /* the --node names, else the roots */
    size_t n_report;
    struct dq_hint *hint;  /* per node, from support_hints */
    unsigned char *known;  /* per node: hint[i] is known */
    struct dq_hint merged; /* the reported nodes' hints and the measured ΔQs' resolution */
    int k, n;              /* the grid */
    int short_default;     /* the default grid's horizon is short of the support bound */
    struct dq_eval *ev;
};

/* Reads and parses the model, printing its warnings. NULL (with the message) on failure. */
static struct dq_diagram *load_model(const char *file) {
    size_t len = 0;
    char *text = read_model(file, &len);
    if (!text) {
        return NULL;
    }
    struct dq_diagram *d = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(text, len, &d, &err);
    free(text);
    if (rc) {
        fprintf(dqctl_err(), "%s:%d:%d: %s\n", file, err.line, err.column, err.text);
        return NULL;
    }
    for (size_t j = 0; j < dq_diagram_warning_count(d); j++) {
        const struct dq_diagram_error *w = dq_diagram_warning(d, j);
        fprintf(dqctl_err(), "%s:%d:%d: warning: %s\n", file, w->line, w->column, w->text);
    }
    if (dq_diagram_warning_total(d) > dq_diagram_warning_count(d)) {
        size_t more = dq_diagram_warning_total(d) - dq_diagram_warning_count(d);
        fprintf(dqctl_err(), "%s: %zu more warning%s\n", file, more, more == 1 ? "" : "s");
    }
    return d;
}

/* Finds the node of every --set (each once) and the nodes to report: the --node names,
 * else the roots. */
static int resolve_names(struct model_run *r) {
    const struct model_args *a = r->a;
    for (size_t s = 0; s < a->n_sets; s++) {
        r->sets[s].node = dq_diagram_find(r->d, r->sets[s].name);
        if (r->sets[s].node < 0) {
            fprintf(dqctl_err(),
                    "dqctl model: --set %s: %s has no node named `%s` (names are outcomes, "
                    "definitions and operators)\n",
                    r->sets[s].name, a->file, r->sets[s].name);
            return DQCTL_EXIT_USAGE;
        }
        for (size_t t = 0; t < s; t++) {
            if (r->sets[t].node == r->sets[s].node) {
                fprintf(dqctl_err(), "dqctl model: `%s` is given twice with --set\n",
                        r->sets[s].name);
                return DQCTL_EXIT_USAGE;
            }
        }
    }
    for (size_t j = 0; j < a->n_nodes; j++) {
        int i = dq_diagram_find(r->d, a->nodes[j]);
        if (i < 0) {
            fprintf(dqctl_err(), "dqctl model: --node %s: %s has no node named `%s`\n", a->nodes[j],
                    a->file, a->nodes[j]);
            return DQCTL_EXIT_USAGE;
        }
        r->report_nodes[r->n_report++] = i;
    }
    if (a->n_nodes == 0) {
        for (size_t j = 0; j < dq_diagram_root_count(r->d); j++) {
            r->report_nodes[r->n_report++] = dq_diagram_root(r->d, j);
        }
    }
    if (r->n_report == 0) {
        fprintf(dqctl_err(), "dqctl model: %s defines nothing to report (no NAME = …; line)\n",
                a->file);
        return DQCTL_EXIT_USAGE;
    }
    return DQCTL_EXIT_OK;
}

/* The grid from the hints of the DISTs (measured ones fetched) and of the reported nodes. */
static int pick_grid(struct model_run *r) {
    const struct model_args *a = r->a;
    dq_hint_wait(0.0, &r->merged);
    for (size_t s = 0; s < a->n_sets; s++) {
        dqctl_dist_hint(r->sets[s].dist, &r->sets[s].hint);
        /* a measured ΔQ anywhere sets the finest width that means anything */
        r->merged.res = r->sets[s].hint.res > r->merged.res ? r->sets[s].hint.res : r->merged.res;
    }
    if (support_hints(r->d, r->sets, a->n_sets, r->hint, r->known) < 0) {
        fprintf(dqctl_err(), "dqctl model: out of memory\n");
        return DQCTL_EXIT_USAGE;
    }
    for (size_t j = 0; j < r->n_report; j++) {
        const struct dq_hint *h = &r->hint[r->report_nodes[j]];
        if (!r->known[r->report_nodes[j]]) {
            continue; /* reported as missing later */
        }
        r->merged.hi = h->hi > r->merged.hi ? h->hi : r->merged.hi;
        r->merged.fmax = h->fmax > r->merged.fmax ? h->fmax : r->merged.fmax;
        r->merged.qk = h->qk < r->merged.qk ? h->qk : r->merged.qk;
    }
    return choose_grid(a, &r->merged, &r->k, &r->n, &r->short_default);
}

/* Evaluates on the grid; when the default grid's horizon is short and cuts more than
 * MODEL_TAIL_CUT_MAX of a reported node, once more on a grid that reaches (with a
 * warning either way). */
static int evaluate_on_grid(struct model_run *r) {
    for (int pass = 0; pass < 2; pass++) {
        int status = evaluate(r->d, r->sets, r->a->n_sets, r->k, r->n, &r->ev);
        if (status != DQCTL_EXIT_OK || !r->short_default) {
            return status;
        }
        /* resolution was preferred to reach: fine when the tail it cuts is small */
        double cut = 0.0;
        char cutb[48];
        for (size_t j = 0; j < r->n_report; j++) {
            const struct dq *q = dq_eval_calculated(r->ev, r->report_nodes[j]);
            q = q ? q : dq_eval_observed(r->ev, r->report_nodes[j]);
            cut = q && dq_past_horizon(q) > cut ? dq_past_horizon(q) : cut;
        }
        int covered = 1;
        int k2 = r->k, n2 = r->n;
        if (pass == 0 && cut > MODEL_TAIL_CUT_MAX &&
            dq_grid_choose(&r->merged, DQ_MAX_BINS, &k2, &n2, &covered) == DQ_OK && k2 != r->k) {
            fprintf(dqctl_err(),
                    "dqctl model: warning: %d bins of %s (as fine as the sharpest density "
                    "needs) reach only %s and leave %s past it; reaching %s instead with "
                    "%d bins of %s (the sharpest part is resolved less finely)\n",
                    r->n, T(dq_width_of(r->k)), T(dq_width_of(r->k) * r->n),
                    dq_format_number(cut, 3, cutb, sizeof cutb), T(dq_width_of(k2) * n2), n2,
                    T(dq_width_of(k2)));
            r->k = k2;
            r->n = n2;
            r->short_default = !covered;
            continue;
        }
        fprintf(dqctl_err(),
                "dqctl model: warning: the horizon %s is shorter than the support bound %s "
                "(%d bins of %s, as fine as the sharpest density needs); mass beyond it is "
                "reported as lost past the horizon\n",
                T(dq_width_of(r->k) * r->n), T(r->merged.hi), r->n, T(dq_width_of(r->k)));
        break;
    }
    return DQCTL_EXIT_OK;
}

/* Prints every reported node (JSON or for people); a node that cannot be computed is
 * reported missing. */
static int print_reports(const struct model_run *r) {
    int status = DQCTL_EXIT_OK;
    for (size_t j = 0; j < r->n_report; j++) {
        int i = r->report_nodes[j];
        struct report rep;
        memset(&rep, 0, sizeof rep);
        rep.node = dq_diagram_node(r->d, i)->name;
        rep.dq = dq_eval_calculated(r->ev, i);
        rep.source = "calculated";
        if (!rep.dq) {
            rep.dq = dq_eval_observed(r->ev, i);
            rep.source = "given";
        }
        if (!rep.dq) {
            report_missing(r->ev, r->d, i);
            status = DQCTL_EXIT_USAGE;
            continue;
        }
        fill_report(&rep);
        if (r->a->json) {
            if (print_json(&rep) < 0) {
                fprintf(dqctl_err(), "dqctl model: cannot write JSON\n");
                status = DQCTL_EXIT_USAGE;
            }
        } else {
            if (j > 0) {
                fputc('\n', dqctl_out());
            }
            print_human(&rep);
        }
    }
    return status;
}

/* Everything after argument parsing: the model, its names, then (only then) dqd's
 * measured ΔQs, the grid, the evaluation, the reports. Owns nothing the caller frees. */
static int run_model(const struct model_args *a, struct setting *sets) {
    struct model_run r = {.a = a, .sets = sets};
    r.d = load_model(a->file);
    if (!r.d) {
        return DQCTL_EXIT_USAGE;
    }
    int status = DQCTL_EXIT_USAGE;
    size_t n_nodes = dq_diagram_node_count(r.d);
    r.report_nodes = malloc((a->n_nodes + dq_diagram_root_count(r.d) + 1) * sizeof(int));
    r.hint = malloc((n_nodes ? n_nodes : 1) * sizeof *r.hint);
    r.known = malloc(n_nodes ? n_nodes : 1);
    int live = 0;
    if (!r.report_nodes || !r.hint || !r.known) {
        fprintf(dqctl_err(), "dqctl model: out of memory\n");
    } else if ((status = resolve_names(&r)) == DQCTL_EXIT_OK &&
               (status = fetch_all(a, sets, &live)) == DQCTL_EXIT_OK &&
               (status = pick_grid(&r)) == DQCTL_EXIT_OK &&
               (status = evaluate_on_grid(&r)) == DQCTL_EXIT_OK) {
        if (!a->json && live) {
            print_measured(a, sets);
        }
        status = print_reports(&r);
    }
    dq_eval_destroy(r.ev);
    dq_diagram_destroy(r.d);
    free(r.report_nodes);
    free(r.hint);
    free(r.known);
    return status;
}

int dqctl_model_main(int argc, char **argv) {
    struct model_args a;
    memset(&a, 0, sizeof a);
    /* every --set / --node takes at least one argv slot, so argc bounds both lists */
    a.sets = calloc((size_t)argc + 1, sizeof *a.sets);
    a.nodes = calloc((size_t)argc + 1, sizeof *a.nodes);
    struct setting *sets = NULL;
    int help = 0;
    int status = DQCTL_EXIT_USAGE;
    if (!a.sets || !a.nodes) {
        fprintf(dqctl_err(), "dqctl model: out of memory\n");
        goto out;
    }
    status = parse_args(argc, argv, &a, &help);
    if (status != DQCTL_EXIT_OK) {
        goto out;
    }
    if (help) {
        model_usage(dqctl_out());
        goto out;
    }
    sets = calloc(a.n_sets ? a.n_sets : 1, sizeof *sets);
    if (!sets) {
        fprintf(dqctl_err(), "dqctl model: out of memory\n");
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    for (size_t s = 0; s < a.n_sets; s++) {
        const char *eq = strchr(a.sets[s], '=');
        if (!eq || eq == a.sets[s]) {
            status = usage_error("--set needs NAME=DIST, as in --set db='uniform(0.01,0.02)'; "
                                 "got `%s`",
                                 a.sets[s]);
            goto out;
        }
        /* the name is kept NUL-terminated in its own copy for lookups and messages */
        size_t nl = (size_t)(eq - a.sets[s]);
        char *name = malloc(nl + 1);
        if (!name) {
            status = DQCTL_EXIT_USAGE;
            goto out;
        }
        memcpy(name, a.sets[s], nl);
        name[nl] = '\0';
        sets[s].name = name;
        if ((status = parse_dist(eq + 1, &sets[s])) != DQCTL_EXIT_OK) {
            goto out;
        }
    }
    status = run_model(&a, sets);
out:
    for (size_t s = 0; sets && s < a.n_sets; s++) {
        free((char *)sets[s].name);
        dqctl_dist_free(sets[s].dist);
        dq_destroy(sets[s].dq);
    }
    free(sets);
    free(a.sets);
    free(a.nodes);
    dq_engine_cleanup();
    return status;
}
