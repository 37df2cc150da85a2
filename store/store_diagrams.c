/*
 * store_diagrams.c: the diagrams table (version 5), the outcome diagrams dqd loaded, so
 * that a diagram sent through the API is there again after a restart. Written when a
 * diagram is loaded (rare: at start, on PUT /api/v1/diagram), read once at start.
 */
#include "store.h"
#include "store_internal.h"

#include <string.h>

static int latest_id_row(sqlite3_stmt *s, void *arg) {
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 1;
}

int store_diagram_put(struct store *st, const char *text, const char *path, int64_t *id) {
    if (!text) {
        return dq_fail(DQ_EINVAL, "store_diagram_put: NULL text");
    }
    if (path && !path[0]) {
        path = NULL;
    }
    /* a new row unless the latest one holds the same text from the same place */
    int rc = store__write(st, STORE__DIAGRAM_PUT,
                          "INSERT INTO diagrams (text, path, loaded_ns) SELECT ?1, ?2, ?3"
                          " WHERE NOT EXISTS (SELECT 1 FROM diagrams WHERE id ="
                          " (SELECT max(id) FROM diagrams) AND text = ?1 AND path IS ?2)",
                          "recording the diagram", false, "ttl", text, path, store__now(st));
    if (rc || !id) {
        return rc;
    }
    *id = 0;
    return store__query(st, STORE__DIAGRAM_LATEST_ID, "SELECT max(id) FROM diagrams", latest_id_row,
                        id, "reading the diagram's id", NULL, "");
}

static int diagram_row(sqlite3_stmt *s, void *arg) {
    struct store__iter *it = arg;
    struct store_diagram d = {.id = sqlite3_column_int64(s, 0),
                              .loaded_ns = sqlite3_column_int64(s, 3)};
    d.text = store__column_text(s, 1); /* the text first, then its length (SQLite's rule) */
    d.len = (size_t)sqlite3_column_bytes(s, 1);
    d.path = store__column_text(s, 2);
    if (!d.text) {
        d.text = "";
        d.len = 0;
    }
    return it->cb.diagram(it->ctx, &d);
}

int store_diagram_latest(struct store *st, store_diagram_cb cb, void *ctx) {
    if (!cb) {
        return dq_fail(DQ_EINVAL, "store_diagram_latest: NULL callback");
    }
    struct store__iter it = {.ctx = ctx, .cb.diagram = cb};
    return store__query(st, STORE__DIAGRAM_LATEST,
                        "SELECT id, text, path, loaded_ns FROM diagrams ORDER BY id DESC LIMIT 1",
                        diagram_row, &it, "reading the diagram", "no diagram recorded", "");
}
