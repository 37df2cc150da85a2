/*
 * exemplars.c: the exemplars a probe keeps per window (see core.h, "exemplars"): the
 * slowest successful instances and the first failed ones among those that identify
 * themselves (a v2 line's t:, i:, a:; a span's ids), kept in one allocation per probe made
 * at its first such instance. probes.c calls in here from its hot path only for those
 * instances, and at window close and grid changes.
 */
#include "core_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dq_error.h"

/* One window's exemplars: the slowest ok ones at [0, slow_cap), the failed ones after. */
struct ex_set {
    int64_t wid; /* the window they belong to; INT64_MIN: none */
    int n_slow, n_fail;
    int fastest; /* among the slow ones when full: the one a slower instance replaces */
};

struct probe_exemplars {
    int slow_cap, fail_cap;
    int nsets;                               /* the open windows' sets, then the closed one */
    struct ex_set set[PROBES_MAX_SLOTS + 1]; /* nsets used */
    struct probe_exemplar e[];               /* nsets × (slow_cap + fail_cap) */
};

int probes_set_exemplars(struct probe_table *t, int slowest, int failed) {
    if (slowest < 0 || slowest > PROBES_EX_MAX || failed < 0 || failed > PROBES_EX_MAX) {
        return dq_fail(DQ_ERANGE, "exemplars: %d slowest and %d failed per window, each 0 … %d",
                       slowest, failed, PROBES_EX_MAX);
    }
    t->ex_slowest = slowest;
    t->ex_failed = failed;
    return DQ_OK;
}

static struct probe_exemplar *set_at(struct probe_exemplars *x, int s) {
    return &x->e[(size_t)s * (size_t)(x->slow_cap + x->fail_cap)];
}

static void set_clear(struct ex_set *s) {
    s->wid = INT64_MIN;
    s->n_slow = s->n_fail = s->fastest = 0;
}

/* p's storage, made now when it has none: NULL when the table keeps no exemplars or there
 * is no memory (counted). */
static struct probe_exemplars *storage(struct probe_table *t, struct probe *p) {
    if (p->ex) {
        return p->ex;
    }
    int per = t->ex_slowest + t->ex_failed;
    if (per == 0) {
        return NULL;
    }
    int nsets = t->nslots + 1;
    struct probe_exemplars *x = malloc(sizeof *x + sizeof x->e[0] * (size_t)nsets * (size_t)per);
    if (!x) {
        t->ex_failures++;
        return NULL;
    }
    x->slow_cap = t->ex_slowest;
    x->fail_cap = t->ex_failed;
    x->nsets = nsets;
    for (int i = 0; i < nsets; i++) {
        set_clear(&x->set[i]);
    }
    p->ex = x;
    return x;
}

/* Copies at most cap bytes of src (cut after the last whole "K=V" pair when it is longer). */
static int copy_attrs(char *dst, int cap, const char *src, size_t n) {
    if (n == 0) {
        return 0; /* src may be NULL then */
    }
    if (n <= (size_t)cap) {
        memcpy(dst, src, n);
        return (int)n;
    }
    int len = cap;
    while (len > 0 && src[len] != ',') {
        len--; /* src[len] is the separator after the last pair that fits, or none fits */
    }
    memcpy(dst, src, (size_t)len);
    return len;
}

static int copy_hex(char *dst, const char *src, size_t n, int binary) {
    static const char digits[] = "0123456789abcdef";
    if (n == 0) {
        return 0; /* src may be NULL then */
    }
    if (!binary) {
        n = n > PROBES_EX_ID_MAX ? PROBES_EX_ID_MAX : n;
        memcpy(dst, src, n);
        return (int)n;
    }
    n = n > PROBES_EX_ID_MAX / 2 ? PROBES_EX_ID_MAX / 2 : n;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)src[i];
        dst[2 * i] = digits[b >> 4];
        dst[2 * i + 1] = digits[b & 15];
    }
    return (int)(2 * n);
}

static void fill(struct probe_table *t, struct probe_exemplar *e, const struct probe_ident *id,
                 uint32_t origin, int64_t end_ns, int64_t d_ns, enum probe_status status) {
    e->end_ns = end_ns;
    e->d_ns = d_ns;
    e->status = (int)status;
    e->trace_len = copy_hex(e->trace, id->trace, id->trace_len, id->binary);
    e->id_len = copy_hex(e->id, id->id, id->id_len, id->binary);
    e->attrs_len = copy_attrs(e->attrs, PROBES_EX_ATTRS_MAX, id->attrs, id->attrs_len);
    e->node_len = 0;
    const struct probe_origin *o =
        origin > 0 && origin < t->n_origins && t->origins[origin].used ? &t->origins[origin] : NULL;
    if (o && o->node > 0 && o->node < t->n_nodes) {
        const char *name = t->nodes[o->node].name;
        size_t n = strlen(name);
        size_t k = n < PROBES_EX_NODE_MAX ? n : PROBES_EX_NODE_MAX;
        while (k < n && k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80) {
            k--; /* cut before a whole character: an OTLP service name is UTF-8 */
        }
        e->node_len = (int)k;
        memcpy(e->node, name, k);
    }
}

