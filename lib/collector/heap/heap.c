/*
 * heap.c - libapx-heap.so: host heap sampling (apx analyze --heap-sampling-bytes N;
 * docs/collector.md, "Host heap sampling"). Preloaded (LD_PRELOAD) into the program, it wraps
 * malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc
 * and pvalloc
 * (C++'s operator new and delete reach them through libstdc++), passes every call to the next
 * allocator in the search order (dlsym(RTLD_NEXT): glibc's, or one the user preloaded after
 * it), and samples about one allocation every N bytes, as tcmalloc and jemalloc do: each thread
 * counts the bytes it allocates down from a distance drawn from an exponential distribution of
 * mean N; the allocation that takes the count below zero is sampled (its size, address, time,
 * thread, native stack and, through the consumer's hook, Python stack) and a new distance is
 * drawn. The fast path is one subtraction and one branch on initial-exec TLS. With
 * APX_HEAP_LARGE_BYTES=L (apx analyze's default, 1 MiB) every allocation of L bytes or more is
 * recorded as well, whatever the countdown (one comparison more on the fast path).
 *
 * The samples go into a fixed lock-free ring (heap.h) that the consumer (the collector, once
 * CUDA has loaded it: src_heap.c) empties; sampled addresses go into a lock-free open-addressing
 * table so that their frees are seen (a FREE event); free() looks there only when a counting
 * filter of 64 Ki one-byte counters says the address may be sampled.
 *
 * Runs inside every allocation of the program, on any thread, before and after main, in forked
 * children and inside the dynamic loader: no allocation (a static bootstrap arena answers the
 * allocations dlsym makes while the real functions are being looked up), no lock, no stdio;
 * failures turn sampling off and say so once on stderr ("[apx] heap sampling ...").
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/heap/heap.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* the wrapped functions (exported: they interpose the program's calls) */
EXPORT void *malloc(size_t n);
EXPORT void free(void *p);
EXPORT void *calloc(size_t a, size_t b);
EXPORT void *realloc(void *p, size_t n);
EXPORT int posix_memalign(void **ret, size_t align, size_t n);
EXPORT void *aligned_alloc(size_t align, size_t n);
EXPORT void *memalign(size_t align, size_t n);
EXPORT void *valloc(size_t n);
EXPORT void *pvalloc(size_t n);
EXPORT void *reallocarray(void *p, size_t a, size_t b);

/* glibc's own entries, the fallback when dlsym(RTLD_NEXT) finds nothing (weak: not needed) */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));

/* ---- the real functions ---------------------------------------------------------------------- */

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
} real;

/* 0: not looked up, 1: a thread is looking them up, 2: ready (written once, by that thread) */
static _Atomic int g_state;

/* Per thread (initial-exec: the library is preloaded, so its TLS is static and touching it
 * never allocates). left: bytes until the next sample; guard: inside this library's own
 * sampling or the consumer's hook (nothing is sampled); resolving: this thread is looking the
 * real functions up (its allocations come from the bootstrap arena). */
struct heap_tls {
	int64_t left;
	uint64_t rng;
	uint32_t tid;
	uint16_t guard;
	uint8_t inited, ignored, resolving;
	uint8_t probing, probe_hit;	/* setup(): does the program's malloc reach us? */
};
static __thread struct heap_tls t __attribute__((tls_model("initial-exec")));

/* ---- bootstrap arena: allocations made by dlsym before the real functions are known -------- */

#define BOOT_BYTES (256u << 10)
static _Alignas(64) unsigned char boot[BOOT_BYTES];
static _Atomic size_t boot_used;

static int in_boot(const void *p)
{
	return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + BOOT_BYTES;
}

/* 16 bytes of header hold the size (realloc copies it); align is a power of two. */
static void *boot_alloc(size_t n, size_t align)
{
	size_t used, start, end;

	if (align < 16)
		align = 16;
	do {
		used = atomic_load_explicit(&boot_used, memory_order_relaxed);
		start = (used + 16 + align - 1) & ~(align - 1);
		if (n > BOOT_BYTES || start + n > BOOT_BYTES)
			return NULL;
		end = start + n;
	} while (!atomic_compare_exchange_weak(&boot_used, &used, end));
	memcpy(boot + start - sizeof(size_t), &n, sizeof(n));
	return boot + start;	/* zeroed: static storage never handed out twice */
}

