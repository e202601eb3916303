/*
 * sqlite.c - `apx export --format sqlite`: the event store as an SQLite database in the shape
 * `nsys export --type sqlite` writes (schema: sqlite_schema.c, docs/export.md), so that pandas
 * and sqlite3 queries written for Nsight Systems run on apx traces. One transaction, one
 * prepared statement per table, no journal and no fsync until the end (the file is a fresh
 * temporary name that cmd_export renames into place), indices built after the rows are in.
 *
 * Identities: globalPid = file << 48 | (pid & 0xffffff) << 24 and globalTid = globalPid |
 * (tid & 0xffffff), where file is the index of the trace among the inputs (0 for one file),
 * so nsys's `globalTid / 0x1000000 % 0x1000000` is the pid and `globalTid % 0x1000000` the
 * tid, while two processes of the same pid in different files stay apart. StringIds: ids
 * below the store's string count are the store's strings (kernel names as CUPTI reported
 * them, API and NVTX names); demangled and base kernel names and thread names come after.
 * Called through the exporter table (export.c); built only when libsqlite3 was found.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <apx/version.h>

#include "export/export.h"
#include "export/sqlite.h"

#include "base/banned.h"

#define NO_ID UINT32_MAX
#define COLS_MAX 20

/* A text added to StringIds beyond the store's strings. */
struct xstr {
	uint64_t hash;
	char *text;
	uint32_t id;
};

struct sq {
	struct apx_store *st;
	sqlite3 *db;
	struct apx_diag *diag;
	sqlite3_stmt *str_ins;
	struct xstr *xs;
	size_t xcap, xn;
	uint32_t next_id;
	uint32_t *kdem, *kshort;	/* per store string: StringIds of its demangled, base name */
	char dem[16384], base[4096];
};

static int fail(struct sq *q, const char *what)
{
	int rc = sqlite3_errcode(q->db);
	int err = rc == SQLITE_NOMEM ? -ENOMEM : rc == SQLITE_FULL ? -ENOSPC : -EIO;

	if (q->diag && !q->diag->msg[0]) {
		q->diag->err = err;
		snprintf(q->diag->msg, sizeof(q->diag->msg), "sqlite: %s: %s", what,
			 sqlite3_errmsg(q->db));
	}
	return err;
}

