/*
 * test_routes.c: the API's route table (controller/api/api_routes.c) against what
 * docs/api.md promises, driven through api_handle with requests parsed from bytes (no
 * socket, a manual clock, a store in a temporary folder). DQ_API_MD is docs/api.md's path
 * (CMake passes it).
 *
 * 1. The table: every route names a method and an access class (a route added without
 *    one fails here), reads are read or open, changes are change or text body, no two
 *    routes take the same method on the same pattern.
 * 2. The docs: the route table of docs/api.md lists exactly the routes of the code, with
 *    the same methods and access classes.
 * 3. Every route × method (GET, HEAD, PUT, POST, DELETE, PATCH) × server (loopback or
 *    beyond, with or without a token, public reads) × request (no token, the token, a
 *    wrong one, a foreign Host, no Host, a foreign Origin, a text/plain body) gets the
 *    status docs/api.md promises: the refusal of the Authorization table, counted under
 *    its reason, else a 405 with the methods docs/api.md lists for the path in Allow,
 *    else the route's own answer (never a refusal), the same for HEAD as for GET.
 * 4. PUT /api/v1/probes/NAME is one change: with the store refusing the commit, dMax, QTA,
 *    servers and enabled all stay as they were, nothing is sent, nothing is told; with
 *    the store working, all are made, recorded, sent once and told once per setting.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dq_error.h"

#define T0 (1716300000LL * 1000000000LL)

/* ---- the daemon under test -------------------------------------------------------------- */

struct fake_link {
    int sent;           /* commands sent to the one link */
    char last[128];     /* the last: "set_timeout b 50" */
    int told;           /* observer calls */
    char told_what[64]; /* "dmax,qta,enable," */
};

static struct fake_link seen;

static size_t fake_destinations(void *src, const struct wire_cmd *cmd, struct core_dest *out,
                                size_t cap) {
    (void)src, (void)cmd;
    if (cap > 0) {
        out[0] = (struct core_dest){.id = 1, .label = "1 fake", .applicable = 1};
    }
    return 1;
}

static int fake_send(void *src, uint64_t dest, const struct wire_cmd *cmd, int64_t row) {
    (void)src, (void)dest, (void)row;
    seen.sent++;
    snprintf(seen.last, sizeof seen.last, "%d %.*s %g", (int)cmd->kind, (int)cmd->name.n,
             cmd->name.p, cmd->ms);
    return DQ_OK;
}

static const struct core_source_ops fake_ops = {
    .name = "fake", .destinations = fake_destinations, .send = fake_send};

static void observer(void *ctx, const struct probe *p, const char *what) {
    (void)ctx, (void)p;
    seen.told++;
    size_t n = strlen(seen.told_what);
    snprintf(seen.told_what + n, sizeof seen.told_what - n, "%s,", what);
}

struct env {
    char dir[64], db[128];
    struct clock_manual manual;
    struct clock clock;
    struct store *store;
    struct core *core;
    struct adapt *adapt;
    struct api *api;
};

static void die(const char *what) {
    fprintf(stderr, "test_api_routes: %s: %s\n", what, dq_last_error());
    exit(2);
}

static void env_open(struct env *e) {
    snprintf(e->dir, sizeof e->dir, "/tmp/dqd-api-routes-XXXXXX");
    if (!mkdtemp(e->dir)) {
        die("mkdtemp");
    }
    snprintf(e->db, sizeof e->db, "%s/dqd.db", e->dir);
    clock_init_manual(&e->clock, &e->manual, T0);
    if (store_open(e->db, &e->store) != DQ_OK) {
        die("store");
    }
    struct core_options co = {.max_probes = 100,
                              .window_ns = 1000000000,
                              .lag_ns = 1000000000,
                              .ring = 8,
                              .default_dmax_ms = 1024,
                              .default_bins = 1024};
    if (core_create(&co, e->store, &e->clock, &e->core) != DQ_OK) {
        die("core");
    }
    static const char diagram[] = "root = s:a -> s:b;\n";
    if (core_load_diagram(e->core, diagram, sizeof diagram - 1, "test") != DQ_OK ||
        core_add_source(e->core, &fake_ops, NULL) != DQ_OK) {
        die("diagram");
    }
    core_set_observer(e->core, observer, NULL);
    struct adapt_env ae = {.core = e->core, .store = e->store, .clock = &e->clock};
    struct adapt_options ao = {.min_instances = 10,
                               .min_windows = 2,
                               .deescalate_windows = 5,
                               .investigation_windows = 10,
                               .snapshot_windows = 2};
    if (adapt_create(&ae, &ao, &e->adapt) != DQ_OK) {
        die("adapt");
    }
}

