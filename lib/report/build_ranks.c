/*
 * build_ranks.c - the report's sections of several ranks, from the ranks' analysis
 * (analysis/ranks.h, m->ranks): "ranks" (per rank GPU busy, step time, communication and its
 * exposed part, late arrivals; the devices by (host, UUID); the straggler) and "collectives"
 * (per NCCL function: calls, message sizes, time, algorithm and protocol, algbw and busbw by
 * nccl-tests' definitions against the bottleneck link's peak, the trace's time-vs-size fit).
 * Each is tables for CSV and HTML (views DATA), one JSON object ("ranks", "collectives":
 * docs/report-schema.md) and text tables. Only built for a trace with NCCL collectives: a
 * single-process report has neither section (doc.c). Called by apx_rdoc_build_views()
 * (build_view.c) for the sections asked for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/ranks.h"
#include "report/build.h"

#include "base/banned.h"

/* ---- ranks ---- */
static const struct apx_rvcol rank_cols[] = {
	{ .key = "rank", .title = "rank", .unit = APX_UNIT_ID },
	{ .key = "local_rank", .title = "local rank", .unit = APX_UNIT_ID },
	{ .key = "host", .title = "host", .unit = APX_UNIT_TEXT },
	{ .key = "pid", .title = "pid", .unit = APX_UNIT_ID },
	{ .key = "path", .title = "file", .unit = APX_UNIT_TEXT },
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "gpu_busy_ns", .title = "GPU busy", .unit = APX_UNIT_NS },
	{ .key = "gpu_busy_pct", .title = "GPU busy %", .unit = APX_UNIT_PCT },
	{ .key = "steps", .title = "steps", .unit = APX_UNIT_COUNT },
	{ .key = "step_ns", .title = "step (median)", .unit = APX_UNIT_NS },
	{ .key = "compute_ns", .title = "compute", .unit = APX_UNIT_NS },
	{ .key = "comm_ns", .title = "communication", .unit = APX_UNIT_NS },
	{ .key = "exposed_comm_ns", .title = "exposed", .unit = APX_UNIT_NS },
	{ .key = "collectives", .title = "collectives", .unit = APX_UNIT_COUNT },
	{ .key = "matched", .title = "on all ranks", .unit = APX_UNIT_COUNT },
	{ .key = "arrived_last", .title = "arrived last", .unit = APX_UNIT_COUNT },
	{ .key = "late_mean_ns", .title = "late (mean)", .unit = APX_UNIT_NS },
	{ .key = "late_max_ns", .title = "late (max)", .unit = APX_UNIT_NS },
	{ .key = "wait_ns", .title = "waited", .unit = APX_UNIT_NS },
	{ .key = "h2d_ns", .title = "host to device", .unit = APX_UNIT_NS },
	{ .key = "mem_peak_bytes", .title = "device memory peak", .unit = APX_UNIT_BYTES },
	{ .key = "mem_total_bytes", .title = "device memory", .unit = APX_UNIT_BYTES },
};
static const struct apx_rvcol rank_text_cols[] = {
	{ .key = "rank", .title = "rank", .unit = APX_UNIT_ID, .h = { .tw = 5 } },
	{ .key = "host", .title = "host", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -14, .tmax = 14, .tgap = 1 } },
	{ .key = "gpu_busy_ns", .title = "GPU busy", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "gpu_busy_pct", .title = "busy", .unit = APX_UNIT_PCT,
	  .h = { .tw = 6, .tfix = 1 } },
	{ .key = "step_ns", .title = "step", .unit = APX_UNIT_NS, .h = { .tw = 10, .tna = "n/a" } },
	{ .key = "comm_ns", .title = "comm", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "exposed_comm_ns", .title = "exposed", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "arrived_last", .title = "last", .unit = APX_UNIT_COUNT, .h = { .tw = 5 } },
	{ .key = "matched", .title = "of", .unit = APX_UNIT_COUNT, .h = { .tw = 5 } },
	{ .key = "late_mean_ns", .title = "late", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
};
static const struct apx_rvcol dev_cols[] = {
	{ .key = "host", .title = "host", .unit = APX_UNIT_TEXT, .h = { .tw = -16, .tmax = 16 } },
	{ .key = "uuid", .title = "UUID", .unit = APX_UNIT_TEXT, .h = { .tw = -32, .tgap = 1 } },
	{ .key = "files", .title = "files", .unit = APX_UNIT_COUNT, .h = { .tw = 6 } },
	{ .key = "span_ns", .title = "span", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "busy_ns", .title = "busy", .unit = APX_UNIT_NS, .h = { .tw = 10 } },
	{ .key = "busy_pct", .title = "busy %", .unit = APX_UNIT_PCT, .h = { .tw = 7, .tfix = 2 } },
};
static const struct apx_rvcol straggler_cols[] = {
	{ .key = "rank", .title = "rank", .unit = APX_UNIT_ID },
	{ .key = "arrived_last", .title = "arrived last", .unit = APX_UNIT_COUNT },
	{ .key = "matched", .title = "on all ranks", .unit = APX_UNIT_COUNT },
	{ .key = "late_mean_ns", .title = "late (mean)", .unit = APX_UNIT_NS },
	{ .key = "others_wait_ns", .title = "the others waited", .unit = APX_UNIT_NS },
	{ .key = "run_wait_ns", .title = "the run waited", .unit = APX_UNIT_NS },
	{ .key = "host_late_mean_ns", .title = "its host late (mean)", .unit = APX_UNIT_NS },
};
static const struct apx_rvcol ranks_json_cols[] = {
	{ .key = "world_size", .title = "world size", .unit = APX_UNIT_COUNT },
	{ .key = "hosts", .title = "hosts", .unit = APX_UNIT_COUNT },
	{ .key = "ranks_with_collectives", .title = "ranks with collectives",
	  .unit = APX_UNIT_COUNT },
	{ .key = "per_rank", .title = "ranks", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
	{ .key = "devices", .title = "devices", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
	{ .key = "straggler", .title = "straggler", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_OBJ },
};

static int shown(const struct apx_ranks_rank *rk)
{
	return rk->colls || rk->rank >= 0 || rk->gpu_busy_ns;
}

static void rank_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_ranks_rank *rk)
{
	if (rk->rank >= 0)
		apx_rtable_ku64(t, "rank", (uint64_t)rk->rank);
	if (rk->local_rank >= 0)
		apx_rtable_ku64(t, "local_rank", (uint64_t)rk->local_rank);
	apx_rtable_kstr(d, t, "host", rk->host);
	apx_rtable_ku64(t, "pid", rk->pid);
	apx_rtable_kstr(d, t, "path", rk->path);
	if (rk->device >= 0)
		apx_rtable_ku64(t, "device", (uint64_t)rk->device);
	apx_rtable_ku64(t, "gpu_busy_ns", rk->gpu_busy_ns);
	apx_rtable_knum(t, "gpu_busy_pct", rk->busy_pct);
	apx_rtable_ku64(t, "steps", rk->steps);
	if (rk->step_ns)
		apx_rtable_ku64(t, "step_ns", rk->step_ns);
	apx_rtable_ku64(t, "compute_ns", rk->compute_ns);
	apx_rtable_ku64(t, "comm_ns", rk->comm_ns);
	apx_rtable_ku64(t, "exposed_comm_ns", rk->exposed_ns);
	apx_rtable_ku64(t, "collectives", rk->colls);
	apx_rtable_ku64(t, "matched", rk->matched);
	apx_rtable_ku64(t, "arrived_last", rk->last);
	apx_rtable_ku64(t, "late_mean_ns", rk->matched ? rk->late_sum_ns / rk->matched : 0);
	apx_rtable_ku64(t, "late_max_ns", rk->late_max_ns);
	apx_rtable_ku64(t, "wait_ns", rk->wait_ns);
	apx_rtable_ku64(t, "h2d_ns", rk->h2d_ns);
	if (rk->mem_peak_bytes)
		apx_rtable_ku64(t, "mem_peak_bytes", rk->mem_peak_bytes);
	if (rk->mem_total_bytes)
		apx_rtable_ku64(t, "mem_total_bytes", rk->mem_total_bytes);
}

static void dev_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_ranks_device *dv)
{
	char uuid[33];

	for (int b = 0; b < 16; b++)
		snprintf(uuid + 2 * b, 3, "%02x", dv->uuid[b]);
	apx_rtable_kstr(d, t, "host", dv->host);
	if (dv->has_uuid)
		apx_rtable_kstr(d, t, "uuid", uuid);
	apx_rtable_ku64(t, "files", dv->nfiles);
	apx_rtable_ku64(t, "span_ns", dv->span_ns);
	apx_rtable_ku64(t, "busy_ns", dv->busy_ns);
	apx_rtable_knum(t, "busy_pct", dv->busy_pct);
}

