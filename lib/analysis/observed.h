/*
 * observed.h - what nvperfd observed of a process from outside, in the analysis model: load.c
 * hands over each file's "nvperfd.*" key/values and METRIC samples; apx_model_finish() parses
 * the values into numbers (or the reason there is none) and sums the processes for the summary.
 * The structures are in model.h (struct apx_an_observed, apx_an_kv, apx_an_series); rules.c and
 * lib/report/build_view_nvperfd.c read them.
 */
#ifndef APX_ANALYSIS_OBSERVED_H
#define APX_ANALYSIS_OBSERVED_H

#include <stdint.h>

#include "analysis/model.h"

/* Load time (load.c), file by file in order: a KV record whose key starts "nvperfd.", and a
 * METRIC record of the file being read. 0 or -ENOMEM. */
int apx_observed_add_kv(struct apx_model *m, uint16_t file, const struct apx_rec *r);
int apx_observed_add_metric(struct apx_model *m, struct apx_reader *rd, uint16_t file,
			    const struct apx_rec *r);
/* Finish time (finish.c): parse the values, series means, the run's sums, no_gpu_trace. */
void apx_observed_finish(struct apx_model *m);

/* The key/value of an observed process with this key ("nvperfd.gpu.device"), or NULL. */
const struct apx_an_kv *apx_observed_kv(const struct apx_model *m, const struct apx_an_observed *o,
					const char *key);

#endif
