/*
 * test-analysis.c - the analysis model (timelines, aggregates, occupancy) and every report
 * rule, each fired on a synthetic trace that has its problem and kept silent on one that
 * does not, with the saving checked against the model the rule states.
 */
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "analysis/whatif/whatif.h"
#include "analysis/power_cap.h"
#include "apx-test.h"
#include "unit/analysed.h"

#include "base/banned.h"

static struct apx_findings fd;

static struct apx_model *analyse(struct tg *t)
{
	return tg_analyse(t, &fd);
}

static const struct apx_finding *finding(const char *rule)
{
	return tg_find(&fd, rule);
}

static enum apx_rule_status status(const char *rule)
{
	return tg_status(&fd, rule);
}

/* a finding's metric of that key, -1 when it has none */
static double metric(const struct apx_finding *f, const char *key)
{
	for (size_t i = 0; i < f->nmetrics; i++)
		if (!strcmp(f->metrics[i].key, key))
			return f->metrics[i].value;
	return -1;
}

#define MS 1000000ull
#define US 1000ull

/* Every rule of the table reports a result. */
static size_t nrules(void)
{
	size_t n;

	(void)apx_rules(&n);
	return n;
}

APX_TEST(timeline_union_concurrency_overlap)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_timeline *tl;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 10 * MS, 4 * MS, "a", 7);		/* 10-14 */
	tg_kernel(&t, 12 * MS, 4 * MS, "b", 8);		/* 12-16: 2 ms concurrent */
	tg_copy(&t, 15 * MS, 3 * MS, APX_COPY_H2D, APX_MEM_PINNED, 1 << 20, 1, 0, 9); /* 15-18 */
	tg_kernel(&t, 20 * MS, 1 * MS, "a", 7);		/* gap 18-20 */
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->timelines.n, 1);
	tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0);
	APX_ASSERT_EQ(tl->first_ns, 10 * MS);
	APX_ASSERT_EQ(tl->last_ns, 21 * MS);
	APX_ASSERT_EQ(tl->busy_ns, 9 * MS);		/* 10-18 and 20-21 */
	APX_ASSERT_EQ(tl->idle_ns, 2 * MS);
	APX_ASSERT_EQ(tl->kernel_busy_ns, 7 * MS);
	APX_ASSERT_EQ(tl->copy_busy_ns, 3 * MS);
	APX_ASSERT_EQ(tl->overlap_ns, 1 * MS);		/* 15-16 */
	APX_ASSERT_EQ(tl->concurrent_ns, 2 * MS);	/* 12-14 */
	APX_ASSERT_EQ(tl->gaps, 1);
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_UNKNOWN], 2 * MS);
	APX_ASSERT_EQ(tl->before_ns, 10 * MS - 1000);	/* header start_ns = 1000 */
	apx_model_free(m);
	return 0;
}

/* Activity at time 0 is activity (a fuzzed trace: a copy at 0-1 ns made a timeline outlast the
 * run, and one starting later lost its start): the run and the timeline both start at 0. */
APX_TEST(timeline_activity_at_time_zero)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_timeline *tl;

	APX_ASSERT_OK(tg_open(&t));
	tg_copy(&t, 0, 1, APX_COPY_H2D, APX_MEM_PINNED, 64, 1, 0, 9);	/* 0-1 ns */
	tg_kernel(&t, 100, 50, "a", 7);					/* 100-150 ns */
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->timelines.n, 1);
	tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0);
	APX_ASSERT_EQ(tl->first_ns, 0);
	APX_ASSERT_EQ(tl->last_ns, 150);
	APX_ASSERT_EQ(tl->busy_ns, 51);
	APX_ASSERT_EQ(m->run_start_ns, 0);
	APX_ASSERT(m->wall_ns >= tl->last_ns - tl->first_ns);
	apx_model_free(m);
	return 0;
}

/* A trace of an older collector holds what CUPTI flushed before it ended (apx attach's detach):
 * a memset at 0-0 and a copy from all ones to 0. Neither stretches the run; the collector's
 * start cost (kv start_cost) is read. */
APX_TEST(untimed_activities_and_start_cost)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1000, 50, "a", 7);
	tg_kernel(&t, 2000, 50, "a", 7);
	tg_memset(&t, 0, 0, 1);
	tg_copy(&t, UINT64_MAX, 1, APX_COPY_D2D, APX_MEM_DEVICE, 64, 1, 0, 7);	/* to 0 */
	tg_kv(&t, "start_cost", "101.5 ms: trace and buffers 2.0, CUPTI subscription 60.3, "
	      "sources 39.2 (activity 30.1, nvml 9.0)");
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->run_start_ns, 1000);
	APX_ASSERT(m->wall_ns < 10000);
	APX_ASSERT_EQ(m->files[0].start_cost_us, 101500);
	apx_model_free(m);
	return 0;
}

APX_TEST(idle_attribution_sync_split_and_warmup)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_timeline *tl;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 1 * MS, "init", 7);	/* warm-up: 2-10 ms idle */
	tg_kernel(&t, 10 * MS, 1 * MS, "step", 7);	/* last new name starts at 10 ms */
	tg_sync(&t, 10 * MS, 11 * MS + 10 * US, APX_SYNC_KIND_STREAM);
	tg_kernel(&t, 12 * MS, 1 * MS, "step", 7);	/* 11-12: after a sync */
	tg_copy(&t, 15 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 1 << 20, 0, 0, 7);	/* 13-15 data */
	tg_kernel(&t, 16 * MS + 20 * US, 1 * MS, "step", 7);	/* 20 us launch gap */
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->warmup_end_ns, 10 * MS);
	tl = APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0);
	APX_ASSERT_EQ(m->steady_start_ns, 10 * MS);	/* no steps: the window starts after warm-up */
	APX_ASSERT_EQ(tl->startup_idle_ns, 8 * MS);
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_SYNC], 1 * MS);
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_UNKNOWN], 0);
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_DATA], 2 * MS);	/* no copy-call times */
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_STAGING], 0);
	APX_ASSERT_EQ(tl->idle_by_cause[APX_IDLE_LAUNCH], 20 * US);
	APX_ASSERT_EQ(tl->gaps_by_cause[APX_IDLE_SYNC], 1);
	APX_ASSERT_EQ(tl->gaps, 4);
	apx_model_free(m);
	return 0;
}

