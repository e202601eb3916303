/*
 * sqlite.c - `apx export --format sqlite`: the event store as an SQLite database in the shape
 * `nsys export --type sqlite` writes (schema: sqlite_schema.c, docs/export.md), so that pandas
 * and sqlite3 queries written for Nsight Systems run on apx traces. One transaction, batched
 * prepared inserts per table (sqlite_rows.c), no journal and no fsync (the file is a fresh
 * temporary name that cmd_export renames into place only when complete).
 *
 * Identities: globalPid = file << 48 | (pid & 0xffffff) << 24 and globalTid = globalPid |
 * (tid & 0xffffff), where file is the index of the trace among the inputs (0 for one file),
 * so nsys's `globalTid / 0x1000000 % 0x1000000` is the pid and `globalTid % 0x1000000` the
 * tid, while two processes of the same pid in different files stay apart. A thread whose
 * globalTid so made equals an earlier thread's (tids that share their low 24 bits: nsys packs
 * 24) gets 1 << 62 | its store thread index << 24 | (tid & 0xffffff) instead: unique (file <
 * 4096 keeps bit 62 clear in the others; the index is below 2^32), its low 24 bits still the
 * tid's, its THREADS row's globalPid and tid columns exact (global_tids()). The tid is the OS
 * tid wherever the trace pairs CUPTI's pthread id of a thread with it (threads.c): such a thread
 * takes its OS thread's globalTid and has no THREADS row of its own. StringIds: ids
 * below the store's string count are the store's strings (kernel names as CUPTI reported
 * them, API and NVTX names); demangled and base kernel names and thread names come after.
 * The tables nsys's tools probe and the kernels' CUDA graph ids: sqlite_nsys.c.
 * Called through the exporter table (export.c); built only when libsqlite3 was found.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <apx/version.h>

#include "base/gpu_uuid.h"
#include "export/export.h"
#include "export/sqlite.h"
#include "export/stacktext.h"
#include "export/walk.h"

#include "base/banned.h"

#define NO_ID UINT32_MAX

/* A text added to StringIds beyond the store's strings. */
struct xstr {
	uint64_t hash;
	char *text;
	uint32_t id;
};

enum { T_META, T_STR, T_PROC, T_THREAD, T_TNAME, T_GPU, T_KERNEL, T_COPY, T_MEMSET, T_API,
       T_SYNC, T_NVTX, T_SERIES, T_COUNTER, T__COUNT };

static const struct {
	const char *name;
	int ncols;
} tables[T__COUNT] = {
	[T_META] = { "META", 2 },
	[T_STR] = { "StringIds", 2 },
	[T_PROC] = { "PROCESSES", 7 },
	[T_THREAD] = { "THREADS", 4 },
	[T_TNAME] = { "ThreadNames", 3 },
	[T_GPU] = { "TARGET_INFO_GPU", 11 },
	[T_KERNEL] = { "CUPTI_ACTIVITY_KIND_KERNEL", 22 },
	[T_COPY] = { "CUPTI_ACTIVITY_KIND_MEMCPY", 13 },
	[T_MEMSET] = { "CUPTI_ACTIVITY_KIND_MEMSET", 11 },
	[T_API] = { "CUPTI_ACTIVITY_KIND_RUNTIME", 8 },
	[T_SYNC] = { "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", 11 },
	[T_NVTX] = { "NVTX_EVENTS", 11 },
	[T_SERIES] = { "COUNTER_SERIES", 5 },
	[T_COUNTER] = { "COUNTER_EVENTS", 3 },
};

struct sq {
	struct apx_store *st;
	sqlite3 *db;
	struct apx_diag *diag;
	struct apx_sq_tab t[T__COUNT];
	struct xstr *xs;
	size_t xcap, xn;
	uint32_t next_id;
	uint32_t *kdem, *kshort;	/* per store string: StringIds of demangled, short name */
	int64_t *gtid;			/* per store thread: its globalTid (global_tids()) */
	uint32_t *canon;		/* per store thread: the one its OS tid names (threads.c) */
	uint64_t *graph;		/* per kernel: graph id, node id (apx_sq_graph_ids), NULL */
	char dem[16384], base[4096];
};

