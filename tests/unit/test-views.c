/*
 * test-views.c - unit tests of the model's views over the event store (lib/analysis/views.h,
 * model.h): on the committed real traces, the kernel-name, copy-kind, synchronization and
 * per-file aggregates equal a streaming count over the reader (how apx report aggregated before
 * the store); and the keys: two processes with the same stream ids keep two streams, one GPU
 * seen by two processes of a host is one device, two hosts' GPU 0 are two devices with their
 * own timelines.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apx-test.h"
#include "analysis/findings.h"
#include "analysis/hwcounters.h"
#include "analysis/model.h"
#include "analysis/store.h"
#include "report/doc.h"
#include "unit/tracegen.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

/* A trace of process pid on host, device 0 with a UUID starting with uuid0. */
static int open_proc(struct tg *t, const char *host, uint64_t pid, uint8_t uuid0)
{
	const uint8_t uuid[16] = { uuid0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

	return tg_open_proc(t, host, pid, uuid);
}

APX_TEST(two_processes_same_stream_ids_never_mix)
{
	struct tg t[2];
	struct apx_model *m;

	APX_ASSERT_OK(open_proc(&t[0], "node1", 100, 0xa0));
	APX_ASSERT_OK(open_proc(&t[1], "node1", 200, 0xa0));	/* the same GPU */
	for (int i = 0; i < 3; i++)
		tg_kernel(&t[0], 2 * MS + (uint64_t)i * MS, 100 * US, "k", 7);
	tg_kernel(&t[1], 2 * MS + 500 * US, 200 * US, "k", 7);
	m = tg_model(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->streams.n, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream, i);

		APX_ASSERT_EQ(s->id, 7);
		APX_ASSERT_EQ(s->file, i);
		APX_ASSERT_EQ(s->kernels, i ? 1 : 3);
		APX_ASSERT_EQ(s->busy_ns, i ? 200 * US : 300 * US);
	}
	APX_ASSERT_EQ(m->files[0].kernels, 3);
	APX_ASSERT_EQ(m->files[1].kernels, 1);
	APX_ASSERT_EQ(m->ndevices, 1);		/* one GPU (host, UUID), one timeline */
	APX_ASSERT_EQ(m->timelines.n, 1);
	APX_ASSERT_EQ(APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0)->busy_ns, 500 * US);
	apx_model_free(m);
	return 0;
}

APX_TEST(two_hosts_same_device_index_never_mix)
{
	struct tg t[2];
	struct apx_model *m;
	const struct apx_an_timeline *a, *b;

	APX_ASSERT_OK(open_proc(&t[0], "node1", 100, 0xa0));
	APX_ASSERT_OK(open_proc(&t[1], "node2", 100, 0xa0));	/* same pid, UUID and index */
	tg_kernel(&t[0], 2 * MS, 1 * MS, "k", 7);
	tg_kernel(&t[0], 4 * MS, 1 * MS, "k", 7);
	tg_kernel(&t[1], 2 * MS + 500 * US, 1 * MS, "k", 7);
	m = tg_model(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->ndevices, 2);
	APX_ASSERT_EQ(m->devices[0].id, 0);
	APX_ASSERT_EQ(m->devices[1].id, 0);
	APX_ASSERT(m->devices[0].es_device != m->devices[1].es_device);
	APX_ASSERT_EQ(m->timelines.n, 2);
	a = APX_VEC_AT(&m->timelines, struct apx_an_timeline, 0);
	b = APX_VEC_AT(&m->timelines, struct apx_an_timeline, 1);
	APX_ASSERT_EQ(a->device, 0);
	APX_ASSERT_EQ(b->device, 0);
	/* merged, the two would be one union of 2.5 ms with one 0.5 ms gap */
	APX_ASSERT_EQ(a->busy_ns, 2 * MS);
	APX_ASSERT_EQ(a->idle_ns, 1 * MS);
	APX_ASSERT_EQ(b->busy_ns, 1 * MS);
	APX_ASSERT_EQ(b->idle_ns, 0);
	APX_ASSERT_EQ(m->gpu.busy_ns, 3 * MS);
	apx_model_free(m);
	return 0;
}

