/*
 * wire_internal.h: what the files of controller/wire/ share (not part of wire.h; nothing
 * outside the folder includes it).
 */
#ifndef DQ_WIRE_INTERNAL_H
#define DQ_WIRE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Byte classes of the protocol (wire.c explains each). */
enum { C_NAME = 1, C_DIGIT = 2, C_HEX = 4, C_AKEY = 8, C_AVAL = 16, C_LABEL = 32, C_NAME0 = 64 };
extern const unsigned char wire__byte_class[256];

static inline int in_class(int cls, char c) {
    return (wire__byte_class[(unsigned char)c] & cls) != 0;
}

/* A decimal number of n digits (no sign, no leading '+') into *out: 0, or −1 when it is
 * not one or overflows. */
int wire__parse_u64(const char *s, size_t n, uint64_t *out);

/* 1 when p[0 … n) is a lowercase word: [a-z] then [A-Za-z0-9_@], and '.' when dot. */
int wire__lower_word(const char *p, size_t n, int dot);

#endif /* DQ_WIRE_INTERNAL_H */
