/*
 * ring.c - the collector's typed event ring: application threads (API and resource callbacks)
 * and the start-up thread put host synchronizations, configuration events and degraded
 * features into it; the writer thread drains it into .apx records (encode.c). Producers claim
 * a slot with one fetch_add and publish it with a sequence number: no lock, no allocation, no
 * system call. A slow writer is lapped rather than waited for; lapped or torn slots are counted
 * (a LOSS record says how many).
 */
#include <string.h>

#include "collector/collector.h"

#include "base/banned.h"

struct apx_event *apx_ring_begin(struct apx_collector *c, uint64_t *ret_pos)
{
	uint64_t pos = atomic_fetch_add_explicit(&c->ev_head, 1, memory_order_relaxed);
	struct apx_event *ev = &c->ev[pos & (APX_EVENT_SLOTS - 1)];

	atomic_store_explicit(&ev->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	ev->kind = APX_EV_CONFIG;
	ev->cfg_kind = 0;
	ev->ts_ns = apx_mono_ns();
	ev->end_ns = ev->corr = ev->tid = ev->device = ev->context = ev->stream = 0;
	ev->target = ev->value = 0;
	ev->apw_base = ev->apw_bytes = ev->apw_hit_ppm = 0;
	ev->apw_hit = ev->apw_miss = 0;
	ev->err = 0;
	ev->text = NULL;
	*ret_pos = pos;
	return ev;
}

void apx_ring_commit(struct apx_event *ev, uint64_t pos)
{
	atomic_store_explicit(&ev->seq, pos + 1, memory_order_release);
}

void apx_degraded(struct apx_collector *c, const char *what, int err)
{
	struct apx_event *ev;
	uint64_t pos;

	if (!c->ev)
		return;
	ev = apx_ring_begin(c, &pos);
	ev->kind = APX_EV_DEGRADED;
	ev->text = what;
	ev->err = err;
	apx_ring_commit(ev, pos);
}

void apx_degraded_cuda(struct apx_collector *c, const char *what, int cuda_err)
{
	apx_degraded(c, what, cuda_err > 0 ? -cuda_err : 0);
}

void apx_ring_drain(struct apx_collector *c)
{
	for (;;) {
		struct apx_event *slot = &c->ev[c->ev_tail & (APX_EVENT_SLOTS - 1)];
		uint64_t s = atomic_load_explicit(&slot->seq, memory_order_acquire);
		struct apx_event copy;

		if (s == c->ev_tail + 1) {
			memcpy(&copy, slot, sizeof(copy));
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&slot->seq, memory_order_relaxed) == s)
				apx_enc_event(c->enc, &copy);
			else
				c->ev_lost++;
			c->ev_tail++;
		} else if (s > c->ev_tail + 1) {
			c->ev_lost += s - 1 - c->ev_tail;	/* lapped */
			c->ev_tail = s - 1;
		} else {
			break;
		}
	}
}
