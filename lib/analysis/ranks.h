/*
 * ranks.h - several ranks of one distributed run: per-rank timelines, devices keyed
 * by (host, device UUID), NCCL collectives per function with nccl-tests' algbw/busbw against
 * the bottleneck link's peak and the trace's own time-vs-size fit, stragglers and exposed
 * communication, from the COLLECTIVE records the collector's NCCL plugin writes and the files'
 * GPU work (the event store).
 *
 * Built by apx_model_finish() (finish.c) when a file holds a COLLECTIVE record: m->ranks (NULL
 * otherwise: a single-process trace's report does not change). Read by the rules of several
 * ranks (rules/rule_exposed_communication.c, rule_straggler.c, rule_small_collectives.c,
 * rule_network_bound.c) and
 * the report's "ranks" and "collectives" sections (lib/report/build_ranks.c);
 * apx_ranks_load() builds one from files (tests/unit/test-ranks.c). docs/report.md "Ranks and
 * collectives" says what each number means. Nothing here logs; single-threaded.
 */
#ifndef APX_ANALYSIS_RANKS_H
#define APX_ANALYSIS_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

struct apx_model;

#define APX_RANKS_SIZE_BUCKETS 6		/* < 4 KiB, < 64 KiB, < 1 MiB, < 16 MiB, < 256 MiB, more */
#define APX_RANKS_SMALL_BYTES (64u << 10)	/* a small collective: below this, per call */
#define APX_RANKS_BUCKET_BYTES (25ull << 20)	/* DDP's default bucket (bucket_cap_mb 25) */

/* One device: (host, UUID); several files (processes) may share it. */
struct apx_ranks_device {
	char host[64];
	uint8_t uuid[16];
	int has_uuid;
	uint64_t span_ns;			/* first to last GPU activity of its files */
	uint64_t busy_ns;			/* union of kernels, copies, memsets, collectives */
	double busy_pct;
	unsigned nfiles;
};

/* One file (process). rank: the header's, else its communicator rank; -1 when neither. */
struct apx_ranks_rank {
	char path[256];
	char host[64];
	int rank, world, local_rank;
	int device;				/* index into devices, -1 none */
	uint16_t file;				/* the model's file */
	uint64_t pid, start_ns;
	uint64_t first_ns, end_ns;		/* its first and last GPU activity (its clock) */
	int64_t realtime_offset_ns;
	uint64_t gpu_busy_ns;			/* its own activity (union) */
	double busy_pct;			/* of first_ns .. end_ns */
	uint64_t compute_ns;			/* union of its kernels not named nccl* */
	uint64_t h2d_ns;			/* its host-to-device copies' time (input data) */
	uint64_t mem_peak_bytes;		/* device memory it held at most (its MEMORY
						 * records: allocations less frees; 0 none) */
	uint64_t mem_total_bytes;		/* its device's memory (0 unknown) */
	uint64_t steps, step_ns;		/* ProfilerStep# ranges, their median (0 = n/a) */
	uint64_t comm_ns;			/* union of its collectives on the GPU */
	uint64_t exposed_ns;			/* ... not overlapped by its compute kernels */
	uint64_t colls;				/* its COLLECTIVE records */
	uint64_t matched;			/* ... found on every rank of their communicator */
	uint64_t last;				/* ... at which it arrived last */
	uint64_t late_sum_ns, late_max_ns;	/* arrival after the median rank's, summed, max */
	uint64_t wait_ns;			/* it waited for the last rank, summed */
	/* at the collectives it arrived last at: its arrival after the next-latest rank's
	 * (what the run waited for it alone), the other ranks' waits for it, its arrival after
	 * the median rank's, and of that the part its host was late (its enqueue after the
	 * median rank's): the rest its GPU was still busy with its own work */
	uint64_t last_gap_ns, last_wait_ns, last_late_ns, last_host_ns;
	/* exposed communication, a step at a time (ProfilerStep# ranges; none: the whole run):
	 * the exposed time of each step's last collective that stays exposed (its data is ready
	 * only then; of a call larger than a DDP bucket, one bucket's: by the fit, else its time
	 * in proportion to its bytes), compute
	 * before that collective not beside communication, and what overlap could hide: per
	 * step min(exposed - stays, that compute) */
	uint64_t tail_ns, free_compute_ns, hideable_ns;
	/* small collectives (< APX_RANKS_SMALL_BYTES, latency-bound by the fit): calls, groups
	 * that could be one call (consecutive ones of a communicator and function within a
	 * step), their exposed time, and what fusing saves: per group min((n - 1) x latency,
	 * its exposed time) */
	uint64_t small_calls, small_groups, small_exposed_ns;
	double small_saving_ns;
	/* the network's collectives (of communicators whose ranks are on several hosts; not
	 * send/recv) in its steps (ProfilerStep# ranges; none: first_ns .. end_ns): calls and
	 * bytes; the time they run beside no compute kernel: the union over them, per function,
	 * and per function of the ones moving float32 (what bf16 compression halves); the
	 * steps' time */
	uint64_t net_calls, net_bytes, net_exposed_ns, net_step_ns;
	uint64_t net_fexposed_ns[APX_COLL__COUNT], net_fp32_exposed_ns[APX_COLL__COUNT];
};

