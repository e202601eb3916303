/*
 * intern.h - global indexes of kernel names and of (device, stream) pairs across the files of
 * a model, through hash tables (a trace may hold hundreds of thousands of streams). Private
 * to lib/analysis; called by load.c for every kernel, copy and memset record.
 */
#ifndef APX_ANALYSIS_INTERN_H
#define APX_ANALYSIS_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/model.h"

/* Index of a kernel name in m->names (text borrowed from a reader; NULL = unknown). */
int apx_intern_name(struct apx_model *m, const char *text, size_t len, uint32_t *ret);
/* Index of (device, id) in m->streams; beyond 65535 streams (or out of memory) they share
 * slot 0. */
uint16_t apx_intern_stream(struct apx_model *m, uint32_t device, uint64_t id);

#endif
