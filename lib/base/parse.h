/*
 * parse.h - strict number parsing for command-line options and config files: the whole string
 * must be a number in range, otherwise -EINVAL / -ERANGE. Use these instead of atoi/strtol.
 */
#ifndef APX_BASE_PARSE_H
#define APX_BASE_PARSE_H

#include <stdint.h>

int apx_parse_u64(const char *s, uint64_t max, uint64_t *ret_v);
#define APX_SECONDS_MAX 1000000000	/* about 31 years: the most apx_parse_seconds_ns takes */

/* Seconds as a plain decimal ("1.5", "10", ".5": digits and at most one '.'; no sign,
 * exponent, hex or spaces) into nanoseconds; -ERANGE above APX_SECONDS_MAX. */
int apx_parse_seconds_ns(const char *s, uint64_t *ret_ns);

/* A list of numbers and ranges, "0,3,8-15" (no spaces, ranges low-high, each number at most
 * max): whether v is in it (1 or 0), or -EINVAL for a list that does not parse (empty, "3-",
 * "5-2", ",,") and -ERANGE for a number above max. v UINT64_MAX only checks the list. */
int apx_parse_list_has(const char *list, uint64_t max, uint64_t v);

#endif
