/*
 * nccl_plugin.h - the NCCL profiler plugin inside libapx-inject.so: NCCL's function tables
 * (ncclProfiler_v4, ncclProfiler_v5, exported by the library, exports.map) and the writer's side
 * (drain finished operations into COLLECTIVE records). NCCL finds the tables because apx analyze
 * sets NCCL_PROFILER_PLUGIN to the library it injected: dlopen of that path returns the loaded
 * instance, so one library holds the CUPTI and the NCCL state (docs/collector.md, "NCCL").
 *
 * Callers: NCCL's threads call the tables (the application thread that enqueues a collective,
 * NCCL's proxy thread for proxy and kernel-channel events); src_nccl.c (the collector source)
 * enables the plugin at start-up and drains it on the writer thread; tests/unit/test-nccl.c
 * calls the tables directly, without NCCL or a GPU.
 *
 * Nothing is allocated per event: apx_nccl_enable() allocates fixed pools of operation slots
 * (each with its kernel-channel and proxy handles) and a ring of API-event handles; a full pool
 * returns a NULL handle (NCCL then skips the operation's child events) and is counted.
 */
#ifndef APX_COLLECTOR_NCCL_PLUGIN_H
#define APX_COLLECTOR_NCCL_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <apx/format.h>

/* ---- NCCL's ABI, carried here as the NCCL README asks plugins to (ext-profiler/example/nccl,
 * profiler_v4.h and profiler_v5.h of NCCL 2.27/2.28; the nccl.h on this machine is 2.28.9 and
 * defines neither, and no v6 header exists for it). Only the members apx reads are named
 * exactly; the layout is NCCL's. */

typedef int apx_ncclResult_t;			/* ncclResult_t: 0 = ncclSuccess */
typedef void (*apx_ncclDebugLogger_t)(int level, unsigned long flags, const char *file, int line,
				      const char *fmt, ...);

enum {
	APX_NCCL_EV_GROUP = 1 << 0,
	APX_NCCL_EV_COLL = 1 << 1,
	APX_NCCL_EV_P2P = 1 << 2,
	APX_NCCL_EV_PROXY_OP = 1 << 3,
	APX_NCCL_EV_PROXY_STEP = 1 << 4,
	APX_NCCL_EV_PROXY_CTRL = 1 << 5,
	APX_NCCL_EV_KERNEL_CH = 1 << 6,
	APX_NCCL_EV_NET_PLUGIN = 1 << 7,
	APX_NCCL_EV_GROUP_API = 1 << 8,		/* v5 */
	APX_NCCL_EV_COLL_API = 1 << 9,		/* v5 */
	APX_NCCL_EV_P2P_API = 1 << 10,		/* v5 */
	APX_NCCL_EV_KERNEL_LAUNCH = 1 << 11,	/* v5 */
};

#define APX_NCCL_STATE_KERNEL_CH_STOP 22	/* ncclProfilerKernelChStop (v4, v5) */

struct apx_nccl_coll_descr {			/* descriptor .coll (v4; v5 appends parentGroup) */
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
	void *parentGroup;			/* v5 only */
};

struct apx_nccl_p2p_descr {
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t nChannels;
	void *parentGroup;			/* v5 only */
};

struct apx_nccl_proxy_op_descr {
	pid_t pid;
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
};

struct apx_nccl_kernel_ch_descr {
	uint8_t channelId;
	uint64_t pTimer;
};

struct apx_nccl_coll_api_descr {		/* v5 .collApi */
	const char *func;
	size_t count;
	const char *datatype;
	int root;
	void *stream;
	bool graphCaptured;
};

struct apx_nccl_p2p_api_descr {			/* v5 .p2pApi */
	const char *func;
	size_t count;
	const char *datatype;
	void *stream;
	bool graphCaptured;
};

union apx_nccl_descr_u {
	struct { int graphCaptured; int groupDepth; } groupApi;
	struct apx_nccl_coll_api_descr collApi;
	struct apx_nccl_p2p_api_descr p2pApi;
	struct { void *stream; } kernelLaunch;
	struct apx_nccl_coll_descr coll;
	struct apx_nccl_p2p_descr p2p;
	struct apx_nccl_proxy_op_descr proxyOp;
	struct { int step; } proxyStep;
	struct apx_nccl_kernel_ch_descr kernelCh;
	struct { int64_t id; void *data; } netPlugin;
};

