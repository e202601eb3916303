/*
 * finish.c - apx_model_finish(): after every file is loaded, sorts the kernels by start time,
 * computes the per-kernel-name aggregates (exact p50/p95) and theoretical occupancy, the
 * transfer table, synchronization, memory, unified-memory totals, and the per-device
 * timelines (timeline.c). Called once by apx report; single-threaded.
 */
#include "analysis/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/nvtx.h"
#include "analysis/observed.h"
#include "analysis/timeline.h"

#include "base/banned.h"

/* ---- sorting the kernel arrays by start ------------------------------------------------- */

static const uint64_t *sort_keys;

static int cmp_idx_by_start(const void *a, const void *b)
{
	uint64_t x = sort_keys[*(const uint32_t *)a], y = sort_keys[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

#define PERMUTE(arr, type)                                                                     \
	do {                                                                                   \
		type *tmp_ = malloc(n * sizeof(type));                                         \
		if (!tmp_)                                                                     \
			goto oom;                                                              \
		for (size_t i_ = 0; i_ < n; i_++)                                              \
			tmp_[i_] = (arr)[idx[i_]];                                             \
		free(arr);                                                                     \
		(arr) = tmp_;                                                                  \
	} while (0)

static int sort_kernels(struct apx_an_kernels *k)
{
	size_t n = k->n, i;
	uint32_t *idx;

	for (i = 1; i < n && k->start[i - 1] <= k->start[i]; i++)
		;
	if (i >= n)
		return 0;	/* already sorted: the common case */
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	sort_keys = k->start;
	qsort(idx, n, sizeof(*idx), cmp_idx_by_start);
	PERMUTE(k->start, uint64_t);
	PERMUTE(k->dur, uint32_t);
	PERMUTE(k->name, uint32_t);
	PERMUTE(k->stream, uint16_t);
	k->cap = n;
	free(idx);
	return 0;
oom:
	free(idx);
	return -ENOMEM;
}

/* ---- per-name aggregates ---------------------------------------------------------------- */

static uint32_t select_nth(uint32_t *a, size_t n, size_t nth)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				uint32_t t = a[i];

				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (nth <= j)
			hi = j;
		else if (nth >= i)
			lo = i;
		else
			return a[nth];
	}
	return a[nth];
}

/* Theoretical occupancy (active warps / max warps per SM) from the CUDA occupancy rules:
 * limits by threads, blocks, registers (allocated per warp in units of 256) and shared
 * memory (1 KiB reserved per block from sm_80 on). */
static double occupancy(const struct apx_an_name *nm, const struct apx_an_device *d)
{
	uint64_t threads = (uint64_t)nm->block[0] * nm->block[1] * nm->block[2];
	uint64_t warp = d && d->warp_size ? d->warp_size : 32, warps, max_warps, blocks, b;
	uint64_t smem;

	if (!d || !d->max_threads_sm || !threads || !d->max_blocks_sm)
		return -1;
	warps = (threads + warp - 1) / warp;
	max_warps = d->max_threads_sm / warp;
	blocks = d->max_blocks_sm;
	b = max_warps / warps;
	if (b < blocks)
		blocks = b;
	if (nm->regs && d->regs_sm) {
		uint64_t per_warp = (nm->regs * warp + 255) / 256 * 256;

		b = d->regs_sm / (per_warp * warps);
		if (b < blocks)
			blocks = b;
	}
	smem = (uint64_t)nm->smem_static + nm->smem_dynamic;
	if (smem && d->smem_sm) {
		smem += d->cc_major >= 8 ? 1024 : 0;
		b = d->smem_sm / smem;
		if (b < blocks)
			blocks = b;
	}
	return max_warps ? (double)(blocks * warps) / (double)max_warps : -1;
}

static int name_aggregates(struct apx_model *m)
{
	const struct apx_an_kernels *k = &m->k;
	size_t nn = m->names.n, *off;
	uint32_t *durs;

	if (!k->n)
		return 0;
	off = calloc(nn + 1, sizeof(*off));
	durs = malloc(k->n * sizeof(*durs));
	if (!off || !durs) {
		free(off);
		free(durs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k->n; i++) {	/* counting sort of durations by name */
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, k->name[i]);

		off[k->name[i] + 1]++;
		nm->total_ns += k->dur[i];
		if (k->dur[i] < nm->min_ns)
			nm->min_ns = k->dur[i];
		if (k->dur[i] > nm->max_ns)
			nm->max_ns = k->dur[i];
		m->kernel_total_ns += k->dur[i];
	}
	for (size_t j = 0; j < nn; j++)
		off[j + 1] += off[j];
	for (size_t i = 0; i < k->n; i++)
		durs[off[k->name[i]]++] = k->dur[i];
	for (size_t j = nn; j > 0; j--)	/* off[j] now ends group j: shift back to starts */
		off[j] = off[j - 1];
	off[0] = 0;
	for (size_t j = 0; j < nn; j++) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);
		size_t cnt = off[j + 1] - off[j];

		if (!cnt) {
			nm->min_ns = 0;
			continue;
		}
		nm->count = cnt;
		nm->p50_ns = select_nth(durs + off[j], cnt, (cnt - 1) / 2);
		nm->p95_ns = select_nth(durs + off[j], cnt, (cnt * 95 + 99) / 100 - 1);
		nm->occupancy = occupancy(nm, apx_model_device(m, nm->device));
	}
	free(off);
	free(durs);
	return 0;
}

/* ---- the steady state's launches per name ----------------------------------------------- */

