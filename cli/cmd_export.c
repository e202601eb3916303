/*
 * cmd_export.c - `apx export --format perfetto|chrome|sqlite [-o FILE] [--from S] [--to S]
 * [--min-dur US] [--single] [--merge-ranks] [--force] FILE...`: builds the event store of the
 * traces (every event kept, lib/analysis/store.h; FILE brings its run's FILE.<pid> and
 * FILE.rank<R>.<pid> along, as in apx report; a torch.profiler (Kineto) JSON trace is converted
 * first, as apx report reads it: cli/import_trace.h) and writes it with one exporter of lib/export.
 * Traces of several distributed ranks give one chrome or sqlite file per rank (FILE.rank<R>.json:
 * the tools that read them, Holistic Trace Analysis, per-rank SQL, want a rank per file; one
 * store at a time, so memory is one rank's), files without a rank left out and said; perfetto,
 * and --merge-ranks, write one file of all. Says how large each file
 * will be before writing and warns above 500 MB (viewers give up around 1-2 GB). The output
 * follows cli/outfile.h: a temporary file beside it renamed into place (a failed export
 * leaves the old file and nothing else), an existing file replaced only with --force and
 * never when it is one of the traces, a character device, FIFO or "-" (stdout) written into
 * from a temporary file under $TMPDIR, a link or folder refused. Called from cli/main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/store.h"
#include "base/fmt.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/import_trace.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "cli/run_files.h"
#include "export/export.h"
#include "import/kineto.h"

#include "base/banned.h"

#define WARN_BYTES (500ull << 20)

const char apx_cmd_export_usage[] =
	"usage: apx export --format FORMAT [options] FILE...\n"
	"\n"
	"Write every event of the traces (kernels, copies, memsets, API calls, NVTX ranges, host\n"
	"synchronizations, counters) for a viewer or a query tool. FILE is an .apx trace or a\n"
	"torch.profiler (Kineto) JSON trace (.json, .json.gz), read as apx report reads it:\n"
	"  perfetto   Perfetto's native protobuf trace (ui.perfetto.dev, trace_processor)\n"
	"  chrome     Chrome trace / Kineto JSON (chrome://tracing, Perfetto, Holistic Trace\n"
	"             Analysis)\n"
	"  sqlite     an nsys-like SQLite database (pandas, sqlite3; docs/export.md); only\n"
	"             when apx was built with libsqlite3-dev\n"
	"\n"
	"  -F, --format FORMAT  perfetto, chrome or sqlite (required)\n"
	"  -o, --output FILE    output file (default: the first trace's name with .perfetto-trace,\n"
	"                       .json (.export.json for a JSON trace) or .sqlite in the current\n"
	"                       folder); - is stdout. An existing\n"
	"                       FILE is replaced only with --force, never when it is one of the\n"
	"                       traces; a character device or FIFO (/dev/null, a named pipe) is\n"
	"                       written into, not replaced; a symbolic link or a folder is\n"
	"                       refused. The file is written under a temporary name beside it\n"
	"                       and renamed at the end (a stream: under $TMPDIR, then copied)\n"
	"  -f, --force          replace an existing regular FILE\n"
	"      --single         export only the files named (by default FILE also brings the\n"
	"                       FILE.<pid> files of its run, as apx report does)\n"
	"      --merge-ranks    one chrome or sqlite file of all ranks (by default the traces\n"
	"                       of a distributed run give one file per rank: FILE.rank<R>.json,\n"
	"                       OUT.rank<R>.json for -o OUT.json, DIR/FILE.rank<R>.json for -o\n"
	"                       DIR, a folder; files without a rank are left out and said;\n"
	"                       perfetto always writes one file)\n"
	"      --from S         keep events that end S seconds or later after the run's start\n"
	"      --to S           keep events that start before S seconds after the run's start\n"
	"      --min-dur US     leave out events shorter than US microseconds\n"
	"  -h, --help           show this help\n"
	"\n"
	"The file's size is said before it is written, with a warning above 500 MB: viewers give\n"
	"up around 1-2 GB, so narrow a long run with --from/--to/--min-dur.\n"
	"Exit status: 0 exported; 1 a trace could not be read, or was truncated or damaged (what\n"
	"is readable is exported, and the message says what was lost and where, as apx info\n"
	"does); 2 usage error.\n";

static int parse_us(const char *s, uint64_t *ret_ns)
{
	uint64_t v;

	/* US microseconds = US millionths of a second: the seconds parser reads it as US s */
	if (apx_parse_seconds_ns(s, &v) < 0)
		return -EINVAL;
	*ret_ns = v / 1000000;
	return 0;
}

