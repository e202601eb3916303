/*
 * remote.c - finding the CPython interpreter of another process from outside, for apx attach
 * --python-only: nothing is called in the target and nothing in it changes. The python
 * executable or libpython*.so mapped in /proc/PID/maps is read as an ELF file (through
 * /proc/PID/root, so a container's file is the one read: lib/base/elf_sym.c); its .symtab or
 * .dynsym gives _PyRuntime, PyCode_Type and Py_Version, plus the load bias of its first
 * mapping. apx_py_symbol_find_pid gives any other symbol of it (cli/attach_inject.c). The
 * version is Py_Version read with a copying read (3.11+), else the file's name (python3.X,
 * libpython3.X). 64-bit ELF only (x86-64, aarch64). The caller (cli/cmd_attach.c) logs.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/elf_sym.h"
#include "pystack/pystack.h"

#include "base/banned.h"

#define MAX_CANDIDATES 8

struct candidate {
	char path[512];
	uintptr_t start;		/* the mapping of file offset 0 */
	int lib;			/* libpython: tried first */
};

struct syms {
	uintptr_t runtime, code_type, py_version;	/* in the target, load bias applied */
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* python, python3, python3.11, libpython3.11.so.1.0 (not python3.11-config, not .py). */
static int python_file(const char *name, int *ret_lib)
{
	*ret_lib = strncmp(name, "libpython3", 10) == 0;
	if (*ret_lib)
		return strstr(name, ".so") != NULL;
	if (strncmp(name, "python", 6) != 0)
		return 0;
	for (const char *c = name + 6; *c; c++)
		if (!((*c >= '0' && *c <= '9') || *c == '.'))
			return 0;
	return 1;
}

/* X.Y from a name holding "pythonX.Y": PY_VERSION_HEX with micro 0, 0 when none. */
static uint32_t version_of_name(const char *path)
{
	const char *p = strstr(base_name(path), "python");
	unsigned major, minor;

	if (!p || sscanf(p + 6, "%u.%u", &major, &minor) != 2 || major > 9 || minor > 99)
		return 0;
	return (major << 24) | (minor << 16) | 0xf0;
}

/* The python files mapped at file offset 0, libpython first. 0 or a negative errno. */
static int list_candidates(pid_t pid, struct candidate *out, int *ret_n)
{
	char path[64], line[1024];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, off;
		char perms[8];
		int pos = 0, lib, dup = 0;
		const char *file;
		size_t len;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &off, &pos) < 4 ||
		    !pos || line[pos] != '/' || off != 0)
			continue;
		file = line + pos;
		len = strcspn(file, "\n");
		if (len >= sizeof(out[0].path) || strstr(file, " (deleted)"))
			continue;
		line[pos + len] = '\0';
		if (!python_file(base_name(file), &lib))
			continue;
		for (int i = 0; i < n; i++)
			dup |= strcmp(out[i].path, file) == 0;
		if (dup || n == MAX_CANDIDATES)
			continue;
		memcpy(out[n].path, file, len + 1);
		out[n].start = start;
		out[n].lib = lib;
		n++;
	}
	if (ferror(f) && !n) {
		int e = errno ? errno : EIO;

		fclose(f);
		return -e;
	}
	fclose(f);
	/* libpython first: a python executable linked to it holds no _PyRuntime */
	for (int i = 1; i < n; i++)
		if (out[i].lib && !out[0].lib) {
			struct candidate t = out[0];

			out[0] = out[i];
			out[i] = t;
		}
	*ret_n = n;
	return 0;
}

/* The interpreter's symbols in one candidate: 0 when the file is readable as ELF. */
static int file_syms(pid_t pid, const struct candidate *c, struct syms *ret)
{
	struct apx_elf_sym y[] = { { "_PyRuntime", 0 }, { "PyCode_Type", 0 }, { "Py_Version", 0 } };
	int r = apx_elf_lookup(pid, c->path, c->start, y, sizeof(y) / sizeof(y[0]), NULL);

	ret->runtime = y[0].addr;
	ret->code_type = y[1].addr;
	ret->py_version = y[2].addr;
	return r;
}

/* One raw copying read, to tell the kernel's refusals apart: 0 or a negative errno. */
static int probe(pid_t pid, uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (r == (ssize_t)len)
		return 0;
	return r < 0 ? -errno : -EFAULT;
}

