/*
 * fakelibs.c - libcublas_apxfake.so (FAKE_CUBLAS) and libcudnn_apxfake.so (FAKE_CUDNN),
 * stand-ins for cuBLAS and cuDNN in the test of libapx-watch.so's library calls (libcalls.c;
 * ctest libcalls), named as the wrappers look for the libraries: the same exported names,
 * each sleeping a known time and checking one of its arguments arrived (the wrappers must
 * pass every argument on). cublasGemmEx calls cublasLtMatmul through the PLT, as cuBLAS
 * calls cuBLASLt: the wrapper must record only the outer call.
 */
#include <stddef.h>
#include <time.h>

#include "fakelibs.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

#ifdef FAKE_CUBLAS
EXPORT int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *ad,
			  const void *B, void *bd, const void *beta, const void *C, void *cd,
			  void *D, void *dd, const void *algo, void *ws, size_t wsbytes,
			  void *stream)
{
	sleep_ms(2);
	return wsbytes == 12345 && stream == (void *)0x77 ? 0 : 7;
}

EXPORT int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
			const void *A, int at, int lda, const void *B, int bt, int ldb,
			const void *beta, void *C, int ct, int ldc, int comp, int algo)
{
	sleep_ms(1);
	if (algo != 99 || m != 3)
		return 7;
	return cublasLtMatmul(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			      NULL, NULL, NULL, 12345, (void *)0x77);
}

#endif

#ifdef FAKE_CUDNN
EXPORT int cudnnBackendExecute(void *h, void *plan, void *pack)
{
	sleep_ms(3);
	return pack == (void *)0x55 ? 0 : 7;
}
#endif
