/*
 * attach_inject.c - apx_attach_inject() (attach_inject.h): make a running CPython process
 * dlopen() a library and call one function of it, from outside, with ptrace. Called by apx
 * attach (cli/cmd_attach.c) and tests/attach/inject_main.c, on their main thread; no logging.
 *
 * Every thread is PTRACE_SEIZEd without being stopped (threads born meanwhile follow through
 * PTRACE_O_TRACECLONE), then an int3 is written over the first byte of PyEval_SaveThread
 * through /proc/PID/mem. The first thread to reach it holds the GIL and is about to release
 * it: it is at a C call boundary and holds no libc or loader lock, so dlopen cannot deadlock
 * there. The byte is put back at once and that thread is borrowed: with its registers saved,
 * it calls dlopen, dlsym and func in turn, each with return address 0 on its stack (below the
 * red zone), so that every call ends in a SIGSEGV at rip 0, which we catch. Then its registers
 * are restored with rip at the entry again, and every thread is detached. Meanwhile other
 * threads' signals are passed on, and threads that hit the int3 before it was removed are
 * moved back to the entry. Only the general registers are saved: at a function's entry the
 * vector and x87 registers are the caller's to lose (SysV ABI). A call site that a link-time
 * optimizer inlined does not trap; extension modules (torch) call the real entry.
 * Only a SIGKILL to apx while the int3 is there can hurt the process
 * (it then dies of SIGTRAP at its next GIL release); SIGINT and SIGTERM are held off.
 */
#include "cli/attach_inject.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__)
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/elf_sym.h"
#include "base/procfs.h"
#include "pystack/pystack.h"
#endif

#include "base/banned.h"

#if !defined(__x86_64__) || !defined(__linux__)
int apx_attach_inject(pid_t pid, const char *lib_path, const char *func, const char *arg,
		      int timeout_ms, int *ret_value, char *why, size_t why_cap)
{
	snprintf(why, why_cap, "loading a library into a process is implemented for x86_64 Linux "
		 "only");
	return -ENOTSUP;
}
#else

#define CALL_TIMEOUT_MS 120000	/* dlopen + func: the collector's start, CUPTI included */
#define DETACH_TIMEOUT_MS 2000
#define STR_MAX 4096		/* lib_path, func, arg: each, with its NUL */

struct thr {
	pid_t tid;
	int stopped;		/* in a ptrace-stop we have not resumed yet */
	int gone;		/* exited, or detached */
};

struct inj {
	pid_t pid;
	int mem;			/* /proc/PID/mem, read-write */
	uintptr_t entry;		/* PyEval_SaveThread in the target */
	uint8_t orig;			/* its first byte */
	int armed, ever_armed;		/* the int3 is there; was */
	pid_t call_tid;			/* the borrowed thread, once one hit the int3 */
	struct thr *t;			/* every thread we trace or traced */
	size_t n, cap;
	sigset_t stop_sigs;		/* SIGINT, SIGTERM: blocked meanwhile */
	int got_sig;			/* one of them came */
	int64_t hit_us;			/* when the borrowed thread stopped at the int3 */
};

struct dl_funcs {
	uintptr_t dlopen, dlsym, dlerror;
	char file[512];			/* printable: where they are */
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
	return now_us() / 1000;
}

/* Up to len bytes of s (or to its NUL) as printable ASCII, '?' for any other byte: for text
 * from the target (file names in its maps, dlerror()). */
static const char *ascii(char *out, size_t cap, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && i + 1 < cap && s[i]; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	return out;
}

static struct thr *thr_find(struct inj *x, pid_t tid)
{
	for (size_t i = 0; i < x->n; i++)
		if (x->t[i].tid == tid && !x->t[i].gone)
			return &x->t[i];
	return NULL;
}

