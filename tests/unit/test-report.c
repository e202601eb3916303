/*
 * test-report.c - unit tests of lib/report: the document builder (sections asked for, the
 * kernels' order and count, findings with their metrics and evidence tables, the time series
 * from the store), the CSV and HTML emitters (quoting, escaping of hostile strings, one
 * table bare vs several with "# section/table" lines), and base/unit.c's formatter. Traces:
 * committed fixtures under tests/fixtures (APX_SOURCE_DIR). Label: unit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/store.h"
#include "apx-test.h"
#include "base/json.h"
#include "report/doc.h"

#include "base/banned.h"

#define FIX APX_SOURCE_DIR "/tests/fixtures/"

struct run {
	struct apx_model *m;
	struct apx_findings *fd;
	struct apx_store *st;
};

static int run_open(struct run *r, const char *path, int with_store)
{
	struct apx_diag dg = { 0 };

	memset(r, 0, sizeof(*r));
	r->m = apx_model_new();
	r->fd = calloc(1, sizeof(*r->fd));
	if (!r->m || !r->fd || apx_model_add_file(r->m, path, &dg) < 0 || apx_model_finish(r->m) < 0)
		return -1;
	apx_rules_run(r->m, r->fd);
	if (with_store && apx_store_open(&path, 1, NULL, &r->st, &dg) < 0)
		return -1;
	return 0;
}

static void run_close(struct run *r)
{
	apx_store_free(r->st);
	apx_model_free(r->m);
	free(r->fd);
}

static const struct apx_rtable *find_table(const struct apx_rdoc *d, unsigned s, const char *key)
{
	for (unsigned i = 0; i < d->sec[s].ntables; i++)
		if (!strcmp(d->sec[s].t[i]->key, key))
			return d->sec[s].t[i];
	return NULL;
}

/* What an emitter writes, in memory (NUL-terminated; free it). */
static char *emit(int (*fn)(FILE *, const struct apx_rdoc *), const struct apx_rdoc *d,
		  size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (fn(f, d) < 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*ret_len = len;
	return buf;
}

APX_TEST(sections_follow_the_request)
{
	struct run r;
	struct apx_rdoc_opts o = { .sections = 1u << APX_SEC_KERNELS, .top = 3 };
	struct apx_rdoc *d;
	const struct apx_rtable *k;

	APX_ASSERT_OK(run_open(&r, FIX "real/sync_every_step.apx", 0));
	d = apx_rdoc_build(r.m, r.fd, &o);
	APX_ASSERT(d);
	for (unsigned s = 0; s < APX_SEC__COUNT; s++) {
		APX_ASSERT_EQ(d->sec[s].present, s == APX_SEC_KERNELS);
		if (s != APX_SEC_KERNELS)
			APX_ASSERT_EQ(d->sec[s].ntables, 0);
	}
	k = find_table(d, APX_SEC_KERNELS, "kernels");
	APX_ASSERT(k);
	APX_ASSERT_EQ(k->nrows, 3);		/* --top */
	APX_ASSERT_EQ(k->plot, APX_PLOT_BARS);
	for (size_t i = 1; i < k->nrows; i++)	/* by total time, largest first */
		APX_ASSERT(apx_rtable_cell(k, i - 1, 1)->u >= apx_rtable_cell(k, i, 1)->u);
	APX_ASSERT_EQ(k->col[1].unit, APX_UNIT_NS);
	APX_ASSERT_STREQ(k->col[1].key, "total_ns");
	apx_rdoc_free(d);
	run_close(&r);
	return 0;
}

APX_TEST(findings_carry_typed_metrics)
{
	struct run r;
	struct apx_rdoc *d;
	int tables = 0;

	APX_ASSERT_OK(run_open(&r, FIX "real/pageable_h2d.apx", 0));
	d = apx_rdoc_build(r.m, r.fd, NULL);
	APX_ASSERT(d);
	APX_ASSERT(r.fd->n > 0);
	{	/* the main list; the start-up section has the others */
		size_t main = 0;

		for (size_t i = 0; i < r.fd->n; i++)
			main += apx_finding_in_main(r.fd, &r.fd->f[i]);
		APX_ASSERT_EQ(d->nfindings, main);
	}
	for (size_t i = 0; i < d->nfindings; i++) {
		const struct apx_rfinding *rf = &d->findings[i];

		APX_ASSERT_EQ(rf->rank, i + 1);
		APX_ASSERT(rf->f->nmetrics > 0);	/* every rule of this trace fills some */
		APX_ASSERT(rf->metrics);
		APX_ASSERT_EQ(rf->metrics->ncols, rf->f->nmetrics);
		APX_ASSERT_EQ(rf->metrics->nrows, 1);
		if (!strcmp(rf->f->rule, "pageable-copy")) {
			const struct apx_rtable *e = rf->evidence;

			APX_ASSERT(e);
			APX_ASSERT_STREQ(e->col[0].key, "direction");
			APX_ASSERT_EQ(e->nrows, 1);		/* H2D only in this trace */
			APX_ASSERT_STREQ(apx_rtable_cell(e, 0, 0)->s, "H2D");
			/* the bytes column equals the finding's own bytes (its phase's copies of
			 * 64 KiB or more), and no more than the model's H2D pageable total */
			APX_ASSERT_EQ(apx_rtable_cell(e, 0, 2)->u, (uint64_t)rf->f->metrics[0].value);
			APX_ASSERT(apx_rtable_cell(e, 0, 2)->u <=
				   r.m->xfer[APX_COPY_H2D][APX_MEM_PAGEABLE].bytes);
			tables++;
		}
	}
	APX_ASSERT(tables >= 1);	/* steady state and start-up each may have one */
	apx_rdoc_free(d);
	run_close(&r);
	return 0;
}

APX_TEST(series_from_the_store)
{
	struct run r;
	struct apx_rdoc_opts o = { 0 };
	const struct apx_rtable *busy, *mem, *tl;
	struct apx_rdoc *d;
	double sum = 0;

	APX_ASSERT_OK(run_open(&r, FIX "real/sync_every_step.apx", 1));
	o.store = r.st;
	d = apx_rdoc_build(r.m, r.fd, &o);
	APX_ASSERT(d);
	busy = find_table(d, APX_SEC_SUMMARY, "gpu_busy_per_step");
	mem = find_table(d, APX_SEC_MEMORY, "device_memory");
	tl = find_table(d, APX_SEC_STREAMS, "step_timeline");
	APX_ASSERT(busy && mem && tl);
	APX_ASSERT_EQ(busy->nrows, r.m->steady.count);	/* one point per step */
	for (size_t i = 0; i < busy->nrows; i++) {
		double v = apx_rtable_cell(busy, i, 3)->v;

		APX_ASSERT(v >= 0 && v <= 100.0001);
		sum += v;
	}
	/* the mean of the steps' busy % is near the model's median (within 10 points) */
	APX_ASSERT(sum / (double)busy->nrows > r.m->steady.busy_pct - 10);
	APX_ASSERT(sum / (double)busy->nrows < r.m->steady.busy_pct + 10);
	/* device memory peaks at the model's peak */
	{
		double peak = 0;

		for (size_t i = 0; i < mem->nrows; i++)
			peak = apx_rtable_cell(mem, i, 1)->v > peak ? apx_rtable_cell(mem, i, 1)->v : peak;
		APX_ASSERT_EQ((uint64_t)peak, r.m->device_mem_peak);
	}
	/* the step's boxes start inside one step */
	APX_ASSERT(tl->nrows > 0);
	for (size_t i = 0; i < tl->nrows; i++)
		APX_ASSERT(apx_rtable_cell(tl, i, 1)->u < r.m->steady.median_ns);
	apx_rdoc_free(d);
	run_close(&r);
	return 0;
}

/* A document with one table of hostile text, built by hand. */
static struct apx_rdoc *hostile_doc(const struct apx_model *m, const struct apx_findings *fd,
				    int two_tables)
{
	static const char evil[] = "a,\"b\"\n\x1b[31m<script>alert('x')</script>&\xff\xc3\xa9";
	struct apx_rdoc *d = apx_rdoc_new(m, fd, 1u << APX_SEC_KERNELS, 15);
	struct apx_rtable *t = d ? apx_rdoc_table(d, APX_SEC_KERNELS, "kernels", "Kernels") : NULL;

	if (!t)
		return d;
	apx_rtable_col(t, "name", "kernel", APX_UNIT_TEXT);
	apx_rtable_col(t, "total_ns", "total", APX_UNIT_NS);
	apx_rtable_col(t, "share_pct", "time%", APX_UNIT_PCT);
	apx_rtable_row(t);
	apx_rtable_text(d, t, 0, evil, sizeof(evil) - 1);
	apx_rtable_u64(t, 1, 18446744073709551615ull);	/* exact: no double rounding */
	apx_rtable_num(t, 2, 12.5);
	apx_rtable_row(t);				/* a row of n/a cells */
	if (two_tables) {
		t = apx_rdoc_table(d, APX_SEC_KERNELS, "other", "Other");
		apx_rtable_col(t, "n", "n", APX_UNIT_COUNT);
		apx_rtable_row(t);
		apx_rtable_u64(t, 0, 7);
	}
	return d;
}

/* What an emitter writes of hostile_doc() (NULL on failure; free it). */
static char *hostile_out(int (*fn)(FILE *, const struct apx_rdoc *), int two_tables,
			 size_t *ret_len)
{
	struct apx_model *m = apx_model_new();
	struct apx_findings fd = { 0 };
	struct apx_rdoc *d = m ? hostile_doc(m, &fd, two_tables) : NULL;
	char *out = d ? emit(fn, d, ret_len) : NULL;

	apx_rdoc_free(d);
	apx_model_free(m);
	return out;
}

APX_TEST(csv_quotes_and_replaces)
{
	size_t len;
	char *out = hostile_out(apx_report_emit_csv, 0, &len);

	APX_ASSERT(out);
	/* one table alone: bare; quotes doubled; newline, ESC and the bad byte as U+FFFD;
	 * valid UTF-8 (é) kept; the 64-bit value exact; n/a cells empty */
	APX_ASSERT_STREQ(out, "name,total_ns,share_pct\n"
			      "\"a,\"\"b\"\"\xef\xbf\xbd\xef\xbf\xbd[31m<script>alert('x')</script>&"
			      "\xef\xbf\xbd\xc3\xa9\",18446744073709551615,12.5\n"
			      ",,\n");
	free(out);
	out = hostile_out(apx_report_emit_csv, 1, &len);
	APX_ASSERT(out);
	APX_ASSERT(!strncmp(out, "# kernels/kernels\nname,", 23));
	APX_ASSERT(strstr(out, "\n\n# kernels/other\nn\n7\n"));
	free(out);
	return 0;
}

APX_TEST(html_escapes_everything)
{
	size_t len;
	char *out = hostile_out(apx_report_emit_html, 0, &len);

	APX_ASSERT(out);
	APX_ASSERT(strstr(out, "a,&quot;b&quot;\n&#xfffd;[31m&lt;script&gt;alert(&#39;x&#39;)"
			       "&lt;/script&gt;&amp;&#xfffd;\xc3\xa9"));
	APX_ASSERT(!strstr(out, "<script"));
	APX_ASSERT(!memchr(out, 0x1b, len));
	APX_ASSERT(strstr(out, "<td class=\"na\">n/a</td>"));
	APX_ASSERT(strstr(out, "<h2>GPU kernels (by total time)</h2>"));
	APX_ASSERT(!strstr(out, "http://") || strstr(out, "http://www.w3.org/2000/svg"));
	free(out);
	return 0;
}

/* The hostile-strings fixture through the whole path: no control byte, no markup from it. */
APX_TEST(hostile_trace)
{
	int (*const fns[])(FILE *, const struct apx_rdoc *) = { apx_report_emit_csv,
								apx_report_emit_html };
	struct run r;
	struct apx_rdoc *d;

	APX_ASSERT_OK(run_open(&r, FIX "corrupt/hostile-strings.apx", 1));
	{
		struct apx_rdoc_opts o = { .store = r.st };

		d = apx_rdoc_build(r.m, r.fd, &o);
	}
	APX_ASSERT(d);
	for (size_t k = 0; k < 2; k++) {
		size_t len;
		char *out = emit(fns[k], d, &len);

		APX_ASSERT(out);
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)out[i];

			if (c < 0x20 && c != '\n' && c != '\t')
				APX_FAIL_("%s: control byte 0x%02x at %zu", k ? "html" : "csv", c, i);
			/* C1 controls (U+0080-U+009F: 0xc2 0x80-0x9f) never pass */
			if (c == 0xc2 && i + 1 < len && (unsigned char)out[i + 1] >= 0x80 &&
			    (unsigned char)out[i + 1] <= 0x9f)
				APX_FAIL_("%s: C1 control at %zu", k ? "html" : "csv", i);
		}
		if (k == 1)
			APX_ASSERT(strstr(out, "evil_kernel"));	/* the name is there, escaped */
		free(out);
	}
	apx_rdoc_free(d);
	run_close(&r);
	return 0;
}

