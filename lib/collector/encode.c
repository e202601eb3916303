/*
 * encode.c - turns CUPTI activity records into .apx records (include/apx/format.h). Runs only
 * on the collector's writer thread, which owns the apx_writer: it walks a completed CUPTI
 * buffer with cuptiActivityGetNextRecord and appends one record per activity. Kernel names
 * and API names go to the string table. Host addresses of copies come from the host-pointer
 * table filled by the API callbacks (joined by correlation id), Python stacks of launches,
 * copies, memsets and allocations from the stack side table (pystacks.c); failed allocation
 * calls come from the event ring (alloc_calls.c). CUPTI enums that apx mirrors
 * one to one (memory kinds, sync types) are copied after a range check.
 */
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "collector/collector.h"
#include "collector/pystacks.h"
#include "collector/nvml_metrics.h"
#include "collector/pm_sets.h"
#include "base/torch_nvtx.h"

#include "base/banned.h"

static uint32_t intern(struct apx_enc *e, const char *s)
{
	uint32_t id = 0;

	if (s && *s && apx_writer_intern(e->w, s, strlen(s), &id) < 0)
		id = 0;
	return id;
}

static void add(struct apx_enc *e, const struct apx_rec *rec)
{
	int r = apx_writer_add(e->w, rec);

	if (r < 0 && !e->err)
		e->err = r;
}

static void seen(struct apx_enc *e, uint64_t ts)
{
	if (ts > e->last_ts)
		e->last_ts = ts;
	/* our clock is CLOCK_MONOTONIC (uptime); another tool's (CLOCK_REALTIME, TSC) is years */
	if (ts > e->clock_limit)
		e->foreign_clock++;
}

static unsigned mem_kind(unsigned k)
{
	return k < APX_MEM__COUNT ? k : APX_MEM_UNKNOWN;
}

static unsigned copy_kind(unsigned k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return APX_COPY_H2D;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return APX_COPY_D2H;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return APX_COPY_D2D;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return APX_COPY_H2H;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return APX_COPY_P2P;
	case CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN: return APX_COPY_UNKNOWN;
	default: return APX_COPY_OTHER;
	}
}

static unsigned access_prop(unsigned p)
{
	return p <= APX_ACCESS_PERSISTING ? p : APX_ACCESS_NORMAL;
}

/* (context id << 32 | stream id) + 1 of self_cost.c's stream, or 0: its kernels and its waits
 * for them are apx's, not the program's */
static _Atomic uint64_t drop_stream;

void apx_enc_drop_stream(uint32_t context_id, uint32_t stream_id)
{
	atomic_store(&drop_stream, ((uint64_t)context_id << 32 | stream_id) + 1);
}

/* A GPU activity CUPTI handed over before it ended (a forced flush: apx attach's detach, or an
 * exit with work in flight): no start or end (0, or all ones), or an end before its start. */
static int untimed(struct apx_enc *e, uint64_t start, uint64_t end)
{
	if (start && end && start != UINT64_MAX && end >= start)
		return 0;
	e->untimed++;
	return 1;
}

