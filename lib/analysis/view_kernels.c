/*
 * view_kernels.c - kernel names and their aggregates as a view over the event store: the
 * names in the order first seen, the launch configuration and device of each name's first
 * kernel, count, total, min, max, exact p50 and p95 (the durations of a batch of names
 * gathered by name into a 16 MB scratch, then selection; a name with more kernels than that by
 * two histogram passes), theoretical occupancy, and the kernel time total; then the steady
 * state's launches per name (apx_view_steady_launches). m->k.dur is the store's duration
 * column. Replayed launches without times (store.h struct apx_es_untimed) count in their
 * name, with the duration their replay measured (gpu__time_duration.sum) where it did.
 * Called by apx_model_finish() (finish.c) last of the views, when the timelines no longer
 * need scratch memory; single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hwcounters.h"
#include "analysis/idle_attrib.h"
#include "analysis/views.h"

#include "base/banned.h"

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

/* The model's names: the store's kernel names, in order. */
static int names(struct apx_model *m)
{
	const struct apx_store *st = m->store;

	for (size_t j = 0; j < st->nknames; j++) {
		const struct apx_es_kname *kn = &st->knames[j];
		const struct apx_es_launch *l = &st->launches[kn->launch];
		struct apx_es_text t = apx_store_string(st, kn->name);
		struct apx_an_name nm = {
			.text = t.len ? t.p : "(unknown kernel)",
			.len = t.len ? t.len : (uint32_t)strlen("(unknown kernel)"),
			.min_ns = UINT64_MAX, .device = kn->ordinal, .regs = l->regs,
			.smem_static = l->smem_static, .smem_dynamic = l->smem_dynamic,
			.occupancy = -1,
		};
		int r;

		memcpy(nm.grid, l->grid, sizeof(nm.grid));
		memcpy(nm.block, l->block, sizeof(nm.block));
		if ((r = apx_vec_push(&m->names, &nm)) < 0)
			return r;
	}
	return 0;
}

/* An untimed launch's duration when its replay recorded no gpu__time_duration.sum. */
#define UNKNOWN UINT32_MAX

/* Scratch for the exact percentiles: the durations of a batch of names at a time (16 MB), so
 * that 10 million kernels need no second copy of their durations. */
#define SCRATCH_MAX ((size_t)1 << 22)

/* A name's launches with a duration: its timed ones and its replayed ones with a counter. */
static uint64_t timed(const struct apx_an_name *nm)
{
	return nm->count - nm->untimed_nodur;
}

/* The nth smallest duration (from 0) of the kernels of name j, for a name with more kernels
 * than the scratch holds: two histogram passes, the high then the low 16 bits. */
static uint32_t nth_by_histogram(const struct apx_store *st, const uint32_t *udur, uint32_t j,
				 uint64_t nth, uint64_t *hist)
{
	uint32_t hi = 0, lo = 0;

	memset(hist, 0, 65536 * sizeof(*hist));
	for (size_t i = 0; i < st->k.n; i++)
		if (apx_view_kname(st, i) == j)
			hist[st->k.dur[i] >> 16]++;
	for (size_t i = 0; i < st->ku.n; i++)
		if (apx_view_untimed_kname(st, i) == j && udur[i] != UNKNOWN)
			hist[udur[i] >> 16]++;
	for (; hist[hi] <= nth; hi++)
		nth -= hist[hi];
	memset(hist, 0, 65536 * sizeof(*hist));
	for (size_t i = 0; i < st->k.n; i++)
		if (apx_view_kname(st, i) == j && st->k.dur[i] >> 16 == hi)
			hist[st->k.dur[i] & 0xffff]++;
	for (size_t i = 0; i < st->ku.n; i++)
		if (apx_view_untimed_kname(st, i) == j && udur[i] != UNKNOWN && udur[i] >> 16 == hi)
			hist[udur[i] & 0xffff]++;
	for (; hist[lo] <= nth; lo++)
		nth -= hist[lo];
	return hi << 16 | lo;
}

