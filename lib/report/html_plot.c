/*
 * html_plot.c - the SVG plots of the HTML report (html.h): a table of the report document
 * drawn as its plot hint says (doc.h, enum apx_plot): bars, a line (or several) over time, a
 * log-log scatter, stacked bars, or a timeline of boxes in lanes. Axis labels are formatted by
 * the columns' units; labels from the trace are escaped. Called by emit_html.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/html.h"

#include "base/banned.h"

#define PW 960			/* plot width */
#define LANES_MAX 16
#define CATS 6

static const char *const palette[CATS] = { "#3b82c4", "#e0a020", "#3aa676", "#d03b3b",
					   "#8a5cc2", "#5bb8c9" };
/* The stacked bars' parts (the idle causes: 10 today) each get a colour of their own. */
#define PARTS 12
#define LEGEND_PER_ROW 5	/* legend entries of 170 px a row: 110 + 5 x 170 < PW */
static const char *const part_colors[PARTS] = {
	"#3b82c4", "#e0a020", "#3aa676", "#d03b3b", "#8a5cc2", "#5bb8c9",
	"#c2185b", "#7c8c2a", "#f07c3c", "#5c6bc0", "#8d6e63", "#9e9e9e" };

static double num(const struct apx_rtable *t, size_t r, unsigned c)
{
	const struct apx_rcell *cell = apx_rtable_cell(t, r, c);

	return cell->na || !isfinite(cell->v) ? 0 : cell->v;
}

static void fig_open(FILE *out, const struct apx_rtable *t, int w, int h)
{
	fputs("<figure><figcaption>", out);
	apx_html_str(out, t->title);
	fprintf(out, "</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", w, h, w, h);
	apx_html_str(out, t->title);
	fputs("\">\n", out);
}

static void fig_close(FILE *out)
{
	fputs("</svg></figure>\n", out);
}

/* At most max bytes of a text cell, not cut inside a UTF-8 character. */
static void label(FILE *out, const struct apx_rtable *t, size_t r, unsigned c, size_t max)
{
	const struct apx_rcell *cell = apx_rtable_cell(t, r, c);
	char buf[64];
	size_t n;

	if (t->col[c].unit != APX_UNIT_TEXT) {
		apx_html_str(out, apx_rcell_fmt(buf, sizeof(buf), t, r, c));
		return;
	}
	if (cell->na || !cell->s)
		return;
	n = cell->len;
	if (n > max) {
		n = max;
		while (n && ((unsigned char)cell->s[n] & 0xc0) == 0x80)
			n--;
	}
	apx_html_text(out, cell->s, n);
	if (n < cell->len)
		fputs("&#8230;", out);
}

static void tick(FILE *out, unsigned unit, double v, double x, double y, const char *anchor)
{
	char buf[64];

	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>\n", x, y, anchor,
		apx_unit_fmt(buf, sizeof(buf), unit, v));
}

static void bars(FILE *out, const struct apx_rtable *t)
{
	const int lw = 380, bh = 20, h = (int)t->nrows * (bh + 4) + 12;
	double max = 0;

	for (size_t r = 0; r < t->nrows; r++)
		max = fmax(max, num(t, r, t->plot_y));
	if (!t->nrows || max <= 0)
		return;
	fig_open(out, t, PW, h);
	for (size_t r = 0; r < t->nrows; r++) {
		double v = num(t, r, t->plot_y), y = 6 + (double)r * (bh + 4);
		double w = (PW - lw - 110) * v / max;
		char buf[64];

		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\"><title>", lw - 6, y + 14);
		label(out, t, r, t->plot_x, 4096);
		fputs("</title>", out);
		label(out, t, r, t->plot_x, 58);
		fprintf(out, "</text><rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
			"fill=\"%s\"/>", lw, y, w > 1 ? w : 1, bh, palette[0]);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lw + w + 6, y + 14,
			apx_unit_fmt(buf, sizeof(buf), t->col[t->plot_y].unit, v));
	}
	fig_close(out);
}

struct frame {
	double x0, x1, y0, y1;		/* data ranges */
	int left, top, w, h;		/* the plotting area */
	int logx, logy;
};

