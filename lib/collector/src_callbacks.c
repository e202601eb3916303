/*
 * src_callbacks.c - the callback source: CUPTI API and resource callbacks on a few driver calls
 * (never a whole domain). Runs on application threads, inside the program's CUDA calls, so it
 * allocates nothing, takes no lock and does no I/O; it writes the correlation side table or
 * the event ring and returns.
 *
 *   - host<->device copies (cuMemcpy*): host address and size, and the call's enter and exit
 *     times (two clock reads), and for a cuMemcpyHtoD* call that succeeded a fingerprint of
 *     the source's bytes (copy_fp.c: a few cache lines the driver has just read), joined by
 *     the writer to the MEMCPY activity record by correlation id;
 *   - host synchronizations (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize): one
 *     SYNC record each, timed at API enter and exit. This replaces CUPTI's SYNCHRONIZATION
 *     kind in `light`: that kind instruments every stream and event query and wait in the
 *     process, which costs far more than the waits it reports (docs/collector.md, "Cost");
 *   - L2 persistence: cuCtxSetLimit(PERSISTING_L2), cuCtxResetPersistingL2Cache, stream and
 *     graph-node access-policy windows, and (level api) windows given as launch attributes;
 *   - context creations: the first configures the unified-memory counters; each marks its
 *     device for PM sampling (src_pmsampling.c) and enables kernel replay on the context
 *     (src_replay.c) when they were asked for;
 *   - with --replay, every kernel launch (cuLaunchKernel[Ex]), handed to src_replay.c;
 *   - with --capture-range=cudaProfilerApi, cuProfilerStart/Stop, handed to capture.c;
 *   - allocation calls (cuMemAlloc_v2, cuMemHostAlloc, ...: alloc_calls.c), when allocation
 *     records are collected: their Python stack, and a record for each call that failed.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/collector.h"
#include "collector/copy_fp.h"
#include "collector/pystacks.h"

#include "base/banned.h"

static void ev_set_ctx(struct apx_event *ev, CUcontext ctx, CUstream stream)
{
	uint32_t id;

	if (ctx && cuptiGetDeviceId(ctx, &id) == CUPTI_SUCCESS)
		ev->device = id;
	if (ctx && cuptiGetContextId(ctx, &id) == CUPTI_SUCCESS)
		ev->context = id;
	if (ctx && stream && cuptiGetStreamIdEx(ctx, stream, 0, &id) == CUPTI_SUCCESS)
		ev->stream = id;
}

static void ev_set_window(struct apx_event *ev, const CUaccessPolicyWindow *w)
{
	ev->apw_base = (uint64_t)(uintptr_t)w->base_ptr;
	ev->apw_bytes = w->num_bytes;
	ev->apw_hit_ppm = (uint64_t)(w->hitRatio * 1e6f + 0.5f);
	ev->apw_hit = (uint32_t)w->hitProp;
	ev->apw_miss = (uint32_t)w->missProp;
}

static void hostptr_put(struct apx_collector *c, uint32_t corr, uint64_t src, uint64_t dst,
			uint64_t bytes)
{
	struct apx_hostptr_slot *s = &c->hp[corr & (APX_HOSTPTR_SLOTS - 1)];

	atomic_store_explicit(&s->corr, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->src, src, memory_order_relaxed);
	atomic_store_explicit(&s->dst, dst, memory_order_relaxed);
	atomic_store_explicit(&s->bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&s->enter_ns, apx_mono_ns(), memory_order_relaxed);
	atomic_store_explicit(&s->exit_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&s->host_fp, 0, memory_order_relaxed);
	atomic_store_explicit(&s->corr, corr, memory_order_release);
}

/*
 * The host source of a host->device copy call that returned CUDA_SUCCESS, or NULL: only the
 * explicit cuMemcpyHtoD* calls say that src is host memory (cuMemcpy[Async] take unified
 * addresses, which may be device memory the CPU cannot read), and only a call that succeeded
 * has shown the pointer to be a readable source of ByteCount bytes (the driver read them).
 */
static const void *h2d_source(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, uint64_t *bytes)
{
	if (!cb->functionReturnValue || *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return NULL;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2: {
		const cuMemcpyHtoD_v2_params *a = cb->functionParams;

		*bytes = a->ByteCount;
		return a->srcHost;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
		const cuMemcpyHtoDAsync_v2_params *a = cb->functionParams;

		*bytes = a->ByteCount;
		return a->srcHost;
	}
	default:
		return NULL;
	}
}

