/*
 * timeline.c - builds the per-device timelines (see timeline.h) in one sweep over the device's
 * activity sorted by start: the event store's kernel, copy and memset columns (each already in
 * time order; a device is the store's (host, UUID), so two hosts' GPU 0 are two timelines),
 * merged three ways. Union trackers give busy time, kernel-only and copy-only busy time (and
 * host<->device copies apart), and the time with two or more kernels in flight; every hole in
 * the union between the first and the last activity is an idle gap, handed with what ends and
 * begins it to idle_attrib.c, which gives each of its ns one cause (or counts it as start-up or
 * teardown, outside the steady window). Only collected time counts (capture ranges,
 * capture.c): a gap is cut at the ranges' edges, and the spans are their collected parts.
 * Called by apx_model_finish(); memory: the attribution's host-side interval arrays.
 */
#include "analysis/timeline.h"

#include "analysis/idle_attrib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/views.h"

#include "base/banned.h"

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

struct sweep {
	struct apx_model *m;
	struct apx_an_timeline *t;
	const struct apx_idle_ctx *ic;
	const struct apx_spans *uvm_gpu;	/* GPU-side unified-memory activity */
	struct uni all, kc, k, c, conc, hc, khc;	/* hc, khc: host<->device copies only */
	uint64_t kmax_end;
	int fed;				/* an interval was fed (first_ns is set: it may be 0) */
	int last_small;				/* the activity ending the union is a small copy */
	int last_pageable_h2d;			/* ... a host->device copy >= 64 KiB from pageable
						 * memory */
	int last_pageable_d2h;			/* ... a device->host copy > 64 KiB to pageable memory */
	uint32_t last_corr;			/* ... its correlation id */
};

/* The idle gap [a, b], to the attribution, each collected part of it apart (the time outside
 * the capture ranges was not looked at: no idle); long ones are kept one by one. */
static int on_gap(struct sweep *w, uint64_t a, uint64_t b, const struct apx_gap_edges *ed)
{
	uint64_t s, e;
	int r = 0;

	for (s = a; r == 0 && apx_an_collected_piece(w->m, s, b, &s, &e); s = e) {
		struct apx_an_gap g = { s, e, w->t->device, APX_IDLE_UNKNOWN, 0 };

		g.cause = (uint8_t)apx_idle_gap(w->ic, w->t, s, e, ed);
		g.steady = s < w->m->steady_end_ns && e > w->m->steady_start_ns;
		w->t->gaps++;
		if (e - s >= APX_LONG_GAP_NS && w->m->gaps.n < APX_LONG_GAPS_MAX)
			r = apx_vec_push(&w->m->gaps, &g);
	}
	return r;
}

/* Feed one interval of the device (in start order) to every tracker. copy: 1 a copy between
 * device memories (D2D, P2P...), 2 a copy between host and device (H2D, D2H); h2d: 1 a
 * host->device copy, 2 one of >= 64 KiB from pageable memory, -1 a device->host copy of more
 * than 64 KiB to pageable memory; small: a small host<->device copy. */
static int feed(struct sweep *w, uint64_t s, uint64_t e, int kernel, int copy, int h2d, int small,
		uint32_t corr)
{
	int r = 0;

	if (e < s)
		e = s;
	if (w->all.open && s > w->all.e) {
		struct apx_gap_edges ed = { w->last_small, h2d > 0, small, w->last_pageable_h2d,
					    w->last_pageable_d2h, w->last_corr, corr };

		r = on_gap(w, w->all.e, s, &ed);
	}
	if (!w->all.open || e > w->all.e || s > w->all.e) {
		w->last_small = small;
		w->last_pageable_h2d = h2d == 2;
		w->last_pageable_d2h = h2d == -1;
		w->last_corr = corr;
	}
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
		if (apx_phase_of(w->m, s) == APX_PHASE_STEADY &&	/* ran while pages migrated */
		    apx_spans_meet(w->uvm_gpu, s, e > s ? e : s + 1))
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
	if (!w->fed || s < w->t->first_ns)
		w->t->first_ns = s;
	w->fed = 1;
	if (e > w->t->last_ns)
		w->t->last_ns = e;
	return r;
}

