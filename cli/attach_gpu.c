/*
 * attach_gpu.c - `apx attach PID` without --python-only: the CUPTI collector loaded into a
 * running CUDA program for a while, then taken out. Called by cmd_attach.c.
 *
 * Steps (docs/attach.md, "GPU work"): refuse early what cannot work (no process, no CUDA
 * driver or no CUDA context in it yet); make a private folder owned by the target's user with
 * a fresh copy of libapx-inject.so (a new name each time: the copy's statics start at zero, so
 * a later attach works); have the process dlopen it and call apx_attach_begin() with the
 * request (attach_inject.c: ptrace, at PyEval_SaveThread's entry); the copy is unlinked once
 * mapped. The collector then writes the trace and a status file in the folder; apx waits for
 * "closed" (the duration, or Ctrl-C: a stop file asks for an early end) and "detached" (CUPTI
 * finalized at the program's next CUDA call), copies the trace to -o, and removes the folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procfs.h"
#include "base/termsafe.h"
#include "cli/attach_inject.h"
#include "cli/cli.h"
#include "cli/outfile.h"

#include "base/banned.h"

#define INJECT_TIMEOUT_MS 10000		/* for a thread to reach the safe point */
#define CLOSE_GRACE_S 30		/* after the duration, for the trace to be closed */
#define DETACH_WAIT_S 10		/* then for CUPTI's finalize (the collector waits 5 s) */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* A libcupti.so.13 for a process that has none loaded (libapx-inject.so needs it and the
 * process's loader may not find one): APX_CUPTI_LIB, else beside the process's PyTorch (the
 * nvidia wheels), else the CUDA toolkit's. The path as the process sees it. */
static int find_cupti(pid_t pid, char *out, size_t cap)
{
	static const char *const rel[] = { "/../../nvidia/cu13/lib/libcupti.so.13",
					   "/../../nvidia/cuda_cupti/lib/libcupti.so.13" };
	static const char *const sys[] = { "/usr/local/cuda/lib64/libcupti.so.13",
					   "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13" };
	char path[64], line[4096], cand[PATH_MAX + 128];
	const char *env = getenv("APX_CUPTI_LIB");
	FILE *f;

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/'), *slash;

		if (!name || !strstr(name, "/torch/lib/libtorch"))
			continue;
		name[strcspn(name, "\n")] = 0;
		slash = strrchr(name, '/');
		*slash = 0;
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "/proc/%d/root%s%s", (int)pid, name, rel[i]);
			if (access(cand, R_OK) == 0) {
				fclose(f);
				snprintf(out, cap, "%s%s", name, rel[i]);
				return 0;
			}
		}
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
		snprintf(cand, sizeof(cand), "/proc/%d/root%s", (int)pid, sys[i]);
		if (access(cand, R_OK) == 0) {
			snprintf(out, cap, "%s", sys[i]);
			return 0;
		}
	}
	return -ENOENT;
}

/* The folder and its files, removed at the end whatever happened. Each path is apx's view
 * through /proc/PID/root (the process's own /tmp, in a container or under PrivateTmp too);
 * at(s, path) is the process's view, the one the request names. */
struct session {
	pid_t pid;
	size_t root_len;		/* of "/proc/PID/root" */
	char dir[96];
	char lib[160], trace[160], status[160], stop[160];
	size_t status_seen;		/* bytes of the status file already shown */
};

static const char *at(const struct session *s, const char *path)
{
	return path + s->root_len;
}

static void session_clean(struct session *s)
{
	if (!s->dir[0])
		return;
	unlink(s->lib);
	unlink(s->trace);
	unlink(s->status);
	unlink(s->stop);
	rmdir(s->dir);
	s->dir[0] = 0;
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0)
				return -errno;
			off += w;
		}
	return n < 0 ? -errno : 0;
}

