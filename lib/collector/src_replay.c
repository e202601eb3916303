/*
 * src_replay.c - the kernel-replay source (`apx analyze --replay`, issue 13 item 2): CUPTI's
 * range profiler with kernel replay on a bounded sample of launches per kernel (the first
 * APX_REPLAY_MAX launches of each kernel whose symbol name matches APX_REPLAY_KERNELS, then
 * launches number 2N, 4N, 8N, ... up to 8 more), so the program still finishes. Each replayed
 * launch gets the counters of pm_sets.c's replay set (duration, occupancy, SM and DRAM
 * throughput, L1 and L2 hit rates, DRAM bytes, bank conflicts, tensor pipe, warp stalls), as
 * COUNTER records joined to its kernel record by correlation id.
 *
 * Who runs what: start() (the thread that initialised CUDA) reads the options; the
 * context-creation callback (src_callbacks.c) enables the range profiler on the context and
 * configures it; the launch callbacks (cuLaunchKernel[Ex], on the launching application
 * thread) decide in a lock-free table keyed by the kernel's CUfunction whether this launch is
 * replayed, and if so start a profiling range at API enter and, at API exit, stop it (CUPTI
 * replays the kernel once per pass inside the launch), decode and evaluate it, and push one
 * ring event per counter. This is deliberately expensive for the launches chosen and costs one
 * table lookup for the others; the time spent is summed and written at exit (kv "replay").
 * With APX_REPLAY_FLUSH=1 (--replay-flush) each chosen launch is preceded by apx's L2 sweep
 * kernel on its stream (l2_sweep.c), as ncu flushes caches before its passes.
 * finish() (writer thread) disables the profiler. Failures turn replay off for that context and
 * say so once. PM sampling and replay exclude each other (one profiling session per device):
 * apx analyze refuses both together.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "collector/collector.h"
#include "collector/pm_host.h"

#include "base/banned.h"

#define RP_CONTEXTS 32
#define RP_FUNCS 4096u			/* kernels (CUfunction handles) tracked */
#define RP_EXTRA 8u			/* sampled launches after the first N */

struct rp_ctx {
	_Atomic(CUcontext) ctx;		/* set once the profiler is ready on it */
	CUpti_RangeProfiler_Object *obj;
	struct apx_pm_host host;
	uint8_t *data;
	size_t data_size;
	uint32_t device;
	_Atomic int busy;		/* one range at a time per context */
};

struct rp_func {
	_Atomic uintptr_t f;		/* 0 = free slot */
	_Atomic uint32_t launches;
	_Atomic uint32_t replayed;
	_Atomic int match;		/* 1 matches the filter, -1 does not, 0 not decided yet */
};

static struct rp_state {
	int on;
	int flush;			/* --replay-flush: L2 swept before each replay (l2_sweep.c) */
	uint32_t max;			/* first launches replayed per kernel */
	int have_re;
	regex_t re;
	struct apx_pm_spec spec;
	struct apx_collector *c;
	struct rp_ctx ctx[RP_CONTEXTS];
	struct rp_func fn[RP_FUNCS];
	_Atomic uint64_t replays, kernels, spent_ns, failed, table_full;
	_Atomic int said, profiler_init;
} rp;

/* Per application thread: the range this thread opened at API enter, for its API exit. */
static __thread struct rp_ctx *open_ctx;
static __thread uint64_t open_ns;

static void fail_once(const char *what, int r)
{
	atomic_fetch_add(&rp.failed, 1);
	if (!atomic_exchange(&rp.said, 1))
		apx_degraded(rp.c, what, r);
}

static int image_init(struct rp_ctx *x)
{
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params p = { .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };

	p.pRangeProfilerObject = x->obj;
	p.counterDataSize = x->data_size;
	p.pCounterData = x->data;
	return (int)cuptiRangeProfilerCounterDataImageInitialize(&p);
}

static int set_config(struct rp_ctx *x)
{
	CUpti_RangeProfiler_SetConfig_Params p = { .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };

	p.pRangeProfilerObject = x->obj;
	p.configSize = x->host.config_size;
	p.pConfig = x->host.config;
	p.counterDataImageSize = x->data_size;
	p.pCounterDataImage = x->data;
	p.range = CUPTI_AutoRange;
	p.replayMode = CUPTI_KernelReplay;
	p.maxRangesPerPass = 1;
	p.numNestingLevels = 1;
	p.minNestingLevel = 1;
	p.passIndex = 0;
	p.targetNestingLevel = 1;
	return (int)cuptiRangeProfilerSetConfig(&p);
}

