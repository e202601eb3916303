/*
 * libcalls.c - cuBLAS and cuDNN calls as ranges on their threads (docs/collector.md,
 * "Library calls"), in libapx-watch.so, which apx analyze preloads into every
 * process of the run. The wrappers below have the exported names and prototypes of the
 * libraries' compute calls (cuBLAS's GEMMs and cublasLtMatmul: those PyTorch 2.11's
 * libtorch_cuda.so imports; cuDNN's cudnnBackendExecute,
 * through which PyTorch's cuDNN frontend runs convolutions and attention, and the legacy
 * convolutions), so the dynamic linker binds the program's calls to them first; each finds
 * the library's own function with dlsym(RTLD_NEXT), times the call with CLOCK_MONOTONIC and
 * hands it to the collector as a range (domain "cuBLAS" or "cuDNN", named after the function,
 * the OS thread id) through the Python hooks' lock-free ring (apx_py_range, pyhook.h). Only a
 * thread's outermost library call is a range (cuBLAS calling cuBLASLt inside is one call).
 *
 * On when APX_LIBCALLS names the library ("cublas,cudnn", apx analyze --trace-libs; unset or
 * "none": every wrapper only passes the call on). Before the collector has started (CUDA not
 * initialised) or when it is not there, calls pass through unrecorded; a lookup of the
 * collector is tried at most every 50 ms. No allocation, no lock on the calling path (a name
 * registration takes the collector's mutex once per function).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))
#define RETRY_NS 50000000ull

enum lib { LIB_CUBLAS, LIB_CUDNN, LIB__COUNT };

static const char *const lib_domain[LIB__COUNT] = { "cuBLAS", "cuDNN" };
static const char *const lib_key[LIB__COUNT] = { "cublas", "cudnn" };

typedef int (*name_fn)(const char *, size_t);
typedef int (*range_fn)(uint32_t, uint32_t, uint64_t, uint64_t, uint64_t);

static struct {
	_Atomic int state;		/* 0 not read, 1 read */
	uint8_t on[LIB__COUNT];		/* APX_LIBCALLS names it */
	_Atomic(name_fn) name;
	_Atomic(range_fn) range;
	_Atomic uint64_t next_try_ns;
	_Atomic int32_t domain_id[LIB__COUNT];
} g;

static __thread unsigned depth;	/* library calls this thread is inside */
static __thread uint64_t my_tid;	/* this thread's OS id, 0 = not read (or forked since) */

/* A forked child's only thread keeps its parent thread's cached id: read it again. */
static void forget_tid(void)
{
	my_tid = 0;
}

__attribute__((constructor)) static void libcalls_init(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* APX_LIBCALLS, read once (any thread may do it first: the result is the same). */
static void read_env(void)
{
	const char *v = getenv("APX_LIBCALLS");

	if (atomic_load_explicit(&g.state, memory_order_acquire))
		return;
	for (int l = 0; l < LIB__COUNT; l++)
		g.on[l] = v && strstr(v, lib_key[l]) != NULL;
	atomic_store_explicit(&g.state, 1, memory_order_release);
}

/* The collector's apx_py_name / apx_py_range, once the CUDA driver has loaded it (the path in
 * CUDA_INJECTION64_PATH, looked up without loading it). */
static range_fn collector(void)
{
	range_fn r = atomic_load_explicit(&g.range, memory_order_acquire);
	const char *path;
	uint64_t t;
	void *h;

	if (r)
		return r;
	t = now_ns();
	if (t < atomic_load_explicit(&g.next_try_ns, memory_order_relaxed))
		return NULL;
	path = getenv("CUDA_INJECTION64_PATH");
	if (!path || !*path || !(h = dlopen(path, RTLD_NOW | RTLD_NOLOAD))) {
		/* not loaded yet: the next look in 50 ms (threads meanwhile look at once, and
		 * only a failed look delays the others) */
		atomic_store_explicit(&g.next_try_ns, t + RETRY_NS, memory_order_relaxed);
		return NULL;
	}
	atomic_store_explicit(&g.name, (name_fn)dlsym(h, "apx_py_name"), memory_order_relaxed);
	r = (range_fn)dlsym(h, "apx_py_range");
	dlclose(h);	/* NOLOAD took a reference; the collector stays loaded by CUDA */
	if (r && atomic_load_explicit(&g.name, memory_order_relaxed))
		atomic_store_explicit(&g.range, r, memory_order_release);
	return atomic_load_explicit(&g.range, memory_order_acquire);
}

/* A registered name's id (> 0), cached in *slot; 0 while the collector cannot take names. */
static uint32_t name_id(_Atomic int32_t *slot, const char *name)
{
	int32_t id = atomic_load_explicit(slot, memory_order_relaxed);
	name_fn fn;

	if (id > 0)
		return (uint32_t)id;
	fn = atomic_load_explicit(&g.name, memory_order_relaxed);
	if (!fn || (id = fn(name, strlen(name))) <= 0)
		return 0;
	atomic_store_explicit(slot, id, memory_order_relaxed);
	return (uint32_t)id;
}

/* One wrapped function: its name, library, cached name id and the library's own function. */
struct fn {
	const char *name;
	enum lib lib;
	_Atomic int32_t id;
	_Atomic(void *) real;
};

#define CANDIDATES 16

struct candidates {
	const char *prefix;
	char path[CANDIDATES][512];
	unsigned n;
};

/* dl_iterate_phdr's callback: the loaded objects whose file name starts with the prefix
 * (only their paths: no dlopen under the loader's lock). */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct candidates *c = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	size_t n;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, c->prefix, strlen(c->prefix)) || c->n == CANDIDATES)
		return 0;
	n = strlen(info->dlpi_name);
	if (n < sizeof(c->path[0])) {
		memcpy(c->path[c->n], info->dlpi_name, n + 1);
		c->n++;
	}
	return 0;
}

