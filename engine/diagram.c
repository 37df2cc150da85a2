/*
 * diagram.c: lexer, parser and model of outcome diagrams (`.dq` text).
 *
 * One pass of a hand-written recursive-descent parser builds the node table directly;
 * forward `s:` references are resolved afterwards (a name never defined becomes a probe
 * observed on its own, with a warning, as the oscilloscope reads it), then cycles are
 * looked for with an
 * iterative depth-first search, and the parent lists, roots and probe list are laid
 * out in flat arrays. The parser stops at the first error and reports it with line,
 * column and a message that says what to change (jansson style). Recursion only
 * follows operator nesting, which is capped at DQ_DIAGRAM_MAX_DEPTH; everything that
 * follows references (which can chain through any number of definitions) is iterative.
 *
 * Expected workload: files of a few to a few thousand nodes, parsed once at start-up
 * or when a person loads a model; the cost is linear in the text.
 */
#include "diagram.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- model ------------------------------------------------------------------------ */

/* Private bookkeeping kept beside each public node record. */
struct node_priv {
    char *name;     /* owned copy of the probe name (public name points here) */
    char *ref_name; /* reference: the name after s:, until resolved */
    int implicit;   /* outcome made for an s: reference to a name never defined */
    int *children;  /* owned; public children points here */
    size_t child_cap;
    double *weights; /* owned; choice only */
};

struct dq_diagram {
    struct dq_diagram_node *nodes; /* public records, index = node id */
    struct node_priv *priv;        /* same index */
    size_t n;
    size_t cap;
    int *parents_flat; /* every node's parents, back to back */
    int *roots;
    size_t n_roots;
    int *probes;
    size_t n_probes;
    /* name → node index, open addressing (linear probing); size a power of two */
    int *table;
    size_t table_size;
    size_t table_used;
    struct dq_diagram_error warnings[DQ_DIAGRAM_MAX_WARNINGS];
    size_t n_warnings, total_warnings;
};

size_t dq_diagram_warning_count(const struct dq_diagram *d) {
    return d ? d->n_warnings : 0;
}

size_t dq_diagram_warning_total(const struct dq_diagram *d) {
    return d ? d->total_warnings : 0;
}

