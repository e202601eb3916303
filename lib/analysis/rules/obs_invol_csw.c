/*
 * obs_invol_csw.c - nvperfd's invol-csw: involuntary context switches per second of the run
 * (every thread's, /proc) over threshold.invol_csw_rate: threads were preempted (too many
 * threads for the cores, or a busy machine). No saving estimated. Runs on a struct apx_procobs
 * (procobs.c's table) when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(invol_csw)
{
	double rate = (double)o->invol_csw / ((double)o->run_ns / 1e9);
	struct apx_finding *f;

	if (!o->th.invol_csw_rate)
		return apx_procobs_off(why, why_len, "threshold.invol_csw_rate");
	if (!(rate > (double)o->th.invol_csw_rate))
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "invol-csw", APX_SEV_WARNING,
				"threshold.invol_csw_rate", NULL);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%.0f involuntary context switches/s (threshold %"
		 PRIu64 "): threads were preempted; too many threads or a busy CPU", rate,
		 o->th.invol_csw_rate);
	snprintf(f->fix, sizeof(f->fix), "use fewer threads than cores (torch.set_num_threads, "
		 "OMP_NUM_THREADS, DataLoader num_workers) or a less loaded machine");
	apx_finding_metric(f, "invol_csw", (double)o->invol_csw, APX_UNIT_COUNT);
	apx_finding_metric(f, "invol_csw_per_s", rate, APX_UNIT_RATIO);
	apx_finding_metric(f, "threshold_per_s", (double)o->th.invol_csw_rate, APX_UNIT_RATIO);
	return APX_RULE_FIRED;
}