/* Room for one more thread: 0 or -ENOMEM. Pointers into x->t do not survive it. */
static int thr_reserve(struct inj *x)
{
	struct thr *t;

	if (x->n < x->cap)
		return 0;
	t = realloc(x->t, (x->cap ? 2 * x->cap : 64) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	x->t = t;
	x->cap = x->cap ? 2 * x->cap : 64;
	return 0;
}

static struct thr *thr_add(struct inj *x, pid_t tid)
{
	struct thr *t = thr_find(x, tid);

	if (t || thr_reserve(x) < 0)
		return t;
	x->t[x->n] = (struct thr){ .tid = tid };
	return &x->t[x->n++];
}

static void resume(struct thr *t, int sig)
{
	ptrace(PTRACE_CONT, t->tid, NULL, (void *)(uintptr_t)sig);
	t->stopped = 0;
}

static uint64_t tracer_of(pid_t pid, pid_t tid)
{
	char path[64], st[4096];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	return apx_read_small(path, st, sizeof(st)) > 0 ? apx_status_value(st, "TracerPid:") : 0;
}

static int refuse_perm(pid_t pid, char *why, size_t why_cap)
{
	char path[32], scope[16] = "";
	struct stat st = { 0 };

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	(void)stat(path, &st);
	if (apx_read_small("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)) > 0)
		scope[strspn(scope, "0123456789")] = '\0';
	snprintf(why, why_cap, "not allowed to trace process %d (uid %u; apx runs as uid %u): it "
		 "is another user's process%s%s; run apx as the process's user%s, or as root",
		 (int)pid, (unsigned)st.st_uid, (unsigned)geteuid(),
		 scope[0] ? ", or /proc/sys/kernel/yama/ptrace_scope = " : "", scope,
		 scope[0] ? " forbids it (run with ptrace_scope 0)" : "");
	return -EPERM;
}

/* PTRACE_SEIZE one thread: 0 (traced by us now, or already: born of a traced thread), 1 (it
 * ended meanwhile), or a negative errno with why set. */
static int seize_one(struct inj *x, pid_t tid, char *why, size_t why_cap)
{
	uint64_t tracer;
	int r;

	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACECLONE) == 0)
		return 0;
	r = -errno;
	if (r == -ESRCH)
		return 1;
	tracer = tracer_of(x->pid, tid);
	if (tracer == (uint64_t)getpid())
		return 0;
	if (tracer) {
		snprintf(why, why_cap, "process %d is already traced by %llu (a debugger?)",
			 (int)x->pid, (unsigned long long)tracer);
		return -EBUSY;
	}
	if (r == -EPERM)
		return refuse_perm(x->pid, why, why_cap);
	snprintf(why, why_cap, "cannot trace thread %d of process %d: %s", (int)tid, (int)x->pid,
		 strerror(-r));
	return r;
}

/* Seize every thread of /proc/PID/task, scanning again until none is new. */
static int seize_all(struct inj *x, char *why, size_t why_cap)
{
	char path[64];
	int added, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)x->pid);
	do {
		DIR *d = opendir(path);
		struct dirent *e;

		if (!d)
			return -ESRCH;
		added = 0;
		while (r >= 0 && (e = readdir(d))) {
			char *end;
			long tid = strtol(e->d_name, &end, 10);

			if (tid <= 0 || *end || thr_find(x, (pid_t)tid))
				continue;
			r = thr_reserve(x);
			if (r == 0)
				r = seize_one(x, (pid_t)tid, why, why_cap);
			if (r == 0) {
				thr_add(x, (pid_t)tid);
				added = 1;
			}
		}
		closedir(d);
		if (r < 0)
			return r;
	} while (added);
	return x->n ? 0 : -ESRCH;
}

static int poke_byte(struct inj *x, uint8_t b)
{
	return pwrite(x->mem, &b, 1, (off_t)x->entry) == 1 ? 0 : -EIO;
}

/* Wait for the next report of interest, handling all others: the first thread to stop at the
 * int3 (while call_tid is 0), or call_tid back at address 0; *regs are its registers. Other
 * signals are passed on, events resumed, group-stops kept (PTRACE_LISTEN), late int3 hits
 * moved back to the entry. Returns that tid, or -ETIMEDOUT at deadline, -ESRCH when the
 * process or the borrowed thread ended, -EINTR on SIGINT/SIGTERM when interruptible. */
