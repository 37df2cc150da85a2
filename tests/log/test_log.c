/*
 * test_log.c: the log's limit per call site (controller/log/log.h). Lines over
 * LOG_SITE_BURST a second are held back and counted; the summary quotes the last line
 * written, never the site's format string (issue 26: "(980 more lines like \"%s\" were not
 * logged)"). The seconds come from a hook, stderr from a temporary file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static int64_t now_s = 100;
static int64_t fake_seconds(void) {
    return now_s;
}

/* Runs body with stderr into a temporary file; returns what it wrote (malloc'd). */
static char *captured(void (*body)(void)) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    body();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    char *text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    rewind(tmp);
    if (n > 0 && fread(text, 1, (size_t)n, tmp) != (size_t)n) {
        text[0] = '\0';
    }
    fclose(tmp);
    return text;
}

static void flood(void) {
    log_set_seconds(fake_seconds);
    for (int i = 0; i < LOG_SITE_BURST + 980; i++) {
        LOG(LOG_WARN, "probe p%d: a junk line with a quote \" in it", i);
    }
    now_s++;
    log_report_suppressed();
    log_set_seconds(NULL);
}

static void test_summary(void) {
    char *text = captured(flood);
    char want[160];
    snprintf(want, sizeof want,
             "(980 more lines like \"probe p%d: a junk line with a quote \" in it\" were not "
             "logged)",
             LOG_SITE_BURST - 1);
    CHECK_MSG(strstr(text, want) != NULL, "the summary: %s", text);
    CHECK_MSG(strstr(text, "%") == NULL, "no format string in the log: %s", text);
    int lines = 0;
    for (const char *c = text; *c; c++) {
        lines += *c == '\n';
    }
    CHECK_INT(lines, LOG_SITE_BURST + 1);
    CHECK_INT((int)log_suppressed_total(), 980);
    free(text);
}

static void long_lines(void) {
    log_set_seconds(fake_seconds);
    char name[300];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memcpy(name + 59, "\xc3\xa9\xc3\xa9\xc3\xa9", 6); /* é across the summary's cut */
    for (int i = 0; i < LOG_SITE_BURST + 1; i++) {
        LOG(LOG_WARN, "%s", name);
    }
    now_s++;
    log_report_suppressed();
    log_set_seconds(NULL);
}

static void test_long_line(void) {
    char *text = captured(long_lines);
    const char *sum = strstr(text, "(1 more lines like \"");
    CHECK_MSG(sum != NULL, "%s", text);
    if (sum) {
        const char *q = sum + strlen("(1 more lines like \"");
        const char *end = strstr(q, "...\" were not logged)");
        CHECK_MSG(end != NULL && end - q <= 60, "cut with ...: %s", sum);
        /* cut at a character's end: no lone lead byte before the "..." */
        CHECK(end && (unsigned char)end[-1] != 0xc3);
    }
    free(text);
}

static const struct check_case cases[] = {CHECK_CASE(summary), CHECK_CASE(long_line)};

CHECK_MAIN(cases)
