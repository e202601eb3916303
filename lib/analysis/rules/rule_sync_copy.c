/*
 * rule_sync_copy.c - synchronous copies and memsets (not from pageable memory: those are the
 * pageable-copy rule's) that block the host until the GPU is done, in the steady state (those
 * of start-up are set-up). Saving: the time they took, which the host could spend launching
 * work if they were asynchronous.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "base/banned.h"

APX_RULE_DECL(sync_copy)
{
	uint64_t ncopy = 0, nset = 0, dcopy = 0, dset = 0, bytes = 0;
	char b1[32], b2[32];
	struct apx_finding *f;

	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (c->async || c->src == APX_MEM_PAGEABLE || c->dst == APX_MEM_PAGEABLE ||
		    c->kind == APX_COPY_D2D || apx_phase_of(m, c->start) != APX_PHASE_STEADY)
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
	if (!ncopy && !nset)
		return APX_RULE_CLEAN;
	if (m->steady_ns && (double)(dcopy + dset) < 0.005 * (double)m->steady_ns)
		return APX_RULE_CLEAN;	/* under 0.5% of the run: not worth a line */
	f = apx_finding_add(out, m, "sync-copy", APX_SEV_WARNING, (double)(dcopy + dset), 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%llu synchronous copies and %llu memsets blocked the host",
		 (unsigned long long)ncopy, (unsigned long long)nset);
	snprintf(f->model, sizeof(f->model),
		 "the host waits for each synchronous copy/memset; made asynchronous, that time "
		 "overlaps GPU work: saving = their total duration");
	apx_text_append(f->evidence, sizeof(f->evidence), "synchronous copies: %llu, %s, %s\n",
			(unsigned long long)ncopy, apx_fmt_size(b1, sizeof(b1), (double)bytes),
			apx_fmt_ns(b2, sizeof(b2), (double)dcopy));
	apx_text_append(f->evidence, sizeof(f->evidence), "synchronous memsets: %llu, %s\n",
			(unsigned long long)nset, apx_fmt_ns(b1, sizeof(b1), (double)dset));
	apx_finding_metric(f, "copies", (double)ncopy, APX_UNIT_COUNT);
	apx_finding_metric(f, "copy_bytes", (double)bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "copy_ns", (double)dcopy, APX_UNIT_NS);
	apx_finding_metric(f, "memsets", (double)nset, APX_UNIT_COUNT);
	apx_finding_metric(f, "memset_ns", (double)dset, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Use non-blocking copies from pinned memory and avoid host-side waits:\n"
		 "  y = x.to('cuda', non_blocking=True)        # x pinned\n"
		 "  out_cpu = out.to('cpu', non_blocking=True); torch.cuda.current_stream().synchronize()"
		 "  # once, when needed\n"
		 "  torch.zeros(..., device='cuda') instead of creating on the CPU and copying");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
