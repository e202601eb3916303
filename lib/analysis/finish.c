/*
 * finish.c - apx_model_finish(): builds the event store (the one pass over the files), then
 * the model's views in order: the capture ranges' union (capture.c), streams
 * (view_streams.c), per-event lists (view_events.c), the transfer table and host
 * synchronizations (from the store's columns), memory, unified-memory and CPU totals (from
 * what load.c collected), steps (steps.c), nvperfd's observations (observed.c), the
 * per-device timelines (timeline.c), NVTX projection (nvtx.c), and kernel names with their
 * aggregates (view_kernels.c), then the Python stacks' views (stacks.h: lines, hotspots,
 * threads, the main thread's stacks in idle gaps), the peer-to-peer copies by device pair
 * (p2p.c), and with NCCL collectives the ranks' analysis (ranks.c). Called once by apx report;
 * single-threaded.
 */
#include "analysis/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "analysis/idle_attrib.h"
#include "analysis/nvtx.h"
#include "analysis/observed.h"
#include "analysis/p2p.h"
#include "analysis/ranks.h"
#include "analysis/stacks.h"
#include "analysis/timeline.h"
#include "analysis/whatif/whatif.h"
#include "analysis/views.h"

#include "base/banned.h"

/* ---- transfers, syncs, memory, unified memory -------------------------------------------- */

/* The host side of a copy: where a host-to-device copy came from, where a device-to-host one
 * went; for the other kinds its source. */
static unsigned host_kind(uint8_t kind, uint8_t src, uint8_t dst)
{
	return kind == APX_COPY_D2H ? dst : src;
}

/* The transfer table and the host-blocking copies and memsets, from the store's columns. */
static void transfers(struct apx_model *m)
{
	const struct apx_es_copies *c = &m->store->c;
	const struct apx_es_memsets *s = &m->store->s;

	for (size_t i = 0; i < c->n; i++) {
		struct apx_an_xfer *x = &m->xfer[c->kind[i]][host_kind(c->kind[i], c->src[i], c->dst[i])];
		uint32_t d = apx_view_dur(c->start[i], c->end[i]);
		int async = c->flags[i] & 1;

		if (!x->count || c->bytes[i] < x->min_bytes)
			x->min_bytes = c->bytes[i];
		if (c->bytes[i] > x->max_bytes)
			x->max_bytes = c->bytes[i];
		x->count++;
		x->bytes += c->bytes[i];
		x->dur_ns += d;
		x->small += apx_copy_small(c->bytes[i]);
		x->sync_count += !async;
		/* a copy that is not asynchronous holds the host until it is done, and so does a
		 * copy from or to pageable memory even when issued as async (the host stages it) */
		if (!async || c->src[i] == APX_MEM_PAGEABLE || c->dst[i] == APX_MEM_PAGEABLE) {
			m->sync_implicit_count++;
			m->sync_implicit_ns += d;
		}
	}
	for (size_t i = 0; i < s->n; i++) {
		if (!(s->flags[i] & 1)) {
			m->sync_implicit_count++;
			m->sync_implicit_ns += apx_view_dur(s->start[i], s->end[i]);
		}
	}
}

/* Host synchronizations by kind, from the store's columns. */
static void syncs(struct apx_model *m)
{
	const struct apx_es_syncs *y = &m->store->y;

	for (size_t i = 0; i < y->n; i++) {
		uint64_t d = y->end[i] - y->start[i];

		m->sync_count[y->kind[i]]++;
		if (y->kind[i] != APX_SYNC_KIND_STREAM_WAIT_EVENT) {	/* device-side waits block no host */
			m->sync_ns[y->kind[i]] += d;
			m->sync_total_ns += d;
		}
	}
}

