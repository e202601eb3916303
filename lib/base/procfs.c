/*
 * procfs.c - small /proc readers shared by the collector and nvperfd (see procfs.h).
 */
#include "base/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/banned.h"

ssize_t apx_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = 0;
	close(fd);
	return n;
}

uint64_t apx_status_value(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	uint64_t v = 0;

	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ' || *p == '\t' || *p == ':')
		p++;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

int apx_proc_maps_find(pid_t pid, const char *prefix, char *buf, size_t cap)
{
	char path[64], line[4096];
	size_t plen = strlen(prefix);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* "addr perms offset dev inode   /path": the path is the first '/' after the inode */
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;
		size_t len;

		if (!p)
			continue;
		len = strcspn(p, "\n");
		p[len] = 0;
		base = strrchr(p, '/') + 1;
		if (strncmp(base, prefix, plen) || strstr(p, " (deleted)") || (buf && len >= cap))
			continue;
		if (buf)
			memcpy(buf, p, len + 1);
		found = 1;
	}
	fclose(f);
	return found;
}

int apx_proc_has_nvidia_fd(pid_t pid, int numbered)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	while (!found && (de = readdir(dir))) {
		char target[64];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(fd, de->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		found = !strncmp(target, "/dev/nvidia", 11) &&
			(!numbered || (target[11] >= '0' && target[11] <= '9'));
	}
	closedir(dir);
	return found;
}
