/*
 * cmd_report.c - `apx report [options] [FILE...]`: builds the analysis model (views over the
 * event store, which reads every file once) from one or more traces (a run's processes), runs
 * the rules, builds the report document (lib/report) and writes it in the format asked for
 * (report_formats.c: text, JSON, HTML, CSV). Damaged or truncated traces are reported up to
 * the damage, and the report says what was lost. -o FILE is written as outfile.h says: never
 * over an existing file without --force nor over one of its inputs, a temporary file renamed
 * into place, devices and FIFOs written into. Called from cli/main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/parse.h"
#include "analysis/store.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/import_trace.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_files.h"

#include "base/banned.h"

const char apx_cmd_report_usage[] =
	"usage: apx report [--format text|json|html|csv] [-o FILE] [--top N] [--section NAME]...\n"
	"                  [--frames user|all] [--savings rule|whatif] [--os-wait-threshold MS]\n"
	"                  [--heap-leak FROM:TO] [--color WHEN] [--single] [--force] [FILE...]\n"
	"\n"
	"Explain one or more traces (default: data.apx): what is slow, why, what to change and\n"
	"what it would save. Several files (a run's processes) are analysed together. A FILE\n"
	"may also be a torch.profiler (Kineto) JSON trace, .json or .json.gz: apx converts it and\n"
	"says what such traces lack (docs/report.md).\n"
	"\n"
	"  -f, --format FMT     text (default), json (schema: docs/report-schema.md), html (one\n"
	"                       self-contained page with plots) or csv (a table per section)\n"
	"  -o, --output FILE    write the report to FILE instead of stdout (- is stdout); html\n"
	"                       needs it when stdout is a terminal. An existing FILE is replaced\n"
	"                       only with --force, never when it is one of the traces read; a\n"
	"                       character device or FIFO is written into; a symbolic link or a\n"
	"                       folder is refused. FILE is written under a temporary name and\n"
	"                       renamed at the end: a failed write leaves the old FILE as it was\n"
	"      --force          replace an existing FILE\n"
	"  -n, --top N          rows in the long tables (default 15)\n"
	"  -s, --section NAME   print only this section, in every format (repeatable, or\n"
	"                       comma-separated):\n"
	"                       summary findings startup ranks collectives hotspots idle-stacks\n"
	"                       nvperfd kernels transfers sync idle metrics memory streams nvtx\n"
	"                       l2 uvm cpu threads heap checks method (ranks, collectives:\n"
	"                       only for traces with NCCL collectives)\n"
	"      --frames WHICH   user (default): a Python stack counts at its innermost line of\n"
	"                       your code, library frames (site-packages, the standard library)\n"
	"                       folded into it; all: at its innermost frame, library or not\n"
	"      --savings HOW    whatif (default): the savings of sync-frequency, pageable-copy,\n"
	"                       copy-overlap, launch-bound, allocator-churn and sync-copy from a\n"
	"                       simulation of the recorded timeline with the fix applied; rule:\n"
	"                       each rule's own saving model\n"
	"      --os-wait-threshold MS\n"
	"                       the threads section lists the OS waits (futex, poll, read...)\n"
	"                       of at least MS milliseconds by the line they waited under\n"
	"                       (default 10; from the thread samples, so to about a period)\n"
	"      --heap-leak FROM:TO\n"
	"                       the heap section's leak view: the sampled host allocations\n"
	"                       (apx analyze --heap-sampling-bytes) made between FROM and TO\n"
	"                       seconds after the run's start and still live at TO, by line;\n"
	"                       an empty FROM is the first sample (before CUDA started too),\n"
	"                       an empty TO the end\n"
	"      --color WHEN     auto (default: on a terminal, and NO_COLOR unset), always, never\n"
	"      --single         read only the files named (by default FILE also brings the\n"
	"                       FILE.<pid> and FILE.rank<R>.<pid> files apx analyze wrote for\n"
	"                       the run's other processes and ranks, and a FILE that does not\n"
	"                       exist, as under torchrun, its run's files beside it; a file\n"
	"                       named twice, or also brought along, is read once)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Names, findings and file names from traces are printed with control characters escaped.\n"
	"Exit status: 0 report printed; 1 a file could not be read at all (not a regular file, not\n"
	"a trace: the others are still reported) or was damaged (records lost: the message says\n"
	"where), or the report could not be written; 2 usage error (an existing -o FILE without\n"
	"--force included).\n";

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
	int r;

	if (rl->m->nfiles >= APX_AN_MAX_FILES)
		return 1;
	if (apx_run_seen_before(rl->seen, full))
		return 0;
	apx_progress_step("opening", full);
	r = apx_model_add_file(rl->m, full, &dg);
	apx_progress_stop();
	if (r < 0) {
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

/* FILE missing, but traces of its run beside it: under torchrun the launcher uses no GPU and
 * writes no FILE, only its ranks' FILE.rank<R>.<pid> (run_files.h). Read those of the newest
 * run, saying so; 1 when it did, 0 when there is nothing of the kind. */
