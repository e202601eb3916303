/*
 * metrics_http.c - nvperfd's Prometheus endpoint. With metrics_listen set, a TCP listener
 * that answers "GET /metrics" with the text exposition format 0.0.4 of what the daemon holds:
 * its own counters, each GPU's NVML and GPM readings (only those the driver gave: validity
 * bits, never a 0 for "unsupported"), and each tracked process (CPU, memory, GPU memory and
 * idle share, copy bytes and the pageable rate, L2 persistence from the uprobes). Names,
 * labels and units: docs/nvperfd-metrics.md.
 *
 * HTTP/1.0, one request per connection, then close. Opened and closed by main.c (start,
 * reload), served from main.c's epoll loop on its one thread; every socket is non-blocking.
 * Bounds: APX_METRICS_CONN_MAX connections (the next ones get 503 and are closed at accept),
 * APX_METRICS_REQUEST_MAX bytes of request (431 beyond), APX_METRICS_TIMEOUT_NS for the whole
 * life of a connection (a timerfd armed at the earliest deadline closes late ones), and the
 * answer built into its slot's buffer, grown to at most APX_METRICS_RESPONSE_MAX (cut at a
 * line beyond: nvperfd_metrics_truncated says so) and kept for the slot's next connection, then
 * written as the socket takes it (EPOLLOUT). Non-logging: counters in d->st; main.c logs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <apx/version.h>

#include "daemon/daemon.h"
#include "daemon/metrics_http.h"

#include "base/banned.h"

#define NS 1000000000ull
#define HDR_ROOM 256			/* bytes before the body: status line and headers */
#define TAIL_ROOM 256			/* bytes kept after the body: the truncation gauge */
#define OUT_FIRST (64u << 10)		/* first buffer of a slot */
#define OUT_KEEP (1u << 20)		/* a larger buffer is freed when its connection ends */
#define ACCEPT_BURST 64			/* connections accepted per listener event */
#define CONN_SNDBUF (64 << 10)		/* kernel send buffer per connection (the kernel doubles
					 * it): what a client that does not read can hold there */
#define PAUSE_NS NS			/* listener off this long after accept failed (EMFILE) */
#define USERS_CACHE 64			/* uid -> name, emptied every USERS_TTL_NS */
#define USERS_TTL_NS (60 * NS)

enum conn_state { CONN_FREE = 0, CONN_READ, CONN_WRITE };

struct conn {
	int fd;
	int state;			/* enum conn_state */
	uint32_t gen;			/* in the epoll tag: bumped at each accept */
	uint8_t slow;			/* needed EPOLLOUT (counted once) */
	uint64_t deadline_ns;
	char *out;			/* HDR_ROOM, then the body; kept for the slot's next use */
	size_t outcap, outoff, outlen;
	size_t inlen;
	char in[APX_METRICS_REQUEST_MAX + 1];
};

struct user_name {
	uid_t uid;
	char name[64];
};

struct apx_metrics {
	int lfd, tfd;
	int paused;			/* accept failed: listener off until resume_ns */
	uint64_t resume_ns;
	uint64_t timer_at;		/* the timerfd is armed for this; 0 = disarmed */
	size_t nconns;
	char addr[80];
	struct user_name users[USERS_CACHE];
	size_t nusers;
	uint64_t users_ns;		/* when the cache was last emptied */
	struct conn conns[APX_METRICS_CONN_MAX];
};

/* ---- the listener --------------------------------------------------------------------------- */

static void format_addr(const struct sockaddr_storage *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		(void)inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, cap, "[%s]:%u", host, (unsigned)ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		(void)inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, cap, "%s:%u", host, (unsigned)ntohs(s4->sin_port));
	}
}

static int ep_add(struct apx_daemon *d, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int apx_metrics_open(struct apx_daemon *d, const char *addr, struct apx_metrics **ret)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	struct apx_metrics *m;
	uint32_t gen0 = (uint32_t)apx_now_ns();	/* tags of a previous listener never match */
	int one = 1, r;

	if (apx_conf_listen_addr(addr, &sa, &sl) < 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < APX_METRICS_CONN_MAX; i++) {
		m->conns[i].fd = -1;
		m->conns[i].gen = gen0;
	}
	m->tfd = -1;
	m->lfd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto fail;
	/* a restart must not wait for the previous run's connections in TIME_WAIT */
	(void)setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->lfd, (struct sockaddr *)&sa, sl) < 0 || listen(m->lfd, 64) < 0)
		goto fail;
	sl = sizeof(sa);
	if (getsockname(m->lfd, (struct sockaddr *)&sa, &sl) < 0)
		goto fail;
	format_addr(&sa, m->addr, sizeof(m->addr));
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->tfd < 0)
		goto fail;
	if ((r = ep_add(d, m->lfd, EPOLLIN, APX_EP_METRICS)) < 0 ||
	    (r = ep_add(d, m->tfd, EPOLLIN, APX_EP_METRICS_TIMER)) < 0) {
		errno = -r;
		goto fail;
	}
	*ret = m;
	return 0;
fail:
	r = -errno;
	if (m->tfd >= 0)
		close(m->tfd);	/* closing also takes them out of the epoll set */
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
	return r;
}

const char *apx_metrics_addr(const struct apx_metrics *m)
{
	return m ? m->addr : "";
}

