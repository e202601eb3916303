/*
 * steps.c - the program's iterations, found without code changes: from
 * torch.profiler's ProfilerStep#N ranges when the trace has them, else from the most frequent
 * NVTX range name whose ranges follow one another and cover at least half of their span (a
 * library's short ranges inside each step are not steps), else from the repeating sequence of kernel
 * names on the busiest stream (the smallest period that the second half of the run repeats,
 * widened to the program's iteration: the shortest multiple of it with a host gap at one position
 * that nearly every period has and the smaller multiples lack, e.g. 64 identical layers a step or
 * a CUDA graph of repeated kernels a step; the step starts after that gap). Gives the step count, step time (the
 * start of a step to the start of the next, the last one to its end: median, p95, min, max),
 * GPU busy per step, and the start-up before the first step and the teardown
 * after the last (their collected time: capture ranges, capture.c; a step that spans the time
 * between two ranges is left out of the step times, and that time is no host gap). Ranges are
 * the host's: when the GPU does not keep up with them (its queue at their ends, gpu_follows)
 * they are projected onto the GPU work launched inside them (launch times), or refused for the
 * kernel sequence. Reads the
 * kernels from the event store's columns (in time order; streams
 * are the store's, per file and device). Called by apx_model_finish() (finish.c);
 * single-threaded; allocates only scratch arrays that it frees.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model.h"
#include "analysis/views.h"

#include "base/banned.h"

#define MIN_STEPS 3
#define MAX_PERIOD 50000	/* kernels a step at most */
#define CANDIDATES 400		/* periods tried */
#define SAMPLES 512		/* positions compared per period */
#define MATCH 0.97		/* share of positions a period must repeat */
#define WINDOW (1u << 20)	/* kernels looked at, at the start and at the end */
#define GAPS_MAX 32768		/* gaps looked at to widen the period */
#define WIDEN_MAX 256		/* multiples of the shortest period tried */
#define WIDEN_PERIODS 16		/* periods of the gaps looked at a multiple needs at least */
#define WIDEN_KEEP 0.8		/* a multiple's boundary gap within this of the widest's */
#define WIDEN_STANDS 1.3	/* and this times the shortest period's, else that one stays */
#define WIDEN_FLOOR 1000.0	/* ns: a boundary gap this small is no boundary */
#define STEP_COVER 0.5		/* share of their span that a range name's ranges cover */
#define LAUNCH_KNOWN 0.9	/* share of the kernels after the first range whose launch time
				 * must be known to project ranges onto the GPU */

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

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* Step times, GPU busy per step and the run's parts, from step starts s[0..n] (s[n] = the
 * last step's end). A step whose span holds time outside the capture ranges (capture.c: the
 * one from a range's last step to the next range's first) is no step time: it is counted
 * (uncollected) and left out of the statistics, unless no step is whole (a range a step:
 * then each step's collected time is its time). */
static int summarise(struct apx_model *m, const uint64_t *s, size_t n)
{
	struct apx_an_steps *st = &m->steady;
	uint64_t *d = malloc(n * sizeof(*d));
	uint16_t *busy = malloc(n * sizeof(*busy));	/* 0.01 % */
	size_t k = 0, nd = 0;
	int whole_only;

	free(st->bounds);
	st->bounds = malloc((n + 1) * sizeof(*st->bounds));
	if (!d || !busy || !st->bounds) {
		free(d);
		free(busy);
		return -ENOMEM;
	}
	memcpy(st->bounds, s, (n + 1) * sizeof(*s));
	st->uncollected = 0;
	for (size_t i = 0; i < n; i++)
		st->uncollected += apx_an_collected_overlap(m, s[i], s[i + 1]) < s[i + 1] - s[i];
	whole_only = st->uncollected < n;
	/* kernel time inside each step (summed over streams, at most the step's length) */
	for (size_t i = 0; i < n; i++) {
		uint64_t sum = 0, len = apx_an_collected_overlap(m, s[i], s[i + 1]);

		if (whole_only && len < s[i + 1] - s[i])
			continue;
		while (k < m->store->k.n && m->store->k.start[k] < s[i])
			k++;
		for (size_t j = k; j < m->store->k.n && m->store->k.start[j] < s[i + 1]; j++)
			sum += m->store->k.dur[j];
		d[nd] = len;
		busy[nd++] = (uint16_t)(len ? (sum > len ? 10000 : sum * 10000 / len) : 0);
	}
	st->count = n;
	st->first_ns = s[0];
	st->last_ns = s[n];
	st->total_ns = s[n] - s[0];
	qsort(d, nd, sizeof(*d), cmp_u64);
	qsort(busy, nd, sizeof(*busy), cmp_u16);
	st->min_ns = d[0];
	st->max_ns = d[nd - 1];
	st->median_ns = d[nd / 2];
	st->p95_ns = d[(nd * 95) / 100 < nd ? (nd * 95) / 100 : nd - 1];
	st->busy_pct = (double)busy[nd / 2] / 100.0;
	st->setup_ns = apx_an_collected_overlap(m, m->run_start_ns, s[0]);
	st->teardown_ns = apx_an_collected_overlap(m, s[n], m->run_end_ns);
	free(d);
	free(busy);
	return 0;
}

static int is_profiler_step(const struct apx_an_marker *a)
{
	return a->name_len > 13 && !memcmp(a->name, "ProfilerStep#", 13);
}

static int same_name(const struct apx_an_marker *a, const struct apx_an_marker *b)
{
	if (is_profiler_step(a) || is_profiler_step(b))
		return is_profiler_step(a) && is_profiler_step(b);
	return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

/* By name (every ProfilerStep#N one name, first), then by start. */
static int cmp_marker_name_start(const void *a, const void *b)
{
	const struct apx_an_marker *x = *(const struct apx_an_marker *const *)a;
	const struct apx_an_marker *y = *(const struct apx_an_marker *const *)b;
	int px = is_profiler_step(x), py = is_profiler_step(y), c;

	if (px != py)
		return py - px;
	if (!px) {
		c = memcmp(x->name, y->name, x->name_len < y->name_len ? x->name_len : y->name_len);
		if (c || x->name_len != y->name_len)
			return c ? c : x->name_len < y->name_len ? -1 : 1;
	}
	return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- host ranges checked against the GPU work they launch -------------------------------- */

/* The GPU work still queued at t: 0 when no kernel that started before t runs at t, else the
 * time from t to the end of the run of kernels it is part of (kernels that start within
 * APX_STEPS_QUEUE_GAP_NS of the run's end continue it), looked at up to limit past t. *cur and *runmax carry a sweep over
 * the kernels in start order across calls with increasing t (start both at 0). */
static uint64_t queued_at(const struct apx_store *st, size_t *cur, uint64_t *runmax, uint64_t t,
			  uint64_t limit)
{
	const struct apx_es_kernels *k = &st->k;
	uint64_t e;

	while (*cur < k->n && k->start[*cur] < t) {
		uint64_t ke = apx_view_kernel_end(st, *cur);

		if (ke > *runmax)
			*runmax = ke;
		(*cur)++;
	}
	if (*runmax <= t)
		return 0;
	e = *runmax;
	for (size_t j = *cur; j < k->n && k->start[j] <= e + APX_STEPS_QUEUE_GAP_NS && e - t <= limit;
	     j++) {
		uint64_t ke = apx_view_kernel_end(st, j);

		if (ke > e)
			e = ke;
	}
	return e - t;
}

uint64_t apx_steps_queued_at(const struct apx_model *m, uint64_t t, uint64_t limit)
{
	size_t cur = 0;
	uint64_t runmax = 0;

	return queued_at(m->store, &cur, &runmax, t, limit);
}

/* Whether the GPU keeps up with host range steps s[0..n]: its queued work at the steps' ends
 * (each next step's start, and the last one's end) is under half a median step there (the
 * median over them), and under a median step at the last end. A program whose host only
 * launches inside its ranges while the GPU works through a queue behind it (no
 * synchronization in the step) fails: its ranges time the launches, not the GPU's step. */
static int gpu_follows(const struct apx_model *m, const uint64_t *s, size_t n, int *ret_err)
{
	uint64_t *d = malloc(n * sizeof(*d)), med, runmax = 0, last;
	size_t cur = 0;
	int ok;

	if (!d) {
		*ret_err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		d[i] = s[i + 1] - s[i];
	qsort(d, n, sizeof(*d), cmp_u64);
	med = d[n / 2];
	for (size_t i = 0; i < n; i++)
		d[i] = queued_at(m->store, &cur, &runmax, s[i + 1], med);
	last = d[n - 1];
	qsort(d, n, sizeof(*d), cmp_u64);
	ok = 2 * d[n / 2] <= med && last <= med;
	free(d);
	return ok;
}

/* The host time kernel i was launched at (its recorded launch, else its API call's start
 * through the correlation id); 0 when not known. */
static uint64_t launch_time(struct apx_store *st, size_t i)
{
	size_t api;

	if (st->k.launch_ns && st->k.launch_ns[i])
		return st->k.launch_ns[i];
	if (st->a.n && apx_store_api_of_gpu(st, APX_ES_KERNEL, i, &api) == 0 && api < st->a.n)
		return st->a.start[api];
	return 0;
}

/* Host range steps s[0..n] projected onto the GPU work launched inside them: each step starts
 * at the first start of a kernel launched in its range, the last ends at the last end of the
 * kernels launched in the last range; a range that launched none joins the step before it.
 * 1 when done (summarised), 0 when the launch times are not known well enough or too few steps
 * are left, -errno. */
static int project(struct apx_model *m, const uint64_t *s, size_t n)
{
	struct apx_store *st = m->store;
	const struct apx_es_kernels *k = &st->k;
	uint64_t *gs = malloc(n * sizeof(*gs)), *ge = calloc(n, sizeof(*ge)), *g = NULL;
	size_t seen = 0, known = 0, kept = 0, lastj = 0;
	int r = 0;

	if (!gs || !ge)
		goto oom;
	for (size_t j = 0; j < n; j++)
		gs[j] = UINT64_MAX;
	for (size_t i = 0; i < k->n; i++) {
		uint64_t t, ke;
		size_t lo = 0, hi = n;

		if (k->start[i] < s[0])
			continue;
		seen++;
		t = launch_time(st, i);
		if (!t)
			continue;
		known++;
		if (t < s[0] || t >= s[n])
			continue;
		while (lo + 1 < hi) {	/* the range whose span holds t: s[lo] <= t < s[lo + 1] */
			size_t mid = lo + (hi - lo) / 2;

			if (s[mid] <= t)
				lo = mid;
			else
				hi = mid;
		}
		ke = apx_view_kernel_end(st, i);
		if (k->start[i] < gs[lo])
			gs[lo] = k->start[i];
		if (ke > ge[lo])
			ge[lo] = ke;
	}
	if (!seen || (double)known < LAUNCH_KNOWN * (double)seen)
		goto out;
	g = malloc((n + 1) * sizeof(*g));
	if (!g)
		goto oom;
	for (size_t j = 0; j < n; j++) {
		if (gs[j] == UINT64_MAX || (kept && gs[j] <= g[kept - 1])) {
			if (kept && ge[j] > ge[lastj])
				ge[lastj] = ge[j];	/* joins the step before */
			continue;
		}
		g[kept++] = gs[j];
		lastj = j;
	}
	if (kept < MIN_STEPS)
		goto out;
	g[kept] = ge[lastj] > g[kept - 1] ? ge[lastj] : g[kept - 1] + 1;
	r = summarise(m, g, kept);
	if (r == 0)
		r = 1;
	goto out;
oom:
	r = -ENOMEM;
out:
	free(gs);
	free(ge);
	free(g);
	return r;
}

/* Ranges as steps: ProfilerStep#N ranges when there are enough, else the most frequent range
 * name whose ranges follow one another without overlapping and cover STEP_COVER of their span. The ranges are sorted by name and
 * start, so each name is one run of the array. 1 when found. */
static int from_ranges(struct apx_model *m, int *ret_err)
{
	const struct apx_an_marker **r;
	size_t n = 0, best = 0, best_n = 0;
	uint64_t *s;
	int found = 0;

	if (!m->markers.n)
		return 0;
	r = malloc(m->markers.n * sizeof(*r));
	if (!r) {
		*ret_err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < m->markers.n; i++) {
		const struct apx_an_marker *a = APX_VEC_AT(&m->markers, struct apx_an_marker, i);

		/* PyTorch's op ranges (emit_nvtx) are ops, never steps */
		if (a->kind == APX_MARKER_RANGE && a->name && a->end > a->start && !a->torch)
			r[n++] = a;
	}
	qsort(r, n, sizeof(*r), cmp_marker_name_start);
	for (size_t i = 0, j; i < n; i = j) {	/* one name: r[i, j) */
		uint64_t covered = r[i]->end - r[i]->start;
		int ok = 1;

		for (j = i + 1; j < n && same_name(r[j], r[i]); j++) {
			ok &= r[j]->start >= r[j - 1]->end;
			covered += r[j]->end - r[j]->start;
		}
		if (!ok || j - i < MIN_STEPS)
			continue;
		/* a step's ranges tile the run between the first and the last; a library's ranges
		 * inside each step (CCCL's "cub::DeviceRadixSort", seen 72 times in a GPT's 72
		 * steps, 5 % of their time) are no steps */
		if ((double)covered < STEP_COVER * (double)(r[j - 1]->end - r[i]->start))
			continue;
		if (is_profiler_step(r[i])) {	/* sorted first: torch.profiler's steps win */
			best = i;
			best_n = j - i;
			break;
		}
		if (j - i > best_n) {
			best = i;
			best_n = j - i;
		}
	}
	if (!best_n) {
		free(r);
		return 0;
	}
	s = malloc((best_n + 1) * sizeof(*s));
	if (!s) {
		free(r);
		*ret_err = -ENOMEM;
		return 0;
	}
	for (size_t k = 0; k < best_n; k++)
		s[k] = r[best + k]->start;
	s[best_n] = r[best + best_n - 1]->end;
	/* host ranges time the GPU's steps only when the GPU keeps up with them; else their
	 * GPU work (through the kernels' launch times), else the kernel sequence */
	if (gpu_follows(m, s, best_n, ret_err)) {
		*ret_err = summarise(m, s, best_n);
		found = *ret_err == 0;
	} else if (!*ret_err) {
		int pr = project(m, s, best_n);

		if (pr < 0)
			*ret_err = pr;
		found = pr > 0;
		m->steady.projected = found;
		m->steady.refused = !found && !*ret_err ? best_n : 0;
	}
	if (found) {
		m->steady.source = is_profiler_step(r[best]) ? APX_STEPS_PROFILER : APX_STEPS_NVTX;
		snprintf(m->steady.name, sizeof(m->steady.name), "%.*s",
			 is_profiler_step(r[best]) ? 13 : (int)r[best]->name_len, r[best]->name);
	}
	free(s);
	free(r);
	return found;
}

/* The share of sampled positions of window[lo, hi) that the name sequence repeats p later
 * (window: indices into the store's kernels). */
static double repeats(const struct apx_model *m, const uint32_t *win, size_t lo, size_t hi,
		      size_t p)
{
	size_t span, hit = 0;

	if (hi <= lo + p)
		return 0;
	span = hi - p - lo;
	for (size_t k = 0; k < SAMPLES; k++) {
		size_t i = lo + span * k / SAMPLES;

		hit += m->store->k.name[win[i]] == m->store->k.name[win[i + p]];
	}
	return (double)hit / SAMPLES;
}

/* The first and the last WINDOW kernels of stream b (indices into the store's kernels), so
 * that 10 million kernels need no copy of their own. */
struct windows {
	uint32_t *head, *tail;
	size_t nhead, ntail, n;			/* n: kernels of the stream */
};

static int windows_fill(const struct apx_model *m, size_t b, struct windows *w)
{
	size_t cap = WINDOW, t = 0;

	memset(w, 0, sizeof(*w));
	w->head = malloc(cap * sizeof(*w->head));
	w->tail = malloc(cap * sizeof(*w->tail));
	if (!w->head || !w->tail)
		return -ENOMEM;
	for (size_t i = 0; i < m->store->k.n; i++) {
		if (m->store->k.stream[i] != b)
			continue;
		if (w->nhead < cap)
			w->head[w->nhead++] = (uint32_t)i;
		w->tail[t] = (uint32_t)i;	/* a ring: the last cap kernels */
		t = (t + 1) % cap;
		w->n++;
	}
	w->ntail = w->n < cap ? w->n : cap;
	if (w->n > cap) {			/* unroll the ring into time order */
		uint32_t *o = malloc(cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; k < cap; k++)
			o[k] = w->tail[(t + k) % cap];
		free(w->tail);
		w->tail = o;
	}
	return 0;
}

/* The boundary gap of period p over the host gaps g[0..n) (g[i]: the gap before kernel i of the
 * stream, t0 + i its index): the largest, over the period's positions, of the gap that 9 of 10
 * periods reach at that position (its lowest decile, so that a few long gaps elsewhere do not
 * make a boundary and a boundary every other period does not count). Its position in *phase;
 * scratch holds n values. */
static double boundary_gap(const uint32_t *g, size_t n, size_t t0, size_t p, uint32_t *scratch,
			   size_t *phase)
{
	double best = -1;

	for (size_t k = 0; k < p; k++) {
		size_t c = 0, first = (k + p - t0 % p) % p;

		for (size_t i = first; i < n; i += p)
			scratch[c++] = g[i];
		if (!c)
			continue;
		qsort(scratch, c, sizeof(*scratch), cmp_u32);
		if ((double)scratch[c / 10] > best) {
			best = (double)scratch[c / 10];
			*phase = k;
		}
	}
	return best;
}

/* The median gap at the other p0-positions of period p that share the boundary's position
 * modulo p0 (the boundary's siblings: a layer's start where the step's start is the first
 * layer's). */
static double siblings_gap(const uint32_t *g, size_t n, size_t t0, size_t p, size_t p0,
			   size_t phase, uint32_t *scratch)
{
	size_t c = 0;

	for (size_t j = 1; j < p / p0; j++) {
		size_t first = (phase + j * p0 + p - t0 % p) % p;

		for (size_t i = first; i < n; i += p)
			scratch[c++] = g[i];
	}
	if (!c)
		return 0;
	qsort(scratch, c, sizeof(*scratch), cmp_u32);
	return (double)scratch[c / 2];
}

/* The program's iteration from the shortest period p0 of the names: the shortest multiple of p0
 * whose boundary gap (boundary_gap) is within WIDEN_KEEP of the largest any multiple has, when
 * that stands WIDEN_STANDS above p0's own and nine of ten boundary gaps are longer than the
 * siblings' median (siblings_gap: their upper tail may reach the boundary's, as a loop's
 * Python every few layers does); p0 otherwise. The gaps are the last GAPS_MAX of the
 * tail window's second half (more when WIDEN_PERIODS periods need it). The step starts at the
 * widened period's boundary: *phase (unchanged when p0 stays). Negative errno on no memory. */
static long widen(const struct apx_model *m, const struct windows *w, size_t p0, size_t *phase)
{
	size_t lo = w->ntail / 2 + 1, n, t0, kmax, best_p = p0, ph = 0;
	uint32_t *g, *scratch;
	double *score, top = 0;

	if (lo >= w->ntail)
		return (long)p0;
	n = w->ntail - lo;
	if (n > GAPS_MAX && n > WIDEN_PERIODS * p0 * 2)
		n = GAPS_MAX > WIDEN_PERIODS * p0 * 2 ? GAPS_MAX : WIDEN_PERIODS * p0 * 2;
	lo = w->ntail - n;
	t0 = w->n - w->ntail + lo;	/* the stream's index of the first kernel after a gap */
	kmax = n / (WIDEN_PERIODS * p0);
	if (kmax > WIDEN_MAX)
		kmax = WIDEN_MAX;
	if (kmax > MAX_PERIOD / p0)
		kmax = MAX_PERIOD / p0;
	if (kmax < 1)
		kmax = 1;
	g = malloc(n * sizeof(*g));
	scratch = malloc(n * sizeof(*scratch));
	score = calloc(kmax + 1, sizeof(*score));
	if (!g || !scratch || !score) {
		free(g);
		free(scratch);
		free(score);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t a = apx_view_kernel_end(m->store, w->tail[lo + i - 1]);
		uint64_t b = m->store->k.start[w->tail[lo + i]];
		uint64_t d = apx_an_collected_overlap(m, a, b);	/* b - a without capture ranges */

		g[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
	}
	for (size_t k = 1; k <= kmax; k++) {
		score[k] = boundary_gap(g, n, t0, k * p0, scratch, &ph);
		top = score[k] > top ? score[k] : top;
	}
	if (top >= WIDEN_FLOOR && top >= WIDEN_STANDS * score[1])
		for (size_t k = 2; k <= kmax; k++)
			if (score[k] >= WIDEN_KEEP * top) {
				best_p = k * p0;
				break;
			}
	if (best_p != p0) {
		size_t at = 0;
		double b = boundary_gap(g, n, t0, best_p, scratch, &at);

		if (b > siblings_gap(g, n, t0, best_p, p0, at, scratch))
			*phase = at;
		else
			best_p = p0;
	}
	free(g);
	free(scratch);
	free(score);
	return (long)best_p;
}

/* The repeating sequence of kernel names on the busiest stream. 1 when found. */
static int from_kernels(struct apx_model *m, int *ret_err)
{
	size_t nstreams = m->store->nstreams, busiest = 0, p = 0, phase = 0, i0, t0, first, nsteps;
	uint64_t *count = NULL, *s = NULL;
	struct windows w = { 0 };
	double *gap = NULL, best = -1;
	int r = 0;

	if (m->store->k.n < MIN_STEPS * 4 || !nstreams)
		return 0;
	count = calloc(nstreams, sizeof(*count));
	if (!count)
		goto oom;
	for (size_t i = 0; i < m->store->k.n; i++)
		count[m->store->k.stream[i] < nstreams ? m->store->k.stream[i] : 0]++;
	for (size_t i = 1; i < nstreams; i++)
		busiest = count[i] > count[busiest] ? i : busiest;
	if (windows_fill(m, busiest, &w) < 0)
		goto oom;
	/* the smallest period the second half repeats (of the tail window): candidates are the
	 * next occurrences of the kernel in its middle */
	i0 = w.ntail / 2;
	for (size_t j = i0 + 1, tried = 0; j < w.ntail && j - i0 <= MAX_PERIOD && tried < CANDIDATES;
	     j++) {
		if (m->store->k.name[w.tail[j]] != m->store->k.name[w.tail[i0]])
			continue;
		tried++;
		if (j - i0 >= 2 && repeats(m, w.tail, w.ntail / 2, w.ntail, j - i0) >= MATCH &&
		    (w.ntail - w.ntail / 2) / (j - i0) >= 2) {
			p = j - i0;
			break;
		}
	}
	if (!p)
		goto out;
	/* where a step starts: the position of the period after the longest host gap */
	gap = calloc(p, sizeof(*gap));
	if (!gap)
		goto oom;
	t0 = w.n - w.ntail;			/* the tail window's first kernel of the stream */
	for (size_t i = w.ntail / 2 + 1; i < w.ntail; i++) {
		uint64_t a = apx_view_kernel_end(m->store, w.tail[i - 1]);
		uint64_t b = m->store->k.start[w.tail[i]];

		/* the collected part: the time between two capture ranges is no host gap */
		gap[(t0 + i) % p] += (double)apx_an_collected_overlap(m, a, b);
	}
	for (size_t k = 0; k < p; k++)
		if (gap[k] > best) {
			best = gap[k];
			phase = k;
		}
	/* the program's iteration: a multiple of p when p is a part of it, its start after its
	 * boundary gap */
	{
		long wp = widen(m, &w, p, &phase);

		if (wp < 0)
			goto oom;
		p = (size_t)wp;
	}
	/* the steps: whole periods from the phase on, from the first that repeats the next */
	first = phase;
	while (first + 2 * p <= w.nhead && repeats(m, w.head, first, first + 2 * p, p) < MATCH)
		first += p;
	nsteps = (w.n - first) / p;
	if (nsteps < MIN_STEPS)
		goto out;
	s = malloc((nsteps + 1) * sizeof(*s));
	if (!s)
		goto oom;
	{
		size_t j = 0, k = 0, lastk = 0;

		for (size_t i = 0; i < m->store->k.n; i++) {	/* every p-th kernel of the stream */
			if (m->store->k.stream[i] != busiest)
				continue;
			if (j >= first && (j - first) % p == 0 && k < nsteps)
				s[k++] = m->store->k.start[i];
			if (j == first + nsteps * p - 1)
				lastk = i;
			j++;
		}
		s[nsteps] = apx_view_kernel_end(m->store, lastk);
	}
	m->steady.source = APX_STEPS_KERNELS;
	m->steady.period = p;
	r = summarise(m, s, nsteps);
	if (r < 0)
		*ret_err = r;
	else
		r = 1;
	goto out;
oom:
	*ret_err = -ENOMEM;
	r = 0;
out:
	free(count);
	free(w.head);
	free(w.tail);
	free(gap);
	free(s);
	return r;
}

int apx_steps_find(struct apx_model *m)
{
	uint64_t refused;
	int err = 0;

	free(m->steady.bounds);
	memset(&m->steady, 0, sizeof(m->steady));
	if (from_ranges(m, &err) || err)
		return err;
	refused = m->steady.refused;
	from_kernels(m, &err);
	m->steady.refused = refused;	/* from_kernels leaves it; said in docs/report.md */
	return err;
}

const char *apx_step_source_name(enum apx_step_source s)
{
	switch (s) {
	case APX_STEPS_PROFILER: return "profiler-steps";
	case APX_STEPS_NVTX: return "nvtx";
	case APX_STEPS_KERNELS: return "kernel-sequence";
	default: return "none";
	}
}
