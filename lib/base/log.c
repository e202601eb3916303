/*
 * log.c - stderr diagnostics for the apx command (see log.h). Not for library code and not
 * async-signal-safe: the collector's crash path writes with write(2) itself.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/banned.h"

static const char *log_prog = "apx";	/* set once by main() before any thread starts */

void apx_log_set_prog(const char *prog)
{
	log_prog = prog;
}

__attribute__((format(printf, 2, 0))) static void log_v(const char *level, const char *fmt,
							      va_list ap, int err)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (err)
		fprintf(stderr, "%s: %s%s: %s\n", log_prog, level, buf, strerror(-err));
	else
		fprintf(stderr, "%s: %s%s\n", log_prog, level, buf);
}

void apx_log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v("", fmt, ap, 0);
	va_end(ap);
}

void apx_log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v("warning: ", fmt, ap, 0);
	va_end(ap);
}

int apx_log_errno(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v("", fmt, ap, err);
	va_end(ap);
	return err;
}
