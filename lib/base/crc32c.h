/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every .apx chunk. Uses the SSE4.2 crc32
 * instruction when the CPU has it, a slicing-by-8 table otherwise. Thread-safe, AS-safe
 * (no allocation, no locks: the table is built at load time).
 */
#ifndef APX_BASE_CRC32C_H
#define APX_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC of buf; to continue a running CRC pass the previous result as crc (start with 0). */
uint32_t apx_crc32c_update(uint32_t crc, const void *buf, size_t len);

static inline uint32_t apx_crc32c(const void *buf, size_t len)
{
	return apx_crc32c_update(0, buf, len);
}

/* The portable implementation, exposed so tests can check both paths agree. */
uint32_t apx_crc32c_update_sw(uint32_t crc, const void *buf, size_t len);

#endif
