/*
 * allocs.c - the allocations the memory section names (stacks.h, model.h): per device and
 * memory kind (device, pinned, managed) the APX_AN_ALLOCS_TOP largest allocations, and every
 * allocation call that failed (MEMORY records of op ALLOC_FAILED, written by the collector's
 * allocation callbacks, lib/collector/alloc_calls.c), each with the line of its Python stack
 * (library frames folded, as every line of the report) when its record carries one: traces
 * written before the MEMORY record's stack field have none, and their allocations are listed
 * without a line. Called by apx_model_finish() (finish.c) after apx_stacks_build(), on the
 * time-ordered mem_events; read by the report (lib/report/build_allocs.c) and the
 * memory-capacity rule. Single-threaded; allocates per call.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/store.h"

#include "base/banned.h"

const char *apx_cuda_error_name(uint32_t err)
{
	switch (err) {	/* cuda.h's CUresult values */
	case 1: return "CUDA_ERROR_INVALID_VALUE";
	case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
	case 3: return "CUDA_ERROR_NOT_INITIALIZED";
	case 4: return "CUDA_ERROR_DEINITIALIZED";
	case 100: return "CUDA_ERROR_NO_DEVICE";
	case 101: return "CUDA_ERROR_INVALID_DEVICE";
	case 201: return "CUDA_ERROR_INVALID_CONTEXT";
	case 400: return "CUDA_ERROR_INVALID_HANDLE";
	case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
	case 801: return "CUDA_ERROR_NOT_SUPPORTED";
	case 802: return "CUDA_ERROR_SYSTEM_NOT_READY";
	case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
	case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
	case 999: return "CUDA_ERROR_UNKNOWN";
	default: return NULL;
	}
}

/* The order kinds are listed in; -1: not listed (statics, arrays, pageable). */
static int kind_rank(unsigned kind)
{
	switch (kind) {
	case APX_MEM_DEVICE: return 0;
	case APX_MEM_PINNED: return 1;
	case APX_MEM_MANAGED: return 2;
	default: return -1;
	}
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct apx_an_alloc *x = a, *y = b;
	int kx = kind_rank(x->kind), ky = kind_rank(y->kind);

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;	/* most bytes first */
	return x->ts < y->ts ? -1 : x->ts > y->ts;	/* then the earliest */
}

static struct apx_an_alloc alloc_of(const struct apx_model *m, const struct apx_an_mem_event *e)
{
	struct apx_an_alloc a = {
		.ts = e->ts, .bytes = e->bytes, .tid = e->tid, .device = e->device,
		.error = e->error, .file = e->file, .kind = e->kind,
		.failed = e->op == APX_MEMOP_ALLOC_FAILED,
	};

	a.stack = m->store ? apx_store_stack_of(m->store, e->file, e->stack) : 0;
	a.line = apx_stack_line(m, a.stack);
	return a;
}

int apx_allocs_build(struct apx_model *m)
{
	struct apx_an_alloc *all;
	size_t n = 0;
	int r = 0;

	m->allocs.n = m->allocs_failed.n = 0;
	m->allocs_failed_n = 0;
	if (!m->mem_events.n)
		return 0;
	all = malloc(m->mem_events.n * sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < m->mem_events.n && r == 0; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);

		if (e->op == APX_MEMOP_ALLOC_FAILED) {
			struct apx_an_alloc a = alloc_of(m, e);

			if (m->allocs_failed_n++ < APX_AN_ALLOCS_FAILED_MAX)
				r = apx_vec_push(&m->allocs_failed, &a);
		} else if (e->op == APX_MEMOP_ALLOC && kind_rank(e->kind) >= 0 && e->bytes) {
			all[n++] = alloc_of(m, e);
		}
	}
	if (n > 1)
		qsort(all, n, sizeof(*all), cmp_alloc);
	for (size_t i = 0, run = 0; i < n && r == 0; i++) {
		if (i && (all[i].device != all[i - 1].device || all[i].kind != all[i - 1].kind))
			run = 0;
		if (run++ < APX_AN_ALLOCS_TOP)
			r = apx_vec_push(&m->allocs, &all[i]);
	}
	free(all);
	return r;
}
