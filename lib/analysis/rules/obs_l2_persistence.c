/*
 * obs_l2_persistence.c - l2-persistence (the rule of rule_l2_persistence.c) on the L2 settings
 * nvperfd's uprobes saw a process make (cuCtxSetLimit, cuStreamSetAttribute), with
 * threshold.l2_persist = yes:
 *   - access-policy windows asking for persisting accesses with no persisting-L2 set-aside:
 *     the windows do nothing (a warning: the report's "window larger than the set-aside" with
 *     a set-aside of 0);
 *   - persistence in use (a set-aside or windows): what was set (info, no fix);
 *   - neither, by a process that copied to the GPU while probed: a window may help (info).
 * No saving estimated (no kernel counters from outside). Runs on a struct apx_procobs
 * (procobs.c's table) when a tracked process ends.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/procobs.h"

#include "base/banned.h"

static struct apx_finding *add(const struct apx_procobs *o, struct apx_findings *out, int sev)
{
	struct apx_finding *f = apx_procobs_finding(out, o, "l2-persistence", sev, NULL,
						    "settings the uprobes saw "
						    "(threshold.l2_persist): no saving estimated");

	if (!f)
		return NULL;
	apx_finding_metric(f, "setaside_bytes", (double)o->l2_limit_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "windows", (double)o->apw_windows, APX_UNIT_COUNT);
	apx_finding_metric(f, "persisting_windows", (double)o->apw_persisting, APX_UNIT_COUNT);
	apx_finding_metric(f, "resets", (double)o->l2_resets, APX_UNIT_COUNT);
	return f;
}

APX_OBS_RULE_DECL(l2_persistence)
{
	struct apx_finding *f;
	char a[32];

	if (o->uprobes == APX_PROCOBS_UP_NONE) {
		snprintf(why, why_len, "no uprobes on its libcuda (L2 settings not seen)");
		return APX_RULE_NOT_MEASURED;
	}
	if (!o->th.l2_persist) {
		snprintf(why, why_len, "threshold.l2_persist = no");
		return APX_RULE_NOT_MEASURED;
	}
	if (o->apw_persisting && !o->l2_limit_bytes) {
		f = add(o, out, APX_SEV_WARNING);
		if (!f)
			return APX_RULE_FIRED;
		snprintf(f->title, sizeof(f->title), "%" PRIu64 " L2 access-policy windows asked "
			 "for persisting accesses but no persisting-L2 limit was set: L2 "
			 "persistence not in effect", o->apw_persisting);
		snprintf(f->fix, sizeof(f->fix), "set the persisting-L2 set-aside first: "
			 "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes); without it "
			 "the windows do nothing");
		return APX_RULE_FIRED;
	}
	if (o->l2_limit_bytes || o->apw_windows) {
		f = add(o, out, APX_SEV_INFO);
		if (!f)
			return APX_RULE_FIRED;
		snprintf(f->title, sizeof(f->title), "L2 persistence in use: set-aside %s, %" PRIu64
			 " access-policy windows (%" PRIu64 " persisting), %" PRIu64 " resets",
			 apx_procobs_fmt_bytes(a, sizeof(a), o->l2_limit_bytes), o->apw_windows,
			 o->apw_persisting, o->l2_resets);
		return APX_RULE_FIRED;
	}
	if (o->h2d.calls[0] + o->h2d.calls[1] && o->uprobes == APX_PROCOBS_UP_ATTACHED) {
		f = add(o, out, APX_SEV_INFO);
		if (!f)
			return APX_RULE_FIRED;
		snprintf(f->title, sizeof(f->title), "L2 persistence not used (no persisting-L2 "
			 "limit, no access-policy window)");
		snprintf(f->fix, sizeof(f->fix), "data reused across kernels (weights, embeddings) "
			 "may gain from a persisting-L2 window: cudaStreamSetAttribute(..., "
			 "cudaStreamAttributeAccessPolicyWindow, ...)");
		return APX_RULE_FIRED;
	}
	return APX_RULE_CLEAN;
}