static void straggler_cells(struct apx_rtable *t, const struct apx_ranks *R)
{
	const struct apx_ranks_straggler *sg = &R->straggler;
	const struct apx_ranks_rank *rk = &R->rank[sg->index];

	if (sg->rank >= 0)
		apx_rtable_ku64(t, "rank", (uint64_t)sg->rank);
	apx_rtable_ku64(t, "arrived_last", sg->last);
	apx_rtable_ku64(t, "matched", sg->matched);
	apx_rtable_ku64(t, "late_mean_ns", sg->mean_late_ns);
	apx_rtable_ku64(t, "others_wait_ns", rk->last_wait_ns);
	apx_rtable_ku64(t, "run_wait_ns", rk->last_gap_ns);
	apx_rtable_ku64(t, "host_late_mean_ns", rk->last ? rk->last_host_ns / rk->last : 0);
}

/* The rows in rank order (files without a rank last, in file order). */
static size_t rank_order(const struct apx_ranks *R, size_t *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < R->nranks; i++)
		if (shown(&R->rank[i]))
			idx[n++] = i;
	for (size_t i = 1; i < n; i++) {	/* insertion sort: ranks are few */
		size_t x = idx[i], j = i;
		int64_t rx = R->rank[x].rank < 0 ? INT64_MAX : R->rank[x].rank;

		while (j > 0 && (R->rank[idx[j - 1]].rank < 0 ? INT64_MAX
				 : R->rank[idx[j - 1]].rank) > rx) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = x;
	}
	return n;
}

