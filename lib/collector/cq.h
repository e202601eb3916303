/*
 * cq.h - a bounded multi-producer multi-consumer queue of buffer indices (D. Vyukov's
 * sequence-numbered ring). Used by the collector for its free-buffer list and its full-buffer
 * hand-off: CUPTI threads pop free buffers and push full ones, the writer thread does the
 * opposite. Push and pop take no lock, allocate nothing and make no system call; the ring is
 * allocated once by apx_cq_init() at injection time.
 */
#ifndef APX_COLLECTOR_CQ_H
#define APX_COLLECTOR_CQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct apx_cq_cell {
	_Atomic size_t seq;
	uint32_t val;
};

struct apx_cq {
	struct apx_cq_cell *cells;
	size_t mask;
	_Atomic size_t head;	/* next push */
	_Atomic size_t tail;	/* next pop */
};

/* cap is rounded up to a power of two. 0 or -ENOMEM. */
int apx_cq_init(struct apx_cq *q, size_t cap);
void apx_cq_release(struct apx_cq *q);
/* false when full (push) or empty (pop). Any thread. */
bool apx_cq_push(struct apx_cq *q, uint32_t v);
bool apx_cq_pop(struct apx_cq *q, uint32_t *ret_v);

#endif