/* ncclProfilerEventDescr_v4_t: type is a uint8_t */
struct apx_nccl_descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union apx_nccl_descr_u u;
};

/* ncclProfilerEventDescr_v5_t: type is a uint64_t */
struct apx_nccl_descr_v5 {
	uint64_t type;
	void *parentObj;
	int rank;
	union apx_nccl_descr_u u;
};

union apx_nccl_state_args {			/* ncclProfilerEventStateArgs_v4_t / _v5_t */
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
};

struct apx_nccl_profiler_v4 {			/* ncclProfiler_v4_t */
	const char *name;
	apx_ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
				 uint64_t commHash, int nNodes, int nranks, int rank,
				 apx_ncclDebugLogger_t logfn);
	apx_ncclResult_t (*startEvent)(void *context, void **eHandle,
				       struct apx_nccl_descr_v4 *eDescr);
	apx_ncclResult_t (*stopEvent)(void *eHandle);
	apx_ncclResult_t (*recordEventState)(void *eHandle, int eState,
					     union apx_nccl_state_args *eStateArgs);
	apx_ncclResult_t (*finalize)(void *context);
};

struct apx_nccl_profiler_v5 {			/* ncclProfiler_v5_t */
	const char *name;
	apx_ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
				 const char *commName, int nNodes, int nranks, int rank,
				 apx_ncclDebugLogger_t logfn);
	apx_ncclResult_t (*startEvent)(void *context, void **eHandle,
				       struct apx_nccl_descr_v5 *eDescr);
	apx_ncclResult_t (*stopEvent)(void *eHandle);
	apx_ncclResult_t (*recordEventState)(void *eHandle, int eState,
					     union apx_nccl_state_args *eStateArgs);
	apx_ncclResult_t (*finalize)(void *context);
};

/* The tables NCCL dlsyms (newest first: it takes v5 when it knows it, else v4). */
extern struct apx_nccl_profiler_v4 ncclProfiler_v4;
extern struct apx_nccl_profiler_v5 ncclProfiler_v5;

/* ---- apx's side -------------------------------------------------------------------------- */

#define APX_NCCL_SLOTS_DEFAULT 2048		/* operations in flight (APX_NCCL_SLOTS) */
#define APX_NCCL_COMMS_MAX 64			/* communicators of one process */
#define APX_NCCL_CHANNELS 64			/* NCCL's MAXCHANNELS */

struct apx_nccl_opts {
	size_t slots;				/* 0 = APX_NCCL_SLOTS_DEFAULT; rounded to 2^k */
	int64_t gpu_offset_ns;			/* trace ns = GPU globaltimer ns - this */
	int device;				/* CUDA device of the process, -1 unknown */
	int (*current_device)(void);		/* called at each communicator's init (NCCL's
						 * calling thread has the device current);
						 * NULL or < 0: use device */
	uint64_t (*now_ns)(void);		/* the trace clock; NULL = CLOCK_MONOTONIC */
	void (*wake)(void);			/* wake the drain (the writer thread) early:
						 * called once each time a quarter of the pool
						 * waits to be drained; NULL = none */
};

/* Allocate the pools (once, at start-up, before NCCL's first init); until then every init
 * gives NCCL an empty activation mask (the plugin is inert). 0 or -ENOMEM. */
int apx_nccl_enable(const struct apx_nccl_opts *opts);
/* Writer thread: write a COLLECTIVE record for every finished operation, a KV for every new
 * communicator, and give the slots back. now_ns > 0 also closes operations whose host stop is
 * older than stale_ns and that wait for no child event (written flagged partial). */
size_t apx_nccl_drain(struct apx_writer *w, uint64_t now_ns, uint64_t stale_ns);
/* Writer thread, at the end: drain, then write every operation still in flight (partial). */
size_t apx_nccl_flush(struct apx_writer *w);

struct apx_nccl_stats {
	uint64_t comms, ops, written, partial, pool_full, foreign, unknown_parent;
	int version;				/* the table NCCL bound: 4 or 5, 0 = none */
};
void apx_nccl_stats(struct apx_nccl_stats *ret);
/* Free the pools (tests; the collector keeps them to the end of the process). */
void apx_nccl_disable(void);

/* NCCL's strings to the format's enums (exposed for tests). */
unsigned apx_nccl_func_of(const char *s);
unsigned apx_nccl_dtype_of(const char *s);
unsigned apx_nccl_algo_of(const char *s);
unsigned apx_nccl_proto_of(const char *s);

#endif
