/*
 * build_gpu.c - the GPU sections of the report document (build.h): kernels (top by total
 * time, and a bar plot of them), transfers (by direction x memory kind, and each copy's size
 * against its bandwidth), synchronization, idle time by cause (a stacked bar per device),
 * memory, streams, NVTX ranges, L2 persistence, unified memory and CPU. Called by build.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/build.h"

#include "base/banned.h"

#define SCATTER_MAX 4000	/* copies drawn at most (evenly sampled) */

/* build.h */
int apx_rb_cmp_kernel_total(const void *a, const void *b)
{
	const struct apx_an_name *x = *(const struct apx_an_name *const *)a;
	const struct apx_an_name *y = *(const struct apx_an_name *const *)b;

	size_t n = x->len < y->len ? x->len : y->len;
	int c;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	c = memcmp(x->text, y->text, n);	/* ties by name: not by qsort's whim */
	return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

static const struct apx_rcol kernels_cols[] = {
	{ "name", "kernel", APX_UNIT_TEXT },
	{ "total_ns", "total", APX_UNIT_NS },
	{ "share_pct", "time%", APX_UNIT_PCT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "mean_ns", "mean", APX_UNIT_NS },
	{ "p50_ns", "p50", APX_UNIT_NS },
	{ "p95_ns", "p95", APX_UNIT_NS },
	{ "max_ns", "max", APX_UNIT_NS },
	{ "grid", "grid", APX_UNIT_TEXT },
	{ "block", "block", APX_UNIT_TEXT },
	{ "registers", "regs", APX_UNIT_COUNT },
	{ "static_smem_bytes", "smem", APX_UNIT_BYTES },
	{ "dynamic_smem_bytes", "dynsmem", APX_UNIT_BYTES },
	{ "occupancy_pct", "occupancy", APX_UNIT_PCT },
};

void apx_rdoc_build_kernels(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_KERNELS, "kernels", "Top kernels");
	const struct apx_an_name **top;
	size_t n = 0;

	APX_RTABLE_SET_COLS(t, kernels_cols);
	if (t) {
		t->plot = APX_PLOT_BARS;
		t->plot_x = 0;
		t->plot_y = 1;
	}
	if (!m->k.n && !m->untimed_launches) {
		apx_rdoc_note(d, APX_SEC_KERNELS, "no kernels");
		return;
	}
	top = malloc(m->names.n * sizeof(*top));
	if (!top)
		return;
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (nm->count)
			top[n++] = nm;
	}
	qsort(top, n, sizeof(top[0]), apx_rb_cmp_kernel_total);
	for (size_t i = 0; i < n && i < d->top && apx_rtable_row(t) == 0; i++)
		apx_rdoc_kernel_cells(d, t, top[i]);
	free(top);
}

static const struct apx_rcol transfers_cols[] = {
	{ "direction", "dir", APX_UNIT_TEXT },
	{ "host_memory", "host memory", APX_UNIT_TEXT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "bytes", "bytes", APX_UNIT_BYTES },
	{ "min_bytes", "min", APX_UNIT_BYTES },
	{ "max_bytes", "max", APX_UNIT_BYTES },
	{ "time_ns", "time", APX_UNIT_NS },
	{ "mean_ns", "mean", APX_UNIT_NS },
	{ "rate_bytes_per_s", "bandwidth", APX_UNIT_BYTES_PER_S },
	{ "peak_pct", "%peak", APX_UNIT_PCT },
	{ "small_count", "<= 64 kB", APX_UNIT_COUNT },
	{ "synchronous_count", "synchronous", APX_UNIT_COUNT },
};
static const struct apx_rcol copy_sizes_cols[] = {
	{ "bytes", "size", APX_UNIT_BYTES },
	{ "rate_bytes_per_s", "bandwidth", APX_UNIT_BYTES_PER_S },
	{ "direction", "dir", APX_UNIT_TEXT },
	{ "host_memory", "host memory", APX_UNIT_TEXT },
};