APX_TEST(nvtx_projection)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_range *r;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 10 * MS, 4 * MS, "a", 7);		/* 10-14 */
	tg_kernel(&t, 20 * MS, 2 * MS, "b", 7);		/* 20-22 */
	tg_marker(&t, 12 * MS, 21 * MS, "step");	/* covers 12-14 and 20-21: 3 ms */
	tg_marker(&t, 30 * MS, 31 * MS, "step");	/* no kernel */
	tg_marker(&t, 9 * MS, 23 * MS, "epoch");	/* 6 ms */
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->ranges.n, 2);
	r = APX_VEC_AT(&m->ranges, struct apx_an_range, 0);	/* sorted by GPU time */
	APX_ASSERT(r->name_len == 5 && !memcmp(r->name, "epoch", 5));
	APX_ASSERT_EQ(r->gpu_ns, 6 * MS);
	r = APX_VEC_AT(&m->ranges, struct apx_an_range, 1);
	APX_ASSERT_EQ(r->count, 2);
	APX_ASSERT_EQ(r->wall_ns, 10 * MS);
	APX_ASSERT_EQ(r->gpu_ns, 3 * MS);
	apx_model_free(m);
	return 0;
}

APX_TEST(kernel_aggregates_exact_percentiles)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_name *nm = NULL;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 1; i <= 100; i++)	/* durations 1..100 us, written out of order */
		tg_kernel(&t, (1000 - i * 7) * MS, ((i * 37) % 100 + 1) * US, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->names.n, 1);
	nm = APX_VEC_AT(&m->names, struct apx_an_name, 0);
	APX_ASSERT_EQ(nm->count, 100);
	APX_ASSERT_EQ(nm->total_ns, 5050 * US);
	APX_ASSERT_EQ(nm->min_ns, 1 * US);
	APX_ASSERT_EQ(nm->max_ns, 100 * US);
	APX_ASSERT_EQ(nm->p50_ns, 50 * US);
	APX_ASSERT_EQ(nm->p95_ns, 95 * US);
	APX_ASSERT(m->k.start == NULL);	/* consumed by the timelines, freed */
	apx_model_free(m);
	return 0;
}

APX_TEST(theoretical_occupancy)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel_cfg(&t, 1 * MS, 1 * MS, "full", 256, 32, 0);		/* 8 blocks x 8 warps */
	tg_kernel_cfg(&t, 3 * MS, 1 * MS, "regs", 256, 128, 0);		/* 2 blocks by registers */
	tg_kernel_cfg(&t, 5 * MS, 1 * MS, "smem", 128, 32, 100000);	/* 2 blocks by smem */
	m = analyse(&t);
	APX_ASSERT(m);
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);
		double want = nm->text[0] == 'f' ? 1.0 : nm->text[0] == 'r' ? 0.25 : 0.125;

		if (fabs(nm->occupancy - want) > 1e-9)
			APX_FAIL_("%.*s: occupancy %f, want %f", (int)nm->len, nm->text, nm->occupancy, want);
	}
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_pageable_copy)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;
	uint64_t at = 1 * MS;
	double pinned_ns, pageable_ns = 0, bytes = 0, want;

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 50; i++) {	/* 8 MB pageable at 5 GB/s, pinned at 25 GB/s */
		tg_copy(&t, at, 1600 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 8000000, 0, 0, 7);
		at += 2 * MS;
		tg_copy(&t, at, 320 * US, APX_COPY_H2D, APX_MEM_PINNED, 8000000, 1, 0, 7);
		at += 1 * MS;
		pageable_ns += 1600 * US;
		bytes += 8e6;
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("pageable-copy");
	APX_ASSERT(f);
	pinned_ns = bytes / 25e9 * 1e9;
	/* no copy-call times in the trace: the GPU idle before each pageable copy (1 ms - 320 us)
	 * is the host producing the input (data), not staging */
	want = pageable_ns - pinned_ns;
	if (fabs(f->saving_ns - want) > 1)
		APX_FAIL_("saving %.0f, want %.0f", f->saving_ns, want);
	APX_ASSERT_EQ(m->copy_host_times, 0);
	/* (and the 400 us before each pinned copy) */
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_DATA], 49 * 680 * US + 50 * 400 * US);
	APX_ASSERT(strstr(f->model, "pinned copies reached in this trace"));
	APX_ASSERT(strstr(f->fix, "pin_memory=True"));
	apx_model_free(m);

	/* the same with the copy calls' host times: each pageable call enters 400 us before its
	 * DMA starts, so 400 us of every gap before it is staging, the rest data */
	APX_ASSERT_OK(tg_open(&t));
	at = 1 * MS;
	for (int i = 0; i < 50; i++) {
		tg_copy_call(&t, at, 1600 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 8000000, at - 400 * US,
			     at + 1600 * US);
		at += 2 * MS;
		tg_copy(&t, at, 320 * US, APX_COPY_H2D, APX_MEM_PINNED, 8000000, 1, 0, 0);
		at += 1 * MS;
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->copy_host_times, 1);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_STAGING], 49 * 400 * US);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_DATA], 49 * 280 * US + 50 * 400 * US);
	f = finding("pageable-copy");
	APX_ASSERT(f);
	want = pageable_ns - pinned_ns + 49 * 400.0 * US;
	if (fabs(metric(f, "saving_rule_ns") - want) > 1)	/* the rule's own model */
		APX_FAIL_("saving %.0f, want %.0f", metric(f, "saving_rule_ns"), want);
	/* the what-if simulator's (the default, copies with host times): nothing here waits for
	 * the copied data, so a non-blocking pinned copy takes the host's whole 2 ms wait away
	 * (its call costs ~10 us), not only the copy's time beyond the pinned rate */
	APX_ASSERT(strstr(f->model, "what-if simulation (pin-copies)"));
	if (fabs(f->saving_ns - 49 * 1990.0 * US) > 0.01 * 49 * 1990.0 * US)
		APX_FAIL_("simulated saving %.0f, want about %.0f", f->saving_ns, 49 * 1990.0 * US);
	APX_ASSERT(strstr(f->evidence, "GPU idle while the host staged them"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* pinned only: silent */
	tg_copy(&t, 1 * MS, 320 * US, APX_COPY_H2D, APX_MEM_PINNED, 8000000, 1, 0, 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("pageable-copy") && status("pageable-copy") == APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_sync_copy)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;
	uint64_t steady = 0;

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 20; i++) {
		tg_kernel(&t, (uint64_t)i * 10 * MS, 5 * MS, "k", 7);
		tg_copy(&t, (uint64_t)i * 10 * MS + 6 * MS, 2 * MS, APX_COPY_D2H, APX_MEM_PINNED, 1 << 20,
			0, 0, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("sync-copy");
	APX_ASSERT(f);
	for (size_t i = 0; i < m->copies.n; i++)	/* those of the steady state */
		steady += apx_phase_of(m, APX_VEC_AT(&m->copies, struct apx_an_copy, i)->start) ==
			  APX_PHASE_STEADY;
	APX_ASSERT(steady >= 15);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, steady * 2 * MS);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 20; i++) {
		tg_kernel(&t, (uint64_t)i * 10 * MS, 5 * MS, "k", 7);
		tg_copy(&t, (uint64_t)i * 10 * MS + 6 * MS, 2 * MS, APX_COPY_D2H, APX_MEM_PINNED, 1 << 20,
			1, 0, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("sync-copy"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_sync_frequency)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 100; i++) {	/* kernel 100 us, sync returns, relaunch: 40 us */
		uint64_t s = 1 * MS + i * 140 * US;

		tg_kernel(&t, s, 100 * US, "k", 7);
		tg_sync(&t, s + 10 * US, s + 110 * US, APX_SYNC_KIND_DEVICE);
		tg_marker(&t, s, s + 140 * US, "step");
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->steps, 100);
	f = finding("sync-frequency");
	APX_ASSERT(f);
	/* the rule's own model: 99 gaps between 100 kernels; the what-if simulator's (the
	 * default) also counts the host's last relaunch after the window: within 1 % */
	APX_ASSERT_EQ((uint64_t)metric(f, "saving_rule_ns"), 99 * 40 * US);
	APX_ASSERT(fabs(f->saving_ns - 99.0 * 40 * US) <= 0.01 * 99.0 * 40 * US);
	APX_ASSERT(strstr(f->model, "what-if simulation (remove-syncs)"));
	APX_ASSERT(strstr(f->evidence, "per step: 1.0"));
	apx_model_free(m);

	/* CUB's own ranges (nonzero, sort: one a call, 3 a step here) are not iterations; the
	 * evidence counts the steady steps' syncs per steady step */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = 1 * MS + i * 140 * US;

		tg_kernel(&t, s, 100 * US, "k", 7);
		tg_sync(&t, s + 10 * US, s + 110 * US, APX_SYNC_KIND_DEVICE);
		for (uint64_t j = 0; j < 3; j++)
			tg_marker(&t, s + j * US, s + j * US + 500, "cub::DeviceRadixSort");
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->steps, 0);
	f = finding("sync-frequency");
	APX_ASSERT(f && m->steady.count > 0);
	{
		char want[64];	/* apx's steps (here of 2 kernels): about 100 / their count */

		snprintf(want, sizeof(want), "(%llu steps)", (unsigned long long)m->steady.count);
		APX_ASSERT(strstr(f->evidence, want));
		APX_ASSERT(!strstr(f->evidence, "(300 steps)"));
	}
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 100; i++)
		tg_kernel(&t, 1 * MS + i * 1010 * US, 1 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("sync-frequency"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_gpu_starvation)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++)	/* 2 ms kernels, 5 ms gaps with no cause */
		tg_kernel(&t, 1 * MS + i * 7 * MS, 2 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("gpu-starvation");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 9 * 5 * MS);
	APX_ASSERT(f->severity == APX_SEV_CRITICAL);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++)
		tg_kernel(&t, 1 * MS + i * 2 * MS, 2 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("gpu-starvation"));
	apx_model_free(m);
	return 0;
}

