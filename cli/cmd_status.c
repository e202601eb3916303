/*
 * cmd_status.c - `apx status`: the Python processes nvperfd tracks now (pid, user, age, CPU %,
 * RSS, context switches, threads, CUDA use, and from NVML and the uprobes: GPU, GPU memory,
 * SM %, GPU idle share, host-to-device bytes, L2 persistence) under a line per GPU, and the
 * recent findings, as a table or JSON; with --stats, the daemon's own counters. Talks to
 * nvperfd over its control socket (lib/daemon/ctl_client.c); a user sees only their
 * processes, root all. Called from main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/ctl_client.h"
#include "daemon/status_view.h"

#include "base/banned.h"

const char apx_cmd_status_usage[] =
	"usage: apx status [--json] [--sort KEY] [--stats] [--socket PATH]\n"
	"\n"
	"Show the Python processes the nvperfd daemon tracks now, and the recent findings\n"
	"(thresholds crossed by processes that ended). You see your own processes; root sees all.\n"
	"Above the table, a line per GPU (utilization, memory, power). GPU columns, at the last\n"
	"sample: GPU (device index, '+' when on several), GMEM (its GPU memory), SM% (its SM\n"
	"utilization); so far: IDLE% (share of the samples where its GPU was idle), H2D (bytes\n"
	"copied host to device, with the share from pageable memory: '1.2G 80%pg'), L2 (the\n"
	"persisting-L2 limit it set / access-policy windows: '16M/1w', 'no' when neither).\n"
	"'-' means not known (no NVML, not on a GPU, no uprobes), never 0. The pageable copy\n"
	"rate (uprobe_copy_time = yes) is in the JSON only.\n"
	"The table fits the terminal ($COLUMNS or 100 columns when not one): on a narrow one\n"
	"the state, CUDA, threads, peak RSS, context switches, age and L2 columns go first.\n"
	"\n"
	"  -j, --json         print JSON (schema version 1) instead of a table\n"
	"  -s, --sort KEY     cpu (default), rss, pid, age, csw or gpu (GPU memory)\n"
	"      --stats        print the daemon's counters instead (events, overruns, CPU time...)\n"
	"  -S, --socket PATH  the daemon's socket (default $NVPERFD_SOCKET or /run/nvperfd.sock)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 ok; 1 the daemon is not running or did not answer; 2 usage error.\n";

static int print_stats(const char *sock, int json)
{
	char *buf, err[256], *line, *next;
	size_t len;
	int r;

	r = apx_ctl_request(sock, "stats", &buf, &len, err, sizeof(err));
	if (r < 0)
		return r;
	if (json)
		printf("{\"version\":1");
	for (line = buf; line && *line; line = next) {
		char *f[4];

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (apx_ctl_split(line, f, 4) < 3 || strcmp(f[0], "stat"))
			continue;
		if (json) {
			printf(",");
			apx_json_str(stdout, f[1]);
			printf(":%" PRIu64, (uint64_t)strtoull(f[2], NULL, 10));
		} else {
			printf("%-20s %s\n", f[1], f[2]);
		}
	}
	if (json)
		printf("}\n");
	free(buf);
	return 0;
}

int apx_cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "sort", required_argument, NULL, 's' },
		{ "stats", no_argument, NULL, 'T' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = apx_ctl_default_socket();
	struct apx_sv sv;
	char err[256] = "";
	int c, json = 0, stats = 0, key = APX_SV_SORT_CPU, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":js:S:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 's':
			key = apx_sv_sort_parse(optarg);
			if (key < 0)
				return apx_cli_usage_error("status", "--sort: expected cpu, rss, pid, "
							   "age, csw or gpu, not '%s'", optarg);
			break;
		case 'T':
			stats = 1;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'h':
			apx_cli_print_usage("status");
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("status", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("status", opts, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return apx_cli_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (stats) {
		r = print_stats(sock, json);
		return r < 0 ? apx_ctl_fail("status", sock, r, err) : APX_EXIT_OK;
	}
	r = apx_sv_fetch(sock, &sv, err, sizeof(err));
	if (r < 0)
		return apx_ctl_fail("status", sock, r, err);
	apx_sv_sort(&sv, (enum apx_sv_sort)key);
	if (json) {
		apx_sv_print_json(stdout, &sv);
	} else {
		FILE *out = apx_cli_term_open();	/* commands of other users' processes */

		apx_sv_print_table(out, &sv, apx_sv_width(1), 0);
		apx_cli_term_close(out);
	}
	apx_sv_release(&sv);
	return APX_EXIT_OK;
}
