/*
 * dqctl_safe.h: nothing dqctl prints can drive the terminal it prints to.
 *
 * Text dqctl shows comes from dqd, and dqd's text partly from whoever reached its API or
 * its ingest port (a requested_by, a diagram's comments, an error that quotes a name). A
 * byte that a terminal acts on (ESC and the other C0 controls but TAB and LF, and the C1
 * controls U+0080 … U+009F, which some terminals take as CSI) would let that text paint
 * a fake verdict, so dqctl writes it escaped: C0 and bytes that are not UTF-8 as `\xNN`,
 * C1 as `\u0080` … `\u009f` (inside --json strings a valid JSON escape). Both stdout and
 * stderr go through the escaper (dqctl_safe_stdio).
 */
#ifndef DQCTL_SAFE_H
#define DQCTL_SAFE_H

#include <stddef.h>

/* An escaper's state between calls: a UTF-8 sequence cut by the end of a chunk. */
struct dqctl_esc {
    unsigned char pend[4];
    size_t npend; /* bytes of an incomplete sequence kept */
    size_t need;  /* its full length */
};

/* Bytes dqctl_escape may write for n bytes of input (plus what the state holds). */
#define DQCTL_ESC_MAX_OUT(n) (6 * ((n) + 4))

/*
 * Escapes in[0, n) into out (at least DQCTL_ESC_MAX_OUT(n) bytes), keeping an incomplete
 * UTF-8 sequence at the end in st for the next call. Returns the bytes written. flush = 1
 * writes a kept incomplete sequence as \xNN (the end of the output).
 */
size_t dqctl_escape_stream(struct dqctl_esc *st, const char *in, size_t n, char *out, int flush);

/* Makes stdout and stderr escape what is written to them (Linux: fopencookie). Returns 0,
 * or −1 when the streams could not be replaced (they are left as they were). */
int dqctl_safe_stdio(void);

#endif /* DQCTL_SAFE_H */
