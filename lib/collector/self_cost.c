/*
 * self_cost.c - the collector's cost per kernel launch, measured inside the traced process
 * (kv collector_launch_cost_self_ns), for the analysis to take off launch gaps. apx analyze's
 * apx-calibrate measures it in processes of its own before the program (kv
 * collector_launch_cost_ns), but on the H200 machine processes run at speeds up to 1.8x apart
 * and that value came out 884, 1,757 and 2,630 ns on three start-ups: a launch costs more in a
 * slow process, collector included, and only this process says what it costs here.
 *
 * Called by src_callbacks.c's context-creation callback, on the thread creating the process's
 * first context, before the program can launch anything on it. With the context current: an
 * empty kernel and a spinning one are loaded from PTX into it (the driver compiles them), a
 * stream of its own created; then blocks of BLOCK empty launches, queued behind the spinning
 * kernel (so that the host's time is the launch call's, never the GPU's), timed on the host
 * with the collector's per-launch work on and off: the kernel records (cuptiActivityDisable of
 * the kernel kind) and, when Python stacks are taken at launches, the cuLaunchKernel callback
 * that takes them (CUPTI's callback dispatch and the stack walk, per-launch work of the
 * collector as much as the records), REPS blocks each, alternating. The
 * difference of the medians, per launch, is the cost. The kernels of apx's stream are dropped
 * by the encoder (apx_enc_drop_stream). It takes about 0.1 s of the start (2 x REPS spins of
 * SPIN_NS).
 *
 * Not measured (the trace keeps apx-calibrate's value): at the api level (other records per
 * launch), with --replay (launch callbacks replay kernels), a capture range or a time window
 * (the kernel records start off), APX_OFF=self-cost, or when a step fails (said once).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>

#include "collector/calib_kernels.h"
#include "collector/collector.h"

#include "base/banned.h"

#define BLOCK 400			/* launches a timed block */
#define REPS 7				/* blocks each way */
#define SPIN_NS 8000000ull		/* 8 ms: longer than BLOCK launches take */

static const char ptx[] = APX_CALIB_PTX("apx_self_empty", "apx_self_spin");

typedef CUresult (*push_t)(CUcontext);
typedef CUresult (*pop_t)(CUcontext *);
typedef CUresult (*load_t)(CUmodule *, const void *);
typedef CUresult (*unload_t)(CUmodule);
typedef CUresult (*getfn_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*mkstream_t)(CUstream *, unsigned);
typedef CUresult (*stream_t)(CUstream);
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			     unsigned, unsigned, CUstream, void **, void **);

static struct {
	push_t push;
	pop_t pop;
	load_t load;
	unload_t unload;
	getfn_t getfn;
	mkstream_t mkstream;
	stream_t destroy, sync;
	launch_t launch;
	CUfunction empty, spin;
	CUstream stream;
} d;

static _Atomic int tried;
static _Atomic uint64_t cost_ns, on_ns, off_ns;	/* the result and the medians, ns a launch */
static _Atomic int with_stacks;			/* the off blocks had the stack callback off */

static int syms(void)
{
	d.push = (push_t)apx_cuda_sym("cuCtxPushCurrent_v2");
	d.pop = (pop_t)apx_cuda_sym("cuCtxPopCurrent_v2");
	d.load = (load_t)apx_cuda_sym("cuModuleLoadData");
	d.unload = (unload_t)apx_cuda_sym("cuModuleUnload");
	d.getfn = (getfn_t)apx_cuda_sym("cuModuleGetFunction");
	d.mkstream = (mkstream_t)apx_cuda_sym("cuStreamCreate");
	d.destroy = (stream_t)apx_cuda_sym("cuStreamDestroy_v2");
	d.sync = (stream_t)apx_cuda_sym("cuStreamSynchronize");
	d.launch = (launch_t)apx_cuda_sym("cuLaunchKernel");
	return d.push && d.pop && d.load && d.unload && d.getfn && d.mkstream && d.destroy &&
	       d.sync && d.launch ? 0 : -1;
}

/* One block: the spinning kernel, then BLOCK empty launches timed; ns a launch, 0 on failure. */
static uint64_t block(void)
{
	uint64_t lim = SPIN_NS, t0, t1;
	void *args[1] = { &lim };

	if (d.launch(d.spin, 1, 1, 1, 1, 1, 1, 0, d.stream, args, NULL) != CUDA_SUCCESS)
		return 0;
	t0 = apx_mono_ns();
	for (int i = 0; i < BLOCK; i++)
		if (d.launch(d.empty, 1, 1, 1, 1, 1, 1, 0, d.stream, NULL, NULL) != CUDA_SUCCESS)
			return 0;
	t1 = apx_mono_ns();
	if (d.sync(d.stream) != CUDA_SUCCESS)
		return 0;
	return (t1 - t0) / BLOCK ? (t1 - t0) / BLOCK : 1;
}

/* The timed blocks, on and off alternating (on, off, off, on, ...); the kernel records (and
 * the launch's Python-stack callback, where it is on) are on again when it returns, whatever
 * happened. Why not, or NULL. */
