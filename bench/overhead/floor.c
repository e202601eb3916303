/*
 * floor.c - libapx-floor.so, the benchmark's floor (bench only, never installed): the least a
 * CUPTI activity collector can cost. Loaded like the collector through CUDA_INJECTION64_PATH,
 * it enables the activity kinds named in APX_FLOOR_KINDS (default "kernel,memcpy,memset": what
 * the collector's light level needs from CUPTI at least) and throws every completed buffer
 * away without reading it. Buffers are handled as the collector handles them, so that only
 * the processing differs: a pool of 4 MiB buffers mapped and touched at start (no page faults
 * on the application thread), handed out pre-zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_
 * BUFFER), zeroed again on completion (on CUPTI's thread) and reused.
 *
 * Variants, to price CUPTI features and settings apart from apx's own work (run.py's floor-*
 * modes): APX_FLOOR_CLOCK=1 registers a CLOCK_MONOTONIC timestamp callback, APX_FLOOR_ATTRS=1
 * enables launch attributes, APX_FLOOR_PINNED=1 puts CUPTI's GPU-side timestamp buffers in
 * pinned host memory, APX_FLOOR_SHARED=1 turns CUPTI 13's per-thread activity buffers off.
 * APX_FLOOR_KINDS=none enables no kind at all (run.py's cupti-idle and cupti-loaded modes: CUPTI
 * loaded and, with the capture callbacks, subscribed, collecting nothing).
 * APX_FLOOR_CAPTURE=1 follows cudaProfilerStart/Stop as `apx analyze
 * --capture-range=cudaProfilerApi` does (kinds off until a start; a subscriber with those two
 * callbacks, switching the kinds), so that run.py can alternate collected and uncollected
 * blocks in one process. run.py compares apx with it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "base/banned.h"

#define BUF_BYTES (4u << 20)
#define NBUFS 16u

static uint8_t *pool;
static _Atomic uint32_t free_mask = (1ull << NBUFS) - 1;	/* bit i: buffer i is free */

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint32_t m = atomic_load(&free_mask);

	*max_records = 0;
	*buffer = NULL;
	*size = 0;
	while (m) {
		unsigned i = (unsigned)__builtin_ctz(m);

		if (atomic_compare_exchange_weak(&free_mask, &m, m & ~(1u << i))) {
			*buffer = pool + (size_t)i * BUF_BYTES;
			*size = BUF_BYTES;
			return;
		}
	}
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
			       size_t valid)
{
	size_t i;

	(void)ctx;
	(void)stream;
	(void)size;
	if (!buffer || buffer < pool || buffer >= pool + (size_t)NBUFS * BUF_BYTES)
		return;
	i = (size_t)(buffer - pool) / BUF_BYTES;
	memset(buffer, 0, valid);
	atomic_fetch_or(&free_mask, 1u << i);
}

static uint64_t CUPTIAPI mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static CUpti_ActivityKind enabled[16];
static size_t nenabled;

static void set_kinds(int on)
{
	for (size_t i = 0; i < nenabled; i++)
		(void)(on ? cuptiActivityEnable(enabled[i]) : cuptiActivityDisable(enabled[i]));
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
				 const void *data)
{
	const CUpti_CallbackData *cb = data;

	(void)ud;
	if (dom != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && cb->callbackSite == CUPTI_API_EXIT)
		set_kinds(1);
	else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop &&
		 cb->callbackSite == CUPTI_API_ENTER)
		set_kinds(0);
}

static void at_exit(void)
{
	(void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static const struct {
	const char *name;
	CUpti_ActivityKind kind;
} kinds[] = {
	{ "kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL },
	{ "memcpy", CUPTI_ACTIVITY_KIND_MEMCPY },
	{ "p2p", CUPTI_ACTIVITY_KIND_MEMCPY2 },
	{ "memset", CUPTI_ACTIVITY_KIND_MEMSET },
	{ "memory", CUPTI_ACTIVITY_KIND_MEMORY2 },
	{ "sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION },
	{ "device", CUPTI_ACTIVITY_KIND_DEVICE },
	{ "runtime", CUPTI_ACTIVITY_KIND_RUNTIME },
	{ "driver", CUPTI_ACTIVITY_KIND_DRIVER },
};

__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	const char *spec = getenv("APX_FLOOR_KINDS");
	const char *clock = getenv("APX_FLOOR_CLOCK");
	const char *attrs = getenv("APX_FLOOR_ATTRS");
	const char *capture = getenv("APX_FLOOR_CAPTURE");
	char buf[256];

	if (!spec || !*spec)
		spec = "kernel,memcpy,memset";
	uint8_t zeroed = 1;
	size_t zsz = sizeof(zeroed);

	pool = mmap(NULL, (size_t)NBUFS * BUF_BYTES, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (pool == MAP_FAILED)
		return 1;
	(void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsz, &zeroed);
	if (getenv("APX_FLOOR_PINNED") && !strcmp(getenv("APX_FLOOR_PINNED"), "1"))
		/* the kernels' GPU-side timestamp buffers in pinned host memory, not device memory */
		(void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED,
						&zsz, &zeroed);
	if (getenv("APX_FLOOR_SHARED") && !strcmp(getenv("APX_FLOOR_SHARED"), "1")) {
		uint8_t per_thread = 0;

		/* one set of activity buffers for all threads instead of CUPTI 13's per-thread ones */
		(void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &zsz,
						&per_thread);
	}
	if (clock && !strcmp(clock, "1"))
		(void)cuptiActivityRegisterTimestampCallback(mono);
	if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS)
		return 1;
	if (attrs && !strcmp(attrs, "1"))
		(void)cuptiActivityEnableLaunchAttributes(1);
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *save = NULL, *name = strtok_r(buf, ",", &save); name;
	     name = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(name, kinds[i].name) && nenabled < 16)
				enabled[nenabled++] = kinds[i].kind;
	if (capture && !strcmp(capture, "1")) {
		CUpti_SubscriberHandle sub;

		if (cuptiSubscribe(&sub, on_callback, NULL) != CUPTI_SUCCESS ||
		    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
					CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) != CUPTI_SUCCESS ||
		    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
					CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) != CUPTI_SUCCESS) {
			fprintf(stderr, "libapx-floor: cannot follow cudaProfilerStart/Stop\n");
			return 1;
		}
	} else {
		set_kinds(1);
	}
	atexit(at_exit);
	return 1;
}
