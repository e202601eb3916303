/*
 * rule_pageable_copy.c - host->device copies of more than 64 KiB from pageable memory. They go
 * through a staging buffer and block the host. Saving: their bytes moved at the bandwidth pinned
 * copies reached in the same trace (or the link's peak when there were none), against the time
 * they took, plus the steady state's GPU idle time attributed to staging them (idle_attrib.c;
 * seen only when the trace has the copy calls' host times). Smaller copies are latency-bound:
 * pinning does not speed them up (they are small-copies'). Copies to pageable memory are
 * sync-copy's: the host waits for them until the GPU is done, whatever the call, and their fix
 * is a pinned destination read after an event. Copies before the steady state (model.cuda(),
 * loading weights) give a start-up finding of their own (f->startup), which the ranking keeps
 * under the steady state's findings (rules.c). The same rule on what nvperfd saw of a process
 * (the uprobes' copy counts) is obs_pageable_copy.c: same id, severity policy and fix (finding.c).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/idle_attrib.h"

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

struct acc {
	uint64_t count, bytes, dur;
};

/* One phase's host->device copies of more than 64 KiB from pageable memory. */
static void measure(const struct apx_model *m, enum apx_phase ph, struct acc *a)
{
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (c->kind != APX_COPY_H2D || c->src != APX_MEM_PAGEABLE || apx_copy_small(c->bytes) ||
		    apx_phase_of(m, c->start) != ph)
			continue;
		a->count++;
		a->bytes += c->bytes;
		a->dur += c->dur;
	}
}

/* The copies measure() counts, of one phase (the lines of the finding). */
static int pageable_in(const struct apx_model *m, size_t i, enum apx_phase ph)
{
	const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

	return c->kind == APX_COPY_H2D && c->src == APX_MEM_PAGEABLE && !apx_copy_small(c->bytes) &&
	       apx_phase_of(m, c->start) == ph;
}

static int pageable_steady(const struct apx_model *m, size_t i)
{
	return pageable_in(m, i, APX_PHASE_STEADY) || pageable_in(m, i, APX_PHASE_TEARDOWN);
}

static int pageable_startup(const struct apx_model *m, size_t i)
{
	return pageable_in(m, i, APX_PHASE_STARTUP);
}

static void emit(const struct apx_model *m, struct apx_findings *out, enum apx_phase ph,
		 const struct acc *a)
{
	static const char dn[] = "H2D";
	double saving = 0, bytes = (double)a->bytes, dur = (double)a->dur, pct, rate, ideal;
	char model[240] = "", ev[1200] = "", b1[32], b2[32], b3[32], b4[32];
	uint64_t staged = ph == APX_PHASE_STEADY ? m->gpu.idle_by_cause[APX_IDLE_STAGING] -
						   m->gpu.staging_d2h_ns : 0;	/* host->device's */
	int peak_used = 0, simulated = 0;
	double rule_ns;
	struct apx_finding *f;

	if (!a->count)
		return;
	rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, &peak_used);
	ideal = bytes / rate * 1e9;
	if (dur > ideal)
		saving += dur - ideal;
	apx_text_append(ev, sizeof(ev), "H2D from pageable memory%s: %llu copies, %s in %s (%s); at "
			"%.1f GB/s they would take %s\n", ph == APX_PHASE_STARTUP ? " at start-up" : "",
			(unsigned long long)a->count, apx_fmt_size(b1, sizeof(b1), bytes),
			apx_fmt_ns(b2, sizeof(b2), dur), apx_fmt_rate(b3, sizeof(b3), bytes, dur),
			rate / 1e9, apx_fmt_ns(b4, sizeof(b4), ideal));
	snprintf(model, sizeof(model), "bytes at the %s (%.1f GB/s) minus the time the pageable "
		 "copies took", peak_used ? "host link's peak bandwidth"
					  : "bandwidth pinned copies reached in this trace",
		 rate / 1e9);
	if (staged) {
		saving += (double)staged;
		apx_text_append(ev, sizeof(ev), "GPU idle while the host staged them: %s\n",
				apx_fmt_ns(b1, sizeof(b1), (double)staged));
		apx_text_append(model, sizeof(model), ", plus the GPU idle time spent staging them");
	}
	rule_ns = saving;	/* the steady state's: the simulator's when it has one (whatif.h) */
	if (ph == APX_PHASE_STEADY) {
		const struct apx_wi_params sim = { .xform = APX_WI_X_PIN_COPIES, .rate_bps = rate };
		double s;

		if ((simulated = apx_whatif_rule_saving(m, &sim, &s)))
			saving = s;
	}
	pct = m->collected_ns ? 100.0 * saving / (double)m->collected_ns : 0;
	f = apx_finding_add(out, m, "pageable-copy", apx_pageable_copy_severity(pct, 1), saving,
			    peak_used ? 60 : 80);
	if (!f)
		return;
	f->startup = ph == APX_PHASE_STARTUP;
	snprintf(f->title, sizeof(f->title), "%s copied from pageable host memory at %s%s",
		 apx_fmt_size(b1, sizeof(b1), bytes), apx_fmt_rate(b2, sizeof(b2), bytes, dur),
		 f->startup ? " at start-up" : "");
	snprintf(f->model, sizeof(f->model), "%s", model);
	if (simulated)
		apx_whatif_rule_note(f, APX_WI_X_PIN_COPIES, rule_ns);
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
		double *v;

		apx_evidence_cols(f, "direction", 4, keys, units);
		v = apx_evidence_row(f, dn, strlen(dn));
		if (v) {
			v[0] = (double)a->count;
			v[1] = bytes;
			v[2] = dur;
			v[3] = ideal;
		}
	}
	snprintf(f->fix, sizeof(f->fix), "%s", apx_pageable_copy_fix);
	apx_lines_of_copies(m, f, ph == APX_PHASE_STARTUP ? pageable_startup : pageable_steady);
}

APX_RULE_DECL(pageable_copy)
{
	struct acc steady = { 0 }, startup = { 0 };
	size_t before = out->n;

	measure(m, APX_PHASE_STEADY, &steady);
	measure(m, APX_PHASE_STARTUP, &startup);
	emit(m, out, APX_PHASE_STEADY, &steady);
	emit(m, out, APX_PHASE_STARTUP, &startup);
	(void)why;
	(void)why_len;
	return out->n > before ? APX_RULE_FIRED : APX_RULE_CLEAN;
}
