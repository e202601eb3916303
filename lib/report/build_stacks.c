/*
 * build_stacks.c - the report's sections from the Python stacks (lib/analysis/stacks.h):
 * "hotspots" (what each source line caused: GPU time, launches, copies, syncs, host samples,
 * a step), "idle-stacks" (the main thread's stacks inside the steady state's GPU-idle gaps) and
 * "threads" (each sampled thread: CPU time, running or waiting, the syscalls it waited in).
 * Each section is one table for CSV, HTML and JSON (views DATA | JSON) and one laid out for
 * the text report; what the store dropped of the stack records is said under hotspots and in
 * "how this was measured". Called by apx_rdoc_build_views() (build_view.c) for the sections
 * asked for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "report/build.h"
#include "report/flame.h"

#include "base/banned.h"

/* The last two components of a path (the text report's short name). */
static const char *short_path(const char *p, uint32_t len, uint32_t *ret_len)
{
	uint32_t i = len, slashes = 0;

	while (i && !(p[i - 1] == '/' && ++slashes == 2))
		i--;
	*ret_len = len - i;
	return p + i;
}

static const struct apx_an_line *line_at(const struct apx_model *m, uint32_t l)
{
	return APX_VEC_AT(&m->lines, struct apx_an_line, l);
}

/* "data.py:12 tokenize" (text cells; the emitters escape trace bytes). */
static void line_label(const struct apx_model *m, const struct apx_es_frame *f,
		       const struct apx_an_line *ln, char *buf, size_t cap)
{
	struct apx_es_text file = apx_store_string(m->store, f ? f->file : ln->file);
	struct apx_es_text func = apx_store_string(m->store, f ? f->func : ln->func);
	uint32_t n;
	const char *p = short_path(file.p, file.len, &n);

	snprintf(buf, cap, "%.*s:%u %.*s", (int)(n > 200 ? 200 : n), p, f ? f->line : ln->line,
		 (int)(func.len > 200 ? 200 : func.len), func.p);
}

void apx_rdoc_line_label(const struct apx_model *m, uint32_t line, char *buf, size_t cap)
{
	line_label(m, NULL, line_at(m, line), buf, cap);
}

/* ---- hotspots ---- */
enum { H_FILE, H_LINE, H_FUNC, H_GPU, H_LAUNCHES, H_COPIES, H_BYTES, H_PAGEABLE, H_SYNCS,
       H_WAIT, H_HOST, H_RUNNING, H_SGPU, H_SHOST, H_SLAUNCHES, H_SSYNCS, H_COPY_NS, H_USER,
       H_GPU_BWD, H_BWD_LAUNCHES, H_SGPU_BWD };
