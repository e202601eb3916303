/*
 * nvml.c - nvperfd's GPU view through NVML, loaded at run time (dlopen of libnvidia-ml.so.1,
 * no build-time dependency: the few types used are declared here, layouts from nvml.h of
 * R580 / CUDA 13.0, as nvtop does). Per device: utilization, memory, PCIe throughput, clocks,
 * power, temperature, energy, clock throttle reasons, MIG mode, PCI bus id and minor number,
 * critical XID events (an event set polled without waiting at each sample), and GPM metrics
 * (Hopper and later) between two consecutive samples; per
 * tracked process: device memory, SM utilization (peak and means over its life, and the values
 * of the last sample for `apx status/top`), and device-wide GPM figures when it is the only
 * process on its device. Every value carries a validity bit: unsupported is never 0.
 * Versioned entry points are tried first, older ones after; the entry points added for the
 * Prometheus endpoint are optional (missing: their series are absent, said once at open).
 * Called by main.c (open/close) and on the sampling tick (tracker.c); logs only what it finds
 * missing once (why[] says why NVML cannot be used at all).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nvml_abi.h"
#include "daemon/daemon.h"

#include "base/banned.h"

/* ---- the NVML ABI used here beyond base/nvml_abi.h (nvml.h, R580) ------------------------ */

typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_TEMPERATURE_GPU 0
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull	/* nvmlEventTypeXidCriticalError */

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {			/* nvmlMemory_v2_t: "used" without the driver's reserve */
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
typedef struct {			/* nvmlProcessInfo_v2_t (_v2 and _v3 entry points) */
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {			/* nvmlProcessInfo_v1_t (unversioned entry point) */
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;	/* µs */
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {			/* nvmlPciInfo_t (_v2, _v3; _v1: busId[16] first, same fields) */
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;
typedef struct {			/* nvmlEventData_t (R450 and later) */
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1
typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct { char *shortName, *longName, *unit; } metricInfo;
} nvmlGpmMetric_t;
typedef struct {			/* metrics[] is last: a shorter array is fine (CUPTI.md §5) */
	unsigned int version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[APX_GPM_METRICS];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

_Static_assert(APX_GPU_MAX <= 64, "apx_gpu_proc.now_devs is a 64-bit mask");

#define PROCS_MAX 256			/* processes read per device and sample */
#define GPM_MIN_NS 110000000ull		/* GPM needs > 100 ms between its two samples */
#define XID_EVENTS_MAX 64		/* XID events read per sample (the rest at the next) */

static const struct { unsigned id; const char *name; } gpm_ids[APX_GPM_METRICS] = {
	{ 1, "graphics_util" }, { 2, "sm_util" }, { 3, "sm_occupancy" }, { 5, "tensor_util" },
	{ 10, "dram_bw_util" }, { 11, "fp64_util" }, { 12, "fp32_util" }, { 13, "fp16_util" },
	{ 20, "pcie_tx_mib_s" }, { 21, "pcie_rx_mib_s" }, { 60, "nvlink_rx_mib_s" },
	{ 61, "nvlink_tx_mib_s" },
};
#define GPM_PCIE_TX 8			/* indexes in gpm_ids */
#define GPM_PCIE_RX 9

struct apx_nvml {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*pcie)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*mig)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, void *);
	int procs_v1;			/* procs takes nvmlProcessInfo_v1_t */
	nvmlReturn_t (*putil)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
			      unsigned long long);
	nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
	nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
	nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
	nvmlReturn_t (*gpm_get)(nvmlDevice_t, nvmlGpmSample_t);
	nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
	/* optional (the Prometheus endpoint's temperature, energy, throttle reasons, XIDs) */
	nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
	int pci_v1;			/* pci fills the v1 struct (busId[16] first) */
	nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*ev_create)(nvmlEventSet_t *);
	nvmlReturn_t (*ev_register)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*ev_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
	nvmlReturn_t (*ev_free)(nvmlEventSet_t);
	nvmlEventSet_t xid_set;		/* NULL: no XID events */
	unsigned int ndev;
	nvmlDevice_t dev[APX_GPU_MAX];
	struct apx_gpu_dev info[APX_GPU_MAX];
	nvmlGpmSample_t gpm_prev[APX_GPU_MAX], gpm_cur[APX_GPU_MAX];
	uint64_t gpm_prev_ns[APX_GPU_MAX];
	unsigned long long putil_last[APX_GPU_MAX];
	unsigned int pids_seen, pids_here;	/* this sample: NVML's pids, those that exist here */
	unsigned int foreign_streak;		/* samples in a row where none of them exists here */
	int foreign_pids;			/* NVML's pids are of another PID namespace */
};

