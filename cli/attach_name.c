/*
 * attach_name.c - `apx attach NAME`: the one process a name stands for, as `apx status` shows
 * it (its COMMAND column): the process's name (comm), or the last path part of its program or
 * of its first two arguments (python3 train.py -> "train.py"; python -m serve -> "serve").
 * Only processes apx may attach to are looked at (the caller's own; root: all); apx itself is
 * left out. Called by cmd_attach.c when the argument is not a number.
 */
#include "cli/attach_name.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/procfs.h"
#include "base/termsafe.h"

#include "base/banned.h"

#define SHOWN 8		/* candidates listed when the name is not unique */

static const char *last_part(const char *s)
{
	const char *slash = strrchr(s, '/');

	return slash ? slash + 1 : s;
}

/* Whether process pid goes by name: 1 yes, 0 no (or gone, or not readable). Its command
 * line, NULs made spaces, into cmd. */
static int goes_by(pid_t pid, const char *name, char *cmd, size_t cap)
{
	char path[64], comm[64], argv[4096];
	ssize_t n;
	int hit = 0;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = apx_read_small(path, comm, sizeof(comm));
	if (n <= 0)
		return 0;
	comm[strcspn(comm, "\n")] = 0;
	hit = !strcmp(comm, name);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = apx_read_small(path, argv, sizeof(argv) - 1);
	if (n < 0)
		n = 0;
	argv[n] = 0;
	/* argv[0], then the first two arguments ("-m" is skipped by its own mismatch) */
	for (ssize_t off = 0, k = 0; off < n && k < 3 && !hit; k++) {
		hit = argv[off] && !strcmp(last_part(argv + off), name);
		off += (ssize_t)strlen(argv + off) + 1;
	}
	while (n > 0 && !argv[n - 1])	/* the last argument's NUL */
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!argv[i])
			argv[i] = ' ';
	argv[n] = 0;
	snprintf(cmd, cap, "%s", n ? argv : comm);
	return hit;
}

int apx_attach_find_name(const char *name, pid_t *ret, char *why, size_t cap)
{
	pid_t found[SHOWN];
	char cmd[SHOWN][200], one[200], safe_name[128], safe[200];
	size_t n = 0, len;
	uid_t me = geteuid();
	DIR *d;
	struct dirent *de;

	apx_term_safe_str(safe_name, sizeof(safe_name), name);
	if (!*name || strchr(name, '\n')) {
		snprintf(why, cap, "'%s' is not a process id or name", safe_name);
		return -EINVAL;
	}
	d = opendir("/proc");
	if (!d) {
		snprintf(why, cap, "cannot list /proc: %s", strerror(errno));
		return -errno;
	}
	while ((de = readdir(d))) {
		char path[64];
		struct stat st;
		long pid;
		char *end;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld", pid);
		if (stat(path, &st) < 0 || (me != 0 && st.st_uid != me))
			continue;
		if (!goes_by((pid_t)pid, name, one, sizeof(one)))
			continue;
		if (n < SHOWN) {
			found[n] = (pid_t)pid;
			memcpy(cmd[n], one, sizeof(one));
		}
		n++;
	}
	closedir(d);
	if (n == 1) {
		*ret = found[0];
		return 0;
	}
	if (!n) {
		snprintf(why, cap, "no process named '%s' (give its pid, or its name as apx status "
			 "shows it: the program or script, e.g. train.py)%s", safe_name,
			 me ? " among your processes" : "");
		return -ESRCH;
	}
	len = (size_t)snprintf(why, cap, "%zu processes are named '%s'; give the pid of one:",
			       n, safe_name);
	for (size_t i = 0; i < n && i < SHOWN && len < cap; i++)
		len += (size_t)snprintf(why + len, cap - len, "\n  %d  %s", (int)found[i],
					apx_term_safe_str(safe, sizeof(safe), cmd[i]));
	if (n > SHOWN && len < cap)
		snprintf(why + len, cap - len, "\n  ... and %zu more", n - SHOWN);
	return -EEXIST;
}
