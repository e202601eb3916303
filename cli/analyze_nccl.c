/*
 * analyze_nccl.c - apx analyze's NCCL environment (analyze_nccl.h). NCCL dlopens the path in
 * NCCL_PROFILER_PLUGIN and dlsyms ncclProfiler_v5 (then _v4): naming the collector that CUDA
 * already injected gives NCCL the same loaded instance, so one library holds CUPTI's and
 * NCCL's state (docs/collector.md, "NCCL"). The multicast variables stay off as the lent GPU
 * machines require: a program using NVLink multicast can take shared GPUs out of service.
 * Called by cmd_analyze.c on apx's own thread before fork; logs with apx_log_warn.
 */
#include "cli/analyze_nccl.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#include "base/banned.h"

void apx_analyze_nccl_env(const char *inject_lib)
{
	const char *prev = getenv("NCCL_PROFILER_PLUGIN");

	if (inject_lib && *inject_lib == '/') {
		if (prev && *prev && strcmp(prev, inject_lib) && strcmp(prev, "none"))
			apx_log_warn("replacing NCCL_PROFILER_PLUGIN='%s' by apx's collector "
				     "(NCCL loads one profiler plugin)", prev);
		if (!prev || strcmp(prev, "none"))	/* "none": the user turned it off */
			setenv("NCCL_PROFILER_PLUGIN", inject_lib, 1);
	}
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
}
