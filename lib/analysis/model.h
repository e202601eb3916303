/*
 * model.h - the analysis model of apx report: built once from one or more .apx files (a run's
 * processes), then read by the rules (rules/rule_NAME.c) and the outputs (cli/report_*.c). Nothing in
 * lib/analysis prints. Times are nanoseconds on the trace clock (CLOCK_MONOTONIC for every apx
 * producer, so files of one machine share it).
 *
 * The model is a set of views over the event store (store.h), which keeps every event: the
 * files are read once, into the store's columns; what the store has no column for (memory,
 * configuration, unified memory, CPU samples, key/values, findings, losses) the model collects
 * from the same pass (load.c, through the store's record hook). apx_model_finish() builds the
 * store, then the views: streams and per-file GPU totals (view_streams.c), kernel names and
 * their aggregates (view_kernels.c), the per-event lists rules read (view_events.c),
 * transfers, synchronizations and memory (finish.c), timelines and idle gaps (timeline.c),
 * steps (steps.c) and NVTX projection (nvtx.c). Devices are the store's, keyed by (host,
 * UUID), streams by (file, device, stream id): several processes and GPUs never mix.
 *
 * Life cycle: apx_model_new() -> apx_model_add_file() for each file -> apx_model_finish()
 * (reads the files, views) -> read -> apx_model_free().
 */
#ifndef APX_ANALYSIS_MODEL_H
#define APX_ANALYSIS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

struct apx_store;
struct apx_whatif;
struct apx_ranks;

#define APX_AN_MAX_FILES 256
#define APX_AN_MAX_DEVICES 64

/* A growable array of fixed-size items. */
struct apx_vec {
	void *data;
	size_t n, cap, size;
};

int apx_vec_push(struct apx_vec *v, const void *item);	/* 0 or -ENOMEM */
#define APX_VEC_AT(v, type, i) (&((type *)(v)->data)[i])

struct apx_an_cpu {
	uint64_t ts, pid, tid, utime, stime, vol, invol, rss, peak, threads;
	uint16_t file;
};

/* A range a file was collected in (apx analyze --capture-range=cudaProfilerApi: between
 * cudaProfilerStart() and cudaProfilerStop()), from its "capture" key/values (capture.c). */
struct apx_an_capture {
	uint64_t start, end;
	uint16_t file;
};

/* A range of the union of every file's capture ranges: sorted, disjoint; before: the
 * collected ns of the ranges before it. */
struct apx_an_collected {
	uint64_t start, end, before;
};

/* One input file = one process (main program, DataLoader worker, rank). */
struct apx_an_file {
	char *path;				/* owned copy */
	struct apx_reader *reader;		/* kept open: names point into its mapping */
	enum apx_read_status status;
	char damage[300];			/* why not complete ("" when complete) */
	uint64_t pid, ppid, uid;
	int64_t rank;
	char producer[64], producer_version[32], host[128], user[64], level[32];
	char argv[512];				/* space-separated */
	char run_id[64];			/* shared by the files of one run ("" none) */
	char degraded[512];			/* what the producer could not collect, "; "-joined */
	uint64_t attached_ms;			/* apx attach: the collection asked for, else 0 */
	uint64_t start_cost_us;			/* kv start_cost: the collector's start on the
						 * thread that ran it, us (0: not recorded) */
	int64_t realtime_offset_ns;
	uint64_t clock;
	uint64_t first_ns, last_ns;		/* span of its timed records */
	uint64_t records, skipped_chunks;	/* read; chunks of a newer writer skipped */
	uint64_t records_unreadable;		/* in damaged chunks (bad field table, bytes
						 * that do not decode): lost to the report */
	uint64_t lost[APX_LOSS_OTHER + 1];	/* by enum apx_loss_source */
	int cuda_used;				/* 1 yes, 0 no, -1 unknown */
	int has_api;				/* has API records (level api) */
	int has_sync;
	int has_proc_tree;			/* the collector's PROCESS record of the file's own
						 * process: it looked for child processes (procs) */
	uint64_t launch_cost_ns;			/* collector's cost per launch (kv), 0 = unknown */
	int launch_cost_self;			/* ... measured in the traced process itself */
	/* capture ranges (capture.c): collection limited to cudaProfilerStart/Stop */
	int capture;				/* kv capture_mode or capture seen */
	uint32_t capture_ranges;		/* its ranges (after finish) */
	uint64_t capture_bad;			/* edges ignored: no start, out of order, unparsable */
	int capture_open;			/* while loading: a start without its stop yet */
	uint64_t capture_from, capture_last;	/* while loading: that start, the last edge */
	/* this process's GPU work */
	uint64_t kernels, kernel_ns, copies, copy_bytes, copy_ns;
	/* CPU, after finish: the last process-wide sample and the most threads seen */
	int has_cpu;
	struct apx_an_cpu cpu_last;
	uint64_t threads_max;
};

struct apx_an_device {
	uint32_t id;				/* the device id (ordinal) its process used */
	uint32_t es_device;			/* the event store's device: (host, UUID) */
	int known;				/* a DEVICE record was seen */
	char name[128];
	uint64_t mem_bytes, l2_bytes, bw_bps, persist_l2_max;
	uint32_t sm_count, cc_major, cc_minor, max_threads_sm, regs_sm, smem_sm, max_blocks_sm;
	uint32_t warp_size, pcie_gen, pcie_width;
	uint32_t nvlinks;			/* NVLink links (nvlink_count); 0: none recorded
						 * (the collector reads them from NVML instead:
						 * nvml.nvlink_links, p2p.h apx_device_nvlinks) */
};

/* Kernels. Every kernel is in the event store (m->store: start, duration, stream, name... in
 * time order); after finish the model has n, and dur is the store's duration column (kernel i
 * of the store; owned by the store). start, name and stream are NULL. */
struct apx_an_kernels {
	size_t n, cap;
	uint64_t *start;
	uint32_t *dur;				/* ns, saturated at 4.29 s */
	uint32_t *name;				/* index into model->names */
	uint16_t *stream;			/* index into model->streams */
};

/* A stream of one process (file) on one device. */
struct apx_an_stream {
	uint32_t device;			/* the device id (ordinal) */
	uint64_t id;				/* CUDA stream id */
	uint64_t kernels, copies, busy_ns;
	uint16_t file;				/* its process */
	uint32_t es_stream;			/* the event store's stream */
};

/* Back-to-back launches of one kernel that make a loop over parameters (finish.c counts the
 * runs that reach it; rules read them). */
