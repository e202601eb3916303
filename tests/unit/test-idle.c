/*
 * test-idle.c - unit tests of the idle attribution (lib/analysis/idle_attrib.c) and of the
 * start-up split: page faults take a gap from the sync before them, gaps between
 * small copies are their per-call overhead, the collector's launch cost is its own cause,
 * start-up copies give start-up findings that rank under the steady state's unless start-up
 * dominates, long gaps inside launch-bound steps are launch overhead (not starvation) while a
 * stall between steps is not, the gap before a run's first recurring copy is start-up, the
 * sync of a pageable copy to the device is staging, a one-off stall is no starvation, the
 * refill after a sync (until the host is ahead again) is the sync's, a replayed launch's gap
 * is the collector's, and,
 * on random traces, every idle ns is counted once and the findings' savings together stay
 * within the steady window.
 */
#include <stdio.h>
#include <string.h>

#include "apx-test.h"
#include "analysis/findings.h"
#include "analysis/model.h"
#include "unit/analysed.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

static struct apx_findings fd;

/* The rules' own savings (--savings rule): these tests check the idle attribution they read;
 * the simulator's savings of the same programs are test-whatif's. */
static struct apx_model *load(struct tg *t)
{
	return tg_analyse_own(t, &fd);
}

static const struct apx_finding *finding(const char *rule)
{
	return tg_find(&fd, rule);
}

static enum apx_rule_status status(const char *rule)
{
	return tg_status(&fd, rule);
}

/* A sync returns, then the host faults managed pages back: the gap is the faults', not the
 * sync's; the next gap, with a sync and no fault, is the sync's. */
APX_TEST(page_faults_take_the_gap_from_the_sync)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	tg_sync(&t, 1500 * US, 2010 * US, APX_SYNC_KIND_STREAM);
	tg_uvm(&t, 3 * MS, 3 * MS + 100, APX_UVM_CPU_FAULT, 4096);
	tg_kernel(&t, 5 * MS, 1 * MS, "k", 7);		/* gap 2-5 ms: faults */
	tg_sync(&t, 5500 * US, 6010 * US, APX_SYNC_KIND_STREAM);
	tg_kernel(&t, 8 * MS, 1 * MS, "k", 7);		/* gap 6-8 ms: sync */
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_UVM], 3 * MS);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_SYNC], 2 * MS);
	APX_ASSERT_EQ(m->gpu.gaps_by_cause[APX_IDLE_UVM], 1);
	apx_model_free(m);
	return 0;
}

/* 2000 small pageable copies 12 us apart: the gaps are their per-call overhead, which
 * small-copies claims; pageable-copy claims none of them (pinning does not speed them up). */
