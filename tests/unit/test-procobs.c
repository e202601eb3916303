/*
 * test-procobs.c - nvperfd's rules (lib/analysis/procobs.h, rules/obs_*.c) on synthetic
 * process observations: each fires on an observation past its threshold, with the record the
 * daemon writes (id, severity, title, typed metrics, fix) and stays silent just inside it or
 * says why it could not measure; pageable-copy's saving and severity follow the report's model
 * (finding.h); the `apx attach` command a summary with a big problem suggests. Linked with
 * libapx_rules.a alone: the part of the engine nvperfd links. Run by
 * ctest (unit-procobs).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/procobs.h"
#include "apx-test.h"

#include "base/banned.h"

#define S 1000000000ull
#define KIB 1024ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

static struct apx_findings fd;	/* ~280 KiB: not on the stack */

/* A 100 s run using 50 % of a core, nothing else seen, every threshold off but the minimum
 * run time (nvperfd.conf's default 10 s). */
static struct apx_procobs base_obs(void)
{
	struct apx_procobs o;

	memset(&o, 0, sizeof(o));
	o.run_ns = 100 * S;
	o.cpu_ns = 50 * S;
	o.gpu_device = -1;
	o.th.min_runtime_ns = 10 * S;
	return o;
}

static const struct apx_finding *only(const char *rule)
{
	const struct apx_finding *hit = NULL;

	for (size_t i = 0; i < fd.n; i++)
		if (!strcmp(fd.f[i].rule, rule)) {
			if (hit)
				return NULL;	/* two of them: not "the" finding */
			hit = &fd.f[i];
		}
	return hit;
}

static const struct apx_rule_result *result(const char *rule)
{
	for (size_t i = 0; i < fd.nresults; i++)
		if (!strcmp(fd.results[i].rule, rule))
			return &fd.results[i];
	return NULL;
}

static double metric(const struct apx_finding *f, const char *key)
{
	for (unsigned i = 0; f && i < f->nmetrics; i++)
		if (!strcmp(f->metrics[i].key, key))
			return f->metrics[i].value;
	return -1;
}

/* run o; the rule's status must be want, and nothing else may fire */
static int run_alone(const struct apx_procobs *o, const char *rule, enum apx_rule_status want)
{
	const struct apx_rule_result *r;

	apx_procobs_run(o, &fd);
	r = result(rule);
	if (!r || r->status != want) {
		fprintf(stderr, "%s: status %d, want %d (%s)\n", rule, r ? (int)r->status : -1,
			(int)want, r ? r->why : "no result");
		return 0;
	}
	for (size_t i = 0; i < fd.n; i++)
		if (strcmp(fd.f[i].rule, rule)) {
			fprintf(stderr, "%s fired too: %s\n", fd.f[i].rule, fd.f[i].title);
			return 0;
		}
	return want != APX_RULE_FIRED || only(rule) != NULL;
}

APX_TEST(table_runs_every_rule_in_order)
{
	struct apx_procobs o = base_obs();
	size_t n;
	const struct apx_rule *r = apx_procobs_rules(&n);
	static const char *const order[] = { "rss-peak", "invol-csw", "cpu-low", "cpu-high",
					     "pageable-copy", "l2-persistence", "uprobe-rate",
					     "gpu-idle", "sm-low", "memory-capacity" };

	APX_ASSERT_EQ(n, sizeof(order) / sizeof(order[0]));
	for (size_t i = 0; i < n; i++) {
		APX_ASSERT_STREQ(r[i].id, order[i]);
		APX_ASSERT(r[i].observe != NULL);
		APX_ASSERT(r[i].run == NULL);	/* the trace half is rules.c's (test-rules) */
	}
	apx_procobs_run(&o, &fd);
	APX_ASSERT_EQ(fd.nresults, n);
	APX_ASSERT_EQ(fd.n, 0);
	return 0;
}