/* 5000 kernels of 3 us, 20 us apart, after the kv pairs kv[0], kv[1], kv[2], ... (n strings) */
static struct apx_model *tiny_loop(const char *const *kv, size_t n)
{
	struct tg t;

	if (tg_open(&t) < 0)
		return NULL;
	for (size_t i = 0; i + 1 < n; i += 2)
		tg_kv(&t, kv[i], kv[i + 1]);
	for (uint64_t i = 0; i < 5000; i++)
		tg_kernel(&t, 1 * MS + i * 23 * US, 3 * US, "tiny", 7);
	return analyse(&t);
}

APX_TEST(rule_launch_bound)
{
	static const char *const cost5[] = { "collector_launch_cost_ns", "5000" };
	static const char *const cost30[] = { "collector_launch_cost_ns", "30000" };
	/* the cost measured inside the traced process (self_cost.c) wins over apx-calibrate's,
	 * written before it at the start (and after it: the order does not matter) */
	static const char *const self5[] = {
		"collector_launch_cost_ns", "30000", "collector_launch_cost_self_ns", "5000",
		"collector_launch_cost_ns", "30000",
	};
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;
	uint64_t gaps;

	m = tiny_loop(NULL, 0);
	APX_ASSERT(m);
	f = finding("launch-bound");
	APX_ASSERT(f);
	/* the steps (kernel sequence) cover all but the first and last gaps or so */
	gaps = m->gpu.gaps_by_cause[APX_IDLE_LAUNCH];
	APX_ASSERT(gaps >= 4990 && gaps <= 4999);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_LAUNCH], gaps * 20 * US);
	/* less the GPU's gap between graph-replayed kernels (no graph here: APX_WI_GRAPH_GAP_NS) */
	APX_ASSERT_EQ((uint64_t)f->saving_ns, gaps * (20 * US - APX_WI_GRAPH_GAP_NS));
	APX_ASSERT(strstr(f->model, "what-if simulation (cuda-graph)"));
	APX_ASSERT(strstr(f->fix, "reduce-overhead"));
	apx_model_free(m);

	/* the same loop traced by a collector that costs 5 us a launch: 5 us of every gap is the
	 * collector's, so the graph saves 20 - 5 us a gap less the replay's gap; the same when
	 * that 5 us was measured in the traced process and apx-calibrate said 30 */
	for (int self = 0; self <= 1; self++) {
		m = self ? tiny_loop(self5, 6) : tiny_loop(cost5, 2);
		APX_ASSERT(m);
		APX_ASSERT_EQ(m->launch_cost_ns, 5000);
		APX_ASSERT(m->launch_cost_self == self && m->files[0].launch_cost_self == self);
		f = finding("launch-bound");
		APX_ASSERT(f);
		gaps = m->gpu.gaps_by_cause[APX_IDLE_LAUNCH] +
		       m->gpu.gaps_by_cause[APX_IDLE_COLLECTOR];
		APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_COLLECTOR], gaps * 5 * US);
		APX_ASSERT_EQ((uint64_t)f->saving_ns, gaps * ((20 - 5) * US - APX_WI_GRAPH_GAP_NS));
		APX_ASSERT(strstr(f->evidence, "collector's cost per launch: 5.0 us"));
		APX_ASSERT(strstr(f->evidence, self ? "measured in the traced process"
						    : "measured by apx analyze before the program"));
		apx_model_free(m);
	}

	/* a collector cost larger than the gaps takes them all: nothing left to save */
	m = tiny_loop(cost30, 2);
	APX_ASSERT(m && !finding("launch-bound"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* 1 ms kernels 20 us apart: not launch-bound */
	for (uint64_t i = 0; i < 500; i++)
		tg_kernel(&t, 1 * MS + i * 1020 * US, 1 * MS, "big", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("launch-bound"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_copy_overlap)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 20; i++) {	/* copy 2 ms then kernel 3 ms, serial */
		tg_copy(&t, i * 5 * MS, 2 * MS, APX_COPY_H2D, APX_MEM_PINNED, 50000000, 1, 0, 7);
		tg_kernel(&t, i * 5 * MS + 2 * MS, 3 * MS, "k", 7);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("copy-overlap");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 38 * MS);	/* copy 0 comes before any kernel */
	APX_ASSERT(strstr(f->evidence, "left out: 2.00 ms of copies before the first kernel"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* loading the model: copies before the first kernel only */
	for (uint64_t i = 0; i < 10; i++)
		tg_copy(&t, i * 2 * MS, 2 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 50000000, 1, 0, 7);
	for (uint64_t i = 0; i < 100; i++)
		tg_kernel(&t, 20 * MS + i * 1 * MS, 1 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("copy-overlap"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* copies hidden under kernels on a side stream */
	for (uint64_t i = 0; i < 20; i++) {
		tg_kernel(&t, i * 3 * MS, 3 * MS, "k", 7);
		tg_copy(&t, i * 3 * MS + 500 * US, 2 * MS, APX_COPY_H2D, APX_MEM_PINNED, 50000000, 1, 0, 9);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("copy-overlap"));
	apx_model_free(m);
	return 0;
}

/* The power cap's model: kernels busy 60 % of a step, 40 % of it saved at the cap. The
 * clock falls as (d1 / d2)^(1/3) with the duty d2 = 1 (no idle left): the kernels take
 * (1 / 0.6)^(1/3) = 1.186 times longer, so 0.4 - 0.6 * 0.186 = 0.289 of the step is saved.
 * Nothing removed, nothing saved and no slowdown. */
APX_TEST(power_capped_saving)
{
	double slow, x = apx_power_capped_saving(0.6, 0.4, &slow);

	APX_ASSERT(fabs(slow - cbrt(1 / 0.6)) < 1e-9);
	APX_ASSERT(fabs(x - (0.4 - 0.6 * (cbrt(1 / 0.6) - 1))) < 1e-9);
	x = apx_power_capped_saving(0.6, 0.0, &slow);
	APX_ASSERT(x == 0 && slow == 1.0);
	x = apx_power_capped_saving(0.6, 0.5, &slow);	/* more than the idle 0.4: taken as 0.4 */
	APX_ASSERT(fabs(slow - cbrt(1 / 0.6)) < 1e-9);
	return 0;
}

/* copy-overlap at the power cap: the serial loop of rule_copy_overlap (copy 2 ms, kernel 3 ms)
 * with NVML readings over it. Capped all the time, the saving is the copy time less the
 * kernels' slowdown (below the 38 ms of copy time, as power_capped_saving's maths gives), and
 * the evidence says so; readings without the cap keep the copy time and drop the "upper
 * bound" caveat (the trace says it was not capped). */
APX_TEST(rule_copy_overlap_power_cap)
{
	for (int capped = 0; capped < 2; capped++) {
		struct tg t;
		struct apx_model *m;
		const struct apx_finding *f;
		double slow, want;

		APX_ASSERT_OK(tg_open(&t));
		for (uint64_t i = 0; i < 20; i++) {
			tg_copy(&t, i * 5 * MS, 2 * MS, APX_COPY_H2D, APX_MEM_PINNED, 50000000,
				1, 0, 7);
			tg_kernel(&t, i * 5 * MS + 2 * MS, 3 * MS, "k", 7);
		}
		for (uint64_t ts = 0; ts < 100 * MS; ts += 10 * MS) {
			tg_metric_span(&t, ts, ts + 10 * MS, "nvml.power_capped", "", 0, capped);
			tg_metric_span(&t, ts, ts + 10 * MS, "nvml.power", "W", 0, 690.0);
			tg_metric_span(&t, ts, ts + 10 * MS, "nvml.power_limit", "W", 0, 700.0);
			tg_metric_span(&t, ts, ts + 10 * MS, "nvml.clock_sm", "MHz", 0, 1605.0);
		}
		m = analyse(&t);
		APX_ASSERT(m);
		f = finding("copy-overlap");
		APX_ASSERT(f);
		APX_ASSERT(!strstr(f->evidence, "an upper bound"));
		if (!capped) {
			APX_ASSERT_EQ((uint64_t)f->saving_ns, 38 * MS);
			APX_ASSERT(!strstr(f->evidence, "power cap"));
		} else {
			want = (double)m->steady_ns *
			       apx_power_capped_saving(m->steady.busy_pct / 100.0,
						       38.0 * MS / (double)m->steady_ns, &slow);
			APX_ASSERT(slow > 1.05 && want < 34.0 * MS);
			APX_ASSERT(fabs(f->saving_ns - want) < 1000);
			APX_ASSERT(strstr(f->evidence, "at the power cap: the software power "
						       "cap held in 100% of the steady state "
						       "(690 of 700 W"));
		}
		apx_model_free(m);
	}
	return 0;
}

APX_TEST(rule_unified_memory)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 10 * MS, "k", 7);
	for (uint64_t i = 0; i < 10; i++)
		tg_uvm(&t, 1 * MS + i * MS, 1 * MS + i * MS + 200 * US, APX_UVM_MIGRATE_H2D, 2 << 20);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("unified-memory");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 10 * MS);	/* the kernel ran while pages migrated */
	APX_ASSERT_EQ(m->uvm_bytes[APX_UVM_MIGRATE_H2D], 10 * (2 << 20));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* the GPU idles while the host faults pages back */
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	tg_uvm(&t, 3 * MS, 3 * MS + 500 * US, APX_UVM_MIGRATE_D2H, 1 << 20);
	tg_kernel(&t, 6 * MS, 1 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("unified-memory");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 4 * MS);	/* the gap 2-6 ms */
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 10 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("unified-memory"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_memory_capacity)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));	/* 95 GB of a 100 GB device */
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	tg_mem(&t, 2 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 60000000000ull);
	tg_mem(&t, 3 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 35000000000ull);
	tg_mem(&t, 4 * MS, APX_MEMOP_FREE, APX_MEM_DEVICE, 35000000000ull);
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->device_mem_peak, 95000000000ull);
	APX_ASSERT_EQ(m->device_mem_now, 60000000000ull);
	APX_ASSERT(finding("memory-capacity"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	tg_mem(&t, 2 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 50000000000ull);
	m = analyse(&t);
	APX_ASSERT(m && !finding("memory-capacity"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* no allocation records: says so */
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	m = analyse(&t);
	APX_ASSERT(m && status("memory-capacity") == APX_RULE_NOT_MEASURED);
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_repeated_copy)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;
	double want;

	APX_ASSERT_OK(tg_open(&t));	/* 64 MiB pageable at 6.7 GB/s, 10 times */
	for (uint64_t i = 0; i < 10; i++) {
		tg_copy(&t, i * 12 * MS, 10 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 64u << 20, 0,
			0x7f001000, 7);
		tg_kernel(&t, i * 12 * MS + 10 * MS, 1 * MS, "k", 7);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("repeated-copy");
	APX_ASSERT(f);
	/* the 9 repeats at the pinned rate (here the link's peak): the rest is pageable-copy's */
	want = 9 * (double)(64u << 20) / apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL) * 1e9;
	if (fabs(f->saving_ns - want) > 1)
		APX_FAIL_("saving %.0f, want %.0f", f->saving_ns, want);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* a pinned staging buffer refilled each step: fine */
	for (uint64_t i = 0; i < 10; i++) {
		tg_copy(&t, i * 2 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PINNED, 4 << 20, 1, 0x7f001000, 7);
		tg_kernel(&t, i * 2 * MS + 1 * MS, 1 * MS, "k", 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("repeated-copy"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* no host addresses: not measured */
	tg_copy(&t, 1 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 4 << 20, 0, 0, 7);
	m = analyse(&t);
	APX_ASSERT(m && status("repeated-copy") == APX_RULE_NOT_MEASURED);
	apx_model_free(m);
	return 0;
}

/* With content fingerprints (the collector's host_fp): the same pinned buffer with the same
 * data every step (the suite's repeated_copy) is a repeat; the same buffer refilled with new
 * data every step (pageable's fixed variant, a loader's pinned batch) is none, pinned or
 * pageable; the same data at another address is another buffer. */
APX_TEST(rule_repeated_copy_fingerprints)
{
	const uint64_t bytes = 64u << 20, addr = 0x7f0000200000ull;
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;
	double want = 0, rate;

	APX_ASSERT_OK(tg_open(&t));	/* one unchanged pinned buffer, 10 steps */
	for (uint64_t i = 0; i < 10; i++) {
		tg_copy_fp(&t, i * 4 * MS, 1200 * US, APX_MEM_PINNED, bytes, addr, 0xfeedull);
		tg_kernel(&t, i * 4 * MS + 2 * MS, 1 * MS, "k", 7);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("repeated-copy");
	APX_ASSERT(f);
	rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);
	for (int i = 1; i < 10; i++) {	/* each repeat at the pinned rate, at most its time */
		double at = (double)bytes / rate * 1e9;

		want += at < 1200 * US ? at : 1200 * US;
	}
	if (fabs(f->saving_ns - want) > 1)
		APX_FAIL_("saving %.0f, want %.0f", f->saving_ns, want);
	APX_ASSERT(metric(f, "repeats") == 9 && metric(f, "same_fp_repeats") == 9);
	APX_ASSERT(strstr(f->evidence, "same data: 9 repeats"));
	apx_model_free(m);

	for (unsigned kind = APX_MEM_PAGEABLE; kind <= APX_MEM_PINNED; kind++) {
		APX_ASSERT_OK(tg_open(&t));	/* one buffer refilled with new data each step */
		for (uint64_t i = 0; i < 10; i++) {
			tg_copy_fp(&t, i * 4 * MS, 1200 * US, kind, bytes, addr, 0x1000 + i);
			tg_kernel(&t, i * 4 * MS + 2 * MS, 1 * MS, "k", 7);
		}
		m = analyse(&t);
		APX_ASSERT(m && !finding("repeated-copy"));
		APX_ASSERT(status("repeated-copy") == APX_RULE_CLEAN);
		apx_model_free(m);
	}

	APX_ASSERT_OK(tg_open(&t));	/* the same data from 10 different buffers: 10 batches */
	for (uint64_t i = 0; i < 10; i++) {
		tg_copy_fp(&t, i * 4 * MS, 1200 * US, APX_MEM_PINNED, bytes, addr + i * bytes,
			   0xfeed);
		tg_kernel(&t, i * 4 * MS + 2 * MS, 1 * MS, "k", 7);
	}
	m = analyse(&t);
	APX_ASSERT(m && !finding("repeated-copy"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_fp32_matmul)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 6 * MS, "ampere_sgemm_128x64_nn", 7);
	tg_kernel(&t, 8 * MS, 4 * MS, "vectorized_elementwise_kernel", 7);
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("fp32-matmul");
	APX_ASSERT(f);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, 4 * MS);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 6 * MS, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 7);
	tg_kernel(&t, 8 * MS, 6 * MS, "ampere_tf32_s1688gemm_tf32_128x128_nn", 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("fp32-matmul"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_small_copies)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 2000; i++)
		tg_copy(&t, 1 * MS + i * 20 * US, 8 * US, APX_COPY_H2D, APX_MEM_PINNED, 4096, 1, 0, 7);
	m = analyse(&t);
	APX_ASSERT(m && finding("small-copies"));
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++)
		tg_copy(&t, 1 * MS + i * 20 * US, 8 * US, APX_COPY_H2D, APX_MEM_PINNED, 4096, 1, 0, 7);
	m = analyse(&t);
	APX_ASSERT(m && !finding("small-copies"));
	apx_model_free(m);
	return 0;
}

APX_TEST(rule_input_pipeline)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 20; i++) {	/* kernel, 3 ms idle, then the next batch arrives */
		uint64_t s = 1 * MS + i * 6 * MS;

		tg_kernel(&t, s, 2 * MS, "k", 7);
		tg_copy(&t, s + 5 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PINNED, 4 << 20, 1, 0, 7);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	f = finding("input-pipeline");
	APX_ASSERT(f);
	/* the gaps inside the steady window (the kernel sequence's steps) */
	APX_ASSERT(m->gpu.gaps_by_cause[APX_IDLE_DATA] >= 16);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_DATA], m->gpu.gaps_by_cause[APX_IDLE_DATA] * 3 * MS);
	APX_ASSERT_EQ((uint64_t)f->saving_ns, m->gpu.idle_by_cause[APX_IDLE_DATA]);
	APX_ASSERT(strstr(f->fix, "num_workers"));
	apx_model_free(m);
	return 0;
}

