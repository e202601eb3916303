/*
 * fakecuda.c - a stand-in libcuda.so.1 for the uprobe test (test-uprobes.sh): it exports the
 * driver functions nvperfd probes, with their real signatures, and does nothing but hand out
 * host memory for the pinned allocations. Built by tests/daemon/CMakeLists.txt as
 * fakecuda/libcuda.so.1 and loaded by fakecuda.py through ctypes.
 */
#include <stddef.h>
#include <stdlib.h>

#include "base/banned.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUstream_st *CUstream;

#define API __attribute__((visibility("default"), noinline))

API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags);
API CUresult cuMemAllocHost_v2(void **pp, size_t bytes);
API CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags);
API CUresult cuMemFreeHost(void *p);
API CUresult cuMemHostUnregister(void *p);
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s);
API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s);
API CUresult cuCtxSetLimit(int limit, size_t value);
API CUresult cuCtxResetPersistingL2Cache(void);
API CUresult cuStreamSetAttribute(CUstream s, int attr, const void *value);

volatile unsigned long long apx_fakecuda_sink;	/* keeps the bodies from being folded */

API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
	*pp = malloc(bytes);
	apx_fakecuda_sink += flags;
	return *pp ? 0 : 2;
}

API CUresult cuMemAllocHost_v2(void **pp, size_t bytes)
{
	*pp = malloc(bytes);
	return *pp ? 0 : 2;
}

API CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
	apx_fakecuda_sink += (unsigned long long)p + bytes + flags;
	return 0;
}

API CUresult cuMemFreeHost(void *p)
{
	free(p);
	return 0;
}

API CUresult cuMemHostUnregister(void *p)
{
	apx_fakecuda_sink += (unsigned long long)p;
	return 0;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	apx_fakecuda_sink += dst + (unsigned long long)src + n;
	return 0;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	apx_fakecuda_sink += dst + (unsigned long long)src + n + (unsigned long long)s;
	return 0;
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	apx_fakecuda_sink += (unsigned long long)dst + src + n;
	return 0;
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	apx_fakecuda_sink += (unsigned long long)dst + src + n + (unsigned long long)s;
	return 0;
}

API CUresult cuCtxSetLimit(int limit, size_t value)
{
	apx_fakecuda_sink += (unsigned long long)limit + value;
	return 0;
}

API CUresult cuCtxResetPersistingL2Cache(void)
{
	apx_fakecuda_sink++;
	return 0;
}

API CUresult cuStreamSetAttribute(CUstream s, int attr, const void *value)
{
	apx_fakecuda_sink += (unsigned long long)s + (unsigned long long)attr +
			     (unsigned long long)value;
	return 0;
}
