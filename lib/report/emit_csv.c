/*
 * emit_csv.c - `apx report --format csv`: the report document's tables as CSV (RFC 4180).
 * The header row is the columns' keys; numbers are raw (ns, bytes, bytes/s as integers,
 * percentages 0-100); a cell without a value is empty. Text is quoted, '"' doubled; control
 * characters and bytes that are not UTF-8 become U+FFFD, so a trace cannot break a row; a text
 * starting with '=', '+', '-', '@', a tab or a CR (a formula to a spreadsheet) gets a "'" in
 * front (OWASP's CSV injection advice), so opening the file runs nothing. One
 * table alone is printed bare; several are each preceded by a "# section/table" line and
 * separated by a blank line (docs/report.md). Called through cli/report_formats.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "report/doc.h"

#include "base/banned.h"

static void csv_text(FILE *out, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	fputc('"', out);
	if (len && p[0] && strchr("=+-@\t\r", p[0]))
		fputc('\'', out);	/* a formula to a spreadsheet: neutralised (OWASP) */
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = apx_utf8_decode(p + i, len - i, &cp);

		if (!n || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			fputs("\xef\xbf\xbd", out);
			i += n ? n : 1;
			continue;
		}
		if (cp == '"')
			fputc('"', out);
		fwrite(p + i, 1, n, out);
		i += n;
	}
	fputc('"', out);
}

static void csv_cell(FILE *out, const struct apx_rtable *t, size_t row, unsigned col)
{
	const struct apx_rcell *c = apx_rtable_cell(t, row, col);
	unsigned unit = t->col[col].unit;

	if (c->na)
		return;
	if (unit == APX_UNIT_TEXT)
		csv_text(out, c->s ? c->s : "", c->len);
	else if (apx_unit_is_integer(unit) && c->v < 0)
		fprintf(out, "%.0f", c->v);	/* a change: signed */
	else if (apx_unit_is_integer(unit))
		fprintf(out, "%llu", (unsigned long long)c->u);
	else
		fprintf(out, "%.10g", c->v);
}

static void csv_table(FILE *out, const struct apx_rtable *t)
{
	for (unsigned c = 0; c < t->ncols; c++)
		fprintf(out, "%s%s", c ? "," : "", t->col[c].key);
	fputc('\n', out);
	for (size_t r = 0; r < t->nrows; r++) {
		for (unsigned c = 0; c < t->ncols; c++) {
			if (c)
				fputc(',', out);
			csv_cell(out, t, r, c);
		}
		fputc('\n', out);
	}
}

int apx_report_emit_csv(FILE *out, const struct apx_rdoc *d)
{
	size_t ntables = 0, k = 0;

	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		for (unsigned i = 0; d->sec[s].present && i < d->sec[s].ntables; i++)
			ntables += !!(d->sec[s].t[i]->views & APX_VIEW_DATA);
	for (unsigned s = 0; s < APX_SEC__COUNT; s++) {
		if (!d->sec[s].present)
			continue;
		for (unsigned i = 0; i < d->sec[s].ntables; i++) {
			const struct apx_rtable *t = d->sec[s].t[i];

			if (!(t->views & APX_VIEW_DATA))
				continue;	/* the text or JSON report's own layout */
			if (ntables > 1)
				fprintf(out, "%s# %s/%s\n", k++ ? "\n" : "", apx_report_section_name(s),
					t->key);
			csv_table(out, t);
		}
	}
	return ferror(out) ? -5 : 0;
}
