/*
 * cmd_info.c - `apx info FILE...`: checks every chunk of each trace (checksums and record
 * decoding) and prints its header, record counts per type, time span and, with --chunks, the
 * chunk table; with --json the same facts as one JSON object (docs/format.md, "apx info --json").
 * Exit 0 when every file is complete and valid, 1 when one is damaged, truncated or unreadable
 * (saying where, on stderr), 2 on a usage error. Called from cli/main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <apx/format.h>

#include "base/json.h"
#include "base/termsafe.h"
#include "cli/cli.h"

#include "base/banned.h"

const char apx_cmd_info_usage[] =
	"usage: apx info [--chunks] [--quiet | --json] FILE...\n"
	"\n"
	"Check .apx trace files and describe them: the header (producer, host, process, clock),\n"
	"record counts per type, the time span of the records, and whether every chunk's\n"
	"checksum and records are valid.\n"
	"\n"
	"  -c, --chunks   also list every chunk (offset, type, version, records, bytes, CRC)\n"
	"  -q, --quiet    print only one status line per file\n"
	"  -j, --json     print the same facts as one JSON object: {\"schema\": \"apx.info/1\",\n"
	"                 \"files\": [...]}, the files in the order given, record types in\n"
	"                 type-number order, chunks in file order (docs/format.md)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 every file is complete and valid; 1 a file is damaged, truncated (its\n"
	"producer stopped before closing it) or unreadable, and the message says where;\n"
	"2 usage error.\n";

struct type_stats {
	uint64_t chunks, records, bytes;
};

struct info_result {
	struct type_stats by_type[APX_REC_TYPE__COUNT];
	uint64_t t_min, t_max;
	int have_span;
	int bad;			/* a record could not be decoded */
	struct apx_diag diag;		/* first decode problem */
	uint64_t skipped_chunks;	/* of unknown type or version */
};

/* A bytes field of the header, NULs (argv separators) as sep, escaped for the terminal. */
static void print_bytes_field(const struct apx_rec *h, unsigned f, const char *sep)
{
	const char *p = (const char *)h->bytes[f];
	size_t n = h->v[f];
	char buf[4 * 4096 + 1];

	if (!p || !n) {
		fputs("n/a", stdout);
		return;
	}
	while (n) {
		size_t len = strnlen(p, n);

		fputs(apx_term_safe(buf, sizeof(buf), p, len), stdout);
		if (len + 1 < n)
			fputs(sep, stdout);
		len += len < n;	/* the NUL */
		p += len;
		n -= len;
	}
}

static void print_wall(uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char buf[64];

	if (!ns || !gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm)) {
		fputs("n/a", stdout);
		return;
	}
	printf("%s UTC", buf);
}

static const char *clock_name(uint64_t c)
{
	switch (c) {
	case APX_CLOCK_MONOTONIC:
		return "CLOCK_MONOTONIC";
	case APX_CLOCK_REALTIME:
		return "CLOCK_REALTIME";
	default:
		return "unknown";
	}
}

