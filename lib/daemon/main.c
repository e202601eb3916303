/*
 * main.c - nvperfd, the always-on daemon: command line, start-up (config, single-instance lock
 * and pid file, daemonizing, capabilities), and the one epoll loop over the netlink proc
 * connector, a signalfd (SIGTERM/SIGINT stop, SIGHUP re-open log + re-read config), a timerfd
 * (sampling), inotify (config files), the control socket and, when metrics_listen is set, the
 * Prometheus endpoint (metrics_http.c). Started by systemd
 * (packaging/nvperfd.service) or by `apx init`. The only place, with tracker.c, that logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <apx/version.h>

#include "daemon/daemon.h"
#include "daemon/metrics_http.h"
#include "daemon/summary_index.h"

#include "base/banned.h"

static const char usage[] =
	"usage: nvperfd [--config PATH] [--foreground] [--stderr]\n"
	"\n"
	"The apx daemon: tracks every Python process on the machine from /proc and the netlink\n"
	"process connector, and leaves a summary .apx file for each when it ends.\n"
	"\n"
	"  -c, --config PATH  machine config (default " APX_CONF_MACHINE_PATH "; a file named\n"
	"                     here must exist)\n"
	"  -f, --foreground   do not daemonize (systemd, debugging)\n"
	"  -e, --stderr       also log to stderr\n"
	"  -h, --help         this help\n"
	"      --version      print the version\n"
	"\n"
	"Signals: SIGTERM stops; SIGHUP re-opens the log file and re-reads the config.\n"
	"See nvperfd(8) (docs/nvperfd.md) and nvperfd.conf(5) (docs/nvperfd.conf.md).\n";

static int timer_arm(struct apx_daemon *d)
{
	struct itimerspec its = { 0 };
	uint64_t ns = d->conf.sample_period_ns;

	its.it_interval.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(ns % 1000000000ull);
	its.it_value = its.it_interval;
	return timerfd_settime(d->timerfd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int ep_add(struct apx_daemon *d, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void watch_conf(struct apx_daemon *d)
{
	char dir[APX_CONF_PATH_MAX];
	char *slash;

	if (d->conf_wd >= 0)
		return;
	snprintf(dir, sizeof(dir), "%s", d->conf_path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	d->conf_wd = inotify_add_watch(d->inofd, dir, APX_CONF_WATCH_MASK | IN_ONLYDIR);
	if (d->conf_wd < 0)
		apx_dlog(APX_LOG_WARNING, "cannot watch '%s' for config changes: %s", dir,
			 strerror(errno));
}

static void forget_users(struct apx_daemon *d)
{
	for (size_t i = 0; i < APX_USERS_MAX; i++) {
		struct apx_user_conf *u = &d->users[i];

		if (u->used && u->wd >= 0 && u->wd != d->conf_wd)
			(void)inotify_rm_watch(d->inofd, u->wd);
		memset(u, 0, sizeof(*u));
		u->wd = -1;
	}
}

/* The Prometheus endpoint: close the one open (if any), listen on addr ("" = off). A failure
 * is said and the daemon runs on without it; the next reload tries again. */
static void metrics_apply(struct apx_daemon *d, const char *addr)
{
	int r;

	if (d->metrics) {
		apx_dlog(APX_LOG_INFO, "metrics: no longer listening on %s",
			 apx_metrics_addr(d->metrics));
		apx_metrics_close(d, d->metrics);
		d->metrics = NULL;
	}
	if (!addr[0])
		return;
	r = apx_metrics_open(d, addr, &d->metrics);
	if (r < 0)
		apx_dlog(APX_LOG_ERR, "metrics: cannot listen on %s: %s%s; running without the "
			 "Prometheus endpoint", addr, strerror(-r), r == -EACCES ? " (a port below "
			 "1024 needs CAP_NET_BIND_SERVICE, which nvperfd keeps only during start-up)" :
			 "");
	else
		apx_dlog(APX_LOG_INFO, "metrics: listening on %s", apx_metrics_addr(d->metrics));
}

