/*
 * store_priv.h - internal to the event store (store.c builds, store_sort.c orders and
 * indexes): hash tables, capacities, the per-file device map and the correlation indices.
 */
#ifndef APX_ANALYSIS_STORE_PRIV_H
#define APX_ANALYSIS_STORE_PRIV_H

#include "analysis/sidmap.h"
#include "analysis/store.h"

#define APX_ES_ORDINALS 64		/* device ordinals mapped per file (larger: by search) */
#define APX_ES_SERIES_MAX 4096		/* time series kept (more are dropped) */

/* Open addressing: slot[j] = index + 1 (0 = empty), hash[j] its full hash. */
struct apx_es_table {
	uint32_t *slot;
	uint64_t *hash;
	size_t cap, n;
};

/* A device allocation or free, before it becomes the memory series. */
struct apx_es_mem {
	uint64_t ts, bytes;
	uint32_t device;
	uint16_t file;
	uint8_t alloc;
};

/* One row of a correlation index: (file, correlation id) -> event. */
struct apx_es_corr {
	uint32_t corr;
	uint16_t file;
	uint8_t type;
	uint32_t index;
};

/* The last stream a file's record named, per a few hash slots: consecutive kernels of one
 * stream skip the table (bench/report). */
#define APX_ES_STREAM_CACHE 16

struct apx_es_stream_hit {
	uint64_t id;
	uint32_t index;				/* stream index + 1, 0 = empty */
	uint32_t ordinal;
	uint16_t file;
};

/* A kernel of 4.29 s or more: its row (after sorting: the sorted row) and its end. */
struct apx_es_long {
	uint32_t index;
	uint64_t end;
};

/* A frame or stack id of a trace file and its store index (the per-file id maps of
 * store_stacks.c: appended while loading, sorted once every file is read). seq: the order
 * they came in (of two records of one id, the first is kept). */
struct apx_es_idmap {
	uint32_t id;
	uint32_t index;
	uint32_t seq;
	uint16_t file;
};

/* A STACK record as read, before its frame ids are resolved: raw_frames[first .. +depth). */
struct apx_es_raw_stack {
	uint32_t id;
	uint32_t first;
	uint16_t depth;
	uint16_t file;
	uint8_t truncated;
};

struct apx_es_priv {
	struct apx_store_opts opts;
	struct apx_es_long *klong;		/* by index */
	size_t nklong, klong_cap;
	struct apx_es_table strings_t, launches_t, streams_t, threads_t;
	size_t strings_cap, launches_cap, hosts_cap, devices_cap, streams_cap, threads_cap,
		series_cap, files_cap, knames_cap, string_kname_cap;
	uint32_t *kname_last;			/* per kernel name: the launch its last kernel used */
	struct apx_es_stream_hit stream_hit[APX_ES_STREAM_CACHE];
	int built;
	uint32_t (*file_dev)[APX_ES_ORDINALS];	/* per file: ordinal -> device index + 1 */
	struct apx_sidmap *file_sid;		/* per file: string id -> store string */
	struct apx_es_mem *mem;
	size_t nmem, mem_cap;
	struct apx_es_corr *gpu_by_corr, *api_by_corr;	/* built on the first query */
	size_t ngpu_corr, napi_corr;
	int corr_built;
	/* stacks while loading (store_stacks.c) */
	struct apx_es_idmap *frame_ids, *stack_ids;
	size_t nframe_ids, frame_ids_cap, nstack_ids, stack_ids_cap;
	struct apx_es_raw_stack *raw_stacks;
	size_t nraw_stacks, raw_stacks_cap;
	uint32_t *raw_frames;
	size_t nraw_frames, raw_frames_cap;
	size_t frames_cap, stacks_cap, stack_frames_cap;
};

int apx_es_grow(void **arr, size_t elem, size_t need, size_t *cap);
int apx_es_series_of(struct apx_store *st, uint16_t fi, uint32_t device, struct apx_es_text name,
		     struct apx_es_text unit, int is_memory, uint32_t *ret);
int apx_es_add_counter(struct apx_store *st, uint64_t ts, uint64_t end, double value,
		       uint32_t series);
/* store.c: the store string of a string id of file fi (interned across files). */
int apx_es_intern_id(struct apx_store *st, uint16_t fi, uint64_t id, uint32_t *ret);
/* store_stacks.c: FRAME and STACK records while loading; then, once every file is read, the
 * stacks' frames and the events' and samples' stack fields resolved through the per-file id
 * maps (what does not resolve is dropped and counted in st->stack_loss). */
int apx_es_add_frame(struct apx_store *st, uint16_t fi, const struct apx_rec *r);
int apx_es_add_stack(struct apx_store *st, uint16_t fi, const struct apx_rec *r);
int apx_es_resolve_stacks(struct apx_store *st);
void apx_es_free_stacks(struct apx_store *st);
/* store_sort.c: order every column by start, build the memory series, the run's end. */
int apx_es_finish(struct apx_store *st);

#endif
