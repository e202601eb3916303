/*
 * remote.c - finding the CPython interpreter of another process from outside, for apx attach
 * --python-only: nothing is called in the target and nothing in it changes. The python
 * executable or libpython*.so mapped in /proc/PID/maps is read as an ELF file (through
 * /proc/PID/root, so a container's file is the one read); its .symtab or .dynsym gives
 * _PyRuntime, PyCode_Type and Py_Version, plus the load bias of its first mapping. The
 * version is Py_Version read with a copying read (3.11+), else the file's name (python3.X,
 * libpython3.X). 64-bit ELF only (x86-64, aarch64). The caller (cli/cmd_attach.c) logs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pystack/pystack.h"

#include "base/banned.h"

#define MAX_CANDIDATES 8

struct candidate {
	char path[512];
	uintptr_t start;		/* the mapping of file offset 0 */
	int lib;			/* libpython: tried first */
};

struct syms {
	uintptr_t runtime, code_type, py_version;
	uintptr_t first_vaddr;		/* the PT_LOAD at file offset 0 */
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

static int in_file(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* The symbols of one ELF file (already mapped): 0, or -ENOEXEC when it is not a 64-bit ELF
 * of this machine or is damaged. */
static int elf_syms(const uint8_t *m, size_t size, struct syms *ret)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
	const Elf64_Shdr *sh;
	int have_load = 0;

	memset(ret, 0, sizeof(*ret));
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) ||
	    (eh->e_shnum && (eh->e_shentsize != sizeof(Elf64_Shdr) ||
			     !in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))))
		return -ENOEXEC;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(m + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && ph->p_offset == 0) {
			ret->first_vaddr = ph->p_vaddr;
			have_load = 1;
			break;
		}
	}
	if (!have_load)
		return -ENOEXEC;
	sh = (const Elf64_Shdr *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *s = &sh[i], *strs;

		if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_link >= eh->e_shnum ||
		    s->sh_entsize != sizeof(Elf64_Sym) || !in_file(size, s->sh_offset, s->sh_size))
			continue;
		strs = &sh[s->sh_link];
		if (!in_file(size, strs->sh_offset, strs->sh_size))
			continue;
		for (uint64_t k = 0; k < s->sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *y = (const Elf64_Sym *)(m + s->sh_offset) + k;
			const char *name;

			if (!y->st_value || y->st_shndx == SHN_UNDEF || y->st_name >= strs->sh_size)
				continue;
			name = (const char *)m + strs->sh_offset + y->st_name;
			if (strnlen(name, strs->sh_size - y->st_name) == strs->sh_size - y->st_name)
				continue;
			if (!strcmp(name, "_PyRuntime"))
				ret->runtime = y->st_value;
			else if (!strcmp(name, "PyCode_Type"))
				ret->code_type = y->st_value;
			else if (!strcmp(name, "Py_Version"))
				ret->py_version = y->st_value;
		}
	}
	return 0;
}

/* Map the candidate's file as the target sees it and read its symbols. */
static int file_syms(pid_t pid, const char *path, struct syms *ret)
{
	char full[PATH_MAX + 32];
	struct stat st;
	void *m;
	int fd = -1, r, n;

	n = snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
	if (n > 0 && (size_t)n < sizeof(full))	/* a path too long for the target's root: as is */
		fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return -ENOEXEC;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	r = elf_syms(m, (size_t)st.st_size, ret);
	munmap(m, (size_t)st.st_size);
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
		if (file_syms(pid, c[i].path, &y) == 0 && y.runtime && y.code_type)
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
	rt.runtime = y.runtime + (hit->start - (y.first_vaddr & ~(uintptr_t)0xfff));
	rt.code_type = y.code_type + (hit->start - (y.first_vaddr & ~(uintptr_t)0xfff));
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
		if (apx_py_read(y.py_version + (hit->start - (y.first_vaddr & ~(uintptr_t)0xfff)),
				&pv, sizeof(pv)) == 0)
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