static int wait_next(struct inj *x, int64_t deadline, int interruptible,
		     struct user_regs_struct *regs)
{
	for (;;) {
		struct timespec ms = { 0, 1000000 };
		struct thr *t, tmp;
		int st, sig, ev;
		pid_t tid = waitpid(-1, &st, __WALL | WNOHANG);

		if (tid < 0 && errno == EINTR)
			continue;
		if (tid < 0)
			return -ESRCH;		/* ECHILD: no tracee left */
		if (tid == 0) {			/* nothing yet: sleep 1 ms, or take a signal */
			int s = sigtimedwait(&x->stop_sigs, NULL, &ms);

			if (s > 0)
				x->got_sig = s;
			if (x->got_sig && interruptible)
				return -EINTR;
			if (now_ms() >= deadline)
				return -ETIMEDOUT;
			continue;
		}
		t = thr_add(x, tid);		/* unknown: a new thread's first stop */
		if (!t) {
			tmp = (struct thr){ .tid = tid };
			t = &tmp;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = 1;
			if (tid == x->pid || tid == x->call_tid)
				return -ESRCH;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		t->stopped = 1;
		sig = WSTOPSIG(st);
		ev = st >> 16;
		if (ev == PTRACE_EVENT_CLONE) {
			unsigned long child = 0;

			ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child);
			resume(t, 0);
			if (child)
				thr_add(x, (pid_t)child);
			continue;
		}
		if (ev == PTRACE_EVENT_STOP && sig != SIGTRAP) {
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);	/* a group-stop: stays stopped */
			t->stopped = 0;
			continue;
		}
		if (ev) {
			resume(t, 0);
			continue;
		}
		if ((sig == SIGTRAP || sig == SIGSEGV) &&
		    ptrace(PTRACE_GETREGS, tid, NULL, regs) == 0) {
			if (sig == SIGTRAP && x->ever_armed && regs->rip == x->entry + 1) {
				if (!x->call_tid)
					return tid;
				regs->rip = x->entry;	/* hit before the byte was back */
				ptrace(PTRACE_SETREGS, tid, NULL, regs);
				resume(t, 0);
				continue;
			}
			if (sig == SIGSEGV && tid == x->call_tid && regs->rip == 0)
				return tid;
		}
		resume(t, sig);			/* the program's own signal */
	}
}

/* Run fn(a0, a1) on the borrowed thread, stopped, from registers *base, with stack pointer sp
 * (sp % 16 == 8, return address 0 at sp): 0 and its rax in *ret, or wait_next's error. */
static int remote_call(struct inj *x, const struct user_regs_struct *base, uintptr_t sp,
		       uintptr_t fn, uint64_t a0, uint64_t a1, uint64_t *ret)
{
	struct user_regs_struct r = *base;
	struct thr *t = thr_find(x, x->call_tid);
	int e;

	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;		/* not in a system call: nothing to restart */
	if (!t || ptrace(PTRACE_SETREGS, x->call_tid, NULL, &r) < 0)
		return -ESRCH;
	resume(t, 0);
	e = wait_next(x, now_ms() + CALL_TIMEOUT_MS, 0, &r);
	if (e < 0)
		return e;
	*ret = r.rax;
	return 0;
}

/* The target's dlerror(), sanitized, after a failed dlopen or dlsym. */
static const char *remote_dlerror(struct inj *x, const struct dl_funcs *dl,
				  const struct user_regs_struct *base, uintptr_t sp, char *out,
				  size_t cap)
{
	char buf[256];
	uint64_t s = 0;
	ssize_t n = -1;

	if (remote_call(x, base, sp, dl->dlerror, 0, 0, &s) == 0 && s)
		n = pread(x->mem, buf, sizeof(buf) - 1, (off_t)s);
	ascii(out, cap, buf, n > 0 ? (size_t)n : 0);
	return out[0] ? out : "no dlerror() message";
}