APX_TEST(units_format)
{
	char b[64];
	FILE *f;
	char *buf = NULL;
	size_t len = 0;

	APX_ASSERT_STREQ(apx_unit_name(APX_UNIT_BYTES_PER_S), "bytes_per_s");
	APX_ASSERT_STREQ(apx_unit_name(APX_UNIT__COUNT), "?");
	APX_ASSERT_STREQ(apx_unit_fmt(b, sizeof(b), APX_UNIT_PCT, 42), "42.0%");
	APX_ASSERT_STREQ(apx_unit_fmt(b, sizeof(b), APX_UNIT_COUNT, 17.4), "17");
	APX_ASSERT(apx_unit_is_integer(APX_UNIT_NS) && !apx_unit_is_integer(APX_UNIT_PCT));
	f = open_memstream(&buf, &len);
	APX_ASSERT(f);
	apx_json_num(f, 1.5e10, 1);
	fputc(' ', f);
	apx_json_num(f, 0.25, 0);
	fputc(' ', f);
	apx_json_num(f, 0.0 / 0.0, 0);
	fclose(f);
	APX_ASSERT_STREQ(buf, "15000000000 0.25 null");
	free(buf);
	return 0;
}

/* The text and JSON views: a table laid out by its column hints, prose lines, and JSON member
 * paths that nest objects and arrays; the JSON document holds only the members of the sections
 * asked for, in the order they were added. */