/* FILE.apx -> FILE.EXT; a Kineto trace FILE.json (.json.gz) -> FILE.EXT, FILE.export.json for
 * --format chrome (not the trace's own name). */
static void default_output(const char *in, const char *ext, char *out, size_t cap)
{
	const char *base = strrchr(in, '/') ? strrchr(in, '/') + 1 : in;
	size_t n = strlen(base);
	const char *mid = "";

	if (n > 4 && !strcmp(base + n - 4, ".apx")) {
		n -= 4;
	} else if ((n > 5 && !strcmp(base + n - 5, ".json")) ||
		   (n > 8 && !strcmp(base + n - 8, ".json.gz"))) {
		n -= base[n - 1] == 'z' ? 8 : 5;
		mid = strcmp(ext, ".json") ? "" : ".export";
	}
	snprintf(out, cap, "%.*s%s%s", (int)n, base, mid, ext);
}

struct list {
	char **p;
	size_t n, cap;
	struct apx_run_seen *seen;	/* the files already in the list, by identity */
};

static int push(const char *path, void *ctx)
{
	struct list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **n = realloc(l->p, cap * sizeof(*n));

		if (!n)
			return -1;
		l->p = n;
		l->cap = cap;
	}
	l->p[l->n] = strdup(path);
	return l->p[l->n] ? (l->n++, 0) : -1;
}

static void child_error(const char *full, const char *why, void *ctx)
{
	char name[PATH_MAX * 4];

	(void)ctx;
	apx_log_warn("'%s': %s; not read", apx_term_safe_str(name, sizeof(name), full), why);
}

static int push_new(const char *path, void *ctx)
{
	struct list *l = ctx;

	return apx_run_seen_before(l->seen, path) ? 0 : push(path, ctx);
}

