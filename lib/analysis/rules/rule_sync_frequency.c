/*
 * rule_sync_frequency.c - too many synchronizations: every .item(), .cpu(), print(tensor) or
 * torch.cuda.synchronize() drains the GPU queue. Saving: the steady state's GPU idle time
 * attributed to sync wait (idle_attrib.c: the host's work after a sync would overlap GPU work
 * without it), at most the GPU busy time it could hide behind: min(that idle, GPU busy).
 * In a launch-bound steady state the host, not the GPU, sets the step's pace: the GPU idles
 * after a sync while the host launches, as it would without the sync, and what the sync
 * costs is the host's time blocked in it (in the steady window): the saving is that, at most
 * the idle after the syncs.
 * The idle is the syncs' gaps and the refill after each (idle_attrib.c: the gaps while the
 * host gets ahead of the emptied queue again).
 * Silent when the steady state's syncs that idled the GPU are rarer than one in RARE_STEPS
 * steps: that is what the fix asks for (a loss read every 100 steps, a timer's sync between
 * blocks of steps).
 */
#include "analysis/findings.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/idle_attrib.h"
#include "analysis/store.h"

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

#define RARE_STEPS 10

/* What the host syncs of one line (m->lines index) waited for (sync_cause.c): the cause of
 * most of them in words, and how many had another; how many a step of the steady state has
 * (those inside it over its steps). */
static void line_cause(void *ctx, uint32_t line, struct apx_finding_line *l)
{
	const struct apx_model *m = ctx;
	const struct apx_store *st = m->store;
	struct apx_an_sync_cause c[APX_SYNC_CAUSE__COUNT] = { { 0 } };
	uint64_t all = 0, steady = 0;
	unsigned top = APX_SYNC_CAUSE_NONE;

	for (size_t i = 0; i < st->y.n && i < m->syncs.n; i++) {
		const struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);
		struct apx_an_sync_cause *a = &c[s->cause];
		uint64_t bytes;

		if (s->cause == APX_SYNC_CAUSE_NONE || apx_stack_line(m, st->y.stack[i]) != line)
			continue;
		bytes = s->copy != UINT32_MAX ? st->c.bytes[s->copy] : 0;
		if (!a->count || bytes < a->min_bytes)
			a->min_bytes = bytes;
		if (bytes > a->max_bytes)
			a->max_bytes = bytes;
		a->count++;
		all++;
		steady += s->start >= m->steady_start_ns && s->start < m->steady_end_ns;
		if (top == APX_SYNC_CAUSE_NONE || a->count > c[top].count)
			top = s->cause;
	}
	if (m->steady_steps) {
		l->per_step = (double)steady / (double)m->steady_steps;
		l->has_per_step = 1;
	}
	if (!all)
		return;
	l->cause_key = apx_sync_cause_key(top);
	apx_sync_cause_text(l->cause, sizeof(l->cause), top, c[top].min_bytes, c[top].max_bytes);
	if (all > c[top].count) {
		size_t len = strlen(l->cause);

		snprintf(l->cause + len, sizeof(l->cause) - len, "; %llu others",
			 (unsigned long long)(all - c[top].count));
	}
}

