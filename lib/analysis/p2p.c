/*
 * p2p.c - peer-to-peer copies by (source device, destination device) (p2p.h): the peer copies
 * load.c hands over while the store reads the files, then, once every file's devices are
 * known, their pairs keyed by store device (host, UUID), each pair's bandwidth (bytes over the
 * summed copy time, and the median of its copies of 1 MiB or more) and the link between the two
 * devices with its peak: NVLink (the fewer active links of the two x the link's speed for the
 * architecture), else PCIe (generation x width as recorded, or the one every GPU of that
 * architecture has, as the transfers' host link), else unknown. Also the link facts the ranks'
 * link shares (ranks.c). Called by load.c and apx_model_finish() (finish.c); single-threaded,
 * logs nothing.
 */
#include "analysis/p2p.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model.h"
#include "analysis/store.h"

#include "base/banned.h"

int apx_p2p_add_record(struct apx_model *m, uint16_t file, const struct apx_rec *r)
{
	const uint64_t *v = r->v;
	const uint64_t named = 1ull << APX_MEMCPY_SRC_DEVICE | 1ull << APX_MEMCPY_DST_DEVICE;
	const uint64_t src = v[APX_MEMCPY_SRC_DEVICE], dst = v[APX_MEMCPY_DST_DEVICE];
	const uint64_t kind = v[APX_MEMCPY_COPY_KIND];
	int two = (r->present & named) == named && src != dst;
	struct apx_an_p2p_copy c;

	if (kind != APX_COPY_P2P && !(kind == APX_COPY_D2D && two))
		return 0;
	if (!two) {
		m->p2p_unnamed++;
		return 0;
	}
	c.bytes = v[APX_MEMCPY_BYTES];
	c.dur_ns = v[APX_MEMCPY_END_NS] > v[APX_MEMCPY_START_NS]
			   ? v[APX_MEMCPY_END_NS] - v[APX_MEMCPY_START_NS] : 0;
	c.src = src > UINT32_MAX ? UINT32_MAX : (uint32_t)src;
	c.dst = dst > UINT32_MAX ? UINT32_MAX : (uint32_t)dst;
	c.file = file;
	return apx_vec_push(&m->p2p_copies, &c);
}

/* ---- link facts ---------------------------------------------------------------------------- */

int apx_device_nvlinks(const struct apx_model *m, uint32_t es)
{
	static const char key[] = "nvml.nvlink_links";
	const struct apx_an_device *d = apx_model_device_es(m, es);

	if (d && d->nvlinks)
		return (int)d->nvlinks;
	for (size_t i = 0; i < m->series.n; i++) {
		const struct apx_an_series *x = APX_VEC_AT(&m->series, struct apx_an_series, i);

		if (x->count && x->name_len == sizeof(key) - 1 &&
		    !memcmp(x->name, key, sizeof(key) - 1) &&
		    apx_store_device_of(m->store, x->file, x->device) == es)
			return x->max > 64 ? 64 : x->max < 0 ? 0 : (int)x->max;
	}
	return -1;
}

/* V100, A100, H100/H200 25 GB/s a link and direction, B200 50. */
double apx_nvlink_gbps(uint32_t cc_major, uint32_t cc_minor)
{
	if (cc_minor)
		return 0;			/* consumer parts: bridges of their own */
	return cc_major == 7 || cc_major == 8 || cc_major == 9 ? 25 : cc_major == 10 ? 50 : 0;
}

/* Gen 1-6: 2.5 to 64 GT/s, encoding taken off. */
double apx_pcie_lane_gbps(uint32_t gen)
{
	static const double rate[] = { 0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563 };

	return gen < sizeof(rate) / sizeof(rate[0]) ? rate[gen] : 0;
}

/* ---- pairs ----------------------------------------------------------------------------------- */

/* A device for people in the link's reason: "device 1" (the pair's ordinal). */
static void dev_word(char *buf, size_t cap, uint32_t ord)
{
	snprintf(buf, cap, "device %u", ord);
}

/* PCIe's peak a direction of one device: its recorded generation x width, else the generation
 * every GPU of its architecture has (x16; *ret_guess 1); 0 when neither is known. */
