/*
 * analyze_metrics.c - `apx analyze --metrics[=SET] [--metrics-list M,...]
 * [--metrics-frequency HZ]`: device metrics by CUPTI PM sampling (the collector's
 * src_pmsampling.c does the sampling), and `--replay [--kernels REGEX] [--replay-max N]`:
 * per-kernel counters by kernel replay (src_replay.c). The two exclude each other (one
 * profiling session per device). Called by cmd_analyze.c before the program starts: the
 * specification is parsed here (pm_sets.c) and then checked by apx-metrics (beside
 * libapx-inject.so) against this machine's GPU, so that an unknown, absent or multi-pass
 * metric is refused with its name and reason before anything runs. Without a GPU here the
 * collector checks it again at start and says so in the trace. "help" lists the sets and the
 * GPU's metrics.
 */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

/* Run apx-metrics with args (stderr is apx's; stdout too, or stderr when quiet_out: the
 * program's output is on stdout); its exit status, or -1. */
static int run_metrics_tool(const char *inject_lib, char *const *args, size_t nargs,
			    int quiet_out)
{
	posix_spawn_file_actions_t fa;
	const char *slash = strrchr(inject_lib, '/');
	char tool[PATH_MAX], *argv[8];
	char **env;
	int status = 0, r;
	pid_t pid;

	if (!slash || nargs > 6)
		return -1;
	snprintf(tool, sizeof(tool), "%.*s/apx-metrics", (int)(slash - inject_lib), inject_lib);
	argv[0] = tool;
	memcpy(argv + 1, args, nargs * sizeof(*argv));
	argv[nargs + 1] = NULL;
	if (!(env = apx_tool_env(NULL, 0)))
		return -1;
	posix_spawn_file_actions_init(&fa);
	if (quiet_out)
		posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	r = posix_spawn(&pid, tool, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (r) {
		apx_log_warn("--metrics: cannot run '%s' (%s); the collector checks the "
			     "metrics when the program starts", tool, strerror(r));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int apx_analyze_metrics(const char *inject_lib, const struct apx_metrics_opts *m, int *stop)
{
	struct apx_pm_spec spec;
	char err[400], hz[16];

	*stop = 0;
	if (m->replay) {
		regex_t re;

		*stop = 1;
		if (m->spec)
			return apx_cli_usage_error("analyze", "--replay and --metrics cannot run "
						   "together: a device has one profiling session");
		if (m->kernels) {
			if (regcomp(&re, m->kernels, REG_EXTENDED | REG_NOSUB))
				return apx_cli_usage_error("analyze", "--kernels: not an extended "
							   "regular expression");
			regfree(&re);
			setenv("APX_REPLAY_KERNELS", m->kernels, 1);
		}
		snprintf(hz, sizeof(hz), "%u", m->replay_max ? m->replay_max : 5);
		setenv("APX_REPLAY_MAX", hz, 1);
		if (m->replay_flush)
			setenv("APX_REPLAY_FLUSH", "1", 1);
		setenv("APX_REPLAY", "1", 1);
		*stop = 0;
		return APX_EXIT_OK;
	}
	if (m->kernels || m->replay_max || m->replay_flush) {
		*stop = 1;
		return apx_cli_usage_error("analyze", "--kernels, --replay-max and --replay-flush "
					   "need --replay");
	}
	if (!m->spec)
		return APX_EXIT_OK;
	if (!strcmp(m->spec, "help")) {
		char *sets[] = { "sets" }, *list[] = { "list" };

		*stop = 1;
		if (!inject_lib) {
			apx_log_error("--metrics help needs apx-metrics, installed beside "
				      "libapx-inject.so (not found)");
			return APX_EXIT_FAIL;
		}
		if (run_metrics_tool(inject_lib, sets, 1, 0) != 0)
			return APX_EXIT_FAIL;
		puts("");
		fflush(stdout);
		switch (run_metrics_tool(inject_lib, list, 1, 0)) {
		case 0:
			return APX_EXIT_OK;
		case 2:		/* no GPU here: apx-metrics said so */
			return APX_EXIT_OK;
		default:
			return APX_EXIT_FAIL;
		}
	}
	if (apx_pm_spec_parse(m->spec, &spec, err, sizeof(err))) {
		*stop = 1;
		return apx_cli_usage_error("analyze", "--metrics: %s", err);
	}
	if (inject_lib) {
		char spec_buf[sizeof(spec.buf)];
		char *check[] = { "check", "--quiet-no-gpu", spec_buf };

		snprintf(spec_buf, sizeof(spec_buf), "%s", m->spec);
		if (run_metrics_tool(inject_lib, check, 3, 1) == 1) {
			*stop = 1;
			apx_log_error("--metrics: refused (above); `apx analyze --metrics help` "
				      "lists what this GPU offers");
			return APX_EXIT_USAGE;
		}
	}
	setenv("APX_METRICS", m->spec, 1);
	snprintf(hz, sizeof(hz), "%u", m->hz ? m->hz : APX_PM_HZ_DEFAULT);
	setenv("APX_METRICS_HZ", hz, 1);
	return APX_EXIT_OK;
}