static int copy_to_stream(int in, FILE *out)
{
	char buf[1 << 16];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

/* The private folder (0700, the target's owner when apx runs as root) and the library copy. */
static int session_make(struct session *s, const char *inject_lib)
{
	char path[64];
	struct stat st;
	int in, out, r;

	snprintf(path, sizeof(path), "/proc/%d", (int)s->pid);
	if (stat(path, &st) < 0)
		return -errno;
	s->root_len = (size_t)snprintf(s->dir, sizeof(s->dir), "/proc/%d/root", (int)s->pid);
	snprintf(s->dir + s->root_len, sizeof(s->dir) - s->root_len, "/tmp/apx-attach-XXXXXX");
	if (!mkdtemp(s->dir)) {
		s->dir[0] = 0;
		return -errno;
	}
	snprintf(s->lib, sizeof(s->lib), "%s/libapx-inject-%d.so", s->dir, (int)s->pid);
	snprintf(s->trace, sizeof(s->trace), "%s/trace.apx", s->dir);
	snprintf(s->status, sizeof(s->status), "%s/status", s->dir);
	snprintf(s->stop, sizeof(s->stop), "%s/stop", s->dir);
	in = open(inject_lib, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(s->lib, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	r = copy_fd(in, out);
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	if (r < 0)
		return r;
	if (geteuid() == 0 && st.st_uid != 0 &&
	    (chown(s->dir, st.st_uid, st.st_gid) < 0 || chown(s->lib, st.st_uid, st.st_gid) < 0))
		return -errno;
	return 0;
}

/* Show the status lines not shown yet ("say ..." are the collector's messages); returns the
 * flags of the lines seen so far: 1 started, 2 closed, 4 detached, 8 refused (its line in
 * refused), 16 a probe's detach (APX_ATTACH_PROBE: no trace). */
static int status_poll(struct session *s, char *refused, size_t cap)
{
	static int flags;
	char buf[16384], safe[700];
	ssize_t n = apx_read_small(s->status, buf, sizeof(buf));
	char *line, *end;

	if (n <= 0 || (size_t)n <= s->status_seen)
		return flags;
	for (line = buf + s->status_seen; line < buf + n && (end = memchr(line, '\n',
								 (size_t)(buf + n - line)));
	     line = end + 1) {
		*end = 0;
		s->status_seen = (size_t)(end + 1 - buf);
		if (!strncmp(line, "say ", 4))
			fprintf(stderr, "apx attach: process %d: %s\n", (int)s->pid,
				apx_term_safe_str(safe, sizeof(safe), line + 4));
		else if (!strncmp(line, "started", 7))
			flags |= 1;
		else if (!strcmp(line, "closed"))
			flags |= 2;
		else if (!strncmp(line, "detached", 8)) {
			flags |= 4 | (strncmp(line, "detached probe", 14) ? 0 : 16);
			if (strstr(line, "unsubscribed"))
				fprintf(stderr, "apx attach: process %d: %s\n", (int)s->pid,
					apx_term_safe_str(safe, sizeof(safe), line));
		} else if (!strncmp(line, "refused ", 8)) {
			flags |= 8;
			snprintf(refused, cap, "%s", line + 8);
		}
	}
	return flags;
}

/* "EBUSY-number holder" from the collector: the reason in words. */
static void say_refused(pid_t pid, int ret, const char *line)
{
	char safe[320];
	const char *sp = strchr(line, ' ');

	if (ret == -EBUSY)
		apx_log_error("cannot attach to process %d: CUPTI is already in use in it by '%s' "
			      "(torch.profiler once used in the process, Nsight Systems or Nsight "
			      "Compute): one CUPTI client per process on CUDA 13.0; "
			      "nothing was changed",
			      (int)pid, apx_term_safe_str(safe, sizeof(safe), sp ? sp + 1 : "?"));
	else
		apx_log_error("cannot attach to process %d: the collector did not start in it "
			      "(%s); nothing is collected and the process runs on",
			      (int)pid, strerror(ret < 0 ? -ret : EIO));
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* The request apx_attach_begin() reads: what apx analyze passes in the environment. */
static void make_request(const struct session *s, uint64_t duration_ns, char *req, size_t cap)
{
	static const char *const pass[] = { "APX_KINDS", "APX_OFF", "APX_LEVEL", "APX_FLUSH_MS",
					    "APX_PY_SAMPLING_HZ", "APX_DEBUG",
					    "APX_ATTACH_PROBE" };
	size_t len;

	len = (size_t)snprintf(req, cap, "APX_OUTPUT=%s\nAPX_ROOT_PID=%d\nAPX_ATTACH_STATUS=%s\n"
			       "APX_ATTACH_STOP=%s\nAPX_ATTACH_DURATION_MS=%llu\n", at(s, s->trace),
			       (int)s->pid, at(s, s->status), at(s, s->stop),
			       (unsigned long long)(duration_ns / 1000000));
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]) && len < cap; i++) {
		const char *v = getenv(pass[i]);

		if (v && *v && !strchr(v, '\n'))
			len += (size_t)snprintf(req + len, cap - len, "%s=%s\n", pass[i], v);
	}
}

/* Copy the collected trace to output (outfile.c's rules: --force, never a link). */
static int deliver(const struct session *s, const char *output, int force)
{
	struct apx_outfile o;
	FILE *f;
	int in, r;

	r = apx_outfile_init(&o, "attach", output, force);
	if (r < 0)
		return r;
	in = open(s->trace, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		r = -errno;
		apx_log_errno(r, "the collector wrote no trace in process %d", (int)s->pid);
		apx_outfile_abort(&o);
		return r;
	}
	f = apx_outfile_open(&o);
	if (!f) {
		close(in);
		apx_outfile_abort(&o);
		return -EIO;
	}
	r = copy_to_stream(in, f);	/* through the stream: it keeps the first write error */
	close(in);
	if (r < 0)
		return apx_outfile_fail(&o, r);
	return apx_outfile_commit(&o);
}

int apx_attach_gpu(pid_t pid, uint64_t duration_ns, const char *output, int force)
{
	struct session s = { .pid = pid };
	struct sigaction sa = { 0 };
	char lib[PATH_MAX], why[512], req[4096], refused[400] = "", safe[PATH_MAX];
	uint64_t waited_ms = 0, limit_ms;
	int64_t paused = 0, paused_total = 0;
	int r, ret = 0, flags = 0;

	r = apx_proc_maps_find(pid, "libcuda.so", NULL, 0);
	if (r < 0) {
		apx_log_error(r == -ENOENT ? "no process %d" : "cannot attach to process %d: its "
			      "memory map is not readable (%s): run apx as its user or as root",
			      (int)pid, strerror(-r));
		return APX_EXIT_FAIL;
	}
	if (!r || apx_proc_has_nvidia_fd(pid, 1) == 0) {
		apx_log_error("cannot attach to process %d: it has %s yet, so there is no GPU work "
			      "to profile (attach after it has used CUDA, or use --python-only)",
			      (int)pid, r ? "no CUDA context (no /dev/nvidiaN open)" :
			      "not loaded the CUDA driver (libcuda)");
		return APX_EXIT_FAIL;
	}
	if (apx_find_inject_lib(lib, sizeof(lib)) < 0) {
		apx_log_error("cannot find libapx-inject.so (beside apx, in ../lib/apx/, or "
			      "APX_INJECT_LIB)");
		return APX_EXIT_FAIL;
	}
	r = session_make(&s, lib);
	if (r < 0) {
		apx_log_errno(r, "cannot prepare the attach folder under /tmp");
		session_clean(&s);
		return APX_EXIT_FAIL;
	}
	make_request(&s, duration_ns, req, sizeof(req));
	if (apx_proc_maps_find(pid, "libcupti.so", NULL, 0) == 0) {
		/* loaded first, by its full path: the collector's libcupti.so.13 is then found by
		 * its name; cuptiGetVersion(uint32_t *) writes into the argument's buffer */
		char cupti[PATH_MAX];

		if (find_cupti(pid, cupti, sizeof(cupti)) < 0) {
			apx_log_error("cannot attach to process %d: it has no libcupti.so.13 "
				      "loaded and apx found none for it (APX_CUPTI_LIB names one)",
				      (int)pid);
			session_clean(&s);
			return APX_EXIT_FAIL;
		}
		r = apx_attach_inject(pid, cupti, "cuptiGetVersion", "version", INJECT_TIMEOUT_MS,
				      &ret, &paused, why, sizeof(why));
		paused_total += paused;
		if (r < 0) {
			apx_log_error("cannot attach to process %d: loading libcupti: %s", (int)pid,
				      apx_term_safe_str(safe, sizeof(safe), why));
			session_clean(&s);
			return APX_EXIT_FAIL;
		}
	}
	r = apx_attach_inject(pid, at(&s, s.lib), "apx_attach_begin", req, INJECT_TIMEOUT_MS,
			      &ret, &paused, why, sizeof(why));
	paused_total += paused;
	unlink(s.lib);	/* mapped in the process now, or not needed */
	if (r < 0) {
		apx_log_error("cannot attach to process %d: %s", (int)pid,
			      apx_term_safe_str(safe, sizeof(safe), why));
		session_clean(&s);
		return APX_EXIT_FAIL;
	}
	if (ret != 0) {
		status_poll(&s, refused, sizeof(refused));
		say_refused(pid, ret, refused);
		session_clean(&s);
		return APX_EXIT_FAIL;
	}
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "apx attach: collecting process %d's GPU work for %.3g s (one thread of it "
		"was held %.1f ms to load the collector); Ctrl-C stops early\n", (int)pid,
		(double)duration_ns / 1e9, (double)paused_total / 1e3);
	limit_ms = duration_ns / 1000000 + CLOSE_GRACE_S * 1000;
	while (!((flags = status_poll(&s, refused, sizeof(refused))) & 4)) {
		if (g_stop == 1) {
			int fd = open(s.stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

			if (fd >= 0)
				close(fd);
			g_stop = 2;
		}
		if (kill(pid, 0) < 0 && errno == ESRCH) {
			flags = status_poll(&s, refused, sizeof(refused));
			break;		/* it ended: its atexit closed the trace */
		}
		if (waited_ms > limit_ms + (flags & 2 ? DETACH_WAIT_S * 1000 : 0))
			break;
		sleep_ms(100);
		waited_ms += 100;
	}
	if (!(flags & 2) && kill(pid, 0) == 0)
		apx_log_warn("process %d did not close its trace in time; what it wrote so far is "
			     "kept", (int)pid);
	if (flags & 16) {	/* APX_ATTACH_PROBE: a diagnosis run, no trace */
		session_clean(&s);
		fprintf(stderr, "apx attach: process %d: probe detached; no trace was written\n",
			(int)pid);
		return APX_EXIT_OK;
	}
	r = deliver(&s, output, force);
	session_clean(&s);
	if (r < 0)
		return APX_EXIT_FAIL;
	fprintf(stderr, "apx attach: process %d's GPU work in '%s'%s; then: apx report %s\n",
		(int)pid, apx_term_safe_str(safe, sizeof(safe), output),
		flags & 4 ? " (collector detached)"
			  : kill(pid, 0) < 0 ? " (the process ended)" : "",
		safe);
	return APX_EXIT_OK;
}
