/*
 * rule_gpu_starvation.c - the steady state's GPU idle time that nothing in the trace explains
 * (idle_attrib.c's "unknown": no sync, copy, page fault or launch cause; those have their own
 * rules): the host was busy elsewhere (Python, data preparation, I/O). Saving: that time, the
 * GPU time the work would gain if the host queued work ahead. The longest such gaps are shown.
 * With steps, the estimate is of what recurs: the few steps that hold the most (the largest
 * 5 %, at least one) count as much as the largest of the others, so that a one-off stall
 * inside the steady window (a second iteration's first calls, a GC pause) is no steady-state
 * finding, while one every step (or every tenth) keeps its time. The idle inside an optimizer's
 * per-tensor loop is optimizer-foreach's (apx_optimizer_loop_claim), left out here.
 * Mostly short gaps inside steps read as the host's per-op work (eager overhead: the title and
 * the fix say so) unless the main thread's samples inside the gaps show it mostly waiting in
 * a system call (a DataLoader's queue, a lock, I/O): then the evidence says what it waited in.
 * The gaps under 1 ms (the host's work between two launches, or its waits there: per op, not
 * a stall that could move elsewhere) stay on the host whatever it queues: queued ahead, host
 * and GPU overlap, and the steady window takes at least the longer of the host's own work
 * there (outside syncs, less the collector's cost per launch: apx_steady_host_work_ns) and the
 * GPU's busy time, so their saving is at most the window less that (a host-bound program
 * gains nothing there by queueing ahead; less host work per op, launch-bound's CUDA graphs,
 * would). Gaps of 1 ms or more (preprocessing, a loader without workers: work the host can
 * move away) keep their time.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/idle_attrib.h"
#include "analysis/stacks.h"

#include "base/banned.h"

#define LONG_NS 1000000ull

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The unknown idle that recurs: total, with the steps holding the most of it (the largest
 * 5 %, at least one) counted as the largest of the other steps (winsorized). */
