/*
 * dqctl_set_err.h: the one way dqctl's parts report an error as a message into a caller's
 * buffer (err, cap): formats it (when cap > 0) and returns -1, so a failing check reads
 * `return dqctl_set_err(err, cap, "…", …);`. Header-only: the parts compiled on their own
 * (dqctl_dist.c in its tests and fuzzer) need no other file for it.
 */
#ifndef DQCTL_SET_ERR_H
#define DQCTL_SET_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int dqctl_set_err(char *err, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int dqctl_set_err(char *err, size_t cap, const char *fmt, ...) {
    if (cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#endif
