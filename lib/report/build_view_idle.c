/*
 * build_view_idle.c - the text and JSON views of the report document's GPU idle section
 * (doc.h): the text (each device's active span, busy and idle time, the steady state's idle
 * time by cause, start-up, teardown and the time around the activity), the JSON member "idle"
 * (the steady window's idle time by cause, summed over devices; explained is every cause but
 * unknown) and the JSON member "timelines" (each device's busy/idle accounting). Called by
 * apx_rdoc_build_views() (build_view.c), which puts the two JSON members in their places of
 * the schema (docs/report-schema.md).
 */
#include <inttypes.h>
#include <stdio.h>

#include "report/build.h"

#include "base/banned.h"

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* Columns "<prefix>/<cause>/ns" and "<prefix>/<cause>/gaps" for every idle cause (their JSON
 * paths, owned by the document). */
static void cause_cols(struct apx_rdoc *d, struct apx_rtable *t, const char *prefix)
{
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
		char k[64];
		int n = snprintf(k, sizeof(k), "%s/%s/ns", prefix, apx_idle_cause_key(c));

		apx_rtable_col(t, apx_rdoc_strdup(d, k, (size_t)n), apx_idle_cause_name(c),
			       APX_UNIT_NS);
		n = snprintf(k, sizeof(k), "%s/%s/gaps", prefix, apx_idle_cause_key(c));
		apx_rtable_col(t, apx_rdoc_strdup(d, k, (size_t)n), "gaps", APX_UNIT_COUNT);
	}
}

/* The cells of cause_cols() from column c0 on. */
static void cause_cells(struct apx_rtable *t, unsigned c0, const struct apx_an_timeline *tl)
{
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
		apx_rtable_u64(t, c0 + 2 * c, tl->idle_by_cause[c]);
		apx_rtable_u64(t, c0 + 2 * c + 1, tl->gaps_by_cause[c]);
	}
}

static const struct apx_rvcol idle_json_cols[] = {
	{ .key = "window_start_ns", .title = "steady state from", .unit = APX_UNIT_NS },
	{ .key = "window_end_ns", .title = "steady state to", .unit = APX_UNIT_NS },
	{ .key = "window_ns", .title = "steady state", .unit = APX_UNIT_NS },
	{ .key = "busy_ns", .title = "busy", .unit = APX_UNIT_NS },
	{ .key = "idle_ns", .title = "idle", .unit = APX_UNIT_NS },
	{ .key = "explained_ns", .title = "explained", .unit = APX_UNIT_NS },
	{ .key = "unexplained_ns", .title = "unexplained", .unit = APX_UNIT_NS },
	/* a median step's share: only with steps */
	{ .key = "idle_per_step_ns", .title = "idle a step", .unit = APX_UNIT_NS,
	  .h = { .jfmt = APX_JF_INT, .jomit = 1 } },
	{ .key = "unexplained_per_step_ns", .title = "unexplained a step", .unit = APX_UNIT_NS,
	  .h = { .jfmt = APX_JF_INT, .jomit = 1 } },
	{ .key = "copy_host_times", .title = "copy-call times", .unit = APX_UNIT_COUNT,
	  .h.jfmt = APX_JF_BOOL },
};

static void idle_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_an_timeline *g = &m->gpu;
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_IDLE, "json:idle", APX_VIEW_JSON);
	const uint64_t unk = g->idle_by_cause[APX_IDLE_UNKNOWN];
	uint64_t idle = 0;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += g->idle_by_cause[c];
	APX_RTABLE_SET_VCOLS(j, idle_json_cols);
	cause_cols(d, j, "by_cause");
	if (apx_rtable_row(j) == 0) {
		apx_rtable_u64(j, 0, m->steady_start_ns);
		apx_rtable_u64(j, 1, m->steady_end_ns == UINT64_MAX ? m->run_end_ns
								   : m->steady_end_ns);
		apx_rtable_u64(j, 2, g->window_ns);
		apx_rtable_u64(j, 3, g->window_ns > idle ? g->window_ns - idle : 0);
		apx_rtable_u64(j, 4, idle);
		apx_rtable_u64(j, 5, idle - unk);
		apx_rtable_u64(j, 6, unk);
		if (m->steady.count && g->window_ns) {
			double step = (double)m->steady.median_ns / (double)g->window_ns;

			apx_rtable_num(j, 7, (double)idle * step);
			apx_rtable_num(j, 8, (double)unk * step);
		}
		apx_rtable_u64(j, 9, !!m->copy_host_times);
		cause_cells(j, 10, g);
	}
	apx_rdoc_json(d, APX_SEC_IDLE, "idle", j, APX_RJ_OBJECT, 0);
}

/* "  device 0: active span ..., busy ... (..%), idle ... (..%) in N gaps", the steady state's
 * idle time by cause (unknown always), then start-up, teardown and the time around. */
