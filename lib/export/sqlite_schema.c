/*
 * sqlite_schema.c - the database `apx export --format sqlite` writes (sqlite.h): tables named
 * and shaped as `nsys export --type sqlite` names them (StringIds, CUPTI_ACTIVITY_KIND_*,
 * NVTX_EVENTS, TARGET_INFO_GPU, ThreadNames, ENUM_*), so that queries written for Nsight
 * Systems run unchanged, plus apx's own (META, PROCESSES, THREADS, COUNTER_SERIES,
 * COUNTER_EVENTS). Times are ns since the run's start. Columns apx does not record are NULL.
 * The text here is what `.schema` prints; docs/export.md shows it and the export-sqlite test
 * checks that the two agree. Used by sqlite.c.
 */
#include "export/sqlite.h"

#include <apx/format.h>

#include "base/banned.h"

#define T(x) x "\n"

/* The first columns of nsys's tables of GPU work (copies and memsets; the kernels' have notes) */
#define GPU_WORK \
	T("    start          INTEGER NOT NULL,") \
	T("    end            INTEGER NOT NULL,") \
	T("    deviceId       INTEGER NOT NULL,") \
	T("    contextId      INTEGER,") \
	T("    streamId       INTEGER NOT NULL,") \
	T("    correlationId  INTEGER,") \
	T("    globalPid      INTEGER,")

