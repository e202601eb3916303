/*
 * build_diff.c - the document of `apx diff` (doc.h: apx_rdoc_build_diff) from two runs compared
 * (analysis/diff.h). It uses the report document's containers and emitters: five sections
 * (summary, findings, kernels, idle, method) with a diff's titles; each holds its text blocks,
 * its data tables (CSV, HTML) and its JSON members, schema "apx.diff/1" (docs/diff.md). Every
 * sentence, order and --top cut of apx diff is here; the emitters decide nothing. Called by
 * cli/cmd_diff.c and the unit tests; single-threaded.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/diff.h"
#include "report/doc.h"

#include "base/banned.h"

#define DJ (APX_VIEW_DATA | APX_VIEW_JSON)

static const unsigned diff_sections = 1u << APX_SEC_SUMMARY | 1u << APX_SEC_FINDINGS |
				      1u << APX_SEC_KERNELS | 1u << APX_SEC_IDLE |
				      1u << APX_SEC_METHOD;

/* "+1.23 ms", "-412.0 us", "0 ns" */
static const char *signed_ns(char *buf, size_t cap, double v)
{
	char b[32];

	snprintf(buf, cap, "%s%s", v > 0 ? "+" : "", apx_unit_fmt(b, sizeof(b), APX_UNIT_NS, v));
	return buf;
}

/* A change in % of a, "(+1.5%)"; "(new)" when a is 0 and b is not; "" when both are 0. */
static const char *change_pct(char *buf, size_t cap, double a, double b)
{
	if (a > 0)
		snprintf(buf, cap, " (%+.1f%%)", 100.0 * (b - a) / a);
	else
		snprintf(buf, cap, "%s", b > 0 ? " (new)" : "");
	return buf;
}

/* A number a step for people: "544", "8.0", "0.25" */
static const char *per_step(char *buf, size_t cap, double v)
{
	if (v >= 100 || v == 0)
		snprintf(buf, cap, "%.0f", v);
	else if (v >= 1)
		snprintf(buf, cap, "%.1f", v);
	else
		snprintf(buf, cap, "%.2f", v);
	return buf;
}

/* ---- summary: the runs, the step time's change, the program, the work ------------------- */

static const struct apx_rvcol run_cols[] = {
	{ .key = "run", .title = "run", .unit = APX_UNIT_TEXT },
	{ .key = "path", .title = "trace", .unit = APX_UNIT_TEXT },
	{ .key = "command", .title = "command", .unit = APX_UNIT_TEXT },
	{ .key = "program", .title = "program", .unit = APX_UNIT_TEXT },
	{ .key = "step_source", .title = "steps from", .unit = APX_UNIT_TEXT },
	{ .key = "steps_found", .title = "steps found", .unit = APX_UNIT_COUNT },
	{ .key = "steps", .title = "steps compared", .unit = APX_UNIT_COUNT },
	{ .key = "steady_window", .title = "steady window's", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "step_median_ns", .title = "median step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "median_ci_lo_ns", .title = "95% interval from", .unit = APX_UNIT_NS,
	  .h = { .jkey = "median_ci95_ns/0", .jfmt = APX_JF_INT } },
	{ .key = "median_ci_hi_ns", .title = "95% interval to", .unit = APX_UNIT_NS,
	  .h = { .jkey = "median_ci95_ns/1", .jfmt = APX_JF_INT } },
	{ .key = "step_p95_ns", .title = "p95 step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "step_mean_ns", .title = "mean step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "step_min_ns", .title = "shortest step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "step_max_ns", .title = "longest step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "kernels_per_step", .title = "kernels a step", .unit = APX_UNIT_RATIO,
	  .h = { .jkey = "per_step/kernels", .jfmt = APX_JF_F4 } },
	{ .key = "kernel_ns_per_step", .title = "kernel time a step", .unit = APX_UNIT_NS,
	  .h = { .jkey = "per_step/kernel_ns", .jfmt = APX_JF_INT } },
	{ .key = "copies_per_step", .title = "copies a step", .unit = APX_UNIT_RATIO,
	  .h = { .jkey = "per_step/copies", .jfmt = APX_JF_F4 } },
	{ .key = "copy_bytes_per_step", .title = "bytes copied a step", .unit = APX_UNIT_BYTES,
	  .h = { .jkey = "per_step/copy_bytes", .jfmt = APX_JF_INT } },
	{ .key = "copy_ns_per_step", .title = "copy time a step", .unit = APX_UNIT_NS,
	  .h = { .jkey = "per_step/copy_ns", .jfmt = APX_JF_INT } },
	{ .key = "idle_ns_per_step", .title = "GPU idle a step", .unit = APX_UNIT_NS,
	  .h = { .jkey = "per_step/idle_ns", .jfmt = APX_JF_INT } },
	{ .key = "distinct_kernels", .title = "kernel names", .unit = APX_UNIT_COUNT },
};

