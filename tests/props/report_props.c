/*
 * report_props.c - report invariants (see report_props.h): renders a model with the report's
 * own emitters (lib/report: text, JSON, CSV and HTML, from one document) and checks the
 * outputs against the model and each other. Called by test-report-props.c and fuzz-report.c.
 */
#include "props/report_props.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/termsafe.h"
#include "base/utf8.h"
#include "cli/report.h"
#include "format/chunk.h"

#include "base/banned.h"

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- a small strict JSON validator --------------------------------------------------------- */

struct js {
	const char *p, *end;
	int depth;
};

static void ws(struct js *j)
{
	while (j->p < j->end && strchr(" \t\r\n", *j->p))
		j->p++;
}

static int lit(struct js *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return -1;
	j->p += n;
	return 0;
}

static int str(struct js *j)
{
	if (j->p >= j->end || *j->p++ != '"')
		return -1;
	while (j->p < j->end && *j->p != '"') {
		uint32_t cp;
		size_t n;

		if ((unsigned char)*j->p < 0x20)
			return -1;
		if (*j->p == '\\') {
			j->p++;
			if (j->p >= j->end)
				return -1;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (j->p + i >= j->end || !strchr("0123456789abcdefABCDEF", j->p[i]))
						return -1;
				j->p += 5;
				continue;
			}
			if (!strchr("\"\\/bfnrt", *j->p))
				return -1;
			j->p++;
			continue;
		}
		n = apx_utf8_decode((const uint8_t *)j->p, (size_t)(j->end - j->p), &cp);
		if (!n)
			return -1;
		j->p += n;
	}
	return j->p < j->end ? (j->p++, 0) : -1;
}

static int num(struct js *j)
{
	const char *s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || !strchr("0123456789", *j->p))
		return -1;
	while (j->p < j->end && strchr("0123456789.eE+-", *j->p))
		j->p++;
	return j->p > s ? 0 : -1;
}

static int value(struct js *j)
{
	int r = 0;

	ws(j);
	if (j->p >= j->end || ++j->depth > 64)
		return -1;
	if (*j->p == '{' || *j->p == '[') {
		char close = *j->p == '{' ? '}' : ']';
		int obj = close == '}';

		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
		} else {
			for (;;) {
				if (obj) {
					ws(j);
					if (str(j) < 0)
						return -1;
					ws(j);
					if (j->p >= j->end || *j->p++ != ':')
						return -1;
				}
				if (value(j) < 0)
					return -1;
				ws(j);
				if (j->p < j->end && *j->p == ',') {
					j->p++;
					continue;
				}
				if (j->p >= j->end || *j->p++ != close)
					return -1;
				break;
			}
		}
	} else if (*j->p == '"') {
		r = str(j);
	} else if (*j->p == 't' || *j->p == 'f' || *j->p == 'n') {
		r = lit(j, *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null");
	} else {
		r = num(j);
	}
	j->depth--;
	return r;
}

static int json_valid(const char *s, size_t n)
{
	struct js j = { s, s + n, 0 };

	if (value(&j) < 0)
		return 0;
	ws(&j);
	return j.p == j.end;
}

