/*
 * calib_kernels.h - what the launch-timing tools share: the PTX of an empty kernel and of a
 * kernel that spins on the GPU's globaltimer for a given number of ns (it holds the stream so
 * that the GPU never throttles the launches timed behind it), and the median of the samples.
 * Used by apx-calibrate (calibrate.c), the traced process's own measurement (self_cost.c) and
 * the bench's apx-apicost (bench/overhead/apicost.c).
 */
#ifndef APX_COLLECTOR_CALIB_KERNELS_H
#define APX_COLLECTOR_CALIB_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The PTX of the two kernels, named EMPTY and SPIN (string literals): apx-calibrate's and
 * apx-apicost's are apx_empty and apx_spin, the traced process's own (self_cost.c)
 * apx_self_empty and apx_self_spin, so that a trace can tell them apart. */
#define APX_CALIB_PTX(EMPTY, SPIN)                                                            \
	".version 7.0\n.target sm_70\n.address_size 64\n"                                     \
	".visible .entry " EMPTY "()\n{\n\tret;\n}\n"                                          \
	".visible .entry " SPIN "(.param .u64 lim)\n{\n"                                        \
	"\t.reg .u64 %t0, %t1, %d, %l;\n\t.reg .pred %p;\n"                                     \
	"\tld.param.u64 %l, [lim];\n\tmov.u64 %t0, %globaltimer;\n"                             \
	"LOOP:\n\tmov.u64 %t1, %globaltimer;\n\tsub.u64 %d, %t1, %t0;\n"                        \
	"\tsetp.lt.u64 %p, %d, %l;\n\t@%p bra LOOP;\n\tret;\n}\n"

static inline int apx_calib_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0; v is sorted in place). */
static inline uint64_t apx_calib_median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(v[0]), apx_calib_cmp_u64);
	return v[n / 2];
}

#endif
