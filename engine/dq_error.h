/*
 * dq_error.h: the project's one error enum.
 *
 * Every fallible function in dqd returns an int: DQ_OK (0) on success or one of the
 * negative codes below. Codes come from one X-macro table so that the enum, the names
 * and the messages cannot drift apart (libuv's UV_ERRNO_MAP is the model).
 *
 * Besides the code, the failing call leaves a detailed message ("N = 5000 out of range
 * [1, 4096]") in a per-thread buffer, read with dq_last_error(). The detail is only
 * meaningful right after a call returned a negative code.
 */
#ifndef DQ_ERROR_H
#define DQ_ERROR_H

#include <stdarg.h>

#define DQ_ERROR_MAP(X)                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ERANGE, -2, "value out of range")                                                            \
    X(ENOMEM, -3, "out of memory")                                                                 \
    X(EMISMATCH, -4, "mismatched operands")                                                        \
    X(ENOTREACHED, -5, "probability not reached by the tangible mass")                             \
    X(EPARSE, -6, "parse error")                                                                   \
    X(ENOTFOUND, -7, "not found")                                                                  \
    X(EEXIST, -8, "already exists")                                                                \
    X(EIO, -9, "input/output error")                                                               \
    X(ESTORE, -10, "store error")                                                                  \
    X(ENET, -11, "network error")                                                                  \
    X(EPROTO, -12, "protocol error")                                                               \
    X(EFULL, -13, "capacity exceeded")                                                             \
    X(ESTATE, -14, "operation not valid in the current state")                                     \
    X(ECYCLE, -15, "cycle of references")                                                          \
    X(EBUSY, -16, "in use by another process")

enum dq_error {
    DQ_OK = 0,
#define DQ_ERROR_ENUM_(name, code, msg) DQ_##name = (code),
    DQ_ERROR_MAP(DQ_ERROR_ENUM_)
#undef DQ_ERROR_ENUM_
};

/* Short generic message for a code ("invalid argument"); "unknown error" otherwise. */
const char *dq_strerror(int code);

/* Symbolic name of a code ("DQ_EINVAL"); "DQ_UNKNOWN" otherwise. */
const char *dq_err_name(int code);

/* Detailed message of the last failure in this thread (never NULL; "" when none). */
const char *dq_last_error(void);

/*
 * Records a detailed message for the calling thread and returns `code`, so a failure
 * reads `return dq_fail(DQ_ERANGE, "N = %d out of range [1, %d]", n, DQ_MAX_BINS);`.
 */
int dq_fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clears the per-thread message. */
void dq_clear_error(void);

#endif /* DQ_ERROR_H */
