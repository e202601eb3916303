/*
 * test-ranks.c - several ranks of one run (lib/analysis/ranks.c), their rules
 * (rules/rule_exposed_communication.c, rule_straggler.c, rule_small_collectives.c,
 * rule_network_bound.c) and the report's ranks and collectives sections
 * (lib/report/build_ranks.c), on synthetic traces (tracegen.c). 4 ranks on 2 hosts with
 * all-reduces, rank 3's host late at every one; a second process on rank 0's GPU; a file named
 * twice: GPU busy per device <= 100 % and nothing counted twice, devices by (host, UUID),
 * nccl-tests' busbw factors, algbw/busbw over each collective's shortest duration, the
 * straggler with its lateness and what it did instead. Each rule fires on a trace made for it
 * and stays silent on its fixed twin; busbw against NVLink's peak, and across hosts against
 * the NICs' line rate (network-bound: float32 at 90 %, one host, 30 %, no line rate, bf16); a
 * single-process report has neither section nor their checks; collectives with random fields
 * crash nothing. ctest unit-ranks.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "apx-test.h"
#include "unit/analysed.h"
#include "unit/reported.h"
#include "unit/tracegen.h"

#include "analysis/ranks.h"
#include "report/doc.h"

#include "base/banned.h"

#define MS 1000000ull
#define US 1000ull

static struct apx_findings fd;	/* large: not on the stack */

APX_TEST(busbw_factors)
{
	APX_ASSERT(fabs(apx_ranks_busbw_factor(APX_COLL_ALL_REDUCE, 8) - 1.75) < 1e-12);
	APX_ASSERT(fabs(apx_ranks_busbw_factor(APX_COLL_ALL_GATHER, 8) - 0.875) < 1e-12);
	APX_ASSERT(fabs(apx_ranks_busbw_factor(APX_COLL_REDUCE_SCATTER, 4) - 0.75) < 1e-12);
	APX_ASSERT(apx_ranks_busbw_factor(APX_COLL_BROADCAST, 8) == 1.0);
	APX_ASSERT(apx_ranks_busbw_factor(APX_COLL_REDUCE, 8) == 1.0);
	APX_ASSERT(apx_ranks_busbw_factor(APX_COLL_SEND, 2) == 1.0);
	APX_ASSERT(apx_ranks_busbw_factor(APX_COLL_ALL_REDUCE, 1) == 0.0);
	/* all-gather's S is the total: NCCL's per-rank send count times n */
	APX_ASSERT(apx_ranks_algbytes(APX_COLL_ALL_GATHER, 1000, 4) == 4000.0);
	APX_ASSERT(apx_ranks_algbytes(APX_COLL_ALL_REDUCE, 1000, 4) == 1000.0);
	return 0;
}

static const uint8_t uuid_a[16] = { 0xaa, 1 }, uuid_b[16] = { 0xbb, 2 };

/* A collective whose kernel starts 10 us after its enqueue. */
static void coll(struct tg *t, uint64_t start, uint64_t end, unsigned func, uint64_t bytes,
		 uint64_t comm, uint64_t seq, int rank, int n)
{
	tg_collective(t, start - 10 * US, start, end, func, bytes, comm, seq, rank, n);
}

/* rank r of 4: five steps of a 5 ms compute kernel then a 64 MiB all-reduce; rank 3's host
 * enqueues it 2 ms late each time. Each GPU starts the all-reduce's kernel when its rank
 * enqueues it, and all end together 1 ms after the last one started (what NCCL does: the
 * early ranks' kernels wait for the late one). */
static int make_rank(struct tg *t, int r)
{
	const char *host = r < 2 ? "node-a" : "node-b";
	uint8_t uuid[16];

	memcpy(uuid, r % 2 ? uuid_b : uuid_a, 16);
	if (tg_open_rank(t, host, uuid, r, 4) < 0)
		return -1;
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t t0 = 10 * MS + i * 10 * MS;
		uint64_t start = t0 + 5 * MS + 10 * US + (r == 3 ? 2 * MS : (uint64_t)r * US);

		tg_marker(t, t0, t0 + 10 * MS, "ProfilerStep#1");
		tg_kernel(t, t0, 5 * MS, "sm90_gemm", 7);
		coll(t, start, t0 + 8 * MS + 10 * US, APX_COLL_ALL_REDUCE, 64ull << 20, 0x77, i, r, 4);
	}
	/* one more, overlapped by a compute kernel on another stream for 0.5 ms */
	tg_kernel(t, 70 * MS, MS / 2, "sm90_gemm", 9);
	coll(t, 70 * MS + (r == 3 ? 2 * MS : 0), 73 * MS, APX_COLL_ALL_GATHER, 1 << 20, 0x77, 5,
	     r, 4);
	return tg_close(t);
}

