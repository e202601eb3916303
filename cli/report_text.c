/*
 * report_text.c - the terminal report of `apx report`: summary, ranked findings, what nvperfd
 * observed (report_nvperfd.c), then the tables (kernels, transfers, synchronization, idle time,
 * memory, streams, L2 persistence, unified memory, CPU), the rule checks and "How this was
 * measured". Fits 100 columns; colour only when asked (a terminal). Called by cmd_report.c.
 */
#include <inttypes.h>
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

void apx_text_heading(FILE *out, const struct apx_report_opts *o, const char *title)
{
	struct apx_text_out t = { out, o->color, o->color_out };

	apx_text_heading_to(&t, title);
}

static const char *sev_name(int sev)
{
	return sev == APX_SEV_CRITICAL ? "CRITICAL" : sev == APX_SEV_WARNING ? "WARNING" : "INFO";
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
	if (!fd->n) {
		fprintf(o->f, "  %-18s none: no rule found a problem worth a line\n", "findings");
		processes(o, m);
		return;
	}
	for (size_t i = 0; i < fd->n && i < 3; i++) {
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

/* The sections not yet in the document's text view, rendered from the model. */
static void section_from_model(const struct out *o, const struct apx_model *m,
			       const struct apx_findings *f, unsigned s)
{
	switch (s) {
	case APX_SEC_SUMMARY:
		section_summary(o, m, f);
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