APX_TEST(kernels_of_4_29_s_or_more_keep_their_end)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_store *st;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	tg_kernel(&t, 10 * MS, 6000 * MS, "long", 7);	/* read first, sorted second */
	tg_kernel(&t, 3 * MS, 1 * MS, "short", 7);
	tg_kernel(&t, 2 * MS, 5000 * MS, "long", 8);	/* sorted first */
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	st = m->store;
	APX_ASSERT_EQ(st->k.n, 3);
	APX_ASSERT_EQ(st->k.start[0], 2 * MS);
	APX_ASSERT_EQ(apx_store_end(st, APX_ES_KERNEL, 0), 5002 * MS);
	APX_ASSERT_EQ(apx_store_end(st, APX_ES_KERNEL, 1), 4 * MS);
	APX_ASSERT_EQ(apx_store_end(st, APX_ES_KERNEL, 2), 6010 * MS);
	APX_ASSERT_EQ(m->files[0].kernel_ns, 11001 * MS);	/* exact */
	APX_ASSERT_EQ(m->kernel_total_ns, 2ull * UINT32_MAX + 1 * MS);	/* the model saturates */
	apx_model_free(m);
	return 0;
}

/* PM-sampling series (METRIC records with an interval): the steady window's statistics and the
 * mean over each top kernel's executions (view_metrics.c). 20 steps of 10 ms: "gemm" runs
 * 0-4 ms of each, "small" 5-6 ms; 1 ms samples read 80 while gemm runs, 10 while small does,
 * 0 otherwise; an instant (nvperfd-style) reading is no PM series. */
APX_TEST(pm_sampling_series_by_window_and_kernel)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_pm *p;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (uint64_t s = 0; s < 20; s++) {
		tg_kernel(&t, (10 + 10 * s) * MS, 4 * MS, "gemm", 7);
		tg_kernel(&t, (15 + 10 * s) * MS, 1 * MS, "small", 7);
	}
	for (uint64_t i = 10; i < 210; i++) {
		uint64_t in = i % 10;

		tg_metric_span(&t, i * MS, (i + 1) * MS, "sm__pipe_tensor_cycles_active.avg.pct", "%",
			       0, in < 4 ? 80.0 : in == 5 ? 10.0 : 0.0);
	}
	tg_metric(&t, 50 * MS, "gpu.util_pct", "%", 0, 0, 55.0);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->pm.n, 1);
	p = APX_VEC_AT(&m->pm, struct apx_an_pm, 0);
	APX_ASSERT_EQ(p->samples, 200);
	APX_ASSERT_EQ(p->mean_sample_ns, 1 * MS);
	APX_ASSERT(p->have_steady && p->min == 0 && p->max == 80);
	APX_ASSERT_EQ(p->ntop, 2);
	APX_ASSERT(!memcmp(APX_VEC_AT(&m->names, struct apx_an_name, p->top[0])->text, "gemm", 4));
	APX_ASSERT(p->top_mean[0] == 80 && p->top_covered_ns[0] == 80 * MS);
	APX_ASSERT(p->top_mean[1] == 10 && p->top_covered_ns[1] == 20 * MS);
	apx_model_free(m);
	return 0;
}

/* Per-kernel values only from samples the kernel covers at least half of, and at least 3 of
 * them; else n/a and why, in the model, the JSON and the text. 20 steps of 10 ms with 1 ms
 * samples: "gemm" 4 ms a step (80 samples of it, value 80), "tiny" 40 us a step (never half a
 * sample: n/a, needs --replay or --metrics-frequency 10000; before, its overlap-weighted mean
 * gave 0.2 ms of other work's value), "rare" 2 ms once (2 samples: n/a, too few). */
