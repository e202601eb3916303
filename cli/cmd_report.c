/*
 * cmd_report.c - `apx report [options] [FILE...]`: builds the analysis model from one or more
 * traces (a run's processes), runs the rules and prints the report (report_text.c) or its
 * JSON form (report_json.c). Damaged or truncated traces are reported up to the damage, and
 * the report says what was lost. Called from cli/main.c.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/report.h"

#include "base/banned.h"

const char apx_cmd_report_usage[] =
	"usage: apx report [--format text|json] [--top N] [--section NAME]... [--color WHEN]\n"
	"                  [--single] [FILE...]\n"
	"\n"
	"Explain one or more traces (default: data.apx): what is slow, why, what to change and\n"
	"what it would save. Several files (a run's processes) are analysed together.\n"
	"\n"
	"  -f, --format FMT     text (default) or json (schema: docs/report-schema.md)\n"
	"  -n, --top N          rows in the long tables (default 15)\n"
	"  -s, --section NAME   print only this section (repeatable, or comma-separated):\n"
	"                       summary findings nvperfd kernels transfers sync idle memory\n"
	"                       streams nvtx l2 uvm cpu checks method\n"
	"      --color WHEN     auto (default: on a terminal), always, never\n"
	"      --single         read only the files named (by default FILE also brings the\n"
	"                       FILE.<pid> files apx analyze wrote for the run's other processes)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 report printed; 1 a file could not be read at all (the others are still\n"
	"reported) or was damaged; 2 usage error.\n";

static const char *const section_names[APX_SEC__COUNT] = {
	"summary", "findings", "nvperfd", "kernels", "transfers", "sync", "idle", "memory",
	"streams", "nvtx", "l2", "uvm", "cpu", "checks", "method",
};

const char *apx_report_section_name(unsigned s)
{
	return s < APX_SEC__COUNT ? section_names[s] : "?";
}

int apx_report_section_parse(const char *name)
{
	for (int i = 0; i < APX_SEC__COUNT; i++)
		if (!strcmp(name, section_names[i]))
			return i;
	return -1;
}

/* The run id in a trace's header ("" when none or unreadable). */
static void run_id_of(const char *path, char *buf, size_t cap)
{
	struct apx_reader *r;
	struct apx_diag d;
	const struct apx_rec *h;

	buf[0] = 0;
	if (apx_reader_open(path, &r, &d) < 0)
		return;
	h = apx_reader_header(r);
	if (h->bytes[APX_HEADER_RUN_ID])
		snprintf(buf, cap, "%.*s", (int)h->v[APX_HEADER_RUN_ID], (const char *)h->bytes[APX_HEADER_RUN_ID]);
	apx_reader_close(r);
}

/* Add FILE.<pid> files beside path (just loaded as the model's last file) that belong to the
 * same run (same run id). */
static void add_related(struct apx_model *m, const char *path, int *bad)
{
	char dirbuf[4096], basebuf[4096], want[64], got[128], full[8192];
	const char *dir, *base;
	size_t blen;
	struct dirent *e;
	DIR *d;

	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	snprintf(basebuf, sizeof(basebuf), "%s", path);
	dir = dirname(dirbuf);
	base = basename(basebuf);
	blen = strlen(base);
	snprintf(want, sizeof(want), "%s", m->files[m->nfiles - 1].run_id);
	if (!want[0] || !(d = opendir(dir)))
		return;
	while ((e = readdir(d)) && m->nfiles < APX_AN_MAX_FILES) {
		const char *p = e->d_name + blen + 1;
		struct apx_diag dg = { 0 };

		if (strncmp(e->d_name, base, blen) || e->d_name[blen] != '.' || !*p ||
		    strspn(p, "0123456789") != strlen(p))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		run_id_of(full, got, sizeof(got));
		if (strcmp(got, want))
			continue;
		if (apx_model_add_file(m, full, &dg) < 0) {
			fprintf(stderr, "apx report: %s: %s\n", full, dg.msg);
			*bad = 1;
		}
	}
	closedir(d);
}

