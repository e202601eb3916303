/*
 * watch.c - libapx-watch.so, preloaded (LD_PRELOAD) by `apx analyze` beside the injected
 * collector. CUDA 13.0 allows one CUPTI subscriber per process: a tool that starts after apx
 * took CUPTI (torch.profiler's Kineto subscribes with cuptiSubscribe when the script first uses
 * it) gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and silently records no GPU events.
 * Nothing inside CUPTI tells apx, so this library wraps cuptiSubscribe (apx itself uses
 * cuptiSubscribe_v2, which is not wrapped), passes every call on unchanged, and counts the calls
 * that lost CUPTI. The collector reads the count (apx_watch_lost, found with dlsym) and says it
 * in the trace and the summary.
 *
 * It is also the NVTX injection apx analyze names in NVTX_INJECTION64_PATH: NVTX must reach the
 * libcupti the process already loaded (the one apx subscribed with; a second copy loaded from
 * another path would record nothing), so InitializeInjectionNvtx2 forwards to that copy.
 * No allocation, no locks.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/banned.h"

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef int (*nvtx_init_fn)(void *get_export_table);

static const char *const cupti_sonames[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };

static _Atomic unsigned long lost;

__attribute__((visibility("default"))) unsigned long apx_watch_lost(void);
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void *get_export_table);
__attribute__((visibility("default"))) CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
								 CUpti_CallbackFunc callback,
								 void *userdata);

unsigned long apx_watch_lost(void)
{
	return atomic_load(&lost);
}

/* A symbol of the libcupti already loaded in the process (never loads another copy). */
static void *loaded_cupti_sym(const char *name)
{
	void *sym = NULL, *h;

	for (size_t i = 0; !sym && i < sizeof(cupti_sonames) / sizeof(cupti_sonames[0]); i++) {
		h = dlopen(cupti_sonames[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h)
			sym = dlsym(h, name);
	}
	return sym;
}

static subscribe_fn real_subscribe(void)
{
	static subscribe_fn fn;

	if (!fn)
		fn = (subscribe_fn)dlsym(RTLD_NEXT, "cuptiSubscribe");
	if (!fn)
		fn = (subscribe_fn)loaded_cupti_sym("cuptiSubscribe");
	return fn;
}

int InitializeInjectionNvtx2(void *get_export_table)
{
	nvtx_init_fn fn = (nvtx_init_fn)loaded_cupti_sym("InitializeInjectionNvtx2");

	return fn ? fn(get_export_table) : 0;	/* 0: NVTX stays off, the program runs on */
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
			   void *userdata)
{
	subscribe_fn fn = real_subscribe();
	CUptiResult r;

	if (!fn)
		return CUPTI_ERROR_NOT_INITIALIZED;
	r = fn(subscriber, callback, userdata);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		atomic_fetch_add(&lost, 1);
	return r;
}
