/*
 * src_activity.c - the activity source: CUPTI activity records (kernels, copies, memsets,
 * allocations, unified memory, devices; more kinds on request). Buffers come from a pool
 * allocated once at start-up; CUPTI's threads (and application threads, when CUPTI flushes on
 * them) call buffer_requested / buffer_completed, which pop a free buffer and push a full one
 * through lock-free queues (cq.c) with one eventfd write per full buffer. The writer thread
 * decodes full buffers (encode.c), zeroes them and gives them back; once per flush period it
 * asks CUPTI for the completed ones. At exit, stop() forces CUPTI's last records out.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"

#include "base/banned.h"

/* CUPTI's buffer callbacks carry no user pointer: the collector, set once by start() */
static struct apx_collector *col;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint32_t idx;

	*max_records = 0;
	if (!col || atomic_load_explicit(&col->forked, memory_order_relaxed) ||
	    !apx_cq_pop(&col->free_q, &idx)) {
		if (col)
			atomic_fetch_add_explicit(&col->declined, 1, memory_order_relaxed);
		*buffer = NULL;
		*size = 0;
		return;
	}
	*buffer = col->pool + (size_t)idx * col->buf_bytes;
	*size = col->buf_bytes;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				     size_t size, size_t valid)
{
	size_t dropped = 0;
	size_t off;
	uint32_t idx;

	(void)size;
	if (!col)
		return;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add_explicit(&col->cupti_dropped, dropped, memory_order_relaxed);
	if (!buffer || buffer < col->pool)
		return;
	off = (size_t)(buffer - col->pool);
	if (off % col->buf_bytes || off / col->buf_bytes >= col->nbufs)
		return;		/* not ours */
	idx = (uint32_t)(off / col->buf_bytes);
	col->valid[idx] = valid;
	if (!apx_cq_push(&col->full_q, idx))
		return;		/* cannot happen: the queue holds every buffer */
	apx_writer_wake(col);
}

