/*
 * timeline.c - builds the per-device timelines (see timeline.h) in one sweep over the device's
 * activity sorted by start: the event store's kernel, copy and memset columns (each already in
 * time order; a device is the store's (host, UUID), so two hosts' GPU 0 are two timelines),
 * merged three ways. Union trackers give busy time, kernel-only and copy-only busy time, and the
 * time with two or more kernels in flight; every hole in the union between the first and the
 * last activity is an idle gap, attributed to a cause:
 *   warmup  the gap ends before the last kernel never seen before started (library set-up,
 *           lazy module loading, first-call compilation and autotuning);
 *   data    the activity that ends the gap is a host-to-device copy (the GPU waited for input);
 *   sync    a host synchronization returned inside the gap (the host waited for the GPU, then
 *           did its work while the GPU idled);
 *   launch  the gap is shorter than APX_LAUNCH_GAP_NS (the host could not keep up launching);
 *   unknown anything else (the host was busy elsewhere: Python, data loading, I/O).
 * Called by apx_model_finish(); memory: one array of the synchronizations' end times.
 */
#include "analysis/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/views.h"

#include "base/banned.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Running union of intervals arriving by increasing start. */
struct uni {
	uint64_t s, e, total;
	int open;
};

static void uni_add(struct uni *u, uint64_t s, uint64_t e)
{
	if (u->open && s <= u->e) {
		if (e > u->e)
			u->e = e;
		return;
	}
	if (u->open)
		u->total += u->e - u->s;
	u->s = s;
	u->e = e;
	u->open = 1;
}

static uint64_t uni_total(const struct uni *u)
{
	return u->total + (u->open ? u->e - u->s : 0);
}

/* Disjoint intervals, sorted: the union of some unified-memory events. */
struct spans {
	uint64_t *s, *e;
	size_t n;
};

struct sweep {
	struct apx_model *m;
	struct apx_an_timeline *t;
	const uint64_t *sync_ends;
	size_t nsync;
	const struct spans *uvm_gpu, *uvm_host;	/* GPU-side / host-side unified-memory activity */
	struct uni all, kc, k, c, conc, hc, khc;	/* hc, khc: host<->device copies only */
	uint64_t kmax_end;
};

