/*
 * rule_pageable_copy.c - host<->device copies from pageable memory. They go through a staging
 * buffer and block the host. Saving: their bytes moved at the bandwidth pinned copies reached
 * in the same trace (or the link's peak when there were none), against the time they took,
 * plus the GPU idle time right before them (the host staging the data).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

APX_RULE_DECL(pageable_copy)
{
	static const unsigned dirs[] = { APX_COPY_H2D, APX_COPY_D2H };
	double saving = 0, bytes = 0, dur = 0;
	char model[240] = "", ev[1200] = "", b1[32], b2[32], b3[32], b4[32];
	double row[2][4] = { { 0 } };	/* per direction: copies, bytes, time, time at the rate */
	uint32_t dev = 0;
	int peak_used = 0;

	if (m->copies.n)
		dev = APX_VEC_AT(&m->copies, struct apx_an_copy, 0)->device;
	for (size_t i = 0; i < 2; i++) {
		const struct apx_an_xfer *x = &m->xfer[dirs[i]][APX_MEM_PAGEABLE];
		double rate, ideal;

		if (!x->count)
			continue;
		rate = apx_pinned_rate_bps(m, dirs[i]);
		if (!rate) {
			rate = apx_link_peak_bps(m, dev);
			peak_used = 1;
		}
		if (!rate)
			rate = 12e9;	/* PCIe gen3 x16 in practice: the floor of any GPU host */
		ideal = (double)x->bytes / rate * 1e9;
		if ((double)x->dur_ns > ideal)
			saving += (double)x->dur_ns - ideal;
		bytes += (double)x->bytes;
		dur += (double)x->dur_ns;
		row[i][0] = (double)x->count;
		row[i][1] = (double)x->bytes;
		row[i][2] = (double)x->dur_ns;
		row[i][3] = ideal;
		apx_text_append(ev, sizeof(ev), "%s from pageable memory: %llu copies, %s in %s (%s); "
				"at %.1f GB/s they would take %s\n",
				apx_copy_kind_name(dirs[i]), (unsigned long long)x->count,
				apx_fmt_size(b1, sizeof(b1), (double)x->bytes),
				apx_fmt_ns(b2, sizeof(b2), (double)x->dur_ns),
				apx_fmt_rate(b3, sizeof(b3), (double)x->bytes, (double)x->dur_ns),
				rate / 1e9, apx_fmt_ns(b4, sizeof(b4), ideal));
		if (!model[0])
			snprintf(model, sizeof(model),
				 "bytes at the %s (%.1f GB/s) minus the time the pageable copies took",
				 peak_used ? "host link's peak bandwidth"
					   : "bandwidth pinned copies reached in this trace",
				 rate / 1e9);
	}
	if (!bytes)
		return APX_RULE_CLEAN;
	if (m->gpu.idle_before_pageable_ns) {
		saving += (double)m->gpu.idle_before_pageable_ns;
		apx_text_append(ev, sizeof(ev), "GPU idle while the host staged them: %s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)m->gpu.idle_before_pageable_ns));
		apx_text_append(model, sizeof(model), ", plus the GPU idle time before them");
	}
	{
		double pct = m->wall_ns ? 100.0 * saving / (double)m->wall_ns : 0;
		struct apx_finding *f = apx_finding_add(out, m, "pageable-copy",
							pct > 10 ? APX_SEV_CRITICAL : pct > 2 ? APX_SEV_WARNING
											: APX_SEV_INFO,
							saving, peak_used ? 60 : 80);
		if (!f)
			return APX_RULE_FIRED;
		snprintf(f->title, sizeof(f->title), "%s copied from pageable host memory at %s",
			 apx_fmt_size(b1, sizeof(b1), bytes), apx_fmt_rate(b2, sizeof(b2), bytes, dur));
		snprintf(f->model, sizeof(f->model), "%s", model);
		snprintf(f->evidence, sizeof(f->evidence), "%s", ev);
		apx_finding_metric(f, "bytes", bytes, APX_UNIT_BYTES);
		apx_finding_metric(f, "copy_ns", dur, APX_UNIT_NS);
		apx_finding_metric(f, "rate_bytes_per_s", dur > 0 ? bytes / dur * 1e9 : 0,
				   APX_UNIT_BYTES_PER_S);
		apx_finding_metric(f, "idle_before_ns", (double)m->gpu.idle_before_pageable_ns,
				   APX_UNIT_NS);
		{
			static const char *const keys[] = { "copies", "bytes", "copy_ns", "ideal_ns" };
			static const unsigned units[] = { APX_UNIT_COUNT, APX_UNIT_BYTES, APX_UNIT_NS,
							  APX_UNIT_NS };

			apx_evidence_cols(f, "direction", 4, keys, units);
			for (size_t i = 0; i < 2; i++) {
				const char *dn = apx_copy_kind_name(dirs[i]);
				double *v = row[i][0] > 0 ? apx_evidence_row(f, dn, strlen(dn)) : NULL;

				for (unsigned c = 0; v && c < 4; c++)
					v[c] = row[i][c];
			}
		}
		snprintf(f->fix, sizeof(f->fix),
			 "Copy from page-locked (pinned) memory, asynchronously:\n"
			 "  loader = DataLoader(ds, batch_size=..., pin_memory=True)\n"
			 "  x = x.to('cuda', non_blocking=True)\n"
			 "or pin a tensor you reuse once: buf = torch.empty(shape).pin_memory()");
	}
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
