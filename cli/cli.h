/*
 * cli.h - the subcommands of the apx command. Each lives in cmd_<name>.c and is called by the
 * dispatch table in main.c with argv[0] = the subcommand name. Return value = exit status:
 * 0 success, 1 runtime error or damaged input, 2 usage error.
 */
#ifndef APX_CLI_H
#define APX_CLI_H

#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>

#define APX_EXIT_OK 0
#define APX_EXIT_FAIL 1
#define APX_EXIT_USAGE 2

struct apx_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;	/* one line for `apx --help` */
	const char *usage;	/* full text for `apx help NAME` and `apx NAME --help` */
};

int apx_cmd_info(int argc, char **argv);
extern const char apx_cmd_info_usage[];
int apx_cmd_report(int argc, char **argv);
extern const char apx_cmd_report_usage[];
int apx_cmd_diff(int argc, char **argv);
extern const char apx_cmd_diff_usage[];
int apx_cmd_tune(int argc, char **argv);
extern const char apx_cmd_tune_usage[];
int apx_cmd_init(int argc, char **argv);
extern const char apx_cmd_init_usage[];
int apx_cmd_status(int argc, char **argv);
extern const char apx_cmd_status_usage[];
int apx_cmd_top(int argc, char **argv);
extern const char apx_cmd_top_usage[];
int apx_cmd_history(int argc, char **argv);
extern const char apx_cmd_history_usage[];
int apx_cmd_config(int argc, char **argv);
extern const char apx_cmd_config_usage[];
int apx_cmd_export(int argc, char **argv);
extern const char apx_cmd_export_usage[];
int apx_cmd_analyze(int argc, char **argv);
extern const char apx_cmd_analyze_usage[];
int apx_cmd_attach(int argc, char **argv);
/* attach_gpu.c: apx attach PID's GPU work (the collector loaded into PID for duration_ns);
 * an APX_EXIT_* status, the messages said. */
int apx_attach_gpu(pid_t pid, uint64_t duration_ns, const char *output, int force);
/* cmd_analyze.c: libapx-inject.so's real path (APX_INJECT_LIB, beside apx, ../lib/apx/). */
int apx_find_inject_lib(char *out, size_t cap);
extern const char apx_cmd_attach_usage[];
/* analyze_calibrate.c: the collector's cost per kernel launch on this machine (cached). */
int apx_analyze_calibrate(const char *inject_lib, const char *level, uint64_t *ret_ns);
/* Environment for a helper tool run by apx analyze (apx-calibrate, apx-metrics): ours without
 * the collector's variables, plus extra (calloc'd array; free it, not its strings). */
char **apx_tool_env(char *const *extra, size_t nextra);

/* analyze_metrics.c: --metrics[=SET], --metrics-list, --metrics-frequency (PM sampling) and
 * --replay, --kernels, --replay-max, --replay-flush (kernel replay with the range profiler). */
struct apx_metrics_opts {
	const char *spec;		/* set name or list; NULL: no metrics */
	unsigned hz;			/* 0: default */
	int replay;			/* --replay: per-kernel counters by kernel replay */
	const char *kernels;		/* --kernels REGEX, or NULL */
	unsigned replay_max;		/* --replay-max N, 0: default */
	int replay_flush;		/* --replay-flush: L2 swept before each replayed launch */
};
/* Check the options with apx-metrics (beside inject_lib) against this machine's GPU and put
 * them into the program's environment; "help" lists the sets and the GPU's metrics. Returns
 * an exit status; *stop = 1 when apx must exit with it now (help, or a metric refused). */
int apx_analyze_metrics(const char *inject_lib, const struct apx_metrics_opts *m, int *stop);

/* The one of names[0..n) nearest to word (edit distance, a swap of two letters counting one):
 * at most 1 edit away, 2 for words longer than 4 letters; NULL when none is, or two are as
 * near. For "did you mean ...?" (main.c). */
const char *apx_cli_nearest(const char *word, const char *const *names, size_t n);
/* A command's getopt found arg unknown: "apx CMD: unknown option 'ARG'", with "did you mean
 * '--NAME'?" when a long option of opts (ending in a NULL name) is near; returns
 * APX_EXIT_USAGE. */
struct option;
int apx_cli_unknown_option(const char *cmd, const struct option *opts, const char *arg);

/* Print the usage of cmd to stdout (for --help) */
void apx_cli_print_usage(const char *name);
/* trace_header.c: h a new header record with what apx writes the same in every trace it makes
 * here (producer, version, creation time, host name and kernel, the clock and its offsets);
 * the caller adds pid, argv, cwd. The record points into host, which must live as long as h. */
struct apx_rec;
struct apx_cli_host {
	char name[256];
	char kernel[1024];
};
void apx_cli_header_init(struct apx_rec *h, const char *producer, struct apx_cli_host *host);
/* "apx NAME: MSG; see 'apx help NAME'" on stderr, returns APX_EXIT_USAGE. */
int apx_cli_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Text from traces, file names or other processes reaches stdout escaped (base/termsafe.h):
 * write it to the stream apx_cli_term_open() returns (stdout itself if the filter cannot be
 * made), then apx_cli_term_close() it. main.c. */
FILE *apx_cli_term_open(void);
void apx_cli_term_close(FILE *f);

#endif
