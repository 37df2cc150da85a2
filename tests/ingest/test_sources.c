/*
 * test_sources.c: the sources' interface (controller/ingest/ingest.h) on a real core over a
 * real SQLite store, with a manual clock. The TCP source and the OTLP receiver are made
 * from one dqd_config by their ingest_make_fn (the OTLP one only with `otlp` set), started,
 * described, measured and closed through the same calls; a third source written here, as
 * a new module would be, goes through the same calls. Bad addresses are errors naming the
 * setting; every source's /metrics families are its own (no name printed twice).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core_env.h"
#include "ingest.h"
#include "otlp.h"

#define SEC 1000000000LL
#define T0 (1795600000LL * SEC) /* a window boundary (1 s windows) */

/* ---- a third source, as a new module would write it ----------------------------------------- */

struct fake {
    struct ingest_source base; /* first */
    int started;
    uint64_t instances;
};

static int fake_start(struct ingest_source *s) {
    ((struct fake *)s)->started = 1;
    return DQ_OK;
}

static void fake_close(struct ingest_source *s, void (*done)(void *arg), void *arg) {
    free(s);
    if (done) {
        done(arg);
    }
}

static const char *fake_host(const struct ingest_source *s) {
    (void)s;
    return "/dev/fake";
}

static int fake_port(const struct ingest_source *s) {
    return ((const struct fake *)s)->started ? 9 : 0;
}

static void fake_describe(const struct ingest_source *s, json_t *o) {
    json_object_set_new(o, "instances",
                        json_integer((json_int_t)((const struct fake *)s)->instances));
}

static void fake_metrics(const struct ingest_source *s, struct http_response *res) {
    http_response_printf(res,
                         "# HELP dqd_fake_instances_total Instances of the fake source.\n"
                         "# TYPE dqd_fake_instances_total counter\n"
                         "dqd_fake_instances_total %llu\n",
                         (unsigned long long)((const struct fake *)s)->instances);
}

static const struct ingest_ops fake_ops = {
    .name = "fake",
    .what = "fake",
    .start = fake_start,
    .close = fake_close,
    .host = fake_host,
    .port = fake_port,
    .describe = fake_describe,
    .metrics = fake_metrics,
    .core = NULL,
};

static int fake_make(const struct ingest_env *env, struct ingest_source **out) {
    (void)env;
    struct fake *f = calloc(1, sizeof *f);
    if (!f) {
        return dq_fail(DQ_ENOMEM, "no memory for the fake source");
    }
    f->base.ops = &fake_ops;
    f->instances = 3;
    *out = &f->base;
    return DQ_OK;
}

/* ---- the environment ------------------------------------------------------------------------- */

struct env {
    struct core_env c;
    struct dqd_config cfg;
    struct ingest_env ie;
};

static void env_open(struct env *e) {
    core_env_open(&e->c, "test_sources", T0 + SEC / 2);
    settings_defaults(&e->cfg);
    snprintf(e->cfg.listen, sizeof e->cfg.listen, "127.0.0.1:0");
    e->ie = (struct ingest_env){.loop = &e->c.loop, .core = e->c.core, .cfg = &e->cfg};
}

static void count_done(void *arg) {
    (*(int *)arg)++;
}

