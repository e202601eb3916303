/*
 * backward.c - backward kernels attributed to the forward line that created them
 * (docs/report.md, "Backward kernels"). Autograd's engine threads launch the backward
 * pass's kernels with no Python frames, so those kernels carry no stack. With apx analyze
 * --python-backward nvtx, PyTorch's emit_nvtx makes every op an NVTX range whose name carries
 * the autograd sequence number (base/torch_nvtx.h): a forward op's range "aten::addmm, seq = N"
 * on the Python thread, the autograd node it created "AddmmBackward0, seq = N" around the
 * node's work on the engine thread; and the collector gives every launch its host time and
 * thread. Then:
 *   1. per thread, the outermost ranges with a sequence number (an op called from Python, or
 *      an autograd node's apply) - ranges nest on a thread (push/pop);
 *   2. a forward op's line is the Python stack of the first launch with a stack inside its
 *      outermost range (the Python call that ran the op); when that call launched nothing
 *      (a view), the nearest launch with a stack on that thread (counted as "near");
 *   3. a kernel without a stack launched inside an autograd node's range with sequence number
 *      M gets the line of the forward range M (the latest one before it that has a line);
 *      one launched inside the engine's "autograd::engine::evaluate_function: X" range but
 *      outside the node's own range (the engine's work on the node's outputs: sum_to of a
 *      broadcast gradient, a cast to the input's dtype, in validate_outputs) gets the node
 *      the evaluate_function range wraps.
 * model->bwd has the totals and each kernel's line; hotspots.c adds it per line. Called by
 * apx_model_finish() (finish.c) after stacks.c; single-threaded; -ENOMEM or 0.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "base/torch_nvtx.h"

#include "base/banned.h"

struct rng {			/* a PyTorch op range with a sequence number */
	uint64_t start, end, seq;
	uint32_t thread;
	uint8_t node;		/* an autograd node's apply() ("...Backward0") */
};

/* the engine's range around one node's apply and the work on its outputs */
#define EVAL_PREFIX "autograd::engine::evaluate_function: "

struct launch {			/* a kernel launch with a host time, under one thread id */
	uint64_t t;
	uint32_t thread;
	uint32_t stack;		/* store stack + 1, 0 none */
};

struct fwd {			/* a forward range's sequence number and line */
	uint64_t seq, start;
	uint32_t line;
	uint8_t near;
};

static int cmp_rng(const void *a, const void *b)
{
	const struct rng *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* the outer one first */
}

