/*
 * rule_optimizer_foreach.c - an optimizer stepping one parameter at a time: torch.optim's
 * single-tensor path (foreach=False, or a custom loop) launches a few elementwise kernels per
 * parameter tensor every step, where the foreach path launches multi_tensor_apply_kernel over
 * lists of tensors and fused=True one kernel per list chunk. Seen from the trace: no
 * multi_tensor_apply_kernel at all, and per step as many addcdiv kernels (the update of Adam,
 * AdamW, Adagrad, RMSprop: param.addcdiv_(exp_avg, denom)) as there are parameter tensors.
 *
 * Saving (optimizer_loop.c measures the loop): per step, the loop's span (from the end of the
 * kernel before it to the end of its last addcdiv, on the updates' stream: what the loop costs the
 * step whether the host's issuing or the GPU sets its pace), less the collector's own cost per
 * launch for its kernels (at most the GPU idle inside the span: where the GPU sets the pace, the
 * host's extra cost does not lengthen it), less what the fused kernel would take: it reads the
 * parameter, gradient and both moments and writes three of them, FUSED_PASSES passes over each
 * tensor where addcdiv makes ADDCDIV_PASSES, so FUSED_PASSES / ADDCDIV_PASSES times the addcdivs'
 * GPU time. Without spans in most steps, the host cost alone: tensors x OPS_PER_PARAM launches
 * (the single-tensor AdamW step: lerp_ of exp_avg, mul_ and addcmul_ of exp_avg_sq, sqrt, div and
 * add_ for the denominator, addcdiv_, and mul_ for the decoupled weight decay:
 * torch/optim/adam.py, _single_tensor_adam) x the host cost of a launch (in a launch-bound steady
 * state its mean short launch gap, apx_launch_host_ns, else APX_HOST_OP_NS). launch-bound and
 * gpu-starvation leave the idle inside the spans to this rule.
 */
#include "analysis/findings.h"

#include <math.h>
#include <stdio.h>

#include "analysis/stacks.h"
#include "analysis/store.h"

#include "base/banned.h"

#define OPS_PER_PARAM 8		/* kernels the single-tensor AdamW step launches per tensor */
#define FUSED_PASSES 7.0	/* tensor passes of fused AdamW: p, g, m, v read; p, m, v written */
#define ADDCDIV_PASSES 4.0	/* of addcdiv_: p, exp_avg, denom read; p written */
#define LIST_TENSORS 48		/* tensors a list kernel takes (multi_tensor_apply's depth-3
				 * limit: 110 / 64 / 48 / 36 for 1-4 lists) */

/* Whether the loop's spans stand for the steps: found in at least half of them. */
static int spans_found(const struct apx_model *m, const struct apx_optimizer_loop *l)
{
	return l->params && l->span_ns > 0 && 2 * l->span_steps >= m->steady.count;
}

