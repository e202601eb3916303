/*
 * random_stacks.h - random traces with Python stacks (FRAME, STACK, SAMPLE records and the
 * stack fields of kernels, copies, memsets and syncs, valid and invalid) for the report's
 * invariants and the exporters (random_stacks.c). Called by test-report-props.c.
 */
#ifndef APX_TEST_RANDOM_STACKS_H
#define APX_TEST_RANDOM_STACKS_H

/* Write n random traces (a fixed seed: the same n traces every run), check each report's
 * invariants (apx_props_check) and export each in every format built in; the failures,
 * each said on stderr. *ret_models counts the reports checked. */
unsigned apx_props_random_stacks(unsigned n, unsigned *ret_models);

#endif