static double fx(const struct frame *f, double v)
{
	double a = f->logx ? log10(v > 0 ? v : 1) : v;

	return f->left + (f->x1 > f->x0 ? (a - f->x0) / (f->x1 - f->x0) : 0.5) * f->w;
}

static double fy(const struct frame *f, double v)
{
	double a = f->logy ? log10(v > 0 ? v : 1) : v;

	return f->top + f->h - (f->y1 > f->y0 ? (a - f->y0) / (f->y1 - f->y0) : 0.5) * f->h;
}

static void axes(FILE *out, const struct frame *f, unsigned xu, unsigned yu)
{
	fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		"<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", f->left,
		f->top + f->h, f->left + f->w, f->top + f->h, f->left, f->top, f->left, f->top + f->h);
	for (int i = 0; i <= 4; i++) {
		double xv = f->x0 + (f->x1 - f->x0) * i / 4, yv = f->y0 + (f->y1 - f->y0) * i / 4;
		double y = f->top + f->h - (double)f->h * i / 4;

		fprintf(out, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n",
			f->left + 1, y, f->left + f->w, y);
		tick(out, xu, f->logx ? pow(10, xv) : xv, f->left + (double)f->w * i / 4,
		     f->top + f->h + 16, i ? (i == 4 ? "end" : "middle") : "start");
		tick(out, yu, f->logy ? pow(10, yv) : yv, f->left - 6, y + 4, "end");
	}
}

static void line(FILE *out, const struct apx_rtable *t)
{
	struct frame f = { .left = 90, .top = 10, .w = PW - 110, .h = 200 };
	unsigned xu = t->col[t->plot_x].unit, yu = t->col[t->plot_y].unit;

	if (t->nrows < 2)
		return;
	f.x0 = f.x1 = num(t, 0, t->plot_x);
	for (size_t r = 0; r < t->nrows; r++) {
		f.x0 = fmin(f.x0, num(t, r, t->plot_x));
		f.x1 = fmax(f.x1, num(t, r, t->plot_x));
		f.y1 = fmax(f.y1, num(t, r, t->plot_y));
	}
	if (yu == APX_UNIT_PCT)
		f.y1 = 100;
	if (f.y1 <= 0)
		f.y1 = 1;
	fig_open(out, t, PW, 240);
	axes(out, &f, xu, yu);
	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		palette[0]);
	for (size_t r = 0; r < t->nrows; r++)
		fprintf(out, "%s%.1f,%.1f", r ? " " : "", fx(&f, num(t, r, t->plot_x)),
			fy(&f, num(t, r, t->plot_y)));
	fputs("\"/>\n", out);
	fig_close(out);
}

/* Columns plot_y..ncols-1 over plot_x, a line and a legend entry each (same unit). */
static void lines(FILE *out, const struct apx_rtable *t)
{
	struct frame f = { .left = 90, .top = 10, .w = PW - 110, .h = 200 };
	unsigned xu = t->col[t->plot_x].unit, yu = t->col[t->plot_y].unit;

	if (t->nrows < 2)
		return;
	f.x0 = f.x1 = num(t, 0, t->plot_x);
	for (size_t r = 0; r < t->nrows; r++) {
		f.x0 = fmin(f.x0, num(t, r, t->plot_x));
		f.x1 = fmax(f.x1, num(t, r, t->plot_x));
		for (unsigned c = t->plot_y; c < t->ncols; c++)
			f.y1 = fmax(f.y1, num(t, r, c));
	}
	if (f.y1 <= 0)
		f.y1 = 1;
	fig_open(out, t, PW, 260);
	axes(out, &f, xu, yu);
	for (unsigned c = t->plot_y; c < t->ncols; c++) {
		unsigned k = (c - t->plot_y) % CATS;
		int first = 1;

		fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
			palette[k]);
		for (size_t r = 0; r < t->nrows; r++) {
			if (apx_rtable_cell(t, r, c)->na)
				continue;
			fprintf(out, "%s%.1f,%.1f", first ? "" : " ", fx(&f, num(t, r, t->plot_x)),
				fy(&f, num(t, r, c)));
			first = 0;
		}
		fputs("\"/>\n", out);
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">", f.left + 10 + (int)k * 180, 242, palette[k],
			f.left + 24 + (int)k * 180, 251);
		apx_html_str(out, t->col[c].title);
		fputs("</text>\n", out);
	}
	fig_close(out);
}

