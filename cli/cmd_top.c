/*
 * cmd_top.c - `apx top`: `apx status` refreshed in place, like top/nvtop. On a terminal it
 * switches to raw keyboard mode (keys: q quit, c/m/p/a/w/g sort by CPU, memory, pid, age,
 * context switches, GPU memory) and redraws every --delay seconds at the terminal's size;
 * otherwise it prints one table (or JSON object) per refresh, --iterations times. Waits on the
 * keyboard with poll(2) between refreshes. Called from main.c; data from nvperfd's control
 * socket.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/parse.h"
#include "cli/cli.h"
#include "daemon/ctl_client.h"
#include "daemon/status_view.h"

#include "base/banned.h"

const char apx_cmd_top_usage[] =
	"usage: apx top [--delay SECONDS] [--iterations N] [--sort KEY] [--json] [--socket PATH]\n"
	"\n"
	"Watch the Python processes nvperfd tracks, refreshed in place. Keys: q quit; c, m, p, a,\n"
	"w, g sort by CPU, memory, pid, age, context switches or GPU memory. Not on a terminal\n"
	"(or with --json) it prints one table or JSON object per refresh, $COLUMNS (or 100)\n"
	"wide. Columns as 'apx status' (see 'apx help status'): a line per GPU, then GPU, GMEM,\n"
	"SM%, IDLE%, H2D and L2 per process, '-' where not known.\n"
	"\n"
	"  -d, --delay SECONDS   refresh period (default 2)\n"
	"  -n, --iterations N    stop after N refreshes (default: until q or Ctrl-C)\n"
	"  -s, --sort KEY        cpu (default), rss, pid, age, csw or gpu (GPU memory)\n"
	"  -j, --json            one JSON object per refresh (as 'apx status --json')\n"
	"  -S, --socket PATH     the daemon's socket (default $NVPERFD_SOCKET or /run/nvperfd.sock)\n"
	"  -h, --help            show this help\n";

/* Set by the SIGINT/SIGTERM handler, read by the refresh loop (one thread). */
static volatile sig_atomic_t top_stop;

static void on_stop(int sig)
{
	(void)sig;
	top_stop = 1;
}

int apx_cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = apx_ctl_default_socket();
	uint64_t delay_ns = 2000000000ull, iters = 0;
	struct termios saved, raw;
	struct sigaction sa = { 0 };
	int c, json = 0, key = APX_SV_SORT_CPU, interactive, rc = APX_EXIT_OK;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:n:s:jS:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (apx_parse_seconds_ns(optarg, &delay_ns) < 0 || delay_ns < 100000000ull)
				return apx_cli_usage_error("top", "--delay: expected seconds >= 0.1, "
							   "not '%s'", optarg);
			break;
		case 'n':
			if (apx_parse_u64(optarg, 1u << 30, &iters) < 0 || !iters)
				return apx_cli_usage_error("top", "--iterations: expected a count >= 1, "
							   "not '%s'", optarg);
			break;
		case 's':
			key = apx_sv_sort_parse(optarg);
			if (key < 0)
				return apx_cli_usage_error("top", "--sort: expected cpu, rss, pid, age, "
							   "csw or gpu, not '%s'", optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'h':
			apx_cli_print_usage("top");
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("top", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("top", opts, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return apx_cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
	interactive = !json && isatty(0) && isatty(1) && tcgetattr(0, &saved) == 0;
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (interactive) {
		raw = saved;
		raw.c_lflag &= (tcflag_t)~(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
		fputs("\033[?1049h\033[?25l", stdout);	/* alternate screen, hide cursor */
	}
	for (uint64_t i = 0; !top_stop && (!iters || i < iters); i++) {
		struct apx_sv sv;
		char err[256] = "";
		int r = apx_sv_fetch(sock, &sv, err, sizeof(err));
		struct pollfd p = { 0, POLLIN, 0 };
		struct timespec now;
		int64_t left_ms;
		FILE *out = stdout;

		if (r < 0) {
			if (interactive)
				fputs("\033[?25h\033[?1049l", stdout);
			fflush(stdout);
			rc = apx_ctl_fail("top", sock, r, err);
			goto out;
		}
		apx_sv_sort(&sv, (enum apx_sv_sort)key);
		if (json) {
			apx_sv_print_json(stdout, &sv);
		} else if (interactive) {
			struct winsize ws = { 0 };
			char when[16] = "", head[200];
			time_t t = time(NULL);
			struct tm tm;
			size_t rows;

			if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col)
				ws.ws_col = 100, ws.ws_row = 30;
			if (localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
			snprintf(head, sizeof(head), "apx top - %s - %zu Python processes - "
				 "sort: %s - q quit, c/m/p/a/w/g sort", when, sv.nprocs,
				 apx_sv_sort_name((enum apx_sv_sort)key));
			/* the screen: 2 lines of ours, the GPU lines, the table's header, a
			 * "... more" line, and room left at the bottom */
			rows = ws.ws_row > 8 + sv.ngpus ? ws.ws_row - 8 - sv.ngpus : 1;
			printf("\033[H\033[2J%.*s\n\n", (int)ws.ws_col, head);
			out = apx_cli_term_open();	/* other processes' commands, escaped */
			apx_sv_print_table(out, &sv, ws.ws_col, rows);
		} else {
			out = apx_cli_term_open();
			apx_sv_print_table(out, &sv, apx_sv_width(1), 0);
			fputc('\n', out);
		}
		apx_cli_term_close(out);
		fflush(stdout);
		apx_sv_release(&sv);
		if (iters && i + 1 >= iters)
			break;
		/* wait for the next refresh, or a key */
		clock_gettime(CLOCK_MONOTONIC, &now);
		left_ms = (int64_t)(delay_ns / 1000000);
		while (!top_stop && left_ms > 0) {
			struct timespec t2;
			char ch;
			int pr = poll(&p, interactive ? 1 : 0, (int)left_ms);

			if (pr > 0 && read(0, &ch, 1) == 1) {
				int k = -1;

				if (ch == 'q' || ch == 'Q')
					top_stop = 1;
				k = ch == 'c' ? APX_SV_SORT_CPU : ch == 'm' ? APX_SV_SORT_RSS :
				    ch == 'p' ? APX_SV_SORT_PID : ch == 'a' ? APX_SV_SORT_AGE :
				    ch == 'w' ? APX_SV_SORT_CSW : ch == 'g' ? APX_SV_SORT_GPU : -1;
				if (k >= 0) {
					key = k;
					break;	/* redraw now */
				}
			}
			clock_gettime(CLOCK_MONOTONIC, &t2);
			left_ms = (int64_t)(delay_ns / 1000000) -
				  ((t2.tv_sec - now.tv_sec) * 1000 + (t2.tv_nsec - now.tv_nsec) / 1000000);
		}
	}
	if (interactive)
		fputs("\033[?25h\033[?1049l", stdout);
out:
	if (interactive)
		tcsetattr(0, TCSANOW, &saved);
	fflush(stdout);
	return rc;
}