static const struct apx_rvcol hotspot_cols[] = {
	[H_FILE] = { .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	[H_LINE] = { .key = "line", .title = "line", .unit = APX_UNIT_ID },
	[H_FUNC] = { .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	[H_GPU] = { .key = "gpu_ns", .title = "GPU time", .unit = APX_UNIT_NS },
	[H_LAUNCHES] = { .key = "launches", .title = "launches", .unit = APX_UNIT_COUNT },
	[H_COPIES] = { .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT },
	[H_BYTES] = { .key = "copy_bytes", .title = "copied", .unit = APX_UNIT_BYTES },
	[H_PAGEABLE] = { .key = "pageable_copies", .title = "pageable", .unit = APX_UNIT_COUNT },
	[H_SYNCS] = { .key = "syncs", .title = "syncs", .unit = APX_UNIT_COUNT },
	[H_WAIT] = { .key = "sync_wait_ns", .title = "sync wait", .unit = APX_UNIT_NS },
	[H_HOST] = { .key = "host_ns", .title = "host time", .unit = APX_UNIT_NS },
	[H_RUNNING] = { .key = "host_running_ns", .title = "host running", .unit = APX_UNIT_NS },
	[H_SGPU] = { .key = "per_step_gpu_ns", .title = "GPU a step", .unit = APX_UNIT_NS,
		     .h = { .jkey = "per_step/gpu_ns", .jomit = 1 } },
	[H_SHOST] = { .key = "per_step_host_ns", .title = "host a step", .unit = APX_UNIT_NS,
		      .h = { .jkey = "per_step/host_ns", .jomit = 1 } },
	[H_SLAUNCHES] = { .key = "per_step_launches", .title = "launches a step",
			  .unit = APX_UNIT_RATIO, .h = { .jkey = "per_step/launches", .jomit = 1 } },
	[H_SSYNCS] = { .key = "per_step_syncs", .title = "syncs a step", .unit = APX_UNIT_RATIO,
		       .h = { .jkey = "per_step/syncs", .jomit = 1 } },
	[H_COPY_NS] = { .key = "copy_ns", .title = "copy time", .unit = APX_UNIT_NS },
	[H_USER] = { .key = "user", .title = "user code", .unit = APX_UNIT_COUNT,
		     .h.jfmt = APX_JF_BOOL },
	/* backward kernels given this forward line (backward.c; only with launch times) */
	[H_GPU_BWD] = { .key = "gpu_bwd_ns", .title = "backward GPU time", .unit = APX_UNIT_NS,
			.h.jomit = 1 },
	[H_BWD_LAUNCHES] = { .key = "bwd_launches", .title = "backward launches",
			     .unit = APX_UNIT_COUNT, .h.jomit = 1 },
	[H_SGPU_BWD] = { .key = "per_step_gpu_bwd_ns", .title = "backward GPU a step",
			 .unit = APX_UNIT_NS, .h = { .jkey = "per_step/gpu_bwd_ns", .jomit = 1 } },
};
/* the text table with backward kernels attributed (--python-backward nvtx) */
static const struct apx_rvcol hotspot_text_bwd_cols[] = {
	{ .key = "label", .title = "line", .unit = APX_UNIT_TEXT, .h = { .tw = -30, .tmax = 30 } },
	{ .key = "gpu_ns", .title = "GPU fwd", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "gpu_bwd_ns", .title = "GPU bwd", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "launches", .title = "launches", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "syncs", .title = "syncs", .unit = APX_UNIT_COUNT, .h = { .tw = 6 } },
	{ .key = "host_ns", .title = "host", .unit = APX_UNIT_NS, .h = { .tw = 8 } },
	{ .key = "per_step_gpu_ns", .title = "GPU/step", .unit = APX_UNIT_NS,
	  .h = { .tw = 9, .tna = "-" } },
	{ .key = "per_step_gpu_bwd_ns", .title = "bwd/step", .unit = APX_UNIT_NS,
	  .h = { .tw = 9, .tna = "-" } },
};
static const struct apx_rvcol hotspot_text_cols[] = {
	{ .key = "label", .title = "line", .unit = APX_UNIT_TEXT, .h = { .tw = -38, .tmax = 38 } },
	{ .key = "gpu_ns", .title = "GPU time", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "launches", .title = "launches", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "syncs", .title = "syncs", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "host_ns", .title = "host", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "per_step_gpu_ns", .title = "GPU/step", .unit = APX_UNIT_NS,
	  .h = { .tw = 10, .tna = "-" } },
	{ .key = "per_step_host_ns", .title = "host/step", .unit = APX_UNIT_NS,
	  .h = { .tw = 10, .tna = "-" } },
};

static void hotspot_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_hotspot *h)
{
	const struct apx_model *m = d->m;
	const struct apx_an_line *ln = line_at(m, h->line);
	struct apx_es_text file = apx_store_string(m->store, ln->file);
	struct apx_es_text func = apx_store_string(m->store, ln->func);
	double steps = (double)m->steady_steps;
	char label[512];

	apx_rtable_ktext(d, t, "file", file.p, file.len);
	apx_rtable_ku64(t, "line", ln->line);
	apx_rtable_ktext(d, t, "func", func.p, func.len);
	line_label(m, NULL, ln, label, sizeof(label));
	apx_rtable_kstr(d, t, "label", label);	/* the text table's */
	apx_rtable_ku64(t, "gpu_ns", h->gpu_ns);
	apx_rtable_ku64(t, "launches", h->launches);
	apx_rtable_ku64(t, "copies", h->copies);
	apx_rtable_ku64(t, "copy_bytes", h->copy_bytes);
	apx_rtable_ku64(t, "pageable_copies", h->pageable_copies);
	apx_rtable_ku64(t, "syncs", h->syncs);
	apx_rtable_ku64(t, "sync_wait_ns", h->sync_wait_ns);
	apx_rtable_ku64(t, "host_ns", h->host_ns);
	apx_rtable_ku64(t, "host_running_ns", h->host_running_ns);
	if (steps > 0) {
		apx_rtable_knum(t, "per_step_gpu_ns", (double)h->st_gpu_ns / steps);
		apx_rtable_knum(t, "per_step_host_ns", (double)h->st_host_ns / steps);
		apx_rtable_knum(t, "per_step_launches", (double)h->st_launches / steps);
		apx_rtable_knum(t, "per_step_syncs", (double)h->st_syncs / steps);
	}
	apx_rtable_ku64(t, "copy_ns", h->copy_ns);
	apx_rtable_ku64(t, "user", ln->user);
	if (m->bwd.launch_times) {
		apx_rtable_ku64(t, "gpu_bwd_ns", h->gpu_bwd_ns);
		apx_rtable_ku64(t, "bwd_launches", h->bwd_launches);
		if (steps > 0)
			apx_rtable_knum(t, "per_step_gpu_bwd_ns", (double)h->st_gpu_bwd_ns / steps);
	}
}

/* ---- backward attribution (backward.c): the totals, JSON "backward" and one text line ---- */
static const struct apx_rvcol bwd_cols[] = {
	{ .key = "nostack_ns", .title = "GPU time launched without a Python stack",
	  .unit = APX_UNIT_NS },
	{ .key = "nostack_kernels", .title = "kernels without a stack", .unit = APX_UNIT_COUNT },
	{ .key = "in_node_ns", .title = "inside autograd nodes", .unit = APX_UNIT_NS },
	{ .key = "attributed_ns", .title = "attributed to a forward line", .unit = APX_UNIT_NS },
	{ .key = "attributed_kernels", .title = "kernels attributed", .unit = APX_UNIT_COUNT },
	{ .key = "nearest_ns", .title = "of those by the nearest launch", .unit = APX_UNIT_NS },
	{ .key = "no_forward_ns", .title = "in nodes without a forward line", .unit = APX_UNIT_NS },
	{ .key = "coverage_pct", .title = "coverage", .unit = APX_UNIT_PCT },
	{ .key = "torch_ranges", .title = "PyTorch op ranges", .unit = APX_UNIT_COUNT },
};

static void backward_view(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_HOTSPOTS;
	struct apx_rtable *t;
	double pct;

	if (!m->bwd.launch_times)
		return;
	t = apx_rdoc_view_table(d, s, "json:backward", APX_VIEW_JSON);
	APX_RTABLE_SET_VCOLS(t, bwd_cols);
	pct = m->bwd.nostack_ns ? 100.0 * (double)m->bwd.attr_ns / (double)m->bwd.nostack_ns : 0;
	if (t && apx_rtable_row(t) == 0) {
		apx_rtable_ku64(t, "nostack_ns", m->bwd.nostack_ns);
		apx_rtable_ku64(t, "nostack_kernels", m->bwd.nostack_kernels);
		apx_rtable_ku64(t, "in_node_ns", m->bwd.in_node_ns);
		apx_rtable_ku64(t, "attributed_ns", m->bwd.attr_ns);
		apx_rtable_ku64(t, "attributed_kernels", m->bwd.attr_kernels);
		apx_rtable_ku64(t, "nearest_ns", m->bwd.near_ns);
		apx_rtable_ku64(t, "no_forward_ns", m->bwd.no_forward_ns);
		if (m->bwd.nostack_ns)
			apx_rtable_knum(t, "coverage_pct", pct);
		apx_rtable_ku64(t, "torch_ranges", m->torch_ranges);
	}
	apx_rdoc_json(d, s, "backward", t, APX_RJ_OBJECT, 0);
	if (!m->torch_ranges)
		apx_rdoc_line(d, s, 2, "backward: launch times recorded but no PyTorch op ranges "
			      "(emit_nvtx did not start, or NVTX was not collected): backward "
			      "kernels have no line");
	else if (!m->bwd.nostack_ns)
		apx_rdoc_line(d, s, 2, "backward: every kernel was launched with a Python stack");
	else
		apx_rdoc_line(d, s, 2, "backward: %.1f %% of the GPU time launched without a Python "
			      "stack (%.3f of %.3f ms) given the forward line that created it "
			      "(GPU bwd; %.3f ms by the nearest launch)", pct,
			      (double)m->bwd.attr_ns / 1e6, (double)m->bwd.nostack_ns / 1e6,
			      (double)m->bwd.near_ns / 1e6);
}

static const struct apx_rvcol loss_cols[] = {
	{ .key = "bad_list", .title = "frame lists that do not decode", .unit = APX_UNIT_COUNT },
	{ .key = "too_deep", .title = "lists over 256 frames", .unit = APX_UNIT_COUNT },
	{ .key = "undefined_frame", .title = "stacks naming undefined frames",
	  .unit = APX_UNIT_COUNT },
	{ .key = "bad_id", .title = "records with id 0 or past 2^32", .unit = APX_UNIT_COUNT },
	{ .key = "duplicate_frame", .title = "frame ids given twice", .unit = APX_UNIT_COUNT },
	{ .key = "duplicate_stack", .title = "stack ids given twice", .unit = APX_UNIT_COUNT },
	{ .key = "undefined_stack", .title = "events naming undefined stacks",
	  .unit = APX_UNIT_COUNT },
};

static uint64_t loss_value(const struct apx_es_stack_loss *l, unsigned i)
{
	const uint64_t v[] = { l->bad_list, l->too_deep, l->undefined_frame, l->bad_id,
			       l->dup_frame, l->dup_stack, l->undefined_stack };

	return i < sizeof(v) / sizeof(v[0]) ? v[i] : 0;
}

void apx_rdoc_stack_loss_line(struct apx_rdoc *d, unsigned s, unsigned indent)
{
	const struct apx_es_stack_loss *l = d->m->store ? &d->m->store->stack_loss : NULL;
	char line[512] = "";

	for (unsigned i = 0; l && i < sizeof(loss_cols) / sizeof(loss_cols[0]); i++)
		if (loss_value(l, i))
			apx_text_append(line, sizeof(line), "%s%" PRIu64 " %s", line[0] ? ", " : "",
					loss_value(l, i), loss_cols[i].title);
	if (line[0])
		apx_rdoc_line(d, s, indent, "stack records dropped: %s", line);
}

/* The flame graphs (flame.h), once for the hotspots and threads sections, and the JSON
 * "flame" member (only when there is one: traces without stacks keep their JSON). */
static void flames(struct apx_rdoc *d)
{
	int had = d->flame[0] || d->flame[1];

	if (!d->flame[0])
		d->flame[0] = apx_rflame_gpu(d);
	if (!d->flame[1])
		d->flame[1] = apx_rflame_host(d);
	if (had || (!d->flame[0] && !d->flame[1]) || d->njson >= APX_RDOC_JSON)
		return;
	d->json[d->njson++] = (struct apx_rjson){ .name = "flame", .shape = APX_RJ_FLAME,
						  .section = APX_SEC_HOTSPOTS,
						  .flames = d->flame };
}

/* A top path as a text line, cut to the report's width. */
static void top_path_line(void *ctx, const char *line)
{
	struct apx_rdoc *d = ctx;
	char buf[APX_REPORT_W];
	size_t n = strlen(line);

	if (n > APX_REPORT_W - 6) {
		n = APX_REPORT_W - 9;
		while (n && ((unsigned char)line[n] & 0xc0) == 0x80)
			n--;
		snprintf(buf, sizeof(buf), "%.*s...", (int)n, line);
		line = buf;
	}
	apx_rdoc_line(d, APX_SEC_HOTSPOTS, 4, "%s", line);
}

void apx_rdoc_view_hotspots(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_HOTSPOTS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "hotspots", APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *x = apx_rdoc_view_table(d, s, "text:hotspots", APX_VIEW_TEXT);
	struct apx_rtable *l = apx_rdoc_view_table(d, s, "json:stacks_dropped", APX_VIEW_JSON);
	size_t shown = 0;

	if (t)
		t->title = "Hotspots (source lines)";
	APX_RTABLE_SET_VCOLS(t, hotspot_cols);
	if (m->bwd.launch_times)
		APX_RTABLE_SET_VCOLS(x, hotspot_text_bwd_cols);
	else
		APX_RTABLE_SET_VCOLS(x, hotspot_text_cols);
	APX_RTABLE_SET_VCOLS(l, loss_cols);
	for (size_t i = 0; i < m->hotspots.n && shown < d->top; i++, shown++) {
		const struct apx_an_hotspot *h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, i);

		if (apx_rtable_row(t) < 0 || apx_rtable_row(x) < 0)
			break;
		hotspot_cells(d, t, h);
		hotspot_cells(d, x, h);
	}
	if (m->store && apx_rtable_row(l) == 0)
		for (unsigned i = 0; i < l->ncols; i++)
			apx_rtable_u64(l, i, loss_value(&m->store->stack_loss, i));
	apx_rdoc_json(d, s, "hotspots", t, APX_RJ_ARRAY, 0);
	apx_rdoc_json(d, s, "stacks_dropped", l, APX_RJ_OBJECT, 0);
	flames(d);
	if (!m->has_stacks) {
		apx_rdoc_line(d, s, 2, "no Python stacks in this trace");
		apx_rdoc_stack_loss_line(d, s, 2);
		return;
	}
	apx_rdoc_line(d, s, 2, "%s", m->frames_all
		      ? "each stack counted at its innermost frame, library frames included"
		      : "library frames (site-packages, the standard library) folded into the user "
			"line that called them;");
	if (!m->frames_all)
		apx_rdoc_line(d, s, 2, "--frames all shows them");
	if (!m->steady_steps)
		apx_rdoc_line(d, s, 2, "no steady-state steps: no numbers a step");
	backward_view(d);
	apx_rdoc_stack_loss_line(d, s, 2);
	apx_rdoc_blk_table(d, s, x);
	if (m->hotspots.n > shown)
		apx_rdoc_line(d, s, 2, "(%zu more lines; --top N shows more)", m->hotspots.n - shown);
	if (d->flame[0]) {
		apx_rdoc_line(d, s, 2, "GPU time by stack, outermost frame first (--format html draws "
			      "the flame graph):");
		apx_rflame_top_paths(d->flame[0], 3, top_path_line, d);
	}
}

