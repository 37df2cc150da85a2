/*
 * log.h: dqd's log lines on stderr, with the level tested before any formatting (redis
 * style) and a rate limiter for messages that bad input can provoke at line rate.
 */
#ifndef DQ_LOG_H
#define DQ_LOG_H

#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

extern int log_current_level;

/* Parses "error", "warn", "info", "debug"; −1 when unknown. */
int log_level_parse(const char *s);

#define LOG_SITE_BURST 20 /* lines per second one call site (format string) may write */

/* Writes one line "TIME LEVEL message" to stderr. Use the LOG macro. Each call site (its
 * format string) writes at most LOG_SITE_BURST lines a second; the rest are counted
 * (log_suppressed_total) and reported by the site's next line or log_report_suppressed. */
void log_write(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Lines not written because their call site was over its rate, since start. */
uint64_t log_suppressed_total(void);

/* Writes, for every call site that held lines back in an earlier second, how many, quoting
 * the site's last line written ("(980 more lines like \"probe x: …\" were not logged)"). */
void log_report_suppressed(void);

/* For tests: where the per-site limit reads its seconds (NULL: the monotonic clock). */
void log_set_seconds(int64_t (*seconds)(void));

#define LOG(level, ...)                                                                            \
    do {                                                                                           \
        if ((level) <= log_current_level) {                                                        \
            log_write((level), __VA_ARGS__);                                                       \
        }                                                                                          \
    } while (0)

/* At most `burst` messages per second pass; the rest are counted and reported later. */
struct log_limit {
    int64_t second;      /* the second being counted */
    int passed;          /* messages let through in that second */
    uint64_t suppressed; /* messages held back since the last report */
};

/* 1 when a message may be logged now (now_ms: a monotonic clock in ms). When messages
 * were suppressed in an earlier second, *suppressed receives their number (else 0). */
int log_limit_allow(struct log_limit *l, int64_t now_ms, int burst, uint64_t *suppressed);

#endif /* DQ_LOG_H */
