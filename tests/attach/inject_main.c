/*
 * inject_main.c - test-inject-main PID LIB FUNC ARG TIMEOUT_MS: calls apx_attach_inject()
 * (cli/attach_inject.c) once and prints "ok VALUE paused_us US" (exit 0;
 * US: how long the borrowed thread was held) or "error RC WHY" (exit 1);
 * usage errors exit 2. Driven by tests/attach/inject_check.py (ctest attach-inject).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/attach_inject.h"

#include "base/banned.h"

int main(int argc, char **argv)
{
	char why[512], *end1, *end2;
	long pid, timeout_ms;
	int64_t paused_us = 0;
	int value = 0, r;

	if (argc != 6) {
		fprintf(stderr, "usage: %s PID LIB FUNC ARG TIMEOUT_MS\n", argv[0]);
		return 2;
	}
	pid = strtol(argv[1], &end1, 10);
	timeout_ms = strtol(argv[5], &end2, 10);
	if (*end1 || *end2 || pid <= 0 || pid > 0x7fffffff || timeout_ms < 0 ||
	    timeout_ms > 3600000) {
		fprintf(stderr, "%s: bad PID or TIMEOUT_MS\n", argv[0]);
		return 2;
	}
	r = apx_attach_inject((pid_t)pid, argv[2], argv[3], argv[4], (int)timeout_ms, &value,
			      &paused_us, why, sizeof(why));
	if (r < 0) {
		printf("error %d %s\n", r, why);
		return 1;
	}
	printf("ok %d paused_us %lld\n", value, (long long)paused_us);
	return 0;
}