/* The copy call returns: the source's fingerprint (H2D) and the exit time, if the slot still
 * holds this copy. */
static void hostptr_exit(struct apx_collector *c, CUpti_CallbackId cbid,
			 const CUpti_CallbackData *cb)
{
	uint32_t corr = cb->correlationId;
	struct apx_hostptr_slot *s = &c->hp[corr & (APX_HOSTPTR_SLOTS - 1)];
	const void *src;
	uint64_t bytes = 0;

	if (atomic_load_explicit(&s->corr, memory_order_acquire) != corr)
		return;
	if ((src = h2d_source(cbid, cb, &bytes)) != NULL)
		atomic_store_explicit(&s->host_fp, apx_copy_fp(src, bytes), memory_order_relaxed);
	atomic_store_explicit(&s->exit_ns, apx_mono_ns(), memory_order_release);
}

/* The enter time of a host synchronization travels to its exit in CUPTI's correlationData. */
static void host_sync(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	struct apx_event *ev;
	CUstream stream = NULL;
	unsigned kind;
	uint64_t pos;

	if (!atomic_load_explicit(&c->enabled, memory_order_relaxed))
		return;		/* outside the --delay/--duration window, like the activity kinds */
	if (cb->callbackSite == CUPTI_API_ENTER) {
		*cb->correlationData = apx_mono_ns();
		return;
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
		kind = APX_SYNC_KIND_STREAM;
		stream = ((const cuStreamSynchronize_params *)p)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
		kind = APX_SYNC_KIND_EVENT;
		break;
	default:
		kind = APX_SYNC_KIND_DEVICE;
		break;
	}
	{
		uint32_t ptid;
		uint32_t stack = apx_pystack_here(&ptid);	/* the frames of the enter, still */

		ev = apx_ring_begin(c, &pos);
		ev->kind = APX_EV_SYNC;
		ev->cfg_kind = kind;
		ev->end_ns = ev->ts_ns;
		ev->ts_ns = *cb->correlationData ? *cb->correlationData : ev->end_ns;
		ev->corr = cb->correlationId;
		ev->tid = ptid ? ptid : (uint64_t)syscall(SYS_gettid);
		ev->target = stack;
		ev_set_ctx(ev, cb->context, stream);
		apx_ring_commit(ev, pos);
	}
}

static void on_copy(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	uint32_t corr = cb->correlationId;

	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2: {
		const cuMemcpyHtoD_v2_params *a = p;

		hostptr_put(c, corr, (uintptr_t)a->srcHost, a->dstDevice, a->ByteCount);
		return;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
		const cuMemcpyHtoDAsync_v2_params *a = p;

		hostptr_put(c, corr, (uintptr_t)a->srcHost, a->dstDevice, a->ByteCount);
		return;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2: {
		const cuMemcpyDtoH_v2_params *a = p;

		hostptr_put(c, corr, a->srcDevice, (uintptr_t)a->dstHost, a->ByteCount);
		return;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
		const cuMemcpyDtoHAsync_v2_params *a = p;

		hostptr_put(c, corr, a->srcDevice, (uintptr_t)a->dstHost, a->ByteCount);
		return;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
		const cuMemcpyAsync_params *a = p;

		hostptr_put(c, corr, a->src, a->dst, a->ByteCount);
		return;
	}
	default: {	/* cuMemcpy, cuMemcpy_ptds */
		const cuMemcpy_params *a = p;

		hostptr_put(c, corr, a->src, a->dst, a->ByteCount);
		return;
	}
	}
}

static void on_launch_ex(struct apx_collector *c, const CUpti_CallbackData *cb)
{
	const CUlaunchConfig *cfg = ((const cuLaunchKernelEx_params *)cb->functionParams)->config;

	for (unsigned i = 0; cfg && cfg->attrs && i < cfg->numAttrs; i++) {
		const CUlaunchAttribute *at = &cfg->attrs[i];
		struct apx_event *ev;
		uint64_t pos;

		if (at->id != CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW ||
		    !at->value.accessPolicyWindow.num_bytes)
			continue;
		ev = apx_ring_begin(c, &pos);
		ev->cfg_kind = APX_CONFIG_APW_LAUNCH;
		ev->corr = cb->correlationId;
		ev->tid = (uint64_t)syscall(SYS_gettid);
		ev_set_ctx(ev, cb->context, cfg->hStream);
		ev_set_window(ev, &at->value.accessPolicyWindow);
		apx_ring_commit(ev, pos);
	}
}

