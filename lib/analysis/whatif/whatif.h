/*
 * whatif.h - the what-if simulator of the recorded timeline (Daydream, USENIX
 * ATC '20, is the anchor): the steady state's steps as a dependency graph of host tasks and GPU
 * operations, re-simulated after a transformation that stands for a fix. A finding's saving is
 * the simulated time of the steady window before the transformation minus after it.
 *
 * The graph (graph.c, built once by apx_model_finish through apx_whatif_build):
 *   - one host chain per traced process (the one with the most kernels in the steady window):
 *     every kernel launch, copy, memset, host synchronization and allocator call (its API
 *     record: alloc_time.h) of the window in correlation order (the process's API-call order;
 *     syncs without a correlation id are placed after the operations that started before they
 *     returned). Each task has the host's own work before it (pre_ns: the time since the
 *     previous task's host end), its time in the call when it waits for nothing (call_ns) and,
 *     when it waits for GPU work (a blocking copy or memset, a sync, a cudaFree), the return
 *     after that work ends (ret_ns);
 *   - the host's arrival at a task: copies from their API enter/exit times, syncs from their
 *     start/end; kernels and memsets have no host time at level light, so their launch is the
 *     latest time the trace allows (approximated, conservative: a kernel cannot start before
 *     the host reached it, and launches come in correlation order): min(its GPU start, the
 *     next task's arrival), never before the previous task's host end;
 *   - GPU operations per stream in stream order with their recorded durations; copies on a
 *     copy engine per direction of each device (host->device, device->host), kernels, memsets
 *     and device copies on the compute engine, which serializes kernels of different streams
 *     unless the trace shows kernels overlapping on that device; a cross-stream dependency
 *     where an operation started later than its launch, stream and engine allow and within
 *     APX_WI_DEP_NS of the end of an earlier operation of another stream (an event wait); what
 *     is still unexplained is kept as the operation's delay;
 *   - sync waits: the host cannot pass a sync until the operation it waited for ends (a stream
 *     sync: the stream's last operation before it; others: the earlier operation that ended
 *     last before the sync returned); a blocking copy or memset waits for itself; the host
 *     holds at most APX_WI_QUEUE_DEPTH launches the GPU has not finished (CUDA's launch queue).
 * Simulation (sim.c): one pass in host order, earliest start: an operation starts at
 * max(its launch, its stream's previous end (+ its minimum gap), its engine's, its
 * dependency's) + its delay. The unchanged graph with the host's recorded costs reproduces the
 * recorded window (apx_whatif_fidelity; the error is in docs/report.md, "What-if simulation").
 * Transformations (xform.c) change a copy of the tasks; savings (saving.c) simulate without
 * the collector's own cost per launch, before and after.
 */
#ifndef APX_ANALYSIS_WHATIF_H
#define APX_ANALYSIS_WHATIF_H

#include <stddef.h>
#include <stdint.h>

struct apx_model;

/* CUDA's queue of pending launches: the host blocks when this many are not done. */
#define APX_WI_QUEUE_DEPTH 1024u
/* An operation that started within this long after another stream's operation ended, later
 * than anything else allows, waited for it (an event). */
#define APX_WI_DEP_NS 5000u
/* Host time in an asynchronous copy call when the trace shows none to measure it by. */
#define APX_WI_ASYNC_CALL_NS 10000u
/* The gap between two kernels replayed from a CUDA graph when the trace has too few graph
 * replays to tell (fewer than APX_WI_GRAPH_MIN_GAPS gaps): the mean over the H200 suite traces
 * that replay graphs (launch_bound, gru_unrolled and graph_recapture: 295-488 ns a gap, medians
 * 160-288 ns; docs/report.md, "What-if simulation"). */
#define APX_WI_GRAPH_GAP_NS 350u
#define APX_WI_GRAPH_MIN_GAPS 100u
/* The GPU's gap between two kernels of a graph replay for model m: its graph replays' mean
 * when it has APX_WI_GRAPH_MIN_GAPS of them, else APX_WI_GRAPH_GAP_NS (graph.c, launch-bound's
 * own model). */
uint64_t apx_wi_graph_gap_ns(const struct apx_model *m);

enum apx_wi_kind { APX_WI_KERNEL, APX_WI_COPY, APX_WI_MEMSET, APX_WI_SYNC, APX_WI_ALLOC };

enum apx_wi_engine { APX_WI_ENG_COMPUTE, APX_WI_ENG_H2D, APX_WI_ENG_D2H, APX_WI_ENG_NONE,
		     APX_WI_ENG__COUNT = APX_WI_ENG_NONE };

#define APX_WI_NONE UINT32_MAX