/* p50 and p95 of names [j0, j1), whose kernels fit the scratch together: one pass gathers
 * their durations by name (off: each name's start in the scratch), then selection. */
static void batch_percentiles(struct apx_model *m, const uint32_t *udur, size_t j0, size_t j1,
			      uint32_t *durs, size_t *off)
{
	const struct apx_store *st = m->store;

	off[0] = 0;
	for (size_t j = j0; j < j1; j++)
		off[j - j0 + 1] = off[j - j0] + timed(APX_VEC_AT(&m->names, struct apx_an_name, j));
	for (size_t i = 0; i < st->k.n; i++) {
		uint32_t j = apx_view_kname(st, i);

		if (j >= j0 && j < j1)
			durs[off[j - j0]++] = st->k.dur[i];
	}
	for (size_t i = 0; i < st->ku.n; i++) {
		uint32_t j = apx_view_untimed_kname(st, i);

		if (j >= j0 && j < j1 && udur[i] != UNKNOWN)
			durs[off[j - j0]++] = udur[i];
	}
	for (size_t j = j0; j < j1; j++) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);
		uint64_t nd = timed(nm);
		uint32_t *d = durs + off[j - j0] - nd;	/* off[] now ends each name */

		if (!nd)
			continue;
		nm->p50_ns = select_nth(d, nd, (nd - 1) / 2);
		nm->p95_ns = select_nth(d, nd, (nd * 95 + 99) / 100 - 1);
	}
}

/* The durations of the store's untimed (replayed) kernels, from their gpu__time_duration.sum
 * counters (UNKNOWN where none), counted into their names and files (not their streams:
 * those are the timelines'). NULL with no untimed kernel;
 * ret_err -ENOMEM when memory ran out. */
static uint32_t *untimed_durations(struct apx_model *m, int *ret_err)
{
	const struct apx_store *st = m->store;
	uint32_t *udur;

	*ret_err = 0;
	if (!st->ku.n)
		return NULL;
	if (!(udur = malloc(st->ku.n * sizeof(*udur)))) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	apx_view_counters_sort(m);
	for (size_t i = 0; i < st->ku.n; i++) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name,
						    apx_view_untimed_kname(st, i));
		struct apx_an_file *f = &m->files[st->streams[st->ku.stream[i]].file];
		double v;

		udur[i] = UNKNOWN;
		f->kernels++;		/* the file's launches; its kernel time below */
		if (apx_view_counter_value(m, st->streams[st->ku.stream[i]].file, st->ku.corr[i],
					   APX_KC_DURATION, &v) == 0 && v >= 0)
			udur[i] = v < (double)UNKNOWN ? (uint32_t)(v + 0.5) : UNKNOWN - 1;
		nm->count++;
		nm->untimed++;
		m->untimed_launches++;
		if (udur[i] == UNKNOWN) {
			nm->untimed_nodur++;
			m->untimed_nodur++;
			continue;
		}
		nm->total_ns += udur[i];
		f->kernel_ns += udur[i];
		if (udur[i] < nm->min_ns)
			nm->min_ns = udur[i];
		if (udur[i] > nm->max_ns)
			nm->max_ns = udur[i];
		m->kernel_total_ns += udur[i];
	}
	return udur;
}

