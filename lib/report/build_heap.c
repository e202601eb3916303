/*
 * build_heap.c - the report's "heap" section (analysis/heap.h; apx analyze
 * --heap-sampling-bytes N): the sampled host allocations by site (a Python line, or the native
 * function of the program's own code that called malloc/new), what they stand for (estimated
 * bytes and allocations), what was still live at the end, and with apx report --heap-leak
 * FROM:TO the leak view (allocations made in the window and still live at its end). Each
 * table is one for CSV, HTML and JSON (views DATA | JSON; JSON "heap" with "sites" and
 * "leak_sites" inside) and one laid out for the text report. Called by
 * apx_rdoc_build_views() (build_view.c) when the section is asked for; the section is left
 * out of a trace without heap samples unless asked for by name (doc.c).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store.h"
#include "base/fmt.h"
#include "report/build.h"

#include "base/banned.h"

static const struct apx_rvcol sum_cols[] = {
	{ .key = "interval_bytes", .title = "sampling interval", .unit = APX_UNIT_BYTES },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "frees", .title = "frees of samples seen", .unit = APX_UNIT_COUNT },
	{ .key = "frees_unmatched", .title = "frees of no sample", .unit = APX_UNIT_COUNT },
	{ .key = "frees_missed", .title = "samples whose free was lost", .unit = APX_UNIT_COUNT },
	{ .key = "untracked", .title = "samples whose free cannot be seen",
	  .unit = APX_UNIT_COUNT },
	{ .key = "no_native_stack", .title = "samples without a native stack",
	  .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "allocated (estimate)", .unit = APX_UNIT_BYTES },
	{ .key = "allocs", .title = "allocations (estimate)", .unit = APX_UNIT_COUNT },
	{ .key = "live_bytes", .title = "live at the end (estimate)", .unit = APX_UNIT_BYTES },
	{ .key = "live_samples", .title = "samples live at the end", .unit = APX_UNIT_COUNT },
	{ .key = "first_s", .title = "first sample (s since the run's start)",
	  .unit = APX_UNIT_RATIO, .h = { .jfmt = APX_JF_F4 } },
	{ .key = "last_s", .title = "last record (s since the run's start)", .unit = APX_UNIT_RATIO,
	  .h = { .jfmt = APX_JF_F4 } },
	{ .key = "leak_from_s", .title = "leak window from (s)", .unit = APX_UNIT_RATIO,
	  .h = { .jfmt = APX_JF_F4, .jomit = 1 } },
	{ .key = "leak_to_s", .title = "leak window to (s)", .unit = APX_UNIT_RATIO,
	  .h = { .jfmt = APX_JF_F4, .jomit = 1 } },
	{ .key = "leak_bytes", .title = "leaked in the window (estimate)", .unit = APX_UNIT_BYTES,
	  .h.jomit = 1 },
	{ .key = "leak_samples", .title = "samples leaked in the window", .unit = APX_UNIT_COUNT,
	  .h.jomit = 1 },
};

static const struct apx_rvcol site_cols[] = {
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "native", .title = "native frame", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "address", .title = "offset in the object", .unit = APX_UNIT_ID, .h.jomit = 1 },
	{ .key = "user", .title = "user code", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "bytes", .title = "allocated (estimate)", .unit = APX_UNIT_BYTES },
	{ .key = "allocs", .title = "allocations (estimate)", .unit = APX_UNIT_COUNT },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "live_bytes", .title = "live at the end (estimate)", .unit = APX_UNIT_BYTES },
	{ .key = "live_samples", .title = "samples live at the end", .unit = APX_UNIT_COUNT },
};

static const struct apx_rvcol leak_cols[] = {
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "native", .title = "native frame", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "address", .title = "offset in the object", .unit = APX_UNIT_ID, .h.jomit = 1 },
	{ .key = "user", .title = "user code", .unit = APX_UNIT_COUNT, .h.jfmt = APX_JF_BOOL },
	{ .key = "leak_bytes", .title = "leaked (estimate)", .unit = APX_UNIT_BYTES },
	{ .key = "leak_samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "allocated in the run (estimate)", .unit = APX_UNIT_BYTES },
};

static const struct apx_rvcol site_text_cols[] = {
	{ .key = "label", .title = "where", .unit = APX_UNIT_TEXT, .h = { .tw = -40, .tmax = 40 } },
	{ .key = "bytes", .title = "allocated", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
	{ .key = "allocs", .title = "allocs", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "live_bytes", .title = "live at end", .unit = APX_UNIT_BYTES, .h = { .tw = 11 } },
};

static const struct apx_rvcol leak_text_cols[] = {
	{ .key = "label", .title = "where", .unit = APX_UNIT_TEXT, .h = { .tw = -40, .tmax = 40 } },
	{ .key = "leak_bytes", .title = "leaked", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
	{ .key = "leak_samples", .title = "samples", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "bytes", .title = "allocated", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
};

/* A line of prose in the heap section, wrapped to the report's width. */
static void __attribute__((format(printf, 2, 3))) say(struct apx_rdoc *d, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	apx_rdoc_blk(d, APX_SEC_HEAP, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
							 .text = text, .windent = 4 });
}

