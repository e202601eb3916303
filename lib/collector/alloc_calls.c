/*
 * alloc_calls.c - the CUDA allocation calls seen by the callback source (src_callbacks.c
 * routes their driver callbacks here; it enables them when allocation records are collected).
 * Runs on application threads, inside the program's allocation call: allocates nothing, takes
 * no lock, does no I/O.
 *
 *   - at enter: the calling thread's Python stack, kept by correlation id (src_pystack.c);
 *     the writer joins it to the MEMORY record CUPTI writes for the allocation (encode.c);
 *   - at exit, when the call returned an error (CUDA_ERROR_OUT_OF_MEMORY, ...): CUPTI writes
 *     no record for a call that allocated nothing, so one APX_EV_ALLOC_FAILED event goes into
 *     the event ring (bytes asked for, memory kind, device, error, enter time, stack, thread),
 *     which the writer encodes as a MEMORY record of op ALLOC_FAILED (docs/format.md).
 *
 *   - at exit, at level light (level api has CUPTI's API records of every call): one
 *     APX_EV_ALLOC_CALL event with the call's enter and exit times, callback id, correlation
 *     id, thread and Python stack, which the writer encodes as an API record, so that the
 *     host's time in the allocator (cudaFree synchronizes the device: torch.cuda.empty_cache()
 *     every step) is on the timeline at level light too. Frees
 *     (cuMemFree_v2, cuMemFreeHost, cuMemFreeAsync, cuMemRelease, cuMemUnmap) are here for
 *     that only: no failure event. The stack is walked once, at the enter; the exit's events
 *     read it back from the side table by correlation id.
 *
 * Which calls (docs/collector.md, "Allocations"): cudaMalloc -> cuMemAlloc_v2 (PyTorch's
 * caching allocator), cuMemAllocPitch_v2, cudaMallocAsync -> cuMemAllocAsync /
 * cuMemAllocFromPoolAsync (its cudaMallocAsync backend), cuMemCreate (expandable segments),
 * cudaMallocManaged -> cuMemAllocManaged, cudaHostAlloc / cudaMallocHost -> cuMemHostAlloc /
 * cuMemAllocHost_v2 (pinned memory: pin_memory(), the caching host allocator). Only while
 * collection is enabled (the --delay/--duration window, capture ranges).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/collector.h"
#include "collector/pystacks.h"

#include "base/banned.h"

const CUpti_CallbackId apx_alloc_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
	/* frees: their host time only */
	CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemRelease, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
};
const size_t apx_alloc_ncbids = sizeof(apx_alloc_cbids) / sizeof(apx_alloc_cbids[0]);

/* What a call asked for: bytes, memory kind (enum apx_mem_kind), async; *device is set when
 * the call names its device (cuMemCreate), else left as it is. 0 when the cbid is not one of
 * apx_alloc_cbids or its parameters are missing. */
static int asked(CUpti_CallbackId cbid, const void *p, uint64_t *bytes, unsigned *kind,
		 int *async, uint64_t *device)
{
	*async = 0;
	if (!p)
		return 0;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		*bytes = ((const cuMemAlloc_v2_params *)p)->bytesize;
		*kind = APX_MEM_DEVICE;
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *a = p;

		if (__builtin_mul_overflow((uint64_t)a->WidthInBytes, (uint64_t)a->Height, bytes))
			*bytes = UINT64_MAX;
		*kind = APX_MEM_DEVICE;
		return 1;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
		*bytes = ((const cuMemAllocAsync_params *)p)->bytesize;
		*kind = APX_MEM_DEVICE;
		*async = 1;
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
		*bytes = ((const cuMemAllocFromPoolAsync_params *)p)->bytesize;
		*kind = APX_MEM_DEVICE;
		*async = 1;
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
		const cuMemCreate_params *a = p;

		*bytes = a->size;
		*kind = APX_MEM_DEVICE;
		if (a->prop && a->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
		    a->prop->location.id >= 0)
			*device = (uint64_t)a->prop->location.id;
		else if (a->prop && a->prop->location.type != CU_MEM_LOCATION_TYPE_INVALID)
			*kind = APX_MEM_PINNED;		/* host or host NUMA memory */
		return 1;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
		*bytes = ((const cuMemAllocManaged_params *)p)->bytesize;
		*kind = APX_MEM_MANAGED;
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
		*bytes = ((const cuMemHostAlloc_params *)p)->bytesize;
		*kind = APX_MEM_PINNED;
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
		*bytes = ((const cuMemAllocHost_v2_params *)p)->bytesize;
		*kind = APX_MEM_PINNED;
		return 1;
	default:
		return 0;
	}
}

