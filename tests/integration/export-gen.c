/*
 * export-gen.c - writes a small trace whose every number is known, for export-sqlite.py to
 * check the SQLite export and the example queries of docs/export.md against exact answers
 * (the committed real traces carry no API records, so they cannot check the joins):
 *   process 4242 ("python3 train.py", rank 0) on host "node1", threads 4242 "python3" and
 *   4250 "pt_autograd_0", device 0 "NVIDIA H200";
 *   kernels on stream 7: cutlass Kernel2 x2 (5000 ns), at::native reduce_kernel x3 (1000 ns),
 *   triton_poi_fused_add_0 x1 (2000 ns), each launched by an API call whose correlation id it
 *   carries (cudaLaunchKernel, runtime; the triton one cuLaunchKernel, driver), 500 ns
 *   before the kernel starts;
 *   copies: H2D pageable 1 MiB in 100 us, H2D pinned 2 MiB in 100 us, D2H to pinned 1 MiB in
 *   50 us (cudaMemcpyAsync); a 4096-byte memset (cudaMemsetAsync);
 *   NVTX on 4242: "step" [0, 100 us) holding "forward" [10, 40 us), "step" [100, 200 us), a
 *   mark "checkpoint" at 150 us; syncs: stream 7 (the collector's, by OS tid 4242, with the
 *   correlation id of its cudaStreamSynchronize API record) and device;
 *   API and NVTX records name thread 4242 as CUPTI does (the low 32 bits of its pthread id,
 *   CUPTI_TID): the stream sync pairs the two ids, as in a real trace;
 *   device memory: 1 MiB allocated at 1 us, freed at 190 us.
 * Times above are after the run's start (1 s on the trace clock). Usage: export-gen FILE
 */
#include <stdio.h>
#include <string.h>

#include <apx/format.h>

#include "base/banned.h"

#define T0 1000000000ull
#define PID 4242
/* CUPTI names the thread of API and NVTX records by the low 32 bits of its pthread_self() */
#define CUPTI_TID 0x9c2b4740u

static struct apx_writer *w;
static uint64_t corr = 100;

static void api(uint64_t start, const char *name, int driver)
{
	struct apx_rec a;
	uint32_t id;

	apx_rec_init(&a, APX_REC_API);
	apx_writer_intern(w, name, strlen(name), &id);
	a.v[APX_API_START_NS] = T0 + start;
	a.v[APX_API_END_NS] = T0 + start + 300;
	a.v[APX_API_DOMAIN] = driver ? APX_API_DRIVER : APX_API_RUNTIME;
	a.v[APX_API_CORRELATION] = ++corr;
	a.v[APX_API_TID] = CUPTI_TID;
	a.v[APX_API_NAME] = id;
	apx_writer_add(w, &a);
}

static void kernel(uint64_t start, uint64_t dur, const char *name, int driver)
{
	struct apx_rec k;
	uint32_t id;

	api(start - 500, driver ? "cuLaunchKernel" : "cudaLaunchKernel", driver);
	apx_rec_init(&k, APX_REC_KERNEL);
	apx_writer_intern(w, name, strlen(name), &id);
	k.v[APX_KERNEL_START_NS] = T0 + start;
	k.v[APX_KERNEL_END_NS] = T0 + start + dur;
	k.v[APX_KERNEL_STREAM] = 7;
	k.v[APX_KERNEL_CORRELATION] = corr;
	k.v[APX_KERNEL_NAME] = id;
	k.v[APX_KERNEL_GRID_X] = 128;
	k.v[APX_KERNEL_GRID_Y] = 1;
	k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_BLOCK_X] = 256;
	k.v[APX_KERNEL_BLOCK_Y] = 1;
	k.v[APX_KERNEL_BLOCK_Z] = 1;
	k.v[APX_KERNEL_REGISTERS] = 32;
	k.v[APX_KERNEL_DYNAMIC_SMEM] = 4096;
	apx_writer_add(w, &k);
}

static void copy(uint64_t start, uint64_t dur, unsigned kind, unsigned src, unsigned dst,
		 uint64_t bytes)
{
	struct apx_rec c;

	api(start - 500, "cudaMemcpyAsync", 0);
	apx_rec_init(&c, APX_REC_MEMCPY);
	c.v[APX_MEMCPY_START_NS] = T0 + start;
	c.v[APX_MEMCPY_END_NS] = T0 + start + dur;
	c.v[APX_MEMCPY_STREAM] = 7;
	c.v[APX_MEMCPY_CORRELATION] = corr;
	c.v[APX_MEMCPY_COPY_KIND] = kind;
	c.v[APX_MEMCPY_SRC_KIND] = src;
	c.v[APX_MEMCPY_DST_KIND] = dst;
	c.v[APX_MEMCPY_BYTES] = bytes;
	c.v[APX_MEMCPY_FLAGS] = 1;
	apx_writer_add(w, &c);
}

static void marker(uint64_t start, uint64_t end, const char *name)
{
	struct apx_rec m;
	uint32_t id;

	apx_rec_init(&m, APX_REC_MARKER);
	apx_writer_intern(w, name, strlen(name), &id);
	m.v[APX_MARKER_START_NS] = T0 + start;
	m.v[APX_MARKER_END_NS] = T0 + end;
	m.v[APX_MARKER_NAME] = id;
	m.v[APX_MARKER_TID] = CUPTI_TID;
	m.v[APX_MARKER_KIND] = start == end ? APX_MARKER_INSTANT : APX_MARKER_RANGE;
	apx_writer_add(w, &m);
}

