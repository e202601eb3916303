/*
 * attach_nvperfd.c - what nvperfd watches of a process, for `apx attach PID --python-only`
 * (cmd_attach.c): at the end of the sampling it asks nvperfd's control socket for its status
 * (lib/daemon/ctl_client.c) and turns the process's "proc" line into the nvperfd.* key/values
 * its own summary files carry (lib/daemon/summary.c), so that apx report shows the process's
 * CUDA use, uprobe copy counters and NVML readings beside the stacks. Without a daemon (or
 * without the process in its list) one nvperfd key says why. Values are nvperfd's over the
 * process's life so far, not only the sampled window (nvperfd.source says so).
 */
#include "cli/attach_nvperfd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apx/ctl_proto.h>

#include "daemon/ctl_client.h"

#include "base/banned.h"

/* A numeric field as nvperfd sent it: NULL when absent or "-" (not known). */
static const char *known(char **f, int n, int i)
{
	return i < n && f[i] && *f[i] && strcmp(f[i], "-") ? f[i] : NULL;
}

static void put(apx_attach_kv_fn add, void *ctx, const char *key, const char *val)
{
	if (val)
		add(ctx, key, val);
}

/* The pid's "proc" line (n fields) as key/values. */
static void proc_kvs(char *f[], int n, apx_attach_kv_fn add, void *ctx)
{
	const char *samples = known(f, n, APX_CTL_PROC_GPU_SAMPLES);

	add(ctx, "nvperfd.source", "apx attach --python-only: nvperfd's status of the process "
	    "at the end of the sampling (its life so far, not only the sampled window)");
	add(ctx, "nvperfd.cuda", known(f, n, APX_CTL_PROC_CUDA) &&
	    !strcmp(f[APX_CTL_PROC_CUDA], "1") ? "yes" : "not seen");
	put(add, ctx, "nvperfd.uprobes", n > APX_CTL_PROC_UPROBES ? f[APX_CTL_PROC_UPROBES] : NULL);
	put(add, ctx, "nvperfd.h2d.pageable.bytes", known(f, n, APX_CTL_PROC_H2D_PAGEABLE_BYTES));
	put(add, ctx, "nvperfd.h2d.pinned.bytes", known(f, n, APX_CTL_PROC_H2D_PINNED_BYTES));
	put(add, ctx, "nvperfd.h2d.pageable.call_ns",
	    known(f, n, APX_CTL_PROC_H2D_PAGEABLE_CALL_NS));
	if (n <= APX_CTL_PROC_GPU_SAMPLES)
		add(ctx, "nvperfd.nvml", "n/a (an older nvperfd: no NVML fields)");
	else if (!samples)
		add(ctx, "nvperfd.nvml", "unavailable (nvperfd has no NVML)");
	else if (!strcmp(samples, "0"))
		add(ctx, "nvperfd.nvml", "process not seen on a GPU");
	else
		add(ctx, "nvperfd.nvml", "yes");
	if (!samples || !strcmp(samples, "0"))
		return;
	put(add, ctx, "nvperfd.gpu.device", known(f, n, APX_CTL_PROC_GPU_DEVICE));
	add(ctx, "nvperfd.gpu.samples", samples);
	put(add, ctx, "nvperfd.gpu.idle_samples", known(f, n, APX_CTL_PROC_GPU_IDLE_SAMPLES));
	put(add, ctx, "nvperfd.gpu.mem_peak_bytes", known(f, n, APX_CTL_PROC_GPU_MEM_BYTES));
	put(add, ctx, "nvperfd.gpu.sm_util_pct", known(f, n, APX_CTL_PROC_SM_UTIL_PCT));
}

int apx_attach_nvperfd(pid_t pid, apx_attach_kv_fn add, void *ctx)
{
	const char *sock = apx_ctl_default_socket();
	char err[256], *buf = NULL, *line, *next, want[24], why[320];
	size_t len = 0;
	int r, found = 0;

	r = apx_ctl_request(sock, "status", &buf, &len, err, sizeof(err));
	if (r < 0) {
		snprintf(why, sizeof(why), "n/a (%s)", r == -ENOENT || r == -ECONNREFUSED
			 ? "nvperfd is not running" : err[0] ? err : "its socket did not answer");
		add(ctx, "nvperfd", why);
		return r;
	}
	snprintf(want, sizeof(want), "%d", (int)pid);
	for (line = buf; line && *line && !found; line = next) {
		char *f[APX_CTL_PROC__COUNT + 1];
		int n;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "proc\t", 5))
			continue;
		n = apx_ctl_split(line + 5, f, APX_CTL_PROC__COUNT);
		if (n >= APX_CTL_PROC__MIN && !strcmp(f[APX_CTL_PROC_PID], want)) {
			proc_kvs(f, n, add, ctx);
			found = 1;
		}
	}
	free(buf);
	if (!found)
		add(ctx, "nvperfd", "n/a (nvperfd does not track this process: not Python, or "
		    "another user's)");
	return found ? 0 : -ESRCH;
}