/* Configuration calls, recorded at API exit when they succeeded. */
static void on_config(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	struct apx_event *ev;
	uint64_t pos;

	if (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit: {
		const cuCtxSetLimit_params *a = p;

		if (a->limit != CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
			return;
		ev = apx_ring_begin(c, &pos);
		ev->cfg_kind = APX_CONFIG_L2_PERSIST_LIMIT;
		ev->value = a->value;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuCtxResetPersistingL2Cache:
		ev = apx_ring_begin(c, &pos);
		ev->cfg_kind = APX_CONFIG_L2_PERSIST_RESET;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetAttribute: {
		const cuGraphKernelNodeSetAttribute_params *a = p;

		if (a->attr != CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW || !a->value)
			return;
		ev = apx_ring_begin(c, &pos);
		ev->cfg_kind = APX_CONFIG_APW_GRAPH_NODE;
		ev->target = (uint64_t)(uintptr_t)a->hNode;
		ev_set_window(ev, &a->value->accessPolicyWindow);
		break;
	}
	default:
		return;
	}
	ev->corr = cb->correlationId;
	ev->tid = (uint64_t)syscall(SYS_gettid);
	ev_set_ctx(ev, cb->context, NULL);
	apx_ring_commit(ev, pos);
}

/* Launches are replayed only while collecting (outside a capture range they are not); an exit
 * always reaches the replay source, which closes a range its enter opened. */
static void replay_launch(struct apx_collector *c, CUpti_CallbackId cbid,
			  const CUpti_CallbackData *cb)
{
	if (cb->callbackSite == CUPTI_API_EXIT ||
	    atomic_load_explicit(&c->enabled, memory_order_relaxed))
		apx_replay_launch(cbid, cb);
}

static void on_driver(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
		host_sync(c, cbid, cb);
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
		if (cb->callbackSite == CUPTI_API_ENTER) {
			on_copy(c, cbid, cb);
			apx_pystack_at_call(cb->correlationId);
		} else {
			hostptr_exit(c, cbid, cb);
		}
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		if (cb->callbackSite == CUPTI_API_ENTER) {
			apx_pystack_at_call(cb->correlationId);
			if (c->api_level)
				on_launch_ex(c, cb);
		}
		if (apx_replay_wanted())
			replay_launch(c, cbid, cb);
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
		if (cb->callbackSite == CUPTI_API_ENTER)
			apx_pystack_at_call(cb->correlationId);
		if (apx_replay_wanted())
			replay_launch(c, cbid, cb);
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
		if (cb->callbackSite == CUPTI_API_ENTER)
			apx_pystack_at_call(cb->correlationId);
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
	case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
		apx_capture_callback(c, cbid, cb);
		return;
	default:
		/* allocation calls (apx_alloc_cbids) here, not as cases above: the launches'
		 * dispatch stays the compare chain it was (no jump table on their path) */
		if (apx_alloc_callback(c, cbid, cb))
			return;
		if (cb->callbackSite == CUPTI_API_EXIT)
			on_config(c, cbid, cb);
		return;
	}
}

static void on_resource(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
		uint32_t dev = 0;

		if (cuptiGetDeviceId(rd->context, &dev) != CUPTI_SUCCESS)
			return;
		if ((c->kinds & APX_K_UVM) && !atomic_load(&c->uvm_done))
			apx_activity_configure_uvm(c, dev);
		apx_pm_device_seen(dev, rd->context);
		apx_nvml_device_seen(dev);
		apx_replay_context(rd->context, dev);
		apx_self_cost_context(c, rd->context);
		return;
	}
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		uint32_t dev = 0;

		if (cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS)
			apx_pm_context_ending(c, dev);
		return;
	}
	if (cbid == CUPTI_CBID_RESOURCE_STREAM_ATTRIBUTE_CHANGED) {
		const CUpti_StreamAttrData *sa = rd->resourceDescriptor;
		struct apx_event *ev;
		uint64_t pos;

		if (!sa || sa->attr != CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW || !sa->value)
			return;
		ev = apx_ring_begin(c, &pos);
		ev->cfg_kind = APX_CONFIG_APW_STREAM;
		ev->tid = (uint64_t)syscall(SYS_gettid);
		ev_set_ctx(ev, rd->context, sa->stream);
		ev_set_window(ev, &sa->value->accessPolicyWindow);
		apx_ring_commit(ev, pos);
	}
}

