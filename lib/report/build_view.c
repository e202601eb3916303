/*
 * build_view.c - the text and JSON views of the report document's sections (doc.h): for each
 * section, its text report as blocks (prose lines, tables with text hints) and its JSON
 * members (tables with member names), one builder a section: here the summary, findings,
 * start-up, checks and "how this was measured", and the order of them all (the JSON
 * schema's); build_view_gpu.c the GPU sections, build_view_idle.c the idle time,
 * build_view_nvperfd.c nvperfd's. Every sentence, order, --top cut and enum word of the text
 * and JSON reports is decided in them; emit_text.c and emit_json.c only format it. Called by
 * apx_rdoc_build() (build.c) for the sections asked for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/build.h"

#include "base/banned.h"

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* ---- summary (the JSON: run, steady_state, devices) ---- */
static const struct apx_rvcol run_json_cols[] = {
	{ .key = "start_ns", .title = "start", .unit = APX_UNIT_NS },
	{ .key = "end_ns", .title = "end", .unit = APX_UNIT_NS },
	{ .key = "wall_ns", .title = "wall time", .unit = APX_UNIT_NS },
	{ .key = "gpu_busy_ns", .title = "GPU busy", .unit = APX_UNIT_NS },
	{ .key = "warmup_end_ns", .title = "warm-up end", .unit = APX_UNIT_NS },
	{ .key = "steady_ns", .title = "steady", .unit = APX_UNIT_NS },
	{ .key = "gpu_busy_pct", .title = "GPU busy %", .unit = APX_UNIT_PCT },
	{ .key = "kernels", .title = "kernels", .unit = APX_UNIT_COUNT },
	{ .key = "kernel_time_ns", .title = "kernel time", .unit = APX_UNIT_NS },
	{ .key = "distinct_kernels", .title = "distinct", .unit = APX_UNIT_COUNT },
};
/* Only in a run with replayed launches CUPTI gave no times (counted in kernels). */
static const struct apx_rvcol run_untimed_json_cols[] = {
	{ .key = "replayed_untimed", .title = "replayed, untimed", .unit = APX_UNIT_COUNT },
	{ .key = "replayed_untimed_no_duration", .title = "of them without duration",
	  .unit = APX_UNIT_COUNT },
};
/* Only when a file's collection was limited to capture ranges (cudaProfilerStart/Stop):
 * "capture": {ranges, collected_ns, run_ns, edges_ignored, steps_left_out}. */
static const struct apx_rvcol run_capture_json_cols[] = {
	{ .key = "capture_ranges", .title = "capture ranges", .unit = APX_UNIT_COUNT,
	  .h.jkey = "capture/ranges" },
	{ .key = "collected_ns", .title = "collected", .unit = APX_UNIT_NS,
	  .h.jkey = "capture/collected_ns" },
	{ .key = "capture_run_ns", .title = "run", .unit = APX_UNIT_NS,
	  .h.jkey = "capture/run_ns" },
	{ .key = "capture_edges_ignored", .title = "capture edges ignored", .unit = APX_UNIT_COUNT,
	  .h.jkey = "capture/edges_ignored" },
	{ .key = "capture_steps_left_out", .title = "steps left out", .unit = APX_UNIT_COUNT,
	  .h.jkey = "capture/steps_left_out" },
};
/* The steady state's members: the first two always, the others when a step was found
 * (kernels_per_step: steps from the kernel sequence; range_name: from named ranges). */
enum { ST_SOURCE, ST_STEPS, ST_PERIOD, ST_NAME, ST_FIRST };
static const struct apx_rvcol steady_json_cols[] = {
	{ .key = "source", .title = "steps from", .unit = APX_UNIT_TEXT },
	{ .key = "steps", .title = "steps", .unit = APX_UNIT_COUNT },
	{ .key = "kernels_per_step", .title = "kernels a step", .unit = APX_UNIT_COUNT },
	{ .key = "range_name", .title = "range", .unit = APX_UNIT_TEXT },
	{ .key = "first_step_ns", .title = "first step", .unit = APX_UNIT_NS },
	{ .key = "last_step_end_ns", .title = "last step end", .unit = APX_UNIT_NS },
	{ .key = "step_median_ns", .title = "step (median)", .unit = APX_UNIT_NS },
	{ .key = "step_p95_ns", .title = "step (p95)", .unit = APX_UNIT_NS },
	{ .key = "step_min_ns", .title = "step (min)", .unit = APX_UNIT_NS },
	{ .key = "step_max_ns", .title = "step (max)", .unit = APX_UNIT_NS },
	{ .key = "gpu_busy_per_step_pct", .title = "GPU busy a step", .unit = APX_UNIT_PCT },
	{ .key = "startup_ns", .title = "start-up", .unit = APX_UNIT_NS },
	{ .key = "teardown_ns", .title = "teardown", .unit = APX_UNIT_NS },
};
static const struct apx_rvcol devices_json_cols[] = {
	{ .key = "id", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "name", .title = "name", .unit = APX_UNIT_TEXT },
	{ .key = "sm_count", .title = "SMs", .unit = APX_UNIT_COUNT },
	{ .key = "cc_major", .title = "cc major", .unit = APX_UNIT_COUNT },
	{ .key = "cc_minor", .title = "cc minor", .unit = APX_UNIT_COUNT },
	{ .key = "memory_bytes", .title = "memory", .unit = APX_UNIT_BYTES },
	{ .key = "l2_bytes", .title = "L2", .unit = APX_UNIT_BYTES },
	{ .key = "persisting_l2_max_bytes", .title = "L2 set-aside", .unit = APX_UNIT_BYTES },
	{ .key = "memory_bandwidth_bps", .title = "memory bandwidth", .unit = APX_UNIT_BYTES_PER_S,
	  .h.jfmt = APX_JF_INT },
	{ .key = "link_peak_bps", .title = "host link peak", .unit = APX_UNIT_BYTES_PER_S,
	  .h.jfmt = APX_JF_INT },
};