/* The library's own f: the next definition after ours in the global scope, or, when the
 * library is not in it (loaded under a module dlopen'ed RTLD_LOCAL, as PyTorch's
 * libtorch_cuda.so brings cuBLAS and cuDNN), from the loaded object whose name starts with
 * the function's library prefix. Never ours (dladdr says which object a symbol is in). */
static void *real_of(struct fn *f)
{
	static const char *const prefix[LIB__COUNT] = { "libcublas", "libcudnn" };
	void *p = atomic_load_explicit(&f->real, memory_order_acquire);
	struct candidates c = { .prefix = prefix[f->lib] };
	Dl_info self, at;

	if (p)
		return p;
	if (!dladdr((void *)real_of, &self))
		self.dli_fbase = NULL;
	p = dlsym(RTLD_NEXT, f->name);
	if (!p) {
		dl_iterate_phdr(collect, &c);
		for (unsigned i = 0; i < c.n && !p; i++) {
			void *h = dlopen(c.path[i], RTLD_LAZY | RTLD_NOLOAD);

			if (!h)
				continue;
			p = dlsym(h, f->name);
			if (p && dladdr(p, &at) && at.dli_fbase == self.dli_fbase)
				p = NULL;	/* ours, reached through the object's scope */
			dlclose(h);	/* NOLOAD took a reference; the object stays loaded */
		}
	}
	if (p)
		atomic_store_explicit(&f->real, p, memory_order_release);
	return p;
}

/* Enter: whether this call is recorded (the thread's outermost library call, the library on),
 * and its start time. */
static int enter(const struct fn *f, uint64_t *ret_t0)
{
	if (!atomic_load_explicit(&g.state, memory_order_acquire))
		read_env();
	if (depth++ || !g.on[f->lib])
		return 0;
	*ret_t0 = now_ns();
	return 1;
}

static void leave(struct fn *f, int rec, uint64_t t0)
{
	uint64_t t1;
	range_fn r;
	uint32_t id, dom;

	depth--;
	if (!rec)
		return;
	t1 = now_ns();
	if (!(r = collector()))
		return;
	id = name_id(&f->id, f->name);
	dom = name_id(&g.domain_id[f->lib], lib_domain[f->lib]);
	if (!id || !dom)
		return;
	if (!my_tid)
		my_tid = (uint64_t)syscall(SYS_gettid);
	(void)r(id, dom, t0, t1, my_tid);
}