static void run_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_diff_side *s,
		      const char *run)
{
	apx_rtable_kstr(d, t, "run", run);
	apx_rtable_kstr(d, t, "path", s->path);
	apx_rtable_kstr(d, t, "command", s->command);
	apx_rtable_kstr(d, t, "program", s->program);
	apx_rtable_kstr(d, t, "step_source", apx_step_source_name(s->source));
	apx_rtable_ku64(t, "steps_found", s->steps_found);
	apx_rtable_ku64(t, "steps", s->steps);
	apx_rtable_ku64(t, "steady_window", (uint64_t)!!s->window_only);
	apx_rtable_knum(t, "step_median_ns", s->median_ns);
	apx_rtable_knum(t, "median_ci_lo_ns", s->ci_lo_ns);
	apx_rtable_knum(t, "median_ci_hi_ns", s->ci_hi_ns);
	apx_rtable_knum(t, "step_p95_ns", s->p95_ns);
	apx_rtable_knum(t, "step_mean_ns", s->mean_ns);
	apx_rtable_knum(t, "step_min_ns", s->min_ns);
	apx_rtable_knum(t, "step_max_ns", s->max_ns);
	apx_rtable_knum(t, "kernels_per_step", s->kernels);
	apx_rtable_knum(t, "kernel_ns_per_step", s->kernel_ns);
	apx_rtable_knum(t, "copies_per_step", s->copies);
	apx_rtable_knum(t, "copy_bytes_per_step", s->copy_bytes);
	apx_rtable_knum(t, "copy_ns_per_step", s->copy_ns);
	apx_rtable_knum(t, "idle_ns_per_step", s->idle_total_ns);
	apx_rtable_ku64(t, "distinct_kernels", s->distinct_kernels);
}

