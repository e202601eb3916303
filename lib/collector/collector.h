/*
 * collector.h - internal to libapx-inject.so: the collector's state, its table of sources and
 * the two structures shared between application threads and the writer thread.
 *
 * Who calls what (docs/collector.md, "Inside the collector"):
 *   - inject.c: InitializeInjection, configuration, the trace file, the CUPTI subscription and
 *     clock, then every source's start() in table order; exit and fork handling.
 *   - the sources, one file each: src_callbacks.c (API/resource callbacks on application
 *     threads), src_activity.c (CUPTI activity buffers: CUPTI's threads hand them over, the
 *     writer decodes them), proc.c (CPU sampler), src_pmsampling.c (device metrics, writer
 *     side), src_replay.c (kernel replay with the range profiler), src_nvml.c (power and
 *     clocks, on a sampler thread of its own). Python stacks and the NCCL plugin are further
 *     rows of the table.
 *   - writer_thread.c: the one thread that owns the .apx writer: drains the event ring and
 *     every source, flushes the file every period.
 *   - ring.c: the typed event ring, application threads -> writer.
 *   - crash.c: fatal-signal handlers (async-signal-safe).
 *
 * Shared between application threads and the writer, both preallocated and lock-free:
 *   - the correlation side table, indexed by correlation id: the host address of each
 *     host<->device copy, joined with the MEMCPY activity record by correlation id;
 *   - the event ring: host synchronizations seen by callbacks, configuration events (L2
 *     set-aside, access-policy windows) and degraded features, until the writer encodes them.
 */
#ifndef APX_COLLECTOR_H
#define APX_COLLECTOR_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include <apx/format.h>

#include "collector/cq.h"

/* ---- what to collect ---------------------------------------------------------------------- */

/* activity kinds and callback-based record families, as a bit mask (APX_KINDS names them) */
enum {
	APX_K_KERNEL = 1 << 0,
	APX_K_MEMCPY = 1 << 1,
	APX_K_P2P = 1 << 2,
	APX_K_MEMSET = 1 << 3,
	APX_K_MEMORY = 1 << 4,
	APX_K_SYNC = 1 << 5,		/* CUPTI's SYNCHRONIZATION kind (every query and wait) */
	APX_K_UVM = 1 << 6,
	APX_K_MARKER = 1 << 7,
	APX_K_GRAPH = 1 << 8,
	APX_K_API = 1 << 9,
	APX_K_DEVICE = 1 << 10,
	APX_K_HOSTSYNC = 1 << 11,	/* host waits (stream/event/device sync) from callbacks */
};

#define APX_LIGHT_KINDS (APX_K_KERNEL | APX_K_MEMCPY | APX_K_P2P | APX_K_MEMSET | APX_K_MEMORY | \
			 APX_K_UVM | APX_K_DEVICE | APX_K_HOSTSYNC)

/* features that APX_OFF can switch off, to price each one (bench/overhead) */
enum {
	APX_F_CLOCK = 1 << 0,		/* CLOCK_MONOTONIC timestamp callback */
	APX_F_LAUNCH_ATTRS = 1 << 1,	/* per-kernel launch attributes (access-policy window) */
	APX_F_CALLBACKS = 1 << 2,	/* every API/resource callback */
	APX_F_DECODE = 1 << 3,		/* the writer decodes activity buffers (off: drops them) */
	APX_F_CPU = 1 << 4,		/* the CPU sampler */
	APX_F_SELF_COST = 1 << 5,	/* the cost per launch measured in the process (self_cost.c) */
	APX_F_NVML = 1 << 6,		/* the power and clock sampler (src_nvml.c) */
};

#define APX_HOSTPTR_SLOTS (1u << 17)
#define APX_EVENT_SLOTS 16384u

/* ---- the shared structures ---------------------------------------------------------------- */

/* One host<->device copy seen by an API callback. corr is 0 while the slot is being written
 * at API enter; host_fp then exit_ns are written at API exit (0 until then). */
