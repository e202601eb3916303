/*
 * test-diff.c - unit tests of apx diff's comparison (lib/analysis/diff.c) and its document
 * (lib/report/build_diff.c) on synthetic traces: the bootstrap interval of a median (fixed
 * seed: the same numbers twice), a step made shorter by one kernel (the change, outside the
 * noise, the kernel at the top of the list, the work unchanged), a run against itself (no
 * change, inside the noise, every finding the same), fewer launches a step (the work differs),
 * a trace without steps refused, and the document's JSON and text (schema, a signed change,
 * lines within 100 columns).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apx-test.h"
#include "analysis/diff.h"
#include "report/doc.h"
#include "unit/analysed.h"
#include "unit/reported.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

/* 60 steps: fwd, bwd (bwd_us long), opt, then host time to a period of period_us; extra: that
 * many small kernels a step more. */
static struct apx_model *run(uint64_t bwd_us, uint64_t period_us, unsigned extra,
			     struct apx_findings *fd)
{
	static const char *const warm[] = { "init_a", "init_b", "init_c", "init_d" };
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int i = 0; i < 4; i++, ts += 50 * US)
		tg_kernel(&t, ts, 20 * US, warm[i], 7);
	for (int s = 0; s < 60; s++) {
		/* a little jitter, the same in every run: steps are not all alike */
		uint64_t j = (uint64_t)(s % 5) * US;

		tg_kernel(&t, ts, 100 * US, "_Z3fwdPfi", 7);
		tg_kernel(&t, ts + 110 * US, bwd_us * US, "bwd", 7);
		tg_kernel(&t, ts + (120 + bwd_us) * US, 80 * US, "opt", 7);
		for (unsigned e = 0; e < extra; e++)
			tg_kernel(&t, ts + (210 + bwd_us + 5 * e) * US, 2 * US, "tiny", 7);
		ts += period_us * US + j;
	}
	return tg_analyse(&t, fd);
}

APX_TEST(median_interval_is_fixed_by_the_seed)
{
	double x[101], lo, hi, lo2, hi2, c[7] = { 5, 5, 5, 5, 5, 5, 5 };

	for (int i = 0; i < 101; i++)
		x[i] = i;
	APX_ASSERT_OK(apx_diff_median_ci(x, 101, 2000, APX_DIFF_SEED, &lo, &hi));
	APX_ASSERT(lo < 50 && hi > 50 && lo >= 30 && hi <= 70);
	APX_ASSERT_OK(apx_diff_median_ci(x, 101, 2000, APX_DIFF_SEED, &lo2, &hi2));
	APX_ASSERT(lo == lo2 && hi == hi2);
	APX_ASSERT_OK(apx_diff_median_ci(c, 7, 500, 1, &lo, &hi));
	APX_ASSERT(lo == 5 && hi == 5);
	APX_ASSERT(apx_diff_median_ci(x, 0, 10, 1, &lo, &hi) == -EINVAL);
	return 0;
}

APX_TEST(a_shorter_kernel_is_the_change)
{
	struct apx_findings *fb = calloc(1, sizeof(*fb)), *fa = calloc(1, sizeof(*fa));
	struct apx_model *b = run(200, 700, 0, fb), *a = run(100, 600, 0, fa);
	struct apx_diff df;

	APX_ASSERT(b && a && fb && fa);
	APX_ASSERT_OK(apx_diff_steps_check(b, (char[128]){ 0 }, 128));
	APX_ASSERT_OK(apx_diff_compute(b, fb, a, fa, 0, &df));
	APX_ASSERT(df.side[0].steps >= 50 && df.side[1].steps >= 50);
	/* 100 us shorter: the median step and the whole interval */
	APX_ASSERT(fabs(df.change_ns + 100 * US) < 3 * US);
	APX_ASSERT(df.ci_hi_ns < 0 && df.outside_noise);
	APX_ASSERT(df.side[0].ci_lo_ns <= df.side[0].median_ns &&
		   df.side[0].median_ns <= df.side[0].ci_hi_ns);
	/* bwd first, 100 us a step shorter, one launch a step on both sides */
	APX_ASSERT(df.nkernels == 3);
	APX_ASSERT_STREQ(df.kernels[0].name, "bwd");
	APX_ASSERT(fabs(df.kernels[0].ns[1] - df.kernels[0].ns[0] + 100 * US) < 1 * US);
	APX_ASSERT(fabs(df.kernels[0].launches[0] - 1) < 0.05);
	/* demangled: "fwd(float*, int)" on both sides */
	APX_ASSERT(!strcmp(df.kernels[1].name, "fwd(float*, int)") ||
		   !strcmp(df.kernels[2].name, "fwd(float*, int)"));
	APX_ASSERT(!df.work_differs);
	APX_ASSERT(df.same_command && !df.different_program);
	APX_ASSERT(df.overlap_names == 1 && df.overlap_time > 0.7);
	apx_diff_release(&df);
	apx_model_free(b);
	apx_model_free(a);
	free(fb);
	free(fa);
	return 0;
}

