/*
 * format.h - the .apx trace format: record types, their fields, the writer and the reader.
 *
 * This header is the contract between every producer (the injected collector, nvperfd) and
 * every consumer (apx info/report/export). The normative description of the bytes on disk is
 * docs/format.md; this header is its C face. Nothing here logs: errors come back as negative
 * errno values, with the details in a struct apx_diag when the caller passes one.
 *
 * Records are flat: a record of type T is an array of up to APX_REC_FIELDS_MAX fields whose
 * meaning is given by the enum apx_<t>_field below (field index = enum value). Every field is
 * a uint64_t in memory (signed fields hold the two's complement, f64 fields the IEEE bits,
 * byte-string fields their length, with the pointer in rec->bytes[i]).
 */
#ifndef APX_FORMAT_H
#define APX_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* ---- file-level constants (docs/format.md §1, §2) ---------------------------------------- */

#define APX_FORMAT_MAJOR 1
#define APX_FORMAT_MINOR 0
#define APX_PREAMBLE_SIZE 16
#define APX_CHUNK_HDR_SIZE 32
#define APX_CHUNK_MAGIC 0x43585041u /* "APXC" little-endian */
#define APX_CHUNK_PAYLOAD_MAX (16u << 20) /* a reader refuses larger chunks */
#define APX_CHUNK_RECORDS_MAX (1u << 22)
#define APX_REC_FIELDS_MAX 64 /* 32 before format 1.0 readers of 2026-12; docs/format.md §4 */
#define APX_BYTES_MAX (1u << 20) /* longest byte-string field */

/* ---- record (= chunk) types --------------------------------------------------------------- */

enum apx_rec_type {
	APX_REC_HEADER = 1,	/* first chunk of every file: producer, host, clocks, process */
	APX_REC_STRINGS = 2,	/* string table: id -> text (deduplicated names) */
	APX_REC_DEVICE = 3,	/* GPU properties */
	APX_REC_PROCESS = 4,	/* a process (pid, argv, exit) */
	APX_REC_THREAD = 5,	/* a thread (tid, name) */
	APX_REC_KERNEL = 6,	/* one kernel execution */
	APX_REC_MEMCPY = 7,	/* one copy (H2D, D2H, D2D, P2P, ...) */
	APX_REC_MEMSET = 8,	/* one memset */
	APX_REC_MEMORY = 9,	/* an allocation or a free */
	APX_REC_SYNC = 10,	/* a synchronization the host waited in */
	APX_REC_API = 11,	/* a CUDA runtime or driver API call */
	APX_REC_MARKER = 12,	/* an NVTX range or marker */
	APX_REC_CONFIG = 13,	/* configuration event: L2 persisting limit, access-policy window */
	APX_REC_UVM = 14,	/* unified-memory event: page fault, migration, thrashing */
	APX_REC_METRIC = 15,	/* a time-series metric sample */
	APX_REC_COUNTER = 16,	/* a per-kernel hardware counter result */
	APX_REC_CPU = 17,	/* a CPU/process sample (/proc or getrusage) */
	APX_REC_FINDING = 18,	/* a finding (rule result) */
	APX_REC_KV = 19,	/* free-form key/value */
	APX_REC_GRAPH = 20,	/* CUDA graph create/instantiate/launch */
	APX_REC_LOSS = 21,	/* records lost (dropped by CUPTI or by the producer) */
	APX_REC_FRAME = 22,	/* a source location: Python code object + line (or native) */
	APX_REC_STACK = 23,	/* a call stack: frame ids, innermost first */
	APX_REC_SAMPLE = 24,	/* a periodic sample of one thread: stack and state */
	APX_REC_COLLECTIVE = 25, /* an NCCL collective or point-to-point operation */
	APX_REC_HEAP = 26,	/* a sampled host heap allocation (malloc/new), or its free */
	APX_REC_TYPE__LAST = APX_REC_HEAP,
	APX_REC_END = 255,	/* last chunk of a finished file */
	APX_REC_TYPE__COUNT = 256,
};

/* How a field is stored (docs/format.md §4). The kind of every field is written in each
 * chunk, so a reader can skip fields it does not know. */
enum apx_field_kind {
	APX_FK_UINT = 1,	/* LEB128 varint */
	APX_FK_DELTA = 2,	/* zigzag varint of (value - previous record's value) */
	APX_FK_SPAN = 3,	/* zigzag varint of (value - field 0 of the same record) */
	APX_FK_SINT = 4,	/* zigzag varint */
	APX_FK_F64 = 5,		/* 8 bytes, IEEE 754 binary64, little-endian */
	APX_FK_BYTES = 6,	/* varint length + bytes */
	APX_FK__COUNT,
};

/* ---- shared enumerations ------------------------------------------------------------------ */

enum apx_mem_kind {		/* where a buffer lives */
	APX_MEM_UNKNOWN = 0,
	APX_MEM_PAGEABLE = 1,
	APX_MEM_PINNED = 2,
	APX_MEM_DEVICE = 3,
	APX_MEM_ARRAY = 4,
	APX_MEM_MANAGED = 5,
	APX_MEM_DEVICE_STATIC = 6,
	APX_MEM_MANAGED_STATIC = 7,
	APX_MEM__COUNT,
};

