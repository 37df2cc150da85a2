/*
 * otlp.c: the OTLP/HTTP receiver. POST /v1/traces on its own HTTP server (controller/http:
 * chunked bodies, keep-alive and every cap are the server's), answered as OTLP/HTTP
 * specifies: 200 with an ExportTraceServiceResponse in the request's encoding
 * (partial_success when spans were left out), 400 for a body that does not decode, 413
 * past the body cap (also after gzip), 415 for another content type or encoding, 429 with
 * Retry-After above the span budget, 503 with Retry-After when memory runs out; 4xx/5xx
 * bodies are a google.rpc.Status in the request's encoding.
 *
 * Spans go into the core's probe table through one passive origin per service.name
 * (probes_origin_set_passive), so their probes are always observed and silent only after
 * otlp_silence without a span. The newest spans are kept with their ids in a ring for
 * `dqctl diagram --infer` (GET /api/v1/otlp/spans).
 */
#include "otlp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "otlp_decode_internal.h"
#include "otlp_trace.pb-c.h"
#include "wire.h"

#define MAX_SERVICES 4096      /* services with an origin of their own; more share none */
#define MAX_PEERS 1024         /* peers with new names of their own; then the idlest goes */
#define MAX_NAMES 16384        /* probe names the recent ring can name */
#define ARENA_PER_BODY_BYTE 16 /* decoded structures per byte of body, at most */
#define ARENA_MIN (64u << 20)  /* … but never less than this */

struct service {
    uint64_t hash;
    uint32_t origin;
    uint32_t id; /* index in services + 1 */
    char *name;
    int64_t heard_ns; /* its last span */
};

/* A client address and its allowance of new probe names (core.h, the name limit). */
struct peer {
    char addr[48];
    struct probe_name_bucket names;
    int64_t seen_ns; /* its last request; 0: the entry is free */
};

struct recent {
    uint8_t trace_id[16], span_id[8], parent_id[8];
    int64_t start_ns, end_ns;
    uint32_t probe;   /* index in names */
    uint32_t service; /* index in services */
    uint8_t status, has_parent;
};

struct otlp {
    struct ingest_source base; /* first: the receiver as a source (ingest.h) */
    uv_loop_t *loop;
    struct core *core;
    struct probe_table *probes;
    struct otlp_options opt;
    char token[DQD_PATH_MAX];
    char hostname[256];
    char allowed_hosts[DQD_PATH_MAX];
    char cors[DQD_PATH_MAX];
    struct peer *peers; /* MAX_PEERS */
    struct dqd_otlp_rule *rules;
    char listen[DQD_HOSTPORT_MAX];
    char host[DQD_HOSTPORT_MAX];
    int port;
    struct http_server *http;
    struct otlp_arena arena;
    uint8_t *inflated; /* max_body bytes, allocated at the first gzip body */
    struct otlp_stats st;
    /* services: open addressing on the name's hash */
    struct service *svc; /* MAX_SERVICES * 2 slots */
    struct service **svc_list;
    uint32_t n_svc;
    /* compact's: when it last ran, its copies of the services kept, its renumberings */
    int64_t compact_ns;
    uint64_t compactions;
    struct service *svc_keep; /* MAX_SERVICES */
    uint32_t *svc_map;        /* MAX_SERVICES */
    uint32_t *name_map;       /* MAX_NAMES */
    /* probe names of the recent ring */
    uint64_t *name_hash; /* MAX_NAMES * 2 slots: hash, 0 = empty */
    uint32_t *name_slot; /* the name's index */
    char **names;
    uint32_t *name_len; /* strlen of each */
    uint32_t n_names;
    /* the recent ring */
    struct recent *ring;
    size_t ring_cap, ring_head, ring_len;
    /* the span budget: a token bucket refilled at max_spans_per_second, one second deep */
    double tokens;
    int64_t tokens_ns;
    void (*done)(void *);
    void *done_arg;
};

/* The statuses counted one by one in otlp_stats.responses, in that order. */
static const int status_codes[6] = {200, 400, 413, 415, 429, 503};

int otlp_status_index(int status) {
    for (int i = 0; i < 6; i++) {
        if (status_codes[i] == status) {
            return i;
        }
    }
    return -1;
}

/* ---- responses ---------------------------------------------------------------------------- */

/* Appends o as compact JSON to res and drops the reference (NULL appends nothing). */
static void append_json(struct http_response *res, json_t *o) {
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text) {
        http_response_append(res, text, strlen(text));
    }
    free(text);
    json_decref(o);
}

/* msg as UTF-8 (a byte of a sequence that is not becomes '?'), cut to cap − 1 bytes at a
 * character's end: what a reply embeds always encodes (a client's header, a name). */
static const char *utf8_text(char *out, size_t cap, const char *msg) {
    size_t n = strlen(msg);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)msg[n] & 0xc0) == 0x80) {
            n--; /* not inside a character */
        }
    }
    memcpy(out, msg, n);
    out[n] = '\0';
    if (otlp_text_check(out, n) != OTLP_TEXT_OK) {
        for (size_t i = 0; i < n; i++) {
            out[i] = (unsigned char)out[i] >= 0x80 ? '?' : out[i];
        }
    }
    return out;
}

