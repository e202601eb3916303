/*
 * build_view_nvperfd.c - the text and JSON views of what nvperfd observed from outside
 * (model->observed, built by lib/analysis/observed.c): the "nvperfd (observed from outside)"
 * section, one block per process (uprobes, host<->device copies, pinned allocations, GPU,
 * GPM, the METRIC time series, the `apx attach` command it suggested), and the "GPU
 * (observed)" lines of the summary. Values nvperfd wrote as "n/a (why)" are shown with their
 * why, never as 0. Fits 100 columns. And the JSON member "nvperfd": each process's
 * key/values, copies and series as nested tables. Called by build_view.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/observed.h"
#include "analysis/procobs.h"
#include "report/build.h"

#include "base/banned.h"

#define COL 15		/* where the values of a block start: "    label      value" */
#define S APX_SEC_NVPERFD

static const char *const dir_name[2] = { "H2D", "D2H" };
static const char *const dir_words[2] = { "host->device", "device->host" };
static const char *const kind_name[2] = { "pageable", "pinned" };

/* Borrowed file text, NUL-terminated, control characters shown as '?', at most cap - 1 bytes. */
static const char *text(char *buf, size_t cap, const char *p, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; p && i < len && n + 1 < cap; i++)
		buf[n++] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	buf[n] = 0;
	return buf;
}

static const char *val_text(char *buf, size_t cap, const struct apx_an_obs_val *v)
{
	return text(buf, cap, v->text, v->len);
}

/* A label in the block's first columns, then the text wrapped under it. */
static void line(struct apx_rdoc *d, unsigned s, const char *label, const char *txt)
{
	char head[32];

	snprintf(head, sizeof(head), "%-10s ", label);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 4, .head = head,
					      .text = txt, .windent = COL });
}

static int val_is(const struct apx_an_obs_val *v, const char *s)
{
	return v->text && v->len == strlen(s) && !memcmp(v->text, s, v->len);
}

static void uprobes(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	char b[300], t[256];

	if (!ob->uprobes.text) {
		line(d, S, "uprobes", "none (not in the summary)");
		return;
	}
	snprintf(b, sizeof(b), "%s", val_text(t, sizeof(t), &ob->uprobes));
	if (ob->uprobe_calls.has)
		apx_text_append(b, sizeof(b), "; %" PRIu64 " probed calls", ob->uprobe_calls.u);
	if (ob->uprobe_lost.has)
		apx_text_append(b, sizeof(b), ", %" PRIu64 " lost", ob->uprobe_lost.u);
	line(d, S, "uprobes", b);
	if (ob->libcuda.text)
		line(d, S, "libcuda", val_text(t, sizeof(t), &ob->libcuda));
}

static void copies(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	char b1[32], b2[32], why[48];
	int any = 0;

	for (int dir = 0; dir < 2; dir++)
		for (int k = 0; k < 2; k++)
			any |= ob->copy[dir][k].calls.text || ob->copy[dir][k].bytes.text;
	if (!any) {
		line(d, S, "copies", "not counted (no uprobe counts in the summary)");
		return;
	}
	apx_rdoc_line(d, S, 4, "%-10s %-4s %-13s %9s %11s  %s", "copies", "dir", "host memory",
		      "calls", "bytes", "rate (bytes / time in the calls)");
	for (int dir = 0; dir < 2; dir++) {
		for (int k = 0; k < 2; k++) {
			const struct apx_an_obs_copy *c = &ob->copy[dir][k];
			const char *rate;

			if (!c->calls.text && !c->bytes.text)
				continue;
			if (c->calls.has)
				snprintf(b1, sizeof(b1), "%" PRIu64, c->calls.u);
			else
				snprintf(b1, sizeof(b1), "n/a");
			if (c->bytes.has)
				apx_fmt_size(b2, sizeof(b2), c->bytes.v);
			else
				snprintf(b2, sizeof(b2), "n/a");
			if (c->calls.has && !c->calls.u)
				rate = "-";
			else if (c->call_ns.has && c->bytes.has)
				rate = apx_fmt_rate(why, sizeof(why), c->bytes.v, c->call_ns.v);
			else if (c->call_ns.text)
				rate = val_text(why, sizeof(why), &c->call_ns);
			else
				rate = "n/a (call time not in the summary)";
			apx_rdoc_line(d, S, 4, "%-10s %-4s %-13s %9s %11s  %s", "", dir_name[dir],
				      kind_name[k], b1, b2, rate);
		}
	}
}

