/*
 * sqlite.h - what the SQLite exporter (sqlite.c) shares with its helpers: the schema it
 * creates (sqlite_schema.c: tables in the shape `nsys export --type sqlite` writes, apx's own
 * tables, the enum lookup tables, the indices; docs/export.md shows the same text), batched
 * inserts (sqlite_rows.c), the kernel base names of the shortName column (kname.c), the Python
 * stacks' tables (sqlite_stacks.c), the NCCL collectives' (sqlite_nccl.c) and the tables
 * nsys's tools probe with the kernels' CUDA graph ids (sqlite_nsys.c).
 * Internal to lib/export; single-threaded.
 */
#ifndef APX_EXPORT_SQLITE_H
#define APX_EXPORT_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/* CREATE TABLE statements, in the order they are run; NULL-terminated. */
extern const char *const apx_sq_tables[];
/* INSERT statements that fill the ENUM_* lookup tables; NULL-terminated. */
extern const char *const apx_sq_enums[];
/* CREATE INDEX statements (start, correlationId), run before the rows; NULL-terminated. */
extern const char *const apx_sq_indices[];

/* The Python stacks' tables (sqlite_stacks.c: CUDA_CALLCHAINS, COMPOSITE_EVENTS, the
 * SAMPLING_CALLCHAINS view, ENUM_SAMPLING_THREAD_STATE), run after the ones above, each list
 * after its kind; NULL-terminated. */
extern const char *const apx_sq_stack_tables[];
extern const char *const apx_sq_stack_enums[];
extern const char *const apx_sq_stack_indices[];
/* Their rows: every stack's frames, every thread sample (globalTid: gtid[store thread]). 0, or
 * the SQLite result code with *ret_table the table it failed on. */
struct apx_store;
int apx_sq_write_stacks(const struct apx_store *st, sqlite3 *db, const int64_t *gtid,
			const char **ret_table);

/* NCCL collectives (sqlite_nccl.c: NCCL_COLLECTIVES and its ENUM_NCCL_* tables, its indices),
 * run after the stacks' lists; NULL-terminated. Their rows: one per collective of the store,
 * nameId from name_ids[func] (StringIds ids of apx_export_nccl_api_name()). 0, or the SQLite
 * result code. */
extern const char *const apx_sq_nccl_tables[];
extern const char *const apx_sq_nccl_enums[];
extern const char *const apx_sq_nccl_indices[];
int apx_sq_write_nccl(const struct apx_store *st, sqlite3 *db, const uint32_t *name_ids);

/* What nsys's tools probe (sqlite_nsys.c: META_DATA_EXPORT, TARGET_INFO_SESSION_START_TIME,
 * TARGET_INFO_SYSTEM_ENV, TARGET_INFO_CUDA_DEVICE, TARGET_INFO_GPU_METRICS, GPU_METRICS), run
 * after the NCCL lists; NULL-terminated. Their rows: 0, or the SQLite result code with
 * *ret_table the table it failed on. */
extern const char *const apx_sq_nsys_tables[];
extern const char *const apx_sq_nsys_indices[];
int apx_sq_write_nsys(const struct apx_store *st, sqlite3 *db, const char **ret_table);
/* The CUDA graph ids of the store's kernels, read again from the trace files' KERNEL chunks:
 * *ret_graph[2 i] the graph id of kernel i, [2 i + 1] its node id, 0 = not a graph's; NULL
 * (and 0) when no kernel has one. Free with free(). 0 or -ENOMEM. */
int apx_sq_graph_ids(const struct apx_store *st, uint64_t **ret_graph);

/* nsys's ids for apx's enums (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND). */
unsigned apx_sq_copy_kind(unsigned apx_copy_kind);
unsigned apx_sq_mem_kind(unsigned apx_mem_kind);

/* The base name of a (demangled) kernel name, as nsys's shortName: no return type, scope,
 * template arguments or parameters ("void at::native::reduce_kernel<512, 1>(...)" ->
 * "reduce_kernel"). A name that is not C++ comes back whole. */
const char *apx_sq_short_name(const char *name, char *buf, size_t cap);

/* Rows of one table, inserted APX_SQ_BATCH at a time by one prepared multi-row INSERT (less
 * of SQLite's per-statement work: 15% less CPU on 10 M kernels, bench/RESULTS.md). Put a
 * row's columns with apx_sq_put_*, end it with apx_sq_row; texts must stay valid until the
 * rows are in (apx_sq_flush puts them in at once). */
#define APX_SQ_BATCH 64

struct apx_sq_cell {
	int kind;			/* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_NULL */
	int len;
	union {
		int64_t i;
		double d;
		const char *p;
	} u;
};

struct apx_sq_tab {
	sqlite3_stmt *one, *many;
	int ncols, n;			/* n: rows waiting in cells */
	struct apx_sq_cell *cells;	/* APX_SQ_BATCH rows of ncols */
};

/* Prepare the INSERTs of table (ncols columns). 0, or the SQLite result code. */
int apx_sq_tab_open(sqlite3 *db, struct apx_sq_tab *t, const char *table, int ncols);
void apx_sq_tab_close(struct apx_sq_tab *t);

static inline struct apx_sq_cell *apx_sq_cell(struct apx_sq_tab *t, int col)
{
	return &t->cells[t->n * t->ncols + col];
}

static inline void apx_sq_put_i(struct apx_sq_tab *t, int col, int64_t v)
{
	*apx_sq_cell(t, col) = (struct apx_sq_cell){ .kind = SQLITE_INTEGER, .u.i = v };
}

static inline void apx_sq_put_null(struct apx_sq_tab *t, int col)
{
	apx_sq_cell(t, col)->kind = SQLITE_NULL;
}

static inline void apx_sq_put_d(struct apx_sq_tab *t, int col, double v)
{
	*apx_sq_cell(t, col) = (struct apx_sq_cell){ .kind = SQLITE_FLOAT, .u.d = v };
}

static inline void apx_sq_put_t(struct apx_sq_tab *t, int col, const char *p, size_t len)
{
	*apx_sq_cell(t, col) = (struct apx_sq_cell){ .kind = SQLITE_TEXT, .len = (int)len,
						    .u.p = p };
}

/* n integers from column first; bit i of nulls set: column first + i is NULL instead. */
void apx_sq_put_ints(struct apx_sq_tab *t, int first, int n, const int64_t *v, uint32_t nulls);

/* End the row and insert the batch when it is full; insert the rows waiting (at the end, or
 * before the texts they point to change). 0, or the SQLite result code of a failed insert. */
int apx_sq_row(struct apx_sq_tab *t);
int apx_sq_flush(struct apx_sq_tab *t);

#endif
