/*
 * sqlite_nccl.c - NCCL collectives in the SQLite export (sqlite.h): one NCCL_COLLECTIVES row per
 * COLLECTIVE record (the collector's NCCL profiler plugin) and the enum tables its
 * columns point to (ENUM_NCCL_FUNC, ENUM_NCCL_DATATYPE, ENUM_NCCL_ALGO, ENUM_NCCL_PROTO).
 * Nsight Systems has no table of its own for NCCL (it shows NCCL through NCCL's NVTX ranges in
 * NVTX_EVENTS and its kernels in CUPTI_ACTIVITY_KIND_KERNEL), so the table is named for what it
 * holds, in nsys's column style (start/end in ns since the run's start, deviceId, streamId,
 * correlationId, globalPid, a StringIds nameId). A collective whose GPU interval lies on an
 * NCCL kernel CUPTI recorded (nccl.c) carries that kernel's streamId and correlationId.
 * Called by sqlite.c's fill(); single-threaded.
 */
#include <sqlite3.h>

#include "analysis/store.h"
#include "export/export.h"
#include "export/sqlite.h"

#include "base/banned.h"

#define T(x) x "\n"

const char *const apx_sq_nccl_tables[] = {
	"CREATE TABLE NCCL_COLLECTIVES (\n"
	T("    start          INTEGER,        -- GPU start (first channel); NULL: unknown")
	T("    end            INTEGER,        -- GPU end (last channel); NULL: unknown")
	T("    enqueueStart   INTEGER NOT NULL,  -- NCCL's start of the operation on the host")
	T("    enqueueEnd     INTEGER NOT NULL,  -- NCCL's stop: enqueued, not finished")
	T("    deviceId       INTEGER,        -- TARGET_INFO_GPU(id); NULL: unknown")
	T("    streamId       INTEGER,        -- its NCCL kernel's stream; NULL: no kernel matched")
	T("    correlationId  INTEGER,        -- its NCCL kernel: CUPTI_ACTIVITY_KIND_KERNEL")
	T("    globalPid      INTEGER NOT NULL,  -- PROCESSES(globalPid)")
	T("    nameId         INTEGER NOT NULL,  -- StringIds(id): ncclAllReduce, ncclSend, ...")
	T("    func           INTEGER NOT NULL,  -- ENUM_NCCL_FUNC(id)")
	T("    count          INTEGER NOT NULL,  -- elements, as NCCL counts them (per rank)")
	T("    datatype       INTEGER,        -- ENUM_NCCL_DATATYPE(id); NULL: unknown")
	T("    bytes          INTEGER NOT NULL,  -- count x element size")
	T("    algo           INTEGER NOT NULL,  -- ENUM_NCCL_ALGO(id)")
	T("    proto          INTEGER NOT NULL,  -- ENUM_NCCL_PROTO(id)")
	T("    nChannels      INTEGER,")
	T("    root           INTEGER,        -- broadcast, reduce: the root; else NULL")
	T("    peer           INTEGER,        -- send: the receiver, recv: the sender; else NULL")
	T("    commId         INTEGER NOT NULL,  -- communicator id hash (64 bits, as signed)")
	T("    rank           INTEGER,        -- rank in the communicator")
	T("    nRanks         INTEGER,        -- ranks of the communicator")
	T("    seq            INTEGER NOT NULL,  -- NCCL's sequence number in the communicator")
	"    flags          INTEGER NOT NULL   -- 1 p2p, 2 GPU times, 4 partial, 8 CUDA graph\n)",

	"CREATE TABLE ENUM_NCCL_FUNC (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_NCCL_DATATYPE (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_NCCL_ALGO (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_NCCL_PROTO (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",
	NULL,
};

/* ids: include/apx/format.h (enum apx_coll_func, apx_nccl_dtype = ncclDataType_t's order,
 * apx_nccl_algo, apx_nccl_proto); labels: NCCL's own words */
