/*
 * walk.h - what the timeline exporters share (walk.c): one pass over the event store's ordered
 * stream that lays every event out on tracks the way timeline viewers expect them, and hands
 * the exporter tracks, slices, counters and (in time order) slice ends:
 *
 *   process (one per file) > threads: API calls, host synchronizations; "NVTX" child track:
 *                                      NVTX ranges and markers
 *   GPU (one per store device) > streams: kernels, copies, memsets, and each NVTX range
 *                                projected onto the stream (the span of the GPU work its
 *                                process launched on that stream inside it: Kineto's
 *                                gpu_user_annotation, on the kernels' stream as Kineto puts it)
 *                              > counters: device memory in use, metric series
 *
 * Slices on one track always nest (viewers draw and parse them as a stack): an event that
 * would overlap the open slice of its track partially goes to the track's next lane, a child
 * track "<name> (2)". A GPU event whose end overlaps the next GPU event of its stream by less
 * than APX_WK_TRIM_NS (back-to-back kernels whose timestamps overlap by a few hundred ns) ends
 * where the next starts instead (its slice says by how much): no second lane that would look
 * like a second stream. A kernel, copy or memset with the API call that launched it (level api)
 * gets a flow from that call. A GPU operation of the steady window that started when another
 * stream's operation ended (an event wait: apx report's "cross-stream waits"; the export's
 * waits, export.c's apx_export_open) gets a "stream wait" flow from that operation, one per
 * waiting operation: an awaited operation may have several going out, a waiting one has one
 * coming in; their ids (APX_WK_WAIT_FLOW_BASE + n) never meet a launch flow's (file + 1) << 32
 * | correlation. A thread is on one track whatever ids the trace gives it (CUPTI's pthread
 * id and the OS tid: threads.c). Names longer than APX_WK_NAME_MAX bytes are cut there with a visible
 * " [... cut: N bytes]" and counted. Called by perfetto.c and chrome.c; single-threaded.
 */
#ifndef APX_EXPORT_WALK_H
#define APX_EXPORT_WALK_H

#include <stdint.h>

#include "analysis/store.h"

struct apx_export_waits;

#define APX_WK_NAME_MAX 65536		/* bytes of a name; longer ones are cut, visibly */
#define APX_WK_TRIM_NS 1000		/* GPU overlaps on a stream below this: trimmed */
#define APX_WK_TID_MAX 4194304		/* Linux's PID_MAX_LIMIT: a tid above is CUPTI's id */
#define APX_WK_WAIT_FLOW_BASE (1ull << 50)	/* stream wait flow ids: above every launch
						 * flow's (< 2^48 + 2^32), below 2^53 (JSON) */

enum apx_wk_kind {
	APX_WK_PROCESS,
	APX_WK_THREAD,
	APX_WK_THREAD_NVTX,
	APX_WK_DEVICE,
	APX_WK_STREAM,
	APX_WK_COUNTER,
};

struct apx_wk_track {
	uint64_t uuid, parent;		/* parent 0: a top-level track */
	enum apx_wk_kind kind;
	const char *name;		/* NUL-terminated, valid during the callback */
	uint64_t pid, tid;		/* of processes and threads (and their lanes): the OS
					 * tid, else CUPTI's id (> APX_WK_TID_MAX, or when the
					 * name says "(CUPTI id)"), 0 not recorded; streams:
					 * tid = the CUDA stream id */
	uint32_t file, device;		/* store indices (UINT32_MAX: none) */
	uint32_t lane;			/* 0: the track itself; n: its (n+1)-th lane */
	int is_bytes;			/* counter tracks: values are bytes */
	const char *unit;		/* counter tracks: the series' unit as the trace says it
					 * ("%", "W", "MHz", "B/s"; "" none) */
};

/* A slice (duration event) or an instant (start == end, markers only). */
struct apx_wk_slice {
	enum apx_es_type type;		/* APX_ES__COUNT: an NVTX range's projection */
	size_t index;			/* into the store's columns of type (projections: marker) */
	uint64_t track;
	uint64_t start, end;		/* ns since the run's start */
	const char *name;		/* NUL-terminated, valid during the callback */
	const char *category;		/* kernel, gpu_memcpy, gpu_memset, cuda_runtime,
					 * cuda_driver, user_annotation, gpu_user_annotation, sync */
	uint64_t flow_out, flow_in;	/* launch flows: 0 none; else an id unique in the export */
	uint64_t wait_in;		/* stream wait flow from the operation this one waited
					 * for: 0 none, else its id */
	uint64_t wait_out;		/* stream wait flows to the operations that waited for
					 * this one: ids wait_out .. wait_out + nwait_out - 1 */
	uint32_t nwait_out;
	int instant;
	uint64_t name_len;		/* 0; else the name was cut: its length in full (bytes) */
	uint64_t trimmed_ns;		/* GPU events: ns cut off the end (APX_WK_TRIM_NS) */
};

/* What the walk changed, for the exporters to say in their files. */
struct apx_wk_stats {
	uint64_t names_cut;		/* slices and tracks whose name was cut */
	uint64_t ends_trimmed;		/* GPU events whose end was trimmed */
	uint64_t threads_mapped;	/* CUPTI thread ids shown as their OS tid */
	uint64_t waits;			/* stream wait flows drawn */
};

struct apx_wk_ops {
	void *ctx;
	/* Called once for a track, before anything is put on it. */
	int (*track)(void *ctx, const struct apx_wk_track *t);
	/* Slices by start time. */
	int (*slice)(void *ctx, const struct apx_wk_slice *s);
	/* A counter sample, by time with the slices. */
	int (*counter)(void *ctx, uint64_t track, uint64_t ts, double value);
	/* Optional: the end of every non-instant slice, in time order (inner slices first). */
	int (*end)(void *ctx, uint64_t track, uint64_t ts);
};

/* The store index (thread, stream, device or series) a track id stands for. */
uint64_t apx_wk_track_index(uint64_t track);

/* Walk the whole store, with the stream waits of waits (NULL: none). Returns the first negative
 * value a callback returned, or -ENOMEM; *ret_stats (may be NULL) filled on success. */
int apx_walk(struct apx_store *st, const struct apx_export_waits *waits,
	     const struct apx_wk_ops *ops, struct apx_wk_stats *ret_stats);

/* Per store thread, the store thread whose track its events go on (threads.c): a CUPTI id
 * paired with an OS tid in the trace maps to that OS tid's thread, every other thread to
 * itself; *ret_mapped (may be NULL): how many were mapped. *ret_canon is the caller's to free. */
int apx_wk_thread_map(const struct apx_store *st, uint32_t **ret_canon, size_t *ret_mapped);

/* Names for humans of a copy ("Memcpy HtoD (Pageable -> Device)", as Kineto names them) and a
 * memset. */
const char *apx_wk_copy_name(const struct apx_store *st, size_t i, char *buf, size_t cap);
const char *apx_wk_memset_name(const struct apx_store *st, size_t i, char *buf, size_t cap);

#endif
