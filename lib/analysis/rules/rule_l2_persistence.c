/*
 * rule_l2_persistence.c - L2 persistence advice, from the replayed kernels' counters
 * (apx analyze --replay) and the L2 configuration the trace recorded:
 *   - no access-policy window in the run, and a kernel launched every step re-reads from DRAM
 *     data that fits the device's persisting set-aside (DRAM bytes read per launch) at a low
 *     L2 hit rate while DRAM is busy: suggest a window with num_bytes and hitRatio
 *     (hwcounters.c apx_l2_advise);
 *   - a window larger than the set-aside the program asked for (cudaLimitPersistingL2CacheSize):
 *     only part of it can persist;
 *   - a window set, and a replayed kernel still re-reads from DRAM what fits the set-aside at
 *     a low L2 hit rate (what would make the first case suggest a window): the window did not
 *     help that kernel (it does not cover its data, or hitRatio / the set-aside is too small);
 *   - with several GPUs in the run, a reminder to check that the set-aside is granted on each
 *     (seed 000: persistence may be disabled there).
 * Saving (a rough upper bound, confidence 30 %): the kernel's time in the steps x its DRAM
 * throughput share x the part of its misses the window could keep. Not measured without
 * replayed counters (the set-aside check needs none). The same rule on the L2 settings nvperfd's
 * uprobes saw a process make is obs_l2_persistence.c.
 */
#include "analysis/findings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/hwcounters.h"

#include "base/banned.h"

/* The largest window the run set, and the last persisting set-aside it asked for. */
static void l2_config(const struct apx_model *m, uint64_t *window, uint64_t *limit)
{
	*window = *limit = 0;
	for (size_t i = 0; i < m->configs.n; i++) {
		const struct apx_an_config *c = APX_VEC_AT(&m->configs, struct apx_an_config, i);

		if (c->kind == APX_CONFIG_L2_PERSIST_LIMIT)
			*limit = c->value;
		else if (c->kind != APX_CONFIG_L2_PERSIST_RESET && c->bytes > *window)
			*window = c->bytes;
	}
}

static void too_small(const struct apx_model *m, struct apx_findings *out, uint64_t window,
		      uint64_t limit)
{
	struct apx_finding *f = apx_finding_add(out, m, "l2-persistence", APX_SEV_WARNING, 0, 80);
	char b1[32], b2[32];

	if (!f)
		return;
	snprintf(f->title, sizeof(f->title), "an L2 access-policy window of %s over a %s persisting "
		 "set-aside: at most %.0f%% of it can persist", apx_fmt_size(b1, sizeof(b1), (double)window),
		 apx_fmt_size(b2, sizeof(b2), (double)limit), 100.0 * (double)limit / (double)window);
	snprintf(f->model, sizeof(f->model), "a configuration check: the window's lines beyond the "
		 "set-aside are evicted like any other");
	apx_text_append(f->evidence, sizeof(f->evidence), "window %s, set-aside asked for %s\n",
			apx_fmt_size(b1, sizeof(b1), (double)window),
			apx_fmt_size(b2, sizeof(b2), (double)limit));
	apx_finding_metric(f, "window_bytes", (double)window, APX_UNIT_BYTES);
	apx_finding_metric(f, "setaside_bytes", (double)limit, APX_UNIT_BYTES);
	snprintf(f->fix, sizeof(f->fix),
		 "Make the set-aside at least the window, or scale hitRatio to it:\n"
		 "  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, window_bytes)\n"
		 "  attr.accessPolicyWindow.hitRatio = min(1.0, set_aside / window_bytes)");
}

static void no_gain(const struct apx_model *m, struct apx_findings *out, const struct apx_an_kc *kc,
		    uint64_t window, uint64_t limit)
{
	struct apx_finding *f = apx_finding_add(out, m, "l2-persistence", APX_SEV_INFO, 0, 50);
	const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, kc->name);
	char name[512], b1[32], b2[32], b3[32];

	if (!f)
		return;
	snprintf(f->title, sizeof(f->title), "an L2 window of %s is set, but %.60s still hits L2 "
		 "only %.0f%%", apx_fmt_size(b1, sizeof(b1), (double)window),
		 apx_kernel_display_name(nm, name, sizeof(name)), kc->v[APX_KC_L2_HIT]);
	snprintf(f->model, sizeof(f->model), "a check of the window's effect on the replayed "
		 "launches' L2 hit rate; no saving is estimated");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"%u replayed launches: DRAM read %s a launch, DRAM %.0f%% of peak, L2 hits "
			"%.0f%%; window %s, set-aside asked for %s\n", kc->launches,
			apx_fmt_size(b1, sizeof(b1), kc->v[APX_KC_DRAM_READ]), kc->v[APX_KC_DRAM_PCT],
			kc->v[APX_KC_L2_HIT], apx_fmt_size(b2, sizeof(b2), (double)window),
			limit ? apx_fmt_size(b3, sizeof(b3), (double)limit) : "none");
	apx_finding_metric(f, "window_bytes", (double)window, APX_UNIT_BYTES);
	apx_finding_metric(f, "l2_hit_pct", kc->v[APX_KC_L2_HIT], APX_UNIT_PCT);
	apx_finding_metric(f, "dram_read_bytes", kc->v[APX_KC_DRAM_READ], APX_UNIT_BYTES);
	snprintf(f->fix, sizeof(f->fix),
		 "Check that the window covers the tensor this kernel re-reads (base_ptr, num_bytes),\n"
		 "that it is set on the stream the kernel runs on, and that the set-aside\n"
		 "(cudaLimitPersistingL2CacheSize) is at least num_bytes x hitRatio; else drop it.");
}

