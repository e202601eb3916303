/*
 * proc.c - process-level CPU facts for the collector, cheaply: getrusage(RUSAGE_SELF) plus
 * /proc/self/status for RSS and the thread count, sampled by the writer thread once per flush
 * period and at exit; at exit also the name of every live thread (/proc/self/task/N/comm).
 * Runs only on the collector's writer thread (it reads files and allocates nothing).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"

#include "base/banned.h"

uint64_t apx_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* Value of "Key:  123 kB" in /proc/self/status text, in units of the line (kB -> bytes). */
static uint64_t status_field(const char *text, const char *key)
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
	if (!strncmp(p, " kB", 3))
		v *= 1024;
	return v;
}

void apx_proc_sample(struct apx_writer *w, uint64_t ts_ns)
{
	struct rusage ru;
	struct apx_rec rec;
	char buf[4096];

	apx_rec_init(&rec, APX_REC_CPU);
	rec.v[APX_CPU_TS_NS] = ts_ns;
	rec.v[APX_CPU_PID] = (uint64_t)getpid();
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		rec.v[APX_CPU_UTIME_NS] = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull +
					  (uint64_t)ru.ru_utime.tv_usec * 1000ull;
		rec.v[APX_CPU_STIME_NS] = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull +
					  (uint64_t)ru.ru_stime.tv_usec * 1000ull;
		rec.v[APX_CPU_VOL_CSW] = (uint64_t)ru.ru_nvcsw;
		rec.v[APX_CPU_INVOL_CSW] = (uint64_t)ru.ru_nivcsw;
		rec.v[APX_CPU_RSS_PEAK_BYTES] = (uint64_t)ru.ru_maxrss * 1024ull;
		rec.v[APX_CPU_MINFLT] = (uint64_t)ru.ru_minflt;
		rec.v[APX_CPU_MAJFLT] = (uint64_t)ru.ru_majflt;
	}
	if (read_small("/proc/self/status", buf, sizeof(buf)) > 0) {
		rec.v[APX_CPU_RSS_BYTES] = status_field(buf, "VmRSS");
		rec.v[APX_CPU_THREADS] = status_field(buf, "Threads");
		if (!rec.v[APX_CPU_RSS_PEAK_BYTES])
			rec.v[APX_CPU_RSS_PEAK_BYTES] = status_field(buf, "VmHWM");
	}
	(void)apx_writer_add(w, &rec);
}

void apx_proc_threads(struct apx_writer *w, uint64_t ts_ns)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && n < 4096) {
		char path[64 + sizeof(de->d_name)], name[64];
		struct apx_rec rec;
		ssize_t len;
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (*end || !tid)
			continue;
		memcpy(path, "/proc/self/task/", 16);
		len = (ssize_t)strlen(de->d_name);
		memcpy(path + 16, de->d_name, (size_t)len);
		memcpy(path + 16 + len, "/comm", 6);
		len = read_small(path, name, sizeof(name));
		if (len <= 0)
			continue;
		if (name[len - 1] == '\n')
			name[--len] = 0;
		apx_rec_init(&rec, APX_REC_THREAD);
		rec.v[APX_THREAD_PID] = (uint64_t)getpid();
		rec.v[APX_THREAD_TID] = tid;
		apx_rec_set_bytes(&rec, APX_THREAD_NAME, name, (size_t)len);
		rec.v[APX_THREAD_END_NS] = ts_ns;
		(void)apx_writer_add(w, &rec);
		n++;
	}
	closedir(d);
}
