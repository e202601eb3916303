/*
 * rule_zero_grad_memset.c - gradients zeroed by kernels every step: optimizer.zero_grad(
 * set_to_none=False) or model.zero_grad() in old code runs p.grad.zero_() for each parameter,
 * one fill kernel (at::native::FillFunctor) each, back to back, where set_to_none=True (the
 * default since PyTorch 2.0) launches nothing: the next backward writes the gradients instead
 * of adding to zeros. Seen from the trace: in the steps, a run of MIN_BURST or more fill
 * kernels in a row on one stream, every step; or MIN_MEMSETS or more memsets a step (zeroing
 * with cudaMemset).
 *
 * Saving per step: those launches x APX_HOST_OP_NS (the host's cost of each zero_()) + their
 * GPU time.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "base/banned.h"

#define MIN_BURST 8		/* fills in a row: a loop over parameters, not a zeros() */
#define MIN_MEMSETS 16		/* memsets a step */

APX_RULE_DECL(zero_grad_memset)
{
	const struct apx_an_steps *st = &m->steady;
	const struct apx_an_name *top = NULL;
	uint64_t fills = 0, fill_ns = 0, nms = 0, ms_ns = 0;
	double burst, per_step_fills, launches, gpu_ns, saving;
	char b1[32], b2[32];
	struct apx_finding *f;

	if (!st->count)
		return APX_RULE_CLEAN;	/* "every step" needs steps */
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count || !apx_name_has(nm, "FillFunctor"))
			continue;
		fills += nm->steady_count;
		fill_ns += nm->steady_ns;
		if (!top || nm->max_burst > top->max_burst)
			top = nm;
	}
	for (size_t i = 0; i < m->memsets.n; i++) {
		const struct apx_an_memset *s = APX_VEC_AT(&m->memsets, struct apx_an_memset, i);

		if (s->start >= st->first_ns && s->start < st->last_ns) {
			nms++;
			ms_ns += s->dur;
		}
	}
	per_step_fills = (double)fills / (double)st->count;
	burst = top && top->max_burst >= MIN_BURST && per_step_fills >= MIN_BURST ? top->max_burst : 0;
	if ((double)nms / (double)st->count < MIN_MEMSETS)
		nms = ms_ns = 0;
	if (!burst && !nms)
		return APX_RULE_CLEAN;
	/* the fills of the run (the zero_() loop), and every memset */
	launches = burst + (double)nms / (double)st->count;
	gpu_ns = (burst ? (double)fill_ns * burst / (double)fills : 0) + (double)ms_ns / (double)st->count;
	saving = (launches * APX_HOST_OP_NS + gpu_ns) * (double)st->count;
	f = apx_finding_add(out, m, "zero-grad-memset", APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "gradients zeroed by %.0f kernels every step "
		 "(zero_grad without set_to_none)", launches);
	snprintf(f->model, sizeof(f->model),
		 "set_to_none=True launches nothing: saving = zeroing launches x %.0f us host cost "
		 "+ their GPU time, per step", APX_HOST_OP_NS / 1000.0);
	if (burst)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"fill kernels: %.0f a step, up to %.0f in a row (one per parameter "
				"tensor), %s a step on the GPU\n", per_step_fills, burst,
				apx_fmt_ns(b1, sizeof(b1), (double)fill_ns / (double)st->count));
	if (nms)
		apx_text_append(f->evidence, sizeof(f->evidence), "memsets: %.0f a step, %s a step\n",
				(double)nms / (double)st->count,
				apx_fmt_ns(b2, sizeof(b2), (double)ms_ns / (double)st->count));
	apx_text_append(f->evidence, sizeof(f->evidence), "over %llu steps\n",
			(unsigned long long)st->count);
	snprintf(f->fix, sizeof(f->fix),
		 "Drop the gradients instead of zeroing them:\n"
		 "  optimizer.zero_grad(set_to_none=True)   # the default since PyTorch 2.0\n"
		 "  model.zero_grad(set_to_none=True)\n"
		 "(code that reads p.grad after zero_grad must then handle None)");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
