/*
 * rule_zero_grad_memset.c - gradients zeroed by kernels every step: optimizer.zero_grad(
 * set_to_none=False) or model.zero_grad() in old code runs p.grad.zero_() for each parameter,
 * one fill kernel (at::native::FillFunctor) each, back to back, where set_to_none=True (the
 * default since PyTorch 2.0) launches nothing: the next backward writes the gradients instead
 * of adding to zeros. Seen from the trace: in the steps, a run of APX_LONG_RUN or more fill
 * kernels in a row on one stream in at least 80 % of the steps. A single long run (Adam
 * creating its state at the first step: zeros_like per parameter) or fills spread through
 * the step (masks, torch.zeros of activations) are not zero_grad. Memsets are not counted:
 * PyTorch's zero_grad never uses cudaMemset, and the memsets a step does run (embedding
 * backward, workspaces) stay with set_to_none=True.
 *
 * PyTorch 2.x's zero_grad(set_to_none=False) zeroes the gradients with foreach kernels instead
 * (torch._foreach_zero_: multi_tensor_apply ZeroFunctor), one or a few a step: those in at
 * least 80 % of the steps are zeroing too. Zeroed gradients cost more than their zeroing,
 * whichever way they were zeroed: the next backward adds each new gradient into its zeroed one
 * (AccumulateGrad: one add kernel a gradient, CUDAFunctor_add) where set_to_none=True lets it
 * keep the new one; counted up to one add per fill kernel of the zero_() loop, or per block of
 * the foreach zeroing kernels (a gradient tensor has at least one), their GPU time at most
 * ADD_BYTES_PER_FILL times the fills' (the adds' kernel name is shared with residual adds).
 *
 * Saving per step: the zeroing launches (and, in a launch-bound steady state, the accumulating
 * adds: backward launches them ahead of a GPU-bound step) x their host cost + their GPU time.
 * The host cost of a launch: in a launch-bound steady state the mean short launch gap
 * (idle_attrib.c's launch overhead, the collector's cost left out), which launch-bound then
 * leaves to this rule; else, for the zero_() loop, what its launches cost the step as the
 * trace shows it: the GPU's idle between its fills (none when the host was ahead and the
 * fills ran back to back; the collector's cost per launch left out of the gaps the host was
 * behind in), and for foreach zeroing (a few launches) APX_HOST_OP_NS a launch.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/stacks.h"

#include "base/banned.h"

#define EVERY_STEP 0.8		/* share of the steps with a long run of fills */
#define ADD_BYTES_PER_FILL 3.0	/* an accumulating add's bytes over its tensor's fill's */

/* The adds into zeroed gradients (AccumulateGrad adds each new gradient into a defined one,
 * one CUDAFunctor_add kernel a tensor; with set_to_none it keeps the new one): per step, at
 * most one per zeroed tensor (bound: tensors a step, an upper bound of them), with their GPU
 * time in proportion. Residual adds and the engine's sums of gradients are the same kernel;
 * the bound keeps a model with many of those and few parameters from counting them all. */
static void count_adds(const struct apx_model *m, double bound, struct apx_zero_grad *z)
{
	uint64_t adds = 0, add_ns = 0;
	double per_step, n = (double)m->steady.count;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (nm->steady_count && apx_name_has(nm, "CUDAFunctor_add")) {
			adds += nm->steady_count;
			add_ns += nm->steady_ns;
		}
	}
	if (!adds)
		return;
	per_step = (double)adds / n;
	z->adds = per_step < bound ? per_step : bound;
	z->add_ns = (double)add_ns / n * z->adds / per_step;
	/* an add into a zeroed gradient moves ADD_BYTES_PER_FILL times the bytes of the fill
	 * that zeroed it (two reads and a write of the same tensor): the mean of every add kernel
	 * overcounts where residual adds of large activations share the name (grad_zero_loop:
	 * 1.43 ms a step by the mean, 0.31 ms removed with set_to_none) */
	if (z->gpu_ns > 0 && ADD_BYTES_PER_FILL * z->gpu_ns < z->add_ns)
		z->add_ns = ADD_BYTES_PER_FILL * z->gpu_ns;
}

/* Zeroing by foreach kernels (multi_tensor_apply with a zero or fill functor) in most steps;
 * bound: the zeroing kernels' blocks a step (a block zeroes at least part of one tensor). */