APX_TEST(pm_sampling_per_kernel_needs_samples_mostly_in_it)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_pm *p;
	struct apx_rdoc *d;
	struct apx_text_out o = { NULL, 0, NULL };
	char *buf = NULL, why[160];
	size_t len = 0, gemm = 9, tiny = 9, rare = 9;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (uint64_t s = 0; s < 20; s++) {
		tg_kernel(&t, (10 + 10 * s) * MS, 4 * MS, "gemm", 7);
		tg_kernel(&t, (17 + 10 * s) * MS + 100 * US, 40 * US, "tiny", 7);
		if (s == 10)
			tg_kernel(&t, (15 + 10 * s) * MS, 2 * MS, "rare", 7);
	}
	for (uint64_t i = 10; i < 210; i++) {
		uint64_t in = i % 10;

		tg_metric_span(&t, i * MS, (i + 1) * MS, "sm__throughput.avg.pct_of_peak", "%", 0,
			       in < 4 ? 80.0 : in == 5 || in == 6 ? 30.0 : 0.0);
	}
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->pm.n, 1);
	p = APX_VEC_AT(&m->pm, struct apx_an_pm, 0);
	APX_ASSERT_EQ(p->ntop, 3);
	for (size_t j = 0; j < p->ntop; j++) {
		const char *nm = APX_VEC_AT(&m->names, struct apx_an_name, p->top[j])->text;

		*(!memcmp(nm, "gemm", 4) ? &gemm : !memcmp(nm, "tiny", 4) ? &tiny : &rare) = j;
	}
	APX_ASSERT(gemm < 3 && tiny < 3 && rare < 3);
	APX_ASSERT(p->top_mean[gemm] == 80 && p->top_samples[gemm] == 80);
	APX_ASSERT_EQ(p->top_covered_ns[gemm], 80 * MS);
	APX_ASSERT(isnan(p->top_mean[tiny]) && p->top_samples[tiny] == 0);
	APX_ASSERT_EQ(p->top_covered_ns[tiny], 20 * 40 * US);
	APX_ASSERT_EQ(p->top_kernel_ns[tiny], 40 * US);
	APX_ASSERT(isnan(p->top_mean[rare]) && p->top_samples[rare] == 2);
	APX_ASSERT(strstr(apx_hw_kernel_why(why, sizeof(why), p->mean_sample_ns,
					    p->top_kernel_ns[tiny], p->top_samples[tiny], 1),
			  "samples of 1 ms, kernels of 40 us: per-kernel values need --replay or "
			  "--metrics-frequency 10000"));

	d = apx_rdoc_build(m, &(struct apx_findings){ 0 },
			   &(struct apx_rdoc_opts){ .sections = 1u << APX_SEC_METRICS });
	APX_ASSERT(d);
	o.f = open_memstream(&buf, &len);
	APX_ASSERT(o.f);
	apx_report_emit_text_section(&o, d, APX_SEC_METRICS);
	APX_ASSERT_OK(apx_report_emit_json(o.f, d));
	fclose(o.f);
	APX_ASSERT(strstr(buf, "      80.0% during gemm (80 samples)\n"));
	APX_ASSERT(strstr(buf, "       n/a during tiny\n    samples of 1 ms, kernels of 40 us: "
			       "per-kernel values need --replay or --metrics-frequency 10000\n"));
	APX_ASSERT(strstr(buf, "       n/a during rare\n    2 samples of 1 ms mostly in it "
			       "(3 needed): per-kernel values need --replay or a longer run\n"));
	APX_ASSERT(strstr(buf, "{\"kernel\":\"gemm\",\"mean\":80,\"samples\":80,"
			       "\"covered_ns\":80000000,\"why\":null}"));
	APX_ASSERT(strstr(buf, "{\"kernel\":\"tiny\",\"mean\":null,\"samples\":0,"
			       "\"covered_ns\":800000,\"why\":\"samples of 1 ms, kernels of 40 us: "
			       "per-kernel values need --replay or --metrics-frequency 10000\"}"));
	free(buf);
	apx_rdoc_free(d);
	apx_model_free(m);
	return 0;
}