const char *apx_gpm_metric_name(size_t i)
{
	return i < APX_GPM_METRICS ? gpm_ids[i].name : "?";
}

/* the first of the names that the library exports */
static void *sym(void *lib, const char *a, const char *b, const char *c)
{
	void *p = dlsym(lib, a);

	if (!p && b)
		p = dlsym(lib, b);
	if (!p && c)
		p = dlsym(lib, c);
	return p;
}

/* The PCI bus id and the minor number of device i: fixed, read once ("" / -1 when not). */
static void open_ids(struct apx_nvml *n, unsigned int i)
{
	struct apx_gpu_dev *g = &n->info[i];
	nvmlPciInfo_t pci;
	unsigned int minor;

	g->minor = -1;
	memset(&pci, 0, sizeof(pci));
	if (n->pci && n->pci(n->dev[i], &pci) == NVML_SUCCESS) {
		pci.busId[sizeof(pci.busId) - 1] = 0;
		if (!n->pci_v1 && pci.busId[0])	/* as nvidia-smi: 00000000:3B:00.0 */
			snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci.busId);
		else
			snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%08X:%02X:%02X.0",
				 pci.domain, pci.bus, pci.device);
	}
	if (n->minor && n->minor(n->dev[i], &minor) == NVML_SUCCESS && minor <= 0x7fffffffu)
		g->minor = (int32_t)minor;
}

/* One event set for the critical XID events of every device, read without waiting at each
 * sample; a device that refuses (not supported, no permission) has no XID series. */
static void open_xids(struct apx_nvml *n)
{
	unsigned int ok = 0;
	nvmlReturn_t r = NVML_SUCCESS;

	if (!n->ev_create || !n->ev_register || !n->ev_wait || !n->ev_free)
		return;
	if ((r = n->ev_create(&n->xid_set)) != NVML_SUCCESS) {
		n->xid_set = NULL;
		apx_dlog(APX_LOG_NOTICE, "NVML: no event set (NVML error %d): XID errors not "
			 "counted", r);
		return;
	}
	for (unsigned int i = 0; i < n->ndev; i++) {
		nvmlReturn_t ri = n->ev_register(n->dev[i], NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
						 n->xid_set);

		if (ri == NVML_SUCCESS) {
			n->info[i].xid_events = 1;
			ok++;
		} else {
			r = ri;
		}
	}
	if (ok < n->ndev)
		apx_dlog(APX_LOG_NOTICE, "NVML: XID events on %u of %u GPUs (NVML error %d): XID "
			 "errors not counted on the others", ok, n->ndev, r);
	if (!ok) {
		n->ev_free(n->xid_set);
		n->xid_set = NULL;
	}
}

/* The optional entry points this libnvidia-ml lacks, said once: their series are absent. */
static void say_missing(const struct apx_nvml *n)
{
	char buf[400] = "";
	size_t len = 0;
	const struct { const void *fn; const char *what; } opt[] = {
		{ (const void *)n->temp, "nvmlDeviceGetTemperature (temperature)" },
		{ (const void *)n->energy, "nvmlDeviceGetTotalEnergyConsumption (energy)" },
		{ (const void *)n->reasons, "nvmlDeviceGetCurrentClocksEventReasons (throttle "
		  "reasons)" },
		{ (const void *)n->pci, "nvmlDeviceGetPciInfo (pci_bus_id label)" },
		{ (const void *)n->minor, "nvmlDeviceGetMinorNumber (device label)" },
		{ (const void *)(n->ev_create && n->ev_register && n->ev_wait && n->ev_free ?
				 n->ev_wait : NULL), "nvmlEventSet* (XID errors)" },
	};

	for (size_t k = 0; k < sizeof(opt) / sizeof(opt[0]); k++) {
		int w;

		if (opt[k].fn)
			continue;
		w = snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? ", " : "", opt[k].what);
		if (w < 0 || (size_t)w >= sizeof(buf) - len)
			break;
		len += (size_t)w;
	}
	if (len)
		apx_dlog(APX_LOG_NOTICE, "NVML: libnvidia-ml lacks %s: not exported", buf);
}

