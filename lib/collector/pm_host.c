/*
 * pm_host.c - the CUPTI profiler host API for PM sampling (pm_host.h). cupti_profiler_host.h
 * includes C++'s <string> without using it, so this file alone compiles with shim/ (an empty
 * `string`) on its include path. Runs at start-up (collector) or in apx-metrics, never on a hot
 * path: it may allocate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>

#include "collector/pm_host.h"

#include "base/banned.h"

const char *apx_pm_result_name(int r)
{
	const char *s = NULL;

	if (cuptiGetResultString((CUptiResult)r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static int host_new(struct CUpti_Profiler_Host_Object **obj, enum apx_pm_profiler kind,
		    const char *chip, const uint8_t *avail)
{
	CUpti_Profiler_Host_Initialize_Params p = { .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };

	p.profilerType = kind == APX_PM_RANGE ? CUPTI_PROFILER_TYPE_RANGE_PROFILER
					      : CUPTI_PROFILER_TYPE_PM_SAMPLING;
	p.pChipName = chip;
	p.pCounterAvailabilityImage = avail;
	if (cuptiProfilerHostInitialize(&p) != CUPTI_SUCCESS)
		return -1;
	*obj = p.pHostObject;
	return 0;
}

static void host_del(struct CUpti_Profiler_Host_Object *obj)
{
	CUpti_Profiler_Host_Deinitialize_Params p = { .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };

	if (!obj)
		return;
	p.pHostObject = obj;
	(void)cuptiProfilerHostDeinitialize(&p);
}

/* Add names to obj and build the configuration image; 0 or the CUPTI error. */
static int configure(struct CUpti_Profiler_Host_Object *obj, const char **names, size_t n,
		     uint8_t **ret_img, size_t *ret_size, size_t *ret_passes)
{
	CUpti_Profiler_Host_ConfigAddMetrics_Params a = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImageSize_Params sz = { .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImage_Params gi = { .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetNumOfPasses_Params np = { .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
	CUptiResult r;
	uint8_t *img;

	a.pHostObject = obj;
	a.ppMetricNames = names;
	a.numMetrics = n;
	if ((r = cuptiProfilerHostConfigAddMetrics(&a)) != CUPTI_SUCCESS)
		return (int)r;
	sz.pHostObject = obj;
	if ((r = cuptiProfilerHostGetConfigImageSize(&sz)) != CUPTI_SUCCESS)
		return (int)r;
	if (!(img = malloc(sz.configImageSize ? sz.configImageSize : 1)))
		return (int)CUPTI_ERROR_OUT_OF_MEMORY;
	gi.pHostObject = obj;
	gi.configImageSize = sz.configImageSize;
	gi.pConfigImage = img;
	if ((r = cuptiProfilerHostGetConfigImage(&gi)) == CUPTI_SUCCESS) {
		np.configImageSize = sz.configImageSize;
		np.pConfigImage = img;
		r = cuptiProfilerHostGetNumOfPasses(&np);
	}
	if (r != CUPTI_SUCCESS) {
		free(img);
		return (int)r;
	}
	*ret_img = img;
	*ret_size = sz.configImageSize;
	*ret_passes = np.numOfPasses;
	return 0;
}

/* Why one metric alone is refused, into err; 0 when it alone is fine. */
static int blame_one(enum apx_pm_profiler kind, const char *chip, const uint8_t *avail,
		     const char *name, char *err, size_t errlen)
{
	struct CUpti_Profiler_Host_Object *obj = NULL;
	uint8_t *img = NULL;
	size_t size = 0, passes = 0;
	int r;

	if (host_new(&obj, kind, chip, avail))
		return 0;
	r = configure(obj, &name, 1, &img, &size, &passes);
	host_del(obj);
	free(img);
	if (r == (int)CUPTI_ERROR_INVALID_PARAMETER || r == (int)CUPTI_ERROR_INVALID_METRIC_NAME) {
		snprintf(err, errlen, "metric '%s' is not known on %s (apx-metrics list --chip %s "
			 "lists them)", name, chip, chip);
		return -1;
	}
	if (r) {
		snprintf(err, errlen, "metric '%s' is not available on this %s device (%s: its "
			 "counters are absent here, e.g. NVLink counters on a single GPU)", name,
			 chip, apx_pm_result_name(r));
		return -1;
	}
	if (kind == APX_PM_SAMPLER && passes > 1) {
		snprintf(err, errlen, "metric '%s' needs %zu passes on %s; PM sampling collects "
			 "single-pass metrics only (per-kernel replay can take it)", name, passes,
			 chip);
		return -1;
	}
	return 0;
}

int apx_pm_host_config(struct apx_pm_host *h, enum apx_pm_profiler kind, const char *chip,
		       const uint8_t *avail, const struct apx_pm_spec *spec, char *err,
		       size_t errlen)
{
	int r;

	memset(h, 0, sizeof(*h));
	h->kind = kind;
	for (size_t i = 0; i < spec->n; i++)
		h->names[i] = spec->m[i].name;
	h->n = spec->n;
	if (host_new(&h->obj, kind, chip, avail)) {
		snprintf(err, errlen, "the CUPTI profiler host does not know chip '%s'", chip);
		return -1;
	}
	r = configure(h->obj, h->names, h->n, &h->config, &h->config_size, &h->passes);
	if (!r && (h->passes == 1 || kind == APX_PM_RANGE))
		return 0;
	for (size_t i = 0; i < h->n; i++)
		if (blame_one(kind, chip, avail, h->names[i], err, errlen)) {
			apx_pm_host_free(h);
			return -1;
		}
	if (r)
		snprintf(err, errlen, "these metrics are refused together on %s (%s)", chip,
			 apx_pm_result_name(r));
	else
		snprintf(err, errlen, "these metrics need %zu passes together on %s; PM sampling "
			 "collects one pass: use fewer metrics", h->passes, chip);
	apx_pm_host_free(h);
	return -1;
}

void apx_pm_host_free(struct apx_pm_host *h)
{
	host_del(h->obj);
	free(h->config);
	memset(h, 0, sizeof(*h));
}

int apx_pm_host_eval(const struct apx_pm_host *h, const uint8_t *image, size_t size, size_t i,
		     double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params p = { .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
	const char *names[APX_PM_METRICS_MAX];

	memcpy(names, h->names, h->n * sizeof(names[0]));
	p.pHostObject = h->obj;
	p.pCounterDataImage = image;
	p.counterDataImageSize = size;
	p.rangeIndex = i;
	p.ppMetricNames = names;
	p.numMetrics = h->n;
	p.pMetricValues = values;
	return (int)cuptiProfilerHostEvaluateToGpuValues(&p);
}

long apx_pm_host_list(const char *chip, const uint8_t *avail,
		      void (*fn)(void *ud, const char *name, const char *about, const char *unit),
		      void *ud, char *err, size_t errlen)
{
	static const CUpti_MetricType types[] = { CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO,
						  CUPTI_METRIC_TYPE_THROUGHPUT };
	struct CUpti_Profiler_Host_Object *obj = NULL;
	long n = 0;

	if (host_new(&obj, APX_PM_SAMPLER, chip, avail)) {
		snprintf(err, errlen, "the CUPTI profiler host does not know chip '%s'", chip);
		return -1;
	}
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		CUpti_Profiler_Host_GetBaseMetrics_Params b = { .structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE };

		b.pHostObject = obj;
		b.metricType = types[t];
		if (cuptiProfilerHostGetBaseMetrics(&b) != CUPTI_SUCCESS)
			continue;
		for (size_t i = 0; i < b.numMetrics; i++) {
			CUpti_Profiler_Host_GetMetricProperties_Params mp = { .structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE };

			mp.pHostObject = obj;
			mp.pMetricName = b.ppMetricNames[i];
			if (cuptiProfilerHostGetMetricProperties(&mp) != CUPTI_SUCCESS)
				continue;
			fn(ud, b.ppMetricNames[i], mp.pDescription ? mp.pDescription : "",
			   mp.pDimUnit ? mp.pDimUnit : "");
			n++;
		}
	}
	host_del(obj);
	return n;
}