/* The machine file is gone (deleted, moved away) or was never there. Once loaded, a config is
 * never swapped for the built-in defaults behind the administrator's back (the log, the state
 * folder and the metrics endpoint would move): the one in force stays, the current log and
 * syslog say so loudly, and the file is read again when it comes back (inotify). */
static void conf_gone(struct apx_daemon *d, const char *why)
{
	if (!d->conf_present) {
		apx_dlog(APX_LOG_INFO, "config '%s' still absent (%s): keeping %s", d->conf_path,
			 why, d->conf_from_file ? "the configuration loaded last" :
			 "the built-in defaults");
		return;
	}
	d->conf_present = 0;
	d->st.config_errors++;
	apx_dlog(APX_LOG_ERR | APX_LOG_SYSLOG, "config '%s' is gone (%s: deleted or moved away): "
		 "keeping the configuration loaded last, not the built-in defaults; it is read "
		 "again when a file comes back at that path", d->conf_path, why);
}

static void reload_conf(struct apx_daemon *d, const char *why)
{
	struct apx_conf c;
	struct apx_conf_error err = { 0 };
	int r;

	watch_conf(d);		/* the folder may have been re-created */
	apx_conf_defaults(&c);
	r = apx_conf_load(d->conf_path, APX_CONF_MACHINE, (uid_t)-1, &c, &err);
	if (r == -ENOENT) {
		conf_gone(d, why);
		return;
	}
	if (r < 0) {
		char esc[600];

		d->st.config_errors++;
		apx_dlog(APX_LOG_ERR | APX_LOG_SYSLOG, "config rejected (%s), keeping the previous "
			 "one: %s", why, apx_dlog_esc(esc, sizeof(esc), err.msg, strlen(err.msg)));
		return;
	}
	d->conf_present = d->conf_from_file = 1;
	d->st.config_reloads++;
	if (strcmp(c.socket_path, d->conf.socket_path) || strcmp(c.pid_file, d->conf.pid_file))
		apx_dlog(APX_LOG_WARNING, "socket and pid_file changes apply after a restart");
	snprintf(c.socket_path, sizeof(c.socket_path), "%s", d->conf.socket_path);
	snprintf(c.pid_file, sizeof(c.pid_file), "%s", d->conf.pid_file);
	if (strcmp(c.log_file, d->conf.log_file) || c.syslog != d->conf.syslog ||
	    c.log_level != d->conf.log_level)
		apx_dlog_reopen(&c);
	if (c.sample_period_ns != d->conf.sample_period_ns) {
		d->conf.sample_period_ns = c.sample_period_ns;
		(void)timer_arm(d);
	}
	/* a new address, or the last bind failed: (re)open; "" closes */
	if (strcmp(c.metrics_listen, d->conf.metrics_listen) || (c.metrics_listen[0] && !d->metrics))
		metrics_apply(d, c.metrics_listen);
	d->conf = c;
	forget_users(d);	/* per-user configs sit on the machine defaults: re-read lazily */
	apx_summary_index_forget(d);	/* state_dir or the limits may have changed */
	apx_dlog(APX_LOG_INFO, "config loaded (%s); applies to processes that start from now on",
		 why);
}

