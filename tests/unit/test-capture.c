/*
 * test-capture.c - unit tests of collection limited to capture ranges (apx analyze
 * --capture-range=cudaProfilerApi; lib/analysis/capture.c and its users): a repeating step in
 * two ranges 2 s apart gives the gap no idle time and the same idle, steady window and step
 * statistics as the same steps without the gap; the report says so (text and JSON "capture");
 * malformed edges are ignored and counted; a run's files' ranges are one union; a trace
 * without capture key/values is not limited.
 * Synthetic traces (tracegen.h). Label: unit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apx-test.h"
#include "analysis/findings.h"
#include "analysis/model.h"
#include "report/doc.h"
#include "unit/analysed.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

#define STEPS 30		/* a range */
#define STEP (700 * US)
#define T0 (1 * MS)

/* One step at ts: fwd, bwd, opt (380 us of kernels in 400 us), then 300 us on the host. */
static void step(struct tg *t, uint64_t ts)
{
	tg_kernel(t, ts, 100 * US, "fwd", 7);
	tg_kernel(t, ts + 110 * US, 200 * US, "bwd", 7);
	tg_kernel(t, ts + 320 * US, 80 * US, "opt", 7);
}

static void edge(struct tg *t, const char *what, uint64_t ns)
{
	char v[64];

	snprintf(v, sizeof(v), "%s %" PRIu64, what, ns);
	tg_kv(t, "capture", v);
}

/* 2 x STEPS steps; gap: the second range starts that much later, in capture ranges whose
 * edges leave 100 us + 200 us of the 300 us host gap between the ranges collected (so that
 * the collected idle is the same as without the gap); the second range has no stop. */
static struct apx_model *two_ranges(uint64_t gap, struct apx_findings *fd)
{
	struct tg t;
	uint64_t r2 = T0 + STEPS * STEP + gap;

	if (tg_open(&t) < 0)
		return NULL;
	if (gap) {
		tg_kv(&t, "capture_mode", "cudaProfilerApi");
		edge(&t, "start", T0 - 100 * US);
	}
	for (int s = 0; s < STEPS; s++)
		step(&t, T0 + s * STEP);
	if (gap) {
		edge(&t, "stop", T0 + (STEPS - 1) * STEP + 400 * US + 100 * US);
		edge(&t, "start", r2 - 200 * US);
	}
	for (int s = 0; s < STEPS; s++)
		step(&t, r2 + s * STEP);
	return tg_analyse(&t, fd);
}

static uint64_t idle_total(const struct apx_an_timeline *t)
{
	uint64_t n = t->startup_idle_ns + t->teardown_idle_ns;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		n += t->idle_by_cause[c];
	return n;
}

