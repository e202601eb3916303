/*
 * test-rules.c - the analysis rules on synthetic training loops written with the
 * project's writer (tracegen.c): each rule fires on a trace that plants its problem the way a
 * PyTorch program makes it, with the saving checked against the model the rule states, and
 * stays silent on the twin trace of the fixed program. Also the two categories fixed there:
 * device-to-device copies are no copy-overlap finding, tiny fp32 GEMMs no fp32-matmul one;
 * and kernel time is saved once: GEMMs hidden behind copies are no fp32-matmul finding.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "analysis/procobs.h"
#include "apx-test.h"
#include "unit/analysed.h"
#include "unit/tracegen.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull
#define MIB (1ull << 20)

static struct apx_findings fd;

static struct apx_model *analyse(struct tg *t)
{
	return tg_analyse(t, &fd);
}

static const struct apx_finding *finding(const char *rule)
{
	return tg_find(&fd, rule);
}

static const struct apx_rule_result *result(const char *rule)
{
	return tg_result(&fd, rule);
}

#define GEMM "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
#define FILL "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, " \
	     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
#define ADDCDIV "void at::native::vectorized_elementwise_kernel<4, at::native::AddcdivFunctor<" \
		"float, float>, std::array<char*, 4ul> >(int, at::native::AddcdivFunctor<float, " \
		"float>, std::array<char*, 4ul>)"
#define FUSED "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::" \
	      "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::" \
	      "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double, double>"

/* The single-tensor AdamW step (torch/optim/adam.py, _single_tensor_adam) for nparams tensors
 * from ts: mul_ (weight decay), lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_ each, 3 us
 * kernels 4 us apart (the host dispatching them). Returns the end. */
static uint64_t adamw_single(struct tg *t, uint64_t ts, int nparams)
{
	static const char *const ops[] = {
		"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
		"float, float, at::native::binary_internal::MulFunctor<float> > >",
		"void at::native::vectorized_elementwise_kernel<4, at::native::lerp_kernel_scalar_"
		"weight(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}>",
		"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
		"float, float, at::native::binary_internal::MulFunctor<float> > >",
		"void at::native::vectorized_elementwise_kernel<4, at::native::AddcmulFunctor<float, "
		"float> >",
		"void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda(at::"
		"TensorIteratorBase&)::{lambda()#2}>",
		"void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float, "
		"float, float, at::native::binary_internal::DivFunctor<float> > >",
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<"
		"float> >",
		ADDCDIV,
	};

	for (int p = 0; p < nparams; p++)
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++, ts += 7 * US)
			tg_kernel(t, ts, 3 * US, ops[o], 7);
	return ts;
}

/* One training step from ts on stream 7: forward and backward GEMMs; the caller adds what
 * comes before (zero_grad) and after (the optimizer). Returns the end. */
static uint64_t fwd_bwd(struct tg *t, uint64_t ts)
{
	for (int l = 0; l < 4; l++, ts += 420 * US)
		tg_kernel(t, ts, 400 * US, GEMM, 7);
	for (int l = 0; l < 4; l++, ts += 820 * US)
		tg_kernel(t, ts, 800 * US, "void cutlass::Kernel2<cutlass_90_tensorop_bf16_s16816gemm_"
			  "bf16_128x128_64x3_nn_align8>(cutlass_90_tensorop_bf16_s16816gemm)", 7);
	return ts;
}

