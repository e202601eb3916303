/*
 * build_allocs.c - the memory section's allocations (lib/analysis/allocs.c): per device the
 * largest allocations of device, pinned and managed memory and every allocation call that
 * failed, each with the user line of its Python stack ("file:line (function)", library frames
 * folded as every line of the report) when the trace has one. Two tables for CSV, HTML and
 * JSON (views DATA | JSON: the JSON members memory.largest_allocations and
 * memory.failed_allocations, inside the "memory" object: apx_rdoc_allocs_json) and two laid
 * out for the text report (apx_rdoc_allocs_text). Called by apx_rdoc_view_memory()
 * (build_view_gpu.c) when the memory section is asked for; single-threaded.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "report/build.h"

#include "base/banned.h"

static const struct apx_rvcol largest_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "kind", .title = "memory", .unit = APX_UNIT_TEXT },
	{ .key = "bytes", .title = "size", .unit = APX_UNIT_BYTES },
	{ .key = "at_ns", .title = "at (since the run's start)", .unit = APX_UNIT_NS },
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "tid", .title = "thread", .unit = APX_UNIT_ID },
};
static const struct apx_rvcol failed_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "kind", .title = "memory", .unit = APX_UNIT_TEXT },
	{ .key = "bytes", .title = "asked for", .unit = APX_UNIT_BYTES },
	{ .key = "error", .title = "CUDA error", .unit = APX_UNIT_ID },
	{ .key = "error_name", .title = "error", .unit = APX_UNIT_TEXT },
	{ .key = "at_ns", .title = "at (since the run's start)", .unit = APX_UNIT_NS },
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "tid", .title = "thread", .unit = APX_UNIT_ID },
};
/* the text tables: one row per allocation, its line as "data.py:12 load" */
static const struct apx_rvcol largest_text_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID, .h = { .tw = 6 } },
	{ .key = "kind", .title = "memory", .unit = APX_UNIT_TEXT, .h = { .tw = -7 } },
	{ .key = "bytes", .title = "size", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
	{ .key = "at_ns", .title = "at", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "label", .title = "line", .unit = APX_UNIT_TEXT,
	  .h = { .tgap = 1, .tmax = 58, .tna = "(no Python stack)" } },
};
static const struct apx_rvcol failed_text_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID, .h = { .tw = 6 } },
	{ .key = "kind", .title = "memory", .unit = APX_UNIT_TEXT, .h = { .tw = -7 } },
	{ .key = "bytes", .title = "asked for", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
	{ .key = "error_name", .title = "error", .unit = APX_UNIT_TEXT, .h = { .tw = -13, .tmax = 13 } },
	{ .key = "at_ns", .title = "at", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "label", .title = "line", .unit = APX_UNIT_TEXT,
	  .h = { .tgap = 1, .tmax = 44, .tna = "(no Python stack)" } },
};

static const char *kind_name(unsigned kind)
{
	switch (kind) {
	case APX_MEM_DEVICE: return "device";
	case APX_MEM_PINNED: return "pinned";
	case APX_MEM_MANAGED: return "managed";
	default: return "other";
	}
}

/* A short error name for the text table: "OUT_OF_MEMORY" for CUDA_ERROR_OUT_OF_MEMORY. */
static const char *short_error(const char *name)
{
	return name && name[0] ? name + sizeof("CUDA_ERROR_") - 1 : NULL;
}

/* The cells of an allocation, by key, in every table that shows it. */
static void alloc_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_alloc *a)
{
	const struct apx_model *m = d->m;
	const char *err = a->failed ? apx_cuda_error_name(a->error) : NULL;
	char label[512], code[16];

	apx_rtable_ku64(t, "device", a->device);
	apx_rtable_kstr(d, t, "kind", kind_name(a->kind));
	apx_rtable_ku64(t, "bytes", a->bytes);
	apx_rtable_ku64(t, "at_ns", a->ts > m->run_start_ns ? a->ts - m->run_start_ns : 0);
	if (a->tid)
		apx_rtable_ku64(t, "tid", a->tid);
	if (a->failed) {
		apx_rtable_ku64(t, "error", a->error);
		snprintf(code, sizeof(code), "error %u", a->error);
		apx_rtable_kstr(d, t, "error_name", err ? err : code);
	}
	if (a->line != UINT32_MAX && a->line < m->lines.n && m->store) {
		const struct apx_an_line *ln = APX_VEC_AT(&m->lines, struct apx_an_line, a->line);
		struct apx_es_text file = apx_store_string(m->store, ln->file);
		struct apx_es_text func = apx_store_string(m->store, ln->func);

		apx_rtable_ktext(d, t, "file", file.p, file.len);
		apx_rtable_ku64(t, "line", ln->line);
		apx_rtable_ktext(d, t, "func", func.p, func.len);
		apx_rdoc_line_label(m, a->line, label, sizeof(label));
		apx_rtable_kstr(d, t, "label", label);
	}
}

