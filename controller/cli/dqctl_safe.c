/*
 * dqctl_safe.c: the escaper of everything dqctl prints (see dqctl_safe.h).
 */
#define _GNU_SOURCE
#include "dqctl_safe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t put_hex(char *out, unsigned char c) {
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 15];
    return 4;
}

/* Length of the UTF-8 sequence a lead byte starts, 0 when it cannot start one. */
static size_t seq_len(unsigned char c) {
    return c >= 0xc2 && c <= 0xdf ? 2 : (c & 0xf0) == 0xe0 ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* Whether a complete sequence s[0, n) is valid UTF-8 (no overlong form, no surrogate). */
static int seq_valid(const unsigned char *s, size_t n) {
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
    }
    if (n == 3) {
        unsigned cp = ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
        return cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
    }
    if (n == 4) {
        unsigned cp = ((s[0] & 0x07u) << 18) | ((s[1] & 0x3fu) << 12) | ((s[2] & 0x3fu) << 6) |
                      (s[3] & 0x3fu);
        return cp >= 0x10000 && cp <= 0x10ffff;
    }
    return 1;
}

/* Writes one complete sequence (valid or not) escaped as needed. */
static size_t put_seq(char *out, const unsigned char *s, size_t n) {
    size_t o = 0;
    if (!seq_valid(s, n)) {
        /* the lead byte is not UTF-8 here; the rest is looked at again by the caller */
        return put_hex(out, s[0]);
    }
    if (n == 2 && s[0] == 0xc2 && s[1] <= 0x9f) { /* C1 control */
        static const char hex[] = "0123456789abcdef";
        memcpy(out, "\\u00", 4);
        out[4] = hex[s[1] >> 4];
        out[5] = hex[s[1] & 15];
        return 6;
    }
    memcpy(out + o, s, n);
    return n;
}

size_t dqctl_escape_stream(struct dqctl_esc *st, const char *in, size_t n, char *out, int flush) {
    size_t o = 0;
    size_t i = 0;
    /* a sequence cut by the previous chunk: complete it from this one */
    while (st->npend > 0 && i < n) {
        unsigned char c = (unsigned char)in[i];
        if ((c & 0xc0) != 0x80) {
            o += put_hex(out + o, st->pend[0]); /* cut short: the lead byte alone */
            memmove(st->pend, st->pend + 1, --st->npend);
            /* the kept continuation bytes (if any) are not UTF-8 on their own */
            for (size_t k = 0; k < st->npend; k++) {
                o += put_hex(out + o, st->pend[k]);
            }
            st->npend = 0;
            break;
        }
        st->pend[st->npend++] = c;
        i++;
        if (st->npend == st->need) {
            if (seq_valid(st->pend, st->need)) {
                o += put_seq(out + o, st->pend, st->need);
            } else {
                for (size_t k = 0; k < st->need; k++) {
                    o += put_hex(out + o, st->pend[k]);
                }
            }
            st->npend = 0;
        }
    }
    while (i < n) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
                o += put_hex(out + o, c);
            } else {
                out[o++] = (char)c;
            }
            i++;
            continue;
        }
        size_t len = seq_len(c);
        if (len == 0) {
            o += put_hex(out + o, c);
            i++;
            continue;
        }
        int tail_ok = 1; /* what the chunk holds of its tail are continuation bytes */
        for (size_t k = i + 1; k < n && k < i + len; k++) {
            tail_ok &= ((unsigned char)in[k] & 0xc0) == 0x80;
        }
        if (i + len > n && !tail_ok) {
            o += put_hex(out + o, c); /* a lead byte without its tail: not UTF-8 */
            i++;
            continue;
        }
        if (i + len > n) { /* cut by the end of the chunk: keep it */
            st->need = len;
            st->npend = n - i;
            memcpy(st->pend, in + i, st->npend);
            i = n;
            break;
        }
        const unsigned char *s = (const unsigned char *)in + i;
        if (seq_valid(s, len)) {
            o += put_seq(out + o, s, len);
            i += len;
        } else {
            o += put_hex(out + o, c);
            i++;
        }
    }
    if (flush && st->npend) {
        for (size_t k = 0; k < st->npend; k++) {
            o += put_hex(out + o, st->pend[k]);
        }
        st->npend = 0;
    }
    return o;
}

/* ---- stdio ------------------------------------------------------------------------------ */

struct safe_stream {
    int fd;
    struct dqctl_esc st;
};

static int write_all(int fd, const char *b, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0) {
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t safe_write(void *cookie, const char *buf, size_t size) {
    struct safe_stream *s = cookie;
    char out[DQCTL_ESC_MAX_OUT(1024)];
    size_t done = 0;
    while (done < size) {
        size_t chunk = size - done < 1024 ? size - done : 1024;
        size_t o = dqctl_escape_stream(&s->st, buf + done, chunk, out, 0);
        if (write_all(s->fd, out, o) < 0) {
            return done ? (ssize_t)done : -1;
        }
        done += chunk;
    }
    return (ssize_t)size;
}

static int safe_close(void *cookie) {
    struct safe_stream *s = cookie;
    char out[32];
    size_t o = dqctl_escape_stream(&s->st, "", 0, out, 1);
    int rc = write_all(s->fd, out, o);
    free(s);
    return rc;
}

static FILE *safe_open(int fd, int line_buffered) {
    struct safe_stream *s = calloc(1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->fd = fd;
    cookie_io_functions_t io = {.write = safe_write, .close = safe_close};
    FILE *f = fopencookie(s, "w", io);
    if (!f) {
        free(s);
        return NULL;
    }
    setvbuf(f, NULL, line_buffered ? _IOLBF : _IOFBF, 0);
    return f;
}

int dqctl_safe_stdio(void) {
    fflush(stdout);
    fflush(stderr);
    int out_fd = dup(STDOUT_FILENO), err_fd = dup(STDERR_FILENO);
    FILE *out = out_fd >= 0 ? safe_open(out_fd, isatty(out_fd)) : NULL;
    FILE *err = err_fd >= 0 ? safe_open(err_fd, 1) : NULL;
    if (!out || !err) {
        if (out) {
            fclose(out);
        } else if (out_fd >= 0) {
            close(out_fd);
        }
        if (err) {
            fclose(err);
        } else if (err_fd >= 0) {
            close(err_fd);
        }
        return -1;
    }
    stdout = out;
    stderr = err;
    return 0;
}