/* Context creation (application thread, inside the callback): enable and configure. */
void apx_replay_context(CUcontext ctx, uint32_t device)
{
	CUpti_Profiler_Initialize_Params ip = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUpti_Device_GetChipName_Params cn = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_Profiler_GetCounterAvailability_Params av = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Enable_Params en = { .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataSize_Params ds = { .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
	struct rp_ctx *x = NULL;
	uint8_t *avail = NULL;
	char err[300];
	int r;

	if (!rp.on)
		return;
	for (size_t i = 0; i < RP_CONTEXTS && !x; i++)
		if (!rp.ctx[i].obj && !atomic_load(&rp.ctx[i].ctx))
			x = &rp.ctx[i];
	if (!x) {
		fail_once("replay: more contexts than apx tracks; later ones are not replayed", 0);
		return;
	}
	if (!atomic_load(&rp.profiler_init)) {	/* once per process (contexts come one by one) */
		if ((r = (int)cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS) {
			fail_once("replay: cuptiProfilerInitialize failed", r);
			return;
		}
		atomic_store(&rp.profiler_init, 1);
	}
	cn.deviceIndex = device;
	if ((r = (int)cuptiDeviceGetChipName(&cn)) != CUPTI_SUCCESS) {
		fail_once("replay: no chip name", r);
		return;
	}
	av.ctx = ctx;
	if ((r = (int)cuptiProfilerGetCounterAvailability(&av)) != CUPTI_SUCCESS ||
	    !(avail = malloc(av.counterAvailabilityImageSize))) {
		fail_once("replay: no counter availability (another profiler on the device?)", r);
		return;
	}
	av.pCounterAvailabilityImage = avail;
	r = (int)cuptiProfilerGetCounterAvailability(&av);
	if (r == CUPTI_SUCCESS)
		r = apx_pm_host_config(&x->host, APX_PM_RANGE, cn.pChipName, avail, &rp.spec, err,
				       sizeof(err)) ? -1 : 0;
	free(avail);
	if (r) {
		fail_once("replay: the replay metrics are refused on this device", r);
		return;
	}
	en.ctx = ctx;
	if ((r = (int)cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
		apx_pm_host_free(&x->host);
		fail_once(r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
			  ? "replay: GPU performance counters are restricted to administrators "
			    "(run as root, or NVreg_RestrictProfilingToAdminUsers=0)"
			  : "replay: the range profiler is refused (another profiler holds the "
			    "counters?)", r);
		return;
	}
	x->obj = en.pRangeProfilerObject;
	ds.pRangeProfilerObject = x->obj;
	ds.pMetricNames = x->host.names;
	ds.numMetrics = x->host.n;
	ds.maxNumOfRanges = 1;
	ds.maxNumRangeTreeNodes = 1;
	if ((r = (int)cuptiRangeProfilerGetCounterDataSize(&ds)) != CUPTI_SUCCESS ||
	    !(x->data = malloc(ds.counterDataSize))) {
		fail_once("replay: no counter-data image", r);
		goto off;
	}
	x->data_size = ds.counterDataSize;
	if ((r = image_init(x)) != CUPTI_SUCCESS || (r = set_config(x)) != CUPTI_SUCCESS) {
		fail_once("replay: the range profiler refused its configuration", r);
		goto off;
	}
	x->device = device;
	atomic_store(&x->ctx, ctx);
	return;
off:
	{
		CUpti_RangeProfiler_Disable_Params dp = { .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };

		dp.pRangeProfilerObject = x->obj;
		(void)cuptiRangeProfilerDisable(&dp);
		x->obj = NULL;
		free(x->data);
		x->data = NULL;
		apx_pm_host_free(&x->host);
	}
}

static struct rp_func *func_slot(uintptr_t f)
{
	uint32_t h = (uint32_t)((f >> 4) * 2654435761u) & (RP_FUNCS - 1);

	for (uint32_t k = 0; k < 64; k++) {
		struct rp_func *s = &rp.fn[(h + k) & (RP_FUNCS - 1)];
		uintptr_t cur = atomic_load_explicit(&s->f, memory_order_acquire), zero = 0;

		if (cur == f)
			return s;
		if (!cur && atomic_compare_exchange_strong(&s->f, &zero, f)) {
			atomic_fetch_add(&rp.kernels, 1);
			return s;
		}
		if (!cur && atomic_load(&s->f) == f)
			return s;
	}
	atomic_fetch_add(&rp.table_full, 1);
	return NULL;
}

/* Is this launch (the n-th of its kernel, from 0) one to replay? The first N, then the
 * launches numbered (from 1) 2N, 4N, 8N, ... */
static int chosen(uint32_t n, uint32_t done)
{
	uint32_t k;

	if (n < rp.max)
		return 1;
	if (!rp.max || done >= rp.max + RP_EXTRA || (n + 1) % rp.max)
		return 0;
	k = (n + 1) / rp.max;
	return k >= 2 && (k & (k - 1)) == 0;
}

static struct rp_ctx *ctx_of(CUcontext ctx)
{
	for (size_t i = 0; i < RP_CONTEXTS; i++)
		if (atomic_load_explicit(&rp.ctx[i].ctx, memory_order_acquire) == ctx)
			return &rp.ctx[i];
	return NULL;
}

static void range_enter(const CUpti_CallbackData *cb, uintptr_t f, CUstream stream)
{
	CUpti_RangeProfiler_Start_Params st = { .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	struct rp_func *s = func_slot(f);
	struct rp_ctx *x;
	uint32_t n;
	int m, idle = 0;

	if (!s)
		return;
	n = atomic_fetch_add_explicit(&s->launches, 1, memory_order_relaxed);
	m = atomic_load_explicit(&s->match, memory_order_relaxed);
	if (!m) {
		m = !rp.have_re || (cb->symbolName && !regexec(&rp.re, cb->symbolName, 0, NULL, 0))
			    ? 1 : -1;
		atomic_store(&s->match, m);
	}
	if (m < 0 || !chosen(n, atomic_load_explicit(&s->replayed, memory_order_relaxed)))
		return;
	if (!(x = ctx_of(cb->context)) || !atomic_compare_exchange_strong(&x->busy, &idle, 1))
		return;
	open_ns = apx_mono_ns();
	if (rp.flush)
		(void)apx_l2_sweep(rp.c, cb->context, x->device, stream);
	st.pRangeProfilerObject = x->obj;
	if (cuptiRangeProfilerStart(&st) != CUPTI_SUCCESS) {
		atomic_store(&x->busy, 0);
		fail_once("replay: a profiling range could not start", 0);
		return;
	}
	atomic_fetch_add(&s->replayed, 1);
	open_ctx = x;
}

static void push_counters(struct rp_ctx *x, uint32_t corr, const double *v)
{
	for (size_t k = 0; k < x->host.n; k++) {
		uint64_t pos, bits;
		struct apx_event *ev = apx_ring_begin(rp.c, &pos);

		memcpy(&bits, &v[k], sizeof(bits));
		ev->kind = APX_EV_COUNTER;
		ev->cfg_kind = (uint32_t)k;
		ev->corr = corr;
		ev->device = x->device;
		ev->value = bits;
		ev->target = x->host.passes;
		ev->tid = (uint64_t)syscall(SYS_gettid);
		apx_ring_commit(ev, pos);
	}
}

static void range_exit(const CUpti_CallbackData *cb)
{
	CUpti_RangeProfiler_Stop_Params sp = { .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_DecodeData_Params dd = { .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = { .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	struct rp_ctx *x = open_ctx;
	double v[APX_PM_METRICS_MAX];
	int r;

	open_ctx = NULL;
	sp.pRangeProfilerObject = x->obj;
	if ((r = (int)cuptiRangeProfilerStop(&sp)) != CUPTI_SUCCESS || !sp.isAllPassSubmitted) {
		fail_once("replay: the replay did not submit every pass", r);
		goto done;
	}
	dd.pRangeProfilerObject = x->obj;
	if ((r = (int)cuptiRangeProfilerDecodeData(&dd)) != CUPTI_SUCCESS) {
		fail_once("replay: decoding a replayed range failed", r);
		goto done;
	}
	info.pCounterDataImage = x->data;
	info.counterDataImageSize = x->data_size;
	if (cuptiRangeProfilerGetCounterDataInfo(&info) == CUPTI_SUCCESS && info.numTotalRanges &&
	    apx_pm_host_eval(&x->host, x->data, x->data_size, 0, v) == CUPTI_SUCCESS) {
		push_counters(x, cb->correlationId, v);
		atomic_fetch_add(&rp.replays, 1);
	} else {
		fail_once("replay: a replayed range had no values", 0);
	}
	if ((r = image_init(x)) != CUPTI_SUCCESS || (r = set_config(x)) != CUPTI_SUCCESS)
		fail_once("replay: the counter-data image could not be reset", r);
done:
	atomic_fetch_add(&rp.spent_ns, apx_mono_ns() - open_ns);
	atomic_store(&x->busy, 0);
}

/* Launch callbacks (application threads): cbid is one of cuLaunchKernel[Ex][_ptsz]. */
void apx_replay_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uintptr_t f;
	CUstream stream;

	if (!rp.on || apx_l2_sweeping())	/* the flush kernel's own launch */
		return;
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (open_ctx)
			range_exit(cb);
		return;
	}
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
	    cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
		const cuLaunchKernelEx_params *p = cb->functionParams;

		f = (uintptr_t)p->f;
		stream = p->config ? p->config->hStream : NULL;
	} else {
		const cuLaunchKernel_params *p = cb->functionParams;

		f = (uintptr_t)p->f;
		stream = p->hStream;
	}
	if (f)
		range_enter(cb, f, stream);
}

int apx_replay_wanted(void)
{
	return rp.on;
}

static int replay_start(struct apx_collector *c)
{
	const struct apx_pm_set *set = apx_pm_replay_set();
	const char *re = getenv("APX_REPLAY_KERNELS");

	rp.c = c;
	if (!getenv("APX_REPLAY") || strcmp(getenv("APX_REPLAY"), "1"))
		return 0;
	rp.max = (uint32_t)apx_env_u64("APX_REPLAY_MAX", 5, 1000000);
	rp.flush = getenv("APX_REPLAY_FLUSH") && !strcmp(getenv("APX_REPLAY_FLUSH"), "1");
	if (re && *re) {
		if (regcomp(&rp.re, re, REG_EXTENDED | REG_NOSUB)) {
			apx_degraded(c, "replay: APX_REPLAY_KERNELS is not an extended regular "
				     "expression; no kernel is replayed", 0);
			return -1;
		}
		rp.have_re = 1;
	}
	rp.spec.set = set->name;
	memcpy(rp.spec.m, set->metrics, set->n * sizeof(set->metrics[0]));
	rp.spec.n = set->n;
	rp.on = 1;
	return 0;
}

static void replay_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[400];

	(void)now_ns;
	if (!rp.on)
		return;
	snprintf(text, sizeof(text), "%llu launches of %llu kernels replayed (first %u per kernel, "
		 "then sampled), %zu passes each, %.3f s spent replaying; %llu failed%s",
		 (unsigned long long)atomic_load(&rp.replays),
		 (unsigned long long)atomic_load(&rp.kernels), rp.max,
		 rp.ctx[0].host.passes, (double)atomic_load(&rp.spent_ns) / 1e9,
		 (unsigned long long)atomic_load(&rp.failed),
		 atomic_load(&rp.table_full) ? "; the kernel table was full" : "");
	apx_add_kv(c, "replay", text);
	for (size_t i = 0; i < RP_CONTEXTS; i++) {
		struct rp_ctx *x = &rp.ctx[i];
		CUpti_RangeProfiler_Disable_Params dp = { .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };

		if (!x->obj || atomic_load(&x->busy))
			continue;
		atomic_store(&x->ctx, NULL);
		dp.pRangeProfilerObject = x->obj;
		(void)cuptiRangeProfilerDisable(&dp);
		x->obj = NULL;
	}
}

const struct apx_source apx_source_replay = {
	.name = "replay",
	.start = replay_start,
	.finish = replay_finish,
};