struct apx_hostptr_slot {
	_Atomic uint64_t corr;
	_Atomic uint64_t src;
	_Atomic uint64_t dst;
	_Atomic uint64_t bytes;
	_Atomic uint64_t enter_ns;	/* the copy call's enter and exit (CLOCK_MONOTONIC) */
	_Atomic uint64_t exit_ns;
	_Atomic uint64_t host_fp;	/* H2D calls that succeeded: apx_copy_fp of the source */
};

enum apx_ev_kind {
	APX_EV_CONFIG = 1,	/* fields below describe an APX_REC_CONFIG record */
	APX_EV_DEGRADED = 2,	/* text (static storage) + err */
	APX_EV_SYNC = 3,	/* a host synchronization: ts_ns .. end_ns, sync_kind */
	APX_EV_COUNTER = 4,	/* a replayed kernel's counter: corr, device, cfg_kind = metric
				 * of the replay set, value = f64 bits, target = passes */
	APX_EV_CAPTURE = 5,	/* a capture range starts (value 1) or stops (0) at ts_ns */
	APX_EV_METRIC = 6,	/* a device reading over ts_ns .. end_ns (src_nvml.c): device,
				 * cfg_kind = enum apx_nvml_reading, value = f64 bits */
	APX_EV_ALLOC_FAILED = 7, /* an allocation call returned an error (alloc_calls.c): its
				 * enter ts_ns and exit end_ns, cfg_kind = enum apx_mem_kind |
				 * flags << 8 (bit 0 async), value = bytes asked for, err =
				 * CUresult, device, context, corr, tid, target = Python stack */
	APX_EV_ALLOC_CALL = 8,	/* an allocator call's host time at level light (alloc_calls.c):
				 * ts_ns enter, end_ns exit, cfg_kind = driver cbid, err =
				 * CUresult, corr, tid, target = Python stack: an API record */
};

/* One event of the ring; seq = ring position + 1 once complete. */
struct apx_event {
	_Atomic uint64_t seq;
	uint32_t kind;		/* enum apx_ev_kind */
	uint32_t cfg_kind;	/* enum apx_config_kind, or enum apx_sync_kind for APX_EV_SYNC */
	uint64_t ts_ns, end_ns, corr, tid, device, context, stream, target, value;
	uint64_t apw_base, apw_bytes, apw_hit_ppm;
	uint32_t apw_hit, apw_miss;
	int32_t err;
	const char *text;
};

/* Writer-thread state of the encoder (encode.c). */
struct apx_enc {
	struct apx_writer *w;
	const struct apx_hostptr_slot *hp;
	size_t hp_mask;
	uint32_t api_name[2][1024];	/* string ids per (domain, cbid), 0 = not yet */
	uint64_t kernels, memcpys, others, hostptr_joined;
	uint64_t host_fps_joined;	/* of those: H2D copies given their source's fingerprint */
	uint64_t foreign;		/* records of kinds apx did not enable */
	uint64_t foreign_clock;		/* timestamps far from CLOCK_MONOTONIC */
	uint64_t untimed;		/* kernels, copies and memsets without times, left out (in
					 * flight at a forced flush; kernels: not a replay) */
	uint64_t clock_limit;		/* a timestamp past this is not CLOCK_MONOTONIC */
	int api_level;
	uint64_t last_ts;		/* newest timestamp seen in a record */
	int err;			/* first writer error */
	struct apx_marker_open {
		uint64_t id, start_ns, tid;
		uint64_t seq;		/* PyTorch op range: sequence number + 1, 0 none */
		uint32_t name, domain;
		uint8_t torch;		/* a PyTorch op range (base/torch_nvtx.h) */
	} markers[1024], torch_markers[1024];	/* open ranges by id; PyTorch's op ranges
						 * (thousands a step with --python-backward
						 * nvtx) apart, so they never push a user's
						 * long range out */
};

/* ---- the collector and its sources -------------------------------------------------------- */

struct apx_collector;

/*
 * One source of records. start() runs once on the thread that initialised CUDA, after the
 * subscription and the clock, in table order; a negative return means the source is off (it
 * left a degraded fact). drain() runs on the writer thread on every wake-up (periodic = 0) and
 * once per flush period (periodic = 1). stop() runs at exit on the exiting application thread,
 * before the writer's last drain (e.g. CUPTI's forced flush). finish() runs last on the writer
 * thread, before the END chunk. Any of them may be NULL.
 */