static const char *measure(struct apx_collector *c)
{
	uint64_t on[REPS], off[REPS], on_med, off_med;
	size_t non = 0, noff = 0;

	if (!block())					/* warm-up: module, stream, queue */
		return "a launch on apx's stream failed";
	for (int i = 0; i < 2 * REPS; i++) {
		int is_on = (i & 1) == ((i >> 1) & 1), cb = 0;
		uint64_t ns;

		if (!is_on && cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) !=
				      CUPTI_SUCCESS)
			return "the kernel records could not be switched off";
		if (!is_on && (cb = apx_callbacks_launch_stacks(c, 0)) < 0)
			cb = 0;		/* measured with the callback on: records only */
		ns = block();
		if (cb > 0 && apx_callbacks_launch_stacks(c, 1) < 0) {
			(void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
			return "the launch's Python-stack callback could not be switched on again "
			       "(launches carry no stack from here on)";
		}
		if (cb > 0)
			atomic_store(&with_stacks, 1);
		if (!is_on && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) !=
				      CUPTI_SUCCESS)
			return "the kernel records could not be switched on again (kernels are "
			       "missing from the trace)";
		if (!ns)
			return "a launch on apx's stream failed";
		if (is_on)
			on[non++] = ns;
		else
			off[noff++] = ns;
	}
	on_med = apx_calib_median(on, non);
	off_med = apx_calib_median(off, noff);
	atomic_store(&on_ns, on_med);
	atomic_store(&off_ns, off_med);
	if (on_med <= off_med)
		return "the kernel records' cost did not show above the blocks' noise";
	atomic_store(&cost_ns, on_med - off_med);
	return NULL;
}

void apx_self_cost_context(struct apx_collector *c, CUcontext ctx)
{
	uint32_t cid = 0, sid = 0;
	CUmodule mod = NULL;
	CUcontext prev;
	const char *why = NULL;
	CUresult r;

	if (atomic_exchange(&tried, 1) || (c->off & APX_F_SELF_COST) || !(c->kinds & APX_K_KERNEL) ||
	    c->api_level || c->win_start_ns || apx_capture_mode() || apx_replay_wanted() ||
	    apx_attached() || !atomic_load(&c->enabled))
		return;
	if (syms()) {
		apx_degraded(c, "self-cost: the driver's calls were not found; launch gaps are "
			     "corrected by apx-calibrate's value", 0);
		return;
	}
	if ((r = d.push(ctx)) != CUDA_SUCCESS) {
		apx_degraded_cuda(c, "self-cost: the new context could not be made current; launch "
				  "gaps are corrected by apx-calibrate's value", (int)r);
		return;
	}
	if ((r = d.load(&mod, ptx)) != CUDA_SUCCESS ||
	    (r = d.getfn(&d.empty, mod, "apx_self_empty")) != CUDA_SUCCESS ||
	    (r = d.getfn(&d.spin, mod, "apx_self_spin")) != CUDA_SUCCESS)
		why = "self-cost: its kernels did not load";
	else if ((r = d.mkstream(&d.stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
		why = "self-cost: no stream of its own";
	else if (cuptiGetContextId(ctx, &cid) != CUPTI_SUCCESS ||
		 cuptiGetStreamIdEx(ctx, d.stream, 0, &sid) != CUPTI_SUCCESS) {
		why = "self-cost: its stream's id is unknown";
		r = CUDA_SUCCESS;
	}
	if (!why) {
		apx_enc_drop_stream(cid, sid);
		why = measure(c);
		r = CUDA_SUCCESS;
	}
	if (d.stream) {
		(void)d.sync(d.stream);
		(void)d.destroy(d.stream);
	}
	if (mod)
		(void)d.unload(mod);
	(void)d.pop(&prev);
	if (why) {
		static char text[200];

		snprintf(text, sizeof(text), "%s; launch gaps are corrected by apx-calibrate's "
			 "value", why);
		apx_degraded_cuda(c, text, (int)r);
	}
}

/* Writer thread, at the end: the result (and the medians it came from). */
static void self_cost_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[200];

	(void)now_ns;
	if (!atomic_load(&on_ns))
		return;
	snprintf(text, sizeof(text), "%llu ns a launch with kernel records%s, %llu without (medians "
		 "of %d blocks of %d launches each)", (unsigned long long)atomic_load(&on_ns),
		 atomic_load(&with_stacks) ? " and the Python-stack callback" : "",
		 (unsigned long long)atomic_load(&off_ns), REPS, BLOCK);
	apx_add_kv(c, "collector_launch_cost_self", text);
	if (atomic_load(&cost_ns)) {
		snprintf(text, sizeof(text), "%llu", (unsigned long long)atomic_load(&cost_ns));
		apx_add_kv(c, "collector_launch_cost_self_ns", text);
	}
}

const struct apx_source apx_source_self_cost = {
	.name = "self-cost",
	.finish = self_cost_finish,
};