APX_TEST(short_run_measures_nothing)
{
	struct apx_procobs o = base_obs();

	o.th.rss_peak_bytes = 1;
	o.rss_peak_bytes = GIB;
	o.run_ns = o.th.min_runtime_ns - 1;
	apx_procobs_run(&o, &fd);
	APX_ASSERT_EQ(fd.n, 0);
	for (size_t i = 0; i < fd.nresults; i++) {
		APX_ASSERT_EQ(fd.results[i].status, APX_RULE_NOT_MEASURED);
		APX_ASSERT(strstr(fd.results[i].why, "threshold.min_runtime"));
	}
	o.run_ns = o.th.min_runtime_ns;
	apx_procobs_run(&o, &fd);
	APX_ASSERT(only("rss-peak"));
	return 0;
}

APX_TEST(rss_peak)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	APX_ASSERT(run_alone(&o, "rss-peak", APX_RULE_NOT_MEASURED));	/* off */
	o.th.rss_peak_bytes = 2 * GIB;
	o.rss_peak_bytes = 2 * GIB - 1;
	APX_ASSERT(run_alone(&o, "rss-peak", APX_RULE_CLEAN));
	o.rss_peak_bytes = 2 * GIB;			/* reaching it is enough */
	APX_ASSERT(run_alone(&o, "rss-peak", APX_RULE_FIRED));
	o.rss_peak_bytes = 3 * GIB + GIB / 2;
	APX_ASSERT(run_alone(&o, "rss-peak", APX_RULE_FIRED));
	f = only("rss-peak");
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);
	APX_ASSERT_STREQ(f->title, "peak RSS 3.5 GiB (threshold 2.0 GiB)");
	APX_ASSERT_EQ(metric(f, "rss_peak_bytes"), o.rss_peak_bytes);
	APX_ASSERT_EQ(metric(f, "threshold_bytes"), o.th.rss_peak_bytes);
	APX_ASSERT(!f->saving_estimated && f->saving_ns == 0);
	APX_ASSERT_EQ(f->confidence_pct, 100);
	APX_ASSERT(strstr(f->fix, "prefetch_factor"));
	return 0;
}

APX_TEST(invol_csw)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.th.invol_csw_rate = 1000;
	o.invol_csw = 1000 * 100;	/* exactly 1000/s over 100 s: not over */
	APX_ASSERT(run_alone(&o, "invol-csw", APX_RULE_CLEAN));
	o.invol_csw = 2500 * 100;
	APX_ASSERT(run_alone(&o, "invol-csw", APX_RULE_FIRED));
	f = only("invol-csw");
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);
	APX_ASSERT(strstr(f->title, "2500 involuntary context switches/s (threshold 1000)"));
	APX_ASSERT_EQ(metric(f, "invol_csw_per_s"), 2500);
	APX_ASSERT_EQ(metric(f, "invol_csw"), o.invol_csw);
	return 0;
}

APX_TEST(cpu_low_and_high)
{
	struct apx_procobs o = base_obs();	/* 50 % of a core */
	const struct apx_finding *f;

	o.th.cpu_low_pct = 50;
	APX_ASSERT(run_alone(&o, "cpu-low", APX_RULE_CLEAN));	/* not below 50 */
	o.cpu_ns = 5 * S;				/* 5 % */
	APX_ASSERT(run_alone(&o, "cpu-low", APX_RULE_FIRED));
	f = only("cpu-low");
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_STREQ(f->title, "average CPU 5.0% of a core over 100 s (threshold 50%): the "
			 "process mostly waited");
	APX_ASSERT_EQ(metric(f, "cpu_pct"), 5);

	o = base_obs();
	o.th.cpu_high_pct = 150;
	o.cpu_ns = 150 * S;				/* 150 %: not above */
	APX_ASSERT(run_alone(&o, "cpu-high", APX_RULE_CLEAN));
	o.cpu_ns = 390 * S;				/* 390 %: four threads busy */
	APX_ASSERT(run_alone(&o, "cpu-high", APX_RULE_FIRED));
	f = only("cpu-high");
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_STREQ(f->title, "average CPU 390% over 100 s (threshold 150%)");
	APX_ASSERT_EQ(metric(f, "cpu_pct"), 390);
	return 0;
}

/* 3 GiB H2D pageable in 3000 calls taking 1.5 s (2.1 GB/s), 8 GiB pinned in 800 calls of
 * 10 MiB taking 0.4 s (21.0 GB/s: large enough to tell); 1 GiB D2H pageable in 0.5 s, no
 * pinned D2H (the floor) */