static const char *base_name(const char *p, uint32_t len, uint32_t *ret_len)
{
	uint32_t i = len;

	while (i && p[i - 1] != '/')
		i--;
	*ret_len = len - i;
	return p + i;
}

/* A site's cells (file, line, function, native, address, user, label) in the last row of t. */
static void where_cells(struct apx_rdoc *d, struct apx_rtable *t,
			const struct apx_an_heap_site *s)
{
	const struct apx_model *m = d->m;
	const struct apx_store *st = m->store;
	char label[512];

	apx_rtable_ku64(t, "user", s->user);
	if (s->line != UINT32_MAX) {
		const struct apx_an_line *ln = APX_VEC_AT(&m->lines, struct apx_an_line, s->line);
		struct apx_es_text file = apx_store_string(st, ln->file);
		struct apx_es_text func = apx_store_string(st, ln->func);

		apx_rtable_ktext(d, t, "file", file.p, file.len);
		apx_rtable_ku64(t, "line", ln->line);
		apx_rtable_ktext(d, t, "func", func.p, func.len);
		apx_rtable_ku64(t, "native", 0);
		apx_rdoc_line_label(m, s->line, label, sizeof(label));
	} else if (s->frame != UINT32_MAX && st && s->frame < st->nframes) {
		const struct apx_es_frame *f = &st->frames[s->frame];
		struct apx_es_text file = apx_store_string(st, f->file);
		struct apx_es_text func = apx_store_string(st, f->func);
		uint32_t bl;
		const char *b = base_name(file.p, file.len, &bl);

		apx_rtable_ktext(d, t, "file", file.p, file.len);
		apx_rtable_ktext(d, t, "func", func.p, func.len);
		apx_rtable_ku64(t, "native", 1);
		if (func.len)
			snprintf(label, sizeof(label), "%.*s (%.*s)",
				 (int)(func.len > 200 ? 200 : func.len), func.p,
				 (int)(bl > 200 ? 200 : bl), b);
		else {	/* no exported symbol: the offset (addr2line -e FILE ADDRESS) */
			apx_rtable_ku64(t, "address", f->address);
			snprintf(label, sizeof(label), "%.*s+0x%" PRIx64,
				 (int)(bl > 200 ? 200 : bl), b, f->address);
		}
	} else {
		apx_rtable_ku64(t, "native", 0);
		snprintf(label, sizeof(label), "(no stack)");
	}
	apx_rtable_kstr(d, t, "label", label);	/* the text tables' */
}

static void site_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_heap_site *s)
{
	where_cells(d, t, s);
	apx_rtable_knum(t, "bytes", s->bytes);
	apx_rtable_knum(t, "allocs", s->allocs);
	apx_rtable_ku64(t, "samples", s->samples);
	apx_rtable_knum(t, "live_bytes", s->live_bytes);
	apx_rtable_ku64(t, "live_samples", s->live_samples);
	apx_rtable_knum(t, "leak_bytes", s->leak_bytes);
	apx_rtable_ku64(t, "leak_samples", s->leak_samples);
}

