/*
 * analyze_pyhooks.h - apx analyze's Python hooks (analyze_pyhooks.c): --trace-functions,
 * --trace-functions-threshold, --memory-sampling and --python-backward. Called by
 * cmd_analyze.c only.
 */
#ifndef APX_CLI_ANALYZE_PYHOOKS_H
#define APX_CLI_ANALYZE_PYHOOKS_H

#include <stddef.h>
#include <stdint.h>

#define APX_PYHOOKS_HZ_MAX 1000u		/* --memory-sampling */
#define APX_PYHOOKS_THRESHOLD_US_MAX 3600000000ull	/* --trace-functions-threshold: 1 h */

struct apx_pyhooks_opts {
	const char *trace;		/* --trace-functions SPEC or @FILE, NULL: none */
	uint64_t threshold_us;		/* --trace-functions-threshold */
	unsigned mem_hz;		/* --memory-sampling HZ (0 = off) */
	int backward;			/* --python-backward nvtx (1) | none (0) */
};

#define APX_PYHOOKS_OPTS_DEFAULT { .trace = NULL, .threshold_us = 0, .mem_hz = 10, .backward = 0 }

/* Check an option's value; a usage error (message on stderr) when it is wrong: returns
 * APX_EXIT_USAGE, else 0. opt is the long option's letter in cmd_analyze.c's table. */
int apx_pyhooks_opt(struct apx_pyhooks_opts *o, int opt, const char *arg);

/* Before the program starts: when the hooks are wanted, make a private temp folder holding
 * apx_site.py (found beside inject_lib) as sitecustomize.py, put it first on PYTHONPATH and
 * set the hooks' variables. ret_dir receives the folder ("" when none was made); a failure
 * turns the hooks off and says so (never stops the run). */
void apx_pyhooks_setup(const char *inject_lib, const struct apx_pyhooks_opts *o, char *ret_dir,
		       size_t cap);
/* After the run: remove the folder and what Python wrote into it (no-op for ""). */
void apx_pyhooks_cleanup(const char *dir);

#endif
