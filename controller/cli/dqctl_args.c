/*
 * dqctl_args.c: what dqctl reads from its command line (declared in dqctl_api.h): the
 * options of every subcommand (one table of names, the bit that enables each, whether it
 * takes a value), durations, fractions, QTA points and the QTA body they make, and the
 * escaping of a probe name for a URL, and the names near a mistyped one ("did you
 * mean"). Pure: no I/O.
 */
#include "dqctl_api.h"
#include "dqctl_set_err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dq.h"
#include "dq_error.h"

/* ---- options ---------------------------------------------------------------------- */

/* Option names with a value, and the bit that enables each. */
static const struct {
    const char *name;
    unsigned bit; /* 0 = always accepted */
    int has_value;
} option_table[] = {
    {"--server", 0, 1},
    {"--json", 0, 0},
    {"--help", 0, 0},
    {"-h", 0, 0},
    {"--csv", DQCTL_OPT_CSV, 0},
    {"--no-plot", DQCTL_OPT_NO_PLOT, 0},
    {"--kind", DQCTL_OPT_KIND, 1},
    {"--window", DQCTL_OPT_WINDOW, 1},
    {"--max-lost", DQCTL_OPT_MAX_LOST, 1},
    {"--clear", DQCTL_OPT_CLEAR, 0},
    {"--strategy", DQCTL_OPT_STRATEGY, 1},
    {"--wait", DQCTL_OPT_WAIT, 0},
    {"--timeout", DQCTL_OPT_WAIT, 1},
    {"--open", DQCTL_OPT_OPEN, 0},
    {"--limit", DQCTL_OPT_LIMIT, 1},
    {"--threshold", DQCTL_OPT_TRIGGER, 1},
    {"--fire-after", DQCTL_OPT_TRIGGER, 1},
    {"--clear-after", DQCTL_OPT_TRIGGER, 1},
    {"--disable", DQCTL_OPT_TRIGGER, 0},
    {"--abort", DQCTL_OPT_ABORT, 1},
    {"--overload", DQCTL_OPT_OVERLOAD, 0},
    {"--create", DQCTL_OPT_CREATE, 0},
    {"--types", DQCTL_OPT_WATCH, 1},
    {"--count", DQCTL_OPT_WATCH, 1},
    {"--for", DQCTL_OPT_WATCH, 1},
    {"--infer", DQCTL_OPT_INFER, 0},
    {"--service", DQCTL_OPT_INFER, 1},
};

static void apply_option(struct dqctl_opts *o, const char *name, const char *value) {
    if (strcmp(name, "--server") == 0) {
        o->server = value;
    } else if (strcmp(name, "--json") == 0) {
        o->json = 1;
    } else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        o->help = 1;
    } else if (strcmp(name, "--csv") == 0) {
        o->csv = 1;
    } else if (strcmp(name, "--no-plot") == 0) {
        o->no_plot = 1;
    } else if (strcmp(name, "--kind") == 0) {
        o->kind = value;
    } else if (strcmp(name, "--window") == 0) {
        o->window = value;
    } else if (strcmp(name, "--max-lost") == 0) {
        o->max_lost = value;
    } else if (strcmp(name, "--clear") == 0) {
        o->clear = 1;
    } else if (strcmp(name, "--strategy") == 0) {
        o->strategy = value;
    } else if (strcmp(name, "--wait") == 0) {
        o->wait = 1;
    } else if (strcmp(name, "--timeout") == 0) {
        o->timeout = value;
    } else if (strcmp(name, "--open") == 0) {
        o->open = 1;
    } else if (strcmp(name, "--limit") == 0) {
        o->limit = value;
    } else if (strcmp(name, "--threshold") == 0) {
        o->threshold = value;
    } else if (strcmp(name, "--fire-after") == 0) {
        o->fire_after = value;
    } else if (strcmp(name, "--clear-after") == 0) {
        o->clear_after = value;
    } else if (strcmp(name, "--disable") == 0) {
        o->disable = 1;
    } else if (strcmp(name, "--abort") == 0) {
        o->abort_id = value;
    } else if (strcmp(name, "--overload") == 0) {
        o->overload = 1;
    } else if (strcmp(name, "--create") == 0) {
        o->create = 1;
    } else if (strcmp(name, "--types") == 0) {
        o->types = value;
    } else if (strcmp(name, "--count") == 0) {
        o->count = value;
    } else if (strcmp(name, "--for") == 0) {
        o->for_ = value;
    } else if (strcmp(name, "--infer") == 0) {
        o->infer = 1;
    } else if (strcmp(name, "--service") == 0) {
        o->service = value;
    }
}

