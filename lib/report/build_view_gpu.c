/*
 * build_view_gpu.c - the text and JSON views of the report document's GPU sections (doc.h):
 * kernels, transfers, synchronization, device metrics and replayed kernel counters, memory,
 * streams, NVTX ranges, L2 persistence, unified memory and CPU, one builder a section: each
 * section's text blocks and JSON members, with every sentence, order, --top cut and enum word
 * of them. Called by apx_rdoc_build_views() (build_view.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/demangle.h"
#include "analysis/hwcounters.h"
#include "analysis/store.h"
#include "analysis/whatif/whatif.h"
#include "collector/pm_sets.h"
#include "report/build.h"

#include "base/banned.h"

#define TJ (APX_VIEW_TEXT | APX_VIEW_JSON)

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* ---- GPU kernels ---- */
static const struct apx_rvcol kernels_text_cols[] = {
	{ .key = "share_pct", .title = "time%", .unit = APX_UNIT_PCT, .h = { .tw = 6, .tfix = 2 } },
	{ .key = "total_ns", .title = "total", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "mean_ns", .title = "mean", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "p50_ns", .title = "p50", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "p95_ns", .title = "p95", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "max_ns", .title = "max", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "name", .title = "name", .unit = APX_UNIT_TEXT, .h = { .tgap = 1, .tmax = 30 } },
};
static const struct apx_rvcol launch_text_cols[] = {
	{ .key = "grid", .title = "grid", .unit = APX_UNIT_TEXT, .h = { .tw = -17, .tmax = 17 } },
	{ .key = "block", .title = "block", .unit = APX_UNIT_TEXT, .h = { .tw = -15, .tmax = 15 } },
	{ .key = "registers", .title = "regs", .unit = APX_UNIT_COUNT, .h = { .tw = 4 } },
	{ .key = "static_smem_bytes", .title = "smem", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "dynamic_smem_bytes", .title = "dynsmem", .unit = APX_UNIT_COUNT,
	  .h = { .tw = 7 } },
	{ .key = "occupancy_pct", .title = "occ", .unit = APX_UNIT_PCT, .h = { .tw = 5, .tfix = 1 } },
	{ .key = "name", .title = "name", .unit = APX_UNIT_TEXT, .h = { .tgap = 1, .tmax = 34 } },
};
static const struct apx_rvcol kernels_json_cols[] = {
	{ .key = "name", .title = "kernel", .unit = APX_UNIT_TEXT },
	{ .key = "mangled", .title = "mangled", .unit = APX_UNIT_TEXT },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "total_ns", .title = "total", .unit = APX_UNIT_NS },
	{ .key = "mean_floor_ns", .title = "mean", .unit = APX_UNIT_NS, .h.jkey = "mean_ns" },
	{ .key = "min_ns", .title = "min", .unit = APX_UNIT_NS },
	{ .key = "max_ns", .title = "max", .unit = APX_UNIT_NS },
	{ .key = "p50_ns", .title = "p50", .unit = APX_UNIT_NS },
	{ .key = "p95_ns", .title = "p95", .unit = APX_UNIT_NS },
	{ .key = "share_pct", .title = "time%", .unit = APX_UNIT_PCT },
	{ .key = "grid_x", .title = "grid x", .unit = APX_UNIT_COUNT, .h.jkey = "grid/0" },
	{ .key = "grid_y", .title = "grid y", .unit = APX_UNIT_COUNT, .h.jkey = "grid/1" },
	{ .key = "grid_z", .title = "grid z", .unit = APX_UNIT_COUNT, .h.jkey = "grid/2" },
	{ .key = "block_x", .title = "block x", .unit = APX_UNIT_COUNT, .h.jkey = "block/0" },
	{ .key = "block_y", .title = "block y", .unit = APX_UNIT_COUNT, .h.jkey = "block/1" },
	{ .key = "block_z", .title = "block z", .unit = APX_UNIT_COUNT, .h.jkey = "block/2" },
	{ .key = "registers", .title = "regs", .unit = APX_UNIT_COUNT },
	{ .key = "static_smem_bytes", .title = "smem", .unit = APX_UNIT_BYTES },
	{ .key = "dynamic_smem_bytes", .title = "dynsmem", .unit = APX_UNIT_BYTES },
	{ .key = "occupancy", .title = "occupancy", .unit = APX_UNIT_RATIO,
	  .h.jfmt = APX_JF_F4 },
};

/* The kernels by total time, largest first: the 256 largest at most, in top[]; their number. */
static size_t kernels_by_total(const struct apx_model *m, const struct apx_an_name **top)
{
	size_t n = 0;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->count)
			continue;
		if (n < 256) {
			top[n++] = nm;
		} else {
			qsort(top, n, sizeof(top[0]), apx_rb_cmp_kernel_total);
			if (nm->total_ns > top[n - 1]->total_ns)
				top[n - 1] = nm;
		}
	}
	qsort(top, n, sizeof(top[0]), apx_rb_cmp_kernel_total);
	return n;
}

static void kernels_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_KERNELS, "json:kernels", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, kernels_json_cols);
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *a = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!a->count)
			continue;
		if (apx_rtable_row(j) < 0)
			break;
		apx_rdoc_kernel_cells(d, j, a);
	}
	apx_rdoc_json(d, APX_SEC_KERNELS, "kernels", j, APX_RJ_ARRAY, 0);
}

/* The text: the first --top kernels by total time, their times, then their launches. */
void apx_rdoc_view_kernels(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_KERNELS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:kernels", APX_VIEW_TEXT);
	struct apx_rtable *l = apx_rdoc_view_table(d, s, "text:launches", APX_VIEW_TEXT);
	const struct apx_an_name *top[256];
	size_t n;

	kernels_json(d);
	if (!m->k.n) {
		apx_rdoc_line(d, s, 2, "no kernels");
		return;
	}
	n = kernels_by_total(m, top);
	APX_RTABLE_SET_VCOLS(t, kernels_text_cols);
	APX_RTABLE_SET_VCOLS(l, launch_text_cols);
	for (size_t i = 0; i < n && i < d->top; i++) {
		if (apx_rtable_row(t) < 0 || apx_rtable_row(l) < 0)
			break;
		apx_rdoc_kernel_cells(d, t, top[i]);
		apx_rdoc_kernel_cells(d, l, top[i]);
	}
	apx_rdoc_blk_table(d, s, t);
	apx_rdoc_line(d, s, 0, "%s", "");
	apx_rdoc_blk_table(d, s, l);
}

