/*
 * other_malloc.c - libapx-heap-other.so, a stand-in for another allocator (jemalloc, tcmalloc)
 * preloaded before libapx-heap.so in test_heap.py: it defines malloc and free, passing them to
 * the next ones (glibc's), so that the program's malloc is not libapx-heap.so's. Test code.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "base/banned.h"

__attribute__((visibility("default"))) void *malloc(size_t n);
__attribute__((visibility("default"))) void free(void *p);

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void free(void *p)
{
	__libc_free(p);
}
