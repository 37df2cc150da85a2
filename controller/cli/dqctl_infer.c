/*
 * dqctl_infer.c: an outcome diagram from span trees (dqctl_infer.h). Pure: JSON in, text out.
 */
#include "dqctl_infer.h"
#include "dqctl_json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_strbuf.h"

#define MAX_KIDS 64       /* children of one span considered */
#define SHAPE_MAX 2048    /* bytes of one instance's shape */
#define AGREE 0.9         /* share of instances a shape needs to be written without comment */
#define TOL_NS 50000      /* 50 µs: two times this close are the same moment … */
#define TOL_SHARE 0.02    /* … or 2 % of the span, whichever is more */
#define UNTRACED_NOTE 0.2 /* share of a parent's time in no child that is worth a comment */

struct span {
    const char *trace, *id, *parent, *probe;
    int64_t start, end;
    int first_kid, next_sib; /* children lists, -1 = none */
    int has_parent;          /* its parent is among the spans */
};

/* One distinct shape of one probe's instances (the children's stages as text). */
struct shape {
    char *text; /* chain text, e.g. "validate -> a:?(x, y)"; '?' stands for the operator's name */
    char *kids; /* the sorted multiset of the children's probes: what a choice tells apart */
    int count;
    double untraced; /* sum over instances of the share of time in no child */
};

/* One probe that has children in some of its instances. */
struct node {
    const char *probe;
    int instances; /* spans of the probe (with or without children) */
    int leaf;      /* of them, without children */
    struct shape *shapes;
    int n_shapes, cap_shapes;
    int root; /* some of its spans have no parent among the spans */
};

struct buf {
    char *s;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1) {
            cap *= 2;
        }
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
}