const char *const apx_sq_tables[] = {
	"CREATE TABLE META (\n"
	T("    key            TEXT NOT NULL,  -- apx_version, schema, input, run_start_ns, ...")
	"    value          TEXT\n)",

	"CREATE TABLE StringIds (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	"    value          TEXT NOT NULL\n)",

	"CREATE TABLE PROCESSES (\n"
	T("    globalPid      INTEGER NOT NULL PRIMARY KEY,  -- file << 48 | pid << 24")
	T("    pid            INTEGER NOT NULL,")
	T("    ppid           INTEGER,")
	T("    rank           INTEGER,        -- distributed rank, NULL = none")
	T("    host           TEXT,")
	T("    argv           TEXT,           -- arguments joined by spaces")
	"    file           TEXT NOT NULL   -- the .apx file\n)",

	"CREATE TABLE THREADS (\n"
	T("    globalTid      INTEGER NOT NULL PRIMARY KEY,  -- globalPid | tid")
	T("    globalPid      INTEGER NOT NULL,  -- REFERENCES PROCESSES(globalPid)")
	T("    tid            INTEGER NOT NULL,")
	"    name           TEXT\n)",

	"CREATE TABLE ThreadNames (\n"
	T("    nameId         INTEGER NOT NULL,  -- REFERENCES StringIds(id)")
	T("    priority       INTEGER,")
	"    globalTid      INTEGER\n)",

	"CREATE TABLE TARGET_INFO_GPU (\n"
	T("    id             INTEGER NOT NULL,  -- CUDA device ordinal (deviceId elsewhere)")
	T("    host           TEXT,           -- (host, id) is unique")
	T("    name           TEXT,")
	T("    uuid           TEXT,           -- GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	T("    totalMemory    INTEGER,        -- bytes")
	T("    smCount        INTEGER,")
	T("    computeMajor   INTEGER,")
	T("    computeMinor   INTEGER,")
	T("    l2CacheSize    INTEGER,        -- bytes")
	T("    memoryBandwidth INTEGER,       -- bytes/s, peak")
	"    clockRate      INTEGER         -- Hz\n)",

	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (\n"
	T("    start          INTEGER NOT NULL,  -- ns since the run's start")
	T("    end            INTEGER NOT NULL,")
	T("    deviceId       INTEGER NOT NULL,  -- TARGET_INFO_GPU(id)")
	T("    contextId      INTEGER,        -- NULL: not kept")
	T("    streamId       INTEGER NOT NULL,")
	T("    correlationId  INTEGER,        -- CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)")
	T("    globalPid      INTEGER,        -- PROCESSES(globalPid)")
	T("    demangledName  INTEGER NOT NULL,  -- StringIds(id): full name")
	T("    shortName      INTEGER NOT NULL,  -- StringIds(id): base function name")
	T("    mangledName    INTEGER,        -- StringIds(id): as CUPTI reported it")
	T("    gridX          INTEGER NOT NULL,")
	T("    gridY          INTEGER NOT NULL,")
	T("    gridZ          INTEGER NOT NULL,")
	T("    blockX         INTEGER NOT NULL,")
	T("    blockY         INTEGER NOT NULL,")
	T("    blockZ         INTEGER NOT NULL,")
	T("    registersPerThread INTEGER NOT NULL,")
	T("    staticSharedMemory INTEGER NOT NULL,  -- bytes per block")
	T("    dynamicSharedMemory INTEGER NOT NULL,  -- bytes per block")
	T("    callchainId    INTEGER,        -- apx: CUDA_CALLCHAINS(id): the launch's Python stack")
	T("    graphNodeId    INTEGER,        -- the CUDA graph node it ran as; NULL: not a graph's")
	"    graphId        INTEGER         -- the CUDA graph it ran in; NULL: not a graph's\n)",

	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (\n"
	GPU_WORK
	T("    bytes          INTEGER NOT NULL,")
	T("    copyKind       INTEGER NOT NULL,  -- ENUM_CUDA_MEMCPY_OPER(id)")
	T("    srcKind        INTEGER,        -- ENUM_CUDA_MEM_KIND(id)")
	T("    dstKind        INTEGER,        -- ENUM_CUDA_MEM_KIND(id)")
	T("    async          INTEGER,        -- 1: cudaMemcpyAsync and the like")
	"    callchainId    INTEGER         -- apx: CUDA_CALLCHAINS(id): the call's Python stack\n)",

	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (\n"
	GPU_WORK
	T("    value          INTEGER,        -- NULL: not kept")
	T("    bytes          INTEGER NOT NULL,")
	T("    memKind        INTEGER,        -- NULL: not kept")
	"    callchainId    INTEGER         -- apx: CUDA_CALLCHAINS(id): the call's Python stack\n)",

	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (\n"
	T("    start          INTEGER NOT NULL,")
	T("    end            INTEGER NOT NULL,")
	T("    eventClass     INTEGER NOT NULL,  -- ENUM_NSYS_EVENT_CLASS(id): 0 runtime, 1 driver")
	T("    globalTid      INTEGER,        -- THREADS(globalTid)")
	T("    correlationId  INTEGER,")
	T("    nameId         INTEGER NOT NULL,  -- StringIds(id): function name")
	T("    returnValue    INTEGER,        -- NULL: not kept")
	"    callchainId    INTEGER         -- CUDA_CALLCHAINS(id): its GPU work's Python stack\n)",

	"CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (\n"
	T("    start          INTEGER NOT NULL,")
	T("    end            INTEGER NOT NULL,")
	T("    deviceId       INTEGER,        -- NULL: not on a stream")
	T("    contextId      INTEGER,")
	T("    streamId       INTEGER,        -- NULL: not on a stream (device, event)")
	T("    correlationId  INTEGER,")
	T("    globalPid      INTEGER,")
	T("    syncType       INTEGER NOT NULL,  -- ENUM_CUPTI_SYNC_TYPE(id)")
	T("    eventId        INTEGER,")
	T("    globalTid      INTEGER,        -- the host thread that waited")
	"    callchainId    INTEGER         -- apx: CUDA_CALLCHAINS(id): the call's Python stack\n)",

	"CREATE TABLE NVTX_EVENTS (\n"
	T("    start          INTEGER NOT NULL,")
	T("    end            INTEGER,        -- NULL for a mark")
	T("    eventType      INTEGER NOT NULL,  -- ENUM_NSYS_EVENT_TYPE(id): 59 range, 34 mark")
	T("    rangeId        INTEGER,")
	T("    category       INTEGER,")
	T("    color          INTEGER,")
	T("    text           TEXT,")
	T("    globalTid      INTEGER,")
	T("    endGlobalTid   INTEGER,")
	T("    textId         INTEGER,        -- StringIds(id): the same text")
	"    domainId       INTEGER\n)",

	"CREATE TABLE COUNTER_SERIES (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT NOT NULL,  -- \"device memory\" or a metric's name")
	T("    unit           TEXT,")
	T("    deviceId       INTEGER,        -- NULL: not a device's")
	"    globalPid      INTEGER\n)",

	"CREATE TABLE COUNTER_EVENTS (\n"
	T("    ts             INTEGER NOT NULL,")
	T("    seriesId       INTEGER NOT NULL,  -- COUNTER_SERIES(id)")
	"    value          REAL NOT NULL\n)",

	"CREATE TABLE ENUM_CUDA_MEMCPY_OPER (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_CUDA_MEM_KIND (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_CUPTI_SYNC_TYPE (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_NSYS_EVENT_CLASS (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",

	"CREATE TABLE ENUM_NSYS_EVENT_TYPE (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",
	NULL,
};

const char *const apx_sq_enums[] = {
	"INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES "
	"(0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), "
	"(1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), "
	"(2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), "
	"(3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'), "
	"(4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'), "
	"(5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'), "
	"(6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'), "
	"(7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'), "
	"(8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), "
	"(9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'), "
	"(10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer'), "
	"(11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device'), "
	"(12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host'), "
	"(13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device')",

	"INSERT INTO ENUM_CUDA_MEM_KIND VALUES "
	"(0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), "
	"(1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), "
	"(2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), "
	"(3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'), "
	"(4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'), "
	"(5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'), "
	"(6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'), "
	"(7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown')",

	"INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES "
	"(0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'), "
	"(1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'), "
	"(2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'), "
	"(3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'), "
	"(4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync')",

	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES "
	"(0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'), "
	"(1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver')",

	"INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES "
	"(34, 'NvtxMark', 'NvtxMark'), "
	"(59, 'NvtxPushPopRange', 'NvtxPushPopRange'), "
	"(60, 'NvtxStartEndRange', 'NvtxStartEndRange')",
	NULL,
};

const char *const apx_sq_indices[] = {
	"CREATE INDEX KERNEL_start ON CUPTI_ACTIVITY_KIND_KERNEL (start)",
	"CREATE INDEX KERNEL_correlationId ON CUPTI_ACTIVITY_KIND_KERNEL (correlationId)",
	"CREATE INDEX MEMCPY_start ON CUPTI_ACTIVITY_KIND_MEMCPY (start)",
	"CREATE INDEX MEMCPY_correlationId ON CUPTI_ACTIVITY_KIND_MEMCPY (correlationId)",
	"CREATE INDEX MEMSET_start ON CUPTI_ACTIVITY_KIND_MEMSET (start)",
	"CREATE INDEX MEMSET_correlationId ON CUPTI_ACTIVITY_KIND_MEMSET (correlationId)",
	"CREATE INDEX RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME (start)",
	"CREATE INDEX RUNTIME_correlationId ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId)",
	"CREATE INDEX SYNCHRONIZATION_start ON CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start)",
	"CREATE INDEX NVTX_EVENTS_start ON NVTX_EVENTS (start)",
	"CREATE INDEX COUNTER_EVENTS_ts ON COUNTER_EVENTS (seriesId, ts)",
	NULL,
};

/* apx_copy_kind -> ENUM_CUDA_MEMCPY_OPER (apx folds array copies into "other": Unknown) */
unsigned apx_sq_copy_kind(unsigned k)
{
	static const unsigned char map[APX_COPY__COUNT] = {
		[APX_COPY_H2D] = 1, [APX_COPY_D2H] = 2, [APX_COPY_D2D] = 8, [APX_COPY_H2H] = 9,
		[APX_COPY_P2P] = 10,
	};

	return k < APX_COPY__COUNT ? map[k] : 0;
}

/* apx_mem_kind (CUPTI's numbering, 0 = unknown) -> ENUM_CUDA_MEM_KIND (7 = unknown) */
unsigned apx_sq_mem_kind(unsigned k)
{
	return k >= 1 && k < APX_MEM__COUNT ? k - 1 : 7;
}