static void summary_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_an_steps *st = &m->steady;
	const unsigned s = APX_SEC_SUMMARY;
	struct apx_rtable *r = apx_rdoc_view_table(d, s, "json:run", APX_VIEW_JSON);
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "json:steady_state", APX_VIEW_JSON);
	struct apx_rtable *v = apx_rdoc_view_table(d, s, "json:devices", APX_VIEW_JSON);
	const int found = st->source != APX_STEPS_NONE;

	APX_RTABLE_SET_VCOLS(r, run_json_cols);
	if (m->untimed_launches)
		APX_RTABLE_SET_VCOLS(r, run_untimed_json_cols);
	if (m->capture)
		APX_RTABLE_SET_VCOLS(r, run_capture_json_cols);
	if (apx_rtable_row(r) == 0)
		apx_rdoc_run_cells(d, r);
	apx_rdoc_json(d, s, "run", r, APX_RJ_OBJECT, 0);

	apx_rtable_vcols(t, steady_json_cols, 2);
	if (found && st->source == APX_STEPS_KERNELS)
		apx_rtable_vcols(t, &steady_json_cols[ST_PERIOD], 1);
	if (found && st->name[0])
		apx_rtable_vcols(t, &steady_json_cols[ST_NAME], 1);
	if (found)
		apx_rtable_vcols(t, &steady_json_cols[ST_FIRST],
				 sizeof(steady_json_cols) / sizeof(steady_json_cols[0]) - ST_FIRST);
	if (apx_rtable_row(t) == 0)
		apx_rdoc_steady_cells(d, t);
	apx_rdoc_json(d, s, "steady_state", t, APX_RJ_OBJECT, 0);

	APX_RTABLE_SET_VCOLS(v, devices_json_cols);
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].known && apx_rtable_row(v) == 0)
			apx_rdoc_device_cells(d, v, &m->devices[i]);
	apx_rdoc_json(d, s, "devices", v, APX_RJ_ARRAY, 0);
}

static const struct apx_rvcol processes_text_cols[] = {
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID, .h = { .tw = -8 } },
	{ .key = "kernels", .title = "kernels", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "kernel_time_ns", .title = "kernel time", .unit = APX_UNIT_NS, .h = { .tw = 11 } },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "copy_bytes", .title = "copied", .unit = APX_UNIT_BYTES, .h = { .tw = 9 } },
	{ .key = "copy_time_ns", .title = "copy time", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "command", .title = "command", .unit = APX_UNIT_TEXT,
	  .h = { .tgap = 1, .tmax = 32 } },
};

/* With several files: one line per process (the run's total is the summary above). */
static void processes(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t;

	if (m->nfiles < 2)
		return;
	t = apx_rdoc_view_table(d, APX_SEC_SUMMARY, "text:processes", APX_VIEW_TEXT);
	APX_RTABLE_SET_VCOLS(t, processes_text_cols);
	for (size_t i = 0; i < m->nfiles && apx_rtable_row(t) == 0; i++)
		apx_rdoc_file_cells(d, t, &m->files[i]);
	apx_rdoc_line(d, APX_SEC_SUMMARY, 0, "%s", "");
	apx_rdoc_blk_table(d, APX_SEC_SUMMARY, t);
}

/* "collected          in 2 capture ranges (cudaProfilerStart/Stop): 1.20 s of the run's 9.80 s"
 * when apx analyze collected only between cudaProfilerStart() and cudaProfilerStop(). */
static void capture_lines(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_SUMMARY;
	char b1[32], b2[32];

	if (!m->capture)
		return;
	if (!m->collected.n)
		apx_rdoc_line(d, s, 2, "%-18s capture mode, but no capture range: the whole trace "
			      "counts", "collected");
	else
		apx_rdoc_line(d, s, 2, "%-18s in %zu capture range%s (cudaProfilerStart/Stop): %s of "
			      "the run's %s", "collected", m->collected.n,
			      m->collected.n == 1 ? "" : "s",
			      apx_fmt_ns(b1, sizeof(b1), (double)m->collected_ns),
			      apx_fmt_ns(b2, sizeof(b2), (double)m->wall_ns));
	if (m->collected.n)
		apx_rdoc_line(d, s, 2, "%-18s idle time, steps and findings count collected time "
			      "only", "");
	if (m->capture_bad)
		apx_rdoc_line(d, s, 2, "%-18s %" PRIu64 " capture edge%s ignored (malformed, or out "
			      "of order)", "", m->capture_bad, m->capture_bad == 1 ? "" : "s");
}

/* "steady state  100 steps (kernel sequence, 17 kernels a step), GPU busy 63% of a step
 *                3.99 ms a step (p95 5.32 ms); start-up 4.67 s, teardown 465.93 ms" */