/* ---- idle-stacks ---- */
static const struct apx_rvcol idle_cols[] = {
	{ .key = "frames", .title = "stack", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
	{ .key = "ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "per_step_ns", .title = "a step", .unit = APX_UNIT_NS, .h.jomit = 1 },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
};
static const struct apx_rvcol frame_cols[] = {
	{ .key = "file", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "line", .title = "line", .unit = APX_UNIT_ID },
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
};

#define IDLE_FRAMES_TEXT 6		/* frames of a stack the text report shows */

/* A stack's frames as a sub-table (JSON), and its text: "a.py:3 f < b.py:9 g < ...". */
static const struct apx_rtable *frames_table(struct apx_rdoc *d, const struct apx_es_stack *sk,
					     char *text, size_t cap)
{
	const struct apx_model *m = d->m;
	const struct apx_store *st = m->store;
	struct apx_rtable *ft = apx_rdoc_sub_table(d, "frames");
	char one[512];

	APX_RTABLE_SET_VCOLS(ft, frame_cols);
	text[0] = 0;
	for (uint16_t j = 0; j < sk->depth; j++) {
		const struct apx_es_frame *f = &st->frames[st->stack_frames[sk->first + j]];
		struct apx_es_text file = apx_store_string(st, f->file);
		struct apx_es_text func = apx_store_string(st, f->func);

		if (ft && apx_rtable_row(ft) == 0) {
			apx_rtable_text(d, ft, 0, file.p, file.len);
			apx_rtable_u64(ft, 1, f->line);
			apx_rtable_text(d, ft, 2, func.p, func.len);
		}
		if (j < IDLE_FRAMES_TEXT) {
			line_label(m, f, NULL, one, sizeof(one));
			apx_text_append(text, cap, "%s%s", j ? " < " : "", one);
		} else if (j == IDLE_FRAMES_TEXT) {
			apx_text_append(text, cap, " < ...");
		}
	}
	return ft;
}

void apx_rdoc_view_idle_stacks(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_IDLE_STACKS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "idle_stacks",
						   APX_VIEW_DATA | APX_VIEW_JSON);
	double steps = (double)m->steady_steps;
	char b1[32], b2[64], b3[48], text[2048];
	size_t shown = 0;

	if (t)
		t->title = "Main thread inside GPU-idle gaps (stacks)";
	APX_RTABLE_SET_VCOLS(t, idle_cols);
	if (!m->has_stacks)
		apx_rdoc_line(d, s, 2, "no Python stacks in this trace");
	else if (!m->idle_stacks.n)
		apx_rdoc_line(d, s, 2, "no sample of a main thread inside the steady state's GPU-idle "
			      "gaps (100 us or longer)");
	else
		apx_rdoc_line(d, s, 2, "main-thread samples inside the steady state's GPU-idle "
			      "gaps: %s in all%s%s%s", apx_fmt_ns(b1, sizeof(b1),
							     (double)m->idle_samples_ns),
			      steps > 0 ? ", " : "", steps > 0 ? apx_fmt_ns(b2, sizeof(b2),
					(double)m->idle_samples_ns / steps) : "",
			      steps > 0 ? " a step" : "");
	for (size_t i = 0; i < m->idle_stacks.n && shown < d->top; i++, shown++) {
		const struct apx_an_idle_stack *is = APX_VEC_AT(&m->idle_stacks,
								struct apx_an_idle_stack, i);
		const struct apx_es_stack *sk = apx_store_stack(m->store, is->stack);

		if (!sk || apx_rtable_row(t) < 0)
			break;
		apx_rtable_sub(t, 0, frames_table(d, sk, text, sizeof(text)));
		apx_rtable_str(d, t, 0, text);	/* CSV, HTML; JSON: the frames' rows */
		apx_rtable_u64(t, 1, is->ns);
		if (steps > 0)
			apx_rtable_num(t, 2, (double)is->ns / steps);
		apx_rtable_u64(t, 3, is->samples);
		/* the time a column of its own, the stack after it */
		apx_fmt_ns(b1, sizeof(b1), steps > 0 ? (double)is->ns / steps : (double)is->ns);
		snprintf(b3, sizeof(b3), "%s%s", b1, steps > 0 ? " a step" : "");
		snprintf(b2, sizeof(b2), "%-17s ", b3);
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .head = b2,
						      .text = text, .windent = 6 });
	}
	apx_rdoc_json(d, s, "idle_stacks", t, APX_RJ_ARRAY, 0);
}

