/*
 * rule_fp32_matmul.c - float32 matrix multiplications on the SIMT cores instead of tensor
 * cores (cuBLAS/CUTLASS "sgemm" kernels, or gemm kernels with an f32 math signature and no
 * tf32/f16/bf16 in their name; cuDNN's fp32 implicit-GEMM convolutions too, and its other
 * fp32 convolution algorithms, which TF32 replaces by tensor-core implicit GEMMs:
 * is_fp32_simt_conv). Saving:
 * from the device, not a constant: the ratio of its dense TF32 tensor-core peak to
 * its fp32 SIMT peak (by compute capability: 8x on A100, 7.4x on H100/H200, 2x on the
 * L4/L40/A10 class), times the fraction of peak a large tensor-core GEMM reaches against a
 * SIMT one (TC_EFF / SIMT_EFF); the GEMMs' recorded durations are divided by that factor in
 * the what-if simulator (kernel-speedup), so GEMMs hidden behind other work save nothing;
 * with --savings rule, their time x (1 - 1/factor). With steps, their time is the GEMMs'
 * inside the steps (a step's saving is never more than the GEMM time it has; start-up GEMMs
 * are not saved a step). The evidence adds what bf16 autocast would save: the GEMMs at the
 * bf16 rate (twice TF32's) and, at most, half the time of the fp32 memory-bound kernels
 * (elementwise, normalization, reductions on float), whose bytes bf16 halves.
 * Only GEMMs big enough for the math to matter count: a kernel name says nothing of the matrix
 * sizes, but its time does. A GEMM whose launches take under MIN_GEMM_NS on average is a small
 * one (32x32x32 is 65 kFLOP, ~4 us on an H200, nearly all of it fixed cost: launch, prologue,
 * one wave of tiles, epilogue); tensor cores shorten only the multiply-adds, so TF32 or bf16
 * saves close to nothing there. At 10 us a SIMT fp32 GEMM does ~0.5 GFLOP (~50 TFLOP/s on
 * Hopper), past the size (~512^3) where the tensor-core math rate starts to show.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

#define MIN_GEMM_NS 10000.0	/* mean time of a launch below which a GEMM is too small */
/* Fractions of peak that large GEMMs reach: fp32 SIMT (cuBLAS sgemm) and tensor-core (TF32,
 * bf16) kernels; the realized speedup is the peaks' ratio x TC_EFF / SIMT_EFF. */
#define SIMT_EFF 0.8
#define TC_EFF 0.65

/* Dense TF32 tensor-core peak / fp32 SIMT peak of a compute capability (NVIDIA's data
 * sheets); 0 when unknown. Volta and Turing have no TF32: their fp16 tensor-core ratio. */
static double tf32_ratio(unsigned major, unsigned minor)
{
	if (major == 7)
		return 8.0;			/* V100 125/15.7 fp16, T4 65/8.1 fp16 */
	if (major == 8 && minor == 0)
		return 8.0;			/* A100: 156 / 19.5 */
	if (major == 8 || major == 12)
		return 2.0;			/* A10 62.5/31.2, L4 60/30, L40S 183/91.6 */
	if (major == 9)
		return 7.4;			/* H100/H200 SXM: 494 / 67 */
	if (major == 10)
		return 14.0;			/* B200: 1100 / 80 (dense) */
	return 0;
}

/* The speedup TF32 gives the fp32 GEMMs of device dev (*ret_known 0: not known, 3x, the
 * conservative figure, is used). */
static double tf32_speedup(const struct apx_model *m, uint32_t dev, int *ret_known)
{
	const struct apx_an_device *d = apx_model_device(m, dev);
	double r = d && d->known ? tf32_ratio(d->cc_major, d->cc_minor) : 0;

	*ret_known = r > 0;
	if (!*ret_known)
		return 3.0;
	r *= TC_EFF / SIMT_EFF;
	return r > 1.0 ? r : 1.0;
}

/* An fp32 memory-bound kernel that bf16 autocast would feed half the bytes: PyTorch's
 * elementwise, normalization and reduction kernels on float (by the demangled name). */
static int fp32_memory_bound(const struct apx_an_name *nm)
{
	static const char *const kinds[] = { "elementwise", "norm", "reduce_kernel", "softmax" };
	char buf[1024];
	const char *d = apx_kernel_display_name(nm, buf, sizeof(buf));
	int kind = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !kind; i++)
		kind = strstr(d, kinds[i]) != NULL;
	return kind && strstr(d, "float") && !strstr(d, "BFloat16") && !strstr(d, "Half") &&
	       !strstr(d, "gemm");
}

/* An fp32 GEMM on the SIMT cores: "sgemm", or "gemm" with an f32 math signature, and no
 * tensor-core or narrower type in the name (cuDNN's precomputed_convolve_sgemm is also
 * instantiated for __nv_bfloat16 and __half: those are no fp32 work). */
