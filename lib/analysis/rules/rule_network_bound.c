/*
 * rule_network_bound.c - collectives that cross hosts, run at nearly the NICs' line rate and
 * keep the GPU waiting: the network, not NCCL or overlap, sets their time. From the ranks'
 * analysis (ranks.h): the network's collectives (of communicators whose ranks are on several
 * hosts; not send/recv), their busbw by nccl-tests' definitions over their instances, against
 * the NIC peak (R->link "NIC": each host's line rates summed, the least over the hosts, from
 * apx analyze --nic-metrics; without one the rule is not measured). Fires when some function's
 * busbw reaches 70 % of that peak and, on every rank, those functions' collectives run beside
 * no compute kernel for at least 5 % of its steps (ProfilerStep# ranges; none: the whole run).
 * Saving: bf16 instead of float32 halves the bytes, so their network time: per rank 0.5 x the
 * exposed time of the float32 ones, the least over the ranks; other datatypes: 0 (a finding
 * that advises, like unbalanced-memory's). exposed-communication leaves each rank's claim
 * (apx_network_bound_claim) out of what overlap could hide: each ns once. Run by rules.c's
 * table of rules of several ranks.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/ranks.h"

#include "base/banned.h"

#define BUSBW_MIN 0.70		/* busbw at least 70 % of the NIC line rate: network-bound */
#define EXPOSED_MIN 0.05	/* exposed at least 5 % of the steps: worth a finding */
#define COMPRESSED 0.5		/* bf16 for float32: half the bytes, half the network time */

static int nic_peak(const struct apx_ranks *R)
{
	return R->link.kind && !strcmp(R->link.kind, "NIC") && R->link.peak_bps > 0;
}

/* The functions whose network collectives reach BUSBW_MIN of the NICs' peak (a bit each). */
static unsigned bound_funcs(const struct apx_ranks *R)
{
	unsigned mask = 0;

	if (!nic_peak(R))
		return 0;
	for (unsigned f = 0; f < APX_COLL__COUNT && f < 32; f++)
		if (R->coll[f].net_inst_ns &&
		    R->coll[f].net_busbw_bps >= BUSBW_MIN * R->link.peak_bps)
			mask |= 1u << f;
	return mask;
}

/* Rank rk's exposed time of those functions' network collectives (at most their union's), and
 * of it the float32 ones'. */
static void rank_exposed(const struct apx_ranks_rank *rk, unsigned mask, double *ret_exposed,
			 double *ret_fp32)
{
	double e = 0, f32 = 0;

	for (unsigned f = 0; f < APX_COLL__COUNT && f < 32; f++)
		if (mask >> f & 1) {
			e += (double)rk->net_fexposed_ns[f];
			f32 += (double)rk->net_fp32_exposed_ns[f];
		}
	if (e > (double)rk->net_exposed_ns)
		e = (double)rk->net_exposed_ns;
	*ret_exposed = e;
	*ret_fp32 = f32 < e ? f32 : e;
}

/* The evidence: bound functions, and on every rank with network collectives their exposed
 * time at least EXPOSED_MIN of its steps. The bound functions' mask; 0: it does not hold. */
static unsigned evidence(const struct apx_ranks *R)
{
	unsigned mask = R && R->hosts > 1 && R->net_comms ? bound_funcs(R) : 0;
	int any = 0;

	for (size_t i = 0; mask && i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		double e, f32;

		if (!rk->net_calls)
			continue;
		rank_exposed(rk, mask, &e, &f32);
		if (!rk->net_step_ns || e < EXPOSED_MIN * (double)rk->net_step_ns)
			return 0;
		any = 1;
	}
	return any ? mask : 0;
}

double apx_network_bound_claim(const struct apx_ranks *R, const struct apx_ranks_rank *rk)
{
	unsigned mask = evidence(R);
	double e, f32;

	if (!mask || !rk->net_calls)
		return 0;
	rank_exposed(rk, mask, &e, &f32);
	return COMPRESSED * f32;
}

