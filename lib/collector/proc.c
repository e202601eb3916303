/*
 * proc.c - process-level CPU facts for the collector, cheaply: getrusage(RUSAGE_SELF) plus
 * /proc/self/status for RSS and the thread count, sampled by the writer thread at its first
 * drain, every 100 ms for the first 10 s, then once per flush period, and at exit; at exit
 * also the name of every live thread (/proc/self/task/N/comm).
 * The process tree: a PROCESS record for this process at the first sample (its presence tells
 * the report that children were looked for) and one for each child process the first time a
 * sample sees it (/proc/self/task/N/children: DataLoader workers, subprocesses), so that
 * children which never use CUDA (and so write no trace of their own) are in the trace too.
 * Runs only on the collector's writer thread (it reads files and allocates nothing); it is
 * the collector's "cpu" source (apx_source_cpu, collector.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"
#include "collector/collector.h"

#include "base/banned.h"

uint64_t apx_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
	if (apx_read_small("/proc/self/status", buf, sizeof(buf)) > 0) {
		rec.v[APX_CPU_RSS_BYTES] = apx_status_value(buf, "VmRSS") * 1024;	/* kB */
		rec.v[APX_CPU_THREADS] = apx_status_value(buf, "Threads");
		if (!rec.v[APX_CPU_RSS_PEAK_BYTES])
			rec.v[APX_CPU_RSS_PEAK_BYTES] = apx_status_value(buf, "VmHWM") * 1024;
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
		len = apx_read_small(path, name, sizeof(name));
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

/* A PROCESS record: pid, its parent, when first seen, its comm. */
static void add_process(struct apx_writer *w, uint64_t ts_ns, uint64_t pid, uint64_t ppid)
{
	char path[48], comm[64];
	struct apx_rec rec;
	ssize_t len;

	apx_rec_init(&rec, APX_REC_PROCESS);
	rec.v[APX_PROCESS_PID] = pid;
	rec.v[APX_PROCESS_PPID] = ppid;
	rec.v[APX_PROCESS_START_NS] = ts_ns;
	rec.v[APX_PROCESS_USES_CUDA] = 2;
	snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)pid);
	len = apx_read_small(path, comm, sizeof(comm));
	if (len > 0 && comm[len - 1] == '\n')
		comm[--len] = 0;
	if (len > 0)
		apx_rec_set_bytes(&rec, APX_PROCESS_COMM, comm, (size_t)len);
	(void)apx_writer_add(w, &rec);
}

#define CHILDREN_MAX 256	/* children remembered (more are written again at each sample) */

/* This process at the first call, then every child not seen before. Writer thread only. */
void apx_proc_children(struct apx_writer *w, uint64_t ts_ns)
{
	static uint64_t seen[CHILDREN_MAX];
	static unsigned nseen;
	static int self_done;
	uint64_t self = (uint64_t)getpid();
	DIR *d;
	struct dirent *de;

	if (!self_done) {
		add_process(w, ts_ns, self, (uint64_t)getppid());
		self_done = 1;
	}
	if (!(d = opendir("/proc/self/task")))
		return;
	while ((de = readdir(d))) {
		char path[64 + sizeof(de->d_name)], buf[4096], *p, *end;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		if (apx_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		for (p = buf;; p = end) {
			unsigned long long pid = strtoull(p, &end, 10);
			unsigned i;

			if (end == p || !pid)
				break;
			for (i = 0; i < nseen && seen[i] != pid; i++)
				;
			if (i < nseen)
				continue;
			if (nseen < CHILDREN_MAX)
				seen[nseen++] = pid;
			add_process(w, ts_ns, pid, self);
		}
	}
	closedir(d);
}

/* ---- the CPU sampler as a collector source ------------------------------------------------ */

static int cpu_start(struct apx_collector *c)
{
	return c->off & APX_F_CPU ? -1 : 0;
}

#define EARLY_NS 10000000000ull	/* the first 10 s of the writer ... */
#define EARLY_EVERY_NS 100000000ull	/* ... sample every 100 ms, then once a flush period */

/* A sample at the first drain, every 100 ms for 10 s (set-up is where large host buffers are
 * made, copied to the GPU and kept or freed: redundant-replication reads the RSS on either side
 * of those copies, and short programs end before a 1 s period), then each flush period. */
static void cpu_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	static uint64_t first_ns, last_ns;

	if (c->off & APX_F_CPU)
		return;
	if (!first_ns)
		first_ns = now_ns;
	if (periodic || !last_ns ||
	    (now_ns - first_ns < EARLY_NS && now_ns - last_ns >= EARLY_EVERY_NS)) {
		apx_proc_sample(c->w, now_ns);
		last_ns = now_ns;
	}
	if (periodic)
		apx_proc_children(c->w, now_ns);
}

static void cpu_finish(struct apx_collector *c, uint64_t now_ns)
{
	if (c->off & APX_F_CPU)
		return;
	apx_proc_sample(c->w, now_ns);
	apx_proc_children(c->w, now_ns);
	apx_proc_threads(c->w, now_ns);
}

const struct apx_source apx_source_cpu = {
	.name = "cpu",
	.start = cpu_start,
	.drain = cpu_drain,
	.finish = cpu_finish,
};
