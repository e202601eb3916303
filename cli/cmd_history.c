/*
 * cmd_history.c - `apx history`: the summaries nvperfd left for the caller's past Python
 * processes (root: everyone's), newest first, as a table or JSON. The list comes from the
 * daemon (control socket), or, when it is not running or with --dir, from the state folder
 * itself; each file is then read with the .apx reader (include/apx/format.h). `apx info FILE`
 * checks one of them, `apx report FILE` explains it. Called from main.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>

#include "base/parse.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "daemon/config.h"
#include "daemon/ctl_client.h"
#include "daemon/status_view.h"

#include "base/banned.h"

const char apx_cmd_history_usage[] =
	"usage: apx history [--json] [-n COUNT] [--dir DIR] [--socket PATH]\n"
	"\n"
	"List the summaries nvperfd wrote when your tracked Python processes ended (root: every\n"
	"user's), newest first: when, pid, duration, exit status, CPU time, peak RSS, findings,\n"
	"command and file. Open one with 'apx report FILE' or check it with 'apx info FILE'.\n"
	"\n"
	"  -j, --json         print JSON (schema version 1)\n"
	"  -n, --count N      at most N entries (default 20; 0 = all)\n"
	"  -d, --dir DIR      read the summaries in DIR instead of asking the daemon\n"
	"  -S, --socket PATH  the daemon's socket (default $NVPERFD_SOCKET or /run/nvperfd.sock)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 ok (also when there is no summary yet); 1 error, or a listed file\n"
	"could not be read as a trace (named on stderr; a FIFO or device is never opened\n"
	"for reading); 2 usage error.\n";

struct hist {
	char *path;
	uint64_t mtime_ms, bytes;
	/* from the file */
	int ok;
	uint64_t pid, uid, start_ns, end_ns, cpu_ns, rss_peak, findings;
	int64_t exit_status, realtime_off;
	int cuda;
	char cmd[256];
	char user[64];
};

static int cmp_hist(const void *a, const void *b)
{
	const struct hist *x = a, *y = b;

	if (x->mtime_ms != y->mtime_ms)
		return x->mtime_ms > y->mtime_ms ? -1 : 1;
	return strcmp(y->path, x->path);
}

static void bytes_text(char *out, size_t cap, const struct apx_rec *r, unsigned f)
{
	size_t n = r->bytes[f] ? r->v[f] : 0, o = 0;

	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		unsigned char ch = r->bytes[f][i];

		out[o++] = ch == 0 ? ' ' : (char)ch;	/* escaped when printed */
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = 0;
}

/* Returns -errno (diag says why) when the file cannot be read as a trace. */
static int read_summary(struct hist *h, struct apx_diag *ret_diag)
{
	struct apx_reader *r;
	const struct apx_rec *hd;
	struct apx_diag diag;
	int k;

	k = apx_reader_open(h->path, &r, ret_diag);
	if (k < 0)
		return k;
	hd = apx_reader_header(r);
	h->pid = hd->v[APX_HEADER_PID];
	h->uid = hd->v[APX_HEADER_UID];
	h->start_ns = hd->v[APX_HEADER_START_NS];
	h->realtime_off = apx_rec_i64(hd, APX_HEADER_REALTIME_OFFSET_NS);
	bytes_text(h->cmd, sizeof(h->cmd), hd, APX_HEADER_ARGV);
	bytes_text(h->user, sizeof(h->user), hd, APX_HEADER_USER);
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		const struct apx_chunk_info *ci = apx_reader_chunk(r, i);
		struct apx_chunk_iter it;

		if (ci->type != APX_REC_PROCESS && ci->type != APX_REC_CPU &&
		    ci->type != APX_REC_FINDING)
			continue;
		if (apx_chunk_iter_init(&it, r, i, &diag) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &diag) > 0) {
			const struct apx_rec *rec = &it.rec;

			if (rec->type == APX_REC_PROCESS) {
				h->end_ns = rec->v[APX_PROCESS_END_NS];
				h->start_ns = rec->v[APX_PROCESS_START_NS];
				h->exit_status = apx_rec_i64(rec, APX_PROCESS_EXIT_STATUS);
				h->cuda = rec->v[APX_PROCESS_USES_CUDA] == 1;
			} else if (rec->type == APX_REC_CPU && rec->v[APX_CPU_TID] == 0) {
				uint64_t cpu = rec->v[APX_CPU_UTIME_NS] + rec->v[APX_CPU_STIME_NS];

				if (cpu > h->cpu_ns)
					h->cpu_ns = cpu;
				if (rec->v[APX_CPU_RSS_PEAK_BYTES] > h->rss_peak)
					h->rss_peak = rec->v[APX_CPU_RSS_PEAK_BYTES];
			} else if (rec->type == APX_REC_FINDING) {
				h->findings++;
			}
		}
	}
	h->ok = apx_reader_status(r) == APX_READ_COMPLETE ? 1 : 2;
	apx_reader_close(r);
	return 0;
}