/* dlopen, dlsym, dlerror in the target's libc.so.6 (glibc >= 2.34), else its libdl.so.2. */
static int find_dl(pid_t pid, struct dl_funcs *ret, char *why, size_t why_cap)
{
	char path[64], line[1024], libc[512] = "", libdl[512] = "", safe[512];
	uintptr_t libc_at = 0, libdl_at = 0;
	struct apx_elf_sym y[3] = { { "dlopen", 0 }, { "dlsym", 0 }, { "dlerror", 0 } };
	unsigned machine = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == EACCES || errno == EPERM ? refuse_perm(pid, why, why_cap) : -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, off;
		int pos = 0;
		const char *file, *base;
		size_t len;

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %n", &start, &off, &pos) < 2 || !pos ||
		    line[pos] != '/' || off != 0)
			continue;
		file = line + pos;
		len = strcspn(file, "\n");
		line[pos + len] = '\0';
		base = strrchr(file, '/') + 1;
		if (len >= sizeof(libc) || strstr(file, " (deleted)"))
			continue;
		if (!libc[0] && (!strcmp(base, "libc.so.6") ||
				 (!strncmp(base, "libc-", 5) && strstr(base, ".so")))) {
			memcpy(libc, file, len + 1);
			libc_at = start;
		} else if (!libdl[0] && (!strcmp(base, "libdl.so.2") ||
					 !strncmp(base, "libdl-", 6))) {
			memcpy(libdl, file, len + 1);
			libdl_at = start;
		}
	}
	fclose(f);
	if (!libc[0]) {
		snprintf(why, why_cap, "process %d has no libc.so.6 in its memory map (statically "
			 "linked, or not glibc): apx loads libraries only with glibc's dlopen",
			 (int)pid);
		return -ENOTSUP;
	}
	ascii(ret->file, sizeof(ret->file), libc, sizeof(libc));
	if (apx_elf_lookup(pid, libc, libc_at, y, 3, &machine) < 0 || machine != EM_X86_64) {
		snprintf(why, why_cap, "process %d is not an x86_64 glibc process (%s)", (int)pid,
			 ret->file);
		return -ENOTSUP;
	}
	if (!y[0].addr && libdl[0]) {
		ascii(ret->file, sizeof(ret->file), libdl, sizeof(libdl));
		(void)apx_elf_lookup(pid, libdl, libdl_at, y, 3, NULL);
	}
	if (!y[0].addr || !y[1].addr || !y[2].addr) {
		snprintf(why, why_cap, "unknown C library: no dlopen, dlsym and dlerror in %s%s",
			 ascii(safe, sizeof(safe), libc, sizeof(libc)),
			 libdl[0] ? " nor in its libdl" : " and no libdl.so.2 loaded");
		return -ENOTSUP;
	}
	ret->dlopen = y[0].addr;
	ret->dlsym = y[1].addr;
	ret->dlerror = y[2].addr;
	return 0;
}

/* Stop a running thread with PTRACE_INTERRUPT, to detach it: returns the signal to pass on at
 * the detach (one that stopped it first), or 0. */
static int interrupt(struct inj *x, pid_t tid, int64_t deadline)
{
	struct user_regs_struct regs;
	pid_t w = 0;
	int st = 0;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return 0;
	while (now_ms() < deadline) {
		struct timespec ms = { 0, 1000000 };

		w = waitpid(tid, &st, __WALL | WNOHANG);
		if (w > 0 || (w < 0 && errno != EINTR))
			break;
		nanosleep(&ms, NULL);
	}
	if (w <= 0 || !WIFSTOPPED(st))
		return 0;		/* ended, or stuck: the detach fails, harmless */
	if (st >> 16 == PTRACE_EVENT_CLONE) {
		unsigned long child = 0;

		ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child);
		if (child)
			thr_add(x, (pid_t)child);
	}
	if (st >> 16)
		return 0;
	if (WSTOPSIG(st) == SIGTRAP && x->ever_armed &&
	    ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0 && regs.rip == x->entry + 1) {
		regs.rip = x->entry;	/* hit the int3 before it was removed */
		ptrace(PTRACE_SETREGS, tid, NULL, &regs);
		return 0;
	}
	return WSTOPSIG(st);
}

/* Detach every thread: stopped ones at once, running ones once interrupted. */
static void detach_all(struct inj *x)
{
	int64_t deadline = now_ms() + DETACH_TIMEOUT_MS;

	for (size_t i = 0; i < x->n; i++) {	/* x->n grows when a clone shows up */
		pid_t tid = x->t[i].tid;
		int sig = 0;

		if (x->t[i].gone)
			continue;
		if (!x->t[i].stopped)
			sig = interrupt(x, tid, deadline);
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)sig);
		x->t[i].gone = 1;
	}
}