static void on_inotify(struct apx_daemon *d)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *base = strrchr(d->conf_path, '/');
	int reload = 0;

	base = base ? base + 1 : d->conf_path;
	for (;;) {
		ssize_t n = read(d->inofd, buf, sizeof(buf));

		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			const char *name = ev->len ? ev->name : "";

			/* one folder may hold the machine file and users' files: same wd */
			if (ev->wd == d->conf_wd && !strcmp(name, base) &&
			    apx_conf_event_rereads(ev->mask, d->conf_path))
				reload = 1;
			if (ev->mask & IN_IGNORED) {
				for (size_t i = 0; i < APX_USERS_MAX; i++)
					if (d->users[i].wd == ev->wd)
						d->users[i].wd = -1;
				if (ev->wd == d->conf_wd)
					d->conf_wd = -1;
			} else if (ev->len) {
				apx_user_conf_changed(d, ev->wd, name, ev->mask);
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	if (reload)
		reload_conf(d, "file changed");
}

static int on_signal(struct apx_daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			apx_dlog(APX_LOG_INFO, "signal %u from pid %u: stopping", si.ssi_signo,
				 si.ssi_pid);
			d->stopping = 1;
		} else if (si.ssi_signo == SIGHUP) {
			apx_dlog_reopen(&d->conf);
			reload_conf(d, "SIGHUP");
		}
	}
	return 0;
}

/* Keep only the capabilities nvperfd uses after start-up: reading any process's /proc entries
 * (SYS_PTRACE, DAC_READ_SEARCH), writing summaries into users' folders and giving them to the
 * user (DAC_OVERRIDE, CHOWN, FOWNER). NET_ADMIN was needed only to subscribe to the connector. */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* With eBPF uprobes, also PERFMON, BPF and SYS_ADMIN: attaching a uprobe to a process opens
 * a perf event, links a BPF program to it and updates a BPF map. CAP_PERFMON should be
 * enough for the perf event, but on kernel 6.18 perf_event_open of a uprobe for a pid failed
 * with EACCES until SYS_ADMIN was kept too (checked with strace); so it is kept, only when
 * the uprobes are in use (uprobes = no drops it). */
static int drop_caps(int bpf)
{
	static const int keep[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
				    CAP_SYS_PTRACE, CAP_PERFMON, CAP_BPF, CAP_SYS_ADMIN };
	size_t nkeep = sizeof(keep) / sizeof(keep[0]) - (bpf ? 0 : 3);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } }, cur[2] = { { 0 } };

	if (geteuid() != 0)
		return 0;
	/* keep only what we have: asking for a capability outside the permitted set (a
	 * restricted bounding set) would make capset fail and keep everything */
	if (syscall(SYS_capget, &h, cur) < 0)
		return -errno;
	for (int cap = 0; cap <= 63; cap++) {
		int k = 0;

		for (size_t i = 0; i < nkeep; i++)
			k |= keep[i] == cap;
		if (!k && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
			(void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	}
	for (size_t i = 0; i < nkeep; i++) {
		data[keep[i] / 32].effective |= 1u << (keep[i] % 32);
		data[keep[i] / 32].permitted |= 1u << (keep[i] % 32);
	}
	for (int i = 0; i < 2; i++) {
		data[i].permitted &= cur[i].permitted;
		data[i].effective &= cur[i].permitted;
	}
	if (syscall(SYS_capset, &h, data) < 0)
		return -errno;
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	return 0;
}

/* Single instance: an exclusive lock on the pid file, held for the daemon's life. */
static int lock_pidfile(struct apx_daemon *d, char *msg, size_t cap)
{
	char buf[32];
	int fd, n;

	fd = open(d->conf.pid_file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		snprintf(msg, cap, "cannot open pid file '%s': %s", d->conf.pid_file, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		n = (int)read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		snprintf(msg, cap, "already running (pid %s, lock on '%s')", buf[0] ? buf : "?",
			 d->conf.pid_file);
		close(fd);
		return e == EWOULDBLOCK ? -EEXIST : -e;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		snprintf(msg, cap, "cannot write pid file '%s': %s", d->conf.pid_file, strerror(errno));
		close(fd);
		return -EIO;
	}
	d->lockfd = fd;
	return 0;
}

/* Fork to the background; the parent waits on a pipe until the child is ready (or failed), so
 * that `nvperfd` (and `apx init`) return only once the socket accepts clients. */
static int daemonize(int *ret_ready_fd)
{
	int pfd[2];
	pid_t pid;
	char buf[512];
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pfd[1]);
		n = read(pfd[0], buf, sizeof(buf) - 1);
		(void)waitpid(pid, NULL, 0);
		if (n > 0 && buf[0] == '+')
			_exit(0);
		if (n > 1) {
			buf[n] = 0;
			fprintf(stderr, "nvperfd: %s\n", buf + 1);
		} else {
			fprintf(stderr, "nvperfd: the daemon exited during start-up\n");
		}
		_exit(1);
	}
	close(pfd[0]);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (chdir("/") < 0)
		return -errno;
	umask(022);
	{
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
	}
	*ret_ready_fd = pfd[1];
	return 0;
}

