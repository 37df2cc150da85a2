/*
 * web.c: the lookup of the embedded dashboard files (see web.h). The table itself is
 * generated at build time (web_assets.c, from embed.cmake).
 */
#include "web.h"

#include <string.h>

/* In the generated web_assets.c. */
extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

const struct web_asset *web_find(const char *path) {
    for (size_t i = 0; i < web_assets_count; i++) {
        if (strcmp(web_assets[i].path, path) == 0) {
            return &web_assets[i];
        }
    }
    return NULL;
}

const struct web_asset *web_all(size_t *n) {
    *n = web_assets_count;
    return web_assets;
}