void apx_rdoc_view_ranks(struct apx_rdoc *d)
{
	const struct apx_ranks *R = d->m->ranks;
	const unsigned s = APX_SEC_RANKS;
	struct apx_rtable *t, *dv, *sg, *j, *x, *xd;
	size_t idx[APX_AN_MAX_FILES], n;
	char b1[32], b2[32], intro[320];

	if (!R) {
		apx_rdoc_line(d, s, 2, "no NCCL collective in the trace: one process, or a run "
			      "traced without apx analyze's NCCL plugin");
		return;
	}
	t = apx_rdoc_table(d, s, "ranks", "Ranks");
	dv = apx_rdoc_table(d, s, "devices", "GPUs by (host, UUID)");
	sg = apx_rdoc_table(d, s, "straggler", "Straggler");
	j = apx_rdoc_view_table(d, s, "json:ranks", APX_VIEW_JSON);
	x = apx_rdoc_view_table(d, s, "text:ranks", APX_VIEW_TEXT);
	xd = apx_rdoc_view_table(d, s, "text:devices", APX_VIEW_TEXT);
	APX_RTABLE_SET_VCOLS(t, rank_cols);
	APX_RTABLE_SET_VCOLS(dv, dev_cols);
	APX_RTABLE_SET_VCOLS(sg, straggler_cols);
	APX_RTABLE_SET_VCOLS(j, ranks_json_cols);
	APX_RTABLE_SET_VCOLS(x, rank_text_cols);
	APX_RTABLE_SET_VCOLS(xd, dev_cols);
	n = rank_order(R, idx);
	for (size_t i = 0; i < n; i++) {
		if (apx_rtable_row(t) == 0)
			rank_cells(d, t, &R->rank[idx[i]]);
		if (apx_rtable_row(x) == 0)
			rank_cells(d, x, &R->rank[idx[i]]);
	}
	for (size_t i = 0; i < R->ndevs; i++) {	/* in the order of their first rank */
		if (apx_rtable_row(dv) == 0)
			dev_cells(d, dv, &R->dev[i]);
		if (apx_rtable_row(xd) == 0)
			dev_cells(d, xd, &R->dev[i]);
	}
	if (R->straggler.index >= 0 && apx_rtable_row(sg) == 0)
		straggler_cells(sg, R);
	if (j && apx_rtable_row(j) == 0) {
		apx_rtable_ku64(j, "world_size", (uint64_t)(R->world > 0 ? R->world : 0));
		apx_rtable_ku64(j, "hosts", R->hosts);
		apx_rtable_ku64(j, "ranks_with_collectives", R->participants);
		apx_rtable_sub(j, 3, t);
		apx_rtable_sub(j, 4, dv);
		if (sg && sg->nrows)
			apx_rtable_sub(j, 5, sg);
	}
	apx_rdoc_json(d, s, "ranks", j, APX_RJ_OBJECT, 0);

	snprintf(intro, sizeof(intro), "%u rank%s with collectives on %u host%s, world size %d. "
		 "A rank arrives at a collective when its GPU starts it (else when its host "
		 "enqueues it), on the wall clock; late: after the median rank.", R->participants,
		 R->participants == 1 ? "" : "s", R->hosts, R->hosts == 1 ? "" : "s", R->world);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .text = intro,
					      .windent = 2 });
	apx_rdoc_blk_table(d, s, x);
	if (R->straggler.index >= 0) {
		const struct apx_ranks_straggler *st = &R->straggler;

		snprintf(intro, sizeof(intro), "rank %d, last at %" PRIu64 " of %" PRIu64
			 " collectives, %s after the median rank on average; the others waited %s "
			 "for it (findings: straggler)", st->rank, st->last, st->matched,
			 apx_fmt_ns(b1, sizeof(b1), (double)st->mean_late_ns),
			 apx_fmt_ns(b2, sizeof(b2), (double)R->rank[st->index].last_wait_ns));
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
						      .head = "straggler: ", .text = intro,
						      .windent = 4 });
		apx_rdoc_note(d, s, "straggler: rank %d, last at %" PRIu64 " of %" PRIu64
			      " collectives, %s after the median rank on average", st->rank,
			      st->last, st->matched, apx_fmt_ns(b1, sizeof(b1),
								(double)st->mean_late_ns));
	} else {
		apx_rdoc_line(d, s, 2, "no straggler: no rank last at more than half of 3 or more "
			      "collectives, over 50 us late");
	}
	apx_rdoc_line(d, s, 2, "GPU busy per device (host, UUID; every process on it, an overlap "
		      "once):");
	apx_rdoc_blk_table(d, s, xd);
	if (R->hosts > 1)
		apx_rdoc_line(d, s, 2, "times are each file's own clock; arrivals compare through "
			      "each header's realtime offset");
}

