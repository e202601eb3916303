/*
 * alloc_time.c - which API calls are CUDA allocator calls (alloc_time.h), by the names CUPTI
 * gives them: the runtime's (level api) and the driver's (level api, and the calls the
 * collector times at level light: alloc_calls.c). Called by idle_attrib.c, whatif/graph.c and
 * rules/rule_allocator_churn.c.
 */
#include "analysis/alloc_time.h"

#include <string.h>

#include "base/banned.h"

static int starts(struct apx_es_text t, const char *p)
{
	size_t k = strlen(p);

	return t.p && t.len >= k && !memcmp(t.p, p, k);
}

/* name is p, or p followed by a version suffix ("_v3020", "_v2") */
static int is(struct apx_es_text t, const char *p)
{
	size_t k = strlen(p);

	return starts(t, p) && (t.len == k || (t.len > k + 1 && t.p[k] == '_' && t.p[k + 1] == 'v'));
}

enum apx_alloc_call apx_alloc_call_of(struct apx_es_text name)
{
	static const char *const sync_frees[] = { "cudaFree", "cudaFreeHost", "cudaFreeArray",
						  "cuMemFree", "cuMemFreeHost" };
	static const char *const frees[] = { "cudaFree", "cuMemFree", "cuMemRelease", "cuMemUnmap" };
	static const char *const allocs[] = { "cudaMalloc", "cudaHostAlloc", "cuMemAlloc",
					      "cuMemCreate", "cuMemHostAlloc" };

	for (size_t i = 0; i < sizeof(sync_frees) / sizeof(sync_frees[0]); i++)
		if (is(name, sync_frees[i]))
			return APX_ALLOC_CALL_FREE_SYNC;
	for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); i++)
		if (starts(name, frees[i]))
			return APX_ALLOC_CALL_FREE;
	for (size_t i = 0; i < sizeof(allocs) / sizeof(allocs[0]); i++)
		if (starts(name, allocs[i]))
			return APX_ALLOC_CALL_ALLOC;
	return APX_ALLOC_CALL_NONE;
}
