/*
 * xform.c - the what-if transformations (whatif.h), one per fix a rule advises, each on a copy
 * of the graph's tasks: the collector's own cost per launch taken off first (unless the caller
 * keeps it), then
 *   remove-syncs   host syncs gone, with the small blocking reads back (.item(): a copy to
 *                  the host of <= 64 KiB) they come with; the host runs ahead, bound by the
 *                  launch queue's depth (sim.c);
 *   pin-copies     host->device copies of > 64 KiB from pageable memory at the pinned rate the
 *                  caller gives (the trace's pinned copies, else the link), non-blocking: the
 *                  call costs what the trace's asynchronous copy calls cost;
 *   copy-stream    host<->device copies of streams that run kernels moved to a side stream per
 *                  device and direction, non-blocking: a host->device copy is issued when the
 *                  previous one was (one copy ahead, a prefetch) and the first operation after
 *                  it on its old stream waits for it; a device->host copy waits for the
 *                  operation before it on its old stream (its producer);
 *   cuda-graph     a launch right after another launch costs the host nothing (one graph
 *                  launch), unless the host's work before it was a stall between steps (1 ms
 *                  or more, idle_attrib.h); its gap after the previous operation of its stream
 *                  at most the GPU's gap between two kernels of a graph replay (the
 *                  trace's, or APX_WI_GRAPH_GAP_NS);
 *   async-copies   blocking copies and memsets (but pageable host->device copies, which are
 *                  pin-copies', and the small reads back) non-blocking; copies into pageable
 *                  memory at the pinned rate the caller gives;
 *   kernel-speedup matching kernels factor times faster;
 *   no-alloc       allocator calls gone (a synchronizing free no longer waits for the GPU).
 * Called by saving.c.
 */
#include "analysis/whatif/whatif.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <apx/format.h>

#include "analysis/idle_attrib.h"

#include "base/banned.h"

static int gpu_op(const struct apx_wi_task *t)
{
	return t->kind == APX_WI_KERNEL || t->kind == APX_WI_COPY || t->kind == APX_WI_MEMSET;
}

static void make_async(struct apx_wi_task *t, uint64_t call_ns)
{
	if (t->flags & APX_WI_F_BLOCKING)
		t->call_ns = call_ns;
	t->flags &= (uint8_t)~APX_WI_F_BLOCKING;
	t->ret_ns = 0;
	t->await = APX_WI_NONE;
}

static void at_rate(struct apx_wi_task *t, double rate_bps)
{
	double ideal;

	if (rate_bps <= 0)
		return;
	ideal = (double)t->bytes / rate_bps * 1e9;
	if (ideal < (double)t->dur_ns)
		t->dur_ns = (uint64_t)ideal;
}

static uint64_t copy_stream(const struct apx_whatif *w, struct apx_wi_task *t, size_t n)
{
	uint64_t changed = 0;

	for (size_t i = 0; i < n; i++) {
		struct apx_wi_task *c = &t[i];
		uint32_t old = c->stream;
		int d2h = c->copy_kind == APX_COPY_D2H;

		if (c->kind != APX_WI_COPY || !(c->flags & APX_WI_F_COMPUTE_STREAM) ||
		    (c->copy_kind != APX_COPY_H2D && !d2h) || (c->flags & APX_WI_F_REMOVED))
			continue;
		c->stream = w->nstreams + c->device * 2u + (d2h ? 1u : 0u);
		make_async(c, w->async_call_ns);
		c->flags |= APX_WI_F_SERIAL;
		c->delay_ns = 0;
		c->min_gap_ns = 0;
		if (!d2h) {
			c->flags |= APX_WI_F_EARLY;
			for (size_t j = i + 1; j < n; j++)	/* its consumer waits for it */
				if (gpu_op(&t[j]) && t[j].stream == old) {
					t[j].dep = (uint32_t)i;
					break;
				}
		} else {
			for (size_t j = i; j-- > 0;)	/* it waits for its producer */
				if (gpu_op(&t[j]) && t[j].stream == old) {
					c->dep = (uint32_t)j;
					break;
				}
		}
		changed++;
	}
	return changed;
}

