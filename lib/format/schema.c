/*
 * schema.c - the field table of every record type: name and storage kind, indexed by the
 * field enums of include/apx/format.h. The writer encodes and the reader decodes through it;
 * docs/format.md §5 lists the same table for humans. Read-only data, any thread.
 */
#include <apx/format.h>

#include "base/banned.h"

static const struct apx_field_desc header_fields[] = {
	[APX_HEADER_PRODUCER] = { "producer", APX_FK_BYTES },
	[APX_HEADER_PRODUCER_VERSION] = { "producer_version", APX_FK_BYTES },
	[APX_HEADER_CREATED_NS] = { "created_ns", APX_FK_UINT },
	[APX_HEADER_HOSTNAME] = { "hostname", APX_FK_BYTES },
	[APX_HEADER_KERNEL] = { "kernel", APX_FK_BYTES },
	[APX_HEADER_CLOCK] = { "clock", APX_FK_UINT },
	[APX_HEADER_REALTIME_OFFSET_NS] = { "realtime_offset_ns", APX_FK_SINT },
	[APX_HEADER_BOOTTIME_OFFSET_NS] = { "boottime_offset_ns", APX_FK_SINT },
	[APX_HEADER_PID] = { "pid", APX_FK_UINT },
	[APX_HEADER_PPID] = { "ppid", APX_FK_UINT },
	[APX_HEADER_ARGV] = { "argv", APX_FK_BYTES },
	[APX_HEADER_CWD] = { "cwd", APX_FK_BYTES },
	[APX_HEADER_UID] = { "uid", APX_FK_UINT },
	[APX_HEADER_USER] = { "user", APX_FK_BYTES },
	[APX_HEADER_RUN_ID] = { "run_id", APX_FK_BYTES },
	[APX_HEADER_RANK] = { "rank", APX_FK_SINT },
	[APX_HEADER_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_HEADER_WORLD_SIZE] = { "world_size", APX_FK_UINT },
	[APX_HEADER_LOCAL_RANK] = { "local_rank", APX_FK_SINT },
};

static const struct apx_field_desc strings_fields[] = {
	[APX_STRINGS_ID] = { "id", APX_FK_DELTA },
	[APX_STRINGS_TEXT] = { "text", APX_FK_BYTES },
};

static const struct apx_field_desc device_fields[] = {
	[APX_DEVICE_ID] = { "id", APX_FK_UINT },
	[APX_DEVICE_NAME] = { "name", APX_FK_BYTES },
	[APX_DEVICE_UUID] = { "uuid", APX_FK_BYTES },
	[APX_DEVICE_CC_MAJOR] = { "cc_major", APX_FK_UINT },
	[APX_DEVICE_CC_MINOR] = { "cc_minor", APX_FK_UINT },
	[APX_DEVICE_SM_COUNT] = { "sm_count", APX_FK_UINT },
	[APX_DEVICE_MEM_BYTES] = { "mem_bytes", APX_FK_UINT },
	[APX_DEVICE_L2_BYTES] = { "l2_bytes", APX_FK_UINT },
	[APX_DEVICE_MEM_BW_BPS] = { "mem_bw_bps", APX_FK_UINT },
	[APX_DEVICE_PERSIST_L2_MAX_BYTES] = { "persist_l2_max_bytes", APX_FK_UINT },
	[APX_DEVICE_PCI_BUS_ID] = { "pci_bus_id", APX_FK_BYTES },
	[APX_DEVICE_PCIE_GEN] = { "pcie_gen", APX_FK_UINT },
	[APX_DEVICE_PCIE_WIDTH] = { "pcie_width", APX_FK_UINT },
	[APX_DEVICE_NVLINK_COUNT] = { "nvlink_count", APX_FK_UINT },
	[APX_DEVICE_MAX_THREADS_PER_SM] = { "max_threads_per_sm", APX_FK_UINT },
	[APX_DEVICE_REGS_PER_SM] = { "regs_per_sm", APX_FK_UINT },
	[APX_DEVICE_SMEM_PER_SM] = { "smem_per_sm", APX_FK_UINT },
	[APX_DEVICE_MAX_BLOCKS_PER_SM] = { "max_blocks_per_sm", APX_FK_UINT },
	[APX_DEVICE_CLOCK_KHZ] = { "clock_khz", APX_FK_UINT },
	[APX_DEVICE_MEM_CLOCK_KHZ] = { "mem_clock_khz", APX_FK_UINT },
	[APX_DEVICE_MEM_BUS_BITS] = { "mem_bus_bits", APX_FK_UINT },
	[APX_DEVICE_WARP_SIZE] = { "warp_size", APX_FK_UINT },
	[APX_DEVICE_SMEM_PER_BLOCK_OPTIN] = { "smem_per_block_optin", APX_FK_UINT },
	[APX_DEVICE_MIG] = { "mig", APX_FK_UINT },
};