enum apx_copy_kind {
	APX_COPY_UNKNOWN = 0,
	APX_COPY_H2D = 1,
	APX_COPY_D2H = 2,
	APX_COPY_D2D = 3,
	APX_COPY_H2H = 4,
	APX_COPY_P2P = 5,
	APX_COPY_OTHER = 6,	/* arrays and other CUPTI copy kinds */
	APX_COPY__COUNT,
};

enum apx_sync_kind {
	APX_SYNC_KIND_UNKNOWN = 0,
	APX_SYNC_KIND_EVENT = 1,		/* cudaEventSynchronize */
	APX_SYNC_KIND_STREAM_WAIT_EVENT = 2,	/* cudaStreamWaitEvent (device-side wait) */
	APX_SYNC_KIND_STREAM = 3,		/* cudaStreamSynchronize */
	APX_SYNC_KIND_DEVICE = 4,		/* cudaDeviceSynchronize / context synchronize */
	APX_SYNC_KIND__COUNT,
};

enum apx_api_domain { APX_API_RUNTIME = 1, APX_API_DRIVER = 2 };
/* ALLOC_FAILED: an allocation call that returned an error (no memory was allocated; its
 * record has bytes 0, requested_bytes and error set: docs/format.md, "memory") */
enum apx_mem_op { APX_MEMOP_ALLOC = 1, APX_MEMOP_FREE = 2, APX_MEMOP_ALLOC_FAILED = 3 };
enum apx_marker_kind { APX_MARKER_RANGE = 1, APX_MARKER_INSTANT = 2 };

enum apx_config_kind {
	APX_CONFIG_L2_PERSIST_LIMIT = 1,	/* value = set-aside bytes (device/context limit) */
	APX_CONFIG_L2_PERSIST_RESET = 2,	/* cudaCtxResetPersistingL2Cache */
	APX_CONFIG_APW_STREAM = 3,		/* access-policy window set on a stream */
	APX_CONFIG_APW_GRAPH_NODE = 4,		/* ... on a graph kernel node (target = node) */
	APX_CONFIG_APW_LAUNCH = 5,		/* ... as a launch attribute */
};

enum apx_uvm_kind {
	APX_UVM_CPU_FAULT = 1,
	APX_UVM_GPU_FAULT = 2,
	APX_UVM_MIGRATE_H2D = 3,
	APX_UVM_MIGRATE_D2H = 4,
	APX_UVM_MIGRATE_D2D = 5,
	APX_UVM_THRASHING = 6,
	APX_UVM_THROTTLING = 7,
	APX_UVM_REMOTE_MAP = 8,
};

enum apx_graph_kind { APX_GRAPH_CREATE = 1, APX_GRAPH_INSTANTIATE = 2, APX_GRAPH_LAUNCH = 3 };

enum apx_loss_source {
	APX_LOSS_CUPTI = 1,		/* cuptiActivityGetNumDroppedRecords */
	APX_LOSS_POOL_EMPTY = 2,	/* producer had no free buffer for CUPTI */
	APX_LOSS_QUEUE_FULL = 3,	/* producer could not queue a full buffer */
	APX_LOSS_WRITE = 4,		/* producer could not write (disk full...) */
	APX_LOSS_OTHER = 5,
};

enum apx_clock { APX_CLOCK_MONOTONIC = 1, APX_CLOCK_REALTIME = 2 };

/* Access-policy window properties (CUaccessProperty): packed as hit | miss << 4. */
enum apx_access_prop { APX_ACCESS_NORMAL = 0, APX_ACCESS_STREAMING = 1, APX_ACCESS_PERSISTING = 2 };

/* ---- fields of each record type ---------------------------------------------------------- *
 * Timestamps are nanoseconds on the file's trace clock (header field CLOCK). "id" fields
 * that name a string refer to the STRINGS table (0 = none). */

enum apx_header_field {
	APX_HEADER_PRODUCER,		/* bytes: "apx-inject", "nvperfd", ... */
	APX_HEADER_PRODUCER_VERSION,	/* bytes */
	APX_HEADER_CREATED_NS,		/* wall time at creation, ns since the Unix epoch */
	APX_HEADER_HOSTNAME,		/* bytes */
	APX_HEADER_KERNEL,		/* bytes: uname sysname release version machine */
	APX_HEADER_CLOCK,		/* enum apx_clock of every timestamp in the file */
	APX_HEADER_REALTIME_OFFSET_NS,	/* sint: wall ns = trace ns + this */
	APX_HEADER_BOOTTIME_OFFSET_NS,	/* sint: CLOCK_BOOTTIME ns = trace ns + this */
	APX_HEADER_PID,
	APX_HEADER_PPID,
	APX_HEADER_ARGV,		/* bytes: arguments, each followed by a NUL */
	APX_HEADER_CWD,			/* bytes */
	APX_HEADER_UID,
	APX_HEADER_USER,		/* bytes */
	APX_HEADER_RUN_ID,		/* bytes: shared by all files of one run */
	APX_HEADER_RANK,		/* sint: distributed rank, -1 when none */
	APX_HEADER_START_NS,		/* trace clock when the producer started */
	APX_HEADER_WORLD_SIZE,		/* ranks of the job (WORLD_SIZE or NCCL's nranks), 0 = none */
	APX_HEADER_LOCAL_RANK,		/* sint: rank on this host (LOCAL_RANK), -1 = none; only
					 * meaningful when WORLD_SIZE > 0 */
	APX_HEADER__COUNT,
};

enum apx_strings_field { APX_STRINGS_ID, APX_STRINGS_TEXT, APX_STRINGS__COUNT };

