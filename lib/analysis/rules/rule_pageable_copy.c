/*
 * rule_pageable_copy.c - host<->device copies of >= 64 KiB from pageable memory. They go through
 * a staging buffer and block the host. Saving: their bytes moved at the bandwidth pinned copies
 * reached in the same trace (or the link's peak when there were none), against the time they
 * took, plus the steady state's GPU idle time attributed to staging them (idle_attrib.c; seen
 * only when the trace has the copy calls' host times). Smaller copies are latency-bound: pinning
 * does not speed them up (they are small-copies'). Copies before the steady state (model.cuda(),
 * loading weights) give a start-up finding of their own (f->startup), which the ranking keeps
 * under the steady state's findings (rules.c). The same rule on what nvperfd saw of a process
 * (the uprobes' copy counts) is obs_pageable_copy.c: same id, severity policy and fix (finding.c).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/idle_attrib.h"

#include "base/banned.h"

struct acc {
	uint64_t count, bytes, dur;
};

/* One phase's pageable copies of >= 64 KiB, by direction [0 H2D, 1 D2H]. */
static void measure(const struct apx_model *m, enum apx_phase ph, struct acc a[2])
{
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);
		int d = c->kind == APX_COPY_H2D ? 0 : c->kind == APX_COPY_D2H ? 1 : -1;

		if (d < 0 || c->bytes < APX_SMALL_COPY_BYTES || apx_phase_of(m, c->start) != ph ||
		    (d == 0 ? c->src : c->dst) != APX_MEM_PAGEABLE)
			continue;
		a[d].count++;
		a[d].bytes += c->bytes;
		a[d].dur += c->dur;
	}
}

static void emit(const struct apx_model *m, struct apx_findings *out, enum apx_phase ph,
		 const struct acc a[2])
{
	static const unsigned dirs[] = { APX_COPY_H2D, APX_COPY_D2H };
	double saving = 0, bytes = 0, dur = 0, pct;
	char model[240] = "", ev[1200] = "", b1[32], b2[32], b3[32], b4[32];
	uint64_t staged = ph == APX_PHASE_STEADY ? m->gpu.idle_by_cause[APX_IDLE_STAGING] : 0;
	double row[2][4] = { { 0 } };	/* per direction: copies, bytes, time, time at the rate */
	uint32_t dev = 0;
	int peak_used = 0;
	struct apx_finding *f;

	if (m->copies.n)
		dev = APX_VEC_AT(&m->copies, struct apx_an_copy, 0)->device;
	for (size_t i = 0; i < 2; i++) {
		double rate, ideal;

		if (!a[i].count)
			continue;
		rate = apx_pinned_rate_bps(m, dirs[i]);
		if (!rate) {
			rate = apx_link_peak_bps(m, dev);
			peak_used = 1;
		}
		if (!rate)
			rate = APX_LINK_FLOOR_BPS;
		ideal = (double)a[i].bytes / rate * 1e9;
		if ((double)a[i].dur > ideal)
			saving += (double)a[i].dur - ideal;
		bytes += (double)a[i].bytes;
		dur += (double)a[i].dur;
		row[i][0] = (double)a[i].count;
		row[i][1] = (double)a[i].bytes;
		row[i][2] = (double)a[i].dur;
		row[i][3] = ideal;
		apx_text_append(ev, sizeof(ev), "%s from pageable memory%s: %llu copies, %s in %s "
				"(%s); at %.1f GB/s they would take %s\n", apx_copy_kind_name(dirs[i]),
				ph == APX_PHASE_STARTUP ? " at start-up" : "",
				(unsigned long long)a[i].count,
				apx_fmt_size(b1, sizeof(b1), (double)a[i].bytes),
				apx_fmt_ns(b2, sizeof(b2), (double)a[i].dur),
				apx_fmt_rate(b3, sizeof(b3), (double)a[i].bytes, (double)a[i].dur),
				rate / 1e9, apx_fmt_ns(b4, sizeof(b4), ideal));
		if (!model[0])
			snprintf(model, sizeof(model),
				 "bytes at the %s (%.1f GB/s) minus the time the pageable copies took",
				 peak_used ? "host link's peak bandwidth"
					   : "bandwidth pinned copies reached in this trace",
				 rate / 1e9);
	}
	if (!bytes)
		return;
	if (staged) {
		saving += (double)staged;
		apx_text_append(ev, sizeof(ev), "GPU idle while the host staged them: %s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)staged));
		apx_text_append(model, sizeof(model), ", plus the GPU idle time spent staging them");
	}
	pct = m->wall_ns ? 100.0 * saving / (double)m->wall_ns : 0;
	f = apx_finding_add(out, m, "pageable-copy", apx_pageable_copy_severity(pct, 1), saving,
			    peak_used ? 60 : 80);
	if (!f)
		return;
	f->startup = ph == APX_PHASE_STARTUP;
	snprintf(f->title, sizeof(f->title), "%s copied from pageable host memory at %s%s",
		 apx_fmt_size(b1, sizeof(b1), bytes), apx_fmt_rate(b2, sizeof(b2), bytes, dur),
		 f->startup ? " at start-up" : "");
	snprintf(f->model, sizeof(f->model), "%s", model);
	snprintf(f->evidence, sizeof(f->evidence), "%s", ev);
	apx_finding_metric(f, "bytes", bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "copy_ns", dur, APX_UNIT_NS);
	apx_finding_metric(f, "rate_bytes_per_s", dur > 0 ? bytes / dur * 1e9 : 0,
			   APX_UNIT_BYTES_PER_S);
	apx_finding_metric(f, "staging_idle_ns", (double)staged, APX_UNIT_NS);
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
	snprintf(f->fix, sizeof(f->fix), "%s", apx_pageable_copy_fix);
}

APX_RULE_DECL(pageable_copy)
{
	struct acc steady[2] = { { 0 } }, startup[2] = { { 0 } };
	size_t before = out->n;

	measure(m, APX_PHASE_STEADY, steady);
	measure(m, APX_PHASE_STARTUP, startup);
	emit(m, out, APX_PHASE_STEADY, steady);
	emit(m, out, APX_PHASE_STARTUP, startup);
	(void)why;
	(void)why_len;
	return out->n > before ? APX_RULE_FIRED : APX_RULE_CLEAN;
}
