/*
 * diff.h - two runs of a program compared step by step (apx diff): BEFORE and AFTER,
 * each an analysis model (model.h) with its findings (findings.h), matched the way perf's
 * hists__match() pairs entries by key: kernels by their demangled name, idle time by cause,
 * findings by rule. What is compared is the steady state's steps (steps.c): their times
 * (median, p95, a bootstrap 95 % interval of the median, and of the difference of the
 * medians), and per step the kernels' time, the GPU's idle time by cause, the work (kernels,
 * copies and bytes copied) and each rule's estimated saving. It also says whether the two look
 * like different programs (command lines and kernels apart) and whether their steps do
 * different work, for the caller to refuse or warn. Nothing here prints; the report document
 * of it is lib/report's (build_diff.c). Single-threaded; the bootstrap's seed is fixed, so the
 * same two traces always give the same numbers.
 */
#ifndef APX_ANALYSIS_DIFF_H
#define APX_ANALYSIS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/findings.h"
#include "analysis/model.h"

#define APX_DIFF_RESAMPLES 2000			/* bootstrap resamples (default) */
#define APX_DIFF_SEED 0x6170786469666631ull	/* "apxdiff1": the bootstrap's fixed seed */
#define APX_DIFF_MIN_STEPS 3			/* steps with times a side needs at least */
#define APX_DIFF_OVERLAP_MIN 0.3		/* kernels' overlap under which two command lines
						 * that differ are different programs */
#define APX_DIFF_WORK_SHARE 0.10		/* work a step apart by more than this share of
						 * the larger side: the work differs */
#define APX_DIFF_FINDING_BAND 0.20		/* an estimate that moved less than this share
						 * of BEFORE's is the same */

/* What became of a rule's findings from BEFORE to AFTER. */
enum apx_diff_status {
	APX_DIFF_SAME,		/* in both, the estimate within APX_DIFF_FINDING_BAND */
	APX_DIFF_SHRANK,	/* in both, AFTER's estimate smaller */
	APX_DIFF_GREW,		/* in both, AFTER's estimate larger */
	APX_DIFF_DISAPPEARED,	/* only in BEFORE */
	APX_DIFF_APPEARED,	/* only in AFTER */
	APX_DIFF__COUNT,
};

/* "same", "shrank", "grew", "disappeared", "appeared" ("?" out of range). */
const char *apx_diff_status_key(unsigned status);

/* The kinds of work a step does that may differ (struct apx_diff's work_differs). */
enum {
	APX_DIFF_WORK_KERNELS = 1,	/* kernel launches a step */
	APX_DIFF_WORK_COPIES = 2,	/* copies a step */
	APX_DIFF_WORK_BYTES = 4,	/* bytes copied a step */
};

/* One run: its steps and what a step of it holds. "A step" is a mean over the steps compared
 * (the steady window's steps: those between the first one after warm-up and the last one;
 * all the steps found when fewer than APX_DIFF_MIN_STEPS of them are in it), except the step
 * times' median, p95 and interval. */
struct apx_diff_side {
	const char *path, *command;		/* the first file's (borrowed from the model) */
	char program[128];			/* what runs: the script of a Python command line
						 * ("train.py", "-m pkg"), else the executable's
						 * name */
	enum apx_step_source source;		/* how the steps were found */
	uint64_t steps_found;			/* every step found (model.h's steady.count) */
	uint64_t steps;				/* steps compared: with a time (whole in the
						 * collected time) */
	int window_only;			/* the steps compared are the steady window's (else
						 * every step found) */
	uint64_t span_start_ns, span_end_ns;	/* the first compared step's start .. the
						 * last one's end */
	double median_ns, p95_ns, mean_ns, min_ns, max_ns;	/* step times */
	double ci_lo_ns, ci_hi_ns;		/* bootstrap 95 % interval of the median */
	/* a step: */
	double kernels, kernel_ns;		/* launches and their GPU time */
	double copies, copy_bytes, copy_ns;	/* memory copies (every direction) */
	double idle_ns[APX_IDLE__COUNT];	/* the GPU's idle time by cause (steady window,
						 * summed over devices) */
	double idle_total_ns;
	uint64_t distinct_kernels;		/* kernel names (demangled) run in the span */
};

