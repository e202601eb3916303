/*
 * ranks.h - several ranks of one distributed run (issue 33): per-rank timelines, devices keyed
 * by (host, device UUID), NCCL collectives with nccl-tests' algbw/busbw, stragglers and
 * exposed communication, from the COLLECTIVE records the collector's NCCL plugin writes.
 *
 * Reads the traces itself (one pass each, the reader's chunk iterator); a file named twice,
 * or two names of one file (same host, pid and start), is read once. Text and JSON views:
 * apx_ranks_text / apx_ranks_json (docs/report.md "Ranks and collectives", docs/report-schema.md
 * "ranks", "collectives"). Called by tests/unit/test-ranks.c; apx report's sections are the
 * next step (the GPU session of issue 33). Nothing here logs.
 */
#ifndef APX_ANALYSIS_RANKS_H
#define APX_ANALYSIS_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <apx/format.h>

#define APX_RANKS_FILES_MAX 4096
#define APX_RANKS_SIZE_BUCKETS 6		/* < 4 KiB, < 64 KiB, < 1 MiB, < 16 MiB, < 256 MiB, more */

/* One device: (host, UUID); several files (processes) may share it. */
struct apx_ranks_device {
	char host[64];
	uint8_t uuid[16];
	uint64_t span_ns;			/* first to last GPU activity of its files */
	uint64_t busy_ns;			/* union of kernels, copies, memsets, collectives */
	double busy_pct;
	unsigned nfiles;
};

/* One file (process); rank -1 when it has none. */
struct apx_ranks_rank {
	char path[256];
	char host[64];
	int rank, world, local_rank;
	int device;				/* index into devices, -1 none */
	uint64_t pid, start_ns, end_ns;		/* end: its last GPU activity */
	int64_t realtime_offset_ns;
	uint64_t gpu_busy_ns;			/* its own activity (union) */
	uint64_t step_ns;			/* median ProfilerStep# range, 0 = n/a */
	uint64_t comm_ns;			/* union of its collectives on the GPU */
	uint64_t exposed_ns;			/* ... not overlapped by its compute kernels */
	uint64_t colls;				/* its COLLECTIVE records */
	uint64_t matched;			/* ... found on every rank of their communicator */
	uint64_t last;				/* ... at which it arrived last */
	uint64_t late_sum_ns;			/* sum over matched of arrival - median arrival */
	uint64_t late_max_ns;
};

/* One collective function (all_reduce, ...) over every rank. */
struct apx_ranks_coll {
	unsigned func;				/* enum apx_coll_func */
	uint64_t calls;				/* records, every rank */
	uint64_t instances;			/* distinct (comm, seq) */
	uint64_t bytes;				/* sum of the records' bytes */
	uint64_t time_ns;			/* sum of GPU durations */
	uint64_t size_hist[APX_RANKS_SIZE_BUCKETS];
	uint64_t algo[APX_ALGO__COUNT], proto[APX_PROTO__COUNT];
	double algbw_gbps, busbw_gbps;		/* nccl-tests definitions, over the timed calls */
	uint64_t timed;				/* calls with GPU times */
};

struct apx_ranks_straggler {
	int rank;				/* -1: none */
	uint64_t last, matched;			/* last to arrive at `last` of `matched` */
	uint64_t mean_late_ns;			/* mean arrival after the median rank */
};

struct apx_ranks {
	struct apx_ranks_rank *rank;
	size_t nranks;
	struct apx_ranks_device *dev;
	size_t ndevs;
	struct apx_ranks_coll coll[APX_COLL__COUNT];
	uint64_t duplicates;			/* files skipped: already read */
	int world;				/* largest world size or communicator seen */
	struct apx_ranks_straggler straggler;
};

/* nccl-tests: the bytes S of one call (per-rank record's bytes, n ranks) and busbw / algbw. */
double apx_ranks_algbytes(unsigned func, uint64_t bytes, unsigned nranks);
double apx_ranks_busbw_factor(unsigned func, unsigned nranks);

/* Read paths[0..n). 0, -ENOMEM, or the first unreadable file's error (diag says which). */
int apx_ranks_load(const char *const *paths, size_t n, struct apx_ranks **ret,
		   struct apx_diag *diag);
void apx_ranks_free(struct apx_ranks *r);
/* The "ranks" and "collectives" sections. */
void apx_ranks_text(const struct apx_ranks *r, FILE *out);
void apx_ranks_json(const struct apx_ranks *r, FILE *out);

#endif
