/*
 * analysed.h - for the analysis tests (test-analysis.c, test-idle.c, test-steps.c, test-rules.c): close a
 * synthetic trace (tracegen.h), build its model, run the rules; look a rule up in the result.
 */
#ifndef APX_TEST_ANALYSED_H
#define APX_TEST_ANALYSED_H

#include "analysis/findings.h"
#include "unit/tracegen.h"

/* Close t, build the model (the file is removed), run the rules into fd unless fd is NULL.
 * NULL on failure. */
struct apx_model *tg_analyse(struct tg *t, struct apx_findings *fd);
/* The same with each rule's own saving model (apx report --savings rule): for tests of those
 * models and of the idle attribution they read. */
struct apx_model *tg_analyse_own(struct tg *t, struct apx_findings *fd);
/* The first finding of rule, or NULL. */
const struct apx_finding *tg_find(const struct apx_findings *fd, const char *rule);
/* The check status of rule, or -1 when there is no such rule. */
/* The result of rule (every rule has one), or NULL for an unknown id. */
const struct apx_rule_result *tg_result(const struct apx_findings *fd, const char *rule);
enum apx_rule_status tg_status(const struct apx_findings *fd, const char *rule);

#endif
