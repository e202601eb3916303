/*
 * copy_fp.c - the content fingerprint of a host->device copy's host source (copy_fp.h): called
 * by src_callbacks.c on the application thread at the copy call's exit, so it reads a few
 * cache lines and nothing else. The mix is xxHash64's round and avalanche (constants from its
 * specification); the layout of the samples is documented in docs/collector.md and mirrored in
 * tests/gpu/check_facts.py (copy_fp), which must change with it.
 */
#include "collector/copy_fp.h"

#include <string.h>

#include "base/banned.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull

static uint64_t rotl(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t round64(uint64_t h, uint64_t w)
{
	return rotl(h ^ (w * P2), 31) * P1;
}

/* n bytes at p into h, 8 at a time (little-endian words; a short tail zero-padded). */
static uint64_t mix_bytes(uint64_t h, const unsigned char *p, uint64_t n)
{
	uint64_t w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);	/* unaligned-safe; compiles to one load */
		h = round64(h, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = round64(h, w);
	}
	return h;
}

uint64_t apx_copy_fp(const void *p, uint64_t bytes)
{
	const unsigned char *b = p;
	uint64_t h = P3 ^ (bytes * P1);

	if (!bytes)
		return 0;
	if (bytes <= APX_COPY_FP_WHOLE) {
		h = mix_bytes(h, b, bytes);
	} else {
		uint64_t span = bytes - APX_COPY_FP_SAMPLE;	/* where a sample may start */

		for (unsigned k = 0; k < APX_COPY_FP_SAMPLES; k++) {
			uint64_t off = span / (APX_COPY_FP_SAMPLES - 1) * k;

			/* the inner samples start on a 64-byte boundary (one cache line each);
			 * off >= span / 3 >= 64 there, so off stays >= 0 */
			if (k && k < APX_COPY_FP_SAMPLES - 1)
				off -= ((uintptr_t)b + off) & (APX_COPY_FP_SAMPLE - 1);
			if (k == APX_COPY_FP_SAMPLES - 1)
				off = span;
			h = mix_bytes(h, b + off, APX_COPY_FP_SAMPLE);
		}
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h ? h : 1;
}
