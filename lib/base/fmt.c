/*
 * fmt.c - numbers for humans (see fmt.h). Used by apx report, apx analyze's summary, nvperfd.
 */
#include "base/fmt.h"

#include <stdio.h>

#include "base/banned.h"

const char *apx_fmt_ns(char *buf, size_t cap, double ns)
{
	if (ns >= 1e13)
		snprintf(buf, cap, "%.3g s", ns / 1e9);
	else if (ns >= 1e9)
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, cap, "%.2f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, cap, "%.1f us", ns / 1e3);
	else
		snprintf(buf, cap, "%.0f ns", ns);
	return buf;
}

const char *apx_fmt_size(char *buf, size_t cap, double b)
{
	if (b >= 1e15)
		snprintf(buf, cap, "%.3g PB", b / 1e15);
	else if (b >= 1e12)
		snprintf(buf, cap, "%.2f TB", b / 1e12);
	else if (b >= 1e9)
		snprintf(buf, cap, "%.2f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, cap, "%.1f MB", b / 1e6);
	else if (b >= 1e3)
		snprintf(buf, cap, "%.1f kB", b / 1e3);
	else
		snprintf(buf, cap, "%.0f B", b);
	return buf;
}

const char *apx_fmt_rate(char *buf, size_t cap, double bytes, double ns)
{
	if (ns <= 0)
		snprintf(buf, cap, "n/a");
	else
		snprintf(buf, cap, "%.1f GB/s", bytes / ns);
	return buf;
}
