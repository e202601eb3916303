/*
 * timeline.h - per-device GPU timelines of the analysis model: busy and idle time (union of
 * kernels, copies and memsets), kernel concurrency, copy/compute overlap, and every idle gap
 * with its attributed cause. Called by apx_model_finish() (finish.c).
 */
#ifndef APX_ANALYSIS_TIMELINE_H
#define APX_ANALYSIS_TIMELINE_H

#include "analysis/model.h"

/* Gaps shorter than this are "launch" gaps: the host could not keep the queue filled. */
#define APX_LAUNCH_GAP_NS 50000u
/* Gaps at least this long are kept one by one in model->gaps (the rest only in totals). */
#define APX_LONG_GAP_NS 100000u
#define APX_LONG_GAPS_MAX 100000u

int apx_timelines_build(struct apx_model *m);

#endif