static uint64_t cuda_graph(struct apx_wi_task *t, size_t n, uint64_t graph_gap_ns)
{
	uint64_t changed = 0;
	size_t prev = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		struct apx_wi_task *k = &t[i];
		int launch = (k->kind == APX_WI_KERNEL || k->kind == APX_WI_MEMSET) &&
			     !(k->flags & APX_WI_F_BLOCKING);

		if (k->flags & APX_WI_F_REMOVED)
			continue;
		if (launch && prev != SIZE_MAX &&
		    (k->pre_ns < APX_STALL_NS || (k->step == t[prev].step && k->step != APX_WI_NONE))) {
			k->pre_ns = 0;
			k->min_gap_ns = k->gap_ns < graph_gap_ns ? k->gap_ns : graph_gap_ns;
			changed++;
		}
		prev = launch ? i : SIZE_MAX;
	}
	return changed;
}

int apx_whatif_transform(const struct apx_model *m, const struct apx_whatif *w,
			 const struct apx_wi_params *p, struct apx_wi_task **ret_t,
			 uint32_t *ret_nstreams, uint64_t *ret_changed)
{
	struct apx_wi_task *t = malloc((w->n + 1) * sizeof(*t));
	uint32_t nstreams = w->nstreams;
	uint64_t changed = 0;
	size_t n = w->n;

	if (!t)
		return -ENOMEM;
	memcpy(t, w->t, n * sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		if (!p->keep_collector && gpu_op(&t[i]))
			t[i].pre_ns -= t[i].pre_ns < w->launch_cost_ns ? t[i].pre_ns : w->launch_cost_ns;
		if (p->no_delays)
			t[i].delay_ns = 0;
	}
	switch (p->xform) {
	case APX_WI_X_REMOVE_SYNCS:
		for (size_t i = 0; i < n; i++)
			if (t[i].kind == APX_WI_SYNC ||
			    (t[i].kind == APX_WI_COPY && t[i].copy_kind == APX_COPY_D2H &&
			     (t[i].flags & APX_WI_F_SMALL) && (t[i].flags & APX_WI_F_BLOCKING))) {
				t[i].flags |= APX_WI_F_REMOVED;
				changed++;
			}
		break;
	case APX_WI_X_PIN_COPIES:
		for (size_t i = 0; i < n; i++)
			if (t[i].kind == APX_WI_COPY && t[i].copy_kind == APX_COPY_H2D &&
			    (t[i].flags & APX_WI_F_PAGEABLE) && !(t[i].flags & APX_WI_F_SMALL)) {
				at_rate(&t[i], p->rate_bps);
				make_async(&t[i], w->async_call_ns);
				t[i].call_ns = t[i].call_ns < w->async_call_ns ? t[i].call_ns
									: w->async_call_ns;
				t[i].flags &= (uint8_t)~APX_WI_F_PAGEABLE;
				changed++;
			}
		break;
	case APX_WI_X_COPY_STREAM:
		nstreams = w->nstreams + 2u * w->ndevices;
		changed = copy_stream(w, t, n);
		break;
	case APX_WI_X_CUDA_GRAPH:
		changed = cuda_graph(t, n, apx_wi_graph_gap_ns(m));
		break;
	case APX_WI_X_ASYNC_COPIES:
		for (size_t i = 0; i < n; i++) {
			struct apx_wi_task *k = &t[i];
			int to_pageable = k->kind == APX_WI_COPY && k->copy_kind == APX_COPY_D2H &&
					  (k->flags & APX_WI_F_PAGEABLE) && !(k->flags & APX_WI_F_SMALL);

			if (!(k->flags & APX_WI_F_BLOCKING) || (k->kind != APX_WI_COPY && k->kind != APX_WI_MEMSET))
				continue;
			if (k->kind == APX_WI_COPY && !to_pageable &&
			    ((k->flags & APX_WI_F_PAGEABLE) || k->copy_kind == APX_COPY_D2D))
				continue;	/* pageable-copy's, small-copies', the compute stream's */
			if (to_pageable)
				at_rate(k, p->rate_bps);
			make_async(k, w->async_call_ns);
			changed++;
		}
		break;
	case APX_WI_X_KERNEL_SPEEDUP:
		for (size_t i = 0; i < n && p->factor > 0; i++)
			if (t[i].kind == APX_WI_KERNEL && (!p->match || p->match(m, t[i].name, p->ctx))) {
				t[i].dur_ns = (uint64_t)((double)t[i].dur_ns / p->factor);
				changed++;
			}
		break;
	case APX_WI_X_NO_ALLOC:
		for (size_t i = 0; i < n; i++)
			if (t[i].kind == APX_WI_ALLOC) {
				t[i].flags |= APX_WI_F_REMOVED;
				changed++;
			}
		break;
	case APX_WI_X_NONE:
	case APX_WI_X__COUNT:
		break;
	}
	*ret_t = t;
	*ret_nstreams = nstreams;
	*ret_changed = changed;
	return 0;
}