enum apx_device_field {
	APX_DEVICE_ID,			/* device ordinal as used by records */
	APX_DEVICE_NAME,		/* bytes */
	APX_DEVICE_UUID,		/* bytes (16) */
	APX_DEVICE_CC_MAJOR,
	APX_DEVICE_CC_MINOR,
	APX_DEVICE_SM_COUNT,
	APX_DEVICE_MEM_BYTES,
	APX_DEVICE_L2_BYTES,
	APX_DEVICE_MEM_BW_BPS,		/* peak memory bandwidth, bytes/s */
	APX_DEVICE_PERSIST_L2_MAX_BYTES,
	APX_DEVICE_PCI_BUS_ID,		/* bytes */
	APX_DEVICE_PCIE_GEN,
	APX_DEVICE_PCIE_WIDTH,
	APX_DEVICE_NVLINK_COUNT,
	APX_DEVICE_MAX_THREADS_PER_SM,
	APX_DEVICE_REGS_PER_SM,
	APX_DEVICE_SMEM_PER_SM,
	APX_DEVICE_MAX_BLOCKS_PER_SM,
	APX_DEVICE_CLOCK_KHZ,
	APX_DEVICE_MEM_CLOCK_KHZ,
	APX_DEVICE_MEM_BUS_BITS,
	APX_DEVICE_WARP_SIZE,
	APX_DEVICE_SMEM_PER_BLOCK_OPTIN,
	APX_DEVICE_MIG,			/* 1 when a MIG instance */
	APX_DEVICE__COUNT,
};

enum apx_process_field {
	APX_PROCESS_PID,
	APX_PROCESS_PPID,
	APX_PROCESS_START_NS,
	APX_PROCESS_END_NS,		/* 0 while running */
	APX_PROCESS_COMM,		/* bytes */
	APX_PROCESS_ARGV,		/* bytes, NUL-terminated arguments */
	APX_PROCESS_UID,
	APX_PROCESS_EXIT_STATUS,	/* sint: exit code, or -signal */
	APX_PROCESS_USES_CUDA,		/* 0 no, 1 yes, 2 unknown */
	APX_PROCESS__COUNT,
};

enum apx_thread_field {
	APX_THREAD_PID,
	APX_THREAD_TID,
	APX_THREAD_NAME,		/* bytes */
	APX_THREAD_START_NS,
	APX_THREAD_END_NS,
	APX_THREAD__COUNT,
};

enum apx_kernel_field {
	APX_KERNEL_START_NS,
	APX_KERNEL_END_NS,
	APX_KERNEL_DEVICE,
	APX_KERNEL_CONTEXT,
	APX_KERNEL_STREAM,
	APX_KERNEL_CORRELATION,
	APX_KERNEL_NAME,		/* string id */
	APX_KERNEL_GRID_X,
	APX_KERNEL_GRID_Y,
	APX_KERNEL_GRID_Z,
	APX_KERNEL_BLOCK_X,
	APX_KERNEL_BLOCK_Y,
	APX_KERNEL_BLOCK_Z,
	APX_KERNEL_REGISTERS,		/* per thread */
	APX_KERNEL_STATIC_SMEM,		/* bytes per block */
	APX_KERNEL_DYNAMIC_SMEM,	/* bytes per block */
	APX_KERNEL_LOCAL_MEM,		/* bytes per thread */
	APX_KERNEL_GRAPH_ID,
	APX_KERNEL_GRAPH_NODE_ID,
	APX_KERNEL_CLUSTER_X,
	APX_KERNEL_CLUSTER_Y,
	APX_KERNEL_CLUSTER_Z,
	APX_KERNEL_APW_BASE,		/* access-policy window the kernel ran under (0 = none) */
	APX_KERNEL_APW_BYTES,
	APX_KERNEL_APW_HIT_PPM,		/* hit ratio, parts per million */
	APX_KERNEL_APW_PROPS,		/* hit | miss << 4 (enum apx_access_prop) */
	APX_KERNEL_FLAGS,		/* bit 0: launched from the device */
	APX_KERNEL_STACK,		/* Python stack at the launch (stack id), 0 = none */
	APX_KERNEL_TID,			/* launching thread (OS tid), 0 = unknown */
	APX_KERNEL_LAUNCH_NS,		/* the launch call's enter on the host, 0 = not recorded
					 * (only with --python-backward nvtx) */
	APX_KERNEL_LAUNCH_THREAD,	/* the launching thread as CUPTI names it in NVTX ranges
					 * (low 32 bits of pthread_self), 0 = not recorded */
	APX_KERNEL__COUNT,
};

