/*
 * pyhook.c - the Python hooks' ring and name table (pyhook.h): the exported apx_py_* functions
 * that apx_site.py calls through ctypes on the program's threads, and the writer thread's
 * drain that turns what they put in the ring into MARKER, METRIC and LOSS records.
 *
 * Producers claim a slot with one fetch_add and publish it with a sequence number (as ring.c):
 * no lock, no allocation, no system call. A slow writer is lapped rather than waited for; the
 * lapped or torn slots are counted and said in a LOSS record. Names are registered once each
 * (a mutex, off the hot path) into a table of fixed entries; the writer interns each into the
 * trace's string table the first time a slot names it. Used by src_pyhook.c (the collector's
 * source) and by the tests (tests/unit/test-pyhook.c, pyhook_stub.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/pyhook.h"

#include "base/banned.h"

#define APX_PY_EXPORT __attribute__((visibility("default")))

enum { SLOT_RANGE = 1, SLOT_METRIC = 2 };

struct slot {
	_Atomic uint64_t seq;		/* ring position + 1 once complete, 0 while written */
	uint32_t kind, name, domain;
	int32_t device;
	uint64_t a, b, tid;		/* range: start, end, tid; metric: ts */
	double value;
};

struct apx_pyhook {
	struct slot *slots;
	char (*names)[APX_PYHOOK_NAME_MAX + 1];
	uint16_t *name_len;
	pthread_mutex_t name_lock;		/* registration only */
	_Atomic uint32_t nnames;		/* published after the entry is written */
	_Atomic uint64_t head;			/* producers fetch_add */
	_Atomic uint64_t lost_python;		/* apx_py_lost */
	pid_t pid;

	/* writer thread only */
	uint64_t tail, lost_ring, ranges, metrics, marker_id;
	uint64_t lost_ring_said, lost_python_said;
	uint32_t *str;				/* per name id: string id + unit flag, 0 = not yet */
	uint32_t domain_str, unit_b_str;
};

/* The hook the exported functions use: set by apx_pyhook_publish, NULL in a forked child. */
static _Atomic(struct apx_pyhook *) g_hook;

struct apx_pyhook *apx_pyhook_new(void)
{
	struct apx_pyhook *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->slots = calloc(APX_PYHOOK_SLOTS, sizeof(*h->slots));
	h->names = calloc(APX_PYHOOK_NAMES, sizeof(*h->names));
	h->name_len = calloc(APX_PYHOOK_NAMES, sizeof(*h->name_len));
	h->str = calloc(APX_PYHOOK_NAMES + 1, sizeof(*h->str));
	if (!h->slots || !h->names || !h->name_len || !h->str)
		return apx_pyhook_free(h);
	pthread_mutex_init(&h->name_lock, NULL);
	h->pid = getpid();
	return h;
}

struct apx_pyhook *apx_pyhook_free(struct apx_pyhook *h)
{
	if (!h)
		return NULL;
	if (atomic_load(&g_hook) == h)
		atomic_store(&g_hook, NULL);
	free(h->slots);
	free(h->names);
	free(h->name_len);
	free(h->str);
	free(h);
	return NULL;
}

static void at_fork_child(void)
{
	atomic_store(&g_hook, NULL);
}

static void register_fork(void)
{
	pthread_atfork(NULL, NULL, at_fork_child);
}

void apx_pyhook_publish(struct apx_pyhook *h)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_fork);
	atomic_store_explicit(&g_hook, h, memory_order_release);
}

/* ---- producers (any thread) ----------------------------------------------------------------- */

