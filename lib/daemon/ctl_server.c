/*
 * ctl_server.c - nvperfd's control socket (protocol: include/apx/ctl_proto.h). Clients are
 * non-blocking and served from the epoll loop in main.c: read one request line, build the whole
 * answer in memory (bounded), write it as the socket accepts it, close. Peer credentials
 * (SO_PEERCRED) decide what a client sees: its own uid's processes, or everything for root
 * (the device-wide "gpu" lines go to everyone, as nvidia-smi shows them to any user).
 * Caps: max_clients in all, a quarter of it per uid, APX_CTL_REQUEST_MAX per request,
 * APX_CTL_RESPONSE_MAX per answer, 10 s per client. Every answer (errors and the "too many
 * clients" refusal included) ends with shutdown(SHUT_WR), then what the client still sends is
 * read and dropped until it closes (at most DRAIN_NS): closing with unread bytes would reset
 * the connection (sock_drain.c). While REFUSED_MAX refused clients drain, the listening socket
 * is left unwatched: new clients wait in its backlog (or in connect()), never reset.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <apx/ctl_proto.h>

#include "daemon/ctl_client.h"
#include "daemon/daemon.h"

#include "base/banned.h"

#define CLIENT_TIMEOUT_NS (10ull * 1000000000ull)
#define DRAIN_NS 1000000000ull		/* reading after the answer, until the client closes */
#define REFUSED_MAX 64			/* refused clients drained at once (then the socket waits) */
#define BACKLOG 1024			/* clients the kernel holds meanwhile (listen(2); capped by
					 * net.core.somaxconn); more wait in connect() */

struct apx_client {
	struct apx_client *next;
	int fd;
	uid_t uid;
	pid_t pid;
	uint64_t since_ns;
	char in[APX_CTL_REQUEST_MAX];
	size_t inlen;
	char *out;
	size_t outlen, outoff, outcap;
	int overflow;
	int refused;			/* answered "too many clients": not in nclients */
	int draining;			/* answer sent, SHUT_WR done: reading until EOF */
	uint64_t drain_until_ns;
};

int apx_ctl_listen(struct apx_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->conf.socket_path;
	struct stat st;
	mode_t old_mask;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* a stale socket of a previous run (we hold the pid-file lock, so it is not live) */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* mode 0666 from the umask at bind time: no chmod by path (which would follow a symlink
	 * swapped in after bind); peer credentials decide what each client sees */
	old_mask = umask(0111);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_mask);
	if (r < 0 || listen(fd, BACKLOG) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static void client_close(struct apx_daemon *d, struct apx_client *c)
{
	struct apx_client **pp = &d->clients;

	while (*pp && *pp != c)
		pp = &(*pp)->next;
	if (*pp)
		*pp = c->next;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	if (c->refused)
		d->nctl_refused--;
	else
		d->nclients--;
	free(c);
	if (d->ctl_paused) {	/* room again: the clients waiting in the backlog come */
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = APX_EP_CTL };

		d->ctl_paused = 0;
		(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->ctlfd, &ev);
	}
}

/* The answer is out: FIN, then read until the client closes. */
static void client_drain(struct apx_daemon *d, struct apx_client *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	(void)shutdown(c->fd, SHUT_WR);
	if (apx_sock_discard(c->fd) || epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		client_close(d, c);
		return;
	}
	c->draining = 1;
	c->drain_until_ns = apx_now_ns() + DRAIN_NS;
}

static int client_flush(struct apx_client *c);

/* A client for fd, in the epoll set and on the list (refused: counted apart); NULL when it
 * cannot be (the caller closes fd). */
static struct apx_client *client_add(struct apx_daemon *d, int fd, const struct ucred *cred,
				     int refused)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct apx_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->uid = cred->uid;
	c->pid = cred->pid;
	c->refused = refused;
	c->since_ns = apx_now_ns();
	ev.data.ptr = c;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(c);
		return NULL;
	}
	c->next = d->clients;
	d->clients = c;
	if (refused)
		d->nctl_refused++;
	else
		d->nclients++;
	return c;
}

/* Over max_clients (or the uid's share): "err too many clients", drained like any answer
 * (apx_ctl_accept stops accepting while REFUSED_MAX are; closed at once only when out of
 * memory). */
