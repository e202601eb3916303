/*
 * sink.h - the taking side of libapx-heap.so (heap.h): finds the preloaded library, attaches
 * to it, and turns its events into trace records: HEAP records (docs/format.md, "heap"), with
 * each new native stack as FRAME (native) and STACK records written first. Native frames are
 * named here, off the program's threads, with dladdr (object file, nearest exported symbol,
 * offset in the object). It knows nothing of CUPTI: src_heap.c makes it a source of
 * libapx-inject.so, and the tests' stand-in (tests/heap/heap_stub.c) uses it alone.
 *
 * Threads: open on any thread (once); drain, summary and close on the one thread that owns the
 * writer (the collector's writer thread), which calls ignore_thread once so that its own
 * allocations (the writer's buffers, these tables) are not sampled.
 */
#ifndef APX_COLLECTOR_HEAP_SINK_H
#define APX_COLLECTOR_HEAP_SINK_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

#include "collector/heap/heap.h"

struct apx_heap_sink;

/* Where the ids of the FRAME and STACK records come from: they share the file's id spaces
 * with the Python stacks' (the collector's pystacks.c). Both called on the writer thread. */
struct apx_heap_ids {
	uint32_t (*frame_id)(void *ctx);
	uint32_t (*stack_id)(void *ctx);
	void *ctx;
};

/* Attach to libapx-heap.so (found with dlsym(RTLD_DEFAULT)) with hooks (may be NULL).
 * 0; -ENOENT: not preloaded; -EPROTO: another version; -EBUSY: another consumer; -ESRCH: a
 * forked child; -ENOMEM. The library may still have sampling off (see the summary). */
int apx_heap_sink_open(const struct apx_heap_hooks *hooks, const struct apx_heap_ids *ids,
		       struct apx_heap_sink **ret);
/* Write every waiting event into w. periodic: also a LOSS record for events the library
 * dropped since the last one (its ring was full). */
void apx_heap_sink_drain(struct apx_heap_sink *s, struct apx_writer *w, uint64_t now_ns,
			 int periodic);
/* The calling thread's allocations are not sampled from now on (the writer thread's). */
void apx_heap_sink_ignore_thread(struct apx_heap_sink *s);
/* The kv "heap_sampling" text: what the library sampled, wrote and lost. */
void apx_heap_sink_summary(struct apx_heap_sink *s, char *buf, size_t cap);
/* Detach (no hook is called afterwards) and free. NULL is fine. */
void apx_heap_sink_close(struct apx_heap_sink *s);

#endif
