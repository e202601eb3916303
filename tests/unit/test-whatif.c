/*
 * test-whatif.c - unit tests of the what-if simulator (lib/analysis/whatif):
 * on the committed real traces (tests/fixtures/suite, tests/fixtures/real) the unchanged graph
 * reproduces the recorded steady window (the error is printed: docs/report.md, "What-if
 * simulation"); on synthetic traces (tracegen.h) a GPU-bound program's syncs save little and a
 * host-bound one's much, a launch-bound loop saves its launch gaps under a CUDA graph, a
 * pageable copy pinned saves its time beyond the pinned rate, a copy moved to a side stream
 * hides behind compute, removing empty_cache()'s allocator calls saves what they cost, a
 * kernel that waits for another stream's copy is named as a cross-stream wait, the launch queue's depth bounds how far the host runs ahead, and
 * every transformation leaves an unchanged graph alone. `test-whatif table FILE...` prints
 * the fidelity and every transformation's saving for traces (for docs and debugging).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apx-test.h"
#include "analysis/findings.h"
#include "analysis/model.h"
#include "analysis/store.h"
#include "analysis/whatif/whatif.h"
#include "unit/analysed.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

static struct apx_model *load_file(const char *path)
{
	struct apx_model *m = apx_model_new();

	if (!m)
		return NULL;
	if (apx_model_add_file(m, path, NULL) < 0 || apx_model_finish(m) < 0) {
		apx_model_free(m);
		return NULL;
	}
	return m;
}

/* The unchanged graph's error against the recorded window, in % (with and without the
 * delays nothing explains). */
static int fidelity(const struct apx_model *m, double *ret_pct, double *ret_nodelay_pct)
{
	struct apx_wi_params p = { .xform = APX_WI_X_NONE, .keep_collector = 1, .no_delays = 1 };
	struct apx_wi_result r, nd;
	int e;

	if ((e = apx_whatif_fidelity(m, &r)) < 0 || (e = apx_whatif_simulate(m, &p, &nd)) < 0)
		return e;
	if (!r.window_ns)
		return -ENOENT;
	*ret_pct = 100.0 * ((double)r.sim_ns - (double)r.window_ns) / (double)r.window_ns;
	*ret_nodelay_pct = 100.0 * ((double)nd.sim_ns - (double)r.window_ns) / (double)r.window_ns;
	return 0;
}

static void table_row(const char *path)
{
	struct apx_model *m = load_file(path);
	const struct apx_whatif *w;
	double pct = NAN, nd = NAN, steps;
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!m) {
		printf("%-28s unreadable\n", base);
		return;
	}
	w = m->whatif;
	if (!w || fidelity(m, &pct, &nd) < 0) {
		printf("%-28s no graph\n", base);
		apx_model_free(m);
		return;
	}
	steps = m->steady.count ? (double)m->steady.count : 1;
	printf("%-28s tasks %6zu inferred %6llu deps %4llu delayed %5llu (%.2f ms) err %+6.2f%% "
	       "nodelay %+6.2f%%", base, w->n, (unsigned long long)w->inferred,
	       (unsigned long long)w->deps, (unsigned long long)w->delayed, (double)w->delay_ns / 1e6,
	       pct, nd);
	for (int x = APX_WI_X_REMOVE_SYNCS; x <= APX_WI_X_ASYNC_COPIES; x++) {
		struct apx_wi_params p = { .xform = (enum apx_wi_xform)x };
		double s = 0;

		if (x == APX_WI_X_PIN_COPIES)
			p.rate_bps = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);
		if (x == APX_WI_X_ASYNC_COPIES)
			p.rate_bps = apx_pinned_or_link_bps(m, APX_COPY_D2H, NULL);
		if (apx_whatif_saving(m, &p, &s) == 0)
			printf(" %s %.3f", apx_wi_xform_name(p.xform), s / steps / 1e6);
	}
	printf("\n");
	apx_model_free(m);
}