static int same_text(const struct apx_rcell *a, const struct apx_rcell *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->s, b->s, a->len));
}

/* The category of a cell: its index among cats (added when new and there is room), CATS
 * when there is none. */
static int category(const struct apx_rcell **cats, unsigned *ncats, const struct apx_rcell *c)
{
	for (unsigned k = 0; k < *ncats; k++)
		if (same_text(cats[k], c))
			return (int)k;
	if (*ncats == CATS)
		return CATS;
	cats[*ncats] = c;
	return (int)(*ncats)++;
}

static void scatter(FILE *out, const struct apx_rtable *t)
{
	struct frame f = { .left = 90, .top = 10, .w = PW - 110, .h = 220, .logx = 1, .logy = 1 };
	unsigned cat_col = t->ncols, shown[CATS] = { 0 }, ncats = 0;
	const struct apx_rcell *cats[CATS];
	int first = 1;

	for (unsigned c = t->plot_y + 1; c < t->ncols && cat_col == t->ncols; c++)
		if (t->col[c].unit == APX_UNIT_TEXT)
			cat_col = c;
	for (size_t r = 0; r < t->nrows; r++) {
		double x = num(t, r, t->plot_x), y = num(t, r, t->plot_y);

		if (x <= 0 || y <= 0)
			continue;
		if (first) {
			f.x0 = f.x1 = log10(x);
			f.y0 = f.y1 = log10(y);
			first = 0;
		}
		f.x0 = fmin(f.x0, log10(x));
		f.x1 = fmax(f.x1, log10(x));
		f.y0 = fmin(f.y0, log10(y));
		f.y1 = fmax(f.y1, log10(y));
	}
	if (first)
		return;
	f.x0 -= 0.1, f.x1 += 0.1, f.y0 -= 0.1, f.y1 += 0.1;
	fig_open(out, t, PW, 290);
	axes(out, &f, t->col[t->plot_x].unit, t->col[t->plot_y].unit);
	for (size_t r = 0; r < t->nrows; r++) {
		double x = num(t, r, t->plot_x), y = num(t, r, t->plot_y);
		int k = cat_col < t->ncols ? category(cats, &ncats, apx_rtable_cell(t, r, cat_col)) : 0;

		if (x <= 0 || y <= 0)
			continue;
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\" "
			"fill-opacity=\"0.6\"/>\n", fx(&f, x), fy(&f, y), k < CATS ? palette[k] : "#999");
		if (k < CATS && !shown[k] && cat_col < t->ncols) {
			shown[k] = 1;
			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">", f.left + 10 + 120 * k, 262, palette[k],
				f.left + 24 + 120 * k, 271);
			label(out, t, r, cat_col, 16);
			fputs("</text>\n", out);
		}
	}
	fig_close(out);
}

static void stacked(FILE *out, const struct apx_rtable *t)
{
	const int nparts = t->ncols > t->plot_y ? (int)(t->ncols - t->plot_y) : 0;
	const int rows = (nparts + LEGEND_PER_ROW - 1) / LEGEND_PER_ROW;
	const int lw = 110, bh = 24, bars = (int)t->nrows * (bh + 8);
	const int h = bars + 22 + 18 * (rows ? rows : 1);
	double max = 0;

	for (size_t r = 0; r < t->nrows; r++) {
		double sum = 0;

		for (unsigned c = t->plot_y; c < t->ncols; c++)
			sum += num(t, r, c);
		max = fmax(max, sum);
	}
	if (!t->nrows || max <= 0)
		return;
	fig_open(out, t, PW, h);
	for (size_t r = 0; r < t->nrows; r++) {
		double x = lw, y = 6 + (double)r * (bh + 8), sum = 0;
		char buf[64];

		fputs("<text x=\"4\" y=\"", out);
		fprintf(out, "%.1f\">", y + 16);
		apx_html_str(out, t->col[t->plot_x].title);
		fputc(' ', out);
		label(out, t, r, t->plot_x, 20);
		fputs("</text>", out);
		for (unsigned c = t->plot_y; c < t->ncols; c++) {
			double v = num(t, r, c), w = (PW - lw - 120) * v / max;

			sum += v;
			if (w <= 0)
				continue;
			fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
				"<title>", x, y, w, bh, part_colors[(c - t->plot_y) % PARTS]);
			apx_html_str(out, t->col[c].title);
			fprintf(out, ": %s</title></rect>", apx_unit_fmt(buf, sizeof(buf), t->col[c].unit, v));
			x += w;
		}
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 6, y + 16,
			apx_unit_fmt(buf, sizeof(buf), t->col[t->plot_y].unit, sum));
	}
	for (unsigned c = t->plot_y; c < t->ncols; c++) {	/* the legend, wrapped */
		int k = (int)(c - t->plot_y), col = k % LEGEND_PER_ROW, y = bars + 14 + 18 * (k / LEGEND_PER_ROW);

		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">", lw + 170 * col, y, part_colors[k % PARTS],
			lw + 14 + 170 * col, y + 9);
		apx_html_str(out, t->col[c].title);
		fputs("</text>\n", out);
	}
	fig_close(out);
}

