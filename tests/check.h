/*
 * check.h: the assertions every C test executable uses.
 *
 * A failed check prints file:line and the expression and counts as a failure; the test
 * goes on so one run shows every broken law. check_done() prints the closing line
 * "N passed, N failed" and returns the exit status for main().
 */
#ifndef DQ_CHECK_H
#define DQ_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed_;
static int check_failed_;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* |a − b| ≤ tol, printing both values when it fails. */
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double check_a_ = (a), check_b_ = (b), check_t_ = (tol);                                   \
        if (fabs(check_a_ - check_b_) <= check_t_) {                                               \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.12g, %s = %.12g, tol %.3g\n",        \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_, check_t_);                     \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ == check_b_) {                                                                \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK_INT failed: %s = %lld, %s = %lld\n", __FILE__, __LINE__, \
                    #a, check_a_, #b, check_b_);                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) {                             \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s = \"%s\", %s = \"%s\"\n", __FILE__,       \
                    __LINE__, #a, check_a_ ? check_a_ : "(null)", #b,                              \
                    check_b_ ? check_b_ : "(null)");                                               \
        }                                                                                          \
    } while (0)

static inline int check_done(void) {
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    return check_failed_ == 0 && check_passed_ > 0 ? 0 : 1;
}

#endif /* DQ_CHECK_H */
