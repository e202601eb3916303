/*
 * walk.h - what the timeline exporters share (walk.c): one pass over the event store's ordered
 * stream that lays every event out on tracks the way timeline viewers expect them, and hands
 * the exporter tracks, slices, counters and (in time order) slice ends:
 *
 *   process (one per file) > threads: API calls, host synchronizations; "NVTX" child track:
 *                                      NVTX ranges and markers
 *   GPU (one per store device) > streams: kernels, copies, memsets
 *                              > "NVTX (GPU)": each NVTX range projected onto the GPU (the
 *                                span of the GPU work launched inside it)
 *                              > counters: device memory in use, metric series
 *
 * Slices on one track always nest (viewers draw and parse them as a stack): an event that
 * would overlap the open slice of its track partially goes to the track's next lane, a child
 * track "<name> (2)". A kernel, copy or memset with the API call that launched it (level api)
 * gets a flow from that call. Called by perfetto.c and chrome.c; single-threaded.
 */
#ifndef APX_EXPORT_WALK_H
#define APX_EXPORT_WALK_H

#include <stdint.h>

#include "analysis/store.h"

enum apx_wk_kind {
	APX_WK_PROCESS,
	APX_WK_THREAD,
	APX_WK_THREAD_NVTX,
	APX_WK_DEVICE,
	APX_WK_STREAM,
	APX_WK_GPU_NVTX,
	APX_WK_COUNTER,
};

struct apx_wk_track {
	uint64_t uuid, parent;		/* parent 0: a top-level track */
	enum apx_wk_kind kind;
	const char *name;		/* NUL-terminated, valid during the callback */
	uint64_t pid, tid;		/* of processes and threads (and their lanes); streams:
					 * tid = the CUDA stream id */
	uint32_t file, device;		/* store indices (UINT32_MAX: none) */
	uint32_t lane;			/* 0: the track itself; n: its (n+1)-th lane */
	int is_bytes;			/* counter tracks: values are bytes */
};

/* A slice (duration event) or an instant (start == end, markers only). */
struct apx_wk_slice {
	enum apx_es_type type;		/* APX_ES__COUNT: an NVTX range projected onto the GPU */
	size_t index;			/* into the store's columns of type (projections: marker) */
	uint64_t track;
	uint64_t start, end;		/* ns since the run's start */
	const char *name;		/* NUL-terminated, valid during the callback */
	const char *category;		/* kernel, gpu_memcpy, gpu_memset, cuda_runtime,
					 * cuda_driver, user_annotation, gpu_user_annotation, sync */
	uint64_t flow_out, flow_in;	/* 0: none; else an id unique in the export */
	int instant;
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

/* Walk the whole store. Returns the first negative value a callback returned, or -ENOMEM. */
int apx_walk(struct apx_store *st, const struct apx_wk_ops *ops);

/* Names for humans of a copy ("Memcpy HtoD (Pageable -> Device)", as Kineto names them) and a
 * memset. */
const char *apx_wk_copy_name(const struct apx_store *st, size_t i, char *buf, size_t cap);
const char *apx_wk_memset_name(const struct apx_store *st, size_t i, char *buf, size_t cap);

#endif
