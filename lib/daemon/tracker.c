/*
 * tracker.c - the table of tracked Python processes: classification (at exec, comm change,
 * fork of a tracked parent, /proc scans), the periodic /proc samples, the live checks of a
 * process still running (live_check, then every live_check_every: the same rules on what was
 * seen so far; a big problem gets one notice per rule with the `apx attach` command while the
 * pid is still its), and what happens at exit (findings of the rule engine's process rules,
 * analysis/procobs.h, on what observe.c gathers; summary file, log line, notice, and with a big
 * problem the `apx attach` command). Also the per-user config cache. Runs on the daemon's event
 * loop (main.c); the only logging file besides main.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"

#include "base/banned.h"

#define HBUCKETS 4096u
#define CUDA_FIRST_NS 500000000ull	/* first re-check after exec; then doubled */
#define APX_THREAD_EVERY 5		/* threads are read at every 5th sample */

uint64_t apx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t apx_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int apx_tracker_init(struct apx_daemon *d)
{
	d->htab = calloc(HBUCKETS, sizeof(*d->htab));
	if (!d->htab)
		return -ENOMEM;
	d->hsize = HBUCKETS;
	for (size_t i = 0; i < APX_USERS_MAX; i++)
		d->users[i].wd = -1;
	return 0;
}

static void proc_free(struct apx_proc *p)
{
	if (!p)
		return;
	apx_uprobes_forget(NULL, p);
	free(p->gpu.series);
	free(p->argv);
	free(p->samples);
	free(p->threads);
	free(p);
}

static void unlink_proc(struct apx_daemon *d, struct apx_proc *p)
{
	struct apx_proc **pp = &d->htab[(unsigned)p->pid % d->hsize];

	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = p->hnext;
	if (p->prev)
		p->prev->next = p->next;
	else
		d->procs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	d->nprocs--;
}

void apx_tracker_free(struct apx_daemon *d)
{
	while (d->procs) {
		struct apx_proc *p = d->procs;

		unlink_proc(d, p);
		apx_uprobes_forget(d->up, p);
		proc_free(p);
	}
	free(d->htab);
	d->htab = NULL;
}

struct apx_proc *apx_tracker_find(struct apx_daemon *d, pid_t pid)
{
	struct apx_proc *p = d->htab[(unsigned)pid % d->hsize];

	while (p && p->pid != pid)
		p = p->hnext;
	return p;
}

/* ---- per-user config ---------------------------------------------------------------------- */

static void user_load(struct apx_daemon *d, struct apx_user_conf *u)
{
	struct apx_conf_error err = { 0 };
	struct apx_conf cfg = d->conf;
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	char *slash;
	int r;

	if (!u->path[0]) {
		if (getpwuid_r(u->uid, &pw, pwbuf, sizeof(pwbuf), &res) || !res)
			res = NULL;
		if (apx_conf_user_path(d->conf.user_config, res ? res->pw_dir : NULL, u->uid,
				       u->path, sizeof(u->path)) < 0)
			u->path[0] = 0;
	}
	if (!u->path[0]) {
		u->cfg = cfg;
		u->loaded = 1;
		return;
	}
	slash = strrchr(u->path, '/');
	if (u->wd < 0 && slash && d->inofd >= 0) {
		*slash = 0;
		u->wd = inotify_add_watch(d->inofd, u->path[0] ? u->path : "/",
					  APX_CONF_WATCH_MASK | IN_DONT_FOLLOW | IN_ONLYDIR);
		*slash = '/';
		snprintf(u->name, sizeof(u->name), "%s", slash + 1);
	}
	r = apx_conf_load(u->path, APX_CONF_USER, u->uid, &cfg, &err);
	if (r == -ENOENT) {
		u->cfg = d->conf;
	} else if (r < 0) {
		char esc[600];

		uint64_t now = apx_now_ns();

		d->st.config_errors++;
		if (!u->err_logged_ns || now - u->err_logged_ns >= 10000000000ull) {
			apx_dlog(APX_LOG_ERR, "config of uid %u rejected, keeping the %s: %s "
				 "(%" PRIu64 " more rejections not logged)", (unsigned)u->uid,
				 u->loaded ? "previous one" : "machine defaults",
				 apx_dlog_esc(esc, sizeof(esc), err.msg, strlen(err.msg)),
				 u->err_suppressed);
			u->err_logged_ns = now;
			u->err_suppressed = 0;
		} else {
			u->err_suppressed++;
		}
		if (!u->loaded)
			u->cfg = d->conf;
	} else {
		u->cfg = cfg;
		if (u->loaded)
			apx_dlog(APX_LOG_INFO, "config of uid %u re-read", (unsigned)u->uid);
	}
	u->loaded = 1;
}

