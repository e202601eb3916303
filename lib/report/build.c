/*
 * build.c - apx_rdoc_build(): the report document from the model and the ranked findings
 * (doc.h). This file builds the summary, the findings (each with its metrics and evidence
 * as typed tables), nvperfd's observations, the checks and "how this was measured";
 * build_gpu.c the GPU tables; build_series.c the time series from the event store. Every
 * enum-to-word and every ordering of the report is decided here, not in the emitters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/build.h"

#include "base/banned.h"

static const char *severity_word(int sev)
{
	return sev == APX_SEV_CRITICAL ? "critical" : sev == APX_SEV_WARNING ? "warning" : "info";
}

static const struct apx_rcol run_cols[] = {
	{ "files", "files", APX_UNIT_COUNT },
	{ "pid", "main pid", APX_UNIT_ID },
	{ "wall_ns", "wall time", APX_UNIT_NS },
	{ "gpu_busy_ns", "GPU busy", APX_UNIT_NS },
	{ "gpu_busy_pct", "GPU busy %", APX_UNIT_PCT },
	{ "kernels", "kernels", APX_UNIT_COUNT },
	{ "kernel_time_ns", "kernel time", APX_UNIT_NS },
	{ "distinct_kernels", "distinct", APX_UNIT_COUNT },
	{ "host", "host", APX_UNIT_TEXT },
	{ "command", "command", APX_UNIT_TEXT },
};
static const struct apx_rcol run_capture_cols[] = {
	{ "capture_ranges", "capture ranges", APX_UNIT_COUNT },
	{ "collected_ns", "collected", APX_UNIT_NS },
	{ "capture_edges_ignored", "capture edges ignored", APX_UNIT_COUNT },
	{ "capture_steps_left_out", "steps left out", APX_UNIT_COUNT },
};
static const struct apx_rcol steady_state_cols[] = {
	{ "source", "steps from", APX_UNIT_TEXT },
	{ "steps", "steps", APX_UNIT_COUNT },
	{ "step_median_ns", "step (median)", APX_UNIT_NS },
	{ "step_p95_ns", "step (p95)", APX_UNIT_NS },
	{ "gpu_busy_per_step_pct", "GPU busy a step", APX_UNIT_PCT },
	{ "startup_ns", "start-up", APX_UNIT_NS },
	{ "teardown_ns", "teardown", APX_UNIT_NS },
};
static const struct apx_rcol devices_cols[] = {
	{ "id", "device", APX_UNIT_ID },
	{ "name", "name", APX_UNIT_TEXT },
	{ "sm_count", "SMs", APX_UNIT_COUNT },
	{ "cc_major", "cc major", APX_UNIT_COUNT },
	{ "cc_minor", "cc minor", APX_UNIT_COUNT },
	{ "memory_bytes", "memory", APX_UNIT_BYTES },
	{ "l2_bytes", "L2", APX_UNIT_BYTES },
	{ "link_peak_bps", "host link peak", APX_UNIT_BYTES_PER_S },
};
static const struct apx_rcol processes_cols[] = {
	{ "pid", "pid", APX_UNIT_ID },
	{ "kernels", "kernels", APX_UNIT_COUNT },
	{ "kernel_time_ns", "kernel time", APX_UNIT_NS },
	{ "copies", "copies", APX_UNIT_COUNT },
	{ "copy_bytes", "copied", APX_UNIT_BYTES },
	{ "copy_time_ns", "copy time", APX_UNIT_NS },
	{ "degraded", "not collected", APX_UNIT_TEXT },
	{ "command", "command", APX_UNIT_TEXT },
};

static void summary(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_an_steps *st = &m->steady;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_SUMMARY, "run", "Run");

	APX_RTABLE_SET_COLS(t, run_cols);
	if (m->capture)	/* collection limited to capture ranges (cudaProfilerStart/Stop) */
		APX_RTABLE_SET_COLS(t, run_capture_cols);
	if (apx_rtable_row(t) == 0)
		apx_rdoc_run_cells(d, t);

	t = apx_rdoc_table(d, APX_SEC_SUMMARY, "steady_state", "Steady state");
	APX_RTABLE_SET_COLS(t, steady_state_cols);
	if (apx_rtable_row(t) == 0)
		apx_rdoc_steady_cells(d, t);
	if (st->source == APX_STEPS_NONE)
		apx_rdoc_note(d, APX_SEC_SUMMARY,
			      "no repeating step found: the numbers are for the whole run");

	t = apx_rdoc_table(d, APX_SEC_SUMMARY, "devices", "GPUs");
	APX_RTABLE_SET_COLS(t, devices_cols);
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].known && apx_rtable_row(t) == 0)
			apx_rdoc_device_cells(d, t, &m->devices[i]);

	t = apx_rdoc_table(d, APX_SEC_SUMMARY, "processes", "Processes");
	APX_RTABLE_SET_COLS(t, processes_cols);
	for (size_t i = 0; i < m->nfiles && apx_rtable_row(t) == 0; i++)
		apx_rdoc_file_cells(d, t, &m->files[i]);
}

