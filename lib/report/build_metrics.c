/*
 * build_metrics.c - the report document's "metrics" section: the PM-sampling series of
 * `apx analyze --metrics` (the model's view_metrics.c): per metric and device, the samples'
 * min, mean, p95 and max over the steady window, and its mean over the samples each top
 * kernel covers at least half of (or why there is none). Called by apx_rdoc_build() (build.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/hwcounters.h"
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
	{ "mean", "mean over its samples", APX_UNIT_RATIO },
	{ "samples", "samples mostly in it", APX_UNIT_COUNT },
	{ "covered_ns", "sampled time", APX_UNIT_NS },
	{ "why", "why no value", APX_UNIT_TEXT },
};

static const struct apx_rcol counter_cols[] = {
	{ "kernel", "kernel", APX_UNIT_TEXT },
	{ "launches", "replayed", APX_UNIT_COUNT },
	{ "bound", "bound by", APX_UNIT_TEXT },
	{ "duration_ns", "duration", APX_UNIT_NS },
	{ "occupancy_pct", "occupancy", APX_UNIT_PCT },
	{ "sm_pct", "SM", APX_UNIT_PCT },
	{ "dram_pct", "DRAM", APX_UNIT_PCT },
	{ "l1_hit_pct", "L1 hits", APX_UNIT_PCT },
	{ "l2_hit_pct", "L2 hits", APX_UNIT_PCT },
	{ "dram_read_bytes", "DRAM read", APX_UNIT_BYTES },
	{ "dram_write_bytes", "DRAM written", APX_UNIT_BYTES },
	{ "tensor_pct", "tensor pipe", APX_UNIT_PCT },
};

/* The replayed kernels' counters (apx analyze --replay): medians per kernel name. */
static void kernel_counters(struct apx_rdoc *d)
{
	static const unsigned cols[] = { APX_KC_DURATION, APX_KC_OCCUPANCY, APX_KC_SM_PCT,
					 APX_KC_DRAM_PCT, APX_KC_L1_HIT, APX_KC_L2_HIT,
					 APX_KC_DRAM_READ, APX_KC_DRAM_WRITE, APX_KC_TENSOR };
	const struct apx_model *m = d->m;
	struct apx_rtable *t;
	char name[512];

	if (!m->kc.n)
		return;
	t = apx_rdoc_table(d, APX_SEC_METRICS, "kernel_counters", "Kernel counters (replay)");
	APX_RTABLE_SET_COLS(t, counter_cols);
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		struct apx_kc_values k = { .have = kc->have, .launches = kc->launches };

		memcpy(k.v, kc->v, sizeof(k.v));
		if (apx_rtable_row(t) < 0)
			return;
		apx_rtable_str(d, t, 0, apx_kernel_display_name(APX_VEC_AT(&m->names,
							struct apx_an_name, kc->name), name, sizeof(name)));
		apx_rtable_u64(t, 1, kc->launches);
		apx_rtable_str(d, t, 2, apx_bound_name(apx_kc_bound(&k)));
		for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
			if (kc->have >> cols[c] & 1)
				apx_rtable_num(t, (unsigned)(3 + c), kc->v[cols[c]]);
	}
}

void apx_rdoc_build_metrics(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_table(d, APX_SEC_METRICS, "steady", "Over the steady state");
	struct apx_rtable *k = apx_rdoc_table(d, APX_SEC_METRICS, "kernels", "Over the top kernels");
	char name[512];

	APX_RTABLE_SET_COLS(t, steady_cols);
	APX_RTABLE_SET_COLS(k, kernel_cols);
	kernel_counters(d);
	apx_rdoc_build_nic(d);		/* only with --nic-metrics' series */
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

			char why[160];

			if (!p->top_covered_ns[j] || apx_rtable_row(k) < 0)
				continue;	/* no sample met its executions */
			apx_rtable_text(d, k, 0, p->name, p->name_len);
			apx_rtable_u64(k, 1, p->device);
			apx_rtable_str(d, k, 2, disp);
			if (!isnan(p->top_mean[j]))
				apx_rtable_num(k, 3, p->top_mean[j]);
			apx_rtable_u64(k, 4, p->top_samples[j]);
			apx_rtable_u64(k, 5, p->top_covered_ns[j]);
			if (isnan(p->top_mean[j]))
				apx_rtable_str(d, k, 6, apx_hw_kernel_why(why, sizeof(why),
									  p->mean_sample_ns,
									  p->top_kernel_ns[j],
									  p->top_samples[j],
									  apx_hw_is_pm(p->name, p->name_len)));
		}
	}
}
