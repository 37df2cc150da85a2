/*
 * log.c: stderr log lines with an ISO-8601 UTC timestamp, at most LOG_SITE_BURST a second per
 * call site, and a rate limiter for callers that want their own.
 */
#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int log_current_level = LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *s) {
    for (int i = 0; i < 4; i++) {
        if (s && strcmp(s, level_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* ---- repeated lines ---------------------------------------------------------------------
 *
 * Any line bad input can provoke (a hello, a state line, a store error) could flood the log
 * at line rate. Every call site (its format string) may write LOG_SITE_BURST lines per
 * second; the rest are counted, and the next line of that site, or log_report_suppressed(),
 * says how many were held back. Errors are limited too: a full disk errs at every write. */

#define LOG_SITES 256 /* call sites tracked; more share the last slots' counts */

struct log_site {
    const char *fmt; /* the call site's format (its identity) */
    int64_t second;  /* the second being counted (monotonic) */
    int passed;      /* lines written in that second */
    uint64_t held;   /* lines held back, not yet reported */
    char last[64];   /* the start of its last line written: what the held ones were like */
};

static struct log_site sites[LOG_SITES];
static uint64_t suppressed_total;

uint64_t log_suppressed_total(void) {
    return suppressed_total;
}

static int64_t mono_second(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

static int64_t (*seconds_of)(void) = mono_second;

void log_set_seconds(int64_t (*seconds)(void)) {
    seconds_of = seconds ? seconds : mono_second;
}

static struct log_site *site_of(const char *fmt) {
    size_t h = ((uintptr_t)fmt >> 3) % LOG_SITES;
    for (size_t k = 0; k < LOG_SITES; k++) {
        struct log_site *s = &sites[(h + k) % LOG_SITES];
        if (s->fmt == fmt || s->fmt == NULL) {
            s->fmt = fmt;
            return s;
        }
    }
    return &sites[h]; /* every slot taken: share this one's count */
}

static void emit(int level, const char *msg) {
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    const char *name = level >= 0 && level < 4 ? level_names[level] : "?";
    fprintf(stderr, "%s.%03ldZ %-5s %s\n", stamp, ts.tv_nsec / 1000000, name, msg);
}

static void report_held(int level, struct log_site *s) {
    char note[160];
    snprintf(note, sizeof note, "(%llu more lines like \"%s\" were not logged)",
             (unsigned long long)s->held, s->last);
    s->held = 0;
    emit(level, note);
}

void log_write(int level, const char *fmt, ...) {
    struct log_site *s = site_of(fmt);
    int64_t sec = seconds_of();
    if (sec != s->second) {
        s->second = sec;
        s->passed = 0;
        if (s->held) {
            report_held(level, s);
        }
    }
    if (s->passed >= LOG_SITE_BURST) {
        s->held++;
        suppressed_total++;
        return;
    }
    s->passed++;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the held lines' summary quotes this one (cut: "…" at a character's end) */
    size_t len = n > 0 ? strlen(msg) : 0;
    size_t cut = len < sizeof s->last ? len : sizeof s->last - 4;
    while (cut < len && cut > 0 && ((unsigned char)msg[cut] & 0xc0) == 0x80) {
        cut--;
    }
    memcpy(s->last, msg, cut);
    strcpy(s->last + cut, cut < len ? "..." : "");
    emit(level, msg);
}

void log_report_suppressed(void) {
    int64_t sec = seconds_of();
    for (size_t i = 0; i < LOG_SITES; i++) {
        if (sites[i].fmt && sites[i].held && sites[i].second != sec) {
            report_held(LOG_WARN, &sites[i]);
        }
    }
}

int log_limit_allow(struct log_limit *l, int64_t now_ms, int burst, uint64_t *suppressed) {
    int64_t sec = now_ms / 1000;
    *suppressed = 0;
    if (sec != l->second) {
        *suppressed = l->suppressed;
        l->suppressed = 0;
        l->second = sec;
        l->passed = 0;
    }
    if (l->passed < burst) {
        l->passed++;
        return 1;
    }
    l->suppressed++;
    return 0;
}
