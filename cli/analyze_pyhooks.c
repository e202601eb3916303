/*
 * analyze_pyhooks.c - apx analyze's Python hooks, applied from outside the user's code
 * (docs/collector.md, "Python hooks"): --trace-functions module:func[,...] or @FILE.json,
 * --trace-functions-threshold US, --memory-sampling HZ (default 10, 0 = off) and
 * --python-backward nvtx|none (default none: PyTorch's emit_nvtx turned on once CUDA is
 * initialised, so that the report can give backward kernels their forward line).
 *
 * apx never edits the user's files: before the program starts, apx_pyhooks_setup() makes a
 * private folder (mkdtemp under $TMPDIR or /tmp), copies apx_site.py (installed beside
 * libapx-inject.so, lib/collector/py/apx_site.py) into it as sitecustomize.py, puts the folder
 * first on PYTHONPATH and passes the options in APX_PY_HOOKS, APX_TRACE_FUNCTIONS,
 * APX_TRACE_FUNCTIONS_THRESHOLD_NS, APX_MEMORY_SAMPLING_HZ and APX_PY_BACKWARD; every Python process of the run
 * imports it (and, from it, the user's own sitecustomize). apx_pyhooks_cleanup() removes the
 * folder after the run. Called by cmd_analyze.c, on apx's own thread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/parse.h"
#include "cli/analyze_pyhooks.h"
#include "cli/cli.h"

#include "base/banned.h"

int apx_pyhooks_opt(struct apx_pyhooks_opts *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'T':
		if (!*arg || !strcmp(arg, "@"))
			return apx_cli_usage_error("analyze", "--trace-functions takes "
						   "module:function[,...] or @FILE.json");
		if (arg[0] == '@' && access(arg + 1, R_OK) < 0)
			return apx_cli_usage_error("analyze", "--trace-functions: cannot read '%s': %s",
						   arg + 1, strerror(errno));
		if (arg[0] != '@' && !strchr(arg, ':'))
			return apx_cli_usage_error("analyze", "--trace-functions takes "
						   "module:function[,...] (e.g. mymodel:Model.forward), "
						   "not '%s'", arg);
		o->trace = arg;
		return 0;
	case 'H':
		if (apx_parse_u64(arg, APX_PYHOOKS_THRESHOLD_US_MAX, &v) < 0)
			return apx_cli_usage_error("analyze", "--trace-functions-threshold takes a "
						   "whole number of microseconds, not '%s'", arg);
		o->threshold_us = v;
		return 0;
	case 'S':
		if (apx_parse_u64(arg, APX_PYHOOKS_HZ_MAX, &v) < 0)
			return apx_cli_usage_error("analyze", "--memory-sampling takes a whole number "
						   "of Hz from 0 (off) to %u, not '%s'",
						   APX_PYHOOKS_HZ_MAX, arg);
		o->mem_hz = (unsigned)v;
		return 0;
	case 'W':
		if (strcmp(arg, "nvtx") && strcmp(arg, "none"))
			return apx_cli_usage_error("analyze", "--python-backward must be nvtx or "
						   "none, not '%s'", arg);
		o->backward = !strcmp(arg, "nvtx");
		return 0;
	default:
		return APX_EXIT_USAGE;
	}
}

/* Copy src to dst (created, 0644); 0 or negative errno. */
static int copy_file(const char *src, const char *dst)
{
	char buf[16384];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, r = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0) {
		r = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				r = -errno;
				goto out;
			}
			done += w;
		}
	}
out:
	if (out >= 0 && close(out) < 0 && !r)
		r = -errno;
	close(in);
	return r;
}

static int set_u64(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return setenv(name, buf, 1);
}