const char *const apx_sq_nccl_enums[] = {
	"INSERT INTO ENUM_NCCL_FUNC VALUES "
	"(0, 'unknown', 'Unknown'), (1, 'all_reduce', 'AllReduce'), "
	"(2, 'all_gather', 'AllGather'), (3, 'reduce_scatter', 'ReduceScatter'), "
	"(4, 'broadcast', 'Broadcast'), (5, 'reduce', 'Reduce'), (6, 'all_to_all', 'AlltoAll'), "
	"(7, 'send', 'Send'), (8, 'recv', 'Recv'), (9, 'gather', 'Gather'), "
	"(10, 'scatter', 'Scatter')",

	"INSERT INTO ENUM_NCCL_DATATYPE VALUES "
	"(0, 'ncclInt8', 'int8'), (1, 'ncclUint8', 'uint8'), (2, 'ncclInt32', 'int32'), "
	"(3, 'ncclUint32', 'uint32'), (4, 'ncclInt64', 'int64'), (5, 'ncclUint64', 'uint64'), "
	"(6, 'ncclFloat16', 'float16'), (7, 'ncclFloat32', 'float32'), "
	"(8, 'ncclFloat64', 'float64'), (9, 'ncclBfloat16', 'bfloat16'), "
	"(10, 'ncclFloat8e4m3', 'fp8_e4m3'), (11, 'ncclFloat8e5m2', 'fp8_e5m2')",

	"INSERT INTO ENUM_NCCL_ALGO VALUES "
	"(0, 'unknown', 'Unknown'), (1, 'tree', 'Tree'), (2, 'ring', 'Ring'), "
	"(3, 'collnet_direct', 'CollNetDirect'), (4, 'collnet_chain', 'CollNetChain'), "
	"(5, 'nvls', 'NVLS'), (6, 'nvls_tree', 'NVLSTree'), (7, 'pat', 'PAT')",

	"INSERT INTO ENUM_NCCL_PROTO VALUES "
	"(0, 'unknown', 'Unknown'), (1, 'll', 'LL'), (2, 'll128', 'LL128'), (3, 'simple', 'Simple')",
	NULL,
};

const char *const apx_sq_nccl_indices[] = {
	"CREATE INDEX NCCL_COLLECTIVES_start ON NCCL_COLLECTIVES (start)",
	"CREATE INDEX NCCL_COLLECTIVES_seq ON NCCL_COLLECTIVES (commId, seq)",
	NULL,
};

int apx_sq_write_nccl(const struct apx_store *st, sqlite3 *db, const uint32_t *name_ids)
{
	const struct apx_es_collectives *c = &st->coll;
	struct apx_export_nccl m;
	struct apx_sq_tab t = { 0 };
	int rc;

	if (!c->n)
		return SQLITE_OK;
	if (apx_export_nccl_match(st, &m) < 0)
		return SQLITE_NOMEM;
	if ((rc = apx_sq_tab_open(db, &t, "NCCL_COLLECTIVES", 23)))
		goto out;
	for (size_t i = 0; i < c->n && rc == SQLITE_OK; i++) {
		const struct apx_es_file *f = &st->files[c->file[i]];
		uint32_t dev = c->device[i] >= 0 ? apx_store_device_of(st, c->file[i],
								       (uint64_t)c->device[i])
						 : UINT32_MAX;
		uint32_t k = m.kernel_of[i], nulls = 0;
		int p2p = c->func[i] == APX_COLL_SEND || c->func[i] == APX_COLL_RECV;
		int rooted = c->func[i] == APX_COLL_BROADCAST || c->func[i] == APX_COLL_REDUCE;
		int64_t v[23] = {
			(int64_t)apx_export_rel_ns(st, c->start[i]),
			(int64_t)apx_export_rel_ns(st, c->end[i]),
			(int64_t)apx_export_rel_ns(st, c->enq[i]),
			(int64_t)apx_export_rel_ns(st, c->enq_end[i]),
			dev < st->ndevices ? (int64_t)st->devices[dev].ordinal : (int64_t)c->device[i],
			k != UINT32_MAX ? (int64_t)st->streams[st->k.stream[k]].id : 0,
			k != UINT32_MAX ? st->k.corr[k] : 0,
			(int64_t)((uint64_t)c->file[i] << 48 | (f->pid & 0xffffff) << 24),
			name_ids[c->func[i] < APX_COLL__COUNT ? c->func[i] : 0],
			c->func[i],
			(int64_t)c->count[i],
			c->dtype[i],
			(int64_t)c->bytes[i],
			c->algo[i],
			c->proto[i],
			c->channels[i],
			c->peer[i],
			c->peer[i],
			(int64_t)c->comm[i],
			c->rank[i],
			c->nranks[i],
			(int64_t)c->seq[i],
			c->flags[i],
		};

		if (!c->start[i])
			nulls |= 1u << 0 | 1u << 1;
		if (dev >= st->ndevices && c->device[i] < 0)
			nulls |= 1u << 4;
		if (k == UINT32_MAX)
			nulls |= 1u << 5 | 1u << 6;
		if (c->dtype[i] >= APX_DT__COUNT)
			nulls |= 1u << 11;
		if (!c->channels[i])
			nulls |= 1u << 15;
		if (!rooted || c->peer[i] < 0)
			nulls |= 1u << 16;
		if (!p2p || c->peer[i] < 0)
			nulls |= 1u << 17;
		if (c->rank[i] < 0)
			nulls |= 1u << 19;
		if (!c->nranks[i])
			nulls |= 1u << 20;
		apx_sq_put_ints(&t, 0, 23, v, nulls);
		rc = apx_sq_row(&t);
	}
	if (rc == SQLITE_OK)
		rc = apx_sq_flush(&t);
out:
	apx_sq_tab_close(&t);
	apx_export_nccl_release(&m);
	return rc;
}
