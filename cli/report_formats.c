/*
 * report_formats.c - the output formats of `apx report` in one table {name, emit}: each an
 * emitter of the report document (lib/report: emit_text.c, emit_json.c, emit_html.c,
 * emit_csv.c), given the options it needs. Looked up by cmd_report.c and the report
 * property test.
 */
#include <string.h>

#include "cli/report.h"

#include "base/banned.h"

static int emit_text(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	const struct apx_text_out t = { out, o->color, o->color_out };

	return apx_report_emit_text(&t, d);
}

static int emit_json(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	(void)o;
	return apx_report_emit_json(out, d);
}

static int emit_csv(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	(void)o;
	return apx_report_emit_csv(out, d);
}

static int emit_html(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	(void)o;
	return apx_report_emit_html(out, d);
}

static const struct apx_report_format formats[] = {
	{ "text", emit_text, 0, 1 },
	{ "json", emit_json, 0, 1 },
	{ "html", emit_html, 1, 0 },
	{ "csv", emit_csv, 1, 1 },
};

const struct apx_report_format *apx_report_format_find(const char *name)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

const char *apx_report_format_names(void)
{
	return "text, json, html or csv";
}