static const struct apx_rvcol step_time_cols[] = {
	{ .key = "change_ns", .title = "change of the median step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "change_pct", .title = "change", .unit = APX_UNIT_PCT, .h.jfmt = APX_JF_F4 },
	{ .key = "change_ci_lo_ns", .title = "95% interval from", .unit = APX_UNIT_NS,
	  .h = { .jkey = "change_ci95_ns/0", .jfmt = APX_JF_INT } },
	{ .key = "change_ci_hi_ns", .title = "95% interval to", .unit = APX_UNIT_NS,
	  .h = { .jkey = "change_ci95_ns/1", .jfmt = APX_JF_INT } },
	{ .key = "outside_noise", .title = "outside the noise", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "faster", .title = "AFTER faster", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "slower", .title = "AFTER slower", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
};

static const struct apx_rvcol program_cols[] = {
	{ .key = "same_command", .title = "same command line", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "same_program", .title = "same program", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "kernel_overlap_time", .title = "kernels' overlap by time", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
	{ .key = "kernel_overlap_names", .title = "kernels' overlap by name",
	  .unit = APX_UNIT_RATIO, .h.jfmt = APX_JF_F4 },
	{ .key = "different_programs", .title = "different programs", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "compared_anyway", .title = "compared anyway", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
};

static const struct apx_rvcol work_cols[] = {
	{ .key = "differs", .title = "the work differs", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "kernels_differ", .title = "kernels a step differ", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "copies_differ", .title = "copies a step differ", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "bytes_differ", .title = "bytes a step differ", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
	{ .key = "warning", .title = "warning", .unit = APX_UNIT_TEXT, .h.jomit = 1 },
};

/* "a step: 544 -> 552 kernels (+1.5%), 8.0 -> 0 copies (-100.0%), 7.7 MB -> 7.7 MB copied" and
 * the warning when the work differs (also the "work" member's). */
static struct apx_rtable *work(struct apx_rdoc *d, const struct apx_diff *df)
{
	const struct apx_diff_side *b = &df->side[0], *a = &df->side[1];
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_SUMMARY, "work", "Work a step");
	char line[512], warn[512] = "", what[64] = "", b1[32], b2[32], b3[32];
	const unsigned w = df->work_differs;

	snprintf(line, sizeof(line), "%s -> %s kernels%s", per_step(b1, sizeof(b1), b->kernels),
		 per_step(b2, sizeof(b2), a->kernels),
		 change_pct(b3, sizeof(b3), b->kernels, a->kernels));
	apx_text_append(line, sizeof(line), ", %s -> %s copies%s",
			per_step(b1, sizeof(b1), b->copies), per_step(b2, sizeof(b2), a->copies),
			change_pct(b3, sizeof(b3), b->copies, a->copies));
	apx_text_append(line, sizeof(line), ", %s -> %s copied%s",
			apx_unit_fmt(b1, sizeof(b1), APX_UNIT_BYTES, b->copy_bytes),
			apx_unit_fmt(b2, sizeof(b2), APX_UNIT_BYTES, a->copy_bytes),
			change_pct(b3, sizeof(b3), b->copy_bytes, a->copy_bytes));
	apx_rdoc_blk(d, APX_SEC_SUMMARY, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
		     .head = "work a step  ", .windent = 15, .text = line });
	apx_rdoc_note(d, APX_SEC_SUMMARY, "work a step: %s", line);	/* the HTML's */
	if (w) {
		if (w & APX_DIFF_WORK_KERNELS)
			apx_text_append(what, sizeof(what), "kernels");
		if (w & APX_DIFF_WORK_COPIES)
			apx_text_append(what, sizeof(what), "%scopies", what[0] ? ", " : "");
		if (w & APX_DIFF_WORK_BYTES)
			apx_text_append(what, sizeof(what), "%sbytes copied", what[0] ? ", " : "");
		snprintf(warn, sizeof(warn), "the work differs (%s a step more than %.0f%% apart): "
			 "fine when AFTER batched, fused or dropped them on purpose, but a faster "
			 "step that does less work (a smaller batch, fewer layers) is no saving",
			 what, 100 * APX_DIFF_WORK_SHARE);
		apx_rdoc_blk(d, APX_SEC_SUMMARY, &(struct apx_rblk){ .kind = APX_RB_SEV,
			     .indent = 2, .head = "", .sev = APX_SEV_WARNING, .sevpad = 13,
			     .windent = 15, .text = warn });
		apx_rdoc_note(d, APX_SEC_SUMMARY, "warning: %s", warn);
	}
	APX_RTABLE_SET_VCOLS(t, work_cols);
	if (!t || apx_rtable_row(t) < 0)
		return NULL;
	t->views = DJ;
	apx_rtable_u64(t, 0, !!w);
	apx_rtable_u64(t, 1, !!(w & APX_DIFF_WORK_KERNELS));
	apx_rtable_u64(t, 2, !!(w & APX_DIFF_WORK_COPIES));
	apx_rtable_u64(t, 3, !!(w & APX_DIFF_WORK_BYTES));
	if (w)
		apx_rtable_str(d, t, 4, warn);
	return t;
}

/* "before   23.18 ms a step, 95% interval [23.05 ms, 23.30 ms], p95 24.71 ms; 66 steps ..." */
static void run_lines(struct apx_rdoc *d, const struct apx_diff_side *s, const char *label)
{
	char line[512], head[32], b1[32], b2[32], b3[32], b4[32];

	snprintf(line, sizeof(line), "%s a step, 95%% interval [%s, %s], p95 %s; %" PRIu64
		 " steps (%s%s)", apx_unit_fmt(b1, sizeof(b1), APX_UNIT_NS, s->median_ns),
		 apx_unit_fmt(b2, sizeof(b2), APX_UNIT_NS, s->ci_lo_ns),
		 apx_unit_fmt(b3, sizeof(b3), APX_UNIT_NS, s->ci_hi_ns),
		 apx_unit_fmt(b4, sizeof(b4), APX_UNIT_NS, s->p95_ns), s->steps,
		 apx_step_source_name(s->source),
		 s->window_only ? ", the steady window's" : ", every step found");
	snprintf(head, sizeof(head), "%-13s", label);
	apx_rdoc_blk(d, APX_SEC_SUMMARY, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
		     .head = head, .windent = 15, .text = line });
	apx_rdoc_blk(d, APX_SEC_SUMMARY, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 15,
		     .head = "", .windent = 17, .text = s->path });
	if (s->command[0])
		apx_rdoc_blk(d, APX_SEC_SUMMARY, &(struct apx_rblk){ .kind = APX_RB_WRAP,
			     .indent = 15, .head = "", .windent = 17, .text = s->command });
}

static void summary(struct apx_rdoc *d, const struct apx_diff *df, int forced)
{
	const unsigned s = APX_SEC_SUMMARY;
	struct apx_rtable *runs = apx_rdoc_table(d, s, "runs", "The two runs");
	struct apx_rtable *jb = apx_rdoc_view_table(d, s, "json:before", APX_VIEW_JSON);
	struct apx_rtable *ja = apx_rdoc_view_table(d, s, "json:after", APX_VIEW_JSON);
	struct apx_rtable *st = apx_rdoc_table(d, s, "step_time", "Step time's change");
	struct apx_rtable *pg = apx_rdoc_table(d, s, "program", "The program check");
	struct apx_rtable *wk;
	char line[512], b1[32], b2[32], b3[32];

	run_lines(d, &df->side[0], "before");
	run_lines(d, &df->side[1], "after");
	snprintf(line, sizeof(line), "%s a step (%+.1f%%), 95%% interval [%s, %s]: %s",
		 signed_ns(b1, sizeof(b1), df->change_ns), df->change_pct,
		 signed_ns(b2, sizeof(b2), df->ci_lo_ns), signed_ns(b3, sizeof(b3), df->ci_hi_ns),
		 !df->outside_noise ? "inside the noise (the interval holds 0)"
		 : df->change_ns < 0 ? "AFTER is faster, outside the noise"
				     : "AFTER is slower, outside the noise");
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
		     .head = "change       ", .windent = 15, .text = line });
	apx_rdoc_note(d, s, "change of the median step: %s", line);	/* the HTML's */
	wk = work(d, df);
	if (df->same_command)
		snprintf(line, sizeof(line), "the same command line; ");
	else if (df->same_program)
		snprintf(line, sizeof(line), "the same program (%s), other arguments; ",
			 df->side[0].program);
	else
		snprintf(line, sizeof(line), "other programs (%s, %s); ", df->side[0].program,
			 df->side[1].program);
	apx_text_append(line, sizeof(line), "kernels a step overlap %.0f%% by time, %.0f%% by "
			"name", 100 * df->overlap_time, 100 * df->overlap_names);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
		     .head = "program      ", .windent = 15, .text = line });
	apx_rdoc_note(d, s, "program: %s", line);
	if (df->different_program && forced) {
		static const char forced_text[] = "these look like different programs (compared "
						   "with --force-compare): a step of one need not "
						   "be a step of the other";

		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_SEV, .indent = 2, .head = "",
			     .sev = APX_SEV_WARNING, .sevpad = 13, .windent = 15,
			     .text = forced_text });
		apx_rdoc_note(d, s, "warning: %s", forced_text);
	}

	APX_RTABLE_SET_VCOLS(runs, run_cols);
	APX_RTABLE_SET_VCOLS(jb, run_cols);
	APX_RTABLE_SET_VCOLS(ja, run_cols);
	if (runs && apx_rtable_row(runs) == 0)
		run_cells(d, runs, &df->side[0], "before");
	if (runs && apx_rtable_row(runs) == 0)
		run_cells(d, runs, &df->side[1], "after");
	if (jb && apx_rtable_row(jb) == 0)
		run_cells(d, jb, &df->side[0], "before");
	if (ja && apx_rtable_row(ja) == 0)
		run_cells(d, ja, &df->side[1], "after");

	APX_RTABLE_SET_VCOLS(st, step_time_cols);
	if (st && apx_rtable_row(st) == 0) {
		st->views = DJ;
		apx_rtable_num(st, 0, round(df->change_ns));
		apx_rtable_num(st, 1, df->change_pct);
		apx_rtable_num(st, 2, round(df->ci_lo_ns));
		apx_rtable_num(st, 3, round(df->ci_hi_ns));
		apx_rtable_u64(st, 4, (uint64_t)!!df->outside_noise);
		apx_rtable_u64(st, 5, (uint64_t)(df->outside_noise && df->change_ns < 0));
		apx_rtable_u64(st, 6, (uint64_t)(df->outside_noise && df->change_ns > 0));
	}
	APX_RTABLE_SET_VCOLS(pg, program_cols);
	if (pg && apx_rtable_row(pg) == 0) {
		pg->views = DJ;
		apx_rtable_u64(pg, 0, (uint64_t)!!df->same_command);
		apx_rtable_u64(pg, 1, (uint64_t)!!df->same_program);
		apx_rtable_num(pg, 2, df->overlap_time);
		apx_rtable_num(pg, 3, df->overlap_names);
		apx_rtable_u64(pg, 4, (uint64_t)!!df->different_program);
		apx_rtable_u64(pg, 5, (uint64_t)!!(df->different_program && forced));
	}
	apx_rdoc_json(d, s, "before", jb, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "after", ja, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "step_time", st, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "program", pg, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "work", wk, APX_RJ_OBJECT, 0);
}

