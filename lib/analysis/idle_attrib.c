/*
 * idle_attrib.c - one cause per GPU-idle nanosecond of the steady state.
 * Every idle gap of a device's sweep (timeline.c) is cut at the steady window: the part before
 * it is start-up, the part after it teardown, and every ns inside it gets exactly one cause,
 * the first of this list that holds for it:
 *   collector  (first) a launch replayed by the range profiler (apx analyze --replay: a
 *              kernel without times) whose correlation id lies between those of the
 *              activities before and after the gap: its passes ran there, the collector's
 *              own cost (the summary's replay time), not the program's;
 *   uvm        the host faulted unified-memory pages back during the gap (CPU faults,
 *              migrations to the host: their records mark when, not how long it stalled);
 *   sync       a synchronization returned inside the gap: the wait up to its return, then the
 *              host's work after it (without the sync that work overlaps the GPU's), unless
 *              the host was in a copy call then or the gap ends with a host->device copy (the
 *              host was producing that input: data). A host blocked in a sync during a gap
 *              that the sync does not end did not cause it (the GPU had its work queued).
 *              After such a gap the GPU's queue is empty and the host must get ahead again:
 *              until it is (APX_REFILL_BUSY_NS of GPU busy time with no gap in it but ones
 *              under APX_REFILL_TIGHT_NS, the ~1 us between queued kernels: a lead that the
 *              host's hiccups no longer drain), what the later gaps would give to launch
 *              overhead, unknown or the host's in-step work is the sync's too (the refill).
 *              A refill that the next sync or the end cuts short is the sync's too when the
 *              host's own work over the steady window (less its time blocked in syncs and
 *              the collector's cost per launch) is shorter than the GPU's busy time
 *              (without the syncs it would get ahead: the H200's sync_item planted runs
 *              1.17 s of host work against 1.28 s of GPU work), else it goes back (a host
 *              slower than the GPU leaves those gaps with or without the sync). All of it
 *              only when the steady state is not launch-bound; in a launch-bound one the
 *              host sets the pace with or without the sync, and the refill goes back to
 *              those causes (decided after the sweep, apx_idle_resolve, as launch-bound is);
 *   alloc      an allocator call (cudaMalloc, cudaFree...: alloc_time.h) returned inside the
 *              gap, after any sync that returned there: the time up to its return (a
 *              cudaFree waits for the device to finish, then returns the memory; the
 *              caching allocator calls them on a cache miss, after empty_cache()), then the
 *              host's work after it, as for a sync (no refill is counted); the time inside
 *              allocator calls is the allocator's in the gaps below too;
 *   staging    the host was inside the call of a pageable copy of > 64 KiB (staging it
 *              through the driver's pinned buffer); or the gap begins with such a copy (to the
 *              device, or to pageable memory: y.cpu()) and a sync returns in it: the copy's
 *              own sync (PyTorch's .to('cuda') without non_blocking waits for the copy: the
 *              host reads nothing back), the wait and the host's launching after it, which a
 *              pinned non_blocking copy overlaps with the copy (the part after copies to
 *              pageable memory is kept apart, staging_d2h_ns: sync-copy's, not pageable-copy's);
 *   copy-calls the host was inside the call of a small copy, or the gap lies between two small
 *              copies, a sync in it or not (per-call overhead: Python, the call, the DMA
 *              set-up, the sync of each blocking .cuda());
 *   data       the gap ends with a host->device copy: the host was producing the input;
 *   collector  a gap < 50 us (a launch gap): the collector's own cost per launch (kv
 *              collector_launch_cost_ns), which a run without apx does not pay;
 *   launch     the rest of a launch gap: the host launching slower than the GPU runs; and,
 *              when the steady state is launch-bound (the short gaps' launch overhead >= 10 %
 *              of it, kernels on average shorter than twice those gaps), a longer gap that
 *              nothing above explains, inside a step (no step boundary in it) or under 1 ms,
 *              less the collector's cost: the host's own work between two launches
 *              (autograd, zero_grad, the optimizer's Python, ops that launch nothing), which a
 *              captured or compiled step does not repeat; decided after the sweep
 *              (apx_idle_resolve), from the short gaps alone;
 *   unknown    nothing in the trace says (such a gap in a steady state that is not
 *              launch-bound; a gap of 1 ms or more between steps: data, I/O, Python...).
 * The copy calls' host times come from the MEMCPY records' api_enter/api_exit fields; traces
 * without them (model->copy_host_times 0) fall back to the copies' GPU-side intervals, which
 * never meet an idle gap of their device: staging and in-call overhead are then not seen, and
 * that idle time falls to the gap-level causes (copy-calls between small copies, data).
 * With capture ranges (capture.c) timeline.c hands over each collected part of a gap apart:
 * time between two ranges is not idle, start-up or teardown.
 * Called by timeline.c inside apx_model_finish(); allocates its interval arrays once.
 */
