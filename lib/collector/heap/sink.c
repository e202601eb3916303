/*
 * sink.c - the taking side of libapx-heap.so (sink.h): attaches to the preloaded library, and
 * on the writer thread turns its events into HEAP records, writing each new native stack
 * first (FRAME records of kind native, named with dladdr; a STACK record). Called by the
 * collector's heap source (src_heap.c) and by the tests' stand-in (tests/heap/heap_stub.c);
 * everything but open runs on the one thread that owns the writer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"
#include "collector/heap/sink.h"

#include "base/banned.h"

_Static_assert((int)APX_HS_F_UNTRACKED == (int)APX_HEAPF_UNTRACKED &&
	       (int)APX_HS_F_REALLOC == (int)APX_HEAPF_REALLOC &&
	       (int)APX_HS_F_ALIGNED == (int)APX_HEAPF_ALIGNED &&
	       (int)APX_HS_F_CALLOC == (int)APX_HEAPF_CALLOC &&
	       (int)APX_HS_F_NOSTACK == (int)APX_HEAPF_NOSTACK &&
	       (int)APX_HS_F_LARGE == (int)APX_HEAPF_LARGE, "heap.h's flags are the record's");

#define TAKE 256			/* events taken at a time */
#define MAP_MAX (1u << 22)		/* native frames and stacks kept (then: not named) */

/* open addressing, key 0 = empty */
struct map {
	uint64_t *key;
	uint32_t *val;
	size_t cap, n;
};

struct apx_heap_sink {
	apx_heap_take_fn *take;
	apx_heap_stats_fn *stats;
	apx_heap_detach_fn *detach;
	apx_heap_ignore_thread_fn *ignore;
	struct apx_heap_ids ids;
	struct apx_heap_event *buf;
	struct map frames;		/* return address -> frame id */
	struct map stacks;		/* hash of a stack's frame ids -> stack id */
	uint64_t allocs, frees, lost_said, unnamed;
	char exe[1024];			/* the program's path: dladdr names it by argv[0] */
	uintptr_t exe_lo, exe_hi;	/* its mapped segments */
	uintptr_t own_lo, own_hi;	/* the object this file is in (the collector) */
	struct map own;			/* addresses of the collector's own samples (value 1;
					 * 0 once freed): dropped, and their frees too */
	uint64_t own_dropped;
};

static uint32_t *map_find(struct map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = apx_fmix64(key) & (m->cap - 1); m->key[i]; i = (i + 1) & (m->cap - 1))
		if (m->key[i] == key)
			return &m->val[i];
	return NULL;
}

/* Add key (not present): 0, or -ENOMEM / -ENOSPC. */
static int map_add(struct map *m, uint64_t key, uint32_t val)
{
	size_t i;

	if (m->n >= MAP_MAX)
		return -ENOSPC;
	if (2 * (m->n + 1) > m->cap) {
		struct map g = { 0 };

		g.cap = m->cap ? 2 * m->cap : 4096;
		g.key = calloc(g.cap, sizeof(*g.key));
		g.val = calloc(g.cap, sizeof(*g.val));
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -ENOMEM;
		}
		for (size_t j = 0; j < m->cap; j++)
			if (m->key[j])
				(void)map_add(&g, m->key[j], m->val[j]);
		free(m->key);
		free(m->val);
		*m = g;
	}
	for (i = apx_fmix64(key) & (m->cap - 1); m->key[i]; i = (i + 1) & (m->cap - 1))
		;
	m->key[i] = key;
	m->val[i] = val;
	m->n++;
	return 0;
}

static void segments(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < *lo)
			*lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > *hi)
			*hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
}

/* dl_iterate_phdr's first object is the program: where its segments lie; and where the
 * object holding this code (the collector) lies */
static int find_objects(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct apx_heap_sink *s = ctx;
	uintptr_t lo, hi, me = (uintptr_t)(void *)find_objects;

	(void)size;
	segments(info, &lo, &hi);
	if (!s->exe_hi) {
		s->exe_lo = lo;
		s->exe_hi = hi;
	}
	if (me >= lo && me < hi) {
		s->own_lo = lo;
		s->own_hi = hi;
	}
	return 0;
}

int apx_heap_sink_open(const struct apx_heap_hooks *hooks, const struct apx_heap_ids *ids,
		       struct apx_heap_sink **ret)
{
	apx_heap_attach_fn *attach = (apx_heap_attach_fn *)dlsym(RTLD_DEFAULT, "apx_heap_attach");
	struct apx_heap_sink *s;
	ssize_t n;
	int r;

