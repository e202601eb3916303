/*
 * build_metrics.c - the report document's "metrics" section: the PM-sampling series of
 * `apx analyze --metrics` (the model's view_metrics.c): per metric and device, the samples'
 * min, mean, p95 and max over the steady window, and its mean over each top kernel's
 * executions. Called by apx_rdoc_build() (build.c).
 */
#include <math.h>
#include <stdio.h>

#include "report/build.h"

#include "base/banned.h"

static const struct apx_rcol steady_cols[] = {
	{ "metric", "metric", APX_UNIT_TEXT },
	{ "unit", "unit", APX_UNIT_TEXT },
	{ "device", "device", APX_UNIT_ID },
	{ "samples", "samples", APX_UNIT_COUNT },
	{ "mean_sample_ns", "sample", APX_UNIT_NS },
	{ "min", "min", APX_UNIT_RATIO },
	{ "mean", "mean", APX_UNIT_RATIO },
	{ "p95", "p95", APX_UNIT_RATIO },
	{ "max", "max", APX_UNIT_RATIO },
};

static const struct apx_rcol kernel_cols[] = {
	{ "metric", "metric", APX_UNIT_TEXT },
	{ "device", "device", APX_UNIT_ID },
	{ "kernel", "kernel", APX_UNIT_TEXT },
	{ "mean", "mean over its executions", APX_UNIT_RATIO },
	{ "covered_ns", "sampled time", APX_UNIT_NS },
};

void apx_rdoc_build_metrics(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_METRICS, "steady", "Over the steady state");
	struct apx_rtable *k = apx_rdoc_table(d, APX_SEC_METRICS, "kernels", "Over the top kernels");
	char name[512];

	APX_RTABLE_SET_COLS(t, steady_cols);
	APX_RTABLE_SET_COLS(k, kernel_cols);
	if (!m->pm.n) {
		apx_rdoc_note(d, APX_SEC_METRICS, "none recorded (apx analyze --metrics samples them)");
		return;
	}
	for (size_t i = 0; i < m->pm.n; i++) {
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, i);

		if (apx_rtable_row(t) == 0) {
			apx_rtable_text(d, t, 0, p->name, p->name_len);
			apx_rtable_text(d, t, 1, p->unit, p->unit_len);
			apx_rtable_u64(t, 2, p->device);
			apx_rtable_u64(t, 3, p->samples);
			apx_rtable_u64(t, 4, p->mean_sample_ns);
			if (p->have_steady) {
				apx_rtable_num(t, 5, p->min);
				apx_rtable_num(t, 6, p->mean);
				apx_rtable_num(t, 7, p->p95);
				apx_rtable_num(t, 8, p->max);
			}
		}
		for (size_t j = 0; j < p->ntop; j++) {
			const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, p->top[j]);
			const char *disp = apx_kernel_display_name(nm, name, sizeof(name));

			if (isnan(p->top_mean[j]) || apx_rtable_row(k) < 0)
				continue;
			apx_rtable_text(d, k, 0, p->name, p->name_len);
			apx_rtable_u64(k, 1, p->device);
			apx_rtable_str(d, k, 2, disp);
			apx_rtable_num(k, 3, p->top_mean[j]);
			apx_rtable_u64(k, 4, p->top_covered_ns[j]);
		}
	}
}
