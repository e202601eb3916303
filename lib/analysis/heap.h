/*
 * heap.h - the model's view of the host heap samples (HEAP records of apx analyze
 * --heap-sampling-bytes N; docs/report.md, "Host heap"): where sampled allocations were made,
 * what they stand for, what was still live at the end, and the leak window (allocations made
 * between two times and still live at the second). load.c hands every HEAP record to
 * apx_heap_add_record(); apx_model_finish() (finish.c) calls apx_heap_build() after the
 * Python stacks' lines (stacks.c); the report's heap section (lib/report/build_heap.c) reads
 * model->heap. Single-threaded.
 */
#ifndef APX_ANALYSIS_HEAP_H
#define APX_ANALYSIS_HEAP_H

#include <stdint.h>

#include <apx/format.h>

#include "analysis/model.h"

/* load.c: one HEAP record of file fi (0 or -ENOMEM). */
int apx_heap_add_record(struct apx_model *m, uint16_t fi, const struct apx_rec *r);
/* finish.c: model->heap's sites, totals and leak window (0 or -ENOMEM). */
int apx_heap_build(struct apx_model *m);
/* apx_model_free(): model->heap's vectors. */
void apx_heap_free(struct apx_model *m);

/* Whether the host buffer [addr, addr + bytes) of file, read by a copy at at_ns, was still
 * allocated at until_ns, by the large allocations' records (apx analyze --heap-large-bytes):
 * 1 kept, 0 freed before until_ns, -1 no record of a large allocation holding it (a smaller
 * buffer, memory not from malloc: mmap, shared memory, CUDA's pinned allocations; a trace
 * without them). After apx_heap_build(). */
int apx_heap_host_kept(const struct apx_model *m, uint16_t file, uint64_t addr, uint64_t bytes,
		       uint64_t at_ns, uint64_t until_ns);
/* The large allocation's record that apx_heap_host_kept() judged by (its Python stack: where
 * the buffer was made), NULL when none. */
const struct apx_an_heap_rec *apx_heap_host_record(const struct apx_model *m, uint16_t file,
						   uint64_t addr, uint64_t bytes, uint64_t at_ns);

/* What one sample of an allocation of `bytes` stands for when the mean sampling interval is
 * `interval` (a Poisson process over the bytes allocated: the allocation was sampled with
 * probability p = 1 - exp(-bytes / interval)): 1 / p allocations and bytes / p bytes (pprof's
 * and tcmalloc's estimator; about interval for small allocations, bytes for large ones). 0
 * for an empty allocation; interval 0 (a large allocation, every one recorded): itself. */
double apx_heap_est_allocs(uint64_t bytes, uint64_t interval);
double apx_heap_est_bytes(uint64_t bytes, uint64_t interval);

/* Native frames: whether an object file is the program's own code (not a system library
 * under /lib, /usr/lib..., a Python package, the interpreter, apx's), and whether it is the
 * allocator's (libc, libstdc++, libgcc_s, the dynamic loader, libapx-heap: a call there is
 * not where the program allocated). len bytes, not NUL-terminated. */
int apx_heap_object_is_user(const char *path, size_t len);
int apx_heap_object_is_allocator(const char *path, size_t len);

#endif
