/*
 * src_pmsampling.c - the PM sampling source (`apx analyze --metrics`): CUPTI's
 * device-wide performance-monitor sampler on every device the program uses, at APX_METRICS_HZ
 * (default 1 kHz), with the metrics of APX_METRICS (a set of pm_sets.c or a list of names).
 *
 * Who runs what: start() (the thread that initialised CUDA) parses the specification; the
 * context-creation callback (src_callbacks.c, an application thread) only marks the device as
 * wanted; everything else runs on the writer thread: drain() enables the sampler on a wanted
 * device (counter availability, host configuration, enable, set-config, start), then decodes
 * the hardware buffer every 50 ms into METRIC records (one per sample and metric, start and
 * end on the trace clock); finish() stops and decodes the rest, with the device's context
 * current on the writer, and leaves the disabling to the process's end (finish_dev says
 * why); a context destroyed first has its sampler stopped and disabled from the destroy
 * callback, through the writer (apx_pm_context_ending). Every failure turns
 * this source off for that device and says so once (kv "degraded": "metrics: ..."); the rest of
 * the trace is unaffected. Sample timestamps come in CUPTI's time base (CLOCK_REALTIME unless
 * CUPTI follows the trace clock): each decode compares the newest sample with both clocks and
 * converts (kv metrics_clock says which). With a capture range (capture.c) the sampler runs
 * from when its device is seen, and only the samples that overlap a range are kept: on the
 * H200 a started sampler's first sample came 0.66-1.03 s after the start, longer than many
 * ranges. APX_PM_STOP_OUTSIDE=1 (bench/overhead's metrics mode) stops it between ranges
 * instead (follow_capture), so that a paused block costs what an unprofiled one does and the
 * benchmark's pairs price the sampler; short ranges then get no samples.
 * At exit the samplers are stopped, decoded and disabled by an atexit handler registered
 * after cuptiProfilerInitialize, so that it runs before CUPTI's own teardown: stopping or
 * disabling a sampler after that crashed inside libnvperf_host (SIGSEGV) on the H200.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "collector/collector.h"
#include "collector/pm_host.h"

#include "base/banned.h"

#define PM_DEVICES 32
#define PM_DECODE_NS 50000000ull		/* decode every 50 ms */
#define PM_MAX_SAMPLES 4096u			/* per decode: 4 s at 1 kHz, 0.4 s at 10 kHz */
#define PM_HW_BUFFER (64u << 20)		/* as Kineto: 64 MiB, append mode keep-latest */

/* PM_PAUSED: configured but not sampling: before the first capture range (capture.c) or
 * between two; drain starts it again when a range begins */
enum { PM_IDLE, PM_WANTED, PM_RUNNING, PM_STOPPING, PM_OFF, PM_PAUSED };

struct pm_dev {
	_Atomic int state;
	_Atomic(CUcontext) ctx;			/* the context seen on it (made current on the writer) */
	struct apx_pm_host host;
	CUpti_PmSampling_Object *obj;
	uint8_t *data;				/* the counter-data image */
	size_t data_size;
	uint64_t last_decode, samples, overflows, sum_len;
	uint64_t first_dropped_ns;		/* length of a dropped first sample, 0 = none */
	int seen_first;
};

static struct pm_state {
	int on;					/* metrics were asked for and parsed */
	int stop_outside;			/* APX_PM_STOP_OUTSIDE: stopped between ranges */
	int exit_hooked;			/* pm_at_exit registered */
	struct apx_collector *c;		/* for pm_at_exit */
	uint64_t interval_ns;
	struct apx_pm_spec spec;
	uint32_t name_id[APX_PM_METRICS_MAX], unit_id[APX_PM_METRICS_MAX];
	int ids_done, clock_said, profiler_init;
	int64_t clock_off;			/* added to CUPTI's sample time: trace clock */
	int clock_known;
	struct pm_dev dev[PM_DEVICES];
} pm;

void apx_pm_device_seen(uint32_t device, CUcontext ctx)
{
	int idle = PM_IDLE;

	if (!pm.on || device >= PM_DEVICES)
		return;
	atomic_store(&pm.dev[device].ctx, ctx);
	(void)atomic_compare_exchange_strong(&pm.dev[device].state, &idle, PM_WANTED);
}