/* The call returned err: one ALLOC_FAILED event with the stack kept at the enter. */
static void failed(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
		   CUresult err)
{
	struct apx_event *ev;
	uint64_t pos, bytes = 0, device = 0;
	unsigned kind = APX_MEM_UNKNOWN;
	uint32_t id, tid, stack;
	int async;

	if (!asked(cbid, cb->functionParams, &bytes, &kind, &async, &device))
		return;
	if (cb->context && cuptiGetDeviceId(cb->context, &id) == CUPTI_SUCCESS &&
	    cbid != CUPTI_DRIVER_TRACE_CBID_cuMemCreate)
		device = id;
	stack = apx_pystack_of_corr(cb->correlationId, &tid);	/* kept at the enter */
	ev = apx_ring_begin(c, &pos);
	ev->kind = APX_EV_ALLOC_FAILED;
	ev->cfg_kind = kind | (unsigned)async << 8;
	ev->end_ns = ev->ts_ns;
	ev->ts_ns = *cb->correlationData;	/* the call's enter */
	ev->value = bytes;
	ev->err = (int32_t)err;
	ev->corr = cb->correlationId;
	ev->tid = tid ? tid : (uint64_t)syscall(SYS_gettid);
	ev->target = stack;
	ev->device = device;
	if (cb->context && cuptiGetContextId(cb->context, &id) == CUPTI_SUCCESS)
		ev->context = id;
	apx_ring_commit(ev, pos);
}

/* The call's host time (level light): one APX_EV_ALLOC_CALL event, the stack walked at the
 * enter (kept by correlation id). */
static void timed(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
		  CUresult ret)
{
	struct apx_event *ev;
	uint64_t pos;
	uint32_t tid, stack = apx_pystack_of_corr(cb->correlationId, &tid);	/* the enter's */

	ev = apx_ring_begin(c, &pos);
	ev->kind = APX_EV_ALLOC_CALL;
	ev->cfg_kind = (uint32_t)cbid;
	ev->end_ns = ev->ts_ns;
	ev->ts_ns = *cb->correlationData;	/* the call's enter */
	ev->err = (int32_t)ret;
	ev->corr = cb->correlationId;
	ev->tid = tid ? tid : (uint64_t)syscall(SYS_gettid);
	ev->target = stack;
	apx_ring_commit(ev, pos);
}

int apx_alloc_callback(struct apx_collector *c, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	int is_free = 0;
	CUresult ret;

	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
		is_free = 1;
		break;
	default:
		return 0;	/* not an allocation call */
	}
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (cb->correlationData)
			*cb->correlationData = 0;
		if (!atomic_load_explicit(&c->enabled, memory_order_relaxed))
			return 1;	/* outside the window: nothing, like the activity kinds */
		if (cb->correlationData)
			*cb->correlationData = apx_mono_ns();
		apx_pystack_at_call(cb->correlationId);	/* once: the exit reads it back */
		return 1;
	}
	if (!cb->correlationData || !*cb->correlationData)
		return 1;	/* entered outside the window */
	ret = cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
	if (!c->api_level)
		timed(c, cbid, cb, ret);
	if (ret != CUDA_SUCCESS && !is_free)
		failed(c, cbid, cb, ret);
	return 1;
}