static void print_header(const struct apx_reader *r)
{
	const struct apx_rec *h = apx_reader_header(r);
	int64_t off = apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS);
	uint64_t mag = off < 0 ? 0 - (uint64_t)off : (uint64_t)off;	/* INT64_MIN too */

	printf("  format     apx %d.%u\n", APX_FORMAT_MAJOR, apx_reader_minor(r));
	printf("  producer   ");
	print_bytes_field(h, APX_HEADER_PRODUCER, " ");
	putchar(' ');
	print_bytes_field(h, APX_HEADER_PRODUCER_VERSION, " ");
	printf("\n  created    ");
	print_wall(h->v[APX_HEADER_CREATED_NS]);
	printf("\n  host       ");
	print_bytes_field(h, APX_HEADER_HOSTNAME, " ");
	printf(" (");
	print_bytes_field(h, APX_HEADER_KERNEL, " ");
	printf(")\n  process    pid %" PRIu64 ", ppid %" PRIu64 ", uid %" PRIu64 " (",
	       h->v[APX_HEADER_PID], h->v[APX_HEADER_PPID], h->v[APX_HEADER_UID]);
	print_bytes_field(h, APX_HEADER_USER, " ");
	printf(")\n  command    ");
	print_bytes_field(h, APX_HEADER_ARGV, " ");
	printf("\n  cwd        ");
	print_bytes_field(h, APX_HEADER_CWD, " ");
	if (h->v[APX_HEADER_RUN_ID] || apx_rec_i64(h, APX_HEADER_RANK) >= 0) {
		printf("\n  run        ");
		print_bytes_field(h, APX_HEADER_RUN_ID, " ");
		if (apx_rec_i64(h, APX_HEADER_RANK) >= 0)
			printf(", rank %" PRId64, apx_rec_i64(h, APX_HEADER_RANK));
	}
	printf("\n  clock      %s; wall time = trace time %s %" PRIu64 ".%09" PRIu64 " s\n",
	       clock_name(h->v[APX_HEADER_CLOCK]), off < 0 ? "-" : "+", mag / 1000000000,
	       mag % 1000000000);
}

/* Index of the field holding the end time of a record type (its SPAN field), or -1. */
static int end_field(const struct apx_rec_schema *s)
{
	for (unsigned f = 0; f < s->nfields; f++)
		if (s->fields[f].kind == APX_FK_SPAN)
			return (int)f;
	return -1;
}

/* Whether field 0 of the type is a trace-clock timestamp. */
static int starts_with_time(const struct apx_rec_schema *s)
{
	size_t n = strlen(s->fields[0].name);

	return s->fields[0].kind == APX_FK_DELTA && n > 3 &&
	       !strcmp(s->fields[0].name + n - 3, "_ns");
}

static void scan_records(struct apx_reader *r, struct info_result *res)
{
	res->t_min = UINT64_MAX;
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		const struct apx_chunk_info *ci = apx_reader_chunk(r, i);
		const struct apx_rec_schema *s = apx_schema(ci->type);
		struct type_stats *ts = &res->by_type[ci->type < APX_REC_TYPE__COUNT ? ci->type : 0];
		struct apx_chunk_iter it;
		struct apx_diag d;
		int timed, ef, k;

		ts->chunks++;
		ts->records += ci->records;
		ts->bytes += APX_CHUNK_HDR_SIZE + ci->payload_len;
		if (apx_chunk_iter_init(&it, r, i, &d) < 0) {
			if (d.err == -ENOTSUP) {
				res->skipped_chunks++;
				continue;
			}
			goto bad;
		}
		timed = starts_with_time(s);
		ef = end_field(s);
		while ((k = apx_chunk_iter_next(&it, &d)) > 0) {
			if (!timed)
				continue;
			if (it.rec.v[0] < res->t_min)
				res->t_min = it.rec.v[0];
			if (it.rec.v[ef >= 0 ? ef : 0] > res->t_max)
				res->t_max = it.rec.v[ef >= 0 ? ef : 0];
			res->have_span = 1;
		}
		if (k < 0)
			goto bad;
		continue;
bad:
		if (!res->bad)
			res->diag = d;
		res->bad++;
	}
}

static void print_counts(const struct info_result *res)
{
	struct type_stats total = { 0 };

	printf("\n  %-10s %8s %12s %14s %8s\n", "records", "chunks", "records", "bytes", "B/rec");
	for (unsigned t = 0; t < APX_REC_TYPE__COUNT; t++) {
		const struct type_stats *ts = &res->by_type[t];

		if (!ts->chunks)
			continue;
		printf("  %-10s %8" PRIu64 " %12" PRIu64 " %14" PRIu64 " %8.1f\n",
		       apx_schema(t) ? apx_rec_type_name(t) : "unknown", ts->chunks, ts->records,
		       ts->bytes, ts->records ? (double)ts->bytes / (double)ts->records : 0.0);
		total.chunks += ts->chunks;
		total.records += ts->records;
		total.bytes += ts->bytes;
	}
	printf("  %-10s %8" PRIu64 " %12" PRIu64 " %14" PRIu64 "\n", "total", total.chunks,
	       total.records, total.bytes);
	if (res->skipped_chunks)
		printf("  (%" PRIu64 " chunks of a type or version this apx does not know were "
		       "skipped)\n", res->skipped_chunks);
}