APX_TEST(findings_are_ranked_by_saving)
{
	struct tg t;
	struct apx_model *m;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++) {	/* half the kernels fault: fp32 and UVM both fit */
		tg_kernel(&t, 1 * MS + i * 7 * MS, 2 * MS, "ampere_sgemm_128x64_nn", 7);
		if (i % 2)
			tg_uvm(&t, 1 * MS + i * 7 * MS, 1 * MS + i * 7 * MS + 100 * US,
			       APX_UVM_GPU_FAULT, 4096);
	}
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT(fd.n >= 3);
	for (size_t i = 1; i < fd.n; i++)
		APX_ASSERT(fd.f[i - 1].saving_ns >= fd.f[i].saving_ns);
	APX_ASSERT_EQ(fd.nresults, nrules());
	apx_model_free(m);
	return 0;
}

APX_TEST(recorded_findings_cannot_push_rules_out)
{
	struct tg t;
	struct apx_model *m;
	size_t rules = 0, recorded = 0;

	/* a trace where the UVM rule fires, plus 100 findings a producer recorded */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 10; i++) {
		tg_kernel(&t, 1 * MS + i * 7 * MS, 2 * MS, "ampere_sgemm_128x64_nn", 7);
		tg_uvm(&t, 1 * MS + i * 7 * MS, 1 * MS + i * 7 * MS + 100 * US, APX_UVM_GPU_FAULT, 4096);
	}
	for (int i = 0; i < 100; i++)
		tg_finding(&t, "gpu-idle", APX_SEV_WARNING, 0, "recorded");
	m = analyse(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(fd.n, APX_FINDINGS_MAX);
	for (size_t i = 0; i < fd.n; i++) {
		rules += !fd.f[i].recorded_by;
		recorded += fd.f[i].recorded_by != NULL;
	}
	APX_ASSERT(finding("unified-memory") != NULL);
	APX_ASSERT(rules >= 1);
	APX_ASSERT_EQ(recorded, APX_FINDINGS_MAX - rules);
	APX_ASSERT_EQ(fd.recorded_dropped, 100 - recorded);
	APX_ASSERT(fd.nresults <= APX_RULES_MAX);
	apx_model_free(m);
	return 0;
}