static void timer_arm(struct apx_metrics *m, uint64_t at_ns)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(at_ns / NS);
	its.it_value.tv_nsec = (long)(at_ns % NS);
	(void)timerfd_settime(m->tfd, TFD_TIMER_ABSTIME, &its, NULL);	/* 0 disarms */
	m->timer_at = at_ns;
}

/* Read what the client sent beyond its request, so that close() does not answer it with a
 * reset that could make the client drop the response. Bounded. */
static void drain_input(int fd)
{
	char scratch[2048];

	for (int i = 0; i < 8; i++)
		if (recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) <= 0)
			break;
}

static void conn_close(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->state = CONN_FREE;
	m->nconns--;
	if (c->outcap > OUT_KEEP) {
		free(c->out);
		c->out = NULL;
		c->outcap = 0;
	}
}

void apx_metrics_close(struct apx_daemon *d, struct apx_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < APX_METRICS_CONN_MAX; i++) {
		if (m->conns[i].state != CONN_FREE)
			conn_close(d, m, &m->conns[i]);
		free(m->conns[i].out);
	}
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, m->lfd, NULL);
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, m->tfd, NULL);
	close(m->lfd);
	close(m->tfd);
	free(m);
}

/* ---- the answer: a bounded buffer, lines that fit or are left out whole ------------------- */

struct out {
	struct conn *c;
	size_t len;			/* bytes of c->out in use (HDR_ROOM + body so far) */
	int full;			/* APX_METRICS_RESPONSE_MAX reached: later lines left out */
	int tail;			/* writing into TAIL_ROOM */
	const char *fam, *fam_type, *fam_help;	/* current family */
	int fam_said;			/* its # HELP and # TYPE lines are out */
};

static int out_grow(struct conn *c)
{
	size_t nc = c->outcap ? c->outcap * 2 : OUT_FIRST;
	char *nb;

	if (c->outcap >= APX_METRICS_RESPONSE_MAX)
		return -ENOSPC;
	if (nc > APX_METRICS_RESPONSE_MAX)
		nc = APX_METRICS_RESPONSE_MAX;
	nb = realloc(c->out, nc);
	if (!nb)
		return -ENOMEM;
	c->out = nb;
	c->outcap = nc;
	return 0;
}

static void out_add(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	for (;;) {
		size_t room = o->c->outcap - o->len - (o->tail ? 0 : TAIL_ROOM);

		va_start(ap, fmt);
		n = vsnprintf(o->c->out + o->len, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		if (o->tail || out_grow(o->c) < 0) {
			o->full = 1;	/* the line is left out whole: the answer ends at a line */
			return;
		}
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	o->fam = name;
	o->fam_type = type;
	o->fam_help = help;
	o->fam_said = 0;
}

/* One sample of the current family; # HELP and # TYPE go before its first sample only, so a
 * family without any value (no GPU, no uprobes) is not in the answer at all. */
static void put_s(struct out *o, const char *labels, const char *value)
{
	if (!o->fam_said) {
		out_add(o, "# HELP %s %s\n# TYPE %s %s\n", o->fam, o->fam_help, o->fam, o->fam_type);
		o->fam_said = 1;
	}
	if (labels && labels[0])
		out_add(o, "%s{%s} %s\n", o->fam, labels, value);
	else
		out_add(o, "%s %s\n", o->fam, value);
}

static void put_u(struct out *o, const char *labels, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	put_s(o, labels, num);
}

static void put_f(struct out *o, const char *labels, double v)
{
	char num[32];

	if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
		snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)v);	/* whole: every digit */
	else
		snprintf(num, sizeof(num), "%.15g", v);
	put_s(o, labels, num);
}

/* A label value as the exposition format wants it: backslash, double quote and newline
 * escaped (\\ \" \n); any other byte outside 0x20..0x7e written as the four characters \xNN
 * (their backslash escaped too), so the answer stays ASCII whatever a process calls itself.
 * Stops before an escape that does not fit; always NUL-terminated. */
static size_t label_esc(char *out, size_t cap, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (size_t i = 0; i < len && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		char e[6];
		size_t el = 0;

		if (ch == '\\' || ch == '"') {
			e[el++] = '\\';
			e[el++] = (char)ch;
		} else if (ch == '\n') {
			e[el++] = '\\';
			e[el++] = 'n';
		} else if (ch < 0x20 || ch > 0x7e) {
			e[el++] = '\\';
			e[el++] = '\\';
			e[el++] = 'x';
			e[el++] = hex[ch >> 4];
			e[el++] = hex[ch & 15];
		} else {
			e[el++] = (char)ch;
		}
		if (n + el >= cap)
			break;
		memcpy(out + n, e, el);
		n += el;
	}
	if (cap)
		out[n] = 0;
	return n;
}

/* ---- what is exported ------------------------------------------------------------------- */

