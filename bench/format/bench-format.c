/*
 * bench-format.c - `bench/format`: writes N kernel records (default 10 million) shaped like a
 * PyTorch training loop (a repeating sequence of 64 kernels with their own launch configs,
 * two streams, jittered durations and gaps), then reads them back and aggregates GPU time per
 * kernel name, with 1 thread and with 2. Prints bytes per record, write rate and read rates,
 * side by side with the format's targets. Usage: bench-format [RECORDS] [FILE]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>

#include "base/parse.h"

#include "base/banned.h"

#define NKERNELS 64
#define NJITTER 4096

struct kcfg {
	uint32_t name_id;
	uint32_t grid[3], block[3], regs, ssmem, dsmem, stream;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int write_trace(const char *path, uint64_t n, double *ret_s)
{
	static const char *const ops[] = { "ampere_sgemm_128x64_nn", "vectorized_elementwise_kernel",
					   "cudnn::bn_fw_tr_1C11_kernel", "reduce_kernel",
					   "softmax_warp_forward", "at::native::unrolled_elementwise" };
	struct kcfg cfg[NKERNELS];
	uint32_t dur[NJITTER], gap[NJITTER];
	struct apx_writer *w;
	struct apx_rec h, k;
	uint64_t seed = 0x9e3779b97f4a7c15ull, t = 1000000000ull, t0;
	int r;

	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "bench-format");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	r = apx_writer_open(path, 1, &h, NULL, &w);
	if (r < 0)
		return r;
	for (int i = 0; i < NKERNELS; i++) {
		char name[128];
		int len = snprintf(name, sizeof(name), "void %s<float, %d>(at::TensorIterator&)",
				   ops[i % 6], i);

		r = apx_writer_intern(w, name, (size_t)len, &cfg[i].name_id);
		if (r < 0)
			return r;
		cfg[i].grid[0] = 1u << (rng(&seed) % 14);
		cfg[i].grid[1] = i % 5 ? 1 : 8;
		cfg[i].grid[2] = 1;
		cfg[i].block[0] = 32u << (rng(&seed) % 6);
		cfg[i].block[1] = i % 7 ? 1 : 4;
		cfg[i].block[2] = 1;
		cfg[i].regs = 16 + (uint32_t)(rng(&seed) % 200);
		cfg[i].ssmem = i % 3 ? 0 : (uint32_t)(rng(&seed) % 49152);
		cfg[i].dsmem = i % 4 ? 0 : 1024u << (rng(&seed) % 5);
		cfg[i].stream = i % 9 ? 7 : 13;
	}
	for (int i = 0; i < NJITTER; i++) {
		dur[i] = 2000 + (uint32_t)(rng(&seed) % 200000);	/* 2 us to 200 us */
		gap[i] = 500 + (uint32_t)(rng(&seed) % 8000);
	}
	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_DEVICE] = 0;
	k.v[APX_KERNEL_CONTEXT] = 1;
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		const struct kcfg *c = &cfg[i % NKERNELS];

		k.v[APX_KERNEL_START_NS] = t;
		k.v[APX_KERNEL_END_NS] = t + dur[i % NJITTER];
		t += dur[i % NJITTER] + gap[(i * 7) % NJITTER];
		k.v[APX_KERNEL_STREAM] = c->stream;
		k.v[APX_KERNEL_CORRELATION] = 100 + i * 2;
		k.v[APX_KERNEL_NAME] = c->name_id;
		k.v[APX_KERNEL_GRID_X] = c->grid[0];
		k.v[APX_KERNEL_GRID_Y] = c->grid[1];
		k.v[APX_KERNEL_GRID_Z] = c->grid[2];
		k.v[APX_KERNEL_BLOCK_X] = c->block[0];
		k.v[APX_KERNEL_BLOCK_Y] = c->block[1];
		k.v[APX_KERNEL_BLOCK_Z] = c->block[2];
		k.v[APX_KERNEL_REGISTERS] = c->regs;
		k.v[APX_KERNEL_STATIC_SMEM] = c->ssmem;
		k.v[APX_KERNEL_DYNAMIC_SMEM] = c->dsmem;
		r = apx_writer_add(w, &k);
		if (r < 0) {
			apx_writer_abandon(w);
			return r;
		}
	}
	r = apx_writer_close(w, t, 0);
	*ret_s = (double)(now_ns() - t0) / 1e9;
	return r;
}

struct agg {
	const struct apx_reader *r;
	size_t first, step;
	uint64_t records, busy_ns[1024], count[1024];
	int err;
};

