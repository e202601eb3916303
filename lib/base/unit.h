/*
 * unit.h - the units of typed numbers: finding metrics (analysis/finding.h) and the cells of
 * the report document's tables (report/doc.h). One table of unit names ("ns", "bytes", ...,
 * as JSON and CSV write them) and one formatter for humans (text and HTML reports). Any thread.
 */
#ifndef APX_BASE_UNIT_H
#define APX_BASE_UNIT_H

#include <stddef.h>

enum apx_unit {
	APX_UNIT_COUNT,		/* a number of things (integer) */
	APX_UNIT_NS,		/* a duration or time in nanoseconds */
	APX_UNIT_BYTES,
	APX_UNIT_BYTES_PER_S,
	APX_UNIT_PCT,		/* 0-100 */
	APX_UNIT_RATIO,		/* 0-1, or any plain real number */
	APX_UNIT_ID,		/* an identifier (pid, device, stream): an integer never summed */
	APX_UNIT_TEXT,		/* a string (table cells only) */
	APX_UNIT__COUNT,
};

/* "count", "ns", "bytes", "bytes_per_s", "pct", "ratio", "id", "text" ("?" out of range). */
const char *apx_unit_name(unsigned unit);
/* Whether values of the unit are written as integers (count, ns, bytes, bytes_per_s, id). */
int apx_unit_is_integer(unsigned unit);
/* v for humans into buf: "1.23 ms", "4.5 GB", "12.3 GB/s" (the size of a second), "42.0%", "0.75", "17";
 * a negative duration or size (a change) with its sign: "-1.23 ms". */
const char *apx_unit_fmt(char *buf, size_t cap, unsigned unit, double v);

#endif