/* Replayed kernels' counters joined to their kernels by correlation id, medians per name: two
 * of three "gemm" launches replayed (L2 hits 40 and 60 %: median 50), DRAM 80 % and SM 20 % of
 * peak: memory-bound, waiting on global memory first; a counter of no kernel is left out. */
APX_TEST(replay_counters_per_kernel)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_kc *kc;
	struct apx_kc_values k;
	unsigned stall[2];

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (int i = 0; i < 3; i++) {
		tg_kernel(&t, (10 + i) * MS, 500 * US, "gemm", 7);
		if (i == 1)
			continue;
		tg_counter(&t, t.corr, "lts__t_sector_hit_rate.pct", i ? 60.0 : 40.0, 12);
		tg_counter(&t, t.corr, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 80.0, 12);
		tg_counter(&t, t.corr, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 20.0, 12);
		tg_counter(&t, t.corr,
			   "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio", 12.0, 12);
		tg_counter(&t, t.corr, "smsp__average_warp_latency_issue_stalled_barrier.ratio", 2.0, 12);
	}
	tg_counter(&t, 999, "lts__t_sector_hit_rate.pct", 1.0, 12);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->kc.n, 1);
	kc = APX_VEC_AT(&m->kc, struct apx_an_kc, 0);
	APX_ASSERT_EQ(kc->launches, 2);
	APX_ASSERT_EQ(kc->passes, 12);
	APX_ASSERT(kc->v[APX_KC_L2_HIT] == 50.0);
	memset(&k, 0, sizeof(k));
	memcpy(k.v, kc->v, sizeof(k.v));
	k.have = kc->have;
	APX_ASSERT_EQ(apx_kc_bound(&k), APX_BOUND_MEMORY);
	APX_ASSERT_EQ(apx_kc_top_stalls(&k, stall, 2), 2);
	APX_ASSERT(stall[0] == 0 && stall[1] == 4);	/* long scoreboard, then barrier */
	apx_model_free(m);
	return 0;
}

/* --replay: "gemm" has two replayed launches (DRAM written 90 and 110 MB, inflated by the
 * replay) each followed by a one-pass one (passes 1: 40 and 60 MB, and the replayed one's
 * duration copied with the replay's passes). Its DRAM counters are the one-pass launches'
 * median (50 MB), its duration the replayed launches' alone (not counted twice), its hit rate
 * the replay's. "add", replayed once and with no one-pass launch, keeps the replay's DRAM
 * counter. kv replay_dram says the one-pass launches ran in the program's cache state. */
APX_TEST(replay_one_pass_counters_preferred)
{
	static const char dw[] = "dram__bytes_write.sum", dur[] = "gpu__time_duration.sum";
	struct tg t;
	struct apx_model *m;
	const struct apx_an_kc *gemm = NULL, *add = NULL;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (int i = 0; i < 2; i++) {
		tg_kernel(&t, 0, 0, "gemm", 7);		/* replayed */
		tg_counter(&t, t.corr, dur, i ? 300000.0 : 100000.0, 12);
		tg_counter(&t, t.corr, dw, i ? 110e6 : 90e6, 12);
		tg_counter(&t, t.corr, "lts__t_sector_hit_rate.pct", 70.0, 12);
		tg_kernel(&t, 0, 0, "gemm", 7);		/* one pass */
		tg_counter(&t, t.corr, dw, i ? 60e6 : 40e6, 1);
		tg_counter(&t, t.corr, dur, i ? 300000.0 : 100000.0, 12);
	}
	tg_kernel(&t, 0, 0, "add", 7);
	tg_counter(&t, t.corr, dw, 7e6, 12);
	tg_kv(&t, "replay_dram", "program-order");
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->replay_dram, APX_REPLAY_DRAM_PROGRAM);
	APX_ASSERT_EQ(m->kc.n, 2);
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, kc->name);

		*(nm->len == 4 ? &gemm : &add) = kc;
	}
	APX_ASSERT(gemm && add);
	APX_ASSERT_EQ(gemm->launches, 2);
	APX_ASSERT_EQ(gemm->one_pass, 2);
	APX_ASSERT(gemm->v[APX_KC_DRAM_WRITE] == 50e6);
	APX_ASSERT(gemm->from_one_pass >> APX_KC_DRAM_WRITE & 1);
	APX_ASSERT(gemm->v[APX_KC_DURATION] == 200000.0);
	APX_ASSERT(!(gemm->from_one_pass >> APX_KC_DURATION & 1));
	APX_ASSERT(gemm->v[APX_KC_L2_HIT] == 70.0);
	APX_ASSERT_EQ(add->launches, 1);
	APX_ASSERT_EQ(add->one_pass, 0);
	APX_ASSERT(add->v[APX_KC_DRAM_WRITE] == 7e6 && !add->from_one_pass);
	apx_model_free(m);
	return 0;
}