APX_TEST(many_streams_are_hashed)
{
	struct tg t;
	struct apx_model *m;
	struct timespec a, b;
	double s;

	/* 200,000 kernels, each on its own stream: the linear lookup took 16 s */
	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 200000; i++)
		tg_kernel(&t, 1 * MS + i * 2 * US, 1 * US, "k", 1000 + i);
	clock_gettime(CLOCK_MONOTONIC, &a);
	m = analyse(&t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	APX_ASSERT(m);
	s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	/* the first 65535 streams have their own slot, the rest share slot 0 */
	APX_ASSERT_EQ(m->streams.n, 65535);
	for (size_t i = 0; i < 65535; i += 997) {
		const struct apx_an_stream *st = APX_VEC_AT(&m->streams, struct apx_an_stream, i);

		APX_ASSERT_EQ(st->id, 1000 + i);
		APX_ASSERT_EQ(st->kernels, i ? 1 : 1 + 200000 - 65535);
	}
	fprintf(stderr, "    200000 kernels on their own streams: model in %.2f s\n", s);
	APX_ASSERT(s < 20);	/* ASan build on a loaded machine; linear is minutes here */
	apx_model_free(m);
	return 0;
}

/* Close n traces, build one model of them (a run's files), run the rules into fd. */
static struct apx_model *analyse_files(struct tg *t, size_t n)
{
	struct apx_model *m = tg_model(t, n);