static void ready(int *fd, const char *err)
{
	char buf[512];
	int n;

	if (*fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%c%s", err ? '-' : '+', err ? err : "");
	(void)!write(*fd, buf, (size_t)n);
	close(*fd);
	*fd = -1;
}

/* Say at start (not at the first summary) when the state folder cannot be used safely. */
static void check_state_dir(struct apx_daemon *d)
{
	struct stat st;

	if (mkdir(d->conf.state_dir, 0755) < 0 && errno != EEXIST) {
		apx_dlog(APX_LOG_ERR, "cannot create state_dir '%s': %s; no summary will be written",
			 d->conf.state_dir, strerror(errno));
		return;
	}
	if (lstat(d->conf.state_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0022))
		apx_dlog(APX_LOG_ERR, "state_dir '%s' must be a folder owned by uid %u and not "
			 "writable by group or others (not a symlink); no summary will be written",
			 d->conf.state_dir, (unsigned)geteuid());
}

/* The GPU views: eBPF uprobes and NVML. Each is said once when it cannot be used; the daemon
 * runs on without it. */
static void gpu_views_open(struct apx_daemon *d)
{
	const struct apx_gpu_dev *g;
	size_t n, gpm = 0;
	int r;

	if (!d->conf.uprobes) {
		snprintf(d->up_why, sizeof(d->up_why), "off in the config (uprobes = no)");
		apx_dlog(APX_LOG_INFO, "eBPF uprobes: off (uprobes = no)");
	} else if (!(d->up = apx_uprobes_open(d->up_why, sizeof(d->up_why)))) {
		apx_dlog(APX_LOG_NOTICE, "eBPF uprobes not available: %s; running without them "
			 "(no pinned/pageable copy counts, no L2 persistence view)", d->up_why);
	} else if ((r = ep_add(d, apx_uprobes_fd(d->up), APX_EP_UPROBES)) < 0) {
		snprintf(d->up_why, sizeof(d->up_why), "cannot poll the BPF ring buffer: %s",
			 strerror(-r));
		apx_dlog(APX_LOG_NOTICE, "eBPF uprobes not available: %s; running without them",
			 d->up_why);
		apx_uprobes_close(d->up);
		d->up = NULL;
	} else {
		apx_dlog(APX_LOG_INFO, "eBPF uprobes ready: libcuda of tracked CUDA processes, "
			 "no kernel launches");
	}
	if (!d->conf.nvml) {
		snprintf(d->nvml_why, sizeof(d->nvml_why), "off in the config (nvml = no)");
		apx_dlog(APX_LOG_INFO, "NVML: off (nvml = no)");
		return;
	}
	d->nvml = apx_nvml_open(d->nvml_why, sizeof(d->nvml_why));
	if (!d->nvml) {
		apx_dlog(APX_LOG_NOTICE, "NVML not available: %s; running without GPU metrics",
			 d->nvml_why);
		return;
	}
	n = apx_nvml_devices(d->nvml, &g);
	for (size_t i = 0; i < n; i++)
		gpm += g[i].gpm_supported;
	apx_dlog(APX_LOG_INFO, "NVML: %zu GPUs (%s%s), GPM on %zu", n, n ? g[0].name : "",
		 n > 1 ? ", ..." : "", gpm);
}

static int setup(struct apx_daemon *d, char *msg, size_t cap)
{
	sigset_t mask;
	struct timespec mono, boot, real;
	int r;

	r = lock_pidfile(d, msg, cap);
	if (r < 0)
		return r;
	r = apx_dlog_open(&d->conf, d->foreground > 1);
	if (r < 0)
		fprintf(stderr, "nvperfd: cannot open log file '%s': %s\n", d->conf.log_file,
			strerror(-r));
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &real);
	d->boot_minus_mono_ns = (int64_t)(boot.tv_sec - mono.tv_sec) * 1000000000 +
				(boot.tv_nsec - mono.tv_nsec);
	d->real_minus_mono_ns = (int64_t)(real.tv_sec - mono.tv_sec) * 1000000000 +
				(real.tv_nsec - mono.tv_nsec);
	d->start_ns = apx_now_ns();
	d->self = getpid();
	r = apx_tracker_init(d);
	if (r < 0)
		return r;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	d->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d->nlbatchfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d->inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (d->epfd < 0 || d->sigfd < 0 || d->timerfd < 0 || d->inofd < 0 || d->nlbatchfd < 0) {
		snprintf(msg, cap, "cannot create event fds: %s", strerror(errno));
		return -errno;
	}
	d->nlfd = apx_nl_open((int)d->conf.netlink_buffer);
	if (d->nlfd < 0) {
		snprintf(msg, cap, "cannot subscribe to the netlink process connector: %s%s",
			 strerror(-d->nlfd), d->nlfd == -EPERM ? " (needs root / CAP_NET_ADMIN)" : "");
		return d->nlfd;
	}
	d->ctlfd = apx_ctl_listen(d);
	if (d->ctlfd < 0) {
		snprintf(msg, cap, "cannot listen on '%s': %s", d->conf.socket_path,
			 strerror(-d->ctlfd));
		return d->ctlfd;
	}
	watch_conf(d);
	if ((r = ep_add(d, d->nlfd, APX_EP_NL)) < 0 || (r = ep_add(d, d->sigfd, APX_EP_SIG)) < 0 ||
	    (r = ep_add(d, d->timerfd, APX_EP_TIMER)) < 0 ||
	    (r = ep_add(d, d->inofd, APX_EP_INOTIFY)) < 0 || (r = ep_add(d, d->ctlfd, APX_EP_CTL)) < 0 ||
	    (r = ep_add(d, d->nlbatchfd, APX_EP_NLBATCH)) < 0 ||
	    (r = timer_arm(d)) < 0) {
		snprintf(msg, cap, "cannot set up the event loop: %s", strerror(-r));
		return r;
	}
	check_state_dir(d);
	gpu_views_open(d);
	metrics_apply(d, d->conf.metrics_listen);	/* before the capabilities go (ports < 1024) */
	/* after subscribing, so that a process started meanwhile is seen by one or the other */
	apx_tracker_rescan(d);
	r = drop_caps(d->up != NULL);
	if (r < 0)
		apx_dlog(APX_LOG_WARNING, "cannot drop capabilities: %s", strerror(-r));
	if (!d->conf_present)
		apx_dlog(APX_LOG_WARNING | APX_LOG_SYSLOG, "no config at '%s': running on the "
			 "built-in defaults (nvperfd.conf(5)); a file created there is read at once",
			 d->conf_path);
	apx_dlog(APX_LOG_INFO, "nvperfd %s started: pid %d, config '%s'%s, socket '%s', state "
		 "'%s', sampling every %.3f s, %zu Python processes found", APX_VERSION,
		 (int)getpid(), d->conf_path, d->conf_present ? "" : " (absent: defaults)",
		 d->conf.socket_path, d->conf.state_dir,
		 (double)d->conf.sample_period_ns / 1e9, d->nprocs);
	return 0;
}

