/*
 * pystacks.h - internal to libapx-inject.so: the shared table of Python stacks
 * (pystacks.c), used by the launch-time stacks (src_pystack.c), the sampler thread
 * (src_pysampler.c) and the writer (encode.c joins stacks to records by correlation id).
 */
#ifndef APX_COLLECTOR_PYSTACKS_H
#define APX_COLLECTOR_PYSTACKS_H

#include <stdint.h>

#include "pystack/pystack.h"

#define APX_PYSTACK_DEPTH 96	/* frames kept per stack, innermost first */

struct apx_enc;

/* Allocate the tables (start-up thread, once the interpreter is known); -1 on ENOMEM. */
int apx_pystacks_init(const struct apx_py_runtime *rt);
/* Also record every call's host enter time and thread (apx_pystack_launch_ns); start-up
 * thread, after init, before callbacks are enabled. -1 on ENOMEM. */
int apx_pystacks_launch_times(void);
/* The interpreter found at init, NULL before. */
const struct apx_py_runtime *apx_pystacks_runtime(void);
/* The id of a stack (innermost first), defining it the first time; 0 when it cannot be kept.
 * Any thread; lock-free. */
uint32_t apx_pystacks_intern(const struct apx_py_raw_frame *f, int n, int truncated);
/* Ids for stacks and frames of other kinds (the heap samples' native stacks, src_heap.c),
 * unique among this table's in the file: a stack id (any thread), a frame id (writer thread;
 * works before and without apx_pystacks_init). */
uint32_t apx_pystacks_new_stack_id(void);
uint32_t apx_pystacks_new_frame_id(void);
/* Writer thread: FRAME and STACK records of the stacks defined since the last call. */
void apx_pystacks_drain(struct apx_enc *e);
void apx_pystacks_stats(uint64_t *ret_stacks, uint64_t *ret_full, uint64_t *ret_lost,
			uint64_t *ret_bad_code);

/* The stack and thread of the call with correlation id corr (any thread, lock-free; a later
 * call with the same id modulo 2^20 replaces it). */
void apx_pystacks_set_corr(uint32_t corr, uint32_t stack, uint32_t tid);
/* The stack of a launch, copy, memset or allocation by its correlation id, and the calling
 * thread (writer thread; 0 = none). */
uint32_t apx_pystack_of_corr(uint32_t corr, uint32_t *ret_tid);
/* The host time the call with correlation id corr entered (CLOCK_MONOTONIC) and its thread
 * as CUPTI names threads in NVTX ranges (low 32 bits of pthread_self), recorded only with
 * APX_PY_BACKWARD set (apx analyze --python-backward nvtx); 0 = none (writer thread). */
uint64_t apx_pystack_launch_ns(uint32_t corr, uint32_t *ret_thread);
/* src_pystack.c: the calling thread's stack now (application threads, inside a CUPTI
 * callback); 0 = none or off. */
uint32_t apx_pystack_here(uint32_t *ret_tid);
/* src_pystack.c: remember the calling thread's stack for correlation id corr (enter callback
 * of a launch, copy, memset or allocation call). */
void apx_pystack_at_call(uint32_t corr);
/* Whether launch-time stacks are on (callbacks on the launch APIs are needed). */
int apx_pystack_wanted(void);

#endif