static size_t boot_size(const void *p)
{
	size_t n;

	memcpy(&n, (const unsigned char *)p - sizeof(size_t), sizeof(n));
	return n;
}

/* ---- messages (write(2): stdio may allocate) ------------------------------------------------ */

static int g_quiet;	/* large allocations only, no sampling asked for: failures unsaid */

static void say(const char *a, const char *b, const char *c)
{
	const char *parts[] = { "[apx] heap sampling ", a, b, c, "\n" };

	if (g_quiet)
		return;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i] && *parts[i])
			(void)!write(2, parts[i], strlen(parts[i]));
}

/* Look the real functions up (dlsym(RTLD_NEXT) may itself allocate: the bootstrap arena
 * answers this thread meanwhile). 1 when they are ready, 0 when the caller is the thread
 * looking them up and must use the arena. */
static int resolve(void)
{
	int s = 0;

	if (t.resolving)
		return 0;
	if (atomic_compare_exchange_strong(&g_state, &s, 1)) {
		t.resolving = 1;
		real.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
		real.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
		real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
		real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
		real.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT,
									      "posix_memalign");
		real.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
		real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
		real.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
		real.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
		if (!real.malloc || !real.free || !real.calloc || !real.realloc || !real.memalign) {
			/* all or none from one allocator: glibc's own entries */
			real.malloc = __libc_malloc;
			real.free = __libc_free;
			real.calloc = __libc_calloc;
			real.realloc = __libc_realloc;
			real.memalign = __libc_memalign;
			real.posix_memalign = NULL;
			real.aligned_alloc = NULL;
			real.valloc = NULL;
			real.pvalloc = NULL;
		}
		t.resolving = 0;
		atomic_store_explicit(&g_state, 2, memory_order_release);
		return real.malloc != NULL;
	}
	while (atomic_load_explicit(&g_state, memory_order_acquire) != 2)
		sched_yield();
	return real.malloc != NULL;
}

static inline int ready(void)
{
	return likely(atomic_load_explicit(&g_state, memory_order_acquire) == 2) || resolve();
}

/* ---- configuration (the constructor) -------------------------------------------------------- */

static uint64_t g_interval;		/* N; written by setup() before g_on, then read-only
					 * (0 again in a forked child); 0: no sampling */
static uint64_t g_large = UINT64_MAX;	/* APX_HEAP_LARGE_BYTES: every allocation of this
					 * many bytes or more is recorded; UINT64_MAX: none */
static _Atomic int g_on;		/* sampling or large allocations on: set last by setup(),
					 * cleared in a child */
static _Atomic uint32_t g_status = APX_HS_OFF;
static uint64_t g_seed;			/* APX_HEAP_SEED (tests), 0 = none */
static int g_nostack;			/* APX_HEAP_NATIVE_STACKS=0: no backtrace */
static _Atomic uint64_t g_seeded;	/* threads seeded from g_seed */

/* text ranges: this library (frames skipped), the unwinder and the dynamic loader (an
 * allocation they make is not walked: the unwinder may hold its lock) */
struct range {
	uintptr_t lo, hi;
};
static struct range r_self, r_unsafe[4];
static unsigned n_unsafe;

static struct {
	_Atomic(uint32_t (*)(uint32_t *)) pystack;
	_Atomic int attached;
} g_hooks;

static _Atomic uint64_t st_samples, st_frees, st_lost, st_untracked, st_nostack;
static _Atomic uint64_t g_nlive;	/* sampled allocations in the live table */

