/*
 * config.c - parser and key table of nvperfd.conf (see config.h, docs/nvperfd.conf.md). Called
 * by the daemon's main loop (load and reload) and by `apx config` (validation, listing). Never
 * logs; never follows a symlink when reading a file.
 */
#include "daemon/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/parse.h"

#include "base/banned.h"

#define NS UINT64_C(1000000000)
#define OFF(f) offsetof(struct apx_conf, f)
#define SZ(f) sizeof(((struct apx_conf *)0)->f)

static const struct apx_conf_key keys[] = {
	{ "state_dir", APX_CT_PATH, APX_CONF_MACHINE, OFF(state_dir), SZ(state_dir), 0, 0,
	  "folder of the per-user summary folders (STATE_DIR/UID/)" },
	{ "log_file", APX_CT_PATH, APX_CONF_MACHINE, OFF(log_file), SZ(log_file), 0, 0,
	  "log file, re-opened on SIGHUP; empty = none" },
	{ "syslog", APX_CT_BOOL, APX_CONF_MACHINE, OFF(syslog), 0, 0, 1,
	  "also log to syslog, facility LOCAL3" },
	{ "log_level", APX_CT_LEVEL, APX_CONF_MACHINE, OFF(log_level), 0, 0, 0,
	  "least important messages logged: error, warning, notice, info or debug" },
	{ "socket", APX_CT_PATH, APX_CONF_MACHINE, OFF(socket_path), SZ(socket_path), 0, 0,
	  "control socket for apx status/top/history (read at start only)" },
	{ "pid_file", APX_CT_PATH, APX_CONF_MACHINE, OFF(pid_file), SZ(pid_file), 0, 0,
	  "pid file, locked while the daemon runs (read at start only)" },
	{ "user_config", APX_CT_PATH, APX_CONF_MACHINE, OFF(user_config), SZ(user_config), 0, 0,
	  "where each user's file is: '~/' = the user's home, '%u' = the uid" },
	{ "sample_period", APX_CT_DURATION, APX_CONF_MACHINE, OFF(sample_period_ns), 0, NS / 20,
	  3600 * NS, "period of the /proc samples of tracked processes" },
	{ "cuda_recheck_max", APX_CT_DURATION, APX_CONF_MACHINE, OFF(cuda_recheck_max_ns), 0,
	  NS / 10, 3600 * NS, "longest wait between two checks of whether a process uses CUDA" },
	{ "summary_min_runtime", APX_CT_DURATION, APX_CONF_MACHINE, OFF(summary_min_runtime_ns), 0,
	  0, 86400 * NS, "processes that ran less than this leave no summary file" },
	{ "max_tracked", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_tracked), 0, 1, 65536,
	  "most processes tracked at once; more are counted and ignored" },
	{ "max_tracked_per_user", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_tracked_per_user), 0, 0,
	  65536, "most processes of one non-root user tracked at once (0 = a quarter of "
	  "max_tracked)" },
	{ "max_clients", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_clients), 0, 1, 1024,
	  "most control-socket clients at once (a quarter of it per user)" },
	{ "max_summaries", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_summaries), 0, 1, 100000,
	  "most summary files per user; the oldest are removed first" },
	{ "max_summary_bytes", APX_CT_SIZE, APX_CONF_MACHINE, OFF(max_summary_bytes), 0, 1ull << 16,
	  1ull << 30, "largest summary file; the time series is cut to fit" },
	{ "max_state_bytes", APX_CT_SIZE, APX_CONF_MACHINE, OFF(max_state_bytes), 0, 1ull << 16,
	  1ull << 40, "most bytes of summaries per user; the oldest are removed first" },
	{ "max_samples", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_samples), 0, 16, 1u << 20,
	  "samples kept per process (80 bytes each); beyond it the series is thinned by half" },
	{ "max_threads", APX_CT_COUNT, APX_CONF_MACHINE, OFF(max_threads), 0, 1, 65536,
	  "threads followed per process" },
	{ "netlink_buffer", APX_CT_SIZE, APX_CONF_MACHINE, OFF(netlink_buffer), 0, 4096,
	  1ull << 30, "receive buffer of the process-events socket (read at start only)" },
	{ "uprobes", APX_CT_BOOL, APX_CONF_MACHINE, OFF(uprobes), 0, 0, 1,
	  "eBPF uprobes on the libcuda of tracked CUDA processes (read at start only)" },
	{ "nvml", APX_CT_BOOL, APX_CONF_MACHINE, OFF(nvml), 0, 0, 1,
	  "GPU metrics through NVML and GPM, if libnvidia-ml is there (read at start only)" },
	{ "metrics_listen", APX_CT_LISTEN, APX_CONF_MACHINE, OFF(metrics_listen), SZ(metrics_listen),
	  0, 0, "TCP address of the Prometheus endpoint (GET /metrics), e.g. 127.0.0.1:9470; "
	  "empty = off" },
	{ "track", APX_CT_BOOL, APX_CONF_USER, OFF(track), 0, 0, 1,
	  "track this user's Python processes at all" },
	{ "metrics", APX_CT_METRICS, APX_CONF_USER, OFF(metrics), 0, 0, 0,
	  "metrics kept in summaries: cpu,csw,rss,threads,state,faults (or all)" },
	{ "notice", APX_CT_NOTICE, APX_CONF_USER, OFF(notice), 0, 0, 0,
	  "where a crossed threshold is told: none, log, or tty (log + the process's terminal)" },
	{ "threshold.min_runtime", APX_CT_DURATION, APX_CONF_USER, OFF(th_min_runtime_ns), 0, 0,
	  86400 * NS, "runs shorter than this never raise a notice" },
	{ "threshold.rss_peak", APX_CT_SIZE, APX_CONF_USER, OFF(th_rss_peak_bytes), 0, 0,
	  1ull << 50, "notice when the peak RSS reaches this (0 = off)" },
	{ "threshold.invol_csw_rate", APX_CT_COUNT, APX_CONF_USER, OFF(th_invol_csw_rate), 0, 0,
	  1ull << 32, "notice when involuntary context switches per second average above this (0 = off)" },
	{ "threshold.cpu_low_pct", APX_CT_PCT, APX_CONF_USER, OFF(th_cpu_low_pct), 0, 0, 100,
	  "notice when the run's average CPU use is below this % of one core (0 = off)" },
	{ "threshold.cpu_high_pct", APX_CT_COUNT, APX_CONF_USER, OFF(th_cpu_high_pct), 0, 0,
	  100000, "notice when the run's average CPU use is above this % (100 = one core; 0 = off)" },
	{ "uprobe_max_rate", APX_CT_COUNT, APX_CONF_USER, OFF(uprobe_max_rate), 0, 1, 1000000,
	  "probed libcuda calls per second of a process above which its probes are removed" },
	{ "uprobe_copy_time", APX_CT_BOOL, APX_CONF_USER, OFF(uprobe_copy_time), 0, 0, 1,
	  "time the copies (a return probe each: about twice the cost) for their achieved rate" },
	{ "threshold.pageable_copy_bytes", APX_CT_SIZE, APX_CONF_USER, OFF(th_pageable_copy_bytes),
	  0, 0, 1ull << 50, "notice when host<->device copies from pageable memory reach this (0 = off)" },
	{ "threshold.l2_persist", APX_CT_BOOL, APX_CONF_USER, OFF(th_l2_persist), 0, 0, 1,
	  "say whether the process used L2 persistence (limit and access-policy windows)" },
	{ "threshold.gpu_idle_pct", APX_CT_PCT, APX_CONF_USER, OFF(th_gpu_idle_pct), 0, 0, 100,
	  "notice when the GPU was idle more than this % of the time the process held it (0 = off)" },
	{ "threshold.sm_low_pct", APX_CT_PCT, APX_CONF_USER, OFF(th_sm_low_pct), 0, 0, 100,
	  "notice when the process's mean SM utilization (NVML) is below this % (0 = off)" },
	{ "threshold.gpu_mem_pct", APX_CT_PCT, APX_CONF_USER, OFF(th_gpu_mem_pct), 0, 0, 100,
	  "notice when its GPU's memory use reached this % of the total (0 = off)" },
	{ "live_check", APX_CT_DURATION, APX_CONF_USER, OFF(live_check_ns), 0, 0, 86400 * NS,
	  "look at a process still running once it ran this long: a big problem gets its notice "
	  "and apx attach command then (0 = off)" },
	{ "live_check_every", APX_CT_DURATION, APX_CONF_USER, OFF(live_check_every_ns), 0, NS,
	  86400 * NS, "after the first live check, look again this often" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const metric_names[] = { "cpu", "csw", "rss", "threads", "state", "faults" };
static const char *const notice_names[] = { "none", "log", "tty" };
static const char *const level_names[] = { "error", "warning", "notice", "info", "debug" };	/* 3.. */

void apx_conf_defaults(struct apx_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/nvperfd");
	snprintf(c->log_file, sizeof(c->log_file), "/var/log/nvperfd/nvperfd.log");
	snprintf(c->socket_path, sizeof(c->socket_path), "/run/nvperfd.sock");
	snprintf(c->pid_file, sizeof(c->pid_file), "/run/nvperfd.pid");
	snprintf(c->user_config, sizeof(c->user_config), "~/" APX_CONF_USER_REL);
	c->syslog = 1;
	c->log_level = 6;
	c->sample_period_ns = NS;
	c->cuda_recheck_max_ns = 60 * NS;
	c->summary_min_runtime_ns = NS;
	c->max_tracked = 1024;
	c->max_tracked_per_user = 0;
	c->max_clients = 64;
	c->max_summaries = 200;
	c->max_summary_bytes = 4u << 20;
	c->max_state_bytes = 256u << 20;
	c->max_samples = 1024;
	c->max_threads = 512;
	c->netlink_buffer = 8u << 20;
	c->track = 1;
	c->metrics = APX_METRIC__ALL;
	c->notice = APX_NOTICE_LOG;
	c->th_min_runtime_ns = 10 * NS;
	c->uprobes = 1;
	c->nvml = 1;
	c->uprobe_max_rate = 1000;
	c->uprobe_copy_time = 0;
	c->th_pageable_copy_bytes = 1ull << 30;
	c->th_l2_persist = 1;
	c->th_gpu_idle_pct = 50;
	c->th_sm_low_pct = 10;
	c->th_gpu_mem_pct = 95;
	c->live_check_ns = 60 * NS;
	c->live_check_every_ns = 300 * NS;
}

size_t apx_conf_key_count(void)
{
	return NKEYS;
}

const struct apx_conf_key *apx_conf_key_at(size_t i)
{
	return i < NKEYS ? &keys[i] : NULL;
}

const struct apx_conf_key *apx_conf_key_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == len && !memcmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

static int fail(struct apx_conf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct apx_conf_error *err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* number with an optional suffix; mult_table gives suffix -> multiplier */
static int parse_scaled(const char *v, uint64_t *ret, int duration)
{
	char num[64];
	size_t n = 0;
	uint64_t mult = 1, x;
	double d;
	char *end;

	while (v[n] && (isdigit((unsigned char)v[n]) || v[n] == '.'))
		n++;
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, n);
	num[n] = 0;
	if (duration) {
		const char *s = v + n;

		if (!*s || !strcmp(s, "s"))
			mult = NS;
		else if (!strcmp(s, "ms"))
			mult = 1000000;
		else if (!strcmp(s, "m") || !strcmp(s, "min"))
			mult = 60 * NS;
		else if (!strcmp(s, "h"))
			mult = 3600 * NS;
		else
			return -EINVAL;
	} else {
		const char *s = v + n;

		if (!*s || !strcmp(s, "B"))
			mult = 1;
		else if (!strcmp(s, "K") || !strcmp(s, "KiB") || !strcmp(s, "k"))
			mult = 1ull << 10;
		else if (!strcmp(s, "M") || !strcmp(s, "MiB"))
			mult = 1ull << 20;
		else if (!strcmp(s, "G") || !strcmp(s, "GiB"))
			mult = 1ull << 30;
		else if (!strcmp(s, "T") || !strcmp(s, "TiB"))
			mult = 1ull << 40;
		else
			return -EINVAL;
	}
	if (strchr(num, '.')) {
		errno = 0;
		d = strtod(num, &end);
		if (*end || errno || d < 0 || d * (double)mult > 1.8e19)
			return -ERANGE;
		*ret = (uint64_t)(d * (double)mult + 0.5);
		return 0;
	}
	if (apx_parse_u64(num, UINT64_MAX, &x) < 0 || __builtin_mul_overflow(x, mult, &x))
		return -ERANGE;
	*ret = x;
	return 0;
}

int apx_conf_listen_addr(const char *text, struct sockaddr_storage *ret_sa, socklen_t *ret_len)
{
	struct sockaddr_storage sa = { 0 };
	char host[APX_CONF_LISTEN_MAX];
	const char *port;
	size_t hl;
	uint64_t pn;
	socklen_t len;
	int v6 = text[0] == '[';

	if (v6) {			/* [IPV6]:PORT */
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - text - 1);
		text++;
		port = close + 2;
	} else {			/* IPV4:PORT */
		const char *colon = strrchr(text, ':');

		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - text);
		port = colon + 1;
	}
	if (hl == 0 || hl >= sizeof(host) || !isdigit((unsigned char)port[0]) ||
	    apx_parse_u64(port, 65535, &pn) < 0 || pn == 0)
		return -EINVAL;
	memcpy(host, text, hl);
	host[hl] = 0;
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)pn);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)pn);
		len = sizeof(*s4);
	}
	*ret_sa = sa;
	*ret_len = len;
	return 0;
}

