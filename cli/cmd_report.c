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
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/import_trace.h"
#include "cli/report.h"
#include "cli/run_files.h"

#include "base/banned.h"

const char apx_cmd_report_usage[] =
	"usage: apx report [--format text|json] [--top N] [--section NAME]... [--color WHEN]\n"
	"                  [--single] [FILE...]\n"
	"\n"
	"Explain one or more traces (default: data.apx): what is slow, why, what to change and\n"
	"what it would save. Several files (a run's processes) are analysed together. A FILE\n"
	"may also be a torch.profiler (Kineto) JSON trace, .json or .json.gz: apx converts it and\n"
	"says what such traces lack (docs/report.md).\n"
	"\n"
	"  -f, --format FMT     text (default) or json (schema: docs/report-schema.md)\n"
	"  -n, --top N          rows in the long tables (default 15)\n"
	"  -s, --section NAME   print only this section (repeatable, or comma-separated):\n"
	"                       summary findings startup nvperfd kernels transfers sync idle\n"
	"                       memory streams nvtx l2 uvm cpu checks method\n"
	"      --color WHEN     auto (default: on a terminal, and NO_COLOR unset), always, never\n"
	"      --single         read only the files named (by default FILE also brings the\n"
	"                       FILE.<pid> files apx analyze wrote for the run's other processes;\n"
	"                       a file named twice, or also brought along, is read once)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Names, findings and file names from traces are printed with control characters escaped.\n"
	"Exit status: 0 report printed; 1 a file could not be read at all (not a regular file, not\n"
	"a trace: the others are still reported) or was damaged (records lost: the message says\n"
	"where); 2 usage error.\n";

static const char *const section_names[APX_SEC__COUNT] = {
	"summary", "findings", "startup", "nvperfd", "kernels", "transfers", "sync", "idle", "memory",
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

/* "apx report: FILE: MSG" on stderr, the file name escaped (it may come from a directory). */
static void file_error(const char *path, const char *msg, const char *tail)
{
	char name[4096];

	fprintf(stderr, "apx report: %s: %s%s\n", apx_term_safe_str(name, sizeof(name), path), msg,
		tail);
}

struct related {
	struct apx_model *m;
	struct apx_run_seen *seen;
	int *bad;
};

static int add_one_related(const char *full, void *ctx)
{
	struct related *rl = ctx;
	struct apx_diag dg = { 0 };

	if (rl->m->nfiles >= APX_AN_MAX_FILES)
		return 1;
	if (apx_run_seen_before(rl->seen, full))
		return 0;
	if (apx_model_add_file(rl->m, full, &dg) < 0) {
		file_error(full, dg.msg, "");
		*rl->bad = 1;
	}
	return 0;
}

static void related_error(const char *full, const char *why, void *ctx)
{
	file_error(full, why, "; not read");
	*((struct related *)ctx)->bad = 1;
}

/* Add FILE.<pid> files beside path (just loaded as the model's last file) that belong to the
 * same run (same run id). */
static void add_related(struct apx_model *m, const char *path, struct apx_run_seen *seen, int *bad)
{
	struct related rl = { m, seen, bad };
	char want[64];

	snprintf(want, sizeof(want), "%s", m->files[m->nfiles - 1].run_id);
	apx_run_children(path, want, add_one_related, related_error, &rl);
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
	static struct apx_run_seen seen;	/* large: not on the stack */
	int c, bad = 0, r;
	char **files;
	int nfiles;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:s:h", opts, NULL)) != -1) {
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
		o.color = apx_term_color_auto(STDOUT_FILENO);
	files = optind < argc ? argv + optind : default_file;
	nfiles = optind < argc ? argc - optind : 1;
	m = apx_model_new();
	if (!m)
		return apx_log_errno(-ENOMEM, "report"), APX_EXIT_FAIL;
	for (int i = 0; i < nfiles; i++) {
		struct apx_diag d = { 0 };
		size_t first = m->nfiles;

		if (apx_run_seen_before(&seen, files[i]))
			continue;	/* already read (as one of the run's FILE.<pid>) */
		r = apx_cli_add_trace(m, files[i], &d);	/* .apx, or Kineto JSON converted */
		if (r < 0) {
			file_error(files[i], d.msg[0] ? d.msg : strerror(-r), "");
			bad = 1;
		}
		if (!single && r == 0)
			add_related(m, files[i], &seen, &bad);
		for (size_t k = first; k < m->nfiles; k++) {
			const struct apx_an_file *af = &m->files[k];

			if (af->status != APX_READ_COMPLETE) {
				file_error(af->path, af->damage, af->records_unreadable ?
					   "; its unreadable records are left out, reporting the rest"
					   : "; reporting what is readable");
				bad = 1;
			}
		}
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
	if (!strcmp(format, "json")) {
		apx_report_json(stdout, m, fd, &o);	/* strings escaped by base/json.c */
	} else {
		/* Kernel names, findings, file names... come from traces: the text reaches the
		 * terminal through the escaping filter; colour goes around it. */
		FILE *out = apx_cli_term_open();

		o.color_out = stdout;
		apx_report_text(out, m, fd, &o);
		apx_cli_term_close(out);
	}
	fflush(stdout);
	free(fd);
	apx_model_free(m);
	return bad ? APX_EXIT_FAIL : APX_EXIT_OK;
}
