/*
 * obs_pageable_copy.c - pageable-copy (the rule of rule_pageable_copy.c) on what nvperfd's
 * uprobes counted of a process's libcuda copies: host<->device bytes from or to pageable memory
 * reaching threshold.pageable_copy_bytes. With the calls timed (uprobe_copy_time = yes) the
 * saving is the report's model: the bytes at the bandwidth the process's own pinned copies
 * reached (when they were large enough to tell: finding.h), else at the host link's floor,
 * against the time the pageable calls took; its share of the run sets the severity as in the
 * report (finding.c). Untimed, nothing is estimated and it is a warning. Same id, record and
 * fix as the report's. Runs on a struct apx_procobs (procobs.c's table) when a process ends.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <apx/format.h>

#include "analysis/procobs.h"

#include "base/banned.h"

/* The bandwidth pinned copies reached in one direction, 0 when too small to tell. */
static double pinned_rate(const struct apx_procobs_copies *c)
{
	if (c->bytes[1] < APX_PINNED_RATE_MIN_BYTES || !c->ns[1] || !c->calls[1] ||
	    c->bytes[1] / c->calls[1] < APX_PINNED_RATE_MIN_COPY)
		return 0;
	return (double)c->bytes[1] / ((double)c->ns[1] / 1e9);
}

APX_OBS_RULE_DECL(pageable_copy)
{
	const struct apx_procobs_copies *dir[2] = { &o->h2d, &o->d2h };
	static const unsigned kinds[2] = { APX_COPY_H2D, APX_COPY_D2H };
	uint64_t pb = o->h2d.bytes[0] + o->d2h.bytes[0], pns = o->h2d.ns[0] + o->d2h.ns[0];
	uint64_t pc = o->h2d.calls[0] + o->d2h.calls[0];
	int timed = o->copy_time && pns, floor_used = 0;
	double saving = 0, ideal[2] = { 0 }, pct;
	char a[32], b[32], rate[48] = "rate n/a: uprobe_copy_time = no";
	struct apx_finding *f;

	if (o->uprobes == APX_PROCOBS_UP_NONE) {
		snprintf(why, why_len, "no uprobes on its libcuda (copies not counted)");
		return APX_RULE_NOT_MEASURED;
	}
	if (!o->th.pageable_copy_bytes)
		return apx_procobs_off(why, why_len, "threshold.pageable_copy_bytes");
	if (pb < o->th.pageable_copy_bytes)
		return APX_RULE_CLEAN;
	for (int i = 0; i < 2; i++) {
		double r = pinned_rate(dir[i]);

		if (!dir[i]->calls[0])
			continue;
		if (!r) {
			r = APX_LINK_FLOOR_BPS;
			floor_used = 1;
		}
		ideal[i] = (double)dir[i]->bytes[0] / r * 1e9;
		if (timed && (double)dir[i]->ns[0] > ideal[i])
			saving += (double)dir[i]->ns[0] - ideal[i];
	}
	pct = 100.0 * saving / (double)o->run_ns;
	f = apx_finding_new(out, "pageable-copy", apx_pageable_copy_severity(pct, timed), saving,
			    o->run_ns, timed ? (floor_used ? 60 : 80) : 100);
	if (!f)
		return APX_RULE_FIRED;
	f->saving_estimated = timed;
	if (timed)
		snprintf(rate, sizeof(rate), "%.2f GB/s in the calls", (double)pb / (double)pns);
	snprintf(f->title, sizeof(f->title), "%s copied between host and pageable memory in %"
		 PRIu64 " calls (%s; threshold %s)", apx_procobs_fmt_bytes(a, sizeof(a), pb), pc,
		 rate, apx_procobs_fmt_bytes(b, sizeof(b), o->th.pageable_copy_bytes));
	if (timed)
		snprintf(f->model, sizeof(f->model), "bytes at the %s minus the time the pageable "
			 "copy calls took (uprobes)", floor_used ? "host link's floor (12 GB/s) "
			 "where the pinned copies were too small to tell" : "bandwidth its pinned "
			 "copies reached");
	else
		snprintf(f->model, sizeof(f->model), "a threshold crossed (threshold.pageable_copy_"
			 "bytes); calls not timed (uprobe_copy_time = no): no saving estimated");
	snprintf(f->fix, sizeof(f->fix), "%s", apx_pageable_copy_fix);
	apx_finding_metric(f, "bytes", (double)pb, APX_UNIT_BYTES);
	apx_finding_metric(f, "copies", (double)pc, APX_UNIT_COUNT);
	if (timed) {
		apx_finding_metric(f, "copy_ns", (double)pns, APX_UNIT_NS);
		apx_finding_metric(f, "rate_bytes_per_s", (double)pb / (double)pns * 1e9,
				   APX_UNIT_BYTES_PER_S);
	}
	apx_finding_metric(f, "threshold_bytes", (double)o->th.pageable_copy_bytes, APX_UNIT_BYTES);
	{
		static const char *const keys[] = { "copies", "bytes", "copy_ns", "ideal_ns" };
		static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_BYTES, APX_UNIT_NS,
						  APX_UNIT_NS };

		apx_evidence_cols(f, "direction", 4, keys, units);
		for (int i = 0; i < 2; i++) {
			const char *dn = apx_copy_kind_name(kinds[i]);
			double *v = dir[i]->calls[0] ? apx_evidence_row(f, dn, strlen(dn)) : NULL;

			if (!v)
				continue;
			v[0] = (double)dir[i]->calls[0];
			v[1] = (double)dir[i]->bytes[0];
			v[2] = timed ? (double)dir[i]->ns[0] : 0;
			v[3] = ideal[i];
		}
	}
	return APX_RULE_FIRED;
}
