/*
 * store.h - the event store: every event of every .apx file of a run, kept whole, in columns
 * per event type (kernels, copies, memsets, API calls, NVTX ranges, host synchronizations,
 * counter samples), with the entities they belong to: files (one process each), hosts,
 * devices keyed by (host, UUID), streams keyed by (file, device, stream id), threads keyed by
 * (file, tid), and the Python stacks that kernels, copies, memsets, syncs and thread samples
 * carry (frames and stacks resolved through per-file id maps once every file is read), and the
 * NCCL collectives of the collector's plugin (a column set outside the ordered stream). Every
 * column is sorted by start time; apx_store_next() walks all of them as one
 * stream ordered by time across types and files; a correlation index per file joins an API
 * call to the GPU work it launched.
 *
 * Consumers: the exporters (lib/export: Perfetto, Chrome/Kineto JSON, SQLite) read the ordered
 * stream; apx report's model (model.h) computes its aggregates as views over the columns
 * (view_*.c, timeline.c, steps.c, nvtx.c). Built by apx_store_open() (or new/add_reader/build)
 * from trace files, single-threaded; the store keeps their
 * readers open, so names are borrowed from the files' mappings (text + length, not
 * NUL-terminated). Nothing here logs: errors come back as negative errno with a diag.
 */
#ifndef APX_ANALYSIS_STORE_H
#define APX_ANALYSIS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

#define APX_STORE_MAX_FILES 4096

enum apx_es_type {
	APX_ES_KERNEL,
	APX_ES_COPY,
	APX_ES_MEMSET,
	APX_ES_API,
	APX_ES_MARKER,
	APX_ES_SYNC,
	APX_ES_COUNTER,
	APX_ES__COUNT,
};

/* A borrowed text: bytes of a file's mapping, not NUL-terminated. */
struct apx_es_text {
	const char *p;
	uint32_t len;
};

struct apx_es_host {
	struct apx_es_text name;
};

struct apx_es_file {
	const char *path;			/* as given to apx_store_open */
	struct apx_reader *r;
	uint32_t host;				/* index into hosts */
	uint64_t pid, ppid;
	int64_t rank;				/* -1 = none */
	uint64_t world;				/* the header's world size, 0 = none */
	int64_t local_rank;			/* -1 = none (or no world size) */
	int64_t shift_ns;			/* added to this file's times: aligns other hosts' clocks */
	struct apx_es_text argv, run_id;
	enum apx_read_status status;		/* the reader's, DAMAGED once a chunk's records
						 * cannot be decoded (apx_store_build) */
	uint64_t skipped;			/* records outside --from/--to or under --min-dur */
	/* What the store could not read (apx export says it, as apx info and apx report do):
	 * records of chunks that could not be decoded, the chunks they were in, chunks of a
	 * newer writer skipped whole, and where the first undecodable chunk is (message,
	 * offset, chunk index; empty msg = none; the reader's own damage is
	 * apx_reader_damage()). */
	uint64_t records_lost;
	uint32_t chunks_lost, chunks_unknown;
	struct apx_diag damage;
};

struct apx_es_device {
	uint32_t host;
	uint8_t uuid[16];
	int has_uuid;				/* 0: keyed by (host, ordinal) instead */
	uint32_t ordinal;			/* the device id its first file used (saturated) */
	uint16_t first_file;
	struct apx_es_text name;
	uint64_t mem_bytes, l2_bytes, mem_bw_bps, clock_khz;
	uint32_t sm_count, cc_major, cc_minor;
};

struct apx_es_stream {
	uint16_t file;
	uint32_t device;			/* index into devices */
	uint64_t id;				/* CUDA stream id within its process */
};

struct apx_es_thread {
	uint16_t file;
	uint64_t tid;
	struct apx_es_text name;		/* empty when the trace did not name it */
};

/* A kernel launch configuration (deduplicated: kernels point to one). */
struct apx_es_launch {
	uint32_t grid[3], block[3];
	uint32_t regs, smem_static, smem_dynamic;
};