struct apx_nvml *apx_nvml_open(char *why, size_t cap)
{
	struct apx_nvml *n = calloc(1, sizeof(*n));
	const char *err;
	unsigned int cnt = 0;
	nvmlReturn_t r;

	if (!n) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib)
		n->lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		err = dlerror();
		snprintf(why, cap, "cannot load libnvidia-ml.so.1 (%s)", err ? err : "?");
		free(n);
		return NULL;
	}
	*(void **)&n->init = sym(n->lib, "nvmlInit_v2", "nvmlInit", NULL);
	*(void **)&n->shutdown = sym(n->lib, "nvmlShutdown", NULL, NULL);
	*(void **)&n->count = sym(n->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL);
	*(void **)&n->handle = sym(n->lib, "nvmlDeviceGetHandleByIndex_v2",
				   "nvmlDeviceGetHandleByIndex", NULL);
	*(void **)&n->name = sym(n->lib, "nvmlDeviceGetName", NULL, NULL);
	*(void **)&n->uuid = sym(n->lib, "nvmlDeviceGetUUID", NULL, NULL);
	*(void **)&n->util = sym(n->lib, "nvmlDeviceGetUtilizationRates", NULL, NULL);
	*(void **)&n->mem = sym(n->lib, "nvmlDeviceGetMemoryInfo", NULL, NULL);
	*(void **)&n->mem2 = sym(n->lib, "nvmlDeviceGetMemoryInfo_v2", NULL, NULL);
	*(void **)&n->pcie = sym(n->lib, "nvmlDeviceGetPcieThroughput", NULL, NULL);
	*(void **)&n->clock = sym(n->lib, "nvmlDeviceGetClockInfo", NULL, NULL);
	*(void **)&n->power = sym(n->lib, "nvmlDeviceGetPowerUsage", NULL, NULL);
	*(void **)&n->mig = sym(n->lib, "nvmlDeviceGetMigMode", NULL, NULL);
	*(void **)&n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
				  "nvmlDeviceGetComputeRunningProcesses_v2", NULL);
	if (!n->procs) {
		*(void **)&n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses", NULL, NULL);
		n->procs_v1 = 1;
	}
	*(void **)&n->putil = sym(n->lib, "nvmlDeviceGetProcessUtilization", NULL, NULL);
	*(void **)&n->gpm_support = sym(n->lib, "nvmlGpmQueryDeviceSupport", NULL, NULL);
	*(void **)&n->gpm_alloc = sym(n->lib, "nvmlGpmSampleAlloc", NULL, NULL);
	*(void **)&n->gpm_free = sym(n->lib, "nvmlGpmSampleFree", NULL, NULL);
	*(void **)&n->gpm_get = sym(n->lib, "nvmlGpmSampleGet", NULL, NULL);
	*(void **)&n->gpm_metrics = sym(n->lib, "nvmlGpmMetricsGet", NULL, NULL);
	*(void **)&n->temp = sym(n->lib, "nvmlDeviceGetTemperature", NULL, NULL);
	*(void **)&n->energy = sym(n->lib, "nvmlDeviceGetTotalEnergyConsumption", NULL, NULL);
	*(void **)&n->reasons = sym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons",
				    "nvmlDeviceGetCurrentClocksThrottleReasons", NULL);
	*(void **)&n->pci = sym(n->lib, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", NULL);
	if (!n->pci) {
		*(void **)&n->pci = sym(n->lib, "nvmlDeviceGetPciInfo", NULL, NULL);
		n->pci_v1 = 1;
	}
	*(void **)&n->minor = sym(n->lib, "nvmlDeviceGetMinorNumber", NULL, NULL);
	*(void **)&n->ev_create = sym(n->lib, "nvmlEventSetCreate", NULL, NULL);
	*(void **)&n->ev_register = sym(n->lib, "nvmlDeviceRegisterEvents", NULL, NULL);
	*(void **)&n->ev_wait = sym(n->lib, "nvmlEventSetWait_v2", "nvmlEventSetWait", NULL);
	*(void **)&n->ev_free = sym(n->lib, "nvmlEventSetFree", NULL, NULL);
	if (!n->init || !n->count || !n->handle) {
		snprintf(why, cap, "libnvidia-ml lacks nvmlInit/nvmlDeviceGetCount/GetHandleByIndex");
		goto fail;
	}
	r = n->init();
	if (r != NVML_SUCCESS) {
		snprintf(why, cap, "nvmlInit failed (NVML error %d)", r);
		goto fail;
	}
	if (n->count(&cnt) != NVML_SUCCESS || !cnt) {
		snprintf(why, cap, "NVML sees no GPU");
		if (n->shutdown)
			n->shutdown();
		goto fail;
	}
	if (cnt > APX_GPU_MAX)
		cnt = APX_GPU_MAX;
	for (unsigned int i = 0; i < cnt; i++) {
		struct apx_gpu_dev *g = &n->info[n->ndev];
		unsigned int cur = 0, pend = 0;
		nvmlGpmSupport_t gs = { .version = NVML_GPM_SUPPORT_VERSION };

		if (n->handle(i, &n->dev[n->ndev]) != NVML_SUCCESS)
			continue;
		if (n->name)
			(void)n->name(n->dev[n->ndev], g->name, sizeof(g->name));
		if (n->uuid)
			(void)n->uuid(n->dev[n->ndev], g->uuid, sizeof(g->uuid));
		g->name[sizeof(g->name) - 1] = g->uuid[sizeof(g->uuid) - 1] = 0;
		if (n->mig && n->mig(n->dev[n->ndev], &cur, &pend) == NVML_SUCCESS)
			g->mig = cur == NVML_DEVICE_MIG_ENABLE;
		open_ids(n, n->ndev);
		if (n->gpm_support && n->gpm_alloc && n->gpm_get && n->gpm_metrics && !g->mig &&
		    n->gpm_support(n->dev[n->ndev], &gs) == NVML_SUCCESS && gs.isSupportedDevice &&
		    n->gpm_alloc(&n->gpm_prev[n->ndev]) == NVML_SUCCESS &&
		    n->gpm_alloc(&n->gpm_cur[n->ndev]) == NVML_SUCCESS)
			g->gpm_supported = 1;
		n->ndev++;
	}
	open_xids(n);
	say_missing(n);
	return n;
fail:
	dlclose(n->lib);
	free(n);
	return NULL;
}

