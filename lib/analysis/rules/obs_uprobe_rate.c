/*
 * obs_uprobe_rate.c - nvperfd's uprobe-rate: the uprobes on the process's libcuda were removed
 * because it made more probed calls within a second than uprobe_max_rate allows (each costs a
 * few microseconds): the copy counts and L2 settings cover only the start of the run. A note
 * about the measurement, not the program. Runs on a struct apx_procobs (procobs.c's table)
 * when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

APX_OBS_RULE_DECL(uprobe_rate)
{
	struct apx_finding *f;

	if (o->uprobes == APX_PROCOBS_UP_NONE) {
		snprintf(why, why_len, "no uprobes on its libcuda");
		return APX_RULE_NOT_MEASURED;
	}
	if (o->uprobes != APX_PROCOBS_UP_DETACHED_RATE)
		return APX_RULE_CLEAN;
	f = apx_procobs_finding(out, o, "uprobe-rate", APX_SEV_INFO,
				NULL, "about the measurement: no saving");
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "probes removed after %" PRIu64 " libcuda calls in "
		 "1 s (uprobe_max_rate %" PRIu64 "): copy counts cover only the start of the run",
		 o->over_rate_calls, o->th.uprobe_max_rate);
	snprintf(f->fix, sizeof(f->fix), "raise uprobe_max_rate in nvperfd.conf to keep counting "
		 "(each probed call costs a few microseconds)");
	apx_finding_metric(f, "calls_in_1s", (double)o->over_rate_calls, APX_UNIT_COUNT);
	apx_finding_metric(f, "max_rate_per_s", (double)o->th.uprobe_max_rate, APX_UNIT_RATIO);
	return APX_RULE_FIRED;
}