/* ---- findings ---------------------------------------------------------------------------- */

static const struct apx_rvcol findings_cols[] = {
	{ .key = "rule", .title = "rule", .unit = APX_UNIT_TEXT },
	{ .key = "status", .title = "status", .unit = APX_UNIT_TEXT },
	{ .key = "before_findings", .title = "findings before", .unit = APX_UNIT_COUNT },
	{ .key = "after_findings", .title = "findings after", .unit = APX_UNIT_COUNT },
	{ .key = "before_step_ns", .title = "BEFORE's estimate a step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "after_step_ns", .title = "AFTER's estimate a step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "measured_saving_ns", .title = "measured saving a step", .unit = APX_UNIT_NS,
	  .h.jfmt = APX_JF_INT },
	{ .key = "title", .title = "finding", .unit = APX_UNIT_TEXT },
};

static const struct apx_rvcol findings_text_cols[] = {
	{ .key = "rule", .title = "rule", .unit = APX_UNIT_TEXT, .h = { .tw = -22, .tmax = 22 } },
	{ .key = "status", .title = "status", .unit = APX_UNIT_TEXT, .h = { .tw = -11 } },
	{ .key = "before_step_ns", .title = "estimated before", .unit = APX_UNIT_NS,
	  .h = { .tw = 16, .tna = "-" } },
	{ .key = "after_step_ns", .title = "after", .unit = APX_UNIT_NS,
	  .h = { .tw = 10, .tna = "-" } },
	{ .key = "measured_saving_ns", .title = "measured saving", .unit = APX_UNIT_NS,
	  .h = { .tw = 16, .tgap = 1 } },
};

