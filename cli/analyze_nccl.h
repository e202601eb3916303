/*
 * analyze_nccl.h - apx analyze's environment for NCCL (analyze_nccl.c): the profiler plugin
 * and the multicast-off variables. Called by cmd_analyze.c before it starts the program.
 */
#ifndef APX_CLI_ANALYZE_NCCL_H
#define APX_CLI_ANALYZE_NCCL_H

/* Point NCCL_PROFILER_PLUGIN at the injected collector (inject_lib, an absolute path; NULL
 * when apx runs without its collector) and keep NVLink multicast off (NCCL_NVLS_ENABLE=0,
 * TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1) unless the user set them. */
void apx_analyze_nccl_env(const char *inject_lib);

#endif
