/*
 * fakelibs.h - the fake cuBLAS and cuDNN calls of ctest libcalls (fakelibs.c), declared for
 * the libraries and for the module that calls them (fakemod.c): the real names with simplified types
 * (handles and enums as pointers and ints: the same registers in the x86-64 ABI).
 */
#ifndef APX_TESTS_FAKELIBS_H
#define APX_TESTS_FAKELIBS_H

#include <stddef.h>

int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *ad,
		   const void *B, void *bd, const void *beta, const void *C, void *cd, void *D,
		   void *dd, const void *algo, void *ws, size_t wsbytes, void *stream);
int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
		 int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct,
		 int ldc, int comp, int algo);
int cudnnBackendExecute(void *h, void *plan, void *pack);

#endif
