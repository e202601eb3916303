/*
 * inject.c - libapx-inject.so: the CUPTI collector loaded into a CUDA program through
 * CUDA_INJECTION64_PATH (set by `apx analyze`, docs/collector.md). The CUDA driver calls
 * InitializeInjection() once, during cuInit, on the thread that first uses CUDA.
 *
 * Threads and what runs on them:
 *   - application threads: CUPTI API callbacks (a few driver calls: host<->device copies,
 *     L2 set-aside, access-policy windows) and resource callbacks. They write a preallocated
 *     host-pointer table or a small event ring; no allocation, no lock, no I/O.
 *   - CUPTI's threads: buffer_requested / buffer_completed. They pop a free buffer from the
 *     preallocated pool or push a full one to the writer, with one eventfd write per buffer.
 *   - the writer thread (started here): decodes full buffers into .apx records
 *     (encode.c), samples process CPU facts (proc.c), and every flush period (1 s) asks CUPTI
 *     for completed records and makes the file on disk a readable prefix.
 *   - exit: an atexit handler forces CUPTI's last records out and lets the writer close the
 *     file with an END chunk. A forked child (pthread_atfork) never touches the parent's file.
 *     Fatal signals append a pre-encoded "crashed" chunk with one write(2) (async-signal-safe)
 *     and chain to the previous handler.
 *
 * Only InitializeInjection is exported (version script exports.map). This is the one file of
 * the collector that logs: one "[apx] ..." stderr line per distinct problem, never from a
 * callback.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include <apx/format.h>
#include <apx/version.h>

#include "base/parse.h"
#include "collector/collector.h"
#include "collector/cq.h"

#include "base/banned.h"

#define APX_EXPORT __attribute__((visibility("default")))

/* activity kinds, as a bit mask */
enum {
	K_KERNEL = 1 << 0,
	K_MEMCPY = 1 << 1,
	K_P2P = 1 << 2,
	K_MEMSET = 1 << 3,
	K_MEMORY = 1 << 4,
	K_SYNC = 1 << 5,
	K_UVM = 1 << 6,
	K_MARKER = 1 << 7,
	K_GRAPH = 1 << 8,
	K_API = 1 << 9,
	K_DEVICE = 1 << 10,
};

static const struct {
	const char *name;
	unsigned bit;
} kind_names[] = {
	{ "kernel", K_KERNEL }, { "memcpy", K_MEMCPY }, { "p2p", K_P2P }, { "memset", K_MEMSET },
	{ "memory", K_MEMORY }, { "sync", K_SYNC }, { "uvm", K_UVM }, { "nvtx", K_MARKER },
	{ "graph", K_GRAPH }, { "api", K_API }, { "device", K_DEVICE },
};

#define LIGHT_KINDS (K_KERNEL | K_MEMCPY | K_P2P | K_MEMSET | K_MEMORY | K_SYNC | K_UVM | K_DEVICE)
#define HOSTPTR_SLOTS (1u << 17)
#define EVENT_SLOTS 1024u

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM };
#define NFATAL ((int)(sizeof(fatal_signals) / sizeof(fatal_signals[0])))

/*
 * The collector's one global (STYLE §8.6): CUPTI's buffer callbacks carry no user pointer.
 * Fields above `w` are written once by InitializeInjection before any callback or the writer
 * thread can run and are read-only afterwards; the atomics are shared as commented; `w` and
 * `enc` belong to the writer thread once it is started.
 */
static struct apx_collector {
	pid_t owner_pid;
	unsigned kinds;
	int api_level;
	uint64_t period_ns, win_start_ns, win_end_ns;
	CUpti_SubscriberHandle sub;
	uint8_t *pool;
	size_t buf_bytes;
	uint32_t nbufs;
	size_t *valid;			/* per buffer: bytes CUPTI filled (set before the push) */
	struct apx_cq free_q, full_q;
	int efd;			/* eventfd: wakes the writer */
	struct apx_hostptr_slot *hp;
	struct apx_event *ev;
	int crash_fd;			/* the trace's fd (O_APPEND), -1 once closed */
	uint8_t crash_chunk[NFATAL][160];
	size_t crash_len[NFATAL];
	struct sigaction old_sa[NFATAL];
	int sa_installed[NFATAL];
	char path[4096];

	_Atomic uint64_t ev_head;	/* event ring: producers fetch_add */
	_Atomic uint64_t cupti_dropped;	/* CUPTI's dropped count, from buffer_completed */
	_Atomic uint64_t declined;	/* buffer requests answered with NULL */
	_Atomic int forked;		/* set in a forked child: touch nothing */
	_Atomic int stop;		/* writer: finish and close */
	_Atomic int no_flush;		/* exit has begun: the writer must not call CUPTI flush */
	_Atomic int exiting;		/* atexit ran once */
	_Atomic int crashed;		/* a fatal signal wrote its chunk */
	_Atomic int uvm_done;		/* unified-memory counters: configuration tried */
	_Atomic int uvm_ok;		/* ... and accepted */
	_Atomic int enabled;		/* activity kinds are on */
	pthread_mutex_t flush_lock;	/* writer's periodic flush vs atexit's forced flush */
	pthread_t writer;
	int writer_started;
	int debug;			/* APX_DEBUG: a backtrace on fatal signals */

