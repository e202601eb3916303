/*
 * utf8.h - strict UTF-8 decoding of one character (no overlong forms, no surrogates, nothing
 * above U+10FFFF). Shared by the two writers of untrusted text: termsafe.c (terminals) and
 * json.c (JSON strings).
 */
#ifndef APX_BASE_UTF8_H
#define APX_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid character at p (n bytes available), its code point in *ret_cp;
 * 0 when the bytes at p are not valid UTF-8 (or cut short: n too small). */
size_t apx_utf8_decode(const uint8_t *p, size_t n, uint32_t *ret_cp);

#endif
