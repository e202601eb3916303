/*
 * rule_small_collectives.c - many collectives under 64 KiB, each paying NCCL's fixed latency
 * (launch, channel set-up, the handshake between ranks) for a few bytes. From the
 * ranks' analysis (ranks.h): each function's time-vs-size fit over the trace's own instances
 * (t = latency + bytes x ns_per_byte; shortest instance of each size, so that waits for late
 * ranks do not count) tells which calls are latency-bound (their bytes' part under the
 * latency). Consecutive such calls of one communicator and function within a step could be
 * one call: fusing n of them costs one latency and the same bytes, saving (n - 1) x latency,
 * at most the group's exposed time (a call that compute overlaps costs the step nothing).
 * Saving: the least over the ranks of their groups' sum (every rank must fuse for the step
 * to end earlier). Fires with 16 or more such calls on every rank. Run by rules.c's table of
 * rules of several ranks.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/ranks.h"

#include "base/banned.h"

#define MANY 16

APX_RULE_DECL(small_collectives)
{
	static const char *const keys[] = { "small_calls", "groups", "exposed_ns", "saving_ns" };
	static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_COUNT, APX_UNIT_NS,
					  APX_UNIT_NS };
	const struct apx_ranks *R = m->ranks;
	const struct apx_ranks_rank *least = NULL;
	const struct apx_ranks_coll *top = NULL;
	uint64_t fewest = UINT64_MAX;
	double saving = 0;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;

	if (!R || !R->participants) {
		snprintf(why, why_len, "no NCCL collective in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];

		if (!rk->colls)
			continue;
		if (rk->small_calls < fewest)
			fewest = rk->small_calls;
		if (!least || rk->small_saving_ns < saving) {
			least = rk;
			saving = rk->small_saving_ns;
		}
	}
	if (fewest < MANY && R->small_nofit >= MANY) {
		snprintf(why, why_len, "%llu collectives under 64 KiB of functions whose sizes in the "
			 "trace do not span a factor of 2: their latency is not known",
			 (unsigned long long)R->small_nofit);
		return APX_RULE_NOT_MEASURED;
	}
	if (!least || fewest < MANY || saving <= 0)
		return APX_RULE_CLEAN;
	for (unsigned k = 0; k < APX_COLL__COUNT; k++)	/* the function with the most small calls */
		if (R->coll[k].fit && (R->coll[k].size_hist[0] + R->coll[k].size_hist[1]) &&
		    (!top || R->coll[k].size_hist[0] + R->coll[k].size_hist[1] >
			     top->size_hist[0] + top->size_hist[1]))
			top = &R->coll[k];
	f = apx_finding_add(out, m, "small-collectives",
			    saving > 0.1 * (double)m->collected_ns ? APX_SEV_CRITICAL
								  : APX_SEV_WARNING, saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%llu latency-bound collectives under 64 KiB on rank "
		 "%d: fused, %llu calls fewer would save %s",
		 (unsigned long long)least->small_calls, least->rank,
		 (unsigned long long)(least->small_calls - least->small_groups),
		 apx_fmt_ns(b1, sizeof(b1), saving));
	snprintf(f->model, sizeof(f->model),
		 "per group of consecutive small calls of one communicator and function in a step: "
		 "(n - 1) x the function's latency from the trace's time-vs-size fit, at most the "
		 "group's exposed time; the least over the ranks");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"rank %d (the least to gain of %u ranks): %llu small latency-bound calls in "
			"%llu groups, %s of them exposed (no compute beside them)\n", least->rank,
			R->participants, (unsigned long long)least->small_calls,
			(unsigned long long)least->small_groups,
			apx_fmt_ns(b1, sizeof(b1), (double)least->small_exposed_ns));
	for (unsigned k = 0; k < APX_COLL__COUNT; k++) {
		const struct apx_ranks_coll *c = &R->coll[k];

		if (!c->fit || !(c->size_hist[0] + c->size_hist[1]))
			continue;
		apx_text_append(f->evidence, sizeof(f->evidence),
				"%s: %llu calls under 64 KiB (all ranks); fit over %u sizes: t = %s + "
				"bytes / %s\n", apx_coll_func_name(k),
				(unsigned long long)(c->size_hist[0] + c->size_hist[1]), c->fit_sizes,
				apx_fmt_ns(b2, sizeof(b2), c->latency_ns),
				c->ns_per_byte > 0 ? apx_fmt_rate(b3, sizeof(b3), 1, c->ns_per_byte)
						   : "(no growth with size)");
	}
	apx_finding_metric(f, "rank", least->rank, APX_UNIT_ID);
	apx_finding_metric(f, "small_calls", (double)least->small_calls, APX_UNIT_COUNT);
	apx_finding_metric(f, "groups", (double)least->small_groups, APX_UNIT_COUNT);
	apx_finding_metric(f, "exposed_ns", (double)least->small_exposed_ns, APX_UNIT_NS);
	if (top) {
		apx_finding_metric(f, "latency_ns", top->latency_ns, APX_UNIT_NS);
		apx_finding_metric(f, "ns_per_byte", top->ns_per_byte, APX_UNIT_RATIO);
	}
	apx_finding_metric(f, "ranks", R->participants, APX_UNIT_COUNT);
	apx_evidence_cols(f, "rank", 4, keys, units);
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		double *v = apx_ranks_evidence_row(f, rk);

		if (!v)
			continue;
		v[0] = (double)rk->small_calls;
		v[1] = (double)rk->small_groups;
		v[2] = (double)rk->small_exposed_ns;
		v[3] = rk->small_saving_ns;
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Send them as one call:\n"
		 "  flat = torch.cat([t.flatten() for t in tensors]); dist.all_reduce(flat)\n"
		 "  for t, v in zip(tensors, flat.split([t.numel() for t in tensors])):\n"
		 "      t.copy_(v.view_as(t))\n"
		 "Metrics: torch.stack([loss, acc, ...]) and one all_reduce a step, or every N steps.\n"
		 "Gradients: let DDP or FSDP bucket them (bucket_cap_mb) instead of one all_reduce "
		 "per parameter.");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
