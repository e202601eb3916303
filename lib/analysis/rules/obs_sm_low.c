/*
 * obs_sm_low.c - nvperfd's sm-low: the process's mean SM utilization (NVML per-process samples,
 * at least 3) under threshold.sm_low_pct: small kernels or a host-bound loop. No saving
 * estimated. Runs on a struct apx_procobs (procobs.c's table) when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

#define MIN_SAMPLES 3

APX_OBS_RULE_DECL(sm_low)
{
	struct apx_finding *f;
	double mean;

	if (!o->th.sm_low_pct)
		return apx_procobs_off(why, why_len, "threshold.sm_low_pct");
	if (!o->sm_valid || o->sm_samples < MIN_SAMPLES) {
		snprintf(why, why_len, "%" PRIu64 " NVML samples of its SM utilization (%d needed)",
			 o->sm_valid ? o->sm_samples : 0, MIN_SAMPLES);
		return APX_RULE_NOT_MEASURED;
	}
	if (o->sm_util_sum >= o->th.sm_low_pct * o->sm_samples)
		return APX_RULE_CLEAN;
	mean = (double)o->sm_util_sum / (double)o->sm_samples;
	f = apx_procobs_finding(out, o, "sm-low", APX_SEV_INFO, "threshold.sm_low_pct", NULL);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "mean SM utilization %.1f%% on GPU %d (threshold %"
		 PRIu64 "%%)", mean, (int)o->gpu_device, o->th.sm_low_pct);
	snprintf(f->fix, sizeof(f->fix), "small kernels or a host-bound loop: batch more work per "
		 "launch, CUDA graphs or torch.compile; 'apx analyze' shows where the time goes");
	apx_finding_metric(f, "device", (double)o->gpu_device, APX_UNIT_ID);
	apx_finding_metric(f, "sm_util_pct", mean, APX_UNIT_PCT);
	apx_finding_metric(f, "samples", (double)o->sm_samples, APX_UNIT_COUNT);
	apx_finding_metric(f, "threshold_pct", (double)o->th.sm_low_pct, APX_UNIT_PCT);
	return APX_RULE_FIRED;
}