static double pcie_peak(const struct apx_an_device *d, unsigned *ret_gen, unsigned *ret_width,
			int *ret_guess)
{
	unsigned gen = d ? d->pcie_gen : 0, width = d ? d->pcie_width : 0;

	*ret_guess = 0;
	if (d && (!gen || !width)) {
		gen = d->cc_major >= 9 ? 5 : d->cc_major == 8 ? 4 : d->cc_major ? 3 : 0;
		width = 16;
		*ret_guess = 1;
	}
	*ret_gen = gen;
	*ret_width = width;
	return apx_pcie_lane_gbps(gen) * width * 1e9;
}

/* The link between the pair's devices and its peak (p2p.h). */
static void link_of(const struct apx_model *m, struct apx_p2p_pair *p)
{
	const struct apx_an_device *a = p->src == UINT32_MAX ? NULL
					: apx_model_device_es(m, p->src);
	const struct apx_an_device *b = p->dst == UINT32_MAX ? NULL
					: apx_model_device_es(m, p->dst);
	char w[32];

	p->src_links = p->src == UINT32_MAX ? -1 : apx_device_nvlinks(m, p->src);
	p->dst_links = p->dst == UINT32_MAX ? -1 : apx_device_nvlinks(m, p->dst);
	if (p->src_links > 0 && p->dst_links > 0) {
		double ga = a ? apx_nvlink_gbps(a->cc_major, a->cc_minor) : 0;
		double gb = b ? apx_nvlink_gbps(b->cc_major, b->cc_minor) : 0;
		const struct apx_an_device *slow = ga <= gb ? a : b;
		int links = p->src_links < p->dst_links ? p->src_links : p->dst_links;

		p->link = "NVLink";
		if (!ga || !gb) {
			snprintf(p->why, sizeof(p->why), "NVLink (%d links), no NVLink speed known "
				 "for sm_%u%u", links, slow ? slow->cc_major % 100 : 0,
				 slow ? slow->cc_minor % 100 : 0);
			return;
		}
		p->peak_bps = (ga < gb ? ga : gb) * 1e9 * links;
		snprintf(p->why, sizeof(p->why), "NVLink: %d links x %.0f GB/s a direction "
			 "(sm_%u%u)", links, ga < gb ? ga : gb, slow->cc_major % 100,
			 slow->cc_minor % 100);
		return;
	}
	if (p->src_links == 0 || p->dst_links == 0) {
		unsigned ga_gen, ga_w, gb_gen, gb_w;
		int guess_a, guess_b;
		double pa = pcie_peak(a, &ga_gen, &ga_w, &guess_a);
		double pb = pcie_peak(b, &gb_gen, &gb_w, &guess_b);
		int use_b = pb > 0 && (!(pa > 0) || pb < pa);

		dev_word(w, sizeof(w), p->src_links == 0 ? p->src_ord : p->dst_ord);
		p->link = "PCIe";
		p->peak_bps = use_b ? pb : pa;
		if (!(p->peak_bps > 0))
			snprintf(p->why, sizeof(p->why), "PCIe (no NVLink on %s); its generation "
				 "and width not recorded", w);
		else
			snprintf(p->why, sizeof(p->why), "PCIe gen %u x%u: %.1f GB/s a direction "
				 "(no NVLink on %s)%s", use_b ? gb_gen : ga_gen,
				 use_b ? gb_w : ga_w, p->peak_bps / 1e9, w,
				 (use_b ? guess_b : guess_a)
				 ? "; generation not recorded: the one its GPUs have" : "");
		return;
	}
	if (p->src_links < 0 && p->dst_links < 0)
		snprintf(w, sizeof(w), "devices %u and %u", p->src_ord, p->dst_ord);
	else
		dev_word(w, sizeof(w), p->src_links < 0 ? p->src_ord : p->dst_ord);
	p->link = NULL;
	snprintf(p->why, sizeof(p->why), "no NVLink count recorded for %s (DEVICE record or NVML)",
		 w);
}

struct large {
	uint32_t pair;
	double bps;
};

static int large_cmp(const void *a, const void *b)
{
	const struct large *x = a, *y = b;

	if (x->pair != y->pair)
		return x->pair < y->pair ? -1 : 1;
	return x->bps < y->bps ? -1 : x->bps > y->bps;
}