#define APX_LONG_RUN 8

/* The top kernels (by total time) whose executions the PM-sampling series are averaged over. */
#define APX_PM_TOP_KERNELS 5

/* A device-metric series of one device (METRIC records with an interval: PM sampling of apx
 * analyze --metrics, or the collector's NVML readings nvml.*): its samples' statistics over
 * the steady window and, for each of the top kernels, its mean over the samples that the
 * kernel's executions cover at least half of; a value needs APX_HW_MIN_SAMPLES of them
 * (view_metrics.c, maths in hwcounters.c). */
struct apx_an_pm {
	const char *name, *unit;		/* not NUL-terminated: name_len, unit_len */
	uint32_t name_len, unit_len;
	uint32_t device;			/* the device id (ordinal) */
	uint64_t samples, mean_sample_ns;
	int have_steady;			/* samples overlap the steady window */
	double min, mean, p95, max;		/* over the steady window (mean weighted by time) */
	uint32_t top[APX_PM_TOP_KERNELS];	/* name index of each top kernel on this device */
	double top_mean[APX_PM_TOP_KERNELS];	/* NaN: too few samples counted (top_samples) */
	uint64_t top_covered_ns[APX_PM_TOP_KERNELS];	/* its executions' sampled time; 0: none */
	uint64_t top_samples[APX_PM_TOP_KERNELS];	/* samples it covers at least half of */
	uint64_t top_kernel_ns[APX_PM_TOP_KERNELS];	/* its mean execution on the device */
	size_t ntop;
};

/* A replayed kernel launch's counter (COUNTER record, apx analyze --replay). */
struct apx_an_counter {
	uint64_t corr;
	double value;
	uint16_t file;
	int16_t metric;				/* enum apx_kc (hwcounters.h), -1 = another metric */
	uint16_t passes;
};

/* The cache state the one-pass launches of `apx analyze --replay` were measured in (kv
 * "replay_dram"; a trace of --replay-flush from before that kv says nothing: after a sweep). */
enum apx_replay_dram {
	APX_REPLAY_DRAM_SWEEP = 1,		/* after apx's L2 sweep (--replay-flush) */
	APX_REPLAY_DRAM_PROGRAM = 2,		/* as the program left the cache */
};

/* The counters of one kernel name: medians over its replayed launches, or for a counter that
 * the one-pass launches give (the DRAM ones, the L2 sector hits), over those, and then the L2
 * hit rate from those hits and the replayed launches' lookups (view_counters.c). */
struct apx_an_kc {
	uint32_t name;				/* index into model->names */
	uint32_t launches;			/* replayed launches (not the one-pass ones) */
	uint32_t one_pass;			/* later launches of it, measured in one
						 * pass (counters with passes 1): model->replay_dram
						 * says in which cache state */
	uint32_t from_one_pass;			/* bit i: v[i] is the one-pass launches' median */
	uint32_t passes;
	uint32_t have;				/* bit i: v[i] (enum apx_kc) */
	double v[34];				/* >= APX_KC__COUNT (hwcounters.h checks) */
};

/* One kernel name across all files, with its aggregate (after finish). */
struct apx_an_name {
	const char *text;			/* not NUL-terminated: use len */
	uint32_t len;
	uint64_t count, total_ns, min_ns, max_ns, p50_ns, p95_ns;
	uint64_t untimed;			/* of count: replayed launches CUPTI gave no times;
						 * their durations are the replay's counter */
	uint64_t untimed_nodur;			/* of those: no duration counter either (left out
						 * of total, min, max, p50, p95) */
	uint64_t steady_count;			/* launches inside the steady state's steps */
	uint64_t steady_ns;			/* their time */
	uint32_t max_burst;			/* most launches of it in a row on one stream, there */
	uint32_t long_bursts;			/* runs of it there that reached APX_LONG_RUN */
	uint64_t burst_gap_ns;			/* in those runs: the stream's idle between two of
						 * its kernels (the host's launching the GPU waited
						 * for, or ~1 us between queued kernels) */
	uint64_t burst_loose_gaps;		/* of those gaps, the ones of APX_REFILL_TIGHT_NS or
						 * more (the host was behind: the collector's cost
						 * per launch is in them) */
	uint32_t device;
	uint32_t grid[3], block[3], regs, smem_static, smem_dynamic;
	double occupancy;			/* theoretical, 0..1; < 0 = not computable */
};

struct apx_an_copy {
	uint64_t start, bytes, host_addr;
	uint64_t api_enter, api_exit;		/* the copy call on the host, 0 = not recorded */
	uint64_t host_fp;			/* H2D: its source's fingerprint, 0 = none */
	uint32_t dur;
	uint16_t stream, file, device;
	uint8_t kind, src, dst, async;
};

struct apx_an_memset {
	uint64_t start, bytes;
	uint32_t dur;
	uint16_t stream;
	uint8_t kind, async;
	uint32_t device;
};

struct apx_an_sync {
	uint64_t start, end, stream, tid;
	uint8_t kind;
	uint8_t cause;				/* enum apx_sync_cause (sync_cause.c) */
	uint16_t file;
	uint32_t copy;				/* the copy it waited for: model->copies index,
						 * UINT32_MAX none (sync_cause.c) */
};

/* What made the host wait in a synchronization (sync_cause.c): the copy the sync waited for
 * (the call just before it on its thread: PyTorch's memcpy_and_sync is a cudaMemcpyAsync and a
 * cudaStreamSynchronize) and the kernel before that copy on its stream, else the sync's kind.
 * The PyTorch calls behind each: apx_sync_cause_call(). */
enum apx_sync_cause {
	APX_SYNC_CAUSE_NONE,		/* no host wait: cudaStreamWaitEvent (a device-side wait) */
	APX_SYNC_CAUSE_ITEM,		/* a read back of <= 8 bytes: .item(), float(t), bool(t) */
	APX_SYNC_CAUSE_NONZERO,		/* a count read back after a nonzero, select or unique kernel:
					 * torch.nonzero, x[mask], masked_select, torch.unique */
	APX_SYNC_CAUSE_READ_BACK,	/* a larger device->host copy: .cpu(), .tolist(), .numpy() */
	APX_SYNC_CAUSE_UPLOAD,		/* a host->device copy waited for: .to('cuda') without
					 * non_blocking=True */
	APX_SYNC_CAUSE_DEVICE,		/* no copy: torch.cuda.synchronize() */
	APX_SYNC_CAUSE_STREAM,		/* no copy: stream.synchronize() */
	APX_SYNC_CAUSE_EVENT,		/* event.synchronize() */
	APX_SYNC_CAUSE_UNKNOWN,		/* a sync of unknown kind, no copy before it */
	APX_SYNC_CAUSE__COUNT,
};

