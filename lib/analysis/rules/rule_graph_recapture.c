/*
 * rule_graph_recapture.c - a CUDA graph captured and instantiated again every iteration
 * instead of once and replayed: torch.cuda.graph(g) (or make_graphed_callables, or
 * torch.compile(mode="reduce-overhead") with shapes that change) inside the training loop.
 * Kernel records carry the id of the graph they ran in; a capture makes a new graph with a new
 * id, a replay keeps it. Seen from the trace: MIN_CAPTURES or more graphs of one process with
 * the same kernels (the same multiset of kernel names: model.h, struct apx_an_graph), each run
 * once or twice, where one graph replayed would do.
 *
 * Saving: a re-capture costs the host what running the region eagerly costs (every op
 * dispatched into the capture) plus cudaGraphInstantiate, and torch.cuda.graph() synchronizes
 * first; the GPU waits meanwhile: saving = the steady state's GPU idle that the idle
 * attribution gives to graph capture (idle_attrib.c: gaps that end at a graph's first kernel,
 * and gaps a sync returned in while the next graph was captured), else the gaps of 100 us or
 * more that end where a re-captured graph starts (model->gaps). With no such gap the host work hid behind GPU work; the estimate is then the
 * dispatch cost, kernels x APX_HOST_OP_NS per re-capture, at a lower confidence.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/banned.h"

#define MIN_CAPTURES 3		/* graphs of the same kernels: captured in a loop */
#define MAX_RUNS_EACH 2		/* a graph replayed more than this is reused, not re-captured */

static const struct apx_an_graph *graphs_sorted;

static int cmp_graph(const void *a, const void *b)
{
	const struct apx_an_graph *x = &graphs_sorted[*(const uint32_t *)a];
	const struct apx_an_graph *y = &graphs_sorted[*(const uint32_t *)b];

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->sig != y->sig)
		return x->sig < y->sig ? -1 : 1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The idle gaps (model->gaps) that end where one of the n times in t (sorted) starts: the
 * activity that ended each gap is that graph's first kernel. */
static uint64_t gaps_ending_at(const struct apx_model *m, const uint64_t *t, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < m->gaps.n && n; i++) {
		const struct apx_an_gap *g = APX_VEC_AT(&m->gaps, struct apx_an_gap, i);

		if (bsearch(&g->end, t, n, sizeof(*t), cmp_u64))
			sum += g->end - g->start;
	}
	return sum;
}

/* How many times graph g ran: its launch records, else its kernels over the smallest count of
 * its group (one run of the graph). */
static uint64_t runs(const struct apx_an_graph *g, uint64_t nodes)
{
	if (g->launches)
		return g->launches;
	return nodes ? g->kernels / nodes : 1;
}

APX_RULE_DECL(graph_recapture)
{
	const struct apx_an_graph *gr = m->graphs.data;
	uint64_t best_n = 0, best_nodes = 0, recaptures = 0, gap_ns = 0, nodes_all = 0, *starts;
	size_t best_at = 0;
	char b1[32], b2[32];
	struct apx_finding *f;
	uint32_t *idx;
	double saving;
	int measured;

	if (m->graphs.n < MIN_CAPTURES)
		return APX_RULE_CLEAN;
	idx = malloc(m->graphs.n * sizeof(*idx));
	starts = malloc(m->graphs.n * sizeof(*starts));
	if (!idx || !starts) {
		free(idx);
		free(starts);
		snprintf(why, why_len, "out of memory");
		return APX_RULE_NOT_MEASURED;
	}
	for (size_t i = 0; i < m->graphs.n; i++)
		idx[i] = (uint32_t)i;
	graphs_sorted = gr;
	qsort(idx, m->graphs.n, sizeof(*idx), cmp_graph);
	for (size_t a = 0, b; a < m->graphs.n; a = b) {
		uint64_t nodes = UINT64_MAX, n = 0;

		for (b = a; b < m->graphs.n && gr[idx[b]].file == gr[idx[a]].file &&
			    gr[idx[b]].sig == gr[idx[a]].sig; b++)
			if (gr[idx[b]].kernels < nodes)
				nodes = gr[idx[b]].kernels;
		if (!gr[idx[a]].kernels || b - a < MIN_CAPTURES)
			continue;
		for (size_t i = a; i < b; i++)
			n += runs(&gr[idx[i]], nodes) <= MAX_RUNS_EACH;
		if (n < MIN_CAPTURES || n * 2 < b - a)
			continue;	/* most of the group is replayed: graphs kept per shape */
		for (size_t i = a + 1; i < b; i++)	/* the first capture is needed */
			starts[recaptures++] = gr[idx[i]].first_ns;
		nodes_all += nodes * (b - a - 1);
		if (b - a > best_n) {
			best_n = b - a;
			best_nodes = nodes;
			best_at = a;
		}
	}
	qsort(starts, recaptures, sizeof(*starts), cmp_u64);
	gap_ns = m->gpu.idle_by_cause[APX_IDLE_GRAPH];
	if (!gap_ns)
		gap_ns = gaps_ending_at(m, starts, recaptures);
	free(starts);
	if (!recaptures) {
		free(idx);
		return APX_RULE_CLEAN;
	}
	measured = gap_ns > 0;
	saving = measured ? (double)gap_ns : (double)nodes_all * APX_HOST_OP_NS;
	f = apx_finding_add(out, m, "graph-recapture", APX_SEV_WARNING, saving, measured ? 60 : 30);
	if (!f) {
		free(idx);
		return APX_RULE_FIRED;
	}
	snprintf(f->title, sizeof(f->title),
		 "a CUDA graph of %llu kernels was captured %llu times instead of once",
		 (unsigned long long)best_nodes, (unsigned long long)best_n);
	if (measured)
		snprintf(f->model, sizeof(f->model),
			 "capture once, replay after: saving = the GPU idle while the host "
			 "synchronized, captured and instantiated each re-captured graph");
	else
		snprintf(f->model, sizeof(f->model),
			 "capture once, replay after: saving = kernels x %.0f us of host dispatch per "
			 "re-capture (no GPU gap before them: the host cost hid behind GPU work)",
			 APX_HOST_OP_NS / 1000.0);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"%llu graphs with the same %llu kernels (first at %s into the run), each run "
			"at most %d times\n", (unsigned long long)best_n, (unsigned long long)best_nodes,
			apx_fmt_ns(b1, sizeof(b1), (double)(gr[idx[best_at]].first_ns - m->run_start_ns)),
			MAX_RUNS_EACH);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"GPU idle while they were captured: %s (%llu re-captures in all)\n",
			apx_fmt_ns(b2, sizeof(b2), (double)gap_ns), (unsigned long long)recaptures);
	apx_finding_metric(f, "captures", (double)best_n, APX_UNIT_COUNT);
	apx_finding_metric(f, "graph_kernels", (double)best_nodes, APX_UNIT_COUNT);
	apx_finding_metric(f, "recaptures", (double)recaptures, APX_UNIT_COUNT);
	apx_finding_metric(f, "idle_before_ns", (double)gap_ns, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Capture once before the loop, then replay (static input/output tensors):\n"
		 "  g = torch.cuda.CUDAGraph()\n"
		 "  with torch.cuda.graph(g): static_out = model(static_in)\n"
		 "  for x in loader: static_in.copy_(x); g.replay()\n"
		 "torch.compile(mode='reduce-overhead'): keep input shapes fixed (pad, drop_last=True)\n"
		 "or mark them dynamic, so one graph is reused");
	free(idx);
	return APX_RULE_FIRED;
}