struct apx_source {
	const char *name;
	int (*start)(struct apx_collector *c);
	void (*drain)(struct apx_collector *c, uint64_t now_ns, int periodic);
	void (*stop)(struct apx_collector *c);
	void (*finish)(struct apx_collector *c, uint64_t now_ns);
};

extern const struct apx_source apx_source_callbacks;	/* src_callbacks.c */
extern const struct apx_source apx_source_activity;	/* src_activity.c */
extern const struct apx_source apx_source_cpu;		/* proc.c */
extern const struct apx_source apx_source_pmsampling;	/* src_pmsampling.c */
extern const struct apx_source apx_source_replay;	/* src_replay.c */
extern const struct apx_source apx_source_capture;	/* capture.c */
extern const struct apx_source apx_source_self_cost;	/* self_cost.c */
extern const struct apx_source apx_source_nvml;		/* src_nvml.c */
extern const struct apx_source apx_source_pystack;	/* src_pystack.c */
extern const struct apx_source apx_source_pysampler;	/* src_pysampler.c */
extern const struct apx_source apx_source_nccl;		/* src_nccl.c (nccl_plugin.h) */
extern const struct apx_source apx_source_nic;		/* src_nic.c (nic_sysfs.h) */

/* src_nvml.c: a context exists on device (context-creation callback, any thread; lock-free):
 * its power and clocks are sampled from then on. */
void apx_nvml_device_seen(uint32_t device);

/* self_cost.c: the process's first context was created (its callback, the creating thread):
 * measures the collector's cost per launch in it. encode.c: the kernel and host-sync records of
 * that stream of apx's own are dropped (set once, before its first launch). */
void apx_self_cost_context(struct apx_collector *c, CUcontext ctx);
void apx_enc_drop_stream(uint32_t context_id, uint32_t stream_id);
/* src_callbacks.c, for self_cost.c: the Python-stack callback of cuLaunchKernel off (on 0) or
 * on again (1). 1 done, 0 when that callback is not enabled in this run, <0 CUPTI refused. */
int apx_callbacks_launch_stacks(struct apx_collector *c, int on);

/* capture.c (--capture-range=cudaProfilerApi): whether collection follows cudaProfilerStart/
 * Stop (then the activity kinds start off); the cuProfilerStart/Stop callback (application
 * thread). */
int apx_capture_mode(void);
int apx_capture_collected(uint64_t t0_ns, uint64_t t1_ns);	/* [t0, t1] overlaps a range */
void apx_capture_callback(struct apx_collector *c, CUpti_CallbackId cbid,
			  const CUpti_CallbackData *cb);

/* src_pmsampling.c: a context exists on device (context-creation callback, any thread): the
 * writer enables PM sampling there when metrics were asked for. Lock-free, allocates nothing. */
void apx_pm_device_seen(uint32_t device, CUcontext ctx);

/* cuda_sym.c: a symbol of the libcuda the program loaded (NULL when there is none). */
void *apx_cuda_sym(const char *name);
/* src_pmsampling.c: a context on device is being destroyed (context-destroy callback, the
 * destroying thread): the writer stops and drains the device's sampler while the context still
 * exists (stopping it later, at exit, crashed inside libnvperf_host on the H200). Waits up to
 * 2 s; returns at once when the device is not sampled. */
void apx_pm_context_ending(struct apx_collector *c, uint32_t device);

/* alloc_calls.c: the allocation calls' driver callbacks (enabled by src_callbacks.c when
 * allocation records are collected): the Python stack at enter, a failed call at exit
 * (application threads, lock-free). apx_alloc_callback returns 0 for a cbid that is not one
 * of apx_alloc_cbids (nothing done). */
extern const CUpti_CallbackId apx_alloc_cbids[];
extern const size_t apx_alloc_ncbids;
int apx_alloc_callback(struct apx_collector *c, CUpti_CallbackId cbid,
		       const CUpti_CallbackData *cb);

/* src_replay.c (apx analyze --replay): whether launches must be seen; a new context (enables
 * the range profiler on it); a launch callback, enter and exit (application threads). */