static double rel_s(uint64_t t, uint64_t t0)
{
	return t >= t0 ? (double)(t - t0) / 1e9 : -(double)(t0 - t) / 1e9;
}

/* The time origin of the section's seconds: the run's start (heap.c's, the same). */
static uint64_t origin(const struct apx_model *m)
{
	uint64_t o = UINT64_MAX;

	if (m->wall_ns && m->run_start_ns)
		return m->run_start_ns;
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].first_ns && m->files[i].first_ns < o)
			o = m->files[i].first_ns;
	return o != UINT64_MAX ? o : m->heap.first_ns;
}

static void summary(struct apx_rdoc *d, struct apx_rtable *t, uint64_t t0)
{
	const struct apx_an_heap *hp = &d->m->heap;

	if (!t || apx_rtable_row(t) < 0)
		return;
	if (hp->interval_min)
		apx_rtable_ku64(t, "interval_bytes", hp->interval_min);
	apx_rtable_ku64(t, "samples", hp->samples);
	apx_rtable_ku64(t, "frees", hp->frees);
	apx_rtable_ku64(t, "frees_unmatched", hp->frees_unmatched);
	apx_rtable_ku64(t, "frees_missed", hp->frees_missed);
	apx_rtable_ku64(t, "untracked", hp->untracked);
	apx_rtable_ku64(t, "no_native_stack", hp->nostack);
	apx_rtable_knum(t, "bytes", hp->bytes);
	apx_rtable_knum(t, "allocs", hp->allocs);
	apx_rtable_knum(t, "live_bytes", hp->live_bytes);
	apx_rtable_ku64(t, "live_samples", hp->live_samples);
	apx_rtable_knum(t, "first_s", rel_s(hp->first_ns, t0));
	apx_rtable_knum(t, "last_s", rel_s(hp->last_ns, t0));
	if (hp->leak) {
		apx_rtable_knum(t, "leak_from_s", rel_s(hp->leak_start_ns, t0));
		apx_rtable_knum(t, "leak_to_s", rel_s(hp->leak_end_ns, t0));
		apx_rtable_knum(t, "leak_bytes", hp->leak_bytes);
		apx_rtable_ku64(t, "leak_samples", hp->leak_samples);
	}
}

static int cmp_leak(const void *a, const void *b)
{
	const struct apx_an_heap_site *x = *(const struct apx_an_heap_site *const *)a;
	const struct apx_an_heap_site *y = *(const struct apx_an_heap_site *const *)b;

	if (x->leak_bytes != y->leak_bytes)
		return x->leak_bytes > y->leak_bytes ? -1 : 1;
	if (x->leak_samples != y->leak_samples)
		return x->leak_samples > y->leak_samples ? -1 : 1;
	return x < y ? -1 : x > y;	/* ties: the sites' own order (heap.c), not qsort's whim */
}

/* The leak view: the sites with samples made in the window and live at its end, most first. */
static void leak_view(struct apx_rdoc *d, uint64_t t0)
{
	const struct apx_model *m = d->m;
	const struct apx_an_heap *hp = &m->heap;
	const unsigned s = APX_SEC_HEAP;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "heap_leak",
						   APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *x = apx_rdoc_view_table(d, s, "text:heap_leak", APX_VIEW_TEXT);
	const struct apx_an_heap_site *top[256];
	size_t n = 0, shown = 0;
	char b1[32];

	if (t)
		t->title = "Host heap: leaked in the window (allocated in it, live at its end)";
	APX_RTABLE_SET_VCOLS(t, leak_cols);
	APX_RTABLE_SET_VCOLS(x, leak_text_cols);
	for (size_t i = 0; i < hp->sites.n; i++) {
		const struct apx_an_heap_site *h =
			APX_VEC_AT(&hp->sites, struct apx_an_heap_site, i);

		if (!h->leak_samples)
			continue;
		if (n < sizeof(top) / sizeof(top[0]))
			top[n++] = h;
	}
	if (n > 1)
		qsort(top, n, sizeof(top[0]), cmp_leak);
	for (size_t i = 0; i < n && shown < d->top; i++, shown++) {
		if (apx_rtable_row(t) < 0 || apx_rtable_row(x) < 0)
			break;
		site_cells(d, t, top[i]);
		site_cells(d, x, top[i]);
	}
	apx_rdoc_json(d, s, "leak_sites", t, APX_RJ_ARRAY, 1);
	say(d, "leak view %.3f .. %.3f s: allocations made then and still live at "
		      "%.3f s: %s in %" PRIu64 " samples", rel_s(hp->leak_start_ns, t0),
		      rel_s(hp->leak_end_ns, t0), rel_s(hp->leak_end_ns, t0),
		      apx_fmt_size(b1, sizeof(b1), hp->leak_bytes), hp->leak_samples);
	if (!n)
		return;
	apx_rdoc_blk_table(d, s, x);
	if (n > shown)
		say(d, "(%zu more; --top N shows more)", n - shown);
}

