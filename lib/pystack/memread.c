/*
 * memread.c - copying reads of this process's own memory (process_vm_readv on our pid): a
 * bad address gives -EFAULT instead of a fault, so frames, code objects and strings that
 * another thread may free under us can be read without the GIL (Echion's and CPython's own
 * remote unwinder's method). Any thread; no allocation. apx attach --python-only points the
 * same reads at another process (apx_py_set_pid); the collector never does.
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pystack/pystack.h"

#include "base/banned.h"

static pid_t g_pid;		/* 0 = this process */

void apx_py_set_pid(pid_t pid)
{
	g_pid = pid;
}

static pid_t target(void)
{
	return g_pid ? g_pid : getpid();
}

int apx_py_read(uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	ssize_t r;

	if (!len)
		return 0;
	if (!addr)
		return -EFAULT;
	r = process_vm_readv(target(), &local, 1, &remote, 1, 0);
	return r == (ssize_t)len ? 0 : -EFAULT;
}

int apx_py_readv(const struct apx_py_iov *v, size_t n)
{
	struct iovec local[64], remote[64];
	size_t done = 0;

	while (done < n) {
		size_t k = n - done < 64 ? n - done : 64, want = 0;
		ssize_t r;

		for (size_t i = 0; i < k; i++) {
			local[i].iov_base = v[done + i].dst;
			local[i].iov_len = v[done + i].len;
			remote[i].iov_base = (void *)v[done + i].addr;
			remote[i].iov_len = v[done + i].len;
			want += v[done + i].len;
			if (!v[done + i].addr)
				return -EFAULT;
		}
		r = process_vm_readv(target(), local, k, remote, k, 0);
		if (r != (ssize_t)want)
			return -EFAULT;
		done += k;
	}
	return 0;
}
