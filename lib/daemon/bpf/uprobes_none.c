/*
 * uprobes_none.c - nvperfd's eBPF uprobes when the build had no clang/bpftool/libbpf (see
 * lib/daemon/CMakeLists.txt): every entry point says "not in this build". Called by tracker.c
 * and main.c like bpf/uprobes.c.
 */
#include <errno.h>
#include <stdio.h>

#include "daemon/daemon.h"

#include "base/banned.h"

int apx_uprobes_compiled(void)
{
	return 0;
}

struct apx_uprobes *apx_uprobes_open(char *why, size_t cap)
{
	snprintf(why, cap, "this nvperfd was built without BPF (clang, bpftool or libbpf were "
		 "missing at build time)");
	return NULL;
}

void apx_uprobes_close(struct apx_uprobes *u)
{
	(void)u;
}

int apx_uprobes_fd(struct apx_uprobes *u)
{
	(void)u;
	return -ENOTSUP;
}

int apx_uprobes_attach(struct apx_uprobes *u, struct apx_proc *p, const char *path,
		       uint64_t max_rate, int copy_time, char *why, size_t cap)
{
	(void)copy_time;
	(void)u;
	(void)p;
	(void)path;
	(void)max_rate;
	snprintf(why, cap, "not in this build");
	return -ENOTSUP;
}

void apx_uprobes_detach(struct apx_uprobes *u, struct apx_proc *p)
{
	(void)u;
	(void)p;
}

void apx_uprobes_forget(struct apx_uprobes *u, struct apx_proc *p)
{
	(void)u;
	(void)p;
}

int apx_uprobes_drain(struct apx_uprobes *u, struct apx_daemon *d)
{
	(void)u;
	(void)d;
	return 0;
}