APX_TEST(four_ranks)
{
	struct tg t[5];
	const char *paths[7];
	struct apx_ranks *R;
	const struct apx_ranks_rank *r3;

	for (int r = 0; r < 4; r++) {
		APX_ASSERT(make_rank(&t[r], r) == 0);
		paths[r] = t[r].path;
	}
	/* a second process on rank 0's GPU (a DataLoader worker using CUDA): its kernel overlaps
	 * rank 0's first one, so the device's busy time counts the overlap once */
	APX_ASSERT(tg_open_proc(&t[4], "node-a", 4242, uuid_a) == 0);
	tg_kernel(&t[4], 12 * MS, 3 * MS, "elementwise", 3);
	APX_ASSERT(tg_close(&t[4]) == 0);
	paths[4] = t[4].path;
	paths[5] = t[0].path;			/* named twice */
	APX_ASSERT_OK(apx_ranks_load(paths, 6, &R, NULL));

	APX_ASSERT_EQ(R->nranks, 5);
	APX_ASSERT_EQ(R->duplicates, 1);
	APX_ASSERT_EQ(R->world, 4);
	APX_ASSERT_EQ(R->participants, 4);
	APX_ASSERT_EQ(R->hosts, 2);
	APX_ASSERT_EQ(R->ndevs, 4);		/* (node-a, A), (node-a, B), (node-b, A), (node-b, B) */
	APX_ASSERT_EQ(R->rank[0].device, R->rank[4].device);
	APX_ASSERT(R->rank[1].device != R->rank[3].device);	/* same UUID, other host */
	APX_ASSERT(R->rank[0].device != R->rank[2].device);
	for (size_t d = 0; d < R->ndevs; d++) {
		APX_ASSERT(R->dev[d].busy_ns <= R->dev[d].span_ns);
		APX_ASSERT(R->dev[d].busy_pct <= 100.0);
	}
	/* rank 0's device: 5 x (5 ms compute + 3 ms all-reduce) + 3 ms (the all-gather, its
	 * kernel inside) = 43 ms; the worker's 12-15 ms kernel lies inside rank 0's first one */
	APX_ASSERT_EQ(R->dev[R->rank[0].device].busy_ns, 43 * MS);
	APX_ASSERT_EQ(R->dev[R->rank[0].device].nfiles, 2);
	APX_ASSERT_EQ(R->rank[0].gpu_busy_ns, 43 * MS);
	APX_ASSERT(R->rank[0].busy_pct <= 100.0);
	APX_ASSERT_EQ(R->rank[0].step_ns, 10 * MS);
	APX_ASSERT_EQ(R->rank[0].steps, 5);
	APX_ASSERT_EQ(R->rank[4].step_ns, 0);
	APX_ASSERT_EQ(R->rank[4].rank, -1);
	/* rank 3: 5 x 1 ms + 1 ms of communication, none of it beside its compute */
	r3 = &R->rank[3];
	APX_ASSERT_EQ(r3->comm_ns, 6 * MS);
	APX_ASSERT_EQ(r3->exposed_ns, 6 * MS);
	/* rank 2: 5 x 2.998 ms + 3 ms, 0.5 ms of it beside the stream-9 kernel */
	APX_ASSERT_EQ(R->rank[2].comm_ns, 5 * (3 * MS - 2 * US) + 3 * MS);
	APX_ASSERT_EQ(R->rank[2].exposed_ns, R->rank[2].comm_ns - MS / 2);

	/* the table: 20 all-reduce records of 5 collectives; each at its shortest duration (rank
	 * 3's, 1 ms): 64 MiB in 1 ms over 4 ranks */
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].calls, 20);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].instances, 5);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].inst_ns, 5 * MS);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].size_hist[4], 20);	/* 16-256 MiB */
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_REDUCE].algbw_bps - 67.108864e9) < 1);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_REDUCE].busbw_bps - 67.108864e9 * 1.5) < 1);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_GATHER].algbw_bps - 4.194304e9) < 1);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_GATHER].busbw_bps - 4.194304e9 * 0.75) < 1);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].algo[APX_ALGO_RING], 20);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].fit, 0);	/* one size: no fit */
	/* two hosts: no link peak, and why */
	APX_ASSERT(R->link.peak_bps == 0);
	APX_ASSERT(strstr(R->link.why, "2 hosts"));

	/* the straggler: rank 3, last at all 6, about 2 ms after the median rank (rank 1);
	 * the run waited for it alone 5 x 1.998 ms (after rank 2) + 2 ms (the all-gather);
	 * its host was late (its enqueues), not its GPU */
	APX_ASSERT_EQ(R->straggler.rank, 3);
	APX_ASSERT_EQ(R->straggler.last, 6);
	APX_ASSERT_EQ(R->straggler.matched, 6);
	APX_ASSERT(R->straggler.mean_late_ns > 1990 * US && R->straggler.mean_late_ns <= 2 * MS);
	APX_ASSERT_EQ(r3->last_gap_ns, 5 * (2 * MS - 2 * US) + 2 * MS);
	APX_ASSERT(r3->last_host_ns * 2 >= r3->last_late_ns);
	APX_ASSERT_EQ(R->rank[0].last, 0);
	APX_ASSERT(R->rank[0].wait_ns > 11 * MS);	/* it waited for rank 3 */
	/* devices listed in rank order */
	for (int r = 0; r < 4; r++)
		APX_ASSERT_EQ(R->rank[r].device, r);
	apx_ranks_free(R);
	for (int i = 0; i < 5; i++)
		unlink(t[i].path);
	return 0;
}

