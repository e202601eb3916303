/*
 * cmd_diff.c - `apx diff [options] BEFORE AFTER`: two traces of one program, before
 * and after a change, compared step by step. Each file is read into its own analysis model
 * (only the file named: not its run's FILE.<pid> files), the rules run on each, the two are
 * compared (analysis/diff.h), and the comparison's document (report/doc.h:
 * apx_rdoc_build_diff) is written in the format asked for through the report's emitters
 * (report_formats.c: text, JSON, HTML, CSV). Refused: a file that cannot be read, one without
 * a steady state to compare, and two that look like different programs (unless
 * --force-compare). -o FILE is written as outfile.h says (as apx report's). Called from
 * cli/main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/diff.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/import_trace.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "cli/report.h"

#include "base/banned.h"

const char apx_cmd_diff_usage[] =
	"usage: apx diff [--format text|json|html|csv] [-o FILE] [--top N] [--force-compare]\n"
	"                [--color WHEN] [--force] BEFORE AFTER\n"
	"\n"
	"Compare two traces of one program, before and after a change, step by step: the\n"
	"steady state's step time of each (median, p95, a bootstrap 95% interval of the\n"
	"median), the difference and whether it is outside the noise; a step's time of each\n"
	"kernel (matched by demangled name) and the GPU's idle time by cause, before and after;\n"
	"the findings that appeared, disappeared, shrank or grew, BEFORE's estimated saving\n"
	"beside the measured one. It says when the steps do different work (kernels, copies or\n"
	"bytes copied a step more than 10% apart): a faster step that does less is no saving.\n"
	"Each FILE is read alone (not its run's FILE.<pid> files); a torch.profiler JSON trace\n"
	"is converted as apx report converts it. docs/diff.md describes the output.\n"
	"\n"
	"  -f, --format FMT     text (default), json (schema apx.diff/1: docs/diff.md), html (one\n"
	"                       self-contained page) or csv (a table per part)\n"
	"  -o, --output FILE    write to FILE instead of stdout (- is stdout); html needs it when\n"
	"                       stdout is a terminal. An existing FILE is replaced only with\n"
	"                       --force, never when it is BEFORE or AFTER (as apx report -o)\n"
	"      --force          replace an existing FILE\n"
	"  -n, --top N          kernels listed, the largest changes a step first (default 10);\n"
	"                       the others are summed\n"
	"      --force-compare  compare two traces that look like different programs (their\n"
	"                       command lines differ and their kernels a step overlap by under\n"
	"                       30% by time and by name), with a warning; refused without it\n"
	"      --color WHEN     auto (default: on a terminal, and NO_COLOR unset), always, never\n"
	"  -h, --help           show this help\n"
	"\n"
	"Kernel names, findings, commands and file names from the traces are printed with control\n"
	"characters escaped.\n"
	"Exit status: 0 compared; 1 a file could not be read, was damaged (compared up to the\n"
	"damage: the message says where), has no steady state to compare, the two look like\n"
	"different programs (without --force-compare), or the output could not be written;\n"
	"2 usage error (an existing -o FILE without --force included).\n";

/* "apx diff: FILE: MSG" on stderr, the file name escaped. */
static void file_error(const char *path, const char *msg, const char *tail)
{
	char name[4096], safe[1024];

	fprintf(stderr, "apx diff: %s: %s%s\n", apx_term_safe_str(name, sizeof(name), path),
		apx_term_safe_str(safe, sizeof(safe), msg), tail);
}

/* One trace: its model (the what-if savings, as apx report's default) and its findings.
 * Returns 0; 1 when it was read with damage (said, compared anyway); -1 when it cannot be
 * compared (said). */
static int load(const char *path, struct apx_model **ret_m, struct apx_findings **ret_fd)
{
	struct apx_diag dg = { 0 };
	struct apx_findings *fd;
	struct apx_model *m;
	char why[256];
	int r, damaged = 0;

	m = apx_model_new();
	fd = calloc(1, sizeof(*fd));
	if (!m || !fd) {
		apx_log_error("out of memory");
		goto fail;
	}
	apx_progress_step("opening", path);
	r = apx_cli_add_trace(m, path, &dg);	/* .apx, or Kineto JSON converted */
	apx_progress_stop();
	if (r < 0) {
		file_error(path, dg.msg[0] ? dg.msg : strerror(-r), "");
		goto fail;
	}
	m->whatif_savings = 1;	/* the findings' savings as apx report gives them */
	{
		const char *name = m->files[0].path;
		struct apx_reader *rd = m->files[0].reader;
		const uint64_t *done = &m->files[0].records;

		apx_progress_reading(1, &name, &rd, &done, "analysing");
	}
	r = apx_model_finish(m);
	apx_progress_stop();
	if (r < 0) {
		file_error(path, m->finish_diag.msg[0] ? m->finish_diag.msg : strerror(-r),
			   "; cannot build the model");
		goto fail;
	}
	if (m->files[0].status != APX_READ_COMPLETE) {
		file_error(path, m->files[0].damage, "; comparing what is readable");
		damaged = 1;
	}
	if (apx_diff_steps_check(m, why, sizeof(why)) < 0) {
		file_error(path, why, "");
		goto fail;
	}
	apx_progress_step("analysing", path);
	apx_rules_run(m, fd);
	apx_progress_stop();
	*ret_m = m;
	*ret_fd = fd;
	return damaged;
fail:
	free(fd);
	if (m)
		apx_model_free(m);
	return -1;
}

