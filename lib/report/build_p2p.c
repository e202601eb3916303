/*
 * build_p2p.c - the transfers section's peer-to-peer copies (analysis/p2p.h, m->p2p): one row
 * per (source device, destination device) pair, every process's copies: copies, bytes, time,
 * achieved bandwidth (bytes / summed copy time) and the median of the copies of 1 MiB or more,
 * the link between the two GPUs (NVLink, PCIe, unknown), its peak and the share of it achieved.
 * The table "p2p" (CSV, HTML), the JSON member "p2p_copies" after "transfers"
 * (docs/report-schema.md) and the text table under the transfers. Only for traces with peer
 * copies: nothing at all otherwise. Called by apx_rdoc_build_views() (build_view.c) after the
 * transfers' view.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/p2p.h"
#include "analysis/store.h"
#include "report/build.h"

#include "base/banned.h"

static const struct apx_rvcol p2p_cols[] = {
	{ .key = "src_host", .title = "source host", .unit = APX_UNIT_TEXT },
	{ .key = "src_device", .title = "source device", .unit = APX_UNIT_ID },
	{ .key = "src_uuid", .title = "source UUID", .unit = APX_UNIT_TEXT },
	{ .key = "dst_host", .title = "destination host", .unit = APX_UNIT_TEXT },
	{ .key = "dst_device", .title = "destination device", .unit = APX_UNIT_ID },
	{ .key = "dst_uuid", .title = "destination UUID", .unit = APX_UNIT_TEXT },
	{ .key = "processes", .title = "processes", .unit = APX_UNIT_COUNT },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS },
	{ .key = "bw_bps", .title = "bandwidth", .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "large_copies", .title = "copies >= 1 MiB", .unit = APX_UNIT_COUNT },
	{ .key = "large_median_bw_bps", .title = "median bandwidth (>= 1 MiB)",
	  .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "link", .title = "link", .unit = APX_UNIT_TEXT },
	{ .key = "src_nvlinks", .title = "source NVLinks", .unit = APX_UNIT_COUNT },
	{ .key = "dst_nvlinks", .title = "destination NVLinks", .unit = APX_UNIT_COUNT },
	{ .key = "link_peak_bps", .title = "link peak a direction", .unit = APX_UNIT_BYTES_PER_S },
	{ .key = "link_peak_pct", .title = "of the link's peak", .unit = APX_UNIT_PCT },
	{ .key = "link_why", .title = "how the link is known", .unit = APX_UNIT_TEXT },
};
/* 2 + 9 + 10 + 7 + 10 + 10 + 12 + 12 + 9 + 12 + 7 = 100 columns */
static const struct apx_rvcol p2p_text_cols[] = {
	{ .key = "from", .title = "from", .unit = APX_UNIT_TEXT, .h = { .tw = -9, .tmax = 9 } },
	{ .key = "to", .title = "to", .unit = APX_UNIT_TEXT, .h = { .tw = -9, .tmax = 9 } },
	{ .key = "copies", .title = "copies", .unit = APX_UNIT_COUNT, .h = { .tw = 6 } },
	{ .key = "bytes", .title = "bytes", .unit = APX_UNIT_BYTES, .h = { .tw = 9 } },
	{ .key = "time_ns", .title = "time", .unit = APX_UNIT_NS, .h = { .tw = 9 } },
	{ .key = "bw_bps", .title = "bandwidth", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 11 } },
	{ .key = "large_median_bw_bps", .title = "med >=1MiB", .unit = APX_UNIT_BYTES_PER_S,
	  .h = { .tw = 11 } },
	{ .key = "link", .title = "link", .unit = APX_UNIT_TEXT,
	  .h = { .tw = -7, .tmax = 7, .tgap = 1, .tna = "unknown" } },
	{ .key = "link_peak_bps", .title = "peak", .unit = APX_UNIT_BYTES_PER_S,
	  .h = { .tw = 11 } },
	{ .key = "link_peak_pct", .title = "%peak", .unit = APX_UNIT_PCT,
	  .h = { .tw = 6, .tfix = 2 } },
};

/* A device for the text: "0", or "host:0" when the pairs span several hosts (the host cut to
 * fit the column's 9 bytes). */
static void dev_label(char *buf, size_t cap, const struct apx_store *st, uint32_t host,
		      uint32_t ord, int hosts)
{
	struct apx_es_text none = { "", 0 };
	struct apx_es_text h = host < st->nhosts ? st->hosts[host].name : none;
	char o[16];
	int room;

	snprintf(o, sizeof(o), "%u", ord);
	room = 9 - 1 - (int)strlen(o);
	if (!hosts || room < 1)
		snprintf(buf, cap, "%s", o);
	else
		snprintf(buf, cap, "%.*s:%s", (int)h.len < room ? (int)h.len : room, h.p, o);
}

static void uuid_cell(struct apx_rdoc *d, struct apx_rtable *t, const char *key,
		      const struct apx_store *st, uint32_t dev)
{
	char uuid[33];

	if (dev == UINT32_MAX || dev >= st->ndevices || !st->devices[dev].has_uuid)
		return;
	for (int b = 0; b < 16; b++)
		snprintf(uuid + 2 * b, 3, "%02x", st->devices[dev].uuid[b]);
	apx_rtable_kstr(d, t, key, uuid);
}

