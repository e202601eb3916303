/*
 * build_nic.c - the metrics section's "nic" table: the host's NIC counters sampled by
 * `apx analyze --nic-metrics` (METRIC series nic.DEV.COUNTER and ib.DEV.PORT.COUNTER of
 * cumulative values, lib/collector/nic_sysfs.h), per host and device: receive and transmit
 * bytes per second (mean over the sampled span, max over one interval between two
 * samples), mean packet sizes (bytes over packets), and for InfiniBand / RoCE ports send
 * wait and congestion notification packets per second. A counter that went down (reset or
 * wrap) skips that interval. Says when a host has no RDMA NIC. Called by
 * apx_rdoc_build_metrics() (build_metrics.c); only with such series, so other reports do not
 * change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store.h"
#include "report/build.h"

#include "base/banned.h"

#define NIC_GROUPS 128

enum { C_RXB, C_TXB, C_RXP, C_TXP, C_WAIT, C_CNP_SENT, C_CNP_HANDLED, C__COUNT };

static const struct { const char *net, *ib; } counter_names[C__COUNT] = {
	[C_RXB] = { "rx_bytes", "port_rcv_data" },
	[C_TXB] = { "tx_bytes", "port_xmit_data" },
	[C_RXP] = { "rx_packets", "port_rcv_packets" },
	[C_TXP] = { "tx_packets", "port_xmit_packets" },
	[C_WAIT] = { NULL, "port_xmit_wait" },
	[C_CNP_SENT] = { NULL, "np_cnp_sent" },
	[C_CNP_HANDLED] = { NULL, "rp_cnp_handled" },
};

struct sstat {				/* one series over the store's samples */
	uint64_t first_ts, last_ts, n;
	double first_v, last_v, prev_v, up;	/* up: the sum of increases */
	uint64_t prev_ts;
	double max_rate;
};

struct group {
	uint32_t host;
	int ib;
	struct apx_es_text dev;		/* "eth0", or "mlx5_0.1" (device.port) */
	int32_t series[C__COUNT];	/* -1 none */
};

static const struct apx_rcol nic_cols[] = {
	{ "host", "host", APX_UNIT_TEXT },
	{ "device", "device", APX_UNIT_TEXT },
	{ "kind", "kind", APX_UNIT_TEXT },
	{ "samples", "samples", APX_UNIT_COUNT },
	{ "span_ns", "sampled", APX_UNIT_NS },
	{ "rx_bytes_per_s", "rx mean", APX_UNIT_BYTES_PER_S },
	{ "rx_bytes_per_s_max", "rx max", APX_UNIT_BYTES_PER_S },
	{ "tx_bytes_per_s", "tx mean", APX_UNIT_BYTES_PER_S },
	{ "tx_bytes_per_s_max", "tx max", APX_UNIT_BYTES_PER_S },
	{ "rx_packet_bytes", "rx packet", APX_UNIT_BYTES },
	{ "tx_packet_bytes", "tx packet", APX_UNIT_BYTES },
	{ "xmit_wait_per_s", "send wait/s", APX_UNIT_RATIO },
	{ "cnp_sent_per_s", "CNP sent/s", APX_UNIT_RATIO },
	{ "cnp_handled_per_s", "CNP handled/s", APX_UNIT_RATIO },
};

/* Split "nic.DEV.CTR" / "ib.DEV.PORT.CTR": the device part and the counter; -1 if not one. */
static int split(struct apx_es_text name, int *ib, struct apx_es_text *dev, struct apx_es_text *ctr)
{
	size_t pre = name.len > 3 && !memcmp(name.p, "ib.", 3) ? 3 : 4, dot = name.len;

	*ib = pre == 3;
	while (dot > pre && name.p[dot - 1] != '.')
		dot--;
	if (dot <= pre + 1 || dot >= name.len)
		return -1;
	*dev = (struct apx_es_text){ name.p + pre, (uint32_t)(dot - 1 - pre) };
	*ctr = (struct apx_es_text){ name.p + dot, (uint32_t)(name.len - dot) };
	return 0;
}

static int text_is(struct apx_es_text t, const char *s)
{
	return s && t.len == strlen(s) && !memcmp(t.p, s, t.len);
}

static double mean_rate(const struct sstat *s)
{
	return s->last_ts > s->first_ts ? s->up / ((double)(s->last_ts - s->first_ts) / 1e9) : 0;
}