enum apx_memcpy_field {
	APX_MEMCPY_START_NS,
	APX_MEMCPY_END_NS,
	APX_MEMCPY_DEVICE,
	APX_MEMCPY_CONTEXT,
	APX_MEMCPY_STREAM,
	APX_MEMCPY_CORRELATION,
	APX_MEMCPY_COPY_KIND,		/* enum apx_copy_kind */
	APX_MEMCPY_SRC_KIND,		/* enum apx_mem_kind */
	APX_MEMCPY_DST_KIND,		/* enum apx_mem_kind */
	APX_MEMCPY_BYTES,
	APX_MEMCPY_HOST_ADDR,		/* host side of H2D/D2H, 0 = unknown */
	APX_MEMCPY_SRC_DEVICE,		/* P2P only */
	APX_MEMCPY_DST_DEVICE,		/* P2P only */
	APX_MEMCPY_FLAGS,		/* bit 0: async */
	APX_MEMCPY_GRAPH_ID,
	APX_MEMCPY_GRAPH_NODE_ID,
	APX_MEMCPY_COPY_COUNT,		/* > 1 for batched copies */
	APX_MEMCPY_API_ENTER_NS,	/* the copy call's enter on the host, 0 = not recorded */
	APX_MEMCPY_API_EXIT_NS,		/* its exit, 0 = not recorded */
	APX_MEMCPY_HOST_FP,		/* H2D: fingerprint of the host source's bytes at the
					 * call, 0 = not recorded (docs/collector.md) */
	APX_MEMCPY_STACK,		/* Python stack at the call (stack id), 0 = none */
	APX_MEMCPY_TID,			/* calling thread (OS tid), 0 = unknown */
	APX_MEMCPY__COUNT,
};

enum apx_memset_field {
	APX_MEMSET_START_NS,
	APX_MEMSET_END_NS,
	APX_MEMSET_DEVICE,
	APX_MEMSET_CONTEXT,
	APX_MEMSET_STREAM,
	APX_MEMSET_CORRELATION,
	APX_MEMSET_BYTES,
	APX_MEMSET_VALUE,
	APX_MEMSET_MEM_KIND,		/* enum apx_mem_kind */
	APX_MEMSET_FLAGS,		/* bit 0: async */
	APX_MEMSET_GRAPH_ID,
	APX_MEMSET_GRAPH_NODE_ID,
	APX_MEMSET_STACK,		/* Python stack at the call (stack id), 0 = none */
	APX_MEMSET__COUNT,
};

enum apx_memory_field {
	APX_MEMORY_TS_NS,
	APX_MEMORY_OP,			/* enum apx_mem_op */
	APX_MEMORY_ADDRESS,
	APX_MEMORY_BYTES,
	APX_MEMORY_MEM_KIND,		/* enum apx_mem_kind */
	APX_MEMORY_DEVICE,
	APX_MEMORY_CONTEXT,
	APX_MEMORY_STREAM,
	APX_MEMORY_CORRELATION,
	APX_MEMORY_FLAGS,		/* bit 0: async (stream-ordered) */
	APX_MEMORY_SOURCE,		/* string id: the library that asked, 0 = unknown */
	APX_MEMORY_STACK,		/* Python stack at the allocation call (stack id), 0 = none */
	APX_MEMORY_TID,			/* calling thread (OS tid), 0 = unknown */
	APX_MEMORY_ERROR,		/* ALLOC_FAILED: the call's CUDA error (CUresult), else 0 */
	APX_MEMORY_REQUESTED_BYTES,	/* ALLOC_FAILED: the bytes asked for, else 0 */
	APX_MEMORY__COUNT,
};

enum apx_sync_field {
	APX_SYNC_START_NS,
	APX_SYNC_END_NS,
	APX_SYNC_KIND,			/* enum apx_sync_kind */
	APX_SYNC_CONTEXT,
	APX_SYNC_STREAM,
	APX_SYNC_EVENT,
	APX_SYNC_CORRELATION,
	APX_SYNC_TID,			/* 0 = unknown */
	APX_SYNC_STACK,			/* Python stack at the call (stack id), 0 = none */
	APX_SYNC__COUNT,
};

enum apx_api_field {
	APX_API_START_NS,
	APX_API_END_NS,
	APX_API_DOMAIN,			/* enum apx_api_domain */
	APX_API_CBID,			/* CUPTI callback id within the domain */
	APX_API_CORRELATION,
	APX_API_TID,
	APX_API_RETURN,			/* sint: cudaError_t / CUresult */
	APX_API_NAME,			/* string id (function name), 0 = look up by cbid */
	APX_API_STACK,			/* Python stack at the call (stack id), 0 = none */
	APX_API__COUNT,
};

enum apx_marker_field {
	APX_MARKER_START_NS,
	APX_MARKER_END_NS,		/* == start for an instant marker */
	APX_MARKER_ID,
	APX_MARKER_NAME,		/* string id */
	APX_MARKER_DOMAIN,		/* string id, 0 = default domain */
	APX_MARKER_TID,
	APX_MARKER_COLOR,		/* ARGB, 0 = none */
	APX_MARKER_CATEGORY,
	APX_MARKER_KIND,		/* enum apx_marker_kind */
	APX_MARKER_SEQ,			/* a PyTorch op range's autograd sequence number + 1,
					 * 0 = none (base/torch_nvtx.h) */
	APX_MARKER_FLAGS,		/* bit 0: a PyTorch op range, its name cut to the op */
	APX_MARKER__COUNT,
};

enum apx_config_field {
	APX_CONFIG_TS_NS,
	APX_CONFIG_KIND,		/* enum apx_config_kind */
	APX_CONFIG_DEVICE,
	APX_CONFIG_CONTEXT,
	APX_CONFIG_STREAM,
	APX_CONFIG_VALUE,		/* e.g. persisting L2 set-aside bytes */
	APX_CONFIG_APW_BASE,
	APX_CONFIG_APW_BYTES,
	APX_CONFIG_APW_HIT_PPM,		/* hit ratio, parts per million */
	APX_CONFIG_APW_HIT_PROP,	/* enum apx_access_prop */
	APX_CONFIG_APW_MISS_PROP,	/* enum apx_access_prop */
	APX_CONFIG_CORRELATION,
	APX_CONFIG_TID,
	APX_CONFIG_TARGET,		/* graph node or other handle, 0 = none */
	APX_CONFIG__COUNT,
};

