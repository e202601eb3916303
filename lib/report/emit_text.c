/*
 * emit_text.c - the text emitter of the report document (doc.h): a section's heading, then its
 * blocks (lines, tables laid out by their columns' text hints, wrapped and labelled text).
 * It formats what the document holds and decides nothing: what a section says and in which
 * order is the builders' (build*.c). Registered as the text format in cli/report_formats.c;
 * the unit tests print single sections.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report/doc.h"

#include "base/banned.h"

#define W APX_REPORT_W

/* Colour sequences are ours, not the trace's: they go straight to the terminal (o->color_out),
 * past the filter that escapes everything written to o->f (cli/cmd_report.c). */
static void color(const struct apx_text_out *o, const char *sgr)
{
	if (!o->color || !o->color_out)
		return;
	fflush(o->f);
	fputs(sgr, o->color_out);
}

void apx_text_heading_to(const struct apx_text_out *o, const char *title)
{
	fputc('\n', o->f);
	color(o, "\033[1m");
	fputs(title, o->f);
	color(o, "\033[0m");
	fputc('\n', o->f);
}

void apx_text_wrap(FILE *out, int col, int indent, const char *text)
{
	const char *p = text;

	for (;;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p), room = W - col, cut = len;

		if (room < 20)
			room = 20;
		if (len > room) {	/* break at the last space that fits, else cut the word */
			for (cut = room; cut > room / 3 && p[cut] != ' '; cut--)
				;
			if (p[cut] != ' ')
				cut = room;
		}
		fprintf(out, "%.*s\n", cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p == '\n')
			p++;
		if (!*p)
			return;
		fprintf(out, "%*s", indent, "");
		col = indent;
	}
}

/* Text indented under a label, one output line per text line, long lines cut at a space so
 * that nothing passes W columns. */
static void label_block(FILE *f, const char *label, const char *text)
{
	const int room = W - 16;
	const char *p = text;
	int first = 1;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p), cut = len;

		if (cut > room) {
			for (cut = room; cut > room / 2 && p[cut] != ' '; cut--)
				;
			if (p[cut] != ' ')
				cut = room;
		}
		fprintf(f, "    %-10s %.*s\n", first ? label : "", cut, p);
		first = 0;
		p += cut;
		while (*p == ' ')
			p++;
		if (cut == len && nl)
			p++;
	}
}

static void pad(FILE *f, const char *s, int w, int max)
{
	if (w < 0)
		fprintf(f, "%-*.*s", -w, max, s);
	else
		fprintf(f, "%*.*s", w, max, s);
}

static void cell(FILE *f, const struct apx_rtable *t, size_t r, unsigned c)
{
	const struct apx_rcol *col = &t->col[c];
	const struct apx_rhint *h = &t->hint[c];
	const struct apx_rcell *x = apx_rtable_cell(t, r, c);
	int max = h->tmax ? (int)h->tmax : 1 << 20, w = h->tw;
	char buf[4096];

	if (!x->na && h->tfix && col->unit == APX_UNIT_PCT) {
		fprintf(f, "%*.*f%%", w > 0 ? w - 1 : 0, h->tfix - 1, x->v);
		return;
	}
	if (!x->na && h->tfix && col->unit == APX_UNIT_RATIO) {
		fprintf(f, "%*.*f", w > 0 ? w : 0, h->tfix - 1, x->v);
		return;
	}
	if (!x->na && h->tplus && x->v > 0 && col->unit != APX_UNIT_TEXT) {
		char num[4096];

		snprintf(num, sizeof(num), "+%s", apx_rcell_fmt(buf, sizeof(buf), t, r, c));
		pad(f, num, w, max);
		return;
	}
	if (!x->na && col->unit == APX_UNIT_TEXT) {
		if (w < 0)
			fprintf(f, "%-*.*s", -w, max < (int)x->len ? max : (int)x->len, x->s);
		else
			fprintf(f, "%*.*s", w, max < (int)x->len ? max : (int)x->len, x->s);
		return;
	}
	if (x->na && h->tna)
		pad(f, h->tna, w, max);
	else
		pad(f, apx_rcell_fmt(buf, sizeof(buf), t, r, c), w, max);
}