APX_TEST(rule_optimizer_foreach)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 10 * MS;

	APX_ASSERT_OK(tg_open(&t));	/* AdamW(foreach=False) over 40 tensors, 20 steps */
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		ts = adamw_single(&t, fwd_bwd(&t, ts), 40) + 200 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->steady.count, 20);
	f = finding("optimizer-foreach");
	APX_ASSERT(f);
	/* the loop's span a step (from the last GEMM's end, 20 us before the first of its 320
	 * kernels 7 us apart, to the end of the last, 3 us long) less the fused kernel's 7/4 of
	 * the 40 addcdivs' 3 us, every step */
	APX_ASSERT_EQ((uint64_t)f->saving_ns, (20ull + 319 * 7 + 3 - 7 * 40 * 3 / 4) * 1000 * 20);
	APX_ASSERT(strstr(f->model, "span"));
	APX_ASSERT(strstr(f->title, "40 parameter tensors"));
	APX_ASSERT(strstr(f->evidence, "no multi_tensor_apply_kernel ran"));
	APX_ASSERT(strstr(f->fix, "fused=True"));
	apx_model_free(m);

	/* with the collector's cost per launch measured: taken off the span, but never more
	 * than the GPU idle inside it (a loop the GPU paces is not lengthened by the host) */
	for (int cost = 3; cost <= 6; cost += 3) {
		char kv[16];
		double idle = 20 + 319 * 4;	/* us a step: the gap before the loop, 4 us gaps */
		double self = cost * 320 < idle ? cost * 320 : idle;

		APX_ASSERT_OK(tg_open(&t));
		snprintf(kv, sizeof(kv), "%d", cost * 1000);
		tg_kv(&t, "collector_launch_cost_ns", kv);
		ts = 10 * MS;
		for (int s = 0; s < 20; s++) {
			uint64_t s0 = ts;

			ts = adamw_single(&t, fwd_bwd(&t, ts), 40) + 200 * US;
			tg_marker(&t, s0, ts, "train_step");
		}
		m = analyse(&t);
		APX_ASSERT(m && m->launch_cost_ns == (uint64_t)cost * 1000);
		f = finding("optimizer-foreach");
		APX_ASSERT(f);
		APX_ASSERT(fabs(f->saving_ns - (20.0 + 319 * 7 + 3 - 7 * 40 * 3 / 4.0 - self) * 1e3 *
					 20) < 1e3);
		APX_ASSERT(strstr(f->evidence, "collector's cost"));
		apx_model_free(m);
	}

	/* launch-bound: 100 tiny kernels a step 17 us apart, then the per-tensor loop; its
	 * launches cost the steady state's mean launch gap each, which launch-bound leaves out */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int k = 0; k < 100; k++, ts += 20 * US)
			tg_kernel(&t, ts, 3 * US, "tiny_fwd", 7);
		ts = adamw_single(&t, ts, 40) + 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m && m->launch_bound);
	f = finding("optimizer-foreach");
	APX_ASSERT(f);
	{
		double host = apx_launch_host_ns(m), launch_idle = 0, opt_launches = 0;
		const struct apx_finding *lb = finding("launch-bound");

		APX_ASSERT(host > 4000 && host < 17000);	/* between the two gap lengths */
		/* the span from the last tiny kernel's end (17 us before the loop) */
		APX_ASSERT(fabs(f->saving_ns - (17.0 + 319 * 7 + 3 - 7 * 40 * 3 / 4.0) * 1e3 * 20) < 1e3);
		APX_ASSERT(lb && strstr(lb->evidence, "left to them"));
		/* the launch idle inside the loop is optimizer-foreach's alone */
		launch_idle = (double)m->gpu.idle_by_cause[APX_IDLE_LAUNCH];
		APX_ASSERT(apx_optimizer_loop_claim(m, APX_IDLE_LAUNCH, &opt_launches) > 0);
		APX_ASSERT(opt_launches == 320);	/* the loop's 40 x 8 kernels a step */
		APX_ASSERT(lb->saving_ns + apx_optimizer_loop_claim(m, APX_IDLE_LAUNCH,
								       &opt_launches) <= launch_idle);
	}
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the fixed program: AdamW(fused=True) */
	ts = 10 * MS;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		ts = fwd_bwd(&t, ts);
		tg_kernel(&t, ts, 60 * US, FUSED, 7);
		ts += 260 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("optimizer-foreach"));
	APX_ASSERT_EQ(result("optimizer-foreach")->status, APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

#define MTA "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::" \
	"(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
#define ADD "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " \
	"std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
#define MUL "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, " \
	"float, float, at::native::binary_internal::MulFunctor<float>>>(int, T2, T3)"

/* One step of a model whose forward launches from stack 1 (a GEMM and an elementwise add per
 * layer, 24 layers: the same line, never 16 elementwise kernels in a row), backward kernels
 * without a stack, then AdamW(fused=True) from stack 2 and, with ema, an EMA of the weights
 * in a Python loop from stack 3: 100 tensors, mul_ and add_ each, launched 6 us apart, 2 us
 * long (the host sets the pace). Returns the end. */
static uint64_t ema_step(struct tg *t, uint64_t ts, int ema)
{
	t->stack = 1;
	for (int l = 0; l < 24; l++, ts += 130 * US) {
		tg_kernel(t, ts, 100 * US, GEMM, 7);
		tg_kernel(t, ts + 110 * US, 10 * US, ADD, 7);
	}
	t->stack = 0;
	for (int l = 0; l < 24; l++, ts += 210 * US)
		tg_kernel(t, ts, 200 * US, GEMM, 7);
	t->stack = 2;
	tg_kernel(t, ts, 60 * US, FUSED, 7);
	ts += 80 * US;
	t->stack = 3;
	for (int k = 0; ema && k < 200; k++, ts += 6 * US)
		tg_kernel(t, ts, 2 * US, k % 2 ? ADD : MUL, 7);
	t->stack = 0;
	return ts + 100 * US;
}

APX_TEST(rule_tensor_loop)
{
	static const uint64_t s1[] = { 1 }, s2[] = { 2 }, s3[] = { 3 };
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	for (int ema = 1; ema >= 0; ema--) {
		uint64_t ts = 10 * MS;

		APX_ASSERT_OK(tg_open(&t));
		tg_frame(&t, 1, "/home/u/model.py", "forward", 30);
		tg_frame(&t, 2, "/home/u/train.py", "main", 80);
		tg_frame(&t, 3, "/home/u/train.py", "update_ema", 41);
		tg_stack(&t, 1, s1, 1);
		tg_stack(&t, 2, s2, 1);
		tg_stack(&t, 3, s3, 1);
		for (int s = 0; s < 20; s++) {
			uint64_t s0 = ts;

			ts = ema_step(&t, ts, ema);
			tg_marker(&t, s0, ts, "train_step");
		}
		m = analyse(&t);
		APX_ASSERT(m);
		APX_ASSERT_EQ(m->steady.count, 20);
		f = finding("optimizer-foreach");
		if (!ema) {	/* torch._foreach_lerp_ instead: nothing; the forward is no loop */
			APX_ASSERT(!f);
			apx_model_free(m);
			continue;
		}
		APX_ASSERT(f);
		APX_ASSERT(strstr(f->title, "200 small kernels a step"));
		APX_ASSERT(strstr(f->title, "train.py:41"));
		/* a step: the span from the first kernel less the mean period (1196 us / 200) to
		 * the end of the last, less the list kernels' time: 400 us of GPU time less 2 us
		 * each, plus 2 us per 48 tensors (5 lists) */
		APX_ASSERT(fabs(f->saving_ns - (1196.0 + 5.98 - 10.0) * 1e3 * 20) < 1e3);
		APX_ASSERT(strstr(f->fix, "_foreach_lerp_"));
		apx_model_free(m);
	}
	return 0;
}

/* 20 steps: a zero_() loop (40 fills of 2 us back to back), forward and backward, then 50
 * adds of add_us each (AccumulateGrad's into the zeroed gradients, residual sums among them). */
static struct apx_model *fills_then_adds(uint64_t add_us)
{
	struct tg t;
	uint64_t ts = 10 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int p = 0; p < 40; p++, ts += 5 * US)
			tg_kernel(&t, ts, 2 * US, FILL, 7);
		ts = fwd_bwd(&t, ts);
		for (int p = 0; p < 50; p++, ts += (add_us + 5) * US)
			tg_kernel(&t, ts, add_us * US, ADD, 7);
		ts += 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	return analyse(&t);
}

/* 20 steps, each 40 fills of 2 us launched every period_us on stream 7, then forward and
 * backward */
static struct apx_model *zeroing_steps(uint64_t period_us)
{
	struct tg t;
	uint64_t ts = 10 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int p = 0; p < 40; p++, ts += period_us * US)
			tg_kernel(&t, ts, 2 * US, FILL, 7);
		ts = fwd_bwd(&t, ts) + 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	return analyse(&t);
}