/* --replay: the L2 hit rate from each one-pass launch's L2 sector hits over the lookups of the
 * replayed launch before it. "attn" is replayed twice (hit rate 60 %, after the replay's
 * restores; 700 + 300 and 650 + 350 lookups); after each replay the next launch counts the
 * hits in one pass (570 and 590: 57 and 59 %), so its hit rate is 58 %, marked as the one-pass
 * launches'. "rnd" makes 2000 lookups, then 1000 (another size, the same grid), and its two
 * one-pass launches after the second hit 900 and 800 times: 85 %, not over the median 1500.
 * "mm", whose
 * replayed launch gave no misses, keeps the replay's 70 %. */
APX_TEST(replay_l2_hit_rate_from_one_pass_hits)
{
	static const char hit[] = "lts__t_sectors_lookup_hit.sum",
			  miss[] = "lts__t_sectors_lookup_miss.sum",
			  rate[] = "lts__t_sector_hit_rate.pct";
	struct tg t;
	struct apx_model *m;
	const struct apx_an_kc *attn = NULL, *mm = NULL, *rnd = NULL;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (int i = 0; i < 2; i++) {
		tg_kernel(&t, 0, 0, "rnd", 7);		/* replayed */
		tg_counter(&t, t.corr, hit, i ? 400.0 : 1000.0, 12);
		tg_counter(&t, t.corr, miss, i ? 600.0 : 1000.0, 12);
	}
	for (int i = 0; i < 2; i++) {
		tg_kernel(&t, 0, 0, "rnd", 7);		/* one pass, twice after the replay */
		tg_counter(&t, t.corr, hit, i ? 800.0 : 900.0, 1);
	}
	for (int i = 0; i < 2; i++) {
		tg_kernel(&t, 0, 0, "attn", 7);		/* replayed */
		tg_counter(&t, t.corr, rate, 60.0, 12);
		tg_counter(&t, t.corr, hit, i ? 650.0 : 700.0, 12);
		tg_counter(&t, t.corr, miss, i ? 350.0 : 300.0, 12);
		tg_kernel(&t, 0, 0, "attn", 7);		/* one pass */
		tg_counter(&t, t.corr, hit, i ? 590.0 : 570.0, 1);
	}
	tg_kernel(&t, 0, 0, "mm", 7);
	tg_counter(&t, t.corr, rate, 70.0, 12);
	tg_counter(&t, t.corr, hit, 20.0, 12);
	tg_kernel(&t, 0, 0, "mm", 7);
	tg_counter(&t, t.corr, hit, 10.0, 1);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->kc.n, 3);
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, kc->name);

		*(nm->len == 4 ? &attn : nm->len == 3 ? &rnd : &mm) = kc;
	}
	APX_ASSERT(attn && mm && rnd);
	APX_ASSERT(fabs(rnd->v[APX_KC_L2_HIT] - 85.0) < 1e-9);
	APX_ASSERT_EQ(attn->launches, 2);
	APX_ASSERT_EQ(attn->one_pass, 2);
	APX_ASSERT(attn->v[APX_KC_L2_SECTOR_HITS] == 580.0);
	APX_ASSERT(fabs(attn->v[APX_KC_L2_HIT] - 58.0) < 1e-9);
	APX_ASSERT(attn->from_one_pass >> APX_KC_L2_HIT & 1);
	APX_ASSERT(mm->v[APX_KC_L2_HIT] == 70.0);
	APX_ASSERT(!(mm->from_one_pass >> APX_KC_L2_HIT & 1));
	apx_model_free(m);
	return 0;
}

