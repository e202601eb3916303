/*
 * fakenvml.c - a stand-in libnvidia-ml.so.1 for test-nvml.sh: one "GPU" whose compute
 * processes are the pids listed in the file named by $APX_FAKENVML_PIDS, with fixed readings
 * (utilization 0, 512 MiB per process, SM utilization 42 %, GPM metric i = 1.5 * i,
 * temperature 47 C, energy 123456789 mJ, throttle reasons sw_power_cap + sw_thermal_slowdown,
 * PCI bus 00000000:3B:00.0, minor number 2, the critical XIDs 79, 13, 13 at the first three
 * event reads) and power unsupported, so that nvperfd's NVML code (lib/daemon/nvml.c) runs
 * without a GPU, validity bits included. Loaded by nvperfd through LD_LIBRARY_PATH.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

#define API __attribute__((visibility("default")))
#define OK 0
#define NOT_SUPPORTED 3
#define INSUFFICIENT_SIZE 7
#define MAXP 64

typedef struct { unsigned int gpu, memory; } util_t;
typedef struct { unsigned long long total, free, used; } mem_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } mem2_t;
typedef struct {
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
} pinfo_t;
typedef struct {
	unsigned int pid;
	unsigned long long ts;
	unsigned int sm, mem, enc, dec;
} putil_t;
typedef struct { unsigned int version, supported; } gpmsup_t;
typedef struct {
	unsigned int id;
	int ret;
	double value;
	char *names[3];
} gpmm_t;
typedef struct {
	unsigned int version, num;
	void *s1, *s2;
	gpmm_t m[];
} gpmget_t;
typedef struct {
	char legacy[16];
	unsigned int domain, bus, device, devid, subsys;
	char bus_id[32];
} pci_t;
typedef struct {
	void *dev;
	unsigned long long type, data;
	unsigned int gi, ci;
} event_t;

API int nvmlInit_v2(void);
API int nvmlShutdown(void);
API int nvmlDeviceGetCount_v2(unsigned int *n);
API int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
API int nvmlDeviceGetName(void *dev, char *buf, unsigned int len);
API int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len);
API int nvmlDeviceGetUtilizationRates(void *dev, util_t *u);
API int nvmlDeviceGetMemoryInfo(void *dev, mem_t *m);
API int nvmlDeviceGetMemoryInfo_v2(void *dev, mem2_t *m);
API int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz);
API int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw);
API int nvmlDeviceGetMigMode(void *dev, unsigned int *cur, unsigned int *pend);
API int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n, pinfo_t *p);
API int nvmlDeviceGetProcessUtilization(void *dev, putil_t *s, unsigned int *n,
					unsigned long long last);
API int nvmlGpmQueryDeviceSupport(void *dev, gpmsup_t *s);
API int nvmlGpmSampleAlloc(void **s);
API int nvmlGpmSampleFree(void *s);
API int nvmlGpmSampleGet(void *dev, void *s);
API int nvmlGpmMetricsGet(gpmget_t *g);
API int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c);
API int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj);
API int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r);
API int nvmlDeviceGetPciInfo_v3(void *dev, pci_t *p);
API int nvmlDeviceGetMinorNumber(void *dev, unsigned int *m);
API int nvmlEventSetCreate(void **set);
API int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set);
API int nvmlEventSetWait_v2(void *set, event_t *e, unsigned int timeout_ms);
API int nvmlEventSetFree(void *set);

static int the_dev;
static unsigned long long clock_us;

static unsigned int read_pids(unsigned int *pids)
{
	const char *path = getenv("APX_FAKENVML_PIDS");
	FILE *f = path ? fopen(path, "re") : NULL;
	unsigned int n = 0, pid;

	while (f && n < MAXP && fscanf(f, "%u", &pid) == 1)
		pids[n++] = pid;
	if (f)
		fclose(f);
	return n;
}

int nvmlInit_v2(void) { return OK; }
int nvmlShutdown(void) { return OK; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return OK; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	*dev = &the_dev;
	return i == 0 ? OK : 2;
}
int nvmlDeviceGetName(void *dev, char *buf, unsigned int len)
{
	snprintf(buf, len, "Fake H200");
	return OK;
}
int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len)
{
	snprintf(buf, len, "GPU-00000000-fake");
	return OK;
}
int nvmlDeviceGetUtilizationRates(void *dev, util_t *u)
{
	u->gpu = 0;
	u->memory = 5;
	return OK;
}
int nvmlDeviceGetMemoryInfo(void *dev, mem_t *m)	/* v1: "used" counts the reserve */
{
	m->total = 80ull << 30;
	m->used = (1ull << 30) + (256ull << 20);
	m->free = m->total - m->used;
	return OK;
}
int nvmlDeviceGetMemoryInfo_v2(void *dev, mem2_t *m)	/* what nvidia-smi shows */
{
	if (m->version != (unsigned int)(sizeof(*m) | (2u << 24)))
		return 25;	/* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	m->total = 80ull << 30;
	m->reserved = 256ull << 20;
	m->used = 1ull << 30;
	m->free = m->total - m->used - m->reserved;
	return OK;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz)
{
	*mhz = type == 1 ? 1980 : 2619;
	return OK;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) { return NOT_SUPPORTED; }
int nvmlDeviceGetMigMode(void *dev, unsigned int *cur, unsigned int *pend)
{
	*cur = *pend = 0;
	return OK;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n, pinfo_t *p)
{
	unsigned int pids[MAXP], k = read_pids(pids);

	if (*n < k) {
		*n = k;
		return INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < k; i++)
		p[i] = (pinfo_t){ .pid = pids[i], .used = 512ull << 20 };
	*n = k;
	return OK;
}
int nvmlDeviceGetProcessUtilization(void *dev, putil_t *s, unsigned int *n,
				    unsigned long long last)
{
	unsigned int pids[MAXP], k = read_pids(pids);

	if (!s || *n < k) {
		*n = k;
		return INSUFFICIENT_SIZE;
	}
	clock_us += 1000000;
	for (unsigned int i = 0; i < k; i++)
		s[i] = (putil_t){ .pid = pids[i], .ts = clock_us, .sm = 42, .mem = 7 };
	*n = k;
	return OK;
}
int nvmlGpmQueryDeviceSupport(void *dev, gpmsup_t *s)
{
	s->supported = s->version == 1;
	return OK;
}
int nvmlGpmSampleAlloc(void **s)
{
	*s = malloc(16);
	return *s ? OK : 2;
}
int nvmlGpmSampleFree(void *s)
{
	free(s);
	return OK;
}
int nvmlGpmSampleGet(void *dev, void *s) { return OK; }
int nvmlGpmMetricsGet(gpmget_t *g)
{
	if (g->version != 1 || !g->s1 || !g->s2 || g->s1 == g->s2)
		return 2;
	for (unsigned int i = 0; i < g->num; i++) {
		g->m[i].ret = OK;
		g->m[i].value = 1.5 * g->m[i].id;
	}
	return OK;
}
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c)
{
	if (sensor != 0)
		return NOT_SUPPORTED;
	*c = 47;
	return OK;
}
int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
	*mj = 123456789;
	return OK;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r)
{
	*r = 0x4 | 0x20;	/* SwPowerCap, SwThermalSlowdown */
	return OK;
}
int nvmlDeviceGetPciInfo_v3(void *dev, pci_t *p)
{
	memset(p, 0, sizeof(*p));
	p->bus = 0x3b;
	snprintf(p->legacy, sizeof(p->legacy), "0000:3B:00.0");
	snprintf(p->bus_id, sizeof(p->bus_id), "00000000:3B:00.0");
	return OK;
}
int nvmlDeviceGetMinorNumber(void *dev, unsigned int *m)
{
	*m = 2;
	return OK;
}
static int the_set, events_read;
int nvmlEventSetCreate(void **set)
{
	*set = &the_set;
	return OK;
}
int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set)
{
	return dev == &the_dev && set == &the_set && types == 0x8 ? OK : 2;
}
int nvmlEventSetWait_v2(void *set, event_t *e, unsigned int timeout_ms)
{
	static const unsigned int xids[] = { 79, 13, 13 };

	if (set != &the_set || timeout_ms != 0)
		return 2;	/* nvperfd must never wait */
	if (events_read == 3)
		return 10;	/* NVML_ERROR_TIMEOUT */
	*e = (event_t){ .dev = &the_dev, .type = 0x8, .data = xids[events_read++] };
	return OK;
}
int nvmlEventSetFree(void *set) { return set == &the_set ? OK : 2; }