static int exec(struct sq *q, const char *sql)
{
	return sqlite3_exec(q->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(q, sql);
}

/* A prepared "INSERT INTO table VALUES (?, ...)" of ncols columns. */
static int prep(struct sq *q, const char *table, int ncols, sqlite3_stmt **ret)
{
	char sql[256];
	int n = snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (?", table);

	for (int i = 1; i < ncols; i++)
		n += snprintf(sql + n, sizeof(sql) - (size_t)n, ", ?");
	snprintf(sql + n, sizeof(sql) - (size_t)n, ")");
	return sqlite3_prepare_v2(q->db, sql, -1, ret, NULL) == SQLITE_OK ? 0 : fail(q, table);
}

static int step(struct sq *q, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : fail(q, "insert");
}

/* Bind ncols integers (bit i of nulls set: column i is NULL) from column `first`, and step. */
static int row(struct sq *q, sqlite3_stmt *s, int first, int ncols, const int64_t *v,
	       uint32_t nulls)
{
	for (int i = 0; i < ncols; i++) {
		if (nulls >> i & 1)
			sqlite3_bind_null(s, first + i);
		else
			sqlite3_bind_int64(s, first + i, v[i]);
	}
	return step(q, s);
}

static int bind_text(sqlite3_stmt *s, int col, const char *p, size_t len)
{
	return sqlite3_bind_text(s, col, p, (int)len, SQLITE_TRANSIENT);
}

/* ---- identities -------------------------------------------------------------------------- */

static int64_t gpid(const struct apx_store *st, uint32_t file)
{
	return (int64_t)((uint64_t)file << 48 | (st->files[file].pid & 0xffffff) << 24);
}

static int64_t gtid(const struct apx_store *st, uint32_t thread)
{
	const struct apx_es_thread *t = &st->threads[thread];

	return gpid(st, t->file) | (int64_t)(t->tid & 0xffffff);
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

/* The StringIds id of text, added on first use. */
static int string_id(struct sq *q, const char *text, uint32_t *ret)
{
	uint64_t h = hash(text);
	struct xstr *x;
	int r;

	if ((q->xn + 1) * 2 > q->xcap) {
		struct xstr *old = q->xs;
		size_t ocap = q->xcap;

		q->xcap = q->xcap ? q->xcap * 2 : 256;
		q->xs = calloc(q->xcap, sizeof(*q->xs));
		if (!q->xs) {
			q->xs = old;
			q->xcap = ocap;
			return -ENOMEM;
		}
		for (size_t i = 0; i < ocap; i++)
			if (old[i].hash)
				*slot(q, old[i].hash, old[i].text) = old[i];
		free(old);
	}
	x = slot(q, h, text);
	if (!x->hash) {
		x->text = strdup(text);
		if (!x->text)
			return -ENOMEM;
		x->hash = h;
		x->id = q->next_id++;
		q->xn++;
		sqlite3_bind_int64(q->str_ins, 1, x->id);
		bind_text(q->str_ins, 2, text, strlen(text));
		if ((r = step(q, q->str_ins)) < 0)
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
		sqlite3_bind_int64(q->str_ins, 1, (int64_t)i);
		bind_text(q->str_ins, 2, st->strings[i].p, st->strings[i].len);
		if ((r = step(q, q->str_ins)) < 0)
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

static int meta(struct sq *q, sqlite3_stmt *s, const char *key, const char *value)
{
	bind_text(s, 1, key, strlen(key));
	bind_text(s, 2, value, strlen(value));
	return step(q, s);
}

static int write_meta(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	const struct apx_rec *h = apx_reader_header(st->files[0].r);
	char v[64];
	int r;

	if ((r = meta(q, s, "apx_version", APX_VERSION)) < 0 ||
	    (r = meta(q, s, "schema", "apx-sqlite 1 (nsys-like; docs/export.md)")) < 0 ||
	    (r = meta(q, s, "time_unit", "ns since run_start_ns")) < 0)
		return r;
	snprintf(v, sizeof(v), "%" PRIu64, st->run_start_ns);
	if ((r = meta(q, s, "run_start_ns", v)) < 0)
		return r;
	snprintf(v, sizeof(v), "%" PRId64,
		 (int64_t)st->run_start_ns + apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS));
	if ((r = meta(q, s, "run_start_utc_ns", v)) < 0)
		return r;
	snprintf(v, sizeof(v), "%" PRIu64, st->run_end_ns - st->run_start_ns);
	if ((r = meta(q, s, "duration_ns", v)) < 0)
		return r;
	for (size_t i = 0; i < st->nfiles; i++)
		if ((r = meta(q, s, "input", st->files[i].path)) < 0)
			return r;
	return 0;
}

static int write_processes(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	int r;

	for (uint32_t i = 0; i < st->nfiles; i++) {
		const struct apx_es_file *f = &st->files[i];
		const struct apx_es_text *host = &st->hosts[f->host].name;
		int64_t v[4] = { gpid(st, i), (int64_t)f->pid, (int64_t)f->ppid, f->rank };
		size_t n = f->argv.len;

		memcpy(q->dem, f->argv.p, n < sizeof(q->dem) ? n : sizeof(q->dem) - 1);
		n = n < sizeof(q->dem) ? n : sizeof(q->dem) - 1;
		for (size_t j = 0; j < n; j++)
			q->dem[j] = q->dem[j] ? q->dem[j] : ' ';
		while (n && q->dem[n - 1] == ' ')
			n--;
		bind_text(s, 5, host->p, host->len);
		bind_text(s, 6, q->dem, n);
		bind_text(s, 7, f->path, strlen(f->path));
		if ((r = row(q, s, 1, 4, v, f->rank < 0 ? 1u << 3 : 0)) < 0)
			return r;
	}
	return 0;
}

static int write_threads(struct sq *q, sqlite3_stmt *s, sqlite3_stmt *names)
{
	const struct apx_store *st = q->st;
	uint32_t id;
	int r;

	for (uint32_t i = 0; i < st->nthreads; i++) {
		const struct apx_es_thread *t = &st->threads[i];
		int64_t v[3] = { gtid(st, i), gpid(st, t->file), (int64_t)t->tid };

		if (t->name.len)
			bind_text(s, 4, t->name.p, t->name.len);
		else
			sqlite3_bind_null(s, 4);
		if ((r = row(q, s, 1, 3, v, 0)) < 0)
			return r;
		if (!t->name.len)
			continue;
		apx_export_text(t->name, q->base, sizeof(q->base));
		if ((r = string_id(q, q->base, &id)) < 0)
			return r;
		if ((r = row(q, names, 1, 3, (int64_t[]){ id, 0, v[0] }, 1u << 1)) < 0)
			return r;
	}
	return 0;
}

static int write_gpus(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	int r;

	for (size_t i = 0; i < st->ndevices; i++) {
		const struct apx_es_device *d = &st->devices[i];
		const struct apx_es_text *host = &st->hosts[d->host].name;
		const uint8_t *u = d->uuid;
		char uuid[64];
		int64_t v[1] = { d->ordinal };
		int64_t w[7] = { (int64_t)d->mem_bytes, d->sm_count, d->cc_major, d->cc_minor,
				 (int64_t)d->l2_bytes, (int64_t)d->mem_bw_bps,
				 (int64_t)d->clock_khz * 1000 };

		snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6],
			 u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
		bind_text(s, 2, host->p, host->len);
		bind_text(s, 3, d->name.p, d->name.len);
		if (d->has_uuid)
			bind_text(s, 4, uuid, strlen(uuid));
		else
			sqlite3_bind_null(s, 4);
		for (int j = 0; j < 7; j++)
			sqlite3_bind_int64(s, 5 + j, w[j]);
		if ((r = row(q, s, 1, 1, v, 0)) < 0)
			return r;
	}
	return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

static int write_kernels(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	const struct apx_es_kernels *k = &st->k;
	int r;

	for (size_t i = 0; i < k->n; i++) {
		const struct apx_es_launch *l = &st->launches[k->launch[i]];
		uint32_t name = k->name[i] < st->nstrings ? k->name[i] : 0;
		const struct apx_es_stream *sm = &st->streams[k->stream[i]];
		int64_t v[19];

		if (q->kdem[name] == NO_ID && (r = kernel_names(q, name)) < 0)
			return r;
		v[0] = rel(st, k->start[i]);
		v[1] = rel(st, k->end[i]);
		v[2] = ordinal(st, k->stream[i]);
		v[3] = 0;
		v[4] = (int64_t)sm->id;
		v[5] = k->corr[i];
		v[6] = gpid(st, sm->file);
		v[7] = q->kdem[name];
		v[8] = q->kshort[name];
		v[9] = name;
		for (int j = 0; j < 3; j++) {
			v[10 + j] = l->grid[j];
			v[13 + j] = l->block[j];
		}
		v[16] = l->regs;
		v[17] = l->smem_static;
		v[18] = l->smem_dynamic;
		if ((r = row(q, s, 1, 19, v, 1u << 3)) < 0)
			return r;
	}
	return 0;
}

static int write_copies(struct sq *q, sqlite3_stmt *s)
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

		if ((r = row(q, s, 1, 12, v, 1u << 3)) < 0)
			return r;
	}
	return 0;
}

static int write_memsets(struct sq *q, sqlite3_stmt *s)
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

		if ((r = row(q, s, 1, 10, v, 1u << 3 | 1u << 7 | 1u << 9)) < 0)
			return r;
	}
	return 0;
}