/* The four ranks' model, rules and report: straggler fires (host), the sections show. */
APX_TEST(four_ranks_report)
{
	struct tg t[4];
	struct apx_model *m;
	const struct apx_finding *f;
	char *json, *text;

	for (int r = 0; r < 4; r++) {
		const char *host = r < 2 ? "node-a" : "node-b";

		/* make_rank closes its trace: rebuild the same ranks, kept open for tg_model */
		APX_ASSERT(tg_open_rank(&t[r], host, r % 2 ? uuid_b : uuid_a, r, 4) == 0);
		for (uint64_t i = 0; i < 5; i++) {
			uint64_t t0 = 10 * MS + i * 10 * MS;

			tg_marker(&t[r], t0, t0 + 10 * MS, "ProfilerStep#1");
			tg_kernel(&t[r], t0, 5 * MS, "sm90_gemm", 7);
			coll(&t[r], t0 + 5 * MS + 10 * US + (r == 3 ? 2 * MS : (uint64_t)r * US),
			     t0 + 8 * MS + 10 * US, APX_COLL_ALL_REDUCE, 64ull << 20, 0x77, i, r, 4);
		}
	}
	m = tg_model(t, 4);
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	f = tg_find(&fd, "straggler");
	APX_ASSERT(f);
	APX_ASSERT(strstr(f->title, "rank 3 arrives last at 5 of 5"));
	APX_ASSERT(strstr(f->title, "its host"));
	APX_ASSERT(fabs(f->saving_ns - 5.0 * (2 * MS - 2 * US)) < 1);
	APX_ASSERT(strstr(f->fix, "host"));
	/* each step's one 64 MiB all-reduce, in 25 MiB buckets, would leave its last bucket's
	 * share exposed (no time-vs-size fit: by bytes); rank 3 (which waits for nobody) could
	 * hide the rest behind its 5 ms of compute: 5 x 1 ms x 39/64 */
	f = tg_find(&fd, "exposed-communication");
	APX_ASSERT(f);
	APX_ASSERT(fabs(f->saving_ns - 5.0 * (MS - MS * 25 / 64)) < 1);
	APX_ASSERT(strstr(f->title, "on rank 3"));
	APX_ASSERT_EQ(tg_status(&fd, "small-collectives"), APX_RULE_CLEAN);

	json = tg_report(m, &fd, 1u << APX_SEC_RANKS | 1u << APX_SEC_COLLECTIVES, 1);
	text = tg_report(m, &fd, 1u << APX_SEC_RANKS | 1u << APX_SEC_COLLECTIVES, 0);
	APX_ASSERT(json && text);
	APX_ASSERT(strstr(json, "\"ranks\":{\"world_size\":4,\"hosts\":2,"
				"\"ranks_with_collectives\":4,\"per_rank\":[{\"rank\":0,"));
	APX_ASSERT(strstr(json, "\"straggler\":{\"rank\":3,\"arrived_last\":5,\"matched\":5,"));
	APX_ASSERT(strstr(json, "\"collectives\":{\"link\":{\"kind\":null,\"peak_bps\":null,"
				"\"why\":\"the ranks are on 2 hosts"));
	APX_ASSERT(strstr(json, "\"functions\":[{\"func\":\"all_reduce\",\"calls\":20,"
				"\"instances\":5,"));
	APX_ASSERT(strstr(json, "\"busbw_bps\":100663296000,\"busbw_peak_pct\":null"));
	APX_ASSERT(strstr(json, "\"sizes\":[{\"bucket\":\"16MiB-256MiB\",\"calls\":20,"));
	APX_ASSERT(strstr(text, "Ranks (the processes of a distributed run)"));
	APX_ASSERT(strstr(text, "straggler: rank 3, last at 5 of 5 collectives"));
	APX_ASSERT(strstr(text, "busbw against the link's peak: n/a: the ranks are on 2 hosts"));
	APX_ASSERT(strstr(text, "all_reduce"));
	APX_ASSERT(tg_report_fits(text));	/* the text report fits 100 columns */
	free(json);
	free(text);
	apx_model_free(m);
	return 0;
}

/* Four ranks of one host, one all-reduce each; every rank holds 10 GiB of device memory,
 * rank 0 8 GiB more for a while (unbalanced) or not (balanced). */
APX_TEST(unbalanced_memory)
{
	for (int unbalanced = 1; unbalanced >= 0; unbalanced--) {
		struct tg t[4];
		struct apx_model *m;
		const struct apx_finding *f;
		char *json;

		for (int r = 0; r < 4; r++) {
			APX_ASSERT(tg_open_rank(&t[r], "node-a", r % 2 ? uuid_b : uuid_a, r, 4) == 0);
			tg_mem(&t[r], 5 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 10ull << 30);
			if (r == 0 && unbalanced) {
				tg_mem_at(&t[r], 20 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 8ull << 30,
					  0x7000000000ull);
				tg_mem_at(&t[r], 30 * MS, APX_MEMOP_FREE, APX_MEM_DEVICE, 8ull << 30,
					  0x7000000000ull);
			}
			tg_kernel(&t[r], 10 * MS, 5 * MS, "sm90_gemm", 7);
			coll(&t[r], 16 * MS, 17 * MS, APX_COLL_ALL_REDUCE, 64ull << 20, 0x77, 0, r, 4);
		}
		m = tg_model(t, 4);
		APX_ASSERT(m && m->ranks);
		APX_ASSERT_EQ(m->ranks->rank[0].mem_peak_bytes, (unbalanced ? 18ull : 10ull) << 30);
		APX_ASSERT_EQ(m->ranks->rank[3].mem_peak_bytes, 10ull << 30);
		apx_rules_run(m, &fd);
		f = tg_find(&fd, "unbalanced-memory");
		if (!unbalanced) {
			APX_ASSERT(!f);
			APX_ASSERT_EQ(tg_status(&fd, "unbalanced-memory"), APX_RULE_CLEAN);
			apx_model_free(m);
			continue;
		}
		APX_ASSERT(f);
		APX_ASSERT(strstr(f->title, "rank 0 holds 8"));
		APX_ASSERT(f->saving_ns == 0);	/* memory, not time */
		APX_ASSERT(strstr(f->evidence, "peaks of 4 ranks"));
		json = tg_report(m, &fd, 1u << APX_SEC_RANKS, 1);
		APX_ASSERT(json && strstr(json, "\"mem_peak_bytes\":19327352832"));
		free(json);
		apx_model_free(m);
	}
	return 0;
}