static void refuse(struct apx_daemon *d, int fd, const struct ucred *cred)
{
	static const char busy[] = "err\ttoo many clients; try again\nend\n";
	struct apx_client *c = NULL;
	char *out;

	d->st.clients_refused++;
	(void)apx_sock_discard(fd);
	out = d->nctl_refused < REFUSED_MAX ? malloc(sizeof(busy) - 1) : NULL;
	if (out)
		c = client_add(d, fd, cred, 1);
	if (!c) {
		free(out);
		(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)shutdown(fd, SHUT_WR);
		close(fd);
		return;
	}
	memcpy(out, busy, sizeof(busy) - 1);
	c->out = out;
	c->outlen = c->outcap = sizeof(busy) - 1;
	if (client_flush(c) == 1)
		client_drain(d, c);
	else
		client_close(d, c);	/* 37 bytes that do not fit: the client is gone */
}

void apx_ctl_close_all(struct apx_daemon *d)
{
	while (d->clients)
		client_close(d, d->clients);
}

void apx_ctl_accept(struct apx_daemon *d)
{
	for (;;) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct apx_client *it;
		size_t same = 0, per_uid;
		int fd;

		/* no room to answer a refusal: wait (the socket off) until a client is done;
		 * the kernel holds new clients meanwhile, none is reset */
		if (d->nctl_refused >= REFUSED_MAX) {
			struct epoll_event ev = { .events = 0, .data.u64 = APX_EP_CTL };

			d->ctl_paused = 1;
			(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->ctlfd, &ev);
			return;
		}
		fd = accept4(d->ctlfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;	/* EAGAIN, or a transient error: the next EPOLLIN retries */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			close(fd);
			continue;
		}
		per_uid = d->conf.max_clients / 4 ? d->conf.max_clients / 4 : 1;
		for (it = d->clients; it; it = it->next)
			same += it->uid == cred.uid && !it->refused;
		if (d->nclients >= d->conf.max_clients || (cred.uid != 0 && same >= per_uid)) {
			refuse(d, fd, &cred);
			continue;
		}
		if (!client_add(d, fd, &cred, 0)) {
			close(fd);
			continue;
		}
		d->st.clients_total++;
	}
}

static void out_add(struct apx_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_add(struct apx_client *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->overflow)
		return;
	if (c->outcap - c->outlen < APX_CTL_LINE_MAX + 16) {
		size_t nc = c->outcap ? c->outcap * 2 : 16384;
		char *nb;

		if (nc > APX_CTL_RESPONSE_MAX) {
			c->overflow = 1;
			return;
		}
		nb = realloc(c->out, nc);
		if (!nb) {
			c->overflow = 1;
			return;
		}
		c->out = nb;
		c->outcap = nc;
	}
	va_start(ap, fmt);
	n = vsnprintf(c->out + c->outlen, APX_CTL_LINE_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= APX_CTL_LINE_MAX) {	/* cut an over-long line, keep it a line */
		n = APX_CTL_LINE_MAX - 1;
		c->out[c->outlen + (size_t)n - 1] = '\n';
	}
	c->outlen += (size_t)n;
}

static void user_name(uid_t uid, char *buf, size_t cap)
{
	struct passwd pw, *res = NULL;
	char tmp[2048];

	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		apx_ctl_escape(buf, cap, res->pw_name, strlen(res->pw_name));
	else
		snprintf(buf, cap, "%u", (unsigned)uid);
}

/* v when known, else "-" (ctl_proto.h: unknown is never 0) */
static void num_or_dash(char *buf, size_t cap, int known, uint64_t v)
{
	if (known)
		snprintf(buf, cap, "%" PRIu64, v);
	else
		snprintf(buf, cap, "-");
}