static const struct apx_field_desc process_fields[] = {
	[APX_PROCESS_PID] = { "pid", APX_FK_UINT },
	[APX_PROCESS_PPID] = { "ppid", APX_FK_UINT },
	[APX_PROCESS_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_PROCESS_END_NS] = { "end_ns", APX_FK_UINT },
	[APX_PROCESS_COMM] = { "comm", APX_FK_BYTES },
	[APX_PROCESS_ARGV] = { "argv", APX_FK_BYTES },
	[APX_PROCESS_UID] = { "uid", APX_FK_UINT },
	[APX_PROCESS_EXIT_STATUS] = { "exit_status", APX_FK_SINT },
	[APX_PROCESS_USES_CUDA] = { "uses_cuda", APX_FK_UINT },
};

static const struct apx_field_desc thread_fields[] = {
	[APX_THREAD_PID] = { "pid", APX_FK_UINT },
	[APX_THREAD_TID] = { "tid", APX_FK_UINT },
	[APX_THREAD_NAME] = { "name", APX_FK_BYTES },
	[APX_THREAD_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_THREAD_END_NS] = { "end_ns", APX_FK_UINT },
};

static const struct apx_field_desc kernel_fields[] = {
	[APX_KERNEL_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_KERNEL_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_KERNEL_DEVICE] = { "device", APX_FK_UINT },
	[APX_KERNEL_CONTEXT] = { "context", APX_FK_UINT },
	[APX_KERNEL_STREAM] = { "stream", APX_FK_UINT },
	[APX_KERNEL_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_KERNEL_NAME] = { "name", APX_FK_UINT },
	[APX_KERNEL_GRID_X] = { "grid_x", APX_FK_UINT },
	[APX_KERNEL_GRID_Y] = { "grid_y", APX_FK_UINT },
	[APX_KERNEL_GRID_Z] = { "grid_z", APX_FK_UINT },
	[APX_KERNEL_BLOCK_X] = { "block_x", APX_FK_UINT },
	[APX_KERNEL_BLOCK_Y] = { "block_y", APX_FK_UINT },
	[APX_KERNEL_BLOCK_Z] = { "block_z", APX_FK_UINT },
	[APX_KERNEL_REGISTERS] = { "registers", APX_FK_UINT },
	[APX_KERNEL_STATIC_SMEM] = { "static_smem", APX_FK_UINT },
	[APX_KERNEL_DYNAMIC_SMEM] = { "dynamic_smem", APX_FK_UINT },
	[APX_KERNEL_LOCAL_MEM] = { "local_mem", APX_FK_UINT },
	[APX_KERNEL_GRAPH_ID] = { "graph_id", APX_FK_UINT },
	[APX_KERNEL_GRAPH_NODE_ID] = { "graph_node_id", APX_FK_UINT },
	[APX_KERNEL_CLUSTER_X] = { "cluster_x", APX_FK_UINT },
	[APX_KERNEL_CLUSTER_Y] = { "cluster_y", APX_FK_UINT },
	[APX_KERNEL_CLUSTER_Z] = { "cluster_z", APX_FK_UINT },
	[APX_KERNEL_APW_BASE] = { "apw_base", APX_FK_UINT },
	[APX_KERNEL_APW_BYTES] = { "apw_bytes", APX_FK_UINT },
	[APX_KERNEL_APW_HIT_PPM] = { "apw_hit_ppm", APX_FK_UINT },
	[APX_KERNEL_APW_PROPS] = { "apw_props", APX_FK_UINT },
	[APX_KERNEL_FLAGS] = { "flags", APX_FK_UINT },
	[APX_KERNEL_STACK] = { "stack", APX_FK_UINT },
	[APX_KERNEL_TID] = { "tid", APX_FK_UINT },
	[APX_KERNEL_LAUNCH_NS] = { "launch_ns", APX_FK_UINT },
	[APX_KERNEL_LAUNCH_THREAD] = { "launch_thread", APX_FK_UINT },
};

