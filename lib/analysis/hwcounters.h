/*
 * hwcounters.h - the maths of apx's hardware-counter views: statistics of a
 * PM-sampling series (METRIC records with an interval, `apx analyze --metrics`) over a time
 * window and over a kernel's executions, and the reading of a replayed kernel's counters
 * (COUNTER records, `apx analyze --replay`): what bounds it, its top stall reasons in plain
 * words, and the L2 persistence advice. Pure functions on plain arrays (hwcounters.c): the
 * model and the event store feed them; the report and the rules read their results.
 */
#ifndef APX_ANALYSIS_HWCOUNTERS_H
#define APX_ANALYSIS_HWCOUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* One sample of one metric on one device: its value holds over [start, end). */
struct apx_hw_sample {
	uint64_t start, end;
	double value;
};

struct apx_hw_stat {
	uint64_t n;			/* samples overlapping the window */
	double min, mean, p95, max;	/* mean weighted by the overlap */
};

/* Samples (sorted by start) that overlap [t0, t1). scratch holds n doubles. 0, or -1 when
 * no sample overlaps. */
int apx_hw_stat_window(const struct apx_hw_sample *s, size_t n, uint64_t t0, uint64_t t1,
		       double *scratch, struct apx_hw_stat *out);

/* The value over a kernel's executions, from the samples it dominates: a sample counts when
 * the intervals [start[i], end[i]) (sorted by start) cover at least half of it; the mean of
 * those samples weighted by their overlap with the intervals. *covered = the overlap with all
 * samples in ns, *counted = the samples that counted. scratch holds n doubles. Returns the
 * mean, or a NaN when no sample counts. */
double apx_hw_mean_over(const struct apx_hw_sample *s, size_t n, const uint64_t *start,
			const uint64_t *end, size_t niv, double *scratch, uint64_t *covered,
			uint64_t *counted);

/* A per-kernel value needs this many samples that the kernel dominates (apx_hw_mean_over). */
#define APX_HW_MIN_SAMPLES 3

/* The most samples a second the PM sampler takes (apx analyze --metrics-frequency). */
#define APX_HW_MAX_FREQUENCY 10000

/* Why a kernel has no per-kernel value, in one line: its executions (kernel_ns on average)
 * dominated only counted samples of sample_ns each: "samples of 1 ms, kernels of 40 us:
 * per-kernel values need --replay or --metrics-frequency 10000" when a kernel is shorter than
 * half a sample (the rate only for pm, a PM-sampling series, and only a faster one than now;
 * NVML readings have no rate to set), else "2 samples of 1 ms mostly in it (3 needed): ...".
 * Returns buf. */
const char *apx_hw_kernel_why(char *buf, size_t cap, uint64_t sample_ns, uint64_t kernel_ns,
			      uint64_t counted, int pm);

/* Whether a series (its name) is PM sampling, whose rate --metrics-frequency sets: not the
 * collector's NVML readings (nvml.*). */
int apx_hw_is_pm(const char *name, size_t len);

/* The counters of the replay set (lib/collector/pm_sets.c), in its order. */
enum apx_kc {
	APX_KC_DURATION,		/* ns */
	APX_KC_OCCUPANCY,		/* achieved occupancy, % */
	APX_KC_SM_PCT,			/* SM throughput, % of peak */
	APX_KC_DRAM_PCT,		/* DRAM throughput, % of peak */
	APX_KC_L1_HIT,			/* % */
	APX_KC_L2_HIT,			/* % */
	APX_KC_DRAM_READ,		/* bytes */
	APX_KC_DRAM_WRITE,		/* bytes */
	APX_KC_BANK_CONFLICTS,
	APX_KC_TENSOR,			/* tensor pipe, % */
	APX_KC_INST,			/* warp instructions */
	APX_KC_STALL_FIRST,		/* the stall ratios, cycles per instruction */
	APX_KC_L2_SECTOR_HITS = APX_KC_STALL_FIRST + 12,	/* L2 sector lookups that hit */
	APX_KC_L2_SECTOR_MISSES,	/* and that missed (both: 2 passes on GH100) */
	APX_KC__COUNT,
};

/* A kernel's replayed counters (medians over its replayed launches); bit i of have: v[i]. */
struct apx_kc_values {
	double v[APX_KC__COUNT];
	uint32_t have;
	uint32_t launches;		/* replayed launches behind the medians */
};

/* The replay-set index of a metric name, or -1. */
int apx_kc_index(const char *metric, size_t len);

enum apx_bound { APX_BOUND_UNKNOWN, APX_BOUND_MEMORY, APX_BOUND_COMPUTE, APX_BOUND_LATENCY };

/* What bounds the kernel, from its throughputs against this device's peaks (Nsight Compute's
 * "speed of light" reading): memory when DRAM throughput is >= 60 % of peak and above SM
 * throughput, compute when SM throughput is >= 60 %, latency when neither reaches 60 %. */
enum apx_bound apx_kc_bound(const struct apx_kc_values *k);
const char *apx_bound_name(enum apx_bound b);

/* The stall reasons (0..11, offsets from APX_KC_STALL_FIRST) with the most cycles per
 * instruction, largest first, leaving out "selected" (issuing is not a stall); returns how
 * many were written to idx (at most max, only reasons > 0). */
size_t apx_kc_top_stalls(const struct apx_kc_values *k, unsigned *idx, size_t max);
/* A stall reason in plain words, and what to try. */
const char *apx_stall_words(unsigned stall);
const char *apx_stall_try(unsigned stall);

/* L2 persistence advice for one kernel. */
enum apx_l2_advice_kind {
	APX_L2_NONE,
	APX_L2_SUGGEST_WINDOW,		/* its re-read data fits the set-aside, its hit rate is low */
	APX_L2_WINDOW_NO_GAIN,		/* a window is set but the hit rate did not change */
	APX_L2_SETASIDE_TOO_SMALL,	/* the window is larger than the set-aside */
};

struct apx_l2_input {
	const struct apx_kc_values *k;		/* launches without a window */
	const struct apx_kc_values *k_window;	/* launches under a window, or NULL */
	uint64_t persist_max;			/* the device's maximum set-aside, bytes (0: unknown) */
	uint64_t persist_limit;			/* the set-aside the program asked for, bytes */
	uint64_t window_bytes;			/* the access-policy window's size, 0: none */
	uint64_t launches_per_step;
};

struct apx_l2_advice {
	enum apx_l2_advice_kind kind;
	uint64_t window_bytes;			/* suggested num_bytes */
	double hit_ratio;			/* suggested hitRatio */
	double hit_before, hit_after;		/* L2 hit rates, % */
};

/* Suggest (or judge) an L2 persisting window for a kernel that is launched every step. */
void apx_l2_advise(const struct apx_l2_input *in, struct apx_l2_advice *out);

#endif
