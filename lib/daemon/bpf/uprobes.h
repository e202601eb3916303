/*
 * uprobes.h - what nvperfd's BPF programs (uprobes.bpf.c, compiled by clang -target bpf) and
 * their user-space half (uprobes.c, in the daemon) share: the event sent through the ring
 * buffer and the per-process state in the "procs" map. Plain C types only: this header is
 * compiled by both compilers.
 */
#ifndef APX_DAEMON_BPF_UPROBES_H
#define APX_DAEMON_BPF_UPROBES_H

#define APX_UP_PROCS_MAX 4096		/* processes probed at once (map size) */
#define APX_UP_PENDING_MAX 8192		/* calls between entry and return (LRU map) */
#define APX_UP_RINGBUF_BYTES (256u << 10)

/* what an event is about */
enum apx_up_kind {
	APX_UP_PIN_ALLOC = 1,		/* cuMemHostAlloc / cuMemAllocHost_v2: a = base, b = bytes */
	APX_UP_PIN_REGISTER = 2,	/* cuMemHostRegister_v2: a = base, b = bytes */
	APX_UP_PIN_FREE = 3,		/* cuMemFreeHost: a = base */
	APX_UP_PIN_UNREGISTER = 4,	/* cuMemHostUnregister: a = base */
	APX_UP_COPY_H2D = 5,		/* cuMemcpyHtoD(Async)_v2: a = host src, b = bytes */
	APX_UP_COPY_D2H = 6,		/* cuMemcpyDtoH(Async)_v2: a = host dst, b = bytes */
	APX_UP_L2_LIMIT = 7,		/* cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE): b = bytes */
	APX_UP_L2_RESET = 8,		/* cuCtxResetPersistingL2Cache */
	APX_UP_APW = 9,			/* cuStreamSetAttribute(ACCESS_POLICY_WINDOW): a = base,
					 * b = bytes, c = stream, hit = hitRatio bits, props */
	APX_UP_OVER_RATE = 10,		/* the process passed the rate cap: b = calls in the window */
	APX_UP_KIND__COUNT,
};

#define APX_UP_F_ASYNC 1u		/* the Async variant of a copy */

/* CUDA driver constants read by the probes (cuda.h, stable ABI) */
#define APX_CU_LIMIT_PERSISTING_L2_CACHE_SIZE 6
#define APX_CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW 1

struct apx_up_event {
	unsigned int tgid, tid;
	unsigned int kind;		/* enum apx_up_kind */
	unsigned int flags;		/* APX_UP_F_* */
	int rc;				/* CUresult of the call (0 = success) */
	unsigned int hit_ratio_bits;	/* APW: float hitRatio, as bits */
	unsigned int hit_prop, miss_prop;	/* APW: CUaccessProperty */
	unsigned long long ts_ns;	/* bpf_ktime_get_ns (CLOCK_MONOTONIC) at entry */
	unsigned long long dur_ns;	/* entry to return */
	unsigned long long a, b, c;
};

/* per probed process, key = tgid; created by user space, updated by the probes */
struct apx_up_proc {
	unsigned long long win_start_ns;	/* current 1 s rate window */
	unsigned long long win_calls;
	unsigned long long calls;		/* every probed call seen */
	unsigned long long lost;		/* events the ring buffer had no room for */
	unsigned long long max_rate;		/* calls per second allowed (0 = no cap) */
	unsigned int disabled;			/* 1: over the cap, probes do nothing */
	unsigned int copy_time;			/* 1: copies have a return probe (timed) */
};

/* an entry probe's call, completed by the return probe; key = pid_tgid */
struct apx_up_pending {
	unsigned long long ts_ns;
	unsigned long long a, b, c;
	unsigned int kind, flags;
	unsigned int hit_ratio_bits, hit_prop, miss_prop, ptrptr;
};

#endif
