/*
 * gpu_uuid.h - a GPU's 16-byte UUID as the text NVML and nvidia-smi print
 * ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"). Header only, any thread. Used by the collector's
 * NVML sampler (lib/collector/src_nvml.c: NVML handles are looked up by it) and the SQLite
 * exporter (lib/export/sqlite.c: the GPU table's uuid column).
 */
#ifndef APX_BASE_GPU_UUID_H
#define APX_BASE_GPU_UUID_H

#include <stdint.h>
#include <stdio.h>

#define APX_GPU_UUID_TEXT 41	/* "GPU-" + 36 + NUL */

static inline const char *apx_gpu_uuid_text(char buf[APX_GPU_UUID_TEXT], const uint8_t u[16])
{
	snprintf(buf, APX_GPU_UUID_TEXT, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
		 u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return buf;
}

#endif
