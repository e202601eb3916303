/*
 * pm_sets.h - the named device-metric sets of `apx analyze --metrics` (PM sampling)
 * and the parser of a metric specification: a set name ("summary", "throughput") or a
 * comma-separated list of CUPTI metric names. Pure C, no CUPTI: used by the CLI (to refuse a
 * bad specification before the program runs), by apx-metrics and by the collector's PM
 * sampling source (src_pmsampling.c).
 */
#ifndef APX_COLLECTOR_PM_SETS_H
#define APX_COLLECTOR_PM_SETS_H

#include <stddef.h>

#define APX_PM_METRICS_MAX 32		/* metrics in one specification (the replay set: 25) */
#define APX_PM_NAME_MAX 128		/* bytes of one metric name, with its NUL */
#define APX_PM_HZ_DEFAULT 1000u
#define APX_PM_HZ_MAX 10000u		/* 100 us: shorter intervals failed to decode on GH100 */

struct apx_pm_metric {
	const char *name;		/* CUPTI (Perfworks) metric name */
	const char *title;		/* what the report calls it */
	const char *unit;		/* "%", "B/s", ... */
};

struct apx_pm_set {
	const char *name;
	const char *about;
	const struct apx_pm_metric *metrics;
	size_t n;
};

/* A parsed specification: the metrics in order; names point into set tables or into buf. */
struct apx_pm_spec {
	const char *set;		/* set name, or "custom" */
	struct apx_pm_metric m[APX_PM_METRICS_MAX];
	size_t n;
	char buf[APX_PM_METRICS_MAX * APX_PM_NAME_MAX];
};

const struct apx_pm_set *apx_pm_sets(size_t *ret_n);
/* The metrics of `apx analyze --replay` (range profiler), in their record order. */
const struct apx_pm_set *apx_pm_replay_set(void);
/* What `--replay` measures in one pass on a later launch of a replayed kernel (after an L2 sweep
 * with --replay-flush): a subset of the replay set (same names), the DRAM counters and the L2
 * sector hits, which replace the replayed DRAM counters and, over the replayed launches' L2
 * lookups, their L2 hit rate. */
const struct apx_pm_set *apx_pm_replay_one_pass_set(void);

/* Parse a set name or a list of metric names ("a,b,c": letters, digits, '_' and '.'). Returns
 * 0, or -1 with a message in err naming the offending set or metric and why. */
int apx_pm_spec_parse(const char *text, struct apx_pm_spec *out, char *err, size_t errlen);
/* The specification of one of the sets above (its name and metrics). */
void apx_pm_spec_of_set(const struct apx_pm_set *set, struct apx_pm_spec *out);

#endif