static void row(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_store *st,
		const struct group *g, const struct sstat *ss)
{
	const struct sstat *s[C__COUNT] = { 0 };
	const struct sstat *any = NULL;
	char dev[200];

	for (int c = 0; c < C__COUNT; c++)
		if (g->series[c] >= 0 && ss[g->series[c]].n) {
			s[c] = &ss[g->series[c]];
			if (!any || s[c]->n > any->n)
				any = s[c];
		}
	if (!any || apx_rtable_row(t) < 0)
		return;
	if (g->host < st->nhosts)
		apx_rtable_text(d, t, 0, st->hosts[g->host].name.p, st->hosts[g->host].name.len);
	if (g->ib) {	/* "mlx5_0.1" -> "mlx5_0 port 1" */
		size_t dot = g->dev.len;

		while (dot > 0 && g->dev.p[dot - 1] != '.')
			dot--;
		snprintf(dev, sizeof(dev), "%.*s port %.*s", (int)(dot ? dot - 1 : g->dev.len),
			 g->dev.p, (int)(g->dev.len - dot), g->dev.p + dot);
		apx_rtable_str(d, t, 1, dev);
	} else {
		apx_rtable_text(d, t, 1, g->dev.p, g->dev.len);
	}
	apx_rtable_str(d, t, 2, g->ib ? "rdma" : "net");
	apx_rtable_u64(t, 3, any->n);
	apx_rtable_u64(t, 4, any->last_ts - any->first_ts);
	if (s[C_RXB]) {
		apx_rtable_num(t, 5, mean_rate(s[C_RXB]));
		apx_rtable_num(t, 6, s[C_RXB]->max_rate);
	}
	if (s[C_TXB]) {
		apx_rtable_num(t, 7, mean_rate(s[C_TXB]));
		apx_rtable_num(t, 8, s[C_TXB]->max_rate);
	}
	if (s[C_RXB] && s[C_RXP] && s[C_RXP]->up > 0)
		apx_rtable_num(t, 9, s[C_RXB]->up / s[C_RXP]->up);
	if (s[C_TXB] && s[C_TXP] && s[C_TXP]->up > 0)
		apx_rtable_num(t, 10, s[C_TXB]->up / s[C_TXP]->up);
	for (int c = C_WAIT; c <= C_CNP_HANDLED; c++)
		if (s[c])
			apx_rtable_num(t, (unsigned)(11 + c - C_WAIT), mean_rate(s[c]));
}

void apx_rdoc_build_nic(struct apx_rdoc *d)
{
	const struct apx_store *st = d->m ? d->m->store : NULL;
	struct group *g;
	struct sstat *ss;
	struct apx_rtable *t;
	size_t ng = 0, nib = 0;

	uint32_t first = 0;

	if (!st)
		return;
	while (first < st->nseries && (st->series[first].is_memory ||
				       !apx_es_is_nic(st->series[first].name)))
		first++;
	if (first == st->nseries)
		return;		/* no --nic-metrics: the report does not change */
	g = calloc(NIC_GROUPS, sizeof(*g));
	ss = calloc(st->nseries, sizeof(*ss));
	if (!g || !ss)
		goto out;
	for (uint32_t i = 0; i < st->nseries; i++) {	/* series -> (host, device) groups */
		const struct apx_es_series *se = &st->series[i];
		struct apx_es_text dev, ctr;
		uint32_t host = se->file < st->nfiles ? st->files[se->file].host : 0;
		int ib, c;
		size_t k;

		if (se->is_memory || !apx_es_is_nic(se->name) || split(se->name, &ib, &dev, &ctr))
			continue;
		for (c = 0; c < C__COUNT; c++)
			if (text_is(ctr, ib ? counter_names[c].ib : counter_names[c].net))
				break;
		if (c == C__COUNT)
			continue;
		for (k = 0; k < ng; k++)
			if (g[k].host == host && g[k].ib == ib && g[k].dev.len == dev.len &&
			    !memcmp(g[k].dev.p, dev.p, dev.len))
				break;
		if (k == ng) {
			if (ng == NIC_GROUPS)
				continue;
			g[ng] = (struct group){ .host = host, .ib = ib, .dev = dev };
			for (int j = 0; j < C__COUNT; j++)
				g[ng].series[j] = -1;
			nib += ib;
			ng++;
		}
		if (g[k].series[c] < 0)	/* a second process of the host: its first one's */
			g[k].series[c] = (int32_t)i;
	}
	if (!ng)
		goto out;	/* line rates only (nic.DEV.line_rate): no counter to show */
	for (size_t i = 0; i < st->ct.n; i++) {	/* in time order per series */
		struct sstat *s = &ss[st->ct.series[i]];
		double v = st->ct.value[i];
		uint64_t ts = st->ct.ts[i];

		if (!s->n) {
			s->first_ts = ts;
			s->first_v = v;
		} else if (v >= s->prev_v && ts > s->prev_ts) {
			double r = (v - s->prev_v) / ((double)(ts - s->prev_ts) / 1e9);

			s->up += v - s->prev_v;
			if (r > s->max_rate)
				s->max_rate = r;
		}
		s->prev_v = v;
		s->prev_ts = ts;
		s->last_ts = ts;
		s->last_v = v;
		s->n++;
	}
	t = apx_rdoc_table(d, APX_SEC_METRICS, "nic", "NIC counters (apx analyze --nic-metrics)");
	APX_RTABLE_SET_COLS(t, nic_cols);
	if (!t)
		goto out;
	for (int ib = 1; ib >= 0; ib--)	/* RDMA ports first */
		for (size_t k = 0; k < ng; k++)
			if (g[k].ib == ib)
				row(d, t, st, &g[k], ss);
	if (!nib)
		apx_rdoc_note(d, APX_SEC_METRICS, "no RDMA NIC on this host: Ethernet devices "
			      "shown (NIC rates are means over the sampled span; max over one "
			      "sampling interval)");
	else
		apx_rdoc_note(d, APX_SEC_METRICS, "NIC rates are means over the sampled span; max "
			      "over one sampling interval; InfiniBand data counters count 4-byte "
			      "words, shown as bytes");
out:
	free(g);
	free(ss);
}

