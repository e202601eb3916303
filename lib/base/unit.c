/*
 * unit.c - unit names and the human formatter (see unit.h). Called by lib/report (every
 * emitter).
 */
#include "base/unit.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "base/fmt.h"

#include "base/banned.h"

static const char *const unit_names[APX_UNIT__COUNT] = {
	"count", "ns", "bytes", "bytes_per_s", "pct", "ratio", "id", "text",
};

const char *apx_unit_name(unsigned unit)
{
	return unit < APX_UNIT__COUNT ? unit_names[unit] : "?";
}

int apx_unit_is_integer(unsigned unit)
{
	return unit == APX_UNIT_COUNT || unit == APX_UNIT_NS || unit == APX_UNIT_BYTES ||
	       unit == APX_UNIT_BYTES_PER_S || unit == APX_UNIT_ID;
}

const char *apx_unit_fmt(char *buf, size_t cap, unsigned unit, double v)
{
	if ((unit == APX_UNIT_NS || unit == APX_UNIT_BYTES) && v < 0 && cap > 1) {
		buf[0] = '-';	/* a change: "-3.52 ms" */
		apx_unit_fmt(buf + 1, cap - 1, unit, -v);
		return buf;
	}
	switch (unit) {
	case APX_UNIT_NS:
		return apx_fmt_ns(buf, cap, v);
	case APX_UNIT_BYTES:
		return apx_fmt_size(buf, cap, v);
	case APX_UNIT_BYTES_PER_S: {
		char b[32];

		snprintf(buf, cap, "%s/s", apx_fmt_size(b, sizeof(b), v));
		return buf;
	}
	case APX_UNIT_PCT:
		snprintf(buf, cap, "%.1f%%", v);
		return buf;
	case APX_UNIT_RATIO:
		snprintf(buf, cap, "%.3g", v);
		return buf;
	default:
		snprintf(buf, cap, "%" PRIu64, v > 0 && v < 1.8e19 ? (uint64_t)(v + 0.5) : (uint64_t)0);
		return buf;
	}
}
