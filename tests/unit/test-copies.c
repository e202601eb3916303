/*
 * test-copies.c - unit tests of the copy rules on the failure classes the development suite found
 * on the H200 (tests/fixtures/suite): a 64 KiB copy is small (small-copies', not
 * pageable-copy's); the sync after each blocking .cuda() of a small tensor, between two small
 * copies, is their per-call overhead (not a sync wait); small copies batch once a step; a copy
 * of more than 64 KiB into pageable memory (y.cpu()) is sync-copy's, saving its time beyond the
 * pinned rate and the staging idle after it, while a 4-byte one (.item()) is not; the same
 * pageable buffer copied every step gives repeated-copy only its bytes at the pinned rate, the
 * rest of each copy staying pageable-copy's, which ranks first; an unchanged pinned buffer
 * (same content fingerprint) copied every step on the compute stream is repeated-copy's, not
 * copy-overlap's; the two never claim more copy time than the copies took. Synthetic traces
 * (tests/unit/tracegen.c), each checked firing and silent.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apx-test.h"
#include "analysis/findings.h"
#include "analysis/idle_attrib.h"
#include "analysis/model.h"
#include "unit/analysed.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

static struct apx_findings fd;

static struct apx_model *load(struct tg *t)
{
	return tg_analyse(t, &fd);
}

static const struct apx_finding *finding(const char *rule)
{
	return tg_find(&fd, rule);
}

static double metric(const struct apx_finding *f, const char *key)
{
	for (size_t i = 0; i < f->nmetrics; i++)
		if (!strcmp(f->metrics[i].key, key))
			return f->metrics[i].value;
	return -1;
}

/* steps steps: n pageable host->device copies of bytes each (dur apart from the call, call_ns
 * on the host before each DMA), each followed by its stream sync (PyTorch's blocking .cuda()),
 * then two kernels. */
static struct apx_model *copies_then_kernels(int steps, int n, uint64_t bytes, uint64_t dur,
					     uint64_t call_ns)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < steps; s++) {
		for (int i = 0; i < n; i++) {
			tg_copy_call(&t, ts + call_ns, dur, APX_COPY_H2D, APX_MEM_PAGEABLE, bytes, ts,
				     ts + call_ns - 2 * US);
			tg_sync(&t, ts + call_ns - 1 * US, ts + call_ns + dur + 5 * US,
				APX_SYNC_KIND_STREAM);
			ts += call_ns + dur + 10 * US;
		}
		tg_kernel(&t, ts, 100 * US, "stack", 7);
		tg_kernel(&t, ts + 110 * US, 300 * US, "gemm", 7);
		ts += 500 * US;
	}
	return load(&t);
}

/* 64 KiB copies are small: their cost is per call (CUDA takes host->device copies of 64 KB or
 * less in one piece). 256 a step, 20 steps: small-copies fires, pageable-copy does not; one
 * byte more and they are pageable-copy's. */
APX_TEST(a_64_kib_copy_is_small)
{
	struct apx_model *m = copies_then_kernels(20, 256, 65536, 5 * US, 15 * US);
	const struct apx_finding *f;

	APX_ASSERT(m && m->steady.count >= 15);
	APX_ASSERT(apx_copy_small(65536) && !apx_copy_small(65537));
	f = finding("small-copies");
	APX_ASSERT(f);
	APX_ASSERT(strstr(f->title, "<= 64 kB"));
	APX_ASSERT(!finding("pageable-copy"));
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_STAGING], 0);
	APX_ASSERT_EQ(m->xfer[APX_COPY_H2D][APX_MEM_PAGEABLE].small,
		      m->xfer[APX_COPY_H2D][APX_MEM_PAGEABLE].count);
	apx_model_free(m);

	m = copies_then_kernels(20, 256, 65537, 5 * US, 15 * US);
	APX_ASSERT(m);
	APX_ASSERT(!finding("small-copies"));
	APX_ASSERT(finding("pageable-copy"));
	apx_model_free(m);
	return 0;
}

/* Each blocking .cuda() waits for its copy: the sync between two small copies, the Python
 * after it and the next call are their per-call overhead, which one batched copy pays once
 * (copy-calls), not a sync wait; small-copies' saving holds that time, sync-frequency claims
 * none of it. The sync after a step's last copy (the gap ends with a kernel) stays the sync's. */
APX_TEST(the_sync_between_two_small_copies_is_their_call_overhead)
{
	struct apx_model *m = copies_then_kernels(20, 256, 4096, 5 * US, 15 * US);
	const struct apx_finding *f;
	uint64_t calls, sync;

	APX_ASSERT(m && m->steady.count >= 15);
	calls = m->gpu.idle_by_cause[APX_IDLE_COPY_CALLS];
	sync = m->gpu.idle_by_cause[APX_IDLE_SYNC];
	/* every gap between two copies of a step: 10 us after the copy + the 15 us call */
	APX_ASSERT(calls >= (uint64_t)(m->steady.count - 1) * 255 * 25 * US);
	APX_ASSERT(sync <= (uint64_t)m->steady.count * 10 * US);
	f = finding("small-copies");
	APX_ASSERT(f && f->saving_ns >= (double)calls);
	APX_ASSERT(strstr(f->model, "one per step"));
	APX_ASSERT_EQ((uint64_t)metric(f, "batches"), m->steady.count);
	f = finding("sync-frequency");
	APX_ASSERT(!f || f->saving_ns <= (double)sync);
	apx_model_free(m);

	/* 10 copies a step are too few to batch: silent */
	m = copies_then_kernels(20, 10, 4096, 5 * US, 15 * US);
	APX_ASSERT(m && !finding("small-copies"));
	apx_model_free(m);
	return 0;
}