APX_TEST(rule_zero_grad_memset)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 10 * MS;

	m = zeroing_steps(5);	/* zero_grad(set_to_none=False): 40 fills back to back */
	APX_ASSERT(m);
	f = finding("zero-grad-memset");
	APX_ASSERT(f);
	/* a step: the GPU idle 3 us between the 40 fills (what their launches cost it) + 40 x 2 us
	 * of GPU time */
	APX_ASSERT_EQ((uint64_t)f->saving_ns, (39ull * 3000 + 40ull * 2000) * 20);
	APX_ASSERT(strstr(f->evidence, "up to 40 in a row"));
	APX_ASSERT(strstr(f->evidence, "GPU idle between the fills: 117.0 us a step"));
	APX_ASSERT(strstr(f->fix, "set_to_none=True"));
	apx_model_free(m);

	/* the host ahead (the loop queued behind the previous step's work): the fills run 1 us
	 * apart, and their launches cost the step only those gaps */
	m = zeroing_steps(3);
	APX_ASSERT(m);
	f = finding("zero-grad-memset");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, (39ull * 1000 + 40ull * 2000) * 20);
	apx_model_free(m);

	/* the loop zeroes, backward then adds into the zeroed gradients (AccumulateGrad), as
	 * after foreach zeroing: 50 adds a step (residual sums among them), at most one counted
	 * per zeroed tensor */
	m = fills_then_adds(1);
	APX_ASSERT(m);
	f = finding("zero-grad-memset");
	APX_ASSERT(f);
	/* a step (not launch-bound): the GPU idle between the 40 fills (39 x 3 us) + 40 x 2 us +
	 * 40 x 1 us of GPU time (the adds' launches hide in backward) */
	APX_ASSERT(fabs(f->saving_ns - (39.0 * 3000 + 40 * 2000 + 40 * 1000) * 20) < 1e3);
	APX_ASSERT(strstr(f->title, "40 kernels every step, 40 adds into them"));
	apx_model_free(m);

	/* the same with large residual adds of the same kernel (20 us each, 50 a step): the 40
	 * adds counted are priced at 3x the fills' bytes (40 x 2 us x 3), not at the adds' mean */
	m = fills_then_adds(20);
	APX_ASSERT(m);
	f = finding("zero-grad-memset");
	APX_ASSERT(f);
	APX_ASSERT(fabs(f->saving_ns - (39.0 * 3000 + 40 * 2000 + 3 * 40 * 2000) * 20) < 1e3);
	apx_model_free(m);

	/* memsets every step (embedding backward, workspaces) are not zero_grad: silent */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int p = 0; p < 20; p++, ts += 5 * US)
			tg_memset(&t, ts, 2 * US, 1);
		ts = fwd_bwd(&t, ts) + 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("zero-grad-memset"));
	apx_model_free(m);

	/* AdamW creating its state at the first step (154 zeros_like in a row, once) and 23
	 * scattered fills a step (the GPT bench trace): silent */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int p = 0; s == 0 && p < 154; p++, ts += 5 * US)
			tg_kernel(&t, ts, 2 * US, FILL, 7);
		for (int l = 0; l < 23; l++, ts += 120 * US) {
			tg_kernel(&t, ts, 2 * US, FILL, 7);
			tg_kernel(&t, ts + 10 * US, 100 * US, GEMM, 7);
		}
		ts = fwd_bwd(&t, ts) + 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("zero-grad-memset"));
	apx_model_free(m);

	/* set_to_none=True: no zeroing; the forward fills a mask in each of 12 layers (a
	 * torch.full per layer, between the GEMMs): fills, but never a run of them */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int l = 0; l < 12; l++, ts += 120 * US) {
			tg_kernel(&t, ts, 2 * US, FILL, 7);
			tg_kernel(&t, ts + 10 * US, 100 * US, GEMM, 7);
		}
		ts = fwd_bwd(&t, ts) + 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("zero-grad-memset"));
	apx_model_free(m);
	return 0;
}


/* 20 steps: [the foreach zeroing,] forward and backward, 16 adds (one per gradient: into the
 * zeroed ones when zeroed), the optimizer's foreach kernel. */
static struct apx_model *foreach_zeroing(int zeroed)
{
	struct tg t;
	uint64_t ts = 10 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		if (zeroed)
			tg_kernel_cfg(&t, ts, 30 * US, MTA "ZeroFunctor<float, 1, 1, 0>>()", 512, 26, 0);
		ts = fwd_bwd(&t, ts + 20 * US);
		for (int p = 0; p < 16; p++, ts += 5 * US)
			tg_kernel(&t, ts, 2 * US, ADD, 7);
		tg_kernel(&t, ts, 50 * US, MTA "BinaryOpScalarFunctor<float, 1, 1, 0>, "
			  "std::plus<float>, float>()", 7);
		ts += 300 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	return analyse(&t);
}

/* PyTorch 2.x's zero_grad(set_to_none=False): one foreach zeroing kernel a step, and backward
 * then adds each gradient into its zeroed one */
APX_TEST(zero_grad_by_foreach_kernels)
{
	const struct apx_finding *f;
	struct apx_model *m = foreach_zeroing(1);

	APX_ASSERT(m);
	f = finding("zero-grad-memset");
	APX_ASSERT(f);
	/* not launch-bound: the zeroing's launch x 4 us of the host (the adds' launches hide in
	 * backward) + 30 us of GPU + the adds' 16 x 2 us (under 3x the zeroing's 30 us) */
	APX_ASSERT_EQ((uint64_t)f->saving_ns, (1ull * 4000 + 30000 + 16ull * 2000) * 20);
	APX_ASSERT(strstr(f->title, "1 foreach kernel, 16 adds"));
	apx_model_free(m);

	/* the same adds (gradients of a shared weight, residual sums) and the optimizer's foreach
	 * kernel without zeroing: silent */
	m = foreach_zeroing(0);
	APX_ASSERT(m && !finding("zero-grad-memset"));
	apx_model_free(m);
	return 0;
}

/* 20 launch-bound steps (100 tiny kernels 17 us apart), a sync every `every` steps after the
 * last kernel (the host blocked 200 us in it: in a launch-bound loop that wait is what the
 * sync costs), then 400 us of host work before the next step. */
static struct apx_model *launch_bound_with_syncs(int every)
{
	struct tg t;
	uint64_t ts = 10 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		for (int k = 0; k < 100; k++, ts += 20 * US)
			tg_kernel(&t, ts, 3 * US, "tiny_fwd", 7);
		if (s % every == 0)
			tg_sync(&t, ts - 215 * US, ts - 15 * US, APX_SYNC_KIND_STREAM);
		ts += 400 * US;
		tg_marker(&t, s0, ts, "train_step");
	}
	return analyse(&t);
}