static int add_sections(struct apx_report_opts *o, const char *arg)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int s = apx_report_section_parse(tok);

		if (s < 0)
			return apx_cli_usage_error("report", "unknown section '%s'", tok);
		o->sections |= 1u << s;
	}
	return 0;
}

int apx_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "top", required_argument, NULL, 'n' },
		{ "section", required_argument, NULL, 's' }, { "color", required_argument, NULL, 'C' },
		{ "single", no_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct apx_report_opts o = { .top = 15, .sections = 0, .color = -1 };
	int single = 0;
	const char *format = "text";
	static char default_name[] = "data.apx";
	char *default_file[] = { default_name };
	struct apx_findings *fd = NULL;
	struct apx_model *m;
	int c, bad = 0, r;
	char **files;
	int nfiles;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:n:s:h", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return apx_cli_usage_error("report", "--format takes text or json, not '%s'",
							   optarg);
			format = optarg;
			break;
		case 'n':
			if (apx_parse_u64(optarg, 100000, &v) < 0 || !v)
				return apx_cli_usage_error("report", "--top takes a number from 1 to 100000, "
							   "not '%s'", optarg);
			o.top = (unsigned)v;
			break;
		case 's':
			if (add_sections(&o, optarg))
				return APX_EXIT_USAGE;
			break;
		case 'C':
			if (!strcmp(optarg, "always"))
				o.color = 1;
			else if (!strcmp(optarg, "never"))
				o.color = 0;
			else if (!strcmp(optarg, "auto"))
				o.color = -1;
			else
				return apx_cli_usage_error("report", "--color takes auto, always or never");
			break;
		case 'S':
			single = 1;
			break;
		case 'h':
			fputs(apx_cmd_report_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			return apx_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!o.sections)
		o.sections = (1u << APX_SEC__COUNT) - 1;
	if (o.color < 0)
		o.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	files = optind < argc ? argv + optind : default_file;
	nfiles = optind < argc ? argc - optind : 1;
	m = apx_model_new();
	if (!m)
		return apx_log_errno(-ENOMEM, "report"), APX_EXIT_FAIL;
	for (int i = 0; i < nfiles; i++) {
		struct apx_diag d = { 0 };

		r = apx_model_add_file(m, files[i], &d);
		if (r < 0) {
			fprintf(stderr, "apx report: %s: %s\n", files[i], d.msg[0] ? d.msg : strerror(-r));
			bad = 1;
		} else if (m->files[m->nfiles - 1].status != APX_READ_COMPLETE) {
			fprintf(stderr, "apx report: %s: %s; reporting what is readable\n", files[i],
				m->files[m->nfiles - 1].damage);
			bad = 1;
		}
		if (!single && r == 0)
			add_related(m, files[i], &bad);
	}
	if (m->nfiles > (size_t)nfiles)
		fprintf(stderr, "apx report: %zu files of the run (the other processes' FILE.<pid>; "
				"--single reads only the named ones)\n", m->nfiles);
	if (!m->nfiles) {
		apx_model_free(m);
		return APX_EXIT_FAIL;
	}
	r = apx_model_finish(m);
	fd = calloc(1, sizeof(*fd));
	if (r < 0 || !fd) {
		apx_log_errno(r < 0 ? r : -ENOMEM, "report: cannot build the model");
		free(fd);
		apx_model_free(m);
		return APX_EXIT_FAIL;
	}
	apx_rules_run(m, fd);
	if (!strcmp(format, "json"))
		apx_report_json(stdout, m, fd, &o);
	else
		apx_report_text(stdout, m, fd, &o);
	fflush(stdout);
	free(fd);
	apx_model_free(m);
	return bad ? APX_EXIT_FAIL : APX_EXIT_OK;
}