static struct apx_procobs copying(void)
{
	struct apx_procobs o = base_obs();

	o.uprobes = APX_PROCOBS_UP_ATTACHED;
	o.copy_time = 1;
	o.th.pageable_copy_bytes = GIB;
	o.h2d.calls[0] = 3000, o.h2d.bytes[0] = 3 * GIB, o.h2d.ns[0] = 1500000000ull;
	o.h2d.calls[1] = 800, o.h2d.bytes[1] = 800 * 10 * MIB, o.h2d.ns[1] = 400000000ull;
	o.d2h.calls[0] = 100, o.d2h.bytes[0] = GIB, o.d2h.ns[0] = 500000000ull;
	return o;
}

APX_TEST(pageable_copy_timed)
{
	struct apx_procobs o = copying();
	const struct apx_finding *f;
	double pinned = (double)o.h2d.bytes[1] / ((double)o.h2d.ns[1] / 1e9);
	double want = ((double)o.h2d.ns[0] - (double)o.h2d.bytes[0] / pinned * 1e9) +
		      ((double)o.d2h.ns[0] - (double)o.d2h.bytes[0] / APX_LINK_FLOOR_BPS * 1e9);

	APX_ASSERT(run_alone(&o, "pageable-copy", APX_RULE_FIRED));
	f = only("pageable-copy");
	APX_ASSERT(f->saving_estimated);
	APX_ASSERT(f->saving_ns > want - 1 && f->saving_ns < want + 1);
	/* 1.7 s of 100 s: under 2 %, info as in the report; the D2H rate is the floor: 60 % */
	APX_ASSERT_EQ(f->severity, apx_pageable_copy_severity(100.0 * want / 100e9, 1));
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_EQ(f->confidence_pct, 60);
	APX_ASSERT_STREQ(f->title, "4.0 GiB copied between host and pageable memory in 3100 calls "
			 "(2.15 GB/s in the calls; threshold 1.0 GiB)");
	APX_ASSERT_STREQ(f->fix, apx_pageable_copy_fix);
	APX_ASSERT_EQ(metric(f, "bytes"), 4 * GIB);
	APX_ASSERT_EQ(metric(f, "copy_ns"), 2000000000ull);
	/* the report's evidence table: per direction copies, bytes, copy_ns, ideal_ns */
	APX_ASSERT_EQ(f->table.ncols, 4);
	APX_ASSERT_EQ(f->table.nrows, 2);
	APX_ASSERT_STREQ(f->table.row[0].label, "H2D");
	APX_ASSERT_EQ(f->table.row[0].v[1], 3 * GIB);
	APX_ASSERT_STREQ(f->table.row[1].label, "D2H");
	/* the same copies in a 10 s run: 17 % of it, critical */
	o.run_ns = 10 * S;
	apx_procobs_run(&o, &fd);
	APX_ASSERT_EQ(only("pageable-copy")->severity, APX_SEV_CRITICAL);
	return 0;
}

APX_TEST(pageable_copy_untimed_and_silent)
{
	struct apx_procobs o = copying();
	const struct apx_finding *f;

	o.copy_time = 0;
	o.h2d.ns[0] = o.h2d.ns[1] = o.d2h.ns[0] = 0;
	APX_ASSERT(run_alone(&o, "pageable-copy", APX_RULE_FIRED));
	f = only("pageable-copy");
	APX_ASSERT(!f->saving_estimated && f->saving_ns == 0);
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);
	APX_ASSERT(strstr(f->title, "(rate n/a: uprobe_copy_time = no; threshold 1.0 GiB)"));
	/* under the threshold */
	o.th.pageable_copy_bytes = 5 * GIB;
	APX_ASSERT(run_alone(&o, "pageable-copy", APX_RULE_CLEAN));
	/* no uprobes: not measured, and neither are the other uprobe rules */
	o = copying();
	o.uprobes = APX_PROCOBS_UP_NONE;
	APX_ASSERT(run_alone(&o, "pageable-copy", APX_RULE_NOT_MEASURED));
	APX_ASSERT_EQ(result("l2-persistence")->status, APX_RULE_NOT_MEASURED);
	APX_ASSERT_EQ(result("uprobe-rate")->status, APX_RULE_NOT_MEASURED);
	return 0;
}