static void free_paths(char **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

/* The files to read: the named ones once each, and (unless single) their runs' FILE.<pid>. */
static int collect(char **named, size_t n, int single, char ***ret, size_t *ret_n)
{
	static struct apx_run_seen seen;	/* large: not on the stack */
	struct list l = { .seen = &seen };

	for (size_t i = 0; i < n; i++) {
		char id[128];
		size_t before = l.n;

		if (push_new(named[i], &l) < 0)
			goto oom;
		if (single || l.n == before || apx_run_id_of(named[i], id, sizeof(id), NULL) < 0)
			continue;	/* a file that cannot be read: store_open says why */
		apx_run_children(named[i], id, push_new, child_error, &l);
	}
	if (l.n > APX_STORE_MAX_FILES) {
		apx_log_error("%zu files; at most %d", l.n, APX_STORE_MAX_FILES);
		free_paths(l.p, l.n);
		return -E2BIG;
	}
	*ret = l.p;
	*ret_n = l.n;
	return 0;
oom:
	free_paths(l.p, l.n);
	apx_log_error("out of memory");
	return -ENOMEM;
}

/* Every file the store could not read whole, as apx info and apx report say it: the reader's
 * damage (a bad checksum, a cut chunk, no END chunk: the rest of the file is lost) and chunks
 * whose records cannot be decoded (how many records, the first place). 1 when any. */
static int say_damage(const struct apx_store *st)
{
	int any = 0;

	for (size_t i = 0; i < st->nfiles; i++) {
		const struct apx_es_file *f = &st->files[i];
		const struct apx_diag *rd = apx_reader_damage(f->r);
		char in[PATH_MAX * 4], m[sizeof(rd->msg) * 4];

		if (f->status == APX_READ_COMPLETE && !f->chunks_lost)
			continue;
		any = 1;
		apx_term_safe_str(in, sizeof(in), f->path);
		if (rd && rd->msg[0])	/* stopped early: what follows is lost */
			fprintf(stderr, "apx export: %s: %s: %s; exporting what is readable\n", in,
				apx_reader_status(f->r) == APX_READ_TRUNCATED ? "truncated"
				: "damaged", apx_term_safe_str(m, sizeof(m), rd->msg));
		if (f->chunks_lost)
			fprintf(stderr, "apx export: %s: damaged: %s; %" PRIu64 " record%s of %" PRIu32
				" chunk%s cannot be read and %s left out, exporting the rest\n", in,
				apx_term_safe_str(m, sizeof(m), f->damage.msg), f->records_lost,
				f->records_lost == 1 ? "" : "s", f->chunks_lost,
				f->chunks_lost == 1 ? "" : "s",
				f->records_lost == 1 ? "is" : "are");
	}
	return any;
}

static void say_run_files(size_t npaths, size_t named)
{
	if (npaths > named)
		fprintf(stderr, "apx export: %zu files of the run (the other processes' FILE.<pid>; "
			"--single exports only the named ones)\n", npaths);
}

/* ---- one store, one file ---------------------------------------------------------------- */

/* The progress line while the store reads (progress.h): the files as they are opened, their
 * records counted by the store's hook. Main thread; reset by export_one. */
static struct {
	const char *names[APX_STORE_MAX_FILES];
	struct apx_reader *rds[APX_STORE_MAX_FILES];
	const uint64_t *done[APX_STORE_MAX_FILES];
	uint64_t count[APX_STORE_MAX_FILES];
	size_t n;
} g_read;

static int count_record(void *ctx, uint16_t file, const struct apx_rec *r)
{
	(void)ctx;
	(void)r;
	g_read.count[file]++;
	return 0;
}

/* apx_cli_open_trace, the file then followed by the progress line (opening a large one takes a
 * while too: it is read and checked whole). */
static int open_followed(const char *path, struct apx_reader **ret, struct apx_diag *d)
{
	int r;

	apx_progress_step("opening", path);
	r = apx_cli_open_trace(path, ret, d);
	if (r < 0 || g_read.n >= APX_STORE_MAX_FILES)
		return r;
	g_read.names[g_read.n] = path;
	g_read.rds[g_read.n] = *ret;
	g_read.done[g_read.n] = &g_read.count[g_read.n];
	g_read.count[g_read.n] = 0;
	g_read.n++;
	apx_progress_reading(g_read.n, g_read.names, g_read.rds, g_read.done, "sorting the events");
	return r;
}

/* Read paths[0..n) into a store and write it with ex into of (initialized, the inputs checked
 * against it): says the size first, the damage, the result. An exit status. */
static int export_one(const struct apx_exporter *ex, char **paths, size_t n,
		      const struct apx_store_opts *so, struct apx_outfile *of)
{
	const char *safe = of->safe;	/* the output's name, escaped (outfile.h) */
	char tmp[PATH_MAX + 64], a[32], b[32];
	struct apx_diag diag = { 0 };
	struct apx_export_waits waits = { NULL, 0 };
	struct apx_store *st;
	struct stat sb;
	uint64_t est;
	struct apx_store_opts opts = *so;
	int damaged, staged, traces = 1, r;

	/* torch.profiler (Kineto) JSON traces converted first, as apx report reads them; the
	 * stream waits only between .apx traces, found in the same pass over the files */
	for (size_t i = 0; i < n; i++)
		traces &= !apx_kineto_detect(paths[i]);
	g_read.n = 0;
	if (apx_progress_init("export")) {
		opts.on_record = count_record;
		r = apx_export_open((const char *const *)paths, n, &opts, open_followed,
				    traces ? &waits : NULL, &st, &diag);
	} else {
		r = apx_export_open((const char *const *)paths, n, so, apx_cli_open_trace,
				    traces ? &waits : NULL, &st, &diag);
	}
	apx_progress_stop();
	if (r < 0) {
		char m[sizeof(diag.msg) * 4];

		apx_outfile_abort(of);
		apx_log_error("cannot read the traces: %s%s%s", strerror(-r),
			      diag.msg[0] ? ": " : "", apx_term_safe_str(m, sizeof(m), diag.msg));
		return APX_EXIT_FAIL;
	}
	damaged = say_damage(st);	/* as apx info and apx report: what was lost, where */
	est = ex->estimate(st);
	apx_fmt_size(a, sizeof(a), (double)est);
	fprintf(stderr, "apx export: %" PRIu64 " events to '%s' (%s, about %s)\n", st->events,
		safe, ex->name, a);
	if (est > WARN_BYTES)
		apx_log_warn("the file will be about %s; viewers give up around 1-2 GB: "
			     "narrow it with --from/--to/--min-dur", a);
	/* a new name beside a regular FILE, or under $TMPDIR for a stream */
	staged = apx_outfile_stage(of, tmp, sizeof(tmp)) >= 0;	/* if not, said */
	if (staged)
		apx_progress_writing(tmp, of->kind == APX_OUTFILE_STDOUT ? "(stdout)" : of->path,
				     est);
	r = staged ? ex->write(st, &waits, tmp, &diag) : -EIO;
	apx_progress_stop();
	apx_store_free(st);
	free(waits.w);
	if (r < 0) {
		if (staged)
			apx_log_error("cannot write '%s': %s", safe,
				      diag.msg[0] ? diag.msg : strerror(-r));
		apx_outfile_abort(of);
		return APX_EXIT_FAIL;
	}
	if (of->kind == APX_OUTFILE_FILE || stat(tmp, &sb) < 0)
		sb.st_size = -1;	/* a FILE is measured in place */
	if (apx_outfile_commit(of) < 0)	/* renamed into place, or copied into the stream */
		return APX_EXIT_FAIL;
	if (sb.st_size >= 0 || stat(of->path, &sb) == 0) {
		apx_fmt_size(b, sizeof(b), (double)sb.st_size);
		fprintf(stderr, "apx export: wrote '%s' (%s)%s\n", safe, b,
			damaged ? ", without what could not be read" : "");
	}
	return damaged ? APX_EXIT_FAIL : APX_EXIT_OK;
}

/* ---- one file per rank ------------------------------------------------------------------- */

struct ranked {
	int64_t rank;			/* the header's, -1 none */
	size_t path;			/* index into the paths */
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->path < y->path ? -1 : x->path > y->path;
}

/* Every file's rank, sorted by rank (then input order), and the earliest start of them all on
 * the wall clock (0 unknown: the per-rank files then start at their own starts). -errno when a
 * file's header cannot be read: the one-store path then says why, as it always did. */
static int ranks_of(char **paths, size_t n, struct ranked **ret, size_t *ret_distinct,
		    uint64_t *ret_origin_utc)
{
	struct ranked *v = malloc((n ? n : 1) * sizeof(*v));
	size_t distinct = 0;
	uint64_t origin = UINT64_MAX;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct apx_reader *rd;
		int r = apx_reader_open(paths[i], &rd, NULL);

		if (r < 0) {
			free(v);
			return r;
		}
		const struct apx_rec *h = apx_reader_header(rd);
		int64_t utc;

		v[i] = (struct ranked){ apx_rec_i64(h, APX_HEADER_RANK), i };
		if (v[i].rank < -1)
			v[i].rank = -1;
		if (h->v[APX_HEADER_START_NS] <= INT64_MAX &&
		    !__builtin_add_overflow((int64_t)h->v[APX_HEADER_START_NS],
					    apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS), &utc) &&
		    utc > 0 && (uint64_t)utc < origin)
			origin = (uint64_t)utc;
		apx_reader_close(rd);
	}
	qsort(v, n, sizeof(*v), cmp_ranked);
	for (size_t i = 0; i < n; i++)
		if (v[i].rank >= 0 && (!i || v[i].rank != v[i - 1].rank))
			distinct++;
	*ret = v;
	*ret_distinct = distinct;
	*ret_origin_utc = origin == UINT64_MAX ? 0 : origin;
	return 0;
}

