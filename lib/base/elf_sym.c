/*
 * elf_sym.c - symbols of an ELF file mapped into another process (see elf_sym.h). Called by
 * apx attach (lib/pystack/remote.c, cli/attach_inject.c) on its main thread. The file is
 * untrusted: every offset and length is checked against its size.
 */
#include "base/elf_sym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/banned.h"

static int in_file(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* The symbols of one ELF file (already mapped): 0, or -ENOEXEC. */
static int elf_syms(const uint8_t *m, size_t size, uintptr_t bias_base, struct apx_elf_sym *syms,
		    size_t n, unsigned *ret_machine)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
	const Elf64_Shdr *sh;
	uint64_t first_vaddr = 0;
	uintptr_t bias;
	int have_load = 0;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) ||
	    (eh->e_shnum &&
	     (eh->e_shentsize != sizeof(Elf64_Shdr) ||
	      !in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))))
		return -ENOEXEC;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(m + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && ph->p_offset == 0) {
			first_vaddr = ph->p_vaddr;
			have_load = 1;
			break;
		}
	}
	if (!have_load)
		return -ENOEXEC;
	if (ret_machine)
		*ret_machine = eh->e_machine;
	bias = bias_base - (uintptr_t)(first_vaddr & ~(uint64_t)0xfff);
	sh = (const Elf64_Shdr *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *s = &sh[i], *strs;

		if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) ||
		    s->sh_link >= eh->e_shnum || s->sh_entsize != sizeof(Elf64_Sym) ||
		    !in_file(size, s->sh_offset, s->sh_size))
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
			for (size_t j = 0; j < n; j++)
				if (!strcmp(name, syms[j].name))
					syms[j].addr = (uintptr_t)y->st_value + bias;
		}
	}
	return 0;
}

int apx_elf_lookup(pid_t pid, const char *path, uintptr_t map_start, struct apx_elf_sym *syms,
		   size_t n, unsigned *ret_machine)
{
	char full[PATH_MAX + 32];
	struct stat st;
	void *m;
	int fd = -1, r, len;

	for (size_t j = 0; j < n; j++)
		syms[j].addr = 0;
	len = snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
	if (pid > 0 && len > 0 && (size_t)len < sizeof(full))	/* too long for the root: as is */
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
	r = elf_syms(m, (size_t)st.st_size, map_start, syms, n, ret_machine);
	munmap(m, (size_t)st.st_size);
	return r;
}