/* The hooks' variables, and PYTHONPATH with dir first. */
static int set_env(const char *dir, const struct apx_pyhooks_opts *o)
{
	const char *prev = getenv("PYTHONPATH");
	char trace[PATH_MAX + 2];
	char *path;
	size_t len = strlen(dir) + (prev ? strlen(prev) : 0) + 2;
	int r;

	path = malloc(len);
	if (!path)
		return -ENOMEM;
	snprintf(path, len, "%s%s%s", dir, prev && *prev ? ":" : "", prev && *prev ? prev : "");
	r = setenv("PYTHONPATH", path, 1);
	free(path);
	if (r < 0)
		return -errno;
	if (o->trace && o->trace[0] == '@') {	/* the program may change folder: absolute */
		char real[PATH_MAX];

		if (!realpath(o->trace + 1, real))
			return -errno;
		snprintf(trace, sizeof(trace), "@%s", real);
		setenv("APX_TRACE_FUNCTIONS", trace, 1);
	} else if (o->trace) {
		setenv("APX_TRACE_FUNCTIONS", o->trace, 1);
	} else {
		unsetenv("APX_TRACE_FUNCTIONS");
	}
	set_u64("APX_TRACE_FUNCTIONS_THRESHOLD_NS", o->threshold_us * 1000u);
	set_u64("APX_MEMORY_SAMPLING_HZ", o->mem_hz);
	/* read by apx_site.py (emit_nvtx once CUDA is up) and by the collector (launch times) */
	if (o->backward)
		setenv("APX_PY_BACKWARD", "1", 1);
	else
		unsetenv("APX_PY_BACKWARD");
	return setenv("APX_PY_HOOKS", "1", 1) < 0 ? -errno : 0;
}

void apx_pyhooks_setup(const char *inject_lib, const struct apx_pyhooks_opts *o, char *ret_dir,
		       size_t cap)
{
	const char *tmp = getenv("TMPDIR"), *slash = strrchr(inject_lib, '/');
	char site[PATH_MAX], dst[PATH_MAX + 32];
	int n, r;

	ret_dir[0] = 0;
	unsetenv("APX_PY_HOOKS");
	unsetenv("APX_PY_BACKWARD");
	/* APX_TUNE_FIXES, APX_TUNE_STEPS: apx tune's fixes and step bound, applied by the same
	 * hooks (cmd_tune.c) */
	if (!o->trace && !o->mem_hz && !o->backward && !getenv("APX_TUNE_FIXES") &&
	    !getenv("APX_TUNE_STEPS"))
		return;
	n = slash ? snprintf(site, sizeof(site), "%.*s/apx_site.py", (int)(slash - inject_lib),
			     inject_lib) : -1;
	if (n < 0 || (size_t)n >= sizeof(site) || access(site, R_OK) < 0) {
		apx_log_warn("apx_site.py is not beside '%s': %s are not recorded",
			     inject_lib, o->trace ? "--trace-functions ranges and PyTorch memory "
			     "samples" : "PyTorch memory samples");
		return;
	}
	n = snprintf(ret_dir, cap, "%s/apx-py-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (n < 0 || (size_t)n >= cap || !mkdtemp(ret_dir)) {
		apx_log_errno(-errno, "cannot make a folder for the Python hooks in '%s'; "
			      "function ranges and PyTorch memory samples are not recorded",
			      tmp && *tmp ? tmp : "/tmp");
		ret_dir[0] = 0;
		return;
	}
	/* mkdtemp makes it 0700: a program run under another user (sudo -u) still reads it */
	(void)chmod(ret_dir, 0755);
	snprintf(dst, sizeof(dst), "%s/sitecustomize.py", ret_dir);
	r = copy_file(site, dst);
	if (r == 0)
		r = set_env(ret_dir, o);
	if (r < 0) {
		apx_log_errno(r, "cannot set up the Python hooks in '%s'; function ranges "
			      "and PyTorch memory samples are not recorded", ret_dir);
		unsetenv("APX_PY_HOOKS");
		apx_pyhooks_cleanup(ret_dir);
		ret_dir[0] = 0;
	}
}

/* Remove the files of folder dir (depth: dir/__pycache__/x), then dir. */
static void remove_tree(const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth < 2)
			remove_tree(path, depth + 1);
		else
			(void)unlink(path);
	}
	closedir(d);
	if (rmdir(dir) < 0 && depth == 0)
		apx_log_warn("could not remove the Python hooks' folder '%s': %s", dir,
			     strerror(errno));
}

void apx_pyhooks_cleanup(const char *dir)
{
	if (dir && *dir)
		remove_tree(dir, 0);
}