/* A google.rpc.Status reply (gRPC code from the HTTP status) in the request's encoding. */
static void reply_status(struct http_response *res, enum otlp_format fmt, int status,
                         const char *text) {
    char msg[640];
    utf8_text(msg, sizeof msg, text);
    int grpc = status == 400 || status == 415   ? 3  /* INVALID_ARGUMENT */
               : status == 413                  ? 11 /* OUT_OF_RANGE */
               : status == 429                  ? 8  /* RESOURCE_EXHAUSTED */
               : status == 503                  ? 14 /* UNAVAILABLE */
               : status == 401                  ? 16 /* UNAUTHENTICATED */
               : status == 403                  ? 7  /* PERMISSION_DENIED */
               : status == 404 || status == 405 ? 12 /* UNIMPLEMENTED */
                                                : 13;
    res->status = status;
    http_response_clear(res);
    if (fmt == OTLP_PROTOBUF) {
        Dqotlp__RpcStatus st = DQOTLP__RPC_STATUS__INIT;
        st.code = grpc;
        st.message = (char *)msg;
        uint8_t buf[1200];
        size_t n = dqotlp__rpc_status__get_packed_size(&st);
        if (n <= sizeof buf) {
            dqotlp__rpc_status__pack(&st, buf);
            http_response_append(res, buf, n);
        }
        http_response_set_type(res, "application/x-protobuf");
    } else {
        append_json(res, json_pack("{s:i,s:s}", "code", grpc, "message", msg));
        http_response_set_type(res, "application/json");
    }
}

/* 200: an ExportTraceServiceResponse, with partial_success when spans were left out. */
static void reply_ok(struct http_response *res, enum otlp_format fmt, uint64_t rejected,
                     const char *text) {
    char why[640];
    utf8_text(why, sizeof why, text);
    res->status = 200;
    http_response_clear(res);
    if (fmt == OTLP_PROTOBUF) {
        Dqotlp__ExportTraceServiceResponse r = DQOTLP__EXPORT_TRACE_SERVICE_RESPONSE__INIT;
        Dqotlp__ExportTracePartialSuccess ps = DQOTLP__EXPORT_TRACE_PARTIAL_SUCCESS__INIT;
        if (rejected) {
            ps.rejected_spans = (int64_t)rejected;
            ps.error_message = (char *)why;
            r.partial_success = &ps;
        }
        uint8_t buf[1200];
        size_t n = dqotlp__export_trace_service_response__get_packed_size(&r);
        if (n <= sizeof buf) {
            dqotlp__export_trace_service_response__pack(&r, buf);
            http_response_append(res, buf, n);
        }
        http_response_set_type(res, "application/x-protobuf");
    } else {
        if (rejected) {
            char num[32];
            snprintf(num, sizeof num, "%llu", (unsigned long long)rejected);
            append_json(res, json_pack("{s:{s:s,s:s}}", "partialSuccess", "rejectedSpans", num,
                                       "errorMessage", why));
        } else {
            http_response_append(res, "{}", 2);
        }
        http_response_set_type(res, "application/json");
    }
}

/* ---- services, names, the ring -------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = wire_name_hash(s, n);
    return h ? h : 1;
}

/* The slot of service name (hash h): its entry, or the empty slot it would take. */
static struct service *svc_slot(struct otlp *r, uint64_t h, const char *name, size_t len) {
    size_t mask = MAX_SERVICES * 2 - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct service *s = &r->svc[i];
        if (!s->hash ||
            (s->hash == h && strlen(s->name) == len && memcmp(s->name, name, len) == 0)) {
            return s;
        }
    }
}

/* The position of probe name (hash h) in the names' index: its entry, or the empty one. */
static size_t name_pos(const struct otlp *r, uint64_t h, const char *name, size_t len) {
    size_t mask = MAX_NAMES * 2 - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (!r->name_hash[i]) {
            return i;
        }
        if (r->name_hash[i] == h) {
            uint32_t k = r->name_slot[i];
            if (r->name_len[k] == len && memcmp(r->names[k], name, len) == 0) {
                return i;
            }
        }
    }
}

/*
 * Makes room in the tables of services and probe names, when one is full, at most once a
 * second (a flood of new names costs one pass a second): a service no kept span names and
 * not heard from for otlp_silence goes (its origin closed), and a name no kept span names.
 * The ring's entries are renumbered.
 */
static void compact(struct otlp *r, int64_t now) {
    if (r->compact_ns && now - r->compact_ns < 1000000000) {
        return;
    }
    r->compact_ns = now > 0 ? now : 1;
    r->compactions++;
    uint32_t *svc_map = r->svc_map, *name_map = r->name_map;
    memset(svc_map, 0, MAX_SERVICES * sizeof *svc_map);
    memset(name_map, 0, MAX_NAMES * sizeof *name_map);
    for (size_t k = 0; k < r->ring_len; k++) {
        const struct recent *e = &r->ring[(r->ring_head + k) % r->ring_cap];
        svc_map[e->service] = name_map[e->probe] = 1;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_svc; i++) {
        struct service *s = r->svc_list[i];
        if (svc_map[i] || now - s->heard_ns <= r->opt.silence_ns) {
            r->svc_keep[n] = *s;
            svc_map[i] = n++;
        } else {
            probes_origin_closed(r->probes, s->origin);
            free(s->name);
        }
    }
    memset(r->svc, 0, MAX_SERVICES * 2 * sizeof *r->svc);
    for (uint32_t k = 0; k < n; k++) {
        const struct service *keep = &r->svc_keep[k];
        struct service *s = svc_slot(r, keep->hash, keep->name, strlen(keep->name));
        *s = *keep;
        s->id = k + 1;
        r->svc_list[k] = s;
    }
    r->n_svc = n;
    r->st.services = n;
    n = 0;
    for (uint32_t i = 0; i < r->n_names; i++) {
        if (name_map[i]) {
            r->names[n] = r->names[i];
            r->name_len[n] = r->name_len[i];
            name_map[i] = n++;
        } else {
            free(r->names[i]);
        }
    }
    memset(r->name_hash, 0, MAX_NAMES * 2 * sizeof *r->name_hash);
    for (uint32_t k = 0; k < n; k++) {
        size_t len = r->name_len[k];
        uint64_t h = hash_bytes(r->names[k], len);
        size_t i = name_pos(r, h, r->names[k], len);
        r->name_hash[i] = h;
        r->name_slot[i] = k;
    }
    r->n_names = n;
    for (size_t k = 0; k < r->ring_len; k++) {
        struct recent *e = &r->ring[(r->ring_head + k) % r->ring_cap];
        e->service = svc_map[e->service];
        e->probe = name_map[e->probe];
    }
}

