/*
 * src_pysampler.c - periodic samples of every thread of the process (apx analyze
 * --python-sampling HZ, default 200, 0 = off): each Python thread's stack, read by copying
 * reads only (pystack.h: a chain that changes under the reader gives -EFAULT and the sample
 * is dropped and counted, never a fault), and every thread's state, the system call it waits
 * in and its CPU time from /proc/self/task. Runs on a thread of its own that never stops the
 * program: no ptrace, no GIL, no signal. When a tick costs more than a tenth of its period
 * (many threads), the period grows, and each SAMPLE record says the period it stands for.
 * Threads without Python frames (CUDA's, NCCL's, autograd's engine) get samples without a
 * stack. About once a second each thread's voluntary and involuntary context switches are
 * read from /proc/self/task/TID/status and written as a CPU record of that thread (its TID),
 * with its user and system time. A single-producer ring hands samples to the writer (drain).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"
#include "base/procfs.h"
#include "collector/pystacks.h"

#include "base/banned.h"

#define SAMPLE_SLOTS (1u << 16)
#define MAX_THREADS 1024
#define MAX_PY_THREADS 512
#define CSW_EVERY 200			/* ticks between two reads of a thread's switches (~1 s) */

struct sample {
	uint64_t ts_ns, cpu_ns, period_ns;
	uint64_t utime_ns, stime_ns, vcsw, ivcsw;	/* with csw: the thread's CPU record */
	uint32_t tid, stack;
	int32_t syscall;
	uint8_t state, csw;
};

struct tinfo {
	pid_t tid;
	int stat_fd, sys_fd;
	uint8_t state;
	int32_t syscall;
	uint64_t cpu_ns, utime_ns, stime_ns;
	uintptr_t last_frame;		/* Python: the innermost frame and instruction last time */
	uintptr_t last_instr;
	uint32_t last_stack;
	int seen;
};

static struct {
	uint64_t period_ns, base_ns;
	pthread_t thread;
	int started;
	_Atomic int stop;
	struct sample *ring;
	_Atomic uint64_t head;		/* written by the sampler only */
	uint64_t tail;			/* writer only */
	_Atomic uint64_t samples, dropped, lapped, ticks, slow_ticks;
	struct tinfo t[MAX_THREADS];
	int nt;
	long hz_clk;
} g_smp;

static uint8_t state_of(char c)
{
	switch (c) {
	case 'R': return APX_TSTATE_RUNNING;
	case 'S': return APX_TSTATE_SLEEPING;
	case 'D': return APX_TSTATE_DISK;
	case 'T': case 't': return APX_TSTATE_STOPPED;
	default: return APX_TSTATE_OTHER;
	}
}

static int open_task(pid_t tid, const char *what)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/task/%d/%s", (int)tid, what);
	return open(p, O_RDONLY | O_CLOEXEC);
}

/* The thread's state letter and utime + stime from /proc/self/task/TID/stat, and its
 * system call from .../syscall when it waits. */
