/*
 * nvml_metrics.h - the readings of the power and clock sampler (src_nvml.c), by index: the
 * METRIC records' names and units, which the encoder (encode.c) writes and apx report reads
 * (lib/analysis/power_cap.c: nvml.power_capped and nvml.clock_sm; ranks.c: nvml.nvlink_links).
 */
#ifndef APX_COLLECTOR_NVML_METRICS_H
#define APX_COLLECTOR_NVML_METRICS_H

enum apx_nvml_reading { APX_NV_POWER, APX_NV_LIMIT, APX_NV_CLOCK_SM, APX_NV_CAPPED, APX_NV_NVLINKS,
			 APX_NV__COUNT };

static const struct { const char *name, *unit; } apx_nvml_readings[APX_NV__COUNT] = {
	[APX_NV_POWER] = { "nvml.power", "W" },
	[APX_NV_LIMIT] = { "nvml.power_limit", "W" },
	[APX_NV_CLOCK_SM] = { "nvml.clock_sm", "MHz" },
	[APX_NV_CAPPED] = { "nvml.power_capped", "" },	/* 1: the software power cap is on */
	/* active NVLink links of the device, once (0: none; lib/analysis/ranks.c's link peak) */
	[APX_NV_NVLINKS] = { "nvml.nvlink_links", "" },
};

#endif
