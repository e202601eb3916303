/*
 * test-p2p.c - peer-to-peer copies by (source device, destination device) (lib/analysis/p2p.c)
 * and the transfers section's "P2P copies" table (lib/report/build_p2p.c), on synthetic traces
 * (tracegen.c): two H100s with 18 NVLinks each and 4 copies 0->1 of 64 MiB at known durations
 * (the exact bandwidth, its median, 450 GB/s and the share of it); PCIe only (NVML: no NVLink,
 * gen 4 x16); no link facts (unknown, no share); two processes that number the same two GPUs
 * the other way round (pairs by (host, UUID), not by ordinal); D2D between two devices counted,
 * a P2P record naming one device left out; a single-device trace: no table in any format. Text,
 * JSON and CSV; the text within 100 columns. ctest unit-p2p.
 */
#include <math.h>
#include <stdlib.h>

#include "apx-test.h"
#include "unit/analysed.h"
#include "unit/reported.h"
#include "unit/tracegen.h"

#include "analysis/p2p.h"
#include "report/doc.h"

#include "base/banned.h"

#define MS 1000000ull
#define MIB (1ull << 20)
#define SEC_XFER (1u << APX_SEC_TRANSFERS)

static struct apx_findings fd;	/* large: not on the stack */

static const uint8_t uuid_a[16] = { 0xaa, 1 }, uuid_b[16] = { 0xbb, 2 };

/* One process with devices 0 (uuid_a) and 1 (uuid_b): links as facts (< 0: NVML says nothing,
 * DEVICE records no count; else the NVML reading of both), PCIe gen x width in their DEVICE
 * records (0: not recorded); 4 copies 0->1 of 64 MiB in 0.5, 0.5, 1 and 1 ms. */
static struct apx_model *two_gpus(int links_nvml, unsigned links_dev, unsigned gen)
{
	struct tg t;

	if (tg_open_proc(&t, "node-a", 100, uuid_a) < 0)
		return NULL;
	tg_device(&t, 0, uuid_a, links_dev, gen, gen ? 16 : 0);
	tg_device(&t, 1, uuid_b, links_dev, gen, gen ? 16 : 0);
	if (links_nvml >= 0) {
		tg_metric(&t, 2 * MS, "nvml.nvlink_links", "", 0, 0, links_nvml);
		tg_metric(&t, 2 * MS, "nvml.nvlink_links", "", 1, 0, links_nvml);
	}
	tg_kernel(&t, 5 * MS, MS, "sm90_gemm", 7);
	tg_p2p(&t, 10 * MS, MS / 2, 0, 1, 64 * MIB);
	tg_p2p(&t, 11 * MS, MS / 2, 0, 1, 64 * MIB);
	tg_p2p(&t, 12 * MS, MS, 0, 1, 64 * MIB);
	tg_p2p(&t, 14 * MS, MS, 0, 1, 64 * MIB);
	return tg_model(&t, 1);
}

/* (a) NVLink known from the DEVICE records: 256 MiB in 3 ms, against 18 x 25 GB/s. */
APX_TEST(nvlink)
{
	struct apx_model *m = two_gpus(-1, 18, 5);
	const struct apx_p2p_pair *p;
	const double bw = 4.0 * 64 * MIB / 3e-3;
	const double med = (64.0 * MIB / 1e-3 + 64.0 * MIB / 0.5e-3) / 2;
	char *json, *text, *csv;

	APX_ASSERT(m);
	APX_ASSERT_EQ(m->p2p.n, 1);
	p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 0);
	APX_ASSERT_EQ(p->copies, 4);
	APX_ASSERT_EQ(p->bytes, 256 * MIB);
	APX_ASSERT_EQ(p->ns, 3 * MS);
	APX_ASSERT_EQ(p->nfiles, 1);
	APX_ASSERT_EQ(p->large, 4);
	APX_ASSERT(fabs(p->bw_bps - bw) < 1e-3);
	APX_ASSERT(fabs(p->large_median_bps - med) < 1e-3);
	APX_ASSERT_STREQ(p->link, "NVLink");
	APX_ASSERT(p->src_links == 18 && p->dst_links == 18);
	APX_ASSERT(p->peak_bps == 450e9);
	APX_ASSERT(strstr(p->why, "NVLink: 18 links x 25 GB/s a direction (sm_90)"));

	json = tg_report(m, &fd, SEC_XFER, 1);
	text = tg_report(m, &fd, SEC_XFER, 0);
	csv = tg_report(m, &fd, SEC_XFER, 2);
	APX_ASSERT(json && text && csv);
	/* 268435456 B / 3 ms = 89478485333.3 B/s, 19.88 % of 450 GB/s; median (67.1 + 134.2) / 2 */
	APX_ASSERT(strstr(json, "\"p2p_copies\":[{\"src_host\":\"node-a\",\"src_device\":0,"
				"\"src_uuid\":\"aa010000000000000000000000000000\",\"dst_host\":"
				"\"node-a\",\"dst_device\":1,"));
	APX_ASSERT(strstr(json, "\"processes\":1,\"copies\":4,\"bytes\":268435456,"
				"\"time_ns\":3000000,\"bw_bps\":89478485333,\"large_copies\":4,"
				"\"large_median_bw_bps\":100663296000,\"link\":\"NVLink\","
				"\"src_nvlinks\":18,\"dst_nvlinks\":18,"
				"\"link_peak_bps\":450000000000,\"link_peak_pct\":19.8841,"));
	/* the member comes right after the transfers */
	APX_ASSERT(strstr(json, "}],\"p2p_copies\":[") > strstr(json, "\"transfers\":["));
	APX_ASSERT(strstr(text, "peer-to-peer copies (GPU to GPU) by device"));
	APX_ASSERT(strstr(text, "  0         1              4  268.4 MB   3.00 ms  89.48 GB/s "
				"100.66 GB/s  NVLink  450.00 GB/s  19.9%"));
	APX_ASSERT(strstr(text, "0 -> 1: NVLink: 18 links x 25 GB/s a direction (sm_90)"));
	APX_ASSERT(tg_report_fits(text));
	APX_ASSERT(strstr(csv, "# transfers/p2p\nsrc_host,src_device,src_uuid,dst_host,"));
	APX_ASSERT(strstr(csv, ",1,4,268435456,3000000,89478485333,4,100663296000,\"NVLink\",18,18,"
			       "450000000000,19.884"));
	free(json);
	free(text);
	free(csv);
	apx_model_free(m);
	return 0;
}