int dqctl_parse_args(int argc, char **argv, unsigned accepts, int min_pos, int max_pos,
                     const char *env_url, struct dqctl_opts *o, char *err, size_t err_cap) {
    memset(o, 0, sizeof *o);
    o->kind = "observed";
    o->window = "latest";
    const char *cmd = argc > 0 ? argv[0] : "dqctl";
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (o->npos == DQCTL_MAX_POS) {
                return dqctl_set_err(err, err_cap, "%s: too many arguments", cmd);
            }
            o->pos[o->npos++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t name_len = eq ? (size_t)(eq - a) : strlen(a);
        size_t k;
        size_t n_opts = sizeof option_table / sizeof option_table[0];
        for (k = 0; k < n_opts; k++) {
            if (strlen(option_table[k].name) == name_len &&
                strncmp(option_table[k].name, a, name_len) == 0 &&
                (option_table[k].bit == 0 || (accepts & option_table[k].bit))) {
                break;
            }
        }
        if (k == n_opts) {
            return dqctl_set_err(err, err_cap, "%s: unknown option %.*s (see dqctl %s --help)", cmd,
                                 (int)name_len, a, cmd);
        }
        const char *value = NULL;
        if (option_table[k].has_value) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                return dqctl_set_err(err, err_cap, "%s: option %s needs a value", cmd,
                                     option_table[k].name);
            }
        } else if (eq) {
            return dqctl_set_err(err, err_cap, "%s: option %s takes no value", cmd,
                                 option_table[k].name);
        }
        apply_option(o, option_table[k].name, value);
    }
    if (!o->server || !*o->server) {
        o->server = env_url && *env_url ? env_url : DQCTL_DEFAULT_SERVER;
    }
    if (o->help) {
        return 0;
    }
    if (strcmp(o->kind, "observed") != 0 && strcmp(o->kind, "calculated") != 0) {
        return dqctl_set_err(err, err_cap, "%s: --kind must be observed or calculated, not \"%s\"",
                             cmd, o->kind);
    }
    if (strcmp(o->window, "latest") != 0) {
        char *end = NULL;
        errno = 0;
        long w = strtol(o->window, &end, 10);
        if (end == o->window || *end != '\0' || errno || w < 0 || w > 1000000) {
            return dqctl_set_err(err, err_cap,
                                 "%s: --window must be latest or N >= 0 (0 = latest), not \"%s\"",
                                 cmd, o->window);
        }
    }
    if (o->npos < min_pos) {
        return dqctl_set_err(err, err_cap, "%s: missing argument (see dqctl %s --help)", cmd, cmd);
    }
    if (o->npos > max_pos) {
        return dqctl_set_err(err, err_cap, "%s: unexpected argument \"%s\" (see dqctl %s --help)",
                             cmd, o->pos[max_pos], cmd);
    }
    return 0;
}

/* ---- numbers and durations ------------------------------------------------------------ */

int dqctl_parse_duration(const char *s, double bare_unit_s, double *out_s) {
    if (!s || !*s || *s == '+' || *s == '-') {
        return -1;
    }
    return dq_parse_duration(s, strlen(s), bare_unit_s, 0, out_s) == DQ_OK ? 0 : -1;
}

int dqctl_parse_fraction(const char *s, double *out) {
    if (!s || !*s) {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v) ||
        (s[0] != '.' && (s[0] < '0' || s[0] > '9'))) {
        return -1;
    }
    if (strcmp(end, "%") == 0) {
        v /= 100.0;
    } else if (*end != '\0') {
        return -1;
    }
    if (v < 0 || v > 1) {
        return -1;
    }
    *out = v;
    return 0;
}

int dqctl_parse_qta_point(const char *s, double *p, double *t_s, char *err, size_t err_cap) {
    const char *at = strchr(s, '@');
    if (!at) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\" is not P@T (e.g. 0.95@250ms)", s);
    }
    char pbuf[64];
    size_t n = (size_t)(at - s);
    if (n == 0 || n >= sizeof pbuf) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\": missing or long probability", s);
    }
    memcpy(pbuf, s, n);
    pbuf[n] = '\0';
    if (dqctl_parse_fraction(pbuf, p) < 0 || *p <= 0) {
        return dqctl_set_err(err, err_cap, "QTA point \"%s\": probability must be in (0, 1]", s);
    }
    if (dqctl_parse_duration(at + 1, 1e-3, t_s) < 0 || *t_s <= 0) {
        return dqctl_set_err(err, err_cap,
                             "QTA point \"%s\": time must be > 0, in milliseconds or with a unit "
                             "ns, us, ms, s or m (0.95@250, 0.95@250ms, 0.95@0.25s)",
                             s);
    }
    return 0;
}