static void read_proc(struct tinfo *t)
{
	char buf[512], *p;
	ssize_t n;
	unsigned long long ut = 0, st = 0;

	if (t->stat_fd < 0)
		t->stat_fd = open_task(t->tid, "stat");
	if (t->stat_fd < 0 || (n = pread(t->stat_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return;
	buf[n] = '\0';
	p = strrchr(buf, ')');		/* comm may hold spaces and parentheses */
	if (!p || p[1] != ' ')
		return;
	t->state = state_of(p[2]);
	/* fields after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p + 4, "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) {
		t->utime_ns = ut * (1000000000ull / (uint64_t)g_smp.hz_clk);
		t->stime_ns = st * (1000000000ull / (uint64_t)g_smp.hz_clk);
		t->cpu_ns = t->utime_ns + t->stime_ns;
	}
	t->syscall = -1;
	if (t->state == APX_TSTATE_SLEEPING || t->state == APX_TSTATE_DISK) {
		if (t->sys_fd < 0)
			t->sys_fd = open_task(t->tid, "syscall");
		if (t->sys_fd >= 0 && (n = pread(t->sys_fd, buf, 32, 0)) > 0) {
			buf[n] = '\0';
			if (buf[0] >= '0' && buf[0] <= '9')
				t->syscall = (int32_t)strtol(buf, NULL, 10);
		}
	}
}

/* The thread's context switches so far (cumulative), into s; 0 when its status is gone. */
static int read_csw(const struct tinfo *t, struct sample *s)
{
	char path[64], buf[2048];

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)t->tid);
	if (apx_read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	s->vcsw = apx_status_value(buf, "\nvoluntary_ctxt_switches");
	s->ivcsw = apx_status_value(buf, "\nnonvoluntary_ctxt_switches");
	s->utime_ns = t->utime_ns;
	s->stime_ns = t->stime_ns;
	return s->vcsw || s->ivcsw;
}

static struct tinfo *tinfo_of(pid_t tid)
{
	for (int i = 0; i < g_smp.nt; i++)
		if (g_smp.t[i].tid == tid)
			return &g_smp.t[i];
	if (g_smp.nt == MAX_THREADS)
		return NULL;
	g_smp.t[g_smp.nt] = (struct tinfo){ .tid = tid, .stat_fd = -1, .sys_fd = -1, .syscall = -1 };
	return &g_smp.t[g_smp.nt++];
}

/* Threads that ended since the last listing are forgotten (fds closed). */
static void list_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	pid_t self = (pid_t)gettid();

	if (!d)
		return;
	for (int i = 0; i < g_smp.nt; i++)
		g_smp.t[i].seen = 0;
	while ((de = readdir(d)) != NULL) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		struct tinfo *t;

		if (tid <= 0 || tid == self)
			continue;
		if ((t = tinfo_of(tid)) != NULL)
			t->seen = 1;
	}
	closedir(d);
	for (int i = 0; i < g_smp.nt;) {
		if (!g_smp.t[i].seen) {
			if (g_smp.t[i].stat_fd >= 0)
				close(g_smp.t[i].stat_fd);
			if (g_smp.t[i].sys_fd >= 0)
				close(g_smp.t[i].sys_fd);
			g_smp.t[i] = g_smp.t[--g_smp.nt];
		} else {
			i++;
		}
	}
}

static void put(const struct sample *s)
{
	uint64_t h = atomic_load_explicit(&g_smp.head, memory_order_relaxed);

	g_smp.ring[h & (SAMPLE_SLOTS - 1)] = *s;
	atomic_store_explicit(&g_smp.head, h + 1, memory_order_release);
	atomic_fetch_add_explicit(&g_smp.samples, 1, memory_order_relaxed);
}

/* A Python thread's stack: unchanged since the last tick when its innermost frame and
 * instruction are (one copying read of two words), else walked again. */
static uint32_t py_stack(const struct apx_py_runtime *rt, uintptr_t tstate, struct tinfo *t)
{
	struct apx_py_raw_frame f[APX_PYSTACK_DEPTH];
	uintptr_t frame = 0, instr = 0;
	int n, trunc;

	if (apx_py_current_frame(rt, tstate, &frame) < 0) {
		atomic_fetch_add(&g_smp.dropped, 1);
		return 0;
	}
	if (!frame)
		return 0;
	if (apx_py_read(frame + rt->L.frame_instr, &instr, sizeof(instr)) < 0) {
		atomic_fetch_add(&g_smp.dropped, 1);
		return 0;
	}
	if (t && t->last_stack && frame == t->last_frame && instr == t->last_instr)
		return t->last_stack;
	n = apx_py_walk_copy(rt, tstate, f, APX_PYSTACK_DEPTH, &trunc);
	if (n < 0) {
		atomic_fetch_add(&g_smp.dropped, 1);	/* the chain changed under us */
		return 0;
	}
	if (!n)
		return 0;
	if (t) {
		t->last_frame = frame;
		t->last_instr = instr;
		t->last_stack = apx_pystacks_intern(f, n, trunc);
		return t->last_stack;
	}
	return apx_pystacks_intern(f, n, trunc);
}

static void tick(uint64_t now, uint64_t period, int relist, int proc_every, uint64_t nth,
		 int csw)
{
	const struct apx_py_runtime *rt = apx_pystacks_runtime();
	struct apx_py_thread py[MAX_PY_THREADS];
	int npy = 0;

	if (relist)
		list_tasks();
	if (rt && !(rt->is_finalizing && rt->is_finalizing())) {
		npy = apx_py_threads(rt, py, MAX_PY_THREADS);
		if (npy < 0) {
			atomic_fetch_add(&g_smp.dropped, 1);
			npy = 0;
		}
	}
	for (int i = 0; i < g_smp.nt; i++) {
		struct tinfo *t = &g_smp.t[i];
		struct sample s = { .ts_ns = now, .period_ns = period, .tid = (uint32_t)t->tid };

		if (proc_every <= 1 || (uint64_t)(i % proc_every) == nth % (uint64_t)proc_every)
			read_proc(t);
		for (int k = 0; k < npy; k++)
			if (py[k].tid == t->tid) {
				s.stack = py_stack(rt, py[k].tstate, t);
				break;
			}
		s.state = t->state;
		s.syscall = t->syscall;
		s.cpu_ns = t->cpu_ns;
		s.csw = (uint8_t)(csw && read_csw(t, &s));
		put(&s);
	}
}

static void *sampler_main(void *arg)
{
	struct apx_collector *c = arg;
	uint64_t period = g_smp.base_ns, next = apx_mono_ns() + period, n = 0;
	sigset_t all;

	sigfillset(&all);	/* no signal of the program's lands here */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load_explicit(&g_smp.stop, memory_order_relaxed)) {
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		uint64_t t0, cost;
		int proc_every;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (atomic_load_explicit(&g_smp.stop, memory_order_relaxed))
			break;
		if (!atomic_load_explicit(&c->enabled, memory_order_relaxed)) {
			next += period;
			continue;	/* outside the --delay/--duration window */
		}
		t0 = apx_mono_ns();
		/* /proc reads are the dear part: at most ~2,000 a second in all */
		proc_every = (int)((uint64_t)g_smp.nt * (1000000000ull / period) / 2000 + 1);
		tick(t0, period, n % 50 == 0, proc_every, n, n % CSW_EVERY == 1);
		n++;
		atomic_fetch_add(&g_smp.ticks, 1);
		cost = apx_mono_ns() - t0;
		if (cost * 10 > period && period < 1000000000ull) {
			period *= 2;	/* keep the sampler under a tenth of one core */
			atomic_fetch_add(&g_smp.slow_ticks, 1);
		} else if (cost * 40 < period && period > g_smp.base_ns) {
			period /= 2;
		}
		next += period;
		if (next < apx_mono_ns())
			next = apx_mono_ns() + period;
	}
	return NULL;
}

