/*
 * dq_error.c: messages for the project's error codes and the per-thread detail buffer.
 */
#include "dq_error.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];

const char *dq_strerror(int code) {
    switch (code) {
    case DQ_OK:
        return "success";
#define DQ_ERROR_MSG_(name, value, msg)                                                            \
    case DQ_##name:                                                                                \
        return msg;
        DQ_ERROR_MAP(DQ_ERROR_MSG_)
#undef DQ_ERROR_MSG_
    default:
        return "unknown error";
    }
}

const char *dq_err_name(int code) {
    switch (code) {
    case DQ_OK:
        return "DQ_OK";
#define DQ_ERROR_NAME_(name, value, msg)                                                           \
    case DQ_##name:                                                                                \
        return "DQ_" #name;
        DQ_ERROR_MAP(DQ_ERROR_NAME_)
#undef DQ_ERROR_NAME_
    default:
        return "DQ_UNKNOWN";
    }
}

const char *dq_last_error(void) {
    return last_error;
}

int dq_fail(int code, const char *fmt, ...) {
    /* Format into a scratch buffer first: callers may pass dq_last_error() itself as an
     * argument to add context ("operand 1: %s"). */
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof last_error);
    return code;
}

void dq_clear_error(void) {
    last_error[0] = '\0';
}