APX_TEST(suite_fidelity)
{
	static const char *const cases[] = {
		"copy_overlap", "foreach", "fp32_matmul", "graph_recapture", "host_stall",
		"launch_bound", "loader", "pageable", "repeated_copy", "replica", "small_copies",
		"sync_copy", "sync_item", "zero_grad",
	};
	char path[512];
	double worst = 0, nd_lo = 0, nd_hi = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int v = 0; v < 2; v++) {
			struct apx_model *m;
			double pct, nd;

			snprintf(path, sizeof(path), "%s/tests/fixtures/suite/%s_%s.apx", APX_SOURCE_DIR,
				 cases[i], v ? "fixed" : "planted");
			m = load_file(path);
			if (!m)
				return APX_TEST_SKIP;
			APX_ASSERT(m->whatif);
			APX_ASSERT_OK(fidelity(m, &pct, &nd));
			if (fabs(pct) > worst)
				worst = fabs(pct);
			nd_lo = nd < nd_lo ? nd : nd_lo;
			nd_hi = nd > nd_hi ? nd : nd_hi;
			/* with the delays nothing explains kept: reproduces the window; without
			 * them: what the edges alone explain (docs/report.md) */
			if (fabs(pct) > 1.0 || nd < -25.0 || nd > 1.0)
				APX_FAIL_("%s: the unchanged graph is %+.2f %% off (%+.2f %% without "
					  "its delays)", path, pct, nd);
			apx_model_free(m);
		}
	fprintf(stderr, "suite: unchanged graphs within %.3f %% of the recorded windows; without "
		"the delays %+.2f to %+.2f %%\n", worst, nd_lo, nd_hi);
	return 0;
}

/* ---- synthetic programs: generated from a host/GPU model, so the truth is known ---------- */

/* A loop of `blocks` blocks of `nk` kernels of kdur ns on one stream; the host spends
 * host(i) ns before launching kernel i of a block, then (sync) waits for the GPU in a stream
 * sync and spends after_ns before the next block. Writes the trace when t is not NULL; returns
 * the loop's time (first launch to the last end) so that a run without syncs is the truth. */
static uint64_t gen(struct tg *t, int blocks, int nk, uint64_t kdur, uint64_t (*host)(int),
		    int sync, uint64_t after_ns)
{
	uint64_t h = 10 * MS, g = 0, first = h;
	static const char *const names[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" };

	for (int b = 0; b < blocks; b++) {
		for (int i = 0; i < nk; i++) {
			uint64_t s;

			h += host(i);
			s = h > g ? h : g;
			g = s + kdur;
			if (t)
				tg_kernel(t, s, kdur, names[i % 8], 7);
		}
		if (sync) {
			uint64_t e = (g > h ? g : h) + 5 * US;

			if (t)
				tg_sync(t, h, e, APX_SYNC_KIND_STREAM);
			h = e;
		}
		h += after_ns;
	}
	return (g > h ? g : h) - first;
}

/* A sync in every block (the data-dependent branch on a GPU value), the host ahead of
 * the GPU for most of the block and behind it at its end: the gaps at the end are there with or
 * without the sync, so removing it saves only its own cost (and the first launch after it). */
static uint64_t host_phase(int i)
{
	return i < 20 ? 10 * US : 110 * US;
}

/* The model of t with the rules run on the simulator's savings (apx report --savings whatif). */
static struct apx_model *analyse(struct tg *t, struct apx_findings *fd)
{
	struct apx_model *m = tg_model(t, 1);

	if (m) {
		m->whatif_savings = 1;
		apx_rules_run(m, fd);
	}
	return m;
}

static const struct apx_finding *sim_finding(struct apx_findings *fd, const char *rule)
{
	return tg_find(fd, rule);
}

static double metric(const struct apx_finding *f, const char *key)
{
	for (unsigned i = 0; f && i < f->nmetrics; i++)
		if (!strcmp(f->metrics[i].key, key))
			return f->metrics[i].value;
	return NAN;
}

APX_TEST(gpu_bound_syncs_save_little)
{
	static struct apx_findings fd;
	struct apx_wi_params p = { .xform = APX_WI_X_REMOVE_SYNCS };
	uint64_t with = gen(NULL, 200, 24, 20 * US, host_phase, 1, 0);
	uint64_t without = gen(NULL, 200, 24, 20 * US, host_phase, 0, 0);
	double truth = (double)(with - without), sim = 0;
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	gen(&t, 200, 24, 20 * US, host_phase, 1, 0);
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif);
	APX_ASSERT_OK(apx_whatif_saving(m, &p, &sim));
	f = sim_finding(&fd, "sync-frequency");
	fprintf(stderr, "gpu-bound syncs: truth %.2f ms, simulated %.2f ms, finding %.2f ms "
		"(rule's own %.2f ms)\n", truth / 1e6, sim / 1e6, f ? f->saving_ns / 1e6 : 0.0,
		f ? metric(f, "saving_rule_ns") / 1e6 : 0.0);
	/* the simulation follows the truth; the refill gaps are not all the sync's */
	APX_ASSERT(sim <= 1.3 * truth + 0.01 * (double)with);
	APX_ASSERT(sim >= 0.7 * truth - 0.01 * (double)with);
	APX_ASSERT(truth < 0.05 * (double)with);	/* the syncs cost little here */
	if (f)
		APX_ASSERT(f->saving_ns <= 1.3 * truth + 0.01 * (double)with);
	apx_model_free(m);
	return 0;
}