/* The host syncs of one cause (sync_cause.c): how many, the host's time blocked in them, the
 * bytes of the copies they waited for (total, smallest, largest; 0 without copies). */
struct apx_an_sync_cause {
	uint64_t count, ns, bytes, min_bytes, max_bytes;
};

/* An allocation, a free, or (op APX_MEMOP_ALLOC_FAILED) an allocation call that failed:
 * bytes are what it asked for, error its CUDA error. stack: the file's stack id as read
 * (resolved by allocs.c through apx_store_stack_of), tid the calling thread, 0 unknown. */
struct apx_an_mem_event {
	uint64_t ts, addr, bytes, tid;
	uint8_t op, kind;
	uint32_t device;
	uint32_t stack, error;
	uint16_t file;
};

/* An allocation the memory section names (allocs.c): its size (asked for, when it failed),
 * memory kind, device id, when, the line of its Python stack. */
struct apx_an_alloc {
	uint64_t ts, bytes, tid;
	uint32_t device;			/* the device id its record named */
	uint32_t stack;				/* store stacks[] + 1, 0 none */
	uint32_t line;				/* m->lines index, UINT32_MAX none */
	uint32_t error;				/* failed: the CUDA error (CUresult), else 0 */
	uint16_t file;
	uint8_t kind;				/* enum apx_mem_kind: device, pinned or managed */
	uint8_t failed;
};

#define APX_AN_ALLOCS_TOP 5			/* largest allocations kept per device and kind */
#define APX_AN_ALLOCS_FAILED_MAX 256		/* failed allocations listed (all are counted) */

/* struct apx_an_config.kind 0 (not a CONFIG record kind): kernels ran under this window;
 * value = how many. Built from the kernel records' access-policy window fields. */
#define APX_AN_CONFIG_KERNELS_UNDER_APW 0

struct apx_an_config {
	uint64_t ts, value, base, bytes, stream, target;
	uint32_t hit_ppm, device;
	uint8_t kind, hit_prop, miss_prop;
	uint8_t stream_is_handle;		/* stream is a CUstream handle (nvperfd), not an id */
};

struct apx_an_uvm {
	uint64_t start, end, bytes, value;
	uint8_t kind;
	uint32_t device;
};


struct apx_an_marker {
	uint64_t start, end, tid;
	const char *name;
	uint32_t name_len;
	uint8_t kind;
	uint8_t torch;			/* 1: a PyTorch op range (emit_nvtx): no step, not in the NVTX
					 * table; backward.c joins them (base/torch_nvtx.h); 2: a
					 * cuBLAS/cuDNN call (--trace-libs), or CUB's or Thrust's
					 * own range: in the table, no step */
	uint64_t seq;			/* its autograd sequence number + 1, 0 none */
};

struct apx_an_api {
	uint64_t start, end, tid, corr;
	uint32_t cbid;
	uint8_t domain;
	const char *name;
	uint32_t name_len;
};

/* NVTX ranges of one name, with the GPU kernel time that ran inside them (execution-time
 * projection: the part of each kernel between the range's start and end). */
struct apx_an_range {
	const char *name;
	uint32_t name_len;
	uint64_t count, wall_ns, gpu_ns;
};

/* A process a PROCESS record names: the collector's own process and its children (DataLoader
 * workers, subprocesses: proc.c), or nvperfd's process. */
struct apx_an_proc {
	uint64_t pid, ppid, start_ns;		/* start_ns: first seen */
	uint16_t file;
	char comm[32];
};

/* One CUDA graph of a file (its graph id), from the kernels that ran as its nodes and the
 * graph launch records. sig: a hash of the multiset of its kernels' names (equal for two
 * captures of the same code). */
struct apx_an_graph {
	uint64_t id, first_ns, last_ns, kernels, kernel_ns, sig, launches;
	uint64_t prev_end;			/* its last kernel's end so far (load.c) */
	uint16_t file;
};

/* An NCCL collective or point-to-point operation (COLLECTIVE record), on its
 * file's clock; the ranks' analysis (ranks.h) reads them. */
struct apx_an_coll {
	uint64_t enq;				/* NCCL's start of it on the host */
	uint64_t start, end;			/* on the GPU; 0 = unknown */
	uint64_t bytes, comm, seq;
	uint32_t nranks;
	int32_t rank;				/* in the communicator, -1 unknown */
	int32_t device;				/* CUDA ordinal, -1 unknown */
	uint16_t file;
	uint8_t func, algo, proto, flags;	/* enum apx_coll_func, ..., apx_coll_flag */
	uint8_t dtype;				/* enum apx_nccl_dtype (APX_DT_UNKNOWN) */
};

/* A finding the producer wrote into the trace (nvperfd's summaries). Text borrowed from the
 * reader's mapping (not NUL-terminated). */
struct apx_an_recorded {
	const uint8_t *rule, *title, *evidence, *fix;
	uint32_t rule_len, title_len, evidence_len, fix_len;
	uint64_t saving_ns, pid;		/* saving_ns 0: the producer estimated none */
	uint16_t file;
	uint8_t severity, confidence_pct;
};

/* ---- what nvperfd observed from outside (observed.c) ---------------------------------------
 * nvperfd writes no kernel or copy records: it watches a process through /proc, NVML and
 * uprobes on libcuda, and leaves "nvperfd.*" key/values and METRIC time series. */

#define APX_AN_OBS_KVS_MAX 512		/* nvperfd.* key/values kept per file (more are dropped) */
#define APX_AN_OBS_SERIES_MAX 256	/* time series kept per file */
#define APX_AN_OBS_GPM_MAX 32		/* nvperfd.gpm.<metric> means shown per file */

/* One "nvperfd.*" key/value of a file (the last one written when a key repeats). Text
 * borrowed from the reader's mapping (not NUL-terminated). */
struct apx_an_kv {
	const char *key, *val;
	uint32_t key_len, val_len;
	uint16_t file;
};

/* One METRIC time series of a file: name x device x pid (0 = device-wide). */
struct apx_an_series {
	const char *name, *unit;		/* borrowed, not NUL-terminated */
	uint32_t name_len, unit_len;
	uint64_t name_id, unit_id;		/* string ids within the file */
	uint32_t device;
	uint16_t file;
	uint64_t pid;
	uint64_t count;				/* samples with a finite value */
	uint64_t first_ns, last_ns;
	double min, max, sum, mean;		/* mean after finish */
};