static void find_foreach(const struct apx_model *m, struct apx_zero_grad *z, double *bound)
{
	const struct apx_an_steps *st = &m->steady;
	uint64_t n = 0, ns = 0, blocks = 0;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count || !apx_name_has(nm, "multi_tensor_apply") ||
		    !(apx_name_has(nm, "ZeroFunctor") || apx_name_has(nm, "FillFunctor")))
			continue;
		n += nm->steady_count;
		ns += nm->steady_ns;
		blocks += nm->steady_count * (uint64_t)(nm->grid[0] ? nm->grid[0] : 1);
		if (!z->top || nm->steady_count > z->top->steady_count)
			z->top = nm;
	}
	if (!n || (double)n < EVERY_STEP * (double)st->count)
		return;
	z->found = z->foreach = 1;
	z->launches = (double)n / (double)st->count;
	z->gpu_ns = (double)ns / (double)st->count;
	*bound = (double)blocks / (double)st->count;
}

/* The zero_() loop: a run of fill kernels (one a parameter tensor) in most steps; bound: the
 * run's kernels, one tensor each. */
static void find_fills(const struct apx_model *m, struct apx_zero_grad *z, double *bound)
{
	const struct apx_an_steps *st = &m->steady;
	uint64_t fills = 0;
	double per_step;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count || !apx_name_has(nm, "FillFunctor") ||
		    apx_name_has(nm, "multi_tensor_apply"))
			continue;
		fills += nm->steady_count;
		if (!z->top || nm->long_bursts > z->top->long_bursts)
			z->top = nm;
	}
	if (!z->top || (double)z->top->long_bursts < EVERY_STEP * (double)st->count) {
		z->top = NULL;
		return;
	}
	per_step = (double)fills / (double)st->count;
	/* the fills of the zero_() loop: one run a step, at most as long as the longest; their
	 * GPU time at the mean of the runs' own kernel (the gradients' dtype: fills of other
	 * dtypes, masks and activations, are other work) */
	z->found = 1;
	z->launches = per_step < z->top->max_burst ? per_step : z->top->max_burst;
	z->gpu_ns = (double)z->top->steady_ns / (double)z->top->steady_count * z->launches;
	*bound = z->launches;
}

void apx_zero_grad_find(const struct apx_model *m, struct apx_zero_grad *z)
{
	double bound = 0;

	memset(z, 0, sizeof(*z));
	if (!m->steady.count)
		return;		/* "every step" needs steps */
	find_fills(m, z, &bound);
	if (!z->found)
		find_foreach(m, z, &bound);
	if (!z->found)
		return;
	count_adds(m, bound, z);
	z->waited_ns = -1;
	z->host_ns = apx_launch_host_ns(m);
	if (z->host_ns > 0) {
		z->launch_idle_ns = (z->launches + z->adds) * z->host_ns * (double)m->steady.count;
		return;
	}
	z->host_ns = APX_HOST_OP_NS;
	if (!z->foreach && z->top->long_bursts) {
		/* the loop's launches cost the step what the GPU waited for them: its idle between
		 * the fills (none when the host was ahead), less the collector's cost in the gaps
		 * the host was behind in; a step's, over the runs' steps */
		double gap = (double)z->top->burst_gap_ns -
			     (double)m->launch_cost_ns * (double)z->top->burst_loose_gaps;

		z->waited_ns = (gap > 0 ? gap : 0) / (double)z->top->long_bursts;
	}
}

/* The kernels of one name (ctx: it): the lines of the finding. */
static int is_name(const void *ctx, const struct apx_an_name *nm)
{
	return nm == ctx;
}