static const struct apx_field_desc memcpy_fields[] = {
	[APX_MEMCPY_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_MEMCPY_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_MEMCPY_DEVICE] = { "device", APX_FK_UINT },
	[APX_MEMCPY_CONTEXT] = { "context", APX_FK_UINT },
	[APX_MEMCPY_STREAM] = { "stream", APX_FK_UINT },
	[APX_MEMCPY_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_MEMCPY_COPY_KIND] = { "copy_kind", APX_FK_UINT },
	[APX_MEMCPY_SRC_KIND] = { "src_kind", APX_FK_UINT },
	[APX_MEMCPY_DST_KIND] = { "dst_kind", APX_FK_UINT },
	[APX_MEMCPY_BYTES] = { "bytes", APX_FK_UINT },
	[APX_MEMCPY_HOST_ADDR] = { "host_addr", APX_FK_UINT },
	[APX_MEMCPY_SRC_DEVICE] = { "src_device", APX_FK_UINT },
	[APX_MEMCPY_DST_DEVICE] = { "dst_device", APX_FK_UINT },
	[APX_MEMCPY_FLAGS] = { "flags", APX_FK_UINT },
	[APX_MEMCPY_GRAPH_ID] = { "graph_id", APX_FK_UINT },
	[APX_MEMCPY_GRAPH_NODE_ID] = { "graph_node_id", APX_FK_UINT },
	[APX_MEMCPY_COPY_COUNT] = { "copy_count", APX_FK_UINT },
	[APX_MEMCPY_API_ENTER_NS] = { "api_enter_ns", APX_FK_DELTA },
	[APX_MEMCPY_API_EXIT_NS] = { "api_exit_ns", APX_FK_DELTA },
	[APX_MEMCPY_HOST_FP] = { "host_fp", APX_FK_UINT },
	[APX_MEMCPY_STACK] = { "stack", APX_FK_UINT },
	[APX_MEMCPY_TID] = { "tid", APX_FK_UINT },
};

static const struct apx_field_desc memset_fields[] = {
	[APX_MEMSET_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_MEMSET_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_MEMSET_DEVICE] = { "device", APX_FK_UINT },
	[APX_MEMSET_CONTEXT] = { "context", APX_FK_UINT },
	[APX_MEMSET_STREAM] = { "stream", APX_FK_UINT },
	[APX_MEMSET_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_MEMSET_BYTES] = { "bytes", APX_FK_UINT },
	[APX_MEMSET_VALUE] = { "value", APX_FK_UINT },
	[APX_MEMSET_MEM_KIND] = { "mem_kind", APX_FK_UINT },
	[APX_MEMSET_FLAGS] = { "flags", APX_FK_UINT },
	[APX_MEMSET_GRAPH_ID] = { "graph_id", APX_FK_UINT },
	[APX_MEMSET_GRAPH_NODE_ID] = { "graph_node_id", APX_FK_UINT },
	[APX_MEMSET_STACK] = { "stack", APX_FK_UINT },
};