static int add_run_without_file(struct apx_model *m, const char *path, struct apx_run_seen *seen,
				int *bad)
{
	struct related rl = { m, seen, bad };
	char id[128], name[4096];
	size_t n, others;
	struct stat st;

	if (lstat(path, &st) == 0 || errno != ENOENT)
		return 0;
	n = apx_run_without_file(path, id, sizeof(id), &others);
	if (!n)
		return 0;
	apx_term_safe_str(name, sizeof(name), path);
	fprintf(stderr, "apx report: %s: no such file, but %zu trace%s of its run beside it (the "
		"ranks' FILE.rank<R>.<pid>, FILE.<pid>): reading %s\n", name, n, n == 1 ? "" : "s",
		n == 1 ? "it" : "them");
	if (others)
		fprintf(stderr, "apx report: %zu trace%s of older runs beside it left out\n", others,
			others == 1 ? "" : "s");
	apx_run_children(path, id, add_one_related, related_error, &rl);
	return 1;
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

/* --heap-leak FROM:TO: seconds since the run's start, either side may be empty. */
static int heap_leak_opt(const char *arg, struct apx_an_heap *h)
{
	const char *colon = strchr(arg, ':');
	char from[64];
	size_t n = colon ? (size_t)(colon - arg) : 0;

	if (!colon || n >= sizeof(from) || strchr(colon + 1, ':'))
		return apx_cli_usage_error("report", "--heap-leak takes FROM:TO in seconds (e.g. "
					   "10:60, :60 or 10:), not '%s'", arg);
	memcpy(from, arg, n);
	from[n] = 0;
	h->leak_has_from = n > 0;
	h->leak_has_to = colon[1] != 0;
	if ((h->leak_has_from && apx_parse_seconds_ns(from, &h->leak_from_ns) < 0) ||
	    (h->leak_has_to && apx_parse_seconds_ns(colon + 1, &h->leak_to_ns) < 0))
		return apx_cli_usage_error("report", "--heap-leak takes FROM:TO in seconds as "
					   "decimal numbers (e.g. 1.5:30), not '%s'", arg);
	if (h->leak_has_from && h->leak_has_to && h->leak_from_ns > h->leak_to_ns)
		return apx_cli_usage_error("report", "--heap-leak: FROM is after TO in '%s'", arg);
	h->leak = 1;
	return 0;
}

/* Whether the report goes to a terminal (stdout one): the progress line stops before it. */
static int output_is_tty(const struct apx_outfile *of)
{
	return (of->kind == APX_OUTFILE_STDOUT && isatty(STDOUT_FILENO)) ||
	       (of->kind == APX_OUTFILE_STREAM && of->fd >= 0 && isatty(of->fd));
}

/* The progress line while apx_model_finish() reads the files (progress.h): each file's
 * records as the model counts them. */
static void progress_reading(struct apx_model *m)
{
	static const char *names[APX_AN_MAX_FILES];
	static struct apx_reader *rds[APX_AN_MAX_FILES];
	static const uint64_t *done[APX_AN_MAX_FILES];

	for (size_t k = 0; k < m->nfiles; k++) {
		names[k] = m->files[k].path;
		rds[k] = m->files[k].reader;
		done[k] = &m->files[k].records;
	}
	apx_progress_reading(m->nfiles, names, rds, done, "analysing");
}

/* Build the document and write it in the chosen format, to of (outfile.h: stdout, a stream,
 * or a temporary file renamed into place). Text goes through the terminal filter (trace text
 * escaped; colour around it). 0 or -errno (said). */
static int emit(const struct apx_report_format *fmt, struct apx_outfile *of,
		const struct apx_model *m, const struct apx_findings *fd, struct apx_report_opts *o)
{
	struct apx_rdoc_opts dopts = { .sections = o->sections, .top = o->top };
	/* the model's event store (every file read once): the document's time series */
	const struct apx_store *st = fmt->needs_store ? m->store : NULL;
	FILE *file, *out;
	struct apx_rdoc *d;
	int r;

	dopts.store = st;
	d = apx_rdoc_build(m, fd, &dopts);
	if (!d) {
		apx_progress_stop();
		apx_outfile_abort(of);
		return apx_log_errno(-ENOMEM, "cannot build the report");
	}
	/* the report itself on a terminal: the line must be gone before it */
	if (output_is_tty(of))
		apx_progress_stop();
	else
		apx_progress_step("writing the report", NULL);
	file = apx_outfile_open(of);
	if (!file) {
		apx_progress_stop();
		r = -EIO;	/* said */
		goto out;
	}
	if (!strcmp(fmt->name, "text")) {
		/* Kernel names, findings, file names... come from traces: the text goes through
		 * the escaping filter; colour goes around it (only on a terminal). */
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
	apx_progress_stop();	/* before anything is said about the output */
	if (r < 0)
		r = apx_outfile_fail(of, r);	/* the real errno of a failed write, said */
	else
		r = apx_outfile_commit(of);	/* checked, renamed into place; said */
out:
	apx_rdoc_free(d);
	return r;
}

int apx_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "top", required_argument, NULL, 'n' },
		{ "section", required_argument, NULL, 's' }, { "color", required_argument, NULL, 'C' },
		{ "single", no_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' }, { "frames", required_argument, NULL, 'F' },
		{ "savings", required_argument, NULL, 'W' }, { "force", no_argument, NULL, 'X' },
		{ "os-wait-threshold", required_argument, NULL, 'O' },
		{ "heap-leak", required_argument, NULL, 'L' },
		{ 0 },
	};
	struct apx_report_opts o = { .top = 15, .sections = 0, .color = -1 };
	int single = 0, frames_all = 0, whatif = 1, force = 0;
	struct apx_an_heap heap = { 0 };	/* its --heap-leak window */
	uint64_t os_wait_ms = 0;
	struct apx_outfile of;
	const struct apx_report_format *fmt = apx_report_format_find("text");
	const char *output = NULL;
	static char default_name[] = "data.apx";
	char *default_file[] = { default_name };
	struct apx_findings *fd = NULL;
	struct apx_model *m;
	static struct apx_run_seen seen;	/* large: not on the stack */
	int c, bad = 0, r;
	char **files;
	int nfiles;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:s:o:h", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case 's':
			if (add_sections(&o, optarg))
				return APX_EXIT_USAGE;
			break;
		case 'S':
			single = 1;
			break;
		case 'X':
			force = 1;
			break;
		case 'F':
			if (!strcmp(optarg, "all"))
				frames_all = 1;
			else if (!strcmp(optarg, "user"))
				frames_all = 0;
			else
				return apx_cli_usage_error("report", "--frames takes user or all, not '%s'",
							   optarg);
			break;
		case 'O':
			if (apx_parse_u64(optarg, 3600000, &v) < 0 || !v)
				return apx_cli_usage_error("report", "--os-wait-threshold takes "
							   "milliseconds from 1 to 3600000, not '%s'",
							   optarg);
			os_wait_ms = v;
			break;
		case 'L':
			if (heap_leak_opt(optarg, &heap) < 0)
				return APX_EXIT_USAGE;
			break;
		case 'W':
			if (!strcmp(optarg, "whatif"))
				whatif = 1;
			else if (!strcmp(optarg, "rule"))
				whatif = 0;
			else
				return apx_cli_usage_error("report", "--savings takes rule or whatif, not "
							   "'%s'", optarg);
			break;
		case 'h':
			fputs(apx_cmd_report_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			if ((r = apx_report_common_opt("report", c, optarg, &fmt, &output, &o)) >= 0) {
				if (r)
					return r;
				break;
			}
			return apx_cli_unknown_option("report", opts, argv[optind - 1]);
		}
	}
	if (!o.sections)
		o.sections = (1u << APX_SEC__COUNT) - 1;
	if (output && !strcmp(output, "-"))
		output = NULL;	/* stdout */
	if (!output && !fmt->tty_ok && isatty(STDOUT_FILENO))
		return apx_cli_usage_error("report", "--format %s writes a file: give -o FILE (or "
					   "redirect stdout)", fmt->name);
	if (output)
		o.color = 0;	/* a file gets no colour */
	else if (o.color < 0)
		o.color = apx_term_color_auto(STDOUT_FILENO);
	files = optind < argc ? argv + optind : default_file;
	nfiles = optind < argc ? argc - optind : 1;
	/* where the report goes, checked before anything is read (outfile.h) */
	r = apx_outfile_init(&of, "report", output, force);
	if (r < 0)
		return r == -EEXIST ? APX_EXIT_USAGE : APX_EXIT_FAIL;
	for (int i = 0; i < nfiles; i++)
		if (apx_outfile_check_input(&of, files[i]) < 0) {
			apx_outfile_abort(&of);
			return APX_EXIT_FAIL;
		}
	apx_progress_init("report");
	m = apx_model_new();
	if (!m) {
		apx_outfile_abort(&of);
		return apx_log_error("out of memory"), APX_EXIT_FAIL;
	}
	for (int i = 0; i < nfiles; i++) {
		struct apx_diag d = { 0 };

		if (apx_run_seen_before(&seen, files[i]))
			continue;	/* already read (as one of the run's FILE.<pid>) */
		if (!single && add_run_without_file(m, files[i], &seen, &bad))
			continue;	/* FILE missing: its ranks' traces were read */
		apx_progress_step("opening", files[i]);
		r = apx_cli_add_trace(m, files[i], &d);	/* .apx, or Kineto JSON converted */
		apx_progress_stop();
		if (r < 0) {
			file_error(files[i], d.msg[0] ? d.msg : strerror(-r), "");
			bad = 1;
		}
		if (!single && r == 0)
			add_related(m, files[i], &seen, &bad);
	}
	if (m->nfiles > (size_t)nfiles)
		fprintf(stderr, "apx report: %zu files of the run (the other processes' FILE.<pid>; "
				"--single reads only the named ones)\n", m->nfiles);
	for (size_t k = 0; k < m->nfiles; k++)	/* the run's FILE.<pid> too */
		if (apx_outfile_check_input(&of, m->files[k].path) < 0) {
			apx_outfile_abort(&of);
			apx_model_free(m);
			return APX_EXIT_FAIL;
		}
	if (!m->nfiles) {
		apx_outfile_abort(&of);
		apx_model_free(m);
		return APX_EXIT_FAIL;
	}
	m->frames_all = frames_all;	/* how the Python stacks' lines are grouped */
	m->os_wait_threshold_ns = os_wait_ms * 1000000ull;	/* 0: the default */
	m->whatif_savings = whatif;	/* savings from the what-if simulator (whatif.h) */
	m->heap.leak = heap.leak;	/* the heap section's leak window (heap.h) */
	m->heap.leak_has_from = heap.leak_has_from;
	m->heap.leak_has_to = heap.leak_has_to;
	m->heap.leak_from_ns = heap.leak_from_ns;
	m->heap.leak_to_ns = heap.leak_to_ns;
	progress_reading(m);
	r = apx_model_finish(m);	/* reads the files: damage is known after it */
	apx_progress_stop();
	fd = calloc(1, sizeof(*fd));
	if (r < 0 || !fd) {
		char msg[sizeof(m->finish_diag.msg) * 4];

		if (r < 0 && m->finish_diag.msg[0])	/* where: the chunk, or the step (as export) */
			apx_log_error("cannot build the model: %s",
				      apx_term_safe_str(msg, sizeof(msg), m->finish_diag.msg));
		else
			apx_log_errno(r < 0 ? r : -ENOMEM, "cannot build the model");
		apx_outfile_abort(&of);
		free(fd);
		apx_model_free(m);
		return APX_EXIT_FAIL;
	}
	for (size_t k = 0; k < m->nfiles; k++) {
		const struct apx_an_file *af = &m->files[k];

		if (af->status != APX_READ_COMPLETE) {
			file_error(af->path, af->damage, af->records_unreadable ?
				   "; its unreadable records are left out, reporting the rest"
				   : "; reporting what is readable");
			bad = 1;
		}
	}
	apx_progress_step("analysing", NULL);
	apx_rules_run(m, fd);
	r = emit(fmt, &of, m, fd, &o);
	if (r < 0)
		bad = 1;
	fflush(stdout);
	free(fd);
	apx_model_free(m);
	return bad ? APX_EXIT_FAIL : APX_EXIT_OK;
}
