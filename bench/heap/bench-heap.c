/*
 * bench-heap.c - the cost of libapx-heap.so (apx analyze --heap-sampling-bytes) on a
 * malloc-heavy loop: each operation is one malloc of a size drawn from a fixed mix (70 % 16-256
 * B, 25 % 256 B-4 KiB, 5 % 4-64 KiB) and one free of the block allocated 1024 operations
 * before, on THREADS threads at once. When libapx-heap.so is preloaded, a thread of this
 * program takes its samples every 10 ms (apx_heap_take, as the collector's writer does, without
 * writing them). Prints one line: ns per operation (malloc + free; each thread's CPU time,
 * CLOCK_THREAD_CPUTIME_ID, so that other processes on the machine weigh less), the samples and
 * frees the library made. Run by bench/heap/run.py, interleaved with and without the library;
 * not by ctest.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/heap/heap.h"

#include "base/banned.h"

#define LIVE 1024
#define SIZES 4096

static size_t sizes[SIZES];
static uint64_t ops_per_thread = 4000000;
static _Atomic int stop;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	void **live = calloc(LIVE, sizeof(*live));
	uint64_t *ns = arg, t0;

	for (unsigned i = 0; i < LIVE; i++)	/* warm: the steady state has LIVE blocks */
		live[i] = malloc(sizes[i % SIZES]);
	t0 = cpu_ns();
	for (uint64_t i = 0; i < ops_per_thread; i++) {
		void *p = malloc(sizes[i % SIZES]);

		((volatile char *)p)[0] = 1;
		free(live[i % LIVE]);
		live[i % LIVE] = p;
	}
	*ns = cpu_ns() - t0;
	for (unsigned i = 0; i < LIVE; i++)
		free(live[i]);
	free(live);
	return NULL;
}

static void *taker(void *arg)
{
	apx_heap_take_fn *take = arg;
	struct apx_heap_event *buf = calloc(256, sizeof(*buf));
	struct timespec ms10 = { 0, 10000000 };

	while (!atomic_load(&stop)) {
		while (take(buf, 256) == 256)
			;
		nanosleep(&ms10, NULL);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 1;
	apx_heap_attach_fn *attach = (apx_heap_attach_fn *)dlsym(RTLD_DEFAULT, "apx_heap_attach");
	apx_heap_stats_fn *stats = (apx_heap_stats_fn *)dlsym(RTLD_DEFAULT, "apx_heap_stats");
	pthread_t th[64], tk;
	uint64_t ns[64] = { 0 }, sum = 0, x = 88172645463325252ull;
	struct apx_heap_stats st = { 0 };

	if (threads < 1 || threads > 64)
		threads = 1;
	if (argc > 2)
		ops_per_thread = strtoull(argv[2], NULL, 10);
	for (unsigned i = 0; i < SIZES; i++) {	/* xorshift: the same mix every run */
		unsigned r;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (unsigned)(x % 100);
		sizes[i] = r < 70 ? 16 + x % 241 : r < 95 ? 256 + x % 3841 : 4096 + x % 61441;
	}
	if (attach && attach(APX_HS_ABI, NULL) == 0)
		pthread_create(&tk, NULL, taker, (void *)dlsym(RTLD_DEFAULT, "apx_heap_take"));
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &ns[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		sum += ns[i];
	}
	if (attach) {
		atomic_store(&stop, 1);
		pthread_join(tk, NULL);
	}
	if (stats)
		stats(&st);
	printf("ns_per_op %.3f samples %llu frees %llu lost %llu\n",
	       (double)sum / (double)(ops_per_thread * (uint64_t)threads),
	       (unsigned long long)st.samples, (unsigned long long)st.frees,
	       (unsigned long long)st.lost);
	return 0;
}
