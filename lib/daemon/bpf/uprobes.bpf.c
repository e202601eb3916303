// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uprobes.bpf.c - nvperfd's BPF programs, attached as uprobes (entry) and uretprobes (return)
 * to the libcuda.so.1 a tracked process maps, one attachment per process with the process's
 * tgid as BPF cookie (uprobes are per inode: the cookie and the "procs" map keep one process's
 * calls from being counted for another). Only low-rate driver calls are probed: pinned host
 * allocations and registrations, host<->device copies, the persisting-L2 limit and access-policy
 * windows; never kernel launches. Each call is counted against the process's rate cap; over it,
 * the probes do nothing and one APX_UP_OVER_RATE event asks user space (uprobes.c) to detach.
 * Built by clang -target bpf at build time; only UAPI headers (no kernel struct is read, so no
 * CO-RE relocation is needed).
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobes.h"

#include "base/banned.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, APX_UP_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct apx_up_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, APX_UP_PENDING_MAX);
	__type(key, __u64);
	__type(value, struct apx_up_pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, APX_UP_RINGBUF_BYTES);
} events SEC(".maps");

/* The state of the calling process when this call is to be recorded, else NULL. Counts the
 * call and enforces the rate cap (1 s windows). */
static __always_inline struct apx_up_proc *gate(struct pt_regs *ctx, __u32 tgid)
{
	struct apx_up_proc *s;
	__u64 cookie = bpf_get_attach_cookie(ctx), now;

	if (cookie && cookie != tgid)
		return 0;
	s = bpf_map_lookup_elem(&procs, &tgid);
	if (!s || s->disabled)
		return 0;
	now = bpf_ktime_get_ns();
	__sync_fetch_and_add(&s->calls, 1);
	if (now - s->win_start_ns >= 1000000000ull) {
		s->win_start_ns = now;
		s->win_calls = 0;
	}
	s->win_calls++;
	if (s->max_rate && s->win_calls > s->max_rate) {
		struct apx_up_event *e;

		s->disabled = 1;
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&s->lost, 1);
			return 0;
		}
		__builtin_memset(e, 0, sizeof(*e));
		e->tgid = tgid;
		e->tid = (__u32)bpf_get_current_pid_tgid();
		e->kind = APX_UP_OVER_RATE;
		e->ts_ns = now;
		e->b = s->win_calls;
		bpf_ringbuf_submit(e, 0);
		return 0;
	}
	return s;
}