APX_TEST(views_text_and_json)
{
	static const struct apx_rvcol cols[] = {
		{ .key = "name", .title = "kernel", .unit = APX_UNIT_TEXT, .h = { .tw = -6, .tmax = 4 } },
		{ .key = "share_pct", .title = "time%", .unit = APX_UNIT_PCT,
		  .h = { .tw = 6, .tfix = 2 } },
		{ .key = "total_ns", .title = "total", .unit = APX_UNIT_NS,
		  .h = { .tw = 9, .tna = "(none)", .tsuffix = " !" } },
		{ .key = "gx", .title = "x", .unit = APX_UNIT_COUNT, .h = { .tw = 3, .jkey = "g/0" } },
		{ .key = "gy", .title = "y", .unit = APX_UNIT_COUNT,
		  .h = { .tw = 3, .tgap = 1, .jkey = "g/1" } },
		{ .key = "ok", .title = "ok", .unit = APX_UNIT_COUNT,
		  .h = { .tw = 2, .jkey = "o/ok", .jfmt = APX_JF_BOOL } },
	};
	/* a table in a cell as one object, and paths two levels deep */
	static const struct apx_rvcol mcols[] = {
		{ .key = "c", .title = "c", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_OBJ },
		{ .key = "by/x/ns", .title = "x", .unit = APX_UNIT_NS },
		{ .key = "by/x/gaps", .title = "x gaps", .unit = APX_UNIT_COUNT },
		{ .key = "by/y/ns", .title = "y", .unit = APX_UNIT_NS },
	};
	struct apx_rdoc *d = apx_rdoc_new(NULL, NULL, 1u << APX_SEC_KERNELS, 5);
	struct apx_rtable *t, *m, *sub;
	struct apx_text_out o = { NULL, 0, NULL };
	char *buf = NULL;
	size_t len = 0;

	APX_ASSERT(d);
	t = apx_rdoc_view_table(d, APX_SEC_KERNELS, "view:k", APX_VIEW_TEXT | APX_VIEW_JSON);
	APX_ASSERT(t);
	APX_RTABLE_SET_VCOLS(t, cols);
	APX_ASSERT_OK(apx_rtable_row(t));
	apx_rtable_str(d, t, 0, "abcdef");
	apx_rtable_num(t, 1, 12.345);
	apx_rtable_u64(t, 2, 1500);
	apx_rtable_u64(t, 3, 2);
	apx_rtable_u64(t, 4, 3);
	apx_rtable_u64(t, 5, 1);
	APX_ASSERT_OK(apx_rtable_row(t));	/* all n/a */
	apx_rdoc_line(d, APX_SEC_KERNELS, 2, "%d lines", 2);
	apx_rdoc_blk_table(d, APX_SEC_KERNELS, t);
	apx_rdoc_json(d, APX_SEC_KERNELS, "k", t, APX_RJ_ARRAY, 0);
	apx_rdoc_json(d, APX_SEC_SUMMARY, "s", t, APX_RJ_ARRAY, 0);	/* not asked for */
	m = apx_rdoc_view_table(d, APX_SEC_KERNELS, "view:m", APX_VIEW_JSON);
	sub = apx_rdoc_sub_table(d, "c");
	APX_ASSERT(m && sub);
	APX_RTABLE_SET_VCOLS(m, mcols);
	apx_rtable_col(sub, "a", "a", APX_UNIT_RATIO);
	APX_ASSERT_OK(apx_rtable_row(sub));
	apx_rtable_num(sub, 0, 1.5);
	APX_ASSERT_OK(apx_rtable_row(m));
	apx_rtable_sub(m, 0, sub);
	for (unsigned c = 1; c < 4; c++)
		apx_rtable_u64(m, c, c);
	apx_rdoc_json(d, APX_SEC_KERNELS, "m", m, APX_RJ_OBJECT, 0);
	o.f = open_memstream(&buf, &len);
	APX_ASSERT(o.f);
	apx_report_emit_text_section(&o, d, APX_SEC_KERNELS);
	APX_ASSERT_OK(apx_report_emit_json(o.f, d));
	apx_report_emit_text_section(&o, d, APX_SEC_SUMMARY);	/* not asked for: nothing */
	fclose(o.f);
	APX_ASSERT_STREQ(buf, "\nGPU kernels (by total time)\n"
			      "  2 lines\n"
			      "  kernel  time%     total   x    y ok\n"
			      "  abcd    12.3%    1.5 us !   2    3  1\n"
			      "  n/a       n/a    (none) ! n/a  n/a n/a\n"
			      "{\"schema\":\"apx.report/2\","
			      "\"k\":[{\"name\":\"abcdef\",\"share_pct\":12.345,\"total_ns\":1500,"
			      "\"g\":[2,3],\"o\":{\"ok\":true}},"
			      "{\"name\":null,\"share_pct\":null,\"total_ns\":null,\"g\":[null,null],"
			      "\"o\":{\"ok\":null}}],"
			      "\"m\":{\"c\":{\"a\":1.5},\"by\":{\"x\":{\"ns\":1,\"gaps\":2},"
			      "\"y\":{\"ns\":3}}}}\n");
	free(buf);
	apx_rdoc_free(d);
	return 0;
}

APX_TEST(section_names)
{
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		APX_ASSERT_EQ(apx_report_section_parse(apx_report_section_name(s)), s);
	APX_ASSERT_EQ(apx_report_section_parse("nope"), -1);
	APX_ASSERT_STREQ(apx_report_section_title(APX_SEC_IDLE),
			 "GPU idle time (between first and last activity, by cause)");
	return 0;
}

APX_TEST_MAIN()