/* A kernel name (demangled) and what it took a step on each side (0: it did not run there). */
struct apx_diff_kernel {
	char *name;				/* owned, NUL-terminated; raw bytes from the
						 * trace */
	double ns[2], launches[2];		/* [0] BEFORE, [1] AFTER */
};

#define APX_DIFF_FINDINGS_MAX (2 * APX_FINDINGS_MAX)

/* A rule's findings (the main list's) on each side, summed: its estimated saving a step is the
 * one `apx report` shows (the findings' saving over the steps found). */
struct apx_diff_finding {
	const char *rule;			/* the rule's id (a literal of its table) */
	char title[200];			/* BEFORE's first finding's, else AFTER's */
	unsigned count[2];			/* findings of the rule, [0] BEFORE, [1] AFTER */
	int estimated[2];			/* some of them estimated a saving a step */
	double step_ns[2];			/* their estimated saving a step (0 unless
						 * estimated) */
	enum apx_diff_status status;
};

struct apx_diff {
	struct apx_diff_side side[2];		/* [0] BEFORE, [1] AFTER */
	/* the median step time: AFTER's - BEFORE's (negative: AFTER is faster), in % of
	 * BEFORE's, the bootstrap 95 % interval of that difference (both sides resampled), and
	 * whether the interval leaves 0 out (outside the noise) */
	double change_ns, change_pct, ci_lo_ns, ci_hi_ns;
	int outside_noise;
	unsigned resamples;
	uint64_t seed;
	/* the program check */
	int same_command;			/* the command lines are the same (the
						 * interpreter's folder aside) */
	int same_program;			/* the same script or executable */
	double overlap_time;			/* kernels' weighted Jaccard overlap: the sum over
						 * names of the smaller of the two shares of kernel
						 * time a step, over the sum of the larger (0-1) */
	double overlap_names;			/* shared names / names of either side (0-1) */
	int different_program;			/* the command lines differ and both overlaps are
						 * under APX_DIFF_OVERLAP_MIN */
	unsigned work_differs;			/* APX_DIFF_WORK_* bits */
	struct apx_diff_kernel *kernels;	/* every name run on either side, the largest
						 * change a step (either way) first */
	size_t nkernels;
	struct apx_diff_finding findings[APX_DIFF_FINDINGS_MAX];	/* BEFORE's by estimated
						 * saving, then those only AFTER has */
	size_t nfindings;
};

/* 0 when m's steady state has steps to compare; else -ENODATA with why (a sentence: "no
 * repeating step was found ...") in why. */
int apx_diff_steps_check(const struct apx_model *m, char *why, size_t cap);

/* The steady state's step times of m (the steps apx_diff_compute compares), sorted, into
 * *ret_x (allocated; release with free) and *ret_n. -ENODATA: fewer than APX_DIFF_MIN_STEPS;
 * -ENOMEM. */
int apx_diff_step_times(const struct apx_model *m, double **ret_x, size_t *ret_n);

/* The bootstrap 95 % interval of median(b) - median(a), both resampled (resamples times, the
 * generator seeded with seed): apx tune's runs. 0, -EINVAL (empty), -ENOMEM. */
int apx_diff_median_diff_ci(const double *a, size_t na, const double *b, size_t nb,
			    unsigned resamples, uint64_t seed, double *ret_lo, double *ret_hi);

/* Compare before and after (finished models, their rules run into fb and fa) into *ret, with
 * resamples bootstrap resamples (0: APX_DIFF_RESAMPLES). 0; -ENODATA when a side has no steps
 * to compare (apx_diff_steps_check); -ENOMEM. *ret is written only on success; release it. */
int apx_diff_compute(const struct apx_model *before, const struct apx_findings *fb,
		     const struct apx_model *after, const struct apx_findings *fa,
		     unsigned resamples, struct apx_diff *ret);
void apx_diff_release(struct apx_diff *d);

/* For tests: the bootstrap 95 % interval of the median of x[0..n-1] (sorted ascending) with
 * resamples resamples from seed. 0 or -ENOMEM/-EINVAL. */
int apx_diff_median_ci(const double *x, size_t n, unsigned resamples, uint64_t seed,
		       double *ret_lo, double *ret_hi);

#endif
