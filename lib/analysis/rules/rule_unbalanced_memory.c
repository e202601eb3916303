/*
 * rule_unbalanced_memory.c - one rank holds much more device memory than the others (issue
 * 33, item 4): the job's batch size and model size are bounded by its fullest GPU, so the
 * others' free memory is wasted (rank 0 gathering metrics, predictions or a checkpoint on its
 * GPU; an uneven pipeline split; one rank caching an evaluation set). From the ranks'
 * analysis (ranks.h): each rank's device-memory peak (its allocations less its frees). Fires
 * when at least two ranks have one and the largest exceeds the other ranks' median by
 * MIN_EXCESS and by MIN_RATIO. A memory cost, not a speed-up (saving 0, like
 * redundant-replication): the excess is the evidence, and the share of its GPU it takes.
 * Run by rules.c's table of rules of several ranks.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>

#include "analysis/ranks.h"

#include "base/banned.h"

#define MIN_EXCESS (1ull << 30)		/* 1 GiB more than the median rank */
#define MIN_RATIO 1.2

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

APX_RULE_DECL(unbalanced_memory)
{
	static const char *const keys[] = { "peak_bytes", "total_bytes" };
	static const unsigned units[] = { APX_UNIT_BYTES, APX_UNIT_BYTES };
	const struct apx_ranks *R = m->ranks;
	uint64_t v[APX_AN_MAX_FILES], median;
	size_t n = 0, top = 0;
	const struct apx_ranks_rank *rk;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;

	if (!R) {
		snprintf(why, why_len, "no NCCL collective in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	for (size_t i = 0; i < R->nranks; i++) {
		if (!R->rank[i].mem_peak_bytes || n == APX_AN_MAX_FILES)
			continue;
		v[n++] = R->rank[i].mem_peak_bytes;
		if (R->rank[i].mem_peak_bytes > R->rank[top].mem_peak_bytes)
			top = i;
	}
	if (n < 2) {
		snprintf(why, why_len, "%zu rank%s with device-memory records (2 needed)", n,
			 n == 1 ? "" : "s");
		return APX_RULE_NOT_MEASURED;
	}
	rk = &R->rank[top];
	qsort(v, n, sizeof(v[0]), u64_cmp);
	/* the others' median: the largest is v[n - 1], left out */
	median = (n - 1) % 2 ? v[(n - 1) / 2] : (v[(n - 1) / 2 - 1] + v[(n - 1) / 2]) / 2;
	if (rk->mem_peak_bytes < median + MIN_EXCESS ||
	    (double)rk->mem_peak_bytes < MIN_RATIO * (double)median)
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "unbalanced-memory",
			    rk->mem_total_bytes && rk->mem_peak_bytes * 10 >= rk->mem_total_bytes * 9
				    ? APX_SEV_WARNING : APX_SEV_INFO, 0, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "rank %d holds %s more device memory than the other "
		 "ranks' median (%s against %s)", rk->rank,
		 apx_fmt_size(b1, sizeof(b1), (double)(rk->mem_peak_bytes - median)),
		 apx_fmt_size(b2, sizeof(b2), (double)rk->mem_peak_bytes),
		 apx_fmt_size(b3, sizeof(b3), (double)median));
	snprintf(f->model, sizeof(f->model), "a memory cost, not a speed-up: the job's batch and "
		 "model sizes are bounded by its fullest GPU");
	if (rk->mem_total_bytes)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"rank %d's peak is %.0f%% of its GPU's %s\n", rk->rank,
				100.0 * (double)rk->mem_peak_bytes / (double)rk->mem_total_bytes,
				apx_fmt_size(b1, sizeof(b1), (double)rk->mem_total_bytes));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"device-memory peaks of %zu ranks: %s to %s\n", n,
			apx_fmt_size(b1, sizeof(b1), (double)v[0]),
			apx_fmt_size(b2, sizeof(b2), (double)v[n - 1]));
	apx_finding_metric(f, "excess_bytes", (double)(rk->mem_peak_bytes - median),
			   APX_UNIT_BYTES);
	apx_finding_metric(f, "median_peak_bytes", (double)median, APX_UNIT_BYTES);
	apx_evidence_cols(f, "rank", 2, keys, units);
	for (size_t i = 0; i < R->nranks; i++) {
		char label[16];
		int len;
		double *row;

		if (!R->rank[i].mem_peak_bytes)
			continue;
		len = snprintf(label, sizeof(label), "%d", R->rank[i].rank);
		if (!(row = apx_evidence_row(f, label, (size_t)len)))
			break;
		row[0] = (double)R->rank[i].mem_peak_bytes;
		row[1] = (double)R->rank[i].mem_total_bytes;
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Find what the fullest rank keeps that the others do not (apx report --section "
		 "memory on its\nfile: the largest allocations and their lines): gather metrics and "
		 "predictions on the\nCPU or in chunks, save checkpoints from CPU copies, and split "
		 "pipeline stages by memory.");
	return APX_RULE_FIRED;
}
