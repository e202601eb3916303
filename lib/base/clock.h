/*
 * clock.h - a clock's time in ns (clock_gettime), for the CLI's commands (analyze, attach,
 * tune), which time runs and samples on CLOCK_MONOTONIC.
 */
#ifndef APX_BASE_CLOCK_H
#define APX_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t apx_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
