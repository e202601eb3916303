/*
 * obs_cpu_low.c - nvperfd's cpu-low: the process's mean CPU use over its run (utime + stime of
 * every thread, /proc) under threshold.cpu_low_pct of one core: it mostly waited (for data,
 * I/O or the GPU). No saving estimated. Runs on a struct apx_procobs (procobs.c's table) when
 * a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(cpu_low)
{
	double pct = (double)o->cpu_ns * 100.0 / (double)o->run_ns;
	struct apx_finding *f;

	if (!o->th.cpu_low_pct)
		return apx_procobs_off(why, why_len, "threshold.cpu_low_pct");
	if (!(pct < (double)o->th.cpu_low_pct))
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "cpu-low", APX_SEV_INFO, "threshold.cpu_low_pct", NULL);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "average CPU %.1f%% of a core over %.0f s (threshold %"
		 PRIu64 "%%): the process mostly waited", pct, (double)o->run_ns / 1e9,
		 o->th.cpu_low_pct);
	snprintf(f->fix, sizeof(f->fix), "see what it waits for: data loading (DataLoader "
		 "num_workers, pin_memory), I/O, or GPU synchronization; 'apx analyze' shows "
		 "where");
	apx_finding_metric(f, "cpu_pct", pct, APX_UNIT_PCT);
	apx_finding_metric(f, "run_ns", (double)o->run_ns, APX_UNIT_NS);
	apx_finding_metric(f, "threshold_pct", (double)o->th.cpu_low_pct, APX_UNIT_PCT);
	return APX_RULE_FIRED;
}
