/*
 * measure.c - measurements several rules share: the host<->device link's peak bandwidth and
 * the bandwidth pinned copies achieved in the same trace (the "what pinned would give" of the
 * pageable-copy rule), and GPU time as a share of the run. Called by rules and the report's
 * outputs; pure functions of the model.
 */
#include "analysis/findings.h"

#include "base/banned.h"

double apx_link_peak_bps(const struct apx_model *m, uint32_t device)
{
	/* per-lane PCIe data rate after encoding, GB/s: gen1..gen6 */
	static const double lane[] = { 0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563 };
	const struct apx_an_device *d = apx_model_device(m, device);
	unsigned gen, width;

	if (!d)
		return 0;
	gen = d->pcie_gen;
	width = d->pcie_width;
	if (!gen || !width) {	/* not recorded: the generation every GPU of this architecture has */
		gen = d->cc_major >= 9 ? 5 : d->cc_major == 8 ? 4 : d->cc_major ? 3 : 0;
		width = 16;
	}
	if (!gen || gen >= sizeof(lane) / sizeof(lane[0]))
		return 0;
	return lane[gen] * width * 1e9;
}

double apx_pinned_rate_bps(const struct apx_model *m, unsigned copy_kind)
{
	const struct apx_an_xfer *x = &m->xfer[copy_kind][APX_MEM_PINNED];

	/* copies under 1 MB are dominated by latency: too small to measure bandwidth */
	if (x->bytes < (1u << 20) || !x->dur_ns || x->max_bytes < (256u << 10))
		return 0;
	return (double)x->bytes / ((double)x->dur_ns / 1e9);
}

double apx_gpu_time_pct(const struct apx_model *m, uint64_t ns)
{
	double cap = (double)m->wall_ns * (double)(m->timelines.n > 1 ? m->timelines.n : 1);
	double p = cap > 0 ? 100.0 * (double)ns / cap : 0;

	return p > 100 ? 100 : p;
}