/* One device: a three-way merge of the kernels, copies and memsets (each sorted by start). */
static int build_device(struct apx_model *m, uint32_t dev, const struct apx_idle_ctx *ic,
			const struct apx_spans *uvm_gpu)
{
	const struct apx_store *st = m->store;
	const struct apx_es_kernels *k = &st->k;
	const struct apx_es_copies *cp = &st->c;
	const struct apx_es_memsets *ms = &st->s;
	struct apx_an_timeline t = { .device = apx_view_ordinal(st->devices[dev].ordinal),
				      .es_device = dev };
	struct sweep w = { .m = m, .t = &t, .ic = ic, .uvm_gpu = uvm_gpu };
	uint64_t ws, we;
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
				r = feed(&w, ks, apx_view_kernel_end(st, ki), 1, 0, 0, 0, k->corr[ki]);
			ki++;
		} else if (cs <= ss) {
			int hd = cp->kind[ci] == APX_COPY_H2D || cp->kind[ci] == APX_COPY_D2H;
			int h2d = cp->kind[ci] == APX_COPY_H2D;

			if (h2d && cp->src[ci] == APX_MEM_PAGEABLE && !apx_copy_small(cp->bytes[ci]))
				h2d = 2;
			else if (cp->kind[ci] == APX_COPY_D2H && cp->dst[ci] == APX_MEM_PAGEABLE &&
				 !apx_copy_small(cp->bytes[ci]))
				h2d = -1;
			if (st->streams[cp->stream[ci]].device == dev)
				r = feed(&w, cs, cs + apx_view_dur(cs, cp->end[ci]), 0, hd ? 2 : 1, h2d,
					 hd && apx_copy_small(cp->bytes[ci]), cp->corr[ci]);
			ci++;
		} else {
			if (st->streams[ms->stream[si]].device == dev)
				r = feed(&w, ss, ss + apx_view_dur(ss, ms->end[si]), 0, 0, 0, 0,
					 ms->corr[si]);
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
	/* spans count their collected time only (all of it without capture ranges); activity
	 * that ran on past a range's stop is busy all the same: idle saturates at 0 */
	t.active_ns = apx_an_collected_overlap(m, t.first_ns, t.last_ns);
	t.idle_ns = t.active_ns > t.busy_ns ? t.active_ns - t.busy_ns : 0;
	t.before_ns = apx_an_collected_overlap(m, m->run_start_ns, t.first_ns);
	t.after_ns = apx_an_collected_overlap(m, t.last_ns, m->run_end_ns);
	ws = m->steady_start_ns > t.first_ns ? m->steady_start_ns : t.first_ns;
	we = m->steady_end_ns < t.last_ns ? m->steady_end_ns : t.last_ns;
	if (ws > t.last_ns)
		ws = t.last_ns;
	if (we < ws)
		we = ws;
	t.window_ns = apx_an_collected_overlap(m, ws, we);
	t.startup_ns = apx_an_collected_overlap(m, t.first_ns, ws);
	t.teardown_ns = apx_an_collected_overlap(m, we, t.last_ns);
	return apx_vec_push(&m->timelines, &t);
}

/* Copies of a kind that recurs at least this often are work of the run, not a one-off. */
#define RECURRING_COPIES 3

/* Warm-up lasts until the last kernel whose name had not run before starts. With no steps
 * found, also until the first copy of each kind (H2D, D2H, D2D, P2P...) that recurs: a
 * program whose repeated work is copies pays its first-call cost there (a second GPU's
 * context and peer access before the first P2P copy), and the gap before it is start-up, not
 * steady-state idle. (With steps the steps say where the work repeats; a copy kind first seen
 * late, e.g. one .item() every 50 steps, must not push the steady window back.) */
static int find_warmup_end(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint8_t *seen = calloc(st->nstrings + 1, 1);
	uint64_t first[APX_COPY__COUNT] = { 0 }, count[APX_COPY__COUNT] = { 0 };

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < st->k.n; i++) {
		if (!seen[st->k.name[i]]) {
			seen[st->k.name[i]] = 1;
			m->warmup_end_ns = st->k.start[i];
		}
	}
	free(seen);
	if (m->steady.source != APX_STEPS_NONE)
		return 0;
	for (size_t i = 0; i < st->c.n; i++) {	/* in time order */
		unsigned kind = st->c.kind[i] < APX_COPY__COUNT ? st->c.kind[i] : APX_COPY_UNKNOWN;

		if (!count[kind]++)
			first[kind] = st->c.start[i];
	}
	for (unsigned kind = 0; kind < APX_COPY__COUNT; kind++)
		if (count[kind] >= RECURRING_COPIES && first[kind] > m->warmup_end_ns)
			m->warmup_end_ns = first[kind];
	return 0;
}