#include "analysis/idle_attrib.h"

#include "analysis/alloc_time.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store.h"
#include "analysis/timeline.h"

#include "base/banned.h"

struct pair {
	uint64_t s, e;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The union of n intervals (p is sorted here). */
static int spans_build(struct apx_spans *sp, struct pair *p, size_t n)
{
	qsort(p, n, sizeof(*p), cmp_pair);
	sp->n = 0;
	sp->s = malloc((n + 1) * sizeof(*sp->s));
	sp->e = malloc((n + 1) * sizeof(*sp->e));
	if (!sp->s || !sp->e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (p[i].e <= p[i].s)
			continue;
		if (sp->n && p[i].s <= sp->e[sp->n - 1]) {
			if (p[i].e > sp->e[sp->n - 1])
				sp->e[sp->n - 1] = p[i].e;
			continue;
		}
		sp->s[sp->n] = p[i].s;
		sp->e[sp->n++] = p[i].e;
	}
	return 0;
}

static void spans_free(struct apx_spans *sp)
{
	free(sp->s);
	free(sp->e);
	memset(sp, 0, sizeof(*sp));
}

/* The first span ending after a. */
static size_t spans_first(const struct apx_spans *sp, uint64_t a)
{
	size_t lo = 0, hi = sp->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->e[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int apx_spans_meet(const struct apx_spans *sp, uint64_t a, uint64_t b)
{
	size_t i = spans_first(sp, a);

	return i < sp->n && sp->s[i] < b;
}

void apx_idle_window(struct apx_model *m)
{
	const struct apx_an_steps *st = &m->steady;

	if (st->source != APX_STEPS_NONE && st->last_ns > st->first_ns) {
		/* steps that start before the warm-up ends hold first-call work: start-up */
		m->steady_start_ns = m->warmup_end_ns > st->first_ns && m->warmup_end_ns < st->last_ns
					     ? m->warmup_end_ns : st->first_ns;
		m->steady_end_ns = st->last_ns;
		return;
	}
	m->steady_start_ns = m->warmup_end_ns > m->run_start_ns ? m->warmup_end_ns : m->run_start_ns;
	m->steady_end_ns = m->run_end_ns > m->steady_start_ns ? m->run_end_ns : UINT64_MAX;
}

enum apx_phase apx_phase_of(const struct apx_model *m, uint64_t ts)
{
	if (ts < m->steady_start_ns)
		return APX_PHASE_STARTUP;
	return ts < m->steady_end_ns ? APX_PHASE_STEADY : APX_PHASE_TEARDOWN;
}

int apx_idle_ctx_init(struct apx_idle_ctx *c, const struct apx_model *m)
{
	size_t n = m->uvm.n + m->copies.n + m->graphs.n + (m->store ? m->store->a.n : 0) + 1, k;
	struct pair *p = malloc(n * sizeof(*p));
	int r;

	memset(c, 0, sizeof(*c));
	c->m = m;
	c->sync_ends = malloc((m->syncs.n + 1) * sizeof(*c->sync_ends));
	c->replayed = malloc(((m->store ? m->store->ku.n : 0) + 1) * sizeof(*c->replayed));
	c->graph_starts = malloc((m->graphs.n + 1) * sizeof(*c->graph_starts));
	c->capture_from = malloc((m->graphs.n + 1) * sizeof(*c->capture_from));
	if (!p || !c->sync_ends || !c->replayed || !c->graph_starts || !c->capture_from) {
		free(p);
		apx_idle_ctx_release(c);
		return -ENOMEM;
	}
	/* each graph's first run, and when the graphs before it had last run: its capture lies
	 * between (pairs sorted by first run) */
	for (size_t i = 0; i < m->graphs.n; i++) {
		const struct apx_an_graph *g = APX_VEC_AT(&m->graphs, struct apx_an_graph, i);

		p[i] = (struct pair){ g->first_ns, g->last_ns };
	}
	qsort(p, m->graphs.n, sizeof(*p), cmp_pair);
	for (size_t i = 0, before = 0; i < m->graphs.n; i++) {
		c->graph_starts[i] = p[i].s;
		c->capture_from[i] = i ? before : UINT64_MAX;
		before = p[i].e > before ? p[i].e : before;
	}
	c->ngraph_starts = m->graphs.n;
	k = 0;
	for (size_t i = 0; i < m->uvm.n; i++) {
		const struct apx_an_uvm *u = APX_VEC_AT(&m->uvm, struct apx_an_uvm, i);

		if (u->kind == APX_UVM_MIGRATE_D2H || u->kind == APX_UVM_CPU_FAULT)
			p[k++] = (struct pair){ u->start, u->end > u->start ? u->end : u->start + 1 };
	}
	r = spans_build(&c->uvm_host, p, k);
	for (size_t i = 0; i < m->syncs.n; i++) {
		const struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);

		if (s->kind != APX_SYNC_KIND_STREAM_WAIT_EVENT)	/* GPU-side: the host does not wait */
			c->sync_ends[c->nsync_ends++] = s->end;
	}
	qsort(c->sync_ends, c->nsync_ends, sizeof(*c->sync_ends), cmp_u64);
	for (size_t i = 0; m->store && i < m->store->ku.n; i++)
		if (m->store->ku.corr[i])
			c->replayed[c->nreplayed++] = m->store->ku.corr[i];
	qsort(c->replayed, c->nreplayed, sizeof(*c->replayed), cmp_u32);
	for (int small = 0; small < 2 && r == 0; small++) {
		k = 0;
		for (size_t i = 0; i < m->copies.n; i++) {
			const struct apx_an_copy *cp = APX_VEC_AT(&m->copies, struct apx_an_copy, i);
			int is_small = apx_copy_small(cp->bytes);

			if (!cp->api_enter || cp->api_exit <= cp->api_enter ||
			    (cp->kind != APX_COPY_H2D && cp->kind != APX_COPY_D2H) || is_small != small)
				continue;
			if (!small && cp->src != APX_MEM_PAGEABLE && cp->dst != APX_MEM_PAGEABLE)
				continue;	/* a large pinned copy stages nothing */
			p[k++] = (struct pair){ cp->api_enter, cp->api_exit };
		}
		r = spans_build(small ? &c->calls : &c->staging, p, k);
	}
	k = 0;
	for (size_t i = 0; r == 0 && m->store && i < m->store->a.n; i++)
		if (apx_alloc_call_of(apx_store_string(m->store, m->store->a.name[i])))
			p[k++] = (struct pair){ m->store->a.start[i], m->store->a.end[i] };
	if (r == 0)
		r = spans_build(&c->alloc, p, k);
	free(p);
	if (r < 0)
		apx_idle_ctx_release(c);
	return r;
}

void apx_idle_ctx_release(struct apx_idle_ctx *c)
{
	spans_free(&c->uvm_host);
	spans_free(&c->staging);
	spans_free(&c->calls);
	spans_free(&c->alloc);
	free(c->sync_ends);
	c->sync_ends = NULL;
	free(c->replayed);
	c->replayed = NULL;
	c->nreplayed = 0;
	c->nsync_ends = 0;
	free(c->graph_starts);
	c->graph_starts = NULL;
	free(c->capture_from);
	c->capture_from = NULL;
	c->ngraph_starts = 0;
}

/* Whether the gap [a, b] lies where the next CUDA graph to run first was captured: after every
 * graph before it had run, before its first kernel. */
static int in_capture(const struct apx_idle_ctx *c, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = c->ngraph_starts;

	while (lo < hi) {	/* first start >= b */
		size_t mid = lo + (hi - lo) / 2;

		if (c->graph_starts[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ngraph_starts && c->capture_from[lo] != UINT64_MAX &&
	       c->capture_from[lo] <= a;
}

/* Whether a replayed launch's correlation id lies strictly between those of the activities
 * around the gap (in either order: streams interleave). */
static int replayed_in(const struct apx_idle_ctx *c, const struct apx_gap_edges *ed)
{
	uint32_t lo = ed->prev_corr < ed->next_corr ? ed->prev_corr : ed->next_corr;
	uint32_t hi = ed->prev_corr < ed->next_corr ? ed->next_corr : ed->prev_corr;
	size_t a = 0, b = c->nreplayed;

	if (!c->nreplayed || !lo || hi - lo < 2)
		return 0;
	while (a < b) {		/* the first id > lo */
		size_t mid = a + (b - a) / 2;

		if (c->replayed[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < c->nreplayed && c->replayed[a] < hi;
}

/* The last synchronization return in [a, b], or 0 when none. */
static uint64_t sync_returned_in(const struct apx_idle_ctx *c, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = c->nsync_ends;

	while (lo < hi) {	/* first end > b */
		size_t mid = lo + (hi - lo) / 2;

		if (c->sync_ends[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && c->sync_ends[lo - 1] >= a ? c->sync_ends[lo - 1] : 0;
}

/* The last return of an allocator call in [a, b], or 0 when none. */
static uint64_t alloc_returned_in(const struct apx_idle_ctx *c, uint64_t a, uint64_t b)
{
	const struct apx_spans *sp = &c->alloc;
	size_t lo = 0, hi = sp->n;

	while (lo < hi) {	/* first span ending after b */
		size_t mid = lo + (hi - lo) / 2;

		if (sp->e[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && sp->e[lo - 1] >= a ? sp->e[lo - 1] : 0;
}

/* The index of the first step bound after time a (0 .. count + 1). */
static size_t bound_after(const struct apx_model *m, uint64_t a)
{
	const uint64_t *s = m->steady.bounds;
	size_t lo = 0, hi = m->steady.count + 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the gap [a, b) lies inside one step: after the first step's start, before the last
 * step's end, with no step boundary in (a, b] (a gap that ends where a step starts, or holds
 * the start of a step's range, is between steps). */
static int inside_step(const struct apx_model *m, uint64_t a, uint64_t b)
{
	size_t lo;

	if (!m->steady.bounds || !m->steady.count)
		return 0;
	lo = bound_after(m, a);
	return lo > 0 && lo <= m->steady.count && b < m->steady.bounds[lo];
}

/* The step that time a lies in (a boundary gap goes with the step before it), or the first
 * or last one outside them. */
static size_t step_of(const struct apx_model *m, uint64_t a)
{
	size_t lo = bound_after(m, a);

	return lo == 0 ? 0 : lo - 1 < m->steady.count ? lo - 1 : m->steady.count - 1;
}

/* Walks [a, b) over the interval lists (in priority order): each ns covered by one of them
 * goes to the first list's cause; returns the ns covered by none. */
static uint64_t cover(const struct apx_spans *const *lists, const unsigned *causes, size_t nl,
		      uint64_t a, uint64_t b, uint64_t *part)
{
	size_t idx[4];
	uint64_t t = a, rest = 0;

	for (size_t l = 0; l < nl; l++)
		idx[l] = spans_first(lists[l], a);
	while (t < b) {
		uint64_t next = b;
		int who = -1;

		for (size_t l = 0; l < nl; l++) {
			const struct apx_spans *sp = lists[l];

			while (idx[l] < sp->n && sp->e[idx[l]] <= t)
				idx[l]++;
			if (idx[l] >= sp->n)
				continue;
			if (sp->s[idx[l]] <= t) {
				if (who < 0)
					who = (int)l;
				if (sp->e[idx[l]] < next)
					next = sp->e[idx[l]];
			} else if (sp->s[idx[l]] < next) {
				next = sp->s[idx[l]];
			}
		}
		if (who >= 0)
			part[causes[who]] += next - t;
		else
			rest += next - t;
		t = next;
	}
	return rest;
}

/* Whose is the wait of a sync that returns inside a gap (and the host's work after it)? A
 * blocking .to('cuda') from pageable memory waits for its own copy, and a copy to pageable
 * memory (y.cpu()) holds the host until it has staged the bytes out (staging); so does each
 * blocking .cuda() of a small tensor, and a gap from one small copy to the next is their
 * per-call overhead (copy-calls: one batched copy pays it once); else the sync's. */
static unsigned sync_gap_owner(const struct apx_gap_edges *ed)
{
	if (ed->prev_pageable_h2d || ed->prev_pageable_d2h)
		return APX_IDLE_STAGING;
	if (ed->prev_small_copy && ed->next_small_copy)
		return APX_IDLE_COPY_CALLS;
	return APX_IDLE_SYNC;
}

/* A refill's pending gaps: the sync's (the host got ahead again), or cut (the next sync or
 * the end came first), decided in refill_resolve(). */
static void refill_end(struct apx_an_timeline *t, int ahead)
{
	for (unsigned k = 0; k <= APX_IDLE_STEP_HOST; k++) {
		if (ahead) {
			t->refill_ns[k] += t->pend_ns[k];
			t->refill_gaps[k] += t->pend_gaps[k];
		} else {
			t->cut_ns[k] += t->pend_ns[k];
			t->cut_gaps[k] += t->pend_gaps[k];
		}
		t->pend_ns[k] = t->pend_gaps[k] = 0;
	}
	t->refill = 0;
}

/* The refill's state after the gap [a, b): a sync's gap starts one (ending the one before,
 * which the host never got out of: cut); APX_REFILL_BUSY_NS of GPU busy time with no gap
 * but tight ones (the host that far ahead: its hiccups no longer idle the GPU) ends it with
 * the host ahead. */
static void refill_track(struct apx_an_timeline *t, uint64_t a, uint64_t b, int sync_gap)
{
	uint64_t busy = t->refill_last_ns && a > t->refill_last_ns ? a - t->refill_last_ns : 0;

	if (sync_gap) {
		if (t->refill)
			refill_end(t, 0);
		t->refill = 1;
		t->refill_lead_ns = 0;
	} else if (t->refill && (t->refill_lead_ns += busy) >= APX_REFILL_BUSY_NS) {
		refill_end(t, 1);
	} else if (b - a >= APX_REFILL_TIGHT_NS) {
		t->refill_lead_ns = 0;		/* the host fell behind again */
	}
	t->refill_last_ns = b;
}

unsigned apx_idle_gap(const struct apx_idle_ctx *c, struct apx_an_timeline *t, uint64_t a,
		      uint64_t b, const struct apx_gap_edges *ed)
{
	const struct apx_model *m = c->m;
	uint64_t part[APX_IDLE__COUNT + 2] = { 0 };	/* + APX_IDLE_STEP_HOST, _REFILL */
	uint64_t moved[APX_IDLE__COUNT + 1] = { 0 };	/* into the refill, by cause */
	uint64_t lo = a > m->steady_start_ns ? a : m->steady_start_ns;
	uint64_t hi = b < m->steady_end_ns ? b : m->steady_end_ns;
	uint64_t rest, ret, aret;
	unsigned best = APX_IDLE_UNKNOWN;
	static const unsigned causes[] = { APX_IDLE_STAGING, APX_IDLE_COPY_CALLS, APX_IDLE_ALLOC };
	const struct apx_spans *lists[] = { &c->staging, &c->calls, &c->alloc };

	if (a < m->steady_start_ns)
		t->startup_idle_ns += (b < m->steady_start_ns ? b : m->steady_start_ns) - a;
	if (b > m->steady_end_ns)
		t->teardown_idle_ns += b - (a > m->steady_end_ns ? a : m->steady_end_ns);
	if (hi <= lo)
		return APX_IDLE_UNKNOWN;
	ret = sync_returned_in(c, a, b);
	aret = alloc_returned_in(c, a, b);
	if (replayed_in(c, ed)) {
		/* the range profiler replayed a launch here: the collector's */
		part[APX_IDLE_COLLECTOR] += hi - lo;
		ret = 0;	/* no refill either: the replay, not the sync, drained the queue */
	} else if (apx_spans_meet(&c->uvm_host, a, b)) {
		/* fault records mark when pages moved, not how long the host stalled on them: a
		 * gap in which the host faulted pages back is the faults' */
		part[APX_IDLE_UVM] += hi - lo;
	} else if ((c->ngraph_starts &&
		    bsearch(&b, c->graph_starts, c->ngraph_starts, sizeof(b), cmp_u64)) ||
		   (ret && in_capture(c, a, b))) {
		/* the gap ends at a graph's first kernel: the host was capturing and instantiating
		 * it; or a sync returned in it while the next graph was being captured:
		 * torch.cuda.graph() synchronizes before it captures (the graph's, not the sync's) */
		part[APX_IDLE_GRAPH] += hi - lo;
	} else if (aret && aret >= ret) {
		/* the host was in the allocator (a cudaFree waits for the GPU), then worked
		 * alone: as for a sync, unless it produced the gap's input */
		uint64_t r = aret < lo ? lo : aret > hi ? hi : aret;

		part[APX_IDLE_ALLOC] += r - lo;
		rest = cover(lists, causes, 3, r, hi, part);
		part[ed->next_h2d ? APX_IDLE_DATA : APX_IDLE_ALLOC] += rest;
		ret = 0;	/* no sync's refill */
	} else if (ret) {
		uint64_t r = ret < lo ? lo : ret > hi ? hi : ret;

		/* the wait, then the host's work that the sync kept from overlapping the GPU's:
		 * the sync's, unless the host was in a copy call or produced the gap's input; after
		 * a pageable copy to the device, the copy's own sync: staging's; between two small
		 * copies, the copy's own sync and the next one's call: their per-call overhead */
		unsigned waited = sync_gap_owner(ed);

		part[waited] += r - lo;
		rest = cover(lists, causes, 3, r, hi, part);
		part[ed->next_h2d && waited != APX_IDLE_COPY_CALLS ? APX_IDLE_DATA : waited] += rest;
	} else {
		rest = cover(lists, causes, 3, lo, hi, part);
		if (ed->prev_small_copy && ed->next_small_copy) {
			part[APX_IDLE_COPY_CALLS] += rest;
		} else if (ed->next_h2d) {
			part[APX_IDLE_DATA] += rest;
		} else if (b - a < APX_LAUNCH_GAP_NS || b - a < APX_STALL_NS || inside_step(m, a, b)) {
			/* the gap ends with a launch made under the collector: its cost is its own */
			uint64_t self = m->launch_cost_ns < rest ? m->launch_cost_ns : rest;

			part[APX_IDLE_COLLECTOR] += self;
			part[b - a < APX_LAUNCH_GAP_NS ? APX_IDLE_LAUNCH : APX_IDLE_STEP_HOST] += rest - self;
		} else {
			part[APX_IDLE_UNKNOWN] += rest;
		}
	}
	if (t->refill && !ret) {		/* the sync's refill: kept apart, by cause */
		static const unsigned take[] = { APX_IDLE_LAUNCH, APX_IDLE_UNKNOWN, APX_IDLE_STEP_HOST };

		for (size_t i = 0; i < sizeof(take) / sizeof(take[0]); i++) {
			moved[take[i]] = part[take[i]];
			t->pend_ns[take[i]] += part[take[i]];
			part[APX_IDLE_REFILL] += part[take[i]];
			part[take[i]] = 0;
		}
	}
	for (unsigned k = 0; k <= APX_IDLE_REFILL; k++) {
		if (k < APX_IDLE__COUNT)
			t->idle_by_cause[k] += part[k];
		if (part[k] > part[best])
			best = k;
	}
	if (best == APX_IDLE_REFILL) {
		unsigned orig = APX_IDLE_LAUNCH;	/* the refill's largest cause */

		for (unsigned k = 0; k <= APX_IDLE_STEP_HOST; k++)
			if (moved[k] > moved[orig])
				orig = k;
		t->pend_gaps[orig]++;
	}
	refill_track(t, a, b, ret && best == APX_IDLE_SYNC);
	/* per step as if no refill took them (the refill is decided later; gpu-starvation's
	 * per-step estimate is capped by the unknown idle that is left) */
	if (c->unknown_per_step && (part[APX_IDLE_UNKNOWN] || part[APX_IDLE_STEP_HOST] ||
				    moved[APX_IDLE_UNKNOWN] || moved[APX_IDLE_STEP_HOST])) {
		size_t s = step_of(m, lo);

		c->unknown_per_step[s] += part[APX_IDLE_UNKNOWN] + moved[APX_IDLE_UNKNOWN];
		c->step_host_per_step[s] += part[APX_IDLE_STEP_HOST] + moved[APX_IDLE_STEP_HOST];
	}
	if (best == APX_IDLE_REFILL)
		return APX_IDLE_REFILL;
	t->step_host_ns += part[APX_IDLE_STEP_HOST];
	if (ed->prev_pageable_d2h)	/* staging after a copy to pageable memory: sync-copy's */
		t->staging_d2h_ns += part[APX_IDLE_STAGING];
	if (best == APX_IDLE_STEP_HOST)
		t->step_host_gaps++;	/* its cause is decided by apx_idle_resolve() */
	else
		t->gaps_by_cause[best]++;
	return best;
}

/* Launch-bound, from the short gaps (< 50 us) alone: their launch overhead is >= 10 % of the
 * GPU's active time after warm-up and kernels are on average shorter than twice those gaps
 * (else the gaps, however many, are small next to the work). */
static int launch_bound(const struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_LAUNCH] + m->gpu.refill_ns[APX_IDLE_LAUNCH] +
			m->gpu.pend_ns[APX_IDLE_LAUNCH] +	/* a refill's: launch gaps still */
			m->gpu.cut_ns[APX_IDLE_LAUNCH];
	uint64_t gaps = m->gpu.gaps_by_cause[APX_IDLE_LAUNCH] + m->gpu.gaps_by_cause[APX_IDLE_COLLECTOR] +
			m->gpu.refill_gaps[APX_IDLE_LAUNCH] + m->gpu.pend_gaps[APX_IDLE_LAUNCH] +
			m->gpu.cut_gaps[APX_IDLE_LAUNCH];
	double kernel_ns = 0;

	if (!st || !st->k.n || !gaps || !m->steady_ns ||
	    (double)idle < APX_LAUNCH_BOUND_SHARE * (double)m->steady_ns)
		return 0;
	for (size_t i = 0; i < st->k.n; i++)
		kernel_ns += (double)st->k.dur[i];
	return kernel_ns / (double)st->k.n <= 2.0 * (double)idle / (double)gaps;
}

/* A sync's refill (kept apart by cause): the sync's, or in a launch-bound steady state back
 * to its causes (the host's in-step work with the rest of it, made launch overhead next). */
static void refill_resolve(struct apx_an_timeline *t, int bound, int host_ahead)
{
	static const unsigned back[] = { APX_IDLE_LAUNCH, APX_IDLE_UNKNOWN };

	if (t->refill)		/* the host never got ahead again before the end */
		refill_end(t, 0);
	for (unsigned k = 0; k <= APX_IDLE_STEP_HOST; k++) {
		if (!bound && host_ahead) {	/* without the syncs the host gets ahead */
			t->refill_ns[k] += t->cut_ns[k];
			t->refill_gaps[k] += t->cut_gaps[k];
		} else if (k == APX_IDLE_STEP_HOST) {	/* a host slower than the GPU */
			t->step_host_ns += t->cut_ns[k];
			t->step_host_gaps += t->cut_gaps[k];
		} else {
			t->idle_by_cause[k] += t->cut_ns[k];
			t->gaps_by_cause[k] += t->cut_gaps[k];
		}
	}
	if (!bound) {
		for (unsigned k = 0; k <= APX_IDLE_STEP_HOST; k++) {
			t->idle_by_cause[APX_IDLE_SYNC] += t->refill_ns[k];
			t->gaps_by_cause[APX_IDLE_SYNC] += t->refill_gaps[k];
		}
		return;
	}
	for (size_t i = 0; i < sizeof(back) / sizeof(back[0]); i++) {
		t->idle_by_cause[back[i]] += t->refill_ns[back[i]];
		t->gaps_by_cause[back[i]] += t->refill_gaps[back[i]];
	}
	t->step_host_ns += t->refill_ns[APX_IDLE_STEP_HOST];
	t->step_host_gaps += t->refill_gaps[APX_IDLE_STEP_HOST];
}

uint64_t apx_steady_blocked_ns(const struct apx_model *m)
{
	const struct apx_es_syncs *y = m->store ? &m->store->y : NULL;
	uint64_t ns = 0;

	for (size_t i = 0; y && i < y->n; i++) {
		uint64_t a = y->start[i] > m->steady_start_ns ? y->start[i] : m->steady_start_ns;
		uint64_t b = y->end[i] < m->steady_end_ns ? y->end[i] : m->steady_end_ns;

		if (y->kind[i] != APX_SYNC_KIND_STREAM_WAIT_EVENT && b > a)
			ns += b - a;
	}
	return ns;
}

uint64_t apx_steady_busy_ns(const struct apx_model *m)
{
	const struct apx_an_timeline *g = &m->gpu;
	uint64_t win = m->steady_end_ns > m->steady_start_ns ? m->steady_end_ns - m->steady_start_ns
							     : 0;
	uint64_t idle = g->step_host_ns;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += g->idle_by_cause[c];
	for (unsigned c = 0; c <= APX_IDLE__COUNT; c++)
		idle += g->refill_ns[c] + g->pend_ns[c] + g->cut_ns[c];
	return win > idle ? win - idle : 0;
}

uint64_t apx_steady_host_work_ns(const struct apx_model *m)
{
	const struct apx_es_kernels *k = m->store ? &m->store->k : NULL;
	uint64_t win = m->steady_end_ns > m->steady_start_ns ? m->steady_end_ns - m->steady_start_ns
							     : 0;
	uint64_t blocked = apx_steady_blocked_ns(m), launches = 0, host;

	if (blocked >= win)
		return 0;
	for (size_t i = 0; k && i < k->n; i++)
		launches += k->start[i] >= m->steady_start_ns && k->start[i] < m->steady_end_ns;
	host = win - blocked;
	return host > m->launch_cost_ns * launches ? host - m->launch_cost_ns * launches : 0;
}

/* Does the host's own work over the steady window take less than the GPU's busy time there?
 * Then without the syncs it would get ahead, and a refill that the next sync cut short is the
 * sync's too. */
static int host_ahead(const struct apx_model *m)
{
	uint64_t busy = apx_steady_busy_ns(m);

	return busy && apx_steady_blocked_ns(m) < m->steady_end_ns - m->steady_start_ns &&
	       apx_steady_host_work_ns(m) < busy;
}

void apx_idle_resolve(struct apx_model *m)
{
	unsigned cause;
	int ahead;

	m->launch_bound = launch_bound(m);
	ahead = host_ahead(m);
	cause = m->launch_bound ? APX_IDLE_LAUNCH : APX_IDLE_UNKNOWN;
	for (size_t i = 0; i <= m->timelines.n; i++) {
		struct apx_an_timeline *t = i < m->timelines.n
			? APX_VEC_AT(&m->timelines, struct apx_an_timeline, i) : &m->gpu;

		refill_resolve(t, m->launch_bound, ahead);
		t->idle_by_cause[cause] += t->step_host_ns;
		t->gaps_by_cause[cause] += t->step_host_gaps;
		t->step_host_launch = m->launch_bound;
	}
	for (size_t i = 0; i < m->gaps.n; i++) {
		struct apx_an_gap *g = APX_VEC_AT(&m->gaps, struct apx_an_gap, i);

		if (g->cause == APX_IDLE_STEP_HOST)
			g->cause = (uint8_t)cause;
		else if (g->cause == APX_IDLE_REFILL)	/* (an interrupted refill's too) */
			g->cause = m->launch_bound ? APX_IDLE_LAUNCH : APX_IDLE_SYNC;
	}
	for (size_t s = 0; m->unknown_per_step && !m->launch_bound && s < m->steady.count; s++)
		m->unknown_per_step[s] += m->step_host_per_step[s];
}

const char *apx_idle_cause_name(unsigned cause)
{
	static const char *const names[] = {
		[APX_IDLE_UVM] = "page faults (UVM)",
		[APX_IDLE_GRAPH] = "graph capture",
		[APX_IDLE_SYNC] = "sync wait",
		[APX_IDLE_ALLOC] = "CUDA allocator",
		[APX_IDLE_STAGING] = "pageable copy staging",
		[APX_IDLE_COPY_CALLS] = "small copies' calls",
		[APX_IDLE_DATA] = "input data (host)",
		[APX_IDLE_LAUNCH] = "launch overhead",
		[APX_IDLE_COLLECTOR] = "the collector's own",
		[APX_IDLE_UNKNOWN] = "unknown",
	};
	return cause < APX_IDLE__COUNT ? names[cause] : "?";
}

const char *apx_idle_cause_key(unsigned cause)
{
	static const char *const keys[] = {
		[APX_IDLE_UVM] = "uvm", [APX_IDLE_GRAPH] = "graph", [APX_IDLE_SYNC] = "sync", [APX_IDLE_STAGING] = "staging",
		[APX_IDLE_ALLOC] = "alloc",
		[APX_IDLE_COPY_CALLS] = "copy_calls", [APX_IDLE_DATA] = "data",
		[APX_IDLE_LAUNCH] = "launch", [APX_IDLE_COLLECTOR] = "collector",
		[APX_IDLE_UNKNOWN] = "unknown",
	};
	return cause < APX_IDLE__COUNT ? keys[cause] : "?";
}