APX_TEST(gaps_between_small_copies_are_per_call_overhead)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 2000; i++)
		tg_copy(&t, 1 * MS + i * 20 * US, 8 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 4096, 0, 0, 7);
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_COPY_CALLS], 1999 * 12 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_LAUNCH], 0);
	f = finding("small-copies");
	APX_ASSERT(f && f->saving_ns >= 1999 * 12.0 * US);
	APX_ASSERT(strstr(f->evidence, "per-call overhead"));
	APX_ASSERT(!finding("pageable-copy") && status("pageable-copy") == APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

/* 100 steps of 10 ms (two kernels, 100 us launch-free gaps aside), after a pageable copy of
 * copy_ms at start-up (model.cuda()). */
static struct apx_model *startup_copy(uint64_t copy_ms)
{
	struct tg t;
	uint64_t ts = 1 * MS + copy_ms * MS + 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	tg_copy(&t, 1 * MS, copy_ms * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, copy_ms * 5000000, 0, 0, 7);
	for (int s = 0; s < 100; s++) {
		tg_kernel(&t, ts, 8 * MS, "fwd", 7);
		tg_kernel(&t, ts + 8 * MS + 20 * US, 1900 * US, "opt", 7);
		ts += 10 * MS;
	}
	return load(&t);
}

APX_TEST(startup_copies_rank_under_the_steady_state)
{
	struct apx_model *m = startup_copy(100);	/* 100 ms against 1 s of steps */
	const struct apx_finding *f;

	APX_ASSERT(m && m->steady.count >= 98);
	APX_ASSERT(m->steady_start_ns > 101 * MS);
	APX_ASSERT_EQ(apx_phase_of(m, 1 * MS), APX_PHASE_STARTUP);
	f = finding("pageable-copy");
	APX_ASSERT(f && f->startup && !fd.startup_dominates);
	APX_ASSERT(!apx_finding_in_main(&fd, f));
	APX_ASSERT(strstr(f->title, "at start-up"));
	APX_ASSERT_EQ(status("pageable-copy"), APX_RULE_STARTUP);
	for (size_t i = 0; i + 1 < fd.n; i++)	/* the main list comes first */
		APX_ASSERT(apx_finding_in_main(&fd, &fd.f[i]) >= apx_finding_in_main(&fd, &fd.f[i + 1]));
	apx_model_free(m);

	m = startup_copy(1500);	/* 1.5 s of copying against 1 s of steps: start-up dominates */
	APX_ASSERT(m);
	f = finding("pageable-copy");
	APX_ASSERT(f && f->startup && fd.startup_dominates && apx_finding_in_main(&fd, f));
	APX_ASSERT_EQ(status("pageable-copy"), APX_RULE_FIRED);
	APX_ASSERT(f == &fd.f[0]);
	apx_model_free(m);
	return 0;
}

/* 60 steps (NVTX ranges "step") of nk kernels named k0, k1, ... (kernel_us each) on one stream:
 * 20 us launch gaps, a mid_us gap after k9 (the host's own work inside the step: autograd,
 * the optimizer's Python) and a between_us gap before each step, which holds the boundary. */
static struct apx_model *steps_with_gaps(int nk, uint64_t kernel_us, uint64_t mid_us,
					uint64_t between_us)
{
	struct tg t;
	uint64_t ts = 1 * MS, step0 = ts;
	char name[16];

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 60; s++) {
		for (int k = 0; k < nk; k++) {
			snprintf(name, sizeof(name), "k%d", k);
			tg_kernel(&t, ts, kernel_us * US, name, 7);
			ts += kernel_us * US + (k == 9 ? mid_us : k == nk - 1 ? between_us : 20) * US;
		}
		tg_marker(&t, step0, ts - between_us * US / 2, "step");
		step0 = ts - between_us * US / 2;
	}
	return load(&t);
}

/* Launch-bound steps (5 us kernels, 20 us gaps): the 200 us gap inside each step is the
 * host's work between launches, launch overhead that launch-bound claims (a captured step
 * does not repeat it); gpu-starvation, which claims idle with no cause, stays silent. So is
 * a gap under 1 ms between the steps. */
APX_TEST(long_gaps_inside_launch_bound_steps_are_launch_overhead)
{
	struct apx_model *m = steps_with_gaps(20, 5, 200, 40);
	const struct apx_finding *f;

	APX_ASSERT(m && m->steady.count == 60 && m->steady.source == APX_STEPS_NVTX);
	APX_ASSERT(m->launch_bound);
	APX_ASSERT(m->gpu.step_host_gaps >= 57 && m->gpu.step_host_launch);
	APX_ASSERT_EQ(m->gpu.step_host_ns, m->gpu.step_host_gaps * 200 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN], 0);
	f = finding("launch-bound");
	APX_ASSERT(f && f->saving_ns >= (double)m->gpu.step_host_ns);
	APX_ASSERT(strstr(f->evidence, "inside steps"));
	APX_ASSERT(!finding("gpu-starvation") && status("gpu-starvation") == APX_RULE_CLEAN);
	for (size_t i = 0; i < m->gaps.n; i++)	/* no gap is left with the tentative cause */
		APX_ASSERT(APX_VEC_AT(&m->gaps, struct apx_an_gap, i)->cause < APX_IDLE__COUNT);
	apx_model_free(m);

	/* 500 us between the steps (zero_grad, the optimizer's Python): under 1 ms, the host's
	 * work between launches too */
	m = steps_with_gaps(20, 5, 200, 500);
	APX_ASSERT(m && m->launch_bound);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN], 0);
	APX_ASSERT(finding("launch-bound") && !finding("gpu-starvation"));
	apx_model_free(m);
	return 0;
}