static __always_inline int enter(struct pt_regs *ctx, __u32 kind, __u32 flags, __u64 a, __u64 b,
				 __u64 c, __u32 ptrptr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct apx_up_pending p = {};
	struct apx_up_proc *s = gate(ctx, (__u32)(id >> 32));
	struct apx_up_event *e;

	if (!s)
		return 0;
	/* only pinned allocations (the pointer and the result) and, with uprobe_copy_time,
	 * copies have a return probe; every other call is one event from here */
	if (kind != APX_UP_PIN_ALLOC && kind != APX_UP_PIN_REGISTER &&
	    !((kind == APX_UP_COPY_H2D || kind == APX_UP_COPY_D2H) && s->copy_time)) {
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&s->lost, 1);
			return 0;
		}
		__builtin_memset(e, 0, sizeof(*e));
		e->tgid = (__u32)(id >> 32);
		e->tid = (__u32)id;
		e->kind = kind;
		e->flags = flags;
		e->ts_ns = bpf_ktime_get_ns();
		e->a = a;
		e->b = b;
		e->c = c;
		bpf_ringbuf_submit(e, 0);
		return 0;
	}
	p.ts_ns = bpf_ktime_get_ns();
	p.kind = kind;
	p.flags = flags;
	p.a = a;
	p.b = b;
	p.c = c;
	p.ptrptr = ptrptr;
	bpf_map_update_elem(&pending, &id, &p, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(up_host_alloc, void **pp, __u64 bytes)
{
	return enter(ctx, APX_UP_PIN_ALLOC, 0, (__u64)pp, bytes, 0, 1);
}

SEC("uprobe")
int BPF_KPROBE(up_host_register, void *p, __u64 bytes)
{
	return enter(ctx, APX_UP_PIN_REGISTER, 0, (__u64)p, bytes, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_free_host, void *p)
{
	return enter(ctx, APX_UP_PIN_FREE, 0, (__u64)p, 0, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_host_unregister, void *p)
{
	return enter(ctx, APX_UP_PIN_UNREGISTER, 0, (__u64)p, 0, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_h2d, __u64 dst, const void *src, __u64 bytes)
{
	return enter(ctx, APX_UP_COPY_H2D, 0, (__u64)src, bytes, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_h2d_async, __u64 dst, const void *src, __u64 bytes, __u64 stream)
{
	return enter(ctx, APX_UP_COPY_H2D, APX_UP_F_ASYNC, (__u64)src, bytes, stream, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_d2h, void *dst, __u64 src, __u64 bytes)
{
	return enter(ctx, APX_UP_COPY_D2H, 0, (__u64)dst, bytes, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_d2h_async, void *dst, __u64 src, __u64 bytes, __u64 stream)
{
	return enter(ctx, APX_UP_COPY_D2H, APX_UP_F_ASYNC, (__u64)dst, bytes, stream, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_set_limit, __u32 limit, __u64 value)
{
	if (limit != APX_CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
		return 0;
	return enter(ctx, APX_UP_L2_LIMIT, 0, 0, value, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(up_l2_reset)
{
	return enter(ctx, APX_UP_L2_RESET, 0, 0, 0, 0, 0);
}

/* CUaccessPolicyWindow: void *base_ptr; size_t num_bytes; float hitRatio; int hitProp, missProp */
struct cu_apw {
	__u64 base, bytes;
	__u32 hit_ratio_bits, hit_prop, miss_prop;
};

SEC("uprobe")
int BPF_KPROBE(up_stream_attr, __u64 stream, __u32 attr, const void *value)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct apx_up_proc *s;
	struct apx_up_event *e;
	struct cu_apw w = {};

	if (attr != APX_CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW)
		return 0;
	s = gate(ctx, (__u32)(id >> 32));
	if (!s)
		return 0;
	if (bpf_probe_read_user(&w, sizeof(w), value) < 0)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&s->lost, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->tgid = (__u32)(id >> 32);
	e->tid = (__u32)id;
	e->kind = APX_UP_APW;
	e->ts_ns = bpf_ktime_get_ns();
	e->a = w.base;
	e->b = w.bytes;
	e->c = stream;
	e->hit_ratio_bits = w.hit_ratio_bits;
	e->hit_prop = w.hit_prop;
	e->miss_prop = w.miss_prop;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* The return of any probed function: completes the pending call into one event. */
SEC("uretprobe")
int BPF_KRETPROBE(up_ret, int rc)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = (__u32)(id >> 32);
	struct apx_up_pending *p = bpf_map_lookup_elem(&pending, &id);
	struct apx_up_event *e;
	struct apx_up_proc *s;
	__u64 base = 0;

	if (!p)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		s = bpf_map_lookup_elem(&procs, &tgid);
		if (s)
			__sync_fetch_and_add(&s->lost, 1);
		bpf_map_delete_elem(&pending, &id);
		return 0;
	}
	e->tgid = tgid;
	e->tid = (__u32)id;
	e->kind = p->kind;
	e->flags = p->flags;
	e->rc = rc;
	e->hit_ratio_bits = p->hit_ratio_bits;
	e->hit_prop = p->hit_prop;
	e->miss_prop = p->miss_prop;
	e->ts_ns = p->ts_ns;
	e->dur_ns = now - p->ts_ns;
	e->a = p->a;
	e->b = p->b;
	e->c = p->c;
	if (p->ptrptr) {
		if (rc != 0 || bpf_probe_read_user(&base, sizeof(base), (const void *)p->a) < 0)
			base = 0;
		e->a = base;
	}
	bpf_ringbuf_submit(e, 0);
	bpf_map_delete_elem(&pending, &id);
	return 0;
}
