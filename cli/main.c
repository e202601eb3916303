/*
 * main.c - the apx command: global options (--help, --version), `apx help CMD`, and the
 * dispatch table of subcommands (one cmd_<name>.c each). Only subcommands that exist are
 * listed here. stdout goes through outfile.c's stream: a command whose output could not be
 * written (a full disk, /dev/full) exits 1 and says so once. Every message of a command reads
 * "apx CMD: ..." (the log prefix is set before it runs), and a mistyped command or long option
 * gets the nearest known name ("did you mean 'report'?", apx_cli_nearest()).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <apx/format.h>
#include <apx/version.h>

#include "base/termsafe.h"

#include "base/log.h"
#include "cli/cli.h"
#include "cli/outfile.h"

#include "base/banned.h"

static const struct apx_cmd commands[] = {
	{ "analyze", apx_cmd_analyze, "run a program with the CUPTI collector and write a trace",
	  apx_cmd_analyze_usage },
	{ "attach", apx_cmd_attach, "profile a running process for a while (or its Python only)",
	  apx_cmd_attach_usage },
	{ "info", apx_cmd_info, "check a trace file and print its header, chunks and record counts",
	  apx_cmd_info_usage },
	{ "report", apx_cmd_report, "explain traces: findings with estimated savings, and tables",
	  apx_cmd_report_usage },
	{ "diff", apx_cmd_diff, "compare two traces of one program step by step: before and after",
	  apx_cmd_diff_usage },
	{ "tune", apx_cmd_tune, "measure what fixing the top findings saves, in your program",
	  apx_cmd_tune_usage },
	{ "export", apx_cmd_export, "write traces for Perfetto, chrome://tracing, HTA or SQLite",
	  apx_cmd_export_usage },
	{ "init", apx_cmd_init, "start the nvperfd daemon", apx_cmd_init_usage },
	{ "status", apx_cmd_status, "Python processes nvperfd tracks now", apx_cmd_status_usage },
	{ "top", apx_cmd_top, "apx status, refreshed in place", apx_cmd_top_usage },
	{ "history", apx_cmd_history, "summaries of your past Python processes", apx_cmd_history_usage },
	{ "config", apx_cmd_config, "show or change your nvperfd settings", apx_cmd_config_usage },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct apx_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_help(FILE *f)
{
	fprintf(f, "usage: apx [--version] [--help] COMMAND [ARGS]\n\n"
		   "apx profiles PyTorch programs on NVIDIA GPUs.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'apx help COMMAND' (or 'apx COMMAND --help') describes one command.\n");
}

FILE *apx_cli_term_open(void)
{
	FILE *f = apx_term_filter_open(stdout);

	return f ? f : stdout;
}

void apx_cli_term_close(FILE *f)
{
	if (f != stdout)
		fclose(f);
	fflush(stdout);
}

void apx_cli_print_usage(const char *name)
{
	const struct apx_cmd *c = find_cmd(name);

	if (c)
		fputs(c->usage, stdout);
}

/* Optimal string alignment distance (Levenshtein plus swaps of two neighbours: "reprot"
 * is 1 from "report"), for words up to 31 bytes; longer ones are never near. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	unsigned d[32][32];

	if (n > 31 || m > 31)
		return 99;
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			unsigned c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[n][m];
}

const char *apx_cli_nearest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word);
	unsigned best = len > 4 ? 2 : 1, tie = 0;	/* near enough: 1 edit, 2 past 4 letters */
	const char *found = NULL;

	for (size_t i = 0; i < n; i++) {
		unsigned d = edit_distance(word, names[i]);

		if (d < best || (d == best && !found)) {
			best = d;
			found = names[i];
			tie = 0;
		} else if (d == best) {
			tie = 1;
		}
	}
	return tie ? NULL : found;	/* two as near: no guess */
}

int apx_cli_unknown_option(const char *cmd, const struct option *opts, const char *arg)
{
	const char *names[64], *near = NULL;
	char word[64];
	size_t n = 0, len;

	if (!strncmp(arg, "--", 2) && arg[2]) {
		len = strcspn(arg + 2, "=");
		snprintf(word, sizeof(word), "%.*s", (int)len, arg + 2);
		for (; opts && opts->name && n < sizeof(names) / sizeof(names[0]); opts++)
			names[n++] = opts->name;
		near = apx_cli_nearest(word, names, n);
	}
	if (near)
		return apx_cli_usage_error(cmd, "unknown option '%s'; did you mean '--%s'?", arg,
					   near);
	return apx_cli_usage_error(cmd, "unknown option '%s'", arg);
}

int apx_cli_usage_error(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "apx %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee 'apx help %s'\n", name);
	return APX_EXIT_USAGE;
}

/* The command line, run; its exit status. */
static int run(int argc, char **argv)
{
	static char prog[32];	/* the log prefix, "apx CMD" */
	const struct apx_cmd *c;

	if (argc < 2) {
		print_help(stderr);
		return APX_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_help(stdout);
		return APX_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("apx %s (trace format %d.%d)\n", APX_VERSION, APX_FORMAT_MAJOR, APX_FORMAT_MINOR);
		return APX_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			print_help(stdout);
			return APX_EXIT_OK;
		}
		c = find_cmd(argv[2]);
		if (!c) {
			const char *names[NCOMMANDS], *near;

			for (size_t i = 0; i < NCOMMANDS; i++)
				names[i] = commands[i].name;
			near = apx_cli_nearest(argv[2], names, NCOMMANDS);
			apx_log_set_prog("apx help");
			if (near)
				apx_log_error("no command '%s'; did you mean '%s'?", argv[2], near);
			else
				apx_log_error("no command '%s'; 'apx --help' lists them", argv[2]);
			return APX_EXIT_USAGE;
		}
		fputs(c->usage, stdout);
		return APX_EXIT_OK;
	}
	if (argv[1][0] == '-') {
		static const char *const global[] = { "--help", "--version" };
		const char *near = apx_cli_nearest(argv[1], global, 2);

		if (near)
			apx_log_error("unknown option '%s'; did you mean '%s'?", argv[1], near);
		else
			apx_log_error("unknown option '%s'; 'apx --help' lists the options", argv[1]);
		return APX_EXIT_USAGE;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		const char *names[NCOMMANDS + 1], *near;

		for (size_t i = 0; i < NCOMMANDS; i++)
			names[i] = commands[i].name;
		names[NCOMMANDS] = "help";
		near = apx_cli_nearest(argv[1], names, NCOMMANDS + 1);
		if (near)
			apx_log_error("'%s' is not an apx command; did you mean '%s'?", argv[1], near);
		else
			apx_log_error("'%s' is not an apx command; 'apx --help' lists them", argv[1]);
		return APX_EXIT_USAGE;
	}
	snprintf(prog, sizeof(prog), "apx %s", c->name);
	apx_log_set_prog(prog);	/* "apx CMD: ..." for everything the command says */
	return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	int rc;

	apx_log_set_prog("apx");
	apx_stdout_init();	/* a failed write to stdout is kept, and said once below */
	rc = run(argc, argv);
	/* data went to stdout: a full disk or a closed pipe must not pass as success */
	if (apx_stdout_check(argc > 1 && argv[1][0] != '-' ? argv[1] : "") < 0 &&
	    rc == APX_EXIT_OK)
		rc = APX_EXIT_FAIL;
	return rc;
}