/* A value nvperfd wrote: text NULL = the key is absent; has = 1 when the text is a number (v),
 * else the text says why there is none ("n/a (uprobe_copy_time = no)") or is a state or a path. */
struct apx_an_obs_val {
	const char *text;			/* borrowed, not NUL-terminated */
	uint32_t len;
	int has;
	double v;
	uint64_t u;				/* v as an integer, saturated at UINT64_MAX */
};

struct apx_an_obs_copy {
	struct apx_an_obs_val calls, bytes, call_ns;	/* call_ns: time in the copy calls */
};

/* One process as nvperfd observed it: a file with nvperfd.* key/values, after finish. */
struct apx_an_observed {
	uint16_t file;
	size_t kv_first, nkv;			/* its key/values: model->kvs[kv_first..+nkv) */
	size_t series_first, nseries;		/* its time series: model->series[...] */
	uint64_t kvs_dropped, series_dropped;	/* beyond APX_AN_OBS_*_MAX */
	struct apx_an_obs_val cuda, uprobes, libcuda, uprobe_calls, uprobe_lost;
	struct apx_an_obs_copy copy[2][2];	/* [0 host->device, 1 device->host][0 pageable, 1 pinned] */
	struct apx_an_obs_val pin_calls, pin_bytes, pin_failed;
	struct apx_an_obs_val nvml, device, samples, idle_samples, sm_util_pct, mem_peak_bytes;
	struct apx_an_obs_val gpm;		/* what the GPM means cover (device-wide, ...) */
	uint32_t gpm_kv[APX_AN_OBS_GPM_MAX];	/* the nvperfd.gpm.<metric> means: indices in kvs */
	size_t ngpm;
};

/* The observed processes together, for the summary: what each measured, summed. */
struct apx_an_observed_run {
	size_t processes;			/* files with nvperfd.* key/values */
	uint64_t copy_calls[2][2], copy_bytes[2][2];	/* as apx_an_observed.copy */
	int copy_has[2][2];			/* some process gave these counts */
	double sm_util_pct;			/* mean over processes, weighted by NVML samples */
	int sm_has;
	uint64_t mem_peak_bytes;		/* the largest process's device-memory peak */
	int mem_has;
};

/* What a GPU-idle nanosecond of the steady state is attributed to (idle_attrib.c): each one
 * to exactly one cause, decided from what the host was doing then, highest priority first. */
enum apx_idle_cause {
	APX_IDLE_UVM,		/* the host faulting unified-memory pages back */
	APX_IDLE_GRAPH,		/* the host capturing and instantiating a CUDA graph (the gap ends
				 * at a graph's first kernel) */
	APX_IDLE_SYNC,		/* a host synchronization: the host waited, then worked alone */
	APX_IDLE_ALLOC,		/* the host in the CUDA allocator (cudaFree waits for the device:
				 * torch.cuda.empty_cache()), then working alone after it */
	APX_IDLE_STAGING,	/* the host staging a pageable copy (inside its copy call) */
	APX_IDLE_COPY_CALLS,	/* per-call overhead of many small copies (between two of them) */
	APX_IDLE_DATA,		/* the host producing the next input (gap ended by a host->device copy) */
	APX_IDLE_LAUNCH,	/* launch overhead: gaps < 50 us, less the collector's own cost; in
				 * a launch-bound steady state also the longer gaps inside a step
				 * that nothing else explains (the host between launches) */
	APX_IDLE_COLLECTOR,	/* the collector's own: its cost per launch (kv collector_launch_cost_ns),
				 * and the passes of a launch the range profiler replayed */
	APX_IDLE_UNKNOWN,	/* nothing in the trace says */
	APX_IDLE__COUNT,
};

/* An idle gap of a device (>= APX_LONG_GAP_NS, kept one by one) and the cause of most of it. */
struct apx_an_gap {
	uint64_t start, end;
	uint32_t device;
	uint8_t cause;				/* enum apx_idle_cause */
	uint8_t steady;				/* inside the steady window */
};

/* Per device timeline summary. */
struct apx_an_timeline {
	uint32_t device;			/* the device id (ordinal) */
	uint32_t es_device;			/* the event store's device: (host, UUID) */
	uint64_t first_ns, last_ns;		/* first GPU activity start, last end */
	uint64_t busy_ns;			/* union of kernels, copies, memsets */
	uint64_t kernel_busy_ns;		/* union of kernels only */
	uint64_t copy_busy_ns;			/* union of copies only */
	uint64_t overlap_ns;			/* copies overlapped with kernels */
	uint64_t copy_before_kernels_ns;	/* copy time before the first kernel (setup) */
	uint64_t hd_copy_busy_ns;		/* union of host<->device copies only (H2D, D2H) */
	uint64_t hd_overlap_ns;			/* host<->device copies overlapped with kernels */
	uint64_t hd_before_kernels_ns;		/* host<->device copy time before the first kernel */
	uint64_t concurrent_ns;			/* two or more kernels in flight */
	uint64_t idle_ns;			/* last - first - busy (collected time only) */
	uint64_t active_ns;			/* last - first (collected time only) */
	/* the steady window (model->steady_start_ns .. steady_end_ns) clipped to first..last,
	 * its idle time by cause (idle_attrib.c), and what lies before and after it */
	uint64_t window_ns;
	uint64_t idle_by_cause[APX_IDLE__COUNT];
	uint64_t gaps_by_cause[APX_IDLE__COUNT];	/* gaps whose largest part is this cause */
	uint64_t startup_ns, startup_idle_ns;	/* first activity .. the window */
	uint64_t teardown_ns, teardown_idle_ns;	/* the window .. last activity */
	/* gaps >= 50 us that nothing else explains, inside a step or under 1 ms (the host's
	 * work between launches): launch overhead when the steady state is launch-bound
	 * (step_host_launch), else unknown; counted in idle_by_cause too */
	uint64_t step_host_ns, step_host_gaps;
	int step_host_launch;
	/* after a sync's gap, until the host is ahead again (the refill): the parts of the gaps
	 * that would be launch overhead, unknown or the host's in-step work (by that cause, the
	 * last slot the latter), and the gaps mostly that; kept apart until apx_idle_resolve()
	 * gives them to the sync (not launch-bound) or back to those causes; and the sweep's
	 * state: in a refill, tight gaps in a row, the last gap's end */
	uint64_t refill_ns[APX_IDLE__COUNT + 1], refill_gaps[APX_IDLE__COUNT + 1];
	uint64_t pend_ns[APX_IDLE__COUNT + 1], pend_gaps[APX_IDLE__COUNT + 1];	/* the refill's
						 * until the host is ahead */
	/* refills that the next sync or the end cut before the host was ahead again: the sync's
	 * too when the host's own work over the steady state is shorter than the GPU's (without
	 * the syncs it gets ahead), else back to their causes (apx_idle_resolve) */
	uint64_t cut_ns[APX_IDLE__COUNT + 1], cut_gaps[APX_IDLE__COUNT + 1];
	int refill;
	uint64_t refill_lead_ns;		/* busy since the last gap that was not tight */
	uint64_t refill_last_ns;
	uint64_t uvm_kernel_ns;			/* kernels that ran while pages migrated to the GPU */
	uint64_t staging_d2h_ns;		/* of idle_by_cause[staging]: in the gaps after copies
						 * of > 64 KiB to pageable memory (sync-copy's) */
	uint64_t before_ns, after_ns;		/* run start..first, last..run end (collected) */
	uint64_t gaps;
};