static void enc_kernel(struct apx_enc *e, const CUpti_ActivityKernel10 *k)
{
	uint64_t drop = atomic_load_explicit(&drop_stream, memory_order_relaxed);
	struct apx_rec rec;

	if (drop && drop == ((uint64_t)k->contextId << 32 | k->streamId) + 1)
		return;		/* self_cost.c's own launches */
	if (!apx_replay_wanted() && untimed(e, k->start, k->end))
		return;		/* (under --replay a kernel without times is a replayed launch) */
	apx_rec_init(&rec, APX_REC_KERNEL);
	rec.v[APX_KERNEL_START_NS] = k->start;
	rec.v[APX_KERNEL_END_NS] = k->end;
	rec.v[APX_KERNEL_DEVICE] = k->deviceId;
	rec.v[APX_KERNEL_CONTEXT] = k->contextId;
	rec.v[APX_KERNEL_STREAM] = k->streamId;
	rec.v[APX_KERNEL_CORRELATION] = k->correlationId;
	rec.v[APX_KERNEL_NAME] = intern(e, k->name);
	rec.v[APX_KERNEL_GRID_X] = (uint32_t)k->gridX;
	rec.v[APX_KERNEL_GRID_Y] = (uint32_t)k->gridY;
	rec.v[APX_KERNEL_GRID_Z] = (uint32_t)k->gridZ;
	rec.v[APX_KERNEL_BLOCK_X] = (uint32_t)k->blockX;
	rec.v[APX_KERNEL_BLOCK_Y] = (uint32_t)k->blockY;
	rec.v[APX_KERNEL_BLOCK_Z] = (uint32_t)k->blockZ;
	rec.v[APX_KERNEL_REGISTERS] = k->registersPerThread;
	rec.v[APX_KERNEL_STATIC_SMEM] = (uint32_t)k->staticSharedMemory;
	rec.v[APX_KERNEL_DYNAMIC_SMEM] = (uint32_t)k->dynamicSharedMemory;
	rec.v[APX_KERNEL_LOCAL_MEM] = k->localMemoryPerThread;
	rec.v[APX_KERNEL_GRAPH_ID] = k->graphId;
	rec.v[APX_KERNEL_GRAPH_NODE_ID] = k->graphNodeId;
	rec.v[APX_KERNEL_CLUSTER_X] = k->clusterX;
	rec.v[APX_KERNEL_CLUSTER_Y] = k->clusterY;
	rec.v[APX_KERNEL_CLUSTER_Z] = k->clusterZ;
	if (k->pAccessPolicyWindow && k->pAccessPolicyWindow->num_bytes) {
		const CUaccessPolicyWindow *w = k->pAccessPolicyWindow;

		rec.v[APX_KERNEL_APW_BASE] = (uint64_t)(uintptr_t)w->base_ptr;
		rec.v[APX_KERNEL_APW_BYTES] = w->num_bytes;
		rec.v[APX_KERNEL_APW_HIT_PPM] = (uint64_t)(w->hitRatio * 1e6f + 0.5f);
		rec.v[APX_KERNEL_APW_PROPS] = access_prop(w->hitProp) |
					      access_prop(w->missProp) << 4;
	}
	rec.v[APX_KERNEL_FLAGS] = k->isDeviceLaunched ? 1 : 0;
	{
		uint32_t tid, stack = apx_pystack_of_corr(k->correlationId, &tid);

		rec.v[APX_KERNEL_STACK] = stack;
		rec.v[APX_KERNEL_TID] = tid;
		rec.v[APX_KERNEL_LAUNCH_NS] = apx_pystack_launch_ns(k->correlationId, &tid);
		rec.v[APX_KERNEL_LAUNCH_THREAD] = tid;
	}
	add(e, &rec);
	seen(e, k->end);
	e->kernels++;
}

/* Host address of a host<->device copy, its call's enter/exit times and (H2D) its source's
 * fingerprint, from the table the API callbacks fill (into the record's fields; nothing when
 * the slot holds another copy). */
static void host_side(struct apx_enc *e, uint32_t corr, unsigned kind, struct apx_rec *rec)
{
	const struct apx_hostptr_slot *s;
	uint64_t c1, c2, src, dst, enter, exit, fp;

	if (!e->hp || !corr || (kind != APX_COPY_H2D && kind != APX_COPY_D2H))
		return;
	s = &e->hp[corr & e->hp_mask];
	c1 = atomic_load_explicit(&s->corr, memory_order_acquire);
	if (c1 != corr)
		return;
	src = atomic_load_explicit(&s->src, memory_order_relaxed);
	dst = atomic_load_explicit(&s->dst, memory_order_relaxed);
	enter = atomic_load_explicit(&s->enter_ns, memory_order_relaxed);
	exit = atomic_load_explicit(&s->exit_ns, memory_order_acquire);
	fp = atomic_load_explicit(&s->host_fp, memory_order_relaxed);	/* stored before exit */
	atomic_thread_fence(memory_order_acquire);
	c2 = atomic_load_explicit(&s->corr, memory_order_relaxed);
	if (c2 != corr)
		return;
	e->hostptr_joined++;
	rec->v[APX_MEMCPY_HOST_ADDR] = kind == APX_COPY_H2D ? src : dst;
	if (enter && exit >= enter) {	/* exit 0: the call had not returned yet */
		rec->v[APX_MEMCPY_API_ENTER_NS] = enter;
		rec->v[APX_MEMCPY_API_EXIT_NS] = exit;
		if (kind == APX_COPY_H2D && fp) {
			rec->v[APX_MEMCPY_HOST_FP] = fp;
			e->host_fps_joined++;
		}
	}
}

