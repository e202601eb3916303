/*
 * cmd_init.c - `apx init`: start the nvperfd daemon (in the background, single instance guarded
 * by its pid-file lock, returning once it accepts clients), or in the foreground for debugging.
 * Finds nvperfd next to the apx binary, then in /usr/sbin, /usr/local/sbin and $PATH. Called from
 * main.c; the daemon itself is lib/daemon/main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/config.h"
#include "daemon/ctl_client.h"

#include "base/banned.h"

const char apx_cmd_init_usage[] =
	"usage: apx init [--foreground] [--config PATH] [--nvperfd PATH]\n"
	"\n"
	"Start nvperfd, the daemon that tracks every Python process on this machine and leaves a\n"
	"summary of each (see 'apx status', 'apx top', 'apx history'). It needs root. Only one\n"
	"instance runs at a time (a lock on its pid file); under systemd use the nvperfd unit\n"
	"instead.\n"
	"\n"
	"  -f, --foreground   run in the foreground, logging to stderr too (Ctrl-C stops it)\n"
	"  -c, --config PATH  machine config (default " APX_CONF_MACHINE_PATH ")\n"
	"      --nvperfd PATH the daemon binary to run\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 the daemon runs; 1 it could not start (already running, not root...);\n"
	"2 usage error.\n";

static int find_daemon(char *buf, size_t cap)	/* cap >= PATH_MAX */
{
	static const char *const dirs[] = { "/usr/sbin", "/usr/local/sbin", "/usr/bin",
					    "/usr/local/bin" };
	char self[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *path = getenv("PATH");

	if (n > 0) {
		char *slash;

		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, cap, "%s/nvperfd", self);
			if (access(buf, X_OK) == 0)
				return 0;
		}
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, cap, "%s/nvperfd", dirs[i]);
		if (access(buf, X_OK) == 0)
			return 0;
	}
	while (path && *path) {
		size_t l = strcspn(path, ":");

		snprintf(buf, cap, "%.*s/nvperfd", (int)l, path);
		if (l && access(buf, X_OK) == 0)
			return 0;
		path += l + (path[l] == ':');
	}
	return -ENOENT;
}

int apx_cmd_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "nvperfd", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char a_name[] = "nvperfd", a_fg[] = "--foreground", a_err[] = "--stderr",
		    a_conf[] = "--config";
	const char *config = NULL, *daemon_path = NULL;
	char confbuf[PATH_MAX];
	char found[PATH_MAX], *args[8];
	struct apx_conf conf;
	struct apx_conf_error err = { 0 };
	int c, fg = 0, n = 0, status, r;
	pid_t pid;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fc:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			fg = 1;
			break;
		case 'c':
			config = optarg;
			break;
		case 'N':
			daemon_path = optarg;
			break;
		case 'h':
			apx_cli_print_usage("init");
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("init", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("init", opts, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return apx_cli_usage_error("init", "unexpected argument '%s'", argv[optind]);
	if (!daemon_path) {
		if (find_daemon(found, sizeof(found)) < 0) {
			fprintf(stderr, "apx init: cannot find the nvperfd binary (next to apx, in "
				"/usr/sbin or in $PATH); give it with --nvperfd PATH\n");
			return APX_EXIT_FAIL;
		}
		daemon_path = found;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "apx init: nvperfd needs root (it subscribes to the kernel's process "
			"events and reads every process's /proc); run 'sudo apx init'\n");
		return APX_EXIT_FAIL;
	}
	/* check the config here, so the error reaches the terminal with its line and column */
	apx_conf_defaults(&conf);
	r = apx_conf_load(config ? config : APX_CONF_MACHINE_PATH, APX_CONF_MACHINE, (uid_t)-1,
			  &conf, &err);
	if (r < 0 && !(r == -ENOENT && !config)) {
		fprintf(stderr, "apx init: %s\n", err.msg);
		return APX_EXIT_FAIL;
	}
	args[n++] = a_name;
	if (fg) {
		args[n++] = a_fg;
		args[n++] = a_err;
	}
	if (config) {
		args[n++] = a_conf;
		snprintf(confbuf, sizeof(confbuf), "%s", config);
		args[n++] = confbuf;
	}
	args[n] = NULL;
	fflush(stdout);
	if (fg) {
		execv(daemon_path, args);
		fprintf(stderr, "apx init: cannot run '%s': %s\n", daemon_path, strerror(errno));
		return APX_EXIT_FAIL;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "apx init: fork: %s\n", strerror(errno));
		return APX_EXIT_FAIL;
	}
	if (pid == 0) {
		execv(daemon_path, args);
		fprintf(stderr, "apx init: cannot run '%s': %s\n", daemon_path, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return APX_EXIT_FAIL;	/* nvperfd said why on stderr */
	{
		char *buf, e[256];
		size_t len;

		r = apx_ctl_request(conf.socket_path, "ping", &buf, &len, e, sizeof(e));
		if (r < 0) {
			fprintf(stderr, "apx init: nvperfd started but does not answer on '%s': %s\n",
				conf.socket_path, strerror(-r));
			return APX_EXIT_FAIL;
		}
		free(buf);
	}
	printf("nvperfd started: socket %s, log %s, summaries in %s/UID\n", conf.socket_path,
	       conf.log_file[0] ? conf.log_file : "(none)", conf.state_dir);
	return APX_EXIT_OK;
}
