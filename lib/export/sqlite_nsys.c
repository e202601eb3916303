/*
 * sqlite_nsys.c - the tables of the SQLite export (sqlite.h) that Nsight Systems' own tools
 * probe before they read events: META_DATA_EXPORT with the export schema version,
 * TARGET_INFO_SESSION_START_TIME (the run's start on the wall clock), TARGET_INFO_SYSTEM_ENV
 * (each host's name and kernel), TARGET_INFO_CUDA_DEVICE (the devices each process used), and
 * the GPU metrics (NVML readings, PM sampling) in the shape of nsys's GPU_METRICS and
 * TARGET_INFO_GPU_METRICS; and the CUDA graph ids of kernels (graphId, graphNodeId), which the
 * event store does not keep: read again from the KERNEL chunks of the trace files. Column
 * names, order and types are those of the "SQLite Schema Reference" of the Nsight Systems
 * Analysis Guide (schema 3.28.1, release 2026.4); docs/export.md says which columns are apx's
 * own choice. Called by sqlite.c's fill(); single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include <apx/format.h>
#include <apx/version.h>

#include "analysis/store.h"
#include "base/gpu_uuid.h"
#include "export/export.h"
#include "export/sqlite.h"

#include "base/banned.h"

#define T(x) x "\n"

const char *const apx_sq_nsys_tables[] = {
	"CREATE TABLE META_DATA_EXPORT (\n"
	T("    name           TEXT NOT NULL,  -- EXPORT_SCHEMA_VERSION, EXPORT_PRODUCT_NAME, ...")
	"    value          TEXT\n)",

	"CREATE TABLE TARGET_INFO_SESSION_START_TIME (\n"
	T("    utcEpochNs     INTEGER,        -- the run's start: ns since the Unix epoch")
	T("    utcTime        TEXT,           -- the same in UTC, ISO 8601")
	T("    localTime      TEXT,           -- the same: UTC (the trace has no time zone)")
	"    systemClockNs  INTEGER         -- the same on the trace clock (CLOCK_MONOTONIC)\n)",

	"CREATE TABLE TARGET_INFO_SYSTEM_ENV (\n"
	T("    globalVid      INTEGER,        -- apx: the host (its index among the traces)")
	T("    devStateName   TEXT NOT NULL,  -- 'Host'")
	T("    name           TEXT NOT NULL,  -- Hostname, OsKernel, Producer")
	T("    nameEnum       INTEGER NOT NULL,  -- apx's: 1 Hostname, 2 OsKernel, 3 Producer")
	"    value          TEXT NOT NULL\n)",

	"CREATE TABLE TARGET_INFO_CUDA_DEVICE (\n"
	T("    gpuId          INTEGER,        -- TARGET_INFO_GPU(id)")
	T("    cudaId         INTEGER NOT NULL,  -- the CUDA device ordinal in the process")
	T("    pid            INTEGER NOT NULL,  -- PROCESSES(pid)")
	T("    uuid           TEXT,")
	"    numMultiprocessors INTEGER\n)",

	"CREATE TABLE TARGET_INFO_GPU_METRICS (\n"
	T("    typeId         INTEGER NOT NULL,  -- host << 32 | TARGET_INFO_GPU(id)")
	T("    sourceId       INTEGER NOT NULL,  -- = typeId")
	T("    typeName       TEXT NOT NULL,  -- GPU 0 (NVIDIA H200)")
	T("    metricId       INTEGER NOT NULL,")
	"    metricName     TEXT NOT NULL   -- the metric's name [its unit]\n)",

	"CREATE TABLE GPU_METRICS (\n"
	T("    rawTimestamp   INTEGER NOT NULL,  -- trace clock (ns)")
	T("    timestamp      INTEGER NOT NULL,  -- ns since the run's start")
	T("    typeId         INTEGER NOT NULL,  -- TARGET_INFO_GPU_METRICS(typeId)")
	T("    metricId       INTEGER NOT NULL,  -- TARGET_INFO_GPU_METRICS(metricId)")
	"    value          INTEGER NOT NULL   -- as read (REAL when not whole)\n)",
	NULL,
};

const char *const apx_sq_nsys_indices[] = {
	"CREATE INDEX GPU_METRICS_timestamp ON GPU_METRICS (typeId, metricId, timestamp)",
	NULL,
};

/* The schema version of the Nsight Systems reference whose table and column names apx
 * follows (a subset of its tables and columns: docs/export.md). */
#define APX_SQ_NSYS_SCHEMA "3.28.1"

enum { N_META, N_START, N_ENV, N_CUDEV, N_MINFO, N_METRIC, N__COUNT };