static void pinned(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	char b[160], b1[32];

	if (!ob->pin_calls.has && !ob->pin_bytes.has)
		return;
	snprintf(b, sizeof(b), "%" PRIu64 " allocation%s", ob->pin_calls.u,
		 ob->pin_calls.u == 1 ? "" : "s");
	if (ob->pin_bytes.has)
		apx_text_append(b, sizeof(b), ", %s", apx_fmt_size(b1, sizeof(b1), ob->pin_bytes.v));
	if (ob->pin_failed.has && ob->pin_failed.u > 0)
		apx_text_append(b, sizeof(b), " (%" PRIu64 " failed)", ob->pin_failed.u);
	line(d, S, "pinned", b);
}

/* GPM's key/values three to a line. */
static void gpm(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	const struct apx_model *m = d->m;
	char row[160] = "", t[32], v[16];

	for (size_t i = 0; i < ob->ngpm; i++) {
		const struct apx_an_kv *kv = APX_VEC_AT(&m->kvs, struct apx_an_kv, ob->gpm_kv[i]);
		size_t skip = strlen("nvperfd.gpm.");

		apx_text_append(row, sizeof(row), "%-16s %8s", text(t, 17, kv->key + skip,
								   kv->key_len - skip),
				text(v, 9, kv->val, kv->val_len));
		if (i % 3 == 2 || i + 1 == ob->ngpm) {
			apx_rdoc_line(d, S, COL, "%s", row);
			row[0] = 0;
		} else {
			apx_text_append(row, sizeof(row), "  ");
		}
	}
}

static void gpu(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	char b[600], t[256], b1[32];

	if (!ob->nvml.text && !ob->samples.text)
		return;
	if (ob->nvml.text && !val_is(&ob->nvml, "yes")) {
		snprintf(b, sizeof(b), "NVML: %s", val_text(t, sizeof(t), &ob->nvml));
		line(d, S, "GPU", b);
		return;
	}
	b[0] = 0;
	if (ob->device.has)
		apx_text_append(b, sizeof(b), "device %" PRIu64 ": ", ob->device.u);
	if (ob->samples.has)
		apx_text_append(b, sizeof(b), "%" PRIu64 " NVML samples", ob->samples.u);
	if (ob->idle_samples.has)
		apx_text_append(b, sizeof(b), " (%" PRIu64 " idle)", ob->idle_samples.u);
	if (ob->sm_util_pct.has)
		apx_text_append(b, sizeof(b), "; SM %.1f%% mean", ob->sm_util_pct.v);
	else if (ob->sm_util_pct.text)
		apx_text_append(b, sizeof(b), "; SM %s", val_text(t, sizeof(t), &ob->sm_util_pct));
	if (ob->mem_peak_bytes.has)
		apx_text_append(b, sizeof(b), "; memory peak %s",
				apx_fmt_size(b1, sizeof(b1), ob->mem_peak_bytes.v));
	else if (ob->mem_peak_bytes.text)
		apx_text_append(b, sizeof(b), "; memory peak %s",
				val_text(t, sizeof(t), &ob->mem_peak_bytes));
	line(d, S, "GPU", b);
	if (!ob->gpm.text && !ob->ngpm)
		return;
	line(d, S, "GPM", ob->gpm.text ? val_text(t, sizeof(t), &ob->gpm) : "");
	gpm(d, ob);
}

/* A series value for humans: bytes as a size, percentages with one decimal. */
static const char *series_val(char *buf, size_t cap, const struct apx_an_series *s, double v)
{
	if (s->unit_len == 5 && !memcmp(s->unit, "bytes", 5))
		return apx_fmt_size(buf, cap, v);
	if (s->unit_len == 1 && s->unit[0] == '%')
		snprintf(buf, cap, "%.1f", v);
	else
		snprintf(buf, cap, "%.4g", v);
	return buf;
}