	if (m)
		apx_rules_run(m, &fd);
	return m;
}

static int val_text_is(const struct apx_an_obs_val *v, const char *s)
{
	return v->text && v->len == strlen(s) && !memcmp(v->text, s, v->len);
}

/* What the daemon's summary.c writes for a process that copied from pageable memory. */
static void nvperfd_summary(struct tg *t, uint64_t pid, const char *sm_pct, const char *samples,
			    const char *h2d_bytes)
{
	tg_metric(t, 10 * MS, "gpu.util_pct", "%", 0, 0, 10);
	tg_metric(t, 10 * MS, "gpu.mem_bytes", "bytes", 0, pid, 1000);
	tg_metric(t, 20 * MS, "gpu.util_pct", "%", 0, 0, 40);
	tg_metric(t, 20 * MS, "gpu.mem_bytes", "bytes", 0, pid, 3000);
	tg_metric(t, 30 * MS, "gpu.util_pct", "%", 0, 0, NAN);	/* not a value: left out */
	tg_metric(t, 40 * MS, "gpu.util_pct", "%", 0, 0, 25);
	tg_finding(t, "l2-persist", APX_SEV_INFO, 0, "L2 persistence not used");
	tg_finding(t, "gpu-idle", APX_SEV_WARNING, 0, "GPU 0 idle in 56% of the samples");
	tg_finding(t, "rss-peak", APX_SEV_CRITICAL, 0, "peak RSS 90% of memory");
	tg_kv(t, "nvperfd.uprobes", "attached");
	tg_kv(t, "nvperfd.uprobes.libcuda", "/usr/lib/libcuda.so.1");
	tg_kv(t, "nvperfd.uprobes.calls", "622");
	tg_kv(t, "nvperfd.h2d.pageable.calls", "606");
	tg_kv(t, "nvperfd.h2d.pageable.bytes", h2d_bytes);
	tg_kv(t, "nvperfd.h2d.pageable.call_ns", "n/a (uprobe_copy_time = no)");
	tg_kv(t, "nvperfd.d2h.pinned.calls", "15");
	tg_kv(t, "nvperfd.d2h.pinned.bytes", "60");
	tg_kv(t, "nvperfd.d2h.pinned.call_ns", "3000");
	tg_kv(t, "nvperfd.pinned.calls", "1");
	tg_kv(t, "nvperfd.pinned.bytes", "4");
	tg_kv(t, "nvperfd.nvml", "yes");
	tg_kv(t, "nvperfd.gpu.device", "0");
	tg_kv(t, "nvperfd.gpu.samples", samples);
	tg_kv(t, "nvperfd.gpu.idle_samples", "5");
	tg_kv(t, "nvperfd.gpu.mem_peak_bytes", "n/a (not reported by the driver)");
	tg_kv(t, "nvperfd.gpu.mem_peak_bytes", "1451229184");	/* a repeated key: the last counts */
	tg_kv(t, "nvperfd.gpu.sm_util_pct", sm_pct);
	tg_kv(t, "nvperfd.gpm.sm_util", "6.61");
	tg_kv(t, "nvperfd.gpm.dram_bw_util", "2.07");
	tg_kv(t, "nvperfd.gpm", "device-wide, over 9 samples");
	tg_kv(t, "nvperfd.cuda", "yes");
	tg_kv(t, "level", "light");	/* not nvperfd's: not kept */
}