static int fail(struct sq *q, int rc, const char *what)
{
	int err = rc == SQLITE_NOMEM ? -ENOMEM : rc == SQLITE_FULL ? -ENOSPC : -EIO;

	if (q->diag && !q->diag->msg[0]) {
		q->diag->err = err;
		snprintf(q->diag->msg, sizeof(q->diag->msg), "sqlite: %s: %s", what,
			 q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc));
	}
	return err;
}

static int exec(struct sq *q, const char *sql)
{
	int rc = sqlite3_exec(q->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : fail(q, rc, sql);
}

/* End a row of table i (flush: insert it now, its texts are about to change). */
static int row(struct sq *q, int i, int flush)
{
	int rc = apx_sq_row(&q->t[i]);

	if (rc == SQLITE_OK && flush)
		rc = apx_sq_flush(&q->t[i]);
	return rc == SQLITE_OK ? 0 : fail(q, rc, tables[i].name);
}

/* ---- identities -------------------------------------------------------------------------- */

static int64_t gpid(const struct apx_store *st, uint32_t file)
{
	return (int64_t)((uint64_t)file << 48 | (st->files[file].pid & 0xffffff) << 24);
}

static int64_t gtid(const struct sq *q, uint32_t thread)
{
	return q->gtid[thread];
}

static int cmp_i64_pair(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Every store thread's globalTid (the header comment): nsys's packing of its OS tid, and for a
 * thread whose packing equals a lower-indexed thread's, 1 << 62 | index << 24 | (tid &
 * 0xffffff). A thread CUPTI named by its pthread id that the trace pairs with an OS tid
 * (threads.c) takes that thread's globalTid and has no THREADS row of its own. */
static int global_tids(struct sq *q)
{
	const struct apx_store *st = q->st;
	int64_t *pair;
	size_t n = st->nthreads, np = 0;
	int r;

	if ((r = apx_wk_thread_map(st, &q->canon, NULL)) < 0)
		return r;
	q->gtid = malloc((n ? n : 1) * sizeof(*q->gtid));
	pair = malloc((n ? n : 1) * 2 * sizeof(*pair));
	if (!q->gtid || !pair) {
		free(pair);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct apx_es_thread *t = &st->threads[i];

		q->gtid[i] = gpid(st, t->file) | (int64_t)(t->tid & 0xffffff);
		if (q->canon[i] != i)
			continue;
		pair[2 * np] = q->gtid[i];
		pair[2 * np + 1] = (int64_t)i;
		np++;
	}
	qsort(pair, np, 2 * sizeof(*pair), cmp_i64_pair);
	for (size_t i = 1; i < np; i++)
		if (pair[2 * i] == pair[2 * i - 2]) {
			size_t k = (size_t)pair[2 * i + 1];

			q->gtid[k] = (int64_t)(1ull << 62 | (uint64_t)k << 24 |
					       (st->threads[k].tid & 0xffffff));
		}
	for (size_t i = 0; i < n; i++)
		q->gtid[i] = q->gtid[q->canon[i]];
	free(pair);
	return 0;
}

static int64_t rel(const struct apx_store *st, uint64_t t)
{
	return (int64_t)apx_export_rel_ns(st, t);
}

static uint32_t ordinal(const struct apx_store *st, uint32_t stream)
{
	return st->devices[st->streams[stream].device].ordinal;
}

/* ---- strings ----------------------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h | 1;
}

static struct xstr *slot(struct sq *q, uint64_t h, const char *text)
{
	size_t j = h & (q->xcap - 1);

	while (q->xs[j].hash && (q->xs[j].hash != h || strcmp(q->xs[j].text, text)))
		j = (j + 1) & (q->xcap - 1);
	return &q->xs[j];
}

static int grow_strings(struct sq *q)
{
	struct xstr *old = q->xs;
	size_t ocap = q->xcap, cap = q->xcap ? q->xcap * 2 : 256;
	struct xstr *xs = calloc(cap, sizeof(*xs));

	if (!xs)
		return -ENOMEM;
	q->xs = xs;
	q->xcap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].hash)
			*slot(q, old[i].hash, old[i].text) = old[i];
	free(old);
	return 0;
}

/* The StringIds id of text, added on first use (its copy lives until the end). */
static int string_id(struct sq *q, const char *text, uint32_t *ret)
{
	uint64_t h = hash(text);
	struct xstr *x;
	int r;

	if ((q->xn + 1) * 2 > q->xcap && (r = grow_strings(q)) < 0)
		return r;
	x = slot(q, h, text);
	if (!x->hash) {
		x->text = strdup(text);
		if (!x->text)
			return -ENOMEM;
		x->hash = h;
		x->id = q->next_id++;
		q->xn++;
		apx_sq_put_i(&q->t[T_STR], 0, x->id);
		apx_sq_put_t(&q->t[T_STR], 1, x->text, strlen(x->text));
		if ((r = row(q, T_STR, 0)) < 0)
			return r;
	}
	*ret = x->id;
	return 0;
}

static int write_strings(struct sq *q)
{
	const struct apx_store *st = q->st;
	int r;

	for (size_t i = 0; i < st->nstrings; i++) {
		apx_sq_put_i(&q->t[T_STR], 0, (int64_t)i);
		apx_sq_put_t(&q->t[T_STR], 1, st->strings[i].p, st->strings[i].len);
		if ((r = row(q, T_STR, 0)) < 0)
			return r;
	}
	q->next_id = (uint32_t)st->nstrings;
	return 0;
}

/* The demangled and base names of store string `name` (a kernel's), as StringIds ids. */
static int kernel_names(struct sq *q, uint32_t name)
{
	struct apx_es_text raw = apx_store_string(q->st, name);
	int r;

	apx_export_kernel_name(q->st, name, q->dem, sizeof(q->dem));
	if (strlen(q->dem) == raw.len && !memcmp(q->dem, raw.p, raw.len))
		q->kdem[name] = name;
	else if ((r = string_id(q, q->dem, &q->kdem[name])) < 0)
		return r;
	apx_sq_short_name(q->dem, q->base, sizeof(q->base));
	if (!strcmp(q->base, q->dem))
		q->kshort[name] = q->kdem[name];
	else if ((r = string_id(q, q->base, &q->kshort[name])) < 0)
		return r;
	return 0;
}

/* ---- entities ---------------------------------------------------------------------------- */

static int meta(struct sq *q, const char *key, const char *value)
{
	apx_sq_put_t(&q->t[T_META], 0, key, strlen(key));
	apx_sq_put_t(&q->t[T_META], 1, value, strlen(value));
	return row(q, T_META, 1);
}

static int write_meta(struct sq *q)
{
	const struct apx_store *st = q->st;
	struct apx_export_dist d;
	int64_t utc;
	char v[64];
	int r;

	if ((r = meta(q, "apx_version", APX_VERSION)) < 0 ||
	    (r = meta(q, "schema", "apx-sqlite 1 (nsys-like; docs/export.md)")) < 0 ||
	    (r = meta(q, "time_unit", "ns since run_start_ns")) < 0)
		return r;
	snprintf(v, sizeof(v), "%" PRIu64, st->run_start_ns);
	if ((r = meta(q, "run_start_ns", v)) < 0)
		return r;
	if (apx_export_utc_start_ns(st, &utc) == 0) {
		snprintf(v, sizeof(v), "%" PRId64, utc);
		r = meta(q, "run_start_utc_ns", v);
	} else {	/* never a negative or wrapped wall-clock time */
		r = meta(q, "note", "run_start_utc_ns left out: the trace's start on the wall clock "
			 "is out of range (a damaged header?)");
	}
	if (r < 0)
		return r;
	snprintf(v, sizeof(v), "%" PRIu64, st->run_end_ns - st->run_start_ns);
	if ((r = meta(q, "duration_ns", v)) < 0)
		return r;
	/* the rank identity (one export per rank: docs/export.md, "Several ranks") */
	apx_export_dist_info(st, &d);
	if (d.rank >= 0 && !d.several) {
		snprintf(v, sizeof(v), "%" PRId64, d.rank);
		if ((r = meta(q, "rank", v)) < 0)
			return r;
		if (d.local_rank >= 0) {
			snprintf(v, sizeof(v), "%" PRId64, d.local_rank);
			if ((r = meta(q, "local_rank", v)) < 0)
				return r;
		}
	}
	if (d.rank >= 0 && d.world) {
		snprintf(v, sizeof(v), "%" PRIu64, d.world);
		if ((r = meta(q, "world_size", v)) < 0)
			return r;
	}
	for (size_t i = 0; i < st->nfiles; i++)
		if ((r = meta(q, "input", st->files[i].path)) < 0)
			return r;
	return 0;
}

static int write_processes(struct sq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[T_PROC];

	for (uint32_t i = 0; i < st->nfiles; i++) {
		const struct apx_es_file *f = &st->files[i];
		const struct apx_es_text *host = &st->hosts[f->host].name;
		int64_t v[4] = { gpid(st, i), (int64_t)f->pid, (int64_t)f->ppid, f->rank };
		size_t n = f->argv.len < sizeof(q->dem) ? f->argv.len : sizeof(q->dem) - 1;
		int r;

		for (size_t j = 0; j < n; j++)		/* arguments: NUL-terminated -> spaces */
			q->dem[j] = f->argv.p[j] ? f->argv.p[j] : ' ';
		while (n && q->dem[n - 1] == ' ')
			n--;
		apx_sq_put_ints(t, 0, 4, v, f->rank < 0 ? 1u << 3 : 0);
		apx_sq_put_t(t, 4, host->p, host->len);
		apx_sq_put_t(t, 5, q->dem, n);
		apx_sq_put_t(t, 6, f->path, strlen(f->path));
		if ((r = row(q, T_PROC, 1)) < 0)
			return r;
	}
	return 0;
}

static int write_threads(struct sq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[T_THREAD];
	uint32_t id;
	int r;

	for (uint32_t i = 0; i < st->nthreads; i++) {
		const struct apx_es_thread *th = &st->threads[i];
		int64_t v[3] = { gtid(q, i), gpid(st, th->file), (int64_t)th->tid };

		if (q->canon[i] != i)		/* CUPTI's id of a thread whose OS tid is known */
			continue;
		apx_sq_put_ints(t, 0, 3, v, 0);
		if (th->name.len)
			apx_sq_put_t(t, 3, th->name.p, th->name.len);
		else
			apx_sq_put_null(t, 3);
		if ((r = row(q, T_THREAD, 0)) < 0)
			return r;
		if (!th->name.len)
			continue;
		apx_export_text(th->name, q->base, sizeof(q->base));
		if ((r = string_id(q, q->base, &id)) < 0)
			return r;
		apx_sq_put_ints(&q->t[T_TNAME], 0, 3, (int64_t[]){ id, 0, v[0] }, 1u << 1);
		if ((r = row(q, T_TNAME, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_gpus(struct sq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[T_GPU];
	int r;

	for (size_t i = 0; i < st->ndevices; i++) {
		const struct apx_es_device *d = &st->devices[i];
		const struct apx_es_text *host = &st->hosts[d->host].name;
		char uuid[APX_GPU_UUID_TEXT];
		const uint64_t u[7] = { d->mem_bytes, d->sm_count, d->cc_major, d->cc_minor,
					d->l2_bytes, d->mem_bw_bps, d->clock_khz };
		uint32_t nulls = 0;
		int64_t v[7];

		/* INTEGER is signed 64-bit: a larger value (a hostile device record) is NULL, as is
		 * an unknown clock (0 kHz) and one whose Hz do not fit */
		for (int k = 0; k < 7; k++) {
			v[k] = (int64_t)u[k];
			if (u[k] > INT64_MAX)
				nulls |= 1u << k;
		}
		if (!d->clock_khz || __builtin_mul_overflow(v[6], 1000, &v[6]))
			nulls |= 1u << 6;

		apx_gpu_uuid_text(uuid, d->uuid);
		apx_sq_put_i(t, 0, d->ordinal);
		apx_sq_put_t(t, 1, host->p, host->len);
		apx_sq_put_t(t, 2, d->name.p, d->name.len);
		if (d->has_uuid)
			apx_sq_put_t(t, 3, uuid, strlen(uuid));
		else
			apx_sq_put_null(t, 3);
		apx_sq_put_ints(t, 4, 7, v, nulls);
		if ((r = row(q, T_GPU, 1)) < 0)
			return r;
	}
	return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

/* A callchainId cell: the store stack (stacks[] + 1 = CUDA_CALLCHAINS id), NULL for none. */
static void stack_col(struct apx_sq_tab *t, int col, const struct apx_store *st, uint32_t s)
{
	if (s && s <= st->nstacks)
		apx_sq_put_i(t, col, s);
	else
		apx_sq_put_null(t, col);
}

static int write_kernels(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_kernels *k = &st->k;
	struct apx_sq_tab *t = &q->t[T_KERNEL];
	int r;

	for (size_t i = 0; i < k->n; i++) {
		const struct apx_es_launch *l = &st->launches[k->launch[i]];
		uint32_t name = k->name[i] < st->nstrings ? k->name[i] : 0;
		const struct apx_es_stream *sm = &st->streams[k->stream[i]];
		int64_t v[19] = {
			rel(st, k->start[i]), rel(st, apx_store_end(st, APX_ES_KERNEL, i)), ordinal(st, k->stream[i]), 0,
			(int64_t)sm->id, k->corr[i], gpid(st, sm->file), 0, 0, name,
			l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
			l->regs, l->smem_static, l->smem_dynamic,
		};

		if (q->kdem[name] == NO_ID && (r = kernel_names(q, name)) < 0)
			return r;
		v[7] = q->kdem[name];
		v[8] = q->kshort[name];
		apx_sq_put_ints(t, 0, 19, v, 1u << 3);
		stack_col(t, 19, st, k->stack[i]);
		for (int g = 0; g < 2; g++) {	/* graphNodeId, graphId */
			uint64_t id = q->graph ? q->graph[2 * i + 1 - g] : 0;

			if (id && id <= INT64_MAX)
				apx_sq_put_i(t, 20 + g, (int64_t)id);
			else
				apx_sq_put_null(t, 20 + g);
		}
		if ((r = row(q, T_KERNEL, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_copies(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_copies *c = &st->c;
	int r;

	for (size_t i = 0; i < c->n; i++) {
		const struct apx_es_stream *sm = &st->streams[c->stream[i]];
		int64_t v[12] = {
			rel(st, c->start[i]), rel(st, c->end[i]), ordinal(st, c->stream[i]), 0,
			(int64_t)sm->id, c->corr[i], gpid(st, sm->file), (int64_t)c->bytes[i],
			apx_sq_copy_kind(c->kind[i]), apx_sq_mem_kind(c->src[i]),
			apx_sq_mem_kind(c->dst[i]), c->flags[i] & 1,
		};

		apx_sq_put_ints(&q->t[T_COPY], 0, 12, v, 1u << 3);
		stack_col(&q->t[T_COPY], 12, st, c->stack[i]);
		if ((r = row(q, T_COPY, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_memsets(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_memsets *m = &st->s;
	int r;

	for (size_t i = 0; i < m->n; i++) {
		const struct apx_es_stream *sm = &st->streams[m->stream[i]];
		int64_t v[10] = {
			rel(st, m->start[i]), rel(st, m->end[i]), ordinal(st, m->stream[i]), 0,
			(int64_t)sm->id, m->corr[i], gpid(st, sm->file), 0, (int64_t)m->bytes[i], 0,
		};

		apx_sq_put_ints(&q->t[T_MEMSET], 0, 10, v, 1u << 3 | 1u << 7 | 1u << 9);
		stack_col(&q->t[T_MEMSET], 10, st, m->stack[i]);
		if ((r = row(q, T_MEMSET, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_apis(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_apis *a = &st->a;
	int r;

	for (size_t i = 0; i < a->n; i++) {
		int64_t v[8] = {
			rel(st, a->start[i]), rel(st, a->end[i]), a->domain[i] == APX_API_DRIVER,
			gtid(q, a->thread[i]), a->corr[i], a->name[i], 0, 0,
		};

		apx_sq_put_ints(&q->t[T_API], 0, 8, v, 1u << 6 | 1u << 7);
		stack_col(&q->t[T_API], 7, st, apx_stacktext_api_stack(q->st, i));
		if ((r = row(q, T_API, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_syncs(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_syncs *y = &st->y;
	int r;

	for (size_t i = 0; i < y->n; i++) {
		uint32_t sm = y->stream[i];
		int on = sm < st->nstreams;
		uint16_t file = st->threads[y->thread[i]].file;
		int64_t v[10] = {
			rel(st, y->start[i]), rel(st, y->end[i]), on ? ordinal(st, sm) : 0, 0,
			on ? (int64_t)st->streams[sm].id : 0, 0, gpid(st, file), y->kind[i], 0,
			gtid(q, y->thread[i]),
		};
		uint32_t nulls = 1u << 3 | 1u << 5 | 1u << 8 | (on ? 0 : 1u << 2 | 1u << 4);

		apx_sq_put_ints(&q->t[T_SYNC], 0, 10, v, nulls);
		stack_col(&q->t[T_SYNC], 10, st, y->stack[i]);
		if ((r = row(q, T_SYNC, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_markers(struct sq *q)
{
	const struct apx_store *st = q->st;
	const struct apx_es_markers *m = &st->mk;
	struct apx_sq_tab *t = &q->t[T_NVTX];
	int r;

	for (size_t i = 0; i < m->n; i++) {
		struct apx_es_text text = apx_store_string(st, m->name[i]);
		int mark = m->start[i] == m->end[i];
		int64_t v[11] = {
			rel(st, m->start[i]), rel(st, m->end[i]), mark ? 34 : 59, 0, 0, 0, 0,
			gtid(q, m->thread[i]), 0, m->name[i], 0,
		};

		/* rangeId, category, color, endGlobalTid, domainId: not kept; text: column 6 */
		apx_sq_put_ints(t, 0, 11, v, 0xf << 3 | 1u << 8 | 1u << 10 | (mark ? 1u << 1 : 0));
		apx_sq_put_t(t, 6, text.p, text.len);
		if ((r = row(q, T_NVTX, 0)) < 0)
			return r;
	}
	return 0;
}

static int write_counters(struct sq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[T_SERIES], *e = &q->t[T_COUNTER];
	int r;

	for (size_t i = 0; i < st->nseries; i++) {
		const struct apx_es_series *se = &st->series[i];
		int dev = se->device < st->ndevices;
		int64_t v[2] = { dev ? st->devices[se->device].ordinal : 0, gpid(st, se->file) };

		apx_sq_put_i(t, 0, (int64_t)i);
		if (se->is_memory) {
			apx_sq_put_t(t, 1, "device memory", 13);
			apx_sq_put_t(t, 2, "bytes", 5);
		} else {
			apx_sq_put_t(t, 1, se->name.p, se->name.len);
			apx_sq_put_t(t, 2, se->unit.p, se->unit.len);
		}
		if (!se->is_memory && !se->unit.len)
			apx_sq_put_null(t, 2);
		apx_sq_put_ints(t, 3, 2, v, dev ? 0 : 1);
		if ((r = row(q, T_SERIES, 0)) < 0)
			return r;
	}
	for (size_t i = 0; i < st->ct.n; i++) {
		apx_sq_put_i(e, 0, rel(st, st->ct.ts[i]));
		apx_sq_put_i(e, 1, st->ct.series[i]);
		apx_sq_put_d(e, 2, st->ct.value[i]);
		if ((r = row(q, T_COUNTER, 0)) < 0)
			return r;
	}
	return 0;
}

/* ---- the file ---------------------------------------------------------------------------- */

static int fill(struct sq *q)
{
	uint32_t nccl_names[APX_COLL__COUNT] = { 0 };
	int r, rc;

	for (int i = 0; apx_sq_tables[i]; i++)
		if ((r = exec(q, apx_sq_tables[i])) < 0)
			return r;
	for (int i = 0; apx_sq_stack_tables[i]; i++)
		if ((r = exec(q, apx_sq_stack_tables[i])) < 0)
			return r;
	for (int i = 0; apx_sq_nccl_tables[i]; i++)
		if ((r = exec(q, apx_sq_nccl_tables[i])) < 0)
			return r;
	for (int i = 0; apx_sq_nsys_tables[i]; i++)
		if ((r = exec(q, apx_sq_nsys_tables[i])) < 0)
			return r;
	for (int i = 0; apx_sq_enums[i]; i++)
		if ((r = exec(q, apx_sq_enums[i])) < 0)
			return r;
	for (int i = 0; apx_sq_stack_enums[i]; i++)
		if ((r = exec(q, apx_sq_stack_enums[i])) < 0)
			return r;
	for (int i = 0; apx_sq_nccl_enums[i]; i++)
		if ((r = exec(q, apx_sq_nccl_enums[i])) < 0)
			return r;
	/* before the rows: they come in start order, so the indices grow by appending, which
	 * costs less than sorting them afterwards (bench/RESULTS.md) */
	for (int i = 0; apx_sq_indices[i]; i++)
		if ((r = exec(q, apx_sq_indices[i])) < 0)
			return r;
	for (int i = 0; apx_sq_stack_indices[i]; i++)
		if ((r = exec(q, apx_sq_stack_indices[i])) < 0)
			return r;
	for (int i = 0; apx_sq_nccl_indices[i]; i++)
		if ((r = exec(q, apx_sq_nccl_indices[i])) < 0)
			return r;
	for (int i = 0; apx_sq_nsys_indices[i]; i++)
		if ((r = exec(q, apx_sq_nsys_indices[i])) < 0)
			return r;
	for (int i = 0; i < T__COUNT; i++)
		if ((rc = apx_sq_tab_open(q->db, &q->t[i], tables[i].name, tables[i].ncols)))
			return fail(q, rc, tables[i].name);
	if ((r = write_meta(q)) < 0 || (r = write_strings(q)) < 0 ||
	    (r = write_processes(q)) < 0 || (r = write_threads(q)) < 0 ||
	    (r = write_gpus(q)) < 0 || (r = write_kernels(q)) < 0 || (r = write_copies(q)) < 0 ||
	    (r = write_memsets(q)) < 0 || (r = write_apis(q)) < 0 || (r = write_syncs(q)) < 0 ||
	    (r = write_markers(q)) < 0 || (r = write_counters(q)) < 0)
		return r;
	for (unsigned f = 0; q->st->coll.n && f < APX_COLL__COUNT; f++)	/* NCCL_COLLECTIVES.nameId */
		if ((r = string_id(q, apx_export_nccl_api_name(f), &nccl_names[f])) < 0)
			return r;
	for (int i = 0; i < T__COUNT; i++)
		if ((rc = apx_sq_flush(&q->t[i])))
			return fail(q, rc, tables[i].name);
	{
		const char *what = "";

		if ((rc = apx_sq_write_stacks(q->st, q->db, q->gtid, &what)))
			return fail(q, rc, what);
	}
	if ((rc = apx_sq_write_nccl(q->st, q->db, nccl_names)))
		return fail(q, rc, "NCCL_COLLECTIVES");
	{
		const char *what = "";

		if ((rc = apx_sq_write_nsys(q->st, q->db, &what)))
			return fail(q, rc, what);
	}
	return 0;
}

static int sqlite_write(struct apx_store *st, const struct apx_export_waits *waits,
			const char *path, struct apx_diag *diag)
{
	static const char pragmas[] = "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; "
				      "PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; "
				      "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -262144; "
				      "BEGIN";
	struct sq *q = calloc(1, sizeof(*q));
	size_t n = st->nstrings + 1;
	FILE *f;
	int r, rc;

	(void)waits;	/* no flows in the database */
	if (!q)
		return -ENOMEM;
	q->st = st;
	q->diag = diag;
	/* create the file first: a missing or read-only folder is said as for the other formats */
	if ((r = apx_export_fopen(path, &f, diag)) < 0)
		goto out;
	fclose(f);
	q->kdem = malloc(n * sizeof(*q->kdem));
	q->kshort = malloc(n * sizeof(*q->kshort));
	if (!q->kdem || !q->kshort) {
		r = -ENOMEM;
		goto out;
	}
	memset(q->kdem, 0xff, n * sizeof(*q->kdem));
	if ((r = global_tids(q)) < 0 || (r = apx_sq_graph_ids(st, &q->graph)) < 0)
		goto out;
	rc = sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		r = fail(q, rc, "open");
		goto out;
	}
	if ((r = exec(q, pragmas)) < 0 || (r = fill(q)) < 0)
		goto out;
	r = exec(q, "COMMIT");
out:
	for (int i = 0; i < T__COUNT; i++)
		apx_sq_tab_close(&q->t[i]);
	if (q->db && sqlite3_close(q->db) != SQLITE_OK && r >= 0)
		r = -EIO;
	for (size_t i = 0; i < q->xcap; i++)
		free(q->xs[i].text);
	free(q->xs);
	free(q->kdem);
	free(q->kshort);
	free(q->gtid);
	free(q->canon);
	free(q->graph);
	free(q);
	return r;
}

/* Bytes a row takes on disk with its share of the indices (bench/export: 915 MB for 10 M
 * kernels, 0.94 M copies, 0.16 M syncs), plus a 16 kB page per table and index. */
static uint64_t sqlite_estimate(const struct apx_store *st)
{
	uint64_t strings = 0;

	for (size_t i = 0; i < st->nstrings; i++)
		strings += st->strings[i].len * 3 + 16;
	return st->nstack_frames * 20 + st->smp.n * 40 + st->k.n * 84 + (st->c.n + st->s.n) * 75 + st->a.n * 60 + st->mk.n * 70 +
	       st->y.n * 60 + st->ct.n * 35 + strings + 32 * 16384 +
	       st->coll.n * 120 + (st->coll.n ? 6 * 16384 : 0);	/* NCCL_COLLECTIVES: estimated */
}

const struct apx_exporter apx_export_sqlite = {
	.name = "sqlite",
	.ext = ".sqlite",
	.summary = "an nsys-like SQLite database (pandas, sqlite3; docs/export.md)",
	.estimate = sqlite_estimate,
	.write = sqlite_write,
};