static uint64_t recurring(const struct apx_model *m, uint64_t total)
{
	size_t n = m->steady.count, keep = n - (n / 20 ? n / 20 : 1);
	uint64_t *v, est = 0;

	if (!m->unknown_per_step || n < 3)
		return total;
	v = malloc(n * sizeof(*v));
	if (!v)
		return total;
	memcpy(v, m->unknown_per_step, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		est += v[i < keep ? i : keep - 1];
	free(v);
	return est < total ? est : total;
}

/* The main thread's samples inside the unknown gaps: ns running, ns waiting. */
struct thread_states {
	uint64_t run_ns, wait_ns;
};

static void count_state(void *ctx, uint32_t stack, uint64_t ns, unsigned state)
{
	struct thread_states *t = ctx;

	(void)stack;
	if (state == APX_TSTATE_RUNNING)
		t->run_ns += ns;
	else if (state == APX_TSTATE_SLEEPING || state == APX_TSTATE_DISK)
		t->wait_ns += ns;
}

APX_RULE_DECL(gpu_starvation)
{
	uint64_t all = m->gpu.idle_by_cause[APX_IDLE_UNKNOWN], total = recurring(m, all);
	double opt_launches, opt = apx_optimizer_loop_claim(m, APX_IDLE_UNKNOWN, &opt_launches);
	uint64_t n = 0, active, busy, biggest[3] = { 0 };
	uint64_t host, floor_ns, cap, uncapped, movable, long_ns = 0;
	int eager;	/* most of it: short gaps between kernels (the host's per-op work) */
	const struct apx_an_gap *top[3] = { NULL };
	char b1[32], b2[32], b3[32];
	struct thread_states ts = { 0 };
	struct apx_finding *f;

	if (!m->timelines.n)
		return APX_RULE_CLEAN;
	active = m->steady_ns;
	busy = 0;	/* in the steady window: the window less its idle */
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		busy += m->gpu.idle_by_cause[c];
	busy = m->gpu.window_ns > busy ? m->gpu.window_ns - busy : 0;
	for (size_t i = 0; i < m->gaps.n; i++) {
		const struct apx_an_gap *g = APX_VEC_AT(&m->gaps, struct apx_an_gap, i);
		uint64_t d = g->end - g->start;

		if (g->cause != APX_IDLE_UNKNOWN || !g->steady || d < LONG_NS)
			continue;
		n++;
		long_ns += d;
		for (int k = 0; k < 3; k++) {
			if (d > biggest[k]) {
				for (int j = 2; j > k; j--) {
					biggest[j] = biggest[j - 1];
					top[j] = top[j - 1];
				}
				biggest[k] = d;
				top[k] = g;
				break;
			}
		}
	}
	total -= opt < (double)total ? (uint64_t)opt : total;
	if (apx_idle_samples(m, 1u << APX_IDLE_UNKNOWN, count_state, &ts) < 0)
		ts.run_ns = ts.wait_ns = 0;
	/* most of it short gaps between kernels, and the main thread not mostly waiting there */
	eager = 2 * m->gpu.step_host_ns > all && !m->gpu.step_host_launch &&
		ts.wait_ns <= ts.run_ns;
	/* the short gaps' host work cannot move elsewhere: what queueing ahead gains there is at
	 * most the window less the longer of the host's own work and the GPU's busy time */
	host = apx_steady_host_work_ns(m);
	floor_ns = apx_steady_busy_ns(m);
	floor_ns = host > floor_ns ? host : floor_ns;
	cap = m->steady_end_ns > m->steady_start_ns + floor_ns
		? m->steady_end_ns - m->steady_start_ns - floor_ns : 0;
	uncapped = total;
	/* the short gaps recur (a one-off left out above is a long gap): the rest can move */
	movable = all > long_ns ? all - long_ns : 0;		/* the short gaps' */
	movable = total > movable ? total - movable : 0;
	if (total - movable > cap)
		total = movable + cap;
	if (!active || (double)total < 0.05 * (double)active)
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "gpu-starvation",
			    (double)total > 0.25 * (double)active ? APX_SEV_CRITICAL : APX_SEV_WARNING,
			    (double)total, 60);
	if (!f)
		return APX_RULE_FIRED;
	if (eager)	/* the host's own work between launches: say so in the title too */
		snprintf(f->title, sizeof(f->title), "GPU idle %.0f%% of its active time in short gaps "
			 "between kernels (host per-op work)", 100.0 * (double)total /
			 (double)active);
	else
		snprintf(f->title, sizeof(f->title), "GPU idle %.0f%% of its active time for no cause "
			 "the trace shows", 100.0 * (double)total / (double)active);
	snprintf(f->model, sizeof(f->model),
		 "steady-state idle time with no sync, copy, page-fault or launch cause: the GPU waited "
		 "for the host; saving = that time if the host queued work ahead%s",
		 uncapped > total ? " (gaps under 1 ms: at most the window less the host's own "
		 "work)" : "");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"GPU busy %s of the steady window's %s (%.0f%%)\n",
			apx_fmt_ns(b1, sizeof(b1), (double)busy),
			apx_fmt_ns(b2, sizeof(b2), (double)m->gpu.window_ns),
			m->gpu.window_ns ? 100.0 * (double)busy / (double)m->gpu.window_ns : 0);
	apx_text_append(f->evidence, sizeof(f->evidence),
			"idle with no cause recorded: %s (%llu gaps of 1 ms or more among them)\n",
			apx_fmt_ns(b1, sizeof(b1), (double)all), (unsigned long long)n);
	if (m->gpu.step_host_ns && !m->gpu.step_host_launch)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"of it %s in %llu gaps inside steps or under 1 ms, between two "
				"kernels%s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)m->gpu.step_host_ns),
				(unsigned long long)m->gpu.step_host_gaps,
				eager ? ": the host's own work between launches (eager overhead)" : "");
	if (ts.run_ns + ts.wait_ns)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"the main thread's samples in the gaps of 100 us or more: %s "
				"running, %s waiting in a system call%s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)ts.run_ns),
				apx_fmt_ns(b2, sizeof(b2), (double)ts.wait_ns),
				ts.wait_ns > ts.run_ns ? " (waiting for something: see its lines; "
				"not per-op work)" : "");
	if (uncapped > total)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"the host's own work over the steady window (outside syncs): %s: "
				"queued ahead, the window takes at least that; %s of the short "
				"gaps' idle left out\n", apx_fmt_ns(b1, sizeof(b1), (double)host),
				apx_fmt_ns(b2, sizeof(b2), (double)(uncapped - total)));
	if (opt > 0)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %s inside the optimizer's per-tensor loop "
				"(optimizer-foreach's)\n", apx_fmt_ns(b1, sizeof(b1), opt));
	if ((double)all > (double)total + opt)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %s more in the steps that hold the most (a one-off, not "
				"every step)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)all - (double)total - opt));
	for (int k = 0; k < 3 && top[k]; k++)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"  gap of %s on device %u at +%s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)(top[k]->end - top[k]->start)),
				top[k]->device,
				apx_fmt_ns(b3, sizeof(b3), (double)(top[k]->start - m->run_start_ns)));
	apx_finding_metric(f, "busy_ns", (double)busy, APX_UNIT_NS);
	apx_finding_metric(f, "active_ns", (double)active, APX_UNIT_NS);
	apx_finding_metric(f, "long_gaps", (double)n, APX_UNIT_COUNT);
	apx_finding_metric(f, "long_gap_ns", (double)total, APX_UNIT_NS);
	apx_finding_metric(f, "host_work_ns", (double)host, APX_UNIT_NS);
	{
		static const char *const keys[] = { "gap_ns", "device", "at_ns" };
		static const unsigned units[] = { APX_UNIT_NS, APX_UNIT_ID, APX_UNIT_NS };

		apx_evidence_cols(f, "gap", 3, keys, units);
		for (int k = 0; k < 3 && top[k]; k++) {
			char label[16];
			int len = snprintf(label, sizeof(label), "%d", k + 1);
			double *v = apx_evidence_row(f, label, (size_t)len);

			if (!v)
				break;
			v[0] = (double)(top[k]->end - top[k]->start);
			v[1] = top[k]->device;
			v[2] = (double)(top[k]->start - m->run_start_ns);
		}
	}
	snprintf(f->fix, sizeof(f->fix),
		 "Find what the host does in the gaps (apx report --section cpu; py-spy) and move it\n"
		 "off the critical path: prepare batches in DataLoader workers (num_workers=4+),\n"
		 "avoid Python work between steps, or overlap it with the GPU using CUDA streams.%s",
		 eager ? "\nMost of it is short gaps between kernels: the host's per-op work\n"
			   "(Python, dispatch, the optimizer): model = torch.compile(model) or CUDA\n"
			   "graphs (torch.compile(mode=\"reduce-overhead\")) remove it." : "");
	(void)why;
	(void)why_len;
	apx_lines_of_idle(m, f, 1u << APX_IDLE_UNKNOWN);
	return APX_RULE_FIRED;
}