APX_TEST(nvperfd_observed_values)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_observed *o;
	const struct apx_an_series *s;

	APX_ASSERT_OK(tg_open_nvperfd(&t, 495));
	nvperfd_summary(&t, 495, "12.8", "9", "20276903976");
	m = analyse_files(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->no_gpu_trace, 1);
	APX_ASSERT_EQ(m->files[0].cuda_used, 1);
	APX_ASSERT_EQ(m->observed.n, 1);
	o = APX_VEC_AT(&m->observed, struct apx_an_observed, 0);
	APX_ASSERT_EQ(o->file, 0);
	APX_ASSERT_EQ(o->nkv, 21);	/* 22 nvperfd.* records, one key repeated */
	APX_ASSERT(val_text_is(&o->uprobes, "attached") && !o->uprobes.has);
	APX_ASSERT(val_text_is(&o->libcuda, "/usr/lib/libcuda.so.1"));
	APX_ASSERT(o->uprobe_calls.has && o->uprobe_calls.u == 622);
	APX_ASSERT(!o->uprobe_lost.text);	/* absent */
	APX_ASSERT(o->copy[0][0].calls.has && o->copy[0][0].calls.u == 606);
	APX_ASSERT(o->copy[0][0].bytes.has && o->copy[0][0].bytes.u == 20276903976ull);
	APX_ASSERT(!o->copy[0][0].call_ns.has);
	APX_ASSERT(val_text_is(&o->copy[0][0].call_ns, "n/a (uprobe_copy_time = no)"));
	APX_ASSERT(!o->copy[0][1].calls.text && !o->copy[1][0].bytes.text);
	APX_ASSERT(o->copy[1][1].calls.u == 15 && o->copy[1][1].bytes.u == 60);
	APX_ASSERT(o->copy[1][1].call_ns.has && o->copy[1][1].call_ns.u == 3000);
	APX_ASSERT(o->pin_calls.u == 1 && o->pin_bytes.u == 4 && !o->pin_failed.text);
	APX_ASSERT(val_text_is(&o->nvml, "yes"));
	APX_ASSERT(o->device.has && o->device.u == 0);
	APX_ASSERT(o->samples.u == 9 && o->idle_samples.u == 5);
	APX_ASSERT(o->sm_util_pct.has && o->sm_util_pct.v == 12.8);
	APX_ASSERT(o->mem_peak_bytes.has && o->mem_peak_bytes.u == 1451229184ull);
	APX_ASSERT(val_text_is(&o->gpm, "device-wide, over 9 samples"));
	APX_ASSERT_EQ(o->ngpm, 2);
	APX_ASSERT(!memcmp(APX_VEC_AT(&m->kvs, struct apx_an_kv, o->gpm_kv[0])->key,
			   "nvperfd.gpm.sm_util", 19));
	APX_ASSERT_EQ(o->nseries, 2);
	s = APX_VEC_AT(&m->series, struct apx_an_series, o->series_first);
	APX_ASSERT(s->name_len == 12 && !memcmp(s->name, "gpu.util_pct", 12));
	APX_ASSERT(s->unit_len == 1 && s->unit[0] == '%');
	APX_ASSERT_EQ(s->pid, 0);
	APX_ASSERT_EQ(s->count, 3);	/* the NaN sample left out */
	APX_ASSERT(s->min == 10 && s->max == 40 && s->mean == 25);
	APX_ASSERT_EQ(s->first_ns, 10 * MS);
	APX_ASSERT_EQ(s->last_ns, 40 * MS);
	s = APX_VEC_AT(&m->series, struct apx_an_series, o->series_first + 1);
	APX_ASSERT(s->name_len == 13 && !memcmp(s->name, "gpu.mem_bytes", 13));
	APX_ASSERT(s->pid == 495 && s->count == 2 && s->min == 1000 && s->max == 3000);
	APX_ASSERT(s->mean == 2000);
	APX_ASSERT_EQ(m->obs.processes, 1);
	APX_ASSERT(m->obs.copy_has[0][0] && !m->obs.copy_has[0][1]);
	APX_ASSERT_EQ(m->obs.copy_bytes[0][0], 20276903976ull);
	APX_ASSERT_EQ(m->obs.copy_calls[1][1], 15);
	APX_ASSERT(m->obs.sm_has && m->obs.sm_util_pct == 12.8);
	APX_ASSERT(m->obs.mem_has && m->obs.mem_peak_bytes == 1451229184ull);
	apx_model_free(m);
	return 0;
}

