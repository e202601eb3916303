/*
 * tensor_loop.c - Python loops that update tensors one at a time (findings.h,
 * apx_tensor_loops_find): an EMA of the weights (`for e, p in zip(ema, params):
 * e.mul_(d).add_(p, alpha=1 - d)`), a hand-written SGD or momentum step, torch.optim's
 * single-tensor path of an optimizer without addcdiv (SGD with foreach=False). Each iteration
 * launches a few small elementwise kernels from the same line or lines; torch._foreach_* ops
 * (or a foreach/fused optimizer) launch a few list kernels for the whole list instead.
 * optimizer-foreach (rules/rule_optimizer_foreach.c) reports them next to torch.optim's
 * single-tensor Adam loop (optimizer_loop.c), and launch-bound and gpu-starvation leave the
 * GPU idle inside their spans to it (apx_optimizer_loop_claim).
 *
 * Seen from the trace: per steady step, on one stream, a run of consecutive kernels that are
 * all elementwise (not reductions, fills or addcdiv: gradient zeroing is zero-grad-memset's,
 * the Adam loop optimizer_loop.c's), each launched from a Python line (the main thread's
 * stack: backward kernels have none), from at most LINES_MAX lines, one of which launched
 * MIN_LAUNCHES or more of them: a forward pass interleaves its elementwise kernels with
 * GEMMs and normalizations and never makes such a run. The run's span: from its first
 * kernel's start less the run's mean period (the host's iteration before it; never before the
 * stream's previous kernel ended) to its last kernel's end, what the loop costs the step
 * whether the host's issuing or the GPU sets its pace. Per loop (its top line) the medians
 * over the steps it ran in, and the idle inside its spans summed. Single-threaded; allocates
 * its per-step tallies once per call.
 */
#include "analysis/findings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/views.h"

#include "base/banned.h"

#define LINES_MAX 4		/* lines of a loop body */
#define MIN_LAUNCHES 16		/* launches from its top line in one run: a list of tensors */
#define STREAMS_MAX 8		/* streams followed at once */

struct run {
	uint32_t stream;
	uint64_t last_end;		/* the stream's previous kernel's end */
	uint64_t begin_prev;		/* ... before the run's first kernel */
	uint64_t first, end, busy, floor;
	uint32_t n, nlines;
	uint32_t lines[LINES_MAX], cnt[LINES_MAX];
};

struct tally {
	struct apx_tensor_loop *out;
	size_t cap, n, steps;
	double *span, *kern, *gpu;	/* cap x steps */
};

static int elementwise(const struct apx_an_name *nm)
{
	return apx_name_has(nm, "elementwise_kernel") && !apx_name_has(nm, "reduce") &&
	       !apx_name_has(nm, "Fill") && !apx_name_has(nm, "addcdiv") &&
	       !apx_name_has(nm, "Addcdiv");
}

/* The run ends: a loop's when one of its lines launched MIN_LAUNCHES of its kernels. */
static void close_run(struct tally *t, struct run *r, size_t step)
{
	uint32_t top = 0;
	uint64_t begin, period;
	size_t k;

	for (uint32_t j = 1; j < r->nlines; j++)
		top = r->cnt[j] > r->cnt[top] ? j : top;
	if (!r->n || r->cnt[top] < MIN_LAUNCHES)
		goto reset;
	for (k = 0; k < t->n && t->out[k].line != r->lines[top]; k++)
		;
	if (k == t->n) {
		if (t->n == t->cap)
			goto reset;	/* more loops than kept: the largest ones are in by then */
		memset(&t->out[k], 0, sizeof(t->out[k]));
		t->out[k].line = r->lines[top];
		t->out[k].floor_ns = (double)r->floor;
		t->n++;
	}
	period = r->n > 1 ? (r->end - r->first) / r->n : 0;
	begin = r->first - (period < r->first ? period : r->first);
	begin = begin > r->begin_prev ? begin : r->begin_prev;
	t->span[k * t->steps + step] += (double)(r->end - begin);
	t->kern[k * t->steps + step] += r->n;
	t->gpu[k * t->steps + step] += (double)r->busy;
	t->out[k].idle_ns += r->end - begin > r->busy ? r->end - begin - r->busy : 0;
	if ((double)r->floor < t->out[k].floor_ns)
		t->out[k].floor_ns = (double)r->floor;
reset:
	r->n = r->nlines = 0;
	r->busy = 0;
}