/* A finding's metrics as a one-row table, a column per metric. */
static struct apx_rtable *metrics_table(struct apx_rdoc *d, const struct apx_finding *f)
{
	struct apx_rtable *t;

	if (!f->nmetrics || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->key = "metrics";
	t->title = "Metrics";
	t->note = "";
	for (unsigned i = 0; i < f->nmetrics; i++)
		apx_rtable_col(t, f->metrics[i].key, f->metrics[i].key, f->metrics[i].unit);
	if (apx_rtable_row(t) == 0)
		for (unsigned i = 0; i < t->ncols; i++)
			apx_rtable_num(t, i, f->metrics[i].value);
	(void)d;
	return t;
}

static struct apx_rtable *evidence_table(struct apx_rdoc *d, const struct apx_finding *f)
{
	const struct apx_evidence *e = &f->table;
	struct apx_rtable *t;

	if (!e->ncols || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->key = "evidence";
	t->title = "Evidence";
	t->note = "";
	apx_rtable_col(t, e->label_key ? e->label_key : "item", e->label_key ? e->label_key : "item",
		       APX_UNIT_TEXT);
	t->hint[0].jkey = e->label_key ? e->label_key : "";	/* the JSON's name for it */
	for (unsigned c = 0; c < e->ncols; c++)
		apx_rtable_col(t, e->col[c].key, e->col[c].key, e->col[c].unit);
	for (unsigned r = 0; r < e->nrows; r++) {
		if (apx_rtable_row(t) < 0)
			break;
		apx_rtable_str(d, t, 0, e->row[r].label);
		for (unsigned c = 0; c < e->ncols; c++)
			apx_rtable_num(t, c + 1, e->row[r].v[c]);
	}
	return t;
}

static const struct apx_rcol finding_metrics_cols[] = {
	{ "rank", "#", APX_UNIT_COUNT },
	{ "rule", "rule", APX_UNIT_TEXT },
	{ "key", "metric", APX_UNIT_TEXT },
	{ "value", "value", APX_UNIT_RATIO },
	{ "unit", "unit", APX_UNIT_TEXT },
};

/* Every finding's metrics in one table, a row each (CSV: one table for all findings). */
static void metrics_long(struct apx_rdoc *d)
{
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_FINDINGS, "metrics", "Finding metrics");

