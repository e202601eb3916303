/*
 * emit_html.c - `apx report --format html`: the report document as one self-contained HTML
 * page: inline CSS, inline SVG plots (html_plot.c), no script, nothing fetched. The sections
 * of the text report in its order, each table as an HTML table (cells formatted by their
 * unit), plots where the document's tables ask for one, and the findings as cards with their
 * metrics and evidence tables. Everything that comes from a trace goes through
 * apx_html_text(). A long name in a table (a demangled kernel, a path) is shown short, the
 * way nsys's "base" name is (apx_html_short: the function without its template arguments and
 * parameters, cut with an ellipsis past APX_HTML_NAME_MAX characters), its whole text in the cell's
 * title (a tooltip); prose wraps. All time plots of the page share one time range: the run's
 * span. Called through cli/report_formats.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/demangle.h"
#include "analysis/model.h"
#include "base/utf8.h"
#include "report/flame.h"
#include "report/html.h"

#include "base/banned.h"

static const char css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;"
	"background:#f6f7f9}"
	"header{background:#1d2330;color:#fff;padding:14px 28px}header h1{margin:0;font-size:20px}"
	"header p{margin:4px 0 0;color:#c7cdd8;word-break:break-all}"
	"nav{padding:8px 28px;background:#fff;border-bottom:1px solid #dde1e8}"
	"nav a{margin-right:12px;color:#2456c6;text-decoration:none}"
	"main{padding:0 28px 40px;max-width:1200px}"
	"section{background:#fff;border:1px solid #dde1e8;border-radius:6px;margin:18px 0;"
	"padding:4px 18px 14px}"
	"h2{font-size:17px;margin:12px 0 8px}h3{font-size:14px;margin:14px 0 6px}"
	"table{border-collapse:collapse;margin:4px 0 10px;font-size:13px}"
	"th,td{border-bottom:1px solid #e6e9ee;padding:3px 8px;text-align:right;white-space:nowrap}"
	"th{background:#f0f2f5;font-weight:600}td.t,th.t{text-align:left;white-space:normal;"
	"min-width:120px;max-width:640px;overflow-wrap:anywhere}"
	"td.n{min-width:230px}"	/* a long name: not squeezed to a narrow column */
	".na{color:#98a0ad}.note{color:#4a5263;margin:4px 0}"
	".finding{border-left:5px solid #3b82c4;padding:6px 12px;margin:12px 0;background:#fafbfc}"
	".finding.critical{border-color:#d03b3b}.finding.warning{border-color:#e0a020}"
	".sev{font-weight:700;text-transform:uppercase;font-size:12px;margin-right:6px}"
	".critical .sev{color:#d03b3b}.warning .sev{color:#b97d00}.info .sev{color:#3b82c4}"
	"pre{background:#f0f2f5;padding:6px 8px;white-space:pre-wrap;word-break:break-all;"
	"margin:4px 0;font-size:12.5px}"
	"figure{margin:8px 0 14px}figcaption{font-weight:600;margin-bottom:4px}"
	"svg{background:#fff;border:1px solid #e6e9ee}svg text{font:11px sans-serif;fill:#333}"
	".axis{stroke:#888;stroke-width:1}.grid{stroke:#eee;stroke-width:1}";

void apx_html_text(FILE *out, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	for (size_t i = 0; s && i < len;) {
		uint32_t cp;
		size_t n, run = i;

		while (run < len && p[run] >= 0x20 && p[run] < 0x7f && !strchr("&<>\"'", p[run]))
			run++;
		if (run > i) {
			fwrite(p + i, 1, run - i, out);
			i = run;
			continue;
		}
		n = apx_utf8_decode(p + i, len - i, &cp);
		if (!n || (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f)) {
			fputs("&#xfffd;", out);
			i += n ? n : 1;
			continue;
		}
		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fwrite(p + i, 1, n, out); break;
		}
		i += n;
	}
}

void apx_html_str(FILE *out, const char *s)
{
	apx_html_text(out, s, s ? strlen(s) : 0);
}

/* The base name of a demangled C++ name (apx_cxx_base_span, as lib/export/kname.c finds
 * nsys's shortName): 0 when s does not look like one (prose, a path, a stack: a space right
 * before its first list, or more than two words before it). */