/* ---- counting in the outputs --------------------------------------------------------------- */

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The number after the first `"key":` in the JSON, -1 when absent. */
static double json_num(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(json, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

/* Every `"..._pct":` value of the JSON within [0, 100] (or null). */
static int pct_fields_ok(const char *json, char *why, size_t cap)
{
	for (const char *p = json; (p = strstr(p, "_pct\":")); p += 6) {
		double v;

		if (!strncmp(p + 6, "null", 4))
			continue;
		v = strtod(p + 6, NULL);
		if (!(v >= 0 && v <= 100))
			return fail(why, cap, "JSON percentage out of 0-100: %.40s", p - 20 > json ? p - 20 : p);
	}
	return 0;
}

/* ---- the checks ---------------------------------------------------------------------------- */

static int model_ok(const struct apx_model *m, const struct apx_findings *fd, char *why,
		    size_t cap)
{
	double main_ns = 0;	/* the steady state's estimated savings */

	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *t = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);
		uint64_t span = t->last_ns - t->first_ns;

		if (t->last_ns < t->first_ns || span > m->wall_ns)
			return fail(why, cap, "device %u: active span %llu ns, wall %llu ns", t->device,
				    (unsigned long long)span, (unsigned long long)m->wall_ns);
		if (t->busy_ns > span || t->kernel_busy_ns > t->busy_ns || t->copy_busy_ns > t->busy_ns)
			return fail(why, cap, "device %u: busy %llu (kernels %llu, copies %llu) over its "
				    "span %llu", t->device, (unsigned long long)t->busy_ns,
				    (unsigned long long)t->kernel_busy_ns,
				    (unsigned long long)t->copy_busy_ns, (unsigned long long)span);
		if (t->idle_ns > span)
			return fail(why, cap, "device %u: idle %llu over its span %llu", t->device,
				    (unsigned long long)t->idle_ns, (unsigned long long)span);
	}
	if (fd->n > APX_FINDINGS_MAX || fd->nresults > APX_RULES_MAX)
		return fail(why, cap, "%zu findings, %zu results", fd->n, fd->nresults);
	for (size_t i = 0; i < fd->n; i++) {
		const struct apx_finding *f = &fd->f[i];

		if (!(f->saving_ns >= 0 && f->saving_ns <= (double)m->wall_ns))
			return fail(why, cap, "finding %zu (%s): saving %.0f ns, wall %llu ns", i, f->rule,
				    f->saving_ns, (unsigned long long)m->wall_ns);
		if (!(f->saving_pct >= 0 && f->saving_pct <= 100) || f->confidence_pct < 0 ||
		    f->confidence_pct > 100)
			return fail(why, cap, "finding %zu (%s): saving %.3f%%, confidence %d%%", i,
				    f->rule, f->saving_pct, f->confidence_pct);
		/* ranked within its list: the main one, then the start-up section's */
		if (i && apx_finding_in_main(fd, &fd->f[i - 1]) < apx_finding_in_main(fd, f))
			return fail(why, cap, "start-up finding %zu ranks above a main one", i - 1);
		if (i && f->saving_estimated && fd->f[i - 1].saving_estimated &&
		    apx_finding_in_main(fd, &fd->f[i - 1]) == apx_finding_in_main(fd, f) &&
		    f->saving_ns > fd->f[i - 1].saving_ns)
			return fail(why, cap, "finding %zu ranks above a larger saving", i - 1);
		if (!f->startup && f->saving_estimated && !f->recorded_by)
			main_ns += f->saving_ns;
	}
	if (m->gpu.window_ns && main_ns > (double)m->gpu.window_ns + 1)
		return fail(why, cap, "steady findings save %.0f ns, over the steady window %llu ns", main_ns,
			    (unsigned long long)m->gpu.window_ns);
	{	/* a saving never exceeds the GPU work it removes: the steady findings
		 * whose saving is kernel time (made shorter, or hiding copies) together within the
		 * kernels' busy time in the steady window; so a step's within its kernel time */
		double kernel_only = 0, kbusy = apx_rules_steady_kernel_busy(m);

		for (size_t i = 0; i < fd->n; i++) {
			const struct apx_finding *f = &fd->f[i];

			if (!f->startup && f->saving_estimated && !f->recorded_by && f->saving_ns > 0 &&
			    f->kernel_ns >= f->saving_ns)
				kernel_only += f->saving_ns;
		}
		if (fd->n && kernel_only > kbusy + 1)
			return fail(why, cap, "steady findings save %.0f ns of kernel time, over the "
				    "kernels' %.0f ns in the steady window", kernel_only, kbusy);
	}
	/* steps taken from host ranges as they are (not projected) have the GPU
	 * keeping up with them: at their end the GPU has no queue left longer than a step */
	if ((m->steady.source == APX_STEPS_NVTX || m->steady.source == APX_STEPS_PROFILER) &&
	    !m->steady.projected && m->steady.count &&
	    apx_steps_queued_at(m, m->steady.last_ns, m->steady.median_ns) > m->steady.median_ns)
		return fail(why, cap, "steps from host ranges (median %llu ns) while the GPU is still "
			    "busy with their work past the last one's end",
			    (unsigned long long)m->steady.median_ns);
	{	/* the Python stacks' lines: each kernel is in one line at most */
		uint64_t hot_ns = 0, hot_launches = 0;

		for (size_t i = 0; i < m->hotspots.n; i++) {
			const struct apx_an_hotspot *h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, i);

			hot_ns += h->gpu_ns;
			hot_launches += h->launches;
			if (h->st_gpu_ns > h->gpu_ns || h->host_running_ns > h->host_ns)
				return fail(why, cap, "hotspot %zu: steady GPU %llu of %llu, running %llu "
					    "of host %llu", i, (unsigned long long)h->st_gpu_ns,
					    (unsigned long long)h->gpu_ns,
					    (unsigned long long)h->host_running_ns,
					    (unsigned long long)h->host_ns);
		}
		if (hot_ns > m->kernel_total_ns || hot_launches > m->k.n)
			return fail(why, cap, "hotspots: %llu ns in %llu launches, over the kernels' %llu "
				    "ns in %zu", (unsigned long long)hot_ns,
				    (unsigned long long)hot_launches,
				    (unsigned long long)m->kernel_total_ns, m->k.n);
		for (size_t i = 0; i < fd->n; i++)
			if (fd->f[i].nlines > APX_FINDING_LINES_MAX)
				return fail(why, cap, "finding %s names %u lines", fd->f[i].rule,
					    fd->f[i].nlines);
	}
	return 0;
}