static int cmp_launch(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_fwd(const void *a, const void *b)
{
	const struct fwd *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* First launch of thread th at or after t (n if none). */
static size_t launch_from(const struct launch *l, size_t n, uint32_t th, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l[mid].thread < th || (l[mid].thread == th && l[mid].t < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first of top[0..n) (sorted by thread and start) on thread th starting at or after t. */
static size_t top_from(const struct rng *top, size_t n, uint32_t th, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (top[mid].thread < th || (top[mid].thread == th && top[mid].start < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The outermost range of thread th containing t among the outermost ranges top[0..n)
 * (sorted by thread and start, disjoint per thread); NULL none. */
static const struct rng *outer_at(const struct rng *top, size_t n, uint32_t th, uint64_t t)
{
	size_t lo = top_from(top, n, th, t + 1);	/* first with (thread, start) > (th, t) */

	if (!lo || top[lo - 1].thread != th || t >= top[lo - 1].end)
		return NULL;
	return &top[lo - 1];
}

/* The line of the latest forward range of sequence number seq that starts before t (or the
 * first one when none does); UINT32_MAX none. */
static uint32_t fwd_line(const struct fwd *f, size_t n, uint64_t seq, uint64_t t, int *ret_near)
{
	size_t lo = 0, hi = n, best = n;

	while (lo < hi) {	/* first with seq >= seq */
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && f[i].seq == seq; i++)
		if (best == n || f[i].start <= t)
			best = i;
	if (best == n)
		return UINT32_MAX;
	*ret_near = f[best].near;
	return f[best].line;
}

/* The line of a forward op's outermost range o: the first launch with a stack inside it, else
 * the nearest one on its thread. */
static uint32_t line_of_range(const struct apx_model *m, const struct launch *l, size_t nl,
			      const struct rng *o, int *ret_near)
{
	size_t i = launch_from(l, nl, o->thread, o->start), j;
	uint32_t line;

	*ret_near = 0;
	for (j = i; j < nl && l[j].thread == o->thread && l[j].t < o->end; j++)
		if ((line = apx_stack_line(m, l[j].stack)) != UINT32_MAX)
			return line;
	*ret_near = 1;
	/* nearest with a line: the first after the range or the last before it */
	{
		size_t a = j, b = i;
		uint32_t la = UINT32_MAX, lb = UINT32_MAX;
		uint64_t da = UINT64_MAX, db = UINT64_MAX;

		for (; a < nl && l[a].thread == o->thread; a++)
			if ((la = apx_stack_line(m, l[a].stack)) != UINT32_MAX) {
				da = l[a].t - o->end;
				break;
			}
		while (b > 0 && l[b - 1].thread == o->thread)
			if ((lb = apx_stack_line(m, l[--b].stack)) != UINT32_MAX) {
				db = o->start - l[b].t;
				break;
			}
		if (da == UINT64_MAX && db == UINT64_MAX)
			return UINT32_MAX;
		return da <= db ? la : lb;
	}
}

int apx_backward_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_markers *mk;
	const struct apx_es_kernels *k;
	struct rng *r = NULL, *top = NULL, *ev = NULL;
	struct launch *l = NULL;
	struct fwd *f = NULL;
	size_t nr = 0, ntop = 0, nl = 0, nf = 0, nev = 0;
	uint32_t top_line = UINT32_MAX;
	int err = -ENOMEM, top_near = 0;

	if (!st)
		return 0;
	mk = &st->mk;
	k = &st->k;
	for (size_t i = 0; i < k->n; i++)
		m->bwd.launch_times += k->launch_ns[i] != 0;
	if (!m->bwd.launch_times)
		return 0;
	r = malloc((mk->n ? mk->n : 1) * sizeof(*r));
	top = malloc((mk->n ? mk->n : 1) * sizeof(*top));
	ev = malloc((mk->n ? mk->n : 1) * sizeof(*ev));
	l = malloc(2 * m->bwd.launch_times * sizeof(*l));
	m->bwd.kernel_line = malloc(k->n * sizeof(*m->bwd.kernel_line));
	if (!r || !top || !ev || !l || !m->bwd.kernel_line)
		goto out;
	for (size_t i = 0; i < k->n; i++)
		m->bwd.kernel_line[i] = UINT32_MAX;
	for (size_t i = 0; i < mk->n; i++) {
		struct apx_es_text name;

		if (mk->torch[i] != 1 || mk->kind[i] != APX_MARKER_RANGE || mk->end[i] < mk->start[i])
			continue;
		name = apx_store_string(st, mk->name[i]);
		if (!mk->seq[i]) {
			if (name.len > sizeof(EVAL_PREFIX) - 1 &&
			    !memcmp(name.p, EVAL_PREFIX, sizeof(EVAL_PREFIX) - 1))
				ev[nev++] = (struct rng){ mk->start[i], mk->end[i], 0, mk->thread[i], 1 };
			continue;
		}
		{
			size_t op_len = name.len;
			uint64_t seq;

			/* another tool's trace keeps the whole name: the op is before the suffix */
			if (!apx_torch_nvtx_parse(name.p, name.len, &op_len, &seq))
				op_len = name.len;
			r[nr++] = (struct rng){ mk->start[i], mk->end[i], mk->seq[i], mk->thread[i],
						(uint8_t)apx_torch_nvtx_is_backward(name.p, op_len) };
		}
	}
	/* launches under both ids of their thread: CUPTI's for NVTX ranges, and the OS tid */
	for (size_t i = 0; i < k->n; i++) {
		if (!k->launch_ns[i])
			continue;
		if (k->lthread[i] != UINT32_MAX)
			l[nl++] = (struct launch){ k->launch_ns[i], k->lthread[i], k->stack[i] };
		if (k->othread[i] != UINT32_MAX && k->othread[i] != k->lthread[i])
			l[nl++] = (struct launch){ k->launch_ns[i], k->othread[i], k->stack[i] };
	}
	qsort(r, nr, sizeof(*r), cmp_rng);
	qsort(l, nl, sizeof(*l), cmp_launch);
	/* 1. the outermost ranges, per thread; each evaluate_function range takes the sequence
	 * number of the node range it wraps (the first outermost range inside it) */
	for (size_t i = 0; i < nr; i++)
		if (!ntop || top[ntop - 1].thread != r[i].thread || r[i].start >= top[ntop - 1].end)
			top[ntop++] = r[i];
	qsort(ev, nev, sizeof(*ev), cmp_rng);
	{
		size_t n = 0;

		for (size_t i = 0; i < nev; i++) {
			size_t j = top_from(top, ntop, ev[i].thread, ev[i].start);

			if (n && ev[n - 1].thread == ev[i].thread && ev[i].start < ev[n - 1].end)
				continue;	/* nested (re-entrant backward): the outer one */
			if (j < ntop && top[j].thread == ev[i].thread && top[j].node &&
			    top[j].end <= ev[i].end) {
				ev[i].seq = top[j].seq;
				ev[n++] = ev[i];
			}
		}
		nev = n;
	}
	/* 2. each forward range's line: its outermost range's */
	f = malloc((nr ? nr : 1) * sizeof(*f));
	if (!f)
		goto out;
	for (size_t i = 0, o = 0, done = SIZE_MAX; i < nr; i++) {
		uint32_t line;
		int near;

		while (o + 1 < ntop && (top[o + 1].thread < r[i].thread ||
					(top[o + 1].thread == r[i].thread &&
					 top[o + 1].start <= r[i].start)))
			o++;
		if (r[i].node || top[o].node)
			continue;	/* a backward node, or an op inside one */
		if (done != o) {	/* once per outermost range */
			done = o;
			line = line_of_range(m, l, nl, &top[o], &near);
			top_line = line;
			top_near = near;
		}
		line = top_line;
		near = top_near;
		if (line != UINT32_MAX)
			f[nf++] = (struct fwd){ r[i].seq, r[i].start, line, (uint8_t)near };
	}
	qsort(f, nf, sizeof(*f), cmp_fwd);
	/* 3. backward kernels */
	for (size_t i = 0; i < k->n; i++) {
		const struct rng *o = NULL;
		uint32_t line;
		int near = 0;

		if (!k->launch_ns[i] || k->stack[i])
			continue;
		m->bwd.nostack_ns += k->dur[i];
		m->bwd.nostack_kernels++;
		if (k->lthread[i] != UINT32_MAX)
			o = outer_at(top, ntop, k->lthread[i], k->launch_ns[i]);
		if (!o && k->othread[i] != UINT32_MAX)
			o = outer_at(top, ntop, k->othread[i], k->launch_ns[i]);
		if (!o && k->lthread[i] != UINT32_MAX)	/* the engine's work on a node's outputs */
			o = outer_at(ev, nev, k->lthread[i], k->launch_ns[i]);
		if (!o && k->othread[i] != UINT32_MAX)
			o = outer_at(ev, nev, k->othread[i], k->launch_ns[i]);
		if (!o || !o->node)
			continue;
		m->bwd.in_node_ns += k->dur[i];
		line = fwd_line(f, nf, o->seq, o->start, &near);
		if (line == UINT32_MAX) {
			m->bwd.no_forward_ns += k->dur[i];
			continue;
		}
		m->bwd.kernel_line[i] = line;
		m->bwd.attr_ns += k->dur[i];
		m->bwd.attr_kernels++;
		if (near)
			m->bwd.near_ns += k->dur[i];
	}
	err = 0;
out:
	free(r);
	free(top);
	free(ev);
	free(l);
	free(f);
	return err;
}