static int write_apis(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	const struct apx_es_apis *a = &st->a;
	int r;

	for (size_t i = 0; i < a->n; i++) {
		int64_t v[8] = {
			rel(st, a->start[i]), rel(st, a->end[i]), a->domain[i] == APX_API_DRIVER,
			gtid(st, a->thread[i]), a->corr[i], a->name[i], 0, 0,
		};

		if ((r = row(q, s, 1, 8, v, 1u << 6 | 1u << 7)) < 0)
			return r;
	}
	return 0;
}

static int write_syncs(struct sq *q, sqlite3_stmt *s)
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
			gtid(st, y->thread[i]),
		};
		uint32_t nulls = 1u << 3 | 1u << 5 | 1u << 8 | (on ? 0 : 1u << 2 | 1u << 4);

		if ((r = row(q, s, 1, 10, v, nulls)) < 0)
			return r;
	}
	return 0;
}

static int write_markers(struct sq *q, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	const struct apx_es_markers *m = &st->mk;
	int r;

	for (size_t i = 0; i < m->n; i++) {
		struct apx_es_text t = apx_store_string(st, m->name[i]);
		int mark = m->start[i] == m->end[i];
		int64_t v[4] = { rel(st, m->start[i]), rel(st, m->end[i]), mark ? 34 : 59, 0 };
		int64_t w[4] = { gtid(st, m->thread[i]), 0, m->name[i], 0 };

		bind_text(s, 7, t.p, t.len);
		for (int j = 4; j < 6; j++)
			sqlite3_bind_null(s, 1 + j);
		for (int j = 0; j < 4; j++) {
			if (j == 1 || j == 3)
				sqlite3_bind_null(s, 8 + j);
			else
				sqlite3_bind_int64(s, 8 + j, w[j]);
		}
		if ((r = row(q, s, 1, 4, v, 1u << 3 | (mark ? 1u << 1 : 0))) < 0)
			return r;
	}
	return 0;
}

