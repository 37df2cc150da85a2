/*
 * dq_strbuf.h: a bounded string builder over a buffer the caller owns.
 *
 * Text is appended printf-style. What does not fit is cut at the buffer's end; the buffer
 * always holds a NUL-terminated string (when it has at least one byte), and the builder
 * remembers that it cut. It never allocates, so it serves in loops that must not (a
 * buffer on the stack or in a struct). Cutting is by bytes: a multi-byte UTF-8 character
 * at the end may be cut in two, as with snprintf.
 *
 *     char line[256];
 *     struct dq_strbuf b;
 *     dq_strbuf_init(&b, line, sizeof line);
 *     for (size_t i = 0; i < n; i++)
 *         dq_strbuf_printf(&b, "%s%s", b.len ? ", " : "", names[i]);
 *     if (b.cut) ... line holds the first 255 bytes of the list
 */
#ifndef DQ_STRBUF_H
#define DQ_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct dq_strbuf {
    char *buf;  /* the caller's buffer */
    size_t cap; /* its size in bytes (0: nothing can be written, not even the NUL) */
    size_t len; /* the text's length, strlen(buf); at most cap − 1 */
    int cut;    /* 1 once some text did not fit (or could not be formatted) */
};

/* Starts an empty text in buf (cap bytes): buf[0] = '\0' when cap > 0. */
void dq_strbuf_init(struct dq_strbuf *b, char *buf, size_t cap);

/* Goes on after the text already in buf (its first NUL within cap bytes; with none, the
 * text is cut to cap − 1 bytes and b->cut is set). */
void dq_strbuf_resume(struct dq_strbuf *b, char *buf, size_t cap);

/* Appends printf-style text, cut at the buffer's end. After a cut, later appends add
 * nothing (the buffer is full). */
void dq_strbuf_printf(struct dq_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The same with a va_list (for a caller's own printf-style function). */
void dq_strbuf_vprintf(struct dq_strbuf *b, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;

#endif /* DQ_STRBUF_H */