static void steady_state_line(struct apx_rdoc *d)
{
	const struct apx_an_steps *st = &d->m->steady;
	char how[96], b1[32], b2[32], b3[32], b4[32];

	if (st->source == APX_STEPS_NONE) {
		apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%-18s no repeating step found: the numbers are "
			      "for the whole run", "steady state");
		return;
	}
	if (st->source == APX_STEPS_KERNELS)
		snprintf(how, sizeof(how), "kernel sequence, %" PRIu64 " kernels a step", st->period);
	else
		snprintf(how, sizeof(how), "%s ranges \"%.40s\"",
			 st->source == APX_STEPS_PROFILER ? "torch.profiler" : "NVTX", st->name);
	apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%-18s %" PRIu64 " steps (%s), GPU busy %.0f%% of a step",
		      "steady state", st->count, how, st->busy_pct);
	apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%-18s %s a step (p95 %s); start-up %s, teardown %s", "",
		      apx_fmt_ns(b1, sizeof(b1), (double)st->median_ns),
		      apx_fmt_ns(b2, sizeof(b2), (double)st->p95_ns),
		      apx_fmt_ns(b3, sizeof(b3), (double)st->setup_ns),
		      apx_fmt_ns(b4, sizeof(b4), (double)st->teardown_ns));
	if (st->uncollected)
		apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%-18s %" PRIu64 " step%s spanning uncollected "
			      "time %s", "", st->uncollected, st->uncollected == 1 ? "" : "s",
			      st->uncollected < st->count ? "left out of the step times"
			      : "timed by their collected part");
}

/* "GPU idle           12% of the steady state (5.10 ms): 96% explained, largest launch overhead"
 * (the idle attribution, idle_attrib.c) */
static void steady_idle_line(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	uint64_t idle = 0, unk = m->gpu.idle_by_cause[APX_IDLE_UNKNOWN];
	unsigned top = APX_IDLE_UNKNOWN;
	char line[256], b1[32], b2[32];

	if (!m->gpu.window_ns)
		return;
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
		idle += m->gpu.idle_by_cause[c];
		if (c != APX_IDLE_UNKNOWN && m->gpu.idle_by_cause[c] > m->gpu.idle_by_cause[top])
			top = c;
	}
	snprintf(line, sizeof(line), "%-18s %.0f%% of the steady state (%s", "GPU idle",
		 pct((double)idle, (double)m->gpu.window_ns), apx_fmt_ns(b1, sizeof(b1), (double)idle));
	if (m->steady.count)	/* a median step's share of it */
		apx_text_append(line, sizeof(line), ", %s a step",
				apx_fmt_ns(b2, sizeof(b2), (double)idle * (double)m->steady.median_ns /
								   (double)m->gpu.window_ns));
	apx_text_append(line, sizeof(line), "), %.0f%% of it explained",
			idle ? pct((double)(idle - unk), (double)idle) : 100.0);
	apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%s", line);
	if (top == APX_IDLE_UNKNOWN && !unk)
		return;
	snprintf(line, sizeof(line), "%-18s ", "");
	if (top != APX_IDLE_UNKNOWN)
		apx_text_append(line, sizeof(line), "largest cause: %s%s", apx_idle_cause_name(top),
				unk ? "; " : "");
	if (unk)
		apx_text_append(line, sizeof(line), "unexplained: %s",
				apx_fmt_ns(b2, sizeof(b2), (double)unk));
	if (unk && m->steady.count)
		apx_text_append(line, sizeof(line), " (%s a step)",
				apx_fmt_ns(b1, sizeof(b1), (double)unk * (double)m->steady.median_ns /
								   (double)m->gpu.window_ns));
	apx_rdoc_line(d, APX_SEC_SUMMARY, 2, "%s", line);
}