const struct dq_diagram_error *dq_diagram_warning(const struct dq_diagram *d, size_t j) {
    return d && j < d->n_warnings ? &d->warnings[j] : NULL;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void
warn_at(struct dq_diagram *d, int line, int col, const char *fmt, ...) {
    d->total_warnings++;
    if (d->n_warnings >= DQ_DIAGRAM_MAX_WARNINGS) {
        return;
    }
    struct dq_diagram_error *w = &d->warnings[d->n_warnings++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text, sizeof w->text, fmt, ap);
    va_end(ap);
    w->line = line;
    w->column = col;
}

const char *dq_node_kind_name(enum dq_node_kind kind) {
    switch (kind) {
    case DQ_NODE_OUTCOME:
        return "outcome";
    case DQ_NODE_SEQUENCE:
        return "sequence";
    case DQ_NODE_FIRST:
        return "first";
    case DQ_NODE_ALL:
        return "all";
    case DQ_NODE_CHOICE:
        return "choice";
    case DQ_NODE_REFERENCE:
        return "reference";
    }
    return "unknown";
}

/* FNV-1a: names are short and this is only the parser's symbol table. */
static uint32_t hash_name(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* Slot of `name` in the table: where it is, or the empty slot where it would go. */
static size_t table_slot(const struct dq_diagram *d, const char *name, size_t len) {
    size_t mask = d->table_size - 1;
    size_t i = hash_name(name, len) & mask;
    for (;;) {
        int idx = d->table[i];
        if (idx < 0) {
            return i;
        }
        const char *other = d->priv[idx].name;
        if (strlen(other) == len && memcmp(other, name, len) == 0) {
            return i;
        }
        i = (i + 1) & mask;
    }
}

static int table_lookup(const struct dq_diagram *d, const char *name, size_t len) {
    if (d->table_size == 0) {
        return -1;
    }
    return d->table[table_slot(d, name, len)];
}

static int table_grow(struct dq_diagram *d) {
    size_t size = d->table_size ? d->table_size * 2 : 64;
    int *t = malloc(size * sizeof *t);
    if (!t) {
        return DQ_ENOMEM;
    }
    for (size_t i = 0; i < size; i++) {
        t[i] = -1;
    }
    int *old = d->table;
    size_t old_size = d->table_size;
    d->table = t;
    d->table_size = size;
    for (size_t i = 0; i < old_size; i++) {
        if (old[i] >= 0) {
            const char *nm = d->priv[old[i]].name;
            d->table[table_slot(d, nm, strlen(nm))] = old[i];
        }
    }
    free(old);
    return DQ_OK;
}

/* Registers node idx under its name (the caller checked it is absent). */
static int table_insert(struct dq_diagram *d, int idx) {
    if ((d->table_used + 1) * 2 > d->table_size) {
        int rc = table_grow(d);
        if (rc < 0) {
            return rc;
        }
    }
    const char *nm = d->priv[idx].name;
    d->table[table_slot(d, nm, strlen(nm))] = idx;
    d->table_used++;
    return DQ_OK;
}

static char *copy_name(const char *s, size_t len) {
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

/* Appends a blank node; returns its index or a negative error. */
static int node_new(struct dq_diagram *d, enum dq_node_kind kind, int line, int column) {
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        struct dq_diagram_node *nodes = realloc(d->nodes, cap * sizeof *nodes);
        if (!nodes) {
            return DQ_ENOMEM;
        }
        d->nodes = nodes;
        struct node_priv *priv = realloc(d->priv, cap * sizeof *priv);
        if (!priv) {
            return DQ_ENOMEM;
        }
        d->priv = priv;
        d->cap = cap;
    }
    size_t i = d->n++;
    memset(&d->nodes[i], 0, sizeof d->nodes[i]);
    memset(&d->priv[i], 0, sizeof d->priv[i]);
    d->nodes[i].kind = kind;
    d->nodes[i].line = line;
    d->nodes[i].column = column;
    d->nodes[i].target = -1;
    return (int)i;
}

static int node_add_child(struct dq_diagram *d, int parent, int child) {
    struct node_priv *p = &d->priv[parent];
    struct dq_diagram_node *nd = &d->nodes[parent];
    if (nd->n_children == p->child_cap) {
        size_t cap = p->child_cap ? p->child_cap * 2 : 4;
        int *c = realloc(p->children, cap * sizeof *c);
        if (!c) {
            return DQ_ENOMEM;
        }
        p->children = c;
        p->child_cap = cap;
        nd->children = c;
    }
    p->children[nd->n_children++] = child;
    return DQ_OK;
}

void dq_diagram_destroy(struct dq_diagram *d) {
    if (!d) {
        return;
    }
    for (size_t i = 0; i < d->n; i++) {
        free(d->priv[i].name);
        free(d->priv[i].ref_name);
        free(d->priv[i].children);
        free(d->priv[i].weights);
    }
    free(d->nodes);
    free(d->priv);
    free(d->parents_flat);
    free(d->roots);
    free(d->probes);
    free(d->table);
    free(d);
}

size_t dq_diagram_node_count(const struct dq_diagram *d) {
    return d ? d->n : 0;
}

const struct dq_diagram_node *dq_diagram_node(const struct dq_diagram *d, int i) {
    if (!d || i < 0 || (size_t)i >= d->n) {
        return NULL;
    }
    return &d->nodes[i];
}

int dq_diagram_find(const struct dq_diagram *d, const char *name) {
    if (!d || !name) {
        return -1;
    }
    return table_lookup(d, name, strlen(name));
}

size_t dq_diagram_root_count(const struct dq_diagram *d) {
    return d ? d->n_roots : 0;
}

int dq_diagram_root(const struct dq_diagram *d, size_t j) {
    return d && j < d->n_roots ? d->roots[j] : -1;
}

size_t dq_diagram_probe_count(const struct dq_diagram *d) {
    return d ? d->n_probes : 0;
}

int dq_diagram_probe(const struct dq_diagram *d, size_t j) {
    return d && j < d->n_probes ? d->probes[j] : -1;
}

/* Records a named descendant once (seen[] marks those already counted). */
static size_t probe_children_add(int *out, size_t cap, size_t count, int v, unsigned char *seen) {
    if (seen[v]) {
        return count;
    }
    seen[v] = 1;
    if (count < cap) {
        out[count] = v;
    }
    return count + 1;
}

size_t dq_diagram_probe_children(const struct dq_diagram *d, int i, int *out, size_t cap) {
    const struct dq_diagram_node *nd = dq_diagram_node(d, i);
    if (!nd) {
        return 0;
    }
    /* one mark per node keeps this linear however many branches an operator has */
    unsigned char *seen = calloc(d->n, 1);
    if (!seen) {
        return 0;
    }
    size_t count = 0;
    for (size_t c = 0; c < nd->n_children; c++) {
        int ci = nd->children[c];
        const struct dq_diagram_node *ch = &d->nodes[ci];
        if (ch->name) {
            count = probe_children_add(out, cap, count, ci, seen);
        } else if (ch->kind == DQ_NODE_REFERENCE) {
            count = probe_children_add(out, cap, count, ch->target, seen);
        } else {
            /* an anonymous branch: its components are named nodes or references */
            for (size_t g = 0; g < ch->n_children; g++) {
                int gi = ch->children[g];
                const struct dq_diagram_node *gc = &d->nodes[gi];
                int v = gc->kind == DQ_NODE_REFERENCE ? gc->target : gi;
                count = probe_children_add(out, cap, count, v, seen);
            }
        }
    }
    free(seen);
    return count;
}

/* ---- lexer ------------------------------------------------------------------------ */

enum tok_type {
    T_EOF,
    T_IDENT,
    T_NUMBER,
    T_EQ,
    T_SEMI,
    T_ARROW,
    T_COLON,
    T_COMMA,
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_ERROR, /* the lexer has recorded an error */
};

struct token {
    enum tok_type type;
    const char *start;
    size_t len;
    int line, col;         /* first character */
    int end_line, end_col; /* just after the last character */
};

struct lexer {
    const char *src;
    size_t len;
    size_t pos;
    int line, col;
};

struct parser {
    struct lexer lx;
    struct token tok;  /* current token */
    struct token peek; /* the one after, when has_peek */
    int has_peek;
    struct token prev; /* the token before tok (for "missing ';' after …") */
    struct dq_diagram *d;
    struct dq_diagram_error *err;
    int rc; /* first error, DQ_OK while none */
    /* component lists per nesting level, reused between siblings */
    int *scratch[DQ_DIAGRAM_MAX_DEPTH + 1];
    size_t scratch_n[DQ_DIAGRAM_MAX_DEPTH + 1];
    size_t scratch_cap[DQ_DIAGRAM_MAX_DEPTH + 1];
    double *weights; /* probabilities of the p: being parsed (one level at a time) */
    size_t weights_cap;
};

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
fail_at(struct parser *p, int line, int col, const char *fmt, ...) {
    if (p->rc != DQ_OK) {
        return p->rc; /* keep the first error */
    }
    p->rc = DQ_EPARSE;
    if (p->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err->text, sizeof p->err->text, fmt, ap);
        va_end(ap);
        p->err->line = line;
        p->err->column = col;
    }
    return p->rc;
}

static int fail_nomem(struct parser *p) {
    if (p->rc == DQ_OK) {
        p->rc = DQ_ENOMEM;
        if (p->err) {
            p->err->line = 0;
            p->err->column = 0;
            snprintf(p->err->text, sizeof p->err->text, "out of memory");
        }
    }
    return p->rc;
}

static void lx_advance(struct lexer *lx) {
    unsigned char c = (unsigned char)lx->src[lx->pos++];
    if (c == '\n') {
        lx->line++;
        lx->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        lx->col++; /* UTF-8 continuation bytes belong to the previous character */
    }
}

static int is_ident_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c) {
    return c >= '0' && c <= '9';
}