static int parse_value(const struct apx_conf_key *k, const char *v, uint64_t *ret_num,
		       struct apx_conf_error *err)
{
	uint64_t x = 0;
	int r;

	switch (k->type) {
	case APX_CT_PATH:
		if (strlen(v) >= k->size)
			return fail(err, "expected a path shorter than %zu bytes", k->size);
		if (*v && *v != '/' && !(k->offset == OFF(user_config) && !strncmp(v, "~/", 2)))
			return fail(err, "expected an absolute path (starting with '/')");
		return 0;
	case APX_CT_LISTEN: {
		struct sockaddr_storage sa;
		socklen_t sl;

		if (*v && (strlen(v) >= k->size || apx_conf_listen_addr(v, &sa, &sl) < 0))
			return fail(err, "expected a numeric TCP address IPV4:PORT or [IPV6]:PORT "
				    "with a port from 1 to 65535 (e.g. 127.0.0.1:9470 or [::1]:9470), "
				    "or \"\" for off");
		return 0;
	}
	case APX_CT_BOOL:
		if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
			x = 1;
		else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
			x = 0;
		else
			return fail(err, "expected yes or no");
		break;
	case APX_CT_NOTICE:
		for (x = 0; x < 3; x++)
			if (!strcmp(v, notice_names[x]))
				break;
		if (x == 3)
			return fail(err, "expected one of: none, log, tty");
		break;
	case APX_CT_LEVEL:
		for (x = 0; x < 5; x++)
			if (!strcmp(v, level_names[x]))
				break;
		if (x == 5)
			return fail(err, "expected one of: error, warning, notice, info, debug");
		x += 3;
		break;
	case APX_CT_METRICS: {
		const char *p = v;

		if (!strcmp(v, "all")) {
			x = APX_METRIC__ALL;
			break;
		}
		while (*p) {
			size_t n = strcspn(p, ", ");
			size_t i;

			for (i = 0; i < 6; i++)
				if (strlen(metric_names[i]) == n && !memcmp(p, metric_names[i], n))
					break;
			if (i == 6 || n == 0)
				return fail(err, "expected a comma-separated list of: cpu, csw, rss, "
					    "threads, state, faults (or all)");
			x |= 1ull << i;
			p += n;
			p += strspn(p, ", ");
		}
		break;
	}
	case APX_CT_DURATION:
		r = parse_scaled(v, &x, 1);
		if (r < 0 || x < k->min || x > k->max)
			return fail(err, "expected a duration between %.3g s and %.6g s "
				    "(a number of seconds, or with ms, s, m or h)",
				    (double)k->min / 1e9, (double)k->max / 1e9);
		break;
	case APX_CT_SIZE:
		r = parse_scaled(v, &x, 0);
		if (r < 0 || x < k->min || x > k->max)
			return fail(err, "expected a size between %" PRIu64 " and %" PRIu64
				    " bytes (a number, optionally with K, M, G or T)", k->min, k->max);
		break;
	case APX_CT_COUNT:
	case APX_CT_PCT:
		r = apx_parse_u64(v, UINT64_MAX, &x);
		if (r < 0 || x < k->min || x > k->max)
			return fail(err, "expected a whole number between %" PRIu64 " and %" PRIu64,
				    k->min, k->max);
		break;
	default:
		return fail(err, "internal: unknown key type");
	}
	*ret_num = x;
	return 0;
}

