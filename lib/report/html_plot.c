/*
 * html_plot.c - the SVG plots of the HTML report (html.h): a table of the report document
 * drawn as its plot hint says (doc.h, enum apx_plot): bars, a line (or several) over time, a
 * log-log scatter, stacked bars, or a timeline of boxes in lanes. Axis ticks sit at round
 * steps (1, 2 or 5 x 10^k; decades on log scales) and read with SI prefixes in the columns'
 * units ("2.5 TB/s", "500 MB", "1.5 ms"). A time plot spans the page's one time range; its
 * line breaks where samples are missing for longer than GAP_PERIODS sampling periods, and a
 * level in bytes (memory in use) is drawn as steps held to the end of the range. Names from
 * the trace are shown short (apx_html_short) with the whole name as a tooltip, and escaped.
 * Called by emit_html.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"

#include "base/banned.h"

#define PW 960			/* plot width */
#define LANES_MAX 16
#define CATS 6
#define GAP_PERIODS 3		/* a gap in a line: samples missing for this many periods */

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

/* A name shown short in an SVG <text> (apx_html_short), the whole name as its <title>. */
static void svg_name(FILE *out, const struct apx_rcell *c, size_t max)
{
	size_t b, n;
	int cut;

	if (c->na || !c->s)
		return;
	n = apx_html_short(c->s, c->len, max, &b, &cut);
	if (n != c->len) {
		fputs("<title>", out);
		apx_html_text(out, c->s, c->len);
		fputs("</title>", out);
	}
	apx_html_text(out, c->s + b, n);
	if (cut)
		fputs("&#8230;", out);
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

		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", lw - 6, y + 14);
		if (t->col[t->plot_x].unit == APX_UNIT_TEXT)
			svg_name(out, apx_rtable_cell(t, r, t->plot_x), 58);
		else
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

/* v in the column's unit with an SI prefix chosen by mag (the axis's largest value, so that all
 * ticks of an axis share it) and the decimals that step needs: "1.5 ms", "2 TB/s", "40%". */
static const char *axis_fmt(char *buf, size_t cap, unsigned unit, double v, double mag,
			    double step)
{
	static const double scale[] = { 1e15, 1e12, 1e9, 1e6, 1e3, 1 };
	static const char *const si[] = { "P", "T", "G", "M", "k", "" };
	static const double tscale[] = { 1e9, 1e6, 1e3, 1 };
	static const char *const tname[] = { "s", "ms", "\xc2\xb5s", "ns" };
	const char *pre = "", *suffix = "";
	double sc = 1;
	int dec;

	mag = fabs(mag);
	if (unit == APX_UNIT_NS) {
		unsigned i = 0;

		while (i < 3 && mag < tscale[i])
			i++;
		sc = tscale[i];
		pre = tname[i];
	} else if (unit == APX_UNIT_PCT) {
		pre = "%";
	} else {
		unsigned i = 0;

		while (i < 5 && mag < scale[i])
			i++;
		sc = scale[i];
		pre = si[i];
		suffix = unit == APX_UNIT_BYTES ? "B" : unit == APX_UNIT_BYTES_PER_S ? "B/s" : "";
	}
	dec = step > 0 ? (int)ceil(-log10(step / sc) - 1e-9) : 0;
	dec = dec < 0 ? 0 : dec > 6 ? 6 : dec;
	if (fabs(v / sc) < 0.5 * pow(10, -dec))
		v = 0, dec = 0;	/* "0 s", not "-0.0 s" */
	snprintf(buf, cap, "%.*f%s%s%s", dec, v / sc,
		 unit == APX_UNIT_PCT || (!pre[0] && !suffix[0]) ? "" : " ", pre, suffix);
	return buf;
}

/* A round step (1, 2 or 5 x 10^k) that cuts range in about n. */
static double nice_step(double range, int n)
{
	double raw = range / n, p, m;

	if (!(raw > 0) || !isfinite(raw))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* A linear y range from 0 to a round value above max (100 for a percentage). */
static void round_y(struct frame *f, unsigned unit)
{
	if (unit == APX_UNIT_PCT && f->y1 <= 100) {
		f->y1 = 100;
		return;
	}
	if (f->y1 <= 0)
		f->y1 = 1;
	f->y1 = ceil(f->y1 / nice_step(f->y1, 5) - 1e-9) * nice_step(f->y1, 5);
}

static const char *anchor_at(const struct frame *f, double x)
{
	return x < f->left + 20 ? "start" : x > f->left + f->w - 30 ? "end" : "middle";
}

/* One tick of an axis at v: a grid line and its label left of the y axis, or its label under
 * the x axis. */
static void tick_at(FILE *out, const struct frame *f, int yaxis, unsigned unit, double v,
		    double mag, double step)
{
	char buf[64];
	const char *label = axis_fmt(buf, sizeof(buf), unit, v, mag, step);

	if (yaxis) {
		double y = fy(f, v);

		fprintf(out, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n",
			f->left + 1, y, f->left + f->w, y);
		fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			f->left - 6, y + 4, label);
	} else {
		double x = fx(f, v);

		fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
			x, f->top + f->h + 16, anchor_at(f, x), label);
	}
}