static const struct {
	const char *name, *help;
	size_t off;			/* in struct apx_stats */
} daemon_counters[] = {
	{ "nvperfd_process_events_total", "Process events read from the netlink connector "
	  "(fork, exec, comm, exit).", offsetof(struct apx_stats, events) },
	{ "nvperfd_process_event_overruns_total", "Overruns of the netlink connector's buffer "
	  "(events lost; each is followed by a /proc rescan).", offsetof(struct apx_stats, enobufs) },
	{ "nvperfd_rescans_total", "Scans of /proc for Python processes (start, after overruns).",
	  offsetof(struct apx_stats, rescans) },
	{ "nvperfd_processes_tracked_total", "Python processes tracked since nvperfd started.",
	  offsetof(struct apx_stats, tracked_total) },
	{ "nvperfd_untracked_cap_total", "Python processes left untracked because max_tracked "
	  "processes were tracked already.", offsetof(struct apx_stats, untracked_cap) },
	{ "nvperfd_samples_total", "/proc samples taken of tracked processes.",
	  offsetof(struct apx_stats, samples) },
	{ "nvperfd_summaries_total", "Summary files written.", offsetof(struct apx_stats, summaries) },
	{ "nvperfd_summary_errors_total", "Summary files that could not be written.",
	  offsetof(struct apx_stats, summary_errors) },
	{ "nvperfd_summaries_pruned_total", "Old summary files removed (max_summaries, "
	  "max_state_bytes).", offsetof(struct apx_stats, summaries_pruned) },
	{ "nvperfd_notices_total", "Notices of crossed thresholds (log, terminal).",
	  offsetof(struct apx_stats, notices) },
	{ "nvperfd_config_reloads_total", "Machine config files loaded after start.",
	  offsetof(struct apx_stats, config_reloads) },
	{ "nvperfd_config_errors_total", "Machine config files rejected after start (the previous "
	  "config stayed).", offsetof(struct apx_stats, config_errors) },
	{ "nvperfd_ctl_clients_accepted_total", "Control-socket clients accepted.",
	  offsetof(struct apx_stats, clients_total) },
	{ "nvperfd_ctl_clients_refused_total", "Control-socket clients refused (max_clients).",
	  offsetof(struct apx_stats, clients_refused) },
	{ "nvperfd_metrics_scrapes_total", "GET /metrics answered 200 (this one included).",
	  offsetof(struct apx_stats, metrics_scrapes) },
	{ "nvperfd_metrics_bad_requests_total", "Metrics requests answered 400, 404, 405 or 431.",
	  offsetof(struct apx_stats, metrics_bad) },
	{ "nvperfd_metrics_refused_total", "Metrics connections refused with 503 (16 open "
	  "already).", offsetof(struct apx_stats, metrics_refused) },
	{ "nvperfd_metrics_timeouts_total", "Metrics connections closed 5 s after they were "
	  "accepted, unfinished.", offsetof(struct apx_stats, metrics_timeouts) },
	{ "nvperfd_metrics_slow_writes_total", "Metrics answers that did not fit in the socket at "
	  "once (written over several EPOLLOUT events).", offsetof(struct apx_stats, metrics_slow) },
};