/* Kernels of 400 us: the 20 us gaps are small next to the work, the steady state is not
 * launch-bound, and the 200 us gap inside each step has no cause the trace shows (unknown). */
APX_TEST(long_gaps_inside_steps_stay_unknown_when_not_launch_bound)
{
	struct apx_model *m = steps_with_gaps(20, 400, 200, 40);

	APX_ASSERT(m && m->steady.count == 60);
	APX_ASSERT(!m->launch_bound && !m->gpu.step_host_launch);
	APX_ASSERT(m->gpu.step_host_gaps >= 57);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= m->gpu.step_host_ns);
	APX_ASSERT(!finding("launch-bound"));
	apx_model_free(m);
	return 0;
}

/* Launch-bound steps (200 kernels) with 5 ms of host work between them (preprocessing on the
 * main thread):
 * the stall is not launch overhead (a captured step still waits for it); gpu-starvation
 * claims it, launch-bound only the gaps inside the steps. */
APX_TEST(a_stall_between_launch_bound_steps_stays_starvation)
{
	struct apx_model *m = steps_with_gaps(200, 5, 200, 5000);
	const struct apx_finding *lb, *gs;

	APX_ASSERT(m && m->launch_bound);
	lb = finding("launch-bound");
	gs = finding("gpu-starvation");
	APX_ASSERT(lb && gs);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= (m->steady.count - 1) * 5000 * US);
	APX_ASSERT(gs->saving_ns >= (double)(m->steady.count - 1) * 5000 * US);
	APX_ASSERT(lb->saving_ns < (double)m->steady.count * (200 + 199 * 20) * US);
	apx_model_free(m);
	return 0;
}

/* 40 NVTX steps of two 1 ms kernels; a stall of stall_ms between them in one step (one_off) or
 * in every step. */
static struct apx_model *stalled_steps(uint64_t stall_ms, int one_off)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 40; s++) {
		uint64_t s0 = ts;

		tg_kernel(&t, ts, 1 * MS, "fwd", 7);
		ts += 1 * MS + (!one_off || s == 20 ? stall_ms * MS : 10 * US);
		tg_kernel(&t, ts, 1 * MS, "bwd", 7);
		ts += 1 * MS + 10 * US;
		tg_marker(&t, s0, ts - 5 * US, "step");
	}
	return load(&t);
}

/* A 30 ms stall in one of 40 steps (a GC pause, a second iteration's first calls) is no
 * steady-state problem: gpu-starvation counts what recurs, and is silent; the same stall in
 * every step is its finding. */
APX_TEST(a_one_off_stall_is_no_starvation)
{
	struct apx_model *m = stalled_steps(30, 1);
	const struct apx_finding *f;

	APX_ASSERT(m && m->steady.count == 40);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= 30 * MS);
	APX_ASSERT(!finding("gpu-starvation") && status("gpu-starvation") == APX_RULE_CLEAN);
	apx_model_free(m);

	m = stalled_steps(3, 0);
	APX_ASSERT(m);
	f = finding("gpu-starvation");
	APX_ASSERT(f && f->saving_ns >= 38 * 3.0 * MS);
	apx_model_free(m);
	return 0;
}

/* 20 steps: a 64 MiB host->device copy (host memory kind host) of 9 ms, the copy's own stream
 * sync (PyTorch's .to('cuda') without non_blocking) returning 10 us after it, and a GEMM the
 * host launches 200 us later. */