/* Event storms (thousands of execs per second) would wake the loop for every few events.
 * Above APX_NL_STORM_RATE events/s the connector is read on a timer instead, every
 * APX_NL_BATCH_NS (its 8 MiB buffer holds seconds of a storm), and back on epoll below it. */
#define APX_NL_STORM_RATE 2000
#define APX_NL_BATCH_NS 10000000ull
#define APX_NL_WINDOW_NS 100000000ull

static void nl_mode(struct apx_daemon *d, int batching)
{
	struct epoll_event ev = { .events = batching ? 0 : EPOLLIN, .data.u64 = APX_EP_NL };
	struct itimerspec its = { 0 };

	if (batching == d->batching)
		return;
	d->batching = batching;
	(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->nlfd, &ev);
	if (batching) {
		its.it_interval.tv_nsec = (long)APX_NL_BATCH_NS;
		its.it_value = its.it_interval;
	}
	(void)timerfd_settime(d->nlbatchfd, 0, &its, NULL);
	apx_dlog(APX_LOG_DEBUG, "process events %s", batching ? "storm: reading them in batches" :
		 "back to normal");
}

/* Rescan /proc after an overrun, at most every 100 ms (a scan reads every process's exe). */
static void rescan_if_due(struct apx_daemon *d, uint64_t now)
{
	if (!d->rescan_pending || now - d->last_rescan_ns < APX_NL_WINDOW_NS)
		return;
	d->rescan_pending = 0;
	d->last_rescan_ns = now;
	apx_tracker_rescan(d);
}

