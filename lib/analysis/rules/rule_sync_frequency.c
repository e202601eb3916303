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

#include <stdio.h>

#include "analysis/idle_attrib.h"
#include "analysis/store.h"

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

#define RARE_STEPS 10

/* The lines the host syncs were called from: count and host wait. */
static void sync_lines(const struct apx_model *m, struct apx_finding *f)
{
	const struct apx_store *st = m->store;
	struct apx_line_tally t;

	if (!m->has_stacks || apx_line_tally_init(&t, m) < 0)
		return;
	for (size_t i = 0; i < st->y.n; i++)
		if (st->y.kind[i] != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			apx_line_tally_add(&t, st->y.stack[i], 1, (double)(st->y.end[i] - st->y.start[i]));
	apx_line_tally_put(&t, f, "syncs", 0);
	apx_line_tally_release(&t);
}

APX_RULE_DECL(sync_frequency)
{
	uint64_t n = 0, idle = m->gpu.idle_by_cause[APX_IDLE_SYNC], gaps = m->gpu.gaps_by_cause[APX_IDLE_SYNC];
	uint64_t saving, blocked = 0, refill_ns = 0, refill_gaps = 0;
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
				per_step, (unsigned long long)m->steps);
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
	sync_lines(m, f);
	return APX_RULE_FIRED;
}