	struct apx_writer *w;
	struct apx_enc *enc;
	uint64_t ev_tail;
	uint64_t ev_lost;
} g_col = { .efd = -1, .crash_fd = -1, .flush_lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- small helpers ------------------------------------------------------------------------- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	memcpy(buf, "[apx] ", 6);
	va_start(ap, fmt);
	n = vsnprintf(buf + 6, sizeof(buf) - 7, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += 6;
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, (size_t)n);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s || !*s || apx_parse_u64(s, max, &v) < 0)
		return def;
	return v;
}

/* ---- event ring (application threads -> writer) --------------------------------------------- */

static struct apx_event *ev_begin(uint64_t *ret_pos)
{
	uint64_t pos = atomic_fetch_add_explicit(&g_col.ev_head, 1, memory_order_relaxed);
	struct apx_event *ev = &g_col.ev[pos & (EVENT_SLOTS - 1)];

	atomic_store_explicit(&ev->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	ev->kind = APX_EV_CONFIG;
	ev->cfg_kind = 0;
	ev->ts_ns = clock_ns(CLOCK_MONOTONIC);
	ev->corr = ev->tid = ev->device = ev->context = ev->stream = ev->target = ev->value = 0;
	ev->apw_base = ev->apw_bytes = ev->apw_hit_ppm = 0;
	ev->apw_hit = ev->apw_miss = 0;
	ev->err = 0;
	ev->text = NULL;
	*ret_pos = pos;
	return ev;
}

static void ev_commit(struct apx_event *ev, uint64_t pos)
{
	atomic_store_explicit(&ev->seq, pos + 1, memory_order_release);
}

static void degraded(const char *what, int err)
{
	uint64_t pos;
	struct apx_event *ev;

	if (!g_col.ev)
		return;
	ev = ev_begin(&pos);
	ev->kind = APX_EV_DEGRADED;
	ev->text = what;
	ev->err = err;
	ev_commit(ev, pos);
}

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

/* ---- CUPTI buffer callbacks (CUPTI threads, application threads on flush) ------------------ */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint32_t idx;

	*max_records = 0;
	if (atomic_load_explicit(&g_col.forked, memory_order_relaxed) ||
	    !apx_cq_pop(&g_col.free_q, &idx)) {
		atomic_fetch_add_explicit(&g_col.declined, 1, memory_order_relaxed);
		*buffer = NULL;
		*size = 0;
		return;
	}
	*buffer = g_col.pool + (size_t)idx * g_col.buf_bytes;
	*size = g_col.buf_bytes;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				     size_t size, size_t valid)
{
	size_t dropped = 0;
	uint64_t one = 1;
	size_t off;
	uint32_t idx;

	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add_explicit(&g_col.cupti_dropped, dropped, memory_order_relaxed);
	if (!buffer || buffer < g_col.pool)
		return;
	off = (size_t)(buffer - g_col.pool);
	if (off % g_col.buf_bytes || off / g_col.buf_bytes >= g_col.nbufs)
		return;		/* not ours */
	idx = (uint32_t)(off / g_col.buf_bytes);
	g_col.valid[idx] = valid;
	if (!apx_cq_push(&g_col.full_q, idx))
		return;		/* cannot happen: the queue holds every buffer */
	if (g_col.efd >= 0)
		(void)!write(g_col.efd, &one, sizeof(one));
}

/* ---- API and resource callbacks (application threads) --------------------------------------- */

static void hostptr_put(uint32_t corr, uint64_t src, uint64_t dst, uint64_t bytes)
{
	struct apx_hostptr_slot *s = &g_col.hp[corr & (HOSTPTR_SLOTS - 1)];

	atomic_store_explicit(&s->corr, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->src, src, memory_order_relaxed);
	atomic_store_explicit(&s->dst, dst, memory_order_relaxed);
	atomic_store_explicit(&s->bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&s->corr, corr, memory_order_release);
}

