/*
 * dqctl_diagram.c: `dqctl diagram` (declared in dqctl_api.h): shows the outcome diagram
 * dqd has loaded, loads a .dq file into it (a model error named FILE:LINE:COL as a
 * compiler would), or with --infer writes a diagram inferred from the OTLP span trees
 * dqd keeps (dqctl_infer.c).
 */
#include "dqctl_api.h"
#include "dqctl_infer.h"
#include "dqctl_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dq_strbuf.h"
#include "dqctl.h"

/* Reads a whole file (or stdin for "-") into a new buffer, at most 64 MiB. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
        if (n == cap) {
            char *more = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    if (f != stdin) {
        fclose(f);
    }
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* The warnings of a diagram dqd loaded, as a compiler's and dqctl model's:
 * FILE:LINE:COL: warning: message (LINE:COL: … when file is NULL). */
static void print_warnings(FILE *out, const json_t *d, const char *file) {
    const json_t *w = json_object_get(d, "warnings");
    for (size_t i = 0; i < json_array_size(w); i++) {
        const json_t *x = json_array_get(w, i);
        fprintf(out, "%s%s%lld:%lld: warning: %s\n", file ? file : "", file ? ":" : "",
                (long long)json_integer_value(json_object_get(x, "line")),
                (long long)json_integer_value(json_object_get(x, "column")),
                jstr(x, "message", "?"));
    }
    json_int_t total = json_integer_value(json_object_get(d, "warnings_total"));
    if (total > (json_int_t)json_array_size(w)) {
        long long more = (long long)(total - (json_int_t)json_array_size(w));
        fprintf(out, "%s%s%lld more warning%s\n", file ? file : "", file ? ": " : "", more,
                more == 1 ? "" : "s");
    }
}

/* The diagram as GET /api/v1/diagram gives it; with its warnings unless they went to stderr. */
static void render_diagram(FILE *out, const json_t *d, int warnings) {
    const json_t *text = json_object_get(d, "text");
    if (!json_is_string(text)) {
        fprintf(out, "no diagram loaded (dqd --diagram FILE.dq, or dqctl diagram FILE.dq)\n");
        return;
    }
    char roots[2048], probes[8192];
    struct dq_strbuf rb, pb;
    dq_strbuf_init(&rb, roots, sizeof roots);
    dq_strbuf_init(&pb, probes, sizeof probes);
    const json_t *r = json_object_get(d, "roots"), *p = json_object_get(d, "probes");
    for (size_t i = 0; i < json_array_size(r); i++) {
        dq_strbuf_printf(&rb, "%s%s", i ? ", " : "", json_string_value(json_array_get(r, i)));
    }
    for (size_t i = 0; i < json_array_size(p); i++) {
        dq_strbuf_printf(&pb, "%s%s", i ? ", " : "", json_string_value(json_array_get(p, i)));
    }
    fprintf(out, "diagram %s: %zu probe%s, root%s %s\nprobes: %s\n",
            jstr(d, "path", "(sent through the API)"), json_array_size(p),
            json_array_size(p) == 1 ? "" : "s", json_array_size(r) == 1 ? "" : "s", roots, probes);
    if (warnings) {
        print_warnings(out, d, NULL);
    }
    fprintf(out, "\n%s", json_string_value(text));
    size_t tl = strlen(json_string_value(text));
    if (tl == 0 || json_string_value(text)[tl - 1] != '\n') {
        fputc('\n', out);
    }
}