APX_PY_EXPORT int apx_py_name(const char *utf8, size_t len)
{
	struct apx_pyhook *h = atomic_load_explicit(&g_hook, memory_order_acquire);
	uint32_t n;
	int id = -ENOSPC;

	if (!h)
		return -EAGAIN;
	if (!utf8 || !len)
		return -EINVAL;
	if (len > APX_PYHOOK_NAME_MAX)
		len = APX_PYHOOK_NAME_MAX;
	pthread_mutex_lock(&h->name_lock);
	n = atomic_load_explicit(&h->nnames, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		if (h->name_len[i] == len && !memcmp(h->names[i], utf8, len)) {
			id = (int)i + 1;
			goto out;
		}
	if (n < APX_PYHOOK_NAMES) {
		memcpy(h->names[n], utf8, len);
		h->names[n][len] = 0;
		h->name_len[n] = (uint16_t)len;
		atomic_store_explicit(&h->nnames, n + 1, memory_order_release);
		id = (int)n + 1;
	}
out:
	pthread_mutex_unlock(&h->name_lock);
	return id;
}

static struct slot *claim(struct apx_pyhook *h, uint64_t *ret_pos)
{
	uint64_t pos = atomic_fetch_add_explicit(&h->head, 1, memory_order_relaxed);
	struct slot *s = &h->slots[pos & (APX_PYHOOK_SLOTS - 1)];

	atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	*ret_pos = pos;
	return s;
}

APX_PY_EXPORT int apx_py_range(uint32_t name_id, uint32_t domain_id, uint64_t start_ns,
			       uint64_t end_ns, uint64_t tid)
{
	struct apx_pyhook *h = atomic_load_explicit(&g_hook, memory_order_acquire);
	struct slot *s;
	uint64_t pos;

	if (!h)
		return -EAGAIN;
	s = claim(h, &pos);
	s->kind = SLOT_RANGE;
	s->name = name_id;
	s->domain = domain_id;
	s->device = 0;
	s->a = start_ns;
	s->b = end_ns;
	s->tid = tid;
	s->value = 0;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	return 0;
}

APX_PY_EXPORT int apx_py_metric(uint32_t name_id, int32_t device, double value, uint64_t ts_ns)
{
	struct apx_pyhook *h = atomic_load_explicit(&g_hook, memory_order_acquire);
	struct slot *s;
	uint64_t pos;

	if (!h)
		return -EAGAIN;
	s = claim(h, &pos);
	s->kind = SLOT_METRIC;
	s->name = name_id;
	s->domain = 0;
	s->device = device;
	s->a = ts_ns;
	s->b = 0;
	s->tid = 0;
	s->value = value;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	return 0;
}

APX_PY_EXPORT int apx_py_lost(uint64_t count)
{
	struct apx_pyhook *h = atomic_load_explicit(&g_hook, memory_order_acquire);

	if (!h)
		return -EAGAIN;
	atomic_fetch_add_explicit(&h->lost_python, count, memory_order_relaxed);
	return 0;
}

/* ---- the writer thread -------------------------------------------------------------------- */

static uint32_t intern(struct apx_writer *w, const char *s, size_t len)
{
	uint32_t id = 0;

	if (apx_writer_intern(w, s, len, &id) < 0)
		return 0;
	return id;
}

static int ends_with_bytes(const char *s, size_t len)
{
	return len >= 6 && !memcmp(s + len - 6, "_bytes", 6);
}

/* The string id of name id (0 when unknown); *ret_bytes: its unit is bytes. */
static uint32_t name_str(struct apx_pyhook *h, struct apx_writer *w, uint32_t id, int *ret_bytes)
{
	uint32_t n = atomic_load_explicit(&h->nnames, memory_order_acquire);

	if (!id || id > n)
		return 0;
	if (!h->str[id]) {
		uint32_t s = intern(w, h->names[id - 1], h->name_len[id - 1]);

		if (!s || s >= 1u << 31)
			return 0;
		h->str[id] = s | (ends_with_bytes(h->names[id - 1], h->name_len[id - 1]) ? 1u << 31 : 0);
	}
	if (ret_bytes)
		*ret_bytes = !!(h->str[id] >> 31);
	return h->str[id] & ~(1u << 31);
}

static void encode(struct apx_pyhook *h, struct apx_writer *w, const struct slot *s)
{
	struct apx_rec rec;
	int bytes = 0;
	uint32_t name = name_str(h, w, s->name, &bytes);

	if (!name) {
		h->lost_ring++;		/* a name never registered: the slot cannot be written */
		return;
	}
	if (s->kind == SLOT_RANGE) {
		uint32_t dom = s->domain ? name_str(h, w, s->domain, NULL) : 0;

		if (!dom) {
			if (!h->domain_str)
				h->domain_str = intern(w, APX_PYHOOK_DOMAIN, strlen(APX_PYHOOK_DOMAIN));
			dom = h->domain_str;
		}
		apx_rec_init(&rec, APX_REC_MARKER);
		rec.v[APX_MARKER_START_NS] = s->a;
		rec.v[APX_MARKER_END_NS] = s->b >= s->a ? s->b : s->a;
		rec.v[APX_MARKER_ID] = ++h->marker_id;
		rec.v[APX_MARKER_NAME] = name;
		rec.v[APX_MARKER_DOMAIN] = dom;
		rec.v[APX_MARKER_TID] = s->tid;
		rec.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
		if (apx_writer_add(w, &rec) == 0)
			h->ranges++;
		return;
	}
	if (s->kind != SLOT_METRIC)
		return;
	if (bytes && !h->unit_b_str)
		h->unit_b_str = intern(w, "B", 1);
	apx_rec_init(&rec, APX_REC_METRIC);
	rec.v[APX_METRIC_TS_NS] = s->a;
	rec.v[APX_METRIC_NAME] = name;
	rec.v[APX_METRIC_DEVICE] = s->device >= 0 ? (uint64_t)s->device : 0;
	rec.v[APX_METRIC_PID] = s->device >= 0 ? 0 : (uint64_t)h->pid;
	apx_rec_set_f64(&rec, APX_METRIC_VALUE, s->value);
	rec.v[APX_METRIC_UNIT] = bytes ? h->unit_b_str : 0;
	if (apx_writer_add(w, &rec) == 0)
		h->metrics++;
}

static void add_loss(struct apx_writer *w, uint64_t count, const char *reason, uint64_t now_ns)
{
	(void)apx_writer_add_loss(w, now_ns, APX_LOSS_OTHER, count, reason);
}

void apx_pyhook_drain(struct apx_pyhook *h, struct apx_writer *w, uint64_t now_ns, int periodic)
{
	uint64_t lp;

	if (!h || !w)
		return;
	for (;;) {
		struct slot *slot = &h->slots[h->tail & (APX_PYHOOK_SLOTS - 1)];
		uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		struct slot copy;

		if (seq == h->tail + 1) {
			copy.kind = slot->kind;
			copy.name = slot->name;
			copy.domain = slot->domain;
			copy.device = slot->device;
			copy.a = slot->a;
			copy.b = slot->b;
			copy.tid = slot->tid;
			copy.value = slot->value;
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&slot->seq, memory_order_relaxed) == seq)
				encode(h, w, &copy);
			else
				h->lost_ring++;		/* overwritten while read */
			h->tail++;
		} else if (seq > h->tail + 1) {
			/* lapped: the slot holds position seq - 1; the oldest that can still be
			 * there is the one a whole ring before it */
			uint64_t oldest = seq - APX_PYHOOK_SLOTS;

			if (oldest <= h->tail)
				break;			/* being written right now: next time */
			h->lost_ring += oldest - h->tail;
			h->tail = oldest;
		} else {
			break;
		}
	}
	if (!periodic)
		return;
	if (h->lost_ring > h->lost_ring_said) {
		add_loss(w, h->lost_ring - h->lost_ring_said,
			 "python hooks: ranges and samples lost (ring overrun)", now_ns);
		h->lost_ring_said = h->lost_ring;
	}
	lp = atomic_load_explicit(&h->lost_python, memory_order_relaxed);
	if (lp > h->lost_python_said) {
		add_loss(w, lp - h->lost_python_said,
			 "python hooks: ranges and samples dropped before CUDA was initialised", now_ns);
		h->lost_python_said = lp;
	}
}

void apx_pyhook_stats(const struct apx_pyhook *h, struct apx_pyhook_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!h)
		return;
	ret->ranges = h->ranges;
	ret->metrics = h->metrics;
	ret->lost_ring = h->lost_ring;
	ret->lost_python = atomic_load_explicit(&h->lost_python, memory_order_relaxed);
	ret->names = atomic_load_explicit(&h->nnames, memory_order_relaxed);
}
