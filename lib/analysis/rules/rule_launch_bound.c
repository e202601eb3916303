/*
 * rule_launch_bound.c - kernels shorter than the gaps between them: the host launches slower
 * than the GPU runs, so the GPU idles in many short gaps (< 50 us). Saving: those gaps minus
 * ~1 us each, which is what launching the same kernels from a CUDA graph leaves. The gaps are
 * the steady state's idle time attributed to launch overhead (idle_attrib.c): under the
 * collector every launch costs the host a little more, so every launch gap is longer than it is
 * without a profiler; the collector's cost per launch (kv collector_launch_cost_ns, measured by
 * apx analyze) is its own cause there, taken off each gap first. When the short gaps make the
 * steady state launch-bound (model->launch_bound, idle_attrib.c), the longer gaps inside a
 * step (or under 1 ms between steps) that nothing else explains are launch overhead too: the
 * host's own work between two launches (autograd, zero_grad, the optimizer's Python), which a
 * captured or compiled step does not repeat; they are counted here, and not by gpu-starvation.
 * The launch gaps of launches other rules remove (apx_launch_idle_claimed: gradients zeroed
 * every step and the adds into them, an optimizer stepping one tensor at a time) are theirs,
 * left out here.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

double apx_launch_idle_claimed(const struct apx_model *m, double *ret_launches)
{
	double host = apx_launch_host_ns(m), zero, opt;
	double opt_idle = apx_optimizer_loop_claim(m, APX_IDLE_LAUNCH, &opt);
	struct apx_zero_grad z;

	*ret_launches = 0;
	if (host <= 0)
		return 0;
	apx_zero_grad_find(m, &z);
	zero = z.launch_idle_ns > 0 ? z.launches + z.adds : 0;
	*ret_launches = (opt + zero) * (double)m->steady.count;
	/* the optimizer loop's: the launch idle inside its spans when it measured them */
	return (zero + (opt_idle > 0 ? 0 : opt)) * (double)m->steady.count * host + opt_idle;
}

