/*
 * stacks-gen.c - writes a small trace with Python stacks whose every number is known, for the
 * flame-graph screenshot test (report-flame.py) and the exports' stack checks
 * (export-stacks.py): process 4242 ("python3 train.py") on host "node1", device 0 "NVIDIA
 * H200", threads 4242 "python3" and 4250 "pt_autograd_0".
 *   frames: 1 /home/u/train.py:10 train, 2 /home/u/model.py:41 Model.forward,
 *   3 /usr/lib/python3/dist-packages/torch/nn/functional.py:200 linear (a library frame),
 *   4 /home/u/model.py:50 loss_fn, 5 /home/u/data.py:12 tokenize, 6 /home/u/evil.py:7 with a
 *   name full of markup and quotes, 7 /home/u/model.py:60 a 300-byte function name;
 *   stacks (innermost first): 1 [3 2 1], 2 [4 1], 3 [1], 4 [5 1], 5 [6 1], 6 [7 1];
 *   a stack naming undefined frame 77 (dropped: 1 undefined_frame).
 *   kernels on stream 7, each launched by a cudaLaunchKernel call 500 ns before it: 10 gemm
 *   of 100 us (stack 1), 5 loss of 300 us (stack 2), 2 step of 50 us (stack 3), 1 of 20 us
 *   (stack 5), 1 of 30 us (stack 6), 1 of 10 us without a stack: 2,660 us in all, 2,650 us
 *   under stacks;
 *   a pageable 1 MiB H2D copy of 100 us (stack 3), a 4 kB memset (stack 1), a device sync
 *   of 500 us (stack 3);
 *   samples (period 5 ms): thread 4242 20 running in stack 4, 10 waiting in futex (202) in
 *   stack 3, one naming undefined stack 99 (counted as no stack); thread 4250 5 running
 *   without a stack.
 * Times are after the run's start (1 s on the trace clock). Usage: stacks-gen FILE
 */
#include <stdio.h>
#include <string.h>

#include <apx/format.h>

#include "base/banned.h"

#define T0 1000000000ull
#define PID 4242
#define US 1000ull

static struct apx_writer *w;
static uint64_t corr = 100;

static uint32_t str(const char *s)
{
	uint32_t id = 0;

	apx_writer_intern(w, s, strlen(s), &id);
	return id;
}

static void frame(uint64_t id, const char *file, const char *func, uint64_t line)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_FRAME);
	r.v[APX_FRAME_ID] = id;
	r.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
	r.v[APX_FRAME_FILE] = str(file);
	r.v[APX_FRAME_FUNC] = str(func);
	r.v[APX_FRAME_LINE] = line;
	apx_writer_add(w, &r);
}

static void stack(uint64_t id, const uint8_t *frames, size_t n)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_STACK);
	r.v[APX_STACK_ID] = id;
	apx_rec_set_bytes(&r, APX_STACK_FRAMES, frames, n);	/* ids < 128: one byte each */
	apx_writer_add(w, &r);
}

static void api(uint64_t start, const char *name)
{
	struct apx_rec a;

	apx_rec_init(&a, APX_REC_API);
	a.v[APX_API_START_NS] = T0 + start;
	a.v[APX_API_END_NS] = T0 + start + 300;
	a.v[APX_API_DOMAIN] = APX_API_RUNTIME;
	a.v[APX_API_CORRELATION] = ++corr;
	a.v[APX_API_TID] = PID;
	a.v[APX_API_NAME] = str(name);
	apx_writer_add(w, &a);
}

static uint64_t kernel(uint64_t start, uint64_t dur, const char *name, uint64_t stk)
{
	struct apx_rec k;

	api(start - 500, "cudaLaunchKernel");
	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_START_NS] = T0 + start;
	k.v[APX_KERNEL_END_NS] = T0 + start + dur;
	k.v[APX_KERNEL_STREAM] = 7;
	k.v[APX_KERNEL_CORRELATION] = corr;
	k.v[APX_KERNEL_NAME] = str(name);
	k.v[APX_KERNEL_GRID_X] = k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_BLOCK_X] = k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 128;
	k.v[APX_KERNEL_STACK] = stk;
	apx_writer_add(w, &k);
	return start + dur + 10 * US;
}

static void sample(uint64_t ts, uint64_t tid, uint64_t stk, unsigned state, int64_t sys)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_SAMPLE);
	r.v[APX_SAMPLE_TS_NS] = T0 + ts;
	r.v[APX_SAMPLE_TID] = tid;
	r.v[APX_SAMPLE_STACK] = stk;
	r.v[APX_SAMPLE_STATE] = state;
	apx_rec_set_i64(&r, APX_SAMPLE_SYSCALL, sys);
	r.v[APX_SAMPLE_CPU_NS] = ts / 2;
	r.v[APX_SAMPLE_PERIOD_NS] = 5000 * US;
	apx_writer_add(w, &r);
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