static uint64_t host_fast(int i)
{
	(void)i;
	return 8 * US;
}

APX_TEST(syncs_before_host_work_save_much)
{
	static struct apx_findings fd;
	struct apx_wi_params p = { .xform = APX_WI_X_REMOVE_SYNCS };
	uint64_t with = gen(NULL, 200, 48, 25 * US, host_fast, 1, 300 * US);
	uint64_t without = gen(NULL, 200, 48, 25 * US, host_fast, 0, 300 * US);
	double truth = (double)(with - without), sim = 0;
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	gen(&t, 200, 48, 25 * US, host_fast, 1, 300 * US);
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif);
	APX_ASSERT_OK(apx_whatif_saving(m, &p, &sim));
	f = sim_finding(&fd, "sync-frequency");
	fprintf(stderr, "syncs then host work: truth %.2f ms, simulated %.2f ms, finding %.2f ms\n",
		truth / 1e6, sim / 1e6, f ? f->saving_ns / 1e6 : 0.0);
	APX_ASSERT(truth > 0.2 * (double)with);
	APX_ASSERT(sim >= 0.8 * truth && sim <= 1.2 * truth);
	APX_ASSERT(f && f->saving_ns >= 0.8 * truth);
	apx_model_free(m);
	return 0;
}

static uint64_t host_launch(int i)
{
	(void)i;
	return 12 * US;
}

APX_TEST(launch_bound_saves_much)
{
	static struct apx_findings fd;
	struct apx_wi_params p = { .xform = APX_WI_X_CUDA_GRAPH };
	uint64_t with = gen(NULL, 200, 48, 3 * US, host_launch, 0, 0);
	/* replayed from a graph: the kernels back to back with ~1 us between them */
	double truth = (double)with - 200.0 * 48.0 * (3.0 + 1.0) * US, sim = 0;
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	gen(&t, 200, 48, 3 * US, host_launch, 0, 0);
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif && m->launch_bound);
	APX_ASSERT_OK(apx_whatif_saving(m, &p, &sim));
	f = sim_finding(&fd, "launch-bound");
	fprintf(stderr, "launch-bound: truth %.2f ms, simulated %.2f ms, finding %.2f ms\n",
		truth / 1e6, sim / 1e6, f ? f->saving_ns / 1e6 : 0.0);
	APX_ASSERT(truth > 0.5 * (double)with);
	APX_ASSERT(f && f->saving_ns >= 0.7 * truth && f->saving_ns <= 1.3 * truth);
	APX_ASSERT(strstr(f->model, "cuda-graph"));
	apx_model_free(m);
	return 0;
}

/* Every transformation of a graph it has nothing to change in changes nothing, and the
 * unchanged graph of a synthetic trace is exact. */
APX_TEST(unchanged)
{
	static struct apx_findings fd;
	struct apx_wi_result r;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	gen(&t, 100, 16, 30 * US, host_fast, 1, 50 * US);
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif);
	APX_ASSERT_OK(apx_whatif_fidelity(m, &r));
	APX_ASSERT_EQ(r.sim_ns, r.window_ns);
	for (int x = APX_WI_X_PIN_COPIES; x < APX_WI_X__COUNT; x++) {
		struct apx_wi_params p = { .xform = (enum apx_wi_xform)x, .rate_bps = 50e9,
					   .factor = 0, .keep_collector = 1 };
		double s;

		if (x == APX_WI_X_CUDA_GRAPH || x == APX_WI_X_KERNEL_SPEEDUP)
			continue;
		APX_ASSERT(apx_whatif_saving(m, &p, &s) == -ENOENT);
	}
	apx_model_free(m);
	return 0;
}

/* A pageable copy made pinned: its time beyond the pinned rate, and the host no longer blocked
 * in it; moved to a side stream: hidden behind the kernels of the step before. */
