/*
 * dlog.c - nvperfd's log: syslog (facility LOCAL3) and the log file (default
 * /var/log/nvperfd/nvperfd.log, re-opened on SIGHUP for logrotate), plus stderr when running in
 * the foreground. Called from the event loop thread only. Callers escape untrusted text (process
 * names, argv) with apx_dlog_esc before formatting it into a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctl_client.h"
#include "daemon/daemon.h"

#include "base/banned.h"

/* The log sinks: written by apx_dlog_open/reopen/close from the event loop thread only. */
static int log_fd = -1;
static int log_syslog;
static int log_stderr;
static int log_level = APX_LOG_INFO;

static int open_file(const char *path)
{
	char dir[APX_CONF_PATH_MAX];
	char *slash;
	int fd;

	if (!path[0])
		return -1;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		(void)mkdir(dir, 0750);
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0640);
	return fd < 0 ? -errno : fd;
}

int apx_dlog_open(const struct apx_conf *c, int to_stderr)
{
	int fd;

	log_stderr = to_stderr;
	log_level = (int)c->log_level;
	if (c->syslog && !log_syslog) {
		openlog("nvperfd", LOG_PID | LOG_NDELAY, LOG_LOCAL3);
		log_syslog = 1;
	}
	fd = open_file(c->log_file);
	if (fd < -1)
		return fd;
	log_fd = fd;
	return 0;
}

void apx_dlog_reopen(const struct apx_conf *c)
{
	int fd = open_file(c->log_file);

	log_level = (int)c->log_level;
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd >= 0 ? fd : -1;
	if (c->syslog && !log_syslog) {
		openlog("nvperfd", LOG_PID | LOG_NDELAY, LOG_LOCAL3);
		log_syslog = 1;
	} else if (!c->syslog && log_syslog) {
		closelog();
		log_syslog = 0;
	}
	if (fd < -1)
		apx_dlog(APX_LOG_ERR, "cannot open log file '%s': %s", c->log_file, strerror(-fd));
}

void apx_dlog_close(void)
{
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	if (log_syslog)
		closelog();
	log_syslog = 0;
}

static const char *level_name(int level)
{
	switch (level) {
	case APX_LOG_ERR: return "error";
	case APX_LOG_WARNING: return "warning";
	case APX_LOG_NOTICE: return "notice";
	case APX_LOG_INFO: return "info";
	default: return "debug";
	}
}

void apx_dlog(int level, const char *fmt, ...)
{
	char msg[2048], line[2200];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n, loud = level & APX_LOG_SYSLOG;

	level &= ~APX_LOG_SYSLOG;
	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(level, "%s", msg);
	} else if (loud) {	/* syslog = no: this one line all the same */
		openlog("nvperfd", LOG_PID, LOG_LOCAL3);
		syslog(level, "%s", msg);
		closelog();
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ nvperfd[%d]: %s: %s\n",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, (int)getpid(), level_name(level), msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (log_fd >= 0)
		(void)!write(log_fd, line, (size_t)n);
	if (log_stderr)
		(void)!write(2, line, (size_t)n);
}

const char *apx_dlog_esc(char *buf, size_t cap, const char *s, size_t len)
{
	apx_ctl_escape(buf, cap, s, len);
	return buf;
}