/* task flags */
#define APX_WI_F_BLOCKING 0x01u		/* the host waits in the call until its GPU end */
#define APX_WI_F_PAGEABLE 0x02u		/* a copy whose host side is pageable memory */
#define APX_WI_F_SMALL 0x04u		/* a copy of <= 64 KiB */
#define APX_WI_F_SERIAL 0x08u		/* its engine serializes it (consistent with the trace) */
#define APX_WI_F_REMOVED 0x10u		/* gone after a transformation: only its pre_ns stays */
#define APX_WI_F_EARLY 0x20u		/* issued ahead (a prefetch): launched when its stream's
					 * previous operation was */
#define APX_WI_F_COMPUTE_STREAM 0x40u	/* a copy on a stream that also runs kernels */
#define APX_WI_F_INFERRED 0x80u		/* its launch time was inferred (no host time) */

/* One task of the host chain, with its GPU operation (none for syncs). */
struct apx_wi_task {
	uint64_t pre_ns;		/* the host's work before it */
	uint64_t call_ns;		/* host time in the call when it waits for nothing */
	uint64_t ret_ns;		/* after the awaited GPU end: the host's return */
	uint64_t dur_ns;		/* GPU time */
	uint64_t delay_ns;		/* recorded start after every dependency: kept */
	uint64_t gap_ns;		/* recorded idle of its stream before it */
	uint64_t min_gap_ns;		/* the least time after its stream's previous end */
	uint64_t bytes;
	uint64_t rec_start, rec_end;	/* recorded GPU interval (syncs: the host's) */
	uint32_t stream;		/* graph stream, APX_WI_NONE for syncs */
	uint32_t device;		/* graph device of a GPU operation */
	uint32_t await;			/* the task whose GPU end it waits for, APX_WI_NONE */
	uint32_t dep;			/* another stream's task it waits for, APX_WI_NONE */
	uint32_t name;			/* kernels: store string; allocator calls: API name */
	uint32_t step;			/* the steady step it lies in */
	uint32_t src;			/* index in its store column */
	uint8_t kind;			/* enum apx_wi_kind */
	uint8_t engine;			/* enum apx_wi_engine */
	uint8_t flags;			/* APX_WI_F_* */
	uint8_t copy_kind;		/* enum apx_copy_kind (copies), enum apx_sync_kind (syncs),
					 * enum apx_alloc_call (allocator calls) */
};

struct apx_wi_stream {
	uint32_t es;			/* the store's stream, APX_WI_NONE: added by a transformation */
	uint32_t device;		/* graph device */
	uint32_t kernels;		/* in the window */
	uint64_t free0;			/* its last operation's end before the window */
};

/* The graph of the steady window (owned by the model: model->whatif). */
struct apx_whatif {
	struct apx_wi_task *t;
	size_t n;
	struct apx_wi_stream *streams;
	uint32_t nstreams;		/* the recorded ones; transformations add side streams */
	uint32_t ndevices;
	uint8_t *dev_concurrent;	/* per graph device: kernels of streams overlapped */
	uint64_t *eng_free0;		/* per device x engine: last end before the window */
	uint16_t file;			/* the process simulated */
	uint64_t start_ns, end_ns;	/* the steady window */
	uint64_t rec_end_ns;		/* recorded: the last host or GPU end of its tasks */
	uint64_t launch_cost_ns;	/* the collector's cost per launch, 0 unknown */
	uint64_t steps;			/* steady steps in the window (0: no steps) */
	uint64_t async_call_ns;		/* median host time of a non-blocking copy call */
	/* how the graph was built */
	uint64_t inferred;		/* launches whose time was inferred */
	uint64_t deps;			/* cross-stream dependencies found */
	uint64_t delayed, delay_ns;	/* operations with an unexplained delay, and its sum */
	uint64_t other_files;		/* GPU operations of other processes left out */
};

enum apx_wi_xform {
	APX_WI_X_NONE,
	APX_WI_X_REMOVE_SYNCS,		/* host syncs gone, with the small reads back they wait for */
	APX_WI_X_PIN_COPIES,		/* pageable H2D > 64 KiB: pinned rate, non-blocking */
	APX_WI_X_COPY_STREAM,		/* host<->device copies of compute streams on a side stream,
					 * the host->device ones issued a copy ahead */
	APX_WI_X_CUDA_GRAPH,		/* the host's work between launches gone, gaps ~1 us */
	APX_WI_X_ASYNC_COPIES,		/* blocking copies and memsets non-blocking; D2H into
					 * pageable memory at the pinned rate */
	APX_WI_X_KERNEL_SPEEDUP,	/* matching kernels factor times faster */
	APX_WI_X_NO_ALLOC,		/* allocator calls gone (their API records: level api,
					 * or the collector's at level light) */
	APX_WI_X__COUNT,
};

