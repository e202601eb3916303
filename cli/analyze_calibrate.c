/*
 * analyze_calibrate.c - the collector's cost per kernel launch, for `apx analyze` (called from
 * cmd_analyze.c before the program starts). Runs apx-calibrate (beside libapx-inject.so) plain
 * and with the collector injected at the run's level and kinds, CALIBRATE_PAIRS times in
 * alternating order; the median of the pairs' differences is what the collector adds to each
 * launch on this machine (one pair was not enough on the H200 VM, whose processes run at
 * speeds up to 1.8x apart: a fast plain run against a slow injected one gave 0; a median of 0
 * or less is that noise: not cached, said, and measured again next time). The result goes
 * to the program's environment as APX_LAUNCH_COST_NS; the collector writes it into the trace
 * (kv collector_launch_cost_ns) and the analysis takes it off every launch gap.
 *
 * Results are cached per (apx version, host, level, APX_KINDS, APX_OFF, CUDA_VISIBLE_DEVICES)
 * in $XDG_CACHE_HOME/apx/launch-cost (~/.cache/apx/launch-cost), so only the first run on a
 * machine pays the six short CUDA start-ups. APX_CALIBRATE=0 skips it all. -ENODEV: no CUDA
 * driver or GPU here (nothing to correct).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <apx/version.h>

#include "base/log.h"
#include "base/parse.h"
#include "cli/cli.h"

#include "base/banned.h"

extern char **environ;

#define CALIBRATE_TIMEOUT_MS 60000
#define CALIBRATE_PAIRS 3	/* plain and injected runs, alternating: the median difference */

char **apx_tool_env(char *const *extra, size_t nextra)
{
	static const char *const drop[] = { "CUDA_INJECTION64_PATH=", "LD_PRELOAD=",
					    "NVTX_INJECTION64_PATH=", "APX_OUTPUT=", "APX_ROOT_PID=",
					    "APX_RUN_ID=", "APX_WINDOW_START_NS=",
					    "APX_WINDOW_END_NS=", "APX_CAPTURE=" };
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + nextra + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int skip = 0;

		for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++)
			skip |= !strncmp(environ[i], drop[d], strlen(drop[d]));
		if (!skip)
			env[k++] = environ[i];
	}
	for (size_t i = 0; i < nextra; i++)
		env[k++] = extra[i];
	return env;
}

/* Run tool with env; parse "launch_ns N" from its stdout. 0 or negative errno. */
static int run_tool(char *tool, char **env, uint64_t *ret_ns)
{
	char *argv[] = { tool, NULL };
	posix_spawn_file_actions_t fa;
	char out[256];
	size_t len = 0;
	int fds[2], status = 0, r;
	uint64_t deadline;
	struct timespec ts;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&pid, tool, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (r) {
		close(fds[0]);
		return -r;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + CALIBRATE_TIMEOUT_MS;
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		uint64_t now;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
		if (now >= deadline) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		n = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(out) - 1)
			break;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return -ENODEV;		/* no CUDA driver or GPU here */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strncmp(out, "launch_ns ", 10))
		return -EIO;
	out[strcspn(out, "\n")] = 0;
	return apx_parse_u64(out + 10, 1000000000, ret_ns);
}

static void cache_path(char *buf, size_t cap)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg && *xdg == '/')
		snprintf(buf, cap, "%s/apx/launch-cost", xdg);
	else if (home && *home == '/')
		snprintf(buf, cap, "%s/.cache/apx/launch-cost", home);
	else
		buf[0] = 0;
}

static void cache_key(char *buf, size_t cap, const char *level)
{
	char host[256] = "";
	const char *kinds = getenv("APX_KINDS"), *off = getenv("APX_OFF");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");

	(void)gethostname(host, sizeof(host) - 1);
	snprintf(buf, cap, "apx=%s host=%s level=%s kinds=%s off=%s gpus=%s", APX_VERSION, host,
		 level, kinds ? kinds : "", off ? off : "", cvd ? cvd : "");
	for (char *p = buf; *p; p++)	/* one line, tab-separated from the value */
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

static int cache_get(const char *path, const char *key, uint64_t *ret_ns)
{
	char line[1024];
	size_t klen = strlen(key);
	FILE *f;
	int r = -ENOENT;

	if (!path[0])
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == '\t') {
			line[strcspn(line, "\n")] = 0;
			r = apx_parse_u64(line + klen + 1, 1000000000, ret_ns);
		}
	}
	fclose(f);
	return r;
}