static void pair_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_p2p_pair *p,
		       int hosts)
{
	const struct apx_store *st = d->m->store;
	struct apx_es_text none = { "", 0 };
	struct apx_es_text sh = p->src_host < st->nhosts ? st->hosts[p->src_host].name : none;
	struct apx_es_text dh = p->dst_host < st->nhosts ? st->hosts[p->dst_host].name : none;
	char b[32];

	apx_rtable_ktext(d, t, "src_host", sh.p, sh.len);
	apx_rtable_ku64(t, "src_device", p->src_ord);
	uuid_cell(d, t, "src_uuid", st, p->src);
	apx_rtable_ktext(d, t, "dst_host", dh.p, dh.len);
	apx_rtable_ku64(t, "dst_device", p->dst_ord);
	uuid_cell(d, t, "dst_uuid", st, p->dst);
	dev_label(b, sizeof(b), st, p->src_host, p->src_ord, hosts);
	apx_rtable_kstr(d, t, "from", b);
	dev_label(b, sizeof(b), st, p->dst_host, p->dst_ord, hosts);
	apx_rtable_kstr(d, t, "to", b);
	apx_rtable_ku64(t, "processes", p->nfiles);
	apx_rtable_ku64(t, "copies", p->copies);
	apx_rtable_ku64(t, "bytes", p->bytes);
	apx_rtable_ku64(t, "time_ns", p->ns);
	if (p->bw_bps > 0)
		apx_rtable_knum(t, "bw_bps", p->bw_bps);
	apx_rtable_ku64(t, "large_copies", p->large);
	if (p->large_median_bps > 0)
		apx_rtable_knum(t, "large_median_bw_bps", p->large_median_bps);
	if (p->link)
		apx_rtable_kstr(d, t, "link", p->link);
	if (p->src_links >= 0)
		apx_rtable_ku64(t, "src_nvlinks", (uint64_t)p->src_links);
	if (p->dst_links >= 0)
		apx_rtable_ku64(t, "dst_nvlinks", (uint64_t)p->dst_links);
	if (p->peak_bps > 0) {
		apx_rtable_knum(t, "link_peak_bps", p->peak_bps);
		if (p->bw_bps > 0)
			apx_rtable_knum(t, "link_peak_pct", 100.0 * p->bw_bps / p->peak_bps);
	}
	apx_rtable_kstr(d, t, "link_why", p->why);
}

void apx_rdoc_view_p2p(struct apx_rdoc *d)
{
	const struct apx_model *m = d->m;
	const unsigned s = APX_SEC_TRANSFERS;
	struct apx_rtable *t, *j, *x;
	int hosts = 0;
	char line[256], from[32], to[32];

	if (!m->p2p.n)
		return;
	for (size_t i = 0; i < m->p2p.n && !hosts; i++) {
		const struct apx_p2p_pair *p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, i);
		const struct apx_p2p_pair *q = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 0);

		hosts = p->src_host != q->src_host || p->dst_host != q->src_host;
	}
	t = apx_rdoc_table(d, s, "p2p", "Peer-to-peer copies");
	j = apx_rdoc_view_table(d, s, "json:p2p_copies", APX_VIEW_JSON);
	x = apx_rdoc_view_table(d, s, "text:p2p", APX_VIEW_TEXT);
	APX_RTABLE_SET_VCOLS(t, p2p_cols);
	APX_RTABLE_SET_VCOLS(j, p2p_cols);
	APX_RTABLE_SET_VCOLS(x, p2p_text_cols);
	for (size_t i = 0; i < m->p2p.n; i++) {	/* in the order first met */
		const struct apx_p2p_pair *p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, i);

		if (t && apx_rtable_row(t) == 0)
			pair_cells(d, t, p, hosts);
		if (j && apx_rtable_row(j) == 0)
			pair_cells(d, j, p, hosts);
		if (x && i < d->top && apx_rtable_row(x) == 0)
			pair_cells(d, x, p, hosts);
	}
	apx_rdoc_json(d, s, "p2p_copies", j, APX_RJ_ARRAY, 0);

	apx_rdoc_line(d, s, 0, "%s", "");
	apx_rdoc_line(d, s, 2, "peer-to-peer copies (GPU to GPU) by device%s: bandwidth = bytes / "
		      "their summed time", hosts ? " (host:id)" : "");
	apx_rdoc_blk_table(d, s, x);
	if (m->p2p.n > d->top)
		apx_rdoc_line(d, s, 2, "(%zu more pairs in the JSON, CSV and HTML reports)",
			      m->p2p.n - d->top);
	for (size_t i = 0; i < m->p2p.n && i < d->top; i++) {
		const struct apx_p2p_pair *p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, i);

		dev_label(from, sizeof(from), m->store, p->src_host, p->src_ord, hosts);
		dev_label(to, sizeof(to), m->store, p->dst_host, p->dst_ord, hosts);
		snprintf(line, sizeof(line), "%s -> %s: %s%s", from, to,
			 p->link ? "" : "link unknown: ", p->why);
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_WRAP, .indent = 2,
						      .text = line, .windent = 4 });
	}
	if (m->p2p_unnamed)
		apx_rdoc_line(d, s, 2, "%" PRIu64 " more P2P copies whose records name one device "
			      "only (left out)", m->p2p_unnamed);
}