/* The GPU's share of the run, kernels, the steady state and the host<->device copies. */
static void gpu_lines(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_SUMMARY;
	uint64_t kern = m->gpu.kernel_busy_ns, copy = m->gpu.copy_busy_ns, busy = m->gpu.busy_ns;
	char b1[32], b2[32], b3[32], b4[32];

	if (m->no_gpu_trace)
		return;	/* nvperfd summaries only: the "GPU (observed)" line says what was seen */
	if (!m->k.n && !m->untimed_launches && !m->copies.n) {
		int any_cuda = 0;

		for (size_t i = 0; i < m->nfiles; i++)
			any_cuda |= m->files[i].cuda_used == 1;
		apx_rdoc_line(d, s, 2, "%-18s %s", "GPU activity",
			      any_cuda ? "none recorded" : "none: the program did not use CUDA");
		return;
	}
	apx_rdoc_line(d, s, 2, "%-18s %.1f%% of the %s (%s); kernels %.1f%%, copies %.1f%%",
		      "GPU busy", apx_gpu_time_pct(m, busy),
		      m->collected.n ? "collected time" : "run", apx_fmt_ns(b1, sizeof(b1), (double)busy),
		      apx_gpu_time_pct(m, kern), apx_gpu_time_pct(m, copy));
	apx_rdoc_line(d, s, 2, "%-18s %llu launches, %s of GPU time, %zu distinct", "kernels",
		      (unsigned long long)(m->k.n + m->untimed_launches),
		      apx_fmt_ns(b1, sizeof(b1), (double)m->kernel_total_ns), m->names.n);
	if (m->untimed_launches && m->untimed_nodur == m->untimed_launches) {
		/* no replay duration for any: in flight when a forced flush ended the collection
		 * (traces of collectors that kept them) */
		apx_rdoc_line(d, s, 2, "%-18s %llu of them without times (in flight when the "
			      "collection ended): not in", "", (unsigned long long)m->untimed_launches);
		apx_rdoc_line(d, s, 2, "%-18s timelines, idle time or steps", "");
	} else if (m->untimed_launches) {	/* CUPTI gives a replayed launch no timestamps */
		apx_rdoc_line(d, s, 2, "%-18s %llu of them replayed, which CUPTI gives no times: their "
			      "durations are", "", (unsigned long long)m->untimed_launches);
		apx_rdoc_line(d, s, 2, "%-18s the replay's gpu__time_duration.sum (%llu without it); "
			      "not in timelines,", "", (unsigned long long)m->untimed_nodur);
		apx_rdoc_line(d, s, 2, "%-18s idle time or steps", "");
	}
	steady_state_line(d);
	steady_idle_line(d);
	for (unsigned dir = APX_COPY_H2D; dir <= APX_COPY_D2H; dir++) {
		const struct apx_an_xfer *pg = &m->xfer[dir][APX_MEM_PAGEABLE];
		const struct apx_an_xfer *pn = &m->xfer[dir][APX_MEM_PINNED];
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
			apx_rdoc_line(d, s, 2, "%-18s %s",
				      dir == APX_COPY_H2D ? "host to device" : "device to host", line);
	}
}

static void view_summary(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_findings *fd = d->fd;
	const struct apx_an_file *f0 = &m->files[0];
	const unsigned s = APX_SEC_SUMMARY;
	char b1[32], b2[32], head[96], cmd[150];

	summary_json(d);
	snprintf(head, sizeof(head), "%-18s %zu file%s; main process pid %" PRIu64 ": ", "trace",
		 m->nfiles, m->nfiles == 1 ? "" : "s", f0->pid);
	snprintf(cmd, sizeof(cmd), "%.*s%s", (int)sizeof(cmd) - 4, f0->argv[0] ? f0->argv : "n/a",
		 strlen(f0->argv) > sizeof(cmd) - 4 ? "..." : "");
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = head,
					      .text = cmd, .windent = 21 });
	apx_rdoc_line(d, s, 2, "%-18s %s (first to last record), host %s", "wall time",
		      apx_fmt_ns(b1, sizeof(b1), (double)m->wall_ns), f0->host[0] ? f0->host : "n/a");
	capture_lines(d);
	for (size_t i = 0; i < m->ndevices; i++) {
		const struct apx_an_device *dv = &m->devices[i];

		if (dv->known)
			apx_rdoc_line(d, s, 2, "%-18s %u: %.32s, sm_%u%u, %u SMs, %s, L2 %s",
				      i ? "" : "GPU", dv->id, dv->name, dv->cc_major % 100,
				      dv->cc_minor % 100, dv->sm_count % 100000,
				      apx_fmt_size(b1, sizeof(b1), (double)dv->mem_bytes),
				      apx_fmt_size(b2, sizeof(b2), (double)dv->l2_bytes));
	}
	for (size_t i = 0; i < m->nfiles; i++) {
		char pid[32];
		int room;

		if (!m->files[i].degraded[0])
			continue;
		/* "  not collected      pid N: " then what fits in 100 columns */
		snprintf(pid, sizeof(pid), "%" PRIu64, m->files[i].pid);
		room = 100 - 21 - 4 - (int)strlen(pid) - 2;
		apx_rdoc_line(d, s, 2, "%-18s pid %s: %.*s", "not collected", pid, room > 0 ? room : 0,
			      m->files[i].degraded);
	}
	gpu_lines(d);
	apx_rdoc_nvperfd_summary(d, s);
	if (!fd->n || !apx_finding_in_main(fd, &fd->f[0]))
		apx_rdoc_line(d, s, 2, "%-18s none: no rule found a problem worth a line%s", "findings",
			      fd->n ? " (start-up aside)" : "");
	for (size_t i = 0; i < fd->n && i < 3 && apx_finding_in_main(fd, &fd->f[i]); i++) {
		const struct apx_finding *f = &fd->f[i];
		const struct apx_rfinding *rf = i < d->nfindings && d->findings[i].f == f
						? &d->findings[i] : NULL;
		char line[128];
		int room;

		if (rf && rf->per_step)
			snprintf(b2, sizeof(b2), "save %s a step (%.1f%%)",
				 apx_fmt_ns(b1, sizeof(b1), rf->step_ns), rf->step_pct);
		else if (f->saving_estimated)
			snprintf(b2, sizeof(b2), "save %s (%.1f%%)", apx_fmt_ns(b1, sizeof(b1), f->saving_ns),
				 f->saving_pct);
		else
			snprintf(b2, sizeof(b2), "saving not estimated");
		snprintf(head, sizeof(head), "%-18s %zu. ", i ? "" : "top findings", i + 1);
		/* within 100 columns: head (24), severity (8), " ", b2, ": ", the title's start */
		room = 100 - 24 - 8 - 3 - (int)strlen(b2);
		snprintf(line, sizeof(line), " %s: %.*s", b2, room > 40 ? 40 : room > 0 ? room : 0,
			 f->title);
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_SEV, .indent = 2, .head = head,
						      .sev = f->severity, .sevpad = 8, .text = line });
	}
	processes(d);
}

