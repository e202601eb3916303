/*
 * waits.c - the cross-stream dependencies of the what-if graph as the report names them (issue
 * 39, item 1; seed 001 §1.5: what delayed a kernel between its launch and its start): every
 * GPU operation of the steady window that started when another stream's operation ended
 * (graph.c's event-wait edges), grouped by (waiting stream, awaited stream), with how often,
 * how long the waiting stream was idle before those operations, and the operations that
 * waited and were waited for most. Called by the report's streams section (build_view_gpu.c).
 * The same dependencies one by one (apx_whatif_dep_pairs: awaited and waiting operation as
 * store column indices), for the exporters' "stream wait" flows (lib/export/walk.c). Both read
 * model->whatif and allocate nothing.
 */
#include "analysis/whatif/whatif.h"

#include <string.h>

#include "analysis/model.h"

#include "base/banned.h"

/* The slot of (waiting, awaited) in w[0..*n), a new one when there is room; NULL when full. */
static struct apx_wi_wait *slot(struct apx_wi_wait *w, size_t cap, size_t *n, uint32_t waiting,
				uint32_t awaited)
{
	for (size_t i = 0; i < *n; i++)
		if (w[i].stream == waiting && w[i].awaited_stream == awaited)
			return &w[i];
	if (*n >= cap)
		return NULL;
	memset(&w[*n], 0, sizeof(w[*n]));
	w[*n].stream = waiting;
	w[*n].awaited_stream = awaited;
	return &w[(*n)++];
}

/* The task task i of g waited for on another stream (graph.c's event-wait edge), NULL none. */
static const struct apx_wi_task *awaited_of(const struct apx_whatif *g, size_t i)
{
	uint32_t d = g->t[i].dep;

	return d == APX_WI_NONE || d >= g->n ? NULL : &g->t[d];
}

size_t apx_whatif_waits(const struct apx_model *m, struct apx_wi_wait *out, size_t cap)
{
	const struct apx_whatif *g = m ? m->whatif : NULL;
	size_t n = 0;

	if (!g)
		return 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct apx_wi_task *t = &g->t[i], *o = awaited_of(g, i);
		struct apx_wi_wait *w;

		if (!o || t->stream >= g->nstreams || o->stream >= g->nstreams ||
		    !(w = slot(out, cap, &n, g->streams[t->stream].es, g->streams[o->stream].es)))
			continue;
		w->count++;
		w->idle_ns += t->gap_ns;
		if (!w->waiter_set || t->gap_ns > w->max_gap_ns) {	/* the longest wait's pair */
			w->max_gap_ns = t->gap_ns;
			w->waiter = i;
			w->awaited = t->dep;
			w->waiter_set = 1;
		}
	}
	for (size_t i = 1; i < n; i++)		/* most idle time first */
		for (size_t j = i; j > 0 && out[j].idle_ns > out[j - 1].idle_ns; j--) {
			struct apx_wi_wait x = out[j];

			out[j] = out[j - 1];
			out[j - 1] = x;
		}
	return n;
}

/* A GPU operation of the recorded graph: its store column is known (syncs and allocator calls
 * have no GPU slice; a transformation's tasks are not in m->whatif). */
static int is_gpu_op(const struct apx_wi_task *t)
{
	return t->kind == APX_WI_KERNEL || t->kind == APX_WI_COPY || t->kind == APX_WI_MEMSET;
}

size_t apx_whatif_dep_pairs(const struct apx_model *m, struct apx_wi_dep_pair *out, size_t cap)
{
	const struct apx_whatif *g = m ? m->whatif : NULL;
	size_t n = 0;

	if (!g)
		return 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct apx_wi_task *t = &g->t[i], *o = awaited_of(g, i);

		if (!o || !is_gpu_op(t) || !is_gpu_op(o))
			continue;
		if (n < cap)
			out[n] = (struct apx_wi_dep_pair){ .awaited = o->src, .waiting = t->src,
							   .awaited_kind = o->kind,
							   .waiting_kind = t->kind };
		n++;
	}
	return n;
}