/* Transfers by direction x (host-side) memory kind. */
struct apx_an_xfer {
	uint64_t count, bytes, dur_ns, min_bytes, max_bytes;
	uint64_t small;				/* <= 64 KiB (apx_copy_small) */
	uint64_t sync_count;			/* not async */
};

/* The program's iterations (steps.c). source NONE: no repeating step was found, and the
 * report speaks of the whole run. Times on the trace clock. */
enum apx_step_source {
	APX_STEPS_NONE,
	APX_STEPS_PROFILER,	/* torch.profiler's ProfilerStep#N ranges */
	APX_STEPS_NVTX,		/* the most frequent NVTX range name */
	APX_STEPS_KERNELS,	/* the repeating kernel sequence of the busiest stream */
};

struct apx_an_steps {
	enum apx_step_source source;
	uint64_t count;
	uint64_t period;			/* APX_STEPS_KERNELS: kernels a step on that stream */
	char name[64];				/* NVTX: the range name */
	uint64_t first_ns, last_ns, total_ns;	/* the first step's start .. the last one's end */
	uint64_t median_ns, p95_ns, min_ns, max_ns;
	double busy_pct;			/* median over steps of kernel time / step time */
	uint64_t setup_ns, teardown_ns;		/* run start .. first step, last step .. run end
						 * (their collected time) */
	uint64_t uncollected;			/* steps whose span holds time outside the
						 * capture ranges: not in median .. max, busy_pct
						 * (unless no step is whole: then each step's
						 * collected time) */
	uint64_t *bounds;			/* count + 1: each step's start, then the last one's
						 * end (sorted; owned by the model; NULL when none) */
	int projected;				/* NVTX/profiler steps: the host ranges moved onto
						 * the GPU work launched in them (the GPU lagged) */
	uint64_t refused;			/* host range steps refused: the GPU lagged behind
						 * them and their launches were not known (steps.c) */
};

/* GPU work that runs on at most this far after the kernel before it is still one queue: the
 * gap between back-to-back launches (steps.c, the report properties test). */
#define APX_STEPS_QUEUE_GAP_NS 20000ull

/* ---- Python stacks (stacks.h: stacks.c, hotspots.c, threads.c, idle_stacks.c) ---------- */

/* A source line that stands for stacks: the innermost frame of user code of a stack (library
 * frames folded: site-packages, dist-packages, the standard library, <frozen ...>, native
 * frames), its innermost frame when it has no user frame, or with frames_all the innermost
 * frame whatever it is. Names are the event store's strings. */
struct apx_an_line {
	uint32_t file, func;			/* store strings: path, qualified function */
	uint32_t line;				/* 0 = unknown */
	uint8_t user;				/* user code (not a folded library frame) */
};

/* What one line caused: the GPU work launched from it (kernels, copies and memsets, their
 * device time), the host syncs called there, and the host samples whose line it is (the
 * sampler's period each, running apart); st_*: the same inside the steady window. */
struct apx_an_hotspot {
	uint32_t line;				/* model->lines */
	uint64_t gpu_ns, launches;
	/* backward kernels attributed to this forward line (backward.c): GPU time, kernels,
	 * GPU time inside the steady window */
	uint64_t gpu_bwd_ns, bwd_launches, st_gpu_bwd_ns;
	uint64_t copies, copy_ns, copy_bytes, pageable_copies;	/* copies: memcpy + memset */
	uint64_t syncs, sync_wait_ns;
	uint64_t host_ns, host_running_ns;
	uint64_t st_gpu_ns, st_host_ns, st_launches, st_syncs;
};

#define APX_AN_THREAD_SYSCALLS 3

/* A thread as its samples show it (SAMPLE records). */
struct apx_an_thread {
	uint16_t file;
	uint64_t pid, tid;
	const char *name;			/* THREAD record's name, borrowed; NULL none */
	uint32_t name_len;
	uint64_t samples, sampled_ns;		/* samples, and the periods they stand for */
	uint64_t cpu_ns;			/* CPU time between its first and last sample */
	uint64_t running, waiting;		/* samples running or runnable; sleeping or in
						 * disk wait */
	/* context switches between its first and last CPU record of its own (the sampler's,
	 * about one a second); has_csw 0: none or one such record */
	uint64_t vcsw, ivcsw;
	uint8_t has_csw;
	struct {
		int32_t nr;			/* syscall number (x86-64) */
		uint64_t samples;
	} sys[APX_AN_THREAD_SYSCALLS];		/* the syscalls it waited in most */
	unsigned nsys;
};

/* An OS call threads waited in, from their samples (oswaits.c): consecutive samples of a
 * thread in it are one wait of the sum of their periods. */
struct apx_an_oswait {
	int32_t nr;				/* syscall number (x86-64) */
	uint64_t waits, threads, ns, max_ns;
};

/* The waits of at least os_wait_threshold_ns in one syscall under one line (m->lines; or
 * UINT32_MAX: a thread without Python frames, then one row per thread); the thread and
 * start of the longest. */
struct apx_an_oswait_line {
	int32_t nr;
	uint32_t line, thread;			/* thread: store threads[] of the longest */
	uint16_t file;
	uint64_t tid, waits, ns, max_ns, max_start;
};