	APX_RTABLE_SET_COLS(t, finding_metrics_cols);
	if (!t)
		return;
	t->plot_only = 1;	/* the HTML shows each finding's metrics with the finding */
	for (size_t i = 0; i < d->fd->n; i++) {
		const struct apx_finding *f = &d->fd->f[i];

		for (unsigned k = 0; k < f->nmetrics; k++) {
			if (apx_rtable_row(t) < 0)
				return;
			apx_rtable_u64(t, 0, i + 1);
			apx_rtable_str(d, t, 1, f->rule);
			apx_rtable_str(d, t, 2, f->metrics[k].key);
			apx_rtable_num(t, 3, f->metrics[k].value);
			apx_rtable_str(d, t, 4, apx_unit_name(f->metrics[k].unit));
		}
	}
}

static const struct apx_rcol findings_cols[] = {
	{ "rank", "#", APX_UNIT_COUNT },
	{ "severity", "severity", APX_UNIT_TEXT },
	{ "rule", "rule", APX_UNIT_TEXT },
	{ "saving_ns", "saving", APX_UNIT_NS },
	{ "saving_pct", "of the run", APX_UNIT_PCT },
	{ "saving_per_step_ns", "a step", APX_UNIT_NS },
	{ "saving_step_pct", "of step time", APX_UNIT_PCT },
	{ "confidence_pct", "confidence", APX_UNIT_PCT },
	{ "title", "finding", APX_UNIT_TEXT },
};

/* One row of a findings table. */
static void finding_row(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_rfinding *rf)
{
	const struct apx_finding *f = rf->f;

	if (apx_rtable_row(t) < 0)
		return;
	apx_rtable_u64(t, 0, rf->rank);
	apx_rtable_str(d, t, 1, rf->severity);
	apx_rtable_str(d, t, 2, f->rule);
	if (f->saving_estimated) {
		apx_rtable_num(t, 3, f->saving_ns);
		apx_rtable_num(t, 4, f->saving_pct);
	}
	if (rf->per_step) {
		apx_rtable_num(t, 5, rf->step_ns);
		apx_rtable_num(t, 6, rf->step_pct);
	}
	apx_rtable_num(t, 7, f->confidence_pct);
	apx_rtable_str(d, t, 8, f->title);
}

/* A finding as the emitters see it: its rank in its list, its typed tables. */
static void rfinding(struct apx_rdoc *d, struct apx_rfinding *rf, const struct apx_finding *f,
		     unsigned rank)
{
	*rf = (struct apx_rfinding){ .f = f, .rank = rank };
	rf->severity = severity_word(f->severity);
	rf->metrics = metrics_table(d, f);
	rf->evidence = evidence_table(d, f);
	/* a steady finding's saving a step: its total over the steady steps, and as % of step
	 * time (of the steady window, summed over devices: the budget the steady findings'
	 * savings never pass together, rules.c) */
	if (!f->startup && f->saving_estimated && d->m->steady.source != APX_STEPS_NONE &&
	    d->m->steady.count && d->fd->steady_budget_ns > 0) {
		rf->per_step = 1;
		rf->step_ns = f->saving_ns / (double)d->m->steady.count;
		rf->step_pct = f->saving_ns * 100.0 / d->fd->steady_budget_ns;
	}
}

static const struct apx_rcol finding_lines_cols[] = {
	{ "rank", "#", APX_UNIT_COUNT },
	{ "rule", "rule", APX_UNIT_TEXT },
	{ "file", "file", APX_UNIT_TEXT },
	{ "line", "line", APX_UNIT_ID },
	{ "func", "function", APX_UNIT_TEXT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "ns", "time", APX_UNIT_NS },
	{ "cause", "cause", APX_UNIT_TEXT },
	{ "cause_text", "what they were", APX_UNIT_TEXT },
	{ "per_step", "a step", APX_UNIT_RATIO },
};

/* The lines that cause the findings (from the Python stacks), a row each; only when some
 * finding names lines. */
static void lines_long(struct apx_rdoc *d)
{
	struct apx_rtable *t = NULL;

	for (size_t i = 0; i < d->nfindings; i++) {
		const struct apx_finding *f = d->findings[i].f;

		for (unsigned k = 0; k < f->nlines; k++) {
			const struct apx_finding_line *l = &f->lines[k];

			if (!t) {
				t = apx_rdoc_table(d, APX_SEC_FINDINGS, "finding_lines",
						   "Lines that cause the findings");
				APX_RTABLE_SET_COLS(t, finding_lines_cols);
			}
			if (apx_rtable_row(t) < 0)
				return;
			apx_rtable_u64(t, 0, d->findings[i].rank);
			apx_rtable_str(d, t, 1, f->rule);
			apx_rtable_text(d, t, 2, l->file, l->file_len);
			apx_rtable_u64(t, 3, l->line);
			apx_rtable_text(d, t, 4, l->func, l->func_len);
			apx_rtable_num(t, 5, l->count);
			apx_rtable_num(t, 6, l->ns);
			if (l->cause_key)
				apx_rtable_str(d, t, 7, l->cause_key);
			if (l->cause[0])
				apx_rtable_str(d, t, 8, l->cause);
			if (l->has_per_step)
				apx_rtable_num(t, 9, l->per_step);
		}
	}
}

/* The main list: the steady state's findings (and start-up's when it dominates the run). */
static void findings(struct apx_rdoc *d)
{
	const struct apx_findings *fd = d->fd;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_FINDINGS, "findings", "Findings");

	APX_RTABLE_SET_COLS(t, findings_cols);
	if (t)
		t->plot_only = 1;	/* HTML: the findings' cards say the same */
	d->sec[APX_SEC_FINDINGS].has_findings = 1;
	d->findings = calloc(fd->n ? fd->n : 1, sizeof(*d->findings));
	if (!d->findings)
		return;
	for (size_t i = 0; i < fd->n; i++) {
		const struct apx_finding *f = &fd->f[i];
		struct apx_rfinding *rf;

		if (!apx_finding_in_main(fd, f))
			continue;
		rf = &d->findings[d->nfindings++];
		rfinding(d, rf, f, (unsigned)d->nfindings);
		finding_row(d, t, rf);
	}
	metrics_long(d);
	lines_long(d);
	if (!d->nfindings)
		apx_rdoc_note(d, APX_SEC_FINDINGS, "none: no rule found a problem worth a line");
	if (fd->recorded_dropped)
		apx_rdoc_note(d, APX_SEC_FINDINGS, "%zu more findings recorded in the files are not "
			      "shown: the report keeps %d", fd->recorded_dropped, APX_FINDINGS_MAX);
}

