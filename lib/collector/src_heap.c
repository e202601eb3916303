/*
 * src_heap.c - host heap sampling as a source of the collector (collector.h's table; apx
 * analyze --heap-sampling-bytes N, docs/collector.md, "Host heap sampling"). The sampling
 * itself is libapx-heap.so's (heap/heap.c), which apx analyze preloads: it wraps malloc and
 * friends from the program's first instruction and keeps its samples in a fixed ring until
 * this source attaches. start() (the thread that initialised CUDA, after the Python stacks'
 * source) attaches through heap/sink.c and gives the library a hook that takes the calling
 * thread's Python stack inside a sampled allocation; drain() (writer thread) writes the
 * waiting samples as HEAP records with their native stacks; finish() (writer thread, last)
 * drains once more, writes kv "heap_sampling" and detaches.
 *
 * The hook runs on the program's threads inside malloc: the thread is inside the allocator,
 * so its frame chain cannot change under the walk (CPython's own tracemalloc walks the same
 * chain from its allocation hooks), and it reads it by direct loads once the Python stacks'
 * source has checked the layout (apx_pystacks_runtime() is not NULL only then), and never
 * again once the interpreter has begun to finalize (its thread states go away; C exit
 * handlers and destructors still allocate after that): a Py_AtExit handler, which CPython
 * calls at the end of its finalization, and the first is_finalizing seen both end it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/heap/sink.h"
#include "collector/pystacks.h"

#include "base/banned.h"

/* written by start() before the library may call the hook; then the writer thread's */
static struct apx_heap_sink *sink;
static int ignored;
static _Atomic int py_done;	/* the interpreter is finalizing or gone: no Python stacks */

/* Py_AtExit's handler (the thread that finalizes Python, at the end of it). */
static void py_exiting(void)
{
	atomic_store(&py_done, 1);
}

/* The calling thread's Python stack, inside one of its sampled allocations (heap.h's hook:
 * no allocation, no lock). */
static uint32_t heap_pystack(uint32_t *ret_tid)
{
	const struct apx_py_runtime *rt = apx_pystacks_runtime();
	struct apx_py_raw_frame f[APX_PYSTACK_DEPTH];
	uintptr_t ts;
	int n, trunc;

	*ret_tid = 0;
	if (!rt || atomic_load_explicit(&py_done, memory_order_relaxed))
		return 0;	/* not Python, stacks off, or the interpreter gone */
	if (rt->is_finalizing && rt->is_finalizing()) {
		atomic_store(&py_done, 1);	/* thread states going away: for good */
		return 0;
	}
	ts = (uintptr_t)rt->this_thread_state();
	if (!ts)
		return 0;	/* a thread Python never saw */
	if (rt->L.tstate_native_tid)
		*ret_tid = (uint32_t)*(const uint64_t *)(ts + rt->L.tstate_native_tid);
	n = apx_py_walk_own(rt, ts, f, APX_PYSTACK_DEPTH, &trunc);
	return n > 0 ? apx_pystacks_intern(f, n, trunc) : 0;
}

static uint32_t frame_id(void *ctx)
{
	(void)ctx;
	return apx_pystacks_new_frame_id();
}

static uint32_t stack_id(void *ctx)
{
	(void)ctx;
	return apx_pystacks_new_stack_id();
}

static int heap_start(struct apx_collector *c)
{
	static const struct apx_heap_hooks hooks = { .pystack = heap_pystack };
	static const struct apx_heap_ids ids = { .frame_id = frame_id, .stack_id = stack_id };
	int sampling = apx_env_u64("APX_HEAP_SAMPLING_BYTES", 0, 1ull << 40) != 0;
	/* without sampling, only the large host allocations (apx analyze's default) */
	const char *what = sampling ? "heap sampling" : "large host allocations";
	int r;

	if (!sampling && !apx_env_u64("APX_HEAP_LARGE_BYTES", 0, 1ull << 40))
		return 0;	/* not asked for */
	if (apx_pystacks_runtime()) {
		int (*at_exit)(void (*)(void)) = (int (*)(void (*)(void)))dlsym(RTLD_DEFAULT,
										  "Py_AtExit");

		if (!at_exit || at_exit(py_exiting) < 0)
			atomic_store(&py_done, 1);	/* no end known: no Python stacks */
	}
	r = apx_heap_sink_open(&hooks, &ids, &sink);
	if (r == -ENOENT) {
		apx_degraded(c, sampling ? "heap-sampling: libapx-heap.so is not preloaded (apx "
				 "analyze --heap-sampling-bytes preloads it): no heap samples"
				 : "large-host-allocations: libapx-heap.so is not preloaded (apx "
				 "analyze preloads it): host buffers judged by the resident set", 0);
		apx_say("%s off: libapx-heap.so is not in LD_PRELOAD", what);
		return -1;
	}
	if (r < 0) {
		apx_degraded(c, sampling ? "heap-sampling: cannot attach to libapx-heap.so (another "
				 "version, or out of memory): no heap samples"
				 : "large-host-allocations: cannot attach to libapx-heap.so "
				 "(another version, or out of memory)", r);
		apx_say("%s off: cannot attach to libapx-heap.so: %s", what, strerror(-r));
		return -1;
	}
	return 0;
}

static void heap_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	if (!sink)
		return;
	if (!ignored) {		/* the writer's own allocations are not the program's */
		apx_heap_sink_ignore_thread(sink);
		ignored = 1;
	}
	apx_pystacks_drain(c->enc);	/* the Python stacks the samples name, first */
	apx_heap_sink_drain(sink, c->w, now_ns, periodic);
}

static void heap_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[512];

	if (!sink)
		return;
	heap_drain(c, now_ns, 1);
	apx_heap_sink_summary(sink, text, sizeof(text));
	apx_add_kv(c, "heap_sampling", text);
	apx_heap_sink_close(sink);	/* the hook is not called after this */
	sink = NULL;
}

const struct apx_source apx_source_heap = {
	.name = "heap",
	.start = heap_start,
	.drain = heap_drain,
	.finish = heap_finish,
};
