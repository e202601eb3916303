/*
 * views.h - the model's views over the event store (model.h, store.h), computed by
 * apx_model_finish() (finish.c) once the store is built: streams and per-file GPU totals
 * (view_streams.c), the per-event lists that rules read (view_events.c), kernel names and
 * their aggregates (view_kernels.c). Single-threaded; each returns 0 or -ENOMEM.
 */
#ifndef APX_ANALYSIS_VIEWS_H
#define APX_ANALYSIS_VIEWS_H

#include <stdint.h>

#include "analysis/model.h"
#include "analysis/store.h"

/* A duration as the model keeps it: ns, saturated at 4.29 s. */
static inline uint32_t apx_view_dur(uint64_t start, uint64_t end)
{
	uint64_t d = end > start ? end - start : 0;

	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* The end of store kernel i as the model's views see it: start + saturated duration. */
static inline uint64_t apx_view_kernel_end(const struct apx_store *st, size_t i)
{
	return st->k.start[i] + st->k.dur[i];
}

/* A device id (ordinal) as the model shows it: CUDA's are small; one past 65535 (a damaged
 * record) is shown as 65535. */
/* The model name (index into model->names, the store's kernel names in order) of kernel i. */
static inline uint32_t apx_view_kname(const struct apx_store *st, size_t i)
{
	return st->string_kname[st->k.name[i]] - 1;
}

/* The same for untimed (replayed) kernel i (store.h struct apx_es_untimed). */
static inline uint32_t apx_view_untimed_kname(const struct apx_store *st, size_t i)
{
	return st->string_kname[st->ku.name[i]] - 1;
}

static inline uint32_t apx_view_ordinal(uint32_t ordinal)
{
	return ordinal > UINT16_MAX ? UINT16_MAX : ordinal;
}

/* The device id of a store stream. */
static inline uint32_t apx_view_stream_ordinal(const struct apx_store *st, uint32_t s)
{
	return apx_view_ordinal(st->devices[st->streams[s].device].ordinal);
}

/* The model's event store, created on first use (load.c). */
int apx_model_store_get(struct apx_model *m);

/* Model streams (the store's with kernels, copies or memsets, in the store's order), their
 * totals, and each file's kernels and copies. First of the views. */
int apx_view_streams(struct apx_model *m);
/* The model's copies, memsets, synchronizations, markers and API calls, in time order. */
int apx_view_events(struct apx_model *m);
/* Kernel names (first-seen order, the first launch's configuration), count, total, min, max,
 * exact p50/p95, theoretical occupancy; the kernel time total; m->k.dur grouped by name. */
int apx_view_kernels(struct apx_model *m);
/* view_kernels.c: each name's launches, longest run and runs of APX_LONG_RUN inside the steps
 * (after apx_steps_find and apx_view_kernels). */
int apx_view_steady_launches(struct apx_model *m);
/* view_metrics.c: the PM-sampling series (after apx_view_kernels): m->pm. */
int apx_view_metrics(struct apx_model *m);
/* view_counters.c: the replayed kernels' counters per kernel name (after apx_view_kernels):
 * m->kc. */
int apx_view_counters(struct apx_model *m);
/* view_counters.c: order m->counters by (file, correlation id), once; then the value of one
 * counter (enum apx_kc) of the launch (file, corr): 0, or -ENOENT when it was not recorded. */
void apx_view_counters_sort(struct apx_model *m);
int apx_view_counter_value(const struct apx_model *m, uint16_t file, uint64_t corr, int metric,
			   double *ret);

#endif