static void on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	struct apx_event *ev;
	uint64_t pos;

	if (cb->callbackSite == CUPTI_API_ENTER) {
		switch (cbid) {
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2: {
			const cuMemcpyHtoD_v2_params *a = p;

			hostptr_put(cb->correlationId, (uintptr_t)a->srcHost, a->dstDevice, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
			const cuMemcpyHtoDAsync_v2_params *a = p;

			hostptr_put(cb->correlationId, (uintptr_t)a->srcHost, a->dstDevice, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2: {
			const cuMemcpyDtoH_v2_params *a = p;

			hostptr_put(cb->correlationId, a->srcDevice, (uintptr_t)a->dstHost, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
			const cuMemcpyDtoHAsync_v2_params *a = p;

			hostptr_put(cb->correlationId, a->srcDevice, (uintptr_t)a->dstHost, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
			const cuMemcpyAsync_params *a = p;

			hostptr_put(cb->correlationId, a->src, a->dst, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
		case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
			const cuMemcpy_params *a = p;

			hostptr_put(cb->correlationId, a->src, a->dst, a->ByteCount);
			return;
		}
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
			const CUlaunchConfig *c = ((const cuLaunchKernelEx_params *)p)->config;

			for (unsigned i = 0; c && c->attrs && i < c->numAttrs; i++) {
				const CUlaunchAttribute *at = &c->attrs[i];

				if (at->id != CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW ||
				    !at->value.accessPolicyWindow.num_bytes)
					continue;
				ev = ev_begin(&pos);
				ev->cfg_kind = APX_CONFIG_APW_LAUNCH;
				ev->corr = cb->correlationId;
				ev->tid = (uint64_t)syscall(SYS_gettid);
				ev_set_ctx(ev, cb->context, c->hStream);
				ev_set_window(ev, &at->value.accessPolicyWindow);
				ev_commit(ev, pos);
			}
			return;
		}
		default:
			return;
		}
	}
	/* API exit: configuration calls, recorded only when they succeeded */
	if (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit: {
		const cuCtxSetLimit_params *a = p;

		if (a->limit != CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
			return;
		ev = ev_begin(&pos);
		ev->cfg_kind = APX_CONFIG_L2_PERSIST_LIMIT;
		ev->value = a->value;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuCtxResetPersistingL2Cache:
		ev = ev_begin(&pos);
		ev->cfg_kind = APX_CONFIG_L2_PERSIST_RESET;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetAttribute: {
		const cuGraphKernelNodeSetAttribute_params *a = p;

		if (a->attr != CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW || !a->value)
			return;
		ev = ev_begin(&pos);
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
	ev_commit(ev, pos);
}

static void configure_uvm(uint32_t device, int scope);

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
		uint32_t dev = 0;

		if ((g_col.kinds & K_UVM) && !atomic_load(&g_col.uvm_done) &&
		    cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS)
			configure_uvm(dev, CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES);
		return;
	}
	if (cbid == CUPTI_CBID_RESOURCE_STREAM_ATTRIBUTE_CHANGED) {
		const CUpti_StreamAttrData *sa = rd->resourceDescriptor;
		struct apx_event *ev;
		uint64_t pos;

		if (!sa || sa->attr != CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW || !sa->value)
			return;
		ev = ev_begin(&pos);
		ev->cfg_kind = APX_CONFIG_APW_STREAM;
		ev->tid = (uint64_t)syscall(SYS_gettid);
		ev_set_ctx(ev, rd->context, sa->stream);
		ev_set_window(ev, &sa->value->accessPolicyWindow);
		ev_commit(ev, pos);
	}
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
				 const void *data)
{
	(void)ud;
	if (atomic_load_explicit(&g_col.forked, memory_order_relaxed))
		return;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
		on_driver(cbid, data);
	else if (dom == CUPTI_CB_DOMAIN_RESOURCE)
		on_resource(cbid, data);
}

/* ---- activity kinds ------------------------------------------------------------------------- */

static void configure_uvm(uint32_t device, int scope)
{
	CUpti_ActivityUnifiedMemoryCounterConfig cfg[8];
	CUptiResult r;

	if (atomic_exchange(&g_col.uvm_done, 1))
		return;
	for (int i = 0; i < 8; i++) {
		cfg[i].scope = (CUpti_ActivityUnifiedMemoryCounterScope)scope;
		cfg[i].kind = (CUpti_ActivityUnifiedMemoryCounterKind)(i + 1);
		cfg[i].deviceId = device;
		cfg[i].enable = 1;
	}
	r = cuptiActivityConfigureUnifiedMemoryCounter(cfg, 8);
	if (r != CUPTI_SUCCESS)	/* retry with the counters every driver supports */
		r = cuptiActivityConfigureUnifiedMemoryCounter(cfg, 4);
	if (r != CUPTI_SUCCESS) {
		degraded("uvm: unified-memory counters refused", r);
		return;
	}
	atomic_store(&g_col.uvm_ok, 1);
	if (atomic_load(&g_col.enabled)) {
		r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
		if (r != CUPTI_SUCCESS)
			degraded("uvm: cannot enable unified-memory records", r);
	}
}

struct kind_map {
	unsigned bit;
	CUpti_ActivityKind kind;
	const char *what;
};

static const struct kind_map kind_map[] = {
	{ K_DEVICE, CUPTI_ACTIVITY_KIND_DEVICE, "device: no device records" },
	{ K_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel: no kernel records" },
	{ K_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy: no copy records" },
	{ K_P2P, CUPTI_ACTIVITY_KIND_MEMCPY2, "p2p: no peer-to-peer copy records" },
	{ K_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "memset: no memset records" },
	{ K_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY2, "memory: no allocation records" },
	{ K_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync: no synchronization records" },
	{ K_MARKER, CUPTI_ACTIVITY_KIND_MARKER, "nvtx: no NVTX records" },
	{ K_GRAPH, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graph: no graph records" },
	{ K_API, CUPTI_ACTIVITY_KIND_RUNTIME, "api: no runtime API records" },
	{ K_API, CUPTI_ACTIVITY_KIND_DRIVER, "api: no driver API records" },
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

/* Switch the activity kinds on or off. first: report failures as degraded features. */
static void set_kinds(int on, int first)
{
	for (size_t i = 0; i < sizeof(kind_map) / sizeof(kind_map[0]); i++) {
		CUptiResult r;

		if (!(g_col.kinds & kind_map[i].bit))
			continue;
		if (kind_map[i].kind == CUPTI_ACTIVITY_KIND_DEVICE && !first)
			continue;
		r = on ? cuptiActivityEnable(kind_map[i].kind) : cuptiActivityDisable(kind_map[i].kind);
		if (r != CUPTI_SUCCESS && on && first)
			degraded(kind_map[i].what, r);
	}
	if ((g_col.kinds & K_UVM) && atomic_load(&g_col.uvm_ok)) {
		if (on)
			(void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
		else
			(void)cuptiActivityDisable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
	}
	if (on && (g_col.kinds & K_API)) {
		for (size_t i = 0; i < sizeof(noisy_runtime) / sizeof(noisy_runtime[0]); i++)
			(void)cuptiActivityEnableRuntimeApi(noisy_runtime[i], 0);
		for (size_t i = 0; i < sizeof(noisy_driver) / sizeof(noisy_driver[0]); i++)
			(void)cuptiActivityEnableDriverApi(noisy_driver[i], 0);
	}
	atomic_store(&g_col.enabled, on);
}

/* ---- writer thread -------------------------------------------------------------------------- */

static void drain_buffers(void)
{
	uint32_t idx;

	while (apx_cq_pop(&g_col.full_q, &idx)) {
		uint8_t *buf = g_col.pool + (size_t)idx * g_col.buf_bytes;

		apx_enc_buffer(g_col.enc, buf, g_col.valid[idx]);
		memset(buf, 0, g_col.buf_bytes);	/* CUPTI expects zeroed buffers */
		(void)apx_cq_push(&g_col.free_q, idx);
	}
}

static void drain_events(void)
{
	for (;;) {
		struct apx_event *slot = &g_col.ev[g_col.ev_tail & (EVENT_SLOTS - 1)];
		uint64_t s = atomic_load_explicit(&slot->seq, memory_order_acquire);
		struct apx_event copy;

		if (s == g_col.ev_tail + 1) {
			memcpy(&copy, slot, sizeof(copy));
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&slot->seq, memory_order_relaxed) == s)
				apx_enc_event(g_col.enc, &copy);
			else
				g_col.ev_lost++;
			g_col.ev_tail++;
		} else if (s > g_col.ev_tail + 1) {
			g_col.ev_lost += s - 1 - g_col.ev_tail;	/* lapped */
			g_col.ev_tail = s - 1;
		} else {
			break;
		}
	}
}

static void add_loss(unsigned source, uint64_t count, const char *reason, uint64_t now)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_LOSS);
	rec.v[APX_LOSS_TS_NS] = now;
	rec.v[APX_LOSS_SOURCE] = source;
	rec.v[APX_LOSS_COUNT] = count;
	apx_rec_set_str(&rec, APX_LOSS_REASON, reason);
	(void)apx_writer_add(g_col.w, &rec);
}

static void emit_losses(uint64_t now)
{
	uint64_t d;

	d = atomic_exchange(&g_col.cupti_dropped, 0);
	if (d)
		add_loss(APX_LOSS_CUPTI, d, "records dropped by CUPTI", now);
	d = atomic_exchange(&g_col.declined, 0);
	if (d)
		add_loss(APX_LOSS_POOL_EMPTY, d, "buffers declined: pool empty (count is buffers)", now);
	if (g_col.ev_lost) {
		add_loss(APX_LOSS_OTHER, g_col.ev_lost, "configuration events lost: ring overrun", now);
		g_col.ev_lost = 0;
	}
}

static void add_kv(const char *key, const char *value)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, key);
	apx_rec_set_str(&rec, APX_KV_VALUE, value);
	(void)apx_writer_add(g_col.w, &rec);
}

/* Another CUPTI activity user in this process (torch.profiler's Kineto enables RUNTIME,
 * EXTERNAL_CORRELATION, OVERHEAD; it also replaces the timestamp callback), or a tool that
 * tried to subscribe after apx and lost (counted by libapx-watch.so when apx analyze preloads
 * it): say it once. Writer thread. */
static void check_foreign(void)
{
	static int said_kinds, said_clock, said_lost, looked;
	static unsigned long (*watch_lost)(void);

	if (!looked) {
		looked = 1;
		watch_lost = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "apx_watch_lost");
	}
	if (watch_lost && !said_lost && watch_lost()) {
		said_lost = 1;
		add_kv("degraded", "cupti-lost-by-other: another tool (torch.profiler?) tried to start "
		       "CUPTI after apx had it; one CUPTI client per process on CUDA 13.0, so that "
		       "tool recorded no GPU events (apx's trace is complete)");
		say("another tool (torch.profiler?) tried to use CUPTI after apx took it: it records "
		    "no GPU events in this process; apx's trace is complete");
	}

	if (g_col.enc->foreign && !said_kinds) {
		said_kinds = 1;
		add_kv("degraded", "cupti-shared: another CUPTI user (torch.profiler?) enabled activity "
		       "kinds in this process; one CUPTI client per process on CUDA 13.0, so its GPU "
		       "events are lost or mixed with apx's");
	}
	if (g_col.enc->foreign_clock && !said_clock) {
		said_clock = 1;
		add_kv("degraded", "cupti-clock: CUPTI's timestamp callback was replaced by another tool "
		       "(torch.profiler started after apx?): later records may be lost or on its clock");
	}
}

static void periodic(uint64_t now)
{
	pthread_mutex_lock(&g_col.flush_lock);
	if (!atomic_load(&g_col.no_flush))
		(void)cuptiActivityFlushAll(0);
	pthread_mutex_unlock(&g_col.flush_lock);
	drain_buffers();
	drain_events();
	apx_proc_sample(g_col.w, now);
	emit_losses(now);
	check_foreign();
	(void)apx_writer_flush(g_col.w);
}

static void *writer_main(void *arg)
{
	uint64_t next = clock_ns(CLOCK_MONOTONIC) + g_col.period_ns;
	uint64_t now;
	char num[32];
	int r;

	(void)arg;
	{	/* faults of this thread must reach the handler (they cannot be blocked) */
		sigset_t sync;

		sigemptyset(&sync);
		sigaddset(&sync, SIGSEGV);
		sigaddset(&sync, SIGBUS);
		sigaddset(&sync, SIGILL);
		sigaddset(&sync, SIGFPE);
		pthread_sigmask(SIG_UNBLOCK, &sync, NULL);
	}
	for (;;) {
		struct pollfd pfd = { .fd = g_col.efd, .events = POLLIN };
		uint64_t v;

		if (poll(&pfd, 1, 100) > 0 && (pfd.revents & POLLIN))
			(void)!read(g_col.efd, &v, sizeof(v));
		drain_buffers();
		drain_events();
		if (atomic_load(&g_col.stop))
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (g_col.win_start_ns && !atomic_load(&g_col.enabled) && now >= g_col.win_start_ns &&
		    (!g_col.win_end_ns || now < g_col.win_end_ns)) {
			set_kinds(1, 0);
			add_kv("window", "collection started");
		}
		if (g_col.win_end_ns && atomic_load(&g_col.enabled) && now >= g_col.win_end_ns) {
			set_kinds(0, 0);
			add_kv("window", "collection stopped");
			g_col.win_start_ns = 0;	/* no restart */
			next = now;
		}
		if (now >= next) {
			periodic(now);
			next = now + g_col.period_ns;
		}
	}
	drain_buffers();
	drain_events();
	now = clock_ns(CLOCK_MONOTONIC);
	apx_proc_sample(g_col.w, now);
	apx_proc_threads(g_col.w, now);
	emit_losses(now);
	check_foreign();
	snprintf(num, sizeof(num), "%llu", (unsigned long long)g_col.enc->hostptr_joined);
	add_kv("host_addresses_joined", num);
	g_col.crash_fd = -1;	/* the signal path must not write into a closed fd */
	r = apx_writer_close(g_col.w, now, 0);
	g_col.w = NULL;
	if (r < 0)
		say("cannot finish '%s': %s", g_col.path, strerror(-r));
	return NULL;
}

/* ---- exit, fork, fatal signals ---------------------------------------------------------------- */

static void at_exit(void)
{
	struct timespec deadline;
	uint64_t one = 1;

	if (atomic_load(&g_col.forked) || !g_col.writer_started || atomic_exchange(&g_col.exiting, 1))
		return;
	pthread_mutex_lock(&g_col.flush_lock);
	atomic_store(&g_col.no_flush, 1);
	(void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_unlock(&g_col.flush_lock);
	atomic_store(&g_col.stop, 1);
	(void)!write(g_col.efd, &one, sizeof(one));
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	if (pthread_timedjoin_np(g_col.writer, NULL, &deadline) != 0)
		say("trace writer did not finish in 10 s; '%s' is readable up to its last flush",
		    g_col.path);
}

static void at_fork_child(void)
{
	atomic_store(&g_col.forked, 1);
	g_col.crash_fd = -1;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	int i;

	(void)uc;
	if (g_col.debug) {
		void *frames[32];
		int n = backtrace(frames, 32);

		(void)!write(STDERR_FILENO, "[apx] fatal signal, backtrace:\n", 31);
		backtrace_symbols_fd(frames, n, STDERR_FILENO);
	}
	for (i = 0; i < NFATAL; i++)
		if (fatal_signals[i] == sig)
			break;
	if (i == NFATAL)
		return;
	if (!atomic_load(&g_col.forked) && g_col.crash_fd >= 0 && g_col.crash_len[i] &&
	    !atomic_exchange(&g_col.crashed, 1))
		(void)!write(g_col.crash_fd, g_col.crash_chunk[i], g_col.crash_len[i]);
	sigaction(sig, &g_col.old_sa[i], NULL);
	errno = saved;
	/* A fault re-executes the faulting instruction and meets the previous handler; a signal
	 * that was sent (kill, abort) must be raised again. */
	if (si->si_code <= 0 || sig == SIGABRT || sig == SIGTERM)
		raise(sig);
}

/* Encode, once at start, a KV chunk "crash" = signal name per fatal signal, so that the signal
 * handler only has to write(2) bytes. Uses a writer over a memfd and keeps what it appended. */
static void prepare_crash_chunks(const struct apx_rec *header)
{
	for (int i = 0; i < NFATAL; i++) {
		int fd = memfd_create("apx-crash", MFD_CLOEXEC);
		struct apx_writer *w;
		struct apx_rec kv;
		uint64_t before, after;
		char val[48];
		ssize_t n;

		if (fd < 0)
			return;
		if (apx_writer_open_fd(fd, header, NULL, &w) < 0)
			return;		/* the writer closed fd */
		before = apx_writer_bytes(w);
		snprintf(val, sizeof(val), "signal %d (%s)", fatal_signals[i],
			 sigabbrev_np(fatal_signals[i]) ? sigabbrev_np(fatal_signals[i]) : "?");
		apx_rec_init(&kv, APX_REC_KV);
		apx_rec_set_str(&kv, APX_KV_KEY, "crash");
		apx_rec_set_str(&kv, APX_KV_VALUE, val);
		if (apx_writer_add(w, &kv) == 0 && apx_writer_flush(w) == 0) {
			after = apx_writer_bytes(w);
			if (after > before && after - before <= sizeof(g_col.crash_chunk[i])) {
				n = pread(fd, g_col.crash_chunk[i], (size_t)(after - before), (off_t)before);
				if (n == (ssize_t)(after - before))
					g_col.crash_len[i] = (size_t)n;
			}
		}
		apx_writer_abandon(w);
	}
}

static void install_signal_handlers(void)
{
	for (int i = 0; i < NFATAL; i++) {
		struct sigaction sa;

		if (sigaction(fatal_signals[i], NULL, &g_col.old_sa[i]) < 0)
			continue;
		if (fatal_signals[i] == SIGTERM && g_col.old_sa[i].sa_handler != SIG_DFL)
			continue;	/* the program handles SIGTERM itself */
		if (!(g_col.old_sa[i].sa_flags & SA_SIGINFO) && g_col.old_sa[i].sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(fatal_signals[i], &sa, NULL) == 0)
			g_col.sa_installed[i] = 1;
	}
}

/* ---- start-up --------------------------------------------------------------------------------- */

static size_t read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	return len;
}

static unsigned parse_kinds(unsigned kinds, const char *spec)
{
	const char *p = spec;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int remove = *p == '-';

		if (remove || *p == '+') {
			p++;
			len--;
		}
		for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
			if (strlen(kind_names[i].name) == len && !strncmp(p, kind_names[i].name, len))
				kinds = remove ? kinds & ~kind_names[i].bit : kinds | kind_names[i].bit;
		}
		p = end ? end + 1 : NULL;
	}
	return kinds;
}

static void kinds_text(unsigned kinds, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
		if (!(kinds & kind_names[i].bit))
			continue;
		int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", kind_names[i].name);

		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
}

/* Open the trace file for this process and write its header. */
static int open_trace(struct apx_rec *hdr)
{
	const char *out = getenv("APX_OUTPUT");
	uint64_t root = env_u64("APX_ROOT_PID", 0, UINT32_MAX);
	pid_t pid = getpid();
	int fd;

	if (!out || !*out)
		snprintf(g_col.path, sizeof(g_col.path), "apx-%d.apx", (int)pid);
	else if (root == (uint64_t)pid)
		snprintf(g_col.path, sizeof(g_col.path), "%s", out);
	else
		snprintf(g_col.path, sizeof(g_col.path), "%s.%d", out, (int)pid);
	fd = open(g_col.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 && errno == EEXIST && out && *out) {
		snprintf(g_col.path, sizeof(g_col.path), "%s.%d", out, (int)pid);
		fd = open(g_col.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			  0644);
	}
	if (fd < 0)
		return -errno;
	g_col.crash_fd = fd;
	return apx_writer_open_fd(fd, hdr, NULL, &g_col.w);
}

static void fill_header(struct apx_rec *h, char *argv, size_t argv_len, char *cwd, size_t cwd_cap,
			struct utsname *un, char *kern, size_t kern_cap, char *run_id, size_t run_cap)
{
	uint64_t mono = clock_ns(CLOCK_MONOTONIC);
	uint64_t wall = clock_ns(CLOCK_REALTIME);
	uint64_t boot = clock_ns(CLOCK_BOOTTIME);
	const char *user = getenv("USER");
	const char *rank = getenv("RANK");
	const char *rid = getenv("APX_RUN_ID");
	uint64_t rv;

	apx_rec_init(h, APX_REC_HEADER);
	apx_rec_set_str(h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(h, APX_HEADER_PRODUCER_VERSION, APX_VERSION);
	h->v[APX_HEADER_CREATED_NS] = wall;
	if (uname(un) == 0) {
		apx_rec_set_str(h, APX_HEADER_HOSTNAME, un->nodename);
		snprintf(kern, kern_cap, "%s %s %s %s", un->sysname, un->release, un->version,
			 un->machine);
		apx_rec_set_str(h, APX_HEADER_KERNEL, kern);
	}
	h->v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	apx_rec_set_i64(h, APX_HEADER_REALTIME_OFFSET_NS, (int64_t)(wall - mono));
	apx_rec_set_i64(h, APX_HEADER_BOOTTIME_OFFSET_NS, (int64_t)(boot - mono));
	h->v[APX_HEADER_PID] = (uint64_t)getpid();
	h->v[APX_HEADER_PPID] = (uint64_t)getppid();
	apx_rec_set_bytes(h, APX_HEADER_ARGV, argv, argv_len);
	if (getcwd(cwd, cwd_cap))
		apx_rec_set_str(h, APX_HEADER_CWD, cwd);
	h->v[APX_HEADER_UID] = (uint64_t)getuid();
	if (!user)
		user = getenv("LOGNAME");
	apx_rec_set_str(h, APX_HEADER_USER, user);
	if (rid && *rid)
		snprintf(run_id, run_cap, "%s", rid);
	else
		snprintf(run_id, run_cap, "%d-%llu", (int)getpid(), (unsigned long long)wall);
	apx_rec_set_str(h, APX_HEADER_RUN_ID, run_id);
	if (rank && apx_parse_u64(rank, INT32_MAX, &rv) == 0)
		apx_rec_set_i64(h, APX_HEADER_RANK, (int64_t)rv);
	else
		apx_rec_set_i64(h, APX_HEADER_RANK, -1);
	h->v[APX_HEADER_START_NS] = mono;
}

static int alloc_state(void)
{
	size_t total;

	g_col.buf_bytes = (size_t)env_u64("APX_BUFFER_KB", 2048, 65536) * 1024;
	g_col.nbufs = (uint32_t)env_u64("APX_BUFFERS", 24, 1024);
	if (g_col.buf_bytes < 64 * 1024)
		g_col.buf_bytes = 64 * 1024;
	if (g_col.nbufs < 4)
		g_col.nbufs = 4;
	total = g_col.buf_bytes * g_col.nbufs;
	g_col.pool = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_col.pool == MAP_FAILED) {
		g_col.pool = NULL;
		return -ENOMEM;
	}
	g_col.valid = calloc(g_col.nbufs, sizeof(*g_col.valid));
	g_col.hp = calloc(HOSTPTR_SLOTS, sizeof(*g_col.hp));
	g_col.ev = calloc(EVENT_SLOTS, sizeof(*g_col.ev));
	g_col.enc = calloc(1, sizeof(*g_col.enc));
	if (!g_col.valid || !g_col.hp || !g_col.ev || !g_col.enc)
		return -ENOMEM;
	if (apx_cq_init(&g_col.free_q, g_col.nbufs) < 0 || apx_cq_init(&g_col.full_q, g_col.nbufs) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < g_col.nbufs; i++)
		(void)apx_cq_push(&g_col.free_q, i);
	g_col.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g_col.efd < 0)
		return -errno;
	g_col.enc->w = g_col.w;
	g_col.enc->api_level = g_col.api_level;
	g_col.enc->hp = g_col.hp;
	g_col.enc->hp_mask = HOSTPTR_SLOTS - 1;
	return 0;
}

static const CUpti_CallbackId light_driver_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit, CUPTI_DRIVER_TRACE_CBID_cuCtxResetPersistingL2Cache,
	CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetAttribute,
};
static const CUpti_CallbackId api_driver_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

/* Subscribe and enable everything. Returns 0, or -EBUSY when another tool holds CUPTI. */
static int start_cupti(char *holder, size_t holder_cap)
{
	CUpti_SubscriberParams sp;
	CUptiResult r;
	uint8_t zero_buffers = 1;
	size_t sz = sizeof(zero_buffers);

	memset(&sp, 0, sizeof(sp));
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "apx";
	sp.oldSubscriberName = holder;
	sp.oldSubscriberSize = holder_cap;
	r = cuptiSubscribe_v2(&g_col.sub, on_callback, NULL, &sp);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		return -EBUSY;
	if (r != CUPTI_SUCCESS)
		return -EIO;
	/* the clock first: every record must use it */
	r = cuptiActivityRegisterTimestampCallback(timestamp_cb);
	if (r != CUPTI_SUCCESS)
		degraded("clock: CLOCK_MONOTONIC timestamp callback refused, records use CUPTI's clock", r);
	(void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz,
					&zero_buffers);
	r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS)
		return -EIO;
	r = cuptiActivityEnableLaunchAttributes(1);
	if (r != CUPTI_SUCCESS)
		degraded("launch attributes: kernels carry no access-policy window", r);
	(void)cuptiEnableCallback(1, g_col.sub, CUPTI_CB_DOMAIN_RESOURCE,
				  CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	r = cuptiEnableCallback(1, g_col.sub, CUPTI_CB_DOMAIN_RESOURCE,
				CUPTI_CBID_RESOURCE_STREAM_ATTRIBUTE_CHANGED);
	if (r != CUPTI_SUCCESS)
		degraded("l2: stream access-policy windows not recorded", r);
	for (size_t i = 0; i < sizeof(light_driver_cbids) / sizeof(light_driver_cbids[0]); i++) {
		r = cuptiEnableCallback(1, g_col.sub, CUPTI_CB_DOMAIN_DRIVER_API, light_driver_cbids[i]);
		if (r != CUPTI_SUCCESS)
			degraded("callbacks: a copy/L2 driver callback was refused", r);
	}
	if (g_col.api_level)
		for (size_t i = 0; i < sizeof(api_driver_cbids) / sizeof(api_driver_cbids[0]); i++)
			(void)cuptiEnableCallback(1, g_col.sub, CUPTI_CB_DOMAIN_DRIVER_API,
						  api_driver_cbids[i]);
	if (!g_col.win_start_ns || clock_ns(CLOCK_MONOTONIC) >= g_col.win_start_ns)
		set_kinds(1, 1);
	else if (g_col.kinds & K_DEVICE)
		(void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
	return 0;
}

static int start(void)
{
	static char argv[65536], cwd[4096], kern[1024], run_id[256], holder[256];
	static struct utsname un;
	struct apx_rec hdr;
	const char *level = getenv("APX_LEVEL");
	const char *nvtx = getenv("NVTX_INJECTION64_PATH");
	char kinds[256];
	sigset_t all, old;
	int r;

	g_col.owner_pid = getpid();
	g_col.debug = getenv("APX_DEBUG") != NULL;
	if (g_col.debug) {
		void *frames[4];

		(void)backtrace(frames, 4);	/* loads libgcc now, not in the handler */
	}
	g_col.api_level = level && !strcmp(level, "api");
	g_col.kinds = LIGHT_KINDS | (g_col.api_level ? K_API : 0);
	if (nvtx && (strstr(nvtx, "cupti") || strstr(nvtx, "apx-watch")))
		g_col.kinds |= K_MARKER;
	g_col.kinds = parse_kinds(g_col.kinds, getenv("APX_KINDS"));
	g_col.period_ns = env_u64("APX_FLUSH_MS", 1000, 3600000) * 1000000ull;
	if (g_col.period_ns < 10000000)
		g_col.period_ns = 10000000;
	g_col.win_start_ns = env_u64("APX_WINDOW_START_NS", 0, UINT64_MAX);
	g_col.win_end_ns = env_u64("APX_WINDOW_END_NS", 0, UINT64_MAX);

	fill_header(&hdr, argv, read_cmdline(argv, sizeof(argv)), cwd, sizeof(cwd), &un, kern,
		    sizeof(kern), run_id, sizeof(run_id));
	r = open_trace(&hdr);
	if (r < 0) {
		say("cannot create the trace '%s': %s; this process is not profiled", g_col.path,
		    strerror(-r));
		return r;
	}
	r = alloc_state();
	if (r < 0) {
		say("out of memory for the trace buffers; this process is not profiled");
		goto fail;
	}
	add_kv("cuda_used", "yes");
	add_kv("level", g_col.api_level ? "api" : "light");
	kinds_text(g_col.kinds, kinds, sizeof(kinds));
	add_kv("kinds", kinds);

	r = start_cupti(holder, sizeof(holder));
	if (r == -EBUSY) {
		char msg[320];

		snprintf(msg, sizeof(msg), "cupti-taken: CUPTI is already used by '%s'",
			 holder[0] ? holder : "another tool");
		add_kv("degraded", msg);
		say("CUPTI is already in use by '%s' (one CUPTI client per process on CUDA 13.0): "
		    "apx records nothing in pid %d, the program runs untouched",
		    holder[0] ? holder : "another tool", (int)getpid());
		g_col.crash_fd = -1;
		(void)apx_writer_close(g_col.w, clock_ns(CLOCK_MONOTONIC), 0);
		g_col.w = NULL;
		return r;
	}
	if (r < 0) {
		say("CUPTI could not be initialised; this process is not profiled");
		goto fail;
	}
	prepare_crash_chunks(&hdr);
	drain_events();		/* degraded features found during start-up */

	/* the writer thread takes no signals: handlers run on the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&g_col.writer, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		say("cannot start the trace writer thread; this process is not profiled");
		set_kinds(0, 0);
		(void)cuptiUnsubscribe(g_col.sub);
		goto fail;
	}
	g_col.writer_started = 1;
	atexit(at_exit);
	pthread_atfork(NULL, NULL, at_fork_child);
	install_signal_handlers();
	return 0;
fail:
	g_col.crash_fd = -1;
	if (g_col.w)
		(void)apx_writer_close(g_col.w, clock_ns(CLOCK_MONOTONIC), 0);
	g_col.w = NULL;
	return r;
}

APX_EXPORT int InitializeInjection(void);

int InitializeInjection(void)
{
	static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
	static int done;
	const char *off = getenv("APX_DISABLE");

	pthread_mutex_lock(&once_lock);
	if (done) {
		pthread_mutex_unlock(&once_lock);
		return 1;
	}
	done = 1;
	pthread_mutex_unlock(&once_lock);
	if (off && *off && strcmp(off, "0"))
		return 1;
	(void)start();
	return 1;	/* never fail the program's cuInit */
}
