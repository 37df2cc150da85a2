/*
 * dq_strbuf.c: the bounded string builder of dq_strbuf.h.
 */
#include "dq_strbuf.h"

#include <stdio.h>
#include <string.h>

void dq_strbuf_init(struct dq_strbuf *b, char *buf, size_t cap) {
    b->buf = buf;
    b->cap = cap;
    b->len = 0;
    b->cut = 0;
    if (cap > 0) {
        buf[0] = '\0';
    }
}

void dq_strbuf_resume(struct dq_strbuf *b, char *buf, size_t cap) {
    b->buf = buf;
    b->cap = cap;
    b->len = cap > 0 ? strnlen(buf, cap) : 0;
    b->cut = 0;
    if (cap > 0 && b->len == cap) {
        b->len = cap - 1;
        buf[b->len] = '\0';
        b->cut = 1;
    }
}

void dq_strbuf_vprintf(struct dq_strbuf *b, const char *fmt, va_list ap) {
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    if (n < 0) {
        if (room) {
            b->buf[b->len] = '\0'; /* whatever the failed call wrote is not text */
        }
        b->cut = 1;
    } else if ((size_t)n < room) {
        b->len += (size_t)n;
    } else if (n > 0) {
        b->len = room ? b->cap - 1 : b->len;
        b->cut = 1;
    }
}

void dq_strbuf_printf(struct dq_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dq_strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}