static int cxx_base(const char *s, size_t n, size_t *pb, size_t *pe)
{
	size_t begin, end, words;

	apx_cxx_base_span(s, n, &begin, &end, &words);
	if (end == n || end <= begin || words > 2 || s[end - 1] == ' ')
		return 0;
	*pb = begin;
	*pe = end;
	return 1;
}

size_t apx_html_short(const char *s, size_t len, size_t max, size_t *begin, int *cut)
{
	size_t b = 0, e = len, chars = 0, i;

	*begin = 0;
	*cut = 0;
	if (!s)
		return 0;
	for (i = 0; i < len; i++)
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
	if (chars <= max)
		return len;
	if (!cxx_base(s, len, &b, &e)) {
		b = 0;
		e = len;
	}
	*begin = b;
	for (i = b, chars = 0; i < e; i++) {	/* cut at max characters, not inside one */
		if (((unsigned char)s[i] & 0xc0) != 0x80 && chars++ == max)
			break;
	}
	*cut = i < e;
	return i - b;
}

/* A name cut short: its visible part (an ellipsis when cut) after title="whole text". */
void apx_html_name(FILE *out, const char *s, size_t len, size_t max, const char *tag,
		   const char *attrs)
{
	int cut;
	size_t b, n = apx_html_short(s, len, max, &b, &cut);

	fprintf(out, "<%s%s", tag, attrs);
	if (n != len) {
		fputs(" title=\"", out);
		apx_html_text(out, s, len);
		fputc('"', out);
	}
	fputc('>', out);
	apx_html_text(out, s + b, n);
	if (cut)
		fputs("&#8230;", out);
}

/* Prose (a sentence, a command line, a stack "f < g < h") wraps; a name does not. */
static int is_prose(const char *s, size_t len)
{
	size_t b, e, spaces = 0;

	if (cxx_base(s, len, &b, &e))
		return 0;
	for (size_t i = 0; i < len; i++)
		spaces += s[i] == ' ';
	return spaces >= 3;
}