int apx_view_kernels(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	size_t nn, n = st->k.n, *off, all;
	uint64_t *hist;
	uint32_t *durs, *udur;
	int r;

	if ((r = names(m)) < 0)
		return r;
	m->k.dur = st->k.dur;	/* the store's column (time order), borrowed */
	udur = untimed_durations(m, &r);
	if (r < 0)
		return r;
	all = n + st->ku.n;
	if (!all)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t d = st->k.dur[i];
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, apx_view_kname(st, i));

		nm->count++;
		nm->total_ns += d;
		if (d < nm->min_ns)
			nm->min_ns = d;
		if (d > nm->max_ns)
			nm->max_ns = d;
		m->kernel_total_ns += d;
	}
	nn = m->names.n;
	off = malloc((nn + 1) * sizeof(*off));
	durs = malloc((all < SCRATCH_MAX ? all : SCRATCH_MAX) * sizeof(*durs));
	hist = malloc(65536 * sizeof(*hist));
	if (!off || !durs || !hist) {
		free(off);
		free(durs);
		free(hist);
		free(udur);
		return -ENOMEM;
	}
	for (size_t j0 = 0, j1; j0 < nn; j0 = j1) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j0);
		size_t sum = 0;

		if (timed(nm) > SCRATCH_MAX) {
			uint64_t nd = timed(nm);

			nm->p50_ns = nth_by_histogram(st, udur, (uint32_t)j0, (nd - 1) / 2, hist);
			nm->p95_ns = nth_by_histogram(st, udur, (uint32_t)j0, (nd * 95 + 99) / 100 - 1,
						      hist);
			j1 = j0 + 1;
			continue;
		}
		for (j1 = j0; j1 < nn; j1++) {
			uint64_t c = timed(APX_VEC_AT(&m->names, struct apx_an_name, j1));

			if (c > SCRATCH_MAX || sum + c > SCRATCH_MAX)
				break;
			sum += c;
		}
		batch_percentiles(m, udur, j0, j1, durs, off);
	}
	for (size_t j = 0; j < nn; j++) {
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);

		if (!timed(nm))
			nm->min_ns = 0;
		if (nm->count)
			nm->occupancy = occupancy(nm, apx_model_device(m, nm->device));
	}
	free(off);
	free(durs);
	free(hist);
	free(udur);
	return 0;
}

/* Launches of each name inside the steps (first step's start .. last step's end), its longest
 * run of back-to-back launches on one stream there, how many of its runs reach APX_LONG_RUN
 * (`for p in params: p.grad.zero_()` or a per-parameter optimizer is a run as long as the
 * parameter list, once a step), and the stream's idle between the kernels of those runs. The
 * store's kernels are in time order. */
struct run_gaps {
	uint64_t end;		/* the stream's last kernel's end */
	uint64_t gap_ns, loose;	/* the current run's gaps so far, until it reaches APX_LONG_RUN */
};

int apx_view_steady_launches(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_an_steps *steps = &m->steady;
	uint32_t *last, *run;
	struct run_gaps *rg;

	if (!steps->count || !st->k.n || !st->nstreams)
		return 0;
	last = malloc(st->nstreams * sizeof(*last));
	run = calloc(st->nstreams, sizeof(*run));
	rg = calloc(st->nstreams, sizeof(*rg));
	if (!last || !run || !rg) {
		free(last);
		free(run);
		free(rg);
		return -ENOMEM;
	}
	memset(last, 0xff, st->nstreams * sizeof(*last));
	for (size_t i = 0; i < st->k.n; i++) {
		uint32_t j = apx_view_kname(st, i), s = st->k.stream[i];
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);

		if (st->k.start[i] < steps->first_ns || st->k.start[i] >= steps->last_ns ||
		    s >= st->nstreams)
			continue;
		nm->steady_count++;
		nm->steady_ns += st->k.dur[i];
		run[s] = last[s] == j ? run[s] + 1 : 1;
		last[s] = j;
		if (run[s] > nm->max_burst)
			nm->max_burst = run[s];
		if (run[s] == 1) {
			rg[s].gap_ns = rg[s].loose = 0;
		} else if (st->k.start[i] > rg[s].end) {
			uint64_t gap = st->k.start[i] - rg[s].end;

			rg[s].gap_ns += gap;
			rg[s].loose += gap >= APX_REFILL_TIGHT_NS;
		}
		if (run[s] >= APX_LONG_RUN) {	/* the run counts: its gaps so far, then each */
			nm->long_bursts += run[s] == APX_LONG_RUN;
			nm->burst_gap_ns += rg[s].gap_ns;
			nm->burst_loose_gaps += rg[s].loose;
			rg[s].gap_ns = rg[s].loose = 0;
		}
		if (st->k.start[i] + st->k.dur[i] > rg[s].end)
			rg[s].end = st->k.start[i] + st->k.dur[i];
	}
	free(last);
	free(run);
	free(rg);
	return 0;
}