static struct run *run_of(struct run *runs, size_t *nruns, uint32_t stream)
{
	for (size_t i = 0; i < *nruns; i++)
		if (runs[i].stream == stream)
			return &runs[i];
	if (*nruns == STREAMS_MAX)
		return NULL;
	memset(&runs[*nruns], 0, sizeof(runs[*nruns]));
	runs[*nruns].stream = stream;
	return &runs[(*nruns)++];
}

/* Kernel i joins its stream's run, or ends it (and starts the next one when it can). */
static void add_kernel(const struct apx_model *m, struct tally *t, struct run *r,
		       const uint8_t *cls, size_t i, size_t step)
{
	const struct apx_store *st = m->store;
	uint32_t line = apx_stack_line(m, st->k.stack[i]), j = 0;
	uint64_t end = apx_view_kernel_end(st, i);

	if (cls[apx_view_kname(st, i)] && line != UINT32_MAX) {
		for (j = 0; j < r->nlines && r->lines[j] != line; j++)
			;
		if (j == LINES_MAX) {	/* a fifth line: another run from here */
			close_run(t, r, step);
			j = 0;
		}
		if (!r->n) {
			r->begin_prev = r->last_end;
			r->first = st->k.start[i];
			r->floor = st->k.dur[i];
		}
		if (j == r->nlines) {
			r->lines[j] = line;
			r->cnt[j] = 0;
			r->nlines++;
		}
		r->cnt[j]++;
		r->n++;
		r->busy += st->k.dur[i];
		r->end = end > r->end || r->n == 1 ? end : r->end;
		r->floor = st->k.dur[i] < r->floor ? st->k.dur[i] : r->floor;
	} else
		close_run(t, r, step);
	r->last_end = end > r->last_end ? end : r->last_end;
}

static double median_of(double *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)	/* the steps it ran in, sorted (small n: insertion) */
		if (v[i] > 0) {
			double x = v[i];
			size_t j = k++;

			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
	return k ? v[k / 2] : 0;
}

static void summarize(struct tally *t)
{
	for (size_t k = 0; k < t->n; k++) {
		struct apx_tensor_loop *l = &t->out[k];
		double *kern = t->kern + k * t->steps;

		for (size_t s = 0; s < t->steps; s++)
			l->steps += kern[s] > 0;
		l->kernels = median_of(kern, t->steps);
		l->span_ns = median_of(t->span + k * t->steps, t->steps);
		l->gpu_ns = median_of(t->gpu + k * t->steps, t->steps);
	}
}

int apx_tensor_loops_find(const struct apx_model *m, struct apx_tensor_loop *out, size_t cap,
			  size_t *ret_n)
{
	const struct apx_store *st = m->store;
	const struct apx_an_steps *sd = &m->steady;
	struct tally t = { .out = out, .cap = cap, .steps = sd->count };
	struct run runs[STREAMS_MAX];
	size_t nruns = 0, s = 0;
	uint8_t *cls;

	*ret_n = 0;
	if (!st || !cap || !sd->count || !sd->bounds || !m->stack_line)
		return 0;	/* per step, with the launches' lines, or not at all */
	cls = calloc(m->names.n ? m->names.n : 1, 1);
	t.span = calloc(3 * cap * sd->count, sizeof(double));
	if (!cls || !t.span) {
		free(cls);
		free(t.span);
		return -ENOMEM;
	}
	t.kern = t.span + cap * sd->count;
	t.gpu = t.kern + cap * sd->count;
	for (size_t i = 0; i < m->names.n; i++)
		cls[i] = (uint8_t)elementwise(APX_VEC_AT(&m->names, struct apx_an_name, i));
	for (size_t i = 0; i < st->k.n; i++) {
		struct run *r;

		if (st->k.start[i] < sd->bounds[0])
			continue;
		if (st->k.start[i] >= sd->bounds[s + 1]) {	/* step s ends: its runs too */
			for (size_t j = 0; j < nruns; j++)
				close_run(&t, &runs[j], s);
			while (s < sd->count && st->k.start[i] >= sd->bounds[s + 1])
				s++;
			if (s >= sd->count)
				break;
		}
		if ((r = run_of(runs, &nruns, st->k.stream[i])))
			add_kernel(m, &t, r, cls, i, s);
	}
	for (size_t j = 0; s < sd->count && j < nruns; j++)
		close_run(&t, &runs[j], s);
	summarize(&t);
	*ret_n = t.n;
	free(cls);
	free(t.span);
	return 0;
}