/* The tensor loops (tensor_loop.c) that run in at least half the steps: every step's. */
static size_t steady_loops(const struct apx_model *m, struct apx_tensor_loop *loops)
{
	size_t n = 0, k = 0;

	if (apx_tensor_loops_find(m, loops, APX_TENSOR_LOOPS_MAX, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (2 * loops[i].steps >= m->steady.count && loops[i].span_ns > 0)
			loops[k++] = loops[i];
	return k;
}

double apx_optimizer_loop_claim(const struct apx_model *m, unsigned c, double *ret_launches)
{
	struct apx_tensor_loop loops[APX_TENSOR_LOOPS_MAX];
	size_t nloops = steady_loops(m, loops);
	struct apx_optimizer_loop l;
	double self, claim = 0;
	int spans = 0, cause = c == (m->launch_bound ? APX_IDLE_LAUNCH : APX_IDLE_UNKNOWN);

	*ret_launches = 0;
	if (apx_optimizer_loop_find(m, &l) < 0)
		l.params = 0;
	if (l.params) {
		spans = spans_found(m, &l);
		*ret_launches = spans ? l.launches : l.params * OPS_PER_PARAM;
	}
	if (spans && cause) {
		self = (double)m->launch_cost_ns * l.launches * (double)l.span_steps;
		claim += (double)l.idle_ns > self ? (double)l.idle_ns - self : 0;
	}
	for (size_t i = 0; i < nloops; i++) {
		*ret_launches += loops[i].kernels;
		self = (double)m->launch_cost_ns * loops[i].kernels * (double)loops[i].steps;
		if (cause)
			claim += (double)loops[i].idle_ns > self ? (double)loops[i].idle_ns - self : 0;
	}
	return claim;
}

/* The kernels of one name (ctx: it): the lines of the finding. */
static int is_name(const void *ctx, const struct apx_an_name *nm)
{
	return nm == ctx;
}

/* torch.optim's single-tensor Adam-family loop (optimizer_loop.c). */
static enum apx_rule_status adam_loop(const struct apx_model *m, struct apx_findings *out,
				      char *why, size_t why_len)
{
	const struct apx_an_steps *st = &m->steady;
	struct apx_optimizer_loop l;
	double saving, host, per_step = 0, fused = 0, self = 0;
	char b1[32], b2[32], b3[32], name[512];
	struct apx_finding *f;
	int spans;

	if (apx_optimizer_loop_find(m, &l) < 0) {
		snprintf(why, why_len, "out of memory");
		return APX_RULE_NOT_MEASURED;
	}
	if (!l.params)
		return APX_RULE_CLEAN;
	spans = spans_found(m, &l);
	host = apx_launch_host_ns(m);
	if (host <= 0)
		host = APX_HOST_OP_NS;
	if (spans) {
		fused = FUSED_PASSES / ADDCDIV_PASSES * (double)l.upd_ns / (double)st->count;
		/* the collector lengthens the span only where the GPU waited for its launches */
		self = (double)m->launch_cost_ns * l.launches;
		if (self > (double)l.idle_ns / (double)l.span_steps)
			self = (double)l.idle_ns / (double)l.span_steps;
		per_step = l.span_ns - self - fused;
		per_step = per_step > 0 ? per_step : 0;
	} else
		per_step = l.params * OPS_PER_PARAM * host;
	saving = per_step * (double)st->count;
	f = apx_finding_add(out, m, "optimizer-foreach", APX_SEV_WARNING, saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title),
		 "the optimizer updates %.0f parameter tensors one at a time, every step", l.params);
	if (spans)
		snprintf(f->model, sizeof(f->model),
			 "the per-tensor loop (%.0f kernels a step) becomes a few list kernels: saving "
			 "= its span a step - the collector's cost for its launches - the fused "
			 "kernel's time (%.2gx the addcdivs': %.0f tensor passes, not %.0f), per step",
			 l.launches, FUSED_PASSES / ADDCDIV_PASSES, FUSED_PASSES, ADDCDIV_PASSES);
	else
		snprintf(f->model, sizeof(f->model),
			 "%d kernels per tensor (single-tensor AdamW) become a few list kernels: "
			 "saving = tensors x %d launches x %.1f us host cost (%s), per step",
			 OPS_PER_PARAM, OPS_PER_PARAM, host / 1000.0,
			 host != APX_HOST_OP_NS ? "the steady state's mean launch gap" :
			 "an eager op's");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"per step (%llu steps): %.0f addcdiv kernels (one per tensor), %.0f addcmul, "
			"mean %s each\n", (unsigned long long)st->count, l.params,
			(double)l.cmul / (double)st->count,
			apx_fmt_ns(b1, sizeof(b1), (double)l.upd_ns / (double)l.upd));
	if (spans) {
		apx_text_append(f->evidence, sizeof(f->evidence),
				"the loop's span: %s a step (median of %llu steps), %.0f kernels; "
				"fused kernel ~%s", apx_fmt_ns(b1, sizeof(b1), l.span_ns),
				(unsigned long long)l.span_steps, l.launches,
				apx_fmt_ns(b2, sizeof(b2), fused));
		if (m->launch_cost_ns)
			apx_text_append(f->evidence, sizeof(f->evidence), ", collector's cost %s\n",
					apx_fmt_ns(b3, sizeof(b3), self));
		else
			apx_text_append(f->evidence, sizeof(f->evidence),
					" (the collector's cost per launch was not measured)\n");
	}
	apx_text_append(f->evidence, sizeof(f->evidence),
			"no multi_tensor_apply_kernel ran (the foreach and fused optimizers' kernel)\n");
	if (l.top)
		apx_text_append(f->evidence, sizeof(f->evidence), "top: %.90s (%s in the steps)\n",
				apx_kernel_display_name(l.top, name, sizeof(name)),
				apx_fmt_ns(b2, sizeof(b2), (double)l.top->steady_ns));
	apx_finding_metric(f, "tensors_per_step", l.params, APX_UNIT_COUNT);
	apx_finding_metric(f, "steps", (double)st->count, APX_UNIT_COUNT);
	apx_finding_metric(f, "update_ns", (double)l.upd_ns, APX_UNIT_NS);
	if (spans) {
		apx_finding_metric(f, "loop_span_ns", l.span_ns, APX_UNIT_NS);
		apx_finding_metric(f, "loop_kernels", l.launches, APX_UNIT_COUNT);
		apx_finding_metric(f, "fused_estimate_ns", fused, APX_UNIT_NS);
	} else
		apx_finding_metric(f, "host_per_launch_ns", host, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Step all parameters with list kernels:\n"
		 "  opt = torch.optim.AdamW(model.parameters(), fused=True)  # or foreach=True\n"
		 "(foreach is the default on CUDA unless foreach=False was passed or the parameters\n"
		 "are not all CUDA tensors; a hand-written update loop can use torch._foreach_* ops)");
	if (l.top)
		apx_lines_of_kernels(m, f, is_name, l.top);
	return APX_RULE_FIRED;
}