/* The borrowed thread's three calls; 0 with func's return value, or a negative errno. */
static int run_calls(struct inj *x, const struct dl_funcs *dl, struct user_regs_struct *saved,
		     const char *lib_path, const char *func, const char *arg, int *ret_value,
		     char *why, size_t why_cap)
{
	size_t lp = strlen(lib_path) + 1, lf = strlen(func) + 1, la = strlen(arg) + 1;
	char buf[3 * STR_MAX], err[256], safe_lib[256], safe_func[128];
	uint64_t zero = 0, handle = 0, fn = 0, v = 0;
	uintptr_t area, sp;
	int r, ran = 0;

	/* below the red zone: the three strings, 16-aligned, then return address 0 */
	memcpy(buf, lib_path, lp);
	memcpy(buf + lp, func, lf);
	memcpy(buf + lp + lf, arg, la);
	area = (uintptr_t)(saved->rsp - 128 - (lp + lf + la)) & ~(uintptr_t)15;
	sp = area - 8;
	if (pwrite(x->mem, buf, lp + lf + la, (off_t)area) != (ssize_t)(lp + lf + la) ||
	    pwrite(x->mem, &zero, 8, (off_t)sp) != 8) {
		snprintf(why, why_cap, "cannot write to the stack of process %d", (int)x->pid);
		return -EIO;
	}
	ascii(safe_lib, sizeof(safe_lib), lib_path, lp);
	ascii(safe_func, sizeof(safe_func), func, lf);
	r = remote_call(x, saved, sp, dl->dlopen, area, RTLD_NOW, &handle);
	if (r == 0 && !handle) {
		snprintf(why, why_cap, "dlopen(%s) failed in process %d: %s", safe_lib, (int)x->pid,
			 remote_dlerror(x, dl, saved, sp, err, sizeof(err)));
		return -ENOEXEC;
	}
	if (r == 0 && !x->got_sig)
		r = remote_call(x, saved, sp, dl->dlsym, handle, area + lp, &fn);
	if (r == 0 && !x->got_sig && !fn) {
		snprintf(why, why_cap, "%s has no function %s: %s", safe_lib, safe_func,
			 remote_dlerror(x, dl, saved, sp, err, sizeof(err)));
		return -ENOEXEC;
	}
	if (r == 0 && !x->got_sig) {
		r = remote_call(x, saved, sp, fn, area + lp + lf, 0, &v);
		ran = r == 0;
	}
	if (r == 0 && !ran)
		r = -EINTR;
	if (r == -EINTR)
		snprintf(why, why_cap, "interrupted (signal %d) before %s ran", x->got_sig,
			 safe_func);
	else if (r == -ETIMEDOUT)
		snprintf(why, why_cap, "the call into %s did not return within %d s: process %d "
			 "was left running it, and crashes if it ever returns", safe_lib,
			 CALL_TIMEOUT_MS / 1000, (int)x->pid);
	else if (r < 0)
		snprintf(why, why_cap, "process %d ended while running dlopen(%s)", (int)x->pid,
			 safe_lib);
	else
		*ret_value = (int)(uint32_t)v;
	return r;
}