/* A wrapper: ret name(params) calling the library's name(args); NOT_FOUND when it has none. */
#define WRAP(ret, fname, lib, not_found, params, args)                                    \
	static struct fn fn_##fname = { #fname, lib, 0, NULL };                             \
	EXPORT ret fname params                                                             \
	{                                                                                   \
		ret (*real) params = (ret (*) params)real_of(&fn_##fname);                  \
		uint64_t t0 = 0;                                                            \
		int rec;                                                                    \
		ret r;                                                                      \
                                                                                            \
		if (!real)                                                                  \
			return not_found;                                                   \
		rec = enter(&fn_##fname, &t0);                                              \
		r = real args;                                                              \
		leave(&fn_##fname, rec, t0);                                                \
		return r;                                                                   \
	}

/* ---- cuBLAS ---- */
WRAP(cublasStatus_t, cublasGemmEx, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
      cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
      cublasComputeType_t comp, cublasGemmAlgo_t algo),
     (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo))
WRAP(cublasStatus_t, cublasGemmStridedBatchedEx, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const void *alpha, const void *A, cudaDataType at, int lda, long long int sa,
      const void *B, cudaDataType bt, int ldb, long long int sb, const void *beta, void *C,
      cudaDataType ct, int ldc, long long int sc, int batch, cublasComputeType_t comp,
      cublasGemmAlgo_t algo),
     (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch,
      comp, algo))
WRAP(cublasStatus_t, cublasGemmBatchedEx, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const void *alpha, const void *const A[], cudaDataType at, int lda, const void *const B[],
      cudaDataType bt, int ldb, const void *beta, void *const C[], cudaDataType ct, int ldc,
      int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo),
     (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch, comp, algo))
WRAP(cublasStatus_t, cublasSgemm_v2, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
      float *C, int ldc),
     (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
WRAP(cublasStatus_t, cublasSgemmStridedBatched, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const float *alpha, const float *A, int lda, long long int sa, const float *B, int ldb,
      long long int sb, const float *beta, float *C, int ldc, long long int sc, int batch),
     (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch))
WRAP(cublasStatus_t, cublasSgemmEx, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const float *alpha, const void *A, cudaDataType at, int lda, const void *B,
      cudaDataType bt, int ldb, const float *beta, void *C, cudaDataType ct, int ldc),
     (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc))
WRAP(cublasStatus_t, cublasDgemm_v2, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const double *alpha, const double *A, int lda, const double *B, int ldb,
      const double *beta, double *C, int ldc),
     (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
WRAP(cublasStatus_t, cublasDgemmStridedBatched, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      const double *alpha, const double *A, int lda, long long int sa, const double *B,
      int ldb, long long int sb, const double *beta, double *C, int ldc, long long int sc,
      int batch),
     (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch))
WRAP(cublasStatus_t, cublasLtMatmul, LIB_CUBLAS, CUBLAS_STATUS_NOT_SUPPORTED,
     (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
      cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd, const void *beta,
      const void *C, cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
      const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsbytes, cudaStream_t stream),
     (h, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, wsbytes, stream))

/* ---- cuDNN ---- */
WRAP(cudnnStatus_t, cudnnBackendExecute, LIB_CUDNN, CUDNN_STATUS_NOT_SUPPORTED,
     (cudnnHandle_t h, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack),
     (h, plan, pack))
WRAP(cudnnStatus_t, cudnnConvolutionForward, LIB_CUDNN, CUDNN_STATUS_NOT_SUPPORTED,
     (cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
      const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd,
      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wsbytes, const void *beta,
      const cudnnTensorDescriptor_t yd, void *y),
     (h, alpha, xd, x, wd, w, cd, algo, ws, wsbytes, beta, yd, y))
WRAP(cudnnStatus_t, cudnnConvolutionBackwardData, LIB_CUDNN, CUDNN_STATUS_NOT_SUPPORTED,
     (cudnnHandle_t h, const void *alpha, const cudnnFilterDescriptor_t wd, const void *w,
      const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
      cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t wsbytes, const void *beta,
      const cudnnTensorDescriptor_t dxd, void *dx),
     (h, alpha, wd, w, dyd, dy, cd, algo, ws, wsbytes, beta, dxd, dx))
WRAP(cudnnStatus_t, cudnnConvolutionBackwardFilter, LIB_CUDNN, CUDNN_STATUS_NOT_SUPPORTED,
     (cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
      const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
      cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t wsbytes, const void *beta,
      const cudnnFilterDescriptor_t dwd, void *dw),
     (h, alpha, xd, x, dyd, dy, cd, algo, ws, wsbytes, beta, dwd, dw))

#pragma GCC diagnostic pop
