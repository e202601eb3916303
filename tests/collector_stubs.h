/*
 * collector_stubs.h - the harnesses' stand-in for the injected library (collector_stubs.c):
 * besides the collector.h functions inject.c would give the sources, one call that opens a
 * harness's trace as the collector opens its own (header, writer, encoder, collecting on).
 */
#ifndef APX_TESTS_COLLECTOR_STUBS_H
#define APX_TESTS_COLLECTOR_STUBS_H

#include "collector/collector.h"

/* Open path with a header of producer "apx-inject" version `version`, this process, the
 * monotonic clock and no rank; c->w, c->enc = e (its writer c->w) and c->enabled set. 0 or
 * the writer's -errno. */
int apx_stub_collector_open(struct apx_collector *c, struct apx_enc *e, const char *path,
			    const char *version);

#endif
