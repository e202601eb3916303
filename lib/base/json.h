/*
 * json.h - the one JSON string writer of apx: every JSON producer (apx report --format json,
 * apx status/history/top --json, nvperfd's control replies) writes strings through it. Valid
 * UTF-8 passes unchanged; '"' and '\' are escaped; control characters (C0, DEL, C1) become
 * \u00XX (\n, \t, \r as themselves escaped); bytes that are not valid UTF-8 become \ufffd, so
 * the output is always valid JSON in UTF-8 whatever the input.
 */
#ifndef APX_BASE_JSON_H
#define APX_BASE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* A quoted JSON string of len bytes of s; a NUL among them is written \u0000, not cut. */
void apx_json_strn(FILE *f, const char *s, size_t len);
/* The same for a NUL-terminated string (NULL writes ""). */
void apx_json_str(FILE *f, const char *s);
/* A number: integer != 0 rounds it to an integer (never in exponent form; negatives and values
 * past 2^64 write 0), else 6 significant digits; NaN and infinities write null. */
void apx_json_num(FILE *f, double v, int integer);

#endif
