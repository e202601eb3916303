/*
 * html.h - shared by the HTML emitter's files (private to lib/report): the escaper, long
 * names shown short, and the SVG plots. emit_html.c writes the page, html_plot.c the plots.
 */
#ifndef APX_REPORT_HTML_H
#define APX_REPORT_HTML_H

#include <stdio.h>

#include "report/doc.h"

#define APX_HTML_NAME_MAX 80	/* characters of a name in a table cell */

void apx_html_str(FILE *out, const char *s);
/* The part of a name shown in at most max characters: s (len bytes) when it fits, else the
 * base name of a demangled C++ name (no return type, scopes, template arguments or
 * parameters) or its start, cut at max characters. Its length; its offset in *begin, *cut
 * when cut (an ellipsis follows it). */
size_t apx_html_short(const char *s, size_t len, size_t max, size_t *begin, int *cut);
/* "<tag attrs title=\"whole name\">short name" (the title only when shortened; an ellipsis
 * when cut); the caller closes the tag. Everything escaped. */
void apx_html_name(FILE *out, const char *s, size_t len, size_t max, const char *tag,
		   const char *attrs);
/* The plot a table asks for (t->plot), as a <figure> with its title and an inline <svg>;
 * nothing when the table has too few rows to draw. A time plot (x in ns since the run's
 * start) spans 0 .. span_ns, the same for every time plot of the page (0: its own data). */
void apx_html_plot(FILE *out, const struct apx_rtable *t, double span_ns);

#endif
