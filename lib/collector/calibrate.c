/*
 * calibrate.c - apx-calibrate: measures what one kernel launch costs the host, in a process of
 * its own. `apx analyze` runs it twice before the program, once plain and once with the
 * collector injected (same level and kinds), and hands the difference to the collector
 * (APX_LAUNCH_COST_NS), which writes it into the trace as collector_launch_cost_ns: the
 * analysis subtracts it from every launch gap (a launch-bound program's gaps grow by the
 * collector's cost per launch).
 *
 * Method: an empty kernel (PTX of calib_kernels.h, JIT-compiled by the driver) is launched BLOCK
 * times while the stream is held by a spinning kernel, so the GPU never throttles the launches;
 * the host time of the launch loop over BLOCK is one sample; the median of REPS samples is
 * printed as "launch_ns N". Needs only libcuda (dlopen'ed). Exit 2 when there is no CUDA
 * driver or GPU, 1 when the calibration itself failed (with a message either way).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "base/clock.h"
#include "collector/calib_kernels.h"

#include "base/banned.h"

#define BLOCK 400
#define REPS 9
#define SPIN_NS 20000000ull	/* 20 ms: longer than BLOCK launches take */

static const char ptx[] = APX_CALIB_PTX("apx_empty", "apx_spin");

/* none of these has a _v2 variant: the plain symbol is the current ABI */
#define SYM(name) (name##_fn = (name##_t)dlsym(lib, #name))

int main(void)
{
	typedef CUresult (*cuInit_t)(unsigned);
	typedef CUresult (*cuDeviceGet_t)(CUdevice *, int);
	typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *, CUdevice);
	typedef CUresult (*cuCtxSetCurrent_t)(CUcontext);
	typedef CUresult (*cuModuleLoadData_t)(CUmodule *, const void *);
	typedef CUresult (*cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *);
	typedef CUresult (*cuStreamCreate_t)(CUstream *, unsigned);
	typedef CUresult (*cuStreamSynchronize_t)(CUstream);
	typedef CUresult (*cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned,
					     unsigned, unsigned, unsigned, CUstream, void **, void **);
	cuInit_t cuInit_fn;
	cuDeviceGet_t cuDeviceGet_fn;
	cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain_fn;
	cuCtxSetCurrent_t cuCtxSetCurrent_fn;
	cuModuleLoadData_t cuModuleLoadData_fn;
	cuModuleGetFunction_t cuModuleGetFunction_fn;
	cuStreamCreate_t cuStreamCreate_fn;
	cuStreamSynchronize_t cuStreamSynchronize_fn;
	cuLaunchKernel_t cuLaunchKernel_fn;
	uint64_t samples[REPS], lim = SPIN_NS;
	void *spin_args[] = { &lim };
	CUfunction empty, spin;
	CUcontext ctx;
	CUmodule mod;
	CUstream s;
	CUdevice dev;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "apx-calibrate: no CUDA driver (libcuda.so.1)\n");
		return 2;
	}
	SYM(cuInit);
	SYM(cuDeviceGet);
	SYM(cuDevicePrimaryCtxRetain);
	SYM(cuCtxSetCurrent);
	SYM(cuModuleLoadData);
	SYM(cuModuleGetFunction);
	SYM(cuStreamCreate);
	SYM(cuStreamSynchronize);
	SYM(cuLaunchKernel);
	if (!cuInit_fn || !cuDeviceGet_fn || !cuDevicePrimaryCtxRetain_fn || !cuCtxSetCurrent_fn ||
	    !cuModuleLoadData_fn || !cuModuleGetFunction_fn || !cuStreamCreate_fn ||
	    !cuStreamSynchronize_fn || !cuLaunchKernel_fn) {
		fprintf(stderr, "apx-calibrate: the CUDA driver lacks a function it needs\n");
		return 1;
	}
	if (cuInit_fn(0) || cuDeviceGet_fn(&dev, 0) || cuDevicePrimaryCtxRetain_fn(&ctx, dev) ||
	    cuCtxSetCurrent_fn(ctx) || cuModuleLoadData_fn(&mod, ptx) ||
	    cuModuleGetFunction_fn(&empty, mod, "apx_empty") ||
	    cuModuleGetFunction_fn(&spin, mod, "apx_spin") ||
	    cuStreamCreate_fn(&s, CU_STREAM_NON_BLOCKING)) {
		fprintf(stderr, "apx-calibrate: no usable CUDA GPU\n");
		return 2;
	}
	for (int i = 0; i < BLOCK; i++)		/* warm-up */
		(void)cuLaunchKernel_fn(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
	(void)cuStreamSynchronize_fn(s);
	for (int r = 0; r < REPS; r++) {
		uint64_t t0;

		(void)cuLaunchKernel_fn(spin, 1, 1, 1, 1, 1, 1, 0, s, spin_args, NULL);
		t0 = apx_clock_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < BLOCK; i++)
			(void)cuLaunchKernel_fn(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
		samples[r] = (apx_clock_ns(CLOCK_MONOTONIC) - t0) / BLOCK;
		if (cuStreamSynchronize_fn(s)) {
			fprintf(stderr, "apx-calibrate: the GPU failed the calibration kernels\n");
			return 1;
		}
	}
	printf("launch_ns %llu\n", (unsigned long long)apx_calib_median(samples, REPS));
	return 0;
}
