/*
 * report_text.c - the terminal report of `apx report`, section by section: a section whose
 * text view the report document holds goes through lib/report/emit_text.c; the others (listed
 * in section_from_model(): summary, findings, start-up, idle, metrics, checks, "How this was
 * measured") still render here from the model, until their views say the same. Fits 100
 * columns; colour only when asked (a terminal). Called by report_formats.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* With several files: one line per process (the run's total is the summary above). */
static void processes(const struct out *o, const struct apx_model *m)
{
	char b1[32], b2[32], b3[32];

	if (m->nfiles < 2)
		return;
	fprintf(o->f, "\n  %-8s %9s %11s %8s %9s %10s  %s\n", "pid", "kernels", "kernel time",
		"copies", "copied", "copy time", "command");
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct apx_an_file *f = &m->files[i];

		fprintf(o->f, "  %-8" PRIu64 " %9" PRIu64 " %11s %8" PRIu64 " %9s %10s  %.32s\n", f->pid,
			f->kernels, apx_fmt_ns(b1, sizeof(b1), (double)f->kernel_ns), f->copies,
			apx_fmt_size(b2, sizeof(b2), (double)f->copy_bytes),
			apx_fmt_ns(b3, sizeof(b3), (double)f->copy_ns), f->argv);
	}
}

/* "steady state  100 steps (kernel sequence, 17 kernels a step), GPU busy 63% of a step
 *                3.99 ms a step (p95 5.32 ms); start-up 4.67 s, teardown 465.93 ms" */
static void steady_state_line(const struct out *o, const struct apx_model *m)
{
	const struct apx_an_steps *st = &m->steady;
	char how[96], b1[32], b2[32], b3[32], b4[32];

	if (st->source == APX_STEPS_NONE) {
		fprintf(o->f, "  %-18s no repeating step found: the numbers are for the whole run\n",
			"steady state");
		return;
	}
	if (st->source == APX_STEPS_KERNELS)
		snprintf(how, sizeof(how), "kernel sequence, %" PRIu64 " kernels a step", st->period);
	else
		snprintf(how, sizeof(how), "%s ranges \"%.40s\"",
			 st->source == APX_STEPS_PROFILER ? "torch.profiler" : "NVTX", st->name);
	fprintf(o->f, "  %-18s %" PRIu64 " steps (%s), GPU busy %.0f%% of a step\n", "steady state",
		st->count, how, st->busy_pct);
	fprintf(o->f, "  %-18s %s a step (p95 %s); start-up %s, teardown %s\n", "",
		apx_fmt_ns(b1, sizeof(b1), (double)st->median_ns),
		apx_fmt_ns(b2, sizeof(b2), (double)st->p95_ns),
		apx_fmt_ns(b3, sizeof(b3), (double)st->setup_ns),
		apx_fmt_ns(b4, sizeof(b4), (double)st->teardown_ns));
}

/* The steady window's idle time summed over devices (0 when the window is empty). */
static uint64_t steady_idle(const struct apx_model *m)
{
	uint64_t idle = 0;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += m->gpu.idle_by_cause[c];
	return idle;
}

/* "GPU idle           12% of the steady state (5.10 ms): 96% explained, largest launch overhead"
 * (the idle attribution, idle_attrib.c) */
static void steady_idle_line(const struct out *o, const struct apx_model *m)
{
	uint64_t idle = steady_idle(m), unk = m->gpu.idle_by_cause[APX_IDLE_UNKNOWN];
	unsigned top = APX_IDLE_UNKNOWN;
	char b1[32], b2[32];

	if (!m->gpu.window_ns)
		return;
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		if (c != APX_IDLE_UNKNOWN && m->gpu.idle_by_cause[c] > m->gpu.idle_by_cause[top])
			top = c;
	fprintf(o->f, "  %-18s %.0f%% of the steady state (%s", "GPU idle",
		pct((double)idle, (double)m->gpu.window_ns), apx_fmt_ns(b1, sizeof(b1), (double)idle));
	if (m->steady.count)	/* a median step's share of it */
		fprintf(o->f, ", %s a step", apx_fmt_ns(b2, sizeof(b2), (double)idle *
				(double)m->steady.median_ns / (double)m->gpu.window_ns));
	fprintf(o->f, "), %.0f%% of it explained\n",
		idle ? pct((double)(idle - unk), (double)idle) : 100.0);
	if (top == APX_IDLE_UNKNOWN && !unk)
		return;
	fprintf(o->f, "  %-18s ", "");
	if (top != APX_IDLE_UNKNOWN)
		fprintf(o->f, "largest cause: %s%s", apx_idle_cause_name(top), unk ? "; " : "");
	if (unk)
		fprintf(o->f, "unexplained: %s", apx_fmt_ns(b2, sizeof(b2), (double)unk));
	if (unk && m->steady.count)
		fprintf(o->f, " (%s a step)", apx_fmt_ns(b1, sizeof(b1), (double)unk *
				(double)m->steady.median_ns / (double)m->gpu.window_ns));
	fputc('\n', o->f);
}