/* Whether [a, b) meets one of the spans. */
static int spans_meet(const struct spans *sp, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = sp->n;

	while (lo < hi) {	/* first span ending after a */
		size_t mid = lo + (hi - lo) / 2;

		if (sp->e[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sp->n && sp->s[lo] < b;
}

/* The last synchronization end in [a, b], or 0 when none. */
static uint64_t last_sync_end_in(const struct sweep *w, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = w->nsync;

	while (lo < hi) {	/* first end > b */
		size_t mid = lo + (hi - lo) / 2;

		if (w->sync_ends[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && w->sync_ends[lo - 1] >= a ? w->sync_ends[lo - 1] : 0;
}

/* Attribute the idle gap [a, b]. next_h2d: the activity ending it is a host-to-device copy
 * (2: from pageable memory, whose staging on the host is what the GPU waited for). A gap in
 * which a host synchronization returned is the synchronization's: without it, the host work
 * done in the gap would have overlapped the GPU work before it. */
static int on_gap(struct sweep *w, uint64_t a, uint64_t b, int next_h2d)
{
	struct apx_an_gap g = { a, b, w->t->device, APX_GAP_UNKNOWN };
	uint64_t part[APX_GAP__COUNT] = { 0 };
	unsigned rest = b - a < APX_LAUNCH_GAP_NS ? APX_GAP_LAUNCH : APX_GAP_UNKNOWN;

	if (b <= w->m->warmup_end_ns) {
		part[APX_GAP_WARMUP] = b - a;
	} else if (next_h2d) {
		part[APX_GAP_DATA] = b - a;
		if (next_h2d == 2)
			w->t->idle_before_pageable_ns += b - a;
	} else if (last_sync_end_in(w, a, b)) {
		part[APX_GAP_SYNC] = b - a;
	} else {
		part[rest] = b - a;
	}
	for (unsigned c = 0; c < APX_GAP__COUNT; c++) {
		w->t->idle_by_cause[c] += part[c];
		if (part[c] > part[g.cause])
			g.cause = (uint8_t)c;
	}
	w->t->gaps_by_cause[g.cause]++;
	w->t->gaps++;
	if (spans_meet(w->uvm_host, a, b))	/* the host was faulting pages back meanwhile */
		w->t->uvm_idle_ns += b - a;
	if (b - a >= APX_LONG_GAP_NS && w->m->gaps.n < APX_LONG_GAPS_MAX)
		return apx_vec_push(&w->m->gaps, &g);
	return 0;
}

/* Feed one interval of the device (in start order) to every tracker. copy: 1 a copy between
 * device memories (D2D, P2P...), 2 a copy between host and device (H2D, D2H). */
static int feed(struct sweep *w, uint64_t s, uint64_t e, int kernel, int copy, int h2d)
{
	int r = 0;

	if (e < s)
		e = s;
	if (w->all.open && s > w->all.e)
		r = on_gap(w, w->all.e, s, h2d);
	uni_add(&w->all, s, e);
	if (kernel) {
		if (!w->k.open) {	/* the first kernel: copy time before it had nothing to hide
					 * behind (copies arrive by start: only the open one can reach
					 * past s) */
			w->t->copy_before_kernels_ns = uni_total(&w->c) -
				(w->c.open && w->c.e > s ? w->c.e - s : 0);
			w->t->hd_before_kernels_ns = uni_total(&w->hc) -
				(w->hc.open && w->hc.e > s ? w->hc.e - s : 0);
		}
		if (spans_meet(w->uvm_gpu, s, e > s ? e : s + 1))	/* ran while pages migrated */
			w->t->uvm_kernel_ns += e - s;
		if (s < w->kmax_end)
			uni_add(&w->conc, s, e < w->kmax_end ? e : w->kmax_end);
		if (e > w->kmax_end)
			w->kmax_end = e;
		uni_add(&w->k, s, e);
		uni_add(&w->kc, s, e);
		uni_add(&w->khc, s, e);
	}
	if (copy) {
		uni_add(&w->c, s, e);
		uni_add(&w->kc, s, e);
	}
	if (copy == 2) {
		uni_add(&w->hc, s, e);
		uni_add(&w->khc, s, e);
	}
	if (w->t->first_ns == 0 || s < w->t->first_ns)
		w->t->first_ns = s;
	if (e > w->t->last_ns)
		w->t->last_ns = e;
	return r;
}

/* One device: a three-way merge of the kernels, copies and memsets (each sorted by start). */
static int build_device(struct apx_model *m, uint32_t dev, const uint64_t *sync_ends, size_t nsync,
			const struct spans *uvm_gpu, const struct spans *uvm_host)
{
	const struct apx_store *st = m->store;
	const struct apx_es_kernels *k = &st->k;
	const struct apx_es_copies *cp = &st->c;
	const struct apx_es_memsets *ms = &st->s;
	struct apx_an_timeline t = { .device = apx_view_ordinal(st->devices[dev].ordinal),
				      .es_device = dev };
	struct sweep w = { .m = m, .t = &t, .sync_ends = sync_ends, .nsync = nsync,
			   .uvm_gpu = uvm_gpu, .uvm_host = uvm_host };
	size_t ki = 0, ci = 0, si = 0;
	int r = 0;

	for (;;) {
		uint64_t ks = ki < k->n ? k->start[ki] : UINT64_MAX;
		uint64_t cs = ci < cp->n ? cp->start[ci] : UINT64_MAX;
		uint64_t ss = si < ms->n ? ms->start[si] : UINT64_MAX;

		if (ks == UINT64_MAX && cs == UINT64_MAX && ss == UINT64_MAX)
			break;
		if (ks <= cs && ks <= ss) {
			if (st->streams[k->stream[ki]].device == dev)
				r = feed(&w, ks, apx_view_kernel_end(st, ki), 1, 0, 0);
			ki++;
		} else if (cs <= ss) {
			if (st->streams[cp->stream[ci]].device == dev)
				r = feed(&w, cs, cs + apx_view_dur(cs, cp->end[ci]), 0,
					 cp->kind[ci] == APX_COPY_H2D || cp->kind[ci] == APX_COPY_D2H ? 2 : 1,
					 cp->kind[ci] != APX_COPY_H2D ? 0
					 : cp->src[ci] == APX_MEM_PAGEABLE ? 2 : 1);
			ci++;
		} else {
			if (st->streams[ms->stream[si]].device == dev)
				r = feed(&w, ss, ss + apx_view_dur(ss, ms->end[si]), 0, 0, 0);
			si++;
		}
		if (r < 0)
			return r;
	}
	if (!w.all.open)
		return 0;	/* no activity on this device */
	t.busy_ns = uni_total(&w.all);
	t.kernel_busy_ns = uni_total(&w.k);
	t.copy_busy_ns = uni_total(&w.c);
	t.overlap_ns = t.kernel_busy_ns + t.copy_busy_ns - uni_total(&w.kc);
	t.hd_copy_busy_ns = uni_total(&w.hc);
	t.hd_overlap_ns = t.kernel_busy_ns + t.hd_copy_busy_ns - uni_total(&w.khc);
	t.concurrent_ns = uni_total(&w.conc);
	t.idle_ns = t.last_ns - t.first_ns - t.busy_ns;
	t.before_ns = t.first_ns > m->run_start_ns ? t.first_ns - m->run_start_ns : 0;
	t.after_ns = m->run_end_ns > t.last_ns ? m->run_end_ns - t.last_ns : 0;
	return apx_vec_push(&m->timelines, &t);
}

/* Warm-up lasts until the last kernel whose name had not run before starts. */
static int find_warmup_end(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint8_t *seen = calloc(st->nstrings + 1, 1);

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < st->k.n; i++) {
		if (!seen[st->k.name[i]]) {
			seen[st->k.name[i]] = 1;
			m->warmup_end_ns = st->k.start[i];
		}
	}
	free(seen);
	return 0;
}

static int cmp_uvm(const void *a, const void *b)
{
	const struct apx_an_uvm *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The union of the unified-memory events on one side: GPU (host-to-device migrations, GPU
 * faults: kernels wait) or host (device-to-host migrations, CPU faults: the host waits). */
static int uvm_spans(const struct apx_model *m, int gpu_side, struct spans *sp)
{
	sp->n = 0;
	sp->s = malloc((m->uvm.n + 1) * sizeof(*sp->s));
	sp->e = malloc((m->uvm.n + 1) * sizeof(*sp->e));
	if (!sp->s || !sp->e)
		return -ENOMEM;
	for (size_t i = 0; i < m->uvm.n; i++) {
		const struct apx_an_uvm *u = APX_VEC_AT(&m->uvm, struct apx_an_uvm, i);
		int g = u->kind == APX_UVM_MIGRATE_H2D || u->kind == APX_UVM_GPU_FAULT;
		int h = u->kind == APX_UVM_MIGRATE_D2H || u->kind == APX_UVM_CPU_FAULT;
		uint64_t end = u->end > u->start ? u->end : u->start + 1;

		if (!(gpu_side ? g : h))
			continue;
		if (sp->n && u->start <= sp->e[sp->n - 1]) {
			if (end > sp->e[sp->n - 1])
				sp->e[sp->n - 1] = end;
			continue;
		}
		sp->s[sp->n] = u->start;
		sp->e[sp->n++] = end;
	}
	return 0;
}

int apx_timelines_build(struct apx_model *m)
{
	struct spans ug = { 0 }, uh = { 0 };
	uint32_t devs[APX_AN_MAX_DEVICES];
	size_t ndev = 0;
	uint64_t *ends;
	size_t nsync = 0;
	int r = 0;

	/* the devices with activity (store devices), from the streams table */
	for (size_t i = 0; i < m->streams.n; i++) {
		const struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream, i);
		uint32_t dev = m->store->streams[s->es_stream].device;
		size_t j;

		for (j = 0; j < ndev && devs[j] != dev; j++)
			;
		if (j == ndev && ndev < APX_AN_MAX_DEVICES)
			devs[ndev++] = dev;
	}
	if (find_warmup_end(m) < 0)
		return -ENOMEM;
	ends = malloc((m->syncs.n + 1) * sizeof(*ends));
	if (!ends)
		return -ENOMEM;
	for (size_t i = 0; i < m->syncs.n; i++) {
		const struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);

		if (s->kind != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			ends[nsync++] = s->end;
	}
	qsort(ends, nsync, sizeof(*ends), cmp_u64);
	if (m->uvm.n > 1)
		qsort(m->uvm.data, m->uvm.n, sizeof(struct apx_an_uvm), cmp_uvm);
	r = uvm_spans(m, 1, &ug);
	if (r == 0)
		r = uvm_spans(m, 0, &uh);
	for (size_t d = 0; d < ndev && r == 0; d++)
		r = build_device(m, devs[d], ends, nsync, &ug, &uh);
	free(ends);
	free(ug.s);
	free(ug.e);
	free(uh.s);
	free(uh.e);
	for (size_t i = 0; i < m->timelines.n; i++) {	/* the sum over devices */
		const struct apx_an_timeline *t = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);
		struct apx_an_timeline *g = &m->gpu;

		if (!g->first_ns || t->first_ns < g->first_ns)
			g->first_ns = t->first_ns;
		if (t->last_ns > g->last_ns)
			g->last_ns = t->last_ns;
		g->busy_ns += t->busy_ns;
		g->kernel_busy_ns += t->kernel_busy_ns;
		g->copy_busy_ns += t->copy_busy_ns;
		g->overlap_ns += t->overlap_ns;
		g->copy_before_kernels_ns += t->copy_before_kernels_ns;
		g->hd_copy_busy_ns += t->hd_copy_busy_ns;
		g->hd_overlap_ns += t->hd_overlap_ns;
		g->hd_before_kernels_ns += t->hd_before_kernels_ns;
		g->concurrent_ns += t->concurrent_ns;
		g->idle_ns += t->idle_ns;
		g->idle_before_pageable_ns += t->idle_before_pageable_ns;
		g->uvm_kernel_ns += t->uvm_kernel_ns;
		g->uvm_idle_ns += t->uvm_idle_ns;
		g->gaps += t->gaps;
		for (unsigned c = 0; c < APX_GAP__COUNT; c++) {
			g->idle_by_cause[c] += t->idle_by_cause[c];
			g->gaps_by_cause[c] += t->gaps_by_cause[c];
		}
		m->gpu_active_ns += t->last_ns - t->first_ns;
		m->steady_ns += t->last_ns - (t->first_ns > m->warmup_end_ns ? t->first_ns : m->warmup_end_ns < t->last_ns ? m->warmup_end_ns : t->last_ns);
	}
	return r;
}

const char *apx_gap_cause_name(unsigned cause)
{
	static const char *const names[] = {
		[APX_GAP_WARMUP] = "warm-up (first calls)",
		[APX_GAP_LAUNCH] = "launch-bound", [APX_GAP_SYNC] = "host blocked in sync",
		[APX_GAP_DATA] = "waiting for input data", [APX_GAP_UNKNOWN] = "host busy (unknown)",
	};
	return cause < APX_GAP__COUNT ? names[cause] : "?";
}