int apx_replay_wanted(void);
void apx_replay_context(CUcontext ctx, uint32_t device);
void apx_replay_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

/* The table: the sources in start order (inject.c defines it and starts them; the writer
 * thread drains and finishes them). */
extern const struct apx_source *const apx_sources[];
extern const size_t apx_nsources;

#define APX_NFATAL 6

/*
 * The collector's state; one instance (g_col in inject.c, STYLE §8.6: CUPTI's buffer callbacks
 * carry no user pointer). Fields above `w` are written by InitializeInjection's thread before
 * any callback or the writer thread can run, and are read-only afterwards; the atomics are
 * shared as commented; `w`, `enc` and the ring's tail belong to the writer thread once started.
 */
struct apx_collector {
	pid_t owner_pid;
	unsigned kinds;			/* APX_K_* */
	unsigned off;			/* APX_F_* switched off */
	int api_level;
	uint64_t period_ns, win_start_ns, win_end_ns;
	uint64_t launch_cost_ns;	/* collector's cost per launch, measured by apx analyze */
	CUpti_SubscriberHandle sub;
	uint8_t *pool;			/* activity buffers (src_activity.c) */
	size_t buf_bytes;
	uint32_t nbufs;
	size_t *valid;			/* per buffer: bytes CUPTI filled (set before the push) */
	struct apx_cq free_q, full_q;
	int efd;			/* eventfd: wakes the writer */
	struct apx_hostptr_slot *hp;	/* correlation side table */
	struct apx_event *ev;		/* event ring */
	int crash_fd;			/* the trace's fd (O_APPEND), -1 once closed */
	uint8_t crash_chunk[APX_NFATAL][160];
	size_t crash_len[APX_NFATAL];
	struct sigaction old_sa[APX_NFATAL];
	int sa_installed[APX_NFATAL];
	char path[4096];
	int debug;			/* APX_DEBUG: a backtrace on fatal signals */

	_Atomic uint64_t ev_head;	/* event ring: producers fetch_add */
	_Atomic uint64_t cupti_dropped;	/* CUPTI's dropped count, from buffer_completed */
	_Atomic uint64_t declined;	/* buffer requests answered with NULL */
	_Atomic int forked;		/* set in a forked child: touch nothing */
	_Atomic int quiet;		/* apx attach's detach: callbacks record nothing */
	_Atomic int stop;		/* writer: finish and close */
	_Atomic int no_flush;		/* exit has begun: the writer must not call CUPTI flush */
	_Atomic int exiting;		/* atexit ran once */
	_Atomic int crashed;		/* a fatal signal wrote its chunk */
	_Atomic int uvm_done;		/* unified-memory counters: configuration tried */
	_Atomic int uvm_ok;		/* ... and accepted */
	_Atomic int enabled;		/* activity kinds are on */
	pthread_mutex_t flush_lock;	/* writer's periodic flush vs atexit's forced flush */
	pthread_t writer;
	int writer_started;

	struct apx_writer *w;
	struct apx_enc *enc;
	uint64_t ev_tail;
	uint64_t ev_lost;
};

/* ---- ring.c: the event ring ------------------------------------------------------------------ */

/* Claim the next slot (any thread, no lock); fill it, then apx_ring_commit(). */
struct apx_event *apx_ring_begin(struct apx_collector *c, uint64_t *ret_pos);
void apx_ring_commit(struct apx_event *ev, uint64_t pos);
/* A feature failed: one DEGRADED event (what = static text, err = CUPTI/CUDA code). */
void apx_degraded(struct apx_collector *c, const char *what, int err);
/* ring.c: the same for a CUDA driver error (written "CUDA error N"). */
void apx_degraded_cuda(struct apx_collector *c, const char *what, int cuda_err);

/* l2_sweep.c (--replay-flush): before a one-pass launch, read 3 x L2 bytes of apx's own
 * buffer on the launch's stream (no dirty line of earlier kernels left in L2); -1 when it is
 * off for this context (said once). apx_l2_sweeping(): this thread is inside it (its own
 * driver calls re-enter the callbacks). */