/* The function the finding names: of the bound ones, the most exposed on rank rk. */
static unsigned top_func(const struct apx_ranks_rank *rk, unsigned mask)
{
	unsigned top = APX_COLL__COUNT;

	for (unsigned f = 0; f < APX_COLL__COUNT && f < 32; f++)
		if ((mask >> f & 1) && (top == APX_COLL__COUNT ||
					rk->net_fexposed_ns[f] > rk->net_fexposed_ns[top]))
			top = f;
	return top;
}

static void fix_text(struct apx_finding *f, int fp32)
{
	if (fp32)
		snprintf(f->fix, sizeof(f->fix),
			 "Send the gradients in bf16: half the bytes over the network.\n"
			 "  DDP: from torch.distributed.algorithms.ddp_comm_hooks "
			 "import default_hooks\n"
			 "       model.register_comm_hook(None, default_hooks.bf16_compress_hook)\n"
			 "  FSDP: FSDP(model, mixed_precision=MixedPrecision("
			 "reduce_dtype=torch.bfloat16))\n"
			 "  FSDP2: fully_shard(m, mp_policy=MixedPrecisionPolicy("
			 "reduce_dtype=torch.bfloat16))\n"
			 "Besides (or if the loss needs float32 reductions): overlap more (DDP\n"
			 "bucket_cap_mb, FSDP backward_prefetch=BackwardPrefetch.BACKWARD_PRE), "
			 "send fewer\n"
			 "bytes (shard: FSDP / ZeRO, ZeroRedundancyOptimizer), or use more NICs "
			 "per host\n"
			 "(NCCL_IB_HCA lists the ones NCCL may use).");
	else
		snprintf(f->fix, sizeof(f->fix),
			 "They already move 16-bit (or integer) data: the network is full.\n"
			 "  Overlap more: DDP(model, bucket_cap_mb=..., "
			 "gradient_as_bucket_view=True);\n"
			 "  FSDP(model, backward_prefetch=BackwardPrefetch.BACKWARD_PRE, "
			 "forward_prefetch=True).\n"
			 "  Send fewer bytes: shard gradients and optimizer state (FSDP / ZeRO,\n"
			 "  ZeroRedundancyOptimizer), or accumulate gradients over more "
			 "micro-steps\n"
			 "  (model.no_sync()) so that they cross the network less often.\n"
			 "  More network: more NICs per host (NCCL_IB_HCA lists the ones NCCL "
			 "may use).");
}

