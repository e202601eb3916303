/*
 * nvtx.c - NVTX ranges by name, with the GPU kernel time projected under them: for each range,
 * the part of every kernel that executed between the range's start and end, read from the
 * event store's kernel columns (in time order); nested ranges each count their own overlap.
 * PyTorch's own op ranges (emit_nvtx, apx analyze --python-backward nvtx) are left out and
 * only counted (model->torch_ranges): they serve backward.c. Called by apx_model_finish().
 */
#include "analysis/nvtx.h"
#include "analysis/views.h"

#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

static int cmp_gpu(const void *a, const void *b)
{
	const struct apx_an_range *x = a, *y = b;

	/* ties (CPU-only ranges: no GPU time) by wall time: the order does not hang on the
	 * order ranges were read in */
	if (x->gpu_ns != y->gpu_ns)
		return x->gpu_ns < y->gpu_ns ? 1 : -1;
	return x->wall_ns < y->wall_ns ? 1 : x->wall_ns > y->wall_ns ? -1 : 0;
}

static struct apx_an_range *range_of(struct apx_model *m, const struct apx_an_marker *mk)
{
	struct apx_an_range r = { mk->name, mk->name_len, 0, 0, 0 };

	for (size_t i = 0; i < m->ranges.n; i++) {
		struct apx_an_range *o = APX_VEC_AT(&m->ranges, struct apx_an_range, i);

		if (o->name_len == mk->name_len && !memcmp(o->name, mk->name, mk->name_len))
			return o;
	}
	if (m->ranges.n >= APX_NVTX_NAMES_MAX || apx_vec_push(&m->ranges, &r) < 0)
		return NULL;
	return APX_VEC_AT(&m->ranges, struct apx_an_range, m->ranges.n - 1);
}

/* First kernel whose start is >= t. */
static size_t first_from(const struct apx_es_kernels *k, uint64_t t)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->start[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int apx_nvtx_project(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_kernels *k = &st->k;
	uint64_t maxdur = 0;

	for (size_t i = 0; i < k->n; i++)
		if (k->dur[i] > maxdur)
			maxdur = k->dur[i];
	for (size_t i = 0; i < m->markers.n; i++) {
		const struct apx_an_marker *mk = APX_VEC_AT(&m->markers, struct apx_an_marker, i);
		struct apx_an_range *r;
		uint64_t gpu = 0;

		if (mk->kind != APX_MARKER_RANGE || !mk->name || mk->end < mk->start)
			continue;
		if (mk->torch == 1) {	/* PyTorch's op ranges: thousands a step, backward.c's */
			m->torch_ranges++;
			continue;
		}
		r = range_of(m, mk);
		if (!r)
			continue;
		/* kernels that may overlap start at most maxdur before the range */
		for (size_t j = first_from(k, mk->start > maxdur ? mk->start - maxdur : 0);
		     j < k->n && k->start[j] < mk->end; j++) {
			uint64_t s = k->start[j], e = apx_view_kernel_end(st, j);

			if (e <= mk->start)
				continue;
			gpu += (e < mk->end ? e : mk->end) - (s > mk->start ? s : mk->start);
		}
		r->count++;
		r->wall_ns += mk->end - mk->start;
		r->gpu_ns += gpu;
	}
	if (m->ranges.n > 1)
		qsort(m->ranges.data, m->ranges.n, sizeof(struct apx_an_range), cmp_gpu);
	return 0;
}
