/*
 * procobs.c - the table of the rules that observe a process from outside (nvperfd's findings,
 * one file each under rules/obs_<id>.c) and running them on a struct apx_procobs (procobs.h).
 * The rules that also read traces (pageable-copy, l2-persistence, memory-capacity) have the
 * same id, title and observe function as their entry in apx report's table (rules.c), which
 * holds their run function too (here NULL: the trace half needs the rest of lib/analysis,
 * which nvperfd does not link; test-rules checks the two entries agree). Also the command a
 * summary with a big problem suggests (apx_procobs_next_cmd). Called by nvperfd when a tracked
 * process ends (lib/daemon/tracker.c, summary.c), and by the unit tests.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/procobs.h"

#include "base/banned.h"

static const struct apx_rule rules[] = {
	{ "rss-peak", "peak resident memory over threshold.rss_peak", NULL, apx_obs_rss_peak },
	{ "invol-csw", "involuntary context switches over threshold.invol_csw_rate", NULL,
	  apx_obs_invol_csw },
	{ "cpu-low", "mean CPU use under threshold.cpu_low_pct: the process mostly waited", NULL,
	  apx_obs_cpu_low },
	{ "cpu-high", "mean CPU use over threshold.cpu_high_pct", NULL, apx_obs_cpu_high },
	{ "pageable-copy", "host<->device copies from pageable memory", NULL,
	  apx_obs_pageable_copy },
	{ "l2-persistence", "L2 persistence: a window worth setting, or set too large",
	  NULL, apx_obs_l2_persistence },
	{ "uprobe-rate", "uprobes removed over uprobe_max_rate", NULL, apx_obs_uprobe_rate },
	{ "gpu-idle", "the process's GPU idle in samples over threshold.gpu_idle_pct", NULL,
	  apx_obs_gpu_idle },
	{ "sm-low", "mean SM utilization under threshold.sm_low_pct", NULL, apx_obs_sm_low },
	{ "memory-capacity", "device memory near capacity, pinned memory",
	  NULL, apx_obs_memory_capacity },
};

const struct apx_rule *apx_procobs_rules(size_t *ret_n)
{
	*ret_n = sizeof(rules) / sizeof(rules[0]);
	return rules;
}

void apx_procobs_run(const struct apx_procobs *o, struct apx_findings *out)
{
	int short_run = !o->run_ns || o->run_ns < o->th.min_runtime_ns;

	_Static_assert(sizeof(rules) / sizeof(rules[0]) <= APX_RULES_MAX, "results[] too small");
	/* the list's head only: the findings are zeroed one by one as they are made */
	out->n = out->nresults = out->recorded_dropped = 0;
	out->startup_dominates = 0;
	out->steady_budget_ns = 0;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		struct apx_rule_result *res = &out->results[out->nresults++];

		res->rule = rules[i].id;
		res->title = rules[i].title;
		res->why[0] = 0;
		if (short_run) {
			snprintf(res->why, sizeof(res->why), "ran %.1f s, under "
				 "threshold.min_runtime (%.1f s)", (double)o->run_ns / 1e9,
				 (double)o->th.min_runtime_ns / 1e9);
			res->status = APX_RULE_NOT_MEASURED;
			continue;
		}
		res->status = rules[i].observe(o, out, res->why, sizeof(res->why));
	}
}

int apx_procobs_next_cmd(const struct apx_finding *f, size_t nf, int pid, int uses_cuda,
			 char *buf, size_t cap)
{
	int big = 0, n;

	if (!buf || !cap)
		return -EINVAL;
	buf[0] = 0;
	if (pid <= 0)
		return -EINVAL;
	for (size_t i = 0; i < nf && !big; i++)
		big = f[i].severity >= APX_SEV_WARNING;
	if (!big)
		return 0;
	if (uses_cuda)
		n = snprintf(buf, cap, "apx attach %d --duration %d -o attach-%d.apx", pid,
			     APX_NEXT_DURATION_S, pid);
	else
		n = snprintf(buf, cap, "apx attach %d --python-only --duration %d", pid,
			     APX_NEXT_DURATION_S);
	if (n < 0 || (size_t)n >= cap) {
		buf[0] = 0;
		return -EINVAL;
	}
	return n;
}

const char *apx_procobs_fmt_bytes(char *buf, size_t cap, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, cap, "%.1f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
	return buf;
}

enum apx_rule_status apx_procobs_off(char *why, size_t why_len, const char *key)
{
	snprintf(why, why_len, "%s = 0 (off)", key);
	return APX_RULE_NOT_MEASURED;
}

struct apx_finding *apx_procobs_finding(struct apx_findings *out, const struct apx_procobs *o,
					const char *rule, int severity, const char *key,
					const char *model)
{
	struct apx_finding *f = apx_finding_new(out, rule, severity, 0, o->run_ns, 100);

	if (!f)
		return NULL;
	f->saving_estimated = 0;
	if (model)
		snprintf(f->model, sizeof(f->model), "%s", model);
	else
		snprintf(f->model, sizeof(f->model), "a threshold crossed (%s): no saving estimated",
			 key);
	return f;
}