static void timeline(FILE *out, const struct apx_rtable *t)
{
	const struct apx_rcell *lanes[LANES_MAX];
	unsigned nl = 0, sc = t->plot_y, dc = t->plot_y + 1, nc = t->plot_y + 2;
	const int lw = 190, lh = 22;
	double end = 0;
	struct frame f = { .left = lw, .top = 6, .w = PW - lw - 20 };

	if (!t->nrows || dc >= t->ncols)
		return;
	for (size_t r = 0; r < t->nrows; r++) {
		const struct apx_rcell *c = apx_rtable_cell(t, r, t->plot_x);
		unsigned k = 0;

		while (k < nl && !same_text(lanes[k], c))
			k++;
		if (k == nl && nl < LANES_MAX)
			lanes[nl++] = c;
		end = fmax(end, num(t, r, sc) + num(t, r, dc));
	}
	f.x1 = end > 0 ? end : 1;
	f.h = (int)nl * lh;
	fig_open(out, t, PW, f.h + 30);
	for (unsigned k = 0; k < nl; k++) {
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", lw - 6,
			f.top + (int)k * lh + 15);
		apx_html_text(out, lanes[k]->s, lanes[k]->len);
		fputs("</text>\n", out);
	}
	for (size_t r = 0; r < t->nrows; r++) {
		const struct apx_rcell *c = apx_rtable_cell(t, r, t->plot_x);
		const struct apx_rcell *nm = apx_rtable_cell(t, r, nc < t->ncols ? nc : 0);
		unsigned k = 0, hash = 5381;
		double x = fx(&f, num(t, r, sc)), w = fx(&f, num(t, r, sc) + num(t, r, dc)) - x;
		char buf[64];

		while (k < nl && !same_text(lanes[k], c))
			k++;
		if (k == nl)
			continue;	/* past LANES_MAX lanes */
		for (size_t i = 0; nc < t->ncols && i < nm->len; i++)
			hash = hash * 33 + (unsigned char)nm->s[i];
		fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>",
			x, f.top + (int)k * lh + 2, w > 0.5 ? w : 0.5, lh - 4, palette[hash % CATS]);
		if (nc < t->ncols)
			apx_html_text(out, nm->s, nm->len);
		fprintf(out, " (%s)</title></rect>\n",
			apx_unit_fmt(buf, sizeof(buf), t->col[dc].unit, num(t, r, dc)));
	}
	for (int i = 0; i <= 4; i++)
		tick(out, t->col[sc].unit, f.x1 * i / 4, lw + (double)f.w * i / 4, f.h + 24,
		     i ? (i == 4 ? "end" : "middle") : "start");
	fig_close(out);
}

void apx_html_plot(FILE *out, const struct apx_rtable *t)
{
	if (t->plot_x >= t->ncols || t->plot_y >= t->ncols)
		return;
	switch (t->plot) {
	case APX_PLOT_BARS: bars(out, t); break;
	case APX_PLOT_LINE: line(out, t); break;
	case APX_PLOT_SCATTER: scatter(out, t); break;
	case APX_PLOT_STACKED: stacked(out, t); break;
	case APX_PLOT_TIMELINE: timeline(out, t); break;
	case APX_PLOT_LINES: lines(out, t); break;
	default: break;
	}
}