/* The proc fields of the last NVML sample (APX_CTL_PROC_GPU_DEVICE ... _SM_UTIL_PCT). */
static void gpu_now(const struct apx_daemon *d, const struct apx_gpu_proc *gp, char *dev,
		    char *count, char *mem, char *sm, size_t cap)
{
	num_or_dash(dev, cap, d->nvml && gp->now_devs,
		    gp->now_devs ? (uint64_t)__builtin_ctzll(gp->now_devs) : 0);
	num_or_dash(count, cap, d->nvml != NULL, (uint64_t)__builtin_popcountll(gp->now_devs));
	num_or_dash(mem, cap, d->nvml && (gp->now_valid & APX_GPU_MEM), gp->mem_now_bytes);
	num_or_dash(sm, cap, d->nvml && (gp->now_valid & APX_GPU_UTIL), gp->sm_now_pct);
}

/* The proc fields over its life so far (APX_CTL_PROC_GPU_SAMPLES ... _H2D_PAGEABLE_CALL_NS):
 * the idle share from NVML, L2 persistence and the pageable H2D call time from the uprobes. */
static void proc_life(const struct apx_daemon *d, const struct apx_proc *p, char *samples,
		      char *idle, char *l2b, char *l2w, char *h2dns, size_t cap)
{
	const struct apx_up_proc_state *u = p->up;

	num_or_dash(samples, cap, d->nvml != NULL, p->gpu.gpu_util_samples);
	num_or_dash(idle, cap, d->nvml != NULL, p->gpu.gpu_idle_samples);
	num_or_dash(l2b, cap, u != NULL, u ? u->l2_limit_bytes : 0);
	num_or_dash(l2w, cap, u != NULL, u ? u->apw_windows : 0);
	num_or_dash(h2dns, cap, u && u->copy_time, u ? u->h2d_ns[0] : 0);
}

static void answer_status(struct apx_daemon *d, struct apx_client *c)
{
	uint64_t now = apx_now_ns(), wall_off = apx_wall_ns() - now;
	char user[64], comm[80], argv[1100], joined[APX_ARGV_MAX];
	char pageable[24], pinned[24], gmem[24], gdev[24], gcount[24], gnow[24], sm[24];
	char gsamples[24], gidle[24], l2b[24], l2w[24], h2dns[24];
	const struct apx_gpu_dev *gpus;
	size_t first, ngpus;

	for (struct apx_proc *p = d->procs; p; p = p->next) {
		size_t n;

		if (c->uid != 0 && c->uid != p->uid)
			continue;
		n = p->argv_len < sizeof(joined) ? p->argv_len : sizeof(joined);
		memcpy(joined, p->argv ? p->argv : "", n);
		for (size_t i = 0; i < n; i++)
			if (!joined[i])
				joined[i] = ' ';
		while (n && joined[n - 1] == ' ')
			n--;
		user_name(p->uid, user, sizeof(user));
		apx_ctl_escape(comm, sizeof(comm), p->comm, strlen(p->comm));
		apx_ctl_escape(argv, sizeof(argv), joined, n);
		num_or_dash(pageable, sizeof(pageable), p->up != NULL, p->up ? p->up->h2d_bytes[0] : 0);
		num_or_dash(pinned, sizeof(pinned), p->up != NULL, p->up ? p->up->h2d_bytes[1] : 0);
		num_or_dash(gmem, sizeof(gmem), p->gpu.valid & APX_GPU_MEM, p->gpu.mem_peak_bytes);
		gpu_now(d, &p->gpu, gdev, gcount, gnow, sm, sizeof(gdev));
		proc_life(d, p, gsamples, gidle, l2b, l2w, h2dns, sizeof(gsamples));
		out_add(c, "proc\t%d\t%d\t%u\t%s\t%" PRIu64 "\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%u\t%c\t%u\t%s\t%s"
			"\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			(int)p->pid, (int)p->ppid, (unsigned)p->uid, user,
			(p->start_ns + wall_off) / 1000000, (now - p->start_ns) / 1000000,
			p->cpu_pct_x10, p->last.utime_ns / 1000000, p->last.stime_ns / 1000000,
			p->last.rss_bytes, p->peak_rss, p->last.vol_csw, p->last.invol_csw,
			p->last.threads, p->last.state ? p->last.state : '?', p->cuda, comm, argv,
			!d->up ? "unavailable" : !p->up ? "none" :
			p->up->state == APX_UPS_ATTACHED ? "attached" : "detached",
			pageable, pinned, gmem, gdev, gcount, gnow, sm, gsamples, gidle, l2b, l2w,
			h2dns);
	}
	ngpus = apx_nvml_devices(d->nvml, &gpus);
	for (size_t i = 0; i < ngpus; i++) {
		const struct apx_gpu_dev *g = &gpus[i];
		char name[sizeof(g->name) * 4], util[24], used[24], total[24], power[24];

		apx_ctl_escape(name, sizeof(name), g->name, strnlen(g->name, sizeof(g->name)));
		num_or_dash(util, sizeof(util), g->valid & APX_GPU_UTIL, g->util_gpu_pct);
		num_or_dash(used, sizeof(used), g->valid & APX_GPU_MEM, g->mem_used_bytes);
		num_or_dash(total, sizeof(total), g->valid & APX_GPU_MEM, g->mem_total_bytes);
		num_or_dash(power, sizeof(power), g->valid & APX_GPU_POWER, g->power_mw);
		out_add(c, "gpu\t%zu\t%s\t%s\t%s\t%s\t%s\n", i, name, util, used, total, power);
	}
	first = d->nfindings > APX_FINDINGS_RECENT ? d->nfindings - APX_FINDINGS_RECENT : 0;
	for (size_t i = d->nfindings; i-- > first;) {	/* newest first */
		const struct apx_proc_finding *f = &d->findings[i % APX_FINDINGS_RECENT];
		char title[400];

		if (c->uid != 0 && c->uid != f->uid)
			continue;
		apx_ctl_escape(title, sizeof(title), f->f.title, strlen(f->f.title));
		apx_ctl_escape(comm, sizeof(comm), f->comm, strlen(f->comm));
		out_add(c, "finding\t%d\t%u\t%" PRIu64 "\t%u\t%s\t%s\t%s\n", (int)f->pid,
			(unsigned)f->uid, f->unix_ms, (unsigned)f->f.severity, f->f.rule, title,
			comm);
	}
}