void apx_activity_configure_uvm(struct apx_collector *c, uint32_t device)
{
	CUpti_ActivityUnifiedMemoryCounterConfig cfg[8];
	CUptiResult r;

	if (atomic_exchange(&c->uvm_done, 1))
		return;
	for (int i = 0; i < 8; i++) {
		cfg[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES;
		cfg[i].kind = (CUpti_ActivityUnifiedMemoryCounterKind)(i + 1);
		cfg[i].deviceId = device;
		cfg[i].enable = 1;
	}
	r = cuptiActivityConfigureUnifiedMemoryCounter(cfg, 8);
	if (r != CUPTI_SUCCESS)	/* retry with the counters every driver supports */
		r = cuptiActivityConfigureUnifiedMemoryCounter(cfg, 4);
	if (r != CUPTI_SUCCESS) {
		apx_degraded(c, "uvm: unified-memory counters refused", r);
		return;
	}
	atomic_store(&c->uvm_ok, 1);
	if (atomic_load(&c->enabled)) {
		r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
		if (r != CUPTI_SUCCESS)
			apx_degraded(c, "uvm: cannot enable unified-memory records", r);
	}
}

struct kind_map {
	unsigned bit;
	CUpti_ActivityKind kind;
	const char *what;
	const char *name;
};

static const struct kind_map kind_map[] = {
	{ APX_K_DEVICE, CUPTI_ACTIVITY_KIND_DEVICE, "device: no device records", "device" },
	{ APX_K_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel: no kernel records", "kernel" },
	{ APX_K_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy: no copy records", "memcpy" },
	{ APX_K_P2P, CUPTI_ACTIVITY_KIND_MEMCPY2, "p2p: no peer-to-peer copy records", "p2p" },
	{ APX_K_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "memset: no memset records", "memset" },
	{ APX_K_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY2, "memory: no allocation records", "memory" },
	{ APX_K_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync: no synchronization records", "sync" },
	{ APX_K_MARKER, CUPTI_ACTIVITY_KIND_MARKER, "nvtx: no NVTX records", "nvtx" },
	{ APX_K_GRAPH, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graph: no graph records", "graph" },
	{ APX_K_API, CUPTI_ACTIVITY_KIND_RUNTIME, "api: no runtime API records", "runtime" },
	{ APX_K_API, CUPTI_ACTIVITY_KIND_DRIVER, "api: no driver API records", "driver" },
};

/* Runtime/driver calls PyTorch makes tens of thousands of times per second: not recorded. */
static const CUpti_CallbackId noisy_runtime[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
};
static const CUpti_CallbackId noisy_driver[] = {
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
	CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
	CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
};

#define NKINDS (sizeof(kind_map) / sizeof(kind_map[0]))
#define DETACH_DRAIN_MS 200	/* at apx attach's detach: for the kernels already queued */

/* The longest a switch of each kind took after the start (capture ranges, the window), in
 * ns; the last slot is the unified-memory counters. Written under capture.c's lock or by the
 * writer's window control, read at the end (apx_activity_switch_costs). */
static uint64_t switch_max_ns[NKINDS + 1];

static CUptiResult switch_kind(CUpti_ActivityKind kind, int on, int first, size_t slot)
{
	uint64_t t0 = first ? 0 : apx_mono_ns();
	CUptiResult r;

	/* attached to a running program: its devices exist already, CUPTI dumps their records */
	if (on && first && kind == CUPTI_ACTIVITY_KIND_DEVICE && apx_attached())
		r = cuptiActivityEnableAndDump(kind);
	else
		r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);

	if (!first && apx_mono_ns() - t0 > switch_max_ns[slot])
		switch_max_ns[slot] = apx_mono_ns() - t0;
	return r;
}

void apx_activity_switch_costs(char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	for (size_t i = 0; i <= NKINDS && len < cap; i++) {
		int w;

		if (!switch_max_ns[i])
			continue;
		w = snprintf(buf + len, cap - len, "%s%s %.3f ms", len ? ", " : "",
			     i < NKINDS ? kind_map[i].name : "uvm", switch_max_ns[i] / 1e6);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

void apx_activity_set_kinds(struct apx_collector *c, int on, int first)
{
	for (size_t i = 0; i < NKINDS; i++) {
		CUptiResult r;

		if (!(c->kinds & kind_map[i].bit))
			continue;
		if (kind_map[i].kind == CUPTI_ACTIVITY_KIND_DEVICE && !first)
			continue;
		r = switch_kind(kind_map[i].kind, on, first, i);
		if (r != CUPTI_SUCCESS && on && first)
			apx_degraded(c, kind_map[i].what, r);
	}
	/* Switching the unified-memory counters off took 2.0 s on the H200 (CUDA 13.0; every
	 * other kind 0.05 ms at most: bench/overhead/switch_probe.sh), inside the program's
	 * cudaProfilerStop: at a capture range's end they stay on (they record only when managed
	 * memory migrates; the analysis leaves out what lies between ranges). */
	if ((c->kinds & APX_K_UVM) && atomic_load(&c->uvm_ok) && (on || !apx_capture_mode()))
		(void)switch_kind(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER, on, first, NKINDS);
	if (on && (c->kinds & APX_K_API)) {
		for (size_t i = 0; i < sizeof(noisy_runtime) / sizeof(noisy_runtime[0]); i++)
			(void)cuptiActivityEnableRuntimeApi(noisy_runtime[i], 0);
		for (size_t i = 0; i < sizeof(noisy_driver) / sizeof(noisy_driver[0]); i++)
			(void)cuptiActivityEnableDriverApi(noisy_driver[i], 0);
	}
	atomic_store(&c->enabled, on);
}

static int alloc_pool(struct apx_collector *c)
{
	size_t total;

	c->buf_bytes = (size_t)apx_env_u64("APX_BUFFER_KB", 4096, 65536) * 1024;
	c->nbufs = (uint32_t)apx_env_u64("APX_BUFFERS", 16, 1024);
	if (c->buf_bytes < 64 * 1024)
		c->buf_bytes = 64 * 1024;
	if (c->nbufs < 4)
		c->nbufs = 4;
	total = c->buf_bytes * c->nbufs;
	/* populated now: CUPTI writes records on application threads, which must not page-fault */
	c->pool = mmap(NULL, total, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c->pool == MAP_FAILED) {
		c->pool = NULL;
		return -1;
	}
	c->valid = calloc(c->nbufs, sizeof(*c->valid));
	if (!c->valid || apx_cq_init(&c->free_q, c->nbufs) < 0 ||
	    apx_cq_init(&c->full_q, c->nbufs) < 0)
		return -1;
	for (uint32_t i = 0; i < c->nbufs; i++)
		(void)apx_cq_push(&c->free_q, i);
	return 0;
}

static int activity_start(struct apx_collector *c)
{
	uint8_t zero_buffers = 1;
	size_t sz = sizeof(zero_buffers);
	CUptiResult r;

	if (alloc_pool(c) < 0) {
		apx_degraded(c, "activity: no memory for the record buffers, no activity records", 0);
		return -1;
	}
	col = c;
	/* the pool's pages are zero and the writer zeroes each buffer it gives back, so CUPTI
	 * need not zero them on the application thread */
	(void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz,
					&zero_buffers);
	r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		apx_degraded(c, "activity: buffer callbacks refused, no activity records", r);
		return -1;
	}
	if (!(c->off & APX_F_LAUNCH_ATTRS)) {
		r = cuptiActivityEnableLaunchAttributes(1);
		if (r != CUPTI_SUCCESS)
			apx_degraded(c, "launch attributes: kernels carry no access-policy window", r);
	}
	if (!apx_capture_mode() && (!c->win_start_ns || apx_mono_ns() >= c->win_start_ns)) {
		apx_activity_set_kinds(c, 1, 1);
		if (c->win_start_ns)	/* the delay had passed before CUDA started */
			apx_add_kv(c, "window", "collection started");
	} else if (c->kinds & APX_K_DEVICE)
		(void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
	return 0;
}

static void activity_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	uint32_t idx;

	(void)now_ns;
	if (!c->pool)
		return;
	if (periodic) {
		pthread_mutex_lock(&c->flush_lock);
		if (!atomic_load(&c->no_flush))
			(void)cuptiActivityFlushAll(0);
		pthread_mutex_unlock(&c->flush_lock);
	}
	while (apx_cq_pop(&c->full_q, &idx)) {
		uint8_t *buf = c->pool + (size_t)idx * c->buf_bytes;
		if (!(c->off & APX_F_DECODE))
			apx_enc_buffer(c->enc, buf, c->valid[idx]);
		memset(buf, 0, c->buf_bytes);	/* CUPTI expects zeroed buffers */
		(void)apx_cq_push(&c->free_q, idx);
	}
}

/* At exit, on the exiting thread: every record out of CUPTI, complete or not. At apx attach's
 * detach (c->quiet; the program goes on) the kernels already queued finish first: up to
 * DETACH_DRAIN_MS of plain flushes, so that their records come with times (a forced flush
 * hands in-flight ones over without: encode.c leaves those out and counts them, kv
 * activities_untimed). */
static void activity_stop(struct apx_collector *c)
{
	if (!c->pool)
		return;
	if (atomic_load(&c->quiet)) {
		struct timespec tick = { 0, 20 * 1000000L };

		for (int i = 0; i < DETACH_DRAIN_MS / 20; i++) {
			nanosleep(&tick, NULL);
			pthread_mutex_lock(&c->flush_lock);
			(void)cuptiActivityFlushAll(0);
			pthread_mutex_unlock(&c->flush_lock);
		}
	}
	pthread_mutex_lock(&c->flush_lock);
	atomic_store(&c->no_flush, 1);
	(void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_unlock(&c->flush_lock);
}

const struct apx_source apx_source_activity = {
	.name = "activity",
	.start = activity_start,
	.drain = activity_drain,
	.stop = activity_stop,
};
