/*
 * rulecheck.h - for the rule tests (test-analysis.c, test-rules.c): close a synthetic trace
 * (tracegen.h), build its model, run every rule, and find a rule's finding or result.
 */
#ifndef APX_TEST_RULECHECK_H
#define APX_TEST_RULECHECK_H

#include "analysis/findings.h"
#include "unit/tracegen.h"

/* Close t, build the model, run the rules into fd; t's file is removed. NULL on failure. */
struct apx_model *rc_analyse(struct tg *t, struct apx_findings *fd);
/* The first finding of rule, or NULL. */
const struct apx_finding *rc_finding(const struct apx_findings *fd, const char *rule);
/* The result of rule (every rule has one), or NULL for an unknown id. */
const struct apx_rule_result *rc_result(const struct apx_findings *fd, const char *rule);

#endif