static int is_fp32_simt_gemm(const struct apx_an_name *nm)
{
	static const char *const tensor[] = { "tf32", "1688", "16816", "hmma", "bf16", "f16", "h884",
					      "h1688", "h16816", "gmma", "wgmma", "xmma_gemm_f16",
					      "i8", "e4m3", "e5m2", "bfloat16", "half", "Half" };
	int gemm = apx_name_has(nm, "sgemm") ||
		   ((apx_name_has(nm, "gemm") || apx_name_has(nm, "GEMM")) &&
		    apx_name_has(nm, "f32f32"));

	if (!gemm)
		return 0;
	for (size_t i = 0; i < sizeof(tensor) / sizeof(tensor[0]); i++)
		if (apx_name_has(nm, tensor[i]))
			return 0;
	return 1;
}

/* cuDNN's fp32 convolution algorithms other than the implicit GEMMs above (which
 * is_fp32_simt_gemm counts): the SIMT weight- and data-gradient engines, FFT convolutions
 * (their transforms and the complex products between them), Winograd, direct and the older
 * "scudnn" kernels. With TF32 allowed (cudnn.allow_tf32) cuDNN replaces them with tensor-core
 * implicit GEMMs doing the same math at the TF32 rate, so they take the GEMMs' speedup. By the
 * demangled name: a float template argument (or scudnn's "s", single precision) and no
 * half/bf16 type. */
static int is_fp32_simt_conv(const struct apx_an_name *nm)
{
	static const char *const engines[] = { "wgrad_alg", "dgrad_engine", "dgrad2d_alg",
					       "dgrad_alg", "fft2d_", "fft1d_",
					       "pointwise_mult_and_sum_complex",
					       "convolve_sgemm", "winograd", "conv2d_grouped_direct",
					       "convolve_common_engine_float" };
	char buf[1024];
	const char *d = apx_kernel_display_name(nm, buf, sizeof(buf));
	int engine = 0;

	if (!strncmp(d, "scudnn", 6))
		return 1;
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]) && !engine; i++)
		engine = strstr(d, engines[i]) != NULL;
	return engine && strstr(d, "float") && !strstr(d, "half") && !strstr(d, "__nv_bfloat16") &&
	       !strstr(d, "BFloat16") && !strstr(d, "Half");
}

/* The fp32 GEMMs and convolutions this rule counts, and whether one is a convolution engine. */
static int is_fp32_simt_math(const struct apx_an_name *nm, int *conv)
{
	*conv = 0;
	if (is_fp32_simt_gemm(nm))
		return 1;
	*conv = is_fp32_simt_conv(nm);
	return *conv;
}

/* The GEMMs and convolutions this rule counts (the lines of the finding). */
static int big_fp32_gemm(const void *ctx, const struct apx_an_name *nm)
{
	int conv;

	(void)ctx;
	return nm->count && is_fp32_simt_math(nm, &conv) &&
	       (double)nm->total_ns >= MIN_GEMM_NS * (double)nm->count;
}

/* For the simulator: whether the kernel named by store string name is one of them. */
static int sim_match(const struct apx_model *m, uint32_t name, void *ctx)
{
	struct apx_es_text t = apx_store_string(m->store, name);

	(void)ctx;
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (nm->len == t.len && (nm->text == t.p || !memcmp(nm->text, t.p, t.len)))
			return big_fp32_gemm(NULL, nm);
	}
	return 0;
}