#define APX_OS_WAIT_THRESHOLD_NS 10000000ull	/* apx report --os-wait-threshold default */

/* A stack of the main thread (pid == tid) inside the steady state's GPU-idle gaps. */
struct apx_an_idle_stack {
	uint32_t stack;				/* store stacks[] + 1 */
	uint64_t ns, samples;
};

/* ---- host heap samples (heap.c: HEAP records of apx analyze --heap-sampling-bytes N) ---- */

/* A HEAP record as read (load.c), in record order per file (the order the sampler saw the
 * allocations and frees, which matches a free to its allocation); stack fields are the file's
 * raw ids until apx_heap_build() resolves them (store stacks[] + 1, 0 none). */
struct apx_an_heap_rec {
	uint64_t ts, addr, bytes, interval;	/* interval 0: a large allocation (every one of
						 * the threshold or more is recorded) */
	uint64_t freed;				/* after finish, ALLOC: when freed; 0 live at
						 * the end, UINT64_MAX not known */
	uint32_t stack, nstack;			/* Python, native */
	uint16_t file;
	uint8_t op, flags;			/* enum apx_mem_op, enum apx_heap_flag */
};

/* Where sampled allocations were made and what they stand for (estimated bytes and
 * allocations, see heap.c), how much of it was still live at the end, and in the leak window
 * how much was made then and still live at its end. A site is a Python line (line, library
 * frames folded as the hotspots' are), else a native frame (frame: the innermost frame of the
 * program's own code, or with frames_all the innermost), else no stack (both UINT32_MAX). */
struct apx_an_heap_site {
	uint32_t line;				/* model->lines, UINT32_MAX: none */
	uint32_t frame;				/* store frames[], UINT32_MAX: none */
	uint8_t user;				/* the program's own code */
	uint64_t samples, live_samples, leak_samples;
	double bytes, allocs, live_bytes, leak_bytes;
};

struct apx_an_heap {
	/* input (apx report --heap-leak FROM:TO), set before finish: the window in ns since the
	 * run's start; has_from 0: from the first sample (those before the run's start, CUDA's
	 * initialisation, too), has_to 0: to the last record */
	int leak, leak_has_from, leak_has_to;
	uint64_t leak_from_ns, leak_to_ns;
	/* load.c */
	struct apx_vec recs;			/* struct apx_an_heap_rec */
	uint32_t *large_sorted;			/* after finish: the large ALLOC records (recs
						 * indices) by file, address, time */
	uint64_t large_max_bytes;		/* the largest of them */
	uint64_t sampled, large;		/* ALLOC records: sampled; large (APX_HEAPF_LARGE:
						 * apx analyze --heap-large-bytes, on by default).
						 * The sites and totals below: only with sampled
						 * ones (the large ones then count, each for itself) */
	/* after finish (none of it when recs is empty) */
	struct apx_vec sites;			/* struct apx_an_heap_site, by bytes (user code
						 * first unless frames_all) */
	uint64_t samples, frees;		/* ALLOC records, FREE records matched to one */
	uint64_t frees_unmatched;		/* FREE records of no earlier sample (its record lost) */
	uint64_t frees_missed;			/* a sample's address sampled again while it was live:
						 * its free was lost (counted freed then) */
	uint64_t untracked, nostack;		/* samples whose free cannot be seen; without a native
						 * stack */
	uint64_t interval_min, interval_max;	/* N of the samples (one run: the same) */
	uint64_t first_ns, last_ns;		/* the records' span */
	uint64_t leak_start_ns, leak_end_ns;	/* the window on the trace clock (leak set) */
	double bytes, allocs, live_bytes, leak_bytes;
	uint64_t live_samples, leak_samples;
};

struct apx_model {
	struct apx_an_file files[APX_AN_MAX_FILES];
	size_t nfiles;
	/* Why apx_model_finish() failed, and where: the store's chunk, file offset and record
	 * type when reading ran out of memory (as apx export says it), else the step that did */
	struct apx_diag finish_diag;
	struct apx_an_device devices[APX_AN_MAX_DEVICES];
	size_t ndevices;
	uint64_t run_start_ns, run_end_ns;	/* earliest producer start .. latest record */
	uint64_t wall_ns;
	/* Collection limited to capture ranges (capture.c): every file's ranges as read, their
	 * union (empty: the whole run was collected; then every apx_an_collected_* call answers
	 * "all of it"), the collected ns of the run (wall_ns when not limited: the yardstick of
	 * "% of the run") and the edges ignored, all files */
	struct apx_vec captures;		/* struct apx_an_capture */
	struct apx_vec collected;		/* struct apx_an_collected, after finish */
	uint64_t collected_ns;
	uint64_t capture_bad;
	int capture;				/* some file has capture key/values */

