/*
 * src_replay.c - the kernel-replay source (`apx analyze --replay`): CUPTI's
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
 * The DRAM counters and the L2 sector hits come from a second measurement: CUPTI's kernel replay
 * saves and restores memory around its passes, and those copies leave dirty lines in L2 that
 * are written back during the measured passes (on the H200 DRAM writes +7 % to +347 % against
 * ncu's with one pass, tests/fixtures/hwc) and other lines in L2 than the program leaves (the
 * attention kernel's L2 hit rate 4-6 % high). So after a replayed launch, the next launches
 * (RP_ONE_PASS of them: one launch's DRAM writes vary by 5 % and more, the attention kernel's
 * 6.1 to 6.8 MB) of the same kernel with the same grid, block and shared memory are measured
 * in one pass (pm_sets.c's replay-one-pass set: DRAM bytes read and written, DRAM throughput,
 * L2 sector hits; one pass, so nothing to save, restore or replay): in the cache state the
 * program left, or, with APX_REPLAY_FLUSH=1 (--replay-flush), after apx's L2 sweep kernel on
 * its stream (l2_sweep.c), as ncu flushes caches before a pass. Each records passes 1 on its
 * counters, and, since CUPTI gives it no times either, the replayed launch's duration
 * (passes: the replay's). The analysis (view_counters.c) takes a kernel's DRAM counters and
 * L2 sector hits from its one-pass launches, from the replayed ones only for a kernel without
 * one (kv "replay_dram" says which cache state, "replay_one_pass" how many follow a replay),
 * and its L2 hit rate as those hits over the lookups of the replayed launch before them.
 * In the program's cache state, a launch right after a measured one (replayed or one-pass, of
 * any kernel) is not measured in one pass: after a replayed launch it would start in the L2
 * state CUPTI's passes and restores left (the H200's back-to-back randn kernels wrote 26 % less
 * than in ncu's one-pass run), and after a one-pass launch it wrote more than after a plain one
 * (the elementwise kernel after a one-pass GEMM 0.5-1.3 MB more in each of 12 processes; ncu
 * profiling the GEMM or not changed nothing), so the one-pass launches wait for launches after
 * a plain one (kv replay_one_pass_after). After the L2 sweep the state is the sweep's, and the
 * launch right after is taken.
 * One-pass launches do not count as launches of the kernel for the choice above.
 * finish() (writer thread) disables the profiler. Failures turn replay off for that context and
 * say so once. PM sampling and replay exclude each other (one profiling session per device):
 * apx analyze refuses both together.
 */
#include <math.h>
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
#define RP_ONE_PASS 3u			/* one-pass launches after each replayed one */
/* what a failed one-pass measurement leaves (the end of its message) */
#define FROM_REPLAY "; the DRAM counters and L2 hit rate come from the replay itself"

struct rp_ctx {
	_Atomic(CUcontext) ctx;		/* set once the profiler is ready on it */
	CUpti_RangeProfiler_Object *obj;
	struct apx_pm_host host;
	uint8_t *data;
	size_t data_size;
	struct apx_pm_host fhost;	/* the one-pass set (follow-up launches), its image */
	uint8_t *fdata;
	size_t fdata_size;
	_Atomic int one_pass_on;	/* one-pass measurements work on this context */
	uint32_t device;
	_Atomic int busy;		/* one range at a time per context */
};

struct rp_func {
	_Atomic uintptr_t f;		/* 0 = free slot */
	_Atomic uint32_t launches;
	_Atomic uint32_t replayed;
	_Atomic int match;		/* 1 matches the filter, -1 does not, 0 not decided yet */
	_Atomic uint64_t due_sig;	/* the shape whose one-pass launch is due, or 0 */
	_Atomic uint32_t one_pass_left;	/* one-pass launches still due after this one */
	_Atomic uint64_t dur_bits;	/* and the replayed launch's duration (a double's bits) */
};