APX_RULE_DECL(launch_bound)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_LAUNCH];
	uint64_t gaps = m->gpu.gaps_by_cause[APX_IDLE_LAUNCH] + m->gpu.gaps_by_cause[APX_IDLE_COLLECTOR];
	uint64_t active = m->steady_ns, small = 0, self = m->gpu.idle_by_cause[APX_IDLE_COLLECTOR];
	double saving, mean_kernel, zero_idle = 0, graph_gap;
	char b1[32], b2[32];
	struct apx_finding *f;
	double claimed_launches = 0, rule_ns, sim_ns = 0;
	const struct apx_wi_params sim = { .xform = APX_WI_X_CUDA_GRAPH };
	int simulated;

	if (!m->k.n || !active)
		return APX_RULE_CLEAN;
	zero_idle = apx_launch_idle_claimed(m, &claimed_launches);
	if (zero_idle > 0) {
		uint64_t zg = (uint64_t)claimed_launches;

		zero_idle = zero_idle < (double)idle ? zero_idle : (double)idle;
		idle -= (uint64_t)zero_idle;
		gaps -= zg < gaps ? zg : gaps;
	}
	for (size_t i = 0; i < m->k.n; i++)
		small += m->k.dur[i] < 10000;
	/* kernel_total_ns also holds replayed launches' durations (view_kernels.c): count them */
	mean_kernel = (double)m->kernel_total_ns /
		      (double)(m->k.n + m->untimed_launches - m->untimed_nodur);
	graph_gap = (double)apx_wi_graph_gap_ns(m);
	saving = (double)idle - graph_gap * (double)gaps;
	if (!m->launch_bound || !gaps || saving <= 0)
		return APX_RULE_CLEAN;
	rule_ns = saving;	/* the simulator's when it has one (whatif.h), less the launch
				 * gaps other findings remove */
	if ((simulated = apx_whatif_rule_saving(m, &sim, &sim_ns)))
		saving = sim_ns > zero_idle ? sim_ns - zero_idle : 0;
	f = apx_finding_add(out, m, "launch-bound",
			    (double)idle > 0.3 * (double)active ? APX_SEV_CRITICAL : APX_SEV_WARNING,
			    saving, 70);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title),
		 "launch-bound: %llu gaps between kernels idle the GPU %.0f%% of its active time",
		 (unsigned long long)gaps, 100.0 * (double)idle / (double)active);
	snprintf(f->model, sizeof(f->model),
		 "gaps between a step's kernels that the host's launching makes shrink to %s "
		 "under CUDA graph replay (%s): saving = their total - that x their count",
		 apx_fmt_ns(b1, sizeof(b1), graph_gap), m->graph_gaps >= APX_WI_GRAPH_MIN_GAPS
		 ? "the trace's graph replays' mean gap" : "graph replays' mean gap on an H200");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"kernels: %llu, mean %s; %llu (%.0f%%) shorter than 10 us\n",
			(unsigned long long)m->k.n, apx_fmt_ns(b1, sizeof(b1), mean_kernel),
			(unsigned long long)small, 100.0 * (double)small / (double)m->k.n);
	apx_text_append(f->evidence, sizeof(f->evidence), "launch gaps: %llu, %s, mean %s\n",
			(unsigned long long)gaps, apx_fmt_ns(b1, sizeof(b1), (double)idle),
			apx_fmt_ns(b2, sizeof(b2), (double)idle / (double)gaps));
	if (m->gpu.step_host_gaps)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"of them %llu gaps of 50 us or more (inside steps, or under 1 ms), %s: "
				"the host's own work between launches\n",
				(unsigned long long)m->gpu.step_host_gaps,
				apx_fmt_ns(b1, sizeof(b1), (double)m->gpu.step_host_ns));
	if (zero_idle > 0)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"%s of launch gaps before launches other findings remove (gradient "
				"zeroing, per-tensor optimizer steps) left to them\n",
				apx_fmt_ns(b1, sizeof(b1), zero_idle));
	if (self)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"collector's cost per launch: %s (measured %s); %s of the gaps is the "
				"collector's, left out\n",
				apx_fmt_ns(b1, sizeof(b1), (double)m->launch_cost_ns),
				m->launch_cost_self ? "in the traced process"
						    : "by apx analyze before the program",
				apx_fmt_ns(b2, sizeof(b2), (double)self));
	apx_finding_metric(f, "kernels", (double)m->k.n, APX_UNIT_COUNT);
	apx_finding_metric(f, "kernel_mean_ns", mean_kernel, APX_UNIT_NS);
	apx_finding_metric(f, "kernels_under_10us", (double)small, APX_UNIT_COUNT);
	apx_finding_metric(f, "gaps", (double)gaps, APX_UNIT_COUNT);
	apx_finding_metric(f, "idle_ns", (double)idle, APX_UNIT_NS);
	apx_finding_metric(f, "active_ns", (double)active, APX_UNIT_NS);
	if (self)
		apx_finding_metric(f, "collector_ns", (double)self, APX_UNIT_NS);
	if (m->gpu.step_host_gaps) {
		apx_finding_metric(f, "step_host_gaps", (double)m->gpu.step_host_gaps, APX_UNIT_COUNT);
		apx_finding_metric(f, "step_host_ns", (double)m->gpu.step_host_ns, APX_UNIT_NS);
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Launch fewer, larger kernels:\n"
		 "  model = torch.compile(model, mode=\"reduce-overhead\")   # fusion + CUDA graphs\n"
		 "or capture the step in a graph: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): ...\n"
		 "and replay it with g.replay(); or raise the batch size so each kernel does more work.");
	if (simulated)
		apx_whatif_rule_note(f, sim.xform, rule_ns);
	(void)why;
	(void)why_len;
	apx_lines_of_kernels(m, f, NULL, NULL);
	return APX_RULE_FIRED;
}
