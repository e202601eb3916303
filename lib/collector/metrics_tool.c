/*
 * metrics_tool.c - apx-metrics: the device metrics PM sampling can collect, from the CUPTI
 * profiler host API (pm_host.c). `apx analyze --metrics` runs `apx-metrics check SPEC` before
 * the program starts (so a bad metric is refused with its reason, not after the run), and
 * `apx analyze --metrics help` runs `apx-metrics sets` and `apx-metrics list`.
 *
 *   apx-metrics sets                         the named sets and their metrics
 *   apx-metrics check [--chip C] [--device N] [--quiet-no-gpu] [--range] SPEC|--replay|
 *                     --replay-one-pass
 *                                            a set or a list of metric names (for PM
 *                                            sampling, or with --range the range profiler), the
 *                                            replay set or the one-pass set of a later
 *                                            launch of each replayed kernel (range
 *                                            profiler: their passes; one for the latter)
 *   apx-metrics list [--chip C] [--device N] the chip's base metrics, with unit and meaning
 *
 * Without --chip the chip is the local GPU's (device N, default 0), whose counter-availability
 * image also tells which counters that device has. Exit 0 fine, 1 refused (the message names
 * the metric and why), 2 no GPU and no --chip, or bad usage.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "base/parse.h"
#include "collector/pm_host.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

static const char usage[] =
	"usage: apx-metrics sets\n"
	"       apx-metrics check [--chip CHIP] [--device N] [--quiet-no-gpu] [--range] "
	"SET|METRIC[,...]\n"
	"       apx-metrics check [--chip CHIP] [--device N] --replay|--replay-one-pass\n"
	"       apx-metrics list [--chip CHIP] [--device N]\n";

/* Make device n's primary context current (libcuda is loaded at run time only). */
static int cuda_context(int n)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*set)(void *);
	void *ctx = NULL;
	int dev = 0;

	if (!h)
		return -1;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	if (!init || !get || !retain || !set || init(0) || get(&dev, n) || retain(&ctx, dev) ||
	    set(ctx))
		return -1;
	return 0;
}

/* The local GPU's chip name and counter-availability image (malloc'd), or -1. */
static int local_chip(int n, const char **chip, uint8_t **avail)
{
	CUpti_Profiler_Initialize_Params ip = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUpti_Device_GetChipName_Params cn = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterAvailability_Params av = { .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE };
	int r;

	if (cuda_context(n) || cuptiProfilerInitialize(&ip) != CUPTI_SUCCESS)
		return -1;
	cn.deviceIndex = (size_t)n;
	if (cuptiDeviceGetChipName(&cn) != CUPTI_SUCCESS)
		return -1;
	*chip = cn.pChipName;
	av.deviceIndex = (size_t)n;
	if ((r = (int)cuptiPmSamplingGetCounterAvailability(&av)) != CUPTI_SUCCESS ||
	    !(*avail = malloc(av.counterAvailabilityImageSize))) {
		fprintf(stderr, "apx-metrics: device %d: no counter availability (%s); checking "
			"against the chip only\n", n, apx_pm_result_name(r));
		*avail = NULL;
		return 0;
	}
	av.pCounterAvailabilityImage = *avail;
	if (cuptiPmSamplingGetCounterAvailability(&av) != CUPTI_SUCCESS) {
		free(*avail);
		*avail = NULL;
	}
	return 0;
}

static void print_metric(void *ud, const char *name, const char *about, const char *unit)
{
	(void)ud;
	printf("  %-58s %-14s %s\n", name, unit, about);
}

static int cmd_sets(void)
{
	size_t n;
	const struct apx_pm_set *s = apx_pm_sets(&n);

	for (size_t i = 0; i < n; i++) {
		printf("%s: %s\n", s[i].name, s[i].about);
		for (size_t k = 0; k < s[i].n; k++)
			printf("  %-18s %-6s %s\n", s[i].metrics[k].title, s[i].metrics[k].unit,
			       s[i].metrics[k].name);
	}
	return 0;
}

/* Can the counters of spec be collected (by mode) on chip, in one pass when one_pass? Prints
 * ok and the passes, or the reason; 0 or 1. avail: the local device's counters, or NULL. */
