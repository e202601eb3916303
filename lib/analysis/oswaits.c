/*
 * oswaits.c - the OS calls threads waited in, and for how long, from the thread samples
 * (stacks.h; SAMPLE records of the collector's sampler: state, syscall, stack). Consecutive
 * samples of one thread sleeping in the same syscall are one wait; its time is the sum of
 * their periods, so a wait is known to about one sampling period (5 ms at 200 Hz) and waits
 * shorter than a period are seen in proportion to their time, not one by one. Per syscall:
 * waits, threads, time, the longest; and the waits of at least model->os_wait_threshold_ns
 * grouped by the line of the stack they waited under (threads without Python frames: by
 * thread). Called by apx_model_finish() (finish.c) after apx_stacks_build(); read by the
 * report's threads section. Single-threaded.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/store.h"

#include "base/banned.h"

#define GAP_PERIODS 3			/* a hole of more periods than this ends a wait */
#define NR_BITS 512			/* syscall numbers told apart for "threads" */

struct cur {				/* the wait a thread is in, per store thread */
	uint64_t start, last, ns;
	int32_t nr;			/* -2: none */
	uint32_t stack;
};

static int add_call(struct apx_model *m, int32_t nr, uint64_t ns, int new_thread)
{
	struct apx_an_oswait *w = NULL, n = { .nr = nr };

	for (size_t i = 0; i < m->oswaits.n && !w; i++)
		if (APX_VEC_AT(&m->oswaits, struct apx_an_oswait, i)->nr == nr)
			w = APX_VEC_AT(&m->oswaits, struct apx_an_oswait, i);
	if (!w) {
		if (apx_vec_push(&m->oswaits, &n) < 0)
			return -ENOMEM;
		w = APX_VEC_AT(&m->oswaits, struct apx_an_oswait, m->oswaits.n - 1);
	}
	w->waits++;
	w->threads += new_thread != 0;
	w->ns += ns;
	if (ns > w->max_ns)
		w->max_ns = ns;
	return 0;
}

static int add_long(struct apx_model *m, const struct cur *c, uint32_t thread)
{
	const struct apx_es_thread *th = &m->store->threads[thread];
	uint32_t line = apx_stack_line(m, c->stack);
	struct apx_an_oswait_line *w = NULL, n = {
		.nr = c->nr, .line = line, .file = th->file, .tid = th->tid, .thread = thread,
	};

	for (size_t i = 0; i < m->oswait_lines.n && !w; i++) {
		struct apx_an_oswait_line *x = APX_VEC_AT(&m->oswait_lines,
							  struct apx_an_oswait_line, i);

		if (x->nr == n.nr && x->line == n.line &&
		    (line != UINT32_MAX || x->thread == thread))
			w = x;
	}
	if (!w) {
		if (apx_vec_push(&m->oswait_lines, &n) < 0)
			return -ENOMEM;
		w = APX_VEC_AT(&m->oswait_lines, struct apx_an_oswait_line, m->oswait_lines.n - 1);
	}
	w->waits++;
	w->ns += c->ns;
	if (c->ns > w->max_ns) {
		w->max_ns = c->ns;
		w->max_start = c->start;
		w->file = th->file;
		w->tid = th->tid;
		w->thread = thread;
	}
	return 0;
}

/* seen: the thread's bits of the syscalls it was counted in already */
static int close_wait(struct apx_model *m, struct cur *c, uint32_t thread, uint8_t *seen)
{
	int r, fresh = 1;

	if (c->nr == -2)
		return 0;
	if (c->nr < NR_BITS) {
		fresh = !(seen[c->nr / 8] >> (c->nr % 8) & 1);
		seen[c->nr / 8] |= (uint8_t)(1u << (c->nr % 8));
	}
	r = add_call(m, c->nr, c->ns, fresh);
	if (r == 0 && c->ns >= m->os_wait_threshold_ns)
		r = add_long(m, c, thread);
	c->nr = -2;
	return r;
}

static int cmp_call(const void *a, const void *b)
{
	const struct apx_an_oswait *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int cmp_line(const void *a, const void *b)
{
	const struct apx_an_oswait_line *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->nr != y->nr)
		return x->nr < y->nr ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;	/* ties: the line table's order */
}

int apx_oswaits_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_samples *p;
	struct cur *c;
	uint8_t *seen;
	int r = 0;

	if (!st || !st->smp.n)
		return 0;
	if (!m->os_wait_threshold_ns)
		m->os_wait_threshold_ns = APX_OS_WAIT_THRESHOLD_NS;
	p = &st->smp;
	c = calloc(st->nthreads, sizeof(*c));
	seen = calloc(st->nthreads, NR_BITS / 8);
	if (!c || !seen) {
		free(c);
		free(seen);
		return -ENOMEM;
	}
	for (size_t t = 0; t < st->nthreads; t++)
		c[t].nr = -2;
	for (size_t i = 0; i < p->n && r == 0; i++) {	/* in time order */
		uint32_t t = p->thread[i];
		struct cur *w = &c[t];
		int waits = (p->state[i] == APX_TSTATE_SLEEPING || p->state[i] == APX_TSTATE_DISK) &&
			    p->syscall[i] >= 0;

		if (w->nr != -2 && (!waits || w->nr != p->syscall[i] ||
				    p->ts[i] - w->last > (uint64_t)GAP_PERIODS * p->period[i]))
			r = close_wait(m, w, t, seen + (size_t)t * (NR_BITS / 8));
		if (r || !waits)
			continue;
		if (w->nr == -2)
			*w = (struct cur){ .start = p->ts[i], .nr = p->syscall[i],
					   .stack = p->stack[i] };
		w->ns += p->period[i];
		w->last = p->ts[i];
		if (!w->stack)
			w->stack = p->stack[i];
	}
	for (size_t t = 0; t < st->nthreads && r == 0; t++)
		r = close_wait(m, &c[t], (uint32_t)t, seen + t * (NR_BITS / 8));
	free(c);
	free(seen);
	if (r)
		return r;
	if (m->oswaits.n > 1)
		qsort(m->oswaits.data, m->oswaits.n, sizeof(struct apx_an_oswait), cmp_call);
	if (m->oswait_lines.n > 1)
		qsort(m->oswait_lines.data, m->oswait_lines.n, sizeof(struct apx_an_oswait_line),
		      cmp_line);
	return 0;
}
