/*
 * search_internal.h: functions shared between the files of search/ (not part of the
 * public API; nothing outside search/ includes it).
 */
#ifndef DQ_SEARCH_INTERNAL_H
#define DQ_SEARCH_INTERNAL_H

#include <stddef.h>

#include "dq_search.h"

/* 1 when a child's statistics meet the sample minimums of p. */
int search__enough(const struct search_stats *s, const struct search_params *p);

/* Writes child i's display name ("worker_2", or "child 3" when unnamed) into buf. */
void search__child_name(const struct search_input *in, size_t i, char *buf, size_t cap);

/*
 * Writes the "need samples" (or, when the caller is exhausted, "inconclusive") result
 * for X into *out, naming the first child in [0, n) that fails search__enough among
 * those with include[i] (NULL = all). Returns 1 when some child lacks samples, else 0
 * (and leaves *out alone).
 */
int search__check_samples(const struct search_input *in, const struct search_params *p,
                          const unsigned char *include, struct search_result *out);

/*
 * Attributes over the included children, then applies the coupling, dominance and
 * diffuse-after-windows rules: the verdict and its reason go to *out. The sample
 * minimums must have been checked by the caller.
 */
int search__decide(const struct search_input *in, const struct search_params *p,
                   const unsigned char *include, struct search_result *out);

/* Appends printf-style text to buf (cap bytes, NUL-terminated), truncating safely. */
void search__append(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*
 * The unit (ns, µs, ms or s, as dq_duration_unit chooses it) for times of about `scale`
 * seconds, and the factor from seconds to it: the caller picks one scale per sentence so
 * the numbers compare at a glance.
 */
const char *search__time_unit(double scale, double *factor);

/*
 * "12.3 ms ± 0.8 ms" (sq "²" for a variance: "4.1 ms² ± 0.62 ms²"): v and hw in seconds
 * (s² with sq) times factor, in the sentence's unit, each number with its unit, never an
 * exponent (dq_format_number: three significant digits for v, two for hw). A NaN hw
 * writes v alone.
 */
void search__fmt_pm(double v, double hw, double factor, const char *unit, const char *sq, char *buf,
                    size_t cap);

/* A time in seconds as every sentence writes it, "12.3 ms" (dq_format_duration). */
const char *search__dur(double s, char *buf, size_t cap);

#endif /* DQ_SEARCH_INTERNAL_H */