static void suggest(const struct apx_model *m, struct apx_findings *out, const struct apx_an_kc *kc,
		    const struct apx_l2_advice *a, double steady_ns, uint64_t per_step)
{
	double miss = 1.0 - (kc->v[APX_KC_L2_HIT] / 100.0);
	double saving = steady_ns * (kc->v[APX_KC_DRAM_PCT] / 100.0) * miss * a->hit_ratio;
	struct apx_finding *f = apx_finding_add(out, m, "l2-persistence", APX_SEV_INFO, saving, 30);
	const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, kc->name);
	char name[512], b1[32];

	if (!f)
		return;
	f->kernel_ns = f->saving_ns;	/* a kernel made shorter by L2 hits */
	snprintf(f->title, sizeof(f->title), "a persisting L2 window of %s could keep the data "
		 "%.60s re-reads from DRAM (L2 hits %.0f%%)", apx_fmt_size(b1, sizeof(b1),
		 (double)a->window_bytes), apx_kernel_display_name(nm, name, sizeof(name)),
		 kc->v[APX_KC_L2_HIT]);
	snprintf(f->model, sizeof(f->model), "upper bound: the kernel's time in the steps x its DRAM "
		 "throughput share x the misses the window would keep (hitRatio %.2f)", a->hit_ratio);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"%u replayed launches: DRAM read %s a launch, DRAM %.0f%% of peak, L2 hits "
			"%.0f%%; %llu launches a step\n", kc->launches,
			apx_fmt_size(b1, sizeof(b1), kc->v[APX_KC_DRAM_READ]), kc->v[APX_KC_DRAM_PCT],
			kc->v[APX_KC_L2_HIT], (unsigned long long)per_step);
	apx_finding_metric(f, "window_bytes", (double)a->window_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "hit_ratio", a->hit_ratio, APX_UNIT_RATIO);
	apx_finding_metric(f, "l2_hit_pct", kc->v[APX_KC_L2_HIT], APX_UNIT_PCT);
	apx_finding_metric(f, "dram_read_bytes", kc->v[APX_KC_DRAM_READ], APX_UNIT_BYTES);
	snprintf(f->fix, sizeof(f->fix),
		 "Keep the re-read tensor in L2 (PyTorch has no API: use the CUDA runtime, e.g. via\n"
		 "cuda-python, on torch.cuda.current_stream().cuda_stream):\n"
		 "  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, %llu)\n"
		 "  attr.accessPolicyWindow = {base_ptr: t.data_ptr(), num_bytes: %llu,\n"
		 "      hitRatio: %.2f, hitProp: Persisting, missProp: Streaming}\n"
		 "  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr)",
		 (unsigned long long)a->window_bytes, (unsigned long long)a->window_bytes, a->hit_ratio);
}

APX_RULE_DECL(l2_persistence)
{
	uint64_t window, limit;
	size_t before = out->n;

	l2_config(m, &window, &limit);
	if (window && limit && window > limit)
		too_small(m, out, window, limit);
	if (!m->kc.n) {
		if (out->n > before)
			return APX_RULE_FIRED;
		snprintf(why, why_len, "no replayed kernel counters (apx analyze --replay measures "
			 "L2 hit rates)");
		return APX_RULE_NOT_MEASURED;
	}
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, kc->name);
		const struct apx_an_device *d = apx_model_device(m, nm->device);
		struct apx_kc_values k = { .have = kc->have, .launches = kc->launches };
		uint64_t per_step = m->steady.count ? nm->steady_count / m->steady.count : 0;
		struct apx_l2_input in = { .k = &k, .persist_max = d ? d->persist_l2_max : 0,
					   .launches_per_step = per_step };
		struct apx_l2_advice a;

		memcpy(k.v, kc->v, sizeof(k.v));
		apx_l2_advise(&in, &a);	/* as if there were no window */
		if (a.kind != APX_L2_SUGGEST_WINDOW)
			continue;
		if (window)
			no_gain(m, out, kc, window, limit);
		else
			suggest(m, out, kc, &a, (double)nm->steady_ns, per_step);
	}
	if (out->n > before && m->ndevices > 1)
		apx_text_append(out->f[out->n - 1].evidence, sizeof(out->f[0].evidence),
				"%zu GPUs in this run: check that each grants the set-aside "
				"(cudaDevAttrMaxPersistingL2CacheSize; seed 000: persistence may be "
				"disabled with several GPUs)\n", m->ndevices);
	return out->n > before ? APX_RULE_FIRED : APX_RULE_CLEAN;
}
