/*
 * rule_exposed_communication.c - collectives whose GPU time no compute kernel overlaps: the
 * GPU waits for the network or NVLink instead of working. From the ranks' analysis
 * (ranks.h), a step at a time on each rank (ProfilerStep# ranges; none: the whole run): the
 * step's last collective stays exposed (its data, the last gradients, is ready only then; one
 * larger than a DDP bucket keeps one bucket's time: from the trace's time-vs-size fit, else in
 * proportion to its bytes, which leaves out one call's latency, tens of us), and
 * what overlap could hide of the rest is at most the compute before it that runs beside no
 * communication. Saving: per rank the sum over its steps of min(exposed - what stays, that
 * compute), less what small-collectives and network-bound (bf16 for float32 collectives
 * across hosts) save on that rank (each ns once); for the run the
 * least over the ranks: a step ends when its slowest rank's does, and the other ranks' extra
 * exposed time is waiting for later ranks (straggler's). An upper bound: DDP overlaps
 * gradients only with the backward pass. Run by rules.c's table of rules of several ranks.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/ranks.h"

#include "base/banned.h"

/* What overlap could hide on rank rk (ranks.h), less small-collectives' and network-bound's
 * claims. */
static double hideable(const struct apx_ranks *R, const struct apx_ranks_rank *rk)
{
	double rest = (double)rk->exposed_ns - (double)rk->tail_ns - rk->small_saving_ns -
		      apx_network_bound_claim(R, rk);
	double h = (double)rk->hideable_ns;

	if (rest < h)
		h = rest;
	return h > 0 ? h : 0;
}

APX_RULE_DECL(exposed_communication)
{
	static const char *const keys[] = { "comm_ns", "exposed_ns", "stays_ns", "hideable_ns" };
	static const unsigned units[] = { APX_UNIT_NS, APX_UNIT_NS, APX_UNIT_NS, APX_UNIT_NS };
	const struct apx_ranks *R = m->ranks;
	const struct apx_ranks_rank *least = NULL;
	double saving = 0, span_pct;
	uint64_t exposed_max = 0;
	char b1[32], b2[32], b3[32], b4[32];
	struct apx_finding *f;

	if (!R || !R->participants) {
		snprintf(why, why_len, "no NCCL collective in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];

		if (!rk->colls)
			continue;
		if (rk->exposed_ns > exposed_max)
			exposed_max = rk->exposed_ns;
		if (!least || hideable(R, rk) < saving) {
			least = rk;
			saving = hideable(R, rk);
		}
	}
	if (!least || saving <= 0)
		return APX_RULE_CLEAN;
	span_pct = least->end_ns > least->first_ns
		   ? 100.0 * (double)least->exposed_ns / (double)(least->end_ns - least->first_ns) : 0;
	f = apx_finding_add(out, m, "exposed-communication",
			    saving > 0.1 * (double)m->collected_ns ? APX_SEV_CRITICAL
			    : saving > 0.02 * (double)m->collected_ns ? APX_SEV_WARNING : APX_SEV_INFO,
			    saving, 40);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "communication no compute overlaps: %s on rank %d "
		 "(%.0f%% of its GPU span), %s of it could run beside compute",
		 apx_fmt_ns(b1, sizeof(b1), (double)least->exposed_ns), least->rank, span_pct,
		 apx_fmt_ns(b2, sizeof(b2), saving));
	snprintf(f->model, sizeof(f->model),
		 "per step and rank: min(exposed communication less the step's last collective's, "
		 "the compute before that one beside no communication), less small-collectives'; "
		 "the least over the ranks (an upper bound)");
	if (apx_network_bound_claim(R, least) > 0)
		apx_text_append(f->model, sizeof(f->model), "; less network-bound's (bf16)");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"rank %d (the least to gain of %u ranks with collectives): communication %s, "
			"exposed %s; the steps' last collectives keep %s exposed (their data is ready "
			"only then)\n", least->rank, R->participants,
			apx_fmt_ns(b1, sizeof(b1), (double)least->comm_ns),
			apx_fmt_ns(b2, sizeof(b2), (double)least->exposed_ns),
			apx_fmt_ns(b3, sizeof(b3), (double)least->tail_ns));
	if (least->steps)
		apx_text_append(f->evidence, sizeof(f->evidence), "compute before them beside no "
				"communication: %s, over %llu steps (ProfilerStep#, median %s)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)least->free_compute_ns),
				(unsigned long long)least->steps,
				apx_fmt_ns(b4, sizeof(b4), (double)least->step_ns));
	else
		apx_text_append(f->evidence, sizeof(f->evidence), "compute before them beside no "
				"communication: %s (no ProfilerStep# ranges: the whole run is one "
				"step)\n", apx_fmt_ns(b1, sizeof(b1), (double)least->free_compute_ns));
	if (exposed_max > least->exposed_ns)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"other ranks expose up to %s: the difference is waiting for later "
				"ranks (see straggler)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)exposed_max));
	apx_finding_metric(f, "rank", least->rank, APX_UNIT_ID);
	apx_finding_metric(f, "comm_ns", (double)least->comm_ns, APX_UNIT_NS);
	apx_finding_metric(f, "exposed_ns", (double)least->exposed_ns, APX_UNIT_NS);
	apx_finding_metric(f, "stays_ns", (double)least->tail_ns, APX_UNIT_NS);
	apx_finding_metric(f, "free_compute_ns", (double)least->free_compute_ns, APX_UNIT_NS);
	apx_finding_metric(f, "hideable_ns", saving, APX_UNIT_NS);
	apx_finding_metric(f, "exposed_pct", span_pct, APX_UNIT_PCT);
	apx_finding_metric(f, "ranks", R->participants, APX_UNIT_COUNT);
	apx_evidence_cols(f, "rank", 4, keys, units);
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		double *v = apx_ranks_evidence_row(f, rk);

		if (!v)
			continue;
		v[0] = (double)rk->comm_ns;
		v[1] = (double)rk->exposed_ns;
		v[2] = (double)rk->tail_ns;
		v[3] = hideable(R, rk);
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Let communication run while the GPU computes:\n"
		 "  DDP: DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True,\n"
		 "           static_graph=True): smaller buckets start their all-reduces earlier\n"
		 "  in backward (try 10 to 50, keep the fastest); with gradient accumulation,\n"
		 "  `with model.no_sync():` on every micro-step but the last.\n"
		 "  FSDP: FSDP(model, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,\n"
		 "             forward_prefetch=True); FSDP2: fully_shard(...), then\n"
		 "  module.set_modules_to_forward_prefetch([...]).\n"
		 "  Your own collectives: work = dist.all_reduce(t, async_op=True), and\n"
		 "  work.wait() just before t is needed.");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