const struct apx_conf *apx_user_conf(struct apx_daemon *d, uid_t uid)
{
	struct apx_user_conf *u = NULL, *free_slot = NULL;

	for (size_t i = 0; i < APX_USERS_MAX; i++) {
		if (d->users[i].used && d->users[i].uid == uid) {
			u = &d->users[i];
			break;
		}
		if (!d->users[i].used && !free_slot)
			free_slot = &d->users[i];
	}
	if (!u) {
		if (!free_slot)
			return &d->conf;	/* cache full: machine defaults */
		u = free_slot;
		memset(u, 0, sizeof(*u));
		u->used = 1;
		u->uid = uid;
		u->wd = -1;
	}
	/* without a watch (no folder yet) the file is looked at every time */
	if (!u->loaded || u->wd < 0)
		user_load(d, u);
	return &u->cfg;
}

void apx_user_conf_changed(struct apx_daemon *d, int wd, const char *name, uint32_t mask)
{
	for (size_t i = 0; i < APX_USERS_MAX; i++) {
		struct apx_user_conf *u = &d->users[i];

		if (u->used && u->wd == wd && (!name || !strcmp(name, u->name)) &&
		    apx_conf_event_rereads(mask, u->path))
			user_load(d, u);
	}
}

/* ---- tracking ----------------------------------------------------------------------------- */

static int exit_status(int code, int have_code)
{
	if (!have_code)
		return 0;
	if (code & 0x7f)
		return -(code & 0x7f);
	return (code >> 8) & 0xff;
}

static void finish(struct apx_daemon *d, struct apx_proc *p, int code, int have_code);

#define UP_RETRY_NS 2000000000ull	/* look again for a libcuda not mapped yet */

/* Attach the uprobes to the libcuda p maps (once; retried while it maps none). */
static void up_try(struct apx_daemon *d, struct apx_proc *p, uint64_t now)
{
	char path[APX_CWD_MAX], why[300], e1[600];
	int r;

	if (!d->up || !p->cuda || p->up_tried || now < p->up_next_ns)
		return;
	r = apx_procfs_libcuda_path(p->pid, path, sizeof(path));
	if (r <= 0) {
		p->up_next_ns = now + UP_RETRY_NS;
		return;
	}
	p->up_tried = 1;
	why[0] = 0;
	r = apx_uprobes_attach(d->up, p, path, p->cfg.uprobe_max_rate, (int)p->cfg.uprobe_copy_time,
			       why, sizeof(why));
	apx_dlog_esc(e1, sizeof(e1), path, strlen(path));
	if (r == -EACCES || r == -EPERM || r == -EOPNOTSUPP || r == -ENODEV) {
		/* the kernel refuses uprobes here (sandbox, missing capability): say it once and
		 * stop trying for every process */
		snprintf(d->up_why, sizeof(d->up_why), "cannot attach: %.180s", why);
		apx_dlog(APX_LOG_NOTICE, "eBPF uprobes not available: %s; running without them",
			 d->up_why);
		for (struct apx_proc *q = d->procs; q; q = q->next)
			apx_uprobes_forget(d->up, q);
		(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, apx_uprobes_fd(d->up), NULL);
		apx_uprobes_close(d->up);
		d->up = NULL;
		return;
	}
	if (r < 0)
		apx_dlog(APX_LOG_WARNING, "pid %d: no uprobes on \"%s\": %s", (int)p->pid, e1,
			 why[0] ? why : strerror(-r));
	else
		apx_dlog(APX_LOG_INFO, "pid %d: uprobes attached to \"%s\" (%u functions, at most "
			 "%" PRIu64 " calls/s, copies %stimed)", (int)p->pid, e1, p->up->symbols,
			 p->cfg.uprobe_max_rate, p->up->copy_time ? "" : "not ");
}