void probes__ex_offer(struct probe_table *t, struct probe *p, int si, int64_t wid,
                      const struct probe_ident *id, uint32_t origin, int64_t start_ns,
                      int64_t end_ns, enum probe_status status) {
    struct probe_exemplars *x = storage(t, p);
    if (!x) {
        return;
    }
    struct ex_set *s = &x->set[si];
    struct probe_exemplar *e = set_at(x, si);
    if (s->wid != wid) {
        set_clear(s);
        s->wid = wid;
    }
    int64_t d_ns = end_ns - start_ns;
    if (status != PROBE_OK) {
        if (s->n_fail < x->fail_cap) {
            fill(t, &e[x->slow_cap + s->n_fail++], id, origin, end_ns, d_ns, status);
        }
        return;
    }
    int at;
    if (s->n_slow < x->slow_cap) {
        at = s->n_slow++;
    } else if (x->slow_cap > 0 && d_ns > e[s->fastest].d_ns) {
        at = s->fastest;
    } else {
        return;
    }
    fill(t, &e[at], id, origin, end_ns, d_ns, status);
    if (s->n_slow == x->slow_cap) {
        int f = 0;
        for (int i = 1; i < s->n_slow; i++) {
            f = e[i].d_ns < e[f].d_ns ? i : f;
        }
        s->fastest = f;
    }
}

static int slower_first(const void *a, const void *b) {
    const struct probe_exemplar *x = a, *y = b;
    return x->d_ns < y->d_ns ? 1 : x->d_ns > y->d_ns ? -1 : 0;
}

void probes__ex_close(struct probe *p, int si, int64_t wid) {
    struct probe_exemplars *x = p->ex;
    struct ex_set *s = &x->set[si];
    if (s->wid != wid) {
        return; /* nothing identified itself in this window: the closed set stays */
    }
    /* the closed set as probes_exemplars_of answers it: the slow ones sorted, the failed
     * ones right after them */
    int last = x->nsets - 1;
    struct probe_exemplar *from = set_at(x, si), *to = set_at(x, last);
    memcpy(to, from, sizeof to[0] * (size_t)s->n_slow);
    qsort(to, (size_t)s->n_slow, sizeof to[0], slower_first);
    memcpy(to + s->n_slow, from + x->slow_cap, sizeof to[0] * (size_t)s->n_fail);
    x->set[last] = *s;
    set_clear(s);
}

void probes__ex_clear_open(struct probe *p) {
    for (int i = 0; p->ex && i < p->ex->nsets - 1; i++) {
        set_clear(&p->ex->set[i]);
    }
}

int probes_exemplars_of(const struct probe *p, int64_t wid, const struct probe_exemplar **out) {
    struct probe_exemplars *x = p->ex;
    *out = NULL;
    if (!x || x->set[x->nsets - 1].wid != wid) {
        return 0;
    }
    *out = set_at(x, x->nsets - 1);
    return x->set[x->nsets - 1].n_slow + x->set[x->nsets - 1].n_fail;
}

int probes_exemplars_newest(const struct probe *p, int64_t *wid,
                            const struct probe_exemplar **out) {
    *out = NULL;
    if (!p->ex || p->ex->set[p->ex->nsets - 1].wid == INT64_MIN) {
        return 0;
    }
    *wid = p->ex->set[p->ex->nsets - 1].wid;
    return probes_exemplars_of(p, *wid, out);
}

/* ---- to the store ------------------------------------------------------------------------ */

/* "K=V,K=V" as a JSON object's text (NULL when there is none, or no memory). */
static char *attrs_json(const struct probe_exemplar *e) {
    if (e->attrs_len == 0) {
        return NULL;
    }
    json_t *o = json_object();
    const char *p = e->attrs, *end = e->attrs + e->attrs_len;
    while (o && p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        if (eq) {
            char key[PROBES_EX_ATTRS_MAX + 1];
            memcpy(key, p, (size_t)(eq - p));
            key[eq - p] = '\0';
            json_object_set_new(o, key, json_stringn(eq + 1, (size_t)(stop - eq - 1)));
        }
        p = stop + 1;
    }
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

const char *core_exemplar_status(int status) {
    return status == PROBE_FA ? "fa" : status == PROBE_TO ? "to" : "ok";
}

int core__persist_exemplars(struct core *c, const struct probe *p, int64_t wid, int64_t start_ns) {
    const struct probe_exemplar *e;
    int n = probes_exemplars_of(p, wid, &e);
    if (n == 0) {
        return DQ_OK;
    }
    /* the texts of every exemplar of the window, then one row */
    static char text[2 * PROBES_EX_MAX][3][PROBES_EX_ATTRS_MAX + 1];
    char *attrs[2 * PROBES_EX_MAX] = {0};
    struct store_exemplar rows[2 * PROBES_EX_MAX] = {{0}};
    for (int i = 0; i < n; i++) {
        char *trace = text[i][0], *id = text[i][1], *node = text[i][2];
        memcpy(trace, e[i].trace, (size_t)e[i].trace_len);
        trace[e[i].trace_len] = '\0';
        memcpy(id, e[i].id, (size_t)e[i].id_len);
        id[e[i].id_len] = '\0';
        memcpy(node, e[i].node, (size_t)e[i].node_len);
        node[e[i].node_len] = '\0';
        attrs[i] = attrs_json(&e[i]);
        rows[i] = (struct store_exemplar){.status = core_exemplar_status(e[i].status),
                                          .duration = (double)e[i].d_ns * 1e-9,
                                          .end_ns = e[i].end_ns,
                                          .trace_id = trace[0] ? trace : NULL,
                                          .instance_id = id[0] ? id : NULL,
                                          .node = node[0] ? node : NULL,
                                          .attrs_json = attrs[i]};
    }
    int rc = store_exemplars_put(c->store, p->name, start_ns, rows, n);
    for (int i = 0; i < n; i++) {
        free(attrs[i]);
    }
    return rc;
}