/* (b) PCIe only: NVML reads no NVLink; the DEVICE records say gen 4 x16. */
APX_TEST(pcie)
{
	struct apx_model *m = two_gpus(0, 0, 4);
	const struct apx_p2p_pair *p;
	char *json, *text;

	APX_ASSERT(m && m->p2p.n == 1);
	p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 0);
	APX_ASSERT_STREQ(p->link, "PCIe");
	APX_ASSERT(p->src_links == 0 && p->dst_links == 0);
	APX_ASSERT(fabs(p->peak_bps - 1.969e9 * 16) < 1);
	APX_ASSERT(strstr(p->why, "PCIe gen 4 x16: 31.5 GB/s a direction (no NVLink on device 0)"));
	json = tg_report(m, &fd, SEC_XFER, 1);
	text = tg_report(m, &fd, SEC_XFER, 0);
	APX_ASSERT(json && text);
	/* 89.48 GB/s over a 31.5 GB/s link: the copies' own times say what they say */
	APX_ASSERT(strstr(json, "\"link\":\"PCIe\",\"src_nvlinks\":0,\"dst_nvlinks\":0,"
				"\"link_peak_bps\":31504000000,\"link_peak_pct\":284.02"));
	APX_ASSERT(strstr(text, "  PCIe     31.50 GB/s"));
	APX_ASSERT(tg_report_fits(text));
	free(json);
	free(text);
	apx_model_free(m);
	return 0;
}

/* (c) No link facts: the link is unknown, no peak, no share. */
APX_TEST(unknown_link)
{
	struct apx_model *m = two_gpus(-1, 0, 0);
	const struct apx_p2p_pair *p;
	char *json, *text;

	APX_ASSERT(m && m->p2p.n == 1);
	p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 0);
	APX_ASSERT(!p->link && p->peak_bps == 0);
	APX_ASSERT(p->src_links == -1 && p->dst_links == -1);
	APX_ASSERT(strstr(p->why, "no NVLink count recorded for devices 0 and 1"));
	json = tg_report(m, &fd, SEC_XFER, 1);
	text = tg_report(m, &fd, SEC_XFER, 0);
	APX_ASSERT(json && text);
	APX_ASSERT(strstr(json, "\"bw_bps\":89478485333,"));
	APX_ASSERT(strstr(json, "\"link\":null,\"src_nvlinks\":null,\"dst_nvlinks\":null,"
				"\"link_peak_bps\":null,\"link_peak_pct\":null,"));
	APX_ASSERT(strstr(text, "  unknown         n/a    n/a"));
	APX_ASSERT(strstr(text, "0 -> 1: link unknown: no NVLink count recorded for devices 0 "
				"and 1"));
	APX_ASSERT(tg_report_fits(text));
	free(json);
	free(text);
	apx_model_free(m);
	return 0;
}

/* Two processes of one host see the same two GPUs numbered the other way round
 * (CUDA_VISIBLE_DEVICES=0,1 and 1,0): A copies its 0->1, B its 1->0 (uuid_a -> uuid_b, A's
 * direction) and its 0->1 (uuid_b -> uuid_a). Pairs by (host, UUID): two rows, the first of
 * both processes. A D2D record naming two devices is a peer copy; a P2P one naming one device
 * is left out and counted. */
