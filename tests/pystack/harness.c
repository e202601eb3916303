/*
 * harness.c - libapx-pysampler-harness.so: the collector's Python-stack sources
 * (src_pystack.c, src_pysampler.c, pystacks.c) without CUDA, driven from python3 with ctypes
 * by tests/pystack/sampler_check.py: start() as the collector would at CUDA's start, a
 * "launch" that records the calling thread's stack as a KERNEL record would carry it, the
 * 200 Hz sampler over the program's threads, and a real .apx written by the format writer,
 * which `apx report` then reads. The collector's helpers that need CUPTI are stubbed here.
 * Test code only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/collector.h"
#include "collector_stubs.h"
#include "collector/pystacks.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))

static struct apx_collector g_c;
static struct apx_enc g_e;
static uint64_t g_corr, g_t0;

/* ---- what inject.c, ring.c and writer_thread.c give the sources in the collector ---------- */

extern const struct apx_source apx_source_pystack, apx_source_pysampler;

EXPORT int harness_start(const char *path);
EXPORT unsigned harness_launch(unsigned dur_us);
EXPORT void harness_drain(void);
EXPORT int harness_stop(void);

/* A header, the Python sources started on this thread (as at CUDA's start). */
int harness_start(const char *path)
{
	int r = apx_stub_collector_open(&g_c, &g_e, path, "harness");

	if (r < 0)
		return r;
	g_t0 = apx_mono_ns();
	if (apx_source_pystack.start(&g_c) < 0)
		return -100;
	if (apx_source_pysampler.start(&g_c) < 0)
		return -101;
	return 0;
}

/* One "kernel" of dur_us on device 0 stream 7, launched from the calling thread: its stack
 * taken the way the launch callback takes it, joined by correlation id as the writer does. */
unsigned harness_launch(unsigned dur_us)
{
	struct apx_rec rec;
	uint32_t tid, corr = (uint32_t)++g_corr, stack, name = 0;
	uint64_t now = apx_mono_ns();

	apx_pystack_at_call(corr);
	apx_rec_init(&rec, APX_REC_KERNEL);
	rec.v[APX_KERNEL_START_NS] = now;
	rec.v[APX_KERNEL_END_NS] = now + (uint64_t)dur_us * 1000;
	rec.v[APX_KERNEL_STREAM] = 7;
	rec.v[APX_KERNEL_CORRELATION] = corr;
	(void)apx_writer_intern(g_c.w, "harness_kernel", 14, &name);
	rec.v[APX_KERNEL_NAME] = name;
	stack = apx_pystack_of_corr(corr, &tid);
	rec.v[APX_KERNEL_STACK] = stack;
	rec.v[APX_KERNEL_TID] = tid;
	apx_pystacks_drain(&g_e);	/* the writer thread's order: stacks, then records */
	(void)apx_writer_add(g_c.w, &rec);
	return stack;
}

void harness_drain(void)
{
	apx_source_pysampler.drain(&g_c, apx_mono_ns(), 0);
}

int harness_stop(void)
{
	uint64_t now = apx_mono_ns();

	apx_source_pysampler.stop(&g_c);
	apx_source_pystack.finish(&g_c, now);
	apx_source_pysampler.finish(&g_c, now);
	return apx_writer_close(g_c.w, now, 0);
}
