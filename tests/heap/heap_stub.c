/*
 * heap_stub.c - libapx-heap-stub.so, the collector's stand-in for the heap sampling tests
 * (test_heap.py): preloaded after libapx-heap.so, its constructor attaches to the library
 * through the same sink as the collector (lib/collector/heap/sink.c) and opens a real trace,
 * $APX_HEAP_STUB_OUT; a thread of its own drains the samples into it every 5 ms, as the
 * collector's writer thread does, and the destructor drains once more and closes the file,
 * which apx report then reads. A forked child writes nothing (the file is its parent's).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/heap/sink.h"

#include "base/banned.h"

static struct {
	struct apx_heap_sink *sink;
	struct apx_writer *w;
	pthread_t thread;
	_Atomic int stop;
	pid_t owner;
	uint32_t next_frame, next_stack;	/* the drain thread's */
} g;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t frame_id(void *ctx)
{
	(void)ctx;
	return ++g.next_frame;
}

static uint32_t stack_id(void *ctx)
{
	(void)ctx;
	return ++g.next_stack;
}

static void *drainer(void *arg)
{
	struct timespec ms5 = { 0, 5000000 };
	unsigned tick = 0;

	(void)arg;
	apx_heap_sink_ignore_thread(g.sink);	/* as the collector's writer thread does */
	while (!atomic_load(&g.stop)) {
		nanosleep(&ms5, NULL);
		apx_heap_sink_drain(g.sink, g.w, mono_ns(), ++tick % 20 == 0);
	}
	return NULL;
}

__attribute__((constructor)) static void stub_start(void)
{
	const struct apx_heap_ids ids = { frame_id, stack_id, NULL };
	const char *out = getenv("APX_HEAP_STUB_OUT");
	struct apx_rec h;
	int r;

	if (!out || !*out)
		return;
	r = apx_heap_sink_open(NULL, &ids, &g.sink);
	if (r < 0) {
		fprintf(stderr, "heap-stub: cannot attach to libapx-heap.so: %s\n", strerror(-r));
		return;
	}
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-heap-stub");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = (uint64_t)getpid();
	h.v[APX_HEADER_START_NS] = mono_ns();
	r = apx_writer_open(out, 1, &h, NULL, &g.w);
	if (r < 0) {
		fprintf(stderr, "heap-stub: cannot write %s: %s\n", out, strerror(-r));
		apx_heap_sink_close(g.sink);
		g.sink = NULL;
		return;
	}
	g.owner = getpid();
	if (pthread_create(&g.thread, NULL, drainer, NULL)) {
		apx_writer_abandon(g.w);
		g.w = NULL;
	}
}

__attribute__((destructor)) static void stub_finish(void)
{
	char text[512];
	struct apx_rec kv;
	uint64_t now;

	if (!g.w || getpid() != g.owner)
		return;
	atomic_store(&g.stop, 1);
	pthread_join(g.thread, NULL);
	now = mono_ns();
	apx_heap_sink_drain(g.sink, g.w, now, 1);
	apx_heap_sink_summary(g.sink, text, sizeof(text));
	apx_rec_init(&kv, APX_REC_KV);
	apx_rec_set_str(&kv, APX_KV_KEY, "heap_sampling");
	apx_rec_set_str(&kv, APX_KV_VALUE, text);
	(void)apx_writer_add(g.w, &kv);
	apx_heap_sink_close(g.sink);
	(void)apx_writer_close(g.w, now, 0);
	g.w = NULL;
}
