/*
 * html_flame.c - the HTML report's flame graphs (flame.h) as inline SVG icicles: the root
 * on top, each node a box as wide as its share of the root's value, its children under it,
 * largest first from the left. Boxes narrower than MIN_W pixels are merged into one box per
 * parent ("N smaller"), and rows below MAX_ROWS are not drawn (their parents' boxes hold
 * them), so the page stays small whatever the trace. Colours: the program's own frames warm,
 * library frames muted grey-blue; in the host graph, waiting subtrees blue, running warm,
 * other grey; a frame's hue varies with its function name (a hash: the same name, the same
 * colour). Labels are cut to their box (with an ellipsis) and the whole text is in each box's
 * <title> (shown on hover), escaped by apx_html_text. No script. Called by emit_html.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/store.h"
#include "report/flame.h"
#include "report/html.h"

#include "base/banned.h"

#define FW 1100.0		/* the graph's width: the section's at the page's widest */
#define ROW 18			/* a row's height */
#define MAX_ROWS 60
#define MIN_W 1.5		/* narrower boxes are merged */
#define CHAR_W 6.6		/* about one character of the 11px font */

static uint32_t name_hash(const struct apx_rflame *f, const struct apx_rflame_node *n)
{
	struct apx_es_text t = n->func != UINT32_MAX ? apx_store_string(f->st, n->func)
						      : (struct apx_es_text){ "", 0 };
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < t.len; i++)
		h = (h ^ (uint8_t)t.p[i]) * 16777619u;
	return h;
}

/* fill colour as hsl() text */
static void colour(const struct apx_rflame *f, const struct apx_rflame_node *n, char *buf,
		   size_t cap)
{
	uint32_t h = name_hash(f, n);
	int lib = n->kind == APX_FK_LIBRARY;

	switch (n->kind) {
	case APX_FK_ROOT:
	case APX_FK_NONE:
	case APX_FK_THREAD:
		snprintf(buf, cap, "hsl(220,8%%,%d%%)", n->kind == APX_FK_ROOT ? 78 : 84);
		return;
	default:
		break;
	}
	if (n->state == APX_FS_WAITING)		/* host, waiting: blues */
		snprintf(buf, cap, "hsl(%u,%d%%,%u%%)", 200 + h % 30, lib ? 18 : 55,
			 lib ? 74 + h / 32 % 8 : 62 + h / 32 % 12);
	else if (n->state == APX_FS_OTHER)
		snprintf(buf, cap, "hsl(%u,8%%,%u%%)", 40 + h % 40, 70 + h / 32 % 12);
	else if (lib)				/* library frames: muted */
		snprintf(buf, cap, "hsl(%u,14%%,%u%%)", 200 + h % 40, 72 + h / 32 % 10);
	else					/* the program's own: warm */
		snprintf(buf, cap, "hsl(%u,%u%%,%u%%)", 12 + h % 38, 70 + h / 64 % 20,
			 58 + h / 32 % 12);
}

static void label_text(FILE *out, const char *name, double w)
{
	size_t len = strlen(name), fit;

	if (w < 3 * CHAR_W)
		return;
	fit = (size_t)((w - 6) / CHAR_W);
	if (len > fit) {
		size_t n = fit > 1 ? fit - 1 : 0;

		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
		apx_html_text(out, name, n);
		fputs("&#8230;", out);
		return;
	}
	apx_html_text(out, name, len);
}