/* The same ranks with rank 1's GPU busy longer (its compute kernel 7 ms, its host on time):
 * it arrives late on the GPU, and the straggler finding says its GPU, with its kernel time. */
APX_TEST(straggler_gpu)
{
	struct tg t[4];
	struct apx_model *m;
	const struct apx_finding *f;

	for (int r = 0; r < 4; r++) {
		APX_ASSERT(tg_open_rank(&t[r], "node-a", r % 2 ? uuid_b : uuid_a, r, 4) == 0);
		for (uint64_t i = 0; i < 5; i++) {
			uint64_t t0 = 10 * MS + i * 10 * MS, k = r == 1 ? 7 * MS : 5 * MS;

			tg_marker(&t[r], t0, t0 + 10 * MS, "ProfilerStep#1");
			tg_kernel(&t[r], t0, k, "sm90_gemm", 7);
			/* enqueued at t0 + 1 ms on every rank (the host runs ahead); the kernel
			 * starts when the GPU is free */
			tg_collective(&t[r], t0 + MS, t0 + k + 10 * US, t0 + 8 * MS + 10 * US,
				      APX_COLL_ALL_REDUCE, 64ull << 20, 0x99, i, r, 4);
		}
	}
	m = tg_model(t, 4);
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	APX_ASSERT_EQ(m->ranks->straggler.rank, 1);
	f = tg_find(&fd, "straggler");
	APX_ASSERT(f);
	APX_ASSERT(strstr(f->title, "rank 1 arrives last"));
	APX_ASSERT(strstr(f->title, "its GPU"));
	APX_ASSERT(strstr(f->evidence, "its own kernels took 35.00 ms"));
	APX_ASSERT(strstr(f->fix, "Balance"));
	APX_ASSERT(fabs(f->saving_ns - 5.0 * 2 * MS) < 1);
	apx_model_free(m);
	return 0;
}

/* Every rank on time (a few us apart): no straggler, the rule is silent. */
APX_TEST(straggler_none)
{
	struct tg t[2];
	struct apx_model *m;

	for (int r = 0; r < 2; r++) {
		APX_ASSERT(tg_open_rank(&t[r], "node-a", r ? uuid_b : uuid_a, r, 2) == 0);
		for (uint64_t i = 0; i < 5; i++) {
			uint64_t t0 = 10 * MS + i * 10 * MS;

			tg_kernel(&t[r], t0, 5 * MS, "sm90_gemm", 7);
			coll(&t[r], t0 + 5 * MS + 10 * US + (uint64_t)r * 5 * US, t0 + 6 * MS,
			     APX_COLL_ALL_REDUCE, 1 << 20, 0x5, i, r, 2);
		}
	}
	m = tg_model(t, 2);
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	APX_ASSERT_EQ(m->ranks->straggler.rank, -1);
	APX_ASSERT_EQ(tg_status(&fd, "straggler"), APX_RULE_CLEAN);
	APX_ASSERT(!tg_find(&fd, "straggler"));
	apx_model_free(m);
	return 0;
}

/* Two ranks, 4 steps of 20 ms: 8 ms of compute, then four 8 MiB all-reduces of 1 ms one after
 * the other, then 1 ms of optimizer. overlapped: the all-reduces run beside a kernel of
 * another stream instead. */
static struct apx_model *exposed_run(int overlapped)
{
	struct tg t[2];

	for (int r = 0; r < 2; r++) {
		if (tg_open_rank(&t[r], "node-a", r ? uuid_b : uuid_a, r, 2) < 0)
			return NULL;
		for (uint64_t i = 0; i < 4; i++) {
			uint64_t t0 = 10 * MS + i * 20 * MS;

			tg_marker(&t[r], t0, t0 + 20 * MS, "ProfilerStep#1");
			tg_kernel(&t[r], t0, 8 * MS, "sm90_gemm", 7);
			if (overlapped)
				tg_kernel(&t[r], t0 + 8 * MS, 4 * MS, "sm90_gemm_bwd", 9);
			for (uint64_t k = 0; k < 4; k++)
				coll(&t[r], t0 + (8 + k) * MS, t0 + (9 + k) * MS, APX_COLL_ALL_REDUCE,
				     8u << 20, 0x42, i * 4 + k, r, 2);
			tg_kernel(&t[r], t0 + 12 * MS, MS, "adamw", 7);
		}
	}
	return tg_model(t, 2);
}