static int write_counters(struct sq *q, sqlite3_stmt *series, sqlite3_stmt *s)
{
	const struct apx_store *st = q->st;
	int r;

	for (size_t i = 0; i < st->nseries; i++) {
		const struct apx_es_series *se = &st->series[i];
		int dev = se->device < st->ndevices;
		int64_t v[2] = { dev ? st->devices[se->device].ordinal : 0, gpid(st, se->file) };

		sqlite3_bind_int64(series, 1, (int64_t)i);
		if (se->is_memory)
			bind_text(series, 2, "device memory", 13);
		else
			bind_text(series, 2, se->name.p, se->name.len);
		if (se->is_memory)
			bind_text(series, 3, "bytes", 5);
		else if (se->unit.len)
			bind_text(series, 3, se->unit.p, se->unit.len);
		else
			sqlite3_bind_null(series, 3);
		if ((r = row(q, series, 4, 2, v, dev ? 0 : 1)) < 0)
			return r;
	}
	for (size_t i = 0; i < st->ct.n; i++) {
		sqlite3_bind_int64(s, 1, rel(st, st->ct.ts[i]));
		sqlite3_bind_int64(s, 2, st->ct.series[i]);
		sqlite3_bind_double(s, 3, st->ct.value[i]);
		if ((r = step(q, s)) < 0)
			return r;
	}
	return 0;
}

/* ---- the file ---------------------------------------------------------------------------- */

enum { S_META, S_PROC, S_THREAD, S_TNAME, S_GPU, S_KERNEL, S_COPY, S_MEMSET, S_API, S_SYNC,
       S_NVTX, S_SERIES, S_COUNTER, S__COUNT };

static const struct {
	const char *table;
	int ncols;
} stmts[S__COUNT] = {
	[S_META] = { "META", 2 },
	[S_PROC] = { "PROCESSES", 7 },
	[S_THREAD] = { "THREADS", 4 },
	[S_TNAME] = { "ThreadNames", 3 },
	[S_GPU] = { "TARGET_INFO_GPU", 11 },
	[S_KERNEL] = { "CUPTI_ACTIVITY_KIND_KERNEL", 19 },
	[S_COPY] = { "CUPTI_ACTIVITY_KIND_MEMCPY", 12 },
	[S_MEMSET] = { "CUPTI_ACTIVITY_KIND_MEMSET", 10 },
	[S_API] = { "CUPTI_ACTIVITY_KIND_RUNTIME", 8 },
	[S_SYNC] = { "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", 10 },
	[S_NVTX] = { "NVTX_EVENTS", 11 },
	[S_SERIES] = { "COUNTER_SERIES", 5 },
	[S_COUNTER] = { "COUNTER_EVENTS", 3 },
};