/* Lexes the next token into *t (T_ERROR after recording the error in p). */
static void lx_next(struct parser *p, struct token *t) {
    struct lexer *lx = &p->lx;
    while (lx->pos < lx->len) {
        char c = lx->src[lx->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            lx_advance(lx);
        } else if (c == '#') { /* a comment runs to the end of the line */
            while (lx->pos < lx->len && lx->src[lx->pos] != '\n') {
                lx_advance(lx);
            }
        } else {
            break;
        }
    }
    t->start = lx->src + lx->pos;
    t->line = lx->line;
    t->col = lx->col;
    t->len = 0;
    if (lx->pos >= lx->len) {
        t->type = T_EOF;
    } else {
        unsigned char c = (unsigned char)lx->src[lx->pos];
        size_t begin = lx->pos;
        if (is_ident_start(c)) {
            while (lx->pos < lx->len && (is_ident_start((unsigned char)lx->src[lx->pos]) ||
                                         is_digit((unsigned char)lx->src[lx->pos]))) {
                lx_advance(lx);
            }
            t->type = T_IDENT;
        } else if (is_digit(c)) {
            while (lx->pos < lx->len && is_digit((unsigned char)lx->src[lx->pos])) {
                lx_advance(lx);
            }
            if (lx->pos < lx->len && lx->src[lx->pos] == '.') {
                lx_advance(lx);
                if (lx->pos >= lx->len || !is_digit((unsigned char)lx->src[lx->pos])) {
                    int len = (int)(lx->pos - begin);
                    fail_at(p, t->line, t->col,
                            "malformed number `%.*s`: digits must follow the point "
                            "(write %.*s0)",
                            len > 40 ? 40 : len, t->start, len > 40 ? 40 : len, t->start);
                    t->type = T_ERROR;
                    return;
                }
                while (lx->pos < lx->len && is_digit((unsigned char)lx->src[lx->pos])) {
                    lx_advance(lx);
                }
            }
            t->type = T_NUMBER;
        } else {
            lx_advance(lx);
            switch (c) {
            case '=':
                t->type = T_EQ;
                break;
            case ';':
                t->type = T_SEMI;
                break;
            case ':':
                t->type = T_COLON;
                break;
            case ',':
                t->type = T_COMMA;
                break;
            case '(':
                t->type = T_LPAREN;
                break;
            case ')':
                t->type = T_RPAREN;
                break;
            case '[':
                t->type = T_LBRACK;
                break;
            case ']':
                t->type = T_RBRACK;
                break;
            case '-':
                if (lx->pos < lx->len && lx->src[lx->pos] == '>') {
                    lx_advance(lx);
                    t->type = T_ARROW;
                    break;
                }
                fail_at(p, t->line, t->col, "expected '->' (a causal link), found '-' alone");
                t->type = T_ERROR;
                return;
            case '.':
                fail_at(p, t->line, t->col,
                        "unexpected character '.'; a number starts with a digit (write 0.5, "
                        "not .5)");
                t->type = T_ERROR;
                return;
            default:
                if (c >= 0x21 && c < 0x7f) {
                    fail_at(p, t->line, t->col,
                            "unexpected character '%c'; names use letters, digits and '_', "
                            "and '#' starts a comment",
                            c);
                } else {
                    fail_at(p, t->line, t->col,
                            "unexpected byte 0x%02X; only ASCII is allowed outside comments", c);
                }
                t->type = T_ERROR;
                return;
            }
        }
        t->len = lx->pos - begin;
    }
    t->end_line = lx->line;
    t->end_col = lx->col;
}

static void next(struct parser *p) {
    p->prev = p->tok;
    if (p->has_peek) {
        p->tok = p->peek;
        p->has_peek = 0;
    } else {
        lx_next(p, &p->tok);
    }
}

static const struct token *peek(struct parser *p) {
    if (!p->has_peek) {
        if (p->tok.type == T_EOF || p->tok.type == T_ERROR) {
            p->peek = p->tok;
        } else {
            lx_next(p, &p->peek);
        }
        p->has_peek = 1;
    }
    return &p->peek;
}

/* A short description of a token for messages ("`name`", "number `1.5`", "';'"). */
static const char *describe(const struct token *t, char *buf, size_t cap) {
    int len = t->len > 40 ? 40 : (int)t->len;
    const char *more = t->len > 40 ? "…" : "";
    switch (t->type) {
    case T_EOF:
        return "end of file";
    case T_IDENT:
        snprintf(buf, cap, "`%.*s%s`", len, t->start, more);
        return buf;
    case T_NUMBER:
        snprintf(buf, cap, "number `%.*s%s`", len, t->start, more);
        return buf;
    case T_ARROW:
        return "'->'";
    case T_ERROR:
        return "an invalid token";
    default:
        snprintf(buf, cap, "'%c'", t->start[0]);
        return buf;
    }
}

static int tok_is(const struct token *t, const char *word) {
    size_t n = strlen(word);
    return t->type == T_IDENT && t->len == n && memcmp(t->start, word, n) == 0;
}

/* ---- parser ----------------------------------------------------------------------- */

/*
 * Only `system` is reserved. The oscilloscope also reserved the operator letters s, a, f
 * and p, but an operator always has its ':' right after the letter, so dqd accepts them
 * as names too (`a = x -> y;`): every file the oscilloscope accepts means the same here.
 */
static const char *reserved_meaning(const struct token *t) {
    if (tok_is(t, "system")) {
        return "`system = …;` names the top of the diagram";
    }
    return NULL;
}

/*
 * Checks that the current token is a usable name (not reserved, not too long);
 * `what` says which name is expected ("a definition name").
 */
static int expect_name(struct parser *p, const char *what) {
    char buf[80];
    if (p->tok.type == T_ERROR) {
        return p->rc;
    }
    if (p->tok.type != T_IDENT) {
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected %s (a letter or '_', then letters, digits or '_'), found %s", what,
                       describe(&p->tok, buf, sizeof buf));
    }
    const char *meaning = reserved_meaning(&p->tok);
    if (meaning) {
        return fail_at(p, p->tok.line, p->tok.col,
                       "`%.*s` is a reserved word (%s); choose another name", (int)p->tok.len,
                       p->tok.start, meaning);
    }
    if (p->tok.len > DQ_DIAGRAM_MAX_NAME) {
        return fail_at(p, p->tok.line, p->tok.col,
                       "name `%.40s…` is %zu characters long; names are at most %d", p->tok.start,
                       p->tok.len, DQ_DIAGRAM_MAX_NAME);
    }
    return DQ_OK;
}