static void print_chunks(const struct apx_reader *r)
{
	printf("\n  %6s %12s %-10s %4s %9s %10s %8s\n", "chunk", "offset", "type", "ver", "records",
	       "bytes", "crc32c");
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		const struct apx_chunk_info *ci = apx_reader_chunk(r, i);

		printf("  %6zu %12" PRIu64 " %-10s %4u %9u %10u %08x\n", i, ci->offset,
		       apx_rec_type_name(ci->type), ci->version, ci->records,
		       APX_CHUNK_HDR_SIZE + ci->payload_len, ci->crc);
	}
}

static void print_span(const struct info_result *res)
{
	if (!res->have_span) {
		printf("  time span  n/a (no timed records)\n");
		return;
	}
	printf("  time span  %.6f s (trace clock %.6f s to %.6f s)\n",
	       (double)(res->t_max - res->t_min) / 1e9, (double)res->t_min / 1e9,
	       (double)res->t_max / 1e9);
}

static const char *status_word(enum apx_read_status st)
{
	switch (st) {
	case APX_READ_COMPLETE:
		return "complete";
	case APX_READ_TRUNCATED:
		return "TRUNCATED";
	default:
		return "DAMAGED";
	}
}

/* ---- --json ------------------------------------------------------------------------------ */

/* A bytes field of the header up to its first NUL as a JSON string, null when absent. */
static void json_bytes_field(FILE *f, const struct apx_rec *h, unsigned fld)
{
	const char *p = (const char *)h->bytes[fld];

	if (!p || !h->v[fld]) {
		fputs("null", f);
		return;
	}
	apx_json_strn(f, p, strnlen(p, h->v[fld]));
}

/* The argv field (each argument followed by a NUL) as an array of strings. */
static void json_argv(FILE *f, const struct apx_rec *h)
{
	const char *p = (const char *)h->bytes[APX_HEADER_ARGV];
	size_t n = p ? h->v[APX_HEADER_ARGV] : 0;
	const char *sep = "";

	fputc('[', f);
	while (n) {
		size_t len = strnlen(p, n);

		fputs(sep, f);
		apx_json_strn(f, p, len);
		sep = ",";
		len += len < n;	/* the NUL */
		p += len;
		n -= len;
	}
	fputc(']', f);
}

static void json_header(FILE *f, const struct apx_reader *r)
{
	const struct apx_rec *h = apx_reader_header(r);
	uint64_t created = h->v[APX_HEADER_CREATED_NS];
	time_t t = (time_t)(created / 1000000000u);
	struct tm tm;
	char when[64];

	fprintf(f, ",\"header\":{\"format\":\"%d.%u\",\"producer\":", APX_FORMAT_MAJOR,
		apx_reader_minor(r));
	json_bytes_field(f, h, APX_HEADER_PRODUCER);
	fputs(",\"producer_version\":", f);
	json_bytes_field(f, h, APX_HEADER_PRODUCER_VERSION);
	if (created && gmtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		fprintf(f, ",\"created_ns\":%" PRIu64 ",\"created\":\"%s\"", created, when);
	else
		fputs(",\"created_ns\":null,\"created\":null", f);
	fputs(",\"host\":", f);
	json_bytes_field(f, h, APX_HEADER_HOSTNAME);
	fputs(",\"kernel\":", f);
	json_bytes_field(f, h, APX_HEADER_KERNEL);
	fprintf(f, ",\"pid\":%" PRIu64 ",\"ppid\":%" PRIu64 ",\"uid\":%" PRIu64 ",\"user\":",
		h->v[APX_HEADER_PID], h->v[APX_HEADER_PPID], h->v[APX_HEADER_UID]);
	json_bytes_field(f, h, APX_HEADER_USER);
	fputs(",\"argv\":", f);
	json_argv(f, h);
	fputs(",\"cwd\":", f);
	json_bytes_field(f, h, APX_HEADER_CWD);
	fputs(",\"run_id\":", f);
	json_bytes_field(f, h, APX_HEADER_RUN_ID);
	if (apx_rec_i64(h, APX_HEADER_RANK) >= 0)
		fprintf(f, ",\"rank\":%" PRId64, apx_rec_i64(h, APX_HEADER_RANK));
	else
		fputs(",\"rank\":null", f);
	fprintf(f, ",\"clock\":\"%s\",\"realtime_offset_ns\":%" PRId64 "}",
		clock_name(h->v[APX_HEADER_CLOCK]), apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS));
}