/* Launches of each name inside the steps (first step's start .. last step's end), and its
 * longest run of back-to-back launches on one stream there: `for p in params: p.grad.zero_()`
 * or a per-parameter optimizer is a run as long as the parameter list. Needs the kernels in
 * time order with their streams (before apx_model_finish frees them). */
static int steady_launches(struct apx_model *m)
{
	const struct apx_an_kernels *k = &m->k;
	const struct apx_an_steps *st = &m->steady;
	uint32_t *last, *run;

	if (!st->count || !k->n || !m->streams.n)
		return 0;
	last = malloc(m->streams.n * sizeof(*last));
	run = calloc(m->streams.n, sizeof(*run));
	if (!last || !run) {
		free(last);
		free(run);
		return -ENOMEM;
	}
	memset(last, 0xff, m->streams.n * sizeof(*last));
	for (size_t i = 0; i < k->n; i++) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, k->name[i]);
		uint16_t s = k->stream[i];

		if (k->start[i] < st->first_ns || k->start[i] >= st->last_ns)
			continue;
		nm->steady_count++;
		nm->steady_ns += k->dur[i];
		run[s] = last[s] == k->name[i] ? run[s] + 1 : 1;
		last[s] = k->name[i];
		if (run[s] > nm->max_burst)
			nm->max_burst = run[s];
		if (run[s] == APX_LONG_RUN)
			nm->long_bursts++;
	}
	free(last);
	free(run);
	return 0;
}

/* ---- transfers, syncs, memory, unified memory -------------------------------------------- */

static unsigned host_kind(const struct apx_an_copy *c)
{
	switch (c->kind) {
	case APX_COPY_H2D:
		return c->src;
	case APX_COPY_D2H:
		return c->dst;
	default:
		return c->src;
	}
}

static void transfers(struct apx_model *m)
{
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);
		struct apx_an_xfer *x = &m->xfer[c->kind][host_kind(c)];

		if (!x->count || c->bytes < x->min_bytes)
			x->min_bytes = c->bytes;
		if (c->bytes > x->max_bytes)
			x->max_bytes = c->bytes;
		x->count++;
		x->bytes += c->bytes;
		x->dur_ns += c->dur;
		x->small += c->bytes < 65536;
		x->sync_count += !c->async;
	}
}

static void syncs(struct apx_model *m)
{
	/* a copy or memset that is not asynchronous holds the host until it is done, and so does
	 * a copy from or to pageable memory even when issued as async (the host stages it) */
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (!c->async || c->src == APX_MEM_PAGEABLE || c->dst == APX_MEM_PAGEABLE) {
			m->sync_implicit_count++;
			m->sync_implicit_ns += c->dur;
		}
	}
	for (size_t i = 0; i < m->memsets.n; i++) {
		const struct apx_an_memset *ms = APX_VEC_AT(&m->memsets, struct apx_an_memset, i);

		if (!ms->async) {
			m->sync_implicit_count++;
			m->sync_implicit_ns += ms->dur;
		}
	}
	for (size_t i = 0; i < m->syncs.n; i++) {
		const struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);
		uint64_t d = s->end > s->start ? s->end - s->start : 0;

		m->sync_count[s->kind]++;
		if (s->kind != APX_SYNC_KIND_STREAM_WAIT_EVENT) {	/* device-side waits block no host */
			m->sync_ns[s->kind] += d;
			m->sync_total_ns += d;
		}
	}
}

static int cmp_mem_event(const void *a, const void *b)
{
	const struct apx_an_mem_event *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void memory(struct apx_model *m)
{
	int64_t dev = 0, pin = 0;

	if (m->mem_events.n > 1)
		qsort(m->mem_events.data, m->mem_events.n, sizeof(struct apx_an_mem_event), cmp_mem_event);
	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);
		int64_t d = e->op == APX_MEMOP_FREE ? -(int64_t)e->bytes : (int64_t)e->bytes;

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
	/* iterations = the count of the most frequent NVTX range name (when there are ranges) */
	struct {
		const char *name;
		uint32_t len;
		uint64_t n;
	} seen[256];
	size_t nseen = 0;

	for (size_t i = 0; i < m->markers.n; i++) {
		const struct apx_an_marker *a = APX_VEC_AT(&m->markers, struct apx_an_marker, i);
		size_t j;

		if (a->kind != APX_MARKER_RANGE || !a->name)
			continue;
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

int apx_model_finish(struct apx_model *m)
{
	int r;

	if (m->run_start_ns == UINT64_MAX || m->run_end_ns < m->run_start_ns)
		m->run_start_ns = m->run_end_ns;	/* no timed record: a zero-length run */
	m->wall_ns = m->run_end_ns - m->run_start_ns;
	r = sort_kernels(&m->k);
	if (r < 0)
		return r;
	transfers(m);
	syncs(m);
	memory(m);
	unified_memory(m);
	steps(m);
	r = apx_steps_find(m);
	if (r == 0)
		r = steady_launches(m);
	if (r < 0)
		return r;
	cpu_summary(m);
	apx_observed_finish(m);
	r = apx_timelines_build(m);
	if (r == 0)
		r = apx_nvtx_project(m);
	if (r < 0)
		return r;
	/* The timelines consumed the per-kernel time order: free it before the aggregates need
	 * their scratch, so peak memory stays under twice the trace size (bench/report). */
	free(m->k.start);
	free(m->k.stream);
	m->k.start = NULL;
	m->k.stream = NULL;
	return name_aggregates(m);
}