static struct apx_model *copy_sync_gemm(unsigned host)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int i = 0; i < 20; i++) {
		tg_copy(&t, ts, 9 * MS, APX_COPY_H2D, host, 64u << 20, 0, 0, 7);
		tg_sync(&t, ts + 50 * US, ts + 9 * MS + 10 * US, APX_SYNC_KIND_STREAM);
		tg_kernel(&t, ts + 9 * MS + 200 * US, 340 * US, "gemm", 7);
		tg_kernel(&t, ts + 9 * MS + 560 * US, 8 * US, "sum", 7);
		ts += 9 * MS + 600 * US;
	}
	return load(&t);
}

/* The sync after a pageable copy to the device is the copy's own: the wait and the launch
 * after it are staging, which pageable-copy claims (pinned + non_blocking overlaps them), not
 * sync-frequency's; after a pinned copy the same gap stays a sync wait. */
APX_TEST(the_sync_of_a_pageable_copy_is_the_copy_s)
{
	struct apx_model *m = copy_sync_gemm(APX_MEM_PAGEABLE);
	const struct apx_finding *f;

	APX_ASSERT(m && m->steady.count >= 18);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_SYNC], 0);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_STAGING] >= 17 * 200 * US);
	f = finding("pageable-copy");
	APX_ASSERT(f && f->saving_ns >= (double)m->gpu.idle_by_cause[APX_IDLE_STAGING]);
	APX_ASSERT(!finding("sync-frequency"));
	apx_model_free(m);

	m = copy_sync_gemm(APX_MEM_PINNED);
	APX_ASSERT(m && m->gpu.idle_by_cause[APX_IDLE_SYNC] >= 17 * 200 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_STAGING], 0);
	apx_model_free(m);
	return 0;
}

/* No steps: one kernel, then a stall of stall_ms (at copy number at, 0: before the first),
 * and 10 peer-to-peer copies of 170 us, 20 us apart (p2p_copy.py: a second GPU's context and
 * peer access are set up before the first copy). */
static struct apx_model *p2p_after_stall(uint64_t stall_ms, int at)
{
	struct tg t;
	uint64_t ts = 1 * MS + 41 * US;

	if (tg_open(&t) < 0)
		return NULL;
	tg_kernel(&t, 1 * MS, 41 * US, "randn", 7);
	for (int i = 0; i < 10; i++) {
		ts += i == at ? stall_ms * MS : 20 * US;
		tg_copy(&t, ts, 170 * US, APX_COPY_P2P, APX_MEM_DEVICE, 64u << 20, 1, 0, 7);
		ts += 170 * US;
	}
	return load(&t);
}

/* The gap before the first copy of a kind that recurs is first-call work (start-up), not
 * steady-state idle: gpu-starvation does not fire; the same stall between two copies does. */
APX_TEST(the_gap_before_the_first_recurring_copy_is_startup)
{
	struct apx_model *m = p2p_after_stall(150, 0);

	APX_ASSERT(m && m->steady.source == APX_STEPS_NONE);
	APX_ASSERT(m->gpu.startup_idle_ns >= 150 * MS);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN], 0);
	APX_ASSERT(!finding("gpu-starvation") && status("gpu-starvation") == APX_RULE_CLEAN);
	apx_model_free(m);

	m = p2p_after_stall(150, 5);
	APX_ASSERT(m && m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= 150 * MS);
	APX_ASSERT(finding("gpu-starvation"));
	apx_model_free(m);
	return 0;
}

/* 40 steps of 8 micro-batches, each: a sync (loss.item(): blocked_us) ending a 150 us gap,
 * then 10 kernels of 80 us with ramp gaps of ramp_us while the host gets ahead again, then
 * (host_ahead) 20 kernels back to back 1 us apart, or (not) 20 more with the same gaps: the
 * host never gets ahead before the next sync. */
static struct apx_model *syncs_then_ramp(uint64_t ramp_us, int host_ahead, uint64_t blocked_us)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 40; s++) {
		uint64_t s0 = ts;

