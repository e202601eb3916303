/*
 * src_pystack.c - the Python stack at every kernel launch, copy, memset and host
 * synchronization (apx analyze --python-backtrace, on by default). In the CUPTI enter
 * callback the calling thread is inside our code, so its frame chain cannot change: it is
 * walked by direct loads (a few ns a frame, no GIL: the thread state comes from
 * PyGILState_GetThisThreadState, which reads thread-specific storage), hashed, and looked up
 * in the shared stack table (pystacks.c); the stack id is kept in its side table by
 * correlation id, which the writer joins to the KERNEL, MEMCPY and MEMSET records, and to
 * the MEMORY records of allocation calls (alloc_calls.c, encode.c). Host syncs and failed
 * allocation calls take it at API exit (src_callbacks.c, alloc_calls.c). start() finds the
 * interpreter and checks the layout on the starting thread (direct loads against copying
 * reads) before any direct load is trusted; an unknown interpreter leaves one degraded fact
 * and nothing else changes.
 *
 * Cost budget: each thread walks its whole stack at most APX_PY_STACK_BUDGET times a second
 * (default 100,000; counted in 100 ms windows on CLOCK_MONOTONIC_COARSE). Over it, a call
 * site seen before - the same innermost SITE_DEPTH frames (code object and instruction), which
 * hold the program's own line in a PyTorch stack - takes the stack its last walk gave, from a
 * small per-thread cache filled only over the budget, and a new call site is still walked.
 * Below the budget (every program measured so far: the bf16 GPT launches about 31,000 times
 * a second) every call is walked, with one coarse clock read more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/pystacks.h"

#include "base/banned.h"

#define SITE_DEPTH 8			/* frames that make a call site */
#define SITE_SLOTS 256			/* per-thread cache of call sites (a power of two) */
#define WINDOW_NS 100000000ull		/* the budget's window */

/* A thread's budget and its call-site cache (initial values: a fresh window, empty slots). */
struct site {
	uint64_t key;			/* hash of the site's frames, 0 = empty */
	uint32_t stack;
};
static __thread struct {
	uint64_t window;		/* coarse time / WINDOW_NS */
	uint32_t walks;			/* whole walks in this window */
	struct site site[SITE_SLOTS];
} g_tb;

static struct {
	int wanted;			/* APX_PY_BACKTRACE != 0 */
	uint32_t walks_per_window;	/* APX_PY_STACK_BUDGET / 10 */
	_Atomic uint64_t reused;	/* calls that took their site's last stack */
	_Atomic int on;			/* start() checked the layout */
	struct apx_collector *c;	/* its `enabled`: outside the collection window, nothing */
	char why[200];
} g_ps;

int apx_pystack_wanted(void)
{
	return g_ps.wanted;
}

/* Whether this thread has walked its budget of the current window (a new window starts at
 * zero); counts the walk that follows when not. */
static int over_budget(void)
{
	struct timespec now;
	uint64_t w;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	w = ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec) / WINDOW_NS;
	if (w != g_tb.window) {
		g_tb.window = w;
		g_tb.walks = 0;
	}
	if (g_tb.walks >= g_ps.walks_per_window)
		return 1;
	g_tb.walks++;
	return 0;
}

/* Over the budget: the stack of the call site f[0..n) (its innermost SITE_DEPTH frames) from
 * the thread's cache, or, for a site not there, the whole walk, cached. */
static uint32_t site_stack(const struct apx_py_runtime *rt, uintptr_t ts,
			   struct apx_py_raw_frame *f, int n, int trunc)
{
	uint64_t key = 0x9e3779b97f4a7c15ull;
	struct site *s;

	for (int i = 0; i < n; i++)
		key = (key ^ f[i].code ^ (uint64_t)f[i].lasti_bytes << 48) * 0xff51afd7ed558ccdull;
	key |= 1;	/* never 0: 0 is an empty slot */
	s = &g_tb.site[(key >> 32) & (SITE_SLOTS - 1)];
	if (s->key == key) {
		atomic_fetch_add_explicit(&g_ps.reused, 1, memory_order_relaxed);
		return s->stack;
	}
	if (trunc)	/* deeper than the site: the whole walk */
		n = apx_py_walk_own(rt, ts, f, APX_PYSTACK_DEPTH, &trunc);
	s->key = key;
	s->stack = apx_pystacks_intern(f, n, trunc);
	return s->stack;
}

uint32_t apx_pystack_here(uint32_t *ret_tid)
{
	const struct apx_py_runtime *rt;
	struct apx_py_raw_frame f[APX_PYSTACK_DEPTH];
	uintptr_t ts;
	int n, trunc;

	*ret_tid = 0;
	if (!atomic_load_explicit(&g_ps.on, memory_order_acquire) ||
	    !atomic_load_explicit(&g_ps.c->enabled, memory_order_relaxed))
		return 0;
	rt = apx_pystacks_runtime();
	if (rt->is_finalizing && rt->is_finalizing())
		return 0;	/* thread states may be freed from here on */
	ts = (uintptr_t)rt->this_thread_state();
	if (!ts)
		return 0;	/* a thread Python never saw (CUDA's, NCCL's) */
	if (rt->L.tstate_native_tid)
		*ret_tid = (uint32_t)*(const uint64_t *)(ts + rt->L.tstate_native_tid);
	if (!over_budget()) {	/* the common case: the whole walk, nothing else */
		n = apx_py_walk_own(rt, ts, f, APX_PYSTACK_DEPTH, &trunc);
		return n > 0 ? apx_pystacks_intern(f, n, trunc) : 0;	/* 0: no frames (autograd's
									 * engine threads) */
	}
	n = apx_py_walk_own(rt, ts, f, SITE_DEPTH, &trunc);
	if (n <= 0)
		return 0;
	return site_stack(rt, ts, f, n, trunc);
}

