/*
 * report.h - outputs of `apx report` (cmd_report.c): the table of every output format
 * (report_formats.c), each an emitter of the report document (report/doc.h, built once by
 * lib/report): text, JSON (schema in docs/report-schema.md), CSV and HTML.
 */
#ifndef APX_CLI_REPORT_H
#define APX_CLI_REPORT_H

#include <stdio.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "report/doc.h"

struct apx_report_opts {
	unsigned top;			/* rows of the long tables */
	unsigned sections;		/* bit per enum apx_report_section */
	int color;
	/* where colour sequences go: the terminal itself, past the filter that escapes the
	 * report's text (base/termsafe.h) */
	FILE *color_out;
};

/* The output formats of `apx report --format` (report_formats.c), one table. emit gets the
 * document (built with o's sections and --top) and the options; 0 or -errno. */
struct apx_report_format {
	const char *name;
	int (*emit)(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o);
	int needs_store;		/* its document holds the time series (the event store) */
	int tty_ok;			/* may be written to a terminal (html: not) */
};
const struct apx_report_format *apx_report_format_find(const char *name);
/* "text, json, html or csv", for messages. */
const char *apx_report_format_names(void);

/* report_opts.c: option c of apx report or apx diff (cmd) when it is one they share ('f'
 * --format, 'o' --output, 'n' --top, 'C' --color): checked and stored; 0, or APX_EXIT_USAGE
 * (said); -1 when c is not one of them. */
int apx_report_common_opt(const char *cmd, int c, const char *arg,
			  const struct apx_report_format **fmt, const char **output,
			  struct apx_report_opts *o);

#endif
