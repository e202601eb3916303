/*
 * test_cq.c - unit test of the collector's lock-free buffer queue (lib/collector/cq.c), which
 * needs no GPU: 4 producer and 4 consumer threads move 2,000,000 values through a queue of 16
 * cells (the pool's size class); every value must come out exactly once, full and empty
 * must be reported rather than blocking, and the capacity must round up to a power of two.
 * Run by ctest (label unit).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/cq.h"

#include "base/banned.h"

#define PRODUCERS 4
#define CONSUMERS 4
#define PER_PRODUCER 500000u

static struct apx_cq q;
static _Atomic uint32_t popped_total;
static _Atomic uint8_t seen[PRODUCERS * PER_PRODUCER];

static void *producer(void *arg)
{
	uint32_t base = (uint32_t)(uintptr_t)arg * PER_PRODUCER;

	for (uint32_t i = 0; i < PER_PRODUCER; i++)
		while (!apx_cq_push(&q, base + i))
			sched_yield();	/* full: let a consumer run (8 threads may share 2 CPUs) */
	return NULL;
}

static void *consumer(void *arg)
{
	uint32_t v;

	(void)arg;
	while (atomic_load(&popped_total) < PRODUCERS * PER_PRODUCER) {
		if (!apx_cq_pop(&q, &v)) {
			sched_yield();	/* empty: let a producer run */
			continue;
		}
		if (atomic_fetch_add(&seen[v], 1) != 0) {
			fprintf(stderr, "FAIL: value %u popped twice\n", v);
			exit(1);
		}
		atomic_fetch_add(&popped_total, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	uint32_t v;

	if (apx_cq_init(&q, 3) < 0 || q.mask != 3) {
		fprintf(stderr, "FAIL: capacity 3 should round up to 4\n");
		return 1;
	}
	for (uint32_t i = 0; i < 4; i++)
		if (!apx_cq_push(&q, i)) {
			fprintf(stderr, "FAIL: push %u into an empty queue of 4\n", i);
			return 1;
		}
	if (apx_cq_push(&q, 9)) {
		fprintf(stderr, "FAIL: push into a full queue succeeded\n");
		return 1;
	}
	for (uint32_t i = 0; i < 4; i++)
		if (!apx_cq_pop(&q, &v) || v != i) {
			fprintf(stderr, "FAIL: pop %u gave %u (FIFO order)\n", i, v);
			return 1;
		}
	if (apx_cq_pop(&q, &v)) {
		fprintf(stderr, "FAIL: pop from an empty queue succeeded\n");
		return 1;
	}
	apx_cq_release(&q);

	if (apx_cq_init(&q, 16) < 0)
		return 1;
	for (uintptr_t i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consumer, NULL);
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		pthread_create(&p[i], NULL, producer, (void *)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	for (uint32_t i = 0; i < PRODUCERS * PER_PRODUCER; i++)
		if (seen[i] != 1) {
			fprintf(stderr, "FAIL: value %u seen %u times\n", i, (unsigned)seen[i]);
			return 1;
		}
	apx_cq_release(&q);
	printf("ok: cq moved %u values through 16 cells with %d producers and %d consumers\n",
	       PRODUCERS * PER_PRODUCER, PRODUCERS, CONSUMERS);
	return 0;
}
