/*
 * optimizer_loop.c - an optimizer stepping one parameter tensor at a time (findings.h,
 * apx_optimizer_loop_find): the measurement behind optimizer-foreach
 * (rules/rule_optimizer_foreach.c), which launch-bound and gpu-starvation also read so that
 * the idle time inside the loop is counted once, by that rule.
 *
 * The loop: torch.optim's single-tensor path (foreach=False, or a hand-written loop) runs a
 * few elementwise kernels per tensor, with no multi_tensor_apply_kernel at all and, per step,
 * one addcdiv (Adam, AdamW, Adagrad, RMSprop: param.addcdiv_(exp_avg, denom)) per tensor. Its
 * span in a step, on the stream of the updates: from the end of the last kernel that is not
 * elementwise before the step's first update kernel (lerp, addcmul or addcdiv: the kernels
 * of the loop before them are elementwise, and the gap in front of them is the optimizer's
 * Python; that kernel may be the previous step's, when the step starts with the optimizer) to
 * the end of the step's last addcdiv. Whether the host issues the loop slower than
 * the GPU runs it or not, the span is what the loop costs the step; foreach/fused do the same
 * arithmetic in a few list kernels. The idle time inside the spans (a span less its kernels'
 * time) is given too: idle_attrib.c gives it to launch overhead in a launch-bound steady
 * state and to no cause otherwise, and launch-bound or gpu-starvation leave it to
 * optimizer-foreach.
 */
#include "analysis/findings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/views.h"

#include "base/banned.h"

#define MIN_PARAMS 16		/* fewer tensors: a list kernel gains little */

enum { K_OTHER, K_ELEMENTWISE, K_UPDATE, K_ADDCDIV };

static int is_addcdiv(const struct apx_an_name *nm)
{
	return apx_name_has(nm, "addcdiv") || apx_name_has(nm, "Addcdiv");
}

static int is_update(const struct apx_an_name *nm)
{
	return apx_name_has(nm, "lerp") || apx_name_has(nm, "addcmul") ||
	       apx_name_has(nm, "Addcmul");
}

/* The loop's kernels from the names' aggregates: params 0 when it is not one. */
static void count_names(const struct apx_model *m, struct apx_optimizer_loop *l)
{
	uint64_t mta = 0;

	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (!nm->steady_count)
			continue;
		if (apx_name_has(nm, "multi_tensor_apply"))
			mta += nm->steady_count;
		else if (is_addcdiv(nm)) {
			l->upd += nm->steady_count;
			l->upd_ns += nm->steady_ns;
			if (!l->top || nm->steady_count > l->top->steady_count)
				l->top = nm;
		} else if (apx_name_has(nm, "addcmul") || apx_name_has(nm, "Addcmul"))
			l->cmul += nm->steady_count;
	}
	l->params = (double)l->upd / (double)m->steady.count;
	if (mta || l->params < MIN_PARAMS)
		l->params = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Per step: the loop's span, the kernels in it and their GPU time; their medians into l, and
 * the idle inside the spans (a span less its kernels' time, summed over the steps). */
static int spans(const struct apx_model *m, const uint8_t *cls, struct apx_optimizer_loop *l)
{
	const struct apx_store *st = m->store;
	const struct apx_an_steps *sd = &m->steady;
	uint64_t *span = calloc(2 * sd->count, sizeof(*span)), *kern = span + sd->count;
	uint64_t other_end = 0, begin = 0, end = 0, since_other = 0, since_begin = 0, at_end = 0;
	uint64_t busy_other = 0, busy = 0, busy_end = 0, idle = 0;
	uint32_t stream = UINT32_MAX;
	size_t s = 0, found = 0;

	if (!span)
		return -ENOMEM;
	for (size_t i = 0; i < st->k.n && stream == UINT32_MAX; i++)
		if (cls[apx_view_kname(st, i)] == K_ADDCDIV)
			stream = st->k.stream[i];
	for (size_t i = 0; i <= st->k.n; i++) {
		uint64_t t = i < st->k.n ? st->k.start[i] : UINT64_MAX;
		int c;

		if (t < sd->bounds[0])
			continue;
		while (s < sd->count && t >= sd->bounds[s + 1]) {	/* step s ends */
			if (begin && end > begin) {
				span[found] = end - begin;
				kern[found++] = at_end;
				idle += end - begin - (busy_end < end - begin ? busy_end : end - begin);
			}
			s++;
			begin = end = since_begin = at_end = busy = busy_end = 0;
			/* other_end: the last one, which may be the previous step's */
		}
		if (s >= sd->count)
			break;
		if (st->k.stream[i] != stream)
			continue;
		c = cls[apx_view_kname(st, i)];
		if (!begin && (c == K_UPDATE || c == K_ADDCDIV)) {
			begin = other_end ? other_end : st->k.start[i];
			since_begin = other_end ? since_other : 0;	/* the loop's kernels before */
			busy = other_end ? busy_other : 0;
		}
		if (c == K_OTHER) {
			other_end = apx_view_kernel_end(st, i);
			since_other = busy_other = 0;
		} else {
			since_other++;
			busy_other += st->k.dur[i];
		}
		if (!begin)
			continue;
		since_begin++;
		busy += st->k.dur[i];
		if (c == K_ADDCDIV) {
			end = apx_view_kernel_end(st, i);
			at_end = since_begin;
			busy_end = busy;
		}
	}
	if (found) {
		qsort(span, found, sizeof(*span), cmp_u64);
		qsort(kern, found, sizeof(*kern), cmp_u64);
		l->span_ns = (double)span[found / 2];
		l->launches = (double)kern[found / 2];
	}
	l->span_steps = found;
	l->idle_ns = idle;
	free(span);
	return 0;
}

int apx_optimizer_loop_find(const struct apx_model *m, struct apx_optimizer_loop *l)
{
	uint8_t *cls;
	int r;

	memset(l, 0, sizeof(*l));
	if (!m->steady.count || !m->steady.bounds)
		return 0;	/* per step or not at all: a one-off loop is no optimizer */
	count_names(m, l);
	if (!l->params)
		return 0;
	cls = calloc(m->names.n ? m->names.n : 1, 1);
	if (!cls)
		return -ENOMEM;
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		cls[i] = is_addcdiv(nm) ? K_ADDCDIV : is_update(nm) ? K_UPDATE :
			 apx_name_has(nm, "elementwise_kernel") && !apx_name_has(nm, "reduce") ?
			 K_ELEMENTWISE : K_OTHER;
	}
	r = spans(m, cls, l);
	free(cls);
	return r;
}
