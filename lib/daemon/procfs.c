/*
 * procfs.c - what nvperfd reads from /proc about a process or thread: stat, status, comm, exe,
 * cmdline, cwd, and whether it uses CUDA (maps, fds). Called from tracker.c on the event loop.
 * Non-logging; a process that vanished gives -ENOENT / -ESRCH.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"
#include "daemon/daemon.h"

#include "base/banned.h"

static uint64_t page_bytes, tick_ns;

uint64_t apx_procfs_ticks_ns(void)
{
	if (!tick_ns) {
		long hz = sysconf(_SC_CLK_TCK);

		tick_ns = hz > 0 ? 1000000000ull / (uint64_t)hz : 10000000ull;
		page_bytes = (uint64_t)sysconf(_SC_PAGESIZE);
	}
	return tick_ns;
}

int apx_procfs_stat(pid_t pid, pid_t tid, struct apx_pstat *ret, int with_status)
{
	char path[64], buf[4096];	/* status grows with CPU and group counts; csw is last */
	struct apx_pstat s = { 0 };
	unsigned long long f[24] = { 0 };
	char *open_p, *close_p, *p;
	ssize_t n;
	size_t clen;
	int i;

	apx_procfs_ticks_ns();
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = apx_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p || close_p[1] != ' ')
		return -EBADMSG;
	clen = (size_t)(close_p - open_p - 1);
	if (clen >= sizeof(s.comm))
		clen = sizeof(s.comm) - 1;
	memcpy(s.comm, open_p + 1, clen);
	s.comm[clen] = 0;
	s.state = close_p[2];
	p = close_p + 3;
	/* fields 4..24 (1-based): f[k - 1] is field k */
	for (i = 4; i <= 24 && *p; i++) {
		char *end;

		f[i - 1] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
		while (*p == ' ')
			p++;
	}
	if (i <= 24)
		return -EBADMSG;
	s.ppid = (pid_t)f[3];
	s.tty_nr = (uint32_t)f[6];
	s.minflt = f[9];
	s.majflt = f[11];
	s.utime_ns = f[13] * tick_ns;
	s.stime_ns = f[14] * tick_ns;
	s.threads = f[19];
	s.start_ticks = f[21];
	s.vsize_bytes = f[22];
	s.rss_bytes = f[23] * page_bytes;
	if (with_status) {
		if (tid)
			snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
		else
			snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		n = apx_read_small(path, buf, sizeof(buf));
		if (n < 0)
			return (int)n;
		s.vol_csw = apx_status_value(buf, "\nvoluntary_ctxt_switches:");
		s.invol_csw = apx_status_value(buf, "\nnonvoluntary_ctxt_switches:");
		s.rss_peak_bytes = apx_status_value(buf, "\nVmHWM:") * 1024;
		s.uid = (uid_t)apx_status_value(buf, "\nUid:");
	}
	*ret = s;
	return 0;
}

int apx_procfs_comm(pid_t pid, char comm[APX_COMM_MAX])
{
	char path[64], buf[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = apx_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (n >= APX_COMM_MAX)
		n = APX_COMM_MAX - 1;
	memcpy(comm, buf, (size_t)n);
	comm[n] = 0;
	return 0;
}

int apx_comm_is_python(const char *comm)
{
	const char *p;

	if (!strcmp(comm, "pt_main_thread"))
		return 1;
	if (strncmp(comm, "python", 6))
		return 0;
	for (p = comm + 6; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.' && *p != 'd' && *p != 'm' && *p != 'u')
			return 0;
	return 1;
}

int apx_procfs_exe_is_python(pid_t pid)
{
	char path[64], buf[512], *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	if (!strncmp(base, "python", 6)) {
		char *sp = strchr(base, ' ');	/* " (deleted)" */

		if (sp)
			*sp = 0;
		return apx_comm_is_python(base);
	}
	return 0;
}

int apx_procfs_uses_cuda(pid_t pid)
{
	char path[64], buf[16384 + 64];
	size_t keep = 0;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf + keep, sizeof(buf) - 1 - keep);

		if (n <= 0)
			break;
		buf[keep + (size_t)n] = 0;
		if (strstr(buf, "/libcuda.so")) {
			found = 1;
			break;
		}
		/* keep a tail so a name split across reads is still found */
		keep = keep + (size_t)n;
		if (keep > 32) {
			memmove(buf, buf + keep - 32, 32);
			keep = 32;
		}
	}
	close(fd);
	return found ? 1 : apx_proc_has_nvidia_fd(pid, 0);
}

int apx_procfs_libcuda_path(pid_t pid, char *buf, size_t cap)
{
	return apx_proc_maps_find(pid, "libcuda.so", buf, cap);
}

ssize_t apx_procfs_cmdline(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	int fd;
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return (ssize_t)len;
}

int apx_procfs_cwd(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	n = readlink(path, buf, cap - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}