/* ---- collectives ---- */
static const struct apx_rvcol coll_cols[] = {
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "calls", .title = "calls", .unit = APX_UNIT_COUNT },
	{ .key = "instances", .title = "collectives", .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "mean_ns", .title = "mean", .unit = APX_UNIT_NS },
	{ .key = "algo", .title = "algorithm", .unit = APX_UNIT_TEXT },
	{ .key = "proto", .title = "protocol", .unit = APX_UNIT_TEXT },
	{ .key = "algbw_bps", .title = "algbw", .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "busbw_bps", .title = "busbw", .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "busbw_peak_pct", .title = "of the link's peak", .unit = APX_UNIT_PCT },
	{ .key = "latency_ns", .title = "fit: latency", .unit = APX_UNIT_NS,
	  .h.jkey = "fit/latency_ns" },
	{ .key = "ns_per_byte", .title = "fit: ns a byte", .unit = APX_UNIT_RATIO,
	  .h = { .jkey = "fit/ns_per_byte", .jfmt = APX_JF_G15 } },
	{ .key = "fit_sizes", .title = "fit: sizes", .unit = APX_UNIT_COUNT,
	  .h.jkey = "fit/sizes" },
};
static const struct apx_rvcol coll_json_extra[] = {
	{ .key = "timed", .title = "timed calls", .unit = APX_UNIT_COUNT },
	{ .key = "instances_timed", .title = "timed collectives", .unit = APX_UNIT_COUNT },
	{ .key = "instance_time_ns", .title = "their time", .unit = APX_UNIT_NS },
	{ .key = "sizes", .title = "sizes", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
};
static const struct apx_rvcol coll_text_cols[] = {
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT, .h = { .tw = -14, .tmax = 14 } },
	{ .key = "calls", .title = "calls", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES, .h = { .tw = 9 } },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "mean_ns", .title = "mean", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "algbw_bps", .title = "algbw", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 10 } },
	{ .key = "busbw_bps", .title = "busbw", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 10 } },
	{ .key = "busbw_peak_pct", .title = "of peak", .unit = APX_UNIT_PCT,
	  .h = { .tw = 7, .tfix = 1 } },
	{ .key = "algo_proto", .title = "algo/proto", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -12, .tmax = 12 } },
};
static const struct apx_rvcol size_cols[] = {
	{ .key = "func", .title = "function", .unit = APX_UNIT_TEXT },
	{ .key = "bucket", .title = "size", .unit = APX_UNIT_TEXT },
	{ .key = "calls", .title = "calls", .unit = APX_UNIT_COUNT },
	{ .key = "busbw_bps", .title = "busbw", .unit = APX_UNIT_BYTES_PER_S },
};
static const struct apx_rvcol size_text_cols[] = {
	{ .key = "func", .title = "message sizes", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -14, .tmax = 14 } },
	{ .key = "b0", .title = "<4KiB", .unit = APX_UNIT_COUNT, .h = { .tw = 8 } },
	{ .key = "b1", .title = "4-64KiB", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "b2", .title = "64KiB-1MiB", .unit = APX_UNIT_COUNT, .h = { .tw = 11 } },
	{ .key = "b3", .title = "1-16MiB", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
	{ .key = "b4", .title = "16-256MiB", .unit = APX_UNIT_COUNT, .h = { .tw = 10 } },
	{ .key = "b5", .title = ">=256MiB", .unit = APX_UNIT_COUNT, .h = { .tw = 9 } },
};
static const struct apx_rvcol link_cols[] = {
	{ .key = "kind", .title = "link", .unit = APX_UNIT_TEXT },
	{ .key = "peak_bps", .title = "peak a direction", .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "why", .title = "how known", .unit = APX_UNIT_TEXT },
};
static const struct apx_rvcol colls_json_cols[] = {
	{ .key = "link", .title = "link", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_OBJ },
	{ .key = "functions", .title = "functions", .unit = APX_UNIT_TEXT, .h.jfmt = APX_JF_ROWS },
};

