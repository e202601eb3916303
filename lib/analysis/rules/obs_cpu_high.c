/*
 * obs_cpu_high.c - nvperfd's cpu-high: the process's mean CPU use over its run (utime + stime
 * of every thread, /proc; 100 = one core) over threshold.cpu_high_pct: the Python side may be
 * the bottleneck. No saving estimated. Runs on a struct apx_procobs (procobs.c's table) when a
 * tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(cpu_high)
{
	double pct = (double)o->cpu_ns * 100.0 / (double)o->run_ns;
	struct apx_finding *f;

	if (!o->th.cpu_high_pct)
		return apx_procobs_off(why, why_len, "threshold.cpu_high_pct");
	if (!(pct > (double)o->th.cpu_high_pct))
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "cpu-high", APX_SEV_INFO, "threshold.cpu_high_pct", NULL);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "average CPU %.0f%% over %.0f s (threshold %" PRIu64
		 "%%)", pct, (double)o->run_ns / 1e9, o->th.cpu_high_pct);
	snprintf(f->fix, sizeof(f->fix), "profile the Python side ('apx analyze'): data "
		 "preprocessing or launch overhead may be the bottleneck");
	apx_finding_metric(f, "cpu_pct", pct, APX_UNIT_PCT);
	apx_finding_metric(f, "run_ns", (double)o->run_ns, APX_UNIT_NS);
	apx_finding_metric(f, "threshold_pct", (double)o->th.cpu_high_pct, APX_UNIT_PCT);
	return APX_RULE_FIRED;
}