static void series(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	const struct apx_model *m = d->m;
	char b[4][32], name[24], unit[8];

	if (!ob->nseries)
		return;
	apx_rdoc_line(d, S, 4, "%-10s %-20s %6s %8s %7s %9s %9s %9s  %s", "series", "name", "device",
		      "pid", "samples", "min", "mean", "max", "unit");
	for (size_t i = ob->series_first; i < ob->series_first + ob->nseries; i++) {
		const struct apx_an_series *s = APX_VEC_AT(&m->series, struct apx_an_series, i);

		if (s->pid)
			snprintf(b[3], sizeof(b[3]), "%" PRIu64, s->pid);
		else
			snprintf(b[3], sizeof(b[3]), "(all)");
		if (s->count) {
			series_val(b[0], sizeof(b[0]), s, s->min);
			series_val(b[1], sizeof(b[1]), s, s->mean);
			series_val(b[2], sizeof(b[2]), s, s->max);
		} else {
			for (int k = 0; k < 3; k++)
				snprintf(b[k], sizeof(b[k]), "n/a");
		}
		apx_rdoc_line(d, S, COL, "%-20s %6u %8.8s %7" PRIu64 " %9s %9s %9s  %s",
			      text(name, 21, s->name, s->name_len), s->device, b[3], s->count, b[0],
			      b[1], b[2], text(unit, sizeof(unit), s->unit, s->unit_len));
	}
	if (ob->series_dropped)
		apx_rdoc_line(d, S, COL, "(%" PRIu64 " samples of more series left out)",
			      ob->series_dropped);
	apx_rdoc_line(d, S, COL, "pid (all): device-wide");
}

