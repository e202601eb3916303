/*
 * floor.c - libapx-floor.so, the benchmark's floor (bench only, never installed): the least a
 * CUPTI activity collector can cost. Loaded like the collector through CUDA_INJECTION64_PATH,
 * it enables the activity kinds named in APX_FLOOR_KINDS (default "kernel,memcpy,memset": what
 * the collector's light level needs from CUPTI at least), hands CUPTI 8 MiB buffers and
 * throws every completed buffer away without reading it. APX_FLOOR_CLOCK=1 also registers a
 * CLOCK_MONOTONIC timestamp callback, APX_FLOOR_ATTRS=1 enables launch attributes, to price
 * those CUPTI features apart from apx's own work. run.py compares apx with it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define BUF_BYTES (8u << 20)

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;

	*max_records = 0;
	if (posix_memalign(&p, 8, BUF_BYTES) != 0)
		p = NULL;
	*buffer = p;
	*size = p ? BUF_BYTES : 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
			       size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	(void)valid;
	free(buffer);
}

static uint64_t CUPTIAPI mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void at_exit(void)
{
	(void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static const struct {
	const char *name;
	CUpti_ActivityKind kind;
} kinds[] = {
	{ "kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL },
	{ "memcpy", CUPTI_ACTIVITY_KIND_MEMCPY },
	{ "p2p", CUPTI_ACTIVITY_KIND_MEMCPY2 },
	{ "memset", CUPTI_ACTIVITY_KIND_MEMSET },
	{ "memory", CUPTI_ACTIVITY_KIND_MEMORY2 },
	{ "sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION },
	{ "device", CUPTI_ACTIVITY_KIND_DEVICE },
	{ "runtime", CUPTI_ACTIVITY_KIND_RUNTIME },
	{ "driver", CUPTI_ACTIVITY_KIND_DRIVER },
};

__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	const char *spec = getenv("APX_FLOOR_KINDS");
	const char *clock = getenv("APX_FLOOR_CLOCK");
	const char *attrs = getenv("APX_FLOOR_ATTRS");
	char buf[256];

	if (!spec || !*spec)
		spec = "kernel,memcpy,memset";
	if (clock && !strcmp(clock, "1"))
		(void)cuptiActivityRegisterTimestampCallback(mono);
	if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS)
		return 1;
	if (attrs && !strcmp(attrs, "1"))
		(void)cuptiActivityEnableLaunchAttributes(1);
	strncpy(buf, spec, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	for (char *save = NULL, *name = strtok_r(buf, ",", &save); name;
	     name = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(name, kinds[i].name))
				(void)cuptiActivityEnable(kinds[i].kind);
	atexit(at_exit);
	return 1;
}
