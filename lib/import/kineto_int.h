/*
 * kineto_int.h - what the files of the Kineto importer share (lib/import/kineto*.c): one
 * parsed trace event, the importer's state across its two passes, and the helpers each file
 * exports. Not installed; kineto.h is the interface.
 */
#ifndef APX_IMPORT_KINETO_INT_H
#define APX_IMPORT_KINETO_INT_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

#include "import/jsonparse.h"

#define APX_KEV_NAME_MAX 4096	/* longer names (kernel templates) are cut */
#define APX_KI_THREADS_MAX 1024	/* threads with a THREAD record (more are not named) */

enum apx_kcat {			/* the event categories the importer maps */
	APX_KCAT_OTHER = 0,
	APX_KCAT_KERNEL,
	APX_KCAT_MEMCPY,
	APX_KCAT_MEMSET,
	APX_KCAT_RUNTIME,
	APX_KCAT_DRIVER,
	APX_KCAT_SYNC,		/* cuda_sync: CUPTI's synchronization records */
	APX_KCAT_ANNOTATION,	/* user_annotation (record_function, ProfilerStep#N) */
	APX_KCAT_CPU_OP,
};

enum apx_karg {			/* numeric args of an event */
	APX_KARG_DEVICE,
	APX_KARG_CONTEXT,
	APX_KARG_STREAM,
	APX_KARG_CORRELATION,
	APX_KARG_BYTES,
	APX_KARG_REGISTERS,
	APX_KARG_SMEM,
	APX_KARG_CBID,
	APX_KARG_GRID,		/* 3 values */
	APX_KARG_BLOCK = APX_KARG_GRID + 3,
	APX_KARG__COUNT = APX_KARG_BLOCK + 3,
	APX_KARG_ARGS = APX_KARG__COUNT,	/* "args" itself (in bad_args only) */
};

/* One element of traceEvents, as far as the importer reads it. */
struct apx_kev {
	size_t off;			/* byte offset of its '{' */
	char ph;			/* first letter of "ph", 0 = none */
	enum apx_kcat cat;
	char cat_text[32];
	char name[APX_KEV_NAME_MAX];
	size_t name_len;
	int has_ts, has_dur;
	int64_t ts_ns, dur_ns;		/* ts and dur converted from microseconds */
	int pid_num, tid_num;		/* pid/tid were numbers (GPU and "Spans" rows use text) */
	int64_t pid, tid;
	uint32_t have;			/* bit i: args value i present */
	int64_t arg[APX_KARG__COUNT];
	char sync_kind[32];		/* args.cuda_sync_kind */
	char meta_name[256];		/* args.name of a "M" event */
	/* args of the wrong type or out of range: an error only where the event's mapping uses
	 * them (kineto_emit.c); bit i of bad_args: enum apx_karg i, with its place and message */
	uint32_t bad_args;
	size_t bad_off[APX_KARG_ARGS + 1];
	char bad[APX_KARG_ARGS + 1][96];
};

struct apx_ki_thread {
	int64_t pid, tid;
	char name[64];
};

struct apx_ki_corr {			/* correlation id -> what its API call says */
	uint64_t corr;
	uint8_t flags;			/* APX_KI_CORR_* */
};
#define APX_KI_CORR_USED 1
#define APX_KI_CORR_ASYNC 2		/* an ...Async copy or memset call */

struct apx_writer;

/* The importer's state: pass 1 (scan) reads the facts the header and the records need,
 * pass 2 (emit) writes the records. */
struct apx_ki {
	struct apx_jp jp;
	struct apx_diag *diag;
	struct apx_writer *w;
	int pass;			/* 1 scan, 2 emit */
	/* top-level facts */
	int has_base, has_devprops, has_rank;
	int64_t base_ns, rank;
	uint32_t ndevices;
	uint64_t devices_used;		/* bit d: device d < 64 has GPU events (pass 1) */
	/* from the events (pass 1) */
	int has_pid;
	int64_t pid;
	char process_name[64];
	int has_span;
	int64_t first_ts, last_ts;	/* span of the events' ts (ns, before base_ns) */
	struct apx_ki_thread threads[APX_KI_THREADS_MAX];
	size_t nthreads, last_thread;
	struct apx_ki_corr *corr;	/* open addressing, cap a power of two */
	size_t ncorr, corr_cap;
	/* counts (pass 1 counts what shapes the facts; pass 2 what was written) */
	uint64_t kernels, copies, memsets, api, cupti_syncs, api_syncs, markers;
	uint64_t copies_no_host_kind, async_unknown, negative_dur;
};

/* kineto_event.c: parse the event starting with tok (an OBJECT) into ev. */
int apx_kev_parse(struct apx_ki *ki, const struct apx_jp_tok *tok, struct apx_kev *ev);
/* Numbers of known meaning: tok must be a NUMBER in [lo, hi] (what names the member). */
int apx_ki_int(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what, int64_t lo,
	       int64_t hi, int64_t *ret_v);

/* kineto_names.c: what names and categories mean. */
enum apx_kcat apx_kcat_of(const char *cat);
void apx_kname_memcpy(const char *name, unsigned *ret_copy, unsigned *ret_src, unsigned *ret_dst);
unsigned apx_kname_mem_kind(const char *name);		/* "Memset (Device)" -> device */
unsigned apx_kname_sync_kind(const char *kind);		/* "Stream Sync" -> stream, 0 unknown */
unsigned apx_kname_api_sync(const char *api);		/* cudaStreamSynchronize -> stream */
int apx_kname_api_async(const char *api);		/* 1 ...Memcpy/Memset...Async, 0 sync, -1 n/a */

/* kineto_emit.c: pass 2, one event -> records; the thread/process records at the end. */
int apx_ki_emit(struct apx_ki *ki, const struct apx_kev *ev);
int apx_ki_emit_threads(struct apx_ki *ki);
/* kineto_scan.c: pass 1, one event -> the facts of struct apx_ki. */
int apx_ki_scan(struct apx_ki *ki, const struct apx_kev *ev);
uint8_t apx_ki_corr_get(const struct apx_ki *ki, uint64_t corr);
/* kineto_devices.c: pass 2, the deviceProperties array -> DEVICE records. */
int apx_ki_devices(struct apx_ki *ki, const struct apx_jp_tok *tok);
/* kineto_facts.c: the imported_from and degraded key/values. */
int apx_ki_facts(struct apx_ki *ki);

/* kineto_walk.c: one pass over the document (ki->pass says which). */
int apx_ki_walk(struct apx_ki *ki, const char *json, size_t len);

/* kineto_input.c: the file's JSON text, malloc'ed; regular files only. 0, 1 when it was
 * gunzipped, or negative errno (diag set). */
int apx_ki_read_file(const char *path, char **ret_buf, size_t *ret_len, struct apx_diag *diag);

#endif /* APX_IMPORT_KINETO_INT_H */