APX_TEST(a_run_against_itself)
{
	struct apx_findings *fd = calloc(1, sizeof(*fd));
	struct apx_model *m = run(200, 700, 0, fd);
	struct apx_diff df;

	APX_ASSERT(m && fd);
	APX_ASSERT_OK(apx_diff_compute(m, fd, m, fd, 0, &df));
	APX_ASSERT(df.change_ns == 0 && !df.outside_noise);
	APX_ASSERT(df.ci_lo_ns <= 0 && df.ci_hi_ns >= 0);
	for (size_t i = 0; i < df.nkernels; i++)
		APX_ASSERT(df.kernels[i].ns[0] == df.kernels[i].ns[1]);
	for (size_t i = 0; i < df.nfindings; i++)
		APX_ASSERT(df.findings[i].status == APX_DIFF_SAME);
	APX_ASSERT(!df.work_differs && df.overlap_time == 1);
	apx_diff_release(&df);
	apx_model_free(m);
	free(fd);
	return 0;
}

APX_TEST(fewer_launches_a_step_is_other_work)
{
	struct apx_findings *fb = calloc(1, sizeof(*fb)), *fa = calloc(1, sizeof(*fa));
	struct apx_model *b = run(200, 700, 8, fb), *a = run(200, 700, 0, fa);
	struct apx_diff df;

	APX_ASSERT(b && a && fb && fa);
	APX_ASSERT_OK(apx_diff_compute(b, fb, a, fa, 200, &df));
	APX_ASSERT(df.resamples == 200);
	APX_ASSERT(df.work_differs == APX_DIFF_WORK_KERNELS);
	APX_ASSERT(fabs(df.side[0].kernels - 11) < 0.2 && fabs(df.side[1].kernels - 3) < 0.2);
	APX_ASSERT_STREQ(df.kernels[0].name, "tiny");	/* 16 us a step less */
	APX_ASSERT(df.kernels[0].launches[1] == 0);
	apx_diff_release(&df);
	apx_model_free(b);
	apx_model_free(a);
	free(fb);
	free(fa);
	return 0;
}

APX_TEST(no_steps_no_diff)
{
	struct apx_findings *fd = calloc(1, sizeof(*fd));
	struct apx_model *m, *s = run(200, 700, 0, NULL);
	struct apx_diff df;
	char why[256];
	struct tg t;

	APX_ASSERT(fd && s);
	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 40; i++) {	/* a sequence that never repeats */
		char name[32];

		snprintf(name, sizeof(name), "k%d", i);
		tg_kernel(&t, 1 * MS + (uint64_t)i * 100 * US, 30 * US, name, 7);
	}
	m = tg_analyse(&t, fd);
	APX_ASSERT(m);
	APX_ASSERT(apx_diff_steps_check(m, why, sizeof(why)) == -ENODATA);
	APX_ASSERT(strstr(why, "no steady state"));
	APX_ASSERT(apx_diff_compute(m, fd, s, fd, 0, &df) == -ENODATA);
	apx_model_free(m);
	apx_model_free(s);
	free(fd);
	return 0;
}

APX_TEST(the_document_of_a_diff)
{
	struct apx_findings *fb = calloc(1, sizeof(*fb)), *fa = calloc(1, sizeof(*fa));
	struct apx_model *b = run(200, 700, 0, fb), *a = run(100, 600, 0, fa);
	struct apx_text_out o = { 0 };
	struct apx_rdoc *d;
	struct apx_diff df;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	APX_ASSERT(b && a && fb && fa);
	APX_ASSERT_OK(apx_diff_compute(b, fb, a, fa, 0, &df));
	d = apx_rdoc_build_diff(&df, 2, 0);
	APX_ASSERT(d);
	f = open_memstream(&buf, &len);
	APX_ASSERT(f);
	APX_ASSERT_OK(apx_report_emit_json(f, d));
	fclose(f);
	APX_ASSERT(strstr(buf, "{\"schema\":\"apx.diff/1\""));
	APX_ASSERT(strstr(buf, "\"step_time\":{\"change_ns\":-10"));	/* about -100 us */
	APX_ASSERT(strstr(buf, "\"outside_noise\":true"));
	APX_ASSERT(strstr(buf, "\"kernels_other\":{\"kernels\":1,"));	/* --top 2 of 3 */
	APX_ASSERT(strstr(buf, "\"name\":\"bwd\""));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	APX_ASSERT(f);
	o.f = f;
	APX_ASSERT_OK(apx_report_emit_text(&o, d));
	fclose(f);
	APX_ASSERT(strstr(buf, "AFTER is faster"));
	APX_ASSERT(strstr(buf, "(1 other kernel)"));
	APX_ASSERT(tg_report_fits(buf));	/* every line fits 100 columns */
	free(buf);
	apx_rdoc_free(d);
	apx_diff_release(&df);
	apx_model_free(b);
	apx_model_free(a);
	free(fb);
	free(fa);
	return 0;
}

APX_TEST_MAIN()
