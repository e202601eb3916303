/*
 * bench-report.c - `bench/report`: writes a trace of 10 million kernels and 1 million copies
 * shaped like a training loop (64 kernels per step on 2 streams, 6 host<->device copies per
 * step, pageable and pinned, a sync per step), then times `apx report` on it as a child
 * process and reads its peak RSS (wait4). Prints both beside the targets: <= 3 s; memory
 * <= 2x the file size, and, since every event is kept in the event store,
 * <= the peak before the store plus 2x the file size (the peak before: 241.6 MB on this trace,
 * bench/RESULTS.md 2026-11-30; APX_BENCH_BASE_MB overrides it).
 * Usage: bench-report APX [KERNELS] [FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>

#include "base/parse.h"

#include "base/banned.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_trace(const char *path, uint64_t nkernels)
{
	struct apx_writer *w;
	struct apx_rec h, k, c, s, d;
	uint32_t names[64];
	uint64_t t = 1000000000ull, seed = 88172645463325252ull;
	int r;

	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "bench-report");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_START_NS] = t;
	r = apx_writer_open(path, 1, &h, NULL, &w);
	if (r < 0)
		return r;
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H200");
	d.v[APX_DEVICE_MEM_BYTES] = 150000000000ull;
	d.v[APX_DEVICE_PCIE_GEN] = 5;
	d.v[APX_DEVICE_PCIE_WIDTH] = 16;
	apx_writer_add(w, &d);
	for (int i = 0; i < 64; i++) {
		char name[96];
		int len = snprintf(name, sizeof(name), "_ZN2at6native29vectorized_elementwise_kernelILi%dEEvv", i);

		apx_writer_intern(w, name, (size_t)len, &names[i]);
	}
	apx_rec_init(&k, APX_REC_KERNEL);
	apx_rec_init(&c, APX_REC_MEMCPY);
	apx_rec_init(&s, APX_REC_SYNC);
	k.v[APX_KERNEL_BLOCK_X] = 256;
	k.v[APX_KERNEL_GRID_X] = 1024;
	for (uint64_t i = 0; i < nkernels && r == 0; i++) {
		uint64_t dur;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		dur = 3000 + seed % 60000;
		if (i % 64 == 0) {	/* step boundary: copies in, a sync */
			for (int j = 0; j < 6; j++) {
				c.v[APX_MEMCPY_START_NS] = t;
				c.v[APX_MEMCPY_END_NS] = t + 20000 + seed % 5000;
				c.v[APX_MEMCPY_COPY_KIND] = j < 5 ? APX_COPY_H2D : APX_COPY_D2H;
				c.v[APX_MEMCPY_SRC_KIND] = j % 2 ? APX_MEM_PINNED : APX_MEM_PAGEABLE;
				c.v[APX_MEMCPY_DST_KIND] = APX_MEM_DEVICE;
				c.v[APX_MEMCPY_BYTES] = 1 << 20;
				c.v[APX_MEMCPY_HOST_ADDR] = 0x7f0000000000ull + (uint64_t)j * 4096;
				c.v[APX_MEMCPY_STREAM] = 7;
				c.v[APX_MEMCPY_CORRELATION] = i * 8 + (uint64_t)j;
				r = apx_writer_add(w, &c);
				t = c.v[APX_MEMCPY_END_NS] + 2000;
			}
			s.v[APX_SYNC_START_NS] = t - 30000;
			s.v[APX_SYNC_END_NS] = t + 1000;
			s.v[APX_SYNC_KIND] = APX_SYNC_KIND_STREAM;
			apx_writer_add(w, &s);
		}
		k.v[APX_KERNEL_START_NS] = t;
		k.v[APX_KERNEL_END_NS] = t + dur;
		k.v[APX_KERNEL_STREAM] = i % 9 ? 7 : 13;
		k.v[APX_KERNEL_CORRELATION] = i * 8 + 7;
		k.v[APX_KERNEL_NAME] = names[i % 64];
		k.v[APX_KERNEL_REGISTERS] = 16 + i % 64;
		r = apx_writer_add(w, &k);
		t += dur + 1500 + seed % 4000;
	}
	if (r < 0) {
		apx_writer_abandon(w);
		return r;
	}
	return apx_writer_close(w, t, 0);
}

int main(int argc, char **argv)
{
	const char *apx = argc > 1 ? argv[1] : "build/release/apx";
	const char *path = argc > 3 ? argv[3] : "/tmp/apx-bench-report.apx";
	uint64_t n = 10000000, t0, elapsed;
	struct rusage ru;
	struct stat st;
	pid_t pid;
	int status, r;

	if (argc > 2 && apx_parse_u64(argv[2], 1000000000, &n) < 0) {
		fprintf(stderr, "usage: bench-report APX [KERNELS] [FILE]\n");
		return 2;
	}
	r = write_trace(path, n);
	if (r < 0 || stat(path, &st) < 0) {
		fprintf(stderr, "bench-report: cannot write %s: %s\n", path, strerror(r < 0 ? -r : errno));
		return 1;
	}
	t0 = now_ns();
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		execl(apx, apx, "report", "--color", "never", path, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench-report: '%s report' failed (status %d)\n", apx, status);
		return 1;
	}
	elapsed = now_ns() - t0;
	printf("bench/report: %llu kernels, %llu copies, file %.1f MB\n", (unsigned long long)n,
	       (unsigned long long)((n + 63) / 64 * 6), (double)st.st_size / 1e6);
	printf("  %-30s %12s %12s %6s\n", "measure", "value", "target", "met");
	printf("  %-30s %12.2f %12s %6s\n", "apx report wall time, s", (double)elapsed / 1e9, "<= 3",
	       elapsed <= 3000000000ull ? "yes" : "NO");
	printf("  %-30s %12.1f %12.1f %6s\n", "apx report peak RSS, MB", (double)ru.ru_maxrss / 1e3,
	       2.0 * (double)st.st_size / 1e6,
	       (double)ru.ru_maxrss * 1024 <= 2.0 * (double)st.st_size ? "yes" : "NO");
	{
		const char *b = getenv("APX_BENCH_BASE_MB");
		double base = b && *b ? strtod(b, NULL) : 241.6;
		double budget = base + 2.0 * (double)st.st_size / 1e6;

		printf("  %-30s %12.1f %12.1f %6s\n", "  with the event store, MB", (double)ru.ru_maxrss / 1e3,
		       budget, (double)ru.ru_maxrss / 1e3 <= budget ? "yes" : "NO");
	}
	printf("  %-30s %12.2f\n", "peak RSS / file size", (double)ru.ru_maxrss * 1024 / (double)st.st_size);
	if (!getenv("APX_BENCH_KEEP"))
		unlink(path);
	return 0;
}
