/*
 * report_text.c - the terminal report of `apx report`, section by section: a section whose
 * text view the report document holds goes through lib/report/emit_text.c; the others (listed
 * in section_from_model(): start-up, idle) still render here from the model, until
 * the document holds their views. Fits 100 columns; colour only when asked (a terminal).
 * Called by report_formats.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hwcounters.h"
#include "cli/report.h"

#include "base/banned.h"

#define W APX_REPORT_W

struct out {
	FILE *f;
	const struct apx_report_opts *o;
};

/* Colour sequences are ours, not the trace's: they go straight to the terminal (o->color_out),
 * past the filter that escapes everything written to o->f (cmd_report.c). */
static void color(const struct out *o, const char *sgr)
{
	if (!o->o->color || !o->o->color_out)
		return;
	fflush(o->f);
	fputs(sgr, o->o->color_out);
}

static void reset(const struct out *o)
{
	color(o, "\033[0m");
}

static void sev_color(const struct out *o, int sev)
{
	color(o, sev == APX_SEV_CRITICAL ? "\033[1;31m" : sev == APX_SEV_WARNING ? "\033[1;33m"
										  : "\033[1;36m");
}

static void heading(const struct out *o, const char *title)
{
	fputc('\n', o->f);
	color(o, "\033[1m");
	fputs(title, o->f);
	reset(o);
	fputc('\n', o->f);
}

static const char *sev_name(int sev)
{
	return sev == APX_SEV_CRITICAL ? "CRITICAL" : sev == APX_SEV_WARNING ? "WARNING" : "INFO";
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* Print text indented under a label, one output line per text line, long lines wrapped at
 * a space so that nothing passes W columns. */
static void block(const struct out *o, const char *label, const char *text)
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
		fprintf(o->f, "    %-10s %s%.*s\n", first ? label : "", cut < len && !nl ? "" : "", cut, p);
		first = 0;
		p += cut;
		while (*p == ' ')
			p++;
		if (cut == len && nl)
			p++;
	}
}

static void finding_text(const struct out *o, const struct apx_finding *f, size_t rank)
{
	char b1[32];
	int col = snprintf(NULL, 0, "  [%zu] %s ", rank, sev_name(f->severity));

	fprintf(o->f, "\n  [%zu] ", rank);
	sev_color(o, f->severity);
	fputs(sev_name(f->severity), o->f);
	reset(o);
	fputc(' ', o->f);
	apx_text_wrap(o->f, col, 6, f->title);
	if (f->saving_estimated)
		fprintf(o->f, "    %-10s %s (%.1f%% of the run), confidence %d%%, rule %s\n",
			"saving", apx_fmt_ns(b1, sizeof(b1), f->saving_ns), f->saving_pct,
			f->confidence_pct, f->rule);
	else
		fprintf(o->f, "    %-10s not estimated (recorded by %.20s), confidence %d%%, rule "
			"%s\n", "saving", f->recorded_by ? f->recorded_by : "the producer",
			f->confidence_pct, f->rule);
	block(o, "model", f->model);
	block(o, "evidence", f->evidence);
	block(o, "fix", f->fix);
}

/* The work before the steady state, and its findings (issue 12: setup is setup). */
static void section_startup(const struct out *o, const struct apx_model *m,
			    const struct apx_findings *fd)
{
	const struct apx_an_timeline *g = &m->gpu;
	char b1[32], b2[32], b3[32];
	size_t rank = 0;

	heading(o, "Start-up (before the steady state)");
	if (!m->timelines.n) {
		fprintf(o->f, "  no GPU activity\n");
		return;
	}
	fprintf(o->f, "  GPU first activity to the steady state: %s, busy %s, idle %s\n",
		apx_fmt_ns(b1, sizeof(b1), (double)g->startup_ns),
		apx_fmt_ns(b2, sizeof(b2), (double)(g->startup_ns - (g->startup_idle_ns < g->startup_ns
									? g->startup_idle_ns
									: g->startup_ns))),
		apx_fmt_ns(b3, sizeof(b3), (double)g->startup_idle_ns));
	fprintf(o->f, "  %s\n", fd->startup_dominates
		? "start-up dominates the run (more GPU busy time than the steady state): its findings "
		  "are\n  ranked with the others"
		: "its findings rank under the steady state's (start-up does not dominate the run)");
	for (size_t i = 0; i < fd->n; i++)
		if (!apx_finding_in_main(fd, &fd->f[i]))
			finding_text(o, &fd->f[i], ++rank);
	if (!rank)
		fprintf(o->f, "  findings: none%s\n", fd->startup_dominates ? " apart from the ranked ones" : "");
}