enum apx_uvm_field {
	APX_UVM_START_NS,
	APX_UVM_END_NS,
	APX_UVM_KIND,			/* enum apx_uvm_kind */
	APX_UVM_DEVICE,
	APX_UVM_ADDRESS,
	APX_UVM_BYTES,
	APX_UVM_VALUE,			/* e.g. number of faults grouped in this record */
	APX_UVM_SRC_DEVICE,
	APX_UVM_DST_DEVICE,
	APX_UVM__COUNT,
};

enum apx_metric_field {
	APX_METRIC_TS_NS,
	APX_METRIC_NAME,		/* string id */
	APX_METRIC_DEVICE,
	APX_METRIC_PID,			/* 0 = device-wide */
	APX_METRIC_VALUE,		/* f64 */
	APX_METRIC_UNIT,		/* string id */
	APX_METRIC_END_NS,		/* span: end of the sample's interval (PM sampling) */
	APX_METRIC__COUNT,
};

enum apx_counter_field {
	APX_COUNTER_CORRELATION,	/* the kernel's correlation id */
	APX_COUNTER_NAME,		/* string id of the metric */
	APX_COUNTER_VALUE,		/* f64 */
	APX_COUNTER_DEVICE,
	APX_COUNTER_PASSES,		/* replay passes it took */
	APX_COUNTER__COUNT,
};

enum apx_cpu_field {
	APX_CPU_TS_NS,
	APX_CPU_PID,
	APX_CPU_TID,			/* 0 = the whole process */
	APX_CPU_UTIME_NS,		/* cumulative */
	APX_CPU_STIME_NS,		/* cumulative */
	APX_CPU_VOL_CSW,		/* cumulative voluntary context switches */
	APX_CPU_INVOL_CSW,		/* cumulative involuntary context switches */
	APX_CPU_RSS_BYTES,
	APX_CPU_RSS_PEAK_BYTES,
	APX_CPU_THREADS,
	APX_CPU_STATE,			/* /proc state letter, 0 = unknown */
	APX_CPU_MINFLT,
	APX_CPU_MAJFLT,
	APX_CPU__COUNT,
};

enum apx_finding_field {
	APX_FINDING_TS_NS,
	APX_FINDING_RULE,		/* bytes: rule id, e.g. "pageable-copy" */
	APX_FINDING_SEVERITY,		/* 1 info, 2 warning, 3 critical */
	APX_FINDING_SAVING_NS,
	APX_FINDING_SAVING_PPM,		/* of the run's wall time */
	APX_FINDING_CONFIDENCE_PCT,
	APX_FINDING_TITLE,		/* bytes */
	APX_FINDING_EVIDENCE,		/* bytes */
	APX_FINDING_FIX,		/* bytes */
	APX_FINDING_PID,
	APX_FINDING__COUNT,
};

enum apx_kv_field { APX_KV_KEY, APX_KV_VALUE, APX_KV__COUNT };

enum apx_graph_field {
	APX_GRAPH_START_NS,
	APX_GRAPH_END_NS,
	APX_GRAPH_KIND,			/* enum apx_graph_kind */
	APX_GRAPH_GRAPH_ID,
	APX_GRAPH_DEVICE,
	APX_GRAPH_CONTEXT,
	APX_GRAPH_STREAM,
	APX_GRAPH_CORRELATION,
	APX_GRAPH_NODES,
	APX_GRAPH__COUNT,
};

enum apx_loss_field {
	APX_LOSS_TS_NS,
	APX_LOSS_SOURCE,		/* enum apx_loss_source */
	APX_LOSS_COUNT,			/* records (or buffers, see REASON) lost since the last one */
	APX_LOSS_REASON,		/* bytes */
	APX_LOSS__COUNT,
};

/* A frame is one source location; ids are per file, from 1. */
enum apx_frame_kind { APX_FRAME_PYTHON = 1, APX_FRAME_NATIVE = 2 };

enum apx_frame_field {
	APX_FRAME_ID,
	APX_FRAME_KIND,			/* enum apx_frame_kind */
	APX_FRAME_FILE,			/* string id: source file (Python) or object file (native) */
	APX_FRAME_FUNC,			/* string id: qualified function name */
	APX_FRAME_LINE,			/* line number, 0 = unknown */
	APX_FRAME_FIRST_LINE,		/* first line of the function, 0 = unknown */
	APX_FRAME_ADDRESS,		/* native: offset in the object file; Python: 0 */
	APX_FRAME__COUNT,
};

/* A stack; ids are per file, from 1. FRAMES is a list of LEB128 varints (frame ids), the
 * innermost frame first; at most APX_STACK_DEPTH_MAX of them. */
#define APX_STACK_DEPTH_MAX 256

enum apx_stack_field {
	APX_STACK_ID,
	APX_STACK_FRAMES,		/* bytes: varint frame ids, innermost first */
	APX_STACK_TRUNCATED,		/* 1 when the walk stopped at the depth cap */
	APX_STACK__COUNT,
};

