/*
 * heap.h - the interface between libapx-heap.so (heap.c: malloc and friends wrapped, every
 * allocation counted against a per-thread byte countdown, about one sample every N bytes) and
 * whoever takes its samples out: the collector (src_heap.c, through sink.c) or a stand-in in the
 * tests (tests/heap/heap_stub.c). docs/collector.md, "Host heap sampling".
 *
 * libapx-heap.so is preloaded (LD_PRELOAD, by apx analyze --heap-sampling-bytes N, which also
 * sets APX_HEAP_SAMPLING_BYTES=N); it is in the process's global scope, so its consumer finds
 * the functions below with dlsym(RTLD_DEFAULT, ...). The consumer is loaded later (the
 * collector when CUDA starts) and may never be: until it attaches, events wait in the
 * library's fixed ring (APX_HS_RING events; when it is full new ones are counted as lost).
 *
 * Events: an ALLOC of a sampled allocation (its size as asked, address, time, thread, native
 * return addresses innermost first, the Python stack id the consumer's hook gave), and a FREE
 * when a sampled allocation that is still tracked is freed (free, realloc). An ALLOC whose
 * address could not be tracked (the live table's probe limit) carries APX_HS_F_UNTRACKED:
 * its free is never seen. With APX_HEAP_LARGE_BYTES=L, every allocation of L bytes or more
 * is an ALLOC too, whatever the countdown (APX_HS_F_LARGE, interval 0; it does not count
 * down), with or without sampling: apx analyze records those by default, so that a report can
 * tell whether a large host buffer was freed (redundant-replication).
 *
 * Threads: apx_heap_attach / _detach / _take / _stats on the consumer's threads (take: one
 * consumer thread at a time); the hooks the consumer gives run on the program's threads inside
 * malloc (no allocation, no lock, no stdio there).
 */
#ifndef APX_COLLECTOR_HEAP_H
#define APX_COLLECTOR_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define APX_HS_ABI 2			/* bumped when anything below changes */
#define APX_HS_FRAMES 32		/* native return addresses kept per sample */
#define APX_HS_RING 8192u		/* events waiting for the consumer (a power of two) */

enum apx_hs_op { APX_HS_ALLOC = 1, APX_HS_FREE = 2 };

enum apx_hs_flag {
	APX_HS_F_UNTRACKED = 1 << 0,	/* ALLOC: not in the live table, its free is not seen */
	APX_HS_F_REALLOC = 1 << 1,	/* ALLOC by realloc; FREE by realloc */
	APX_HS_F_ALIGNED = 1 << 2,	/* ALLOC by posix_memalign, aligned_alloc, memalign,
					 * valloc, pvalloc */
	APX_HS_F_CALLOC = 1 << 3,	/* ALLOC by calloc */
	APX_HS_F_NOSTACK = 1 << 4,	/* ALLOC: native stack not taken (the caller is the
					 * unwinder or the dynamic loader: walking there could
					 * deadlock) */
	APX_HS_F_LARGE = 1 << 5,	/* ALLOC: of the large threshold or more, recorded
					 * whatever the countdown (interval 0: it stands for
					 * itself); its native stack only while sampling is on */
};

struct apx_heap_event {
	uint64_t ts_ns;			/* CLOCK_MONOTONIC */
	uint64_t addr;
	uint64_t bytes;			/* ALLOC: the size asked for; FREE: 0 */
	uint64_t interval;		/* ALLOC: the mean sampling interval in bytes (N) */
	uint32_t tid;			/* OS thread id */
	uint32_t pystack;		/* the consumer's Python stack id, 0 = none */
	uint8_t op;			/* enum apx_hs_op */
	uint8_t flags;			/* enum apx_hs_flag */
	uint8_t nframes;
	uint64_t frames[APX_HS_FRAMES];	/* return addresses, innermost first */
};

/* What the library counted since the process started (or since fork, in a child). */
struct apx_heap_stats {
	uint64_t interval;		/* N, 0 = sampling off */
	uint64_t large;			/* every allocation of this many bytes or more is
					 * recorded (APX_HEAP_LARGE_BYTES), 0 = none */
	uint64_t samples;		/* ALLOC events made */
	uint64_t frees;			/* FREE events made */
	uint64_t lost;			/* events dropped: the ring was full */
	uint64_t untracked;		/* ALLOC events the live table could not hold */
	uint64_t nostack;		/* ALLOC events without a native stack (unsafe to walk) */
	uint64_t live;			/* sampled allocations tracked now */
	uint32_t status;		/* enum apx_hs_status */
};

enum apx_hs_status {
	APX_HS_ON = 0,
	APX_HS_OFF = 1,		/* APX_HEAP_SAMPLING_BYTES and APX_HEAP_LARGE_BYTES unset or 0 */
	APX_HS_NOT_OURS = 2,		/* malloc resolves to another library (preloaded before
					 * this one, or linked into the program): nothing seen */
	APX_HS_NO_REAL = 3,		/* the next malloc could not be found */
	APX_HS_FORKED = 4,		/* a forked child: sampling stopped */
};

/* What the consumer hands over at attach; any member may be NULL. Called inside malloc on
 * the program's thread, with this library's own hooks off for that thread (an allocation
 * made there is not sampled): it must not block. */
struct apx_heap_hooks {
	/* The calling thread's Python stack: a stack id (0 = none), and its OS tid. */
	uint32_t (*pystack)(uint32_t *ret_tid);
};

/* Exported by libapx-heap.so. attach: abi must be APX_HS_ABI (else -EPROTO); hooks is
 * copied; 0 or -EBUSY when another consumer is attached. detach: no hook is called after it
 * returns (a call already inside one finishes). take: up to max events, oldest first; the
 * count. ignore_thread: the calling thread's allocations are no longer sampled (the
 * consumer's own writer thread). */
typedef int apx_heap_attach_fn(unsigned abi, const struct apx_heap_hooks *hooks);
typedef void apx_heap_detach_fn(void);
typedef size_t apx_heap_take_fn(struct apx_heap_event *out, size_t max);
typedef void apx_heap_stats_fn(struct apx_heap_stats *ret);
typedef void apx_heap_ignore_thread_fn(void);

int apx_heap_attach(unsigned abi, const struct apx_heap_hooks *hooks);
void apx_heap_detach(void);
size_t apx_heap_take(struct apx_heap_event *out, size_t max);
void apx_heap_stats(struct apx_heap_stats *ret);
void apx_heap_ignore_thread(void);

#endif