/* Replayed launches have no times (start = end = 0): they count in their name with the
 * duration their replay measured, and the run, the timelines and the idle time never see them. */
APX_TEST(replayed_kernels_without_times_are_untimed)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_an_name *nm;

	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	tg_kernel(&t, 0, 0, "gemm", 7);		/* replayed: 300 us by its counter */
	tg_counter(&t, t.corr, "gpu__time_duration.sum", 300000.0, 12);
	tg_counter(&t, t.corr, "lts__t_sector_hit_rate.pct", 40.0, 12);
	tg_kernel(&t, 0, 0, "gemm", 7);		/* replayed, its duration not recorded */
	tg_counter(&t, t.corr, "lts__t_sector_hit_rate.pct", 60.0, 12);
	for (int i = 0; i < 3; i++)		/* timed: 100 us each, 10 ms apart */
		tg_kernel(&t, (10 + 10 * i) * MS, 100 * US, "gemm", 7);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->k.n, 3);
	APX_ASSERT_EQ(m->untimed_launches, 2);
	APX_ASSERT_EQ(m->untimed_nodur, 1);
	APX_ASSERT_EQ(m->names.n, 1);
	nm = APX_VEC_AT(&m->names, struct apx_an_name, 0);
	APX_ASSERT_EQ(nm->count, 5);
	APX_ASSERT_EQ(nm->untimed, 2);
	APX_ASSERT_EQ(nm->total_ns, 600 * US);
	APX_ASSERT_EQ(nm->max_ns, 300 * US);
	APX_ASSERT_EQ(nm->p50_ns, 100 * US);	/* of 100, 100, 100, 300 */
	APX_ASSERT_EQ(m->kernel_total_ns, 600 * US);
	APX_ASSERT(m->run_start_ns > 0);	/* not pulled to 0 by the untimed ones */
	APX_ASSERT_EQ(m->gpu.busy_ns, 300 * US);
	APX_ASSERT_EQ(m->kc.n, 1);		/* their counters still join: both launches */
	APX_ASSERT_EQ(APX_VEC_AT(&m->kc, struct apx_an_kc, 0)->launches, 2);
	apx_model_free(m);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A name with more kernels than the percentile scratch (4 Mi durations) takes the histogram
 * path, the names beside it the batched one: both exact. */
APX_TEST(kernel_percentiles_exact_past_the_scratch)
{
	const size_t n = ((size_t)1 << 22) + 4099;
	uint32_t *ref = malloc(n * sizeof(*ref));
	struct tg t;
	struct apx_model *m;
	const struct apx_an_name *big, *small;
	uint64_t at = 2 * MS;

	APX_ASSERT(ref);
	APX_ASSERT_OK(open_proc(&t, "node1", 100, 0xa0));
	for (size_t i = 0; i < n; i++) {
		ref[i] = (uint32_t)((i * 2654435761u) % 200003u) * 37u + 1;	/* past 16 bits */
		tg_kernel(&t, at, ref[i], "big", 7);
		at += ref[i];
		if (i % 1024 == 0)
			tg_kernel(&t, at, 5000 + i % 7, "small", 7);
	}
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	big = APX_VEC_AT(&m->names, struct apx_an_name, 0);
	small = APX_VEC_AT(&m->names, struct apx_an_name, 1);
	qsort(ref, n, sizeof(*ref), cmp_u32);
	APX_ASSERT_EQ(big->count, n);
	APX_ASSERT_EQ(big->p50_ns, ref[(n - 1) / 2]);
	APX_ASSERT_EQ(big->p95_ns, ref[(n * 95 + 99) / 100 - 1]);
	APX_ASSERT_EQ(big->min_ns, ref[0]);
	APX_ASSERT_EQ(big->max_ns, ref[n - 1]);
	APX_ASSERT_EQ(small->count, (n + 1023) / 1024);
	APX_ASSERT_EQ(small->p50_ns, 5003);
	APX_ASSERT_EQ(m->k.n, n + small->count);
	free(ref);
	apx_model_free(m);
	return 0;
}