static unsigned top_of(const uint64_t *c, unsigned n)
{
	unsigned best = 0;

	for (unsigned i = 1; i < n; i++)
		if (c[i] > c[best])
			best = i;
	return best;
}

static void coll_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_ranks *R,
		       const struct apx_ranks_coll *c)
{
	const char *algo = apx_nccl_algo_name(top_of(c->algo, APX_ALGO__COUNT));
	const char *proto = apx_nccl_proto_name(top_of(c->proto, APX_PROTO__COUNT));
	char ap[48];

	apx_rtable_kstr(d, t, "func", apx_coll_func_name(c->func));
	apx_rtable_ku64(t, "calls", c->calls);
	apx_rtable_ku64(t, "instances", c->instances);
	apx_rtable_ku64(t, "bytes", c->bytes);
	if (c->timed) {
		apx_rtable_ku64(t, "time_ns", c->time_ns);
		apx_rtable_ku64(t, "mean_ns", c->time_ns / c->timed);
	}
	apx_rtable_kstr(d, t, "algo", algo);
	apx_rtable_kstr(d, t, "proto", proto);
	snprintf(ap, sizeof(ap), "%s/%s", algo, proto);
	apx_rtable_kstr(d, t, "algo_proto", ap);
	if (c->inst_ns) {
		apx_rtable_knum(t, "algbw_bps", c->algbw_bps);
		apx_rtable_knum(t, "busbw_bps", c->busbw_bps);
		if (R->link.peak_bps > 0 && c->func != APX_COLL_SEND && c->func != APX_COLL_RECV)
			apx_rtable_knum(t, "busbw_peak_pct", 100.0 * c->busbw_bps / R->link.peak_bps);
	}
	if (c->fit) {
		apx_rtable_knum(t, "latency_ns", c->latency_ns);
		apx_rtable_knum(t, "ns_per_byte", c->ns_per_byte);
		apx_rtable_ku64(t, "fit_sizes", c->fit_sizes);
	}
	apx_rtable_ku64(t, "timed", c->timed);
	apx_rtable_ku64(t, "instances_timed", c->inst_timed);
	apx_rtable_ku64(t, "instance_time_ns", c->inst_ns);
	for (unsigned b = 0; b < APX_RANKS_SIZE_BUCKETS; b++) {
		char key[4] = { 'b', (char)('0' + b), 0 };

		apx_rtable_ku64(t, key, c->size_hist[b]);
	}
}

