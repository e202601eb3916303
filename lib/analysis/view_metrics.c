/*
 * view_metrics.c - the device-metric series (METRIC records with an interval, written by the
 * collector's pmsampling source for `apx analyze --metrics` and by its nvml source for power
 * and clocks) as a view over the event store:
 * for each series (a metric on a device), its samples' min, time-weighted mean, p95 and max
 * over the steady window, and for each of the device's top kernels (by total time) its mean
 * over the samples that the kernel's executions cover at least half of, kept only when at
 * least APX_HW_MIN_SAMPLES such samples are (a sample mostly of other work says nothing of
 * the kernel); samples wholly outside the capture ranges (capture.c) are left out. The maths is hwcounters.c's. Called by apx_model_finish()
 * (finish.c) after the kernel names; single-threaded; scratch freed before it returns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hwcounters.h"
#include "analysis/views.h"

#include "base/banned.h"

/* The top kernels of store device dev by total time: name indexes into top (at most max). */
static size_t top_kernels(const struct apx_model *m, uint32_t dev, uint32_t *top, size_t max)
{
	const struct apx_store *st = m->store;
	uint32_t ord = apx_view_ordinal(st->devices[dev].ordinal);
	size_t n = 0;

	for (size_t j = 0; j < m->names.n; j++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);
		size_t at;

		if (!nm->count || nm->device != ord)
			continue;
		for (at = n; at > 0; at--) {	/* insertion, largest total first */
			const struct apx_an_name *o = APX_VEC_AT(&m->names, struct apx_an_name, top[at - 1]);

			if (o->total_ns >= nm->total_ns)
				break;
			if (at < max)
				top[at] = top[at - 1];
		}
		if (at < max)
			top[at] = (uint32_t)j;
		if (n < max)
			n++;
	}
	return n;
}

/* One series: gather its samples (the store's are in time order), then the statistics. */
static int one_series(struct apx_model *m, uint32_t si, struct apx_hw_sample *smp,
		      double *scratch)
{
	const struct apx_store *st = m->store;
	const struct apx_es_series *se = &st->series[si];
	struct apx_an_pm p = {
		.name = se->name.p, .name_len = se->name.len, .unit = se->unit.p,
		.unit_len = se->unit.len,
	};
	struct apx_hw_stat stat;
	uint64_t sum = 0;
	size_t n = 0;

	for (size_t i = 0; i < st->ct.n; i++)
		if (st->ct.series[i] == si && st->ct.end[i] &&
		    apx_an_collected_overlap(m, st->ct.ts[i], st->ct.end[i])) {
			/* a sample wholly between two capture ranges is not the program's */
			smp[n] = (struct apx_hw_sample){ st->ct.ts[i], st->ct.end[i], st->ct.value[i] };
			sum += st->ct.end[i] - st->ct.ts[i];
			n++;
		}
	if (!n)
		return 0;	/* instants (nvperfd's NVML readings): not a PM-sampling series */
	p.device = se->device < st->ndevices ? apx_view_ordinal(st->devices[se->device].ordinal) : 0;
	p.samples = n;
	p.mean_sample_ns = sum / n;
	if (apx_hw_stat_window(smp, n, m->steady_start_ns, m->steady_end_ns, scratch, &stat) == 0) {
		p.have_steady = 1;
		p.min = stat.min, p.mean = stat.mean, p.p95 = stat.p95, p.max = stat.max;
	}
	if (se->device < st->ndevices)
		p.ntop = top_kernels(m, se->device, p.top, APX_PM_TOP_KERNELS);
	for (size_t t = 0; t < p.ntop; t++) {	/* that kernel's executions on the device */
		uint64_t cnt = APX_VEC_AT(&m->names, struct apx_an_name, p.top[t])->count;
		uint64_t *ks = malloc((cnt + 1) * sizeof(*ks)), *ke = malloc((cnt + 1) * sizeof(*ke));
		size_t nk = 0;

		if (!ks || !ke) {
			free(ks);
			free(ke);
			return -ENOMEM;
		}
		for (size_t i = 0; i < st->k.n && nk < cnt; i++)
			if (apx_view_kname(st, i) == p.top[t] &&
			    st->streams[st->k.stream[i]].device == se->device) {
				ks[nk] = st->k.start[i];
				ke[nk++] = apx_view_kernel_end(st, i);
			}
		p.top_mean[t] = apx_hw_mean_over(smp, n, ks, ke, nk, scratch, &p.top_covered_ns[t],
						 &p.top_samples[t]);
		if (p.top_samples[t] < APX_HW_MIN_SAMPLES)
			p.top_mean[t] = NAN;	/* too few to say: the report says why */
		if (nk) {
			uint64_t busy = 0;

			for (size_t e = 0; e < nk; e++)
				busy += ke[e] - ks[e];
			p.top_kernel_ns[t] = busy / nk;
		}
		free(ks);
		free(ke);
	}
	return apx_vec_push(&m->pm, &p);
}

int apx_view_metrics(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	size_t most = 0;
	struct apx_hw_sample *smp;
	double *scratch;
	int r = 0;

	for (size_t i = 0; i < st->ct.n; i++)
		most += st->ct.end[i] != 0;
	if (!most)
		return 0;
	smp = malloc(most * sizeof(*smp));
	scratch = malloc(most * sizeof(*scratch));
	if (!smp || !scratch)
		r = -ENOMEM;
	for (uint32_t si = 0; si < st->nseries && r == 0; si++)
		if (!st->series[si].is_memory)
			r = one_series(m, si, smp, scratch);
	free(smp);
	free(scratch);
	return r;
}
