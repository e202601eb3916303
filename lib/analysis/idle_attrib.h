/*
 * idle_attrib.h - one cause per GPU-idle nanosecond: the steady window, the host-side
 * intervals each cause is read from, and the attribution of one idle gap of a device. Used by
 * timeline.c (one call per gap of its sweep) inside apx_model_finish(); the rules then take
 * their savings from the attributed totals (struct apx_an_timeline.idle_by_cause).
 */
#ifndef APX_ANALYSIS_IDLE_ATTRIB_H
#define APX_ANALYSIS_IDLE_ATTRIB_H

#include "analysis/model.h"

/* Disjoint intervals [s, e), sorted. */
struct apx_spans {
	uint64_t *s, *e;
	size_t n;
};

/* The host-side intervals, built once for the whole run. */
struct apx_idle_ctx {
	const struct apx_model *m;
	struct apx_spans uvm_host;	/* the host faulting unified-memory pages back */
	struct apx_spans staging;	/* inside the call of a pageable copy >= 64 KiB */
	struct apx_spans calls;		/* inside the call of a small copy (< 64 KiB) */
	struct apx_spans alloc;		/* inside an allocator call (alloc_time.h) */
	uint64_t *sync_ends;		/* sorted: synchronizations' return times */
	size_t nsync_ends;
	uint64_t *graph_starts;		/* sorted: each CUDA graph's first kernel start */
	uint64_t *capture_from;		/* per graph_starts: the graphs before it last ended
					 * (UINT64_MAX: none before): it was captured since */
	size_t ngraph_starts;
	uint32_t *replayed;		/* sorted: the correlation ids of launches without times
					 * (replayed: apx analyze --replay) */
	size_t nreplayed;
	uint64_t *unknown_per_step;	/* the model's (NULL without steps): added to here */
	uint64_t *step_host_per_step;
};

/* What ends and begins a gap, from the device's sweep. */
struct apx_gap_edges {
	int prev_small_copy;		/* the activity before it was a small host<->device copy */
	int next_h2d;			/* the activity after it is a host->device copy */
	int next_small_copy;		/* ... a small host<->device copy */
	int prev_pageable_h2d;		/* the activity before it was a host->device copy of
					 * >= 64 KiB from pageable memory */
	int prev_pageable_d2h;		/* ... a device->host copy of more than 64 KiB into
					 * pageable memory (the host stages it out, then returns) */
	uint32_t prev_corr, next_corr;	/* the correlation ids of the activity before and after
					 * (0: none): a launch replayed between them ran its
					 * passes in the gap (apx_idle_gap) */
};

/* Between steps, a gap this long or longer is a stall (data, I/O, Python work), not the host's
 * work between two launches. */
#define APX_STALL_NS 1000000u
/* A gap >= 50 us that nothing else explains, inside a step or under APX_STALL_NS (the host's
 * work between launches): apx_idle_gap() returns and keeps it apart, apx_idle_resolve() makes
 * it launch overhead or unknown (never in idle_by_cause[] or a gap's cause after that). */
#define APX_IDLE_STEP_HOST APX_IDLE__COUNT
/* A gap mostly in a sync's refill (idle_attrib.c): returned by apx_idle_gap() and decided by
 * apx_idle_resolve() (sync, or launch overhead in a launch-bound steady state). */
#define APX_IDLE_REFILL (APX_IDLE__COUNT + 1)
/* The refill after a sync ends when the GPU has been busy REFILL_BUSY_NS with no gap but
 * ones under REFILL_TIGHT_NS (the ~1 us between kernels the GPU had queued) in between: the
 * host is that far ahead again. */
#define APX_REFILL_TIGHT_NS 2000u
#define APX_REFILL_BUSY_NS 1000000u
/* Launch-bound: the short gaps' launch overhead is at least this share of the steady state. */
#define APX_LAUNCH_BOUND_SHARE 0.10

/* Host<->device copies of 64 KiB or less are "small": their cost is per call, not per byte
 * (the CUDA Programming Guide counts host->device copies "of 64 KB or less" among the
 * operations asynchronous to the host: the driver takes them in one piece, not staged). */
#define APX_SMALL_COPY_BYTES 65536u

static inline int apx_copy_small(uint64_t bytes)
{
	return bytes <= APX_SMALL_COPY_BYTES;
}

/* Sets model->steady_start_ns / steady_end_ns from the steps and the warm-up's end. */
void apx_idle_window(struct apx_model *m);
/* Builds the host-side intervals (sorts nothing of the model's). 0 or -ENOMEM. */
int apx_idle_ctx_init(struct apx_idle_ctx *c, const struct apx_model *m);
void apx_idle_ctx_release(struct apx_idle_ctx *c);
/* Attributes the gap [a, b) of timeline t: its parts before, inside and after the steady
 * window; inside, every ns to one cause. Returns the cause of the largest part (for the gap
 * list). */
unsigned apx_idle_gap(const struct apx_idle_ctx *c, struct apx_an_timeline *t, uint64_t a,
		      uint64_t b, const struct apx_gap_edges *ed);
/* After every device's sweep (and the sum over devices in model->gpu): whether the steady
 * state is launch-bound (model->launch_bound), from the short gaps alone; then the gaps kept
 * apart as APX_IDLE_STEP_HOST become launch overhead (launch-bound: the host's work between a
 * step's launches, which a captured or compiled step does not repeat) or unknown, in every
 * timeline, in model->gpu and in model->gaps. */
void apx_idle_resolve(struct apx_model *m);
/* The host's time blocked in synchronizations (stream-wait-event ones aside: the host does
 * not wait in them) inside the steady window. */
uint64_t apx_steady_blocked_ns(const struct apx_model *m);
/* The GPU's busy time in the steady window: the window less every idle ns, whatever cause it
 * has or waits for (after the sweep). */
uint64_t apx_steady_busy_ns(const struct apx_model *m);
/* The host's own work over the steady window: the window less its time blocked in syncs and
 * the collector's cost for each launch there (0 when the syncs fill it). With the GPU's busy
 * time, the step the two would take if each overlapped the other: max(host, busy). */
uint64_t apx_steady_host_work_ns(const struct apx_model *m);
/* Whether [a, b) meets one of the spans. */
int apx_spans_meet(const struct apx_spans *sp, uint64_t a, uint64_t b);

#endif
