/*
 * test-hwcounters.c - unit tests of lib/analysis/hwcounters.c: PM-sampling statistics over a
 * window and over kernel intervals, the replay set's indexes, bound-by, stall ranking and the
 * L2 persistence advice, each on numbers worked out by hand.
 */
#include <math.h>

#include "analysis/hwcounters.h"
#include "apx-test.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

/* 1 ms samples: 10, 20, 30, 40 (%) from t = 0 */
static const struct apx_hw_sample series[] = {
	{ 0, 1000000, 10 }, { 1000000, 2000000, 20 }, { 2000000, 3000000, 30 },
	{ 3000000, 4000000, 40 },
};

APX_TEST(stat_window_weights_by_overlap)
{
	struct apx_hw_stat st;
	double scratch[4];

	/* [0.5 ms, 2.5 ms): half of 10, all of 20, half of 30 -> mean (5 + 20 + 15) / 2 = 20 */
	APX_ASSERT(apx_hw_stat_window(series, 4, 500000, 2500000, scratch, &st) == 0);
	APX_ASSERT_EQ(st.n, 3);
	APX_ASSERT(st.min == 10 && st.max == 30 && st.p95 == 30);
	APX_ASSERT(fabs(st.mean - 20) < 1e-9);
	APX_ASSERT(apx_hw_stat_window(series, 4, 5000000, 6000000, scratch, &st) == -1);
	return 0;
}

APX_TEST(mean_over_kernel_intervals)
{
	/* two kernels: [0.9, 1.1) ms and [3.5, 3.6) ms -> 0.1 ms of samples 0, 1 and 3: none is
	 * mostly the kernel, so no value */
	uint64_t start[] = { 900000, 3500000 }, end[] = { 1100000, 3600000 }, cov, cnt;
	double scratch[4], m = apx_hw_mean_over(series, 4, start, end, 2, scratch, &cov, &cnt);

	APX_ASSERT_EQ(cov, 300000);
	APX_ASSERT_EQ(cnt, 0);
	APX_ASSERT(isnan(m));
	APX_ASSERT(isnan(apx_hw_mean_over(series, 4, (uint64_t[]){ 9000000 },
					  (uint64_t[]){ 9100000 }, 1, scratch, &cov, &cnt)));
	APX_ASSERT_EQ(cov, 0);
	return 0;
}

/* A sample counts when the executions cover at least half of it, two short ones together
 * included: [0.2, 1.0) covers 0.8 of sample 0 (10); [1.0, 1.3) and [1.5, 1.8) 0.6 of sample
 * 1 (20); [2.9, 3.2) 0.1 of sample 2 and 0.2 of sample 3, which do not count.
 * Mean (0.8 x 10 + 0.6 x 20) / 1.4. */
APX_TEST(mean_over_counts_samples_mostly_in_the_kernel)
{
	uint64_t start[] = { 200000, 1000000, 1500000, 2900000 };
	uint64_t end[] = { 1000000, 1300000, 1800000, 3200000 }, cov, cnt;
	double scratch[4], m = apx_hw_mean_over(series, 4, start, end, 4, scratch, &cov, &cnt);

	APX_ASSERT_EQ(cov, 1700000);
	APX_ASSERT_EQ(cnt, 2);
	APX_ASSERT(fabs(m - 20.0 / 1.4) < 1e-9);
	return 0;
}

/* Why a kernel has no value: shorter than half a sample (a faster rate where the sampler has
 * one, rounded up to a thousand a second, at most 10000; NVML readings have none), or too few
 * samples of it. */
APX_TEST(kernel_why_names_the_way_out)
{
	char b[160];

	APX_ASSERT(strstr(apx_hw_kernel_why(b, sizeof(b), 1000000, 40000, 0, 1),
			  "kernels of 40 us: per-kernel values need --replay or "
			  "--metrics-frequency 10000"));
	APX_ASSERT(!strncmp(b, "samples of 1 ms, ", 17));
	apx_hw_kernel_why(b, sizeof(b), 999999, 157632, 0, 1);	/* 1e9 / 157632 = 6344 a second */
	APX_ASSERT(!strcmp(b, "samples of 1 ms, kernels of 158 us: per-kernel values need --replay or "
			      "--metrics-frequency 7000"));
	APX_ASSERT(strstr(apx_hw_kernel_why(b, sizeof(b), 1000000, 300000, 1, 1),
			  "need --replay or --metrics-frequency 4000"));
	apx_hw_kernel_why(b, sizeof(b), 100000, 20000, 0, 1);	/* already 10000 a second */
	APX_ASSERT(!strstr(b, "frequency") && strstr(b, "need --replay"));
	apx_hw_kernel_why(b, sizeof(b), 50640000, 178000, 0, apx_hw_is_pm("nvml.power", 10));
	APX_ASSERT(!strcmp(b, "samples of 50.6 ms, kernels of 178 us: per-kernel values need "
			      "--replay"));	/* NVML readings: no rate to raise */
	APX_ASSERT(apx_hw_is_pm("dram__bytes_read.sum", 20));
	apx_hw_kernel_why(b, sizeof(b), 1000000, 800000, 2, 1);
	APX_ASSERT(!strncmp(b, "2 samples of 1 ms ", 18));
	APX_ASSERT(strstr(b, "mostly in it (3 needed): per-kernel values need --replay"));
	return 0;
}