static void section_idle(const struct out *o, const struct apx_model *m)
{
	char b1[32], b2[32], b3[32];

	heading(o, "GPU idle time (steady state, one cause per idle ns)");
	if (!m->timelines.n) {
		fprintf(o->f, "  no GPU activity\n");
		return;
	}
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *t = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);
		double span = (double)(t->last_ns - t->first_ns), win = (double)t->window_ns;
		uint64_t idle = 0;

		for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
			idle += t->idle_by_cause[c];
		fprintf(o->f, "  device %u: active span %s, busy %s (%.1f%%), idle %s (%.1f%%) in %" PRIu64
			      " gaps\n", t->device, apx_fmt_ns(b1, sizeof(b1), span),
			apx_fmt_ns(b2, sizeof(b2), (double)t->busy_ns), pct((double)t->busy_ns, span),
			apx_fmt_ns(b3, sizeof(b3), (double)t->idle_ns), pct((double)t->idle_ns, span), t->gaps);
		fprintf(o->f, "    steady state %s: idle %s (%.1f%%), %.0f%% of it explained\n",
			apx_fmt_ns(b1, sizeof(b1), win), apx_fmt_ns(b2, sizeof(b2), (double)idle),
			pct((double)idle, win),
			idle ? pct((double)(idle - t->idle_by_cause[APX_IDLE_UNKNOWN]), (double)idle) : 100.0);
		for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
			if (t->idle_by_cause[c] || c == APX_IDLE_UNKNOWN)
				fprintf(o->f, "      %-28s %10s %6.1f%% %8" PRIu64 " gaps\n",
					apx_idle_cause_name(c),
					apx_fmt_ns(b1, sizeof(b1), (double)t->idle_by_cause[c]),
					pct((double)t->idle_by_cause[c], win), t->gaps_by_cause[c]);
		fprintf(o->f, "    %-30s %10s   (first GPU activity to the steady state)\n",
			"start-up", apx_fmt_ns(b1, sizeof(b1), (double)t->startup_ns));
		fprintf(o->f, "    %-30s %10s\n", "  idle in it", apx_fmt_ns(b2, sizeof(b2),
									     (double)t->startup_idle_ns));
		fprintf(o->f, "    %-30s %10s   (the steady state to the last GPU activity)\n",
			"teardown", apx_fmt_ns(b1, sizeof(b1), (double)t->teardown_ns));
		fprintf(o->f, "    %-30s %10s   (start of the run to the first GPU activity)\n",
			"before first activity", apx_fmt_ns(b1, sizeof(b1), (double)t->before_ns));
		fprintf(o->f, "    %-30s %10s   (last GPU activity to the end of the run)\n",
			"after last activity", apx_fmt_ns(b1, sizeof(b1), (double)t->after_ns));
	}
}

/* The sections not yet in the document's text view (the start-up section and the idle
 * attribution came after the move), rendered from the model. */
static void section_from_model(const struct out *o, const struct apx_model *m,
			       const struct apx_findings *f, unsigned s)
{
	switch (s) {
	case APX_SEC_STARTUP:
		section_startup(o, m, f);
		break;
	case APX_SEC_IDLE:
		section_idle(o, m);
		break;
	}
}

void apx_report_text(FILE *out, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	struct out ctx = { out, o };
	struct apx_text_out t = { out, o->color, o->color_out };

	for (unsigned s = 0; s < APX_SEC__COUNT; s++) {
		if (!(o->sections & 1u << s))
			continue;
		if (d->sec[s].text_built)
			apx_report_emit_text_section(&t, d, s);
		else
			section_from_model(&ctx, d->m, d->fd, s);
	}
}