static const struct {
	const char *name;
	int ncols;
} ntables[N__COUNT] = {
	[N_META] = { "META_DATA_EXPORT", 2 },
	[N_START] = { "TARGET_INFO_SESSION_START_TIME", 4 },
	[N_ENV] = { "TARGET_INFO_SYSTEM_ENV", 5 },
	[N_CUDEV] = { "TARGET_INFO_CUDA_DEVICE", 5 },
	[N_MINFO] = { "TARGET_INFO_GPU_METRICS", 5 },
	[N_METRIC] = { "GPU_METRICS", 5 },
};

struct nq {
	const struct apx_store *st;
	struct apx_sq_tab t[N__COUNT];
	int failed;			/* the table a row failed on */
	char buf[4096], name[1024];
};

static int nrow(struct nq *q, int i)
{
	int rc = apx_sq_row(&q->t[i]);

	if (rc == SQLITE_OK)
		rc = apx_sq_flush(&q->t[i]);	/* texts of q->buf: in before they change */
	if (rc != SQLITE_OK)
		q->failed = i;
	return rc;
}

static int put_meta(struct nq *q, const char *name, const char *value)
{
	apx_sq_put_t(&q->t[N_META], 0, name, strlen(name));
	apx_sq_put_t(&q->t[N_META], 1, value, strlen(value));
	return nrow(q, N_META);
}

static int write_meta(struct nq *q)
{
	int rc;

	if ((rc = put_meta(q, "EXPORT_SCHEMA_VERSION", APX_SQ_NSYS_SCHEMA)) ||
	    (rc = put_meta(q, "EXPORT_PRODUCT_NAME", "apx")) ||
	    (rc = put_meta(q, "EXPORT_PRODUCT_VERSION", APX_VERSION)))
		return rc;
	return put_meta(q, "EXPORT_PARAM_TIME_NORMALIZE", "true");	/* ns since the start */
}

