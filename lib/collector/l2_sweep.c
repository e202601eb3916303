/*
 * l2_sweep.c - `apx analyze --replay --replay-flush`: before a one-pass launch (the launch after
 * a replayed one, whose DRAM counters src_replay.c measures in one pass), a kernel of apx's
 * own reads a device buffer of three times the L2 size on the launch's stream, so that the
 * launch starts with no dirty line of earlier kernels in L2 and none of the program's data in
 * it, as after ncu's flush (--cache-control all). Called by src_replay.c on the launching
 * application thread, only for those launches.
 *
 * Per context, once: the kernel is loaded from PTX (the driver compiles it) and the buffer
 * allocated (3 x L2 bytes of device memory for the rest of the run: the trace shows the
 * allocation and the `apx_l2_sweep` kernels). Driver entry points come from the program's
 * libcuda (cuda_sym.c). The calls it makes re-enter CUPTI's callbacks on this thread:
 * apx_l2_sweeping() tells the replay source to leave them alone. Any failure turns the flush
 * off for the context and says so once; the replay goes on without it.
 */
#include <stdint.h>

#include <cuda.h>

#include "collector/collector.h"

#include "base/banned.h"

#define SWEEP_CONTEXTS 32

/* Reads n16 16-byte words from buf through L2 (ld.global.cg: cached in L2, not L1) and
 * stores their xor only if it equals a value it practically never does (the loads stay). */
static const char sweep_ptx[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	".visible .entry apx_l2_sweep(.param .u64 buf, .param .u64 n16)\n"
	"{\n"
	"  .reg .pred p;\n"
	"  .reg .b32 r<10>;\n"
	"  .reg .b64 d<10>;\n"
	"  ld.param.u64 d1, [buf];\n"
	"  ld.param.u64 d2, [n16];\n"
	"  mov.u32 r1, %ctaid.x;\n"
	"  mov.u32 r2, %ntid.x;\n"
	"  mov.u32 r3, %tid.x;\n"
	"  mov.u32 r4, %nctaid.x;\n"
	"  mul.wide.u32 d3, r1, r2;\n"
	"  cvt.u64.u32 d4, r3;\n"
	"  add.u64 d3, d3, d4;\n"
	"  mul.wide.u32 d5, r4, r2;\n"
	"  mov.u32 r5, 0;\n"
	"LOOP:\n"
	"  setp.ge.u64 p, d3, d2;\n"
	"  @p bra DONE;\n"
	"  shl.b64 d6, d3, 4;\n"
	"  add.u64 d7, d1, d6;\n"
	"  ld.global.cg.v4.u32 {r6, r7, r8, r9}, [d7];\n"
	"  xor.b32 r5, r5, r6;\n"
	"  xor.b32 r5, r5, r7;\n"
	"  xor.b32 r5, r5, r8;\n"
	"  xor.b32 r5, r5, r9;\n"
	"  add.u64 d3, d3, d5;\n"
	"  bra LOOP;\n"
	"DONE:\n"
	"  setp.ne.u32 p, r5, 1515870810;\n"
	"  @p bra END;\n"
	"  st.global.u32 [d1], r5;\n"
	"END:\n"
	"  ret;\n"
	"}\n";

typedef CUresult (*load_t)(CUmodule *, const void *);
typedef CUresult (*getfn_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			     unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*attr_t)(int *, CUdevice_attribute, CUdevice);

static struct sweep_ctx {
	_Atomic(CUcontext) ctx;
	int state;			/* 0 not tried, 1 ready, -1 off (owner thread only) */
	CUfunction fn;
	CUdeviceptr buf;
	uint64_t n16;
} sweeps[SWEEP_CONTEXTS];

static __thread int sweeping;

int apx_l2_sweeping(void)
{
	return sweeping;
}

static struct sweep_ctx *slot_of(CUcontext ctx)
{
	for (size_t i = 0; i < SWEEP_CONTEXTS; i++) {
		CUcontext none = NULL;

		if (atomic_load(&sweeps[i].ctx) == ctx)
			return &sweeps[i];
		if (atomic_compare_exchange_strong(&sweeps[i].ctx, &none, ctx))
			return &sweeps[i];
	}
	return NULL;
}

/* 0, or why not (a static text for apx_degraded) and the CUDA error in *err. */
static const char *prepare(struct sweep_ctx *s, uint32_t device, int *err)
{
	load_t load = (load_t)apx_cuda_sym("cuModuleLoadData");
	getfn_t getfn = (getfn_t)apx_cuda_sym("cuModuleGetFunction");
	alloc_t alloc = (alloc_t)apx_cuda_sym("cuMemAlloc_v2");
	attr_t attr = (attr_t)apx_cuda_sym("cuDeviceGetAttribute");
	CUmodule mod;
	int l2 = 0;
	CUresult r;

	*err = 0;
	if (!load || !getfn || !alloc || !attr)
		return "replay: no L2 flush before replays: the driver's module and memory calls "
		       "were not found";
	if ((r = attr(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, (CUdevice)device)) != CUDA_SUCCESS ||
	    l2 <= 0) {
		*err = (int)r;
		return "replay: no L2 flush before replays: the L2 size could not be read";
	}
	if ((r = load(&mod, sweep_ptx)) != CUDA_SUCCESS ||
	    (r = getfn(&s->fn, mod, "apx_l2_sweep")) != CUDA_SUCCESS) {
		*err = (int)r;
		return "replay: no L2 flush before replays: its kernel did not load";
	}
	s->n16 = 3ull * (uint64_t)l2 / 16;
	if ((r = alloc(&s->buf, (size_t)(s->n16 * 16))) != CUDA_SUCCESS) {
		*err = (int)r;
		return "replay: no L2 flush before replays: no device memory for its buffer (3 x L2)";
	}
	return NULL;
}

int apx_l2_sweep(struct apx_collector *c, CUcontext ctx, uint32_t device, CUstream stream)
{
	static _Atomic(launch_t) launch_sym;	/* a race only looks it up twice */
	launch_t launch = atomic_load(&launch_sym);
	struct sweep_ctx *s = slot_of(ctx);

	if (!launch) {
		launch = (launch_t)apx_cuda_sym("cuLaunchKernel");
		atomic_store(&launch_sym, launch);
	}
	const char *why;
	void *args[2];
	int err;
	CUresult r;

	if (!s || s->state < 0 || !launch)
		return -1;
	sweeping = 1;
	if (!s->state) {
		why = prepare(s, device, &err);
		s->state = why ? -1 : 1;
		if (why) {
			sweeping = 0;
			apx_degraded_cuda(c, why, err);
			return -1;
		}
	}
	args[0] = &s->buf;
	args[1] = &s->n16;
	r = launch(s->fn, 1024, 1, 1, 256, 1, 1, 0, stream, args, NULL);
	sweeping = 0;
	if (r != CUDA_SUCCESS) {
		s->state = -1;
		apx_degraded_cuda(c, "replay: the L2 flush kernel did not launch; replays go on "
				  "without it", (int)r);
		return -1;
	}
	return 0;
}
