/*
 * tune.h - apx tune's fixes (tune_fixes.c): what each one changes, how it is applied from
 * outside the program (apx_site.py's hook chosen by APX_TUNE_FIXES, and an environment
 * variable where one does it), which findings it answers, and how far the program's loss values
 * may move under it. Used by cmd_tune.c.
 */
#ifndef APX_CLI_TUNE_H
#define APX_CLI_TUNE_H

#include <stddef.h>

#include "analysis/finding.h"

struct apx_tune_fix {
	const char *name;		/* --fix name, also its APX_TUNE_FIXES hook name */
	const char *hook;		/* APX_TUNE_FIXES value */
	const char *what;		/* the change, for the user */
	const char *env_name, *env_value;	/* an environment variable it sets, or NULL */
	double tolerance;		/* relative change of loss values the fix may make (a
					 * precision change); 0: none beyond run-to-run noise */
	int fewer_kernels;		/* the fix replaces kernels by fewer (foreach, set_to_none):
					 * kernels that differ a step are its point, not less work */
};

const struct apx_tune_fix *apx_tune_fix_find(const char *name);
/* The fix for a finding, NULL when apx cannot apply one from outside the program. */
const struct apx_tune_fix *apx_tune_fix_for(const struct apx_finding *f);
/* A --fix LIST (comma-separated names): 0, or -EINVAL with why. */
int apx_tune_fix_list_check(const char *list, char *why, size_t cap);
/* Whether name is one of list's. */
int apx_tune_fix_in_list(const char *list, const char *name);

#endif