APX_RULE_DECL(zero_grad_memset)
{
	const struct apx_an_steps *st = &m->steady;
	struct apx_zero_grad z;
	double saving, gpu_ns, host_launches;
	char b1[32], b2[32];
	struct apx_finding *f;

	apx_zero_grad_find(m, &z);
	if (!z.found)
		return APX_RULE_CLEAN;
	gpu_ns = z.gpu_ns + z.add_ns;
	/* the adds are launched by the autograd engine's thread inside backward, ahead of a step
	 * the GPU sets the pace of: their host cost shows only in a launch-bound one (on the
	 * suite's GPU-bound zero_grad and grad_zero_loop, apx diff finds the saving in the
	 * kernels' time and the zeroing's launches, not in the adds' launches) */
	host_launches = z.launches + (z.launch_idle_ns > 0 ? z.adds : 0);
	saving = ((z.waited_ns >= 0 ? z.waited_ns : host_launches * z.host_ns) + gpu_ns) *
		 (double)st->count;
	f = apx_finding_add(out, m, "zero-grad-memset", APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = gpu_ns * (double)st->count;	/* the kernels' own GPU time */
	if (z.foreach) {
		snprintf(f->title, sizeof(f->title), "gradients zeroed every step (%.0f foreach "
			 "kernel%s, %.0f adds into them; zero_grad without set_to_none)",
			 z.launches, z.launches < 1.5 ? "" : "s", z.adds);
		snprintf(f->model, sizeof(f->model),
			 "set_to_none=True launches no zeroing and backward keeps each new gradient "
			 "instead of adding it: saving = (zeroing%s) x %s host cost a launch + "
			 "their GPU time, per step", z.launch_idle_ns > 0 ? " + adds" : " launches",
			 apx_fmt_ns(b1, sizeof(b1), z.host_ns));
		apx_text_append(f->evidence, sizeof(f->evidence),
				"foreach zeroing kernels: %.1f a step (%u blocks each), %s a step on "
				"the GPU\n", z.launches, z.top->grid[0],
				apx_fmt_ns(b1, sizeof(b1), z.gpu_ns));
	} else {
		char adds[48] = "";

		if (z.adds >= 0.5)
			snprintf(adds, sizeof(adds), ", %.0f adds into them", z.adds);
		snprintf(f->title, sizeof(f->title), "gradients zeroed by %.0f kernels every step%s "
			 "(zero_grad without set_to_none)", z.launches, adds);
		if (z.waited_ns >= 0)
			snprintf(f->model, sizeof(f->model),
				 "set_to_none=True launches nothing and backward keeps each new "
				 "gradient instead of adding it: saving = the GPU's idle between the "
				 "zeroing kernels (what their launches cost the step) + their GPU "
				 "time, per step");
		else
			snprintf(f->model, sizeof(f->model),
				 "set_to_none=True launches nothing and backward keeps each new "
				 "gradient instead of adding it: saving = (zeroing%s) x %s host cost a "
				 "launch + their GPU time, per step",
				 z.launch_idle_ns > 0 ? " + adds" : " launches",
				 apx_fmt_ns(b1, sizeof(b1), z.host_ns));
		apx_text_append(f->evidence, sizeof(f->evidence),
				"fill kernels: up to %u in a row (one per parameter tensor), a run of "
				"%d or more in %u of %llu steps, %s a step on the GPU\n",
				z.top->max_burst, APX_LONG_RUN, z.top->long_bursts,
				(unsigned long long)st->count, apx_fmt_ns(b1, sizeof(b1), z.gpu_ns));
		if (z.waited_ns >= 0)
			apx_text_append(f->evidence, sizeof(f->evidence),
					"GPU idle between the fills: %s a step (the collector's cost "
					"a launch left out)\n",
					apx_fmt_ns(b1, sizeof(b1), z.waited_ns));
		apx_finding_metric(f, "steps_with_run", (double)z.top->long_bursts, APX_UNIT_COUNT);
	}
	if (z.waited_ns >= 0)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"adds into the gradients: %.0f a step, %s on the GPU\n", z.adds,
				apx_fmt_ns(b1, sizeof(b1), z.add_ns));
	else
		apx_text_append(f->evidence, sizeof(f->evidence),
				"adds into the gradients: %.0f a step, %s on the GPU; host cost a "
				"launch: %s (%s)\n", z.adds, apx_fmt_ns(b1, sizeof(b1), z.add_ns),
				apx_fmt_ns(b2, sizeof(b2), z.host_ns),
				z.launch_idle_ns > 0 ? "the steady state's mean launch gap, taken from "
				"launch-bound's" : "an eager op's");
	apx_finding_metric(f, "adds_per_step", z.adds, APX_UNIT_COUNT);
	apx_finding_metric(f, "host_per_launch_ns", z.host_ns, APX_UNIT_NS);
	if (z.waited_ns >= 0)
		apx_finding_metric(f, "waited_ns", z.waited_ns * (double)st->count, APX_UNIT_NS);
	apx_finding_metric(f, "launches_per_step", z.launches, APX_UNIT_COUNT);
	apx_finding_metric(f, "fill_ns", gpu_ns * (double)st->count, APX_UNIT_NS);
	apx_finding_metric(f, "steps", (double)st->count, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Drop the gradients instead of zeroing them:\n"
		 "  optimizer.zero_grad(set_to_none=True)   # the default since PyTorch 2.0\n"
		 "  model.zero_grad(set_to_none=True)\n"
		 "(code that reads p.grad after zero_grad must then handle None)");
	(void)why;
	(void)why_len;
	apx_lines_of_kernels(m, f, is_name, z.top);
	return APX_RULE_FIRED;
}
