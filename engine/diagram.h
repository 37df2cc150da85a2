/*
 * diagram.h: outcome diagrams (the `.dq` language of docs/outcome-diagrams.md) and the
 * evaluator that computes every node's calculated ΔQ from its children's ΔQs.
 *
 * A diagram is parsed once from text into an immutable model: a table of nodes indexed
 * 0 … count−1. Named nodes (definitions `NAME = chain;`, operators `a:`/`f:`/`p:` and
 * outcomes) each carry one probe of the same name; a name identifies exactly one node,
 * so an outcome written twice is one node with two parents, and so is an operator written
 * twice (the first's branches; a warning). Anonymous nodes have no probe: the sequence
 * formed by a multi-component branch of an operator, and each `s:NAME` occurrence (a
 * reference whose only child is the definition it names, or the outcome NAME: written as
 * one, or never defined, a probe observed on its own; both with a warning).
 * Definitions are sequences; the roots are the definitions no reference points at
 * (`system` is always one).
 *
 * The evaluator is separate from the model so that the daemon can keep one per diagram
 * and re-run it at every window close: it borrows observed ΔQs for some nodes, holds a
 * grid (k, n) per node, and owns the calculated ΔQs it produces. A node's calculated
 * ΔQ is its operator applied to its children's *effective* ΔQs (observed where given,
 * calculated otherwise), re-expressed at the node's own grid; it is absent (NULL) when
 * some child has neither. Parsing and evaluating never recurse on the input: nesting is
 * bounded at parse time and evaluation walks a precomputed topological order.
 */
#ifndef DQ_DIAGRAM_H
#define DQ_DIAGRAM_H

#include <stddef.h>

#include "dq.h"

#define DQ_DIAGRAM_MAX_NAME 255     /* bytes in a name (a probe name) */
#define DQ_DIAGRAM_MAX_DEPTH 64     /* nesting of operators inside operators */
#define DQ_DIAGRAM_MAX_NODES 200000 /* nodes in one diagram */
#define DQ_DIAGRAM_ERROR_TEXT 320   /* bytes of an error message, NUL included */

enum dq_node_kind {
    DQ_NODE_OUTCOME = 0,   /* a leaf observed by its probe */
    DQ_NODE_SEQUENCE = 1,  /* a definition, or an anonymous multi-component branch */
    DQ_NODE_FIRST = 2,     /* f:NAME(…) first-to-finish */
    DQ_NODE_ALL = 3,       /* a:NAME(…) all-to-finish */
    DQ_NODE_CHOICE = 4,    /* p:NAME[…](…) probabilistic choice */
    DQ_NODE_REFERENCE = 5, /* s:NAME, one per occurrence; child = the definition */
};

/* A read-only view of one node; every pointer is owned by the diagram. */
struct dq_diagram_node {
    enum dq_node_kind kind;
    const char *name;      /* probe name; NULL for anonymous sequences and references */
    int line;              /* where the node is defined or first written (1-based) */
    int column;            /* 1-based, counted in characters */
    const int *children;   /* in written order; a reference has its definition */
    size_t n_children;     /* 0 for outcomes */
    const int *parents;    /* every node whose children include this one */
    size_t n_parents;      /* 0 for roots; >1 for shared outcomes and reused definitions */
    const double *weights; /* choice: one per child as written, divided by their sum (so
                              they sum to 1); NULL otherwise */
    int target;            /* reference: the definition's (or outcome's) index; −1 otherwise */
    int is_definition;     /* 1 for `NAME = chain;` (including system) */
};

/* Where and why parsing failed, as jansson's json_error_t: the first error only. */
struct dq_diagram_error {
    int line;   /* 1-based; 0 when the failure has no position (out of memory) */
    int column; /* 1-based, in characters */
    char text[DQ_DIAGRAM_ERROR_TEXT];
};

struct dq_diagram;

/*
 * Parses `len` bytes of `.dq` text (NUL bytes are ordinary, invalid characters) into a
 * new diagram in *out. On failure returns DQ_EPARSE (or DQ_ENOMEM), leaves *out NULL,
 * fills *err (when not NULL) with the line, column and a message that says what to
 * change, and sets dq_last_error() to "LINE:COL: message". Never crashes or recurses
 * without bound on any input.
 */
int dq_diagram_parse(const char *text, size_t len, struct dq_diagram **out,
                     struct dq_diagram_error *err);

/*
 * What the parser accepted but warns about, the way the ΔQ Oscilloscope reads it (docs/
 * outcome-diagrams.md, "Differences"): an s: reference to a name never defined (a probe
 * observed on its own), s: naming an outcome, an operator name written twice (the first is
 * used, the second's branches are ignored), choice probabilities that do not sum to 1
 * within 1e-3 or that are 0. In text order; at most DQ_DIAGRAM_MAX_WARNINGS are kept
 * (dq_diagram_warning_total counts them all). Valid until destroy.
 */