	if (!attach)
		return -ENOENT;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->take = (apx_heap_take_fn *)dlsym(RTLD_DEFAULT, "apx_heap_take");
	s->stats = (apx_heap_stats_fn *)dlsym(RTLD_DEFAULT, "apx_heap_stats");
	s->detach = (apx_heap_detach_fn *)dlsym(RTLD_DEFAULT, "apx_heap_detach");
	s->ignore = (apx_heap_ignore_thread_fn *)dlsym(RTLD_DEFAULT, "apx_heap_ignore_thread");
	s->buf = calloc(TAKE, sizeof(*s->buf));
	if (!s->take || !s->stats || !s->detach || !s->ignore || !s->buf) {
		r = s->buf ? -EPROTO : -ENOMEM;
		goto fail;
	}
	s->ids = *ids;
	n = readlink("/proc/self/exe", s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = 0;
	dl_iterate_phdr(find_objects, s);
	r = attach(APX_HS_ABI, hooks);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	free(s->buf);
	free(s);
	return r;
}

/* The FRAME of a return address, written the first time; 0 when it cannot be kept. */
static uint32_t frame_of(struct apx_heap_sink *s, struct apx_writer *w, uint64_t ret_addr)
{
	uint32_t *have = map_find(&s->frames, ret_addr), fid, sid = 0;
	const char *file = "", *func = "";
	struct apx_rec rec;
	uint64_t off = ret_addr;
	Dl_info di;

	if (have)
		return *have;
	fid = s->ids.frame_id(s->ids.ctx);
	if (!fid || map_add(&s->frames, ret_addr, fid) < 0)
		return 0;
	/* the call is the byte before the return address (addr2line -e FILE ADDRESS names it) */
	if (ret_addr && dladdr((void *)(uintptr_t)(ret_addr - 1), &di)) {
		file = di.dli_fname ? di.dli_fname : "";
		if (s->exe[0] && ret_addr - 1 >= s->exe_lo && ret_addr - 1 < s->exe_hi)
			file = s->exe;	/* the program: dladdr names it by argv[0] */
		func = di.dli_sname ? di.dli_sname : "";
		off = ret_addr - 1 - (uint64_t)(uintptr_t)di.dli_fbase;
	} else {
		s->unnamed++;
	}
	apx_rec_init(&rec, APX_REC_FRAME);
	rec.v[APX_FRAME_ID] = fid;
	rec.v[APX_FRAME_KIND] = APX_FRAME_NATIVE;
	(void)apx_writer_intern(w, file, strlen(file), &sid);
	rec.v[APX_FRAME_FILE] = sid;
	sid = 0;
	(void)apx_writer_intern(w, func, strlen(func), &sid);
	rec.v[APX_FRAME_FUNC] = sid;
	rec.v[APX_FRAME_ADDRESS] = off;
	(void)apx_writer_add(w, &rec);
	return fid;
}

/* The STACK of an event's native frames, written the first time; 0 = none. */
static uint32_t stack_of(struct apx_heap_sink *s, struct apx_writer *w,
			 const struct apx_heap_event *ev)
{
	uint32_t fids[APX_HS_FRAMES], *have, id;
	uint8_t buf[APX_HS_FRAMES * 5];
	uint64_t h = 0x5bd1e995u;
	struct apx_rec rec;
	size_t o = 0;
	unsigned n = 0;

	for (unsigned k = 0; k < ev->nframes && k < APX_HS_FRAMES; k++) {
		uint32_t f = frame_of(s, w, ev->frames[k]);

		if (f)
			fids[n++] = f;
	}
	if (!n)
		return 0;
	for (unsigned k = 0; k < n; k++)
		h = apx_fmix64(h ^ fids[k]) + k;
	if (!h)
		h = 1;
	if ((have = map_find(&s->stacks, h)))
		return *have;
	id = s->ids.stack_id(s->ids.ctx);
	if (!id || map_add(&s->stacks, h, id) < 0)
		return 0;
	for (unsigned k = 0; k < n; k++) {
		uint32_t v = fids[k];

		do {
			uint8_t b = v & 0x7f;

			v >>= 7;
			buf[o++] = (uint8_t)(b | (v ? 0x80 : 0));
		} while (v);
	}
	apx_rec_init(&rec, APX_REC_STACK);
	rec.v[APX_STACK_ID] = id;
	apx_rec_set_bytes(&rec, APX_STACK_FRAMES, buf, o);
	rec.v[APX_STACK_TRUNCATED] = ev->nframes >= APX_HS_FRAMES;
	(void)apx_writer_add(w, &rec);
	return id;
}

/* An allocation the collector made itself (a frame of its object on the stack: its start-up
 * tables, made on the program's thread that initialised CUDA, and sampled before it could
 * attach), or the free of one: not the program's, dropped. */
static int own_event(struct apx_heap_sink *s, const struct apx_heap_event *ev)
{
	uint32_t *have;

	if (ev->op != APX_HS_ALLOC) {
		have = map_find(&s->own, ev->addr);
		if (!have || !*have)
			return 0;
		*have = 0;
		return 1;
	}
	for (unsigned k = 0; k < ev->nframes && k < APX_HS_FRAMES; k++)
		if (ev->frames[k] >= s->own_lo && ev->frames[k] < s->own_hi) {
			have = map_find(&s->own, ev->addr);
			if (have)
				*have = 1;
			else
				(void)map_add(&s->own, ev->addr, 1);
			s->own_dropped++;
			return 1;
		}
	have = map_find(&s->own, ev->addr);
	if (have)
		*have = 0;	/* the address is the program's now */
	return 0;
}

void apx_heap_sink_drain(struct apx_heap_sink *s, struct apx_writer *w, uint64_t now_ns,
			 int periodic)
{
	size_t n;

	if (!s)
		return;
	while ((n = s->take(s->buf, TAKE)) > 0) {
		for (size_t i = 0; i < n; i++) {
			const struct apx_heap_event *ev = &s->buf[i];
			struct apx_rec rec;

			if (own_event(s, ev))
				continue;	/* the collector's own allocation, or its free */

			apx_rec_init(&rec, APX_REC_HEAP);
			rec.v[APX_HEAP_TS_NS] = ev->ts_ns;
			rec.v[APX_HEAP_ADDRESS] = ev->addr;
			rec.v[APX_HEAP_TID] = ev->tid;
			rec.v[APX_HEAP_FLAGS] = ev->flags;
			if (ev->op == APX_HS_ALLOC) {
				rec.v[APX_HEAP_OP] = APX_MEMOP_ALLOC;
				rec.v[APX_HEAP_BYTES] = ev->bytes;
				rec.v[APX_HEAP_INTERVAL_BYTES] = ev->interval;
				rec.v[APX_HEAP_STACK] = ev->pystack;
				rec.v[APX_HEAP_NATIVE_STACK] = stack_of(s, w, ev);
				s->allocs++;
			} else {
				rec.v[APX_HEAP_OP] = APX_MEMOP_FREE;
				s->frees++;
			}
			(void)apx_writer_add(w, &rec);
		}
		if (n < TAKE)
			break;
	}
	if (periodic) {
		struct apx_heap_stats st;

		s->stats(&st);
		if (st.lost > s->lost_said) {
			(void)apx_writer_add_loss(w, now_ns, APX_LOSS_OTHER,
						  st.lost - s->lost_said, "heap samples or frees: "
						  "libapx-heap.so's ring was full");
			s->lost_said = st.lost;
		}
	}
}

void apx_heap_sink_ignore_thread(struct apx_heap_sink *s)
{
	if (s)
		s->ignore();
}

void apx_heap_sink_summary(struct apx_heap_sink *s, char *buf, size_t cap)
{
	static const char *const status[] = {
		[APX_HS_ON] = "on",
		[APX_HS_OFF] = "off (APX_HEAP_SAMPLING_BYTES and APX_HEAP_LARGE_BYTES unset)",
		[APX_HS_NOT_OURS] = "off (the program's malloc is another library's, loaded first)",
		[APX_HS_NO_REAL] = "off (no malloc found after libapx-heap.so)",
		[APX_HS_FORKED] = "off (a forked child)",
	};
	struct apx_heap_stats st;

	s->stats(&st);
	snprintf(buf, cap, "%s; every %llu bytes on average (0: no sampling), and every allocation "
		 "of %llu bytes or more (0: none); %llu allocations recorded (samples and large "
		 "ones), %llu of their frees; written %llu and %llu, apx's own %llu; lost %llu (ring full), "
		 "untracked %llu, no native stack %llu; %zu native stacks, %zu frames",
		 st.status < sizeof(status) / sizeof(status[0]) && status[st.status]
			 ? status[st.status] : "unknown",
		 (unsigned long long)st.interval, (unsigned long long)st.large,
		 (unsigned long long)st.samples,
		 (unsigned long long)st.frees, (unsigned long long)s->allocs,
		 (unsigned long long)s->frees, (unsigned long long)s->own_dropped,
		 (unsigned long long)st.lost, (unsigned long long)st.untracked,
		 (unsigned long long)st.nostack, s->stacks.n, s->frames.n);
}

void apx_heap_sink_close(struct apx_heap_sink *s)
{
	if (!s)
		return;
	s->detach();
	free(s->buf);
	free(s->frames.key);
	free(s->frames.val);
	free(s->stacks.key);
	free(s->stacks.val);
	free(s->own.key);
	free(s->own.val);
	free(s);
}