/* 20 steps: 8 GEMMs of 700 us, then a copy of bytes to host memory kind host lasting dur, and
 * its stream sync. */
static struct apx_model *gemms_then_d2h(unsigned host, uint64_t bytes, uint64_t dur, int async)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	for (int s = 0; s < 20; s++) {
		for (int k = 0; k < 8; k++) {
			tg_kernel(&t, ts, 700 * US, "gemm", 7);
			ts += 705 * US;
		}
		tg_copy(&t, ts, dur, APX_COPY_D2H, host, bytes, async, 0, 7);
		tg_sync(&t, ts - 5 * MS, ts + dur + 20 * US, APX_SYNC_KIND_STREAM);
		ts += dur + 300 * US;
	}
	return load(&t);
}

/* y.cpu() of a 32 MiB result: CUDA finishes a copy into pageable memory before the call
 * returns, whatever the call (async flag or not); sync-copy saves its time beyond the bytes at
 * the pinned rate and the GPU idle after it while the host staged it out (not a sync wait:
 * sync-frequency claims none of it), pageable-copy (host->device) says nothing. A 4-byte
 * .item() is no such copy; neither is a non_blocking copy into pinned memory. */
APX_TEST(a_copy_to_pageable_memory_is_sync_copy_s)
{
	struct apx_model *m = gemms_then_d2h(APX_MEM_PAGEABLE, 32u << 20, 20 * MS, 1);
	const struct apx_finding *f;
	double rate, want = 0;
	uint64_t n = 0;

	APX_ASSERT(m && m->steady.count >= 15);
	rate = apx_pinned_or_link_bps(m, APX_COPY_D2H, NULL);
	APX_ASSERT(rate > 0);
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (apx_phase_of(m, c->start) == APX_PHASE_STEADY) {
			want += (double)c->dur - (double)c->bytes / rate * 1e9;
			n++;
		}
	}
	/* the gap after each copy (its sync, then the host's launch) is the copy's staging */
	APX_ASSERT(n >= 15 && m->gpu.staging_d2h_ns >= (n - 1) * 300 * US);
	APX_ASSERT_EQ(m->gpu.staging_d2h_ns, m->gpu.idle_by_cause[APX_IDLE_STAGING]);
	APX_ASSERT_EQ(m->gpu.idle_by_cause[APX_IDLE_SYNC], 0);
	APX_ASSERT(!finding("sync-frequency"));
	want += (double)m->gpu.staging_d2h_ns;
	f = finding("sync-copy");
	APX_ASSERT(f);
	if (fabs(f->saving_ns - want) > 1)
		APX_FAIL_("saving %.0f, want %.0f", f->saving_ns, want);
	APX_ASSERT(strstr(f->title, "to pageable memory"));
	APX_ASSERT(strstr(f->fix, "pin_memory=True"));
	APX_ASSERT(metric(f, "pageable_copies") >= 15);
	APX_ASSERT(!finding("pageable-copy"));
	apx_model_free(m);

	m = gemms_then_d2h(APX_MEM_PAGEABLE, 4, 3 * US, 1);		/* loss.item() */
	APX_ASSERT(m && !finding("sync-copy") && !finding("pageable-copy"));
	apx_model_free(m);
	m = gemms_then_d2h(APX_MEM_PINNED, 32u << 20, 700 * US, 1);	/* the fix */
	APX_ASSERT(m && !finding("sync-copy"));
	apx_model_free(m);
	return 0;
}

/* The same 64 MiB pageable buffer copied every step at 6.4 GB/s: pinning it saves each copy's
 * time beyond the pinned rate (pageable-copy), keeping it on the device saves the rest
 * (repeated-copy: the bytes at the pinned rate); together no more than the copies took, and
 * pageable-copy ranks first. A pinned buffer copied every step is no repeat (a refilled
 * staging buffer looks the same). */
