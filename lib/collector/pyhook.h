/*
 * pyhook.h - the Python hooks' hand-off (docs/collector.md, "Python hooks"): the sitecustomize
 * that `apx analyze` puts on PYTHONPATH (lib/collector/py/apx_site.py) times the functions of
 * --trace-functions and samples PyTorch's memory counters, and hands each range and sample to
 * the collector through the exported apx_py_* functions below (ctypes). They go into a
 * preallocated lock-free ring of fixed slots; the writer thread drains it into MARKER records
 * (kind range, domain "apx.functions" unless the name was given another, tid = the OS thread
 * id) and METRIC records, and counts lapped slots into a LOSS record.
 *
 * This module knows nothing of CUPTI: src_pyhook.c makes it a source of libapx-inject.so, and
 * the tests link it alone (tests/unit/test-pyhook.c, tests/unit/pyhook_stub.c).
 *
 * Threads: apx_py_* on any application thread (no lock, no allocation, no system call; name
 * registration takes a mutex, once per name); apx_pyhook_drain/_finish on the one writer
 * thread; _new/_publish at start, _free at the end.
 */
#ifndef APX_COLLECTOR_PYHOOK_H
#define APX_COLLECTOR_PYHOOK_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

#define APX_PYHOOK_SLOTS 16384u		/* ring slots (a power of two) */
#define APX_PYHOOK_NAMES 4096u		/* names a process can register */
#define APX_PYHOOK_NAME_MAX 255u	/* bytes of a name kept (longer ones are cut) */
#define APX_PYHOOK_DOMAIN "apx.functions"	/* the MARKER domain of a range with domain 0 */

struct apx_pyhook;

/* What the writer has encoded so far (apx_pyhook_stats). */
struct apx_pyhook_stats {
	uint64_t ranges, metrics, lost_ring, lost_python;
	uint32_t names;
};

/* A ring and a name table, both preallocated; NULL when out of memory. */
struct apx_pyhook *apx_pyhook_new(void);
struct apx_pyhook *apx_pyhook_free(struct apx_pyhook *h);
/* Make h the one the exported apx_py_* functions use (NULL: they drop everything again). A
 * forked child drops everything (its parent's ring is not its own). */
void apx_pyhook_publish(struct apx_pyhook *h);

/* Writer thread: encode every complete slot into w (names interned on first use). periodic:
 * also write a LOSS record for what was lost since the last one. */
void apx_pyhook_drain(struct apx_pyhook *h, struct apx_writer *w, uint64_t now_ns, int periodic);
void apx_pyhook_stats(const struct apx_pyhook *h, struct apx_pyhook_stats *ret);

/* ---- exported from libapx-inject.so (exports.map), called by apx_site.py through ctypes ---- */

/* Register a name (UTF-8, len bytes, no NUL needed): its id (> 0), the same id for the same
 * name; -EAGAIN while the collector has not started (CUDA not initialised: try again later),
 * -ENOSPC when the table is full, -EINVAL for an empty name. */
int apx_py_name(const char *utf8, size_t len);
/* One call of a traced function on OS thread tid, CLOCK_MONOTONIC ns; domain: a name id, 0 =
 * "apx.functions". Returns 0, or -EAGAIN when there is no collector (the range is dropped). */
int apx_py_range(uint32_t name_id, uint32_t domain_id, uint64_t start_ns, uint64_t end_ns,
		 uint64_t tid);
/* One sample of a counter: device >= 0 a CUDA ordinal, < 0 the process (written with the
 * process id, device 0). The unit is "B" for names ending in "_bytes", else none. */
int apx_py_metric(uint32_t name_id, int32_t device, double value, uint64_t ts_ns);
/* Ranges or samples the Python side dropped (its buffer was full before CUDA started). */
int apx_py_lost(uint64_t count);

#endif