/* A server: where the API listens, its token, public reads. */
struct server {
    const char *name;
    const char *listen;
    const char *token;
    int public_reads;
};

static const struct server servers[] = {
    {"loopback", "127.0.0.1", "", 0},
    {"loopback+token", "127.0.0.1", "tok", 0},
    {"beyond", "0.0.0.0", "", 0},
    {"beyond+token", "0.0.0.0", "tok", 0},
    {"beyond+token+public_reads", "0.0.0.0", "tok", 1},
};

static void api_open(struct env *e, const struct server *s) {
    struct api_env env = {.core = e->core, .adapt = e->adapt, .store = e->store};
    struct api_options o = {.version = "test",
                            .db = e->db,
                            .api_token = s->token,
                            .allowed_hosts = "dqd.internal",
                            .public_reads = s->public_reads,
                            .clock = "sim",
                            .window_ms = 1000,
                            .lag_ms = 1000};
    if (api_create(&env, &o, &e->api) != DQ_OK) {
        die("api");
    }
    api_set_addresses(e->api, "127.0.0.1", 7400, s->listen, 7401);
}

static void env_close(struct env *e) {
    api_destroy(e->api);
    adapt_destroy(e->adapt);
    core_remove_source(e->core, NULL);
    core_destroy(e->core);
    store_close(e->store);
    char path[160];
    const char *files[] = {"dqd.db", "dqd.db-wal", "dqd.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", e->dir, files[i]);
        unlink(path);
    }
    rmdir(e->dir);
}

/* ---- one request through api_handle ------------------------------------------------------- */

struct answer {
    int status;
    char allow[64]; /* the Allow header, "" when none */
    char body[512]; /* the start of the body */
};

struct asking {
    struct api *api;
    struct answer *out;
};

static int on_request(void *ctx, const struct http_request *req) {
    struct asking *a = ctx;
    struct http_response res;
    http_response_init(&res, 64 << 20);
    api_handle(a->api, req, &res);
    a->out->status = res.status;
    a->out->allow[0] = '\0';
    const char *al = strstr(res.extra, "Allow: ");
    if (al && (al == res.extra || al[-1] == '\n')) {
        size_t n = strcspn(al + 7, "\r");
        snprintf(a->out->allow, sizeof a->out->allow, "%.*s", (int)n, al + 7);
    }
    snprintf(a->out->body, sizeof a->out->body, "%.*s", (int)res.len, res.body ? res.body : "");
    http_response_release(&res);
    return HTTP_FEED_CONTINUE;
}

/* Parses the request bytes and answers them; the status (0 when nothing was answered). */
static struct answer ask(struct api *api, const char *raw) {
    struct answer out = {0};
    struct asking a = {api, &out};
    struct http_conn_parser p;
    if (http_conn_parser_init(&p, NULL, on_request, NULL, &a) != DQ_OK ||
        http_conn_parser_feed(&p, raw, strlen(raw), NULL) != DQ_OK) {
        fprintf(stderr, "unparsed request: %s\n", raw);
    }
    http_conn_parser_release(&p);
    return out;
}

/* ---- 1. the table ------------------------------------------------------------------------- */

static int is_read_class(enum http_access_class c) {
    return c == HTTP_ACCESS_READ || c == HTTP_ACCESS_OPEN;
}

static int is_change_class(enum http_access_class c) {
    return c == HTTP_ACCESS_CHANGE || c == HTTP_ACCESS_TEXT_BODY;
}