/* The text table's error column shows the short name (its key is error_name there). */
static void text_error(struct apx_rdoc *d, struct apx_rtable *x, const struct apx_an_alloc *a)
{
	const char *err = apx_cuda_error_name(a->error);
	char code[16];

	snprintf(code, sizeof(code), "error %u", a->error);
	apx_rtable_kstr(d, x, "error_name", err ? short_error(err) : code);
}

void apx_rdoc_allocs_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_MEMORY;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "largest_allocations",
						   APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *f = apx_rdoc_view_table(d, s, "failed_allocations",
						   APX_VIEW_DATA | APX_VIEW_JSON);

	if (t)
		t->title = "Largest allocations (per device and memory kind)";
	if (f)
		f->title = "Failed allocations";
	APX_RTABLE_SET_VCOLS(t, largest_cols);
	APX_RTABLE_SET_VCOLS(f, failed_cols);
	for (size_t i = 0; i < m->allocs.n && apx_rtable_row(t) == 0; i++)
		alloc_cells(d, t, APX_VEC_AT(&m->allocs, struct apx_an_alloc, i));
	for (size_t i = 0; i < m->allocs_failed.n && apx_rtable_row(f) == 0; i++)
		alloc_cells(d, f, APX_VEC_AT(&m->allocs_failed, struct apx_an_alloc, i));
	apx_rdoc_json(d, s, "largest_allocations", t, APX_RJ_ARRAY, 1);
	apx_rdoc_json(d, s, "failed_allocations", f, APX_RJ_ARRAY, 1);
}

void apx_rdoc_allocs_text(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_MEMORY;
	struct apx_rtable *tx, *fx;
	size_t lines = 0;

	if (m->allocs.n) {
		tx = apx_rdoc_view_table(d, s, "text:largest_allocations", APX_VIEW_TEXT);
		APX_RTABLE_SET_VCOLS(tx, largest_text_cols);
		for (size_t i = 0; i < m->allocs.n && apx_rtable_row(tx) == 0; i++) {
			const struct apx_an_alloc *a = APX_VEC_AT(&m->allocs, struct apx_an_alloc, i);

			alloc_cells(d, tx, a);
			lines += a->line != UINT32_MAX;
		}
		apx_rdoc_line(d, s, 2, "largest allocations per device and memory kind%s:",
			      lines ? ", with the user line that made them" : "");
		apx_rdoc_blk_table(d, s, tx);
	}
	if (m->allocs_failed_n) {
		fx = apx_rdoc_view_table(d, s, "text:failed_allocations", APX_VIEW_TEXT);
		APX_RTABLE_SET_VCOLS(fx, failed_text_cols);
		for (size_t i = 0; i < m->allocs_failed.n && apx_rtable_row(fx) == 0; i++) {
			const struct apx_an_alloc *a = APX_VEC_AT(&m->allocs_failed,
								  struct apx_an_alloc, i);

			alloc_cells(d, fx, a);
			text_error(d, fx, a);
		}
		apx_rdoc_line(d, s, 2, "failed allocations: %" PRIu64 " call%s returned an error",
			      m->allocs_failed_n, m->allocs_failed_n == 1 ? "" : "s");
		apx_rdoc_blk_table(d, s, fx);
		if (m->allocs_failed_n > m->allocs_failed.n)
			apx_rdoc_line(d, s, 2, "(%" PRIu64 " more not listed)",
				      m->allocs_failed_n - m->allocs_failed.n);
	}
}
