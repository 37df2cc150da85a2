/*
 * log.c: stderr log lines with an ISO-8601 UTC timestamp and a per-site rate limiter.
 */
#include "log.h"

#include <stdarg.h>
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

void log_write(int level, const char *fmt, ...) {
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = level >= 0 && level < 4 ? level_names[level] : "?";
    fprintf(stderr, "%s.%03ldZ %-5s %s\n", stamp, ts.tv_nsec / 1000000, name, msg);
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