static void test_table(void) {
    CHECK(api__n_routes >= 28);
    for (size_t i = 0; i < api__n_routes; i++) {
        const struct api_route *r = &api__routes[i];
        CHECK_MSG(r->access != HTTP_ACCESS_NONE, "%s has no access class", r->pattern);
        CHECK_MSG(r->methods != 0 &&
                      (r->methods & ~(unsigned)(API_GET | API_PUT | API_POST | API_DELETE)) == 0,
                  "%s: methods %u", r->pattern, r->methods);
        CHECK_MSG(r->handler != NULL, "%s has no handler", r->pattern);
        CHECK_MSG(r->methods == API_GET ? is_read_class(r->access) : is_change_class(r->access),
                  "%s: methods %u with access class %d", r->pattern, r->methods, (int)r->access);
        CHECK_MSG(r->pattern[0] == '/', "%s", r->pattern);
        const char *star = strchr(r->pattern, '*');
        CHECK_MSG(!star || star[1] == '\0', "%s: * not at the end", r->pattern);
        for (size_t j = 0; j < i; j++) {
            CHECK_MSG(strcmp(api__routes[j].pattern, r->pattern) != 0 ||
                          (api__routes[j].methods & r->methods) == 0,
                      "%s is in the table twice for one method", r->pattern);
        }
    }
}

/* ---- 2. the docs -------------------------------------------------------------------------- */

#define MAX_DOC_ROUTES 64

struct doc_route {
    unsigned methods;
    char pattern[96];
    enum http_access_class access;
};

static struct doc_route doc[MAX_DOC_ROUTES];
static size_t n_doc;

static enum http_access_class class_named(const char *s) {
    return strcmp(s, "read") == 0        ? HTTP_ACCESS_READ
           : strcmp(s, "open") == 0      ? HTTP_ACCESS_OPEN
           : strcmp(s, "change") == 0    ? HTTP_ACCESS_CHANGE
           : strcmp(s, "text body") == 0 ? HTTP_ACCESS_TEXT_BODY
                                         : HTTP_ACCESS_NONE;
}

/* One row "| `GET`, `HEAD` | `/path` | read | what |" of the table; 0 when malformed. */
static int parse_doc_row(const char *line, struct doc_route *out) {
    char cells[4][160];
    const char *c = line + 1;
    for (int k = 0; k < 4; k++) {
        const char *bar = strchr(c, '|');
        if (!bar) {
            return 0;
        }
        size_t n = (size_t)(bar - c);
        while (n && c[0] == ' ') {
            c++, n--;
        }
        while (n && c[n - 1] == ' ') {
            n--;
        }
        snprintf(cells[k], sizeof cells[k], "%.*s", (int)n, c);
        c = bar + 1;
    }
    *out = (struct doc_route){0};
    static const struct {
        const char *text;
        unsigned bit;
    } m[] = {
        {"`GET`", API_GET}, {"`PUT`", API_PUT}, {"`POST`", API_POST}, {"`DELETE`", API_DELETE}};
    for (size_t i = 0; i < 4; i++) {
        out->methods |= strstr(cells[0], m[i].text) ? m[i].bit : 0;
    }
    int head = strstr(cells[0], "`HEAD`") != NULL;
    size_t pl = strlen(cells[1]);
    if (pl < 3 || cells[1][0] != '`' || cells[1][pl - 1] != '`' ||
        head != (out->methods == API_GET)) {
        return 0;
    }
    snprintf(out->pattern, sizeof out->pattern, "%.*s", (int)(pl - 2), cells[1] + 1);
    out->access = class_named(cells[2]);
    return out->methods && out->access != HTTP_ACCESS_NONE;
}

/* Reads the rows between "<!-- routes: begin -->" and "<!-- routes: end -->" (once). */
static void read_doc(void) {
    static int done;
    if (done++) {
        return;
    }
    const char *path = DQ_API_MD;
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    if (!f) {
        return;
    }
    char line[512];
    int in = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "<!-- routes: begin -->")) {
            in = 1;
        } else if (strstr(line, "<!-- routes: end -->")) {
            in = 0;
        } else if (in && strncmp(line, "| `", 3) == 0) {
            rows++;
            if (n_doc < MAX_DOC_ROUTES && parse_doc_row(line, &doc[n_doc])) {
                n_doc++;
            } else {
                CHECK_MSG(0, "docs/api.md: a malformed route row: %s", line);
            }
        }
    }
    fclose(f);
    CHECK_MSG(rows > 0, "%s has no route table", path);
}