/* The ticks of one axis: decades on a log scale (and 2 and 5 times them when it spans less
 * than two), else multiples of a round step, all with the SI prefix of the largest. */
static void ticks(FILE *out, const struct frame *f, int yaxis, unsigned unit)
{
	double lo = yaxis ? f->y0 : f->x0, hi = yaxis ? f->y1 : f->x1, step, mag;

	if (yaxis ? f->logy : f->logx) {
		int few = floor(hi) - ceil(lo) < 2;

		for (double e = floor(lo); e <= hi; e++)
			for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {	/* 1, 2, 5 */
				double v = pow(10, e) * m;

				if ((m == 1 || few) && log10(v) >= lo && log10(v) <= hi)
					tick_at(out, f, yaxis, unit, v, v, v);
			}
		return;
	}
	step = nice_step(hi - lo, yaxis ? 5 : 6);
	mag = fmax(fabs(lo), fabs(floor(hi / step + 1e-9) * step));
	for (double v = ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
		tick_at(out, f, yaxis, unit, v, mag, step);
}

static void axes(FILE *out, const struct frame *f, unsigned xu, unsigned yu)
{
	fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		"<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", f->left,
		f->top + f->h, f->left + f->w, f->top + f->h, f->left, f->top, f->left, f->top + f->h);
	ticks(out, f, 1, yu);
	ticks(out, f, 0, xu);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The sampling period of column c: the median distance between its successive points. */
static double period(const struct apx_rtable *t, unsigned c)
{
	double *d = malloc((t->nrows ? t->nrows : 1) * sizeof(*d)), prev = 0, p;
	size_t n = 0;
	int have = 0;

	if (!d)
		return 0;
	for (size_t r = 0; r < t->nrows; r++) {
		double x;

		if (apx_rtable_cell(t, r, c)->na)
			continue;
		x = num(t, r, t->plot_x);
		if (have && x > prev)
			d[n++] = x - prev;
		prev = x;
		have = 1;
	}
	if (n)
		qsort(d, n, sizeof(*d), cmp_double);
	p = n ? d[n / 2] : 0;
	free(d);
	return p;
}

/* Column c over plot_x as a line: a new <polyline> after a gap of more than GAP_PERIODS
 * periods (counted from the end of a point that lasts, a step; a lone point as a dot), or,
 * for a level (level != 0), steps that hold each value until the next sample and the last
 * one to the end of the x range. */
static void series(FILE *out, const struct frame *f, const struct apx_rtable *t, unsigned c,
		   const char *colour, int level)
{
	double gap = GAP_PERIODS * period(t, c), px = 0, py = 0, pend = 0, x0 = 0, y0 = 0;
	unsigned dur = t->ncols;	/* a point that lasts (a step): the gap is after its end */
	int open = 0, npts = 0;

	for (unsigned k = 0; k < t->ncols; k++)
		if (!strcmp(t->col[k].key, "duration_ns"))
			dur = k;

	for (size_t r = 0; r <= t->nrows; r++) {
		double x = 0, y = 0;
		int end = r == t->nrows;

		if (!end) {
			if (apx_rtable_cell(t, r, c)->na)
				continue;
			x = num(t, r, t->plot_x);
			y = num(t, r, c);
		}
		if (open && (end || (!level && gap > 0 && x - pend > gap))) {
			if (level && f->x1 > px)
				fprintf(out, " %.1f,%.1f", fx(f, f->x1), fy(f, py)), npts++;
			fputs("\"/>\n", out);
			if (npts == 1)
				fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\" fill=\"%s\"/>\n",
					x0, y0, colour);
			open = 0;
		}
		if (end)
			break;
		if (!open) {
			fprintf(out, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
				"stroke-width=\"1.5\" points=\"", colour);
			open = 1;
			npts = 0;
			x0 = fx(f, x);
			y0 = fy(f, y);
		} else if (level) {
			fprintf(out, " %.1f,%.1f", fx(f, x), fy(f, py));
		}
		fprintf(out, "%s%.1f,%.1f", npts ? " " : "", fx(f, x), fy(f, y));
		npts++;
		px = x;
		py = y;
		pend = x + (dur < t->ncols ? num(t, r, dur) : 0);
	}
}

