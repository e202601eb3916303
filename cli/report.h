/*
 * report.h - outputs of `apx report` (cmd_report.c): the terminal report (report_text.c) and
 * the JSON document (report_json.c, schema in docs/report-schema.md), and the table of every
 * output format (report_formats.c: these two and lib/report's CSV and HTML emitters, which
 * format the report document, report/doc.h). Both read the model and the ranked findings;
 * neither computes anything the model does not hold.
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

/* Both format the report document d (its model and findings in d->m, d->fd): the sections
 * whose text or JSON view the document holds through lib/report's emitters (emit_text.c,
 * emit_json.c), the others from the model. */
void apx_report_text(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o);
void apx_report_json(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o);

/* The output formats of `apx report --format` (report_formats.c), one table. emit gets the
 * document (its model and findings in d->m, d->fd) and the options; 0 or -errno. */
struct apx_report_format {
	const char *name;
	int (*emit)(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o);
	int needs_store;		/* its document holds the time series (the event store) */
	int tty_ok;			/* may be written to a terminal (html: not) */
};
const struct apx_report_format *apx_report_format_find(const char *name);
/* "text, json, html or csv", for messages. */
const char *apx_report_format_names(void);

/* Shared by the text renderers (report_text.c, report_nvperfd.c). */
void apx_text_heading(FILE *out, const struct apx_report_opts *o, const char *title);
/* APX_REPORT_W and apx_text_wrap(): report/doc.h */

/* nvperfd's line in the summary (nothing when no file holds nvperfd's key/values).
 * report_nvperfd.c; its section: lib/report/build_view_nvperfd.c. */
void apx_report_nvperfd_summary(FILE *out, const struct apx_model *m);

#endif
