/*
 * dqctl_model.c: `dqctl model`, the offline what-if calculator.
 *
 * Loads a .dq model, gives some of its nodes a ΔQ from a distribution (--set NAME=DIST),
 * runs the engine's evaluator and prints, for each root (or each --node), the calculated
 * ΔQ: quantiles, mean, lost mass and a terminal CDF plot, or one JSON object per node.
 * No daemon is involved: this is the engine used directly.
 *
 * The grid: every node is evaluated on one grid (width 2^k ms, N bins). Unless both are
 * given, it is chosen from the support of the given distributions: an upper bound B on
 * each reported node's delay (wait T → T, uniform(A,B) → B, exponential(λ) → ln(10^9)/λ,
 * samples → the largest, never → 0; sums along sequences, maxima across operators),
 * then the smallest width whose N bins (default 1024) reach B. The rule is documented
 * in docs/outcome-diagrams.md.
 */
#include "dqctl.h"

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

#define MODEL_MAX_FILE (16u << 20)       /* bytes of a .dq file */
#define MODEL_MAX_SAMPLES 10000000u      /* lines of one samples file */
#define MODEL_MAX_LINE 1024              /* bytes of one samples line */
#define MODEL_DEFAULT_BINS 1024          /* N when --bins is not given */
#define MODEL_EXP_TAIL_LN 20.72326583694 /* ln(1e9): exponential bound leaves 1e-9 out */
#define PLOT_COLS 60
#define PLOT_ROWS 10

static const double report_p[] = {0.5, 0.9, 0.95, 0.99};
static const char *const report_key[] = {"0.5", "0.9", "0.95", "0.99"};
#define N_REPORT_P (sizeof report_p / sizeof report_p[0])

enum dist_kind { DIST_WAIT, DIST_UNIFORM, DIST_EXPONENTIAL, DIST_NEVER, DIST_SAMPLES };

/* One --set: the node and the distribution it behaves like. */
struct setting {
    int node;
    const char *name; /* as given (points into argv) */
    enum dist_kind kind;
    double a, b;       /* wait: a = T; uniform: [a, b]; exponential: a = rate */
    double *durations; /* samples: successes, owned */
    size_t count;
    uint64_t n_failed, n_timeout;
    double bound; /* upper bound of its support, seconds */
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
};

static void model_usage(FILE *out) {
    fprintf(out, "usage: dqctl model FILE.dq --set NAME=DIST [--set NAME=DIST …] [--node NAME]…\n"
                 "                   [--bin-width SECONDS] [--bins N] [--json]\n"
                 "\n"
                 "What would the end-to-end ΔQ be if these parts behaved like this? Loads an\n"
                 "outcome diagram, gives the named nodes the distributions below, and prints\n"
                 "each root's calculated ΔQ (or each --node's): quantiles, mean, lost mass and\n"
                 "a CDF plot. Times are in seconds. No daemon is needed.\n"
                 "\n"
                 "DIST is one of:\n"
                 "  wait(T)            always exactly T\n"
                 "  uniform(A,B)       uniform on [A, B], 0 <= A <= B\n"
                 "  exponential(RATE)  exponential with RATE per second (mean 1/RATE)\n"
                 "  never              never completes (all mass lost)\n"
                 "  samples(PATH)      one duration per line; `fail` or `timeout` lines count as\n"
                 "                     lost; blank lines and lines starting with # are skipped\n"
                 "\n"
                 "options:\n"
                 "  --set NAME=DIST    give node NAME (outcome, definition or operator) this ΔQ;\n"
                 "                     a node given a ΔQ is used as is by its parents\n"
                 "  --node NAME        report this node instead of the roots (repeatable)\n"
                 "  --bin-width S      bin width: 0.001 s times a power of two (2^-10 … 2^10)\n"
                 "  --bins N           number of bins, 1 … 4096 (default 1024)\n"
                 "  --json             one JSON object per reported node, one per line\n"
                 "  -h, --help         this help\n"
                 "\n"
                 "Without --bin-width the width is the smallest that lets the bins cover every\n"
                 "reported node's support. Exit status: 0 success, 2 usage or model error.\n"
                 "\n"
                 "example:\n"
                 "  dqctl model pipeline.dq --set worker_1='uniform(1,2)' "
                 "--set worker_2='uniform(1,2)'\n");
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dqctl model: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nsee dqctl model --help\n");
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

/* Reads a samples file into st (durations, failures, timeouts). */
static int read_samples(const char *path, struct setting *st) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dqctl model: cannot open samples file %s: %s\n", path, strerror(errno));
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
            fprintf(stderr, "dqctl model: %s:%ld: line longer than %d bytes\n", path, lineno,
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
            fprintf(stderr, "dqctl model: %s: more than %u samples\n", path, MODEL_MAX_SAMPLES);
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
            fprintf(stderr,
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
                fprintf(stderr, "dqctl model: out of memory reading %s\n", path);
                rc = DQCTL_EXIT_USAGE;
                break;
            }
            st->durations = d;
        }
        st->durations[st->count++] = v;
        if (v > st->bound) {
            st->bound = v;
        }
    }
    if (rc == DQCTL_EXIT_OK && ferror(f)) {
        fprintf(stderr, "dqctl model: error reading %s\n", path);
        rc = DQCTL_EXIT_USAGE;
    }
    fclose(f);
    if (rc == DQCTL_EXIT_OK && st->count + st->n_failed + st->n_timeout == 0) {
        fprintf(stderr, "dqctl model: %s holds no sample\n", path);
        rc = DQCTL_EXIT_USAGE;
    }
    return rc;
}