int apx_l2_sweep(struct apx_collector *c, CUcontext ctx, uint32_t device, CUstream stream);
int apx_l2_sweeping(void);
/* Writer thread: encode every complete event; lapped or torn slots are counted in ev_lost. */
void apx_ring_drain(struct apx_collector *c);

/* ---- src_activity.c, used by the writer thread's window control ---------------------------- */

/* Switch the activity kinds on or off. first: report failures as degraded features. */
void apx_activity_set_kinds(struct apx_collector *c, int on, int first);
/* What the switches after the start cost, per kind ("kernel 0.012 ms, memory 1.9 ms": the
 * longest one each), "" when none was made (writer thread, at the end). */
void apx_activity_switch_costs(char *buf, size_t cap);
/* Unified-memory counters, configured at the first context creation (src_callbacks.c). */
void apx_activity_configure_uvm(struct apx_collector *c, uint32_t device);

/* ---- writer_thread.c --------------------------------------------------------------------- */

void *apx_writer_main(void *collector);
/* Any thread: wake the writer thread now (one write to its eventfd; no lock, no allocation). */
void apx_writer_wake(const struct apx_collector *c);
void apx_add_kv(struct apx_collector *c, const char *key, const char *value);

/* ---- crash.c ------------------------------------------------------------------------------- */

void apx_crash_prepare(struct apx_collector *c, const struct apx_rec *header);
void apx_crash_install(struct apx_collector *c);

/* ---- encode.c ------------------------------------------------------------------------------ */

/* Encode every record of one CUPTI buffer. Returns the records seen. */
size_t apx_enc_buffer(struct apx_enc *e, uint8_t *buf, size_t valid);
/* Encode one ring event. */
void apx_enc_event(struct apx_enc *e, const struct apx_event *ev);

/* ---- proc.c -------------------------------------------------------------------------------- */

/* A process-wide CPU sample (getrusage + /proc/self/status), and at exit one THREAD record per
 * live thread with its name. apx_proc_children: a PROCESS record for this process the first
 * time, then one per child process not seen before (writer thread only). */
void apx_proc_sample(struct apx_writer *w, uint64_t ts_ns);
void apx_proc_threads(struct apx_writer *w, uint64_t ts_ns);
void apx_proc_children(struct apx_writer *w, uint64_t ts_ns);

uint64_t apx_mono_ns(void);
/* inject.c: an unsigned number from the environment, def when unset or not a number <= max. */
uint64_t apx_env_u64(const char *name, uint64_t def, uint64_t max);
/* attach.c: a variable of the collector's configuration: under `apx attach` the APX_* ones
 * come from the attach request only, every other name (and all of them otherwise) from the
 * process's environment. */
const char *apx_getenv(const char *name);
/* attach.c: 1 when the collector was started by `apx attach` in a running process. */
int apx_attached(void);
/* attach.c: a detaching collector's callback (c->quiet set): CUPTI's finalize at an API exit. */
void apx_attach_on_callback(CUpti_CallbackDomain dom, const void *data);
/* attach.c: apx_say's line under `apx attach`, kept for the attaching apx, not the program's
 * stderr. */
void apx_attach_say(const char *line, size_t len);
/* inject.c: open the trace, subscribe, start the sources and the writer (0, or -errno;
 * -EBUSY: CUPTI is held by another tool, named in holder). */
int apx_collector_start(char *holder, size_t holder_cap);
/* inject.c: stop collecting and close the trace (at exit, or at apx attach's detach:
 * detach = 1 also switches the activity kinds off and quiets the callbacks first). */
void apx_collector_finish(int detach);
/* inject.c: the collector's subscriber handle (attach.c's finalize). */
CUpti_SubscriberHandle apx_collector_subscriber(void);
/* One "[apx] ..." line on stderr (never from a callback). */
void apx_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- src_pyhook.c: the Python hooks (pyhook.h; apx analyze --trace-functions and
 * --memory-sampling): ranges and samples from apx_site.py, drained by the writer ---------- */
extern const struct apx_source apx_source_pyhook;

/* ---- src_heap.c: host heap samples from libapx-heap.so (heap/heap.h; apx analyze
 * --heap-sampling-bytes N), drained by the writer ---------------------------------------- */
extern const struct apx_source apx_source_heap;

#endif
