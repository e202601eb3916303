/*
 * attach_nvperfd.h - nvperfd's view of a process as the nvperfd.* key/values of its summary
 * files, for `apx attach --python-only` (attach_nvperfd.c; called by cmd_attach.c).
 */
#ifndef APX_CLI_ATTACH_NVPERFD_H
#define APX_CLI_ATTACH_NVPERFD_H

#include <errno.h>
#include <sys/types.h>

typedef void (*apx_attach_kv_fn)(void *ctx, const char *key, const char *value);

/* Ask nvperfd (its socket: $NVPERFD_SOCKET or the default) for pid's status and hand each
 * key/value to add: nvperfd.source, nvperfd.cuda, nvperfd.uprobes, nvperfd.h2d.*,
 * nvperfd.nvml and nvperfd.gpu.* as nvperfd knows them. 0; else one "nvperfd" key saying why
 * and -errno (no daemon: -ENOENT/-ECONNREFUSED; the process not tracked: -ESRCH). */
int apx_attach_nvperfd(pid_t pid, apx_attach_kv_fn add, void *ctx);

#endif
