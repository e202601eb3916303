/*
 * varint.h - LEB128 unsigned varints and zigzag signed mapping, as used by the .apx record
 * encoding (docs/format.md §4). Header-only, no allocation; the decoder is bounds-checked
 * because its input is untrusted.
 */
#ifndef APX_BASE_VARINT_H
#define APX_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define APX_VARINT_MAX 10

static inline uint64_t apx_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t apx_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Write v at p (room for APX_VARINT_MAX bytes needed); returns the new end. */
static inline uint8_t *apx_varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline size_t apx_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Read a varint from [*pp, end). Returns 0 and advances *pp, or -1 when the bytes run out or
 * the value is longer than 10 bytes / overflows 64 bits. */
static inline int apx_varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *ret_v)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	if (p < end && *p < 0x80) {	/* the common one-byte case */
		*ret_v = *p;
		*pp = p + 1;
		return 0;
	}
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (p >= end)
			return -1;
		b = *p++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret_v = v;
			*pp = p;
			return 0;
		}
	}
	return -1;
}

#endif