/* One collective function (all_reduce, ...) over every rank. An instance is one collective
 * (communicator, sequence number) on all its ranks; its time is its shortest duration over
 * them: the last rank to arrive waits for nobody, the others' durations hold their wait. */
struct apx_ranks_coll {
	unsigned func;				/* enum apx_coll_func */
	uint64_t calls;				/* records, every rank */
	uint64_t instances;
	uint64_t bytes;				/* sum of the records' bytes */
	uint64_t time_ns, timed;		/* sum of the records' GPU durations; timed records */
	uint64_t size_hist[APX_RANKS_SIZE_BUCKETS];
	uint64_t algo[APX_ALGO__COUNT], proto[APX_PROTO__COUNT];
	/* nccl-tests' definitions over the timed instances: sum of S / sum of t, and with each
	 * instance's busbw factor; per size bucket too (0: none timed) */
	uint64_t inst_timed, inst_ns;
	double algbw_bps, busbw_bps;
	double bucket_busbw_bps[APX_RANKS_SIZE_BUCKETS];
	/* the time-vs-size fit t = latency + bytes x ns_per_byte, from the shortest instance of
	 * each distinct size (least squares for the slope; the latency from the sizes under
	 * 64 KiB): fit 0 when the timed sizes do not span a factor of 2 */
	int fit;
	unsigned fit_sizes;
	double latency_ns, ns_per_byte;
	/* of the network's collectives (communicators on several hosts): records, their bytes
	 * and of those the float32 ones'; timed instances, their time and busbw as above */
	uint64_t net_calls, net_bytes, net_fp32_bytes, net_inst_timed, net_inst_ns;
	double net_busbw_bps;
};

/* The bottleneck link of the run's collectives, per direction: NVLink (the devices' link
 * count x the link's speed for their architecture) or PCIe on one host; on several, the NICs
 * (each host's line rates summed: its InfiniBand/RoCE ports', else its physical Ethernet
 * devices'; the least over the hosts), when every host's trace recorded them (apx analyze
 * --nic-metrics); unknown otherwise (why says why). */
struct apx_ranks_link {
	const char *kind;			/* "NVLink", "PCIe", "NIC"; NULL: not known */
	double peak_bps;			/* bytes a second */
	char why[200];				/* how it was found, or why it is not known */
};

struct apx_ranks_straggler {
	int rank;				/* -1: none */
	int index;				/* into rank[] */
	uint64_t last, matched;			/* last to arrive at `last` of `matched` */
	uint64_t mean_late_ns;			/* mean arrival after the median rank */
};

struct apx_ranks {
	struct apx_ranks_rank *rank;
	size_t nranks;
	struct apx_ranks_device *dev;
	size_t ndevs;
	struct apx_ranks_coll coll[APX_COLL__COUNT];
	uint64_t duplicates;			/* files skipped: already read (apx_ranks_load) */
	int world;				/* largest world size or communicator seen */
	unsigned hosts;				/* distinct hosts of the files with collectives */
	unsigned participants;			/* files with collectives */
	uint64_t small_nofit;			/* calls under 64 KiB of a function without a
						 * time-vs-size fit: small-collectives cannot tell */
	unsigned net_comms;			/* communicators with ranks on several hosts */
	struct apx_ranks_link link;
	struct apx_ranks_straggler straggler;
};

/* nccl-tests: the bytes S of one call (per-rank record's bytes, n ranks) and busbw / algbw. */
double apx_ranks_algbytes(unsigned func, uint64_t bytes, unsigned nranks);
double apx_ranks_busbw_factor(unsigned func, unsigned nranks);
/* The fit's time of one call of bytes (its latency and per-byte time); 0 without a fit. */
double apx_ranks_fit_ns(const struct apx_ranks_coll *c, double bytes);
/* "<4KiB", "4KiB-64KiB", ... */
const char *apx_ranks_bucket_name(unsigned b);

/* The ranks of a finished model (every file, its collectives); 0 or -ENOMEM. */
int apx_ranks_build(const struct apx_model *m, struct apx_ranks **ret);
/* Read paths[0..n) into a model of their own (a file named twice, or two names of one file:
 * same host, pid, start and rank, is read once and counted in duplicates). 0, -ENOMEM, or
 * the first unreadable file's error (diag says which). */
int apx_ranks_load(const char *const *paths, size_t n, struct apx_ranks **ret,
		   struct apx_diag *diag);
void apx_ranks_free(struct apx_ranks *r);

struct apx_finding;
/* A rule's evidence row "rank R" for rk (after apx_evidence_cols): its values to fill; NULL
 * for a rank without collectives, or when the table is full. */
double *apx_ranks_evidence_row(struct apx_finding *f, const struct apx_ranks_rank *rk);

#endif