/* The service's entry (registered with a passive origin on first sight), or NULL when the
 * table is full of services in use or memory is short (spans then go on without an
 * origin). */
static struct service *service_of(struct otlp *r, const char *name, size_t len, int64_t now) {
    uint64_t h = hash_bytes(name, len);
    struct service *s = svc_slot(r, h, name, len);
    if (!s->hash && r->n_svc >= MAX_SERVICES) {
        compact(r, now);
        s = svc_slot(r, h, name, len);
    }
    if (!s->hash) {
        if (r->n_svc >= MAX_SERVICES || !(s->name = malloc(len + 1))) {
            return NULL;
        }
        memcpy(s->name, name, len);
        s->name[len] = '\0';
        s->hash = h;
        /* label "otlp", node the service: "its source otlp shop went quiet" */
        if (probes_origin_open(r->probes, "otlp", s->name, s->name, &s->origin) == DQ_OK) {
            probes_origin_set_passive(r->probes, s->origin, r->opt.silence_ns);
        }
        r->svc_list[r->n_svc++] = s;
        s->id = r->n_svc;
        r->st.services = r->n_svc;
    }
    s->heard_ns = now;
    return s;
}

/* The index of probe name (len bytes, hash h) among the ring's names; UINT32_MAX when the
 * names in use fill the table. */
static uint32_t name_of(struct otlp *r, const char *name, size_t len, uint64_t h, int64_t now) {
    h = h ? h : 1;
    size_t i = name_pos(r, h, name, len);
    if (!r->name_hash[i] && r->n_names >= MAX_NAMES) {
        compact(r, now);
        i = name_pos(r, h, name, len);
    }
    if (r->name_hash[i]) {
        return r->name_slot[i];
    }
    char *copy = r->n_names < MAX_NAMES ? malloc(len + 1) : NULL;
    if (!copy) {
        return UINT32_MAX;
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    r->name_hash[i] = h;
    r->name_slot[i] = r->n_names;
    r->names[r->n_names] = copy;
    r->name_len[r->n_names] = (uint32_t)len;
    return r->n_names++;
}

static void keep_recent(struct otlp *r, const struct otlp_span *s, uint32_t name,
                        const struct service *svc) {
    if (!r->ring_cap || name == UINT32_MAX || !svc) {
        return;
    }
    /* head < cap and len ≤ cap: a compare wraps them (no division per span) */
    size_t at = r->ring_head + r->ring_len;
    at -= at >= r->ring_cap ? r->ring_cap : 0;
    if (r->ring_len == r->ring_cap) {
        r->ring_head = r->ring_head + 1 == r->ring_cap ? 0 : r->ring_head + 1;
    } else {
        r->ring_len++;
    }
    struct recent *e = &r->ring[at];
    memcpy(e->trace_id, s->trace_id, 16);
    memcpy(e->span_id, s->span_id, 8);
    memcpy(e->parent_id, s->parent_id, 8);
    e->start_ns = s->start_ns;
    e->end_ns = s->end_ns;
    e->probe = name;
    e->service = svc->id - 1;
    e->status = (uint8_t)(s->status == 2 ? 2 : s->status == 1 ? 1 : 0);
    e->has_parent = (uint8_t)s->has_parent;
}

static void hex(char *out, const uint8_t *p, size_t n) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = '\0';
}

json_t *otlp_recent_json(const struct otlp *r, const char *service, size_t max) {
    json_t *arr = json_array();
    if (!arr) {
        return NULL;
    }
    size_t n = 0, first = r->ring_len;
    /* the newest `max` that match, oldest first: count back, then walk forward */
    for (size_t k = r->ring_len; k-- > 0 && n < max;) {
        const struct recent *e = &r->ring[(r->ring_head + k) % r->ring_cap];
        if (!service || strcmp(r->svc_list[e->service]->name, service) == 0) {
            n++;
            first = k;
        }
    }
    for (size_t k = first; k < r->ring_len; k++) {
        const struct recent *e = &r->ring[(r->ring_head + k) % r->ring_cap];
        const char *svc = r->svc_list[e->service]->name;
        if (service && strcmp(svc, service) != 0) {
            continue;
        }
        char t[33], s[17], p[17];
        hex(t, e->trace_id, 16);
        hex(s, e->span_id, 8);
        if (e->has_parent) {
            hex(p, e->parent_id, 8);
        } else {
            p[0] = '\0';
        }
        json_t *o =
            json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:s}", "trace_id", t, "span_id", s, "parent_id",
                      p, "service", svc, "probe", r->names[e->probe], "start_ns",
                      (json_int_t)e->start_ns, "end_ns", (json_int_t)e->end_ns, "status",
                      e->status == 2   ? "error"
                      : e->status == 1 ? "ok"
                                       : "unset");
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---- one request ------------------------------------------------------------------------------
 */