static void gap(FILE *f, const struct apx_rhint *h, unsigned c)
{
	fprintf(f, "%*s", (int)((c ? 1 : 0) + h->tgap), "");
}

static void header(FILE *f, const struct apx_rtable *t)
{
	fprintf(f, "%*s", (int)t->tindent, "");
	for (unsigned c = 0; c < t->ncols; c++) {
		gap(f, &t->hint[c], c);
		pad(f, t->hint[c].ttitle ? t->hint[c].ttitle : t->col[c].title, t->hint[c].tw, 1 << 20);
	}
	fputc('\n', f);
}

static void rows(FILE *f, const struct apx_rtable *t, size_t row0, size_t n)
{
	for (size_t r = row0; r < t->nrows && r < row0 + n; r++) {
		fprintf(f, "%*s", (int)t->tindent, "");
		for (unsigned c = 0; c < t->ncols; c++) {
			gap(f, &t->hint[c], c);
			cell(f, t, r, c);
			if (t->hint[c].tsuffix)
				fputs(t->hint[c].tsuffix, f);
		}
		fputc('\n', f);
	}
}

static void table(FILE *f, const struct apx_rtable *t)
{
	if (t->theader)
		header(f, t);
	rows(f, t, 0, t->nrows);
}

static const char *sev_word(int sev)
{
	return sev == APX_SEV_CRITICAL ? "CRITICAL" : sev == APX_SEV_WARNING ? "WARNING" : "INFO";
}

static void sev_span(const struct apx_text_out *o, const struct apx_rblk *b)
{
	color(o, b->sev == APX_SEV_CRITICAL ? "\033[1;31m"
		 : b->sev == APX_SEV_WARNING ? "\033[1;33m" : "\033[1;36m");
	fprintf(o->f, "%-*s", (int)b->sevpad, sev_word(b->sev));
	color(o, "\033[0m");
}

static void blk(const struct apx_text_out *o, const struct apx_rblk *b)
{
	FILE *f = o->f;

	if (!b->t && (b->kind == APX_RB_TABLE || b->kind == APX_RB_HEADER || b->kind == APX_RB_ROWS))
		return;		/* its table could not be made (ENOMEM) */
	switch (b->kind) {
	case APX_RB_LINE:
		fprintf(f, "%*s%s\n", (int)b->indent, "", b->text);
		break;
	case APX_RB_TABLE:
		table(f, b->t);
		break;
	case APX_RB_HEADER:
		header(f, b->t);
		break;
	case APX_RB_ROWS:
		rows(f, b->t, b->row0, b->nrows);
		break;
	case APX_RB_WRAP:
		fprintf(f, "%*s%s", (int)b->indent, "", b->head);
		apx_text_wrap(f, (int)(b->indent + strlen(b->head)), (int)b->windent, b->text);
		break;
	case APX_RB_LABEL:
		label_block(f, b->head, b->text);
		break;
	case APX_RB_SEV: {
		int col = (int)(b->indent + strlen(b->head) + strlen(sev_word(b->sev)));

		fprintf(f, "%*s%s", (int)b->indent, "", b->head);
		sev_span(o, b);
		if (col < (int)(b->indent + strlen(b->head) + b->sevpad))
			col = (int)(b->indent + strlen(b->head) + b->sevpad);
		fputs(b->mid ? b->mid : "", f);
		col += (int)strlen(b->mid ? b->mid : "");
		if (b->windent)
			apx_text_wrap(f, col, (int)b->windent, b->text);
		else
			fprintf(f, "%s\n", b->text);
		break;
	}
	}
}

void apx_report_emit_text_section(const struct apx_text_out *o, const struct apx_rdoc *d,
				  unsigned s)
{
	const struct apx_rsection *sec;

	if (s >= APX_SEC__COUNT || !d->sec[s].present)
		return;
	sec = &d->sec[s];
	if (sec->text_untitled)
		return;
	apx_text_heading_to(o, sec->text_title ? sec->text_title
				: sec->title ? sec->title : apx_report_section_title(s));
	for (size_t i = 0; i < sec->nblk; i++)
		blk(o, &sec->blk[i]);
}

int apx_report_emit_text(const struct apx_text_out *o, const struct apx_rdoc *d)
{
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		apx_report_emit_text_section(o, d, s);
	return ferror(o->f) ? -5 : 0;
}