	struct apx_an_kernels k;
	struct apx_vec names;			/* struct apx_an_name */
	struct apx_vec streams;			/* struct apx_an_stream */
	struct apx_vec copies;			/* struct apx_an_copy */
	struct apx_vec memsets;			/* struct apx_an_memset */
	struct apx_vec syncs;			/* struct apx_an_sync */
	struct apx_vec mem_events;		/* struct apx_an_mem_event */
	struct apx_vec configs;			/* struct apx_an_config */
	struct apx_vec uvm;			/* struct apx_an_uvm */
	struct apx_vec cpu;			/* struct apx_an_cpu */
	struct apx_vec markers;			/* struct apx_an_marker */
	struct apx_vec api;			/* struct apx_an_api */
	struct apx_vec recorded;		/* struct apx_an_recorded */
	struct apx_vec procs;			/* struct apx_an_proc */
	struct apx_vec graphs;			/* struct apx_an_graph, by file then first use */
	struct apx_vec kvs;			/* struct apx_an_kv: nvperfd.*, by file */
	struct apx_vec series;			/* struct apx_an_series, by file */
	struct apx_vec observed;		/* struct apx_an_observed, after finish */
	struct apx_vec pm;			/* struct apx_an_pm: metric series (view_metrics.c) */
	struct apx_vec counters;		/* struct apx_an_counter: replayed kernels' counters */
	struct apx_vec colls;			/* struct apx_an_coll: NCCL operations, by file */
	/* peer-to-peer copies (p2p.h): each as its record named its devices (load.c), and after
	 * finish by (source, destination) device, in the order first met (empty: none); P2P
	 * copies whose record names one device only */
	struct apx_vec p2p_copies;		/* struct apx_an_p2p_copy */
	struct apx_vec p2p;			/* struct apx_p2p_pair */
	uint64_t p2p_unnamed;
	/* several ranks and their collectives (ranks.h), after finish; NULL when the files hold
	 * no COLLECTIVE record */
	struct apx_ranks *ranks;
	struct apx_vec kc;			/* struct apx_an_kc: their medians per kernel name */
	int counters_sorted;			/* counters in (file, corr) order (view_counters.c) */
	uint64_t untimed_launches;		/* replayed kernels without times (store's ku.n) */
	uint64_t untimed_nodur;			/* of those: without a duration counter */
	struct apx_an_observed_run obs;		/* after finish */
	int no_gpu_trace;			/* after finish: every file is an nvperfd summary and
						 * none holds a kernel, copy or memset record */
	struct apx_vec gaps;			/* struct apx_an_gap, after finish */
	struct apx_vec timelines;		/* struct apx_an_timeline, after finish */
	struct apx_vec ranges;			/* struct apx_an_range, after finish, by gpu_ns */
	struct apx_an_timeline gpu;		/* the timelines summed over devices */
	uint64_t gpu_active_ns;			/* sum of each device's first..last span (collected) */
	uint64_t warmup_end_ns;			/* start of the last kernel with a new name (no
						 * steps: or of a recurring copy kind's first) */
	uint64_t steady_ns;			/* GPU active span after warm-up (rules' yardstick) */
	/* The steady window (idle_attrib.c): from the first step that starts after warm-up (or
	 * warmup_end_ns) to the last step's end; without steps, warmup_end_ns .. run_end_ns.
	 * Before it is start-up; idle time inside it is attributed by cause. */
	uint64_t steady_start_ns, steady_end_ns;
	int copy_host_times;			/* copies carry their API enter/exit times; 0: the
						 * attribution fell back to their GPU-side intervals */
	uint64_t launch_cost_ns;		/* the collector's cost per launch, largest of the files */
	int launch_cost_self;			/* ... that file's was measured in its process */
	unsigned replay_dram;			/* enum apx_replay_dram bits, of the files' kv */
	/* the steady state is launch-bound (idle_attrib.c): the short gaps' launch overhead is
	 * >= 10 % of the steady state and kernels are on average shorter than twice those gaps;
	 * then the longer gaps inside steps with no other cause are launch overhead too */
	int launch_bound;
	/* with steps: each step's idle time with no cause (unknown), summed over devices, and
	 * the same for the gaps kept apart as the host's work inside steps (idle_attrib.c);
	 * steady.count entries each, owned by the model */
	uint64_t *unknown_per_step, *step_host_per_step;

	/* after finish */
	struct apx_an_xfer xfer[APX_COPY__COUNT][APX_MEM__COUNT];
	uint64_t kernel_total_ns;		/* sum of kernel durations */
	uint64_t sync_total_ns, sync_count[APX_SYNC_KIND__COUNT], sync_ns[APX_SYNC_KIND__COUNT];
	uint64_t sync_implicit_count, sync_implicit_ns;	/* synchronous copies and memsets */
	struct apx_an_sync_cause sync_cause[APX_SYNC_CAUSE__COUNT];	/* sync_cause.c */
	uint64_t device_mem_peak, device_mem_now, pinned_peak, pinned_now;
	uint64_t pinned_allocs, device_allocs;
	/* allocs.c, after the stacks: per device (by id) and kind (device, pinned, managed) its
	 * APX_AN_ALLOCS_TOP largest allocations, most bytes first; every failed allocation call
	 * in time order (the first APX_AN_ALLOCS_FAILED_MAX; allocs_failed_n counts all) */
	struct apx_vec allocs;			/* struct apx_an_alloc */
	struct apx_vec allocs_failed;		/* struct apx_an_alloc */
	uint64_t allocs_failed_n;
	uint64_t uvm_count[APX_UVM_REMOTE_MAP + 1], uvm_bytes[APX_UVM_REMOTE_MAP + 1];
	uint64_t steps;				/* iterations, when NVTX ranges or syncs tell */
	struct apx_an_steps steady;		/* the steady state's steps (steps.c) */

	/* Python stacks: frames_all is an input (set before finish: group by the innermost
	 * frame, library frames included); the rest after finish (stacks.h). lines: every line
	 * a stack stands for; stack_line: per store stack, its line (UINT32_MAX none);
	 * hotspots by GPU time (user lines first unless frames_all); threads by samples;
	 * idle_stacks by time; steady_steps: the steps inside the steady window (the per-step
	 * divisor, 0 without steps) */
	int frames_all;
	int whatif_savings;			/* input: the savings of the rules with a what-if
						 * transformation from the simulator (whatif.h);
						 * apx report --savings whatif */
	int has_stacks;				/* some event or sample names a stack */
	struct apx_vec lines;			/* struct apx_an_line */
	uint32_t *stack_line;
	struct apx_vec hotspots;		/* struct apx_an_hotspot */
	struct apx_vec threads;			/* struct apx_an_thread */
	struct apx_vec idle_stacks;		/* struct apx_an_idle_stack */
	/* OS calls waited in (oswaits.c), by time; os_wait_threshold_ns: input (0: the
	 * default), the waits long enough to be listed by line in oswait_lines */
	struct apx_vec oswaits;			/* struct apx_an_oswait */
	struct apx_vec oswait_lines;		/* struct apx_an_oswait_line */
	uint64_t os_wait_threshold_ns;
	uint64_t idle_samples_ns;		/* main-thread samples' time in those gaps */
	uint64_t steady_steps;
	uint64_t torch_ranges;			/* PyTorch op ranges left out of the NVTX table */
	/* Backward kernels attributed to the forward line that created them (backward.c,
	 * apx analyze --python-backward nvtx), after finish. GPU time (kernel durations) of the
	 * kernels whose launch has a host time but no Python stack (nostack: autograd's engine
	 * threads, and any other thread without Python frames); of those, launched inside an
	 * autograd node's range (in_node), given a forward line (attr; near: the forward op
	 * launched nothing itself and its nearest launch on its thread gave the line), inside a
	 * node whose sequence number has no forward range with a line (no_forward).
	 * kernel_line: per store kernel, the forward line (model->lines) or UINT32_MAX. */
	struct {
		uint64_t nostack_ns, nostack_kernels, in_node_ns, attr_ns, attr_kernels;
		uint64_t near_ns, no_forward_ns;
		uint64_t launch_times;		/* kernels with a launch time (0: feature off) */
		uint32_t *kernel_line;
	} bwd;

