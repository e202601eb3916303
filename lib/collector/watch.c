/*
 * watch.c - libapx-watch.so, preloaded (LD_PRELOAD) by `apx analyze` beside the injected
 * collector. CUDA 13.0 allows one CUPTI subscriber per process: a tool that starts after apx
 * took CUPTI (torch.profiler's Kineto subscribes with cuptiSubscribe when the script first uses
 * it) gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and silently records no GPU events.
 * Nothing inside CUPTI tells apx, so this library wraps cuptiSubscribe (apx itself uses
 * cuptiSubscribe_v2, which is not wrapped), passes every call on unchanged, and counts the calls
 * that lost CUPTI. The collector reads the count (apx_watch_lost, found with dlsym) and says it
 * in the trace and the summary. Exports nothing else; no allocation, no locks.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/banned.h"

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);

static _Atomic unsigned long lost;

__attribute__((visibility("default"))) unsigned long apx_watch_lost(void);
__attribute__((visibility("default"))) CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
								 CUpti_CallbackFunc callback,
								 void *userdata);

unsigned long apx_watch_lost(void)
{
	return atomic_load(&lost);
}

static subscribe_fn real_subscribe(void)
{
	static subscribe_fn fn;
	static const char *const sonames[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };
	void *h;

	if (fn)
		return fn;
	fn = (subscribe_fn)dlsym(RTLD_NEXT, "cuptiSubscribe");
	for (size_t i = 0; !fn && i < sizeof(sonames) / sizeof(sonames[0]); i++) {
		h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);	/* the caller's, loaded */
		if (h)
			fn = (subscribe_fn)dlsym(h, "cuptiSubscribe");
	}
	return fn;
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