static struct rp_state {
	int on;
	int flush;			/* --replay-flush: L2 swept before each one-pass launch */
	int one_pass;			/* the one-pass measurement is possible (its map) */
	uint32_t max;			/* first launches replayed per kernel */
	int have_re;
	regex_t re;
	struct apx_pm_spec spec;
	struct apx_collector *c;
	struct rp_ctx ctx[RP_CONTEXTS];
	struct rp_func fn[RP_FUNCS];
	int8_t one_pass_map[APX_PM_METRICS_MAX];	/* one-pass set index -> replay-set index */
	int8_t dur_idx;				/* the duration's replay-set index, or -1 */
	_Atomic uint64_t replays, kernels, spent_ns, failed, table_full, one_pass_done;
	_Atomic int said, profiler_init;
	_Atomic int after_measured;	/* the last launch was measured: none of one pass next */
} rp;

/* Per application thread: the range this thread opened at API enter, for its API exit. */
static __thread struct rp_ctx *open_ctx;
static __thread uint64_t open_ns;
static __thread struct rp_func *open_fn;
static __thread uint64_t open_sig;
static __thread int open_one_pass;		/* the range is a one-pass one */

static void fail_once(const char *what, int r)
{
	atomic_fetch_add(&rp.failed, 1);
	if (!atomic_exchange(&rp.said, 1))
		apx_degraded(rp.c, what, r);
}

static int image_init(struct rp_ctx *x, uint8_t *data, size_t size)
{
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params p = { .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };

	p.pRangeProfilerObject = x->obj;
	p.counterDataSize = size;
	p.pCounterData = data;
	return (int)cuptiRangeProfilerCounterDataImageInitialize(&p);
}

/* The size of a counter-data image for host's metrics (one range), or 0. Asked again before
 * each image is initialised: on the H200, initialising the one-pass set's image after the main
 * set had been sized failed until it was sized again (the profiler object seems to keep the
 * metrics last asked about here). */
static size_t image_size(struct rp_ctx *x, struct apx_pm_host *host)
{
	CUpti_RangeProfiler_GetCounterDataSize_Params ds = { .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };

	ds.pRangeProfilerObject = x->obj;
	ds.pMetricNames = host->names;
	ds.numMetrics = host->n;
	ds.maxNumOfRanges = 1;
	ds.maxNumRangeTreeNodes = 1;
	return cuptiRangeProfilerGetCounterDataSize(&ds) == CUPTI_SUCCESS ? ds.counterDataSize : 0;
}

/* Load host's configuration and a fresh image of its metrics (data, size bytes) into the
 * context's profiler: the image is sized again first, so that it is initialised for host's
 * metrics whichever configuration was loaded before. */