/* The lines the host syncs were called from: count and host wait, what they waited for. */
static void sync_lines(const struct apx_model *m, struct apx_finding *f)
{
	const struct apx_store *st = m->store;
	struct apx_line_tally t;

	if (!m->has_stacks || apx_line_tally_init(&t, m) < 0)
		return;
	for (size_t i = 0; i < st->y.n; i++)
		if (st->y.kind[i] != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			apx_line_tally_add(&t, st->y.stack[i], 1, (double)(st->y.end[i] - st->y.start[i]));
	t.cause = line_cause;
	t.cause_ctx = (void *)(uintptr_t)m;	/* read only */
	apx_line_tally_put(&t, f, "syncs", 0);
	apx_line_tally_release(&t);
}

/* What the syncs waited for (sync_cause.c), the most host time first: a line of evidence and
 * a row of the evidence table each; what to change for the top cause when the fix's general
 * advice does not say it. */
static void sync_causes(const struct apx_model *m, struct apx_finding *f)
{
	static const char *const keys[] = { "syncs", "host_blocked_ns", "bytes" };
	static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_NS, APX_UNIT_BYTES };
	unsigned order[APX_SYNC_CAUSE__COUNT], n = apx_sync_causes_ranked(m, order);
	char b1[96], b2[32];

	if (!n)
		return;
	apx_evidence_cols(f, "cause", 3, keys, units);
	apx_text_append(f->evidence, sizeof(f->evidence), "what the syncs waited for:\n");
	for (unsigned i = 0; i < n; i++) {
		const struct apx_an_sync_cause *a = &m->sync_cause[order[i]];
		const char *key = apx_sync_cause_key(order[i]);
		double *row = apx_evidence_row(f, key, strlen(key));

		apx_text_append(f->evidence, sizeof(f->evidence), "  %s: %llu syncs, %s\n",
				apx_sync_cause_text(b1, sizeof(b1), order[i], a->min_bytes,
						    a->max_bytes),
				(unsigned long long)a->count, apx_fmt_ns(b2, sizeof(b2), (double)a->ns));
		if (row) {
			row[0] = (double)a->count;
			row[1] = (double)a->ns;
			row[2] = (double)a->bytes;
		}
	}
	switch (order[0]) {
	case APX_SYNC_CAUSE_NONZERO:
		apx_text_append(f->fix, sizeof(f->fix), "\nThe top cause sizes a tensor by its "
				"data (nonzero, x[mask], unique): keep the shape fixed,\n"
				"  torch.where(mask, x, 0) or torch.nonzero_static(mask, size=N)");
		break;
	case APX_SYNC_CAUSE_UPLOAD:
		apx_text_append(f->fix, sizeof(f->fix), "\nThe top cause copies to the GPU and "
				"waits: move data once, before the loop, or from pinned memory:\n"
				"  x = x.pin_memory().to('cuda', non_blocking=True)");
		break;
	case APX_SYNC_CAUSE_READ_BACK:
		apx_text_append(f->fix, sizeof(f->fix), "\nThe top cause reads tensors back "
				"(.cpu()): copy them non_blocking into a pinned buffer and\n"
				"  read it after an event, a step later");
		break;
	default:
		break;
	}
}

