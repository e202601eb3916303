/*
 * html.h - shared by the HTML emitter's files (private to lib/report): the escaper and the
 * SVG plots. emit_html.c writes the page, html_plot.c the plots.
 */
#ifndef APX_REPORT_HTML_H
#define APX_REPORT_HTML_H

#include <stdio.h>

#include "report/doc.h"

void apx_html_str(FILE *out, const char *s);
/* The plot a table asks for (t->plot), as a <figure> with its title and an inline <svg>;
 * nothing when the table has too few rows to draw. */
void apx_html_plot(FILE *out, const struct apx_rtable *t);

#endif