/* One row a size bucket with calls (JSON: the function's "sizes"; CSV and HTML: the sizes
 * table). */
static void size_rows(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_ranks_coll *c)
{
	for (unsigned b = 0; t && b < APX_RANKS_SIZE_BUCKETS; b++) {
		if (!c->size_hist[b] || apx_rtable_row(t) < 0)
			continue;
		apx_rtable_kstr(d, t, "func", apx_coll_func_name(c->func));
		apx_rtable_kstr(d, t, "bucket", apx_ranks_bucket_name(b));
		apx_rtable_ku64(t, "calls", c->size_hist[b]);
		if (c->bucket_busbw_bps[b] > 0)
			apx_rtable_knum(t, "busbw_bps", c->bucket_busbw_bps[b]);
	}
}

void apx_rdoc_view_collectives(struct apx_rdoc *d)
{
	const struct apx_ranks *R = d->m->ranks;
	const unsigned s = APX_SEC_COLLECTIVES;
	struct apx_rtable *t, *sz, *lk, *jf, *j, *x, *xs;
	char b1[32], b2[64], b3[32], line[256];
	int fits = 0;

	if (!R) {
		apx_rdoc_line(d, s, 2, "no NCCL collective in the trace");
		return;
	}
	t = apx_rdoc_table(d, s, "collectives", "Collectives by function");
	sz = apx_rdoc_table(d, s, "sizes", "Message sizes");
	lk = apx_rdoc_table(d, s, "link", "The bottleneck link");
	jf = apx_rdoc_view_table(d, s, "json:functions", APX_VIEW_JSON);
	j = apx_rdoc_view_table(d, s, "json:collectives", APX_VIEW_JSON);
	x = apx_rdoc_view_table(d, s, "text:collectives", APX_VIEW_TEXT);
	xs = apx_rdoc_view_table(d, s, "text:sizes", APX_VIEW_TEXT);
	APX_RTABLE_SET_VCOLS(t, coll_cols);
	APX_RTABLE_SET_VCOLS(sz, size_cols);
	APX_RTABLE_SET_VCOLS(lk, link_cols);
	APX_RTABLE_SET_VCOLS(jf, coll_cols);
	APX_RTABLE_SET_VCOLS(jf, coll_json_extra);
	APX_RTABLE_SET_VCOLS(j, colls_json_cols);
	APX_RTABLE_SET_VCOLS(x, coll_text_cols);
	APX_RTABLE_SET_VCOLS(xs, size_text_cols);
	for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
		const struct apx_ranks_coll *c = &R->coll[f];
		struct apx_rtable *sub;

		if (!c->calls)
			continue;
		fits += c->fit;
		if (apx_rtable_row(t) == 0)
			coll_cells(d, t, R, c);
		if (apx_rtable_row(x) == 0)
			coll_cells(d, x, R, c);
		if (apx_rtable_row(xs) == 0)
			coll_cells(d, xs, R, c);
		size_rows(d, sz, c);
		if (jf && apx_rtable_row(jf) == 0) {
			coll_cells(d, jf, R, c);
			sub = apx_rdoc_sub_table(d, "sizes");
			APX_RTABLE_SET_VCOLS(sub, size_cols);
			if (sub) {
				sub->ncols = 0;	/* the function is its row's: bucket, calls, busbw */
				apx_rtable_vcols(sub, &size_cols[1], 3);
			}
			size_rows(d, sub, c);
			apx_rtable_sub(jf, (unsigned)apx_rtable_col_of(jf, "sizes"), sub);
		}
	}
	if (lk && apx_rtable_row(lk) == 0) {
		if (R->link.kind)
			apx_rtable_kstr(d, lk, "kind", R->link.kind);
		if (R->link.peak_bps > 0)
			apx_rtable_knum(lk, "peak_bps", R->link.peak_bps);
		apx_rtable_kstr(d, lk, "why", R->link.why);
	}
	if (j && apx_rtable_row(j) == 0) {
		apx_rtable_sub(j, 0, lk);
		apx_rtable_sub(j, 1, jf);
	}
	apx_rdoc_json(d, s, "collectives", j, APX_RJ_OBJECT, 0);

	apx_rdoc_line(d, s, 2, "every rank's calls; algbw = S / t and busbw = algbw x factor as "
		      "nccl-tests defines them, t of");
	apx_rdoc_line(d, s, 2, "each collective its shortest duration over its ranks (the others "
		      "include waiting for it)");
	apx_rdoc_blk_table(d, s, x);
	if (R->link.peak_bps > 0)
		snprintf(line, sizeof(line), "busbw against the link's peak, %s: %s",
			 apx_fmt_rate(b1, sizeof(b1), R->link.peak_bps, 1e9), R->link.why);
	else
		snprintf(line, sizeof(line), "busbw against the link's peak: n/a: %s", R->link.why);
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2, .text = line,
					      .windent = 4 });
	apx_rdoc_note(d, s, "%s", line);
	apx_rdoc_blk_table(d, s, xs);
	if (!fits)
		apx_rdoc_line(d, s, 2, "time against size: no fit (each function's timed sizes "
			      "do not span a factor of 2)");
	for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
		const struct apx_ranks_coll *c = &R->coll[f];

		if (!c->calls || !c->fit)
			continue;
		if (c->ns_per_byte > 0)
			snprintf(b2, sizeof(b2), " + bytes / %s",
				 apx_fmt_rate(b3, sizeof(b3), 1, c->ns_per_byte));
		else
			snprintf(b2, sizeof(b2), ", not growing with size");
		snprintf(line, sizeof(line), "time against size, %s: %s%s (the shortest collective of "
			 "each of %u sizes)", apx_coll_func_name(f),
			 apx_fmt_ns(b1, sizeof(b1), c->latency_ns), b2, c->fit_sizes);
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
						      .text = line, .windent = 4 });
	}
}
