/*
 * apicost.c - apx-apicost (bench only, never installed): the host time of the CUDA calls an
 * eager PyTorch op makes (the runtime's device and error getters, capture and stream queries,
 * an event record, a kernel launch), each timed alone in a loop, so that run on its own and
 * under a CUPTI injection (bench/overhead/apicost.sh: none, CUPTI loaded with nothing on, a
 * subscriber of two callbacks, the floor's kinds, the collector) it shows which calls being
 * attached makes dearer. A traced process's paused blocks ran 1.29x slower than an unprofiled
 * one on a per-tensor optimizer loop (bench/RESULTS.md, "what being attached costs"), while
 * the launch alone got only 0.8-2.2 us dearer.
 *
 * Method: a spinning kernel holds the stream (the GPU never throttles the launches), each call
 * runs BLOCK times between two clock reads, REPS times; the median ns a call is printed as
 * "CALL NS". The runtime is linked statically (its calls reach the driver as PyTorch's do);
 * the kernels are PTX loaded through the driver. Exit 2 without a GPU, 1 when a call failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "base/banned.h"

#define BLOCK 400	/* as apx-calibrate: far below the launch queue's depth */
#define REPS 15
#define SPIN_NS 20000000ull	/* 20 ms: longer than any block of calls takes */

static const char ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry apx_empty()\n{\n\tret;\n}\n"
	".visible .entry apx_spin(.param .u64 lim)\n{\n"
	"\t.reg .u64 %t0, %t1, %d, %l;\n\t.reg .pred %p;\n"
	"\tld.param.u64 %l, [lim];\n\tmov.u64 %t0, %globaltimer;\n"
	"LOOP:\n\tmov.u64 %t1, %globaltimer;\n\tsub.u64 %d, %t1, %t0;\n"
	"\tsetp.lt.u64 %p, %d, %l;\n\t@%p bra LOOP;\n\tret;\n}\n";

enum call { GET_DEVICE, GET_LAST_ERROR, IS_CAPTURING, STREAM_QUERY, EVENT_RECORD,
	    CTX_GET_CURRENT, LAUNCH, CALL__COUNT };

static const char *const call_names[CALL__COUNT] = {
	"cudaGetDevice", "cudaGetLastError", "cudaStreamIsCapturing", "cudaStreamQuery",
	"cudaEventRecord", "cuCtxGetCurrent", "cuLaunchKernel",
};

struct gpu {
	cudaStream_t s;
	cudaEvent_t ev;
	CUfunction empty, spin;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One call once; nonzero when it failed (a query that answers "not ready" did not fail). */
static int once(enum call c, const struct gpu *g)
{
	enum cudaStreamCaptureStatus cap;
	cudaError_t e;
	CUcontext ctx;
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
	default:
		return 1;
	}
}

/* The median ns of one call over REPS blocks, each behind a spinning kernel; 0 on failure. */
static uint64_t time_call(enum call c, const struct gpu *g)
{
	uint64_t samples[REPS], lim = SPIN_NS;
	void *args[] = { &lim };

	for (int r = 0; r < REPS; r++) {
		uint64_t t0;
		int bad = 0;

		if (cuLaunchKernel(g->spin, 1, 1, 1, 1, 1, 1, 0, (CUstream)g->s, args, NULL))
			return 0;
		t0 = mono_ns();
		for (int i = 0; i < BLOCK; i++)
			bad |= once(c, g);
		samples[r] = (mono_ns() - t0) / BLOCK;
		(void)cudaGetLastError();	/* a "not ready" left by the queries */
		if (bad || cudaStreamSynchronize(g->s) != cudaSuccess)
			return 0;
	}
	qsort(samples, REPS, sizeof(samples[0]), cmp_u64);
	return samples[REPS / 2];
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
	if (cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&g.empty, mod, "apx_empty") ||
	    cuModuleGetFunction(&g.spin, mod, "apx_spin") ||
	    cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreateWithFlags(&g.ev, cudaEventDisableTiming) != cudaSuccess) {
		fprintf(stderr, "apx-apicost: cannot set up the kernels, stream and event\n");
		return 1;
	}
	for (int c = 0; c < CALL__COUNT; c++) {
		uint64_t ns;

		for (int i = 0; i < BLOCK; i++)		/* warm-up */
			(void)once((enum call)c, &g);
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