static void section_summary(const struct out *o, const struct apx_model *m,
			    const struct apx_findings *fd)
{
	char b1[32], b2[32], b3[32], b4[32], head[96], cmd[150];
	uint64_t kern = m->gpu.kernel_busy_ns, copy = m->gpu.copy_busy_ns, busy = m->gpu.busy_ns;
	const struct apx_an_file *f0 = &m->files[0];

	heading(o, "Summary");
	snprintf(head, sizeof(head), "  %-18s %zu file%s; main process pid %" PRIu64 ": ", "trace",
		 m->nfiles, m->nfiles == 1 ? "" : "s", f0->pid);
	snprintf(cmd, sizeof(cmd), "%.*s%s", (int)sizeof(cmd) - 4, f0->argv[0] ? f0->argv : "n/a",
		 strlen(f0->argv) > sizeof(cmd) - 4 ? "..." : "");
	fputs(head, o->f);
	apx_text_wrap(o->f, (int)strlen(head), 21, cmd);
	fprintf(o->f, "  %-18s %s (first to last record), host %s\n", "wall time",
		apx_fmt_ns(b1, sizeof(b1), (double)m->wall_ns), f0->host[0] ? f0->host : "n/a");
	for (size_t i = 0; i < m->ndevices; i++) {
		const struct apx_an_device *d = &m->devices[i];

		if (d->known)
			fprintf(o->f, "  %-18s %u: %.32s, sm_%u%u, %u SMs, %s, L2 %s\n", i ? "" : "GPU",
				d->id, d->name, d->cc_major % 100, d->cc_minor % 100, d->sm_count % 100000,
				apx_fmt_size(b1, sizeof(b1), (double)d->mem_bytes),
				apx_fmt_size(b2, sizeof(b2), (double)d->l2_bytes));
	}
	for (size_t i = 0; i < m->nfiles; i++) {
		char pid[32];
		int room;

		if (!m->files[i].degraded[0])
			continue;
		/* "  not collected      pid N: " then what fits in 100 columns */
		snprintf(pid, sizeof(pid), "%" PRIu64, m->files[i].pid);
		room = 100 - 21 - 4 - (int)strlen(pid) - 2;
		fprintf(o->f, "  %-18s pid %s: %.*s\n", "not collected", pid, room > 0 ? room : 0,
			m->files[i].degraded);
	}
	if (m->no_gpu_trace) {
		/* nvperfd summaries only: the "GPU (observed)" line below says what was seen */
	} else if (!m->k.n && !m->copies.n) {
		int any_cuda = 0;

		for (size_t i = 0; i < m->nfiles; i++)
			any_cuda |= m->files[i].cuda_used == 1;
		fprintf(o->f, "  %-18s %s\n", "GPU activity",
			any_cuda ? "none recorded" : "none: the program did not use CUDA");
	} else {
		fprintf(o->f, "  %-18s %.1f%% of the run (%s); kernels %.1f%%, copies %.1f%%\n",
			"GPU busy", apx_gpu_time_pct(m, busy), apx_fmt_ns(b1, sizeof(b1), (double)busy),
			apx_gpu_time_pct(m, kern), apx_gpu_time_pct(m, copy));
		fprintf(o->f, "  %-18s %zu launches, %s of GPU time, %zu distinct\n", "kernels", m->k.n,
			apx_fmt_ns(b1, sizeof(b1), (double)m->kernel_total_ns), m->names.n);
		steady_state_line(o, m);
		steady_idle_line(o, m);
		for (unsigned d = APX_COPY_H2D; d <= APX_COPY_D2H; d++) {
			const struct apx_an_xfer *pg = &m->xfer[d][APX_MEM_PAGEABLE];
			const struct apx_an_xfer *pn = &m->xfer[d][APX_MEM_PINNED];
			char line[160] = "";

			if (pg->count)
				apx_text_append(line, sizeof(line), "pageable %s at %s",
						apx_fmt_size(b1, sizeof(b1), (double)pg->bytes),
						apx_fmt_rate(b2, sizeof(b2), (double)pg->bytes, (double)pg->dur_ns));
			if (pn->count)
				apx_text_append(line, sizeof(line), "%spinned %s at %s", pg->count ? "; " : "",
						apx_fmt_size(b3, sizeof(b3), (double)pn->bytes),
						apx_fmt_rate(b4, sizeof(b4), (double)pn->bytes, (double)pn->dur_ns));
			if (line[0])
				fprintf(o->f, "  %-18s %s\n", d == APX_COPY_H2D ? "host to device" : "device to host",
					line);
		}
	}
	apx_report_nvperfd_summary(o->f, m);
	if (!fd->n || !apx_finding_in_main(fd, &fd->f[0])) {
		fprintf(o->f, "  %-18s none: no rule found a problem worth a line%s\n", "findings",
			fd->n ? " (start-up aside)" : "");
		processes(o, m);
		return;
	}
	for (size_t i = 0; i < fd->n && i < 3 && apx_finding_in_main(fd, &fd->f[i]); i++) {
		const struct apx_finding *f = &fd->f[i];

		if (f->saving_estimated)
			snprintf(b2, sizeof(b2), "save %s (%.1f%%)", apx_fmt_ns(b1, sizeof(b1), f->saving_ns),
				 f->saving_pct);
		else
			snprintf(b2, sizeof(b2), "saving not estimated");
		fprintf(o->f, "  %-18s %zu. ", i ? "" : "top findings", i + 1);
		sev_color(o, f->severity);
		fprintf(o->f, "%-8s", sev_name(f->severity));
		reset(o);
		fprintf(o->f, " %s: %.40s\n", b2, f->title);
	}
	processes(o, m);
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

static void section_findings(const struct out *o, const struct apx_findings *fd)
{
	size_t rank = 0;

	heading(o, "Findings (ranked by estimated saving)");
	for (size_t i = 0; i < fd->n; i++)
		if (apx_finding_in_main(fd, &fd->f[i]))
			finding_text(o, &fd->f[i], ++rank);
	if (!rank)
		fprintf(o->f, "  none\n");
	if (fd->recorded_dropped)
		fprintf(o->f, "\n  (%zu more findings recorded in the files are not shown: the report "
			      "keeps %d)\n", fd->recorded_dropped, APX_FINDINGS_MAX);
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

static const char *pm_value(char *buf, size_t cap, const struct apx_an_pm *p, double v)
{
	char b[32];

	if (p->unit_len == 1 && p->unit[0] == '%')
		snprintf(buf, cap, "%.1f%%", v);
	else if (p->unit_len == 3 && !memcmp(p->unit, "B/s", 3))
		snprintf(buf, cap, "%s/s", apx_fmt_size(b, sizeof(b), v));
	else
		snprintf(buf, cap, "%.4g", v);	/* the unit is beside the metric's name */
	return buf;
}

/* Device metrics (apx analyze --metrics): printed only when the trace has them. */
static void section_metrics(const struct out *o, const struct apx_model *m)
{
	char b[4][32], sample[32], name[512];

	if (!m->pm.n)
		return;
	heading(o, "Device metrics (PM sampling, over the steady state)");
	fprintf(o->f, "  %-36s %3s %7s %8s %9s %9s %9s %9s\n", "metric (unit)", "dev", "samples",
		"sample", "min", "mean", "p95", "max");
	for (size_t i = 0; i < m->pm.n; i++) {
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, i);

		char label[64];

		snprintf(label, sizeof(label), "%.*s (%.*s)", (int)(p->name_len > 48 ? 48 : p->name_len),
			 p->name, (int)(p->unit_len > 10 ? 10 : p->unit_len), p->unit);
		fprintf(o->f, "  %-36.36s %3u %7" PRIu64 " %8s", label, p->device, p->samples,
			apx_fmt_ns(sample, sizeof(sample), (double)p->mean_sample_ns));
		if (p->have_steady)
			fprintf(o->f, " %9s %9s %9s %9s\n", pm_value(b[0], 32, p, p->min),
				pm_value(b[1], 32, p, p->mean), pm_value(b[2], 32, p, p->p95),
				pm_value(b[3], 32, p, p->max));
		else
			fputs("  no sample in the steady state\n", o->f);
		for (size_t j = 0; j < p->ntop; j++)
			if (!isnan(p->top_mean[j]))
				fprintf(o->f, "      %10s during %.70s\n", pm_value(b[0], 32, p, p->top_mean[j]),
					apx_kernel_display_name(APX_VEC_AT(&m->names, struct apx_an_name,
									   p->top[j]),
								name, sizeof(name)));
	}
}

/* The sections not yet in the document's text view (main's start-up section and idle
 * attribution, merged after the move, are not ported yet), rendered from the model. */
static void section_from_model(const struct out *o, const struct apx_model *m,
			       const struct apx_findings *f, unsigned s)
{
	switch (s) {
	case APX_SEC_SUMMARY:
		section_summary(o, m, f);
		break;
	case APX_SEC_FINDINGS:
		section_findings(o, f);
		break;
	case APX_SEC_STARTUP:
		section_startup(o, m, f);
		break;
	case APX_SEC_IDLE:
		section_idle(o, m);
		break;
	case APX_SEC_METRICS:
		section_metrics(o, m);
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