static int check_spec(struct apx_pm_spec *spec, enum apx_pm_profiler mode, const char *chip,
		      const uint8_t *avail, int one_pass)
{
	struct apx_pm_host h;
	char err[400];
	size_t passes;

	if (apx_pm_host_config(&h, mode, chip, avail, spec, err, sizeof(err))) {
		fprintf(stderr, "apx-metrics: %s\n", err);
		return 1;
	}
	passes = h.passes;
	apx_pm_host_free(&h);
	printf("ok: %s: %zu metrics, %zu pass%s on %s%s\n", spec->set, spec->n, passes,
	       passes == 1 ? "" : "es", chip, avail ? " (this device's counters)" : "");
	if (one_pass && passes != 1) {
		fprintf(stderr, "apx-metrics: %s needs %zu passes; the collector takes it in one\n",
			spec->set, passes);
		return 1;
	}
	return 0;
}

/* The same for one of pm_sets.c's replay sets (range profiler). */
static int check_set(const struct apx_pm_set *set, const char *chip, const uint8_t *avail,
		     int one_pass)
{
	struct apx_pm_spec spec;

	apx_pm_spec_of_set(set, &spec);
	return check_spec(&spec, APX_PM_RANGE, chip, avail, one_pass);
}

int main(int argc, char **argv)
{
	const char *chip = NULL, *spec_text = NULL, *cmd = argc > 1 ? argv[1] : "";
	uint8_t *avail = NULL;
	char err[400];
	int device = 0, rc = 0, quiet_no_gpu = 0, replay = 0, one_pass = 0, range = 0;
	uint64_t dev;

	if (!strcmp(cmd, "sets") && argc == 2)
		return cmd_sets();
	if (strcmp(cmd, "check") && strcmp(cmd, "list")) {
		fputs(usage, stderr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quiet-no-gpu"))
			quiet_no_gpu = 1;
		else if (!strcmp(argv[i], "--replay") && !strcmp(cmd, "check"))
			replay = 1;
		else if (!strcmp(argv[i], "--replay-one-pass") && !strcmp(cmd, "check"))
			replay = one_pass = 1;
		else if (!strcmp(argv[i], "--range") && !strcmp(cmd, "check"))
			range = 1;
		else if (!strcmp(argv[i], "--chip") && i + 1 < argc)
			chip = argv[++i];
		else if (!strcmp(argv[i], "--device") && i + 1 < argc &&
			 !apx_parse_u64(argv[i + 1], 1023, &dev))
			device = (int)dev, i++;
		else if (!spec_text && argv[i][0] != '-' && !strcmp(cmd, "check"))
			spec_text = argv[i];
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!strcmp(cmd, "check") && !spec_text == !replay) {
		fputs(usage, stderr);
		return 2;
	}
	if (!chip && local_chip(device, &chip, &avail)) {
		if (quiet_no_gpu)
			return 2;
		fprintf(stderr, "apx-metrics: no CUDA GPU %d here to ask; name the chip with --chip "
			"(e.g. GH100)\n", device);
		return 2;
	}
	if (!strcmp(cmd, "list")) {
		long n = apx_pm_host_list(chip, avail, print_metric, NULL, err, sizeof(err));

		free(avail);
		if (n < 0) {
			fprintf(stderr, "apx-metrics: %s\n", err);
			return 1;
		}
		printf("%ld base metrics on %s; name one with a rollup (.sum, .avg, .max) and, for "
		       "rates and percentages, .per_second or .pct_of_peak_sustained_elapsed\n", n,
		       chip);
		return 0;
	}
	if (replay && one_pass) {	/* the one-pass set, which must take one pass */
		rc = check_set(apx_pm_replay_one_pass_set(), chip, avail, 1);
	} else if (replay) {
		rc = check_set(apx_pm_replay_set(), chip, avail, 0);
	} else {
		struct apx_pm_spec spec;

		if (apx_pm_spec_parse(spec_text, &spec, err, sizeof(err))) {
			free(avail);
			fprintf(stderr, "apx-metrics: %s\n", err);
			return 1;
		}
		rc = check_spec(&spec, range ? APX_PM_RANGE : APX_PM_SAMPLER, chip, avail, 0);
	}
	free(avail);
	return rc;
}
