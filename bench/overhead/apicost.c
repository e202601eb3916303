/*
 * apicost.c - apx-apicost (bench only, never installed): the host time of the CUDA calls an
 * eager PyTorch op makes (the runtime's device and error getters, capture and stream queries,
 * an event record, a kernel launch) and of the allocator's cudaMalloc/cudaFree pairs (a
 * program that calls empty_cache() runs 1.32x slower traced: tests/fixtures/suite/facts.json,
 * varlen_server), each timed alone in a loop, so that run on its own and
 * under a CUPTI injection (bench/overhead/apicost.sh: none, CUPTI loaded with nothing on, a
 * subscriber of two callbacks, the floor's kinds, the collector) it shows which calls being
 * attached makes dearer. A traced process's paused blocks ran 1.29x slower than an unprofiled
 * one on a per-tensor optimizer loop (bench/RESULTS.md, "what being attached costs"), while
 * the launch alone got only 0.8-2.2 us dearer.
 *
 * Method: a spinning kernel holds the stream (the GPU never throttles the launches), each call
 * runs BLOCK times between two clock reads, REPS times; the median ns a call is printed as
 * "CALL NS". The runtime is linked statically (its calls reach the driver as PyTorch's do);
 * the kernels are PTX loaded through the driver. APX_APICOST_TOGGLE=1 collects one block first
 * and times the calls paused (toggle() below). Exit 2 without a GPU, 1 when a call failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "base/clock.h"
#include "collector/calib_kernels.h"

#include "base/banned.h"

#define BLOCK 400	/* as apx-calibrate: far below the launch queue's depth */
#define REPS 15
#define SPIN_NS 20000000ull	/* 20 ms: longer than any block of calls takes */

static const char ptx[] = APX_CALIB_PTX("apx_empty", "apx_spin");

enum call { GET_DEVICE, GET_LAST_ERROR, IS_CAPTURING, STREAM_QUERY, EVENT_RECORD,
	    CTX_GET_CURRENT, LAUNCH, MALLOC_FREE_2M, MALLOC_FREE_64M, CALL__COUNT };

static const char *const call_names[CALL__COUNT] = {
	"cudaGetDevice", "cudaGetLastError", "cudaStreamIsCapturing", "cudaStreamQuery",
	"cudaEventRecord", "cuCtxGetCurrent", "cuLaunchKernel", "cudaMalloc+Free(2MiB)",
	"cudaMalloc+Free(64MiB)",
};

/* The allocator's pairs: PyTorch's caching allocator calls cudaMalloc on a cache miss (2 MiB
 * segments for small blocks, larger ones for the rest) and cudaFree after empty_cache(); a
 * cudaFree waits for the device, so these are timed on an idle GPU, ALLOC_BLOCK pairs a
 * block. */
#define ALLOC_BLOCK 40

static int alloc_call(enum call c)
{
	return c == MALLOC_FREE_2M || c == MALLOC_FREE_64M;
}

struct gpu {
	cudaStream_t s;
	cudaEvent_t ev;
	CUfunction empty, spin;
};

/* One call once; nonzero when it failed (a query that answers "not ready" did not fail). */
static int once(enum call c, const struct gpu *g)
{
	enum cudaStreamCaptureStatus cap;
	cudaError_t e;
	CUcontext ctx;
	void *p;
	int dev;

	switch (c) {
	case GET_DEVICE:
		return cudaGetDevice(&dev) != cudaSuccess;
	case GET_LAST_ERROR:
		return cudaGetLastError() != cudaSuccess;
	case IS_CAPTURING:
		return cudaStreamIsCapturing(g->s, &cap) != cudaSuccess;
	case STREAM_QUERY:
		e = cudaStreamQuery(g->s);
		return e != cudaSuccess && e != cudaErrorNotReady;
	case EVENT_RECORD:
		return cudaEventRecord(g->ev, g->s) != cudaSuccess;
	case CTX_GET_CURRENT:
		return cuCtxGetCurrent(&ctx) != CUDA_SUCCESS;
	case LAUNCH:
		return cuLaunchKernel(g->empty, 1, 1, 1, 32, 1, 1, 0, (CUstream)g->s, NULL,
				      NULL) != CUDA_SUCCESS;
	case MALLOC_FREE_2M:
	case MALLOC_FREE_64M:
		if (cudaMalloc(&p, (c == MALLOC_FREE_2M ? 2u : 64u) << 20) != cudaSuccess)
			return 1;
		return cudaFree(p) != cudaSuccess;
	default:
		return 1;
	}
}

