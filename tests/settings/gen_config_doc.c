/*
 * gen_config_doc.c: prints the configuration reference generated from the settings
 * table (settings_render_markdown), or with `--check FILE` compares FILE to it.
 *
 *   build/tests/settings/gen_config_doc > docs/configuration.md   (regenerate)
 *   build/tests/settings/gen_config_doc --check docs/configuration.md   (CTest)
 */
#include "settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc == 1) {
        settings_render_markdown(stdout);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "--check") != 0) {
        fprintf(stderr, "usage: gen_config_doc [--check FILE]\n");
        return 2;
    }
    char *want = NULL, *have = NULL;
    size_t want_len = 0, have_len = 0;
    FILE *m = open_memstream(&want, &want_len);
    if (!m) {
        fprintf(stderr, "gen_config_doc: out of memory\n");
        return 2;
    }
    settings_render_markdown(m);
    fclose(m);

    FILE *f = fopen(argv[2], "rb");
    int status = 1;
    if (!f) {
        fprintf(stderr, "gen_config_doc: cannot open %s\n", argv[2]);
        free(want);
        return 1;
    }
    have = malloc(want_len + 2);
    if (have) {
        have_len = fread(have, 1, want_len + 1, f);
        if (have_len == want_len && memcmp(have, want, want_len) == 0) {
            status = 0;
        }
    }
    fclose(f);
    if (status != 0) {
        size_t i = 0;
        while (have && i < have_len && i < want_len && have[i] == want[i]) {
            i++;
        }
        int line = 1;
        for (size_t j = 0; j < i; j++) {
            line += want[j] == '\n';
        }
        fprintf(stderr,
                "%s differs from the settings table (first difference on line %d).\n"
                "Regenerate it: build/tests/settings/gen_config_doc > %s\n",
                argv[2], line, argv[2]);
    }
    free(have);
    free(want);
    return status;
}
