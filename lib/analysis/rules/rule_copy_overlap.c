/*
 * rule_copy_overlap.c - copies that do not overlap compute: copy time during which no kernel
 * runs, while kernels run at other times. Saving: the part of that copy time that kernel time
 * could hide (min of the two), the gain of copying on a side stream from pinned memory. Copies
 * before the first kernel (loading the model) have nothing to hide behind and are left out.
 * Only copies between host and device count: a device-to-device copy (.contiguous(), cat,
 * clone) is work of the compute stream itself, done by the copy engines or SMs, and moving it
 * to another stream overlaps nothing that batch.to('cuda', non_blocking=True) would. Copies
 * of unchanged data (the same content fingerprint again: copy_repeats.c) are repeated-copy's:
 * removing them beats hiding them, so their time is left out of the copy-only time.
 * At the power cap (the collector's NVML readings, power_cap.h) the GPU, busy more of the
 * time once the copies are hidden, clocks its kernels lower: the saving is the copy time less
 * that slowdown.
 * When every steady host<->device copy already runs on a stream without kernels (a side
 * stream), the fix is in place: the copy time left alone is the compute waiting for data it
 * needs (how far ahead the prefetch is issued), which no stream placement hides; the rule is
 * silent and says so.
 */
#include "analysis/findings.h"
#include "analysis/power_cap.h"

#include <math.h>
#include <stdio.h>

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

/* The copies this rule would hide (the lines of the finding): host<->device copies. */
static int host_device(const struct apx_model *m, size_t i)
{
	const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

	return (c->kind == APX_COPY_H2D || c->kind == APX_COPY_D2H) &&
	       apx_phase_of(m, c->start) == APX_PHASE_STEADY;
}

/* Every steady host<->device copy on a stream that runs no kernel: 1, and their number in
 * *n; 0 when one shares a stream with kernels (or there is none). */
static int all_on_side_streams(const struct apx_model *m, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (!host_device(m, i))
			continue;
		if (c->stream >= m->streams.n ||
		    APX_VEC_AT(&m->streams, struct apx_an_stream, c->stream)->kernels)
			return 0;
		(*n)++;
	}
	return *n > 0;
}

