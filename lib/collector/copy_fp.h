/*
 * copy_fp.h - the content fingerprint of a host->device copy's host source (copy_fp.c), taken
 * by the copy callbacks (src_callbacks.c) when the copy call returns; tested by
 * tests/gpu/test_copy_fp.c and mirrored in tests/gpu/check_facts.py. Depends on nothing of CUDA.
 */
#ifndef APX_COLLECTOR_COPY_FP_H
#define APX_COLLECTOR_COPY_FP_H

#include <stdint.h>

#define APX_COPY_FP_SAMPLES 4u		/* samples of a buffer over APX_COPY_FP_WHOLE */
#define APX_COPY_FP_SAMPLE 64u		/* bytes of each */
#define APX_COPY_FP_WHOLE (APX_COPY_FP_SAMPLES * APX_COPY_FP_SAMPLE)

/*
 * A 64-bit hash of bytes and of a few fixed samples of the `bytes` bytes at p: all of them up to
 * APX_COPY_FP_WHOLE, else 4 x 64 bytes (the first, the last, and two at 1/3 and 2/3 of the
 * buffer, those two on 64-byte boundaries), so at most 6 cache lines are read. Never 0 (0 is
 * "not recorded"), 0 for bytes == 0. A fingerprint, not a proof: two contents equal at the
 * samples have the same one. No allocation, no lock, no system call; reads only inside
 * [p, p + bytes).
 */
uint64_t apx_copy_fp(const void *p, uint64_t bytes);

#endif
