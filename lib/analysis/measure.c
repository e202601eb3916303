/*
 * measure.c - measurements several rules share: the host<->device link's peak bandwidth and
 * the bandwidth pinned copies achieved in the same trace (the "what pinned would give" of the
 * pageable-copy rule), and GPU time as a share of the run; kernel-name matching and the
 * process tree (DataLoader workers) for the rules. Called by rules and the report's outputs;
 * pure functions of the model.
 */
#include "analysis/findings.h"

#include <string.h>

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
	if (x->bytes < APX_PINNED_RATE_MIN_BYTES || !x->dur_ns ||
	    x->max_bytes < APX_PINNED_RATE_MIN_COPY)
		return 0;
	return (double)x->bytes / ((double)x->dur_ns / 1e9);
}

double apx_pinned_or_link_bps(const struct apx_model *m, unsigned copy_kind, int *ret_peak)
{
	double rate = apx_pinned_rate_bps(m, copy_kind);
	int peak = 0;

	if (!rate) {
		const struct apx_an_copy *c = m->copies.n ? APX_VEC_AT(&m->copies,
								       struct apx_an_copy, 0) : NULL;

		peak = 1;
		if (c)
			rate = apx_link_peak_bps(m, c->device);
		if (!rate)
			rate = APX_LINK_FLOOR_BPS;
	}
	if (ret_peak)
		*ret_peak = peak;
	return rate;
}

double apx_gpu_time_pct(const struct apx_model *m, uint64_t ns)
{
	double cap = (double)m->collected_ns * (double)(m->timelines.n > 1 ? m->timelines.n : 1);
	double p = cap > 0 ? 100.0 * (double)ns / cap : 0;

	return p > 100 ? 100 : p;
}

int apx_text_has(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);

	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(s + i, needle, k))
			return 1;
	return 0;
}

int apx_name_has(const struct apx_an_name *nm, const char *needle)
{
	return nm->text && apx_text_has(nm->text, nm->len, needle);
}

/* The process with the most GPU kernels (the training loop's), or -1 when no file has any. */
static long main_file(const struct apx_model *m)
{
	long best = -1;

	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].kernels && (best < 0 || m->files[i].kernels > m->files[best].kernels))
			best = (long)i;
	return best;
}

long apx_child_processes(const struct apx_model *m)
{
	long fi = main_file(m), n = 0;
	uint64_t pid;

	if (fi < 0)
		return -1;
	pid = m->files[fi].pid;
	for (size_t i = 0; i < m->nfiles; i++)	/* children that used CUDA wrote their own file */
		n += i != (size_t)fi && pid && m->files[i].ppid == pid;
	for (size_t i = 0; i < m->procs.n; i++) {
		const struct apx_an_proc *p = APX_VEC_AT(&m->procs, struct apx_an_proc, i);
		int own_file = 0;

		if (p->ppid != pid || p->pid == pid)
			continue;
		for (size_t j = 0; j < m->nfiles && !own_file; j++)
			own_file = m->files[j].pid == p->pid;
		n += !own_file;
	}
	return n || m->files[fi].has_proc_tree ? n : -1;
}

double apx_launch_host_ns(const struct apx_model *m)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_LAUNCH];
	uint64_t gaps = m->gpu.gaps_by_cause[APX_IDLE_LAUNCH];

	if (m->gpu.step_host_launch) {	/* the long in-step gaps are in there too: left out */
		idle -= m->gpu.step_host_ns < idle ? m->gpu.step_host_ns : idle;
		gaps -= m->gpu.step_host_gaps < gaps ? m->gpu.step_host_gaps : gaps;
	}
	if (!m->launch_bound || !gaps)
		return 0;
	return (double)idle / (double)gaps;
}