/*
 * 1 when the budget lets n more spans in now (and takes them), else 0 with *retry_s. The
 * bucket holds one second of spans; a batch larger than that is let in when the bucket is
 * full, and the debt is paid by the refill (so no batch size is refused for ever).
 */
static int budget_take(struct otlp *r, size_t n, int *retry_s) {
    double rate = r->opt.max_spans_per_second;
    if (rate <= 0) {
        return 1;
    }
    int64_t now = clock_now(core_clock(r->core));
    double dt = r->tokens_ns ? (double)(now - r->tokens_ns) * 1e-9 : 1.0;
    r->tokens_ns = now;
    r->tokens = fmin(rate, r->tokens + (dt > 0 ? dt : 0) * rate);
    double want = fmin((double)n, rate);
    if (want <= r->tokens) {
        r->tokens -= (double)n;
        return 1;
    }
    double need = (want - r->tokens) / rate;
    *retry_s = need < 1 ? 1 : need > 3600 ? 3600 : (int)ceil(need);
    return 0;
}

/* The peer at addr ("" when unknown), made when new; at MAX_PEERS the one idle longest
 * makes room (its allowance starts afresh: the daemon's own rate still bounds them all). */
static struct peer *peer_of(struct otlp *r, const char *addr, int64_t now) {
    struct peer *idlest = &r->peers[0];
    for (size_t i = 0; i < MAX_PEERS; i++) {
        struct peer *p = &r->peers[i];
        if (p->seen_ns && strcmp(p->addr, addr) == 0) {
            p->seen_ns = now > 0 ? now : 1;
            return p;
        }
        if (p->seen_ns < idlest->seen_ns) {
            idlest = p;
        }
    }
    memset(idlest, 0, sizeof *idlest);
    snprintf(idlest->addr, sizeof idlest->addr, "%s", addr);
    idlest->seen_ns = now > 0 ? now : 1;
    return idlest;
}

/* What became of a batch's spans, by the names /metrics gives them. */
struct outcome {
    uint64_t accepted, late, future, name_rate, full;
};

/* Appends "N reason (what it means)" to why (at *at of cap), after "; ", when n > 0. */
static void say(char *why, size_t cap, size_t *at, uint64_t n, const char *reason,
                const char *means) {
    if (n && *at < cap) {
        int k = snprintf(why + *at, cap - *at, "%s%llu %s (%s)", *at ? "; " : "",
                         (unsigned long long)n, reason, means);
        *at += k > 0 ? (size_t)k : 0;
    }
}

/* Records every span of b, new names counted against peer; returns the spans left out and
 * says why in why, each reason named as /metrics names it (dqd_otlp_spans_total). */
static uint64_t record_batch(struct otlp *r, const struct otlp_batch *b, struct peer *peer,
                             char *why, size_t cap) {
    struct probe_table *t = r->probes;
    int64_t now = clock_now(core_clock(r->core));
    struct probe_span_source src = {.peer = &peer->names, .now_ns = now};
    struct service *svc = NULL;
    const char *svc_name = NULL;
    struct outcome o = {0};
    char name[PROBES_NAME_MAX + 2];
    for (size_t i = 0; i < b->n; i++) {
        const struct otlp_span *s = &b->spans[i];
        if (s->service != svc_name) { /* spans of one resource share the pointer */
            svc_name = s->service;
            svc = service_of(r, s->service, s->service_len, now);
            src.origin = svc ? svc->origin : 0;
            if (src.origin) {
                probes_origin_heard(t, src.origin, now);
            }
        }
        size_t len = otlp_probe_name(s, r->rules, r->opt.n_rules, name, sizeof name);
        uint64_t h = wire_name_hash(name, len);
        uint64_t late0 = t->late, rate0 = t->name_rate;
        struct probe_ident id = {.trace = (const char *)s->trace_id,
                                 .trace_len = sizeof s->trace_id,
                                 .id = (const char *)s->span_id,
                                 .id_len = sizeof s->span_id,
                                 .binary = 1};
        int rc =
            probes_record_span(t, name, len, h, &src, s->start_ns, s->end_ns, s->status == 2, &id);
        if (rc == DQ_OK) {
            o.accepted++;
            uint64_t moved = r->compactions;
            uint32_t ni = name_of(r, name, len, h, now);
            if (r->compactions != moved) { /* the services were renumbered: svc again */
                svc = service_of(r, s->service, s->service_len, now);
            }
            keep_recent(r, s, ni, svc);
        } else if (rc == DQ_ESTATE && t->late != late0) {
            o.late++;
        } else if (rc == DQ_ESTATE) {
            o.future++;
        } else if (t->name_rate != rate0) {
            o.name_rate++;
        } else {
            o.full++;
        }
    }
    core_add_instances(r->core, o.accepted);
    r->st.spans_accepted += o.accepted;
    r->st.spans_late += o.late;
    r->st.spans_future += o.future;
    r->st.spans_name_rate += o.name_rate;
    r->st.spans_full += o.full;
    size_t at = 0;
    why[0] = '\0';
    say(why, cap, &at, b->rejected, "invalid", b->reason);
    say(why, cap, &at, o.late, "late", "ended in windows already closed: later than otlp_lag");
    say(why, cap, &at, o.future, "future", "ended too far ahead of dqd's clock");
    say(why, cap, &at, o.name_rate, "new_name_rate",
        "new probe names over new_names_per_second for this client or "
        "new_names_global_per_second for dqd");
    say(why, cap, &at, o.full, "probe_table_full",
        "no room for a new probe name: max_observed_probes observed probes, none evictable");
    return b->rejected + o.late + o.future + o.name_rate + o.full;
}