static int add(struct hist **v, size_t *n, size_t *cap, const char *path, uint64_t mtime_ms,
	       uint64_t bytes)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct hist *nv = reallocarray(*v, nc, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[*n].path = strdup(path);
	if (!(*v)[*n].path)
		return -ENOMEM;
	(*v)[*n].mtime_ms = mtime_ms;
	(*v)[*n].bytes = bytes;
	(*n)++;
	return 0;
}

static int list_dir(const char *dirpath, struct hist **v, size_t *n, size_t *cap)
{
	DIR *dir = opendir(dirpath);
	struct dirent *de;

	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		char path[4096];
		struct stat st;

		if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".apx"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (add(v, n, cap, path, (uint64_t)st.st_mtim.tv_sec * 1000 +
			(uint64_t)st.st_mtim.tv_nsec / 1000000, (uint64_t)st.st_size) < 0)
			break;
	}
	closedir(dir);
	return 0;
}

static void print_json(const struct hist *v, size_t n)
{
	printf("{\"version\":1,\"summaries\":[");
	for (size_t i = 0; i < n; i++) {
		const struct hist *h = &v[i];

		printf("%s{\"path\":", i ? "," : "");
		apx_json_str(stdout, h->path);
		printf(",\"bytes\":%" PRIu64 ",\"mtime_unix_ms\":%" PRIu64 ",\"readable\":%s",
		       h->bytes, h->mtime_ms, h->ok == 1 ? "true" : "false");
		if (h->ok) {
			printf(",\"complete\":%s,\"pid\":%" PRIu64 ",\"uid\":%" PRIu64 ",\"user\":",
			       h->ok == 1 ? "true" : "false", h->pid, h->uid);
			apx_json_str(stdout, h->user);
			printf(",\"command\":");
			apx_json_str(stdout, h->cmd);
			printf(",\"start_unix_ms\":%" PRId64 ",\"duration_ms\":%" PRIu64
			       ",\"exit_status\":%" PRId64 ",\"cpu_ms\":%" PRIu64
			       ",\"rss_peak_bytes\":%" PRIu64 ",\"findings\":%" PRIu64
			       ",\"uses_cuda\":%s",
			       ((int64_t)h->start_ns + h->realtime_off) / 1000000,
			       h->end_ns > h->start_ns ? (h->end_ns - h->start_ns) / 1000000 : 0,
			       h->exit_status, h->cpu_ns / 1000000, h->rss_peak, h->findings,
			       h->cuda ? "true" : "false");
		}
		putchar('}');
	}
	printf("]}\n");
}

/* The table, written through the terminal filter by the caller: commands and file names
 * come from other users' processes and folders. */
