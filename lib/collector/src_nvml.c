/*
 * src_nvml.c - the power and clock source: every 50 ms, NVML's power draw (the power now where
 * the driver gives it, NVML_FI_DEV_POWER_INSTANT, else its 1 s average), enforced power
 * limit, SM clock and whether the software power cap holds the clocks down, for each device
 * the program created a context on, as METRIC records over the interval since the previous
 * reading (nvml_metrics.h: nvml.power, nvml.power_limit, nvml.clock_sm,
 * nvml.power_capped), and once per device its active NVLink links (nvml.nvlink_links: the
 * link peak of the ranks' collectives and of peer copies, lib/analysis/ranks.c, p2p.c). apx
 * report shows them with the device metrics and reads the power cap from them: a GPU at its
 * cap runs slower once it idles less (lib/analysis/power_cap.c).
 *
 * Who runs what: start() (the thread that initialised CUDA) starts one sampler thread of its
 * own; the context-creation callback (src_callbacks.c) marks the device as used
 * (apx_nvml_device_seen, lock-free); the sampler loads libnvidia-ml.so.1 (dlopen, no build
 * dependency), finds each marked device's NVML handle by its UUID (so CUDA_VISIBLE_DEVICES is
 * respected), reads, and pushes ring events the writer encodes (encode.c). stop() (the exiting
 * thread) stops and joins it. Nothing runs on the program's threads but the marking. Like the
 * activity kinds, it reads nothing outside the --delay/--duration window or the capture ranges
 * (c->enabled). Without
 * NVML, or APX_OFF=nvml, the source is off and says so once; a value NVML does not give on a
 * device is left out, not written as 0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/gpu_uuid.h"
#include "base/nvml_abi.h"
#include "collector/collector.h"
#include "collector/nvml_metrics.h"

#include "base/banned.h"

#define NV_DEVICES 64			/* CUDA ordinals tracked (a bit each) */
#define NV_PERIOD_NS 50000000ull
#define NV_NVLINK_MAX 18u		/* NVML_NVLINK_MAX_LINKS (Hopper, Blackwell) */
#define NV_NOT_SUPPORTED 3		/* NVML_ERROR_NOT_SUPPORTED */

static struct {
	struct apx_collector *c;
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*fields)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*limit)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned int, int *);
	nvmlDevice_t dev[NV_DEVICES];
	uint64_t links_done;		/* sampler thread: devices whose NVLinks were counted */
	uint64_t mapped;		/* sampler thread: devices with a handle (or given up) */
	uint64_t prev_ns[NV_DEVICES];
	pthread_t thread;
	int started;
	_Atomic uint64_t seen;		/* devices with a context (callbacks) */
	_Atomic int stop;
	_Atomic uint64_t samples;
	_Atomic uint64_t spent_ns, worst_ns;	/* in sample(): what the readings cost */
} nv;

void apx_nvml_device_seen(uint32_t device)
{
	if (device < NV_DEVICES)
		atomic_fetch_or_explicit(&nv.seen, 1ull << device, memory_order_relaxed);
}

static void *sym(const char *a, const char *b)
{
	void *p = dlsym(nv.lib, a);

	return p || !b ? p : dlsym(nv.lib, b);
}

/* Load NVML and initialise it; a reason when it cannot be had. */
static const char *nvml_open(void)
{
	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib)
		return "nvml: libnvidia-ml.so.1 not found; power and clocks not sampled";
	*(void **)&nv.init = sym("nvmlInit_v2", "nvmlInit");
	*(void **)&nv.shutdown = sym("nvmlShutdown", NULL);
	*(void **)&nv.by_uuid = sym("nvmlDeviceGetHandleByUUID", NULL);
	*(void **)&nv.power = sym("nvmlDeviceGetPowerUsage", NULL);
	*(void **)&nv.fields = sym("nvmlDeviceGetFieldValues", NULL);
	*(void **)&nv.limit = sym("nvmlDeviceGetEnforcedPowerLimit", NULL);
	*(void **)&nv.clock = sym("nvmlDeviceGetClockInfo", NULL);
	*(void **)&nv.reasons = sym("nvmlDeviceGetCurrentClocksEventReasons",
				    "nvmlDeviceGetCurrentClocksThrottleReasons");
	*(void **)&nv.link_state = sym("nvmlDeviceGetNvLinkState", NULL);
	if (!nv.init || !nv.shutdown || !nv.by_uuid)
		return "nvml: libnvidia-ml.so.1 lacks nvmlInit or nvmlDeviceGetHandleByUUID; power "
		       "and clocks not sampled";
	if (nv.init() != NVML_SUCCESS)
		return "nvml: nvmlInit failed; power and clocks not sampled";
	return NULL;
}