int apx_py_runtime_find_pid(pid_t pid, struct apx_py_runtime *ret_rt, char *why, size_t why_cap)
{
	struct candidate c[MAX_CANDIDATES];
	struct apx_py_runtime rt = { 0 };
	struct syms y = { 0 };
	const struct candidate *hit = NULL;
	uint32_t version = 0;
	uint64_t pv = 0;
	int n = 0, r;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH)) {
		snprintf(why, why_cap, "no process %d", (int)pid);
		return -ESRCH;
	}
	r = list_candidates(pid, c, &n);
	if (r == -ENOENT || r == -ESRCH) {
		snprintf(why, why_cap, "no process %d", (int)pid);
		return -ESRCH;
	}
	if (r == -EACCES || r == -EPERM) {
		snprintf(why, why_cap, "not allowed to read process %d's memory map "
			 "(/proc/%d/maps: %s): it belongs to another user, or the ptrace policy "
			 "(kernel.yama.ptrace_scope) forbids it; run apx as its user or as root",
			 (int)pid, (int)pid, strerror(-r));
		return -EPERM;
	}
	if (r < 0) {
		snprintf(why, why_cap, "cannot read /proc/%d/maps: %s", (int)pid, strerror(-r));
		return r;
	}
	for (int i = 0; i < n && !hit; i++) {
		if (file_syms(pid, &c[i], &y) == 0 && y.runtime && y.code_type)
			hit = &c[i];
	}
	if (!hit) {
		for (int i = 0; i < n; i++) {
			uint32_t v = version_of_name(c[i].path);

			if (v && (v >> 24 != 3 || ((v >> 16) & 0xff) < 10)) {
				snprintf(why, why_cap, "process %d runs CPython %u.%u (%s), which apx "
					 "does not read: 3.10 to 3.14 are supported", (int)pid,
					 v >> 24, (v >> 16) & 0xff, c[i].path);
				return -ENOTSUP;
			}
		}
		if (n)
			snprintf(why, why_cap, "process %d maps %s but apx found no _PyRuntime and "
				 "PyCode_Type in it (not CPython, or its symbols are stripped)",
				 (int)pid, c[0].path);
		else
			snprintf(why, why_cap, "process %d is not a Python process (no python "
				 "executable or libpython in its memory map)", (int)pid);
		return n ? -ENOTSUP : -ENOENT;
	}
	rt.runtime = y.runtime;
	rt.code_type = y.code_type;
	r = probe(pid, rt.runtime, &pv, sizeof(pv));
	if (r == -EPERM || r == -EACCES) {
		snprintf(why, why_cap, "not allowed to read process %d's memory (process_vm_readv: "
			 "%s): it belongs to another user, or the ptrace policy "
			 "(kernel.yama.ptrace_scope) forbids it; run apx as its user or as root",
			 (int)pid, strerror(-r));
		return -EPERM;
	}
	if (r == -ESRCH) {
		snprintf(why, why_cap, "no process %d (it ended)", (int)pid);
		return -ESRCH;
	}
	if (r < 0) {
		snprintf(why, why_cap, "cannot read _PyRuntime of process %d (%s in %s)", (int)pid,
			 strerror(-r), hit->path);
		return -ENOTSUP;
	}
	apx_py_set_pid(pid);
	if (y.py_version) {
		pv = 0;
		if (apx_py_read(y.py_version, &pv, sizeof(pv)) == 0)
			version = (uint32_t)pv;
	}
	if (!version)
		version = version_of_name(hit->path);
	if (!version) {
		snprintf(why, why_cap, "cannot tell the CPython version of process %d (no Py_Version "
			 "in %s and no python3.X in its name)", (int)pid, hit->path);
		return -ENOTSUP;
	}
	r = apx_py_runtime_layout(&rt, version, y.py_version != 0, why, why_cap);
	if (r < 0)
		return r;
	*ret_rt = rt;
	return 0;
}

int apx_py_symbol_find_pid(pid_t pid, const char *name, uintptr_t *ret_addr)
{
	struct candidate c[MAX_CANDIDATES];
	int n = 0, r = list_candidates(pid, c, &n);

	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		struct apx_elf_sym y = { name, 0 };

		if (apx_elf_lookup(pid, c[i].path, c[i].start, &y, 1, NULL) == 0 && y.addr) {
			*ret_addr = y.addr;
			return 0;
		}
	}
	return -ENOENT;
}
