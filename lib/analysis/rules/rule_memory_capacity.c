/*
 * rule_memory_capacity.c - device memory near capacity (peak of the allocations recorded
 * above 90% of the device's memory: the next larger batch fails) and excessive pinned host
 * memory (page-locked memory cannot be swapped). A risk, not a speed-up: saving 0. The same
 * rule on the device memory NVML saw a process's GPU reach is obs_memory_capacity.c (nvperfd).
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "base/banned.h"

APX_RULE_DECL(memory_capacity)
{
	uint64_t total = 0, peak_rss = 0;
	char b1[32], b2[32];
	int fired = 0;

	if (!m->mem_events.n) {
		if (m->k.n) {
			snprintf(why, why_len, "no memory allocation records in the trace");
			return APX_RULE_NOT_MEASURED;
		}
		return APX_RULE_CLEAN;
	}
	for (size_t i = 0; i < m->ndevices; i++)
		total += m->devices[i].mem_bytes;
	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *c = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);

		if (c->peak > peak_rss)
			peak_rss = c->peak;
	}
	if (total && (double)m->device_mem_peak > 0.9 * (double)total) {
		struct apx_finding *f = apx_finding_add(out, m, "memory-capacity", APX_SEV_WARNING, 0, 90);

		if (f) {
			snprintf(f->title, sizeof(f->title), "device memory peaked at %.0f%% of capacity",
				 100.0 * (double)m->device_mem_peak / (double)total);
			snprintf(f->model, sizeof(f->model), "a risk (out of memory), not a speed-up");
			apx_text_append(f->evidence, sizeof(f->evidence),
					"peak allocated %s of %s (allocations by the CUDA caching "
					"allocator: reserved memory)\n",
					apx_fmt_size(b1, sizeof(b1), (double)m->device_mem_peak),
					apx_fmt_size(b2, sizeof(b2), (double)total));
			apx_finding_metric(f, "peak_bytes", (double)m->device_mem_peak, APX_UNIT_BYTES);
			apx_finding_metric(f, "capacity_bytes", (double)total, APX_UNIT_BYTES);
			snprintf(f->fix, sizeof(f->fix), "%s", apx_memory_capacity_fix);
			fired = 1;
		}
	}
	/* pinned memory: over 8 GB, or over half the process's peak RSS and over 4 GB */
	if (m->pinned_peak > (8ull << 30) || (peak_rss && m->pinned_peak > peak_rss / 2 &&
					      m->pinned_peak > (4ull << 30))) {
		struct apx_finding *f = apx_finding_add(out, m, "memory-capacity", APX_SEV_INFO, 0, 70);

		if (f) {
			snprintf(f->title, sizeof(f->title), "%s of pinned host memory",
				 apx_fmt_size(b1, sizeof(b1), (double)m->pinned_peak));
			snprintf(f->model, sizeof(f->model), "a risk (host memory pressure), not a speed-up");
			apx_text_append(f->evidence, sizeof(f->evidence),
					"pinned peak %s in %llu allocations; process peak RSS %s\n",
					apx_fmt_size(b1, sizeof(b1), (double)m->pinned_peak),
					(unsigned long long)m->pinned_allocs,
					peak_rss ? apx_fmt_size(b2, sizeof(b2), (double)peak_rss) : "n/a");
			apx_finding_metric(f, "pinned_peak_bytes", (double)m->pinned_peak, APX_UNIT_BYTES);
			apx_finding_metric(f, "pinned_allocations", (double)m->pinned_allocs, APX_UNIT_COUNT);
			if (peak_rss)
				apx_finding_metric(f, "peak_rss_bytes", (double)peak_rss, APX_UNIT_BYTES);
			snprintf(f->fix, sizeof(f->fix),
				 "Pin only the staging buffers you copy from (a few batches), not whole "
				 "datasets;\nreuse pinned buffers instead of calling .pin_memory() per batch.");
			fired = 1;
		}
	}
	return fired ? APX_RULE_FIRED : APX_RULE_CLEAN;
}
