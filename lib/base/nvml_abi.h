/*
 * nvml_abi.h - the few NVML types and constants apx uses, declared here instead of taken from
 * nvml.h (NVML is loaded at run time with dlopen, no build-time dependency; layouts of nvml.h
 * R580 / CUDA 13.0). Included by nvperfd's view of the GPUs (lib/daemon/nvml.c) and by the
 * collector's power and clock sampler (lib/collector/src_nvml.c).
 */
#ifndef APX_BASE_NVML_ABI_H
#define APX_BASE_NVML_ABI_H

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
/* nvmlClocksEventReasonSwPowerCap: the software power cap holds the clocks down */
#define NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP 0x4ull
/* nvmlDeviceGetFieldValues: the power now, in mW (nvmlDeviceGetPowerUsage averages over 1 s
 * on Ampere and later but GA100) */
#define NVML_FI_DEV_POWER_INSTANT 186

typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;			/* 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 sll */
	nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		long long sllVal;
	} value;
} nvmlFieldValue_t;

#endif