/* ---- threads ---- */
enum { T_PID, T_TID, T_NAME, T_SAMPLES, T_SAMPLED, T_CPU, T_RUN, T_WAIT, T_SYS, T_VCSW, T_IVCSW };
static const struct apx_rvcol thread_cols[] = {
	[T_PID] = { .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	[T_TID] = { .key = "tid", .title = "tid", .unit = APX_UNIT_ID },
	[T_NAME] = { .key = "name", .title = "name", .unit = APX_UNIT_TEXT },
	[T_SAMPLES] = { .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	[T_SAMPLED] = { .key = "sampled_ns", .title = "sampled", .unit = APX_UNIT_NS },
	[T_CPU] = { .key = "cpu_ns", .title = "CPU time", .unit = APX_UNIT_NS },
	[T_RUN] = { .key = "running_pct", .title = "running", .unit = APX_UNIT_PCT },
	[T_WAIT] = { .key = "waiting_pct", .title = "waiting", .unit = APX_UNIT_PCT },
	[T_SYS] = { .key = "syscalls", .title = "waits in", .unit = APX_UNIT_TEXT,
		    .h.jfmt = APX_JF_ROWS },
	[T_VCSW] = { .key = "voluntary_csw", .title = "voluntary switches", .unit = APX_UNIT_COUNT },
	[T_IVCSW] = { .key = "involuntary_csw", .title = "involuntary switches",
		      .unit = APX_UNIT_COUNT },
};
static const struct apx_rvcol thread_text_cols[] = {
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID, .h = { .tw = -8 } },
	{ .key = "tid", .title = "tid", .unit = APX_UNIT_ID, .h = { .tw = -8 } },
	{ .key = "name", .title = "name", .unit = APX_UNIT_TEXT, .h = { .tw = -12, .tmax = 12,
									   .tna = "" } },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "cpu_ns", .title = "CPU time", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "running_pct", .title = "run%", .unit = APX_UNIT_PCT, .h = { .tw = 6, .tfix = 1 } },
	{ .key = "waiting_pct", .title = "wait%", .unit = APX_UNIT_PCT,
	  .h = { .tw = 6, .tfix = 1 } },
	{ .key = "csw", .title = "ctx sw v/i", .unit = APX_UNIT_TEXT,
	  .h = { .tw = 11, .tmax = 11, .tna = "-" } },
	{ .key = "syscalls", .title = "waits in", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -21, .tmax = 21, .tgap = 1 } },
};
static const struct apx_rvcol syscall_cols[] = {
	{ .key = "name", .title = "syscall", .unit = APX_UNIT_TEXT },
	{ .key = "nr", .title = "number", .unit = APX_UNIT_ID },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
};

