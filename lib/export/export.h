/*
 * export.h - the exporters: each turns the event store (lib/analysis/store.h) into a file a
 * viewer or a query tool reads. One row of the table in export.c each: Perfetto's native
 * protobuf (perfetto.c), Chrome trace / Kineto JSON (chrome.c), an nsys-like SQLite database
 * (sqlite.c, when libsqlite3 was found). Called by `apx export` (cli/cmd_export.c). Exporters
 * never log: they return negative errno and say what and where in a diag.
 */
#ifndef APX_EXPORT_H
#define APX_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/store.h"

struct apx_export_waits;

struct apx_exporter {
	const char *name;		/* the --format value */
	const char *ext;		/* default file name ending, with the dot */
	const char *summary;		/* one line for --help */
	/* Bytes the file will take, roughly (said before writing; warned above 500 MB). */
	uint64_t (*estimate)(const struct apx_store *st);
	/* Write the whole store to path (a new file the caller renames into place), with the
	 * stream waits of waits (apx_export_open; NULL: none) where the format draws them. */
	int (*write)(struct apx_store *st, const struct apx_export_waits *waits, const char *path,
		     struct apx_diag *diag);
};

/* The exporter called name, or NULL. */
const struct apx_exporter *apx_exporter_find(const char *name);
/* The table, for --help: *ret_n rows. */
const struct apx_exporter *const *apx_exporters(size_t *ret_n);

/* ---- shared by the exporters (export.c) ------------------------------------------------- */

/* Times of the store on the export's clock: ns since the run's start. */
static inline uint64_t apx_export_rel_ns(const struct apx_store *st, uint64_t t)
{
	return t > st->run_start_ns ? t - st->run_start_ns : 0;
}

/* A kernel name for humans: demangled when it is a C++ name (lib/analysis/demangle.c). */
const char *apx_export_kernel_name(const struct apx_store *st, uint32_t name, char *buf,
				   size_t cap);
/* An API, marker or thread name as text (borrowed store text copied with a NUL): valid UTF-8,
 * bytes that are not UTF-8 as U+FFFD and a NUL byte as "\x00" (apx_utf8_sanitize). */
const char *apx_export_text(struct apx_es_text t, char *buf, size_t cap);
/* "GPU 0 (NVIDIA H200)" style label of a store device. */
const char *apx_export_device_label(const struct apx_store *st, uint32_t dev, char *buf,
				    size_t cap);
/* The run's start on the wall clock, ns since the epoch (run_start_ns + the first file's
 * realtime offset): 0, or -EOVERFLOW when it is not in 0..INT64_MAX (a damaged or hostile
 * header); the exporter then leaves it out and says so in the file. */
int apx_export_utc_start_ns(const struct apx_store *st, int64_t *ret_ns);
/* ---- cross-stream waits (export.c) --------------------------------------------------------- */

/* One cross-stream dependency of the steady window (apx report's "cross-stream waits", the
 * what-if graph's event-wait edges: lib/analysis/whatif/whatif.h) as two GPU events of this
 * store: type << 48 | column index, for the awaited operation and the one that waited. */
struct apx_export_wait {
	uint64_t awaited, waiting;
};
#define APX_EXPORT_WAIT_KEY(type, i) ((uint64_t)(type) << 48 | (uint64_t)(i))

/* The waits of an export's store (apx_export_open): w[0..n) sorted by awaited, then waiting;
 * NULL with n 0: none. The exporters draw them (walk.h). */
struct apx_export_waits {
	struct apx_export_wait *w;
	size_t n;
};

/* apx_store_open_with (the store's files opened by open_file, built under opts) and, with
 * ret_waits (NULL: not wanted), their waits found in the same pass: each file is opened and
 * read once, into the store and into apx report's model (its what-if graph needs the steady
 * window, the steps and the streams' order), whose own store (the twin: every event, each
 * file's clock) borrows the readers; the model is freed before it returns. Each pair is
 * matched to the store's events by file, type, CUDA stream and start time on the file's own
 * clock; pairs with an end the store left out (--from/--to/--min-dur) are dropped. No waits
 * (ret_waits->w NULL, n 0, the caller's to free otherwise): more files than the model takes,
 * a model that cannot be finished (no steady window), no wait. 0 or -errno (diag). */
int apx_export_open(const char *const *paths, size_t npaths, const struct apx_store_opts *opts,
		    int (*open_file)(const char *path, struct apx_reader **ret,
				     struct apx_diag *diag),
		    struct apx_export_waits *ret_waits, struct apx_store **ret_store,
		    struct apx_diag *diag);

/* ---- distributed runs and NCCL collectives (nccl.c) ---------------------------------------- */

/* The rank identity of an export: rank and local rank of its files when they all have one
 * rank (else the lowest rank's, several = 1), else -1 and then, when the trace has
 * collectives, the rank in its largest communicator; world: the largest header world size,
 * else the largest communicator, else the number of distinct ranks; 0 = unknown. */
struct apx_export_dist {
	int64_t rank, local_rank;
	uint64_t world;
	int several;			/* files of more than one rank (a merged export) */
	size_t ncomms;			/* distinct communicators of the collectives */
};
void apx_export_dist_info(const struct apx_store *st, struct apx_export_dist *ret);

/* Collectives matched to the NCCL kernels CUPTI recorded (names starting "nccl"): a collective
 * with GPU times belongs to the kernel of its file (and device) that overlaps its GPU interval
 * most (10 us of slack for the GPU timer's conversion); several collectives of one group may
 * share a kernel. Collectives without GPU times match nothing. */
struct apx_export_nccl {
	uint32_t *kernel_of;		/* per collective: store kernel index, UINT32_MAX none */
	uint64_t *pairs;		/* kernel << 32 | collective, sorted: kernel's collectives */
	size_t npairs;
};
int apx_export_nccl_match(const struct apx_store *st, struct apx_export_nccl *m);
void apx_export_nccl_release(struct apx_export_nccl *m);
/* The collectives of kernel k: the first (in record order) and how many; 0 when none. */
size_t apx_export_nccl_of_kernel(const struct apx_export_nccl *m, size_t k, size_t *ret_first);

/* Names: PyTorch's c10d op ("allreduce", Kineto's "Collective name"), NCCL's API function
 * ("ncclAllReduce", as NCCL's NVTX ranges name them), PyTorch's dtype ("BFloat16", Kineto's
 * "dtype"; "" unknown). */
const char *apx_export_nccl_c10d_name(unsigned func);
const char *apx_export_nccl_api_name(unsigned func);
const char *apx_export_nccl_torch_dtype(unsigned dtype);
/* Elements in and out of one rank, as PyTorch's "In msg nelems"/"Out msg nelems" count them:
 * all-gather's output is count x nranks, reduce-scatter's input, send has no output. */
void apx_export_nccl_nelems(unsigned func, uint64_t count, uint32_t nranks, uint64_t *ret_in,
			    uint64_t *ret_out);

/* Open path for writing (O_EXCL: it is a fresh temporary name) as a stdio stream. */
int apx_export_fopen(const char *path, FILE **ret_f, struct apx_diag *diag);
/* fclose; a failed write (at any time) or close gives its real -errno ("write failed: No
 * space left on device" in the diag). */
int apx_export_fclose(FILE *f, const char *path, struct apx_diag *diag);

#endif