static int sampler_start(struct apx_collector *c)
{
	uint64_t hz = apx_env_u64("APX_PY_SAMPLING_HZ", 200, 10000);

	if (!hz)
		return -1;
	g_smp.hz_clk = sysconf(_SC_CLK_TCK);
	if (g_smp.hz_clk <= 0)
		g_smp.hz_clk = 100;
	g_smp.base_ns = 1000000000ull / hz;
	g_smp.ring = calloc(SAMPLE_SLOTS, sizeof(*g_smp.ring));
	if (!g_smp.ring) {
		apx_degraded(c, "python-sampling: out of memory", -ENOMEM);
		return -1;
	}
	if (pthread_create(&g_smp.thread, NULL, sampler_main, c) != 0) {
		apx_degraded(c, "python-sampling: cannot start the sampler thread", -EAGAIN);
		return -1;
	}
	pthread_setname_np(g_smp.thread, "apx-sampler");
	g_smp.started = 1;
	return 0;
}

static void sampler_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	uint64_t head;

	if (!g_smp.ring)
		return;
	head = atomic_load_explicit(&g_smp.head, memory_order_acquire);
	if (head - g_smp.tail > SAMPLE_SLOTS) {
		atomic_fetch_add(&g_smp.lapped, head - g_smp.tail - SAMPLE_SLOTS);
		g_smp.tail = head - SAMPLE_SLOTS;
	}
	apx_pystacks_drain(c->enc);	/* the stacks the samples name come first */
	for (; g_smp.tail < head; g_smp.tail++) {
		const struct sample *s = &g_smp.ring[g_smp.tail & (SAMPLE_SLOTS - 1)];
		struct apx_rec rec;

		apx_rec_init(&rec, APX_REC_SAMPLE);
		rec.v[APX_SAMPLE_TS_NS] = s->ts_ns;
		rec.v[APX_SAMPLE_TID] = s->tid;
		rec.v[APX_SAMPLE_STACK] = s->stack;
		rec.v[APX_SAMPLE_STATE] = s->state;
		apx_rec_set_i64(&rec, APX_SAMPLE_SYSCALL, s->syscall);
		rec.v[APX_SAMPLE_CPU_NS] = s->cpu_ns;
		rec.v[APX_SAMPLE_PERIOD_NS] = s->period_ns;
		(void)apx_writer_add(c->w, &rec);
		if (!s->csw)
			continue;
		apx_rec_init(&rec, APX_REC_CPU);	/* the thread's own: TID set */
		rec.v[APX_CPU_TS_NS] = s->ts_ns;
		rec.v[APX_CPU_PID] = (uint64_t)getpid();
		rec.v[APX_CPU_TID] = s->tid;
		rec.v[APX_CPU_UTIME_NS] = s->utime_ns;
		rec.v[APX_CPU_STIME_NS] = s->stime_ns;
		rec.v[APX_CPU_VOL_CSW] = s->vcsw;
		rec.v[APX_CPU_INVOL_CSW] = s->ivcsw;
		(void)apx_writer_add(c->w, &rec);
	}
}

static void sampler_stop(struct apx_collector *c)
{
	if (!g_smp.started)
		return;
	atomic_store(&g_smp.stop, 1);
	pthread_join(g_smp.thread, NULL);
	g_smp.started = 0;
}

static void sampler_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[256];

	if (!g_smp.ring)
		return;
	sampler_stop(c);
	sampler_drain(c, now_ns, 0);
	snprintf(text, sizeof(text), "%.0f Hz asked; %llu ticks (%llu over budget: period "
		 "doubled), %llu samples, %llu dropped (frames changed under the reader), %llu "
		 "lost (writer lapped)", 1e9 / (double)g_smp.base_ns,
		 (unsigned long long)g_smp.ticks, (unsigned long long)g_smp.slow_ticks,
		 (unsigned long long)g_smp.samples, (unsigned long long)g_smp.dropped,
		 (unsigned long long)g_smp.lapped);
	apx_add_kv(c, "python_sampling", text);
}

const struct apx_source apx_source_pysampler = {
	.name = "pysampler",
	.start = sampler_start,
	.drain = sampler_drain,
	.stop = sampler_stop,
	.finish = sampler_finish,
};