void apx_rdoc_view_heap(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_an_heap *hp = &m->heap;
	const unsigned s = APX_SEC_HEAP;
	struct apx_rtable *sum = apx_rdoc_view_table(d, s, "json:heap", APX_VIEW_JSON);
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "heap", APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *x = apx_rdoc_view_table(d, s, "text:heap", APX_VIEW_TEXT);
	uint64_t t0 = origin(m);
	char b1[32], b2[32], b3[32];
	size_t shown = 0;

	if (t)
		t->title = "Host heap by site (sampled allocations)";
	APX_RTABLE_SET_VCOLS(sum, sum_cols);
	APX_RTABLE_SET_VCOLS(t, site_cols);
	APX_RTABLE_SET_VCOLS(x, site_text_cols);
	if (!hp->sampled) {
		say(d, "no heap samples in this trace (apx analyze "
			      "--heap-sampling-bytes N samples malloc and new)");
		return;
	}
	summary(d, sum, t0);
	apx_rdoc_json(d, s, "heap", sum, APX_RJ_OBJECT, 0);
	for (size_t i = 0; i < hp->sites.n && shown < d->top; i++, shown++) {
		const struct apx_an_heap_site *h =
			APX_VEC_AT(&hp->sites, struct apx_an_heap_site, i);

		if (apx_rtable_row(t) < 0 || apx_rtable_row(x) < 0)
			break;
		site_cells(d, t, h);
		site_cells(d, x, h);
	}
	apx_rdoc_json(d, s, "sites", t, APX_RJ_ARRAY, 1);
	if (hp->interval_min == hp->interval_max)
		apx_fmt_size(b3, sizeof(b3), (double)hp->interval_min);
	else
		snprintf(b3, sizeof(b3), "%s-%s",
			 apx_fmt_size(b1, sizeof(b1), (double)hp->interval_min),
			 apx_fmt_size(b2, sizeof(b2), (double)hp->interval_max));
	say(d, "%" PRIu64 " samples, about one every %s allocated; they stand for %s "
		      "in %.0f allocations; %" PRIu64 " of them freed later; live at the end: %s "
		      "(%" PRIu64 " samples)", hp->samples, b3,
		      apx_fmt_size(b1, sizeof(b1), hp->bytes), hp->allocs, hp->frees,
		      apx_fmt_size(b2, sizeof(b2), hp->live_bytes), hp->live_samples);
	say(d, "a sample of s bytes stands for s / (1 - exp(-s/N)) bytes; %s",
		      m->frames_all ? "each counted at its innermost frame"
				    : "each at its line of the program's own code (library frames "
				      "folded; --frames all: the innermost)");
	if (hp->frees_unmatched || hp->frees_missed || hp->untracked)
		say(d, "not matched: %" PRIu64 " frees of no sample, %" PRIu64
			      " samples whose free was lost, %" PRIu64 " samples whose free cannot "
			      "be seen (left out of live)", hp->frees_unmatched, hp->frees_missed,
			      hp->untracked);
	apx_rdoc_blk_table(d, s, x);
	if (hp->sites.n > shown)
		say(d, "(%zu more sites; --top N shows more)", hp->sites.n - shown);
	if (hp->leak)
		leak_view(d, t0);
	else
		say(d, "--heap-leak FROM:TO shows what was allocated between two "
			      "times (s) and still live at the second");
}