APX_TEST(exposed_communication)
{
	struct apx_model *m = exposed_run(0);
	const struct apx_finding *f;

	APX_ASSERT(m && m->ranks);
	/* a step: 4 ms exposed; the last all-reduce's 1 ms stays (its gradients are ready only
	 * then); 8 ms of compute before it beside no communication: 3 ms could hide, 12 ms in
	 * 4 steps */
	APX_ASSERT_EQ(m->ranks->rank[0].exposed_ns, 16 * MS);
	APX_ASSERT_EQ(m->ranks->rank[0].tail_ns, 4 * MS);
	APX_ASSERT_EQ(m->ranks->rank[0].hideable_ns, 12 * MS);
	APX_ASSERT_EQ(m->ranks->rank[1].free_compute_ns, 32 * MS);
	apx_rules_run(m, &fd);
	f = tg_find(&fd, "exposed-communication");
	APX_ASSERT(f);
	APX_ASSERT(fabs(f->saving_ns - 12.0 * MS) < 1);
	APX_ASSERT(strstr(f->fix, "bucket_cap_mb"));
	APX_ASSERT(strstr(f->fix, "backward_prefetch"));
	APX_ASSERT(strstr(f->evidence, "over 4 steps"));
	APX_ASSERT_EQ(tg_status(&fd, "straggler"), APX_RULE_CLEAN);
	apx_model_free(m);

	m = exposed_run(1);		/* fixed: every all-reduce beside compute */
	APX_ASSERT(m && m->ranks);
	APX_ASSERT_EQ(m->ranks->rank[0].exposed_ns, 0);
	apx_rules_run(m, &fd);
	APX_ASSERT(!tg_find(&fd, "exposed-communication"));
	APX_ASSERT_EQ(tg_status(&fd, "exposed-communication"), APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

/* Two ranks, 4 steps: 5 ms of compute, then 40 all-reduces of 4 KiB (20 us each) one after
 * the other and one of 16 MiB (20 us + 16 MiB at 100 GB/s); overlapped: the small ones run
 * beside a kernel of another stream. one_size: no 16 MiB one (no time-vs-size fit). */
static struct apx_model *small_run(int overlapped, int one_size)
{
	const uint64_t big = 16u << 20, big_ns = 20 * US + big / 100;	/* 100 bytes a ns */
	struct tg t[2];

	for (int r = 0; r < 2; r++) {
		if (tg_open_rank(&t[r], "node-a", r ? uuid_b : uuid_a, r, 2) < 0)
			return NULL;
		for (uint64_t i = 0; i < 4; i++) {
			uint64_t t0 = 10 * MS + i * 10 * MS, x = t0 + 5 * MS, seq = i * 41;

			tg_marker(&t[r], t0, t0 + 10 * MS, "ProfilerStep#1");
			tg_kernel(&t[r], t0, 5 * MS, "sm90_gemm", 7);
			if (overlapped)
				tg_kernel(&t[r], x, 40 * 20 * US, "sm90_gemm_bwd", 9);
			for (uint64_t k = 0; k < 40; k++, x += 20 * US)
				coll(&t[r], x, x + 20 * US, APX_COLL_ALL_REDUCE, 4096, 0x21, seq++, r,
				     2);
			if (!one_size)
				coll(&t[r], x, x + big_ns, APX_COLL_ALL_REDUCE, big, 0x21, seq, r, 2);
		}
	}
	return tg_model(t, 2);
}

APX_TEST(small_collectives)
{
	struct apx_model *m = small_run(0, 0);
	const struct apx_ranks_coll *c;
	const struct apx_finding *f;
	/* the fit through (4 KiB, 20 us) and (16 MiB, 20 us + 167.772 us) */
	const double k = 167772.0 / (double)((16u << 20) - 4096), lat = 20000 - k * 4096;

	APX_ASSERT(m && m->ranks);
	c = &m->ranks->coll[APX_COLL_ALL_REDUCE];
	APX_ASSERT_EQ(c->fit, 1);
	APX_ASSERT_EQ(c->fit_sizes, 2);
	APX_ASSERT(fabs(c->ns_per_byte - k) < 1e-9);
	APX_ASSERT(fabs(c->latency_ns - lat) < 1e-3);
	/* a step: one group of 40 (the 16 MiB call ends it): 39 latencies saved, all exposed */
	APX_ASSERT_EQ(m->ranks->rank[0].small_calls, 160);
	APX_ASSERT_EQ(m->ranks->rank[0].small_groups, 4);
	APX_ASSERT_EQ(m->ranks->rank[0].small_exposed_ns, 160 * 20 * US);
	APX_ASSERT(fabs(m->ranks->rank[0].small_saving_ns - 4 * 39 * lat) < 1);
	apx_rules_run(m, &fd);
	f = tg_find(&fd, "small-collectives");
	APX_ASSERT(f);
	APX_ASSERT(fabs(f->saving_ns - 4 * 39 * lat) < 1);
	APX_ASSERT(strstr(f->title, "160 latency-bound collectives"));
	APX_ASSERT(strstr(f->evidence, "all_reduce: 320 calls under 64 KiB"));
	APX_ASSERT(strstr(f->fix, "torch.cat"));
	/* exposed-communication leaves small-collectives' time to it (each ns once) */
	f = tg_find(&fd, "exposed-communication");
	APX_ASSERT(!f || f->saving_ns < 4 * (800.0 * US - 39 * lat) + 1);
	apx_model_free(m);

	m = small_run(1, 0);		/* fixed: beside compute, fusing saves nothing */
	APX_ASSERT(m && m->ranks);
	APX_ASSERT_EQ(m->ranks->rank[0].small_calls, 160);
	APX_ASSERT(m->ranks->rank[0].small_saving_ns == 0);
	apx_rules_run(m, &fd);
	APX_ASSERT(!tg_find(&fd, "small-collectives"));
	APX_ASSERT_EQ(tg_status(&fd, "small-collectives"), APX_RULE_CLEAN);
	apx_model_free(m);

	m = small_run(0, 1);		/* one size: latency and bandwidth cannot be told apart */
	APX_ASSERT(m && m->ranks);
	APX_ASSERT_EQ(m->ranks->coll[APX_COLL_ALL_REDUCE].fit, 0);
	apx_rules_run(m, &fd);
	APX_ASSERT_EQ(tg_status(&fd, "small-collectives"), APX_RULE_NOT_MEASURED);
	APX_ASSERT(strstr(tg_result(&fd, "small-collectives")->why, "do not span a factor of 2"));
	apx_model_free(m);
	return 0;
}

/* A DEVICE record naming the GPU's NVLink links (the collector records none yet). */
static void nvlink_device(struct tg *t, const uint8_t *uuid, unsigned links)
{
	struct apx_rec d;

	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H100");
	apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, 16);
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_NVLINK_COUNT] = links;
	d.v[APX_DEVICE_PCIE_GEN] = 5;
	d.v[APX_DEVICE_PCIE_WIDTH] = 16;
	apx_writer_add(t->w, &d);
}

