/*
 * cuda_sym.c - a symbol of the CUDA driver the program has already loaded (libcuda.so.1),
 * looked up, not linked: the collector links no libcuda, and the program's runtime opens it
 * with RTLD_LOCAL, so dlsym(RTLD_DEFAULT, ...) does not see it (the device record's
 * persisting-L2 size read 0 on the H200 that way). Called by encode.c (device attributes) and
 * src_pmsampling.c (the writer thread's current context); never on an application thread's
 * hot path.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "collector/collector.h"

#include "base/banned.h"

/* Called from the writer and from application threads (l2_sweep.c): the handle is published
 * once with an atomic; two first callers both dlopen the same loaded library, which is
 * harmless (RTLD_NOLOAD only takes a reference). */
void *apx_cuda_sym(const char *name)
{
	static _Atomic(void *) lib;
	void *h = atomic_load_explicit(&lib, memory_order_acquire);

	if (!h) {
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (!h)
			h = RTLD_DEFAULT;
		atomic_store_explicit(&lib, h, memory_order_release);
	}
	return dlsym(h, name);
}