static void finding_nums(struct apx_rtable *t, const struct apx_diff *df,
			 const struct apx_diff_finding *f)
{
	if (f->estimated[0])
		apx_rtable_knum(t, "before_step_ns", round(f->step_ns[0]));
	if (f->estimated[1])
		apx_rtable_knum(t, "after_step_ns", round(f->step_ns[1]));
	apx_rtable_knum(t, "measured_saving_ns", round(-df->change_ns));
}

static const char findings_intro[] = "estimates are the rules' saving a step in each run (as "
				     "apx report says them); the measured saving is BEFORE's "
				     "median step less AFTER's";

/* A row a rule: its status, BEFORE's and AFTER's estimated saving a step (what apx report
 * says of each run), and beside them the saving the step times measured (BEFORE's median less
 * AFTER's); in the text each row's finding under it. */
static void findings(struct apx_rdoc *d, const struct apx_diff *df)
{
	const unsigned s = APX_SEC_FINDINGS;
	struct apx_rtable *j = apx_rdoc_table(d, s, "findings", "Findings by rule");
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:findings", APX_VIEW_TEXT);

	APX_RTABLE_SET_VCOLS(j, findings_cols);
	APX_RTABLE_SET_VCOLS(t, findings_text_cols);
	if (!j || !t)
		return;
	j->views = DJ;
	for (size_t i = 0; i < df->nfindings; i++) {
		const struct apx_diff_finding *f = &df->findings[i];

		if (apx_rtable_row(j) < 0 || apx_rtable_row(t) < 0)
			break;
		apx_rtable_str(d, j, 0, f->rule);
		apx_rtable_str(d, j, 1, apx_diff_status_key(f->status));
		apx_rtable_u64(j, 2, f->count[0]);
		apx_rtable_u64(j, 3, f->count[1]);
		finding_nums(j, df, f);
		apx_rtable_str(d, j, 7, f->title);
		apx_rtable_kstr(d, t, "rule", f->rule);
		apx_rtable_kstr(d, t, "status", apx_diff_status_key(f->status));
		finding_nums(t, df, f);
	}
	apx_rdoc_json(d, s, "findings", j, APX_RJ_ARRAY, 0);
	if (!df->nfindings) {
		apx_rdoc_line(d, s, 2, "none: no rule found a problem in either run");
		return;
	}
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = "",
		     .windent = 2, .text = findings_intro });
	apx_rdoc_note(d, s, "%s", findings_intro);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_HEADER, .t = t });
	for (size_t i = 0; i < t->nrows; i++) {
		apx_rdoc_blk_rows(d, s, t, i, 1);
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 4,
			     .head = "", .windent = 4, .text = df->findings[i].title });
	}
}