static void enc_memcpy(struct apx_enc *e, const CUpti_ActivityMemcpy6 *m)
{
	struct apx_rec rec;
	unsigned ck = copy_kind(m->copyKind);

	if (untimed(e, m->start, m->end))
		return;
	apx_rec_init(&rec, APX_REC_MEMCPY);
	rec.v[APX_MEMCPY_START_NS] = m->start;
	rec.v[APX_MEMCPY_END_NS] = m->end;
	rec.v[APX_MEMCPY_DEVICE] = m->deviceId;
	rec.v[APX_MEMCPY_CONTEXT] = m->contextId;
	rec.v[APX_MEMCPY_STREAM] = m->streamId;
	rec.v[APX_MEMCPY_CORRELATION] = m->correlationId;
	rec.v[APX_MEMCPY_COPY_KIND] = ck;
	rec.v[APX_MEMCPY_SRC_KIND] = mem_kind(m->srcKind);
	rec.v[APX_MEMCPY_DST_KIND] = mem_kind(m->dstKind);
	rec.v[APX_MEMCPY_BYTES] = m->bytes;
	host_side(e, m->correlationId, ck, &rec);
	rec.v[APX_MEMCPY_FLAGS] = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
	rec.v[APX_MEMCPY_GRAPH_ID] = m->graphId;
	rec.v[APX_MEMCPY_GRAPH_NODE_ID] = m->graphNodeId;
	rec.v[APX_MEMCPY_COPY_COUNT] = m->copyCount ? m->copyCount : 1;
	{
		uint32_t tid, stack = apx_pystack_of_corr(m->correlationId, &tid);

		rec.v[APX_MEMCPY_STACK] = stack;
		rec.v[APX_MEMCPY_TID] = tid;
	}
	add(e, &rec);
	seen(e, m->end);
	e->memcpys++;
}

static void enc_p2p(struct apx_enc *e, const CUpti_ActivityMemcpyPtoP4 *m)
{
	struct apx_rec rec;

	if (untimed(e, m->start, m->end))
		return;
	apx_rec_init(&rec, APX_REC_MEMCPY);
	rec.v[APX_MEMCPY_START_NS] = m->start;
	rec.v[APX_MEMCPY_END_NS] = m->end;
	rec.v[APX_MEMCPY_DEVICE] = m->deviceId;
	rec.v[APX_MEMCPY_CONTEXT] = m->contextId;
	rec.v[APX_MEMCPY_STREAM] = m->streamId;
	rec.v[APX_MEMCPY_CORRELATION] = m->correlationId;
	rec.v[APX_MEMCPY_COPY_KIND] = APX_COPY_P2P;
	rec.v[APX_MEMCPY_SRC_KIND] = mem_kind(m->srcKind);
	rec.v[APX_MEMCPY_DST_KIND] = mem_kind(m->dstKind);
	rec.v[APX_MEMCPY_BYTES] = m->bytes;
	rec.v[APX_MEMCPY_SRC_DEVICE] = m->srcDeviceId;
	rec.v[APX_MEMCPY_DST_DEVICE] = m->dstDeviceId;
	rec.v[APX_MEMCPY_FLAGS] = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
	rec.v[APX_MEMCPY_GRAPH_ID] = m->graphId;
	rec.v[APX_MEMCPY_GRAPH_NODE_ID] = m->graphNodeId;
	rec.v[APX_MEMCPY_COPY_COUNT] = 1;
	add(e, &rec);
	seen(e, m->end);
	e->memcpys++;
}

static void enc_memset(struct apx_enc *e, const CUpti_ActivityMemset4 *m)
{
	struct apx_rec rec;

	if (untimed(e, m->start, m->end))
		return;
	apx_rec_init(&rec, APX_REC_MEMSET);
	rec.v[APX_MEMSET_START_NS] = m->start;
	rec.v[APX_MEMSET_END_NS] = m->end;
	rec.v[APX_MEMSET_DEVICE] = m->deviceId;
	rec.v[APX_MEMSET_CONTEXT] = m->contextId;
	rec.v[APX_MEMSET_STREAM] = m->streamId;
	rec.v[APX_MEMSET_CORRELATION] = m->correlationId;
	rec.v[APX_MEMSET_BYTES] = m->bytes;
	rec.v[APX_MEMSET_VALUE] = m->value;
	rec.v[APX_MEMSET_MEM_KIND] = mem_kind(m->memoryKind);
	rec.v[APX_MEMSET_FLAGS] = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0;
	rec.v[APX_MEMSET_GRAPH_ID] = m->graphId;
	rec.v[APX_MEMSET_GRAPH_NODE_ID] = m->graphNodeId;
	{
		uint32_t tid;

		rec.v[APX_MEMSET_STACK] = apx_pystack_of_corr(m->correlationId, &tid);
	}
	add(e, &rec);
	seen(e, m->end);
	e->others++;
}