APX_TEST(replay_set_order_matches_the_enum)
{
	const struct apx_pm_set *set = apx_pm_replay_set();
	static const char l2[] = "lts__t_sector_hit_rate.pct";

	APX_ASSERT_EQ(set->n, APX_KC__COUNT);
	APX_ASSERT(!strcmp(set->metrics[APX_KC_DURATION].name, "gpu__time_duration.sum"));
	APX_ASSERT(!strcmp(set->metrics[APX_KC_L2_HIT].name, l2));
	APX_ASSERT(!strcmp(set->metrics[APX_KC_DRAM_READ].name, "dram__bytes_read.sum"));
	APX_ASSERT(strstr(set->metrics[APX_KC_STALL_FIRST].name, "long_scoreboard"));
	APX_ASSERT(strstr(set->metrics[APX_KC_STALL_FIRST + 9].name, "_selected.ratio") &&
		   !strstr(set->metrics[APX_KC_STALL_FIRST + 9].name, "not_selected"));
	APX_ASSERT_EQ(apx_kc_index(l2, sizeof(l2) - 1), APX_KC_L2_HIT);
	APX_ASSERT_EQ(apx_kc_index("lts__t_sector_hit_rate", 22), -1);
	return 0;
}

static void put(struct apx_kc_values *k, enum apx_kc i, double v)
{
	k->v[i] = v;
	k->have |= 1u << i;
}

APX_TEST(bound_by_speed_of_light)
{
	struct apx_kc_values k = { 0 };

	APX_ASSERT_EQ(apx_kc_bound(&k), APX_BOUND_UNKNOWN);
	put(&k, APX_KC_SM_PCT, 20), put(&k, APX_KC_DRAM_PCT, 85);
	APX_ASSERT_EQ(apx_kc_bound(&k), APX_BOUND_MEMORY);
	put(&k, APX_KC_SM_PCT, 90), put(&k, APX_KC_DRAM_PCT, 30);
	APX_ASSERT_EQ(apx_kc_bound(&k), APX_BOUND_COMPUTE);
	put(&k, APX_KC_SM_PCT, 25), put(&k, APX_KC_DRAM_PCT, 15);
	APX_ASSERT_EQ(apx_kc_bound(&k), APX_BOUND_LATENCY);
	APX_ASSERT(!strcmp(apx_bound_name(APX_BOUND_LATENCY), "latency"));
	return 0;
}

APX_TEST(top_stalls_largest_first_without_selected)
{
	struct apx_kc_values k = { 0 };
	unsigned idx[3];

	put(&k, APX_KC_STALL_FIRST + 0, 12.5);	/* long scoreboard */
	put(&k, APX_KC_STALL_FIRST + 4, 3.0);	/* barrier */
	put(&k, APX_KC_STALL_FIRST + 9, 50.0);	/* selected: not a stall */
	put(&k, APX_KC_STALL_FIRST + 6, 7.0);	/* math pipe throttle */
	put(&k, APX_KC_STALL_FIRST + 7, 1.0);	/* wait */
	APX_ASSERT_EQ(apx_kc_top_stalls(&k, idx, 3), 3);
	APX_ASSERT(idx[0] == 0 && idx[1] == 6 && idx[2] == 4);
	APX_ASSERT(strstr(apx_stall_words(idx[0]), "global"));
	APX_ASSERT(strstr(apx_stall_try(6), "tensor cores"));
	return 0;
}

APX_TEST(l2_advice)
{
	struct apx_kc_values k = { 0 }, kw = { 0 };
	struct apx_l2_input in = { .k = &k, .persist_max = 30u << 20, .launches_per_step = 4 };
	struct apx_l2_advice a;

	/* re-reads 20 MB from DRAM a launch at 12 % L2 hits, DRAM 70 % busy: a 20 MiB window */
	put(&k, APX_KC_L2_HIT, 12), put(&k, APX_KC_DRAM_READ, 20e6), put(&k, APX_KC_DRAM_PCT, 70);
	apx_l2_advise(&in, &a);
	APX_ASSERT_EQ(a.kind, APX_L2_SUGGEST_WINDOW);
	APX_ASSERT_EQ(a.window_bytes, 20u << 20);
	APX_ASSERT(a.hit_ratio == 1.0);
	/* 200 MB re-read: 30 MiB of set-aside keeps 15 % of it: no advice */
	put(&k, APX_KC_DRAM_READ, 200e6);
	apx_l2_advise(&in, &a);
	APX_ASSERT_EQ(a.kind, APX_L2_NONE);
	/* 60 MB: hitRatio 0.5 */
	put(&k, APX_KC_DRAM_READ, 60e6);
	apx_l2_advise(&in, &a);
	APX_ASSERT(a.kind == APX_L2_SUGGEST_WINDOW && fabs(a.hit_ratio - 30.0 * 1048576 / 60817408) < 1e-9);
	/* good hit rate already: nothing */
	put(&k, APX_KC_L2_HIT, 80);
	apx_l2_advise(&in, &a);
	APX_ASSERT_EQ(a.kind, APX_L2_NONE);
	/* a 24 MiB window under a 30 MiB set-aside, hit rate 80 -> 82: no gain */
	in.window_bytes = 24u << 20, in.persist_limit = 30u << 20, in.k_window = &kw;
	put(&kw, APX_KC_L2_HIT, 82);
	apx_l2_advise(&in, &a);
	APX_ASSERT(a.kind == APX_L2_WINDOW_NO_GAIN && a.hit_before == 80 && a.hit_after == 82);
	/* ... and with 95 %: it helped */
	put(&kw, APX_KC_L2_HIT, 95);
	apx_l2_advise(&in, &a);
	APX_ASSERT_EQ(a.kind, APX_L2_NONE);
	/* a 24 MiB window over a 8 MiB set-aside: too small */
	in.persist_limit = 8u << 20;
	apx_l2_advise(&in, &a);
	APX_ASSERT(a.kind == APX_L2_SETASIDE_TOO_SMALL && fabs(a.hit_ratio - 1.0 / 3) < 1e-9);
	return 0;
}

APX_TEST_MAIN()