void apx_tracker_up_over_rate(struct apx_daemon *d, struct apx_proc *p, uint64_t calls)
{
	(void)d;
	apx_dlog(APX_LOG_WARNING, "pid %d: %" PRIu64 " probed libcuda calls within 1 s, over "
		 "uprobe_max_rate (%" PRIu64 "/s): its uprobes are removed", (int)p->pid, calls,
		 p->cfg.uprobe_max_rate);
}

static uint64_t per_user_cap(const struct apx_daemon *d)
{
	uint64_t cap = d->conf.max_tracked_per_user;

	if (!cap)
		cap = d->conf.max_tracked / 4 ? d->conf.max_tracked / 4 : 1;
	return cap;
}

/* One user must not fill max_tracked for the whole machine. The walk runs only once the table
 * holds that many processes of anyone. */
static int user_at_cap(const struct apx_daemon *d, uid_t uid)
{
	uint64_t cap = per_user_cap(d), n = 0;

	if (d->nprocs < cap)
		return 0;
	for (const struct apx_proc *p = d->procs; p; p = p->next)
		if (p->uid == uid && ++n >= cap)
			return 1;
	return 0;
}

static int track(struct apx_daemon *d, pid_t pid, const char *comm)
{
	struct apx_pstat s;
	const struct apx_conf *uc;
	struct apx_proc *p;
	uint64_t now = apx_now_ns();
	ssize_t n;
	char buf[APX_ARGV_MAX];
	int r;

	r = apx_procfs_stat(pid, 0, &s, 1);
	if (r < 0)
		return r;
	uc = apx_user_conf(d, s.uid);
	if (!uc->track)
		return 0;
	if (d->nprocs >= d->conf.max_tracked) {
		if (d->st.untracked_cap++ % 1000 == 0)
			apx_dlog(APX_LOG_WARNING, "max_tracked (%" PRIu64 ") reached: pid %d not "
				 "tracked (%" PRIu64 " so far)", d->conf.max_tracked, (int)pid,
				 d->st.untracked_cap);
		return -EMFILE;
	}
	if (s.uid != 0 && user_at_cap(d, s.uid)) {
		if (d->st.untracked_user_cap++ % 1000 == 0)
			apx_dlog(APX_LOG_WARNING, "max_tracked_per_user (%" PRIu64 ") reached by uid "
				 "%u: pid %d not tracked (%" PRIu64 " so far, all users)",
				 per_user_cap(d), (unsigned)s.uid, (int)pid, d->st.untracked_user_cap);
		return -EMFILE;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->ppid = s.ppid;
	p->uid = s.uid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->torch = !strcmp(comm, "pt_main_thread");
	n = apx_procfs_cmdline(pid, buf, sizeof(buf));
	if (n > 0) {
		p->argv = malloc((size_t)n);
		if (p->argv) {
			memcpy(p->argv, buf, (size_t)n);
			p->argv_len = (size_t)n;
		}
	}
	(void)apx_procfs_cwd(pid, p->cwd, sizeof(p->cwd));
	p->cfg = *uc;
	p->tty_nr = s.tty_nr;
	p->start_ns = s.start_ticks * apx_procfs_ticks_ns() - (uint64_t)d->boot_minus_mono_ns;
	if (p->start_ns > now)
		p->start_ns = now;
	p->tracked_ns = now;
	p->gpu.device = -1;
	p->gpu.stride = 1;
	p->stride = 1;
	p->cuda_backoff_ns = CUDA_FIRST_NS;
	p->cuda_next_ns = now + CUDA_FIRST_NS;
	r = apx_procfs_uses_cuda(pid);
	d->st.cuda_checks++;
	p->cuda = r > 0;
	p->last.ts_ns = now;
	p->last.utime_ns = s.utime_ns;
	p->last.stime_ns = s.stime_ns;
	p->last.rss_bytes = s.rss_bytes;
	p->last.rss_peak_bytes = s.rss_peak_bytes;
	p->last.vol_csw = s.vol_csw;
	p->last.invol_csw = s.invol_csw;
	p->last.threads = (uint32_t)s.threads;
	p->last.state = s.state;
	p->prev_cpu_ns = s.utime_ns + s.stime_ns;
	p->prev_ts_ns = now;
	p->hnext = d->htab[(unsigned)pid % d->hsize];
	d->htab[(unsigned)pid % d->hsize] = p;
	p->next = d->procs;
	if (d->procs)
		d->procs->prev = p;
	d->procs = p;
	d->nprocs++;
	d->st.tracked_total++;
	up_try(d, p, now);
	{
		char e1[64], e2[600];

		apx_dlog(APX_LOG_DEBUG, "tracking pid %d uid %u \"%s\" argv \"%s\"%s", (int)pid,
			 (unsigned)p->uid, apx_dlog_esc(e1, sizeof(e1), p->comm, strlen(p->comm)),
			 apx_dlog_esc(e2, sizeof(e2), p->argv ? p->argv : "", p->argv_len),
			 p->cuda ? " (uses CUDA)" : "");
	}
	return 1;
}

void apx_tracker_consider(struct apx_daemon *d, pid_t pid, int why)
{
	struct apx_proc *p = apx_tracker_find(d, pid);
	char comm[APX_COMM_MAX];
	int py, exe = -1;

	if (pid <= 0 || pid == d->self)
		return;
	/* The interpreter's exe decides (a "python3" shell shim is not Python; a script run
	 * through its shebang is, whatever its comm); torch's main thread name is enough. At
	 * exec the exe is looked at first: most execs are not Python, and stop there. */
	if (why != APX_WHY_COMM) {
		exe = apx_procfs_exe_is_python(pid);
		if (!p && (exe == 0 || exe == -ENOENT || exe == -ESRCH))
			return;		/* not Python, or already gone (short-lived) */
	}
	if (apx_procfs_comm(pid, comm) < 0) {
		if (p && why == APX_WHY_EXEC)
			finish(d, p, 0, 0);
		return;
	}
	if (!strcmp(comm, "pt_main_thread")) {
		py = 1;
	} else if (why == APX_WHY_COMM) {
		if (!p && !apx_comm_is_python(comm))
			return;		/* a thread or process renamed itself: not ours */
		py = p != NULL || apx_procfs_exe_is_python(pid) > 0;
	} else {
		py = exe > 0 || (exe < 0 && apx_comm_is_python(comm));
	}
	if (p) {
		if (why == APX_WHY_EXEC && !py) {
			finish(d, p, 0, 0);	/* exec'd into something else: its Python run ended */
			return;
		}
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		if (!strcmp(comm, "pt_main_thread"))
			p->torch = 1;
		if (why == APX_WHY_EXEC) {
			char buf[APX_ARGV_MAX];
			ssize_t n = apx_procfs_cmdline(pid, buf, sizeof(buf));
			char *na = n > 0 ? malloc((size_t)n) : NULL;

			if (na) {
				memcpy(na, buf, (size_t)n);
				free(p->argv);
				p->argv = na;
				p->argv_len = (size_t)n;
			}
		}
		return;
	}
	if (py)
		(void)track(d, pid, comm);
}

void apx_tracker_comm(struct apx_daemon *d, pid_t pid, pid_t tid, const char *comm)
{
	struct apx_proc *p = apx_tracker_find(d, pid);
	int torch = !strcmp(comm, "pt_main_thread");

	if (p) {
		if (tid == pid)
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		if (torch)
			p->torch = 1;
		return;
	}
	/* every exec renames its process too: most of these stop here, without a syscall */
	if (torch || apx_comm_is_python(comm))
		apx_tracker_consider(d, pid, APX_WHY_COMM);
}

void apx_tracker_fork(struct apx_daemon *d, pid_t parent, pid_t child)
{
	if (apx_tracker_find(d, parent) && !apx_tracker_find(d, child))
		apx_tracker_consider(d, child, APX_WHY_SCAN);
}

/* ---- sampling ----------------------------------------------------------------------------- */

static struct apx_thread *thread_get(struct apx_proc *p, pid_t tid, uint64_t now)
{
	struct apx_thread *t;

	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	if (p->nthreads >= p->cfg.max_threads)
		return NULL;
	if (p->nthreads == p->cap_threads) {
		size_t nc = p->cap_threads ? p->cap_threads * 2 : 4;
		struct apx_thread *nt = reallocarray(p->threads, nc, sizeof(*nt));

		if (!nt)
			return NULL;
		p->threads = nt;
		p->cap_threads = nc;
	}
	t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->first_ns = now;
	return t;
}

static void thread_update(struct apx_thread *t, const struct apx_pstat *s, uint64_t now,
			  uint32_t gen)
{
	snprintf(t->name, sizeof(t->name), "%s", s->comm);
	t->utime_ns = s->utime_ns;
	t->stime_ns = s->stime_ns;
	t->vol_csw = s->vol_csw;
	t->invol_csw = s->invol_csw;
	t->last_ns = now;
	t->seen = gen;
}

static void add_sample(struct apx_proc *p, const struct apx_sample *s)
{
	if (p->skip) {
		p->skip--;
		return;
	}
	p->skip = p->stride - 1;
	if (p->nsamples == p->cap_samples) {
		if (p->cap_samples < p->cfg.max_samples) {
			size_t nc = p->cap_samples ? p->cap_samples * 2 : 64;
			struct apx_sample *ns;

			if (nc > p->cfg.max_samples)
				nc = p->cfg.max_samples;
			ns = reallocarray(p->samples, nc, sizeof(*ns));
			if (!ns)
				return;
			p->samples = ns;
			p->cap_samples = nc;
		} else {
			/* full: keep every other sample, halve the rate from now on */
			for (size_t i = 0; i < p->nsamples / 2; i++)
				p->samples[i] = p->samples[2 * i];
			p->nsamples /= 2;
			p->stride *= 2;
			p->skip = p->stride - 1;
		}
	}
	p->samples[p->nsamples++] = *s;
}

/* One /proc sample of p; -ENOENT when it is gone. A full sample also reads every thread
 * (/proc/PID/task/TID/{stat,status}): that is most of the cost for threaded processes, so it is
 * done every APX_THREAD_EVERY samples, and at exit (at_exit: the process may be a zombie). */
static int sample(struct apx_daemon *d, struct apx_proc *p, uint64_t now, int record, int full,
		  int at_exit)
{
	struct apx_pstat s;
	struct apx_sample smp = { 0 };
	int r;

	r = apx_procfs_stat(p->pid, 0, &s, 1);
	if (r < 0)
		return r;
	if ((s.state == 'Z' || s.state == 'X') && !at_exit)
		return -ECHILD;		/* exited, not yet reaped */
	if (at_exit) {
		/* CPU times and switches are final; the memory is already gone: keep the last */
		if (!s.rss_bytes)
			s.rss_bytes = p->last.rss_bytes;
		if (!s.rss_peak_bytes)
			s.rss_peak_bytes = p->peak_rss;
		if (!s.threads)
			s.threads = 1;
	}
	d->st.samples++;
	p->gen++;
	smp.ts_ns = now;
	smp.utime_ns = s.utime_ns;
	smp.stime_ns = s.stime_ns;
	smp.rss_bytes = s.rss_bytes;
	smp.rss_peak_bytes = s.rss_peak_bytes;
	smp.minflt = s.minflt;
	smp.majflt = s.majflt;
	smp.threads = (uint32_t)s.threads;
	smp.state = s.state;
	smp.vol_csw = s.vol_csw;
	smp.invol_csw = s.invol_csw;
	snprintf(p->comm, sizeof(p->comm), "%s", s.comm);
	if (s.threads <= 1 || !(p->cfg.metrics & (APX_METRIC_THREADS | APX_METRIC_CSW))) {
		/* single-threaded: the process line is the main thread's */
		struct apx_thread *t = thread_get(p, p->pid, now);

		if (t)
			thread_update(t, &s, now, p->gen);
		if (p->nthreads > 1) {	/* it had threads: they ended, their switches count */
			smp.vol_csw = smp.invol_csw = 0;
			for (size_t i = 0; i < p->nthreads; i++) {
				if (p->threads[i].seen != p->gen)
					p->threads[i].gone = 1;
				smp.vol_csw += p->threads[i].vol_csw;
				smp.invol_csw += p->threads[i].invol_csw;
			}
		}
	} else {
		if (full) {
			char path[64];
			DIR *dir;
			struct dirent *de;

			snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
			dir = opendir(path);
			while (dir && (de = readdir(dir))) {
				struct apx_pstat ts;
				struct apx_thread *t;
				pid_t tid;
				char *end;

				if (de->d_name[0] < '0' || de->d_name[0] > '9')
					continue;
				tid = (pid_t)strtol(de->d_name, &end, 10);
				t = thread_get(p, tid, now);
				if (!t || apx_procfs_stat(p->pid, tid, &ts, 1) < 0)
					continue;
				thread_update(t, &ts, now, p->gen);
			}
			if (dir)
				closedir(dir);
			for (size_t i = 0; i < p->nthreads; i++)
				if (p->threads[i].seen != p->gen)
					p->threads[i].gone = 1;
		} else {
			/* between full passes only the main thread's switches are fresh (they are
			 * in the process's status); the other threads keep their last values */
			struct apx_thread *t = thread_get(p, p->pid, now);

			if (t) {
				t->vol_csw = s.vol_csw;
				t->invol_csw = s.invol_csw;
			}
		}
		/* process totals of csw: every thread seen, the exited ones with their last value */
		smp.vol_csw = smp.invol_csw = 0;
		for (size_t i = 0; i < p->nthreads; i++) {
			smp.vol_csw += p->threads[i].vol_csw;
			smp.invol_csw += p->threads[i].invol_csw;
		}
	}
	if (smp.rss_peak_bytes > p->peak_rss)
		p->peak_rss = smp.rss_peak_bytes;
	if (now > p->prev_ts_ns) {
		uint64_t cpu = smp.utime_ns + smp.stime_ns;

		p->cpu_pct_x10 = (uint32_t)((cpu > p->prev_cpu_ns ? cpu - p->prev_cpu_ns : 0) * 1000 /
					    (now - p->prev_ts_ns));
		p->prev_cpu_ns = cpu;
		p->prev_ts_ns = now;
	}
	p->last = smp;
	if (record)
		add_sample(p, &smp);
	return 0;
}

/* ---- exit: findings, notice, summary ------------------------------------------------------ */

/* Write a notice line on the terminal the process ran from, if it is the user's pty/tty. */
static void tty_notice(struct apx_proc *p, const char *text)
{
	unsigned maj = major(p->tty_nr), min = minor(p->tty_nr);
	char path[64], line[640];
	struct stat st;
	int fd, n;

	if (!p->tty_nr)
		return;
	if (maj >= 136 && maj <= 143)
		snprintf(path, sizeof(path), "/dev/pts/%u", (maj - 136) * 256 + min);
	else if (maj == 4 && min < 64)
		snprintf(path, sizeof(path), "/dev/tty%u", min);
	else
		return;
	fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == p->tty_nr &&
	    st.st_uid == p->uid) {
		n = snprintf(line, sizeof(line), "\r\nnvperfd: %s\r\n", text);
		if (n > 0)
			(void)!write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
	close(fd);
}

static void finish(struct apx_daemon *d, struct apx_proc *p, int code, int have_code)
{
	uint64_t now = apx_now_ns(), wall_ms = apx_wall_ns() / 1000000;
	struct apx_findings *fd = &d->exit_findings;
	struct apx_procobs obs;
	const struct apx_finding *f = fd->f;
	size_t nf;
	char path[APX_CONF_PATH_MAX + 64] = "";
	char ecomm[64], etitle[400], next[APX_NEXT_CMD_MAX];
	int st = exit_status(code, have_code), r = 0;

	if (p->up && d->up) {	/* its last probe events, then the probes go */
		(void)apx_uprobes_drain(d->up, d);
		apx_uprobes_detach(d->up, p);
	}
	/* the rule engine on what was seen of it (analysis/procobs.h) */
	apx_proc_observe(p, now, &obs);
	apx_procobs_run(&obs, fd);
	nf = fd->n;
	for (size_t i = 0; i < nf; i++) {
		struct apx_proc_finding *pf = &d->findings[d->nfindings++ % APX_FINDINGS_RECENT];

		pf->f = f[i];
		pf->pid = p->pid;
		pf->uid = p->uid;
		pf->unix_ms = wall_ms;
		snprintf(pf->comm, sizeof(pf->comm), "%s", p->comm);
	}
	if (now - p->start_ns >= d->conf.summary_min_runtime_ns) {
		r = apx_summary_write(d, p, code, have_code, f, nf, path, sizeof(path));
		if (r < 0) {
			d->st.summary_errors++;
			apx_dlog(APX_LOG_ERR, "pid %d: cannot write its summary: %s", (int)p->pid,
				 strerror(-r));
		} else {
			d->st.summaries++;
		}
	}
	apx_dlog_esc(ecomm, sizeof(ecomm), p->comm, strlen(p->comm));
	apx_dlog(APX_LOG_INFO, "pid %d uid %u \"%s\" ended%s %d after %.1f s: cpu %.2f s, peak "
		 "rss %" PRIu64 " KiB, csw %" PRIu64 "/%" PRIu64 ", threads %zu%s%s%s",
		 (int)p->pid, (unsigned)p->uid, ecomm, !have_code ? " (status unknown)" :
		 st < 0 ? ", signal" : ", status", st < 0 ? -st : st,
		 (double)(now - p->start_ns) / 1e9,
		 (double)(p->last.utime_ns + p->last.stime_ns) / 1e9, p->peak_rss / 1024,
		 p->last.vol_csw, p->last.invol_csw, p->nthreads, p->cuda ? ", used CUDA" : "",
		 path[0] ? ", summary " : "", path);
	/* a big problem: the line of each severe finding ends with the command that looks
	 * closer (made of the pid only: nothing of the process's own text) */
	(void)apx_procobs_next_cmd(f, nf, (int)p->pid, p->cuda, next, sizeof(next));
	for (size_t i = 0; i < nf && p->cfg.notice != APX_NOTICE_NONE; i++) {
		const char *sep = next[0] && f[i].severity >= APX_SEV_WARNING ? "; next: " : "";
		const char *cmd = sep[0] ? next : "";
		char msg[600];

		apx_dlog_esc(etitle, sizeof(etitle), f[i].title, strlen(f[i].title));
		apx_dlog(APX_LOG_NOTICE, "notice: pid %d uid %u \"%s\": %s%s%s", (int)p->pid,
			 (unsigned)p->uid, ecomm, etitle, sep, cmd);
		d->st.notices++;
		if (p->cfg.notice == APX_NOTICE_TTY) {
			snprintf(msg, sizeof(msg), "pid %d (%s): %s%s%s", (int)p->pid, ecomm, etitle,
				 sep, cmd);
			tty_notice(p, msg);
		}
	}
	unlink_proc(d, p);
	apx_uprobes_forget(d->up, p);
	proc_free(p);
}

/* ---- live check: a big problem told while the process runs ------------------------------- */

_Static_assert(APX_RULES_MAX <= 32, "apx_proc.live_told has one bit per process rule");

/* Index of a rule id in the process rules' table (procobs.c), -1 when not there. */
static int obs_rule_index(const char *id)
{
	size_t n;
	const struct apx_rule *rules = apx_procobs_rules(&n);

	for (size_t i = 0; i < n && id; i++)
		if (!strcmp(rules[i].id, id))
			return (int)i;
	return -1;
}

/* Once p has run live_check, then every live_check_every: the rules finish() runs, on what was
 * seen so far (p was sampled at now). Each finding of severity warning or above gets one
 * notice line per process life, as finish()'s with "(running N s)" and the command of
 * apx_procobs_next_cmd, while the pid is still the process's. The rules' output goes to the
 * daemon's buffer (no allocation); nothing is kept for `apx status` (that is the exit's). */
static void live_check(struct apx_daemon *d, struct apx_proc *p, uint64_t now)
{
	struct apx_findings *fd = &d->exit_findings;
	const struct apx_finding *f = fd->f;
	struct apx_procobs obs;
	char ecomm[64], etitle[400], next[APX_NEXT_CMD_MAX], msg[600];
	uint64_t run_s;

	if (!p->cfg.live_check_ns || p->cfg.notice == APX_NOTICE_NONE)
		return;
	if (p->live_next_ns ? now < p->live_next_ns : now - p->start_ns < p->cfg.live_check_ns)
		return;
	p->live_next_ns = now + p->cfg.live_check_every_ns;
	apx_proc_observe(p, now, &obs);
	apx_procobs_run(&obs, fd);
	if (apx_procobs_next_cmd(f, fd->n, (int)p->pid, p->cuda, next, sizeof(next)) <= 0)
		return;		/* nothing severe so far */
	run_s = (now - p->start_ns) / 1000000000ull;
	apx_dlog_esc(ecomm, sizeof(ecomm), p->comm, strlen(p->comm));
	for (size_t i = 0; i < fd->n; i++) {
		int bit = obs_rule_index(f[i].rule);

		if (f[i].severity < APX_SEV_WARNING || bit < 0 || (p->live_told & (1u << bit)))
			continue;
		p->live_told |= 1u << bit;
		apx_dlog_esc(etitle, sizeof(etitle), f[i].title, strlen(f[i].title));
		apx_dlog(APX_LOG_NOTICE, "notice: pid %d uid %u \"%s\" (running %" PRIu64
			 " s): %s; next: %s", (int)p->pid, (unsigned)p->uid, ecomm, run_s, etitle,
			 next);
		d->st.live_notices++;
		if (p->cfg.notice == APX_NOTICE_TTY) {
			snprintf(msg, sizeof(msg), "pid %d (%s, running %" PRIu64 " s): %s; "
				 "next: %s", (int)p->pid, ecomm, run_s, etitle, next);
			tty_notice(p, msg);
		}
	}
}

void apx_tracker_exit(struct apx_daemon *d, pid_t pid, int exit_code, int have_code)
{
	struct apx_proc *p = apx_tracker_find(d, pid);

	if (!p)
		return;
	/* the task is exiting but still readable (zombie): take the final totals */
	(void)sample(d, p, apx_now_ns(), 1, 1, 1);
	finish(d, p, exit_code, have_code);
}

void apx_tracker_tick(struct apx_daemon *d)
{
	uint64_t now = apx_now_ns();
	struct apx_proc *p = d->procs, *next;
	int r;

	apx_nvml_sample(d->nvml, d, now);
	for (; p; p = next) {
		next = p->next;
		r = sample(d, p, now, 1, p->gen % APX_THREAD_EVERY == 0, 0);
		if (r < 0) {
			/* its exit event was lost (overrun): a zombie, or gone */
			if (r == -ECHILD || (kill(p->pid, 0) < 0 && errno == ESRCH)) {
				finish(d, p, 0, 0);
				continue;
			}
			p->sample_errors++;
		}
		if (!p->cuda && now >= p->cuda_next_ns) {
			d->st.cuda_checks++;
			if (apx_procfs_uses_cuda(p->pid) > 0) {
				p->cuda = 1;
				apx_dlog(APX_LOG_INFO, "pid %d uses CUDA", (int)p->pid);
			}
			p->cuda_backoff_ns *= 2;
			if (p->cuda_backoff_ns > d->conf.cuda_recheck_max_ns)
				p->cuda_backoff_ns = d->conf.cuda_recheck_max_ns;
			p->cuda_next_ns = now + p->cuda_backoff_ns;
		}
		up_try(d, p, now);
		if (r == 0)	/* sampled now: its totals are current */
			live_check(d, p, now);
	}
}

void apx_tracker_rescan(struct apx_daemon *d)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;

	d->st.rescans++;
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (!apx_tracker_find(d, (pid_t)pid))
			apx_tracker_consider(d, (pid_t)pid, APX_WHY_SCAN);
	}
	closedir(dir);
}
