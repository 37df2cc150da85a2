/*
 * test_events.c: the pure parts of the live event hub (events.h): the bytes of a frame,
 * the ?types= filter, the type names; and the dashboard's embedded files (web.h): every
 * file the page names is embedded, with its content type and an ETag, and the page loads
 * nothing from elsewhere.
 */
#include "events.h"
#include "web.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

static void test_format(void) {
    json_t *d = json_pack("{s:s,s:i}", "probe", "a\nb", "n", 3);
    size_t len = 0;
    char *f = events_format(42, "probe", d, &len);
    CHECK_STR(f, "id: 42\nevent: probe\ndata: {\"probe\":\"a\\nb\",\"n\":3}\n\n");
    CHECK_INT(len, strlen(f));
    /* one data line whatever the JSON holds: no raw line break inside */
    const char *data = strstr(f, "data: ");
    CHECK(data && strchr(data, '\n') == f + len - 2);
    free(f);
    json_decref(d);
    json_t *big = json_array();
    for (int i = 0; i < 5000; i++) {
        json_array_append_new(big, json_real(i * 0.5));
    }
    f = events_format(1, "window", big, &len);
    CHECK(f && len > 20000 && f[len - 1] == '\n' && f[len - 2] == '\n');
    free(f);
    json_decref(big);
}

static void test_types(void) {
    CHECK_INT(EVENTS_N_TYPES, 10);
    for (int i = 0; i < EVENTS_N_TYPES; i++) {
        CHECK_INT(events_type_of(events_type_name(i)), i);
    }
    CHECK_INT(events_type_of("nope"), -1);
    CHECK(events_type_name(-1) == NULL && events_type_name(EVENTS_N_TYPES) == NULL);
    CHECK_STR(events_type_name(EVENTS_WINDOW), "window");
    CHECK_STR(events_type_name(EVENTS_HYPOTHESIS), "hypothesis");

    unsigned m = 0;
    char err[512];
    CHECK_INT(events_parse_types(NULL, &m, err, sizeof err), 0);
    CHECK_INT(m, EVENTS_ALL);
    CHECK_INT(events_parse_types("", &m, err, sizeof err), 0);
    CHECK_INT(m, EVENTS_ALL);
    CHECK_INT(events_parse_types(" window , verdict,", &m, err, sizeof err), 0);
    CHECK_INT(m, (1u << EVENTS_HELLO) | (1u << EVENTS_WINDOW) | (1u << EVENTS_VERDICT));
    CHECK_INT(events_parse_types("probe_silent", &m, err, sizeof err), 0);
    CHECK_INT(m, (1u << EVENTS_HELLO) | (1u << EVENTS_PROBE_SILENT));
    CHECK_INT(events_parse_types("window,windows", &m, err, sizeof err), -1);
    CHECK(strstr(err, "\"windows\"") != NULL && strstr(err, "probe_data_returned") != NULL);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_INT(events_parse_types(longname, &m, err, sizeof err), -1);
}

static void on_closed(void *arg) {
    *(int *)arg = 1;
}

static void test_hub_options(void) {
    struct events_options o;
    events_options_default(&o);
    CHECK(o.max_clients == 64 && o.max_pending == 1024 * 1024 && o.heartbeat_ms == 15000);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct events *ev = NULL;
    o.max_clients = 0;
    CHECK_INT(events_create(&loop, &o, &ev), DQ_EINVAL);
    CHECK_INT(events_create(&loop, NULL, &ev), DQ_OK);
    CHECK(!events_wanted(ev, EVENTS_WINDOW)); /* nobody listens: nothing is built */
    events_publish(ev, EVENTS_WINDOW, json_object());
    events_publish(ev, EVENTS_WINDOW, NULL);
    struct events_stats st;
    events_get_stats(ev, &st);
    CHECK_INT(st.published, 1);
    CHECK_INT(st.clients, 0);
    int closed = 0;
    events_close(ev, on_closed, &closed);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(closed, 1);
    events_destroy(ev);
    CHECK_INT(uv_loop_close(&loop), 0);
}

/* Each src="…" / href="…" of the page. */
static int page_refs(const char *html, char refs[][128], int cap) {
    int n = 0;
    const char *p = html;
    while (n < cap && (p = strstr(p, "=\"")) != NULL) {
        const char *attr = p;
        while (attr > html && attr[-1] != ' ') {
            attr--;
        }
        p += 2;
        const char *end = strchr(p, '"');
        if (!end) {
            break;
        }
        if ((strncmp(attr, "src=", 4) == 0 || strncmp(attr, "href=", 5) == 0) &&
            (size_t)(end - p) < 128) {
            memcpy(refs[n], p, (size_t)(end - p));
            refs[n][end - p] = '\0';
            n++;
        }
        p = end;
    }
    return n;
}

static void test_web(void) {
    size_t n = 0;
    const struct web_asset *all = web_all(&n);
    CHECK(n >= 6);
    const struct web_asset *page = web_find("/");
    CHECK(page && strcmp(page->content_type, "text/html; charset=utf-8") == 0);
    CHECK(web_find("/nope") == NULL && web_find("/assets/") == NULL);
    const struct web_asset *up = web_find("/assets/uPlot.iife.min.js");
    CHECK(up && up->len > 20000 && strstr((const char *)up->data, "uPlot") != NULL);
    CHECK(web_find("/assets/uPlot.min.css") != NULL);
    const struct web_asset *app = web_find("/assets/app.js");
    CHECK(app && strcmp(app->content_type, "text/javascript; charset=utf-8") == 0);
    /* the page uses a relative API and no other origin */
    CHECK(app && strstr((const char *)app->data, "/api/v1/events") != NULL);
    for (size_t i = 0; i < n; i++) {
        const char *text = (const char *)all[i].data;
        CHECK(all[i].data[all[i].len] == '\0');
        CHECK_MSG(strlen(all[i].etag) == 18 && all[i].etag[0] == '"' && all[i].etag[17] == '"',
                  "%s: etag %s", all[i].path, all[i].etag);
        for (size_t j = 0; j < i; j++) {
            CHECK_MSG(strcmp(all[i].path, all[j].path) != 0, "%s twice", all[i].path);
        }
        if (strcmp(all[i].path, "/assets/uPlot.iife.min.js") != 0) {
            /* an absolute URL other than the SVG namespace would load from elsewhere */
            int other = 0;
            for (const char *u = strstr(text, "http"); u; u = strstr(u + 4, "http")) {
                other += (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) &&
                         strncmp(u, "http://www.w3.org/2000/svg", 26) != 0;
            }
            CHECK_MSG(other == 0, "%s names another origin", all[i].path);
        }
    }
    char refs[32][128];
    int k = page ? page_refs((const char *)page->data, refs, 32) : 0;
    CHECK(k >= 4);
    for (int i = 0; i < k; i++) {
        CHECK_MSG(web_find(refs[i]) != NULL, "the page names %s, which is not embedded", refs[i]);
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(format),
    CHECK_CASE(types),
    CHECK_CASE(hub_options),
    CHECK_CASE(web),
};

CHECK_MAIN(cases)
