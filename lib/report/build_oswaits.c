/*
 * build_oswaits.c - the threads section's OS waits (lib/analysis/oswaits.c): the system
 * calls threads waited in, with their waits, threads, time and longest wait (JSON
 * "os_waits"), and the waits of at least --os-wait-threshold by the line they waited under,
 * or by thread for threads without Python frames (JSON "os_long_waits"). Times come from
 * samples: a wait is known to about one sampling period. One table each for CSV, HTML and
 * JSON, one laid out for the text report. Called by apx_rdoc_view_threads() (build_stacks.c).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "base/fmt.h"
#include "report/build.h"

#include "base/banned.h"

static const struct apx_rvcol call_cols[] = {
	{ .key = "syscall", .title = "syscall", .unit = APX_UNIT_TEXT },
	{ .key = "nr", .title = "number", .unit = APX_UNIT_ID },
	{ .key = "waits", .title = "waits", .unit = APX_UNIT_COUNT },
	{ .key = "threads", .title = "threads", .unit = APX_UNIT_COUNT },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "longest_ns", .title = "longest", .unit = APX_UNIT_NS },
};
static const struct apx_rvcol call_text_cols[] = {
	{ .key = "syscall", .title = "syscall", .unit = APX_UNIT_TEXT, .h = { .tw = -16, .tmax = 16 } },
	{ .key = "waits", .title = "waits", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "threads", .title = "threads", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "longest_ns", .title = "longest", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
};
static const struct apx_rvcol long_cols[] = {
	{ .key = "syscall", .title = "syscall", .unit = APX_UNIT_TEXT },
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "pid", .title = "pid (longest)", .unit = APX_UNIT_ID },
	{ .key = "tid", .title = "tid (longest)", .unit = APX_UNIT_ID },
	{ .key = "thread", .title = "thread (longest)", .unit = APX_UNIT_TEXT },
	{ .key = "waits", .title = "waits", .unit = APX_UNIT_COUNT },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "longest_ns", .title = "longest", .unit = APX_UNIT_NS },
	{ .key = "longest_at_ns", .title = "longest at", .unit = APX_UNIT_NS },
};
static const struct apx_rvcol long_text_cols[] = {
	{ .key = "syscall", .title = "syscall", .unit = APX_UNIT_TEXT, .h = { .tw = -15, .tmax = 15 } },
	{ .key = "where", .title = "where", .unit = APX_UNIT_TEXT, .h = { .tw = -46, .tmax = 46 } },
	{ .key = "waits", .title = "waits", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "longest_ns", .title = "longest", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
};

static const char *syscall_label(int32_t nr, char *buf, size_t cap)
{
	const char *name = apx_syscall_name(nr);

	if (name)
		return name;
	snprintf(buf, cap, "syscall %d", (int)nr);
	return buf;
}

static void call_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_oswait *w)
{
	char nm[32];

	apx_rtable_kstr(d, t, "syscall", syscall_label(w->nr, nm, sizeof(nm)));
	apx_rtable_ku64(t, "nr", (uint64_t)w->nr);
	apx_rtable_ku64(t, "waits", w->waits);
	apx_rtable_ku64(t, "threads", w->threads);
	apx_rtable_ku64(t, "time_ns", w->ns);
	apx_rtable_ku64(t, "longest_ns", w->max_ns);
}

static void long_cells(struct apx_rdoc *d, struct apx_rtable *t,
		       const struct apx_an_oswait_line *w)
{
	const struct apx_model *m = d->m;
	const struct apx_es_thread *th = &m->store->threads[w->thread];
	char nm[32], where[300];

	apx_rtable_kstr(d, t, "syscall", syscall_label(w->nr, nm, sizeof(nm)));
	if (w->line != UINT32_MAX) {
		const struct apx_an_line *ln = APX_VEC_AT(&m->lines, struct apx_an_line, w->line);
		struct apx_es_text file = apx_store_string(m->store, ln->file);
		struct apx_es_text func = apx_store_string(m->store, ln->func);

		apx_rtable_ktext(d, t, "file", file.p, file.len);
		apx_rtable_ku64(t, "line", ln->line);
		apx_rtable_ktext(d, t, "func", func.p, func.len);
		apx_rdoc_line_label(m, w->line, where, sizeof(where));
	} else if (th->name.len) {
		snprintf(where, sizeof(where), "thread %.*s (%" PRIu64 "), no Python frames",
			 (int)(th->name.len > 64 ? 64 : th->name.len), th->name.p, w->tid);
	} else {
		snprintf(where, sizeof(where), "thread %" PRIu64 ", no Python frames", w->tid);
	}
	apx_rtable_kstr(d, t, "where", where);	/* the text table's */
	if (w->file < m->nfiles)
		apx_rtable_ku64(t, "pid", m->files[w->file].pid);
	apx_rtable_ku64(t, "tid", w->tid);
	if (th->name.len)
		apx_rtable_ktext(d, t, "thread", th->name.p, th->name.len);
	apx_rtable_ku64(t, "waits", w->waits);
	apx_rtable_ku64(t, "time_ns", w->ns);
	apx_rtable_ku64(t, "longest_ns", w->max_ns);
	apx_rtable_ku64(t, "longest_at_ns", w->max_start >= m->run_start_ns
						   ? w->max_start - m->run_start_ns : 0);
}