/* "2026-12-06T20:38:00.123456789" + suffix, or "" when the time cannot be told. */
static void iso_time(char *buf, size_t cap, int64_t ns, const char *suffix)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;
	char day[32];

	buf[0] = 0;
	if (!gmtime_r(&s, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
		return;
	snprintf(buf, cap, "%s.%09" PRId64 "%s", day, ns % 1000000000, suffix);
}

static int write_start(struct nq *q)
{
	struct apx_sq_tab *t = &q->t[N_START];
	char local[64];
	int64_t utc;

	if (apx_export_utc_start_ns(q->st, &utc) < 0) {	/* META says why (sqlite.c) */
		apx_sq_put_null(t, 0);
		apx_sq_put_null(t, 1);
		apx_sq_put_null(t, 2);
	} else {
		iso_time(q->buf, sizeof(q->buf), utc, "Z");
		iso_time(local, sizeof(local), utc, "+00:00");
		apx_sq_put_i(t, 0, utc);
		apx_sq_put_t(t, 1, q->buf, strlen(q->buf));
		apx_sq_put_t(t, 2, local, strlen(local));
	}
	if (q->st->run_start_ns <= INT64_MAX)
		apx_sq_put_i(t, 3, (int64_t)q->st->run_start_ns);
	else
		apx_sq_put_null(t, 3);
	return nrow(q, N_START);
}

static int put_env(struct nq *q, uint32_t host, int e, const char *name, const struct apx_rec *h,
		   unsigned field)
{
	struct apx_sq_tab *t = &q->t[N_ENV];
	struct apx_es_text v = { (const char *)h->bytes[field], (uint32_t)h->v[field] };

	if (!(h->present >> field & 1) || !v.p || !v.len || h->v[field] > UINT32_MAX)
		return SQLITE_OK;
	apx_export_text(v, q->buf, sizeof(q->buf));
	apx_sq_put_i(t, 0, host);
	apx_sq_put_t(t, 1, "Host", 4);
	apx_sq_put_t(t, 2, name, strlen(name));
	apx_sq_put_i(t, 3, e);
	apx_sq_put_t(t, 4, q->buf, strlen(q->buf));
	return nrow(q, N_ENV);
}

/* One set of rows per host: its first file's header. */
static int write_env(struct nq *q)
{
	const struct apx_store *st = q->st;
	int rc;

	for (uint32_t h = 0; h < st->nhosts; h++) {
		const struct apx_rec *hd = NULL;

		for (size_t f = 0; f < st->nfiles && !hd; f++)
			if (st->files[f].host == h)
				hd = apx_reader_header(st->files[f].r);
		if (!hd)
			continue;
		if ((rc = put_env(q, h, 1, "Hostname", hd, APX_HEADER_HOSTNAME)) ||
		    (rc = put_env(q, h, 2, "OsKernel", hd, APX_HEADER_KERNEL)) ||
		    (rc = put_env(q, h, 3, "Producer", hd, APX_HEADER_PRODUCER)))
			return rc;
	}
	return SQLITE_OK;
}

/* One row per (process, device) pair that has a stream. */
static int write_cuda_devices(struct nq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[N_CUDEV];
	char uuid[APX_GPU_UUID_TEXT];
	int rc;

	for (size_t s = 0; s < st->nstreams; s++) {
		const struct apx_es_stream *sm = &st->streams[s];
		const struct apx_es_device *d;
		size_t e;

		for (e = 0; e < s; e++)		/* first stream of the pair only */
			if (st->streams[e].file == sm->file && st->streams[e].device == sm->device)
				break;
		if (e < s || sm->device >= st->ndevices)
			continue;
		d = &st->devices[sm->device];
		apx_sq_put_i(t, 0, d->ordinal);
		apx_sq_put_i(t, 1, d->ordinal);
		apx_sq_put_i(t, 2, (int64_t)(st->files[sm->file].pid & INT64_MAX));
		if (d->has_uuid) {
			apx_gpu_uuid_text(uuid, d->uuid);
			apx_sq_put_t(t, 3, uuid, strlen(uuid));
		} else {
			apx_sq_put_null(t, 3);
		}
		if (d->sm_count)
			apx_sq_put_i(t, 4, d->sm_count);
		else
			apx_sq_put_null(t, 4);
		if ((rc = nrow(q, N_CUDEV)))
			return rc;
	}
	return SQLITE_OK;
}

/* ---- GPU metrics -------------------------------------------------------------------------- */

/* A metric of a device: series of several files with the same name and unit share it. */
static int same_metric(const struct apx_store *st, const struct apx_es_series *a,
		       const struct apx_es_series *b)
{
	return a->device == b->device && a->name.len == b->name.len &&
	       a->unit.len == b->unit.len && !memcmp(a->name.p, b->name.p, a->name.len) &&
	       !memcmp(a->unit.p, b->unit.p, a->unit.len) &&
	       st->devices[a->device].host == st->devices[b->device].host;
}

static int64_t type_id(const struct apx_store *st, uint32_t dev)
{
	return (int64_t)((uint64_t)st->devices[dev].host << 32 | st->devices[dev].ordinal);
}

/* TARGET_INFO_GPU_METRICS: one row per device metric; metric[series] its metricId (-1: not a
 * device metric: device memory, process-wide series). */
static int write_metric_info(struct nq *q, int64_t *metric)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[N_MINFO];
	int64_t next = 0;
	int rc;

	for (size_t i = 0; i < st->nseries; i++) {
		const struct apx_es_series *se = &st->series[i];
		size_t j;
		int n;

		metric[i] = -1;
		if (se->is_memory || se->device >= st->ndevices)
			continue;
		for (j = 0; j < i; j++)
			if (metric[j] >= 0 && same_metric(st, &st->series[j], se))
				break;
		if (j < i) {
			metric[i] = metric[j];
			continue;
		}
		metric[i] = next++;
		apx_export_text(se->name, q->name, sizeof(q->name));
		n = (int)strlen(q->name);
		if (se->unit.len) {
			apx_export_text(se->unit, q->buf, sizeof(q->buf));
			snprintf(q->name + n, sizeof(q->name) - (size_t)n, " [%s]", q->buf);
		}
		apx_export_device_label(st, se->device, q->buf, sizeof(q->buf));
		apx_sq_put_i(t, 0, type_id(st, se->device));
		apx_sq_put_i(t, 1, type_id(st, se->device));
		apx_sq_put_t(t, 2, q->buf, strlen(q->buf));
		apx_sq_put_i(t, 3, metric[i]);
		apx_sq_put_t(t, 4, q->name, strlen(q->name));
		if ((rc = nrow(q, N_MINFO)))
			return rc;
	}
	return SQLITE_OK;
}

static int write_metrics(struct nq *q)
{
	const struct apx_store *st = q->st;
	struct apx_sq_tab *t = &q->t[N_METRIC];
	int64_t *metric = malloc((st->nseries ? st->nseries : 1) * sizeof(*metric));
	int rc;

	if (!metric)
		return SQLITE_NOMEM;
	if ((rc = write_metric_info(q, metric)))
		goto out;
	for (size_t i = 0; i < st->ct.n; i++) {
		uint32_t s = st->ct.series[i];
		double v = st->ct.value[i];

		if (s >= st->nseries || metric[s] < 0)
			continue;
		apx_sq_put_i(t, 0, (int64_t)(st->ct.ts[i] & INT64_MAX));
		apx_sq_put_i(t, 1, (int64_t)apx_export_rel_ns(st, st->ct.ts[i]));
		apx_sq_put_i(t, 2, type_id(st, st->series[s].device));
		apx_sq_put_i(t, 3, metric[s]);
		/* whole values as INTEGER (nsys's type), others exact as REAL */
		if (v == (double)(int64_t)v && v > -9e18 && v < 9e18)
			apx_sq_put_i(t, 4, (int64_t)v);
		else
			apx_sq_put_d(t, 4, v);
		if ((rc = apx_sq_row(t)) != SQLITE_OK) {
			q->failed = N_METRIC;
			goto out;
		}
	}
	if ((rc = apx_sq_flush(t)) != SQLITE_OK)
		q->failed = N_METRIC;
out:
	free(metric);
	return rc;
}