APX_TEST(l2_persistence)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.uprobes = APX_PROCOBS_UP_ATTACHED;
	o.th.l2_persist = 1;
	APX_ASSERT(run_alone(&o, "l2-persistence", APX_RULE_CLEAN));	/* copied nothing */
	/* a window asking for persisting accesses, no set-aside: no effect, a warning */
	o.apw_windows = 2;
	o.apw_persisting = 2;
	APX_ASSERT(run_alone(&o, "l2-persistence", APX_RULE_FIRED));
	f = only("l2-persistence");
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);
	APX_ASSERT(strstr(f->title, "2 L2 access-policy windows asked for persisting accesses"));
	APX_ASSERT(strstr(f->fix, "cudaLimitPersistingL2CacheSize"));
	/* with a set-aside: in use, info without a fix */
	o.l2_limit_bytes = 3 * MIB;
	o.l2_resets = 1;
	APX_ASSERT(run_alone(&o, "l2-persistence", APX_RULE_FIRED));
	f = only("l2-persistence");
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_STREQ(f->title, "L2 persistence in use: set-aside 3.0 MiB, 2 access-policy "
			 "windows (2 persisting), 1 resets");
	APX_ASSERT_EQ(f->fix[0], 0);
	APX_ASSERT_EQ(metric(f, "setaside_bytes"), 3 * MIB);
	/* neither, by a process that copied to the GPU: a suggestion */
	o.l2_limit_bytes = o.apw_windows = o.apw_persisting = o.l2_resets = 0;
	o.h2d.calls[1] = 10;
	APX_ASSERT(run_alone(&o, "l2-persistence", APX_RULE_FIRED));
	APX_ASSERT(strstr(only("l2-persistence")->title, "not used"));
	/* ... not when its probes were removed (the counts stop), nor with the key off */
	o.uprobes = APX_PROCOBS_UP_DETACHED_RATE;
	apx_procobs_run(&o, &fd);
	APX_ASSERT_EQ(result("l2-persistence")->status, APX_RULE_CLEAN);
	o.uprobes = APX_PROCOBS_UP_ATTACHED;
	o.th.l2_persist = 0;
	APX_ASSERT(run_alone(&o, "l2-persistence", APX_RULE_NOT_MEASURED));
	return 0;
}

APX_TEST(uprobe_rate)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.uprobes = APX_PROCOBS_UP_ATTACHED;
	o.th.uprobe_max_rate = 200;
	APX_ASSERT(run_alone(&o, "uprobe-rate", APX_RULE_CLEAN));
	o.uprobes = APX_PROCOBS_UP_DETACHED_RATE;
	o.over_rate_calls = 201;
	APX_ASSERT(run_alone(&o, "uprobe-rate", APX_RULE_FIRED));
	f = only("uprobe-rate");
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_STREQ(f->title, "probes removed after 201 libcuda calls in 1 s (uprobe_max_rate "
			 "200): copy counts cover only the start of the run");
	return 0;
}

APX_TEST(gpu_idle)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.th.gpu_idle_pct = 50;
	o.gpu_device = 1;
	o.gpu_util_samples = 2;
	o.gpu_idle_samples = 2;
	APX_ASSERT(run_alone(&o, "gpu-idle", APX_RULE_NOT_MEASURED));	/* 2 samples: too few */
	o.gpu_util_samples = 10;
	o.gpu_idle_samples = 5;				/* 50 %: not over */
	APX_ASSERT(run_alone(&o, "gpu-idle", APX_RULE_CLEAN));
	o.gpu_idle_samples = 8;
	APX_ASSERT(run_alone(&o, "gpu-idle", APX_RULE_FIRED));
	f = only("gpu-idle");
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);
	APX_ASSERT_STREQ(f->title, "GPU 1 idle in 80% of the samples while the process held it "
			 "(threshold 50%)");
	APX_ASSERT_EQ(metric(f, "idle_pct"), 80);
	APX_ASSERT_EQ(metric(f, "device"), 1);
	return 0;
}

