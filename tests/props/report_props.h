/*
 * report_props.h - the invariants every `apx report` must keep, whatever the trace: per
 * device busy <= active span <= wall, kernel and copy busy <= busy, savings <= wall,
 * the steady state's findings' savings together <= the steady window, their
 * kernel-time savings <= the kernels' busy time in it, and steps from host ranges only where
 * the GPU keeps up with them,
 * percentages 0-100, findings ranked, the same counts in the text and the JSON, the JSON valid
 * UTF-8 JSON, the text free of control bytes after the terminal filter. Used by the property
 * test over the committed real traces and their mutations (test-report-props.c) and by the
 * report fuzzer (tests/fuzz/fuzz-report.c).
 */
#ifndef APX_TEST_REPORT_PROPS_H
#define APX_TEST_REPORT_PROPS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/findings.h"
#include "analysis/model.h"

/* Render the report of m and fd as text and JSON and check every invariant: 0, or -1 with
 * the first violation described in why. */
int apx_props_check(const struct apx_model *m, const struct apx_findings *fd, char *why,
		    size_t cap);
/* Build the model of one trace in memory (the buffer must outlive it), finish it and run the
 * rules into fd: 0, or -1 when the trace is not readable at all (not an error). */
int apx_props_model(const uint8_t *buf, size_t len, struct apx_model **ret_m,
		    struct apx_findings *fd);
/* Recompute every chunk's payload and header checksums in place, so that mutated bytes
 * reach the record decoders and the report instead of stopping at a CRC. */
void apx_props_reseal(uint8_t *buf, size_t len);

#endif
