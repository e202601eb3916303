/*
 * execstorm.c - exec storm generator for the nvperfd test and benchmark: for SECONDS seconds,
 * keep up to CONCURRENCY children running, each a posix_spawn (vfork + exec) of PROGRAM (default /bin/true),
 * and print how many were started and the rate. Used by tests/daemon/test-storm.sh and
 * bench/daemon/run.sh.
 */
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/banned.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long started = 0, failed = 0;
	unsigned long conc = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0;
	const char *prog = argc > 3 ? argv[3] : "/bin/true";
	double t0, end, t;
	unsigned running = 0;

	if (argc < 2 || !(secs > 0 && secs < 3600) || !conc || conc > 1024) {
		fprintf(stderr, "usage: apx-execstorm SECONDS [CONCURRENCY [PROGRAM]]\n");
		return 2;
	}
	t0 = now_s();
	end = t0 + secs;
	while ((t = now_s()) < end || running) {
		if (t < end && running < conc) {
			char *args[] = { (char *)(uintptr_t)prog, NULL };
			pid_t pid;

			if (posix_spawn(&pid, prog, NULL, NULL, args, environ) != 0) {
				failed++;
			} else {
				running++;
				started++;
			}
			continue;
		}
		if (wait(NULL) > 0)
			running--;
		else if (errno == ECHILD)
			running = 0;
	}
	t = now_s() - t0;
	printf("execstorm: %llu processes in %.2f s = %.0f/s (%llu fork failures)\n",
	       started, t, (double)started / t, failed);
	return 0;
}
