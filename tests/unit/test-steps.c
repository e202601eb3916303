/*
 * test-steps.c - unit tests of step detection (lib/analysis/steps.c): a repeating kernel
 * sequence after a warm-up that differs, NVTX ranges, ProfilerStep#N ranges preferred to a more
 * frequent NVTX name, a library's short ranges inside each step not taken for steps, no step
 * in a sequence that never repeats, and a step of identical layers
 * found whole (its boundary gap) rather than per layer, also when the layers' own gaps have a
 * long tail.
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

static struct apx_model *load(struct tg *t)
{
	return tg_analyse(t, NULL);
}

APX_TEST(steps_from_the_kernel_sequence)
{
	static const char *const warm[] = { "init_a", "init_b", "init_c", "init_d" };
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 1 * MS;

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 4; i++, ts += 50 * US)	/* start-up: kernels that never come back */
		tg_kernel(&t, ts, 20 * US, warm[i], 7);
	for (int s = 0; s < 60; s++) {		/* 60 steps: fwd, bwd, opt, then 300 us on the host */
		tg_kernel(&t, ts, 100 * US, "fwd", 7);
		tg_kernel(&t, ts + 110 * US, 200 * US, "bwd", 7);
		tg_kernel(&t, ts + 320 * US, 80 * US, "opt", 7);
		ts += 700 * US;
	}
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_KERNELS);
	APX_ASSERT_EQ(m->steady.period, 3);
	APX_ASSERT(m->steady.count >= 58 && m->steady.count <= 60);
	APX_ASSERT_EQ(m->steady.median_ns, 700 * US);	/* start of a step to the next one */
	/* 380 us of kernels in a 700 us step */
	APX_ASSERT(m->steady.busy_pct > 54.0 && m->steady.busy_pct < 55.0);
	APX_ASSERT(m->steady.setup_ns >= 200 * US);	/* the warm-up kernels are not a step */
	apx_model_free(m);
	return 0;
}

APX_TEST(steps_from_nvtx_and_profiler_ranges)
{
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	for (int s = 0; s < 10; s++)
		tg_marker(&t, 1 * MS + s * 2 * MS, 1 * MS + s * 2 * MS + 1500 * US, "train_step");
	for (int s = 0; s < 3; s++)
		tg_marker(&t, 30 * MS + s * MS, 30 * MS + s * MS + 500 * US, "eval");
	tg_kernel(&t, 2 * MS, 100 * US, "k", 7);
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_NVTX);
	APX_ASSERT_STREQ(m->steady.name, "train_step");
	APX_ASSERT_EQ(m->steady.count, 10);
	APX_ASSERT_EQ(m->steady.median_ns, 2 * MS);	/* a step: its start to the next one's */
	apx_model_free(m);

	/* torch.profiler's steps win over a more frequent range name */
	APX_ASSERT_OK(tg_open(&t));
	for (int s = 0; s < 4; s++) {
		char name[32];

		snprintf(name, sizeof(name), "ProfilerStep#%d", s + 5);
		tg_marker(&t, 1 * MS + s * 3 * MS, 1 * MS + s * 3 * MS + 2 * MS, name);
	}
	for (int s = 0; s < 12; s++)
		tg_marker(&t, 1 * MS + s * MS, 1 * MS + s * MS + 100 * US, "forward");
	tg_kernel(&t, 2 * MS, 100 * US, "k", 7);
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_PROFILER);
	APX_ASSERT_EQ(m->steady.count, 4);
	APX_ASSERT_EQ(m->steady.median_ns, 3 * MS);
	apx_model_free(m);
	return 0;
}

/* A library's NVTX ranges inside every step (CCCL's cub::DeviceRadixSort, 100 us of a 2 ms
 * step) are not steps: with kernels only, the kernel sequence gives the steps; with a user's
 * step ranges too, those win although the library's are more frequent. */
APX_TEST(steps_not_from_library_ranges)
{
	struct apx_model *m;
	struct tg t;

	for (int user = 0; user < 2; user++) {
		uint64_t ts = 1 * MS;

		APX_ASSERT_OK(tg_open(&t));
		for (int s = 0; s < 40; s++, ts += 2 * MS) {
			tg_kernel(&t, ts, 300 * US, "fwd", 7);
			tg_marker(&t, ts + 400 * US, ts + 500 * US, "cub::DeviceRadixSort");
			tg_marker(&t, ts + 1000 * US, ts + 1100 * US, "cub::DeviceRadixSort");
			tg_kernel(&t, ts + 420 * US, 50 * US, "sort", 7);
			tg_kernel(&t, ts + 600 * US, 600 * US, "bwd", 7);
			if (user && s < 30)
				tg_marker(&t, ts, ts + 1800 * US, "train_step");
		}
		m = load(&t);
		APX_ASSERT(m);
		APX_ASSERT(m->steady.source == (user ? APX_STEPS_NVTX : APX_STEPS_KERNELS));
		if (user)
			APX_ASSERT_STREQ(m->steady.name, "train_step");
		APX_ASSERT_EQ(m->steady.median_ns, 2 * MS);
		apx_model_free(m);
	}
	return 0;
}