APX_TEST(copies)
{
	static struct apx_findings fd;
	struct apx_wi_params pin = { .xform = APX_WI_X_PIN_COPIES, .rate_bps = 50e9 };
	struct apx_wi_params side = { .xform = APX_WI_X_COPY_STREAM };
	uint64_t h = 10 * MS, bytes = 64ull << 20;
	double s_pin = 0, s_side = 0, copy_ns = 5.0 * MS, pinned_ns = (double)bytes / 50e9 * 1e9;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 50; i++) {	/* a blocking pageable copy, then 3 ms of kernels */
		tg_copy_call(&t, h + 20 * US, (uint64_t)copy_ns, APX_COPY_H2D, APX_MEM_PAGEABLE,
			     bytes, h, h + 20 * US + (uint64_t)copy_ns + 10 * US);
		h += 20 * US + (uint64_t)copy_ns + 10 * US;
		for (int k = 0; k < 6; k++) {
			h += 5 * US;
			tg_kernel(&t, h, 500 * US, "gemm", 0);	/* the copy's stream */
			h += 500 * US;
		}
	}
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif);
	APX_ASSERT_OK(apx_whatif_saving(m, &pin, &s_pin));
	APX_ASSERT_OK(apx_whatif_saving(m, &side, &s_side));
	fprintf(stderr, "copies: pinned saves %.2f ms a step (copy %.2f, pinned %.2f), side "
		"stream %.2f ms a step\n", s_pin / 49 / 1e6, copy_ns / 1e6, pinned_ns / 1e6,
		s_side / 49 / 1e6);
	/* about 49 steps in the window: each saves the copy's time beyond the pinned rate */
	APX_ASSERT(s_pin / 49 >= 0.8 * (copy_ns - pinned_ns) && s_pin / 49 <= 1.2 * (copy_ns + 40 * US));
	/* hidden behind 3 ms of kernels: up to 3 ms a step */
	APX_ASSERT(s_side / 49 >= 0.8 * 3.0 * MS && s_side / 49 <= 1.2 * 3.0 * MS);
	apx_model_free(m);
	return 0;
}

/* torch.cuda.empty_cache() every step: 40 kernels of 50 us launched 10 us apart (GPU-bound),
 * then a cudaFree that waits for the GPU and a cudaMalloc of 1 ms before the next step's
 * launches. Returns the loop's time; the truth is the same loop without the allocator calls. */
static uint64_t gen_churn(struct tg *t, int steps, int churn)
{
	uint64_t h = 10 * MS, g = 0, first = h;
	char name[32];

	for (int b = 0; b < steps; b++) {
		uint64_t step0 = h;

		for (int i = 0; i < 40; i++) {
			uint64_t s;

			h += 10 * US;
			s = h > g ? h : g;
			g = s + 50 * US;
			if (t)
				tg_kernel(t, s, 50 * US, i % 2 ? "gemm" : "gelu", 7);
		}
		if (churn) {
			uint64_t fe = (g > h ? g : h) + 300 * US;

			if (t) {
				tg_api(t, h, fe, ++t->corr, 100, "cudaFree_v3020");
				tg_api(t, fe + 5 * US, fe + 5 * US + 1 * MS, ++t->corr, 100,
				       "cudaMalloc_v3020");
			}
			h = fe + 5 * US + 1 * MS;
		}
		if (t) {
			snprintf(name, sizeof(name), "ProfilerStep#%d", b);
			tg_marker(t, step0, h, name);
		}
	}
	return (g > h ? g : h) - first;
}

/* The allocator's time is its own idle cause, allocator-churn fires, and the simulator's
 * no-alloc saving follows the truth. */
APX_TEST(allocator_churn)
{
	static struct apx_findings fd;
	struct apx_wi_params p = { .xform = APX_WI_X_NO_ALLOC };
	uint64_t with = gen_churn(NULL, 60, 1), without = gen_churn(NULL, 60, 0);
	double truth = (double)(with - without), sim = 0;
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	gen_churn(&t, 60, 1);
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif);
	APX_ASSERT_OK(apx_whatif_saving(m, &p, &sim));
	f = sim_finding(&fd, "allocator-churn");
	fprintf(stderr, "allocator churn: truth %.2f ms, simulated %.2f ms, finding %.2f ms, idle "
		"in the allocator %.2f ms\n", truth / 1e6, sim / 1e6, f ? f->saving_ns / 1e6 : 0.0,
		(double)m->gpu.idle_by_cause[APX_IDLE_ALLOC] / 1e6);
	APX_ASSERT(truth > 0.3 * (double)with);
	APX_ASSERT(f && strstr(f->model, "no-alloc"));
	APX_ASSERT(f->saving_ns >= 0.8 * truth * m->steady.count / 60 &&
		   f->saving_ns <= 1.2 * truth);
	/* the steady window's idle is the allocator's */
	APX_ASSERT(m->gpu.idle_by_cause[APX_IDLE_ALLOC] > 0.9 * (double)m->gpu.idle_ns);
	APX_ASSERT(!tg_find(&fd, "gpu-starvation"));
	apx_model_free(m);
	return 0;
}