static void thread_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_thread *a,
			 int json)
{
	double n = a->samples ? (double)a->samples : 1;
	char sys[256] = "", nm[32];
	struct apx_rtable *sub = json ? apx_rdoc_sub_table(d, "syscalls") : NULL;

	apx_rtable_ku64(t, "pid", a->pid);
	apx_rtable_ku64(t, "tid", a->tid);
	if (a->name)
		apx_rtable_ktext(d, t, "name", a->name, a->name_len);
	apx_rtable_ku64(t, "samples", a->samples);
	apx_rtable_ku64(t, "sampled_ns", a->sampled_ns);
	apx_rtable_ku64(t, "cpu_ns", a->cpu_ns);
	apx_rtable_knum(t, "running_pct", 100.0 * (double)a->running / n);
	apx_rtable_knum(t, "waiting_pct", 100.0 * (double)a->waiting / n);
	if (a->has_csw && json) {
		apx_rtable_ku64(t, "voluntary_csw", a->vcsw);
		apx_rtable_ku64(t, "involuntary_csw", a->ivcsw);
	} else if (a->has_csw) {
		char csw[32];

		snprintf(csw, sizeof(csw), "%" PRIu64 "/%" PRIu64, a->vcsw, a->ivcsw);
		apx_rtable_kstr(d, t, "csw", csw);
	}
	APX_RTABLE_SET_VCOLS(sub, syscall_cols);
	for (unsigned k = 0; k < a->nsys; k++) {
		const char *name = apx_syscall_name(a->sys[k].nr);

		if (!name) {
			snprintf(nm, sizeof(nm), "syscall %d", a->sys[k].nr);
			name = nm;
		}
		apx_text_append(sys, sizeof(sys), "%s%s %.0f%%", k ? ", " : "", name,
				100.0 * (double)a->sys[k].samples / n);
		if (sub && apx_rtable_row(sub) == 0) {
			apx_rtable_str(d, sub, 0, name);
			apx_rtable_u64(sub, 1, (uint64_t)a->sys[k].nr);
			apx_rtable_u64(sub, 2, a->sys[k].samples);
		}
	}
	apx_rtable_kstr(d, t, "syscalls", sys);	/* CSV, HTML and text; JSON: the rows */
	if (json)
		apx_rtable_sub(t, T_SYS, sub);
}

