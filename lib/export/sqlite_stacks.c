/*
 * sqlite_stacks.c - the Python stacks in the SQLite export (sqlite.h), in the tables Nsight
 * Systems uses for call chains and thread samples (its SQLite schema reference,
 * docs.nvidia.com/nsight-systems/UserGuide, "SQLite Schema Reference"):
 *   CUDA_CALLCHAINS (id, symbol, module, unresolved, originalIP, stackDepth): nsys's table of
 *     the backtraces of CUDA API calls (its callchainId columns point to it); one row per frame
 *     of every stack, stackDepth 0 the innermost, symbol the function and module the source
 *     file (StringIds ids), plus apx's `line`;
 *   COMPOSITE_EVENTS (id, start, cpu, threadState, globalTid, cpuCycles): nsys's thread
 *     samples, plus apx's callchainId, periodNs, syscall, cpuNs;
 *   SAMPLING_CALLCHAINS: nsys's per-sample call chains, here a view joining COMPOSITE_EVENTS to
 *     CUDA_CALLCHAINS (the stacks are stored once), so that nsys's queries on it run;
 *   ENUM_SAMPLING_THREAD_STATE: apx's thread states (format.md, sample records).
 * The callchainId columns of the GPU work, sync and runtime tables are filled by sqlite.c.
 * Called by sqlite.c's fill(); single-threaded.
 */
#include <sqlite3.h>

#include "analysis/store.h"
#include "export/export.h"
#include "export/sqlite.h"

#include "base/banned.h"

#define T(x) x "\n"

const char *const apx_sq_stack_tables[] = {
	"CREATE TABLE CUDA_CALLCHAINS (\n"
	T("    id             INTEGER NOT NULL,  -- callchainId elsewhere: a Python stack")
	T("    symbol         INTEGER NOT NULL,  -- StringIds(id): function")
	T("    module         INTEGER NOT NULL,  -- StringIds(id): source file")
	T("    unresolved     INTEGER,        -- 0")
	T("    originalIP     INTEGER,        -- NULL: Python frames have none")
	T("    stackDepth     INTEGER NOT NULL,  -- 0: the innermost frame")
	T("    line           INTEGER,        -- apx: the line, NULL unknown")
	"    PRIMARY KEY (id, stackDepth)\n)",

	"CREATE TABLE COMPOSITE_EVENTS (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    start          INTEGER NOT NULL,")
	T("    cpu            INTEGER,        -- NULL: not kept")
	T("    threadState    INTEGER,        -- ENUM_SAMPLING_THREAD_STATE(id)")
	T("    globalTid      INTEGER,        -- THREADS(globalTid)")
	T("    cpuCycles      INTEGER,        -- NULL: not kept")
	T("    callchainId    INTEGER,        -- apx: CUDA_CALLCHAINS(id), NULL: no Python frames")
	T("    periodNs       INTEGER NOT NULL,  -- apx: the time this sample stands for")
	T("    syscall        INTEGER,        -- apx: the syscall it waits in, NULL none")
	"    cpuNs          INTEGER         -- apx: the thread's CPU time so far\n)",

	"CREATE VIEW SAMPLING_CALLCHAINS AS\n"
	T("SELECT e.id AS id, c.symbol AS symbol, c.module AS module, 0 AS kernelMode,")
	T("       0 AS thumbCode, c.unresolved AS unresolved, 0 AS specialEntry,")
	T("       c.originalIP AS originalIP, NULL AS unwindMethod, c.stackDepth AS stackDepth,")
	T("       c.line AS line")
	T("FROM COMPOSITE_EVENTS AS e")
	"JOIN CUDA_CALLCHAINS AS c ON c.id = e.callchainId",

	"CREATE TABLE ENUM_SAMPLING_THREAD_STATE (\n"
	T("    id             INTEGER NOT NULL PRIMARY KEY,")
	T("    name           TEXT,")
	"    label          TEXT\n)",
	NULL,
};

const char *const apx_sq_stack_enums[] = {
	"INSERT INTO ENUM_SAMPLING_THREAD_STATE VALUES "
	"(0, 'UNKNOWN', 'Unknown'), (1, 'RUNNING', 'Running'), (2, 'SLEEPING', 'Sleeping'), "
	"(3, 'DISK_WAIT', 'Uninterruptible wait'), (4, 'STOPPED', 'Stopped'), (5, 'OTHER', 'Other')",
	NULL,
};

const char *const apx_sq_stack_indices[] = {
	"CREATE INDEX COMPOSITE_EVENTS_start ON COMPOSITE_EVENTS (start)",
	NULL,
};

int apx_sq_write_stacks(const struct apx_store *st, sqlite3 *db, const int64_t *gtid,
			const char **ret_table)
{
	struct apx_sq_tab cc = { 0 }, ev = { 0 };
	int rc;

	*ret_table = "CUDA_CALLCHAINS";
	if ((rc = apx_sq_tab_open(db, &cc, "CUDA_CALLCHAINS", 7)))
		goto out;
	for (size_t s = 0; s < st->nstacks && rc == SQLITE_OK; s++) {
		const struct apx_es_stack *sk = &st->stacks[s];

		for (uint16_t j = 0; j < sk->depth && rc == SQLITE_OK; j++) {
			const struct apx_es_frame *f = &st->frames[st->stack_frames[sk->first + j]];
			int64_t v[7] = { (int64_t)s + 1, f->func, f->file, 0, 0, j, f->line };

			apx_sq_put_ints(&cc, 0, 7, v, 1u << 4 | (f->line ? 0 : 1u << 6));
			rc = apx_sq_row(&cc);
		}
	}
	if (rc == SQLITE_OK)
		rc = apx_sq_flush(&cc);
	if (rc)
		goto out;
	*ret_table = "COMPOSITE_EVENTS";
	if ((rc = apx_sq_tab_open(db, &ev, "COMPOSITE_EVENTS", 10)))
		goto out;
	for (size_t i = 0; i < st->smp.n && rc == SQLITE_OK; i++) {
		uint32_t s = st->smp.stack[i];
		int64_t v[10] = { (int64_t)i + 1,
				  (int64_t)apx_export_rel_ns(st, st->smp.ts[i]), 0, st->smp.state[i],
				  st->smp.thread[i] < st->nthreads ? gtid[st->smp.thread[i]] : 0,
				  0, s, st->smp.period[i], st->smp.syscall[i],
				  (int64_t)st->smp.cpu_ns[i] };
		uint32_t nulls = 1u << 2 | 1u << 5;

		if (!s || s > st->nstacks)
			nulls |= 1u << 6;
		if (st->smp.syscall[i] < 0)
			nulls |= 1u << 8;
		if (st->smp.thread[i] >= st->nthreads)
			nulls |= 1u << 4;
		apx_sq_put_ints(&ev, 0, 10, v, nulls);
		rc = apx_sq_row(&ev);
	}
	if (rc == SQLITE_OK)
		rc = apx_sq_flush(&ev);
out:
	apx_sq_tab_close(&cc);
	apx_sq_tab_close(&ev);
	return rc;
}
