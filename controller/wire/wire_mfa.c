/*
 * wire_mfa.c: functions as the protocol writes them, MOD:FUN/ARITY with Erlang's atoms
 * (docs/protocol.md, "Functions"), and wire_escape, which prints any bytes on one line.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"
#include "wire_internal.h"

/* ---- functions: MOD:FUN/ARITY with Erlang atoms ------------------------------------- */

/* The length of the UTF-8 character at p (p < e) when a quoted atom may hold it: U+0020 …
 * U+10FFFF except DEL and the C1 controls (U+007F … U+009F), surrogates, overlong forms;
 * else 0. */
static size_t atom_char(const unsigned char *p, const unsigned char *e) {
    unsigned c = p[0];
    if (c < 0x80) {
        return c >= 0x20 && c != 0x7f;
    }
    size_t n;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, cp = c & 0x1fu, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, cp = c & 0x0fu, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, cp = c & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(e - p) < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min || cp <= 0x9f || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

/* The quoted atom at p (*p == '\''): the end past its closing quote, or NULL and *why. */
static const char *quoted_atom(const char *p, const char *e, const char **why) {
    for (p++; p < e && *p != '\'';) {
        if (*p == '\\') {
            if (p + 1 == e || (p[1] != '\\' && p[1] != '\'')) {
                *why = "inside quotes only \\\\ and \\' are escapes";
                return NULL;
            }
            p += 2;
            continue;
        }
        size_t k = atom_char((const unsigned char *)p, (const unsigned char *)e);
        if (k == 0) {
            *why = "a quoted atom holds a control character or a byte that is not UTF-8";
            return NULL;
        }
        p += k;
    }
    if (p == e) {
        *why = "a quote is not closed";
        return NULL;
    }
    return p + 1;
}

/* An Elixir module's atom: Elixir.Alias(.Alias)*, each Alias [A-Z][A-Za-z0-9_]*. */
static int elixir_module(const char *p, size_t n) {
    const char *e = p + n;
    if (n < 8 || memcmp(p, "Elixir.", 7) != 0) {
        return 0;
    }
    for (p += 7;;) {
        if (p == e || !(*p >= 'A' && *p <= 'Z')) {
            return 0;
        }
        for (p++; p < e && in_class(C_NAME, *p); p++) {
        }
        if (p == e) {
            return 1;
        }
        if (*p++ != '.') {
            return 0;
        }
    }
}

/* An unquoted function: [a-z_][A-Za-z0-9_@]*, optionally ending in '?' or '!' (Elixir). */
static int fun_word(const char *p, size_t n) {
    if (n == 0 || !((p[0] >= 'a' && p[0] <= 'z') || p[0] == '_')) {
        return 0;
    }
    if (p[n - 1] == '?' || p[n - 1] == '!') {
        n--;
    }
    for (size_t i = 1; i < n; i++) {
        if (!(in_class(C_NAME, p[i]) || p[i] == '@')) {
            return 0;
        }
    }
    return 1;
}

const char *wire_mfa_check(const char *s, size_t n) {
    if (!s || n == 0) {
        return "empty";
    }
    if (n > WIRE_MAX_MFA) {
        return "longer than 255 bytes";
    }
    const char *p = s, *e = s + n, *why = NULL;
    if (*p == '\'') {
        if (!(p = quoted_atom(p, e, &why))) {
            return why;
        }
        if (p == e || *p != ':') {
            return "no ':' after the quoted module";
        }
    } else {
        const char *colon = memchr(p, ':', n);
        if (!colon) {
            return "no ':' between module and function";
        }
        if (!wire__lower_word(p, (size_t)(colon - p), 1) &&
            !elixir_module(p, (size_t)(colon - p))) {
            return "an unquoted module is [a-z][A-Za-z0-9_@.]* or an Elixir module "
                   "Elixir.Alias; quote any other atom: 'Mod'";
        }
        p = colon;
    }
    p++;
    if (p < e && *p == '\'') {
        if (!(p = quoted_atom(p, e, &why))) {
            return why;
        }
        if (p == e || *p != '/') {
            return "no '/ARITY' after the quoted function";
        }
    } else {
        const char *slash = memchr(p, '/', (size_t)(e - p));
        if (!slash) {
            return "no '/ARITY' after the function";
        }
        if (!fun_word(p, (size_t)(slash - p))) {
            return "an unquoted function is [a-z_][A-Za-z0-9_@]*, with Elixir's '?' or '!' at "
                   "the end; quote any other atom: 'do it'";
        }
        p = slash;
    }
    p++;
    size_t an = (size_t)(e - p);
    uint64_t a;
    if (an == 0 || an > 3 || (an > 1 && p[0] == '0') || wire__parse_u64(p, an, &a) != 0 ||
        a > 255) {
        return "ARITY is not 0 to 255 (decimal, no leading zero)";
    }
    return NULL;
}

int wire_mfa_valid(const char *s, size_t n) {
    return wire_mfa_check(s, n) == NULL;
}

/* One byte or character of wire_escape at p (p < e): the bytes to write (*src, or esc),
 * how many of them (*w), and how many input bytes they stand for (the return value). */
static size_t escape_one(const unsigned char *p, const unsigned char *e, char esc[4],
                         const char **src, size_t *w) {
    static const char hex[] = "0123456789abcdef";
    size_t k;
    *src = esc;
    *w = 2;
    esc[0] = '\\';
    if (*p == '"' || *p == '\\') {
        esc[1] = (char)*p;
    } else if (*p == '\n' || *p == '\r' || *p == '\t') {
        esc[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
    } else if ((k = atom_char(p, e)) > 0) {
        *src = (const char *)p;
        *w = k;
        return k;
    } else {
        esc[1] = 'x', esc[2] = hex[*p >> 4], esc[3] = hex[*p & 15];
        *w = 4;
    }
    return 1;
}

const char *wire_escape(char *out, size_t cap, const char *s, size_t n) {
    const unsigned char *e = (const unsigned char *)s + n;
    char esc[4];
    const char *src;
    size_t w, total = 0;
    for (const unsigned char *p = (const unsigned char *)s; p < e; total += w) {
        p += escape_one(p, e, esc, &src, &w);
    }
    size_t room = total < cap ? total : cap - 4, at = 0; /* all of it, or some and "..." */
    for (const unsigned char *p = (const unsigned char *)s; p < e;) {
        size_t k = escape_one(p, e, esc, &src, &w);
        if (at + w > room) {
            break;
        }
        memcpy(out + at, src, w);
        at += w;
        p += k;
    }
    if (total >= cap) {
        memcpy(out + at, "...", 3);
        at += 3;
    }
    out[at] = '\0';
    return out;
}
