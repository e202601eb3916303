/*
 * stacks.h - the model's views of the Python stacks that kernels, copies, memsets, syncs and
 * thread samples carry (store.h: frames, stacks, samples): which line a stack stands for
 * (stacks.c: library frames folded), what each line caused (hotspots.c), each thread's samples
 * (threads.c), the main thread's stacks inside the GPU's idle gaps (idle_stacks.c), and the
 * lines a finding names (lines.c). Built by apx_model_finish() (finish.c) after the timelines;
 * read by the rules (rules/rule_*.c) and the report (lib/report). Single-threaded; each build
 * returns 0 or -ENOMEM and leaves the model's vectors empty when the trace has no stacks.
 */
#ifndef APX_ANALYSIS_STACKS_H
#define APX_ANALYSIS_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"
#include "analysis/model.h"

/* Whether a frame's file is library code, folded into the user line that called it: paths
 * with /site-packages/ or /dist-packages/, the standard library (/lib/python3.), names that
 * start with '<' (<frozen importlib._bootstrap>, <string>). len bytes, not NUL-terminated. */
int apx_frame_is_library(const char *path, size_t len);

/* stacks.c: m->lines and m->stack_line (folded unless m->frames_all), m->has_stacks,
 * m->steady_steps. */
int apx_stacks_build(struct apx_model *m);
/* The line (m->lines index) of an event's stack field (store stacks[] + 1), UINT32_MAX none. */
static inline uint32_t apx_stack_line(const struct apx_model *m, uint32_t stack)
{
	return stack && m->stack_line ? m->stack_line[stack - 1] : UINT32_MAX;
}

/* backward.c: m->bwd, the forward line of each backward kernel (PyTorch op ranges with
 * autograd sequence numbers, apx analyze --python-backward nvtx); after apx_stacks_build. */
int apx_backward_build(struct apx_model *m);
/* allocs.c: m->allocs (the largest allocations per device and kind), m->allocs_failed and
 * m->allocs_failed_n (allocation calls that failed), each with its line when the MEMORY
 * record carries a stack; after apx_stacks_build. */
int apx_allocs_build(struct apx_model *m);
/* A CUDA driver error's name ("CUDA_ERROR_OUT_OF_MEMORY") for the ones an allocation call
 * returns, NULL for the others (allocs.c). */
const char *apx_cuda_error_name(uint32_t err);
/* hotspots.c: m->hotspots, one row per line with GPU work, syncs or host samples. */
int apx_hotspots_build(struct apx_model *m);
/* threads.c: m->threads, one per thread with samples, by samples (most first). */
int apx_threads_build(struct apx_model *m);
/* oswaits.c: m->oswaits and m->oswait_lines (needs m->lines: after apx_stacks_build). */
int apx_oswaits_build(struct apx_model *m);
/* idle_stacks.c: m->idle_stacks and m->idle_samples_ns. */
int apx_idle_stacks_build(struct apx_model *m);
/* Visit every sample of a process's main thread (tid == pid) whose time lies inside a steady
 * GPU-idle gap (model->gaps, >= 100 us) whose cause (enum apx_idle_cause) is a bit of causes:
 * fn(ctx, its stack field, its period in ns, its thread state: enum apx_thread_state). 0 or
 * -ENOMEM. */
int apx_idle_samples(const struct apx_model *m, unsigned causes,
		     void (*fn)(void *ctx, uint32_t stack, uint64_t ns, unsigned state), void *ctx);

/* A syscall's name (x86-64 numbers: the ones threads wait in), NULL for the others. */
const char *apx_syscall_name(int32_t nr);

/* lines.c: the lines that cause a finding. A rule adds what each event of its cause weighs
 * (count, ns) under the event's stack field, then puts the heaviest lines (by ns, then count)
 * into the finding: f->lines, a line of evidence each, and the top one at the end of the title
 * ("...; top line `tokenize` in data.py:12, 11.0 ms a step"). Without stacks in the trace
 * nothing is changed. */
struct apx_line_tally {
	const struct apx_model *m;
	double *count, *ns;			/* per line of m->lines */
	size_t n;
	uint64_t added;				/* events with a line */
	/* optional, set before put: fills the cause and per_step of a line it keeps (m->lines
	 * index; struct apx_finding_line), which its evidence line then says */
	void (*cause)(void *ctx, uint32_t line, struct apx_finding_line *l);
	void *cause_ctx;
};
int apx_line_tally_init(struct apx_line_tally *t, const struct apx_model *m);	/* -ENOMEM */
void apx_line_tally_add(struct apx_line_tally *t, uint32_t stack, double count, double ns);
/* what: the events counted, plural ("syncs", "copies", "launches", "samples"); per_step: the
 * events lie in the steady window, so the title gives the top line's ns a step. */
void apx_line_tally_put(struct apx_line_tally *t, struct apx_finding *f, const char *what,
			int per_step);
void apx_line_tally_release(struct apx_line_tally *t);
/* The same in one call for the GPU events of a rule: every kernel of the steady window (the
 * whole run without one) whose name keep(ctx, name) takes (keep NULL: every kernel), weighed
 * by its duration. */
void apx_lines_of_kernels(const struct apx_model *m, struct apx_finding *f,
			  int (*keep)(const void *ctx, const struct apx_an_name *nm), const void *ctx);
/* ... every copy for which keep(ctx, copy index) says 1 (model->copies' index = the store's). */
void apx_lines_of_copies(const struct apx_model *m, struct apx_finding *f,
			 int (*keep)(const struct apx_model *m, size_t i));
/* ... the main thread's samples inside the steady idle gaps of the causes (bits). */
void apx_lines_of_idle(const struct apx_model *m, struct apx_finding *f, unsigned causes);

#endif