/* A time series: METRIC records of a file, or a device's memory in use (from allocations). */
struct apx_es_series {
	uint16_t file;
	uint32_t device;			/* store device index, UINT32_MAX = none */
	struct apx_es_text name, unit;
	int is_memory;				/* bytes of device memory in use, built by the store */
};

/* Columns. Index i of every array of a type is one event. A kernel keeps its duration in 32
 * bits (10 million kernels, bench/report); the rare one of 4.29 s or more has dur UINT32_MAX
 * and its end in a side table: read ends with apx_store_end(). */
struct apx_es_kernels {
	size_t n, cap;
	uint64_t *start;
	uint32_t *dur;				/* ns, saturated at UINT32_MAX */
	uint32_t *corr, *stream, *name, *launch;	/* name: string index; launch: launches[] */
	uint32_t *stack;			/* Python stack at the launch: stacks[] + 1, 0 none */
	/* the launch on the host (apx analyze --python-backward nvtx, backward.c): its enter
	 * time (0 = not recorded) and its thread as threads[] indexes, both as CUPTI names it in
	 * NVTX ranges (pthread) and by OS tid (UINT32_MAX = unknown) */
	uint64_t *launch_ns;
	uint32_t *lthread, *othread;
};

/* Kernels without times: CUPTI gives a launch profiled by the range profiler (apx analyze
 * --replay) start = end = 0. They are not in the kernel columns (no timeline, idle, steps or
 * run start/end sees them); the kernel views count them and take their duration from the
 * launch's replayed gpu__time_duration.sum counter (view_kernels.c). In record order. */
struct apx_es_untimed {
	size_t n, cap;
	uint32_t *corr, *stream, *name, *launch;	/* as in struct apx_es_kernels */
};

struct apx_es_copies {
	size_t n, cap;
	uint64_t *start, *end, *bytes, *host_addr;	/* host_addr: the host side's, 0 unknown */
	uint64_t *api_enter, *api_exit;		/* the copy call on the host, 0 = not recorded */
	uint64_t *host_fp;			/* H2D: its source's fingerprint, 0 = none */
	uint32_t *corr, *stream;
	uint32_t *stack;			/* Python stack at the call: stacks[] + 1, 0 none */
	uint8_t *kind, *src, *dst, *flags;		/* enum apx_copy_kind, apx_mem_kind; bit 0 async */
};

struct apx_es_memsets {
	size_t n, cap;
	uint64_t *start, *end, *bytes;
	uint32_t *corr, *stream;
	uint32_t *stack;			/* Python stack at the call: stacks[] + 1, 0 none */
	uint8_t *kind, *flags;			/* enum apx_mem_kind (low byte); bit 0 async */
};

struct apx_es_apis {
	size_t n, cap;
	uint64_t *start, *end;
	uint32_t *corr, *thread, *name;		/* thread: threads[]; name: string index */
	uint32_t *cbid;				/* CUPTI callback id */
	uint8_t *domain;			/* enum apx_api_domain */
	uint32_t *stack;			/* Python stack at the call: stacks[] + 1, 0 none
						 * (allocator calls at level light) */
};

struct apx_es_markers {
	size_t n, cap;
	uint64_t *start, *end;			/* end == start: an instant marker */
	uint32_t *thread, *name;
	uint64_t *seq;				/* PyTorch op range: sequence number + 1, 0 none */
	uint8_t *kind;				/* enum apx_marker_kind */
	uint8_t *torch;				/* 1: a PyTorch op range (base/torch_nvtx.h), its
						 * name the op's; 2: a cuBLAS or cuDNN call (domain
						 * "cuBLAS"/"cuDNN": apx analyze --trace-libs), or
						 * CUB's or Thrust's own range (domain "CCCL", or a
						 * name cub::..., thrust::...) */
};

