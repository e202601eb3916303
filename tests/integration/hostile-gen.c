/*
 * hostile-gen.c - writes a valid trace whose values are hostile to the exports and the report's
 * emitters, for hostile-input.sh:
 *   a header whose start (2^62 ns) plus realtime offset (INT64_MAX) overflows int64;
 *   device 0 with every size at UINT64_MAX and a clock of UINT64_MAX / 2 kHz, device 1 with
 *   clock 0 (unknown);
 *   kernels named as CSV formulas ("=HYPERLINK(...)", "+1+1", "-2+3", "@SUM(A1)", "\tTAB",
 *   "\rCR"), not UTF-8 ("bad\xff\xfe\xc3"), with a NUL inside ("nul\0after"), and empty;
 *   threads 5 and 5 + 2^24 of one process (the same low 24 bits: nsys's globalTid packs 24
 *   bits), each with an API call and an NVTX range named with bytes that are not UTF-8 or
 *   hold a NUL.
 * Usage: hostile-gen FILE
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <apx/format.h>

#include "base/banned.h"

#define T0 (1ull << 62)
#define PID 4242

static struct apx_writer *w;

static uint32_t str(const char *s, size_t len)
{
	uint32_t id = 0;

	apx_writer_intern(w, s, len, &id);
	return id;
}

static void device(uint64_t id, uint64_t big, uint64_t clock_khz)
{
	struct apx_rec d;

	apx_rec_init(&d, APX_REC_DEVICE);
	d.v[APX_DEVICE_ID] = id;
	apx_rec_set_bytes(&d, APX_DEVICE_NAME, "GPU\xff\0x", 6);
	d.v[APX_DEVICE_SM_COUNT] = 132;
	d.v[APX_DEVICE_MEM_BYTES] = big;
	d.v[APX_DEVICE_L2_BYTES] = big;
	d.v[APX_DEVICE_MEM_BW_BPS] = big;
	d.v[APX_DEVICE_CLOCK_KHZ] = clock_khz;
	apx_writer_add(w, &d);
}

static void kernel(uint64_t at, uint32_t corr, uint64_t dev, const char *name, size_t len)
{
	struct apx_rec k;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_START_NS] = T0 + at;
	k.v[APX_KERNEL_END_NS] = T0 + at + 1000;
	k.v[APX_KERNEL_DEVICE] = dev;
	k.v[APX_KERNEL_STREAM] = 7;
	k.v[APX_KERNEL_CORRELATION] = corr;
	k.v[APX_KERNEL_NAME] = str(name, len);
	k.v[APX_KERNEL_GRID_X] = k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_BLOCK_X] = k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 32;
	apx_writer_add(w, &k);
}

static void thread(uint64_t tid, const char *name, size_t len, uint64_t at, uint32_t corr)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_THREAD);
	r.v[APX_THREAD_PID] = PID;
	r.v[APX_THREAD_TID] = tid;
	apx_rec_set_bytes(&r, APX_THREAD_NAME, name, len);
	apx_writer_add(w, &r);
	apx_rec_init(&r, APX_REC_API);
	r.v[APX_API_START_NS] = T0 + at;
	r.v[APX_API_END_NS] = T0 + at + 300;
	r.v[APX_API_DOMAIN] = APX_API_RUNTIME;
	r.v[APX_API_CORRELATION] = corr;
	r.v[APX_API_TID] = tid;
	r.v[APX_API_NAME] = str("cudaLaunchKernel", 16);
	apx_writer_add(w, &r);
	apx_rec_init(&r, APX_REC_MARKER);
	r.v[APX_MARKER_START_NS] = T0 + at;
	r.v[APX_MARKER_END_NS] = T0 + at + 2000;
	r.v[APX_MARKER_NAME] = str(name, len);
	r.v[APX_MARKER_TID] = tid;
	r.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
	apx_writer_add(w, &r);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *s;
		size_t len;
	} names[] = {
		{ "=HYPERLINK(\"http://x\",\"y\")", 26 }, { "+1+1", 4 }, { "-2+3", 4 },
		{ "@SUM(A1)", 8 }, { "\tTAB", 4 }, { "\rCR", 3 }, { "bad\xff\xfe\xc3", 6 },
		{ "nul\0after", 9 }, { "", 0 },
	};
	struct apx_rec h;

	if (argc != 2) {
		fprintf(stderr, "usage: hostile-gen FILE\n");
		return 2;
	}
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-test");
	apx_rec_set_str(&h, APX_HEADER_HOSTNAME, "node\xff");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = PID;
	h.v[APX_HEADER_START_NS] = T0;
	apx_rec_set_i64(&h, APX_HEADER_REALTIME_OFFSET_NS, INT64_MAX);
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	if (apx_writer_open(argv[1], 1, &h, NULL, &w) < 0) {
		fprintf(stderr, "hostile-gen: cannot create %s\n", argv[1]);
		return 1;
	}
	device(0, UINT64_MAX, UINT64_MAX / 2);
	device(1, 0, 0);
	thread(5, "worker\xff", 7, 100, 1);
	thread(5 + (1u << 24), "w\0two", 5, 200, 2);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		kernel(1000 + i * 2000, (uint32_t)(i < 2 ? i + 1 : 0), i & 1, names[i].s,
		       names[i].len);
	return apx_writer_close(w, T0 + 100000, 0) < 0;
}