static const struct apx_rcol startup_cols[] = {
	{ "end_ns", "steady state from", APX_UNIT_NS },
	{ "gpu_span_ns", "GPU span before it", APX_UNIT_NS },
	{ "gpu_busy_ns", "GPU busy", APX_UNIT_NS },
	{ "gpu_idle_ns", "GPU idle", APX_UNIT_NS },
	{ "dominates", "dominates the run", APX_UNIT_COUNT },
};

/* Start-up: the GPU's work before the steady window, and its findings (when start-up does not
 * dominate the run; otherwise they are in the main list), with their typed tables
 * (d->sfindings, for the JSON view). */
static void startup(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_findings *fd = d->fd;
	const struct apx_an_timeline *g = &m->gpu;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_STARTUP, "startup", "Start-up");
	struct apx_rtable *ft = apx_rdoc_table(d, APX_SEC_STARTUP, "findings",
					       "Start-up findings");
	unsigned rank = 0;

	APX_RTABLE_SET_COLS(t, startup_cols);
	APX_RTABLE_SET_COLS(ft, findings_cols);
	if (apx_rtable_row(t) == 0) {
		apx_rtable_u64(t, 0, m->steady_start_ns > m->run_start_ns
				     ? m->steady_start_ns - m->run_start_ns : 0);
		apx_rtable_u64(t, 1, g->startup_ns);
		apx_rtable_u64(t, 2, g->startup_ns > g->startup_idle_ns
				     ? g->startup_ns - g->startup_idle_ns : 0);
		apx_rtable_u64(t, 3, g->startup_idle_ns);
		apx_rtable_u64(t, 4, fd->startup_dominates ? 1 : 0);
	}
	d->sfindings = calloc(fd->n ? fd->n : 1, sizeof(*d->sfindings));
	for (size_t i = 0; i < fd->n; i++) {
		if (apx_finding_in_main(fd, &fd->f[i]))
			continue;
		struct apx_rfinding one, *rf = d->sfindings ? &d->sfindings[d->nsfindings++] : &one;

		rfinding(d, rf, &fd->f[i], ++rank);
		finding_row(d, ft, rf);
	}
	if (!rank)
		apx_rdoc_note(d, APX_SEC_STARTUP, fd->startup_dominates
			      ? "start-up dominates the run: its findings are ranked with the others"
			      : "no start-up finding");
}

static const struct apx_rcol checks_cols[] = {
	{ "rule", "rule", APX_UNIT_TEXT },
	{ "status", "status", APX_UNIT_TEXT },
	{ "title", "check", APX_UNIT_TEXT },
	{ "why", "why", APX_UNIT_TEXT },
};

static void checks(struct apx_rdoc *d)
{
	const struct apx_findings *fd = d->fd;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_CHECKS, "checks", "Checks");

	APX_RTABLE_SET_COLS(t, checks_cols);
	for (size_t i = 0; i < fd->nresults && apx_rtable_row(t) == 0; i++)
		apx_rdoc_check_cells(d, t, &fd->results[i]);
}

static const struct apx_rcol files_cols[] = {
	{ "path", "file", APX_UNIT_TEXT },
	{ "pid", "pid", APX_UNIT_ID },
	{ "producer", "written by", APX_UNIT_TEXT },
	{ "producer_version", "version", APX_UNIT_TEXT },
	{ "level", "level", APX_UNIT_TEXT },
	{ "status", "status", APX_UNIT_TEXT },
	{ "records", "records", APX_UNIT_COUNT },
	{ "records_lost", "lost", APX_UNIT_COUNT },
	{ "records_unreadable", "unreadable", APX_UNIT_COUNT },
	{ "damage", "damage", APX_UNIT_TEXT },
	{ "degraded", "degraded", APX_UNIT_TEXT },
};

static void method(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_METHOD, "files", "Trace files");

	APX_RTABLE_SET_COLS(t, files_cols);
	for (size_t i = 0; i < m->nfiles && apx_rtable_row(t) == 0; i++)
		apx_rdoc_file_cells(d, t, &m->files[i]);
	apx_rdoc_note(d, APX_SEC_METHOD, "kernels replayed: no; apx-inject traces: CUPTI activity "
		      "records and callbacks (docs/report.md, \"How this was measured\")");
}