/* The media type of a Content-Type value, without parameters: 1 protobuf, 0 JSON, −1 other. */
static int media_type(const char *ct, enum otlp_format *fmt) {
    if (!ct) {
        return -1;
    }
    while (*ct == ' ' || *ct == '\t') {
        ct++;
    }
    size_t n = strcspn(ct, "; \t");
    if (n == 22 && strncasecmp(ct, "application/x-protobuf", 22) == 0) {
        *fmt = OTLP_PROTOBUF;
        return 0;
    }
    if (n == 16 && strncasecmp(ct, "application/json", 16) == 0) {
        *fmt = OTLP_JSON;
        return 0;
    }
    return -1;
}

void otlp_handle_body(struct otlp *r, const char *content_type, const char *content_encoding,
                      const char *peer, const uint8_t *body, size_t len,
                      struct http_response *res) {
    enum otlp_format fmt = OTLP_JSON;
    char msg[600];
    r->st.bytes_received += len;
    if (media_type(content_type, &fmt) != 0) {
        snprintf(msg, sizeof msg,
                 "Content-Type %.100s is not supported: send application/x-protobuf or "
                 "application/json",
                 content_type ? content_type : "(none)");
        reply_status(res, OTLP_JSON, 415, msg);
        return;
    }
    if (content_encoding && content_encoding[0] && strcasecmp(content_encoding, "identity") != 0) {
        if (strcasecmp(content_encoding, "gzip") != 0) {
            snprintf(msg, sizeof msg,
                     "Content-Encoding %.100s is not supported: send gzip or identity",
                     content_encoding);
            reply_status(res, fmt, 415, msg);
            return;
        }
        if (!r->inflated && !(r->inflated = malloc(r->opt.max_body))) {
            reply_status(res, fmt, 503, "no memory to inflate the body; retry later");
            http_response_add_header(res, "Retry-After", "5");
            return;
        }
        size_t out = 0;
        int rc = otlp_inflate(body, len, r->inflated, r->opt.max_body, &out);
        if (rc) {
            reply_status(res, fmt,
                         rc == DQ_EFULL    ? 413
                         : rc == DQ_ENOMEM ? 503
                                           : 400,
                         dq_last_error());
            if (rc == DQ_ENOMEM) {
                http_response_add_header(res, "Retry-After", "5");
            }
            return;
        }
        body = r->inflated;
        len = out;
        r->st.bytes_inflated += out;
    }
    struct otlp_batch b;
    otlp_arena_reset(&r->arena);
    int rc = fmt == OTLP_PROTOBUF ? otlp_decode_protobuf(&r->arena, body, len, &b)
                                  : otlp_decode_json(&r->arena, body, len, &b);
    if (rc) {
        snprintf(msg, sizeof msg, "%s", dq_last_error());
        reply_status(res, fmt, rc == DQ_EFULL ? 413 : 400, msg);
        otlp_batch_release(&b);
        otlp_arena_reset(&r->arena);
        return;
    }
    r->st.spans_received += b.n + b.rejected;
    int retry = 1;
    if (!budget_take(r, b.n, &retry)) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry);
        snprintf(msg, sizeof msg,
                 "%zu spans exceed the budget of otlp_max_spans_per_second = %g; retry after %d s",
                 b.n, r->opt.max_spans_per_second, retry);
        reply_status(res, fmt, 429, msg);
        http_response_add_header(res, "Retry-After", ra);
        r->st.spans_throttled += b.n;
    } else {
        struct peer *p = peer_of(r, peer ? peer : "", clock_now(core_clock(r->core)));
        uint64_t out = record_batch(r, &b, p, msg, sizeof msg);
        r->st.spans_rejected += b.rejected;
        reply_ok(res, fmt, out, out ? msg : "");
    }
    otlp_batch_release(&b);
    otlp_arena_reset(&r->arena);
}

static void count_response(struct otlp *r, int status) {
    int i = otlp_status_index(status);
    if (i >= 0) {
        r->st.responses[i]++;
    } else {
        r->st.other_responses++;
    }
}

/* What the HTTP layer answers itself (a body over the cap, malformed HTTP): a Status too,
 * in JSON since the request's encoding is not known there. */
static void transport_error(void *ctx, int status, const char *msg, struct http_response *res) {
    (void)ctx;
    reply_status(res, OTLP_JSON, status, msg);
}

/* The receiver's access policy (http.h): the API's rules, its own token and CORS origins. */
static struct http_access_policy policy(const struct otlp *r) {
    return (struct http_access_policy){.token = r->token,
                                       .hostname = r->hostname,
                                       .allowed_hosts = r->allowed_hosts,
                                       .loopback = http_access_loopback(r->host),
                                       .origins = r->cors};
}

