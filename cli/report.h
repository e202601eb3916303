/*
 * report.h - outputs of `apx report` (cmd_report.c): the terminal report (report_text.c) and
 * the JSON document (report_json.c, schema in docs/report-schema.md). Both read the model and
 * the ranked findings; neither computes anything the model does not hold.
 */
#ifndef APX_CLI_REPORT_H
#define APX_CLI_REPORT_H

#include <stdio.h>

#include "analysis/findings.h"
#include "analysis/model.h"

enum apx_report_section {
	APX_SEC_SUMMARY,
	APX_SEC_FINDINGS,
	APX_SEC_STARTUP,
	APX_SEC_NVPERFD,
	APX_SEC_KERNELS,
	APX_SEC_TRANSFERS,
	APX_SEC_SYNC,
	APX_SEC_IDLE,
	APX_SEC_MEMORY,
	APX_SEC_STREAMS,
	APX_SEC_NVTX,
	APX_SEC_L2,
	APX_SEC_UVM,
	APX_SEC_CPU,
	APX_SEC_CHECKS,
	APX_SEC_METHOD,
	APX_SEC__COUNT,
};

struct apx_report_opts {
	unsigned top;			/* rows of the long tables */
	unsigned sections;		/* bit per enum apx_report_section */
	int color;
	/* where colour sequences go: the terminal itself, past the filter that escapes the
	 * report's text (base/termsafe.h) */
	FILE *color_out;
};

const char *apx_report_section_name(unsigned s);
int apx_report_section_parse(const char *name);	/* index or -1 */

void apx_report_text(FILE *out, const struct apx_model *m, const struct apx_findings *f,
		     const struct apx_report_opts *o);
void apx_report_json(FILE *out, const struct apx_model *m, const struct apx_findings *f,
		     const struct apx_report_opts *o);

/* Shared by the text renderers (report_text.c, report_nvperfd.c). */
#define APX_REPORT_W 100		/* every line fits this many columns */
void apx_text_heading(FILE *out, const struct apx_report_opts *o, const char *title);
/* Print text from column col (the caller printed what comes before it), wrapped at spaces
 * (or '\n') so that no line passes APX_REPORT_W; further lines start at column indent. */
void apx_text_wrap(FILE *out, int col, int indent, const char *text);

/* The "nvperfd (observed from outside)" section, and its line in the summary (nothing when no
 * file holds nvperfd's key/values). report_nvperfd.c. */
void apx_report_nvperfd_text(FILE *out, const struct apx_model *m, const struct apx_report_opts *o);
void apx_report_nvperfd_summary(FILE *out, const struct apx_model *m);

#endif
