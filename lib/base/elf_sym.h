/*
 * elf_sym.h - the addresses of named symbols of an ELF file mapped into another process, read
 * from the file itself (its .symtab and .dynsym), as that process sees it (through
 * /proc/PID/root). Used by lib/pystack/remote.c (CPython's _PyRuntime) and
 * cli/attach_inject.c (PyEval_SaveThread, dlopen). No allocation beyond a read-only mapping of
 * the file, no logging.
 */
#ifndef APX_BASE_ELF_SYM_H
#define APX_BASE_ELF_SYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct apx_elf_sym {
	const char *name;	/* in: the symbol's name, without a version ("dlopen") */
	uintptr_t addr;		/* out: its address in the process; 0 when the file has none */
};

/* Look up n symbols of the 64-bit ELF file at path, mapped with its file offset 0 at
 * map_start in process pid (pid 0: this process; path is then read as is). The load bias is
 * map_start minus the page of the PT_LOAD at file offset 0. *ret_machine (may be NULL) gets
 * the file's e_machine (EM_X86_64...). 0 (each addr set, 0 when absent), -ENOEXEC when the
 * file is not a 64-bit ELF or is damaged, or another negative errno from open or mmap. */
int apx_elf_lookup(pid_t pid, const char *path, uintptr_t map_start, struct apx_elf_sym *syms,
		   size_t n, unsigned *ret_machine);

#endif