static int check_node_budget(struct parser *p) {
    if (p->d->n >= DQ_DIAGRAM_MAX_NODES) {
        return fail_at(p, p->tok.line, p->tok.col,
                       "the diagram has more than %d nodes; split it into smaller models",
                       DQ_DIAGRAM_MAX_NODES);
    }
    return DQ_OK;
}

/*
 * Creates a named node (definition or operator) for the name token t, which must not
 * be in use yet. Returns the index or a negative error.
 */
static int define_named(struct parser *p, const struct token *t, enum dq_node_kind kind, int line,
                        int col, int is_definition) {
    if (check_node_budget(p) < 0) {
        return p->rc;
    }
    int old = table_lookup(p->d, t->start, t->len);
    if (old >= 0) {
        const struct dq_diagram_node *o = &p->d->nodes[old];
        if (o->kind == DQ_NODE_OUTCOME) {
            if (is_definition) {
                return fail_at(p, t->line, t->col,
                               "`%.*s` is already an outcome (at %d:%d); rename this "
                               "definition, or write s:%.*s there to reuse it",
                               (int)t->len, t->start, o->line, o->column, (int)t->len, t->start);
            }
            return fail_at(p, t->line, t->col,
                           "`%.*s` is already an outcome (at %d:%d); give the operator "
                           "another name",
                           (int)t->len, t->start, o->line, o->column);
        }
        return fail_at(p, t->line, t->col, "`%.*s` is already defined at %d:%d; rename one of them",
                       (int)t->len, t->start, o->line, o->column);
    }
    int idx = node_new(p->d, kind, line, col);
    if (idx < 0) {
        return fail_nomem(p);
    }
    p->d->priv[idx].name = copy_name(t->start, t->len);
    if (!p->d->priv[idx].name) {
        return fail_nomem(p);
    }
    p->d->nodes[idx].name = p->d->priv[idx].name;
    p->d->nodes[idx].is_definition = is_definition;
    if (table_insert(p->d, idx) < 0) {
        return fail_nomem(p);
    }
    return idx;
}

/* The outcome node named by the current token, created at its first occurrence. */
static int outcome(struct parser *p) {
    const struct token *t = &p->tok;
    int old = table_lookup(p->d, t->start, t->len);
    if (old >= 0) {
        const struct dq_diagram_node *o = &p->d->nodes[old];
        if (o->kind == DQ_NODE_OUTCOME) {
            return old;
        }
        if (o->is_definition) {
            return fail_at(p, t->line, t->col,
                           "`%.*s` is a definition (at %d:%d), not an outcome; write s:%.*s to "
                           "reuse it, or rename this outcome",
                           (int)t->len, t->start, o->line, o->column, (int)t->len, t->start);
        }
        return fail_at(p, t->line, t->col,
                       "`%.*s` names the operator at %d:%d; rename this outcome", (int)t->len,
                       t->start, o->line, o->column);
    }
    return define_named(p, t, DQ_NODE_OUTCOME, t->line, t->col, 0);
}

static int scratch_push(struct parser *p, int level, int v) {
    if (p->scratch_n[level] == p->scratch_cap[level]) {
        size_t cap = p->scratch_cap[level] ? p->scratch_cap[level] * 2 : 8;
        int *s = realloc(p->scratch[level], cap * sizeof *s);
        if (!s) {
            return fail_nomem(p);
        }
        p->scratch[level] = s;
        p->scratch_cap[level] = cap;
    }
    p->scratch[level][p->scratch_n[level]++] = v;
    return DQ_OK;
}

static int parse_chain(struct parser *p, int depth);

static const char *const component_forms =
    "an outcome NAME, s:NAME, a:NAME(…), f:NAME(…) or p:NAME[…](…)";

/* s:NAME at the current token (`s`); returns the reference node. */
static int parse_reference(struct parser *p) {
    int line = p->tok.line, col = p->tok.col;
    next(p); /* s */
    next(p); /* : */
    if (expect_name(p, "a definition name after s:") < 0) {
        return p->rc;
    }
    if (check_node_budget(p) < 0) {
        return p->rc;
    }
    int idx = node_new(p->d, DQ_NODE_REFERENCE, line, col);
    if (idx < 0) {
        return fail_nomem(p);
    }
    p->d->priv[idx].ref_name = copy_name(p->tok.start, p->tok.len);
    if (!p->d->priv[idx].ref_name) {
        return fail_nomem(p);
    }
    next(p);
    return idx;
}

/* Reads p:NAME's probabilities, the current token being '['. */
static int parse_weights(struct parser *p, size_t *count) {
    char buf[80];
    *count = 0;
    next(p); /* [ */
    for (;;) {
        if (p->tok.type != T_NUMBER) {
            if (p->tok.type == T_ERROR) {
                return p->rc;
            }
            return fail_at(p, p->tok.line, p->tok.col,
                           "expected a probability (a number ≥ 0, like 0.25), found %s",
                           describe(&p->tok, buf, sizeof buf));
        }
        char num[64];
        if (p->tok.len >= sizeof num) {
            return fail_at(p, p->tok.line, p->tok.col,
                           "probability `%.20s…` has too many digits; write at most %zu",
                           p->tok.start, sizeof num - 1);
        }
        memcpy(num, p->tok.start, p->tok.len);
        num[p->tok.len] = '\0';
        double w = strtod(num, NULL); /* the grammar's NUMBER: finite, ≥ 0 */
        if (*count == p->weights_cap) {
            size_t cap = p->weights_cap ? p->weights_cap * 2 : 8;
            double *wv = realloc(p->weights, cap * sizeof *wv);
            if (!wv) {
                return fail_nomem(p);
            }
            p->weights = wv;
            p->weights_cap = cap;
        }
        p->weights[(*count)++] = w;
        next(p);
        if (p->tok.type == T_COMMA) {
            next(p);
            continue;
        }
        if (p->tok.type == T_RBRACK) {
            next(p);
            return DQ_OK;
        }
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected ',' or ']' after a probability, found %s",
                       describe(&p->tok, buf, sizeof buf));
    }
}