/* The text has no control byte left but '\n' (the filter escaped them) and is UTF-8. */
static int text_clean(const char *s, size_t n, char *why, size_t cap)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = apx_utf8_decode((const uint8_t *)s + i, n - i, &c);

		if (!k || (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f))
			return fail(why, cap, "text report: byte 0x%02x at %zu reaches the terminal",
				    (unsigned char)s[i], i);
		i += k;
	}
	return 0;
}

static int text_counts(const struct apx_model *m, const struct apx_findings *fd, const char *text,
		       const char *json, char *why, size_t cap)
{
	/* every finding has one saving_model ("rank" is also a distributed rank's) */
	size_t rank = count(json, "\"saving_model\":"), heads = 0;
	const char *p;

	/* the findings section numbers them "  [k] SEVERITY" */
	for (p = text; (p = strstr(p, "\n  [")); p += 4)
		if (p[4] >= '1' && p[4] <= '9')
			heads++;
	if (rank != fd->n || heads != fd->n)
		return fail(why, cap, "findings: %zu in the model, %zu in the JSON, %zu in the text",
			    fd->n, rank, heads);
	if (json_num(json, "distinct_kernels") != (double)m->names.n ||
	    json_num(json, "kernel_time_ns") < 0)
		return fail(why, cap, "JSON distinct_kernels %.0f, model %zu",
			    json_num(json, "distinct_kernels"), m->names.n);
	p = strstr(text, "\n  kernels            ");
	if (p) {
		unsigned long long launches = strtoull(p + 22, NULL, 10);
		const char *d = strstr(p, " distinct\n");
		const char *c = d;

		while (c && c > p && c[-1] >= '0' && c[-1] <= '9')
			c--;
		/* the launches counted there include the replayed ones, which have no times */
		if (launches != m->k.n + m->untimed_launches || !d ||
		    strtoull(c, NULL, 10) != m->names.n)
			return fail(why, cap, "text: %llu launches / %.20s distinct, model %zu + %llu "
				    "replayed / %zu", launches, c ? c : "?", m->k.n,
				    (unsigned long long)m->untimed_launches, m->names.n);
	}
	if (count(json, "\"records_unreadable\":") != m->nfiles)
		return fail(why, cap, "JSON lists %zu files, the model %zu",
			    count(json, "\"records_unreadable\":"), m->nfiles);
	return 0;
}

/* Fields of one CSV record at p (RFC 4180 quoting); *ret_end: the byte after its newline. */
static size_t csv_fields(const char *p, const char *end, const char **ret_end)
{
	size_t n = 1;
	int quoted = 0;

	for (; p < end; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == ',')
			n++;
		else if (!quoted && *p == '\n')
			break;
	}
	*ret_end = p < end ? p + 1 : end;
	return n;
}

/* The document's CSV and HTML (lib/report): no control byte from a trace, no markup from it,
 * and every CSV row as wide as its header. */