static int cmp_mem_event(const void *a, const void *b)
{
	const struct apx_an_mem_event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* ties in a stated order, not qsort's: file, then frees before allocations (an address
	 * given back and taken again at one time), then address and size */
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->op != y->op)
		return x->op == APX_MEMOP_FREE ? -1 : y->op == APX_MEMOP_FREE ? 1
			: x->op < y->op ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

static void memory(struct apx_model *m)
{
	int64_t dev = 0, pin = 0;

	if (m->mem_events.n > 1)
		qsort(m->mem_events.data, m->mem_events.n, sizeof(struct apx_an_mem_event), cmp_mem_event);
	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);
		int64_t d = e->op == APX_MEMOP_FREE ? -(int64_t)e->bytes : (int64_t)e->bytes;

		if (e->op != APX_MEMOP_ALLOC && e->op != APX_MEMOP_FREE)
			continue;	/* a failed allocation call (allocs.c lists them) */
		if (e->kind == APX_MEM_DEVICE) {
			dev += d;
			if (dev < 0)
				dev = 0;
			if ((uint64_t)dev > m->device_mem_peak)
				m->device_mem_peak = (uint64_t)dev;
			m->device_allocs += e->op == APX_MEMOP_ALLOC;
		} else if (e->kind == APX_MEM_PINNED) {
			pin += d;
			if (pin < 0)
				pin = 0;
			if ((uint64_t)pin > m->pinned_peak)
				m->pinned_peak = (uint64_t)pin;
			m->pinned_allocs += e->op == APX_MEMOP_ALLOC;
		}
	}
	m->device_mem_now = (uint64_t)dev;
	m->pinned_now = (uint64_t)pin;
}

static void unified_memory(struct apx_model *m)
{
	for (size_t i = 0; i < m->uvm.n; i++) {
		const struct apx_an_uvm *u = APX_VEC_AT(&m->uvm, struct apx_an_uvm, i);

		/* GPU fault records group several faults (value = how many); for the other kinds
		 * CUPTI's value is a size or flags: one record is one event */
		if (u->kind <= APX_UVM_REMOTE_MAP) {
			m->uvm_count[u->kind] += u->kind == APX_UVM_GPU_FAULT && u->value &&
							 u->value < (1u << 20) ? u->value : 1;
			m->uvm_bytes[u->kind] += u->bytes;
		}
	}
}

static void cpu_summary(struct apx_model *m)
{
	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *c = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);
		struct apx_an_file *f = &m->files[c->file];

		if (c->tid)
			continue;
		if (!f->has_cpu || c->ts >= f->cpu_last.ts)
			f->cpu_last = *c;
		if (c->threads > f->threads_max)
			f->threads_max = c->threads;
		f->has_cpu = 1;
	}
}

static void steps(struct apx_model *m)
{
	/* iterations = the count of the most frequent NVTX range name (when there are ranges),
	 * leaving out the ranges libraries open around their own calls: PyTorch's ops, cuBLAS
	 * and cuDNN (--trace-libs), CUB and Thrust (nonzero, sort, unique: one a call; store.c
	 * marks them) */
	struct {
		const char *name;
		uint32_t len;
		uint64_t n;
	} seen[256];
	size_t nseen = 0;

	for (size_t i = 0; i < m->markers.n; i++) {
		const struct apx_an_marker *a = APX_VEC_AT(&m->markers, struct apx_an_marker, i);
		size_t j;

		if (a->kind != APX_MARKER_RANGE || !a->name || a->torch)
			continue;	/* PyTorch's ops, a library's calls: not iterations */
		for (j = 0; j < nseen; j++)
			if (seen[j].len == a->name_len && !memcmp(seen[j].name, a->name, a->name_len))
				break;
		if (j == nseen) {
			if (nseen == 256)
				continue;
			seen[nseen++] = (typeof(seen[0])){ a->name, a->name_len, 0 };
		}
		if (++seen[j].n > m->steps)
			m->steps = seen[j].n;
	}
}

