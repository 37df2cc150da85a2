/*
 * check.h: the assertions every C test executable uses, and its runner of named cases.
 *
 * A failed check prints file:line and the expression and counts as a failure; the test
 * goes on so one run shows every broken law. check_done() prints the closing line
 * "N passed, N failed" and returns the exit status for main().
 *
 * Cases. A test file names its cases in a table and lets the runner have main():
 *
 *     static void test_lookup(void) { CHECK(...); }
 *     static void test_windows(void) { ... }
 *     static const struct check_case cases[] = {CHECK_CASE(lookup), CHECK_CASE(windows)};
 *     CHECK_MAIN(cases)
 *
 * CHECK_CASE(x) is the case named "x" that runs test_x(). The executable then takes:
 *     test_x --list       the case names, one per line, in order
 *     test_x              every case, in order
 *     test_x NAME...      the cases named; NAME* every case whose name starts with NAME
 *     test_x --help       this usage
 * Each case prints "ok NAME (N checks)" or "FAIL NAME (F of N checks failed)"; a case
 * that makes no check fails (it tested nothing), and so does a run that selects no case
 * (a NAME that matches none is a usage error, exit 2). The closing line is check_done()'s.
 * tests/CMakeLists.txt (dq_add_cases) registers every case as a CTest test of its own,
 * named BINARY_TEST/CASE, from --list, so `ctest -R 'probes/lookup'` runs one case.
 * Cases run in one process one after the other, so each must set up what it needs
 * (files, servers, globals) rather than rely on an earlier case; what every case needs
 * and is costly goes in a fixture (check_main_fixture), set up once per run.
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

/* ---- cases ----------------------------------------------------------------------------- */

struct check_case {
    const char *name; /* [A-Za-z0-9_]+, unique within the file */
    void (*run)(void);
};

#define CHECK_CASE(x)                                                                              \
    { #x, test_##x }
#define CHECK_COUNT(cases) (sizeof(cases) / sizeof((cases)[0]))
#define CHECK_MAIN(cases)                                                                          \
    int main(int argc, char **argv) {                                                              \
        return check_main(argc, argv, cases, CHECK_COUNT(cases));                                  \
    }

/* Whether case `name` is selected by `pattern`: equal, or pattern ends in '*' and the rest
 * is a prefix of name. */
static inline int check_matches_(const char *pattern, const char *name) {
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*') {
        return strncmp(pattern, name, n - 1) == 0;
    }
    return strcmp(pattern, name) == 0;
}

/*
 * The runner: parses argv as the header comment says and runs the selected cases, in the
 * order of the table. setup (may be NULL) runs once before the first selected case (not
 * for --list or --help) and fails the run when it returns nonzero; teardown (may be NULL)
 * runs after the last. Returns main()'s exit status: 0 when every selected case passed,
 * 1 when one failed, 2 on a usage error or a failed setup.
 */
static inline int check_main_fixture(int argc, char **argv, const struct check_case *cases,
                                     size_t n, int (*setup)(void), void (*teardown)(void)) {
    const char *prog = argc > 0 ? argv[0] : "test";
    int any_pattern = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t c = 0; c < n; c++) {
                printf("%s\n", cases[c].name);
            }
            return 0;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--list] [NAME | PREFIX* ...]\n"
                   "Runs the named cases (every case without NAME); --list names them.\n",
                   prog);
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "%s: unknown option %s (see --help)\n", prog, argv[i]);
            return 2;
        }
        int hit = 0;
        for (size_t c = 0; c < n && !hit; c++) {
            hit = check_matches_(argv[i], cases[c].name);
        }
        if (!hit) {
            fprintf(stderr, "%s: no case matches \"%s\" (see --list)\n", prog, argv[i]);
            return 2;
        }
        any_pattern = 1;
    }
    if (setup && setup() != 0) {
        fprintf(stderr, "%s: the fixture's setup failed\n", prog);
        return 2;
    }
    int bad_cases = 0, ran = 0;
    for (size_t c = 0; c < n; c++) {
        int selected = !any_pattern;
        for (int i = 1; i < argc && !selected; i++) {
            selected = check_matches_(argv[i], cases[c].name);
        }
        if (!selected) {
            continue;
        }
        int passed0 = check_passed_, failed0 = check_failed_;
        cases[c].run();
        int passed = check_passed_ - passed0, failed = check_failed_ - failed0;
        ran++;
        if (failed > 0) {
            printf("FAIL %s (%d of %d checks failed)\n", cases[c].name, failed, passed + failed);
            bad_cases++;
        } else if (passed == 0) {
            printf("FAIL %s (it made no check)\n", cases[c].name);
            bad_cases++;
        } else {
            printf("ok %s (%d checks)\n", cases[c].name, passed);
        }
        fflush(stdout);
    }
    if (teardown) {
        teardown();
    }
    int rc = check_done();
    return ran == 0 || bad_cases > 0 ? 1 : rc;
}

static inline int check_main(int argc, char **argv, const struct check_case *cases, size_t n) {
    return check_main_fixture(argc, argv, cases, n, NULL, NULL);
}

#endif /* DQ_CHECK_H */