struct apx_es_syncs {
	size_t n, cap;
	uint64_t *start, *end;
	uint32_t *thread, *stream;		/* stream UINT32_MAX: not on a stream (device, event) */
	uint32_t *stack;			/* Python stack at the call: stacks[] + 1, 0 none */
	uint32_t *corr;				/* the call's correlation id (its place among the
						 * process's launches), 0 = not recorded */
	uint8_t *kind;				/* enum apx_sync_kind */
};

/* Periodic samples of a process's threads (SAMPLE records): not in the ordered stream (the
 * exporters do not show them); sorted by time. */
struct apx_es_samples {
	size_t n, cap;
	uint64_t *ts;
	uint64_t *cpu_ns;			/* the thread's CPU time, cumulative */
	uint32_t *thread;			/* threads[] */
	uint32_t *stack;			/* stacks[] + 1, 0 none (no Python frames) */
	uint32_t *period;			/* ns this sample stands for, saturated */
	int32_t *syscall;			/* the syscall it waits in, -1 none */
	uint8_t *state;				/* enum apx_thread_state */
};

/* A source location (FRAME record): its names interned as store strings, so that one file
 * and function of two processes are one. */
struct apx_es_frame {
	uint32_t file, func;			/* store strings (path, qualified name) */
	uint32_t line, first_line;		/* 0 = unknown */
	uint64_t address;			/* native: offset in the object file */
	uint16_t src;				/* the trace file (st->files) it came from */
	uint8_t kind;				/* enum apx_frame_kind, 0 = not said */
};

/* A call stack (STACK record): stack_frames[first .. first + depth), store frame indices,
 * innermost first. Ids are per trace file; events name a stack through their file's map. */
struct apx_es_stack {
	uint32_t first;
	uint16_t depth;
	uint16_t file;
	uint8_t truncated;			/* the walk stopped at the collector's depth cap */
};

/* What the store left out of the stack records (summed over files): each is dropped and
 * counted here, never trusted. A stack names frames, not stacks, so a list cannot refer to
 * itself; recursion (a frame repeated) is the program's and kept. */
struct apx_es_stack_loss {
	uint64_t bad_list;			/* frame lists that do not decode (truncated varint,
						 * a value past 64 bits) */
	uint64_t too_deep;			/* lists of more than APX_STACK_DEPTH_MAX frames */
	uint64_t undefined_frame;		/* stacks naming a frame id no FRAME record defines */
	uint64_t bad_id;			/* frame or stack records with id 0 or past 2^32 */
	uint64_t dup_frame, dup_stack;		/* a second record of one id: the first is kept */
	uint64_t undefined_stack;		/* events and samples naming a stack id that no
						 * (kept) STACK record defines: read as "no stack" */
};

/* NCCL collectives and point-to-point operations (COLLECTIVE records of the collector's NCCL
 * profiler plugin): not in the ordered stream (the exporters place them, apx report's
 * rank sections read the files themselves, ranks.c), in record order (the collector writes one
 * when its GPU end is known). Times on the store's clock like every event's; start and end 0:
 * no GPU times (no kernel-channel events). Kept when [enqueue, end] overlaps --from/--to;
 * --min-dur does not drop them. */
struct apx_es_collectives {
	size_t n, cap;
	uint64_t *enq, *enq_end;		/* NCCL's start and stop on the host (stop = enqueued) */
	uint64_t *start, *end;			/* on the GPU: first channel's start, last's end; 0 */
	uint64_t *count, *bytes;		/* elements as NCCL counts them, their bytes (per rank) */
	uint64_t *comm, *seq;			/* communicator id hash, NCCL's sequence number */
	uint64_t *stream;			/* the CUDA stream handle NCCL named (not CUPTI's id), 0 */
	int32_t *peer;				/* root (broadcast, reduce) or peer (send, recv), -1 */
	int32_t *rank;				/* rank in the communicator, -1 unknown */
	int32_t *device;			/* CUDA device ordinal, -1 unknown */
	uint32_t *nranks;
	uint16_t *file, *channels;
	uint8_t *func, *dtype, *algo, *proto;	/* enum apx_coll_func, apx_nccl_dtype, _algo, _proto */
	uint8_t *flags;				/* enum apx_coll_flag */
};