int apx_conf_check(const struct apx_conf_key *k, const char *value, struct apx_conf_error *err)
{
	uint64_t x;

	return parse_value(k, value, &x, err);
}

static void set_value(struct apx_conf *c, const struct apx_conf_key *k, const char *v, uint64_t x)
{
	char *base = (char *)c;

	if (k->type == APX_CT_PATH || k->type == APX_CT_LISTEN)
		snprintf(base + k->offset, k->size, "%s", v);
	else
		memcpy(base + k->offset, &x, sizeof(x));
}

void apx_conf_format(const struct apx_conf *c, const struct apx_conf_key *k, char *buf, size_t cap)
{
	const char *base = (const char *)c;
	uint64_t x;

	if (k->type == APX_CT_PATH || k->type == APX_CT_LISTEN) {
		snprintf(buf, cap, "%s", base + k->offset);
		return;
	}
	memcpy(&x, base + k->offset, sizeof(x));
	switch (k->type) {
	case APX_CT_BOOL:
		snprintf(buf, cap, "%s", x ? "yes" : "no");
		break;
	case APX_CT_NOTICE:
		snprintf(buf, cap, "%s", notice_names[x < 3 ? x : 0]);
		break;
	case APX_CT_LEVEL:
		snprintf(buf, cap, "%s", level_names[x >= 3 && x <= 7 ? x - 3 : 3]);
		break;
	case APX_CT_METRICS: {
		size_t n = 0;

		buf[0] = 0;
		if (x == APX_METRIC__ALL) {
			snprintf(buf, cap, "all");
			break;
		}
		for (unsigned i = 0; i < 6; i++)
			if (x & (1ull << i) && n < cap)
				n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "",
						      metric_names[i]);
		break;
	}
	case APX_CT_DURATION:
		if (x % NS == 0)
			snprintf(buf, cap, "%" PRIu64 "s", x / NS);
		else
			snprintf(buf, cap, "%" PRIu64 "ms", x / 1000000);
		break;
	case APX_CT_SIZE:
		if (x && x % (1ull << 30) == 0)
			snprintf(buf, cap, "%" PRIu64 "G", x >> 30);
		else if (x && x % (1ull << 20) == 0)
			snprintf(buf, cap, "%" PRIu64 "M", x >> 20);
		else if (x && x % (1ull << 10) == 0)
			snprintf(buf, cap, "%" PRIu64 "K", x >> 10);
		else
			snprintf(buf, cap, "%" PRIu64, x);
		break;
	default:
		snprintf(buf, cap, "%" PRIu64, x);
		break;
	}
}