/* Make the device's context current on the writer thread: the sampler's stop dereferenced
 * the calling thread's context (a crash inside libnvperf_host on the H200 without one). The
 * driver is already loaded by the program; it is looked up, not linked. */
static void bind_ctx(struct pm_dev *d)
{
	typedef int (*set_current_t)(CUcontext);
	static set_current_t set_current;
	static int looked;
	CUcontext ctx = atomic_load(&d->ctx);

	if (!looked) {
		looked = 1;
		*(void **)&set_current = apx_cuda_sym("cuCtxSetCurrent");
	}
	if (set_current && ctx)
		(void)set_current(ctx);
}

static void release(struct pm_dev *d)
{
	if (d->obj) {
		CUpti_PmSampling_Disable_Params dp = { .structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE };

		dp.pPmSamplingObject = d->obj;
		(void)cuptiPmSamplingDisable(&dp);
		d->obj = NULL;
	}
	free(d->data);
	d->data = NULL;
	apx_pm_host_free(&d->host);
}

/* This device's sampler is off for the rest of the run: say why once. */
static void off(struct apx_collector *c, uint32_t device, const char *what, int r)
{
	char text[400];

	release(&pm.dev[device]);
	snprintf(text, sizeof(text), "metrics: device %u: %s%s%s", device, what, r ? ": " : "",
		 r ? apx_pm_result_name(r) : "");
	if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
		snprintf(text, sizeof(text), "metrics: device %u: GPU performance counters are "
			 "restricted to administrators (run as root, or load the nvidia module with "
			 "NVreg_RestrictProfilingToAdminUsers=0)", device);
	else if (r == CUPTI_ERROR_INVALID_OPERATION || r == CUPTI_ERROR_HARDWARE_BUSY ||
		 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		snprintf(text, sizeof(text), "metrics: device %u: the counters are in use by another "
			 "profiler (Nsight, DCGM profiling, another apx?) (%s)", device,
			 apx_pm_result_name(r));
	apx_add_kv(c, "degraded", text);	/* apx analyze's summary prints it, once */
	atomic_store(&pm.dev[device].state, PM_OFF);
}

static int image_init(struct pm_dev *d)
{
	CUpti_PmSampling_CounterDataImage_Initialize_Params p = { .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE };

	p.pPmSamplingObject = d->obj;
	p.counterDataSize = d->data_size;
	p.pCounterData = d->data;
	return (int)cuptiPmSamplingCounterDataImageInitialize(&p);
}

static void pm_at_exit(void);

/* Enable, configure and start the sampler of one device (writer thread). */
static void enable(struct apx_collector *c, uint32_t i)
{
	struct pm_dev *d = &pm.dev[i];
	CUpti_Device_GetChipName_Params chip = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterAvailability_Params av = { .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE };
	CUpti_PmSampling_Enable_Params en = { .structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE };
	CUpti_PmSampling_SetConfig_Params sc = { .structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterDataSize_Params ds = { .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE };
	CUpti_PmSampling_Start_Params st = { .structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE };
	uint8_t *avail = NULL;
	char err[300];
	int r;

	bind_ctx(d);
	if (!pm.profiler_init) {
		CUpti_Profiler_Initialize_Params ip = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };

		if ((r = (int)cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS) {
			off(c, i, "cuptiProfilerInitialize failed", r);
			return;
		}
		pm.profiler_init = 1;
	}
	chip.deviceIndex = i;
	if ((r = (int)cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS) {
		off(c, i, "no chip name", r);
		return;
	}
	av.deviceIndex = i;
	if ((r = (int)cuptiPmSamplingGetCounterAvailability(&av)) != CUPTI_SUCCESS) {
		off(c, i, "no counter availability", r);
		return;
	}
	if (!(avail = malloc(av.counterAvailabilityImageSize))) {
		off(c, i, "out of memory", 0);
		return;
	}
	av.pCounterAvailabilityImage = avail;
	if ((r = (int)cuptiPmSamplingGetCounterAvailability(&av)) != CUPTI_SUCCESS) {
		free(avail);
		off(c, i, "no counter availability", r);
		return;
	}
	r = apx_pm_host_config(&d->host, APX_PM_SAMPLER, chip.pChipName, avail, &pm.spec, err,
			       sizeof(err));
	free(avail);
	if (r) {
		off(c, i, err, 0);
		return;
	}
	en.deviceIndex = i;
	if ((r = (int)cuptiPmSamplingEnable(&en)) != CUPTI_SUCCESS) {
		off(c, i, "cuptiPmSamplingEnable failed", r);
		return;
	}
	d->obj = en.pPmSamplingObject;
	sc.pPmSamplingObject = d->obj;
	sc.configSize = d->host.config_size;
	sc.pConfig = d->host.config;
	sc.hardwareBufferSize = PM_HW_BUFFER;
	sc.samplingInterval = pm.interval_ns;
	sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
	sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
	if ((r = (int)cuptiPmSamplingSetConfig(&sc)) != CUPTI_SUCCESS)
		goto fail;
	ds.pPmSamplingObject = d->obj;
	ds.pMetricNames = d->host.names;
	ds.numMetrics = d->host.n;
	ds.maxSamples = PM_MAX_SAMPLES;
	if ((r = (int)cuptiPmSamplingGetCounterDataSize(&ds)) != CUPTI_SUCCESS)
		goto fail;
	d->data_size = ds.counterDataSize;
	if (!(d->data = malloc(d->data_size))) {
		r = CUPTI_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	if ((r = image_init(d)) != CUPTI_SUCCESS)
		goto fail;
	if (!pm.exit_hooked) {
		pm.exit_hooked = 1;
		atexit(pm_at_exit);	/* after CUPTI's own handlers: runs before them */
	}
	if (pm.stop_outside && apx_capture_mode() && !atomic_load(&c->enabled)) {
		/* configured now (it takes ~0.7 s), started with the first capture range */
		atomic_store(&d->state, PM_PAUSED);
		return;
	}
	st.pPmSamplingObject = d->obj;
	if ((r = (int)cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS)
		goto fail;
	atomic_store(&d->state, PM_RUNNING);
	return;
fail:
	off(c, i, "the sampler refused its configuration", r);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Which clock CUPTI's sample times are on: the one whose "now" is just after the newest
 * sample's end. The offset converts them to the trace clock (CLOCK_MONOTONIC). */
static void learn_clock(struct apx_collector *c, uint64_t newest_end)
{
	uint64_t mono = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME);
	const char *which;

	if (newest_end <= mono && mono - newest_end < 60000000000ull) {
		pm.clock_off = 0;
		which = "the trace clock (CLOCK_MONOTONIC)";
	} else {
		pm.clock_off = (int64_t)(mono - real);
		which = "CLOCK_REALTIME, converted to the trace clock";
	}
	pm.clock_known = 1;
	apx_add_kv(c, "metrics_clock", which);
}

static void intern_ids(struct apx_collector *c)
{
	for (size_t k = 0; k < pm.spec.n; k++) {
		const struct apx_pm_metric *m = &pm.spec.m[k];

		(void)apx_writer_intern(c->w, m->name, strlen(m->name), &pm.name_id[k]);
		(void)apx_writer_intern(c->w, m->unit, strlen(m->unit), &pm.unit_id[k]);
	}
	pm.ids_done = 1;
}

/* Decode what the hardware buffer holds into METRIC records. */
static void decode(struct apx_collector *c, uint32_t i)
{
	struct pm_dev *d = &pm.dev[i];
	double v[APX_PM_METRICS_MAX];

	if (!pm.ids_done)
		intern_ids(c);
	for (int round = 0; round < 64; round++) {
		CUpti_PmSampling_DecodeData_Params dd = { .structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE };
		CUpti_PmSampling_GetCounterDataInfo_Params info = { .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE };
		int r;

		dd.pPmSamplingObject = d->obj;
		dd.pCounterDataImage = d->data;
		dd.counterDataImageSize = d->data_size;
		if ((r = (int)cuptiPmSamplingDecodeData(&dd)) != CUPTI_SUCCESS) {
			off(c, i, "decoding the samples failed", r);
			return;
		}
		d->overflows += dd.overflow != 0;
		info.pCounterDataImage = d->data;
		info.counterDataImageSize = d->data_size;
		if (cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
			off(c, i, "no counter-data information", 0);
			return;
		}
		for (size_t s = 0; s < info.numCompletedSamples; s++) {
			CUpti_PmSampling_CounterData_GetSampleInfo_Params si = { .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE };

			si.pPmSamplingObject = d->obj;
			si.pCounterDataImage = d->data;
			si.counterDataImageSize = d->data_size;
			si.sampleIndex = s;
			if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
			    si.endTimestamp <= si.startTimestamp ||
			    apx_pm_host_eval(&d->host, d->data, d->data_size, s, v) != CUPTI_SUCCESS)
				continue;
			if (!pm.clock_known)
				learn_clock(c, si.endTimestamp);
			if (!d->seen_first) {
				/* The sampler's first sample runs from the start call to the first
				 * trigger, which came 0.66 s late on the H200 and had counted
				 * nothing over 50 GiB of DRAM traffic: not a measurement. */
				d->seen_first = 1;
				if (si.endTimestamp - si.startTimestamp > 4 * pm.interval_ns) {
					d->first_dropped_ns = si.endTimestamp - si.startTimestamp;
					continue;
				}
			}
			if (!apx_capture_collected(si.startTimestamp + (uint64_t)pm.clock_off,
						   si.endTimestamp + (uint64_t)pm.clock_off))
				continue;	/* wholly outside the capture ranges */
			for (size_t k = 0; k < d->host.n; k++) {
				struct apx_rec rec;

				apx_rec_init(&rec, APX_REC_METRIC);
				rec.v[APX_METRIC_TS_NS] = si.startTimestamp + (uint64_t)pm.clock_off;
				rec.v[APX_METRIC_END_NS] = si.endTimestamp + (uint64_t)pm.clock_off;
				rec.v[APX_METRIC_NAME] = pm.name_id[k];
				rec.v[APX_METRIC_UNIT] = pm.unit_id[k];
				rec.v[APX_METRIC_DEVICE] = i;
				apx_rec_set_f64(&rec, APX_METRIC_VALUE, v[k]);
				(void)apx_writer_add(c->w, &rec);
			}
			d->samples++;
			d->sum_len += si.endTimestamp - si.startTimestamp;
		}
		if (image_init(d) != CUPTI_SUCCESS) {
			off(c, i, "cannot reset the counter-data image", 0);
			return;
		}
		if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
			return;
	}
}

static int pm_start(struct apx_collector *c)
{
	const char *spec = apx_getenv("APX_METRICS");
	char err[300], text[400];

	(void)c;
	if (!spec || !*spec)
		return 0;
	if (apx_pm_spec_parse(spec, &pm.spec, err, sizeof(err))) {
		snprintf(text, sizeof(text), "metrics: APX_METRICS: %s", err);
		apx_say("%s", text);
		apx_degraded(c, "metrics: APX_METRICS is not a metric set or list (see apx analyze "
			     "--metrics help)", 0);
		return -1;
	}
	pm.interval_ns = 1000000000ull / apx_env_u64("APX_METRICS_HZ", APX_PM_HZ_DEFAULT,
						      APX_PM_HZ_MAX);
	pm.stop_outside = apx_env_u64("APX_PM_STOP_OUTSIDE", 0, 1) != 0;
	pm.c = c;
	pm.on = 1;
	return 0;
}

/* Stop one device's sampler, decode what is left, say what it collected (writer); disable it
 * and free its images unless CUPTI may already be torn down: the writer's own finish runs from
 * inject.c's atexit handler, after CUPTI's (cuptiPmSamplingStop and Disable crashed inside
 * libnvperf_host there on the H200), so it only says what was collected; pm_at_exit, which
 * runs before CUPTI's teardown, has normally finished every device by then. */
static void finish_dev(struct apx_collector *c, uint32_t i, int disable)
{
	struct pm_dev *d = &pm.dev[i];
	CUpti_PmSampling_Stop_Params sp = { .structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE };
	char text[300];

	if (disable) {
		bind_ctx(d);
		sp.pPmSamplingObject = d->obj;
		(void)cuptiPmSamplingStop(&sp);
		decode(c, i);
	}
	if (atomic_load(&d->state) != PM_OFF) {	/* else the decode failed and said so */
		snprintf(text, sizeof(text), "device %u: %s, %zu metrics, %llu samples, asked every "
			 "%llu ns, mean sample %llu ns, %llu decodes with overflow, first sample "
			 "dropped %llu ns", i, pm.spec.set, d->host.n, (unsigned long long)d->samples,
			 (unsigned long long)pm.interval_ns,
			 (unsigned long long)(d->samples ? d->sum_len / d->samples : 0),
			 (unsigned long long)d->overflows, (unsigned long long)d->first_dropped_ns);
		apx_add_kv(c, "metrics", text);
		if (disable)
			release(d);
		atomic_store(&d->state, PM_OFF);
	}
}

/* Outside a capture range (capture.c) the sampler is stopped, its samples decoded; it starts
 * again with the next range, whose first sample (start call to first trigger) is dropped as
 * at the first start. The writer follows the ranges within a wake-up (the start/stop callback
 * wakes it). A stop or restart that fails turns the device's sampling off and says so. */
static void follow_capture(struct apx_collector *c, uint32_t i, int s, int on)
{
	struct pm_dev *d = &pm.dev[i];
	int r, was = s;

	bind_ctx(d);
	if (s == PM_RUNNING && !on) {
		CUpti_PmSampling_Stop_Params sp = { .structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE };

		sp.pPmSamplingObject = d->obj;
		if ((r = (int)cuptiPmSamplingStop(&sp)) != CUPTI_SUCCESS) {
			off(c, i, "cannot stop the sampler at the end of a capture range", r);
			return;
		}
		decode(c, i);	/* a context ending meanwhile (PM_STOPPING) wins the CAS */
		(void)atomic_compare_exchange_strong(&d->state, &was, PM_PAUSED);
	} else if (s == PM_PAUSED && on) {
		CUpti_PmSampling_Start_Params st = { .structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE };

		st.pPmSamplingObject = d->obj;
		if ((r = (int)cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS) {
			off(c, i, "cannot restart the sampler for a capture range", r);
			return;
		}
		d->seen_first = 0;
		(void)atomic_compare_exchange_strong(&d->state, &was, PM_RUNNING);
	}
}

static void pm_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	int on = !pm.stop_outside || !apx_capture_mode() || atomic_load(&c->enabled);

	(void)periodic;
	for (uint32_t i = 0; pm.on && i < PM_DEVICES; i++) {
		int s = atomic_load(&pm.dev[i].state);

		if (s == PM_WANTED)
			enable(c, i);	/* with a capture range: configured, then PM_PAUSED */
		else if (s == PM_STOPPING)
			finish_dev(c, i, 1);	/* its context is ending; the process goes on */
		else if ((s == PM_RUNNING && !on) || (s == PM_PAUSED && on))
			follow_capture(c, i, s, on);
		else if (s == PM_RUNNING && now_ns - pm.dev[i].last_decode >= PM_DECODE_NS) {
			pm.dev[i].last_decode = now_ns;
			decode(c, i);
		}
	}
}

static void pm_finish(struct apx_collector *c, uint64_t now_ns)
{
	(void)now_ns;
	for (uint32_t i = 0; pm.on && i < PM_DEVICES; i++) {
		int s = atomic_load(&pm.dev[i].state);

		if (s == PM_RUNNING || s == PM_STOPPING || s == PM_PAUSED)
			finish_dev(c, i, 0);
	}
}

void apx_pm_context_ending(struct apx_collector *c, uint32_t device)
{
	int running = PM_RUNNING, paused = PM_PAUSED;

	if (!pm.on || device >= PM_DEVICES ||
	    (!atomic_compare_exchange_strong(&pm.dev[device].state, &running, PM_STOPPING) &&
	     !atomic_compare_exchange_strong(&pm.dev[device].state, &paused, PM_STOPPING)))
		return;
	apx_writer_wake(c);
	for (int ms = 0; ms < 2000 && atomic_load(&pm.dev[device].state) == PM_STOPPING; ms++)
		usleep(1000);
}

/* atexit, before CUPTI's teardown (enable() registers it after cuptiProfilerInitialize): the
 * writer stops, decodes and disables every sampler, as when a context ends. */
static void pm_at_exit(void)
{
	if (!pm.c || atomic_load(&pm.c->forked) || !pm.c->writer_started)
		return;		/* a forked child has no writer thread to do it */
	for (uint32_t i = 0; i < PM_DEVICES; i++)
		apx_pm_context_ending(pm.c, i);
}

const struct apx_source apx_source_pmsampling = {
	.name = "pmsampling",
	.start = pm_start,
	.drain = pm_drain,
	.finish = pm_finish,
};