/* The link from the collector's NVML reading (nvml.nvlink_links) when the DEVICE record has no
 * count: 18 links (NVLink), 0 (PCIe gen 5 x16), or no reading (unknown). */
APX_TEST(link_from_nvml)
{
	for (int links = 18; links >= -1; links = links ? (links == 18 ? 0 : -2) : -1) {
		struct tg t[2];
		struct apx_model *m;

		for (int r = 0; r < 2; r++) {
			APX_ASSERT(tg_open_rank(&t[r], "node-a", r ? uuid_b : uuid_a, r, 2) == 0);
			nvlink_device(&t[r], r ? uuid_b : uuid_a, 0);
			if (links >= 0)
				tg_metric(&t[r], 5 * MS, "nvml.nvlink_links", "", 0, 0, links);
			coll(&t[r], 10 * MS, 11 * MS, APX_COLL_ALL_REDUCE, 225000000, 0x3, 0, r, 2);
		}
		m = tg_model(t, 2);
		APX_ASSERT(m && m->ranks);
		if (links == 18) {
			APX_ASSERT(m->ranks->link.peak_bps == 450e9);
			APX_ASSERT(!strcmp(m->ranks->link.kind, "NVLink"));
		} else if (links == 0) {
			APX_ASSERT(fabs(m->ranks->link.peak_bps - 3.938e9 * 16) < 1);
			APX_ASSERT(!strcmp(m->ranks->link.kind, "PCIe"));
			APX_ASSERT(strstr(m->ranks->link.why, "PCIe gen 5 x16: 63.0 GB/s"));
		} else {
			APX_ASSERT(m->ranks->link.peak_bps == 0 && !m->ranks->link.kind);
			APX_ASSERT(strstr(m->ranks->link.why, "no NVLink count"));
		}
		apx_model_free(m);
	}
	return 0;
}

/* One host, NVLink known: busbw against 18 x 25 GB/s. */
APX_TEST(link_peak)
{
	struct tg t[2];
	struct apx_model *m;
	char *json;

	for (int r = 0; r < 2; r++) {
		APX_ASSERT(tg_open_rank(&t[r], "node-a", r ? uuid_b : uuid_a, r, 2) == 0);
		nvlink_device(&t[r], r ? uuid_b : uuid_a, 18);
		coll(&t[r], 10 * MS, 11 * MS, APX_COLL_ALL_REDUCE, 225000000, 0x3, 0, r, 2);
	}
	m = tg_model(t, 2);
	APX_ASSERT(m && m->ranks);
	APX_ASSERT(m->ranks->link.peak_bps == 450e9);
	APX_ASSERT(strstr(m->ranks->link.why, "18 links x 25 GB/s"));
	apx_rules_run(m, &fd);
	/* 225 MB in 1 ms over 2 ranks: algbw 225 GB/s, busbw 225 GB/s = 50 % of 450 GB/s */
	json = tg_report(m, &fd, 1u << APX_SEC_COLLECTIVES, 1);
	APX_ASSERT(json);
	APX_ASSERT(strstr(json, "\"link\":{\"kind\":\"NVLink\",\"peak_bps\":450000000000,"));
	APX_ASSERT(strstr(json, "\"busbw_bps\":225000000000,\"busbw_peak_pct\":50,"));
	free(json);
	json = tg_report(m, &fd, 1u << APX_SEC_COLLECTIVES, 0);
	APX_ASSERT(json && strstr(json, "busbw against the link's peak, 450.0 GB/s: NVLink: 18 "
				  "links x 25 GB/s a direction (sm_90)"));
	free(json);
	apx_model_free(m);
	return 0;
}

static const uint8_t uuid_c[16] = { 0xcc, 3 }, uuid_d[16] = { 0xdd, 4 };

/* Four ranks on two hosts (hosts 1: all on node-a), 4 steps of 10 ms: 6 ms of compute, then two
 * all-reduces of `bytes` in 1 ms each (7.5 MB: algbw 7.5 GB/s, busbw x 1.5 = 11.25 GB/s, 90 %
 * of 100 Gb/s), beside no compute: 2 ms a step exposed (20 %). Each host's first rank records
 * its RDMA port's line rate (LOCAL_RANK 0 samples the NICs; rate 0: none recorded). */
static struct apx_model *net_run(int hosts, uint64_t bytes, unsigned dtype, double rate)
{
	const uint8_t *uuid[4] = { uuid_a, uuid_b, uuid_c, uuid_d };
	struct tg t[4];

