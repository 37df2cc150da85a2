/*
 * web.h: the dashboard's files (controller/web/: index.html, app.js, style.css, the icon,
 * and uPlot's dist files from npm), embedded into dqd at build time by embed.cmake. dqd
 * reads nothing from disk to serve them and the page loads nothing from anywhere else.
 *
 * Pure data and a lookup: the API serves them (GET /, /assets/…).
 */
#ifndef DQ_WEB_H
#define DQ_WEB_H

#include <stddef.h>

/* One embedded file. */
struct web_asset {
    const char *path;          /* its URL path: "/", "/assets/app.js" */
    const char *content_type;  /* "text/html; charset=utf-8" */
    const char *etag;          /* "\"0123456789abcdef\"": the start of its SHA-256, quoted */
    const unsigned char *data; /* its bytes (followed by one NUL, not counted) */
    size_t len;                /* bytes */
};

/* The asset served at path (exact match), or NULL. */
const struct web_asset *web_find(const char *path);

/* Every asset, for the tests: *n is set to how many. */
const struct web_asset *web_all(size_t *n);

#endif /* DQ_WEB_H */