/* Text under a label ("    model      ..."). */
static void label(struct apx_rdoc *d, unsigned s, const char *head, const char *text)
{
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_LABEL, .head = head, .text = text });
}

/* ---- findings (the main list: steady state, and start-up when it dominates) ---- */
static const struct apx_rvcol findings_json_cols[] = {
	{ .key = "rank", .title = "#", .unit = APX_UNIT_COUNT },
	{ .key = "rule", .title = "rule", .unit = APX_UNIT_TEXT },
	{ .key = "severity", .title = "severity", .unit = APX_UNIT_TEXT },
	{ .key = "title", .title = "finding", .unit = APX_UNIT_TEXT },
	{ .key = "saving_ns", .title = "saving", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "saving_pct", .title = "of the run", .unit = APX_UNIT_PCT },
	{ .key = "saving_per_step_ns", .title = "a step", .unit = APX_UNIT_NS,
	  .h = { .jfmt = APX_JF_INT, .jomit = 1 } },
	{ .key = "saving_step_pct", .title = "of step time", .unit = APX_UNIT_PCT, .h.jomit = 1 },
	{ .key = "saving_estimated", .title = "estimated", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "startup", .title = "start-up", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "saving_model", .title = "model", .unit = APX_UNIT_TEXT },
	{ .key = "evidence", .title = "evidence", .unit = APX_UNIT_TEXT },
	{ .key = "fix", .title = "fix", .unit = APX_UNIT_TEXT },
	{ .key = "confidence_pct", .title = "confidence", .unit = APX_UNIT_COUNT },
	{ .key = "lines", .title = "lines", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
};
/* A finding's lines (struct apx_finding_line): "lines": [{file, line, func, count, ns, cause,
 * cause_text, per_step}] (the last three null where the rule does not say them). */
static const struct apx_rvcol finding_lines_json_cols[] = {
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "cause", .title = "cause", .unit = APX_UNIT_TEXT },
	{ .key = "cause_text", .title = "cause", .unit = APX_UNIT_TEXT },
	{ .key = "per_step", .title = "a step", .unit = APX_UNIT_RATIO },
};

static const struct apx_rtable *finding_lines(struct apx_rdoc *d, const struct apx_finding *a)
{
	struct apx_rtable *t = apx_rdoc_sub_table(d, "lines");

	APX_RTABLE_SET_VCOLS(t, finding_lines_json_cols);
	for (unsigned i = 0; t && i < a->nlines && apx_rtable_row(t) == 0; i++) {
		const struct apx_finding_line *l = &a->lines[i];

		apx_rtable_text(d, t, 0, l->file, l->file_len);
		apx_rtable_u64(t, 1, l->line);
		apx_rtable_text(d, t, 2, l->func, l->func_len);
		apx_rtable_num(t, 3, l->count);
		apx_rtable_num(t, 4, l->ns);
		if (l->cause_key)
			apx_rtable_str(d, t, 5, l->cause_key);
		if (l->cause[0])
			apx_rtable_str(d, t, 6, l->cause);
		if (l->has_per_step)
			apx_rtable_num(t, 7, l->per_step);
	}
	return t;
}

static const char *severity_word(int sev)
{
	return sev == APX_SEV_CRITICAL ? "critical" : sev == APX_SEV_WARNING ? "warning" : "info";
}

/* The JSON member "findings": a row a finding of a list (d->findings: the main list;
 * d->sfindings: start-up's), ranked; inside the previous member's object when inside is set. */
static void findings_json(struct apx_rdoc *d, unsigned s, const struct apx_rfinding *rf,
			  size_t n, int inside)
{
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:findings", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, findings_json_cols);
	for (size_t i = 0; i < n; i++) {
		const struct apx_finding *a = rf[i].f;

		if (apx_rtable_row(j) < 0)
			break;
		apx_rtable_u64(j, 0, rf[i].rank);
		apx_rtable_str(d, j, 1, a->rule);
		apx_rtable_str(d, j, 2, severity_word(a->severity));
		apx_rtable_str(d, j, 3, a->title);
		apx_rtable_num(j, 4, a->saving_ns);
		apx_rtable_num(j, 5, a->saving_pct);
		if (rf[i].per_step) {
			apx_rtable_num(j, 6, rf[i].step_ns);
			apx_rtable_num(j, 7, rf[i].step_pct);
		}
		apx_rtable_u64(j, 8, !!a->saving_estimated);
		apx_rtable_u64(j, 9, !!a->startup);
		apx_rtable_str(d, j, 10, a->model);
		apx_rtable_str(d, j, 11, a->evidence);
		apx_rtable_str(d, j, 12, a->fix);
		apx_rtable_u64(j, 13, (uint64_t)a->confidence_pct);
		apx_rtable_sub(j, 14, finding_lines(d, a));
	}
	apx_rdoc_json_findings(d, s, "findings", j, rf, n, inside);
}