static void json_counts(FILE *f, const struct info_result *res)
{
	struct type_stats total = { 0 };
	const char *sep = "";

	fputs(",\"records\":[", f);
	for (unsigned t = 0; t < APX_REC_TYPE__COUNT; t++) {	/* type-number order */
		const struct type_stats *ts = &res->by_type[t];

		if (!ts->chunks)
			continue;
		fprintf(f, "%s{\"type\":\"%s\",\"chunks\":%" PRIu64 ",\"records\":%" PRIu64
			",\"bytes\":%" PRIu64 "}", sep,
			apx_schema(t) ? apx_rec_type_name(t) : "unknown", ts->chunks, ts->records,
			ts->bytes);
		sep = ",";
		total.chunks += ts->chunks;
		total.records += ts->records;
		total.bytes += ts->bytes;
	}
	fprintf(f, "],\"total\":{\"chunks\":%" PRIu64 ",\"records\":%" PRIu64 ",\"bytes\":%"
		PRIu64 "},\"skipped_chunks\":%" PRIu64, total.chunks, total.records, total.bytes,
		res->skipped_chunks);
}

static void json_chunks(FILE *f, const struct apx_reader *r)
{
	fputs(",\"chunk_table\":[", f);
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {	/* file order */
		const struct apx_chunk_info *ci = apx_reader_chunk(r, i);

		fprintf(f, "%s{\"chunk\":%zu,\"offset\":%" PRIu64 ",\"type\":\"%s\",\"version\":%u,"
			"\"records\":%u,\"bytes\":%u,\"crc32c\":\"%08x\"}", i ? "," : "", i,
			ci->offset, apx_rec_type_name(ci->type), ci->version, ci->records,
			APX_CHUNK_HDR_SIZE + ci->payload_len, ci->crc);
	}
	fputc(']', f);
}

/* One file's object of --json (status as --quiet says it, lower case: damaged when a chunk's
 * records cannot be decoded, truncated or not). */
static void json_one(FILE *f, const char *path, const struct apx_reader *r,
		     const struct info_result *res, enum apx_read_status st, int show_chunks)
{
	const struct apx_diag *dmg = apx_reader_damage(r);

	fputs("{\"path\":", f);
	apx_json_str(f, path);
	fprintf(f, ",\"status\":\"%s\",\"chunks\":%zu,\"size_bytes\":%" PRIu64,
		res->bad ? "damaged" : st == APX_READ_COMPLETE ? "complete"
		: st == APX_READ_TRUNCATED ? "truncated" : "damaged",
		apx_reader_chunk_count(r) + (st == APX_READ_COMPLETE), apx_reader_size(r));
	fputs(",\"error\":", f);
	if (dmg && dmg->msg[0])
		apx_json_str(f, dmg->msg);
	else
		fputs("null", f);
	fprintf(f, ",\"undecodable_chunks\":%d,\"decode_error\":", res->bad);
	if (res->bad)
		apx_json_str(f, res->diag.msg);
	else
		fputs("null", f);
	json_header(f, r);
	if (res->have_span)
		fprintf(f, ",\"span\":{\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}",
			res->t_min, res->t_max);
	else
		fputs(",\"span\":null", f);
	json_counts(f, res);
	if (show_chunks)
		json_chunks(f, r);
	fputc('}', f);
}

