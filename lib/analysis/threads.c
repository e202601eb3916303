/*
 * threads.c - each sampled thread of the run (stacks.h, struct apx_an_thread): its samples,
 * the CPU time between its first and last (the cumulative cpu_ns of its samples, increases
 * only), how often it was running or waiting, the syscalls it waited in most, and its
 * voluntary and involuntary context switches (the sampler's CPU records with its TID, about
 * one a second: last minus first). Threads are
 * the event store's (file, tid), named by THREAD records when the trace has them. Called by
 * apx_model_finish() (finish.c); read by the report's threads section.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/store.h"

#include "base/banned.h"

#define SYSCALL_SLOTS 8			/* distinct syscalls counted per thread (more: left out) */

struct tally {
	uint64_t samples, sampled_ns, cpu_ns, running, waiting, last_cpu;
	int32_t nr[SYSCALL_SLOTS];
	uint64_t n[SYSCALL_SLOTS];
	unsigned nsys;
};

static void count_syscall(struct tally *t, int32_t nr)
{
	for (unsigned k = 0; k < t->nsys; k++)
		if (t->nr[k] == nr) {
			t->n[k]++;
			return;
		}
	if (t->nsys < SYSCALL_SLOTS) {
		t->nr[t->nsys] = nr;
		t->n[t->nsys++] = 1;
	}
}

static void sample(struct tally *t, const struct apx_es_samples *p, size_t i)
{
	if (t->samples && p->cpu_ns[i] > t->last_cpu)
		t->cpu_ns += p->cpu_ns[i] - t->last_cpu;
	if (!t->samples || p->cpu_ns[i] > t->last_cpu)
		t->last_cpu = p->cpu_ns[i];
	t->samples++;
	t->sampled_ns += p->period[i];
	if (p->state[i] == APX_TSTATE_RUNNING) {
		t->running++;
	} else if (p->state[i] == APX_TSTATE_SLEEPING || p->state[i] == APX_TSTATE_DISK) {
		t->waiting++;
		if (p->syscall[i] >= 0)
			count_syscall(t, p->syscall[i]);
	}
}

/* The thread's row: its top syscalls by samples. */
static struct apx_an_thread thread_row(const struct apx_model *m, size_t ti, const struct tally *t)
{
	const struct apx_es_thread *th = &m->store->threads[ti];
	struct apx_an_thread a = {
		.file = th->file, .pid = m->files[th->file].pid, .tid = th->tid,
		.name = th->name.len ? th->name.p : NULL, .name_len = th->name.len,
		.samples = t->samples, .sampled_ns = t->sampled_ns, .cpu_ns = t->cpu_ns,
		.running = t->running, .waiting = t->waiting,
	};
	uint8_t used[SYSCALL_SLOTS] = { 0 };

	while (a.nsys < APX_AN_THREAD_SYSCALLS) {
		unsigned best = SYSCALL_SLOTS;

		for (unsigned k = 0; k < t->nsys; k++)
			if (!used[k] && (best == SYSCALL_SLOTS || t->n[k] > t->n[best]))
				best = k;
		if (best == SYSCALL_SLOTS)
			break;
		used[best] = 1;
		a.sys[a.nsys].nr = t->nr[best];
		a.sys[a.nsys++].samples = t->n[best];
	}
	return a;
}

struct key {
	uint64_t tid;
	uint16_t file;
	size_t row;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Each thread's context switches from its own CPU records (tid != 0): the counters are
 * cumulative, so last minus first by time; a thread needs two records. */
static int add_switches(struct apx_model *m)
{
	struct key *k;
	struct {
		uint64_t ts0, ts1, v0, v1, i0, i1, n;
	} *c;
	size_t n = m->threads.n;

	if (!n || !m->cpu.n)
		return 0;
	k = calloc(n, sizeof(*k));
	c = calloc(n, sizeof(*c));
	if (!k || !c) {
		free(k);
		free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct apx_an_thread *a = APX_VEC_AT(&m->threads, struct apx_an_thread, i);

		k[i] = (struct key){ .tid = a->tid, .file = a->file, .row = i };
	}
	qsort(k, n, sizeof(*k), cmp_key);
	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *r = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);
		struct key q = { .tid = r->tid, .file = r->file }, *hit;

		if (!r->tid || !(hit = bsearch(&q, k, n, sizeof(*k), cmp_key)))
			continue;
		if (!c[hit->row].n || r->ts < c[hit->row].ts0) {
			c[hit->row].ts0 = r->ts;
			c[hit->row].v0 = r->vol;
			c[hit->row].i0 = r->invol;
		}
		if (!c[hit->row].n || r->ts >= c[hit->row].ts1) {
			c[hit->row].ts1 = r->ts;
			c[hit->row].v1 = r->vol;
			c[hit->row].i1 = r->invol;
		}
		c[hit->row].n++;
	}
	for (size_t i = 0; i < n; i++) {
		struct apx_an_thread *a = APX_VEC_AT(&m->threads, struct apx_an_thread, i);

		if (c[i].n < 2)
			continue;
		a->has_csw = 1;
		a->vcsw = c[i].v1 >= c[i].v0 ? c[i].v1 - c[i].v0 : 0;
		a->ivcsw = c[i].i1 >= c[i].i0 ? c[i].i1 - c[i].i0 : 0;
	}
	free(k);
	free(c);
	return 0;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct apx_an_thread *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int apx_threads_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	struct tally *t;
	int r = 0;

	if (!st || !st->smp.n)
		return 0;
	t = calloc(st->nthreads, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < st->smp.n; i++)	/* in time order: cpu_ns deltas */
		sample(&t[st->smp.thread[i]], &st->smp, i);
	for (size_t i = 0; i < st->nthreads && r == 0; i++) {
		struct apx_an_thread a;

		if (!t[i].samples || st->threads[i].file >= m->nfiles)
			continue;
		a = thread_row(m, i, &t[i]);
		r = apx_vec_push(&m->threads, &a);
	}
	free(t);
	if (r == 0)
		r = add_switches(m);
	if (r == 0 && m->threads.n > 1)
		qsort(m->threads.data, m->threads.n, sizeof(struct apx_an_thread), cmp_thread);
	return r;
}