static int cmp_uvm(const void *a, const void *b)
{
	const struct apx_an_uvm *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The union of the unified-memory events on the GPU side (host-to-device migrations, GPU
 * faults: kernels wait); the host side is idle_attrib.c's. */
static int uvm_spans(const struct apx_model *m, struct apx_spans *sp)
{
	sp->n = 0;
	sp->s = malloc((m->uvm.n + 1) * sizeof(*sp->s));
	sp->e = malloc((m->uvm.n + 1) * sizeof(*sp->e));
	if (!sp->s || !sp->e)
		return -ENOMEM;
	for (size_t i = 0; i < m->uvm.n; i++) {
		const struct apx_an_uvm *u = APX_VEC_AT(&m->uvm, struct apx_an_uvm, i);
		uint64_t end = u->end > u->start ? u->end : u->start + 1;

		if (u->kind != APX_UVM_MIGRATE_H2D && u->kind != APX_UVM_GPU_FAULT)
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
	struct apx_spans ug = { 0 };
	struct apx_idle_ctx ic = { 0 };
	uint32_t devs[APX_AN_MAX_DEVICES];
	size_t ndev = 0;
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
	apx_idle_window(m);
	for (size_t i = 0; i < m->copies.n && !m->copy_host_times; i++)	/* in time order */
		m->copy_host_times = APX_VEC_AT(&m->copies, struct apx_an_copy, i)->api_enter != 0;
	if (m->uvm.n > 1)
		qsort(m->uvm.data, m->uvm.n, sizeof(struct apx_an_uvm), cmp_uvm);
	r = uvm_spans(m, &ug);
	if (r == 0)
		r = apx_idle_ctx_init(&ic, m);
	if (r == 0 && m->steady.count && m->steady.bounds) {
		m->unknown_per_step = calloc(m->steady.count, sizeof(*m->unknown_per_step));
		m->step_host_per_step = calloc(m->steady.count, sizeof(*m->step_host_per_step));
		if (!m->unknown_per_step || !m->step_host_per_step)
			r = -ENOMEM;
		ic.unknown_per_step = m->unknown_per_step;
		ic.step_host_per_step = m->step_host_per_step;
	}
	for (size_t d = 0; d < ndev && r == 0; d++)
		r = build_device(m, devs[d], &ic, &ug);
	apx_idle_ctx_release(&ic);
	free(ug.s);
	free(ug.e);
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
		g->window_ns += t->window_ns;
		g->startup_ns += t->startup_ns;
		g->startup_idle_ns += t->startup_idle_ns;
		g->teardown_ns += t->teardown_ns;
		g->teardown_idle_ns += t->teardown_idle_ns;
		g->uvm_kernel_ns += t->uvm_kernel_ns;
		g->staging_d2h_ns += t->staging_d2h_ns;
		g->step_host_ns += t->step_host_ns;
		g->step_host_gaps += t->step_host_gaps;
		g->refill |= t->refill;
		g->gaps += t->gaps;
		for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
			g->idle_by_cause[c] += t->idle_by_cause[c];
			g->gaps_by_cause[c] += t->gaps_by_cause[c];
		}
		for (unsigned c = 0; c <= APX_IDLE__COUNT; c++) {
			g->refill_ns[c] += t->refill_ns[c];
			g->refill_gaps[c] += t->refill_gaps[c];
			g->pend_ns[c] += t->pend_ns[c];
			g->pend_gaps[c] += t->pend_gaps[c];
			g->cut_ns[c] += t->cut_ns[c];
			g->cut_gaps[c] += t->cut_gaps[c];
		}
		g->active_ns += t->active_ns;
		m->gpu_active_ns += t->active_ns;
		m->steady_ns += apx_an_collected_overlap(m, t->first_ns > m->warmup_end_ns ? t->first_ns
							    : m->warmup_end_ns < t->last_ns
							    ? m->warmup_end_ns : t->last_ns,
							 t->last_ns);
	}
	if (r == 0)
		apx_idle_resolve(m);
	return r;
}