APX_TEST(sm_low)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.th.sm_low_pct = 10;
	o.gpu_device = 0;
	o.sm_samples = 4;
	o.sm_util_sum = 4 * 10;				/* mean 10 %: not under */
	APX_ASSERT(run_alone(&o, "sm-low", APX_RULE_NOT_MEASURED));	/* not valid */
	o.sm_valid = 1;
	APX_ASSERT(run_alone(&o, "sm-low", APX_RULE_CLEAN));
	o.sm_util_sum = 4 * 3 + 2;
	APX_ASSERT(run_alone(&o, "sm-low", APX_RULE_FIRED));
	f = only("sm-low");
	APX_ASSERT_EQ(f->severity, APX_SEV_INFO);
	APX_ASSERT_STREQ(f->title, "mean SM utilization 3.5% on GPU 0 (threshold 10%)");
	return 0;
}

APX_TEST(memory_capacity)
{
	struct apx_procobs o = base_obs();
	const struct apx_finding *f;

	o.th.gpu_mem_pct = 95;
	o.gpu_device = 0;
	o.dev_mem_peak_permille = 990;
	APX_ASSERT(run_alone(&o, "memory-capacity", APX_RULE_NOT_MEASURED));	/* no reading */
	o.dev_mem_valid = 1;
	o.dev_mem_peak_permille = 949;
	APX_ASSERT(run_alone(&o, "memory-capacity", APX_RULE_CLEAN));
	o.dev_mem_peak_permille = 987;
	APX_ASSERT(run_alone(&o, "memory-capacity", APX_RULE_FIRED));
	f = only("memory-capacity");
	APX_ASSERT_EQ(f->severity, APX_SEV_WARNING);	/* as the report's memory-capacity */
	APX_ASSERT_STREQ(f->title, "GPU 0 memory reached 98.7% of its total while the process ran "
			 "(threshold 95%)");
	APX_ASSERT_STREQ(f->fix, apx_memory_capacity_fix);
	return 0;
}

/* The command a summary suggests: only for a finding of severity warning or above (rss-peak
 * over its threshold: yes; cpu-high, info: no), the collector for a CUDA process and the
 * outside sampler for one without, made of the pid alone. */
APX_TEST(next_cmd)
{
	struct apx_procobs o = base_obs();
	char buf[APX_NEXT_CMD_MAX];

	o.th.cpu_high_pct = 40;				/* 50 % of a core: cpu-high, info */
	apx_procobs_run(&o, &fd);
	APX_ASSERT(only("cpu-high") && only("cpu-high")->severity == APX_SEV_INFO);
	buf[0] = 'x';
	APX_ASSERT_EQ(apx_procobs_next_cmd(fd.f, fd.n, 4242, 1, buf, sizeof(buf)), 0);
	APX_ASSERT_STREQ(buf, "");
	APX_ASSERT_EQ(apx_procobs_next_cmd(fd.f, 0, 4242, 1, buf, sizeof(buf)), 0);

	o.th.rss_peak_bytes = 2 * GIB;			/* and rss-peak, warning */
	o.rss_peak_bytes = 3 * GIB;
	apx_procobs_run(&o, &fd);
	APX_ASSERT(only("rss-peak") && only("rss-peak")->severity == APX_SEV_WARNING);
	APX_ASSERT_EQ(apx_procobs_next_cmd(fd.f, fd.n, 4242, 1, buf, sizeof(buf)),
		      (int)strlen("apx attach 4242 --duration 10 -o attach-4242.apx"));
	APX_ASSERT_STREQ(buf, "apx attach 4242 --duration 10 -o attach-4242.apx");
	APX_ASSERT(apx_procobs_next_cmd(fd.f, fd.n, 77, 0, buf, sizeof(buf)) > 0);
	APX_ASSERT_STREQ(buf, "apx attach 77 --python-only --duration 10");
	/* bad arguments: nothing suggested */
	APX_ASSERT_EQ(apx_procobs_next_cmd(fd.f, fd.n, 0, 1, buf, sizeof(buf)), -EINVAL);
	APX_ASSERT_STREQ(buf, "");
	APX_ASSERT_EQ(apx_procobs_next_cmd(fd.f, fd.n, 4242, 1, buf, 20), -EINVAL);
	APX_ASSERT_STREQ(buf, "");
	return 0;
}

APX_TEST_MAIN()
