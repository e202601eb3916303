/*
 * view_kernels.c - kernel names and their aggregates as a view over the event store: the
 * names in the order first seen, the launch configuration and device of each name's first
 * kernel, count, total, min, max, exact p50 and p95 (a counting sort of the durations by
 * name, then selection), theoretical occupancy, and the kernel time total. The grouped
 * durations stay as m->k.dur. Called by apx_model_finish() (finish.c) last of the views, when
 * the timelines no longer need scratch memory; single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int apx_view_kernels(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	size_t nn, n = st->k.n, *off;
	uint32_t *durs;
	int r;

	if ((r = names(m)) < 0)
		return r;
	if (!n)
		return 0;
	nn = m->names.n;
	off = calloc(nn + 1, sizeof(*off));
	durs = malloc(n * sizeof(*durs));
	if (!off || !durs) {
		free(off);
		free(durs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {	/* counting sort of durations by name */
		uint32_t j = st->string_kname[st->k.name[i]] - 1;
		uint32_t d = st->k.dur[i];
		struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);

		off[j + 1]++;
		nm->total_ns += d;
		if (d < nm->min_ns)
			nm->min_ns = d;
		if (d > nm->max_ns)
			nm->max_ns = d;
		m->kernel_total_ns += d;
	}
	for (size_t j = 0; j < nn; j++)
		off[j + 1] += off[j];
	for (size_t i = 0; i < n; i++) {
		uint32_t j = st->string_kname[st->k.name[i]] - 1;

		durs[off[j]++] = st->k.dur[i];
	}
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
	m->k.dur = durs;	/* grouped by name: rules count durations, not order */
	return 0;
}