/* The NVML handle of CUDA device ordinal, by its UUID; -1 when it has none. */
static int map_device(uint32_t ordinal)
{
	typedef CUresult (*get_t)(CUdevice *, int);
	typedef CUresult (*uuid_t_)(CUuuid *, CUdevice);
	get_t get = (get_t)apx_cuda_sym("cuDeviceGet");
	uuid_t_ uuid = (uuid_t_)apx_cuda_sym("cuDeviceGetUuid_v2");
	char text[APX_GPU_UUID_TEXT];
	CUdevice d;
	CUuuid u;

	if (!uuid)
		uuid = (uuid_t_)apx_cuda_sym("cuDeviceGetUuid");
	if (!get || !uuid || get(&d, (int)ordinal) != CUDA_SUCCESS || uuid(&u, d) != CUDA_SUCCESS)
		return -1;
	apx_gpu_uuid_text(text, (const uint8_t *)u.bytes);
	return nv.by_uuid(text, &nv.dev[ordinal]) == NVML_SUCCESS ? 0 : -1;
}

static void push(uint32_t device, unsigned idx, double v, uint64_t t0, uint64_t t1)
{
	uint64_t pos, bits;
	struct apx_event *ev = apx_ring_begin(nv.c, &pos);

	memcpy(&bits, &v, sizeof(bits));
	ev->kind = APX_EV_METRIC;
	ev->cfg_kind = idx;
	ev->device = device;
	ev->ts_ns = t0;
	ev->end_ns = t1;
	ev->value = bits;
	apx_ring_commit(ev, pos);
}

/* The power now in mW (NVML's field, where the driver has it): 1, or 0. */
static int power_now(nvmlDevice_t d, double *mw)
{
	nvmlFieldValue_t f = { .fieldId = NVML_FI_DEV_POWER_INSTANT };

	if (!nv.fields || nv.fields(d, 1, &f) != NVML_SUCCESS || f.nvmlReturn != NVML_SUCCESS)
		return 0;
	switch (f.valueType) {
	case 0: *mw = f.value.dVal; return 1;
	case 1: *mw = f.value.uiVal; return 1;
	case 2: *mw = (double)f.value.ulVal; return 1;
	case 3: *mw = (double)f.value.ullVal; return 1;
	case 4: *mw = (double)f.value.sllVal; return 1;
	default: return 0;
	}
}