static int doc_ok(const struct apx_model *m, const struct apx_findings *fd, char *why, size_t cap)
{
	struct apx_rdoc *d;
	char *out[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	int r = -1;

	/* the rules that fill typed metrics (every rule should: add new ones here) */
	static const char typed[] = " pageable-copy sync-copy sync-frequency gpu-starvation "
				    "launch-bound copy-overlap unified-memory memory-capacity "
				    "repeated-copy fp32-matmul small-copies input-pipeline "
				    "redundant-replication graph-recapture optimizer-foreach "
				    "zero-grad-memset dataloader-workers l2-persistence ";

	for (size_t i = 0; i < fd->n; i++) {
		const struct apx_finding *f = &fd->f[i];
		char word[64];

		snprintf(word, sizeof(word), " %s ", f->rule);
		if (!f->recorded_by && !f->nmetrics && strstr(typed, word))
			return fail(why, cap, "finding %s has no metrics", f->rule);
		for (unsigned k = 0; k < f->nmetrics; k++)
			if (!isfinite(f->metrics[k].value) || f->metrics[k].value < 0 ||
			    f->metrics[k].unit >= APX_UNIT_TEXT)
				return fail(why, cap, "finding %s: metric %s = %g", f->rule,
					    f->metrics[k].key, f->metrics[k].value);
	}
	d = apx_rdoc_build(m, fd, NULL);
	if (!d)
		return fail(why, cap, "out of memory");
	for (int k = 0; k < 2; k++) {
		FILE *f = open_memstream(&out[k], &len[k]);

		if (!f)
			goto out;
		(k ? apx_report_emit_html : apx_report_emit_csv)(f, d);
		fclose(f);
		for (size_t i = 0; i < len[k]; i++)
			if ((unsigned char)out[k][i] < 0x20 && out[k][i] != '\n' && out[k][i] != '\t') {
				fail(why, cap, "%s: control byte 0x%02x", k ? "HTML" : "CSV",
				     (unsigned char)out[k][i]);
				goto out;
			}
	}
	if (strstr(out[1], "<script")) {
		fail(why, cap, "HTML: markup from the trace");
		goto out;
	}
	for (const char *p = out[0], *end = out[0] + len[0]; p < end;) {
		const char *next;
		size_t want;

		if (*p == '#' || *p == '\n') {
			p = memchr(p, '\n', (size_t)(end - p));
			p = p ? p + 1 : end;
			continue;
		}
		want = csv_fields(p, end, &next);	/* the header */
		for (p = next; p < end && *p != '\n';) {
			if (csv_fields(p, end, &next) != want) {
				fail(why, cap, "CSV: a row of another width than its header");
				goto out;
			}
			p = next;
		}
	}
	r = 0;
out:
	free(out[0]);
	free(out[1]);
	apx_rdoc_free(d);
	return r;
}

int apx_props_check(const struct apx_model *m, const struct apx_findings *fd, char *why,
		    size_t cap)
{
	struct apx_report_opts o = { .top = 15, .sections = (1u << APX_SEC__COUNT) - 1, .color = 0 };
	char *text = NULL, *json = NULL;
	size_t tlen = 0, jlen = 0;
	FILE *tf = open_memstream(&text, &tlen), *jf = open_memstream(&json, &jlen), *filt;
	struct apx_rdoc_opts dopts = { .sections = o.sections, .top = o.top };
	struct apx_rdoc *doc = apx_rdoc_build(m, fd, &dopts);
	int r = -1;

	if (!doc || !tf || !jf || !(filt = apx_term_filter_open(tf))) {
		fail(why, cap, "out of memory");
		goto out;
	}
	apx_report_format_find("text")->emit(filt, doc, &o);
	fclose(filt);
	apx_report_format_find("json")->emit(jf, doc, &o);
	fclose(tf);
	fclose(jf);
	tf = jf = NULL;
	if (model_ok(m, fd, why, cap) < 0 || text_clean(text, tlen, why, cap) < 0)
		goto out;
	if (!json_valid(json, jlen)) {
		fail(why, cap, "the JSON report is not valid JSON in UTF-8");
		goto out;
	}
	if (pct_fields_ok(json, why, cap) < 0 || text_counts(m, fd, text, json, why, cap) < 0 ||
	    doc_ok(m, fd, why, cap) < 0)
		goto out;
	r = 0;
out:
	if (tf)
		fclose(tf);
	if (jf)
		fclose(jf);
	free(text);
	free(json);
	apx_rdoc_free(doc);
	return r;
}

int apx_props_model(const uint8_t *buf, size_t len, struct apx_model **ret_m,
		    struct apx_findings *fd)
{
	struct apx_model *m = apx_model_new();
	struct apx_reader *r;
	struct apx_diag d = { 0 };

	if (!m)
		return -1;
	if (apx_reader_open_mem(buf, len, &r, &d) < 0 || apx_model_add_reader(m, "mem", r, &d) < 0 ||
	    apx_model_finish(m) < 0) {
		apx_model_free(m);
		return -1;
	}
	apx_rules_run(m, fd);
	*ret_m = m;
	return 0;
}

void apx_props_reseal(uint8_t *buf, size_t len)
{
	size_t off = APX_PREAMBLE_SIZE;

	while (off + APX_CHUNK_HDR_SIZE <= len) {
		uint32_t plen = apx_get_le32(buf + off + 12);

		if (plen > len - off - APX_CHUNK_HDR_SIZE)
			break;
		apx_put_le32(buf + off + 24, apx_crc32c(buf + off + APX_CHUNK_HDR_SIZE, plen));
		apx_put_le32(buf + off + 28, apx_crc32c(buf + off, 28));
		off += APX_CHUNK_HDR_SIZE + plen;
	}
}
