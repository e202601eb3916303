/*
 * test-ranks.c - several ranks of one run (lib/analysis/ranks.c) on synthetic traces
 * (tracegen.c): 4 ranks on 2 hosts with all-reduces, rank 3 late at every one; a second process
 * on rank 0's GPU; a file named twice. Checks: GPU busy per device <= 100 % and nothing counted
 * twice, devices by (host, UUID), nccl-tests' busbw factors, algbw/busbw of the table, the
 * straggler named with its lateness, exposed communication, the JSON and text views.
 * ctest unit-ranks.
 */
#include <math.h>
#include <unistd.h>

#include "apx-test.h"
#include "unit/tracegen.h"

#include "analysis/ranks.h"

#include "base/banned.h"

#define MS 1000000ull

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

/* rank r of 4: five steps of a 5 ms compute kernel then a 64 MiB all-reduce; rank 3 arrives
 * 2 ms late at each, and the all-reduce runs on every GPU once all have arrived. */
static int make_rank(struct tg *t, int r)
{
	const char *host = r < 2 ? "node-a" : "node-b";
	uint8_t uuid[16];

	memcpy(uuid, r % 2 ? uuid_b : uuid_a, 16);
	if (tg_open_rank(t, host, uuid, r, 4) < 0)
		return -1;
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t t0 = 10 * MS + i * 10 * MS;
		uint64_t enq = t0 + 5 * MS + (r == 3 ? 2 * MS : (uint64_t)r * 1000);

		tg_marker(t, t0, t0 + 10 * MS, "ProfilerStep#1");
		tg_kernel(t, t0, 5 * MS, "sm90_gemm", 7);
		tg_collective(t, enq, t0 + 7 * MS + 10000, t0 + 8 * MS + 10000,
			      APX_COLL_ALL_REDUCE, 64ull << 20, 0x77, i, r, 4);
	}
	/* one more, overlapped by a compute kernel on another stream for half its time */
	tg_kernel(t, 70 * MS, MS / 2, "sm90_gemm", 9);
	tg_collective(t, 70 * MS - 1000 + (r == 3 ? 2 * MS : 0), 70 * MS, 71 * MS,
		      APX_COLL_ALL_GATHER, 1 << 20, 0x77, 5, r, 4);
	return tg_close(t);
}

APX_TEST(four_ranks)
{
	struct tg t[5];
	const char *paths[7];
	struct apx_ranks *R;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

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
	APX_ASSERT_EQ(R->ndevs, 4);		/* (node-a, A), (node-a, B), (node-b, A), (node-b, B) */
	APX_ASSERT_EQ(R->rank[0].device, R->rank[4].device);
	APX_ASSERT(R->rank[1].device != R->rank[3].device);	/* same UUID, other host */
	APX_ASSERT(R->rank[0].device != R->rank[2].device);
	for (size_t d = 0; d < R->ndevs; d++) {
		APX_ASSERT(R->dev[d].busy_ns <= R->dev[d].span_ns);
		APX_ASSERT(R->dev[d].busy_pct <= 100.0);
	}
	/* rank 0's device: 5 x (5 + 1) ms + 1 ms (the all-gather; its overlapping kernel inside)
	 * = 31 ms; the worker's 12-15 ms kernel lies inside rank 0's first one */
	APX_ASSERT_EQ(R->dev[R->rank[0].device].busy_ns, 31 * MS);
	APX_ASSERT_EQ(R->dev[R->rank[0].device].nfiles, 2);
	APX_ASSERT_EQ(R->rank[0].gpu_busy_ns, 31 * MS);
	APX_ASSERT_EQ(R->rank[0].step_ns, 10 * MS);
	APX_ASSERT_EQ(R->rank[4].step_ns, 0);
	APX_ASSERT_EQ(R->rank[4].rank, -1);
	/* communication 6 ms, of which 0.5 ms overlapped by the stream-9 kernel */
	APX_ASSERT_EQ(R->rank[2].comm_ns, 6 * MS);
	APX_ASSERT_EQ(R->rank[2].exposed_ns, 6 * MS - MS / 2);

	/* the table: 20 all-reduce records of 5 instances; 64 MiB in 1 ms over 4 ranks */
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].calls, 20);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].instances, 5);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].size_hist[4], 20);	/* 16-256 MiB */
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_REDUCE].algbw_gbps - 67.108864) < 1e-6);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_REDUCE].busbw_gbps - 67.108864 * 1.5) < 1e-6);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_GATHER].algbw_gbps - 4.194304) < 1e-6);
	APX_ASSERT(fabs(R->coll[APX_COLL_ALL_GATHER].busbw_gbps - 4.194304 * 0.75) < 1e-6);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].algo[APX_ALGO_RING], 20);

	/* the straggler: rank 3, last at all 6, about 2 ms after the median rank */
	APX_ASSERT_EQ(R->straggler.rank, 3);
	APX_ASSERT_EQ(R->straggler.last, 6);
	APX_ASSERT_EQ(R->straggler.matched, 6);
	APX_ASSERT(R->straggler.mean_late_ns > 1900000 && R->straggler.mean_late_ns <= 2 * MS);
	APX_ASSERT_EQ(R->rank[0].last, 0);

	f = open_memstream(&buf, &len);
	APX_ASSERT(f != NULL);
	apx_ranks_json(R, f);
	apx_ranks_text(R, f);
	fclose(f);
	APX_ASSERT(strstr(buf, "\"straggler\":{\"rank\":3,\"arrived_last\":6"));
	APX_ASSERT(strstr(buf, "\"func\":\"all_reduce\",\"calls\":20,\"instances\":5"));
	APX_ASSERT(strstr(buf, "Straggler: rank 3 arrived last at 6 of 6 collectives"));
	free(buf);
	apx_ranks_free(R);
	for (int i = 0; i < 5; i++)
		unlink(t[i].path);
	return 0;
}

/* Without collectives (one process, no NCCL): no straggler, nothing n/a turned into 0. */
APX_TEST(single_process)
{
	struct tg t;
	const char *p[1];
	struct apx_ranks *R;

	APX_ASSERT(tg_open(&t) == 0);
	tg_kernel(&t, 2 * MS, MS, "k", 7);
	APX_ASSERT(tg_close(&t) == 0);
	p[0] = t.path;
	APX_ASSERT_OK(apx_ranks_load(p, 1, &R, NULL));
	APX_ASSERT_EQ(R->nranks, 1);
	APX_ASSERT_EQ(R->straggler.rank, -1);
	APX_ASSERT_EQ(R->coll[APX_COLL_ALL_REDUCE].calls, 0);
	APX_ASSERT(R->dev[0].busy_pct <= 100.0);
	apx_ranks_free(R);
	unlink(t.path);
	return 0;
}

APX_TEST_MAIN()
