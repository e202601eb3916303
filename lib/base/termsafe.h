/*
 * termsafe.h - text that came from a trace, a file name or another process made safe for a
 * terminal: control bytes (C0, DEL), C1 controls (U+0080-U+009F) and bytes that are not valid
 * UTF-8 are written as visible escapes ("\x1b", "\u009b", "\xff"), so a crafted kernel name,
 * finding or file name cannot move the cursor, retitle or rewrite the terminal. Valid UTF-8
 * passes unchanged. The one helper for every command that prints such text (cli/).
 */
#ifndef APX_BASE_TERMSAFE_H
#define APX_BASE_TERMSAFE_H

#include <stddef.h>
#include <stdio.h>

/* Escape len bytes of s (a NUL among them too: "\x00") into out (cap > 0 bytes, always terminated,
 * never cut inside an escape or a character). '\n' is escaped too. Returns out. */
const char *apx_term_safe(char *out, size_t cap, const char *s, size_t len);
/* The same for a NUL-terminated string. */
const char *apx_term_safe_str(char *out, size_t cap, const char *s);

/* A stream whose bytes reach dst escaped as above, except '\n' (whole reports are written
 * through it; a tab from a trace would break the tables' columns: escaped). Characters split
 * between writes are put together. Closing it flushes into dst and leaves dst open; NULL on
 * ENOMEM. To write something trusted (a colour sequence), fflush() the filter, then write to
 * dst. */
FILE *apx_term_filter_open(FILE *dst);

/* Whether colour is wanted on fd: a terminal, and NO_COLOR unset or empty (no-color.org). */
int apx_term_color_auto(int fd);

#endif