int apx_sq_write_nsys(const struct apx_store *st, sqlite3 *db, const char **ret_table)
{
	struct nq *q = calloc(1, sizeof(*q));
	int rc = SQLITE_OK;

	if (!q)
		return SQLITE_NOMEM;
	q->st = st;
	q->failed = -1;
	for (int i = 0; i < N__COUNT && rc == SQLITE_OK; i++)
		if ((rc = apx_sq_tab_open(db, &q->t[i], ntables[i].name, ntables[i].ncols)))
			q->failed = i;
	if (rc == SQLITE_OK && !(rc = write_meta(q)) && !(rc = write_start(q)) &&
	    !(rc = write_env(q)) && !(rc = write_cuda_devices(q)))
		rc = write_metrics(q);
	if (rc != SQLITE_OK)
		*ret_table = q->failed >= 0 ? ntables[q->failed].name : "GPU_METRICS";
	for (int i = 0; i < N__COUNT; i++)
		apx_sq_tab_close(&q->t[i]);
	free(q);
	return rc;
}

/* ---- CUDA graph ids of kernels ------------------------------------------------------------ */

struct gkey {
	uint64_t key;			/* file << 32 | correlation id */
	uint64_t start;			/* on the store's clock */
	uint64_t graph, node;
};

static int cmp_gkey(const void *a, const void *b)
{
	const struct gkey *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* The graph kernels of file f: read again from its KERNEL chunks (a reader of its own: the
 * store's gave its chunks back). A file that cannot be read again adds none. */
static int graph_kernels(const struct apx_store *st, uint16_t f, struct gkey **v, size_t *n,
			 size_t *cap)
{
	struct apx_reader *r;
	int e = 0;

	if (apx_reader_open(st->files[f].path, &r, NULL) < 0)
		return 0;
	for (size_t c = 0; c < apx_reader_chunk_count(r) && e >= 0; c++) {
		struct apx_chunk_iter it;

		if (apx_reader_chunk(r, c)->type != APX_REC_KERNEL ||
		    apx_chunk_iter_init(&it, r, c, NULL) < 0)
			continue;
		while (apx_chunk_iter_next(&it, NULL) > 0) {
			const uint64_t *x = it.rec.v;

			if (!x[APX_KERNEL_GRAPH_ID] && !x[APX_KERNEL_GRAPH_NODE_ID])
				continue;
			if (*n == *cap) {
				size_t nc = *cap ? *cap * 2 : 256;
				struct gkey *p = realloc(*v, nc * sizeof(*p));

				if (!p) {
					e = -ENOMEM;
					break;
				}
				*v = p;
				*cap = nc;
			}
			(*v)[(*n)++] = (struct gkey){
				(uint64_t)f << 32 | (uint32_t)x[APX_KERNEL_CORRELATION],
				(uint64_t)((int64_t)x[APX_KERNEL_START_NS] + st->files[f].shift_ns),
				x[APX_KERNEL_GRAPH_ID], x[APX_KERNEL_GRAPH_NODE_ID],
			};
		}
		apx_reader_release(r, c);
	}
	apx_reader_close(r);
	return e;
}

int apx_sq_graph_ids(const struct apx_store *st, uint64_t **ret_graph)
{
	struct gkey *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t *g;
	int r = 0;

	*ret_graph = NULL;
	if (!st->k.n)
		return 0;
	for (size_t f = 0; f < st->nfiles && r >= 0; f++)
		r = graph_kernels(st, (uint16_t)f, &v, &n, &cap);
	if (r < 0 || !n) {
		free(v);
		return r;
	}
	g = calloc(st->k.n * 2, sizeof(*g));
	if (!g) {
		free(v);
		return -ENOMEM;
	}
	qsort(v, n, sizeof(*v), cmp_gkey);
	for (size_t i = 0; i < st->k.n; i++) {
		struct gkey k = { (uint64_t)st->streams[st->k.stream[i]].file << 32 | st->k.corr[i],
				  st->k.start[i], 0, 0 };
		const struct gkey *hit = bsearch(&k, v, n, sizeof(*v), cmp_gkey);

		if (hit) {
			g[2 * i] = hit->graph;
			g[2 * i + 1] = hit->node;
		}
	}
	free(v);
	*ret_graph = g;
	return 0;
}