	for (int r = 0; r < 4; r++) {
		const char *host = hosts == 2 && r >= 2 ? "node-b" : "node-a";

		if (tg_open_rank(&t[r], host, uuid[r], r, 4) < 0)
			return NULL;
		if (rate > 0 && r % 2 == 0)
			tg_metric(&t[r], 5 * MS, "ib.mlx5_0.1.line_rate", "bit/s", 0, 0, rate);
		for (uint64_t i = 0; i < 4; i++) {
			uint64_t t0 = 10 * MS + i * 10 * MS;

			tg_marker(&t[r], t0, t0 + 10 * MS, "ProfilerStep#1");
			tg_kernel(&t[r], t0, 6 * MS, "sm90_gemm", 7);
			for (uint64_t k = 0; k < 2; k++)
				tg_collective_dt(&t[r], t0 + (6 + k) * MS - 10 * US,
						 t0 + (6 + k) * MS, t0 + (7 + k) * MS,
						 APX_COLL_ALL_REDUCE, bytes, 0x77, i * 2 + k, r, 4,
						 dtype);
		}
	}
	return tg_model(t, 4);
}

/* network-bound: float32 all-reduces across 2 hosts at 90 % of the NICs' line rate, 20 % of
 * the steps exposed: bf16 halves them, saving = 0.5 x exposed (4 x 2 ms), and
 * exposed-communication leaves that time (each ns once); silent on one host, at 30 % of the
 * line rate, without a line rate; bf16 already: a finding without saving. */
APX_TEST(network_bound)
{
	struct apx_model *m = net_run(2, 7500000, APX_DT_FLOAT32, 100e9);
	const struct apx_finding *f;
	const struct apx_ranks_coll *c;
	char *json, *text;

	APX_ASSERT(m && m->ranks);
	APX_ASSERT_EQ(m->ranks->hosts, 2);
	APX_ASSERT_EQ(m->ranks->net_comms, 1);
	APX_ASSERT(m->ranks->link.kind && !strcmp(m->ranks->link.kind, "NIC"));
	APX_ASSERT(m->ranks->link.peak_bps == 12.5e9);
	APX_ASSERT(strstr(m->ranks->link.why, "100 Gb/s a direction (1 RDMA port of host node-"));
	c = &m->ranks->coll[APX_COLL_ALL_REDUCE];
	APX_ASSERT_EQ(c->net_calls, 32);
	APX_ASSERT_EQ(c->net_fp32_bytes, 32 * 7500000ull);
	APX_ASSERT(fabs(c->net_busbw_bps - 11.25e9) < 1);
	APX_ASSERT_EQ(m->ranks->rank[0].net_exposed_ns, 8 * MS);
	APX_ASSERT_EQ(m->ranks->rank[3].net_fp32_exposed_ns[APX_COLL_ALL_REDUCE], 8 * MS);
	APX_ASSERT_EQ(m->ranks->rank[0].net_step_ns, 40 * MS);
	apx_rules_run(m, &fd);
	f = tg_find(&fd, "network-bound");
	APX_ASSERT(f);
	APX_ASSERT(f->saving_ns == 4.0 * MS);
	APX_ASSERT(strstr(f->title, "all_reduce limited by the network: 11.2 GB/s of 12.5 GB/s "
			  "NIC line rate, 2.00 ms a step exposed"));
	APX_ASSERT(strstr(f->evidence, "busbw 11.2 GB/s = 90% of 12.5 GB/s"));
	APX_ASSERT(strstr(f->evidence, "100% of it float32"));
	APX_ASSERT(strstr(f->fix, "bf16_compress_hook"));
	APX_ASSERT(strstr(f->fix, "reduce_dtype=torch.bfloat16"));
	/* exposed-communication: 8 ms exposed, 4 ms stay (each step's last all-reduce), the other
	 * 4 ms network-bound's: nothing left to claim */
	APX_ASSERT(fabs(apx_network_bound_claim(m->ranks, &m->ranks->rank[0]) - 4.0 * MS) < 1);
	APX_ASSERT(!tg_find(&fd, "exposed-communication"));
	APX_ASSERT_EQ(tg_status(&fd, "exposed-communication"), APX_RULE_CLEAN);
	json = tg_report(m, &fd, 1u << APX_SEC_COLLECTIVES, 1);
	text = tg_report(m, &fd, 1u << APX_SEC_COLLECTIVES, 0);
	APX_ASSERT(json && strstr(json, "\"link\":{\"kind\":\"NIC\",\"peak_bps\":12500000000,"));
	APX_ASSERT(strstr(json, "\"busbw_peak_pct\":90,"));
	APX_ASSERT(tg_report_fits(text));	/* the text report fits 100 columns */
	free(json);
	free(text);
	apx_model_free(m);

	m = net_run(1, 7500000, APX_DT_FLOAT32, 100e9);	/* one host: no network */
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	APX_ASSERT(!tg_find(&fd, "network-bound"));
	APX_ASSERT_EQ(tg_status(&fd, "network-bound"), APX_RULE_NOT_MEASURED);
	APX_ASSERT(strstr(tg_result(&fd, "network-bound")->why, "one host"));
	apx_model_free(m);

	m = net_run(2, 2500000, APX_DT_FLOAT32, 100e9);	/* busbw 3.75 GB/s: 30 % */
	APX_ASSERT(m && m->ranks);
	APX_ASSERT(fabs(m->ranks->coll[APX_COLL_ALL_REDUCE].net_busbw_bps - 3.75e9) < 1);
	apx_rules_run(m, &fd);
	APX_ASSERT(!tg_find(&fd, "network-bound"));
	APX_ASSERT_EQ(tg_status(&fd, "network-bound"), APX_RULE_CLEAN);
	f = tg_find(&fd, "exposed-communication");	/* overlap: all of its 4 ms again */
	APX_ASSERT(f && fabs(f->saving_ns - 4.0 * MS) < 1);
	apx_model_free(m);

	m = net_run(2, 7500000, APX_DT_FLOAT32, 0);	/* no line rate recorded */
	APX_ASSERT(m && m->ranks);
	APX_ASSERT(!m->ranks->link.kind);
	APX_ASSERT(strstr(m->ranks->link.why, "recorded no NIC line rate"));
	apx_rules_run(m, &fd);
	APX_ASSERT(!tg_find(&fd, "network-bound"));
	APX_ASSERT_EQ(tg_status(&fd, "network-bound"), APX_RULE_NOT_MEASURED);
	APX_ASSERT(strstr(tg_result(&fd, "network-bound")->why, "no NIC line rate"));
	apx_model_free(m);

	m = net_run(2, 7500000, APX_DT_BFLOAT16, 100e9);	/* bf16: advice, no saving */
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	f = tg_find(&fd, "network-bound");
	APX_ASSERT(f);
	APX_ASSERT(f->saving_ns == 0);
	APX_ASSERT(strstr(f->evidence, "no float32 among them"));
	APX_ASSERT(strstr(f->fix, "already move 16-bit"));
	APX_ASSERT(apx_network_bound_claim(m->ranks, &m->ranks->rank[0]) == 0);
	f = tg_find(&fd, "exposed-communication");	/* the time is all overlap's */
	APX_ASSERT(f && fabs(f->saving_ns - 4.0 * MS) < 1);
	apx_model_free(m);
	return 0;
}

