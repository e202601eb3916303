/*
 * cmd_report.c - `apx report [options] [FILE...]`: builds the analysis model from one or more
 * traces (a run's processes), runs the rules and prints the report (report_text.c) or its
 * JSON form (report_json.c). Damaged or truncated traces are reported up to the damage, and
 * the report says what was lost. Called from cli/main.c.
 */
#include <errno.h>
#include <getopt.h>
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
	"                  [FILE...]\n"
	"\n"
	"Explain one or more traces (default: data.apx): what is slow, why, what to change and\n"
	"what it would save. Several files (a run's processes) are analysed together.\n"
	"\n"
	"  -f, --format FMT     text (default) or json (schema: docs/report-schema.md)\n"
	"  -n, --top N          rows in the long tables (default 15)\n"
	"  -s, --section NAME   print only this section (repeatable, or comma-separated):\n"
	"                       summary findings kernels transfers sync idle memory streams\n"
	"                       nvtx l2 uvm cpu checks method\n"
	"      --color WHEN     auto (default: on a terminal), always, never\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 report printed; 1 a file could not be read at all (the others are still\n"
	"reported) or was damaged; 2 usage error.\n";

static const char *const section_names[APX_SEC__COUNT] = {
	"summary", "findings", "kernels", "transfers", "sync", "idle", "memory",
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
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct apx_report_opts o = { .top = 15, .sections = 0, .color = -1 };
	const char *format = "text";
	static char default_name[] = "data.apx";
	char *default_file[] = { default_name };
	struct apx_findings *fd = NULL;
	struct apx_model *m;
	int c, bad = 0, r;
	char **files;
	int nfiles;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+f:n:s:h", opts, NULL)) != -1) {
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
	}
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