int apx_attach_inject(pid_t pid, const char *lib_path, const char *func, const char *arg,
		      int timeout_ms, int *ret_value, int64_t *paused_us, char *why, size_t why_cap)
{
	struct inj x = { .pid = pid, .mem = -1 };
	struct user_regs_struct saved;
	struct dl_funcs dl;
	sigset_t old_mask;
	char path[64], status[4096];
	uint64_t tracer;
	int r, restore_regs = 0;

	if (why_cap)
		why[0] = '\0';
	if (paused_us)
		*paused_us = 0;
	if (strlen(lib_path) >= STR_MAX || strlen(func) >= STR_MAX || strlen(arg) >= STR_MAX) {
		snprintf(why, why_cap, "library path, function name or argument too long");
		return -ENAMETOOLONG;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (pid <= 0 || apx_read_small(path, status, sizeof(status)) <= 0) {
		snprintf(why, why_cap, "no process %d", (int)pid);
		return -ESRCH;
	}
	tracer = apx_status_value(status, "TracerPid:");
	if (tracer) {
		snprintf(why, why_cap, "process %d is already traced by %llu (a debugger?)",
			 (int)pid, (unsigned long long)tracer);
		return -EBUSY;
	}
	r = apx_py_symbol_find_pid(pid, "PyEval_SaveThread", &x.entry);
	if (r == -EACCES || r == -EPERM)
		return refuse_perm(pid, why, why_cap);
	if (r == -ENOENT && kill(pid, 0) < 0 && errno == ESRCH)
		r = -ESRCH;
	if (r < 0) {
		if (r == -ESRCH)
			snprintf(why, why_cap, "no process %d", (int)pid);
		else
			snprintf(why, why_cap, "process %d is not a CPython process (no "
				 "PyEval_SaveThread in a python executable or libpython it maps)",
				 (int)pid);
		return r == -ESRCH ? r : -ENOENT;
	}
	r = find_dl(pid, &dl, why, why_cap);
	if (r < 0)
		return r;

	sigemptyset(&x.stop_sigs);
	sigaddset(&x.stop_sigs, SIGINT);
	sigaddset(&x.stop_sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &x.stop_sigs, &old_mask);
	r = seize_all(&x, why, why_cap);
	if (r < 0) {
		if (!why[0])
			snprintf(why, why_cap, r == -ESRCH ? "no process %d" :
				 "cannot trace process %d: out of memory", (int)pid);
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	x.mem = open(path, O_RDWR | O_CLOEXEC);
	if (x.mem < 0 || pread(x.mem, &x.orig, 1, (off_t)x.entry) != 1 || x.orig == 0xcc) {
		r = x.mem < 0 ? -errno : x.orig == 0xcc ? -EBUSY : -EIO;
		snprintf(why, why_cap, "%s PyEval_SaveThread of process %d", x.orig == 0xcc ?
			 "a breakpoint is already set on" : "cannot read", (int)pid);
		goto out;
	}
	if (poke_byte(&x, 0xcc) < 0) {
		r = -EIO;
		snprintf(why, why_cap, "cannot write to the code of process %d", (int)pid);
		goto out;
	}
	x.armed = x.ever_armed = 1;
	r = wait_next(&x, now_ms() + (timeout_ms > 0 ? timeout_ms : 0), 1, &saved);
	if (x.armed && poke_byte(&x, x.orig) == 0)
		x.armed = 0;
	if (r == -ETIMEDOUT)
		snprintf(why, why_cap, "no thread of process %d released the GIL within %d ms (is "
			 "it running Python? pure Python loops never do)", (int)pid, timeout_ms);
	else if (r == -EINTR)
		snprintf(why, why_cap, "interrupted (signal %d) while waiting for process %d",
			 x.got_sig, (int)pid);
	else if (r < 0)
		snprintf(why, why_cap, "process %d ended", (int)pid);
	if (r < 0)
		goto out;
	x.call_tid = r;
	x.hit_us = now_us();
	saved.rip = x.entry;
	restore_regs = 1;
	if (x.armed) {
		r = -EIO;
		snprintf(why, why_cap, "cannot restore the code of process %d", (int)pid);
		goto out;
	}
	r = run_calls(&x, &dl, &saved, lib_path, func, arg, ret_value, why, why_cap);
	if (r == -ETIMEDOUT || r == -ESRCH)
		restore_regs = 0;			/* still in the call, or gone */
out:
	if (x.armed)
		(void)poke_byte(&x, x.orig);
	if (restore_regs)
		ptrace(PTRACE_SETREGS, x.call_tid, NULL, &saved);
	detach_all(&x);
	if (paused_us && x.hit_us)
		*paused_us = now_us() - x.hit_us;
	if (x.mem >= 0)
		close(x.mem);
	free(x.t);
	if (x.got_sig)
		raise(x.got_sig);		/* pending until the mask comes back */
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	return r;
}
#endif