/* ---- transfers ---- */
static const struct apx_rvcol transfers_text_cols[] = {
	{ .key = "direction", .title = "dir", .unit = APX_UNIT_TEXT, .h = { .tw = -7 } },
	{ .key = "host_memory", .title = "host memory", .unit = APX_UNIT_TEXT, .h = { .tw = -13 } },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES, .h = { .tw = 9 } },
	{ .key = "min_bytes", .title = "min", .unit = APX_UNIT_BYTES, .h = { .tw = 8 } },
	{ .key = "max_bytes", .title = "max", .unit = APX_UNIT_BYTES, .h = { .tw = 8 } },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "mean_ns", .title = "mean", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "gbps", .title = "GB/s", .unit = APX_UNIT_RATIO, .h = { .tw = 7, .tfix = 2 } },
	{ .key = "peak_pct", .title = "%peak", .unit = APX_UNIT_PCT, .h = { .tw = 6, .tfix = 1 } },
};
static const struct apx_rvcol transfers_json_cols[] = {
	{ .key = "direction", .title = "dir", .unit = APX_UNIT_TEXT },
	{ .key = "host_memory_kind", .title = "host memory", .unit = APX_UNIT_TEXT,
	  .h.jkey = "host_memory" },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "min_bytes", .title = "min", .unit = APX_UNIT_BYTES },
	{ .key = "max_bytes", .title = "max", .unit = APX_UNIT_BYTES },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "gbps", .title = "GB/s", .unit = APX_UNIT_RATIO },
	{ .key = "small_count", .title = "<= 64 kB", .unit = APX_UNIT_COUNT },
	{ .key = "synchronous_count", .title = "synchronous", .unit = APX_UNIT_COUNT },
};

void apx_rdoc_view_transfers(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_TRANSFERS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:transfers", APX_VIEW_TEXT);
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:transfers", APX_VIEW_JSON);
	double link;

	APX_RTABLE_SET_VCOLS(t, transfers_text_cols);
	APX_RTABLE_SET_VCOLS(j, transfers_json_cols);
	for (unsigned dir = 0; dir < APX_COPY__COUNT; dir++)
		for (unsigned k = 0; k < APX_MEM__COUNT; k++) {
			if (!m->xfer[dir][k].count || apx_rtable_row(t) < 0 ||
			    apx_rtable_row(j) < 0)
				continue;
			apx_rdoc_xfer_cells(d, t, dir, k);
			apx_rdoc_xfer_cells(d, j, dir, k);
		}
	apx_rdoc_json(d, s, "transfers", j, APX_RJ_ARRAY, 0);

	apx_rdoc_blk_table(d, s, t);
	if (!t || !t->nrows) {
		apx_rdoc_line(d, s, 2, "no copies");
		return;
	}
	link = m->ndevices ? apx_link_peak_bps(m, m->devices[0].id) : 0;
	if (link > 0 && m->devices[0].pcie_gen)
		apx_rdoc_line(d, s, 2, "host link peak: PCIe gen%u x%u, %.1f GB/s per direction",
			      m->devices[0].pcie_gen, m->devices[0].pcie_width, link / 1e9);
	else if (link > 0)
		apx_rdoc_line(d, s, 2, "host link peak: %.1f GB/s per direction (PCIe generation not "
			      "recorded: the one sm_%u%u GPUs have)", link / 1e9,
			      m->devices[0].cc_major % 100, m->devices[0].cc_minor % 100);
}

/* ---- synchronization ---- */
static const struct apx_rvcol sync_text_cols[] = {
	{ .key = "kind", .title = "kind", .unit = APX_UNIT_TEXT, .h = { .tw = -20 } },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "host_blocked_ns", .title = "host blocked", .unit = APX_UNIT_NS,
	  .h = { .tw = 14, .tna = "(GPU-side)" } },
	{ .key = "mean_ns", .title = "mean", .unit = APX_UNIT_NS, .h = { .tw = 12 } },
};
static const struct apx_rvcol sync_json_cols[] = {
	{ .key = "host_blocked_ns", .title = "host blocked", .unit = APX_UNIT_NS },
	{ .key = "implicit_count", .title = "implicit", .unit = APX_UNIT_COUNT },
	{ .key = "implicit_ns", .title = "implicit time", .unit = APX_UNIT_NS },
	{ .key = "steps", .title = "steps", .unit = APX_UNIT_COUNT },
};
static const struct apx_rvcol sync_kinds_json_cols[] = {
	{ .key = "kind", .title = "kind", .unit = APX_UNIT_TEXT },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "host_blocked_ns", .title = "host blocked", .unit = APX_UNIT_NS },
};
/* The host syncs by cause (model.h enum apx_sync_cause, sync_cause.c). */
static const struct apx_rvcol sync_causes_text_cols[] = {
	{ .key = "cause", .title = "what the host waited for", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -58 } },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "host_blocked_ns", .title = "host blocked", .unit = APX_UNIT_NS,
	  .h = { .tw = 14 } },
};
static const struct apx_rvcol sync_causes_json_cols[] = {
	{ .key = "cause", .title = "cause", .unit = APX_UNIT_TEXT },
	{ .key = "text", .title = "what the host waited for", .unit = APX_UNIT_TEXT },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "host_blocked_ns", .title = "host blocked", .unit = APX_UNIT_NS },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "min_bytes", .title = "smallest", .unit = APX_UNIT_BYTES },
	{ .key = "max_bytes", .title = "largest", .unit = APX_UNIT_BYTES },
};

/* The host syncs by cause, the most host time first (apx_sync_causes_ranked). */
static void sync_causes(struct apx_rdoc *d, struct apx_rtable *t, struct apx_rtable *j)
{
	const struct apx_model *m = d->m;
	unsigned order[APX_SYNC_CAUSE__COUNT], n = apx_sync_causes_ranked(m, order);

	for (unsigned i = 0; i < n; i++) {
		const struct apx_an_sync_cause *a = &m->sync_cause[order[i]];
		char b[96];

		apx_sync_cause_text(b, sizeof(b), order[i], a->min_bytes, a->max_bytes);
		if (apx_rtable_row(t) == 0) {
			apx_rtable_str(d, t, 0, b);
			apx_rtable_u64(t, 1, a->count);
			apx_rtable_u64(t, 2, a->ns);
		}
		if (apx_rtable_row(j) == 0) {
			apx_rtable_str(d, j, 0, apx_sync_cause_key(order[i]));
			apx_rtable_str(d, j, 1, b);
			apx_rtable_u64(j, 2, a->count);
			apx_rtable_u64(j, 3, a->ns);
			apx_rtable_u64(j, 4, a->bytes);
			if (a->max_bytes) {	/* the copy causes */
				apx_rtable_u64(j, 5, a->min_bytes);
				apx_rtable_u64(j, 6, a->max_bytes);
			}
		}
	}
}