/* The kernels launched from one line (ctx: its m->lines index) in the steady window. */
static void loop_lines(const struct apx_model *m, struct apx_finding *f, uint32_t line)
{
	const struct apx_store *st = m->store;
	struct apx_line_tally t;

	if (apx_line_tally_init(&t, m) < 0)
		return;
	for (size_t i = 0; i < st->k.n; i++)
		if (st->k.start[i] >= m->steady_start_ns && st->k.start[i] < m->steady_end_ns &&
		    apx_stack_line(m, st->k.stack[i]) == line)
			apx_line_tally_add(&t, st->k.stack[i], 1, (double)st->k.dur[i]);
	apx_line_tally_put(&t, f, "launches", 1);
	apx_line_tally_release(&t);
}

/* A Python loop over tensors (tensor_loop.c): one finding each. Saving a step: the loop's span
 * less the collector's cost for its launches (at most the idle inside it) less what the list
 * kernels take: its kernels' GPU time less each one's fixed cost (the loop's shortest kernel),
 * plus that cost once per LIST_TENSORS kernels; times the steps it ran in. */
static int tensor_loop(const struct apx_model *m, struct apx_findings *out,
		       const struct apx_tensor_loop *l)
{
	double self = (double)m->launch_cost_ns * l->kernels, lists, per_step;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;

	if (self > (double)l->idle_ns / (double)l->steps)
		self = (double)l->idle_ns / (double)l->steps;
	lists = l->gpu_ns - l->kernels * l->floor_ns;
	lists = (lists > 0 ? lists : 0) + ceil(l->kernels / LIST_TENSORS) * l->floor_ns;
	per_step = l->span_ns - self - lists;
	if (per_step <= 0)
		return 0;
	f = apx_finding_add(out, m, "optimizer-foreach", APX_SEV_WARNING,
			    per_step * (double)l->steps, 50);
	if (!f)
		return 1;
	snprintf(f->title, sizeof(f->title),
		 "a Python loop updates tensors one at a time: %.0f small kernels a step", l->kernels);
	snprintf(f->model, sizeof(f->model),
		 "list kernels (torch._foreach_*) for the loop: saving = its span - the "
		 "collector's cost for its launches - the list kernels' time (GPU time less a "
		 "kernel's fixed cost each, plus one per %d tensors), per step", (int)LIST_TENSORS);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"in %llu of %llu steps: %.0f elementwise kernels one after another, %s of "
			"GPU time, over a span of %s (medians)\n", (unsigned long long)l->steps,
			(unsigned long long)m->steady.count, l->kernels,
			apx_fmt_ns(b1, sizeof(b1), l->gpu_ns), apx_fmt_ns(b2, sizeof(b2), l->span_ns));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"shortest kernel %s (a kernel's fixed cost); list kernels ~%s; GPU idle "
			"inside the spans %s in all\n", apx_fmt_ns(b1, sizeof(b1), l->floor_ns),
			apx_fmt_ns(b2, sizeof(b2), lists),
			apx_fmt_ns(b3, sizeof(b3), (double)l->idle_ns));
	apx_finding_metric(f, "loop_kernels", l->kernels, APX_UNIT_COUNT);
	apx_finding_metric(f, "loop_span_ns", l->span_ns, APX_UNIT_NS);
	apx_finding_metric(f, "loop_gpu_ns", l->gpu_ns, APX_UNIT_NS);
	apx_finding_metric(f, "list_estimate_ns", lists, APX_UNIT_NS);
	apx_finding_metric(f, "steps", (double)l->steps, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Update the whole list in one call with torch._foreach_* ops, e.g.\n"
		 "  torch._foreach_lerp_(ema_params, params, 1 - decay)      # an EMA of the weights\n"
		 "  torch._foreach_add_(params, grads, alpha=-lr)            # an SGD step\n"
		 "or use torch.optim with foreach=True (or fused=True) instead of a loop of your own.");
	loop_lines(m, f, l->line);
	return 1;
}

APX_RULE_DECL(optimizer_foreach)
{
	struct apx_tensor_loop loops[APX_TENSOR_LOOPS_MAX];
	size_t n = steady_loops(m, loops);
	enum apx_rule_status r = adam_loop(m, out, why, why_len);
	int fired = 0;

	for (size_t i = 0; i < n; i++)
		fired |= tensor_loop(m, out, &loops[i]);
	return fired ? APX_RULE_FIRED : r;
}