static void enc_memory(struct apx_enc *e, const CUpti_ActivityMemory4 *m)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_MEMORY);
	rec.v[APX_MEMORY_TS_NS] = m->timestamp;
	rec.v[APX_MEMORY_OP] = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
				       ? APX_MEMOP_FREE : APX_MEMOP_ALLOC;
	rec.v[APX_MEMORY_ADDRESS] = m->address;
	rec.v[APX_MEMORY_BYTES] = m->bytes;
	rec.v[APX_MEMORY_MEM_KIND] = mem_kind(m->memoryKind);
	rec.v[APX_MEMORY_DEVICE] = m->deviceId;
	rec.v[APX_MEMORY_CONTEXT] = m->contextId;
	rec.v[APX_MEMORY_STREAM] = m->streamId;
	rec.v[APX_MEMORY_CORRELATION] = m->correlationId;
	rec.v[APX_MEMORY_FLAGS] = m->isAsync ? 1 : 0;
	rec.v[APX_MEMORY_SOURCE] = intern(e, m->source);
	if (rec.v[APX_MEMORY_OP] == APX_MEMOP_ALLOC) {	/* the call's stack (alloc_calls.c) */
		uint32_t tid;

		rec.v[APX_MEMORY_STACK] = apx_pystack_of_corr(m->correlationId, &tid);
		rec.v[APX_MEMORY_TID] = tid;
	}
	add(e, &rec);
	seen(e, m->timestamp);
	e->others++;
}

static void enc_sync(struct apx_enc *e, const CUpti_ActivitySynchronization2 *s)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_SYNC);
	rec.v[APX_SYNC_START_NS] = s->start;
	rec.v[APX_SYNC_END_NS] = s->end;
	rec.v[APX_SYNC_KIND] = (unsigned)s->type < APX_SYNC_KIND__COUNT ? (unsigned)s->type : 0;
	rec.v[APX_SYNC_CONTEXT] = s->contextId;
	rec.v[APX_SYNC_STREAM] = s->streamId == (uint32_t)CUPTI_SYNCHRONIZATION_INVALID_VALUE
					 ? 0 : s->streamId;
	rec.v[APX_SYNC_EVENT] = s->cudaEventId == (uint32_t)CUPTI_SYNCHRONIZATION_INVALID_VALUE
					? 0 : s->cudaEventId;
	rec.v[APX_SYNC_CORRELATION] = s->correlationId;
	add(e, &rec);
	seen(e, s->end);
	e->others++;
}

/* The string id of an API call's name (CUPTI's, looked up once per domain and cbid), 0 when
 * CUPTI has none. */
static uint32_t api_name(struct apx_enc *e, unsigned dom, uint32_t cbid)
{
	uint32_t *slot;
	const char *name = NULL;

	if (cbid >= 1024)
		return 0;
	slot = &e->api_name[dom - 1][cbid];
	if (!*slot && cuptiGetCallbackName(dom == APX_API_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
							 : CUPTI_CB_DOMAIN_RUNTIME_API,
					   cbid, &name) == CUPTI_SUCCESS)
		*slot = intern(e, name);
	return *slot;
}

static void enc_api(struct apx_enc *e, const CUpti_ActivityAPI *a)
{
	struct apx_rec rec;
	unsigned dom = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? APX_API_DRIVER : APX_API_RUNTIME;

	apx_rec_init(&rec, APX_REC_API);
	rec.v[APX_API_START_NS] = a->start;
	rec.v[APX_API_END_NS] = a->end;
	rec.v[APX_API_DOMAIN] = dom;
	rec.v[APX_API_CBID] = a->cbid;
	rec.v[APX_API_CORRELATION] = a->correlationId;
	rec.v[APX_API_TID] = a->threadId;
	apx_rec_set_i64(&rec, APX_API_RETURN, (int32_t)a->returnValue);
	rec.v[APX_API_NAME] = api_name(e, dom, a->cbid);
	add(e, &rec);
	seen(e, a->end);
	e->others++;
}