struct apx_es_counters {
	size_t n, cap;
	uint64_t *ts;
	uint64_t *end;				/* the sample's interval end (PM sampling); 0: an instant */
	double *value;
	uint32_t *series;
};

/* One kernel name: the string, and the launch configuration and device of its first
 * kernel (in file order). */
struct apx_es_kname {
	uint32_t name;				/* string index */
	uint32_t launch;			/* launches[] */
	uint32_t ordinal;			/* the device id that kernel's record gave */
};

/* Called for every record read (after the store took what it keeps), so that a consumer
 * collects what the store has no column for (apx report's model: memory, configuration,
 * unified memory, CPU samples, key/values...). Times are the file's own (not shifted).
 * Negative errno stops the build. */
typedef int apx_store_record_fn(void *ctx, uint16_t file, const struct apx_rec *r);
/* A chunk that is not read: err -ENOTSUP (a newer writer's type or version: skipped whole) or
 * damaged (d says where and why; lost: its records not read). */
typedef void apx_store_chunk_fn(void *ctx, uint16_t file, size_t chunk, int err,
				const struct apx_diag *d, uint32_t lost);

struct apx_store_opts {
	uint64_t from_ns, to_ns;		/* keep events overlapping [from, to) after the run's
						 * start; to 0 = the end */
	uint64_t min_dur_ns;			/* drop kernels, copies, memsets, API calls and
						 * ranges shorter than this */
	int keep_clocks;			/* 1: each file's times as recorded (apx report);
						 * 0: other hosts moved onto the first file's clock */
	uint64_t origin_utc_ns;			/* nonzero: the run starts at this wall-clock time (ns
						 * since the epoch; the first file's realtime offset
						 * puts it on the trace clock) when that is at or before
						 * its earliest file's start: apx export's per-rank
						 * files of one run share one time origin */
	apx_store_record_fn *on_record;		/* NULL = none */
	apx_store_chunk_fn *on_chunk;
	void *ctx;
	int borrow_readers;			/* 1: the readers stay the caller's, never closed
						 * here (a twin: apx_store_build_twin) */
};

struct apx_store {
	struct apx_es_file *files;
	size_t nfiles;
	struct apx_es_host *hosts;
	size_t nhosts;
	struct apx_es_device *devices;
	size_t ndevices;
	struct apx_es_stream *streams;
	size_t nstreams;
	struct apx_es_thread *threads;
	size_t nthreads;
	struct apx_es_text *strings;		/* kernel, API, marker names: interned across files */
	size_t nstrings;
	struct apx_es_launch *launches;
	size_t nlaunches;
	struct apx_es_series *series;
	size_t nseries;
	struct apx_es_kname *knames;		/* kernel names, in the order first seen */
	size_t nknames;
	uint32_t *string_kname;			/* per string: knames index + 1, 0 = no kernel's */

	struct apx_es_kernels k;
	struct apx_es_untimed ku;
	struct apx_es_copies c;
	struct apx_es_memsets s;
	struct apx_es_apis a;
	struct apx_es_markers mk;
	struct apx_es_syncs y;
	struct apx_es_counters ct;
	struct apx_es_samples smp;
	struct apx_es_collectives coll;

	/* Python stacks (FRAME, STACK records) */
	struct apx_es_frame *frames;
	size_t nframes;
	struct apx_es_stack *stacks;
	size_t nstacks;
	uint32_t *stack_frames;			/* every stack's frames, one after another */
	size_t nstack_frames;
	struct apx_es_stack_loss stack_loss;

	uint64_t run_start_ns, run_end_ns;	/* earliest file start .. latest event end */
	uint64_t events;

	void *priv;				/* store.c's hash tables and capacities */
};

/* Read the files (every readable prefix; damage is recorded per file, not fatal) and build
 * the store. -errno when a file cannot be read at all or memory runs out (diag: which file,
 * where). opts may be NULL. */
int apx_store_open(const char *const *paths, size_t npaths, const struct apx_store_opts *opts,
		   struct apx_store **ret_store, struct apx_diag *diag);
