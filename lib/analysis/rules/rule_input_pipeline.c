/*
 * rule_input_pipeline.c - the input pipeline starves the GPU: steady-state idle time attributed
 * to the host producing input (idle_attrib.c: gaps ended by a host-to-device copy, less what a
 * sync, a copy call or page faults explain). Saving: that time, which preparing batches in
 * DataLoader workers hides. When the trace shows the process had no child processes at all,
 * the same time is rule_dataloader_workers.c's finding (its cause is named: no workers) and
 * this rule leaves it to it: one finding per idle time.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/stacks.h"

#include "base/banned.h"

APX_RULE_DECL(input_pipeline)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_DATA];
	uint64_t active = m->steady_ns;
	struct apx_finding *f;

	if (!active || (double)idle < 0.05 * (double)active)
		return APX_RULE_CLEAN;
	if (apx_child_processes(m) == 0) {
		snprintf(why, why_len, "the same gaps are dataloader-workers' finding (no workers)");
		return APX_RULE_CLEAN;
	}
	f = apx_finding_add(out, m, "input-pipeline",
			    (double)idle > 0.25 * (double)active ? APX_SEV_CRITICAL : APX_SEV_WARNING,
			    (double)idle, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "the GPU waited for input data %.0f%% of its active time",
		 100.0 * (double)idle / (double)active);
	snprintf(f->model, sizeof(f->model),
		 "idle gaps ended by a host-to-device copy close when the next batch is prefetched: "
		 "saving = those gaps");
	apx_data_gaps_evidence(m, f);
	apx_finding_metric(f, "active_ns", (double)active, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Prepare batches ahead of the GPU:\n"
		 "  DataLoader(ds, batch_size=..., num_workers=8, pin_memory=True, prefetch_factor=4,\n"
		 "             persistent_workers=True)\n"
		 "  x = x.to('cuda', non_blocking=True)");
	apx_lines_of_idle(m, f, 1u << APX_IDLE_DATA);
	return APX_RULE_FIRED;
}