void apx_nvml_close(struct apx_nvml *n)
{
	if (!n)
		return;
	for (unsigned int i = 0; i < n->ndev; i++) {
		if (n->gpm_free && n->gpm_prev[i])
			n->gpm_free(n->gpm_prev[i]);
		if (n->gpm_free && n->gpm_cur[i])
			n->gpm_free(n->gpm_cur[i]);
	}
	if (n->xid_set && n->ev_free)
		n->ev_free(n->xid_set);
	if (n->shutdown)
		n->shutdown();
	dlclose(n->lib);
	free(n);
}

size_t apx_nvml_devices(const struct apx_nvml *n, const struct apx_gpu_dev **ret)
{
	*ret = n ? n->info : NULL;
	return n ? n->ndev : 0;
}

/* GPM metrics between the previous sample and now (device-wide). */
static void sample_gpm(struct apx_nvml *n, unsigned int i, uint64_t now)
{
	struct apx_gpu_dev *g = &n->info[i];
	nvmlGpmMetricsGet_t mg;
	nvmlGpmSample_t t;

	g->gpm_valid = 0;
	g->valid &= ~(uint32_t)APX_GPU_GPM;
	if (n->gpm_prev_ns[i] && now - n->gpm_prev_ns[i] < GPM_MIN_NS)
		return;		/* too soon: keep the previous sample as the start */
	if (n->gpm_get(n->dev[i], n->gpm_cur[i]) != NVML_SUCCESS)
		return;
	if (n->gpm_prev_ns[i]) {
		memset(&mg, 0, sizeof(mg));
		mg.version = NVML_GPM_METRICS_GET_VERSION;
		mg.numMetrics = APX_GPM_METRICS;
		mg.sample1 = n->gpm_prev[i];
		mg.sample2 = n->gpm_cur[i];
		for (size_t k = 0; k < APX_GPM_METRICS; k++)
			mg.metrics[k].metricId = gpm_ids[k].id;
		if (n->gpm_metrics(&mg) == NVML_SUCCESS) {
			for (size_t k = 0; k < APX_GPM_METRICS; k++) {
				if (mg.metrics[k].nvmlReturn != NVML_SUCCESS)
					continue;
				g->gpm[k] = mg.metrics[k].value;
				g->gpm_valid |= 1u << k;
			}
			if (g->gpm_valid)
				g->valid |= APX_GPU_GPM;
		}
	}
	t = n->gpm_prev[i];
	n->gpm_prev[i] = n->gpm_cur[i];
	n->gpm_cur[i] = t;
	n->gpm_prev_ns[i] = now;
}