static void enc_uvm(struct apx_enc *e, const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
	static const uint8_t map[] = {
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD] = APX_UVM_MIGRATE_H2D,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH] = APX_UVM_MIGRATE_D2H,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT] = APX_UVM_CPU_FAULT,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT] = APX_UVM_GPU_FAULT,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING] = APX_UVM_THRASHING,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING] = APX_UVM_THROTTLING,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP] = APX_UVM_REMOTE_MAP,
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD] = APX_UVM_MIGRATE_D2D,
	};
	struct apx_rec rec;
	unsigned k = (unsigned)u->counterKind;

	if (k >= sizeof(map) || !map[k])
		return;
	apx_rec_init(&rec, APX_REC_UVM);
	rec.v[APX_UVM_START_NS] = u->start;
	rec.v[APX_UVM_END_NS] = u->end ? u->end : u->start;
	rec.v[APX_UVM_KIND] = map[k];
	rec.v[APX_UVM_ADDRESS] = u->address;
	if (map[k] == APX_UVM_MIGRATE_H2D || map[k] == APX_UVM_MIGRATE_D2H ||
	    map[k] == APX_UVM_MIGRATE_D2D) {
		rec.v[APX_UVM_BYTES] = u->value;
		rec.v[APX_UVM_DEVICE] = map[k] == APX_UVM_MIGRATE_D2H ? u->srcId : u->dstId;
	} else {
		rec.v[APX_UVM_VALUE] = u->value;
		rec.v[APX_UVM_DEVICE] = u->srcId;
	}
	rec.v[APX_UVM_SRC_DEVICE] = u->srcId;
	rec.v[APX_UVM_DST_DEVICE] = u->dstId;
	add(e, &rec);
	seen(e, rec.v[APX_UVM_END_NS]);
	e->others++;
}

/* The most L2 a context can set aside for persisting accesses (CUPTI's device record does not
 * carry it): the driver's attribute, through the libcuda the program has loaded (the collector
 * links none). 0 when it cannot be asked. Writer thread, once per device record. */
static uint64_t persist_l2_max(uint32_t device)
{
	static CUresult (*get)(int *, CUdevice_attribute, CUdevice);
	static int looked;
	int v = 0;

	if (!looked) {
		looked = 1;
		*(void **)&get = apx_cuda_sym("cuDeviceGetAttribute");
	}
	if (!get || get(&v, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, (CUdevice)device) !=
	    CUDA_SUCCESS || v < 0)
		return 0;
	return (uint64_t)v;
}

static void enc_device(struct apx_enc *e, const CUpti_ActivityDevice5 *d)
{
	struct apx_rec rec;
	uint64_t persist;

	apx_rec_init(&rec, APX_REC_DEVICE);
	rec.v[APX_DEVICE_ID] = d->id;
	apx_rec_set_str(&rec, APX_DEVICE_NAME, d->name);
	apx_rec_set_bytes(&rec, APX_DEVICE_UUID, &d->uuid, sizeof(d->uuid));
	rec.v[APX_DEVICE_CC_MAJOR] = d->computeCapabilityMajor;
	rec.v[APX_DEVICE_CC_MINOR] = d->computeCapabilityMinor;
	rec.v[APX_DEVICE_SM_COUNT] = d->numMultiprocessors;
	rec.v[APX_DEVICE_MEM_BYTES] = d->globalMemorySize;
	rec.v[APX_DEVICE_L2_BYTES] = d->l2CacheSize;
	rec.v[APX_DEVICE_MEM_BW_BPS] = d->globalMemoryBandwidth * 1000ull; /* CUPTI: KB/s */
	rec.v[APX_DEVICE_MAX_THREADS_PER_SM] = d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp;
	rec.v[APX_DEVICE_REGS_PER_SM] = d->maxRegistersPerMultiprocessor;
	rec.v[APX_DEVICE_SMEM_PER_SM] = d->maxSharedMemoryPerMultiprocessor;
	rec.v[APX_DEVICE_MAX_BLOCKS_PER_SM] = d->maxBlocksPerMultiprocessor;
	rec.v[APX_DEVICE_CLOCK_KHZ] = d->coreClockRate;
	rec.v[APX_DEVICE_WARP_SIZE] = d->numThreadsPerWarp;
	rec.v[APX_DEVICE_SMEM_PER_BLOCK_OPTIN] = d->maxSharedMemoryPerBlock;
	rec.v[APX_DEVICE_MIG] = d->isMigEnabled ? 1 : 0;
	if ((persist = persist_l2_max(d->id)) != 0)
		rec.v[APX_DEVICE_PERSIST_L2_MAX_BYTES] = persist;
	add(e, &rec);
}

static struct apx_marker_open *marker_slot(struct apx_enc *e, uint64_t id, int torch)
{
	size_t n = sizeof(e->markers) / sizeof(e->markers[0]);