/* The refusal of verdict v (not HTTP_ACCESS_OK), worded and counted. */
static void refuse(struct otlp *r, enum http_access_verdict v, const struct http_access_ask *ask,
                   enum otlp_format fmt, struct http_response *res) {
    char msg[400], shown[128];
    int status = http_access_status(v);
    switch (v) {
    case HTTP_ACCESS_NO_HOST:
        r->st.refused[OTLP_REFUSED_HOST]++;
        snprintf(msg, sizeof msg, "an HTTP/1.1 request needs a Host header");
        break;
    case HTTP_ACCESS_FOREIGN_HOST:
        r->st.refused[OTLP_REFUSED_HOST]++;
        snprintf(msg, sizeof msg,
                 "Host \"%s\" is not one of dqd's names (a loopback name, an IP address, this "
                 "machine's name); a Collector's or a proxy's name must be listed in "
                 "allowed_hosts",
                 wire_escape(shown, sizeof shown, ask->host, strlen(ask->host)));
        break;
    case HTTP_ACCESS_FOREIGN_ORIGIN:
        r->st.refused[OTLP_REFUSED_ORIGIN]++;
        snprintf(msg, sizeof msg,
                 "spans from the web page of another site (Origin %s) are refused; a browser "
                 "SDK's origin must be listed in otlp_cors_origins",
                 wire_escape(shown, sizeof shown, ask->origin, strlen(ask->origin)));
        break;
    case HTTP_ACCESS_NO_TOKEN_SET:
        r->st.refused[OTLP_REFUSED_TOKEN]++;
        snprintf(msg, sizeof msg,
                 "an OTLP receiver bound beyond loopback needs an api_token (the exporter then "
                 "sends `Authorization: Bearer <api_token>`)");
        break;
    case HTTP_ACCESS_CHANGE_TOKEN:
        r->st.refused[OTLP_REFUSED_TOKEN]++;
        snprintf(msg, sizeof msg,
                 "this receiver needs the header `Authorization: Bearer <api_token>`");
        break;
    default:
        status = 500;
        snprintf(msg, sizeof msg, "the request could not be checked");
        break;
    }
    reply_status(res, fmt, status, msg);
    if (v == HTTP_ACCESS_CHANGE_TOKEN) {
        http_response_add_header(res, "WWW-Authenticate", "Bearer");
    }
}

/* CORS for an Origin listed in otlp_cors_origins: its preflight (OPTIONS) answered, and
 * replies its page may read. 1 when the request was a preflight (answered). */
static int cors(const struct otlp *r, const struct http_request *req,
                const struct http_access_ask *ask, struct http_response *res) {
    if (!ask->origin || !http_access_origin_listed(ask->origin, r->cors)) {
        return 0;
    }
    int exact = http_access_origin_listed(ask->origin, r->cors) &&
                !http_access_origin_listed("\x01", r->cors); /* not by "*" */
    if (req->method == HTTP_OPTIONS) {
        res->status = 204;
        http_response_clear(res);
        http_response_add_header(res, "Access-Control-Allow-Methods", "POST");
        http_response_add_header(res, "Access-Control-Allow-Headers",
                                 "Content-Type, Content-Encoding, Authorization");
        http_response_add_header(res, "Access-Control-Max-Age", "600");
    }
    http_response_add_header(res, "Access-Control-Allow-Origin", exact ? ask->origin : "*");
    http_response_add_header(res, "Vary", "Origin");
    return req->method == HTTP_OPTIONS;
}

static void handle(void *ctx, const struct http_request *req, struct http_response *res) {
    struct otlp *r = ctx;
    enum otlp_format fmt = OTLP_JSON;
    media_type(http_request_header(req, "Content-Type"), &fmt);
    r->st.requests++;
    struct http_access_policy pol = policy(r);
    struct http_access_ask ask;
    http_access_ask_of(req, &ask);
    /* Host first, whatever the path: a page after DNS rebinding learns nothing */
    enum http_access_verdict v = http_access_decide(&pol, HTTP_ACCESS_OPEN, &ask);
    if (v == HTTP_ACCESS_OK && strcmp(req->path, "/v1/traces") != 0) {
        reply_status(res, fmt, 404,
                     "not found: this is dqd's OTLP/HTTP receiver; traces go to POST /v1/traces");
    } else if (v == HTTP_ACCESS_OK && req->method == HTTP_OPTIONS && cors(r, req, &ask, res)) {
        /* a preflight, answered */
    } else if (v == HTTP_ACCESS_OK && req->method != HTTP_POST) {
        reply_status(res, fmt, 405, "POST /v1/traces only");
        http_response_add_header(res, "Allow", "POST");
    } else if (v == HTTP_ACCESS_OK &&
               (v = http_access_decide(&pol, HTTP_ACCESS_TEXT_BODY, &ask)) == HTTP_ACCESS_OK) {
        otlp_handle_body(r, http_request_header(req, "Content-Type"),
                         http_request_header(req, "Content-Encoding"), req->peer,
                         (const uint8_t *)req->body, req->body_len, res);
        cors(r, req, &ask, res);
    }
    if (v != HTTP_ACCESS_OK) {
        refuse(r, v, &ask, fmt, res);
    }
    count_response(r, res->status);
}

/* ---- life
 * ------------------------------------------------------------------------------------------ */

static const struct ingest_ops otlp_ops;