/* One finding's text: rank, severity and title, saving, then its model, evidence and fix. */
static void finding_text(struct apx_rdoc *d, unsigned s, const struct apx_rfinding *rf)
{
	const struct apx_finding *f = rf->f;
	size_t rank = rf->rank;
	char b1[32], head[32];

	apx_rdoc_line(d, s, 0, "%s", "");
	snprintf(head, sizeof(head), "[%zu] ", rank);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_SEV, .indent = 2, .head = head,
					      .sev = f->severity, .mid = " ", .text = f->title,
					      .windent = 6 });
	if (rf->per_step)
		apx_rdoc_line(d, s, 4, "%-10s %s a step (%.1f%% of step time), confidence %d%%, rule %s",
			      "saving", apx_fmt_ns(b1, sizeof(b1), rf->step_ns), rf->step_pct,
			      f->confidence_pct, f->rule);
	else if (f->saving_estimated)
		apx_rdoc_line(d, s, 4, "%-10s %s (%.1f%% of the run), confidence %d%%, rule %s",
			      "saving", apx_fmt_ns(b1, sizeof(b1), f->saving_ns), f->saving_pct,
			      f->confidence_pct, f->rule);
	else
		apx_rdoc_line(d, s, 4, "%-10s not estimated (recorded by %.20s), confidence %d%%, "
			      "rule %s", "saving", f->recorded_by ? f->recorded_by : "the producer",
			      f->confidence_pct, f->rule);
	label(d, s, "model", f->model);
	label(d, s, "evidence", f->evidence);
	label(d, s, "fix", f->fix);
}

static void view_findings(struct apx_rdoc *d)
{
	const struct apx_findings *fd = d->fd;
	const unsigned s = APX_SEC_FINDINGS;

	findings_json(d, s, d->findings, d->nfindings, 0);
	for (size_t i = 0; i < d->nfindings; i++)
		finding_text(d, s, &d->findings[i]);
	if (!d->nfindings)
		apx_rdoc_line(d, s, 2, "none");
	if (fd->recorded_dropped) {
		apx_rdoc_line(d, s, 0, "%s", "");
		apx_rdoc_line(d, s, 2, "(%zu more findings recorded in the files are not shown: the "
			      "report keeps %d)", fd->recorded_dropped, APX_FINDINGS_MAX);
	}
}

/* ---- start-up (before the steady state) ---- */
static const struct apx_rvcol startup_json_cols[] = {
	{ .key = "end_ns", .title = "steady state from", .unit = APX_UNIT_NS },
	{ .key = "gpu_span_ns", .title = "GPU span before it", .unit = APX_UNIT_NS },
	{ .key = "gpu_idle_ns", .title = "GPU idle", .unit = APX_UNIT_NS },
	{ .key = "gpu_busy_ns", .title = "GPU busy", .unit = APX_UNIT_NS },
	{ .key = "dominates", .title = "dominates the run", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
};

/* The work before the steady state, and its findings (setup is setup). JSON: the
 * "startup" object, its findings inside it. */
static void view_startup(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_findings *fd = d->fd;
	const struct apx_an_timeline *g = &m->gpu;
	const unsigned s = APX_SEC_STARTUP;
	const uint64_t idle = g->startup_idle_ns < g->startup_ns ? g->startup_idle_ns
							      : g->startup_ns;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:startup", APX_VIEW_JSON);
	char b1[32], b2[32], b3[32];

	APX_RTABLE_SET_VCOLS(j, startup_json_cols);
	if (apx_rtable_row(j) == 0) {
		apx_rtable_u64(j, 0, m->steady_start_ns);
		apx_rtable_u64(j, 1, g->startup_ns);
		apx_rtable_u64(j, 2, g->startup_idle_ns);
		apx_rtable_u64(j, 3, g->startup_ns - idle);
		apx_rtable_u64(j, 4, !!fd->startup_dominates);
	}
	apx_rdoc_json(d, s, "startup", j, APX_RJ_OBJECT, 0);
	findings_json(d, s, d->sfindings, d->nsfindings, 1);
	if (!m->timelines.n) {
		apx_rdoc_line(d, s, 2, "no GPU activity");
		return;
	}
	apx_rdoc_line(d, s, 2, "GPU first activity to the steady state: %s, busy %s, idle %s",
		      apx_fmt_ns(b1, sizeof(b1), (double)g->startup_ns),
		      apx_fmt_ns(b2, sizeof(b2), (double)(g->startup_ns - idle)),
		      apx_fmt_ns(b3, sizeof(b3), (double)g->startup_idle_ns));
	if (fd->startup_dominates) {
		apx_rdoc_line(d, s, 2, "start-up dominates the run (more GPU busy time than the "
			      "steady state): its findings are");
		apx_rdoc_line(d, s, 2, "ranked with the others");
	} else {
		apx_rdoc_line(d, s, 2, "its findings rank under the steady state's (start-up does "
			      "not dominate the run)");
	}
	for (size_t i = 0; i < d->nsfindings; i++)
		finding_text(d, s, &d->sfindings[i]);
	if (!d->nsfindings)
		apx_rdoc_line(d, s, 2, "findings: none%s",
			      fd->startup_dominates ? " apart from the ranked ones" : "");
}

/* ---- checks ---- */
static const struct apx_rvcol checks_json_cols[] = {
	{ .key = "rule", .title = "rule", .unit = APX_UNIT_TEXT },
	{ .key = "title", .title = "check", .unit = APX_UNIT_TEXT },
	{ .key = "status", .title = "status", .unit = APX_UNIT_TEXT },
	{ .key = "why", .title = "why", .unit = APX_UNIT_TEXT },
};

/* A check on one line when it fits, else its title wrapped after the status and its why on
 * lines of their own under the status. */
static void view_checks(struct apx_rdoc *d)
{
	const struct apx_findings *fd = d->fd;
	const unsigned s = APX_SEC_CHECKS;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:checks", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, checks_json_cols);
	for (size_t i = 0; i < fd->nresults; i++) {
		const struct apx_rule_result *r = &fd->results[i];
		char head[256], line[sizeof(r->why) + 256];
		int col;

		if (apx_rtable_row(j) == 0)
			apx_rdoc_check_cells(d, j, r);
		snprintf(head, sizeof(head), "%-16s %-14s ", r->rule,
			 r->status == APX_RULE_FIRED ? "finding"
			 : r->status == APX_RULE_CLEAN ? "ok"
			 : r->status == APX_RULE_MINOR ? "minor"
			 : r->status == APX_RULE_STARTUP ? "start-up" : "not measured");
		col = 2 + (int)strlen(head);
		snprintf(line, sizeof(line), "%s%s%s", r->title, r->why[0] ? ": " : "", r->why);
		if (col + (int)strlen(line) <= APX_REPORT_W) {
			apx_rdoc_line(d, s, 2, "%s%s", head, line);
			continue;
		}
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = head,
						      .text = r->title, .windent = (unsigned)col });
		if (r->why[0])
			apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 19,
							      .text = r->why, .windent = 19 });
	}
	apx_rdoc_json(d, s, "checks", j, APX_RJ_ARRAY, 0);
}

