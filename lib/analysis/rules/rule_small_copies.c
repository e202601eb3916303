/*
 * rule_small_copies.c - many small host<->device copies (<= 64 KiB) in the steady state: each
 * pays a fixed call and DMA set-up cost. Saving: their time minus their bytes at the rate large
 * pinned copies reached (or the link's peak: one batched copy from pinned memory) minus one copy
 * latency per step of the steady state (the cost of one batched copy), plus the GPU idle time
 * attributed to their per-call overhead (idle_attrib.c: the host inside their calls, between two
 * of them, or in the sync each blocking .cuda() makes), which one batched copy does not pay.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/idle_attrib.h"

#include "analysis/stacks.h"

#include "base/banned.h"

/* The copies this rule counts (the lines of the finding). */
static int small_steady(const struct apx_model *m, size_t i)
{
	const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

	return (c->kind == APX_COPY_H2D || c->kind == APX_COPY_D2H) && apx_copy_small(c->bytes) &&
	       apx_phase_of(m, c->start) == APX_PHASE_STEADY;
}

APX_RULE_DECL(small_copies)
{
	uint64_t n = 0, bytes = 0, dur = 0, batches, steps;
	uint64_t calls = m->gpu.idle_by_cause[APX_IDLE_COPY_CALLS];
	double rate, saving, latency;
	char b1[32], b2[32];
	struct apx_finding *f;

	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if ((c->kind == APX_COPY_H2D || c->kind == APX_COPY_D2H) &&
		    apx_copy_small(c->bytes) && apx_phase_of(m, c->start) == APX_PHASE_STEADY) {
			n++;
			bytes += c->bytes;
			dur += c->dur;
		}
	}
	if (n < 1000)
		return APX_RULE_CLEAN;
	rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);	/* one batched pinned copy */
	latency = (double)dur / (double)n;
	steps = m->steady.count ? m->steady.count : m->steps;
	batches = steps ? steps : (n + 99) / 100;
	saving = (double)dur - (double)bytes / rate * 1e9 - latency * (double)batches;
	if (saving < 0)
		saving = 0;
	saving += (double)calls;
	if (saving <= 0 || (m->steady_ns && saving < 0.01 * (double)m->steady_ns))
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "small-copies", APX_SEV_WARNING, saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%llu small copies (<= 64 kB) took %s",
		 (unsigned long long)n, apx_fmt_ns(b1, sizeof(b1), (double)dur));
	snprintf(f->model, sizeof(f->model),
		 "batched into %llu copies (one per %s): saving = their time - bytes at %.1f GB/s - "
		 "one copy latency per batch + GPU idle on their calls", (unsigned long long)batches,
		 steps ? "step" : "100 copies", rate / 1e9);
	apx_text_append(f->evidence, sizeof(f->evidence), "small copies: %llu, %s, mean %s each\n",
			(unsigned long long)n, apx_fmt_size(b1, sizeof(b1), (double)bytes),
			apx_fmt_ns(b2, sizeof(b2), latency));
	if (calls)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"GPU idle on their per-call overhead: %s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)calls));
	apx_finding_metric(f, "copies", (double)n, APX_UNIT_COUNT);
	apx_finding_metric(f, "bytes", (double)bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "copy_ns", (double)dur, APX_UNIT_NS);
	apx_finding_metric(f, "copy_mean_ns", latency, APX_UNIT_NS);
	apx_finding_metric(f, "batches", (double)batches, APX_UNIT_COUNT);
	apx_finding_metric(f, "rate_bytes_per_s", rate, APX_UNIT_BYTES_PER_S);
	snprintf(f->fix, sizeof(f->fix),
		 "Batch small tensors into one copy:\n"
		 "  flat = torch.cat([t.flatten() for t in small]).pin_memory()\n"
		 "  flat_gpu = flat.to('cuda', non_blocking=True); parts = flat_gpu.split(sizes)\n"
		 "or build them on the GPU directly (torch.tensor(..., device='cuda')).");
	(void)why;
	(void)why_len;
	apx_lines_of_copies(m, f, small_steady);
	return APX_RULE_FIRED;
}