void apx_rdoc_build_transfers(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_TRANSFERS, "transfers", "Transfers");
	struct apx_rtable *s;
	double peak = m->ndevices ? apx_link_peak_bps(m, m->devices[0].id) : 0;
	size_t step;

	APX_RTABLE_SET_COLS(t, transfers_cols);
	for (unsigned dir = 0; dir < APX_COPY__COUNT; dir++)
		for (unsigned k = 0; k < APX_MEM__COUNT; k++)
			if (m->xfer[dir][k].count && apx_rtable_row(t) == 0)
				apx_rdoc_xfer_cells(d, t, dir, k);
	if (!m->copies.n) {
		apx_rdoc_note(d, APX_SEC_TRANSFERS, "no copies");
		return;
	}
	if (peak > 0)
		apx_rdoc_note(d, APX_SEC_TRANSFERS, "host link peak: %.1f GB/s per direction", peak / 1e9);
	/* each copy: size against bandwidth (the plot shows whether small copies are slow) */
	s = apx_rdoc_table(d, APX_SEC_TRANSFERS, "copy_sizes", "Transfer size vs bandwidth");
	APX_RTABLE_SET_COLS(s, copy_sizes_cols);
	if (!s)
		return;
	s->plot = APX_PLOT_SCATTER;
	s->plot_x = 0;
	s->plot_y = 1;
	s->plot_only = 1;
	step = m->copies.n > SCATTER_MAX ? (m->copies.n + SCATTER_MAX - 1) / SCATTER_MAX : 1;
	for (size_t i = 0; i < m->copies.n; i += step) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (!c->dur || !c->bytes || apx_rtable_row(s) < 0)
			continue;
		apx_rtable_u64(s, 0, c->bytes);
		apx_rtable_num(s, 1, (double)c->bytes / (double)c->dur * 1e9);
		apx_rtable_str(d, s, 2, apx_copy_kind_name(c->kind));
		apx_rtable_str(d, s, 3, apx_mem_kind_name(c->kind == APX_COPY_D2H ? c->dst : c->src));
	}
	if (step > 1)
		s->note = apx_rdoc_strdup(d, "every copy is not drawn: an even sample of them", 47);
}

static const struct apx_rcol sync_kinds_cols[] = {
	{ "kind", "kind", APX_UNIT_TEXT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "host_blocked_ns", "host blocked", APX_UNIT_NS },
	{ "mean_ns", "mean", APX_UNIT_NS },
};

void apx_rdoc_build_sync(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_SYNC, "kinds", "Synchronization");

	APX_RTABLE_SET_COLS(t, sync_kinds_cols);
	if (!m->syncs.n && !m->sync_implicit_count) {
		apx_rdoc_note(d, APX_SEC_SYNC, "no synchronization records");
		return;
	}
	apx_rdoc_sync_rows(d, t);
	apx_rdoc_note(d, APX_SEC_SYNC, "host blocked in synchronization: %.3f ms (%.1f%% of the run)",
		      (double)m->sync_total_ns / 1e6,
		      pct((double)m->sync_total_ns, (double)m->collected_ns));
}

static const struct apx_rcol idle_devices_cols[] = {
	{ "device", "device", APX_UNIT_ID },
	{ "span_ns", "active span", APX_UNIT_NS },
	{ "busy_ns", "busy", APX_UNIT_NS },
	{ "busy_pct", "busy %", APX_UNIT_PCT },
	{ "idle_ns", "idle", APX_UNIT_NS },
	{ "idle_pct", "idle %", APX_UNIT_PCT },
	{ "gaps", "gaps", APX_UNIT_COUNT },
	{ "before_first_ns", "before first activity", APX_UNIT_NS },
	{ "after_last_ns", "after last activity", APX_UNIT_NS },
};

void apx_rdoc_build_idle(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_IDLE, "devices", "Busy and idle");
	struct apx_rtable *c = apx_rdoc_table(d, APX_SEC_IDLE, "idle_by_cause", "Idle time by cause");
	/* the JSON's cause keys (apx_idle_cause_key) with their unit */
	static const char *const keys[APX_IDLE__COUNT] = {
		[APX_IDLE_UVM] = "uvm_ns", [APX_IDLE_GRAPH] = "graph_ns", [APX_IDLE_SYNC] = "sync_ns",
		[APX_IDLE_ALLOC] = "alloc_ns",
		[APX_IDLE_STAGING] = "staging_ns", [APX_IDLE_COPY_CALLS] = "copy_calls_ns",
		[APX_IDLE_DATA] = "data_ns", [APX_IDLE_LAUNCH] = "launch_ns",
		[APX_IDLE_COLLECTOR] = "collector_ns", [APX_IDLE_UNKNOWN] = "unknown_ns",
	};

	APX_RTABLE_SET_COLS(t, idle_devices_cols);
	apx_rtable_col(c, "device", "device", APX_UNIT_ID);
	for (unsigned k = 0; k < APX_IDLE__COUNT; k++)
		apx_rtable_col(c, keys[k], apx_idle_cause_name(k), APX_UNIT_NS);
	if (c) {
		c->plot = APX_PLOT_STACKED;
		c->plot_x = 0;
		c->plot_y = 1;
	}
	if (!m->timelines.n) {
		apx_rdoc_note(d, APX_SEC_IDLE, "no GPU activity");
		return;
	}
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);
		double span = (double)tl->active_ns;	/* collected time of first..last */

		if (apx_rtable_row(t) == 0) {
			apx_rtable_u64(t, 0, tl->device);
			apx_rtable_num(t, 1, span);
			apx_rtable_u64(t, 2, tl->busy_ns);
			apx_rtable_num(t, 3, pct((double)tl->busy_ns, span));
			apx_rtable_u64(t, 4, tl->idle_ns);
			apx_rtable_num(t, 5, pct((double)tl->idle_ns, span));
			apx_rtable_u64(t, 6, tl->gaps);
			apx_rtable_u64(t, 7, tl->before_ns);
			apx_rtable_u64(t, 8, tl->after_ns);
		}
		if (apx_rtable_row(c) == 0) {
			apx_rtable_u64(c, 0, tl->device);
			for (unsigned k = 0; k < APX_IDLE__COUNT; k++)
				apx_rtable_u64(c, k + 1, tl->idle_by_cause[k]);
		}
	}
}