/* The median ns of one call over REPS blocks, each behind a spinning kernel (the allocator's
 * pairs: on an idle GPU); 0 on failure. */
static uint64_t time_call(enum call c, const struct gpu *g)
{
	uint64_t samples[REPS], lim = SPIN_NS;
	void *args[] = { &lim };
	int block = alloc_call(c) ? ALLOC_BLOCK : BLOCK;

	for (int r = 0; r < REPS; r++) {
		uint64_t t0;
		int bad = 0;

		if (!alloc_call(c) &&
		    cuLaunchKernel(g->spin, 1, 1, 1, 1, 1, 1, 0, (CUstream)g->s, args, NULL))
			return 0;
		t0 = apx_clock_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < block; i++)
			bad |= once(c, g);
		samples[r] = (apx_clock_ns(CLOCK_MONOTONIC) - t0) / (uint64_t)block;
		(void)cudaGetLastError();	/* a "not ready" left by the queries */
		if (bad || cudaStreamSynchronize(g->s) != cudaSuccess)
			return 0;
	}
	return apx_calib_median(samples, REPS);
}

/* APX_APICOST_TOGGLE=1: one collected block before the measurement (cudaProfilerStart, BLOCK
 * launches, cudaProfilerStop), so that a profiler following the capture range (the floor's
 * APX_FLOOR_CAPTURE=1, apx analyze --capture-range=cudaProfilerApi) has had its activity kinds
 * on once and is paused while the calls are timed: what a paused block of run.py's in-process
 * pairs is. Nonzero when a call failed. */
static int toggle(const struct gpu *g)
{
	int bad = cudaProfilerStart() != cudaSuccess;

	for (int i = 0; i < BLOCK; i++)
		bad |= once(LAUNCH, g);
	bad |= cudaStreamSynchronize(g->s) != cudaSuccess;
	bad |= cudaProfilerStop() != cudaSuccess;
	return bad;
}

int main(void)
{
	struct gpu g;
	CUmodule mod;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1 || cudaSetDevice(0) != cudaSuccess ||
	    cudaFree(NULL) != cudaSuccess) {
		fprintf(stderr, "apx-apicost: no usable CUDA GPU\n");
		return 2;
	}
	if (cuModuleLoadData(&mod, ptx) ||
	    cuModuleGetFunction(&g.empty, mod, "apx_empty") ||
	    cuModuleGetFunction(&g.spin, mod, "apx_spin") ||
	    cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreateWithFlags(&g.ev, cudaEventDisableTiming) != cudaSuccess) {
		fprintf(stderr, "apx-apicost: cannot set up the kernels, stream and event\n");
		return 1;
	}
	if (getenv("APX_APICOST_TOGGLE") && !strcmp(getenv("APX_APICOST_TOGGLE"), "1") &&
	    toggle(&g)) {
		fprintf(stderr, "apx-apicost: cudaProfilerStart/Stop around the warm-up failed\n");
		return 1;
	}
	for (int c = 0; c < CALL__COUNT; c++) {
		uint64_t ns;

		for (int i = 0; i < (alloc_call((enum call)c) ? ALLOC_BLOCK : BLOCK); i++)
			(void)once((enum call)c, &g);		/* warm-up */
		(void)cudaStreamSynchronize(g.s);
		(void)cudaGetLastError();
		ns = time_call((enum call)c, &g);
		if (!ns) {
			fprintf(stderr, "apx-apicost: %s failed\n", call_names[c]);
			return 1;
		}
		printf("%s %llu\n", call_names[c], (unsigned long long)ns);
	}
	return 0;
}
