/*
 * procobs.h - the rule engine's second input: what nvperfd saw of a Python process from
 * outside, by the time it ended (/proc totals, the eBPF uprobes' copy counts and L2 settings,
 * NVML's samples), with the thresholds of the user's config. nvperfd fills one at each exit
 * (lib/daemon/observe.c: copies of counters it keeps anyway, no allocation) and runs the
 * rules registered for it (procobs.c's table, one file each: rules/obs_<id>.c) into a struct
 * apx_findings of finding.h, the record apx report's rules make. Never prints; any thread.
 */
#ifndef APX_ANALYSIS_PROCOBS_H
#define APX_ANALYSIS_PROCOBS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"

/* nvperfd.conf's threshold.* keys (and the uprobe keys the findings quote), as parsed: 0 = off
 * unless said otherwise. */
struct apx_procobs_th {
	uint64_t min_runtime_ns;	/* runs shorter than this raise nothing */
	uint64_t rss_peak_bytes;
	uint64_t invol_csw_rate;	/* per second of the run */
	uint64_t cpu_low_pct, cpu_high_pct;	/* of one core */
	uint64_t pageable_copy_bytes;
	uint64_t l2_persist;		/* bool */
	uint64_t gpu_idle_pct, sm_low_pct, gpu_mem_pct;
	uint64_t uprobe_max_rate;	/* probed calls/s (uprobe-rate quotes it) */
};

enum apx_procobs_up {			/* uprobes on the process's libcuda */
	APX_PROCOBS_UP_NONE = 0,	/* none attached: the copy and L2 rules do not measure */
	APX_PROCOBS_UP_ATTACHED = 1,
	APX_PROCOBS_UP_DETACHED_RATE = 2,	/* removed over uprobe_max_rate: the counts cover
						 * the start of the run */
};

/* [0] pageable host memory, [1] pinned */
struct apx_procobs_copies {
	uint64_t calls[2], bytes[2], ns[2];	/* ns: time in the calls (copy_time only) */
};

struct apx_procobs {
	uint64_t run_ns;		/* process start to end */
	uint64_t cpu_ns;		/* utime + stime of every thread */
	uint64_t rss_peak_bytes;
	uint64_t invol_csw;		/* of every thread seen */
	/* the uprobes */
	int uprobes;			/* enum apx_procobs_up */
	int copy_time;			/* copies were timed (uprobe_copy_time = yes) */
	struct apx_procobs_copies h2d, d2h;
	uint64_t over_rate_calls;	/* calls within 1 s when the probes were removed */
	uint64_t l2_limit_bytes;	/* the persisting-L2 set-aside set last, 0 = none */
	uint64_t apw_windows;		/* access-policy windows set */
	uint64_t apw_persisting;	/* ... asking for persisting accesses (non-empty) */
	uint64_t l2_resets;
	/* NVML (counts of samples; 0 samples: not measured) */
	int32_t gpu_device;		/* the last device it ran on, -1 = none seen */
	uint64_t gpu_util_samples;	/* samples where it held a GPU whose utilization NVML
					 * gave */
	uint64_t gpu_idle_samples;	/* ... and that utilization was 0 */
	int sm_valid;			/* per-process SM utilization given */
	uint64_t sm_samples, sm_util_sum;	/* its SM utilization %, summed over sm_samples */
	int dev_mem_valid;
	uint32_t dev_mem_peak_permille;	/* its device's highest memory use, of the total */
	struct apx_procobs_th th;
};

/* The rules that observe processes, in the order nvperfd reports their findings. */
const struct apx_rule *apx_procobs_rules(size_t *ret_n);
/* Run them on o into out (reset first; findings in table order, not ranked). A run shorter
 * than th.min_runtime_ns (or of 0 ns) raises nothing: every rule is NOT_MEASURED. */
void apx_procobs_run(const struct apx_procobs *o, struct apx_findings *out);

/* The command that looks closer at process pid, when one of its findings f[0..nf) is a big
 * problem: severity APX_SEV_WARNING or above (the report's WARNING and CRITICAL). A process
 * using CUDA gets the collector loaded into it, "apx attach PID --duration 10 -o
 * attach-PID.apx"; one without, its Python stacks sampled from outside, "apx attach PID
 * --python-only --duration 10" (cli/cmd_attach.c, docs/attach.md). Only the pid, a number,
 * goes into it: nothing the process chose (its name, argv). Returns the length written to buf
 * (NUL-terminated), 0 with buf "" when no finding is that severe, -EINVAL for pid <= 0 or a
 * buf too small (buf "" then too). */
#define APX_NEXT_CMD_MAX 80
#define APX_NEXT_DURATION_S 10
int apx_procobs_next_cmd(const struct apx_finding *f, size_t nf, int pid, int uses_cuda,
			 char *buf, size_t cap);

/* For the rules: bytes as nvperfd writes them ("36.1 KiB", "1.5 GiB"). */
const char *apx_procobs_fmt_bytes(char *buf, size_t cap, uint64_t bytes);
/* why[] for a rule whose threshold key is 0 (off). */
enum apx_rule_status apx_procobs_off(char *why, size_t why_len, const char *key);
/* A finding of a threshold the process crossed: no saving estimated (saving_estimated 0,
 * confidence 100, over the process's run); model as given, or NULL for "a threshold crossed
 * (KEY): no saving estimated". NULL when out is full. */
struct apx_finding *apx_procobs_finding(struct apx_findings *out, const struct apx_procobs *o,
					const char *rule, int severity, const char *key,
					const char *model);

#define APX_OBS_RULE_DECL(name)                                                                 \
	enum apx_rule_status apx_obs_##name(const struct apx_procobs *o, struct apx_findings *out, \
					    char *why, size_t why_len)

APX_OBS_RULE_DECL(rss_peak);
APX_OBS_RULE_DECL(invol_csw);
APX_OBS_RULE_DECL(cpu_low);
APX_OBS_RULE_DECL(cpu_high);
APX_OBS_RULE_DECL(pageable_copy);
APX_OBS_RULE_DECL(l2_persistence);
APX_OBS_RULE_DECL(uprobe_rate);
APX_OBS_RULE_DECL(gpu_idle);
APX_OBS_RULE_DECL(sm_low);
APX_OBS_RULE_DECL(memory_capacity);

#endif