		for (int mb = 0; mb < 8; mb++) {
			tg_sync(&t, ts - blocked_us * US, ts, APX_SYNC_KIND_STREAM);
			ts += 150 * US;
			for (int k = 0; k < 30; k++) {
				tg_kernel(&t, ts, 80 * US, k % 2 ? "relu" : "gemm", 7);
				ts += 80 * US + (k < 10 || !host_ahead ? ramp_us * US : 1 * US);
			}
		}
		tg_marker(&t, s0, ts, "step");
	}
	return load(&t);
}

/* After a sync the GPU's queue is empty: the gaps until the host is ahead again (the refill)
 * are the sync's, and sync-frequency's saving holds them; when the host never gets ahead
 * (it launches slower than the GPU runs), they stay with their causes. */
APX_TEST(the_refill_after_a_sync_is_the_sync_s)
{
	struct apx_model *m = syncs_then_ramp(30, 1, 300);
	const struct apx_finding *f;
	uint64_t sync, refill = 0;

	APX_ASSERT(m && m->steady.count >= 35 && !m->launch_bound);
	for (unsigned k = 0; k <= APX_IDLE__COUNT; k++)
		refill += m->gpu.refill_ns[k];
	sync = m->gpu.idle_by_cause[APX_IDLE_SYNC];
	/* per micro-batch: the 150 us gap and 10 ramp gaps of 30 us */
	APX_ASSERT(refill >= (uint64_t)(m->steady.count - 2) * 8 * 10 * 30 * US);
	APX_ASSERT(sync >= refill + (uint64_t)(m->steady.count - 2) * 8 * 150 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN], 0);
	f = finding("sync-frequency");
	APX_ASSERT(f && f->saving_ns >= (double)sync * 0.99);
	APX_ASSERT(strstr(f->evidence, "got ahead"));
	APX_ASSERT(!finding("gpu-starvation"));
	apx_model_free(m);

	/* the host never ahead before the next sync, and its own work (3.45 ms a micro-batch less
	 * 0.3 ms blocked) longer than the GPU's (2.4 ms): a slower host, the gaps are not the
	 * sync's */
	m = syncs_then_ramp(30, 0, 300);
	APX_ASSERT(m && !m->launch_bound);
	refill = 0;
	for (unsigned k = 0; k <= APX_IDLE__COUNT; k++)
		refill += m->gpu.refill_ns[k];
	APX_ASSERT_EQ(refill, 0);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_LAUNCH] >=	/* short gaps: launch overhead */
		   (uint64_t)(m->steady.count - 2) * 8 * 29 * 30 * US);
	for (size_t i = 0; i < m->gaps.n; i++)	/* no gap is left with the tentative cause */
		APX_ASSERT(APX_VEC_AT(&m->gaps, struct apx_an_gap, i)->cause < APX_IDLE__COUNT);
	apx_model_free(m);

	/* the same gaps, but the host blocked 2.5 ms a micro-batch: its own work (0.95 ms) is
	 * shorter than the GPU's, so without the syncs it would get ahead: the refills the next
	 * sync cuts short are the sync's */
	m = syncs_then_ramp(30, 0, 2500);
	APX_ASSERT(m && !m->launch_bound);
	refill = 0;
	for (unsigned k = 0; k <= APX_IDLE__COUNT; k++)
		refill += m->gpu.refill_ns[k];
	APX_ASSERT(refill >= (uint64_t)(m->steady.count - 2) * 8 * 29 * 30 * US);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_LAUNCH] < 8 * 30 * 30 * US);
	f = finding("sync-frequency");
	APX_ASSERT(f && !finding("gpu-starvation") && !finding("launch-bound"));
	apx_model_free(m);
	return 0;
}

/* apx analyze --replay: the range profiler replays a launch (a kernel record without times)
 * while the GPU idles, 20 ms a step here; that gap is the collector's, not the program's
 * (gpu-starvation silent), and a gap with no replayed launch in it stays unknown. */
static struct apx_model *stalls_every_third_step(int replayed)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 30; s++) {
		uint64_t s0 = ts;