/* The metrics section's "nic" table, or NULL when the traces have no NIC series. */
const struct apx_rtable *apx_rdoc_nic_table(const struct apx_rdoc *d)
{
	const struct apx_rsection *s = &d->sec[APX_SEC_METRICS];

	for (unsigned i = 0; i < s->ntables; i++)
		if (s->t[i] && s->t[i]->key && !strcmp(s->t[i]->key, "nic"))
			return s->t[i];
	return NULL;
}

/* JSON member "nic" of the metrics section: the table above, a row an object (view builders,
 * build_view_gpu.c, after kernel_counters); absent without NIC series. */
void apx_rdoc_nic_json(struct apx_rdoc *d)
{
	const struct apx_rtable *t = apx_rdoc_nic_table(d);

	if (t)
		apx_rdoc_json(d, APX_SEC_METRICS, "nic", t, APX_RJ_ARRAY, 0);
}

/* The text view's columns: the data table's (by index) that fit 100 columns; the IB ones only
 * when a device is RDMA. */
static const struct { unsigned col; struct apx_rvcol c; } text_cols[] = {
	{ 1, { .key = "device", .title = "device", .unit = APX_UNIT_TEXT,
	       .h = { .tw = -14, .tmax = 14 } } },
	{ 3, { .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT, .h = { .tw = 7 } } },
	{ 5, { .key = "rx", .title = "rx mean", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 11 } } },
	{ 6, { .key = "rx_max", .title = "rx max", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 11 } } },
	{ 7, { .key = "tx", .title = "tx mean", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 11 } } },
	{ 8, { .key = "tx_max", .title = "tx max", .unit = APX_UNIT_BYTES_PER_S, .h = { .tw = 11 } } },
	{ 9, { .key = "rx_pkt", .title = "rx pkt", .unit = APX_UNIT_BYTES, .h = { .tw = 8 } } },
	{ 10, { .key = "tx_pkt", .title = "tx pkt", .unit = APX_UNIT_BYTES, .h = { .tw = 8 } } },
	{ 11, { .key = "wait", .title = "wait/s", .unit = APX_UNIT_RATIO, .h = { .tw = 8 } } },
};

/* The text view: a line on RDMA NICs, then the table's main columns (build_view_gpu.c). */
void apx_rdoc_nic_text(struct apx_rdoc *d)
{
	const struct apx_rtable *t = apx_rdoc_nic_table(d);
	struct apx_rvcol cols[sizeof(text_cols) / sizeof(text_cols[0])];
	struct apx_rtable *x;
	size_t ncols = 0;
	int rdma = 0;

	if (!t)
		return;
	for (size_t r = 0; r < t->nrows; r++) {
		const struct apx_rcell *c = apx_rtable_cell(t, r, 2);

		rdma |= c && c->s && c->len == 4 && !memcmp(c->s, "rdma", 4);
	}
	for (size_t i = 0; i < sizeof(text_cols) / sizeof(text_cols[0]); i++)
		if (rdma || text_cols[i].col < 11)
			cols[ncols++] = text_cols[i].c;
	x = apx_rdoc_view_table(d, APX_SEC_METRICS, "text:nic", APX_VIEW_TEXT);
	if (x)
		apx_rtable_vcols(x, cols, ncols);
	for (size_t r = 0; x && r < t->nrows && apx_rtable_row(x) == 0; r++)
		for (size_t i = 0; i < ncols; i++) {
			const struct apx_rcell *c = apx_rtable_cell(t, r, text_cols[i].col);

			if (!c || c->na)
				continue;
			if (c->s)
				apx_rtable_text(d, x, (unsigned)i, c->s, c->len);
			else
				apx_rtable_num(x, (unsigned)i, c->v);
		}
	apx_rdoc_blk(d, APX_SEC_METRICS, &(struct apx_rblk){ .kind = APX_RB_LINE, .indent = 2,
		.text = rdma ? "NIC counters: rates are means over the sampled span, max over one "
			       "sampling interval"
			     : "NIC counters: no RDMA NIC on this host: Ethernet devices shown" });
	if (x)
		apx_rdoc_blk_table(d, APX_SEC_METRICS, x);
}