	return torch ? &e->torch_markers[id % n] : &e->markers[id % n];
}

/* A range's name: a PyTorch op range ("aten::addmm, seq = 12, op_id = 345") is cut to its op
 * and its sequence number kept apart (one string per op, not per call). */
static void marker_name(struct apx_enc *e, struct apx_marker_open *o, const char *name)
{
	size_t op_len;
	uint32_t id = 0;

	o->seq = 0;
	o->torch = name && apx_torch_nvtx_parse(name, strlen(name), &op_len, &o->seq);
	if (!o->torch) {
		o->name = intern(e, name);
		return;
	}
	if (op_len && apx_writer_intern(e->w, name, op_len, &id) < 0)
		id = 0;
	o->name = id;
}

static void enc_marker(struct apx_enc *e, const CUpti_ActivityMarker2 *m)
{
	struct apx_marker_open *o;
	uint64_t tid = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
	struct apx_rec rec;

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		struct apx_marker_open tmp = { 0 };

		marker_name(e, &tmp, m->name);
		o = marker_slot(e, m->id, tmp.torch);
		*o = tmp;
		o->id = m->id;
		o->start_ns = m->timestamp;
		o->tid = tid;
		o->domain = intern(e, m->domain);
		return;
	}
	apx_rec_init(&rec, APX_REC_MARKER);
	rec.v[APX_MARKER_ID] = m->id;
	rec.v[APX_MARKER_END_NS] = m->timestamp;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		o = marker_slot(e, m->id, 0);
		if (o->id != m->id)
			o = marker_slot(e, m->id, 1);
		if (o->id != m->id)
			return;	/* start lost */
		rec.v[APX_MARKER_START_NS] = o->start_ns;
		rec.v[APX_MARKER_NAME] = o->name;
		rec.v[APX_MARKER_DOMAIN] = o->domain;
		rec.v[APX_MARKER_TID] = o->tid;
		rec.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
		if (o->torch) {
			rec.v[APX_MARKER_SEQ] = o->seq;
			rec.v[APX_MARKER_FLAGS] = 1;
		}
		o->id = 0;
	} else {
		rec.v[APX_MARKER_START_NS] = m->timestamp;
		rec.v[APX_MARKER_NAME] = intern(e, m->name);
		rec.v[APX_MARKER_DOMAIN] = intern(e, m->domain);
		rec.v[APX_MARKER_TID] = tid;
		rec.v[APX_MARKER_KIND] = APX_MARKER_INSTANT;
	}
	add(e, &rec);
	seen(e, m->timestamp);
	e->others++;
}

static void enc_graph(struct apx_enc *e, const CUpti_ActivityGraphTrace2 *g)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_GRAPH);
	rec.v[APX_GRAPH_START_NS] = g->start;
	rec.v[APX_GRAPH_END_NS] = g->end;
	rec.v[APX_GRAPH_KIND] = APX_GRAPH_LAUNCH;
	rec.v[APX_GRAPH_GRAPH_ID] = g->graphId;
	rec.v[APX_GRAPH_DEVICE] = g->deviceId;
	rec.v[APX_GRAPH_CONTEXT] = g->contextId;
	rec.v[APX_GRAPH_STREAM] = g->streamId;
	rec.v[APX_GRAPH_CORRELATION] = g->correlationId;
	add(e, &rec);
	seen(e, g->end);
	e->others++;
}

