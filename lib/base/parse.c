/*
 * parse.c - strict number parsing (see parse.h). Used by cli/ and daemon/ config code.
 */
#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

int apx_parse_u64(const char *s, uint64_t max, uint64_t *ret_v)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*ret_v = v;
	return 0;
}

int apx_parse_seconds_ns(const char *s, uint64_t *ret_ns)
{
	size_t digits = 0, dots = 0;
	double v;
	char *end;

	/* plain decimal only: strtod alone would take "0x10", "1e3", "inf", " 5" */
	for (const char *p = s; p && *p; p++) {
		if (isdigit((unsigned char)*p))
			digits++;
		else if (*p == '.')
			dots++;
		else
			return -EINVAL;
	}
	if (!s || !digits || dots > 1)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v))
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v > APX_SECONDS_MAX)
		return -ERANGE;
	*ret_ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

int apx_parse_list_has(const char *list, uint64_t max, uint64_t v)
{
	char item[48];
	int in = 0;

	if (!list || !*list)
		return -EINVAL;
	for (const char *p = list; ; p++) {
		size_t n = strcspn(p, ",");
		uint64_t lo, hi;
		char *dash;
		int r;

		if (!n || n >= sizeof(item))
			return -EINVAL;
		memcpy(item, p, n);
		item[n] = 0;
		dash = strchr(item, '-');
		if (dash)
			*dash = 0;
		if ((r = apx_parse_u64(item, max, &lo)) < 0 ||
		    (r = apx_parse_u64(dash ? dash + 1 : item, max, &hi)) < 0)
			return r;
		if (hi < lo)
			return -EINVAL;
		in |= v >= lo && v <= hi;
		p += n;
		if (!*p)
			return in;
	}
}