void apx_rdoc_view_sync(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_SYNC;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:synchronization", APX_VIEW_JSON);
	struct apx_rtable *jk = apx_rdoc_view_table(d, s, "json:kinds", APX_VIEW_JSON);
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:kinds", APX_VIEW_TEXT);
	struct apx_rtable *jc = apx_rdoc_view_table(d, s, "json:causes", APX_VIEW_JSON);
	struct apx_rtable *tc = apx_rdoc_view_table(d, s, "text:causes", APX_VIEW_TEXT);
	char b1[32];

	APX_RTABLE_SET_VCOLS(j, sync_json_cols);
	APX_RTABLE_SET_VCOLS(jk, sync_kinds_json_cols);
	APX_RTABLE_SET_VCOLS(t, sync_text_cols);
	APX_RTABLE_SET_VCOLS(jc, sync_causes_json_cols);
	APX_RTABLE_SET_VCOLS(tc, sync_causes_text_cols);
	if (apx_rtable_row(j) == 0) {
		apx_rtable_u64(j, 0, m->sync_total_ns);
		apx_rtable_u64(j, 1, m->sync_implicit_count);
		apx_rtable_u64(j, 2, m->sync_implicit_ns);
		apx_rtable_u64(j, 3, m->steps);
	}
	apx_rdoc_sync_rows(d, t);
	for (unsigned k = 0; k < APX_SYNC_KIND__COUNT; k++) {	/* JSON: no implicit row */
		if (!m->sync_count[k] || apx_rtable_row(jk) < 0)
			continue;
		apx_rtable_str(d, jk, 0, apx_sync_kind_name(k));
		apx_rtable_u64(jk, 1, m->sync_count[k]);
		apx_rtable_u64(jk, 2, m->sync_ns[k]);
	}
	apx_rdoc_json(d, s, "synchronization", j, APX_RJ_OBJECT, 0);
	apx_rdoc_json(d, s, "kinds", jk, APX_RJ_ARRAY, 1);
	sync_causes(d, tc, jc);
	apx_rdoc_json(d, s, "causes", jc, APX_RJ_ARRAY, 1);

	if (!m->syncs.n && !m->sync_implicit_count) {
		apx_rdoc_line(d, s, 2, "no synchronization records");
		return;
	}
	apx_rdoc_blk_table(d, s, t);
	apx_rdoc_line(d, s, 2, "host blocked in synchronization: %s (%.1f%% of the run)",
		      apx_fmt_ns(b1, sizeof(b1), (double)m->sync_total_ns),
		      pct((double)m->sync_total_ns, (double)m->collected_ns));
	if (m->steps)
		apx_rdoc_line(d, s, 2, "per step: %.1f synchronizations (%" PRIu64
			      " steps from NVTX ranges)",
			      (double)(m->syncs.n - m->sync_count[APX_SYNC_KIND_STREAM_WAIT_EVENT]) /
				      (double)m->steps, m->steps);
	if (tc && tc->nrows) {	/* sync_cause.c: the copy each waited for, the kernel before */
		apx_rdoc_line(d, s, 2, "by what each sync waited for (the copy before it, the "
			      "kernel before that copy):");
		apx_rdoc_blk_table(d, s, tc);
	}
}

/* ---- device metrics (PM sampling) ---- */
static const struct apx_rvcol metrics_json_cols[] = {
	{ .key = "metric", .title = "metric", .unit = APX_UNIT_TEXT },
	{ .key = "unit", .title = "unit", .unit = APX_UNIT_TEXT },
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "mean_sample_ns", .title = "sample", .unit = APX_UNIT_NS },
	{ .key = "min", .title = "min", .unit = APX_UNIT_RATIO, .h.jomit = 1 },
	{ .key = "mean", .title = "mean", .unit = APX_UNIT_RATIO, .h.jomit = 1 },
	{ .key = "p95", .title = "p95", .unit = APX_UNIT_RATIO, .h.jomit = 1 },
	{ .key = "max", .title = "max", .unit = APX_UNIT_RATIO, .h.jomit = 1 },
	{ .key = "kernels", .title = "top kernels", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
};
static const struct apx_rvcol metric_kernels_json_cols[] = {
	{ .key = "kernel", .title = "kernel", .unit = APX_UNIT_TEXT },
	{ .key = "mean", .title = "mean", .unit = APX_UNIT_RATIO },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "covered_ns", .title = "covered", .unit = APX_UNIT_NS },
	{ .key = "why", .title = "why", .unit = APX_UNIT_TEXT },
};

/* A PM-sampling value in its unit: percentages as %, rates as sizes a second. */
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

static void metrics_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_METRICS, "json:metrics", APX_VIEW_JSON);
	char name[4096];

	APX_RTABLE_SET_VCOLS(j, metrics_json_cols);
	for (size_t i = 0; i < m->pm.n; i++) {
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, i);
		struct apx_rtable *k = apx_rdoc_sub_table(d, "kernels");

		if (apx_rtable_row(j) < 0)
			break;
		apx_rtable_text(d, j, 0, p->name, p->name_len);
		apx_rtable_text(d, j, 1, p->unit, p->unit_len);
		apx_rtable_u64(j, 2, p->device);
		apx_rtable_u64(j, 3, p->samples);
		apx_rtable_u64(j, 4, p->mean_sample_ns);
		if (p->have_steady) {
			apx_rtable_num(j, 5, p->min);
			apx_rtable_num(j, 6, p->mean);
			apx_rtable_num(j, 7, p->p95);
			apx_rtable_num(j, 8, p->max);
		}
		APX_RTABLE_SET_VCOLS(k, metric_kernels_json_cols);
		for (size_t t = 0; t < p->ntop; t++) {
			char why[160];

			if (!p->top_covered_ns[t] || apx_rtable_row(k) < 0)
				continue;	/* no sample met its executions */
			apx_rtable_str(d, k, 0, apx_kernel_display_name(APX_VEC_AT(&m->names,
										   struct apx_an_name,
										   p->top[t]),
								       name, sizeof(name)));
			if (!isnan(p->top_mean[t]))
				apx_rtable_num(k, 1, p->top_mean[t]);
			apx_rtable_u64(k, 2, p->top_samples[t]);
			apx_rtable_u64(k, 3, p->top_covered_ns[t]);
			if (isnan(p->top_mean[t]))
				apx_rtable_str(d, k, 4, apx_hw_kernel_why(why, sizeof(why),
									  p->mean_sample_ns,
									  p->top_kernel_ns[t],
									  p->top_samples[t],
									  apx_hw_is_pm(p->name, p->name_len)));
		}
		apx_rtable_sub(j, 9, k);
	}
	apx_rdoc_json(d, APX_SEC_METRICS, "metrics", j, APX_RJ_ARRAY, 0);
}