static void box(FILE *out, const struct apx_rflame *f, double x, double w, unsigned row,
		const char *name, const char *fill, uint64_t value, const char *more)
{
	char b[64];
	double y = row * ROW;

	fputs("<g><title>", out);
	apx_html_text(out, name, strlen(name));
	if (more && more[0]) {
		fputs("\n", out);
		apx_html_text(out, more, strlen(more));
	}
	fprintf(out, "\n%s (%.2f%%)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
		"height=\"%d\" fill=\"%s\" rx=\"2\"/>", apx_unit_fmt(b, sizeof(b), APX_UNIT_NS,
								 (double)value),
		100.0 * (double)value / (double)f->n[0].value, x, y, w > 0.6 ? w - 0.6 : w, ROW - 1,
		fill);
	if (w >= 3 * CHAR_W) {
		fprintf(out, "<text x=\"%.1f\" y=\"%.0f\">", x + 3, y + ROW - 5);
		label_text(out, name, w);
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
}

/* A node and, recursively, its children: x, width in pixels. */
static void node(FILE *out, const struct apx_rflame *f, uint32_t i, double x, double w,
		 unsigned row)
{
	const struct apx_rflame_node *n = &f->n[i];
	char name[800], fill[48], more[800] = "";
	double scale = FW / (double)f->n[0].value, cx = x;
	uint64_t small = 0;
	unsigned nsmall = 0;

	apx_rflame_name(f, n, name, sizeof(name));
	if (n->kind == APX_FK_FRAME || n->kind == APX_FK_LIBRARY) {
		struct apx_es_text file = apx_store_string(f->st, n->file);

		snprintf(more, sizeof(more), "%.*s:%" PRIu32 "%s", (int)(file.len > 600 ? 600 : file.len),
			 file.p, n->line, n->kind == APX_FK_LIBRARY ? " (library)" : "");
	}
	colour(f, n, fill, sizeof(fill));
	box(out, f, x, w, row, name, fill, n->value, more);
	if (row + 1 >= MAX_ROWS)
		return;
	for (uint32_t k = 0; k < n->nkids; k++) {
		uint32_t c = f->kid[n->kids + k];
		double cw = (double)f->n[c].value * scale;

		if (cw < MIN_W) {	/* sorted largest first: the rest are smaller still */
			small += f->n[c].value;
			nsmall++;
			continue;
		}
		node(out, f, c, cx, cw, row + 1);
		cx += cw;
	}
	if (nsmall && (double)small * scale >= 0.5) {
		char label[64];

		snprintf(label, sizeof(label), "%u smaller", nsmall);
		box(out, f, cx, (double)small * scale, row + 1, label, "hsl(220,6%,88%)", small,
		    "merged: each under a pixel and a half wide");
	}
}

/* rows the drawing takes */
static unsigned rows(const struct apx_rflame *f, uint32_t i, unsigned row)
{
	const struct apx_rflame_node *n = &f->n[i];
	double scale = FW / (double)f->n[0].value;
	unsigned best = row + 1;

	if (row + 1 >= MAX_ROWS)
		return MAX_ROWS;
	for (uint32_t k = 0; k < n->nkids; k++) {
		uint32_t c = f->kid[n->kids + k];
		unsigned r;

		if ((double)f->n[c].value * scale < MIN_W) {
			best = best > row + 2 ? best : row + 2;	/* the merged box */
			break;
		}
		r = rows(f, c, row + 1);
		if (r > best)
			best = r;
	}
	return best;
}

void apx_html_flame(FILE *out, const struct apx_rflame *f)
{
	unsigned h;
	char b[64];

	if (!f || !f->nn || !f->n[0].value)
		return;
	h = rows(f, 0, 0) * ROW + 2;
	fprintf(out, "<figure class=\"flame\" id=\"flame-%s\"><figcaption>", f->key);
	apx_html_str(out, f->title);
	fprintf(out, " &middot; %s in all</figcaption>\n", apx_unit_fmt(b, sizeof(b), APX_UNIT_NS,
								      (double)f->n[0].value));
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%u\" "
		"viewBox=\"0 0 %.0f %u\" role=\"img\" aria-label=\"", FW, h, FW, h);
	apx_html_str(out, f->title);
	fputs("\">\n", out);
	node(out, f, 0, 0, FW, 0);
	fputs("</svg>", out);
	fputs("<p class=\"note\">", out);
	if (!strcmp(f->key, "host"))
		fputs("Width: sampled time (each sample weighs its period). Under each thread: "
		      "running (warm colours), waiting (blue) and other samples, then the Python "
		      "stack, outermost frame first; library frames muted.", out);
	else
		fputs("Width: kernel time. Each kernel's duration under the Python stack that "
		      "launched it, outermost frame first; the program's own frames warm, library "
		      "frames (site-packages, the standard library) muted grey-blue.", out);
	fputs(" Hover a box for its full name, file and line.</p></figure>\n", out);
}
