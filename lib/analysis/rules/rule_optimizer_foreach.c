/*
 * rule_optimizer_foreach.c - an optimizer stepping one parameter at a time: torch.optim's
 * single-tensor path (foreach=False, or a custom loop) launches a few elementwise kernels per
 * parameter tensor every step, where the foreach path launches multi_tensor_apply_kernel over
 * lists of tensors and fused=True one kernel per list chunk. Seen from the trace: no
 * multi_tensor_apply_kernel at all, and per step as many addcdiv kernels (the update of Adam,
 * AdamW, Adagrad, RMSprop: param.addcdiv_(exp_avg, denom)) as there are parameter tensors.
 *
 * Saving: the single-tensor AdamW step launches OPS_PER_PARAM kernels per parameter (lerp_ of
 * exp_avg, mul_ and addcmul_ of exp_avg_sq, sqrt, div and add_ for the denominator, addcdiv_,
 * and mul_ for the decoupled weight decay: torch/optim/adam.py, _single_tensor_adam); each
 * launch costs the host APX_HOST_OP_NS of eager dispatch (Python, the dispatcher, the launch).
 * foreach/fused do the same arithmetic on the same bytes in a few launches per ~100 tensors,
 * so what goes is the per-launch cost: saving = tensors x OPS_PER_PARAM x the host cost of a
 * launch a step: in a launch-bound steady state its mean short launch gap (apx_launch_host_ns;
 * launch-bound then leaves that idle to this rule), else APX_HOST_OP_NS. (The GPU time of the
 * kernels stays, but for fused=True, which reads each tensor once.)
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

#define OPS_PER_PARAM 8		/* kernels the single-tensor AdamW step launches per tensor */
#define MIN_PARAMS 16		/* fewer tensors: a list kernel gains little */

static int is_addcdiv(const struct apx_an_name *nm)
{
	return apx_name_has(nm, "addcdiv") || apx_name_has(nm, "Addcdiv");
}

struct loop {
	const struct apx_an_name *top;
	uint64_t upd, upd_ns, mta, cmul;
	double params;				/* tensors a step, 0: not a single-tensor loop */
};

static void find_loop(const struct apx_model *m, struct loop *l)
{
	const struct apx_an_steps *st = &m->steady;

	memset(l, 0, sizeof(*l));
	if (!st->count)
		return;		/* per step or not at all: a one-off loop is no optimizer */
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count)
			continue;
		if (apx_name_has(nm, "multi_tensor_apply"))
			l->mta += nm->steady_count;
		else if (is_addcdiv(nm)) {
			l->upd += nm->steady_count;
			l->upd_ns += nm->steady_ns;
			if (!l->top || nm->steady_count > l->top->steady_count)
				l->top = nm;
		} else if (apx_name_has(nm, "addcmul") || apx_name_has(nm, "Addcmul"))
			l->cmul += nm->steady_count;
	}
	l->params = (double)l->upd / (double)st->count;
	if (l->mta || l->params < MIN_PARAMS)
		l->params = 0;
}

double apx_optimizer_loop_launches(const struct apx_model *m)
{
	struct loop l;

	find_loop(m, &l);
	return l.params * OPS_PER_PARAM;
}

APX_RULE_DECL(optimizer_foreach)
{
	const struct apx_an_steps *st = &m->steady;
	struct loop l;
	uint64_t upd, upd_ns, cmul;
	const struct apx_an_name *top;
	double params, saving, host;
	char b1[32], b2[32], name[512];
	struct apx_finding *f;

	find_loop(m, &l);
	if (!l.params)
		return APX_RULE_CLEAN;
	params = l.params;
	upd = l.upd;
	upd_ns = l.upd_ns;
	cmul = l.cmul;
	top = l.top;
	host = apx_launch_host_ns(m);
	if (host <= 0)
		host = APX_HOST_OP_NS;
	saving = params * OPS_PER_PARAM * host * (double)st->count;
	f = apx_finding_add(out, m, "optimizer-foreach", APX_SEV_WARNING, saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title),
		 "the optimizer updates %.0f parameter tensors one at a time, every step", params);
	snprintf(f->model, sizeof(f->model),
		 "%d kernels per tensor (single-tensor AdamW) become a few list kernels: saving = "
		 "tensors x %d launches x %.1f us host cost (%s), per step",
		 OPS_PER_PARAM, OPS_PER_PARAM, host / 1000.0,
		 host != APX_HOST_OP_NS ? "the steady state's mean launch gap" : "an eager op's");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"per step (%llu steps): %.0f addcdiv kernels (one per tensor), %.0f addcmul, "
			"mean %s each\n", (unsigned long long)st->count, params,
			(double)cmul / (double)st->count,
			apx_fmt_ns(b1, sizeof(b1), (double)upd_ns / (double)upd));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"no multi_tensor_apply_kernel ran (the foreach and fused optimizers' kernel)\n");
	if (top)
		apx_text_append(f->evidence, sizeof(f->evidence), "top: %.90s (%s in the steps)\n",
				apx_kernel_display_name(top, name, sizeof(name)),
				apx_fmt_ns(b2, sizeof(b2), (double)top->steady_ns));
	apx_finding_metric(f, "tensors_per_step", params, APX_UNIT_COUNT);
	apx_finding_metric(f, "steps", (double)st->count, APX_UNIT_COUNT);
	apx_finding_metric(f, "update_ns", (double)upd_ns, APX_UNIT_NS);
	apx_finding_metric(f, "host_per_launch_ns", host, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Step all parameters with list kernels:\n"
		 "  opt = torch.optim.AdamW(model.parameters(), fused=True)  # or foreach=True\n"
		 "(foreach is the default on CUDA unless foreach=False was passed or the parameters\n"
		 "are not all CUDA tensors; a hand-written update loop can use torch._foreach_* ops)");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