static const struct apx_rvcol kc_json_cols[] = {
	{ .key = "kernel", .title = "kernel", .unit = APX_UNIT_TEXT },
	{ .key = "launches", .title = "launches", .unit = APX_UNIT_COUNT },
	{ .key = "passes", .title = "passes", .unit = APX_UNIT_COUNT },
	{ .key = "one_pass_launches", .title = "one-pass launches", .unit = APX_UNIT_COUNT },
	{ .key = "one_pass_cache", .title = "one-pass cache state", .unit = APX_UNIT_TEXT },
	{ .key = "bound", .title = "bound", .unit = APX_UNIT_TEXT },
	{ .key = "counters", .title = "counters", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_OBJ },
	{ .key = "stalls", .title = "top stalls", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
};
static const struct apx_rvcol kc_stall_json_cols[] = {
	{ .key = "metric", .title = "metric", .unit = APX_UNIT_TEXT },
	{ .key = "cycles_per_inst", .title = "cycles/inst", .unit = APX_UNIT_RATIO },
	{ .key = "reason", .title = "reason", .unit = APX_UNIT_TEXT },
	{ .key = "try", .title = "try", .unit = APX_UNIT_TEXT },
};

/* The cache state the run's one-pass launches were measured in (model.h apx_replay_dram), in
 * words for the JSON ("after-l2-sweep", "program-order", "mixed") and for the text. */
static const char *one_pass_state(const struct apx_model *m, int words)
{
	if (m->replay_dram == APX_REPLAY_DRAM_PROGRAM)
		return words ? "in the program's cache state" : "program-order";
	if (m->replay_dram == (APX_REPLAY_DRAM_PROGRAM | APX_REPLAY_DRAM_SWEEP))
		return words ? "(some after an L2 flush)" : "mixed";
	return words ? "after an L2 flush" : "after-l2-sweep";
}

/* "kernel_counters": each replayed kernel's counters (medians of its replayed launches, or of
 * its one-pass ones for the DRAM counters and L2 sector hits those give, and the L2 hit rate
 * from those hits; only those measured, named as the replay set names them), what bounds it
 * and its top stalls (apx analyze --replay). */
static void kernel_counters_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const struct apx_pm_set *set = apx_pm_replay_set();
	struct apx_rtable *j = apx_rdoc_view_table(d, APX_SEC_METRICS, "json:kernel_counters",
						   APX_VIEW_JSON);
	char name[4096];

	APX_RTABLE_SET_VCOLS(j, kc_json_cols);
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		struct apx_kc_values k = { .have = kc->have, .launches = kc->launches };
		struct apx_rtable *c = apx_rdoc_sub_table(d, "counters");
		struct apx_rtable *st = apx_rdoc_sub_table(d, "stalls");
		unsigned top[3];
		size_t ns;

		if (apx_rtable_row(j) < 0)
			break;
		memcpy(k.v, kc->v, sizeof(k.v));
		apx_rtable_str(d, j, 0, apx_kernel_display_name(APX_VEC_AT(&m->names,
									   struct apx_an_name,
									   kc->name),
							       name, sizeof(name)));
		apx_rtable_u64(j, 1, kc->launches);
		apx_rtable_u64(j, 2, kc->passes);
		apx_rtable_u64(j, 3, kc->one_pass);
		if (kc->one_pass)
			apx_rtable_str(d, j, 4, one_pass_state(m, 0));
		apx_rtable_str(d, j, 5, apx_bound_name(apx_kc_bound(&k)));
		for (size_t n = 0; n < set->n && n < APX_KC__COUNT; n++)
			if (kc->have >> n & 1)
				apx_rtable_col(c, set->metrics[n].name, set->metrics[n].name,
					       APX_UNIT_RATIO);
		if (apx_rtable_row(c) == 0)
			for (size_t n = 0, col = 0; n < set->n && n < APX_KC__COUNT; n++)
				if (kc->have >> n & 1)
					apx_rtable_num(c, (unsigned)col++, kc->v[n]);
		apx_rtable_sub(j, 6, c);
		APX_RTABLE_SET_VCOLS(st, kc_stall_json_cols);
		ns = apx_kc_top_stalls(&k, top, 3);
		for (size_t n = 0; n < ns && apx_rtable_row(st) == 0; n++) {
			apx_rtable_str(d, st, 0, set->metrics[APX_KC_STALL_FIRST + top[n]].name);
			apx_rtable_num(st, 1, k.v[APX_KC_STALL_FIRST + top[n]]);
			apx_rtable_str(d, st, 2, apx_stall_words(top[n]));
			apx_rtable_str(d, st, 3, apx_stall_try(top[n]));
		}
		apx_rtable_sub(j, 7, st);
	}
	apx_rdoc_json(d, APX_SEC_METRICS, "kernel_counters", j, APX_RJ_ARRAY, 0);
}

/* Was any launch of the run measured in one pass (a later launch of a replayed kernel)? */
static int one_pass_run(const struct apx_model *m)
{
	for (size_t i = 0; i < m->kc.n; i++)
		if (APX_VEC_AT(&m->kc, struct apx_an_kc, i)->one_pass)
			return 1;
	return 0;
}

/* One replayed kernel's counters (apx analyze --replay): what bounds it, throughput, hit rates,
 * bytes, the top stalls in words with what to try. */
