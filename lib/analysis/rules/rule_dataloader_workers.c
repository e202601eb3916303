/*
 * rule_dataloader_workers.c - the GPU waits for data that the training process makes itself:
 * idle gaps ended by a host-to-device copy (the next batch arriving: timeline.c's "data"
 * cause) while the process has no child processes at all, so no DataLoader worker produced
 * batches ahead (DataLoader(num_workers=0), the default, runs __getitem__ and collate in the
 * training loop). The collector lists the process's children (PROCESS records, proc.c); a
 * trace without that list cannot tell and says so.
 *
 * Saving: those gaps, which N worker processes prefetching batches close when they produce a
 * batch faster than a step (prefetch_factor batches each, in pinned memory).
 * saving: from the idle attribution when merged
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/stacks.h"

#include "base/banned.h"

APX_RULE_DECL(dataloader_workers)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_DATA];
	uint64_t active = m->steady_ns;
	struct apx_finding *f;
	long kids;

	if (!active || (double)idle < 0.05 * (double)active)
		return APX_RULE_CLEAN;
	kids = apx_child_processes(m);
	if (kids < 0) {
		snprintf(why, why_len, "the trace does not list child processes (an older "
			 "collector): cannot tell whether DataLoader workers ran");
		return APX_RULE_NOT_MEASURED;
	}
	if (kids > 0)
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "dataloader-workers",
			    (double)idle > 0.25 * (double)active ? APX_SEV_CRITICAL : APX_SEV_WARNING,
			    (double)idle, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title),
		 "no DataLoader workers: the GPU waited for batches %.0f%% of its active time",
		 100.0 * (double)idle / (double)active);
	snprintf(f->model, sizeof(f->model),
		 "worker processes make the next batches while the GPU computes: saving = the "
		 "idle gaps ended by a host-to-device copy");
	apx_data_gaps_evidence(m, f);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"the training process had no child processes (the collector lists them)\n");
	apx_finding_metric(f, "active_ns", (double)active, APX_UNIT_NS);
	apx_finding_metric(f, "child_processes", 0, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Make batches in worker processes, ahead of the GPU:\n"
		 "  DataLoader(ds, batch_size=..., num_workers=8, pin_memory=True,\n"
		 "             persistent_workers=True, prefetch_factor=4)\n"
		 "  x = x.to('cuda', non_blocking=True)\n"
		 "(num_workers: about the CPU cores per GPU; move per-sample work into __getitem__)");
	apx_lines_of_idle(m, f, 1u << APX_IDLE_DATA);
	return APX_RULE_FIRED;
}
