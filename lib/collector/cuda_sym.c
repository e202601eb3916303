/*
 * cuda_sym.c - a symbol of the CUDA driver the program has already loaded (libcuda.so.1),
 * looked up, not linked: the collector links no libcuda, and the program's runtime opens it
 * with RTLD_LOCAL, so dlsym(RTLD_DEFAULT, ...) does not see it (the device record's
 * persisting-L2 size read 0 on the H200 that way). Called by encode.c (device attributes) and
 * src_pmsampling.c (the writer thread's current context); never on an application thread's
 * hot path.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "collector/collector.h"

#include "base/banned.h"

void *apx_cuda_sym(const char *name)
{
	static void *lib;

	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		lib = RTLD_DEFAULT;
	return dlsym(lib, name);
}
