/*
 * probe.c - libapx-pyprobe.so, lib/pystack loaded into a real python3 with ctypes
 * (tests/pystack/check.py): the calling thread's own frames by direct loads and by copying
 * reads, and every thread's frames by copying reads, written as text lines the test compares
 * with Python's own traceback and sys._current_frames(). Test code only.
 */
#include <stdio.h>
#include <string.h>

#include "pystack/pystack.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))

static struct apx_py_runtime g_rt;
static int g_ok;

EXPORT int apx_probe_init(char *why, size_t cap);
EXPORT int apx_probe_stack(int copy, char *buf, size_t cap);
EXPORT int apx_probe_threads(char *buf, size_t cap);
EXPORT unsigned apx_probe_version(void);

int apx_probe_init(char *why, size_t cap)
{
	int r = apx_py_runtime_find(&g_rt, why, cap);

	g_ok = r == 0;
	return r;
}

unsigned apx_probe_version(void)
{
	return g_rt.L.version_hex;
}

/* "file\tline\tfunc\n" per frame, innermost first. */
static int print_frames(const struct apx_py_raw_frame *f, int n, char *buf, size_t cap)
{
	size_t o = 0;

	for (int i = 0; i < n; i++) {
		struct apx_py_code c;
		int line, w;

		if (apx_py_code_decode(&g_rt, f[i].code, &c) < 0)
			return -1;
		line = apx_py_code_line(&g_rt, &c, f[i].lasti_bytes);
		w = snprintf(buf + o, cap - o, "%s\t%d\t%s\n", c.file, line, c.func);
		if (w < 0 || (size_t)w >= cap - o)
			return -2;
		o += (size_t)w;
	}
	return (int)o;
}

int apx_probe_stack(int copy, char *buf, size_t cap)
{
	struct apx_py_raw_frame f[256];
	uintptr_t ts;
	int n, trunc;

	if (!g_ok)
		return -100;
	ts = (uintptr_t)g_rt.this_thread_state();
	n = copy ? apx_py_walk_copy(&g_rt, ts, f, 256, &trunc) :
		   apx_py_walk_own(&g_rt, ts, f, 256, &trunc);
	if (n < 0)
		return -101;
	return print_frames(f, n, buf, cap);
}

/* "#tid\n" then the thread's frames, for every thread state. */
int apx_probe_threads(char *buf, size_t cap)
{
	struct apx_py_thread t[512];
	size_t o = 0;
	int nt;

	if (!g_ok)
		return -100;
	nt = apx_py_threads(&g_rt, t, 512);
	if (nt < 0)
		return -101;
	for (int i = 0; i < nt; i++) {
		struct apx_py_raw_frame f[256];
		int n, trunc, w;

		w = snprintf(buf + o, cap - o, "#%d\n", (int)t[i].tid);
		if (w < 0 || (size_t)w >= cap - o)
			return -2;
		o += (size_t)w;
		n = apx_py_walk_copy(&g_rt, t[i].tstate, f, 256, &trunc);
		if (n < 0)
			continue;	/* a chain that changed under us: dropped, as the sampler does */
		w = print_frames(f, n, buf + o, cap - o);
		if (w < 0)
			continue;
		o += (size_t)w;
	}
	return (int)o;
}