/* Append one sample to a process's GPU series; full: every other one is kept and the rate
 * halves from then on (as the /proc series). */
static void series_add(struct apx_gpu_proc *gp, const struct apx_gpu_sample *s)
{
	if (gp->skip) {
		gp->skip--;
		return;
	}
	if (!gp->stride)
		gp->stride = 1;
	gp->skip = gp->stride - 1;
	if (!gp->series) {
		gp->series = calloc(APX_GPU_SERIES_MAX, sizeof(*gp->series));
		if (!gp->series)
			return;
	}
	if (gp->nseries == APX_GPU_SERIES_MAX) {
		for (uint32_t i = 0; i < APX_GPU_SERIES_MAX / 2; i++)
			gp->series[i] = gp->series[2 * i];
		gp->nseries = APX_GPU_SERIES_MAX / 2;
		gp->stride *= 2;
		gp->skip = gp->stride - 1;
	}
	gp->series[gp->nseries++] = *s;
}

/* Compute processes on device i: their memory; and which tracked processes hold it. */
static void sample_procs(struct apx_nvml *n, struct apx_daemon *d, unsigned int i,
			 uint64_t now)
{
	struct apx_gpu_dev *g = &n->info[i];
	nvmlProcessInfo_v2_t v2[PROCS_MAX];
	nvmlProcessUtilizationSample_t us[PROCS_MAX];
	unsigned int cnt = PROCS_MAX, ucnt = PROCS_MAX;
	int have_util = 0;

	g->nprocs = 0;
	if (!n->procs)
		return;
	if (n->procs_v1) {
		nvmlProcessInfo_v1_t v1[PROCS_MAX];

		if (n->procs(n->dev[i], &cnt, v1) != NVML_SUCCESS)
			return;
		for (unsigned int k = 0; k < cnt && k < PROCS_MAX; k++)
			v2[k] = (nvmlProcessInfo_v2_t){ .pid = v1[k].pid,
							.usedGpuMemory = v1[k].usedGpuMemory };
	} else if (n->procs(n->dev[i], &cnt, v2) != NVML_SUCCESS) {
		return;
	}
	if (cnt > PROCS_MAX)
		cnt = PROCS_MAX;
	g->nprocs = cnt;
	/* per-process SM utilization: unsupported under MIG (said in the summary) */
	if (n->putil && !g->mig &&
	    n->putil(n->dev[i], us, &ucnt, n->putil_last[i]) == NVML_SUCCESS) {
		have_util = 1;
		if (ucnt > PROCS_MAX)
			ucnt = PROCS_MAX;
	}
	for (unsigned int k = 0; k < cnt; k++) {
		struct apx_proc *p = apx_tracker_find(d, (pid_t)v2[k].pid);
		struct apx_gpu_sample smp = { .ts_ns = now };
		struct apx_gpu_proc *gp;

		n->pids_seen++;
		if (p || kill((pid_t)v2[k].pid, 0) == 0 || errno == EPERM)
			n->pids_here++;

		if (!p)
			continue;	/* not ours, or another PID namespace (NVML gives host pids) */
		gp = &p->gpu;
		gp->device = (int32_t)i;
		gp->gpu_seen_samples++;
		gp->now_devs |= 1ull << i;
		/* usedGpuMemory is NVML_VALUE_NOT_AVAILABLE (~0ull) without the permission */
		if (g->valid & APX_GPU_UTIL) {
			smp.valid |= APX_GPU_UTIL;
			smp.dev_util_pct = g->util_gpu_pct;
		}
		if (v2[k].usedGpuMemory != ~0ull) {
			smp.valid |= APX_GPU_MEM;
			smp.mem_bytes = v2[k].usedGpuMemory;
			gp->valid |= APX_GPU_MEM;
			if (v2[k].usedGpuMemory > gp->mem_peak_bytes)
				gp->mem_peak_bytes = v2[k].usedGpuMemory;
			gp->now_valid |= APX_GPU_MEM;
			gp->mem_now_bytes += v2[k].usedGpuMemory;
		}
		if (g->valid & APX_GPU_UTIL) {	/* idle share: not known without it */
			gp->gpu_util_samples++;
			gp->gpu_idle_samples += g->util_gpu_pct == 0;
		}
		if ((g->valid & APX_GPU_MEM) && g->mem_total_bytes) {
			uint32_t pm = (uint32_t)(g->mem_used_bytes * 1000 / g->mem_total_bytes);

			gp->dev_mem_valid = 1;
			if (pm > gp->dev_mem_peak_permille)
				gp->dev_mem_peak_permille = pm;
		}
		if (have_util) {
			for (unsigned int j = 0; j < ucnt; j++) {
				if (us[j].pid != v2[k].pid || us[j].smUtil > 100 ||
				    us[j].timeStamp <= n->putil_last[i])
					continue;	/* bogus or stale samples (nvtop #110) */
				gp->valid |= APX_GPU_UTIL;
				gp->sm_util_sum += us[j].smUtil;
				gp->util_samples++;
				smp.sm_valid = 1;
				smp.sm_util_pct = us[j].smUtil;
				if (!(gp->now_valid & APX_GPU_UTIL) ||
				    us[j].smUtil > gp->sm_now_pct)
					gp->sm_now_pct = us[j].smUtil;
				gp->now_valid |= APX_GPU_UTIL;
			}
		}
		if (cnt == 1 && (g->valid & APX_GPU_GPM)) {
			gp->sole_samples++;
			for (size_t m = 0; m < APX_GPM_METRICS; m++)
				if (g->gpm_valid & (1u << m))
					gp->gpm_sum[m] += g->gpm[m];
			gp->gpm_samples++;
			if ((g->gpm_valid & (1u << 1)) && (g->gpm_valid & (1u << 4))) {
				smp.valid |= APX_GPU_GPM;	/* sm_util, dram_bw_util */
				smp.gpm_sm_util = (float)g->gpm[1];
				smp.gpm_dram_util = (float)g->gpm[4];
			}
		}
		series_add(gp, &smp);
	}
	if (have_util)
		for (unsigned int j = 0; j < ucnt; j++)
			if (us[j].timeStamp > n->putil_last[i])
				n->putil_last[i] = us[j].timeStamp;
}