/* Splits "NAME(ARGS)" checking NAME; args and alen get what is between the parentheses. */
static int call_form(const char *s, const char *fn, const char **args, size_t *alen) {
    size_t n = strlen(fn);
    if (strncmp(s, fn, n) != 0 || s[n] != '(') {
        return 0;
    }
    const char *close = strrchr(s, ')');
    if (!close || close < s + n + 1 || close[1] != '\0') {
        return 0;
    }
    *args = s + n + 1;
    *alen = (size_t)(close - *args);
    return 1;
}

/* Parses DIST into st. Returns 0 or prints the reason and returns DQCTL_EXIT_USAGE. */
static int parse_dist(const char *spec, struct setting *st) {
    const char *args;
    size_t alen;
    const char *dist = spec;
    while (*dist == ' ') {
        dist++;
    }
    if (strcmp(dist, "never") == 0) {
        st->kind = DIST_NEVER;
        st->bound = 0.0;
        return 0;
    }
    if (call_form(dist, "wait", &args, &alen)) {
        st->kind = DIST_WAIT;
        if (parse_number(args, alen, &st->a) < 0 || st->a < 0.0) {
            return usage_error("wait(T) needs one time T ≥ 0 in seconds, as in wait(0.25); "
                               "got `%s`",
                               dist);
        }
        st->bound = st->a;
        return 0;
    }
    if (call_form(dist, "uniform", &args, &alen)) {
        st->kind = DIST_UNIFORM;
        const char *comma = memchr(args, ',', alen);
        if (!comma || parse_number(args, (size_t)(comma - args), &st->a) < 0 ||
            parse_number(comma + 1, alen - (size_t)(comma - args) - 1, &st->b) < 0 || st->a < 0.0 ||
            st->b < st->a) {
            return usage_error("uniform(A,B) needs two times 0 ≤ A ≤ B in seconds, as in "
                               "uniform(1,2); got `%s`",
                               dist);
        }
        st->bound = st->b;
        return 0;
    }
    if (call_form(dist, "exponential", &args, &alen)) {
        st->kind = DIST_EXPONENTIAL;
        if (parse_number(args, alen, &st->a) < 0 || !(st->a > 0.0)) {
            return usage_error("exponential(RATE) needs a rate > 0 per second, as in "
                               "exponential(10) (mean 0.1 s); got `%s`",
                               dist);
        }
        st->bound = MODEL_EXP_TAIL_LN / st->a;
        return 0;
    }
    if (call_form(dist, "samples", &args, &alen)) {
        st->kind = DIST_SAMPLES;
        char path[4096];
        if (alen == 0 || alen >= sizeof path) {
            return usage_error("samples(PATH) needs a file path; got `%s`", dist);
        }
        memcpy(path, args, alen);
        path[alen] = '\0';
        return read_samples(path, st);
    }
    return usage_error("unknown distribution `%s`; use wait(T), uniform(A,B), "
                       "exponential(RATE), never or samples(PATH)",
                       dist);
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
                    strcmp(opt, "--bin-width") == 0 || strcmp(opt, "--bins") == 0;
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
        fprintf(stderr, "dqctl model: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(MODEL_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MODEL_MAX_FILE + 1, f) : 0;
    int bad = !buf || ferror(f);
    if (!is_stdin) {
        fclose(f);
    }
    if (bad) {
        fprintf(stderr, "dqctl model: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    if (n > MODEL_MAX_FILE) {
        fprintf(stderr, "dqctl model: %s is larger than %u bytes\n", path, MODEL_MAX_FILE);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/*
 * Upper bounds of every node's delay, children first (Kahn's order over the parent
 * lists, no recursion: reference chains can be long). bound[i] < 0 means unknown (an
 * outcome with no --set below it).
 */
static int support_bounds(const struct dq_diagram *d, const struct setting *sets, size_t n_sets,
                          double *bound) {
    size_t n = dq_diagram_node_count(d);
    size_t *pending = malloc((n ? n : 1) * sizeof *pending);
    int *order = malloc((n ? n : 1) * sizeof *order);
    signed char *given = calloc(n ? n : 1, 1);
    if (!pending || !order || !given) {
        free(pending);
        free(order);
        free(given);
        return -1;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++) {
        pending[i] = dq_diagram_node(d, (int)i)->n_children;
        if (pending[i] == 0) {
            order[tail++] = (int)i;
        }
    }
    for (size_t s = 0; s < n_sets; s++) {
        given[sets[s].node] = 1;
        bound[sets[s].node] = sets[s].bound;
    }
    while (head < tail) {
        int i = order[head++];
        const struct dq_diagram_node *nd = dq_diagram_node(d, i);
        if (!given[i]) {
            /* a given node is used as is: its children do not matter */
            double b = nd->kind == DQ_NODE_OUTCOME ? -1.0 : 0.0;
            for (size_t c = 0; c < nd->n_children; c++) {
                double cb = bound[nd->children[c]];
                if (cb < 0.0) {
                    b = -1.0;
                    break;
                }
                b = nd->kind == DQ_NODE_SEQUENCE ? b + cb : (cb > b ? cb : b);
            }
            bound[i] = b;
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

/* The grid rule of the file comment. Warns when B cannot be covered. */
static int choose_grid(const struct model_args *a, double b, int *k, int *n) {
    if (a->bin_width > 0.0) {
        *k = exponent_of(a->bin_width);
        if (*k < DQ_MIN_K) {
            fprintf(stderr,
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
    } else {
        *n = a->bins ? a->bins : MODEL_DEFAULT_BINS;
        *k = DQ_MIN_K;
        while (*k < DQ_MAX_K && dq_width_of(*k) * *n < b * (1.0 - 1e-12)) {
            (*k)++;
        }
        if (!a->bins) {
            while (*n < DQ_MAX_BINS && dq_width_of(*k) * *n < b * (1.0 - 1e-12)) {
                *n = *n * 2 > DQ_MAX_BINS ? DQ_MAX_BINS : *n * 2;
            }
        }
    }
    if (dq_width_of(*k) * *n < b * (1.0 - 1e-12)) {
        fprintf(stderr,
                "dqctl model: warning: the horizon %g s is shorter than the support bound %g "
                "s; mass beyond it is reported as lost\n",
                dq_width_of(*k) * *n, b);
    }
    return DQCTL_EXIT_OK;
}

static int build_dq(struct setting *st, int k, int n) {
    int rc;
    switch (st->kind) {
    case DIST_WAIT:
        rc = dq_wait(k, n, st->a, &st->dq);
        break;
    case DIST_UNIFORM:
        rc = dq_uniform(k, n, st->a, st->b, &st->dq);
        break;
    case DIST_EXPONENTIAL:
        rc = dq_exponential(k, n, st->a, &st->dq);
        break;
    case DIST_NEVER:
        rc = dq_never(k, n, &st->dq);
        break;
    default:
        rc = dq_from_samples(k, n, st->durations, st->count, st->n_failed, st->n_timeout, &st->dq);
        break;
    }
    if (rc) {
        fprintf(stderr, "dqctl model: --set %s: %s\n", st->name, dq_last_error());
        return DQCTL_EXIT_USAGE;
    }
    return DQCTL_EXIT_OK;
}

/* Lost mass without the ~1e-16 round-off of sums of masses (shown as 0, not 1.1e-16). */
static double lost_of(const struct dq *a) {
    return round(dq_lost(a) * 1e12) / 1e12;
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
        /* rounded to 1e-12: FFT round-off leaves ~1e-18 dust that is not information */
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
    json_object_set_new(o, "mean", r->have_m ? json_real(r->m.mean) : json_null());
    json_object_set_new(o, "variance", r->have_m ? json_real(r->m.variance) : json_null());
    json_object_set_new(o, "quantiles", qs);
    json_object_set_new(o, "cdf", cdf);
    int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', stdout);
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
    printf("  CDF\n");
    for (int r = PLOT_ROWS; r >= 0; r--) {
        if (r == PLOT_ROWS || r == PLOT_ROWS / 2 || r == 0) {
            printf("  %4.2f |%s\n", (double)r / PLOT_ROWS, grid[r]);
        } else {
            printf("       |%s\n", grid[r]);
        }
    }
    printf("       +");
    for (int c = 0; c < PLOT_COLS; c++) {
        putchar('-');
    }
    printf("\n        0%*s%.6g s\n", PLOT_COLS - 10, "", tmax);
}

static void print_human(const struct report *r) {
    const struct dq *a = r->dq;
    printf("%s  (%s; bin width %g s, %d bins, horizon %g s)\n", r->node, r->source, a->width, a->n,
           dq_horizon(a));
    for (size_t j = 0; j < N_REPORT_P; j++) {
        char label[16];
        snprintf(label, sizeof label, "p%g", report_p[j] * 100.0);
        if (r->have_q[j]) {
            printf("  %-9s %.6g s\n", label, r->q[j]);
        } else {
            printf("  %-9s not reached (lost mass %.6g)\n", label, lost_of(a));
        }
    }
    if (r->have_m) {
        printf("  %-9s %.6g s\n", "mean", r->m.mean);
        printf("  %-9s %.6g s\n", "std dev", sqrt(r->m.variance));
    } else {
        printf("  %-9s none (nothing completes)\n", "mean");
    }
    printf("  %-9s %.6g\n", "lost", lost_of(a));
    print_plot(a);
}

/* Lists the outcomes that still need a --set before node i can be computed. */
static void report_missing(const struct dq_eval *ev, const struct dq_diagram *d, int i) {
    int miss[8];
    size_t n = dq_eval_missing(ev, i, miss, 8);
    fprintf(stderr, "dqctl model: cannot compute `%s`: no ΔQ for", dq_diagram_node(d, i)->name);
    for (size_t j = 0; j < n && j < 8; j++) {
        fprintf(stderr, "%s %s", j ? "," : "", dq_diagram_node(d, miss[j])->name);
    }
    if (n > 8) {
        fprintf(stderr, " and %zu more", n - 8);
    }
    fprintf(stderr, "; give %s with --set NAME=DIST\n", n == 1 ? "it" : "them");
}

/* Everything after argument parsing; owns nothing the caller frees. */
static int run_model(const struct model_args *a, struct setting *sets) {
    size_t len = 0;
    char *text = read_model(a->file, &len);
    if (!text) {
        return DQCTL_EXIT_USAGE;
    }
    struct dq_diagram *d = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(text, len, &d, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "%s:%d:%d: %s\n", a->file, err.line, err.column, err.text);
        return DQCTL_EXIT_USAGE;
    }
    int status = DQCTL_EXIT_OK;
    size_t n_nodes = dq_diagram_node_count(d);
    int *report_nodes = malloc((a->n_nodes + dq_diagram_root_count(d) + 1) * sizeof(int));
    double *bound = malloc((n_nodes ? n_nodes : 1) * sizeof *bound);
    struct dq_eval *ev = NULL;
    size_t n_report = 0;
    if (!report_nodes || !bound) {
        fprintf(stderr, "dqctl model: out of memory\n");
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    for (size_t s = 0; s < a->n_sets; s++) {
        sets[s].node = dq_diagram_find(d, sets[s].name);
        if (sets[s].node < 0) {
            fprintf(stderr,
                    "dqctl model: --set %s: %s has no node named `%s` (names are outcomes, "
                    "definitions and operators)\n",
                    sets[s].name, a->file, sets[s].name);
            status = DQCTL_EXIT_USAGE;
            goto out;
        }
        for (size_t t = 0; t < s; t++) {
            if (sets[t].node == sets[s].node) {
                fprintf(stderr, "dqctl model: `%s` is given twice with --set\n", sets[s].name);
                status = DQCTL_EXIT_USAGE;
                goto out;
            }
        }
    }
    for (size_t j = 0; j < a->n_nodes; j++) {
        int i = dq_diagram_find(d, a->nodes[j]);
        if (i < 0) {
            fprintf(stderr, "dqctl model: --node %s: %s has no node named `%s`\n", a->nodes[j],
                    a->file, a->nodes[j]);
            status = DQCTL_EXIT_USAGE;
            goto out;
        }
        report_nodes[n_report++] = i;
    }
    if (a->n_nodes == 0) {
        for (size_t j = 0; j < dq_diagram_root_count(d); j++) {
            report_nodes[n_report++] = dq_diagram_root(d, j);
        }
    }
    if (n_report == 0) {
        fprintf(stderr, "dqctl model: %s defines nothing to report (no NAME = …; line)\n", a->file);
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    if (support_bounds(d, sets, a->n_sets, bound) < 0) {
        fprintf(stderr, "dqctl model: out of memory\n");
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    double b = 0.0;
    for (size_t j = 0; j < n_report; j++) {
        b = bound[report_nodes[j]] > b ? bound[report_nodes[j]] : b;
    }
    int k, n;
    if ((status = choose_grid(a, b, &k, &n)) != DQCTL_EXIT_OK) {
        goto out;
    }
    if (dq_eval_create(d, k, n, &ev) != DQ_OK) {
        fprintf(stderr, "dqctl model: %s\n", dq_last_error());
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    for (size_t s = 0; s < a->n_sets; s++) {
        if ((status = build_dq(&sets[s], k, n)) != DQCTL_EXIT_OK) {
            goto out;
        }
        dq_eval_set_observed(ev, sets[s].node, sets[s].dq);
    }
    if (dq_eval_run(ev) != DQ_OK) {
        fprintf(stderr, "dqctl model: %s\n", dq_last_error());
        status = DQCTL_EXIT_USAGE;
        goto out;
    }
    for (size_t j = 0; j < n_report; j++) {
        int i = report_nodes[j];
        struct report r;
        memset(&r, 0, sizeof r);
        r.node = dq_diagram_node(d, i)->name;
        r.dq = dq_eval_calculated(ev, i);
        r.source = "calculated";
        if (!r.dq) {
            r.dq = dq_eval_observed(ev, i);
            r.source = "given";
        }
        if (!r.dq) {
            report_missing(ev, d, i);
            status = DQCTL_EXIT_USAGE;
            continue;
        }
        fill_report(&r);
        if (a->json) {
            if (print_json(&r) < 0) {
                fprintf(stderr, "dqctl model: cannot write JSON\n");
                status = DQCTL_EXIT_USAGE;
            }
        } else {
            if (j > 0) {
                putchar('\n');
            }
            print_human(&r);
        }
    }
out:
    dq_eval_destroy(ev);
    dq_diagram_destroy(d);
    free(report_nodes);
    free(bound);
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
        fprintf(stderr, "dqctl model: out of memory\n");
        goto out;
    }
    status = parse_args(argc, argv, &a, &help);
    if (status != DQCTL_EXIT_OK) {
        goto out;
    }
    if (help) {
        model_usage(stdout);
        goto out;
    }
    sets = calloc(a.n_sets ? a.n_sets : 1, sizeof *sets);
    if (!sets) {
        fprintf(stderr, "dqctl model: out of memory\n");
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
        free(sets[s].durations);
        dq_destroy(sets[s].dq);
    }
    free(sets);
    free(a.sets);
    free(a.nodes);
    dq_engine_cleanup();
    return status;
}
