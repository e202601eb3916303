/*
 * rule_straggler.c - one rank arrives last at the collectives again and again, and every other
 * rank's collective kernel waits for it. From the ranks' analysis (ranks.h): a
 * rank last at more than half of at least 3 collectives found on all ranks of their
 * communicator, on average more than 50 us after the median rank (arrival: its GPU start of
 * the collective, else its enqueue, on the wall clock). Saving: over the collectives it was
 * last at, its arrival after the next-latest rank's: what the run waited for it alone (an
 * upper bound when its extra work has to move to other ranks); the others' summed waiting is
 * the evidence. What it did instead: its host late (its enqueue after the median rank's:
 * Python, input, its own syncs) or its GPU busy with its own kernels (its compute time
 * against the other ranks' median), and its host-to-device copies. Run by rules.c's table of
 * rules of several ranks.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ranks.h"

#include "base/banned.h"

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over the ranks with collectives but rank `skip` of field(rank); 0 when none. */
static double others_median(const struct apx_ranks *R, size_t skip, int copies)
{
	double v[APX_AN_MAX_FILES];
	size_t n = 0;

	for (size_t i = 0; i < R->nranks && n < APX_AN_MAX_FILES; i++)
		if (i != skip && R->rank[i].colls)
			v[n++] = (double)(copies ? R->rank[i].h2d_ns : R->rank[i].compute_ns);
	if (!n)
		return 0;
	qsort(v, n, sizeof(v[0]), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

APX_RULE_DECL(straggler)
{
	static const char *const keys[] = { "arrived_last", "late_mean_ns", "compute_ns",
					    "wait_ns" };
	static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_NS, APX_UNIT_NS, APX_UNIT_NS };
	const struct apx_ranks *R = m->ranks;
	const struct apx_ranks_straggler *sg;
	const struct apx_ranks_rank *rk;
	double compute_med, h2d_med, host_mean, late_mean, saving;
	int host;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;

	if (!R || !R->participants) {
		snprintf(why, why_len, "no NCCL collective in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	if (R->participants < 2) {
		snprintf(why, why_len, "the collectives of one rank only: no other to compare");
		return APX_RULE_NOT_MEASURED;
	}
	sg = &R->straggler;
	if (sg->index < 0)
		return APX_RULE_CLEAN;
	rk = &R->rank[sg->index];
	saving = (double)rk->last_gap_ns;
	if (saving <= 0)
		return APX_RULE_CLEAN;
	compute_med = others_median(R, (size_t)sg->index, 0);
	h2d_med = others_median(R, (size_t)sg->index, 1);
	late_mean = rk->last ? (double)rk->last_late_ns / (double)rk->last : 0;
	host_mean = rk->last ? (double)rk->last_host_ns / (double)rk->last : 0;
	host = 2 * rk->last_host_ns >= rk->last_late_ns;	/* its host, not its GPU, was late */
	f = apx_finding_add(out, m, "straggler",
			    saving > 0.1 * (double)m->collected_ns ? APX_SEV_CRITICAL
								  : APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "rank %d arrives last at %llu of %llu collectives, %s "
		 "after the median rank: the others wait for %s",
		 rk->rank, (unsigned long long)sg->last, (unsigned long long)sg->matched,
		 apx_fmt_ns(b1, sizeof(b1), (double)sg->mean_late_ns), host ? "its host" : "its GPU");
	snprintf(f->model, sizeof(f->model),
		 "arriving with the next-latest rank, each collective it was last at starts that "
		 "much earlier: saving = sum of its arrival after the next-latest rank's (an upper "
		 "bound if its extra work must move to other ranks)");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"arrival: each rank's GPU start of the collective (else its enqueue), on the "
			"wall clock; of %llu collectives found on all %u ranks, rank %d was last at "
			"%llu, on average %s after the median rank\n",
			(unsigned long long)sg->matched, R->participants, rk->rank,
			(unsigned long long)sg->last, apx_fmt_ns(b1, sizeof(b1), late_mean));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"the other ranks waited %s for it in all; the run, %s (its arrival after the "
			"next-latest rank's)\n", apx_fmt_ns(b1, sizeof(b1), (double)rk->last_wait_ns),
			apx_fmt_ns(b2, sizeof(b2), saving));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"instead: its host enqueued them %s after the median rank's on average (%s); "
			"its own kernels took %s of GPU time against %s (the other ranks' median)\n",
			apx_fmt_ns(b1, sizeof(b1), host_mean),
			host ? "most of its lateness: host work" : "the rest: its GPU still busy",
			apx_fmt_ns(b2, sizeof(b2), (double)rk->compute_ns),
			apx_fmt_ns(b3, sizeof(b3), compute_med));
	if (rk->h2d_ns || h2d_med > 0)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"host-to-device copies (input): %s against %s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)rk->h2d_ns),
				apx_fmt_ns(b2, sizeof(b2), h2d_med));
	apx_finding_metric(f, "rank", rk->rank, APX_UNIT_ID);
	apx_finding_metric(f, "arrived_last", (double)sg->last, APX_UNIT_COUNT);
	apx_finding_metric(f, "matched", (double)sg->matched, APX_UNIT_COUNT);
	apx_finding_metric(f, "late_mean_ns", (double)sg->mean_late_ns, APX_UNIT_NS);
	apx_finding_metric(f, "others_wait_ns", (double)rk->last_wait_ns, APX_UNIT_NS);
	apx_finding_metric(f, "host_late_mean_ns", host_mean, APX_UNIT_NS);
	apx_finding_metric(f, "compute_ns", (double)rk->compute_ns, APX_UNIT_NS);
	apx_finding_metric(f, "others_compute_ns", compute_med, APX_UNIT_NS);
	apx_finding_metric(f, "h2d_ns", (double)rk->h2d_ns, APX_UNIT_NS);
	apx_finding_metric(f, "others_h2d_ns", h2d_med, APX_UNIT_NS);
	apx_evidence_cols(f, "rank", 4, keys, units);
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *o = &R->rank[i];
		double *v = apx_ranks_evidence_row(f, o);

		if (!v)
			continue;
		v[0] = (double)o->last;
		v[1] = o->matched ? (double)o->late_sum_ns / (double)o->matched : 0;
		v[2] = (double)o->compute_ns;
		v[3] = (double)o->wait_ns;
	}
	if (host)
		snprintf(f->fix, sizeof(f->fix),
			 "Rank %d's host is late to the collectives. Look at what it does that the "
			 "others do not:\n"
			 "  logging, evaluation or checkpoints on one rank: move them off the step (a\n"
			 "  thread, or every N steps on all ranks);\n"
			 "  its input: DataLoader(num_workers=..., pin_memory=True, persistent_workers=True);\n"
			 "  host syncs (.item(), .cpu(), print(tensor)) only it makes.\n"
			 "apx report --single on its own trace (its rank and pid in the name) shows "
			 "where its host time goes.", rk->rank);
	else
		snprintf(f->fix, sizeof(f->fix),
			 "Rank %d's GPU is still busy with its own work when the others arrive. "
			 "Balance it:\n"
			 "  uneven batches (variable sequence lengths): bucket or pad by length, and\n"
			 "  DistributedSampler(drop_last=True) so every rank gets as many samples;\n"
			 "  uneven model parts (pipeline stages, MoE experts): move layers or capacity;\n"
			 "  a slower GPU: check its clocks, power cap and temperature\n"
			 "  (nvidia-smi -q -d PERFORMANCE,CLOCK).",
			 rk->rank);
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