static const struct apx_rcol memory_cols[] = {
	{ "device_peak_bytes", "device peak", APX_UNIT_BYTES },
	{ "device_total_bytes", "device memory", APX_UNIT_BYTES },
	{ "device_peak_pct", "peak %", APX_UNIT_PCT },
	{ "device_allocations", "allocations", APX_UNIT_COUNT },
	{ "device_end_bytes", "at the end", APX_UNIT_BYTES },
	{ "pinned_peak_bytes", "pinned peak", APX_UNIT_BYTES },
	{ "pinned_allocations", "pinned allocations", APX_UNIT_COUNT },
};

void apx_rdoc_build_memory(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_MEMORY, "memory", "Memory");
	uint64_t total = 0;

	for (size_t i = 0; i < m->ndevices; i++)
		total += m->devices[i].mem_bytes;
	APX_RTABLE_SET_COLS(t, memory_cols);
	if (!m->mem_events.n) {
		apx_rdoc_note(d, APX_SEC_MEMORY, "no allocation records");
		return;
	}
	if (apx_rtable_row(t) < 0)
		return;
	apx_rtable_u64(t, 0, m->device_mem_peak);
	if (total) {
		apx_rtable_u64(t, 1, total);
		apx_rtable_num(t, 2, pct((double)m->device_mem_peak, (double)total));
	}
	apx_rtable_u64(t, 3, m->device_allocs);
	apx_rtable_u64(t, 4, m->device_mem_now);
	apx_rtable_u64(t, 5, m->pinned_peak);
	apx_rtable_u64(t, 6, m->pinned_allocs);
}

static const struct apx_rcol streams_cols[] = {
	{ "device", "device", APX_UNIT_ID },
	{ "stream", "stream", APX_UNIT_ID },
	{ "kernels", "kernels", APX_UNIT_COUNT },
	{ "copies", "copies", APX_UNIT_COUNT },
	{ "busy_ns", "busy", APX_UNIT_NS },
};
static const struct apx_rcol overlap_cols[] = {
	{ "device", "device", APX_UNIT_ID },
	{ "concurrent_kernels_ns", "2+ kernels in flight", APX_UNIT_NS },
	{ "concurrent_pct", "of kernel time", APX_UNIT_PCT },
	{ "copy_compute_overlap_ns", "copies under kernels", APX_UNIT_NS },
	{ "overlap_pct", "of copy time", APX_UNIT_PCT },
};

void apx_rdoc_build_streams(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_STREAMS, "streams", "Streams");
	struct apx_rtable *o = apx_rdoc_table(d, APX_SEC_STREAMS, "overlap", "Overlap");

	APX_RTABLE_SET_COLS(t, streams_cols);
	APX_RTABLE_SET_COLS(o, overlap_cols);
	if (!m->streams.n)
		apx_rdoc_note(d, APX_SEC_STREAMS, "no streams");
	for (size_t i = 0; i < m->streams.n && i < d->top && apx_rtable_row(t) == 0; i++)
		apx_rdoc_stream_cells(t, APX_VEC_AT(&m->streams, struct apx_an_stream, i));
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);

		if (apx_rtable_row(o) < 0)
			break;
		apx_rtable_u64(o, 0, tl->device);
		apx_rtable_u64(o, 1, tl->concurrent_ns);
		apx_rtable_num(o, 2, pct((double)tl->concurrent_ns, (double)tl->kernel_busy_ns));
		apx_rtable_u64(o, 3, tl->overlap_ns);
		apx_rtable_num(o, 4, pct((double)tl->overlap_ns, (double)tl->copy_busy_ns));
	}
}

static const struct apx_rcol ranges_cols[] = {
	{ "name", "range", APX_UNIT_TEXT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "wall_ns", "wall", APX_UNIT_NS },
	{ "gpu_ns", "GPU", APX_UNIT_NS },
	{ "gpu_pct", "GPU%", APX_UNIT_PCT },
};