static const struct apx_field_desc memory_fields[] = {
	[APX_MEMORY_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_MEMORY_OP] = { "op", APX_FK_UINT },
	[APX_MEMORY_ADDRESS] = { "address", APX_FK_UINT },
	[APX_MEMORY_BYTES] = { "bytes", APX_FK_UINT },
	[APX_MEMORY_MEM_KIND] = { "mem_kind", APX_FK_UINT },
	[APX_MEMORY_DEVICE] = { "device", APX_FK_UINT },
	[APX_MEMORY_CONTEXT] = { "context", APX_FK_UINT },
	[APX_MEMORY_STREAM] = { "stream", APX_FK_UINT },
	[APX_MEMORY_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_MEMORY_FLAGS] = { "flags", APX_FK_UINT },
	[APX_MEMORY_SOURCE] = { "source", APX_FK_UINT },
	[APX_MEMORY_STACK] = { "stack", APX_FK_UINT },
	[APX_MEMORY_TID] = { "tid", APX_FK_UINT },
	[APX_MEMORY_ERROR] = { "error", APX_FK_UINT },
	[APX_MEMORY_REQUESTED_BYTES] = { "requested_bytes", APX_FK_UINT },
};

static const struct apx_field_desc sync_fields[] = {
	[APX_SYNC_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_SYNC_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_SYNC_KIND] = { "kind", APX_FK_UINT },
	[APX_SYNC_CONTEXT] = { "context", APX_FK_UINT },
	[APX_SYNC_STREAM] = { "stream", APX_FK_UINT },
	[APX_SYNC_EVENT] = { "event", APX_FK_UINT },
	[APX_SYNC_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_SYNC_TID] = { "tid", APX_FK_UINT },
	[APX_SYNC_STACK] = { "stack", APX_FK_UINT },
};

static const struct apx_field_desc api_fields[] = {
	[APX_API_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_API_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_API_DOMAIN] = { "domain", APX_FK_UINT },
	[APX_API_CBID] = { "cbid", APX_FK_UINT },
	[APX_API_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_API_TID] = { "tid", APX_FK_UINT },
	[APX_API_RETURN] = { "return", APX_FK_SINT },
	[APX_API_NAME] = { "name", APX_FK_UINT },
	[APX_API_STACK] = { "stack", APX_FK_UINT },
};

static const struct apx_field_desc marker_fields[] = {
	[APX_MARKER_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_MARKER_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_MARKER_ID] = { "id", APX_FK_UINT },
	[APX_MARKER_NAME] = { "name", APX_FK_UINT },
	[APX_MARKER_DOMAIN] = { "domain", APX_FK_UINT },
	[APX_MARKER_TID] = { "tid", APX_FK_UINT },
	[APX_MARKER_COLOR] = { "color", APX_FK_UINT },
	[APX_MARKER_CATEGORY] = { "category", APX_FK_UINT },
	[APX_MARKER_KIND] = { "kind", APX_FK_UINT },
	[APX_MARKER_SEQ] = { "seq", APX_FK_UINT },
	[APX_MARKER_FLAGS] = { "flags", APX_FK_UINT },
};

static const struct apx_field_desc config_fields[] = {
	[APX_CONFIG_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_CONFIG_KIND] = { "kind", APX_FK_UINT },
	[APX_CONFIG_DEVICE] = { "device", APX_FK_UINT },
	[APX_CONFIG_CONTEXT] = { "context", APX_FK_UINT },
	[APX_CONFIG_STREAM] = { "stream", APX_FK_UINT },
	[APX_CONFIG_VALUE] = { "value", APX_FK_UINT },
	[APX_CONFIG_APW_BASE] = { "apw_base", APX_FK_UINT },
	[APX_CONFIG_APW_BYTES] = { "apw_bytes", APX_FK_UINT },
	[APX_CONFIG_APW_HIT_PPM] = { "apw_hit_ppm", APX_FK_UINT },
	[APX_CONFIG_APW_HIT_PROP] = { "apw_hit_prop", APX_FK_UINT },
	[APX_CONFIG_APW_MISS_PROP] = { "apw_miss_prop", APX_FK_UINT },
	[APX_CONFIG_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_CONFIG_TID] = { "tid", APX_FK_UINT },
	[APX_CONFIG_TARGET] = { "target", APX_FK_UINT },
};