static void kernel_counter_lines(struct apx_rdoc *d, const struct apx_an_kc *kc)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_METRICS;
	struct apx_kc_values k = { .have = kc->have, .launches = kc->launches };
	static const struct { unsigned kc; const char *what, *after; } pct[] = {
		{ APX_KC_OCCUPANCY, "occupancy", "" }, { APX_KC_SM_PCT, "SM", " of peak" },
		{ APX_KC_DRAM_PCT, "DRAM", " of peak" }, { APX_KC_L1_HIT, "L1/shared hits", "" },
		{ APX_KC_L2_HIT, "L2 hits", "" }, { APX_KC_TENSOR, "tensor pipe", "" },
	};
	char name[512], text[600], b1[32], b2[32], head[64];
	unsigned st[3];
	size_t ns;

	memcpy(k.v, kc->v, sizeof(k.v));
	apx_rdoc_line(d, s, 2, "kernel counters (replay): %.70s",
		      apx_kernel_display_name(APX_VEC_AT(&m->names, struct apx_an_name, kc->name),
					      name, sizeof(name)));
	/* only what was measured: a counter the replay did not give is left out */
	snprintf(text, sizeof(text), "%u launches replayed (%u passes each)", kc->launches,
		 kc->passes);
	if (kc->one_pass)
		apx_text_append(text, sizeof(text), " and %u measured in one pass %s (DRAM%s)",
				kc->one_pass, one_pass_state(m, 1),
				kc->from_one_pass >> APX_KC_L2_HIT & 1 ? ", L2 hits" : "");
	apx_text_append(text, sizeof(text), ", %s-bound", apx_bound_name(apx_kc_bound(&k)));
	if (kc->have >> APX_KC_DURATION & 1)
		apx_text_append(text, sizeof(text), "; duration %s",
				apx_fmt_ns(b1, sizeof(b1), k.v[APX_KC_DURATION]));
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		if (kc->have >> pct[i].kc & 1)
			apx_text_append(text, sizeof(text), ", %s %.0f%%%s", pct[i].what, k.v[pct[i].kc],
					pct[i].after);
	if (kc->have >> APX_KC_DRAM_READ & 1 && kc->have >> APX_KC_DRAM_WRITE & 1)
		apx_text_append(text, sizeof(text), ", DRAM read %s and written %s a launch%s",
				apx_fmt_size(b1, sizeof(b1), k.v[APX_KC_DRAM_READ]),
				apx_fmt_size(b2, sizeof(b2), k.v[APX_KC_DRAM_WRITE]),
				kc->from_one_pass >> APX_KC_DRAM_WRITE & 1 ? " (one pass)"
				: kc->one_pass || !one_pass_run(m) ? ""
				: " (no one-pass launch: the replay's, writes inflated)");
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 4, .text = text,
					       .windent = 4 });
	ns = apx_kc_top_stalls(&k, st, 3);
	for (size_t i = 0; i < ns; i++) {
		snprintf(head, sizeof(head), "stall %.1f cycles/inst: ", k.v[APX_KC_STALL_FIRST + st[i]]);
		snprintf(text, sizeof(text), "%s; try: %s", apx_stall_words(st[i]), apx_stall_try(st[i]));
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 4, .head = head,
						       .text = text, .windent = 6 });
	}
}

/* Device metrics (apx analyze --metrics): the section is printed only when the trace has them. */
void apx_rdoc_view_metrics(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_METRICS;
	char b[4][32], sample[32], name[512], line[256];

	metrics_json(d);
	kernel_counters_json(d);
	apx_rdoc_nic_json(d);		/* --nic-metrics (build_nic.c) */
	d->sec[s].text_title = m->pm.n ? "Device metrics (over the steady state)"
			       : m->kc.n ? "Kernel counters (kernel replay)"
			       : "NIC counters (apx analyze --nic-metrics)";
	if (!m->pm.n && !m->kc.n && !apx_rdoc_nic_table(d)) {
		d->sec[s].text_untitled = 1;
		return;
	}
	apx_rdoc_nic_text(d);
	for (size_t i = 0; i < m->kc.n; i++)
		kernel_counter_lines(d, APX_VEC_AT(&m->kc, struct apx_an_kc, i));
	if (!m->pm.n)
		return;
	/* 2 + 32 + 4 + 8 + 9 + 4 x 11 = 99 columns: a rate is up to 10 ("262.1 MB/s") */
	apx_rdoc_line(d, s, 2, "%-32s %3s %7s %8s %10s %10s %10s %10s", "metric (unit)", "dev", "samples",
		      "sample", "min", "mean", "p95", "max");
	for (size_t i = 0; i < m->pm.n; i++) {
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, i);
		char label[64];

		snprintf(label, sizeof(label), "%.*s (%.*s)", (int)(p->name_len > 48 ? 48 : p->name_len),
			 p->name, (int)(p->unit_len > 10 ? 10 : p->unit_len), p->unit);
		snprintf(line, sizeof(line), "%-32.32s %3u %7" PRIu64 " %8s", label, p->device,
			 p->samples, apx_fmt_ns(sample, sizeof(sample), (double)p->mean_sample_ns));
		if (p->have_steady)
			apx_text_append(line, sizeof(line), " %10s %10s %10s %10s",
					pm_value(b[0], 32, p, p->min), pm_value(b[1], 32, p, p->mean),
					pm_value(b[2], 32, p, p->p95), pm_value(b[3], 32, p, p->max));
		else
			apx_text_append(line, sizeof(line), "  no sample in the steady state");
		apx_rdoc_line(d, s, 2, "%s", line);
		for (size_t j = 0; j < p->ntop; j++) {
			const char *kn = apx_kernel_display_name(APX_VEC_AT(&m->names,
									    struct apx_an_name,
									    p->top[j]),
								 name, sizeof(name));

			if (!p->top_covered_ns[j])
				continue;	/* no sample met its executions */
			if (isnan(p->top_mean[j])) {
				apx_rdoc_line(d, s, 6, "%10s during %.70s", "n/a", kn);
				apx_hw_kernel_why(line, sizeof(line), p->mean_sample_ns,
						  p->top_kernel_ns[j], p->top_samples[j],
						  apx_hw_is_pm(p->name, p->name_len));
				apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP,
								       .indent = 4, .text = line,
								       .windent = 6 });
			} else {
				apx_rdoc_line(d, s, 6, "%10s during %.58s (%" PRIu64 " samples)",
					      pm_value(b[0], 32, p, p->top_mean[j]), kn,
					      p->top_samples[j]);
			}
		}
	}
}