static void thread(uint64_t tid, const char *name)
{
	struct apx_rec t;

	apx_rec_init(&t, APX_REC_THREAD);
	t.v[APX_THREAD_PID] = PID;
	t.v[APX_THREAD_TID] = tid;
	apx_rec_set_str(&t, APX_THREAD_NAME, name);
	apx_writer_add(w, &t);
}

static void sync_(uint64_t start, uint64_t end, unsigned kind, uint64_t stream)
{
	struct apx_rec y;

	apx_rec_init(&y, APX_REC_SYNC);
	y.v[APX_SYNC_START_NS] = T0 + start;
	y.v[APX_SYNC_END_NS] = T0 + end;
	y.v[APX_SYNC_KIND] = kind;
	y.v[APX_SYNC_STREAM] = stream;
	y.v[APX_SYNC_TID] = PID;
	y.v[APX_SYNC_CORRELATION] = kind == APX_SYNC_KIND_STREAM ? corr : 0;
	apx_writer_add(w, &y);
}

static void memory(uint64_t ts, unsigned op)
{
	struct apx_rec m;

	apx_rec_init(&m, APX_REC_MEMORY);
	m.v[APX_MEMORY_TS_NS] = T0 + ts;
	m.v[APX_MEMORY_OP] = op;
	m.v[APX_MEMORY_ADDRESS] = 0x7f0000000000ull;
	m.v[APX_MEMORY_BYTES] = 1 << 20;
	m.v[APX_MEMORY_MEM_KIND] = APX_MEM_DEVICE;
	apx_writer_add(w, &m);
}

int main(int argc, char **argv)
{
	static const char kernel2[] =
		"_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE";
	static const char reduce[] = "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_"
				     "10NormTwoOpsIfffLb1EEEjfLi4ELi4EEEEEvT1_";
	static const uint8_t uuid[16] = { 0xc3, 0x97, 4, 0xc6, 0x15, 0x1c, 0xae, 0x1e,
					  0x5e, 0x5a, 0xac, 0x5c, 0xf5, 0xc9, 0x3c, 0xbf };
	struct apx_rec h, d;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: export-gen FILE\n");
		return 2;
	}
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(&h, APX_HEADER_PRODUCER_VERSION, "test");
	apx_rec_set_str(&h, APX_HEADER_HOSTNAME, "node1");
	apx_rec_set_bytes(&h, APX_HEADER_ARGV, "python3\0train.py", 17);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = PID;
	h.v[APX_HEADER_PPID] = 1;
	h.v[APX_HEADER_START_NS] = T0;
	apx_rec_set_i64(&h, APX_HEADER_RANK, 0);
	if ((r = apx_writer_open(argv[1], 1, &h, NULL, &w)) < 0) {
		fprintf(stderr, "export-gen: cannot write %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H200");
	apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, sizeof(uuid));
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_SM_COUNT] = 132;
	d.v[APX_DEVICE_MEM_BYTES] = 150000000000ull;
	d.v[APX_DEVICE_L2_BYTES] = 60u << 20;
	apx_writer_add(w, &d);
	thread(PID, "python3");
	thread(4250, "pt_autograd_0");
	memory(1000, APX_MEMOP_ALLOC);
	marker(0, 100000, "step");
	marker(10000, 40000, "forward");
	copy(2000, 100000, APX_COPY_H2D, APX_MEM_PAGEABLE, APX_MEM_DEVICE, 1 << 20);
	kernel(11000, 5000, kernel2, 0);
	kernel(17000, 5000, kernel2, 0);
	kernel(23000, 1000, reduce, 0);
	kernel(25000, 1000, reduce, 0);
	kernel(27000, 1000, reduce, 0);
	kernel(30000, 2000, "triton_poi_fused_add_0", 1);
	api(33000, "cudaStreamSynchronize", 0);	/* its sync (OS tid) pairs the two ids */
	sync_(33000, 35000, APX_SYNC_KIND_STREAM, 7);
	marker(100000, 200000, "step");
	copy(110000, 100000, APX_COPY_H2D, APX_MEM_PINNED, APX_MEM_DEVICE, 2 << 20);
	copy(120000, 50000, APX_COPY_D2H, APX_MEM_DEVICE, APX_MEM_PINNED, 1 << 20);
	marker(150000, 150000, "checkpoint");
	{
		struct apx_rec s;

		api(160000, "cudaMemsetAsync", 0);
		apx_rec_init(&s, APX_REC_MEMSET);
		s.v[APX_MEMSET_START_NS] = T0 + 161000;
		s.v[APX_MEMSET_END_NS] = T0 + 162000;
		s.v[APX_MEMSET_STREAM] = 7;
		s.v[APX_MEMSET_CORRELATION] = corr;
		s.v[APX_MEMSET_BYTES] = 4096;
		apx_writer_add(w, &s);
	}
	sync_(180000, 185000, APX_SYNC_KIND_DEVICE, 0);
	memory(190000, APX_MEMOP_FREE);
	return apx_writer_close(w, T0 + 200000, 0) < 0;
}