static const struct apx_field_desc uvm_fields[] = {
	[APX_UVM_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_UVM_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_UVM_KIND] = { "kind", APX_FK_UINT },
	[APX_UVM_DEVICE] = { "device", APX_FK_UINT },
	[APX_UVM_ADDRESS] = { "address", APX_FK_UINT },
	[APX_UVM_BYTES] = { "bytes", APX_FK_UINT },
	[APX_UVM_VALUE] = { "value", APX_FK_UINT },
	[APX_UVM_SRC_DEVICE] = { "src_device", APX_FK_UINT },
	[APX_UVM_DST_DEVICE] = { "dst_device", APX_FK_UINT },
};

static const struct apx_field_desc metric_fields[] = {
	[APX_METRIC_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_METRIC_NAME] = { "name", APX_FK_UINT },
	[APX_METRIC_DEVICE] = { "device", APX_FK_UINT },
	[APX_METRIC_PID] = { "pid", APX_FK_UINT },
	[APX_METRIC_VALUE] = { "value", APX_FK_F64 },
	[APX_METRIC_UNIT] = { "unit", APX_FK_UINT },
	[APX_METRIC_END_NS] = { "end_ns", APX_FK_SPAN },
};

static const struct apx_field_desc counter_fields[] = {
	[APX_COUNTER_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_COUNTER_NAME] = { "name", APX_FK_UINT },
	[APX_COUNTER_VALUE] = { "value", APX_FK_F64 },
	[APX_COUNTER_DEVICE] = { "device", APX_FK_UINT },
	[APX_COUNTER_PASSES] = { "passes", APX_FK_UINT },
};

static const struct apx_field_desc cpu_fields[] = {
	[APX_CPU_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_CPU_PID] = { "pid", APX_FK_UINT },
	[APX_CPU_TID] = { "tid", APX_FK_UINT },
	[APX_CPU_UTIME_NS] = { "utime_ns", APX_FK_DELTA },
	[APX_CPU_STIME_NS] = { "stime_ns", APX_FK_DELTA },
	[APX_CPU_VOL_CSW] = { "vol_csw", APX_FK_DELTA },
	[APX_CPU_INVOL_CSW] = { "invol_csw", APX_FK_DELTA },
	[APX_CPU_RSS_BYTES] = { "rss_bytes", APX_FK_UINT },
	[APX_CPU_RSS_PEAK_BYTES] = { "rss_peak_bytes", APX_FK_UINT },
	[APX_CPU_THREADS] = { "threads", APX_FK_UINT },
	[APX_CPU_STATE] = { "state", APX_FK_UINT },
	[APX_CPU_MINFLT] = { "minflt", APX_FK_DELTA },
	[APX_CPU_MAJFLT] = { "majflt", APX_FK_DELTA },
};

static const struct apx_field_desc finding_fields[] = {
	[APX_FINDING_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_FINDING_RULE] = { "rule", APX_FK_BYTES },
	[APX_FINDING_SEVERITY] = { "severity", APX_FK_UINT },
	[APX_FINDING_SAVING_NS] = { "saving_ns", APX_FK_UINT },
	[APX_FINDING_SAVING_PPM] = { "saving_ppm", APX_FK_UINT },
	[APX_FINDING_CONFIDENCE_PCT] = { "confidence_pct", APX_FK_UINT },
	[APX_FINDING_TITLE] = { "title", APX_FK_BYTES },
	[APX_FINDING_EVIDENCE] = { "evidence", APX_FK_BYTES },
	[APX_FINDING_FIX] = { "fix", APX_FK_BYTES },
	[APX_FINDING_PID] = { "pid", APX_FK_UINT },
};

static const struct apx_field_desc kv_fields[] = {
	[APX_KV_KEY] = { "key", APX_FK_BYTES },
	[APX_KV_VALUE] = { "value", APX_FK_BYTES },
};

