/*
 * procfs.h - the /proc readers the collector (lib/collector/proc.c), nvperfd
 * (lib/daemon/procfs.c) and apx attach (cli/attach_gpu.c) share: read a small file whole, take
 * the number after a key in /proc/PID/status text, find a mapped file, find an open NVIDIA
 * device file. No allocation but stdio's; any thread.
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
/* The first file in /proc/PID/maps whose base name starts with prefix, deleted ones skipped:
 * 1 and its path in buf (when buf is not NULL and it fits in cap), 0 when none, or -errno. */
int apx_proc_maps_find(pid_t pid, const char *prefix, char *buf, size_t cap);
/* 1 when the process has an NVIDIA device file open (/dev/nvidia*; numbered: only
 * /dev/nvidiaN, a GPU's, which a CUDA context opens), 0 when not, or -errno. */
int apx_proc_has_nvidia_fd(pid_t pid, int numbered);

#endif