		for (int k = 0; k < 10; k++, ts += 410 * US) {
			tg_kernel(&t, ts, 400 * US, k % 2 ? "gemm" : "norm", 7);
			if (k == 4 && s % 3 == 0) {
				if (replayed)
					tg_kernel(&t, 0, 0, "gemm", 7);	/* no times */
				ts += 20 * MS;
			}
		}
		tg_marker(&t, s0, ts, "step");
	}
	return load(&t);
}

APX_TEST(the_gap_of_a_replayed_launch_is_the_collector_s)
{
	struct apx_model *m = stalls_every_third_step(1);

	APX_ASSERT(m && m->steady.count >= 25);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_COLLECTOR] >= 8 * 20 * MS);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] < 1 * MS);
	APX_ASSERT(!finding("gpu-starvation"));
	apx_model_free(m);

	m = stalls_every_third_step(0);		/* the same stalls, nothing replayed */
	APX_ASSERT(m && m->steady.count >= 25);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_COLLECTOR], 0);
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= 8 * 20 * MS);
	APX_ASSERT(finding("gpu-starvation"));
	apx_model_free(m);
	return 0;
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Random traces: kernels, copies of every kind (some with call times), syncs and faults. */
APX_TEST(every_idle_ns_once_and_savings_within_the_window)
{
	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct tg t;
		struct apx_model *m;
		uint64_t s = seed, ts = 1 * MS, sum = 0;
		double saved = 0;
		int steps = 20 + (int)(rnd(&s) % 60);

		APX_ASSERT_OK(tg_open(&t));
		if (seed % 3 == 0)
			tg_kv(&t, "collector_launch_cost_ns", "3000");
		for (int i = 0; i < steps; i++) {
			uint64_t gap = rnd(&s) % 2 ? rnd(&s) % (12 * MS) : rnd(&s) % (40 * US);
			uint64_t bytes = rnd(&s) % 2 ? 4096 : 8u << 20;
			unsigned host = rnd(&s) % 2 ? APX_MEM_PAGEABLE : APX_MEM_PINNED;
			uint64_t d = bytes > 4096 ? 900 * US : 8 * US;

			if (seed % 2)
				tg_copy_call(&t, ts, d, APX_COPY_H2D, host, bytes, ts - gap / 2, ts + d);
			else
				tg_copy(&t, ts, d, APX_COPY_H2D, host, bytes, 0, 0, 7);
			ts += d + rnd(&s) % (20 * US);
			for (int k = 0; k < 6; k++) {
				uint64_t kd = 5 * US + rnd(&s) % (2 * MS);

				tg_kernel(&t, ts, kd, k % 2 ? "a" : "b", 7);
				ts += kd + rnd(&s) % (30 * US);
			}
			if (rnd(&s) % 3 == 0)
				tg_sync(&t, ts - 100 * US, ts + rnd(&s) % (200 * US), APX_SYNC_KIND_STREAM);
			if (rnd(&s) % 5 == 0)
				tg_uvm(&t, ts + 10 * US, ts + 20 * US, APX_UVM_CPU_FAULT, 4096);
			ts += gap;
		}
		m = load(&t);
		APX_ASSERT(m && m->timelines.n == 1);
		{
			const struct apx_an_timeline *tl =
				APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0);

			for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
				sum += tl->idle_by_cause[c];
			/* every idle ns once: the causes, start-up and teardown add up to the idle */
			APX_ASSERT_EQ(sum + tl->startup_idle_ns + tl->teardown_idle_ns, tl->idle_ns);
			APX_ASSERT(sum <= tl->window_ns);
			APX_ASSERT_EQ(tl->startup_ns + tl->window_ns + tl->teardown_ns,
				      tl->last_ns - tl->first_ns);
		}
		for (size_t i = 0; i < fd.n; i++)
			if (!fd.f[i].startup && fd.f[i].saving_estimated)
				saved += fd.f[i].saving_ns;
		if (saved > (double)m->gpu.window_ns + 1)
			APX_FAIL_("seed %llu: savings %.0f over the steady window %llu",
				  (unsigned long long)seed, saved, (unsigned long long)m->gpu.window_ns);
		apx_model_free(m);
	}
	return 0;
}

APX_TEST_MAIN()
