/*
 * obs_memory_capacity.c - memory-capacity (the rule of rule_memory_capacity.c) on what NVML saw:
 * the device memory in use on the process's GPU reached threshold.gpu_mem_pct of the total
 * while it ran (the device's, so other processes' memory counts too). A risk, not a speed-up:
 * a warning with no saving, the report's fix. Runs on a struct apx_procobs (procobs.c's table)
 * when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(memory_capacity)
{
	struct apx_finding *f;

	if (!o->th.gpu_mem_pct)
		return apx_procobs_off(why, why_len, "threshold.gpu_mem_pct");
	if (!o->dev_mem_valid) {
		snprintf(why, why_len, "no NVML memory reading of its GPU");
		return APX_RULE_NOT_MEASURED;
	}
	if (o->dev_mem_peak_permille < o->th.gpu_mem_pct * 10)
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "memory-capacity", APX_SEV_WARNING,
				NULL, "a risk (out of memory), not a speed-up");
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "GPU %d memory reached %.1f%% of its total while the "
		 "process ran (threshold %" PRIu64 "%%)", (int)o->gpu_device,
		 (double)o->dev_mem_peak_permille / 10.0, o->th.gpu_mem_pct);
	snprintf(f->fix, sizeof(f->fix), "%s", apx_memory_capacity_fix);
	apx_finding_metric(f, "device", (double)o->gpu_device, APX_UNIT_ID);
	apx_finding_metric(f, "peak_pct", (double)o->dev_mem_peak_permille / 10.0, APX_UNIT_PCT);
	apx_finding_metric(f, "threshold_pct", (double)o->th.gpu_mem_pct, APX_UNIT_PCT);
	return APX_RULE_FIRED;
}
