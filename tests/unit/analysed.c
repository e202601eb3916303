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
	struct apx_model *m = apx_model_new();
	struct apx_diag d;

	if (tg_close(t) < 0 || !m || apx_model_add_file(m, t->path, &d) < 0 ||
	    apx_model_finish(m) < 0) {
		unlink(t->path);
		apx_model_free(m);
		return NULL;
	}
	unlink(t->path);
	if (fd)
		apx_rules_run(m, fd);
	return m;
}

const struct apx_finding *tg_find(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->n; i++)
		if (!strcmp(fd->f[i].rule, rule))
			return &fd->f[i];
	return NULL;
}

enum apx_rule_status tg_status(const struct apx_findings *fd, const char *rule)
{
	for (size_t i = 0; i < fd->nresults; i++)
		if (!strcmp(fd->results[i].rule, rule))
			return fd->results[i].status;
	return (enum apx_rule_status)-1;
}
