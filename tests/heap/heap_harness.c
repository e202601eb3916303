/*
 * heap_harness.c - libapx-heap-harness.so: the collector's heap source (src_heap.c) with its
 * Python stacks (src_pystack.c, pystacks.c) without CUDA, driven from python3 with ctypes by
 * test_heap.py while libapx-heap.so is preloaded: harness_start() starts both sources as the
 * collector does when CUDA starts (the heap source attaches to the library and gives it the
 * Python-stack hook), harness_drain() is the writer thread's drain, harness_stop() its finish,
 * into a real .apx that apx report reads. The collector's helpers that need CUPTI are stubbed
 * here. The drains run on a thread of the harness's own, as on the collector's writer thread
 * (the heap source stops sampling the thread it drains on). Test code only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"
#include "collector_stubs.h"
#include "collector/pystacks.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))

static struct apx_collector g_c;
static struct apx_enc g_e;
static pthread_t g_writer;
static _Atomic int g_stop;

/* ---- what inject.c, ring.c, proc.c and writer_thread.c give the sources ------------------- */

uint64_t apx_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

EXPORT int harness_start(const char *path);
EXPORT int harness_stop(void);

/* the writer thread: a drain every 5 ms */
static void *writer(void *arg)
{
	struct timespec ms5 = { 0, 5000000 };

	(void)arg;
	while (!atomic_load(&g_stop)) {
		nanosleep(&ms5, NULL);
		apx_source_heap.drain(&g_c, apx_mono_ns(), 1);
	}
	return NULL;
}

/* A header, then the Python stacks' and the heap's sources started on this thread. */
int harness_start(const char *path)
{
	int r = apx_stub_collector_open(&g_c, &g_e, path, "heap-harness");

	if (r < 0)
		return r;
	if (apx_source_pystack.start(&g_c) < 0)
		return -100;
	if (apx_source_heap.start(&g_c) < 0)
		return -101;
	return pthread_create(&g_writer, NULL, writer, NULL) ? -102 : 0;
}

int harness_stop(void)
{
	uint64_t now;

	atomic_store(&g_stop, 1);
	pthread_join(g_writer, NULL);
	now = apx_mono_ns();

	apx_source_pystack.finish(&g_c, now);
	apx_source_heap.finish(&g_c, now);
	return apx_writer_close(g_c.w, now, 0);
}