APX_TEST(nvperfd_only_checks_not_measured)
{
	static const char why[] =
		"no GPU trace: an nvperfd summary (trace kernels and copies with `apx analyze`)";
	struct tg t[2];
	struct apx_model *m;

	APX_ASSERT_OK(tg_open_nvperfd(&t[0], 495));
	nvperfd_summary(&t[0], 495, "12.8", "9", "1000");
	m = analyse_files(t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(fd.nresults, nrules());
	for (size_t i = 0; i < fd.nresults; i++) {
		APX_ASSERT_EQ(fd.results[i].status, APX_RULE_NOT_MEASURED);
		APX_ASSERT_STREQ(fd.results[i].why, why);
	}
	/* nvperfd's findings carry no saving: not estimated, ranked by severity */
	APX_ASSERT_EQ(fd.n, 3);
	for (size_t i = 0; i < fd.n; i++) {
		APX_ASSERT_EQ(fd.f[i].saving_estimated, 0);
		APX_ASSERT_STREQ(fd.f[i].recorded_by, "nvperfd");
		APX_ASSERT_EQ(fd.f[i].severity, APX_SEV_CRITICAL - i);
	}
	/* the engine's own id when the producer's is one of its rules, else "recorded" */
	APX_ASSERT_STREQ(fd.f[0].rule, "rss-peak");
	APX_ASSERT(strstr(fd.f[0].model, "recorded by nvperfd"));
	apx_model_free(m);

	/* two summaries: said in the plural; the run sums them, SM weighted by NVML samples */
	APX_ASSERT_OK(tg_open_nvperfd(&t[0], 495));
	nvperfd_summary(&t[0], 495, "10.0", "3", "1000");
	APX_ASSERT_OK(tg_open_nvperfd(&t[1], 496));
	nvperfd_summary(&t[1], 496, "50.0", "1", "500");
	m = analyse_files(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->observed.n, 2);
	APX_ASSERT_EQ(m->obs.processes, 2);
	APX_ASSERT_EQ(m->obs.copy_bytes[0][0], 1500);
	APX_ASSERT_EQ(m->obs.copy_calls[0][0], 1212);
	APX_ASSERT(fabs(m->obs.sm_util_pct - 20.0) < 1e-9);	/* (3 x 10 + 1 x 50) / 4 */
	APX_ASSERT_EQ(fd.results[0].status, APX_RULE_NOT_MEASURED);
	APX_ASSERT_STREQ(fd.results[0].why, "no GPU trace: nvperfd summaries (trace kernels and "
					    "copies with `apx analyze`)");
	apx_model_free(m);
	return 0;
}

APX_TEST(nvperfd_with_a_trace_keeps_the_rules)
{
	struct tg t[2];
	struct apx_model *m;
	const struct apx_finding *f;

	APX_ASSERT_OK(tg_open(&t[0]));	/* apx analyze's trace: pageable copies */
	for (uint64_t i = 0; i < 50; i++) {
		tg_copy(&t[0], 1 * MS + i * 3 * MS, 1600 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 8000000,
			0, 0, 7);
		tg_kernel(&t[0], 1 * MS + i * 3 * MS + 2 * MS, 500 * US, "k", 7);
	}
	APX_ASSERT_OK(tg_open_nvperfd(&t[1], 496));
	nvperfd_summary(&t[1], 496, "12.8", "9", "1000");
	tg_finding(&t[1], "estimated", APX_SEV_INFO, 5, "a producer's own estimate");
	m = analyse_files(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->no_gpu_trace, 0);
	APX_ASSERT_EQ(m->observed.n, 1);
	APX_ASSERT_EQ(APX_VEC_AT(&m->observed, struct apx_an_observed, 0)->file, 1);
	f = finding("pageable-copy");
	APX_ASSERT(f && f->saving_estimated && f->saving_ns > 0 && !f->recorded_by);
	APX_ASSERT_EQ(status("pageable-copy"), APX_RULE_FIRED);
	APX_ASSERT_EQ(status("repeated-copy"), APX_RULE_NOT_MEASURED);	/* as before: no addresses */
	APX_ASSERT_EQ(status("sync-frequency"), APX_RULE_CLEAN);
	/* estimated savings first (the recorded one with 5 ns among them), then by severity */
	for (size_t i = 1; i < fd.n; i++) {
		if (fd.f[i - 1].saving_estimated == fd.f[i].saving_estimated)
			APX_ASSERT(fd.f[i].saving_estimated ? fd.f[i - 1].saving_ns >= fd.f[i].saving_ns
							     : fd.f[i - 1].severity >= fd.f[i].severity);
		else
			APX_ASSERT(fd.f[i - 1].saving_estimated);
	}
	APX_ASSERT(fd.f[fd.n - 1].severity == APX_SEV_INFO && !fd.f[fd.n - 1].saving_estimated);
	f = NULL;
	for (size_t i = 0; i < fd.n; i++)
		if (!strcmp(fd.f[i].title, "a producer's own estimate"))
			f = &fd.f[i];
	APX_ASSERT(f && f->saving_estimated && f->saving_ns == 5);
	apx_model_free(m);
	return 0;
}

APX_TEST(nvperfd_window_stream_is_a_handle)
{
	struct tg t[2];
	struct apx_model *m;

	APX_ASSERT_OK(tg_open_nvperfd(&t[0], 495));
	tg_apw(&t[0], 5 * MS, 0xffffffffffffffffull, 0x7f6df0000000ull, 8 << 20);
	APX_ASSERT_OK(tg_open(&t[1]));
	tg_apw(&t[1], 5 * MS, 13, 0x7f6df0000000ull, 8 << 20);
	tg_kernel(&t[1], 6 * MS, 1 * MS, "k", 7);
	m = analyse_files(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->configs.n, 2);
	APX_ASSERT_EQ(APX_VEC_AT(&m->configs, struct apx_an_config, 0)->stream_is_handle, 1);
	APX_ASSERT_EQ(APX_VEC_AT(&m->configs, struct apx_an_config, 1)->stream_is_handle, 0);
	APX_ASSERT_EQ(m->observed.n, 0);	/* no nvperfd.* key/values: not an observed process */
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