void apx_rdoc_build_nvtx(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_NVTX, "ranges", "NVTX ranges");

	APX_RTABLE_SET_COLS(t, ranges_cols);
	if (!m->ranges.n)
		apx_rdoc_note(d, APX_SEC_NVTX, "no NVTX ranges (torch.cuda.nvtx.range_push/pop, emit_nvtx)");
	for (size_t i = 0; i < m->ranges.n && i < d->top && apx_rtable_row(t) == 0; i++)
		apx_rdoc_range_cells(d, t, APX_VEC_AT(&m->ranges, struct apx_an_range, i));
}

static const char *l2_kind(unsigned k)
{
	static const char *const kinds[] = { "kernels_under_window", "persisting_limit",
					     "persisting_reset", "window_stream",
					     "window_graph_node", "window_launch" };

	return k < 6 ? kinds[k] : "other";
}

static const char *prop_word(unsigned p)
{
	return p == APX_ACCESS_PERSISTING ? "persisting" : p == APX_ACCESS_STREAMING ? "streaming"
										      : "normal";
}

static const struct apx_rcol l2_settings_cols[] = {
	{ "kind", "kind", APX_UNIT_TEXT },
	{ "device", "device", APX_UNIT_ID },
	{ "stream", "stream", APX_UNIT_ID },
	{ "value", "value", APX_UNIT_COUNT },
	{ "base", "base", APX_UNIT_TEXT },
	{ "bytes", "bytes", APX_UNIT_BYTES },
	{ "hit_ratio", "hit ratio", APX_UNIT_RATIO },
	{ "hit_prop", "hits", APX_UNIT_TEXT },
	{ "miss_prop", "misses", APX_UNIT_TEXT },
};

void apx_rdoc_build_l2(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_L2, "settings", "L2 settings");
	char b[32];

	APX_RTABLE_SET_COLS(t, l2_settings_cols);
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].known)
			apx_rdoc_note(d, APX_SEC_L2, "device %u: L2 %.1f MB, up to %.1f MB can be set "
				      "aside for persisting accesses", m->devices[i].id,
				      (double)m->devices[i].l2_bytes / 1e6,
				      (double)m->devices[i].persist_l2_max / 1e6);
	for (size_t i = 0; i < m->configs.n; i++) {
		const struct apx_an_config *c = APX_VEC_AT(&m->configs, struct apx_an_config, i);

		if (apx_rtable_row(t) < 0)
			break;
		apx_rtable_str(d, t, 0, l2_kind(c->kind));
		apx_rtable_u64(t, 1, c->device);
		apx_rtable_u64(t, 2, c->stream);
		apx_rtable_u64(t, 3, c->value);
		snprintf(b, sizeof(b), "0x%" PRIx64, c->base);
		apx_rtable_str(d, t, 4, b);
		apx_rtable_u64(t, 5, c->bytes);
		apx_rtable_num(t, 6, c->hit_ppm / 1e6);
		apx_rtable_str(d, t, 7, prop_word(c->hit_prop));
		apx_rtable_str(d, t, 8, prop_word(c->miss_prop));
	}
	if (!m->configs.n)
		apx_rdoc_note(d, APX_SEC_L2, "not used: no persisting set-aside and no access-policy "
			      "window was set");
}

static const struct apx_rcol uvm_events_cols[] = {
	{ "kind", "kind", APX_UNIT_TEXT },
	{ "count", "count", APX_UNIT_COUNT },
	{ "bytes", "bytes", APX_UNIT_BYTES },
};

void apx_rdoc_build_uvm(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_UVM, "events", "Unified-memory events");

	APX_RTABLE_SET_COLS(t, uvm_events_cols);
	if (!m->uvm.n) {
		apx_rdoc_note(d, APX_SEC_UVM, "no unified-memory events");
		return;
	}
	apx_rdoc_uvm_rows(d, t);
}

static const struct apx_rcol cpu_cols[] = {
	{ "pid", "pid", APX_UNIT_ID },
	{ "wall_ns", "wall", APX_UNIT_NS },
	{ "user_ns", "user", APX_UNIT_NS },
	{ "system_ns", "system", APX_UNIT_NS },
	{ "cpu_pct", "cpu%", APX_UNIT_PCT },
	{ "voluntary_switches", "vol.csw", APX_UNIT_COUNT },
	{ "involuntary_switches", "invol.csw", APX_UNIT_COUNT },
	{ "threads_max", "threads", APX_UNIT_COUNT },
	{ "peak_rss_bytes", "peak RSS", APX_UNIT_BYTES },
};

void apx_rdoc_build_cpu(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_CPU, "processes", "CPU");

	APX_RTABLE_SET_COLS(t, cpu_cols);
	/* a row a process; without CPU samples only its pid (the other cells n/a) */
	for (size_t i = 0; i < m->nfiles && apx_rtable_row(t) == 0; i++)
		apx_rdoc_cpu_cells(t, &m->files[i]);
}