/* A kernel on stream 7 that waits for the copy of stream 13 (an event wait): launched at the
 * copy's start, it starts as the copy ends; the report's cross-stream waits name the pair. */
APX_TEST(cross_stream_waits)
{
	static struct apx_findings fd;
	struct apx_wi_wait w[4];
	uint64_t h = 10 * MS;
	struct apx_model *m;
	size_t n;
	struct tg t;
	char name[32];

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 30; i++) {
		tg_copy(&t, h, 1 * MS, APX_COPY_H2D, APX_MEM_PINNED, 25000000, 1, 0, 13);
		tg_kernel_launch(&t, h + 1 * MS + 2 * US, 2 * MS, "gemm", h, 1, 0);
		snprintf(name, sizeof(name), "ProfilerStep#%d", i);
		tg_marker(&t, h, h + 3100 * US, name);
		h += 3100 * US;
	}
	m = analyse(&t, &fd);
	APX_ASSERT(m && m->whatif && m->whatif->deps > 0);
	n = apx_whatif_waits(m, w, 4);
	APX_ASSERT_EQ(n, 1);
	APX_ASSERT_EQ(m->store->streams[w[0].stream].id, 7);
	APX_ASSERT_EQ(m->store->streams[w[0].awaited_stream].id, 13);
	APX_ASSERT(w[0].count >= 20 && w[0].count == m->whatif->deps);
	APX_ASSERT_EQ(m->whatif->t[w[0].waiter].kind, APX_WI_KERNEL);
	APX_ASSERT_EQ(m->whatif->t[w[0].awaited].kind, APX_WI_COPY);
	/* stream 7 was idle from its kernel's end to the next one's start: 1.1 ms a step */
	APX_ASSERT(w[0].idle_ns >= (w[0].count - 1) * 1090 * US &&
		   w[0].idle_ns <= w[0].count * 1110 * US);
	apx_model_free(m);
	return 0;
}

/* The host runs ahead of the GPU at most APX_WI_QUEUE_DEPTH launches. */
APX_TEST(queue_depth)
{
	struct apx_wi_stream st = { .es = 0, .device = 0 };
	uint8_t conc = 0;
	uint64_t eng[APX_WI_ENG__COUNT] = { 0 };
	struct apx_whatif w = { .streams = &st, .nstreams = 1, .ndevices = 1,
				.dev_concurrent = &conc, .eng_free0 = eng, .start_ns = 0 };
	enum { N = 3000 };
	static struct apx_wi_task t[N + 1];
	uint64_t sim;

	for (size_t i = 0; i < N; i++) {
		t[i] = (struct apx_wi_task){ .pre_ns = 1 * US, .dur_ns = 100 * US, .stream = 0,
					     .await = APX_WI_NONE, .dep = APX_WI_NONE,
					     .kind = APX_WI_KERNEL, .flags = APX_WI_F_SERIAL };
	}
	/* then the host works 10 s on its own */
	t[N] = (struct apx_wi_task){ .call_ns = 10000 * MS, .stream = APX_WI_NONE,
				     .await = APX_WI_NONE, .dep = APX_WI_NONE, .kind = APX_WI_ALLOC,
				     .engine = APX_WI_ENG_NONE };
	APX_ASSERT_OK(apx_whatif_run(&w, t, N + 1, 1, &sim));
	/* the host's last launch waited for launch N - 1 - 1024 to end */
	APX_ASSERT(sim >= 10000 * MS + (uint64_t)(N - APX_WI_QUEUE_DEPTH) * 100 * US);
	APX_ASSERT(sim <= 10000 * MS + (uint64_t)(N - APX_WI_QUEUE_DEPTH + 2) * 100 * US);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "table")) {
		for (int i = 2; i < argc; i++)
			table_row(argv[i]);
		return 0;
	}
	{
		int failed = 0, ran = 0, skipped = 0;

		for (const struct apx_test *t = __start_apx_tests; t < __stop_apx_tests; t++) {
			int r, want = argc < 2;

			for (int i = 1; i < argc; i++)
				want |= !strcmp(argv[i], t->name);
			if (!want)
				continue;
			r = t->fn();
			ran++;
			skipped += r == APX_TEST_SKIP;
			failed += r != 0 && r != APX_TEST_SKIP;
			fprintf(stderr, "%-40s %s\n", t->name,
				r == 0 ? "ok" : r == APX_TEST_SKIP ? "SKIP" : "FAIL");
		}
		return failed ? 1 : ran && skipped == ran ? APX_TEST_SKIP : 0;
	}
}
