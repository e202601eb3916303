/*
 * analysed.c - see analysed.h: the model and the rules of a synthetic trace, for the analysis
 * unit tests.
 */
#include "unit/analysed.h"

#include <string.h>
#include <unistd.h>

#include "base/banned.h"

struct apx_model *tg_analyse(struct tg *t, struct apx_findings *fd)
{
	struct apx_model *m = tg_model(t, 1);

	if (m && fd)
		apx_rules_run(m, fd);
	return m;
}

struct apx_model *tg_analyse_own(struct tg *t, struct apx_findings *fd)
{
	struct apx_model *m = tg_model(t, 1);

	if (m && fd) {
		m->whatif_savings = 0;
		apx_rules_run(m, fd);
	}
	return m;
}

const struct apx_finding *tg_find(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->n; i++)
		if (!strcmp(fd->f[i].rule, rule))
			return &fd->f[i];
	return NULL;
}

const struct apx_rule_result *tg_result(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->nresults; i++)
		if (!strcmp(fd->results[i].rule, rule))
			return &fd->results[i];
	return NULL;
}

enum apx_rule_status tg_status(const struct apx_findings *fd, const char *rule)
{
	const struct apx_rule_result *r = tg_result(fd, rule);

	return r ? r->status : (enum apx_rule_status)-1;
}