size_t apx_enc_buffer(struct apx_enc *e, uint8_t *buf, size_t valid)
{
	CUpti_Activity *a = NULL;
	size_t n = 0;

	e->clock_limit = apx_mono_ns() + 86400ull * 1000000000ull;
	while (valid && cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
		n++;
		switch (a->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		case CUPTI_ACTIVITY_KIND_KERNEL:
			enc_kernel(e, (const CUpti_ActivityKernel10 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			enc_memcpy(e, (const CUpti_ActivityMemcpy6 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY2:
			enc_p2p(e, (const CUpti_ActivityMemcpyPtoP4 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			enc_memset(e, (const CUpti_ActivityMemset4 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_MEMORY2:
			enc_memory(e, (const CUpti_ActivityMemory4 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
			enc_sync(e, (const CUpti_ActivitySynchronization2 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
			if (!e->api_level)
				e->foreign++;
			enc_api(e, (const CUpti_ActivityAPI *)a);
			break;
		case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		case CUPTI_ACTIVITY_KIND_OVERHEAD:
			e->foreign++;
			break;
		case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
			enc_uvm(e, (const CUpti_ActivityUnifiedMemoryCounter3 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_DEVICE:
			enc_device(e, (const CUpti_ActivityDevice5 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_MARKER:
			enc_marker(e, (const CUpti_ActivityMarker2 *)a);
			break;
		case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
			enc_graph(e, (const CUpti_ActivityGraphTrace2 *)a);
			break;
		default:
			break;
		}
	}
	return n;
}

void apx_enc_event(struct apx_enc *e, const struct apx_event *ev)
{
	struct apx_rec rec;

	if (ev->kind == APX_EV_DEGRADED) {
		char msg[256];
		int n = ev->err < 0 ? snprintf(msg, sizeof(msg), "%s (CUDA error %d)",
					       ev->text ? ev->text : "?", -ev->err)
				    : snprintf(msg, sizeof(msg), "%s (CUPTI error %d)",
					       ev->text ? ev->text : "?", ev->err);

		apx_rec_init(&rec, APX_REC_KV);
		apx_rec_set_str(&rec, APX_KV_KEY, "degraded");
		apx_rec_set_bytes(&rec, APX_KV_VALUE, msg, n > 0 ? (size_t)n : 0);
		add(e, &rec);
		return;
	}
	if (ev->kind == APX_EV_COUNTER) {	/* a replayed kernel's counter (src_replay.c) */
		static uint32_t ids[APX_PM_METRICS_MAX];
		const struct apx_pm_set *set = apx_pm_replay_set();
		double v;

		if (ev->cfg_kind >= set->n)
			return;
		if (!ids[ev->cfg_kind])
			ids[ev->cfg_kind] = intern(e, set->metrics[ev->cfg_kind].name);
		memcpy(&v, &ev->value, sizeof(v));
		apx_rec_init(&rec, APX_REC_COUNTER);
		rec.v[APX_COUNTER_CORRELATION] = ev->corr;
		rec.v[APX_COUNTER_NAME] = ids[ev->cfg_kind];
		apx_rec_set_f64(&rec, APX_COUNTER_VALUE, v);
		rec.v[APX_COUNTER_DEVICE] = ev->device;
		rec.v[APX_COUNTER_PASSES] = ev->target;
		add(e, &rec);
		e->others++;
		return;
	}
	if (ev->kind == APX_EV_METRIC) {	/* src_nvml.c: a power or clock reading */
		static uint32_t ids[APX_NV__COUNT][2];	/* name, unit */
		double v;

		if (ev->cfg_kind >= APX_NV__COUNT)
			return;
		if (!ids[ev->cfg_kind][0]) {
			ids[ev->cfg_kind][0] = intern(e, apx_nvml_readings[ev->cfg_kind].name);
			ids[ev->cfg_kind][1] = intern(e, apx_nvml_readings[ev->cfg_kind].unit);
		}
		memcpy(&v, &ev->value, sizeof(v));
		apx_rec_init(&rec, APX_REC_METRIC);
		rec.v[APX_METRIC_TS_NS] = ev->ts_ns;
		rec.v[APX_METRIC_END_NS] = ev->end_ns;
		rec.v[APX_METRIC_NAME] = ids[ev->cfg_kind][0];
		rec.v[APX_METRIC_UNIT] = ids[ev->cfg_kind][1];
		rec.v[APX_METRIC_DEVICE] = ev->device;
		apx_rec_set_f64(&rec, APX_METRIC_VALUE, v);
		add(e, &rec);
		e->others++;
		return;
	}
	if (ev->kind == APX_EV_CAPTURE) {	/* capture.c: a capture range's edge */
		char val[48];
		int n = snprintf(val, sizeof(val), "%s %llu", ev->value ? "start" : "stop",
				 (unsigned long long)ev->ts_ns);

		apx_rec_init(&rec, APX_REC_KV);
		apx_rec_set_str(&rec, APX_KV_KEY, "capture");
		apx_rec_set_bytes(&rec, APX_KV_VALUE, val, n > 0 ? (size_t)n : 0);
		add(e, &rec);
		return;
	}
	if (ev->kind == APX_EV_ALLOC_FAILED) {	/* alloc_calls.c: CUPTI wrote no record */
		apx_rec_init(&rec, APX_REC_MEMORY);
		rec.v[APX_MEMORY_TS_NS] = ev->ts_ns;
		rec.v[APX_MEMORY_OP] = APX_MEMOP_ALLOC_FAILED;
		rec.v[APX_MEMORY_MEM_KIND] = mem_kind(ev->cfg_kind & 0xff);
		rec.v[APX_MEMORY_DEVICE] = ev->device;
		rec.v[APX_MEMORY_CONTEXT] = ev->context;
		rec.v[APX_MEMORY_CORRELATION] = ev->corr;
		rec.v[APX_MEMORY_FLAGS] = (ev->cfg_kind >> 8) & 1;
		rec.v[APX_MEMORY_STACK] = ev->target;
		rec.v[APX_MEMORY_TID] = ev->tid;
		rec.v[APX_MEMORY_ERROR] = (uint32_t)ev->err;
		rec.v[APX_MEMORY_REQUESTED_BYTES] = ev->value;
		add(e, &rec);
		if (ev->ts_ns > e->last_ts)	/* our own clock: no foreign-clock check */
			e->last_ts = ev->ts_ns;
		e->others++;
		return;
	}
	if (ev->kind == APX_EV_ALLOC_CALL) {	/* alloc_calls.c: an allocator call at level light */
		apx_rec_init(&rec, APX_REC_API);
		rec.v[APX_API_START_NS] = ev->ts_ns;
		rec.v[APX_API_END_NS] = ev->end_ns >= ev->ts_ns ? ev->end_ns : ev->ts_ns;
		rec.v[APX_API_DOMAIN] = APX_API_DRIVER;
		rec.v[APX_API_CBID] = ev->cfg_kind;
		rec.v[APX_API_CORRELATION] = ev->corr;
		rec.v[APX_API_TID] = ev->tid;
		apx_rec_set_i64(&rec, APX_API_RETURN, ev->err);
		rec.v[APX_API_NAME] = api_name(e, APX_API_DRIVER, ev->cfg_kind);
		rec.v[APX_API_STACK] = ev->target;
		add(e, &rec);
		if (rec.v[APX_API_END_NS] > e->last_ts)	/* our own clock: no foreign-clock check */
			e->last_ts = rec.v[APX_API_END_NS];
		e->others++;
		return;
	}
	if (ev->kind == APX_EV_SYNC) {	/* a host wait timed by the callbacks at enter and exit */
		uint64_t drop = atomic_load_explicit(&drop_stream, memory_order_relaxed);

		if (drop && drop == (ev->context << 32 | ev->stream) + 1)
			return;		/* self_cost.c waiting for its own launches */
		apx_rec_init(&rec, APX_REC_SYNC);
		rec.v[APX_SYNC_START_NS] = ev->ts_ns;
		rec.v[APX_SYNC_END_NS] = ev->end_ns >= ev->ts_ns ? ev->end_ns : ev->ts_ns;
		rec.v[APX_SYNC_KIND] = ev->cfg_kind < APX_SYNC_KIND__COUNT ? ev->cfg_kind : 0;
		rec.v[APX_SYNC_CONTEXT] = ev->context;
		rec.v[APX_SYNC_STREAM] = ev->stream;
		rec.v[APX_SYNC_CORRELATION] = ev->corr;
		rec.v[APX_SYNC_TID] = ev->tid;
		rec.v[APX_SYNC_STACK] = ev->target;
		add(e, &rec);
		if (rec.v[APX_SYNC_END_NS] > e->last_ts)	/* our own clock: no foreign-clock check */
			e->last_ts = rec.v[APX_SYNC_END_NS];
		e->others++;
		return;
	}
	apx_rec_init(&rec, APX_REC_CONFIG);
	rec.v[APX_CONFIG_TS_NS] = ev->ts_ns;
	rec.v[APX_CONFIG_KIND] = ev->cfg_kind;
	rec.v[APX_CONFIG_DEVICE] = ev->device;
	rec.v[APX_CONFIG_CONTEXT] = ev->context;
	rec.v[APX_CONFIG_STREAM] = ev->stream;
	rec.v[APX_CONFIG_VALUE] = ev->value;
	rec.v[APX_CONFIG_APW_BASE] = ev->apw_base;
	rec.v[APX_CONFIG_APW_BYTES] = ev->apw_bytes;
	rec.v[APX_CONFIG_APW_HIT_PPM] = ev->apw_hit_ppm;
	rec.v[APX_CONFIG_APW_HIT_PROP] = access_prop(ev->apw_hit);
	rec.v[APX_CONFIG_APW_MISS_PROP] = access_prop(ev->apw_miss);
	rec.v[APX_CONFIG_CORRELATION] = ev->corr;
	rec.v[APX_CONFIG_TID] = ev->tid;
	rec.v[APX_CONFIG_TARGET] = ev->target;
	add(e, &rec);
}