/* loss.item() every step in a launch-bound loop: the syncs must go before the step can be a
 * CUDA graph, so sync-frequency ranks above launch-bound though it saves less */
APX_TEST(per_step_syncs_rank_above_launch_bound)
{
	const struct apx_finding *lb, *sf;
	struct apx_model *m = launch_bound_with_syncs(1);

	APX_ASSERT(m && m->launch_bound);
	lb = finding("launch-bound");
	sf = finding("sync-frequency");
	APX_ASSERT(lb && sf);
	APX_ASSERT(sf->saving_ns < lb->saving_ns);
	APX_ASSERT(sf < lb);				/* ranked first */
	APX_ASSERT(strstr(sf->model, "ranked above launch-bound"));
	APX_ASSERT(strstr(lb->fix, "First remove the host synchronizations"));
	apx_model_free(m);

	/* a sync every 10 steps: no prerequisite, ranked by saving */
	m = launch_bound_with_syncs(10);
	APX_ASSERT(m);
	lb = finding("launch-bound");
	sf = finding("sync-frequency");
	APX_ASSERT(lb && (!sf || lb < sf));
	APX_ASSERT(!strstr(lb->fix, "First remove"));
	apx_model_free(m);
	return 0;
}

/* 40 GPU-bound steps (10 kernels of 200 us back to back, 1 us apart), a sync every `every`
 * steps after the last kernel and 5 ms of host work after it before the next step (every 20
 * steps that is still 5 % of the steady state: above the rule's 2 %, but rare). */
static struct apx_model *gpu_bound_with_syncs(int every)
{
	struct tg t;
	uint64_t ts = 10 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 40; s++) {
		uint64_t s0 = ts;

		for (int k = 0; k < 10; k++, ts += 201 * US)
			tg_kernel(&t, ts, 200 * US, k % 2 ? "gemm_a" : "gemm_b", 7);
		if (s % every == 0) {
			tg_sync(&t, ts - 1500 * US, ts, APX_SYNC_KIND_STREAM);
			ts += 5 * MS;
		}
		tg_marker(&t, s0, ts, "train_step");
	}
	return analyse(&t);
}

/* A sync every step idles the GPU while the host works after it: sync-frequency; a sync every
 * 20 steps (a loss read for logging) is what its fix asks for: silent. */
APX_TEST(rare_syncs_are_no_sync_frequency_finding)
{
	struct apx_model *m = gpu_bound_with_syncs(1);

	APX_ASSERT(m && !m->launch_bound);
	APX_ASSERT(finding("sync-frequency"));
	apx_model_free(m);

	m = gpu_bound_with_syncs(20);
	APX_ASSERT(m && m->steady.count >= 35);
	APX_ASSERT(!finding("sync-frequency"));
	APX_ASSERT_EQ(result("sync-frequency")->status, APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_graph_recapture)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 10 * MS;

	/* torch.cuda.graph() inside the loop: a new graph each step, 2 ms of GPU idle while the
	 * host captures and instantiates it */
	APX_ASSERT_OK(tg_open(&t));
	for (int s = 0; s < 10; s++) {
		ts += 2 * MS;
		for (int k = 0; k < 20; k++, ts += 55 * US)
			tg_kernel_graph(&t, ts, 50 * US, k % 2 ? "fwd_kernel" : GEMM, 1000 + s);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->graphs.n, 10);
	f = finding("graph-recapture");
	APX_ASSERT(f);
	/* the gaps before the 9 graphs after the first: 2 ms + the 5 us between kernels */
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 9 * (2 * MS + 5 * US));
	APX_ASSERT(strstr(f->title, "20 kernels was captured 10 times"));
	apx_model_free(m);

	/* torch.cuda.graph() synchronizes first: the host waits for the last replay, then captures
	 * and instantiates (400 us) before the replay's 2 prologue kernels, and the new graph's
	 * first launch waits 500 us more; all of it is the re-capture's, none the sync's */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 12; s++) {
		tg_sync(&t, ts - 200 * US, ts, APX_SYNC_KIND_DEVICE);
		ts += 400 * US;
		tg_kernel(&t, ts, 10 * US, "fill_seed", 7);
		tg_kernel(&t, ts + 15 * US, 10 * US, "fill_offset", 7);
		ts += 525 * US;
		for (int k = 0; k < 20; k++, ts += 55 * US)
			tg_kernel_graph(&t, ts, 50 * US, k % 2 ? "fwd_kernel" : GEMM, 1000 + s);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("graph-recapture");
	APX_ASSERT(f);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_SYNC] == 0);
	APX_ASSERT(!finding("sync-frequency"));
	/* 405 us + 500 us a re-capture in the steady state (a step or two are start-up) */
	APX_ASSERT(f->saving_ns >= 8.0 * 905 * US && f->saving_ns <= 11.0 * 905 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_GRAPH], (uint64_t)f->saving_ns);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* captured once, replayed each step */
	ts = 10 * MS;
	for (int s = 0; s < 10; s++) {
		ts += 100 * US;
		for (int k = 0; k < 20; k++, ts += 55 * US)
			tg_kernel_graph(&t, ts, 50 * US, k % 2 ? "fwd_kernel" : GEMM, 1000);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("graph-recapture"));
	apx_model_free(m);

	/* torch.compile per input shape: 4 graphs of other kernels, each replayed 25 times */
	APX_ASSERT_OK(tg_open(&t));
	ts = 10 * MS;
	for (int s = 0; s < 100; s++) {
		ts += 100 * US;
		for (int k = 0; k < 20; k++, ts += 55 * US)
			tg_kernel_graph(&t, ts, 50 * US, k % 2 ? "fwd_kernel" : GEMM, 1000 + s % 4);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("graph-recapture"));
	apx_model_free(m);
	return 0;
}

/* A loop of 20 steps from 2 s to ~3 s after a 1 GiB host buffer (pinned or pageable) was
 * copied to a 1 GiB device allocation at 1 s; CPU samples every 0.5 s with the RSS rss_after
 * from the copy on (rss_before before it). */