static int is_key_char(int ch)
{
	return isalnum(ch) || ch == '_' || ch == '.';
}

int apx_conf_parse(const char *text, size_t len, const char *fname, enum apx_conf_scope scope,
		   struct apx_conf *inout, struct apx_conf_error *err)
{
	struct apx_conf c = *inout;
	char line[APX_CONF_LINE_MAX + 1];
	size_t pos = 0;
	unsigned lineno = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		const struct apx_conf_key *k;
		size_t i = 0, ks, ke, vs, ve;
		uint64_t x;
		int r;

		lineno++;
		if (err) {
			err->line = lineno;
			err->col = 1;
		}
		if (n > APX_CONF_LINE_MAX)
			return fail(err, "%s:%u:%d: expected a line shorter than %d bytes", fname,
				    lineno, APX_CONF_LINE_MAX + 1, APX_CONF_LINE_MAX);
		memcpy(line, text + pos, n);
		line[n] = 0;
		pos += n + (nl ? 1 : 0);
		if (n && line[n - 1] == '\r')
			line[--n] = 0;
		for (size_t j = 0; j < n; j++)
			if (line[j] == 0 || ((unsigned char)line[j] < 0x20 && line[j] != '\t'))
				return fail(err, "%s:%u:%zu: expected text, found a control byte 0x%02x",
					    fname, lineno, j + 1, (unsigned char)line[j]);
		while (line[i] == ' ' || line[i] == '\t')
			i++;
		if (!line[i] || line[i] == '#')
			continue;
		ks = i;
		while (is_key_char((unsigned char)line[i]))
			i++;
		ke = i;
		if (ke == ks)
			return fail(err, "%s:%u:%zu: expected a key (letters, digits, '_' or '.')",
				    fname, lineno, ks + 1);
		while (line[i] == ' ' || line[i] == '\t')
			i++;
		if (line[i] != '=')
			return fail(err, "%s:%u:%zu: expected '=' after the key '%.*s'", fname, lineno,
				    i + 1, (int)(ke - ks), line + ks);
		i++;
		while (line[i] == ' ' || line[i] == '\t')
			i++;
		vs = i;
		ve = n;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		if (ve - vs >= 2 && line[vs] == '"' && line[ve - 1] == '"') {
			vs++;
			ve--;
		}
		line[ve] = 0;
		k = apx_conf_key_find(line + ks, ke - ks);
		if (!k)
			return fail(err, "%s:%u:%zu: unknown key '%.*s'; expected one of the keys in "
				    "nvperfd.conf(5) ('apx config list' shows them)", fname, lineno,
				    ks + 1, (int)(ke - ks > 64 ? 64 : ke - ks), line + ks);
		if (scope == APX_CONF_USER && k->scope == APX_CONF_MACHINE)
			return fail(err, "%s:%u:%zu: '%s' can only be set in %s; expected a per-user "
				    "key (track, metrics, notice, uprobe_max_rate, live_check, "
				    "live_check_every, threshold.*)",
				    fname, lineno, ks + 1, k->name, APX_CONF_MACHINE_PATH);
		if (err) {
			err->col = (unsigned)vs + 1;
		}
		r = parse_value(k, line + vs, &x, err);
		if (r < 0) {
			char what[200];

			if (err) {
				size_t wl = strnlen(err->msg, sizeof(what) - 1);

				memcpy(what, err->msg, wl);
				what[wl] = 0;
				snprintf(err->msg, sizeof(err->msg), "%.200s:%u:%zu: %s: %s", fname,
					 lineno, vs + 1, k->name, what);
			}
			return r;
		}
		set_value(&c, k, line + vs, x);
	}
	*inout = c;
	return 0;
}

