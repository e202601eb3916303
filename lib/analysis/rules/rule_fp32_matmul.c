/*
 * rule_fp32_matmul.c - float32 matrix multiplications on the SIMT cores instead of tensor
 * cores (cuBLAS/CUTLASS "sgemm" kernels, or gemm kernels with an f32 math signature and no
 * tf32/f16/bf16 in their name). Saving: their time x (1 - 1/3): TF32 tensor cores run dense
 * fp32 GEMMs several times faster (about 7x peak on Hopper); 3x is the conservative figure.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

static int contains(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);

	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(s + i, needle, k))
			return 1;
	return 0;
}

static int is_fp32_simt_gemm(const struct apx_an_name *nm)
{
	static const char *const tensor[] = { "tf32", "1688", "16816", "hmma", "bf16", "f16", "h884",
					      "h1688", "h16816", "gmma", "wgmma", "xmma_gemm_f16",
					      "i8", "e4m3", "e5m2" };
	int gemm = contains(nm->text, nm->len, "sgemm") ||
		   ((contains(nm->text, nm->len, "gemm") || contains(nm->text, nm->len, "GEMM")) &&
		    contains(nm->text, nm->len, "f32f32"));

	if (!gemm)
		return 0;
	for (size_t i = 0; i < sizeof(tensor) / sizeof(tensor[0]); i++)
		if (contains(nm->text, nm->len, tensor[i]))
			return 0;
	return 1;
}

APX_RULE_DECL(fp32_matmul)
{
	uint64_t total = 0, count = 0;
	const struct apx_an_name *top = NULL;
	char b1[32], b2[32], name[512];
	struct apx_finding *f;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->count || !is_fp32_simt_gemm(nm))
			continue;
		total += nm->total_ns;
		count += nm->count;
		if (!top || nm->total_ns > top->total_ns)
			top = nm;
	}
	if (!count || (m->kernel_total_ns && (double)total < 0.05 * (double)m->kernel_total_ns))
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "fp32-matmul", APX_SEV_WARNING, (double)total * 2.0 / 3.0, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title),
		 "float32 matrix multiplications without tensor cores: %.0f%% of GPU time",
		 m->kernel_total_ns ? 100.0 * (double)total / (double)m->kernel_total_ns : 0);
	snprintf(f->model, sizeof(f->model),
		 "TF32/bf16 tensor cores run these GEMMs >= 3x faster: saving = their time x 2/3");
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
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