void apx_pystack_at_call(uint32_t corr)
{
	uint32_t tid, id;

	if (!corr || !atomic_load_explicit(&g_ps.on, memory_order_acquire) ||
	    !atomic_load_explicit(&g_ps.c->enabled, memory_order_relaxed))
		return;
	id = apx_pystack_here(&tid);
	apx_pystacks_set_corr(corr, id, tid);
}

/* The layout is right for this process when a walk by direct loads and one by copying reads
 * of this thread give the same frames, every one a code object. */
static int layout_checked(const struct apx_py_runtime *rt)
{
	struct apx_py_raw_frame a[APX_PYSTACK_DEPTH], b[APX_PYSTACK_DEPTH];
	uintptr_t ts = (uintptr_t)rt->this_thread_state();
	int na, nb, ta, tb;

	if (!ts)
		return 1;	/* CUDA started on a thread without Python: checked by the sampler */
	nb = apx_py_walk_copy(rt, ts, b, APX_PYSTACK_DEPTH, &tb);
	if (nb < 0)
		return 0;
	na = apx_py_walk_own(rt, ts, a, APX_PYSTACK_DEPTH, &ta);
	if (na != nb)
		return 0;
	for (int i = 0; i < na; i++)
		if (a[i].code != b[i].code || a[i].lasti_bytes != b[i].lasti_bytes)
			return 0;
	return 1;
}

static int pystack_start(struct apx_collector *c)
{
	static struct apx_py_runtime rt;
	int r, backward;

	g_ps.wanted = apx_env_u64("APX_PY_BACKTRACE", 1, 1) != 0;
	g_ps.walks_per_window = (uint32_t)(apx_env_u64("APX_PY_STACK_BUDGET", 100000, 10000000) /
					   (1000000000ull / WINDOW_NS));
	if (!g_ps.wanted && !apx_env_u64("APX_PY_SAMPLING_HZ", 200, 10000))
		return -1;
	r = apx_py_runtime_find(&rt, g_ps.why, sizeof(g_ps.why));
	if (r < 0) {
		g_ps.wanted = 0;
		if (r == -ENOENT)
			return -1;	/* not a Python program: nothing to say */
		apx_degraded(c, "python-stacks: this interpreter is not one apx can read (see kv "
			     "python_stacks)", 0);
		apx_say("python stacks off: %s", g_ps.why);
		return -1;
	}
	if (!layout_checked(&rt)) {
		g_ps.wanted = 0;
		snprintf(g_ps.why, sizeof(g_ps.why), "CPython 0x%x: frames read two ways disagree",
			 rt.L.version_hex);
		apx_degraded(c, "python-stacks: the interpreter's frames did not read back as "
			     "expected; stacks off", 0);
		apx_say("python stacks off: %s", g_ps.why);
		return -1;
	}
	if (apx_pystacks_init(&rt) < 0) {
		g_ps.wanted = 0;
		apx_degraded(c, "python-stacks: out of memory for the stack tables", -ENOMEM);
		return -1;
	}
	/* --python-backward nvtx: launches carry their host time and thread, which the report
	 * joins to PyTorch's op ranges (docs/collector.md, "Backward kernels") */
	backward = g_ps.wanted && apx_env_u64("APX_PY_BACKWARD", 0, 1);
	if (backward && apx_pystacks_launch_times() < 0) {
		backward = 0;
		apx_degraded(c, "python-backward: out of memory for the launch times", -ENOMEM);
	}
	snprintf(g_ps.why, sizeof(g_ps.why), "CPython %u.%u.%u%s%s", rt.L.version_hex >> 24,
		 (rt.L.version_hex >> 16) & 0xff, (rt.L.version_hex >> 8) & 0xff,
		 g_ps.wanted ? ", at launches, copies, memsets and syncs" : ", sampling only",
		 backward ? ", launch times for backward attribution" : "");
	g_ps.c = c;
	if (g_ps.wanted)
		atomic_store(&g_ps.on, 1);
	return 0;
}

static void pystack_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	apx_pystacks_drain(c->enc);
}

static void pystack_finish(struct apx_collector *c, uint64_t now_ns)
{
	uint64_t stacks, full, lost, bad;
	char text[448];

	if (!g_ps.why[0])
		return;
	apx_pystacks_drain(c->enc);
	apx_pystacks_stats(&stacks, &full, &lost, &bad);
	snprintf(text, sizeof(text), "%s; %llu stacks, %llu not kept (table full), %llu "
		 "definitions lost, %llu code objects unreadable, %llu calls over the walk budget "
		 "took their call site's last stack", g_ps.why,
		 (unsigned long long)stacks, (unsigned long long)full, (unsigned long long)lost,
		 (unsigned long long)bad, (unsigned long long)atomic_load(&g_ps.reused));
	apx_add_kv(c, "python_stacks", text);
}

const struct apx_source apx_source_pystack = {
	.name = "pystack",
	.start = pystack_start,
	.drain = pystack_drain,
	.finish = pystack_finish,
};