/* ---- the views against a streaming count over the reader --------------------------------- */

#define NAMES_MAX 4096

struct counted {
	struct {
		const char *p;
		size_t len;
		uint64_t count, total;
	} names[NAMES_MAX];
	size_t nnames;
	uint64_t kernels, kernel_total, copies, xfer_count[APX_COPY__COUNT][APX_MEM__COUNT];
	uint64_t xfer_bytes[APX_COPY__COUNT][APX_MEM__COUNT], sync_count[APX_SYNC_KIND__COUNT];
	uint64_t implicit;
};

static uint64_t dur32(uint64_t s, uint64_t e)
{
	uint64_t d = e > s ? e - s : 0;

	return d > UINT32_MAX ? UINT32_MAX : d;
}

static void count_kernel(struct counted *c, struct apx_reader *r, const uint64_t *v)
{
	size_t len = 0, j;
	const char *p = apx_reader_string(r, v[APX_KERNEL_NAME], &len);
	uint64_t d = dur32(v[APX_KERNEL_START_NS], v[APX_KERNEL_END_NS]);

	if (!p || !len) {
		p = "(unknown kernel)";
		len = strlen(p);
	}
	for (j = 0; j < c->nnames; j++)
		if (c->names[j].len == len && !memcmp(c->names[j].p, p, len))
			break;
	if (j == c->nnames && c->nnames < NAMES_MAX)
		c->names[c->nnames++] = (typeof(c->names[0])){ p, len, 0, 0 };
	c->names[j].count++;
	c->names[j].total += d;
	c->kernels++;
	c->kernel_total += d;
}

static void count_record(struct counted *c, struct apx_reader *r, const struct apx_rec *rec)
{
	const uint64_t *v = rec->v;

	switch (rec->type) {
	case APX_REC_KERNEL:
		count_kernel(c, r, v);
		break;
	case APX_REC_MEMCPY: {
		unsigned k = v[APX_MEMCPY_COPY_KIND] < APX_COPY__COUNT ? (unsigned)v[APX_MEMCPY_COPY_KIND] : 0;
		unsigned src = v[APX_MEMCPY_SRC_KIND] < APX_MEM__COUNT ? (unsigned)v[APX_MEMCPY_SRC_KIND] : 0;
		unsigned dst = v[APX_MEMCPY_DST_KIND] < APX_MEM__COUNT ? (unsigned)v[APX_MEMCPY_DST_KIND] : 0;
		unsigned host = k == APX_COPY_D2H ? dst : src;

		c->copies++;
		c->xfer_count[k][host]++;
		c->xfer_bytes[k][host] += v[APX_MEMCPY_BYTES];
		c->implicit += !(v[APX_MEMCPY_FLAGS] & 1) || src == APX_MEM_PAGEABLE ||
			       dst == APX_MEM_PAGEABLE;
		break;
	}
	case APX_REC_MEMSET:
		c->implicit += !(v[APX_MEMSET_FLAGS] & 1);
		break;
	case APX_REC_SYNC:
		c->sync_count[v[APX_SYNC_KIND] < APX_SYNC_KIND__COUNT ? v[APX_SYNC_KIND] : 0]++;
		break;
	default:
		break;
	}
}