APX_RULE_DECL(copy_overlap)
{
	uint64_t copy, kern, ov, hidden, alone, hidable, setup, unchanged = 0;
	struct apx_copy_repeats rep;
	uint64_t copy_streams = 0, shared_streams = 0, dev_ns = 0;
	char b1[32], b2[32], b3[32];
	struct apx_power_cap pc;
	double saving, slow = 1.0, rule_ns, hide;
	const struct apx_wi_params sim = { .xform = APX_WI_X_COPY_STREAM };
	int simulated;
	struct apx_finding *f;
	size_t nside;

	copy = m->gpu.hd_copy_busy_ns;
	kern = m->gpu.kernel_busy_ns;
	ov = m->gpu.hd_overlap_ns;
	if (!copy || !kern)
		return APX_RULE_CLEAN;
	setup = m->gpu.hd_before_kernels_ns;
	alone = copy - ov > setup ? copy - ov - setup : 0;
	if (apx_copy_repeats(m, &rep) == 0 && rep.fp_saving_ns > 0)	/* repeated-copy's */
		unchanged = rep.fp_saving_ns < (double)alone ? (uint64_t)rep.fp_saving_ns : alone;
	hidden = kern - ov;
	hidable = alone - unchanged < hidden ? alone - unchanged : hidden;
	/* a pipeline that overlaps hides the shorter of copies and kernels behind the longer,
	 * except while it fills and drains: fire only when a quarter or more of the shorter one
	 * could still be hidden */
	if (!m->steady_ns || (double)hidable < 0.02 * (double)m->steady_ns ||
	    hidable * 4 < (copy - setup < kern ? copy - setup : kern))
		return APX_RULE_CLEAN;
	if (all_on_side_streams(m, &nside)) {
		snprintf(why, why_len, "the steady state's %zu host<->device copies already run on "
			 "streams without kernels: what is not overlapped is the compute waiting for "
			 "them", nside);
		return APX_RULE_CLEAN;
	}
	for (size_t i = 0; i < m->streams.n; i++) {
		const struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream, i);

		copy_streams += s->copies > 0;
		shared_streams += s->copies > 0 && s->kernels > 0;
	}
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (c->kind != APX_COPY_H2D && c->kind != APX_COPY_D2H)
			dev_ns += c->dur;
	}
	saving = (double)hidable;
	apx_power_cap_read(m, &pc);
	if (pc.capped)	/* hidden copies leave the kernels slower: the fraction of the window */
		saving = (double)m->steady_ns *
			 apx_power_capped_saving(m->steady.busy_pct / 100.0,
						 (double)hidable / (double)m->steady_ns, &slow);
	rule_ns = saving;	/* the simulator's when it has one (whatif.h): the copies of
				 * unchanged data left to repeated-copy, the power cap as above */
	if ((simulated = apx_whatif_rule_saving(m, &sim, &hide))) {
		hide = hide > (double)unchanged ? hide - (double)unchanged : 0;
		saving = pc.capped ? (double)m->steady_ns *
					     apx_power_capped_saving(m->steady.busy_pct / 100.0,
								     hide / (double)m->steady_ns, &slow)
				   : hide;
	}
	f = apx_finding_add(out, m, "copy-overlap", APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = f->saving_ns;	/* kernel time that hides copies, or is hidden by them */
	f->copy_ns = f->saving_ns;	/* ... and the copy time it hides */
	snprintf(f->title, sizeof(f->title), "%.0f%% of copy time does not overlap compute",
		 100.0 * (double)alone / (double)(copy - setup));
	snprintf(f->model, sizeof(f->model),
		 "copy time with no kernel running, hidden behind kernel time on another stream: "
		 "saving = min(copy-only time, kernel time not already overlapped)%s",
		 pc.capped ? ", less the kernels' slowdown at the power cap (power ~ clock^3)"
			   : "");
	apx_text_append(f->evidence, sizeof(f->evidence), "copy busy %s, kernel busy %s, overlapped %s\n",
			apx_fmt_ns(b1, sizeof(b1), (double)copy), apx_fmt_ns(b2, sizeof(b2), (double)kern),
			apx_fmt_ns(b3, sizeof(b3), (double)ov));
	if (setup)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %s of copies before the first kernel (setup)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)setup));
	if (dev_ns)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %s of device-to-device copies (work of the compute stream)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)dev_ns));
	if (unchanged)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"left out: %s of copies of unchanged data (repeated-copy's)\n",
				apx_fmt_ns(b1, sizeof(b1), (double)unchanged));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"%llu of %llu streams with copies also run kernels (copies on the compute stream)\n",
			(unsigned long long)shared_streams, (unsigned long long)copy_streams);
	if (pc.capped) {
		char watts[96] = "";

		if (isfinite(pc.power_w) && isfinite(pc.limit_w) && isfinite(pc.clock_sm_mhz))
			snprintf(watts, sizeof(watts), " (%.0f of %.0f W, SM clock %.0f MHz)",
				 pc.power_w, pc.limit_w, pc.clock_sm_mhz);
		apx_text_append(f->evidence, sizeof(f->evidence), "at the power cap: the "
				"software power cap held in %.0f%% of the steady state%s; busy "
				"%.0f%% of a step now, all of it with the copies hidden, the "
				"kernels would take %.1f%% longer: %s of the %s copy time saved\n",
				100 * pc.capped_share, watts, m->steady.busy_pct, 100 * (slow - 1),
				apx_fmt_ns(b1, sizeof(b1), saving),
				apx_fmt_ns(b2, sizeof(b2), (double)hidable));
	} else if (!pc.known) {
		apx_text_append(f->evidence, sizeof(f->evidence), "an upper bound: a GPU at "
				"its power cap runs its kernels at lower clocks once it idles less "
				"(this trace has no power readings; docs/report.md)\n");
	}
	apx_finding_metric(f, "copy_busy_ns", (double)copy, APX_UNIT_NS);
	apx_finding_metric(f, "kernel_busy_ns", (double)kern, APX_UNIT_NS);
	apx_finding_metric(f, "overlapped_ns", (double)ov, APX_UNIT_NS);
	apx_finding_metric(f, "copy_alone_ns", (double)alone, APX_UNIT_NS);
	apx_finding_metric(f, "setup_copy_ns", (double)setup, APX_UNIT_NS);
	apx_finding_metric(f, "copy_streams", (double)copy_streams, APX_UNIT_COUNT);
	apx_finding_metric(f, "copy_streams_with_kernels", (double)shared_streams, APX_UNIT_COUNT);
	apx_finding_metric(f, "copy_hidable_ns", (double)hidable, APX_UNIT_NS);
	if (pc.known)
		apx_finding_metric(f, "power_capped_share", pc.capped_share, APX_UNIT_RATIO);
	if (pc.capped)
		apx_finding_metric(f, "power_cap_kernel_slowdown", slow, APX_UNIT_RATIO);
	snprintf(f->fix, sizeof(f->fix),
		 "Copy the next batch on a side stream while this one computes:\n"
		 "  copy_stream = torch.cuda.Stream()\n"
		 "  with torch.cuda.stream(copy_stream):\n"
		 "      nxt = batch.to('cuda', non_blocking=True)     # batch in pinned memory\n"
		 "  torch.cuda.current_stream().wait_stream(copy_stream)\n"
		 "  nxt.record_stream(torch.cuda.current_stream())");
	if (simulated)
		apx_whatif_rule_note(f, sim.xform, rule_ns);
	apx_lines_of_copies(m, f, host_device);
	return APX_RULE_FIRED;
}