/* ---- memory ---- */
static const struct apx_rvcol memory_json_cols[] = {
	{ .key = "device_peak_bytes", .title = "device peak", .unit = APX_UNIT_BYTES },
	{ .key = "device_total_bytes", .title = "device memory", .unit = APX_UNIT_BYTES },
	{ .key = "device_allocations", .title = "allocations", .unit = APX_UNIT_COUNT },
	{ .key = "pinned_peak_bytes", .title = "pinned peak", .unit = APX_UNIT_BYTES },
	{ .key = "pinned_allocations", .title = "pinned allocations", .unit = APX_UNIT_COUNT },
};

void apx_rdoc_view_memory(struct apx_rdoc *d)
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
	apx_rdoc_pymem_json(d);		/* memory.over_time: the Python hooks' samples */
	apx_rdoc_allocs_json(d);	/* memory.largest_allocations, .failed_allocations */

	if (!m->mem_events.n) {
		apx_rdoc_line(d, s, 2, "no allocation records");
		apx_rdoc_pymem_text(d);
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
	apx_rdoc_allocs_text(d);
	apx_rdoc_pymem_text(d);
}

/* ---- streams ---- */
static const struct apx_rvcol streams_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID, .h = { .tw = -6 } },
	{ .key = "stream", .title = "stream", .unit = APX_UNIT_ID, .h = { .tw = -14 } },
	{ .key = "kernels", .title = "kernels", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "busy_ns", .title = "busy", .unit = APX_UNIT_NS, .h = { .tw = 12 } },
};

static const struct apx_rvcol waits_cols[] = {
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID, .h = { .tw = -6 } },
	{ .key = "stream", .title = "stream", .unit = APX_UNIT_ID, .h = { .tw = -10 } },
	{ .key = "awaited_stream", .title = "waited for", .unit = APX_UNIT_ID, .h = { .tw = -10 } },
	{ .key = "count", .title = "waits", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "idle_ns", .title = "idle before", .unit = APX_UNIT_NS, .h = { .tw = 12 } },
	{ .key = "waiter", .title = "e.g.", .unit = APX_UNIT_TEXT, .h = { .tw = -1 } },
	{ .key = "awaited", .title = "after", .unit = APX_UNIT_TEXT, .h = { .tw = -1 } },
};

/* What a task of the what-if graph is, in words: a kernel's demangled name (cut to fit a
 * line), a copy's direction, "memset". */
static const char *task_text(const struct apx_model *m, const struct apx_wi_task *t, char *buf,
			     size_t cap)
{
	if (t->kind == APX_WI_COPY) {
		snprintf(buf, cap, "copy %s", apx_copy_kind_name(t->copy_kind));
		return buf;
	}
	if (t->kind == APX_WI_KERNEL) {
		struct apx_es_text n = apx_store_string(m->store, t->name);

		return apx_demangle(n.p, n.len, buf, cap);
	}
	return "memset";
}

/* The cross-stream waits of the steady window (whatif/waits.c: an operation that started when
 * another stream's operation ended, an event wait): which stream waited for which, how often,
 * its idle time before them, and the longest wait's pair of operations. */
static void view_waits(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_STREAMS;
	struct apx_wi_wait w[16];
	size_t n = apx_whatif_waits(m, w, sizeof(w) / sizeof(w[0]));
	struct apx_rtable *t;
	char b1[32], b2[32], k1[256], k2[256];

	t = apx_rdoc_view_table(d, s, "view:cross_stream_waits", TJ);
	APX_RTABLE_SET_VCOLS(t, waits_cols);
	if (n)
		apx_rdoc_line(d, s, 2, "cross-stream waits (steady state: an operation that started "
			      "as another stream's ended):");
	for (size_t i = 0; i < n && apx_rtable_row(t) == 0; i++) {
		const struct apx_es_stream *a = &m->store->streams[w[i].stream];
		const struct apx_es_stream *b = &m->store->streams[w[i].awaited_stream];
		const char *x = task_text(m, &m->whatif->t[w[i].waiter], k1, sizeof(k1));
		const char *y = task_text(m, &m->whatif->t[w[i].awaited], k2, sizeof(k2));

		apx_rtable_u64(t, 0, m->store->devices[a->device].ordinal);
		apx_rtable_u64(t, 1, a->id);
		apx_rtable_u64(t, 2, b->id);
		apx_rtable_u64(t, 3, w[i].count);
		apx_rtable_u64(t, 4, w[i].idle_ns);
		apx_rtable_str(d, t, 5, x);
		apx_rtable_str(d, t, 6, y);
		if (i >= d->top)
			continue;
		apx_rdoc_line(d, s, 4, "stream %" PRIu64 " waited for stream %" PRIu64 ": %" PRIu64
			      " times, idle %s before them", a->id, b->id, w[i].count,
			      apx_fmt_ns(b1, sizeof(b1), (double)w[i].idle_ns));
		apx_rdoc_line(d, s, 6, "longest %s: %.40s after %.24s",
			      apx_fmt_ns(b2, sizeof(b2), (double)w[i].max_gap_ns), x, y);
	}
	apx_rdoc_json(d, s, "cross_stream_waits", t, APX_RJ_ARRAY, 0);
}

/* One table for both views: JSON has every stream, the text the first --top. */
void apx_rdoc_view_streams(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_STREAMS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "view:streams", TJ);
	char b1[32], b2[32];

	APX_RTABLE_SET_VCOLS(t, streams_cols);
	for (size_t i = 0; i < m->streams.n && apx_rtable_row(t) == 0; i++)
		apx_rdoc_stream_cells(t, APX_VEC_AT(&m->streams, struct apx_an_stream, i));
	apx_rdoc_json(d, s, "streams", t, APX_RJ_ARRAY, 0);

	if (!m->streams.n) {
		apx_rdoc_line(d, s, 2, "no streams");
		return;
	}
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_HEADER, .t = t });
	apx_rdoc_blk_rows(d, s, t, 0, d->top);
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);

		apx_rdoc_line(d, s, 2, "device %u: 2+ kernels in flight %s (%.1f%% of kernel time), "
			      "copies under kernels %s (%.1f%%)", tl->device,
			      apx_fmt_ns(b1, sizeof(b1), (double)tl->concurrent_ns),
			      pct((double)tl->concurrent_ns, (double)tl->kernel_busy_ns),
			      apx_fmt_ns(b2, sizeof(b2), (double)tl->overlap_ns),
			      pct((double)tl->overlap_ns, (double)tl->copy_busy_ns));
	}
	view_waits(d);
}