static void table(FILE *out, const struct apx_rtable *t)
{
	char buf[256];

	fputs("<table><thead><tr>", out);
	for (unsigned c = 0; c < t->ncols; c++) {
		fputs(t->col[c].unit == APX_UNIT_TEXT ? "<th class=\"t\">" : "<th>", out);
		apx_html_str(out, t->col[c].title);
		fputs("</th>", out);
	}
	fputs("</tr></thead><tbody>\n", out);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs("<tr>", out);
		for (unsigned c = 0; c < t->ncols; c++) {
			const struct apx_rcell *cell = apx_rtable_cell(t, r, c);

			if (cell->na) {
				fputs("<td class=\"na\">n/a</td>", out);
			} else if (t->col[c].unit == APX_UNIT_TEXT) {
				if (is_prose(cell->s, cell->len)) {
					fputs("<td class=\"t\">", out);
					apx_html_text(out, cell->s, cell->len);
				} else {
					apx_html_name(out, cell->s, cell->len, APX_HTML_NAME_MAX, "td",
						      cell->len > 32 ? " class=\"t n\"" : " class=\"t\"");
				}
				fputs("</td>", out);
			} else {
				fputs("<td>", out);
				apx_html_str(out, apx_rcell_fmt(buf, sizeof(buf), t, r, c));
				fputs("</td>", out);
			}
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

static void prose(FILE *out, const char *label, const char *text)
{
	if (!text || !text[0])
		return;
	fprintf(out, "<h3>%s</h3><pre>", label);
	apx_html_str(out, text);
	fputs("</pre>\n", out);
}

static void finding(FILE *out, const struct apx_rfinding *rf)
{
	const struct apx_finding *f = rf->f;
	char b[64];

	fprintf(out, "<div class=\"finding %s\"><h3><span class=\"sev\">%s</span>[%u] ", rf->severity,
		rf->severity, rf->rank);
	apx_html_str(out, f->title);
	fputs("</h3><p>", out);
	if (rf->per_step)
		fprintf(out, "saving %s a step (%.1f%% of step time)",
			apx_unit_fmt(b, sizeof(b), APX_UNIT_NS, rf->step_ns), rf->step_pct);
	else if (f->saving_estimated)
		fprintf(out, "saving %s (%.1f%% of the run)", apx_unit_fmt(b, sizeof(b), APX_UNIT_NS,
									   f->saving_ns), f->saving_pct);
	else
		fputs("saving not estimated", out);
	fprintf(out, ", confidence %d%%, rule ", f->confidence_pct);
	apx_html_str(out, f->rule);
	fputs("</p>\n", out);
	if (rf->metrics)
		table(out, rf->metrics);
	if (rf->evidence)
		table(out, rf->evidence);
	prose(out, "model", f->model);
	prose(out, "evidence", f->evidence);
	prose(out, "fix", f->fix);
	fputs("</div>\n", out);
}

/* The time range of the page's time plots: the run's span, or more when a series goes past it
 * (a step's end). */
static double time_span(const struct apx_rdoc *d)
{
	double span = d->m && d->m->run_end_ns > d->m->run_start_ns
			      ? (double)(d->m->run_end_ns - d->m->run_start_ns) : 0;

	for (unsigned s = 0; s < APX_SEC__COUNT; s++) {
		for (unsigned i = 0; d->sec[s].present && i < d->sec[s].ntables; i++) {
			const struct apx_rtable *t = d->sec[s].t[i];
			unsigned dur = t->ncols;

			if ((t->plot != APX_PLOT_LINE && t->plot != APX_PLOT_LINES) ||
			    t->plot_x >= t->ncols || t->col[t->plot_x].unit != APX_UNIT_NS)
				continue;
			for (unsigned c = 0; c < t->ncols; c++)
				if (!strcmp(t->col[c].key, "duration_ns"))
					dur = c;
			for (size_t r = 0; r < t->nrows; r++) {
				const struct apx_rcell *x = apx_rtable_cell(t, r, t->plot_x);
				double e = x->na ? 0 : x->v;

				if (dur < t->ncols && !apx_rtable_cell(t, r, dur)->na)
					e += apx_rtable_cell(t, r, dur)->v;
				if (e > span)
					span = e;
			}
		}
	}
	return span;
}

static void section(FILE *out, const struct apx_rdoc *d, unsigned s, double span)
{
	const struct apx_rsection *sec = &d->sec[s];

	fprintf(out, "<section id=\"%s\"><h2>", apx_report_section_name(s));
	apx_html_str(out, sec->title ? sec->title : apx_report_section_title(s));
	fputs("</h2>\n", out);
	for (unsigned i = 0; i < sec->nnotes; i++) {
		fputs("<p class=\"note\">", out);
		apx_html_str(out, sec->note[i]);
		fputs("</p>\n", out);
	}
	if (sec->has_findings)
		for (size_t i = 0; i < d->nfindings; i++)
			finding(out, &d->findings[i]);
	for (unsigned i = 0; i < sec->ntables; i++) {
		const struct apx_rtable *t = sec->t[i];

		if (!(t->views & APX_VIEW_DATA))
			continue;	/* the text or JSON report's own layout */
		if (t->plot)
			apx_html_plot(out, t, span);
		if (!t->plot_only && t->nrows) {
			if (!t->plot) {
				fputs("<h3>", out);
				apx_html_str(out, t->title);
				fputs("</h3>\n", out);
			}
			table(out, t);
		}
		if (t->note && t->note[0]) {
			fputs("<p class=\"note\">", out);
			apx_html_str(out, t->note);
			fputs("</p>\n", out);
		}
	}
	if (s == APX_SEC_HOTSPOTS || s == APX_SEC_THREADS)	/* flame.h */
		apx_html_flame(out, d->flame[s == APX_SEC_THREADS]);
	fputs("</section>\n", out);
}

int apx_report_emit_html(FILE *out, const struct apx_rdoc *d)
{
	const char *cmd = d->command ? d->command : "";
	const char *heading = d->heading ? d->heading : "apx report";
	double span = time_span(d);

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<title>", out);
	apx_html_str(out, heading);
	fputs(": ", out);
	apx_html_str(out, cmd);
	fprintf(out, "</title>\n<style>%s</style></head><body>\n<header><h1>", css);
	apx_html_str(out, heading);
	fputs("</h1><p>", out);
	apx_html_str(out, cmd);
	if (d->trace) {
		fputs(" &middot; ", out);
		apx_html_str(out, d->trace);
	}
	fputs("</p></header>\n<nav>", out);
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		if (d->sec[s].present)
			fprintf(out, "<a href=\"#%s\">%s</a>", apx_report_section_name(s),
				apx_report_section_name(s));
	fputs("</nav>\n<main>\n", out);
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		if (d->sec[s].present)
			section(out, d, s, span);
	fputs("</main></body></html>\n", out);
	return ferror(out) ? -5 : 0;
}