static int fill(struct sq *q, sqlite3_stmt **s)
{
	int r;

	for (int i = 0; apx_sq_tables[i]; i++)
		if ((r = exec(q, apx_sq_tables[i])) < 0)
			return r;
	for (int i = 0; apx_sq_enums[i]; i++)
		if ((r = exec(q, apx_sq_enums[i])) < 0)
			return r;
	if ((r = prep(q, "StringIds", 2, &q->str_ins)) < 0)
		return r;
	for (int i = 0; i < S__COUNT; i++)
		if ((r = prep(q, stmts[i].table, stmts[i].ncols, &s[i])) < 0)
			return r;
	if ((r = write_meta(q, s[S_META])) < 0 || (r = write_strings(q)) < 0 ||
	    (r = write_processes(q, s[S_PROC])) < 0 ||
	    (r = write_threads(q, s[S_THREAD], s[S_TNAME])) < 0 ||
	    (r = write_gpus(q, s[S_GPU])) < 0 || (r = write_kernels(q, s[S_KERNEL])) < 0 ||
	    (r = write_copies(q, s[S_COPY])) < 0 || (r = write_memsets(q, s[S_MEMSET])) < 0 ||
	    (r = write_apis(q, s[S_API])) < 0 || (r = write_syncs(q, s[S_SYNC])) < 0 ||
	    (r = write_markers(q, s[S_NVTX])) < 0 ||
	    (r = write_counters(q, s[S_SERIES], s[S_COUNTER])) < 0)
		return r;
	for (int i = 0; apx_sq_indices[i]; i++)
		if ((r = exec(q, apx_sq_indices[i])) < 0)
			return r;
	return 0;
}

static int sqlite_write(struct apx_store *st, const char *path, struct apx_diag *diag)
{
	static const char pragmas[] = "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; "
				      "PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; "
				      "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -262144; "
				      "BEGIN";
	struct sq *q = calloc(1, sizeof(*q));
	sqlite3_stmt *s[S__COUNT] = { 0 };
	FILE *f;
	int r;

	if (!q)
		return -ENOMEM;
	q->st = st;
	q->diag = diag;
	/* create the file first: a missing or read-only folder is said as for the other formats */
	if ((r = apx_export_fopen(path, &f, diag)) < 0)
		goto out;
	fclose(f);
	q->kdem = malloc((st->nstrings + 1) * sizeof(*q->kdem));
	q->kshort = malloc((st->nstrings + 1) * sizeof(*q->kshort));
	if (!q->kdem || !q->kshort) {
		r = -ENOMEM;
		goto out;
	}
	memset(q->kdem, 0xff, (st->nstrings + 1) * sizeof(*q->kdem));
	if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		r = q->db ? fail(q, "open") : -ENOMEM;
		goto out;
	}
	if ((r = exec(q, pragmas)) < 0 || (r = fill(q, s)) < 0)
		goto out;
	r = exec(q, "COMMIT");
out:
	for (int i = 0; i < S__COUNT; i++)
		sqlite3_finalize(s[i]);
	sqlite3_finalize(q->str_ins);
	if (q->db && sqlite3_close(q->db) != SQLITE_OK && r >= 0)
		r = -EIO;
	for (size_t i = 0; i < q->xcap; i++)
		free(q->xs ? q->xs[i].text : NULL);
	free(q->xs);
	free(q->kdem);
	free(q->kshort);
	free(q);
	return r;
}

/* Bytes a row takes on disk, with its share of the indices (measured on bench/export). */
static uint64_t sqlite_estimate(const struct apx_store *st)
{
	uint64_t strings = 0;

	for (size_t i = 0; i < st->nstrings; i++)
		strings += st->strings[i].len * 3 + 16;
	return st->k.n * 70 + (st->c.n + st->s.n) * 60 + st->a.n * 50 + st->mk.n * 60 +
	       st->y.n * 50 + st->ct.n * 30 + strings + 256 * 1024;
}

const struct apx_exporter apx_export_sqlite = {
	.name = "sqlite",
	.ext = ".sqlite",
	.summary = "an nsys-like SQLite database (pandas, sqlite3; docs/export.md)",
	.estimate = sqlite_estimate,
	.write = sqlite_write,
};