/* rank R's file: OUT.json -> OUT.rank<R>.json (the exporter's ending kept last, where Holistic
 * Trace Analysis and sqlite3 look for it), OUT -> OUT.rank<R>; in a folder DIR: DIR/<default
 * name>.rank<R>.json. */
static int rank_path(const char *out, int dir, const char *def, const char *ext, int64_t rank,
		     char *buf, size_t cap)
{
	const char *name = dir ? def : out;
	size_t n = strlen(name), e = strlen(ext);
	int k;

	if (n > e && !strcmp(name + n - e, ext))
		n -= e;
	else
		ext = "";
	if (dir)
		k = snprintf(buf, cap, "%s%s%.*s.rank%" PRId64 "%s", out,
			     out[strlen(out) - 1] == '/' ? "" : "/", (int)n, name, rank, ext);
	else
		k = snprintf(buf, cap, "%.*s.rank%" PRId64 "%s", (int)n, name, rank, ext);
	return k < 0 || (size_t)k >= cap ? -ENAMETOOLONG : 0;
}

/* One file per rank of the traces (v: sorted by rank). Every output is checked before any is
 * written: an existing file without --force stops everything (exit 2). An exit status: the
 * worst of the ranks'. */
static int export_ranks(const struct apx_exporter *ex, char **paths, size_t npaths,
			const struct ranked *v, size_t distinct, const char *output, int dir,
			const char *def, int force, const struct apx_store_opts *so)
{
	static struct apx_outfile of;	/* large: not on the stack */
	char name[PATH_MAX], **group;
	size_t norank = 0, first = 0;
	int worst = APX_EXIT_OK;

	while (first < npaths && v[first].rank < 0)
		first++;
	norank = first;
	fprintf(stderr, "apx export: %zu ranks: one %s file each, the rank in its name "
		"(--merge-ranks: one file of all)\n", distinct, ex->name);
	if (norank)
		apx_log_warn("%zu file%s without a rank (the launcher's own process?) left "
			     "out of the per-rank files; export %s with --single", norank,
			     norank == 1 ? "" : "s", norank == 1 ? "it" : "them");
	/* every output first: nothing is written when one of them cannot be */
	for (size_t i = first; i < npaths; i++) {
		int r;

		if (i > first && v[i].rank == v[i - 1].rank)
			continue;
		if (rank_path(output, dir, def, ex->ext, v[i].rank, name, sizeof(name)) < 0) {
			apx_log_error("the name of rank %" PRId64 "'s file is too long",
				      v[i].rank);
			return APX_EXIT_FAIL;
		}
		r = apx_outfile_init(&of, "export", name, force);
		if (r < 0)
			return r == -EEXIST ? APX_EXIT_USAGE : APX_EXIT_FAIL;
		for (size_t j = 0; j < npaths; j++)
			if (apx_outfile_check_input(&of, paths[j]) < 0) {
				apx_outfile_abort(&of);
				return APX_EXIT_FAIL;
			}
		apx_outfile_abort(&of);
	}
	group = malloc(npaths * sizeof(*group));
	if (!group) {
		apx_log_error("out of memory");
		return APX_EXIT_FAIL;
	}
	for (size_t i = first; i < npaths;) {
		size_t n = 0;
		int r;

		while (i + n < npaths && v[i + n].rank == v[i].rank) {
			group[n] = paths[v[i + n].path];
			n++;
		}
		rank_path(output, dir, def, ex->ext, v[i].rank, name, sizeof(name));
		r = apx_outfile_init(&of, "export", name, force);
		if (r < 0)
			r = r == -EEXIST ? APX_EXIT_USAGE : APX_EXIT_FAIL;
		else
			r = export_one(ex, group, n, so, &of);
		if (r > worst)
			worst = r;
		i += n;
	}
	free(group);
	return worst;
}