int apx_conf_load(const char *path, enum apx_conf_scope scope, uid_t owner,
		  struct apx_conf *inout, struct apx_conf_error *err)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			fail(err, "%s: refused: a symbolic link (expected a regular file)", path);
		else
			fail(err, "%s: cannot open: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = fail(err, "%s: refused: expected a regular file (it is a %s)", path,
			 S_ISFIFO(st.st_mode) ? "FIFO" : S_ISDIR(st.st_mode) ? "folder" :
			 S_ISSOCK(st.st_mode) ? "socket" : "device");
		goto out;
	}
	if (owner != (uid_t)-1 && st.st_uid != owner) {
		r = fail(err, "%s: expected a file owned by uid %u (it is owned by uid %u)",
			 path, (unsigned)owner, (unsigned)st.st_uid);
		goto out;
	}
	if ((uint64_t)st.st_size > APX_CONF_FILE_MAX) {
		r = fail(err, "%s: expected a file of at most %u bytes", path, APX_CONF_FILE_MAX);
		goto out;
	}
	buf = malloc(APX_CONF_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, APX_CONF_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > APX_CONF_FILE_MAX) {
			r = fail(err, "%s: expected a file of at most %u bytes", path,
				 APX_CONF_FILE_MAX);
			goto out;
		}
	}
	r = apx_conf_parse(buf, len, path, scope, inout, err);
out:
	free(buf);
	close(fd);
	return r;
}

int apx_conf_user_path(const char *tmpl, const char *home, uid_t uid, char *buf, size_t cap)
{
	size_t n = 0;
	const char *p = tmpl;

	if (!strncmp(p, "~/", 2)) {
		if (!home || home[0] != '/')
			return -ENOENT;
		n = (size_t)snprintf(buf, cap, "%s/", home);
		p += 2;
	}
	for (; *p && n < cap; p++) {
		if (p[0] == '%' && p[1] == 'u') {
			n += (size_t)snprintf(buf + n, cap - n, "%u", (unsigned)uid);
			p++;
		} else {
			buf[n++] = *p;
		}
	}
	if (n >= cap)
		return -ENAMETOOLONG;
	buf[n] = 0;
	return 0;
}