static void render_daemon(struct apx_daemon *d, struct apx_metrics *m, struct out *o)
{
	struct rusage ru;
	struct apx_pstat ps;

	family(o, "nvperfd_info", "gauge", "Always 1; the version label is nvperfd's version.");
	put_u(o, "version=\"" APX_VERSION "\"", 1);
	family(o, "nvperfd_uptime_seconds", "gauge", "Seconds since nvperfd started.");
	put_f(o, NULL, (double)(apx_now_ns() - d->start_ns) / 1e9);
	family(o, "nvperfd_tracked_processes", "gauge", "Python processes tracked now.");
	put_u(o, NULL, d->nprocs);
	for (size_t i = 0; i < sizeof(daemon_counters) / sizeof(daemon_counters[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)&d->st + daemon_counters[i].off, sizeof(v));
		family(o, daemon_counters[i].name, "counter", daemon_counters[i].help);
		put_u(o, NULL, v);
	}
	family(o, "nvperfd_findings_total", "counter", "Findings (crossed thresholds) of processes "
	       "that ended; a process's findings are made when it ends.");
	put_u(o, NULL, d->nfindings);
	family(o, "nvperfd_ctl_clients", "gauge", "Control-socket clients connected now.");
	put_u(o, NULL, d->nclients);
	family(o, "nvperfd_metrics_connections", "gauge", "Metrics connections open now (this "
	       "one included).");
	put_u(o, NULL, m->nconns);
	family(o, "nvperfd_nvml_available", "gauge", "1 when NVML is in use, 0 when not (off in "
	       "the config, no libnvidia-ml, no GPU).");
	put_u(o, NULL, d->nvml != NULL);
	family(o, "nvperfd_uprobes_available", "gauge", "1 when the eBPF uprobes are in use, 0 "
	       "when not (off in the config, no BPF).");
	put_u(o, NULL, d->up != NULL);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		family(o, "nvperfd_cpu_seconds_total", "counter", "CPU time used by nvperfd "
		       "(user + system).");
		put_f(o, NULL, (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	if (apx_procfs_stat(d->self, 0, &ps, 0) == 0) {
		family(o, "nvperfd_resident_memory_bytes", "gauge", "Resident set size of nvperfd.");
		put_u(o, NULL, ps.rss_bytes);
	}
}

enum dev_metric {
	DM_UTIL, DM_MEM_UTIL, DM_MEM_USED, DM_MEM_TOTAL, DM_PCIE_TX, DM_PCIE_RX, DM_SM_CLOCK,
	DM_MEM_CLOCK, DM_POWER, DM__COUNT
};

static const struct { const char *name, *help; } dev_metrics[DM__COUNT] = {
	[DM_UTIL] = { "nvperfd_gpu_utilization_percent", "Percent of the last sample period in "
		      "which a kernel ran on the GPU (NVML)." },
	[DM_MEM_UTIL] = { "nvperfd_gpu_memory_utilization_percent", "Percent of the last sample "
			  "period in which device memory was read or written (NVML)." },
	[DM_MEM_USED] = { "nvperfd_gpu_memory_used_bytes", "Device memory in use (NVML)." },
	[DM_MEM_TOTAL] = { "nvperfd_gpu_memory_total_bytes", "Device memory in all (NVML)." },
	[DM_PCIE_TX] = { "nvperfd_gpu_pcie_tx_bytes_per_second", "PCIe bytes per second sent by "
			 "the GPU (GPM when supported, else NVML's 20 ms counter)." },
	[DM_PCIE_RX] = { "nvperfd_gpu_pcie_rx_bytes_per_second", "PCIe bytes per second received "
			 "by the GPU (GPM when supported, else NVML's 20 ms counter)." },
	[DM_SM_CLOCK] = { "nvperfd_gpu_sm_clock_hertz", "SM clock (NVML)." },
	[DM_MEM_CLOCK] = { "nvperfd_gpu_memory_clock_hertz", "Memory clock (NVML)." },
	[DM_POWER] = { "nvperfd_gpu_power_watts", "Power draw (NVML)." },
};

static int dev_value(const struct apx_gpu_dev *g, enum dev_metric w, double *v)
{
	switch (w) {
	case DM_UTIL:
		*v = g->util_gpu_pct;
		return !!(g->valid & APX_GPU_UTIL);
	case DM_MEM_UTIL:
		*v = g->util_mem_pct;
		return !!(g->valid & APX_GPU_UTIL);
	case DM_MEM_USED:
		*v = (double)g->mem_used_bytes;
		return !!(g->valid & APX_GPU_MEM);
	case DM_MEM_TOTAL:
		*v = (double)g->mem_total_bytes;
		return !!(g->valid & APX_GPU_MEM);
	case DM_PCIE_TX:
		*v = (double)g->pcie_tx_kbps * 1024.0;
		return !!(g->valid & APX_GPU_PCIE);
	case DM_PCIE_RX:
		*v = (double)g->pcie_rx_kbps * 1024.0;
		return !!(g->valid & APX_GPU_PCIE);
	case DM_SM_CLOCK:
		*v = (double)g->sm_clock_mhz * 1e6;
		return !!(g->valid & APX_GPU_CLOCKS);
	case DM_MEM_CLOCK:
		*v = (double)g->mem_clock_mhz * 1e6;
		return !!(g->valid & APX_GPU_CLOCKS);
	case DM_POWER:
		*v = (double)g->power_mw / 1000.0;
		return !!(g->valid & APX_GPU_POWER);
	default:
		return 0;
	}
}

/* GPM metrics (nvml.c's names) and how they are exported; the PCIe pair feeds
 * nvperfd_gpu_pcie_*_bytes_per_second above and is not repeated. */
static const struct {
	const char *gpm, *name, *help;
	double scale;
} gpm_export[] = {
	{ "graphics_util", "nvperfd_gpu_gpm_graphics_util_percent", "GPM: graphics or compute "
	  "engine active, percent of the time.", 1 },
	{ "sm_util", "nvperfd_gpu_gpm_sm_util_percent", "GPM: SM utilization, percent.", 1 },
	{ "sm_occupancy", "nvperfd_gpu_gpm_sm_occupancy_percent", "GPM: SM occupancy (warps "
	  "resident of the maximum), percent.", 1 },
	{ "tensor_util", "nvperfd_gpu_gpm_tensor_util_percent", "GPM: tensor core pipes active, "
	  "percent.", 1 },
	{ "dram_bw_util", "nvperfd_gpu_gpm_dram_bw_util_percent", "GPM: DRAM bandwidth used, "
	  "percent of the peak.", 1 },
	{ "fp64_util", "nvperfd_gpu_gpm_fp64_util_percent", "GPM: FP64 pipe active, percent.", 1 },
	{ "fp32_util", "nvperfd_gpu_gpm_fp32_util_percent", "GPM: FP32 pipe active, percent.", 1 },
	{ "fp16_util", "nvperfd_gpu_gpm_fp16_util_percent", "GPM: FP16 pipe active, percent.", 1 },
	{ "nvlink_rx_mib_s", "nvperfd_gpu_nvlink_rx_bytes_per_second", "GPM: NVLink bytes per "
	  "second received.", 1048576.0 },
	{ "nvlink_tx_mib_s", "nvperfd_gpu_nvlink_tx_bytes_per_second", "GPM: NVLink bytes per "
	  "second sent.", 1048576.0 },
};

static void dev_labels(const struct apx_gpu_dev *g, size_t i, char *buf, size_t cap)
{
	char uuid[sizeof(g->uuid) * 5];

	label_esc(uuid, sizeof(uuid), g->uuid, sizeof(g->uuid));
	if (uuid[0])
		snprintf(buf, cap, "gpu=\"%zu\",uuid=\"%s\"", i, uuid);
	else
		snprintf(buf, cap, "gpu=\"%zu\"", i);
}

static void render_gpus(struct apx_daemon *d, struct out *o)
{
	const struct apx_gpu_dev *g;
	size_t n = apx_nvml_devices(d->nvml, &g);
	char lbl[1024], name[sizeof(g->name) * 5], all[sizeof(lbl) + sizeof(name) + 16];
	double v;

	if (!n)
		return;
	family(o, "nvperfd_gpu_info", "gauge", "Always 1, one per GPU that NVML shows; the name "
	       "label is the model.");
	for (size_t i = 0; i < n; i++) {
		dev_labels(&g[i], i, lbl, sizeof(lbl));
		label_esc(name, sizeof(name), g[i].name, sizeof(g[i].name));
		snprintf(all, sizeof(all), "%s,name=\"%s\"", lbl, name);
		put_u(o, all, 1);
	}
	for (int w = 0; w < DM__COUNT; w++) {
		family(o, dev_metrics[w].name, "gauge", dev_metrics[w].help);
		for (size_t i = 0; i < n; i++) {
			if (!dev_value(&g[i], (enum dev_metric)w, &v))
				continue;
			dev_labels(&g[i], i, lbl, sizeof(lbl));
			put_f(o, lbl, v);
		}
	}
	for (size_t e = 0; e < sizeof(gpm_export) / sizeof(gpm_export[0]); e++) {
		size_t k;

		for (k = 0; k < APX_GPM_METRICS; k++)
			if (!strcmp(apx_gpm_metric_name(k), gpm_export[e].gpm))
				break;
		if (k == APX_GPM_METRICS)
			continue;
		family(o, gpm_export[e].name, "gauge", gpm_export[e].help);
		for (size_t i = 0; i < n; i++) {
			if (!(g[i].valid & APX_GPU_GPM) || !(g[i].gpm_valid & (1u << k)))
				continue;
			dev_labels(&g[i], i, lbl, sizeof(lbl));
			put_f(o, lbl, g[i].gpm[k] * gpm_export[e].scale);
		}
	}
}

/* The user name of uid (its number when it has none), from a small cache: a scrape does not
 * ask NSS again for every process of the same user. */
static const char *user_of(struct apx_metrics *m, uid_t uid, uint64_t now)
{
	struct passwd pw, *res = NULL;
	char tmp[2048];
	struct user_name *u;

	if (now - m->users_ns > USERS_TTL_NS) {
		m->nusers = 0;
		m->users_ns = now;
	}
	for (size_t i = 0; i < m->nusers; i++)
		if (m->users[i].uid == uid)
			return m->users[i].name;
	if (m->nusers == USERS_CACHE)
		m->nusers = 0;
	u = &m->users[m->nusers++];
	u->uid = uid;
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(u->name, sizeof(u->name), "%s", res->pw_name);
	else
		snprintf(u->name, sizeof(u->name), "%u", (unsigned)uid);
	return u->name;
}

static void proc_labels(struct apx_metrics *m, const struct apx_proc *p, uint64_t now,
			char *buf, size_t cap)
{
	const char *user = user_of(m, p->uid, now);
	char euser[sizeof(m->users[0].name) * 5], ecomm[APX_COMM_MAX * 5];

	label_esc(euser, sizeof(euser), user, strlen(user));
	label_esc(ecomm, sizeof(ecomm), p->comm, sizeof(p->comm));
	snprintf(buf, cap, "pid=\"%d\",user=\"%s\",comm=\"%s\"", (int)p->pid, euser, ecomm);
}

enum proc_metric {
	PM_CPU_PCT, PM_CPU_SECONDS, PM_RSS, PM_RSS_PEAK, PM_THREADS, PM_START, PM_CUDA,
	PM_GPU_MEM, PM_GPU_MEM_PEAK, PM_GPU_SM, PM_GPU_SM_MEAN, PM_GPU_IDLE, PM_L2_LIMIT,
	PM_L2_WINDOWS, PM_H2D_PAGEABLE_RATE, PM__COUNT
};

static const struct { const char *name, *type, *help; } proc_metrics[PM__COUNT] = {
	[PM_CPU_PCT] = { "nvperfd_process_cpu_percent", "gauge", "CPU use over the last sample "
			 "period, percent of one core (above 100 with several busy threads)." },
	[PM_CPU_SECONDS] = { "nvperfd_process_cpu_seconds_total", "counter", "CPU time used "
			     "(user + system) at the last sample." },
	[PM_RSS] = { "nvperfd_process_resident_memory_bytes", "gauge", "Resident set size at the "
		     "last sample." },
	[PM_RSS_PEAK] = { "nvperfd_process_resident_memory_peak_bytes", "gauge", "Highest "
			  "resident set size (VmHWM)." },
	[PM_THREADS] = { "nvperfd_process_threads", "gauge", "Threads at the last sample." },
	[PM_START] = { "nvperfd_process_start_time_seconds", "gauge", "Start of the process, "
		       "seconds since the Unix epoch." },
	[PM_CUDA] = { "nvperfd_process_cuda", "gauge", "1 once the process was seen using CUDA "
		      "(libcuda mapped or /dev/nvidia* open), 0 before." },
	[PM_GPU_MEM] = { "nvperfd_process_gpu_memory_bytes", "gauge", "Device memory of the "
			 "process at the last NVML sample, summed over the GPUs it is on." },
	[PM_GPU_MEM_PEAK] = { "nvperfd_process_gpu_memory_peak_bytes", "gauge", "Highest device "
			      "memory NVML reported for the process." },
	[PM_GPU_SM] = { "nvperfd_process_gpu_sm_util_percent", "gauge", "SM utilization of the "
			"process at the last NVML sample, the highest over the GPUs it is on." },
	[PM_GPU_SM_MEAN] = { "nvperfd_process_gpu_sm_util_mean_percent", "gauge", "Mean of the "
			     "process's SM utilization samples from NVML, percent." },
	[PM_GPU_IDLE] = { "nvperfd_process_gpu_idle_percent", "gauge", "Share of the NVML samples "
			  "while the process held a GPU where that GPU's utilization was 0, over "
			  "its life so far, percent (the gpu-idle finding's quantity)." },
	[PM_L2_LIMIT] = { "nvperfd_process_l2_persisting_limit_bytes", "gauge", "Persisting-L2 "
			  "limit the process set last (cuCtxSetLimit), 0 when none; from the "
			  "uprobes." },
	[PM_L2_WINDOWS] = { "nvperfd_process_l2_access_policy_windows_total", "counter", "L2 "
			    "access-policy windows the process set on streams "
			    "(cuStreamSetAttribute); from the uprobes." },
	[PM_H2D_PAGEABLE_RATE] = { "nvperfd_process_h2d_pageable_bytes_per_second", "gauge",
				   "Bytes of pageable host-to-device copies per second of time in "
				   "their calls, over its life so far (uprobe_copy_time = yes)." },
};

static int proc_value(const struct apx_proc *p, enum proc_metric w, uint64_t wall_off_ns,
		      double *v)
{
	int sampled = p->last.ts_ns != 0;	/* /proc figures exist from the first sample */

	switch (w) {
	case PM_CPU_PCT:
		*v = (double)p->cpu_pct_x10 / 10.0;
		return sampled;
	case PM_CPU_SECONDS:
		*v = (double)(p->last.utime_ns + p->last.stime_ns) / 1e9;
		return sampled;
	case PM_RSS:
		*v = (double)p->last.rss_bytes;
		return sampled;
	case PM_RSS_PEAK:
		*v = (double)p->peak_rss;
		return sampled;
	case PM_THREADS:
		*v = p->last.threads;
		return sampled;
	case PM_START:
		*v = (double)(p->start_ns + wall_off_ns) / 1e9;
		return 1;
	case PM_CUDA:
		*v = p->cuda;
		return 1;
	case PM_GPU_MEM:
		*v = (double)p->gpu.mem_now_bytes;
		return !!(p->gpu.now_valid & APX_GPU_MEM);
	case PM_GPU_SM:
		*v = p->gpu.sm_now_pct;
		return !!(p->gpu.now_valid & APX_GPU_UTIL);
	case PM_GPU_MEM_PEAK:
		*v = (double)p->gpu.mem_peak_bytes;
		return !!(p->gpu.valid & APX_GPU_MEM);
	case PM_GPU_SM_MEAN:
		if (!(p->gpu.valid & APX_GPU_UTIL) || !p->gpu.util_samples)
			return 0;
		*v = (double)p->gpu.sm_util_sum / (double)p->gpu.util_samples;
		return 1;
	case PM_GPU_IDLE:	/* not known without a sample of its GPU's utilization */
		if (!p->gpu.gpu_util_samples)
			return 0;
		*v = (double)p->gpu.gpu_idle_samples * 100.0 / (double)p->gpu.gpu_util_samples;
		return 1;
	case PM_L2_LIMIT:
		*v = p->up ? (double)p->up->l2_limit_bytes : 0;
		return p->up != NULL;
	case PM_L2_WINDOWS:
		*v = p->up ? (double)p->up->apw_windows : 0;
		return p->up != NULL;
	case PM_H2D_PAGEABLE_RATE:	/* copies timed, and some made */
		if (!p->up || !p->up->copy_time || !p->up->h2d_ns[0])
			return 0;
		*v = (double)p->up->h2d_bytes[0] * 1e9 / (double)p->up->h2d_ns[0];
		return 1;
	default:
		return 0;
	}
}

static void render_procs(struct apx_daemon *d, struct apx_metrics *m, struct out *o)
{
	static const char *const dir[2] = { "h2d", "d2h" }, *const mem[2] = { "pageable", "pinned" };
	uint64_t now = apx_now_ns(), wall_off = apx_wall_ns() - now;
	char lbl[640], all[sizeof(lbl) + 48];
	double v;

	for (int w = 0; w < PM__COUNT; w++) {
		family(o, proc_metrics[w].name, proc_metrics[w].type, proc_metrics[w].help);
		for (const struct apx_proc *p = d->procs; p && !o->full; p = p->next) {
			if (!proc_value(p, (enum proc_metric)w, wall_off, &v))
				continue;
			proc_labels(m, p, now, lbl, sizeof(lbl));
			put_f(o, lbl, v);
		}
	}
	/* from the eBPF uprobes on its libcuda: only processes they were attached to */
	for (int k = 0; k < 2; k++) {
		family(o, k ? "nvperfd_process_copy_calls_total" : "nvperfd_process_copy_bytes_total",
		       "counter", k ? "cudaMemcpy-family calls between host and device seen by "
		       "the uprobes, by direction and host memory kind." :
		       "Bytes copied between host and device seen by the uprobes, by direction "
		       "and host memory kind (pageable or pinned).");
		for (const struct apx_proc *p = d->procs; p && !o->full; p = p->next) {
			const struct apx_up_proc_state *u = p->up;

			if (!u)
				continue;
			proc_labels(m, p, now, lbl, sizeof(lbl));
			for (int di = 0; di < 2; di++) {
				for (int mi = 0; mi < 2; mi++) {
					const uint64_t *src = k ? (di ? u->d2h_calls : u->h2d_calls) :
								  (di ? u->d2h_bytes : u->h2d_bytes);

					snprintf(all, sizeof(all), "%s,direction=\"%s\",memory=\"%s\"",
						 lbl, dir[di], mem[mi]);
					put_u(o, all, src[mi]);
				}
			}
		}
	}
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

/* Put the status line and headers in front of the body (in HDR_ROOM) and start writing. */
static void answer(struct out *o, int code, const char *reason, const char *ctype,
		   const char *extra, int head)
{
	struct conn *c = o->c;
	char h[HDR_ROOM];
	int n;

	n = snprintf(h, sizeof(h), "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "%sConnection: close\r\n\r\n", code, reason, ctype, o->len - HDR_ROOM,
		     extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(h))
		n = 0;	/* cannot happen: the fixed strings are short */
	memcpy(c->out + HDR_ROOM - n, h, (size_t)n);
	c->outoff = HDR_ROOM - (size_t)n;
	c->outlen = head ? HDR_ROOM : o->len;
	c->state = CONN_WRITE;
}

static void answer_error(struct apx_daemon *d, struct out *o, int code, const char *reason,
			 const char *extra, const char *msg, int head)
{
	d->st.metrics_bad++;
	out_add(o, "%s\n", msg);
	answer(o, code, reason, "text/plain; charset=utf-8", extra, head);
}

static void answer_metrics(struct apx_daemon *d, struct apx_metrics *m, struct out *o, int head)
{
	int truncated;

	d->st.metrics_scrapes++;
	render_daemon(d, m, o);
	render_gpus(d, o);
	render_procs(d, m, o);
	truncated = o->full;
	o->full = 0;
	o->tail = 1;		/* TAIL_ROOM was kept for this */
	family(o, "nvperfd_metrics_truncated", "gauge", "1 when this answer was cut at "
	       "4 MiB: some series are missing.");
	put_u(o, NULL, (uint64_t)truncated);
	answer(o, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", NULL, head);
}

static int is_token(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *s))
			return 0;
	return 1;
}

/* The request (line and headers) is in c->in: answer it. */
static void handle(struct apx_daemon *d, struct apx_metrics *m, struct conn *c, int complete)
{
	struct out o = { .c = c, .len = HDR_ROOM };
	char *line = c->in, *eol, *target, *version, *sp, *q;
	int head;

	if (!c->out && out_grow(c) < 0) {
		conn_close(d, m, c);
		return;
	}
	if (!complete) {
		answer_error(d, &o, 431, "Request Header Fields Too Large", NULL,
			     "request larger than 4096 bytes", 0);
		return;
	}
	if (memchr(c->in, 0, c->inlen)) {
		answer_error(d, &o, 400, "Bad Request", NULL, "NUL byte in the request", 0);
		return;
	}
	eol = strchr(line, '\n');
	*eol = 0;
	if (eol > line && eol[-1] == '\r')
		eol[-1] = 0;
	/* METHOD SP TARGET SP HTTP/1.x */
	sp = strchr(line, ' ');
	target = sp ? sp + 1 : NULL;
	if (sp)
		*sp = 0;
	sp = target ? strchr(target, ' ') : NULL;
	version = sp ? sp + 1 : NULL;
	if (sp)
		*sp = 0;
	if (!version || !is_token(line) || target[0] != '/' || strncmp(version, "HTTP/1.", 7) ||
	    version[7] < '0' || version[7] > '9' || version[8]) {
		answer_error(d, &o, 400, "Bad Request", NULL,
			     "expected a request line \"GET /metrics HTTP/1.1\"", 0);
		return;
	}
	head = !strcmp(line, "HEAD");
	if (strcmp(line, "GET") && !head) {
		answer_error(d, &o, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
			     "only GET and HEAD are served", 0);
		return;
	}
	q = strchr(target, '?');
	if (q)
		*q = 0;		/* parameters are ignored */
	if (strcmp(target, "/metrics")) {
		answer_error(d, &o, 404, "Not Found", NULL, "not found; the metrics are at /metrics",
			     head);
		return;
	}
	answer_metrics(d, m, &o, head);
}

static int head_complete(const struct conn *c)
{
	return memmem(c->in, c->inlen, "\r\n\r\n", 4) || memmem(c->in, c->inlen, "\n\n", 2);
}

static uint64_t conn_tag(const struct apx_metrics *m, const struct conn *c)
{
	return APX_EP_METRICS_CONN | ((uint64_t)c->gen << 8) | (uint64_t)(c - m->conns);
}

/* Write what the socket takes; done: close. */
static void conn_write(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->slow) {	/* the rest at the next EPOLLOUT events */
				struct epoll_event ev = { .events = EPOLLOUT,
							  .data.u64 = conn_tag(m, c) };

				c->slow = 1;
				d->st.metrics_slow++;
				if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
					conn_close(d, m, c);
			}
			return;
		}
		if (n <= 0) {
			conn_close(d, m, c);
			return;
		}
		c->outoff += (size_t)n;
	}
	drain_input(c->fd);
	conn_close(d, m, c);
}