/* Count one XID of device g: its own slot (the first APX_GPU_XIDS_MAX XIDs seen), else other. */
static void count_xid(struct apx_gpu_dev *g, uint32_t xid)
{
	g->xid_last = xid;
	for (uint32_t k = 0; k < g->nxids; k++) {
		if (g->xids[k].xid == xid) {
			g->xids[k].count++;
			return;
		}
	}
	if (g->nxids == APX_GPU_XIDS_MAX) {
		g->xid_other++;
		return;
	}
	g->xids[g->nxids++] = (struct apx_gpu_xid){ .xid = xid, .count = 1 };
}

/* The critical XID events since the last sample, without waiting (timeout 0), at most
 * XID_EVENTS_MAX of them (the rest wait for the next sample). */
static void poll_xids(struct apx_nvml *n)
{
	if (!n->xid_set)
		return;
	for (unsigned int k = 0; k < XID_EVENTS_MAX; k++) {
		nvmlEventData_t ev;

		memset(&ev, 0, sizeof(ev));
		if (n->ev_wait(n->xid_set, &ev, 0) != NVML_SUCCESS)
			break;		/* NVML_ERROR_TIMEOUT: none left */
		if (!(ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
			continue;
		for (unsigned int i = 0; i < n->ndev; i++) {
			if (n->dev[i] == ev.device && n->info[i].xid_events) {
				count_xid(&n->info[i], (uint32_t)ev.eventData);
				break;
			}
		}
	}
}

/* NVML names processes by their pids in the host's PID namespace. When nvperfd runs in
 * another one (a container), none of the pids NVML lists exists here: after 3 such samples in a
 * row, say so once; per-process GPU values are then unavailable (summaries say why). */
static void check_pid_namespace(struct apx_nvml *n)
{
	if (n->pids_seen && !n->pids_here) {
		if (++n->foreign_streak == 3 && !n->foreign_pids) {
			n->foreign_pids = 1;
			apx_dlog(APX_LOG_NOTICE, "NVML: none of the %u processes it lists on the GPUs "
				 "exists in this PID namespace (nvperfd in a container?): per-process "
				 "GPU values unavailable; device values still sampled", n->pids_seen);
		}
	} else if (n->pids_here) {
		n->foreign_streak = 0;
		n->foreign_pids = 0;
	}
	n->pids_seen = n->pids_here = 0;
}

void apx_nvml_sample(struct apx_nvml *n, struct apx_daemon *d, uint64_t now_ns)
{
	if (!n)
		return;
	for (struct apx_proc *p = d->procs; p; p = p->next) {	/* "now" is this sample */
		p->gpu.now_valid = 0;
		p->gpu.now_devs = p->gpu.mem_now_bytes = 0;
		p->gpu.sm_now_pct = 0;
	}
	for (unsigned int i = 0; i < n->ndev; i++) {
		struct apx_gpu_dev *g = &n->info[i];
		nvmlUtilization_t u;
		nvmlMemory_t m;
		nvmlMemory_v2_t m2 = { .version = NVML_MEMORY_V2_VERSION };
		unsigned int a = 0, b = 0;
		unsigned long long ull = 0;

		g->valid &= APX_GPU_GPM;
		if (n->util && n->util(n->dev[i], &u) == NVML_SUCCESS) {
			g->util_gpu_pct = u.gpu;
			g->util_mem_pct = u.memory;
			g->valid |= APX_GPU_UTIL;
		}
		if (n->mem2 && n->mem2(n->dev[i], &m2) == NVML_SUCCESS) {	/* as nvidia-smi */
			g->mem_used_bytes = m2.used;
			g->mem_total_bytes = m2.total;
			g->valid |= APX_GPU_MEM;
		} else if (n->mem && n->mem(n->dev[i], &m) == NVML_SUCCESS) {
			g->mem_used_bytes = m.used;
			g->mem_total_bytes = m.total;
			g->valid |= APX_GPU_MEM;
		}
		if (n->clock && n->clock(n->dev[i], NVML_CLOCK_SM, &a) == NVML_SUCCESS &&
		    n->clock(n->dev[i], NVML_CLOCK_MEM, &b) == NVML_SUCCESS) {
			g->sm_clock_mhz = a;
			g->mem_clock_mhz = b;
			g->valid |= APX_GPU_CLOCKS;
		}
		if (n->power && n->power(n->dev[i], &a) == NVML_SUCCESS) {
			g->power_mw = a;
			g->valid |= APX_GPU_POWER;
		}
		if (n->temp && n->temp(n->dev[i], NVML_TEMPERATURE_GPU, &a) == NVML_SUCCESS) {
			g->temp_c = a;
			g->valid |= APX_GPU_TEMP;
		}
		if (n->energy && n->energy(n->dev[i], &ull) == NVML_SUCCESS) {
			g->energy_mj = ull;
			g->valid |= APX_GPU_ENERGY;
		}
		if (n->reasons && n->reasons(n->dev[i], &ull) == NVML_SUCCESS) {
			g->throttle_reasons = ull;
			g->valid |= APX_GPU_THROTTLE;
		}
		if (g->gpm_supported)
			sample_gpm(n, i, now_ns);
		/* PCIe: from GPM when it has it; else NVML's counter (it samples for 20 ms) */
		if ((g->gpm_valid & (1u << GPM_PCIE_TX)) && (g->gpm_valid & (1u << GPM_PCIE_RX))) {
			g->pcie_tx_kbps = (uint32_t)(g->gpm[GPM_PCIE_TX] * 1024.0);
			g->pcie_rx_kbps = (uint32_t)(g->gpm[GPM_PCIE_RX] * 1024.0);
			g->valid |= APX_GPU_PCIE;
		} else if (!g->gpm_supported && n->pcie &&
			   n->pcie(n->dev[i], NVML_PCIE_UTIL_TX_BYTES, &a) == NVML_SUCCESS &&
			   n->pcie(n->dev[i], NVML_PCIE_UTIL_RX_BYTES, &b) == NVML_SUCCESS) {
			g->pcie_tx_kbps = a;
			g->pcie_rx_kbps = b;
			g->valid |= APX_GPU_PCIE;
		}
		sample_procs(n, d, i, now_ns);
	}
	poll_xids(n);
	check_pid_namespace(n);
}

int apx_nvml_foreign_pids(const struct apx_nvml *n)
{
	return n && n->foreign_pids;
}