static int is_operator_kind(enum dq_node_kind k) {
    return k == DQ_NODE_FIRST || k == DQ_NODE_ALL || k == DQ_NODE_CHOICE;
}

/*
 * Skips an operator's [...] and (...) after its name, checking only that they are there
 * and balanced: the body of an operator written a second time, which the oscilloscope
 * ignores (it reuses the first). Iterative, whatever the nesting.
 */
static int skip_operator_body(struct parser *p, char letter, int nl, const char *name) {
    char buf[80];
    if (p->tok.type == T_LBRACK) {
        while (p->tok.type != T_RBRACK) {
            if (p->tok.type == T_ERROR) {
                return p->rc;
            }
            if (p->tok.type == T_EOF) {
                return fail_at(p, p->tok.line, p->tok.col,
                               "expected ']' to close the probabilities of p:%.*s, found end of "
                               "file",
                               nl, name);
            }
            next(p);
        }
        next(p);
    }
    if (p->tok.type != T_LPAREN) {
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected '(' and the branches of %c:%.*s, found %s", letter, nl, name,
                       describe(&p->tok, buf, sizeof buf));
    }
    long open = 0;
    do {
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        if (p->tok.type == T_EOF) {
            return fail_at(p, p->tok.line, p->tok.col,
                           "expected ')' to close %c:%.*s(…), found end of file", letter, nl, name);
        }
        open += p->tok.type == T_LPAREN;
        open -= p->tok.type == T_RPAREN;
        next(p);
    } while (open > 0);
    return DQ_OK;
}

/* An operator written a second time (old is the first): the oscilloscope reuses the first,
 * so this one's body is skipped with a warning. Returns old. */
static int reuse_operator(struct parser *p, int old, enum dq_node_kind kind, char letter,
                          const struct token *name, int line, int col) {
    int nl = name->len > 60 ? 60 : (int)name->len;
    const struct dq_diagram_node *o = &p->d->nodes[old];
    const char *as = o->kind == DQ_NODE_ALL     ? " as an all-to-finish"
                     : o->kind == DQ_NODE_FIRST ? " as a first-to-finish"
                                                : " as a probabilistic choice";
    warn_at(p->d, line, col,
            "%c:%.*s is already written at %d:%d%s: this is that operator again (its "
            "branches there are used, the ones here are ignored, as in the oscilloscope)",
            letter, nl, name->start, o->line, o->column, o->kind == kind ? "" : as);
    next(p);
    if (skip_operator_body(p, letter, nl, name->start) < 0) {
        return p->rc;
    }
    return old;
}

/* p:NAME's [probabilities] at the current token, kept as node idx's weights (normalised
 * later, by check_choice). */
static int parse_choice_weights(struct parser *p, int idx, const struct token *name,
                                size_t *n_weights) {
    char buf[80];
    int nl = name->len > 60 ? 60 : (int)name->len;
    if (p->tok.type != T_LBRACK) {
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected '[' and one probability per branch after p:%.*s "
                       "(p:%.*s[0.5, 0.5](x, y)), found %s",
                       nl, name->start, nl, name->start, describe(&p->tok, buf, sizeof buf));
    }
    if (parse_weights(p, n_weights) < 0) {
        return p->rc;
    }
    double *w = malloc(*n_weights * sizeof *w);
    if (!w) {
        return fail_nomem(p);
    }
    memcpy(w, p->weights, *n_weights * sizeof *w);
    p->d->priv[idx].weights = w;
    return DQ_OK;
}

/* The branches of operator idx, the current token being '(': each a chain (several
 * components make an anonymous sequence), up to ')'. */
static int parse_branches(struct parser *p, int idx, int depth, char letter,
                          const struct token *name) {
    char buf[80];
    int nl = name->len > 60 ? 60 : (int)name->len;
    next(p); /* ( */
    for (;;) {
        if (parse_chain(p, depth + 1) < 0) {
            return p->rc;
        }
        int level = depth + 1;
        int branch;
        if (p->scratch_n[level] == 1) {
            branch = p->scratch[level][0];
        } else {
            /* a multi-component branch is an anonymous sequence (no probe of its own) */
            if (check_node_budget(p) < 0) {
                return p->rc;
            }
            int first = p->scratch[level][0];
            branch = node_new(p->d, DQ_NODE_SEQUENCE, p->d->nodes[first].line,
                              p->d->nodes[first].column);
            if (branch < 0) {
                return fail_nomem(p);
            }
            for (size_t j = 0; j < p->scratch_n[level]; j++) {
                if (node_add_child(p->d, branch, p->scratch[level][j]) < 0) {
                    return fail_nomem(p);
                }
            }
        }
        if (node_add_child(p->d, idx, branch) < 0) {
            return fail_nomem(p);
        }
        if (p->tok.type == T_COMMA) {
            next(p);
            continue;
        }
        if (p->tok.type == T_RPAREN) {
            next(p);
            return DQ_OK;
        }
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected ',' (another branch), '->' or ')' in %c:%.*s(…), found %s", letter,
                       nl, name->start, describe(&p->tok, buf, sizeof buf));
    }
}

/* A choice's probabilities against its branches: one each, not all 0, taken in proportion
 * (a warning when they do not sum to 1, and for each 0). */