static const struct apx_field_desc graph_fields[] = {
	[APX_GRAPH_START_NS] = { "start_ns", APX_FK_DELTA },
	[APX_GRAPH_END_NS] = { "end_ns", APX_FK_SPAN },
	[APX_GRAPH_KIND] = { "kind", APX_FK_UINT },
	[APX_GRAPH_GRAPH_ID] = { "graph_id", APX_FK_UINT },
	[APX_GRAPH_DEVICE] = { "device", APX_FK_UINT },
	[APX_GRAPH_CONTEXT] = { "context", APX_FK_UINT },
	[APX_GRAPH_STREAM] = { "stream", APX_FK_UINT },
	[APX_GRAPH_CORRELATION] = { "correlation", APX_FK_DELTA },
	[APX_GRAPH_NODES] = { "nodes", APX_FK_UINT },
};

static const struct apx_field_desc loss_fields[] = {
	[APX_LOSS_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_LOSS_SOURCE] = { "source", APX_FK_UINT },
	[APX_LOSS_COUNT] = { "count", APX_FK_UINT },
	[APX_LOSS_REASON] = { "reason", APX_FK_BYTES },
};

static const struct apx_field_desc frame_fields[] = {
	[APX_FRAME_ID] = { "id", APX_FK_DELTA },
	[APX_FRAME_KIND] = { "kind", APX_FK_UINT },
	[APX_FRAME_FILE] = { "file", APX_FK_UINT },
	[APX_FRAME_FUNC] = { "func", APX_FK_UINT },
	[APX_FRAME_LINE] = { "line", APX_FK_UINT },
	[APX_FRAME_FIRST_LINE] = { "first_line", APX_FK_UINT },
	[APX_FRAME_ADDRESS] = { "address", APX_FK_UINT },
};

static const struct apx_field_desc stack_fields[] = {
	[APX_STACK_ID] = { "id", APX_FK_DELTA },
	[APX_STACK_FRAMES] = { "frames", APX_FK_BYTES },
	[APX_STACK_TRUNCATED] = { "truncated", APX_FK_UINT },
};

static const struct apx_field_desc sample_fields[] = {
	[APX_SAMPLE_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_SAMPLE_TID] = { "tid", APX_FK_UINT },
	[APX_SAMPLE_STACK] = { "stack", APX_FK_UINT },
	[APX_SAMPLE_STATE] = { "state", APX_FK_UINT },
	[APX_SAMPLE_SYSCALL] = { "syscall", APX_FK_SINT },
	[APX_SAMPLE_CPU_NS] = { "cpu_ns", APX_FK_UINT },
	[APX_SAMPLE_PERIOD_NS] = { "period_ns", APX_FK_UINT },
};

static const struct apx_field_desc collective_fields[] = {
	[APX_COLLECTIVE_ENQUEUE_NS] = { "enqueue_ns", APX_FK_DELTA },
	[APX_COLLECTIVE_ENQUEUE_END_NS] = { "enqueue_end_ns", APX_FK_SPAN },
	[APX_COLLECTIVE_START_NS] = { "start_ns", APX_FK_UINT },
	[APX_COLLECTIVE_END_NS] = { "end_ns", APX_FK_UINT },
	[APX_COLLECTIVE_FUNC] = { "func", APX_FK_UINT },
	[APX_COLLECTIVE_COUNT] = { "count", APX_FK_UINT },
	[APX_COLLECTIVE_DATATYPE] = { "datatype", APX_FK_UINT },
	[APX_COLLECTIVE_BYTES] = { "bytes", APX_FK_UINT },
	[APX_COLLECTIVE_ALGO] = { "algo", APX_FK_UINT },
	[APX_COLLECTIVE_PROTO] = { "proto", APX_FK_UINT },
	[APX_COLLECTIVE_CHANNELS] = { "channels", APX_FK_UINT },
	[APX_COLLECTIVE_PEER] = { "peer", APX_FK_SINT },
	[APX_COLLECTIVE_COMM] = { "comm", APX_FK_UINT },
	[APX_COLLECTIVE_RANK] = { "rank", APX_FK_SINT },
	[APX_COLLECTIVE_NRANKS] = { "nranks", APX_FK_UINT },
	[APX_COLLECTIVE_SEQ] = { "seq", APX_FK_DELTA },
	[APX_COLLECTIVE_STREAM] = { "stream", APX_FK_UINT },
	[APX_COLLECTIVE_DEVICE] = { "device", APX_FK_SINT },
	[APX_COLLECTIVE_GPU_TIMER_START] = { "gpu_timer_start", APX_FK_UINT },
	[APX_COLLECTIVE_GPU_TIMER_END] = { "gpu_timer_end", APX_FK_UINT },
	[APX_COLLECTIVE_FLAGS] = { "flags", APX_FK_UINT },
};