static uint64_t parse_u64(const char *s, uint64_t max)
{
	uint64_t v = 0;

	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (max - (uint64_t)(*s - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

struct find_ctx {
	uintptr_t base;			/* the object to find by load address, 0: by name */
	struct range r;
};

static void seg_range(const struct dl_phdr_info *info, struct range *r)
{
	r->lo = UINTPTR_MAX;
	r->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (info->dlpi_addr + ph->p_vaddr < r->lo)
			r->lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > r->hi)
			r->hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (r->lo > r->hi)
		r->lo = r->hi = 0;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct find_ctx *f = ctx;

	(void)size;
	if (info->dlpi_addr != f->base)
		return 0;
	seg_range(info, &f->r);
	return 1;
}

static int find_unsafe(struct dl_phdr_info *info, size_t size, void *ctx)
{
	const char *name = info->dlpi_name;

	(void)size;
	(void)ctx;
	if (!name || n_unsafe >= sizeof(r_unsafe) / sizeof(r_unsafe[0]))
		return 0;
	if (strstr(name, "libgcc_s.so") || strstr(name, "/ld-linux") || strstr(name, "/ld64.so") ||
	    strstr(name, "libunwind"))
		seg_range(info, &r_unsafe[n_unsafe++]);
	return 0;
}

static int in_range(const struct range *r, uintptr_t a)
{
	return a >= r->lo && a < r->hi;
}

static void child_after_fork(void)
{
	/* the child's ring and table are its parent's copies, and nobody will read them */
	atomic_store(&g_on, 0);
	atomic_store(&g_hooks.pystack, NULL);
	atomic_store(&g_status, APX_HS_FORKED);
	g_interval = 0;
	g_large = UINT64_MAX;
	atomic_store(&g_nlive, 0);	/* free() stops looking in the table */
	t.tid = 0;
}

__attribute__((constructor)) static void setup(void)
{
	uint64_t n = parse_u64(getenv("APX_HEAP_SAMPLING_BYTES"), 1ull << 40);
	uint64_t large = parse_u64(getenv("APX_HEAP_LARGE_BYTES"), 1ull << 40);
	Dl_info self, mine;
	void *where, *probe[4];
	const char *nostack;
	struct find_ctx fc = { 0 };

	if ((!n && !large) || !ready())
		return;
	t.guard++;
	g_quiet = !n;	/* only large allocations (apx analyze's default): no message */
	if (!real.malloc) {
		atomic_store(&g_status, APX_HS_NO_REAL);
		say("off: the next malloc could not be found", "", "");
		goto out;
	}
	/* whose malloc the program calls: ours, or one found before us (an allocator linked
	 * into the program, or preloaded ahead of this library: then nothing reaches us). The
	 * address dlsym gives may be the program's PLT entry, so call it and see. */
	where = dlsym(RTLD_DEFAULT, "malloc");
	if (where) {
		void *(*fn)(size_t) = (void *(*)(size_t))where;
		void (*fr)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
		void *q;

		t.probing = 1;
		t.left = INT64_MIN / 2;	/* the next allocation reaching us says so */
		q = fn(16);
		t.probing = 0;
		t.left = 0;
		if (q && fr)
			fr(q);		/* the program's free: the allocator that made it */
	}
	if (!dladdr((void *)setup, &self) || !where || !t.probe_hit) {
		atomic_store(&g_status, APX_HS_NOT_OURS);
		say("off: the program's malloc is ", where && dladdr(where, &mine) && mine.dli_fname
			    ? mine.dli_fname : "another library's",
		    "'s (loaded before libapx-heap.so): no heap samples");
		goto out;
	}
	fc.base = (uintptr_t)self.dli_fbase;
	dl_iterate_phdr(find_self, &fc);
	r_self = fc.r;
	/* backtrace() loads the unwinder (libgcc_s, which allocates) on its first call: here,
	 * with this thread's sampling off, never inside a sampled allocation */
	(void)backtrace(probe, 4);
	dl_iterate_phdr(find_unsafe, NULL);
	if (pthread_atfork(NULL, NULL, child_after_fork)) {
		say("off: pthread_atfork failed", "", "");
		goto out;
	}
	g_seed = parse_u64(getenv("APX_HEAP_SEED"), UINT64_MAX);
	nostack = getenv("APX_HEAP_NATIVE_STACKS");
	g_nostack = nostack && !strcmp(nostack, "0");
	g_interval = n;
	g_large = large ? large : UINT64_MAX;
	atomic_store(&g_status, APX_HS_ON);
	atomic_store_explicit(&g_on, 1, memory_order_release);
out:
	t.guard--;
}

/* ---- sampling ------------------------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(void)		/* splitmix64 */
{
	uint64_t z = (t.rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Bytes to the next sample: exponential with mean g_interval (a Poisson process over the
 * bytes allocated; memoryless, so a new draw after each sample keeps it unbiased). */
static int64_t draw(void)
{
	double u = (double)((next_rand() >> 11) + 1) * 0x1.0p-53;	/* (0, 1] */
	double v = -log(u) * (double)g_interval;

	return v >= 4e18 ? (int64_t)4e18 : (int64_t)v;
}

static uint32_t my_tid(void)
{
	if (!t.tid)
		t.tid = (uint32_t)gettid();
	return t.tid;
}

/* ---- the live table and its filter -------------------------------------------------------- */

#define LIVE_BITS 18
#define LIVE_SLOTS (1u << LIVE_BITS)
#define LIVE_PROBES 64
#define FILTER_BITS 16
#define TOMB ((uintptr_t)1)

static _Atomic uintptr_t live[LIVE_SLOTS];
static _Atomic uint8_t filter[1u << FILTER_BITS];

static inline uint64_t addr_hash(const void *p)
{
	return ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull;
}

static inline int maybe_live(const void *p)
{
	return atomic_load_explicit(&g_nlive, memory_order_relaxed) &&
	       atomic_load_explicit(&filter[addr_hash(p) >> (64 - FILTER_BITS)],
				    memory_order_relaxed);
}

static void filter_add(uint64_t h, int delta)
{
	_Atomic uint8_t *c = &filter[h >> (64 - FILTER_BITS)];
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	do {
		if (v == 255)
			return;	/* saturated: stays on (a slower free, never a missed one) */
	} while (!atomic_compare_exchange_weak(c, &v, (uint8_t)(v + delta)));
}

static int live_insert(const void *p)
{
	uint64_t h = addr_hash(p);
	uint32_t i = (uint32_t)(h >> (64 - LIVE_BITS));

	for (unsigned k = 0; k < LIVE_PROBES; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
		uintptr_t v = atomic_load_explicit(&live[i], memory_order_relaxed);

		while (v == 0 || v == TOMB) {
			if (atomic_compare_exchange_weak(&live[i], &v, (uintptr_t)p)) {
				filter_add(h, 1);
				atomic_fetch_add_explicit(&g_nlive, 1, memory_order_relaxed);
				return 1;
			}
		}
	}
	return 0;
}

/* Remove p; 1 when it was there. */
static int live_remove(const void *p)
{
	uint64_t h = addr_hash(p);
	uint32_t i = (uint32_t)(h >> (64 - LIVE_BITS));

	for (unsigned k = 0; k < LIVE_PROBES; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
		uintptr_t v = atomic_load_explicit(&live[i], memory_order_relaxed);

		if (v == 0)
			return 0;
		if (v == (uintptr_t)p &&
		    atomic_compare_exchange_strong(&live[i], &v, TOMB)) {
			filter_add(h, -1);
			atomic_fetch_sub_explicit(&g_nlive, 1, memory_order_relaxed);
			return 1;
		}
	}
	return 0;
}

/* ---- the ring (bounded, lock-free; Vyukov's sequence numbers, offset so that zeroed
 * memory is an empty ring: a slot is free for position pos when seq == base(pos), full when
 * base(pos) + 1, where base(pos) = pos with the index bits cleared) -------------------------- */

#define RING_MASK ((uint64_t)APX_HS_RING - 1)

struct slot {
	_Atomic uint64_t seq;
	struct apx_heap_event ev;
};

static struct slot ring[APX_HS_RING];
static _Alignas(64) _Atomic uint64_t ring_tail;	/* next position to fill */
static _Alignas(64) _Atomic uint64_t ring_head;	/* next position to take */

static int ring_push(const struct apx_heap_event *ev)
{
	uint64_t pos = atomic_load_explicit(&ring_tail, memory_order_relaxed);
	struct slot *s;

	for (;;) {
		uint64_t base = pos & ~RING_MASK, seq;

		s = &ring[pos & RING_MASK];
		seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (seq == base) {
			if (atomic_compare_exchange_weak_explicit(&ring_tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if ((int64_t)(seq - base) < 0) {
			return 0;	/* full: the slot's last event was not taken yet */
		} else {
			pos = atomic_load_explicit(&ring_tail, memory_order_relaxed);
		}
	}
	s->ev = *ev;
	atomic_store_explicit(&s->seq, (pos & ~RING_MASK) + 1, memory_order_release);
	return 1;
}

static int ring_pop(struct apx_heap_event *out)
{
	uint64_t pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
	struct slot *s;

	for (;;) {
		uint64_t base = pos & ~RING_MASK, seq;

		s = &ring[pos & RING_MASK];
		seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (seq == base + 1) {
			if (atomic_compare_exchange_weak_explicit(&ring_head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if ((int64_t)(seq - (base + 1)) < 0) {
			return 0;	/* empty, or the producer has not finished writing */
		} else {
			pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
		}
	}
	*out = s->ev;
	atomic_store_explicit(&s->seq, (pos & ~RING_MASK) + APX_HS_RING, memory_order_release);
	return 1;
}

/* ---- the slow paths ------------------------------------------------------------------------ */

static __attribute__((noinline)) void record(void *p, size_t n, unsigned flags, void *caller)
{
	struct apx_heap_event ev;
	uint32_t (*pystack)(uint32_t *);
	void *frames[APX_HS_FRAMES + 8];
	int nb = 0, k = 0;
	int unsafe = 0;

	ev.ts_ns = mono_ns();
	ev.addr = (uintptr_t)p;
	ev.bytes = n;
	ev.interval = flags & APX_HS_F_LARGE ? 0 : g_interval;
	ev.tid = my_tid();
	ev.pystack = 0;
	ev.op = APX_HS_ALLOC;
	for (unsigned i = 0; i < n_unsafe; i++)
		unsafe |= in_range(&r_unsafe[i], (uintptr_t)caller);
	if ((flags & APX_HS_F_LARGE) && !g_interval) {
		/* large allocations only: no native stack (1.5 us a record), the Python one */
	} else if (unsafe || g_nostack) {
		flags |= APX_HS_F_NOSTACK;
		atomic_fetch_add_explicit(&st_nostack, 1, memory_order_relaxed);
	} else {
		nb = backtrace(frames, (int)(sizeof(frames) / sizeof(frames[0])));
	}
	while (k < nb && in_range(&r_self, (uintptr_t)frames[k]))
		k++;	/* this library's own frames */
	ev.nframes = 0;
	for (; k < nb && ev.nframes < APX_HS_FRAMES; k++)
		ev.frames[ev.nframes++] = (uintptr_t)frames[k];
	pystack = atomic_load_explicit(&g_hooks.pystack, memory_order_acquire);
	if (pystack) {
		uint32_t pytid = 0;

		ev.pystack = pystack(&pytid);
	}
	if (!live_insert(p)) {
		flags |= APX_HS_F_UNTRACKED;
		atomic_fetch_add_explicit(&st_untracked, 1, memory_order_relaxed);
	}
	ev.flags = (uint8_t)flags;
	if (!ring_push(&ev)) {
		atomic_fetch_add_explicit(&st_lost, 1, memory_order_relaxed);
		if (!(flags & APX_HS_F_UNTRACKED))
			live_remove(p);		/* its free would name an unknown sample */
		return;
	}
	atomic_fetch_add_explicit(&st_samples, 1, memory_order_relaxed);
}

#define OFF_RECHECK (1ll << 20)	/* sampling off: look again after this many bytes */

/* The countdown went below zero: seed the thread, or sample (p, n). */
static __attribute__((noinline)) void countdown_out(void *p, size_t n, unsigned flags,
						    void *caller)
{
	if (unlikely(t.probing)) {
		t.probe_hit = 1;
		return;
	}
	if (t.guard)
		return;		/* inside our own sampling or the consumer's hook */
	if (t.ignored) {
		t.left = INT64_MAX / 2;
		return;
	}
	if (!atomic_load_explicit(&g_on, memory_order_acquire)) {
		t.left = OFF_RECHECK;
		return;
	}
	if (!g_interval) {
		t.left = INT64_MAX / 2;	/* large allocations only: no sampling */
		return;
	}
	if (!t.inited) {
		/* a new thread: its first distance still counts this allocation */
		t.inited = 1;
		t.rng = g_seed ? g_seed + 0x632be59bd9b4e019ull *
					  (atomic_fetch_add(&g_seeded, 1) + 1)
			       : mono_ns() ^ ((uint64_t)my_tid() << 32) ^ (uintptr_t)&t;
		t.left += draw();
		if (t.left >= 0)
			return;
	}
	t.left = draw();
	t.guard++;
	record(p, n, flags, caller);
	t.guard--;
}

/* An allocation of the large threshold or more: recorded whatever the countdown. */
static __attribute__((noinline)) void large_out(void *p, size_t n, unsigned flags, void *caller)
{
	if (t.guard || t.ignored || !atomic_load_explicit(&g_on, memory_order_acquire))
		return;
	t.guard++;
	record(p, n, flags | APX_HS_F_LARGE, caller);
	t.guard--;
}

static inline __attribute__((always_inline)) void account(void *p, size_t n, unsigned flags,
							  void *caller)
{
	if (unlikely(n >= g_large))
		large_out(p, n, flags, caller);
	else if (unlikely((t.left -= (int64_t)n) < 0))
		countdown_out(p, n, flags, caller);
}

/* A sampled allocation may be going away: its FREE event. */
static __attribute__((noinline)) void forget(void *p, unsigned flags)
{
	struct apx_heap_event ev;

	if (!live_remove(p))
		return;		/* the filter's false positive */
	memset(&ev, 0, offsetof(struct apx_heap_event, frames));
	ev.ts_ns = mono_ns();	/* before the real free: the address cannot be reused yet */
	ev.addr = (uintptr_t)p;
	ev.tid = my_tid();
	ev.op = APX_HS_FREE;
	ev.flags = (uint8_t)flags;
	if (ring_push(&ev))
		atomic_fetch_add_explicit(&st_frees, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&st_lost, 1, memory_order_relaxed);
}

/* ---- the wrappers ---------------------------------------------------------------------------- */

void *malloc(size_t n)
{
	void *p;

	if (unlikely(!ready()))
		return boot_alloc(n, 16);
	p = real.malloc(n);
	if (likely(p != NULL))
		account(p, n, 0, __builtin_return_address(0));
	return p;
}

void free(void *p)
{
	if (!p || unlikely(in_boot(p)))
		return;
	if (unlikely(!ready()))
		return;		/* a block of the allocator we have not found: leave it */
	if (unlikely(maybe_live(p)))
		forget(p, 0);
	real.free(p);
}

void *calloc(size_t a, size_t b)
{
	size_t n;
	void *p;

	if (unlikely(!ready()))
		return __builtin_mul_overflow(a, b, &n) ? NULL : boot_alloc(n, 16);
	p = real.calloc(a, b);
	if (likely(p != NULL) && !__builtin_mul_overflow(a, b, &n))
		account(p, n, APX_HS_F_CALLOC, __builtin_return_address(0));
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q;

	if (unlikely(!ready()) || (p && unlikely(in_boot(p)))) {
		size_t old = p ? boot_size(p) : 0;

		q = ready() ? real.malloc(n) : boot_alloc(n, 16);
		if (q && p)
			memcpy(q, p, old < n ? old : n);
		return q;
	}
	if (p && unlikely(maybe_live(p)))
		forget(p, APX_HS_F_REALLOC);
	q = real.realloc(p, n);
	if (likely(q != NULL) && n)
		account(q, n, APX_HS_F_REALLOC, __builtin_return_address(0));
	return q;
}

/* glibc's own reallocarray may call realloc inside libc, past this library: its own wrapper */
void *reallocarray(void *p, size_t a, size_t b)
{
	size_t n;

	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n);
}

int posix_memalign(void **ret, size_t align, size_t n)
{
	void *p;

	if (unlikely(!ready())) {
		p = boot_alloc(n, align);
		if (!p)
			return ENOMEM;
		*ret = p;
		return 0;
	}
	if (real.posix_memalign) {
		int r = real.posix_memalign(ret, align, n);

		if (r == 0 && *ret)
			account(*ret, n, APX_HS_F_ALIGNED, __builtin_return_address(0));
		return r;
	}
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = real.memalign(align, n);
	if (!p)
		return ENOMEM;
	*ret = p;
	account(p, n, APX_HS_F_ALIGNED, __builtin_return_address(0));
	return 0;
}

static void *aligned(void *(*fn)(size_t, size_t), size_t align, size_t n, void *caller)
{
	void *p;

	if (unlikely(!ready()))
		return boot_alloc(n, align);
	p = fn ? fn(align, n) : real.memalign(align, n);
	if (likely(p != NULL))
		account(p, n, APX_HS_F_ALIGNED, caller);
	return p;
}

void *aligned_alloc(size_t align, size_t n)
{
	return aligned(ready() ? real.aligned_alloc : NULL, align, n, __builtin_return_address(0));
}

void *memalign(size_t align, size_t n)
{
	return aligned(ready() ? real.memalign : NULL, align, n, __builtin_return_address(0));
}

void *valloc(size_t n)
{
	void *p;

	if (unlikely(!ready()))
		return boot_alloc(n, 4096);
	p = real.valloc ? real.valloc(n) : real.memalign((size_t)sysconf(_SC_PAGESIZE), n);
	if (likely(p != NULL))
		account(p, n, APX_HS_F_ALIGNED, __builtin_return_address(0));
	return p;
}

void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (unlikely(!ready()))
		return boot_alloc((n + page - 1) & ~(page - 1), page);
	p = real.pvalloc ? real.pvalloc(n) : real.memalign(page, (n + page - 1) & ~(page - 1));
	if (likely(p != NULL))
		account(p, n, APX_HS_F_ALIGNED, __builtin_return_address(0));
	return p;
}

/* ---- the consumer's side (heap.h) ------------------------------------------------------------ */

EXPORT int apx_heap_attach(unsigned abi, const struct apx_heap_hooks *hooks)
{
	int zero = 0;

	if (abi != APX_HS_ABI)
		return -EPROTO;
	if (atomic_load(&g_status) == APX_HS_FORKED)
		return -ESRCH;
	if (!atomic_compare_exchange_strong(&g_hooks.attached, &zero, 1))
		return -EBUSY;
	atomic_store_explicit(&g_hooks.pystack, hooks ? hooks->pystack : NULL,
			      memory_order_release);
	return 0;
}

EXPORT void apx_heap_detach(void)
{
	atomic_store_explicit(&g_hooks.pystack, NULL, memory_order_release);
	atomic_store(&g_hooks.attached, 0);
}

EXPORT size_t apx_heap_take(struct apx_heap_event *out, size_t max)
{
	size_t n = 0;

	while (n < max && ring_pop(&out[n]))
		n++;
	return n;
}

EXPORT void apx_heap_stats(struct apx_heap_stats *ret)
{
	ret->interval = g_interval;
	ret->large = g_large == UINT64_MAX ? 0 : g_large;
	ret->samples = atomic_load(&st_samples);
	ret->frees = atomic_load(&st_frees);
	ret->lost = atomic_load(&st_lost);
	ret->untracked = atomic_load(&st_untracked);
	ret->nostack = atomic_load(&st_nostack);
	ret->live = atomic_load(&g_nlive);
	ret->status = atomic_load(&g_status);
}

EXPORT void apx_heap_ignore_thread(void)
{
	t.ignored = 1;
	t.left = INT64_MAX / 2;
}