static void conn_read(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	int complete = 0;

	while (c->inlen < APX_METRICS_REQUEST_MAX) {
		ssize_t n = recv(c->fd, c->in + c->inlen, APX_METRICS_REQUEST_MAX - c->inlen,
				 MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {	/* gone before a whole request */
			conn_close(d, m, c);
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = 0;
		complete = head_complete(c);
		if (complete)
			break;
	}
	if (!complete && c->inlen < APX_METRICS_REQUEST_MAX)
		return;		/* wait for the rest */
	handle(d, m, c, complete);
	if (c->state == CONN_WRITE)
		conn_write(d, m, c);
}

static void on_accept(struct apx_daemon *d, struct apx_metrics *m)
{
	int sndbuf = CONN_SNDBUF;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c = NULL;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* EMFILE, ENOBUFS...: the pending connection would wake the loop
				 * at once again; stop listening for a while instead */
				struct epoll_event ev = { .events = 0, .data.u64 = APX_EP_METRICS };

				(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, m->lfd, &ev);
				m->paused = 1;
				m->resume_ns = apx_now_ns() + PAUSE_NS;
				if (!m->timer_at || m->timer_at > m->resume_ns)
					timer_arm(m, m->resume_ns);
			}
			return;
		}
		if (m->nconns >= APX_METRICS_CONN_MAX) {
			static const char busy[] = "HTTP/1.0 503 Service Unavailable\r\n"
				"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n"
				"Connection: close\r\n\r\ntoo many connections\n";

			d->st.metrics_refused++;
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		for (size_t k = 0; k < APX_METRICS_CONN_MAX && !c; k++)
			if (m->conns[k].state == CONN_FREE)
				c = &m->conns[k];
		c->fd = fd;
		c->state = CONN_READ;
		c->gen++;
		c->slow = 0;
		c->inlen = c->outoff = c->outlen = 0;
		c->deadline_ns = apx_now_ns() + APX_METRICS_TIMEOUT_NS;
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		if (ep_add(d, fd, EPOLLIN, conn_tag(m, c)) < 0) {
			close(fd);
			c->fd = -1;
			c->state = CONN_FREE;
			continue;
		}
		m->nconns++;
		if (!m->timer_at)	/* else armed for an earlier deadline, re-armed then */
			timer_arm(m, c->deadline_ns);
	}
}