static void *aggregate(void *arg)
{
	struct agg *a = arg;

	for (size_t c = a->first; c < apx_reader_chunk_count(a->r); c += a->step) {
		struct apx_chunk_iter it;
		int k;

		if (apx_reader_chunk(a->r, c)->type != APX_REC_KERNEL)
			continue;
		if (apx_chunk_iter_init(&it, a->r, c, NULL) < 0) {
			a->err = 1;
			continue;
		}
		while ((k = apx_chunk_iter_next(&it, NULL)) > 0) {
			uint64_t id = it.rec.v[APX_KERNEL_NAME] & 1023;

			a->busy_ns[id] += it.rec.v[APX_KERNEL_END_NS] - it.rec.v[APX_KERNEL_START_NS];
			a->count[id]++;
			a->records++;
		}
		if (k < 0)
			a->err = 1;
	}
	return NULL;
}

/* Open (validating every CRC) and aggregate with nthreads; returns seconds. */
static double read_trace(const char *path, int nthreads, uint64_t *ret_records, uint64_t *ret_busy)
{
	struct agg a[8];
	pthread_t th[8];
	struct apx_reader *r;
	struct apx_diag d;
	uint64_t t0 = now_ns(), busy = 0, recs = 0;

	if (apx_reader_open(path, &r, &d) < 0 || apx_reader_status(r) != APX_READ_COMPLETE) {
		fprintf(stderr, "bench-format: %s: %s\n", path, d.msg);
		exit(1);
	}
	apx_reader_string(r, 1, NULL);	/* load the string table before threads share r */
	for (int i = 0; i < nthreads; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].r = r;
		a[i].first = (size_t)i;
		a[i].step = (size_t)nthreads;
		pthread_create(&th[i], NULL, aggregate, &a[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (a[i].err) {
			fprintf(stderr, "bench-format: decode error\n");
			exit(1);
		}
		recs += a[i].records;
		for (int j = 0; j < 1024; j++)
			busy += a[i].busy_ns[j];
	}
	apx_reader_close(r);
	*ret_records = recs;
	*ret_busy = busy;
	return (double)(now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t n = 10000000, recs1, recs2, busy1, busy2;
	const char *path = argc > 2 ? argv[2] : "/tmp/apx-bench-format.apx";
	double ws, rs1, rs2, bpr;
	FILE *f;
	long size;
	int r;

	if (argc > 1 && apx_parse_u64(argv[1], 1000000000, &n) < 0) {
		fprintf(stderr, "usage: bench-format [RECORDS] [FILE]\n");
		return 2;
	}
	r = write_trace(path, n, &ws);
	if (r < 0) {
		fprintf(stderr, "bench-format: cannot write %s: %s\n", path, strerror(-r));
		return 1;
	}
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0)
		return 1;
	fclose(f);
	rs1 = read_trace(path, 1, &recs1, &busy1);
	rs2 = read_trace(path, 2, &recs2, &busy2);
	if (recs1 != n || recs2 != n || busy1 != busy2) {
		fprintf(stderr, "bench-format: read back %llu/%llu records of %llu\n",
			(unsigned long long)recs1, (unsigned long long)recs2, (unsigned long long)n);
		return 1;
	}
	bpr = (double)size / (double)n;
	printf("bench/format: %llu kernel records, file %.1f MB (%s)\n", (unsigned long long)n,
	       (double)size / 1e6, path);
	printf("  %-34s %12s %12s %8s\n", "measure", "value", "target", "met");
	printf("  %-34s %12.2f %12s %8s\n", "bytes per kernel record", bpr, "<= 32",
	       bpr <= 32 ? "yes" : "NO");
	printf("  %-34s %12.1f %12s %8s\n", "write, M records/s", (double)n / ws / 1e6, ">= 20",
	       (double)n / ws / 1e6 >= 20 ? "yes" : "NO");
	printf("  %-34s %12.1f %12s %8s\n", "read+aggregate 1 thread, M rec/s",
	       (double)n / rs1 / 1e6, "", "");
	printf("  %-34s %12.1f %12s %8s\n", "read+aggregate 2 threads, M rec/s",
	       (double)n / rs2 / 1e6, ">= 50", (double)n / rs2 / 1e6 >= 50 ? "yes" : "NO");
	printf("  %-34s %12.1f %12s\n", "torch.profiler JSON, B/GPU event", 3000.0, "(for scale)");
	unlink(path);
	return 0;
}