/* ---- kernels ----------------------------------------------------------------------------- */

static const struct apx_rvcol kernels_cols[] = {
	{ .key = "name", .title = "kernel", .unit = APX_UNIT_TEXT },
	{ .key = "before_ns", .title = "before a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "after_ns", .title = "after a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "change_ns", .title = "change", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "before_launches", .title = "launches before", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
	{ .key = "after_launches", .title = "launches after", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
};

static const struct apx_rvcol kernels_sum_cols[] = {
	{ .key = "kernels", .title = "kernel names", .unit = APX_UNIT_COUNT },
	{ .key = "before_ns", .title = "before a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "after_ns", .title = "after a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "change_ns", .title = "change", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "before_launches", .title = "launches before", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
	{ .key = "after_launches", .title = "launches after", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
};

static const struct apx_rvcol kernels_text_cols[] = {
	{ .key = "before_ns", .title = "before", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "after_ns", .title = "after", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "change_ns", .title = "change", .unit = APX_UNIT_NS,
	  .h = { .tw = 10, .tplus = 1 } },
	{ .key = "before_launches", .title = "launches", .unit = APX_UNIT_RATIO,
	  .h = { .tw = 8, .tfix = 2, .tgap = 1 } },
	{ .key = "after_launches", .title = "", .unit = APX_UNIT_RATIO,
	  .h = { .tw = 7, .tfix = 2, .ttitle = "->" } },
	{ .key = "name", .title = "kernel (demangled)", .unit = APX_UNIT_TEXT,
	  .h = { .tgap = 1, .tmax = 48 } },
};

static void kernel_nums(struct apx_rtable *t, const double ns[2], const double launches[2])
{
	apx_rtable_knum(t, "before_ns", round(ns[0]));
	apx_rtable_knum(t, "after_ns", round(ns[1]));
	apx_rtable_knum(t, "change_ns", round(ns[1] - ns[0]));
	apx_rtable_knum(t, "before_launches", launches[0]);
	apx_rtable_knum(t, "after_launches", launches[1]);
}

/* The top kernels by change a step (either way), the others summed, all of them summed. */
static void kernels(struct apx_rdoc *d, const struct apx_diff *df)
{
	const unsigned s = APX_SEC_KERNELS;
	struct apx_rtable *k = apx_rdoc_table(d, s, "kernels", "Kernels a step, largest changes");
	struct apx_rtable *o = apx_rdoc_table(d, s, "kernels_other", "The other kernels, summed");
	struct apx_rtable *a = apx_rdoc_table(d, s, "kernels_total", "Every kernel, summed");
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:kernels", APX_VIEW_TEXT);
	double ns[2][2] = { { 0, 0 }, { 0, 0 } }, la[2][2] = { { 0, 0 }, { 0, 0 } };
	size_t top = df->nkernels < d->top ? df->nkernels : d->top;
	char label[64];

	APX_RTABLE_SET_VCOLS(k, kernels_cols);
	APX_RTABLE_SET_VCOLS(o, kernels_sum_cols);
	APX_RTABLE_SET_VCOLS(a, kernels_sum_cols);
	APX_RTABLE_SET_VCOLS(t, kernels_text_cols);
	if (!k || !o || !a || !t)
		return;
	k->views = o->views = a->views = DJ;
	for (size_t i = 0; i < df->nkernels; i++) {
		const struct apx_diff_kernel *kd = &df->kernels[i];
		unsigned rest = i >= top;

		for (unsigned j = 0; j < 2; j++) {
			ns[rest][j] += kd->ns[j];
			la[rest][j] += kd->launches[j];
		}
		if (rest)
			continue;
		if (apx_rtable_row(k) < 0 || apx_rtable_row(t) < 0)
			return;
		apx_rtable_str(d, k, 0, kd->name);
		kernel_nums(k, kd->ns, kd->launches);
		apx_rtable_kstr(d, t, "name", kd->name);
		kernel_nums(t, kd->ns, kd->launches);
	}
	if (apx_rtable_row(o) == 0) {
		apx_rtable_u64(o, 0, df->nkernels - top);
		kernel_nums(o, ns[1], la[1]);
	}
	if (apx_rtable_row(a) == 0) {
		double tn[2] = { ns[0][0] + ns[1][0], ns[0][1] + ns[1][1] };
		double tl[2] = { la[0][0] + la[1][0], la[0][1] + la[1][1] };

		apx_rtable_u64(a, 0, df->nkernels);
		kernel_nums(a, tn, tl);
		if (df->nkernels > top && apx_rtable_row(t) == 0) {
			snprintf(label, sizeof(label), "(%zu other kernel%s)", df->nkernels - top,
				 df->nkernels - top == 1 ? "" : "s");
			apx_rtable_kstr(d, t, "name", label);
			kernel_nums(t, ns[1], la[1]);
		}
		if (apx_rtable_row(t) == 0) {
			snprintf(label, sizeof(label), "(all %zu kernel%s)", df->nkernels,
				 df->nkernels == 1 ? "" : "s");
			apx_rtable_kstr(d, t, "name", label);
			kernel_nums(t, tn, tl);
		}
	}
	if (!df->nkernels)
		apx_rdoc_line(d, s, 2, "no kernels in either run's steps");
	else
		apx_rdoc_blk_table(d, s, t);
	apx_rdoc_json(d, s, "kernels", k, APX_RJ_ARRAY, 0);
	apx_rdoc_json(d, s, "kernels_other", o, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "kernels_total", a, APX_RJ_OBJECT, 0);
}

/* ---- idle -------------------------------------------------------------------------------- */

static const struct apx_rvcol idle_cols[] = {
	{ .key = "cause", .title = "cause", .unit = APX_UNIT_TEXT },
	{ .key = "before_ns", .title = "before a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "after_ns", .title = "after a step", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
	{ .key = "change_ns", .title = "change", .unit = APX_UNIT_NS, .h.jfmt = APX_JF_INT },
};

static const struct apx_rvcol idle_text_cols[] = {
	{ .key = "name", .title = "cause", .unit = APX_UNIT_TEXT, .h = { .tw = -28 } },
	{ .key = "before_ns", .title = "before", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "after_ns", .title = "after", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "change_ns", .title = "change", .unit = APX_UNIT_NS,
	  .h = { .tw = 11, .tplus = 1 } },
};

static void idle_nums(struct apx_rtable *t, double b, double a)
{
	apx_rtable_knum(t, "before_ns", round(b));
	apx_rtable_knum(t, "after_ns", round(a));
	apx_rtable_knum(t, "change_ns", round(a) - round(b));
}

static void idle(struct apx_rdoc *d, const struct apx_diff *df)
{
	const unsigned s = APX_SEC_IDLE;
	struct apx_rtable *j = apx_rdoc_table(d, s, "idle", "GPU idle a step by cause");
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:idle", APX_VIEW_TEXT);

	APX_RTABLE_SET_VCOLS(j, idle_cols);
	APX_RTABLE_SET_VCOLS(t, idle_text_cols);
	if (!j || !t)
		return;
	j->views = DJ;
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
		double b = df->side[0].idle_ns[c], a = df->side[1].idle_ns[c];

		if (apx_rtable_row(j) < 0)
			return;
		apx_rtable_str(d, j, 0, apx_idle_cause_key(c));
		idle_nums(j, b, a);
		if (!b && !a && c != APX_IDLE_UNKNOWN)
			continue;	/* the text: the causes of either run */
		if (apx_rtable_row(t) < 0)
			return;
		apx_rtable_kstr(d, t, "name", apx_idle_cause_name(c));
		idle_nums(t, b, a);
	}
	if (apx_rtable_row(t) == 0) {
		apx_rtable_kstr(d, t, "name", "(all causes)");
		idle_nums(t, df->side[0].idle_total_ns, df->side[1].idle_total_ns);
	}
	apx_rdoc_blk_table(d, s, t);
	apx_rdoc_json(d, s, "idle", j, APX_RJ_ARRAY, 0);
}

/* ---- method ------------------------------------------------------------------------------ */

static const struct apx_rvcol method_cols[] = {
	{ .key = "resamples", .title = "bootstrap resamples", .unit = APX_UNIT_COUNT },
	{ .key = "seed", .title = "bootstrap seed", .unit = APX_UNIT_TEXT },
	{ .key = "min_steps", .title = "steps needed", .unit = APX_UNIT_COUNT },
	{ .key = "overlap_min", .title = "kernels' overlap of one program", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
	{ .key = "work_share", .title = "work apart by more than", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
	{ .key = "finding_band", .title = "estimate moved by more than", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
};

static void method(struct apx_rdoc *d, const struct apx_diff *df)
{
	const unsigned s = APX_SEC_METHOD;
	struct apx_rtable *t = apx_rdoc_table(d, s, "method", "How this was compared");
	char seed[32], para[4][640];

	snprintf(seed, sizeof(seed), "%#" PRIx64, df->seed);
	snprintf(para[0], sizeof(para[0]),
		 "Steps: each run's steady state (the steps between the first one after warm-up "
		 "and the last, or every step found when the steady window holds fewer than %d), "
		 "as apx report finds them. Step time: the median (and p95) of their times; its "
		 "95%% interval and the difference's are percentile bootstraps of the medians, %u "
		 "resamples of both runs' steps with a fixed seed (%s): the same traces always "
		 "give the same numbers. A change is outside the noise when the difference's "
		 "interval leaves 0 out.", APX_DIFF_MIN_STEPS, df->resamples, seed);
	snprintf(para[1], sizeof(para[1]),
		 "A step's kernels, copies and idle time are their totals over the steps compared "
		 "(idle time: the steady window's, by cause, summed over devices) over the number "
		 "of steps; kernels are matched by demangled name. The work differs when kernels, "
		 "copies or bytes copied a step are more than %.0f%% apart.",
		 100 * APX_DIFF_WORK_SHARE);
	snprintf(para[2], sizeof(para[2]),
		 "Findings are matched by rule: an estimate a step is the rule's saving over the "
		 "steps found (as apx report says it); shrank or grew: moved by more than %.0f%% "
		 "of BEFORE's.", 100 * APX_DIFF_FINDING_BAND);
	snprintf(para[3], sizeof(para[3]),
		 "Two runs are different programs when their command lines differ and their "
		 "kernels a step overlap by less than %.0f%% both by time and by name.",
		 100 * APX_DIFF_OVERLAP_MIN);
	for (unsigned i = 0; i < 4; i++) {
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
			     .head = "", .windent = 2, .text = para[i] });
		apx_rdoc_note(d, s, "%s", para[i]);
	}
	APX_RTABLE_SET_VCOLS(t, method_cols);
	if (!t || apx_rtable_row(t) < 0)
		return;
	t->views = DJ;
	apx_rtable_u64(t, 0, df->resamples);
	apx_rtable_str(d, t, 1, seed);
	apx_rtable_u64(t, 2, APX_DIFF_MIN_STEPS);
	apx_rtable_num(t, 3, APX_DIFF_OVERLAP_MIN);
	apx_rtable_num(t, 4, APX_DIFF_WORK_SHARE);
	apx_rtable_num(t, 5, APX_DIFF_FINDING_BAND);
	apx_rdoc_json(d, s, "method", t, APX_RJ_OBJECT, 0);
}

struct apx_rdoc *apx_rdoc_build_diff(const struct apx_diff *df, unsigned top, int forced)
{
	struct apx_rdoc *d = apx_rdoc_new(NULL, NULL, diff_sections, top ? top : 10);
	char trace[1024];

	if (!d)
		return NULL;
	d->schema = "apx.diff/1";
	d->heading = "apx diff";
	d->command = apx_rdoc_strdup(d, df->side[0].command, strlen(df->side[0].command));
	snprintf(trace, sizeof(trace), "%s vs %s", df->side[0].path, df->side[1].path);
	d->trace = apx_rdoc_strdup(d, trace, strlen(trace));
	d->sec[APX_SEC_SUMMARY].title = "Step time (the steady state's steps: median, 95% "
					"interval)";
	d->sec[APX_SEC_FINDINGS].title = "Findings (BEFORE's estimated saving beside the measured "
					 "one)";
	d->sec[APX_SEC_KERNELS].title = "GPU kernels a step (by demangled name, largest changes "
					"first)";
	d->sec[APX_SEC_IDLE].title = "GPU idle a step (steady state, by cause)";
	d->sec[APX_SEC_METHOD].title = "How this was compared";
	summary(d, df, forced);
	findings(d, df);
	kernels(d, df);
	idle(d, df);
	method(d, df);
	return d;
}