/* 60 steps of `layers` identical layers (a GEMM and its epilogue, 8 us and 2 us) launched by the
 * host: 25-33 us between layers with one 48 us outlier a step at a layer that moves, and
 * `boundary_us` between steps. */
static struct apx_model *layered_steps(int layers, uint64_t boundary_us)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 60; s++) {
		for (int l = 0; l < layers; l++) {
			uint64_t gap = l == 0 ? boundary_us
				       : l == (s * 7) % layers ? 48u : 25u + (uint64_t)(l % 3) * 4;

			ts += gap * US;
			tg_kernel(&t, ts, 8 * US, "gemm", 7);
			tg_kernel(&t, ts + 9 * US, 2 * US, "epilogue", 7);
			ts += 11 * US;
		}
	}
	return load(&t);
}

APX_TEST(steps_of_identical_layers_are_the_iteration)
{
	struct apx_model *m = layered_steps(16, 60);

	/* a step is the 16 layers (32 kernels) after the longer gap, not one layer */
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_KERNELS);
	APX_ASSERT_EQ(m->steady.period, 32);
	APX_ASSERT(m->steady.count >= 58 && m->steady.count <= 60);
	apx_model_free(m);

	/* no longer gap between steps: nothing tells a step from a layer, the layer stays */
	m = layered_steps(16, 29);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_KERNELS);
	APX_ASSERT_EQ(m->steady.period, 2);
	apx_model_free(m);
	return 0;
}

/* 64 identical one-kernel layers a step (nn.Sequential of Linear layers, eager, no sync), 3 us
 * kernels 17-21 us apart, a quarter of the gaps 8 us longer (at layers that move from step to
 * step: the Python of the loop and the allocator),
 * and 27-29 us before each step: the boundary stands out from the typical gap, though not
 * from the longest of the others, and the step is the 64 layers. */
APX_TEST(a_boundary_above_the_typical_gap_widens_the_step)
{
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 1 * MS;

	APX_ASSERT_OK(tg_open(&t));
	for (int s = 0; s < 70; s++)
		for (int l = 0; l < 64; l++) {
			ts += (l == 0 ? 27u + (uint64_t)(s % 3)
				      : 17u + ((s * 7 + l * 3) % 4 == 0 ? 8u : 0u) +
					(uint64_t)((s * l) % 5)) * US;
			tg_kernel(&t, ts, 3 * US, "gemm", 7);
			ts += 3 * US;
		}
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_KERNELS);
	APX_ASSERT_EQ(m->steady.period, 64);
	APX_ASSERT(m->steady.count >= 68 && m->steady.count <= 70);
	apx_model_free(m);
	return 0;
}

APX_TEST(no_steps_in_a_sequence_that_never_repeats)
{
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	for (int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof(name), "kernel_%d", i);
		tg_kernel(&t, 1 * MS + (uint64_t)i * 50 * US, 20 * US, name, 7);
	}
	m = load(&t);
	APX_ASSERT(m);
	APX_ASSERT(m->steady.source == APX_STEPS_NONE);
	APX_ASSERT_EQ(m->steady.count, 0);
	apx_model_free(m);
	return 0;
}

/* 100 steps of 10 ms with a synchronous memset of memset_ns each. */
static struct apx_model *steps_with_memsets(uint64_t memset_ns)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 100; s++) {
		tg_kernel(&t, ts, 8 * MS, "fwd", 7);
		tg_kernel(&t, ts + 8 * MS + 100 * US, 1 * MS, "opt", 7);
		tg_memset(&t, ts + 9 * MS + 200 * US, memset_ns, 0);
		ts += 10 * MS;
	}
	return load(&t);
}

/* A finding under 1 % of a step is a "minor" check, not a finding; a larger one stays. */
APX_TEST(findings_under_one_percent_of_a_step_are_minor)
{
	static struct apx_findings fd;
	struct apx_model *m;
	int minor = 0;

	/* 70 us a step: 7 ms in all, over the rule's own 0.5 % but under 1 % of a step */
	m = steps_with_memsets(70 * US);
	APX_ASSERT(m && m->steady.count >= 98);
	apx_rules_run(m, &fd);
	for (size_t i = 0; i < fd.n; i++)
		APX_ASSERT(strcmp(fd.f[i].rule, "sync-copy"));	/* 70 us < 1 % of a 10 ms step */
	for (size_t r = 0; r < fd.nresults; r++)
		if (!strcmp(fd.results[r].rule, "sync-copy")) {
			APX_ASSERT(fd.results[r].status == APX_RULE_MINOR);
			APX_ASSERT(strstr(fd.results[r].why, "under 1% of a step"));
			minor = 1;
		}
	APX_ASSERT(minor);
	apx_model_free(m);

	m = steps_with_memsets(200 * US);	/* 2 % of a step: a finding */
	APX_ASSERT(m);
	apx_rules_run(m, &fd);
	minor = 0;
	for (size_t i = 0; i < fd.n; i++)
		minor |= !strcmp(fd.f[i].rule, "sync-copy");
	APX_ASSERT(minor);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