int main(int argc, char **argv)
{
	static const uint8_t s1[] = { 3, 2, 1 }, s2[] = { 4, 1 }, s3[] = { 1 }, s4[] = { 5, 1 },
			     s5[] = { 6, 1 }, s6[] = { 7, 1 }, bad[] = { 77, 1 };
	char longname[301];
	struct apx_rec h, d, r;
	uint64_t ts = 1000 * US;
	int e;

	if (argc != 2) {
		fprintf(stderr, "usage: stacks-gen FILE\n");
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
	if ((e = apx_writer_open(argv[1], 1, &h, NULL, &w)) < 0) {
		fprintf(stderr, "stacks-gen: cannot write %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H200");
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_SM_COUNT] = 132;
	d.v[APX_DEVICE_MEM_BYTES] = 150000000000ull;
	apx_writer_add(w, &d);
	thread(PID, "python3");
	thread(4250, "pt_autograd_0");
	memset(longname, 'f', 300);
	memcpy(longname, "very_long_", 10);
	longname[300] = 0;
	frame(1, "/home/u/train.py", "train", 10);
	frame(2, "/home/u/model.py", "Model.forward", 41);
	frame(3, "/usr/lib/python3/dist-packages/torch/nn/functional.py", "linear", 200);
	frame(4, "/home/u/model.py", "loss_fn", 50);
	frame(5, "/home/u/data.py", "tokenize", 12);
	frame(6, "/home/u/evil.py", "<script>alert('x')</script> & \"q\"", 7);
	frame(7, "/home/u/model.py", longname, 60);
	stack(1, s1, sizeof(s1));
	stack(2, s2, sizeof(s2));
	stack(3, s3, sizeof(s3));
	stack(4, s4, sizeof(s4));
	stack(5, s5, sizeof(s5));
	stack(6, s6, sizeof(s6));
	stack(8, bad, sizeof(bad));
	for (int i = 0; i < 10; i++)
		ts = kernel(ts, 100 * US, "gemm", 1);
	for (int i = 0; i < 5; i++)
		ts = kernel(ts, 300 * US, "loss", 2);
	for (int i = 0; i < 2; i++)
		ts = kernel(ts, 50 * US, "step", 3);
	ts = kernel(ts, 20 * US, "evil", 5);
	ts = kernel(ts, 30 * US, "long", 6);
	ts = kernel(ts, 10 * US, "nostack", 0);
	api(ts - 500, "cudaMemcpyAsync");
	apx_rec_init(&r, APX_REC_MEMCPY);
	r.v[APX_MEMCPY_START_NS] = T0 + ts;
	r.v[APX_MEMCPY_END_NS] = T0 + ts + 100 * US;
	r.v[APX_MEMCPY_STREAM] = 7;
	r.v[APX_MEMCPY_CORRELATION] = corr;
	r.v[APX_MEMCPY_COPY_KIND] = APX_COPY_H2D;
	r.v[APX_MEMCPY_SRC_KIND] = APX_MEM_PAGEABLE;
	r.v[APX_MEMCPY_DST_KIND] = APX_MEM_DEVICE;
	r.v[APX_MEMCPY_BYTES] = 1 << 20;
	r.v[APX_MEMCPY_STACK] = 3;
	apx_writer_add(w, &r);
	ts += 200 * US;
	api(ts - 500, "cudaMemsetAsync");
	apx_rec_init(&r, APX_REC_MEMSET);
	r.v[APX_MEMSET_START_NS] = T0 + ts;
	r.v[APX_MEMSET_END_NS] = T0 + ts + 5 * US;
	r.v[APX_MEMSET_STREAM] = 7;
	r.v[APX_MEMSET_CORRELATION] = corr;
	r.v[APX_MEMSET_BYTES] = 4096;
	r.v[APX_MEMSET_STACK] = 1;
	apx_writer_add(w, &r);
	ts += 100 * US;
	apx_rec_init(&r, APX_REC_SYNC);
	r.v[APX_SYNC_START_NS] = T0 + ts;
	r.v[APX_SYNC_END_NS] = T0 + ts + 500 * US;
	r.v[APX_SYNC_KIND] = APX_SYNC_KIND_DEVICE;
	r.v[APX_SYNC_TID] = PID;
	r.v[APX_SYNC_STACK] = 3;
	apx_writer_add(w, &r);
	for (int i = 0; i < 20; i++)
		sample(1000 * US + (uint64_t)i * 5000 * US, PID, 4, APX_TSTATE_RUNNING, -1);
	for (int i = 0; i < 10; i++)
		sample(101000 * US + (uint64_t)i * 5000 * US, PID, 3, APX_TSTATE_SLEEPING, 202);
	sample(151000 * US, PID, 99, APX_TSTATE_RUNNING, -1);
	for (int i = 0; i < 5; i++)
		sample(1000 * US + (uint64_t)i * 5000 * US, 4250, 0, APX_TSTATE_RUNNING, -1);
	return apx_writer_close(w, T0 + 160000 * US, 0) < 0;
}