/* The pair of a copy's devices, made when new: store devices, or for a device the file holds
 * no DEVICE record of, (the file's host, the ordinal). UINT32_MAX on no memory. */
static uint32_t pair_of(struct apx_model *m, const struct apx_an_p2p_copy *c, uint32_t *hint)
{
	const struct apx_store *st = m->store;
	uint32_t s = apx_store_device_of(st, c->file, c->src);
	uint32_t d = apx_store_device_of(st, c->file, c->dst);
	uint32_t host = c->file < st->nfiles ? st->files[c->file].host : 0;
	struct apx_p2p_pair p;

	for (size_t k = 0; k < m->p2p.n; k++) {
		size_t i = (*hint + k) % m->p2p.n;
		const struct apx_p2p_pair *q = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, i);

		if (q->src == s && q->dst == d &&
		    (s != UINT32_MAX || (q->src_host == host && q->src_ord == c->src)) &&
		    (d != UINT32_MAX || (q->dst_host == host && q->dst_ord == c->dst))) {
			*hint = (uint32_t)i;
			return (uint32_t)i;
		}
	}
	memset(&p, 0, sizeof(p));
	p.src = s;
	p.dst = d;
	p.src_host = s == UINT32_MAX ? host : st->devices[s].host;
	p.dst_host = d == UINT32_MAX ? host : st->devices[d].host;
	p.src_ord = s == UINT32_MAX ? c->src : st->devices[s].ordinal;
	p.dst_ord = d == UINT32_MAX ? c->dst : st->devices[d].ordinal;
	p.file = c->file;
	if (apx_vec_push(&m->p2p, &p) < 0)
		return UINT32_MAX;
	*hint = (uint32_t)(m->p2p.n - 1);
	return *hint;
}

int apx_p2p_build(struct apx_model *m)
{
	struct large *lg = NULL;
	size_t nl = 0;
	uint32_t hint = 0;
	int r = 0;

	if (!m->p2p_copies.n)
		return 0;
	m->p2p.size = sizeof(struct apx_p2p_pair);
	lg = calloc(m->p2p_copies.n, sizeof(*lg));
	if (!lg)
		return -ENOMEM;
	for (size_t i = 0; i < m->p2p_copies.n; i++) {
		const struct apx_an_p2p_copy *c =
			APX_VEC_AT(&m->p2p_copies, struct apx_an_p2p_copy, i);
		uint32_t pi = pair_of(m, c, &hint);
		struct apx_p2p_pair *p;

		if (pi == UINT32_MAX) {
			r = -ENOMEM;
			goto out;
		}
		p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, pi);
		p->copies++;
		p->bytes += c->bytes;
		p->ns += c->dur_ns;
		if (c->file < 8 * sizeof(p->files_seen) &&
		    !(p->files_seen[c->file / 8] & 1u << (c->file % 8))) {
			p->files_seen[c->file / 8] |= (uint8_t)(1u << (c->file % 8));
			p->nfiles++;
		}
		if (c->bytes >= APX_P2P_LARGE_BYTES && c->dur_ns) {
			p->large++;
			lg[nl++] = (struct large){ pi, (double)c->bytes * 1e9 / (double)c->dur_ns };
		}
	}
	qsort(lg, nl, sizeof(*lg), large_cmp);
	for (size_t i = 0; i < nl;) {
		size_t j = i;

		while (j < nl && lg[j].pair == lg[i].pair)
			j++;
		APX_VEC_AT(&m->p2p, struct apx_p2p_pair, lg[i].pair)->large_median_bps =
			(j - i) % 2 ? lg[i + (j - i) / 2].bps
				    : (lg[i + (j - i) / 2 - 1].bps + lg[i + (j - i) / 2].bps) / 2;
		i = j;
	}
	for (size_t i = 0; i < m->p2p.n; i++) {
		struct apx_p2p_pair *p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, i);

		p->bw_bps = p->ns ? (double)p->bytes * 1e9 / (double)p->ns : 0;
		link_of(m, p);
	}
out:
	free(lg);
	return r;
}