static void print_table(FILE *out, const struct hist *v, size_t n)
{
	if (!n) {
		fprintf(out, "(no summary yet: nvperfd writes one when a tracked Python process "
			     "ends)\n");
		return;
	}
	fprintf(out, "%-16s %7s %7s %5s %7s %6s %2s %-22s %s\n", "WHEN", "PID", "DUR", "EXIT",
		"CPU", "PEAK", "F", "COMMAND", "FILE");
	for (size_t i = 0; i < n; i++) {
		const struct hist *h = &v[i];
		time_t t = (time_t)(h->mtime_ms / 1000);
		struct tm tm;
		char when[32] = "?", dur[16], cpu[16], peak[16], ex[8];

		if (localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		if (!h->ok) {
			fprintf(out, "%-16s %7s %7s %5s %7s %6s %2s %-22s %s\n", when, "?", "?", "?",
				"?", "?", "?", "(unreadable)", h->path);
			continue;
		}
		apx_fmt_age(dur, sizeof(dur), h->end_ns > h->start_ns ?
			    (h->end_ns - h->start_ns) / 1000000 : 0);
		snprintf(cpu, sizeof(cpu), "%.1fs", (double)h->cpu_ns / 1e9);
		apx_fmt_bytes(peak, sizeof(peak), h->rss_peak);
		if (h->exit_status < 0)
			snprintf(ex, sizeof(ex), "sig%d", (int)-h->exit_status);
		else
			snprintf(ex, sizeof(ex), "%d", (int)h->exit_status);
		fprintf(out, "%-16s %7" PRIu64 " %7s %5s %7s %6s %2" PRIu64 " %-22.22s %s%s\n",
			when, h->pid, dur, ex, cpu, peak, h->findings, h->cmd, h->path,
			h->ok == 2 ? " (incomplete)" : "");
	}
}

int apx_cmd_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },
		{ "dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = apx_ctl_default_socket(), *dir = NULL;
	struct hist *v = NULL;
	size_t n = 0, cap = 0, total;
	uint64_t count = 20;
	int c, json = 0, r, bad = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jn:d:S:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'n':
			if (apx_parse_u64(optarg, 1u << 30, &count) < 0)
				return apx_cli_usage_error("history", "--count: expected a number, "
							   "not '%s'", optarg);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'h':
			apx_cli_print_usage("history");
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("history", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("history", opts, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return apx_cli_usage_error("history", "unexpected argument '%s'", argv[optind]);
	if (dir) {
		r = list_dir(dir, &v, &n, &cap);
		if (r < 0) {
			fprintf(stderr, "apx history: cannot read '%s': %s\n", dir, strerror(-r));
			return APX_EXIT_FAIL;
		}
	} else {
		char *buf, err[256] = "", *line, *next;
		size_t len;

		r = apx_ctl_request(sock, "history", &buf, &len, err, sizeof(err));
		if (r == -ENOENT || r == -ECONNREFUSED) {
			/* no daemon: look in the state folder named by the machine config */
			struct apx_conf conf;
			char path[APX_CONF_PATH_MAX + 16];

			apx_conf_defaults(&conf);
			(void)apx_conf_load(APX_CONF_MACHINE_PATH, APX_CONF_MACHINE, (uid_t)-1, &conf,
					    NULL);
			snprintf(path, sizeof(path), "%s/%u", conf.state_dir, (unsigned)getuid());
			if (list_dir(path, &v, &n, &cap) < 0 && !json)
				fprintf(stderr, "apx history: nvperfd is not running and '%s' cannot "
					"be read\n", path);
		} else if (r < 0) {
			return apx_ctl_fail("history", sock, r, err);
		} else {
			for (line = buf; line && *line; line = next) {
				char *f[8];

				next = strchr(line, '\n');
				if (next)
					*next++ = 0;
				if (apx_ctl_split(line, f, 8) < 1 + APX_CTL_SUMMARY__COUNT ||
				    strcmp(f[0], "summary"))
					continue;
				if (add(&v, &n, &cap, f[1 + APX_CTL_SUMMARY_PATH],
					strtoull(f[1 + APX_CTL_SUMMARY_MTIME_UNIX_MS], NULL, 10),
					strtoull(f[1 + APX_CTL_SUMMARY_BYTES], NULL, 10)) < 0)
					break;
			}
			free(buf);
		}
	}
	total = n;
	if (n)
		qsort(v, n, sizeof(*v), cmp_hist);
	if (count && n > count)
		n = count;
	for (size_t i = 0; i < n; i++) {
		struct apx_diag d = { 0 };
		char name[4096];

		r = read_summary(&v[i], &d);
		if (r < 0 && r != -ENOENT) {	/* e.g. a FIFO planted in the folder (not: gone) */
			fprintf(stderr, "apx history: %s: %s\n",
				apx_term_safe_str(name, sizeof(name), v[i].path), d.msg);
			bad = 1;
		}
	}
	if (json) {
		print_json(v, n);
	} else {
		FILE *out = apx_cli_term_open();

		print_table(out, v, n);
		apx_cli_term_close(out);
	}
	for (size_t i = 0; i < total; i++)
		free(v[i].path);
	free(v);
	return bad ? APX_EXIT_FAIL : APX_EXIT_OK;
}