static int check_choice(struct parser *p, int idx, const struct token *name, size_t n_weights,
                        int line, int col) {
    int nl = name->len > 60 ? 60 : (int)name->len;
    size_t nb = p->d->nodes[idx].n_children;
    if (n_weights != nb) {
        return fail_at(p, line, col,
                       "p:%.*s has %zu probabilities but %zu branches; give one probability "
                       "per branch",
                       nl, name->start, n_weights, nb);
    }
    double *w = p->d->priv[idx].weights, sum = 0.0;
    for (size_t j = 0; j < n_weights; j++) {
        sum += w[j];
    }
    if (!(sum > 0.0) || !isfinite(sum)) {
        return fail_at(p, line, col,
                       "the probabilities of p:%.*s are all 0; give at least one branch a "
                       "probability above 0",
                       nl, name->start);
    }
    /* any non-negative weights, taken in proportion (the thesis, eq. 2.5, and the
     * DeltaQ library): thirds written 0.3333 need not sum to exactly 1 */
    if (fabs(sum - 1.0) > 1e-3) {
        warn_at(p->d, line, col,
                "the probabilities of p:%.*s sum to %.10g, not 1: they are taken in "
                "proportion (each divided by %.10g)",
                nl, name->start, sum, sum);
    }
    for (size_t j = 0; j < n_weights; j++) {
        if (w[j] == 0.0) {
            warn_at(p->d, line, col, "branch %zu of p:%.*s has probability 0: it is never taken",
                    j + 1, nl, name->start);
        }
        w[j] /= sum;
    }
    p->d->nodes[idx].weights = w;
    return DQ_OK;
}

/* a:, f: or p: at the current token; returns the operator node. */
static int parse_operator(struct parser *p, int depth) {
    char buf[80];
    char letter = p->tok.start[0];
    int line = p->tok.line, col = p->tok.col;
    enum dq_node_kind kind = letter == 'a'   ? DQ_NODE_ALL
                             : letter == 'f' ? DQ_NODE_FIRST
                                             : DQ_NODE_CHOICE;
    const char *what = kind == DQ_NODE_ALL     ? "all-to-finish"
                       : kind == DQ_NODE_FIRST ? "first-to-finish"
                                               : "probabilistic choice";
    next(p); /* letter */
    next(p); /* : */
    if (expect_name(p, kind == DQ_NODE_CHOICE ? "a name after p:" : "an operator name") < 0) {
        return p->rc;
    }
    struct token name = p->tok;
    int nl = name.len > 60 ? 60 : (int)name.len;
    int old = table_lookup(p->d, name.start, name.len);
    if (old >= 0 && is_operator_kind(p->d->nodes[old].kind)) {
        return reuse_operator(p, old, kind, letter, &name, line, col);
    }
    int idx = define_named(p, &name, kind, line, col, 0);
    if (idx < 0) {
        return p->rc;
    }
    next(p);
    size_t n_weights = 0;
    if (kind == DQ_NODE_CHOICE) {
        if (parse_choice_weights(p, idx, &name, &n_weights) < 0) {
            return p->rc;
        }
    } else if (p->tok.type == T_LBRACK) {
        return fail_at(p, p->tok.line, p->tok.col,
                       "only p: takes probabilities; remove the [...] after %c:%.*s", letter, nl,
                       name.start);
    }
    if (p->tok.type != T_LPAREN) {
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected '(' and the branches of %c:%.*s, found %s", letter, nl, name.start,
                       describe(&p->tok, buf, sizeof buf));
    }
    if (depth + 1 > DQ_DIAGRAM_MAX_DEPTH) {
        return fail_at(p, line, col,
                       "operators nested more than %d deep; move inner parts into named "
                       "definitions (NAME = …;) and use s:NAME",
                       DQ_DIAGRAM_MAX_DEPTH);
    }
    if (parse_branches(p, idx, depth, letter, &name) < 0) {
        return p->rc;
    }
    if (p->d->nodes[idx].n_children < 2) {
        return fail_at(p, line, col,
                       "%c:%.*s has one branch; %s needs at least two (add a branch, or "
                       "write the component without the operator)",
                       letter, nl, name.start, what);
    }
    if (kind == DQ_NODE_CHOICE && check_choice(p, idx, &name, n_weights, line, col) < 0) {
        return p->rc;
    }
    return idx;
}

/* One component at the current token; returns its node index. */
static int parse_component(struct parser *p, int depth) {
    char buf[80];
    if (p->tok.type == T_ERROR) {
        return p->rc;
    }
    if (p->tok.type != T_IDENT) {
        return fail_at(p, p->tok.line, p->tok.col, "expected %s, found %s", component_forms,
                       describe(&p->tok, buf, sizeof buf));
    }
    const struct token *nx = peek(p);
    if (nx->type == T_ERROR) {
        return p->rc;
    }
    if (nx->type == T_COLON) {
        if (tok_is(&p->tok, "s")) {
            return parse_reference(p);
        }
        if (tok_is(&p->tok, "a") || tok_is(&p->tok, "f") || tok_is(&p->tok, "p")) {
            return parse_operator(p, depth);
        }
        int len = p->tok.len > 40 ? 40 : (int)p->tok.len;
        return fail_at(p, p->tok.line, p->tok.col,
                       "unknown prefix `%.*s:`; use s: (reference), a: (all-to-finish), f: "
                       "(first-to-finish) or p: (probabilistic choice)",
                       len, p->tok.start);
    }
    if (expect_name(p, "an outcome name") < 0) {
        return p->rc;
    }
    int idx = outcome(p);
    if (idx >= 0) {
        next(p);
    }
    return idx;
}

/* component ('->' component)*, into scratch[depth]. */
static int parse_chain(struct parser *p, int depth) {
    p->scratch_n[depth] = 0;
    for (;;) {
        int c = parse_component(p, depth);
        if (c < 0) {
            return p->rc;
        }
        if (scratch_push(p, depth, c) < 0) {
            return p->rc;
        }
        if (p->tok.type != T_ARROW) {
            return DQ_OK;
        }
        next(p);
    }
}