struct apx_wi_params {
	enum apx_wi_xform xform;
	double rate_bps;		/* PIN_COPIES (H2D), ASYNC_COPIES (D2H): the pinned rate */
	double factor;			/* KERNEL_SPEEDUP */
	/* KERNEL_SPEEDUP: whether a kernel (its store name string) is sped up; NULL: all */
	int (*match)(const struct apx_model *m, uint32_t name, void *ctx);
	void *ctx;
	int keep_collector;		/* 1: the host's costs as recorded; 0: the collector's
					 * cost per launch taken off every launch */
	int no_delays;			/* 1: without the recorded delays nothing explains (how
					 * much of the timeline the graph's edges explain) */
};

struct apx_wi_result {
	uint64_t window_ns;		/* recorded: window start .. last host or GPU end */
	uint64_t sim_ns;		/* simulated */
	uint64_t changed;		/* tasks the transformation changed */
	uint64_t changed_ops;		/* of those: copies and kernels */
	uint64_t changed_inferred;	/* ... whose launch's host time was inferred */
};

/* graph.c: build the graph of m's steady window into m->whatif (NULL: no steady window or no
 * GPU operation in it). 0 or -ENOMEM. */
int apx_whatif_build(struct apx_model *m);
void apx_whatif_free(struct apx_whatif *w);

/* xform.c: a transformed copy of w's tasks (*ret_t, n tasks, *ret_nstreams streams), counting
 * the tasks it changed. 0 or -ENOMEM. */
int apx_whatif_transform(const struct apx_model *m, const struct apx_whatif *w,
			 const struct apx_wi_params *p, struct apx_wi_task **ret_t,
			 uint32_t *ret_nstreams, uint64_t *ret_changed);

/* sim.c: simulate n tasks (w gives the streams, devices and initial state); the simulated
 * window. 0 or -ENOMEM. */
int apx_whatif_run(const struct apx_whatif *w, const struct apx_wi_task *t, size_t n,
		   uint32_t nstreams, uint64_t *ret_sim_ns);

/* saving.c: simulate w after p's transformation. 0, -ENOENT without a graph, -ENOMEM. */
int apx_whatif_simulate(const struct apx_model *m, const struct apx_wi_params *p,
			struct apx_wi_result *ret);
/* The unchanged graph with the recorded host costs against the recorded window. */
int apx_whatif_fidelity(const struct apx_model *m, struct apx_wi_result *ret);
/* The saving of p's transformation: simulated before - after, both without the collector's cost
 * per launch (>= 0). -ENOENT: no graph, the transformation changed nothing, or a copy or
 * kernel transformation changed only operations without recorded launch times. */
int apx_whatif_saving(const struct apx_model *m, const struct apx_wi_params *p,
		      double *ret_saving_ns);
/* rule_saving.c, for the rules: 1 with the simulated saving of p's transformation in
 * *ret_saving_ns (replacing the rule's own estimate), 0 when the simulator has none (no graph,
 * nothing to transform: the rule keeps its own). Then apx_whatif_rule_note() on the finding:
 * its model names the transformation and rule_ns (the rule's own estimate) stays as the metric
 * saving_rule_ns. */
struct apx_finding;
int apx_whatif_rule_saving(const struct apx_model *m, const struct apx_wi_params *p,
			   double *ret_saving_ns);
void apx_whatif_rule_note(struct apx_finding *f, enum apx_wi_xform x, double rule_ns);
/* waits.c: the cross-stream dependencies of the steady window, by (waiting stream, awaited
 * stream): store streams (st->streams[]), the number of operations that waited, the idle time
 * of the waiting stream before them, and the tasks (graph indices) of the longest wait. */
struct apx_wi_wait {
	uint32_t stream, awaited_stream;
	uint64_t count, idle_ns, max_gap_ns;
	size_t waiter, awaited;
	int waiter_set;
};
/* Up to cap groups into out, most idle time first; their number. */
size_t apx_whatif_waits(const struct apx_model *m, struct apx_wi_wait *out, size_t cap);
/* One of those dependencies, operation by operation (the exporters draw a flow for each):
 * the awaited operation and the one that waited for it, each as its kind (enum apx_wi_kind:
 * kernel, copy or memset) and its index in the store column of that kind (m->store). */
struct apx_wi_dep_pair {
	uint32_t awaited, waiting;	/* store column indices */
	uint8_t awaited_kind, waiting_kind;
};
/* Up to cap pairs into out, in the waiting operations' host order; how many there are (also
 * beyond cap: call with cap 0 to size out). */
size_t apx_whatif_dep_pairs(const struct apx_model *m, struct apx_wi_dep_pair *out, size_t cap);

/* For saving_model texts: what the transformation does, in words. */
const char *apx_wi_xform_text(enum apx_wi_xform x);
const char *apx_wi_xform_name(enum apx_wi_xform x);

#endif
