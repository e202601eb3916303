/*
 * config.h - nvperfd configuration: the machine file (/etc/nvperfd.conf) and the per-user file
 * (~/.config/nvperf/nvperfd.conf). Used by the daemon (load, reload on change) and by
 * `apx config` (list, validate before writing). Non-logging: errors come back as -errno with
 * "FILE:LINE:COLUMN: what was expected" in a struct apx_conf_error. The syntax and every key are
 * documented in docs/nvperfd.conf.md.
 *
 * Syntax: one "key = value" per line; '#' starts a comment line; blank lines ignored.
 */
#ifndef APX_DAEMON_CONFIG_H
#define APX_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define APX_CONF_MACHINE_PATH "/etc/nvperfd.conf"
#define APX_CONF_USER_REL ".config/nvperf/nvperfd.conf"	/* under the user's home */
#define APX_CONF_FILE_MAX (64u << 10)	/* longer files are refused */
#define APX_CONF_LINE_MAX 1024
#define APX_CONF_PATH_MAX 256
#define APX_CONF_LISTEN_MAX 64		/* "[IPV6]:PORT" or "IPV4:PORT" */

enum apx_conf_scope {
	APX_CONF_MACHINE = 1,		/* may set every key */
	APX_CONF_USER = 2,		/* may set only per-user keys */
};

enum apx_conf_metric {			/* bits of apx_conf.metrics */
	APX_METRIC_CPU = 1u << 0,	/* utime, stime */
	APX_METRIC_CSW = 1u << 1,	/* voluntary / involuntary context switches */
	APX_METRIC_RSS = 1u << 2,	/* RSS and its peak */
	APX_METRIC_THREADS = 1u << 3,	/* thread count and per-thread totals */
	APX_METRIC_STATE = 1u << 4,	/* process state letter */
	APX_METRIC_FAULTS = 1u << 5,	/* minor / major page faults */
	APX_METRIC__ALL = (1u << 6) - 1,
};

enum apx_conf_notice { APX_NOTICE_NONE = 0, APX_NOTICE_LOG = 1, APX_NOTICE_TTY = 2 };

struct apx_conf {
	/* machine */
	char state_dir[APX_CONF_PATH_MAX];
	char log_file[APX_CONF_PATH_MAX];	/* "" = no log file */
	char socket_path[108];			/* sun_path size */
	char pid_file[APX_CONF_PATH_MAX];
	char user_config[APX_CONF_PATH_MAX];	/* template: leading "~/" = home, "%u" = uid */
	uint64_t syslog;			/* bool */
	uint64_t log_level;			/* syslog level: 3 error .. 7 debug */
	uint64_t sample_period_ns;
	uint64_t cuda_recheck_max_ns;
	uint64_t summary_min_runtime_ns;
	uint64_t max_tracked;
	uint64_t max_tracked_per_user;	/* non-root uids; 0 = max_tracked / 4 */
	uint64_t max_clients;
	uint64_t max_summaries;			/* per user */
	uint64_t max_summary_bytes;
	uint64_t max_state_bytes;		/* per user */
	uint64_t max_samples;			/* per process, kept in memory and written */
	uint64_t max_threads;			/* per process */
	uint64_t netlink_buffer;		/* receive buffer of the connector socket */
	uint64_t uprobes;			/* bool: eBPF uprobes on tracked processes' libcuda */
	uint64_t nvml;				/* bool: GPU metrics through NVML (and GPM) */
	char metrics_listen[APX_CONF_LISTEN_MAX];	/* Prometheus endpoint; "" = off */
	/* per user (the machine file sets the defaults) */
	uint64_t track;				/* bool */
	uint64_t metrics;			/* enum apx_conf_metric bits */
	uint64_t notice;			/* enum apx_conf_notice */
	uint64_t th_min_runtime_ns;
	uint64_t th_rss_peak_bytes;		/* 0 = off */
	uint64_t th_invol_csw_rate;		/* per second, 0 = off */
	uint64_t th_cpu_low_pct;		/* 0 = off */
	uint64_t th_cpu_high_pct;		/* 0 = off */
	uint64_t uprobe_max_rate;		/* probed calls/s of a process before detaching */
	uint64_t uprobe_copy_time;		/* bool: return probes on copies (their time) */
	uint64_t th_pageable_copy_bytes;	/* 0 = off */
	uint64_t th_l2_persist;			/* bool: say whether L2 persistence was used */
	uint64_t th_gpu_idle_pct;		/* 0 = off */
	uint64_t th_sm_low_pct;			/* 0 = off */
	uint64_t th_gpu_mem_pct;		/* 0 = off */
	uint64_t live_check_ns;			/* first look at a running process, 0 = off */
	uint64_t live_check_every_ns;		/* then again this often */
};

enum apx_conf_type {
	APX_CT_PATH, APX_CT_BOOL, APX_CT_DURATION, APX_CT_COUNT, APX_CT_SIZE, APX_CT_PCT,
	APX_CT_NOTICE, APX_CT_METRICS, APX_CT_LEVEL,
	APX_CT_LISTEN,			/* text: "" or a numeric TCP address ("IPV4:PORT", "[IPV6]:PORT") */
};

struct apx_conf_key {
	const char *name;
	uint8_t type;			/* enum apx_conf_type */
	uint8_t scope;			/* APX_CONF_MACHINE: machine file only; APX_CONF_USER: both */
	size_t offset;			/* in struct apx_conf */
	size_t size;			/* for paths: buffer size */
	uint64_t min, max;		/* numeric range (durations in ns, sizes in bytes) */
	const char *help;
};

struct apx_conf_error {
	char msg[512];			/* "FILE:LINE:COL: ..." */
	unsigned line, col;
};

void apx_conf_defaults(struct apx_conf *c);
size_t apx_conf_key_count(void);
const struct apx_conf_key *apx_conf_key_at(size_t i);
const struct apx_conf_key *apx_conf_key_find(const char *name, size_t len);

/* Parse text over a copy of *inout; *inout is written only on success. */
int apx_conf_parse(const char *text, size_t len, const char *fname, enum apx_conf_scope scope,
		   struct apx_conf *inout, struct apx_conf_error *err);
/* Read and parse a file (no symlinks, regular, <= APX_CONF_FILE_MAX). When owner is not -1 the
 * file must belong to that uid. -ENOENT when it does not exist. */
int apx_conf_load(const char *path, enum apx_conf_scope scope, uid_t owner,
		  struct apx_conf *inout, struct apx_conf_error *err);
/* Check one value for a key; 0 or -EINVAL with the expectation in err->msg. */
int apx_conf_check(const struct apx_conf_key *k, const char *value, struct apx_conf_error *err);
/* The value of k in c, as it would be written in a file. */
void apx_conf_format(const struct apx_conf *c, const struct apx_conf_key *k, char *buf, size_t cap);
/* A metrics_listen value ("127.0.0.1:9470", "[::1]:9470") as a socket address: numeric IPv4
 * or bracketed IPv6, port 1..65535. 0, or -EINVAL (also for ""); ret_* written on success. */
int apx_conf_listen_addr(const char *text, struct sockaddr_storage *ret_sa, socklen_t *ret_len);
/* The per-user config path for a uid with that home, from the template. */
int apx_conf_user_path(const char *tmpl, const char *home, uid_t uid, char *buf, size_t cap);

#endif
