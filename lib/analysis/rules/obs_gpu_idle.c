/*
 * obs_gpu_idle.c - nvperfd's gpu-idle: of the NVML samples where the process held a GPU whose
 * utilization the driver gave (at least 3), the share where that GPU was idle (0 %) is over
 * threshold.gpu_idle_pct. All idle time, whatever its cause: apx report's gpu-starvation is the
 * part a trace cannot explain, another fact. No saving estimated. Runs on a struct
 * apx_procobs (procobs.c's table) when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

#define MIN_SAMPLES 3

APX_OBS_RULE_DECL(gpu_idle)
{
	struct apx_finding *f;
	double pct;

	if (!o->th.gpu_idle_pct)
		return apx_procobs_off(why, why_len, "threshold.gpu_idle_pct");
	if (o->gpu_util_samples < MIN_SAMPLES) {
		snprintf(why, why_len, "%" PRIu64 " NVML samples of its GPU's utilization (%d "
			 "needed)", o->gpu_util_samples, MIN_SAMPLES);
		return APX_RULE_NOT_MEASURED;
	}
	if (o->gpu_idle_samples * 100 <= o->th.gpu_idle_pct * o->gpu_util_samples)
		return APX_RULE_CLEAN;
	pct = 100.0 * (double)o->gpu_idle_samples / (double)o->gpu_util_samples;
	f = apx_procobs_finding(out, o, "gpu-idle", APX_SEV_WARNING,
				"threshold.gpu_idle_pct", NULL);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "GPU %d idle in %.0f%% of the samples while the "
		 "process held it (threshold %" PRIu64 "%%)", (int)o->gpu_device, pct,
		 o->th.gpu_idle_pct);
	snprintf(f->fix, sizeof(f->fix), "see what the GPU waits for with 'apx analyze': data "
		 "loading, host synchronization, or Python overhead between launches");
	apx_finding_metric(f, "device", (double)o->gpu_device, APX_UNIT_ID);
	apx_finding_metric(f, "idle_pct", pct, APX_UNIT_PCT);
	apx_finding_metric(f, "samples", (double)o->gpu_util_samples, APX_UNIT_COUNT);
	apx_finding_metric(f, "threshold_pct", (double)o->th.gpu_idle_pct, APX_UNIT_PCT);
	return APX_RULE_FIRED;
}