/* ---- the JSON member "nvperfd" (docs/report-schema.md, "nvperfd") ---- */
static const struct apx_rvcol nvperfd_json_cols[] = {
	{ .key = "path", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	{ .key = "kvs", .title = "key/values", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_KV },
	{ .key = "kvs_dropped", .title = "key/values left out", .unit = APX_UNIT_COUNT },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
	{ .key = "series", .title = "series", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
	{ .key = "series_dropped", .title = "samples left out", .unit = APX_UNIT_COUNT },
};
static const struct apx_rvcol kvs_json_cols[] = {
	{ .key = "key", .title = "key", .unit = APX_UNIT_TEXT },
	{ .key = "value", .title = "value", .unit = APX_UNIT_TEXT },
};
static const struct apx_rvcol copies_json_cols[] = {
	{ .key = "direction", .title = "dir", .unit = APX_UNIT_TEXT },
	{ .key = "host_memory", .title = "host memory", .unit = APX_UNIT_TEXT },
	{ .key = "calls", .title = "calls", .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "call_ns", .title = "time in the calls", .unit = APX_UNIT_NS },
	{ .key = "gbps", .title = "GB/s", .unit = APX_UNIT_RATIO },
	{ .key = "why", .title = "why", .unit = APX_UNIT_TEXT },
};
static const struct apx_rvcol series_json_cols[] = {
	{ .key = "name", .title = "series", .unit = APX_UNIT_TEXT },
	{ .key = "unit", .title = "unit", .unit = APX_UNIT_TEXT },
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "min", .title = "min", .unit = APX_UNIT_RATIO, .h.jfmt = APX_JF_G15 },
	{ .key = "mean", .title = "mean", .unit = APX_UNIT_RATIO, .h.jfmt = APX_JF_G15 },
	{ .key = "max", .title = "max", .unit = APX_UNIT_RATIO, .h.jfmt = APX_JF_G15 },
	{ .key = "first_ns", .title = "first", .unit = APX_UNIT_NS },
	{ .key = "last_ns", .title = "last", .unit = APX_UNIT_NS },
};

/* A number nvperfd wrote, or no value (its text, "n/a (why)", is in the file's kvs). */
static void obs(struct apx_rtable *t, unsigned col, const struct apx_an_obs_val *v)
{
	if (v->has)
		apx_rtable_u64(t, col, v->u);
}

static struct apx_rtable *copies_json(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	struct apx_rtable *t = apx_rdoc_sub_table(d, "copies");

	APX_RTABLE_SET_VCOLS(t, copies_json_cols);
	for (int dir = 0; dir < 2; dir++) {
		for (int k = 0; k < 2; k++) {
			const struct apx_an_obs_copy *c = &ob->copy[dir][k];

			if ((!c->calls.text && !c->bytes.text) || apx_rtable_row(t) < 0)
				continue;
			apx_rtable_str(d, t, 0, dir_name[dir]);
			apx_rtable_str(d, t, 1, kind_name[k]);
			obs(t, 2, &c->calls);
			obs(t, 3, &c->bytes);
			obs(t, 4, &c->call_ns);
			if (c->call_ns.has && c->bytes.has && c->call_ns.v > 0)
				apx_rtable_num(t, 5, c->bytes.v / c->call_ns.v);
			if (c->call_ns.has || !c->call_ns.text)
				apx_rtable_str(d, t, 6, c->call_ns.has ? "" : "call time not in the summary");
			else
				apx_rtable_text(d, t, 6, c->call_ns.text, c->call_ns.len);
		}
	}
	return t;
}

static struct apx_rtable *series_json(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *t = apx_rdoc_sub_table(d, "series");

	APX_RTABLE_SET_VCOLS(t, series_json_cols);
	for (size_t k = ob->series_first; k < ob->series_first + ob->nseries; k++) {
		const struct apx_an_series *s = APX_VEC_AT(&m->series, struct apx_an_series, k);

		if (apx_rtable_row(t) < 0)
			break;
		apx_rtable_text(d, t, 0, s->name, s->name ? s->name_len : 0);
		apx_rtable_text(d, t, 1, s->unit, s->unit ? s->unit_len : 0);
		apx_rtable_u64(t, 2, s->device);
		apx_rtable_u64(t, 3, s->pid);
		apx_rtable_u64(t, 4, s->count);
		if (s->count) {
			apx_rtable_num(t, 5, s->min);
			apx_rtable_num(t, 6, s->mean);
			apx_rtable_num(t, 7, s->max);
		}
		apx_rtable_u64(t, 8, s->first_ns);
		apx_rtable_u64(t, 9, s->last_ns);
	}
	return t;
}

static void nvperfd_json(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	struct apx_rtable *j = apx_rdoc_view_table(d, S, "json:nvperfd", APX_VIEW_JSON);

	APX_RTABLE_SET_VCOLS(j, nvperfd_json_cols);
	for (size_t i = 0; i < m->observed.n; i++) {
		const struct apx_an_observed *o = APX_VEC_AT(&m->observed, struct apx_an_observed, i);
		struct apx_rtable *kv = apx_rdoc_sub_table(d, "kvs");

		if (apx_rtable_row(j) < 0)
			break;
		apx_rtable_str(d, j, 0, m->files[o->file].path);
		apx_rtable_u64(j, 1, m->files[o->file].pid);
		APX_RTABLE_SET_VCOLS(kv, kvs_json_cols);
		for (size_t k = o->kv_first; k < o->kv_first + o->nkv; k++) {
			const struct apx_an_kv *v = APX_VEC_AT(&m->kvs, struct apx_an_kv, k);

			if (apx_rtable_row(kv) < 0)
				break;
			apx_rtable_text(d, kv, 0, v->key, v->key_len);
			apx_rtable_text(d, kv, 1, v->val, v->val_len);
		}
		apx_rtable_sub(j, 2, kv);
		apx_rtable_u64(j, 3, o->kvs_dropped);
		apx_rtable_sub(j, 4, copies_json(d, o));
		apx_rtable_sub(j, 5, series_json(d, o));
		apx_rtable_u64(j, 6, o->series_dropped);
	}
	apx_rdoc_json(d, S, "nvperfd", j, APX_RJ_ARRAY, 0);
}

/* "next": the command nvperfd suggested for a closer look at a process with a big problem
 * (nvperfd.next). Shown only when it is exactly the one nvperfd makes for its pid
 * (apx_procobs_next_cmd): a file is not trusted to put any other command before the user. */
static void next_cmd(struct apx_rdoc *d, const struct apx_an_observed *ob)
{
	static const struct apx_finding big = { .severity = APX_SEV_WARNING };
	const struct apx_an_kv *kv = apx_observed_kv(d->m, ob, "nvperfd.next");
	static const char pre[] = "apx attach ";
	char want[APX_NEXT_CMD_MAX], got[APX_NEXT_CMD_MAX];
	int pid = 0;

	if (!kv || kv->val_len >= sizeof(got) || kv->val_len < sizeof(pre))
		return;
	memcpy(got, kv->val, kv->val_len);
	got[kv->val_len] = 0;
	if (strncmp(got, pre, sizeof(pre) - 1))
		return;
	for (const char *c = got + sizeof(pre) - 1; *c >= '0' && *c <= '9' && pid < 10000000; c++)
		pid = pid * 10 + (*c - '0');
	for (int cuda = 0; cuda < 2; cuda++) {
		if (apx_procobs_next_cmd(&big, 1, pid, cuda, want, sizeof(want)) > 0 &&
		    !strcmp(want, got)) {
			line(d, S, "next", got);
			return;
		}
	}
}

void apx_rdoc_view_nvperfd(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;

	nvperfd_json(d);
	if (!m->observed.n) {
		d->sec[S].text_untitled = 1;	/* no nvperfd summary: not even the heading */
		return;
	}
	for (size_t i = 0; i < m->observed.n; i++) {
		const struct apx_an_observed *ob = APX_VEC_AT(&m->observed, struct apx_an_observed, i);
		const struct apx_an_file *fl = &m->files[ob->file];
		char cmd[150], head[32];

		if (i)
			apx_rdoc_line(d, S, 0, "%s", "");
		snprintf(cmd, sizeof(cmd), "%.*s%s", (int)sizeof(cmd) - 4, fl->argv[0] ? fl->argv : "n/a",
			 strlen(fl->argv) > sizeof(cmd) - 4 ? "..." : "");
		snprintf(head, sizeof(head), "pid %" PRIu64 ": ", fl->pid);
		apx_rdoc_blk(d, S, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = head,
						      .text = cmd,
						      .windent = 2 + (unsigned)strlen(head) });
		uprobes(d, ob);
		copies(d, ob);
		pinned(d, ob);
		gpu(d, ob);
		series(d, ob);
		next_cmd(d, ob);
		if (ob->kvs_dropped)
			apx_rdoc_line(d, S, 4, "(%" PRIu64 " more nvperfd.* key/values left out)",
				      ob->kvs_dropped);
	}
}

