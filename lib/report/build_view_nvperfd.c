/*
 * build_view_nvperfd.c - the text view of what nvperfd observed from outside (model->observed,
 * built by lib/analysis/observed.c): the "nvperfd (observed from outside)" section, one block
 * per process (uprobes, host<->device copies, pinned allocations, GPU, GPM, the METRIC time
 * series), and the "GPU (observed)" lines of the summary. Values nvperfd wrote as "n/a (why)"
 * are shown with their why, never as 0. Fits 100 columns. Called by build_view.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

void apx_rdoc_view_nvperfd(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;

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
