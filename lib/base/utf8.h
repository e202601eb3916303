/*
 * utf8.h - strict UTF-8 decoding of one character (no overlong forms, no surrogates, nothing
 * above U+10FFFF). Shared by the writers of untrusted text: termsafe.c (terminals), json.c
 * (JSON strings), the CSV emitter and the exporters (SQLite TEXT, Perfetto strings: through
 * apx_utf8_sanitize, the same replacement as JSON's), and the copies of names that keep a NUL
 * byte escaped instead of cutting the name there.
 */
#ifndef APX_BASE_UTF8_H
#define APX_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid character at p (n bytes available), its code point in *ret_cp;
 * 0 when the bytes at p are not valid UTF-8 (or cut short: n too small). */
size_t apx_utf8_decode(const uint8_t *p, size_t n, uint32_t *ret_cp);

/* Whether p[0..n) is valid UTF-8 without a NUL byte: text any consumer takes as it is. */
int apx_utf8_clean(const char *p, size_t n);

/* p[0..n) into buf (cap > 0; always NUL-terminated, cut before a character that does not fit),
 * with each NUL byte written as the four characters "\x00" (as the terminal filter shows a
 * control byte), so a name holding a NUL is escaped, not cut. Other bytes are copied as they
 * are. Returns buf. */
const char *apx_text_copy(char *buf, size_t cap, const char *p, size_t n);

/* The same, and each byte that is not UTF-8 becomes U+FFFD (as the JSON writer, json.c, writes
 * it): valid UTF-8 for SQLite TEXT, protobuf strings and JSON whatever the input. Returns
 * buf. */
const char *apx_utf8_sanitize(char *buf, size_t cap, const char *p, size_t n);

#endif