APX_TEST(repeated_pageable_copies_share_their_time_with_pageable_copy)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *rep, *pg;
	double rate, copy_ns = 0, want = 0;
	uint64_t ts = 1 * MS, n = 0;

	for (int pinned = 0; pinned < 2; pinned++) {
		APX_ASSERT_OK(tg_open(&t));
		ts = 1 * MS;
		for (int s = 0; s < 20; s++) {
			tg_copy(&t, ts, pinned ? 1300 * US : 10 * MS, APX_COPY_H2D,
				pinned ? APX_MEM_PINNED : APX_MEM_PAGEABLE, 64u << 20, pinned,
				0x7f0000000000ull, 7);
			ts += (pinned ? 1300 * US : 10 * MS) + 20 * US;
			tg_kernel(&t, ts, 350 * US, "gemm", 7);
			tg_kernel(&t, ts + 360 * US, 5 * US, "sum", 7);
			ts += 400 * US;
		}
		m = load(&t);
		APX_ASSERT(m);
		if (pinned) {
			APX_ASSERT(!finding("repeated-copy"));
			apx_model_free(m);
			break;
		}
		rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);
		for (size_t i = 0; i < m->copies.n; i++) {
			const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

			copy_ns += (double)c->dur;
			if (n++)
				want += (double)c->bytes / rate * 1e9;
		}
		rep = finding("repeated-copy");
		pg = finding("pageable-copy");
		APX_ASSERT(rep && pg);
		if (fabs(rep->saving_ns - want) > 1)
			APX_FAIL_("repeated-copy saves %.0f, want %.0f", rep->saving_ns, want);
		APX_ASSERT(rep->saving_ns + pg->saving_ns <= copy_ns);
		APX_ASSERT(!strcmp(fd.f[0].rule, "pageable-copy"));
		apx_model_free(m);
	}
	return 0;
}

/* One unchanged 64 MiB pinned buffer (the same fingerprint) copied every step on the compute
 * stream, serial with its kernels (the suite's repeated_copy): repeated-copy removes the
 * copies and copy-overlap would hide them: copy-overlap leaves copies of unchanged data to
 * repeated-copy (removing beats hiding), which fires alone with what copy-overlap saves
 * without fingerprints, no more than the copies after the first (setup) took. */
APX_TEST(repeated_pinned_copies_share_their_time_with_copy_overlap)
{
	double together[2] = { 0, 0 }, copy_ns = 0;

	for (int fp = 0; fp < 2; fp++) {
		struct tg t;
		struct apx_model *m;
		const struct apx_finding *rep, *ov;
		uint64_t ts = 1 * MS;

		APX_ASSERT_OK(tg_open(&t));
		for (int s = 0; s < 20; s++) {
			tg_copy_fp(&t, ts, 1200 * US, APX_MEM_PINNED, 64u << 20, 0x7f0000000000ull,
				   fp ? 0xabcdull : 0);
			ts += 1220 * US;
			tg_kernel(&t, ts, 1800 * US, "gemm", 7);
			ts += 1820 * US;
		}
		m = load(&t);
		APX_ASSERT(m);
		rep = finding("repeated-copy");
		ov = finding("copy-overlap");
		APX_ASSERT(fp ? rep != NULL : rep == NULL);
		APX_ASSERT(fp ? ov == NULL : ov != NULL);	/* removing beats hiding */
		copy_ns = (double)(m->gpu.hd_copy_busy_ns - m->gpu.hd_before_kernels_ns);
		together[fp] = (rep ? rep->saving_ns : 0) + (ov ? ov->saving_ns : 0);
		if (together[fp] > copy_ns + 1)
			APX_FAIL_("%s: copy rules save %.0f of %.0f ns of copies",
				  fp ? "fingerprints" : "none", together[fp], copy_ns);
		apx_model_free(m);
	}
	if (fabs(together[0] - together[1]) > 1)
		APX_FAIL_("with fingerprints %.0f, without %.0f", together[1], together[0]);
	return 0;
}

/* Without fingerprints the engine keeps the two apart: the same pageable buffer copied every
 * step (10 ms) serial with 12 ms of kernels, where copy-overlap would hide all the copies and
 * repeated-copy would remove them too: together no more than the copies after the first. */
APX_TEST(copy_rules_never_claim_more_copy_time_than_the_copies_took)
{
	struct tg t;
	struct apx_model *m;
	const struct apx_finding *rep, *ov;
	uint64_t ts = 1 * MS;
	double copy_ns;

	APX_ASSERT_OK(tg_open(&t));
	for (int s = 0; s < 20; s++) {
		tg_copy(&t, ts, 10 * MS, APX_COPY_H2D, APX_MEM_PAGEABLE, 64u << 20, 0,
			0x7f0000000000ull, 7);
		ts += 10 * MS + 20 * US;
		tg_kernel(&t, ts, 12 * MS, "gemm", 7);
		ts += 12 * MS + 20 * US;
	}
	m = load(&t);
	APX_ASSERT(m);
	ov = finding("copy-overlap");
	rep = finding("repeated-copy");
	APX_ASSERT(ov);
	copy_ns = (double)(m->gpu.hd_copy_busy_ns - m->gpu.hd_before_kernels_ns);
	if (ov->saving_ns + (rep ? rep->saving_ns : 0) > copy_ns + 1)
		APX_FAIL_("copy-overlap %.0f + repeated-copy %.0f > %.0f ns of copies",
			  ov->saving_ns, rep ? rep->saving_ns : 0, copy_ns);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