/* ---- NVTX ranges ---- */
static const struct apx_rvcol nvtx_text_cols[] = {
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "wall_ns", .title = "wall", .unit = APX_UNIT_NS, .h = { .tw = 12 } },
	{ .key = "gpu_ns", .title = "GPU", .unit = APX_UNIT_NS, .h = { .tw = 12 } },
	{ .key = "gpu_pct", .title = "GPU%", .unit = APX_UNIT_PCT, .h = { .tw = 6, .tfix = 2 } },
	{ .key = "name", .title = "range", .unit = APX_UNIT_TEXT, .h = { .tgap = 1, .tmax = 50 } },
};
static const struct apx_rvcol nvtx_json_cols[] = {
	{ .key = "name", .title = "range", .unit = APX_UNIT_TEXT },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT },
	{ .key = "wall_ns", .title = "wall", .unit = APX_UNIT_NS },
	{ .key = "gpu_ns", .title = "GPU", .unit = APX_UNIT_NS },
};

void apx_rdoc_view_nvtx(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_NVTX;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:ranges", APX_VIEW_TEXT);
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:nvtx", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(t, nvtx_text_cols);
	APX_RTABLE_SET_VCOLS(j, nvtx_json_cols);
	for (size_t i = 0; i < m->ranges.n; i++) {
		const struct apx_an_range *r = APX_VEC_AT(&m->ranges, struct apx_an_range, i);

		if (apx_rtable_row(j) < 0)
			break;
		apx_rdoc_range_cells(d, j, r);
		if (i < d->top && apx_rtable_row(t) == 0)
			apx_rdoc_range_cells(d, t, r);
	}
	apx_rdoc_json(d, s, "nvtx", j, APX_RJ_ARRAY, 0);
	if (!m->ranges.n)
		apx_rdoc_line(d, s, 2, "no NVTX ranges (torch.cuda.nvtx.range_push/pop, emit_nvtx)");
	else
		apx_rdoc_blk_table(d, s, t);
}

/* ---- L2 persistence ---- */
static const struct apx_rvcol l2_json_cols[] = {
	{ .key = "kind", .title = "setting", .unit = APX_UNIT_TEXT },
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "stream", .title = "stream", .unit = APX_UNIT_ID },
	{ .key = "value", .title = "value", .unit = APX_UNIT_COUNT },
	{ .key = "base", .title = "base", .unit = APX_UNIT_ID },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "hit_ratio", .title = "hit ratio", .unit = APX_UNIT_RATIO },
	{ .key = "hit_prop", .title = "hits", .unit = APX_UNIT_ID },
	{ .key = "miss_prop", .title = "misses", .unit = APX_UNIT_ID },
};

static const char *prop_name(unsigned p)
{
	return p == APX_ACCESS_PERSISTING   ? "persisting"
	       : p == APX_ACCESS_STREAMING ? "streaming" : "normal";
}

/* A stream of an L2 setting: the CUDA stream id, or (nvperfd) the CUstream handle in hex. Each
 * fits 20 columns, so the lines below fit 100 columns for any 64-bit value. */
static const char *stream_name(char *buf, size_t cap, const struct apx_an_config *c)
{
	if (c->stream_is_handle)
		snprintf(buf, cap, "handle 0x%" PRIx64, c->stream);
	else
		snprintf(buf, cap, "%" PRIu64, c->stream);
	return buf;
}

static void l2_line(struct apx_rdoc *d, const struct apx_an_config *c)
{
	const unsigned s = APX_SEC_L2;
	char b1[32], b2[32];

	switch (c->kind) {
	case APX_CONFIG_L2_PERSIST_LIMIT:
		apx_rdoc_line(d, s, 2, "set-aside for persisting accesses: %s (device %u, +%s)",
			      apx_fmt_size(b1, sizeof(b1), (double)c->value), c->device,
			      apx_fmt_ns(b2, sizeof(b2), (double)(c->ts - d->m->run_start_ns)));
		break;
	case APX_CONFIG_L2_PERSIST_RESET:
		apx_rdoc_line(d, s, 2, "persisting lines reset (device %u)", c->device);
		break;
	case APX_AN_CONFIG_KERNELS_UNDER_APW:
		apx_rdoc_line(d, s, 2, "access-policy window on kernels of stream %s: 0x%" PRIx64 " %s",
			      stream_name(b2, sizeof(b2), c), c->base,
			      apx_fmt_size(b1, sizeof(b1), (double)c->bytes));
		apx_rdoc_line(d, s, 4, "%" PRIu64 " kernels ran under it; hit ratio %.2f, hits %s, "
			      "misses %s", c->value, c->hit_ppm / 1e6, prop_name(c->hit_prop),
			      prop_name(c->miss_prop));
		break;
	default:
		if (c->kind == APX_CONFIG_APW_GRAPH_NODE)
			snprintf(b2, sizeof(b2), "%" PRIu64, c->target);
		else
			stream_name(b2, sizeof(b2), c);
		apx_rdoc_line(d, s, 2, "access-policy window on %s %s: 0x%" PRIx64 " %s",
			      c->kind == APX_CONFIG_APW_STREAM ? "stream"
			      : c->kind == APX_CONFIG_APW_GRAPH_NODE ? "graph node" : "launch",
			      b2, c->base, apx_fmt_size(b1, sizeof(b1), (double)c->bytes));
		apx_rdoc_line(d, s, 4, "hit ratio %.2f, hits %s, misses %s", c->hit_ppm / 1e6,
			      prop_name(c->hit_prop), prop_name(c->miss_prop));
		break;
	}
}

