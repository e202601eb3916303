/*
 * cupti_holder.c - a program that takes CUPTI for itself (subscriber "holder-test") before it
 * uses CUDA, like Nsight or an earlier injection would. Run under `apx analyze` by
 * tests/gpu/holder.sh: apx must say, in one line, that 'holder-test' holds CUPTI and let the
 * program run untouched (exit 0, its output intact).
 */
#include <cuda.h>
#include <cupti.h>
#include <stdio.h>

#include "base/banned.h"

static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	(void)u;
	(void)d;
	(void)id;
	(void)data;
}

int main(void)
{
	CUpti_SubscriberHandle sub;
	CUpti_SubscriberParams sp = { 0 };
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p;
	CUptiResult r;

	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "holder-test";
	sp.oldSubscriberName = old;
	sp.oldSubscriberSize = sizeof(old);
	r = cuptiSubscribe_v2(&sub, on_cb, NULL, &sp);
	if (r != CUPTI_SUCCESS) {
		printf("holder: could not subscribe (%d), CUPTI held by '%s'\n", (int)r, old);
		return 2;
	}
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
	    cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemsetD8(p, 1, 1 << 20) != CUDA_SUCCESS ||
	    cuCtxSynchronize() != CUDA_SUCCESS) {
		printf("holder: CUDA failed\n");
		return 3;
	}
	cuMemFree(p);
	printf("holder: subscribed first, CUDA ran\n");
	return 0;
}
