/*
 * hotspots.c - what each source line caused (stacks.h, struct apx_an_hotspot): the kernels,
 * copies and memsets launched from it with their device time, the host syncs called there and
 * their wait, and the host samples whose line it is, in the whole run and inside the steady
 * window; the backward kernels backward.c gave the line apart (gpu_bwd_ns). Sorted by GPU time
 * (forward + backward), then host time; user lines first unless model->frames_all.
 * Called by apx_model_finish() (finish.c) after stacks.c; read by the report (hotspots
 * section) and the report-properties test.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/store.h"
#include "analysis/views.h"

#include "base/banned.h"

static int in_steady(const struct apx_model *m, uint64_t t)
{
	return m->steady_end_ns > m->steady_start_ns && t >= m->steady_start_ns &&
	       t < m->steady_end_ns;
}

/* The row of a stack field, NULL for none. */
static struct apx_an_hotspot *row(const struct apx_model *m, struct apx_an_hotspot *rows,
				  uint32_t stack)
{
	uint32_t l = apx_stack_line(m, stack);

	return l == UINT32_MAX ? NULL : &rows[l];
}

static void gpu_work(const struct apx_model *m, struct apx_an_hotspot *rows)
{
	const struct apx_store *st = m->store;
	struct apx_an_hotspot *h;

	for (size_t i = 0; i < st->k.n; i++) {
		if (!(h = row(m, rows, st->k.stack[i])))
			continue;
		h->gpu_ns += st->k.dur[i];
		h->launches++;
		if (in_steady(m, st->k.start[i])) {
			h->st_gpu_ns += st->k.dur[i];
			h->st_launches++;
		}
	}
	for (size_t i = 0; m->bwd.kernel_line && i < st->k.n; i++) {	/* backward.c */
		if (m->bwd.kernel_line[i] == UINT32_MAX)
			continue;
		h = &rows[m->bwd.kernel_line[i]];
		h->gpu_bwd_ns += st->k.dur[i];
		h->bwd_launches++;
		if (in_steady(m, st->k.start[i]))
			h->st_gpu_bwd_ns += st->k.dur[i];
	}
	for (size_t i = 0; i < st->c.n; i++) {
		if (!(h = row(m, rows, st->c.stack[i])))
			continue;
		h->copies++;
		h->copy_ns += apx_view_dur(st->c.start[i], st->c.end[i]);
		h->copy_bytes += st->c.bytes[i];
		h->pageable_copies += st->c.src[i] == APX_MEM_PAGEABLE ||
				      st->c.dst[i] == APX_MEM_PAGEABLE;
	}
	for (size_t i = 0; i < st->s.n; i++) {
		if (!(h = row(m, rows, st->s.stack[i])))
			continue;
		h->copies++;
		h->copy_ns += apx_view_dur(st->s.start[i], st->s.end[i]);
	}
}

static void host_work(const struct apx_model *m, struct apx_an_hotspot *rows)
{
	const struct apx_store *st = m->store;
	struct apx_an_hotspot *h;

	for (size_t i = 0; i < st->y.n; i++) {
		if (st->y.kind[i] == APX_SYNC_KIND_STREAM_WAIT_EVENT)
			continue;	/* a device-side wait: no host waits in it */
		if (!(h = row(m, rows, st->y.stack[i])))
			continue;
		h->syncs++;
		h->sync_wait_ns += st->y.end[i] - st->y.start[i];
		h->st_syncs += in_steady(m, st->y.start[i]);
	}
	for (size_t i = 0; i < st->smp.n; i++) {
		const struct apx_es_thread *th = &st->threads[st->smp.thread[i]];
		int main_thread = th->file < m->nfiles && th->tid == m->files[th->file].pid;

		/* host time: a thread on a CPU, or the main thread whatever it does (its waits are
		 * the program's); other threads' waits (pools, DataLoader's pin thread) are not */
		if (st->smp.state[i] != APX_TSTATE_RUNNING && !main_thread)
			continue;
		if (!(h = row(m, rows, st->smp.stack[i])))
			continue;
		h->host_ns += st->smp.period[i];
		if (st->smp.state[i] == APX_TSTATE_RUNNING)
			h->host_running_ns += st->smp.period[i];
		if (in_steady(m, st->smp.ts[i]))
			h->st_host_ns += st->smp.period[i];
	}
}

static int cmp_hotspot(const void *a, const void *b, void *ctx)
{
	const struct apx_model *m = ctx;
	const struct apx_an_hotspot *x = a, *y = b;
	const struct apx_an_line *lx = APX_VEC_AT(&m->lines, struct apx_an_line, x->line);
	const struct apx_an_line *ly = APX_VEC_AT(&m->lines, struct apx_an_line, y->line);

	if (!m->frames_all && lx->user != ly->user)
		return lx->user ? -1 : 1;
	if (x->gpu_ns + x->gpu_bwd_ns != y->gpu_ns + y->gpu_bwd_ns)	/* forward + backward */
		return x->gpu_ns + x->gpu_bwd_ns > y->gpu_ns + y->gpu_bwd_ns ? -1 : 1;
	if (x->host_ns != y->host_ns)
		return x->host_ns > y->host_ns ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;	/* first seen first */
}

int apx_hotspots_build(struct apx_model *m)
{
	struct apx_an_hotspot *rows;
	int r = 0;

	if (!m->has_stacks || !m->lines.n)
		return 0;
	rows = calloc(m->lines.n, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->lines.n; i++)
		rows[i].line = (uint32_t)i;
	gpu_work(m, rows);
	host_work(m, rows);
	for (size_t i = 0; i < m->lines.n && r == 0; i++)
		if (rows[i].launches || rows[i].copies || rows[i].syncs || rows[i].host_ns ||
		    rows[i].bwd_launches)
			r = apx_vec_push(&m->hotspots, &rows[i]);
	free(rows);
	if (r == 0 && m->hotspots.n > 1)
		qsort_r(m->hotspots.data, m->hotspots.n, sizeof(struct apx_an_hotspot), cmp_hotspot, m);
	return r;
}
