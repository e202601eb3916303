/*
 * fakemod.c - libapx-fakemod.so, the stand-in for libtorch_cuda.so in ctest libcalls: a module
 * that needs the fake cuBLAS/cuDNN (libcublas_apxfake.so and libcudnn_apxfake.so, DT_NEEDED) and calls them through its
 * PLT, as PyTorch does. libcalls_prog.c dlopens it RTLD_GLOBAL (the libraries then in the
 * global scope: the wrappers find them with RTLD_NEXT) or RTLD_LOCAL (as Python loads
 * extension modules: they are not, and the wrappers must find them by name).
 */
#include <stdint.h>

#include "fakelibs.h"

#include "base/banned.h"

__attribute__((visibility("default"))) int fakemod_work(void);

/* 3 cublasGemmEx (each calling cublasLtMatmul inside), 2 cublasLtMatmul, 1
 * cudnnBackendExecute; 0 when every call's arguments arrived. */
__attribute__((visibility("default"))) int fakemod_work(void)
{
	int bad = 0;

	for (int i = 0; i < 3; i++)
		bad |= cublasGemmEx(NULL, 0, 0, 3, 4, 5, NULL, NULL, 0, 0, NULL, 0, 0, NULL, NULL,
				    0, 0, 0, 99);
	for (int i = 0; i < 2; i++)
		bad |= cublasLtMatmul(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
				      NULL, NULL, NULL, NULL, 12345, (void *)0x77);
	bad |= cudnnBackendExecute(NULL, NULL, (void *)0x55);
	return bad;
}
