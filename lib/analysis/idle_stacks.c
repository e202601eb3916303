/*
 * idle_stacks.c - what the main thread was doing while the GPU was idle (stacks.h): the
 * samples of each process's main thread (tid == pid) whose time lies inside the steady
 * state's GPU-idle gaps (timeline.c's gaps of 100 us or more, each with the cause of most of
 * it), grouped by stack. The rules input-pipeline and gpu-starvation name their lines from
 * the same samples (apx_idle_samples, lines.c). Called by apx_model_finish() (finish.c) after
 * the timelines; read by the report's idle-stacks section.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/store.h"

#include "base/banned.h"

struct span {
	uint64_t start, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The steady gaps of the causes, sorted and merged (devices' gaps overlap). */
static int idle_spans(const struct apx_model *m, unsigned causes, struct span **ret, size_t *ret_n)
{
	struct span *s = malloc((m->gaps.n ? m->gaps.n : 1) * sizeof(*s));
	size_t n = 0, k = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < m->gaps.n; i++) {
		const struct apx_an_gap *g = APX_VEC_AT(&m->gaps, struct apx_an_gap, i);

		if (g->steady && g->cause < 32 && (causes >> g->cause & 1) && g->end > g->start)
			s[n++] = (struct span){ g->start, g->end };
	}
	qsort(s, n, sizeof(*s), cmp_span);
	for (size_t i = 0; i < n; i++) {
		if (k && s[i].start <= s[k - 1].end) {
			if (s[i].end > s[k - 1].end)
				s[k - 1].end = s[i].end;
			continue;
		}
		s[k++] = s[i];
	}
	*ret = s;
	*ret_n = k;
	return 0;
}

int apx_idle_samples(const struct apx_model *m, unsigned causes,
		     void (*fn)(void *ctx, uint32_t stack, uint64_t ns, unsigned state), void *ctx)
{
	const struct apx_store *st = m->store;
	struct span *s;
	size_t n, j = 0;
	int r;

	if (!st || !st->smp.n || !m->gaps.n)
		return 0;
	if ((r = idle_spans(m, causes, &s, &n)) < 0)
		return r;
	for (size_t i = 0; i < st->smp.n && j < n; i++) {	/* samples in time order */
		const struct apx_es_thread *th = &st->threads[st->smp.thread[i]];
		uint64_t ts = st->smp.ts[i];

		while (j < n && s[j].end <= ts)
			j++;
		if (j == n || ts < s[j].start || th->file >= m->nfiles ||
		    th->tid != m->files[th->file].pid)
			continue;
		fn(ctx, st->smp.stack[i], st->smp.period[i], st->smp.state[i]);
	}
	free(s);
	return 0;
}

struct by_stack {
	struct apx_an_idle_stack *rows;		/* per store stack; [nstacks]: no stack */
	uint64_t total_ns;
};

static void add(void *ctx, uint32_t stack, uint64_t ns, unsigned state)
{
	struct by_stack *b = ctx;

	(void)state;
	b->total_ns += ns;
	if (!stack)
		return;
	b->rows[stack - 1].ns += ns;
	b->rows[stack - 1].samples++;
}

static int cmp_idle(const void *a, const void *b)
{
	const struct apx_an_idle_stack *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int apx_idle_stacks_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	struct by_stack b = { 0 };
	int r;

	if (!st || !st->nstacks || !m->has_stacks)
		return 0;
	b.rows = calloc(st->nstacks, sizeof(*b.rows));
	if (!b.rows)
		return -ENOMEM;
	for (size_t i = 0; i < st->nstacks; i++)
		b.rows[i].stack = (uint32_t)i + 1;
	r = apx_idle_samples(m, ~0u, add, &b);
	for (size_t i = 0; i < st->nstacks && r == 0; i++)
		if (b.rows[i].samples)
			r = apx_vec_push(&m->idle_stacks, &b.rows[i]);
	free(b.rows);
	m->idle_samples_ns = b.total_ns;
	if (r == 0 && m->idle_stacks.n > 1)
		qsort(m->idle_stacks.data, m->idle_stacks.n, sizeof(struct apx_an_idle_stack),
		      cmp_idle);
	return r;
}