/* A file that cannot be opened at all, in --json. */
static void json_unreadable(FILE *f, const char *path, const struct apx_diag *diag)
{
	fputs("{\"path\":", f);
	apx_json_str(f, path);
	fputs(",\"status\":\"unreadable\",\"error\":", f);
	apx_json_str(f, diag->msg);
	fputc('}', f);
}

/* Returns 0 if the file is complete and valid, 1 otherwise. */
static int info_one(const char *path, int show_chunks, int quiet, int json)
{
	struct info_result *res;
	struct apx_reader *r;
	struct apx_diag diag = { 0 };
	enum apx_read_status st;
	const struct apx_diag *dmg;
	size_t nchunks;
	char name[4096];
	int k, ret;

	apx_term_safe_str(name, sizeof(name), path);	/* file names are printed escaped */
	k = apx_reader_open(path, &r, &diag);
	if (k < 0 && json)
		json_unreadable(stdout, path, &diag);
	if (k < 0) {
		if (diag.chunk >= 0)
			fprintf(stderr, "apx info: %s: %s (chunk %" PRId64 ", offset %" PRIu64 ")\n",
				name, diag.msg, diag.chunk, diag.offset);
		else
			fprintf(stderr, "apx info: %s: %s\n", name, diag.msg);
		return 1;
	}
	res = calloc(1, sizeof(*res));
	if (!res) {
		apx_reader_close(r);
		fprintf(stderr, "apx info: %s: out of memory\n", name);
		return 1;
	}
	scan_records(r, res);
	st = apx_reader_status(r);
	ret = st != APX_READ_COMPLETE || res->bad;
	nchunks = apx_reader_chunk_count(r) + (st == APX_READ_COMPLETE);	/* + END */
	if (json) {
		json_one(stdout, path, r, res, st, show_chunks);
	} else if (quiet) {
		printf("%s: %s, %zu chunks, %" PRIu64 " bytes\n", name,
		       res->bad ? "DAMAGED" : status_word(st), nchunks, apx_reader_size(r));
	} else {
		printf("%s: %s, %zu chunks, %" PRIu64 " bytes\n", name,
		       res->bad && st == APX_READ_COMPLETE ? "DAMAGED" : status_word(st), nchunks,
		       apx_reader_size(r));
		print_header(r);
		print_span(res);
		print_counts(res);
		if (show_chunks)
			print_chunks(r);
		if (!ret && !res->skipped_chunks)
			printf("\n  checks     all %zu chunk checksums and all records valid\n", nchunks);
		else if (!ret)
			printf("\n  checks     all %zu chunk checksums valid; the records of %" PRIu64
			       " chunks were not checked (skipped: a newer writer's)\n", nchunks,
			       res->skipped_chunks);
	}
	fflush(stdout);
	dmg = apx_reader_damage(r);
	if (dmg)
		fprintf(stderr, "apx info: %s: %s: %s\n", name, status_word(st), dmg->msg);
	if (res->bad)
		fprintf(stderr, "apx info: %s: DAMAGED: %s (%d chunks with undecodable records)\n",
			name, res->diag.msg, res->bad);
	free(res);
	apx_reader_close(r);
	return ret;
}

int apx_cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chunks", no_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int show_chunks = 0, quiet = 0, json = 0, c, bad = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "cqjh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			show_chunks = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(apx_cmd_info_usage, stdout);
			return APX_EXIT_OK;
		default:
			return apx_cli_unknown_option("info", opts, argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return apx_cli_usage_error("info", "no FILE given");
	if (json && quiet)
		return apx_cli_usage_error("info", "--json and --quiet do not go together");
	if (json)
		fputs("{\"schema\":\"apx.info/1\",\"files\":[", stdout);
	for (int i = optind; i < argc; i++) {
		if (i > optind && json)
			putchar(',');
		else if (i > optind && !quiet)
			putchar('\n');
		bad |= info_one(argv[i], show_chunks, quiet, json);
	}
	if (json)
		fputs("]}\n", stdout);
	return bad ? APX_EXIT_FAIL : APX_EXIT_OK;
}
