/*
 * procfs.h - the two /proc readers the collector (lib/collector/proc.c) and nvperfd
 * (lib/daemon/procfs.c) share: read a small file whole, and take the number after a key in
 * /proc/PID/status text. No allocation; any thread.
 */
#ifndef APX_BASE_PROCFS_H
#define APX_BASE_PROCFS_H

#include <stdint.h>
#include <sys/types.h>

/* Read up to cap-1 bytes of path into buf, NUL-terminated: the length, or -errno. */
ssize_t apx_read_small(const char *path, char *buf, size_t cap);
/* The number after key in status text ("VmRSS:   1234 kB" -> 1234, units as written; a ':'
 * after the key may be part of key or not); 0 when the key is absent. */
uint64_t apx_status_value(const char *text, const char *key);

#endif