/* What a sampled thread was doing (from /proc/self/task/TID/stat and .../syscall). */
enum apx_thread_state {
	APX_TSTATE_UNKNOWN = 0,
	APX_TSTATE_RUNNING = 1,		/* R: on a CPU or runnable */
	APX_TSTATE_SLEEPING = 2,	/* S: waiting (in SYSCALL when >= 0) */
	APX_TSTATE_DISK = 3,		/* D: uninterruptible wait */
	APX_TSTATE_STOPPED = 4,		/* T/t */
	APX_TSTATE_OTHER = 5,
	APX_TSTATE__COUNT,
};

enum apx_sample_field {
	APX_SAMPLE_TS_NS,
	APX_SAMPLE_TID,			/* OS thread id */
	APX_SAMPLE_STACK,		/* stack id, 0 = no Python frames */
	APX_SAMPLE_STATE,		/* enum apx_thread_state */
	APX_SAMPLE_SYSCALL,		/* sint: syscall number the thread waits in, -1 = none */
	APX_SAMPLE_CPU_NS,		/* the thread's CPU time (user + system), cumulative */
	APX_SAMPLE_PERIOD_NS,		/* sampling period this sample stands for */
	APX_SAMPLE__COUNT,
};

/* NCCL operations (docs/format.md, "collective"). The plugin maps NCCL's names to these. */
enum apx_coll_func {
	APX_COLL_UNKNOWN = 0,
	APX_COLL_ALL_REDUCE = 1,
	APX_COLL_ALL_GATHER = 2,
	APX_COLL_REDUCE_SCATTER = 3,
	APX_COLL_BROADCAST = 4,
	APX_COLL_REDUCE = 5,
	APX_COLL_ALL_TO_ALL = 6,
	APX_COLL_SEND = 7,		/* point-to-point: PEER is the receiver */
	APX_COLL_RECV = 8,		/* point-to-point: PEER is the sender */
	APX_COLL_GATHER = 9,
	APX_COLL_SCATTER = 10,
	APX_COLL__COUNT,
};

/* ncclDataType_t's order (nccl.h 2.28); the element size is apx_nccl_dtype_bytes(). */
enum apx_nccl_dtype {
	APX_DT_INT8 = 0, APX_DT_UINT8 = 1, APX_DT_INT32 = 2, APX_DT_UINT32 = 3,
	APX_DT_INT64 = 4, APX_DT_UINT64 = 5, APX_DT_FLOAT16 = 6, APX_DT_FLOAT32 = 7,
	APX_DT_FLOAT64 = 8, APX_DT_BFLOAT16 = 9, APX_DT_FP8_E4M3 = 10, APX_DT_FP8_E5M2 = 11,
	APX_DT__COUNT,
	APX_DT_UNKNOWN = 255,
};

enum apx_nccl_algo {
	APX_ALGO_UNKNOWN = 0, APX_ALGO_TREE = 1, APX_ALGO_RING = 2, APX_ALGO_COLLNET_DIRECT = 3,
	APX_ALGO_COLLNET_CHAIN = 4, APX_ALGO_NVLS = 5, APX_ALGO_NVLS_TREE = 6, APX_ALGO_PAT = 7,
	APX_ALGO__COUNT,
};

enum apx_nccl_proto {
	APX_PROTO_UNKNOWN = 0, APX_PROTO_LL = 1, APX_PROTO_LL128 = 2, APX_PROTO_SIMPLE = 3,
	APX_PROTO__COUNT,
};

enum apx_coll_flag {
	APX_COLL_F_P2P = 1 << 0,		/* a send or recv, not a collective */
	APX_COLL_F_GPU_TIMES = 1 << 1,		/* START/END_NS from kernel-channel events */
	APX_COLL_F_PARTIAL = 1 << 2,		/* some channels never reported a stop */
	APX_COLL_F_GRAPH = 1 << 3,		/* captured in a CUDA graph */
};

enum apx_collective_field {
	APX_COLLECTIVE_ENQUEUE_NS,	/* NCCL's start of the operation on the host */
	APX_COLLECTIVE_ENQUEUE_END_NS,	/* span: its stop (= enqueued, not finished) */
	APX_COLLECTIVE_START_NS,	/* GPU start on the trace clock (first channel), 0 = unknown */
	APX_COLLECTIVE_END_NS,		/* GPU end on the trace clock (last channel), 0 = unknown */
	APX_COLLECTIVE_FUNC,		/* enum apx_coll_func */
	APX_COLLECTIVE_COUNT,		/* elements, as NCCL counts them (per rank) */
	APX_COLLECTIVE_DATATYPE,	/* enum apx_nccl_dtype */
	APX_COLLECTIVE_BYTES,		/* COUNT x element size */
	APX_COLLECTIVE_ALGO,		/* enum apx_nccl_algo */
	APX_COLLECTIVE_PROTO,		/* enum apx_nccl_proto */
	APX_COLLECTIVE_CHANNELS,
	APX_COLLECTIVE_PEER,		/* sint: root (broadcast, reduce) or peer (send, recv), -1 */
	APX_COLLECTIVE_COMM,		/* communicator id hash */
	APX_COLLECTIVE_RANK,		/* sint: rank in the communicator */
	APX_COLLECTIVE_NRANKS,
	APX_COLLECTIVE_SEQ,		/* NCCL's sequence number in the communicator */
	APX_COLLECTIVE_STREAM,		/* CUDA stream handle, 0 = unknown */
	APX_COLLECTIVE_DEVICE,		/* sint: CUDA device ordinal, -1 = unknown */
	APX_COLLECTIVE_GPU_TIMER_START,	/* raw GPU globaltimer of the first channel's start */
	APX_COLLECTIVE_GPU_TIMER_END,	/* raw GPU globaltimer of the last channel's stop */
	APX_COLLECTIVE_FLAGS,		/* enum apx_coll_flag */
	APX_COLLECTIVE__COUNT,
};