static void replica_trace(struct tg *t, unsigned kind, uint64_t rss_before, uint64_t rss_after)
{
	uint64_t host = 0x7f1000000000ull, ts = 2000 * MS;

	if (kind == APX_MEM_PINNED)
		tg_mem_at(t, 500 * MS, APX_MEMOP_ALLOC, APX_MEM_PINNED, 1024 * MIB, host);
	tg_mem_at(t, 990 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 1024 * MIB, 0x7f9000000000ull);
	tg_copy(t, 1000 * MS, 80 * MS, APX_COPY_H2D, kind, 1024 * MIB, 0, host, 7);
	for (uint64_t s = 500; s <= 3500; s += 500)
		tg_cpu(t, s * MS, s <= 1000 ? rss_before : rss_after);
	for (int s = 0; s < 20; s++, ts += 50 * MS)
		tg_kernel(t, ts, 40 * MS, GEMM, 7);
}

APX_TEST(rule_redundant_replication)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));	/* X_gpu = X.cuda() with X kept: the RSS stays */
	replica_trace(&t, APX_MEM_PAGEABLE, 3000 * MIB, 3010 * MIB);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("redundant-replication");
	APX_ASSERT(f && f->saving_ns == 0 && f->severity == APX_SEV_WARNING);
	APX_ASSERT(strstr(f->title, "1.07 GB held twice"));
	APX_ASSERT(strstr(f->evidence, "pageable (0x7f1000000000)"));
	APX_ASSERT(strstr(f->fix, "del x"));
	apx_model_free(m);

	/* a run shorter than the collector's RSS sampling: samples at start-up and exit only,
	 * none between the copy and the end of the GPU work: not measured, not a finding */
	APX_ASSERT_OK(tg_open(&t));
	tg_mem_at(&t, 990 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 1024 * MIB, 0x7f9000000000ull);
	tg_copy(&t, 1000 * MS, 80 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 1024 * MIB, 0,
		0x7f1000000000ull, 7);
	for (int s = 0; s < 20; s++)
		tg_kernel(&t, 1100 * MS + (uint64_t)s * 5 * MS, 4 * MS, GEMM, 7);
	tg_cpu(&t, 1300 * MS, 900 * MIB);
	m = analyse(&t);
	APX_ASSERT(m && !finding("redundant-replication"));
	APX_ASSERT(result("redundant-replication")->status == APX_RULE_NOT_MEASURED);
	APX_ASSERT(strstr(result("redundant-replication")->why, "no RSS sample"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* del X after the copy: the RSS drops by the buffer */
	replica_trace(&t, APX_MEM_PAGEABLE, 3000 * MIB, 1990 * MIB);
	m = analyse(&t);
	APX_ASSERT(m && !finding("redundant-replication"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* a dataset pinned whole, copied over, kept pinned */
	replica_trace(&t, APX_MEM_PINNED, 3000 * MIB, 3000 * MIB);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("redundant-replication");
	APX_ASSERT(f && strstr(f->evidence, "pinned (0x7f1000000000), copied at 1000.00 ms: never freed"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the same, the pinned buffer freed after the copy */
	replica_trace(&t, APX_MEM_PINNED, 3000 * MIB, 3000 * MIB);
	tg_mem_at(&t, 1200 * MS, APX_MEMOP_FREE, APX_MEM_PINNED, 1024 * MIB, 0x7f1000000000ull);
	m = analyse(&t);
	APX_ASSERT(m && !finding("redundant-replication"));
	apx_model_free(m);

	/* a resume: the module's CPU weights moved by .to('cuda') at 1 s and freed (the RSS
	 * dips), a checkpoint made in the memory they left, copied again by load_state_dict at
	 * 1.6 s and kept: judged by the last copy, a replica */
	APX_ASSERT_OK(tg_open(&t));
	tg_mem_at(&t, 990 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 1024 * MIB, 0x7f9000000000ull);
	tg_copy(&t, 1000 * MS, 80 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 1024 * MIB, 0,
		0x7f1000000000ull, 7);
	tg_copy(&t, 1600 * MS, 80 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 1024 * MIB, 0,
		0x7f1000000000ull, 7);
	for (uint64_t s = 500; s <= 3500; s += 500)
		tg_cpu(&t, s * MS, s == 1500 ? 1990 * MIB : 3000 * MIB);
	for (int s = 0; s < 20; s++)
		tg_kernel(&t, 2000 * MS + (uint64_t)s * 50 * MS, 40 * MS, GEMM, 7);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("redundant-replication");
	APX_ASSERT(f && strstr(f->evidence, "pageable (0x7f1000000000), copied at 1.60 s"));
	apx_model_free(m);

	/* a state dict of 64 tensors of 16 MiB (each under what the RSS can judge) loaded into
	 * a GPU model and kept: the allocation records say it (RSS flat either way) */
	for (int fixed = 0; fixed < 3; fixed++) {
		uint64_t made = 1;	/* the line that made the tensors: train.py:12 in resume */

		APX_ASSERT_OK(tg_open(&t));
		tg_frame(&t, 1, "/home/u/train.py", "resume", 12);
		tg_stack(&t, made, (uint64_t[]){ 1 }, 1);
		tg_frame(&t, 2, "/home/u/train.py", "resume", 13);	/* load_state_dict */
		tg_stack(&t, 2, (uint64_t[]){ 2 }, 1);
		t.stack = 2;
		for (uint64_t k = 0; k < 64; k++) {
			uint64_t host = 0x7f1000000000ull + k * 17 * MIB;

			tg_mem_at(&t, 500 * MS + k * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 16 * MIB,
				  0x7f9000000000ull + k * 16 * MIB);
			if (fixed < 2)
				tg_heap_large_at(&t, 600 * MS + k * MS, APX_MEMOP_ALLOC, host,
						 16 * MIB, made);
			tg_copy(&t, 1000 * MS + k * 2 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE,
				16 * MIB, 0, host, 7);
			if (fixed == 1)		/* del sd after load_state_dict */
				tg_heap_large(&t, 1200 * MS + k * 10 * US, APX_MEMOP_FREE, host, 0);
		}
		t.stack = 0;
		for (uint64_t s = 500; s <= 3500; s += 500)
			tg_cpu(&t, s * MS, 3000 * MIB);
		for (int s = 0; s < 20; s++)
			tg_kernel(&t, 2000 * MS + (uint64_t)s * 50 * MS, 40 * MS, GEMM, 7);
		m = analyse(&t);
		APX_ASSERT(m);
		f = finding("redundant-replication");
		if (fixed == 0) {
			APX_ASSERT(f && strstr(f->title, "1.07 GB held twice"));
			APX_ASSERT(strstr(f->evidence, "64 host buffers copied to the GPU and kept"));
			APX_ASSERT(strstr(f->evidence, "its malloc never freed"));
			APX_ASSERT(strstr(f->evidence, "made at `resume` in /home/u/train.py:12: "
						       "64 of them, 1.07 GB"));
			APX_ASSERT(strstr(f->evidence, "train.py:13: 64 copies"));
		} else {
			/* freed: silent; no records (an older trace): 16 MiB buffers not judged */
			APX_ASSERT(!f);
			APX_ASSERT(result("redundant-replication")->status == APX_RULE_CLEAN);
		}
		apx_model_free(m);
	}

	/* two 4 MiB tensors kept: 8 MiB held twice, under the rule's 32 MiB */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t k = 0; k < 2; k++) {
		tg_mem_at(&t, 500 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 4 * MIB,
			  0x7f9000000000ull + k * 4 * MIB);
		tg_heap_large(&t, 600 * MS, APX_MEMOP_ALLOC, 0x7f1000000000ull + k * 8 * MIB, 4 * MIB);
		tg_copy(&t, 1000 * MS + k * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 4 * MIB, 0,
			0x7f1000000000ull + k * 8 * MIB, 7);
	}
	for (int s = 0; s < 20; s++)
		tg_kernel(&t, 2000 * MS + (uint64_t)s * 50 * MS, 40 * MS, GEMM, 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("redundant-replication"));
	APX_ASSERT(strstr(result("redundant-replication")->why, "under 33.6 MB"));
	apx_model_free(m);

	/* a pinned staging buffer: 64 MiB copied every step into one device buffer */
	APX_ASSERT_OK(tg_open(&t));
	tg_mem_at(&t, 500 * MS, APX_MEMOP_ALLOC, APX_MEM_PINNED, 64 * MIB, 0x7f1000000000ull);
	tg_mem_at(&t, 990 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 64 * MIB, 0x7f9000000000ull);
	for (int s = 0; s < 20; s++) {
		tg_copy(&t, 1000 * MS + s * 50 * MS, 6 * MS, APX_COPY_H2D, APX_MEM_PINNED, 64 * MIB,
			1, 0x7f1000000000ull, 7);
		tg_kernel(&t, 1010 * MS + s * 50 * MS, 30 * MS, GEMM, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("redundant-replication"));
	apx_model_free(m);
	return 0;
}

/* 20 steps that wait 3 ms for the host to make the batch, copy it (pinned), then compute
 * 2 ms; the process tree as given. */
static void loader_trace(struct tg *t, int tree, int workers)
{
	uint64_t ts = 10 * MS;

	if (tree)
		tg_process(t, 1 * MS, 100, 1, "python3");
	for (int w = 0; w < workers; w++)
		tg_process(t, 2 * MS, 101 + (uint64_t)w, 100, "pt_data_worker");
	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		ts += 3 * MS;
		tg_copy(t, ts, 100 * US, APX_COPY_H2D, APX_MEM_PINNED, 4 * MIB, 1, 0x7f2000000000ull, 7);
		tg_kernel(t, ts + 100 * US, 2 * MS, GEMM, 7);
		ts += 2100 * US;
		tg_marker(t, s0, ts, "train_step");
	}
}

APX_TEST(rule_dataloader_workers)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));	/* DataLoader(num_workers=0): no child process */
	loader_trace(&t, 1, 0);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("dataloader-workers");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 19 * 3 * MS);	/* the first batch is warm-up */
	APX_ASSERT(strstr(f->fix, "num_workers=8"));
	/* the same gaps are not input-pipeline's too */
	APX_ASSERT(!finding("input-pipeline"));
	APX_ASSERT(strstr(result("input-pipeline")->why, "dataloader-workers"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* 4 workers, but the GPU still waits: not this rule's */
	loader_trace(&t, 1, 4);
	m = analyse(&t);
	APX_ASSERT(m && !finding("dataloader-workers") && finding("input-pipeline"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* no process records: cannot tell */
	loader_trace(&t, 0, 0);
	m = analyse(&t);
	APX_ASSERT(m && !finding("dataloader-workers") && finding("input-pipeline"));
	APX_ASSERT_EQ(result("dataloader-workers")->status, APX_RULE_NOT_MEASURED);
	apx_model_free(m);
	return 0;
}

APX_TEST(copy_overlap_leaves_device_copies_out)
{
	struct apx_model *m;
	struct tg t;

	/* .contiguous() / torch.cat on the compute stream: D2D copies between kernels */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 20; i++) {
		tg_copy(&t, MS + i * 5 * MS, 2 * MS, APX_COPY_D2D, APX_MEM_DEVICE, 500000000, 1, 0, 7);
		tg_kernel(&t, MS + i * 5 * MS + 2 * MS, 3 * MS, GEMM, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("copy-overlap"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the same with host-to-device copies fires */
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t at = MS + i * 5 * MS;

		tg_copy(&t, at, 2 * MS, APX_COPY_H2D, APX_MEM_PINNED, 50000000, 1, 0, 7);
		tg_copy(&t, at + 2 * MS, 1 * MS, APX_COPY_D2D, APX_MEM_DEVICE, 50000000, 1, 0, 7);
		tg_kernel(&t, at + 3 * MS, 2 * MS, GEMM, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && finding("copy-overlap"));
	/* 19 copies hidden, but the steady window (9 steps of 2 kernels from the second one)
	 * holds 18 kernels: a saving is never more than the kernel time it hides copies behind */
	APX_ASSERT_EQ((uint64_t)finding("copy-overlap")->saving_ns, 36 * MS);
	APX_ASSERT_EQ(finding("copy-overlap")->saving_ns, apx_rules_steady_kernel_busy(m));
	APX_ASSERT(strstr(finding("copy-overlap")->evidence, "20.00 ms of device-to-device copies"));
	apx_model_free(m);

	/* the same copies on a side stream (9) that runs no kernel, the compute waiting for each:
	 * the fix is in place, what is left is the wait for the data; silent, and it says why */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t at = MS + i * 5 * MS;

		tg_copy(&t, at, 2 * MS, APX_COPY_H2D, APX_MEM_PINNED, 50000000, 1, 0, 9);
		tg_kernel(&t, at + 2 * MS, 3 * MS, GEMM, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("copy-overlap"));
	APX_ASSERT(result("copy-overlap")->status == APX_RULE_CLEAN);
	APX_ASSERT(strstr(result("copy-overlap")->why, "already run on streams without kernels"));
	apx_model_free(m);
	return 0;
}

/* A step of 20: an embedding-like kernel re-reads 20 MB from DRAM at 12 % L2 hits; 2 of its
 * launches replayed. */
static void l2_loop(struct tg *t, double l2_hit)
{
	uint64_t ts = 10 * MS;

	for (int s = 0; s < 20; s++) {
		uint64_t s0 = ts;

		tg_kernel(t, ts, 400 * US, "gather_kernel", 7);
		if (s == 3 || s == 4) {
			tg_counter(t, t->corr, "lts__t_sector_hit_rate.pct", l2_hit, 12);
			tg_counter(t, t->corr, "dram__bytes_read.sum", 20e6, 12);
			tg_counter(t, t->corr, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 70, 12);
			tg_counter(t, t->corr, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 20, 12);
		}
		ts = fwd_bwd(t, ts + 500 * US) + 100 * US;
		tg_marker(t, s0, ts, "train_step");
	}
}

APX_TEST(rule_l2_persistence)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));	/* the device sets aside up to 45 MiB (tracegen) */
	l2_loop(&t, 12);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("l2-persistence");
	APX_ASSERT(f);
	APX_ASSERT(strstr(f->title, "20.0 MiB") || strstr(f->title, "21.0 MB"));
	APX_ASSERT(strstr(f->fix, "hitRatio: 1.00"));
	APX_ASSERT(f->saving_ns > 0);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* hits already high: silent */
	l2_loop(&t, 85);
	m = analyse(&t);
	APX_ASSERT(m && !finding("l2-persistence"));
	APX_ASSERT_EQ(result("l2-persistence")->status, APX_RULE_CLEAN);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* no replay: not measured */
	tg_kernel(&t, 10 * MS, 100 * US, "gather_kernel", 7);
	m = analyse(&t);
	APX_ASSERT(m && result("l2-persistence")->status == APX_RULE_NOT_MEASURED);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* a 24 MiB window over an 8 MiB set-aside */
	tg_l2_limit(&t, 5 * MS, 8u << 20);
	tg_apw(&t, 6 * MS, 7, 0x7f0000000000ull, 24u << 20);
	tg_kernel(&t, 10 * MS, 100 * US, "gather_kernel", 7);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("l2-persistence");
	APX_ASSERT(f && strstr(f->title, "at most 33% of it can persist"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* a 24 MiB window, and the kernel still hits L2 12 % */
	tg_l2_limit(&t, 5 * MS, 32u << 20);
	tg_apw(&t, 6 * MS, 7, 0x7f0000000000ull, 24u << 20);
	l2_loop(&t, 12);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("l2-persistence");
	APX_ASSERT(f && strstr(f->title, "is set, but gather_kernel still hits L2 only 12%"));
	APX_ASSERT(strstr(f->evidence, "window 24.0 MiB") || strstr(f->evidence, "window 25.2 MB"));
	APX_ASSERT_EQ(result("l2-persistence")->status, APX_RULE_FIRED);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the same window, and hits are high: silent */
	tg_l2_limit(&t, 5 * MS, 32u << 20);
	tg_apw(&t, 6 * MS, 7, 0x7f0000000000ull, 24u << 20);
	l2_loop(&t, 85);
	m = analyse(&t);
	APX_ASSERT(m && !finding("l2-persistence"));
	APX_ASSERT_EQ(result("l2-persistence")->status, APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

/* The speedup fp32-matmul's finding assumed (its metric), 0 when it has none. */
static double fp32_speedup(const struct apx_finding *f)
{
	for (unsigned i = 0; f && i < f->nmetrics; i++)
		if (!strcmp(f->metrics[i].key, "speedup"))
			return f->metrics[i].value;
	return 0;
}

APX_TEST(fp32_matmul_leaves_tiny_gemms_out)
{
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));	/* 32x32 fp32 GEMMs: 4 us each, most of the GPU time */
	for (uint64_t i = 0; i < 500; i++)
		tg_kernel(&t, MS + i * 20 * US, 4 * US, "ampere_sgemm_32x32_sliced1x4_nn", 7);
	tg_kernel(&t, 10 * MS + 1 * MS, 500 * US, "vectorized_elementwise_kernel", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("fp32-matmul"));
	APX_ASSERT(strstr(result("fp32-matmul")->why, "500 fp32 GEMM launches left out"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* 4096^2 fp32 GEMMs: 2.7 ms each */
	for (uint64_t i = 0; i < 20; i++)
		tg_kernel(&t, MS + i * 3 * MS, 2700 * US, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x"
			  "128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas", 7);
	m = analyse(&t);
	APX_ASSERT(m && finding("fp32-matmul"));
	/* the GEMMs inside the steps (9 of 2, from the second): a step saves 1 - 1/s of its
	 * GEMMs, s the H200's TF32/fp32 peak ratio 7.4 x 0.65/0.8 (no launch times here: the
	 * rule's own model, not the simulator's) */
	APX_ASSERT_EQ(m->steady.count, 9);
	APX_ASSERT(fabs(fp32_speedup(finding("fp32-matmul")) - 7.4 * 0.65 / 0.8) < 1e-9);
	APX_ASSERT(fabs(finding("fp32-matmul")->saving_ns -
			18 * 2700.0 * US * (1 - 0.8 / (7.4 * 0.65))) < 1);
	APX_ASSERT(strstr(finding("fp32-matmul")->evidence, "with bf16 autocast instead"));
	apx_model_free(m);
	return 0;
}

/* cuDNN's fp32 convolution engines (SIMT gradients, FFT) count with the fp32 GEMMs, as TF32
 * replaces them too (the development suite's fp32_convnet: most of its step); the same engines
 * on half types are no fp32 work, nor is a bf16 "sgemm" (precomputed_convolve_sgemm). */
APX_TEST(fp32_matmul_counts_fp32_convolution_engines)
{
	static const char *const fp32[] = {
		"void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, "
		"float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
		"int, float, int, int, int, int)",
		"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, "
		"float const*, int, float const*, int, float*, kernel_grad_params, unsigned long "
		"long, int, unsigned long long, int, float, int, int, int)",
		"void fft2d_r2c_32x32<float, false, 1u, false>(float2*, float const*, int, int, int, "
		"int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)" };
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));	/* 2 ms of each engine a step, 10 steps */
	for (uint64_t i = 0; i < 10; i++)
		for (uint64_t k = 0; k < 3; k++)
			tg_kernel(&t, MS + i * 7 * MS + k * 2 * MS, 2 * MS, fp32[k], 7);
	m = analyse(&t);
	APX_ASSERT(m && finding("fp32-matmul"));
	APX_ASSERT(strstr(finding("fp32-matmul")->title, "and convolutions"));
	APX_ASSERT(strstr(finding("fp32-matmul")->evidence, "fp32 convolution engines"));
	APX_ASSERT(strstr(finding("fp32-matmul")->fix, "cudnn.allow_tf32"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the same engines on bf16: no fp32 work */
	for (uint64_t i = 0; i < 10; i++)
		tg_kernel(&t, MS + i * 3 * MS, 2 * MS, "_Z26precomputed_convolve_sgemmI13__nv_"
			  "bfloat16Li1024ELi5ELi5ELi4ELi3ELi3ELi1ELb0EEviiiPKT_iPS1_S3_18kernel_conv_"
			  "paramsyiffiS3_S3_ii", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("fp32-matmul"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++)
		tg_kernel(&t, MS + i * 3 * MS, 2 * MS, "void wgrad_alg0_engine<__nv_bfloat16, 128, "
			  "5, 5, 3, 3, 3, false, 512>(int, int, int, __nv_bfloat16 const*, int, float*, "
			  "__nv_bfloat16 const*, kernel_grad_params, unsigned long long, int, float, "
			  "int, int, int, int)", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("fp32-matmul"));
	apx_model_free(m);
	return 0;
}

/* One engine: a rule nvperfd runs on processes (procobs.c's table) whose id is also a report
 * rule is one entry: same title, same observe function, and the report's entry also runs on
 * traces; the daemon-only rules have ids no report rule uses. Both tables name each id once. */
APX_TEST(rule_tables_agree)
{
	size_t nt, no, shared = 0;
	const struct apx_rule *t = apx_rules(&nt), *o = apx_procobs_rules(&no);

	for (size_t i = 0; i < no; i++) {
		const struct apx_rule *same = NULL;

		APX_ASSERT(o[i].observe != NULL);
		for (size_t j = 0; j < nt; j++)
			if (!strcmp(t[j].id, o[i].id)) {
				APX_ASSERT(same == NULL);
				same = &t[j];
			}
		for (size_t k = i + 1; k < no; k++)
			APX_ASSERT(strcmp(o[k].id, o[i].id));
		if (!same)
			continue;
		shared++;
		APX_ASSERT_STREQ(same->title, o[i].title);
		APX_ASSERT(same->observe == o[i].observe);
		APX_ASSERT(same->run != NULL);
	}
	for (size_t j = 0; j < nt; j++) {
		int found = 0;

		APX_ASSERT(t[j].run != NULL);
		for (size_t i = 0; i < no; i++)
			found |= !strcmp(t[j].id, o[i].id);
		APX_ASSERT(!t[j].observe || found);	/* observes: it is in procobs.c's table */
	}
	/* pageable-copy, memory-capacity and l2-persistence */
	APX_ASSERT_EQ(shared, 3);
	return 0;
}

/* Each step copies a pinned batch (copy_us) and then runs an fp32 GEMM (gemm_us) on it, on one
 * stream: copy-overlap hides one behind the other, fp32-matmul shortens the GEMM by 2/3. */
static struct apx_model *copy_then_sgemm(uint64_t copy_us, uint64_t gemm_us)
{
	struct tg t;
	uint64_t at = MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (uint64_t i = 0; i < 20; i++) {
		tg_copy(&t, at, copy_us * US, APX_COPY_H2D, APX_MEM_PINNED, 64u << 20, 1, 0, 7);
		tg_kernel(&t, at + copy_us * US, gemm_us * US, "cutlass_80_simt_sgemm_256x128_8x4_nn", 7);
		at += (copy_us + gemm_us + 5) * US;
	}
	return analyse(&t);
}

/* pinned_h2d's shape: 1.2 ms copies, 340 us GEMMs. With the next copy overlapped, the GEMMs
 * are hidden behind the copies: making them faster saves nothing more, so fp32-matmul
 * is no finding (its kernel time is copy-overlap's); with copies short next to the GEMMs both
 * findings keep what they save together (c + k - max(c, k/3)). */
APX_TEST(kernel_time_is_saved_once_by_copy_overlap_and_fp32_matmul)
{
	struct apx_model *m = copy_then_sgemm(1200, 340);
	const struct apx_finding *co, *fp;
	double s;

	APX_ASSERT(m);
	co = finding("copy-overlap");
	/* the 18 GEMMs inside the steps (9 of 2) hide as much copy time */
	APX_ASSERT(co && (uint64_t)co->saving_ns == 18 * 340 * US);
	APX_ASSERT(!finding("fp32-matmul"));
	APX_ASSERT_EQ(result("fp32-matmul")->status, APX_RULE_MINOR);
	APX_ASSERT(strstr(result("fp32-matmul")->why, "claimed by larger findings"));
	apx_model_free(m);

	m = copy_then_sgemm(100, 1500);
	APX_ASSERT(m);
	co = finding("copy-overlap");
	fp = finding("fp32-matmul");
	APX_ASSERT(co && fp);
	s = fp32_speedup(fp);
	APX_ASSERT(fabs(fp->saving_ns - 18 * 1500.0 * US * (1 - 1 / s)) < 1);	/* in the steps */
	APX_ASSERT_EQ((uint64_t)co->saving_ns, 19 * 100 * US);	/* the first copy is set-up */
	APX_ASSERT(fp->saving_ns + co->saving_ns <= (19 * 100 + 20 * (1500 - 1500 / s)) * US);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