static int count_file(const char *path, struct counted *c, struct apx_reader **ret_r)
{
	struct apx_reader *r;

	if (apx_reader_open(path, &r, NULL) < 0)
		return -1;
	for (size_t ch = 0; ch < apx_reader_chunk_count(r); ch++) {
		struct apx_chunk_iter it;

		if (apx_chunk_iter_init(&it, r, ch, NULL) < 0)
			continue;
		while (apx_chunk_iter_next(&it, NULL) > 0)
			count_record(c, r, &it.rec);
	}
	*ret_r = r;	/* kept open: the names point into it */
	return 0;
}

static int check_views(const struct apx_model *m, const struct counted *c)
{
	uint64_t stream_kernels = 0, file_kernels = 0, file_copies = 0;

	APX_ASSERT_EQ(m->k.n, c->kernels);
	APX_ASSERT_EQ(m->kernel_total_ns, c->kernel_total);
	APX_ASSERT_EQ(m->names.n, c->nnames);
	for (size_t j = 0; j < c->nnames; j++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);

		APX_ASSERT_EQ(nm->len, c->names[j].len);	/* first-seen order kept */
		APX_ASSERT(!memcmp(nm->text, c->names[j].p, nm->len));
		APX_ASSERT_EQ(nm->count, c->names[j].count);
		APX_ASSERT_EQ(nm->total_ns, c->names[j].total);
		APX_ASSERT(nm->min_ns <= nm->p50_ns && nm->p50_ns <= nm->p95_ns &&
			   nm->p95_ns <= nm->max_ns);
	}
	for (unsigned k = 0; k < APX_COPY__COUNT; k++)
		for (unsigned h = 0; h < APX_MEM__COUNT; h++) {
			APX_ASSERT_EQ(m->xfer[k][h].count, c->xfer_count[k][h]);
			APX_ASSERT_EQ(m->xfer[k][h].bytes, c->xfer_bytes[k][h]);
		}
	for (unsigned k = 0; k < APX_SYNC_KIND__COUNT; k++)
		APX_ASSERT_EQ(m->sync_count[k], c->sync_count[k]);
	APX_ASSERT_EQ(m->sync_implicit_count, c->implicit);
	APX_ASSERT_EQ(m->copies.n, c->copies);
	for (size_t i = 0; i < m->streams.n; i++)
		stream_kernels += APX_VEC_AT(&m->streams, struct apx_an_stream, i)->kernels;
	for (size_t i = 0; i < m->nfiles; i++) {
		file_kernels += m->files[i].kernels;
		file_copies += m->files[i].copies;
	}
	APX_ASSERT_EQ(stream_kernels, c->kernels);
	APX_ASSERT_EQ(file_kernels, c->kernels);
	APX_ASSERT_EQ(file_copies, c->copies);
	return 0;
}

APX_TEST(views_equal_a_streaming_count_on_the_real_traces)
{
	const char *dir = APX_SOURCE_DIR "/tests/fixtures/real";
	struct counted *c = calloc(1, sizeof(*c));
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t files = 0;

	APX_ASSERT(d && c);
	while ((de = readdir(d))) {
		char path[512];
		struct apx_model *m = apx_model_new();
		struct apx_reader *r = NULL;
		struct apx_diag dg;
		int bad;

		if (!strstr(de->d_name, ".apx") || strstr(de->d_name, ".apx.")) {
			apx_model_free(m);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		memset(c, 0, sizeof(*c));
		APX_ASSERT(m);
		APX_ASSERT_OK(count_file(path, c, &r));
		APX_ASSERT_OK(apx_model_add_file(m, path, &dg));
		APX_ASSERT_OK(apx_model_finish(m));
		APX_ASSERT(m->store);
		APX_ASSERT_EQ(m->store->k.n, c->kernels);
		bad = check_views(m, c);
		apx_model_free(m);
		apx_reader_close(r);
		if (bad) {
			fprintf(stderr, "    views differ on %s\n", de->d_name);
			return bad;
		}
		files++;
	}
	closedir(d);
	free(c);
	APX_ASSERT(files >= 20);
	return 0;
}

APX_TEST_MAIN()