void apx_rdoc_view_l2(struct apx_rdoc *d)
{
	static const char *const kinds[] = { "kernels_under_window", "persisting_limit",
					     "persisting_reset", "window_stream",
					     "window_graph_node", "window_launch" };
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_L2;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:l2", APX_VIEW_JSON);
	char b1[32], b2[32];

	APX_RTABLE_SET_VCOLS(j, l2_json_cols);
	for (size_t i = 0; i < m->configs.n; i++) {
		const struct apx_an_config *c = APX_VEC_AT(&m->configs, struct apx_an_config, i);

		if (apx_rtable_row(j) < 0)
			break;
		apx_rtable_str(d, j, 0, c->kind < 6 ? kinds[c->kind] : "other");
		apx_rtable_u64(j, 1, c->device);
		apx_rtable_u64(j, 2, c->stream);
		apx_rtable_u64(j, 3, c->value);
		apx_rtable_u64(j, 4, c->base);
		apx_rtable_u64(j, 5, c->bytes);
		apx_rtable_num(j, 6, c->hit_ppm / 1e6);
		apx_rtable_u64(j, 7, c->hit_prop);
		apx_rtable_u64(j, 8, c->miss_prop);
	}
	apx_rdoc_json(d, s, "l2", j, APX_RJ_ARRAY, 0);

	for (size_t i = 0; i < m->ndevices; i++) {
		if (!m->devices[i].known)
			continue;
		if (m->devices[i].persist_l2_max)
			apx_rdoc_line(d, s, 2, "device %u: L2 %s, up to %s can be set aside for "
				      "persisting accesses", m->devices[i].id,
				      apx_fmt_size(b1, sizeof(b1), (double)m->devices[i].l2_bytes),
				      apx_fmt_size(b2, sizeof(b2), (double)m->devices[i].persist_l2_max));
		else	/* collectors before 2026-12-02 did not record it */
			apx_rdoc_line(d, s, 2, "device %u: L2 %s; the trace does not say how much can be "
				      "set aside for persisting accesses", m->devices[i].id,
				      apx_fmt_size(b1, sizeof(b1), (double)m->devices[i].l2_bytes));
	}
	for (size_t i = 0; i < m->configs.n; i++)
		l2_line(d, APX_VEC_AT(&m->configs, struct apx_an_config, i));
	if (!m->configs.n)
		apx_rdoc_line(d, s, 2, "not used: no persisting set-aside and no access-policy window "
			      "was set");
}

/* ---- unified memory ---- */
static const struct apx_rvcol uvm_text_cols[] = {
	{ .key = "kind", .title = "kind", .unit = APX_UNIT_TEXT, .h = { .tw = -28 } },
	{ .key = "count", .title = "count", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES, .h = { .tw = 10 } },
};
#define UVM_JSON(k)                                                                   \
	{ .key = k "_count", .title = k, .unit = APX_UNIT_COUNT, .h.jkey = k "/count" },      \
	{ .key = k "_bytes", .title = k, .unit = APX_UNIT_BYTES, .h.jkey = k "/bytes" }
static const struct apx_rvcol uvm_json_cols[] = {
	UVM_JSON("cpu_faults"), UVM_JSON("gpu_faults"), UVM_JSON("migrate_h2d"),
	UVM_JSON("migrate_d2h"), UVM_JSON("migrate_d2d"), UVM_JSON("thrashing"),
	UVM_JSON("throttling"), UVM_JSON("remote_map"),
};

void apx_rdoc_view_uvm(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_UVM;
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:unified_memory", APX_VIEW_JSON);
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:events", APX_VIEW_TEXT);

	APX_RTABLE_SET_VCOLS(j, uvm_json_cols);
	if (apx_rtable_row(j) == 0)
		for (unsigned k = 1; k <= APX_UVM_REMOTE_MAP; k++) {
			apx_rtable_u64(j, 2 * (k - 1), m->uvm_count[k]);
			apx_rtable_u64(j, 2 * (k - 1) + 1, m->uvm_bytes[k]);
		}
	apx_rdoc_json(d, s, "unified_memory", j, APX_RJ_OBJECT, 0);

	if (!m->uvm.n) {
		apx_rdoc_line(d, s, 2, "no unified-memory events");
		return;
	}
	APX_RTABLE_SET_VCOLS(t, uvm_text_cols);
	t->theader = 0;
	apx_rdoc_uvm_rows(d, t);
	apx_rdoc_blk_table(d, s, t);
}

/* ---- CPU ---- */
static const struct apx_rvcol cpu_text_cols[] = {
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID, .h = { .tw = -8 } },
	{ .key = "wall_ns", .title = "wall", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "user_ns", .title = "user", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "system_ns", .title = "system", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "cpu_pct", .title = "cpu%", .unit = APX_UNIT_PCT, .h = { .tw = 6, .tfix = 1 } },
	{ .key = "voluntary_switches", .title = "vol.csw", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "involuntary_switches", .title = "invol.csw", .unit = APX_UNIT_COUNT,
	  .h = { .tw = 10 } },
	{ .key = "threads_max", .title = "threads", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "peak_rss_bytes", .title = "peak RSS", .unit = APX_UNIT_BYTES, .h = { .tw = 9 } },
};
static const struct apx_rvcol cpu_json_cols[] = {
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	{ .key = "user_ns", .title = "user", .unit = APX_UNIT_NS },
	{ .key = "system_ns", .title = "system", .unit = APX_UNIT_NS },
	{ .key = "voluntary_switches", .title = "vol.csw", .unit = APX_UNIT_COUNT },
	{ .key = "involuntary_switches", .title = "invol.csw", .unit = APX_UNIT_COUNT },
	{ .key = "threads_max", .title = "threads", .unit = APX_UNIT_COUNT },
	{ .key = "peak_rss_bytes", .title = "peak RSS", .unit = APX_UNIT_BYTES },
};

void apx_rdoc_view_cpu(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_CPU;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "text:processes", APX_VIEW_TEXT);
	struct apx_rtable *j = apx_rdoc_view_table(d, s, "json:cpu", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(t, cpu_text_cols);
	APX_RTABLE_SET_VCOLS(j, cpu_json_cols);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_HEADER, .t = t });
	for (size_t fi = 0; fi < m->nfiles; fi++) {
		const struct apx_an_file *f = &m->files[fi];

		if (!f->has_cpu) {
			apx_rdoc_line(d, s, 2, "%-8" PRIu64 " no CPU samples", f->pid);
			continue;
		}
		if (apx_rtable_row(t) < 0 || apx_rtable_row(j) < 0)
			break;
		apx_rdoc_cpu_cells(t, f);
		apx_rdoc_blk_rows(d, s, t, t->nrows - 1, 1);
		apx_rdoc_cpu_cells(j, f);
	}
	apx_rdoc_json(d, s, "cpu", j, APX_RJ_ARRAY, 0);
}