/* Size in bytes of one element of an enum apx_nccl_dtype, 0 for unknown types. */
unsigned apx_nccl_dtype_bytes(unsigned dtype);
const char *apx_coll_func_name(unsigned func);		/* "all_reduce"; "unknown" */
const char *apx_nccl_algo_name(unsigned algo);		/* "ring"; "unknown" */
const char *apx_nccl_proto_name(unsigned proto);	/* "simple"; "unknown" */

/* Host heap samples (apx analyze --heap-sampling-bytes N; docs/format.md, "heap"): OP is
 * enum apx_mem_op (ALLOC: a sampled allocation, standing for about INTERVAL_BYTES bytes;
 * FREE: the free of an earlier ALLOC at ADDRESS). Flags: */
enum apx_heap_flag {
	APX_HEAPF_UNTRACKED = 1 << 0,	/* ALLOC: its free would not be seen (live unknown) */
	APX_HEAPF_REALLOC = 1 << 1,	/* made, or freed, by realloc */
	APX_HEAPF_ALIGNED = 1 << 2,	/* posix_memalign, aligned_alloc, memalign, valloc */
	APX_HEAPF_CALLOC = 1 << 3,
	APX_HEAPF_NOSTACK = 1 << 4,	/* ALLOC: no native stack (unsafe to walk there) */
	APX_HEAPF_LARGE = 1 << 5,	/* ALLOC: recorded because of its size (every allocation of
					 * the large threshold or more is), not sampled: it stands
					 * for itself; interval_bytes 0 */
};

enum apx_heap_field {
	APX_HEAP_TS_NS,
	APX_HEAP_OP,			/* enum apx_mem_op: ALLOC or FREE */
	APX_HEAP_ADDRESS,
	APX_HEAP_BYTES,			/* ALLOC: the size asked for; FREE: 0 */
	APX_HEAP_INTERVAL_BYTES,	/* ALLOC: the mean sampling interval N */
	APX_HEAP_TID,			/* OS thread id */
	APX_HEAP_STACK,			/* Python stack (stack id), 0 = none */
	APX_HEAP_NATIVE_STACK,		/* native stack (stack id; native frames), 0 = none */
	APX_HEAP_FLAGS,			/* enum apx_heap_flag */
	APX_HEAP__COUNT,
};

enum apx_end_field {
	APX_END_CHUNKS,			/* chunks before this one */
	APX_END_RECORDS,		/* records before this chunk */
	APX_END_END_NS,			/* trace clock at close */
	APX_END_STATUS,			/* 0 normal close, 1 closed from a fatal signal */
	APX_END__COUNT,
};

/* ---- schema ------------------------------------------------------------------------------- */

struct apx_field_desc {
	const char *name;		/* snake_case, as in docs/format.md and JSON output */
	uint8_t kind;			/* enum apx_field_kind */
};

struct apx_rec_schema {
	const char *name;		/* "kernel", "memcpy", ... */
	uint16_t version;		/* chunk version written for this type */
	uint8_t nfields;
	const struct apx_field_desc *fields;
};

/* The schema of a record type, or NULL for a type this build does not know. */
const struct apx_rec_schema *apx_schema(unsigned type);

/* ---- a decoded or to-be-encoded record ---------------------------------------------------- */

struct apx_rec {
	uint16_t type;
	uint64_t present;		/* bit i: field i was in the file and this build knows it;
					 * v[i] of other fields is 0 or unspecified */
	uint64_t v[APX_REC_FIELDS_MAX];
	const uint8_t *bytes[APX_REC_FIELDS_MAX]; /* APX_FK_BYTES fields; borrowed */
};

void apx_rec_init(struct apx_rec *rec, unsigned type);	/* zero all fields */
void apx_rec_set_bytes(struct apx_rec *rec, unsigned field, const void *p, size_t len);
void apx_rec_set_str(struct apx_rec *rec, unsigned field, const char *s); /* NULL = empty */
void apx_rec_set_f64(struct apx_rec *rec, unsigned field, double value);
double apx_rec_f64(const struct apx_rec *rec, unsigned field);
void apx_rec_set_i64(struct apx_rec *rec, unsigned field, int64_t value);
int64_t apx_rec_i64(const struct apx_rec *rec, unsigned field);

/* ---- diagnostics -------------------------------------------------------------------------- */

struct apx_diag {
	int err;			/* negative errno */
	uint64_t offset;		/* file offset where the problem is */
	int64_t chunk;			/* chunk index, -1 = the file header */
	char msg[256];			/* what is wrong and what is missing */
};

/* ---- writer (one thread; docs/format.md §6) ----------------------------------------------- */

struct apx_writer;

struct apx_writer_opts {
	uint32_t chunk_bytes;		/* close a chunk at this payload size; 0 = 64 KiB */
};

/* Create path (O_EXCL unless overwrite) and write the preamble and the header chunk. */
int apx_writer_open(const char *path, int overwrite, const struct apx_rec *header,
		    const struct apx_writer_opts *opts, struct apx_writer **ret_w);