APX_RULE_DECL(network_bound)
{
	static const char *const keys[] = { "net_bytes", "exposed_ns", "fp32_exposed_ns",
					    "saving_ns" };
	static const unsigned units[] = { APX_UNIT_BYTES, APX_UNIT_NS, APX_UNIT_NS, APX_UNIT_NS };
	const struct apx_ranks *R = m->ranks;
	const struct apx_ranks_rank *least = NULL;
	double saving = 0, exposed = 0, fp32 = 0, steps, peak;
	unsigned mask, top;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;

	if (!R || !R->participants) {
		snprintf(why, why_len, "no NCCL collective in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	if (R->hosts < 2) {
		snprintf(why, why_len, "the ranks are on one host: no collective crosses the "
			 "network");
		return APX_RULE_NOT_MEASURED;
	}
	if (!R->net_comms) {
		snprintf(why, why_len, "no communicator has ranks on several hosts");
		return APX_RULE_NOT_MEASURED;
	}
	if (!nic_peak(R)) {
		snprintf(why, why_len, "no NIC line rate: %s", R->link.why);
		return APX_RULE_NOT_MEASURED;
	}
	mask = evidence(R);
	if (!mask)
		return APX_RULE_CLEAN;
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		double e, f32;

		if (!rk->net_calls)
			continue;
		rank_exposed(rk, mask, &e, &f32);
		if (!least || COMPRESSED * f32 < saving ||
		    (COMPRESSED * f32 == saving && e < exposed)) {
			least = rk;
			saving = COMPRESSED * f32;
			exposed = e;
			fp32 = f32;
		}
	}
	if (!least)
		return APX_RULE_CLEAN;
	top = top_func(least, mask);
	peak = R->link.peak_bps;
	steps = least->steps ? (double)least->steps : 1;
	f = apx_finding_add(out, m, "network-bound",
			    saving > 0.1 * (double)m->collected_ns ? APX_SEV_CRITICAL
			    : saving > 0.02 * (double)m->collected_ns ? APX_SEV_WARNING
								     : APX_SEV_INFO,
			    saving, 50);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%s limited by the network: %.1f GB/s of %.1f GB/s "
		 "NIC line rate, %s a step exposed on rank %d", apx_coll_func_name(top),
		 R->coll[top].net_busbw_bps / 1e9, peak / 1e9,
		 apx_fmt_ns(b1, sizeof(b1), exposed / steps), least->rank);
	snprintf(f->model, sizeof(f->model),
		 "per rank: %.1f x the exposed time of the float32 collectives among those at >= "
		 "%.0f%% of the NIC line rate (bf16 halves their bytes); the least over the ranks; "
		 "0 for other datatypes", COMPRESSED, 100 * BUSBW_MIN);
	apx_text_append(f->evidence, sizeof(f->evidence), "NIC line rate %.1f GB/s a direction, "
			"what busbw (nccl-tests' definition) compares with: %s\n", peak / 1e9,
			R->link.why);
	for (unsigned k = 0; k < APX_COLL__COUNT && k < 32; k++) {
		const struct apx_ranks_coll *c = &R->coll[k];

		if (!(mask >> k & 1))
			continue;
		apx_text_append(f->evidence, sizeof(f->evidence),
				"%s across hosts: %llu calls (all ranks), %s, %.0f%% of it "
				"float32; busbw %.1f GB/s = %.0f%% of %.1f GB/s\n",
				apx_coll_func_name(k), (unsigned long long)c->net_calls,
				apx_fmt_size(b1, sizeof(b1), (double)c->net_bytes),
				c->net_bytes ? 100.0 * (double)c->net_fp32_bytes /
					       (double)c->net_bytes : 0, c->net_busbw_bps / 1e9,
				100.0 * c->net_busbw_bps / peak, peak / 1e9);
	}
	apx_text_append(f->evidence, sizeof(f->evidence),
			"rank %d (the least to gain of %u ranks): %s a step over the network, %s a "
			"step exposed (%.0f%% of its steps' time; %s of it float32), over %llu "
			"steps\n", least->rank, R->participants,
			apx_fmt_size(b1, sizeof(b1), (double)least->net_bytes / steps),
			apx_fmt_ns(b2, sizeof(b2), exposed / steps),
			100.0 * exposed / (double)least->net_step_ns,
			apx_fmt_ns(b3, sizeof(b3), fp32 / steps), (unsigned long long)steps);
	if (saving > 0)
		apx_text_append(f->evidence, sizeof(f->evidence), "exposed-communication leaves "
				"this time out of what overlap could hide (each ns once)\n");
	else
		apx_text_append(f->evidence, sizeof(f->evidence), "no float32 among them: "
				"compression would not halve them (no saving estimated)\n");
	apx_finding_metric(f, "rank", least->rank, APX_UNIT_ID);
	apx_finding_metric(f, "busbw_bps", R->coll[top].net_busbw_bps, APX_UNIT_BYTES_PER_S);
	apx_finding_metric(f, "peak_bps", peak, APX_UNIT_BYTES_PER_S);
	apx_finding_metric(f, "busbw_peak_pct", 100.0 * R->coll[top].net_busbw_bps / peak,
			   APX_UNIT_PCT);
	apx_finding_metric(f, "exposed_ns", exposed, APX_UNIT_NS);
	apx_finding_metric(f, "fp32_exposed_ns", fp32, APX_UNIT_NS);
	apx_finding_metric(f, "step_ns", (double)least->net_step_ns, APX_UNIT_NS);
	apx_finding_metric(f, "ranks", R->participants, APX_UNIT_COUNT);
	apx_finding_metric(f, "hosts", R->hosts, APX_UNIT_COUNT);
	apx_evidence_cols(f, "rank", 4, keys, units);
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		double *v = apx_ranks_evidence_row(f, rk), e, f32;

		if (!v)
			continue;
		rank_exposed(rk, mask, &e, &f32);
		v[0] = (double)rk->net_bytes;
		v[1] = e;
		v[2] = f32;
		v[3] = COMPRESSED * f32;
	}
	fix_text(f, fp32 > 0);
	return APX_RULE_FIRED;
}
