/*
 * kineto_names.c - what Kineto's words mean in apx terms: event categories, the copy kind
 * and memory kinds in a copy's name ("Memcpy HtoD (Pageable -> Device)", Kineto's
 * memcpyKindString / memoryKindString), CUPTI's synchronization kinds, and which CUDA API
 * calls wait for the GPU or queue asynchronous copies. Pure functions, called by the
 * importer's passes (kineto_scan.c, kineto_emit.c).
 */
#include "import/kineto_int.h"

#include <string.h>
#include <strings.h>

#include "base/banned.h"

enum apx_kcat apx_kcat_of(const char *cat)
{
	static const struct { const char *word; enum apx_kcat cat; } t[] = {
		{ "kernel", APX_KCAT_KERNEL }, { "gpu_memcpy", APX_KCAT_MEMCPY },
		{ "gpu_memset", APX_KCAT_MEMSET }, { "cuda_runtime", APX_KCAT_RUNTIME },
		{ "cuda_driver", APX_KCAT_DRIVER }, { "cuda_sync", APX_KCAT_SYNC },
		{ "user_annotation", APX_KCAT_ANNOTATION }, { "cpu_op", APX_KCAT_CPU_OP },
		/* the capitalised words of Kineto before 2021 */
		{ "Memcpy", APX_KCAT_MEMCPY }, { "Memset", APX_KCAT_MEMSET },
		{ "Runtime", APX_KCAT_RUNTIME }, { "Driver", APX_KCAT_DRIVER },
		{ "Operator", APX_KCAT_CPU_OP },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcasecmp(cat, t[i].word))
			return t[i].cat;
	return APX_KCAT_OTHER;
}

static unsigned mem_kind_word(const char *s, size_t n)
{
	static const struct { const char *word; unsigned kind; } t[] = {
		{ "Pageable", APX_MEM_PAGEABLE }, { "Pinned", APX_MEM_PINNED },
		{ "Device", APX_MEM_DEVICE }, { "Array", APX_MEM_ARRAY }, { "Managed", APX_MEM_MANAGED },
		{ "Device Static", APX_MEM_DEVICE_STATIC }, { "Managed Static", APX_MEM_MANAGED_STATIC },
	};

	while (n && s[0] == ' ') {
		s++;
		n--;
	}
	while (n && s[n - 1] == ' ')
		n--;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].word) == n && !strncasecmp(s, t[i].word, n))
			return t[i].kind;
	return APX_MEM_UNKNOWN;
}

void apx_kname_memcpy(const char *name, unsigned *ret_copy, unsigned *ret_src, unsigned *ret_dst)
{
	static const struct { const char *word; unsigned kind; } t[] = {
		{ "HtoD", APX_COPY_H2D }, { "DtoH", APX_COPY_D2H }, { "DtoD", APX_COPY_D2D },
		{ "HtoH", APX_COPY_H2H }, { "PtoP", APX_COPY_P2P }, { "HtoA", APX_COPY_OTHER },
		{ "AtoH", APX_COPY_OTHER }, { "AtoA", APX_COPY_OTHER }, { "AtoD", APX_COPY_OTHER },
		{ "DtoA", APX_COPY_OTHER },
	};
	const char *open = strchr(name, '('), *arrow, *close;

	*ret_copy = APX_COPY_UNKNOWN;
	*ret_src = *ret_dst = APX_MEM_UNKNOWN;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strstr(name, t[i].word)) {
			*ret_copy = t[i].kind;
			break;
		}
	if (!open || !(arrow = strstr(open, "->")) || !(close = strchr(arrow, ')')))
		return;
	*ret_src = mem_kind_word(open + 1, (size_t)(arrow - open - 1));
	*ret_dst = mem_kind_word(arrow + 2, (size_t)(close - arrow - 2));
}

unsigned apx_kname_mem_kind(const char *name)
{
	const char *open = strchr(name, '('), *close = open ? strchr(open, ')') : NULL;

	return close ? mem_kind_word(open + 1, (size_t)(close - open - 1)) : APX_MEM_UNKNOWN;
}

unsigned apx_kname_sync_kind(const char *kind)
{
	if (!strcasecmp(kind, "Stream Sync"))
		return APX_SYNC_KIND_STREAM;
	if (!strcasecmp(kind, "Event Sync"))
		return APX_SYNC_KIND_EVENT;
	if (!strcasecmp(kind, "Context Sync"))
		return APX_SYNC_KIND_DEVICE;
	if (!strcasecmp(kind, "Stream Wait Event"))
		return APX_SYNC_KIND_STREAM_WAIT_EVENT;
	return APX_SYNC_KIND_UNKNOWN;
}

unsigned apx_kname_api_sync(const char *api)
{
	static const struct { const char *name; unsigned kind; } t[] = {
		{ "cudaStreamSynchronize", APX_SYNC_KIND_STREAM },
		{ "cudaDeviceSynchronize", APX_SYNC_KIND_DEVICE },
		{ "cudaEventSynchronize", APX_SYNC_KIND_EVENT },
		{ "cudaThreadSynchronize", APX_SYNC_KIND_DEVICE },
		{ "cuStreamSynchronize", APX_SYNC_KIND_STREAM },
		{ "cuCtxSynchronize", APX_SYNC_KIND_DEVICE },
		{ "cuEventSynchronize", APX_SYNC_KIND_EVENT },
	};
	size_t n = strcspn(api, "_");	/* cuStreamSynchronize_v2, ..._ptsz */

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].name) == n && !strncmp(api, t[i].name, n))
			return t[i].kind;
	return APX_SYNC_KIND_UNKNOWN;
}

int apx_kname_api_async(const char *api)
{
	if (!strstr(api, "Memcpy") && !strstr(api, "Memset"))
		return -1;
	return strstr(api, "Async") != NULL;
}