/* Same, on an fd the writer takes ownership of (closed by apx_writer_close/abandon). */
int apx_writer_open_fd(int fd, const struct apx_rec *header, const struct apx_writer_opts *opts,
		       struct apx_writer **ret_w);
/* Append a record to the open chunk of its type; the chunk is written when full. */
int apx_writer_add(struct apx_writer *w, const struct apx_rec *rec);
/* Append a LOSS record: count records (or buffers) of source lost, and why. */
int apx_writer_add_loss(struct apx_writer *w, uint64_t ts_ns, unsigned source, uint64_t count,
			const char *reason);
/* The id of a string, adding it to the string table on first use (0 for NULL). */
int apx_writer_intern(struct apx_writer *w, const char *s, size_t len, uint32_t *ret_id);
/* Write every open chunk (string table first). After it returns, the file is readable. */
int apx_writer_flush(struct apx_writer *w);
/* Flush, write the END chunk, fsync-free close; frees w even on error. */
int apx_writer_close(struct apx_writer *w, uint64_t end_ns, unsigned status);
/* Free without writing anything more (e.g. in a forked child). */
void apx_writer_abandon(struct apx_writer *w);
uint64_t apx_writer_bytes(const struct apx_writer *w);	/* written to the file so far */
uint64_t apx_writer_records(const struct apx_writer *w);

/* ---- reader (docs/format.md §7) ----------------------------------------------------------- */

enum apx_read_status {
	APX_READ_COMPLETE = 0,		/* ends with a valid END chunk */
	APX_READ_TRUNCATED = 1,		/* ends on a chunk boundary without END: producer stopped */
	APX_READ_DAMAGED = 2,		/* a bad byte: reading stopped at the last good chunk */
};

struct apx_chunk_info {
	uint64_t offset;		/* of the chunk header */
	uint32_t payload_len;
	uint32_t records;
	uint16_t type;
	uint16_t version;
	uint32_t crc;			/* payload CRC32C */
};

struct apx_reader;

/* Open a regular file (anything else is refused without blocking: -EINVAL, -EISDIR), read it
 * into memory and validate every chunk's checksums. Returns 0 when at least the preamble and the
 * header chunk are good (see apx_reader_status for the rest), negative errno when the file is
 * unusable (-ENOTSUP: unknown major version; -EBADMSG: not an apx file or header damaged). */
int apx_reader_open(const char *path, struct apx_reader **ret_r, struct apx_diag *diag);
/* Same over a caller's buffer, which must outlive the reader (fuzzing, tests). */
int apx_reader_open_mem(const void *buf, size_t len, struct apx_reader **ret_r,
			struct apx_diag *diag);
void apx_reader_close(struct apx_reader *r);

enum apx_read_status apx_reader_status(const struct apx_reader *r);
/* Why the status is not COMPLETE (offset, chunk index, message); NULL when complete. */
const struct apx_diag *apx_reader_damage(const struct apx_reader *r);
const struct apx_rec *apx_reader_header(const struct apx_reader *r);
uint16_t apx_reader_minor(const struct apx_reader *r);
uint64_t apx_reader_size(const struct apx_reader *r);
size_t apx_reader_chunk_count(const struct apx_reader *r);	/* good chunks */
const struct apx_chunk_info *apx_reader_chunk(const struct apx_reader *r, size_t i);
/* Chunk i will not be read again: the reader gives back the memory of its copy of the chunk
 * (files opened with apx_reader_open), so a large trace is not resident all at once. Chunks of
 * types with bytes fields (strings, findings, key/values...) are kept: pointers into them stay
 * valid until apx_reader_close. Iterating a released chunk again fails (-ESTALE). */
void apx_reader_release(const struct apx_reader *r, size_t i);
/* Text of a string id, with its length; NULL when unknown. Loads the table on first call. */
const char *apx_reader_string(struct apx_reader *r, uint64_t id, size_t *ret_len);

/* Iterates the records of one chunk. Decoding state lives in the iterator. */
struct apx_chunk_iter {
	const struct apx_reader *r;
	size_t chunk;
	const uint8_t *p, *end;
	uint32_t left;
	uint8_t nfields;		/* fields in this chunk's schema */
	uint8_t known;			/* of those, fields this build knows */
	uint8_t kinds[APX_REC_FIELDS_MAX];
	uint64_t span;			/* last SPAN value (one SPAN field per type) */
	int8_t span_field;		/* index of the SPAN field, -1 = none */
	uint64_t bytes_mask;		/* fields of kind BYTES */
	struct apx_rec rec;		/* the current record (also the delta state) */
};

/* Start iterating chunk i. -ENOTSUP: chunk type, version or the kind of a field added later
 * unknown (skip it); -EBADMSG: a damaged field table (the chunk's records are lost). */
int apx_chunk_iter_init(struct apx_chunk_iter *it, const struct apx_reader *r, size_t i,
			struct apx_diag *diag);
/* 1 with it->rec filled, 0 at the end of the chunk, -EBADMSG on undecodable bytes. */
int apx_chunk_iter_next(struct apx_chunk_iter *it, struct apx_diag *diag);

/* ---- names for humans --------------------------------------------------------------------- */

const char *apx_rec_type_name(unsigned type);	/* "kernel"; "unknown" for a type this build lacks */
const char *apx_mem_kind_name(unsigned kind);
const char *apx_copy_kind_name(unsigned kind);
const char *apx_sync_kind_name(unsigned kind);

#endif /* APX_FORMAT_H */