/* dqctl diagram --infer: the spans from dqd, the diagram on stdout. */
static int infer_diagram(const struct dqctl_opts *o) {
    if (!o->infer || o->npos > 0) {
        dqctl_complain_typed("usage", "diagram: --service goes with --infer, and --infer takes "
                                      "no FILE (redirect its output: > FILE.dq)");
        return DQCTL_EXIT_USAGE;
    }
    char path[600] = "/api/v1/otlp/spans";
    if (o->service) {
        char esc[512];
        if (dqctl_url_escape(o->service, esc, sizeof esc) != 0) {
            dqctl_complain_typed("usage", "diagram: --service is too long");
            return DQCTL_EXIT_USAGE;
        }
        snprintf(path, sizeof path, "/api/v1/otlp/spans?service=%s", esc);
    }
    json_t *spans = NULL;
    int rc = dqctl_api_call(o, "GET", path, NULL, &spans);
    if (rc != DQCTL_EXIT_OK) {
        return rc;
    }
    char err[512];
    char *text = dqctl_infer(spans, o->service, err, sizeof err);
    json_decref(spans);
    if (!text) {
        dqctl_complain_typed("problem", "diagram --infer: %s", err);
        return DQCTL_EXIT_PROBLEM;
    }
    if (o->json) {
        json_t *j = json_pack("{s:s}", "text", text);
        dqctl_print_json(j);
        json_decref(j);
    } else {
        fputs(text, dqctl_out());
    }
    free(text);
    return DQCTL_EXIT_OK;
}

int dqctl_diagram_main(int argc, char **argv) {
    static const char help[] =
        "usage: dqctl diagram [FILE.dq | -] [--server URL] [--json]\n"
        "       dqctl diagram --infer [--service S] [--server URL] > FILE.dq\n"
        "Without FILE: the outcome diagram dqd has loaded (its path, roots, probes and\n"
        "text; GET /api/v1/diagram). With FILE (- reads stdin): loads it into dqd\n"
        "(PUT /api/v1/diagram), replacing the diagram; a model error is printed as\n"
        "FILE:LINE:COL: message and nothing changes; what the model accepts but is\n"
        "worth a look is printed on stderr as FILE:LINE:COL: warning: message.\n"
        "--infer writes a .dq diagram inferred from the parent/child span trees dqd keeps\n"
        "from OTLP (GET /api/v1/otlp/spans; of service S only with --service): children\n"
        "one after another are a sequence, overlapping children an all-to-finish when the\n"
        "parent waits for the last, a first-to-finish when it goes on after the first,\n"
        "different sets of children a choice with the observed weights; what the spans\n"
        "cannot settle is a # comment. Edit it, then load it with `dqctl diagram FILE.dq`.\n";
    struct dqctl_opts o;
    int rc = dqctl_start_cmd(argc, argv, DQCTL_OPT_INFER, 0, 1, help, &o);
    if (rc >= 0) {
        return rc;
    }
    json_t *data = NULL;
    /* the file as a compiler names it */
    const char *name = o.npos == 1 && strcmp(o.pos[0], "-") == 0 ? "<stdin>" : o.pos[0];
    if (o.infer || o.service) {
        return dqctl_end_cmd(infer_diagram(&o));
    }
    if (o.npos == 0) {
        rc = dqctl_api_call(&o, "GET", "/api/v1/diagram", NULL, &data);
    } else {
        size_t len = 0;
        char *text = read_all(o.pos[0], &len);
        if (!text) {
            dqctl_complain_typed("usage", "diagram: cannot read %s: %s", o.pos[0], strerror(errno));
            return dqctl_end_cmd(DQCTL_EXIT_USAGE);
        }
        char err[4096], type[64] = "error";
        rc = dqctl_api_call_text(&o, "PUT", "/api/v1/diagram", text, len, &data, err, sizeof err,
                                 type, sizeof type);
        free(text);
        if (rc != DQCTL_EXIT_OK) {
            /* a model error is "LINE:COL: message": name the file as a compiler would */
            int line = 0, col = 0;
            if (strcmp(type, "unprocessable") == 0 && sscanf(err, "%d:%d:", &line, &col) == 2) {
                dqctl_complain_typed(type, "%s:%s", name, err);
                rc = DQCTL_EXIT_USAGE; /* the file is at fault, as a compiler's input */
            } else {
                dqctl_complain_typed(type, "%s", err);
            }
        }
    }
    if (rc == DQCTL_EXIT_OK) {
        if (o.json) {
            dqctl_print_json(data); /* the warnings are in it */
        } else {
            if (o.npos == 1) {
                print_warnings(dqctl_err(), data, name);
                fprintf(dqctl_out(), "loaded %s into dqd\n", name);
            }
            render_diagram(dqctl_out(), data, o.npos == 0);
        }
    }
    json_decref(data);
    return dqctl_end_cmd(rc);
}
