/*
 * cmd_top.c - `apx top`: `apx status` refreshed in place, like top/nvtop. On a terminal it
 * switches to raw keyboard mode (keys: q quit, c/m/p/a/w/g sort by CPU, memory, pid, age,
 * context switches, GPU memory; A attach) and redraws every --delay seconds at the terminal's
 * size; otherwise it prints one table (or JSON object) per refresh, --iterations times. Waits
 * on the keyboard with poll(2) between refreshes. A asks for a PID (the first row's by
 * default) and runs `apx attach PID --duration 10 -o attach-PID.apx` (--python-only for a
 * process not using CUDA) as a child of its own, /proc/self/exe, output and errors into
 * attach-PID.log in the current folder; its state is the second line of the screen, and it is
 * reaped with waitpid(WNOHANG) at each refresh. Called from main.c; data from nvperfd's
 * control socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
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
	"w, g sort by CPU, memory, pid, age, context switches or GPU memory; A attach: asks for a\n"
	"PID (Enter alone: the first row's; Esc cancels) and runs 'apx attach PID --duration 10\n"
	"-o attach-PID.apx' (with --python-only when it does not use CUDA) in the background, its\n"
	"messages in attach-PID.log, both in the current folder; the second line says how it\n"
	"went. Not on a terminal (or with --json) it prints one table or JSON object per refresh,\n"
	"$COLUMNS (or 100) wide. Columns as 'apx status' (see 'apx help status'): a line per GPU,\n"
	"then GPU, GMEM, SM%, IDLE%, H2D and L2 per process, '-' where not known.\n"
	"\n"
	"  -d, --delay SECONDS   refresh period (default 2)\n"
	"  -n, --iterations N    stop after N refreshes (default: until q or Ctrl-C)\n"
	"  -s, --sort KEY        cpu (default), rss, pid, age, csw or gpu (GPU memory)\n"
	"  -j, --json            one JSON object per refresh (as 'apx status --json')\n"
	"  -S, --socket PATH     the daemon's socket (default $NVPERFD_SOCKET or /run/nvperfd.sock)\n"
	"  -h, --help            show this help\n";

/* Set by the SIGINT/SIGTERM handler, read by the refresh loop (one thread). */
static volatile sig_atomic_t top_stop;

#define ATTACH_SECONDS "10"		/* as the summaries' suggestion (analysis/procobs.h) */

/* The attach started with A: one at a time; the refresh loop alone reads and writes it. */
struct top_attach {
	pid_t child;			/* the apx attach process; 0: none running */
	int pid;			/* the process it attaches to */
	int prompt;			/* asking for a PID */
	int def_pid;			/* ... the first row's, taken by Enter alone; 0: none */
	char typed[8];			/* ... the digits typed */
	char msg[96];			/* the screen's second line: our words and numbers only */
};

/* The argument vector of `apx attach` for pid: the collector for a process using CUDA (or not
 * in the list: cuda < 0), Python stacks from outside for one that does not (cuda 0). spid and
 * out are the caller's buffers (16 and 48 bytes); argv has room for 9. */
static void attach_argv(char **argv, int pid, int cuda, char *spid, char *out)
{
	int n = 0;

	snprintf(spid, 16, "%d", pid);
	snprintf(out, 48, "attach-%d.apx", pid);
	argv[n++] = (char *)"apx";
	argv[n++] = (char *)"attach";
	argv[n++] = spid;
	if (cuda == 0)
		argv[n++] = (char *)"--python-only";
	argv[n++] = (char *)"--duration";
	argv[n++] = (char *)ATTACH_SECONDS;
	argv[n++] = (char *)"-o";
	argv[n++] = out;
	argv[n] = NULL;
}

/* Start `apx attach` on pid as a child (this binary again), stdin from /dev/null, stdout and
 * stderr into attach-PID.log, in a process group of its own (Ctrl-C in top leaves it be). */
static void attach_start(struct top_attach *at, int pid, int cuda)
{
	char spid[16], out[48], log[48], *argv[10];
	int fd, nul;
	pid_t c;

	attach_argv(argv, pid, cuda, spid, out);
	snprintf(log, sizeof(log), "attach-%d.log", pid);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(at->msg, sizeof(at->msg), "attach: cannot write %s: %s", log,
			 strerror(errno));
		return;
	}
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	c = fork();
	if (c == 0) {
		static const char bad[] = "apx top: cannot run /proc/self/exe\n";

		(void)setpgid(0, 0);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv("/proc/self/exe", argv);
		(void)!write(2, bad, sizeof(bad) - 1);
		_exit(127);
	}
	if (nul >= 0)
		close(nul);
	close(fd);
	if (c < 0) {
		snprintf(at->msg, sizeof(at->msg), "attach: cannot start it: %s", strerror(errno));
		return;
	}
	at->child = c;
	at->pid = pid;
	snprintf(at->msg, sizeof(at->msg), "attaching to PID %d%s for %s s ...", pid,
		 cuda == 0 ? " (Python stacks only)" : "", ATTACH_SECONDS);
}