/* The document written in fmt to of, as apx report writes its own (text through the
 * terminal filter, colour around it). 0 or -errno (said). */
static int emit(const struct apx_report_format *fmt, struct apx_outfile *of,
		const struct apx_rdoc *d, struct apx_report_opts *o)
{
	FILE *file = apx_outfile_open(of), *out;
	int r;

	if (!file)
		return -EIO;	/* said */
	if (!strcmp(fmt->name, "text")) {
		out = file == stdout ? apx_cli_term_open() : apx_term_filter_open(file);
		o->color_out = file;
		r = fmt->emit(out ? out : file, d, o);
		if (out && file == stdout)
			apx_cli_term_close(out);
		else if (out && fclose(out) && r >= 0)
			r = -EIO;
	} else {
		r = fmt->emit(file, d, o);	/* each emitter escapes for its format */
	}
	if (r < 0)
		return apx_outfile_fail(of, r);
	return apx_outfile_commit(of);
}

/* Two different programs: say why, and how to compare them anyway. */
static void refuse(const struct apx_diff *df)
{
	char b[4096], a[4096], pb[256], pa[256];

	apx_term_safe_str(b, sizeof(b), df->side[0].path);
	apx_term_safe_str(a, sizeof(a), df->side[1].path);
	apx_term_safe_str(pb, sizeof(pb), df->side[0].program);
	apx_term_safe_str(pa, sizeof(pa), df->side[1].program);
	fprintf(stderr, "apx diff: %s and %s look like different programs: ", b, a);
	if (df->same_program)
		fprintf(stderr, "the same %s with other arguments", pb);
	else
		fprintf(stderr, "%s and %s", pb, pa);
	fprintf(stderr, ", and their kernels a step overlap by %.0f%% by time and %.0f%% by name "
		"(under %.0f%%): a step of one is not a step of the other; --force-compare "
		"compares them anyway\n", 100 * df->overlap_time, 100 * df->overlap_names,
		100 * APX_DIFF_OVERLAP_MIN);
}

int apx_cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "top", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' }, { "force", no_argument, NULL, 'X' },
		{ "force-compare", no_argument, NULL, 'P' },
		{ "color", required_argument, NULL, 'C' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct apx_report_opts o = { .top = 10, .color = -1 };
	const struct apx_report_format *fmt = apx_report_format_find("text");
	struct apx_model *m[2] = { NULL, NULL };
	struct apx_findings *fd[2] = { NULL, NULL };
	static struct apx_diff df;	/* large: not on the stack */
	const char *output = NULL;
	int c, force = 0, force_compare = 0, bad = 0, rc = APX_EXIT_FAIL, r;
	struct apx_rdoc *d = NULL;
	struct apx_outfile of;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'X':
			force = 1;
			break;
		case 'P':
			force_compare = 1;
			break;
		case 'h':
			fputs(apx_cmd_diff_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("diff", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			if ((r = apx_report_common_opt("diff", c, optarg, &fmt, &output, &o)) >= 0) {
				if (r)
					return r;
				break;
			}
			return apx_cli_unknown_option("diff", opts, argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return apx_cli_usage_error("diff", "give two traces, BEFORE and AFTER (%d given)",
					   argc - optind);
	if (output && !strcmp(output, "-"))
		output = NULL;	/* stdout */
	if (!output && !fmt->tty_ok && isatty(STDOUT_FILENO))
		return apx_cli_usage_error("diff", "--format %s writes a file: give -o FILE (or "
					   "redirect stdout)", fmt->name);
	if (output)
		o.color = 0;
	else if (o.color < 0)
		o.color = apx_term_color_auto(STDOUT_FILENO);
	r = apx_outfile_init(&of, "diff", output, force);
	if (r < 0)
		return r == -EEXIST ? APX_EXIT_USAGE : APX_EXIT_FAIL;
	for (int i = 0; i < 2; i++)
		if (apx_outfile_check_input(&of, argv[optind + i]) < 0)
			goto out;
	apx_progress_init("diff");
	for (int i = 0; i < 2; i++) {
		r = load(argv[optind + i], &m[i], &fd[i]);
		if (r < 0)
			goto out;
		bad |= r;
	}
	r = apx_diff_compute(m[0], fd[0], m[1], fd[1], 0, &df);
	if (r < 0) {
		apx_log_errno(r, "cannot compare the traces");
		goto out;
	}
	if (df.different_program && !force_compare) {
		refuse(&df);
		goto out;
	}
	d = apx_rdoc_build_diff(&df, o.top, df.different_program);
	if (!d) {
		apx_log_errno(-ENOMEM, "cannot build the comparison");
		goto out;
	}
	r = emit(fmt, &of, d, &o);
	rc = r < 0 || bad ? APX_EXIT_FAIL : APX_EXIT_OK;
out:
	apx_outfile_abort(&of);
	apx_rdoc_free(d);
	apx_diff_release(&df);
	for (int i = 0; i < 2; i++) {
		free(fd[i]);
		if (m[i])
			apx_model_free(m[i]);
	}
	fflush(stdout);
	return rc;
}