void apx_rdoc_view_oswaits(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_THREADS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "os_waits", APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *x = apx_rdoc_view_table(d, s, "text:os_waits", APX_VIEW_TEXT);
	struct apx_rtable *lt = apx_rdoc_view_table(d, s, "os_long_waits",
						    APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *lx = apx_rdoc_view_table(d, s, "text:os_long_waits", APX_VIEW_TEXT);
	char b1[32];

	if (t)
		t->title = "OS calls waited in (from samples)";
	if (lt)
		lt->title = "Long OS waits by line";
	APX_RTABLE_SET_VCOLS(t, call_cols);
	APX_RTABLE_SET_VCOLS(x, call_text_cols);
	APX_RTABLE_SET_VCOLS(lt, long_cols);
	APX_RTABLE_SET_VCOLS(lx, long_text_cols);
	for (size_t i = 0; i < m->oswaits.n && i < d->top; i++) {
		const struct apx_an_oswait *w = APX_VEC_AT(&m->oswaits, struct apx_an_oswait, i);

		if (apx_rtable_row(t) < 0 || apx_rtable_row(x) < 0)
			break;
		call_cells(d, t, w);
		call_cells(d, x, w);
	}
	for (size_t i = 0; i < m->oswait_lines.n && i < d->top; i++) {
		const struct apx_an_oswait_line *w = APX_VEC_AT(&m->oswait_lines,
								struct apx_an_oswait_line, i);

		if (apx_rtable_row(lt) < 0 || apx_rtable_row(lx) < 0)
			break;
		long_cells(d, lt, w);
		long_cells(d, lx, w);
	}
	apx_rdoc_json(d, s, "os_waits", t, APX_RJ_ARRAY, 0);
	apx_rdoc_json(d, s, "os_long_waits", lt, APX_RJ_ARRAY, 0);
	if (!m->oswaits.n)
		return;
	apx_rdoc_line(d, s, 2, "OS calls waited in (consecutive samples in one call are one wait, "
		      "known to a period):");
	apx_rdoc_blk_table(d, s, x);
	apx_fmt_ns(b1, sizeof(b1), (double)m->os_wait_threshold_ns);
	if (!m->oswait_lines.n) {
		apx_rdoc_line(d, s, 2, "no wait of %s or more (--os-wait-threshold MS)", b1);
		return;
	}
	apx_rdoc_line(d, s, 2, "Waits of %s or more by the line they waited under "
		      "(--os-wait-threshold MS):", b1);
	apx_rdoc_blk_table(d, s, lx);
	if (m->oswait_lines.n > d->top)
		apx_rdoc_line(d, s, 2, "(%zu more; --top N shows more)",
			      m->oswait_lines.n - d->top);
}
