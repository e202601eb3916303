/*
 * rule_allocator_churn.c - the GPU idles while the host is in the CUDA allocator, step after
 * step: steady-state idle time attributed to allocator calls
 * (idle_attrib.c's "alloc" cause: cudaFree waits for the device to finish before it returns
 * memory, and cudaMalloc on a cache miss takes milliseconds). The usual cause is
 * torch.cuda.empty_cache() in the loop: the caching allocator gives its blocks back and must
 * cudaMalloc them again, worse when batch shapes vary. The allocator calls come from API
 * records (level api) or the collector's own (level light, alloc_calls.c), each with its
 * Python stack: the finding names the lines that called them.
 *
 * Fires when that idle time is >= 1 % of the steady window and allocator calls happen in at
 * least half of the steps. Saving: the what-if simulator's no-alloc transformation (the calls
 * gone, a cudaFree no longer waiting for the GPU) with --savings whatif, else the idle time.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/alloc_time.h"
#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

struct churn {
	uint64_t calls, frees, host_ns, steps_with;
	double alloc_bytes, free_bytes;
};

/* The steady step that time ts lies in, m->steady.count when none (calls come in time order,
 * so a step is counted once). */
static uint64_t step_of(const struct apx_model *m, uint64_t ts)
{
	const uint64_t *b = m->steady.bounds;
	size_t lo = 0, hi = m->steady.count;

	if (!b || !hi || ts < b[0] || ts >= b[hi])
		return m->steady.count;
	while (hi - lo > 1) {		/* b[lo] <= ts < b[hi] */
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid] <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The allocator calls of the steady window: counts, host time, the steps that have one, and
 * their lines (by host time) into t. */
static void count_calls(const struct apx_model *m, struct churn *c, struct apx_line_tally *t)
{
	const struct apx_store *st = m->store;
	uint64_t last_step = UINT64_MAX, j;

	for (size_t i = 0; st && i < st->a.n; i++) {
		enum apx_alloc_call k = apx_alloc_call_of(apx_store_string(st, st->a.name[i]));
		uint64_t s = st->a.start[i];

		if (!k || apx_phase_of(m, s) != APX_PHASE_STEADY)
			continue;
		c->calls++;
		c->frees += k != APX_ALLOC_CALL_ALLOC;
		c->host_ns += st->a.end[i] - s;
		if (t)
			apx_line_tally_add(t, st->a.stack[i], 1, (double)(st->a.end[i] - s));
		if ((j = step_of(m, s)) < m->steady.count && j != last_step) {
			c->steps_with++;
			last_step = j;
		}
	}
	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);

		if (apx_phase_of(m, e->ts) != APX_PHASE_STEADY)
			continue;
		if (e->op == APX_MEMOP_ALLOC)
			c->alloc_bytes += (double)e->bytes;
		else if (e->op == APX_MEMOP_FREE)
			c->free_bytes += (double)e->bytes;
	}
}

APX_RULE_DECL(allocator_churn)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_ALLOC], active = m->steady_ns;
	uint64_t steps = m->steady.count ? m->steady.count : 1;
	struct apx_wi_params sim = { .xform = APX_WI_X_NO_ALLOC };
	struct churn c = { 0 };
	struct apx_line_tally t;
	int tally = m->has_stacks && apx_line_tally_init(&t, m) == 0;
	double saving = (double)idle, rule_ns = saving;
	struct apx_finding *f;
	char b1[32], b2[32], b3[32];
	int simulated;

	if (!active || (double)idle < 0.01 * (double)active) {
		if (tally)
			apx_line_tally_release(&t);
		return APX_RULE_CLEAN;
	}
	count_calls(m, &c, tally ? &t : NULL);
	if (m->steady.count && 2 * c.steps_with < m->steady.count) {
		snprintf(why, why_len, "allocator calls in %llu of %llu steps: not every step's",
			 (unsigned long long)c.steps_with, (unsigned long long)m->steady.count);
		if (tally)
			apx_line_tally_release(&t);
		return APX_RULE_CLEAN;
	}
	simulated = apx_whatif_rule_saving(m, &sim, &saving);
	f = apx_finding_add(out, m, "allocator-churn",
			    (double)idle > 0.1 * (double)active ? APX_SEV_CRITICAL : APX_SEV_WARNING,
			    saving, 70);
	if (!f) {
		if (tally)
			apx_line_tally_release(&t);
		return APX_RULE_FIRED;
	}
	snprintf(f->title, sizeof(f->title),
		 "the GPU idles in the CUDA allocator %.0f%% of the steady state: %.1f calls a step "
		 "(cudaFree waits for the GPU)", 100.0 * (double)idle / (double)active,
		 (double)c.calls / (double)steps);
	snprintf(f->model, sizeof(f->model),
		 "idle gaps in which the host was in cudaMalloc/cudaFree (a free first waits for "
		 "the device) close when the caching allocator keeps its blocks: saving = those gaps");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"steady state: %llu allocator calls (%llu frees), %s in them; GPU idle in "
			"them or after them %s (%s a step)\n",
			(unsigned long long)c.calls, (unsigned long long)c.frees,
			apx_fmt_ns(b1, sizeof(b1), (double)c.host_ns),
			apx_fmt_ns(b2, sizeof(b2), (double)idle),
			apx_fmt_ns(b3, sizeof(b3), (double)idle / (double)steps));
	if (c.alloc_bytes > 0 || c.free_bytes > 0)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"%.1f MB allocated and %.1f MB freed a step (CUDA allocations)\n",
				c.alloc_bytes / (double)steps / 1e6, c.free_bytes / (double)steps / 1e6);
	apx_finding_metric(f, "allocator_calls", (double)c.calls, APX_UNIT_COUNT);
	apx_finding_metric(f, "allocator_host_ns", (double)c.host_ns, APX_UNIT_NS);
	apx_finding_metric(f, "idle_ns", (double)idle, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Let PyTorch's caching allocator keep its blocks:\n"
		 "  remove torch.cuda.empty_cache() (and gc.collect()) from the loop;\n"
		 "  with batch shapes that vary, pad them to a few sizes, or\n"
		 "  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place)");
	if (simulated)
		apx_whatif_rule_note(f, sim.xform, rule_ns);
	if (tally) {
		apx_line_tally_put(&t, f, "allocator calls", 1);
		apx_line_tally_release(&t);
	}
	return APX_RULE_FIRED;
}