APX_RULE_DECL(fp32_matmul)
{
	uint64_t total = 0, count = 0, small = 0, small_ns = 0, steady = 0, membound = 0, convs = 0;
	const struct apx_an_name *top = NULL;
	char b1[32], b2[32], name[512];
	struct apx_finding *f;
	struct apx_wi_params sim = { .xform = APX_WI_X_KERNEL_SPEEDUP, .match = sim_match };
	double speedup, gemm_ns, saving, rule_ns, bf16;
	int known, simulated, conv;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (nm->count && fp32_memory_bound(nm))
			membound += m->steady.count ? nm->steady_ns : nm->total_ns;
		if (!nm->count || !is_fp32_simt_math(nm, &conv))
			continue;
		if ((double)nm->total_ns < MIN_GEMM_NS * (double)nm->count) {
			small += nm->count;
			small_ns += nm->total_ns;
			continue;
		}
		total += nm->total_ns;
		steady += nm->steady_ns;
		count += nm->count;
		convs += conv ? nm->total_ns : 0;
		if (!top || nm->total_ns > top->total_ns)
			top = nm;
	}
	if (!count || (m->kernel_total_ns && (double)total < 0.05 * (double)m->kernel_total_ns)) {
		if (small)
			snprintf(why, why_len, "%llu fp32 GEMM launches left out: under %.0f us each "
				 "(%s in all), too small for tensor cores to matter",
				 (unsigned long long)small, MIN_GEMM_NS / 1000.0,
				 apx_fmt_ns(b1, sizeof(b1), (double)small_ns));
		return APX_RULE_CLEAN;
	}
	if (m->steady.count && !steady) {
		snprintf(why, why_len, "fp32 GEMMs only outside the steady state's steps (%s)",
			 apx_fmt_ns(b1, sizeof(b1), (double)total));
		return APX_RULE_CLEAN;
	}
	/* with steps, the GEMMs' time inside them: a saving a step is never more than the
	 * GEMM time a step has */
	speedup = tf32_speedup(m, top ? top->device : 0, &known);
	gemm_ns = (double)(m->steady.count ? steady : total);
	saving = rule_ns = gemm_ns * (1.0 - 1.0 / speedup);
	sim.factor = speedup;
	simulated = apx_whatif_rule_saving(m, &sim, &saving);
	/* bf16 autocast: the GEMMs at twice the TF32 rate, and at most half the fp32
	 * memory-bound kernels' time */
	bf16 = gemm_ns * (1.0 - 1.0 / (2.0 * speedup)) + 0.5 * (double)membound;
	f = apx_finding_add(out, m, "fp32-matmul", APX_SEV_WARNING, saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = f->saving_ns;	/* kernels made shorter: none if they are hidden already */
	snprintf(f->title, sizeof(f->title),
		 "float32 matrix multiplications%s without tensor cores: %.0f%% of GPU time",
		 convs ? " and convolutions" : "",
		 m->kernel_total_ns ? 100.0 * (double)total / (double)m->kernel_total_ns : 0);
	snprintf(f->model, sizeof(f->model),
		 "TF32 tensor cores run these GEMMs%s %.1fx faster (%s): saving = their time%s x "
		 "(1 - 1/%.1f)", convs ? " and convolutions" : "", speedup,
		 known ? "the device's TF32/fp32 peaks x 0.65/0.8 of peak "
		 "reached" : "the device is unknown: a conservative 3x", m->steady.count ?
		 " in the steady state's steps" : "", speedup);
	if (simulated)
		apx_whatif_rule_note(f, sim.xform, rule_ns);
	apx_finding_metric(f, "speedup", speedup, APX_UNIT_RATIO);
	apx_finding_metric(f, "saving_bf16_ns", bf16, APX_UNIT_NS);
	apx_text_append(f->evidence, sizeof(f->evidence), "fp32 SIMT GEMM kernels: %llu launches, %s\n",
			(unsigned long long)count, apx_fmt_ns(b1, sizeof(b1), (double)total));
	if (convs) {
		apx_text_append(f->evidence, sizeof(f->evidence),
				"of them cuDNN's fp32 convolution engines (FFT, SIMT gradient, "
				"Winograd, direct): %s\n", apx_fmt_ns(b1, sizeof(b1), (double)convs));
		apx_finding_metric(f, "conv_kernel_ns", (double)convs, APX_UNIT_NS);
	}
	if (top)
		apx_text_append(f->evidence, sizeof(f->evidence), "top: %.100s (%s)\n",
				apx_kernel_display_name(top, name, sizeof(name)),
				apx_fmt_ns(b2, sizeof(b2), (double)top->total_ns));
	apx_finding_metric(f, "kernels", (double)count, APX_UNIT_COUNT);
	apx_finding_metric(f, "kernel_ns", (double)total, APX_UNIT_NS);
	apx_finding_metric(f, "gpu_time_pct", m->kernel_total_ns ? 100.0 * (double)total /
			   (double)m->kernel_total_ns : 0, APX_UNIT_PCT);
	if (top) {
		static const char *const keys[] = { "count", "total_ns" };
		static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_NS };
		const char *tn = apx_kernel_display_name(top, name, sizeof(name));
		double *v;

		apx_evidence_cols(f, "kernel", 2, keys, units);
		v = apx_evidence_row(f, tn, strlen(tn));
		if (v) {
			v[0] = (double)top->count;
			v[1] = (double)top->total_ns;
		}
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Let matmuls%s use tensor cores:\n"
		 "  torch.backends.cuda.matmul.allow_tf32 = True   # or:\n"
		 "  torch.set_float32_matmul_precision('high')\n%s"
		 "or run the model in bf16: with torch.autocast('cuda', dtype=torch.bfloat16): ...",
		 convs ? " and convolutions" : "",
		 convs ? "  torch.backends.cudnn.allow_tf32 = True   # convolutions (PyTorch's "
			 "default)\n" : "");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"with bf16 autocast instead: up to %s (the GEMMs %.1fx faster, and half of "
			"%s of fp32 elementwise/normalization kernels)\n",
			apx_fmt_ns(b1, sizeof(b1), bf16), 2.0 * speedup,
			apx_fmt_ns(b2, sizeof(b2), (double)membound));
	if (small)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %llu launches of fp32 GEMMs under %.0f us each (too small)\n",
				(unsigned long long)small, MIN_GEMM_NS / 1000.0);
	apx_lines_of_kernels(m, f, big_fp32_gemm, NULL);
	return APX_RULE_FIRED;
}