json_t *dqctl_qta_body(const char *const *points, int n, const char *max_lost, char *err,
                       size_t err_cap) {
    double p[DQCTL_MAX_QTA_POINTS], t[DQCTL_MAX_QTA_POINTS];
    if (n < 1 || n > DQCTL_MAX_QTA_POINTS) {
        dqctl_set_err(err, err_cap, "a QTA has 1 to %d points, not %d", DQCTL_MAX_QTA_POINTS, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (dqctl_parse_qta_point(points[i], &p[i], &t[i], err, err_cap) < 0) {
            return NULL;
        }
    }
    /* insertion sort by time: at most 16 points */
    for (int i = 1; i < n; i++) {
        double pi = p[i], ti = t[i];
        int j = i - 1;
        while (j >= 0 && t[j] > ti) {
            p[j + 1] = p[j];
            t[j + 1] = t[j];
            j--;
        }
        p[j + 1] = pi;
        t[j + 1] = ti;
    }
    for (int i = 1; i < n; i++) {
        if (t[i] == t[i - 1]) {
            dqctl_set_err(err, err_cap, "two QTA points at the same time %g s", t[i]);
            return NULL;
        }
        if (p[i] < p[i - 1]) {
            dqctl_set_err(err, err_cap,
                          "QTA probabilities must not decrease with time (%g at %g s, %g at %g s)",
                          p[i - 1], t[i - 1], p[i], t[i]);
            return NULL;
        }
    }
    double lost = 1.0 - p[n - 1];
    if (max_lost && dqctl_parse_fraction(max_lost, &lost) < 0) {
        dqctl_set_err(err, err_cap,
                      "--max-lost must be a fraction in [0, 1] (e.g. 0.01 or 1%%), not "
                      "\"%s\"",
                      max_lost);
        return NULL;
    }
    json_t *pts = json_array();
    for (int i = 0; pts && i < n; i++) {
        json_array_append_new(pts, json_pack("[f,f]", p[i], t[i]));
    }
    json_t *body = json_pack("{s:{s:o,s:f}}", "qta", "points", pts, "max_lost", lost);
    if (!body) {
        dqctl_set_err(err, err_cap, "out of memory");
    }
    return body;
}

int dqctl_edit_distance(const char *a, const char *b, int max) {
    size_t la = strlen(a), lb = strlen(b);
    if (max < 0 || la > 255 || lb > 255 || (la > lb ? la - lb : lb - la) > (size_t)max) {
        return max + 1;
    }
    /* three rows of the optimal-string-alignment table: i − 2, i − 1 and i */
    int rows[3][256];
    int *older = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) {
        prev[j] = (int)j;
    }
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        int best = cur[0];
        for (size_t j = 1; j <= lb; j++) {
            int d = prev[j] + 1;
            d = cur[j - 1] + 1 < d ? cur[j - 1] + 1 : d;
            d = prev[j - 1] + (a[i - 1] != b[j - 1]) < d ? prev[j - 1] + (a[i - 1] != b[j - 1]) : d;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                older[j - 2] + 1 < d) {
                d = older[j - 2] + 1; /* two neighbours swapped */
            }
            cur[j] = d;
            best = d < best ? d : best;
        }
        if (best > max) {
            return max + 1;
        }
        int *t = older;
        older = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb] > max ? max + 1 : prev[lb];
}

size_t dqctl_did_you_mean(const char *name, const json_t *probes, char *buf, size_t cap) {
    const char *pick[DQCTL_SUGGESTIONS];
    int dist[DQCTL_SUGGESTIONS];
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(probes); i++) {
        const char *cand = json_string_value(json_object_get(json_array_get(probes, i), "name"));
        if (!cand || strcmp(cand, name) == 0) {
            continue;
        }
        int d = dqctl_edit_distance(name, cand, DQCTL_SUGGEST_DISTANCE);
        if (d > DQCTL_SUGGEST_DISTANCE) {
            continue;
        }
        /* insert by distance, then by name: the nearest first, the same order every run */
        size_t k = n < DQCTL_SUGGESTIONS ? n++ : DQCTL_SUGGESTIONS;
        while (k > 0 && (dist[k - 1] > d || (dist[k - 1] == d && strcmp(pick[k - 1], cand) > 0))) {
            if (k < DQCTL_SUGGESTIONS) {
                pick[k] = pick[k - 1];
                dist[k] = dist[k - 1];
            }
            k--;
        }
        if (k < DQCTL_SUGGESTIONS) {
            pick[k] = cand;
            dist[k] = d;
        }
    }
    if (cap) {
        buf[0] = '\0';
    }
    size_t len = 0;
    for (size_t i = 0; i < n && cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         pick[i]);
        if (w < 0 || (size_t)w >= cap - len) {
            break;
        }
        len += (size_t)w;
    }
    return n;
}

int dqctl_parse_int(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || end == s || *end || errno || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

int dqctl_url_escape(const char *in, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
        int keep = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                   (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_' || *c == '~';
        size_t need = keep ? 1 : 3;
        if (o + need >= cap) {
            return -1;
        }
        if (keep) {
            out[o++] = (char)*c;
        } else {
            out[o++] = '%';
            out[o++] = hex[*c >> 4];
            out[o++] = hex[*c & 15];
        }
    }
    if (o >= cap) {
        return -1;
    }
    out[o] = '\0';
    return 0;
}
