/*
 * ranks-gen.c - writes the files of a synthetic distributed run whose every number is known, for
 * export-ranks.py to check `apx export`'s per-rank files (Chrome/Kineto JSON read the way
 * Holistic Trace Analysis reads it, SQLite NCCL_COLLECTIVES and docs/export.md's queries across
 * ranks). Usage: ranks-gen FILE NRANKS (2..64). It writes, all with one run id:
 *   FILE: the launcher (torchrun), no rank, no GPU work;
 *   FILE.rank<R>.<5000+R>: rank R of NRANKS, process 5000 + R ("python3 train.py"), local rank
 *   R % (NRANKS/2); ranks below NRANKS/2 on host node1 (trace clock from 1 s), the others on
 *   node2 (trace clock from 5 s), both with realtime offsets that put their clock starts at the
 *   same wall-clock instant W = 1.8e18 ns (the times below are after that instant);
 *   steps i = 0..3 at x = 1 ms + 10 ms i: a range "ProfilerStep#i" [x, x + 10 ms) on thread
 *   5000 + R; cudaLaunchKernel at x + 100 us of "sm90_xmma_gemm" on stream 7 [x + 0.2, x + 5.2
 *   ms) and at x + 150 us of "elementwise_kernel" on stream 9 [x + 6, x + 7 ms); the all-reduce
 *   of step i (comm 0x1234abcd5678ef00, seq i, 32 Mi bf16 = 64 MiB, ring, LL, 8 channels)
 *   enqueued at x + 5.3 ms + late (late: 2 ms on the last rank, 10 us x R on the others) for
 *   20 us, launched by cuLaunchKernelEx at enqueue + 10 us as
 *   "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclWorkElem)" on stream 13 [enqueue + 30 us,
 *   x + 9 ms) (every rank's ends at the same instant), its GPU times 2 us inside the kernel's;
 *   at 41 ms a broadcast (seq 4, root 0, 4 KiB) enqueued at 41 ms + 5 us x R with GPU times
 *   [41.1, 41.3 ms) and no kernel (CUPTI did not record one);
 *   ranks 0 and 1 only: a send 0 -> 1 and its recv (comm 0x77, 2 ranks, seq 0, 1 MiB, no GPU
 *   times) enqueued at 45 ms (rank 1: 45.001 ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apx/format.h>

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull
#define WALL 1800000000000000000ull
#define COMM 0x1234abcd5678ef00ull
#define HANDLE 0x7f00aa00ull

static struct apx_writer *w;
static uint64_t corr;

static uint32_t str(const char *s)
{
	uint32_t id = 0;

	apx_writer_intern(w, s, strlen(s), &id);
	return id;
}

static void api(uint64_t start, const char *name, int driver, uint64_t tid)
{
	struct apx_rec a;

	apx_rec_init(&a, APX_REC_API);
	a.v[APX_API_START_NS] = start;
	a.v[APX_API_END_NS] = start + 5 * US;
	a.v[APX_API_DOMAIN] = driver ? APX_API_DRIVER : APX_API_RUNTIME;
	a.v[APX_API_CORRELATION] = ++corr;
	a.v[APX_API_TID] = tid;
	a.v[APX_API_NAME] = str(name);
	apx_writer_add(w, &a);
}

static void kernel(uint64_t start, uint64_t end, const char *name, uint64_t stream)
{
	struct apx_rec k;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_START_NS] = start;
	k.v[APX_KERNEL_END_NS] = end;
	k.v[APX_KERNEL_STREAM] = stream;
	k.v[APX_KERNEL_CORRELATION] = corr;
	k.v[APX_KERNEL_NAME] = str(name);
	k.v[APX_KERNEL_GRID_X] = k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_BLOCK_X] = 256;
	k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 1;
	apx_writer_add(w, &k);
}

static void marker(uint64_t start, uint64_t end, const char *name, uint64_t tid)
{
	struct apx_rec m;

	apx_rec_init(&m, APX_REC_MARKER);
	m.v[APX_MARKER_START_NS] = start;
	m.v[APX_MARKER_END_NS] = end;
	m.v[APX_MARKER_NAME] = str(name);
	m.v[APX_MARKER_TID] = tid;
	m.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
	apx_writer_add(w, &m);
}

struct coll {
	uint64_t enq, start, end, count, comm, seq;
	unsigned func, dtype, nranks;
	int rank, peer;
};

static void collective(const struct coll *c)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_COLLECTIVE);
	r.v[APX_COLLECTIVE_ENQUEUE_NS] = c->enq;
	r.v[APX_COLLECTIVE_ENQUEUE_END_NS] = c->enq + 20 * US;
	r.v[APX_COLLECTIVE_START_NS] = c->start;
	r.v[APX_COLLECTIVE_END_NS] = c->end;
	r.v[APX_COLLECTIVE_FUNC] = c->func;
	r.v[APX_COLLECTIVE_COUNT] = c->count;
	r.v[APX_COLLECTIVE_DATATYPE] = c->dtype;
	r.v[APX_COLLECTIVE_BYTES] = c->count * apx_nccl_dtype_bytes(c->dtype);
	r.v[APX_COLLECTIVE_ALGO] = APX_ALGO_RING;
	r.v[APX_COLLECTIVE_PROTO] = APX_PROTO_LL;
	r.v[APX_COLLECTIVE_CHANNELS] = 8;
	apx_rec_set_i64(&r, APX_COLLECTIVE_PEER, c->peer);
	r.v[APX_COLLECTIVE_COMM] = c->comm;
	apx_rec_set_i64(&r, APX_COLLECTIVE_RANK, c->rank);
	r.v[APX_COLLECTIVE_NRANKS] = c->nranks;
	r.v[APX_COLLECTIVE_SEQ] = c->seq;
	r.v[APX_COLLECTIVE_STREAM] = HANDLE;
	apx_rec_set_i64(&r, APX_COLLECTIVE_DEVICE, 0);
	r.v[APX_COLLECTIVE_FLAGS] = (c->start ? APX_COLL_F_GPU_TIMES : 0) |
				    (c->func == APX_COLL_SEND || c->func == APX_COLL_RECV
				     ? APX_COLL_F_P2P : 0);
	apx_writer_add(w, &r);
}

static int open_file(const char *path, int rank, int nranks, uint64_t pid, uint64_t base,
		     const char *host)
{
	struct apx_rec h;
	int r;

	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(&h, APX_HEADER_PRODUCER_VERSION, "test");
	apx_rec_set_str(&h, APX_HEADER_HOSTNAME, host);
	apx_rec_set_str(&h, APX_HEADER_RUN_ID, "ranks-gen-run");
	if (rank >= 0)
		apx_rec_set_bytes(&h, APX_HEADER_ARGV, "python3\0train.py", 17);
	else
		apx_rec_set_bytes(&h, APX_HEADER_ARGV, "torchrun\0train.py", 18);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = pid;
	h.v[APX_HEADER_PPID] = 1;
	h.v[APX_HEADER_START_NS] = base;
	apx_rec_set_i64(&h, APX_HEADER_REALTIME_OFFSET_NS, (int64_t)(WALL - base));
	apx_rec_set_i64(&h, APX_HEADER_RANK, rank);
	if (rank >= 0) {
		h.v[APX_HEADER_WORLD_SIZE] = (uint64_t)nranks;
		apx_rec_set_i64(&h, APX_HEADER_LOCAL_RANK, rank % (nranks / 2));
	}
	corr = 0;
	if ((r = apx_writer_open(path, 1, &h, NULL, &w)) < 0)
		fprintf(stderr, "ranks-gen: cannot write %s: %s\n", path, strerror(-r));
	return r;
}

static int write_rank(const char *file, int rank, int n)
{
	uint64_t pid = 5000 + (uint64_t)rank, base = rank < n / 2 ? 1000 * MS : 5000 * MS;
	uint8_t uuid[16] = { 0x10, (uint8_t)rank, 0xaa };
	struct apx_rec d, t;
	char path[4096];

	snprintf(path, sizeof(path), "%s.rank%d.%llu", file, rank, (unsigned long long)pid);
	if (open_file(path, rank, n, pid, base, rank < n / 2 ? "node1" : "node2") < 0)
		return 1;
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H100 80GB HBM3");
	apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, sizeof(uuid));
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_SM_COUNT] = 132;
	apx_writer_add(w, &d);
	apx_rec_init(&t, APX_REC_THREAD);
	t.v[APX_THREAD_PID] = pid;
	t.v[APX_THREAD_TID] = pid;
	apx_rec_set_str(&t, APX_THREAD_NAME, "python3");
	apx_writer_add(w, &t);
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t x = base + 1 * MS + i * 10 * MS;
		uint64_t late = rank == n - 1 ? 2 * MS : (uint64_t)rank * 10 * US;
		uint64_t enq = x + 5300 * US + late;
		char step[32];
		struct coll c = { enq, enq + 32 * US, x + 9 * MS - 2 * US, 32ull << 20, COMM, i,
				  APX_COLL_ALL_REDUCE, APX_DT_BFLOAT16, (unsigned)n, rank, -1 };

		snprintf(step, sizeof(step), "ProfilerStep#%llu", (unsigned long long)i);
		marker(x, x + 10 * MS, step, pid);
		api(x + 100 * US, "cudaLaunchKernel", 0, pid);
		kernel(x + 200 * US, x + 5200 * US, "sm90_xmma_gemm", 7);
		api(x + 150 * US, "cudaLaunchKernel", 0, pid);
		kernel(x + 6 * MS, x + 7 * MS, "elementwise_kernel", 9);
		api(enq + 10 * US, "cuLaunchKernelEx", 1, pid);
		kernel(enq + 30 * US, x + 9 * MS, "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclWorkElem)",
		       13);
		collective(&c);
	}
	{
		struct coll b = { base + 41 * MS + (uint64_t)rank * 5 * US, base + 41100 * US,
				  base + 41300 * US, 4096, COMM, 4, APX_COLL_BROADCAST, APX_DT_UINT8,
				  (unsigned)n, rank, 0 };

		collective(&b);
	}
	if (rank < 2) {
		struct coll p = { base + 45 * MS + (uint64_t)rank * US, 0, 0, 1 << 20, 0x77, 0,
				  rank ? APX_COLL_RECV : APX_COLL_SEND, APX_DT_UINT8, 2, rank,
				  rank ? 0 : 1 };

		collective(&p);
	}
	return apx_writer_close(w, base + 50 * MS, 0) < 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long n = argc == 3 ? strtol(argv[2], &end, 10) : 0;

	if (n < 2 || n > 64 || n % 2 || !end || *end) {
		fprintf(stderr, "usage: ranks-gen FILE NRANKS (an even number, 2..64)\n");
		return 2;
	}
	if (open_file(argv[1], -1, (int)n, 4000, 999 * MS, "node1") < 0 ||
	    apx_writer_close(w, 999 * MS + 60 * MS, 0) < 0)
		return 1;
	for (int r = 0; r < (int)n; r++)
		if (write_rank(argv[1], r, (int)n))
			return 1;
	return 0;
}
