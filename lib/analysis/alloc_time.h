/*
 * alloc_time.h - the host's time in the CUDA allocator: which API records
 * are allocator calls. Level api traces have CUPTI's record of every call; level light ones
 * the allocator calls the collector times itself (alloc_calls.c). Used by idle_attrib.c (the
 * idle cause "allocator"), whatif/graph.c (allocator tasks; a synchronizing free waits for
 * the GPU) and rules/rule_allocator_churn.c.
 */
#ifndef APX_ANALYSIS_ALLOC_TIME_H
#define APX_ANALYSIS_ALLOC_TIME_H

#include "analysis/store.h"

enum apx_alloc_call {
	APX_ALLOC_CALL_NONE,		/* not an allocator call */
	APX_ALLOC_CALL_ALLOC,		/* cudaMalloc*, cudaHostAlloc, cuMemAlloc*, cuMemCreate... */
	APX_ALLOC_CALL_FREE_SYNC,	/* cudaFree, cudaFreeHost, cuMemFree_v2, cuMemFreeHost: they
					 * wait for the device to finish its work */
	APX_ALLOC_CALL_FREE,		/* frees that do not wait: cudaFreeAsync, cuMemRelease... */
};

/* What the API call named name is (its name as CUPTI gives it: "cuMemFree_v2"). */
enum apx_alloc_call apx_alloc_call_of(struct apx_es_text name);

#endif