int otlp_create(uv_loop_t *loop, struct core *core, const struct otlp_options *o,
                struct otlp **out) {
    struct otlp *r = calloc(1, sizeof *r);
    if (!r) {
        return dq_fail(DQ_ENOMEM, "no memory for the OTLP receiver");
    }
    r->base.ops = &otlp_ops;
    r->loop = loop;
    r->core = core;
    r->probes = core_probes(core);
    r->opt = *o;
    snprintf(r->token, sizeof r->token, "%s", o->api_token ? o->api_token : "");
    snprintf(r->listen, sizeof r->listen, "%s", o->listen);
    snprintf(r->hostname, sizeof r->hostname, "%s", o->hostname ? o->hostname : "");
    snprintf(r->allowed_hosts, sizeof r->allowed_hosts, "%s",
             o->allowed_hosts ? o->allowed_hosts : "");
    snprintf(r->cors, sizeof r->cors, "%s", o->cors_origins ? o->cors_origins : "");
    r->opt.hostname = r->hostname;
    r->opt.allowed_hosts = r->allowed_hosts;
    r->opt.cors_origins = r->cors;
    r->opt.listen = r->listen;
    r->opt.api_token = r->token;
    size_t arena = r->opt.max_body * ARENA_PER_BODY_BYTE;
    otlp_arena_init(&r->arena, arena > ARENA_MIN ? arena : ARENA_MIN);
    r->peers = calloc(MAX_PEERS, sizeof *r->peers);
    r->svc = calloc(MAX_SERVICES * 2, sizeof *r->svc);
    r->svc_list = calloc(MAX_SERVICES, sizeof *r->svc_list);
    r->svc_keep = calloc(MAX_SERVICES, sizeof *r->svc_keep);
    r->svc_map = calloc(MAX_SERVICES, sizeof *r->svc_map);
    r->name_map = calloc(MAX_NAMES, sizeof *r->name_map);
    r->name_hash = calloc(MAX_NAMES * 2, sizeof *r->name_hash);
    r->name_slot = calloc(MAX_NAMES * 2, sizeof *r->name_slot);
    r->names = calloc(MAX_NAMES, sizeof *r->names);
    r->name_len = calloc(MAX_NAMES, sizeof *r->name_len);
    r->ring_cap = o->recent_spans;
    r->ring = r->ring_cap ? calloc(r->ring_cap, sizeof *r->ring) : NULL;
    if (o->n_rules > 0) {
        r->rules = calloc((size_t)o->n_rules, sizeof *r->rules);
        if (r->rules) {
            memcpy(r->rules, o->rules, (size_t)o->n_rules * sizeof *r->rules);
        }
    }
    r->opt.rules = r->rules;
    r->tokens = o->max_spans_per_second;
    int rc = DQ_OK;
    if (!r->peers || !r->svc || !r->svc_list || !r->svc_keep || !r->svc_map || !r->name_map ||
        !r->name_hash || !r->name_slot || !r->names || !r->name_len || (r->ring_cap && !r->ring) ||
        (o->n_rules > 0 && !r->rules)) {
        rc = dq_fail(DQ_ENOMEM, "no memory for the OTLP receiver");
    }
    if (!rc) {
        rc = settings_split_hostport(o->listen, r->host, sizeof r->host, &r->port);
        rc = rc ? dq_fail(rc, "--otlp: %s", dq_last_error()) : DQ_OK;
    }
    struct http_limits lim;
    http_limits_default(&lim);
    lim.max_body_bytes = r->opt.max_body;
    lim.max_pending_write = 1 << 20;
    if (!rc) {
        rc = http_server_create(loop, &lim, handle, r, &r->http);
    }
    if (!rc) {
        http_server_set_error_reply(r->http, transport_error, r);
    }
    if (rc) {
        otlp_close(r, NULL, NULL);
        return rc;
    }
    *out = r;
    return DQ_OK;
}

void otlp_get_stats(const struct otlp *r, struct otlp_stats *st) {
    *st = r->st;
    if (r->http) {
        struct http_server_stats hs;
        http_server_get_stats(r->http, &hs);
        st->http_errors = hs.bad_requests;
    }
}

static void free_receiver(void *arg) {
    struct otlp *r = arg;
    void (*done)(void *) = r->done;
    void *done_arg = r->done_arg;
    for (uint32_t i = 0; i < r->n_svc; i++) {
        if (r->svc_list[i]->origin) {
            probes_origin_closed(r->probes, r->svc_list[i]->origin);
        }
        free(r->svc_list[i]->name);
    }
    for (uint32_t i = 0; i < r->n_names; i++) {
        free(r->names[i]);
    }
    free(r->peers);
    free(r->svc);
    free(r->svc_list);
    free(r->svc_keep);
    free(r->svc_map);
    free(r->name_map);
    free(r->name_hash);
    free(r->name_slot);
    free(r->names);
    free(r->name_len);
    free(r->ring);
    free(r->rules);
    free(r->inflated);
    otlp_arena_release(&r->arena);
    free(r);
    if (done) {
        done(done_arg);
    }
}

void otlp_close(struct otlp *r, void (*done)(void *arg), void *arg) {
    if (!r) {
        if (done) {
            done(arg);
        }
        return;
    }
    r->done = done;
    r->done_arg = arg;
    if (r->http) {
        http_server_close(r->http, free_receiver, r);
        r->http = NULL;
    } else {
        free_receiver(r);
    }
}

/* ---- the receiver as a source (ingest.h) -------------------------------------------------- */

static struct otlp *receiver(struct ingest_source *s) {
    return (struct otlp *)s;
}

static const struct otlp *const_receiver(const struct ingest_source *s) {
    return (const struct otlp *)s;
}

static int otlp_start(struct ingest_source *s) {
    struct otlp *r = receiver(s);
    int rc = http_server_listen(r->http, r->host, r->port);
    if (rc) {
        return dq_fail(rc, "cannot receive OTLP on %s: %s", r->listen, dq_last_error());
    }
    r->port = http_server_port(r->http);
    return DQ_OK;
}

static void otlp_close_source(struct ingest_source *s, void (*done)(void *arg), void *arg) {
    otlp_close(receiver(s), done, arg);
}

static const char *otlp_host(const struct ingest_source *s) {
    return const_receiver(s)->host;
}

