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

struct apx_exporter {
	const char *name;		/* the --format value */
	const char *ext;		/* default file name ending, with the dot */
	const char *summary;		/* one line for --help */
	/* Bytes the file will take, roughly (said before writing; warned above 500 MB). */
	uint64_t (*estimate)(const struct apx_store *st);
	/* Write the whole store to path (a new file the caller renames into place). */
	int (*write)(struct apx_store *st, const char *path, struct apx_diag *diag);
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
/* Open path for writing (O_EXCL: it is a fresh temporary name) as a stdio stream. */
int apx_export_fopen(const char *path, FILE **ret_f, struct apx_diag *diag);
/* fclose; a failed write (at any time) or close gives its real -errno ("write failed: No
 * space left on device" in the diag). */
int apx_export_fclose(FILE *f, const char *path, struct apx_diag *diag);

#endif
