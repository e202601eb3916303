/*
 * rulecheck.c - runs the rules on a synthetic trace for the rule tests (see rulecheck.h).
 */
#include "unit/rulecheck.h"

#include <string.h>
#include <unistd.h>

#include "base/banned.h"

struct apx_model *rc_analyse(struct tg *t, struct apx_findings *fd)
{
	struct apx_model *m = tg_model(t, 1);

	if (m)
		apx_rules_run(m, fd);
	return m;
}

const struct apx_finding *rc_finding(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->n; i++)
		if (!strcmp(fd->f[i].rule, rule))
			return &fd->f[i];
	return NULL;
}

const struct apx_rule_result *rc_result(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->nresults; i++)
		if (!strcmp(fd->results[i].rule, rule))
			return &fd->results[i];
	return NULL;
}