static int otlp_port(const struct ingest_source *s) {
    return const_receiver(s)->port;
}

static void otlp_describe(const struct ingest_source *s, json_t *o) {
    struct otlp_stats st;
    otlp_get_stats(const_receiver(s), &st);
    json_object_set_new(o, "services", json_integer((json_int_t)st.services));
    json_object_set_new(o, "requests", json_integer((json_int_t)st.requests));
    json_object_set_new(o, "instances", json_integer((json_int_t)st.spans_accepted));
}

/* Requests by status, spans by what became of them, bytes, the HTTP layer's refusals and
 * the services heard from. */
static void otlp_metrics(const struct ingest_source *s, struct http_response *res) {
    struct otlp_stats st;
    otlp_get_stats(const_receiver(s), &st);
    http_response_printf(res, "# HELP dqd_otlp_requests_total OTLP/HTTP requests answered, by "
                              "status code.\n# TYPE dqd_otlp_requests_total counter\n");
    for (int i = 0; i < 6; i++) {
        http_response_printf(res, "dqd_otlp_requests_total{code=\"%d\"} %" PRIu64 "\n",
                             status_codes[i], st.responses[i]);
    }
    http_response_printf(res, "dqd_otlp_requests_total{code=\"other\"} %" PRIu64 "\n",
                         st.other_responses);
    http_response_printf(
        res,
        "# HELP dqd_otlp_spans_total OTLP spans received, by what became of them.\n"
        "# TYPE dqd_otlp_spans_total counter\n"
        "dqd_otlp_spans_total{result=\"accepted\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"invalid\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"late\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"future\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"throttled\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"new_name_rate\"} %" PRIu64 "\n"
        "dqd_otlp_spans_total{result=\"probe_table_full\"} %" PRIu64 "\n"
        "# HELP dqd_otlp_received_bytes_total OTLP request bodies, as sent and inflated.\n"
        "# TYPE dqd_otlp_received_bytes_total counter\n"
        "dqd_otlp_received_bytes_total{encoding=\"sent\"} %" PRIu64 "\n"
        "dqd_otlp_received_bytes_total{encoding=\"inflated\"} %" PRIu64 "\n"
        "# HELP dqd_otlp_http_errors_total OTLP requests refused by the HTTP layer before "
        "decoding (malformed HTTP, a body over otlp_max_body: 400, 413, 414, 431).\n"
        "# TYPE dqd_otlp_http_errors_total counter\n"
        "dqd_otlp_http_errors_total %" PRIu64 "\n"
        "# HELP dqd_otlp_services Services (service.name) heard from over OTLP.\n"
        "# TYPE dqd_otlp_services gauge\n"
        "dqd_otlp_services %" PRIu64 "\n"
        "# HELP dqd_otlp_refused_total OTLP requests refused before decoding, by reason (as "
        "dqd_http_refused_total): a Host that is not dqd's, another site's Origin, a missing "
        "or wrong token.\n"
        "# TYPE dqd_otlp_refused_total counter\n"
        "dqd_otlp_refused_total{reason=\"host\"} %" PRIu64 "\n"
        "dqd_otlp_refused_total{reason=\"origin\"} %" PRIu64 "\n"
        "dqd_otlp_refused_total{reason=\"token\"} %" PRIu64 "\n",
        st.spans_accepted, st.spans_rejected, st.spans_late, st.spans_future, st.spans_throttled,
        st.spans_name_rate, st.spans_full, st.bytes_received, st.bytes_inflated, st.http_errors,
        st.services, st.refused[OTLP_REFUSED_HOST], st.refused[OTLP_REFUSED_ORIGIN],
        st.refused[OTLP_REFUSED_TOKEN]);
}

/* OTLP carries no commands: its origins are passive, so it gives the core nothing (.core
 * NULL). */
static const struct ingest_ops otlp_ops = {
    .name = "otlp",
    .what = "OTLP",
    .start = otlp_start,
    .close = otlp_close_source,
    .host = otlp_host,
    .port = otlp_port,
    .describe = otlp_describe,
    .metrics = otlp_metrics,
    .core = NULL,
};

struct ingest_source *otlp_source(struct otlp *r) {
    return &r->base;
}

struct otlp *otlp_of(struct ingest_source *s) {
    return s && s->ops == &otlp_ops ? receiver(s) : NULL;
}

int otlp_make(const struct ingest_env *env, struct ingest_source **out) {
    const struct dqd_config *cfg = env->cfg;
    *out = NULL;
    if (!cfg->otlp[0]) {
        return DQ_OK;
    }
    char hostname[256] = "";
    if (gethostname(hostname, sizeof hostname - 1) != 0) {
        hostname[0] = '\0';
    }
    struct otlp_options oo = {.listen = cfg->otlp,
                              .api_token = cfg->token, /* read from api_token's file */
                              .hostname = hostname,
                              .allowed_hosts = cfg->allowed_hosts,
                              .cors_origins = cfg->otlp_cors_origins,
                              .silence_ns = cfg->otlp_silence_ms * 1000000,
                              .max_body = (size_t)cfg->otlp_max_body,
                              .max_spans_per_second = cfg->otlp_max_spans_per_second,
                              .recent_spans = (size_t)cfg->otlp_recent_spans,
                              .rules = cfg->otlp_rules,
                              .n_rules = cfg->n_otlp_rules};
    struct otlp *r;
    int rc = otlp_create(env->loop, env->core, &oo, &r);
    if (rc == DQ_OK) {
        *out = &r->base;
    }
    return rc;
}