static void device_lines(struct apx_rdoc *d, const struct apx_an_timeline *t)
{
	const unsigned s = APX_SEC_IDLE;
	double span = (double)t->active_ns, win = (double)t->window_ns;
	char b1[32], b2[32], b3[32];
	uint64_t idle = 0;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += t->idle_by_cause[c];
	apx_rdoc_line(d, s, 2, "device %u: active span %s, busy %s (%.1f%%), idle %s (%.1f%%) in %"
		      PRIu64 " gaps", t->device, apx_fmt_ns(b1, sizeof(b1), span),
		      apx_fmt_ns(b2, sizeof(b2), (double)t->busy_ns), pct((double)t->busy_ns, span),
		      apx_fmt_ns(b3, sizeof(b3), (double)t->idle_ns), pct((double)t->idle_ns, span),
		      t->gaps);
	apx_rdoc_line(d, s, 4, "steady state %s: idle %s (%.1f%%), %.0f%% of it explained",
		      apx_fmt_ns(b1, sizeof(b1), win), apx_fmt_ns(b2, sizeof(b2), (double)idle),
		      pct((double)idle, win),
		      idle ? pct((double)(idle - t->idle_by_cause[APX_IDLE_UNKNOWN]), (double)idle)
			   : 100.0);
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		if (t->idle_by_cause[c] || c == APX_IDLE_UNKNOWN)
			apx_rdoc_line(d, s, 6, "%-28s %10s %6.1f%% %8" PRIu64 " gaps",
				      apx_idle_cause_name(c),
				      apx_fmt_ns(b1, sizeof(b1), (double)t->idle_by_cause[c]),
				      pct((double)t->idle_by_cause[c], win), t->gaps_by_cause[c]);
	apx_rdoc_line(d, s, 4, "%-30s %10s   (first GPU activity to the steady state)", "start-up",
		      apx_fmt_ns(b1, sizeof(b1), (double)t->startup_ns));
	apx_rdoc_line(d, s, 4, "%-30s %10s", "  idle in it",
		      apx_fmt_ns(b1, sizeof(b1), (double)t->startup_idle_ns));
	apx_rdoc_line(d, s, 4, "%-30s %10s   (the steady state to the last GPU activity)",
		      "teardown", apx_fmt_ns(b1, sizeof(b1), (double)t->teardown_ns));
	apx_rdoc_line(d, s, 4, "%-30s %10s   (start of the run to the first GPU activity)",
		      "before first activity", apx_fmt_ns(b1, sizeof(b1), (double)t->before_ns));
	apx_rdoc_line(d, s, 4, "%-30s %10s   (last GPU activity to the end of the run)",
		      "after last activity", apx_fmt_ns(b1, sizeof(b1), (double)t->after_ns));
}

void apx_rdoc_view_idle(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;

	idle_json(d);
	d->sec[APX_SEC_IDLE].text_title = "GPU idle time (steady state, one cause per idle ns)";
	if (!m->timelines.n) {
		apx_rdoc_line(d, APX_SEC_IDLE, 2, "no GPU activity");
		return;
	}
	for (size_t i = 0; i < m->timelines.n; i++)
		device_lines(d, APX_VEC_AT(&m->timelines, struct apx_an_timeline, i));
}

static const struct apx_rvcol timelines_json_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "first_ns", .title = "first activity", .unit = APX_UNIT_NS },
	{ .key = "last_ns", .title = "last activity", .unit = APX_UNIT_NS },
	{ .key = "busy_ns", .title = "busy", .unit = APX_UNIT_NS },
	{ .key = "kernel_busy_ns", .title = "kernels busy", .unit = APX_UNIT_NS },
	{ .key = "copy_busy_ns", .title = "copies busy", .unit = APX_UNIT_NS },
	{ .key = "copy_compute_overlap_ns", .title = "copy/compute overlap", .unit = APX_UNIT_NS },
	{ .key = "copy_before_kernels_ns", .title = "copies before kernels", .unit = APX_UNIT_NS },
	{ .key = "concurrent_kernels_ns", .title = "concurrent kernels", .unit = APX_UNIT_NS },
	{ .key = "idle_ns", .title = "idle", .unit = APX_UNIT_NS },
	{ .key = "before_first_ns", .title = "before first activity", .unit = APX_UNIT_NS },
	{ .key = "after_last_ns", .title = "after last activity", .unit = APX_UNIT_NS },
	{ .key = "gaps", .title = "gaps", .unit = APX_UNIT_COUNT },
	{ .key = "steady_window_ns", .title = "steady state", .unit = APX_UNIT_NS },
	{ .key = "startup_ns", .title = "start-up", .unit = APX_UNIT_NS },
	{ .key = "startup_idle_ns", .title = "idle in start-up", .unit = APX_UNIT_NS },
	{ .key = "teardown_ns", .title = "teardown", .unit = APX_UNIT_NS },
	{ .key = "teardown_idle_ns", .title = "idle in teardown", .unit = APX_UNIT_NS },
};

void apx_rdoc_view_timelines(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_IDLE, "json:timelines",
						   APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, timelines_json_cols);
	cause_cols(d, j, "idle_by_cause");
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *t = APX_VEC_AT(&m->timelines, struct apx_an_timeline,
							     i);
		const uint64_t u[] = { t->device, t->first_ns, t->last_ns, t->busy_ns,
				       t->kernel_busy_ns, t->copy_busy_ns, t->overlap_ns,
				       t->copy_before_kernels_ns, t->concurrent_ns, t->idle_ns,
				       t->before_ns, t->after_ns, t->gaps, t->window_ns,
				       t->startup_ns, t->startup_idle_ns, t->teardown_ns,
				       t->teardown_idle_ns };

		if (apx_rtable_row(j) < 0)
			break;
		for (unsigned c = 0; c < sizeof(u) / sizeof(u[0]); c++)
			apx_rtable_u64(j, c, u[c]);
		cause_cells(j, sizeof(u) / sizeof(u[0]), t);
	}
	apx_rdoc_json(d, APX_SEC_IDLE, "timelines", j, APX_RJ_ARRAY, 0);
}
