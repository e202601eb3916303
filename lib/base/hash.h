/*
 * hash.h - the 64-bit finalizer of MurmurHash3 (fmix64): spreads every input bit over the
 * output, for open-addressing tables keyed by addresses or ids (the heap sampling's sink and
 * view, tests). Pure; any thread.
 */
#ifndef APX_BASE_HASH_H
#define APX_BASE_HASH_H

#include <stdint.h>

static inline uint64_t apx_fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

#endif
