/*
 * nvtx.h - GPU time projected under NVTX ranges (nvtx.c), for apx_model_finish().
 */
#ifndef APX_ANALYSIS_NVTX_H
#define APX_ANALYSIS_NVTX_H

#include "analysis/model.h"

#define APX_NVTX_NAMES_MAX 4096

int apx_nvtx_project(struct apx_model *m);

#endif
