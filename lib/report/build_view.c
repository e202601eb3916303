/*
 * build_view.c - the text and JSON views of the report document's sections (doc.h): for each
 * section, its text report as blocks (prose lines, tables with text hints) and its JSON
 * members (tables with member names), one builder a section. Every sentence, order, --top cut
 * and enum word of the text and JSON reports is decided here; emit_text.c and emit_json.c
 * only format it. Called by apx_rdoc_build() (build.c) for the sections asked for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report/build.h"

#include "base/banned.h"

#define TJ (APX_VIEW_TEXT | APX_VIEW_JSON)

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* ---- memory ---- */
static const struct apx_rvcol memory_json_cols[] = {
	{ .key = "device_peak_bytes", .title = "device peak", .unit = APX_UNIT_BYTES },
	{ .key = "device_total_bytes", .title = "device memory", .unit = APX_UNIT_BYTES },
	{ .key = "device_allocations", .title = "allocations", .unit = APX_UNIT_COUNT },
	{ .key = "pinned_peak_bytes", .title = "pinned peak", .unit = APX_UNIT_BYTES },
	{ .key = "pinned_allocations", .title = "pinned allocations", .unit = APX_UNIT_COUNT },
};

static void view_memory(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_MEMORY;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:memory", APX_VIEW_JSON);
	char b1[32], b2[32], line[256];
	uint64_t total = 0;

	for (size_t i = 0; i < m->ndevices; i++)
		total += m->devices[i].mem_bytes;
	APX_RTABLE_SET_VCOLS(j, memory_json_cols);
	if (apx_rtable_row(j) == 0) {
		apx_rtable_u64(j, 0, m->device_mem_peak);
		apx_rtable_u64(j, 1, total);
		apx_rtable_u64(j, 2, m->device_allocs);
		apx_rtable_u64(j, 3, m->pinned_peak);
		apx_rtable_u64(j, 4, m->pinned_allocs);
	}
	apx_rdoc_json(d, s, "memory", j, APX_RJ_OBJECT, 0);

	if (!m->mem_events.n) {
		apx_rdoc_line(d, s, 2, "no allocation records");
		return;
	}
	snprintf(line, sizeof(line), "device memory peak %s",
		 apx_fmt_size(b1, sizeof(b1), (double)m->device_mem_peak));
	if (total)
		apx_text_append(line, sizeof(line), " of %s (%.1f%%)",
				apx_fmt_size(b2, sizeof(b2), (double)total),
				pct((double)m->device_mem_peak, (double)total));
	apx_text_append(line, sizeof(line), " in %" PRIu64 " allocations; at the end %s",
			m->device_allocs, apx_fmt_size(b1, sizeof(b1), (double)m->device_mem_now));
	apx_rdoc_line(d, s, 2, "%s", line);
	apx_rdoc_line(d, s, 2, "pinned host memory peak %s in %" PRIu64 " allocations%s",
		      apx_fmt_size(b1, sizeof(b1), (double)m->pinned_peak), m->pinned_allocs,
		      m->pinned_allocs ? "" : " (the program never used cudaMallocHost / pin_memory)");
}

void apx_rdoc_build_views(struct apx_rdoc *d)
{
	static void (*const views[APX_SEC__COUNT])(struct apx_rdoc *) = {
		[APX_SEC_MEMORY] = view_memory,
	};

	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		if (d->sec[s].present && views[s]) {
			d->sec[s].text_built = d->sec[s].json_built = 1;
			views[s](d);
		}
}