/* NAME = chain ;  (or system = chain ;?) at the current token. */
static int parse_definition(struct parser *p, int is_system) {
    char buf[80];
    struct token name = p->tok;
    int nl = name.len > 60 ? 60 : (int)name.len;
    if (!is_system && name.type == T_IDENT && peek(p)->type == T_COLON) {
        /* the oscilloscope's rule: a component is only observed inside a definition */
        return fail_at(p, name.line, name.col,
                       "`%.*s:` cannot stand alone; put it in a definition, as in "
                       "NAME = %.*s:…;",
                       nl, name.start, nl, name.start);
    }
    if (!is_system && expect_name(p, "a definition name") < 0) {
        return p->rc;
    }
    next(p);
    if (p->tok.type != T_EQ) {
        if (p->tok.type == T_ERROR) {
            return p->rc;
        }
        return fail_at(p, p->tok.line, p->tok.col,
                       "expected '=' after `%.*s` (a definition reads NAME = chain;), found %s", nl,
                       name.start, describe(&p->tok, buf, sizeof buf));
    }
    int idx = define_named(p, &name, DQ_NODE_SEQUENCE, name.line, name.col, 1);
    if (idx < 0) {
        return p->rc;
    }
    next(p);
    if (parse_chain(p, 0) < 0) {
        return p->rc;
    }
    for (size_t j = 0; j < p->scratch_n[0]; j++) {
        if (node_add_child(p->d, idx, p->scratch[0][j]) < 0) {
            return fail_nomem(p);
        }
    }
    if (p->tok.type == T_SEMI) {
        next(p);
        return DQ_OK;
    }
    if (p->tok.type == T_ERROR) {
        return p->rc;
    }
    if (is_system && p->tok.type == T_EOF) {
        return DQ_OK; /* the oscilloscope lets the last line end without ';' */
    }
    return fail_at(p, p->prev.end_line, p->prev.end_col,
                   "expected ';' to end the definition of `%.*s` (or '->' to continue it), "
                   "found %s",
                   nl, name.start, describe(&p->tok, buf, sizeof buf));
}

/* ---- after parsing: references, cycles, layout ------------------------------------- */

/* The outcome made for s:NAME when NAME is never defined: a probe observed on its own. */
static int implicit_outcome(struct parser *p, const char *nm, int line, int col) {
    struct dq_diagram *d = p->d;
    if (d->n >= DQ_DIAGRAM_MAX_NODES) {
        return fail_at(p, line, col,
                       "the diagram has more than %d nodes; split it into smaller models",
                       DQ_DIAGRAM_MAX_NODES);
    }
    int o = node_new(d, DQ_NODE_OUTCOME, line, col);
    if (o < 0) {
        return fail_nomem(p);
    }
    d->priv[o].name = copy_name(nm, strlen(nm));
    if (!d->priv[o].name) {
        return fail_nomem(p);
    }
    d->nodes[o].name = d->priv[o].name;
    d->priv[o].implicit = 1;
    if (table_insert(d, o) < 0) {
        return fail_nomem(p);
    }
    return o;
}

static int resolve_references(struct parser *p) {
    struct dq_diagram *d = p->d;
    size_t n = d->n; /* implicit outcomes are appended past the references */
    for (size_t i = 0; i < n; i++) {
        if (d->nodes[i].kind != DQ_NODE_REFERENCE) {
            continue;
        }
        const char *nm = d->priv[i].ref_name;
        int nl = (int)strlen(nm);
        int line = d->nodes[i].line, col = d->nodes[i].column;
        int t = table_lookup(d, nm, strlen(nm));
        if (t < 0) {
            warn_at(d, line, col,
                    "s:%s refers to `%s`, which is never defined: it is taken as a probe "
                    "observed on its own, as the oscilloscope does (define %s = …; if it has "
                    "parts)",
                    nm, nm, nm);
            t = implicit_outcome(p, nm, line, col);
            if (t < 0) {
                return p->rc;
            }
        } else if (d->nodes[t].kind == DQ_NODE_OUTCOME) {
            if (!d->priv[t].implicit) {
                warn_at(d, line, col,
                        "s:%.*s names the outcome `%.*s` (at %d:%d): it is that outcome, observed "
                        "by its probe (write %.*s without s:)",
                        nl, nm, nl, nm, d->nodes[t].line, d->nodes[t].column, nl, nm);
            }
        } else if (!d->nodes[t].is_definition) {
            const struct dq_diagram_node *td = &d->nodes[t];
            return fail_at(p, line, col,
                           "s:%.*s must refer to a definition, but `%.*s` is an operator (at "
                           "%d:%d); write %.*s without s:",
                           nl, nm, nl, nm, td->line, td->column, nl, nm);
        }
        d->nodes[i].target = t;
        if (node_add_child(d, (int)i, t) < 0) {
            return fail_nomem(p);
        }
        free(d->priv[i].ref_name);
        d->priv[i].ref_name = NULL;
    }
    return DQ_OK;
}

/* Appends " -> name" pieces of a cycle to buf without overflowing it. */
static void cycle_append(char *buf, size_t cap, const char *name) {
    size_t used = strlen(buf);
    if (used + 1 >= cap) {
        return;
    }
    snprintf(buf + used, cap - used, "%s%s", used ? " -> " : "", name);
}

/*
 * Looks for a cycle of references with an iterative depth-first search in node order,
 * and reports the reference that closes the first one found.
 */
static int check_cycles(struct parser *p) {
    struct dq_diagram *d = p->d;
    if (d->n == 0) {
        return DQ_OK;
    }
    unsigned char *color = calloc(d->n, 1); /* 0 unvisited, 1 on the stack, 2 done */
    int *stack = malloc(d->n * sizeof *stack);
    size_t *next_child = malloc(d->n * sizeof *next_child);
    if (!color || !stack || !next_child) {
        free(color);
        free(stack);
        free(next_child);
        return fail_nomem(p);
    }
    int rc = DQ_OK;
    for (size_t s = 0; s < d->n && rc == DQ_OK; s++) {
        if (color[s]) {
            continue;
        }
        size_t top = 0;
        stack[top] = (int)s;
        next_child[top] = 0;
        color[s] = 1;
        top = 1;
        while (top > 0 && rc == DQ_OK) {
            int u = stack[top - 1];
            const struct dq_diagram_node *nu = &d->nodes[u];
            if (next_child[top - 1] == nu->n_children) {
                color[u] = 2;
                top--;
                continue;
            }
            int v = nu->children[next_child[top - 1]++];
            if (color[v] == 0) {
                color[v] = 1;
                stack[top] = v;
                next_child[top] = 0;
                top++;
            } else if (color[v] == 1) {
                char path[200] = "";
                size_t from = 0;
                while (stack[from] != v) {
                    from++;
                }
                for (size_t j = from; j < top; j++) {
                    if (d->nodes[stack[j]].is_definition) {
                        cycle_append(path, sizeof path, d->nodes[stack[j]].name);
                    }
                }
                cycle_append(path, sizeof path, d->nodes[v].name);
                rc = fail_at(p, nu->line, nu->column,
                             "cycle of references %s; a definition cannot contain itself, "
                             "remove one of these s: references",
                             path);
            }
        }
    }
    free(color);
    free(stack);
    free(next_child);
    return rc;
}

