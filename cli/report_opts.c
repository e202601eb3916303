/*
 * report_opts.c - the options apx report and apx diff share (report.h): --format, --output,
 * --top and --color, checked and stored the same way for both. Called from their getopt loops
 * (cmd_report.c, cmd_diff.c).
 */
#include <stdint.h>
#include <string.h>

#include "base/parse.h"
#include "cli/cli.h"
#include "cli/report.h"

#include "base/banned.h"

int apx_report_common_opt(const char *cmd, int c, const char *arg,
			  const struct apx_report_format **fmt, const char **output,
			  struct apx_report_opts *o)
{
	uint64_t v;

	switch (c) {
	case 'f':
		if (!(*fmt = apx_report_format_find(arg)))
			return apx_cli_usage_error(cmd, "--format takes %s, not '%s'",
						   apx_report_format_names(), arg);
		return 0;
	case 'o':
		*output = arg;
		return 0;
	case 'n':
		if (apx_parse_u64(arg, 100000, &v) < 0 || !v)
			return apx_cli_usage_error(cmd, "--top takes a number from 1 to 100000, "
						   "not '%s'", arg);
		o->top = (unsigned)v;
		return 0;
	case 'C':
		if (!strcmp(arg, "always"))
			o->color = 1;
		else if (!strcmp(arg, "never"))
			o->color = 0;
		else if (!strcmp(arg, "auto"))
			o->color = -1;
		else
			return apx_cli_usage_error(cmd, "--color takes auto, always or never");
		return 0;
	default:
		return -1;
	}
}