static const struct apx_rcol series_cols[] = {
	{ "pid", "pid", APX_UNIT_ID },
	{ "name", "series", APX_UNIT_TEXT },
	{ "unit", "unit", APX_UNIT_TEXT },
	{ "device", "device", APX_UNIT_ID },
	{ "samples", "samples", APX_UNIT_COUNT },
	{ "min", "min", APX_UNIT_RATIO },
	{ "mean", "mean", APX_UNIT_RATIO },
	{ "max", "max", APX_UNIT_RATIO },
};
static const struct apx_rcol values_cols[] = {
	{ "pid", "pid", APX_UNIT_ID },
	{ "key", "key", APX_UNIT_TEXT },
	{ "value", "value", APX_UNIT_TEXT },
};

static void nvperfd(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_NVPERFD, "series", "Time series");
	struct apx_rtable *kv = apx_rdoc_table(d, APX_SEC_NVPERFD, "values", "Key/values");

	APX_RTABLE_SET_COLS(t, series_cols);
	APX_RTABLE_SET_COLS(kv, values_cols);
	for (size_t i = 0; i < m->observed.n; i++) {
		const struct apx_an_observed *o = APX_VEC_AT(&m->observed, struct apx_an_observed, i);
		uint64_t pid = m->files[o->file].pid;

		for (size_t k = o->series_first; k < o->series_first + o->nseries; k++) {
			const struct apx_an_series *s = APX_VEC_AT(&m->series, struct apx_an_series, k);

			if (apx_rtable_row(t) < 0)
				break;
			apx_rtable_u64(t, 0, pid);
			apx_rtable_text(d, t, 1, s->name, s->name ? s->name_len : 0);
			apx_rtable_text(d, t, 2, s->unit, s->unit ? s->unit_len : 0);
			apx_rtable_u64(t, 3, s->device);
			apx_rtable_u64(t, 4, s->count);
			if (s->count) {
				apx_rtable_num(t, 5, s->min);
				apx_rtable_num(t, 6, s->mean);
				apx_rtable_num(t, 7, s->max);
			}
		}
		for (size_t k = o->kv_first; k < o->kv_first + o->nkv; k++) {
			const struct apx_an_kv *v = APX_VEC_AT(&m->kvs, struct apx_an_kv, k);

			if (apx_rtable_row(kv) < 0)
				break;
			apx_rtable_u64(kv, 0, pid);
			apx_rtable_text(d, kv, 1, v->key, v->key_len);
			apx_rtable_text(d, kv, 2, v->val, v->val_len);
		}
	}
	if (!m->observed.n)
		apx_rdoc_note(d, APX_SEC_NVPERFD, "no nvperfd summary among the files");
}

struct apx_rdoc *apx_rdoc_build(const struct apx_model *m, const struct apx_findings *fd,
				const struct apx_rdoc_opts *o)
{
	static void (*const builders[APX_SEC__COUNT])(struct apx_rdoc *) = {
		[APX_SEC_SUMMARY] = summary,
		[APX_SEC_FINDINGS] = findings,
		[APX_SEC_STARTUP] = startup,
		[APX_SEC_NVPERFD] = nvperfd,
		[APX_SEC_KERNELS] = apx_rdoc_build_kernels,
		[APX_SEC_TRANSFERS] = apx_rdoc_build_transfers,
		[APX_SEC_SYNC] = apx_rdoc_build_sync,
		[APX_SEC_IDLE] = apx_rdoc_build_idle,
		[APX_SEC_METRICS] = apx_rdoc_build_metrics,
		[APX_SEC_MEMORY] = apx_rdoc_build_memory,
		[APX_SEC_STREAMS] = apx_rdoc_build_streams,
		[APX_SEC_NVTX] = apx_rdoc_build_nvtx,
		[APX_SEC_L2] = apx_rdoc_build_l2,
		[APX_SEC_UVM] = apx_rdoc_build_uvm,
		[APX_SEC_CPU] = apx_rdoc_build_cpu,
		[APX_SEC_CHECKS] = checks,
		[APX_SEC_METHOD] = method,
	};
	struct apx_rdoc *d = apx_rdoc_new(m, fd, o ? o->sections : 0, o ? o->top : 0);

	if (!d)
		return NULL;
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		if (d->sec[s].present && builders[s])
			builders[s](d);
	apx_rdoc_build_views(d);
	if (o && o->store)
		apx_rdoc_build_series(d, o->store);
	return d;
}