APX_TEST(the_gap_between_ranges_is_no_idle_and_no_step)
{
	struct apx_findings *fa = calloc(1, sizeof(*fa)), *fb = calloc(1, sizeof(*fb));
	struct apx_model *a, *b;

	APX_ASSERT(fa && fb);
	a = two_ranges(2 * S, fa);
	b = two_ranges(0, fb);
	APX_ASSERT(a && b);
	/* the model: two ranges, 2 s of the run not collected */
	APX_ASSERT(a->capture && !b->capture);
	APX_ASSERT_EQ(a->collected.n, 2);
	APX_ASSERT_EQ(b->collected.n, 0);
	APX_ASSERT_EQ(a->capture_bad, 0);
	APX_ASSERT(a->wall_ns > 2 * S);
	APX_ASSERT(a->collected_ns < 50 * MS);
	APX_ASSERT_EQ(b->collected_ns, b->wall_ns);
	APX_ASSERT_EQ(apx_an_collected_overlap(a, T0, T0 + STEPS * STEP + 2 * S),
		      STEPS * STEP - 300 * US + 100 * US + 200 * US);
	/* idle: the gap gives none; the total is the idle inside the ranges, which is the idle
	 * of the same steps without the gap */
	APX_ASSERT_EQ(a->gpu.idle_ns, b->gpu.idle_ns);
	APX_ASSERT_EQ(idle_total(&a->gpu), idle_total(&b->gpu));
	APX_ASSERT_EQ(idle_total(&a->gpu), a->gpu.idle_ns);	/* every idle ns once */
	APX_ASSERT_EQ(a->gpu.active_ns, b->gpu.active_ns);
	APX_ASSERT_EQ(a->gpu.window_ns, b->gpu.window_ns);
	APX_ASSERT_EQ(a->steady_ns, b->steady_ns);
	APX_ASSERT_EQ(a->gpu.idle_by_cause[APX_IDLE_UNKNOWN], b->gpu.idle_by_cause[APX_IDLE_UNKNOWN]);
	for (size_t i = 0; i < a->gaps.n; i++)
		APX_ASSERT(APX_VEC_AT(&a->gaps, struct apx_an_gap, i)->end -
			   APX_VEC_AT(&a->gaps, struct apx_an_gap, i)->start < 1 * MS);
	/* the findings are those of the steps without the gap: the same idle, the same savings */
	APX_ASSERT_EQ(fa->n, fb->n);
	for (size_t i = 0; i < fa->n; i++) {
		APX_ASSERT_STREQ(fa->f[i].rule, fb->f[i].rule);
		APX_ASSERT(fa->f[i].saving_ns == fb->f[i].saving_ns);
	}
	/* steps: found across the ranges; the one spanning the gap is left out of the times */
	APX_ASSERT(a->steady.source == APX_STEPS_KERNELS);
	APX_ASSERT_EQ(a->steady.period, b->steady.period);
	APX_ASSERT_EQ(a->steady.count, b->steady.count);
	APX_ASSERT_EQ(a->steady.uncollected, 1);
	APX_ASSERT_EQ(b->steady.uncollected, 0);
	APX_ASSERT_EQ(a->steady.median_ns, STEP);
	APX_ASSERT_EQ(a->steady.median_ns, b->steady.median_ns);
	APX_ASSERT_EQ(a->steady.p95_ns, b->steady.p95_ns);
	APX_ASSERT_EQ(a->steady.min_ns, b->steady.min_ns);
	APX_ASSERT_EQ(a->steady.max_ns, b->steady.max_ns);
	APX_ASSERT(a->steady.busy_pct == b->steady.busy_pct);
	/* start-up: from the first range's start, not from the process's */
	APX_ASSERT(a->steady.setup_ns <= 100 * US + STEP);
	/* the findings' "% of the run" is of the collected time */
	for (size_t i = 0; i < fa->n; i++)
		APX_ASSERT(fa->f[i].saving_pct <= 100.0 &&
			   fa->f[i].saving_pct >= 100.0 * fa->f[i].saving_ns / (double)a->collected_ns
						      - 1e-9);
	apx_model_free(a);
	apx_model_free(b);
	free(fa);
	free(fb);
	return 0;
}

