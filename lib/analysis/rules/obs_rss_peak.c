/*
 * obs_rss_peak.c - nvperfd's rss-peak: the process's peak resident memory (VmHWM, /proc) reached
 * threshold.rss_peak. A threshold seen crossed, not a speed-up: no saving estimated. Runs on a
 * struct apx_procobs (procobs.c's table) when a tracked process ends.
 */
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(rss_peak)
{
	struct apx_finding *f;
	char a[32], b[32];

	if (!o->th.rss_peak_bytes)
		return apx_procobs_off(why, why_len, "threshold.rss_peak");
	if (o->rss_peak_bytes < o->th.rss_peak_bytes)
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "rss-peak", APX_SEV_WARNING,
				NULL, "a threshold crossed (threshold.rss_peak): a risk (host "
				"memory), no saving estimated");
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "peak RSS %s (threshold %s)",
		 apx_procobs_fmt_bytes(a, sizeof(a), o->rss_peak_bytes),
		 apx_procobs_fmt_bytes(b, sizeof(b), o->th.rss_peak_bytes));
	snprintf(f->fix, sizeof(f->fix), "look for host copies of large tensors (.cpu(), "
		 ".numpy()), datasets held in memory, or DataLoader prefetch_factor x num_workers");
	apx_finding_metric(f, "rss_peak_bytes", (double)o->rss_peak_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "threshold_bytes", (double)o->th.rss_peak_bytes, APX_UNIT_BYTES);
	return APX_RULE_FIRED;
}