/* One reading of device ordinal i, over [prev, now). */
static void sample(uint32_t i, uint64_t prev, uint64_t now)
{
	nvmlDevice_t d = nv.dev[i];
	unsigned long long why;
	unsigned int v;
	double w;

	if (power_now(d, &w))
		push(i, APX_NV_POWER, w / 1000.0, prev, now);
	else if (nv.power && nv.power(d, &v) == NVML_SUCCESS)
		push(i, APX_NV_POWER, v / 1000.0, prev, now);
	if (nv.limit && nv.limit(d, &v) == NVML_SUCCESS)
		push(i, APX_NV_LIMIT, v / 1000.0, prev, now);
	if (nv.clock && nv.clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
		push(i, APX_NV_CLOCK_SM, v, prev, now);
	if (nv.reasons && nv.reasons(d, &why) == NVML_SUCCESS)
		push(i, APX_NV_CAPPED, why & NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP ? 1.0 : 0.0,
		     prev, now);
	if (nv.link_state && !(nv.links_done >> i & 1)) {	/* the topology, once a device */
		unsigned links = 0, answered = 0, unsupported = 0;

		for (unsigned l = 0; l < NV_NVLINK_MAX; l++) {
			int on = 0;
			nvmlReturn_t r = nv.link_state(d, l, &on);

			answered += r == NVML_SUCCESS;
			unsupported += r == NV_NOT_SUPPORTED;
			links += r == NVML_SUCCESS && on == 1;	/* NVML_FEATURE_ENABLED */
		}
		nv.links_done |= 1ull << i;
		/* links that answer, or none at all (a PCIe-only GPU): else unknown, nothing */
		if (answered || unsupported == NV_NVLINK_MAX)
			push(i, APX_NV_NVLINKS, links, now, now);
	}
	atomic_fetch_add_explicit(&nv.samples, 1, memory_order_relaxed);
}

static void *sampler_main(void *arg)
{
	const char *why;
	sigset_t sync;

	(void)arg;
	sigemptyset(&sync);	/* a fault of its own still reaches crash.c's handlers */
	sigaddset(&sync, SIGSEGV);
	sigaddset(&sync, SIGBUS);
	sigaddset(&sync, SIGILL);
	sigaddset(&sync, SIGFPE);
	pthread_sigmask(SIG_UNBLOCK, &sync, NULL);
	why = nvml_open();
	if (why) {
		apx_degraded(nv.c, why, 0);
		return NULL;
	}
	while (!atomic_load(&nv.stop)) {
		struct timespec ts = { 0, (long)NV_PERIOD_NS };
		uint64_t seen = atomic_load_explicit(&nv.seen, memory_order_relaxed), now;

		for (uint32_t i = 0; i < NV_DEVICES; i++) {
			if (!(seen >> i & 1))
				continue;
			now = apx_mono_ns();
			if (!(nv.mapped >> i & 1)) {
				nv.mapped |= 1ull << i;
				if (map_device(i)) {
					nv.dev[i] = NULL;
					apx_degraded(nv.c, "nvml: a device has no NVML handle "
						     "by its UUID; its power and clocks are not "
						     "sampled", 0);
				}
			} else if (nv.dev[i] && atomic_load_explicit(&nv.c->enabled,
								      memory_order_relaxed)) {
				uint64_t took;

				sample(i, nv.prev_ns[i], now);	/* not outside --delay/--duration
								 * or the capture ranges */
				took = apx_mono_ns() - now;
				atomic_fetch_add_explicit(&nv.spent_ns, took, memory_order_relaxed);
				if (took > atomic_load_explicit(&nv.worst_ns, memory_order_relaxed))
					atomic_store_explicit(&nv.worst_ns, took,
							      memory_order_relaxed);
			}
			nv.prev_ns[i] = now;
		}
		nanosleep(&ts, NULL);
	}
	nv.shutdown();
	return NULL;
}

static int nvml_start(struct apx_collector *c)
{
	sigset_t all, old;
	int r;

	nv.c = c;
	if (c->off & APX_F_NVML)
		return -1;
	sigfillset(&all);	/* as the writer, it takes no signals: they are the program's */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&nv.thread, NULL, sampler_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		apx_degraded(c, "nvml: no sampler thread; power and clocks not sampled", 0);
		return -1;
	}
	nv.started = 1;
	return 0;
}

static void nvml_stop(struct apx_collector *c)
{
	if (!nv.started || atomic_load(&c->forked))
		return;
	atomic_store(&nv.stop, 1);
	pthread_join(nv.thread, NULL);
	nv.started = 0;
}

static void nvml_finish(struct apx_collector *c, uint64_t now_ns)
{
	uint64_t n = atomic_load(&nv.samples);
	char text[160];

	(void)now_ns;
	if (!n)
		return;
	snprintf(text, sizeof(text), "%llu readings of power and clocks every %llu ms, "
		 "%.1f us a reading on the sampler thread (at most %.1f us)",
		 (unsigned long long)n, (unsigned long long)(NV_PERIOD_NS / 1000000),
		 (double)atomic_load(&nv.spent_ns) / (double)n / 1e3,
		 (double)atomic_load(&nv.worst_ns) / 1e3);
	apx_add_kv(c, "nvml", text);
}

const struct apx_source apx_source_nvml = {
	.name = "nvml",
	.start = nvml_start,
	.stop = nvml_stop,
	.finish = nvml_finish,
};