/* What an emitter writes, in memory (NUL-terminated; free it). */
static char *emit_json(const struct apx_rdoc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (apx_report_emit_json(f, d) < 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static char *emit_text(const struct apx_rdoc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct apx_text_out o = { .f = f };

	if (!f)
		return NULL;
	o.color_out = f;
	if (apx_report_emit_text(&o, d) < 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

APX_TEST(the_report_says_what_was_collected)
{
	struct apx_findings *fa = calloc(1, sizeof(*fa)), *fb = calloc(1, sizeof(*fb));
	struct apx_model *a = two_ranges(2 * S, fa), *b = two_ranges(0, fb);
	struct apx_rdoc *da, *db;
	char *ja, *jb, *ta, *want = NULL;
	size_t n = 0;
	FILE *f;

	APX_ASSERT(a && b);
	da = apx_rdoc_build(a, fa, NULL);
	db = apx_rdoc_build(b, fb, NULL);
	APX_ASSERT(da && db);
	ja = emit_json(da);
	jb = emit_json(db);
	ta = emit_text(da);
	APX_ASSERT(ja && jb && ta);
	f = open_memstream(&want, &n);
	APX_ASSERT(f);
	fprintf(f, "\"capture\":{\"ranges\":2,\"collected_ns\":%" PRIu64 ",\"run_ns\":%" PRIu64
		",\"edges_ignored\":0,\"steps_left_out\":1}", a->collected_ns, a->wall_ns);
	fclose(f);
	APX_ASSERT(strstr(ja, want));
	APX_ASSERT(!strstr(jb, "\"capture\""));
	APX_ASSERT(strstr(ta, "collected          in 2 capture ranges (cudaProfilerStart/Stop): "));
	APX_ASSERT(strstr(ta, "of the run's 2."));
	APX_ASSERT(strstr(ta, "1 step spanning uncollected time"));
	free(want);
	free(ja);
	free(jb);
	free(ta);
	apx_rdoc_free(da);
	apx_rdoc_free(db);
	apx_model_free(a);
	apx_model_free(b);
	free(fa);
	free(fb);
	return 0;
}

/* PM samples (1 ms each, SM active 50 % in the ranges, 0 % between them) that lie wholly
 * between the two ranges are left out of the series' statistics. */
APX_TEST(metric_samples_between_ranges_are_left_out)
{
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	tg_kv(&t, "capture_mode", "cudaProfilerApi");
	edge(&t, "start", T0);
	edge(&t, "stop", T0 + 100 * MS);
	edge(&t, "start", T0 + 300 * MS);
	edge(&t, "stop", T0 + 400 * MS);
	for (uint64_t ms = 0; ms < 400; ms++) {	/* one sample a ms over both ranges and the gap */
		uint64_t a = T0 + ms * MS;
		int inside = ms < 100 || ms >= 300;

		tg_metric_span(&t, a, a + MS, "sm__cycles_active.avg.pct", "%", 0, inside ? 50.0 : 0.0);
		if (inside && ms % 10 == 0)
			tg_kernel(&t, a, 5 * MS, "k", 7);
	}
	m = tg_analyse(&t, NULL);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->pm.n, 1);
	{
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, 0);

		APX_ASSERT_EQ(p->samples, 200);		/* the 200 inside the ranges */
		APX_ASSERT(p->have_steady);
		APX_ASSERT(p->min == 50.0 && p->max == 50.0);	/* none of the gap's zeros */
	}
	apx_model_free(m);
	return 0;
}

APX_TEST(malformed_edges_are_ignored_and_counted)
{
	static const char *const bad[] = {
		"stop 5",			/* no start */
		"start abc",			/* unparsable */
		"start",			/* no time */
		"start -5",
		"begin 7",
		"",
		"start 99999999999999999999999",	/* out of range */
	};
	const struct apx_an_collected *c;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	tg_kv(&t, "capture_mode", "cudaProfilerApi");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tg_kv(&t, "capture", bad[i]);
	edge(&t, "start", 1 * MS);
	edge(&t, "start", 2 * MS);	/* a second start */
	edge(&t, "stop", 500 * US);	/* before its start */
	edge(&t, "stop", 3 * MS);	/* the range [1 ms, 3 ms) */
	edge(&t, "start", 2500 * US);	/* before the stop */
	edge(&t, "stop", 4 * MS);	/* no start */
	edge(&t, "start", 5 * MS);	/* open: ends with the trace */
	for (uint64_t ts = 1100 * US; ts < 3 * MS; ts += 100 * US)
		tg_kernel(&t, ts, 50 * US, "k", 7);
	for (uint64_t ts = 5100 * US; ts < 6 * MS; ts += 100 * US)
		tg_kernel(&t, ts, 50 * US, "k", 7);
	m = tg_analyse(&t, NULL);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->capture_bad, 11);
	APX_ASSERT_EQ(m->files[0].capture_ranges, 2);
	APX_ASSERT_EQ(m->collected.n, 2);
	c = m->collected.data;
	APX_ASSERT_EQ(c[0].start, 1 * MS);
	APX_ASSERT_EQ(c[0].end, 3 * MS);
	APX_ASSERT_EQ(c[1].start, 5 * MS);
	APX_ASSERT_EQ(c[1].end, m->files[0].last_ns);
	APX_ASSERT_EQ(c[1].before, 2 * MS);
	APX_ASSERT_EQ(m->collected_ns, 2 * MS + m->files[0].last_ns - 5 * MS);
	APX_ASSERT_EQ(apx_an_collected_overlap(m, 0, UINT64_MAX), m->collected_ns);
	APX_ASSERT_EQ(apx_an_collected_overlap(m, 2 * MS, 5500 * US), 1 * MS + 500 * US);
	APX_ASSERT_EQ(apx_an_collected_overlap(m, 3 * MS, 5 * MS), 0);
	APX_ASSERT_EQ(apx_an_collected_overlap(m, 5 * MS, 4 * MS), 0);
	/* the GPU gap 2.95 .. 5.1 ms: only its collected 150 us are idle */
	APX_ASSERT_EQ(m->gpu.idle_ns, apx_an_collected_overlap(m, m->gpu.first_ns, m->gpu.last_ns) -
				      m->gpu.busy_ns);
	APX_ASSERT_EQ(idle_total(&m->gpu), m->gpu.idle_ns);
	APX_ASSERT(m->gpu.idle_ns < 2 * MS);
	apx_model_free(m);

	/* only bad edges: nothing limits the trace, and the report says so */
	APX_ASSERT_OK(tg_open(&t));
	tg_kv(&t, "capture", "stop 7");
	tg_kv(&t, "capture", "start x");
	tg_kernel(&t, 1 * MS, 50 * US, "k", 7);
	tg_kernel(&t, 3 * MS, 50 * US, "k", 7);
	m = tg_analyse(&t, NULL);
	APX_ASSERT(m);
	APX_ASSERT(m->capture);
	APX_ASSERT_EQ(m->capture_bad, 2);
	APX_ASSERT_EQ(m->collected.n, 0);
	APX_ASSERT_EQ(m->collected_ns, m->wall_ns);
	APX_ASSERT_EQ(m->gpu.idle_ns, 3 * MS - 1 * MS - 50 * US);
	apx_model_free(m);
	return 0;
}

APX_TEST(the_ranges_of_a_run_s_files_are_one_union)
{
	static const uint8_t uuid[16] = { 1 };
	const struct apx_an_collected *c;
	struct apx_model *m;
	struct tg t[3];

	/* two processes of one GPU, overlapping ranges; a third file (nvperfd's summary, no
	 * capture key/values) spans the whole run and adds no range */
	APX_ASSERT_OK(tg_open_proc(&t[0], "h", 100, uuid));
	APX_ASSERT_OK(tg_open_proc(&t[1], "h", 101, uuid));
	APX_ASSERT_OK(tg_open_nvperfd(&t[2], 102));
	for (int i = 0; i < 2; i++) {
		tg_kv(&t[i], "capture_mode", "cudaProfilerApi");
		edge(&t[i], "start", (2 + (uint64_t)i) * MS);
		tg_kernel(&t[i], (2 + (uint64_t)i) * MS + 100 * US, 100 * US, "k", 7);
		edge(&t[i], "stop", (4 + (uint64_t)i) * MS);
		edge(&t[i], "start", 20 * MS);
		tg_kernel(&t[i], 20 * MS + 100 * US, 100 * US, "k", 7);
		edge(&t[i], "stop", 21 * MS);
	}
	tg_metric(&t[2], 30 * MS, "nvperfd.sm_util", "pct", 0, 102, 50.0);
	m = tg_model(t, 3);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->nfiles, 3);
	APX_ASSERT_EQ(m->files[0].capture_ranges, 2);
	APX_ASSERT_EQ(m->files[1].capture_ranges, 2);
	APX_ASSERT_EQ(m->files[2].capture_ranges, 0);
	APX_ASSERT_EQ(m->collected.n, 2);
	c = m->collected.data;
	APX_ASSERT(c[0].start == 2 * MS && c[0].end == 5 * MS);
	APX_ASSERT(c[1].start == 20 * MS && c[1].end == 21 * MS);
	APX_ASSERT_EQ(m->collected_ns, 4 * MS);
	/* idle: 2.2 .. 3.1 ms, then of the gap 3.2 .. 20.1 ms only 1.8 ms + 100 us collected */
	APX_ASSERT_EQ(m->gpu.idle_ns, 900 * US + 1800 * US + 100 * US);
	apx_model_free(m);
	return 0;
}

APX_TEST(a_trace_without_capture_is_not_limited)
{
	uint64_t s = 0, e = 0;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	tg_kv(&t, "level", "kernels");	/* another key/value */
	tg_kernel(&t, 1 * MS, 50 * US, "k", 7);
	tg_kernel(&t, 3 * MS, 50 * US, "k", 7);
	m = tg_analyse(&t, NULL);
	APX_ASSERT(m);
	APX_ASSERT(!m->capture);
	APX_ASSERT_EQ(m->collected.n, 0);
	APX_ASSERT_EQ(m->collected_ns, m->wall_ns);
	APX_ASSERT_EQ(apx_an_collected_overlap(m, 10, 25), 15);
	APX_ASSERT_EQ(apx_an_collected_piece(m, 10, 25, &s, &e), 1);
	APX_ASSERT(s == 10 && e == 25);
	APX_ASSERT_EQ(apx_an_collected_piece(m, 25, 25, &s, &e), 0);
	APX_ASSERT_EQ(m->gpu.idle_ns, 3 * MS - 1 * MS - 50 * US);
	APX_ASSERT_EQ(m->gpu.active_ns, m->gpu.last_ns - m->gpu.first_ns);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