static int set_config(struct rp_ctx *x, struct apx_pm_host *host, uint8_t *data, size_t size,
		      CUpti_ProfilerReplayMode mode)
{
	CUpti_RangeProfiler_SetConfig_Params p = { .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
	size_t need = image_size(x, host);
	int r;

	if (!need || need > size)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if ((r = image_init(x, data, need)) != CUPTI_SUCCESS)
		return r;
	p.pRangeProfilerObject = x->obj;
	p.configSize = host->config_size;
	p.pConfig = host->config;
	p.counterDataImageSize = size;
	p.pCounterDataImage = data;
	p.range = CUPTI_AutoRange;
	p.replayMode = mode;
	p.maxRangesPerPass = 1;
	p.numNestingLevels = 1;
	p.minNestingLevel = 1;
	p.passIndex = 0;
	p.targetNestingLevel = 1;
	return (int)cuptiRangeProfilerSetConfig(&p);
}

static int main_config(struct rp_ctx *x)
{
	return set_config(x, &x->host, x->data, x->data_size, CUPTI_KernelReplay);
}

/* The one-pass set on a context: its configuration and image, loaded once to see that the
 * profiler takes them. Kernel replay, as the main set's: with one pass nothing is saved,
 * restored or replayed (CUPTI_UserReplay, tried first, left the profiler unable to submit
 * later ranges on the H200). Any failure leaves the replayed DRAM counters and L2 hit rate in
 * place, said once. */
static void one_pass_context(struct rp_ctx *x, const char *chip, const uint8_t *avail)
{
	struct apx_pm_spec spec;
	const char *why = NULL;
	char err[300];

	apx_pm_spec_of_set(apx_pm_replay_one_pass_set(), &spec);
	if (apx_pm_host_config(&x->fhost, APX_PM_RANGE, chip, avail, &spec, err, sizeof(err))) {
		fail_once("replay: the one-pass counters are refused on this device" FROM_REPLAY,
			  0);
		return;
	}
	if (x->fhost.passes != 1)
		why = "replay: the one-pass counters need more than one pass here" FROM_REPLAY;
	else if (!(x->fdata_size = image_size(x, &x->fhost)) || !(x->fdata = malloc(x->fdata_size)))
		why = "replay: no counter-data image for the one-pass counters" FROM_REPLAY;
	else if (set_config(x, &x->fhost, x->fdata, x->fdata_size, CUPTI_KernelReplay))
		why = "replay: the range profiler refused the one-pass configuration" FROM_REPLAY;
	if (why) {
		fail_once(why, 0);
		free(x->fdata);
		x->fdata = NULL;
		apx_pm_host_free(&x->fhost);
		return;
	}
	atomic_store(&x->one_pass_on, 1);
}

/* Context creation (application thread, inside the callback): enable and configure. */
void apx_replay_context(CUcontext ctx, uint32_t device)
{
	CUpti_Profiler_Initialize_Params ip = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUpti_Device_GetChipName_Params cn = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_Profiler_GetCounterAvailability_Params av = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Enable_Params en = { .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
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
	if (r) {
		free(avail);
		fail_once("replay: the replay metrics are refused on this device", r);
		return;
	}
	en.ctx = ctx;
	if ((r = (int)cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
		free(avail);
		apx_pm_host_free(&x->host);
		fail_once(r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
			  ? "replay: GPU performance counters are restricted to administrators "
			    "(run as root, or NVreg_RestrictProfilingToAdminUsers=0)"
			  : "replay: the range profiler is refused (another profiler holds the "
			    "counters?)", r);
		return;
	}
	x->obj = en.pRangeProfilerObject;
	if (rp.one_pass)
		one_pass_context(x, cn.pChipName, avail);
	free(avail);
	if (!(x->data_size = image_size(x, &x->host)) || !(x->data = malloc(x->data_size))) {
		fail_once("replay: no counter-data image", 0);
		goto off;
	}
	if ((r = main_config(x)) != CUPTI_SUCCESS) {
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
		free(x->fdata);
		x->fdata = NULL;
		atomic_store(&x->one_pass_on, 0);
		apx_pm_host_free(&x->fhost);
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

/* Open a range on x, which the caller holds (busy); it lets go of x when this fails. */
static int range_start(struct rp_ctx *x)
{
	CUpti_RangeProfiler_Start_Params st = { .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };

	st.pRangeProfilerObject = x->obj;
	if (cuptiRangeProfilerStart(&st) == CUPTI_SUCCESS)
		return 0;
	fail_once("replay: a profiling range could not start", 0);
	return -1;
}

/* Is this a later launch of replayed kernel s, of the same shape (range_enter: not right after
 * a measured launch, but with --replay-flush)? Then measure it in
 * one pass (after an L2 sweep on its stream with --replay-flush). Returns 1 when it opened
 * that range. */
static int one_pass_enter(const CUpti_CallbackData *cb, struct rp_func *s, CUstream stream,
			 uint64_t sig)
{
	uint64_t due = atomic_load_explicit(&s->due_sig, memory_order_relaxed);
	struct rp_ctx *x;
	int idle = 0, r;

	if (!due || due != sig || !(x = ctx_of(cb->context)) || !atomic_load(&x->one_pass_on) ||
	    !atomic_compare_exchange_strong(&x->busy, &idle, 1))
		return 0;
	if (!atomic_compare_exchange_strong(&s->due_sig, &due, 0)) {
		atomic_store(&x->busy, 0);	/* another thread took it */
		return 0;
	}
	open_ns = apx_mono_ns();
	if (rp.flush && apx_l2_sweep(rp.c, cb->context, x->device, stream)) {
		atomic_store(&x->one_pass_on, 0);	/* said once by l2_sweep.c */
		atomic_store(&x->busy, 0);
		return 0;
	}
	if ((r = set_config(x, &x->fhost, x->fdata, x->fdata_size, CUPTI_KernelReplay)) !=
	    CUPTI_SUCCESS) {
		atomic_store(&x->one_pass_on, 0);
		fail_once("replay: the one-pass configuration could not be loaded" FROM_REPLAY, r);
		if (main_config(x) != CUPTI_SUCCESS)
			fail_once("replay: the counter-data image could not be reset", 0);
		atomic_store(&x->busy, 0);
		return 0;
	}
	if (range_start(x)) {
		if (main_config(x) != CUPTI_SUCCESS)
			fail_once("replay: the counter-data image could not be reset", 0);
		atomic_store(&x->busy, 0);
		return 1;
	}
	open_ctx = x;
	open_fn = s;
	open_sig = sig;
	open_one_pass = 1;
	return 1;
}

static void range_enter(const CUpti_CallbackData *cb, uintptr_t f, CUstream stream,
			uint64_t sig)
{
	struct rp_func *s = func_slot(f);
	struct rp_ctx *x;
	uint32_t n;
	int m, idle = 0;
	int after = !rp.flush && atomic_load_explicit(&rp.after_measured, memory_order_relaxed);

	if (!s)
		goto plain;
	if (rp.one_pass && !after && one_pass_enter(cb, s, stream, sig))
		return;
	n = atomic_fetch_add_explicit(&s->launches, 1, memory_order_relaxed);
	m = atomic_load_explicit(&s->match, memory_order_relaxed);
	if (!m) {
		m = !rp.have_re || (cb->symbolName && !regexec(&rp.re, cb->symbolName, 0, NULL, 0))
			    ? 1 : -1;
		atomic_store(&s->match, m);
	}
	if (m < 0 || !chosen(n, atomic_load_explicit(&s->replayed, memory_order_relaxed)))
		goto plain;
	if (!(x = ctx_of(cb->context)) || !atomic_compare_exchange_strong(&x->busy, &idle, 1))
		goto plain;
	open_ns = apx_mono_ns();
	if (range_start(x)) {
		atomic_store(&x->busy, 0);
		goto plain;
	}
	atomic_fetch_add(&s->replayed, 1);
	open_ctx = x;
	open_fn = s;
	open_sig = sig;
	open_one_pass = 0;
	return;
plain:	/* runs as the program launched it: the next launch may be a one-pass one */
	if (after)
		atomic_store_explicit(&rp.after_measured, 0, memory_order_relaxed);
}

/* One ring event per counter of the n values v (record order: map[k] is v[k]'s replay-set
 * index; NULL: k itself). */
static void push_counters(struct rp_ctx *x, uint32_t corr, const double *v, size_t n,
			  const int8_t *map, size_t passes)
{
	uint64_t tid = (uint64_t)syscall(SYS_gettid);

	for (size_t k = 0; k < n; k++) {
		uint32_t idx = map ? (uint32_t)map[k] : (uint32_t)k;
		uint64_t pos, bits;
		struct apx_event *ev;

		if (!isfinite(v[k]))	/* NaN: CUPTI had no value */
			continue;
		ev = apx_ring_begin(rp.c, &pos);
		memcpy(&bits, &v[k], sizeof(bits));
		ev->kind = APX_EV_COUNTER;
		ev->cfg_kind = idx;
		ev->corr = corr;
		ev->device = x->device;
		ev->value = bits;
		ev->target = passes;
		ev->tid = tid;
		apx_ring_commit(ev, pos);
	}
}

/* A decoded range's values: the one-pass set's (and its replayed predecessor's duration), or
 * the replay set's (all of them: the analysis prefers the one-pass launches' DRAM counters and
 * L2 sector hits, and falls back on these for a kernel that had none). */
static void range_values(struct rp_ctx *x, uint32_t corr, int one_pass)
{
	const struct apx_pm_host *h = one_pass ? &x->fhost : &x->host;
	double v[APX_PM_METRICS_MAX];

	if (apx_pm_host_eval(h, one_pass ? x->fdata : x->data,
			     one_pass ? x->fdata_size : x->data_size, 0, v) != CUPTI_SUCCESS) {
		fail_once("replay: a replayed range had no values", 0);
		return;
	}
	if (one_pass) {
		uint64_t bits = atomic_load(&open_fn->dur_bits);
		double d;

		push_counters(x, corr, v, h->n, rp.one_pass_map, 1);
		memcpy(&d, &bits, sizeof(d));
		if (rp.dur_idx >= 0 && bits)	/* 0: the replayed launch had no duration */
			push_counters(x, corr, &d, 1, &rp.dur_idx, x->host.passes);
		atomic_fetch_add(&rp.one_pass_done, 1);
		if (atomic_fetch_sub(&open_fn->one_pass_left, 1) > 1)	/* the next of this shape */
			atomic_store(&open_fn->due_sig, open_sig);
		return;
	}
	push_counters(x, corr, v, h->n, NULL, h->passes);
	atomic_fetch_add(&rp.replays, 1);
	if (atomic_load(&x->one_pass_on)) {	/* the next launches of this shape: one pass */
		uint64_t bits = 0;

		if (rp.dur_idx >= 0)
			memcpy(&bits, &v[rp.dur_idx], sizeof(bits));
		atomic_store(&open_fn->dur_bits, bits);
		atomic_store(&open_fn->one_pass_left, RP_ONE_PASS);
		atomic_store(&open_fn->due_sig, open_sig);
	}
}

static void range_exit(const CUpti_CallbackData *cb)
{
	CUpti_RangeProfiler_Stop_Params sp = { .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_DecodeData_Params dd = { .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = { .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	struct rp_ctx *x = open_ctx;
	int r, one_pass = open_one_pass;

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
	info.pCounterDataImage = one_pass ? x->fdata : x->data;
	info.counterDataImageSize = one_pass ? x->fdata_size : x->data_size;
	if (cuptiRangeProfilerGetCounterDataInfo(&info) == CUPTI_SUCCESS && info.numTotalRanges)
		range_values(x, cb->correlationId, one_pass);
	else
		fail_once("replay: a replayed range had no values", 0);
done:
	atomic_store_explicit(&rp.after_measured, 1, memory_order_relaxed);
	if ((r = main_config(x)) != CUPTI_SUCCESS)
		fail_once("replay: the counter-data image could not be reset", r);
	atomic_fetch_add(&rp.spent_ns, apx_mono_ns() - open_ns);
	atomic_store(&x->busy, 0);
}

/* A launch's shape (grid, block, dynamic shared memory) as a nonzero hash: the one-pass
 * measurement takes the next launches of a replayed kernel only if their shape is the same. */
static uint64_t shape(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		      unsigned bz, unsigned smem)
{
	const unsigned part[7] = { gx, gy, gz, bx, by, bz, smem };
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < 7; i++)
		h = (h ^ part[i]) * 1099511628211ull;
	return h | 1;
}

/* Launch callbacks (application threads): cbid is one of cuLaunchKernel[Ex][_ptsz]. */
void apx_replay_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uintptr_t f;
	CUstream stream;
	uint64_t sig = 0;	/* the shape, for the one-pass launch */

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
		const CUlaunchConfig *g = p->config;

		f = (uintptr_t)p->f;
		stream = g ? g->hStream : NULL;
		if (g)
			sig = shape(g->gridDimX, g->gridDimY, g->gridDimZ, g->blockDimX,
				    g->blockDimY, g->blockDimZ, g->sharedMemBytes);
	} else {
		const cuLaunchKernel_params *p = cb->functionParams;

		f = (uintptr_t)p->f;
		stream = p->hStream;
		sig = shape(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
			    p->blockDimZ, p->sharedMemBytes);
	}
	if (f)
		range_enter(cb, f, stream, sig);
}

int apx_replay_wanted(void)
{
	return rp.on;
}

/* Where each metric of the one-pass set sits in the replay set, and the duration's;
 * rp.one_pass when all of them do. */
static void one_pass_map(const struct apx_pm_set *set)
{
	const struct apx_pm_set *fs = apx_pm_replay_one_pass_set();

	rp.dur_idx = -1;
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->metrics[i].name, "gpu__time_duration.sum"))
			rp.dur_idx = (int8_t)i;

	for (size_t k = 0; k < fs->n; k++) {
		rp.one_pass_map[k] = -1;
		for (size_t i = 0; i < set->n; i++)
			if (!strcmp(fs->metrics[k].name, set->metrics[i].name))
				rp.one_pass_map[k] = (int8_t)i;
		if (rp.one_pass_map[k] < 0) {	/* pm_sets.c keeps the one a subset of the other */
			apx_degraded(rp.c, "replay: the one-pass set is not part of the replay set"
				     FROM_REPLAY, 0);
			return;
		}
	}
	rp.one_pass = 1;
}

static int replay_start(struct apx_collector *c)
{
	const struct apx_pm_set *set = apx_pm_replay_set();
	const char *re = apx_getenv("APX_REPLAY_KERNELS");

	rp.c = c;
	if (!apx_getenv("APX_REPLAY") || strcmp(apx_getenv("APX_REPLAY"), "1"))
		return 0;
	rp.max = (uint32_t)apx_env_u64("APX_REPLAY_MAX", 5, 1000000);
	rp.flush = apx_getenv("APX_REPLAY_FLUSH") && !strcmp(apx_getenv("APX_REPLAY_FLUSH"), "1");
	if (re && *re) {
		if (regcomp(&rp.re, re, REG_EXTENDED | REG_NOSUB)) {
			apx_degraded(c, "replay: APX_REPLAY_KERNELS is not an extended regular "
				     "expression; no kernel is replayed", 0);
			return -1;
		}
		rp.have_re = 1;
	}
	apx_pm_spec_of_set(set, &rp.spec);
	one_pass_map(set);
	rp.on = 1;
	return 0;
}

static void replay_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[520], dram[160] = "";

	(void)now_ns;
	if (!rp.on)
		return;
	if (rp.one_pass)
		snprintf(dram, sizeof(dram), "; DRAM counters and L2 sector hits from %llu "
			 "launches measured in one pass %s",
			 (unsigned long long)atomic_load(&rp.one_pass_done),
			 rp.flush ? "after an L2 sweep" : "in the program's cache state");
	snprintf(text, sizeof(text), "%llu launches of %llu kernels replayed (first %u per kernel, "
		 "then sampled), %zu passes each, %.3f s spent replaying; %llu failed%s%s",
		 (unsigned long long)atomic_load(&rp.replays),
		 (unsigned long long)atomic_load(&rp.kernels), rp.max,
		 rp.ctx[0].host.passes, (double)atomic_load(&rp.spent_ns) / 1e9,
		 (unsigned long long)atomic_load(&rp.failed),
		 atomic_load(&rp.table_full) ? "; the kernel table was full" : "", dram);
	apx_add_kv(c, "replay", text);
	if (rp.one_pass) {	/* the cache state of the one-pass launches, for the analysis */
		apx_add_kv(c, "replay_dram", rp.flush ? "after-l2-sweep" : "program-order");
		snprintf(text, sizeof(text), "%u", RP_ONE_PASS);
		apx_add_kv(c, "replay_one_pass", text);	/* after each replayed launch, at most */
		if (!rp.flush)	/* which launches may be one-pass ones (replay_check.py) */
			apx_add_kv(c, "replay_one_pass_after", "plain-launch");
	}
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
