/*
 * rule_fp32_matmul.c - float32 matrix multiplications on the SIMT cores instead of tensor
 * cores (cuBLAS/CUTLASS "sgemm" kernels, or gemm kernels with an f32 math signature and no
 * tf32/f16/bf16 in their name). Saving: their time x (1 - 1/3): TF32 tensor cores run dense
 * fp32 GEMMs several times faster (about 7x peak on Hopper); 3x is the conservative figure.
 * With steps, their time is the GEMMs' inside the steps (a step's saving is never more than
 * the GEMM time it has; start-up GEMMs are not saved a step).
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

#include "base/banned.h"

#define MIN_GEMM_NS 10000.0	/* mean time of a launch below which a GEMM is too small */

static int is_fp32_simt_gemm(const struct apx_an_name *nm)
{
	static const char *const tensor[] = { "tf32", "1688", "16816", "hmma", "bf16", "f16", "h884",
					      "h1688", "h16816", "gmma", "wgmma", "xmma_gemm_f16",
					      "i8", "e4m3", "e5m2" };
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

/* The GEMMs this rule counts (the lines of the finding). */
static int big_fp32_gemm(const void *ctx, const struct apx_an_name *nm)
{
	(void)ctx;
	return nm->count && is_fp32_simt_gemm(nm) &&
	       (double)nm->total_ns >= MIN_GEMM_NS * (double)nm->count;
}

APX_RULE_DECL(fp32_matmul)
{
	uint64_t total = 0, count = 0, small = 0, small_ns = 0, steady = 0;
	const struct apx_an_name *top = NULL;
	char b1[32], b2[32], name[512];
	struct apx_finding *f;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->count || !is_fp32_simt_gemm(nm))
			continue;
		if ((double)nm->total_ns < MIN_GEMM_NS * (double)nm->count) {
			small += nm->count;
			small_ns += nm->total_ns;
			continue;
		}
		total += nm->total_ns;
		steady += nm->steady_ns;
		count += nm->count;
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
	 * GEMM time a step has (issue 38) */
	f = apx_finding_add(out, m, "fp32-matmul", APX_SEV_WARNING,
			    (double)(m->steady.count ? steady : total) * 2.0 / 3.0, 50);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = f->saving_ns;	/* kernels made shorter: none if they are hidden already */
	snprintf(f->title, sizeof(f->title),
		 "float32 matrix multiplications without tensor cores: %.0f%% of GPU time",
		 m->kernel_total_ns ? 100.0 * (double)total / (double)m->kernel_total_ns : 0);
	snprintf(f->model, sizeof(f->model),
		 "TF32/bf16 tensor cores run these GEMMs >= 3x faster: saving = their time%s x 2/3",
		 m->steady.count ? " in the steady state's steps" : "");
	apx_text_append(f->evidence, sizeof(f->evidence), "fp32 SIMT GEMM kernels: %llu launches, %s\n",
			(unsigned long long)count, apx_fmt_ns(b1, sizeof(b1), (double)total));
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
		 "Let matmuls use tensor cores:\n"
		 "  torch.backends.cuda.matmul.allow_tf32 = True   # or:\n"
		 "  torch.set_float32_matmul_precision('high')\n"
		 "or run the model in bf16: with torch.autocast('cuda', dtype=torch.bfloat16): ...");
	if (small)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %llu launches of fp32 GEMMs under %.0f us each (too small)\n",
				(unsigned long long)small, MIN_GEMM_NS / 1000.0);
	apx_lines_of_kernels(m, f, big_fp32_gemm, NULL);
	return APX_RULE_FIRED;
}
