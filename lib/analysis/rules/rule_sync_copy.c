/*
 * rule_sync_copy.c - copies and memsets that block the host until the GPU is done, in the
 * steady state (those of start-up are set-up): synchronous copies between pinned and device
 * memory, synchronous memsets, and copies of more than 64 KiB from the device to pageable
 * memory, which CUDA finishes before the call returns whatever the call (y.cpu(), .numpy()).
 * Copies from pageable memory to the device are pageable-copy's, small ones small-copies'.
 * Saving: the time the blocking copies and memsets took, which the host could spend launching
 * work if they were asynchronous; for a copy to pageable memory, the time it took beyond its
 * bytes at the pinned rate (pinned copies' in the trace, or the link's peak): copied
 * non_blocking into a pinned buffer it runs at that rate, behind the host; plus the GPU idle
 * after such copies while the host staged them out (idle_attrib.c, staging_d2h_ns). With
 * the what-if simulator (the default), its async-copies transformation gives the saving and
 * the rule's own model stays as saving_rule_ns.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/idle_attrib.h"

#include "analysis/stacks.h"
#include "analysis/whatif/whatif.h"

#include "base/banned.h"

/* A copy of more than 64 KiB from the device into pageable memory: the host waits for it. */
static int to_pageable(const struct apx_an_copy *c)
{
	return c->kind == APX_COPY_D2H && c->dst == APX_MEM_PAGEABLE && !apx_copy_small(c->bytes);
}

/* The copies this rule counts (the lines of the finding): blocking copies of the steady state. */
static int blocking(const struct apx_model *m, size_t i)
{
	const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

	if (c->kind == APX_COPY_D2D || apx_phase_of(m, c->start) != APX_PHASE_STEADY)
		return 0;
	return to_pageable(c) || (!c->async && c->src != APX_MEM_PAGEABLE &&
				  c->dst != APX_MEM_PAGEABLE);
}