APX_RULE_DECL(sync_frequency)
{
	uint64_t n = 0, idle = m->gpu.idle_by_cause[APX_IDLE_SYNC], gaps = m->gpu.gaps_by_cause[APX_IDLE_SYNC];
	uint64_t saving, blocked = 0, refill_ns = 0, refill_gaps = 0, nsteps = m->steps;
	double per_s, per_step, rule_ns, sim_ns = 0;
	const struct apx_wi_params sim = { .xform = APX_WI_X_REMOVE_SYNCS };
	int simulated;
	char b1[32], b2[32];
	struct apx_finding *f;

	for (unsigned k = 0; k < APX_SYNC_KIND__COUNT; k++)
		if (k != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			n += m->sync_count[k];
	if (!n)
		return APX_RULE_CLEAN;
	per_s = m->collected_ns ? (double)n / ((double)m->collected_ns / 1e9) : 0;
	per_step = m->steps ? (double)n / (double)m->steps : 0;
	if (m->steady.count && m->steady_end_ns > m->steady_start_ns) {
		/* the steady steps' own syncs: NVTX ranges may be library calls (--trace-libs'
		 * cuDNN and cuBLAS ranges), not iterations */
		uint64_t in = 0;

		for (size_t i = 0; i < m->syncs.n; i++) {
			const struct apx_an_sync *y = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);

			in += y->kind != APX_SYNC_KIND_STREAM_WAIT_EVENT &&
			      y->start >= m->steady_start_ns && y->start < m->steady_end_ns;
		}
		per_step = (double)in / (double)m->steady.count;
		nsteps = m->steady.count;
	}
	for (unsigned k = 0; !m->launch_bound && k <= APX_IDLE__COUNT; k++) {
		refill_ns += m->gpu.refill_ns[k];	/* the sync's, idle_attrib.c */
		refill_gaps += m->gpu.refill_gaps[k];
	}
	if (!m->steady_ns || (m->steady.count && (gaps - (refill_gaps < gaps ? refill_gaps : gaps)) *
				   RARE_STEPS < m->steady.count))
		return APX_RULE_CLEAN;
	saving = idle < m->gpu.busy_ns ? idle : m->gpu.busy_ns;
	if (m->launch_bound) {
		blocked = apx_steady_blocked_ns(m);
		saving = blocked < idle ? blocked : idle;
	}
	if ((double)saving < 0.02 * (double)m->steady_ns)
		return APX_RULE_CLEAN;
	rule_ns = (double)saving;	/* the simulator's when it has one (whatif.h) */
	simulated = apx_whatif_rule_saving(m, &sim, &sim_ns);
	f = apx_finding_add(out, m, "sync-frequency",
			    (simulated ? sim_ns : rule_ns) > 0.1 * (double)m->steady_ns ? APX_SEV_CRITICAL
											 : APX_SEV_WARNING,
			    simulated ? sim_ns : rule_ns, 70);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%llu host synchronizations left the GPU idle for %s",
		 (unsigned long long)n, apx_fmt_ns(b1, sizeof(b1), (double)idle));
	if (m->launch_bound)
		snprintf(f->model, sizeof(f->model),
			 "the step is launch-bound, so the host sets its pace: without the syncs the "
			 "host launches in the time it waited in them: saving = min(host blocked in "
			 "the steady state's syncs, GPU idle after them)");
	else
		snprintf(f->model, sizeof(f->model),
			 "without the syncs the host's work in the gaps after them overlaps GPU work: "
			 "saving = min(GPU idle after syncs, GPU busy time)");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"synchronizations: %llu (%.0f/s) - device %llu, stream %llu, event %llu\n",
			(unsigned long long)n, per_s, (unsigned long long)m->sync_count[APX_SYNC_KIND_DEVICE],
			(unsigned long long)m->sync_count[APX_SYNC_KIND_STREAM],
			(unsigned long long)m->sync_count[APX_SYNC_KIND_EVENT]);
	if (per_step > 0)
		apx_text_append(f->evidence, sizeof(f->evidence), "per step: %.1f (%llu steps)\n",
				per_step, (unsigned long long)nsteps);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"host blocked in them: %s; GPU idle after them: %s in %llu gaps\n",
			apx_fmt_ns(b1, sizeof(b1), (double)m->sync_total_ns),
			apx_fmt_ns(b2, sizeof(b2), (double)idle), (unsigned long long)gaps);
	if (refill_ns)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"of it %s in %llu gaps after the syncs' own, while the host got ahead "
				"of the GPU again (its queue was empty)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)refill_ns),
				(unsigned long long)refill_gaps);
	apx_finding_metric(f, "syncs", (double)n, APX_UNIT_COUNT);
	apx_finding_metric(f, "syncs_per_s", per_s, APX_UNIT_RATIO);
	if (per_step > 0)
		apx_finding_metric(f, "syncs_per_step", per_step, APX_UNIT_RATIO);
	apx_finding_metric(f, "host_blocked_ns", (double)m->sync_total_ns, APX_UNIT_NS);
	apx_finding_metric(f, "idle_after_ns", (double)idle, APX_UNIT_NS);
	apx_finding_metric(f, "refill_ns", (double)refill_ns, APX_UNIT_NS);
	if (m->launch_bound)
		apx_finding_metric(f, "steady_blocked_ns", (double)blocked, APX_UNIT_NS);
	apx_finding_metric(f, "gaps", (double)gaps, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Keep values on the GPU inside the loop; read them back rarely:\n"
		 "  running_loss += loss.detach()            # not loss.item() every step\n"
		 "  if step %% 100 == 0: print(running_loss.item() / 100)\n"
		 "Remove torch.cuda.synchronize(), .cpu(), .numpy() and print(tensor) from the step.");
	if (simulated)
		apx_whatif_rule_note(f, sim.xform, rule_ns);
	(void)why;
	(void)why_len;
	sync_causes(m, f);
	sync_lines(m, f);
	return APX_RULE_FIRED;
}