/* The run: the earliest producer start .. the latest timed record of any file. */
static void run_span(struct apx_model *m)
{
	for (size_t i = 0; i < m->nfiles; i++) {
		if (m->files[i].first_ns < m->run_start_ns)
			m->run_start_ns = m->files[i].first_ns;
		if (m->files[i].last_ns > m->run_end_ns)
			m->run_end_ns = m->files[i].last_ns;
	}
	if (m->run_start_ns == UINT64_MAX || m->run_end_ns < m->run_start_ns)
		m->run_start_ns = m->run_end_ns;	/* no timed record: a zero-length run */
	m->wall_ns = m->run_end_ns - m->run_start_ns;
}

/* A failed step of apx_model_finish(): said in m->finish_diag unless the store said where. */
static int finish_fail(struct apx_model *m, int r, const char *step)
{
	struct apx_diag *d = &m->finish_diag;

	if (!d->msg[0]) {
		d->err = r;
		d->chunk = -1;
		snprintf(d->msg, sizeof(d->msg), "%s while %s", r == -ENOMEM ? "out of memory"
			 : strerror(-r), step);
	}
	return r;
}

#define STEP(what, call) do { if ((r = (call)) < 0) return finish_fail(m, r, what); } while (0)

int apx_model_finish(struct apx_model *m)
{
	int r;

	STEP("creating the event store", apx_model_store_get(m));
	/* the files are read here, once (a twin's already were: model.h); the store says which
	 * chunk it could not take */
	if (!m->twin)
		STEP("reading the traces", apx_store_build(m->store, &m->finish_diag));
	for (size_t i = 0; i < m->nfiles; i++)	/* each file's own, the largest */
		if (m->files[i].launch_cost_ns > m->launch_cost_ns) {
			m->launch_cost_ns = m->files[i].launch_cost_ns;
			m->launch_cost_self = m->files[i].launch_cost_self;
		}
	run_span(m);
	STEP("finding the capture ranges", apx_capture_finish(m));	/* before anything that sums time */
	STEP("building the streams", apx_view_streams(m));
	STEP("building the events' views", apx_view_events(m));
	STEP("finding what caused the syncs", apx_sync_causes_build(m));	/* sync_cause.c */
	transfers(m);
	syncs(m);
	memory(m);
	unified_memory(m);
	steps(m);
	STEP("finding the steps", apx_steps_find(m));
	cpu_summary(m);
	apx_observed_finish(m);
	STEP("building the GPU timelines", apx_timelines_build(m));
	STEP("projecting GPU time under NVTX ranges", apx_nvtx_project(m));
	/* last: its scratch comes when the timelines' is gone (peak memory, bench/report) */
	STEP("building the kernel tables", apx_view_kernels(m));
	STEP("counting the steady state's launches", apx_view_steady_launches(m));
	STEP("building the metrics", apx_view_metrics(m));
	STEP("building the counters", apx_view_counters(m));
	/* the Python stacks' views (stacks.h): after the steps and the idle gaps */
	STEP("resolving the Python stacks", apx_stacks_build(m));
	STEP("finding the largest and the failed allocations", apx_allocs_build(m));
	STEP("building the heap view", apx_heap_build(m));	/* heap.h: after the lines */
	STEP("attributing backward kernels", apx_backward_build(m));
	STEP("building the hotspots", apx_hotspots_build(m));
	STEP("building the threads", apx_threads_build(m));
	STEP("building the OS waits", apx_oswaits_build(m));
	STEP("building the idle-gap stacks", apx_idle_stacks_build(m));
	STEP("building the what-if graph", apx_whatif_build(m));	/* whatif/whatif.h */
	STEP("pairing the peer-to-peer copies", apx_p2p_build(m));	/* p2p.h */
	if (m->colls.n)	/* several ranks' collectives (ranks.h); none: no m->ranks */
		STEP("analysing the ranks' collectives", apx_ranks_build(m, &m->ranks));
	return 0;
}