#define DQ_DIAGRAM_MAX_WARNINGS 64
size_t dq_diagram_warning_count(const struct dq_diagram *d);
size_t dq_diagram_warning_total(const struct dq_diagram *d);
const struct dq_diagram_error *dq_diagram_warning(const struct dq_diagram *d, size_t j);

/* Releases a diagram; NULL is a no-op. Evaluators of the diagram must be gone first. */
void dq_diagram_destroy(struct dq_diagram *d);

/* Number of nodes. */
size_t dq_diagram_node_count(const struct dq_diagram *d);

/* The node at index i, or NULL when i is out of range. Valid until destroy. */
const struct dq_diagram_node *dq_diagram_node(const struct dq_diagram *d, int i);

/* The index of the node carrying probe `name`, or −1 (references are never found). */
int dq_diagram_find(const struct dq_diagram *d, const char *name);

/* Roots in file order: definitions that no reference points at. */
size_t dq_diagram_root_count(const struct dq_diagram *d);
int dq_diagram_root(const struct dq_diagram *d, size_t j);

/* Named nodes (probes) in index order: where each is defined or, for an outcome, first
 * written; j < dq_diagram_probe_count. */
size_t dq_diagram_probe_count(const struct dq_diagram *d);
int dq_diagram_probe(const struct dq_diagram *d, size_t j);

/*
 * The nearest named descendants of node i: its children, looking through anonymous
 * sequences and references (what the adaptive search can enable below a probe).
 * Writes up to `cap` node indices to out and returns how many there are in total (may
 * exceed cap). Each probe appears once, in written order. Returns 0 when out of memory.
 */
size_t dq_diagram_probe_children(const struct dq_diagram *d, int i, int *out, size_t cap);

/* Short name of a kind: "outcome", "sequence", "first", "all", "choice", "reference". */
const char *dq_node_kind_name(enum dq_node_kind kind);

/* ---- evaluator ---------------------------------------------------------------------- */

struct dq_eval;

/*
 * Creates an evaluator for `d` (which must outlive it) with every node on grid (k, n).
 * DQ_ERANGE for a bad grid, DQ_ENOMEM.
 */
int dq_eval_create(const struct dq_diagram *d, int k, int n, struct dq_eval **out);

/* Releases the evaluator and the calculated ΔQs it owns; NULL is a no-op. */
void dq_eval_destroy(struct dq_eval *ev);

/* Sets node i's grid: its calculated ΔQ is re-expressed at width 2^k ms and n bins. */
int dq_eval_set_grid(struct dq_eval *ev, int i, int k, int n);

/*
 * Gives node i an observed ΔQ (NULL clears it). The evaluator borrows `obs`: it must
 * stay valid and unchanged until it is cleared, replaced or the evaluator destroyed.
 * Setting it on a reference is DQ_EINVAL (set it on the definition).
 */
int dq_eval_set_observed(struct dq_eval *ev, int i, const struct dq *obs);

/* Same by probe name; DQ_ENOTFOUND when no node carries that name. */
int dq_eval_set_observed_by_name(struct dq_eval *ev, const char *name, const struct dq *obs);

/* Forgets every observed ΔQ (a new window). */
void dq_eval_clear_observed(struct dq_eval *ev);

/*
 * Recomputes every node's calculated ΔQ, children before parents, replacing the
 * previous run's results. A node whose children lack ΔQs gets none (not an error).
 * Returns DQ_OK, or an operator's error (DQ_ENOMEM …) with every result cleared.
 */
int dq_eval_run(struct dq_eval *ev);

/* Node i's calculated ΔQ from the last run, or NULL (outcomes, references, missing
 * inputs, out of range). Owned by the evaluator until the next run or destroy. */
const struct dq *dq_eval_calculated(const struct dq_eval *ev, int i);

/* What node i contributes to its parents: its observed ΔQ when set, else its
 * calculated one (for a reference, its definition's), else NULL. */
const struct dq *dq_eval_effective(const struct dq_eval *ev, int i);

/* The observed ΔQ set on node i, or NULL. */
const struct dq *dq_eval_observed(const struct dq_eval *ev, int i);

/*
 * After a run: the outcomes (node indices, in index order) whose missing ΔQs keep node i
 * from having an effective ΔQ. Writes up to cap of them and returns the total count
 * (0 when node i has one).
 */
size_t dq_eval_missing(const struct dq_eval *ev, int i, int *out, size_t cap);

#endif /* DQ_DIAGRAM_H */