static void on_netlink(struct apx_daemon *d)
{
	uint64_t now, before = d->st.events;

	if (apx_nl_drain(d) == -ENOBUFS) {
		d->st.enobufs++;
		if (d->st.enobufs < 10 || d->st.enobufs % 1000 == 0)
			apx_dlog(APX_LOG_WARNING, "process events lost (overrun #%" PRIu64 "): "
				 "rescanning /proc", d->st.enobufs);
		d->rescan_pending = 1;
	}
	d->win_events += d->st.events - before;
	now = apx_now_ns();
	rescan_if_due(d, now);
	if (now - d->win_start_ns >= APX_NL_WINDOW_NS) {
		uint64_t rate = d->win_events * 1000000000ull / (now - d->win_start_ns);

		nl_mode(d, rate > APX_NL_STORM_RATE);
		d->win_start_ns = now;
		d->win_events = 0;
	}
}

static int run(struct apx_daemon *d)
{
	struct epoll_event evs[64];

	while (!d->stopping) {
		/* a summary folder being listed: its next step after this turn's events, without
		 * waiting (summary_index.c: a step a turn) */
		int n = epoll_wait(d->epfd, evs, 64, apx_summary_index_busy(d) ? 0 : -1), expire;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			apx_dlog(APX_LOG_ERR, "epoll_wait: %s", strerror(errno));
			return -errno;
		}
		expire = 0;	/* control clients are dropped after the batch: a later event of
				 * this batch may still name one */
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			switch (tag) {
			case APX_EP_NL:
				on_netlink(d);
				break;
			case APX_EP_NLBATCH: {
				uint64_t exp;

				if (read(d->nlbatchfd, &exp, sizeof(exp)) == sizeof(exp)) {
					d->st.batch_periods++;
					on_netlink(d);
				}
				break;
			}
			case APX_EP_SIG:
				on_signal(d);
				break;
			case APX_EP_TIMER: {
				uint64_t exp;

				if (read(d->timerfd, &exp, sizeof(exp)) == sizeof(exp)) {
					rescan_if_due(d, apx_now_ns());
					apx_tracker_tick(d);
					expire = 1;
				}
				break;
			}
			case APX_EP_INOTIFY:
				on_inotify(d);
				break;
			case APX_EP_CTL:
				apx_ctl_accept(d);
				break;
			case APX_EP_UPROBES:
				if (d->up)
					(void)apx_uprobes_drain(d->up, d);
				break;
			case APX_EP_METRICS:
			case APX_EP_METRICS_TIMER:
				apx_metrics_event(d, tag, evs[i].events);
				break;
			default:
				if (tag & APX_EP_METRICS_CONN)
					apx_metrics_event(d, tag, evs[i].events);
				else
					apx_ctl_event(d, evs[i].data.ptr, evs[i].events);
				break;
			}
		}
		if (expire)
			apx_ctl_expire(d);
		(void)apx_summary_index_step(d);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "stderr", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct apx_daemon *d;
	struct apx_conf_error err = { 0 };
	char msg[600] = "";
	int c, r, ready_fd = -1, to_stderr = 0, named = 0;

	static struct apx_daemon daemon_state;	/* the one daemon; main's, loop thread only */

	d = &daemon_state;
	d->epfd = d->nlfd = d->sigfd = d->timerfd = d->inofd = d->ctlfd = d->lockfd = -1;
	d->nlbatchfd = -1;
	d->conf_wd = -1;
	snprintf(d->conf_path, sizeof(d->conf_path), "%s", APX_CONF_MACHINE_PATH);
	while ((c = getopt_long(argc, argv, "c:feh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (strlen(optarg) >= sizeof(d->conf_path)) {
				fprintf(stderr, "nvperfd: --config: path too long\n");
				return 2;
			}
			snprintf(d->conf_path, sizeof(d->conf_path), "%s", optarg);
			named = 1;
			break;
		case 'f':
			d->foreground = 1;
			break;
		case 'e':
			to_stderr = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("nvperfd %s\n", APX_VERSION);
			return 0;
		default:
			fprintf(stderr, "nvperfd: see 'nvperfd --help'\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nvperfd: unexpected argument '%s'; see 'nvperfd --help'\n", argv[optind]);
		return 2;
	}
	apx_conf_defaults(&d->conf);
	r = apx_conf_load(d->conf_path, APX_CONF_MACHINE, (uid_t)-1, &d->conf, &err);
	if (r == -ENOENT && named) {	/* a config named on purpose must be there */
		fprintf(stderr, "nvperfd: %s (named with --config; without --config nvperfd "
			"reads " APX_CONF_MACHINE_PATH " and runs on the built-in defaults when it "
			"is absent)\n", err.msg);
		return 1;
	}
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "nvperfd: %s\n", err.msg);
		return 1;
	}
	d->conf_present = d->conf_from_file = r == 0;
	if (!d->foreground) {
		r = daemonize(&ready_fd);
		if (r < 0) {
			fprintf(stderr, "nvperfd: cannot daemonize: %s\n", strerror(-r));
			return 1;
		}
	}
	if (to_stderr && d->foreground)
		d->foreground = 2;
	r = setup(d, msg, sizeof(msg));
	if (r < 0) {
		if (!msg[0])
			snprintf(msg, sizeof(msg), "start-up failed: %s", strerror(-r));
		apx_dlog(APX_LOG_ERR, "%s", msg);
		if (ready_fd >= 0)
			ready(&ready_fd, msg);
		else
			fprintf(stderr, "nvperfd: %s\n", msg);
		return 1;
	}
	ready(&ready_fd, NULL);
	r = run(d);
	apx_dlog(APX_LOG_INFO, "stopped: %zu processes tracked at exit, %" PRIu64 " tracked in all, "
		 "%" PRIu64 " summaries, %" PRIu64 " overruns", d->nprocs, d->st.tracked_total,
		 d->st.summaries, d->st.enobufs);
	apx_metrics_close(d, d->metrics);
	d->metrics = NULL;
	apx_ctl_close_all(d);
	(void)unlink(d->conf.socket_path);
	(void)unlink(d->conf.pid_file);
	apx_tracker_free(d);
	apx_summary_index_forget(d);
	free(d->sumidx);
	apx_uprobes_close(d->up);
	apx_nvml_close(d->nvml);
	apx_dlog_close();
	return r < 0 ? 1 : 0;
}