void apx_rdoc_view_threads(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_THREADS;
	struct apx_rtable *t = apx_rdoc_view_table(d, s, "threads", APX_VIEW_DATA | APX_VIEW_JSON);
	struct apx_rtable *x = apx_rdoc_view_table(d, s, "text:threads", APX_VIEW_TEXT);
	size_t shown = 0;

	if (t)
		t->title = "Threads (from samples)";
	APX_RTABLE_SET_VCOLS(t, thread_cols);
	APX_RTABLE_SET_VCOLS(x, thread_text_cols);
	for (size_t i = 0; i < m->threads.n && shown < d->top; i++, shown++) {
		const struct apx_an_thread *a = APX_VEC_AT(&m->threads, struct apx_an_thread, i);

		if (apx_rtable_row(t) < 0 || apx_rtable_row(x) < 0)
			break;
		thread_cells(d, t, a, 1);
		thread_cells(d, x, a, 0);
	}
	apx_rdoc_json(d, s, "threads", t, APX_RJ_ARRAY, 0);
	if (!d->flame[1])
		d->flame[1] = apx_rflame_host(d);	/* the HTML's host flame graph */
	if (!m->threads.n) {
		apx_rdoc_line(d, s, 2, "no thread samples in this trace");
		return;
	}
	apx_rdoc_line(d, s, 2, "CPU time: between a thread's first and last sample; running and "
		      "waiting: of its samples;");
	apx_rdoc_line(d, s, 2, "ctx sw v/i: voluntary/involuntary context switches (read about "
		      "once a second)");
	apx_rdoc_blk_table(d, s, x);
	if (m->threads.n > shown)
		apx_rdoc_line(d, s, 2, "(%zu more threads; --top N shows more)", m->threads.n - shown);
	apx_rdoc_view_oswaits(d);
}