/* The same with each file opened by open_file (apx export: Kineto JSON converted first). */
int apx_store_open_with(const char *const *paths, size_t npaths,
			const struct apx_store_opts *opts,
			int (*open_file)(const char *path, struct apx_reader **ret,
					 struct apx_diag *diag),
			struct apx_store **ret_store, struct apx_diag *diag);
/* The same in steps, for callers that learn their files one by one (apx report: a run's
 * FILE.<pid>, converted Kineto traces): new, then add_reader for each file (the store takes the
 * reader over, also on error; name is borrowed and must outlive the store), then build once.
 * apx_store_build reads every file; -errno (diag) when memory runs out. */
struct apx_store *apx_store_new(const struct apx_store_opts *opts);
int apx_store_add_reader(struct apx_store *st, const char *name, struct apx_reader *rd,
			 struct apx_diag *diag);
int apx_store_build(struct apx_store *st, struct apx_diag *diag);
/* apx_store_build of st and of twin, a store of the same files (the same readers, added in the
 * same order; twin with borrow_readers) in one pass: each record is decoded once and goes into
 * both, each under its own options and hooks (apx export: its store and apx report's model for
 * the stream waits). -EINVAL when the files differ or either is built. */
int apx_store_build_twin(struct apx_store *st, struct apx_store *twin, struct apx_diag *diag);
void apx_store_free(struct apx_store *st);

/* The store device of a file's device id, UINT32_MAX when the file never named it. */
uint32_t apx_store_device_of(const struct apx_store *st, uint16_t file, uint64_t ordinal);

/* Events of one type. */
size_t apx_store_count(const struct apx_store *st, enum apx_es_type type);
uint64_t apx_store_start(const struct apx_store *st, enum apx_es_type type, size_t i);
uint64_t apx_store_end(const struct apx_store *st, enum apx_es_type type, size_t i);
/* The file an event belongs to (through its stream or thread). */
uint16_t apx_store_file_of(const struct apx_store *st, enum apx_es_type type, size_t i);

/* The ordered stream: every event of every type and file by start time (ties: type order). */
struct apx_store_iter {
	size_t pos[APX_ES__COUNT];
};
void apx_store_iter_init(struct apx_store_iter *it);
/* 1 with *ret_type and *ret_index set, 0 at the end. */
int apx_store_next(const struct apx_store *st, struct apx_store_iter *it,
		   enum apx_es_type *ret_type, size_t *ret_index);

/* Correlation: the GPU event (kernel, copy or memset) an API call of `file` launched, and the
 * API call that launched a GPU event. 0 with the answer, -ENOENT when there is none. The index
 * is built on the first call (one sorted array per direction). */
int apx_store_gpu_of_api(struct apx_store *st, size_t api, enum apx_es_type *ret_type,
			 size_t *ret_index);
int apx_store_api_of_gpu(struct apx_store *st, enum apx_es_type type, size_t i, size_t *ret_api);

/* The store stack of an event's stack field (stacks[] + 1), NULL for 0 or out of range. */
static inline const struct apx_es_stack *apx_store_stack(const struct apx_store *st, uint32_t s)
{
	return s && s <= st->nstacks ? &st->stacks[s - 1] : NULL;
}

/* The store stack (stacks[] + 1, 0 none) of a stack id as trace file `file` wrote it: for the
 * stack fields of records the store keeps no column for (MEMORY records: apx report's
 * allocations). After the build. */
uint32_t apx_store_stack_of(const struct apx_store *st, uint16_t file, uint64_t raw);

/* A series of the host's NIC counters (METRIC names nic.* and ib.*, apx analyze
 * --nic-metrics): of no device. */
int apx_es_is_nic(struct apx_es_text name);

/* A string of the store (kernel, API or marker name). */
static inline struct apx_es_text apx_store_string(const struct apx_store *st, uint32_t id)
{
	struct apx_es_text none = { "", 0 };

	return id < st->nstrings ? st->strings[id] : none;
}

#endif