void apx_rdoc_nvperfd_summary(struct apx_rdoc *d, unsigned s)
{
	const struct apx_model *m = d->m;
	const struct apx_an_observed_run *r = &m->obs;
	char b[600], b1[32], head[32];
	int any_cuda = 0;

	if (!m->observed.n)
		return;
	b[0] = 0;
	if (r->sm_has)
		apx_text_append(b, sizeof(b), "SM %.1f%% mean", r->sm_util_pct);
	if (r->mem_has)
		apx_text_append(b, sizeof(b), "%smemory peak %s", b[0] ? ", " : "",
				apx_fmt_size(b1, sizeof(b1), (double)r->mem_peak_bytes));
	for (int dir = 0; dir < 2; dir++)
		for (int k = 0; k < 2; k++)
			if (r->copy_has[dir][k] && r->copy_bytes[dir][k])
				apx_text_append(b, sizeof(b), "%s%s %s (%s)", b[0] ? ", " : "",
						apx_fmt_size(b1, sizeof(b1), (double)r->copy_bytes[dir][k]),
						dir_words[dir], kind_name[k]);
	for (size_t i = 0; i < m->nfiles; i++)
		any_cuda |= m->files[i].cuda_used == 1;
	if (!b[0])
		apx_text_append(b, sizeof(b), "%s", any_cuda ? "no GPU values in the summary"
						     : "none: nvperfd did not see the program use CUDA");
	snprintf(head, sizeof(head), "%-18s ", "GPU (observed)");
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = head,
					      .text = b, .windent = 21 });
	if (m->no_gpu_trace)
		apx_rdoc_line(d, s, 2, "%-18s none (nvperfd observes from outside): run apx analyze for "
			      "kernels and copies", "GPU trace");
}
