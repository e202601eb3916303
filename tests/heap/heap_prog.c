/*
 * heap_prog.c - the program test_heap.py runs under libapx-heap.so and the stand-in collector
 * (heap_stub.c): it allocates known amounts at known functions (linked with -rdynamic, so the
 * sampler's dladdr names them) and leaks some, so that the heap view's estimates can be held
 * against the truth: site_a 64 MiB in 4 KiB blocks (freed), site_b 32 MiB in 1 MiB blocks
 * (calloc, freed), site_early 16 MiB in 8 KiB blocks (leaked in phase 1), then after a pause
 * of 1 s site_leak 32 MiB in 16 KiB blocks (leaked in phase 2), a fork whose child allocates
 * and exits, and 8 threads allocating 16 MiB each in sizes 64 B .. 64 KiB at site_thread
 * (freed). Prints "site NAME BYTES BLOCK" per site (BLOCK 0: the thread's mixed sizes).
 * Built without sanitizers.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/banned.h"

#define MIB (1024u * 1024u)
#define THREADS 8
#define THREAD_BYTES (16u * MIB)

/* exported (-rdynamic) so that dladdr names them */
void site_a(size_t total, size_t n);
void site_b(size_t total, size_t n);
void site_early(size_t total, size_t n);
void site_leak(size_t total, size_t n);
void site_thread(void);

static void *volatile sink;	/* keeps the compiler from dropping allocations */

static void touch(void *p, size_t n)
{
	if (p && n)
		((volatile char *)p)[n - 1] = 1;
	sink = p;
}

/* Allocate total bytes in blocks of n and free them (keep != 0: leak them). */
__attribute__((noinline)) void site_a(size_t total, size_t n)
{
	static void *v[1u << 16];	/* static: no allocation of its own at this site */
	size_t k = total / n < (1u << 16) ? total / n : (1u << 16);

	for (size_t i = 0; i < k; i++)
		touch(v[i] = malloc(n), n);
	for (size_t i = 0; i < k; i++)
		free(v[i]);
}

__attribute__((noinline)) void site_b(size_t total, size_t n)
{
	for (size_t i = 0; i < total / n; i++) {
		void *p = calloc(1, n);

		touch(p, n);
		free(p);
	}
}

__attribute__((noinline)) void site_early(size_t total, size_t n)
{
	for (size_t i = 0; i < total / n; i++)
		touch(malloc(n), n);	/* leaked */
}

__attribute__((noinline)) void site_leak(size_t total, size_t n)
{
	for (size_t i = 0; i < total / n; i++)
		touch(malloc(n), n);	/* leaked */
}

/* 64 B .. 64 KiB, the same sequence in every thread; the bytes allocated */
__attribute__((noinline)) static size_t size_at(unsigned i)
{
	return (size_t)64 << (i % 11);
}

__attribute__((noinline)) void site_thread(void)
{
	size_t done = 0;
	void *keep[16] = { 0 };

	for (unsigned i = 0; done < THREAD_BYTES; i++) {
		size_t n = size_at(i);
		void *p;

		if (done + n > THREAD_BYTES)
			n = THREAD_BYTES - done;
		p = (i & 1) ? malloc(n) : realloc(NULL, n);
		touch(p, n);
		free(keep[i % 16]);
		keep[i % 16] = p;
		done += n;
	}
	for (unsigned i = 0; i < 16; i++)
		free(keep[i]);
}

static void *thread_main(void *arg)
{
	(void)arg;
	site_thread();
	return NULL;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	pid_t pid;
	int status = 0;

	(void)argc;
	(void)argv;
	/* phase 1: t ~ 0 s */
	site_a(64u * MIB, 4096);
	site_b(32u * MIB, MIB);
	site_early(16u * MIB, 8192);
	pause_ms(1000);
	/* phase 2: t ~ 1 s */
	site_leak(32u * MIB, 16384);
	pid = fork();
	if (pid == 0) {
		site_a(8u * MIB, 4096);
		site_early(1u * MIB, 8192);
		exit(0);	/* exit handlers run in the child too */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "heap_prog: the forked child failed (status %d)\n", status);
		return 1;
	}
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, thread_main, NULL)) {
			fprintf(stderr, "heap_prog: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pause_ms(300);
	printf("site site_a %u 4096\nsite site_b %u %u\nsite site_early %u 8192\n"
	       "site site_leak %u 16384\nsite site_thread %u 0\n", 64u * MIB, 32u * MIB, MIB,
	       16u * MIB, 32u * MIB, THREADS * THREAD_BYTES);
	return 0;
}