APX_TEST(two_processes)
{
	struct tg t[2];
	struct apx_model *m;
	const struct apx_p2p_pair *p;
	char *text;

	APX_ASSERT(tg_open_proc(&t[0], "node-a", 100, uuid_a) == 0);
	tg_device(&t[0], 0, uuid_a, 18, 5, 16);
	tg_device(&t[0], 1, uuid_b, 18, 5, 16);
	tg_p2p(&t[0], 10 * MS, MS, 0, 1, 64 * MIB);
	APX_ASSERT(tg_open_proc(&t[1], "node-a", 200, uuid_b) == 0);
	tg_device(&t[1], 0, uuid_b, 18, 5, 16);
	tg_device(&t[1], 1, uuid_a, 18, 5, 16);
	tg_p2p(&t[1], 10 * MS, MS, 1, 0, 64 * MIB);	/* uuid_a -> uuid_b, as A's */
	tg_p2p(&t[1], 12 * MS, 2 * MS, 0, 1, 64 * MIB);	/* uuid_b -> uuid_a */
	{
		struct apx_rec c;

		apx_rec_init(&c, APX_REC_MEMCPY);	/* D2D between two devices: a peer copy */
		c.v[APX_MEMCPY_START_NS] = 20 * MS;
		c.v[APX_MEMCPY_END_NS] = 22 * MS;
		c.v[APX_MEMCPY_COPY_KIND] = APX_COPY_D2D;
		c.v[APX_MEMCPY_BYTES] = 64 * MIB;
		c.v[APX_MEMCPY_SRC_DEVICE] = 0;
		c.v[APX_MEMCPY_DST_DEVICE] = 1;
		c.v[APX_MEMCPY_STREAM] = 7;
		apx_writer_add(t[1].w, &c);
		c.v[APX_MEMCPY_COPY_KIND] = APX_COPY_P2P;	/* names one device: left out */
		c.v[APX_MEMCPY_DST_DEVICE] = 0;
		apx_writer_add(t[1].w, &c);
		c.v[APX_MEMCPY_COPY_KIND] = APX_COPY_D2D;	/* one device: not a peer copy */
		apx_writer_add(t[1].w, &c);
	}
	m = tg_model(t, 2);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->p2p.n, 2);
	APX_ASSERT_EQ(m->p2p_unnamed, 1);
	p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 0);	/* uuid_a -> uuid_b */
	APX_ASSERT_EQ(p->src_ord, 0);
	APX_ASSERT_EQ(p->dst_ord, 1);
	APX_ASSERT_EQ(p->copies, 2);
	APX_ASSERT_EQ(p->nfiles, 2);
	APX_ASSERT_EQ(p->ns, 2 * MS);
	APX_ASSERT_STREQ(p->link, "NVLink");
	p = APX_VEC_AT(&m->p2p, struct apx_p2p_pair, 1);	/* uuid_b -> uuid_a */
	APX_ASSERT_EQ(p->src_ord, 1);
	APX_ASSERT_EQ(p->dst_ord, 0);
	APX_ASSERT_EQ(p->copies, 2);
	APX_ASSERT_EQ(p->nfiles, 1);
	APX_ASSERT_EQ(p->ns, 4 * MS);
	text = tg_report(m, &fd, SEC_XFER, 0);
	APX_ASSERT(text && tg_report_fits(text));
	APX_ASSERT(strstr(text, "1 more P2P copies whose records name one device only"));
	free(text);
	apx_model_free(m);
	return 0;
}

/* (d) One device, host<->device copies only: no pair, nothing in any format. */
APX_TEST(single_device)
{
	struct tg t;
	struct apx_model *m;
	char *json, *text, *csv;

	APX_ASSERT(tg_open(&t) == 0);
	tg_kernel(&t, 5 * MS, MS, "sm90_gemm", 7);
	tg_copy(&t, 7 * MS, MS, APX_COPY_H2D, APX_MEM_PINNED, 64 * MIB, 1, 0x1000, 7);
	tg_copy(&t, 9 * MS, MS, APX_COPY_D2D, APX_MEM_DEVICE, 64 * MIB, 1, 0, 7);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->p2p.n, 0);
	apx_rules_run(m, &fd);
	json = tg_report(m, &fd, 0, 1);
	text = tg_report(m, &fd, 0, 0);
	csv = tg_report(m, &fd, 0, 2);
	APX_ASSERT(json && text && csv);
	APX_ASSERT(strstr(json, "\"transfers\":[") && !strstr(json, "p2p_copies"));
	APX_ASSERT(!strstr(text, "peer-to-peer"));
	APX_ASSERT(strstr(csv, "# transfers/transfers") && !strstr(csv, "transfers/p2p"));
	free(json);
	free(text);
	free(csv);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