static const struct apx_field_desc heap_fields[] = {
	[APX_HEAP_TS_NS] = { "ts_ns", APX_FK_DELTA },
	[APX_HEAP_OP] = { "op", APX_FK_UINT },
	[APX_HEAP_ADDRESS] = { "address", APX_FK_UINT },
	[APX_HEAP_BYTES] = { "bytes", APX_FK_UINT },
	[APX_HEAP_INTERVAL_BYTES] = { "interval_bytes", APX_FK_DELTA },
	[APX_HEAP_TID] = { "tid", APX_FK_UINT },
	[APX_HEAP_STACK] = { "stack", APX_FK_UINT },
	[APX_HEAP_NATIVE_STACK] = { "native_stack", APX_FK_UINT },
	[APX_HEAP_FLAGS] = { "flags", APX_FK_UINT },
};

static const struct apx_field_desc end_fields[] = {
	[APX_END_CHUNKS] = { "chunks", APX_FK_UINT },
	[APX_END_RECORDS] = { "records", APX_FK_UINT },
	[APX_END_END_NS] = { "end_ns", APX_FK_UINT },
	[APX_END_STATUS] = { "status", APX_FK_UINT },
};

#define SCHEMA(t, T, n) [T] = { n, 1, sizeof(t##_fields) / sizeof(t##_fields[0]), t##_fields }

static const struct apx_rec_schema schemas[APX_REC_TYPE__COUNT] = {
	SCHEMA(header, APX_REC_HEADER, "header"),
	SCHEMA(strings, APX_REC_STRINGS, "strings"),
	SCHEMA(device, APX_REC_DEVICE, "device"),
	SCHEMA(process, APX_REC_PROCESS, "process"),
	SCHEMA(thread, APX_REC_THREAD, "thread"),
	SCHEMA(kernel, APX_REC_KERNEL, "kernel"),
	SCHEMA(memcpy, APX_REC_MEMCPY, "memcpy"),
	SCHEMA(memset, APX_REC_MEMSET, "memset"),
	SCHEMA(memory, APX_REC_MEMORY, "memory"),
	SCHEMA(sync, APX_REC_SYNC, "sync"),
	SCHEMA(api, APX_REC_API, "api"),
	SCHEMA(marker, APX_REC_MARKER, "marker"),
	SCHEMA(config, APX_REC_CONFIG, "config"),
	SCHEMA(uvm, APX_REC_UVM, "uvm"),
	SCHEMA(metric, APX_REC_METRIC, "metric"),
	SCHEMA(counter, APX_REC_COUNTER, "counter"),
	SCHEMA(cpu, APX_REC_CPU, "cpu"),
	SCHEMA(finding, APX_REC_FINDING, "finding"),
	SCHEMA(kv, APX_REC_KV, "kv"),
	SCHEMA(graph, APX_REC_GRAPH, "graph"),
	SCHEMA(loss, APX_REC_LOSS, "loss"),
	SCHEMA(frame, APX_REC_FRAME, "frame"),
	SCHEMA(stack, APX_REC_STACK, "stack"),
	SCHEMA(sample, APX_REC_SAMPLE, "sample"),
	SCHEMA(collective, APX_REC_COLLECTIVE, "collective"),
	SCHEMA(heap, APX_REC_HEAP, "heap"),
	SCHEMA(end, APX_REC_END, "end"),
};

const struct apx_rec_schema *apx_schema(unsigned type)
{
	if (type >= APX_REC_TYPE__COUNT || !schemas[type].name)
		return NULL;
	return &schemas[type];
}