/* ---- how this was measured (the JSON "files") ---- */
static const struct apx_rvcol files_json_cols[] = {
	{ .key = "path", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	{ .key = "ppid", .title = "parent", .unit = APX_UNIT_ID },
	{ .key = "command", .title = "command", .unit = APX_UNIT_TEXT },
	{ .key = "host", .title = "host", .unit = APX_UNIT_TEXT },
	{ .key = "producer", .title = "written by", .unit = APX_UNIT_TEXT },
	{ .key = "producer_version", .title = "version", .unit = APX_UNIT_TEXT },
	{ .key = "level", .title = "level", .unit = APX_UNIT_TEXT },
	{ .key = "status", .title = "status", .unit = APX_UNIT_TEXT },
	{ .key = "damage", .title = "damage", .unit = APX_UNIT_TEXT },
	{ .key = "degraded", .title = "degraded", .unit = APX_UNIT_TEXT },
	{ .key = "records", .title = "records", .unit = APX_UNIT_COUNT },
	{ .key = "records_lost", .title = "lost", .unit = APX_UNIT_COUNT },
	{ .key = "records_unreadable", .title = "unreadable", .unit = APX_UNIT_COUNT },
	{ .key = "kernels", .title = "kernels", .unit = APX_UNIT_COUNT },
	{ .key = "kernel_time_ns", .title = "kernel time", .unit = APX_UNIT_NS },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT },
	{ .key = "copy_bytes", .title = "copied", .unit = APX_UNIT_BYTES },
	{ .key = "copy_time_ns", .title = "copy time", .unit = APX_UNIT_NS },
};

static void files_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_METHOD, "json:files", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, files_json_cols);
	for (size_t i = 0; i < m->nfiles && apx_rtable_row(j) == 0; i++)
		apx_rdoc_file_cells(d, j, &m->files[i]);
	apx_rdoc_json(d, APX_SEC_METHOD, "files", j, APX_RJ_ARRAY, 0);
}