static uint64_t hash2(const char *a, const char *b) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = a; *p; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    h = (h ^ '/') * 1099511628211ull;
    for (const char *p = b; *p; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return h;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static struct span *g_spans; /* for the qsort of children by start */

static int cmp_start(const void *a, const void *b) {
    const struct span *x = &g_spans[*(const int *)a], *y = &g_spans[*(const int *)b];
    return x->start < y->start ? -1 : x->start > y->start ? 1 : strcmp(x->probe, y->probe);
}

static int64_t tol_of(int64_t span_ns) {
    int64_t t = (int64_t)((double)span_ns * TOL_SHARE);
    return t > TOL_NS ? t : TOL_NS;
}

/* Whether probe p has a node (children somewhere): its reference is then s:p. */
static int is_node(const struct node *nodes, int n, const char *p) {
    for (int i = 0; i < n; i++) {
        if (strcmp(nodes[i].probe, p) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * The shape of one parent instance: its children (indices kids, n of them, sorted by start)
 * in stages. Writes the chain text to out with "?" for the operators' names; `nodes_ref` is
 * filled in later (names of probes with children get "s:" then). Returns the share of the
 * parent's time covered by no child.
 */
static double shape_of(const struct span *sp, const struct span *parent, const int *kids, int n,
                       char *out, size_t cap) {
    size_t at = 0;
    out[0] = '\0';
    int64_t dur = parent->end - parent->start;
    int64_t tol = tol_of(dur);
    int64_t covered = 0, cover_to = INT64_MIN;
    int i = 0;
    while (i < n) {
        /* a stage: every child that starts before the stage's first end */
        int j = i + 1;
        int64_t min_end = sp[kids[i]].end, max_end = sp[kids[i]].end;
        while (j < n && sp[kids[j]].start < min_end - tol) {
            min_end = sp[kids[j]].end < min_end ? sp[kids[j]].end : min_end;
            max_end = sp[kids[j]].end > max_end ? sp[kids[j]].end : max_end;
            j++;
        }
        for (int k = i; k < j; k++) { /* the union of the children's intervals */
            int64_t s = sp[kids[k]].start > cover_to ? sp[kids[k]].start : cover_to;
            if (sp[kids[k]].end > s) {
                covered += sp[kids[k]].end - s;
                cover_to = sp[kids[k]].end;
            }
        }
        const char *names[MAX_KIDS];
        for (int k = i; k < j; k++) {
            names[k - i] = sp[kids[k]].probe;
        }
        qsort(names, (size_t)(j - i), sizeof names[0], cmp_str);
        if (at && at < cap) {
            at += (size_t)snprintf(out + at, cap - at, " -> ");
        }
        if (j - i == 1) {
            at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "@%s", names[0]);
        } else {
            /* what the parent waits for: the next stage's start, or its own end */
            int64_t next = j < n ? sp[kids[j]].start : parent->end;
            char op = next >= max_end - tol ? 'a' : next >= min_end - tol ? 'f' : 'u';
            at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%c:?(", op);
            for (int k = 0; k < j - i && at < cap; k++) {
                at += (size_t)snprintf(out + at, cap - at, "%s@%s", k ? ", " : "", names[k]);
            }
            at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, ")");
        }
        i = j;
    }
    return dur > 0 ? (double)(dur - (covered < dur ? covered : dur)) / (double)dur : 0.0;
}

/* Writes a shape's text with '@NAME' as NAME or s:NAME and '?' as the operator's name. */
static void put_shape(struct buf *b, const char *text, const struct node *nodes, int n_nodes,
                      const char *opname, int *op_used) {
    for (const char *p = text; *p;) {
        if (*p == '@') {
            size_t len = strcspn(p + 1, ",) ");
            char name[512];
            snprintf(name, sizeof name, "%.*s", (int)(len < 511 ? len : 511), p + 1);
            put(b, "%s%s", is_node(nodes, n_nodes, name) ? "s:" : "", name);
            p += 1 + len;
        } else if (*p == '?') {
            (*op_used)++;
            if (*op_used == 1) {
                put(b, "%s", opname);
            } else {
                put(b, "%s_%d", opname, *op_used);
            }
            p++;
        } else {
            put(b, "%c", *p);
            p++;
        }
    }
}

static struct node *node_get(struct node **nodes, int *n, int *cap, const char *probe) {
    for (int i = 0; i < *n; i++) {
        if (strcmp((*nodes)[i].probe, probe) == 0) {
            return &(*nodes)[i];
        }
    }
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        struct node *nn = realloc(*nodes, sizeof *nn * (size_t)nc);
        if (!nn) {
            return NULL;
        }
        *nodes = nn;
        *cap = nc;
    }
    struct node *x = &(*nodes)[(*n)++];
    memset(x, 0, sizeof *x);
    x->probe = probe;
    return x;
}

static int shape_add(struct node *x, const char *text, const char *kids, double untraced) {
    for (int i = 0; i < x->n_shapes; i++) {
        if (strcmp(x->shapes[i].text, text) == 0) {
            x->shapes[i].count++;
            x->shapes[i].untraced += untraced;
            return 0;
        }
    }
    if (x->n_shapes == x->cap_shapes) {
        int nc = x->cap_shapes ? x->cap_shapes * 2 : 4;
        struct shape *ns = realloc(x->shapes, sizeof *ns * (size_t)nc);
        if (!ns) {
            return -1;
        }
        x->shapes = ns;
        x->cap_shapes = nc;
    }
    struct shape *s = &x->shapes[x->n_shapes];
    s->text = strdup(text);
    s->kids = strdup(kids);
    s->count = 1;
    s->untraced = untraced;
    if (!s->text || !s->kids) {
        free(s->text);
        free(s->kids);
        return -1;
    }
    x->n_shapes++;
    return 0;
}

static int cmp_shape(const void *a, const void *b) {
    const struct shape *x = a, *y = b;
    int c = strcmp(x->kids, y->kids);
    return c ? c : y->count - x->count;
}

static int cmp_node(const void *a, const void *b) {
    const struct node *x = a, *y = b;
    if (x->root != y->root) {
        return y->root - x->root;
    }
    return strcmp(x->probe, y->probe);
}

/* Writes the definition of node x. */
static void put_node(struct buf *b, const struct node *x, const struct node *nodes, int n_nodes) {
    int with = x->instances - x->leaf;
    /* the choice's branches: one per set of children, each with its most frequent shape */
    int n_br = 0;
    int br_first[64], br_count[64];
    for (int i = 0; i < x->n_shapes && n_br < 64; i++) {
        if (i == 0 || strcmp(x->shapes[i].kids, x->shapes[i - 1].kids) != 0) {
            br_first[n_br] = i;
            br_count[n_br] = 0;
            n_br++;
        }
        br_count[n_br - 1] += x->shapes[i].count;
    }
    put(b, "\n# %s: %d instance%s with children", x->probe, with, with == 1 ? "" : "s");
    if (x->leaf) {
        put(b, ", %d without (not in the model: a choice needs a probe on each branch)", x->leaf);
    }
    put(b, "\n");
    double untraced = 0;
    for (int i = 0; i < x->n_shapes; i++) {
        untraced += x->shapes[i].untraced;
    }
    untraced = with ? untraced / with : 0;
    if (untraced > UNTRACED_NOTE) {
        put(b, "# %.0f %% of %s's time is in no child span (its own work): not in the model\n",
            100 * untraced, x->probe);
    }
    if (with < 10) {
        put(b, "# only %d instance%s seen: the structure is a guess\n", with, with == 1 ? "" : "s");
    }
    for (int r = 0; r < n_br; r++) {
        const struct shape *s = &x->shapes[br_first[r]];
        if (s->count < AGREE * br_count[r]) {
            put(b,
                "# the children's order or overlap varies (%s): the most frequent arrangement "
                "(%d of %d) is written\n",
                s->kids, s->count, br_count[r]);
        }
        if (strstr(s->text, "u:?")) {
            put(b,
                "# %s goes on before any child of a group ends (it does not wait for them): "
                "written as first-to-finish\n",
                x->probe);
        }
    }
    char opname[600];
    int used = 0;
    put(b, "%s = ", x->probe);
    if (n_br > 1) {
        snprintf(opname, sizeof opname, "%s_choice", x->probe);
        put(b, "p:%s[", opname);
        for (int r = 0; r < n_br; r++) {
            put(b, "%s%.3f", r ? ", " : "", (double)br_count[r] / with);
        }
        put(b, "](");
    }
    for (int r = 0; r < n_br; r++) {
        const struct shape *s = &x->shapes[br_first[r]];
        if (r) {
            put(b, ", ");
        }
        /* operators are named after the probe: <probe>_all / <probe>_first (+ _N) */
        char text[SHAPE_MAX + 8];
        snprintf(text, sizeof text, "%s", s->text);
        for (char *p = text; (p = strstr(p, ":?")) != NULL; p += 2) {
            if (p[-1] == 'u') {
                p[-1] = 'f';
            }
        }
        const char *kind = strstr(text, "a:?") && !strstr(text, "f:?")   ? "all"
                           : strstr(text, "f:?") && !strstr(text, "a:?") ? "first"
                                                                         : "op";
        if (n_br > 1) {
            snprintf(opname, sizeof opname, "%.500s_%s_%d", x->probe, kind, r + 1);
        } else {
            snprintf(opname, sizeof opname, "%.500s_%s", x->probe, kind);
        }
        used = 0;
        put_shape(b, text, nodes, n_nodes, opname, &used);
    }
    if (n_br > 1) {
        put(b, ")");
    }
    put(b, ";\n");
}

/* The spans, indexed by (trace, id), and the probes with children found in them. */
struct infer {
    struct span *sp;
    size_t n;
    int *index; /* open addressing on hash2(trace, id): span indices, -1 empty */
    size_t hcap;
    size_t traces; /* spans without a parent id */
    struct node *nodes;
    int n_nodes, cap_nodes;
};

/* Reads the list into in->sp and the index. Returns 0, or -1 with the message in err. */
static int read_spans(struct infer *in, const json_t *spans, char *err, size_t err_cap) {
    memset(in->index, -1, in->hcap * sizeof *in->index);
    for (size_t i = 0; i < in->n; i++) {
        json_t *o = json_array_get(spans, i);
        struct span *s = &in->sp[i];
        s->trace = jstr(o, "trace_id", NULL);
        s->id = jstr(o, "span_id", NULL);
        s->parent = jstr(o, "parent_id", NULL);
        s->probe = jstr(o, "probe", NULL);
        json_t *st = json_object_get(o, "start_ns"), *en = json_object_get(o, "end_ns");
        if (!s->trace || !s->id || !s->parent || !s->probe || !json_is_integer(st) ||
            !json_is_integer(en)) {
            snprintf(err, err_cap,
                     "span %zu lacks trace_id, span_id, parent_id, probe, "
                     "start_ns or end_ns",
                     i);
            return -1;
        }
        s->start = json_integer_value(st);
        s->end = json_integer_value(en);
        s->first_kid = s->next_sib = -1;
        size_t h = hash2(s->trace, s->id) & (in->hcap - 1);
        while (in->index[h] >= 0) {
            h = (h + 1) & (in->hcap - 1);
        }
        in->index[h] = (int)i;
        in->traces += s->parent[0] == '\0';
    }
    return 0;
}

/* Each span with its parent among the spans joins the parent's children list. */
static void link_children(struct infer *in) {
    for (size_t i = 0; i < in->n; i++) {
        struct span *s = &in->sp[i];
        if (!s->parent[0]) {
            continue;
        }
        for (size_t h = hash2(s->trace, s->parent) & (in->hcap - 1); in->index[h] >= 0;
             h = (h + 1) & (in->hcap - 1)) {
            struct span *p = &in->sp[in->index[h]];
            if (strcmp(p->id, s->parent) == 0 && strcmp(p->trace, s->trace) == 0) {
                s->has_parent = 1;
                s->next_sib = p->first_kid;
                p->first_kid = (int)i;
                break;
            }
        }
    }
}

/* Every span with children adds its shape to its probe's node; then each node counts its
 * instances with and without children and whether it is a root. Returns 0 or -1 (no
 * memory). */
static int collect_shapes(struct infer *in) {
    struct span *sp = in->sp;
    g_spans = sp;
    char text[SHAPE_MAX], kidset[SHAPE_MAX];
    for (size_t i = 0; i < in->n; i++) {
        struct span *s = &sp[i];
        struct node *x = NULL;
        if (s->first_kid < 0) {
            continue;
        }
        int kids[MAX_KIDS], nk = 0;
        for (int k = s->first_kid; k >= 0 && nk < MAX_KIDS; k = sp[k].next_sib) {
            kids[nk++] = k;
        }
        qsort(kids, (size_t)nk, sizeof kids[0], cmp_start);
        double untraced = shape_of(sp, s, kids, nk, text, sizeof text);
        const char *names[MAX_KIDS];
        for (int k = 0; k < nk; k++) {
            names[k] = sp[kids[k]].probe;
        }
        qsort(names, (size_t)nk, sizeof names[0], cmp_str);
        struct dq_strbuf kb;
        dq_strbuf_init(&kb, kidset, sizeof kidset);
        for (int k = 0; k < nk; k++) {
            dq_strbuf_printf(&kb, "%s%s", k ? ", " : "", names[k]);
        }
        if (!(x = node_get(&in->nodes, &in->n_nodes, &in->cap_nodes, s->probe)) ||
            shape_add(x, text, kidset, untraced) != 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < in->n; i++) {
        for (int k = 0; k < in->n_nodes; k++) {
            if (strcmp(in->nodes[k].probe, sp[i].probe) == 0) {
                in->nodes[k].instances++;
                in->nodes[k].leaf += sp[i].first_kid < 0;
                in->nodes[k].root |= !sp[i].has_parent;
            }
        }
    }
    return 0;
}

/* The diagram: the header comment, each node's definition (roots first), `system`. */
static void write_diagram(struct buf *b, struct infer *in, const char *service) {
    struct node *nodes = in->nodes;
    int n_nodes = in->n_nodes;
    for (int k = 0; k < n_nodes; k++) {
        qsort(nodes[k].shapes, (size_t)nodes[k].n_shapes, sizeof nodes[k].shapes[0], cmp_shape);
    }
    qsort(nodes, (size_t)n_nodes, sizeof nodes[0], cmp_node);
    put(b,
        "# Outcome diagram inferred by `dqctl diagram --infer` from %zu spans (%zu traces)%s%s%s\n"
        "# kept by dqd. Children one after another are a sequence (->), overlapping children\n"
        "# the parent waits for all of an all-to-finish (a:), for the first of a\n"
        "# first-to-finish (f:); different sets of children a probabilistic choice (p:) with\n"
        "# the observed weights. Operators are named after their span (NAME_all, NAME_first,\n"
        "# NAME_choice): no span measures them. Check the comments, edit, then load it with\n"
        "# `dqctl diagram FILE.dq`.\n",
        in->n, in->traces, service ? " of service \"" : "", service ? service : "",
        service ? "\"" : "");
    int roots = 0;
    const char *root = NULL;
    for (int k = 0; k < n_nodes; k++) {
        put_node(b, &nodes[k], nodes, n_nodes);
        if (nodes[k].root) {
            roots++;
            root = nodes[k].probe;
        }
    }
    if (roots == 1) {
        put(b, "\nsystem = s:%s;\n", root);
    } else if (roots > 1) {
        put(b,
            "\n# %d roots (spans without a parent): each definition above is a diagram of "
            "its own;\n# write `system = ...;` to join them\n",
            roots);
    }
}

char *dqctl_infer(const json_t *spans, const char *service, char *err, size_t err_cap) {
    if (!json_is_array(spans)) {
        snprintf(err, err_cap, "the spans are not a list");
        return NULL;
    }
    struct infer in = {.n = json_array_size(spans), .hcap = 16};
    while (in.hcap < 2 * in.n) {
        in.hcap *= 2;
    }
    in.sp = calloc(in.n ? in.n : 1, sizeof *in.sp);
    in.index = malloc(in.hcap * sizeof *in.index);
    struct buf b = {0};
    char *result = NULL;
    if (!in.sp || !in.index) {
        snprintf(err, err_cap, "no memory for %zu spans", in.n);
        goto out;
    }
    if (read_spans(&in, spans, err, err_cap) < 0) {
        goto out;
    }
    link_children(&in);
    if (collect_shapes(&in) < 0) {
        snprintf(err, err_cap, "no memory");
        goto out;
    }
    if (in.n_nodes == 0) {
        snprintf(err, err_cap,
                 "none of the %zu spans%s%s%s has a child among them: nothing to infer (are "
                 "the services instrumented with nested spans, and do parents and children "
                 "reach dqd?)",
                 in.n, service ? " of service \"" : "", service ? service : "",
                 service ? "\"" : "");
        goto out;
    }
    write_diagram(&b, &in, service);
    if (b.oom) {
        snprintf(err, err_cap, "no memory");
        goto out;
    }
    result = b.s;
    b.s = NULL;
out:
    for (int k = 0; k < in.n_nodes; k++) {
        for (int i = 0; i < in.nodes[k].n_shapes; i++) {
            free(in.nodes[k].shapes[i].text);
            free(in.nodes[k].shapes[i].kids);
        }
        free(in.nodes[k].shapes);
    }
    free(in.nodes);
    free(b.s);
    free(in.sp);
    free(in.index);
    return result;
}