static void list_user(struct apx_daemon *d, struct apx_client *c, uid_t uid)
{
	int dfd = apx_state_dir_open(d, uid, 0), fd;
	DIR *dir;
	struct dirent *de;

	if (dfd < 0)
		return;
	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		return;
	}
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		char path[APX_CONF_PATH_MAX + 300], esc[sizeof(path) * 4];

		if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".apx"))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%u/%s", d->conf.state_dir, (unsigned)uid, de->d_name);
		apx_ctl_escape(esc, sizeof(esc), path, strlen(path));
		out_add(c, "summary\t%u\t%" PRIu64 "\t%" PRIu64 "\t%s\n", (unsigned)uid,
			(uint64_t)st.st_mtim.tv_sec * 1000 + (uint64_t)st.st_mtim.tv_nsec / 1000000,
			(uint64_t)st.st_size, esc);
	}
	closedir(dir);
	close(dfd);
}

static void answer_history(struct apx_daemon *d, struct apx_client *c)
{
	DIR *dir;
	struct dirent *de;

	if (c->uid != 0) {
		list_user(d, c, c->uid);
		return;
	}
	dir = opendir(d->conf.state_dir);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end;
		unsigned long uid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		uid = strtoul(de->d_name, &end, 10);
		if (!*end && uid < 0xffffffffu)
			list_user(d, c, (uid_t)uid);
	}
	closedir(dir);
}