APX_RULE_DECL(sync_copy)
{
	uint64_t ncopy = 0, nset = 0, dcopy = 0, dset = 0, bytes = 0, npage = 0, pbytes = 0;
	double rate = apx_pinned_or_link_bps(m, APX_COPY_D2H, NULL), pdur = 0, psave = 0;
	char b1[32], b2[32], b3[32], b4[32];
	struct apx_wi_params sim = { .xform = APX_WI_X_ASYNC_COPIES };
	double saving, rule_ns, sim_ns = 0;
	int simulated;
	struct apx_finding *f;

	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);
		double ideal;

		if (c->kind == APX_COPY_D2D || apx_phase_of(m, c->start) != APX_PHASE_STEADY)
			continue;
		if (to_pageable(c)) {
			ideal = (double)c->bytes / rate * 1e9;
			npage++;
			pbytes += c->bytes;
			pdur += (double)c->dur;
			psave += (double)c->dur > ideal ? (double)c->dur - ideal : 0;
			continue;
		}
		if (c->async || c->src == APX_MEM_PAGEABLE || c->dst == APX_MEM_PAGEABLE)
			continue;
		ncopy++;
		dcopy += c->dur;
		bytes += c->bytes;
	}
	for (size_t i = 0; i < m->memsets.n; i++) {
		const struct apx_an_memset *s = APX_VEC_AT(&m->memsets, struct apx_an_memset, i);

		if (!s->async && apx_phase_of(m, s->start) == APX_PHASE_STEADY) {
			nset++;
			dset += s->dur;
		}
	}
	if (npage)	/* the GPU idle while the host staged them out (idle_attrib.c) */
		psave += (double)m->gpu.staging_d2h_ns;
	if (!ncopy && !nset && !npage)
		return APX_RULE_CLEAN;
	if (m->steady_ns && (double)(dcopy + dset) + psave < 0.005 * (double)m->steady_ns)
		return APX_RULE_CLEAN;	/* under 0.5% of the run: not worth a line */
	rule_ns = (double)(dcopy + dset) + psave;
	/* the simulator's when it has one (whatif.h: the copies non-blocking, those into pageable
	 * memory at the pinned rate, the host running ahead as far as the trace's own syncs let
	 * it): a wait that the next sync would pay anyway is no saving */
	sim.rate_bps = rate;
	simulated = apx_whatif_rule_saving(m, &sim, &sim_ns);
	saving = simulated ? sim_ns : rule_ns;
	if (m->steady_ns && saving < 0.005 * (double)m->steady_ns)
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "sync-copy", APX_SEV_WARNING, saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	if (npage && !ncopy && !nset)
		snprintf(f->title, sizeof(f->title), "%llu copies to pageable memory (%s at %s) "
			 "blocked the host", (unsigned long long)npage,
			 apx_fmt_size(b1, sizeof(b1), (double)pbytes),
			 apx_fmt_rate(b2, sizeof(b2), (double)pbytes, pdur));
	else if (npage)
		snprintf(f->title, sizeof(f->title), "%llu copies to pageable memory and %llu other "
			 "synchronous copies and memsets blocked the host", (unsigned long long)npage,
			 (unsigned long long)(ncopy + nset));
	else
		snprintf(f->title, sizeof(f->title), "%llu synchronous copies and %llu memsets "
			 "blocked the host", (unsigned long long)ncopy, (unsigned long long)nset);
	if (npage)
		snprintf(f->model, sizeof(f->model), "copied non_blocking into pinned memory, a copy "
			 "to pageable memory runs at the pinned rate behind the host: saving = its time "
			 "beyond that + the GPU idle while the host staged it out%s",
			 ncopy + nset ? "; + the other blocking copies' and memsets' time" : "");
	else
		snprintf(f->model, sizeof(f->model),
			 "the host waits for each synchronous copy/memset; made asynchronous, that "
			 "time overlaps GPU work: saving = their total duration");
	if (npage)
		apx_text_append(f->evidence, sizeof(f->evidence), "D2H to pageable memory: %llu "
				"copies, %s in %s (%s); at %.1f GB/s they would take %s\n",
				(unsigned long long)npage, apx_fmt_size(b1, sizeof(b1), (double)pbytes),
				apx_fmt_ns(b2, sizeof(b2), pdur),
				apx_fmt_rate(b3, sizeof(b3), (double)pbytes, pdur), rate / 1e9,
				apx_fmt_ns(b4, sizeof(b4), (double)pbytes / rate * 1e9));
	if (npage && m->gpu.staging_d2h_ns)
		apx_text_append(f->evidence, sizeof(f->evidence), "GPU idle while the host staged "
				"them out: %s\n", apx_fmt_ns(b1, sizeof(b1),
							     (double)m->gpu.staging_d2h_ns));
	if (!npage || ncopy)
		apx_text_append(f->evidence, sizeof(f->evidence), "synchronous copies: %llu, %s, "
				"%s\n", (unsigned long long)ncopy,
				apx_fmt_size(b1, sizeof(b1), (double)bytes),
				apx_fmt_ns(b2, sizeof(b2), (double)dcopy));
	if (!npage || nset)
		apx_text_append(f->evidence, sizeof(f->evidence), "synchronous memsets: %llu, %s\n",
				(unsigned long long)nset, apx_fmt_ns(b1, sizeof(b1), (double)dset));
	apx_finding_metric(f, "copies", (double)ncopy, APX_UNIT_COUNT);
	apx_finding_metric(f, "copy_bytes", (double)bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "copy_ns", (double)dcopy, APX_UNIT_NS);
	apx_finding_metric(f, "memsets", (double)nset, APX_UNIT_COUNT);
	apx_finding_metric(f, "memset_ns", (double)dset, APX_UNIT_NS);
	apx_finding_metric(f, "pageable_copies", (double)npage, APX_UNIT_COUNT);
	apx_finding_metric(f, "pageable_bytes", (double)pbytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "pageable_copy_ns", pdur, APX_UNIT_NS);
	apx_finding_metric(f, "pageable_saving_ns", psave, APX_UNIT_NS);
	apx_finding_metric(f, "staging_idle_ns", (double)m->gpu.staging_d2h_ns, APX_UNIT_NS);
	if (npage)
		snprintf(f->fix, sizeof(f->fix),
			 "Copy results into a pinned buffer without blocking; read it after an event:\n"
			 "  buf = torch.empty(y.shape, dtype=y.dtype, pin_memory=True)   # once\n"
			 "  buf.copy_(y, non_blocking=True); ev = torch.cuda.Event(); ev.record()\n"
			 "  ev.synchronize()   # only when the values are needed (e.g. next step)");
	else
		snprintf(f->fix, sizeof(f->fix),
		 "Use non-blocking copies from pinned memory and avoid host-side waits:\n"
		 "  y = x.to('cuda', non_blocking=True)        # x pinned\n"
		 "  out_cpu = out.to('cpu', non_blocking=True); torch.cuda.current_stream().synchronize()"
		 "  # once, when needed\n"
		 "  torch.zeros(..., device='cuda') instead of creating on the CPU and copying");
	if (simulated)
		apx_whatif_rule_note(f, APX_WI_X_ASYNC_COPIES, rule_ns);
	(void)why;
	(void)why_len;
	apx_lines_of_copies(m, f, blocking);
	return APX_RULE_FIRED;
}
