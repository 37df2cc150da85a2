/*
 * test_diagram_parse.c: runs data-driven parser cases (jansson's test/suites style).
 *
 * Usage: test_diagram_parse PATH...   (or --dump CASE.dq to print a model) where each PATH is a
 * case file NAME.dq or a folder of them. A case under a folder named `invalid` must fail to parse,
 * and NAME.expected holds the exact "LINE:COL: message" it must report. A case under `valid` must
 * parse; when NAME.tree exists, the dump of the model (roots, then one line per probe: name, kind,
 * children, nearest named parents) must equal it; its warnings must be those of NAME.warnings
 * ("LINE:COL: message" per line), or none when there is no such file. A valid case is then
 * evaluated: every outcome given a ΔQ, every node without one must get a calculated ΔQ, a
 * proper one (masses ≥ 0, at most 1 in all). Cases are parsed from an exact-size heap copy
 * without a terminating NUL, so that the ASan build catches any read past the end of the text.
 */
#include "diagram.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_CASE_BYTES (4u << 20)

/* A growable text buffer for the model dump. */
struct text {
    char *buf;
    size_t len;
    size_t cap;
};

static void text_add(struct text *t, const char *s) {
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) {
            cap *= 2;
        }
        char *b = realloc(t->buf, cap);
        if (!b) {
            abort(); /* test harness: out of memory is not a case outcome */
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    char *buf = malloc(MAX_CASE_BYTES + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t n = fread(buf, 1, MAX_CASE_BYTES, f);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Renders one component as written: name, s:name, or an anonymous chain. */
static void render_component(const struct dq_diagram *d, int i, struct text *t) {
    const struct dq_diagram_node *nd = dq_diagram_node(d, i);
    if (nd->kind == DQ_NODE_REFERENCE) {
        text_add(t, "s:");
        text_add(t, dq_diagram_node(d, nd->target)->name);
    } else if (nd->name) {
        text_add(t, nd->name);
    } else {
        for (size_t c = 0; c < nd->n_children; c++) {
            if (c) {
                text_add(t, " -> ");
            }
            render_component(d, nd->children[c], t);
        }
    }
}

/* Adds the names of the nearest named ancestors of node i (through anonymous ones). */
static void render_up(const struct dq_diagram *d, int i, struct text *t, int *first) {
    const struct dq_diagram_node *nd = dq_diagram_node(d, i);
    for (size_t j = 0; j < nd->n_parents; j++) {
        const struct dq_diagram_node *pn = dq_diagram_node(d, nd->parents[j]);
        if (pn->name) {
            text_add(t, *first ? "" : " ");
            text_add(t, pn->name);
            *first = 0;
        } else {
            render_up(d, nd->parents[j], t, first);
        }
    }
}

static void dump(const struct dq_diagram *d, struct text *t) {
    char num[64];
    text_add(t, "roots:");
    for (size_t j = 0; j < dq_diagram_root_count(d); j++) {
        text_add(t, " ");
        text_add(t, dq_diagram_node(d, dq_diagram_root(d, j))->name);
    }
    text_add(t, "\n");
    for (size_t j = 0; j < dq_diagram_probe_count(d); j++) {
        int i = dq_diagram_probe(d, j);
        const struct dq_diagram_node *nd = dq_diagram_node(d, i);
        text_add(t, nd->name);
        text_add(t, " ");
        text_add(t, dq_node_kind_name(nd->kind));
        if (nd->kind == DQ_NODE_SEQUENCE) {
            text_add(t, " ");
            for (size_t c = 0; c < nd->n_children; c++) {
                text_add(t, c ? " -> " : "");
                render_component(d, nd->children[c], t);
            }
        } else if (nd->kind != DQ_NODE_OUTCOME) {
            text_add(t, " ");
            if (nd->weights) {
                text_add(t, "[");
                for (size_t c = 0; c < nd->n_children; c++) {
                    snprintf(num, sizeof num, "%s%g", c ? ", " : "", nd->weights[c]);
                    text_add(t, num);
                }
                text_add(t, "]");
            }
            text_add(t, "(");
            for (size_t c = 0; c < nd->n_children; c++) {
                text_add(t, c ? ", " : "");
                render_component(d, nd->children[c], t);
            }
            text_add(t, ")");
        }
        text_add(t, " | up:");
        int first = 0;
        render_up(d, i, t, &first);
        if (nd->n_parents == 0) {
            text_add(t, " -");
        }
        text_add(t, "\n");
    }
}

/* Trailing whitespace and newlines do not count in expectation files. */
static void chomp(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) {
        s[--n] = '\0';
    }
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Path with its ".dq" replaced by `ext`. */
static void sibling(const char *path, const char *ext, char *out, size_t cap) {
    size_t n = strlen(path) - 3;
    snprintf(out, cap, "%.*s%s", (int)n, path, ext);
}

/* The warnings, one "LINE:COL: message" per line. */
static void dump_warnings(const struct dq_diagram *d, struct text *t) {
    char head[32];
    text_add(t, "");
    for (size_t j = 0; j < dq_diagram_warning_count(d); j++) {
        const struct dq_diagram_error *w = dq_diagram_warning(d, j);
        snprintf(head, sizeof head, "%d:%d: ", w->line, w->column);
        text_add(t, head);
        text_add(t, w->text);
        text_add(t, "\n");
    }
}

/* Evaluates a valid model with every outcome uniform on (1, 2) ms: each node without an
 * observed ΔQ gets a calculated one, masses ≥ 0 summing to at most 1. */
static void evaluate(const char *path, const struct dq_diagram *d) {
    struct dq_eval *ev = NULL;
    struct dq *u = NULL;
    CHECK_INT(dq_eval_create(d, -2, 256, &ev), DQ_OK);
    CHECK_INT(dq_uniform(-2, 256, 0.001, 0.002, &u), DQ_OK);
    if (!ev || !u) {
        dq_eval_destroy(ev);
        dq_destroy(u);
        return;
    }
    for (size_t i = 0; i < dq_diagram_node_count(d); i++) {
        if (dq_diagram_node(d, (int)i)->kind == DQ_NODE_OUTCOME) {
            CHECK_INT(dq_eval_set_observed(ev, (int)i, u), DQ_OK);
        }
    }
    CHECK_MSG(dq_eval_run(ev) == DQ_OK, "%s: evaluation failed: %s", path, dq_last_error());
    for (size_t i = 0; i < dq_diagram_node_count(d); i++) {
        const struct dq *q = dq_eval_effective(ev, (int)i);
        CHECK_MSG(q != NULL, "%s: node %zu (%s) has no ΔQ", path, i,
                  dq_diagram_node(d, (int)i)->name ? dq_diagram_node(d, (int)i)->name : "-");
        double sum = 0.0;
        int neg = 0;
        for (int b = 0; q && b < q->n; b++) {
            neg += q->pdf[b] < 0.0;
            sum += q->pdf[b];
        }
        CHECK_MSG(!neg && sum <= 1.0 + 1e-9, "%s: node %zu: masses sum to %g", path, i, sum);
    }
    dq_eval_destroy(ev);
    dq_destroy(u);
}

static void run_case(const char *path) {
    size_t len = 0;
    char *text = read_file(path, &len);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) {
        return;
    }
    /* An exact-size heap copy: any read past the end is an ASan error. */
    char *exact = malloc(len ? len : 1);
    if (len) {
        memcpy(exact, text, len);
    }
    int invalid = strstr(path, "/invalid/") != NULL || strncmp(path, "invalid/", 8) == 0;
    struct dq_diagram *d = NULL;
    struct dq_diagram_error err;
    int rc = dq_diagram_parse(exact, len, &d, &err);
    char other[4096];
    if (invalid) {
        CHECK_MSG(rc == DQ_EPARSE && d == NULL, "%s: parsed but should fail (rc %d)", path, rc);
        sibling(path, ".expected", other, sizeof other);
        size_t elen = 0;
        char *expected = read_file(other, &elen);
        CHECK_MSG(expected != NULL, "%s: missing %s", path, other);
        if (expected && rc == DQ_EPARSE) {
            chomp(expected);
            char got[DQ_DIAGRAM_ERROR_TEXT + 32];
            snprintf(got, sizeof got, "%d:%d: %s", err.line, err.column, err.text);
            CHECK_MSG(strcmp(got, expected) == 0, "%s:\n  expected: %s\n  got:      %s", path,
                      expected, got);
            CHECK_MSG(strcmp(dq_last_error(), got) == 0, "%s: dq_last_error() = %s", path,
                      dq_last_error());
        }
        free(expected);
    } else {
        CHECK_MSG(rc == DQ_OK && d != NULL, "%s: %d:%d: %s", path, err.line, err.column, err.text);
        sibling(path, ".tree", other, sizeof other);
        size_t tlen = 0;
        char *tree = read_file(other, &tlen);
        if (tree && d) {
            struct text t = {0};
            dump(d, &t);
            chomp(tree);
            chomp(t.buf);
            CHECK_MSG(strcmp(t.buf, tree) == 0, "%s: model dump differs:\n%s\n--- expected:\n%s",
                      path, t.buf, tree);
            free(t.buf);
        }
        free(tree);
        if (d) {
            sibling(path, ".warnings", other, sizeof other);
            size_t wlen = 0;
            char *want = read_file(other, &wlen);
            struct text t = {0};
            dump_warnings(d, &t);
            if (want) {
                chomp(want);
            }
            chomp(t.buf);
            CHECK_MSG(strcmp(t.buf, want ? want : "") == 0,
                      "%s: warnings differ:\n%s\n--- expected:\n%s", path, t.buf,
                      want ? want : "(none)");
            free(t.buf);
            free(want);
            evaluate(path, d);
        }
    }
    dq_diagram_destroy(d);
    free(exact);
    free(text);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void run_dir(const char *dir) {
    DIR *dh = opendir(dir);
    CHECK_MSG(dh != NULL, "cannot open %s", dir);
    if (!dh) {
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (!ends_with(e->d_name, ".dq")) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                abort();
            }
            names = nn;
        }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(l);
        snprintf(names[n], l, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(dh);
    CHECK_MSG(n > 0, "%s holds no .dq case", dir);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        run_case(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE.dq|DIR...\n", argv[0]);
        return 2;
    }
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) {
        /* prints a valid case's model, to write a new NAME.tree after checking it */
        size_t len = 0;
        char *text = read_file(argv[2], &len);
        struct dq_diagram *d = NULL;
        struct dq_diagram_error err;
        if (!text || dq_diagram_parse(text, len, &d, &err) != DQ_OK) {
            fprintf(stderr, "%s: %d:%d: %s\n", argv[2], err.line, err.column, err.text);
            free(text);
            return 1;
        }
        struct text t = {0};
        dump(d, &t);
        fputs(t.buf, stdout);
        free(t.buf);
        struct text wt = {0};
        dump_warnings(d, &wt);
        if (wt.len) {
            fprintf(stderr, "warnings (for NAME.warnings):\n%s", wt.buf);
        }
        free(wt.buf);
        free(text);
        dq_diagram_destroy(d);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (ends_with(argv[i], ".dq")) {
            run_case(argv[i]);
        } else {
            run_dir(argv[i]);
        }
    }
    return check_done();
}