/* Its end, if it ended: waitpid on that child only, never blocking. */
static void attach_reap(struct top_attach *at)
{
	int st = 0;
	pid_t r;

	if (!at->child)
		return;
	r = waitpid(at->child, &st, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return;
	if (r == at->child && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		snprintf(at->msg, sizeof(at->msg), "wrote attach-%d.apx", at->pid);
	else
		snprintf(at->msg, sizeof(at->msg), "attach to PID %d failed: see attach-%d.log",
			 at->pid, at->pid);
	at->child = 0;
}

/* Whether pid uses CUDA as the last table had it: 1, 0, or -1 when it is not in the table. */
static int sv_uses_cuda(const struct apx_sv *sv, int pid)
{
	for (size_t i = 0; i < sv->nprocs; i++)
		if (sv->procs[i].n[APX_CTL_PROC_PID] == (uint64_t)pid)
			return sv->procs[i].n[APX_CTL_PROC_CUDA] ? 1 : 0;
	return -1;
}

/* A key while asking for a PID: digits, Backspace, Enter (start), Esc or q (cancel). */
static void attach_prompt_key(struct top_attach *at, const struct apx_sv *sv, char ch)
{
	size_t n = strlen(at->typed);
	uint64_t pid = 0;

	if (ch >= '0' && ch <= '9') {
		if (n + 1 < sizeof(at->typed)) {
			at->typed[n] = ch;
			at->typed[n + 1] = 0;
		}
	} else if ((ch == 0x7f || ch == 0x08) && n) {
		at->typed[n - 1] = 0;
	} else if (ch == 0x1b || ch == 'q') {
		at->prompt = 0;
	} else if (ch == '\r' || ch == '\n') {
		at->prompt = 0;
		if (n && apx_parse_u64(at->typed, 1u << 30, &pid) < 0)
			pid = 0;
		if (!n)
			pid = (uint64_t)at->def_pid;
		if (!pid)
			snprintf(at->msg, sizeof(at->msg), "attach: no PID");
		else
			attach_start(at, (int)pid, sv_uses_cuda(sv, (int)pid));
	}
}

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
	struct top_attach at = { 0 };
	struct apx_sv sv = { 0 };	/* the last table drawn: A's first row and CUDA use */
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
		char err[256] = "";
		struct pollfd p = { 0, POLLIN, 0 };
		struct timespec now;
		int64_t left_ms;
		FILE *out = stdout;
		int r;

		apx_sv_release(&sv);
		r = apx_sv_fetch(sock, &sv, err, sizeof(err));
		attach_reap(&at);
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
			char when[16] = "", head[200], line2[120];
			time_t t = time(NULL);
			struct tm tm;
			size_t rows;

			if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col)
				ws.ws_col = 100, ws.ws_row = 30;
			if (localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
			snprintf(head, sizeof(head), "apx top - %s - %zu Python processes - "
				 "sort: %s - q quit, c/m/p/a/w/g sort, A attach", when, sv.nprocs,
				 apx_sv_sort_name((enum apx_sv_sort)key));
			if (at.prompt && at.def_pid)
				snprintf(line2, sizeof(line2), "attach to PID [%d]: %s_  (Enter "
					 "starts, Esc cancels)", at.def_pid, at.typed);
			else if (at.prompt)
				snprintf(line2, sizeof(line2), "attach to PID: %s_  (Enter starts, "
					 "Esc cancels)", at.typed);
			else
				snprintf(line2, sizeof(line2), "%s", at.msg);
			/* the screen: 2 lines of ours, the GPU lines, the table's header, a
			 * "... more" line, and room left at the bottom */
			rows = ws.ws_row > 8 + sv.ngpus ? ws.ws_row - 8 - sv.ngpus : 1;
			printf("\033[H\033[2J%.*s\n%.*s\n", (int)ws.ws_col, head, (int)ws.ws_col,
			       line2);
			out = apx_cli_term_open();	/* other processes' commands, escaped */
			apx_sv_print_table(out, &sv, ws.ws_col, rows);
		} else {
			out = apx_cli_term_open();
			apx_sv_print_table(out, &sv, apx_sv_width(1), 0);
			fputc('\n', out);
		}
		apx_cli_term_close(out);
		fflush(stdout);
		if (iters && i + 1 >= iters)
			break;
		/* wait for the next refresh, or a key */
		clock_gettime(CLOCK_MONOTONIC, &now);
		left_ms = (int64_t)(delay_ns / 1000000);
		while (!top_stop && left_ms > 0) {
			struct timespec t2;
			char keys[16];
			int pr = poll(&p, interactive ? 1 : 0, (int)left_ms);
			ssize_t nk = pr > 0 ? read(0, keys, sizeof(keys)) : 0;
			int redraw = 0;

			if (nk > 1 && keys[0] == 0x1b)
				nk = 0;		/* an arrow or function key: no binding */
			for (ssize_t j = 0; j < nk; j++) {
				char ch = keys[j];
				int k;

				if (at.prompt) {
					attach_prompt_key(&at, &sv, ch);
					redraw = 1;
					continue;
				}
				if (ch == 'q' || ch == 'Q') {
					top_stop = 1;
				} else if (ch == 'A' && at.child) {
					snprintf(at.msg, sizeof(at.msg), "attaching to PID %d: one "
						 "attach at a time", at.pid);
					redraw = 1;
				} else if (ch == 'A') {
					redraw = 1;
					at.prompt = 1;
					at.typed[0] = 0;
					at.def_pid = sv.nprocs ?
						     (int)sv.procs[0].n[APX_CTL_PROC_PID] : 0;
				} else {
					k = ch == 'c' ? APX_SV_SORT_CPU : ch == 'm' ? APX_SV_SORT_RSS :
					    ch == 'p' ? APX_SV_SORT_PID : ch == 'a' ? APX_SV_SORT_AGE :
					    ch == 'w' ? APX_SV_SORT_CSW : ch == 'g' ? APX_SV_SORT_GPU :
					    -1;
					if (k >= 0) {
						key = k;
						redraw = 1;
					}
				}
			}
			if (redraw)
				break;		/* redraw now */
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
	apx_sv_release(&sv);
	return rc;
}