/* Without collectives (one process, no NCCL): no ranks, no sections, no checks of theirs. */
APX_TEST(single_process)
{
	struct tg t;
	struct apx_model *m;
	char *json, *text;

	APX_ASSERT(tg_open(&t) == 0);
	tg_kernel(&t, 2 * MS, MS, "k", 7);
	m = tg_analyse(&t, &fd);
	APX_ASSERT(m);
	APX_ASSERT(m->ranks == NULL);
	APX_ASSERT(tg_result(&fd, "straggler") == NULL);
	APX_ASSERT(tg_result(&fd, "exposed-communication") == NULL);
	APX_ASSERT(tg_result(&fd, "small-collectives") == NULL);
	APX_ASSERT(tg_result(&fd, "network-bound") == NULL);
	json = tg_report(m, &fd, 0, 1);
	text = tg_report(m, &fd, 0, 0);
	APX_ASSERT(json && text);
	APX_ASSERT(!strstr(json, "\"ranks\""));
	APX_ASSERT(!strstr(json, "\"collectives\""));
	APX_ASSERT(!strstr(text, "Ranks ("));
	APX_ASSERT(!strstr(text, "Collectives ("));
	free(json);
	free(text);
	/* asked for by name, the section says there is nothing */
	text = tg_report(m, &fd, 1u << APX_SEC_RANKS, 0);
	APX_ASSERT(text && strstr(text, "no NCCL collective in the trace"));
	free(text);
	apx_model_free(m);
	return 0;
}

/* Collectives with random fields (functions, sizes and ranks out of range, ends before starts,
 * times near 2^64, huge communicators): the model, the rules and the report neither crash nor
 * pass 100 % busy. */
APX_TEST(hostile_fields)
{
	struct tg t[3];
	struct apx_model *m;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char *json, *text;

	for (int r = 0; r < 3; r++) {
		APX_ASSERT(tg_open_rank(&t[r], r ? "h1" : "h0", r % 2 ? uuid_b : uuid_a, r, 3) == 0);
		tg_kernel(&t[r], 5 * MS, MS, "k", 7);
		for (int i = 0; i < 400; i++) {
			struct apx_rec c;

			apx_rec_init(&c, APX_REC_COLLECTIVE);
			for (unsigned f = 0; f < APX_COLLECTIVE__COUNT; f++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;	/* xorshift */
				c.v[f] = i % 3 ? x % (i % 2 ? 64 : 50 * MS) : x;
			}
			if (i % 5 == 0)
				c.v[APX_COLLECTIVE_SEQ] = (uint64_t)i / 5;	/* some match */
			if (i % 5 == 0)
				c.v[APX_COLLECTIVE_COMM] = 7, c.v[APX_COLLECTIVE_NRANKS] = 3;
			apx_writer_add(t[r].w, &c);
		}
	}
	m = tg_model(t, 3);
	APX_ASSERT(m && m->ranks);
	apx_rules_run(m, &fd);
	for (size_t i = 0; i < m->ranks->ndevs; i++)
		APX_ASSERT(m->ranks->dev[i].busy_pct <= 100.0);
	for (size_t i = 0; i < m->ranks->nranks; i++)
		APX_ASSERT(m->ranks->rank[i].busy_pct <= 100.0);
	json = tg_report(m, &fd, 0, 1);
	text = tg_report(m, &fd, 0, 0);
	APX_ASSERT(json && text && strstr(json, "\"ranks\":{"));
	free(json);
	free(text);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