/* The x range of a plot over time: the page's (0 .. span_ns) when x is in ns, else the data's. */
static void x_range(struct frame *f, const struct apx_rtable *t, double span_ns)
{
	f->x0 = f->x1 = t->nrows ? num(t, 0, t->plot_x) : 0;
	for (size_t r = 0; r < t->nrows; r++) {
		f->x0 = fmin(f->x0, num(t, r, t->plot_x));
		f->x1 = fmax(f->x1, num(t, r, t->plot_x));
	}
	if (t->col[t->plot_x].unit == APX_UNIT_NS && span_ns > 0) {
		f->x0 = 0;
		f->x1 = fmax(f->x1, span_ns);
	}
}

static void line(FILE *out, const struct apx_rtable *t, double span_ns)
{
	struct frame f = { .left = 90, .top = 10, .w = PW - 110, .h = 200 };
	unsigned xu = t->col[t->plot_x].unit, yu = t->col[t->plot_y].unit;

	if (t->nrows < 2)
		return;
	x_range(&f, t, span_ns);
	for (size_t r = 0; r < t->nrows; r++)
		f.y1 = fmax(f.y1, num(t, r, t->plot_y));
	round_y(&f, yu);
	fig_open(out, t, PW, 240);
	axes(out, &f, xu, yu);
	series(out, &f, t, t->plot_y, palette[0], yu == APX_UNIT_BYTES);
	fig_close(out);
}

/* Columns plot_y..ncols-1 over plot_x, a line and a legend entry each (same unit). */
static void lines(FILE *out, const struct apx_rtable *t, double span_ns)
{
	struct frame f = { .left = 90, .top = 10, .w = PW - 110, .h = 200 };
	unsigned xu = t->col[t->plot_x].unit, yu = t->col[t->plot_y].unit;

	if (t->nrows < 2)
		return;
	x_range(&f, t, span_ns);
	for (size_t r = 0; r < t->nrows; r++)
		for (unsigned c = t->plot_y; c < t->ncols; c++)
			f.y1 = fmax(f.y1, num(t, r, c));
	round_y(&f, yu);
	fig_open(out, t, PW, 260);
	axes(out, &f, xu, yu);
	for (unsigned c = t->plot_y; c < t->ncols; c++) {
		unsigned k = (c - t->plot_y) % CATS;

		series(out, &f, t, c, palette[k], yu == APX_UNIT_BYTES);
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
		if (nc < t->ncols) {	/* "base name (duration)", then the whole name */
			int cut;
			size_t b, n = apx_html_short(nm->s, nm->len, APX_HTML_NAME_MAX, &b, &cut);

			apx_html_text(out, nm->s + b, n);
			if (cut)
				fputs("&#8230;", out);
			fprintf(out, " (%s)", apx_unit_fmt(buf, sizeof(buf), t->col[dc].unit,
							   num(t, r, dc)));
			if (n != nm->len) {
				fputc('\n', out);
				apx_html_text(out, nm->s, nm->len);
			}
		} else {
			fprintf(out, "(%s)", apx_unit_fmt(buf, sizeof(buf), t->col[dc].unit, num(t, r, dc)));
		}
		fputs("</title></rect>\n", out);
	}
	ticks(out, &f, 0, t->col[sc].unit);
	fig_close(out);
}

void apx_html_plot(FILE *out, const struct apx_rtable *t, double span_ns)
{
	if (t->plot_x >= t->ncols || t->plot_y >= t->ncols)
		return;
	switch (t->plot) {
	case APX_PLOT_BARS: bars(out, t); break;
	case APX_PLOT_LINE: line(out, t, span_ns); break;
	case APX_PLOT_SCATTER: scatter(out, t); break;
	case APX_PLOT_STACKED: stacked(out, t); break;
	case APX_PLOT_TIMELINE: timeline(out, t); break;
	case APX_PLOT_LINES: lines(out, t, span_ns); break;
	default: break;
	}
}
