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
 * Saving per step: those launches x APX_HOST_OP_NS (the host's cost of each zero_()) + their
 * GPU time.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "base/banned.h"

#define EVERY_STEP 0.8		/* share of the steps with a long run of fills */

APX_RULE_DECL(zero_grad_memset)
{
	const struct apx_an_steps *st = &m->steady;
	const struct apx_an_name *top = NULL;
	uint64_t fills = 0, fill_ns = 0;
	double per_step_fills, launches, gpu_ns, saving;
	char b1[32];
	struct apx_finding *f;

	if (!st->count)
		return APX_RULE_CLEAN;	/* "every step" needs steps */
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count || !apx_name_has(nm, "FillFunctor"))
			continue;
		fills += nm->steady_count;
		fill_ns += nm->steady_ns;
		if (!top || nm->long_bursts > top->long_bursts)
			top = nm;
	}
	if (!top || (double)top->long_bursts < EVERY_STEP * (double)st->count)
		return APX_RULE_CLEAN;
	per_step_fills = (double)fills / (double)st->count;
	/* the fills of the zero_() loop: one run a step, at most as long as the longest */
	launches = per_step_fills < top->max_burst ? per_step_fills : top->max_burst;
	gpu_ns = (double)fill_ns / (double)st->count * launches / per_step_fills;
	saving = (launches * APX_HOST_OP_NS + gpu_ns) * (double)st->count;
	f = apx_finding_add(out, m, "zero-grad-memset", APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = gpu_ns * (double)st->count;	/* the fills' own GPU time */
	snprintf(f->title, sizeof(f->title), "gradients zeroed by %.0f kernels every step "
		 "(zero_grad without set_to_none)", launches);
	snprintf(f->model, sizeof(f->model),
		 "set_to_none=True launches nothing: saving = zeroing launches x %.0f us host cost "
		 "+ their GPU time, per step", APX_HOST_OP_NS / 1000.0);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"fill kernels: %.0f a step, up to %u in a row (one per parameter tensor), "
			"a run of %d or more in %u of %llu steps, %s a step on the GPU\n",
			per_step_fills, top->max_burst, APX_LONG_RUN, top->long_bursts,
			(unsigned long long)st->count,
			apx_fmt_ns(b1, sizeof(b1), (double)fill_ns / (double)st->count));
	apx_finding_metric(f, "launches_per_step", launches, APX_UNIT_COUNT);
	apx_finding_metric(f, "fill_ns", (double)fill_ns, APX_UNIT_NS);
	apx_finding_metric(f, "steps_with_run", (double)top->long_bursts, APX_UNIT_COUNT);
	apx_finding_metric(f, "steps", (double)st->count, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Drop the gradients instead of zeroing them:\n"
		 "  optimizer.zero_grad(set_to_none=True)   # the default since PyTorch 2.0\n"
		 "  model.zero_grad(set_to_none=True)\n"
		 "(code that reads p.grad after zero_grad must then handle None)");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
