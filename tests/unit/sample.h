/*
 * sample.h - deterministic sample traces for tests: records of every type with values that
 * exercise every field kind (large, small, negative deltas, empty and long byte strings).
 * Used by test-format.c, test-damage.c and the fixture generator gen-fixtures.c.
 */
#ifndef APX_TEST_SAMPLE_H
#define APX_TEST_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

/* Fill rec with record number i of the given type for seed; text is scratch for byte fields
 * (at least 4096 bytes per field, APX_REC_FIELDS_MAX fields). */
void apx_sample_rec(struct apx_rec *rec, unsigned type, uint64_t i, uint64_t seed, char *text);
void apx_sample_header(struct apx_rec *rec);
/* Write a sample trace of n records per type to fd; chunk_bytes small gives many chunks. */
int apx_sample_write(int fd, unsigned n, uint64_t seed, uint32_t chunk_bytes, int close_it);

#endif