/* The source's status object, as text (freed by the caller). */
static char *described(const struct ingest_source *s) {
    json_t *o = ingest_describe(s);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

/* The source's /metrics families, as text in res (released by the caller). */
static const char *measured(const struct ingest_source *s, struct http_response *res) {
    http_response_init(res, 1 << 20);
    ingest_metrics(s, res);
    http_response_append(res, "", 1); /* NUL-terminated */
    return res->body;
}

/* 1 when the families of a (TYPE lines) and of b share no name. */
static int families_disjoint(const char *a, const char *b) {
    for (const char *p = strstr(a, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        char name[128];
        if (sscanf(p + 7, "%127s", name) == 1) {
            char line[160];
            snprintf(line, sizeof line, "# TYPE %s ", name);
            if (strstr(b, line)) {
                fprintf(stderr, "family %s printed by two sources\n", name);
                return 0;
            }
        }
    }
    return 1;
}

/* ---- tests -------------------------------------------------------------------------------------
 */

/* Made from the configuration, started, described, measured, closed: TCP, OTLP, a third. */
static void test_three_sources(void) {
    struct env e;
    env_open(&e);
    struct ingest_source *tcp = NULL, *otlp = NULL, *fake = NULL;
    /* without --otlp the receiver is left off */
    CHECK_INT(otlp_make(&e.ie, &otlp), DQ_OK);
    CHECK(otlp == NULL);
    snprintf(e.cfg.otlp, sizeof e.cfg.otlp, "127.0.0.1:0");
    CHECK_INT(ingest_tcp_make(&e.ie, &tcp), DQ_OK);
    CHECK_INT(otlp_make(&e.ie, &otlp), DQ_OK);
    CHECK_INT(fake_make(&e.ie, &fake), DQ_OK);
    if (!tcp || !otlp || !fake) {
        CHECK(0);
        return;
    }
    CHECK(otlp_of(otlp) != NULL && otlp_source(otlp_of(otlp)) == otlp);
    CHECK(otlp_of(tcp) == NULL && otlp_of(fake) == NULL && otlp_of(NULL) == NULL);
    CHECK_STR(tcp->ops->name, "tcp");
    CHECK_STR(otlp->ops->name, "otlp");
    CHECK(tcp->ops->core != NULL);  /* wrappers take commands */
    CHECK(otlp->ops->core == NULL); /* OTLP's origins are passive */
    struct ingest_source *all[3] = {tcp, otlp, fake};
    for (int i = 0; i < 3; i++) {
        CHECK_INT(ingest_start(all[i]), DQ_OK);
        CHECK_MSG(ingest_port(all[i]) > 0, "%s has a port after start", all[i]->ops->name);
    }
    CHECK_STR(ingest_host(tcp), "127.0.0.1");
    CHECK_STR(ingest_host(otlp), "127.0.0.1");

    /* two spans into the receiver: its description and its families say so */
    char body[1024];
    snprintf(body, sizeof body,
             "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
             "\"value\":{\"stringValue\":\"shop\"}}]},\"scopeSpans\":[{\"spans\":["
             "{\"traceId\":\"%032x\",\"spanId\":\"%016x\",\"name\":\"pay\","
             "\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\"},"
             "{\"traceId\":\"%032x\",\"spanId\":\"%016x\",\"name\":\"pay\","
             "\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\"}]}]}]}",
             1, 1, T0, T0 + SEC / 10, 1, 2, T0, T0 + SEC / 5);
    struct http_response res;
    http_response_init(&res, 1 << 20);
    otlp_handle_body(otlp_of(otlp), "application/json", NULL, NULL, (const uint8_t *)body,
                     strlen(body), &res);
    CHECK_INT(res.status, 200);
    http_response_release(&res);

    char want[256];
    char *d = described(tcp);
    snprintf(want, sizeof want,
             "{\"connections\":0,\"connections_evicted\":0,\"connections_junk\":0,"
             "\"connections_total\":0,\"instances\":0,\"listen\":\"127.0.0.1:%d\","
             "\"name\":\"tcp\"}",
             ingest_port(tcp));
    CHECK_STR(d, want);
    free(d);
    d = described(otlp);
    snprintf(want, sizeof want,
             "{\"instances\":2,\"listen\":\"127.0.0.1:%d\",\"name\":\"otlp\",\"requests\":0,"
             "\"services\":1}",
             ingest_port(otlp));
    CHECK_STR(d, want); /* a body handed in directly is not an HTTP request */
    free(d);
    d = described(fake);
    CHECK_STR(d, "{\"instances\":3,\"listen\":\"/dev/fake:9\",\"name\":\"fake\"}");
    free(d);
    struct core_stats cs;
    core_get_stats(e.c.core, &cs);
    CHECK_INT(cs.instances_total, 2); /* what the receiver added, as it says */

    struct http_response mt, mo, mf;
    const char *t = measured(tcp, &mt), *o = measured(otlp, &mo), *f = measured(fake, &mf);
    CHECK(strstr(t, "\ndqd_connections_total 0\n") != NULL);
    CHECK(strstr(t, "dqd_protocol_errors_total{kind=\"") != NULL);
    CHECK(strstr(t, "dqd_ingest_connections_closed_total{reason=\"junk\"} 0\n") != NULL);
    CHECK(strstr(t, "dqd_ingest_connections_closed_total{reason=\"evicted\"} 0\n") != NULL);
    CHECK(strstr(o, "dqd_otlp_spans_total{result=\"accepted\"} 2\n") != NULL);
    CHECK(strstr(o, "\ndqd_otlp_services 1\n") != NULL);
    CHECK(strstr(f, "\ndqd_fake_instances_total 3\n") != NULL);
    CHECK(families_disjoint(t, o) && families_disjoint(t, f) && families_disjoint(o, f));
    http_response_release(&mt);
    http_response_release(&mo);
    http_response_release(&mf);

    /* closing: each done runs once its handles have closed */
    int closed = 0;
    for (int i = 0; i < 3; i++) {
        ingest_close(all[i], count_done, &closed);
    }
    core_env_close(&e.c);
    CHECK_INT(closed, 3);
}

/* A bad address is an error naming the setting, and the source still closes. */
static void test_bad_addresses(void) {
    struct env e;
    env_open(&e);
    snprintf(e.cfg.listen, sizeof e.cfg.listen, "nowhere");
    struct ingest_source *tcp = NULL, *otlp = NULL;
    CHECK_INT(ingest_tcp_make(&e.ie, &tcp), DQ_OK); /* the address is read at start */
    CHECK(tcp != NULL);
    if (tcp) {
        CHECK(ingest_start(tcp) < 0);
        CHECK_MSG(strstr(dq_last_error(), "--listen") != NULL, "%s", dq_last_error());
    }
    snprintf(e.cfg.otlp, sizeof e.cfg.otlp, "nowhere");
    CHECK(otlp_make(&e.ie, &otlp) < 0);
    CHECK_MSG(strstr(dq_last_error(), "--otlp") != NULL, "%s", dq_last_error());
    CHECK(otlp == NULL);
    int closed = 0;
    ingest_close(tcp, count_done, &closed);
    ingest_close(NULL, count_done, &closed); /* nothing to close: done at once */
    core_env_close(&e.c);
    CHECK_INT(closed, 2);
}

static const struct check_case cases[] = {
    CHECK_CASE(three_sources),
    CHECK_CASE(bad_addresses),
};

CHECK_MAIN(cases)