int apx_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "from", required_argument, NULL, 'A' },
		{ "to", required_argument, NULL, 'B' },
		{ "min-dur", required_argument, NULL, 'M' },
		{ "single", no_argument, NULL, 'S' },
		{ "merge-ranks", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct apx_exporter *ex = NULL;
	struct apx_store_opts so = { 0 };
	const char *output = NULL;
	char outbuf[PATH_MAX];
	static struct apx_outfile of;	/* large: not on the stack */
	struct ranked *ranked = NULL;
	size_t distinct = 0;
	struct stat sb;
	int force = 0, single = 0, merge = 0, dir = 0, c, r;
	char **paths;
	size_t npaths;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:o:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			ex = apx_exporter_find(optarg);
			if (!ex && !strcmp(optarg, "sqlite")) {
				apx_log_error("--format sqlite is not built into this apx: it "
					      "was built without libsqlite3 (install libsqlite3-dev, "
					      "e.g. with scripts/setup, and rebuild)");
				return APX_EXIT_FAIL;
			}
			if (!ex)
				return apx_cli_usage_error("export", "unknown --format '%s' (perfetto, "
							   "chrome or sqlite)", optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'A':
			if (apx_parse_seconds_ns(optarg, &so.from_ns) < 0)
				return apx_cli_usage_error("export", "--from wants seconds, not '%s'",
							   optarg);
			break;
		case 'B':
			if (apx_parse_seconds_ns(optarg, &so.to_ns) < 0 || !so.to_ns)
				return apx_cli_usage_error("export", "--to wants seconds > 0, not '%s'",
							   optarg);
			break;
		case 'M':
			if (parse_us(optarg, &so.min_dur_ns) < 0)
				return apx_cli_usage_error("export", "--min-dur wants microseconds, not "
							   "'%s'", optarg);
			break;
		case 'S':
			single = 1;
			break;
		case 'R':
			merge = 1;
			break;
		case 'h':
			fputs(apx_cmd_export_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("export", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("export", opts, argv[optind - 1]);
		}
	}
	if (!ex)
		return apx_cli_usage_error("export", "--format is required (perfetto, chrome or "
					   "sqlite)");
	if (optind >= argc)
		return apx_cli_usage_error("export", "no trace file given");
	if (so.to_ns && so.to_ns <= so.from_ns)
		return apx_cli_usage_error("export", "--to must be after --from");
	default_output(argv[optind], ex->ext, outbuf, sizeof(outbuf));
	if (!output)
		output = outbuf;
	if (!strcmp(output, "-") && isatty(STDOUT_FILENO))
		return apx_cli_usage_error("export", "-o - writes the export to stdout, a terminal: "
					   "redirect it or give -o FILE");
	r = collect(argv + optind, (size_t)(argc - optind), single, &paths, &npaths);
	if (r < 0)
		return APX_EXIT_FAIL;
	/* several ranks: one chrome or sqlite file each (a header that cannot be read: the one
	 * store below says why) */
	if (!merge && strcmp(ex->name, "perfetto") &&
	    ranks_of(paths, npaths, &ranked, &distinct, &so.origin_utc_ns) == 0 && distinct > 1) {
		dir = stat(output, &sb) == 0 && S_ISDIR(sb.st_mode);
		if (!dir && *output && output[strlen(output) - 1] == '/') {
			free(ranked);
			free_paths(paths, npaths);
			apx_log_error("-o '%s': no such folder", output);
			return APX_EXIT_FAIL;
		}
		if (!strcmp(output, "-") || (!dir && stat(output, &sb) == 0 && !S_ISREG(sb.st_mode))) {
			free(ranked);
			free_paths(paths, npaths);
			return apx_cli_usage_error("export", "the traces hold %zu ranks: one file each, "
						   "so -o names a file (its name gets .rank<R>) or a "
						   "folder, not a stream; --merge-ranks writes one", distinct);
		}
		say_run_files(npaths, (size_t)(argc - optind));
		r = export_ranks(ex, paths, npaths, ranked, distinct, output, dir, outbuf, force, &so);
		free(ranked);
		free_paths(paths, npaths);	/* the stores borrowed them */
		return r;
	}
	free(ranked);
	so.origin_utc_ns = 0;		/* one file: it starts at the run's start */
	/* where it goes, checked before anything is read (outfile.h; says why not) */
	r = apx_outfile_init(&of, "export", output, force);
	if (r < 0) {
		free_paths(paths, npaths);
		return r == -EEXIST ? APX_EXIT_USAGE : APX_EXIT_FAIL;
	}
	for (size_t i = 0; i < npaths; i++)
		if (apx_outfile_check_input(&of, paths[i]) < 0) {
			apx_outfile_abort(&of);
			free_paths(paths, npaths);
			return APX_EXIT_FAIL;
		}
	say_run_files(npaths, (size_t)(argc - optind));
	r = export_one(ex, paths, npaths, &so, &of);
	free_paths(paths, npaths);	/* the store borrowed them */
	return r;
}
