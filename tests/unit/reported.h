/*
 * reported.h - for the unit tests that read a report of a synthetic trace (test-stacks.c,
 * test-backward.c, test-ranks.c, test-p2p.c, test-diff.c): the report document of a model
 * and its findings, built for the sections asked for and written as text or JSON into memory;
 * and whether a text report's lines fit its width.
 */
#ifndef APX_TEST_REPORTED_H
#define APX_TEST_REPORTED_H

#include "analysis/findings.h"
#include "analysis/model.h"

/* The report of sections (1u << APX_SEC_*), top 10 rows, as text (json 0), JSON (1) or CSV
 * (2); malloc'ed, NULL on failure. */
char *tg_report(const struct apx_model *m, const struct apx_findings *fd, unsigned sections,
		int json);
/* Whether every line of text fits APX_REPORT_W columns; a longer one goes to stderr. */
int tg_report_fits(const char *text);

#endif
