/*
 * kineto_scan.c - pass 1 of the Kineto importer, one event at a time: the process (pid of
 * the first CPU-side event, its process_name), the threads and their names, the span of the
 * timestamps, whether CUPTI's synchronization records are there (then API calls do not add
 * SYNC records), and for each copy or memset API call whether it was asynchronous (keyed by
 * correlation id: Kineto's copy events do not say). Called by kineto_walk.c.
 */
#include "import/kineto_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

#define CORR_MAX (1u << 26)	/* copy/memset API calls remembered; beyond, "async unknown" */

static size_t corr_slot(const struct apx_ki *ki, uint64_t corr)
{
	size_t j = (size_t)((corr * 0x9e3779b97f4a7c15ull) >> 20) & (ki->corr_cap - 1);

	while (ki->corr[j].flags && ki->corr[j].corr != corr)
		j = (j + 1) & (ki->corr_cap - 1);
	return j;
}

uint8_t apx_ki_corr_get(const struct apx_ki *ki, uint64_t corr)
{
	return ki->corr_cap ? ki->corr[corr_slot(ki, corr)].flags : 0;
}

static int corr_put(struct apx_ki *ki, uint64_t corr, uint8_t flags)
{
	size_t j;

	if ((ki->ncorr + 1) * 2 > ki->corr_cap) {
		size_t cap = ki->corr_cap ? ki->corr_cap * 2 : 1024;
		struct apx_ki_corr *old = ki->corr;
		size_t old_cap = ki->corr_cap;

		if (ki->ncorr >= CORR_MAX)
			return 0;
		ki->corr = calloc(cap, sizeof(*ki->corr));
		if (!ki->corr) {
			ki->corr = old;
			return -ENOMEM;
		}
		ki->corr_cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].flags)
				ki->corr[corr_slot(ki, old[i].corr)] = old[i];
		free(old);
	}
	j = corr_slot(ki, corr);
	if (!ki->corr[j].flags)
		ki->ncorr++;
	ki->corr[j].corr = corr;
	ki->corr[j].flags = flags;
	return 0;
}

static struct apx_ki_thread *thread_get(struct apx_ki *ki, int64_t pid, int64_t tid)
{
	struct apx_ki_thread *t;

	if (ki->last_thread < ki->nthreads && ki->threads[ki->last_thread].pid == pid &&
	    ki->threads[ki->last_thread].tid == tid)
		return &ki->threads[ki->last_thread];
	for (size_t i = 0; i < ki->nthreads; i++)
		if (ki->threads[i].pid == pid && ki->threads[i].tid == tid) {
			ki->last_thread = i;
			return &ki->threads[i];
		}
	if (ki->nthreads == APX_KI_THREADS_MAX)
		return NULL;
	t = &ki->threads[ki->nthreads];
	t->pid = pid;
	t->tid = tid;
	t->name[0] = 0;
	ki->last_thread = ki->nthreads++;
	return t;
}

static int is_cpu_side(enum apx_kcat c)
{
	return c == APX_KCAT_RUNTIME || c == APX_KCAT_DRIVER || c == APX_KCAT_ANNOTATION ||
	       c == APX_KCAT_CPU_OP;
}

static void metadata(struct apx_ki *ki, const struct apx_kev *ev)
{
	if (!ev->pid_num || !ev->meta_name[0])
		return;
	if (!strcmp(ev->name, "process_name") && ki->has_pid && ev->pid == ki->pid)
		snprintf(ki->process_name, sizeof(ki->process_name), "%.63s", ev->meta_name);
	if (!strcmp(ev->name, "thread_name") && ev->tid_num && ev->pid > 0 && ev->tid > 0) {
		struct apx_ki_thread *t = thread_get(ki, ev->pid, ev->tid);

		if (t)
			snprintf(t->name, sizeof(t->name), "%.63s", ev->meta_name);
	}
}

int apx_ki_scan(struct apx_ki *ki, const struct apx_kev *ev)
{
	int64_t end;
	int async;

	if (ev->ph == 'M')
		metadata(ki, ev);
	if (ev->ph != 'X' || !ev->has_ts)
		return 0;
	end = ev->ts_ns + (ev->dur_ns > 0 ? ev->dur_ns : 0);	/* both bounded: no overflow */
	if (!ki->has_span || ev->ts_ns < ki->first_ts)
		ki->first_ts = ev->ts_ns;
	if (!ki->has_span || end > ki->last_ts)
		ki->last_ts = end;
	ki->has_span = 1;
	if (ev->cat == APX_KCAT_SYNC)
		ki->cupti_syncs++;
	if ((ev->cat == APX_KCAT_KERNEL || ev->cat == APX_KCAT_MEMCPY || ev->cat == APX_KCAT_MEMSET) &&
	    (ev->have & 1u << APX_KARG_DEVICE) && ev->arg[APX_KARG_DEVICE] >= 0 &&
	    ev->arg[APX_KARG_DEVICE] < 64)
		ki->devices_used |= 1ull << ev->arg[APX_KARG_DEVICE];
	if (!is_cpu_side(ev->cat) || !ev->pid_num)
		return 0;
	if (!ki->has_pid && ev->pid > 0) {
		ki->has_pid = 1;
		ki->pid = ev->pid;
	}
	if (ev->tid_num && ev->pid > 0 && ev->tid > 0)
		(void)thread_get(ki, ev->pid, ev->tid);
	if ((ev->cat == APX_KCAT_RUNTIME || ev->cat == APX_KCAT_DRIVER) &&
	    (ev->have & 1u << APX_KARG_CORRELATION) && (async = apx_kname_api_async(ev->name)) >= 0)
		return corr_put(ki, (uint64_t)ev->arg[APX_KARG_CORRELATION],
				APX_KI_CORR_USED | (async ? APX_KI_CORR_ASYNC : 0));
	return 0;
}