	/* host heap samples (heap.c); heap.leak* are inputs (apx report --heap-leak) */
	struct apx_an_heap heap;

	/* every event of the files (store.h), after finish; owned by the model */
	struct apx_store *store;
	/* input, set before the first file: the store is the twin of the caller's (apx export's):
	 * it borrows the readers the caller keeps, and the caller builds it with its own store
	 * (apx_store_build_twin, one pass over the files) before apx_model_finish */
	int twin;
	/* the what-if graph of the steady window (whatif/whatif.h), after finish; NULL: none */
	struct apx_whatif *whatif;
	/* private (view_streams.c): event store stream -> model stream + 1, 0 = none */
	uint32_t *stream_of_es;
	size_t graph_hint;			/* graphs: the one the last graph kernel joined */
	/* the GPU's gaps between consecutive kernels of a graph replay (under 20 us: one replay),
	 * summed and counted over the run's graphs: what a kernel costs the GPU between two others
	 * when no launch comes between them (whatif/xform.c's cuda-graph) */
	uint64_t graph_gap_sum, graph_gaps;
};

struct apx_model *apx_model_new(void);
/* Reads one trace. Damaged or truncated files are used up to the damage (recorded in the
 * file's entry); -errno only when the file cannot be read at all (diag says why). */
int apx_model_add_file(struct apx_model *m, const char *path, struct apx_diag *diag);
/* The same for an open reader, which the model takes over (closed with it, also on error;
 * with m->twin it stays the caller's); name stands for its path (fuzzing, tests). */
int apx_model_add_reader(struct apx_model *m, const char *name, struct apx_reader *rd,
			 struct apx_diag *diag);
/* Read the files into the event store, then compute the views. Negative errno on failure,
 * m->finish_diag saying where (the chunk being read, or the step being computed). */
int apx_model_finish(struct apx_model *m);
void apx_model_free(struct apx_model *m);

const struct apx_an_device *apx_model_device(const struct apx_model *m, uint32_t id);
/* The device a DEVICE record described of store device es (host, UUID); NULL: none did. */
const struct apx_an_device *apx_model_device_es(const struct apx_model *m, uint32_t es);
/* A kernel name for humans: demangled when it is a C++ name, into buf (demangle.c). */
const char *apx_kernel_display_name(const struct apx_an_name *nm, char *buf, size_t cap);
/* Where a time lies against the steady window (idle_attrib.c). */
enum apx_phase { APX_PHASE_STARTUP, APX_PHASE_STEADY, APX_PHASE_TEARDOWN };
enum apx_phase apx_phase_of(const struct apx_model *m, uint64_t ts);
/* enum apx_idle_cause for people ("sync wait") and for JSON keys ("sync"). */
const char *apx_idle_cause_name(unsigned cause);
const char *apx_idle_cause_key(unsigned cause);
/* The collected ns inside [a, b) (capture.c): b - a unless collection was limited to capture
 * ranges (cudaProfilerStart/Stop). Idle time, steps and findings only count collected time. */
uint64_t apx_an_collected_overlap(const struct apx_model *m, uint64_t a, uint64_t b);
/* The first collected part [*ret_s, *ret_e) of [a, b): 1, or 0 when none. Walk every part with
 * for (s = a; apx_an_collected_piece(m, s, b, &s, &e); s = e). */
int apx_an_collected_piece(const struct apx_model *m, uint64_t a, uint64_t b, uint64_t *ret_s,
			   uint64_t *ret_e);
/* load.c: a "capture" or "capture_mode" key/value of file fi (others are ignored); 0 or
 * -ENOMEM. finish.c: the open ranges closed at their file's end, the union built. */
int apx_capture_kv(struct apx_model *m, uint16_t fi, const char *key, const char *val);
int apx_capture_finish(struct apx_model *m);
/* Find the program's steps (steps.c); called by apx_model_finish with kernels in time order. */
int apx_steps_find(struct apx_model *m);
/* The GPU work queued at t: 0 when no kernel started before t runs at t, else the time to
 * the end of the run of kernels (gaps under APX_STEPS_QUEUE_GAP_NS) it is part of, looked at
 * up to limit past t (a result over limit is some value over it). */
uint64_t apx_steps_queued_at(const struct apx_model *m, uint64_t t, uint64_t limit);
const char *apx_step_source_name(enum apx_step_source s);

/* sync_cause.c: each host sync's cause and copy (struct apx_an_sync), m->sync_cause; after
 * apx_view_events. 0 or -ENOMEM. */
int apx_sync_causes_build(struct apx_model *m);
/* The cause of a sync of kind (enum apx_sync_kind) that waited for a copy of copy_kind (enum
 * apx_copy_kind, APX_COPY__COUNT: no copy) of bytes, after_select: a nonzero, select or unique
 * kernel ran just before that copy on its stream. */
enum apx_sync_cause apx_sync_cause_of(unsigned kind, unsigned copy_kind, uint64_t bytes,
				      int after_select);
/* Whether a kernel's name (mangled or not, len bytes) is one of PyTorch's nonzero, select or
 * unique kernels (whose count the host reads back): cub's DeviceSelect and unique-by-key
 * sweeps, the reductions over at::native's NonZeroOp, at::native's unique kernels. */
int apx_sync_kernel_selects(const char *name, size_t len);
/* A cause for JSON ("item", "nonzero", "read_back", ...; "?" out of range), and the PyTorch
 * calls behind it (".item()", "torch.cuda.synchronize()", ...). */
const char *apx_sync_cause_key(unsigned cause);
const char *apx_sync_cause_call(unsigned cause);
/* A cause in words with its copies' sizes (min..max bytes), e.g. ".item() (a 4-byte read
 * back)", ".cpu() / .tolist() / .numpy() (a 33.6 MB read back)", "a blocking .to('cuda')
 * (4 B-9.4 MB copies)", "torch.cuda.synchronize() (no copy)", into buf (72 bytes hold any);
 * returns buf. */
const char *apx_sync_cause_text(char *buf, size_t cap, unsigned cause, uint64_t min_bytes,
				uint64_t max_bytes);
/* The causes of m->sync_cause that have host syncs (none of APX_SYNC_CAUSE_NONE), the most
 * host time blocked first (ties: the most syncs, then the enum's order), into ret; how many. */
unsigned apx_sync_causes_ranked(const struct apx_model *m, unsigned ret[APX_SYNC_CAUSE__COUNT]);

#endif