/* CUPTI's callback entry; ud is the collector (given to cuptiSubscribe_v2 in inject.c). */
void CUPTIAPI apx_on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			      const void *data);
void CUPTIAPI apx_on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			      const void *data)
{
	struct apx_collector *c = ud;

	if (!c || atomic_load_explicit(&c->forked, memory_order_relaxed))
		return;
	if (atomic_load_explicit(&c->quiet, memory_order_relaxed)) {
		apx_attach_on_callback(dom, data);	/* apx attach's detach */
		return;
	}
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
		on_driver(c, cbid, data);
	else if (dom == CUPTI_CB_DOMAIN_RESOURCE)
		on_resource(c, cbid, data);
}

static const CUpti_CallbackId copy_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
};
static const CUpti_CallbackId config_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit, CUPTI_DRIVER_TRACE_CBID_cuCtxResetPersistingL2Cache,
	CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetAttribute,
};
static const CUpti_CallbackId sync_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
};
static const CUpti_CallbackId api_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};
/* the calls whose Python stack is kept (src_pystack.c), besides copies and syncs */
static const CUpti_CallbackId pystack_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};
static const CUpti_CallbackId launch_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

/* whether pystack_cbids were enabled (callbacks_start), for apx_callbacks_launch_stacks */
static int g_launch_stacks;

int apx_callbacks_launch_stacks(struct apx_collector *c, int on)
{
	if (!g_launch_stacks)
		return 0;
	return cuptiEnableCallback(on ? 1 : 0, c->sub, CUPTI_CB_DOMAIN_DRIVER_API,
				   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == CUPTI_SUCCESS ? 1 : -1;
}

static int enable_all(struct apx_collector *c, const CUpti_CallbackId *ids, size_t n,
		      const char *what)
{
	for (size_t i = 0; i < n; i++) {
		CUptiResult r = cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);

		if (r != CUPTI_SUCCESS) {
			apx_degraded(c, what, r);
			return -1;
		}
	}
	return 0;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int callbacks_start(struct apx_collector *c)
{
	CUptiResult r;

	if (c->off & APX_F_CALLBACKS)
		return -1;
	(void)cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE,
				  CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	(void)cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE,
				  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	r = cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE,
				CUPTI_CBID_RESOURCE_STREAM_ATTRIBUTE_CHANGED);
	if (r != CUPTI_SUCCESS)
		apx_degraded(c, "l2: stream access-policy windows not recorded", r);
	if (c->kinds & APX_K_MEMCPY)
		(void)enable_all(c, copy_cbids, N(copy_cbids),
				 "callbacks: copy callbacks refused, copies carry no host address");
	(void)enable_all(c, config_cbids, N(config_cbids),
			 "callbacks: an L2 configuration callback was refused");
	/* CUPTI's SYNCHRONIZATION kind, when asked for (APX_KINDS=+sync), already has them */
	if ((c->kinds & APX_K_HOSTSYNC) && !(c->kinds & APX_K_SYNC))
		(void)enable_all(c, sync_cbids, N(sync_cbids),
				 "hostsync: a synchronization callback was refused, no sync records");
	if (c->api_level)
		(void)enable_all(c, api_cbids, N(api_cbids),
				 "api: cuLaunchKernelEx callback refused, no launch-attribute windows");
	if (apx_replay_wanted())
		(void)enable_all(c, launch_cbids, N(launch_cbids),
				 "replay: a launch callback was refused, no kernel is replayed");
	if (c->kinds & APX_K_MEMORY)
		(void)enable_all(c, apx_alloc_cbids, apx_alloc_ncbids,
				 "allocations: an allocation callback was refused, allocations carry "
				 "no stack and failed ones are not recorded");
	if (apx_pystack_wanted())
		g_launch_stacks = enable_all(c, pystack_cbids, N(pystack_cbids),
					     "python-stacks: a launch or memset callback was "
					     "refused, those calls carry no stack") == 0;
	return 0;
}

const struct apx_source apx_source_callbacks = {
	.name = "callbacks",
	.start = callbacks_start,
};
