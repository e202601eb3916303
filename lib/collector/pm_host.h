/*
 * pm_host.h - the CUPTI profiler host API (pm_host.c) for PM sampling and for the range
 * profiler's kernel replay: builds and checks a metric configuration for a chip, lists the
 * chip's metrics, and evaluates decoded samples or ranges.
 * The host API needs no GPU (../shared/CUPTI.md §0), so apx-metrics checks a specification
 * for any chip; with a device's counter-availability image it also knows which counters that
 * device has. Used by src_pmsampling.c (writer side), src_replay.c and metrics_tool.c
 * (apx-metrics).
 */
#ifndef APX_COLLECTOR_PM_HOST_H
#define APX_COLLECTOR_PM_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "collector/pm_sets.h"

struct CUpti_Profiler_Host_Object;

/* Which profiler a configuration is for: PM sampling takes one pass only; the range profiler
 * replays a kernel once per pass. */
enum apx_pm_profiler { APX_PM_SAMPLER, APX_PM_RANGE };

struct apx_pm_host {
	enum apx_pm_profiler kind;
	struct CUpti_Profiler_Host_Object *obj;
	uint8_t *config;
	size_t config_size;
	size_t passes;
	const char *names[APX_PM_METRICS_MAX];
	size_t n;
};

/* Configure spec's metrics for chip (e.g. "GH100"); avail is the device's counter-availability
 * image or NULL. On a refusal, each metric is tried alone so that err names the one refused and
 * why (unknown on this chip, absent on this device, or more than one pass). Returns 0 or -1;
 * on success free with apx_pm_host_free. */
int apx_pm_host_config(struct apx_pm_host *h, enum apx_pm_profiler kind, const char *chip,
		       const uint8_t *avail, const struct apx_pm_spec *spec, char *err,
		       size_t errlen);
void apx_pm_host_free(struct apx_pm_host *h);

/* The values of sample i of a counter-data image, in the order of the configuration. */
int apx_pm_host_eval(const struct apx_pm_host *h, const uint8_t *image, size_t size, size_t i,
		     double *values);

/* Call fn for each PM-sampling metric of chip that has one pass: base name, description,
 * unit. Returns the count, or -1 with err. */
long apx_pm_host_list(const char *chip, const uint8_t *avail,
		      void (*fn)(void *ud, const char *name, const char *about, const char *unit),
		      void *ud, char *err, size_t errlen);

/* CUPTI's name for an error code. */
const char *apx_pm_result_name(int r);

#endif