/* Parents, roots and probes in flat arrays. */
static int lay_out(struct parser *p) {
    struct dq_diagram *d = p->d;
    size_t total = 0;
    size_t *count = calloc(d->n + 1, sizeof *count);
    if (!count) {
        return fail_nomem(p);
    }
    for (size_t i = 0; i < d->n; i++) {
        for (size_t c = 0; c < d->nodes[i].n_children; c++) {
            count[d->nodes[i].children[c]]++;
            total++;
        }
    }
    d->parents_flat = malloc((total ? total : 1) * sizeof *d->parents_flat);
    d->roots = malloc((d->n ? d->n : 1) * sizeof *d->roots);
    d->probes = malloc((d->n ? d->n : 1) * sizeof *d->probes);
    if (!d->parents_flat || !d->roots || !d->probes) {
        free(count);
        return fail_nomem(p);
    }
    size_t off = 0;
    for (size_t i = 0; i < d->n; i++) {
        d->nodes[i].parents = d->parents_flat + off;
        d->nodes[i].n_parents = 0;
        off += count[i];
    }
    free(count);
    for (size_t i = 0; i < d->n; i++) {
        for (size_t c = 0; c < d->nodes[i].n_children; c++) {
            struct dq_diagram_node *ch = &d->nodes[d->nodes[i].children[c]];
            int *slot = (int *)ch->parents + ch->n_parents++;
            *slot = (int)i;
        }
    }
    for (size_t i = 0; i < d->n; i++) {
        if (d->nodes[i].is_definition && d->nodes[i].n_parents == 0) {
            d->roots[d->n_roots++] = (int)i;
        }
        if (d->nodes[i].name) {
            d->probes[d->n_probes++] = (int)i;
        }
        if (d->nodes[i].n_children == 0) {
            d->nodes[i].children = NULL;
        }
    }
    return DQ_OK;
}

/* Puts the warnings in text order (those about references are found after parsing);
 * stable, and there are at most DQ_DIAGRAM_MAX_WARNINGS of them. */
static void sort_warnings(struct dq_diagram *d) {
    for (size_t i = 1; i < d->n_warnings; i++) {
        struct dq_diagram_error w = d->warnings[i];
        size_t j = i;
        while (j > 0 &&
               (d->warnings[j - 1].line > w.line ||
                (d->warnings[j - 1].line == w.line && d->warnings[j - 1].column > w.column))) {
            d->warnings[j] = d->warnings[j - 1];
            j--;
        }
        d->warnings[j] = w;
    }
}

int dq_diagram_parse(const char *text, size_t len, struct dq_diagram **out,
                     struct dq_diagram_error *err) {
    if (err) {
        err->line = 0;
        err->column = 0;
        err->text[0] = '\0';
    }
    if (!out || (!text && len > 0)) {
        if (err) {
            snprintf(err->text, sizeof err->text, "no text to parse");
        }
        return dq_fail(DQ_EINVAL, "dq_diagram_parse: NULL argument");
    }
    *out = NULL;
    struct parser p;
    memset(&p, 0, sizeof p);
    struct dq_diagram_error local_err;
    p.err = err ? err : &local_err;
    p.lx.src = text ? text : "";
    p.lx.len = len;
    p.lx.line = 1;
    p.lx.col = 1;
    p.d = calloc(1, sizeof *p.d);
    if (!p.d) {
        fail_nomem(&p);
    } else {
        next(&p);
        int seen_system = 0;
        while (p.rc == DQ_OK && p.tok.type != T_EOF) {
            char buf[80];
            if (p.tok.type == T_ERROR) {
                break;
            }
            if (seen_system) {
                const struct dq_diagram_node *sys = &p.d->nodes[seen_system - 1];
                if (tok_is(&p.tok, "system")) {
                    fail_at(&p, p.tok.line, p.tok.col,
                            "`system` is already defined at %d:%d; keep one", sys->line,
                            sys->column);
                } else {
                    fail_at(&p, p.tok.line, p.tok.col,
                            "`system = …` (line %d) must come last; move %s and what "
                            "follows above it",
                            sys->line, describe(&p.tok, buf, sizeof buf));
                }
                break;
            }
            int is_system = tok_is(&p.tok, "system");
            size_t before = p.d->n;
            if (parse_definition(&p, is_system) < 0) {
                break;
            }
            if (is_system) {
                seen_system = (int)before + 1;
            }
        }
        if (p.rc == DQ_OK) {
            resolve_references(&p);
        }
        if (p.rc == DQ_OK) {
            check_cycles(&p);
        }
        if (p.rc == DQ_OK) {
            lay_out(&p);
        }
        if (p.rc == DQ_OK) {
            sort_warnings(p.d);
        }
    }
    for (size_t i = 0; i <= DQ_DIAGRAM_MAX_DEPTH; i++) {
        free(p.scratch[i]);
    }
    free(p.weights);
    if (p.rc != DQ_OK) {
        dq_diagram_destroy(p.d);
        if (p.rc == DQ_ENOMEM) {
            return dq_fail(DQ_ENOMEM, "out of memory while parsing a diagram");
        }
        return dq_fail(p.rc, "%d:%d: %s", p.err->line, p.err->column, p.err->text);
    }
    *out = p.d;
    return DQ_OK;
}