static void cache_put(const char *path, const char *key, uint64_t ns)
{
	char dir[PATH_MAX];
	char *slash;
	FILE *f;

	if (!path[0])
		return;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {	/* ~/.cache/apx: both levels may be missing on a fresh account */
		char *up;

		*slash = 0;
		up = strrchr(dir, '/');
		if (up && up != dir) {
			*up = 0;
			(void)mkdir(dir, 0700);
			*up = '/';
		}
		(void)mkdir(dir, 0700);
	}
	f = fopen(path, "ae");
	if (!f)
		return;
	fprintf(f, "%s\t%" PRIu64 "\n", key, ns);
	fclose(f);
}

/* One run of the tool with the collector injected at level (its own trace in a temporary
 * folder, removed after). */
static int run_injected(char *tool, const char *inject_lib, const char *level, uint64_t *ret_ns)
{
	char dir[] = "/tmp/apx-calibrate-XXXXXX", out[PATH_MAX + 32];
	char lib_env[PATH_MAX + 32], level_env[64], out_env[PATH_MAX + 48];
	static char flush_env[] = "APX_FLUSH_MS=60000";
	char *extra[] = { lib_env, level_env, out_env, flush_env };
	struct dirent **names = NULL;
	char **env;
	int r, n;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(out, sizeof(out), "%s/calibrate.apx", dir);
	snprintf(lib_env, sizeof(lib_env), "CUDA_INJECTION64_PATH=%s", inject_lib);
	snprintf(level_env, sizeof(level_env), "APX_LEVEL=%s", level);
	snprintf(out_env, sizeof(out_env), "APX_OUTPUT=%s", out);
	env = apx_tool_env(extra, 4);
	r = env ? run_tool(tool, env, ret_ns) : -ENOMEM;
	free(env);
	n = scandir(dir, &names, NULL, NULL);	/* the calibration's own trace(s) */
	for (int i = 0; i < n; i++) {
		char full[PATH_MAX * 2];

		if (names[i]->d_name[0] != '.') {
			snprintf(full, sizeof(full), "%s/%s", dir, names[i]->d_name);
			(void)unlink(full);
		}
		free(names[i]);
	}
	free(names);
	(void)rmdir(dir);
	return r;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int apx_analyze_calibrate(const char *inject_lib, const char *level, uint64_t *ret_ns)
{
	char tool[PATH_MAX], cpath[PATH_MAX], key[1024];
	const char *slash = strrchr(inject_lib, '/');
	int64_t diff[CALIBRATE_PAIRS];
	char **env;
	int r = 0;

	if (!slash)
		return -EINVAL;
	cache_path(cpath, sizeof(cpath));
	cache_key(key, sizeof(key), level);
	if (cache_get(cpath, key, ret_ns) == 0)
		return 0;
	snprintf(tool, sizeof(tool), "%.*s/apx-calibrate", (int)(slash - inject_lib), inject_lib);
	if (access(tool, X_OK) < 0)
		return -ENOENT;
	env = apx_tool_env(NULL, 0);
	if (!env)
		return -ENOMEM;
	/* plain, injected; injected, plain; ...: a drift in the machine's speed falls on both */
	for (int i = 0; i < CALIBRATE_PAIRS && r == 0; i++) {
		uint64_t plain = 0, with = 0;

		if (i % 2 == 0) {
			r = run_tool(tool, env, &plain);
			if (r == 0)
				r = run_injected(tool, inject_lib, level, &with);
		} else {
			r = run_injected(tool, inject_lib, level, &with);
			if (r == 0)
				r = run_tool(tool, env, &plain);
		}
		diff[i] = (int64_t)with - (int64_t)plain;
	}
	free(env);
	if (r < 0)
		return r;
	qsort(diff, CALIBRATE_PAIRS, sizeof(diff[0]), cmp_i64);
	if (diff[CALIBRATE_PAIRS / 2] <= 0)
		return -ERANGE;	/* lost in the noise between processes: not cached, tried again */
	*ret_ns = (uint64_t)diff[CALIBRATE_PAIRS / 2];
	cache_put(cpath, key, *ret_ns);
	return 0;
}