static void test_docs(void) {
    read_doc();
    CHECK_INT(n_doc, api__n_routes);
    for (size_t i = 0; i < api__n_routes; i++) {
        const struct api_route *r = &api__routes[i];
        int found = 0;
        for (size_t j = 0; j < n_doc; j++) {
            found |= strcmp(doc[j].pattern, r->pattern) == 0 && doc[j].methods == r->methods &&
                     doc[j].access == r->access;
        }
        CHECK_MSG(found, "docs/api.md does not list %s (methods %u, access %d) as the code has it",
                  r->pattern, r->methods, (int)r->access);
    }
    for (size_t j = 0; j < n_doc; j++) {
        int found = 0;
        for (size_t i = 0; i < api__n_routes; i++) {
            found |= strcmp(doc[j].pattern, api__routes[i].pattern) == 0 &&
                     doc[j].methods == api__routes[i].methods;
        }
        CHECK_MSG(found, "docs/api.md lists %s (methods %u), the code has no such route",
                  doc[j].pattern, doc[j].methods);
    }
}

/* ---- 3. route × method × server × request --------------------------------------------------- */

/* A path the pattern matches: {probe} is a (the diagram has it), * a short rest. */
static void instance(const char *pattern, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = pattern; *p && o + 8 < cap;) {
        if (strncmp(p, "{probe}", 7) == 0) {
            o += (size_t)snprintf(out + o, cap - o, "a");
            p += 7;
        } else if (*p == '*') {
            o +=
                (size_t)snprintf(out + o, cap - o, "%s", strstr(pattern, "triggers") ? "qta" : "1");
            p++;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

/* Whether a documented pattern matches path: {probe} one segment of 1 to PROBES_NAME_MAX
 * bytes, a final * anything (the test's own reading of the docs' notation). */
static int doc_match(const char *pat, const char *path) {
    while (*pat) {
        if (pat[0] == '*' && pat[1] == '\0') {
            return 1;
        }
        if (strncmp(pat, "{probe}", 7) == 0) {
            size_t n = strcspn(path, "/");
            if (n == 0 || n > PROBES_NAME_MAX) {
                return 0;
            }
            path += n;
            pat += 7;
        } else if (*pat++ != *path++) {
            return 0;
        }
    }
    return *path == '\0';
}

enum req_kind {
    REQ_PLAIN,          /* no token */
    REQ_TOKEN,          /* the token */
    REQ_WRONG_TOKEN,    /* another one */
    REQ_FOREIGN_HOST,   /* with the token */
    REQ_NO_HOST,        /* HTTP/1.1, with the token */
    REQ_FOREIGN_ORIGIN, /* with the token */
    REQ_TEXT_BODY,      /* text/plain, with the token */
    REQ_KINDS
};

static const char *const req_names[] = {"no token", "token",          "wrong token", "foreign Host",
                                        "no Host",  "foreign Origin", "text/plain"};

static const char *const methods[] = {"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"};

static unsigned method_bit(const char *m) {
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ? API_GET
           : strcmp(m, "PUT") == 0                         ? API_PUT
           : strcmp(m, "POST") == 0                        ? API_POST
           : strcmp(m, "DELETE") == 0                      ? API_DELETE
                                                           : 0;
}

static void build_request(char *buf, size_t cap, const char *method, const char *path,
                          enum req_kind k) {
    int body = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    size_t o = (size_t)snprintf(buf, cap, "%s %s HTTP/1.1\r\n", method, path);
    if (k == REQ_FOREIGN_HOST) {
        o += (size_t)snprintf(buf + o, cap - o, "Host: evil.example\r\n");
    } else if (k != REQ_NO_HOST) {
        o += (size_t)snprintf(buf + o, cap - o, "Host: 127.0.0.1:7401\r\n");
    }
    if (k == REQ_WRONG_TOKEN) {
        o += (size_t)snprintf(buf + o, cap - o, "Authorization: Bearer tox\r\n");
    } else if (k != REQ_PLAIN) {
        o += (size_t)snprintf(buf + o, cap - o, "Authorization: Bearer tok\r\n");
    }
    if (k == REQ_FOREIGN_ORIGIN) {
        o += (size_t)snprintf(buf + o, cap - o, "Origin: http://evil.example\r\n");
    }
    if (body) {
        o += (size_t)snprintf(buf + o, cap - o, "Content-Type: %s\r\nContent-Length: 2\r\n\r\n[]",
                              k == REQ_TEXT_BODY ? "text/plain" : "application/json");
    } else {
        snprintf(buf + o, cap - o, "\r\n");
    }
}

/* What docs/api.md ("Authorization") promises: the refusal's status and the reason it is
 * counted under (an index of api->refused), or 0 when the request may go on. */
static int promised_refusal(const struct server *s, enum http_access_class cls, enum req_kind k,
                            int *reason) {
    int loopback = strcmp(s->listen, "127.0.0.1") == 0, token = s->token[0] != 0;
    int has_token = k != REQ_PLAIN && k != REQ_WRONG_TOKEN;
    *reason = API_REFUSED_HOST;
    if (k == REQ_FOREIGN_HOST) {
        return 403;
    }
    if (k == REQ_NO_HOST) {
        return 400;
    }
    *reason = API_REFUSED_TOKEN;
    if (cls == HTTP_ACCESS_OPEN) {
        return 0;
    }
    if (cls == HTTP_ACCESS_READ) {
        return !loopback && token && !s->public_reads && !has_token ? 401 : 0;
    }
    if (k == REQ_FOREIGN_ORIGIN) {
        *reason = API_REFUSED_ORIGIN;
        return 403;
    }
    if (k == REQ_TEXT_BODY && cls == HTTP_ACCESS_CHANGE) {
        *reason = API_REFUSED_TYPE;
        return 415;
    }
    if (!token) {
        return loopback ? 0 : 403;
    }
    return has_token ? 0 : 401;
}

/* What the docs say of a method on a path: whether a route takes it, with which access
 * class (by the method when none does: read for GET and HEAD, change otherwise), and the
 * methods of the routes the path has, as Allow lists them ("GET, HEAD, PUT, DELETE"). */
struct doc_answer {
    int routed;
    enum http_access_class cls;
    char allow[64];
};

static struct doc_answer doc_lookup(const char *path, unsigned want) {
    struct doc_answer d = {0, want == API_GET ? HTTP_ACCESS_READ : HTTP_ACCESS_CHANGE, ""};
    unsigned all = 0;
    for (size_t j = 0; j < n_doc; j++) {
        if (doc_match(doc[j].pattern, path)) {
            all |= doc[j].methods;
            if (!d.routed && (doc[j].methods & want)) {
                d.cls = doc[j].access;
                d.routed = 1;
            }
        }
    }
    static const struct {
        unsigned bit;
        const char *text;
    } m[] = {{API_GET, "GET, HEAD"}, {API_PUT, "PUT"}, {API_POST, "POST"}, {API_DELETE, "DELETE"}};
    for (size_t i = 0; i < 4; i++) {
        if (all & m[i].bit) {
            size_t o = strlen(d.allow);
            snprintf(d.allow + o, sizeof d.allow - o, "%s%s", o ? ", " : "", m[i].text);
        }
    }
    return d;
}

static int n_asked;

/* One request on one server; checks its status (and Allow, and the refusal counter). */
static void check_one(struct env *e, const struct server *s, const char *method, const char *path,
                      enum req_kind k, int *get_status) {
    char raw[1024];
    build_request(raw, sizeof raw, method, path, k);
    struct doc_answer d = doc_lookup(path, method_bit(method));
    const char *allow = d.allow;
    int routed = d.routed;
    int reason;
    int refusal = promised_refusal(s, d.cls, k, &reason);
    uint64_t before[API_REFUSED_KINDS];
    memcpy(before, e->api->refused, sizeof before);
    struct answer a = ask(e->api, raw);
    n_asked++;
    const char *what = req_names[k];
    if (refusal) {
        CHECK_MSG(a.status == refusal, "%s: %s %s, %s: %d, promised %d (%s)", s->name, method, path,
                  what, a.status, refusal, a.body);
        CHECK_MSG(e->api->refused[reason] == before[reason] + 1, "%s: %s %s, %s: not counted",
                  s->name, method, path, what);
    } else if (!routed) {
        CHECK_MSG(a.status == (allow[0] ? 405 : 404), "%s: %s %s, %s: %d, promised %d (%s)",
                  s->name, method, path, what, a.status, allow[0] ? 405 : 404, a.body);
        CHECK_MSG(strcmp(a.allow, allow[0] && a.status == 405 ? allow : "") == 0,
                  "%s: %s %s: Allow \"%s\", docs list \"%s\"", s->name, method, path, a.allow,
                  allow);
    } else {
        CHECK_MSG(a.status != 401 && a.status != 403 && a.status != 405 && a.status != 415 &&
                      a.status != 0,
                  "%s: %s %s, %s: %d, not the route's own answer (%s)", s->name, method, path, what,
                  a.status, a.body);
        CHECK_MSG(a.allow[0] == '\0', "%s: %s %s: Allow on an answer", s->name, method, path);
    }
    if (!refusal) {
        CHECK_MSG(memcmp(before, e->api->refused, sizeof before) == 0,
                  "%s: %s %s, %s: counted as refused", s->name, method, path, what);
    }
    if (strcmp(method, "GET") == 0) {
        *get_status = a.status;
    } else if (strcmp(method, "HEAD") == 0) {
        CHECK_MSG(a.status == *get_status, "%s: HEAD %s, %s: %d, GET %d", s->name, path, what,
                  a.status, *get_status);
    }
}

static struct env *env_get(void);

static void test_matrix(void) {
    struct env *e = env_get();
    read_doc();
    /* every route's path, and paths no route has */
    char paths[MAX_DOC_ROUTES + 4][128];
    size_t n = 0;
    for (size_t i = 0; i < api__n_routes && n < MAX_DOC_ROUTES; i++) {
        instance(api__routes[i].pattern, paths[n++], sizeof paths[0]);
    }
    snprintf(paths[n++], sizeof paths[0], "/nothing");
    snprintf(paths[n++], sizeof paths[0], "/api/v1/nothing");
    snprintf(paths[n++], sizeof paths[0], "/api/v1/probes/a/nothing");
    for (size_t si = 0; si < sizeof servers / sizeof servers[0]; si++) {
        api_open(e, &servers[si]);
        for (size_t pi = 0; pi < n; pi++) {
            for (int k = 0; k < REQ_KINDS; k++) {
                int get_status = 0;
                for (size_t mi = 0; mi < sizeof methods / sizeof methods[0]; mi++) {
                    check_one(e, &servers[si], methods[mi], paths[pi], (enum req_kind)k,
                              &get_status);
                }
            }
        }
        api_destroy(e->api);
        e->api = NULL;
    }
    CHECK_INT(n_asked, (int)(5 * n * REQ_KINDS * 6));
}

/* ---- 4. PUT /api/v1/probes/NAME is one change ---------------------------------------------- */

struct stored {
    double dmax_ms;
    int enabled, servers;
    char qta[256];
};

static int read_stored(void *ctx, const struct store_probe *p) {
    struct stored *s = ctx;
    s->dmax_ms = p->dmax_ms;
    s->enabled = p->enabled;
    s->servers = p->servers;
    snprintf(s->qta, sizeof s->qta, "%s", p->qta_json ? p->qta_json : "");
    return 0;
}

static struct answer put(struct env *e, const char *name, const char *body) {
    char raw[1024];
    snprintf(raw, sizeof raw,
             "PUT /api/v1/probes/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
             "application/json\r\nContent-Length: %zu\r\n\r\n%s",
             name, strlen(body), body);
    return ask(e->api, raw);
}

static void test_put_whole(void) {
    struct env *e = env_get();
    api_open(e, &servers[0]);
    struct probe *b = probes_find(core_probes(e->core), "b", 1);
    CHECK(b && !b->enabled && !b->has_qta && b->servers == 0);
    if (!b) {
        return;
    }
    double dmax0 = b->dmax_ms;
    int n0 = b->n;
    memset(&seen, 0, sizeof seen);
    static const char all[] = "{\"dmax_ms\": 50, \"qta\": {\"points\": [[0.9, 0.04]]}, "
                              "\"servers\": 4, \"enabled\": true}";
    /* the store refuses: nothing of it is made */
    store_refuse_commits(e->store, 1);
    struct answer a = put(e, "b", all);
    store_refuse_commits(e->store, 0);
    CHECK_INT(a.status, 503);
    CHECK_MSG(strstr(a.body, "store did not take the change") != NULL, "%s", a.body);
    CHECK(b->dmax_ms == dmax0 && b->n == n0 && !b->has_qta && b->servers == 0 && !b->enabled);
    CHECK_INT(seen.sent, 0);
    CHECK_INT(seen.told, 0);
    struct stored st = {0}; /* b has no row yet (a diagram's node is stored once changed) */
    int rc = store_probe_get(e->store, "b", read_stored, &st);
    CHECK(rc == DQ_ENOTFOUND ||
          (rc == DQ_OK && !st.enabled && st.servers == 0 && !st.qta[0] && st.dmax_ms != 50));
    /* a new name created by a refused PUT is not kept either */
    store_refuse_commits(e->store, 1);
    a = put(e, "fresh?create=1", "{\"enabled\": true}");
    store_refuse_commits(e->store, 0);
    CHECK_INT(a.status, 503);
    CHECK(probes_find(core_probes(e->core), "fresh", 5) == NULL);
    /* the store takes it: all of it, one command, told once per setting */
    a = put(e, "b", all);
    CHECK_MSG(a.status == 200, "%d %s", a.status, a.body);
    CHECK(b->dmax_ms == 50 && b->has_qta && b->servers == 4 && b->enabled);
    CHECK_INT(seen.sent, 1);
    CHECK_MSG(strstr(seen.last, " b 50") != NULL, "%s", seen.last);
    CHECK_STR(seen.told_what, "dmax,qta,enable,");
    memset(&st, 0, sizeof st);
    CHECK_INT(store_probe_get(e->store, "b", read_stored, &st), DQ_OK);
    CHECK(st.enabled && st.servers == 4 && st.qta[0] == '{' && st.dmax_ms == 50);
    /* a new dMax of an enabled probe: one set_timeout, told once */
    memset(&seen, 0, sizeof seen);
    a = put(e, "b", "{\"dmax_ms\": \"80ms\"}");
    CHECK_INT(a.status, 200);
    CHECK_INT(seen.sent, 1);
    CHECK_MSG(strstr(seen.last, " b 80") != NULL, "%s", seen.last);
    CHECK_STR(seen.told_what, "dmax,");
    /* refused halfway (the disable after the dMax): the dMax goes back as well */
    memset(&seen, 0, sizeof seen);
    store_refuse_commits(e->store, 1);
    a = put(e, "b", "{\"dmax_ms\": 100, \"enabled\": false}");
    store_refuse_commits(e->store, 0);
    CHECK_INT(a.status, 503);
    CHECK(b->dmax_ms == 80 && b->enabled);
    CHECK_INT(seen.sent, 0);
    CHECK_INT(seen.told, 0);
    /* a grid that cannot be: 422, nothing changed, nothing written */
    char grid[64];
    snprintf(grid, sizeof grid, "{\"dmax_ms\": 4194304, \"bins\": %d}", DQ_MIN_BINS);
    a = put(e, "b", grid); /* 2^22 ms in a few bins of at most 2^10 ms */
    CHECK_INT(a.status, 422);
    CHECK(b->dmax_ms == 80);
    api_destroy(e->api);
    e->api = NULL;
}

/* The daemon the cases share, opened by the first that needs it, closed at exit. */
static struct env shared;
static int shared_open;

static void env_exit(void) {
    env_close(&shared);
}

static struct env *env_get(void) {
    if (!shared_open++) {
        env_open(&shared);
        atexit(env_exit);
    }
    return &shared;
}

static const struct check_case cases[] = {
    CHECK_CASE(table),
    CHECK_CASE(docs),
    CHECK_CASE(matrix),
    CHECK_CASE(put_whole),
};

CHECK_MAIN(cases)