/* The earliest deadline passed: close the late connections (408 to those still sending a
 * request), listen again after a pause, and re-arm for what comes next. */
static void on_timer(struct apx_daemon *d, struct apx_metrics *m)
{
	static const char late[] = "HTTP/1.0 408 Request Timeout\r\n"
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 17\r\n"
		"Connection: close\r\n\r\nrequest too slow\n";
	uint64_t exp, now = apx_now_ns(), next = 0;

	(void)!read(m->tfd, &exp, sizeof(exp));
	m->timer_at = 0;
	if (m->paused && now >= m->resume_ns) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = APX_EP_METRICS };

		m->paused = 0;
		(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, m->lfd, &ev);
	}
	for (size_t i = 0; i < APX_METRICS_CONN_MAX; i++) {
		struct conn *c = &m->conns[i];

		if (c->state == CONN_FREE)
			continue;
		if (c->deadline_ns <= now) {
			d->st.metrics_timeouts++;
			if (c->state == CONN_READ)
				(void)!send(c->fd, late, sizeof(late) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			conn_close(d, m, c);
			continue;
		}
		if (!next || c->deadline_ns < next)
			next = c->deadline_ns;
	}
	if (m->paused && (!next || m->resume_ns < next))
		next = m->resume_ns;
	if (next)
		timer_arm(m, next);
}

void apx_metrics_event(struct apx_daemon *d, uint64_t tag, uint32_t events)
{
	struct apx_metrics *m = d->metrics;
	struct conn *c;

	(void)events;	/* recv/send say what happened, EPOLLHUP/ERR included */
	if (!m)
		return;
	if (tag == APX_EP_METRICS) {
		on_accept(d, m);
		return;
	}
	if (tag == APX_EP_METRICS_TIMER) {
		on_timer(d, m);
		return;
	}
	if ((tag & 0xff) >= APX_METRICS_CONN_MAX)
		return;
	c = &m->conns[tag & 0xff];
	if (c->state == CONN_FREE || c->gen != (uint32_t)(tag >> 8))
		return;		/* left over from a connection closed earlier in this batch */
	if (c->state == CONN_READ)
		conn_read(d, m, c);
	else
		conn_write(d, m, c);
}
