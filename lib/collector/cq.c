/*
 * cq.c - the lock-free bounded queue of cq.h. Called from CUPTI's buffer callbacks (any
 * thread) and from the collector's writer thread. Each cell carries a sequence number: a
 * producer may fill cell i only when seq == pos, a consumer may empty it only when
 * seq == pos + 1; both claim their position with a compare-and-swap on head/tail.
 */
#include "collector/cq.h"

#include <errno.h>
#include <stdlib.h>

#include "base/banned.h"

int apx_cq_init(struct apx_cq *q, size_t cap)
{
	size_t n = 2;

	while (n < cap)
		n <<= 1;
	q->cells = calloc(n, sizeof(*q->cells));
	if (!q->cells)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&q->cells[i].seq, i, memory_order_relaxed);
	q->mask = n - 1;
	atomic_store(&q->head, 0);
	atomic_store(&q->tail, 0);
	return 0;
}

void apx_cq_release(struct apx_cq *q)
{
	free(q->cells);
	q->cells = NULL;
}

bool apx_cq_push(struct apx_cq *q, uint32_t v)
{
	size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);

	for (;;) {
		struct apx_cq_cell *c = &q->cells[pos & q->mask];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)pos;

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				c->val = v;
				atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
				return true;
			}
		} else if (dif < 0) {
			return false;
		} else {
			pos = atomic_load_explicit(&q->head, memory_order_relaxed);
		}
	}
}

bool apx_cq_pop(struct apx_cq *q, uint32_t *ret_v)
{
	size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);

	for (;;) {
		struct apx_cq_cell *c = &q->cells[pos & q->mask];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				*ret_v = c->val;
				atomic_store_explicit(&c->seq, pos + q->mask + 1,
						      memory_order_release);
				return true;
			}
		} else if (dif < 0) {
			return false;
		} else {
			pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
		}
	}
}