static void view_method(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_METHOD;

	files_json(d);
	if (m->timelines.n) {	/* how the idle time was attributed (idle_attrib.c) */
		apx_rdoc_line(d, s, 2, "idle attribution: every steady-state idle ns gets one cause, "
			      "from host-side times (syncs,");
		if (m->copy_host_times) {
			apx_rdoc_line(d, s, 4, "page faults, copy calls)");
		} else {
			apx_rdoc_line(d, s, 4, "page faults, copy calls); this trace has no copy-call "
				      "times: the copies' GPU-side intervals");
			apx_rdoc_line(d, s, 4, "stand in, so staging and in-call overhead are not seen "
				      "apart");
		}
	}
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct apx_an_file *f = &m->files[i];
		char line[256];
		uint64_t lost = 0;

		for (unsigned k = 0; k <= APX_LOSS_OTHER; k++)
			lost += f->lost[k];
		apx_rdoc_line(d, s, 2, "%s: pid %" PRIu64 ", written by %s %s", f->path, f->pid,
			      f->producer, f->producer_version);
		if (!strcmp(f->producer, "apx-inject") && f->attached_ms) {
			apx_rdoc_line(d, s, 4, "collection level %s; apx attach loaded a copy of "
				      "libapx-inject.so into the running", f->level[0] ? f->level
										: "n/a");
			apx_rdoc_line(d, s, 4, "program (ptrace, at a GIL release) for %.3g s, then "
				      "switched CUPTI off and finalized it;", f->attached_ms / 1e3);
			apx_rdoc_line(d, s, 4, "its environment and files were not changed; the "
				      "first and last steps may be cut by the window");
			if (f->start_cost_us)
				apx_rdoc_line(d, s, 4, "the collector's start held the Python thread "
					      "apx attach borrowed %.1f ms", f->start_cost_us / 1e3);
		} else if (!strcmp(f->producer, "apx-inject")) {
			apx_rdoc_line(d, s, 4, "collection level %s; apx put into the program the "
				      "environment variables", f->level[0] ? f->level : "n/a");
			apx_rdoc_line(d, s, 4, "CUDA_INJECTION64_PATH (loads libapx-inject.so, which "
				      "subscribes to CUPTI),");
			apx_rdoc_line(d, s, 4, "LD_PRELOAD and NVTX_INJECTION64_PATH (libapx-watch.so: "
				      "NVTX ranges to CUPTI, notices");
			apx_rdoc_line(d, s, 4, "a tool that loses CUPTI to apx), APX_* settings and, "
				      "for Python's hooks (memory samples,");
			apx_rdoc_line(d, s, 4, "--trace-functions; on by default), PYTHONPATH: a "
				      "private temp folder holding apx's");
			apx_rdoc_line(d, s, 4, "sitecustomize.py, which imports yours, removed after "
				      "the run; no file of yours was changed");
			if (f->start_cost_us)
				apx_rdoc_line(d, s, 4, "the collector's start took %.1f ms at the "
					      "program's first CUDA call", f->start_cost_us / 1e3);
		} else if (!strcmp(f->producer, "nvperfd")) {
			apx_rdoc_line(d, s, 4, "observed from outside by the nvperfd daemon: /proc, "
				      "NVML/GPM, and eBPF uprobes on libcuda");
			apx_rdoc_line(d, s, 4, "where attached (see its section: a few us per probed "
				      "copy or pinned allocation,");
			apx_rdoc_line(d, s, 4, "never on kernel launches); nothing was put into the "
				      "program");
		}
		if (f->degraded[0])
			label(d, s, "degraded", f->degraded);
		snprintf(line, sizeof(line), "kernels replayed: no; records lost: %" PRIu64, lost);
		if (f->records_unreadable)
			apx_text_append(line, sizeof(line), " dropped by the producer, %" PRIu64
					" unreadable (damaged chunks, left out)", f->records_unreadable);
		apx_text_append(line, sizeof(line), "; clock: %s",
				f->clock == APX_CLOCK_MONOTONIC ? "CLOCK_MONOTONIC" : "other");
		apx_rdoc_line(d, s, 4, "%s", line);
		apx_rdoc_line(d, s, 4, "file %s", f->status == APX_READ_COMPLETE ? "complete"
			      : f->status == APX_READ_TRUNCATED
				      ? "TRUNCATED (read up to the producer's last flush)"
				      : "DAMAGED (read up to the damage)");
		if (f->damage[0])
			label(d, s, "", f->damage);
	}
	apx_rdoc_stack_loss_line(d, s, 2);
}

/* The views in the JSON schema's order (docs/report-schema.md): each adds its section's JSON
 * members (apx_rdoc_json), which emit_json.c writes in the order they were added; the text
 * blocks are the section's own, printed in section order. The idle section's members stand
 * in two places: "idle" after "startup", "timelines" after "synchronization". */
void apx_rdoc_build_views(struct apx_rdoc *d)
{
	static const struct {
		unsigned section;
		void (*view)(struct apx_rdoc *d);
	} views[] = {
		{ APX_SEC_METHOD, view_method },
		{ APX_SEC_SUMMARY, view_summary },
		{ APX_SEC_FINDINGS, view_findings },
		{ APX_SEC_CHECKS, view_checks },
		{ APX_SEC_STARTUP, view_startup },
		{ APX_SEC_RANKS, apx_rdoc_view_ranks },
		{ APX_SEC_COLLECTIVES, apx_rdoc_view_collectives },
		{ APX_SEC_HOTSPOTS, apx_rdoc_view_hotspots },
		{ APX_SEC_IDLE_STACKS, apx_rdoc_view_idle_stacks },
		{ APX_SEC_IDLE, apx_rdoc_view_idle },
		{ APX_SEC_KERNELS, apx_rdoc_view_kernels },
		{ APX_SEC_TRANSFERS, apx_rdoc_view_transfers },
		{ APX_SEC_TRANSFERS, apx_rdoc_view_p2p },
		{ APX_SEC_SYNC, apx_rdoc_view_sync },
		{ APX_SEC_IDLE, apx_rdoc_view_timelines },
		{ APX_SEC_METRICS, apx_rdoc_view_metrics },
		{ APX_SEC_MEMORY, apx_rdoc_view_memory },
		{ APX_SEC_STREAMS, apx_rdoc_view_streams },
		{ APX_SEC_NVTX, apx_rdoc_view_nvtx },
		{ APX_SEC_L2, apx_rdoc_view_l2 },
		{ APX_SEC_UVM, apx_rdoc_view_uvm },
		{ APX_SEC_CPU, apx_rdoc_view_cpu },
		{ APX_SEC_THREADS, apx_rdoc_view_threads },
		{ APX_SEC_HEAP, apx_rdoc_view_heap },
		{ APX_SEC_NVPERFD, apx_rdoc_view_nvperfd },
	};

	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (d->sec[views[i].section].present)
			views[i].view(d);
}