static void answer_stats(struct apx_daemon *d, struct apx_client *c)
{
	struct rusage ru;
	const struct apx_stats *s = &d->st;

#define STAT(k, v) out_add(c, "stat\t%s\t%" PRIu64 "\n", k, (uint64_t)(v))
	STAT("pid", getpid());
	STAT("uptime_ms", (apx_now_ns() - d->start_ns) / 1000000);
	STAT("tracked", d->nprocs);
	STAT("clients", d->nclients);
	STAT("events", s->events);
	STAT("forks", s->forks);
	STAT("execs", s->execs);
	STAT("comms", s->comms);
	STAT("exits", s->exits);
	STAT("enobufs", s->enobufs);
	STAT("rescans", s->rescans);
	STAT("tracked_total", s->tracked_total);
	STAT("untracked_cap", s->untracked_cap);
	STAT("untracked_user_cap", s->untracked_user_cap);
	STAT("summaries", s->summaries);
	STAT("summary_errors", s->summary_errors);
	STAT("summaries_pruned", s->summaries_pruned);
	STAT("summary_rescans", s->summary_rescans);
	STAT("clients_total", s->clients_total);
	STAT("clients_refused", s->clients_refused);
	STAT("notices", s->notices);
	STAT("live_notices", s->live_notices);
	STAT("config_reloads", s->config_reloads);
	STAT("config_errors", s->config_errors);
	STAT("samples", s->samples);
	STAT("cuda_checks", s->cuda_checks);
	STAT("batch_periods", s->batch_periods);
	STAT("sample_period_ns", d->conf.sample_period_ns);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		STAT("cpu_user_us", (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec);
		STAT("cpu_sys_us", (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec);
		STAT("maxrss_kib", ru.ru_maxrss);
	}
	{
		struct apx_pstat ps;

		if (apx_procfs_stat(getpid(), 0, &ps, 0) == 0)
			STAT("rss_bytes", ps.rss_bytes);
	}
#undef STAT
}

static void handle_request(struct apx_daemon *d, struct apx_client *c, char *line)
{
	const char *verb;

	if (strncmp(line, APX_CTL_PROTO_MAGIC " ", 5)) {
		out_add(c, "err\texpected \"" APX_CTL_PROTO_MAGIC " VERB\"\nend\n");
		return;
	}
	verb = line + 5;
	out_add(c, "ok\n");
	if (!strcmp(verb, "status"))
		answer_status(d, c);
	else if (!strcmp(verb, "history"))
		answer_history(d, c);
	else if (!strcmp(verb, "stats"))
		answer_stats(d, c);
	else if (strcmp(verb, "ping")) {
		c->outlen = 0;
		out_add(c, "err\tunknown request; expected status, history, stats or ping\nend\n");
		return;
	}
	if (c->overflow) {
		/* too big: the answer is cut at a line boundary, and still ends with "end" */
		char *nl;

		while (c->outlen + 4 > c->outcap && (nl = memrchr(c->out, '\n', c->outlen - 1)))
			c->outlen = (size_t)(nl - c->out) + 1;
		if (c->outlen + 4 <= c->outcap) {
			memcpy(c->out + c->outlen, "end\n", 4);
			c->outlen += 4;
		}
		return;
	}
	out_add(c, "end\n");
}

static int client_flush(struct apx_client *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		c->outoff += (size_t)n;
	}
	return 1;	/* all sent */
}

void apx_ctl_event(struct apx_daemon *d, struct apx_client *c, uint32_t events)
{
	struct epoll_event ev = { 0 };
	char *nl;
	int r;

	if (c->draining) {
		if (apx_sock_discard(c->fd))
			client_close(d, c);	/* the client closed: done */
		return;
	}
	if (c->out) {
		r = client_flush(c);
		if (r == 1)
			client_drain(d, c);
		else if (r < 0)
			client_close(d, c);
		return;
	}
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
		client_close(d, c);
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			client_close(d, c);
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = 0;
		if (memchr(c->in, '\n', c->inlen) || c->inlen == sizeof(c->in) - 1)
			break;
	}
	nl = memchr(c->in, '\n', c->inlen);
	if (!nl) {
		if (c->inlen < sizeof(c->in) - 1)
			return;	/* wait for the rest */
		out_add(c, "err\trequest longer than %d bytes\nend\n", APX_CTL_REQUEST_MAX);
	} else {
		*nl = 0;
		handle_request(d, c, c->in);
	}
	if (!c->out) {
		client_close(d, c);
		return;
	}
	r = client_flush(c);
	if (r != 0) {
		if (r == 1)
			client_drain(d, c);
		else
			client_close(d, c);
		return;
	}
	ev.events = EPOLLOUT;
	ev.data.ptr = c;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		client_close(d, c);
}

void apx_ctl_expire(struct apx_daemon *d)
{
	uint64_t now = apx_now_ns();
	struct apx_client *c = d->clients, *next;

	for (; c; c = next) {
		next = c->next;
		if (now - c->since_ns > CLIENT_TIMEOUT_NS || (c->draining && now > c->drain_until_ns))
			client_close(d, c);
	}
}
