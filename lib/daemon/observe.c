/*
 * observe.c - what nvperfd saw of a tracked process, as the rule engine's input (struct
 * apx_procobs, analysis/procobs.h): the /proc totals of its last sample, the uprobes' copy
 * counts and L2 settings, NVML's per-process sample counts, and the thresholds of the user's
 * config when the process started. Called by tracker.c when the process ends (final totals) and
 * at its live checks while it runs (live_check: the totals so far, up to end_ns = now; nothing
 * here assumes an exit, the exit status is not an input), on the event loop; copies fields only
 * (no allocation, no syscall).
 */
#include <string.h>

#include <apx/format.h>

#include "daemon/daemon.h"

#include "base/banned.h"

static void copies(struct apx_procobs_copies *c, const uint64_t calls[2], const uint64_t bytes[2],
		   const uint64_t ns[2])
{
	for (int i = 0; i < 2; i++) {
		c->calls[i] = calls[i];
		c->bytes[i] = bytes[i];
		c->ns[i] = ns[i];
	}
}

void apx_proc_observe(const struct apx_proc *p, uint64_t end_ns, struct apx_procobs *ret)
{
	const struct apx_conf *c = &p->cfg;
	struct apx_procobs o;

	memset(&o, 0, sizeof(o));
	o.run_ns = end_ns > p->start_ns ? end_ns - p->start_ns : 0;
	o.cpu_ns = p->last.utime_ns + p->last.stime_ns;
	o.rss_peak_bytes = p->peak_rss;
	o.invol_csw = p->last.invol_csw;
	if (p->up) {
		const struct apx_up_proc_state *u = p->up;

		o.uprobes = u->state == APX_UPS_DETACHED_RATE ? APX_PROCOBS_UP_DETACHED_RATE
							     : APX_PROCOBS_UP_ATTACHED;
		o.copy_time = u->copy_time;
		copies(&o.h2d, u->h2d_calls, u->h2d_bytes, u->h2d_ns);
		copies(&o.d2h, u->d2h_calls, u->d2h_bytes, u->d2h_ns);
		o.over_rate_calls = u->over_rate_calls;
		/* the live counts (as `apx status` shows them), whole even when cfg[] is full */
		o.l2_limit_bytes = u->l2_limit_bytes;
		o.apw_windows = u->apw_windows;
		for (size_t i = 0; i < u->ncfg; i++) {
			if (u->cfg[i].kind == APX_CONFIG_L2_PERSIST_RESET)
				o.l2_resets++;
			else if (u->cfg[i].kind == APX_CONFIG_APW_STREAM)
				o.apw_persisting += u->cfg[i].hit_prop == APX_ACCESS_PERSISTING &&
						    u->cfg[i].bytes && u->cfg[i].hit_ppm;
		}
	}
	o.gpu_device = p->gpu.device;
	o.gpu_util_samples = p->gpu.gpu_util_samples;
	o.gpu_idle_samples = p->gpu.gpu_idle_samples;
	o.sm_valid = (p->gpu.valid & APX_GPU_UTIL) != 0;
	o.sm_samples = p->gpu.util_samples;
	o.sm_util_sum = p->gpu.sm_util_sum;
	o.dev_mem_valid = p->gpu.dev_mem_valid;
	o.dev_mem_peak_permille = p->gpu.dev_mem_peak_permille;
	o.th.min_runtime_ns = c->th_min_runtime_ns;
	o.th.rss_peak_bytes = c->th_rss_peak_bytes;
	o.th.invol_csw_rate = c->th_invol_csw_rate;
	o.th.cpu_low_pct = c->th_cpu_low_pct;
	o.th.cpu_high_pct = c->th_cpu_high_pct;
	o.th.pageable_copy_bytes = c->th_pageable_copy_bytes;
	o.th.l2_persist = c->th_l2_persist;
	o.th.gpu_idle_pct = c->th_gpu_idle_pct;
	o.th.sm_low_pct = c->th_sm_low_pct;
	o.th.gpu_mem_pct = c->th_gpu_mem_pct;
	o.th.uprobe_max_rate = c->uprobe_max_rate;
	*ret = o;
}
